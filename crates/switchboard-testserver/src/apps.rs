//! MCP Apps (`io.modelcontextprotocol/ui`), served with `--apps`: tools
//! whose `_meta.ui` names a `ui://` view, and the views themselves through
//! `resources/read` (and in `resources/list`). One of each shape a client
//! meets: a view for model and app, an app-only tool, the deprecated flat
//! `_meta["ui/resourceUri"]` with its HTML as a blob, and a `_meta.ui` of
//! the wrong types that a client must tolerate.

use serde_json::{Map, Value, json};

use crate::b64;

/// The app MIME type.
pub(crate) const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The dashboard's view (`dashboard`, `dashboard_refresh`).
pub(crate) const DASHBOARD_URI: &str = "ui://switchboard-testserver/dashboard";
/// The view named by the deprecated key (`legacy_app`), served as a blob.
pub(crate) const LEGACY_URI: &str = "ui://switchboard-testserver/legacy";

/// The dashboard's HTML.
pub(crate) const DASHBOARD_HTML: &str = "<!DOCTYPE html>\n<html><head><title>Dashboard</title></head>\
<body><h1>Weather dashboard</h1><script>window.parent.postMessage({jsonrpc: \"2.0\", \
method: \"ui/notifications/initialized\"}, \"*\");</script></body></html>\n";
/// The legacy view's HTML.
pub(crate) const LEGACY_HTML: &str =
    "<!DOCTYPE html>\n<html><body><p>An app named the old way</p></body></html>\n";

const TOOLS: [&str; 4] = ["dashboard", "dashboard_refresh", "legacy_app", "odd_app"];

fn tool(name: &str, description: &str, meta: Value) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {}},
        "_meta": meta,
    })
}

/// The tools `--apps` adds to `tools/list`.
pub(crate) fn tools() -> Vec<Value> {
    vec![
        tool(
            "dashboard",
            "Shows the weather on an interactive dashboard (MCP App)",
            json!({"ui": {"resourceUri": DASHBOARD_URI, "visibility": ["model", "app"]}}),
        ),
        tool(
            "dashboard_refresh",
            "Refreshes the dashboard's data; for the dashboard only",
            json!({"ui": {"resourceUri": DASHBOARD_URI, "visibility": ["app"]}}),
        ),
        tool(
            "legacy_app",
            "An app named with the deprecated ui/resourceUri key",
            json!({"ui/resourceUri": LEGACY_URI}),
        ),
        tool(
            "odd_app",
            "A tool whose _meta.ui has members of the wrong types",
            json!({"ui": {"resourceUri": 42, "visibility": "app"}}),
        ),
    ]
}

/// The views `--apps` adds to `resources/list`.
pub(crate) fn resources() -> Vec<Value> {
    vec![
        json!({
            "uri": DASHBOARD_URI,
            "name": "dashboard",
            "title": "Weather dashboard",
            "description": "The dashboard tool's view",
            "mimeType": APP_MIME_TYPE,
        }),
        json!({
            "uri": LEGACY_URI,
            "name": "legacy",
            "description": "The legacy_app tool's view",
            "mimeType": APP_MIME_TYPE,
        }),
    ]
}

/// The `resources/read` result for one of the views, `None` for any other
/// URI.
pub(crate) fn read(uri: &str) -> Option<Value> {
    let contents = match uri {
        DASHBOARD_URI => json!({
            "uri": uri,
            "mimeType": APP_MIME_TYPE,
            "text": DASHBOARD_HTML,
            "_meta": {"ui": {
                "csp": {
                    "connectDomains": ["https://api.weather.example"],
                    "resourceDomains": ["https://cdn.weather.example"],
                },
                "permissions": {"geolocation": {}},
                "prefersBorder": true,
            }},
        }),
        LEGACY_URI => json!({
            "uri": uri,
            "mimeType": APP_MIME_TYPE,
            "blob": b64::encode(LEGACY_HTML.as_bytes()),
        }),
        _ => return None,
    };
    Some(json!({"contents": [contents]}))
}

/// Whether `name` is one of the tools `--apps` adds.
pub(crate) fn is_tool(name: &str) -> bool {
    TOOLS.contains(&name)
}

/// A call of one of them: text for the model, data for the view.
pub(crate) fn call(name: &str, _args: &Map<String, Value>) -> Value {
    json!({
        "content": [{"type": "text", "text": format!("{name}: sunny, 21 °C")}],
        "structuredContent": {"conditions": "sunny", "temperature": 21},
    })
}

/// The probe's view (`--probe-app`).
pub(crate) const PROBE_URI: &str = "ui://switchboard-testserver/probe";

/// The probe's view: the app side of the bridge written out by hand (no
/// SDK). Once given its tool input it tries what an app must not do —
/// reach the page that frames it (`window.top`), fetch `beacon` (an origin
/// its resource does not declare) — and calls each tool named in `call`;
/// every outcome goes to the host as a log message, then `probe done`.
/// It says how many style variables the host gave it, and, given
/// `download` (a file name), asks the host to save a file of that name.
pub(crate) const PROBE_HTML: &str = r#"<!DOCTYPE html>
<html><head><title>Probe</title></head><body><h1>Probe</h1><p id="said">waiting</p><script>
const log = (data) => { document.getElementById('said').textContent = data;
  parent.postMessage({jsonrpc: '2.0', method: 'notifications/message', params: {level: 'info', data}}, '*'); };
