//! Serving MCP: the server side, on the same engine and types as the client.
//!
//! A [`ServerHandler`] says what the server offers (tools, resources,
//! prompts, completion); [`serve`] runs it over any [`Connection`] (stdio:
//! [`serve_stdio`]) and answers clients of **both eras** on it, per request:
//!
//! - the session era (2024-11-05 … 2025-11-25): `initialize` picks the
//!   version (the client's if we speak it, else our newest), requests before
//!   it are refused, `notifications/initialized` is accepted;
//! - the stateless era (2026-07-28): `server/discover`, and every request
//!   carrying `_meta.io.modelcontextprotocol/protocolVersion` is checked
//!   (an unsupported version gets `-32022` naming what we support) and
//!   answered with `resultType` and the server's identity in `_meta`.
//!
//! `ping` and cancellation come from the engine: a `notifications/cancelled`
//! aborts the handler's future. Handlers run concurrently, at most
//! [`ServeOptions::max_concurrent_requests`] at once; more are refused with
//! an error that says so, so a flood of requests costs bounded memory.
//!
//! ```
//! use std::sync::Arc;
//! use switchboard::server::{Reply, RequestContext, ServerHandler, serve};
//! use switchboard::transport::framing::io_connection;
//! use switchboard::types::{
//!     CallToolRequestParams, CallToolResult, Implementation, ListToolsResult,
//!     PaginatedRequestParams, RequestOutcome, ServerCapabilities, Tool,
//! };
//!
//! struct Echo;
//!
//! impl ServerHandler for Echo {
//!     fn info(&self) -> Implementation {
//!         Implementation::new("echo", "1.0.0")
//!     }
//!     fn capabilities(&self) -> ServerCapabilities {
//!         ServerCapabilities { tools: Some(Default::default()), ..Default::default() }
//!     }
//!     fn list_tools(&self, _: PaginatedRequestParams, _: RequestContext) -> Reply<ListToolsResult> {
//!         Box::pin(async {
//!             let tool: Tool = serde_json::from_value(serde_json::json!({
//!                 "name": "echo", "inputSchema": {"type": "object"}
//!             })).unwrap();
//!             Ok(ListToolsResult { tools: vec![tool], ..Default::default() })
//!         })
//!     }
//!     fn call_tool(
//!         &self,
//!         params: CallToolRequestParams,
//!         _: RequestContext,
//!     ) -> Reply<RequestOutcome<CallToolResult>> {
//!         let text = format!("{:?}", params.arguments);
//!         Box::pin(async move { Ok(RequestOutcome::Complete(CallToolResult::text(text))) })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (client_end, server_end) = tokio::io::duplex(64 * 1024);
//! let (read, write) = tokio::io::split(server_end);
//! let server = serve(Arc::new(Echo), io_connection(read, write), Default::default());
//! # drop((client_end, server));
//! # }
//! ```

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use switchboard_types::jsonrpc::ErrorObject;
use switchboard_types::skills::SKILLS_EXTENSION;
use switchboard_types::{
    ClientCapabilities, Era, Implementation, JsonObject, PaginatedRequestParams, ProtocolVersion,
    codes, meta,
};
use tokio::sync::Semaphore;

use crate::engine::{
    Engine, EngineConfig, EngineError, HandlerResult, RequestHandler, ServerRequest,
};
use crate::transport::{BoxFuture, Connection, TransportError};

mod answer;
mod handler;
pub use answer::exact_json;
pub use handler::{HostUser, ServerHandler};
#[cfg(feature = "http-server")]
pub mod http;
pub mod tasks;
#[cfg(test)]
mod tests;

/// What a handler method returns: its answer, later.
pub type Reply<T> = BoxFuture<'static, Result<T, ErrorObject>>;

/// What a handler knows about the request it answers, and the way back to
/// the client.
#[derive(Clone, Debug)]
pub struct RequestContext {
    /// The era the request was made in.
    pub era: Era,
    /// The revision: the one `initialize` chose, or the request's own.
    pub protocol_version: ProtocolVersion,
    /// Who the client is, when it said.
    pub client_info: Option<Implementation>,
    /// What the client supports.
    pub client_capabilities: ClientCapabilities,
    /// The request's `_meta` (progress token, trace context, …).
    pub meta: JsonObject,
    /// The client, for notifications about this request.
    pub peer: Peer,
    /// This request's id (JSON text), so that what is sent about it can
    /// travel with it (on HTTP, on the POST's own stream).
    related: Option<Arc<str>>,
    /// The user the host's token names, when the endpoint checks one.
    user: Option<Arc<HostUser>>,
}

