//! One configured server through a hub of its own: `call` (by
//! `SERVER/TOOL`, `SERVER__TOOL` or the hub-wide name `tools` showed),
//! `read`, `prompt`, `info` and `complete`, each answering the server and
//! showing its progress and log lines as for a server given after `--`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use serde_json::{Map, Value, json};
use switchboard::types::completion::{
    CompleteArgument, CompleteContext, CompleteRequestParams, PromptReference, Reference,
    ResourceTemplateReference,
};
use switchboard::{ClientBuilder, EraMode, RequestOptions};
use switchboard_hub::config::LoadedConfig;
use switchboard_hub::{Hub, HubError, HubTool, ServerConfig};

use super::{DEFAULT_STARTUP, builder, hub_failure, merge, prepare, source, start};
use crate::cli::{EraArg, ServerArgs};
use crate::configure::{Context, not_configured, scope_name};
use crate::direct::{answer_setup, answering};
use crate::lifecycle::Servers;
use crate::term::ui::Ui;
use crate::{failure::Failure, failure::exit, term::output};

/// `SERVER/TOOL`, or `SERVER__TOOL` for a configured server's name.
fn split_target<'a>(
    target: &'a str,
    loaded: &LoadedConfig,
    what: &str,
) -> Result<(&'a str, &'a str), Failure> {
    if let Some((server, tool)) = target.split_once('/') {
        return Ok((server, tool));
    }
    // The longest configured name that prefixes `target` with `__`
    // (server names may hold `_` themselves).
    let mut names: Vec<&str> = loaded
        .servers
        .iter()
        .map(|s| s.name.as_str())
        .chain(loaded.skipped.iter().map(|s| s.server.name.as_str()))
        .collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    for name in names {
        if let Some(tool) = target
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix("__"))
            .filter(|t| !t.is_empty())
        {
            return Ok((&target[..name.len()], tool));
        }
    }
    Err(Failure::usage(anyhow!(
        "`{target}` names no configured server's {what}: give SERVER/{upper} or the namespaced \
         SERVER__{upper} (or a server command after `--`)",
        upper = what.to_uppercase()
    )))
}

/// What a bare name or URI is looked up in.
#[derive(Clone, Copy)]
pub(crate) enum Listed<'a> {
    /// A prompt of this name.
    Prompt(&'a str),
    /// A resource of this URI.
    Resource(&'a str),
}

/// The one configured server whose listing has `listed` (every configured
/// server started and asked, as `prompts` and `resources` do). `Err(None)`
/// when none has it (the caller says what to give instead); an error
/// naming each server's form when several do.
pub(crate) async fn the_one_with(
    context: &Context,
    listed: Listed<'_>,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    servers: &Servers,
) -> Result<String, Option<Failure>> {
    let noun = match listed {
        Listed::Prompt(_) => "prompts",
        Listed::Resource(_) => "resources",
    };
    let opened = super::open_all(
        context,
        None,
        noun,
        json,
        credentials,
        max_message_size,
        servers,
    )
    .await
    .map_err(Some)?;
    let mut found: Vec<String> = match listed {
        Listed::Prompt(name) => opened
            .hub
            .prompts()
            .await
            .items
            .into_iter()
            .filter(|p| p.prompt.name == name)
            .map(|p| p.server)
            .collect(),
        Listed::Resource(uri) => opened
            .hub
            .resources()
            .await
            .items
            .into_iter()
            .filter(|r| r.resource.uri == uri)
            .map(|r| r.server)
            .collect(),
    };
    opened.hub.shutdown().await;
    found.dedup();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(None),
        _ => {
            let (what, forms) = match listed {
                Listed::Prompt(name) => (
                    format!("a prompt `{name}`"),
                    found
                        .iter()
                        .map(|s| format!("{s}/{name}"))
                        .collect::<Vec<_>>(),
                ),
                Listed::Resource(uri) => (
                    format!("the resource `{uri}`"),
                    found
                        .iter()
                        .map(|s| format!("--server {s}"))
                        .collect::<Vec<_>>(),
                ),
            };
            Err(Some(Failure::usage(anyhow!(
                "more than one server has {what}: give {}",
                forms.join(" or ")
            ))))
        }
    }
}

