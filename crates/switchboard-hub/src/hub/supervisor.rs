//! One task per server: connect, watch, reconnect, stop.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use switchboard::transport::http::{
    HttpConfig, HttpTransport, HttpVerdict, remember_verdict, remembered_verdicts,
};
use switchboard::transport::stdio::StdioConfig;
use switchboard::transport::{Connector, ServerEnvironment};
use switchboard::types::{Era, Tool};
use switchboard::{Client, Error as ClientError, Event, EventStream, ListKind};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::stats::Stats;
use super::store::{Store, Stored};
use super::subscriptions;
use super::{Failure, HubError, HubEvent, ServerState, ServerStatus, Settings, Shared};
use crate::config::Trust;
use crate::config::{HttpKind, ServerConfig, TransportConfig};

/// One configured server: its settings, what is known about it now, and
/// its counters.
pub(crate) struct Slot {
    pub(crate) config: ServerConfig,
    pub(crate) view: watch::Sender<View>,
    pub(crate) stats: Stats,
    started: AtomicBool,
    /// A supervisor runs for it.
    running: AtomicBool,
    /// The last supervisor started: how to stop it, and its task.
    task: Mutex<Option<(CancellationToken, JoinHandle<()>)>>,
    /// Cancelled when the current connection ends: what lives as long as
    /// it does (listens) hangs under it.
    connection: Mutex<CancellationToken>,
    /// The resource subscriptions asked through the hub, renewed on every
    /// connection; a stateless-era listen's stop, `None` for the session
    /// era.
    subscriptions: Mutex<BTreeMap<String, Option<CancellationToken>>>,
    /// When a call for a tool no server lists last connected it again
    /// from `needs-auth` (see `Hub::routed_settled`).
    pub(crate) rechecked: Mutex<Option<std::time::Instant>>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("server", &self.config.name)
            .field("state", &self.view.borrow().state.name())
            .finish_non_exhaustive()
    }
}

/// A server as it is now. Cloned out of the watch for readers; the client
/// handle inside is an `Arc`.
#[derive(Clone)]
pub(crate) struct View {
    pub(crate) state: ServerState,
    /// The live connection, while ready.
    pub(crate) client: Option<Client>,
    /// Bumped on every successful connection.
    pub(crate) generation: u64,
    pub(crate) tools: Arc<[Tool]>,
    pub(crate) stale: bool,
    pub(crate) transport: Option<String>,
    pub(crate) era: Option<Era>,
    pub(crate) protocol_version: Option<String>,
    pub(crate) last_known: Option<String>,
}

impl View {
    /// Whether this server's tools belong in the aggregated list: ready,
    /// reconnecting (stale), or not started yet with a remembered list.
    pub(crate) fn lists_tools(&self) -> bool {
        matches!(
            self.state,
            ServerState::Ready
                | ServerState::Reconnecting { .. }
                | ServerState::Pending
                | ServerState::Connecting
        )
    }
}

impl Slot {
    /// A server as `store`'s state file last knew it, if the file has an
    /// entry for this very configuration.
    pub(crate) fn new(config: ServerConfig, store: Option<&Store>) -> Arc<Self> {
        let stored = store.and_then(|s| s.get(&config.name, &config.state_signature()));
        // What an unapproved server left behind (approved once, then
        // revoked or changed) is not shown as its tools.
        let stored = stored
            .filter(|_| config.trust.allows_start())
            .unwrap_or_default();
        let state = match (&config.trust, config.enabled) {
            (_, false) => ServerState::Disabled,
            (Trust::NeedsApproval { changed }, true) => {
                ServerState::NeedsApproval { changed: *changed }
            }
            _ => ServerState::Pending,
        };
        let view = View {
            state,
            client: None,
            generation: 0,
            tools: stored.tools,
            stale: true,
            transport: stored.transport,
            era: stored.era,
            protocol_version: stored.protocol_version,
            last_known: (!stored.state.is_empty()).then_some(stored.state),
        };
        Arc::new(Self {
            config,
            view: watch::Sender::new(view),
            stats: Stats::new(),
            started: AtomicBool::new(false),
            running: AtomicBool::new(false),
            task: Mutex::new(None),
            connection: Mutex::new(CancellationToken::new()),
            subscriptions: Mutex::new(BTreeMap::new()),
            rechecked: Mutex::new(None),
        })
    }

