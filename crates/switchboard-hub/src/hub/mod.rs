//! The [`Hub`]: named servers, each with a state, connected in parallel,
//! reconnected when they drop, their tools in one namespaced list.
//!
//! One file: the `Hub`'s public API (builder, calls, listings, reloads)
//! over its own modules (supervisor, routes, state, stats), whose methods
//! share the one locked server table.
//!
//! ```no_run
//! use switchboard_hub::hub::Hub;
//! use switchboard_hub::{Dialect, Origin, Scope, ServerConfig, TransportConfig};
//!
//! # async fn demo() -> Result<(), switchboard_hub::hub::HubError> {
//! let origin = Origin { file: "switchboard.toml".into(), dialect: Dialect::Switchboard, scope: Scope::User };
//! let everything = ServerConfig::new(
//!     "everything",
//!     TransportConfig::Stdio {
//!         command: "npx".into(),
//!         args: vec!["-y".into(), "@modelcontextprotocol/server-everything".into()],
//!         env: Default::default(),
//!         cwd: None,
//!     },
//!     origin,
//! );
//! let hub = Hub::builder().server(everything).build()?;
//! hub.start().await?;
//! for tool in hub.tools() {
//!     println!("{}", tool.name); // everything__echo …
//! }
//! let args = serde_json::json!({"message": "hi"}).as_object().cloned();
//! let result = hub.call_tool("everything__echo", args).await?;
//! println!("{:?}", result.content);
//! hub.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! ## Lifecycle
//! Each enabled server gets a supervisor task (owned by the hub's
//! `TaskTracker`, under one `CancellationToken`): it connects (bounded by
//! the local or remote concurrency limit and the startup timeout), lists
//! the tools, then watches the connection. A server that was ready and
//! closes is reconnected with exponential backoff and jitter; its last
//! tools stay listed, marked stale. A first connection that fails is
//! `failed` (with exit status, HTTP status, stderr tail); a 401/403 is
//! `needs-auth`. [`Hub::shutdown`] closes every server gracefully and
//! waits for every task.
//!
//! This file is one room of about a thousand lines: the hub's handle, its
//! builder and the one call path every tool call takes (`call_slot`), which
//! read the same private state; the concerns around them are files of
//! their own (the policy, routes, changes, serving, logins …).
//!
//! ## What the client library does not offer (yet)
//! - Byte counts: [`ServerStats::bytes_sent`] stays `None`.

pub mod audit;
mod changes;
mod error;
mod features;
mod headers_helper;
#[cfg(feature = "http-server")]
mod itself;
mod login;
#[cfg(feature = "otel")]
mod otel;
pub mod policy;
pub(crate) mod routes;
mod state;
mod stats;
mod store;
mod subscriptions;
pub(crate) mod supervisor;
#[cfg(feature = "oauth")]
pub mod users;
mod verdicts;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use switchboard::transport::http::AuthProvider;
use switchboard::types::{CallToolRequestParams, CallToolResult, JsonObject, RequestOutcome};
use switchboard::{
    Client, ClientBuilder, Error as ClientError, RequestOptions, Roots, TaskOptions,
};
use tokio::sync::{Semaphore, broadcast, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::config::ServerConfig;
use crate::config::policy::ToolPolicy;

pub use crate::config::Prefix;
pub use crate::gateway::BackendAsks;
pub use crate::gateway::{
    AUTHENTICATE_TOOL, Authenticator, BACKEND_ERROR_META, HubServer, MAX_SUBSCRIPTIONS_PER_HOST,
    ORIGIN_META, Ranker, SEARCH_TOOL, TOOL_ASK_META, resource_origin, resource_template_uri,
    resource_uri, skill_origin, skill_uri,
};
pub use changes::ReloadReport;
pub use error::HubError;
pub use features::{HubListing, HubPrompt, HubResource, HubResourceTemplate, HubSkill};
#[cfg(feature = "oauth")]
pub use login::{Connect, OAuthLogins};
pub use login::{DEFAULT_CREDENTIALS_POLL, MIN_CREDENTIALS_POLL};
pub use policy::{
    AllowStore, RememberedAllow, RememberedAllows, ToolAnswer, ToolApprover, ToolAsk,
};
pub use routes::MAX_NAME_LEN;
pub use state::{Failure, HubEvent, HubEvents, HubTool, ServerState, ServerStatus};
pub use stats::{LATENCY_BOUNDS, ServerStats};
#[cfg(feature = "oauth")]
pub use users::{Added, UserServer, UserStore, Users, UsersBuilder};
pub use verdicts::VerdictStore;

use stats::InFlight;
use store::Store;
use supervisor::View;

/// The hub-wide name `server__tool` that `server`'s tool `tool` wants.
/// [`Hub::tools`] gives it to the first (server, tool) in configuration
/// order that wants it; a later one that would collide (server `a__b`'s
/// tool `c` and server `a`'s tool `b__c`) is named `server__tool_HASH`
/// instead (see [`HubTool::renamed_from`]). [`Hub::call_tool`] routes by
/// the names [`Hub::tools`] lists.
pub fn namespaced(server: &str, tool: &str) -> String {
    format!("{server}__{tool}")
}

/// Default for [`HubBuilder::local_concurrency`]: enough for every local
/// server of a large configuration to start at once (spawning is cheap;
/// servers mostly wait on their own start-up), see `benches/connect.rs`.
pub const DEFAULT_LOCAL_CONCURRENCY: usize = 64;
/// Default for [`HubBuilder::remote_concurrency`].
pub const DEFAULT_REMOTE_CONCURRENCY: usize = 20;
/// Default for [`HubBuilder::startup_timeout`].
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How a server that closed unexpectedly is reconnected: the first attempt
/// after `initial` (with jitter: between half and all of it), each next
/// delay doubled up to `max`, at most `attempts` attempts before the
/// server is `failed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Backoff {
    /// The first delay (default 0.5 s).
    pub initial: Duration,
    /// The cap (default 30 s).
    pub max: Duration,
    /// Attempts before giving up (default 5; 0 never reconnects).
    pub attempts: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            attempts: 5,
        }
    }
}

