//! The typed client: era negotiation, per-request `_meta`, pagination and
//! capability checks on top of the engine.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use switchboard_types::request::{self as rq, Paginated, Request};
use switchboard_types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, CompleteRequestParams,
    CompleteResult, DiscoverResult, Era, GetPromptRequestParams, GetPromptResult, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, LoggingLevel, PaginatedRequestParams,
    Prompt, ProtocolVersion, ReadResourceRequestParams, ReadResourceResult, RequestOutcome,
    Resource, ResourceTemplate, ServerCapabilities, SetLevelRequestParams, Tool, codes, meta,
    methods,
};
use tokio::sync::mpsc;

use crate::engine::{
    Engine, EngineConfig, HandlerResult, RequestHandler, RequestOptions, ServerNotification,
    ServerRequest,
};
use crate::error::{Error, Result};
use crate::transport::{BoxFuture, Connector, TransportError};
use events::EventStream;
use handlers::{
    ElicitationHandler, HandlerContext, HandlerError, Handlers, Roots, SamplingHandler,
};

mod cache;
pub mod events;
pub mod handlers;
#[cfg(test)]
mod limits_tests;
mod mrtr;
pub mod output_schema;
mod subscriptions;
pub mod tasks;

pub use subscriptions::{Subscription, SubscriptionEvent};

/// Default for [`ClientBuilder::max_list_items`].
pub const DEFAULT_MAX_LIST_ITEMS: usize = 100_000;

/// Default for [`ClientBuilder::probe_timeout`].
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Default for [`ClientBuilder::probe_notice_after`].
pub const DEFAULT_PROBE_NOTICE_AFTER: Duration = Duration::from_secs(1);

/// A `server/discover` probe that has not been answered yet (see
/// [`ClientBuilder::on_probe_wait`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProbeWait {
    /// The server's name.
    pub server: Arc<str>,
    /// How long the probe has waited so far.
    pub waited: Duration,
    /// How long it waits in all before falling back to `initialize`.
    pub timeout: Duration,
}

impl fmt::Display for ProbeWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "waiting for server `{}` to answer `server/discover` (up to {:?}; session-era servers often do not, and then `initialize` follows)",
            self.server, self.timeout
        )
    }
}

/// The longest duration a [`ClientBuilder`] setting takes (365 days);
/// [`ClientBuilder::connect`] refuses a longer one.
pub const MAX_SETTING_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// Default for [`ClientBuilder::max_server_requests`].
pub const DEFAULT_MAX_SERVER_REQUESTS: usize = 16;

/// The JSON-RPC error code a server gets for a request past
/// [`ClientBuilder::max_server_requests`].
pub const TOO_MANY_SERVER_REQUESTS: i64 = -32000;

/// Default for [`ClientBuilder::max_list_bytes`] (64 MiB).
pub const DEFAULT_MAX_LIST_BYTES: usize = 64 * 1024 * 1024;

/// What one list call may gather across all its pages: a server that keeps
/// paging cannot grow the client's memory past it.
#[derive(Clone, Copy, Debug)]
struct ListBudget {
    items: usize,
    bytes: usize,
}

impl Default for ListBudget {
    fn default() -> Self {
        Self {
            items: DEFAULT_MAX_LIST_ITEMS,
            bytes: DEFAULT_MAX_LIST_BYTES,
        }
    }
}

/// Which protocol era to speak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EraMode {
    /// Probe with `server/discover` and fall back to `initialize` (default).
    #[default]
    Auto,
    /// Only the stateless era (2026-07-28).
    Modern,
    /// Only the session era (`initialize`).
    Legacy,
}

/// What was negotiated with the server.
#[derive(Clone, Debug)]
pub struct ServerSession {
    /// The transport in use (`stdio`, `streamable-http`, `sse` …), after
    /// any fallback.
    pub transport: &'static str,
    /// The era in use.
    pub era: Era,
    /// The protocol version in use.
    pub protocol_version: ProtocolVersion,
    /// The server's self-description, when it gave one.
    pub server_info: Option<Implementation>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Instructions for the model, when given.
    pub instructions: Option<String>,
    /// The server process was started a second time because it exited when
    /// probed with `server/discover` (older SDKs do).
    pub respawned: bool,
    /// How long negotiation took, from connect to ready.
    pub negotiation_time: Duration,
}

/// Builds a [`Client`]. Setters never fail; [`ClientBuilder::connect`]
/// reports the first bad setting.
#[must_use]
#[derive(Clone)]
pub struct ClientBuilder {
    name: Option<String>,
    client_info: Implementation,
    capabilities: ClientCapabilities,
    mode: EraMode,
    era_hint: Option<Era>,
    probe_timeout: Duration,
    probe_notice_after: Duration,
    on_probe_wait: Option<Arc<dyn Fn(ProbeWait) + Send + Sync>>,
    engine: EngineConfig,
    page_cap: usize,
    list_budget: ListBudget,
    max_server_requests: usize,
    output_validation_budget: Duration,
    handler: Option<Arc<dyn RequestHandler>>,
    handlers: Handlers,
    max_input_rounds: usize,
    url_elicitation_wait: Duration,
    log_level: Option<LoggingLevel>,
    /// The cache, list refreshes and listens (cache.rs, subscriptions.rs).
    subs: subscriptions::Settings,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("name", &self.name)
            .field("client_info", &self.client_info)
            .field("mode", &self.mode)
            .field("era_hint", &self.era_hint)
            .field("probe_timeout", &self.probe_timeout)
            .field("probe_notice_after", &self.probe_notice_after)
            .field("engine", &self.engine)
            .field("page_cap", &self.page_cap)
            .field("list_budget", &self.list_budget)
            .field("max_server_requests", &self.max_server_requests)
            .field("output_validation_budget", &self.output_validation_budget)
            .field("handlers", &self.handlers)
            .field("max_input_rounds", &self.max_input_rounds)
            .field("log_level", &self.log_level)
            .field("subs", &self.subs)
            .finish_non_exhaustive()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            name: None,
            client_info: Implementation::new("switchboard", env!("CARGO_PKG_VERSION")),
            capabilities: ClientCapabilities::default(),
            mode: EraMode::Auto,
            era_hint: None,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            probe_notice_after: DEFAULT_PROBE_NOTICE_AFTER,
            on_probe_wait: None,
            engine: EngineConfig::default(),
            page_cap: 1000,
            list_budget: ListBudget::default(),
            max_server_requests: DEFAULT_MAX_SERVER_REQUESTS,
            output_validation_budget: crate::client::output_schema::DEFAULT_VALIDATION_BUDGET,
            handler: None,
            handlers: Handlers::default(),
            max_input_rounds: 10,
            url_elicitation_wait: Duration::from_secs(600),
            log_level: None,
            subs: subscriptions::Settings::default(),
        }
    }
}