tokio::task_local! {
    /// The id (JSON text) of the client request whose handler is running:
    /// what a transport needs to send a message on that request's stream.
    static RELATED: Option<Arc<str>>;
}

/// The id (JSON text) of the client request being handled on this task,
/// if any: a transport sends what the handler says on that request's own
/// stream (Streamable HTTP).
#[cfg(feature = "http-server")]
pub(crate) fn related_request() -> Option<Arc<str>> {
    RELATED.try_with(Clone::clone).ok().flatten()
}

impl RequestContext {
    /// The user this request is made for: the one its host's access token
    /// names, when the endpoint authenticates hosts as users
    /// (`HttpServeOptions::host_auth`); `None` otherwise (stdio, a static
    /// bearer token, no token).
    pub fn user(&self) -> Option<&HostUser> {
        self.user.as_deref()
    }

    /// The request's progress token, if it asked for progress.
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta.get(meta::PROGRESS_TOKEN)
    }

    /// Reports progress on this request, when the client asked for it.
    ///
    /// # Errors
    /// As [`Peer::notify`].
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), EngineError> {
        let Some(token) = self.progress_token() else {
            return Ok(());
        };
        let mut params = serde_json::json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = total.into();
        }
        if let Some(message) = message {
            params["message"] = message.into();
        }
        RELATED
            .scope(
                self.related.clone(),
                self.peer.notify("notifications/progress", Some(params)),
            )
            .await
    }

    /// The id of this request as a `subscriptions/listen` stream's
    /// subscription id (`_meta["io.modelcontextprotocol/subscriptionId"]`
    /// of what is sent on it): the request's JSON-RPC id.
    pub fn subscription_id(&self) -> Option<Value> {
        self.related
            .as_deref()
            .and_then(|id| serde_json::from_str(id).ok())
    }

    /// Sends a notification about this request (a log line, say); over
    /// Streamable HTTP it travels on this request's own response stream.
    ///
    /// # Errors
    /// When the client is gone.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), EngineError> {
        RELATED
            .scope(self.related.clone(), self.peer.notify(method, params))
            .await
    }

    /// Sends a request about this request to a session-era client
    /// (`elicitation/create`, `sampling/createMessage`, `roots/list`) and
    /// waits at most `timeout` for its result. Over Streamable HTTP it
    /// travels on this request's own response stream. A 2026-07-28 client
    /// takes no requests: answer it [`RequestOutcome::InputRequired`].
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, EngineError> {
        RELATED
            .scope(
                self.related.clone(),
                self.peer.request(method, params, timeout),
            )
            .await
    }
}

/// The way back to the connected client: notifications.
#[derive(Clone, Default)]
pub struct Peer {
    engine: Arc<OnceLock<Weak<Engine>>>,
    /// The connection's session (its handshake): what the client declared.
    dispatch: Arc<OnceLock<Weak<Dispatch>>>,
    /// Flips to `true` when a session-era client sends
    /// `notifications/initialized`.
    initialized: Arc<tokio::sync::watch::Sender<bool>>,
    /// The user (`sub`) the connection was opened for, when hosts are
    /// users.
    user: Option<Arc<str>>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").finish_non_exhaustive()
    }
}

impl Peer {
    /// The user (`sub`) this connection was opened for, when the endpoint
    /// authenticates hosts as users (a session-era session belongs to the
    /// user who opened it); `None` otherwise, and for the connection that
    /// carries 2026-07-28 requests, each of which names its own user
    /// ([`RequestContext::user`]).
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// Whether `other` is this same client connection (a clone of this
    /// `Peer`): what tells one host of a server from another.
    pub fn same_connection(&self, other: &Peer) -> bool {
        Arc::ptr_eq(&self.engine, &other.engine)
    }

