//! Hot-path benchmark: switchboard against a hand-written NDJSON pipe client
//! (the floor) and the official rmcp client, each against its own freshly
//! spawned `switchboard-testserver`.
//!
//! ```text
//! cargo bench -p switchboard-testkit --bench hotpath              # full run, 5 rounds
//! cargo bench -p switchboard-testkit --bench hotpath -- --quick   # smoke run, 1 round
//! cargo bench -p switchboard-testkit --bench hotpath -- --only raw,sb-modern --rounds 3
//! ```
//!
//! Options: `--quick`, `--rounds N`, `--only CLIENTS` (raw, rmcp, sb-modern,
//! sb-legacy), `--timeout SECS` (per metric, default 30).
//!
//! Each client runs in its own child process (this binary re-executed with
//! `HOTPATH_CHILD=<client>`), so its runtime is isolated and its peak RSS
//! (`VmHWM` from `/proc/self/status`) and CPU time (`/proc/self/task/*/schedstat`)
//! are its own. The child prints one `HOTPATH-RESULT {json}` line; the parent
//! runs the clients interleaved for several rounds and reports the median of
//! the rounds (wake-up latency on a small shared machine is bimodal from one
//! process to the next, so one round can mislead).
//!
//! Every child uses a default tokio multi-thread runtime and runs the
//! workload in a spawned task (`HOTPATH_BLOCK_ON=1` runs it on the
//! `block_on` thread instead). To profile one client alone, run the bench
//! executable directly, e.g. `HOTPATH_CHILD=sb-legacy hotpath-… --quick
//! --skip seq_p50_us,throughput,cold_ms` under `perf record`.

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

const SERVER: &str = env!("CARGO_BIN_EXE_switchboard-testserver");
const CHILD_ENV: &str = "HOTPATH_CHILD";
const RESULT_PREFIX: &str = "HOTPATH-RESULT ";
/// Key of the negotiated protocol in a child's result (not a metric).
const PROTOCOL_KEY: &str = "protocol";
const IN_FLIGHT: usize = 64;
const MIB: usize = 1 << 20;
const ECHO_TEXT: &str = "hello, switchboard";

/// The clients, in table order.
const CLIENTS: [ClientKind; 4] = [
    ClientKind::Raw,
    ClientKind::Rmcp,
    ClientKind::SbModern,
    ClientKind::SbLegacy,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientKind {
    Raw,
    Rmcp,
    SbModern,
    SbLegacy,
}

impl ClientKind {
    fn id(self) -> &'static str {
        match self {
            ClientKind::Raw => "raw",
            ClientKind::Rmcp => "rmcp",
            ClientKind::SbModern => "sb-modern",
            ClientKind::SbLegacy => "sb-legacy",
        }
    }

    fn title(self) -> &'static str {
        match self {
            ClientKind::Raw => "raw",
            ClientKind::Rmcp => "rmcp 3.9.0",
            ClientKind::SbModern => "switchboard (modern)",
            ClientKind::SbLegacy => "switchboard (legacy)",
        }
    }

    fn server_era(self) -> &'static str {
        match self {
            ClientKind::SbModern => "dual",
            _ => "legacy",
        }
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
    blob_1m_reps: usize,
    blob_16m_reps: usize,
    cold_reps: usize,
    timeout: Duration,
}

