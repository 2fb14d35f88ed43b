//! `switchboard`: talk to any MCP server from the terminal.
//!
//! This file starts the program: it parses the command line ([`cli`]),
//! starts the runtime and tracing, runs the command ([`commands`]) and
//! turns how it ended into an exit code ([`failure`]).

/// See Cargo.toml: the gateway's hot path allocates per message.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod approve;
mod args;
mod cli;
mod commands;
mod configure;
mod console;
mod demo;
mod direct;
mod failure;
mod fronted;
mod hub;
mod lifecycle;
mod listen;
mod login;
#[cfg(feature = "otlp")]
mod otlp;
mod policy;
mod providers;
mod reach;
mod sampling;
mod session;
mod state;
mod suggest;
mod term;

use std::process::ExitCode;
use std::time::Duration;

use crate::cli::{Cli, Command, cli_command, forgotten_dashes};
use crate::failure::{Failure, exit, message_too_large};
use crate::term::output;

fn main() -> ExitCode {
    // The hidden test-server mode must not touch stdout before serving.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("__testserver") {
        switchboard_testserver::run_stdio_main(argv[2..].to_vec());
    }
    // A shell asking for completions at a Tab: answered, then exit.
    cli::complete::answer_if_asked();
    lifecycle::quiet_print_failures();
    let parsed = cli_command()
        .try_get_matches()
        .and_then(|matches| <Cli as clap::FromArgMatches>::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { exit::USAGE } else { 0 };
            let _ = error.print();
            if let Some(fix) = forgotten_dashes(&error, &argv) {
                eprintln!("\n{fix}");
            }
            return ExitCode::from(code);
        }
    };
    output::set_raw(cli.raw);
    #[cfg(feature = "otlp")]
    let endpoint = cli
        .otlp_endpoint
        .clone()
        .or_else(|| std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok())
        .filter(|e| !e.is_empty());
    #[cfg(not(feature = "otlp"))]
    let endpoint: Option<String> = None;
    // Dropped last, after the runtime: flushes the spans still queued.
    let _telemetry = init_tracing(endpoint.as_deref());
    let json = cli.command.json();
    // `serve --threads 1`: one thread for everything (docs/PERFORMANCE.md,
    // "The gateway against nginx and the bridges").
    let threads = match &cli.command {
        Command::Serve(cli::ServeArgs {
            threads: Some(n), ..
        }) => usize::from(*n),
        _ => 2,
    };
    let mut builder = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(threads);
        builder
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: could not start the async runtime: {error}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let span = tracing::info_span!("switchboard");
    let code = match runtime.block_on(tracing::Instrument::instrument(run(cli), span)) {
        Ok(code) => code,
        Err(failure) => {
            // Nothing more to say when stderr is closed too.
            let _ = std::panic::catch_unwind(|| failure.report(json));
            failure.code
        }
    };
    if matches!(code, exit::SIGHUP | exit::SIGINT | exit::SIGTERM) {
        // After a second signal servers may still run: their clients are
        // dropped here (the library kills them) without waiting on
        // anything that would block.
        runtime.shutdown_timeout(Duration::from_millis(500));
    }
    // Whatever could not be closed politely — a server still starting when
    // a signal or a connect timeout came, one whose polite stop runs on a
    // thread that dies with this process — is killed now, group and all.
    switchboard::transport::stdio::kill_remaining();
    ExitCode::from(code)
}

#[cfg(feature = "otlp")]
use otlp::Guard as TelemetryGuard;
/// Without the `otlp` feature there is nothing to flush.
#[cfg(not(feature = "otlp"))]
type TelemetryGuard = std::convert::Infallible;

/// Logs on stderr as RUST_LOG says and, with an OTLP endpoint, the spans
/// (info and up) to the collector.
fn init_tracing(endpoint: Option<&str>) -> Option<TelemetryGuard> {
    use tracing_subscriber::prelude::*;
    // Quiet by default; RUST_LOG=switchboard=debug shows the protocol.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    #[cfg(feature = "otlp")]
    if let Some(endpoint) = endpoint {
        match otlp::layer(endpoint) {
            Ok((traces, guard)) => {
                let traces = traces.with_filter(tracing_subscriber::filter::LevelFilter::INFO);
                let _ = tracing_subscriber::registry()
                    .with(logs)
                    .with(traces)
                    .try_init();
                return Some(guard);
            }
            Err(error) => eprintln!("warning: traces are not exported: {error:#}"),
        }
    }
    let _ = endpoint;
    let _ = tracing_subscriber::registry().with(logs).try_init();
    None
}

/// Runs the command; then, however it ended, closes every server it
/// started; then reports.
async fn run(cli: Cli) -> Result<u8, Failure> {
    let url = cli.command.remote_url().map(str::to_owned);
    let credentials = cli.credentials.clone();
    let servers = lifecycle::Servers::default();
    let result = match lifecycle::run(&servers, commands::run(cli, &servers)).await {
        lifecycle::Ended::Done(result) => result,
        lifecycle::Ended::Signal(code) => return Ok(code),
        lifecycle::Ended::OutputClosed => return Ok(exit::OUTPUT_CLOSED),
    };
    result.map_err(|mut failure| {
        if failure.hint.is_none() && message_too_large(&failure.error) {
            failure.hint = Some(
                "to accept larger messages, raise the limit with --max-message-size BYTES".into(),
            );
        }
        if failure.code == exit::AUTH_REQUIRED
            && let Some(url) = url
        {
            failure.hint = Some(format!(
                "to log in, run: {}",
                login::login_command(&url, credentials.as_deref())
            ));
        }
        failure
    })
}