    /// Resolves with `true` once a session-era client has sent
    /// `notifications/initialized` — from then on the server may send it
    /// notifications of its own (list changes) — or with `false` when the
    /// connection is gone first. A 2026-07-28 client never sends it: it
    /// hears of changes only on the streams it asks for.
    pub fn session_initialized(&self) -> impl std::future::Future<Output = bool> + Send + 'static {
        let mut initialized = self.initialized.subscribe();
        let closed = self.closed();
        async move {
            let seen = tokio::select! {
                outcome = initialized.wait_for(|i| *i) => outcome.map(|_| true).unwrap_or(false),
                () = closed => false,
            };
            seen || *initialized.borrow()
        }
    }

    /// The capabilities a session-era client declared in `initialize`,
    /// once it has sent `notifications/initialized`; `None` when the
    /// connection ends first (a 2026-07-28 client never sends it: it
    /// declares its capabilities on each request).
    pub fn initialized_capabilities(
        &self,
    ) -> impl std::future::Future<Output = Option<ClientCapabilities>> + Send + 'static {
        let initialized = self.session_initialized();
        let dispatch = self.dispatch.clone();
        async move {
            if !initialized.await {
                return None;
            }
            let dispatch = dispatch.get().and_then(Weak::upgrade)?;
            let state = dispatch.state.lock().unwrap_or_else(|e| e.into_inner());
            state.initialized.as_ref().map(|(_, caps, _)| caps.clone())
        }
    }

    /// The client's notifications from now on
    /// (`notifications/roots/list_changed`, say), as the engine's
    /// subscribers get them (a bounded buffer; a slow reader loses the
    /// overflow). Ends when the connection does (at once if it is gone).
    pub fn notifications(&self) -> tokio::sync::mpsc::Receiver<crate::engine::ServerNotification> {
        match self.engine.get().and_then(Weak::upgrade) {
            Some(engine) => engine.subscribe(),
            None => tokio::sync::mpsc::channel(1).1,
        }
    }

    /// Resolves once the connection is gone (at once if it already is).
    /// Holds nothing of the connection while it waits.
    pub fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let watch = self
            .engine
            .get()
            .and_then(Weak::upgrade)
            .map(|engine| engine.closed_watch());
        async move {
            if let Some(mut watch) = watch {
                let _ = watch.wait_for(|closed| *closed).await;
            }
        }
    }

    /// Sends a notification to the client.
    ///
    /// # Errors
    /// [`EngineError::Disconnected`] when the connection is gone, or the
    /// transport's error when the message could not be sent.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), EngineError> {
        let Some(engine) = self.engine.get().and_then(Weak::upgrade) else {
            return Err(EngineError::Disconnected {
                server: Arc::from("client"),
                reason: Arc::new(TransportError::ClosedByClient),
            });
        };
        let params = params
            .map(|p| serde_json::value::to_raw_value(&p).expect("a JSON value always serializes"));
        engine.notify(method, params.as_deref()).await
    }

    /// Sends a request to the client and waits at most `timeout` for its
    /// result (the client's JSON-RPC error is [`EngineError::Server`]).
    /// Prefer [`RequestContext::request`] for a request made while
    /// handling one: over HTTP it needs that request's stream.
    ///
    /// # Errors
    /// [`EngineError::Disconnected`] when the connection is gone, the
    /// client's error, or [`EngineError::Timeout`].
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, EngineError> {
        let Some(engine) = self.engine.get().and_then(Weak::upgrade) else {
            return Err(EngineError::Disconnected {
                server: Arc::from("client"),
                reason: Arc::new(TransportError::ClosedByClient),
            });
        };
        let params =
            serde_json::value::to_raw_value(&params).expect("a JSON value always serializes");
        let id = engine.allocate_id();
        let raw = engine
            .request(
                id,
                method,
                Some(&params),
                crate::engine::RequestOptions::timeout(timeout),
            )
            .await?;
        raw.parse().map_err(|e| EngineError::ProtocolViolation {
            server: engine.server().clone(),
            method: method.to_owned(),
            what: format!("the result is not JSON: {e}"),
        })
    }
}

