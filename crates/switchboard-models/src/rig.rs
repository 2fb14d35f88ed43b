//! The hub's tools and skills as tools of the [rig](https://docs.rs/rig-core)
//! agent framework (feature `rig`: `rig-core` and `rig-agent` 0.44).
//!
//! Each MCP tool of a [`Hub`] becomes a rig [`DynamicTool`]:
//!
//! - **named and described** by this crate's rules ([`Toolset`] for
//!   [`Provider::OpenAiChat`]): `mcp__<server>__<tool>`, descriptions capped
//!   with a marker, the input schema passed whole (rig's provider wires
//!   adapt schemas to their API themselves);
//! - **called through the hub** with [`Hub::call_asking`], so the hub's
//!   `[policy.tools]` and trust rules apply: a denied tool is not offered,
//!   an `ask` tool is put to [`RigOptions::approver`] (refused without
//!   one), and a refusal reaches the model as a tool error naming the
//!   server, the tool and the rule;
//! - **answered** with the text [`results::tool_result`] makes for Chat
//!   Completions: cut to [`ResultOptions::budget`], media the API cannot
//!   take saved to [`ResultOptions::media`] and referenced by path, an
//!   `isError` result prefixed `Error: ` and handed to rig as a failed
//!   result (rig then flags it, as Anthropic's `is_error`). With
//!   [`ChatImages::FollowUp`](crate::ChatImages::FollowUp) images go to
//!   rig as image blocks of the tool output instead (rig sends them where
//!   the provider's tool results take images; Ollama's do not).
//!
//! Arguments that are not a JSON object never reach a server: rig answers
//! the model itself, and [`UnknownTools`] (a rig-agent hook) gives the
//! model a tool error for a call of a tool that does not exist, instead of
//! rig's default of failing the whole run.
//!
//! # When the hub's tools change (`list_changed`)
//!
//! A server's tool list can change while an agent runs: the server sends
//! `notifications/tools/list_changed`, it is removed or reconfigured, or
//! it starts late. Three levels of help:
//!
//! - every tool carries rig's liveness probe ([`DynamicTool::with_liveness`]):
//!   it is live while the hub still serves that server's tool under its
//!   name; rig's tool registry drops tools that are not before each
//!   request, and a call that still comes in is answered with an error
//!   saying the tool is gone;
//! - [`ToolSync`] keeps a rig registry (rig-agent's `ToolServerHandle`, or
//!   any [`ManagedToolSink`]) in step with the hub: it installs the tools
//!   (and skills) now and reconciles them on every change the hub
//!   reports, so an agent built over that registry
//!   (`AgentBuilder::tool_server_handle`) always offers what the hub
//!   offers;
//! - [`ToolsWatch`] tells when the hub's tool set changed, for an
//!   application that rebuilds its agent with [`hub_tools`] instead.
//!
//! ```no_run
//! # async fn example(hub: switchboard_hub::Hub, model: rig_core::DynModel<rig_core::operation::Completion>) {
//! use rig_agent::AgentBuilder;
//! use rig_agent::tool::server::ToolServer;
//! use switchboard_models::rig::{RigOptions, ToolSync, UnknownTools};
//!
//! hub.start().await.unwrap();
//! let registry = ToolServer::new().run();
//! // Installs the hub's tools and skills, and keeps them in step.
//! let _sync = ToolSync::start(&hub, RigOptions::default(), registry.clone()).await;
//! let agent = AgentBuilder::new(model)
//!     .default_max_turns(16)
//!     .add_hook(UnknownTools)
//!     .tool_server_handle(registry)
//!     .build();
//! let answer = agent.prompt("What is 2 + 3?").await.unwrap();
//! println!("{}", answer.output());
//! # }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use rig_agent::agent::{
    AgentHook, HookContext, InvalidToolCallAction, InvalidToolCallContext, InvalidToolCallReason,
};
use rig_core::message::{ImageMediaType, MimeType, ToolName, ToolResultContent};
use rig_core::tool::{
    DynamicTool, ManagedToolSink, ManagedToolToken, ToolErrorKind, ToolExecutionError, ToolOutput,
};
use rig_core::wasm_compat::WasmCompatSend;
use serde_json::{Map, Value};
use switchboard::RequestOptions;
use switchboard_hub::hub::ToolApprover;
use switchboard_hub::{Hub, HubError, HubEvent, HubEvents};
use switchboard_types::CallToolResult;