    /// The current connection's token (cancelled when it ends).
    pub(crate) fn connection(&self) -> CancellationToken {
        self.connection
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The resource subscriptions asked through the hub.
    pub(crate) fn subscriptions(
        &self,
    ) -> MutexGuard<'_, BTreeMap<String, Option<CancellationToken>>> {
        self.subscriptions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the supervisor just started for this server.
    pub(crate) fn set_task(&self, cancel: CancellationToken, task: JoinHandle<()>) {
        *self.task.lock().unwrap_or_else(|e| e.into_inner()) = Some((cancel, task));
    }

    /// Stops this server's supervisor, if one runs (its connection is
    /// closed gracefully), and waits until it has ended.
    pub(crate) async fn stop(&self) {
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((cancel, task)) = task {
            cancel.cancel();
            // A panic in the supervisor was already reported by the
            // runtime; the server is stopped either way.
            let _ = task.await;
        }
    }

    /// True the first time only (for [`Hub::start`](super::Hub::start)).
    pub(crate) fn claim_first_start(&self) -> bool {
        !self.started.swap(true, Ordering::AcqRel)
    }

    /// Marks the server `connecting` and returns true when no supervisor
    /// runs for it: the caller starts one.
    pub(crate) fn claim_run(&self, shared: &Shared) -> bool {
        if self.running.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.set_state(shared, ServerState::Connecting);
        true
    }

    pub(crate) fn startup_timeout(&self, settings: &Settings) -> Duration {
        self.config
            .startup_timeout
            .unwrap_or(settings.startup_timeout)
    }

    pub(crate) fn status(&self) -> ServerStatus {
        let view = self.view.borrow();
        let live = view
            .client
            .as_ref()
            .filter(|_| view.state == ServerState::Ready)
            .map(Client::session);
        ServerStatus {
            name: self.config.name.clone(),
            state: view.state.clone(),
            required: self.config.required,
            transport: view.transport.clone(),
            era: view.era,
            protocol_version: view.protocol_version.clone(),
            tools: view.tools.clone(),
            tools_stale: view.stale,
            last_known_state: view.last_known.clone(),
            stats: self.stats.snapshot(),
            instructions: live.and_then(|s| s.instructions.clone()),
            capabilities: live.map(|s| s.capabilities.clone()),
            server_info: live.and_then(|s| s.server_info.clone()),
        }
    }

    /// The live client, its generation, and whether `tool` is annotated
    /// read-only.
    pub(crate) fn ready_client(&self, tool: &str) -> Result<(Client, u64, bool), HubError> {
        let view = self.view.borrow();
        match (&view.state, &view.client) {
            (ServerState::Ready, Some(client)) => {
                let read_only = view
                    .tools
                    .iter()
                    .find(|t| t.name == tool)
                    .and_then(|t| t.annotations.as_ref())
                    .and_then(|a| a.read_only_hint)
                    == Some(true);
                Ok((client.clone(), view.generation, read_only))
            }
            (state, _) => Err(HubError::Unavailable {
                server: self.config.name.clone(),
                state: state.clone(),
            }),
        }
    }

    /// The client of a connection newer than `generation`, once there is
    /// one; `None` if the server gives up or `wait` passes first.
    pub(crate) async fn next_client(&self, generation: u64, wait: Duration) -> Option<Client> {
        let mut rx = self.view.subscribe();
        let settled = rx.wait_for(|v| {
            (v.state.is_ready() && v.generation > generation)
                || matches!(
                    v.state,
                    ServerState::Failed(_) | ServerState::NeedsAuth { .. } | ServerState::Stopped
                )
        });
        match tokio::time::timeout(wait, settled).await {
            Ok(Ok(view)) if view.state.is_ready() => view.client.clone(),
            _ => None,
        }
    }

    pub(crate) fn set_state(&self, shared: &Shared, state: ServerState) {
        let from = self.view.borrow().state.name();
        {
            let _span = tracing::info_span!("mcp.state", from, to = state.name()).entered();
            match &state {
                ServerState::Failed(_) | ServerState::Reconnecting { .. } => {
                    tracing::warn!(state = %state, "server state changed");
                }
                _ => tracing::info!(state = %state, "server state changed"),
            }
        }
        if matches!(
            state,
            ServerState::Failed(_) | ServerState::NeedsAuth { .. }
        ) {
            self.persist(shared, &state);
        }
        self.show(shared, state);
    }

    /// Makes `state` the server's, and tells the hub's listeners, at once:
    /// whoever sees the new state (`Hub::start` returning, a waiting call)
    /// and starts listening only then does not hear of it again later.
    fn show(&self, shared: &Shared, state: ServerState) {
        self.view.send_modify(|v| {
            v.state = state.clone();
            shared.emit(HubEvent::StateChanged {
                server: self.config.name.clone(),
                state,
            });
        });
    }

    fn set_ready(&self, shared: &Shared, client: Client, tools: Arc<[Tool]>) {
        let session = client.session().clone();
        let count = tools.len();
        // Tools and routes first, the state last: whoever sees `ready`
        // (`Hub::start` returning, a waiting call) can route to them.
        self.view.send_modify(|v| {
            v.client = Some(client);
            v.generation += 1;
            v.tools = tools;
            v.stale = false;
            v.transport = Some(session.transport.to_owned());
            v.era = Some(session.era);
            v.protocol_version = Some(session.protocol_version.as_str().to_owned());
        });
        shared.update_routes();
        shared.emit(HubEvent::ToolsChanged {
            server: self.config.name.clone(),
            count,
            stale: false,
        });
        // Recorded before anyone can see `ready`, so a shutdown right after
        // `Hub::start` still writes it.
        self.persist(shared, &ServerState::Ready);
        if let (
            Some(verdicts),
            TransportConfig::Http {
                url,
                kind: HttpKind::Auto,
                ..
            },
        ) = (&shared.settings.verdicts, &self.config.transport)
        {
            let transport = match session.transport {
                "sse" => HttpTransport::Sse,
                _ => HttpTransport::StreamableHttp,
            };
            verdicts.write(
                &shared.tasks,
                url,
                self.config.shown_url().unwrap_or_default().to_owned(),
                HttpVerdict::new(session.era, transport),
            );
        }
        tracing::info!(
            state = "ready",
            transport = session.transport,
            era = %session.era,
            tools = count,
            negotiation_ms = session.negotiation_time.as_secs_f64() * 1000.0,
            "server state changed"
        );
        self.show(shared, ServerState::Ready);
    }

    fn set_tools(&self, shared: &Shared, tools: Option<Arc<[Tool]>>) {
        let mut count = 0;
        self.view.send_modify(|v| {
            match tools {
                Some(tools) => {
                    v.tools = tools;
                    v.stale = false;
                }
                None => v.stale = true,
            }
            count = v.tools.len();
        });
        let stale = self.view.borrow().stale;
        shared.update_routes();
        if !stale {
            let state = self.view.borrow().state.clone();
            self.persist(shared, &state);
        }
        shared.emit(HubEvent::ToolsChanged {
            server: self.config.name.clone(),
            count,
            stale,
        });
    }

    /// Records the server in the state file as being in `state`.
    fn persist(&self, shared: &Shared, state: &ServerState) {
        let Some(store) = &shared.store else { return };
        let entry = {
            let view = self.view.borrow();
            Stored {
                signature: self.config.state_signature(),
                state: state.name().to_owned(),
                transport: view.transport.clone(),
                era: view.era,
                protocol_version: view.protocol_version.clone(),
                tools: view.tools.clone(),
            }
        };
        store.put(&self.config.name, entry);
    }
}

fn is_remote(transport: &TransportConfig) -> bool {
    !matches!(transport, TransportConfig::Stdio { .. })
}

/// The client's connector for a server's transport.
async fn connector(shared: &Shared, slot: &Slot) -> Result<Arc<dyn Connector>, Failure> {
    let config = &slot.config;
    match &config.transport {
        TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut stdio = StdioConfig::new(command).args(args).envs(env.iter());
            if let Some(dir) = cwd {
                stdio = stdio.cwd(dir);
            }
            if let Some(bytes) = shared.settings.max_message_size {
                stdio = stdio.max_message_size(bytes);
            }
            Ok(Arc::new(stdio))
        }
        TransportConfig::Http { url, headers, kind } => {
            #[cfg(feature = "http-server")]
            if shared.served.load(Ordering::Acquire)
                && super::itself::is_itself(url, &shared.instance).await
            {
                return Err(Failure::message(super::itself::ITSELF));
            }
            // The state file's verdict stands in for detection, as one
            // this process made would; a wrong one is detected afresh.
            let known = {
                let view = slot.view.borrow();
                view.era.zip(view.transport.clone())
            };
            if let (HttpKind::Auto, Some((era, transport))) = (kind, known)
                && remembered_verdicts().iter().all(|(u, _)| u != url)
            {
                let transport = match transport.as_str() {
                    "sse" => HttpTransport::Sse,
                    _ => HttpTransport::StreamableHttp,
                };
                remember_verdict(url, HttpVerdict::new(era, transport));
            }
            // Else the one another process sharing the verdict store found.
            if let (HttpKind::Auto, Some(shared_verdicts)) = (kind, &shared.settings.verdicts)
                && remembered_verdicts().iter().all(|(u, _)| u != url)
                && let Some(verdict) = shared_verdicts
                    .read(url, config.shown_url().unwrap_or_default())
                    .await
            {
                remember_verdict(url, verdict);
            }
            let mut http = HttpConfig::new(url.clone()).transport(match kind {
                HttpKind::Streamable => HttpTransport::StreamableHttp,
                HttpKind::Sse => HttpTransport::Sse,
                _ => HttpTransport::Auto,
            });
            // Errors name the URL as written: an expanded secret in its
            // path never reaches a message, a listing or the state file.
            if let Some(shown) = config.shown_url() {
                http = http.display_url(shown);
            }
            // A helper's headers win over written ones of the same name.
            let given = match &config.headers_helper {
                Some(helper) => super::headers_helper::run(helper, config, url).await?,
                None => Vec::new(),
            };
            for (name, value) in headers {
                if !given.iter().any(|(g, _)| g.eq_ignore_ascii_case(name)) {
                    http = http.header(name.clone(), value.clone());
                }
            }
            for (name, value) in given {
                http = http.header(name, value);
            }
            if let Some(provider) = shared.settings.auth.as_ref().and_then(|f| f(config)) {
                http = http.auth(provider);
            }
            if let Some(bytes) = shared.settings.max_message_size {
                http = http.max_body_size(bytes).max_event_size(bytes);
            }
            Ok(Arc::new(http))
        }
        TransportConfig::WebSocket { .. } => Err(Failure::message(
            "WebSocket servers need the switchboard library's `websocket` feature, which this hub is built without",
        )),
    }
}

