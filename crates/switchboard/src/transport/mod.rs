//! Transports move whole JSON-RPC messages and leave their meaning to the
//! engine. stdio, WebSocket, legacy HTTP+SSE and the in-memory pair never
//! parse them; Streamable HTTP reads the few fields its rules need (an
//! outgoing message's method, id, protocol version and routed name for
//! its headers, `initialize`'s result, each tool's `x-mcp-header`) and
//! may rewrite an answer it must (a `tools/list` result without the tools
//! whose header annotations are invalid, an error answer's id).
//!
//! A [`Connector`] knows how to open a connection (spawn a process, dial a
//! URL) and may be asked again, which is how the client respawns a server
//! that died during the era probe. A [`Connection`] is a [`MessageSink`] for
//! the way out and a [`MessageStream`] for the way in.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use switchboard_types::jsonrpc::RequestId;

pub mod framing;
#[cfg(feature = "http")]
pub mod http;
pub mod memory;
pub mod sse;
#[cfg(feature = "stdio")]
pub mod stdio;
pub mod tap;
#[cfg(feature = "websocket")]
pub mod ws;

/// What a [`MessageStream`] yields: a message from the peer, or what the
/// transport itself has to say about one request's answer. The engine
/// fails that request at once on a report; nothing here is ever sent on
/// the wire or made to look like a JSON-RPC message.
#[derive(Debug)]
#[non_exhaustive]
pub enum Incoming {
    /// One whole message as the peer sent it, unparsed.
    Message(Vec<u8>),
    /// A message that came as the answer to request `id` (an HTTP body):
    /// unparsed like [`Incoming::Message`], but if it is not JSON-RPC,
    /// request `id` fails at once with what was wrong.
    Answer {
        /// The request the message answers.
        id: RequestId,
        /// The message as the peer sent it.
        message: Vec<u8>,
    },
    /// A message that came on request `id`'s own response stream but is
    /// not its answer (an HTTP POST's event stream): a request or
    /// notification the peer sent about that request. The engine tells
    /// the handler of a request which of ours it relates to.
    Related {
        /// The request on whose stream the message came.
        id: RequestId,
        /// The message as the peer sent it.
        message: Vec<u8>,
    },
    /// The answer to request `id` can no longer arrive (the stream it was
    /// owed on broke, or the session ended). It may have run.
    Lost {
        /// The request whose answer is lost.
        id: RequestId,
        /// What happened, for the caller's error.
        why: String,
    },
    /// The answer to request `id` arrived but cannot be used.
    Violation {
        /// The request the answer was for.
        id: RequestId,
        /// What was wrong with it, for the caller's error.
        why: String,
    },
}

impl Incoming {
    /// The message, when this is one rather than a report.
    pub fn into_message(self) -> Option<Vec<u8>> {
        match self {
            Incoming::Message(message)
            | Incoming::Answer { message, .. }
            | Incoming::Related { message, .. } => Some(message),
            _ => None,
        }
    }
}

/// What sending a request brought back with it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Sent {
    /// The request went; its answer comes through the [`MessageStream`].
    Sent,
    /// The request went and its answer came back with the send (an HTTP
    /// JSON body), unparsed: the engine routes it itself, as the reader
    /// would an [`Incoming::Answer`], without a hop through the stream.
    Answer(Vec<u8>),
}

/// A boxed, `Send` future, as transport trait methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The way out: sends whole serialized messages.
pub trait MessageSink: Send + Sync + 'static {
    /// Sends one serialized JSON-RPC message, without framing (the transport
    /// adds its own: a newline on stdio).
    ///
    /// # Cancel safety
    /// Implementations keep the framing intact when a send is dropped
    /// midway (a caller may drop a request future at any point): the
    /// dropped message may or may not reach the peer, but never corrupts
    /// the next one.
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>>;

    /// Sends one serialized JSON-RPC message the caller has no more use
    /// for, as [`MessageSink::send`] does: a transport that hands messages
    /// over whole (the in-memory pair) takes it without a copy, so a large
    /// answer is never held twice. The default sends it borrowed.
    ///
    /// # Cancel safety
    /// As [`MessageSink::send`].
    fn send_owned(&self, message: Vec<u8>) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move { self.send(&message).await })
    }

    /// Sends one serialized JSON-RPC request, as [`MessageSink::send`]
    /// does. A transport that reads the answer while it sends (an HTTP
    /// POST answered with JSON) may give it back here, as
    /// [`Sent::Answer`], instead of through its stream: the caller routes
    /// it on its own task. The default sends and says [`Sent::Sent`].
    ///
    /// # Cancel safety
    /// As [`MessageSink::send`].
    fn send_request<'a>(
        &'a self,
        message: &'a [u8],
    ) -> BoxFuture<'a, Result<Sent, TransportError>> {
        Box::pin(async move { self.send(message).await.map(|()| Sent::Sent) })
    }

    /// Closes the connection gracefully (stdio: close stdin, wait, SIGTERM,
    /// wait, SIGKILL). Idempotent.
    fn close(&self) -> BoxFuture<'_, ()>;
}

