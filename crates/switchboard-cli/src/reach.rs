//! How a command reaches the server it works with, and what it asks of it.
//!
//! A server is reached one of three ways: given after `--` (or `--url`),
//! the command's own client; configured, in a hub of the command's own
//! (the tool policy, the approval gate, the hub's error words); or
//! configured and run by the background session (`switchboard up`),
//! through the session's gateway, when the session runs it as this command
//! would. Each command in `commands/` is written once on [`Reached`] (one
//! server) or [`Listing`] (the servers a listing asks); what differs
//! between the ways — the gateway's names, how an error is worded and
//! which exit code it makes, "did you mean" — is here, once per request.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use switchboard::types::completion::{CompleteRequestParams, CompleteResult, Reference};
use switchboard::types::{
    CallToolRequestParams, CallToolResult, GetPromptResult, ReadResourceResult, Tool,
};
use switchboard::{Client, RequestOptions, TaskOptions};
use switchboard_hub::config::LoadedConfig;
use switchboard_hub::{Hub, HubError, HubListing, ServerConfig};

use crate::cli::ServerArgs;
use crate::commands::Run;
use crate::configure::Context;
use crate::direct::{connect, max_message_size, no_configured_server, show_stderr, with_events};
use crate::failure::Failure;
use crate::hub::{self, Opened};
use crate::term::ui::Ui;

/// The one server a command works with, connected.
pub(crate) struct Reached {
    way: Way,
    ui: Arc<Ui>,
    server_logs: bool,
    /// How long connecting took.
    pub(crate) connect_time: Duration,
}

enum Way {
    /// A server given after `--` or with `--url`.
    Direct(Client),
    /// A configured server in a hub of the command's own.
    Hub(Hub, Named),
    /// A configured server through the background session's gateway,
    /// where its names carry its server's (`SERVER__NAME`).
    #[cfg(unix)]
    Session(Client, Named, crate::session::Serving),
}

/// A configured server: its name and configuration (as written), for the
/// words and exit code of a failure.
struct Named {
    server: String,
    config: ServerConfig,
    credentials: Option<PathBuf>,
}

impl Named {
    fn failure(&self, error: HubError) -> Failure {
        hub::hub_failure(error, Some(&self.config), self.credentials.as_deref())
    }

    /// A request through the session that failed, worded as the hub words
    /// it.
    #[cfg(unix)]
    fn request_failure(&self, method: &'static str, source: switchboard::Error) -> Failure {
        self.failure(HubError::Request {
            server: self.server.clone(),
            method,
            source: Box::new(source),
        })
    }
}

/// Whether the command was given its server after `--` or with `--url`.
pub(crate) fn is_direct(args: &ServerArgs) -> bool {
    !args.command.is_empty() || args.url.is_some()
}

/// The configured servers, for a command given no server after `--`: the
/// configuration loaded, and how the command answers servers.
pub(crate) struct Configured<'a> {
    pub(crate) context: Context,
    pub(crate) loaded: LoadedConfig,
    run: &'a Run<'a>,
    args: &'a ServerArgs,
}

impl<'a> Configured<'a> {
    /// `None` when the command was given a server after `--` or `--url`.
    pub(crate) fn of(run: &'a Run<'a>, args: &'a ServerArgs) -> Result<Option<Self>, Failure> {
        if is_direct(args) {
            return Ok(None);
        }
        let context = Context::new(run.config.clone())?;
        let loaded = context.load(args.json);
        Ok(Some(Self {
            context,
            loaded,
            run,
            args,
        }))
    }

    /// The one configured server whose listing has `listed`, or the
    /// failure that says there is none or several (`none` when none).
    pub(crate) async fn the_one_with(
        &self,
        listed: hub::Listed<'_>,
        none: impl FnOnce() -> Failure,
    ) -> Result<String, Failure> {
        hub::the_one_with(
            &self.context,
            listed,
            self.args.json,
            self.run.creds,
            max_message_size(self.args),
            self.run.servers,
        )
        .await
        .map_err(|why| why.unwrap_or_else(none))
    }