enum Attempt {
    NeedsAuth(Option<String>),
    Failed(Failure),
}

/// One connection attempt: a concurrency permit, then connect and list the
/// tools within the startup timeout.
async fn connect_once(
    shared: &Shared,
    slot: &Slot,
) -> Result<(Client, EventStream, Arc<[Tool]>), Attempt> {
    let config = &slot.config;
    let limit = if is_remote(&config.transport) {
        &shared.remote
    } else {
        &shared.local
    };
    let _permit = limit
        .acquire()
        .await
        .map_err(|_| Attempt::Failed(Failure::message("the hub is shutting down")))?;
    let connector = connector(shared, slot).await.map_err(Attempt::Failed)?;
    let era = slot.view.borrow().era;
    let mut builder = Client::builder()
        .name(config.name.clone())
        .era_hint(era)
        .first_request_id(random_first_id());
    if let Some(timeout) = config.request_timeout {
        builder = builder.request_timeout(timeout);
    }
    if let Some(roots) = &shared.settings.roots {
        builder = builder.roots(roots.clone());
    }
    if let Some(customize) = &shared.settings.customize {
        builder = customize(config, builder);
    }
    let timeout = slot.startup_timeout(&shared.settings);
    let environment = connector.environment();
    let attempt = async {
        let client = builder.connect_arc(connector).await?;
        // Subscribed before anything else is asked, so what the server
        // says from here on (a log line while listing) reaches the hub's
        // events.
        let events = client.events();
        let tools = if client.capabilities().tools.is_some() {
            client.list_tools_shared().await?
        } else {
            Arc::from([])
        };
        Ok::<_, ClientError>((client, events, tools))
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok(connected)) => Ok(connected),
        Ok(Err(e)) if e.is_auth_required() => {
            Err(Attempt::NeedsAuth(e.www_authenticate().map(str::to_owned)))
        }
        Ok(Err(e)) => {
            let mut failure = Failure::from_error(&e);
            if matches!(e.start_environment(), Some(ServerEnvironment::Only(_))) {
                failure.message.push_str(CONFIGURE_ENV);
            }
            Err(Attempt::Failed(failure))
        }
        Err(_) => Err(Attempt::Failed(Failure::message(not_started(
            timeout,
            environment.as_ref(),
        )))),
    }
}

