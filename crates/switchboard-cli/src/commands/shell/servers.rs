//! What the shell works with: one client of a gateway over the servers —
//! the background session's (`switchboard up`) when it runs every one of
//! them as the shell would start it, else a gateway in this process over
//! a hub of the shell's own — so each shell command is written once and
//! says the same whichever it is. Only the servers' states and what they
//! say between commands come from where the servers run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use switchboard::events::ListKind;
use switchboard::types::{
    CallToolRequestParams, CallToolResult, GetPromptResult, Implementation, ReadResourceResult,
    SkillEntry, SkillFiles, Tool,
};
use switchboard::{Client, Event, RequestOptions};
use switchboard_hub::config::policy::{ToolDecision, ToolPolicy};
use switchboard_hub::hub::{namespaced, skill_origin};
use switchboard_hub::{Hub, HubError, HubEvent, HubServer};
use tokio::sync::mpsc;

use crate::configure::Context;
use crate::failure::{Failure, chain};
use crate::hub::{self, ShellServers};
use crate::reach::{gateway_uri, own_read, own_uri, through_gateway};
use crate::term::ask::TerminalElicitation;
use crate::term::sanitize;
use crate::term::ui::Ui;

/// A tool as the shell shows and calls it.
pub(super) struct ShellTool {
    /// The gateway's name for it (`SERVER__TOOL`).
    pub(super) name: String,
    pub(super) server: String,
    /// As its server describes it (its own name).
    pub(super) tool: Tool,
}

/// A skill as the shell lists it: its server, its entry as the gateway
/// lists it (what loading it takes), and its gateway name.
pub(super) struct ShellSkill {
    pub(super) server: String,
    pub(super) entry: SkillEntry,
    pub(super) name: String,
}

/// The servers of one shell.
pub(super) struct Servers {
    client: Client,
    way: Way,
    policy: ToolPolicy,
    only: Option<String>,
    /// The server whose call runs, whose log lines the gateway forwards
    /// (a log line names no server).
    calling: Arc<Mutex<Option<String>>>,
    /// The states last shown, for saying what changed.
    states: Mutex<BTreeMap<String, String>>,
}

