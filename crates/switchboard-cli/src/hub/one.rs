//! One configured server, for a command that works with it (`reach.rs`):
//! which server a name given to `call`, `prompt`, `read` or `complete`
//! means (`SERVER/TOOL`, `SERVER__TOOL`, a hub-wide name `tools` showed, or
//! the one server that lists it), the checks before it is used (configured,
//! enabled, approved), and its hub of its own or its client through the
//! background session.

use std::path::Path;
use std::sync::Arc;

use anyhow::anyhow;
use switchboard::{ClientBuilder, EraMode};
use switchboard_hub::config::LoadedConfig;
use switchboard_hub::{Hub, HubTool, ServerConfig};

use super::{hub_failure, prepare, start};
use crate::cli::{EraArg, ServerArgs};
use crate::configure::{Context, not_configured};
use crate::direct::{answer_setup, answering};
use crate::failure::Failure;
use crate::lifecycle::Servers;
use crate::term::ui::Ui;

/// `SERVER/TOOL`, or `SERVER__TOOL` for a configured server's name.
pub(crate) fn split_target<'a>(
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
pub(crate) fn resolve_tool(
    target: &str,
    loaded: &LoadedConfig,
) -> Result<(String, String), Failure> {
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

/// A configured server a command is about to use, checked (configured,
/// enabled, approved — the approval asked for) and expanded, warnings
/// said: the same with or without the background session.
pub(crate) struct One {
    /// As written.
    pub(crate) config: ServerConfig,
    /// What the hub is given: the server expanded.
    pub(crate) runnable: Vec<ServerConfig>,
}

impl One {
    /// The server as expanded.
    fn expanded(&self) -> Option<&ServerConfig> {
        self.runnable.iter().find(|s| s.name == self.config.name)
    }
}

/// The checks and expansion before a configured server is used (by
/// [`open_one`] or [`through_session`]).
pub(crate) fn check_one(
    context: &Context,
    server: &str,
    loaded: &mut LoadedConfig,
) -> Result<One, Failure> {
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

/// A hub of the command's own, of the server [`check_one`] expanded,
/// started.
#[expect(
    clippy::too_many_arguments,
    reason = "the command's own settings, each used once"
)]
pub(crate) async fn open_one(
    context: &Context,
    runnable: Vec<ServerConfig>,
    loaded: &LoadedConfig,
    json: bool,
    credentials: Option<&Path>,
    max_message_size: Option<usize>,
    customize: impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static,
    servers: &Servers,
) -> Result<Hub, Failure> {
    let hub = super::with_policy(
        context,
        loaded,
        runnable,
        credentials,
        max_message_size,
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

/// A client of the background session (`switchboard up`) for a command on
/// the configured server `one` (checked and expanded as without a
/// session), when the session runs that very server, ready (and, given a
/// `tool`, lists it: `session::serves`), answering the server as this
/// command would and naming it in messages. Not for a server whose name
/// holds `__` (its gateway names could be another pair's). Otherwise the
/// command starts the server itself, and says what it says without a
/// session.
#[cfg(unix)]
pub(crate) async fn through_session(
    context: &Context,
    one: &One,
    needs: crate::session::Needs<'_>,
    customize: &(impl Fn(&ServerConfig, ClientBuilder) -> ClientBuilder + Send + Sync + 'static),
) -> Option<(switchboard::Client, crate::session::Serving)> {
    let name = one.config.name.as_str();
    let expanded = one.expanded()?;
    if name.contains("__") {
        return None;
    }
    let serving = crate::session::serves(context, expanded, needs).await?;
    let client =
        crate::session::connect(context, |builder| customize(expanded, builder).name(name)).await?;
    Some((client, serving))
}

/// How the hub's clients for `call`, `read`, `prompt`, `info` and
/// `complete` are set up: answering the server as for a server given after
/// `--`; `--timeout` and `--era` where the configuration does not say; and
/// the terminal that shows what the server says.
pub(crate) fn client_setup(
    server: &ServerArgs,
    sampling: Option<switchboard_hub::config::SamplingSettings>,
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
        let mut builder = answering(
            builder,
            &server,
            &ui,
            roots.as_ref(),
            sampling.as_ref(),
            Some(&config.sampling),
        );
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
