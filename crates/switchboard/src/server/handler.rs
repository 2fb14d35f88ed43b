//! [`ServerHandler`]: what a server offers, one method per request, each
//! with a default; and [`HostUser`], who a request is made for when the
//! endpoint authenticates hosts as users (Streamable HTTP with
//! `HttpServeOptions::host_auth`).

use serde_json::value::RawValue;
use switchboard_types::jsonrpc::ErrorObject;
use switchboard_types::subscriptions::{
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
use switchboard_types::tasks::{
    CancelTaskRequestParams, GetTaskRequestParams, GetTaskResult, UpdateTaskRequestParams,
};
use switchboard_types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResult, RequestOutcome, ServerCapabilities, codes,
};
use switchboard_types::{EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams};
use switchboard_types::{GetSkillRequestParams, GetSkillResult, ListSkillsResult};

use super::{Peer, Reply, RequestContext};

/// What an MCP server offers. Every method has a default: the list methods
/// list nothing, the others answer "not supported" (`-32601`), so a server
/// implements only what its [`ServerHandler::capabilities`] declare.
pub trait ServerHandler: Send + Sync + 'static {
    /// Who the server is (`serverInfo`).
    fn info(&self) -> Implementation;

    /// What the server supports; declared to both eras.
    fn capabilities(&self) -> ServerCapabilities;

    /// How to use the server, for the model's context.
    fn instructions(&self) -> Option<String> {
        None
    }

    /// `tools/list`.
    fn list_tools(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Reply<ListToolsResult> {
        Box::pin(async { Ok(ListToolsResult::default()) })
    }

    /// A list request — `tools/list`, `resources/list`,
    /// `resources/templates/list` or `prompts/list`, as `method` says —
    /// answered with the result's JSON text (`{"tools": […]}` …), for a
    /// server that writes a long list straight from what it keeps instead
    /// of building a typed result of copies (the hub's gateway: thousands
    /// of entries of many servers). When it answers `Some`, the typed
    /// method ([`list_tools`](Self::list_tools) …) is not called. What
    /// the 2026-07-28 revision adds to a result is added to this one as
    /// to any other. The default answers `None`.
    fn list_json(
        &self,
        _method: &str,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Option<Reply<Box<RawValue>>> {
        None
    }

    /// `tools/call`. A 2026-07-28 client may be answered
    /// [`RequestOutcome::InputRequired`] (it retries with the answers and
    /// the `requestState`); a session-era client never: ask it with
    /// [`RequestContext::request`] instead.
    fn call_tool(
        &self,
        params: CallToolRequestParams,
        _cx: RequestContext,
    ) -> Reply<RequestOutcome<CallToolResult>> {
        let error = ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("Unknown tool: {}", params.name),
        );
        Box::pin(async move { Err(error) })
    }

    /// `resources/list`.
    fn list_resources(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Reply<ListResourcesResult> {
        Box::pin(async { Ok(ListResourcesResult::default()) })
    }

    /// `resources/templates/list`.
    fn list_resource_templates(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Reply<ListResourceTemplatesResult> {
        Box::pin(async { Ok(ListResourceTemplatesResult::default()) })
    }

    /// `resources/read`.
    fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        _cx: RequestContext,
    ) -> Reply<ReadResourceResult> {
        let error = ErrorObject::new(
            codes::RESOURCE_NOT_FOUND,
            format!("Resource not found: {}", params.uri),
        );
        Box::pin(async move { Err(error) })
    }

    /// `resources/subscribe` (the session era; a 2026-07-28 client
    /// listens instead): the server sends
    /// `notifications/resources/updated` for the URI to this client (its
    /// [`RequestContext::peer`]) until it unsubscribes. Answered only by a
    /// handler whose capabilities declare `resources.subscribe`; the
    /// default refuses.
    fn subscribe_resource(
        &self,
        params: SubscribeRequestParams,
        _cx: RequestContext,
    ) -> Reply<EmptyResult> {
        no_subscription(&params.uri)
    }

    /// `resources/unsubscribe`: ends what
    /// [`subscribe_resource`](Self::subscribe_resource) started.
    fn unsubscribe_resource(
        &self,
        params: UnsubscribeRequestParams,
        _cx: RequestContext,
    ) -> Reply<EmptyResult> {
        no_subscription(&params.uri)
    }

    /// `prompts/list`.
    fn list_prompts(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Reply<ListPromptsResult> {
        Box::pin(async { Ok(ListPromptsResult::default()) })
    }

    /// `prompts/get`.
    fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        _cx: RequestContext,
    ) -> Reply<GetPromptResult> {
        let error = ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("Unknown prompt: {}", params.name),
        );
        Box::pin(async move { Err(error) })
    }

    /// `prompts/get` for a client that may be answered
    /// [`RequestOutcome::InputRequired`] (2026-07-28; it retries with the
    /// answers and the `requestState`, which `params` then carry). The
    /// default answers [`get_prompt`](Self::get_prompt), complete.
    fn get_prompt_outcome(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext,
    ) -> Reply<RequestOutcome<GetPromptResult>> {
        let reply = self.get_prompt(params, cx);
        Box::pin(async move { reply.await.map(RequestOutcome::Complete) })
    }

    /// `subscriptions/listen` (2026-07-28 only): a stream of the change
    /// notifications the client asked for, on this request. The handler
    /// sends `notifications/subscriptions/acknowledged` first, then each
    /// notification, all with [`RequestContext::notify`] and tagged with
    /// [`RequestContext::subscription_id`]; it answers when it ends the
    /// subscription itself (the client ending it drops the future).
    /// Answered only by a handler whose capabilities declare a list that
    /// changes or `resources.subscribe`; the default refuses (-32601).
    fn listen(
        &self,
        _params: SubscriptionsListenRequestParams,
        _cx: RequestContext,
    ) -> Reply<SubscriptionsListenResult> {
        let error = ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            "Method not found: this server sends no change notifications",
        );
        Box::pin(async move { Err(error) })
    }

    /// `tasks/get` (the tasks extension, `io.modelcontextprotocol/tasks`):
    /// the task's state, with its `result`, `error` or `inputRequests`
    /// inline. Reached only when [`capabilities`](Self::capabilities)
    /// declare the extension and the request's client declared it (else
    /// -32021, [`tasks`](self::tasks)); a task is created by answering
    /// `tools/call` with [`RequestOutcome::Task`]. By default every id is
    /// unknown (-32602), the answer for an id the handler does not know.
    fn get_task(&self, params: GetTaskRequestParams, _cx: RequestContext) -> Reply<GetTaskResult> {
        Box::pin(async move { Err(unknown_task(&params.task_id)) })
    }

    /// `tasks/update` (the tasks extension): the client's answers to a
    /// task's `inputRequests` (some or all of them), acknowledged empty.
    /// Reached as [`get_task`](Self::get_task); the default as it.
    fn update_task(
        &self,
        params: UpdateTaskRequestParams,
        _cx: RequestContext,
    ) -> Reply<EmptyResult> {
        Box::pin(async move { Err(unknown_task(&params.task_id)) })
    }

    /// `tasks/cancel` (the tasks extension): acknowledged empty, also for
    /// a task that has already ended. Reached as
    /// [`get_task`](Self::get_task); the default as it.
    fn cancel_task(
        &self,
        params: CancelTaskRequestParams,
        _cx: RequestContext,
    ) -> Reply<EmptyResult> {
        Box::pin(async move { Err(unknown_task(&params.task_id)) })
    }

    /// Tool `name`'s input schema, when it mirrors arguments into
    /// `Mcp-Param-*` headers (`x-mcp-header`, 2026-07-28): a request over
    /// HTTP without a session is then refused (400, -32020) when a header
    /// is missing, does not decode, or does not match its argument.
    /// `None` (the default): not checked.
    fn tool_input_schema(&self, _name: &str) -> Option<serde_json::Value> {
        None
    }

    /// [`tool_input_schema`](Self::tool_input_schema) for a request of
    /// `user` (the host user its token names, when the endpoint
    /// authenticates hosts as users): for a handler whose tools differ
    /// from one user to another. The default ignores the user.
    fn tool_input_schema_for(
        &self,
        name: &str,
        _user: Option<&HostUser>,
    ) -> Option<serde_json::Value> {
        self.tool_input_schema(name)
    }

    /// Called once for each connection as it starts being served (stdio,
    /// each HTTP session, an in-memory pair), with the peer to speak first
    /// on: a handler that tells its clients of changes starts doing so
    /// here (wait for [`Peer::session_initialized`] before a session-era
    /// client's first notification). Nothing by default.
    fn connected(&self, _peer: &Peer) {}

    /// `completion/complete`.
    fn complete(
        &self,
        _params: CompleteRequestParams,
        _cx: RequestContext,
    ) -> Reply<CompleteResult> {
        Box::pin(async { Ok(CompleteResult::default()) })
    }

    /// `skills/list` (the skills extension): answered only when
    /// [`capabilities`](Self::capabilities) declare
    /// `io.modelcontextprotocol/skills`, else -32601. Lists nothing by
    /// default.
    fn list_skills(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Reply<ListSkillsResult> {
        Box::pin(async { Ok(ListSkillsResult::default()) })
    }

    /// `skills/get` (the skills extension), as [`list_skills`](Self::list_skills);
    /// by default every URI is unknown (-32602).
    fn get_skill(
        &self,
        params: GetSkillRequestParams,
        _cx: RequestContext,
    ) -> Reply<GetSkillResult> {
        let mut error = ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("Unknown skill: {}", params.uri),
        );
        error.data = Some(serde_json::json!({ "uri": params.uri }));
        Box::pin(async move { Err(error) })
    }
}

/// The default answer to `resources/subscribe` and `unsubscribe`.
fn no_subscription(uri: &str) -> Reply<EmptyResult> {
    let error = ErrorObject::new(
        codes::METHOD_NOT_FOUND,
        format!("this server offers no subscription to {uri}"),
    );
    Box::pin(async move { Err(error) })
}

/// -32602 for a task id the handler does not know.
fn unknown_task(id: &str) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_PARAMS,
        format!("Invalid params: unknown task `{id}`"),
    )
}

/// The user a host request carries, as its bearer token names them: the
/// token's subject and all of its claims, checked by the endpoint's
/// authenticator before the handler sees the request.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HostUser {
    /// The token's subject (`sub`): who the user is to the issuer.
    pub sub: String,
    /// The token's claims (a JWT's payload, an introspection's answer),
    /// as the authenticator got them.
    pub claims: serde_json::Value,
}

impl HostUser {
    /// The user `sub`, with `claims`.
    pub fn new(sub: impl Into<String>, claims: serde_json::Value) -> Self {
        Self {
            sub: sub.into(),
            claims,
        }
    }
}
