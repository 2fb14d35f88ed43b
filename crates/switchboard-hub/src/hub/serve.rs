//! The hub as one MCP server: every ready server's tools under their
//! hub-wide names (`server__tool`), served to a host of either era with
//! [`switchboard::server`].
//!
//! - `tools/list` lists the tools of servers with a live connection (a
//!   server that failed, needs a login or is reconnecting has none listed);
//!   a session-era host gets `notifications/tools/list_changed` whenever
//!   that set changes (a server becomes ready or fails, a server's list
//!   changes, a server joins or leaves).
//! - `tools/call` routes by the hub-wide name. A backend that is not
//!   ready, closes during the call or fails it answers with an `isError`
//!   result saying which server and why, so one backend never fails the
//!   host's session; an unknown name is a `-32602` error.
//! - The host's progress token gets the backend's progress; the host
//!   cancelling the call cancels it on the backend.
//! - Prompts are named like tools (`server__prompt`); `prompts/get` and a
//!   prompt's `completion/complete` go to the server that lists it.
//! - Resources keep their server in their URI, reversibly:
//!   `switchboard://SERVER/URI`, both percent-encoded ([`resource_uri`]);
//!   `resources/read` goes to that server with the original URI, and the
//!   contents it answers carry gateway URIs again. Resource templates are
//!   served as `switchboard://SERVER/~/TEMPLATE` (the template as written
//!   after the mark, [`resource_template_uri`]), so a URI a host expands
//!   reaches the server exactly as its own template would have expanded.
//!   Every URI a backend's tool result or prompt message carries is made
//!   that backend's the same way ([`own_uris`](super::own_uris)).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;

use switchboard::BoxFuture;
use switchboard::RequestOptions;
use switchboard::server::{self, Peer, Reply, RequestContext, ServeOptions, Served, ServerHandler};
use switchboard::transport::Connection;
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::skills::SKILLS_EXTENSION;
use switchboard::types::{
    CacheScope, GetSkillRequestParams, GetSkillResult, ListSkillsResult, SkillEntry, SkillFiles,
};
use switchboard::types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResult, Implementation, InputRequiredResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResult, Reference,
    RequestOutcome, ResourceContents, ServerCapabilities, codes,
};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use super::audit::{self, AuditEntry, AuditKind, AuditLog};
use super::forward::{Ask, AskAnswer, BackendAsks, HostId, Refusal, Registration};
use super::policy::{ToolAnswer, ToolApprover, ToolAsk};
use super::{Hub, HubError, HubEvent};

/// The server and own name of the prompt the hub lists as `name`.
async fn prompt_route(hub: &Hub, name: &str) -> Result<(String, String), ErrorObject> {
    hub.prompts()
        .await
        .items
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| (p.server, p.prompt.name))
        .ok_or_else(|| ErrorObject::new(codes::INVALID_PARAMS, format!("Unknown prompt: {name}")))
}

/// The gateway URI of `server`'s resource `uri`:
/// `switchboard://SERVER/URI`, both parts percent-encoded (everything but
/// RFC 3986's unreserved characters), so any server name and URI survive
/// the round trip ([`resource_origin`]).
pub fn resource_uri(server: &str, uri: &str) -> String {
    format!("{URI_PREFIX}{}/{}", encode(server), encode(uri))
}

/// The gateway template of `server`'s resource template:
/// `switchboard://SERVER/~/TEMPLATE`, the template as written after the
/// `~/` mark, so that a URI the host expands from it carries, after the
/// mark, exactly the URI the server's template expands to (its
/// percent-encodings included); [`resource_origin`] reads both forms.
pub fn resource_template_uri(server: &str, template: &str) -> String {
    format!("{URI_PREFIX}{}/{RAW_MARK}{template}", encode(server))
}

/// Marks a gateway URI whose original URI follows as written (an encoded
/// original never starts so: its `/` is `%2F`).
const RAW_MARK: &str = "~/";

/// The gateway URI of `server`'s skill file `uri`: `skill://PATH` becomes
/// `skill://SERVER/PATH` — still a skill URI whose last segments are the
/// skill's own (its name, then `SKILL.md`), so hosts of the skills
/// extension take it as it is. `None` for a URI that is not `skill://`.
pub fn skill_uri(server: &str, uri: &str) -> Option<String> {
    let path = uri.strip_prefix(SKILL_SCHEME)?;
    Some(format!("{SKILL_SCHEME}{}/{path}", encode(server)))
}

/// The server and original URI of a gateway skill URI.
pub fn skill_origin(uri: &str) -> Option<(String, String)> {
    let (server, path) = uri.strip_prefix(SKILL_SCHEME)?.split_once('/')?;
    // A dot segment (`skill://a/../b/x`, also percent-encoded) is no
    // skill file of `a`'s: hosts and servers resolve it differently.
    let dot = |segment: &str| {
        let segment = segment.to_ascii_lowercase().replace("%2e", ".");
        segment == "." || segment == ".."
    };
    if path.is_empty() || path.split('/').any(dot) {
        return None;
    }
    Some((decode(server)?, format!("{SKILL_SCHEME}{path}")))
}

const SKILL_SCHEME: &str = "skill://";

/// A backend's skill entry as the gateway lists it: every URI through
/// [`skill_uri`].
fn gateway_skill(server: &str, mut entry: SkillEntry) -> Option<SkillEntry> {
    entry.uri = skill_uri(server, &entry.uri)?;
    if let SkillFiles::Listed(files) = &mut entry.resources {
        for file in files {
            file.uri = skill_uri(server, &file.uri)?;
        }
    }
    Some(entry)
}

/// A backend's read as the gateway answers it: each content's URI through
/// `rewrite`; the backend's caching hints and identity dropped (they were
/// for it).
fn as_gateway_read(
    mut result: ReadResourceResult,
    rewrite: impl Fn(&str) -> String,
) -> ReadResourceResult {
    for contents in &mut result.contents {
        let uri = match contents {
            ResourceContents::Text(c) => &mut c.uri,
            ResourceContents::Blob(c) => &mut c.uri,
        };
        *uri = rewrite(uri);
    }
    result.result_type = None;
    result.ttl_ms = None;
    result.cache_scope = None;
    result.meta = None;
    result
}