/// The way in: yields whole messages as bytes.
pub trait MessageStream: Send + 'static {
    /// The next message (or report about a request, see [`Incoming`]).
    /// `Ok(None)` means the connection was closed from our
    /// side; the peer going away is an `Err` that says how (exit status,
    /// stderr tail).
    ///
    /// # Cancel safety
    /// Must be cancel safe: no message is lost if the future is dropped.
    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Incoming>, TransportError>>;

    /// Whether every reply arrives in order on this one stream (stdio,
    /// WebSocket, an in-memory pair), so that an error response with a
    /// null id — JSON-RPC's answer to a request the server could not parse
    /// — can only be about the one request pending, and fails it. `false`
    /// (the default) for transports that deliver from several streams.
    fn is_single_pipe(&self) -> bool {
        false
    }
}

/// An open connection: both halves plus what the transport can tell about
/// it. A transport of one's own makes one with [`Connection::new`].
#[non_exhaustive]
pub struct Connection {
    /// The way out.
    pub sink: Arc<dyn MessageSink>,
    /// The way in.
    pub stream: Box<dyn MessageStream>,
    /// The server's stderr, for process transports.
    pub stderr: Option<StderrBuffer>,
}

impl Connection {
    /// A connection of these two halves, with no stderr.
    pub fn new(sink: Arc<dyn MessageSink>, stream: Box<dyn MessageStream>) -> Self {
        Self {
            sink,
            stream,
            stderr: None,
        }
    }

    /// The server's stderr, for process transports.
    #[must_use]
    pub fn with_stderr(mut self, stderr: StderrBuffer) -> Self {
        self.stderr = Some(stderr);
        self
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("stderr", &self.stderr)
            .finish_non_exhaustive()
    }
}

/// Opens connections to one server; may be asked more than once.
pub trait Connector: Send + Sync + 'static {
    /// Opens a new connection (spawns the process, dials the URL).
    ///
    /// # Errors
    /// [`TransportError`] when the server cannot be reached or started.
    fn connect(&self) -> BoxFuture<'_, Result<Connection, TransportError>>;

    /// A short human description for messages: the command line or the URL,
    /// without secrets.
    fn describe(&self) -> String;

    /// The transport's name for status displays: `stdio`, `streamable-http`,
    /// `sse`, `websocket` …
    fn transport_name(&self) -> &'static str {
        "custom"
    }

    /// Whether this is a network transport, where a missing answer to the
    /// era probe is an outage rather than evidence of an older server.
    fn is_remote(&self) -> bool {
        false
    }

    /// The era an earlier connection to this server settled on, remembered
    /// so the next one can skip detection (see [`Connector::remember`]).
    fn remembered_era(&self) -> Option<switchboard_types::Era> {
        None
    }

    /// Told what negotiation settled on (the era, and the transport that
    /// carried it), so later connections to the same server can skip
    /// detection.
    fn remember(&self, _era: switchboard_types::Era, _transport: &'static str) {}

    /// Another transport to try when this one is refused outright (Streamable
    /// HTTP falling back to the legacy HTTP+SSE transport).
    fn fallback(&self) -> Option<std::sync::Arc<dyn Connector>> {
        None
    }

    /// The environment a started server process gets, by name, when this
    /// connector starts one: what a start-up timeout reports, since a
    /// server missing a variable (a proxy, a token) often just hangs.
    fn environment(&self) -> Option<ServerEnvironment> {
        None
    }
}

/// The environment variables a server process was started with, by name
/// only: values are often secrets.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEnvironment {
    /// The caller's whole environment.
    Whole,
    /// Only these variables (sorted, no duplicates).
    Only(Vec<String>),
}

