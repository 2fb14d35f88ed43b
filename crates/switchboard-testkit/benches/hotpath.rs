//! (Over a thousand lines: the plan, the child protocol and every table are
//! one harness, read together; the clients that stand alone are in
//! `hotpath/`.)
//!
//! Hot-path benchmark: switchboard against hand-written clients (the floors)
//! and the official rmcp client, each against its own freshly started
//! server, over stdio (NDJSON pipes) and over Streamable HTTP.
//!
//! ```text
//! cargo bench -p switchboard-testkit --bench hotpath              # full run, 5 rounds
//! cargo bench -p switchboard-testkit --bench hotpath -- --quick   # short run, 1 round
//! cargo bench -p switchboard-testkit --bench hotpath -- --only raw,sb-modern --rounds 3
//! cargo bench -p switchboard-testkit --bench hotpath -- --transport http
//! cargo bench -p switchboard-testkit --bench hotpath -- --pin 1   # issue 35's run: one CPU
//! ```
//!
//! Options: `--quick`, `--rounds N`, `--transport stdio|http|all` (default
//! all), `--only CLIENTS` (fast-block, fast-raw, fast-sb, fast-rmcp,
//! fast-block-http, fast-raw-http, fast-sb-http, fast-rmcp-http, raw, rmcp,
//! sb-modern, sb-legacy, raw-http, rmcp-http, sb-http-modern,
//! sb-http-legacy), `--timeout SECS` (per metric, default 30), `--memory` /
//! `--no-memory` / `--memory-only` (the memory figures; on by default without
//! `--only`), `--pin CPU` (or `HOTPATH_PIN=CPU`: every child process — each
//! client, each memory figure — pins itself to that CPU with
//! `sched_setaffinity` before it starts a thread or a process, so its runtime
//! threads and the servers it spawns share that one CPU; the parent, which
//! only waits, is not pinned. A pinned child's `available_parallelism` is 1,
//! so tokio's default runtime there has one worker thread).
//!
//! Two servers, two tables each (stdio, HTTP):
//! - the fast server (`hotpath/fast_server.rs`, this binary run as
//!   `--fast-server stdio|http`): SDK-less, answers in a few µs, so the
//!   `fast-*` columns measure the clients. It has two floors, both
//!   hand-written:
//!   - the **blocking floor** (`fast-block`, `fast-block-http`;
//!     `hotpath/blocking.rs`): blocking `std::io` on ONE thread, no async
//!     runtime in its process — an NDJSON pipe (`BufReader` over the child's
//!     stdout; 64 in flight pipelined: 64 requests in one `write_all`, then
//!     as many new ones in one `write_all` as answers were read from one
//!     read's worth of lines), and HTTP/1.1 keep-alive over
//!     `std::net::TcpStream` (64 in flight: 64 connections, one request each,
//!     driven by `epoll` from the one thread). Issue 35's targets are judged
//!     against it;
//!   - the **async floor** (`fast-raw`, `fast-raw-http`): the same clients on
//!     tokio — the raw NDJSON pipe client (a reader task, a pending map) and
//!     an HTTP/1.1 keep-alive client over tokio `TcpStream`s
//!     (`hotpath/raw_tcp.rs`). Issue 18's targets are judged against it.
//!
//!   switchboard runs with default settings (auto era mode), rmcp with its
//!   best configuration; their cells show both ratios ("× async",
//!   "× blocking"), the async floor's cells their ratio to the blocking
//!   floor;
//! - the realistic server, `switchboard-testserver` (run as
//!   `switchboard-testkit-server`, which adds HTTP: `--http 127.0.0.1:0`),
//!   the first benchmark, against its raw clients (below).
//!
//! Over HTTP against the realistic server, raw is a minimal session-era
//! client on one pooled `reqwest::Client` (JSON-RPC over `POST /mcp`, the
//! `Mcp-Session-Id` and `MCP-Protocol-Version` headers), rmcp is its
//! Streamable HTTP client with its defaults
//! (`StreamableHttpClientTransport::from_uri`), and switchboard is
//! `Client::builder().connect(HttpConfig::new(url))`. Each child starts its
//! own server; HTTP cold connect starts a fresh server per sample (untimed)
//! and times client connect → first `tools/list` result.
//!
//! Each client runs in its own child process (this binary re-executed with
//! `HOTPATH_CHILD=<client>`), so its runtime is isolated and its peak RSS
//! (`VmHWM` from `/proc/self/status`) and CPU time (`/proc/self/task/*/schedstat`)
//! are its own. The child prints one `HOTPATH-RESULT {json}` line; the parent
//! runs the clients interleaved for several rounds and reports the median of
//! the rounds (wake-up latency on a small shared machine is bimodal from one
//! process to the next, so one round can mislead).
//!
//! Every child but the blocking floors' uses a default tokio multi-thread
//! runtime and runs the workload in a spawned task (`HOTPATH_BLOCK_ON=1` runs
//! it on the `block_on` thread instead; `HOTPATH_CURRENT_THREAD=1`, on a
//! current-thread runtime). To profile one client alone, run the
//! bench executable directly, e.g. `HOTPATH_CHILD=sb-legacy hotpath-… --quick
//! --skip seq_p50_us,throughput,cold_ms` under `perf record`
//! (`HOTPATH_COLD_REPS=N`, `HOTPATH_SEQUENTIAL_CALLS=N` and
//! `HOTPATH_THROUGHPUT_CALLS=N` size one phase, to profile it;
//! `HOTPATH_COLD_ONE_SERVER=1` makes every HTTP cold connect reuse one warm
//! server, so the profile is the client's).

#[path = "hotpath/blocking.rs"]
mod blocking;
#[path = "hotpath/fast_server.rs"]
mod fast_server;
#[path = "hotpath/raw_tcp.rs"]
mod raw_tcp;

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Mutex, oneshot};

const SERVER: &str = env!("CARGO_BIN_EXE_switchboard-testkit-server");
const CHILD_ENV: &str = "HOTPATH_CHILD";
/// The CPU that every client process and the servers it starts run on
/// (`--pin CPU`; set by the parent on each child it starts).
const PIN_ENV: &str = "HOTPATH_PIN";
/// Set (inherited by every child): the async clients run on a tokio
/// current-thread runtime instead of the default multi-thread one.
const CURRENT_THREAD_ENV: &str = "HOTPATH_CURRENT_THREAD";
/// Set: HTTP cold connects reuse one warm server (see `measure_cold`).
const COLD_ONE_SERVER_ENV: &str = "HOTPATH_COLD_ONE_SERVER";
const RESULT_PREFIX: &str = "HOTPATH-RESULT ";
/// Key of the negotiated protocol in a child's result (not a metric).
const PROTOCOL_KEY: &str = "protocol";
const IN_FLIGHT: usize = 64;
const MIB: usize = 1 << 20;
const ECHO_TEXT: &str = "hello, switchboard";