/// What `call` was given as the server and tool it names: `SERVER/TOOL`,
/// `SERVER__TOOL` or a hub-wide name `tools` showed, the same with the
/// `mcp__` prefix Claude Code and `tools --for anthropic` write, or a bare
/// tool name that exactly one configured server has (as the state file
/// recorded the tools). Otherwise an error that suggests the closest name.
fn resolve_tool(target: &str, loaded: &LoadedConfig) -> Result<(String, String), Failure> {
    // The state file is read once, and only when a name needs it.
    let recorded = std::cell::OnceCell::new();
    let known = || -> &[HubTool] { recorded.get_or_init(|| recorded_tools(loaded)) };
    let resolve = |target: &str| -> Result<(String, String), Failure> {
        match hub_wide(target, known) {
            Some(found) => Ok(found),
            None => split_target(target, loaded, "tool")
                .map(|(server, tool)| (server.to_owned(), tool.to_owned())),
        }
    };
    let first = match resolve(target) {
        Ok(found) => return Ok(found),
        Err(failure) => failure,
    };
    if let Some(rest) = target.strip_prefix("mcp__")
        && let Ok(found) = resolve(rest)
    {
        return Ok(found);
    }
    if target.contains('/') || target.contains("__") {
        return Err(with_suggestion(first, target, known()));
    }
    // A bare tool name: the one configured server that has it.
    let owners: Vec<&HubTool> = known().iter().filter(|t| t.tool.name == target).collect();
    match owners.as_slice() {
        [one] => Ok((one.server.clone(), one.tool.name.clone())),
        [] => Err(with_suggestion(first, target, known())),
        several => Err(Failure::usage(anyhow!(
            "`{target}` is a tool of several servers; name one: {}",
            several
                .iter()
                .map(|t| format!("`{}/{}`", t.server, t.tool.name))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The configured servers' tools as the hub's state file recorded them on
/// an earlier run (nothing is started), with the names the routes give.
fn recorded_tools(loaded: &LoadedConfig) -> Vec<HubTool> {
    Hub::builder()
        .servers(loaded.servers.iter().cloned())
        .build()
        .map(|hub| hub.tools())
        .unwrap_or_default()
}

/// `failure`, with "did you mean" the closest known tool name.
fn with_suggestion(failure: Failure, target: &str, known: &[HubTool]) -> Failure {
    let mut names: Vec<String> = known
        .iter()
        .flat_map(|t| {
            let (server, tool) = (&t.server, &t.tool.name);
            [format!("{server}/{tool}"), format!("{server}__{tool}")]
        })
        .collect();
    names.extend(known.iter().map(|t| t.tool.name.clone()));
    match crate::suggest::closest(target, names.iter().map(String::as_str)) {
        Some(near) => failure.with_hint(format!("did you mean `{near}`?")),
        None => failure,
    }
}

/// A hub-wide tool name (`server__tool`, or `server__tool_HASH` for a tool
/// whose `server__tool` another took: `HubTool::renamed_from`) as its
/// server and tool, as `tools` named it: looked up in the tools the hub's
/// state file recorded on an earlier run, so nothing is started to find
/// it, and an ambiguous `a__b__c` means what `tools` listed. A name the
/// state file does not know is read by [`split_target`].
fn hub_wide<'a>(target: &str, known: impl Fn() -> &'a [HubTool]) -> Option<(String, String)> {
    if target.contains('/') || !target.contains("__") {
        return None;
    }
    known()
        .iter()
        .find(|t| t.name == target)
        .map(|t| (t.server.clone(), t.tool.name.clone()))
}

/// One configured server started through a hub, after the checks and
/// the approval `call` asks for; with its configuration.
#[expect(
    clippy::too_many_arguments,
    reason = "the command's own settings, each used once"
)]
async fn open_one(
    context: &Context,
    server: &str,
    loaded: &mut LoadedConfig,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    customize: impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static,
    servers: &Servers,
) -> Result<(Hub, ServerConfig), Failure> {
    let one = check_one(context, server, loaded)?;
    let hub = open_checked(
        context,
        one.runnable,
        loaded,
        json,
        credentials,
        max_message_size,
        customize,
        servers,
    )
    .await?;
    Ok((hub, one.config))
}

/// A configured server a command is about to use, checked (configured,
/// enabled, approved — the approval asked for) and expanded, warnings
/// said: the same with or without the background session.
struct One {
    /// As written.
    config: ServerConfig,
    /// What the hub is given: the server expanded.
    runnable: Vec<ServerConfig>,
}

impl One {
    /// The server as expanded.
    fn expanded(&self) -> Option<&ServerConfig> {
        self.runnable.iter().find(|s| s.name == self.config.name)
    }
}

/// [`open_one`]'s checks and expansion.
fn check_one(context: &Context, server: &str, loaded: &mut LoadedConfig) -> Result<One, Failure> {
    let Some(config) = loaded.named(server) else {
        return Err(not_configured(server, loaded));
    };
    if !config.enabled {
        return Err(Failure::usage(anyhow!(
            "server `{server}` is disabled in {}; run `switchboard enable {server}` to use it",
            config.origin.file.display()
        )));
    }
    crate::approve::ask_pending(context, loaded, Some(server));
    if let Some(pending) = loaded.needs_approval().find(|s| s.name == server) {
        return Err(Failure::usage(anyhow!(
            "server `{}` is not started: {}",
            crate::approve::clean(server),
            crate::approve::pending_reason(pending)
        )));
    }
    let Some(config) = loaded.get(server).cloned() else {
        return Err(not_configured(server, loaded));
    };
    let prepared = prepare(context, loaded, Some(server));
    if let Some(why) = prepared.unusable.get(server) {
        return Err(Failure::usage(anyhow!("{why}")));
    }
    Ok(One {
        config,
        runnable: prepared.runnable,
    })
}

/// [`open_one`]'s hub, of the server [`check_one`] expanded.
#[expect(
    clippy::too_many_arguments,
    reason = "the command's own settings, each used once"
)]
async fn open_checked(
    context: &Context,
    runnable: Vec<ServerConfig>,
    loaded: &LoadedConfig,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    customize: impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static,
    servers: &Servers,
) -> Result<Hub, Failure> {
    let hub = crate::policy::apply(
        builder(
            runnable,
            DEFAULT_STARTUP,
            credentials.map(Path::to_path_buf),
            max_message_size,
        ),
        context,
        loaded,
        None,
    )
    .client(customize)
    .build()
    .map_err(|e| hub_failure(e, None, None))?;
    servers.hub(&hub);
    start(&hub, json).await;
    Ok(hub)
}

