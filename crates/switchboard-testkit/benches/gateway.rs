//! The gateway against nginx and the bridges: `tools/call` round trips to
//! one SDK-less fast server (`benches/hotpath/fast_server.rs`, this binary
//! run as `gateway-… --fast-server http|stdio`), side by side in one run,
//! by the same hand-written clients, on loopback:
//!
//! - HTTP (`benches/hotpath/raw_tcp.rs`, HTTP/1.1 keep-alive over plain
//!   `TcpStream`s): straight to the backend; through **nginx** (its own
//!   process and generated config: one worker, upstream keep-alive, no
//!   buffering, no access log); through `switchboard serve --http
//!   127.0.0.1:0 --no-auth` to the HTTP backend and to the fast server as a
//!   stdio backend; through **supergateway** (`--stateful`) and
//!   **mcp-proxy**, the stdio→HTTP bridges, to the same stdio backend.
//! - stdio (`benches/gateway/stdio_client.rs`): straight to the stdio fast
//!   server; `switchboard serve` (stdio) and **mcp-remote**, the HTTP→stdio
//!   bridges, in front of the HTTP backend.
//!
//! Per route: p50/p99 of sequential calls, calls/s with 64 in flight, and
//! CPU per call of each process in that phase (`/proc/PID/stat` utime +
//! stime before and after): the proxy, the backend, the client (this
//! process). Then the targets, as ratios against the nginx route (and the
//! bridges against switchboard in the same role). It reports misses; it
//! does not assert.
//!
//! `cargo bench -p switchboard-testkit --bench gateway [-- OPTIONS]`:
//! `--rounds N` (default 3; medians), `--quick` (1 round, fewer calls),
//! `--calls N` (sequential, default 3000), `--concurrent N` (default
//! 20000), `--in-flight N` (default 64), `--only id,id`, `--no-install`.
//! Route ids: `direct`, `nginx`, `sb-http`, `sb-http-1t` (the same with
//! `--threads 1`), `sb-http-before`, `sb-stdio`, `supergateway`,
//! `mcp-proxy`, `stdio-direct`, `sb-bridge`, `mcp-remote`.
//!
//! The CLI is built with this bench's profile unless `SWITCHBOARD_BIN`
//! names one; `SWITCHBOARD_BIN_BEFORE` names another CLI (an earlier
//! build) to run as `sb-http-before` beside it, for a change's before and
//! after in one run (the route is skipped without it); nginx is `NGINX` or the system's (skipped with a message when
//! absent: `apt-get install nginx`); the bridges are installed on first use
//! into `~/.cache/switchboard-ci/bridges` (`SWITCHBOARD_BRIDGES`), npm for
//! supergateway and mcp-remote, a venv for mcp-proxy, and skipped with a
//! message when that fails. `cargo test` runs this binary without
//! `--bench`: a smoke run of the routes that need no install (direct,
//! nginx if present, the gateway if its binary was built beside this one),
//! which fails on any error.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

#[allow(dead_code)] // the memory figures' helpers are hotpath's
#[path = "hotpath/fast_server.rs"]
mod fast_server;
#[allow(dead_code)]
#[path = "hotpath/raw_tcp.rs"]
mod raw_tcp;
#[path = "gateway/routes.rs"]
mod routes;
#[path = "gateway/stdio_client.rs"]
mod stdio_client;

use routes::{Owned, Sandbox, TempDir};
use stdio_client::StdioClient;

