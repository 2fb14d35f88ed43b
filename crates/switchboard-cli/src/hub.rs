//! The configured servers through the hub: `list` (each server's state,
//! health-checked in parallel), and the hub a listing (`tools`,
//! `resources`, `prompts`, `skills`) or a command on one server starts
//! ([`one`]), with the warnings and exit codes of servers not started or
//! not ready. The commands themselves are in `commands/`, on `reach.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use switchboard::transport::http::AuthProvider;
use switchboard::types::SkillEntry;
use switchboard_hub::config::{LoadedConfig, SkipReason};
use switchboard_hub::{
    Hub, HubBuilder, HubError, HubEvent, ServerConfig, ServerState, ServerStatus, TransportConfig,
};

use crate::configure::{Context, dialect_name, not_configured, scope_name, skip_reason};
use crate::lifecycle::Servers;
use crate::{failure::Failure, failure::exit, login, term::output};

pub(crate) mod host_auth;
mod one;
mod prepare;
mod serve;
mod users;

pub(crate) use serve::{ServeSettings, serve};

use prepare::{Prepared, prepare, prepare_asking};

#[cfg(unix)]
pub(crate) use one::through_session;
pub(crate) use one::{
    Listed, check_one, client_setup, open_one, resolve_tool, split_target, the_one_with,
};

fn builder(
    servers: Vec<ServerConfig>,
    startup_timeout: Duration,
    credentials: Option<PathBuf>,
    max_message_size: Option<usize>,
) -> HubBuilder {
    let mut hub = Hub::builder();
    if let Some(bytes) = max_message_size {
        hub = hub.max_message_size(bytes);
    }
    hub.servers(servers)
        .startup_timeout(startup_timeout)
        .auth(move |server| match &server.transport {
            // A hand-written Authorization header wins over stored logins.
            TransportConfig::Http { url, headers, .. }
                if !headers
                    .keys()
                    .any(|k| k.eq_ignore_ascii_case("authorization")) =>
            {
                login::provider_for(url, credentials.as_deref(), server.oauth.as_ref())
                    .map(|p| p as Arc<dyn AuthProvider>)
            }
            _ => None,
        })
}

/// Starts every enabled server and waits until each is ready or has
/// failed, with a spinner on a terminal. A required server that failed
/// does not stop the others: its state says why.
async fn start(hub: &Hub, json: bool) {
    let total = hub
        .list()
        .iter()
        .filter(|s| s.state != ServerState::Disabled)
        .count();
    let spinner = (!json && total > 0 && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(100));
        bar.set_message(format!("checking {total} servers…"));
        bar
    });
    let mut events = hub.events();
    let mut settled = BTreeSet::new();
    let mut work = std::pin::pin!(hub.start());
    loop {
        tokio::select! {
            _ = &mut work => break,
            Some(event) = events.next() => {
                if let (Some(bar), HubEvent::StateChanged { server, state }) = (&spinner, event)
                    && state.is_settled()
                {
                    settled.insert(server.clone());
                    bar.set_message(format!(
                        "checking {total} servers… {} done ({server}: {})",
                        settled.len(),
                        state.name()
                    ));
                }
            }
        }
    }
    if let Some(bar) = spinner {
        bar.finish_and_clear();
    }
}

/// Why a server is in its state, for the reason column; its stderr tail.
pub(crate) fn reason(
    status: &ServerStatus,
    config: Option<&ServerConfig>,
    credentials: Option<&Path>,
) -> (Option<String>, Option<String>) {
    match &status.state {
        ServerState::Failed(failure)
        | ServerState::Reconnecting {
            reason: failure, ..
        } => (Some(failure.message.clone()), failure.stderr_tail.clone()),
        ServerState::NeedsAuth { .. } => (
            Some(match config.and_then(remote_url) {
                Some(url) => format!(
                    "the server wants a login: run {}",
                    login::login_command(url, credentials)
                ),
                None => "the server wants a login".to_owned(),
            }),
            None,
        ),
        ServerState::Disabled => (
            Some(format!(
                "disabled in the configuration; `switchboard enable {}` turns it on",
                status.name
            )),
            None,
        ),
        ServerState::NeedsApproval { .. } => (config.map(crate::approve::pending_reason), None),
        _ => (None, None),
    }
}

