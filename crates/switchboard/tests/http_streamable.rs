//! Streamable HTTP in the stateless era against a scripted loopback server
//! that records every request's headers: routing headers, `x-mcp-header`
//! mirroring (with base64), invalid tool definitions, and auth.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard::transport::http::HttpConfig;
use switchboard::types::Era;
use switchboard::{Client, EraMode};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One request as the server saw it: lower-cased headers and the JSON body.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    headers: HashMap<String, String>,
    body: Value,
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// Answers one JSON-RPC request body; `None` → 202 Accepted.
type Script = Arc<dyn Fn(&Value, &HashMap<String, String>) -> Option<(u16, Value)> + Send + Sync>;

async fn serve(script: Script) -> (String, Log, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let log: Log = Arc::default();
    let seen = log.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (read, mut write) = stream.into_split();
            let mut read = BufReader::new(read);
            let mut request_line = String::new();
            if read.read_line(&mut request_line).await.unwrap_or(0) == 0 {
                continue;
            }
            let method = request_line.split(' ').next().unwrap_or("").to_owned();
            let mut headers = HashMap::new();
            loop {
                let mut line = String::new();
                read.read_line(&mut line).await.unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
                }
            }
            let length: usize = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            read.read_exact(&mut body).await.unwrap();
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            seen.lock().unwrap().push(Seen {
                method: method.clone(),
                headers: headers.clone(),
                body: body.clone(),
            });
            if method == "POST" && script(&body, &headers).is_some_and(|(status, _)| status == 0) {
                // Status 0: hold the request open and never answer.
                tokio::spawn(async move {
                    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                    drop(write);
                });
                continue;
            }
            let response = if method != "POST" {
                "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_owned()
            } else {
                match script(&body, &headers) {
                    None => {
                        "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_owned()
                    }
                    Some((status, mut answer)) => {
                        // A `_headers` object in the answer becomes headers.
                        let extra: String = answer
                            .as_object_mut()
                            .and_then(|o| o.remove("_headers"))
                            .and_then(|h| h.as_object().cloned())
                            .unwrap_or_default()
                            .iter()
                            .map(|(k, v)| format!("{k}: {}\r\n", v.as_str().unwrap_or_default()))
                            .collect();
                        let text = answer.to_string();
                        let auth = if !extra.is_empty() {
                            extra
                        } else if status == 401 {
                            "www-authenticate: Bearer realm=\"test\"\r\n".to_owned()
                        } else {
                            String::new()
                        };
                        format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{auth}content-length: {}\r\nconnection: close\r\n\r\n{text}",
                            text.len()
                        )
                    }
                }
            };
            let _ = write.write_all(response.as_bytes()).await;
            let _ = write.shutdown().await;
        }
    });
    (url, log, task)
}

fn ok(body: &Value, result: Value) -> Option<(u16, Value)> {
    Some((
        200,
        json!({"jsonrpc": "2.0", "id": body["id"], "result": result}),
    ))
}

/// A modern server with tools whose parameters ask for header mirroring.
fn modern_script() -> Script {
    Arc::new(|body, _headers| {
        let method = body["method"].as_str()?;
        match method {
            "server/discover" => ok(
                body,
                json!({
                    "resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}, "resources": {}},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}
                }),
            ),
            "tools/list" => ok(
                body,
                json!({"resultType": "complete", "tools": [
                    {"name": "execute_sql", "inputSchema": {"type": "object", "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "query": {"type": "string"},
                        "opts": {"type": "object", "properties": {
                            "limit": {"type": "integer", "x-mcp-header": "Limit"},
                            "dry": {"type": "boolean", "x-mcp-header": "Dry"}}}
                    }}},
                    {"name": "bad_tool", "inputSchema": {"type": "object", "properties": {
                        "ratio": {"type": "number", "x-mcp-header": "Ratio"}}}},
                    {"name": "plain", "inputSchema": {"type": "object"}}
                ]}),
            ),
            "tools/call" => ok(
                body,
                json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]}),
            ),
            "resources/read" => ok(body, json!({"resultType": "complete", "contents": []})),
            _ => Some((
                400,
                json!({"jsonrpc": "2.0", "id": body["id"],
                "error": {"code": -32601, "message": "Method not found"}}),
            )),
        }
    })
}