impl Backoff {
    /// A policy with these delays and attempts.
    pub fn new(initial: Duration, max: Duration, attempts: u32) -> Self {
        Self {
            initial,
            max,
            attempts,
        }
    }

    /// The delay before attempt `attempt` (1-based), jittered.
    pub(crate) fn delay(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(20);
        let full = self.initial.saturating_mul(1 << exp).min(self.max);
        let half = full / 2;
        half + half.mul_f64(jitter())
    }
}

/// A number in [0, 1) that differs between calls and processes, without a
/// random number crate: the std hasher's per-process random keys over a
/// counter.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::AtomicU64;
    static KEYS: std::sync::OnceLock<RandomState> = std::sync::OnceLock::new();
    static N: AtomicU64 = AtomicU64::new(0);
    let hash = KEYS
        .get_or_init(RandomState::new)
        .hash_one(N.fetch_add(1, Ordering::Relaxed));
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

type Customize = Arc<dyn Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync>;
type AuthFactory = Arc<dyn Fn(&ServerConfig) -> Option<Arc<dyn AuthProvider>> + Send + Sync>;
/// Where [`Hub::reload`] reads the servers from.
type ConfigSource = Arc<dyn Fn() -> Result<Vec<ServerConfig>, String> + Send + Sync>;

/// Builds a [`Hub`]. Setters never fail; [`HubBuilder::build`] reports the
/// first bad setting.
#[must_use]
#[derive(Clone)]
pub struct HubBuilder {
    servers: Vec<ServerConfig>,
    customize: Option<Customize>,
    auth: Option<AuthFactory>,
    local_concurrency: usize,
    remote_concurrency: usize,
    startup_timeout: Duration,
    backoff: Backoff,
    keepalive: Option<Duration>,
    event_capacity: usize,
    state_dir: Option<PathBuf>,
    persist: bool,
    max_message_size: Option<usize>,
    default_prefix: Prefix,
    roots: Option<Roots>,
    source: Option<ConfigSource>,
    login: login::LoginSettings,
    tool_policy: ToolPolicy,
    tool_approver: Option<Arc<dyn ToolApprover>>,
    remembered: Option<RememberedAllows>,
    policy_source: Option<policy::PolicySource>,
    verdicts: Option<Arc<dyn VerdictStore>>,
}

impl std::fmt::Debug for HubBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubBuilder")
            .field("servers", &self.servers)
            .field("customize", &self.customize.is_some())
            .field("auth", &self.auth.is_some())
            .field("local_concurrency", &self.local_concurrency)
            .field("remote_concurrency", &self.remote_concurrency)
            .field("startup_timeout", &self.startup_timeout)
            .field("backoff", &self.backoff)
            .field("keepalive", &self.keepalive)
            .field("event_capacity", &self.event_capacity)
            .field("state_dir", &self.state_dir)
            .field("persist", &self.persist)
            .field("max_message_size", &self.max_message_size)
            .field("roots", &self.roots)
            .field("source", &self.source.is_some())
            .field("login", &self.login)
            .field("tool_policy", &self.tool_policy)
            .field("tool_approver", &self.tool_approver.is_some())
            .field("remembered", &self.remembered)
            .field("verdicts", &self.verdicts)
            .finish()
    }
}

impl Default for HubBuilder {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            customize: None,
            auth: None,
            local_concurrency: DEFAULT_LOCAL_CONCURRENCY,
            remote_concurrency: DEFAULT_REMOTE_CONCURRENCY,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            backoff: Backoff::default(),
            keepalive: None,
            event_capacity: 256,
            state_dir: None,
            persist: true,
            max_message_size: None,
            default_prefix: Prefix::Always,
            roots: None,
            source: None,
            login: login::LoginSettings::default(),
            tool_policy: ToolPolicy::default(),
            tool_approver: None,
            remembered: None,
            policy_source: None,
            verdicts: None,
        }
    }
}

