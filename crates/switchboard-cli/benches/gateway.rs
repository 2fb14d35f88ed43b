//! A tool call through the gateway (`switchboard serve`) against the same
//! call straight to the backend, same client, same run (issue 19's
//! targets: p50 ≤ 2× direct, calls/s ≥ 0.5× direct).
//!
//! ```sh
//! cargo bench -p switchboard-cli --bench gateway            # 3 rounds
//! cargo bench -p switchboard-cli --bench gateway -- --rounds 5 --calls 5000
//! cargo bench -p switchboard-cli --bench gateway -- --only http   # or stdio
//! ```
//!
//! The backend is the bundled test server (`switchboard __testserver`) in
//! each era; the client is switchboard's own, in the backend's era when
//! direct and in each era through the gateway. Each round connects afresh;
//! sequential calls after a warm-up give the p50, then calls with 64 in
//! flight give calls/s. Medians over the rounds.
//!
//! Over HTTP too: the backend is an echo server on this crate's own
//! server side (`serve_http`, answering in microseconds, in a process of
//! its own: this binary run again), called straight and through `switchboard serve --http`
//! (which reaches it over HTTP as configured server `web`), by a host of
//! each era.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use switchboard::server::{Reply, RequestContext, ServerHandler};
use switchboard::transport::stdio::StdioConfig;
use switchboard::types::{
    CallToolRequestParams, CallToolResult, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, RequestOutcome, ServerCapabilities,
};
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
    /// `--only stdio|http`: the routes of one transport.
    only: Option<String>,
}