/// The server and original URI of a gateway URI, when it is one.
pub fn resource_origin(uri: &str) -> Option<(String, String)> {
    let (server, original) = uri.strip_prefix(URI_PREFIX)?.split_once('/')?;
    let original = match original.strip_prefix(RAW_MARK) {
        Some(raw) => raw.to_owned(),
        None => decode(original)?,
    };
    Some((decode(server)?, original))
}

const URI_PREFIX: &str = "switchboard://";

fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// A hub error from a request routed to one server, for the host.
fn routed_error(error: HubError) -> ErrorObject {
    match error {
        HubError::UnknownServer { .. } => {
            ErrorObject::new(codes::INVALID_PARAMS, error.to_string())
        }
        other => ErrorObject::new(codes::INTERNAL_ERROR, other.to_string()),
    }
}

/// The hub as a [`ServerHandler`]; see the module documentation.
#[derive(Clone)]
pub struct HubServer {
    hub: Hub,
    info: Implementation,
    /// Flips to `true` when the hub's first start is over, and how long a
    /// `tools/list` waits for that.
    started: Option<(watch::Receiver<bool>, Duration)>,
    /// Where each tool call is recorded, and the host's session there.
    audit: Option<(Arc<AuditLog>, Arc<str>)>,
    /// Where backends' asks find the host call running on them.
    asks: Option<BackendAsks>,
    /// Calls waiting for a 2026-07-28 host's retry, by `requestState`.
    parked: ParkedCalls,
    /// The tool-search mode, when on.
    search: Option<Search>,
    /// Starts logins for the `authenticate` tools, when given.
    authenticator: Option<Authenticator>,
}

impl std::fmt::Debug for HubServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubServer")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl HubServer {
    /// Serves `hub` as the server `info` names.
    pub fn new(hub: Hub, info: Implementation) -> Self {
        Self {
            hub,
            info,
            started: None,
            audit: None,
            asks: None,
            parked: ParkedCalls::default(),
            search: None,
            authenticator: None,
        }
    }

    /// Lets a host log in to a server that needs it: `authenticator`
    /// starts a login to a server (by name) and answers the page to open
    /// and the login's end. A host that declared URL elicitation is asked
    /// to open the page when it calls that server's
    /// `SERVER__authenticate` tool; the server's tools appear when the
    /// login completes. Without it (or without URL elicitation) the tool
    /// says which command logs in.
    pub fn authenticator(mut self, authenticator: Authenticator) -> Self {
        self.authenticator = Some(authenticator);
        self
    }

    /// Tool-search mode, for hosts with small tool budgets: with more than
    /// `max_tools` tools, `tools/list` shows only `search_tools` and the
    /// tools found with it so far (at most `max_tools - 1`); a session-era
    /// host hears `list_changed` when a search adds some. Any tool can
    /// still be called by its name. `rank` orders tools for a query.
    pub fn tool_search(mut self, max_tools: usize, rank: Ranker) -> Self {
        self.search = Some(Search {
            max: max_tools.max(2),
            rank,
            found: Arc::default(),
        });
        self
    }

    /// Forwards what backends ask of their client (elicitation, sampling)
    /// to the host whose call is running on them, in the host's era: a
    /// request to a session-era host, an `input_required` round to a
    /// 2026-07-28 one. `asks` must be the one whose
    /// [`BackendAsks::client`] the hub's clients were built with. An ask
    /// the host cannot answer (it did not declare the capability) is
    /// declined on its behalf, with a log line.
    pub fn forward_asks(mut self, asks: BackendAsks) -> Self {
        self.asks = Some(asks);
        self
    }

    /// Records every tool call in `log` (see [`super::audit`]), as made
    /// in the host session `session`.
    pub fn audit(mut self, log: Arc<AuditLog>, session: impl Into<Arc<str>>) -> Self {
        self.audit = Some((log, session.into()));
        self
    }

    /// Makes every request wait (at most `at_most`) until `started` is
    /// `true` — the hub's first start is over — so a host that lists its
    /// tools once, right after connecting, sees every server that starts
    /// in time, not only the fast ones, and a call made at once is not an
    /// unknown tool. Once started, nothing waits.
    pub fn wait_for_start(mut self, started: watch::Receiver<bool>, at_most: Duration) -> Self {
        self.started = Some((started, at_most));
        self
    }

    /// Resolves when the hub's first start is over, or its wait is up (at
    /// once without [`HubServer::wait_for_start`]).
    fn first_start(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let started = self.started.clone();
        async move {
            if let Some((mut started, at_most)) = started {
                let _ = tokio::time::timeout(at_most, started.wait_for(|s| *s)).await;
            }
        }
    }

    /// Serves the hub on `connection` until the host goes away, telling a
    /// session-era host when the tool list changes.
    pub fn serve(self, connection: Connection, options: ServeOptions) -> Served {
        let events = self.hub.events();
        let served = server::serve(Arc::new(self), connection, options);
        tokio::spawn(forward_list_changes(events, served.peer().clone()));
        served
    }
}

