//! A [`ServerHandler`] over Streamable HTTP (feature `http-server`): one
//! endpoint. A `POST` is answered with `application/json` — unless the
//! handler says something about the request before answering it
//! (progress, a request of its own such as `elicitation/create`): then,
//! when the client's `Accept` takes `text/event-stream`, the answer is an
//! event stream carrying those messages and ending with the answer.
//!
//! - **Session era**: an `initialize` POST opens a session (its own
//!   connection to the handler) and its answer carries `Mcp-Session-Id`,
//!   128 random bits; later POSTs name it, an unknown one gets 404, a
//!   `DELETE` ends it, a session idle longer than
//!   [`HttpServeOptions::session_idle`] ends by itself, and at most
//!   [`HttpServeOptions::max_sessions`] exist at once (then 503).
//! - **Replicas**: with [`HttpServeOptions::session_key`], a session id
//!   is sealed (ChaCha20-Poly1305) over what `initialize` settled, so a
//!   replica given the same key takes up a session it never saw — no shared
//!   store. A `DELETE` ends the session on the replica that gets it (which
//!   then answers 404 for it); another replica honours the id until its
//!   [`HttpServeOptions::session_lifetime`] (24 hours) is over.
//! - **2026-07-28**: a POST without a session goes to the one connection
//!   all such requests share, under an id of the server's own (the answer
//!   gets the client's back), so nothing is set up per request; nothing of
//!   a request is kept after it. A client that goes away before the answer
//!   cancels its request.
//! - `GET` with a session opens its standalone stream (one at a time,
//!   409 for a second): what the server says outside any request (list
//!   changes) goes there; with no stream open it is dropped. Without a
//!   session (2026-07-28) `GET` is 405.
//! - Safety: the listener's address is the caller's (bind 127.0.0.1 for a
//!   local gateway); an `Origin` header must name a loopback host or one of
//!   [`HttpServeOptions::allowed_origins`] (DNS-rebinding protection, as the
//!   specification asks of local servers), else 403; with
//!   [`HttpServeOptions::bearer_token`] every request must carry it (401
//!   otherwise, compared in constant time); bodies are bounded
//!   ([`HttpServeOptions::max_body`], 413 past it). `GET /healthz` answers
//!   `ok`; `GET /metrics` answers [`HttpServeOptions::metrics`] when set,
//!   behind the same Origin and token checks.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming as Body;
use hyper::{Method, Request, Response, StatusCode};
use switchboard_types::jsonrpc::{ErrorObject, JsonRpcMessage, JsonRpcResponse, RequestId};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::{ServeOptions, Served, ServerHandler, SessionState, serve};
use crate::engine::HandlerResult;
use crate::transport::{
    BoxFuture, Connection, Incoming, MessageSink, MessageStream, TransportError,
};

const SESSION_HEADER: &str = "mcp-session-id";

/// What the HTTP endpoint accepts.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HttpServeOptions {
    /// The endpoint's path. Default `/mcp`.
    pub path: String,
    /// A token every request must send as `Authorization: Bearer …`.
    /// Default none.
    pub bearer_token: Option<String>,
    /// Origins allowed besides loopback ones (`https://app.example`).
    pub allowed_origins: Vec<String>,
    /// The largest request body. Default 4 MiB.
    pub max_body: usize,
    /// Session-era sessions at once. Default 64.
    pub max_sessions: usize,
    /// A session unused this long ends. Default 30 minutes.
    pub session_idle: Duration,
    /// How long a request may take before 504. Default 5 minutes.
    pub request_timeout: Duration,
    /// Each connection's limits.
    pub serve: ServeOptions,
    /// Seals session-era sessions into their ids, for replicas; see
    /// [`SessionKey`]. Default none: ids are random, sessions live in this
    /// process only.
    pub session_key: Option<SessionKey>,
    /// How long a sealed session id is honoured after its `initialize`.
    /// Default 24 hours.
    pub session_lifetime: Duration,
    /// What `GET /metrics` answers (Prometheus text), when set; it is
    /// guarded like the endpoint (Origin, bearer token).
    pub metrics: Option<Metrics>,
}

/// The key that seals a session-era session into its `Mcp-Session-Id`
/// (ChaCha20-Poly1305 over the version, client capabilities and client
/// info `initialize` settled, and when it was issued), so that any replica
/// given the same key serves any session: no shared store. 32 bytes.
#[derive(Clone)]
pub struct SessionKey(Arc<aws_lc_rs::aead::LessSafeKey>);

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(…)")
    }
}