fn plan() -> Plan {
    let mut plan = Plan {
        rounds: 3,
        calls: 3000,
        warmup: 300,
        in_flight: 64,
        only: None,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        let value = || args.get(i + 1).and_then(|v| v.parse().ok());
        match args[i].as_str() {
            "--rounds" => plan.rounds = value().unwrap_or(plan.rounds),
            "--calls" => plan.calls = value().unwrap_or(plan.calls),
            "--only" => plan.only = args.get(i + 1).cloned(),
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
    /// Straight to the HTTP echo backend, the client in this era.
    HttpDirect(EraMode),
    /// Through the HTTP gateway to the HTTP echo backend.
    HttpGateway(EraMode),
}

/// Where the HTTP routes connect.
struct Urls {
    backend: String,
    gateway: String,
}

fn host_era(mode: EraMode) -> &'static str {
    if mode == EraMode::Legacy {
        "session-era"
    } else {
        "2026-07-28"
    }
}

impl Route {
    fn label(self) -> String {
        match self {
            Route::Direct(era) => format!("direct to the {era} backend"),
            Route::Gateway(mode, backend) => {
                format!("gateway, {} host, to `{backend}`", host_era(mode))
            }
            Route::HttpDirect(mode) => {
                format!(
                    "HTTP: direct, {} client, to the HTTP echo backend",
                    host_era(mode)
                )
            }
            Route::HttpGateway(mode) => format!(
                "HTTP: gateway `--http`, {} host, to the HTTP echo backend",
                host_era(mode)
            ),
        }
    }

    fn tool(self) -> String {
        match self {
            Route::Direct(_) | Route::HttpDirect(_) => "echo".to_owned(),
            Route::Gateway(_, backend) => format!("{backend}__echo"),
            Route::HttpGateway(_) => "web__echo".to_owned(),
        }
    }

    async fn connect(self, sandbox: &gateway::Sandbox, urls: &Urls) -> Client {
        let http = match self {
            Route::HttpDirect(mode) => Some((mode, &urls.backend)),
            Route::HttpGateway(mode) => Some((mode, &urls.gateway)),
            _ => None,
        };
        if let Some((mode, url)) = http {
            let client = Client::builder()
                .era_mode(mode)
                // The gateway's token; the direct backend ignores it.
                .connect(gateway::authed(url.as_str()))
                .await
                .expect("connects");
            client.list_tools().await.expect("lists");
            return client;
        }
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
            Route::HttpDirect(_) | Route::HttpGateway(_) => unreachable!("connected above"),
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

/// The HTTP backend: one tool, `echo`, answering its text at once.
struct Echo;

impl ServerHandler for Echo {
    fn info(&self) -> Implementation {
        Implementation::new("echo", "1.0.0")
    }

    fn capabilities(&self) -> ServerCapabilities {
        serde_json::from_value(json!({"tools": {}})).expect("capabilities")
    }

    fn list_tools(&self, _: PaginatedRequestParams, _: RequestContext) -> Reply<ListToolsResult> {
        Box::pin(async {
            let tool = serde_json::from_value(json!({
                "name": "echo",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            }))
            .expect("tool");
            Ok(ListToolsResult {
                tools: vec![tool],
                ..Default::default()
            })
        })
    }

    fn call_tool(
        &self,
        params: CallToolRequestParams,
        _: RequestContext,
    ) -> Reply<RequestOutcome<CallToolResult>> {
        let text = params
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_owned();
        Box::pin(async move { Ok(RequestOutcome::Complete(CallToolResult::text(text))) })
    }
}

fn args() -> Option<JsonObject> {
    json!({"text": "hello"}).as_object().cloned()
}

/// CPU time (user + system) a process has used so far, in µs; 0 where
/// `/proc` is not there.
fn cpu_us(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // After the command name's closing parenthesis: fields 3…; utime and
    // stime are fields 14 and 15, in clock ticks (100 per second here).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) * 1e6 / 100.0
}

/// The processes whose CPU time per call is reported: name and pid.
type Watched = Vec<(&'static str, String)>;

/// p50 of sequential calls (µs), calls/s with `in_flight` at once, and the
/// CPU µs per call each watched process spent in that concurrent phase.
async fn measure(
    client: &Client,
    tool: &str,
    plan: &Plan,
    watched: &Watched,
) -> (f64, f64, Vec<f64>) {
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
    let cpu_before: Vec<f64> = watched.iter().map(|(_, pid)| cpu_us(pid)).collect();
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
    let cpu = watched
        .iter()
        .zip(cpu_before)
        .map(|((_, pid), before)| (cpu_us(pid) - before) / total as f64)
        .collect();
    (p50, rate, cpu)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Set in the environment of this bench's own binary run as the HTTP echo
/// backend: a process of its own, as a real backend is.
const BACKEND_ENV: &str = "SWITCHBOARD_GATEWAY_BENCH_BACKEND";

/// The HTTP echo backend: prints its URL, serves until killed.
fn backend() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let server =
            switchboard::server::http::serve_http(Arc::new(Echo), listener, Default::default())
                .expect("serves");
        println!("listening on http://{}/mcp", server.local_addr());
        std::future::pending::<()>().await;
    });
}

/// Starts the HTTP echo backend process; its URL and the process.
fn start_backend() -> (String, std::process::Child) {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(std::env::current_exe().expect("own path"))
        .env(BACKEND_ENV, "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the backend starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the backend prints its URL");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .expect("a URL")
        .to_owned();
    (url, child)
}

fn main() {
    if std::env::var_os(BACKEND_ENV).is_some() {
        return backend();
    }
    let plan = plan();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // The HTTP backend, then a gateway configured with it.
    let (backend_url, mut backend) = start_backend();
    let sandbox =
        gateway::Sandbox::with_config("bench", &format!("[servers.web]\nurl = {backend_url:?}\n"));
    let (gateway_url, mut http_gateway) = sandbox.http_gateway(&[]);
    let urls = Urls {
        backend: backend_url,
        gateway: gateway_url,
    };
    // Each route with the index of the direct route it is compared with.
    let routes = [
        (Route::Direct("legacy"), 0),
        (Route::Gateway(EraMode::Legacy, "old"), 0),
        (Route::Gateway(EraMode::Modern, "old"), 0),
        (Route::Direct("modern"), 3),
        (Route::Gateway(EraMode::Legacy, "new"), 3),
        (Route::Gateway(EraMode::Modern, "new"), 3),
        (Route::HttpDirect(EraMode::Legacy), 6),
        (Route::HttpGateway(EraMode::Legacy), 6),
        (Route::HttpDirect(EraMode::Modern), 8),
        (Route::HttpGateway(EraMode::Modern), 8),
    ];
    let mut p50s: Vec<Vec<f64>> = vec![Vec::new(); routes.len()];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); routes.len()];
    // CPU µs per call in the concurrent phase, by process, for HTTP routes
    // (where the gateway's and the backend's pids are known).
    let watched: Watched = vec![
        ("client (this bench)", "self".to_owned()),
        ("gateway", http_gateway.id().to_string()),
        ("backend", backend.id().to_string()),
    ];
    let mut cpus: Vec<Vec<Vec<f64>>> = vec![Vec::new(); routes.len()];
    let started = Instant::now();
    let wanted = |route: &Route| match plan.only.as_deref() {
        Some("http") => matches!(route, Route::HttpDirect(_) | Route::HttpGateway(_)),
        Some("stdio") => matches!(route, Route::Direct(_) | Route::Gateway(..)),
        _ => true,
    };
    for round in 1..=plan.rounds {
        for (i, (route, _)) in routes.iter().enumerate() {
            if !wanted(route) {
                continue;
            }
            let http = matches!(route, Route::HttpDirect(_) | Route::HttpGateway(_));
            let watch = if http { watched.clone() } else { Vec::new() };
            let (p50, rate, cpu) = runtime.block_on(async {
                let client = route.connect(&sandbox, &urls).await;
                let measured = measure(&client, &route.tool(), &plan, &watch).await;
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
            cpus[i].push(cpu);
        }
    }
    for child in [&mut http_gateway, &mut backend] {
        let _ = child.kill();
        let _ = child.wait();
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
    for (i, (route, direct)) in routes.iter().enumerate() {
        if !wanted(route) {
            continue;
        }
        let (p50, rate) = (median(p50s[i].clone()), median(rates[i].clone()));
        let (d_p50, d_rate) = (
            median(p50s[*direct].clone()),
            median(rates[*direct].clone()),
        );
        let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
        if i == *direct {
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
    if cpus.iter().any(|c| c.iter().any(|c| !c.is_empty())) {
        println!();
        println!("CPU per call in the concurrent phase (µs, user + system, medians), HTTP routes:");
        println!();
        let names: Vec<&str> = watched.iter().map(|(name, _)| *name).collect();
        println!("| route | {} | total |", names.join(" | "));
        println!("|---|{}---|", "---|".repeat(names.len()));
        for (i, (route, _)) in routes.iter().enumerate() {
            if cpus[i].iter().all(Vec::is_empty) {
                continue;
            }
            let per: Vec<f64> = (0..names.len())
                .map(|k| median(cpus[i].iter().map(|c| c[k]).collect()))
                .collect();
            let cells: Vec<String> = per.iter().map(|v| format!("{v:.1}")).collect();
            println!(
                "| {} | {} | {:.1} |",
                route.label(),
                cells.join(" | "),
                per.iter().sum::<f64>()
            );
        }
    }
}