/// The clients, in table order (the fast server's stdio and HTTP, then the
/// test server's stdio and HTTP).
const CLIENTS: [ClientKind; 16] = [
    ClientKind::FastBlock,
    ClientKind::FastRaw,
    ClientKind::FastSb,
    ClientKind::FastRmcp,
    ClientKind::FastBlockHttp,
    ClientKind::FastRawHttp,
    ClientKind::FastSbHttp,
    ClientKind::FastRmcpHttp,
    ClientKind::Raw,
    ClientKind::Rmcp,
    ClientKind::SbModern,
    ClientKind::SbLegacy,
    ClientKind::RawHttp,
    ClientKind::RmcpHttp,
    ClientKind::SbHttpModern,
    ClientKind::SbHttpLegacy,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "Streamable HTTP",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientKind {
    Raw,
    Rmcp,
    SbModern,
    SbLegacy,
    RawHttp,
    RmcpHttp,
    SbHttpModern,
    SbHttpLegacy,
    /// The fast server (`fast_server.rs`): the blocking floor, an NDJSON
    /// pipe on blocking `std::io`, one thread, no runtime (`blocking.rs`).
    FastBlock,
    /// The async floor: the raw NDJSON pipe client on tokio.
    FastRaw,
    /// switchboard with default settings (auto era mode), fast server, stdio.
    FastSb,
    /// rmcp, fast server, stdio.
    FastRmcp,
    /// The blocking floor over HTTP: HTTP/1.1 keep-alive over
    /// `std::net::TcpStream`, one thread (`blocking.rs`), fast server.
    FastBlockHttp,
    /// The async floor over HTTP: the hand-written HTTP/1.1 client over
    /// tokio `TcpStream`s (`raw_tcp.rs`), fast server.
    FastRawHttp,
    /// switchboard with default settings (auto era mode), fast server, HTTP.
    FastSbHttp,
    /// rmcp's best configuration over HTTP: a pooled `reqwest::Client`, 64
    /// concurrent requests.
    FastRmcpHttp,
}

impl ClientKind {
    fn id(self) -> &'static str {
        match self {
            ClientKind::Raw => "raw",
            ClientKind::Rmcp => "rmcp",
            ClientKind::SbModern => "sb-modern",
            ClientKind::SbLegacy => "sb-legacy",
            ClientKind::RawHttp => "raw-http",
            ClientKind::RmcpHttp => "rmcp-http",
            ClientKind::SbHttpModern => "sb-http-modern",
            ClientKind::SbHttpLegacy => "sb-http-legacy",
            ClientKind::FastBlock => "fast-block",
            ClientKind::FastBlockHttp => "fast-block-http",
            ClientKind::FastRaw => "fast-raw",
            ClientKind::FastSb => "fast-sb",
            ClientKind::FastRmcp => "fast-rmcp",
            ClientKind::FastRawHttp => "fast-raw-http",
            ClientKind::FastSbHttp => "fast-sb-http",
            ClientKind::FastRmcpHttp => "fast-rmcp-http",
        }
    }

    /// The column title (each transport has its own table).
    fn title(self) -> &'static str {
        match self {
            ClientKind::Raw | ClientKind::RawHttp => "raw",
            ClientKind::Rmcp | ClientKind::RmcpHttp => "rmcp 3.9.0",
            ClientKind::SbModern | ClientKind::SbHttpModern => "switchboard (modern)",
            ClientKind::SbLegacy | ClientKind::SbHttpLegacy => "switchboard (legacy)",
            ClientKind::FastBlock => "blocking floor (std NDJSON pipe)",
            ClientKind::FastBlockHttp => "blocking floor (HTTP/1.1 on std TcpStream)",
            ClientKind::FastRaw => "async floor (tokio NDJSON pipe)",
            ClientKind::FastRawHttp => "async floor (HTTP/1.1 on tokio TcpStream)",
            ClientKind::FastSb | ClientKind::FastSbHttp => "switchboard (auto)",
            ClientKind::FastRmcp => "rmcp 3.9.0",
            ClientKind::FastRmcpHttp => "rmcp 3.9.0 (pooled, 64 concurrent)",
        }
    }

    /// The title with the transport, for log lines.
    fn long_title(self) -> String {
        let fast = if self.fast() { "fast server, " } else { "" };
        match self.transport() {
            Transport::Stdio => format!("{} ({fast}stdio)", self.title()),
            Transport::Http => format!("{} ({fast}http)", self.title()),
        }
    }

    fn server_era(self) -> &'static str {
        match self {
            ClientKind::SbModern | ClientKind::SbHttpModern => "dual",
            _ => "legacy",
        }
    }

    /// Against the fast server (else the realistic test server).
    fn fast(self) -> bool {
        matches!(
            self,
            ClientKind::FastBlock
                | ClientKind::FastBlockHttp
                | ClientKind::FastRaw
                | ClientKind::FastSb
                | ClientKind::FastRmcp
                | ClientKind::FastRawHttp
                | ClientKind::FastSbHttp
                | ClientKind::FastRmcpHttp
        )
    }

    /// The stdio server command: program and arguments.
    fn stdio_server(self) -> (String, Vec<String>) {
        if self.fast() {
            (
                fast_server_exe(),
                vec!["--fast-server".into(), "stdio".into()],
            )
        } else {
            (
                SERVER.to_owned(),
                vec!["--era".into(), self.server_era().into()],
            )
        }
    }

    /// The HTTP server command: program and arguments.
    fn http_server(self) -> (String, Vec<String>) {
        if self.fast() {
            (
                fast_server_exe(),
                vec!["--fast-server".into(), "http".into()],
            )
        } else {
            (
                SERVER.to_owned(),
                vec![
                    "--http".into(),
                    "127.0.0.1:0".into(),
                    "--era".into(),
                    self.server_era().into(),
                ],
            )
        }
    }

    fn transport(self) -> Transport {
        match self {
            ClientKind::Raw
            | ClientKind::Rmcp
            | ClientKind::SbModern
            | ClientKind::SbLegacy
            | ClientKind::FastBlock
            | ClientKind::FastRaw
            | ClientKind::FastSb
            | ClientKind::FastRmcp => Transport::Stdio,
            _ => Transport::Http,
        }
    }

    /// The floor this client is compared with (the fast server's: the async
    /// floor; `blocking_floor` is the other).
    fn baseline(self) -> ClientKind {
        match (self.fast(), self.transport()) {
            (false, Transport::Stdio) => ClientKind::Raw,
            (false, Transport::Http) => ClientKind::RawHttp,
            (true, Transport::Stdio) => ClientKind::FastRaw,
            (true, Transport::Http) => ClientKind::FastRawHttp,
        }
    }

    /// The fast server's blocking floor for this client's transport.
    fn blocking_floor(self) -> Option<ClientKind> {
        match (self.fast(), self.transport()) {
            (false, _) => None,
            (true, Transport::Stdio) => Some(ClientKind::FastBlock),
            (true, Transport::Http) => Some(ClientKind::FastBlockHttp),
        }
    }

    /// Runs on blocking `std::io` on one thread, no async runtime.
    fn is_blocking(self) -> bool {
        matches!(self, ClientKind::FastBlock | ClientKind::FastBlockHttp)
    }

    /// The floors it is compared with in its table's cells: (label, floor).
    /// The realistic server's tables keep one unlabelled ratio to raw.
    fn ratio_bases(self) -> Vec<(&'static str, ClientKind)> {
        match self.blocking_floor() {
            None => vec![("", self.baseline())],
            Some(_) if self.is_blocking() => Vec::new(),
            Some(block) if self == self.baseline() => vec![("blocking", block)],
            Some(block) => vec![("async", self.baseline()), ("blocking", block)],
        }
    }

    fn is_switchboard(self) -> bool {
        matches!(
            self,
            ClientKind::SbModern
                | ClientKind::SbLegacy
                | ClientKind::SbHttpModern
                | ClientKind::SbHttpLegacy
                | ClientKind::FastSb
                | ClientKind::FastSbHttp
        )
    }

    fn parse(s: &str) -> Option<ClientKind> {
        CLIENTS.into_iter().find(|c| c.id() == s)
    }
}

/// Run sizes.
#[derive(Clone, Copy, Debug)]
struct Plan {
    warmup: usize,
    sequential: usize,
    throughput: usize,
    /// Throughput stops taking new calls after this long (a client that
    /// opens a TCP connection per request would otherwise take minutes).
    throughput_cap: Duration,
    blob_1m_reps: usize,
    blob_16m_reps: usize,
    cold_reps: usize,
    timeout: Duration,
}

impl Plan {
    fn new(quick: bool, smoke: bool, timeout: Duration) -> Plan {
        let mut plan = Plan::sized(quick, smoke, timeout);
        // For a profile of one phase: enough samples to see it.
        let count = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
        if let Some(reps) = count("HOTPATH_COLD_REPS") {
            plan.cold_reps = reps;
        }
        if let Some(calls) = count("HOTPATH_SEQUENTIAL_CALLS") {
            plan.sequential = calls;
        }
        if let Some(calls) = count("HOTPATH_THROUGHPUT_CALLS") {
            plan.throughput = calls;
        }
        plan
    }

