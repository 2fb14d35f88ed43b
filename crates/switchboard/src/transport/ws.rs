//! Remote servers over WebSocket: one JSON-RPC message per text frame, both
//! ways, on a connection that asks for the `mcp` subprotocol.
//!
//! ```no_run
//! use switchboard::Client;
//! use switchboard::transport::ws::WebSocketConfig;
//!
//! # async fn demo() -> switchboard::Result<()> {
//! let server = WebSocketConfig::new("wss://mcp.example.com/ws")
//!     .header("Authorization", "Bearer …");
//! let client = Client::connect(server).await?;
//! for tool in client.list_tools().await? {
//!     println!("{}", tool.name);
//! }
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! No task runs behind the connection: `recv` reads the socket itself (and
//! so answers pings while the engine waits for messages), and `send` writes
//! whole frames under a lock. TLS is set up as reqwest's `rustls` feature
//! sets it up: aws-lc-rs and the platform's certificate verifier.

use std::fmt;
use std::io;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue, header};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig as ProtocolConfig;
use tokio_tungstenite::tungstenite::{self, Bytes, Message};
use tokio_util::either::Either;
use tokio_util::sync::CancellationToken;

use super::{
    BoxFuture, CaCertificatesError, Connection, Connector, Incoming, MessageSink, MessageStream,
    TransportError,
};

/// The subprotocol requested in `Sec-WebSocket-Protocol`; a server that
/// selects another one (or none) is refused.
pub const SUBPROTOCOL: &str = "mcp";
/// Default for [`WebSocketConfig::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`WebSocketConfig::max_message_size`].
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 * 1024 * 1024;

/// How long `close` and the answer to the server's close frame may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Bytes of a refused handshake's body kept for the message.
const ERROR_BODY_PREVIEW: usize = 512;
/// Headers the handshake sets itself; a user value would break it.
const HANDSHAKE_HEADERS: [&str; 8] = [
    "host",
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
    "sec-websocket-accept",
];

type Socket = Either<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>;
type Ws = WebSocketStream<Socket>;

/// A remote MCP server reached over WebSocket (`ws://` or `wss://`). Setters
/// never fail; `connect` reports the first bad setting as
/// [`TransportError::Config`].
#[must_use]
#[derive(Clone)]
pub struct WebSocketConfig {
    url: String,
    headers: Vec<(String, String)>,
    connect_timeout: Duration,
    max_message_size: usize,
}

impl fmt::Debug for WebSocketConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values are often credentials: names only.
        let headers: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("WebSocketConfig")
            .field("url", &redact_url(&self.url))
            .field("headers", &headers)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_message_size", &self.max_message_size)
            .finish()
    }
}