fn fail(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The result of request `id` from a POST's answer body: JSON, or an event
/// stream (the event whose `data:` is that response).
pub(crate) fn parse_answer(sse: bool, body: &[u8], id: u64) -> Result<Value, String> {
    let mut msg: Value = if sse {
        let text = std::str::from_utf8(body).map_err(fail)?;
        text.replace("\r\n", "\n")
            .split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                serde_json::from_str::<Value>(&data.join("\n")).ok()
            })
            .find(|m| m.get("id").and_then(Value::as_u64) == Some(id))
            .ok_or("no response in the event stream")?
    } else {
        serde_json::from_slice(body).map_err(fail)?
    };
    if let Some(err) = msg.get("error") {
        return Err(format!("JSON-RPC error: {err}"));
    }
    Ok(msg
        .get_mut("result")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

// ---------------------------------------------------------------------------
// The plan and the routes.
// ---------------------------------------------------------------------------

struct Plan {
    bench: bool,
    rounds: usize,
    warmup: usize,
    calls: usize,
    concurrent: usize,
    in_flight: usize,
    /// Each phase stops here even if its calls are not all done (the slow
    /// bridges).
    phase_limit: Duration,
    only: Option<Vec<String>>,
    install: bool,
}

fn plan() -> Plan {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let mut plan = Plan {
        bench,
        rounds: 3,
        warmup: 300,
        calls: 3000,
        concurrent: 20_000,
        in_flight: 64,
        phase_limit: Duration::from_secs(12),
        only: None,
        install: true,
    };
    if !bench {
        // `cargo test`: a smoke run.
        plan.rounds = 1;
        plan.warmup = 5;
        plan.calls = 30;
        plan.concurrent = 300;
        plan.install = false;
    }
    let mut i = 0;
    while i < args.len() {
        let value = || args.get(i + 1).and_then(|v| v.parse().ok());
        match args[i].as_str() {
            "--quick" => {
                plan.rounds = 1;
                plan.warmup = 200;
                plan.calls = 1500;
                plan.concurrent = 10_000;
                plan.phase_limit = Duration::from_secs(8);
            }
            "--rounds" => plan.rounds = value().unwrap_or(plan.rounds),
            "--calls" => plan.calls = value().unwrap_or(plan.calls),
            "--concurrent" => plan.concurrent = value().unwrap_or(plan.concurrent),
            "--in-flight" => plan.in_flight = value().unwrap_or(plan.in_flight),
            "--only" => {
                plan.only = args
                    .get(i + 1)
                    .map(|v| v.split(',').map(str::to_owned).collect());
            }
            "--no-install" => plan.install = false,
            _ => {}
        }
        i += 1;
    }
    plan
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Route {
    Direct,
    Nginx,
    SbHttpBefore,
    SbHttp,
    SbHttp1,
    SbStdio,
    Supergateway,
    McpProxy,
    StdioDirect,
    SbBridge,
    McpRemote,
}

const ROUTES: [Route; 11] = [
    Route::Direct,
    Route::Nginx,
    Route::SbHttpBefore,
    Route::SbHttp,
    Route::SbHttp1,
    Route::SbStdio,
    Route::Supergateway,
    Route::McpProxy,
    Route::StdioDirect,
    Route::SbBridge,
    Route::McpRemote,
];

impl Route {
    fn id(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::Nginx => "nginx",
            Route::SbHttpBefore => "sb-http-before",
            Route::SbHttp => "sb-http",
            Route::SbHttp1 => "sb-http-1t",
            Route::SbStdio => "sb-stdio",
            Route::Supergateway => "supergateway",
            Route::McpProxy => "mcp-proxy",
            Route::StdioDirect => "stdio-direct",
            Route::SbBridge => "sb-bridge",
            Route::McpRemote => "mcp-remote",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Route::Direct => "HTTP: direct to the HTTP backend",
            Route::Nginx => "HTTP: nginx → HTTP backend",
            Route::SbHttpBefore => {
                "HTTP: `switchboard serve --http` → HTTP backend, the CLI of `SWITCHBOARD_BIN_BEFORE`"
            }
            Route::SbHttp => "HTTP: `switchboard serve --http` → HTTP backend",
            Route::SbHttp1 => "HTTP: `switchboard serve --http --threads 1` → HTTP backend",
            Route::SbStdio => "HTTP: `switchboard serve --http` → stdio backend",
            Route::Supergateway => "HTTP: supergateway (stdio→HTTP) → stdio backend",
            Route::McpProxy => "HTTP: mcp-proxy (stdio→HTTP) → stdio backend",
            Route::StdioDirect => "stdio: direct to the stdio backend",
            Route::SbBridge => "stdio: `switchboard serve` (HTTP→stdio) → HTTP backend",
            Route::McpRemote => "stdio: mcp-remote (HTTP→stdio) → HTTP backend",
        }
    }

    /// The tool's name as this route's client may see it: the gateway
    /// prefixes a server's tools with its name (`x__echo`), unless it
    /// serves them under their own names; the first one listed is called.
    fn tools(self) -> &'static [&'static str] {
        match self {
            Route::SbHttpBefore
            | Route::SbHttp
            | Route::SbHttp1
            | Route::SbStdio
            | Route::SbBridge => &["x__echo", "echo"],
            _ => &["echo"],
        }
    }

    /// The backend is a stdio child of the proxy (or the client's own child).
    fn stdio_backend(self) -> bool {
        matches!(
            self,
            Route::SbStdio | Route::Supergateway | Route::McpProxy | Route::StdioDirect
        )
    }
}

