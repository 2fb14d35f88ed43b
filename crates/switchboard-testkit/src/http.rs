//! HTTP transports: Streamable HTTP at `/mcp` (session era 2025-03-26 …
//! 2025-11-25 and the stateless 2026-07-28 era), legacy HTTP+SSE
//! (2024-11-05) at `/sse` + `/messages`, and WebSocket at `/ws`.
//!
//! One file: the three HTTP transports of the test server share one router
//! and one connection loop; it is test equipment.
//!
//! Message handling is the same as on stdio ([`Shared::dispatch`] +
//! [`Catalog::run_job`](switchboard_testserver::server::Catalog::run_job)); the WebSocket and
//! legacy SSE transports reuse the stdio connection loop ([`Conn`]).

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::io::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{AbortHandle, JoinSet};

use switchboard_testserver::server::{
    self, Action, AsyncJob, AsyncKind, META_PROTOCOL_VERSION, RpcError, Shared, code,
    error_response, has_modern_meta,
};
use switchboard_testserver::{
    Conn, Era, Fault, HttpResponseMode, HttpTransport, LEGACY_VERSIONS, Out, ServerConfig,
    ServerExit, id_key, send,
};

use crate::authserver::{self, AuthServer};

/// Largest accepted request body (64 MiB); larger ones get 413.
const BODY_LIMIT: usize = 64 << 20;
/// Interval of `: keepalive` comments on long-lived SSE streams.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// `retry:` (ms) sent in the priming event of a stream cut by `cut-stream`.
const CUT_STREAM_RETRY_MS: u64 = 100;

const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
const MCP_METHOD: &str = "mcp-method";
const MCP_NAME: &str = "mcp-name";
const LAST_EVENT_ID: &str = "last-event-id";

/// The test server over HTTP with `args` (its command line, e.g.
/// `["--auth"]`) on a free loopback port, served by a task of the current
/// runtime: that task and the server's `/mcp` URL.
///
/// # Panics
/// When `args` are not the server's, or no port can be had.
pub async fn spawn_http(args: &[&str]) -> (tokio::task::JoinHandle<io::Result<()>>, String) {
    let config = ServerConfig::from_args(args.iter().map(|a| (*a).to_owned()))
        .unwrap_or_else(|e| panic!("the test server's arguments {args:?}: {e}"));
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!(
        "http://{}/mcp",
        listener.local_addr().expect("the port's address")
    );
    (tokio::spawn(serve_http(config, listener)), url)
}

/// Serve the test server over HTTP on `listener` until the `exit` tool (or
/// the `exit-before-init` fault) asks for termination, which is returned as
/// an error wrapping [`ServerExit`]. Dropping the future stops the server
/// and closes its connections and streams.
///
/// Endpoints (each only if enabled in [`ServerConfig::transports`], else
/// 404): Streamable HTTP at `/mcp` (POST, GET, DELETE), legacy HTTP+SSE at
/// `GET /sse` + `POST /messages?session=…`, WebSocket at `/ws`
/// (subprotocol `mcp`, one JSON-RPC message per text frame).
///
/// With [`ServerConfig::auth`] these need a bearer token from the built-in
/// authorization server, served on the same listener (see
/// [`AuthConfig`](crate::AuthConfig)).
pub async fn serve_http(config: ServerConfig, listener: TcpListener) -> io::Result<()> {
    let auth = match config.auth.clone() {
        Some(c) => Some(Arc::new(AuthServer::new(c, listener.local_addr()?))),
        None => None,
    };
    let base = Arc::new(Shared::new(config)?);
    switchboard_testserver::write_startup_stderr(&base.config).await;
    let (exit_tx, mut exit_rx) = mpsc::unbounded_channel();
    // Never sent on: dropping it (when this future ends) ends every stream.
    let (_shutdown_tx, shutdown_rx) = watch::channel(());
    let state = Arc::new(HttpState {
        base,
        sessions: Mutex::new(HashMap::new()),
        sse_sessions: Mutex::new(HashMap::new()),
        exit_tx,
        shutdown: shutdown_rx,
        streams: AtomicU64::new(0),
        auth,
    });
    let app = router(Arc::clone(&state));
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            Some(code) = exit_rx.recv() => {
                return Err(io::Error::other(ServerExit { code }));
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let svc = hyper_util::service::TowerToHyperService::new(app.clone());
                    conns.spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                            .with_upgrades()
                            .await;
                    });
                }
                // Per-connection failures (reset before accept, fd limits):
                // keep serving.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// `--http ADDR`: bind, announce the address on stdout, serve.
pub(crate) async fn run_http_main(config: ServerConfig, addr: &str) -> io::Result<()> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("cannot bind {addr}: {e}")))?;
    let local = listener.local_addr()?;
    {
        let mut out = io::stdout().lock();
        writeln!(out, "listening on http://{local}")?;
        if let Some(auth) = &config.auth {
            writeln!(out, "auth issuer {}", auth.issuer_for(local))?;
        }
        out.flush()?;
    }
    serve_http(config, listener).await
}

