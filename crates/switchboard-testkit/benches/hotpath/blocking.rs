//! The blocking floors (issue 35): hand-written clients on blocking
//! `std::io`, everything on ONE OS thread. The child process that runs one
//! of them builds no async runtime at all: `child_main` runs [`run_client`]
//! on one spawned thread and `main` only waits for it (spawned so that the
//! allocator treats it as it treats the async clients' worker threads; see
//! `child_main`), so its CPU time and peak RSS are the client's alone.
//!
//! - `fast-block` (stdio): `std::process::Command` with piped stdin and
//!   stdout, a 64 KiB `BufReader` over stdout, one `write_all` per request
//!   line. With 64 in flight it pipelines as a blocking client does: the
//!   first 64 requests in one `write_all`; then each time it reads, it takes
//!   every complete line already buffered (no further read) and writes as
//!   many new requests in ONE `write_all`; answers matched by id.
//! - `fast-block-http`: HTTP/1.1 keep-alive over `std::net::TcpStream`
//!   (`TCP_NODELAY`), the requests and heads of `raw_tcp.rs`'s pure
//!   functions, a `Content-Length` or chunked body. With 64 in flight: 64
//!   keep-alive connections with one request each, driven from this thread
//!   by level-triggered `epoll` (rustix, safe) over the blocking sockets: a
//!   socket `epoll` calls readable gets one `read`, which cannot block; each
//!   answer sends the next request on its connection. Not HTTP/1.1
//!   pipelining, though the fast server answers pipelined requests in order:
//!   a pipelining client batches the server's reads and skips its per-request
//!   readiness work, which no MCP client can do (a slow tool call would hold
//!   every call queued behind it on the connection), so it would measure a
//!   different server workload, not a faster client.
//!
//! Messages are built with `json!` and answers parsed into a `Value`, as the
//! async floors (`RawClient`, `raw_tcp.rs`) do: the two floors differ in
//! their I/O only. Each HTTP socket read gives up after the per-metric
//! timeout; a stdio read has no timeout (the parent's limit on the whole
//! child process bounds it).

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::event::{Timespec, epoll};
use serde_json::{Map, Value, json};

use super::fast_server::head_end;
use super::raw_tcp::{Chunked, Head, answer, delete_request, parse_head, post_request, split_url};
use super::{
    ClientKind, ECHO_TEXT, IN_FLIGHT, MIB, Outcome, Plan, Transport, blob_args, cpu_time,
    echo_args, fail, initialize_params, into_result, median, ms, record_connect_failure,
    record_sequential, record_throughput, sequential_stats, text_len, us, vm_hwm_mib,
};

/// The calls both blocking clients answer, and the measurements on top.
trait Blocking {
    /// The result of one request (`Err` for a JSON-RPC error).
    fn request(&mut self, method: &str, params: Value) -> Result<Value, String>;

    /// Calls per second and client CPU µs per call with `IN_FLIGHT` echo
    /// calls in flight, until `plan.throughput` calls or its time cap.
    fn throughput(&mut self, plan: &Plan) -> Result<(f64, f64), String>;

    fn protocol_version(&self) -> &str;

    /// The length of the first text block of a tool's result.
    fn call_tool(&mut self, name: &str, args: Map<String, Value>) -> Result<usize, String> {
        text_len(&self.request("tools/call", tool_params(name, args))?)
    }

    fn echo(&mut self) -> Result<(), String> {
        let n = self.call_tool("echo", echo_args())?;
        check_len("echo", n, ECHO_TEXT.len())
    }

    fn blob(&mut self, size: usize) -> Result<(), String> {
        let n = self.call_tool("blob", blob_args(size))?;
        check_len("blob", n, size)
    }

    fn list_tools(&mut self) -> Result<usize, String> {
        let r = self.request("tools/list", json!({}))?;
        r["tools"]
            .as_array()
            .map(Vec::len)
            .ok_or_else(|| format!("unexpected tools/list result: {r}"))
    }
}

fn tool_params(name: &str, args: Map<String, Value>) -> Value {
    json!({"name": name, "arguments": args})
}

fn request_json(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn check_len(tool: &str, got: usize, want: usize) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{tool} returned {got} bytes, expected {want}"))
    }
}