/// How a command on one configured server answers it and shows what it
/// says: the hub's client setup (forms, sampling, roots, `--log-level`,
/// `--timeout`, `--era`), the terminal for progress and log lines, and
/// `--server-logs`.
pub(crate) struct Answer<F> {
    pub(crate) customize: F,
    pub(crate) ui: Arc<Ui>,
    pub(crate) server_logs: bool,
}

/// Runs `work` on `server` while its progress and log lines are shown on
/// `ui`, as for a server given after `--`. The one place that knows where
/// a configured server's notifications come from: its live client's event
/// stream, not the hub's events (`HubEvent::Server`), which pass through
/// the server's supervisor task and may come after the answer, so the last
/// lines would be lost. Those of a connection that replaces it
/// mid-request are not shown.
async fn with_server_events<T>(
    hub: &Hub,
    server: &str,
    ui: &Ui,
    work: impl std::future::Future<Output = T>,
) -> T {
    match hub.client(server) {
        Ok(client) => crate::direct::with_events(&client, ui, work).await,
        // Not ready: `work` fails at once, saying why.
        Err(_) => work.await,
    }
}

/// Shuts the hub down; with `--server-logs`, then shows what `server`
/// wrote to stderr (its last connection's).
async fn close(hub: &Hub, server: &str, server_logs: bool) {
    let client = server_logs.then(|| hub.client(server).ok()).flatten();
    // Closed first: the server's last words are in the buffer only once it
    // has exited and its stderr has been read to the end.
    hub.shutdown().await;
    if let Some(client) = client {
        crate::direct::show_stderr(&client);
    }
}

/// A client of the background session (`switchboard up`) for a command on
/// the configured server `one` (checked and expanded as without a
/// session), when the session runs that very server, ready (and, given a
/// `tool`, lists it: `session::serves`), answering the server as this
/// command would and naming it in messages. Not for a server whose name
/// holds `__` (its gateway names could be another pair's). Otherwise the
/// command starts the server itself, and says what it says without a
/// session.
#[cfg(unix)]
async fn through_session(
    context: &Context,
    one: &One,
    needs: crate::session::Needs<'_>,
    customize: &(impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static),
) -> Option<switchboard::Client> {
    let name = one.config.name.as_str();
    let expanded = one.expanded()?;
    if name.contains("__") || !crate::session::serves(context, expanded, needs).await {
        return None;
    }
    crate::session::connect(context, |builder| customize(expanded, builder).name(name)).await
}