fn router(state: Arc<HttpState>) -> Router {
    let config = &state.base.config;
    let mut app = Router::new();
    if config.has_transport(HttpTransport::Streamable) {
        app = app.route("/mcp", post(mcp_post).get(mcp_get).delete(mcp_delete));
    }
    if config.has_transport(HttpTransport::Sse) {
        app = app
            .route("/sse", get(sse_get))
            .route("/messages", post(messages_post));
    }
    if config.has_transport(HttpTransport::Ws) {
        app = app.route("/ws", get(ws_get));
    }
    let auth = state.auth.clone();
    let app = app
        .fallback(|| async { StatusCode::NOT_FOUND })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state);
    match auth {
        Some(auth) => app.merge(authserver::router(auth)),
        None => app,
    }
}

#[derive(Debug)]
struct HttpState {
    /// Catalog + the state of stateless (modern) requests; sessions fork it.
    base: Arc<Shared>,
    /// Streamable HTTP sessions (session era) by `Mcp-Session-Id`.
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Legacy HTTP+SSE sessions: where POSTed messages go.
    sse_sessions: Mutex<HashMap<String, mpsc::UnboundedSender<Value>>>,
    exit_tx: mpsc::UnboundedSender<i32>,
    shutdown: watch::Receiver<()>,
    /// Counter for resumable stream ids.
    streams: AtomicU64,
    /// `--auth`: the authorization server and the bearer-token checks.
    auth: Option<Arc<AuthServer>>,
}

/// One Streamable HTTP session (session era).
#[derive(Debug)]
struct Session {
    id: String,
    shared: Arc<Shared>,
    /// Running slow requests, for `notifications/cancelled`.
    in_flight: Mutex<HashMap<String, AbortHandle>>,
    /// Streams cut by the `cut-stream` fault, by stream id.
    resumable: Mutex<HashMap<String, Resume>>,
    /// Standalone GET streams (dropping a sender ends its stream).
    get_streams: Mutex<Vec<mpsc::UnboundedSender<GetItem>>>,
    /// Messages for the GET stream sent while none was open; the next GET
    /// gets them first.
    get_backlog: Mutex<Vec<Bytes>>,
}

/// What goes down a session's GET stream.
#[derive(Debug)]
enum GetItem {
    /// An SSE event.
    Event(Bytes),
    /// Everything before this has been handed to the connection.
    Flushed(oneshot::Sender<()>),
}

fn get_item(item: GetItem) -> Bytes {
    match item {
        GetItem::Event(b) => b,
        GetItem::Flushed(tx) => {
            let _ = tx.send(());
            Bytes::new()
        }
    }
}

/// How long a JSON answer waits for the GET stream to carry the request's
/// earlier messages (progress, log lines), so that they reach the client
/// first.
const GET_FLUSH_WAIT: Duration = Duration::from_secs(1);
/// Extra time given to the client to read the GET stream before the JSON
/// answer (the two travel on different connections).
const GET_FLUSH_GRACE: Duration = Duration::from_millis(20);

/// The rest of a cut response stream, waiting for `GET` + `Last-Event-ID`.
#[derive(Debug)]
struct Resume {
    /// Events already sent on the cut stream (for replay), by event number.
    sent: Vec<(u64, Value)>,
    /// Number of the next event.
    next: u64,
    /// A message received from the job but not sent before the cut.
    pending: Option<Value>,
    /// The rest of the job's messages.
    rx: mpsc::UnboundedReceiver<Value>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Session {
    /// A new session whose unsolicited messages go to its GET stream.
    fn start(id: String, shared: Arc<Shared>) -> Arc<Session> {
        let session = Arc::new(Session {
            id,
            shared,
            in_flight: Mutex::new(HashMap::new()),
            resumable: Mutex::new(HashMap::new()),
            get_streams: Mutex::new(Vec::new()),
            get_backlog: Mutex::new(Vec::new()),
        });
        let weak = Arc::downgrade(&session);
        session.shared.set_notifier(Arc::new(move |msg: Value| {
            if let Some(s) = weak.upgrade() {
                s.push_get(&msg);
            }
        }));
        session
    }

    /// Send a message on the session's GET stream (or keep it for the next
    /// one).
    fn push_get(&self, msg: &Value) {
        let event = sse_event(None, Some("message"), &msg.to_string());
        let mut streams = lock(&self.get_streams);
        streams.retain(|s| !s.is_closed());
        if let Some(s) = streams.first()
            && s.send(GetItem::Event(event.clone())).is_ok()
        {
            return;
        }
        // Still holding `get_streams`: a GET opening now sees the backlog.
        lock(&self.get_backlog).push(event);
    }

    /// Wait until the GET stream has taken everything pushed so far (a
    /// JSON answer must not overtake the progress sent before it).
    async fn flush_get(&self) {
        let (tx, rx) = oneshot::channel();
        let sent = lock(&self.get_streams)
            .first()
            .is_some_and(|s| s.send(GetItem::Flushed(tx)).is_ok());
        if sent && tokio::time::timeout(GET_FLUSH_WAIT, rx).await.is_ok() {
            tokio::time::sleep(GET_FLUSH_GRACE).await;
        }
    }

    fn cancel(&self, id: &Value) {
        if let Some(h) = lock(&self.in_flight).remove(&id_key(id)) {
            h.abort();
        }
    }

    /// A request task ended: forget it (unless the id was reused since).
    fn finished(&self, key: &str, task: tokio::task::Id) {
        let mut in_flight = lock(&self.in_flight);
        if in_flight.get(key).is_some_and(|h| h.id() == task) {
            in_flight.remove(key);
        }
    }

    /// The session is gone: stop its work and end its streams.
    fn close(&self) {
        for (_, h) in lock(&self.in_flight).drain() {
            h.abort();
        }
        lock(&self.resumable).clear();
        lock(&self.get_streams).clear();
    }
}

/// Aborts a task when dropped (a response stream that goes away cancels
/// its request).
#[derive(Debug)]
struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Removes a legacy HTTP+SSE session when its stream goes away.
#[derive(Debug)]
struct SseSessionGuard {
    state: Arc<HttpState>,
    id: String,
}

impl Drop for SseSessionGuard {
    fn drop(&mut self) {
        lock(&self.state.sse_sessions).remove(&self.id);
    }
}

// ---------------------------------------------------------------------------
// Streamable HTTP: POST /mcp

async fn mcp_post(State(st): State<Arc<HttpState>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    if let Some(r) = st.precheck(headers, true) {
        return r;
    }
    let bytes = match read_body(body, headers).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    st.base.record(&bytes);
    let msg: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => return json_response(StatusCode::BAD_REQUEST, &server::parse_error()),
    };
    if let Some(auth) = &st.auth
        && let Some(r) = auth.check_request(headers, &msg)
    {
        return r;
    }
    if msg.get("method").and_then(Value::as_str) == Some("initialize") {
        return st.initialize(headers, msg).await;
    }
    let modern = match st.base.config.era {
        Era::Modern => true,
        Era::Legacy => false,
        Era::Dual => !headers.contains_key(MCP_SESSION_ID) && looks_modern(headers, &msg),
    };
    if modern {
        st.modern_post(headers, msg).await
    } else {
        st.session_post(headers, msg).await
    }
}