impl HubBuilder {
    /// Adds a server (already expanded: runnable).
    pub fn server(mut self, server: ServerConfig) -> Self {
        self.servers.push(server);
        self
    }

    /// Adds servers, in order (the aggregated tool list keeps it).
    pub fn servers(mut self, servers: impl IntoIterator<Item = ServerConfig>) -> Self {
        self.servers.extend(servers);
        self
    }

    /// Customises each server's [`ClientBuilder`] (handlers, client info,
    /// era mode …). Called on every connection attempt with the builder
    /// the hub prepared (name, request timeout, remembered era).
    pub fn client(
        mut self,
        customize: impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static,
    ) -> Self {
        self.customize = Some(Arc::new(customize));
        self
    }

    /// Gives remote servers credentials: called on every connection
    /// attempt to an HTTP server (an OAuth provider over a credential
    /// store, say). A server that still answers 401/403 is `needs-auth`.
    pub fn auth(
        mut self,
        factory: impl Fn(&ServerConfig) -> Option<Arc<dyn AuthProvider>> + Send + Sync + 'static,
    ) -> Self {
        self.auth = Some(Arc::new(factory));
        self
    }

    /// How many local servers may be starting at once (default
    /// [`DEFAULT_LOCAL_CONCURRENCY`]).
    pub fn local_concurrency(mut self, limit: usize) -> Self {
        self.local_concurrency = limit;
        self
    }

    /// How many remote servers may be connecting at once (default
    /// [`DEFAULT_REMOTE_CONCURRENCY`]).
    pub fn remote_concurrency(mut self, limit: usize) -> Self {
        self.remote_concurrency = limit;
        self
    }

    /// How long one connection attempt (spawn or dial, handshake, first
    /// tool list) may take when the server's configuration does not say
    /// (default 30 s).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// How servers that close unexpectedly are reconnected.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Pings session-era servers this often (default: never); a ping not
    /// answered within the interval counts as a lost connection.
    pub fn keepalive(mut self, interval: Option<Duration>) -> Self {
        self.keepalive = interval;
        self
    }

    /// How many events each [`Hub::events`] stream buffers before it lags
    /// (default 256).
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.event_capacity = capacity;
        self
    }

    /// Where the state file lives (default: `switchboard` under the user's
    /// data directory).
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// Whether to read and write the state file at all (default `true`).
    pub fn persist(mut self, persist: bool) -> Self {
        self.persist = persist;
        self
    }

    /// The largest message accepted from any server, in bytes: a line on
    /// stdio, an HTTP response body or SSE event (default: each
    /// transport's own).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = Some(bytes);
        self
    }

    /// How a server's names are made when its configuration does not say
    /// ([`ServerConfig::prefix`](crate::config::ServerConfig::prefix));
    /// default [`Prefix::Always`]: `server__name`. The gateway serving one
    /// server uses [`Prefix::OnCollision`]: the server's own names.
    pub fn default_prefix(mut self, prefix: Prefix) -> Self {
        self.default_prefix = prefix;
        self
    }

    /// Offers `roots` to every server (`roots/list`; the `roots`
    /// capability with `listChanged`). Off by default: a library hub
    /// shows servers no directory unless asked. The same [`Roots`] is
    /// shared by every connection, so [`Roots::set`] (or
    /// [`Hub::roots`]`.set`) tells every connected server at once.
    pub fn roots(mut self, roots: Roots) -> Self {
        self.roots = Some(roots);
        self
    }

    /// Keeps the era and transport each remote server was found to speak
    /// in `store`, shared with every process using it (see
    /// [`VerdictStore`]): a server detected by one replica is connected
    /// without a probe by the others. The state file keeps them for this
    /// machine either way.
    pub fn verdict_store(mut self, store: Arc<dyn VerdictStore>) -> Self {
        self.verdicts = Some(store);
        self
    }

    /// Where [`Hub::reload`] reads the servers from: called on every
    /// reload, it gives the whole server list again (already expanded),
    /// or says why it could not.
    pub fn config_source(
        mut self,
        source: impl Fn() -> Result<Vec<ServerConfig>, String> + Send + Sync + 'static,
    ) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// Makes the hub (nothing connects until [`Hub::start`]). The state
    /// file, if any, is read now, so [`Hub::list`] answers at once.
    ///
    /// # Errors
    /// [`HubError::Config`] for a zero limit, timeout or capacity, or two
    /// servers with the same name.
    pub fn build(self) -> Result<Hub, HubError> {
        let bad = |setting, reason: &str| {
            Err(HubError::Config {
                setting,
                reason: reason.into(),
            })
        };
        if self.local_concurrency == 0 {
            return bad("local_concurrency", "must be at least 1");
        }
        if self.remote_concurrency == 0 {
            return bad("remote_concurrency", "must be at least 1");
        }
        if self.event_capacity == 0 {
            return bad("event_capacity", "must be at least 1");
        }
        if self.startup_timeout.is_zero() {
            return bad("startup_timeout", "must be greater than zero");
        }
        if self.backoff.initial.is_zero() || self.backoff.max < self.backoff.initial {
            return bad("backoff", "initial must be > 0 and at most max");
        }
        if self.keepalive.is_some_and(|k| k.is_zero()) {
            return bad("keepalive", "must be greater than zero");
        }
        if self.max_message_size == Some(0) {
            return bad("max_message_size", "must be at least 1");
        }
        self.login.check()?;
        let mut names = HashSet::new();
        for server in &self.servers {
            if !names.insert(server.name.as_str()) {
                return Err(HubError::Config {
                    setting: "servers",
                    reason: format!("two servers are named `{}`", server.name),
                });
            }
        }
        let store = if self.persist {
            self.state_dir
                .clone()
                .or_else(store::default_dir)
                .map(|dir| Store::open(&dir))
        } else {
            None
        };
        let slots = self
            .servers
            .iter()
            .map(|config| supervisor::Slot::new(config.clone(), store.as_ref()))
            .collect();
        let (events, _) = broadcast::channel(self.event_capacity);
        let shared = Arc::new(Shared {
            slots: RwLock::new(slots),
            changes: tokio::sync::Mutex::new(()),
            routes: RwLock::new(routes::Routes::default()),
            local: Semaphore::new(self.local_concurrency),
            remote: Semaphore::new(self.remote_concurrency),
            events,
            store,
            settings: Settings {
                customize: self.customize,
                auth: self.auth,
                startup_timeout: self.startup_timeout,
                backoff: self.backoff,
                keepalive: self.keepalive,
                max_message_size: self.max_message_size,
                default_prefix: self.default_prefix,
                roots: self.roots,
                source: self.source,
                verdicts: self.verdicts.map(verdicts::SharedVerdicts::new),
            },
            tasks: TaskTracker::new(),
            #[cfg(feature = "http-server")]
            instance: itself::new_instance(),
            #[cfg(feature = "http-server")]
            served: AtomicBool::new(false),
            writer_started: AtomicBool::new(false),
            started: AtomicBool::new(false),
            login: self.login,
            policy: policy::PolicyState::new(
                self.tool_policy,
                self.tool_approver,
                self.remembered,
                self.policy_source,
            ),
        });
        shared.update_routes();
        Ok(Hub {
            inner: Arc::new(HubInner {
                shared,
                cancel: CancellationToken::new(),
            }),
        })
    }
}

