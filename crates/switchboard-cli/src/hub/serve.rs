//! `switchboard serve`: the configured servers (or the one after `--` or
//! `--url`) as one MCP server. The hub is built here from the config
//! files, with their trust, policy and reloads; the gateway over it
//! (`switchboard_hub::gateway`) serves it on stdio, on HTTP (with a
//! graceful stop on the first signal) or on the background session's
//! socket.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use switchboard::transport::TransportError;
use switchboard::types::Implementation;
use switchboard_hub::config::{LoadedConfig, OAuthSettings, SkipReason};
use switchboard_hub::hub::{Authenticator, BackendAsks, Prefix};
use switchboard_hub::{Hub, HubServer, ServerConfig, ServerState, TransportConfig};

use super::{DEFAULT_STARTUP, builder, hub_failure, prepare_asking};
use crate::configure::{Context, skip_reason};
use crate::lifecycle::Servers;
use crate::{failure::Failure, failure::exit, login};

/// What `serve` was told besides the config.
pub(crate) struct ServeSettings {
    /// How long the first requests wait for the servers' start.
    pub(crate) wait_ready: Duration,
    /// Over HTTP instead of stdio: the listener's settings.
    pub(crate) http: Option<crate::listen::Listener>,
    /// On the background session's Unix socket instead of stdio.
    pub(crate) session: Option<crate::session::Daemon>,
    /// Also a console over the gateway (`--console`).
    pub(crate) console: bool,
    /// Where tool calls are recorded.
    pub(crate) audit: Option<switchboard_hub::hub::audit::AuditLog>,
    /// The host's tool budget (tool-search mode past it).
    pub(crate) max_tools: Option<usize>,
    /// The largest message from a server.
    pub(crate) max_message_size: Option<usize>,
    /// Which servers are served.
    pub(crate) fronted: crate::fronted::Fronted,
    /// The state replicas share (`--state`): with hosts as users, each
    /// user's backend logins.
    pub(crate) state: Option<switchboard_postgres::PgState>,
    /// The tool policy rules every replica enforces (with `--state`).
    pub(crate) shared_policy: Option<crate::state::SharedPolicy>,
    /// The servers every replica serves besides its files (with `--state`).
    pub(crate) shared_servers: Option<crate::state::SharedServers>,
}

/// How long `serve --http` stopping on a signal lets the calls in
/// progress run to their answers (a second signal stops at once).
/// What replicas' shared session key derives the key of the gateway's
/// sealed 2026-07-28 rounds for.
pub(super) const ROUNDS: &str = "switchboard gateway rounds";

pub(super) const DRAIN_GRACE: Duration = Duration::from_secs(30);