    /// `server`, checked (configured, enabled, approved — asked for) and
    /// connected: through the session when it runs the server as this
    /// command expanded it and has what `needs` says (`None`: never through
    /// the session), else in a hub of the command's own.
    pub(crate) async fn reach(
        mut self,
        server: &str,
        needs: Option<crate::session::Needs<'_>>,
    ) -> Result<Reached, Failure> {
        let one = hub::check_one(&self.context, server, &mut self.loaded)?;
        let answer = hub::client_setup(self.args, self.loaded.sampling.clone())?;
        let named = Named {
            server: server.to_owned(),
            config: one.config.clone(),
            credentials: self.run.creds.map(PathBuf::from),
        };
        let (ui, server_logs) = (answer.ui.clone(), answer.server_logs);
        #[cfg(unix)]
        if let Some(needs) = needs.filter(|needs| self.may_use_session(server, *needs))
            && let Some((client, serving)) =
                hub::through_session(&self.context, &one, needs, &answer.customize).await
        {
            self.run.servers.session(&client);
            return Ok(Reached {
                way: Way::Session(client, named, serving),
                ui,
                server_logs,
                connect_time: Duration::ZERO,
            });
        }
        #[cfg(not(unix))]
        let _ = needs;
        let started = Instant::now();
        let hub = hub::open_one(
            &self.context,
            one.runnable,
            &self.loaded,
            self.args.json,
            self.run.creds,
            max_message_size(self.args),
            answer.customize,
            self.run.servers,
        )
        .await?;
        Ok(Reached {
            way: Way::Hub(hub, named),
            ui,
            server_logs,
            connect_time: started.elapsed(),
        })
    }

    /// Whether what `needs` names may go through the session. Names with
    /// `__` are left to a hub of the command's own, where they cannot be
    /// mistaken for another pair's; so is a call the tool policy denies or
    /// asks about: refused or asked here, with the same words and exit
    /// code whether a session runs or not (the gateway could only answer an
    /// error result).
    #[cfg(unix)]
    fn may_use_session(&self, server: &str, needs: crate::session::Needs<'_>) -> bool {
        use crate::session::Needs;
        use switchboard_hub::config::policy::ToolDecision;
        match needs {
            Needs::Server => true,
            Needs::Prompt(name) => !name.contains("__"),
            Needs::Tool(tool) => {
                !tool.contains("__")
                    && self.loaded.policy.tools.decide(server, tool) == ToolDecision::Allow
            }
        }
    }
}

impl Reached {
    /// The server after `--` (or `--url`); `only`, a configured server's
    /// name, cannot go with it.
    pub(crate) async fn direct(
        run: &Run<'_>,
        args: &ServerArgs,
        only: Option<&str>,
    ) -> Result<Self, Failure> {
        no_configured_server(only)?;
        let (client, connect_time, ui) = connect(args, run.creds, run.servers).await?;
        Ok(Self {
            way: Way::Direct(client),
            ui,
            server_logs: args.server_logs,
            connect_time,
        })
    }

    /// The server's own client, as `info` shows it: the command's client,
    /// or the hub's live client of the server (`None` through the
    /// session, whose client is the gateway's).
    pub(crate) fn client(&self) -> Result<Option<Client>, Failure> {
        match &self.way {
            Way::Direct(client) => Ok(Some(client.clone())),
            Way::Hub(hub, named) => hub
                .client(&named.server)
                .map(Some)
                .map_err(|e| named.failure(e)),
            #[cfg(unix)]
            Way::Session(..) => Ok(None),
        }
    }

    /// A configured server's state, where it is configured and its
    /// configuration (`None` for a server after `--`).
    pub(crate) fn configured(&self) -> Option<(String, &ServerConfig)> {
        match &self.way {
            Way::Direct(_) => None,
            Way::Hub(hub, named) => Some((
                hub.status(&named.server)
                    .map_or_else(|_| "ready".to_owned(), |s| s.state.name().to_owned()),
                &named.config,
            )),
            #[cfg(unix)]
            Way::Session(_, named, _) => Some(("ready".to_owned(), &named.config)),
        }
    }