impl ClientBuilder {
    /// The server's name in messages and logs (default: the command line or URL).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// How this client introduces itself (default: `switchboard` and its version).
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.client_info = info;
        self
    }

    /// The capabilities declared to the server.
    pub fn capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Which era to speak (default [`EraMode::Auto`]).
    pub fn era_mode(mut self, mode: EraMode) -> Self {
        self.mode = mode;
        self
    }

    /// A remembered verdict for this server, tried first in [`EraMode::Auto`];
    /// if it fails the client probes again. Persist [`Client::era`] to seed it.
    pub fn era_hint(mut self, era: Option<Era>) -> Self {
        self.era_hint = era;
        self
    }

    /// How long the `server/discover` probe waits before falling back to
    /// `initialize` (default [`DEFAULT_PROBE_TIMEOUT`], 3 s). Only the first
    /// connection to a session-era server that ignores the probe pays it:
    /// the verdict is remembered ([`ClientBuilder::era_hint`]).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// How long the `server/discover` probe waits silently before the
    /// client says it is waiting (default [`DEFAULT_PROBE_NOTICE_AFTER`],
    /// 1 s): then a `tracing::info!` event and the
    /// [`ClientBuilder::on_probe_wait`] callback.
    pub fn probe_notice_after(mut self, after: Duration) -> Self {
        self.probe_notice_after = after;
        self
    }

    /// Called once per probe that has waited
    /// [`ClientBuilder::probe_notice_after`] without an answer, so a user
    /// can be told what the connection is waiting for. It runs on the
    /// connecting task: it must not block.
    pub fn on_probe_wait(mut self, callback: impl Fn(ProbeWait) + Send + Sync + 'static) -> Self {
        self.on_probe_wait = Some(Arc::new(callback));
        self
    }

    /// Default request timeout (default 60 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.engine.request_timeout = timeout;
        self
    }

    /// Longest a request may live while progress keeps resetting its
    /// timeout (default 10 min).
    pub fn max_request_time(mut self, limit: Duration) -> Self {
        self.engine.max_request_time = limit;
        self
    }

    /// Requests in flight at once (default 1024); more wait for a slot.
    pub fn max_in_flight(mut self, limit: usize) -> Self {
        self.engine.max_in_flight = limit;
        self
    }

    /// Notifications buffered per subscriber (default 1024).
    pub fn notification_buffer(mut self, size: usize) -> Self {
        self.engine.notification_buffer = size;
        self
    }

    /// Most pages one list call follows before giving up (default 1000).
    pub fn page_cap(mut self, pages: usize) -> Self {
        self.page_cap = pages;
        self
    }

    /// Most items one list call (`tools/list`, `resources/list`,
    /// `resources/templates/list`, `prompts/list`, `tasks/list`) accepts
    /// across all its pages (default [`DEFAULT_MAX_LIST_ITEMS`], 100 000);
    /// past it the call fails with [`Error::Pagination`].
    pub fn max_list_items(mut self, items: usize) -> Self {
        self.list_budget.items = items;
        self
    }

    /// Most bytes of results one list call accepts across all its pages,
    /// counted as the JSON text of each page's result (default
    /// [`DEFAULT_MAX_LIST_BYTES`], 64 MiB); past it the call fails with
    /// [`Error::Pagination`].
    pub fn max_list_bytes(mut self, bytes: usize) -> Self {
        self.list_budget.bytes = bytes;
        self
    }

    /// Requests from the server (sampling, elicitation, roots, and methods
    /// for [`ClientBuilder::request_handler`]) answered at once on one
    /// connection (default [`DEFAULT_MAX_SERVER_REQUESTS`], 16). Past it
    /// the server gets a JSON-RPC error (-32000, "too many concurrent
    /// requests from the server") instead of another handler; `ping` is
    /// answered by the engine and not counted.
    pub fn max_server_requests(mut self, limit: usize) -> Self {
        self.max_server_requests = limit;
        self
    }

    /// Longest a tool result's `structuredContent` is checked against the
    /// tool's `outputSchema` (default
    /// [`DEFAULT_VALIDATION_BUDGET`](crate::client::output_schema::DEFAULT_VALIDATION_BUDGET),
    /// 100 ms). The check runs on a blocking thread; past the budget the
    /// result is passed on unchecked, with a `tracing::warn!` (see
    /// [`OutputValidator::validate_within`](crate::client::output_schema::OutputValidator::validate_within)).
    pub fn output_validation_budget(mut self, budget: Duration) -> Self {
        self.output_validation_budget = budget;
        self
    }

    /// Answers server requests that no installed handler covers (methods
    /// this crate does not know). Sampling, elicitation and roots go to
    /// [`ClientBuilder::sampling`], [`ClientBuilder::elicitation`] and
    /// [`ClientBuilder::roots`].
    pub fn request_handler(mut self, handler: Arc<dyn RequestHandler>) -> Self {
        self.handler = Some(handler);
        self
    }

    /// Answers `sampling/createMessage` (declares `sampling`, and
    /// `sampling.tools` if the handler supports tools).
    pub fn sampling(mut self, handler: impl SamplingHandler) -> Self {
        self.handlers.sampling = Some(Arc::new(handler));
        self
    }

    /// Answers `elicitation/create` (declares `elicitation.form`, and
    /// `elicitation.url` if the handler supports URL mode).
    pub fn elicitation(mut self, handler: impl ElicitationHandler) -> Self {
        self.handlers.elicitation = Some(Arc::new(handler));
        self
    }

    /// Answers `roots/list` from `roots` (declares `roots.listChanged`);
    /// changing them notifies the server.
    pub fn roots(mut self, roots: Roots) -> Self {
        self.handlers.roots = Some(roots);
        self
    }

    /// Most `input_required` rounds one request may take in the stateless
    /// era before the client gives up (default 10).
    pub fn max_input_rounds(mut self, rounds: usize) -> Self {
        self.max_input_rounds = rounds;
        self
    }

    /// How long a request refused with -32042 (URL elicitation required)
    /// waits for the server's `notifications/elicitation/complete` after
    /// the user consented, before it is retried anyway (default 10 min).
    pub fn url_elicitation_wait(mut self, wait: Duration) -> Self {
        self.url_elicitation_wait = wait;
        self
    }

    /// The server's log level: `logging/setLevel` right after `initialize`
    /// in the session era, `_meta` on every request in the stateless era.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    fn validate(&self) -> Result<()> {
        let zero = |setting, value: Duration| {
            if value.is_zero() {
                Err(Error::Config {
                    setting,
                    reason: "must be greater than zero".into(),
                })
            } else {
                Ok(())
            }
        };
        for (setting, value) in [
            ("probe_timeout", self.probe_timeout),
            ("probe_notice_after", self.probe_notice_after),
            ("request_timeout", self.engine.request_timeout),
            ("max_request_time", self.engine.max_request_time),
            ("url_elicitation_wait", self.url_elicitation_wait),
            ("output_validation_budget", self.output_validation_budget),
        ] {
            // Deadlines are `now + setting`: past this they could overflow.
            if value > MAX_SETTING_DURATION {
                return Err(Error::Config {
                    setting,
                    reason: "must be at most 365 days".into(),
                });
            }
        }
        zero("probe_timeout", self.probe_timeout)?;
        zero("probe_notice_after", self.probe_notice_after)?;
        zero("output_validation_budget", self.output_validation_budget)?;
        zero("request_timeout", self.engine.request_timeout)?;
        zero("max_request_time", self.engine.max_request_time)?;
        for (setting, value) in [
            ("max_in_flight", self.engine.max_in_flight),
            ("notification_buffer", self.engine.notification_buffer),
            ("page_cap", self.page_cap),
            ("max_list_items", self.list_budget.items),
            ("max_list_bytes", self.list_budget.bytes),
            ("max_server_requests", self.max_server_requests),
            ("max_input_rounds", self.max_input_rounds),
        ] {
            if value == 0 {
                return Err(Error::Config {
                    setting,
                    reason: "must be at least 1".into(),
                });
            }
        }
        self.subs.validate()?;
        Ok(())
    }

    /// Connects and negotiates the era and protocol version.
    ///
    /// # Errors
    /// [`Error::Config`] for a bad setting; [`Error::Transport`] when the
    /// server cannot be started or reached; [`Error::Disconnected`] when it
    /// dies during negotiation (with its exit status and stderr);
    /// [`Error::UnsupportedVersion`] when no version is mutually supported.
    ///
    /// # Cancel safety
    /// Dropping the future drops the half-open connection, which stops the
    /// server process.
    pub async fn connect(self, connector: impl Connector) -> Result<Client> {
        self.connect_arc(Arc::new(connector)).await
    }

    /// [`ClientBuilder::connect`] with a shared connector.
    ///
    /// # Errors
    /// As [`ClientBuilder::connect`].
    ///
    /// # Cancel safety
    /// As [`ClientBuilder::connect`].
    pub async fn connect_arc(self, connector: Arc<dyn Connector>) -> Result<Client> {
        self.validate()?;
        let started = Instant::now();
        let server: Arc<str> = self
            .name
            .clone()
            .unwrap_or_else(|| connector.describe())
            .into();
        // A verdict the transport remembers for this server stands in for a
        // hint the caller did not give.
        let mut builder = self;
        if builder.era_hint.is_none() && builder.mode == EraMode::Auto {
            builder.era_hint = connector.remembered_era();
        }
        // Declare exactly what the installed handlers support.
        builder.capabilities = builder.handlers.capabilities(&builder.capabilities);
        builder.handler = Some(Arc::new(SessionHandler {
            handlers: builder.handlers.clone(),
            server: server.clone(),
            fallback: builder.handler.take(),
            running: Arc::new(tokio::sync::Semaphore::new(builder.max_server_requests)),
            limit: builder.max_server_requests,
        }));
        let mut negotiator = Negotiator {
            builder: &builder,
            connector: &*connector,
            server: server.clone(),
            respawned: false,
            fallback_transport: None,
        };
        let (engine, mut session) = negotiator.negotiate().await?;
        // Read after connecting: a remembered verdict may have been dropped.
        session.transport = negotiator
            .fallback_transport
            .unwrap_or_else(|| connector.transport_name());
        connector.remember(session.era, session.transport);
        session.negotiation_time = started.elapsed();
        session.respawned = negotiator.respawned;
        let modern_meta = match session.era {
            Era::Modern => Some(modern_meta(
                &session.protocol_version,
                &builder.client_info,
                &builder.capabilities,
            )),
            Era::Legacy => None,
        };
        tracing::debug!(
            server = %server,
            era = %session.era,
            version = %session.protocol_version,
            "connected"
        );
        // Session era: changed roots are announced.
        let roots_listener: Option<Arc<dyn Fn() + Send + Sync>> =
            match (&builder.handlers.roots, session.era) {
                (Some(roots), Era::Legacy) => {
                    let notify = engine.notifier();
                    let listener: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
                        notify(methods::NOTIFICATION_ROOTS_LIST_CHANGED);
                    });
                    roots.listen(listener.clone());
                    Some(listener)
                }
                _ => None,
            };
        let subs =
            subscriptions::State::new(&engine, &builder.subs, builder.engine.request_timeout);
        let modern_meta_json = modern_meta.as_ref().map(|fields| {
            let text = serde_json::to_string(fields).expect("JSON objects serialize");
            text[1..text.len() - 1].to_owned()
        });
        let client = Client {
            inner: Arc::new(ClientInner {
                engine,
                session,
                modern_meta,
                modern_meta_json,
                page_cap: builder.page_cap,
                list_budget: builder.list_budget,
                output_validation_budget: builder.output_validation_budget,
                handlers: builder.handlers.clone(),
                max_input_rounds: builder.max_input_rounds,
                url_elicitation_wait: builder.url_elicitation_wait,
                log_level: std::sync::atomic::AtomicU8::new(level_code(builder.log_level)),
                tools: std::sync::Mutex::default(),
                subs,
                output_validator: crate::client::output_schema::OutputValidator::default(),
                _roots_listener: roots_listener,
                background: std::sync::Mutex::default(),
            }),
        };
        client.start_watching();
        if let Some(level) = builder.log_level
            && client.era() == Era::Legacy
            && client.capabilities().logging.is_some()
        {
            client.set_logging_level(level).await?;
        }
        Ok(client)
    }
}