impl WebSocketConfig {
    /// A server at `url`, a `ws://` or `wss://` URL (its MCP endpoint).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            headers: Vec::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
        }
    }

    /// Adds a header to the opening handshake (e.g. `Authorization`). The
    /// WebSocket headers themselves (`Sec-WebSocket-*`, `Upgrade`, …) are
    /// the transport's own and refused.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Longest time to connect: TCP, TLS and the opening handshake together
    /// (default 10 s). An open connection has no total timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Largest message (and frame) accepted from the server (default
    /// 64 MiB); a larger one ends the connection with
    /// [`TransportError::MessageTooLarge`].
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    fn validate(&self) -> Result<Target, TransportError> {
        let shown = redact_url(&self.url);
        let bad = |why: &str| TransportError::Config(format!("server URL {shown:?} {why}"));
        let mut url = url::Url::parse(&self.url)
            .map_err(|e| TransportError::Config(format!("bad server URL {shown:?}: {e}")))?;
        let tls = match url.scheme() {
            "ws" => false,
            "wss" => true,
            _ => return Err(bad("must start with ws:// or wss://")),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad(
                "holds credentials; send them with `.header(\"Authorization\", …)` instead",
            ));
        }
        let host = url
            .host_str()
            .filter(|host| !host.is_empty())
            .ok_or_else(|| bad("has no host"))?
            // An IPv6 literal comes bracketed; sockets and TLS want it bare.
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = url
            .port_or_known_default()
            .ok_or_else(|| bad("has no port"))?;
        // A fragment has no meaning in a WebSocket URL (RFC 6455 §3).
        url.set_fragment(None);

        let mut headers = Vec::with_capacity(self.headers.len());
        for (name, value) in &self.headers {
            let header_name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| TransportError::Config(format!("bad header name {name:?}")))?;
            if HANDSHAKE_HEADERS.contains(&header_name.as_str()) {
                return Err(TransportError::Config(format!(
                    "header {name:?} belongs to the WebSocket handshake and cannot be set"
                )));
            }
            let header_value = HeaderValue::from_str(value)
                .map_err(|_| TransportError::Config(format!("bad value for header {name:?}")))?;
            headers.push((header_name, header_value));
        }
        if self.max_message_size == 0 {
            return Err(TransportError::Config(
                "max_message_size must be at least 1".into(),
            ));
        }
        if self.connect_timeout.is_zero() {
            return Err(TransportError::Config(
                "connect_timeout must be greater than zero".into(),
            ));
        }
        Ok(Target {
            display: redact_url(url.as_str()),
            url,
            host,
            port,
            tls,
            headers,
        })
    }

    async fn open(&self) -> Result<Connection, TransportError> {
        let target = self.validate()?;
        let mut request = target.url.as_str().into_client_request().map_err(|e| {
            TransportError::Config(format!("bad server URL {:?}: {e}", target.display))
        })?;
        let headers = request.headers_mut();
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(SUBPROTOCOL),
        );
        for (name, value) in &target.headers {
            headers.append(name.clone(), value.clone());
        }
        let protocol = ProtocolConfig::default()
            .max_message_size(Some(self.max_message_size))
            .max_frame_size(Some(self.max_message_size));

        let handshake = async {
            let tcp = TcpStream::connect((target.host.as_str(), target.port))
                .await
                .map_err(|e| target.failure(e))?;
            // Each message is one small write; do not wait to batch it.
            let _ = tcp.set_nodelay(true);
            let socket = if target.tls {
                let server_name = rustls::pki_types::ServerName::try_from(target.host.clone())
                    .map_err(|_| {
                        TransportError::Config(format!(
                            "server URL {:?} has a host TLS cannot verify",
                            target.display
                        ))
                    })?;
                let tls = tokio_rustls::TlsConnector::from(tls_config()?)
                    .connect(server_name, tcp)
                    .await
                    .map_err(|e| target.failure(e))?;
                Either::Right(tls)
            } else {
                Either::Left(tcp)
            };
            tokio_tungstenite::client_async_with_config(request, socket, Some(protocol))
                .await
                .map_err(|e| handshake_error(&target, e))
        };
        let (ws, response) = tokio::time::timeout(self.connect_timeout, handshake)
            .await
            .map_err(|_| {
                target.failure(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no WebSocket connection within {:?} (the connect timeout)",
                        self.connect_timeout
                    ),
                ))
            })??;
        // tungstenite refuses a subprotocol we did not ask for; this also
        // holds if that check ever loosens.
        let selected = response.headers().get(header::SEC_WEBSOCKET_PROTOCOL);
        if selected.is_none_or(|value| value.as_bytes() != SUBPROTOCOL.as_bytes()) {
            return Err(target.subprotocol_refused());
        }
        tracing::debug!(server = %target.display, "WebSocket connected");

        let (sink, stream) = ws.split();
        let shared = Arc::new(Shared {
            display: target.display,
            max_message_size: self.max_message_size,
            closing: CancellationToken::new(),
            writer: tokio::sync::Mutex::new(Writer {
                sink,
                close_sent: false,
            }),
        });
        Ok(Connection {
            sink: Arc::new(WsSink {
                shared: shared.clone(),
            }),
            stream: Box::new(WsStream {
                shared,
                stream,
                peer_closed: false,
            }),
            stderr: None,
        })
    }
}

impl Connector for WebSocketConfig {
    /// Dials the server and completes the opening handshake.
    ///
    /// # Errors
    /// [`TransportError::Config`] for a bad setting;
    /// [`TransportError::AuthorizationRequired`] when the handshake is
    /// answered 401 or 403; [`TransportError::HttpStatus`] for any other
    /// refusal; [`TransportError::Http`] when the server cannot be reached,
    /// TLS fails, the connect timeout passes, or the server does not select
    /// the `mcp` subprotocol.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the attempt and closes the socket.
    fn connect(&self) -> BoxFuture<'_, Result<Connection, TransportError>> {
        Box::pin(self.open())
    }

    fn describe(&self) -> String {
        redact_url(&self.url)
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn transport_name(&self) -> &'static str {
        "websocket"
    }
}