impl HubServer {
    /// The gateway's metrics in the Prometheus text format: per server its
    /// state, tool calls, errors, timeouts, reconnects, calls in flight and
    /// a call-latency histogram (`switchboard_call_duration_seconds`).
    pub fn metrics_text(&self) -> String {
        use std::fmt::Write as _;
        let servers = self.hub.list();
        let stats: Vec<_> = servers
            .iter()
            .map(|s| (s, self.hub.stats(&s.name).unwrap_or_default()))
            .collect();
        let mut out = String::new();
        let metric = "switchboard_backend_up";
        let _ = writeln!(
            out,
            "# HELP {metric} Whether the backend is ready (1) or not (0), with its state.\n# TYPE {metric} gauge"
        );
        for (server, _) in &stats {
            let _ = writeln!(
                out,
                "{metric}{{server=\"{}\",state=\"{}\"}} {}",
                label(&server.name),
                server.state.name(),
                u8::from(server.state.is_ready())
            );
        }
        /// A metric's name, type, help and value.
        type Counter = (
            &'static str,
            &'static str,
            &'static str,
            fn(&super::ServerStats) -> u64,
        );
        let counters: [Counter; 5] = [
            (
                "switchboard_calls_total",
                "counter",
                "Tool calls finished.",
                |s| s.calls,
            ),
            (
                "switchboard_call_errors_total",
                "counter",
                "Tool calls that failed (an isError result is not a failure).",
                |s| s.errors,
            ),
            (
                "switchboard_call_timeouts_total",
                "counter",
                "Tool calls that timed out.",
                |s| s.timeouts,
            ),
            (
                "switchboard_reconnects_total",
                "counter",
                "Reconnections after an unexpected close.",
                |s| s.reconnects,
            ),
            (
                "switchboard_calls_in_flight",
                "gauge",
                "Tool calls under way.",
                |s| s.in_flight,
            ),
        ];
        for (metric, kind, help, get) in counters {
            let _ = writeln!(out, "# HELP {metric} {help}\n# TYPE {metric} {kind}");
            for (server, snapshot) in &stats {
                let _ = writeln!(
                    out,
                    "{metric}{{server=\"{}\"}} {}",
                    label(&server.name),
                    get(snapshot)
                );
            }
        }
        let metric = "switchboard_call_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {metric} Tool call latency.\n# TYPE {metric} histogram"
        );
        for (server, snapshot) in &stats {
            let server = label(&server.name);
            for (bound, count) in &snapshot.latency_buckets {
                let _ = writeln!(
                    out,
                    "{metric}_bucket{{server=\"{server}\",le=\"{}\"}} {count}",
                    bound.as_secs_f64()
                );
            }
            let _ = writeln!(
                out,
                "{metric}_bucket{{server=\"{server}\",le=\"+Inf\"}} {}",
                snapshot.calls
            );
            let _ = writeln!(
                out,
                "{metric}_sum{{server=\"{server}\"}} {}",
                snapshot.latency_sum.as_secs_f64()
            );
            let _ = writeln!(
                out,
                "{metric}_count{{server=\"{server}\"}} {}",
                snapshot.calls
            );
        }
        out
    }
}

