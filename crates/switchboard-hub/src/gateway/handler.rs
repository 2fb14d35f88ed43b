//! The gateway as a [`ServerHandler`]: each method of the protocol, answered
//! through the hub.

use serde_json::value::RawValue;

use switchboard::server::{Peer, Reply, RequestContext, ServerHandler};
use switchboard::types::apps::UI_EXTENSION;
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::skills::SKILLS_EXTENSION;
use switchboard::types::subscriptions::{
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
use switchboard::types::{CacheScope, GetSkillRequestParams, GetSkillResult, ListSkillsResult};
use switchboard::types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResult, Reference, RequestOutcome, ServerCapabilities,
    codes,
};
use switchboard::types::{EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams};

use super::HubServer;
use super::calls::{read_back, record};
use super::names::{
    RAW_MARK, URI_PREFIX, as_gateway_read, gateway_skill, prompt_route, resource_template_uri,
    skill_origin,
};
use crate::hub::audit::{self, AuditKind};
use crate::hub::{HubError, HubEvent};

/// A hub error from a request routed to one server, for the host: the
/// backend's own error as it answered it (its code, message and data: a
/// resource not found stays one), anything else the gateway's.
pub(super) fn routed_error(error: HubError) -> ErrorObject {
    match error {
        HubError::UnknownServer { .. } => {
            ErrorObject::new(codes::INVALID_PARAMS, error.to_string())
        }
        HubError::Request { ref source, .. } => match source.error_object() {
            Some(backends) => backends.clone(),
            None => ErrorObject::new(codes::INTERNAL_ERROR, error.to_string()),
        },
        other => ErrorObject::new(codes::INTERNAL_ERROR, other.to_string()),
    }
}

/// A backend's "resource not found" as the host's era says it: -32002
/// in the session era, -32602 in 2026-07-28 (SEP-2164), with the URI the
/// host asked for in its data either way.
fn not_found_in_era(mut error: ErrorObject, modern: bool, uri: &str) -> ErrorObject {
    let not_found = error.code == codes::RESOURCE_NOT_FOUND
        || (error.code == codes::INVALID_PARAMS
            && error.data.as_ref().is_some_and(|d| d.get("uri").is_some()));
    if not_found {
        error.code = if modern {
            codes::INVALID_PARAMS
        } else {
            codes::RESOURCE_NOT_FOUND
        };
        error.data = Some(serde_json::json!({ "uri": uri }));
    }
    error
}

/// One `notifications/tools/list_changed` per hub event that changes what
/// `tools/list` shows, from the session-era host's
/// `notifications/initialized` until it goes away. (A 2026-07-28 host
/// hears of changes on a `subscriptions/listen` stream: `subscriptions.rs`.)
pub(super) async fn forward_list_changes(mut events: crate::hub::HubEvents, peer: Peer) {
    if !peer.session_initialized().await {
        return;
    }
    let closed = peer.closed();
    tokio::pin!(closed);
    loop {
        let event = tokio::select! {
            () = &mut closed => return,
            event = events.next() => event,
        };
        let Some(event) = event else { return };
        let changes = matches!(
            event,
            HubEvent::StateChanged { .. }
                | HubEvent::ToolsChanged { .. }
                | HubEvent::ServerAdded { .. }
                | HubEvent::ServerRemoved { .. }
                | HubEvent::Lagged(_)
        );
        if changes
            && peer
                .notify("notifications/tools/list_changed", None)
                .await
                .is_err()
        {
            return;
        }
    }
}

impl HubServer {
    /// A backend's prompt as the host gets it: the URIs its messages link
    /// to served as the gateway serves them, the backend's identity out.
    pub(super) fn own_prompt(&self, server: &str, mut result: GetPromptResult) -> GetPromptResult {
        let uris = self.uris();
        for message in &mut result.messages {
            super::own_uris::own_block(&&uris, server, &mut message.content);
        }
        super::names::without_identity(&mut result.meta);
        result
    }
}

