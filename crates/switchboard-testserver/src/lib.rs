//! A configurable MCP (Model Context Protocol) server over stdio for
//! testing MCP clients: both protocol eras, every feature, and faults on
//! request.
//!
//! It speaks newline-delimited JSON-RPC over any `AsyncRead`/`AsyncWrite`
//! pair (see [`serve`]) or over stdin/stdout (see [`run_stdio_main`] and the
//! `switchboard-testserver` binary); it supports the legacy `initialize` era,
//! the modern stateless era (`server/discover`, per-request `_meta`) or both,
//! and can be told to misbehave in specific ways (see [`Fault`]). It serves
//! tools, resources, prompts, sampling/elicitation/roots requests, logging,
//! subscriptions and tasks (see [`TOOL_NAMES`] and [`USAGE`]).
//!
//! ```
//! use switchboard_testserver::{Era, ServerConfig, serve};
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let (client, server) = tokio::io::duplex(64 * 1024);
//! let (server_read, server_write) = tokio::io::split(server);
//! let config = ServerConfig::default().with_era(Era::Legacy);
//! let served = tokio::spawn(serve(config, server_read, server_write));
//!
//! let (client_read, mut client_write) = tokio::io::split(client);
//! client_write
//!     .write_all(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
//!     .await?;
//! client_write.write_all(b"\n").await?;
//! let mut line = String::new();
//! BufReader::new(client_read).read_line(&mut line).await?;
//! assert_eq!(line.trim(), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
//!
//! drop(client_write); // EOF: the server returns
//! served.await.unwrap()?;
//! # Ok(())
//! # }
//! ```
//!
//! As a program (`cargo install switchboard-testserver`, or
//! `cargo run -p switchboard-testserver -- --help` in the workspace):
//!
//! ```text
//! switchboard-testserver --era legacy --fault exit-before-init
//! ```
//!
//! ## Cargo features
//!
//! None. The crate depends on `serde_json` and `tokio` only; it deliberately
//! does not depend on the `switchboard` crates, so it tests a client rather
//! than agreeing with it. HTTP transports and an OAuth authorization server
//! in front of this server live in the unpublished `switchboard-testkit`,
//! which is why [`ServerConfig`] carries HTTP settings this crate does not
//! serve.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

mod apps;
#[doc(hidden)]
pub mod auth;
#[doc(hidden)]
pub mod b64;
mod config;
mod features;
mod fixture;
#[doc(hidden)]
pub mod server;
pub mod skills;
mod suite_tasks;
mod tasks;

pub use auth::{AuthConfig, AuthQuirk, DEFAULT_TOKEN_TTL_SECS};
#[doc(hidden)]
pub use config::HTTP_USAGE;
pub use config::{
    ALL_HTTP_TRANSPORTS, DEFAULT_MODERN_VERSION, DEFAULT_SERVER_NAME, Era, Fault, HttpResponseMode,
    HttpTransport, LATEST_LEGACY_VERSION, LEGACY_VERSIONS, ServerConfig, USAGE,
};
pub use fixture::{SUITE_PROMPT_NAMES, SUITE_TOOL_NAMES};

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
#[doc(hidden)]
#[derive(Debug)]
pub enum Out {
    /// One framed message.
    Msg(Vec<u8>),
    /// Stop writing; the server exits with this code.
    Exit(i32),
}

#[doc(hidden)]
pub type OutTx = mpsc::UnboundedSender<Out>;

fn encode(msg: &Value) -> Vec<u8> {
    let mut buf = Vec::with_capacity(256);
    // Serializing a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut buf, msg);
    buf.push(b'\n');
    buf
}

#[doc(hidden)]
pub fn send(tx: &OutTx, msg: &Value) {
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

#[doc(hidden)]
pub async fn write_startup_stderr(config: &ServerConfig) {
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
#[doc(hidden)]
pub fn id_key(id: &Value) -> String {
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
#[doc(hidden)]
#[derive(Debug)]
pub struct Conn {
    pub shared: Arc<Shared>,
    pub tx: OutTx,
    tasks: JoinSet<String>,
    in_flight: HashMap<String, InFlight>,
}

impl Conn {
    pub fn new(shared: Arc<Shared>, tx: OutTx) -> Conn {
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
    pub fn reap(&mut self) {
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
    pub fn handle(&mut self, msg: Value) -> Option<i32> {
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
                ) || matches!(&job.kind, AsyncKind::Fixture(j) if j.waits_on_client());
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
    pub async fn finish(mut self) {
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

/// Entry point of the `switchboard-testserver` binary (and the
/// `switchboard` CLI's demo): parses `args` (without the program name),
/// serves stdin/stdout and exits the process.
///
/// Exit codes: 0 on EOF, 2 on bad arguments (and for `--http`: this crate
/// serves stdio only), the requested code for the `exit` tool, 1 for
/// `exit-before-init` and I/O errors.
pub fn run_stdio_main(args: Vec<String>) -> ! {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprint!("{USAGE}");
        std::process::exit(0);
    }
    let config = match ServerConfig::from_args(args) {
        Ok(c) if c.http.is_some() => {
            eprintln!(
                "switchboard-testserver: --http is not served here (stdio only); \
                 switchboard-testkit's HTTP front end serves it"
            );
            std::process::exit(2);
        }
        Ok(c) => c,
        Err(e) => {
            eprintln!("switchboard-testserver: {e}");
            eprint!("{USAGE}");
            std::process::exit(2);
        }
    };
    exit_with(run_in_runtime(serve(
        config,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )))
}

/// Run `server` to completion on a fresh current-thread runtime; an error
/// if the runtime cannot start.
#[doc(hidden)]
pub fn run_in_runtime<F: std::future::Future<Output = io::Result<()>>>(
    server: F,
) -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| io::Error::other(format!("cannot start runtime: {e}")))?;
    runtime.block_on(server)
}

/// Exit the process with the code a server's `result` calls for: 0 for a
/// clean end or a closed pipe, the [`ServerExit`] code, 1 (with the error
/// on stderr) otherwise. Does not wait for the blocking stdin reader.
#[doc(hidden)]
pub fn exit_with(result: io::Result<()>) -> ! {
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
    std::process::exit(code)
}

#[cfg(test)]
mod tests;
