//! A [`ServerHandler`] over Streamable HTTP (feature `http-server`): one
//! endpoint. A `POST` is answered with `application/json` — unless the
//! handler says something about the request before answering it
//! (progress, a request of its own such as `elicitation/create`): then,
//! when the client's `Accept` takes `text/event-stream`, the answer is an
//! event stream carrying those messages and ending with the answer. For
//! a host of 2025-11-25 or later in a session, so does an answer slower
//! than [`HttpServeOptions::stream_after`]: such a stream is resumable
//! (SEP-1699: a priming event, ids, `retry:`), a dropped connection does
//! not cancel its request, and a `GET` with `Last-Event-ID` takes it up
//! within [`HttpServeOptions::resume_window`].
//!
//! - **Session era**: an `initialize` POST opens a session (its own
//!   connection to the handler) and its answer carries `Mcp-Session-Id`,
//!   128 random bits; later POSTs name it, an unknown one gets 404, a
//!   `DELETE` ends it, a session idle longer than
//!   [`HttpServeOptions::session_idle`] ends by itself, and at most
//!   [`HttpServeOptions::max_sessions`] exist at once: then the least
//!   recently used one with no request in progress ends for a newcomer
//!   (so idle sessions of one host cannot keep another out), and only
//!   when all are busy is the newcomer refused (503). Each session is its
//!   own connection to the handler, with its own cap on requests in
//!   progress ([`ServeOptions::max_concurrent_requests`]).
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
//!   local gateway). Before any body is read: the `Host` must be
//!   `localhost`, an IP address or one of
//!   [`HttpServeOptions::allowed_hosts`], and an `Origin` a loopback one or
//!   one of [`HttpServeOptions::allowed_origins`] (DNS-rebinding
//!   protection), else 403; with [`HttpServeOptions::bearer_token`] (at
//!   least [`MIN_TOKEN_LEN`] characters) every request must carry it (401
//!   otherwise, compared in constant time). Bodies are bounded in size
//!   ([`HttpServeOptions::max_body`], 413) and time
//!   ([`HttpServeOptions::body_timeout`], 408); connections in number and
//!   time (see `conn`); a host that leaves its event stream full for
//!   [`HttpServeOptions::stream_stall`] is cut off from it. A session's
//!   request id already in flight is refused at once. `GET /healthz`
//!   answers `ok` (Host checked, no token), with the
//!   [`HttpServeOptions::instance`] id in its [`INSTANCE_HEADER`] when set; `GET /metrics` answers
//!   [`HttpServeOptions::metrics`] when set, behind every check.
//!
//! - **Hosts as users**: with [`HttpServeOptions::host_auth`] each
//!   request's token is checked by a [`HostAuth`] and its user reaches the
//!   handler; a refusal is 401 naming [`HttpServeOptions::resource_metadata`]
//!   (RFC 9728), served at `/.well-known/oauth-protected-resource`. A
//!   session belongs to the user who opened it: another user's request
//!   naming it gets 404, as for an unknown session.
//!
//! One file per concern: `guard` (the checks every request passes before
//! its body is read: Host, Origin, bearer token), `auth` (hosts as users), `conn` (the accept loop
//! and each connection's limits and deadlines), `route` (the endpoint's
//! routes), `link` (a connection to the handler and where what it says
//! goes), `body` (answers and event streams), `stream` (a request's event
//! stream, resumable or not), `seal` (sealed session ids),
//! `stateless` (the 2026-07-28 checks of a request without a session).

mod answer;
mod auth;
mod body;
mod conn;
mod guard;
mod link;
mod pages;
mod params;
mod route;
mod seal;
mod stateless;
mod stream;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::Request;
use hyper::body::Incoming as Body;
use tokio::net::TcpListener;
use tokio::time::Instant;

use super::{ServeOptions, ServerHandler};
pub use auth::{Authenticator, HostAuth, ResourceMetadata, TokenRefused};
pub use guard::{MIN_TOKEN_LEN, check_token, generate_token};
use link::Link;
pub use pages::{Page, PageRequest, Pages};
pub use seal::SessionKey;