    fn sized(quick: bool, smoke: bool, timeout: Duration) -> Plan {
        if smoke {
            // `cargo test` runs this binary too (an unoptimized build): check
            // that every client and metric works, measure nothing.
            Plan {
                warmup: 5,
                sequential: 20,
                throughput: 256,
                throughput_cap: Duration::from_secs(2),
                blob_1m_reps: 1,
                blob_16m_reps: 1,
                cold_reps: 1,
                timeout,
            }
        } else if quick {
            Plan {
                warmup: 100,
                sequential: 500,
                throughput: 2_000,
                throughput_cap: Duration::from_secs(5),
                blob_1m_reps: 3,
                blob_16m_reps: 1,
                cold_reps: 3,
                timeout,
            }
        } else {
            Plan {
                warmup: 1_000,
                sequential: 5_000,
                throughput: 20_000,
                throughput_cap: Duration::from_secs(10),
                blob_1m_reps: 7,
                blob_16m_reps: 5,
                cold_reps: 11,
                timeout,
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Better {
    Lower,
    Higher,
}

struct MetricDef {
    key: &'static str,
    label: &'static str,
    better: Better,
}

const METRICS: [MetricDef; 10] = [
    MetricDef {
        key: "seq_p50_us",
        label: "sequential echo p50",
        better: Better::Lower,
    },
    MetricDef {
        key: "seq_p99_us",
        label: "sequential echo p99",
        better: Better::Lower,
    },
    MetricDef {
        key: "seq_cpu_us",
        label: "client CPU per call, sequential",
        better: Better::Lower,
    },
    MetricDef {
        key: "throughput",
        label: "throughput, 64 in flight",
        better: Better::Higher,
    },
    MetricDef {
        key: "thr_cpu_us",
        label: "client CPU per call, 64 in flight",
        better: Better::Lower,
    },
    MetricDef {
        key: "blob_1m_ms",
        label: "1 MiB result (median)",
        better: Better::Lower,
    },
    MetricDef {
        key: "blob_16m_ms",
        label: "16 MiB result (median)",
        better: Better::Lower,
    },
    MetricDef {
        key: "cold_ms",
        label: "cold connect (median)",
        better: Better::Lower,
    },
    MetricDef {
        key: "cold_known_ms",
        label: "cold connect, second to the same URL (median)",
        better: Better::Lower,
    },
    MetricDef {
        key: "rss_mib",
        label: "peak RSS (VmHWM)",
        better: Better::Lower,
    },
];

fn format_value(key: &str, v: f64) -> String {
    match key {
        "seq_p50_us" | "seq_p99_us" | "seq_cpu_us" | "thr_cpu_us" => format!("{v:.1} µs"),
        "throughput" => format!("{} /s", group_thousands(v.round() as u64)),
        "blob_1m_ms" | "blob_16m_ms" | "cold_ms" | "cold_known_ms" => format!("{v:.2} ms"),
        "rss_mib" => format!("{v:.1} MiB"),
        _ => format!("{v}"),
    }
}

fn group_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

type Outcome = Result<f64, String>;

fn fail(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Runs `fut` under the per-metric time limit.
async fn limited<T>(
    limit: Duration,
    fut: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(format!("timeout after {} s", limit.as_secs())),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    percentile(&samples, 50.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn vm_hwm_mib() -> Result<f64, String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(fail)?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .ok_or("no VmHWM in /proc/self/status")?;
    let kib: f64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .map_err(fail)?;
    Ok(kib / 1024.0)
}

/// CPU time used so far by every live thread of this process (the client
/// only: the server is another process), from `/proc/self/task/*/schedstat`.
fn cpu_time() -> Duration {
    let mut ns: u64 = 0;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(task.path().join("schedstat")) {
                ns += s
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    Duration::from_nanos(ns)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// This binary: it is also the fast server (`--fast-server`). Looked up
/// once: an async client's `connect` asks for its command inside the timed
/// part (a `readlink` each time), the blocking floors outside it.
fn fast_server_exe() -> String {
    static EXE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        std::env::current_exe()
            .expect("current_exe")
            .to_string_lossy()
            .into_owned()
    })
    .clone()
}

fn echo_args() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("text".into(), Value::String(ECHO_TEXT.into()));
    m
}

fn blob_args(size: usize) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("size".into(), Value::from(size as u64));
    m
}

/// `initialize`'s params as the hand-written floors send them.
fn initialize_params(client: &str) -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": client, "version": "0.0.0"},
    })
}

/// A response's result (`Err` for a JSON-RPC error).
fn into_result(mut msg: Value) -> Result<Value, String> {
    if let Some(err) = msg.get("error") {
        return Err(format!("JSON-RPC error: {err}"));
    }
    Ok(msg
        .get_mut("result")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

/// The length of the first text block of a `tools/call` result.
fn text_len(result: &Value) -> Result<usize, String> {
    result["content"][0]["text"]
        .as_str()
        .map(str::len)
        .ok_or_else(|| format!("unexpected result: {result}"))
}

// ---------------------------------------------------------------------------
// The raw NDJSON pipe client: the floor.
// ---------------------------------------------------------------------------

type Pending = StdMutex<HashMap<u64, oneshot::Sender<Value>>>;

struct RawClient {
    protocol_version: String,
    next_id: AtomicU64,
    pending: Arc<Pending>,
    stdin: Mutex<ChildStdin>,
    child: Mutex<Option<Child>>,
}

impl RawClient {
    async fn connect(server: &str, args: &[String]) -> Result<RawClient, String> {
        let mut child = Command::new(server)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(fail)?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let pending: Arc<Pending> = Arc::default();
        let reader_pending = Arc::clone(&pending);
        tokio::spawn(async move {
            // 64 KiB: the default Linux pipe capacity, so one read per pipe-full.
            let mut lines = BufReader::with_capacity(64 * 1024, stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(mut msg) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let Some(id) = msg.get("id").and_then(Value::as_u64) else {
                    continue; // a notification or a server request: ignored
                };
                if msg.get("method").is_some() {
                    continue;
                }
                let tx = reader_pending.lock().unwrap().remove(&id);
                if let Some(tx) = tx {
                    let _ = tx.send(msg.take());
                }
            }
            // EOF: fail everything still waiting.
            reader_pending.lock().unwrap().clear();
        });
        let mut client = RawClient {
            protocol_version: String::new(),
            next_id: AtomicU64::new(1),
            pending,
            stdin: Mutex::new(stdin),
            child: Mutex::new(Some(child)),
        };
        let init = client
            .request("initialize", initialize_params("hotpath-raw"))
            .await?;
        client.protocol_version = init["protocolVersion"].as_str().unwrap_or("?").to_owned();
        client
            .write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(client)
    }

    async fn write(&self, msg: &Value) -> Result<(), String> {
        let mut buf = serde_json::to_vec(msg).map_err(fail)?;
        buf.push(b'\n');
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(&buf).await.map_err(fail)
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let msg = rx.await.map_err(|_| "connection closed".to_owned())?;
        into_result(msg)
    }

    async fn call_tool(&self, name: &str, args: Map<String, Value>) -> Result<usize, String> {
        let result = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await?;
        text_len(&result)
    }

    async fn close(&self) {
        if let Some(mut child) = self.child.lock().await.take() {
            let _ = child.kill().await;
        }
    }
}

// ---------------------------------------------------------------------------
// HTTP: the test server in `--http` mode, and the raw HTTP client (the floor).
// ---------------------------------------------------------------------------

/// A test server serving HTTP on a free loopback port, killed on drop.
struct HttpServer {
    child: Child,
    /// The Streamable HTTP endpoint, `http://127.0.0.1:PORT/mcp`.
    url: String,
    /// Kept open: the server must not get EPIPE on stdout.
    _stdout: BufReader<tokio::process::ChildStdout>,
}

impl HttpServer {
    async fn start(kind: ClientKind) -> Result<HttpServer, String> {
        let (program, args) = kind.http_server();
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(fail)?;
        let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line).await.map_err(fail)?;
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .ok_or_else(|| format!("unexpected server announcement {line:?}"))?;
        Ok(HttpServer {
            url: format!("{base}/mcp"),
            child,
            _stdout: stdout,
        })
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// One pooled `reqwest` client for every raw HTTP connection in the process
/// (switchboard shares one the same way), built before anything is timed.
fn raw_http_client() -> reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| reqwest::Client::builder().build().expect("reqwest client"))
        .clone()
}

/// Session-era Streamable HTTP, by hand: `initialize` (→ `Mcp-Session-Id`),
/// `notifications/initialized` (→ 202), then one POST per request, answered
/// with `application/json` (or a `text/event-stream`, parsed minimally).
struct RawHttpClient {
    http: reqwest::Client,
    url: String,
    protocol_version: String,
    session: Option<String>,
    next_id: AtomicU64,
}

impl RawHttpClient {
    async fn connect(url: &str) -> Result<RawHttpClient, String> {
        let mut client = RawHttpClient {
            http: raw_http_client(),
            url: url.to_owned(),
            protocol_version: String::new(),
            session: None,
            next_id: AtomicU64::new(1),
        };
        let id = client.next_id.fetch_add(1, Ordering::Relaxed);
        let resp = client
            .post(&json!({
                "jsonrpc": "2.0", "id": id, "method": "initialize",
                "params": initialize_params("hotpath-raw-http"),
            }))
            .await?;
        client.session = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let init = Self::answer(resp, id).await?;
        client.protocol_version = init["protocolVersion"].as_str().unwrap_or("?").to_owned();
        let resp = client
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        if resp.status() != reqwest::StatusCode::ACCEPTED {
            return Err(format!("notifications/initialized: HTTP {}", resp.status()));
        }
        Ok(client)
    }

    async fn post(&self, msg: &Value) -> Result<reqwest::Response, String> {
        let body = serde_json::to_vec(msg).map_err(fail)?;
        let mut req = self
            .http
            .post(&self.url)
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(session) = &self.session {
            req = req
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", &self.protocol_version);
        }
        req.send().await.map_err(fail)
    }

    /// The result of request `id` from its POST's response.
    async fn answer(resp: reqwest::Response, id: u64) -> Result<Value, String> {
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        let sse = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let body = resp.bytes().await.map_err(fail)?;
        parse_answer(sse, &body, id)
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let resp = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        Self::answer(resp, id).await
    }

    async fn call_tool(&self, name: &str, args: Map<String, Value>) -> Result<usize, String> {
        let result = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await?;
        text_len(&result)
    }

    /// Ends the session (`DELETE`), as the spec asks of a client.
    async fn close(&self) {
        if let Some(session) = &self.session {
            let _ = self
                .http
                .delete(&self.url)
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", &self.protocol_version)
                .send()
                .await;
        }
    }
}

/// The result of request `id` from a POST's answer body: JSON, or an event
/// stream (parsed minimally).
pub(crate) fn parse_answer(sse: bool, body: &[u8], id: u64) -> Result<Value, String> {
    let msg: Value = if sse {
        // Events separated by blank lines; the answer is the event whose
        // `data:` is a response with our id.
        let text = std::str::from_utf8(body).map_err(fail)?;
        text.split("\n\n")
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
    into_result(msg)
}

// ---------------------------------------------------------------------------
// The clients behind one interface.
// ---------------------------------------------------------------------------

type RmcpClient = rmcp::service::RunningService<rmcp::RoleClient, ()>;

#[derive(Clone)]
enum Conn {
    Raw(Arc<RawClient>),
    RawHttp(Arc<RawHttpClient>),
    RawTcp(Arc<raw_tcp::RawTcpClient>),
    Rmcp(Arc<RmcpClient>),
    Sb(switchboard::Client),
}

/// Connects a client; `url` is the HTTP server's endpoint (HTTP clients
/// only: stdio clients spawn their server).
async fn connect(kind: ClientKind, url: Option<&str>) -> Result<Conn, String> {
    let url = || url.ok_or_else(|| format!("{}: no server URL", kind.id()));
    let (program, args) = kind.stdio_server();
    match kind {
        ClientKind::FastBlock | ClientKind::FastBlockHttp => Err(format!(
            "{}: a blocking floor, run by blocking::run_client",
            kind.id()
        )),
        ClientKind::Raw | ClientKind::FastRaw => Ok(Conn::Raw(Arc::new(
            RawClient::connect(&program, &args).await?,
        ))),
        ClientKind::Rmcp | ClientKind::FastRmcp => {
            use rmcp::ServiceExt;
            let mut cmd = Command::new(program);
            cmd.args(args);
            let (transport, _stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(Stdio::null())
                .spawn()
                .map_err(fail)?;
            let client = ().serve(transport).await.map_err(fail)?;
            Ok(Conn::Rmcp(Arc::new(client)))
        }
        ClientKind::SbModern | ClientKind::SbLegacy | ClientKind::FastSb => {
            let mode = if kind == ClientKind::SbLegacy {
                switchboard::EraMode::Legacy
            } else {
                switchboard::EraMode::Auto
            };
            let config = switchboard::transport::stdio::StdioConfig::new(program).args(args);
            let client = switchboard::Client::builder()
                .era_mode(mode)
                .connect(config)
                .await
                .map_err(fail)?;
            Ok(Conn::Sb(client))
        }
        ClientKind::RawHttp => Ok(Conn::RawHttp(Arc::new(
            RawHttpClient::connect(url()?).await?,
        ))),
        ClientKind::RmcpHttp => {
            use rmcp::ServiceExt;
            // The defaults, as a user gets them.
            let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url()?);
            let client = ().serve(transport).await.map_err(fail)?;
            Ok(Conn::Rmcp(Arc::new(client)))
        }
        ClientKind::FastRawHttp => Ok(Conn::RawTcp(Arc::new(
            raw_tcp::RawTcpClient::connect(url()?).await?,
        ))),
        ClientKind::FastRmcpHttp => {
            use rmcp::ServiceExt;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            // Its best configuration: a pooled client (keep-alive, unlike
            // `from_uri`'s) built once per process, and 64 POSTs at once.
            let config =
                StreamableHttpClientTransportConfig::with_uri(url()?).max_concurrent_requests(64);
            let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                raw_http_client(),
                config,
            );
            let client = ().serve(transport).await.map_err(fail)?;
            Ok(Conn::Rmcp(Arc::new(client)))
        }
        ClientKind::SbHttpModern | ClientKind::SbHttpLegacy | ClientKind::FastSbHttp => {
            let mode = if kind == ClientKind::SbHttpLegacy {
                switchboard::EraMode::Legacy
            } else {
                switchboard::EraMode::Auto
            };
            let config = switchboard::transport::http::HttpConfig::new(url()?);
            let client = switchboard::Client::builder()
                .era_mode(mode)
                .connect(config)
                .await
                .map_err(fail)?;
            Ok(Conn::Sb(client))
        }
    }
}

impl Conn {
    /// Calls a tool and returns the length of the first text block.
    async fn call_tool(
        &self,
        name: &'static str,
        args: Map<String, Value>,
    ) -> Result<usize, String> {
        match self {
            Conn::Raw(c) => c.call_tool(name, args).await,
            Conn::RawHttp(c) => c.call_tool(name, args).await,
            Conn::RawTcp(c) => c.call_tool(name, args).await,
            Conn::Rmcp(c) => {
                let params = rmcp::model::CallToolRequestParams::new(name).with_arguments(args);
                let result = c.call_tool(params).await.map_err(fail)?;
                result
                    .content
                    .first()
                    .and_then(|b| b.as_text())
                    .map(|t| t.text.len())
                    .ok_or_else(|| "result has no text block".to_owned())
            }
            Conn::Sb(c) => {
                let result = c.call_tool(name, Some(args)).await.map_err(fail)?;
                sb_text_len(&result)
            }
        }
    }

    async fn echo(&self) -> Result<(), String> {
        let n = self.call_tool("echo", echo_args()).await?;
        if n == ECHO_TEXT.len() {
            Ok(())
        } else {
            Err(format!("echo returned {n} bytes"))
        }
    }

    async fn blob(&self, size: usize) -> Result<(), String> {
        let n = self.call_tool("blob", blob_args(size)).await?;
        if n == size {
            Ok(())
        } else {
            Err(format!("blob returned {n} bytes, expected {size}"))
        }
    }

    async fn list_tools(&self) -> Result<usize, String> {
        match self {
            Conn::Raw(c) => {
                let r = c.request("tools/list", json!({})).await?;
                r["tools"]
                    .as_array()
                    .map(Vec::len)
                    .ok_or_else(|| format!("unexpected tools/list result: {r}"))
            }
            Conn::RawHttp(c) => {
                let r = c.request("tools/list", json!({})).await?;
                r["tools"]
                    .as_array()
                    .map(Vec::len)
                    .ok_or_else(|| format!("unexpected tools/list result: {r}"))
            }
            Conn::RawTcp(c) => {
                let r = c.request("tools/list", json!({})).await?;
                r["tools"]
                    .as_array()
                    .map(Vec::len)
                    .ok_or_else(|| format!("unexpected tools/list result: {r}"))
            }
            Conn::Rmcp(c) => Ok(c.list_tools(None).await.map_err(fail)?.tools.len()),
            Conn::Sb(c) => Ok(c.list_tools().await.map_err(fail)?.len()),
        }
    }

    /// The negotiated protocol version and era, for the report.
    fn protocol(&self) -> String {
        match self {
            Conn::Raw(c) => format!("{} (initialize)", c.protocol_version),
            Conn::RawHttp(c) => format!("{} (initialize)", c.protocol_version),
            Conn::RawTcp(c) => format!("{} (initialize)", c.protocol_version),
            Conn::Rmcp(c) => match c.peer().peer_info() {
                Some(info) => format!("{} (initialize)", info.protocol_version),
                None => "?".into(),
            },
            Conn::Sb(c) => format!("{} ({} era)", c.protocol_version(), c.era()),
        }
    }

    async fn close(self) {
        match self {
            Conn::Raw(c) => c.close().await,
            Conn::RawHttp(c) => c.close().await,
            Conn::RawTcp(c) => c.close().await,
            Conn::Rmcp(c) => {
                if let Ok(c) = Arc::try_unwrap(c) {
                    let _ = c.cancel().await;
                }
            }
            Conn::Sb(c) => c.close().await,
        }
    }
}

fn sb_text_len(result: &switchboard::types::CallToolResult) -> Result<usize, String> {
    match result.content.first() {
        Some(switchboard::types::ContentBlock::Text(t)) => Ok(t.text.len()),
        other => Err(format!("result has no text block: {other:?}")),
    }
}

// ---------------------------------------------------------------------------
// Measurements (child process)
// ---------------------------------------------------------------------------

/// Returns (p50 µs, p99 µs, client CPU µs per call).
async fn measure_sequential(conn: &Conn, plan: &Plan) -> Result<(f64, f64, f64), String> {
    for _ in 0..plan.warmup {
        conn.echo().await?;
    }
    let mut samples = Vec::with_capacity(plan.sequential);
    let cpu = cpu_time();
    for _ in 0..plan.sequential {
        let t = Instant::now();
        conn.echo().await?;
        samples.push(t.elapsed());
    }
    Ok(sequential_stats(samples, cpu_time().saturating_sub(cpu)))
}

/// (p50 µs, p99 µs, client CPU µs per call) of sequential call times.
fn sequential_stats(mut samples: Vec<Duration>, cpu: Duration) -> (f64, f64, f64) {
    samples.sort();
    (
        us(percentile(&samples, 50.0)),
        us(percentile(&samples, 99.0)),
        us(cpu) / samples.len().max(1) as f64,
    )
}

fn record_sequential(
    out: &mut BTreeMap<&'static str, Outcome>,
    r: Result<(f64, f64, f64), String>,
) {
    match r {
        Ok((p50, p99, cpu)) => {
            out.insert("seq_p50_us", Ok(p50));
            out.insert("seq_p99_us", Ok(p99));
            out.insert("seq_cpu_us", Ok(cpu));
        }
        Err(e) => {
            out.insert("seq_p50_us", Err(e.clone()));
            out.insert("seq_p99_us", Err(e.clone()));
            out.insert("seq_cpu_us", Err(e));
        }
    }
}

fn record_throughput(out: &mut BTreeMap<&'static str, Outcome>, r: Result<(f64, f64), String>) {
    match r {
        Ok((rate, cpu)) => {
            out.insert("throughput", Ok(rate));
            out.insert("thr_cpu_us", Ok(cpu));
        }
        Err(e) => {
            out.insert("throughput", Err(e.clone()));
            out.insert("thr_cpu_us", Err(e));
        }
    }
}

/// Every metric of a connection that was not made (cold connect and peak
/// RSS are measured apart).
fn record_connect_failure(out: &mut BTreeMap<&'static str, Outcome>, e: &str) {
    let e = format!("connect: {e}");
    for m in &METRICS {
        if !matches!(m.key, "cold_ms" | "cold_known_ms" | "rss_mib") {
            out.insert(m.key, Err(e.clone()));
        }
    }
}

/// Returns (calls/s, client CPU µs per call). Stops taking new calls after
/// `plan.throughput` calls or `plan.throughput_cap`, whichever comes first.
async fn measure_throughput(conn: &Conn, plan: &Plan) -> Result<(f64, f64), String> {
    let total = plan.throughput;
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    let cpu = cpu_time();
    let start = Instant::now();
    let deadline = start + plan.throughput_cap;
    for _ in 0..IN_FLIGHT {
        let conn = conn.clone();
        let next = Arc::clone(&next);
        let done = Arc::clone(&done);
        tasks.spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total && Instant::now() < deadline {
                conn.echo().await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), String>(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.map_err(fail)??;
    }
    let elapsed = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu);
    let done = done.load(Ordering::Relaxed).max(1);
    Ok((done as f64 / elapsed.as_secs_f64(), us(cpu) / done as f64))
}

async fn measure_blob(conn: &Conn, size: usize, reps: usize, limit: Duration) -> Outcome {
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        limited(limit, conn.blob(size)).await?;
        samples.push(t.elapsed());
    }
    Ok(ms(median(samples)))
}

/// stdio: spawn → handshake → first `tools/list` result. HTTP: a fresh
/// server per sample (started untimed, so no pooled connection to it
/// exists), then client connect → handshake → first `tools/list` result.
/// Connect → first `tools/list` result. `second`: over HTTP, after one
/// untimed connection to the same URL, so a client that remembers what it
/// learnt about a server (switchboard: the era, as the 2026-07-28 revision
/// says a client SHOULD cache per origin) can use it.
async fn measure_cold(kind: ClientKind, plan: &Plan, second: bool) -> Outcome {
    let mut samples = Vec::with_capacity(plan.cold_reps);
    // `HOTPATH_COLD_ONE_SERVER=1`: every sample against one server, warmed
    // by one untimed connection (for a profile of the client's own work).
    let one_server = std::env::var_os(COLD_ONE_SERVER_ENV).is_some();
    let mut shared = match kind.transport() {
        Transport::Http if one_server => {
            let server = HttpServer::start(kind).await?;
            let conn = connect(kind, Some(&server.url)).await?;
            conn.list_tools().await?;
            conn.close().await;
            Some(server)
        }
        _ => None,
    };
    for _ in 0..plan.cold_reps {
        let server = match kind.transport() {
            Transport::Stdio => None,
            Transport::Http => match shared.take() {
                Some(server) => Some(server),
                None => Some(HttpServer::start(kind).await?),
            },
        };
        if second {
            let conn = connect(kind, server.as_ref().map(|s| s.url.as_str())).await?;
            conn.list_tools().await?;
            conn.close().await;
        }
        let t = Instant::now();
        let conn = connect(kind, server.as_ref().map(|s| s.url.as_str())).await?;
        let n = conn.list_tools().await?;
        let elapsed = t.elapsed();
        conn.close().await;
        if one_server {
            shared = server;
        } else if let Some(server) = server {
            server.stop().await;
        }
        if n == 0 {
            return Err("tools/list returned no tools".into());
        }
        samples.push(elapsed);
    }
    Ok(ms(median(samples)))
}

async fn run_client(
    kind: ClientKind,
    plan: Plan,
    skip: Vec<String>,
) -> (BTreeMap<&'static str, Outcome>, String) {
    let mut out: BTreeMap<&'static str, Outcome> = BTreeMap::new();
    let mut protocol = String::from("?");
    let wanted = |key: &str| !skip.iter().any(|s| s == key);
    let limit = plan.timeout;
    if matches!(kind, ClientKind::RawHttp | ClientKind::FastRmcpHttp) {
        drop(raw_http_client()); // built once, untimed (as switchboard's shared client)
    }
    let server = match kind.transport() {
        Transport::Stdio => Ok(None),
        Transport::Http => limited(limit, HttpServer::start(kind)).await.map(Some),
    };
    let connected = match &server {
        Ok(server) => {
            let url = server.as_ref().map(|s| s.url.as_str());
            limited(limit, connect(kind, url)).await
        }
        Err(e) => Err(format!("server: {e}")),
    };
    match connected {
        Ok(conn) => {
            protocol = conn.protocol();
            let sequential = if wanted("seq_p50_us") {
                limited(limit, measure_sequential(&conn, &plan)).await
            } else {
                Err("skipped".into())
            };
            record_sequential(&mut out, sequential);
            let throughput = if wanted("throughput") {
                limited(limit, measure_throughput(&conn, &plan)).await
            } else {
                Err("skipped".into())
            };
            record_throughput(&mut out, throughput);
            if wanted("blob_1m_ms") {
                out.insert(
                    "blob_1m_ms",
                    measure_blob(&conn, MIB, plan.blob_1m_reps, limit).await,
                );
            }
            // Last on this connection: a client that drops the line hangs here.
            if wanted("blob_16m_ms") {
                out.insert(
                    "blob_16m_ms",
                    measure_blob(&conn, 16 * MIB, plan.blob_16m_reps, limit).await,
                );
            }
            let _ = tokio::time::timeout(Duration::from_secs(5), conn.close()).await;
        }
        Err(e) => record_connect_failure(&mut out, &e),
    }
    if let Ok(Some(server)) = server {
        server.stop().await;
    }
    if wanted("cold_ms") {
        out.insert(
            "cold_ms",
            limited(limit * 2, measure_cold(kind, &plan, false)).await,
        );
    }
    if wanted("cold_known_ms") && kind.transport() == Transport::Http {
        out.insert(
            "cold_known_ms",
            limited(limit * 2, measure_cold(kind, &plan, true)).await,
        );
    }
    out.insert("rss_mib", vm_hwm_mib());
    (out, protocol)
}

fn child_main(kind: ClientKind, plan: Plan, skip: Vec<String>) {
    if kind.is_blocking() {
        // No runtime in this process: one thread does all the work while
        // `main` waits. A spawned one, not `main`, so that its allocations
        // come from a glibc thread arena, as every async client's workload's
        // do: `main`'s brk heap trims and refaults a large result's pages
        // each call (measured: the HTTP 16 MiB result 2.2× slower), an
        // allocator effect, not the I/O this floor is about.
        let worker = std::thread::Builder::new()
            .name("blocking-floor".into())
            .spawn(move || blocking::run_client(kind, plan, &skip))
            .expect("spawn the blocking client's thread");
        let (results, protocol) = worker.join().expect("the blocking client panicked");
        print_child_result(results, protocol);
        return;
    }
    // `HOTPATH_CURRENT_THREAD=1`: the application's runtime is one thread
    // (issue 35 asks for both).
    let mut builder = if std::env::var_os(CURRENT_THREAD_ENV).is_some() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = builder.enable_all().build().expect("tokio runtime");
    // The workload runs in a spawned task, on the worker threads, as request
    // handling does in an application (not on the `block_on` thread).
    let (results, protocol) = if std::env::var_os("HOTPATH_BLOCK_ON").is_some() {
        runtime.block_on(run_client(kind, plan, skip))
    } else {
        let task = runtime.spawn(run_client(kind, plan, skip));
        runtime.block_on(task).expect("the benchmark task panicked")
    };
    print_child_result(results, protocol);
    // Do not wait for lingering server processes or blocking tasks.
    runtime.shutdown_timeout(Duration::from_secs(2));
}

/// The child's one `HOTPATH-RESULT {json}` line.
fn print_child_result(results: BTreeMap<&'static str, Outcome>, protocol: String) {
    let mut json: Map<String, Value> = results
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                Ok(x) => json!({ "ok": x }),
                Err(e) => json!({ "err": e }),
            };
            (k.to_owned(), v)
        })
        .collect();
    json.insert(PROTOCOL_KEY.into(), Value::String(protocol));
    println!("{RESULT_PREFIX}{}", Value::Object(json));
}