fn calls(log: &Log, method: &str) -> Vec<Seen> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|s| s.body["method"] == method)
        .cloned()
        .collect()
}

#[tokio::test]
async fn stateless_requests_carry_routing_headers_and_mirrored_params() {
    let (url, log, _server) = serve(modern_script()).await;
    let client = Client::connect(HttpConfig::new(&url)).await.unwrap();
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.session().transport, "streamable-http");

    // The invalid tool is left out; the others stay.
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["execute_sql", "plain"]);

    let args =
        json!({"region": "Hello, 世界", "query": "SELECT 1", "opts": {"limit": 42, "dry": false}});
    client
        .call_tool("execute_sql", args.as_object().cloned())
        .await
        .unwrap();
    let call = calls(&log, "tools/call").pop().unwrap();
    let h = &call.headers;
    assert_eq!(h["mcp-protocol-version"], "2026-07-28");
    assert_eq!(h["mcp-method"], "tools/call");
    assert_eq!(h["mcp-name"], "execute_sql");
    assert_eq!(h["mcp-param-region"], "=?base64?SGVsbG8sIOS4lueVjA==?=");
    assert_eq!(h["mcp-param-limit"], "42");
    assert_eq!(h["mcp-param-dry"], "false");
    assert!(!h.contains_key("mcp-param-query"));
    assert!(h["accept"].contains("application/json") && h["accept"].contains("text/event-stream"));

    // An absent value omits its header; a tool without annotations has none.
    client
        .call_tool("execute_sql", json!({"query": "x"}).as_object().cloned())
        .await
        .unwrap();
    let call = calls(&log, "tools/call").pop().unwrap();
    assert!(
        !call.headers.keys().any(|k| k.starts_with("mcp-param-")),
        "{:?}",
        call.headers
    );
    client.call_tool("plain", None).await.unwrap();

    // resources/read names its URI; encoded when unsafe.
    client.read_resource("file:///tmp/ü.txt").await.unwrap();
    let read = calls(&log, "resources/read").pop().unwrap();
    assert_eq!(read.headers["mcp-method"], "resources/read");
    assert!(
        read.headers["mcp-name"].starts_with("=?base64?"),
        "{:?}",
        read.headers
    );

    // Every request carried the version and method headers.
    for seen in log.lock().unwrap().iter().filter(|s| s.method == "POST") {
        assert_eq!(seen.headers["mcp-protocol-version"], "2026-07-28");
        assert_eq!(
            seen.headers["mcp-method"],
            seen.body["method"].as_str().unwrap()
        );
    }
}

#[tokio::test]
async fn unauthorized_never_falls_back_to_another_transport() {
    let script: Script = Arc::new(|body, headers| {
        if headers.get("authorization").map(String::as_str) != Some("Bearer good") {
            return Some((401, json!({"error": "unauthorized"})));
        }
        modern_script()(body, headers)
    });
    let (url, log, _server) = serve(script).await;
    let error = Client::connect(HttpConfig::new(&url)).await.unwrap_err();
    assert!(error.is_auth_required(), "{error}");
    // Only the probe was sent: no initialize, no legacy SSE GET.
    let requests: Vec<(String, Value)> = log
        .lock()
        .unwrap()
        .iter()
        .map(|s| (s.method.clone(), s.body["method"].clone()))
        .collect();
    assert_eq!(requests, [("POST".to_owned(), json!("server/discover"))]);

    let client = Client::connect(HttpConfig::new(&url).header("Authorization", "Bearer good"))
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Modern);
}