/// What each route needs from outside this binary.
struct Tools {
    nginx: Result<std::path::PathBuf, String>,
    switchboard: Result<std::path::PathBuf, String>,
    switchboard_before: Result<std::path::PathBuf, String>,
    supergateway: Result<std::path::PathBuf, String>,
    mcp_proxy: Result<std::path::PathBuf, String>,
    mcp_remote: Result<std::path::PathBuf, String>,
}

impl Tools {
    fn find(plan: &Plan, wanted: &dyn Fn(Route) -> bool) -> Tools {
        let bridge = |name: &str, routes: &[Route]| {
            if !routes.iter().any(|r| wanted(*r)) {
                return Err("not asked for".to_owned());
            }
            if !plan.bench {
                return Err("the bridges run under `cargo bench` only".to_owned());
            }
            routes::bridge(name, plan.install)
        };
        let sb_wanted = [
            Route::SbHttp,
            Route::SbHttp1,
            Route::SbStdio,
            Route::SbBridge,
        ]
        .iter()
        .any(|r| wanted(*r));
        Tools {
            nginx: routes::nginx_path()
                .ok_or_else(|| "nginx not found (apt-get install nginx, or NGINX=PATH)".to_owned()),
            switchboard: if sb_wanted {
                routes::switchboard_bin(plan.bench)
            } else {
                Err("not asked for".to_owned())
            },
            switchboard_before: std::env::var_os("SWITCHBOARD_BIN_BEFORE")
                .map(std::path::PathBuf::from)
                .ok_or_else(|| "SWITCHBOARD_BIN_BEFORE not set".to_owned()),
            supergateway: bridge("supergateway", &[Route::Supergateway]),
            mcp_proxy: bridge("mcp-proxy", &[Route::McpProxy]),
            mcp_remote: bridge("mcp-remote", &[Route::McpRemote]),
        }
    }

    /// Why `route` cannot run, if it cannot.
    fn missing(&self, route: Route) -> Option<&str> {
        let need = match route {
            Route::Direct | Route::StdioDirect => return None,
            Route::Nginx => &self.nginx,
            Route::SbHttp | Route::SbHttp1 | Route::SbStdio | Route::SbBridge => &self.switchboard,
            Route::SbHttpBefore => &self.switchboard_before,
            Route::Supergateway => &self.supergateway,
            Route::McpProxy => &self.mcp_proxy,
            Route::McpRemote => &self.mcp_remote,
        };
        need.as_ref().err().map(String::as_str)
    }
}

// ---------------------------------------------------------------------------
// One route, live.
// ---------------------------------------------------------------------------

#[derive(Clone)]
enum Client {
    Http(Arc<raw_tcp::RawTcpClient>),
    Stdio(Arc<StdioClient>),
}

impl Client {
    async fn call(&self, tool: &str) -> Result<usize, String> {
        let mut args = Map::new();
        args.insert("text".into(), Value::String("hello".into()));
        match self {
            Client::Http(c) => c.call_tool(tool, args).await,
            Client::Stdio(c) => c.call_tool(tool, args).await,
        }
    }

    async fn list_tools(&self) -> Result<Value, String> {
        match self {
            Client::Http(c) => c.request("tools/list", json!({})).await,
            Client::Stdio(c) => c.request("tools/list", json!({})).await,
        }
    }
}