// ---------------------------------------------------------------------------
// Parent: run each client in its own process, then report.
// ---------------------------------------------------------------------------

struct Options {
    quick: bool,
    /// Run by `cargo test` (no `--bench`): a tiny smoke run.
    smoke: bool,
    only: Option<Vec<ClientKind>>,
    /// `--transport`: None = all.
    transport: Option<Transport>,
    timeout: Duration,
    rounds: Option<usize>,
    skip: Vec<String>,
    /// The memory figures after the rounds (off with `--only`, `--no-memory`
    /// and in a smoke run; `--memory` forces them).
    memory: Option<bool>,
    /// `--memory-only`: no client rounds.
    memory_only: bool,
    /// `--pin CPU` (or `HOTPATH_PIN`): the CPU of every child process.
    pin: Option<usize>,
}

fn parse_options() -> Options {
    let mut opts = Options {
        quick: std::env::var_os("HOTPATH_QUICK").is_some(),
        smoke: false,
        only: None,
        transport: None,
        timeout: Duration::from_secs(30),
        rounds: None,
        skip: Vec::new(),
        memory: None,
        memory_only: false,
        pin: None,
    };
    let mut saw_bench = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => opts.quick = true,
            "--memory" => opts.memory = Some(true),
            "--no-memory" => opts.memory = Some(false),
            "--memory-only" => {
                opts.memory_only = true;
                opts.memory = Some(true);
            }
            "--smoke" => opts.smoke = true,
            "--bench" => saw_bench = true, // passed by `cargo bench`
            "--only" => {
                let list = args.next().unwrap_or_default();
                let kinds = list
                    .split(',')
                    .map(|s| {
                        ClientKind::parse(s.trim()).unwrap_or_else(|| {
                            let ids: Vec<&str> = CLIENTS.iter().map(|c| c.id()).collect();
                            eprintln!("unknown client {s:?} ({})", ids.join(", "));
                            std::process::exit(2)
                        })
                    })
                    .collect();
                opts.only = Some(kinds);
            }
            "--transport" => {
                opts.transport = match args.next().as_deref() {
                    Some("stdio") => Some(Transport::Stdio),
                    Some("http") => Some(Transport::Http),
                    Some("all") => None,
                    other => {
                        eprintln!("--transport needs stdio, http or all, not {other:?}");
                        std::process::exit(2)
                    }
                };
            }
            "--timeout" => {
                let secs = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
                    eprintln!("--timeout needs a number of seconds");
                    std::process::exit(2)
                });
                opts.timeout = Duration::from_secs(secs);
            }
            "--pin" => {
                let cpu = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
                    eprintln!("--pin needs a CPU number");
                    std::process::exit(2)
                });
                opts.pin = Some(cpu);
            }
            "--rounds" => {
                let n = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
                    eprintln!("--rounds needs a number");
                    std::process::exit(2)
                });
                opts.rounds = Some(std::cmp::max(n, 1));
            }
            // Internal, parent to child: metrics not to measure again.
            "--skip" => {
                opts.skip = args
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
            }
            "-h" | "--help" => {
                let ids: Vec<&str> = CLIENTS.iter().map(|c| c.id()).collect();
                println!(
                    "usage: hotpath [--quick] [--rounds N] [--transport stdio|http|all] \
                     [--only {}] [--timeout SECS] [--pin CPU] \
                     [--memory|--no-memory|--memory-only]",
                    ids.join(",")
                );
                std::process::exit(0);
            }
            other => eprintln!("hotpath: ignoring argument {other:?}"),
        }
    }
    // Without `--bench` the parent was started by `cargo test`.
    if !saw_bench && std::env::var_os(CHILD_ENV).is_none() {
        opts.smoke = true;
    }
    if opts.pin.is_none() {
        opts.pin = pin_from_env();
    }
    if opts.smoke {
        opts.quick = true;
        opts.timeout = opts.timeout.min(Duration::from_secs(10));
    }
    if opts.memory.is_none() {
        opts.memory = Some(!opts.smoke && opts.only.is_none());
    }
    opts
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

