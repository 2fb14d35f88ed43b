//! How long `Hub::start` takes for 1 server and for 50, side by side.
//!
//! ```text
//! cargo bench -p switchboard-hub --bench connect            # or: -- ROUNDS
//! ```
//!
//! The servers are `switchboard-testkit`'s test server, run by this binary
//! (`connect __testserver …`: a dev-dependency's binaries are not built for
//! another crate). Two server kinds:
//! - `instant`: the test server as is (ready a few milliseconds after the
//!   spawn, all of it CPU);
//! - `startup 300ms`: the same server after 300 ms of start-up that costs
//!   no CPU (as a server loading or dialling something does), the case a
//!   hub's parallelism is for.
//!
//! For each, the median over the rounds of: a fresh hub, `start()` timed,
//! `shutdown()` untimed. Printed: both medians and the ratio 50 / 1, with
//! the default local concurrency and, for comparison, smaller ones.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use switchboard_hub::hub::{DEFAULT_LOCAL_CONCURRENCY, Hub};
use switchboard_hub::{Dialect, Origin, Scope, ServerConfig, TransportConfig};

const DELAY_ENV: &str = "SWITCHBOARD_BENCH_STARTUP_MS";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("__testserver") {
        if let Some(ms) = std::env::var(DELAY_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            std::thread::sleep(Duration::from_millis(ms));
        }
        switchboard_testkit::run_stdio_main(args[2..].to_vec());
    }
    // `cargo bench` passes `--bench`; a bare number sets the rounds.
    let rounds: usize = args[1..].iter().find_map(|a| a.parse().ok()).unwrap_or(5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "hub start, median of {rounds} rounds, {} CPUs (default local concurrency {DEFAULT_LOCAL_CONCURRENCY})",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let default = DEFAULT_LOCAL_CONCURRENCY;
    for (kind, delay, limit) in [
        ("instant", None, default),
        ("startup 300ms", Some(300), default),
        // What a smaller default would cost (Claude Code starts 3 at once).
        ("startup 300ms", Some(300), 25),
        ("startup 300ms", Some(300), 10),
    ] {
        runtime.block_on(async {
            // Warm the page cache and the allocator.
            start(1, delay, limit).await;
            let one = median(rounds, || start(1, delay, limit)).await;
            let fifty = median(rounds, || start(50, delay, limit)).await;
            println!(
                "{kind:>14}, local concurrency {limit:>2}: 1 server {:>7.1} ms | 50 servers {:>7.1} ms | ratio {:.2}",
                ms(one),
                ms(fifty),
                fifty.as_secs_f64() / one.as_secs_f64()
            );
        });
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn median<F, Fut>(rounds: usize, mut run: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Duration>,
{
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        times.push(run().await);
    }
    times.sort();
    times[times.len() / 2]
}

/// A fresh hub of `n` test servers: how long `start` takes (all ready).
async fn start(n: usize, delay_ms: Option<u64>, local_concurrency: usize) -> Duration {
    let exe = std::env::current_exe().expect("current exe");
    let hub = Hub::builder()
        .servers((0..n).map(|i| server(&exe, i, delay_ms)))
        .local_concurrency(local_concurrency)
        .persist(false)
        .build()
        .expect("hub");
    let report = hub.start().await.expect("start");
    assert_eq!(report.ready.len(), n, "{:?}", report.not_ready);
    hub.shutdown().await;
    report.elapsed
}

fn server(exe: &std::path::Path, i: usize, delay_ms: Option<u64>) -> ServerConfig {
    let mut env = BTreeMap::new();
    if let Some(ms) = delay_ms {
        env.insert(DELAY_ENV.to_owned(), ms.to_string());
    }
    ServerConfig::new(
        format!("s{i}"),
        TransportConfig::Stdio {
            command: exe.to_string_lossy().into_owned(),
            args: vec!["__testserver".into()],
            env,
            cwd: None,
        },
        Origin {
            file: PathBuf::from("bench.toml"),
            dialect: Dialect::Switchboard,
            scope: Scope::Explicit,
        },
    )
}