/// A Prometheus label value: backslash, double quote and newline escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One `notifications/tools/list_changed` per hub event that changes what
/// `tools/list` shows, from the session-era host's
/// `notifications/initialized` until it goes away. (A 2026-07-28 host
/// hears of changes on a `subscriptions/listen` stream, not served yet.)
async fn forward_list_changes(mut events: super::HubEvents, peer: Peer) {
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

impl ServerHandler for HubServer {
    fn info(&self) -> Implementation {
        self.info.clone()
    }

    fn capabilities(&self) -> ServerCapabilities {
        serde_json::from_value(serde_json::json!({
            "tools": { "listChanged": true },
            "prompts": {},
            "resources": {},
            "completions": {},
            // Skills of the backends that offer them (an empty list when
            // none does): declared always, as the backends are not all
            // started when a host initializes.
            "extensions": { SKILLS_EXTENSION: {} },
        }))
        .unwrap_or_default()
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
        let hub = self.hub.clone();
        let first_start = self.first_start();
        let audit = self.audit.clone();
        Box::pin(async move {
            first_start.await;
            let (server, name) = prompt_route(&hub, &params.name).await?;
            let result = hub
                .get_prompt(&server, name, params.arguments)
                .await
                .map(|mut result| {
                    for message in &mut result.messages {
                        super::own_uris::own_block(&server, &mut message.content);
                    }
                    result
                })
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

    fn complete(
        &self,
        mut params: CompleteRequestParams,
        _cx: RequestContext,
    ) -> Reply<CompleteResult> {
        let hub = self.hub.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let server = match &mut params.r#ref {
                Reference::Prompt(reference) => {
                    let (server, name) = prompt_route(&hub, &reference.name).await?;
                    reference.name = name;
                    server
                }
                Reference::Resource(reference) => {
                    let (server, uri) = resource_origin(&reference.uri).ok_or_else(|| {
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
        let hub = self.hub.clone();
        let first_start = self.first_start();
        let audit = self.audit.clone();
        Box::pin(async move {
            first_start.await;
            if let Some((server, uri)) = skill_origin(&params.uri) {
                let result = hub.read_resource(&server, uri).await.map_err(routed_error);
                audit::note_result(
                    audit.as_ref(),
                    AuditKind::ResourceRead,
                    Some(&server),
                    &params.uri,
                    &result,
                );
                let result = result?;
                return Ok(as_gateway_read(result, |uri| {
                    skill_uri(&server, uri).unwrap_or_else(|| uri.to_owned())
                }));
            }
            let raw = params
                .uri
                .strip_prefix(URI_PREFIX)
                .and_then(|rest| rest.split_once('/'))
                .is_some_and(|(_, original)| original.starts_with(RAW_MARK));
            // Not found: -32002 in the session era, -32602 in 2026-07-28
            // (SEP-2164), the URI in the data either way.
            let (server, uri) = resource_origin(&params.uri).ok_or_else(|| ErrorObject {
                code: if modern {
                    codes::INVALID_PARAMS
                } else {
                    codes::RESOURCE_NOT_FOUND
                },
                message: format!(
                    "Resource not found: {} (not a resource of this gateway)",
                    params.uri
                ),
                data: Some(serde_json::json!({ "uri": params.uri })),
            })?;
            let result = hub.read_resource(&server, uri).await.map_err(routed_error);
            audit::note_result(
                audit.as_ref(),
                AuditKind::ResourceRead,
                Some(&server),
                &params.uri,
                &result,
            );
            Ok(as_gateway_read(result?, |uri| {
                if raw {
                    resource_template_uri(&server, uri)
                } else {
                    resource_uri(&server, uri)
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

    fn instructions(&self) -> Option<String> {
        Some(
            "Tools and prompts of several MCP servers, each named `server__name` after the server it belongs to; resources as switchboard://SERVER/URI; skills as skill://SERVER/PATH."
                .to_owned(),
        )
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
        _cx: RequestContext,
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
        Some(Box::pin(async move {
            first_start.await;
            let written = match list.as_str() {
                "tools/list" => this.tools_json(),
                "resources/list" => this.hub.resources_json().await,
                "resources/templates/list" => this.hub.resource_templates_json().await,
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
            let (server, outcome) = this.call(params, cx).await;
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
}

/// The tool-search mode's state: the budget, the ranking and the tools
/// found so far (listed beside `search_tools`), oldest first.
#[derive(Clone)]
struct Search {
    max: usize,
    rank: Ranker,
    found: Arc<Mutex<Vec<String>>>,
}

/// Ranks tools for a query: given each tool's (name, server, tool name,
/// title, description) and the most to return, their indexes, best first.
pub type Ranker = Arc<dyn Fn(&[[&str; 5]], &str, usize) -> Vec<usize> + Send + Sync>;

/// Starts a login to a server (by name): the page its user must open, and
/// the login's end (an error says why it failed).
pub type Authenticator = Arc<
    dyn Fn(
            &str,
        )
            -> BoxFuture<'static, Result<(String, BoxFuture<'static, Result<(), String>>), String>>
        + Send
        + Sync,
>;

/// The `_meta` key of each listed tool that names its server and its own
/// name there: `{"server": …, "tool": …}`.
pub const ORIGIN_META: &str = "switchboard/origin";

/// What follows the server's name in the tool that logs in to it.
pub const AUTHENTICATE_TOOL: &str = "authenticate";

/// How long an `authenticate` call waits for the login to complete.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The tool a server waiting for a login is listed as.
fn authenticate_tool(server: &str) -> switchboard::types::Tool {
    serde_json::from_value(serde_json::json!({
        "name": super::namespaced(server, AUTHENTICATE_TOOL),
        "description": format!(
            "Server `{server}` needs a login before its tools can be used: call this to log in \
             (you will be asked to open its login page); its tools appear when the login completes."
        ),
        "inputSchema": {"type": "object", "properties": {}},
    }))
    .expect("a valid tool")
}

/// The tool-search mode's one tool.
pub const SEARCH_TOOL: &str = "search_tools";

fn search_tool() -> switchboard::types::Tool {
    serde_json::from_value(serde_json::json!({
        "name": SEARCH_TOOL,
        "description": "Finds tools by keywords among the many this gateway offers; the ones \
            found are listed from then on and can be called by their names.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords: what the tool should do"},
                "limit": {"type": "integer", "minimum": 1, "description": "Most tools to return (default 10)"},
            },
            "required": ["query"],
        },
    }))
    .expect("a valid tool")
}

impl HubServer {
    /// The servers waiting for a login.
    fn waiting_for_login(&self) -> Vec<String> {
        self.hub
            .list()
            .into_iter()
            .filter(|s| matches!(s.state, super::ServerState::NeedsAuth { .. }))
            .map(|s| s.name)
            .collect()
    }

    /// The `authenticate` call for `server` as a flight: the host is asked
    /// to open the login page (a URL elicitation), then the login's end is
    /// awaited and the server started again.
    async fn authenticate(
        &self,
        server: String,
        cx: &RequestContext,
    ) -> Result<Flight, CallToolResult> {
        let command = format!("switchboard login {server}");
        let can_open = cx
            .client_capabilities
            .elicitation
            .as_ref()
            .is_some_and(|e| e.url.is_some());
        let Some(authenticator) = self.authenticator.clone().filter(|_| can_open) else {
            tracing::warn!(%server, "server `{server}` needs a login: run `{command}`");
            return Err(error_result(format!(
                "Server `{server}` needs a login, and this host cannot open a login page for it \
                 (it did not declare URL elicitation): run `{command}` in a terminal; its tools \
                 appear when the login completes."
            )));
        };
        let hub = self.hub.clone();
        let name = super::namespaced(&server, AUTHENTICATE_TOOL);
        let (own_tx, own) = mpsc::unbounded_channel();
        let approver = audit::approver(
            self.audit.as_ref(),
            host_approver(name.clone(), own_tx.clone()),
        );
        let audit = self.audit.clone();
        let call: BoxFuture<'static, Result<CallToolResult, HubError>> = Box::pin(async move {
            // The policy first, as for any tool: nothing starts before.
            let allowed = hub
                .check_tool_named(&server, AUTHENTICATE_TOOL, None, Some(&approver))
                .await;
            audit::note_denied(audit.as_ref(), &allowed);
            allowed?;
            let (page, done) = match authenticator(&server).await {
                Ok(started) => {
                    audit::note(
                        audit.as_ref(),
                        AuditKind::Login,
                        Some(&server),
                        "start",
                        "ok",
                        None,
                    );
                    started
                }
                Err(why) => {
                    let why = why.to_string();
                    audit::note(
                        audit.as_ref(),
                        AuditKind::Login,
                        Some(&server),
                        "start",
                        "error",
                        Some(&why),
                    );
                    return Ok(error_result(format!(
                        "cannot start a login to `{server}`: {why} (or run `{command}` in a terminal)"
                    )));
                }
            };
            let mut id = [0u8; 16];
            let _ = aws_lc_rs::rand::fill(&mut id);
            let elicitation_id: String = id.iter().map(|b| format!("{b:02x}")).collect();
            let (answer, answered) = oneshot::channel();
            let _ = own_tx.send(Ask {
                method: "elicitation/create",
                params: serde_json::json!({
                    "mode": "url",
                    "message": format!("Log in to `{server}` to use its tools: open this page and approve."),
                    "url": page,
                    "elicitationId": elicitation_id,
                }),
                answer,
            });
            let accepted = matches!(
                answered.await,
                Ok(Ok(answer)) if answer.get("action").and_then(Value::as_str) == Some("accept")
            );
            if !accepted {
                return Ok(error_result(format!(
                    "not logged in: the login page was not opened (run `{command}` in a terminal instead)"
                )));
            }
            let ended = match tokio::time::timeout(LOGIN_TIMEOUT, done).await {
                Err(_) => Ok(error_result(format!(
                    "the login to `{server}` did not complete within {} s; call this tool again",
                    LOGIN_TIMEOUT.as_secs()
                ))),
                Ok(Err(why)) => Ok(error_result(format!(
                    "the login to `{server}` failed: {why}"
                ))),
                Ok(Ok(())) => match hub.login_completed(&server).await {
                    Ok(state) if state.is_ready() => Ok(CallToolResult::text(format!(
                        "Logged in to `{server}`: its tools are listed now."
                    ))),
                    Ok(state) => Ok(error_result(format!(
                        "logged in, but `{server}` is {state} now"
                    ))),
                    Err(error) => Ok(error_result(error.to_string())),
                },
            };
            audit::note_login_end(audit.as_ref(), &server, &ended);
            ended
        });
        Ok(Flight {
            name,
            server: None,
            call,
            progress: ProgressQueue::default(),
            asks: mpsc::unbounded_channel().1,
            own,
            rounds: 0,
            _registration: None,
        })
    }

    /// The `tools/list` result: the tools of ready servers, not denied
    /// (in tool-search mode, the search tool and what it found when they
    /// are too many), then the `authenticate` tools of servers waiting
    /// for a login.
    fn tools_json(&self) -> Result<Box<RawValue>, serde_json::Error> {
        // The policy speaks of `SERVER/authenticate` as of any tool.
        let policy = self.hub.tool_policy();
        let last: Vec<_> = self
            .waiting_for_login()
            .iter()
            .filter(|s| !self.hub.tool_denied(&policy, s, AUTHENTICATE_TOOL))
            .map(|s| authenticate_tool(s))
            .collect();
        let mut tools = self.hub.served_tools();
        let mut first = Vec::new();
        if let Some(search) = &self.search
            && tools.len() > search.max
        {
            let found = search.found.lock().unwrap_or_else(|e| e.into_inner());
            tools.retain(|name| found.iter().any(|f| f == name));
            first.push(search_tool());
        }
        tools.to_json(&first, &last)
    }

    /// The tools the host may see: those of ready servers, not denied.
    fn visible_tools(&self) -> Vec<switchboard::types::Tool> {
        let ready: std::collections::HashSet<String> = self
            .hub
            .list()
            .into_iter()
            .filter(|s| s.state.is_ready())
            .map(|s| s.name)
            .collect();
        self.hub
            .tools()
            .into_iter()
            .filter(|t| !t.stale && ready.contains(&t.server))
            .map(|t| {
                let mut tool = t.tool;
                // Where it comes from, for a client that shows it (the
                // CLI's `tools` through `switchboard up`).
                tool.meta.get_or_insert_with(Default::default).insert(
                    ORIGIN_META.to_owned(),
                    serde_json::json!({"server": t.server, "tool": tool.name}),
                );
                tool.name = t.name;
                tool
            })
            .collect()
    }

    /// `search_tools`: ranks the visible tools, remembers what it found
    /// (at most the budget less one, the oldest forgotten first) and, when
    /// that changed what `tools/list` shows, tells a session-era host.
    async fn search_tools(
        &self,
        search: &Search,
        params: &CallToolRequestParams,
        cx: &RequestContext,
    ) -> CallToolResult {
        let arguments = params.arguments.clone().unwrap_or_default();
        let Some(query) = arguments.get("query").and_then(Value::as_str) else {
            return error_result(format!("{SEARCH_TOOL} needs a `query` string"));
        };
        let room = search.max.saturating_sub(1).max(1);
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(10, |l| usize::try_from(l).unwrap_or(usize::MAX))
            .clamp(1, room);
        let hub_tools = self.hub.tools();
        let visible = self.visible_tools();
        let described: Vec<[&str; 5]> = visible
            .iter()
            .map(|tool| {
                let (server, own) = hub_tools
                    .iter()
                    .find(|t| t.name == tool.name)
                    .map_or(("", tool.name.as_str()), |t| {
                        (t.server.as_str(), t.tool.name.as_str())
                    });
                [
                    tool.name.as_str(),
                    server,
                    own,
                    tool.title.as_deref().unwrap_or_default(),
                    tool.description.as_deref().unwrap_or_default(),
                ]
            })
            .collect();
        let hits = (search.rank)(&described, query, limit);
        let mut grew = false;
        let mut lines = Vec::new();
        {
            let mut found = search.found.lock().unwrap_or_else(|e| e.into_inner());
            for &i in &hits {
                let Some(tool) = visible.get(i) else { continue };
                if let Some(at) = found.iter().position(|n| *n == tool.name) {
                    let name = found.remove(at);
                    found.push(name);
                } else {
                    found.push(tool.name.clone());
                    grew = true;
                }
                lines.push(format!(
                    "{}: {}",
                    tool.name,
                    tool.description.as_deref().unwrap_or("(no description)")
                ));
            }
            while found.len() > room {
                found.remove(0);
            }
        }
        if grew
            && cx.era == switchboard::types::Era::Legacy
            && cx
                .peer
                .notify("notifications/tools/list_changed", None)
                .await
                .is_err()
        {
            tracing::debug!("the host went away before hearing of the tools found");
        }
        if lines.is_empty() {
            return CallToolResult::text(format!("No tool matches `{query}`; try other keywords."));
        }
        CallToolResult::text(format!(
            "Tools found (now listed; call them by these names):\n{}",
            lines.join("\n")
        ))
    }
}

/// How long a host has to answer what a backend asked (a person may be
/// filling in a form).
const ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a call waits for a 2026-07-28 host's retry, and how many may
/// wait at once.
const PARK_TTL: Duration = Duration::from_secs(600);
const MAX_PARKED: usize = 1024;
/// Calls of one 2026-07-28 host (by the name it gives in `clientInfo`)
/// parked at once: one host filling [`MAX_PARKED`] cannot keep another's
/// asks out.
const MAX_PARKED_PER_HOST: usize = 64;

/// Progress updates of a backend waiting for the host, at most this many.
const PROGRESS_WAITING: usize = 16;

/// A backend's progress on its way to the host: at most
/// [`PROGRESS_WAITING`] updates wait; past that the newest replaces the
/// last waiting one (only the latest matters), so a host slower than its
/// backend never makes the gateway buffer.
#[derive(Clone, Default)]
struct ProgressQueue(
    Arc<(
        Mutex<std::collections::VecDeque<switchboard::Progress>>,
        Notify,
    )>,
);

impl ProgressQueue {
    fn send(&self, progress: switchboard::Progress) {
        {
            let mut waiting = self.0.0.lock().unwrap_or_else(|e| e.into_inner());
            if waiting.len() >= PROGRESS_WAITING {
                waiting.pop_back();
            }
            waiting.push_back(progress);
        }
        self.0.1.notify_one();
    }

    fn try_recv(&self) -> Option<switchboard::Progress> {
        self.0
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
    }

    /// The next update. Cancel safe: nothing is taken unless returned.
    async fn recv(&self) -> switchboard::Progress {
        loop {
            if let Some(progress) = self.try_recv() {
                return progress;
            }
            self.0.1.notified().await;
        }
    }
}

/// A host's call in progress: the backend's call and what comes on the way.
struct Flight {
    name: String,
    server: Option<String>,
    call: BoxFuture<'static, Result<CallToolResult, HubError>>,
    progress: ProgressQueue,
    asks: mpsc::UnboundedReceiver<Ask>,
    /// Asks of the gateway's own: the policy's question, the login page.
    own: mpsc::UnboundedReceiver<Ask>,
    rounds: usize,
    _registration: Option<Registration>,
}

/// A call waiting for a 2026-07-28 host's retry with the answer to `key`.
struct Parked {
    flight: Flight,
    key: String,
    answer: oneshot::Sender<AskAnswer>,
    /// The host's name (`clientInfo.name`), for [`MAX_PARKED_PER_HOST`].
    host: String,
}

#[derive(Clone, Default)]
struct ParkedCalls(Arc<Mutex<HashMap<String, Parked>>>);

impl ParkedCalls {
    fn take(&self, state: &str) -> Option<Parked> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(state)
    }

    /// Keeps `parked` under a fresh unguessable `requestState` for at most
    /// [`PARK_TTL`]; `None` when too many wait already.
    fn park(&self, parked: Parked) -> Result<String, Box<Parked>> {
        let mut bytes = [0u8; 16];
        if aws_lc_rs::rand::fill(&mut bytes).is_err() {
            return Err(Box::new(parked));
        }
        let state: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        {
            let mut calls = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let of_host = calls.values().filter(|p| p.host == parked.host).count();
            if calls.len() >= MAX_PARKED || of_host >= MAX_PARKED_PER_HOST {
                return Err(Box::new(parked));
            }
            calls.insert(state.clone(), parked);
        }
        let calls = Arc::downgrade(&self.0);
        let expiring = state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PARK_TTL).await;
            if let Some(calls) = calls.upgrade() {
                // Dropping the call cancels it on the backend.
                calls
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&expiring);
            }
        });
        Ok(state)
    }
}

/// Why the host cannot take `ask`, if it cannot.
fn host_cannot(cx: &RequestContext, ask: &Ask) -> Option<String> {
    let caps = &cx.client_capabilities;
    let missing = match ask.method {
        "elicitation/create" => {
            let url = ask.params.get("mode").and_then(Value::as_str) == Some("url");
            match &caps.elicitation {
                None => Some("elicitation"),
                Some(e) if url && e.url.is_none() => Some("elicitation.url"),
                Some(e) if !url && e.form.is_none() && e.url.is_some() => Some("elicitation.form"),
                Some(_) => None,
            }
        }
        "sampling/createMessage" => match &caps.sampling {
            None => Some("sampling"),
            Some(s) if ask.params.get("tools").is_some() && s.tools.is_none() => {
                Some("sampling.tools")
            }
            Some(_) => None,
        },
        _ => Some("that request"),
    }?;
    Some(format!(
        "the host did not declare the {missing} capability, so `{}` was declined on its behalf",
        ask.method
    ))
}

fn host_error(error: switchboard::engine::EngineError) -> Refusal {
    match error {
        switchboard::engine::EngineError::Server { error, .. } => Refusal::Error(*error),
        other => Refusal::Error(ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("the host did not answer: {other}"),
        )),
    }
}

/// The gateway's answer to the policy's `ask` for the host calling `name`
/// (its hub-wide name): an elicitation form put to the host's user
/// through `own` (the flight's own asks), with an `always` box; a host
/// that cannot take it, declines or fails to answer refuses the call.
fn host_approver(name: String, own: mpsc::UnboundedSender<Ask>) -> Arc<dyn ToolApprover> {
    Arc::new(move |ask: ToolAsk| -> BoxFuture<'static, ToolAnswer> {
        let name = name.clone();
        let own = own.clone();
        Box::pin(async move {
            let arguments = serde_json::to_string(&ask.arguments).unwrap_or_default();
            let (answer, answered) = oneshot::channel();
            let sent = own.send(Ask {
                method: "elicitation/create",
                params: serde_json::json!({
                    "mode": "form",
                    "message": format!(
                        "Allow the tool `{name}` (server `{}`'s `{}`) to run with the arguments \
                         {arguments}? (switchboard's policy asks first: {})",
                        ask.server, ask.tool, ask.rule
                    ),
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "always": {
                                "type": "boolean",
                                "title": "Always allow this tool of this server",
                                "description": "Remembered until the server's configuration \
                                    changes or `switchboard policy revoke` forgets it",
                                "default": false,
                            },
                        },
                    },
                }),
                answer,
            });
            if sent.is_err() {
                return ToolAnswer::Refuse("the host's call ended before it was asked".into());
            }
            match answered.await {
                Ok(Ok(answer))
                    if answer.get("action").and_then(Value::as_str) == Some("accept") =>
                {
                    let always = answer
                        .pointer("/content/always")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    if always {
                        ToolAnswer::Always
                    } else {
                        ToolAnswer::Once
                    }
                }
                Ok(Ok(_)) | Err(_) => {
                    ToolAnswer::Refuse(format!("the user did not allow `{name}` to run"))
                }
                Ok(Err(Refusal::Declined(why))) => ToolAnswer::Refuse(format!(
                    "switchboard's policy asks the user before `{name}` runs, and {why}"
                )),
                Ok(Err(Refusal::Error(error))) => ToolAnswer::Refuse(format!(
                    "asking the user before `{name}` runs failed: {}",
                    error.message
                )),
            }
        })
    })
}

/// A list result the gateway wrote (`list_json`), read back as its type
/// (for a caller of the typed method; the server asks for the text).
fn read_back<T: serde::de::DeserializeOwned + Send + 'static>(
    written: Option<Reply<Box<RawValue>>>,
) -> Reply<T> {
    Box::pin(async move {
        let text = written.expect("the gateway writes its lists").await?;
        serde_json::from_str(text.get())
            .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
    })
}

/// A tool result saying why the call did not run or failed.
fn error_result(text: String) -> CallToolResult {
    let mut result = CallToolResult::text(text);
    result.is_error = Some(true);
    result
}

/// Writes the audit line of one answered round.
fn record(
    log: &AuditLog,
    session: &str,
    server: Option<&str>,
    name: &str,
    arguments: Option<&switchboard::types::JsonObject>,
    outcome: &Result<RequestOutcome<CallToolResult>, ErrorObject>,
    started: std::time::Instant,
) {
    let (kind, message, bytes) = match outcome {
        Ok(RequestOutcome::Complete(result)) => {
            let failed = result.is_error == Some(true);
            (
                if failed { "tool_error" } else { "ok" },
                failed.then(|| {
                    result
                        .content
                        .first()
                        .and_then(|c| c.as_text())
                        .unwrap_or_default()
                        .to_owned()
                }),
                serde_json::to_vec(result).map_or(0, |v| v.len()),
            )
        }
        Ok(_) => ("input_required", None, 0),
        Err(error) => ("error", Some(error.message.clone()), 0),
    };
    let entry = AuditEntry {
        kind: AuditKind::ToolCall,
        session,
        server,
        name,
        arguments,
        outcome: kind,
        message: message.as_deref(),
        duration: started.elapsed(),
        bytes,
    };
    if let Err(error) = log.record(&entry) {
        tracing::error!(path = %log.path().display(), %error, "could not write the audit log");
    }
}

impl HubServer {
    /// `tools/call` through the hub: a new call, or the retry of a parked
    /// one. Says which server it went to.
    async fn call(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> (
        Option<String>,
        Result<RequestOutcome<CallToolResult>, ErrorObject>,
    ) {
        if let Some(state) = params.request_state.as_deref() {
            let Some(parked) = self.parked.take(state) else {
                let error = ErrorObject::new(
                    codes::INVALID_PARAMS,
                    "Invalid params: this requestState is unknown or expired (a call waits \
                     10 minutes for its retry); call the tool again without it",
                );
                return (None, Err(error));
            };
            if parked.flight.name != params.name {
                let error = ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!(
                        "Invalid params: this requestState belongs to a call of `{}`, not `{}`",
                        parked.flight.name, params.name
                    ),
                );
                return (None, Err(error));
            }
            let answer = params
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(&parked.key))
                .map(|response| serde_json::to_value(response).unwrap_or_default());
            let _ = parked.answer.send(answer.ok_or_else(|| {
                Refusal::Declined("the host's retry did not answer the request".to_owned())
            }));
            let server = parked.flight.server.clone();
            return (server, self.drive(parked.flight, cx).await);
        }
        if let Some(server) = params
            .name
            .strip_suffix(AUTHENTICATE_TOOL)
            .and_then(|rest| rest.strip_suffix("__"))
            .filter(|server| self.waiting_for_login().iter().any(|s| s == server))
        {
            let server = server.to_owned();
            return match self.authenticate(server.clone(), &cx).await {
                Ok(flight) => (Some(server), self.drive(flight, cx).await),
                Err(result) => (Some(server), Ok(RequestOutcome::Complete(result))),
            };
        }
        if let Some(search) = &self.search
            && params.name == SEARCH_TOOL
        {
            let result = self.search_tools(search, &params, &cx).await;
            return (None, Ok(RequestOutcome::Complete(result)));
        }
        let server = self.hub.tool_server(&params.name);
        // The backend's asks about this call come back to this host only.
        let (registration, asks) = match (&self.asks, &server) {
            (Some(backend_asks), Some(server)) => {
                let host = match cx.era {
                    switchboard::types::Era::Legacy => HostId::peer(cx.peer.clone()),
                    // Stateless hosts share one connection: known by name
                    // for limits only.
                    _ => HostId::named(
                        cx.client_info
                            .as_ref()
                            .map(|info| info.name.clone())
                            .unwrap_or_default(),
                    ),
                };
                let (registration, asks) = backend_asks.register(server, host);
                (Some(registration), asks)
            }
            _ => (None, mpsc::unbounded_channel().1),
        };
        let progress = ProgressQueue::default();
        let progress_tx = progress.clone();
        let mut options = if cx.progress_token().is_some() {
            RequestOptions::default().on_progress(move |p| progress_tx.send(p))
        } else {
            RequestOptions::default()
        };
        if let Some(registration) = &registration {
            options = options.with_tag(registration.tag());
        }
        let hub = self.hub.clone();
        let name = params.name.clone();
        // The hub decides; an `ask` is put to this host's user.
        let (own_tx, own) = mpsc::unbounded_channel();
        let approver = audit::approver(self.audit.as_ref(), host_approver(name.clone(), own_tx));
        let audit = self.audit.clone();
        let call: BoxFuture<'static, Result<CallToolResult, HubError>> = Box::pin(async move {
            let result = hub
                .call_tool_asking(&name, params.arguments, options, Some(approver))
                .await;
            audit::note_denied(audit.as_ref(), &result);
            result
        });
        let flight = Flight {
            name: params.name,
            server: server.clone(),
            call,
            progress,
            asks,
            own,
            rounds: 0,
            _registration: registration,
        };
        (server, self.drive(flight, cx).await)
    }

    /// Runs `flight` for the host of `cx` until the backend answers — or,
    /// for a 2026-07-28 host, until something must be asked of it: then it
    /// is parked and the host gets an `input_required` round.
    async fn drive(
        &self,
        mut flight: Flight,
        cx: RequestContext,
    ) -> Result<RequestOutcome<CallToolResult>, ErrorObject> {
        enum Step {
            Progress(switchboard::Progress),
            Ask(Ask),
            Done(Result<CallToolResult, HubError>),
        }
        loop {
            let step = tokio::select! {
                biased;
                p = flight.progress.recv() => Step::Progress(p),
                Some(ask) = flight.own.recv() => Step::Ask(ask),
                Some(ask) = flight.asks.recv() => Step::Ask(ask),
                outcome = &mut flight.call => Step::Done(outcome),
            };
            match step {
                Step::Progress(p) => {
                    let _ = cx.progress(p.progress, p.total, p.message.as_deref()).await;
                }
                Step::Ask(ask) => {
                    let why = host_cannot(&cx, &ask);
                    let outcome = if why.is_some() {
                        "declined"
                    } else {
                        "forwarded"
                    };
                    audit::note(
                        self.audit.as_ref(),
                        AuditKind::of_ask(ask.method),
                        flight.server.as_deref(),
                        &flight.name,
                        outcome,
                        why.as_deref(),
                    );
                    if let Some(why) = why {
                        tracing::warn!(tool = %flight.name, "{why}");
                        let _ = ask.answer.send(Err(Refusal::Declined(why)));
                        continue;
                    }
                    if cx.era == switchboard::types::Era::Legacy {
                        let cx = cx.clone();
                        tokio::spawn(async move {
                            let answer = cx
                                .request(ask.method, ask.params, ASK_TIMEOUT)
                                .await
                                .map_err(host_error);
                            let _ = ask.answer.send(answer);
                        });
                        continue;
                    }
                    flight.rounds += 1;
                    let key = format!("{}-{}", ask.method.replace('/', "-"), flight.rounds);
                    let requests = serde_json::json!({
                        key.clone(): {"method": ask.method, "params": ask.params},
                    });
                    let requests = match serde_json::from_value(requests) {
                        Ok(requests) => requests,
                        Err(error) => {
                            let why =
                                format!("the backend's `{}` is malformed: {error}", ask.method);
                            let _ = ask.answer.send(Err(Refusal::Declined(why)));
                            continue;
                        }
                    };
                    let parked = Parked {
                        flight,
                        key,
                        answer: ask.answer,
                        host: cx
                            .client_info
                            .as_ref()
                            .map(|info| info.name.clone())
                            .unwrap_or_default(),
                    };
                    return match self.parked.park(parked) {
                        Ok(state) => Ok(RequestOutcome::InputRequired(InputRequiredResult {
                            input_requests: Some(requests),
                            request_state: Some(state),
                            ..Default::default()
                        })),
                        Err(parked) => {
                            let why = format!(
                                "too many calls wait for their host's answers (at most {MAX_PARKED_PER_HOST} of one host, {MAX_PARKED} in all)"
                            );
                            tracing::warn!(tool = %parked.flight.name, "{why}; declined");
                            let Parked {
                                flight: back,
                                answer,
                                ..
                            } = *parked;
                            let _ = answer.send(Err(Refusal::Declined(why)));
                            flight = back;
                            continue;
                        }
                    };
                }
                Step::Done(outcome) => {
                    while let Some(p) = flight.progress.try_recv() {
                        let _ = cx.progress(p.progress, p.total, p.message.as_deref()).await;
                    }
                    return finish(flight.server.as_deref(), outcome).map(RequestOutcome::Complete);
                }
            }
        }
    }
}