fn remote_url(config: &ServerConfig) -> Option<&str> {
    match &config.transport {
        TransportConfig::Http { url, .. } | TransportConfig::WebSocket { url, .. } => Some(url),
        _ => None,
    }
}

pub(crate) fn source(config: &ServerConfig) -> Value {
    json!({
        "source": config.origin.file.display().to_string(),
        "dialect": dialect_name(config.origin.dialect),
        "scope": scope_name(config.origin.scope),
    })
}

pub(crate) fn merge(into: &mut Value, from: Value) {
    if let (Some(into), Value::Object(from)) = (into.as_object_mut(), from) {
        into.extend(from);
    }
}

/// `list`: every configured server with its source, state and reason.
/// How `list` lays its table out.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ListView {
    /// Every detail at any width.
    pub(crate) wide: bool,
    /// A row per skipped entry too.
    pub(crate) all: bool,
    /// Exit 4 when an enabled server did not get ready (`doctor --check`).
    pub(crate) strict: bool,
}

/// The widest `list` gets without `--wide`.
const LIST_WIDTH: u16 = 100;
/// The longest reason `list` shows without `--wide`.
const LIST_REASON: usize = 60;

pub(crate) async fn list(
    context: &Context,
    json: bool,
    startup_timeout: Duration,
    credentials: Option<&Path>,
    servers: &Servers,
    view: ListView,
) -> Result<u8, Failure> {
    let mut loaded = context.load(json);
    crate::approve::ask_pending(context, &mut loaded, None);
    let prepared = prepare(context, &loaded, None);
    // The background session runs every server this command would start,
    // ready, as this command expanded it: what it says of them is what
    // starting them would say. Otherwise (one failed there, or runs
    // another configuration) every one is started here, so that a failure
    // is said with its stderr as without a session.
    #[cfg(unix)]
    let in_session = in_session(context, &prepared).await;
    #[cfg(not(unix))]
    let in_session: Option<BTreeMap<String, crate::session::Ready>> = None;
    let hub = crate::policy::apply(
        builder(
            prepared.runnable,
            startup_timeout,
            credentials.map(Path::to_path_buf),
            None,
        ),
        context,
        &loaded,
        None,
    )
    .build()
    .map_err(|e| hub_failure(e, None, None))?;
    servers.hub(&hub);
    if in_session.is_none() {
        start(&hub, json).await;
    }
    let statuses: BTreeMap<String, ServerStatus> = hub
        .list()
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect();
    hub.shutdown().await;

    let mut rows = Vec::new();
    for config in &loaded.servers {
        let mut row = json!({ "name": config.name });
        if let Some(ready) = in_session.as_ref().and_then(|s| s.get(&config.name)) {
            row["state"] = json!("ready");
            row["reason"] = Value::Null;
            row["stderr"] = Value::Null;
            row["tools"] = json!(ready.tools);
            row["transport"] = json!(ready.transport);
            row["era"] = json!(ready.era);
            row["protocolVersion"] = json!(ready.protocol_version);
        } else if let Some(status) = statuses.get(&config.name) {
            let (reason, stderr) = reason(status, Some(config), credentials);
            row["state"] = json!(status.state.name());
            row["reason"] = json!(reason);
            row["stderr"] = json!(stderr);
            // A count only for a server that lists them now: none is
            // known of one that failed (not 0).
            row["tools"] = if status.state.is_ready() {
                json!(status.tools.len())
            } else {
                Value::Null
            };
            row["transport"] = json!(status.transport);
            row["era"] = json!(status.era.map(|e| e.to_string()));
            row["protocolVersion"] = json!(status.protocol_version);
        } else {
            row["state"] = json!("failed");
            row["reason"] = json!(prepared.unusable.get(&config.name));
        }
        row["required"] = json!(config.required);
        merge(&mut row, source(config));
        rows.push(row);
    }
    for skipped in &loaded.skipped {
        let mut row = json!({
            "name": skipped.server.name,
            "state": "skipped",
            "skipped": match &skipped.reason {
                SkipReason::Shadowed => "shadowed",
                SkipReason::Duplicate => "duplicate",
                SkipReason::Blocked(_) => "blocked",
                SkipReason::AwaitsApproval => "needs-approval",
                SkipReason::Gateway => "gateway",
                _ => "skipped",
            },
            "reason": skip_reason(&skipped.reason, skipped.kept.as_deref(), Some(&loaded)),
        });
        merge(&mut row, source(&skipped.server));
        rows.push(row);
    }

    if json {
        output::print_json(&json!({ "servers": rows }));
        return Ok(0);
    }
    if rows.is_empty() {
        println!(
            "no servers configured: add one with `switchboard add NAME -- COMMAND [ARGS…]`, \
             or copy another client's with `switchboard import --from claude-desktop` \
             (claude-code, vscode, cursor, codex, gemini, goose)"
        );
        return Ok(0);
    }
    let mut table = output::table(&["server", "state", "tools", "source", "reason"]);
    if !view.wide {
        table.set_width(LIST_WIDTH.min(table.width().unwrap_or(LIST_WIDTH)));
    }
    let mut hidden = std::collections::BTreeMap::<String, usize>::new();
    for row in &rows {
        let text = |key: &str| {
            crate::term::sanitize::term(row[key].as_str().unwrap_or_default()).into_owned()
        };
        let state = match row["skipped"].as_str() {
            Some(why) => {
                if !view.all {
                    *hidden.entry(why.to_owned()).or_default() += 1;
                    continue;
                }
                why.to_owned()
            }
            None => text("state"),
        };
        let tools = if row["state"] == "ready" {
            row["tools"].to_string()
        } else {
            String::new()
        };
        let mut why = text("reason");
        // The last line the server wrote on stderr, under its reason.
        let last = row["stderr"]
            .as_str()
            .and_then(|s| s.lines().rev().find(|l| !l.trim().is_empty()))
            .map(|last| format!("stderr: {}", crate::term::sanitize::line(last.trim())));
        let source = if view.wide {
            if let Some(last) = last {
                why = format!("{why}\n{last}");
            }
            format!("{} ({})", text("source"), text("scope"))
        } else {
            // The reason's gist on a terminal (`get NAME` or --wide has the
            // rest); piped, nothing is cut. What to run is never cut: a
            // server waiting for approval says the command first.
            let cut = |text: &str| {
                if std::io::stdout().is_terminal() {
                    output::short(text, LIST_REASON)
                } else {
                    crate::term::sanitize::line(text).into_owned()
                }
            };
            if row["state"] == "needs-approval" {
                why = format!(
                    "{}: run `switchboard approve {}`",
                    if why.starts_with("changed") {
                        "changed since you approved it"
                    } else {
                        "not approved yet"
                    },
                    crate::approve::clean(&text("name"))
                );
            }
            why = cut(&why);
            if let Some(last) = last {
                why = format!("{why}\n{}", cut(&last));
            }
            output::short_path(&text("source"))
        };
        table.add_row(vec![text("name"), state, tools, source, why]);
    }
    println!("{table}");
    let ready = rows.iter().filter(|r| r["state"] == "ready").count();
    println!("{ready} of {} servers ready", loaded.servers.len());
    if !hidden.is_empty() {
        let counts: Vec<String> = hidden.iter().map(|(why, n)| format!("{n} {why}")).collect();
        println!(
            "{} entr{} not used ({}): `list --all` shows them",
            hidden.values().sum::<usize>(),
            if hidden.values().sum::<usize>() == 1 {
                "y"
            } else {
                "ies"
            },
            counts.join(", ")
        );
    }
    let failed = rows
        .iter()
        .any(|r| r["state"] == "failed" || r["state"] == "needs-auth");
    Ok(if view.strict && failed {
        exit::UNREACHABLE
    } else {
        0
    })
}