/// A route's processes and its connected client.
struct Live {
    client: Client,
    /// The HTTP proxy this route started (nginx's master, a gateway, a
    /// bridge); stdio proxies are the client's child.
    _proxy: Option<Owned>,
    _dirs: Vec<Sandbox>,
    _temp: Option<TempDir>,
    proxy_pid: Option<u32>,
}

async fn start(route: Route, tools: &Tools, backend_url: &str) -> Result<Live, String> {
    let path = |r: &Result<std::path::PathBuf, String>| r.clone();
    let mut proxy = None;
    let mut dirs = Vec::new();
    let mut temp = None;
    let url = match route {
        Route::Direct => backend_url.to_owned(),
        Route::Nginx => {
            let dir = TempDir::new("nginx")?;
            let (url, p) = routes::start_nginx(&path(&tools.nginx)?, backend_url, &dir.0)?;
            temp = Some(dir);
            proxy = Some(p);
            url
        }
        Route::SbHttpBefore | Route::SbHttp | Route::SbHttp1 | Route::SbStdio => {
            let sandbox = if route == Route::SbStdio {
                Sandbox::stdio("sb-stdio")?
            } else {
                Sandbox::http(route.id(), backend_url)?
            };
            let (bin, extra): (_, &[&str]) = match route {
                Route::SbHttpBefore => (&tools.switchboard_before, &[]),
                Route::SbHttp1 => (&tools.switchboard, &["--threads", "1"]),
                _ => (&tools.switchboard, &[]),
            };
            let (url, p) = routes::start_http_gateway(&path(bin)?, &sandbox, extra)?;
            dirs.push(sandbox);
            proxy = Some(p);
            url
        }
        Route::Supergateway => {
            let (url, p) = routes::start_supergateway(&path(&tools.supergateway)?)?;
            proxy = Some(p);
            url
        }
        Route::McpProxy => {
            let (url, p) = routes::start_mcp_proxy(&path(&tools.mcp_proxy)?)?;
            proxy = Some(p);
            url
        }
        Route::StdioDirect | Route::SbBridge | Route::McpRemote => {
            let cmd = match route {
                Route::StdioDirect => {
                    let mut c = tokio::process::Command::new(routes::own_exe());
                    c.args(["--fast-server", "stdio"]);
                    c
                }
                Route::SbBridge => {
                    let sandbox = Sandbox::http("sb-bridge", backend_url)?;
                    let mut c = sandbox.command(&path(&tools.switchboard)?);
                    c.arg("serve");
                    dirs.push(sandbox);
                    tokio::process::Command::from(c)
                }
                _ => {
                    // Its HOME (~/.mcp-auth) in a throwaway sandbox.
                    let sandbox = Sandbox::http("mcp-remote", backend_url)?;
                    let mut c = sandbox.command(&path(&tools.mcp_remote)?);
                    c.args([backend_url, "--transport", "http-only"]);
                    dirs.push(sandbox);
                    tokio::process::Command::from(c)
                }
            };
            let client = StdioClient::connect(cmd).await?;
            let proxy_pid = if route == Route::StdioDirect {
                None
            } else {
                client.pid()
            };
            return Ok(Live {
                client: Client::Stdio(Arc::new(client)),
                _proxy: None,
                _dirs: dirs,
                _temp: None,
                proxy_pid,
            });
        }
    };
    let client = Client::Http(Arc::new(raw_tcp::RawTcpClient::connect(&url).await?));
    Ok(Live {
        client,
        proxy_pid: proxy.as_ref().map(Owned::pid),
        _proxy: proxy,
        _dirs: dirs,
        _temp: temp,
    })
}