    /// Calls `tool`; its result (an `isError` result is a result).
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, Failure> {
        // The callback only asks for a progress token: progress is shown
        // from the event stream, in order with the log lines.
        let options = RequestOptions::default().on_progress(|_| {});
        let params = |name: String| CallToolRequestParams {
            name,
            arguments: Some(arguments.clone()),
            ..Default::default()
        };
        match &self.way {
            Way::Direct(client) => {
                // A tool that must run as a task runs as one (and waits for
                // it); any other is a plain call.
                let options = TaskOptions::new().prefer_task(false).request(options);
                let params = params(tool.to_owned());
                let call = client.call_tool_and_wait(&params, options);
                match with_events(client, &self.ui, call).await {
                    Ok(result) => Ok(result),
                    Err(error) => Err(suggest_name(client, error, Name::Tool(tool)).await),
                }
            }
            #[cfg(unix)]
            Way::Session(client, named, serving) => {
                let params = params(switchboard_hub::hub::namespaced(&named.server, tool));
                let call = client.call_tool_with(&params, options);
                let result = with_events(client, &self.ui, call).await;
                let result = through_gateway(&named.server, result).map(|mut result| {
                    own_server_info(&mut result.meta, serving);
                    result
                });
                result.map_err(|source| {
                    named.failure(HubError::Call {
                        server: named.server.clone(),
                        tool: tool.to_owned(),
                        source: Box::new(source),
                    })
                })
            }
            Way::Hub(hub, named) => {
                let server = named.server.as_str();
                // An `ask` of the tool policy is put to the user on the
                // terminal.
                let approver = crate::policy::terminal_approver(self.ui.clone());
                let call = hub.call_asking(server, tool, Some(arguments), options, Some(approver));
                let result = with_server_events(hub, server, &self.ui, call).await;
                result.map_err(|e| {
                    // The server's tools, for "did you mean" when it has no
                    // such tool.
                    let listed: Vec<String> = hub
                        .tools()
                        .into_iter()
                        .filter(|t| t.server == server)
                        .map(|t| t.tool.name)
                        .collect();
                    let failure = named.failure(e);
                    if listed.is_empty() || listed.iter().any(|t| t == tool) {
                        return failure;
                    }
                    match crate::suggest::closest(tool, listed.iter().map(String::as_str)) {
                        Some(near) => failure.with_hint(format!(
                            "`{server}` has no tool `{tool}`; did you mean `{server}/{near}`?"
                        )),
                        None => failure.with_hint(format!(
                            "`{server}` has no tool `{tool}`; its tools: {}",
                            listed.join(", ")
                        )),
                    }
                })
            }
        }
    }

    /// Reads the resource `uri`.
    pub(crate) async fn read(&self, uri: &str) -> Result<ReadResourceResult, Failure> {
        match &self.way {
            Way::Direct(client) => {
                Ok(with_events(client, &self.ui, client.read_resource(uri)).await?)
            }
            #[cfg(unix)]
            Way::Session(client, named, serving) => {
                let read = client.read_resource(gateway_uri(&named.server, uri));
                let mut result = with_events(client, &self.ui, read)
                    .await
                    .map_err(|e| named.request_failure("resources/read", e))?;
                own_server_info(&mut result.meta, serving);
                Ok(own_read(result))
            }
            Way::Hub(hub, named) => {
                let read = hub.read_resource(&named.server, uri);
                with_server_events(hub, &named.server, &self.ui, read)
                    .await
                    .map_err(|e| named.failure(e))
            }
        }
    }