#[tokio::test]
async fn a_modern_error_body_on_400_is_era_evidence() {
    // -32022 in a 400 body: the server is modern but wants another version;
    // the client must not fall back to initialize.
    let script: Script = Arc::new(|body, _| {
        Some((
            400,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": ["2099-01-01"], "requested": "2026-07-28"}}}),
        ))
        .filter(|_| body["method"].is_string())
    });
    let (url, log, _server) = serve(script).await;
    let error = Client::connect(HttpConfig::new(&url)).await.unwrap_err();
    assert!(error.to_string().contains("2099-01-01"), "{error}");
    assert!(
        calls(&log, "initialize").is_empty(),
        "no fallback to initialize"
    );

    // Pinned legacy still works against a server that only knows initialize.
    let legacy: Script = Arc::new(|body, _| match body["method"].as_str()? {
        "initialize" => ok(
            body,
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "serverInfo": {"name": "old", "version": "1"}}),
        ),
        _ => None,
    });
    let (url, _log, _server) = serve(legacy).await;
    let client = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(HttpConfig::new(&url))
        .await
        .unwrap();
    assert_eq!(client.protocol_version().as_str(), "2025-06-18");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let script: Script = Arc::new(|body, headers| match body["method"].as_str()? {
        "tools/call" => Some((0, Value::Null)),
        _ => modern_script()(body, headers),
    });
    let (url, _log, _server) = serve(script).await;
    let client = Client::builder()
        .request_timeout(std::time::Duration::from_millis(300))
        .connect(HttpConfig::new(&url))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let error = client.call_tool("plain", None).await.unwrap_err();
    assert!(error.is_timeout(), "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    // The connection is still usable.
    client.read_resource("file:///x").await.unwrap();
}

#[tokio::test]
async fn a_json_reply_to_a_notification_is_tolerated() {
    // Some servers answer `notifications/initialized` with 200 and `{}`.
    let script: Script = Arc::new(|body, headers| match body["method"].as_str()? {
        "server/discover" => Some((404, json!({"error": "not found"}))),
        "initialize" => ok(
            body,
            json!({"protocolVersion": "2025-03-26",
            "capabilities": {"tools": {}}, "serverInfo": {"name": "lenient", "version": "1"}}),
        ),
        "notifications/initialized" => Some((200, json!({}))),
        _ => modern_script()(body, headers),
    });
    let (url, log, _server) = serve(script).await;
    let client = Client::connect(HttpConfig::new(&url)).await.unwrap();
    assert_eq!(client.protocol_version().as_str(), "2025-03-26");
    assert_eq!(
        client.skipped_lines(),
        0,
        "the `{{}}` body was not treated as a bad message"
    );
    client.call_tool("plain", None).await.unwrap();
    // No session id was given, so none is sent.
    assert!(
        !calls(&log, "tools/call")[0]
            .headers
            .contains_key("mcp-session-id")
    );
}

/// Sends `Bearer old` until told of a 401, then `Bearer new` (a refresh).
#[derive(Default)]
struct Refreshing {
    refreshed: std::sync::atomic::AtomicBool,
    refusals: std::sync::atomic::AtomicUsize,
}

impl switchboard::transport::http::AuthProvider for Refreshing {
    fn authorization(&self, _url: &str) -> switchboard::transport::BoxFuture<'_, Option<String>> {
        let token = if self.refreshed.load(std::sync::atomic::Ordering::SeqCst) {
            "Bearer new"
        } else {
            "Bearer old"
        };
        Box::pin(async move { Some(token.to_owned()) })
    }

    fn unauthorized(
        &self,
        _status: u16,
        _www_authenticate: Option<&str>,
    ) -> switchboard::transport::BoxFuture<'_, bool> {
        self.refusals
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let first = !self
            .refreshed
            .swap(true, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move { first })
    }
}

#[tokio::test]
async fn a_refused_request_is_sent_once_more_after_a_refresh() {
    let script: Script = Arc::new(|body, headers| {
        if headers.get("authorization").map(String::as_str) != Some("Bearer new") {
            return Some((401, json!({"error": "unauthorized"})));
        }
        modern_script()(body, headers)
    });
    let (url, log, _server) = serve(script).await;
    let auth = Arc::new(Refreshing::default());
    let client = Client::connect(HttpConfig::new(&url).auth(auth.clone()))
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Modern);
    let probes: Vec<Option<String>> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.body["method"] == "server/discover")
        .map(|s| s.headers.get("authorization").cloned())
        .collect();
    assert_eq!(
        probes,
        [Some("Bearer old".to_owned()), Some("Bearer new".to_owned())]
    );
    assert_eq!(auth.refusals.load(std::sync::atomic::Ordering::SeqCst), 1);

    // A provider with nothing new: the 401 is the answer, sent once.
    let script: Script = Arc::new(|_, _| Some((401, json!({"error": "unauthorized"}))));
    let (url, log, _server) = serve(script).await;
    let stuck = Arc::new(Refreshing::default());
    stuck
        .refreshed
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let error = Client::connect(HttpConfig::new(&url).auth(stuck))
        .await
        .unwrap_err();
    assert!(error.is_auth_required(), "{error}");
    assert_eq!(log.lock().unwrap().len(), 1);
}