pub(crate) struct Settings {
    customize: Option<Customize>,
    auth: Option<AuthFactory>,
    startup_timeout: Duration,
    backoff: Backoff,
    keepalive: Option<Duration>,
    max_message_size: Option<usize>,
    default_prefix: Prefix,
    roots: Option<Roots>,
    source: Option<ConfigSource>,
    verdicts: Option<verdicts::SharedVerdicts>,
}

/// What the hub handle and the supervisors share (the supervisors never
/// hold the handle, so dropping the last handle cancels them).
pub(crate) struct Shared {
    /// Every server, in configuration order. Replaced, never mutated in
    /// place, by the runtime changes ([`Hub::add`], [`Hub::remove`],
    /// [`Hub::reload`] …), which `changes` serialises.
    slots: RwLock<Vec<Arc<supervisor::Slot>>>,
    changes: tokio::sync::Mutex<()>,
    /// Hub-wide tool names: rebuilt from every slot when a tool list
    /// changes; what [`Hub::tools`] lists and [`Hub::call_tool`] routes.
    pub(crate) routes: RwLock<routes::Routes>,
    local: Semaphore,
    remote: Semaphore,
    events: broadcast::Sender<HubEvent>,
    store: Option<Store>,
    settings: Settings,
    /// Every task of the hub: the supervisors, the state file's writer,
    /// and the closing of lost connections (so a reconnection need not
    /// wait for it).
    tasks: TaskTracker,
    /// This hub's id, random: what a gateway serving it over HTTP answers
    /// on `/healthz` ([`Hub::instance_id`]).
    #[cfg(feature = "http-server")]
    instance: String,
    /// A gateway serves this hub: before connecting to a loopback URL,
    /// the hub asks whether it is that gateway ([`itself`]).
    #[cfg(feature = "http-server")]
    served: AtomicBool,
    writer_started: AtomicBool,
    /// [`Hub::start`] ran: servers added later start at once.
    started: AtomicBool,
    login: login::LoginSettings,
    /// The tool policy, its approver and remembered allows.
    pub(crate) policy: policy::PolicyState,
}

impl Hub {
    /// Every server's name, in configuration order.
    pub(crate) fn server_names(&self) -> Vec<String> {
        self.inner
            .shared
            .slots()
            .iter()
            .map(|slot| slot.config.name.clone())
            .collect()
    }