/// Where a configured server gets more environment variables.
const CONFIGURE_ENV: &str = ": set any other it needs under `env` in its configuration";

/// A start-up timeout, with the environment a started process got (names
/// only) and where to give it more: one missing a proxy or a token often
/// just hangs.
fn not_started(timeout: Duration, environment: Option<&ServerEnvironment>) -> String {
    let mut message =
        format!("did not start within {timeout:?} (raise its startup timeout if it needs longer)");
    match environment {
        Some(ServerEnvironment::Whole) => {
            message.push_str("; it was started with the whole environment");
        }
        Some(environment) => {
            message.push_str(&format!("; it was started with {environment}"));
            message.push_str(CONFIGURE_ENV);
        }
        None => {}
    }
    message
}

enum Ended {
    Cancelled,
    Closed(Failure),
}

/// Watches a ready connection: tool list changes, the close, keepalive.
///
/// A tool list change starts a re-list unless one is under way; changes
/// heard while one is (any number of them) make exactly one more, once it
/// is over. Before a re-list starts, every event already queued is taken
/// in: whatever change it tells of was made before the listing, so the
/// listing covers it. A backend that floods
/// `notifications/tools/list_changed` thus costs two or three listings,
/// not one per notification, and its other events (its close above all)
/// are heard while a listing runs.
async fn serve(
    shared: &Shared,
    slot: &Slot,
    client: &Client,
    mut events: EventStream,
    cancel: &CancellationToken,
) -> Ended {
    let keepalive = shared
        .settings
        .keepalive
        .filter(|_| client.era() == Era::Legacy);
    let mut ticker = keepalive.map(|every| {
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker
    });
    let mut relist: Option<Relist<'_>> = None;
    let mut again = false;
    loop {
        let tick = async {
            match ticker.as_mut() {
                Some(ticker) => {
                    ticker.tick().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Ended::Cancelled,
            listed = async { relist.as_mut().expect("a listing runs").await }, if relist.is_some() => {
                take_tools(shared, slot, listed);
                relist = None;
                if std::mem::take(&mut again) {
                    if let Some(ended) = take_queued(shared, slot, client, &mut events) {
                        return ended;
                    }
                    relist = Some(refresh_tools(shared, slot, client));
                }
            }
            event = events.next() => match hear(shared, slot, client, event) {
                Heard::ToolsChanged if relist.is_some() => again = true,
                Heard::ToolsChanged => {
                    if let Some(ended) = take_queued(shared, slot, client, &mut events) {
                        return ended;
                    }
                    relist = Some(refresh_tools(shared, slot, client));
                }
                Heard::Other => {}
                Heard::End(ended) => return ended,
            },
            () = tick => {
                let every = keepalive.unwrap_or_default();
                match tokio::time::timeout(every, client.ping()).await {
                    Ok(Ok(())) => tracing::trace!("keepalive ping answered"),
                    Ok(Err(e)) => return Ended::Closed(Failure::from_error(&e)),
                    Err(_) => {
                        return Ended::Closed(Failure::message(format!(
                            "missed a keepalive ping (no answer within {every:?})"
                        )));
                    }
                }
            }
        }
    }
}

/// What one event of a ready connection means to its supervisor.
enum Heard {
    /// The tool list changed, or may have (events were lost).
    ToolsChanged,
    /// Anything else: passed on as a hub event.
    Other,
    /// The connection is over.
    End(Ended),
}

fn hear(shared: &Shared, slot: &Slot, client: &Client, event: Option<Event>) -> Heard {
    match event {
        Some(Event::ListChanged(ListKind::Tools) | Event::Lagged(_)) => Heard::ToolsChanged,
        Some(Event::Closed(reason)) => {
            Heard::End(Ended::Closed(Failure::from_transport(reason.as_ref())))
        }
        None => Heard::End(Ended::Closed(Failure::from_transport(
            client.connection_error().as_ref(),
        ))),
        Some(event) => {
            shared.emit(HubEvent::Server {
                server: slot.config.name.clone(),
                event,
            });
            Heard::Other
        }
    }
}

/// Most queued events taken in at once before a re-list (a backend that
/// never stops talking does not hold its listing back for ever).
const MOST_QUEUED: usize = 1 << 16;

/// Takes in the events already queued, without waiting for more: tool
/// list changes among them are covered by the listing about to start.
/// The end of the connection, if it is among them.
fn take_queued(
    shared: &Shared,
    slot: &Slot,
    client: &Client,
    events: &mut EventStream,
) -> Option<Ended> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..MOST_QUEUED {
        // Out of the task's budget: a budget spent would make a queued
        // event look like none.
        let next = std::pin::pin!(tokio::task::unconstrained(events.next()));
        let std::task::Poll::Ready(event) = next.poll(&mut cx) else {
            return None;
        };
        if let Heard::End(ended) = hear(shared, slot, client, event) {
            return Some(ended);
        }
    }
    None
}

/// A re-list of a server's tools under way: the new list, or why not.
type Relist<'a> = std::pin::Pin<Box<dyn Future<Output = Result<Arc<[Tool]>, String>> + Send + 'a>>;

fn refresh_tools<'a>(shared: &Shared, slot: &Slot, client: &'a Client) -> Relist<'a> {
    let timeout = slot.startup_timeout(&shared.settings);
    Box::pin(async move {
        match tokio::time::timeout(timeout, client.list_tools_shared()).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(error)) => Err(format!("could not refresh the tool list: {error}")),
            Err(_) => Err(format!("the tool list refresh timed out after {timeout:?}")),
        }
    })
}