impl ServerHandler for HubServer {
    fn info(&self) -> Implementation {
        self.info.clone()
    }

    /// Each connection (stdio, every HTTP session, in process) hears of
    /// list changes from a forwarder the gateway owns, and a session-era
    /// host's roots are followed for the backends (`roots.rs`).
    fn connected(&self, peer: &Peer) {
        self.tasks
            .spawn(forward_list_changes(self.hub.events(), peer.clone()));
        if let Some(asks) = &self.asks {
            self.tasks.spawn(asks.host_roots().follow(peer));
        }
    }

    /// A served tool's schema when it mirrors arguments into headers (the
    /// backend's, as listed): the HTTP server checks a 2026-07-28 call's
    /// `Mcp-Param-*` headers against it before the call is routed. Read
    /// from the route table's text, parsed only when it names
    /// `x-mcp-header`.
    fn tool_input_schema(&self, name: &str) -> Option<serde_json::Value> {
        let routes = self.hub.routes();
        let schema = &routes.get(name)?.tool().input_schema;
        if !schema.as_str().contains("x-mcp-header") {
            return None;
        }
        schema.parse().ok()
    }

    fn capabilities(&self) -> ServerCapabilities {
        capabilities()
    }

    fn list_prompts(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Reply<ListPromptsResult> {
        read_back(self.list_json("prompts/list", params, cx))
    }

    fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        _cx: RequestContext,
    ) -> Reply<GetPromptResult> {
        let this = self.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let (hub, audit) = (&this.hub, &this.audit);
            let (server, name) = prompt_route(hub, &params.name).await?;
            let result = hub
                .get_prompt(&server, name, params.arguments)
                .await
                .map(|result| this.own_prompt(&server, result))
                .map_err(routed_error);
            audit::note_result(
                audit.as_ref(),
                AuditKind::PromptGet,
                Some(&server),
                &params.name,
                &result,
            );
            result
        })
    }

    /// A 2026-07-28 backend's `input_required` rounds reach a 2026-07-28
    /// host as they are (`calls/rounds.rs`).
    fn get_prompt_outcome(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext,
    ) -> Reply<RequestOutcome<GetPromptResult>> {
        if cx.era == switchboard::types::Era::Modern {
            return self.prompt_round(params, cx);
        }
        let reply = self.get_prompt(params, cx);
        Box::pin(async move { reply.await.map(RequestOutcome::Complete) })
    }

    fn complete(
        &self,
        mut params: CompleteRequestParams,
        _cx: RequestContext,
    ) -> Reply<CompleteResult> {
        let this = self.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let hub = &this.hub;
            let server = match &mut params.r#ref {
                Reference::Prompt(reference) => {
                    let (server, name) = prompt_route(hub, &reference.name).await?;
                    reference.name = name;
                    server
                }
                Reference::Resource(reference) => {
                    let (server, uri) = this.resolve(&reference.uri).await.ok_or_else(|| {
                        ErrorObject::new(
                            codes::INVALID_PARAMS,
                            format!("not a resource of this gateway: {}", reference.uri),
                        )
                    })?;
                    reference.uri = uri;
                    server
                }
                _ => {
                    return Err(ErrorObject::new(
                        codes::INVALID_PARAMS,
                        "an unknown kind of completion reference".to_owned(),
                    ));
                }
            };
            hub.complete(&server, &params).await.map_err(routed_error)
        })
    }

    fn list_resources(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Reply<ListResourcesResult> {
        read_back(self.list_json("resources/list", params, cx))
    }

    fn subscribe_resource(
        &self,
        params: SubscribeRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        self.subscribe(params, cx)
    }

    fn unsubscribe_resource(
        &self,
        params: UnsubscribeRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        self.unsubscribe(params, cx)
    }

    fn listen(
        &self,
        params: SubscriptionsListenRequestParams,
        cx: RequestContext,
    ) -> Reply<SubscriptionsListenResult> {
        HubServer::listen(self, params, cx)
    }

    fn list_resource_templates(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Reply<ListResourceTemplatesResult> {
        read_back(self.list_json("resources/templates/list", params, cx))
    }

    fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext,
    ) -> Reply<ReadResourceResult> {
        let modern = cx.era == switchboard::types::Era::Modern;
        let this = self.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let (hub, audit) = (&this.hub, &this.audit);
            // Expanded from a mapped template: its contents are answered
            // in the template's form.
            let raw = params
                .uri
                .strip_prefix(URI_PREFIX)
                .and_then(|rest| rest.split_once('/'))
                .is_some_and(|(_, original)| original.starts_with(RAW_MARK));
            // Not found: -32002 in the session era, -32602 in 2026-07-28
            // (SEP-2164), the URI in the data either way.
            let (server, uri) = this.resolve(&params.uri).await.ok_or_else(|| ErrorObject {
                code: if modern {
                    codes::INVALID_PARAMS
                } else {
                    codes::RESOURCE_NOT_FOUND
                },
                message: format!(
                    "Resource not found: {} (no server of this gateway lists it)",
                    params.uri
                ),
                data: Some(serde_json::json!({ "uri": params.uri })),
            })?;
            let result = hub
                .read_resource(&server, uri)
                .await
                .map_err(routed_error)
                .map_err(|error| not_found_in_era(error, modern, &params.uri));
            audit::note_result(
                audit.as_ref(),
                AuditKind::ResourceRead,
                Some(&server),
                &params.uri,
                &result,
            );
            let uris = this.uris();
            Ok(as_gateway_read(result?, |uri| {
                if raw {
                    resource_template_uri(&server, uri)
                } else {
                    uris.serve(&server, uri)
                }
            }))
        })
    }

    fn list_skills(
        &self,
        _params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Reply<ListSkillsResult> {
        let modern = cx.era == switchboard::types::Era::Modern;
        let hub = self.hub.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let listing = hub.skills().await;
            for error in &listing.failed {
                tracing::warn!(%error, "a server's skills are not listed");
            }
            // An entry that breaks the extension's rules could not be
            // loaded by any host: left out.
            let skills = listing
                .items
                .into_iter()
                .filter(|s| s.entry.problems().is_empty())
                .filter_map(|s| gateway_skill(&s.server, s.entry))
                .collect();
            // Freshness as the backends' answers are: not cached.
            Ok(ListSkillsResult {
                skills,
                ttl_ms: modern.then_some(0),
                cache_scope: modern.then_some(CacheScope::Private),
                ..Default::default()
            })
        })
    }

    fn get_skill(
        &self,
        params: GetSkillRequestParams,
        cx: RequestContext,
    ) -> Reply<GetSkillResult> {
        let modern = cx.era == switchboard::types::Era::Modern;
        let hub = self.hub.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let unknown = || ErrorObject {
                code: codes::INVALID_PARAMS,
                message: format!(
                    "Unknown skill: {} (not a skill of this gateway)",
                    params.uri
                ),
                data: Some(serde_json::json!({ "uri": params.uri })),
            };
            let (server, uri) = skill_origin(&params.uri).ok_or_else(unknown)?;
            // An unknown server is -32602 too (`routed_error`); so is the
            // backend's own answer that it has no such skill.
            let entry = hub
                .get_skill(&server, &uri)
                .await
                .map_err(|error| match &error {
                    HubError::Request { source, .. }
                        if source.code() == Some(codes::INVALID_PARAMS) =>
                    {
                        unknown()
                    }
                    _ => routed_error(error),
                })?;
            let skill = gateway_skill(&server, entry).ok_or_else(unknown)?;
            Ok(GetSkillResult {
                skill,
                ttl_ms: modern.then_some(0),
                cache_scope: modern.then_some(CacheScope::Private),
                ..Default::default()
            })
        })
    }

    /// In front of one server, that server's own instructions (when it is
    /// up and gave any); else what the gateway's names mean.
    fn instructions(&self) -> Option<String> {
        if let [only] = self.hub.server_names().as_slice()
            && let Ok(client) = self.hub.client(only)
        {
            return client.instructions().map(str::to_owned);
        }
        Some(INSTRUCTIONS.to_owned())
    }

    fn list_tools(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Reply<ListToolsResult> {
        read_back(self.list_json("tools/list", params, cx))
    }

    /// Every list, written straight from what the hub and its clients
    /// keep (`lists.rs`): nothing is copied for an answer but its text.
    fn list_json(
        &self,
        method: &str,
        _params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Option<Reply<Box<RawValue>>> {
        if !matches!(
            method,
            "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list"
        ) {
            return None;
        }
        let this = self.clone();
        let first_start = self.first_start();
        let list = method.to_owned();
        let apps = cx
            .client_capabilities
            .ui()
            .is_some_and(|ui| ui.renders_html());
        Some(Box::pin(async move {
            first_start.await;
            let written = match list.as_str() {
                "tools/list" => this.tools_json(apps),
                "resources/list" => this.hub.resources_json(&this.uris).await,
                "resources/templates/list" => this.hub.resource_templates_json(&this.uris).await,
                _ => this.hub.prompts_json().await,
            };
            written.map_err(|e| {
                ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("cannot serialize the {list} result: {e}"),
                )
            })
        }))
    }

    fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Reply<RequestOutcome<CallToolResult>> {
        let this = self.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let started = std::time::Instant::now();
            let name = params.name.clone();
            let arguments = this.audit.as_ref().and(params.arguments.clone());
            let mut params = params;
            let (server, outcome) = match this.app_call(&mut params, &cx).await {
                // A task-supporting tool, for a host that takes tasks: a
                // task of the gateway's (`tasks.rs`).
                Ok(()) => match this.task_call(&params, &cx) {
                    Some(outcome) => (this.hub.tool_server(&params.name), outcome),
                    None => this.call(params, cx).await,
                },
                Err(refused) => (this.hub.tool_server(&params.name), Err(refused)),
            };
            if let Some((log, session)) = &this.audit {
                record(
                    log,
                    session,
                    server.as_deref(),
                    &name,
                    arguments.as_ref(),
                    &outcome,
                    started,
                );
            }
            outcome
        })
    }

    fn get_task(
        &self,
        params: switchboard::types::tasks::GetTaskRequestParams,
        cx: RequestContext,
    ) -> Reply<switchboard::types::tasks::GetTaskResult> {
        self.get_host_task(params, cx)
    }

    fn update_task(
        &self,
        params: switchboard::types::tasks::UpdateTaskRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        self.update_host_task(params, cx)
    }

    fn cancel_task(
        &self,
        params: switchboard::types::tasks::CancelTaskRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        self.cancel_host_task(params, cx)
    }
}

/// What the gateway in front of several servers tells a host.
pub(super) const INSTRUCTIONS: &str = "Tools, prompts and resources of several MCP servers. A name `server__name` is that server's; a resource's URI is its server's own unless two servers use it (then switchboard://SERVER/URI, or ui://SERVER+… for an app's view); skills as skill://SERVER/PATH.";

/// What the gateway declares: the same to every host, whatever its
/// backends are.
pub(super) fn capabilities() -> ServerCapabilities {
    serde_json::from_value(serde_json::json!({
        "tools": { "listChanged": true },
        "prompts": {},
        "resources": { "subscribe": true },
        "completions": {},
        // Skills and MCP Apps of the backends that offer them (an
        // empty list, no app, when none does): declared always, as
        // the backends are not all started when a host initializes.
        // Tasks: the gateway's own (`tasks.rs`).
        "extensions": {
            SKILLS_EXTENSION: {},
            UI_EXTENSION: {},
            switchboard::types::tasks::TASKS_EXTENSION: {},
        },
    }))
    .unwrap_or_default()
}