impl Plan {
    fn new(quick: bool, smoke: bool, timeout: Duration) -> Plan {
        if smoke {
            // `cargo test` runs this binary too (an unoptimized build): check
            // that every client and metric works, measure nothing.
            Plan {
                warmup: 5,
                sequential: 20,
                throughput: 256,
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

const METRICS: [MetricDef; 9] = [
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
        key: "rss_mib",
        label: "peak RSS (VmHWM)",
        better: Better::Lower,
    },
];

fn format_value(key: &str, v: f64) -> String {
    match key {
        "seq_p50_us" | "seq_p99_us" | "seq_cpu_us" | "thr_cpu_us" => format!("{v:.1} µs"),
        "throughput" => format!("{} /s", group_thousands(v.round() as u64)),
        "blob_1m_ms" | "blob_16m_ms" | "cold_ms" => format!("{v:.2} ms"),
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
    async fn connect(server: &str, era: &str) -> Result<RawClient, String> {
        let mut child = Command::new(server)
            .args(["--era", era])
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
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "hotpath-raw", "version": "0.0.0"},
                }),
            )
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
        let mut msg = rx.await.map_err(|_| "connection closed".to_owned())?;
        if let Some(err) = msg.get("error") {
            return Err(format!("JSON-RPC error: {err}"));
        }
        Ok(msg
            .get_mut("result")
            .map(Value::take)
            .unwrap_or(Value::Null))
    }

    async fn call_tool(&self, name: &str, args: Map<String, Value>) -> Result<usize, String> {
        let result = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await?;
        result["content"][0]["text"]
            .as_str()
            .map(str::len)
            .ok_or_else(|| format!("unexpected result: {result}"))
    }

    async fn close(&self) {
        if let Some(mut child) = self.child.lock().await.take() {
            let _ = child.kill().await;
        }
    }
}

// ---------------------------------------------------------------------------
// The four clients behind one interface.
// ---------------------------------------------------------------------------

type RmcpClient = rmcp::service::RunningService<rmcp::RoleClient, ()>;

#[derive(Clone)]
enum Conn {
    Raw(Arc<RawClient>),
    Rmcp(Arc<RmcpClient>),
    Sb(switchboard::Client),
}