/// Dual era without a session: does this POST use the stateless protocol?
fn looks_modern(headers: &HeaderMap, msg: &Value) -> bool {
    headers.contains_key(MCP_METHOD)
        || header_str(headers, MCP_PROTOCOL_VERSION).is_some_and(|v| !LEGACY_VERSIONS.contains(&v))
        || has_modern_meta(msg.get("params"))
}

impl HttpState {
    /// Checks done before anything else: `Origin` (403), for POSTs
    /// `--require-header` (401), and with `--auth` the bearer token (401).
    fn precheck(&self, headers: &HeaderMap, post: bool) -> Option<Response> {
        if let Some(origin) = headers.get(header::ORIGIN)
            && !origin.to_str().is_ok_and(origin_is_local)
        {
            return Some(text_response(
                StatusCode::FORBIDDEN,
                "Forbidden: invalid Origin",
            ));
        }
        if post {
            for (name, value) in &self.base.config.require_headers {
                let ok = headers
                    .get_all(name.as_str())
                    .iter()
                    .any(|v| v.to_str().is_ok_and(|v| v.trim() == value));
                if !ok {
                    let mut r = text_response(StatusCode::UNAUTHORIZED, "Unauthorized");
                    r.headers_mut()
                        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                    return Some(r);
                }
            }
        }
        if let Some(auth) = &self.auth
            && let Err(r) = auth.check_bearer(headers)
        {
            return Some(r);
        }
        None
    }

    fn default_format(&self) -> HttpResponseMode {
        self.base.config.http_response
    }

    async fn exit(&self, code: i32) -> Response {
        let _ = self.exit_tx.send(code);
        // Never answer: the server is going away.
        std::future::pending().await
    }

    async fn initialize(self: &Arc<Self>, headers: &HeaderMap, msg: Value) -> Response {
        if self.base.config.era == Era::Modern {
            return match self.base.dispatch(msg) {
                Action::Exit(code) => self.exit(code).await,
                Action::Reply(v) => json_response(StatusCode::BAD_REQUEST, &v),
                _ => StatusCode::ACCEPTED.into_response(),
            };
        }
        let shared = Arc::new(self.base.fork());
        match shared.dispatch(msg) {
            Action::Exit(code) => self.exit(code).await,
            Action::Reply(v) if v.get("result").is_some() => {
                let format = match choose_format(headers, self.default_format()) {
                    Ok(f) => f,
                    Err(r) => return r,
                };
                let id = random_id();
                let session = Session::start(id.clone(), shared);
                lock(&self.sessions).insert(id.clone(), session);
                let mut r = reply_response(format, StatusCode::OK, &v);
                if let Ok(value) = HeaderValue::from_str(&id) {
                    r.headers_mut().insert(MCP_SESSION_ID, value);
                }
                r
            }
            Action::Reply(v) => json_response(StatusCode::OK, &v),
            _ => StatusCode::ACCEPTED.into_response(),
        }
    }