/// `serve`: every configured server's tools as one MCP server on
/// stdin/stdout until the host closes stdin (or on HTTP, or on the
/// session's socket). Servers start in the background; nothing is asked
/// on the terminal (stdin is the host's): servers waiting for approval or
/// for an `${input:…}` are reported on stderr and not started.
pub(crate) async fn serve(
    context: &Context,
    credentials: Option<&Path>,
    settings: ServeSettings,
    servers: &Servers,
) -> Result<u8, Failure> {
    if let Some(ancestor) = serving_ancestor() {
        eprintln!(
            "error: `switchboard serve` was started, directly or through a wrapper, by another \
             `switchboard serve` (pid {ancestor}): a configuration lists the gateway as one of its \
             own servers. Not serving, so that it does not start itself over and over; remove \
             that entry (`switchboard list` shows where it is)."
        );
        return Ok(exit::USAGE);
    }
    let loaded = served_config(
        context,
        &settings.fronted,
        settings.shared_servers.as_ref(),
        true,
    )?;
    // The files as they were read, taken now: a change made as soon as the
    // gateway says it is ready (or before its watcher first runs) is a
    // change, not the watcher's starting point.
    let watched = watched_files(context, &loaded);
    let read_as = stamp(&watched);
    let prepared = prepare_asking(context, &loaded, None, false);
    for (name, why) in &prepared.unusable {
        eprintln!(
            "warning: server `{}` cannot start: {}",
            crate::term::sanitize::line(name),
            crate::term::sanitize::term(why)
        );
    }
    // Hosts as users with a shared state: each user their own backends.
    if let (Some(listener), Some(_)) = (&settings.http, &settings.state)
        && listener.users.is_some()
    {
        let state = settings.state.clone().expect("checked above");
        let users = super::users::Served {
            context,
            loaded: &loaded,
            runnable: prepared.runnable,
            watched: (watched, read_as),
        };
        return super::users::serve_users(users, settings, state, servers).await;
    }
    let remote = remote_servers(&prepared.runnable);
    // The background session says what it runs, for commands to tell
    // whether it runs the server they would start (`session::serves`).
    let fingerprints = crate::session::Fingerprints::default();
    remember(&fingerprints, &prepared.runnable);
    // What backends ask of their client goes to the host.
    let asks = BackendAsks::new();
    let shared = settings.shared_policy.clone();
    let (hub, taps) = served_hub(
        context,
        credentials,
        &loaded,
        prepared.runnable,
        &settings,
        &asks,
        &fingerprints,
    )?;
    // A rule added to the shared policy, here or on another replica,
    // holds from the next call.
    if let Some(shared) = &shared {
        let hub = hub.clone();
        shared.follow(move || {
            if let Err(error) = hub.reload_tool_policy() {
                tracing::warn!(%error, "the shared policy changed and could not be applied");
            }
        });
    }
    servers.hub(&hub);
    // Heard from before the start, so no early "needs a login" is missed.
    let login_events = hub.events();
    let info = Implementation::new("switchboard", env!("CARGO_PKG_VERSION"));
    let mut gateway = HubServer::new(hub.clone(), info)
        .start_hub(settings.wait_ready)
        .forward_asks(asks)
        .authenticator(authenticator(remote, credentials));
    if let Some(max) = settings.max_tools {
        gateway = with_tool_search(gateway, max);
    }
    gateway.spawn(say_logins_needed(login_events));
    if let Some(daemon) = &settings.session {
        gateway.spawn(crate::session::write_status(
            hub.clone(),
            fingerprints,
            daemon.dir(),
        ));
    }
    if settings.fronted.reads_files() {
        gateway.spawn(watch_config(hub.clone(), watched, read_as));
        // Servers pushed to the shared state, here or anywhere.
        if let Some(shared) = &settings.shared_servers {
            let hub = hub.clone();
            shared.follow(move || {
                let hub = hub.clone();
                async move { reload_and_say(&hub).await }
            });
        }
    }
    let audit = settings.audit.map(Arc::new);
    let attach = taps.as_ref().map(|taps| {
        crate::console::attach::Attach::new(
            if settings.session.is_some() {
                "the background session (`switchboard up`)"
            } else {
                "this `switchboard serve`"
            },
            context.clone(),
            hub,
            gateway.clone(),
            credentials.map(Path::to_path_buf),
            audit.clone(),
            taps.clone(),
        )
    });
    // `--console`: served beside the gateway while it runs; its address
    // said on stderr (a host keeps that in its log) and kept in a
    // private file.
    if settings.console
        && let Some(attach) = &attach
    {
        let attach = attach.clone();
        gateway.spawn(async move {
            let mut kept = None;
            let served = attach
                .serve(
                    0,
                    |url| {
                        let name = format!("console-serve-{}.url", std::process::id());
                        kept = crate::listen::private_runtime_file(&name, url).ok();
                        let place = kept
                            .as_ref()
                            .map(|file| format!(" (also in {})", file.path().display()))
                            .unwrap_or_default();
                        eprintln!("switchboard serve: console at {url}{place}");
                    },
                    std::future::pending::<()>(),
                )
                .await;
            if let Err(failure) = served {
                eprintln!("warning: no console: {:#}", failure.error);
            }
        });
    }
    match (settings.http, settings.session, attach, taps) {
        (Some(listener), _, _, _) => serve_http(gateway, listener, audit, servers).await,
        (None, Some(daemon), Some(attach), Some(taps)) => {
            daemon.run(gateway, audit, attach, taps).await
        }
        (None, _, _, taps) => serve_stdio(gateway, audit, taps).await,
    }
}

/// `gateway` in tool-search mode past `max` tools (`--max-tools`).
pub(super) fn with_tool_search(gateway: HubServer, max: usize) -> HubServer {
    gateway.tool_search(
        max,
        Arc::new(|tools: &[[&str; 5]], query: &str, limit: usize| {
            switchboard_models::search::Index::build(
                tools.iter().map(|[n, s, t, ti, d]| (*n, *s, *t, *ti, *d)),
            )
            .search(query, limit)
        }),
    )
}