async fn connect(kind: ClientKind) -> Result<Conn, String> {
    let era = kind.server_era();
    match kind {
        ClientKind::Raw => Ok(Conn::Raw(Arc::new(RawClient::connect(SERVER, era).await?))),
        ClientKind::Rmcp => {
            use rmcp::ServiceExt;
            let mut cmd = Command::new(SERVER);
            cmd.args(["--era", era]);
            let (transport, _stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(Stdio::null())
                .spawn()
                .map_err(fail)?;
            let client = ().serve(transport).await.map_err(fail)?;
            Ok(Conn::Rmcp(Arc::new(client)))
        }
        ClientKind::SbModern | ClientKind::SbLegacy => {
            let mode = if kind == ClientKind::SbModern {
                switchboard::EraMode::Auto
            } else {
                switchboard::EraMode::Legacy
            };
            let config =
                switchboard::transport::stdio::StdioConfig::new(SERVER).args(["--era", era]);
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
            Conn::Rmcp(c) => Ok(c.list_tools(None).await.map_err(fail)?.tools.len()),
            Conn::Sb(c) => Ok(c.list_tools().await.map_err(fail)?.len()),
        }
    }

    /// The negotiated protocol version and era, for the report.
    fn protocol(&self) -> String {
        match self {
            Conn::Raw(c) => format!("{} (initialize)", c.protocol_version),
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
    let cpu = cpu_time().saturating_sub(cpu);
    samples.sort();
    Ok((
        us(percentile(&samples, 50.0)),
        us(percentile(&samples, 99.0)),
        us(cpu) / plan.sequential as f64,
    ))
}

/// Returns (calls/s, client CPU µs per call).
async fn measure_throughput(conn: &Conn, plan: &Plan) -> Result<(f64, f64), String> {
    let total = plan.throughput;
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    let cpu = cpu_time();
    let start = Instant::now();
    for _ in 0..IN_FLIGHT {
        let conn = conn.clone();
        let next = Arc::clone(&next);
        tasks.spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                conn.echo().await?;
            }
            Ok::<(), String>(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.map_err(fail)??;
    }
    let elapsed = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu);
    Ok((total as f64 / elapsed.as_secs_f64(), us(cpu) / total as f64))
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

async fn measure_cold(kind: ClientKind, plan: &Plan) -> Outcome {
    let mut samples = Vec::with_capacity(plan.cold_reps);
    for _ in 0..plan.cold_reps {
        let t = Instant::now();
        let conn = connect(kind).await?;
        let n = conn.list_tools().await?;
        let elapsed = t.elapsed();
        conn.close().await;
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
    match limited(limit, connect(kind)).await {
        Ok(conn) => {
            protocol = conn.protocol();
            let sequential = if wanted("seq_p50_us") {
                limited(limit, measure_sequential(&conn, &plan)).await
            } else {
                Err("skipped".into())
            };
            match sequential {
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
            let throughput = if wanted("throughput") {
                limited(limit, measure_throughput(&conn, &plan)).await
            } else {
                Err("skipped".into())
            };
            match throughput {
                Ok((rate, cpu)) => {
                    out.insert("throughput", Ok(rate));
                    out.insert("thr_cpu_us", Ok(cpu));
                }
                Err(e) => {
                    out.insert("throughput", Err(e.clone()));
                    out.insert("thr_cpu_us", Err(e));
                }
            }
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
        Err(e) => {
            let e = format!("connect: {e}");
            for m in &METRICS {
                if !matches!(m.key, "cold_ms" | "rss_mib") {
                    out.insert(m.key, Err(e.clone()));
                }
            }
        }
    }
    if wanted("cold_ms") {
        out.insert(
            "cold_ms",
            limited(limit * 2, measure_cold(kind, &plan)).await,
        );
    }
    out.insert("rss_mib", vm_hwm_mib());
    (out, protocol)
}

fn child_main(kind: ClientKind, plan: Plan, skip: Vec<String>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    // The workload runs in a spawned task, on the worker threads, as request
    // handling does in an application (not on the `block_on` thread).
    let (results, protocol) = if std::env::var_os("HOTPATH_BLOCK_ON").is_some() {
        runtime.block_on(run_client(kind, plan, skip))
    } else {
        let task = runtime.spawn(run_client(kind, plan, skip));
        runtime.block_on(task).expect("the benchmark task panicked")
    };
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
    // Do not wait for lingering server processes or blocking tasks.
    runtime.shutdown_timeout(Duration::from_secs(2));
}

// ---------------------------------------------------------------------------
// Parent: run each client in its own process, then report.
// ---------------------------------------------------------------------------

struct Options {
    quick: bool,
    /// Run by `cargo test` (no `--bench`): a tiny smoke run.
    smoke: bool,
    only: Option<Vec<ClientKind>>,
    timeout: Duration,
    rounds: Option<usize>,
    skip: Vec<String>,
}

fn parse_options() -> Options {
    let mut opts = Options {
        quick: std::env::var_os("HOTPATH_QUICK").is_some(),
        smoke: false,
        only: None,
        timeout: Duration::from_secs(30),
        rounds: None,
        skip: Vec::new(),
    };
    let mut saw_bench = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => opts.quick = true,
            "--smoke" => opts.smoke = true,
            "--bench" => saw_bench = true, // passed by `cargo bench`
            "--only" => {
                let list = args.next().unwrap_or_default();
                let kinds = list
                    .split(',')
                    .map(|s| {
                        ClientKind::parse(s.trim()).unwrap_or_else(|| {
                            eprintln!("unknown client {s:?} (raw, rmcp, sb-modern, sb-legacy)");
                            std::process::exit(2)
                        })
                    })
                    .collect();
                opts.only = Some(kinds);
            }
            "--timeout" => {
                let secs = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
                    eprintln!("--timeout needs a number of seconds");
                    std::process::exit(2)
                });
                opts.timeout = Duration::from_secs(secs);
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
                println!(
                    "usage: hotpath [--quick] [--only raw,rmcp,sb-modern,sb-legacy] [--timeout SECS]"
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
    if opts.smoke {
        opts.quick = true;
        opts.timeout = opts.timeout.min(Duration::from_secs(10));
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

fn cell(key: &str, v: Option<&Outcome>, raw: Option<&Outcome>) -> String {
    match v {
        None => "-".into(),
        Some(Err(e)) => {
            if e.starts_with("timeout") {
                "FAIL (timeout)".into()
            } else {
                let mut e = e.replace('\n', " ");
                if e.len() > 60 {
                    let cut = (0..=60).rev().find(|&i| e.is_char_boundary(i)).unwrap_or(0);
                    e.truncate(cut);
                    e.push('…');
                }
                format!("FAIL ({e})")
            }
        }
        Some(Ok(x)) => {
            let base = format_value(key, *x);
            match raw {
                Some(Ok(r)) if *r > 0.0 => format!("{base} ({:.2}×)", x / r),
                _ => base,
            }
        }
    }
}

fn print_table(kinds: &[ClientKind], results: &HashMap<&'static str, BTreeMap<String, Outcome>>) {
    let raw = results.get("raw");
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
            let r = results.get(k.id());
            row.push(cell(
                m.key,
                r.and_then(|r| r.get(m.key)),
                raw.and_then(|r| r.get(m.key)),
            ));
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

/// The targets, for the switchboard columns.
fn check_targets(kinds: &[ClientKind], results: &HashMap<&'static str, BTreeMap<String, Outcome>>) {
    let get = |client: &str, key: &str| -> Option<Outcome> {
        results.get(client).and_then(|r| r.get(key)).cloned()
    };
    println!();
    println!("targets:");
    for kind in kinds
        .iter()
        .filter(|k| matches!(k, ClientKind::SbModern | ClientKind::SbLegacy))
    {
        let checks: [(&str, &str, f64, bool); 4] = [
            ("seq_p50_us", "sequential p50 <= 2x raw", 2.0, true),
            ("throughput", "calls/s >= 0.5x raw", 0.5, false),
            ("blob_16m_ms", "16 MiB <= 2x raw and succeeds", 2.0, true),
            ("cold_ms", "cold connect <= 1.3x raw", 1.3, true),
        ];
        for (key, what, bound, upper) in checks {
            let verdict = match (get(kind.id(), key), get("raw", key)) {
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
            println!("  {:<22} {:<32} {verdict}", kind.title(), what);
        }
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
    let kinds: Vec<ClientKind> = opts.only.clone().unwrap_or_else(|| CLIENTS.to_vec());
    let plan = Plan::new(opts.quick, opts.smoke, opts.timeout);
    let rounds = opts.rounds.unwrap_or(if opts.quick { 1 } else { 5 });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("hotpath: server {SERVER}");
    println!(
        "hotpath: {} run, {rounds} round(s), clients interleaved; each client in its own process \
         on a tokio multi_thread runtime (default worker_threads = {} = available_parallelism), \
         workload in a spawned task",
        if opts.smoke {
            "smoke (cargo test: checks every metric works; the numbers mean nothing)"
        } else if opts.quick {
            "quick"
        } else {
            "full"
        },
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!(
        "hotpath: per round: sequential {} calls after {} warm-up; throughput {} calls with \
         {IN_FLIGHT} in flight; 1 MiB x{}, 16 MiB x{}; cold connect x{}; per-metric timeout {} s",
        plan.sequential,
        plan.warmup,
        plan.throughput,
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
                    eprintln!("hotpath: {} failed: {e}", kind.title());
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
                kind.title(),
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
        println!(
            "hotpath: {:<22} server --era {:<6} negotiated {}",
            kind.title(),
            kind.server_era(),
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
        println!("each value: the median of the {rounds} rounds' values; (n×) = ratio to raw");
    } else {
        println!("(n×) = ratio to raw");
    }
    print_table(&kinds, &results);
    if opts.smoke {
        println!("\ntargets: not judged in a smoke run (use `cargo bench`)");
    } else {
        check_targets(&kinds, &results);
    }
}

fn main() {
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