/// A validated [`WebSocketConfig`].
struct Target {
    url: url::Url,
    /// The URL for messages: no credentials, no query.
    display: String,
    host: String,
    port: u16,
    tls: bool,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Target {
    fn failure(&self, source: impl std::error::Error + Send + Sync + 'static) -> TransportError {
        TransportError::Http {
            url: self.display.clone(),
            source: Box::new(source),
        }
    }

    fn subprotocol_refused(&self) -> TransportError {
        TransportError::Http {
            url: self.display.clone(),
            source: format!(
                "the server did not accept the `{SUBPROTOCOL}` WebSocket subprotocol, \
                 so it does not speak MCP at this URL"
            )
            .into(),
        }
    }
}

fn handshake_error(target: &Target, error: tungstenite::Error) -> TransportError {
    match error {
        tungstenite::Error::Http(response) => {
            let status = response.status().as_u16();
            if status == 401 || status == 403 {
                let www_authenticate = response
                    .headers()
                    .get(header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                return TransportError::AuthorizationRequired {
                    status,
                    www_authenticate,
                };
            }
            let body = response.body().as_deref().unwrap_or_default();
            let body = String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY_PREVIEW)])
                .trim()
                .to_owned();
            TransportError::HttpStatus { status, body }
        }
        tungstenite::Error::Protocol(ProtocolError::SecWebSocketSubProtocolError(_)) => {
            target.subprotocol_refused()
        }
        tungstenite::Error::Io(error) => target.failure(error),
        other => target.failure(other),
    }
}

/// The TLS client setup shared by every connection: reqwest's defaults.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, TransportError> {
    use rustls_platform_verifier::BuilderVerifierExt as _;

    static SHARED: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if let Some(config) = SHARED.get() {
        return Ok(config.clone());
    }
    let failed = |e: rustls::Error| TransportError::Config(format!("cannot set up TLS: {e}"));
    // An application that installed a provider chose it on purpose.
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(failed)?
        .with_platform_verifier()
        // It reads the roots now; without any, the variable to fix.
        .map_err(|_| TransportError::CaCertificates(CaCertificatesError::from_environment()))?
        .with_no_client_auth();
    // The upgrade is an HTTP/1.1 request; never let the server pick h2.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(SHARED.get_or_init(|| Arc::new(config)).clone())
}

/// The URL without user info, query or fragment (which may hold secrets).
fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.chars().take(200).collect(),
    }
}

struct Shared {
    display: String,
    max_message_size: usize,
    /// Cancelled by `close`: sends fail and `recv` returns `Ok(None)`.
    closing: CancellationToken,
    writer: tokio::sync::Mutex<Writer>,
}

struct Writer {
    sink: SplitSink<Ws, Message>,
    close_sent: bool,
}

impl Shared {
    fn read_error(&self, error: tungstenite::Error) -> TransportError {
        match error {
            tungstenite::Error::Capacity(CapacityError::MessageTooLong { .. }) => {
                TransportError::MessageTooLarge {
                    limit: self.max_message_size,
                    setting: "max_message_size",
                }
            }
            other => self.io_error(other),
        }
    }

    /// A socket failure; the peer going away is [`TransportError::Closed`].
    fn io_error(&self, error: tungstenite::Error) -> TransportError {
        match error {
            tungstenite::Error::ConnectionClosed
            | tungstenite::Error::AlreadyClosed
            | tungstenite::Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => closed(),
            tungstenite::Error::Io(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::UnexpectedEof
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::BrokenPipe
                ) =>
            {
                tracing::debug!(server = %self.display, %error, "WebSocket connection dropped");
                closed()
            }
            tungstenite::Error::Io(error) => TransportError::Io(error),
            other => TransportError::Io(io::Error::new(io::ErrorKind::InvalidData, other)),
        }
    }
}

fn closed() -> TransportError {
    TransportError::Closed {
        stderr_tail: String::new(),
    }
}

struct WsSink {
    shared: Arc<Shared>,
}

impl MessageSink for WsSink {
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            let shared = &self.shared;
            if shared.closing.is_cancelled() {
                return Err(TransportError::ClosedByClient);
            }
            let text = std::str::from_utf8(message)
                .map_err(|e| TransportError::Io(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
            let frame = Message::text(text);
            // A dropped send leaves the frame either unsent or whole in the
            // socket's buffer, never half written: the next one stays framed.
            tokio::select! {
                biased;
                () = shared.closing.cancelled() => Err(TransportError::ClosedByClient),
                result = async { shared.writer.lock().await.sink.send(frame).await } => {
                    result.map_err(|e| shared.io_error(e))
                }
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let shared = &self.shared;
            // First, so a send blocked on a full socket lets go of the lock.
            shared.closing.cancel();
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, async {
                let mut writer = shared.writer.lock().await;
                if !writer.close_sent {
                    if let Err(error) = writer.sink.close().await {
                        tracing::debug!(server = %shared.display, %error, "could not send the WebSocket close frame");
                    }
                    writer.close_sent = true;
                }
            })
            .await;
        })
    }
}