let next = 1; const waiting = {};
const ask = (method, params) => new Promise((resolve) => { const id = next++; waiting[id] = resolve;
  parent.postMessage({jsonrpc: '2.0', id, method, params}, '*'); });
async function probe(args) {
  try { const title = window.top.document.title; log('top: reachable ' + title); }
  catch (error) { log('top: blocked ' + error.name); }
  if (args.beacon) {
    try { await fetch(args.beacon, {mode: 'no-cors'}); log('beacon: sent'); }
    catch (error) { log('beacon: blocked'); }
  }
  if (args.download) {
    const answer = await ask('ui/download-file', {contents: [{type: 'resource',
      resource: {uri: 'file:///' + args.download, mimeType: 'text/plain', text: 'what the probe saved'}}]});
    log('download: ' + (answer.error ? 'refused: ' + answer.error.message : 'ok'));
  }
  for (const name of args.call || []) {
    const answer = await ask('tools/call', {name, arguments: {}});
    log('call ' + name + ': ' + (answer.error ? 'refused: ' + answer.error.message : 'ok ' + JSON.stringify(answer.result.structuredContent)));
  }
  log('probe done');
}
addEventListener('message', (event) => {
  if (event.source !== parent) return;
  const message = event.data;
  if (message.id !== undefined && message.method === undefined && waiting[message.id]) {
    waiting[message.id](message); delete waiting[message.id]; return;
  }
  if (message.method === 'ui/notifications/tool-input') probe(message.params.arguments || {});
  if (message.method === 'ui/resource-teardown') parent.postMessage({jsonrpc: '2.0', id: message.id, result: {}}, '*');
});
ask('ui/initialize', {protocolVersion: '2026-01-26', appInfo: {name: 'probe', version: '1'}, appCapabilities: {}})
  .then((answer) => {
    const variables = ((answer.result || {}).hostContext || {}).styles?.variables || {};
    log('styles: ' + Object.keys(variables).length + ' variables, text ' + variables['--color-text-primary']);
    parent.postMessage({jsonrpc: '2.0', method: 'ui/notifications/initialized'}, '*');
  });
</script></body></html>
"#;

const PROBE_TOOLS: [&str; 3] = ["probe", "probe_refresh", "model_only"];

/// The tools `--probe-app` adds.
pub(crate) fn probe_tools() -> Vec<Value> {
    let mut probe = tool(
        "probe",
        "An app that tries its host: window.top, a fetch of `beacon`, tools/call of each of `call`",
        json!({"ui": {"resourceUri": PROBE_URI}}),
    );
    probe["inputSchema"] = json!({
        "type": "object",
        "properties": {
            "beacon": {"type": "string", "description": "a URL the view fetches"},
            "call": {"type": "array", "items": {"type": "string"}, "description": "tools the view calls"},
            "download": {"type": "string", "description": "a file the view asks the host to save"},
        },
    });
    vec![
        probe,
        tool(
            "probe_refresh",
            "For the probe's view only",
            json!({"ui": {"resourceUri": PROBE_URI, "visibility": ["app"]}}),
        ),
        tool(
            "model_only",
            "For the model only, never for an app",
            json!({"ui": {"visibility": ["model"]}}),
        ),
    ]
}

/// The probe's view in `resources/list`.
pub(crate) fn probe_resource() -> Value {
    json!({"uri": PROBE_URI, "name": "probe", "mimeType": APP_MIME_TYPE})
}

/// The probe's view read (no `_meta.ui`: the restrictive default CSP).
pub(crate) fn read_probe(uri: &str) -> Option<Value> {
    (uri == PROBE_URI)
        .then(|| json!({"contents": [{"uri": uri, "mimeType": APP_MIME_TYPE, "text": PROBE_HTML}]}))
}

/// Whether `name` is one of the tools `--probe-app` adds.
pub(crate) fn is_probe_tool(name: &str) -> bool {
    PROBE_TOOLS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_view_a_tool_names_is_served_as_an_app() {
        for tool in tools() {
            let name = tool["name"].as_str().unwrap();
            assert!(is_tool(name));
            let meta = &tool["_meta"];
            let Some(uri) = meta["ui"]["resourceUri"]
                .as_str()
                .or(meta["ui/resourceUri"].as_str())
            else {
                assert_eq!(name, "odd_app");
                continue;
            };
            let read = read(uri).expect("served");
            let contents = &read["contents"][0];
            assert_eq!(contents["uri"], uri);
            assert_eq!(contents["mimeType"], APP_MIME_TYPE);
            let html = match contents["text"].as_str() {
                Some(text) => text.to_owned(),
                None => String::from_utf8(b64::decode(contents["blob"].as_str().unwrap()).unwrap())
                    .unwrap(),
            };
            assert!(html.starts_with("<!DOCTYPE html>"), "{uri}");
            assert!(resources().iter().any(|r| r["uri"] == uri));
        }
        assert_eq!(read("ui://switchboard-testserver/nothing"), None);
        assert!(!is_tool("echo"));
    }
}