/// `call SERVER/TOOL [JSON]` on a configured server.
#[expect(
    clippy::too_many_arguments,
    reason = "the command's own settings, each used once"
)]
pub(crate) async fn call(
    context: &Context,
    target: &str,
    arguments: Map<String, Value>,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    answer: Answer<impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static>,
    servers: &Servers,
) -> Result<u8, Failure> {
    let mut loaded = context.load(json);
    let (server, tool) = resolve_tool(target, &loaded)?;
    // The background session (`switchboard up`) has the server connected
    // already: the call goes through it. Names with `__` are left to a
    // hub of our own, where they cannot be mistaken for another pair's.
    // So is a call the tool policy denies or asks about: refused or asked
    // here, with the same words and exit code whether a session runs or
    // not (the gateway could only answer an error result).
    let one = check_one(context, &server, &mut loaded)?;
    #[cfg(unix)]
    if !tool.contains("__")
        && loaded.policy.tools.decide(&server, &tool)
            == switchboard_hub::config::policy::ToolDecision::Allow
        && let Some(session) = through_session(
            context,
            &one,
            crate::session::Needs::Tool(&tool),
            &answer.customize,
        )
        .await
    {
        servers.session(&session);
        let started = Instant::now();
        let params = switchboard::types::CallToolRequestParams {
            name: switchboard_hub::hub::namespaced(&server, &tool),
            arguments: Some(arguments),
            ..Default::default()
        };
        let options = RequestOptions::default().on_progress(|_| {});
        let result = crate::direct::with_events(
            &session,
            &answer.ui,
            session.call_tool_with(&params, options),
        )
        .await;
        let elapsed = started.elapsed();
        session.close().await;
        // The backend's JSON-RPC error, which the gateway made an error
        // result of (for a model to read), fails the command as it does
        // without a session.
        let result = result.and_then(|result| match backends_error(&result) {
            Some(error) => Err(switchboard::Error::Server {
                server: server.as_str().into(),
                method: "tools/call".to_owned(),
                error: Box::new(error),
            }),
            None => Ok(result),
        });
        let result = result.map_err(|source| {
            let error = HubError::Call {
                server: server.clone(),
                tool: tool.clone(),
                source: Box::new(source),
            };
            hub_failure(error, Some(&one.config), credentials)
        })?;
        return Ok(print_call(&result, json, elapsed));
    }
    let config = one.config;
    let hub = open_checked(
        context,
        one.runnable,
        &loaded,
        json,
        credentials,
        max_message_size,
        answer.customize,
        servers,
    )
    .await?;
    let started = Instant::now();
    // The callback only asks for a progress token: progress is shown from
    // the event stream, in order with the log lines.
    let options = RequestOptions::default().on_progress(|_| {});
    let result = with_server_events(
        &hub,
        &server,
        &answer.ui,
        // An `ask` of the tool policy is put to the user on the terminal.
        hub.call_asking(
            &server,
            &tool,
            Some(arguments),
            options,
            Some(crate::policy::terminal_approver(answer.ui.clone())),
        ),
    )
    .await;
    let elapsed = started.elapsed();
    // The server's tools, for "did you mean" when it has no such tool.
    let listed: Vec<String> = hub
        .tools()
        .into_iter()
        .filter(|t| t.server == server)
        .map(|t| t.tool.name)
        .collect();
    close(&hub, &server, answer.server_logs).await;
    let result = result.map_err(|e| {
        let failure = hub_failure(e, Some(&config), credentials);
        if listed.is_empty() || listed.contains(&tool) {
            return failure;
        }
        match crate::suggest::closest(&tool, listed.iter().map(String::as_str)) {
            Some(near) => failure.with_hint(format!(
                "`{server}` has no tool `{tool}`; did you mean `{server}/{near}`?"
            )),
            None => failure.with_hint(format!(
                "`{server}` has no tool `{tool}`; its tools: {}",
                listed.join(", ")
            )),
        }
    })?;
    Ok(print_call(&result, json, elapsed))
}