/// The id of a response (`None` for a notification or a server request).
fn response_id(msg: &Value) -> Option<u64> {
    if msg.get("method").is_some() {
        return None;
    }
    msg.get("id").and_then(Value::as_u64)
}

/// An echo answer: its text must be the echoed one.
fn check_echo(result: &Value) -> Result<(), String> {
    check_len("echo", text_len(result)?, ECHO_TEXT.len())
}

// ---------------------------------------------------------------------------
// stdio: an NDJSON pipe.
// ---------------------------------------------------------------------------

/// The server process with its pipes; killed and reaped on drop.
struct PipeClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    next_id: u64,
    protocol_version: String,
}

impl PipeClient {
    /// Spawns the server and opens the session: `initialize`, then
    /// `notifications/initialized`.
    fn connect(program: &str, args: &[String]) -> Result<PipeClient, String> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(fail)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("no pipes".into());
        };
        let mut client = PipeClient {
            child,
            stdin,
            // 64 KiB: the default Linux pipe capacity, so one read per pipe-full.
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            line: Vec::with_capacity(4 * 1024),
            next_id: 1,
            protocol_version: String::new(),
        };
        let init = client.request("initialize", initialize_params("hotpath-block"))?;
        client.protocol_version = init["protocolVersion"].as_str().unwrap_or("?").to_owned();
        client.write_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(client)
    }

    fn write_line(&mut self, msg: &Value) -> Result<(), String> {
        let mut buf = serde_json::to_vec(msg).map_err(fail)?;
        buf.push(b'\n');
        self.stdin.write_all(&buf).map_err(fail)
    }

    /// The next message from the server (blocks for it).
    fn read_message(&mut self) -> Result<Value, String> {
        self.line.clear();
        if self
            .stdout
            .read_until(b'\n', &mut self.line)
            .map_err(fail)?
            == 0
        {
            return Err("connection closed".into());
        }
        serde_json::from_slice(&self.line).map_err(fail)
    }

    /// Whether a whole message is already buffered (reading it cannot block).
    fn line_buffered(&self) -> bool {
        self.stdout.buffer().contains(&b'\n')
    }

    /// Appends `n` echo requests to `batch`, their ids to `pending`.
    fn queue_echoes(&mut self, n: usize, batch: &mut Vec<u8>, pending: &mut HashSet<u64>) {
        for _ in 0..n {
            let id = self.next_id;
            self.next_id += 1;
            let msg = request_json(id, "tools/call", tool_params("echo", echo_args()));
            // Writing JSON into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *batch, &msg);
            batch.push(b'\n');
            pending.insert(id);
        }
    }
}

impl Blocking for PipeClient {
    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.write_line(&request_json(id, method, params))?;
        loop {
            let msg = self.read_message()?;
            if response_id(&msg) == Some(id) {
                return into_result(msg);
            }
        }
    }

    fn throughput(&mut self, plan: &Plan) -> Result<(f64, f64), String> {
        let total = plan.throughput;
        let mut pending: HashSet<u64> = HashSet::with_capacity(2 * IN_FLIGHT);
        let mut batch: Vec<u8> = Vec::with_capacity(IN_FLIGHT * 128);
        let cpu = cpu_time();
        let start = Instant::now();
        let deadline = start + plan.throughput_cap;
        let first = IN_FLIGHT.min(total);
        self.queue_echoes(first, &mut batch, &mut pending);
        self.stdin.write_all(&batch).map_err(fail)?;
        let (mut sent, mut done) = (first, 0);
        while done < sent {
            // One blocking read's worth: the first line, then every line
            // already buffered.
            let mut answered = 0;
            loop {
                let msg = self.read_message()?;
                if let Some(id) = response_id(&msg)
                    && pending.remove(&id)
                {
                    check_echo(&into_result(msg)?)?;
                    answered += 1;
                }
                if !self.line_buffered() {
                    break;
                }
            }
            done += answered;
            let more = if Instant::now() < deadline {
                answered.min(total - sent)
            } else {
                0
            };
            if more > 0 {
                batch.clear();
                self.queue_echoes(more, &mut batch, &mut pending);
                self.stdin.write_all(&batch).map_err(fail)?;
                sent += more;
            }
        }
        let elapsed = start.elapsed();
        let cpu = cpu_time().saturating_sub(cpu);
        let done = done.max(1);
        Ok((done as f64 / elapsed.as_secs_f64(), us(cpu) / done as f64))
    }

    fn protocol_version(&self) -> &str {
        &self.protocol_version
    }
}