/// The host's answer to a call from the backend's.
fn finish(
    server: Option<&str>,
    outcome: Result<CallToolResult, HubError>,
) -> Result<CallToolResult, ErrorObject> {
    match outcome {
        // What described the backend's answer in its own era is
        // not ours to pass on: the host gets this server's.
        Ok(mut result) => {
            // What it links to is its own.
            if let Some(server) = server {
                super::own_uris::own_content(server, &mut result.content);
            }
            result.result_type = None;
            if let Some(meta) = &mut result.meta {
                meta.remove(switchboard::types::meta::META_SERVER_INFO);
                if meta.is_empty() {
                    result.meta = None;
                }
            }
            Ok(result)
        }
        Err(HubError::UnknownTool { name }) => Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("Unknown tool: {name}"),
        )),
        // The backend's trouble is the call's result, not the
        // host's session's: the model reads why.
        Err(error) => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                let cause = cause.to_string();
                if !text.contains(&cause) {
                    text = format!("{text}: {cause}");
                }
                source = cause_of(source);
            }
            Ok(error_result(text))
        }
    }
}

fn cause_of<'a>(
    error: Option<&'a (dyn std::error::Error + 'static)>,
) -> Option<&'a (dyn std::error::Error + 'static)> {
    error.and_then(std::error::Error::source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_uri_survives_the_round_trip() {
        for (server, uri) in [
            ("files", "file:///tmp/a b/c.txt"),
            ("odd/name", "https://x.example/p?q=1&r=%2F#frag"),
            ("ünï", "test://static/resource/1"),
            ("s", ""),
        ] {
            let mapped = resource_uri(server, uri);
            assert!(mapped.starts_with("switchboard://"), "{mapped}");
            assert!(
                mapped["switchboard://".len()..].matches('/').count() == 1,
                "one separator: {mapped}"
            );
            assert_eq!(
                resource_origin(&mapped),
                Some((server.to_owned(), uri.to_owned()))
            );
        }
        // A template's expressions survive; what a host expands from it
        // leads back to exactly what the server's template expands to.
        let template = resource_template_uri("my files", "file:///{path}?v={+rev}");
        assert_eq!(
            template,
            "switchboard://my%20files/~/file:///{path}?v={+rev}"
        );
        let expanded = template
            .replace("{path}", "a%20b%2Fc.txt")
            .replace("{+rev}", "7");
        assert_eq!(
            resource_origin(&expanded),
            Some((
                "my files".to_owned(),
                "file:///a%20b%2Fc.txt?v=7".to_owned()
            ))
        );
        // An encoded original starting with `~/` stays encoded, not raw.
        let odd = resource_uri("s", "~/x");
        assert_eq!(
            resource_origin(&odd),
            Some(("s".to_owned(), "~/x".to_owned()))
        );
        assert_eq!(resource_origin("file:///x"), None);
        // Dot segments in a skill URI are refused, not forwarded.
        for uri in [
            "skill://s/../x/SKILL.md",
            "skill://s/a/./SKILL.md",
            "skill://s/%2E%2e/x/SKILL.md",
            "skill://s/a/..",
        ] {
            assert_eq!(skill_origin(uri), None, "{uri}");
        }
        assert_eq!(
            skill_origin("skill://s/a..b/SKILL.md"),
            Some(("s".to_owned(), "skill://a..b/SKILL.md".to_owned()))
        );
        assert_eq!(resource_origin("switchboard://a/%zz"), None);
        assert_eq!(resource_origin("switchboard://a/%F"), None);
    }
}
