//! The client's builder: settings, their defaults and checks, and
//! `connect`.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_types::apps::{UI_EXTENSION, UiCapability};
use switchboard_types::{ClientCapabilities, Era, Implementation, LoggingLevel, methods};

use super::handlers::{ElicitationHandler, Handlers, Roots, RootsHandler, SamplingHandler};
use super::{
    Client, ClientInner, EraMode, Negotiator, ProbeWait, SessionHandler, level_code, modern_meta,
    subscriptions,
};
use crate::engine::{EngineConfig, RequestHandler};
use crate::error::{Error, Result};
use crate::transport::Connector;

/// Default for [`ClientBuilder::max_list_items`].
pub const DEFAULT_MAX_LIST_ITEMS: usize = 100_000;

/// Default for [`ClientBuilder::probe_timeout`].
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Default for [`ClientBuilder::probe_start_timeout`].
pub const DEFAULT_PROBE_START_TIMEOUT: Duration = Duration::from_secs(10);

/// Default for [`ClientBuilder::probe_notice_after`].
pub const DEFAULT_PROBE_NOTICE_AFTER: Duration = Duration::from_secs(1);

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
pub(super) struct ListBudget {
    pub(super) items: usize,
    pub(super) bytes: usize,
}

impl Default for ListBudget {
    fn default() -> Self {
        Self {
            items: DEFAULT_MAX_LIST_ITEMS,
            bytes: DEFAULT_MAX_LIST_BYTES,
        }
    }
}

/// Builds a [`Client`]. Setters never fail; [`ClientBuilder::connect`]
/// reports the first bad setting.
#[must_use]
#[derive(Clone)]
pub struct ClientBuilder {
    pub(super) name: Option<String>,
    pub(super) client_info: Implementation,
    pub(super) capabilities: ClientCapabilities,
    pub(super) mode: EraMode,
    pub(super) era_hint: Option<Era>,
    pub(super) probe_timeout: Duration,
    pub(super) probe_start_timeout: Duration,
    pub(super) probe_notice_after: Duration,
    pub(super) on_probe_wait: Option<Arc<dyn Fn(ProbeWait) + Send + Sync>>,
    pub(super) engine: EngineConfig,
    pub(super) page_cap: usize,
    pub(super) list_budget: ListBudget,
    pub(super) max_server_requests: usize,
    pub(super) output_validation_budget: Duration,
    pub(super) handler: Option<Arc<dyn RequestHandler>>,
    pub(super) handlers: Handlers,
    pub(super) max_input_rounds: usize,
    pub(super) url_elicitation_wait: Duration,
    pub(super) log_level: Option<LoggingLevel>,
    /// The cache, list refreshes and listens (cache.rs, subscriptions.rs).
    pub(super) subs: subscriptions::Settings,
    /// Shown every message (see [`ClientBuilder::tap`]).
    pub(super) tap: Option<Arc<dyn crate::transport::tap::Tap>>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("name", &self.name)
            .field("client_info", &self.client_info)
            .field("mode", &self.mode)
            .field("era_hint", &self.era_hint)
            .field("probe_timeout", &self.probe_timeout)
            .field("probe_start_timeout", &self.probe_start_timeout)
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
            probe_start_timeout: DEFAULT_PROBE_START_TIMEOUT,
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
            tap: None,
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

    /// The capabilities declared to the server (replacing what
    /// [`extension`](Self::extension) and [`mcp_apps`](Self::mcp_apps)
    /// declared before it).
    pub fn capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Declares extension `id` with its `settings` object in the
    /// capabilities (`capabilities.extensions`), in both eras.
    pub fn extension(mut self, id: impl Into<String>, settings: serde_json::Value) -> Self {
        self.capabilities.set_extension(id, settings);
        self
    }

    /// Declares MCP Apps (`io.modelcontextprotocol/ui`, rendering
    /// `text/html;profile=mcp-app`): servers may then offer tools with
    /// views, fetched with [`Client::app_for`]. Declare it only when the
    /// views are rendered: a server may leave the text out of such tools.
    pub fn mcp_apps(self) -> Self {
        let settings = serde_json::to_value(UiCapability::default())
            .unwrap_or_else(|_| serde_json::Value::Object(Default::default()));
        self.extension(UI_EXTENSION, settings)
    }