use crate::{
    DefinitionOptions, NameOptions, Provider, ResultOptions, SkillOptions, Skillset, Toolset,
    ToolsetOptions, error_chain, results,
};

/// The API whose rules name, define and answer the tools: rig's own
/// wires turn Chat Completions-shaped definitions and text into any
/// provider's.
const SHAPE: Provider = Provider::OpenAiChat;

/// How the hub's tools become rig tools.
#[derive(Clone)]
#[non_exhaustive]
pub struct RigOptions {
    /// The tools' model-facing names (`mcp__<server>__<tool>` by default).
    pub names: NameOptions,
    /// Their definitions: the description cap applies; `strict` does not
    /// (strict mode is rig's, set on its provider wire).
    pub definitions: DefinitionOptions,
    /// How results are told to the model: the text budget, the media
    /// folder, images.
    pub results: ResultOptions,
    /// The skill tools (`load_skill`, `read_skill_file`) of
    /// [`skill_tools`] and [`ToolSync`]; `None` for none.
    pub skills: Option<SkillOptions>,
    /// Answers the hub's tool policy when it asks before a call
    /// (`[policy.tools]` `ask`); without one (and without the hub's own,
    /// `HubBuilder::tool_approver`) such calls are refused.
    pub approver: Option<Arc<dyn ToolApprover>>,
    /// Each call's options (a timeout, `_meta` …).
    pub request: RequestOptions,
}

impl Default for RigOptions {
    fn default() -> Self {
        Self {
            names: NameOptions::default(),
            definitions: DefinitionOptions::default(),
            results: ResultOptions::default(),
            skills: Some(SkillOptions::default()),
            approver: None,
            request: RequestOptions::default(),
        }
    }
}

impl fmt::Debug for RigOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RigOptions")
            .field("names", &self.names)
            .field("definitions", &self.definitions)
            .field("results", &self.results)
            .field("skills", &self.skills)
            .field("approver", &self.approver.is_some())
            .finish_non_exhaustive()
    }
}

impl RigOptions {
    /// Sets the naming.
    pub fn names(mut self, names: NameOptions) -> Self {
        self.names = names;
        self
    }

    /// Sets the definition options (see [`RigOptions::definitions`]).
    pub fn definitions(mut self, definitions: DefinitionOptions) -> Self {
        self.definitions = definitions;
        self
    }

    /// Sets how results are told to the model.
    pub fn results(mut self, results: ResultOptions) -> Self {
        self.results = results;
        self
    }

    /// Sets the skill tools' options, or (with `None`) leaves them out.
    pub fn skills(mut self, skills: Option<SkillOptions>) -> Self {
        self.skills = skills;
        self
    }

