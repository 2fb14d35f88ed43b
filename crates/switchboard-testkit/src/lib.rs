//! A configurable MCP (Model Context Protocol) test server.
//!
//! Used by switchboard's tests, benchmarks and CLI demo. It speaks
//! newline-delimited JSON-RPC over any `AsyncRead`/`AsyncWrite` pair (see
//! [`serve`]) or over stdin/stdout (see [`run_stdio_main`]), and HTTP
//! (Streamable HTTP, legacy HTTP+SSE and WebSocket, see [`serve_http`]); it
//! supports the
//! legacy `initialize` era, the modern stateless era (`server/discover`,
//! per-request `_meta`) or both, and can be told to misbehave in specific
//! ways (see [`Fault`]).
//!
//! It deliberately does not depend on the `switchboard` crates.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

mod authserver;
mod b64;
mod config;
mod features;
mod http;
mod server;
mod tasks;

pub use authserver::{
    ADMIN_TOOL, AuthConfig, AuthQuirk, DEFAULT_TOKEN_TTL_SECS, SCOPE_ADMIN, SCOPE_READ,
};
pub use config::{
    ALL_HTTP_TRANSPORTS, DEFAULT_MODERN_VERSION, DEFAULT_SERVER_NAME, Era, Fault, HttpResponseMode,
    HttpTransport, LATEST_LEGACY_VERSION, LEGACY_VERSIONS, ServerConfig, USAGE,
};
pub use http::serve_http;

use server::{Action, AsyncKind, Shared};

/// The exact (compact) input schema of the `schema_rich` tool. The server
/// emits exactly these bytes inside `tools/list`.
pub const SCHEMA_RICH_INPUT_SCHEMA: &str = concat!(
    r##"{"type":"object","properties":{"target":{"$ref":"#/$defs/target"},"##,
    r##""mode":{"type":"string","enum":["thorough","fast"],"default":"fast"},"##,
    r##""options":{"type":"object","properties":{"retries":{"type":"integer","minimum":0},"##,
    r##""labels":{"type":"array","items":{"type":"string"}}},"additionalProperties":false}},"##,
    r##""required":["target"],"$defs":{"target":{"type":"object","properties":{"##,
    r##""zone":{"type":"string"},"id":{"type":"integer"}},"required":["zone","id"],"##,
    r##""additionalProperties":false}},"additionalProperties":false}"##
);

/// The 1x1 PNG returned by the `image` tool (base64).
pub const TINY_PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The non-JSON line written by the `garbage` fault (without the newline).
pub const GARBAGE_LINE: &str = "this is not json";

const GARBAGE_LINE_NL: &[u8] = b"this is not json\n";

/// Names of the built-in tools, in `tools/list` order.
pub const TOOL_NAMES: [&str; 33] = [
    "echo",
    "add",
    "blob",
    "slow",
    "progress",
    "image",
    "error",
    "fail",
    "exit",
    "hang",
    "long_line",
    "spawn_grandchild",
    "schema_rich",
    "sample",
    "ask",
    "ask_url",
    "needs_url",
    "roots",
    "roots_changes",
    "multi",
    "state_only",
    "forever",
    "mrtr_ids",
    "flood",
    "add_tool",
    "touch",
    "close_subscriptions",
    "hits",
    "slow_task",
    "must_task",
    "input_task",
    "weather",
    "bad_weather",
];

/// The server asked for process termination (the `exit` tool or the
/// `exit-before-init` fault). [`serve`] returns it wrapped in an
/// [`io::Error`]; [`run_stdio_main`] turns it into the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerExit {
    /// The requested exit code.
    pub code: i32,
}

impl ServerExit {
    /// Extract the exit code if `err` was produced by a [`ServerExit`].
    pub fn from_io_error(err: &io::Error) -> Option<i32> {
        err.get_ref()
            .and_then(|e| e.downcast_ref::<ServerExit>())
            .map(|e| e.code)
    }
}

impl fmt::Display for ServerExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "server exit requested with code {}", self.code)
    }
}

impl std::error::Error for ServerExit {}

/// Messages from the read loop / request tasks to the write loop.
#[derive(Debug)]
pub(crate) enum Out {
    Msg(Vec<u8>),
    Exit(i32),
}

pub(crate) type OutTx = mpsc::UnboundedSender<Out>;

fn encode(msg: &Value) -> Vec<u8> {
    let mut buf = Vec::with_capacity(256);
    // Serializing a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut buf, msg);
    buf.push(b'\n');
    buf
}

pub(crate) fn send(tx: &OutTx, msg: &Value) {
    // The receiver only goes away when the server is shutting down.
    let _ = tx.send(Out::Msg(encode(msg)));
}