/// Limits of one served connection.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServeOptions {
    /// Requests the client may have running at once; more are refused with
    /// an error saying so. Default 256.
    pub max_concurrent_requests: usize,
    /// The session-era revisions spoken, newest first. Default all four.
    pub legacy_versions: Vec<ProtocolVersion>,
    /// The stateless-era revisions spoken. Default 2026-07-28. Empty: the
    /// server answers only the session era.
    pub modern_versions: Vec<ProtocolVersion>,
    /// A name for the client in logs. Default `client`.
    pub peer_name: String,
    /// A session-era session already initialized elsewhere (another
    /// replica of an HTTP server): served as if its `initialize` and
    /// `notifications/initialized` had come on this connection.
    pub session: Option<SessionState>,
    /// The user (`sub`) the connection is served for, when hosts are
    /// users: what [`Peer::user`] says. Set by the HTTP endpoint.
    pub(crate) owner: Option<Arc<str>>,
}

/// What a session-era client's `initialize` settled.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SessionState {
    /// The revision chosen.
    #[serde(rename = "v")]
    pub protocol_version: ProtocolVersion,
    /// What the client declared.
    #[serde(rename = "c")]
    pub client_capabilities: ClientCapabilities,
    /// Who the client said it is.
    #[serde(rename = "i")]
    pub client_info: Implementation,
}

impl SessionState {
    /// A settled session.
    pub fn new(
        protocol_version: ProtocolVersion,
        client_capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        Self {
            protocol_version,
            client_capabilities,
            client_info,
        }
    }
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            max_concurrent_requests: 256,
            legacy_versions: ProtocolVersion::LEGACY.to_vec(),
            modern_versions: ProtocolVersion::MODERN.to_vec(),
            peer_name: "client".to_owned(),
            session: None,
            owner: None,
        }
    }
}

impl ServeOptions {
    /// Sets [`ServeOptions::max_concurrent_requests`].
    pub fn max_concurrent_requests(mut self, n: usize) -> Self {
        self.max_concurrent_requests = n.max(1);
        self
    }

    /// Sets [`ServeOptions::modern_versions`].
    pub fn modern_versions(mut self, versions: Vec<ProtocolVersion>) -> Self {
        self.modern_versions = versions;
        self
    }

    /// Sets [`ServeOptions::legacy_versions`].
    pub fn legacy_versions(mut self, versions: Vec<ProtocolVersion>) -> Self {
        self.legacy_versions = versions;
        self
    }
}

/// A connection being served. Dropping it closes the connection.
pub struct Served {
    engine: Arc<Engine>,
    peer: Peer,
    /// For answering a request on the caller's task (the HTTP server).
    #[cfg(feature = "http-server")]
    dispatch: Arc<Dispatch>,
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served").finish_non_exhaustive()
    }
}

impl Served {
    /// The way to the client, for notifications such as
    /// `notifications/tools/list_changed`.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Waits until the client goes away (or the connection fails) and says
    /// why.
    pub async fn closed(&self) -> Arc<TransportError> {
        self.engine.wait_closed().await
    }

    /// Closes the connection.
    pub async fn close(&self) {
        self.engine.close().await;
    }

    /// The capabilities a session-era client declared in `initialize`,
    /// once it has sent `notifications/initialized`; `None` when the
    /// connection ends first (a 2026-07-28 client never sends it: it
    /// declares its capabilities on each request).
    pub fn initialized_capabilities(
        &self,
    ) -> impl std::future::Future<Output = Option<ClientCapabilities>> + Send + 'static {
        self.peer.initialized_capabilities()
    }

    /// The client's notifications from now on
    /// (`notifications/roots/list_changed`, say), as the engine's
    /// subscribers get them (a bounded buffer; a slow reader loses the
    /// overflow). Ends when the connection does.
    pub fn notifications(&self) -> tokio::sync::mpsc::Receiver<crate::engine::ServerNotification> {
        self.peer.notifications()
    }

    /// Answers a request of the client on the caller's task, not through
    /// the connection: its result or error, for the caller to send (the
    /// HTTP server answers a POST so, a task hand-off less each way).
    /// What the handler says about the request on the way still goes
    /// through the connection. Dropping the future cancels the request.
    #[cfg(feature = "http-server")]
    pub(crate) fn answer(
        &self,
        id: switchboard_types::jsonrpc::RequestId,
        method: String,
        params: Option<Box<RawValue>>,
        user: Option<Arc<HostUser>>,
    ) -> BoxFuture<'static, HandlerResult> {
        if method == "ping" {
            return Box::pin(async { answer(Value::Object(JsonObject::new())) });
        }
        let not_found = ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        );
        let request = ServerRequest {
            id,
            method,
            params,
            related_tag: None,
        };
        match self.dispatch.handle_as(request, user) {
            Some(answer) => answer,
            None => Box::pin(async move { Err(not_found) }),
        }
    }
}