    /// Stateless (2026-07-28) POST: validate the mirrored headers and
    /// `_meta`, then handle the request without a session.
    async fn modern_post(self: &Arc<Self>, headers: &HeaderMap, msg: Value) -> Response {
        let Value::Object(obj) = &msg else {
            return json_response(
                StatusCode::BAD_REQUEST,
                &error_response(
                    Value::Null,
                    RpcError::new(
                        code::INVALID_REQUEST,
                        "Invalid Request: expected a single JSON-RPC message (no batches)",
                    ),
                ),
            );
        };
        if let (Some(id), Some(Value::String(method))) = (obj.get("id"), obj.get("method")) {
            let params = obj.get("params");
            if let Err(e) = check_modern_headers(headers, method, params)
                .and_then(|()| self.base.validate_modern(params))
            {
                return json_response(StatusCode::BAD_REQUEST, &error_response(id.clone(), e));
            }
        }
        let shared = Arc::clone(&self.base);
        self.run_request(headers, None, shared, msg, true).await
    }

    /// Session-era POST (anything but `initialize`).
    async fn session_post(self: &Arc<Self>, headers: &HeaderMap, msg: Value) -> Response {
        let session = match self.session_for(headers) {
            Ok(s) => s,
            Err(r) => return r,
        };
        if let Some(v) = header_str(headers, MCP_PROTOCOL_VERSION)
            && !self.legacy_version_ok(v)
        {
            return rpc_error_response(
                StatusCode::BAD_REQUEST,
                code::INVALID_REQUEST,
                format!("Bad Request: unsupported MCP-Protocol-Version: {v}"),
            );
        }
        // A missing MCP-Protocol-Version means 2025-03-26: accepted.
        if let Value::Array(batch) = msg {
            return self.batch(headers, session, batch).await;
        }
        let shared = Arc::clone(&session.shared);
        self.run_request(headers, Some(session), shared, msg, false)
            .await
    }

    fn legacy_version_ok(&self, v: &str) -> bool {
        let config = &self.base.config;
        LEGACY_VERSIONS.contains(&v)
            || config.legacy_version.as_deref() == Some(v)
            || (config.era == Era::Dual && config.modern_versions.iter().any(|m| m == v))
    }

    /// The session named by `Mcp-Session-Id`: missing → 400, unknown → 404.
    #[allow(clippy::result_large_err)]
    fn session_for(&self, headers: &HeaderMap) -> Result<Arc<Session>, Response> {
        let Some(id) = headers.get(MCP_SESSION_ID) else {
            return Err(rpc_error_response(
                StatusCode::BAD_REQUEST,
                code::INVALID_REQUEST,
                "Bad Request: missing Mcp-Session-Id header",
            ));
        };
        let session = id
            .to_str()
            .ok()
            .and_then(|id| lock(&self.sessions).get(id).cloned());
        session.ok_or_else(|| {
            rpc_error_response(
                StatusCode::NOT_FOUND,
                code::SESSION_NOT_FOUND,
                "Session not found",
            )
        })
    }

    fn remove_session(&self, id: &str) {
        let session = lock(&self.sessions).remove(id);
        if let Some(s) = session {
            s.close();
        }
    }

    /// Handle one message (modern or within a session) and answer it.
    async fn run_request(
        self: &Arc<Self>,
        headers: &HeaderMap,
        session: Option<Arc<Session>>,
        shared: Arc<Shared>,
        mut msg: Value,
        modern: bool,
    ) -> Response {
        if self.auth.is_some() {
            authserver::rewrite_admin_call(&mut msg);
        }
        match shared.dispatch(msg) {
            Action::None => StatusCode::ACCEPTED.into_response(),
            Action::Cancel(id) => {
                if let Some(s) = &session {
                    s.cancel(&id);
                }
                StatusCode::ACCEPTED.into_response()
            }
            Action::Exit(code) => self.exit(code).await,
            Action::Reply(v) => self.reply(headers, &v, modern),
            Action::ForgetSession(v) => {
                if let Some(s) = &session {
                    self.remove_session(&s.id);
                }
                self.reply(headers, &v, modern)
            }
            Action::Async(job) => self.run_async(headers, session, shared, job).await,
        }
    }

    fn reply(&self, headers: &HeaderMap, v: &Value, modern: bool) -> Response {
        if modern {
            match v.pointer("/error/code").and_then(Value::as_i64) {
                Some(code::METHOD_NOT_FOUND) => return json_response(StatusCode::NOT_FOUND, v),
                Some(code::INVALID_REQUEST | code::PARSE_ERROR) => {
                    return json_response(StatusCode::BAD_REQUEST, v);
                }
                _ => {}
            }
        }
        match choose_format(headers, self.default_format()) {
            Ok(format) => reply_response(format, StatusCode::OK, v),
            Err(r) => r,
        }
    }