/// The config `serve` serves: the files (unless only the server after
/// `--`/`--url` is), less this gateway itself (said on stderr when `say`)
/// and the servers waiting for approval (said on stderr).
pub(super) fn served_config(
    context: &Context,
    fronted: &crate::fronted::Fronted,
    shared: Option<&crate::state::SharedServers>,
    say: bool,
) -> Result<LoadedConfig, Failure> {
    let mut loaded = if fronted.reads_files() {
        let mut loaded = context.load(false);
        // The replicas' shared servers, beside (never over) the files'.
        if let Some(shared) = shared {
            let before = loaded.diagnostics.len();
            shared.merge_into(context, &mut loaded);
            if say {
                for diagnostic in &loaded.diagnostics[before..] {
                    crate::configure::report_diagnostic(diagnostic, false);
                }
            }
        }
        loaded
    } else {
        LoadedConfig::default()
    };
    // An MCP host's file that lists the gateway (`claude mcp add
    // switchboard -- switchboard serve`) is read here too: the loader
    // leaves it out (`SkipReason::Gateway`), said once.
    if say {
        for skipped in loaded
            .skipped
            .iter()
            .filter(|s| s.reason == SkipReason::Gateway)
        {
            eprintln!(
                "warning: server `{}` is not started: {}",
                crate::term::sanitize::line(&skipped.server.name),
                skip_reason(&skipped.reason, None, None)
            );
        }
    }
    fronted.apply(&mut loaded)?;
    // A project server changed since its approval (or whose approval was
    // revoked) is left out: stopped, never restarted with the new values.
    for server in loaded.needs_approval().filter(|s| s.enabled) {
        // (The reason says what to run.)
        eprintln!(
            "warning: server `{}` is not started: {}",
            crate::approve::clean(&server.name),
            crate::approve::pending_reason(server),
        );
    }
    Ok(loaded)
}

/// The HTTP servers a host may log in to through the gateway (as
/// expanded): each one's URL and OAuth settings.
fn remote_servers(runnable: &[ServerConfig]) -> HashMap<String, (String, Option<OAuthSettings>)> {
    runnable
        .iter()
        .filter_map(|server| match &server.transport {
            TransportConfig::Http { url, .. } => {
                Some((server.name.clone(), (url.clone(), server.oauth.clone())))
            }
            _ => None,
        })
        .collect()
}