async fn run_child(
    kind: ClientKind,
    opts: &Options,
    skip: &[String],
) -> Result<(BTreeMap<String, Outcome>, String), String> {
    let exe = std::env::current_exe().map_err(fail)?;
    let mut cmd = Command::new(exe);
    cmd.env(CHILD_ENV, kind.id())
        .args(["--timeout", &opts.timeout.as_secs().to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Some(cpu) = opts.pin {
        cmd.env(PIN_ENV, cpu.to_string());
    }
    if opts.smoke {
        cmd.arg("--smoke");
    }
    if opts.quick {
        cmd.arg("--quick");
    }
    if !skip.is_empty() {
        cmd.args(["--skip", &skip.join(",")]);
    }
    let mut child = cmd.spawn().map_err(fail)?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    // Five bounded phases; blobs are bounded per call, cold connect gets
    // twice the limit.
    let whole = opts.timeout * 20 + Duration::from_secs(30);
    let mut text = String::new();
    let read = tokio::time::timeout(whole, stdout.read_to_string(&mut text)).await;
    if read.is_err() {
        let _ = child.kill().await;
        return Err(format!("child timed out after {} s", whole.as_secs()));
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(RESULT_PREFIX))
        .ok_or_else(|| format!("child printed no result: {text:?}"))?;
    let mut v: Map<String, Value> = serde_json::from_str(line).map_err(fail)?;
    let protocol = match v.remove(PROTOCOL_KEY) {
        Some(Value::String(p)) => p,
        _ => "?".into(),
    };
    let metrics = v
        .into_iter()
        .map(|(k, v)| {
            let o = match v.get("ok").and_then(Value::as_f64) {
                Some(x) => Ok(x),
                None => Err(v
                    .get("err")
                    .and_then(Value::as_str)
                    .unwrap_or("malformed result")
                    .to_owned()),
            };
            (k, o)
        })
        .collect();
    Ok((metrics, protocol))
}

/// A table cell: the value, then its ratio to each base that has a value
/// (`(label, outcome)`; an empty label prints the ratio alone).
fn cell(key: &str, v: Option<&Outcome>, bases: &[(&str, Option<&Outcome>)]) -> String {
    match v {
        None => "-".into(),
        Some(Err(e)) => {
            if e.starts_with("timeout") {
                "FAIL (timeout)".into()
            } else {
                let mut e = e.replace('\n', " ");
                // Wrapped errors ("… error: … error: cause"): the cause.
                if let Some(i) = e.rfind("error: ") {
                    e = e[i + "error: ".len()..].to_owned();
                }
                if e.len() > 60 {
                    let cut = (0..=60).rev().find(|&i| e.is_char_boundary(i)).unwrap_or(0);
                    e.truncate(cut);
                    e.push('…');
                }
                format!("FAIL ({e})")
            }
        }
        Some(Ok(x)) => {
            let value = format_value(key, *x);
            let ratios: Vec<String> = bases
                .iter()
                .filter_map(|&(label, base)| match base {
                    Some(Ok(r)) if *r > 0.0 && label.is_empty() => Some(format!("{:.2}×", x / r)),
                    Some(Ok(r)) if *r > 0.0 => Some(format!("{:.2}× {label}", x / r)),
                    _ => None,
                })
                .collect();
            if ratios.is_empty() {
                value
            } else {
                format!("{value} ({})", ratios.join(", "))
            }
        }
    }
}

fn print_table(kinds: &[ClientKind], results: &HashMap<&'static str, BTreeMap<String, Outcome>>) {
    if kinds.is_empty() {
        return;
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["metric".to_owned()];
    header.extend(kinds.iter().map(|k| k.title().to_owned()));
    rows.push(header);
    for m in &METRICS {
        let mut row = vec![format!(
            "{} ({})",
            m.label,
            if m.better == Better::Lower {
                "lower is better"
            } else {
                "higher is better"
            }
        )];
        for k in kinds {
            let get = |k: ClientKind| results.get(k.id()).and_then(|r| r.get(m.key));
            let bases: Vec<(&str, Option<&Outcome>)> = k
                .ratio_bases()
                .into_iter()
                .map(|(label, base)| (label, get(base)))
                .collect();
            row.push(cell(m.key, get(*k), &bases));
        }
        rows.push(row);
    }
    // Markdown table, column-aligned (by chars, not bytes).
    let width = |s: &str| s.chars().count();
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| width(&r[c])).max().unwrap_or(0))
        .collect();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(s, w)| format!("{s}{}", " ".repeat(w - width(s))))
            .collect();
        println!("| {} |", cells.join(" | "));
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            println!("|-{}-|", rule.join("-|-"));
        }
    }
}