    /// This hub's instance id, random per hub and no secret: what a
    /// gateway serving it over HTTP answers on `GET /healthz` (in the
    /// `switchboard-instance` header), so that the hub, served, recognises
    /// itself among its servers (a host's file listing the gateway's URL)
    /// and does not connect to itself.
    #[cfg(feature = "http-server")]
    pub fn instance_id(&self) -> &str {
        &self.inner.shared.instance
    }

    /// A gateway serves this hub: from now on a loopback URL answering
    /// this hub's instance id on `/healthz` is not connected to.
    #[cfg(feature = "http-server")]
    pub(crate) fn mark_served(&self) {
        self.inner.shared.served.store(true, Ordering::Release);
    }
}

impl Shared {
    /// How `server`'s names are made: its own setting, else the hub's.
    pub(crate) fn prefix_of(&self, server: &str) -> Prefix {
        self.find(server)
            .and_then(|slot| slot.config.prefix)
            .unwrap_or(self.settings.default_prefix)
    }

    /// Every server now, in configuration order.
    fn slots(&self) -> Vec<Arc<supervisor::Slot>> {
        self.slots.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The server named `name`.
    fn find(&self, name: &str) -> Option<Arc<supervisor::Slot>> {
        self.slots
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|s| s.config.name == name)
            .cloned()
    }

    /// Rebuilds every route from every slot's current tools. Whether a
    /// name collides depends on all servers, so no slot's routes can be
    /// replaced alone.
    fn update_routes(&self) {
        // Read under the write lock: two servers getting ready at once must
        // not store what they read in the opposite order.
        let mut routes = self.routes.write().unwrap_or_else(|e| e.into_inner());
        let slots = self.slots();
        *routes = routes::Routes::build(&slots, &routes, self.settings.default_prefix);
    }

    fn emit(&self, event: HubEvent) {
        // No receiver is fine: nobody is watching.
        let _ = self.events.send(event);
    }
}

pub(crate) struct HubInner {
    pub(crate) shared: Arc<Shared>,
    cancel: CancellationToken,
}

impl Drop for HubInner {
    fn drop(&mut self) {
        // The supervisors stop and drop their clients, which stops the
        // server processes; `shutdown` is the graceful way.
        self.cancel.cancel();
    }
}

/// Many MCP servers behind one handle. Cheap to clone; the servers stop
/// when the last clone is dropped (gracefully with [`Hub::shutdown`]).
#[derive(Clone)]
pub struct Hub {
    pub(crate) inner: Arc<HubInner>,
}

impl Hub {
    /// Whether `other` is this same hub (a clone of it).
    #[cfg(all(feature = "oauth", feature = "http-server"))]
    pub(crate) fn same(&self, other: &Hub) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let servers: Vec<_> = self
            .inner
            .shared
            .slots()
            .iter()
            .map(|s| (s.config.name.clone(), s.view.borrow().state.name()))
            .collect();
        f.debug_struct("Hub").field("servers", &servers).finish()
    }
}

/// What [`Hub::start`] found.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct StartReport {
    /// Servers that are ready.
    pub ready: Vec<String>,
    /// Servers that are not (failed, needs-auth), with their state; the
    /// hub runs without them.
    pub not_ready: Vec<(String, ServerState)>,
    /// How long the start took.
    pub elapsed: Duration,
}

impl Hub {
    /// A builder with default settings.
    pub fn builder() -> HubBuilder {
        HubBuilder::default()
    }

    /// Connects every enabled server not yet started, in parallel (within
    /// the concurrency limits, each within its startup timeout), and waits
    /// until each is ready or has failed.
    ///
    /// # Errors
    /// [`HubError::RequiredFailed`] when a server marked `required` did not
    /// become ready; the others keep running (call [`Hub::shutdown`] to
    /// stop them).
    ///
    /// # Cancel safety
    /// Dropping the future stops waiting; the servers keep starting.
    pub async fn start(&self) -> Result<StartReport, HubError> {
        let started = Instant::now();
        self.start_credentials_watch();
        let shared = &self.inner.shared;
        let mut waiting = Vec::new();
        // Under the change lock: a server removed or replaced meanwhile is
        // either started here and stopped by that change, or not started.
        let changes = shared.changes.lock().await;
        shared.started.store(true, Ordering::Release);
        for slot in shared.slots() {
            if !slot.config.enabled
                || !slot.config.trust.allows_start()
                || !slot.claim_first_start()
            {
                continue;
            }
            self.run(&slot);
            waiting.push(slot);
        }
        drop(changes);
        let mut report = StartReport::default();
        let mut required_failed = None;
        for slot in waiting {
            let mut rx = slot.view.subscribe();
            let state = rx
                .wait_for(|v| v.state.is_settled())
                .await
                .map(|v| v.state.clone())
                .unwrap_or(ServerState::Stopped);
            if state.is_ready() {
                report.ready.push(slot.config.name.clone());
            } else {
                if slot.config.required && required_failed.is_none() {
                    required_failed = Some(HubError::RequiredFailed {
                        server: slot.config.name.clone(),
                        state: state.clone(),
                    });
                }
                report.not_ready.push((slot.config.name.clone(), state));
            }
        }
        report.elapsed = started.elapsed();
        match required_failed {
            Some(error) => Err(error),
            None => Ok(report),
        }
    }