impl fmt::Display for ServerEnvironment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerEnvironment::Whole => f.write_str("the whole environment"),
            ServerEnvironment::Only(names) if names.is_empty() => {
                f.write_str("no environment variables")
            }
            ServerEnvironment::Only(names) => {
                write!(f, "only the environment variables {}", names.join(", "))
            }
        }
    }
}

/// How a server process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExitInfo {
    /// The exit code, when it exited normally.
    pub code: Option<i32>,
    /// The signal that killed it (Unix).
    pub signal: Option<i32>,
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(signal)) => write!(f, "signal {signal}"),
            (None, None) => f.write_str("unknown status"),
        }
    }
}

/// A transport failure. `Display` names only this layer; see
/// [`TransportError::stderr_tail`] for what the server printed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The server process could not be started.
    #[error("could not start `{command}`")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The server process exited.
    #[error("server process exited with {status}")]
    Exited {
        /// How it ended.
        status: ExitInfo,
        /// The last lines it wrote to stderr.
        stderr_tail: String,
    },
    /// The server closed its side of the connection (process still running,
    /// or not a process).
    #[error("server closed the connection")]
    Closed {
        /// The last lines it wrote to stderr, if any.
        stderr_tail: String,
    },
    /// A message exceeded the configured maximum size.
    #[error(
        "server sent a message larger than the {limit}-byte limit (raise it with the `{setting}` setting)"
    )]
    MessageTooLarge {
        /// The limit in bytes.
        limit: usize,
        /// The name of the setting that controls it.
        setting: &'static str,
    },
    /// An I/O error on the connection.
    #[error("i/o error on the connection")]
    Io(#[source] std::io::Error),
    /// We closed the connection.
    #[error("connection closed by the client")]
    ClosedByClient,
    /// A one-shot connector was asked to connect a second time.
    #[error("this transport can connect only once")]
    AlreadyConnected,
    /// The server wants credentials (HTTP 401 or 403). Never a reason to
    /// try another transport.
    #[error("server requires authorization (HTTP {status})")]
    AuthorizationRequired {
        /// 401 or 403.
        status: u16,
        /// The `WWW-Authenticate` challenge, if any.
        www_authenticate: Option<String>,
    },
    /// The server answered with an HTTP error status and no JSON-RPC error.
    #[error("server answered HTTP {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    HttpStatus {
        /// The status code.
        status: u16,
        /// The start of the body, for the message.
        body: String,
    },
    /// The server no longer knows the session (HTTP 404 on a request that
    /// carried `Mcp-Session-Id`).
    #[error("server ended the session (HTTP 404 for session {session_id:?})")]
    SessionExpired {
        /// The session that was lost.
        session_id: String,
    },
    /// The HTTP exchange failed (connect, TLS, I/O, timeout).
    #[error("HTTP request to {url} failed")]
    Http {
        /// The URL, without credentials.
        url: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A stream went silent for longer than the idle read timeout.
    #[error("no data from the server for {0:?} (the idle read timeout)")]
    IdleTimeout(std::time::Duration),
    /// The server's event stream broke the SSE format or its size limit.
    #[error("bad event stream from the server")]
    Sse(#[source] sse::SseError),
    /// The server answered a request with a body that is not the JSON-RPC
    /// message it should be (not JSON, not the content type it claims, or
    /// empty). The body is shown escaped and cut short.
    #[error(
        "server answered HTTP {status} with {} that is not a JSON-RPC message{}",
        if content_type.is_empty() { "no content type".to_owned() } else { format!("content type `{content_type}`") },
        if body.is_empty() { ", and an empty body".to_owned() } else { format!("; the body begins {body}") }
    )]
    InvalidResponse {
        /// The status code.
        status: u16,
        /// The `Content-Type` header, escaped (empty when there was none).
        content_type: String,
        /// The first bytes of the body, escaped and quoted (see
        /// [`escaped_preview`]); empty when the body was.
        body: String,
    },
    /// A transport setting is invalid (a bad URL or header).
    #[error("invalid transport setting: {0}")]
    Config(String),
    /// There are no CA certificates to check an HTTPS server's certificate
    /// against: the file `SSL_CERT_FILE` names (or the directory of
    /// `SSL_CERT_DIR`) is missing or holds none, or the system has none.
    /// A setting to fix, not an outage: never retryable.
    #[error("cannot check the certificates of HTTPS servers")]
    CaCertificates(#[source] CaCertificatesError),
}

