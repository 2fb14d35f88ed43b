//! The console as an MCP Apps host (`io.modelcontextprotocol/ui`): a
//! tool's view, fetched and checked ([`switchboard::Client::app_for`]),
//! is served from a second loopback origin — the *sandbox*, its own port —
//! never from the console's, so a view cannot read the console's pages or
//! use its cookie; the page frames it with `sandbox="allow-scripts
//! allow-forms"` (an opaque origin: `window.top` is out of its reach).
//!
//! Each view is its own document at an unguessable address
//! (`/view/ID`), sent with a `Content-Security-Policy` header built from
//! its resource's `_meta.ui.csp` — the extension's restrictive default
//! when it declares none, never more than it declares, and entries that
//! are not plain origins dropped (with a note the page shows). A header,
//! not markup, so nothing in the view can loosen it. The spec's web host
//! relays to a `srcdoc` frame through a proxy page; serving the view
//! itself from the sandbox origin gives it the same separation with one
//! frame less and a policy the view cannot touch.
//!
//! What the view asks of its server goes through [`request`]: only to the
//! server whose app it is, `tools/call` only of tools whose visibility
//! includes `app`, and through the hub, so policy applies as to any call.
//!
//! The page's side of the bridge (`assets/apps.js`) gives the view the
//! host's look (`hostContext.styles`, the spec's variables in
//! `light-dark()`), saves what it offers with `ui/download-file` (embedded
//! content only, under a name the console makes from the URI's last
//! segment, after the user says yes), and does not send
//! `tool-input-partial`: the console's arguments come whole from its form,
//! never streamed by a model. A view's `_meta.ui.domain` is not honoured
//! (said in the page): every view already has an opaque origin of its own.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard::types::{UiCsp, UiPermission};
use switchboard_hub::Hub;

use super::{Body, respond};
use crate::failure::chain;

/// How many views are kept open at once (the oldest is dropped).
const MAX_VIEWS: usize = 32;

/// One view the page has open.
struct View {
    server: String,
    html: Arc<str>,
    policy: String,
}