/// Serve newline-delimited JSON-RPC from `reader` to `writer` until EOF on
/// `reader`.
///
/// Requests are handled concurrently where it matters (`slow`, `progress`,
/// `hang` run in tasks owned by this function). On EOF, pending `hang`
/// calls are dropped and other in-flight requests are completed before
/// returning.
///
/// Returns an error wrapping [`ServerExit`] when the configuration or a
/// tool asks the server to exit (see [`ServerExit::from_io_error`]); in that
/// case nothing more is written.
pub async fn serve<R, W>(config: ServerConfig, reader: R, writer: W) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    let garbage = config.has_fault(Fault::Garbage);
    let shared = Arc::new(Shared::new(config)?);
    write_startup_stderr(&shared.config).await;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::try_join!(
        read_loop(shared, reader, tx),
        write_loop(writer, rx, garbage)
    )?;
    Ok(())
}

pub(crate) async fn write_startup_stderr(config: &ServerConfig) {
    if config.stderr_lines.is_empty() && config.stderr_flood == 0 {
        return;
    }
    let mut stderr = tokio::io::stderr();
    for line in &config.stderr_lines {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        let _ = stderr.write_all(&buf).await;
    }
    let mut remaining = config.stderr_flood;
    if remaining > 0 {
        const LINE: &[u8] =
            b"switchboard-testserver stderr flood: lorem ipsum dolor sit amet consectetur\n";
        let mut chunk = Vec::with_capacity(64 * 1024);
        while chunk.len() + LINE.len() <= 64 * 1024 {
            chunk.extend_from_slice(LINE);
        }
        while remaining >= chunk.len() {
            let _ = stderr.write_all(&chunk).await;
            remaining -= chunk.len();
        }
        if remaining > 0 {
            // Keep the flood line-oriented: end the final piece with a newline.
            chunk.truncate(remaining);
            if let Some(b) = chunk.last_mut() {
                *b = b'\n';
            }
            let _ = stderr.write_all(&chunk).await;
        }
    }
    let _ = stderr.flush().await;
}

async fn write_loop<W>(
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<Out>,
    garbage: bool,
) -> io::Result<()>
where
    W: AsyncWrite + Unpin + Send,
{
    if garbage {
        writer.write_all(GARBAGE_LINE_NL).await?;
        writer.flush().await?;
    }
    while let Some(out) = rx.recv().await {
        match out {
            Out::Msg(bytes) => {
                if garbage {
                    writer.write_all(GARBAGE_LINE_NL).await?;
                }
                writer.write_all(&bytes).await?;
                writer.flush().await?;
            }
            Out::Exit(code) => return Err(io::Error::other(ServerExit { code })),
        }
    }
    writer.flush().await
}

/// Key identifying an in-flight request (its id, serialized).
pub(crate) fn id_key(id: &Value) -> String {
    id.to_string()
}

#[derive(Debug)]
struct InFlight {
    handle: AbortHandle,
    hang: bool,
}

async fn read_loop<R>(shared: Arc<Shared>, reader: R, tx: OutTx) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
{
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line = Vec::with_capacity(8 * 1024);
    let mut conn = Conn::new(shared, tx);

    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).await? == 0 {
            break;
        }
        conn.reap();
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        conn.shared.record(&line);

        let msg: Value = match serde_json::from_slice(trimmed) {
            Ok(v) => v,
            Err(_) => {
                send(&conn.tx, &server::parse_error());
                continue;
            }
        };
        if let Some(code) = conn.handle(msg) {
            let _ = conn.tx.send(Out::Exit(code));
            return Ok(());
        }
    }

    // EOF: drop hanging calls, let the rest finish.
    conn.finish().await;
    Ok(())
}

/// One message-oriented connection (stdio, WebSocket, legacy HTTP+SSE):
/// incoming messages are handled one by one, slow requests run concurrently
/// in tasks owned by the connection, and every outgoing message goes to `tx`.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) shared: Arc<Shared>,
    pub(crate) tx: OutTx,
    tasks: JoinSet<String>,
    in_flight: HashMap<String, InFlight>,
}

impl Conn {
    pub(crate) fn new(shared: Arc<Shared>, tx: OutTx) -> Conn {
        let notify_tx = tx.clone();
        shared.set_notifier(Arc::new(move |msg: Value| send(&notify_tx, &msg)));
        Conn {
            shared,
            tx,
            tasks: JoinSet::new(),
            in_flight: HashMap::new(),
        }
    }

    /// Forget finished request tasks.
    pub(crate) fn reap(&mut self) {
        while let Some(res) = self.tasks.try_join_next_with_id() {
            if let Ok((task_id, key)) = res
                && self
                    .in_flight
                    .get(&key)
                    .is_some_and(|f| f.handle.id() == task_id)
            {
                self.in_flight.remove(&key);
            }
        }
    }