/// What a sealed session id carries besides the state.
#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    #[serde(flatten)]
    state: SessionState,
    /// Issued at, in seconds since the Unix epoch.
    t: u64,
}

const SEALED_PREFIX: &str = "s1.";
const SEALED_AAD: &[u8] = b"switchboard mcp session v1";

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl SessionKey {
    /// A key of these 32 bytes.
    pub fn new(bytes: &[u8; 32]) -> Self {
        let key = aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::CHACHA20_POLY1305, bytes)
            .expect("a 32-byte ChaCha20-Poly1305 key");
        Self(Arc::new(aws_lc_rs::aead::LessSafeKey::new(key)))
    }

    /// A key written as 64 hexadecimal digits (surrounding whitespace
    /// ignored), as `openssl rand -hex 32` prints one.
    ///
    /// # Errors
    /// What is wrong with the text.
    pub fn from_hex(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "a session key is 64 hexadecimal digits (32 bytes; `openssl rand -hex 32`), not {} characters",
                text.len()
            ));
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(Self::new(&bytes))
    }

    /// The session id that carries `state`.
    fn seal(&self, state: &SessionState) -> Option<String> {
        use base64::Engine as _;
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).ok()?;
        let mut data = serde_json::to_vec(&Sealed {
            state: state.clone(),
            t: now_secs(),
        })
        .ok()?;
        self.0
            .seal_in_place_append_tag(
                aws_lc_rs::aead::Nonce::assume_unique_for_key(nonce),
                aws_lc_rs::aead::Aad::from(SEALED_AAD),
                &mut data,
            )
            .ok()?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&data);
        Some(format!(
            "{SEALED_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sealed)
        ))
    }

    /// The state a session id sealed with this key carries, unless it was
    /// issued longer than `lifetime` ago.
    fn open(&self, id: &str, lifetime: Duration) -> Option<SessionState> {
        use base64::Engine as _;
        let sealed = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(id.strip_prefix(SEALED_PREFIX)?)
            .ok()?;
        if sealed.len() < 12 {
            return None;
        }
        let (nonce, data) = sealed.split_at(12);
        let mut data = data.to_vec();
        let nonce = aws_lc_rs::aead::Nonce::try_assume_unique_for_key(nonce).ok()?;
        let plain = self
            .0
            .open_in_place(nonce, aws_lc_rs::aead::Aad::from(SEALED_AAD), &mut data)
            .ok()?;
        let sealed: Sealed = serde_json::from_slice(plain).ok()?;
        (now_secs().saturating_sub(sealed.t) <= lifetime.as_secs()).then_some(sealed.state)
    }
}

/// Renders the metrics text on each `GET /metrics`.
#[derive(Clone)]
pub struct Metrics(Arc<dyn Fn() -> String + Send + Sync>);

impl Metrics {
    /// Metrics rendered by `render`.
    pub fn new(render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Self(Arc::new(render))
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for HttpServeOptions {
    fn default() -> Self {
        Self {
            path: "/mcp".to_owned(),
            bearer_token: None,
            allowed_origins: Vec::new(),
            max_body: 4 << 20,
            max_sessions: 64,
            session_idle: Duration::from_secs(30 * 60),
            request_timeout: Duration::from_secs(300),
            serve: ServeOptions::default(),
            session_key: None,
            session_lifetime: Duration::from_secs(24 * 60 * 60),
            metrics: None,
        }
    }
}

impl HttpServeOptions {
    /// Sets [`HttpServeOptions::session_key`].
    pub fn session_key(mut self, key: SessionKey) -> Self {
        self.session_key = Some(key);
        self
    }

    /// Sets [`HttpServeOptions::metrics`].
    pub fn metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Sets [`HttpServeOptions::bearer_token`].
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Sets [`HttpServeOptions::max_sessions`].
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n.max(1);
        self
    }

    /// Sets [`HttpServeOptions::session_idle`].
    pub fn session_idle(mut self, idle: Duration) -> Self {
        self.session_idle = idle;
        self
    }

    /// Sets [`HttpServeOptions::max_body`].
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }
}

/// One message the handler sent about a request, and whether it is the
/// request's answer (the last).
type Sent = (bool, Vec<u8>);

