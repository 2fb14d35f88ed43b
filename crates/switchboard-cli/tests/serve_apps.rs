//! MCP Apps through `switchboard serve`, with real app servers of the
//! ext-apps family from npm (`@modelcontextprotocol/server-basic-vanillajs`
//! and `server-basic-react`, over stdio) and the bundled test server's
//! `--apps` (an app-only tool, a view with `_meta.ui`). The host is this
//! crate's client declaring the UI extension, once in each era: it lists
//! the tools with `_meta.ui.resourceUri`, reads each view through the
//! gateway and gets what the backend gives a direct read (HTML bytes, MIME
//! type, `_meta`); two servers' views never share a URI; and a view's
//! call marked with `_meta["switchboard/app"]` reaches only its own
//! server's app-only tools (`gateway/apps.rs`). Skipped with a message
//! only when npm is missing.

use switchboard::transport::stdio::StdioConfig;
use switchboard::types::apps::APP_MIME_TYPE;
use switchboard::types::{CallToolRequestParams, ReadResourceResult, ResourceContents, Tool};
use switchboard::{Client, EraMode, RequestOptions};
use switchboard_hub::gateway::app_call_meta;

#[allow(dead_code)] // the pty and HTTP helpers are not used here
mod support;

use support::BIN;
use support::gateway::Sandbox;
use support::servers;

const VANILLA: &str = "@modelcontextprotocol/server-basic-vanillajs";
const REACT: &str = "@modelcontextprotocol/server-basic-react";
/// Both npm servers' one tool and its view.
const GET_TIME: &str = "get-time";
const GET_TIME_VIEW: &str = "ui://get-time/mcp-app.html";

/// A sandbox whose config has `vanilla`, `react` (the npm app servers)
/// and `apps` (the test server's apps, in `era`), beside its two own.
fn sandbox(name: &str, vanilla: &str, react: &str, era: &str) -> Sandbox {
    Sandbox::with_config(
        name,
        &format!(
            "[servers.vanilla]\ncommand = \"node\"\nargs = [{vanilla:?}, \"--stdio\"]\n\n\
             [servers.react]\ncommand = \"node\"\nargs = [{react:?}, \"--stdio\"]\n\n\
             [servers.apps]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--apps\", \"--era\", {era:?}]\n"
        ),
    )
}

/// A host of `mode` that renders apps, in front of `servers`.
async fn host(sandbox: &Sandbox, mode: EraMode, servers: &[&str], apps: bool) -> Client {
    // The host lists once: each backend (node, on a loaded machine) gets
    // the time it needs to start, as `serve --help` tells a one-shot
    // client's user to give it.
    let mut args = vec!["serve", "--wait-ready", "60"];
    for server in servers {
        args.extend(["--server", server]);
    }
    let builder = Client::builder().era_mode(mode);
    let builder = if apps { builder.mcp_apps() } else { builder };
    builder
        .connect(
            StdioConfig::new(BIN)
                .args(args)
                .env("HOME", sandbox.home())
                .env("SWITCHBOARD_CREDENTIALS", sandbox.credentials())
                .env("SWITCHBOARD_NO_SESSION", "1")
                .cwd(sandbox.work()),
        )
        .await
        .unwrap_or_else(|e| panic!("{mode:?} {servers:?}: {e}"))
}