/// The targets, for the switchboard columns (cold connect: stdio only).
fn check_targets(kinds: &[ClientKind], results: &HashMap<&'static str, BTreeMap<String, Outcome>>) {
    let get = |client: &str, key: &str| -> Option<Outcome> {
        results.get(client).and_then(|r| r.get(key)).cloned()
    };
    if !kinds.iter().any(|k| k.is_switchboard() && !k.fast()) {
        return;
    }
    println!();
    println!("realistic server, targets of the first benchmark:");
    for kind in kinds.iter().filter(|k| k.is_switchboard() && !k.fast()) {
        let checks: &[(&str, &str, f64, bool)] = &[
            ("seq_p50_us", "sequential p50 <= 2x raw", 2.0, true),
            ("throughput", "calls/s >= 0.5x raw", 0.5, false),
            ("blob_16m_ms", "16 MiB <= 2x raw and succeeds", 2.0, true),
            ("cold_ms", "cold connect <= 1.3x raw", 1.3, true),
        ];
        let checks = match kind.transport() {
            Transport::Stdio => checks,
            Transport::Http => &checks[..3],
        };
        let raw = kind.baseline().id();
        for &(key, what, bound, upper) in checks {
            let verdict = match (get(kind.id(), key), get(raw, key)) {
                (Some(Ok(x)), Some(Ok(r))) if r > 0.0 => {
                    let ratio = x / r;
                    let ok = if upper {
                        ratio <= bound
                    } else {
                        ratio >= bound
                    };
                    format!("{} ({ratio:.2}×)", if ok { "PASS" } else { "MISS" })
                }
                (Some(Err(e)), _) => format!("MISS (failed: {e})"),
                (_, Some(Err(e))) => format!("n/a (raw failed: {e})"),
                _ => "n/a (not measured)".into(),
            };
            println!("  {:<27} {:<32} {verdict}", kind.long_title(), what);
        }
    }
}

/// Issue 18's targets against the fast server, as a Markdown table: the
/// switchboard (auto) column against the raw floor, rmcp beside it.
fn fast_targets(kinds: &[ClientKind], results: &HashMap<&'static str, BTreeMap<String, Outcome>>) {
    // (transport, metric, row, bound, upper bound?)
    const ROWS: [(Transport, &str, &str, f64, bool); 7] = [
        (
            Transport::Stdio,
            "seq_p50_us",
            "stdio sequential p50",
            1.5,
            true,
        ),
        (
            Transport::Stdio,
            "throughput",
            "stdio calls/s, 64 in flight",
            0.7,
            false,
        ),
        (Transport::Stdio, "cold_ms", "stdio cold connect", 1.3, true),
        (
            Transport::Http,
            "seq_p50_us",
            "HTTP sequential p50",
            2.0,
            true,
        ),
        (
            Transport::Http,
            "throughput",
            "HTTP calls/s, 64 in flight",
            0.5,
            false,
        ),
        (
            Transport::Http,
            "blob_16m_ms",
            "HTTP 16 MiB result",
            1.5,
            true,
        ),
        (Transport::Http, "cold_ms", "HTTP cold connect", 2.0, true),
    ];
    let fast: Vec<ClientKind> = kinds.iter().copied().filter(|k| k.fast()).collect();
    if !fast.iter().any(|k| k.is_switchboard()) {
        return;
    }
    let get = |kind: ClientKind, key: &str| -> Option<Outcome> {
        results.get(kind.id()).and_then(|r| r.get(key)).cloned()
    };
    println!();
    println!("### Targets (issue 18), fast server");
    println!();
    println!("| metric | raw | switchboard (auto) | target | verdict | rmcp 3.9.0 (best config) |");
    println!("|---|---|---|---|---|---|");
    for (transport, key, row, bound, upper) in ROWS {
        let (raw, sb, rmcp) = match transport {
            Transport::Stdio => (
                ClientKind::FastRaw,
                ClientKind::FastSb,
                ClientKind::FastRmcp,
            ),
            Transport::Http => (
                ClientKind::FastRawHttp,
                ClientKind::FastSbHttp,
                ClientKind::FastRmcpHttp,
            ),
        };
        if !fast.contains(&sb) {
            continue;
        }
        let raw_v = get(raw, key);
        let base = raw_v.as_ref().and_then(|r| r.as_ref().ok()).copied();
        let show = |kind: ClientKind| -> String {
            if !fast.contains(&kind) {
                return "-".into();
            }
            cell(key, get(kind, key).as_ref(), &[("", raw_v.as_ref())])
        };
        let verdict = match (get(sb, key), base) {
            (Some(Ok(x)), Some(r)) if r > 0.0 => {
                let ratio = x / r;
                let ok = if upper {
                    ratio <= bound
                } else {
                    ratio >= bound
                };
                format!("{} ({ratio:.2}×)", if ok { "PASS" } else { "MISS" })
            }
            (Some(Err(e)), _) => format!("MISS (failed: {e})"),
            _ => "n/a".into(),
        };
        println!(
            "| {row} | {} | {} | {} {bound}× raw | {verdict} | {} |",
            show(raw),
            show(sb),
            if upper { "≤" } else { "≥" },
            show(rmcp),
        );
    }
}

/// A target of issue 35, on switchboard's ratio to the blocking floor.
#[derive(Clone, Copy)]
enum Bound {
    AtMost(f64),
    AtLeast(f64),
    /// No worse than the async floor's own ratio to the blocking floor
    /// (lower is better).
    AsyncFloors,
}

/// Issue 35's targets, against the blocking floor, as a Markdown table: the
/// switchboard (auto) column with both ratios, the floors and rmcp beside it.
fn blocking_targets(
    kinds: &[ClientKind],
    results: &HashMap<&'static str, BTreeMap<String, Outcome>>,
) {
    const ROWS: [(Transport, &str, &str, Bound); 10] = [
        (
            Transport::Stdio,
            "seq_p50_us",
            "stdio sequential p50",
            Bound::AtMost(1.6),
        ),
        (
            Transport::Stdio,
            "throughput",
            "stdio calls/s, 64 in flight",
            Bound::AtLeast(0.7),
        ),
        (
            Transport::Stdio,
            "cold_ms",
            "stdio cold connect",
            Bound::AtMost(1.5),
        ),
        (
            Transport::Stdio,
            "blob_16m_ms",
            "stdio 16 MiB result",
            Bound::AsyncFloors,
        ),
        (
            Transport::Stdio,
            "rss_mib",
            "stdio peak RSS",
            Bound::AsyncFloors,
        ),
        (
            Transport::Http,
            "seq_p50_us",
            "HTTP sequential p50",
            Bound::AtMost(1.8),
        ),
        (
            Transport::Http,
            "throughput",
            "HTTP calls/s, 64 in flight",
            Bound::AtLeast(0.5),
        ),
        (
            Transport::Http,
            "cold_ms",
            "HTTP cold connect",
            Bound::AtMost(2.0),
        ),
        (
            Transport::Http,
            "blob_16m_ms",
            "HTTP 16 MiB result",
            Bound::AsyncFloors,
        ),
        (
            Transport::Http,
            "rss_mib",
            "HTTP peak RSS",
            Bound::AsyncFloors,
        ),
    ];
    let ran = |kind: ClientKind| kinds.contains(&kind);
    let judged = |t: Transport| match t {
        Transport::Stdio => ran(ClientKind::FastSb) && ran(ClientKind::FastBlock),
        Transport::Http => ran(ClientKind::FastSbHttp) && ran(ClientKind::FastBlockHttp),
    };
    if !judged(Transport::Stdio) && !judged(Transport::Http) {
        return;
    }
    let get = |kind: ClientKind, key: &str| -> Option<Outcome> {
        results.get(kind.id()).and_then(|r| r.get(key)).cloned()
    };
    let ok = |o: &Option<Outcome>| o.as_ref().and_then(|r| r.as_ref().ok()).copied();
    println!();
    println!("### Targets (issue 35), against the blocking floor");
    println!();
    println!(
        "| metric | blocking floor | async floor | switchboard (auto) | target | verdict | \
         rmcp 3.9.0 (best config) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (transport, key, row, bound) in ROWS {
        if !judged(transport) {
            continue;
        }
        let (block, async_floor, sb, rmcp) = match transport {
            Transport::Stdio => (
                ClientKind::FastBlock,
                ClientKind::FastRaw,
                ClientKind::FastSb,
                ClientKind::FastRmcp,
            ),
            Transport::Http => (
                ClientKind::FastBlockHttp,
                ClientKind::FastRawHttp,
                ClientKind::FastSbHttp,
                ClientKind::FastRmcpHttp,
            ),
        };
        let (block_v, async_v) = (get(block, key), get(async_floor, key));
        let show = |kind: ClientKind| -> String {
            if !ran(kind) {
                return "-".into();
            }
            let bases: &[(&str, Option<&Outcome>)] = if kind == block {
                &[]
            } else if kind == async_floor {
                &[("blocking", block_v.as_ref())]
            } else {
                &[("async", async_v.as_ref()), ("blocking", block_v.as_ref())]
            };
            cell(key, get(kind, key).as_ref(), bases)
        };
        let async_ratio = match (ok(&async_v), ok(&block_v)) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        let target = match bound {
            Bound::AtMost(b) => format!("≤ {b}× blocking"),
            Bound::AtLeast(b) => format!("≥ {b}× blocking"),
            Bound::AsyncFloors => match async_ratio {
                Some(r) => format!("≤ the async floor's {r:.2}× blocking"),
                None => "≤ the async floor's ratio".into(),
            },
        };
        let verdict = match (get(sb, key), ok(&block_v)) {
            (Some(Ok(x)), Some(b)) if b > 0.0 => {
                let ratio = x / b;
                let pass = match bound {
                    Bound::AtMost(limit) => Some(ratio <= limit),
                    Bound::AtLeast(limit) => Some(ratio >= limit),
                    Bound::AsyncFloors => async_ratio.map(|limit| ratio <= limit),
                };
                match pass {
                    Some(true) => format!("PASS ({ratio:.2}×)"),
                    Some(false) => format!("MISS ({ratio:.2}×)"),
                    None => format!("n/a ({ratio:.2}×; no async floor)"),
                }
            }
            (Some(Err(e)), _) => format!("MISS (failed: {e})"),
            (_, None) => "n/a (no blocking floor)".into(),
            _ => "n/a".into(),
        };
        println!(
            "| {row} | {} | {} | {} | {target} | {verdict} | {} |",
            show(block),
            show(async_floor),
            show(sb),
            show(rmcp),
        );
    }
}