/// The configured servers asked for (every one, or only `only`), started
/// through one hub. Each server that is not started, or did not get
/// ready, is warned about on stderr (its `noun` are not listed).
pub(crate) struct Opened {
    pub(crate) hub: Hub,
    /// The ready servers.
    ready: BTreeSet<String>,
    /// How many servers were asked: those the hub tried to start and
    /// those whose configuration could not be expanded.
    asked: usize,
    /// How many of them are not ready.
    failed: usize,
}

impl Opened {
    /// Whether `server` got ready.
    pub(crate) fn is_ready(&self, server: &str) -> bool {
        self.ready.contains(server)
    }
}

pub(crate) async fn open_all(
    context: &Context,
    only: Option<&str>,
    noun: &str,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    servers: &Servers,
) -> Result<Opened, Failure> {
    let (loaded, prepared) = check_all(context, only, noun, json)?;
    open_checked(
        context,
        &loaded,
        prepared,
        noun,
        json,
        credentials,
        max_message_size,
        servers,
    )
    .await
}

/// The hub of every configured server, starting in the background (its
/// states say how far each got), its clients set up by `client`, as for a
/// listing of tools; but a project
/// server waiting for approval is not asked about on the terminal: it
/// waits in the hub (`needs-approval`) for [`approve_and_start`].
pub(crate) fn open_unasked(
    context: &Context,
    credentials: Option<&Path>,
    servers: &Servers,
    approver: impl switchboard_hub::hub::ToolApprover + 'static,
    client: impl Fn(&ServerConfig, switchboard::ClientBuilder) -> switchboard::ClientBuilder
    + Send
    + Sync
    + 'static,
) -> Result<Hub, Failure> {
    let (loaded, prepared) = check_all_asking(context, None, "tools", false, false)?;
    let hub = hub_of(
        with_policy(context, &loaded, prepared.runnable, credentials, None, None)
            .client(client)
            .tool_approver(approver),
        servers,
    )?;
    let starting = hub.clone();
    tokio::spawn(async move {
        let _ = starting.start().await;
    });
    Ok(hub)
}