/// One connection to the handler, fed by POSTs: what it answers goes to
/// the POST waiting for that id, with what it says about the request on
/// the way (progress, its own requests) when the client takes a stream.
struct Link {
    /// Answers the requests; dropping it closes the connection.
    served: Served,
    to_handler: mpsc::Sender<Vec<u8>>,
    routes: Arc<Mutex<Routes>>,
    last_used: Mutex<Instant>,
}

#[derive(Default)]
struct Routes {
    /// The POSTs waiting, by request id (JSON text).
    waiting: HashMap<String, mpsc::Sender<Sent>>,
    /// The session's standalone stream (`GET`), when one is open.
    standalone: Option<mpsc::Sender<Sent>>,
    /// How to stop each running request of a session, by id.
    cancels: HashMap<String, oneshot::Sender<()>>,
}

struct LinkSink {
    routes: Arc<Mutex<Routes>>,
}

/// The id, method and whether it is a request, of a message from the host.
fn request_id(message: &[u8]) -> Option<(Option<String>, Option<String>)> {
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
        #[serde(default)]
        method: Option<String>,
    }
    let peek: Peek<'_> = serde_json::from_slice(message).ok()?;
    Some((peek.id.map(|id| id.get().to_owned()), peek.method))
}

impl MessageSink for LinkSink {
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        // Answers never come this way (a POST's request is answered on its
        // own task): what comes is said about a request, and goes on its
        // stream, else on the standalone stream, else nowhere (the client
        // opened none).
        let target = {
            let routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
            super::related_request()
                .and_then(|id| routes.waiting.get(&*id).cloned())
                .or_else(|| routes.standalone.clone())
        };
        Box::pin(async move {
            let delivered = match target {
                Some(target) => target.send((false, message.to_vec())).await.is_ok(),
                None => false,
            };
            if !delivered {
                tracing::debug!("no stream to the client takes it; a message was dropped");
            }
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

struct LinkStream {
    rx: mpsc::Receiver<Vec<u8>>,
}

impl MessageStream for LinkStream {
    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Incoming>, TransportError>> {
        Box::pin(async move { Ok(self.rx.recv().await.map(Incoming::Message)) })
    }
}

impl Link {
    fn open(handler: Arc<dyn ServerHandler>, options: ServeOptions) -> Self {
        let (to_handler, rx) = mpsc::channel(64);
        let routes = Arc::new(Mutex::new(Routes::default()));
        let connection = Connection::new(
            Arc::new(LinkSink {
                routes: routes.clone(),
            }),
            Box::new(LinkStream { rx }),
        );
        Self {
            served: serve(handler, connection, options),
            to_handler,
            routes,
            last_used: Mutex::new(Instant::now()),
        }
    }

    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Hands a notification or a response of the client to the handler's
    /// connection.
    async fn deliver(&self, message: Vec<u8>) {
        self.touch();
        let _ = self.to_handler.send(message).await;
    }

    fn forget(&self, id: &str) {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        routes.waiting.remove(id);
        routes.cancels.remove(id);
    }

    /// Where what the handler says about request `id` (JSON text) arrives.
    fn expect(&self, id: &str) -> mpsc::Receiver<Sent> {
        let (tx, rx) = mpsc::channel(32);
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .waiting
            .insert(id.to_owned(), tx);
        rx
    }

    /// Resolves when the client cancels request `id` (JSON text).
    fn cancellable(&self, id: &str) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .cancels
            .insert(id.to_owned(), tx);
        rx
    }

    /// Stops the request a `notifications/cancelled` names.
    fn cancel_named(&self, notification: &[u8]) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Params {
            request_id: RequestId,
        }
        #[derive(serde::Deserialize)]
        struct Note {
            params: Params,
        }
        let Ok(note) = serde_json::from_slice::<Note>(notification) else {
            return;
        };
        let id = serde_json::to_string(&note.params.request_id).unwrap_or_default();
        let cancel = self
            .routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .cancels
            .remove(&id);
        if let Some(cancel) = cancel {
            let _ = cancel.send(());
        }
    }

    /// Opens the standalone stream, unless one is open already.
    fn open_standalone(&self) -> Option<mpsc::Receiver<Sent>> {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        if routes.standalone.as_ref().is_some_and(|tx| !tx.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(64);
        routes.standalone = Some(tx);
        Some(rx)
    }
}

/// A response body: a whole JSON answer, or an event stream.
type ResponseBody = http_body_util::Either<Full<Bytes>, SseBody>;

/// Server-sent events: each message as one `message` event; ends after a
/// request's answer (never, for the standalone stream).
struct SseBody {
    first: Option<Vec<u8>>,
    rx: mpsc::Receiver<Sent>,
    done: bool,
}

fn sse_event(message: &[u8]) -> Bytes {
    let mut event = Vec::with_capacity(message.len() + 24);
    event.extend_from_slice(b"event: message\ndata: ");
    event.extend_from_slice(message);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

impl hyper::body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        use std::task::Poll;
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(hyper::body::Frame::data(sse_event(&first)))));
        }
        if self.done {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some((last, message))) => {
                self.done = last;
                Poll::Ready(Some(Ok(hyper::body::Frame::data(sse_event(&message)))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

fn sse(body: SseBody) -> Response<ResponseBody> {
    let mut response = Response::new(http_body_util::Either::Right(body));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    response.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-cache"),
    );
    response
}

struct State {
    handler: Arc<dyn ServerHandler>,
    options: HttpServeOptions,
    sessions: Mutex<HashMap<String, Arc<Link>>>,
    /// The connection every stateless request shares (made on first use,
    /// again if it closed).
    stateless: Mutex<Option<Arc<Link>>>,
    /// Our ids for stateless requests on it.
    next_id: std::sync::atomic::AtomicU64,
    /// Sealed sessions ended here by `DELETE`, and when: not taken up
    /// again (until their lifetime is over anyway).
    ended: Mutex<HashMap<String, Instant>>,
}

impl State {
    /// The connection stateless requests share.
    fn stateless_link(&self) -> Arc<Link> {
        let mut shared = self.stateless.lock().unwrap_or_else(|e| e.into_inner());
        match &*shared {
            Some(link) if !link.to_handler.is_closed() => link.clone(),
            _ => {
                let link = Arc::new(Link::open(self.handler.clone(), self.options.serve.clone()));
                *shared = Some(link.clone());
                link
            }
        }
    }
}

/// Most ended sealed sessions remembered.
const MAX_ENDED: usize = 16 * 1024;

/// A running HTTP endpoint; dropping it stops accepting (sessions end with
/// their last request).
pub struct HttpServer {
    local_addr: SocketAddr,
    _accept: tokio_util::task::AbortOnDropHandle<()>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

/// Serves `handler` on `listener` (see the module documentation).
///
/// # Errors
/// When the listener's address cannot be read.
pub fn serve_http(
    handler: Arc<dyn ServerHandler>,
    listener: TcpListener,
    options: HttpServeOptions,
) -> std::io::Result<HttpServer> {
    let local_addr = listener.local_addr()?;
    let state = Arc::new(State {
        handler,
        options,
        sessions: Mutex::new(HashMap::new()),
        ended: Mutex::new(HashMap::new()),
        stateless: Mutex::new(None),
        next_id: std::sync::atomic::AtomicU64::new(1),
    });
    let accept = tokio::spawn(async move {
        let expiry = state.options.session_idle;
        let mut sweep = tokio::time::interval(expiry.max(Duration::from_secs(1)) / 2);
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    // Small answers go out at once, not held for an ACK.
                    let _ = stream.set_nodelay(true);
                    let state = state.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |request| {
                            let state = state.clone();
                            async move { Ok::<_, Infallible>(handle(&state, request).await) }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
                _ = sweep.tick() => {
                    let now = Instant::now();
                    state.sessions.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, link| {
                        now.duration_since(*link.last_used.lock().unwrap_or_else(|e| e.into_inner())) < expiry
                    });
                    let lifetime = state.options.session_lifetime;
                    state
                        .ended
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .retain(|_, at| now.duration_since(*at) < lifetime);
                }
            }
        }
    });
    Ok(HttpServer {
        local_addr,
        _accept: tokio_util::task::AbortOnDropHandle::new(accept),
    })
}

fn reply(status: StatusCode, body: &'static str) -> Response<ResponseBody> {
    let mut response = Response::new(http_body_util::Either::Left(Full::new(Bytes::from_static(
        body.as_bytes(),
    ))));
    *response.status_mut() = status;
    response
}

fn json(status: StatusCode, body: Vec<u8>) -> Response<ResponseBody> {
    let mut response = Response::new(http_body_util::Either::Left(Full::new(Bytes::from(body))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// Whether `origin` may call: a loopback host, or one the options allow.
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == origin) {
        return true;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => rest.split(':').next().unwrap_or_default(),
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// Compares without stopping at the first difference.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: no session that could be guessed.
        return String::new();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A JSON-RPC error answer to request `id` (JSON text), with its status.
fn rpc_error(
    status: StatusCode,
    id: Option<&str>,
    code: i64,
    message: &str,
) -> Response<ResponseBody> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.and_then(|id| serde_json::from_str::<serde_json::Value>(id).ok()),
        "error": {"code": code, "message": message},
    });
    json(status, body.to_string().into_bytes())
}

/// The HTTP status of a stateless error answer: 404 for an unknown
/// method, 400 for a request the server refuses as malformed (the
/// 2026-07-28 revision's mapping), else 200.
fn error_code_status(code: i64) -> StatusCode {
    use switchboard_types::codes;
    match code {
        codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        codes::INVALID_PARAMS
        | codes::INVALID_REQUEST
        | codes::PARSE_ERROR
        | codes::HEADER_MISMATCH
        | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// Whether `needle` occurs in `haystack`.
fn contains_text(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// The 2026-07-28 revision's checks of a stateless request: `Mcp-Method`
/// (and `Mcp-Name` for a call, a prompt or a read) must repeat the body,
/// `MCP-Protocol-Version` must agree with `_meta`, `_meta` must carry the
/// protocol version and the client's capabilities, and the session era's
/// methods (`ping` …) do not exist. Header values are compared after
/// trimming surrounding whitespace, case-sensitively. Returns the refusal
/// to send, if any.
fn check_stateless(
    headers: &hyper::HeaderMap,
    body: &[u8],
    id: Option<&str>,
) -> Option<Response<ResponseBody>> {
    #[derive(serde::Deserialize)]
    struct Peek {
        method: String,
        #[serde(default)]
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(default)]
        name: Option<serde_json::Value>,
        #[serde(default)]
        uri: Option<serde_json::Value>,
        #[serde(rename = "_meta", default)]
        meta: Option<serde_json::Map<String, serde_json::Value>>,
    }
    use switchboard_types::{codes, meta};
    let Ok(peek) = serde_json::from_slice::<Peek>(body) else {
        return None;
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let mismatch = |what: String| {
        Some(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            codes::HEADER_MISMATCH,
            &format!("Header mismatch: {what}"),
        ))
    };
    match header("mcp-method") {
        Some(method) if method == peek.method => {}
        Some(method) => {
            return mismatch(format!(
                "Mcp-Method is `{method}` but the body's method is `{}`",
                peek.method
            ));
        }
        None => return mismatch("the Mcp-Method header is missing".to_owned()),
    }
    let params = peek.params.as_ref();
    let routed = match peek.method.as_str() {
        "tools/call" | "prompts/get" => params.and_then(|p| p.name.as_ref()),
        "resources/read" => params.and_then(|p| p.uri.as_ref()),
        _ => None,
    };
    if let Some(routed) = routed.and_then(serde_json::Value::as_str) {
        match header("mcp-name") {
            Some(name) if name == routed => {}
            Some(name) => {
                return mismatch(format!(
                    "Mcp-Name is `{name}` but the body names `{routed}`"
                ));
            }
            None => return mismatch("the Mcp-Name header is missing".to_owned()),
        }
    }
    if matches!(
        peek.method.as_str(),
        "ping"
            | "initialize"
            | "logging/setLevel"
            | "resources/subscribe"
            | "resources/unsubscribe"
    ) {
        return Some(rpc_error(
            StatusCode::NOT_FOUND,
            id,
            codes::METHOD_NOT_FOUND,
            &format!(
                "Method not found: {} (the 2026-07-28 revision has no such method)",
                peek.method
            ),
        ));
    }
    let meta = params.and_then(|p| p.meta.as_ref());
    let invalid = |what: &str| {
        Some(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            codes::INVALID_PARAMS,
            &format!("Invalid params: {what}"),
        ))
    };
    let Some(meta) = meta else {
        return invalid(
            "missing _meta (a request without a session is of the 2026-07-28 revision)",
        );
    };
    let Some(version) = meta.get(meta::META_PROTOCOL_VERSION) else {
        return invalid(&format!(
            "missing required _meta field {}",
            meta::META_PROTOCOL_VERSION
        ));
    };
    if !meta.contains_key(meta::META_CLIENT_CAPABILITIES) {
        return invalid(&format!(
            "missing required _meta field {}",
            meta::META_CLIENT_CAPABILITIES
        ));
    }
    if let (Some(header), Some(version)) = (header("mcp-protocol-version"), version.as_str())
        && header != version
    {
        return mismatch(format!(
            "MCP-Protocol-Version is `{header}` but _meta says `{version}`"
        ));
    }
    None
}

/// What a sealed session keeps of an `initialize` request.
#[derive(serde::Deserialize)]
struct InitializeBody {
    params: InitializeParams,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    #[serde(default)]
    capabilities: switchboard_types::ClientCapabilities,
    client_info: switchboard_types::Implementation,
}

/// The version an `initialize` answer chose.
#[derive(serde::Deserialize)]
struct InitializeAnswer {
    result: InitializeResult,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult {
    protocol_version: switchboard_types::ProtocolVersion,
}

/// Whether the request's `Accept` takes an event stream.
fn accepts_events(request: &Request<Body>) -> bool {
    request
        .headers()
        .get_all(hyper::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream") || v.contains("*/*"))
}

async fn handle(state: &State, request: Request<Body>) -> Response<ResponseBody> {
    let options = &state.options;
    if request.uri().path() == "/healthz" && request.method() == Method::GET {
        return reply(StatusCode::OK, "ok\n");
    }
    let metrics = options
        .metrics
        .as_ref()
        .filter(|_| request.uri().path() == "/metrics" && request.method() == Method::GET);
    if request.uri().path() != options.path && metrics.is_none() {
        return reply(StatusCode::NOT_FOUND, "not found\n");
    }
    if let Some(origin) = request.headers().get(hyper::header::ORIGIN)
        && !origin
            .to_str()
            .is_ok_and(|o| origin_allowed(o, &options.allowed_origins))
    {
        return reply(StatusCode::FORBIDDEN, "origin not allowed\n");
    }
    if let Some(token) = &options.bearer_token {
        let sent = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !same_secret(sent.as_bytes(), token.as_bytes()) {
            let mut response = reply(StatusCode::UNAUTHORIZED, "a bearer token is required\n");
            response.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
    }
    if let Some(Metrics(render)) = metrics {
        let mut response = reply(StatusCode::OK, "");
        *response.body_mut() = http_body_util::Either::Left(Full::new(Bytes::from(render())));
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        return response;
    }
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let events = accepts_events(&request);
    let headers = request.headers().clone();
    match *request.method() {
        Method::POST => {}
        Method::DELETE => {
            let removed = session.and_then(|id| {
                let removed = state
                    .sessions
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                if removed.is_some() && id.starts_with(SEALED_PREFIX) {
                    let mut ended = state.ended.lock().unwrap_or_else(|e| e.into_inner());
                    if ended.len() >= MAX_ENDED
                        && let Some(oldest) = ended
                            .iter()
                            .min_by_key(|(_, at)| **at)
                            .map(|(id, _)| id.clone())
                    {
                        ended.remove(&oldest);
                    }
                    ended.insert(id, Instant::now());
                }
                removed
            });
            return match removed {
                Some(_) => reply(StatusCode::OK, ""),
                None => reply(StatusCode::NOT_FOUND, "no such session\n"),
            };
        }
        // A session's standalone stream: what the server says outside any
        // request (list changes). The 2026-07-28 era has no sessions and
        // listens with `subscriptions/listen` instead.
        Method::GET if session.is_some() && events => {
            let link = session.and_then(|id| {
                state
                    .sessions
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&id)
                    .cloned()
            });
            let Some(link) = link else {
                return reply(StatusCode::NOT_FOUND, "no such session\n");
            };
            link.touch();
            return match link.open_standalone() {
                Some(rx) => sse(SseBody {
                    first: None,
                    rx,
                    done: false,
                }),
                None => reply(
                    StatusCode::CONFLICT,
                    "this session's stream is open already\n",
                ),
            };
        }
        _ => {
            let mut response = reply(
                StatusCode::METHOD_NOT_ALLOWED,
                "POST, DELETE, or GET with a session and Accept: text/event-stream\n",
            );
            response.headers_mut().insert(
                hyper::header::ALLOW,
                hyper::header::HeaderValue::from_static("GET, POST, DELETE"),
            );
            return response;
        }
    }
    let body = match Limited::new(request.into_body(), options.max_body)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes().to_vec(),
        Err(_) => return reply(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large\n"),
    };
    let Some((id, method)) = request_id(&body) else {
        return json(
            StatusCode::BAD_REQUEST,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: one JSON-RPC message per POST"}}"#.to_vec(),
        );
    };
    let is_request = id.is_some() && method.is_some();
    // A request with no session that does not open one is of the
    // 2026-07-28 era: its headers and `_meta` are checked here.
    let modern_initialize = method.as_deref() == Some("initialize")
        && contains_text(&body, switchboard_types::meta::META_PROTOCOL_VERSION);
    let stateless =
        session.is_none() && (method.as_deref() != Some("initialize") || modern_initialize);
    if stateless
        && is_request
        && let Some(response) = check_stateless(&headers, &body, id.as_deref())
    {
        return response;
    }
    let (link, new_session) = match (&session, method.as_deref()) {
        (Some(id), _) => {
            let link = state
                .sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(id)
                .cloned();
            // A session sealed by a replica (or by this process before a
            // restart) is taken up here.
            let resumed = match (&link, &options.session_key) {
                (None, Some(key))
                    if !state
                        .ended
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .contains_key(id) =>
                {
                    key.open(id, options.session_lifetime)
                }
                _ => None,
            };
            match (link, resumed) {
                (Some(link), _) => (link, None),
                (None, Some(resumed)) => {
                    let mut serve = options.serve.clone();
                    serve.session = Some(resumed);
                    let mut sessions = state.sessions.lock().unwrap_or_else(|e| e.into_inner());
                    if sessions.len() >= options.max_sessions {
                        return reply(StatusCode::SERVICE_UNAVAILABLE, "too many sessions\n");
                    }
                    let link = sessions
                        .entry(id.clone())
                        .or_insert_with(|| Arc::new(Link::open(state.handler.clone(), serve)))
                        .clone();
                    (link, None)
                }
                (None, None) => return reply(StatusCode::NOT_FOUND, "no such session\n"),
            }
        }
        (None, Some("initialize")) => {
            let mut sessions = state.sessions.lock().unwrap_or_else(|e| e.into_inner());
            if sessions.len() >= options.max_sessions {
                return reply(StatusCode::SERVICE_UNAVAILABLE, "too many sessions\n");
            }
            let link = Arc::new(Link::open(state.handler.clone(), options.serve.clone()));
            if options.session_key.is_some() {
                // Sealed once the answer says which version was chosen.
                (link, Some(String::new()))
            } else {
                let id = session_id();
                if id.is_empty() {
                    return reply(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "no randomness for a session id\n",
                    );
                }
                sessions.insert(id.clone(), link.clone());
                (link, Some(id))
            }
        }
        // The stateless era, or a stray message: the one connection all
        // of them share, each request under an id of the gateway's own.
        (None, _) => (state.stateless_link(), None),
    };
    let stateless = session.is_none() && new_session.is_none();
    if !is_request {
        // A notification or a response (to a request of ours) goes to the
        // connection; a session-era `notifications/cancelled` also stops
        // the request it names here.
        if method.as_deref() == Some("notifications/cancelled") {
            link.cancel_named(&body);
        }
        link.deliver(body).await;
        return reply(StatusCode::ACCEPTED, "");
    }
    let request = match JsonRpcMessage::from_slice(&body) {
        Ok(JsonRpcMessage::Request(request)) => request,
        _ => {
            return json(
                StatusCode::BAD_REQUEST,
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not one JSON-RPC request"}}"#.to_vec(),
            );
        }
    };
    let initialize = new_session
        .as_deref()
        .is_some_and(str::is_empty)
        .then(|| serde_json::from_slice::<InitializeBody>(&body).ok())
        .flatten();
    drop(body);
    // What the handler says about the request travels under the id the
    // request is handled with: a stateless one gets one of ours (two
    // clients may use the same id at once), a session's keeps its own.
    let client_id = request.id.clone();
    let ours = if stateless {
        RequestId::String(format!(
            "sb-{}",
            state
                .next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ))
    } else {
        request.id.clone()
    };
    let ours_text = serde_json::to_string(&ours).unwrap_or_default();
    let said = link.expect(&ours_text);
    let cancelled = (!stateless).then(|| link.cancellable(&ours_text));
    link.touch();
    let answer = link.served.answer(ours, request.method, request.params);
    let running = Running {
        link: link.clone(),
        id: ours_text,
    };
    let respond = move |outcome: HandlerResult| {
        JsonRpcMessage::Response(JsonRpcResponse {
            id: Some(client_id),
            outcome,
        })
        .to_vec()
    };
    // The answer alone is plain JSON; something said about the request
    // first (progress, a request of the server's) turns the response into
    // an event stream that ends with the answer — when the client takes
    // one, else what comes before the answer is dropped. Dropping the
    // answer's future (the client went away) cancels the request.
    let deadline = tokio::time::sleep(options.request_timeout);
    tokio::pin!(deadline);
    let mut answer = answer;
    let mut said = said;
    let mut cancelled: BoxFuture<'static, ()> = Box::pin(async move {
        match cancelled {
            Some(rx) => {
                let _ = rx.await;
            }
            None => std::future::pending().await,
        }
    });
    // What was said before the answer is in the channel before the answer
    // is ready: taken first, in order.
    let first = loop {
        tokio::select! {
            biased;
            message = said.recv() => match message {
                Some(_) if !events => continue,
                Some(message) => break Ok(Err(message)),
                None => continue,
            },
            outcome = &mut answer => break Ok(Ok(outcome)),
            () = &mut cancelled => {
                let outcome = Err(ErrorObject::new(-32800, "Request cancelled"));
                return json(StatusCode::OK, respond(outcome));
            }
            () = &mut deadline => break Err(()),
        }
    };
    match first {
        // The handler runs inside that wait: what it said on the way to
        // its answer is in the channel still, to go first.
        Ok(Ok(outcome)) if events && !said.is_empty() => {
            let mut early = Vec::new();
            while let Ok((_, message)) = said.try_recv() {
                early.push(message);
            }
            drop(running);
            let (tx, rx) = mpsc::channel(early.len() + 1);
            let mut early = early.into_iter();
            let first = early.next();
            for message in early {
                let _ = tx.try_send((false, message));
            }
            let _ = tx.try_send((true, respond(outcome)));
            sse(SseBody {
                first,
                rx,
                done: false,
            })
        }
        Ok(Ok(outcome)) => {
            drop(running);
            let status = match &outcome {
                Err(error) if stateless => error_code_status(error.code),
                _ => StatusCode::OK,
            };
            let answer = respond(outcome);
            let new_session = match (new_session, &options.session_key) {
                (Some(id), Some(key)) if id.is_empty() => {
                    let sealed = initialize
                        .zip(serde_json::from_slice::<InitializeAnswer>(&answer).ok())
                        .and_then(|(request, answer)| {
                            key.seal(&SessionState::new(
                                answer.result.protocol_version,
                                request.params.capabilities,
                                request.params.client_info,
                            ))
                        });
                    if let Some(id) = &sealed {
                        state
                            .sessions
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(id.clone(), link.clone());
                    }
                    sealed
                }
                (other, _) => other,
            };
            let mut response = json(status, answer);
            if let Some(id) = new_session
                && let Ok(value) = hyper::header::HeaderValue::from_str(&id)
            {
                response.headers_mut().insert(SESSION_HEADER, value);
            }
            response
        }
        Ok(Err((_, message))) => {
            let (tx, rx) = mpsc::channel(32);
            // The rest on a task of its own: what is said, then the answer.
            tokio::spawn(async move {
                let _running = running;
                loop {
                    tokio::select! {
                        biased;
                        message = said.recv() => match message {
                            Some((_, message)) => {
                                if tx.send((false, message)).await.is_err() {
                                    // The client went away: dropping the
                                    // answer cancels the request.
                                    return;
                                }
                            }
                            None => {
                                let outcome = answer.await;
                                let _ = tx.send((true, respond(outcome))).await;
                                return;
                            }
                        },
                        outcome = &mut answer => {
                            while let Ok((_, message)) = said.try_recv() {
                                if tx.send((false, message)).await.is_err() {
                                    return;
                                }
                            }
                            let _ = tx.send((true, respond(outcome))).await;
                            return;
                        }
                        () = &mut cancelled => return,
                    }
                }
            });
            sse(SseBody {
                first: Some(message),
                rx,
                done: false,
            })
        }
        Err(()) => reply(StatusCode::GATEWAY_TIMEOUT, "the request took too long\n"),
    }
}

/// Leaves the request's routes when its exchange ends, however it ends.
struct Running {
    link: Arc<Link>,
    id: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.link.forget(&self.id);
    }
}