    /// Gets the prompt `name`.
    pub(crate) async fn prompt(
        &self,
        name: &str,
        arguments: std::collections::BTreeMap<String, String>,
    ) -> Result<GetPromptResult, Failure> {
        match &self.way {
            Way::Direct(client) => {
                let get = client.get_prompt(name, Some(arguments));
                match with_events(client, &self.ui, get).await {
                    Ok(result) => Ok(result),
                    Err(error) => Err(suggest_name(client, error, Name::Prompt(name)).await),
                }
            }
            #[cfg(unix)]
            Way::Session(client, named, serving) => {
                let gateway = switchboard_hub::hub::namespaced(&named.server, name);
                let get = client.get_prompt(gateway, Some(arguments));
                let mut result = with_events(client, &self.ui, get)
                    .await
                    .map_err(|e| named.request_failure("prompts/get", e))?;
                own_server_info(&mut result.meta, serving);
                Ok(result)
            }
            Way::Hub(hub, named) => {
                let get = hub.get_prompt(&named.server, name, Some(arguments));
                with_server_events(hub, &named.server, &self.ui, get)
                    .await
                    .map_err(|e| named.failure(e))
            }
        }
    }

    /// Completes an argument of a prompt or a resource template (named as
    /// the server names it).
    pub(crate) async fn complete(
        &self,
        mut params: CompleteRequestParams,
    ) -> Result<CompleteResult, Failure> {
        match &self.way {
            Way::Direct(client) => {
                Ok(with_events(client, &self.ui, client.complete(&params)).await?)
            }
            #[cfg(unix)]
            Way::Session(client, named, serving) => {
                use switchboard_hub::hub::{namespaced, resource_template_uri};
                match &mut params.r#ref {
                    Reference::Prompt(prompt) => {
                        prompt.name = namespaced(&named.server, &prompt.name);
                    }
                    Reference::Resource(template) => {
                        template.uri = resource_template_uri(&named.server, &template.uri);
                    }
                    _ => {}
                }
                let mut result = with_events(client, &self.ui, client.complete(&params))
                    .await
                    .map_err(|e| named.request_failure("completion/complete", e))?;
                own_server_info(&mut result.meta, serving);
                Ok(result)
            }
            Way::Hub(hub, named) => {
                let complete = hub.complete(&named.server, &params);
                with_server_events(hub, &named.server, &self.ui, complete)
                    .await
                    .map_err(|e| named.failure(e))
            }
        }
    }

    /// Closes the connection (and the server, unless the session runs
    /// it); with `--server-logs`, then shows what the server wrote to
    /// stderr.
    pub(crate) async fn finish(self) {
        match self.way {
            Way::Direct(client) => {
                // Closed first: the server's last words are in the buffer
                // only once it has exited and its stderr has been read to
                // the end.
                client.close().await;
                if self.server_logs {
                    show_stderr(&client);
                }
            }
            Way::Hub(hub, named) => {
                let client = self
                    .server_logs
                    .then(|| hub.client(&named.server).ok())
                    .flatten();
                hub.shutdown().await;
                if let Some(client) = client {
                    show_stderr(&client);
                }
            }
            #[cfg(unix)]
            Way::Session(client, ..) => client.close().await,
        }
    }
}

/// A call's answer through a gateway of this crate as the server's: the
/// backend's JSON-RPC error, which the gateway made an error result of
/// (for a model to read), is the error it is without the gateway.
pub(crate) fn through_gateway(
    server: &str,
    result: Result<CallToolResult, switchboard::Error>,
) -> Result<CallToolResult, switchboard::Error> {
    result.and_then(|result| match backends_error(&result) {
        Some(error) => Err(switchboard::Error::Server {
            server: server.into(),
            method: "tools/call".to_owned(),
            error: Box::new(error),
        }),
        None => Ok(result),
    })
}

/// The gateway's URI of `server`'s resource or skill file `uri`.
pub(crate) fn gateway_uri(server: &str, uri: &str) -> String {
    use switchboard_hub::hub::{resource_uri, skill_uri};
    skill_uri(server, uri).unwrap_or_else(|| resource_uri(server, uri))
}

/// The server's own URI of a gateway URI (as it is when it is none).
pub(crate) fn own_uri(uri: &str) -> String {
    use switchboard_hub::hub::{resource_origin, skill_origin};
    skill_origin(uri)
        .or_else(|| resource_origin(uri))
        .map_or_else(|| uri.to_owned(), |(_, original)| original)
}