pub(super) const SESSION_HEADER: &str = "mcp-session-id";

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
    /// How long a request may take before 504 — on an event stream,
    /// since it last said something, then its answer is a -32001 error.
    /// Default 5 minutes.
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
    /// Host names (as in the `Host` header, without the port) served
    /// besides loopback ones and the listener's own address. Default none.
    pub allowed_hosts: Vec<String>,
    /// Connections open at once; past it a connection that has not sent
    /// a request yet is closed for the newcomer, else the newcomer waits.
    /// Default 256.
    pub max_connections: usize,
    /// Connections open at once that have not sent a whole request head
    /// yet; past it the oldest of them is closed. Default 64.
    pub max_pending_connections: usize,
    /// How long a new connection may take to send its first request's
    /// head. Default 10 seconds.
    pub header_timeout: Duration,
    /// How long a connection may stay open with no request in progress
    /// (keep-alive), the next request's head included. Default 60 seconds.
    pub idle_timeout: Duration,
    /// How long a request's body may take to arrive. Default 30 seconds.
    pub body_timeout: Duration,
    /// How long a host may leave its event stream unread while the
    /// handler has something for it: then the stream is closed (and its
    /// request cancelled), not buffered. Default 30 seconds.
    pub stream_stall: Duration,
    /// How long a request's resumable event stream (a 2025-11-25 host's,
    /// in a session: SEP-1699) lives on without a connection: the request
    /// runs on, its last events are kept, and a `GET` with `Last-Event-ID`
    /// takes it up; after that the request is cancelled. `None`: no
    /// stream is resumable, a dropped connection cancels its request.
    /// Default 60 seconds.
    pub resume_window: Option<Duration>,
    /// How long a request of such a host may take before its answer
    /// becomes a resumable event stream (a priming event at once, the
    /// answer at the end), so a connection lost while it runs loses
    /// nothing; a quicker answer is plain JSON. Default 50 ms.
    pub stream_after: Duration,
    /// An id `GET /healthz` answers in its [`INSTANCE_HEADER`] header:
    /// what tells a client that this endpoint is a given server instance
    /// (switchboard's gateway recognises itself by it in a host's config).
    /// Random per process and no secret: `/healthz` needs no token.
    /// Default none.
    pub instance: Option<String>,
    /// Hosts as users: each request's bearer token is checked by this
    /// authenticator, and the user it names reaches the handler
    /// (`RequestContext::user`); a session is bound to the user who
    /// opened it. Exclusive with [`HttpServeOptions::bearer_token`].
    /// Default none.
    pub host_auth: Option<Authenticator>,
    /// What the endpoint says of itself as an OAuth protected resource:
    /// served at `/.well-known/oauth-protected-resource` (and with the
    /// endpoint's path after it), and named in every 401's challenge.
    /// Default none.
    pub resource_metadata: Option<ResourceMetadata>,
    /// Pages for a browser on other paths than the endpoint's (`GET`
    /// only; the `Host` check applies, no token is asked). Default none.
    pub pages: Option<Pages>,
}

