//! A tool call through the gateway (`switchboard serve`) against the same
//! call straight to the backend, same client, same run (issue 19's
//! targets: p50 ≤ 2× direct, calls/s ≥ 0.5× direct).
//!
//! ```sh
//! cargo bench -p switchboard-cli --bench gateway            # 3 rounds
//! cargo bench -p switchboard-cli --bench gateway -- --rounds 5 --calls 5000
//! ```
//!
//! The backend is the bundled test server (`switchboard __testserver`) in
//! each era; the client is switchboard's own, in the backend's era when
//! direct and in each era through the gateway. Each round connects afresh;
//! sequential calls after a warm-up give the p50, then calls with 64 in
//! flight give calls/s. Medians over the rounds. Over stdio only (the
//! gateway's `--http` is not measured here yet).

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use switchboard::transport::stdio::StdioConfig;
use switchboard::types::JsonObject;
use switchboard::{Client, EraMode};

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");
/// What `gateway::Sandbox::host` scrubs (the tests' list; unused here).
#[allow(dead_code)]
const SCRUBBED: [&str; 0] = [];

/// The tests' sandbox: a HOME whose user config has the two backends.
#[allow(dead_code)]
#[path = "../tests/support/gateway.rs"]
mod gateway;

struct Plan {
    rounds: usize,
    calls: usize,
    warmup: usize,
    in_flight: usize,
}

fn plan() -> Plan {
    let mut plan = Plan {
        rounds: 3,
        calls: 3000,
        warmup: 300,
        in_flight: 64,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        let value = || args.get(i + 1).and_then(|v| v.parse().ok());
        match args[i].as_str() {
            "--rounds" => plan.rounds = value().unwrap_or(plan.rounds),
            "--calls" => plan.calls = value().unwrap_or(plan.calls),
            _ => {}
        }
        i += 1;
    }
    // `cargo test` runs this binary without `--bench`: a smoke run.
    if !args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--rounds") {
        plan.rounds = 1;
        plan.calls = 50;
        plan.warmup = 5;
    }
    plan
}

#[derive(Clone, Copy, PartialEq)]
enum Route {
    /// Straight to the backend of this era.
    Direct(&'static str),
    /// Through the gateway, the host in this era, to backend `old` or `new`.
    Gateway(EraMode, &'static str),
}

impl Route {
    fn label(self) -> String {
        match self {
            Route::Direct(era) => format!("direct to the {era} backend"),
            Route::Gateway(mode, backend) => {
                let host = if mode == EraMode::Legacy {
                    "session-era"
                } else {
                    "2026-07-28"
                };
                format!("gateway, {host} host, to `{backend}`")
            }
        }
    }

    fn tool(self) -> String {
        match self {
            Route::Direct(_) => "echo".to_owned(),
            Route::Gateway(_, backend) => format!("{backend}__echo"),
        }
    }

    async fn connect(self, sandbox: &gateway::Sandbox) -> Client {
        let (mode, config) = match self {
            Route::Direct(era) => (
                if era == "legacy" {
                    EraMode::Legacy
                } else {
                    EraMode::Modern
                },
                StdioConfig::new(BIN).args(["__testserver", "--era", era]),
            ),
            Route::Gateway(mode, _) => (
                mode,
                StdioConfig::new(BIN)
                    .args(["serve"])
                    .env("HOME", sandbox.home())
                    .env("SWITCHBOARD_CREDENTIALS", sandbox.credentials())
                    .cwd(sandbox.work()),
            ),
        };
        let client = Client::builder()
            .era_mode(mode)
            .connect(config)
            .await
            .expect("connects");
        // The gateway's first list waits for its backends.
        client.list_tools().await.expect("lists");
        client
    }
}

fn args() -> Option<JsonObject> {
    json!({"text": "hello"}).as_object().cloned()
}

/// p50 of sequential calls (µs) and calls/s with `in_flight` at once.
async fn measure(client: &Client, tool: &str, plan: &Plan) -> (f64, f64) {
    for _ in 0..plan.warmup {
        client.call_tool(tool, args()).await.expect("call");
    }
    let mut samples = Vec::with_capacity(plan.calls);
    for _ in 0..plan.calls {
        let t = Instant::now();
        client.call_tool(tool, args()).await.expect("call");
        samples.push(t.elapsed());
    }
    samples.sort();
    let p50 = samples[samples.len() / 2].as_secs_f64() * 1e6;
    let total = plan.calls * 4;
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..plan.in_flight {
        let client = client.clone();
        let next = next.clone();
        let tool = tool.to_owned();
        workers.spawn(async move {
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < total {
                client.call_tool(&tool, args()).await.expect("call");
            }
        });
    }
    while workers.join_next().await.is_some() {}
    let rate = total as f64 / t.elapsed().as_secs_f64();
    (p50, rate)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let plan = plan();
    let sandbox = gateway::Sandbox::new("bench");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let routes = [
        Route::Direct("legacy"),
        Route::Gateway(EraMode::Legacy, "old"),
        Route::Gateway(EraMode::Modern, "old"),
        Route::Direct("modern"),
        Route::Gateway(EraMode::Legacy, "new"),
        Route::Gateway(EraMode::Modern, "new"),
    ];
    let mut p50s: Vec<Vec<f64>> = vec![Vec::new(); routes.len()];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); routes.len()];
    let started = Instant::now();
    for round in 1..=plan.rounds {
        for (i, route) in routes.iter().enumerate() {
            let (p50, rate) = runtime.block_on(async {
                let client = route.connect(&sandbox).await;
                let measured = measure(&client, &route.tool(), &plan).await;
                client.close().await;
                measured
            });
            eprintln!(
                "gateway bench: round {round}/{} {}: p50 {p50:.1} µs, {rate:.0} calls/s",
                plan.rounds,
                route.label()
            );
            p50s[i].push(p50);
            rates[i].push(rate);
        }
    }
    drop(sandbox);
    println!(
        "gateway bench: {} round(s), {} sequential calls after {} warm-up, {} calls with {} in flight; medians; {:.0} s; load {}",
        plan.rounds,
        plan.calls,
        plan.warmup,
        plan.calls * 4,
        plan.in_flight,
        started.elapsed().as_secs_f64(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split(' ')
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    );
    println!();
    println!(
        "| route | echo p50 | vs direct (≤ 2×) | calls/s, {} in flight | vs direct (≥ 0.5×) |",
        plan.in_flight
    );
    println!("|---|---|---|---|---|");
    for (i, route) in routes.iter().enumerate() {
        let direct = if i < 3 { 0 } else { 3 };
        let (p50, rate) = (median(p50s[i].clone()), median(rates[i].clone()));
        let (d_p50, d_rate) = (median(p50s[direct].clone()), median(rates[direct].clone()));
        let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
        if i == direct {
            println!(
                "| {} | {p50:.1} µs | 1.00× | {rate:.0} | 1.00× |",
                route.label()
            );
        } else {
            let (r1, r2) = (p50 / d_p50, rate / d_rate);
            println!(
                "| {} | {p50:.1} µs | {r1:.2}× {} | {rate:.0} | {r2:.2}× {} |",
                route.label(),
                verdict(r1 <= 2.0),
                verdict(r2 >= 0.5)
            );
        }
    }
}