/// Serves `handler` on `connection`, from now until the client goes away or
/// the returned [`Served`] is dropped.
pub fn serve(
    handler: Arc<dyn ServerHandler>,
    connection: Connection,
    options: ServeOptions,
) -> Served {
    let peer = Peer {
        user: options.owner.clone(),
        ..Peer::default()
    };
    let dispatch = Arc::new(Dispatch {
        handler,
        state: Mutex::new(Session {
            initialized: options
                .session
                .clone()
                .map(|s| (s.protocol_version, s.client_capabilities, s.client_info)),
        }),
        running: Arc::new(Semaphore::new(options.max_concurrent_requests.max(1))),
        limit: options.max_concurrent_requests.max(1),
        peer: peer.clone(),
        options: options.clone(),
    });
    let config = EngineConfig {
        // The server's own requests (none yet) and notifications.
        request_timeout: Duration::from_secs(60),
        ..EngineConfig::default()
    };
    // Nothing is read from the client until the peer is set, the handler
    // has been told (and subscribed to what it listens for) and the
    // `initialized` watch below listens: a client's first messages are
    // often already waiting.
    let (engine, release) = Engine::start_held(
        options.peer_name.as_str().into(),
        connection,
        config,
        Some(dispatch.clone()),
    );
    let engine = Arc::new(engine);
    let _ = peer.engine.set(Arc::downgrade(&engine));
    let _ = peer.dispatch.set(Arc::downgrade(&dispatch));
    dispatch.handler.connected(&peer);
    if options.session.is_some() {
        // Initialized on another connection already.
        peer.initialized.send_replace(true);
        let _ = release.send(());
        return Served {
            engine,
            peer,
            #[cfg(feature = "http-server")]
            dispatch,
        };
    }
    // A session-era client's `notifications/initialized`: the moment the
    // server may speak first.
    let mut notes = engine.subscribe();
    let _ = release.send(());
    let initialized = peer.initialized.clone();
    tokio::spawn(async move {
        while let Some(note) = notes.recv().await {
            if note.method == "notifications/initialized" {
                initialized.send_replace(true);
                return;
            }
        }
    });
    Served {
        engine,
        peer,
        #[cfg(feature = "http-server")]
        dispatch,
    }
}

/// Serves `handler` on this process's stdin and stdout until stdin ends
/// ([`stdio_connection`](crate::transport::framing::stdio_connection):
/// when they are pipes they become non-blocking, so nothing else in the
/// process may read stdin or print to stdout — log to stderr).
///
/// # Errors
/// What ended the connection, unless it was the client closing stdin.
pub async fn serve_stdio(
    handler: Arc<dyn ServerHandler>,
    options: ServeOptions,
) -> Result<(), Arc<TransportError>> {
    let connection = crate::transport::framing::stdio_connection();
    let served = serve(handler, connection, options);
    let reason = served.closed().await;
    match &*reason {
        TransportError::Closed { .. } | TransportError::ClosedByClient => Ok(()),
        _ => Err(reason),
    }
}

/// The session-era handshake's outcome.
#[derive(Default)]
struct Session {
    initialized: Option<(ProtocolVersion, ClientCapabilities, Implementation)>,
}

struct Dispatch {
    handler: Arc<dyn ServerHandler>,
    state: Mutex<Session>,
    running: Arc<Semaphore>,
    limit: usize,
    peer: Peer,
    options: ServeOptions,
}

/// How one request is answered.
enum Mode {
    Legacy,
    Modern,
}

/// `params` as `T`; absent params read as `{}`.
fn parse<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorObject> {
    serde_json::from_str(params.map_or("{}", RawValue::get))
        .map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, format!("Invalid params: {e}")))
}