impl Drop for PipeClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// HTTP/1.1 keep-alive over std `TcpStream`.
// ---------------------------------------------------------------------------

/// The initial read buffer of a connection (and the largest body read
/// through it: a larger one is read straight into its own buffer).
const CONN_BUF: usize = 64 * 1024;

/// One keep-alive connection: the socket, its read buffer (bytes
/// `pos..end` unread) and the response being read.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    head: Option<Head>,
    chunked: Option<Chunked>,
}

/// A whole response's body: in the connection's buffer, or its own.
enum Body {
    Buffered(Range<usize>),
    Owned(Vec<u8>),
}

impl Conn {
    fn open(addr: &str, timeout: Duration) -> Result<Conn, String> {
        let stream = TcpStream::connect(addr).map_err(fail)?;
        stream.set_nodelay(true).map_err(fail)?;
        stream.set_read_timeout(Some(timeout)).map_err(fail)?;
        Ok(Conn {
            stream,
            buf: vec![0; CONN_BUF],
            pos: 0,
            end: 0,
            head: None,
            chunked: None,
        })
    }

    fn body<'a>(&'a self, body: &'a Body) -> &'a [u8] {
        match body {
            Body::Buffered(r) => &self.buf[r.clone()],
            Body::Owned(v) => v,
        }
    }