    /// Sets who answers the tool policy's `ask`.
    pub fn approver(mut self, approver: Arc<dyn ToolApprover>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Sets each call's options.
    pub fn request(mut self, request: RequestOptions) -> Self {
        self.request = request;
        self
    }

    fn toolset_options(&self) -> ToolsetOptions {
        let mut definitions = self.definitions.clone();
        definitions.strict = false;
        ToolsetOptions::default()
            .names(self.names.clone())
            .definitions(definitions)
    }
}

/// Every tool the hub offers now (see [`Hub::tools`]: tools the policy
/// denies are left out), as rig tools, in the hub's order. Call it again
/// for the tools of a later moment ([`ToolsWatch`] says when), or let
/// [`ToolSync`] keep a registry in step.
pub fn hub_tools(hub: &Hub, options: &RigOptions) -> Vec<DynamicTool> {
    build(hub, options).0
}

/// What the model would see of the hub's tools: (name, definition,
/// hub-wide name) of each; two equal fingerprints offer the same tools.
type Fingerprint = Vec<(String, String, String)>;

/// The tools and their fingerprint.
fn build(hub: &Hub, options: &RigOptions) -> (Vec<DynamicTool>, Fingerprint) {
    let listed = hub.tools();
    let toolset = Toolset::new(
        SHAPE,
        options.toolset_options(),
        listed.iter().map(|t| (t.server.clone(), t.tool.clone())),
    );
    let mut tools = Vec::with_capacity(listed.len());
    let mut fingerprint = Vec::with_capacity(listed.len());
    // `Toolset::new` keeps its input's order: entry `i` is hub tool `i`.
    for (listed, entry) in listed.iter().zip(toolset.entries()) {
        fingerprint.push((
            entry.name.clone(),
            entry.definition.get().to_owned(),
            listed.name.clone(),
        ));
        let Some((description, parameters)) = function(&entry.definition) else {
            tracing::warn!(
                tool = entry.name,
                "a definition without a function; left out"
            );
            continue;
        };
        let Ok(name) = ToolName::new(entry.name.clone()) else {
            continue;
        };
        let call = Arc::new(HubCall {
            hub: hub.clone(),
            name: entry.name.clone(),
            hub_name: listed.name.clone(),
            server: entry.server.clone(),
            tool: entry.tool.name.clone(),
            options: options.clone(),
        });
        let live = call.clone();
        let tool = DynamicTool::new(name, description, parameters, move |arguments| {
            let call = call.clone();
            Box::pin(async move { call.run(arguments).await })
        })
        .with_liveness(move || live.is_live());
        tools.push(tool);
    }
    (tools, fingerprint)
}

/// The description and parameters of a Chat Completions definition
/// (`{"type": "function", "function": {…}}`).
fn function(definition: &serde_json::value::RawValue) -> Option<(String, Value)> {
    let value: Value = serde_json::from_str(definition.get()).ok()?;
    let function = value.get("function")?;
    let description = function
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let parameters = match function.get("parameters") {
        Some(parameters) if !parameters.is_null() => parameters.clone(),
        _ => serde_json::json!({"type": "object", "properties": {}}),
    };
    Some((description, parameters))
}

/// One hub tool, as its rig tool calls it.
struct HubCall {
    hub: Hub,
    /// The model-facing name.
    name: String,
    /// The hub-wide name (`server__tool`), for the liveness probe.
    hub_name: String,
    server: String,
    /// The tool's own name.
    tool: String,
    options: RigOptions,
}

impl HubCall {
    /// Whether the hub still serves this server's tool under its name.
    fn is_live(&self) -> bool {
        self.hub.tool_server(&self.hub_name).as_deref() == Some(self.server.as_str())
    }