/// The views open, and the sandbox origin that serves them.
pub(super) struct Apps {
    sandbox: SocketAddr,
    console: SocketAddr,
    views: Mutex<(HashMap<String, View>, VecDeque<String>)>,
    /// The listener's task.
    serving: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Apps {
    /// Listens on the sandbox origin (a port of its own on 127.0.0.1) and
    /// serves views from it until [`Apps::stop`].
    pub(super) async fn start(console: SocketAddr) -> std::io::Result<Arc<Self>> {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let apps = Arc::new(Self {
            sandbox: listener.local_addr()?,
            console,
            views: Mutex::default(),
            serving: Mutex::default(),
        });
        let serving = apps.clone();
        let task = tokio::spawn(async move {
            let slots = Arc::new(tokio::sync::Semaphore::new(super::MAX_CONNECTIONS));
            loop {
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let apps = serving.clone();
                tokio::spawn(async move {
                    let _slot = slot;
                    let service = hyper::service::service_fn(move |request| {
                        let apps = apps.clone();
                        async move { Ok::<_, std::convert::Infallible>(apps.serve(&request)) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(hyper_util::rt::TokioTimer::new())
                        .header_read_timeout(super::HEADER_WAIT)
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        *apps.serving.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
        Ok(apps)
    }

    /// Stops serving views (their listener closes).
    pub(super) fn stop(&self) {
        if let Some(task) = self
            .serving
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }

    /// The sandbox origin (`http://127.0.0.1:PORT`).
    pub(super) fn origin(&self) -> String {
        format!("http://{}", self.sandbox)
    }

    /// A request to the sandbox origin: a view's document, or 404.
    fn serve<B>(&self, request: &hyper::Request<B>) -> hyper::Response<Body> {
        let host = request.headers().get("host").and_then(|h| h.to_str().ok());
        let own = self.sandbox.port();
        if host != Some(&format!("127.0.0.1:{own}")) && host != Some(&format!("localhost:{own}")) {
            return respond(403, "text/plain", "not this origin's name".into());
        }
        let view = request
            .uri()
            .path()
            .strip_prefix("/view/")
            .filter(|_| request.method() == hyper::Method::GET)
            .and_then(|id| {
                let views = self.views.lock().unwrap_or_else(|e| e.into_inner());
                views.0.get(id).map(|v| (v.html.clone(), v.policy.clone()))
            });
        let Some((html, policy)) = view else {
            return respond(404, "text/plain", "no such view".into());
        };
        let mut response = respond(200, "text/html; charset=utf-8", html.to_string());
        let headers = response.headers_mut();
        headers.remove("x-frame-options");
        if let Ok(policy) = policy.parse() {
            headers.insert("content-security-policy", policy);
        }
        response
    }

    /// `{"name": "SERVER__TOOL"}`: the tool's app fetched, checked and
    /// put on the sandbox origin; where to frame it and how.
    pub(super) async fn open(&self, hub: &Hub, body: &[u8]) -> Result<Value, (u16, String)> {
        let request = super::api::request(body)?;
        let name = request
            .get("name")
            .and_then(Value::as_str)
            .ok_or((400, "no tool `name`".to_owned()))?;
        let tool = hub
            .tools()
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| (404, format!("no tool `{name}`")))?;
        let client = hub.client(&tool.server).map_err(|e| (422, chain(&e)))?;
        let app = client
            .app_for(&tool.tool)
            .await
            .map_err(|e| (422, chain(&e)))?;
        let ui = app.ui.clone().unwrap_or_default();
        let mut notes = Vec::new();
        let policy = policy(ui.csp.as_ref(), self.console, &mut notes);
        // A dedicated origin is for allow-lists of a hosted domain, which
        // a loopback port cannot be; each view has an opaque origin of
        // its own instead (no two views share one).
        if let Some(domain) = ui.domain.as_deref().filter(|d| !d.is_empty()) {
            notes.push(format!(
                "it asks for the origin {domain:?}: the console gives every view an opaque origin of its own instead (a loopback port cannot be that domain)"
            ));
        }
        let allow = allow(&ui.permissions);
        let id = token();
        {
            let mut views = self.views.lock().unwrap_or_else(|e| e.into_inner());
            let (open, order) = &mut *views;
            if order.len() >= MAX_VIEWS
                && let Some(oldest) = order.pop_front()
            {
                open.remove(&oldest);
            }
            order.push_back(id.clone());
            open.insert(
                id.clone(),
                View {
                    server: tool.server.clone(),
                    html: app.html.into(),
                    policy: policy.clone(),
                },
            );
        }
        Ok(json!({
            "view": id,
            "url": format!("http://{}/view/{id}", self.sandbox),
            "origin": self.origin(),
            "uri": app.uri,
            "server": tool.server,
            "tool": tool.tool,
            "policy": policy,
            // What the resource declared, as the extension's host
            // capabilities carry it.
            "csp": ui.csp,
            "permissions": ui
                .permissions
                .iter()
                .map(|p| (p.as_str().to_owned(), json!({})))
                .collect::<serde_json::Map<_, _>>(),
            "allow": allow,
            "prefersBorder": ui.prefers_border,
            "notes": notes,
        }))
    }

    /// `{"view": ID}`: the view closed; its address serves nothing more.
    pub(super) fn close(&self, body: &[u8]) -> Result<Value, (u16, String)> {
        let request = super::api::request(body)?;
        let id = request.get("view").and_then(Value::as_str).unwrap_or("");
        let mut views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        views.0.remove(id);
        views.1.retain(|v| v != id);
        Ok(json!({}))
    }

    /// `{"view": ID, "method": "…", "params": {…}}`: what the view asked
    /// of its server, answered as JSON-RPC's `result` or `error`.
    pub(super) async fn request(&self, hub: &Hub, body: &[u8]) -> Result<Value, (u16, String)> {
        let request = super::api::request(body)?;
        let id = request.get("view").and_then(Value::as_str).unwrap_or("");
        let server = {
            let views = self.views.lock().unwrap_or_else(|e| e.into_inner());
            views.0.get(id).map(|v| v.server.clone())
        }
        .ok_or((404, "no such view (it was closed)".to_owned()))?;
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        Ok(match answer(hub, &server, method, &params).await {
            Ok(result) => json!({ "result": result }),
            Err((code, message)) => json!({ "error": { "code": code, "message": message } }),
        })
    }
}

/// JSON-RPC's invalid params and method not found, and a refusal.
const INVALID_PARAMS: i64 = -32602;
const NO_METHOD: i64 = -32601;
const REFUSED: i64 = -32000;

/// What `server`'s app asked: answered from that server only.
async fn answer(
    hub: &Hub,
    server: &str,
    method: &str,
    params: &Value,
) -> Result<Value, (i64, String)> {
    let field = |key: &str| {
        params
            .get(key)
            .and_then(Value::as_str)
            .ok_or((INVALID_PARAMS, format!("no `{key}`")))
    };
    match method {
        "tools/call" => {
            let name = field("name")?;
            let tool = hub
                .tools()
                .into_iter()
                .find(|t| t.server == server && t.tool.name == name)
                .ok_or_else(|| {
                    (
                        REFUSED,
                        format!(
                            "`{name}` is not a tool of server {server}, whose app this is: \
                             an app calls only its own server's tools"
                        ),
                    )
                })?;
            let visible = tool.tool.ui().unwrap_or_default();
            if !visible.visible_to_app() {
                return Err((
                    REFUSED,
                    format!(
                        "tool `{name}` of {server} is for the model only (its visibility leaves \
                         out `app`): an app may not call it"
                    ),
                ));
            }
            let arguments = match params.get("arguments") {
                None | Some(Value::Null) => None,
                Some(Value::Object(map)) => Some(map.clone()),
                Some(_) => return Err((INVALID_PARAMS, "`arguments` must be an object".into())),
            };
            let result = hub
                .call_tool(&tool.name, arguments)
                .await
                .map_err(|e| (REFUSED, chain(&e)))?;
            Ok(serde_json::to_value(result).unwrap_or(Value::Null))
        }
        "resources/read" => {
            let uri = field("uri")?;
            let result = hub
                .read_resource(server, uri)
                .await
                .map_err(|e| (REFUSED, chain(&e)))?;
            Ok(serde_json::to_value(result).unwrap_or(Value::Null))
        }
        "resources/list" => {
            let client = hub.client(server).map_err(|e| (REFUSED, chain(&e)))?;
            let resources = client
                .list_resources()
                .await
                .map_err(|e| (REFUSED, e.to_string()))?;
            Ok(json!({ "resources": resources }))
        }
        "ping" => Ok(json!({})),
        other => Err((NO_METHOD, format!("the console does not forward `{other}`"))),
    }
}

/// A token for a view's address: 128 random bits.
fn token() -> String {
    let mut bytes = [0u8; 16];
    if let Ok(mut random) = std::fs::File::open("/dev/urandom") {
        use std::io::Read as _;
        let _ = random.read_exact(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An origin a view may declare: a scheme, a host (a leading `*.` label
/// allowed) and a port; nothing a policy would read as more (quotes,
/// `;`, `,`, spaces, paths with wildcards, a lone `*`, `data:`).
fn plain_origin(entry: &str) -> bool {
    let Some((scheme, rest)) = entry.split_once("://") else {
        return false;
    };
    if !matches!(scheme, "http" | "https" | "ws" | "wss") || rest.is_empty() {
        return false;
    }
    let host = rest.strip_prefix("*.").unwrap_or(rest);
    let host = host.trim_end_matches('/');
    !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
}

/// The view's `Content-Security-Policy`: the extension's formula over
/// what `csp` declares (the restrictive default when it declares
/// nothing), framed only by the console. Entries that are not plain
/// origins are left out, each with a note. `connect-src` leaves out
/// `'self'` (the sandbox origin serves views, nothing a view needs).
fn policy(csp: Option<&UiCsp>, console: SocketAddr, notes: &mut Vec<String>) -> String {
    let ancestors = format!("frame-ancestors http://{console}");
    let Some(csp) = csp else {
        return format!(
            "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
             img-src 'self' data:; media-src 'self' data:; connect-src 'none'; object-src 'none'; \
             base-uri 'self'; form-action 'none'; {ancestors}"
        );
    };
    let mut list = |what: &str, entries: &Option<Vec<String>>| -> String {
        let mut kept = Vec::new();
        for entry in entries.iter().flatten() {
            if plain_origin(entry) {
                kept.push(entry.trim_end_matches('/').to_owned());
            } else {
                notes.push(format!("{what} entry {entry:?} is not an origin: left out"));
            }
        }
        kept.join(" ")
    };
    let resources = list("resourceDomains", &csp.resource_domains);
    let connect = list("connectDomains", &csp.connect_domains);
    let frames = list("frameDomains", &csp.frame_domains);
    let bases = list("baseUriDomains", &csp.base_uri_domains);
    let or = |list: String, default: &str| {
        if list.is_empty() {
            default.to_owned()
        } else {
            list
        }
    };
    let join = |head: &str, list: &str| format!("{head} {list}").trim_end().to_owned();
    [
        "default-src 'none'".to_owned(),
        join("script-src 'self' 'unsafe-inline'", &resources),
        join("style-src 'self' 'unsafe-inline'", &resources),
        format!("connect-src {}", or(connect, "'none'")),
        join("img-src 'self' data:", &resources),
        join("font-src 'self'", &resources),
        join("media-src 'self' data:", &resources),
        format!("frame-src {}", or(frames, "'none'")),
        "object-src 'none'".to_owned(),
        format!("base-uri {}", or(bases, "'self'")),
        "form-action 'none'".to_owned(),
        ancestors,
    ]
    .join("; ")
}

/// The frame's `allow` (Permissions Policy) for what the view asks.
fn allow(permissions: &[UiPermission]) -> String {
    permissions
        .iter()
        .filter_map(|p| match p {
            UiPermission::Camera => Some("camera"),
            UiPermission::Microphone => Some("microphone"),
            UiPermission::Geolocation => Some("geolocation"),
            UiPermission::ClipboardWrite => Some("clipboard-write"),
            // One this console does not know: not granted.
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn console() -> SocketAddr {
        "127.0.0.1:4000".parse().unwrap()
    }

    #[test]
    fn no_declaration_is_the_restrictive_default() {
        let mut notes = Vec::new();
        let policy = policy(None, console(), &mut notes);
        assert!(policy.contains("connect-src 'none'"), "{policy}");
        assert!(policy.contains("default-src 'none'"), "{policy}");
        assert!(
            policy.ends_with("frame-ancestors http://127.0.0.1:4000"),
            "{policy}"
        );
        assert!(notes.is_empty());
    }

    #[test]
    fn only_declared_origins_and_nothing_that_reads_as_more() {
        let csp = UiCsp {
            connect_domains: Some(vec![
                "https://api.example.com".into(),
                "https://x.example; script-src *".into(),
                "'unsafe-eval'".into(),
                "*".into(),
            ]),
            resource_domains: Some(vec!["https://*.cdn.example/".into(), "data:".into()]),
            frame_domains: None,
            base_uri_domains: None,
        };
        let mut notes = Vec::new();
        let policy = policy(Some(&csp), console(), &mut notes);
        assert!(
            policy.contains("connect-src https://api.example.com;"),
            "{policy}"
        );
        assert!(
            policy.contains("script-src 'self' 'unsafe-inline' https://*.cdn.example;"),
            "{policy}"
        );
        assert!(policy.contains("frame-src 'none'"), "{policy}");
        assert!(!policy.contains("unsafe-eval"), "{policy}");
        assert!(!policy.contains("script-src *"), "{policy}");
        assert_eq!(notes.len(), 4, "{notes:?}");
    }

    #[test]
    fn permissions_become_the_frame_s_allow() {
        assert_eq!(
            allow(&[UiPermission::Camera, UiPermission::ClipboardWrite]),
            "camera; clipboard-write"
        );
        assert_eq!(allow(&[]), "");
    }
}