    /// Starts `slot`'s supervisor unless one runs.
    fn run(&self, slot: &Arc<supervisor::Slot>) {
        let shared = &self.inner.shared;
        if shared.store.is_some() && !shared.writer_started.swap(true, Ordering::AcqRel) {
            shared
                .tasks
                .spawn(write_state(shared.clone(), self.inner.cancel.child_token()));
        }
        if slot.claim_run(shared) {
            let cancel = self.inner.cancel.child_token();
            let task = supervisor::run(shared.clone(), slot.clone(), cancel.clone());
            slot.set_task(cancel, shared.tasks.spawn(task));
        }
    }

    /// Every server, in configuration order, as it is now; before
    /// [`Hub::start`] with the state file's last known state and tools.
    pub fn list(&self) -> Vec<ServerStatus> {
        self.inner
            .shared
            .slots()
            .iter()
            .map(|slot| slot.status())
            .collect()
    }

    /// One server's status.
    ///
    /// # Errors
    /// [`HubError::UnknownServer`].
    pub fn status(&self, server: &str) -> Result<ServerStatus, HubError> {
        Ok(self.slot(server)?.status())
    }

    /// One server's counters.
    ///
    /// # Errors
    /// [`HubError::UnknownServer`].
    pub fn stats(&self, server: &str) -> Result<ServerStats, HubError> {
        Ok(self.slot(server)?.stats.snapshot())
    }

    /// Every offered tool of every server that has a tool list (ready,
    /// reconnecting with its last list, or known from the state file), in
    /// configuration order, filtered by each server's include/exclude
    /// globs, under unique names: [`namespaced`], or for a tool whose
    /// `server__tool` another one (earlier in configuration order) has,
    /// `server__tool_HASH` with [`HubTool::renamed_from`] set. A tool of a
    /// server that failed keeps its name, so others keep theirs. A tool
    /// the tool policy denies is not listed (it keeps its name all the
    /// same: names never depend on the policy).
    pub fn tools(&self) -> Vec<HubTool> {
        let shared = &self.inner.shared;
        let policy = shared.policy.current();
        let routes = self.routes();
        routes
            .iter()
            .filter_map(|route| {
                let slot = &route.slot;
                if self.tool_denied(&policy, &slot.config.name, &route.tool().name) {
                    return None;
                }
                let view = slot.view.borrow();
                view.lists_tools().then(|| HubTool {
                    name: route.name.clone(),
                    server: slot.config.name.clone(),
                    tool: route.tool().clone(),
                    stale: view.stale,
                    renamed_from: route.renamed_from.clone(),
                })
            })
            .collect()
    }

    /// The table of hub-wide tool names, read: every lookup of a tool by
    /// the name it is served under goes through it.
    pub(crate) fn routes(&self) -> std::sync::RwLockReadGuard<'_, routes::Routes> {
        self.inner
            .shared
            .routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The server whose tool the hub-wide `name` is (see [`Hub::tools`]),
    /// without copying any tool list.
    pub fn tool_server(&self, name: &str) -> Option<String> {
        let routes = self.routes();
        routes.get(name).map(|route| route.slot.config.name.clone())
    }

    /// The `execution.taskSupport` of the tool the hub-wide `name` is (see
    /// [`Hub::tools`]), without copying any tool list: `None` for a name
    /// no server lists or a tool that does not say.
    pub fn tool_task_support(&self, name: &str) -> Option<switchboard::types::TaskSupport> {
        let routes = self.routes();
        routes
            .get(name)
            .and_then(|route| route.tool().execution.as_ref()?.task_support.clone())
    }

    /// The hub's events from now on: state and tool-list changes.
    pub fn events(&self) -> HubEvents {
        HubEvents {
            rx: self.inner.shared.events.subscribe(),
        }
    }