/// The backend's JSON-RPC error a gateway's error result carries
/// (`BACKEND_ERROR_META`).
#[cfg(unix)]
fn backends_error(
    result: &switchboard::types::CallToolResult,
) -> Option<switchboard::types::jsonrpc::ErrorObject> {
    if result.is_error != Some(true) {
        return None;
    }
    let object = result
        .meta
        .as_ref()?
        .get(switchboard_hub::hub::BACKEND_ERROR_META)?;
    serde_json::from_value(object.clone()).ok()
}

/// Prints a call's result; the exit code it makes.
fn print_call(
    result: &switchboard::types::CallToolResult,
    json: bool,
    elapsed: std::time::Duration,
) -> u8 {
    if json {
        output::print_json(&serde_json::to_value(result).unwrap_or(Value::Null));
    } else {
        output::print_call_result(result, elapsed);
    }
    if result.is_error == Some(true) {
        exit::TOOL_ERROR
    } else {
        0
    }
}

/// `read URI --server NAME` on a configured server, printed as for a
/// server given after `--`.
#[expect(
    clippy::too_many_arguments,
    reason = "the command's own settings, each used once"
)]
pub(crate) async fn read(
    context: &Context,
    server: &str,
    uri: &str,
    json: bool,
    to: Option<&Path>,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    answer: Answer<impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static>,
    servers: &Servers,
) -> Result<u8, Failure> {
    let mut loaded = context.load(json);
    // Through the background session when it runs, as `call`: the
    // gateway's URI for it, and the server's URIs back in the answer.
    let one = check_one(context, server, &mut loaded)?;
    #[cfg(unix)]
    if let Some(session) = through_session(
        context,
        &one,
        crate::session::Needs::Server,
        &answer.customize,
    )
    .await
    {
        servers.session(&session);
        use switchboard_hub::hub::{resource_origin, resource_uri, skill_origin, skill_uri};
        let gateway = skill_uri(server, uri).unwrap_or_else(|| resource_uri(server, uri));
        let result =
            crate::direct::with_events(&session, &answer.ui, session.read_resource(gateway)).await;
        session.close().await;
        let mut result = result.map_err(|source| {
            let error = HubError::Request {
                server: server.to_owned(),
                method: "resources/read",
                source: Box::new(source),
            };
            hub_failure(error, Some(&one.config), credentials)
        })?;
        for contents in &mut result.contents {
            let uri = match contents {
                switchboard::types::ResourceContents::Text(c) => &mut c.uri,
                switchboard::types::ResourceContents::Blob(c) => &mut c.uri,
            };
            if let Some((_, original)) = skill_origin(uri).or_else(|| resource_origin(uri)) {
                *uri = original;
            }
        }
        output::emit_read_result(&result, json, to).map_err(Failure::usage)?;
        return Ok(0);
    }
    let config = one.config;
    let hub = open_checked(
        context,
        one.runnable,
        &loaded,
        json,
        credentials,
        max_message_size,
        answer.customize,
        servers,
    )
    .await?;
    let result = with_server_events(&hub, server, &answer.ui, hub.read_resource(server, uri)).await;
    close(&hub, server, answer.server_logs).await;
    let result = result.map_err(|e| hub_failure(e, Some(&config), credentials))?;
    output::emit_read_result(&result, json, to).map_err(Failure::usage)?;
    Ok(0)
}

fn print_prompt(result: &switchboard::types::GetPromptResult, json: bool) {
    if json {
        output::print_json(&serde_json::to_value(result).unwrap_or(Value::Null));
    } else {
        output::print_prompt_result(result);
    }
}