/// The middle value of the successful rounds; the first error when no round
/// succeeded. Peak RSS is the largest instead: only a client's first round
/// runs a metric that failed (e.g. rmcp's 16 MiB result).
fn combine(key: &str, rounds: &[Outcome]) -> Outcome {
    let mut ok: Vec<f64> = rounds
        .iter()
        .filter_map(|r| r.as_ref().ok().copied())
        .collect();
    if ok.is_empty() {
        return rounds
            .first()
            .cloned()
            .unwrap_or_else(|| Err("not measured".into()));
    }
    ok.sort_by(f64::total_cmp);
    if key == "rss_mib" {
        return Ok(ok[ok.len() - 1]);
    }
    Ok(ok[(ok.len() - 1) / 2])
}

fn parent_main(opts: Options) {
    let kinds: Vec<ClientKind> = opts
        .only
        .clone()
        .unwrap_or_else(|| CLIENTS.to_vec())
        .into_iter()
        .filter(|k| opts.transport.is_none_or(|t| k.transport() == t))
        .filter(|_| !opts.memory_only)
        .collect();
    let plan = Plan::new(opts.quick, opts.smoke, opts.timeout);
    let rounds = opts.rounds.unwrap_or(if opts.quick { 1 } else { 5 });
    if let Some(cpu) = opts.pin
        && !cpu_allowed(cpu)
    {
        eprintln!("hotpath: --pin {cpu}: this process may not run on CPU {cpu}");
        std::process::exit(2);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("hotpath: server {SERVER}");
    // Pinned, a child sees one CPU, so tokio's default is one worker.
    let workers = match opts.pin {
        Some(_) => 1,
        None => std::thread::available_parallelism().map_or(0, |n| n.get()),
    };
    let runtime_kind = if std::env::var_os(CURRENT_THREAD_ENV).is_some() {
        format!("current_thread ({CURRENT_THREAD_ENV})")
    } else {
        format!("multi_thread (default worker_threads = {workers} = available_parallelism)")
    };
    println!(
        "hotpath: {} run, {rounds} round(s), clients interleaved; each client in its own process \
         on a tokio {runtime_kind} runtime, \
         workload in a spawned task; the blocking floors (fast-block*) on their one thread, no runtime",
        if opts.smoke {
            "smoke (cargo test: checks every metric works; the numbers mean nothing)"
        } else if opts.quick {
            "quick"
        } else {
            "full"
        },
    );
    match opts.pin {
        Some(cpu) => println!(
            "hotpath: pinned to CPU {cpu}: every client process and the servers it starts \
             (sched_setaffinity, inherited); this parent is not pinned"
        ),
        None => println!("hotpath: not pinned (--pin CPU pins every child to one CPU)"),
    }
    println!(
        "hotpath: per round: sequential {} calls after {} warm-up; throughput {} calls (or {} s) \
         with {IN_FLIGHT} in flight; 1 MiB x{}, 16 MiB x{}; cold connect x{}; per-metric \
         timeout {} s",
        plan.sequential,
        plan.warmup,
        plan.throughput,
        plan.throughput_cap.as_secs(),
        plan.blob_1m_reps,
        plan.blob_16m_reps,
        plan.cold_reps,
        plan.timeout.as_secs(),
    );
    println!("hotpath: load average at start: {}", loadavg());
    // client -> metric -> one outcome per round
    let mut all: HashMap<&'static str, BTreeMap<String, Vec<Outcome>>> = HashMap::new();
    let mut protocols: HashMap<&'static str, String> = HashMap::new();
    for round in 1..=rounds {
        for &kind in &kinds {
            // A metric that failed in the first round is not retried (a hang
            // would cost the full timeout every round).
            let skip: Vec<String> = all
                .get(kind.id())
                .map(|m| {
                    m.iter()
                        .filter(|(k, v)| k.as_str() != "rss_mib" && v.iter().all(|o| o.is_err()))
                        .map(|(k, _)| k.clone())
                        .collect()
                })
                .unwrap_or_default();
            let t = Instant::now();
            let r = match runtime.block_on(run_child(kind, &opts, &skip)) {
                Ok((r, protocol)) => {
                    protocols.entry(kind.id()).or_insert(protocol);
                    r
                }
                Err(e) => {
                    eprintln!("hotpath: {} failed: {e}", kind.long_title());
                    METRICS
                        .iter()
                        .map(|m| (m.key.to_owned(), Err(e.clone())))
                        .collect()
                }
            };
            let summary: Vec<String> = METRICS
                .iter()
                .filter_map(|m| {
                    r.get(m.key).map(|o| match o {
                        Ok(x) => format!("{}={}", m.key, format_value(m.key, *x)),
                        Err(e) => format!("{}=FAIL({e})", m.key),
                    })
                })
                .collect();
            eprintln!(
                "hotpath: round {round}/{rounds} {} ({:.1} s, load {}): {}",
                kind.long_title(),
                t.elapsed().as_secs_f64(),
                loadavg(),
                summary.join(", ")
            );
            let entry = all.entry(kind.id()).or_default();
            for (k, v) in r {
                entry.entry(k).or_default().push(v);
            }
        }
    }
    println!("hotpath: load average at end: {}", loadavg());
    for kind in &kinds {
        let server = if kind.fast() {
            match kind.transport() {
                Transport::Stdio => "fast server (stdio)".to_owned(),
                Transport::Http => "fast server (http)".to_owned(),
            }
        } else {
            format!(
                "server {}--era {}",
                match kind.transport() {
                    Transport::Stdio => "",
                    Transport::Http => "--http 127.0.0.1:0 ",
                },
                kind.server_era()
            )
        };
        println!(
            "hotpath: {:<50} {:<42} negotiated {}",
            kind.long_title(),
            server,
            protocols.get(kind.id()).map_or("?", String::as_str)
        );
    }
    println!();
    let results: HashMap<&'static str, BTreeMap<String, Outcome>> = all
        .into_iter()
        .map(|(client, metrics)| {
            let combined = metrics
                .into_iter()
                .map(|(k, v)| {
                    let c = combine(&k, &v);
                    (k, c)
                })
                .collect();
            (client, combined)
        })
        .collect();
    if rounds > 1 {
        println!("each value: the median of the {rounds} rounds' values");
    }
    println!(
        "(n×) = ratio to raw; fast server: (n× async) = ratio to the async floor (fast-raw*, \
         tokio), (n× blocking) = ratio to the blocking floor (fast-block*, std on one thread)"
    );
    for (fast, transport) in [
        (true, Transport::Stdio),
        (true, Transport::Http),
        (false, Transport::Stdio),
        (false, Transport::Http),
    ] {
        let these: Vec<ClientKind> = kinds
            .iter()
            .copied()
            .filter(|k| k.transport() == transport && k.fast() == fast)
            .collect();
        if these.is_empty() {
            continue;
        }
        println!();
        if fast {
            println!("### Fast server, {}", transport.name());
        } else {
            println!(
                "### Realistic server (switchboard-testserver), {}",
                transport.name()
            );
        }
        println!();
        print_table(&these, &results);
    }
    if opts.smoke {
        println!("\ntargets: not judged in a smoke run (use `cargo bench`)");
    } else {
        fast_targets(&kinds, &results);
        blocking_targets(&kinds, &results);
        check_targets(&kinds, &results);
    }
    if opts.memory == Some(true) {
        println!();
        runtime.block_on(memory_report(&opts));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fast_server = args.first().map(String::as_str) == Some("--fast-server");
    // A child (client, memory figure or fast server) pins itself before it
    // starts a thread or a process, so all of them inherit the CPU; the
    // parent, which only waits for its children, stays unpinned.
    let child =
        fast_server || std::env::var_os(CHILD_ENV).is_some() || std::env::var_os(MEM_ENV).is_some();
    if child
        && let Some(cpu) = pin_from_env()
        && let Err(e) = pin_to(cpu)
    {
        eprintln!("hotpath: {e}");
        std::process::exit(2);
    }
    if fast_server {
        fast_server::main(&args[1..]);
    }
    if let Ok(which) = std::env::var(MEM_ENV) {
        memory_child(&which);
        return;
    }
    let opts = parse_options();
    match std::env::var(CHILD_ENV) {
        Ok(id) => {
            let Some(kind) = ClientKind::parse(&id) else {
                eprintln!("{CHILD_ENV}={id:?}: unknown client");
                std::process::exit(2);
            };
            let plan = Plan::new(opts.quick, opts.smoke, opts.timeout);
            child_main(kind, plan, opts.skip);
        }
        Err(_) => parent_main(opts),
    }
}

/// `HOTPATH_PIN`, if set (a bad value ends the process).
fn pin_from_env() -> Option<usize> {
    let v = std::env::var(PIN_ENV).ok()?;
    match v.trim().parse() {
        Ok(cpu) => Some(cpu),
        Err(_) => {
            eprintln!("hotpath: {PIN_ENV}={v:?} is not a CPU number");
            std::process::exit(2)
        }
    }
}

/// Pins the calling thread to `cpu` (`sched_setaffinity`); the threads and
/// processes it starts afterwards inherit the mask.
fn pin_to(cpu: usize) -> Result<(), String> {
    if cpu >= rustix::thread::CpuSet::MAX_CPU {
        return Err(format!("CPU {cpu} is out of range"));
    }
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set)
        .map_err(|e| format!("cannot pin to CPU {cpu} (sched_setaffinity: {e})"))
}

/// Whether this process may run on `cpu` (checked before any child starts).
fn cpu_allowed(cpu: usize) -> bool {
    cpu < rustix::thread::CpuSet::MAX_CPU
        && rustix::thread::sched_getaffinity(None).is_ok_and(|set| set.is_set(cpu))
}

// ---------------------------------------------------------------------------
// Memory figures (each in its own child process: `HOTPATH_MEM=<figure>`).
// ---------------------------------------------------------------------------

const MEM_ENV: &str = "HOTPATH_MEM";
/// `tools/list`: 10,000 tools with 10 KB descriptions, 1,000 per page.
const MANY_TOOLS: fast_server::FastOptions = fast_server::FastOptions {
    tools: 10_000,
    desc: 10 * 1024,
    page: 1_000,
};
const IDLE_STDIO: usize = 50;
const IDLE_HTTP: usize = 100;

fn proc_status_kib(field: &str) -> Result<f64, String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(fail)?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .ok_or_else(|| format!("no {field} in /proc/self/status"))?;
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .map_err(fail)
}