/// The hub `serve` serves: `runnable`, under their own names when there
/// is one (a host cannot tell the gateway from it) and as `server__name`
/// when several, unless their entries say otherwise (`prefix`); the
/// background session keeps `server__name` (the CLI's commands name tools
/// so with it or without). Every call follows `[policy.tools]`; the files
/// are read again when they change, the same way. For the background
/// session and `--console`, also the taps a console attached to it
/// records with.
fn served_hub(
    context: &Context,
    credentials: Option<&Path>,
    loaded: &LoadedConfig,
    runnable: Vec<ServerConfig>,
    settings: &ServeSettings,
    asks: &BackendAsks,
    fingerprints: &crate::session::Fingerprints,
) -> Result<(Hub, Option<crate::console::attach::Taps>), Failure> {
    // The session (and `serve --console`) records what a console
    // attached to it shows (nothing until one is).
    let taps =
        (settings.session.is_some() || settings.console).then(crate::console::attach::Taps::new);
    let tapping = taps.clone();
    let prefix = if runnable.len() == 1 && settings.session.is_none() {
        Prefix::OnCollision
    } else {
        Prefix::Always
    };
    let policy_source = context.clone();
    let shared = settings.shared_policy.as_ref();
    let shared_rules = settings.shared_policy.clone();
    let source = context.clone();
    let fronted = settings.fronted.clone();
    let shared_servers = settings.shared_servers.clone();
    let forwarding = asks.clone();
    let fingerprints = fingerprints.clone();
    let hub =
        crate::policy::apply(
            builder(
                runnable,
                DEFAULT_STARTUP,
                credentials.map(Path::to_path_buf),
                settings.max_message_size,
            )
            .default_prefix(prefix),
            context,
            loaded,
            None,
        )
        // Replicas sharing a state share their "always" answers too.
        .remembered_allows(match &settings.state {
            Some(state) => crate::policy::shared_allows_of(state, crate::policy::TOKEN_USER),
            None => switchboard_hub::hub::RememberedAllows::at(crate::policy::allows_file(context)),
        })
        // Read just after the servers (whose load printed its diagnostics).
        // A file that cannot be read may hold rules: the reload is refused
        // (rules and servers in force kept) rather than lifting them.
        .tool_policy(with_shared(shared, loaded.policy.tools.clone()))
        .tool_policy_source(move || {
            let loaded = policy_source.load_quiet();
            match loaded.diagnostics.iter().find(|d| {
                d.severity == switchboard_hub::config::Severity::Error && d.server.is_none()
            }) {
                Some(broken) => Err(format!(
                    "{broken}; the tool policy and servers in force are kept until it is fixed"
                )),
                None => Ok(with_shared(shared_rules.as_ref(), loaded.policy.tools)),
            }
        })
        .config_source(move || {
            let loaded = served_config(&source, &fronted, shared_servers.as_ref(), false)
                .map_err(|e| format!("{:#}", e.error))?;
            let runnable = prepare_asking(&source, &loaded, None, false).runnable;
            remember(&fingerprints, &runnable);
            Ok(runnable)
        })
        .client(move |server, client| {
            let client = forwarding.client(&server.name, client);
            match &tapping {
                Some(taps) => client.tap(taps.server(&server.name)),
                None => client,
            }
        });
    // Replicas sharing a state probe each server once between them.
    let hub = match &settings.state {
        Some(state) => hub.verdict_store(std::sync::Arc::new(state.era_verdicts())),
        None => hub,
    };
    // A login made in a terminal (`switchboard login NAME`) while serving
    // brings its server up.
    match login::login_index(credentials) {
        Some(index) => hub.watch_credentials(index, switchboard_hub::hub::DEFAULT_CREDENTIALS_POLL),
        None => hub,
    }
    .build()
    .map(|hub| (hub, taps))
    .map_err(|e| hub_failure(e, None, None))
}

/// `rules` (a config's) and, with a shared state, the rules every replica
/// enforces.
pub(super) fn with_shared(
    shared: Option<&crate::state::SharedPolicy>,
    rules: switchboard_hub::config::policy::ToolPolicy,
) -> switchboard_hub::config::policy::ToolPolicy {
    with_shared_for(shared, rules, None)
}

/// [`with_shared`] for `user` (a host user's `sub` and groups): the shared
/// rules for everyone, and those naming them.
pub(super) fn with_shared_for(
    shared: Option<&crate::state::SharedPolicy>,
    rules: switchboard_hub::config::policy::ToolPolicy,
    user: Option<(&str, &[String])>,
) -> switchboard_hub::config::policy::ToolPolicy {
    match shared {
        Some(shared) => shared.merge(rules, user),
        None => rules,
    }
}

/// Notes the fingerprint of each configuration the hub is given.
fn remember(fingerprints: &crate::session::Fingerprints, runnable: &[ServerConfig]) {
    *fingerprints
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = runnable
        .iter()
        .map(|server| (server.name.clone(), crate::session::fingerprint(server)))
        .collect();
}

/// Says on stderr which servers wait for a login, and how to give it.
async fn say_logins_needed(mut events: switchboard_hub::hub::HubEvents) {
    while let Some(event) = events.next().await {
        if let switchboard_hub::HubEvent::StateChanged {
            server,
            state: ServerState::NeedsAuth { .. },
        } = event
        {
            let server = crate::term::sanitize::line(&server);
            eprintln!(
                "warning: server `{server}` needs a login: the host can call \
                 `{server}__authenticate`, or run `switchboard login {server}`"
            );
        }
    }
}

/// Logs a host in to one of `remote` through the gateway: the page to
/// open, and the login's end.
fn authenticator(
    remote: HashMap<String, (String, Option<OAuthSettings>)>,
    credentials: Option<&Path>,
) -> Authenticator {
    let credentials = credentials.map(Path::to_path_buf);
    Arc::new(move |name: &str| {
        let found = remote.get(name).cloned();
        let flag = credentials.clone();
        let name = name.to_owned();
        Box::pin(async move {
            let Some((url, oauth)) = found else {
                return Err(format!("`{name}` is not a configured HTTP server"));
            };
            let (page, done) = login::gateway_login(
                &name,
                &url,
                oauth.as_ref(),
                flag.as_deref(),
                Duration::from_secs(300),
            )
            .await
            .map_err(|e| format!("{e:#}"))?;
            let done: switchboard::BoxFuture<'static, Result<(), String>> =
                Box::pin(async move { done.await.map_err(|e| format!("{e:#}")) });
            Ok((page, done))
        })
    })
}