struct WsStream {
    shared: Arc<Shared>,
    stream: SplitStream<Ws>,
    /// The server's close frame arrived; nothing more will.
    peer_closed: bool,
}

impl MessageStream for WsStream {
    fn is_single_pipe(&self) -> bool {
        true
    }

    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Incoming>, TransportError>> {
        Box::pin(async move {
            loop {
                if self.peer_closed && !self.shared.closing.is_cancelled() {
                    return Err(closed());
                }
                // Reading is also what answers pings and flushes the pongs.
                let item = tokio::select! {
                    biased;
                    () = self.shared.closing.cancelled() => return Ok(None),
                    item = self.stream.next() => item,
                };
                match item {
                    Some(Ok(Message::Text(text))) => {
                        return Ok(Some(Incoming::Message(Vec::from(Bytes::from(text)))));
                    }
                    Some(Ok(Message::Binary(data))) => {
                        tracing::warn!(
                            server = %self.shared.display,
                            bytes = data.len(),
                            "skipping a binary WebSocket frame: MCP messages travel in text frames"
                        );
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                    Some(Ok(Message::Close(frame))) => {
                        self.peer_closed = true;
                        match &frame {
                            Some(frame) => tracing::debug!(
                                server = %self.shared.display,
                                code = u16::from(frame.code),
                                reason = %frame.reason,
                                "server closed the WebSocket"
                            ),
                            None => {
                                tracing::debug!(server = %self.shared.display, "server closed the WebSocket")
                            }
                        }
                        // tungstenite queued the answering close frame; send
                        // it so the server sees a clean close.
                        let shared = &self.shared;
                        let _ = tokio::time::timeout(CLOSE_TIMEOUT, async {
                            let _ = shared.writer.lock().await.sink.flush().await;
                        })
                        .await;
                    }
                    Some(Err(error)) => return Err(self.shared.read_error(error)),
                    None => return Err(closed()),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_redacted() {
        assert_eq!(
            redact_url("wss://user:secret@example.com/mcp?key=abc#frag"),
            "wss://example.com/mcp"
        );
        let config =
            WebSocketConfig::new("wss://example.com/mcp").header("Authorization", "Bearer secret");
        assert!(!format!("{config:?}").contains("secret"));
        assert_eq!(
            WebSocketConfig::new("ws://example.com/mcp?token=secret").describe(),
            "ws://example.com/mcp"
        );
    }

    #[test]
    fn bad_settings_are_reported() {
        let invalid = |config: WebSocketConfig| match config.validate() {
            Err(TransportError::Config(message)) => message,
            Err(other) => panic!("not a config error: {other}"),
            Ok(_) => panic!("accepted"),
        };
        assert!(invalid(WebSocketConfig::new("https://x/mcp")).contains("ws://"));
        invalid(WebSocketConfig::new("not a url"));
        assert!(invalid(WebSocketConfig::new("wss://u:p@x/mcp")).contains("Authorization"));
        invalid(WebSocketConfig::new("ws://x").header("bad name", "v"));
        invalid(WebSocketConfig::new("ws://x").header("X-Ok", "line\nbreak"));
        assert!(
            invalid(WebSocketConfig::new("ws://x").header("Sec-WebSocket-Protocol", "other"))
                .contains("handshake")
        );
        invalid(WebSocketConfig::new("ws://x").max_message_size(0));
        invalid(WebSocketConfig::new("ws://x").connect_timeout(Duration::ZERO));
    }

    #[test]
    fn targets_follow_the_url() {
        let target = WebSocketConfig::new("wss://[::1]/mcp#x")
            .validate()
            .expect("valid");
        assert_eq!(
            (target.host.as_str(), target.port, target.tls),
            ("::1", 443, true)
        );
        assert_eq!(target.url.as_str(), "wss://[::1]/mcp");
        let target = WebSocketConfig::new("ws://example.com:8080/mcp?session=1")
            .header("X-Tenant", "a")
            .validate()
            .expect("valid");
        assert_eq!((target.port, target.tls), (8080, false));
        assert_eq!(target.url.as_str(), "ws://example.com:8080/mcp?session=1");
        assert_eq!(target.display, "ws://example.com:8080/mcp");
        assert_eq!(target.headers.len(), 1);
    }
}