    /// A slow request: run it in a task; stream its progress and response
    /// (SSE) or wait for the response (JSON). The response going away
    /// cancels the task (except for a stream cut by `cut-stream`, which is
    /// resumable).
    async fn run_async(
        self: &Arc<Self>,
        headers: &HeaderMap,
        session: Option<Arc<Session>>,
        shared: Arc<Shared>,
        job: AsyncJob,
    ) -> Response {
        // A listen stream is an SSE stream whatever the default.
        let listen = matches!(job.kind, AsyncKind::Listen { .. });
        let format = if listen && accepts_sse(headers) {
            HttpResponseMode::Sse
        } else if listen {
            return text_response(
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: subscriptions/listen requires Accept: text/event-stream",
            );
        } else {
            match choose_format(headers, self.default_format()) {
                Ok(f) => f,
                Err(r) => return r,
            }
        };
        let cut = format == HttpResponseMode::Sse
            && session.is_some()
            && self.base.config.has_fault(Fault::CutStream)
            && matches!(job.kind, AsyncKind::Progress { .. });
        let id = job.id.clone();
        let key = id_key(&id);
        let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
        let task = {
            let session = session.clone();
            let key = key.clone();
            tokio::spawn(async move {
                let reply = shared
                    .run_job(job, |n| {
                        let _ = tx.send(n);
                    })
                    .await;
                let _ = tx.send(reply);
                if let Some(s) = session {
                    s.finished(&key, tokio::task::id());
                }
            })
        };
        if let Some(s) = &session {
            lock(&s.in_flight).insert(key, task.abort_handle());
        }
        if cut && let Some(session) = session {
            return self.cut_stream(session, rx);
        }
        let guard = AbortOnDrop(task.abort_handle());
        match format {
            HttpResponseMode::Json => {
                let mut pushed = false;
                while let Some(m) = rx.recv().await {
                    if is_response(&m) {
                        drop(guard);
                        if pushed && let Some(s) = &session {
                            s.flush_get().await;
                        }
                        return json_response(StatusCode::OK, &m);
                    }
                    // A JSON answer cannot carry messages before the
                    // response: the session's GET stream does (server→client
                    // requests, progress, log lines); without a session they
                    // are dropped.
                    if let Some(s) = &session {
                        s.push_get(&m);
                        pushed = true;
                    }
                }
                // Cancelled with notifications/cancelled.
                json_response(
                    StatusCode::OK,
                    &error_response(
                        id,
                        RpcError::new(code::REQUEST_CANCELLED, "Request cancelled"),
                    ),
                )
            }
            HttpResponseMode::Sse => sse_response(sse_body(
                Vec::new(),
                rx,
                |m: Value| sse_event(None, Some("message"), &m.to_string()),
                listen,
                self.shutdown.clone(),
                guard,
            )),
        }
    }

    /// `cut-stream`: send a priming event and the first progress event, then
    /// end the stream without the response; the rest waits for a resuming
    /// `GET /mcp` with `Last-Event-ID`.
    fn cut_stream(
        &self,
        session: Arc<Session>,
        mut rx: mpsc::UnboundedReceiver<Value>,
    ) -> Response {
        let sid = format!("s{}", self.streams.fetch_add(1, Ordering::Relaxed) + 1);
        let (btx, brx) = mpsc::unbounded_channel::<Bytes>();
        let priming = format!("id: {sid}-0\nretry: {CUT_STREAM_RETRY_MS}\ndata: \n\n");
        let _ = btx.send(Bytes::from(priming));
        tokio::spawn(async move {
            let mut resume = Resume {
                sent: Vec::new(),
                next: 1,
                pending: None,
                rx: mpsc::unbounded_channel().1,
            };
            match rx.recv().await {
                Some(m) if !is_response(&m) => {
                    let event_id = format!("{sid}-1");
                    let _ = btx.send(sse_event(Some(&event_id), Some("message"), &m.to_string()));
                    resume.sent.push((1, m));
                    resume.next = 2;
                }
                Some(m) => resume.pending = Some(m),
                None => {}
            }
            resume.rx = rx;
            lock(&session.resumable).insert(sid, resume);
            // Dropping `btx` ends the stream.
        });
        sse_response(sse_body(
            Vec::new(),
            brx,
            |b: Bytes| b,
            false,
            self.shutdown.clone(),
            (),
        ))
    }

    async fn batch(
        self: &Arc<Self>,
        headers: &HeaderMap,
        session: Arc<Session>,
        batch: Vec<Value>,
    ) -> Response {
        if batch.is_empty() {
            return json_response(StatusCode::BAD_REQUEST, &server::invalid_request());
        }
        let mut replies = Vec::new();
        for mut item in batch {
            if self.auth.is_some() {
                authserver::rewrite_admin_call(&mut item);
            }
            match session.shared.dispatch(item) {
                Action::None => {}
                Action::Cancel(id) => session.cancel(&id),
                Action::Exit(code) => return self.exit(code).await,
                Action::Reply(v) => replies.push(v),
                Action::ForgetSession(v) => {
                    self.remove_session(&session.id);
                    replies.push(v);
                }
                Action::Async(job) => {
                    replies.push(session.shared.run_job(job, |m| session.push_get(&m)).await)
                }
            }
        }
        if replies.is_empty() {
            return StatusCode::ACCEPTED.into_response();
        }
        match choose_format(headers, self.default_format()) {
            Ok(format) => reply_response(format, StatusCode::OK, &Value::Array(replies)),
            Err(r) => r,
        }
    }
}