/// Approves the project server `name` for this project (as `switchboard
/// approve NAME` does), then gives `hub` the configuration read again, so
/// that it starts; its state then.
pub(crate) async fn approve_and_start(
    context: &Context,
    hub: &Hub,
    name: &str,
) -> Result<ServerState, String> {
    let loaded = context.load_quiet();
    let server = loaded
        .needs_approval()
        .chain(loaded.awaiting_approval())
        .find(|s| s.name == name)
        .ok_or_else(|| format!("`{name}` is no project server waiting for approval"))?;
    let mut approvals = switchboard_hub::config::Approvals::open(&loaded.approvals);
    approvals.approve(context.locations.project_root(), server);
    approvals
        .save()
        .map_err(|e| format!("the approval could not be saved: {e}"))?;
    reapply(context, hub).await?;
    hub.status(name)
        .map(|status| status.state)
        .map_err(|e| e.to_string())
}

/// Gives `hub` the configuration read again (a server added, removed,
/// enabled, disabled or approved in the files starts or stops as they now
/// say, the others untouched); the configuration read.
pub(crate) async fn reapply(context: &Context, hub: &Hub) -> Result<LoadedConfig, String> {
    let loaded = context.load_quiet();
    let runnable = prepare_asking(context, &loaded, None, false).runnable;
    hub.apply(runnable).await.map_err(|e| e.to_string())?;
    Ok(loaded)
}

/// [`open_all`]'s checks and expansion: each server not started said on
/// stderr — the same with or without the background session.
fn check_all(
    context: &Context,
    only: Option<&str>,
    noun: &str,
    json: bool,
) -> Result<(LoadedConfig, Prepared), Failure> {
    check_all_asking(context, only, noun, json, true)
}