/// `prompt NAME --server SERVER`, `prompt SERVER/NAME` or `prompt
/// SERVER__NAME` on a configured server, printed as for a server given
/// after `--`.
#[expect(
    clippy::too_many_arguments,
    reason = "the command's own settings, each used once"
)]
pub(crate) async fn prompt(
    context: &Context,
    only: Option<&str>,
    target: &str,
    arguments: BTreeMap<String, String>,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    answer: Answer<impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static>,
    servers: &Servers,
) -> Result<u8, Failure> {
    let mut loaded = context.load(json);
    let (server, name) = match only {
        Some(server) => (server.to_owned(), target.to_owned()),
        None => match split_target(target, &loaded, "prompt") {
            Ok((server, name)) => (server.to_owned(), name.to_owned()),
            // A bare name: the one server that has that prompt.
            Err(failure) if !target.contains('/') => {
                let found = the_one_with(
                    context,
                    Listed::Prompt(target),
                    json,
                    credentials,
                    max_message_size,
                    servers,
                )
                .await
                .map_err(|why| why.unwrap_or(failure))?;
                (found, target.to_owned())
            }
            Err(failure) => return Err(failure),
        },
    };
    // Through the background session when it runs, as `call`.
    let one = check_one(context, &server, &mut loaded)?;
    #[cfg(unix)]
    if !name.contains("__")
        && let Some(session) = through_session(
            context,
            &one,
            crate::session::Needs::Prompt(&name),
            &answer.customize,
        )
        .await
    {
        servers.session(&session);
        let gateway = switchboard_hub::hub::namespaced(&server, &name);
        let result = crate::direct::with_events(
            &session,
            &answer.ui,
            session.get_prompt(gateway, Some(arguments)),
        )
        .await;
        session.close().await;
        let result = result.map_err(|source| {
            let error = HubError::Request {
                server: server.clone(),
                method: "prompts/get",
                source: Box::new(source),
            };
            hub_failure(error, Some(&one.config), credentials)
        })?;
        print_prompt(&result, json);
        return Ok(0);
    }
    let config = one.config;
    let hub = open_checked(
        context,
        one.runnable,
        &loaded,
        json,
        credentials,
        max_message_size,
        answer.customize,
        servers,
    )
    .await?;
    let result = with_server_events(
        &hub,
        &server,
        &answer.ui,
        hub.get_prompt(&server, name, Some(arguments)),
    )
    .await;
    close(&hub, &server, answer.server_logs).await;
    let result = result.map_err(|e| hub_failure(e, Some(&config), credentials))?;
    print_prompt(&result, json);
    Ok(0)
}

/// `info NAME` (or `--server NAME`): a configured server's state, then its
/// session as `info` shows one given after `--`. A server that did not get
/// ready fails the command with its state and why (exit 3 or 4).
pub(crate) async fn info(
    context: &Context,
    server: &str,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    answer: Answer<impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static>,
    servers: &Servers,
) -> Result<u8, Failure> {
    let mut loaded = context.load(json);
    let (hub, config) = open_one(
        context,
        server,
        &mut loaded,
        json,
        credentials,
        max_message_size,
        answer.customize,
        servers,
    )
    .await?;
    let client = hub.client(server);
    let status = hub.status(server);
    close(&hub, server, answer.server_logs).await;
    let client = client.map_err(|e| hub_failure(e, Some(&config), credentials))?;
    let state = status.map_or_else(|_| "ready".to_owned(), |s| s.state.name().to_owned());
    let origin = format!(
        "{} ({})",
        config.origin.file.display(),
        scope_name(config.origin.scope)
    );
    if json {
        let mut info = crate::term::output::info_json(&client, Duration::ZERO);
        if let Some(object) = info.as_object_mut() {
            object.remove("connectMs");
        }
        info["state"] = json!(state);
        merge(&mut info, source(&config));
        output::print_json(&info);
    } else {
        output::print_server_info(&state, &origin, &client);
    }
    Ok(0)
}

/// What `complete` asks: an argument of a prompt or of a resource
/// template, what is typed so far, and the arguments already given.
pub(crate) struct Completion<'a> {
    /// The prompt (`SERVER/NAME`, `SERVER__NAME` or its own name), or the
    /// URI template.
    pub(crate) target: &'a str,
    pub(crate) resource: bool,
    pub(crate) argument: &'a str,
    pub(crate) partial: &'a str,
    pub(crate) context: BTreeMap<String, String>,
}

impl Completion<'_> {
    /// The request, for the prompt or template `name` (its server's own).
    pub(crate) fn params(&self, name: &str) -> CompleteRequestParams {
        let reference = if self.resource {
            Reference::Resource(ResourceTemplateReference {
                uri: name.to_owned(),
                ..Default::default()
            })
        } else {
            Reference::Prompt(PromptReference {
                name: name.to_owned(),
                ..Default::default()
            })
        };
        CompleteRequestParams {
            r#ref: reference,
            argument: CompleteArgument {
                name: self.argument.to_owned(),
                value: self.partial.to_owned(),
            },
            context: (!self.context.is_empty()).then(|| CompleteContext {
                arguments: Some(self.context.clone()),
            }),
            meta: None,
        }
    }
}