    async fn run(&self, arguments: Value) -> Result<ToolOutput, ToolExecutionError> {
        let arguments = object(&self.name, arguments)?;
        if !self.is_live() {
            return Err(ToolExecutionError::not_found(format!(
                "`{}` (tool `{}` of MCP server `{}`) is no longer offered: the server's tool \
                 list changed or the server is gone; call one of the tools the request lists",
                self.name, self.tool, self.server
            )));
        }
        tracing::debug!(
            name = self.name,
            server = self.server,
            tool = self.tool,
            "rig tool call"
        );
        match self
            .hub
            .call_asking(
                &self.server,
                &self.tool,
                arguments,
                self.options.request.clone(),
                self.options.approver.clone(),
            )
            .await
        {
            Ok(result) => answer(
                &self.name,
                || {
                    format!(
                        "server `{}`: `{}` answered with an error",
                        self.server, self.tool
                    )
                },
                &result,
                &self.options.results,
            ),
            Err(error) => Err(failure(error)),
        }
    }
}

/// The model's arguments as the object a server takes (`null` is none).
fn object(name: &str, arguments: Value) -> Result<Option<Map<String, Value>>, ToolExecutionError> {
    match arguments {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        other => Err(ToolExecutionError::invalid_args(format!(
            "the arguments of `{name}` are {}, not an object; send a JSON object that matches \
             the tool's input schema",
            crate::agent::kind(&other)
        ))),
    }
}

/// A hub error as the tool error rig shows the model: the whole chain of
/// causes (naming the server and the tool), classified for rig's policy.
fn failure(error: HubError) -> ToolExecutionError {
    let message = error_chain(&error);
    let kind = match &error {
        HubError::ToolDenied { .. } | HubError::ToolNotApproved { .. } => {
            return ToolExecutionError::refused(message).with_source(error);
        }
        HubError::UnknownServer { .. }
        | HubError::UnknownTool { .. }
        | HubError::ToolNotAllowed { .. } => ToolErrorKind::NotFound,
        HubError::Unavailable { .. } | HubError::ClosedDuringCall { .. } => ToolErrorKind::Network,
        _ if error.is_timeout() => ToolErrorKind::Timeout,
        _ => ToolErrorKind::Other,
    };
    ToolExecutionError::new(kind, message).with_source(error)
}

/// `result` as rig's tool output: the Chat Completions `tool` message's
/// text (budget, media folder, `Error: ` for `isError`), and the images
/// [`ChatImages::FollowUp`](crate::ChatImages::FollowUp) would attach. A
/// result with `isError` is a failed result whose model output is that.
fn answer(
    name: &str,
    error_message: impl FnOnce() -> String,
    result: &CallToolResult,
    options: &ResultOptions,
) -> Result<ToolOutput, ToolExecutionError> {
    let converted = results::tool_result(SHAPE, "", name, result, options);
    let text = converted
        .items
        .first()
        .and_then(|message| message.get("content"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut content = vec![ToolResultContent::text(text)];
    let parts = converted
        .follow_up
        .iter()
        .filter_map(|message| message.get("content")?.as_array())
        .flatten();
    for part in parts {
        let url = part
            .get("image_url")
            .and_then(|image| image.get("url"))
            .and_then(Value::as_str);
        if let Some((mime, data)) = url.and_then(data_url) {
            content.push(ToolResultContent::image_base64(
                data,
                ImageMediaType::from_mime_type(mime),
                None,
            ));
        }
    }
    let output = if content.len() == 1 {
        ToolOutput::text(text)
    } else {
        // The images are in this result, not in a message after it.
        content[0] = ToolResultContent::text(text.replace(
            " attached in the next user message]",
            " attached to this result]",
        ));
        // Not empty: the text block is always there.
        ToolOutput::content(content)?
    };
    if result.is_error() {
        Err(ToolExecutionError::other(error_message()).with_model_output(output))
    } else {
        Ok(output)
    }
}

/// `data:<mime>;base64,<data>`: (mime, data).
fn data_url(url: &str) -> Option<(&str, &str)> {
    let (head, data) = url.strip_prefix("data:")?.split_once(',')?;
    Some((head.strip_suffix(";base64")?, data))
}

/// The hub's skills (the MCP skills extension, [`Skillset::from_hub`]) as
/// rig's `load_skill` and `read_skill_file` tools (none when no server
/// offers a skill, or [`RigOptions::skills`] is `None`), and the servers
/// whose listing failed. Nothing is read before the model asks; what it
/// reads is verified against the listing.
pub async fn skill_tools(hub: &Hub, options: &RigOptions) -> (Vec<DynamicTool>, Vec<HubError>) {
    let Some(skill_options) = options.skills.clone() else {
        return (Vec::new(), Vec::new());
    };
    let (skills, failed) = Skillset::from_hub(SHAPE, skill_options, hub).await;
    let skills = Arc::new(skills);
    let mut tools = Vec::new();
    for definition in skills.definitions() {
        let Some((description, parameters)) = function(&definition) else {
            continue;
        };
        let name = serde_json::from_str::<Value>(definition.get())
            .ok()
            .and_then(|v| Some(v.get("function")?.get("name")?.as_str()?.to_owned()));
        let Some(name) = name else {
            continue;
        };
        let Ok(tool_name) = ToolName::new(name.clone()) else {
            continue;
        };
        let call = Arc::new(SkillCall {
            hub: hub.clone(),
            skills: skills.clone(),
            name,
            results: options.results.clone(),
        });
        tools.push(DynamicTool::new(
            tool_name,
            description,
            parameters,
            move |arguments| {
                let call = call.clone();
                Box::pin(async move { call.run(arguments).await })
            },
        ));
    }
    (tools, failed)
}

/// One skill tool, as its rig tool calls it.
struct SkillCall {
    hub: Hub,
    skills: Arc<Skillset>,
    name: String,
    results: ResultOptions,
}

impl SkillCall {
    async fn run(&self, arguments: Value) -> Result<ToolOutput, ToolExecutionError> {
        let arguments = object(&self.name, arguments)?;
        let Some(result) = self
            .skills
            .call(&self.hub, &self.name, arguments.as_ref())
            .await
        else {
            return Err(ToolExecutionError::not_found(format!(
                "there is no skill tool named `{}`",
                self.name
            )));
        };
        answer(
            &self.name,
            || format!("`{}` answered with an error", self.name),
            &result,
            &self.results,
        )
    }
}

/// Tells when the hub's tool set changed (a server's `list_changed`, a
/// server added, removed, reconfigured, started or failed), for an
/// application that rebuilds its agent's tools with [`hub_tools`]. Made
/// before the tools it watches are read, it misses no change.
///
/// ```no_run
/// # async fn example(hub: switchboard_hub::Hub) {
/// use switchboard_models::rig::{RigOptions, ToolsWatch};
///
/// let options = RigOptions::default();
/// let mut watch = ToolsWatch::new(&hub, &options);
/// let mut tools = watch.tools();
/// while watch.changed().await {
///     tools = watch.tools(); // rebuild the agent with these
/// }
/// # let _ = tools;
/// # }
/// ```
pub struct ToolsWatch {
    hub: Hub,
    options: RigOptions,
    events: HubEvents,
    seen: Fingerprint,
}

impl fmt::Debug for ToolsWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolsWatch")
            .field("tools", &self.seen.len())
            .finish_non_exhaustive()
    }
}

impl ToolsWatch {
    /// Watches `hub`'s tools as `options` make them, from their state now.
    pub fn new(hub: &Hub, options: &RigOptions) -> Self {
        // Subscribed first: a change while the tools are read is heard.
        let events = hub.events();
        let seen = build(hub, options).1;
        Self {
            hub: hub.clone(),
            options: options.clone(),
            events,
            seen,
        }
    }

