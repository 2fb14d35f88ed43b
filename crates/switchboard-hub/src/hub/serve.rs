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

use std::sync::Arc;
use std::time::Duration;

use switchboard::RequestOptions;
use switchboard::server::{self, Peer, Reply, RequestContext, ServeOptions, Served, ServerHandler};
use switchboard::transport::Connection;
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::{
    CallToolRequestParams, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, codes,
};
use tokio::sync::{mpsc, watch};

use super::{Hub, HubError, HubEvent};

/// The hub as a [`ServerHandler`]; see the module documentation.
#[derive(Clone)]
pub struct HubServer {
    hub: Hub,
    info: Implementation,
    /// Flips to `true` when the hub's first start is over, and how long a
    /// `tools/list` waits for that.
    started: Option<(watch::Receiver<bool>, Duration)>,
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
        }
    }

    /// Makes `tools/list` wait (at most `at_most`) until `started` is
    /// `true` — the hub's first start is over — so a host that lists its
    /// tools once, right after connecting, sees every server that starts
    /// in time, not only the fast ones. Later lists never wait.
    pub fn wait_for_start(mut self, started: watch::Receiver<bool>, at_most: Duration) -> Self {
        self.started = Some((started, at_most));
        self
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
        serde_json::from_value(serde_json::json!({ "tools": { "listChanged": true } }))
            .unwrap_or_default()
    }

    fn instructions(&self) -> Option<String> {
        Some(
            "Tools of several MCP servers, each named `server__tool` after the server it belongs to."
                .to_owned(),
        )
    }

    fn list_tools(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Reply<ListToolsResult> {
        let hub = self.hub.clone();
        let started = self.started.clone();
        Box::pin(async move {
            if let Some((mut started, at_most)) = started {
                let _ = tokio::time::timeout(at_most, started.wait_for(|s| *s)).await;
            }
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