/// A client of the npm server at `entry` itself, rendering apps.
async fn direct(entry: &std::path::Path) -> Client {
    Client::builder()
        .mcp_apps()
        .connect(StdioConfig::new("node").args([entry.to_str().unwrap(), "--stdio"]))
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", entry.display()))
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", names(tools)))
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// The one contents entry of a view's read, as text.
fn view(read: &ReadResourceResult) -> &switchboard::types::TextResourceContents {
    assert_eq!(read.contents.len(), 1, "{read:?}");
    match &read.contents[0] {
        ResourceContents::Text(text) => text,
        other => panic!("HTML as text expected: {other:?}"),
    }
}

/// The view read through the gateway under `served` is the backend's
/// read of `own`, byte for byte, under the served URI.
async fn same_view(what: &str, host: &Client, served: &str, backend: &Client, own: &str) {
    let through = host.read_resource(served).await.unwrap();
    let backend = backend.read_resource(own).await.unwrap();
    let (through, backend) = (view(&through), view(&backend));
    assert_eq!(through.text, backend.text, "{what}: the same HTML");
    assert!(
        through.text.len() > 1000,
        "{what}: {} bytes",
        through.text.len()
    );
    assert_eq!(
        through.mime_type, backend.mime_type,
        "{what}: the MIME type"
    );
    assert_eq!(through.mime_type.as_deref(), Some(APP_MIME_TYPE), "{what}");
    assert_eq!(through.meta, backend.meta, "{what}: the same _meta");
    assert_eq!(through.uri, served, "{what}: under the served URI");
}

/// A `tools/call` of `name` from the view at `view` (marked as the
/// gateway documents).
async fn call_from(
    host: &Client,
    view: &str,
    name: &str,
) -> switchboard::Result<switchboard::types::CallToolResult> {
    let params = CallToolRequestParams {
        name: name.to_owned(),
        meta: Some(app_call_meta(view)),
        ..Default::default()
    };
    host.call_tool_with(&params, RequestOptions::default())
        .await
}

/// One app server alone behind the gateway is served as written: its
/// tool's `_meta.ui` as the backend gave it, the view under its own
/// `ui://` URI, read byte for byte.
#[tokio::test]
async fn one_app_server_behind_the_gateway_is_served_as_written() {
    let test = "one_app_server_behind_the_gateway_is_served_as_written";
    let Some(vanilla) = servers::entry(test, VANILLA) else {
        return;
    };
    let Some(react) = servers::entry(test, REACT) else {
        return;
    };
    let sandbox = sandbox(
        "apps-one",
        vanilla.to_str().unwrap(),
        react.to_str().unwrap(),
        "modern",
    );
    let backend = direct(&vanilla).await;
    let own = backend.list_tools().await.unwrap();
    let own = tool(&own, GET_TIME).clone();
    assert_eq!(own.app_uri().as_deref(), Some(GET_TIME_VIEW));
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let what = format!("{mode:?}");
        let host = host(&sandbox, mode, &["vanilla"], true).await;
        let tools = host.list_tools().await.unwrap();
        let served = tool(&tools, GET_TIME);
        assert_eq!(served.ui(), own.ui(), "{what}: the tool's _meta.ui");
        assert_eq!(served.app_uri().as_deref(), Some(GET_TIME_VIEW), "{what}");
        same_view(&what, &host, GET_TIME_VIEW, &backend, GET_TIME_VIEW).await;
        let result = host.call_tool(GET_TIME, None).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{what}: {result:?}");
        host.close().await;
    }
    backend.close().await;
}