    /// The hub's tools now, as rig tools ([`hub_tools`]); [`changed`]
    /// compares with these from now on.
    ///
    /// [`changed`]: ToolsWatch::changed
    pub fn tools(&mut self) -> Vec<DynamicTool> {
        let (tools, fingerprint) = build(&self.hub, &self.options);
        self.seen = fingerprint;
        tools
    }

    /// Waits until the tools the model would be offered differ from the
    /// last ones seen (the last [`tools`](ToolsWatch::tools), or when the
    /// watch was made): `true` then, `false` once the hub is gone.
    ///
    /// # Cancel safety
    /// Cancel safe: a change is not lost if the future is dropped.
    pub async fn changed(&mut self) -> bool {
        loop {
            let now = build(&self.hub, &self.options).1;
            if now != self.seen {
                self.seen = now;
                return true;
            }
            loop {
                match self.events.next().await {
                    None => return false,
                    Some(event) if may_change_tools(&event) => break,
                    Some(_) => {}
                }
            }
        }
    }
}

/// Whether `event` may change the hub's tool set.
fn may_change_tools(event: &HubEvent) -> bool {
    !matches!(event, HubEvent::Server { .. })
}

/// Keeps a rig tool registry in step with the hub: [`ToolSync::start`]
/// installs the hub's tools and skills in it, then reconciles them each
/// time the hub's tool set changes ([`ToolsWatch`]), until dropped. The
/// registry is rig-agent's `ToolServerHandle` (an agent built with
/// `AgentBuilder::tool_server_handle` over it offers the new tools from
/// its next request on) or any other [`ManagedToolSink`]; tools it has
/// from elsewhere are left alone.
pub struct ToolSync {
    task: tokio::task::JoinHandle<()>,
    syncs: tokio::sync::watch::Receiver<u64>,
}

impl fmt::Debug for ToolSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSync")
            .field("syncs", &self.syncs())
            .finish_non_exhaustive()
    }
}