/// The header of `GET /healthz`'s answer holding
/// [`HttpServeOptions::instance`].
pub const INSTANCE_HEADER: &str = "switchboard-instance";

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
            allowed_hosts: Vec::new(),
            max_connections: 256,
            max_pending_connections: 64,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            stream_stall: Duration::from_secs(30),
            resume_window: Some(Duration::from_secs(60)),
            stream_after: Duration::from_millis(50),
            instance: None,
            host_auth: None,
            resource_metadata: None,
            pages: None,
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

    /// Sets [`HttpServeOptions::instance`].
    pub fn instance(mut self, id: impl Into<String>) -> Self {
        self.instance = Some(id.into());
        self
    }

    /// Sets [`HttpServeOptions::bearer_token`].
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Sets [`HttpServeOptions::host_auth`].
    pub fn host_auth(mut self, auth: impl HostAuth) -> Self {
        self.host_auth = Some(Authenticator::new(auth));
        self
    }

    /// Sets [`HttpServeOptions::resource_metadata`].
    pub fn resource_metadata(mut self, metadata: ResourceMetadata) -> Self {
        self.resource_metadata = Some(metadata);
        self
    }

    /// Sets [`HttpServeOptions::pages`].
    pub fn pages(mut self, pages: Pages) -> Self {
        self.pages = Some(pages);
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

pub(super) struct State {
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
                let link = Arc::new(Link::open(
                    self.handler.clone(),
                    self.options.serve.clone(),
                    self.options.stream_stall,
                    None,
                ));
                *shared = Some(link.clone());
                link
            }
        }
    }
}

/// Ends the sessions idle too long, and forgets sealed sessions ended
/// longer ago than their lifetime; forever.
async fn sweep(state: Arc<State>) {
    let expiry = state.options.session_idle;
    let mut sweep = tokio::time::interval(expiry.max(Duration::from_secs(1)) / 2);
    loop {
        sweep.tick().await;
        let now = Instant::now();
        state
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, link| {
                now.duration_since(*link.last_used.lock().unwrap_or_else(|e| e.into_inner()))
                    < expiry
            });
        let lifetime = state.options.session_lifetime;
        state
            .ended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, at| now.duration_since(*at) < lifetime);
    }
}

/// Most ended sealed sessions remembered.
pub(super) const MAX_ENDED: usize = 16 * 1024;

/// A running HTTP endpoint; dropping it stops accepting (sessions end with
/// their last request).
pub struct HttpServer {
    local_addr: SocketAddr,
    accept: tokio_util::task::AbortOnDropHandle<()>,
    stop: tokio_util::sync::CancellationToken,
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

    /// Stops gracefully: the listener closes (a new connection is
    /// refused), no further request is read on an open connection, and
    /// every call in progress runs to its answer; an event stream with no
    /// call behind it is closed. Resolves when all that is done, or when
    /// `grace` is up, whereupon what still runs is dropped. (Dropping the
    /// server instead stops everything at once.)
    pub async fn shutdown(mut self, grace: Duration) {
        self.stop.cancel();
        let _ = tokio::time::timeout(grace, &mut self.accept).await;
    }
}

/// Serves `handler` on `listener` (see the module documentation).
///
/// # Errors
/// When the listener's address cannot be read, the bearer token is
/// too short ([`check_token`]), or both a bearer token and a
/// [`HostAuth`] are set.
pub fn serve_http(
    handler: Arc<dyn ServerHandler>,
    listener: TcpListener,
    options: HttpServeOptions,
) -> std::io::Result<HttpServer> {
    let local_addr = listener.local_addr()?;
    if options.bearer_token.is_some() && options.host_auth.is_some() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a static bearer token and a host authenticator are exclusive: one user, or users",
        ));
    }
    if let Some(token) = &options.bearer_token {
        guard::check_token(token)
            .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
    }
    let state = Arc::new(State {
        handler,
        options,
        sessions: Mutex::new(HashMap::new()),
        ended: Mutex::new(HashMap::new()),
        stateless: Mutex::new(None),
        next_id: std::sync::atomic::AtomicU64::new(1),
    });
    let sweeping = state.clone();
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    let accept = tokio::spawn(async move {
        tokio::select! {
            () = conn::accept_loop(state, listener, stopped) => {}
            () = sweep(sweeping) => {}
        }
    });
    Ok(HttpServer {
        local_addr,
        accept: tokio_util::task::AbortOnDropHandle::new(accept),
        stop,
    })
}

/// Whether the request's `Accept` takes an event stream.
pub(super) fn accepts_events(request: &Request<Body>) -> bool {
    request
        .headers()
        .get_all(hyper::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream") || v.contains("*/*"))
}