/// Why no CA certificates could be loaded, naming the variable that chose
/// where they were read from.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{}", self.describe())]
pub struct CaCertificatesError {
    variable: Option<&'static str>,
    path: Option<std::path::PathBuf>,
    missing: bool,
}

impl CaCertificatesError {
    /// Why the platform verifier found no roots: on the systems where roots
    /// are read as `rustls-native-certs` reads them, `SSL_CERT_FILE` or
    /// `SSL_CERT_DIR`, when set, replace the system's store, so a wrong one
    /// is the likely cause (`SSL_CERT_FILE` first: it is the one people
    /// set).
    #[cfg(any(feature = "http", feature = "websocket"))]
    pub(crate) fn from_environment() -> Self {
        #[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
        for variable in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
            if let Some(value) = std::env::var_os(variable) {
                return Self {
                    variable: Some(variable),
                    missing: !std::env::split_paths(&value).any(|p| p.exists()),
                    path: Some(value.into()),
                };
            }
        }
        Self {
            variable: None,
            path: None,
            missing: false,
        }
    }

    /// The environment variable that chose where the certificates are read
    /// from (`SSL_CERT_FILE` or `SSL_CERT_DIR`), when one did.
    pub fn variable(&self) -> Option<&'static str> {
        self.variable
    }

    /// What that variable names.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    fn describe(&self) -> String {
        match (self.variable, &self.path) {
            (Some(variable), Some(path)) => format!(
                "{variable} is set to {}, which {}: point {variable} at {} of CA certificates \
                 in PEM form, or unset it to use the system's",
                path.display(),
                if self.missing {
                    "does not exist"
                } else {
                    "holds no usable CA certificate"
                },
                if variable == "SSL_CERT_DIR" {
                    "a directory"
                } else {
                    "a file"
                },
            ),
            _ => "no CA certificates were found on this system: install them (the \
                  `ca-certificates` package), or set SSL_CERT_FILE to a file of them in PEM form"
                .to_owned(),
        }
    }
}