impl ToolSync {
    /// Installs `hub`'s tools (and skills, unless [`RigOptions::skills`]
    /// is `None`) in `sink` and keeps them in step, on a task of the
    /// current tokio runtime.
    pub async fn start<S>(hub: &Hub, options: RigOptions, sink: S) -> Self
    where
        S: ManagedToolSink + Send + Sync + 'static,
    {
        let mut watch = ToolsWatch::new(hub, &options);
        let tools = all_tools(&mut watch).await;
        let mut tokens: HashMap<String, ManagedToolToken> = sink.add_managed_tools(tools);
        let (count, syncs) = tokio::sync::watch::channel(1u64);
        let task = tokio::spawn(async move {
            while watch.changed().await {
                let tools = all_tools(&mut watch).await;
                tokens = sink.reconcile_managed_tools(tokens, tools);
                tracing::debug!(tools = tokens.len(), "rig tools synced with the hub");
                count.send_modify(|n| *n += 1);
            }
        });
        Self { task, syncs }
    }

    /// How many times the registry was filled: 1 after
    /// [`start`](ToolSync::start), one more for each change.
    pub fn syncs(&self) -> u64 {
        *self.syncs.borrow()
    }

    /// Waits for the next time the registry is brought in step with the
    /// hub: `false` when it never will be (the hub is gone).
    pub async fn synced(&mut self) -> bool {
        self.syncs.changed().await.is_ok()
    }
}

impl Drop for ToolSync {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The watch's tools now, and the skill tools.
async fn all_tools(watch: &mut ToolsWatch) -> Vec<DynamicTool> {
    let mut tools = watch.tools();
    let (skills, failed) = skill_tools(&watch.hub, &watch.options).await;
    for error in failed {
        tracing::warn!("skills not listed: {}", error_chain(&error));
    }
    tools.extend(skills);
    tools
}

/// A rig-agent hook that answers the model's call of a tool that does not
/// exist (made up, or gone since the request listed it) with a tool error
/// naming the tools there are, where rig would fail the whole run; and
/// arguments that are not a JSON object with a tool error saying so. The
/// call is not run; nor are the other calls of the same turn (rig answers
/// them that they were not run, and the model can make them again). Add
/// it with `AgentBuilder::add_hook`.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnknownTools;

/// Most tool names listed in the answer to a call of an unknown tool.
const LISTED_NAMES: usize = 40;

impl AgentHook for UnknownTools {
    fn name(&self) -> Option<String> {
        Some("switchboard_models::rig::UnknownTools".into())
    }