/// 2026-07-28 request metadata headers: `MCP-Protocol-Version`,
/// `Mcp-Method` and (for `tools/call`, `prompts/get`, `resources/read`,
/// and `tasks/get|update|cancel` with the task's id) `Mcp-Name` must be
/// present and match the body (-32020 otherwise).
fn check_modern_headers(
    headers: &HeaderMap,
    method: &str,
    params: Option<&Value>,
) -> Result<(), RpcError> {
    let mismatch = |msg: String| RpcError::new(code::HEADER_MISMATCH, msg);
    let get = |name: &str, display: &str| -> Result<&str, RpcError> {
        match headers.get(name) {
            None => Err(mismatch(format!(
                "Header mismatch: missing required {display} header"
            ))),
            Some(v) => v.to_str().map_err(|_| {
                mismatch(format!(
                    "Header mismatch: {display} header contains invalid characters"
                ))
            }),
        }
    };
    let version = get(MCP_PROTOCOL_VERSION, "MCP-Protocol-Version")?;
    let header_method = get(MCP_METHOD, "Mcp-Method")?;
    if header_method != method {
        return Err(mismatch(format!(
            "Header mismatch: Mcp-Method header value '{header_method}' does not match body \
             value '{method}'"
        )));
    }
    let name_field = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // SEP-2663: the task's id.
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    };
    if let Some(field) = name_field
        && let Some(body_name) = params.and_then(|p| p.get(field)).and_then(Value::as_str)
    {
        let raw = get(MCP_NAME, "Mcp-Name")?;
        let header_name = decode_header_value(raw).ok_or_else(|| {
            mismatch("Header mismatch: Mcp-Name header has invalid Base64 encoding".to_owned())
        })?;
        if header_name != body_name {
            return Err(mismatch(format!(
                "Header mismatch: Mcp-Name header value '{header_name}' does not match body \
                 value '{body_name}'"
            )));
        }
    }
    let body_version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    if let Some(body_version) = body_version
        && body_version != version
    {
        return Err(mismatch(format!(
            "Header mismatch: MCP-Protocol-Version header value '{version}' does not match \
             body value '{body_version}'"
        )));
    }
    Ok(())
}

/// Decode the `=?base64?…?=` sentinel form of a header value.
fn decode_header_value(v: &str) -> Option<String> {
    match v
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(b64) => String::from_utf8(switchboard_testserver::b64::decode(b64)?).ok(),
        None => Some(v.to_owned()),
    }
}

// ---------------------------------------------------------------------------
// Streamable HTTP: GET and DELETE /mcp

