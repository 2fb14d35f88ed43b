//! MCP Apps' tool calls through the gateway: which server's app a call
//! comes from, and what it may reach.
//!
//! The extension scopes an app-only tool (`_meta.ui.visibility: ["app"]`)
//! to "the app from the same server connection": the host, which keeps
//! one connection per server, refuses a view's call to another server's
//! app-only tool. Behind the gateway every backend is one connection to
//! the host, so the host can no longer tell; and MCP carries nothing that
//! says which view (if any) made a `tools/call`. So the gateway defines
//! the marker and enforces the rule itself:
//!
//! - **The marker.** A host that forwards a view's `tools/call` puts the
//!   view's UI resource URI, as the gateway served it (the tool's
//!   `_meta.ui.resourceUri` it listed), in the call's
//!   `_meta["switchboard/app"]` ([`APP_META`]). The gateway resolves it
//!   as it resolves a read: the URI names its server (a mapped
//!   `ui://SERVER+REST`, or a URI one server alone lists). The host must
//!   set it itself, never pass a view's own `_meta` through (a view could
//!   then name any server's app).
//! - **The rules** ([`HubServer::app_call`]): a call marked as coming from
//!   server A's app is refused, before any backend sees it, when the tool
//!   is another server's app-only tool, or when its visibility leaves the
//!   app out; a marker naming no server's `ui://` resource is refused. A
//!   marked call names the tool as the app knows it, the backend's own
//!   name (an app's HTML hard-codes it): when the gateway serves that
//!   tool under another name (`A__name`), the call is routed to A's tool
//!   of that name. An app-only tool is refused to a host that renders no
//!   apps (it was never listed to it: only apps call it).
//! - **The limits.** An unmarked call from a host that renders apps is
//!   taken as that host's own business, as from a host connected to one
//!   server: it may reach every app-only tool, so a host that renders
//!   several servers' apps through one gateway and wants the extension's
//!   per-server isolation must mark its views' calls. The gateway cannot
//!   tell the model's calls from a view's, nor check what a host claims:
//!   the marker is as trustworthy as the host, which is the party the
//!   rule protects anyway (a view is untrusted, the host is not).

use serde_json::Value;
use switchboard::server::RequestContext;
use switchboard::types::apps::is_ui_uri;
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::{CallToolRequestParams, Tool, codes};

use super::HubServer;
use crate::hub::Hub;

/// The key of a `tools/call`'s `_meta` that says which app's view made
/// the call: the view's `ui://` URI as the gateway serves it.
pub const APP_META: &str = "switchboard/app";

/// What the gateway knows of a served tool for the app rules.
struct ServedTool {
    server: String,
    tool: Tool,
}

impl Hub {
    /// The tool the hub-wide `name` is, and its server.
    fn served_tool(&self, name: &str) -> Option<ServedTool> {
        let routes = self.routes();
        routes.get(name).map(|route| ServedTool {
            server: route.slot.config.name.clone(),
            tool: route.tool().clone(),
        })
    }

    /// The hub-wide name of `server`'s tool that the server itself names
    /// `own`, when the gateway serves it under another name.
    fn served_name_of(&self, server: &str, own: &str) -> Option<String> {
        let routes = self.routes();
        routes
            .iter()
            .find(|route| route.slot.config.name == server && route.tool().name == own)
            .map(|route| route.name.clone())
    }
}

fn refused(message: String) -> ErrorObject {
    ErrorObject::new(codes::INVALID_PARAMS, message)
}

impl HubServer {
    /// Applies the app rules (module documentation) to a `tools/call`
    /// before it is run: `Err` refuses it; `Ok` may have renamed the
    /// tool to the name the gateway serves it under.
    pub(super) async fn app_call(
        &self,
        params: &mut CallToolRequestParams,
        cx: &RequestContext,
    ) -> Result<(), ErrorObject> {
        let marker = params.meta.as_ref().and_then(|meta| meta.get(APP_META));
        let Some(marker) = marker else {
            return self.unmarked_call(&params.name, cx);
        };
        let Some(uri) = marker.as_str().filter(|uri| is_ui_uri(uri)) else {
            return Err(refused(format!(
                "Invalid params: `_meta[\"{APP_META}\"]` must be the calling view's ui:// URI"
            )));
        };
        let app = match self.resolve(uri).await {
            Some((server, own)) if is_ui_uri(&own) => server,
            _ => {
                return Err(refused(format!(
                    "Invalid params: `_meta[\"{APP_META}\"]` names {:?}, which is no served app's view",
                    sanitized(uri)
                )));
            }
        };
        let tool = match self.hub.served_tool(&params.name) {
            Some(tool) => tool,
            None => match self.hub.served_name_of(&app, &params.name) {
                // The app calls its tool by its own name.
                Some(served) => {
                    params.name = served;
                    return self.app_call_to(&app, params);
                }
                None => return Ok(()),
            },
        };
        check(&app, &params.name, &tool)
    }

    /// A marked call whose name was just resolved in `app`'s own tools.
    fn app_call_to(&self, app: &str, params: &CallToolRequestParams) -> Result<(), ErrorObject> {
        match self.hub.served_tool(&params.name) {
            Some(tool) => check(app, &params.name, &tool),
            None => Ok(()),
        }
    }

    /// A call no view is named for: an app-only tool only for a host
    /// that renders apps.
    fn unmarked_call(&self, name: &str, cx: &RequestContext) -> Result<(), ErrorObject> {
        let renders = cx
            .client_capabilities
            .ui()
            .is_some_and(|ui| ui.renders_html());
        if renders {
            return Ok(());
        }
        // Read in place: nothing of the tool is copied on a call's way.
        let app_only_of = self.hub.routes().get(name).and_then(|route| {
            route
                .tool()
                .is_app_only()
                .then(|| route.slot.config.name.clone())
        });
        match app_only_of {
            Some(server) => Err(refused(format!(
                "Invalid params: `{name}` is an app-only tool of server `{server}` \
                 (_meta.ui.visibility [\"app\"]): only an app's view calls it, and this host \
                 renders no apps"
            ))),
            None => Ok(()),
        }
    }
}

/// The rules for a call from `app`'s view to `tool` (served as `name`).
fn check(app: &str, name: &str, tool: &ServedTool) -> Result<(), ErrorObject> {
    let ui = tool.tool.ui();
    if ui.as_ref().is_some_and(|ui| !ui.visible_to_app()) {
        return Err(refused(format!(
            "Invalid params: `{name}` is not callable by an app (its _meta.ui.visibility leaves \
             \"app\" out)"
        )));
    }
    if tool.tool.is_app_only() && tool.server != app {
        return Err(refused(format!(
            "Invalid params: `{name}` is an app-only tool of server `{}`; the calling view is \
             server `{app}`'s app, and an app reaches only its own server's app-only tools",
            tool.server
        )));
    }
    Ok(())
}

/// A URI from the host, short and printable, for an error message.
fn sanitized(uri: &str) -> String {
    uri.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// `_meta` for a call from the view at `uri` (for hosts in this
/// workspace's tests and the CLI).
#[must_use]
pub fn app_call_meta(uri: &str) -> switchboard::types::JsonObject {
    let mut meta = switchboard::types::JsonObject::new();
    meta.insert(APP_META.to_owned(), Value::String(uri.to_owned()));
    meta
}