    fn on_invalid_tool_call(
        &self,
        _ctx: &HookContext,
        event: &InvalidToolCallContext,
    ) -> impl Future<Output = Option<InvalidToolCallAction>> + WasmCompatSend {
        let action = match &event.reason {
            InvalidToolCallReason::UnknownTool => {
                let mut names: Vec<&str> = event
                    .available_tools
                    .iter()
                    .take(LISTED_NAMES)
                    .map(String::as_str)
                    .collect();
                if event.available_tools.len() > LISTED_NAMES {
                    names.push("…");
                }
                Some(InvalidToolCallAction::skip(format!(
                    "Error: there is no tool named `{}`; call one of the tools the request \
                     lists ({}). It was not called.",
                    event.tool_name,
                    names.join(", ")
                )))
            }
            InvalidToolCallReason::MalformedArguments { error } => {
                Some(InvalidToolCallAction::skip(format!(
                    "Error: the arguments of `{}` are not a JSON object ({error}); send a JSON \
                     object that matches the tool's input schema. It was not called.",
                    event.tool_name
                )))
            }
            _ => None,
        };
        async move { action }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls_split_into_type_and_data() {
        assert_eq!(
            data_url("data:image/png;base64,iVBO"),
            Some(("image/png", "iVBO"))
        );
        assert_eq!(data_url("https://example.com/a.png"), None);
        assert_eq!(data_url("data:image/png,raw"), None);
    }

    #[test]
    fn arguments_must_be_an_object_or_null() {
        assert_eq!(object("t", Value::Null).unwrap(), None);
        assert!(object("t", serde_json::json!({"a": 1})).unwrap().is_some());
        let error = object("t", serde_json::json!([1])).unwrap_err();
        assert_eq!(error.kind(), ToolErrorKind::InvalidArgs);
        assert!(error.message().contains("an array"), "{}", error.message());
    }

    #[test]
    fn results_keep_the_chat_text_and_flag_errors() {
        let ok = answer(
            "mcp__s__t",
            || "failed".into(),
            &CallToolResult::text("5"),
            &ResultOptions::default(),
        )
        .unwrap();
        assert_eq!(ok.as_text(), Some("5"));

        let mut bad = CallToolResult::text("something went wrong");
        bad.is_error = Some(true);
        let error = answer(
            "mcp__s__t",
            || "server `s`: `t` answered with an error".into(),
            &bad,
            &ResultOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            error.model_feedback(),
            Some("Error: something went wrong"),
            "{error:?}"
        );
        assert_eq!(error.message(), "server `s`: `t` answered with an error");

        let long = CallToolResult::text("x".repeat(500));
        let cut = answer(
            "mcp__s__t",
            || "failed".into(),
            &long,
            &ResultOptions::default().budget(100),
        )
        .unwrap();
        let text = cut.as_text().unwrap_or_default();
        assert!(text.len() < 500 && text.starts_with("xxx"), "{text}");
    }

    #[test]
    fn follow_up_images_become_image_blocks() {
        let result: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [
                {"type": "image", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "mimeType": "image/png"},
                {"type": "text", "text": "a 1x1 PNG image"}
            ]
        }))
        .unwrap();
        let inline = answer(
            "mcp__s__image",
            || "failed".into(),
            &result,
            &ResultOptions::default().chat_images(crate::ChatImages::FollowUp),
        )
        .unwrap();
        let kinds: Vec<bool> = inline
            .as_content()
            .iter()
            .map(|c| matches!(c, ToolResultContent::Image(_)))
            .collect();
        assert_eq!(kinds, [false, true]);
        let note = inline.as_content()[0].as_text().unwrap_or_default();
        assert!(
            note.contains("attached to this result") && note.contains("a 1x1 PNG image"),
            "{note}"
        );

        // By default Chat Completions takes no image: described in text.
        let text = answer(
            "mcp__s__image",
            || "failed".into(),
            &result,
            &ResultOptions::default(),
        )
        .unwrap();
        assert!(
            text.as_text()
                .is_some_and(|t| t.contains("a 1x1 PNG image")),
            "{text:?}"
        );
    }
}