    /// Handle one parsed incoming message (or batch). Returns `Some(code)`
    /// when the server must exit with `code` (nothing more is sent).
    pub(crate) fn handle(&mut self, msg: Value) -> Option<i32> {
        let shared = &self.shared;
        let tx = &self.tx;
        if let Value::Array(batch) = msg {
            if batch.is_empty() {
                send(tx, &server::invalid_request());
                return None;
            }
            let mut replies = Vec::with_capacity(batch.len());
            let mut jobs = Vec::new();
            for item in batch {
                match shared.dispatch(item) {
                    Action::None => {}
                    Action::Reply(v) | Action::ForgetSession(v) => replies.push(Some(v)),
                    Action::Cancel(id) => cancel(&mut self.in_flight, &id),
                    Action::Exit(code) => return Some(code),
                    Action::Async(job) => {
                        jobs.push((replies.len(), job));
                        replies.push(None);
                    }
                }
            }
            if jobs.is_empty() {
                if !replies.is_empty() {
                    send(tx, &Value::Array(replies.into_iter().flatten().collect()));
                }
            } else {
                let shared = Arc::clone(shared);
                let tx = tx.clone();
                self.tasks.spawn(async move {
                    for (slot, job) in jobs {
                        let reply = shared.run_job(job, |n| send(&tx, &n)).await;
                        replies[slot] = Some(reply);
                    }
                    send(&tx, &Value::Array(replies.into_iter().flatten().collect()));
                    String::new()
                });
            }
            return None;
        }

        match shared.dispatch(msg) {
            Action::None => {}
            Action::Reply(v) | Action::ForgetSession(v) => send(tx, &v),
            Action::Cancel(id) => cancel(&mut self.in_flight, &id),
            Action::Exit(code) => return Some(code),
            Action::Async(job) => {
                let key = id_key(&job.id);
                // Jobs that wait on the client cannot finish after EOF.
                let hang = matches!(
                    job.kind,
                    AsyncKind::Hang
                        | AsyncKind::Interact { .. }
                        | AsyncKind::Listen { .. }
                        | AsyncKind::TaskResult { .. }
                );
                let shared = Arc::clone(shared);
                let tx = tx.clone();
                let task_key = key.clone();
                let handle = self.tasks.spawn(async move {
                    let reply = shared.run_job(job, |n| send(&tx, &n)).await;
                    send(&tx, &reply);
                    task_key
                });
                self.in_flight.insert(key, InFlight { handle, hang });
            }
        }
        None
    }

    /// End of input: drop hanging calls, let the rest finish.
    pub(crate) async fn finish(mut self) {
        for f in self.in_flight.values() {
            if f.hang {
                f.handle.abort();
            }
        }
        while self.tasks.join_next().await.is_some() {}
    }
}

fn cancel(in_flight: &mut HashMap<String, InFlight>, id: &Value) {
    if let Some(f) = in_flight.remove(&id_key(id)) {
        f.handle.abort();
    }
}

/// Entry point of the `switchboard-testserver` binary (and the CLI's demo
/// subcommand): parses `args` (without the program name), serves
/// stdin/stdout (or HTTP with `--http ADDR`) and exits the process.
///
/// With `--http`, binds ADDR, prints exactly one line
/// `listening on http://IP:PORT` to stdout (with `--auth`, a second one:
/// `auth issuer URL`) and serves until killed (or until the `exit` tool is
/// called).
///
/// Exit codes: 0 on EOF, 2 on bad arguments, the requested code for the
/// `exit` tool, 1 for `exit-before-init` and I/O errors (including a failed
/// bind).
pub fn run_stdio_main(args: Vec<String>) -> ! {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprint!("{USAGE}");
        std::process::exit(0);
    }
    let config = match ServerConfig::from_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("switchboard-testserver: {e}");
            eprint!("{USAGE}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("switchboard-testserver: cannot start runtime: {e}");
            std::process::exit(1);
        }
    };
    let result = match config.http.clone() {
        Some(addr) => runtime.block_on(http::run_http_main(config, &addr)),
        None => runtime.block_on(serve(config, tokio::io::stdin(), tokio::io::stdout())),
    };
    let code = match result {
        Ok(()) => 0,
        Err(e) => match ServerExit::from_io_error(&e) {
            Some(code) => code,
            None if e.kind() == io::ErrorKind::BrokenPipe => 0,
            None => {
                eprintln!("switchboard-testserver: {e}");
                1
            }
        },
    };
    // Do not wait for the blocking stdin reader: exit right away.
    std::process::exit(code)
}

#[cfg(test)]
mod tests;