fn request_meta(params: Option<&RawValue>) -> JsonObject {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "_meta", default)]
        meta: Option<JsonObject>,
    }
    params
        .and_then(|raw| serde_json::from_str::<Meta>(raw.get()).ok())
        .and_then(|m| m.meta)
        .unwrap_or_default()
}

fn to_result<T: Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("cannot serialize the result: {e}"),
        )
    })
}

impl Dispatch {
    fn legacy_version(&self, asked: &ProtocolVersion) -> Option<ProtocolVersion> {
        let versions = &self.options.legacy_versions;
        if versions.contains(asked) {
            return Some(asked.clone());
        }
        versions.first().cloned()
    }

    fn initialize(&self, params: Option<&RawValue>) -> Result<Value, ErrorObject> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Params {
            protocol_version: ProtocolVersion,
            #[serde(default)]
            capabilities: ClientCapabilities,
            client_info: Implementation,
        }
        let raw = params.ok_or_else(|| {
            ErrorObject::new(
                codes::INVALID_PARAMS,
                "Invalid params: initialize needs params",
            )
        })?;
        let params: Params = serde_json::from_str(raw.get())
            .map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, format!("Invalid params: {e}")))?;
        let Some(version) = self.legacy_version(&params.protocol_version) else {
            let supported: Vec<&str> = self
                .options
                .modern_versions
                .iter()
                .map(ProtocolVersion::as_str)
                .collect();
            return Err(ErrorObject {
                code: codes::UNSUPPORTED_PROTOCOL_VERSION,
                message: format!(
                    "this server speaks only the stateless protocol versions {} (use server/discover and per-request _meta)",
                    supported.join(", ")
                ),
                data: Some(serde_json::json!({ "supported": supported })),
            });
        };
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .initialized = Some((version.clone(), params.capabilities, params.client_info));
        let mut result = serde_json::json!({
            "protocolVersion": version.as_str(),
            "capabilities": to_result(&self.handler.capabilities())?,
            "serverInfo": to_result(&self.handler.info())?,
        });
        if let Some(instructions) = self.handler.instructions() {
            result["instructions"] = instructions.into();
        }
        Ok(result)
    }

    fn discover(&self) -> Result<Value, ErrorObject> {
        let mut result = serde_json::json!({
            "supportedVersions": self.options.modern_versions.iter().map(ProtocolVersion::as_str).collect::<Vec<_>>(),
            "capabilities": to_result(&self.handler.capabilities())?,
        });
        if let Some(instructions) = self.handler.instructions() {
            result["instructions"] = instructions.into();
        }
        Ok(result)
    }

    /// Checks a stateless-era request's `_meta` and returns its context.
    fn modern_context(&self, meta: JsonObject) -> Result<RequestContext, ErrorObject> {
        let supported = || {
            self.options
                .modern_versions
                .iter()
                .map(ProtocolVersion::as_str)
                .collect::<Vec<_>>()
        };
        let version = match meta.get(meta::META_PROTOCOL_VERSION) {
            Some(Value::String(version)) => ProtocolVersion::new(version.clone()),
            Some(_) => {
                return Err(ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!(
                        "Invalid params: _meta field {} must be a string",
                        meta::META_PROTOCOL_VERSION
                    ),
                ));
            }
            None => {
                return Err(ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!(
                        "Invalid params: missing required _meta field {}",
                        meta::META_PROTOCOL_VERSION
                    ),
                ));
            }
        };
        if !self.options.modern_versions.contains(&version) {
            return Err(ErrorObject {
                code: codes::UNSUPPORTED_PROTOCOL_VERSION,
                message: "Unsupported protocol version".to_owned(),
                data: Some(
                    serde_json::json!({ "supported": supported(), "requested": version.as_str() }),
                ),
            });
        }
        let client_capabilities = match meta.get(meta::META_CLIENT_CAPABILITIES) {
            Some(caps) => serde_json::from_value(caps.clone()).map_err(|e| {
                ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!(
                        "Invalid params: _meta field {}: {e}",
                        meta::META_CLIENT_CAPABILITIES
                    ),
                )
            })?,
            None => ClientCapabilities::default(),
        };
        let client_info = meta
            .get(meta::META_CLIENT_INFO)
            .and_then(|info| serde_json::from_value(info.clone()).ok());
        Ok(RequestContext {
            era: Era::Modern,
            protocol_version: version,
            client_info,
            client_capabilities,
            meta,
            peer: self.peer.clone(),
            related: None,
            user: None,
        })
    }

    fn legacy_context(&self, meta: JsonObject) -> Result<RequestContext, ErrorObject> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some((version, capabilities, info)) = &state.initialized else {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                "Server not initialized: send initialize first (or server/discover and per-request _meta for 2026-07-28)",
            ));
        };
        Ok(RequestContext {
            era: Era::Legacy,
            protocol_version: version.clone(),
            client_info: Some(info.clone()),
            client_capabilities: capabilities.clone(),
            meta,
            peer: self.peer.clone(),
            related: None,
            user: None,
        })
    }

    fn server_info(&self) -> Result<Value, ErrorObject> {
        to_result(&self.handler.info())
    }
}

