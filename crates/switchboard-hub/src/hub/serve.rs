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
//!   not served yet.

use std::sync::Arc;
use std::time::Duration;

use switchboard::RequestOptions;
use switchboard::server::{self, Peer, Reply, RequestContext, ServeOptions, Served, ServerHandler};
use switchboard::transport::Connection;
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResult, Implementation, ListPromptsResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResult, Reference, ResourceContents, ServerCapabilities, codes,
};
use tokio::sync::{mpsc, watch};

use super::audit::{AuditEntry, AuditLog};
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

/// The server and original URI of a gateway URI, when it is one.
pub fn resource_origin(uri: &str) -> Option<(String, String)> {
    let (server, original) = uri.strip_prefix(URI_PREFIX)?.split_once('/')?;
    Some((decode(server)?, decode(original)?))
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
        }
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
        }))
        .unwrap_or_default()
    }

    fn list_prompts(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Reply<ListPromptsResult> {
        let hub = self.hub.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let listing = hub.prompts().await;
            for error in &listing.failed {
                tracing::warn!(%error, "a server's prompts are not listed");
            }
            let prompts = listing
                .items
                .into_iter()
                .map(|p| {
                    let mut prompt = p.prompt;
                    prompt.name = p.name;
                    prompt
                })
                .collect();
            Ok(ListPromptsResult {
                prompts,
                ..Default::default()
            })
        })
    }

    fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        _cx: RequestContext,
    ) -> Reply<GetPromptResult> {
        let hub = self.hub.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let (server, name) = prompt_route(&hub, &params.name).await?;
            hub.get_prompt(&server, name, params.arguments)
                .await
                .map_err(routed_error)
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
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Reply<ListResourcesResult> {
        let hub = self.hub.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let listing = hub.resources().await;
            for error in &listing.failed {
                tracing::warn!(%error, "a server's resources are not listed");
            }
            let resources = listing
                .items
                .into_iter()
                .map(|r| {
                    let mut resource = r.resource;
                    resource.uri = resource_uri(&r.server, &resource.uri);
                    resource
                })
                .collect();
            Ok(ListResourcesResult {
                resources,
                ..Default::default()
            })
        })
    }

    fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        _cx: RequestContext,
    ) -> Reply<ReadResourceResult> {
        let hub = self.hub.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let (server, uri) = resource_origin(&params.uri).ok_or_else(|| {
                ErrorObject::new(
                    codes::RESOURCE_NOT_FOUND,
                    format!(
                        "Resource not found: {} (not a resource of this gateway)",
                        params.uri
                    ),
                )
            })?;
            let mut result = hub
                .read_resource(&server, uri)
                .await
                .map_err(routed_error)?;
            for contents in &mut result.contents {
                let uri = match contents {
                    ResourceContents::Text(c) => &mut c.uri,
                    ResourceContents::Blob(c) => &mut c.uri,
                };
                *uri = resource_uri(&server, uri);
            }
            // The backend's caching hints and identity were for it.
            result.result_type = None;
            result.ttl_ms = None;
            result.cache_scope = None;
            result.meta = None;
            Ok(result)
        })
    }

    fn instructions(&self) -> Option<String> {
        Some(
            "Tools and prompts of several MCP servers, each named `server__name` after the server it belongs to; resources as switchboard://SERVER/URI."
                .to_owned(),
        )
    }

    fn list_tools(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Reply<ListToolsResult> {
        let hub = self.hub.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let ready: std::collections::HashSet<String> = hub
                .list()
                .into_iter()
                .filter(|s| s.state.is_ready())
                .map(|s| s.name)
                .collect();
            let tools = hub
                .tools()
                .into_iter()
                .filter(|t| !t.stale && ready.contains(&t.server))
                .map(|t| {
                    let mut tool = t.tool;
                    tool.name = t.name;
                    tool
                })
                .collect();
            Ok(ListToolsResult {
                tools,
                ..Default::default()
            })
        })
    }

    fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Reply<CallToolResult> {
        let hub = self.hub.clone();
        let audit = self.audit.clone();
        let arguments = audit.as_ref().and(params.arguments.clone());
        let name = params.name.clone();
        let started = std::time::Instant::now();
        let first_start = self.first_start();
        let call = Self::call(hub.clone(), params, cx);
        Box::pin(async move {
            first_start.await;
            let server = audit.as_ref().and_then(|_| {
                hub.tools()
                    .into_iter()
                    .find(|t| t.name == name)
                    .map(|t| t.server)
            });
            let outcome = call.await;
            if let Some((log, session)) = audit {
                let failed = matches!(&outcome, Ok(result) if result.is_error == Some(true));
                let (kind, message, bytes) = match &outcome {
                    Ok(result) => (
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
                    ),
                    Err(error) => ("error", Some(error.message.clone()), 0),
                };
                let entry = AuditEntry {
                    session: &session,
                    server: server.as_deref(),
                    name: &name,
                    arguments: arguments.as_ref(),
                    outcome: kind,
                    message: message.as_deref(),
                    duration: started.elapsed(),
                    bytes,
                };
                if let Err(error) = log.record(&entry) {
                    tracing::error!(path = %log.path().display(), %error, "could not write the audit log");
                }
            }
            outcome
        })
    }
}

impl HubServer {
    /// `tools/call` through the hub (the audit is [`ServerHandler::call_tool`]'s).
    fn call(hub: Hub, params: CallToolRequestParams, cx: RequestContext) -> Reply<CallToolResult> {
        Box::pin(async move {
            let (progress_tx, mut progress) = mpsc::unbounded_channel();
            let options = if cx.progress_token().is_some() {
                RequestOptions::default().on_progress(move |p| {
                    let _ = progress_tx.send(p);
                })
            } else {
                RequestOptions::default()
            };
            let call = hub.call_tool_with(&params.name, params.arguments, options);
            tokio::pin!(call);
            let outcome = loop {
                tokio::select! {
                    biased;
                    Some(p) = progress.recv() => {
                        let _ = cx.progress(p.progress, p.total, p.message.as_deref()).await;
                    }
                    outcome = &mut call => break outcome,
                }
            };
            while let Ok(p) = progress.try_recv() {
                let _ = cx.progress(p.progress, p.total, p.message.as_deref()).await;
            }
            match outcome {
                // What described the backend's answer in its own era is
                // not ours to pass on: the host gets this server's.
                Ok(mut result) => {
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
                    let mut result = CallToolResult::text(error.to_string());
                    result.is_error = Some(true);
                    Ok(result)
                }
            }
        })
    }
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
        assert_eq!(resource_origin("file:///x"), None);
        assert_eq!(resource_origin("switchboard://a/%zz"), None);
        assert_eq!(resource_origin("switchboard://a/%F"), None);
    }
}