fn many_tools_args() -> Vec<String> {
    vec![
        "--fast-server".into(),
        "stdio".into(),
        "--tools".into(),
        MANY_TOOLS.tools.to_string(),
        "--desc".into(),
        MANY_TOOLS.desc.to_string(),
        "--page".into(),
        MANY_TOOLS.page.to_string(),
    ]
}

/// `tools/list` of many tools: RSS before, peak during, held after (KiB).
/// `raise_limit`: switchboard's `max_list_bytes` at 256 MiB (its default,
/// 64 MiB, refuses a list this size).
async fn mem_tools(switchboard: bool, raise_limit: bool) -> Result<Map<String, Value>, String> {
    let exe = fast_server_exe();
    let args = many_tools_args();
    let mut out = Map::new();
    let (before, count, keep): (f64, usize, Box<dyn std::any::Any + Send>) = if switchboard {
        let config = switchboard::transport::stdio::StdioConfig::new(exe).args(args);
        let mut builder = switchboard::Client::builder();
        if raise_limit {
            builder = builder.max_list_bytes(256 * MIB);
        }
        let client = builder.connect(config).await.map_err(fail)?;
        let before = proc_status_kib("VmRSS:")?;
        let tools = client.list_tools().await.map_err(fail)?;
        (before, tools.len(), Box::new((tools, client)))
    } else {
        let client = RawClient::connect(&exe, &args).await?;
        let before = proc_status_kib("VmRSS:")?;
        let mut pages = Vec::new();
        let mut cursor: Option<String> = None;
        let mut count = 0;
        loop {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let page = client.request("tools/list", params).await?;
            count += page["tools"].as_array().map_or(0, Vec::len);
            cursor = page["nextCursor"].as_str().map(str::to_owned);
            pages.push(page);
            if cursor.is_none() {
                break;
            }
        }
        (before, count, Box::new((pages, client)))
    };
    let peak = proc_status_kib("VmHWM:")?;
    let held = proc_status_kib("VmRSS:")?;
    drop(keep);
    if count != MANY_TOOLS.tools {
        return Err(format!(
            "listed {count} tools, expected {}",
            MANY_TOOLS.tools
        ));
    }
    out.insert(
        "json_bytes".into(),
        json!(fast_server::tools_json_size(&MANY_TOOLS)),
    );
    out.insert("before_kib".into(), json!(before));
    out.insert("peak_kib".into(), json!(peak));
    out.insert("held_kib".into(), json!(held));
    Ok(out)
}

/// Many idle connections: RSS growth per connection (KiB), after one
/// warm-up connection (the runtime's and the library's one-time state).
async fn mem_idle(transport: Transport) -> Result<Map<String, Value>, String> {
    let n = match transport {
        Transport::Stdio => IDLE_STDIO,
        Transport::Http => IDLE_HTTP,
    };
    let kind = match transport {
        Transport::Stdio => ClientKind::FastSb,
        Transport::Http => ClientKind::FastSbHttp,
    };
    let server = match transport {
        Transport::Stdio => None,
        Transport::Http => Some(HttpServer::start(kind).await?),
    };
    let url = server.as_ref().map(|s| s.url.clone());
    let warm = connect(kind, url.as_deref()).await?;
    warm.list_tools().await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = proc_status_kib("VmRSS:")?;
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let c = connect(kind, url.as_deref()).await?;
        c.list_tools().await?;
        conns.push(c);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = proc_status_kib("VmRSS:")?;
    for c in conns {
        c.close().await;
    }
    warm.close().await;
    if let Some(server) = server {
        server.stop().await;
    }
    let mut out = Map::new();
    out.insert("connections".into(), json!(n));
    out.insert("per_conn_kib".into(), json!((after - before) / n as f64));
    Ok(out)
}

fn memory_child(which: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let which = which.to_owned();
    let result = runtime
        .block_on(runtime.spawn(async move {
            match which.as_str() {
                "tools-sb" => mem_tools(true, false).await,
                "tools-sb-256m" => mem_tools(true, true).await,
                "tools-raw" => mem_tools(false, false).await,
                "idle-stdio" => mem_idle(Transport::Stdio).await,
                "idle-http" => mem_idle(Transport::Http).await,
                other => Err(format!("unknown memory figure {other:?}")),
            }
        }))
        .expect("the memory task panicked");
    let v = match result {
        Ok(m) => Value::Object(m),
        Err(e) => json!({ "err": e }),
    };
    println!("{RESULT_PREFIX}{v}");
    runtime.shutdown_timeout(Duration::from_secs(2));
}

async fn run_memory_child(
    which: &str,
    timeout: Duration,
    pin: Option<usize>,
) -> Result<Map<String, Value>, String> {
    let exe = std::env::current_exe().map_err(fail)?;
    let mut cmd = Command::new(exe);
    cmd.env(MEM_ENV, which)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Some(cpu) = pin {
        cmd.env(PIN_ENV, cpu.to_string());
    }
    let child = cmd.output();
    let output = tokio::time::timeout(timeout, child)
        .await
        .map_err(|_| format!("timeout after {} s", timeout.as_secs()))?
        .map_err(fail)?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(RESULT_PREFIX))
        .ok_or_else(|| format!("child printed no result: {text:?}"))?;
    let v: Map<String, Value> = serde_json::from_str(line).map_err(fail)?;
    match v.get("err").and_then(Value::as_str) {
        Some(e) => Err(e.to_owned()),
        None => Ok(v),
    }
}

/// The memory figures as a Markdown table.
async fn memory_report(opts: &Options) {
    let limit = opts.timeout * 4;
    println!("### Memory (fast server, switchboard with default settings)");
    println!();
    println!("| figure | raw | switchboard | target | verdict |");
    println!("|---|---|---|---|---|");
    let num = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let raw = run_memory_child("tools-raw", limit, opts.pin).await;
    let figure = |r: &Result<Map<String, Value>, String>| -> (String, Option<f64>) {
        match r {
            Ok(m) => {
                let json = num(m, "json_bytes") / 1024.0;
                let peak = num(m, "peak_kib") - num(m, "before_kib");
                let held = num(m, "held_kib") - num(m, "before_kib");
                let ratio = peak / json;
                (
                    format!(
                        "peak +{:.1} MiB ({ratio:.2}× JSON), held +{:.1} MiB ({:.2}×)",
                        peak / 1024.0,
                        held / 1024.0,
                        held / json
                    ),
                    Some(ratio),
                )
            }
            Err(e) => (format!("FAIL ({e})"), None),
        }
    };
    let json_mib = raw
        .as_ref()
        .map(|m| num(m, "json_bytes") / MIB as f64)
        .unwrap_or_else(|_| fast_server::tools_json_size(&MANY_TOOLS) as f64 / MIB as f64);
    let (raw_text, _) = figure(&raw);
    for (which, settings) in [
        ("tools-sb", "default settings"),
        ("tools-sb-256m", "`max_list_bytes(256 MiB)`"),
    ] {
        let sb = run_memory_child(which, limit, opts.pin).await;
        let (sb_text, sb_ratio) = figure(&sb);
        let verdict = match sb_ratio {
            Some(r) if r <= 3.0 => format!("PASS ({r:.2}×)"),
            Some(r) => format!("MISS ({r:.2}×)"),
            None => "MISS (failed)".into(),
        };
        println!(
            "| RSS for `tools/list`: {} tools, {} KiB descriptions, {} per page ({json_mib:.1} MiB of JSON); switchboard with {settings} | {raw_text} | {sb_text} | peak ≤ 3× JSON | {verdict} |",
            MANY_TOOLS.tools,
            MANY_TOOLS.desc / 1024,
            MANY_TOOLS.page,
        );
    }
    for (which, label, n) in [
        ("idle-stdio", "stdio", IDLE_STDIO),
        ("idle-http", "HTTP", IDLE_HTTP),
    ] {
        let (text, verdict) = match run_memory_child(which, limit, opts.pin).await {
            Ok(m) => {
                let kib = num(&m, "per_conn_kib");
                (
                    format!("{kib:.1} KiB"),
                    if kib <= 64.0 { "PASS" } else { "MISS" },
                )
            }
            Err(e) => (format!("FAIL ({e})"), "MISS"),
        };
        println!(
            "| idle connection, {label}: RSS growth per connection over {n} connections | - | {text} | ≤ 64 KiB | {verdict} |"
        );
    }
}