/// Serves `gateway` on HTTP until a signal, then drains: the listener
/// closes, the calls in progress are answered (for at most
/// [`DRAIN_GRACE`]; a second signal stops at once), and the command ends
/// with the signal's exit code.
async fn serve_http(
    mut gateway: HubServer,
    listener: crate::listen::Listener,
    audit: Option<Arc<switchboard_hub::hub::audit::AuditLog>>,
    servers: &Servers,
) -> Result<u8, Failure> {
    if let Some(log) = audit {
        gateway = gateway.audit(log, "http");
    }
    if let Some(key) = &listener.session_key {
        gateway = gateway.round_key(key.derive(ROUNDS));
    }
    let addr = listener.addr;
    let (bound, options, _token_file) = http_listener(listener).await?;
    let signal = servers.drain_on_signal();
    let served = gateway
        .serve_http(bound, options)
        .map_err(|e| Failure::usage(anyhow::anyhow!("cannot serve on {addr}: {e}")))?;
    eprintln!("listening on http://{}/mcp", served.local_addr());
    let code = signal.await.unwrap_or(exit::SIGTERM);
    eprintln!("stopping: answering the calls in progress, taking no new ones (again to stop now)");
    served.shutdown(DRAIN_GRACE).await;
    Ok(code)
}

/// The bound listener and the endpoint's options `listener` asks for; a
/// generated token's file, which goes when the gateway stops.
pub(super) async fn http_listener(
    listener: crate::listen::Listener,
) -> Result<
    (
        tokio::net::TcpListener,
        switchboard::server::http::HttpServeOptions,
        Option<crate::listen::TokenFile>,
    ),
    Failure,
> {
    let crate::listen::Listener {
        addr,
        token,
        session_key,
        allowed_hosts,
        max_connections,
        users,
    } = listener;
    let bound = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::usage(anyhow::anyhow!("cannot listen on {addr}: {e}")))?;
    let port = bound.local_addr().map_or(addr.port(), |a| a.port());
    let (token, token_file) = match users {
        Some(_) => (None, None),
        None => crate::listen::token_for(token, port)?,
    };
    let mut options = switchboard::server::http::HttpServeOptions::default();
    if let Some(token) = token {
        options = options.bearer_token(token);
    }
    options.allowed_hosts = allowed_hosts;
    if let Some(max) = max_connections {
        options.max_connections = max.max(1);
    }
    if let Some(key) = session_key {
        options = options.session_key(key);
    }
    if let Some(users) = users {
        options = users.apply(options);
    }
    Ok((bound, options, token_file))
}

/// Serves `gateway` on stdin/stdout until the host closes stdin.
async fn serve_stdio(
    mut gateway: HubServer,
    audit: Option<Arc<switchboard_hub::hub::audit::AuditLog>>,
    taps: Option<crate::console::attach::Taps>,
) -> Result<u8, Failure> {
    if let Some(log) = audit {
        gateway = gateway.audit(log, format!("stdio-{}", std::process::id()));
    }
    let mut connection = switchboard::transport::framing::stdio_connection();
    if let Some(taps) = taps {
        connection = switchboard::transport::tap::tap_connection(connection, taps.host("stdio"));
    }
    let served = gateway.serve(connection, switchboard::server::ServeOptions::default());
    let reason = served.closed().await;
    match &*reason {
        TransportError::Closed { .. } | TransportError::ClosedByClient => Ok(0),
        other => {
            eprintln!(
                "error: the host's connection failed: {}",
                crate::term::sanitize::line(&other.to_string())
            );
            Ok(exit::UNREACHABLE)
        }
    }
}

/// How often `serve` looks at its config files for changes.
const CONFIG_POLL: Duration = Duration::from_secs(2);