    /// Calls a tool by its hub-wide name (see [`Hub::tools`]).
    ///
    /// # Errors
    /// [`HubError::UnknownTool`] for a name no server lists; otherwise as
    /// [`Hub::call`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, HubError> {
        self.call_tool_with(name, arguments, RequestOptions::default())
            .await
    }

    /// [`Hub::call_tool`] with the call's options (see [`Hub::call_with`]).
    ///
    /// # Errors
    /// As [`Hub::call_tool`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: RequestOptions,
    ) -> Result<CallToolResult, HubError> {
        self.call_tool_asking(name, arguments, options, None).await
    }

    /// Calls `server`'s tool `tool`. A call whose connection closes under
    /// it fails with [`HubError::ClosedDuringCall`], unless the tool is
    /// annotated read-only: then it is sent once more after the server
    /// reconnects (within the startup timeout plus the longest backoff).
    /// A tool whose `execution.taskSupport` is `required` is run as a task
    /// and waited for ([`Client::call_tool_and_wait`]).
    ///
    /// # Errors
    /// [`HubError::UnknownServer`]; [`HubError::ToolNotAllowed`] for a tool
    /// the filter excludes; [`HubError::ToolDenied`] for one the tool
    /// policy denies, [`HubError::ToolNotApproved`] for an `ask` refused
    /// (see [`policy`]); [`HubError::Unavailable`] when the server is
    /// not ready; [`HubError::ClosedDuringCall`]; [`HubError::Call`] for
    /// any other failure. A result with `isError: true` is `Ok`.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled`).
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, HubError> {
        self.call_with(server, tool, arguments, RequestOptions::default())
            .await
    }

    /// [`Hub::call`] with the call's options: a timeout (instead of the
    /// server's request timeout; for a task, each of its requests), a
    /// progress callback (the server's `notifications/progress` for this
    /// call; for a plain call they also push its deadline out, up to the
    /// client's maximum request time), and `_meta` entries. With
    /// the `otel` feature the hub adds `traceparent`/`tracestate` for a
    /// 2026-07-28 server, unless the caller's `_meta` has them: the
    /// caller's entries win. A read-only call sent again after a
    /// reconnection is sent with the same options.
    ///
    /// # Errors
    /// As [`Hub::call`]; a timeout is [`HubError::Call`] with
    /// [`HubError::is_timeout`] true.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled`).
    pub async fn call_with(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
        options: RequestOptions,
    ) -> Result<CallToolResult, HubError> {
        self.call_asking(server, tool, arguments, options, None)
            .await
    }

    async fn call_slot(
        &self,
        slot: &Arc<supervisor::Slot>,
        tool: &str,
        arguments: Option<JsonObject>,
        options: RequestOptions,
        approver: Option<&Arc<dyn ToolApprover>>,
        round: Option<&CallRound>,
    ) -> Result<RequestOutcome<CallToolResult>, HubError> {
        let server = slot.config.name.as_str();
        if !slot.config.tools.allows(tool) {
            return Err(HubError::ToolNotAllowed {
                server: server.into(),
                tool: tool.into(),
            });
        }
        self.check_tool(slot, tool, arguments.as_ref(), approver)
            .await?;
        let span = tracing::info_span!(
            "mcp.request",
            server,
            method = "tools/call",
            tool,
            latency_ms = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        async {
            let started = Instant::now();
            let _in_flight = InFlight::new(&slot.stats);
            let result = self
                .call_with_replay(slot, tool, arguments, options, round)
                .await;
            let latency = started.elapsed();
            slot.stats.latency.record(latency);
            slot.stats.latency_sum_us.fetch_add(
                u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
            slot.stats.calls.fetch_add(1, Ordering::Relaxed);
            let outcome = match &result {
                Ok(RequestOutcome::Complete(r)) if r.is_error == Some(true) => "tool_error",
                Ok(_) => "ok",
                Err(e) => {
                    slot.stats.errors.fetch_add(1, Ordering::Relaxed);
                    if e.is_timeout() {
                        slot.stats.timeouts.fetch_add(1, Ordering::Relaxed);
                        "timeout"
                    } else if e.is_closed_during_call() {
                        "closed"
                    } else {
                        "error"
                    }
                }
            };
            let span = tracing::Span::current();
            span.record("latency_ms", latency.as_secs_f64() * 1000.0);
            span.record("outcome", outcome);
            tracing::debug!(outcome, "tool call finished");
            result
        }
        .instrument(span)
        .await
    }

    async fn call_with_replay(
        &self,
        slot: &supervisor::Slot,
        tool: &str,
        arguments: Option<JsonObject>,
        options: RequestOptions,
        round: Option<&CallRound>,
    ) -> Result<RequestOutcome<CallToolResult>, HubError> {
        let server = slot.config.name.as_str();
        let (client, generation, read_only) = slot.ready_client(tool)?;
        // Kept for a second sending only when there can be one.
        let replay = read_only.then(|| (arguments.clone(), options.clone()));
        let first = send_call(&client, tool, arguments, options, round).await;
        drop(client);
        let error = match first {
            Ok(result) => return Ok(result),
            Err(e) if !closed_under_call(&e) => {
                return Err(HubError::Call {
                    server: server.into(),
                    tool: tool.into(),
                    source: Box::new(e),
                });
            }
            Err(e) => e,
        };
        let closed = |source| HubError::ClosedDuringCall {
            server: server.into(),
            tool: tool.into(),
            source: Box::new(source),
        };
        let Some((arguments, options)) = replay else {
            return Err(closed(error));
        };
        let settings = &self.inner.shared.settings;
        let wait = slot.startup_timeout(settings) + settings.backoff.max;
        let Some(client) = slot.next_client(generation, wait).await else {
            return Err(closed(error));
        };
        tracing::debug!("read-only tool sent again after the reconnection");
        send_call(&client, tool, arguments, options, round)
            .await
            .map_err(|e| match closed_under_call(&e) {
                true => closed(e),
                false => HubError::Call {
                    server: server.into(),
                    tool: tool.into(),
                    source: Box::new(e),
                },
            })
    }

    /// Closes every server gracefully (stdin closed, then SIGTERM, then
    /// SIGKILL for a process; the session ended for HTTP) and waits until
    /// every task of the hub has ended.
    ///
    /// # Cancel safety
    /// Dropping the future stops waiting; the servers are still told to
    /// stop.
    pub async fn shutdown(&self) {
        self.inner.cancel.cancel();
        self.inner.shared.tasks.close();
        self.inner.shared.tasks.wait().await;
        // What the supervisors recorded while stopping.
        if let Some(store) = &self.inner.shared.store {
            store.flush();
        }
    }

    fn slot(&self, server: &str) -> Result<Arc<supervisor::Slot>, HubError> {
        self.inner
            .shared
            .find(server)
            .ok_or_else(|| HubError::UnknownServer {
                server: server.into(),
            })
    }
}

/// Writes the state file at most every 100 ms while entries change, and
/// once more when the hub stops.
async fn write_state(shared: Arc<Shared>, cancel: CancellationToken) {
    let Some(store) = shared.store.as_ref() else {
        return;
    };
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            () = store.changed() => {}
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        store.flush();
    }
    store.flush();
}