/// The results the 2026-07-28 schema requires `ttlMs` and `cacheScope` on:
/// a handler that did not set them gets `ttlMs: 0` (stale at once) and
/// `cacheScope: "private"` (never shared across users), the answers that
/// are never wrong ([`answer::modern`]).
const CACHEABLE: [&str; 6] = [
    "server/discover",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
];

fn answer(value: Value) -> HandlerResult {
    serde_json::value::to_raw_value(&value).map_err(|e| {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("cannot serialize the result: {e}"),
        )
    })
}

impl RequestHandler for Dispatch {
    fn handle(&self, request: ServerRequest) -> Option<BoxFuture<'static, HandlerResult>> {
        self.handle_as(request, None)
    }
}

impl Dispatch {
    /// Answers `request`, made for `user` when the transport authenticated
    /// one.
    fn handle_as(
        &self,
        request: ServerRequest,
        user: Option<Arc<HostUser>>,
    ) -> Option<BoxFuture<'static, HandlerResult>> {
        let params = request.params.as_deref();
        let meta = request_meta(params);
        let modern_asked = meta.contains_key(meta::META_PROTOCOL_VERSION);
        let method = request.method.as_str();
        // The handshakes first.
        match method {
            "initialize" if !modern_asked => {
                let outcome = self.initialize(params).and_then(answer);
                return Some(Box::pin(async move { outcome }));
            }
            "server/discover" if !self.options.modern_versions.is_empty() => {
                let outcome = match self.modern_context(meta.clone()) {
                    // A discover without `_meta` is still answered: it is
                    // how a client finds out what we speak.
                    Ok(_)
                    | Err(ErrorObject {
                        code: codes::INVALID_PARAMS,
                        ..
                    }) => self
                        .discover()
                        .and_then(answer)
                        .and_then(|result| answer::modern(result, true, &self.server_info()?)),
                    Err(error) => Err(error),
                };
                return Some(Box::pin(async move { outcome }));
            }
            _ => {}
        }
        let mode = if modern_asked && !self.options.modern_versions.is_empty() {
            Mode::Modern
        } else {
            Mode::Legacy
        };
        let context = match mode {
            Mode::Modern => self.modern_context(meta),
            Mode::Legacy => self.legacy_context(meta),
        };
        let mut cx = match context {
            Ok(cx) => cx,
            Err(error) => return Some(Box::pin(async move { Err(error) })),
        };
        let related: Option<Arc<str>> = serde_json::to_string(&request.id).ok().map(Arc::from);
        cx.related = related.clone();
        cx.user = user;
        let handler = self.handler.clone();
        // A list the handler writes itself, if it does.
        let listed = match method {
            "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
                parse::<PaginatedRequestParams>(params)
                    .ok()
                    .and_then(|p| handler.list_json(method, p, cx.clone()))
            }
            _ => None,
        };
        let call: BoxFuture<'static, Result<Box<RawValue>, ErrorObject>> = match (listed, method) {
            (Some(written), _) => written,
            (None, "tools/list") => typed(params, |p| handler.list_tools(p, cx)),
            (None, "tools/call") => typed(params, |p| handler.call_tool(p, cx)),
            (None, "resources/list") => typed(params, |p| handler.list_resources(p, cx)),
            (None, "resources/templates/list") => {
                typed(params, |p| handler.list_resource_templates(p, cx))
            }
            (None, "resources/read") => typed(params, |p| handler.read_resource(p, cx)),
            (None, "prompts/list") => typed(params, |p| handler.list_prompts(p, cx)),
            (None, "prompts/get") => typed(params, |p| handler.get_prompt_outcome(p, cx)),
            (None, "completion/complete") => typed(params, |p| handler.complete(p, cx)),
            (None, "skills/list") if offers_skills(&*handler) => {
                typed(params, |p| handler.list_skills(p, cx))
            }
            (None, "skills/get") if offers_skills(&*handler) => {
                typed(params, |p| handler.get_skill(p, cx))
            }
            (None, "resources/subscribe")
                if matches!(mode, Mode::Legacy) && offers_subscriptions(&*handler) =>
            {
                typed(params, |p| handler.subscribe_resource(p, cx))
            }
            (None, "resources/unsubscribe")
                if matches!(mode, Mode::Legacy) && offers_subscriptions(&*handler) =>
            {
                typed(params, |p| handler.unsubscribe_resource(p, cx))
            }
            (None, "subscriptions/listen")
                if matches!(mode, Mode::Modern) && offers_changes(&*handler) =>
            {
                typed(params, |p| handler.listen(p, cx))
            }
            (None, "tasks/get" | "tasks/update" | "tasks/cancel")
                if tasks::offers_tasks(&*handler) =>
            {
                tasks::dispatch(&handler, method, params, cx)
            }
            // The session era's level; the stateless era sends it per request.
            (None, "logging/setLevel") if matches!(mode, Mode::Legacy) => {
                Box::pin(async { answer(Value::Object(JsonObject::new())) })
            }
            (None, _) => return None,
        };
        let Ok(permit) = self.running.clone().try_acquire_owned() else {
            let error = ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "the server is busy: {} requests are running (its max_concurrent_requests); retry later",
                    self.limit
                ),
            );
            return Some(Box::pin(async move { Err(error) }));
        };
        let server_info = match mode {
            Mode::Modern => Some(self.server_info()),
            Mode::Legacy => None,
        };
        let method = request.method;
        Some(Box::pin(async move {
            let result = RELATED.scope(related, call).await;
            drop(permit);
            let result = result?;
            match server_info {
                Some(info) => answer::modern(result, CACHEABLE.contains(&method.as_str()), &info?),
                None if answer::result_type(&result).as_deref() == Some("input_required") => {
                    Err(ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        "the server asked a session-era client for input with an \
                         input_required result, which only the 2026-07-28 revision has",
                    ))
                }
                None => Ok(result),
            }
        }))
    }
}