enum Way {
    /// A hub of the shell's own.
    Own(Hub),
    /// The background session's, with the servers the shell would start
    /// and each one's state when it is not the session's to say.
    #[cfg(unix)]
    Session(Context, Vec<(String, Option<&'static str>)>),
}

impl Servers {
    /// The configured servers (`only` one of them): the session's when it
    /// runs them all as this command expanded them, else started here.
    pub(super) async fn open(
        context: &Context,
        only: Option<&str>,
        credentials: Option<&std::path::Path>,
        lifecycle: &crate::lifecycle::Servers,
    ) -> Result<Self, Failure> {
        // What the servers ask (a form, a page to open, a tool the policy
        // asks about) is asked on the terminal.
        let ui = Ui::new(false, false);
        let connect = move |builder: switchboard::ClientBuilder| {
            builder
                .name("switchboard shell")
                .elicitation(TerminalElicitation { ui: ui.clone() })
                // Log lines as the servers send them unasked.
                .log_level(switchboard::types::LoggingLevel::Info)
        };
        let (loaded, servers) =
            hub::open_shell(context, only, credentials, lifecycle, &connect).await?;
        let (client, way) = match servers {
            ShellServers::Own(hub) => {
                let info = Implementation::new("switchboard", env!("CARGO_PKG_VERSION"));
                let client = HubServer::new(hub.clone(), info)
                    .connect(connect(Client::builder()))
                    .await
                    .map_err(|e| Failure::usage(anyhow::anyhow!("the shell's gateway: {e}")))?;
                (client, Way::Own(hub))
            }
            #[cfg(unix)]
            ShellServers::Session(client, names) => (client, Way::Session(context.clone(), names)),
        };
        let servers = Self {
            client,
            way,
            policy: loaded.policy.tools,
            only: only.map(str::to_owned),
            calling: Arc::default(),
            states: Mutex::default(),
        };
        *servers.states.lock().unwrap_or_else(|e| e.into_inner()) =
            servers.states().into_iter().collect();
        Ok(servers)
    }

    /// Where the servers run, for the greeting.
    pub(super) fn whose(&self) -> &'static str {
        match self.way {
            Way::Own(_) => "",
            #[cfg(unix)]
            Way::Session(..) => " (the background session's servers)",
        }
    }

    /// The tools, as the gateway lists them now.
    pub(super) async fn tools(&self) -> Result<Vec<ShellTool>, String> {
        let listed = self
            .client
            .list_tools()
            .await
            .map_err(|e| format!("listing the tools failed: {}", chain(&e)))?;
        Ok(listed
            .into_iter()
            .filter_map(|mut tool| {
                let (server, own) = hub::origin(&tool)?;
                if self.only.as_ref().is_some_and(|only| *only != server) {
                    return None;
                }
                let name = std::mem::replace(&mut tool.name, own);
                if let Some(meta) = &mut tool.meta {
                    meta.remove(switchboard_hub::hub::ORIGIN_META);
                    if meta.is_empty() {
                        tool.meta = None;
                    }
                }
                Some(ShellTool { name, server, tool })
            })
            .collect())
    }

    /// Each server and its state.
    pub(super) fn states(&self) -> Vec<(String, String)> {
        match &self.way {
            Way::Own(hub) => hub
                .list()
                .into_iter()
                .map(|s| (s.name, s.state.name().to_owned()))
                .collect(),
            #[cfg(unix)]
            Way::Session(context, names) => {
                let mut states = crate::session::states(context);
                names
                    .iter()
                    .map(|(name, fixed)| {
                        let state = match fixed {
                            Some(state) => (*state).to_owned(),
                            None => states.remove(name).unwrap_or_else(|| "stopped".to_owned()),
                        };
                        (name.clone(), state)
                    })
                    .collect()
            }
        }
    }

    /// What the tool policy says of `server`'s tool `tool`.
    pub(super) fn decide(&self, server: &str, tool: &str) -> ToolDecision {
        self.policy.decide(server, tool)
    }

    /// Whether `server` is one of the shell's; else the error to print.
    fn known(&self, server: &str) -> Result<(), String> {
        let states = self.states();
        if states.iter().any(|(name, _)| name == server) {
            return Ok(());
        }
        let names = states.iter().map(|(name, _)| name.as_str());
        Err(match crate::suggest::closest(server, names) {
            Some(near) => format!("no server `{server}`; did you mean `{near}`?"),
            None => format!("no server `{server}`; `servers` lists them"),
        })
    }

    /// Calls `tool` (its result; an `isError` result is a result).
    pub(super) async fn call(
        &self,
        tool: &ShellTool,
        arguments: Map<String, Value>,
        options: RequestOptions,
    ) -> Result<CallToolResult, String> {
        let params = CallToolRequestParams {
            name: tool.name.clone(),
            arguments: Some(arguments),
            ..Default::default()
        };
        *self.calling.lock().unwrap_or_else(|e| e.into_inner()) = Some(tool.server.clone());
        let result = self.client.call_tool_with(&params, options).await;
        *self.calling.lock().unwrap_or_else(|e| e.into_inner()) = None;
        through_gateway(&tool.server, result).map_err(|source| {
            chain(&HubError::Call {
                server: tool.server.clone(),
                tool: tool.tool.name.clone(),
                source: Box::new(servers_error(&tool.server, source)),
            })
        })
    }

    /// Reads `server`'s resource `uri`.
    pub(super) async fn read(&self, server: &str, uri: &str) -> Result<ReadResourceResult, String> {
        self.known(server)?;
        let read = self.client.read_resource(gateway_uri(server, uri)).await;
        read.map(own_read)
            .map_err(|e| request_failure(server, "resources/read", e))
    }

    /// Gets `server`'s prompt `name`.
    pub(super) async fn prompt(
        &self,
        server: &str,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, String> {
        self.known(server)?;
        let get = self
            .client
            .get_prompt(namespaced(server, name), Some(arguments));
        get.await
            .map_err(|e| request_failure(server, "prompts/get", e))
    }

    /// The skills (none of them read).
    pub(super) async fn skills(&self) -> Result<Vec<ShellSkill>, String> {
        if !self.client.offers_skills() {
            return Ok(Vec::new());
        }
        let entries = self
            .client
            .list_skills()
            .await
            .map_err(|e| format!("listing the skills failed: {}", chain(&e)))?;
        Ok(entries
            .into_iter()
            .filter_map(|entry| {
                let (server, _) = skill_origin(&entry.uri)?;
                if self.only.as_ref().is_some_and(|only| *only != server) {
                    return None;
                }
                let name = namespaced(&server, entry.name().unwrap_or_default());
                Some(ShellSkill {
                    server,
                    entry,
                    name,
                })
            })
            .collect())
    }

    /// `skill`, loaded and verified; its files' URIs; with `path` (inside
    /// the skill, or the server's URI of it), that file — all with the
    /// server's own URIs.
    pub(super) async fn load_skill(
        &self,
        skill: &ShellSkill,
        path: Option<&str>,
    ) -> Result<
        (
            switchboard::Skill,
            Vec<String>,
            Option<switchboard::SkillFileContents>,
        ),
        String,
    > {
        let failed = |e| request_failure(&skill.server, "resources/read", e);
        let loaded = self.client.load_skill(&skill.entry).await.map_err(failed)?;
        let files = self.client.skill_files(&loaded).await.map_err(failed)?;
        let contents = match path {
            Some(path) => {
                let uri = if path.contains("://") {
                    gateway_uri(&skill.server, path)
                } else {
                    hub::skill_file_uri(&skill.entry, path)
                };
                let mut file = self
                    .client
                    .read_skill_file(&loaded, &uri)
                    .await
                    .map_err(failed)?;
                file.uri = own_uri(&file.uri);
                Some(file)
            }
            None => None,
        };
        let files = files.iter().map(|uri| own_uri(uri)).collect();
        Ok((loaded, files, contents))
    }

    /// What the servers say as it comes, a line at a time: log lines,
    /// changed tool lists and (of the shell's own servers) changed states.
    pub(super) fn lines(&self) -> mpsc::UnboundedReceiver<String> {
        let (tell, lines) = mpsc::unbounded_channel();
        match &self.way {
            Way::Own(hub) => {
                let mut events = hub.events();
                tokio::spawn(async move {
                    while let Some(event) = events.next().await {
                        let line = match event {
                            HubEvent::Server {
                                server,
                                event: Event::Log(log),
                            } => log_line(&server, &log),
                            HubEvent::ToolsChanged { server, count, .. } => {
                                tools_changed(&server, count)
                            }
                            _ => continue,
                        };
                        if tell.send(line).is_err() {
                            return;
                        }
                    }
                });
            }
            #[cfg(unix)]
            Way::Session(..) => {
                let mut events = self.client.events();
                let (client, calling) = (self.client.clone(), self.calling.clone());
                tokio::spawn(async move {
                    let mut counts = tool_counts(&client).await;
                    while let Some(event) = events.next().await {
                        let lines = match event {
                            Event::Log(log) => {
                                let server = calling
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .clone()
                                    .or_else(|| log.logger.clone())
                                    .unwrap_or_else(|| "session".to_owned());
                                vec![log_line(&server, &log)]
                            }
                            Event::ListChanged(ListKind::Tools) => {
                                let now = tool_counts(&client).await;
                                let changed = now
                                    .iter()
                                    .filter(|(server, count)| counts.get(*server) != Some(count))
                                    .map(|(server, count)| tools_changed(server, *count))
                                    .collect();
                                counts = now;
                                changed
                            }
                            Event::Closed(_) => return,
                            _ => continue,
                        };
                        for line in lines {
                            if tell.send(line).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        }
        lines
    }

    /// A line for each server whose state changed since the last call.
    pub(super) fn changed_states(&self) -> Vec<String> {
        let now: BTreeMap<String, String> = self.states().into_iter().collect();
        let mut last = self.states.lock().unwrap_or_else(|e| e.into_inner());
        let lines = now
            .iter()
            .filter(|(server, state)| last.get(*server) != Some(state))
            .map(|(server, state)| sanitize::term(&format!("[{server}] {state}")).into_owned())
            .collect();
        *last = now;
        lines
    }

    /// Closes the connection (the shell's own servers are stopped as the
    /// command ends).
    pub(super) async fn close(self) {
        self.client.close().await;
    }
}

/// A failed request of `server`'s, worded as a hub words it.
fn request_failure(server: &str, method: &'static str, source: switchboard::Error) -> String {
    chain(&HubError::Request {
        server: server.to_owned(),
        method,
        source: Box::new(servers_error(server, source)),
    })
}

/// The gateway's answer of `server`'s error, as `server`'s own: the
/// server named, not the gateway.
fn servers_error(server: &str, error: switchboard::Error) -> switchboard::Error {
    match error {
        switchboard::Error::Server { method, error, .. } => switchboard::Error::Server {
            server: server.into(),
            method,
            error,
        },
        other => other,
    }
}

fn log_line(server: &str, log: &switchboard::types::LoggingMessageNotificationParams) -> String {
    let data = match &log.data {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    sanitize::term(&format!("[{server}] {}: {data}", log.level)).into_owned()
}

fn tools_changed(server: &str, count: usize) -> String {
    sanitize::term(&format!("[{server}] the tool list changed: {count} tools")).into_owned()
}

/// How many tools each server has, as the gateway lists them.
#[cfg(unix)]
async fn tool_counts(client: &Client) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for tool in client.list_tools().await.unwrap_or_default() {
        if let Some((server, _)) = hub::origin(&tool) {
            *counts.entry(server).or_default() += 1;
        }
    }
    counts
}

/// `entry` with its server's own URIs (as the gateway lists it, they are
/// the gateway's), to show.
pub(super) fn own_entry(entry: &SkillEntry) -> SkillEntry {
    let mut entry = entry.clone();
    entry.uri = own_uri(&entry.uri);
    if let SkillFiles::Listed(files) = &mut entry.resources {
        for file in files {
            file.uri = own_uri(&file.uri);
        }
    }
    entry
}
