//! An agent with your MCP servers' tools, against any OpenAI-compatible
//! chat endpoint: a local llama.cpp (`llama-server --jinja`), Ollama,
//! vLLM, LM Studio, or OpenAI itself.
//!
//! ```text
//! cargo run -p switchboard-models --features sampling --example agent -- \
//!     --base-url http://127.0.0.1:8080/v1 --model qwen2.5 \
//!     "Which files in this directory mention tokio?"
//! ```
//!
//! The servers are the ones you have configured (switchboard's own files
//! and those of Claude Code, VS Code, Cursor … as `switchboard list`
//! shows them), only those of `--config FILE`, or one given with
//! `--server`. Each tool call is printed as it is made (`→`) and answered
//! (`←`), then the model's answer.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use switchboard_hub::config::{LoadOptions, Locations, load};
use switchboard_hub::{Dialect, HttpKind, Hub, Origin, Scope, ServerConfig, TransportConfig};
use switchboard_models::agent::{Agent, AgentEvent, AgentOutcome, ApprovalRequest};
use switchboard_models::chat::ChatClient;
use switchboard_models::{MediaStore, ResultOptions};

const USAGE: &str = "\
An agent loop with MCP servers' tools over an OpenAI-compatible chat endpoint.

Usage: agent --base-url URL --model NAME [options] PROMPT…

Options:
  --base-url URL        the API root (http://127.0.0.1:8080/v1) or the full
                        …/chat/completions URL
  --model NAME          the model to ask
  --api-key-env VAR     read the API key from $VAR (default OPENAI_API_KEY;
                        no key is sent when it is unset)
  --config FILE         use only the servers of FILE (any client's format)
                        instead of every configured server
  --server [NAME=]SPEC  use only this server: a URL (http://…/mcp) or a
                        command line (split at spaces); NAME defaults to
                        `server`
  --max-rounds N        most requests to the model (default 16)
  --timeout SECS        most seconds one model request may take (default 300)
  --system TEXT         a system prompt
  --media DIR           where images, audio and files the model cannot take
                        inline are saved (a new folder under DIR per run;
                        default: the system's temporary folder)
  --confirm             ask on the terminal before each call to a tool its
                        server does not call read-only
  --sampling            answer the servers' sampling requests with the same
                        model, without asking (needs the `sampling` feature)
  -h, --help            this text
";

/// The command line, parsed.
#[derive(Debug, Default)]
struct Args {
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    config: Option<PathBuf>,
    servers: Vec<String>,
    max_rounds: Option<usize>,
    timeout: Option<Duration>,
    system: Option<String>,
    sampling: bool,
    confirm: bool,
    media: Option<PathBuf>,
    help: bool,
    prompt: Vec<String>,
}

fn parse(args: Vec<String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            parsed.prompt.extend(args.by_ref());
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            parsed.prompt.push(arg);
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.into())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs {what}"))
        };
        match flag.as_str() {
            "-h" | "--help" => parsed.help = true,
            "--sampling" => parsed.sampling = true,
            "--confirm" => parsed.confirm = true,
            "--media" => parsed.media = Some(value("a folder")?.into()),
            "--base-url" => parsed.base_url = Some(value("a URL")?),
            "--model" => parsed.model = Some(value("a model name")?),
            "--api-key-env" => parsed.api_key_env = Some(value("a variable name")?),
            "--config" => parsed.config = Some(value("a file")?.into()),
            "--server" => parsed.servers.push(value("a URL or a command")?),
            "--system" => parsed.system = Some(value("a prompt")?),
            "--max-rounds" => {
                let n = value("a number")?;
                parsed.max_rounds = Some(
                    n.parse()
                        .map_err(|_| format!("--max-rounds needs a number, not `{n}`"))?,
                );
            }
            "--timeout" => {
                let secs = value("seconds")?;
                let parsed_secs: f64 = secs
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| format!("--timeout needs seconds, not `{secs}`"))?;
                parsed.timeout = Some(Duration::from_secs_f64(parsed_secs));
            }
            _ => return Err(format!("unknown option `{arg}` (see --help)")),
        }
    }
    Ok(parsed)
}