/// Whether the handler declares `resources.subscribe` (whose methods are
/// answered only then).
fn offers_subscriptions(handler: &dyn ServerHandler) -> bool {
    handler
        .capabilities()
        .resources
        .is_some_and(|r| r.subscribe == Some(true))
}

/// Whether the handler declares something a client may listen for: a
/// list that changes, or resource subscriptions.
fn offers_changes(handler: &dyn ServerHandler) -> bool {
    let capabilities = handler.capabilities();
    capabilities
        .tools
        .as_ref()
        .is_some_and(|t| t.list_changed == Some(true))
        || capabilities
            .prompts
            .as_ref()
            .is_some_and(|p| p.list_changed == Some(true))
        || capabilities
            .resources
            .as_ref()
            .is_some_and(|r| r.list_changed == Some(true) || r.subscribe == Some(true))
}

/// Whether the handler declares the skills extension (whose methods are
/// answered only then).
fn offers_skills(handler: &dyn ServerHandler) -> bool {
    handler.capabilities().extension(SKILLS_EXTENSION).is_some()
}

/// Parses `params` as `P`, runs `f`, and serializes what it answers
/// (as its text: see [`answer`]).
fn typed<P, R, F>(
    params: Option<&RawValue>,
    f: F,
) -> BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>
where
    P: DeserializeOwned,
    R: Serialize + 'static,
    F: FnOnce(P) -> Reply<R>,
{
    match parse::<P>(params) {
        Ok(params) => {
            let reply = f(params);
            Box::pin(async move { answer::to_raw(&reply.await?) })
        }
        Err(error) => Box::pin(async move { Err(error) }),
    }
}