/// The `_meta` fields every modern request carries.
fn modern_meta(
    version: &ProtocolVersion,
    info: &Implementation,
    capabilities: &ClientCapabilities,
) -> JsonObject {
    let mut object = JsonObject::new();
    object.insert(
        meta::META_PROTOCOL_VERSION.into(),
        Value::String(version.as_str().into()),
    );
    object.insert(
        meta::META_CLIENT_INFO.into(),
        serde_json::to_value(info).expect("Implementation serializes"),
    );
    object.insert(
        meta::META_CLIENT_CAPABILITIES.into(),
        serde_json::to_value(capabilities).expect("ClientCapabilities serializes"),
    );
    object
}

/// `params` (an object, or none) with `_meta` holding `fragment` (the
/// connection's per-request fields, serialized without braces), the log
/// level and the progress token.
fn with_modern_meta(
    fragment: &str,
    params: Option<&Value>,
    level: Option<LoggingLevel>,
    progress: Option<i64>,
) -> std::result::Result<Box<RawValue>, serde_json::Error> {
    let body = match params {
        Some(params) => serde_json::to_string(params)?,
        None => "{}".to_owned(),
    };
    let mut out = String::with_capacity(body.len() + fragment.len() + 80);
    // An object serializes as `{…}`: reopen it before the closing brace.
    out.push_str(&body[..body.len() - 1]);
    if body.len() > 2 {
        out.push(',');
    }
    out.push_str(r#""_meta":{"#);
    out.push_str(fragment);
    if let Some(level) = level {
        out.push_str(r#",""#);
        out.push_str(meta::META_LOG_LEVEL);
        out.push_str(r#"":""#);
        out.push_str(level.as_str());
        out.push('"');
    }
    if let Some(token) = progress {
        out.push_str(r#",""#);
        out.push_str(meta::PROGRESS_TOKEN);
        out.push_str(r#"":"#);
        out.push_str(&token.to_string());
    }
    out.push_str("}}");
    RawValue::from_string(out)
}

/// Merges `fields` into `params._meta`, making `params` an object if needed.
fn add_meta(params: &mut Value, fields: impl IntoIterator<Item = (String, Value)>) {
    if !params.is_object() {
        *params = Value::Object(JsonObject::new());
    }
    let object = params.as_object_mut().expect("made an object above");
    let entry = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if !entry.is_object() {
        *entry = Value::Object(JsonObject::new());
    }
    let meta = entry.as_object_mut().expect("made an object above");
    for (key, value) in fields {
        meta.insert(key, value);
    }
}

/// What the `server/discover` probe found.
enum ProbeOutcome {
    Modern(Box<DiscoverResult>, ProtocolVersion),
    /// Not a modern server (or none we can speak): run `initialize` on the
    /// same connection.
    Legacy,
    /// The server died when probed: start it again and run `initialize`.
    Respawn,
}

struct Negotiator<'a> {
    builder: &'a ClientBuilder,
    connector: &'a dyn Connector,
    server: Arc<str>,
    respawned: bool,
    /// The fallback transport, when negotiation ended on it.
    fallback_transport: Option<&'static str>,
}

impl Negotiator<'_> {
    async fn open(&self) -> Result<Engine> {
        self.open_with(self.connector).await
    }

    async fn open_with(&self, connector: &dyn Connector) -> Result<Engine> {
        let connection = connector
            .connect()
            .await
            .map_err(|source| Error::Transport {
                server: self.server.clone(),
                source: Box::new(source),
            })?;
        Ok(Engine::start(
            self.server.clone(),
            connection,
            self.builder.engine.clone(),
            self.builder.handler.clone(),
        ))
    }

    /// `initialize`, and when a Streamable HTTP endpoint refuses it outright
    /// (400, 404, 405), the same on the connector's fallback transport.
    async fn initialize_or_fall_back(&mut self, engine: Engine) -> Result<(Engine, ServerSession)> {
        match self.initialize(&engine).await {
            Ok(session) => Ok((engine, session)),
            Err(error) => {
                let refused = matches!(&error, Error::Transport { source, .. }
                    if matches!(source.http_status(), Some(400 | 404 | 405)));
                match self.connector.fallback() {
                    Some(fallback) if refused => {
                        tracing::debug!(server = %self.server, %error, "Streamable HTTP refused; trying the legacy HTTP+SSE transport");
                        engine.close().await;
                        let engine = self.open_with(&*fallback).await?;
                        let session = self.initialize(&engine).await?;
                        self.fallback_transport = Some(fallback.transport_name());
                        Ok((engine, session))
                    }
                    _ => Err(error),
                }
            }
        }
    }

    async fn negotiate(&mut self) -> Result<(Engine, ServerSession)> {
        let engine = self.open().await?;
        match self.builder.mode {
            EraMode::Legacy => self.initialize_or_fall_back(engine).await,
            EraMode::Modern => match self.probe(&engine, true).await? {
                ProbeOutcome::Modern(discover, version) => {
                    Ok((engine, modern_session(*discover, version)))
                }
                ProbeOutcome::Legacy | ProbeOutcome::Respawn => Err(Error::WrongEra {
                    server: self.server.clone(),
                    detail: "it lists only session-era protocol versions; use the auto or legacy era mode".into(),
                }),
            },
            EraMode::Auto => {
                if self.builder.era_hint == Some(Era::Legacy) {
                    match self.initialize(&engine).await {
                        Ok(session) => return Ok((engine, session)),
                        // The remembered verdict no longer holds: probe afresh.
                        Err(error) if error.is_server_error() => {
                            tracing::debug!(server = %self.server, %error, "remembered legacy verdict failed; probing");
                        }
                        Err(error) => return Err(error),
                    }
                }
                match self.probe(&engine, false).await? {
                    ProbeOutcome::Modern(discover, version) => {
                        Ok((engine, modern_session(*discover, version)))
                    }
                    ProbeOutcome::Legacy => self.initialize_or_fall_back(engine).await,
                    ProbeOutcome::Respawn => {
                        engine.close().await;
                        drop(engine);
                        self.respawned = true;
                        let engine = self.open().await?;
                        let session = self.initialize(&engine).await?;
                        Ok((engine, session))
                    }
                }
            }
        }
    }

    /// Awaits the probe, saying once that it waits when it takes longer than
    /// [`ClientBuilder::probe_notice_after`].
    async fn noticed<T>(&self, probe: impl std::future::Future<Output = T>) -> T {
        let mut probe = std::pin::pin!(probe);
        let after = self.builder.probe_notice_after;
        tokio::select! {
            biased;
            outcome = &mut probe => return outcome,
            () = tokio::time::sleep(after) => {}
        }
        let wait = ProbeWait {
            server: self.server.clone(),
            waited: after,
            timeout: self.builder.probe_timeout,
        };
        tracing::info!(server = %self.server, "{wait}");
        if let Some(callback) = &self.builder.on_probe_wait {
            callback(wait);
        }
        probe.await
    }

    /// Sends `server/discover`; `strict` turns every fallback into an error.
    async fn probe(&self, engine: &Engine, strict: bool) -> Result<ProbeOutcome> {
        let mut version = ProtocolVersion::LATEST;
        // A -32022 may name a version we speak; retry at most once per version.
        let mut retried_same = false;
        for _ in 0..ProtocolVersion::MODERN.len() + 2 {
            let meta = modern_meta(
                &version,
                &self.builder.client_info,
                &self.builder.capabilities,
            );
            let mut params = Value::Object(JsonObject::new());
            add_meta(&mut params, meta);
            let params = serde_json::value::to_raw_value(&params).expect("JSON values serialize");
            let id = engine.allocate_id();
            let outcome = self
                .noticed(engine.request(
                    id,
                    rq::Discover::METHOD,
                    Some(&params),
                    RequestOptions::timeout(self.builder.probe_timeout),
                ))
                .await
                .map_err(Error::from);
            match outcome {
                Ok(raw) => {
                    let discover: DiscoverResult = match parse_result(
                        &self.server,
                        rq::Discover::METHOD,
                        &raw,
                    ) {
                        Ok(discover) => discover,
                        // Some older servers answer any method with an
                        // empty result: that is no DiscoverResult, so no
                        // evidence of a modern server.
                        Err(error) if !strict => {
                            tracing::debug!(server = %self.server, %error, "probe answer is not a DiscoverResult; trying initialize");
                            return Ok(ProbeOutcome::Legacy);
                        }
                        Err(error) => return Err(error),
                    };
                    check_result_type(
                        &self.server,
                        rq::Discover::METHOD,
                        &raw,
                        peek_result_type(&raw).as_deref(),
                    )?;
                    return match best_mutual(&discover.supported_versions, &ProtocolVersion::MODERN)
                    {
                        Some(chosen) => Ok(ProbeOutcome::Modern(Box::new(discover), chosen)),
                        None if !strict
                            && discover
                                .supported_versions
                                .iter()
                                .any(|v| ProtocolVersion::LEGACY.contains(v)) =>
                        {
                            Ok(ProbeOutcome::Legacy)
                        }
                        None => Err(self.no_mutual_version(&discover.supported_versions)),
                    };
                }
                Err(Error::Server { error, .. })
                    if error.code == codes::UNSUPPORTED_PROTOCOL_VERSION =>
                {
                    let supported: Vec<ProtocolVersion> = error
                        .data
                        .as_ref()
                        .and_then(|d| d.get("supported"))
                        .and_then(|s| serde_json::from_value(s.clone()).ok())
                        .unwrap_or_default();
                    match best_mutual(&supported, &ProtocolVersion::MODERN) {
                        // A version it lists: retry with it, even when it is
                        // the one just refused (once; a server may refuse a
                        // first request for reasons of its own).
                        Some(chosen) if chosen != version || !retried_same => {
                            retried_same |= chosen == version;
                            version = chosen;
                            continue;
                        }
                        Some(_) => {
                            return Err(Error::Protocol {
                                server: self.server.clone(),
                                detail: format!(
                                    "it rejected protocol version {version} although it lists it as supported"
                                ),
                            });
                        }
                        None if !strict
                            && supported
                                .iter()
                                .any(|v| ProtocolVersion::LEGACY.contains(v)) =>
                        {
                            return Ok(ProbeOutcome::Legacy);
                        }
                        None => return Err(self.no_mutual_version(&supported)),
                    }
                }
                Err(error @ Error::Server { .. })
                    if error.code().is_some_and(codes::is_modern_error) =>
                {
                    return Err(error);
                }
                // Over the network, silence and server errors are outages,
                // not evidence of an older server; credentials are never a
                // reason to try another era or transport.
                Err(error @ (Error::Timeout { .. } | Error::Transport { .. }))
                    if self.connector.is_remote() && !is_legacy_evidence(&error) =>
                {
                    return Err(error);
                }
                Err(error @ Error::Transport { .. }) if is_legacy_evidence(&error) => {
                    if strict {
                        return Err(error);
                    }
                    tracing::debug!(server = %self.server, %error, "HTTP probe refused; trying initialize");
                    return Ok(ProbeOutcome::Legacy);
                }
                Err(error @ (Error::Server { .. } | Error::Timeout { .. })) => {
                    if strict {
                        let answer = match &error {
                            Error::Server { error, .. } => format!("answered it with {error}"),
                            _ => "did not answer it in time".to_owned(),
                        };
                        return Err(Error::WrongEra {
                            server: self.server.clone(),
                            detail: format!(
                                "it {answer} `server/discover`, so it does not speak the stateless \
                                 protocol (2026-07-28); use the auto or legacy era mode"
                            ),
                        });
                    }
                    tracing::debug!(server = %self.server, %error, "probe says legacy server");
                    return Ok(ProbeOutcome::Legacy);
                }
                Err(Error::Disconnected { reason, .. })
                    if !strict && !matches!(*reason, TransportError::ClosedByClient) =>
                {
                    tracing::debug!(server = %self.server, error = %reason, "server died when probed; respawning for initialize");
                    return Ok(ProbeOutcome::Respawn);
                }
                Err(error) => return Err(error),
            }
        }
        Err(Error::Protocol {
            server: self.server.clone(),
            detail: "it keeps rejecting the protocol versions it lists as supported".into(),
        })
    }

    fn no_mutual_version(&self, supported: &[ProtocolVersion]) -> Error {
        Error::UnsupportedVersion {
            server: self.server.clone(),
            requested: ProtocolVersion::LATEST,
            server_version: if supported.is_empty() {
                "none it would name".into()
            } else {
                supported
                    .iter()
                    .map(ProtocolVersion::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            supported: supported_list(),
        }
    }

    async fn initialize(&self, engine: &Engine) -> Result<ServerSession> {
        let requested = ProtocolVersion::LATEST_LEGACY;
        let params = InitializeRequestParams {
            protocol_version: requested.clone(),
            capabilities: self.builder.capabilities.clone(),
            client_info: self.builder.client_info.clone(),
            meta: None,
        };
        let params =
            serde_json::value::to_raw_value(&params).map_err(|source| Error::Serialize {
                method: rq::Initialize::METHOD.into(),
                source,
            })?;
        let raw = engine
            .request(
                engine.allocate_id(),
                rq::Initialize::METHOD,
                Some(&params),
                RequestOptions::default(),
            )
            .await?;
        let result: InitializeResult = parse_result(&self.server, rq::Initialize::METHOD, &raw)?;
        if !ProtocolVersion::LEGACY.contains(&result.protocol_version) {
            engine.close().await;
            return Err(Error::UnsupportedVersion {
                server: self.server.clone(),
                requested,
                server_version: result.protocol_version.to_string(),
                supported: supported_list(),
            });
        }
        engine.notify("notifications/initialized", None).await?;
        Ok(ServerSession {
            transport: "",
            era: Era::Legacy,
            protocol_version: result.protocol_version,
            server_info: Some(result.server_info),
            capabilities: result.capabilities,
            instructions: result.instructions,
            respawned: false,
            negotiation_time: Duration::ZERO,
        })
    }
}

/// An HTTP answer to the probe that means "not a modern server": a 4xx
/// other than 401/403 without a modern JSON-RPC error body.
fn is_legacy_evidence(error: &Error) -> bool {
    match error {
        Error::Transport { source, .. } => {
            !source.is_auth_required()
                && source
                    .http_status()
                    .is_some_and(|status| (400..500).contains(&status))
        }
        _ => false,
    }
}

fn supported_list() -> String {
    ProtocolVersion::KNOWN
        .iter()
        .map(ProtocolVersion::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn modern_session(discover: DiscoverResult, version: ProtocolVersion) -> ServerSession {
    ServerSession {
        transport: "",
        era: Era::Modern,
        protocol_version: version,
        server_info: discover.server_info(),
        capabilities: discover.capabilities,
        instructions: discover.instructions,
        respawned: false,
        negotiation_time: Duration::ZERO,
    }
}

/// The newest version in both lists.
fn best_mutual(theirs: &[ProtocolVersion], ours: &[ProtocolVersion]) -> Option<ProtocolVersion> {
    theirs.iter().filter(|v| ours.contains(v)).max().cloned()
}

fn parse_result<T: DeserializeOwned>(server: &Arc<str>, method: &str, raw: &RawValue) -> Result<T> {
    serde_json::from_str(raw.get()).map_err(|error| Error::Protocol {
        server: server.clone(),
        detail: format!("its `{method}` result is malformed: {error}"),
    })
}

/// 2026-07-28: an absent `resultType` means complete; an unknown one is an error.
fn check_result_type(
    server: &Arc<str>,
    method: &str,
    raw: &RawValue,
    result_type: Option<&str>,
) -> Result<()> {
    match result_type {
        None | Some("complete") => Ok(()),
        // A task handle (the tasks extension), which only `tools/call` may
        // answer with; `Client::call_tool_and_wait` declares the extension.
        Some("task") if method == rq::CallTool::METHOD => Ok(()),
        Some("input_required") => Err(Error::InputRequired {
            server: server.clone(),
            method: method.to_owned(),
            result: raw.to_owned(),
        }),
        Some(other) => Err(Error::Protocol {
            server: server.clone(),
            detail: format!("its `{method}` result has an unknown resultType {other:?}"),
        }),
    }
}

/// The same params with `_meta.progressToken` set to `token` (for a
/// re-issued request, whose progress must not be confused with the first).
fn renumber_progress(
    raw: &RawValue,
    token: Option<i64>,
) -> std::result::Result<Box<RawValue>, serde_json::Error> {
    let Some(token) = token else {
        return Ok(raw.to_owned());
    };
    let mut value: Value = serde_json::from_str(raw.get())?;
    add_meta(
        &mut value,
        [(meta::PROGRESS_TOKEN.to_owned(), Value::from(token))],
    );
    serde_json::value::to_raw_value(&value)
}

/// Reads only `resultType`, skipping the rest without building it.
fn peek_result_type(raw: &RawValue) -> Option<Cow<'_, str>> {
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(rename = "resultType", borrow, default)]
        result_type: Option<Cow<'a, str>>,
    }
    serde_json::from_str::<Peek<'_>>(raw.get())
        .ok()
        .and_then(|p| p.result_type)
}

/// A connection to one MCP server. Cheap to clone; the server stops when the
/// last clone is dropped (or on [`Client::close`]).
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    engine: Engine,
    session: ServerSession,
    modern_meta: Option<JsonObject>,
    /// `modern_meta` serialized, without its braces (see `with_modern_meta`).
    modern_meta_json: Option<String>,
    page_cap: usize,
    list_budget: ListBudget,
    output_validation_budget: Duration,
    handlers: Handlers,
    max_input_rounds: usize,
    url_elicitation_wait: Duration,
    /// The stateless era's per-request log level; 0 = none (see `level_code`).
    log_level: std::sync::atomic::AtomicU8,
    /// The tools from the last `tools/list`, by name (for `outputSchema`;
    /// also [`Client::tools`]).
    tools: std::sync::Mutex<subscriptions::ToolList>,
    /// The other lists, the response cache and the listens (subscriptions.rs).
    subs: subscriptions::State,
    output_validator: crate::client::output_schema::OutputValidator,
    /// Kept alive so the roots handle can reach this connection.
    _roots_listener: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Requests sent for futures that were dropped (`tasks/cancel`),
    /// owned by the client and aborted with it.
    background: std::sync::Mutex<tokio::task::JoinSet<()>>,
}

/// A log level as a small number, so it can live in an atomic.
fn level_code(level: Option<LoggingLevel>) -> u8 {
    level.map_or(0, |l| {
        1 + LoggingLevel::ALL.iter().position(|x| *x == l).unwrap_or(0) as u8
    })
}

fn level_from_code(code: u8) -> Option<LoggingLevel> {
    code.checked_sub(1)
        .and_then(|i| LoggingLevel::ALL.get(i as usize).copied())
}

/// Routes session-era server requests to the installed handlers.
struct SessionHandler {
    handlers: Handlers,
    server: Arc<str>,
    fallback: Option<Arc<dyn RequestHandler>>,
    /// One permit per request being answered, held until its answer is
    /// sent or it is cancelled ([`ClientBuilder::max_server_requests`]).
    running: Arc<tokio::sync::Semaphore>,
    limit: usize,
}

impl RequestHandler for SessionHandler {
    fn handle(&self, request: ServerRequest) -> Option<BoxFuture<'static, HandlerResult>> {
        let Ok(permit) = self.running.clone().try_acquire_owned() else {
            tracing::warn!(server = %self.server, method = %request.method, limit = self.limit, "too many concurrent requests from the server; refusing one");
            let refusal = switchboard_types::jsonrpc::ErrorObject::new(
                TOO_MANY_SERVER_REQUESTS,
                format!(
                    "too many concurrent requests from the server; limit {} (the client's max_server_requests)",
                    self.limit
                ),
            );
            return Some(Box::pin(std::future::ready(Err(refusal))));
        };
        match request.method.as_str() {
            methods::SAMPLING_CREATE_MESSAGE
            | methods::ELICITATION_CREATE
            | methods::ROOTS_LIST => {}
            _ => {
                let answer = self.fallback.as_ref()?.handle(request)?;
                return Some(Box::pin(async move {
                    let answer = answer.await;
                    drop(permit);
                    answer
                }));
            }
        }
        let handlers = self.handlers.clone();
        let context = HandlerContext {
            server: self.server.clone(),
            era: Era::Legacy,
            input_key: None,
        };
        Some(Box::pin(async move {
            let params = match request.params.as_deref() {
                Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
                    HandlerError::InvalidParams(format!("params are not JSON: {e}"))
                        .to_error_object()
                })?,
                None => Value::Object(JsonObject::new()),
            };
            let answer = handlers
                .answer(context, &request.method, params)
                .await
                .map_err(|e| e.to_error_object())?;
            drop(permit);
            serde_json::value::to_raw_value(&answer)
                .map_err(|e| HandlerError::Failed(e.to_string()).to_error_object())
        }))
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("server", self.inner.engine.server())
            .field("era", &self.inner.session.era)
            .field("protocol_version", &self.inner.session.protocol_version)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder with default settings.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Connects with default settings.
    ///
    /// # Errors
    /// As [`ClientBuilder::connect`].
    ///
    /// # Cancel safety
    /// As [`ClientBuilder::connect`].
    pub async fn connect(connector: impl Connector) -> Result<Self> {
        Self::builder().connect(connector).await
    }

    /// The server's name, as used in messages.
    pub fn server_name(&self) -> &str {
        self.inner.engine.server()
    }

    /// What was negotiated.
    pub fn session(&self) -> &ServerSession {
        &self.inner.session
    }

    /// The era in use; persist it and pass it to [`ClientBuilder::era_hint`]
    /// to skip the probe next time.
    pub fn era(&self) -> Era {
        self.inner.session.era
    }

    /// The protocol version in use.
    pub fn protocol_version(&self) -> &ProtocolVersion {
        &self.inner.session.protocol_version
    }

    /// The server's self-description.
    pub fn server_info(&self) -> Option<&Implementation> {
        self.inner.session.server_info.as_ref()
    }

    /// What the server offers.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.session.capabilities
    }

    /// The server's instructions for the model.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.session.instructions.as_deref()
    }

    /// What the server wrote to stderr (the last 64 KiB by default), for
    /// process transports.
    pub fn stderr(&self) -> Option<String> {
        self.inner.engine.stderr().map(|s| s.contents())
    }

    /// How many lines the server wrote that were not JSON-RPC (skipped).
    pub fn skipped_lines(&self) -> u64 {
        self.inner.engine.skipped_lines()
    }

    /// Why the connection died, once it has.
    pub fn connection_error(&self) -> Option<Arc<TransportError>> {
        self.inner.engine.closed_reason()
    }

    /// The server's notifications, in arrival order, from now on.
    pub fn notifications(&self) -> mpsc::Receiver<ServerNotification> {
        self.inner.engine.subscribe()
    }

    /// Everything the server says from now on, typed and in arrival order,
    /// ending with [`Event::Closed`](crate::client::events::Event::Closed). Each
    /// stream buffers up to [`ClientBuilder::notification_buffer`] events
    /// and reports any it had to drop as
    /// [`Event::Lagged`](crate::client::events::Event::Lagged).
    pub fn events(&self) -> EventStream {
        let engine = &self.inner.engine;
        EventStream::new(
            engine.subscribe_marking_gaps(),
            Box::new(engine.closed_reader()),
        )
    }

    /// Sends any request and returns its raw result: the escape hatch for
    /// methods the types do not know. In the stateless era the per-request
    /// `_meta` fields are added.
    ///
    /// # Errors
    /// As [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request (`notifications/cancelled`).
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Box<RawValue>> {
        // Cacheable methods of the stateless era (cache.rs).
        match self.cache_key(method, params.as_ref()) {
            Some(key) => self.request_cached(key, method, params, options).await,
            None => {
                let outcome = self.send_raw(method, params, options).await;
                self.note_refusal(method, &outcome);
                outcome
            }
        }
    }

    /// [`Client::request_raw`] past the cache.
    async fn send_raw(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Box<RawValue>> {
        let engine = &self.inner.engine;
        let id = engine.allocate_id();
        // The common stateless-era case, params without `_meta` of their
        // own: the per-request fields are spliced in as text, serialized
        // once per connection, instead of built as JSON objects per call.
        if let Some(fragment) = &self.inner.modern_meta_json
            && options.meta.is_empty()
            && params
                .as_ref()
                .is_none_or(|p| p.is_object() && p.get("_meta").is_none())
        {
            let level = level_from_code(
                self.inner
                    .log_level
                    .load(std::sync::atomic::Ordering::Relaxed),
            );
            let token = options.progress.is_some().then_some(id);
            let raw =
                with_modern_meta(fragment, params.as_ref(), level, token).map_err(|source| {
                    Error::Serialize {
                        method: method.to_owned(),
                        source,
                    }
                })?;
            return self.send_params(id, method, Some(raw), options).await;
        }
        let mut params = params;
        if self.inner.modern_meta.is_some()
            || options.progress.is_some()
            || !options.meta.is_empty()
        {
            let params = params.get_or_insert_with(|| Value::Object(JsonObject::new()));
            // The caller's extra entries, where the params do not set them.
            let set = |k: &String| params.get("_meta").and_then(|m| m.get(k)).is_some();
            let extra: Vec<_> = options.meta.iter().filter(|(k, _)| !set(k)).collect();
            add_meta(
                params,
                extra.into_iter().map(|(k, v)| (k.clone(), v.clone())),
            );
            if let Some(fields) = &self.inner.modern_meta {
                // A field the caller set (a per-request capability) wins.
                let set = |k: &String| params.get("_meta").and_then(|m| m.get(k)).is_some();
                let fields: Vec<_> = fields.iter().filter(|(k, _)| !set(k)).collect();
                add_meta(
                    params,
                    fields.into_iter().map(|(k, v)| (k.clone(), v.clone())),
                );
                let level = self
                    .inner
                    .log_level
                    .load(std::sync::atomic::Ordering::Relaxed);
                if let Some(level) = level_from_code(level) {
                    add_meta(
                        params,
                        [(meta::META_LOG_LEVEL.to_owned(), Value::from(level.as_str()))],
                    );
                }
            }
            if options.progress.is_some() {
                add_meta(params, [(meta::PROGRESS_TOKEN.to_owned(), Value::from(id))]);
            }
        }
        let params = params
            .map(|p| serde_json::value::to_raw_value(&p))
            .transpose()
            .map_err(|source| Error::Serialize {
                method: method.to_owned(),
                source,
            })?;
        self.send_params(id, method, params, options).await
    }

    /// Sends request `id` with its final params; re-issues a lost
    /// stateless-era response once and checks `resultType`.
    async fn send_params(
        &self,
        id: i64,
        method: &str,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
    ) -> Result<Box<RawValue>> {
        let engine = &self.inner.engine;
        let modern = self.inner.session.era == Era::Modern;
        let retry_options = modern.then(|| options.clone());
        let mut outcome = engine
            .request(id, method, params.as_deref(), options)
            .await
            .map_err(Error::from);
        // Stateless era: a response stream that broke before the answer is
        // re-issued once, with a new id (a session-era request is never
        // replayed: it may have run).
        if let (Err(Error::ResponseLost { reason, .. }), Some(options)) = (&outcome, retry_options)
        {
            tracing::debug!(server = %engine.server(), %method, %reason, "response lost; re-issuing once");
            let retry_id = engine.allocate_id();
            let params = params
                .as_deref()
                .map(|raw| renumber_progress(raw, options.progress.is_some().then_some(retry_id)))
                .transpose()
                .map_err(|source| Error::Serialize {
                    method: method.to_owned(),
                    source,
                })?;
            outcome = engine
                .request(retry_id, method, params.as_deref(), options)
                .await
                .map_err(Error::from);
        }
        let raw = outcome?;
        if modern {
            check_result_type(
                engine.server(),
                method,
                &raw,
                peek_result_type(&raw).as_deref(),
            )?;
        }
        Ok(raw)
    }

    /// Sends a typed request.
    ///
    /// # Errors
    /// [`Error::Server`] when the server answers with an error,
    /// [`Error::Timeout`], [`Error::Disconnected`], and [`Error::Protocol`]
    /// when the result does not parse.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request (`notifications/cancelled`).
    pub async fn request<R: Request>(
        &self,
        params: &R::Params,
        options: RequestOptions,
    ) -> Result<R::Result> {
        let value = serde_json::to_value(params).map_err(|source| Error::Serialize {
            method: R::METHOD.into(),
            source,
        })?;
        let value = (!value.is_null()).then_some(value);
        let raw = self.request_raw(R::METHOD, value, options).await?;
        parse_result(self.inner.engine.server(), R::METHOD, &raw)
    }

    fn require(&self, capability: &'static str, method: &'static str, present: bool) -> Result<()> {
        if present {
            Ok(())
        } else {
            Err(Error::CapabilityMissing {
                server: self.inner.engine.server().clone(),
                capability,
                method,
            })
        }
    }

    fn require_legacy(&self, method: &'static str) -> Result<()> {
        if self.era() == Era::Legacy {
            Ok(())
        } else {
            Err(Error::NotInThisEra {
                server: self.inner.engine.server().clone(),
                method,
                version: self.protocol_version().clone(),
            })
        }
    }

    /// Follows every page of a list.
    async fn list_all<R>(&self) -> Result<Vec<<R::Result as Paginated>::Item>>
    where
        R: Request<Params = PaginatedRequestParams>,
        R::Result: Paginated,
    {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        let budget = self.inner.list_budget;
        let over = |what: String, setting: &str| Error::Pagination {
            server: self.inner.engine.server().clone(),
            method: R::METHOD,
            reason: format!(
                "{what}, over the limit (the client's `{setting}`; raise it if this list is expected to be that large)"
            ),
        };
        let mut bytes = 0usize;
        for _ in 0..self.inner.page_cap {
            let params = PaginatedRequestParams {
                cursor: cursor.take(),
                ..Default::default()
            };
            let raw = self
                .request_raw(
                    R::METHOD,
                    Some(
                        serde_json::to_value(&params).map_err(|source| Error::Serialize {
                            method: R::METHOD.into(),
                            source,
                        })?,
                    ),
                    RequestOptions::default(),
                )
                .await?;
            // Counted before the page is parsed: its parsed form is several
            // times larger than its text.
            bytes = bytes.saturating_add(raw.get().len());
            if bytes > budget.bytes {
                return Err(over(
                    format!("its pages passed {} bytes", budget.bytes),
                    "max_list_bytes",
                ));
            }
            let page: R::Result = parse_result(self.inner.engine.server(), R::METHOD, &raw)?;
            drop(raw);
            let next = page.next_cursor().map(str::to_owned);
            let page = page.into_items();
            if items.len().saturating_add(page.len()) > budget.items {
                return Err(over(
                    format!("it passed {} items", budget.items),
                    "max_list_items",
                ));
            }
            items.extend(page);
            match next {
                None => return Ok(items),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(Error::Pagination {
                        server: self.inner.engine.server().clone(),
                        method: R::METHOD,
                        reason: format!("the server repeated cursor {next:?}"),
                    });
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(Error::Pagination {
            server: self.inner.engine.server().clone(),
            method: R::METHOD,
            reason: format!(
                "more than {} pages (raise the client's page cap if this is expected)",
                self.inner.page_cap
            ),
        })
    }

    /// Every tool, following pagination.
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`] when the server offers no tools;
    /// [`Error::Pagination`] when the list does not end; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Cancel safe: dropping it cancels the page in flight.
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        Ok(self.list_tools_shared().await?.to_vec())
    }

    /// [`Client::list_tools`] without its copy: the list kept for
    /// [`Client::tools`] and `outputSchema` checks is the one returned.
    /// A parsed tool list is many times the size of its JSON text (every
    /// schema is a tree of maps), so for large lists this halves the
    /// memory a listing costs.
    ///
    /// # Errors
    /// As [`Client::list_tools`].
    ///
    /// # Cancel safety
    /// As [`Client::list_tools`].
    pub async fn list_tools_shared(&self) -> Result<Arc<[Tool]>> {
        self.require(
            "tools",
            rq::ListTools::METHOD,
            self.capabilities().tools.is_some(),
        )?;
        let tools: Arc<[Tool]> = self.list_all::<rq::ListTools>().await?.into();
        // Also for checking `structuredContent` against `outputSchema`.
        self.inner
            .tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set(tools.clone());
        Ok(tools)
    }

    /// Calls a tool. A result with `is_error: Some(true)` is still `Ok`:
    /// the tool ran and failed, and the model should see why.
    ///
    /// What the server asks for on the way is answered by the installed
    /// handlers: `input_required` rounds in the stateless era (up to
    /// [`ClientBuilder::max_input_rounds`]), -32042 URL elicitations in
    /// either. When the tool is known from [`Client::list_tools`] and
    /// declares an `outputSchema`, its `structuredContent` is checked.
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`] when the server offers no tools;
    /// [`Error::InputFailed`] / [`Error::TooManyRounds`] when the server's
    /// asks cannot be met; [`Error::OutputMismatch`] when the structured
    /// result breaks the tool's `outputSchema`; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call.
    pub async fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult> {
        let params = CallToolRequestParams {
            name: name.into(),
            arguments,
            ..Default::default()
        };
        self.call_tool_with(&params, RequestOptions::default())
            .await
    }

    /// Calls a tool with full params and options (timeout, progress).
    ///
    /// # Errors
    /// As [`Client::call_tool`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call.
    pub async fn call_tool_with(
        &self,
        params: &CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<CallToolResult> {
        self.require(
            "tools",
            rq::CallTool::METHOD,
            self.capabilities().tools.is_some(),
        )?;
        let call = || {
            self.request_rounds::<_, CallToolResult>(rq::CallTool::METHOD, params, options.clone())
        };
        let result = match self.with_url_elicitation(call).await {
            // The server's tool definitions changed under us (2026-07-28
            // header mirroring): learn them again and retry, once.
            Err(error)
                if error.code() == Some(codes::HEADER_MISMATCH) && self.era() == Era::Modern =>
            {
                tracing::debug!(server = %self.server_name(), tool = %params.name, "header mismatch; refreshing the tool list and retrying once");
                self.list_tools().await?;
                self.request_rounds(rq::CallTool::METHOD, params, options.clone())
                    .await
            }
            outcome => outcome,
        }?;
        self.check_output(&params.name, result).await
    }

    /// Checks `structuredContent` against the tool's `outputSchema`, when
    /// the tool is known.
    async fn check_output(&self, name: &str, result: CallToolResult) -> Result<CallToolResult> {
        let tool = self
            .inner
            .tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .filter(|t| t.output_schema.is_some() && !result.is_error())
            .cloned();
        let Some(tool) = tool else {
            return Ok(result);
        };
        let result = Arc::new(result);
        let checked = self
            .inner
            .output_validator
            .validate_within(
                Arc::new(tool),
                result.clone(),
                self.inner.output_validation_budget,
            )
            .await;
        // Shared with the check's thread only while that runs: a result
        // whose check was abandoned is copied.
        let result = Arc::try_unwrap(result).unwrap_or_else(|shared| (*shared).clone());
        match checked {
            Ok(()) => Ok(result),
            // The server's own schema is broken, or checking its result
            // took too long: the result is passed on unchecked rather than
            // failing the call.
            Err(mismatch) if mismatch.is_unchecked() => {
                tracing::warn!(server = %self.server_name(), tool = %name, %mismatch, "result not checked against its outputSchema");
                Ok(result)
            }
            Err(mismatch) => Err(Error::OutputMismatch {
                server: self.inner.engine.server().clone(),
                mismatch: Box::new(mismatch),
                result: Box::new(result),
            }),
        }
    }

    /// One round of `tools/call`: the result, the server's
    /// `input_required` result (2026-07-28) for applications that answer it
    /// themselves, or a task. No handler runs and nothing is retried.
    ///
    /// # Errors
    /// As [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call.
    pub async fn call_tool_once(
        &self,
        params: &CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<RequestOutcome<CallToolResult>> {
        self.require(
            "tools",
            rq::CallTool::METHOD,
            self.capabilities().tools.is_some(),
        )?;
        self.request_once(rq::CallTool::METHOD, params, options)
            .await
    }

    /// One round of `prompts/get` (see [`Client::call_tool_once`]).
    ///
    /// # Errors
    /// As [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn get_prompt_once(
        &self,
        params: &GetPromptRequestParams,
        options: RequestOptions,
    ) -> Result<RequestOutcome<GetPromptResult>> {
        self.require(
            "prompts",
            rq::GetPrompt::METHOD,
            self.capabilities().prompts.is_some(),
        )?;
        self.request_once(rq::GetPrompt::METHOD, params, options)
            .await
    }

    /// One round of `resources/read` (see [`Client::call_tool_once`]).
    ///
    /// # Errors
    /// As [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn read_resource_once(
        &self,
        params: &ReadResourceRequestParams,
        options: RequestOptions,
    ) -> Result<RequestOutcome<ReadResourceResult>> {
        self.require(
            "resources",
            rq::ReadResource::METHOD,
            self.capabilities().resources.is_some(),
        )?;
        self.request_once(rq::ReadResource::METHOD, params, options)
            .await
    }

    /// Every resource, following pagination.
    ///
    /// # Errors
    /// As [`Client::list_tools`], for resources.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        self.require(
            "resources",
            rq::ListResources::METHOD,
            self.capabilities().resources.is_some(),
        )?;
        let resources = self.list_all::<rq::ListResources>().await?;
        self.inner.subs.set_resources(&resources);
        Ok(resources)
    }

    /// Every resource template, following pagination.
    ///
    /// # Errors
    /// As [`Client::list_tools`], for resources.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.require(
            "resources",
            rq::ListResourceTemplates::METHOD,
            self.capabilities().resources.is_some(),
        )?;
        let templates = self.list_all::<rq::ListResourceTemplates>().await?;
        self.inner.subs.set_templates(&templates);
        Ok(templates)
    }

    /// Reads a resource.
    ///
    /// # Errors
    /// As [`Client::request`]; a missing resource is [`Error::Server`] with
    /// code -32002.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the read.
    pub async fn read_resource(&self, uri: impl Into<String>) -> Result<ReadResourceResult> {
        let params = ReadResourceRequestParams {
            uri: uri.into(),
            ..Default::default()
        };
        self.read_resource_with(&params, RequestOptions::default())
            .await
    }

    /// Reads a resource with full params and options (timeout, progress);
    /// the server's asks are answered as for [`Client::call_tool`].
    ///
    /// # Errors
    /// As [`Client::read_resource`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the read.
    pub async fn read_resource_with(
        &self,
        params: &ReadResourceRequestParams,
        options: RequestOptions,
    ) -> Result<ReadResourceResult> {
        self.require(
            "resources",
            rq::ReadResource::METHOD,
            self.capabilities().resources.is_some(),
        )?;
        let call = || self.request_rounds(rq::ReadResource::METHOD, params, options.clone());
        self.with_url_elicitation(call).await
    }

    /// Every prompt, following pagination.
    ///
    /// # Errors
    /// As [`Client::list_tools`], for prompts.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        self.require(
            "prompts",
            rq::ListPrompts::METHOD,
            self.capabilities().prompts.is_some(),
        )?;
        let prompts = self.list_all::<rq::ListPrompts>().await?;
        self.inner.subs.set_prompts(&prompts);
        Ok(prompts)
    }

    /// Gets a prompt with its arguments filled in.
    ///
    /// # Errors
    /// As [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn get_prompt(
        &self,
        name: impl Into<String>,
        arguments: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<GetPromptResult> {
        let params = GetPromptRequestParams {
            name: name.into(),
            arguments: arguments.map(|a| a.into_iter().collect()),
            ..Default::default()
        };
        self.get_prompt_with(&params, RequestOptions::default())
            .await
    }

    /// Gets a prompt with full params and options (timeout, progress); the
    /// server's asks are answered as for [`Client::call_tool`].
    ///
    /// # Errors
    /// As [`Client::get_prompt`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn get_prompt_with(
        &self,
        params: &GetPromptRequestParams,
        options: RequestOptions,
    ) -> Result<GetPromptResult> {
        self.require(
            "prompts",
            rq::GetPrompt::METHOD,
            self.capabilities().prompts.is_some(),
        )?;
        let call = || self.request_rounds(rq::GetPrompt::METHOD, params, options.clone());
        self.with_url_elicitation(call).await
    }

    /// Asks for completions of a prompt or resource-template argument.
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`] without the `completions` capability; as
    /// [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn complete(&self, params: &CompleteRequestParams) -> Result<CompleteResult> {
        self.require(
            "completions",
            rq::Complete::METHOD,
            self.capabilities().completions.is_some(),
        )?;
        self.request::<rq::Complete>(params, RequestOptions::default())
            .await
    }

    /// Sets the server's log level: `logging/setLevel` in the session era;
    /// in the stateless era the level travels in every later request's
    /// `_meta` (no round trip).
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`] without the `logging` capability
    /// (session era).
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<()> {
        if self.era() == Era::Modern {
            self.inner.log_level.store(
                level_code(Some(level)),
                std::sync::atomic::Ordering::Relaxed,
            );
            return Ok(());
        }
        self.require(
            "logging",
            rq::SetLevel::METHOD,
            self.capabilities().logging.is_some(),
        )?;
        let params = SetLevelRequestParams { level };
        self.request::<rq::SetLevel>(&params, RequestOptions::default())
            .await
            .map(drop)
    }

    /// Pings the server (session era only).
    ///
    /// # Errors
    /// [`Error::NotInThisEra`] on a 2026-07-28 connection; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the ping.
    pub async fn ping(&self) -> Result<()> {
        self.require_legacy("ping")?;
        self.request_raw("ping", None, RequestOptions::default())
            .await
            .map(drop)
    }

    /// Sends a notification (the escape hatch for notifications the types do
    /// not know).
    ///
    /// # Errors
    /// [`Error::Disconnected`] or [`Error::Transport`] when it cannot be sent.
    ///
    /// # Cancel safety
    /// Cancel safe: a notification dropped midway may or may not be sent,
    /// and the connection stays usable.
    pub async fn notify<P: Serialize>(&self, method: &str, params: Option<&P>) -> Result<()> {
        let params = params
            .map(serde_json::value::to_raw_value)
            .transpose()
            .map_err(|source| Error::Serialize {
                method: method.to_owned(),
                source,
            })?;
        Ok(self.inner.engine.notify(method, params.as_deref()).await?)
    }

    /// Closes the connection gracefully: for a process, close its stdin,
    /// then SIGTERM, then SIGKILL. Pending requests fail.
    ///
    /// # Cancel safety
    /// If dropped midway the process is still stopped when the last clone
    /// of the client is dropped.
    pub async fn close(&self) {
        self.inner.engine.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Connecting and calling must work from `tokio::spawn` on a
    /// multi-thread runtime.
    #[test]
    fn client_futures_are_send() {
        fn assert_send<T: Send>(_: T) {}
        let connector = crate::transport::memory::pair().0.into_connector();
        assert_send(Client::builder().connect(connector));
        let client: Option<Client> = None;
        if let Some(client) = client {
            assert_send(client.list_tools());
            assert_send(client.call_tool("x", None));
            assert_send(client.read_resource("x"));
            assert_send(client.request_raw("x", None, RequestOptions::default()));
        }
    }

    #[test]
    fn picks_newest_mutual_version() {
        let theirs = [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28];
        assert_eq!(
            best_mutual(&theirs, &ProtocolVersion::MODERN),
            Some(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(best_mutual(&theirs[..1], &ProtocolVersion::MODERN), None);
    }

    #[test]
    fn spliced_meta_equals_merged_meta() {
        use serde_json::json;
        let mut fields = JsonObject::new();
        fields.insert(
            "io.modelcontextprotocol/protocolVersion".into(),
            json!("2026-07-28"),
        );
        fields.insert(
            "io.modelcontextprotocol/clientInfo".into(),
            json!({"name": "a\"b", "version": "1"}),
        );
        let text = serde_json::to_string(&fields).unwrap();
        let fragment = &text[1..text.len() - 1];
        for (params, level, token) in [
            (None, None, None),
            (Some(json!({})), Some(LoggingLevel::Info), None),
            (
                Some(json!({"name": "t", "arguments": {"x": [1, "}"]}})),
                None,
                Some(7),
            ),
            (
                Some(json!({"uri": "u"})),
                Some(LoggingLevel::Error),
                Some(9),
            ),
        ] {
            let spliced = with_modern_meta(fragment, params.as_ref(), level, token).unwrap();
            let spliced: Value = serde_json::from_str(spliced.get()).unwrap();
            let mut merged = params.clone().unwrap_or_else(|| json!({}));
            add_meta(&mut merged, fields.clone());
            if let Some(level) = level {
                add_meta(
                    &mut merged,
                    [(meta::META_LOG_LEVEL.to_owned(), json!(level.as_str()))],
                );
            }
            if let Some(token) = token {
                add_meta(
                    &mut merged,
                    [(meta::PROGRESS_TOKEN.to_owned(), json!(token))],
                );
            }
            assert_eq!(spliced, merged, "{params:?}");
        }
    }

    #[test]
    fn meta_is_merged_not_replaced() {
        let mut params = serde_json::json!({"name": "x", "_meta": {"progressToken": 5}});
        add_meta(&mut params, [("a/b".to_owned(), Value::from(1))]);
        assert_eq!(
            params,
            serde_json::json!({"name": "x", "_meta": {"progressToken": 5, "a/b": 1}})
        );
    }

    #[test]
    fn result_type_peek_skips_content() {
        let raw = RawValue::from_string(
            r#"{"content":[{"type":"text","text":"x"}],"resultType":"input_required"}"#.into(),
        )
        .unwrap();
        assert_eq!(peek_result_type(&raw).as_deref(), Some("input_required"));
        let raw = RawValue::from_string(r#"{"content":[]}"#.into()).unwrap();
        assert_eq!(peek_result_type(&raw), None);
    }
}

#[cfg(test)]
mod scripted {
    //! The client against a scripted modern server over the in-memory pair.

    use serde_json::json;

    use super::*;
    use crate::transport::memory::{self, MemoryEnd};

    async fn answer(peer: &mut MemoryEnd, result: Value) -> Value {
        let request: Value = serde_json::from_slice(&peer.recv().await.unwrap()).unwrap();
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string())
            .await
            .unwrap();
        request
    }

    async fn modern_client() -> (Client, MemoryEnd) {
        let (client_end, mut server) = memory::pair();
        let connect = Client::builder()
            .name("scripted")
            .connect(client_end.into_connector());
        let discover = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}, "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}});
        let (client, probe) = tokio::join!(connect, answer(&mut server, discover));
        let meta = &probe["params"]["_meta"];
        assert_eq!(probe["method"], "server/discover");
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "switchboard"
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
        (client.unwrap(), server)
    }

    #[tokio::test]
    async fn every_modern_request_carries_meta_and_result_types_are_checked() {
        let (client, mut server) = modern_client().await;

        // Absent resultType: complete.
        let (result, request) = tokio::join!(
            client.call_tool("t", None),
            answer(
                &mut server,
                json!({"content": [{"type": "text", "text": "ok"}]})
            )
        );
        assert!(result.is_ok());
        let meta = &request["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "switchboard"
        );

        // Unknown resultType: an error naming it.
        let (result, _) = tokio::join!(
            client.call_tool("t", None),
            answer(
                &mut server,
                json!({"resultType": "hologram", "content": []})
            )
        );
        let error = result.unwrap_err();
        assert!(
            matches!(error, Error::Protocol { .. }) && error.to_string().contains("hologram"),
            "{error}"
        );

        // input_required with state only: retried with the state echoed
        // byte for byte, under a new id.
        let script = async {
            let first = answer(
                &mut server,
                json!({"resultType": "input_required", "requestState": "a\u{e9} \"b\""}),
            )
            .await;
            let retry = answer(&mut server, json!({"content": []})).await;
            (first, retry)
        };
        let (result, (first, retry)) = tokio::join!(client.call_tool("t", None), script);
        result.unwrap();
        assert_ne!(first["id"], retry["id"]);
        assert_eq!(retry["params"]["requestState"], "a\u{e9} \"b\"");
        assert!(first["params"].get("requestState").is_none());

        // The one-round variant hands the interim result to the caller.
        let params = CallToolRequestParams {
            name: "t".into(),
            ..Default::default()
        };
        let (result, _) = tokio::join!(
            client.call_tool_once(&params, RequestOptions::default()),
            answer(
                &mut server,
                json!({"resultType": "input_required", "requestState": "abc"})
            )
        );
        match result.unwrap() {
            RequestOutcome::InputRequired(interim) => {
                assert_eq!(interim.request_state.as_deref(), Some("abc"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn per_request_meta_reaches_the_server_and_only_that_request() {
        let (client, mut server) = modern_client().await;
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        let params = CallToolRequestParams {
            name: "t".into(),
            ..Default::default()
        };
        let options = RequestOptions::default()
            .meta("traceparent", traceparent)
            .meta("tracestate", "vendor=x")
            // Like a field in the params' own `_meta`, it outranks the
            // client's per-request field.
            .meta("io.modelcontextprotocol/protocolVersion", "1999-01-01");
        let (result, request) = tokio::join!(
            client.call_tool_with(&params, options),
            answer(&mut server, json!({"content": []}))
        );
        result.unwrap();
        let meta = &request["params"]["_meta"];
        assert_eq!(meta["traceparent"], traceparent);
        assert_eq!(meta["tracestate"], "vendor=x");
        assert_eq!(request["params"]["name"], "t");
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "1999-01-01",
            "an entry the caller gives explicitly is sent as given"
        );

        // Without extra meta: the connection's fields only, nothing left
        // over from the call before.
        let (result, request) = tokio::join!(
            client.call_tool("t", None),
            answer(&mut server, json!({"content": []}))
        );
        result.unwrap();
        let meta = request["params"]["_meta"].as_object().unwrap();
        let keys: Vec<_> = meta.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "io.modelcontextprotocol/protocolVersion",
                "io.modelcontextprotocol/clientInfo",
                "io.modelcontextprotocol/clientCapabilities",
            ]
        );
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }

    #[tokio::test]
    async fn a_header_mismatch_refreshes_tools_and_retries_once() {
        let (client, mut server) = modern_client().await;
        let script = async {
            let first: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
            assert_eq!(first["method"], "tools/call");
            let mismatch = json!({"jsonrpc": "2.0", "id": first["id"],
                "error": {"code": -32020, "message": "Header mismatch"}});
            server.send(mismatch.to_string()).await.unwrap();
            let list = answer(&mut server, json!({"tools": []})).await;
            assert_eq!(list["method"], "tools/list");
            let retry = answer(&mut server, json!({"content": []})).await;
            assert_eq!(retry["method"], "tools/call");
            assert_ne!(retry["id"], first["id"], "a retry is a new request");
            // A second mismatch is not retried again.
            let again: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
            let mismatch = json!({"jsonrpc": "2.0", "id": again["id"],
                "error": {"code": -32020, "message": "Header mismatch"}});
            server.send(mismatch.to_string()).await.unwrap();
            let list = answer(&mut server, json!({"tools": []})).await;
            assert_eq!(list["method"], "tools/list");
            let last: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
            let mismatch = json!({"jsonrpc": "2.0", "id": last["id"],
                "error": {"code": -32020, "message": "Header mismatch"}});
            server.send(mismatch.to_string()).await.unwrap();
        };
        let calls = async {
            client.call_tool("t", None).await.unwrap();
            client.call_tool("t", None).await.unwrap_err()
        };
        let (error, ()) = tokio::join!(calls, script);
        assert_eq!(error.code(), Some(-32020));
    }

    #[tokio::test]
    async fn a_lost_modern_response_is_reissued_once_with_a_new_id() {
        let (client, mut server) = modern_client().await;
        let lost = |id: &Value| crate::transport::Incoming::Lost {
            id: serde_json::from_value(id.clone()).unwrap(),
            why: "stream broke".into(),
        };
        let script = async {
            let first: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
            server.report(lost(&first["id"])).await.unwrap();
            let retry = answer(&mut server, json!({"content": []})).await;
            assert_ne!(retry["id"], first["id"]);
            assert_eq!(retry["params"]["name"], "t");
            // Lost twice: the error reaches the caller.
            let a: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
            server.report(lost(&a["id"])).await.unwrap();
            let b: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
            server.report(lost(&b["id"])).await.unwrap();
        };
        let calls = async {
            client.call_tool("t", None).await.unwrap();
            client.call_tool("t", None).await.unwrap_err()
        };
        let (error, ()) = tokio::join!(calls, script);
        assert!(matches!(error, Error::ResponseLost { .. }), "{error}");
    }

    #[tokio::test]
    async fn unknown_content_blocks_do_not_fail_a_result() {
        let (client, mut server) = modern_client().await;
        let (result, _) = tokio::join!(
            client.call_tool("t", None),
            answer(
                &mut server,
                json!({"content": [{"type": "hologram", "x": 1}, {"type": "text", "text": "ok"}]})
            )
        );
        let result = result.unwrap();
        assert_eq!(result.content.len(), 2);
        assert_eq!(
            serde_json::to_value(&result.content[0]).unwrap(),
            json!({"type": "hologram", "x": 1})
        );
    }
}