impl TransportError {
    /// The last lines the server wrote to stderr, when known.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            TransportError::Exited { stderr_tail, .. } | TransportError::Closed { stderr_tail } => {
                Some(stderr_tail)
                    .filter(|tail| !tail.is_empty())
                    .map(String::as_str)
            }
            _ => None,
        }
    }

    /// The HTTP status, when the server answered with an error status.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            TransportError::HttpStatus { status, .. }
            | TransportError::AuthorizationRequired { status, .. } => Some(*status),
            TransportError::SessionExpired { .. } => Some(404),
            _ => None,
        }
    }

    /// The server broke the protocol: a broken event stream, or a body
    /// that is not a JSON-RPC message.
    pub fn is_protocol_violation(&self) -> bool {
        matches!(
            self,
            TransportError::Sse(_) | TransportError::InvalidResponse { .. }
        )
    }

    /// The server asked for credentials.
    pub fn is_auth_required(&self) -> bool {
        matches!(self, TransportError::AuthorizationRequired { .. })
    }

    /// The server's `WWW-Authenticate` challenge, when it asked for
    /// credentials and sent one: what `switchboard_auth::flow::OAuthFlow::begin` takes.
    pub fn www_authenticate(&self) -> Option<&str> {
        match self {
            TransportError::AuthorizationRequired {
                www_authenticate, ..
            } => www_authenticate.as_deref(),
            _ => None,
        }
    }

    /// A setting on this machine is wrong (no CA certificates, see
    /// [`TransportError::CaCertificates`]): trying again will not help.
    pub fn is_local_setup(&self) -> bool {
        matches!(self, TransportError::CaCertificates(_))
    }

    /// The exit status, when the server process exited.
    pub fn exit_status(&self) -> Option<ExitInfo> {
        match self {
            TransportError::Exited { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// How many bytes of a peer's body an error message shows.
pub const PREVIEW_BYTES: usize = 200;

/// The first [`PREVIEW_BYTES`] of `bytes`, quoted, with control characters
/// and invalid UTF-8 escaped (`\n`, `\u{1b}`, `\xff`), and `…` when cut:
/// a peer's bytes never reach a terminal as they are.
pub fn escaped_preview(bytes: &[u8]) -> String {
    let cut = bytes.len() > PREVIEW_BYTES;
    let mut out = String::from("\"");
    for chunk in bytes[..bytes.len().min(PREVIEW_BYTES)].utf8_chunks() {
        out.extend(chunk.valid().escape_debug());
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('"');
    if cut {
        out.push('…');
    }
    out
}

/// A bounded ring buffer of a server's stderr output. Cheap to clone.
#[derive(Clone)]
pub struct StderrBuffer {
    inner: Arc<Mutex<StderrRing>>,
    /// Becomes `true` at the first byte: the process is running (the era
    /// probe's wait starts then, see `ClientBuilder::probe_start_timeout`).
    written: Arc<tokio::sync::watch::Sender<bool>>,
}

struct StderrRing {
    bytes: VecDeque<u8>,
    capacity: usize,
    dropped: u64,
}

impl StderrBuffer {
    /// A buffer that keeps the last `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(StderrRing {
                bytes: VecDeque::with_capacity(capacity.min(8192)),
                capacity,
                dropped: 0,
            })),
            written: Arc::new(tokio::sync::watch::Sender::new(false)),
        }
    }

    /// Appends output, dropping the oldest bytes beyond the capacity.
    pub fn push(&self, chunk: &[u8]) {
        if !chunk.is_empty() {
            self.written
                .send_if_modified(|written| !std::mem::replace(written, true));
        }
        let mut ring = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let capacity = ring.capacity;
        let chunk = if chunk.len() > capacity {
            ring.dropped += (chunk.len() - capacity) as u64;
            &chunk[chunk.len() - capacity..]
        } else {
            chunk
        };
        let overflow = (ring.bytes.len() + chunk.len()).saturating_sub(capacity);
        ring.bytes.drain(..overflow);
        ring.dropped += overflow as u64;
        ring.bytes.extend(chunk);
    }

    /// Everything kept, lossily decoded as UTF-8.
    pub fn contents(&self) -> String {
        let ring = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = ring.bytes.as_slices();
        let mut all = Vec::with_capacity(a.len() + b.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        String::from_utf8_lossy(&all).into_owned()
    }

    /// The last `lines` complete or partial lines.
    pub fn tail(&self, lines: usize) -> String {
        let contents = self.contents();
        let trimmed = contents.trim_end_matches(['\n', '\r']);
        let start = trimmed
            .rmatch_indices('\n')
            .nth(lines.saturating_sub(1))
            .map_or(0, |(i, _)| i + 1);
        if lines == 0 {
            String::new()
        } else {
            trimmed[start..].to_owned()
        }
    }

    /// How many bytes were dropped because the buffer was full.
    pub fn dropped_bytes(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).dropped
    }

    /// Whether anything was written yet.
    pub(crate) fn has_output(&self) -> bool {
        *self.written.borrow()
    }

    /// Completes once anything has been written.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub(crate) async fn first_output(&self) {
        let mut written = self.written.subscribe();
        // The sender lives as long as `self`: `wait_for` cannot fail here.
        let _ = written.wait_for(|written| *written).await;
    }
}

impl fmt::Debug for StderrBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ring = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("StderrBuffer")
            .field("len", &ring.bytes.len())
            .field("capacity", &ring.capacity)
            .field("dropped", &ring.dropped)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_ring_keeps_the_tail() {
        let buffer = StderrBuffer::new(10);
        buffer.push(b"line one\n");
        buffer.push(b"line two\n");
        assert_eq!(buffer.contents(), "\nline two\n");
        assert_eq!(buffer.tail(1), "line two");
        assert_eq!(buffer.dropped_bytes(), 8);
        buffer.push(b"0123456789abc");
        assert_eq!(buffer.contents(), "3456789abc");
        assert_eq!(buffer.tail(3), "3456789abc");
    }

    #[test]
    fn the_challenge_is_kept_by_the_transport_error() {
        const CHALLENGE: &str = "Bearer resource_metadata=\"https://a.example/prm\"";
        let refused = TransportError::AuthorizationRequired {
            status: 401,
            www_authenticate: Some(CHALLENGE.into()),
        };
        assert_eq!(refused.www_authenticate(), Some(CHALLENGE));
        let bare = TransportError::AuthorizationRequired {
            status: 403,
            www_authenticate: None,
        };
        assert_eq!(bare.www_authenticate(), None);
        assert_eq!(TransportError::ClosedByClient.www_authenticate(), None);
    }
}