async fn mcp_get(State(st): State<Arc<HttpState>>, headers: HeaderMap) -> Response {
    if let Some(r) = st.precheck(&headers, false) {
        return r;
    }
    if st.base.config.era == Era::Modern || st.base.config.has_fault(Fault::NoGetStream) {
        return method_not_allowed();
    }
    if !accepts_sse(&headers) {
        return text_response(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: GET /mcp requires Accept: text/event-stream",
        );
    }
    let session = match st.session_for(&headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Some((sid, last)) = header_str(&headers, LAST_EVENT_ID).and_then(parse_event_id) {
        let resume = lock(&session.resumable).remove(sid);
        if let Some(resume) = resume {
            return st.resume(sid.to_owned(), last, resume);
        }
    }
    // Standalone stream for server-initiated messages (server→client
    // requests of JSON-answered calls, list changes, resource updates), with
    // keepalive comments, until the session or the server goes away.
    let (btx, brx) = mpsc::unbounded_channel::<GetItem>();
    let backlog = {
        let mut streams = lock(&session.get_streams);
        streams.retain(|s| !s.is_closed());
        streams.push(btx);
        std::mem::take(&mut *lock(&session.get_backlog))
    };
    sse_response(sse_body(
        backlog,
        brx,
        get_item,
        true,
        st.shutdown.clone(),
        (),
    ))
}

impl HttpState {
    /// Resume a stream cut by `cut-stream`: replay what followed event
    /// `last`, then forward the rest of the request's messages.
    fn resume(&self, sid: String, last: u64, resume: Resume) -> Response {
        let Resume {
            sent,
            mut next,
            pending,
            mut rx,
        } = resume;
        let event = |n: u64, m: &Value| {
            sse_event(Some(&format!("{sid}-{n}")), Some("message"), &m.to_string())
        };
        let mut first: Vec<Bytes> = sent
            .iter()
            .filter(|(n, _)| *n > last)
            .map(|(n, m)| event(*n, m))
            .collect();
        let mut done = false;
        if let Some(m) = pending {
            first.push(event(next, &m));
            next += 1;
            done = is_response(&m);
        }
        let (btx, brx) = mpsc::unbounded_channel::<Bytes>();
        if !done {
            tokio::spawn(async move {
                while let Some(m) = rx.recv().await {
                    if btx
                        .send(sse_event(
                            Some(&format!("{sid}-{next}")),
                            Some("message"),
                            &m.to_string(),
                        ))
                        .is_err()
                    {
                        break;
                    }
                    next += 1;
                    if is_response(&m) {
                        break;
                    }
                }
            });
        }
        sse_response(sse_body(
            first,
            brx,
            |b: Bytes| b,
            false,
            self.shutdown.clone(),
            (),
        ))
    }
}

/// `s3-2` → (`s3`, 2).
fn parse_event_id(v: &str) -> Option<(&str, u64)> {
    let (sid, n) = v.trim().rsplit_once('-')?;
    Some((sid, n.parse().ok()?))
}

async fn mcp_delete(State(st): State<Arc<HttpState>>, headers: HeaderMap) -> Response {
    if let Some(r) = st.precheck(&headers, false) {
        return r;
    }
    if st.base.config.era == Era::Modern {
        return method_not_allowed();
    }
    match st.session_for(&headers) {
        Ok(s) => {
            st.remove_session(&s.id);
            StatusCode::OK.into_response()
        }
        Err(r) => r,
    }
}

// ---------------------------------------------------------------------------
// Legacy HTTP+SSE (2024-11-05)

async fn sse_get(State(st): State<Arc<HttpState>>, headers: HeaderMap) -> Response {
    if let Some(r) = st.precheck(&headers, false) {
        return r;
    }
    let id = random_id();
    let (in_tx, mut in_rx) = mpsc::unbounded_channel::<Value>();
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Out>();
    lock(&st.sse_sessions).insert(id.clone(), in_tx);
    let shared = Arc::new(st.base.fork());
    let exit_tx = st.exit_tx.clone();
    tokio::spawn(async move {
        let mut conn = Conn::new(shared, out_tx);
        while let Some(msg) = in_rx.recv().await {
            conn.reap();
            if let Some(code) = conn.handle(msg) {
                let _ = exit_tx.send(code);
                break;
            }
        }
        // The stream is gone: dropping `conn` aborts its requests.
    });
    let endpoint = sse_event(None, Some("endpoint"), &format!("/messages?session={id}"));
    let guard = SseSessionGuard {
        state: Arc::clone(&st),
        id,
    };
    sse_response(sse_body(
        vec![endpoint],
        out_rx,
        out_event,
        true,
        st.shutdown.clone(),
        guard,
    ))
}

fn out_event(out: Out) -> Bytes {
    match out {
        Out::Msg(mut bytes) => {
            while bytes.last() == Some(&b'\n') {
                bytes.pop();
            }
            let mut buf = Vec::with_capacity(bytes.len() + 24);
            buf.extend_from_slice(b"event: message\ndata: ");
            buf.extend_from_slice(&bytes);
            buf.extend_from_slice(b"\n\n");
            Bytes::from(buf)
        }
        Out::Exit(_) => Bytes::new(),
    }
}

async fn messages_post(State(st): State<Arc<HttpState>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    if let Some(r) = st.precheck(headers, true) {
        return r;
    }
    let session = parts.uri.query().and_then(|q| {
        q.split('&').find_map(|kv| match kv.split_once('=') {
            Some(("session" | "sessionId" | "session_id", v)) => Some(v.to_owned()),
            _ => None,
        })
    });
    let Some(session) = session else {
        return text_response(StatusCode::BAD_REQUEST, "Bad Request: missing session");
    };
    let bytes = match read_body(body, headers).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    st.base.record(&bytes);
    let mut msg: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => return json_response(StatusCode::BAD_REQUEST, &server::parse_error()),
    };
    if let Some(auth) = &st.auth {
        if let Some(r) = auth.check_request(headers, &msg) {
            return r;
        }
        authserver::rewrite_admin_call(&mut msg);
    }
    let tx = lock(&st.sse_sessions).get(&session).cloned();
    match tx {
        Some(tx) if tx.send(msg).is_ok() => text_response(StatusCode::ACCEPTED, "Accepted"),
        _ => text_response(StatusCode::NOT_FOUND, "Session not found"),
    }
}

// ---------------------------------------------------------------------------
// WebSocket

async fn ws_get(
    State(st): State<Arc<HttpState>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if let Some(r) = st.precheck(&headers, false) {
        return r;
    }
    ws.protocols(["mcp"])
        .on_upgrade(move |socket| ws_session(st, socket))
}

async fn ws_session(st: Arc<HttpState>, mut socket: WebSocket) {
    let shared = Arc::new(st.base.fork());
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Out>();
    let mut conn = Conn::new(shared, out_tx);
    let mut shutdown = st.shutdown.clone();
    loop {
        tokio::select! {
            incoming = socket.recv() => {
                let data: Vec<u8> = match incoming {
                    Some(Ok(Message::Text(t))) => t.as_str().as_bytes().to_vec(),
                    Some(Ok(Message::Binary(b))) => b.to_vec(),
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                };
                conn.reap();
                if data.trim_ascii().is_empty() {
                    continue;
                }
                conn.shared.record(&data);
                match serde_json::from_slice(&data) {
                    Ok(msg) => {
                        if let Some(code) = conn.handle(msg) {
                            let _ = st.exit_tx.send(code);
                            break;
                        }
                    }
                    Err(_) => send(&conn.tx, &server::parse_error()),
                }
            }
            out = out_rx.recv() => {
                let Some(Out::Msg(mut bytes)) = out else { break };
                while bytes.last() == Some(&b'\n') {
                    bytes.pop();
                }
                let text = String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                if socket.send(Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
            _ = shutdown.changed() => break,
        }
    }
    // Dropping `conn` aborts requests still running.
}

// ---------------------------------------------------------------------------
// Helpers

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn origin_is_local(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(r) => r.split(']').next().unwrap_or(""),
        None => rest.split([':', '/']).next().unwrap_or(""),
    };
    let host = host.to_ascii_lowercase();
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "::1") || host.ends_with(".localhost")
}