/// `--server [NAME=]SPEC`.
pub(crate) fn server_from_flag(spec: &str) -> Result<ServerConfig, String> {
    let (name, spec) = match spec.split_once('=') {
        Some((name, rest))
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            (name, rest)
        }
        _ => ("server", spec),
    };
    let transport = if spec.starts_with("http://") || spec.starts_with("https://") {
        TransportConfig::Http {
            url: spec.to_owned(),
            headers: BTreeMap::new(),
            kind: HttpKind::Auto,
        }
    } else {
        let mut words = spec.split_whitespace().map(str::to_owned);
        let command = words
            .next()
            .ok_or("--server needs a URL or a command line")?;
        TransportConfig::Stdio {
            command,
            args: words.collect(),
            env: BTreeMap::new(),
            cwd: None,
        }
    };
    let origin = Origin {
        file: "--server".into(),
        dialect: Dialect::Switchboard,
        scope: Scope::Explicit,
    };
    Ok(ServerConfig::new(name, transport, origin))
}

/// The configured servers (all of them, or only `--config FILE`'s),
/// expanded and ready to run; problems are printed.
fn configured(config: Option<PathBuf>, out: &mut impl Write) -> Result<Vec<ServerConfig>, String> {
    let locations = Locations::from_process()?;
    let options = match config {
        Some(file) => LoadOptions::new().with_config(file).strict(true),
        None => LoadOptions::new(),
    };
    let loaded = load(&locations, &options);
    for diagnostic in &loaded.diagnostics {
        if diagnostic.is_error() {
            let _ = writeln!(out, "config: {diagnostic}");
        }
    }
    if loaded.has_errors() && loaded.servers.is_empty() {
        return Err("the configuration could not be read (see above)".into());
    }
    let mut expander = loaded.expander(&locations);
    let mut servers = Vec::new();
    for server in loaded.servers.iter().filter(|s| s.enabled) {
        match expander.expand(server) {
            Ok(expanded) => servers.push(expanded.config),
            Err(error) => {
                let _ = writeln!(out, "server `{}` left out: {error}", server.name);
            }
        }
    }
    Ok(servers)
}

/// What the agent did, one line per event worth showing.
fn describe(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::Call {
            name, arguments, ..
        } => {
            let arguments = match arguments {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some(format!("→ {name} {arguments}"))
        }
        AgentEvent::Result { call, summary } => Some(format!(
            "← {}{}: {summary}",
            call.name,
            if call.is_error { " (error)" } else { "" }
        )),
        _ => None,
    }
}

/// An error and its causes on one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Runs the agent as the command line says, printing to `out`; the
/// outcome (`None` for `--help`) or what went wrong.
pub(crate) async fn run(
    args: Vec<String>,
    out: &mut impl Write,
) -> Result<Option<AgentOutcome>, String> {
    let args = parse(args)?;
    if args.help {
        let _ = write!(out, "{USAGE}");
        return Ok(None);
    }
    let base_url = args.base_url.ok_or("--base-url is required (see --help)")?;
    let model = args.model.ok_or("--model is required (see --help)")?;
    let prompt = args.prompt.join(" ");
    if prompt.trim().is_empty() {
        return Err("a prompt is required (see --help)".into());
    }
    let key_env = args.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
    let mut chat = ChatClient::builder(base_url, model).api_key(std::env::var(key_env).ok());
    if let Some(timeout) = args.timeout {
        chat = chat.timeout(timeout);
    }
    let chat = chat.build().map_err(|e| chain(&e))?;

    let servers = match (args.servers.is_empty(), args.config) {
        (false, Some(_)) => return Err("give --config or --server, not both".into()),
        (false, None) => args
            .servers
            .iter()
            .map(|s| server_from_flag(s))
            .collect::<Result<Vec<_>, _>>()?,
        (true, config) => configured(config, out)?,
    };
    let mut hub = Hub::builder().servers(servers).persist(false);
    if args.sampling {
        hub = with_sampling(hub, &chat)?;
    }
    let hub = hub.build().map_err(|e| chain(&e))?;
    let base = args
        .media
        .unwrap_or_else(|| std::env::temp_dir().join("switchboard-media"));
    let media = MediaStore::session(&base)
        .map_err(|e| format!("cannot make a media folder under {}: {e}", base.display()))?;
    let settings = Settings {
        max_rounds: args.max_rounds,
        system: args.system,
        confirm: args.confirm,
        media: Arc::new(media),
    };
    let result = agent(&hub, chat, settings, &prompt, out).await;
    hub.shutdown().await;
    result.map(Some)
}