    /// One `read`: blocks until bytes arrive, unless the socket is readable.
    fn fill(&mut self) -> Result<(), String> {
        if self.pos == self.end {
            (self.pos, self.end) = (0, 0);
        }
        if self.buf.len() - self.end < 4096 {
            self.buf.copy_within(self.pos..self.end, 0);
            (self.pos, self.end) = (0, self.end - self.pos);
            if self.buf.len() - self.end < 4096 {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        match self.stream.read(&mut self.buf[self.end..]) {
            Ok(0) => Err("connection closed".into()),
            Ok(n) => {
                self.end += n;
                Ok(())
            }
            Err(e) => Err(io_error(&e)),
        }
    }

    /// The response at the start of the buffer, once all of it is there
    /// (never reads).
    fn take_buffered(&mut self) -> Result<Option<(Head, Body)>, String> {
        if self.head.is_none() {
            let unread = &self.buf[self.pos..self.end];
            let Some(n) = head_end(unread) else {
                if unread.len() > 64 * 1024 {
                    return Err("response head over 64 KiB".into());
                }
                return Ok(None);
            };
            let head = parse_head(&unread[..n])?;
            self.pos += n;
            if head.chunked {
                self.chunked = Some(Chunked::default());
            }
            self.head = Some(head);
        }
        if let Some(chunked) = &mut self.chunked {
            self.pos += chunked.feed(&self.buf[self.pos..self.end])?;
            if !chunked.is_done() {
                return Ok(None);
            }
            let body = std::mem::take(&mut chunked.body);
            self.chunked = None;
            return Ok(self.head.take().map(|h| (h, Body::Owned(body))));
        }
        let n = self.head.as_ref().and_then(|h| h.length).unwrap_or(0);
        if self.end - self.pos < n {
            return Ok(None);
        }
        let body = self.pos..self.pos + n;
        self.pos += n;
        Ok(self.head.take().map(|h| (h, Body::Buffered(body))))
    }

    /// The next whole response, blocking for it. A body larger than the
    /// buffer is read straight into its own (no zero-fill, one copy of what
    /// was buffered), as the async floor does.
    fn read_response(&mut self) -> Result<(Head, Body), String> {
        loop {
            if let Some(r) = self.take_buffered()? {
                return Ok(r);
            }
            if let Some(head) = &self.head
                && !head.chunked
                && let Some(n) = head.length
                && n > CONN_BUF
            {
                let mut body = Vec::with_capacity(n);
                body.extend_from_slice(&self.buf[self.pos..self.end]);
                (self.pos, self.end) = (0, 0);
                let want = (n - body.len()) as u64;
                (&self.stream)
                    .take(want)
                    .read_to_end(&mut body)
                    .map_err(|e| io_error(&e))?;
                if body.len() < n {
                    return Err("connection closed in the body".into());
                }
                let head = self.head.take().ok_or("no head")?;
                return Ok((head, Body::Owned(body)));
            }
            self.fill()?;
        }
    }
}

fn io_error(e: &std::io::Error) -> String {
    match e.kind() {
        // A read timeout (`SO_RCVTIMEO`) shows as either.
        ErrorKind::WouldBlock | ErrorKind::TimedOut => "timeout".into(),
        _ => e.to_string(),
    }
}

/// The server's address and the session: what each request carries.
struct Target {
    addr: String,
    path: String,
    session: Option<String>,
    protocol_version: String,
}

impl Target {
    fn post(&self, conn: &mut Conn, body: &[u8]) -> Result<(), String> {
        let session = self
            .session
            .as_deref()
            .map(|s| (s, self.protocol_version.as_str()));
        let msg = post_request(&self.path, &self.addr, session, body);
        conn.stream.write_all(&msg).map_err(fail)
    }
}

struct HttpClient {
    target: Target,
    next_id: u64,
    /// The first serves sequential calls; throughput opens up to `IN_FLIGHT`.
    conns: Vec<Conn>,
    timeout: Duration,
}

impl HttpClient {
    /// `initialize` (→ `Mcp-Session-Id`), then `notifications/initialized`
    /// (→ 202), on one new connection.
    fn connect(url: &str, timeout: Duration) -> Result<HttpClient, String> {
        let (addr, path) = split_url(url)?;
        let mut client = HttpClient {
            target: Target {
                addr: addr.to_owned(),
                path: path.to_owned(),
                session: None,
                protocol_version: String::new(),
            },
            next_id: 1,
            conns: vec![Conn::open(addr, timeout)?],
            timeout,
        };
        let id = client.next_id;
        client.next_id += 1;
        let body = serde_json::to_vec(&request_json(
            id,
            "initialize",
            initialize_params("hotpath-block-http"),
        ))
        .map_err(fail)?;
        let conn = &mut client.conns[0];
        client.target.post(conn, &body)?;
        let (head, body) = conn.read_response()?;
        client.target.session = head.session.clone();
        let init = answer(&head, conn.body(&body), id)?;
        client.target.protocol_version = init["protocolVersion"].as_str().unwrap_or("?").to_owned();
        let body = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        client.target.post(conn, body)?;
        let (head, _) = conn.read_response()?;
        if head.status != 202 {
            return Err(format!("notifications/initialized: HTTP {}", head.status));
        }
        Ok(client)
    }

    /// Sends one echo call on `conn`; returns its id.
    fn send_echo(target: &Target, next_id: &mut u64, conn: &mut Conn) -> Result<u64, String> {
        let id = *next_id;
        *next_id += 1;
        let msg = request_json(id, "tools/call", tool_params("echo", echo_args()));
        target.post(conn, &serde_json::to_vec(&msg).map_err(fail)?)?;
        Ok(id)
    }

    /// Ends the session (`DELETE`, answer read) on the first connection.
    fn close(mut self) {
        if let (Some(session), Some(conn)) = (&self.target.session, self.conns.first_mut()) {
            let head = delete_request(
                &self.target.path,
                &self.target.addr,
                (session, &self.target.protocol_version),
            );
            // Untimed, and after a failed metric the connection may be
            // mid-answer: bounded as the async clients' close is.
            let _ = conn.stream.set_read_timeout(Some(Duration::from_secs(5)));
            if conn.stream.write_all(head.as_bytes()).is_ok() {
                let _ = conn.read_response();
            }
        }
    }
}

impl Blocking for HttpClient {
    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let body = serde_json::to_vec(&request_json(id, method, params)).map_err(fail)?;
        let conn = &mut self.conns[0];
        self.target.post(conn, &body)?;
        let (head, body) = conn.read_response()?;
        answer(&head, conn.body(&body), id)
    }

    fn throughput(&mut self, plan: &Plan) -> Result<(f64, f64), String> {
        let total = plan.throughput;
        let width = IN_FLIGHT.min(total);
        let timeout = Timespec {
            tv_sec: self.timeout.as_secs() as _,
            tv_nsec: 0,
        };
        let cpu = cpu_time();
        let start = Instant::now();
        let deadline = start + plan.throughput_cap;
        let poller = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(fail)?;
        // Connections open as the calls start (inside the timed window), as
        // a pooled client's do under load; one request in flight on each.
        let mut in_flight = vec![0u64; width];
        for (i, id) in in_flight.iter_mut().enumerate() {
            if self.conns.len() <= i {
                self.conns
                    .push(Conn::open(&self.target.addr, self.timeout)?);
            }
            let conn = &mut self.conns[i];
            epoll::add(
                &poller,
                &conn.stream,
                epoll::EventData::new_u64(i as u64),
                epoll::EventFlags::IN,
            )
            .map_err(fail)?;
            *id = Self::send_echo(&self.target, &mut self.next_id, conn)?;
        }
        let (mut sent, mut done) = (width, 0);
        let mut events: Vec<epoll::Event> = Vec::with_capacity(width);
        while done < sent {
            events.clear();
            epoll::wait(
                &poller,
                rustix::buffer::spare_capacity(&mut events),
                Some(&timeout),
            )
            .map_err(fail)?;
            if events.is_empty() {
                return Err("timeout".into());
            }
            for event in &events {
                let i = event.data.u64() as usize;
                let conn = &mut self.conns[i];
                conn.fill()?; // readable: this read does not block
                if let Some((head, body)) = conn.take_buffered()? {
                    check_echo(&answer(&head, conn.body(&body), in_flight[i])?)?;
                    done += 1;
                    if sent < total && Instant::now() < deadline {
                        in_flight[i] = Self::send_echo(&self.target, &mut self.next_id, conn)?;
                        sent += 1;
                    }
                }
            }
        }
        let elapsed = start.elapsed();
        let cpu = cpu_time().saturating_sub(cpu);
        // Registrations end with the epoll descriptor (dropped here).
        drop(poller);
        let done = done.max(1);
        Ok((done as f64 / elapsed.as_secs_f64(), us(cpu) / done as f64))
    }

    fn protocol_version(&self) -> &str {
        &self.target.protocol_version
    }
}

/// The fast server serving HTTP (`--fast-server http`), killed and reaped on
/// drop.
struct HttpServer {
    child: Child,
    url: String,
    /// Kept open: the server must not get EPIPE on stdout.
    _stdout: BufReader<ChildStdout>,
}

impl HttpServer {
    fn start(kind: ClientKind) -> Result<HttpServer, String> {
        let (program, args) = kind.http_server();
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(fail)?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("no stdout".into());
        };
        let mut server = HttpServer {
            child,
            url: String::new(),
            _stdout: BufReader::new(stdout),
        };
        let mut line = String::new();
        server._stdout.read_line(&mut line).map_err(fail)?;
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .ok_or_else(|| format!("unexpected server announcement {line:?}"))?;
        server.url = format!("{base}/mcp");
        Ok(server)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// The measurements (on this thread).
// ---------------------------------------------------------------------------

fn measure_sequential(client: &mut impl Blocking, plan: &Plan) -> Result<(f64, f64, f64), String> {
    for _ in 0..plan.warmup {
        client.echo()?;
    }
    let mut samples = Vec::with_capacity(plan.sequential);
    let cpu = cpu_time();
    for _ in 0..plan.sequential {
        let t = Instant::now();
        client.echo()?;
        samples.push(t.elapsed());
    }
    Ok(sequential_stats(samples, cpu_time().saturating_sub(cpu)))
}

fn measure_blob(client: &mut impl Blocking, size: usize, reps: usize) -> Outcome {
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        client.blob(size)?;
        samples.push(t.elapsed());
    }
    Ok(ms(median(samples)))
}

/// The warm metrics on one connection, in the async clients' order.
fn measure_warm(
    client: &mut impl Blocking,
    plan: &Plan,
    wanted: &dyn Fn(&str) -> bool,
    out: &mut BTreeMap<&'static str, Outcome>,
) {
    let sequential = if wanted("seq_p50_us") {
        measure_sequential(client, plan)
    } else {
        Err("skipped".into())
    };
    record_sequential(out, sequential);
    let throughput = if wanted("throughput") {
        client.throughput(plan)
    } else {
        Err("skipped".into())
    };
    record_throughput(out, throughput);
    if wanted("blob_1m_ms") {
        out.insert("blob_1m_ms", measure_blob(client, MIB, plan.blob_1m_reps));
    }
    if wanted("blob_16m_ms") {
        out.insert(
            "blob_16m_ms",
            measure_blob(client, 16 * MIB, plan.blob_16m_reps),
        );
    }
}

/// stdio: spawn → `initialize` → `notifications/initialized` → the
/// `tools/list` answer. HTTP: a fresh server per sample (untimed), then TCP
/// connect → the same. `second`: HTTP, after one untimed session with the
/// same server (this client remembers nothing, so it is the first again).
fn measure_cold(kind: ClientKind, plan: &Plan, second: bool) -> Outcome {
    let mut samples = Vec::with_capacity(plan.cold_reps);
    // As the async clients' `measure_cold`: one warm server for every sample.
    let one_server = std::env::var_os(super::COLD_ONE_SERVER_ENV).is_some();
    let mut shared = None;
    if one_server && kind.transport() == Transport::Http {
        let server = HttpServer::start(kind)?;
        let mut client = HttpClient::connect(&server.url, plan.timeout)?;
        client.list_tools()?;
        client.close();
        shared = Some(server);
    }
    for _ in 0..plan.cold_reps {
        let (elapsed, n) = match kind.transport() {
            Transport::Stdio => {
                let (program, args) = kind.stdio_server();
                let t = Instant::now();
                let mut client = PipeClient::connect(&program, &args)?;
                let n = client.list_tools()?;
                let elapsed = t.elapsed();
                drop(client);
                (elapsed, n)
            }
            Transport::Http => {
                let server = match shared.take() {
                    Some(server) => server,
                    None => HttpServer::start(kind)?,
                };
                if second {
                    let mut client = HttpClient::connect(&server.url, plan.timeout)?;
                    client.list_tools()?;
                    client.close();
                }
                let t = Instant::now();
                let mut client = HttpClient::connect(&server.url, plan.timeout)?;
                let n = client.list_tools()?;
                let elapsed = t.elapsed();
                client.close();
                if one_server {
                    shared = Some(server);
                }
                (elapsed, n)
            }
        };
        if n == 0 {
            return Err("tools/list returned no tools".into());
        }
        samples.push(elapsed);
    }
    Ok(ms(median(samples)))
}

/// Runs one blocking client's metrics on this thread (the child process of
/// `fast-block` / `fast-block-http`).
pub(crate) fn run_client(
    kind: ClientKind,
    plan: Plan,
    skip: &[String],
) -> (BTreeMap<&'static str, Outcome>, String) {
    let mut out: BTreeMap<&'static str, Outcome> = BTreeMap::new();
    let wanted = |key: &str| !skip.iter().any(|s| s == key);
    let protocol = match kind.transport() {
        Transport::Stdio => {
            let (program, args) = kind.stdio_server();
            match PipeClient::connect(&program, &args) {
                Ok(mut client) => {
                    measure_warm(&mut client, &plan, &wanted, &mut out);
                    Some(client.protocol_version().to_owned())
                }
                Err(e) => {
                    record_connect_failure(&mut out, &e);
                    None
                }
            }
        }
        Transport::Http => {
            let connected = HttpServer::start(kind).and_then(|server| {
                let client = HttpClient::connect(&server.url, plan.timeout)?;
                Ok((server, client))
            });
            match connected {
                Ok((server, mut client)) => {
                    measure_warm(&mut client, &plan, &wanted, &mut out);
                    let version = client.protocol_version().to_owned();
                    client.close();
                    drop(server);
                    Some(version)
                }
                Err(e) => {
                    record_connect_failure(&mut out, &e);
                    None
                }
            }
        }
    };
    if wanted("cold_ms") {
        out.insert("cold_ms", measure_cold(kind, &plan, false));
    }
    if wanted("cold_known_ms") && kind.transport() == Transport::Http {
        out.insert("cold_known_ms", measure_cold(kind, &plan, true));
    }
    out.insert("rss_mib", vm_hwm_mib());
    let protocol = protocol.map_or_else(|| "?".into(), |v| format!("{v} (initialize)"));
    (out, protocol)
}