    /// Shows `tap` every message of every connection this client opens
    /// (the era probe's too), in both directions, as sent and received:
    /// for a protocol view or a trace. See [`crate::transport::tap`].
    pub fn tap(mut self, tap: Arc<dyn crate::transport::tap::Tap>) -> Self {
        self.tap = Some(tap);
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

    /// How long the `server/discover` probe waits for an answer from a
    /// server that is up before `initialize` is sent as well (default
    /// [`DEFAULT_PROBE_TIMEOUT`], 3 s). A server process counts as up from
    /// its first output (a byte on stderr); until then see
    /// [`probe_start_timeout`](Self::probe_start_timeout). Over the
    /// network the wait counts from the probe, and silence is an outage,
    /// not a reason to fall back.
    ///
    /// The wait only decides when `initialize` follows: on a local server
    /// the probe stays pending, and a `DiscoverResult` that comes later
    /// (a modern server that was still starting, and then refuses
    /// `initialize` with -32022) still makes the connection modern, as
    /// does an `initialize` refused with -32022. Only the first connection
    /// to a session-era server that ignores the probe pays the wait: the
    /// verdict is remembered ([`ClientBuilder::era_hint`]).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// How long the `server/discover` probe waits for a server process
    /// that has written nothing at all yet, before `initialize` is sent as
    /// well (default [`DEFAULT_PROBE_START_TIMEOUT`], 10 s): it may still be
    /// starting (an interpreter loading, `npx` or `uvx` fetching). Its first
    /// byte on stderr starts [`probe_timeout`](Self::probe_timeout) instead.
    /// A server silent for longer still gets its answer heard (see
    /// `probe_timeout`); what bounds the whole negotiation is the request
    /// timeout, or the caller's own timeout around
    /// [`connect`](Self::connect) (the hub's startup timeout).
    pub fn probe_start_timeout(mut self, timeout: Duration) -> Self {
        self.probe_start_timeout = timeout;
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

    /// The JSON-RPC id of the first request (default 1; each next one is
    /// one more). Clients of one server in several processes — replicas
    /// of a gateway, each retrying the other's 2026-07-28 rounds — start
    /// at random points, so that a retry's id is never the initial
    /// request's, as the spec requires.
    pub fn first_request_id(mut self, id: i64) -> Self {
        self.engine.first_request_id = id;
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
        self.handlers.roots_handler = None;
        self
    }

    /// Answers `roots/list` with `handler`, which is told which request
    /// the server is working on; declares `roots.listChanged`, and
    /// changing `roots` notifies the server, as [`roots`](Self::roots)
    /// does (whose list `handler` answers in place of).
    pub fn roots_from(mut self, roots: Roots, handler: impl RootsHandler) -> Self {
        self.handlers.roots = Some(roots);
        self.handlers.roots_handler = Some(Arc::new(handler));
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

    pub(super) fn validate(&self) -> Result<()> {
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
            ("probe_start_timeout", self.probe_start_timeout),
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
        zero("probe_start_timeout", self.probe_start_timeout)?;
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
        let connector: Arc<dyn Connector> = match &self.tap {
            Some(tap) => Arc::new(crate::transport::tap::Tapped::new(connector, tap.clone())),
            None => connector,
        };
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
        // Roots set while the connection is being made may have been read
        // by the server before the listener below exists: it is told then.
        let roots_before = builder.handlers.roots.as_ref().map(Roots::changes);
        let (engine, mut session) = negotiator
            .negotiate()
            .await
            .map_err(|error| said_with_environment(error, &*connector))?;
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
            // Negotiation settles on one of the two above; an era added to
            // the types later has no per-request `_meta` until taught here.
            _ => None,
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
                    if roots_before != Some(roots.changes()) {
                        listener();
                    }
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

/// A handshake that timed out on a server process the connector started,
/// said with the environment the process got ([`Error::StartTimeout`]).
fn said_with_environment(error: Error, connector: &dyn Connector) -> Error {
    match (error, connector.environment()) {
        (
            Error::Timeout {
                server,
                method,
                after,
            },
            Some(environment),
        ) => Error::StartTimeout {
            server,
            method,
            after,
            environment,
        },
        (error, _) => error,
    }
}