/// [`check_all`]; `ask`: whether a pending project server is asked about
/// on the terminal (the console asks in its page instead).
fn check_all_asking(
    context: &Context,
    only: Option<&str>,
    noun: &str,
    json: bool,
    ask: bool,
) -> Result<(LoadedConfig, Prepared), Failure> {
    let mut loaded = context.load(json);
    if let Some(name) = only
        && loaded.named(name).is_none()
    {
        return Err(not_configured(name, &loaded));
    }
    if ask {
        crate::approve::ask_pending(context, &mut loaded, only);
    }
    for server in loaded.needs_approval() {
        if only.is_none_or(|name| name == server.name) && server.enabled {
            eprintln!(
                "warning: server `{}` is not started, its {noun} are not listed: {}",
                crate::approve::clean(&server.name),
                crate::approve::pending_reason(server)
            );
        }
    }
    let prepared = prepare(context, &loaded, only);
    for (name, why) in &prepared.unusable {
        eprintln!(
            "warning: server `{}` cannot start, its {noun} are not listed: {}",
            crate::term::sanitize::line(name),
            crate::term::sanitize::term(why)
        );
    }
    Ok((loaded, prepared))
}

/// [`open_all`]'s hub, of the servers [`check_all`] expanded, started.
#[expect(
    clippy::too_many_arguments,
    reason = "the command's own settings, each used once"
)]
async fn open_checked(
    context: &Context,
    loaded: &LoadedConfig,
    prepared: Prepared,
    noun: &str,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    servers: &Servers,
) -> Result<Opened, Failure> {
    let hub = hub_of(
        configured(
            context,
            loaded,
            prepared.runnable,
            json,
            credentials,
            max_message_size,
        ),
        servers,
    )?;
    start(&hub, json).await;
    let mut opened = Opened {
        ready: BTreeSet::new(),
        asked: prepared.unusable.len(),
        failed: prepared.unusable.len(),
        hub,
    };
    for status in opened.hub.list() {
        if status.state.is_ready() {
            opened.asked += 1;
            opened.ready.insert(status.name);
        } else if status.state != ServerState::Disabled
            && !matches!(status.state, ServerState::NeedsApproval { .. })
        {
            opened.asked += 1;
            opened.failed += 1;
            eprintln!(
                "warning: server `{}` is not ready ({}); its {noun} are not listed",
                crate::term::sanitize::line(&status.name),
                crate::term::sanitize::line(&status.state.to_string())
            );
        }
    }
    Ok(opened)
}

/// The hub of a command's own over `runnable`: the start-up bound, the
/// stored logins, the tool policy (an `ask` put on the terminal).
fn configured(
    context: &Context,
    loaded: &LoadedConfig,
    runnable: Vec<ServerConfig>,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
) -> HubBuilder {
    with_policy(
        context,
        loaded,
        runnable,
        credentials,
        max_message_size,
        Some(crate::term::ui::Ui::new(json, false)),
    )
}

/// The hub builder of `runnable` with the configuration's tool policy;
/// with `ui`, its `ask` put on the terminal (without, a caller sets its
/// own approver or calls are refused).
fn with_policy(
    context: &Context,
    loaded: &LoadedConfig,
    runnable: Vec<ServerConfig>,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    ui: Option<std::sync::Arc<crate::term::ui::Ui>>,
) -> HubBuilder {
    crate::policy::apply(
        builder(
            runnable,
            DEFAULT_STARTUP,
            credentials.map(Path::to_path_buf),
            max_message_size,
        ),
        context,
        loaded,
        ui,
    )
}

/// The hub `builder` makes, closed when the command ends.
fn hub_of(builder: HubBuilder, servers: &Servers) -> Result<Hub, Failure> {
    let hub = builder.build().map_err(|e| hub_failure(e, None, None))?;
    servers.hub(&hub);
    Ok(hub)
}