/// A DPoP-bound token, obtained on the first 401: a fresh proof per
/// request, and the server's nonce in every proof once it asked for one.
#[derive(Debug)]
struct Dpop {
    key: switchboard_auth::dpop::DpopKey,
    has_token: std::sync::atomic::AtomicBool,
    refusals: std::sync::atomic::AtomicUsize,
}

impl switchboard::transport::http::AuthProvider for Dpop {
    fn authorization(&self, _url: &str) -> switchboard::transport::BoxFuture<'_, Option<String>> {
        let token = self
            .has_token
            .load(std::sync::atomic::Ordering::SeqCst)
            .then(|| "DPoP tok".to_owned());
        Box::pin(async move { token })
    }

    fn request_credentials<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> switchboard::transport::BoxFuture<'a, switchboard::transport::http::RequestCredentials>
    {
        let credentials = if self.has_token.load(std::sync::atomic::Ordering::SeqCst) {
            let proof = self.key.proof(method, url, Some("tok")).ok();
            switchboard::transport::http::RequestCredentials::new(Some("DPoP tok".into()), proof)
        } else {
            Default::default()
        };
        Box::pin(async move { credentials })
    }

    fn unauthorized(
        &self,
        _status: u16,
        www_authenticate: Option<&str>,
    ) -> switchboard::transport::BoxFuture<'_, bool> {
        self.refusals
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let retry = www_authenticate.is_some_and(|w| w.contains("use_dpop_nonce"))
            || !self
                .has_token
                .swap(true, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move { retry })
    }

    fn dpop_nonce(&self, url: &str, nonce: &str) {
        self.key.remember_nonce(url, nonce);
    }
}

fn proof_claims(headers: &HashMap<String, String>) -> Value {
    use base64::Engine as _;
    let proof = headers.get("dpop").cloned().unwrap_or_default();
    let payload = proof.split('.').nth(1).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_request_is_retried_for_a_token_and_then_for_a_dpop_nonce() {
    let script: Script = Arc::new(|body, headers| {
        if !headers.contains_key("authorization") {
            return Some((401, json!({"error": "unauthorized"})));
        }
        if proof_claims(headers)["nonce"] != "n1" {
            return Some((
                401,
                json!({"error": "use_dpop_nonce", "_headers": {
                    "www-authenticate": "DPoP error=\"use_dpop_nonce\"",
                    "dpop-nonce": "n1",
                }}),
            ));
        }
        modern_script()(body, headers)
    });
    let (url, log, _server) = serve(script).await;
    let auth = Arc::new(Dpop {
        key: switchboard_auth::dpop::DpopKey::generate().unwrap(),
        has_token: Default::default(),
        refusals: Default::default(),
    });
    let client = Client::connect(HttpConfig::new(&url).auth(auth.clone()))
        .await
        .unwrap();
    client.call_tool("plain", None).await.unwrap();
    let seen = log.lock().unwrap().clone();
    assert_eq!(
        auth.refusals.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the first request, without a token and then without the nonce"
    );
    assert!(!seen[0].headers.contains_key("authorization"));
    assert!(!seen[0].headers.contains_key("dpop"));
    assert_eq!(proof_claims(&seen[1].headers).get("nonce"), None);
    let mut jtis = std::collections::HashSet::new();
    for request in &seen[1..] {
        assert_eq!(request.headers["authorization"], "DPoP tok");
        let claims = proof_claims(&request.headers);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], url.as_str());
        assert!(
            jtis.insert(claims["jti"].to_string()),
            "a fresh proof each time"
        );
    }
    assert!(
        seen[2..]
            .iter()
            .all(|r| proof_claims(&r.headers)["nonce"] == "n1")
    );
}