impl Live {
    async fn close(self) {
        match self.client {
            Client::Http(c) => c.close().await,
            Client::Stdio(c) => {
                if let Ok(c) = Arc::try_unwrap(c) {
                    c.close().await;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Measuring.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Default)]
struct Sample {
    p50: f64,
    p99: f64,
    rate: f64,
    /// CPU µs per call in the concurrent phase.
    cpu_proxy: f64,
    cpu_backend: f64,
    cpu_client: f64,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn cpu_sum(pids: &[String]) -> f64 {
    pids.iter().map(|p| routes::cpu_us(p)).sum()
}

async fn concurrent(
    client: &Client,
    tool: &Arc<str>,
    total: usize,
    in_flight: usize,
    limit: Duration,
) -> Result<(usize, Duration), String> {
    let claimed = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + limit;
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..in_flight {
        let client = client.clone();
        let claimed = Arc::clone(&claimed);
        let tool = Arc::clone(tool);
        set.spawn(async move {
            let mut done = 0usize;
            while claimed.fetch_add(1, Ordering::Relaxed) < total && Instant::now() < deadline {
                client.call(&tool).await?;
                done += 1;
            }
            Ok::<usize, String>(done)
        });
    }
    let mut done = 0;
    while let Some(r) = set.join_next().await {
        done += r.map_err(fail)??;
    }
    Ok((done, started.elapsed()))
}

async fn measure(
    route: Route,
    live: &Live,
    plan: &Plan,
    backend_pid: u32,
) -> Result<Sample, String> {
    let client = &live.client;
    let tools = client.list_tools().await?;
    let listed: Vec<&str> = tools["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    let tool: Arc<str> = match route.tools().iter().find(|t| listed.contains(t)) {
        Some(t) => Arc::from(*t),
        None => return Err(format!("none of {:?} in {tools}", route.tools())),
    };
    let tool = &tool;
    for _ in 0..plan.warmup {
        client.call(tool).await?;
    }
    // Sequential.
    let mut lat = Vec::with_capacity(plan.calls);
    let deadline = Instant::now() + plan.phase_limit;
    while lat.len() < plan.calls && Instant::now() < deadline {
        let t = Instant::now();
        client.call(tool).await?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    lat.sort_by(f64::total_cmp);
    // Warm the in-flight connections (HTTP: up to `in_flight` of them).
    concurrent(
        client,
        tool,
        plan.in_flight * 4,
        plan.in_flight,
        plan.phase_limit,
    )
    .await?;
    // The processes to watch, now that every child is up.
    let proxy: Vec<String> = match live.proxy_pid {
        Some(p) if route == Route::Nginx => std::iter::once(p)
            .chain(routes::descendants(p))
            .map(|p| p.to_string())
            .collect(),
        Some(p) => vec![p.to_string()],
        None => Vec::new(),
    };
    let backend: Vec<String> = match (route.stdio_backend(), live.proxy_pid, client) {
        (true, Some(p), _) => routes::descendants(p).iter().map(u32::to_string).collect(),
        (true, None, Client::Stdio(c)) => c.pid().map(|p| p.to_string()).into_iter().collect(),
        _ => vec![backend_pid.to_string()],
    };
    let me = vec!["self".to_owned()];
    let before = (cpu_sum(&proxy), cpu_sum(&backend), cpu_sum(&me));
    let (done, elapsed) = concurrent(
        client,
        tool,
        plan.concurrent,
        plan.in_flight,
        plan.phase_limit,
    )
    .await?;
    let after = (cpu_sum(&proxy), cpu_sum(&backend), cpu_sum(&me));
    let n = done.max(1) as f64;
    Ok(Sample {
        p50: percentile(&lat, 0.50),
        p99: percentile(&lat, 0.99),
        rate: done as f64 / elapsed.as_secs_f64(),
        cpu_proxy: (after.0 - before.0) / n,
        cpu_backend: (after.1 - before.1) / n,
        cpu_client: (after.2 - before.2) / n,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

// ---------------------------------------------------------------------------
// The report.
// ---------------------------------------------------------------------------

/// A route's medians, if it ran.
type Medians = Option<Sample>;

fn medians(samples: &[Sample]) -> Medians {
    if samples.is_empty() {
        return None;
    }
    let m = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
    Some(Sample {
        p50: m(|s| s.p50),
        p99: m(|s| s.p99),
        rate: m(|s| s.rate),
        cpu_proxy: m(|s| s.cpu_proxy),
        cpu_backend: m(|s| s.cpu_backend),
        cpu_client: m(|s| s.cpu_client),
    })
}

fn report(plan: &Plan, results: &[(Route, Medians)]) {
    let get = |r: Route| results.iter().find(|(x, _)| *x == r).and_then(|(_, m)| *m);
    println!(
        "| route | p50 | p99 | calls/s, {} in flight | CPU µs/call: proxy | backend | client (bench) |",
        plan.in_flight
    );
    println!("|---|---|---|---|---|---|---|");
    for (route, m) in results {
        match m {
            Some(s) => {
                let proxy = if matches!(route, Route::Direct | Route::StdioDirect) {
                    "–".to_owned()
                } else {
                    format!("{:.1}", s.cpu_proxy)
                };
                println!(
                    "| {} | {:.1} µs | {:.1} µs | {:.0} | {proxy} | {:.1} | {:.1} |",
                    route.label(),
                    s.p50,
                    s.p99,
                    s.rate,
                    s.cpu_backend,
                    s.cpu_client
                );
            }
            None => println!("| {} | – | – | – | – | – | – |", route.label()),
        }
    }
    println!();
    println!("| figure | value | target | verdict |");
    println!("|---|---|---|---|");
    let row = |name: &str, value: Option<f64>, target: &str, pass: Option<fn(f64) -> bool>| {
        let (v, verdict) = match value {
            Some(v) if v.is_finite() => (
                format!("{v:.2}×"),
                match pass {
                    Some(p) if p(v) => "PASS",
                    Some(_) => "MISS",
                    None => "",
                },
            ),
            _ => (
                "–".to_owned(),
                if pass.is_some() { "not measured" } else { "" },
            ),
        };
        println!("| {name} | {v} | {target} | {verdict} |");
    };
    let ratio = |a: Route, b: Route, f: fn(&Sample) -> f64| -> Option<f64> {
        Some(f(&get(a)?) / f(&get(b)?))
    };
    let nginx_proxy_cpu = |s: &Sample| s.cpu_proxy;
    row(
        "gateway → HTTP backend: p50 / nginx's",
        ratio(Route::SbHttp, Route::Nginx, |s| s.p50),
        "≤ 1.3×",
        Some(|v| v <= 1.3),
    );
    row(
        "gateway → HTTP backend: calls/s / nginx's",
        ratio(Route::SbHttp, Route::Nginx, |s| s.rate),
        "≥ 0.8×",
        Some(|v| v >= 0.8),
    );
    row(
        "gateway → HTTP backend: proxy CPU per call / nginx's",
        ratio(Route::SbHttp, Route::Nginx, nginx_proxy_cpu),
        "≤ 1.5×",
        Some(|v| v <= 1.5),
    );
    for (route, what) in [
        (Route::SbHttp1, "gateway `--threads 1`"),
        (Route::SbHttpBefore, "gateway before"),
    ] {
        row(
            &format!("{what} → HTTP backend: p50 / nginx's"),
            ratio(route, Route::Nginx, |s| s.p50),
            "≤ 1.3×",
            Some(|v| v <= 1.3),
        );
        row(
            &format!("{what} → HTTP backend: calls/s / nginx's"),
            ratio(route, Route::Nginx, |s| s.rate),
            "≥ 0.8×",
            Some(|v| v >= 0.8),
        );
        row(
            &format!("{what} → HTTP backend: proxy CPU per call / nginx's"),
            ratio(route, Route::Nginx, nginx_proxy_cpu),
            "≤ 1.5×",
            Some(|v| v <= 1.5),
        );
    }
    row(
        "gateway → stdio backend: p50 / nginx's (→ HTTP backend)",
        ratio(Route::SbStdio, Route::Nginx, |s| s.p50),
        "",
        None,
    );
    row(
        "gateway → stdio backend: calls/s / nginx's",
        ratio(Route::SbStdio, Route::Nginx, |s| s.rate),
        "",
        None,
    );
    row(
        "nginx: p50 / direct's",
        ratio(Route::Nginx, Route::Direct, |s| s.p50),
        "",
        None,
    );
    row(
        "stdio→HTTP: switchboard's calls/s / supergateway's",
        ratio(Route::SbStdio, Route::Supergateway, |s| s.rate),
        "≥ 5×",
        Some(|v| v >= 5.0),
    );
    row(
        "stdio→HTTP: switchboard's calls/s / mcp-proxy's",
        ratio(Route::SbStdio, Route::McpProxy, |s| s.rate),
        "≥ 5×",
        Some(|v| v >= 5.0),
    );
    row(
        "stdio→HTTP: supergateway's p50 / switchboard's",
        ratio(Route::Supergateway, Route::SbStdio, |s| s.p50),
        "",
        None,
    );
    row(
        "stdio→HTTP: mcp-proxy's p50 / switchboard's",
        ratio(Route::McpProxy, Route::SbStdio, |s| s.p50),
        "",
        None,
    );
    row(
        "HTTP→stdio: switchboard's calls/s / mcp-remote's",
        ratio(Route::SbBridge, Route::McpRemote, |s| s.rate),
        "≥ 10×",
        Some(|v| v >= 10.0),
    );
    row(
        "HTTP→stdio: mcp-remote's p50 / switchboard's",
        ratio(Route::McpRemote, Route::SbBridge, |s| s.p50),
        "",
        None,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--fast-server") {
        fast_server::main(&args[1..]);
    }
    let plan = plan();
    let wanted = |r: Route| match &plan.only {
        Some(ids) => ids.iter().any(|id| id == r.id()),
        None => true,
    };
    let load_start = loadavg();
    let (backend_url, backend) =
        routes::start_http_backend().expect("the fast HTTP backend starts");
    let tools = Tools::find(&plan, &wanted);
    let mut routes: Vec<Route> = Vec::new();
    for route in ROUTES.into_iter().filter(|r| wanted(*r)) {
        match tools.missing(route) {
            Some(why) => eprintln!("gateway bench: skipped {}: {why}", route.id()),
            None => routes.push(route),
        }
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); routes.len()];
    let mut errors = 0;
    let started = Instant::now();
    for round in 1..=plan.rounds {
        for (i, route) in routes.iter().enumerate() {
            let outcome = runtime.block_on(async {
                let live = start(*route, &tools, &backend_url).await?;
                let limit = plan.phase_limit * 4 + Duration::from_secs(60);
                let measured =
                    match tokio::time::timeout(limit, measure(*route, &live, &plan, backend.pid()))
                        .await
                    {
                        Ok(m) => m,
                        Err(_) => Err(format!("timeout after {} s", limit.as_secs())),
                    };
                live.close().await;
                measured
            });
            match outcome {
                Ok(s) => {
                    eprintln!(
                        "gateway bench: round {round}/{} {}: p50 {:.1} µs, p99 {:.1} µs, {:.0} calls/s, CPU/call proxy {:.1} µs backend {:.1} µs client {:.1} µs",
                        plan.rounds,
                        route.id(),
                        s.p50,
                        s.p99,
                        s.rate,
                        s.cpu_proxy,
                        s.cpu_backend,
                        s.cpu_client
                    );
                    samples[i].push(s);
                }
                Err(e) => {
                    errors += 1;
                    eprintln!(
                        "gateway bench: round {round}/{} {}: FAILED: {e}",
                        plan.rounds,
                        route.id()
                    );
                }
            }
        }
    }
    drop(backend);
    let results: Vec<(Route, Medians)> = ROUTES
        .into_iter()
        .filter(|r| wanted(*r))
        .map(|r| {
            let m = routes
                .iter()
                .position(|x| *x == r)
                .and_then(|i| medians(&samples[i]));
            (r, m)
        })
        .collect();
    println!(
        "### The gateway against nginx and the bridges ({} round(s), medians; {} sequential calls after {} warm-up, {} calls with {} in flight, each phase at most {} s; {:.0} s; load {} at the start, {} at the end)",
        plan.rounds,
        plan.calls,
        plan.warmup,
        plan.concurrent,
        plan.in_flight,
        plan.phase_limit.as_secs(),
        started.elapsed().as_secs_f64(),
        load_start,
        loadavg()
    );
    println!();
    report(&plan, &results);
    if errors > 0 && !plan.bench {
        eprintln!("gateway bench (smoke run): {errors} route(s) failed");
        std::process::exit(1);
    }
}