/// Reports each server whose listing failed (server and error, on
/// stderr). The exit code: 4 (unreachable) only when every asked server
/// failed, to start or to list; 0 when any answered, so that one broken
/// server among many does not fail a listing of the others (its warning
/// says what is missing).
pub(crate) fn listing_code(opened: &Opened, failed: &[HubError]) -> u8 {
    for error in failed {
        let mut message = error.to_string();
        let mut cause = std::error::Error::source(error);
        while let Some(inner) = cause {
            message = format!("{message}: {inner}");
            cause = inner.source();
        }
        // The error names its server and method.
        eprintln!("warning: {}", crate::term::sanitize::term(&message));
    }
    if opened.asked > 0 && opened.failed + failed.len() >= opened.asked {
        exit::UNREACHABLE
    } else {
        0
    }
}

/// `item` as JSON with a `server` field naming where it came from.
pub(crate) fn tagged(server: &str, item: &impl serde::Serialize) -> Value {
    let mut value = serde_json::to_value(item).unwrap_or(Value::Null);
    if let Some(object) = value.as_object_mut() {
        object.insert("server".into(), json!(server));
    }
    value
}

/// What `skill` shows of `server`'s skill `entry`: the skill, loaded and
/// verified; its files' URIs; with `path`, that file, read and verified.
pub(crate) async fn load_for_showing(
    hub: &Hub,
    server: &str,
    entry: &SkillEntry,
    path: Option<&str>,
) -> Result<
    (
        switchboard::Skill,
        Vec<String>,
        Option<switchboard::SkillFileContents>,
    ),
    HubError,
> {
    let skill = hub.load_skill(server, entry).await?;
    let files = hub.skill_files(server, &skill).await?;
    let contents = match path {
        Some(path) => {
            let uri = skill_file_uri(entry, path);
            Some(hub.read_skill_file(server, &skill, &uri).await?)
        }
        None => None,
    };
    Ok((skill, files, contents))
}

/// The URI of a skill's file given as a path inside the skill (or as its
/// URI already).
pub(crate) fn skill_file_uri(entry: &SkillEntry, path: &str) -> String {
    if path.contains("://") {
        return path.to_owned();
    }
    match entry.directory() {
        Some(directory) => format!("{directory}/{}", path.trim_start_matches('/')),
        None => path.to_owned(),
    }
}