/// A read through a gateway as the server answered it: its URIs, and no
/// caching hints (the gateway's own; it drops the server's).
pub(crate) fn own_read(mut result: ReadResourceResult) -> ReadResourceResult {
    result.ttl_ms = None;
    result.cache_scope = None;
    for contents in &mut result.contents {
        let uri = match contents {
            switchboard::types::ResourceContents::Text(c) => &mut c.uri,
            switchboard::types::ResourceContents::Blob(c) => &mut c.uri,
        };
        *uri = own_uri(uri);
    }
    result
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
        Ok(client) => with_events(&client, ui, work).await,
        // Not ready: `work` fails at once, saying why.
        Err(_) => work.await,
    }
}

/// The server's own `serverInfo` in the `_meta` of a result through the
/// session, where the gateway put its own (none for a session-era server,
/// whose results carry none), so that `--json` prints what it prints
/// without the session.
#[cfg(unix)]
fn own_server_info(
    meta: &mut Option<switchboard::types::JsonObject>,
    serving: &crate::session::Serving,
) {
    let key = switchboard::types::META_SERVER_INFO;
    match (&serving.results_server_info, meta.as_mut()) {
        (Some(info), Some(object)) => {
            object.insert(key.to_owned(), info.clone());
        }
        (Some(info), None) => {
            *meta = Some(std::iter::once((key.to_owned(), info.clone())).collect());
        }
        (None, Some(object)) => {
            object.remove(key);
            if object.is_empty() {
                *meta = None;
            }
        }
        (None, None) => {}
    }
}

/// The backend's JSON-RPC error a gateway's error result carries
/// (`BACKEND_ERROR_META`).
fn backends_error(result: &CallToolResult) -> Option<switchboard::types::jsonrpc::ErrorObject> {
    if result.is_error != Some(true) {
        return None;
    }
    let object = result
        .meta
        .as_ref()?
        .get(switchboard_hub::hub::BACKEND_ERROR_META)?;
    serde_json::from_value(object.clone()).ok()
}