async fn read_body(body: Body, headers: &HeaderMap) -> Result<Bytes, Response> {
    let too_large = || text_response(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large");
    if header_str(headers, "content-length")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > BODY_LIMIT as u64)
    {
        return Err(too_large());
    }
    axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .map_err(|_| too_large())
}

/// Which response format the client's `Accept` header allows (406 if none).
#[allow(clippy::result_large_err)]
fn choose_format(
    headers: &HeaderMap,
    default: HttpResponseMode,
) -> Result<HttpResponseMode, Response> {
    let mut any = false;
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            any = true;
            let mut parts = item.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            if refused {
                continue;
            }
            match media.as_str() {
                "*/*" => (json, sse) = (true, true),
                "application/json" | "application/*" => json = true,
                "text/event-stream" | "text/*" => sse = true,
                _ => {}
            }
        }
    }
    match (any, json, sse) {
        (false, _, _) | (true, true, true) => Ok(default),
        (true, true, false) => Ok(HttpResponseMode::Json),
        (true, false, true) => Ok(HttpResponseMode::Sse),
        (true, false, false) => Err(text_response(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: accept application/json and/or text/event-stream",
        )),
    }
}

fn accepts_sse(headers: &HeaderMap) -> bool {
    matches!(
        choose_format(headers, HttpResponseMode::Sse),
        Ok(HttpResponseMode::Sse)
    )
}

fn is_response(m: &Value) -> bool {
    m.get("method").is_none() && (m.get("result").is_some() || m.get("error").is_some())
}

fn random_id() -> String {
    use std::hash::{BuildHasher, RandomState};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let a = RandomState::new().hash_one((n, t));
    let b = RandomState::new().hash_one((t, a, n));
    format!("{a:016x}{b:016x}")
}

fn text_response(status: StatusCode, text: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

fn method_not_allowed() -> Response {
    let mut r = text_response(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    r
}

fn json_response(status: StatusCode, msg: &Value) -> Response {
    let body = serde_json::to_vec(msg).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// An HTTP error with a JSON-RPC error body without an id.
fn rpc_error_response(status: StatusCode, code: i64, message: impl Into<String>) -> Response {
    json_response(
        status,
        &error_response(Value::Null, RpcError::new(code, message)),
    )
}

/// One complete JSON-RPC message as JSON or as a one-event SSE stream.
fn reply_response(format: HttpResponseMode, status: StatusCode, msg: &Value) -> Response {
    match format {
        HttpResponseMode::Json => json_response(status, msg),
        HttpResponseMode::Sse => {
            let event = sse_event(None, Some("message"), &msg.to_string());
            let mut r = sse_response(Body::from(event));
            *r.status_mut() = status;
            r
        }
    }
}

fn sse_event(id: Option<&str>, event: Option<&str>, data: &str) -> Bytes {
    let mut buf = String::with_capacity(data.len() + 32);
    if let Some(id) = id {
        buf.push_str("id: ");
        buf.push_str(id);
        buf.push('\n');
    }
    if let Some(event) = event {
        buf.push_str("event: ");
        buf.push_str(event);
        buf.push('\n');
    }
    for line in data.split('\n') {
        buf.push_str("data: ");
        buf.push_str(line);
        buf.push('\n');
    }
    buf.push('\n');
    Bytes::from(buf)
}

fn sse_response(body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        body,
    )
        .into_response()
}

/// An SSE body: the `first` frames, then `fmt(item)` for every item from
/// `rx` until it closes (optionally with keepalive comments), ending early
/// when the server shuts down. `guard` lives as long as the body.
fn sse_body<T, G>(
    first: Vec<Bytes>,
    rx: mpsc::UnboundedReceiver<T>,
    fmt: fn(T) -> Bytes,
    keepalive: bool,
    shutdown: watch::Receiver<()>,
    guard: G,
) -> Body
where
    T: Send + 'static,
    G: Send + 'static,
{
    struct St<T, G> {
        first: VecDeque<Bytes>,
        rx: mpsc::UnboundedReceiver<T>,
        ticker: Option<tokio::time::Interval>,
        shutdown: watch::Receiver<()>,
        _guard: G,
    }
    let ticker = keepalive.then(|| {
        let mut t = tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    let state = St {
        first: first.into(),
        rx,
        ticker,
        shutdown,
        _guard: guard,
    };
    let stream = futures_util::stream::unfold(state, move |mut st| async move {
        if let Some(b) = st.first.pop_front() {
            return Some((Ok::<_, Infallible>(b), st));
        }
        tokio::select! {
            m = st.rx.recv() => m.map(|m| (Ok(fmt(m)), st)),
            () = tick(&mut st.ticker) => Some((Ok(Bytes::from_static(b": keepalive\n\n")), st)),
            _ = st.shutdown.changed() => None,
        }
    });
    Body::from_stream(stream)
}

async fn tick(ticker: &mut Option<tokio::time::Interval>) {
    match ticker {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