/// The one skill `target` names among `skills` (server, entry, hub-wide
/// name): its URI, its hub-wide `SERVER__NAME`, or its own name when one
/// server's skill has it. Otherwise a usage error that lists the choices
/// or suggests the closest name.
pub(crate) fn pick_skill<'a>(
    skills: impl Iterator<Item = (&'a str, &'a SkillEntry, &'a str)>,
    target: &str,
) -> Result<(&'a str, &'a SkillEntry), Failure> {
    let skills: Vec<_> = skills.collect();
    let matching: Vec<_> = skills
        .iter()
        .filter(|(_, entry, wide)| {
            entry.uri == target || *wide == target || entry.name() == Some(target)
        })
        .collect();
    match matching.as_slice() {
        [(server, entry, _)] => Ok((server, entry)),
        [] => {
            let names = || skills.iter().filter_map(|(_, e, _)| e.name());
            // The closest name, else the one name that starts with it
            // (`pdf` for `pdf-processing`).
            let mut starting = names().filter(|n| n.starts_with(target));
            let prefix = match (starting.next(), starting.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            };
            let hint = match crate::suggest::closest(target, names()).or(prefix) {
                Some(near) => format!(" (did you mean `{}`?)", crate::term::sanitize::line(near)),
                None if skills.is_empty() => {
                    " (no server offers skills; `switchboard skills` lists them)".into()
                }
                None => " (`switchboard skills` lists them)".into(),
            };
            Err(Failure::usage(anyhow::anyhow!(
                "no skill named `{}`{hint}",
                crate::term::sanitize::line(target)
            )))
        }
        several => Err(Failure::usage(anyhow::anyhow!(
            "more than one server has a skill named `{}`: give one of {}",
            crate::term::sanitize::line(target),
            several
                .iter()
                .map(|(server, entry, _)| format!(
                    "`{}/{}`",
                    crate::term::sanitize::line(server),
                    crate::term::sanitize::line(entry.name().unwrap_or(target))
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The configured servers of a `tools` listing (every one, or only
/// `only`): their tools from the background session when it runs every one
/// of them as this command would (the same servers said not started as
/// without it), else started in one hub.
pub(crate) async fn open_tools(
    context: &Context,
    only: Option<&str>,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    servers: &Servers,
    session: bool,
) -> Result<Result<Vec<Value>, Opened>, Failure> {
    let (loaded, prepared) = check_all(context, only, "tools", json)?;
    #[cfg(unix)]
    if session
        && prepared.unusable.is_empty()
        && in_session(context, &prepared).await.is_some()
        && let Some(tools) = session_tools(context, only).await
    {
        return Ok(Ok(tools));
    }
    #[cfg(not(unix))]
    let _ = session;
    open_checked(
        context,
        &loaded,
        prepared,
        "tools",
        json,
        credentials,
        max_message_size,
        servers,
    )
    .await
    .map(Err)
}

/// What the background session says of every server `prepared` would
/// start (`session::ready`), when it runs every one of them ready, as this
/// command expanded it.
#[cfg(unix)]
async fn in_session(
    context: &Context,
    prepared: &Prepared,
) -> Option<BTreeMap<String, crate::session::Ready>> {
    let mut ready = BTreeMap::new();
    for server in &prepared.runnable {
        if server.enabled && server.trust.allows_start() {
            ready.insert(
                server.name.clone(),
                crate::session::ready(context, server).await?,
            );
        }
    }
    Some(ready)
}

/// What `shell` works with, besides the configuration it loaded: a client
/// of the background session when the session runs every server the shell
/// would start, as this command expanded them (none named with `__`,
/// whose gateway names could be another pair's), each server's name and
/// the state the shell would give it without starting it (disabled,
/// waiting for approval); else a hub of the shell's own, started. The
/// session's client is set up by `connect`.
pub(crate) async fn open_shell(
    context: &Context,
    only: Option<&str>,
    credentials: Option<&Path>,
    servers: &Servers,
    connect: impl Fn(switchboard::ClientBuilder) -> switchboard::ClientBuilder,
) -> Result<(LoadedConfig, ShellServers), Failure> {
    let (loaded, prepared) = check_all(context, only, "tools", false)?;
    #[cfg(unix)]
    if prepared.unusable.is_empty()
        && !prepared.runnable.iter().any(|s| s.name.contains("__"))
        && in_session(context, &prepared).await.is_some()
        && let Some(client) = crate::session::connect(context, &connect).await
    {
        servers.session(&client);
        let names = prepared
            .runnable
            .iter()
            .map(|server| {
                let state = if !server.enabled {
                    Some(ServerState::Disabled.name())
                } else if !server.trust.allows_start() {
                    Some("needs-approval")
                } else {
                    None
                };
                (server.name.clone(), state)
            })
            .collect();
        return Ok((loaded, ShellServers::Session(client, names)));
    }
    #[cfg(not(unix))]
    let _ = connect;
    let opened = open_checked(
        context,
        &loaded,
        prepared,
        "tools",
        false,
        credentials,
        None,
        servers,
    )
    .await?;
    Ok((loaded, ShellServers::Own(opened.hub)))
}

/// [`open_shell`]'s servers.
pub(crate) enum ShellServers {
    /// The shell's own hub.
    Own(Hub),
    /// The background session's gateway, and the servers the shell would
    /// start, each with the state it has without starting (`None`: the
    /// session's).
    #[cfg(unix)]
    Session(switchboard::Client, Vec<(String, Option<&'static str>)>),
}

/// The server and own name of a tool as a gateway of this crate lists it
/// (from its `_meta`).
pub(crate) fn origin(tool: &switchboard::types::Tool) -> Option<(String, String)> {
    let origin = tool.meta.as_ref()?.get(switchboard_hub::hub::ORIGIN_META)?;
    Some((
        origin.get("server")?.as_str()?.to_owned(),
        origin.get("tool")?.as_str()?.to_owned(),
    ))
}

/// The tools as the background session lists them (each with its server
/// and own name, from the gateway's `_meta`), or `None` when no session
/// runs — or it has none of `only`'s (which may be down: the caller starts
/// it and says why).
#[cfg(unix)]
async fn session_tools(context: &Context, only: Option<&str>) -> Option<Vec<Value>> {
    let session = crate::session::connect(context, |builder| builder).await?;
    let listed = session.list_tools().await;
    session.close().await;
    let tools: Vec<Value> = listed
        .ok()?
        .into_iter()
        .filter_map(|tool| {
            let (server, own) = origin(&tool)?;
            if only.is_some_and(|name| name != server) {
                return None;
            }
            let mut value = serde_json::to_value(&tool).ok()?;
            value["tool"] = json!(own);
            value["server"] = json!(server);
            if let Some(meta) = value.get_mut("_meta").and_then(Value::as_object_mut) {
                meta.remove(switchboard_hub::hub::ORIGIN_META);
                if meta.is_empty() {
                    value.as_object_mut()?.remove("_meta");
                }
            }
            Some(value)
        })
        .collect();
    if only.is_some() && tools.is_empty() {
        return None;
    }
    Some(tools)
}

/// How long `tools` and `call` give each server to start.
pub(crate) const DEFAULT_STARTUP: Duration = Duration::from_secs(30);

/// A hub error as a failed command: 3 when the server wants a login (with
/// the command to run), 4 when it is unreachable or failed, 1 for what
/// the user asked wrongly.
pub(crate) fn hub_failure(
    error: HubError,
    config: Option<&ServerConfig>,
    credentials: Option<&Path>,
) -> Failure {
    let mut stderr_tail = None;
    let code = if error.is_auth_required() {
        exit::AUTH_REQUIRED
    } else {
        match &error {
            HubError::Unavailable { state, .. } => {
                if let ServerState::Failed(f) | ServerState::Reconnecting { reason: f, .. } = state
                {
                    stderr_tail = f.stderr_tail.clone();
                }
                match state {
                    ServerState::Disabled => exit::USAGE,
                    _ => exit::UNREACHABLE,
                }
            }
            HubError::ClosedDuringCall { source, .. } => {
                stderr_tail = source.stderr_tail().map(str::to_owned);
                exit::UNREACHABLE
            }
            HubError::Call { source, .. } => {
                stderr_tail = source.stderr_tail().map(str::to_owned);
                if source.is_unreachable() || source.is_timeout() {
                    exit::UNREACHABLE
                } else {
                    exit::USAGE
                }
            }
            HubError::Request { source, .. } => {
                stderr_tail = source.stderr_tail().map(str::to_owned);
                if source.is_unreachable() || source.is_timeout() {
                    exit::UNREACHABLE
                } else if matches!(**source, switchboard::Error::Skill { .. })
                    && source.is_protocol_violation()
                {
                    // A skill served other than as listed, as for a server
                    // given after `--`.
                    exit::PROTOCOL_VIOLATION
                } else {
                    exit::USAGE
                }
            }
            HubError::RequiredFailed { .. } => exit::UNREACHABLE,
            _ => exit::USAGE,
        }
    };
    let hint = (code == exit::AUTH_REQUIRED)
        .then(|| config.and_then(remote_url))
        .flatten()
        .map(|url| format!("to log in, run: {}", login::login_command(url, credentials)));
    Failure {
        code,
        server: error.server().map(str::to_owned),
        error: anyhow::Error::new(error),
        stderr_tail,
        hint,
    }
}