/// Servers' sampling requests go to the same model, without asking.
#[cfg(feature = "sampling")]
fn with_sampling(
    hub: switchboard_hub::HubBuilder,
    chat: &ChatClient,
) -> Result<switchboard_hub::HubBuilder, String> {
    let sampling = switchboard_models::sampling::ChatSampling::new(chat.clone());
    Ok(hub.client(move |_, client| client.sampling(sampling.clone())))
}

#[cfg(not(feature = "sampling"))]
fn with_sampling(
    _: switchboard_hub::HubBuilder,
    _: &ChatClient,
) -> Result<switchboard_hub::HubBuilder, String> {
    Err("--sampling needs the example built with `--features sampling`".into())
}

/// What the agent is built with, from the command line.
struct Settings {
    max_rounds: Option<usize>,
    system: Option<String>,
    confirm: bool,
    media: Arc<MediaStore>,
}

async fn agent(
    hub: &Hub,
    chat: ChatClient,
    Settings {
        max_rounds,
        system,
        confirm,
        media,
    }: Settings,
    prompt: &str,
    out: &mut impl Write,
) -> Result<AgentOutcome, String> {
    let report = hub.start().await.map_err(|e| chain(&e))?;
    for (server, state) in &report.not_ready {
        let _ = writeln!(out, "server `{server}` is not ready: {state}");
    }
    let tools = hub.tools().len();
    let _ = writeln!(
        out,
        "{} server(s) ready, {tools} tool(s); asking {} at {}",
        report.ready.len(),
        chat.model(),
        chat.url()
    );

    let (lines, mut printed) = tokio::sync::mpsc::unbounded_channel();
    let mut agent = Agent::builder(hub.clone(), chat).observer(move |event| {
        if let Some(line) = describe(event) {
            let _ = lines.send(line);
        }
    });
    if let Some(rounds) = max_rounds {
        agent = agent.max_rounds(rounds);
    }
    if let Some(system) = system {
        agent = agent.system_prompt(system);
    }
    if confirm {
        agent = agent.approval(confirm_on_terminal);
    }
    agent = agent.result_options(ResultOptions::default().media(Some(media)));
    let agent = agent.build().map_err(|e| chain(&e))?;
    // Lines are printed as the calls happen, while the run goes on.
    let mut work = std::pin::pin!(agent.run(prompt));
    let result = loop {
        tokio::select! {
            result = &mut work => break result,
            Some(line) = printed.recv() => {
                let _ = writeln!(out, "{line}");
            }
        }
    };
    while let Ok(line) = printed.try_recv() {
        let _ = writeln!(out, "{line}");
    }
    let outcome = result.map_err(|e| chain(&e))?;
    let _ = writeln!(out, "\n{}", outcome.text);
    Ok(outcome)
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut out = std::io::stdout();
    match run(std::env::args().skip(1).collect(), &mut out).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("agent: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `--confirm`: a yes from the terminal for each call to a tool whose
/// server does not claim it is read-only (a claim, not a guarantee: this
/// only spares the user questions about harmless-looking calls).
async fn confirm_on_terminal(request: ApprovalRequest) -> bool {
    if request.hints.read_only == Some(true) {
        return true;
    }
    let arguments = request.arguments.as_ref().map_or_else(
        || "{}".to_owned(),
        |a| serde_json::Value::Object(a.clone()).to_string(),
    );
    let destructive = if request.hints.destructive == Some(false) {
        ""
    } else {
        " (it may change or delete data)"
    };
    let question = format!(
        "run `{}` on server `{}`{destructive} with {arguments}? [y/N] ",
        request.tool, request.server
    );
    // The terminal is read on a blocking thread; the answer is awaited.
    tokio::task::spawn_blocking(move || {
        eprint!("{question}");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).is_ok()
            && matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
    })
    .await
    .unwrap_or(false)
}