/// Two npm app servers whose views have the same URI, and the test
/// server's apps, behind one gateway: each view under a URI of its own
/// server, read as its backend gives it; a view's marked call reaches its
/// own server's app-only tool (by the name the view knows) and is refused
/// another server's; a host that renders no apps cannot call an app-only
/// tool.
#[tokio::test]
async fn app_servers_behind_one_gateway_keep_their_views_and_app_only_tools_apart() {
    let test = "app_servers_behind_one_gateway_keep_their_views_and_app_only_tools_apart";
    let Some(vanilla) = servers::entry(test, VANILLA) else {
        return;
    };
    let Some(react) = servers::entry(test, REACT) else {
        return;
    };
    let vanilla_direct = direct(&vanilla).await;
    let react_direct = direct(&react).await;
    for (era, mode) in [("legacy", EraMode::Legacy), ("modern", EraMode::Modern)] {
        let what = format!("host {mode:?}, test server {era}");
        let sandbox = sandbox(
            &format!("apps-two-{era}"),
            vanilla.to_str().unwrap(),
            react.to_str().unwrap(),
            era,
        );
        let servers = ["vanilla", "react", "apps"];
        let host = host(&sandbox, mode, &servers, true).await;
        let tools = host.list_tools().await.unwrap();
        let uri = |name: &str| {
            tool(&tools, name)
                .app_uri()
                .unwrap_or_else(|| panic!("{what}: {name} names no view"))
        };
        let (vanilla_view, react_view) = (uri("vanilla__get-time"), uri("react__get-time"));
        let dashboard = uri("apps__dashboard");
        assert_ne!(vanilla_view, react_view, "{what}: the two views collide");
        for served in [&vanilla_view, &react_view, &dashboard] {
            assert!(served.starts_with("ui://"), "{what}: {served}");
        }
        assert!(
            tool(&tools, "apps__dashboard_refresh").is_app_only(),
            "{what}"
        );
        same_view(&what, &host, &vanilla_view, &vanilla_direct, GET_TIME_VIEW).await;
        same_view(&what, &host, &react_view, &react_direct, GET_TIME_VIEW).await;
        let through = host.read_resource(&dashboard).await.unwrap();
        let ui = view(&through)
            .meta
            .as_ref()
            .and_then(|m| m.get("ui"))
            .cloned();
        assert_eq!(
            ui.as_ref()
                .and_then(|ui| ui["csp"]["connectDomains"][0].as_str()),
            Some("https://api.weather.example"),
            "{what}: the view's _meta.ui: {through:?}"
        );

        // The dashboard's view calls its app-only tool, under the served
        // name and under its own.
        for name in ["apps__dashboard_refresh", "dashboard_refresh"] {
            let result = call_from(&host, &dashboard, name).await.unwrap();
            assert_ne!(result.is_error, Some(true), "{what} {name}: {result:?}");
        }
        // The vanilla app's view calls its own tool by the name its HTML
        // knows, which the gateway serves as vanilla__get-time.
        let result = call_from(&host, &vanilla_view, GET_TIME).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{what}: {result:?}");
        let time = result.content[0].as_text().unwrap_or_default().to_owned();
        assert!(time.contains('T') && time.ends_with('Z'), "{what}: {time}");
        // Another server's view may not call the dashboard's app-only
        // tool: refused under the served name; its own name is looked up
        // among the calling app's tools only, where there is none.
        for view in [&vanilla_view, &react_view] {
            let refused = call_from(&host, view, "apps__dashboard_refresh").await;
            let message = refused
                .expect_err(&format!("{what}: {view} called apps__dashboard_refresh"))
                .to_string();
            assert!(
                message.contains("app-only tool of server `apps`"),
                "{what}: {message}"
            );
            let unknown = call_from(&host, view, "dashboard_refresh").await;
            let message = unknown
                .expect_err(&format!("{what}: {view} called dashboard_refresh"))
                .to_string();
            assert!(message.contains("Unknown tool"), "{what}: {message}");
        }
        // A marker that names no view is refused.
        let forged = call_from(&host, "ui://nobody+x/app.html", "apps__dashboard_refresh").await;
        assert!(forged.is_err(), "{what}: {forged:?}");
        host.close().await;

        // A host that renders no apps: no app-only tool listed, none called.
        let plain = host_plain(&sandbox, mode, &servers).await;
        let tools = plain.list_tools().await.unwrap();
        assert!(
            !names(&tools).contains(&"apps__dashboard_refresh"),
            "{what}: {:?}",
            names(&tools)
        );
        let refused = plain.call_tool("apps__dashboard_refresh", None).await;
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.to_string().contains("renders no apps")),
            "{what}: {refused:?}"
        );
        plain.close().await;
    }
    vanilla_direct.close().await;
    react_direct.close().await;
}

async fn host_plain(sandbox: &Sandbox, mode: EraMode, servers: &[&str]) -> Client {
    host(sandbox, mode, servers, false).await
}