/// One round of a call to a 2026-07-28 server, for a caller that answers
/// the server's `input_required` rounds itself (the gateway, for a host
/// of that revision): the host's answers to the previous round and the
/// server's `requestState`, echoed ([`Hub::call_tool_round`]).
#[derive(Clone, Debug, Default)]
pub struct CallRound {
    /// Answers to the previous round's `inputRequests`, by their keys.
    pub input_responses: Option<switchboard::types::InputResponses>,
    /// The server's `requestState` of the previous round.
    pub request_state: Option<String>,
}

/// Sends one `tools/call` with the caller's `options`, and the caller's
/// trace context for a server that takes it (see [`request_options`]).
/// With a `round`, a 2026-07-28 server's `input_required` result is
/// handed back rather than answered (a session-era server's call, or a
/// call of a tool that requires a task, is still answered whole).
async fn send_call(
    client: &Client,
    tool: &str,
    arguments: Option<JsonObject>,
    options: RequestOptions,
    round: Option<&CallRound>,
) -> Result<RequestOutcome<CallToolResult>, ClientError> {
    let mut params = CallToolRequestParams {
        name: tool.into(),
        arguments,
        ..Default::default()
    };
    let options = request_options(client, options);
    // A 2026-07-28 server's round goes as it is: answered with its own
    // `input_required` round, or — for a caller that takes tasks (the
    // gateway for such a host) — with its own task handle.
    if let Some(round) = round
        && client.era() == switchboard::types::Era::Modern
        && (!task_required(client, tool) || takes_tasks(&options))
    {
        params.input_responses = round.input_responses.clone();
        params.request_state = round.request_state.clone();
        return client.call_tool_once(&params, options).await;
    }
    // A tool whose `taskSupport` is `required` runs as a task, waited for;
    // any other is a plain call.
    let options = TaskOptions::new().prefer_task(false).request(options);
    client
        .call_tool_and_wait(&params, options)
        .await
        .map(RequestOutcome::Complete)
}

/// The caller's `options` for a call from the hub. With the `otel`
/// feature, the W3C trace context of the current span (`mcp.request`, a
/// child of the caller's) goes in `_meta` as `traceparent`/`tracestate`
/// where the caller's `_meta` has no such entry: keys that only the
/// 2026-07-28 revision reserves, so only for a server of the stateless era.
fn request_options(client: &Client, options: RequestOptions) -> RequestOptions {
    #[cfg(feature = "otel")]
    if client.era() == switchboard::types::version::Era::Modern {
        let mut options = options;
        let ours = otel::with_trace_context(RequestOptions::default());
        for (key, value) in ours.meta {
            options.meta.entry(key).or_insert(value);
        }
        return options;
    }
    let _ = client;
    options
}

/// Whether the caller's per-request client capabilities (`_meta`) take
/// the tasks extension.
fn takes_tasks(options: &RequestOptions) -> bool {
    options
        .meta
        .get(switchboard::types::meta::META_CLIENT_CAPABILITIES)
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(switchboard::types::tasks::TASKS_EXTENSION))
        .is_some()
}

/// Whether `client`'s `tool` is known to run only as a task.
fn task_required(client: &Client, tool: &str) -> bool {
    client.tools().is_some_and(|tools| {
        tools.iter().any(|t| {
            t.name == tool
                && t.execution.as_ref().and_then(|e| e.task_support.as_ref())
                    == Some(&switchboard::types::TaskSupport::Required)
        })
    })
}

/// The connection ended with the call in flight.
fn closed_under_call(error: &ClientError) -> bool {
    matches!(
        error,
        ClientError::Disconnected { .. } | ClientError::ResponseLost { .. }
    )
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Hub>();
    is::<watch::Sender<View>>();
}