/// What a re-list found, taken in.
fn take_tools(shared: &Shared, slot: &Slot, listed: Result<Arc<[Tool]>, String>) {
    match listed {
        Ok(tools) => slot.set_tools(shared, Some(tools)),
        Err(why) => tracing::warn!("{why}"),
    }
}

/// The supervisor of one server, to run on the hub's task tracker.
pub(crate) fn run(
    shared: Arc<Shared>,
    slot: Arc<Slot>,
    cancel: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let span = tracing::info_span!("mcp.server", server = %slot.config.name);
    async move {
        let end = supervise(&shared, &slot, &cancel).await;
        // Not running from here on, so whoever sees the final state may
        // start the server again.
        slot.running.store(false, Ordering::Release);
        slot.set_state(&shared, end);
    }
    .instrument(span)
}

async fn supervise(shared: &Shared, slot: &Slot, cancel: &CancellationToken) -> ServerState {
    let backoff = shared.settings.backoff;
    let mut ever_ready = false;
    let mut attempt = 0u32;
    let mut last_failure: Failure;
    loop {
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            outcome = connect_once(shared, slot) => outcome,
        };
        match outcome {
            Ok((client, events, tools)) => {
                if ever_ready {
                    slot.stats.reconnects.fetch_add(1, Ordering::Relaxed);
                }
                ever_ready = true;
                attempt = 0;
                let connection = cancel.child_token();
                *slot.connection.lock().unwrap_or_else(|e| e.into_inner()) = connection.clone();
                // Renewed before anyone sees `ready`: a subscription asked
                // after that is not renewed twice.
                subscriptions::restore(shared, slot, &client).await;
                slot.set_ready(shared, client.clone(), tools);
                let ended = serve(shared, slot, &client, events, cancel).await;
                connection.cancel();
                slot.view.send_modify(|v| v.client = None);
                match ended {
                    Ended::Cancelled => {
                        client.close().await;
                        break;
                    }
                    Ended::Closed(failure) => {
                        tracing::warn!(reason = %failure, "server closed unexpectedly");
                        // Reaps the process, or stops one that missed its
                        // pings (calls still on it fail at once); the
                        // reconnection need not wait for its grace periods.
                        shared.tasks.spawn(async move { client.close().await });
                        slot.set_tools(shared, None);
                        last_failure = failure;
                    }
                }
            }
            Err(Attempt::NeedsAuth(www_authenticate)) => {
                return ServerState::NeedsAuth { www_authenticate };
            }
            Err(Attempt::Failed(failure)) => {
                if !ever_ready {
                    return ServerState::Failed(failure);
                }
                tracing::warn!(attempt, reason = %failure, "reconnection failed");
                last_failure = failure;
            }
        }
        attempt += 1;
        if attempt > backoff.attempts {
            let mut failure = last_failure.clone();
            failure.message = format!(
                "gave up reconnecting after {} attempts: {}",
                backoff.attempts, failure.message
            );
            return ServerState::Failed(failure);
        }
        slot.set_state(
            shared,
            ServerState::Reconnecting {
                attempt,
                reason: last_failure.clone(),
            },
        );
        let delay = backoff.delay(attempt);
        tracing::debug!(?delay, attempt, "reconnecting after a delay");
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            () = tokio::time::sleep(delay) => {}
        }
    }
    ServerState::Stopped
}

/// Where a connection's request ids start: at random, below 2^40 (an
/// exact JSON number), so that a replica retrying another's 2026-07-28
/// round sends the backend an id of its own, never the initial request's.
fn random_first_id() -> i64 {
    let mut bytes = [0u8; 8];
    let _ = aws_lc_rs::rand::fill(&mut bytes);
    1 + (u64::from_le_bytes(bytes) % (1 << 40)) as i64
}