/// `complete` on a configured server: `--server NAME`, or a prompt named
/// `SERVER/NAME` or `SERVER__NAME` (a URI template needs `--server`).
#[expect(
    clippy::too_many_arguments,
    reason = "the command's own settings, each used once"
)]
pub(crate) async fn complete(
    context: &Context,
    only: Option<&str>,
    completion: &Completion<'_>,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    answer: Answer<impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static>,
    servers: &Servers,
) -> Result<u8, Failure> {
    let mut loaded = context.load(json);
    let (server, name) = match only {
        Some(server) => (server.to_owned(), completion.target.to_owned()),
        None if completion.resource => {
            return Err(Failure::usage(anyhow!(
                "`complete --resource` on a configured server needs the server: give --server \
                 NAME (or a server command after `--`, or --url)"
            )));
        }
        None => {
            let (server, name) = split_target(completion.target, &loaded, "prompt")?;
            (server.to_owned(), name.to_owned())
        }
    };
    let (hub, config) = open_one(
        context,
        &server,
        &mut loaded,
        json,
        credentials,
        max_message_size,
        answer.customize,
        servers,
    )
    .await?;
    let params = completion.params(&name);
    let result =
        with_server_events(&hub, &server, &answer.ui, hub.complete(&server, &params)).await;
    close(&hub, &server, answer.server_logs).await;
    let result = result.map_err(|e| hub_failure(e, Some(&config), credentials))?;
    output::print_completion(&result, json);
    Ok(0)
}

/// How the hub's clients for `call`, `read`, `prompt`, `info` and
/// `complete` are set up: answering the server as for a server given after
/// `--`; `--timeout` and `--era` where the configuration does not say; and
/// the terminal that shows what the server says.
pub(crate) fn client_setup(
    server: &ServerArgs,
) -> Result<
    Answer<
        impl Fn(
            &switchboard_hub::ServerConfig,
            switchboard::ClientBuilder,
        ) -> switchboard::ClientBuilder
        + Send
        + Sync
        + 'static,
    >,
    Failure,
> {
    let (timeout, ui, roots) = answer_setup(server)?;
    let shown = ui.clone();
    let server_logs = server.server_logs;
    let server = server.clone();
    let customize = move |config: &switchboard_hub::ServerConfig, builder| {
        let mut builder = answering(builder, &server, &ui, roots.as_ref());
        if config.request_timeout.is_none() {
            builder = builder.request_timeout(timeout);
        }
        match server.era {
            EraArg::Auto => builder,
            EraArg::Modern => builder.era_mode(EraMode::Modern),
            EraArg::Legacy => builder.era_mode(EraMode::Legacy),
        }
    };
    Ok(Answer {
        customize,
        ui: shown,
        server_logs,
    })
}
#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_hub::{Dialect, Origin, Scope, TransportConfig};

    fn configured(names: &[&str]) -> LoadedConfig {
        let mut loaded = LoadedConfig::default();
        for name in names {
            loaded.servers.push(ServerConfig::new(
                *name,
                TransportConfig::Stdio {
                    command: "true".into(),
                    args: vec![],
                    env: Default::default(),
                    cwd: None,
                },
                Origin {
                    file: "switchboard.toml".into(),
                    dialect: Dialect::Switchboard,
                    scope: Scope::User,
                },
            ));
        }
        loaded
    }

    #[test]
    fn namespaced_names_pick_the_longest_configured_server() {
        let loaded = configured(&["a", "a__b", "my_server"]);
        let split = |t| split_target(t, &loaded, "tool").ok();
        assert_eq!(split("a__b__c"), Some(("a__b", "c")));
        assert_eq!(split("a__echo"), Some(("a", "echo")));
        assert_eq!(
            split("my_server__read_file"),
            Some(("my_server", "read_file"))
        );
        assert_eq!(split("x/y__z"), Some(("x", "y__z")));
        assert_eq!(split("a__"), None);
        assert_eq!(split("other__echo"), None);
        assert_eq!(split("echo"), None);
    }
}