/// The config files `serve` watches: those it read, `--config`, and the
/// approvals file (an `untrust` stops the server at once).
pub(super) fn watched_files(context: &Context, loaded: &LoadedConfig) -> Vec<PathBuf> {
    let mut files = loaded.files.clone();
    files.extend(context.explicit.clone());
    files.push(loaded.approvals.clone());
    files.sort();
    files.dedup();
    files
}

/// Each file's modification time and size (none: absent).
pub(super) type Stamps = Vec<Option<(std::time::SystemTime, u64)>>;

pub(super) fn stamp(files: &[PathBuf]) -> Stamps {
    files
        .iter()
        .map(|file| {
            let meta = std::fs::metadata(file).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        })
        .collect()
}

/// Reloads `hub` whenever one of `files` changes (size or modification
/// time) from how they were when read (`read_as`), saying on stderr what
/// changed.
async fn watch_config(hub: Hub, files: Vec<PathBuf>, read_as: Stamps) {
    watch_files(files, read_as, move || {
        let hub = hub.clone();
        async move { reload_and_say(&hub).await }
    })
    .await;
}

/// Calls `changed` whenever one of `files` changes (size or modification
/// time) from how they were when read (`read_as`); for as long as the
/// process runs.
pub(super) async fn watch_files<F: std::future::Future<Output = ()>>(
    files: Vec<PathBuf>,
    read_as: Stamps,
    mut changed: impl FnMut() -> F,
) {
    let mut last = read_as;
    loop {
        tokio::time::sleep(CONFIG_POLL).await;
        let now = stamp(&files);
        if now == last {
            continue;
        }
        last = now;
        changed().await;
    }
}

/// Says on stderr what a reload changed: `added`, `removed`, `restarted`
/// and `stopped until approved` servers, and whether the tool policy
/// changed.
pub(super) fn say_changed(
    added: &[String],
    removed: &[String],
    restarted: &[String],
    stopped: &[String],
    policy_changed: bool,
) {
    let mut said = Vec::new();
    for (what, names) in [
        ("added", added),
        ("removed", removed),
        ("restarted", restarted),
        ("stopped until approved", stopped),
    ] {
        if !names.is_empty() {
            let names: Vec<String> = names
                .iter()
                .map(|n| crate::term::sanitize::line(n).into_owned())
                .collect();
            said.push(format!("{what} {}", names.join(", ")));
        }
    }
    if policy_changed {
        said.push("tool policy applied".to_owned());
    }
    if !said.is_empty() {
        eprintln!("config changed: {}", said.join("; "));
    }
}

/// Reloads `hub`, saying what changed.
async fn reload_and_say(hub: &Hub) {
    match hub.reload().await {
        Ok(report) => {
            // A changed server that now needs approval was stopped, not
            // restarted.
            let waiting: Vec<String> = hub
                .list()
                .into_iter()
                .filter(|s| matches!(s.state, ServerState::NeedsApproval { .. }))
                .map(|s| s.name)
                .collect();
            let (stopped, restarted): (Vec<String>, Vec<String>) = report
                .changed
                .iter()
                .cloned()
                .partition(|name| waiting.contains(name));
            say_changed(
                &report.added,
                &report.removed,
                &restarted,
                &stopped,
                report.policy_changed,
            );
        }
        Err(error) => say_not_reloaded(&error.to_string()),
    }
}

/// Says on stderr that a changed config could not be reloaded.
pub(super) fn say_not_reloaded(why: &str) {
    eprintln!(
        "warning: config changed but could not be reloaded: {}",
        crate::term::sanitize::line(why)
    );
}

/// The pid of a `switchboard serve` (this same program) among this
/// process's ancestors (Linux: read from /proc; elsewhere none is found).
fn serving_ancestor() -> Option<u32> {
    let me = std::fs::read_link("/proc/self/exe").ok()?;
    let mut pid = std::process::id();
    for _ in 0..32 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let ppid: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        if ppid <= 1 {
            return None;
        }
        let exe = std::fs::read_link(format!("/proc/{ppid}/exe")).ok();
        let cmdline = std::fs::read(format!("/proc/{ppid}/cmdline")).unwrap_or_default();
        let serving = cmdline
            .split(|b| *b == 0)
            .skip(1)
            .any(|arg| arg == b"serve");
        if exe.as_ref() == Some(&me) && serving {
            return Some(ppid);
        }
        pid = ppid;
    }
    None
}