/// What a name given to `call` or `prompt` names on a server after `--`.
#[derive(Clone, Copy)]
enum Name<'a> {
    Tool(&'a str),
    Prompt(&'a str),
}

/// `error` as the command's failure; when the server refused the name as
/// invalid and does not list it, with the closest name it lists (or its
/// names), as for a configured server.
async fn suggest_name(client: &Client, error: switchboard::Error, name: Name<'_>) -> Failure {
    let refused = error
        .error_object()
        .is_some_and(|e| e.code == switchboard::types::codes::INVALID_PARAMS);
    let failure = Failure::from(error);
    if !refused {
        return failure;
    }
    let (name, kind, names): (&str, &str, Vec<String>) = match name {
        Name::Tool(name) => (
            name,
            "tool",
            client
                .list_tools()
                .await
                .map(|tools| tools.into_iter().map(|t| t.name).collect())
                .unwrap_or_default(),
        ),
        Name::Prompt(name) => (
            name,
            "prompt",
            client
                .list_prompts()
                .await
                .map(|prompts| prompts.into_iter().map(|p| p.name).collect())
                .unwrap_or_default(),
        ),
    };
    if names.is_empty() || names.iter().any(|n| n == name) {
        return failure;
    }
    match crate::suggest::closest(name, names.iter().map(String::as_str)) {
        Some(near) => failure.with_hint(format!("no {kind} `{name}`; did you mean `{near}`?")),
        None => failure.with_hint(format!(
            "no {kind} `{name}`; the server's {kind}s: {}",
            names.join(", ")
        )),
    }
}

/// The servers a listing command asks: the one after `--`, or the
/// configured ones (every one, or `--server NAME`'s) started in one hub,
/// each not started or not ready said on stderr — or, for `tools`, the
/// background session's listing of them, when it runs every one as this
/// command would.
pub(crate) enum Listing {
    One(Box<Reached>),
    Configured(Opened),
    /// The session's tools, each with its `server` and own name (`tool`).
    #[cfg(unix)]
    Session(Vec<Value>),
}

/// What a listing got, and the configured servers whose listing failed.
pub(crate) type Items<T> = Result<(T, Vec<HubError>), Failure>;

impl Listing {
    /// Starts the servers of a listing of `noun`; the session's tools for
    /// a listing of tools when `session` allows it.
    pub(crate) async fn open(
        run: &Run<'_>,
        only: Option<&str>,
        args: &ServerArgs,
        noun: &str,
        session: bool,
    ) -> Result<Self, Failure> {
        if is_direct(args) {
            return Ok(Self::One(Box::new(Reached::direct(run, args, only).await?)));
        }
        let context = Context::new(run.config.clone())?;
        let (json, creds, size) = (args.json, run.creds, max_message_size(args));
        if noun == "tools" {
            return Ok(
                match hub::open_tools(&context, only, json, creds, size, run.servers, session)
                    .await?
                {
                    #[cfg(unix)]
                    Ok(tools) => Self::Session(tools),
                    #[cfg(not(unix))]
                    Ok(_) => unreachable!("no session off unix"),
                    Err(opened) => Self::Configured(opened),
                },
            );
        }
        let opened = hub::open_all(&context, only, noun, json, creds, size, run.servers).await?;
        Ok(Self::Configured(opened))
    }

    /// One kind of item: `one` of the server after `--`, `all` of the
    /// configured servers, each tagged with its server.
    async fn items<T, U, F1, F2>(
        &self,
        one: impl FnOnce(Client) -> F1,
        all: impl FnOnce(Hub) -> F2,
        tag: impl Fn(&U) -> Value,
    ) -> Items<Vec<Value>>
    where
        T: serde::Serialize,
        F1: std::future::Future<Output = Result<Vec<T>, switchboard::Error>>,
        F2: std::future::Future<Output = HubListing<U>>,
    {
        match self {
            Self::One(reached) => match reached.client()? {
                Some(client) => {
                    let items = one(client).await?;
                    Ok((items.iter().map(to_json).collect(), Vec::new()))
                }
                None => Ok((Vec::new(), Vec::new())),
            },
            Self::Configured(opened) => {
                let listing = all(opened.hub.clone()).await;
                Ok((listing.items.iter().map(tag).collect(), listing.failed))
            }
            #[cfg(unix)]
            Self::Session(_) => Ok((Vec::new(), Vec::new())),
        }
    }

    /// The resources and the resource templates (a server whose resources
    /// and templates both failed is one failure).
    pub(crate) async fn resources(&self) -> Items<(Vec<Value>, Vec<Value>)> {
        let (resources, templates) = tokio::join!(
            self.items(
                |client| async move { client.list_resources().await },
                |hub| async move { hub.resources().await },
                |r| hub::tagged(&r.server, &r.resource),
            ),
            self.items(
                |client| async move { client.list_resource_templates().await },
                |hub| async move { hub.resource_templates().await },
                |t| hub::tagged(&t.server, &t.template),
            ),
        );
        let (resources, mut failed) = resources?;
        let (templates, template_failures) = templates?;
        for error in template_failures {
            if !failed.iter().any(|f| f.server() == error.server()) {
                failed.push(error);
            }
        }
        Ok(((resources, templates), failed))
    }

    /// The prompts.
    pub(crate) async fn prompts(&self) -> Items<Vec<Value>> {
        self.items(
            |client| async move { client.list_prompts().await },
            |hub| async move { hub.prompts().await },
            |p| hub::tagged(&p.server, &p.prompt),
        )
        .await
    }

    /// The skills (none of them read).
    pub(crate) async fn skills(&self) -> Items<Vec<Value>> {
        self.items(
            |client| async move { client.list_skills().await },
            |hub| async move { hub.skills().await },
            |s| hub::tagged(&s.server, &s.entry),
        )
        .await
    }

    /// The tools as JSON (for configured servers, with hub-wide names and
    /// their `server` and `tool`), and each with its server (the server's
    /// own name for one after `--`: its command line is no name) for a
    /// model API (none from the session, which is not asked for them).
    pub(crate) async fn tools(&self) -> Items<(Vec<Value>, Vec<(String, Tool)>)> {
        match self {
            Self::One(reached) => {
                let Some(client) = reached.client()? else {
                    return Ok(Default::default());
                };
                let tools = client.list_tools().await?;
                let name = client
                    .server_info()
                    .map_or_else(|| client.server_name(), |info| info.name.as_str())
                    .to_owned();
                let json = tools.iter().map(to_json).collect();
                let tools = tools.into_iter().map(|t| (name.clone(), t)).collect();
                Ok(((json, tools), Vec::new()))
            }
            Self::Configured(opened) => {
                let tools: Vec<_> = opened
                    .hub
                    .tools()
                    .into_iter()
                    .filter(|t| opened.is_ready(&t.server))
                    .collect();
                let json = tools
                    .iter()
                    .map(|t| {
                        let mut value = to_json(&t.tool);
                        value["tool"] = json!(t.tool.name);
                        value["name"] = json!(t.name);
                        value["server"] = json!(t.server);
                        value
                    })
                    .collect();
                let tools = tools.into_iter().map(|t| (t.server, t.tool)).collect();
                Ok(((json, tools), Vec::new()))
            }
            #[cfg(unix)]
            Self::Session(tools) => Ok(((tools.clone(), Vec::new()), Vec::new())),
        }
    }

    /// The skill `target` names (its URI, `SERVER__NAME`, or a name one
    /// server's skill has), loaded and verified; its files; with `path`,
    /// that file, read and verified. With its server, when configured.
    pub(crate) async fn skill(&self, target: &str, path: Option<&str>) -> Result<Shown, Failure> {
        match self {
            Self::One(reached) => {
                let Some(client) = reached.client()? else {
                    return Err(Failure::usage(anyhow::anyhow!(
                        "no server to show a skill of"
                    )));
                };
                let skills = client.list_skills().await?;
                let (_, entry) = hub::pick_skill(
                    skills.iter().map(|e| ("", e, e.name().unwrap_or_default())),
                    target,
                )?;
                let skill = client.load_skill(entry).await?;
                let files = client.skill_files(&skill).await?;
                let contents = match path {
                    Some(path) => Some(
                        client
                            .read_skill_file(&skill, &hub::skill_file_uri(entry, path))
                            .await?,
                    ),
                    None => None,
                };
                Ok((None, skill, files, contents))
            }
            Self::Configured(opened) => {
                let listing = opened.hub.skills().await;
                hub::listing_code(opened, &listing.failed);
                let (server, entry) = hub::pick_skill(
                    listing
                        .items
                        .iter()
                        .map(|s| (s.server.as_str(), &s.entry, s.name.as_str())),
                    target,
                )?;
                let (skill, files, contents) =
                    hub::load_for_showing(&opened.hub, server, entry, path)
                        .await
                        .map_err(|e| hub::hub_failure(e, None, None))?;
                Ok((Some(server.to_owned()), skill, files, contents))
            }
            #[cfg(unix)]
            Self::Session(_) => Err(Failure::usage(anyhow::anyhow!(
                "no server to show a skill of"
            ))),
        }
    }

    /// Closes the servers, then gives what was listed and the exit code,
    /// reporting each configured server whose listing failed (server and
    /// error, on stderr): 4 (unreachable) only when every asked server
    /// failed, to start or to list; 0 when any answered, so that one
    /// broken server among many does not fail a listing of the others.
    pub(crate) async fn finish<T>(self, listed: Items<T>) -> Result<(T, u8), Failure> {
        match self {
            Self::One(reached) => {
                reached.finish().await;
                listed.map(|(items, _)| (items, 0))
            }
            Self::Configured(opened) => {
                opened.hub.shutdown().await;
                let (items, failed) = listed?;
                Ok((items, hub::listing_code(&opened, &failed)))
            }
            #[cfg(unix)]
            Self::Session(_) => listed.map(|(items, _)| (items, 0)),
        }
    }
}

/// A skill shown: its server (when configured), the skill, its files'
/// URIs, and the file asked for.
pub(crate) type Shown = (
    Option<String>,
    switchboard::Skill,
    Vec<String>,
    Option<switchboard::SkillFileContents>,
);

fn to_json(item: &impl serde::Serialize) -> Value {
    serde_json::to_value(item).unwrap_or(Value::Null)
}
