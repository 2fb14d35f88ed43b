//! Hosts as users on the Streamable HTTP endpoint: each request's token
//! names a user the handler sees; a missing or refused token is 401 with
//! a challenge naming the resource metadata (served at its well-known
//! addresses); and one user's session is no other user's — in this
//! process, and sealed across replicas.
#![cfg(all(feature = "http", feature = "http-server"))]

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard::server::http::{
    HostAuth, HttpServeOptions, HttpServer, ResourceMetadata, SessionKey, TokenRefused, serve_http,
};
use switchboard::server::{HostUser, Reply, RequestContext, ServerHandler};
use switchboard::transport::BoxFuture;
use switchboard::types::{
    CallToolRequestParams, CallToolResult, Implementation, RequestOutcome, ServerCapabilities,
};

/// Answers `whoami` with the user its request was made for.
struct WhoAmI;

impl ServerHandler for WhoAmI {
    fn info(&self) -> Implementation {
        Implementation::new("whoami", "1.0.0")
    }

    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(Default::default()),
            ..Default::default()
        }
    }

    fn call_tool(
        &self,
        _: CallToolRequestParams,
        cx: RequestContext,
    ) -> Reply<RequestOutcome<CallToolResult>> {
        let who = cx.user().map_or("nobody".to_owned(), |u| {
            format!("{} {}", u.sub, u.claims["team"].as_str().unwrap_or("-"))
        });
        Box::pin(async move { Ok(RequestOutcome::Complete(CallToolResult::text(who))) })
    }
}

/// Tokens `token-NAME` are user NAME's; anything else is refused.
struct Names;

impl HostAuth for Names {
    fn check<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<HostUser, TokenRefused>> {
        Box::pin(async move {
            // Checked on another task's turn: an authenticator may wait.
            tokio::task::yield_now().await;
            match token.strip_prefix("token-") {
                Some(name) => Ok(HostUser::new(name, json!({ "sub": name, "team": "blue" }))),
                None => Err(TokenRefused(
                    "not a token of \"ours\"\r\nInjected: yes".to_owned(),
                )),
            }
        })
    }
}

async fn start(key: Option<SessionKey>) -> (HttpServer, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut options = HttpServeOptions::default()
        .host_auth(Names)
        .resource_metadata(
            ResourceMetadata::new(
                format!("{base}/mcp"),
                vec!["https://issuer.example".to_owned()],
            )
            .scopes_supported(vec!["mcp".to_owned()]),
        );
    if let Some(key) = key {
        options = options.session_key(key);
    }
    let server = serve_http(Arc::new(WhoAmI), listener, options).unwrap();
    (server, base)
}

struct Answer {
    status: u16,
    session: Option<String>,
    challenge: Option<String>,
    body: String,
}

async fn post(base: &str, token: Option<&str>, session: Option<&str>, body: Value) -> Answer {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    Answer {
        status: response.status().as_u16(),
        session: header("mcp-session-id"),
        challenge: header("www-authenticate"),
        body: response.text().await.unwrap(),
    }
}

/// A session of `token`'s user, initialized.
async fn open_session(base: &str, token: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let answer = post(base, Some(token), None, init).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let session = answer.session.expect("a session id");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = post(base, Some(token), Some(&session), note).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    session
}

async fn whoami(base: &str, token: &str, session: &str) -> Answer {
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}}});
    post(base, Some(token), Some(session), call).await
}

#[tokio::test]
async fn another_users_token_cannot_use_a_session() {
    let (_server, base) = start(None).await;
    let alice = open_session(&base, "token-alice").await;
    let answer = whoami(&base, "token-alice", &alice).await;
    assert!(answer.body.contains("alice blue"), "{}", answer.body);

    // Bob, with a good token of his own, names Alice's session: as if it
    // did not exist.
    let stolen = whoami(&base, "token-bob", &alice).await;
    assert_eq!(stolen.status, 404, "{}", stolen.body);
    assert!(!stolen.body.contains("alice"), "{}", stolen.body);
    // Nor can he open its stream or end it.
    let client = reqwest::Client::new();
    let stream = client
        .get(format!("{base}/mcp"))
        .bearer_auth("token-bob")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 404);
    let ended = client
        .delete(format!("{base}/mcp"))
        .bearer_auth("token-bob")
        .header("mcp-session-id", &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status().as_u16(), 404);
    // Alice's session lives on, and is still hers.
    let answer = whoami(&base, "token-alice", &alice).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body.contains("alice blue"), "{}", answer.body);
    // Her own DELETE ends it.
    let ended = client
        .delete(format!("{base}/mcp"))
        .bearer_auth("token-alice")
        .header("mcp-session-id", &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status().as_u16(), 200);
}

#[tokio::test]
async fn a_sealed_session_is_its_users_on_every_replica() {
    let key = SessionKey::new(&[7; 32]);
    let (_one, first) = start(Some(key.clone())).await;
    let (_two, second) = start(Some(key)).await;
    let alice = open_session(&first, "token-alice").await;
    // On the replica that never saw it, Bob is refused first (so that his
    // attempt cannot be the one that takes it up) …
    let stolen = whoami(&second, "token-bob", &alice).await;
    assert_eq!(stolen.status, 404, "{}", stolen.body);
    // … and Alice is served.
    let answer = whoami(&second, "token-alice", &alice).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body.contains("alice blue"), "{}", answer.body);
    // Taken up by Alice there, it is still not Bob's.
    let stolen = whoami(&second, "token-bob", &alice).await;
    assert_eq!(stolen.status, 404, "{}", stolen.body);
}

#[tokio::test]
async fn each_user_is_seen_by_the_handler() {
    let (_server, base) = start(None).await;
    let alice = open_session(&base, "token-alice").await;
    let bob = open_session(&base, "token-bob").await;
    assert_ne!(alice, bob);
    assert!(
        whoami(&base, "token-bob", &bob)
            .await
            .body
            .contains("bob blue")
    );
    assert!(
        whoami(&base, "token-alice", &alice)
            .await
            .body
            .contains("alice blue")
    );
    // The stateless era: one shared connection, each request its own user.
    for name in ["alice", "bob"] {
        let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "whoami", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}});
        let response = reqwest::Client::new()
            .post(format!("{base}/mcp"))
            .bearer_auth(format!("token-{name}"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "whoami")
            .header("content-type", "application/json")
            .body(call.to_string())
            .send()
            .await
            .unwrap();
        let body = response.text().await.unwrap();
        assert!(body.contains(&format!("{name} blue")), "{body}");
    }
}

#[tokio::test]
async fn a_missing_or_refused_token_is_challenged_with_the_metadata() {
    let (_server, base) = start(None).await;
    let metadata = format!("resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});

    let none = post(&base, None, None, init.clone()).await;
    assert_eq!(none.status, 401);
    let challenge = none.challenge.unwrap();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(&metadata), "{challenge}");
    assert!(challenge.contains("scope=\"mcp\""), "{challenge}");
    // No token sent: no error code (RFC 6750 §3.1).
    assert!(!challenge.contains("error="), "{challenge}");

    let refused = post(&base, Some("garbage"), None, init).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.session, None);
    let challenge = refused.challenge.unwrap();
    assert!(challenge.contains(&metadata), "{challenge}");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    // The description is the authenticator's, kept inside its quotes.
    assert!(
        challenge.contains("error_description=\"not a token of oursInjected: yes\""),
        "{challenge}"
    );
}

#[tokio::test]
async fn the_resource_metadata_is_served_at_its_well_known_addresses() {
    let (_server, base) = start(None).await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let response = reqwest::get(format!("{base}{path}")).await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        let document: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(document["resource"], format!("{base}/mcp"), "{path}");
        assert_eq!(
            document["authorization_servers"],
            json!(["https://issuer.example"])
        );
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
        assert_eq!(document["scopes_supported"], json!(["mcp"]));
    }
    let elsewhere = reqwest::get(format!("{base}/.well-known/oauth-protected-resource/other"))
        .await
        .unwrap();
    assert_eq!(elsewhere.status().as_u16(), 404);
}

#[tokio::test]
async fn a_static_token_and_an_authenticator_are_exclusive() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let options = HttpServeOptions::default()
        .bearer_token("a".repeat(40))
        .host_auth(Names);
    let refused = serve_http(Arc::new(WhoAmI), listener, options).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
}

/// A browser's page beside the endpoint: answered without a token (a
/// browser has none), with its query and cookies; other paths are still
/// 404; a foreign `Host` is refused before the page is asked.
#[tokio::test]
async fn pages_beside_the_endpoint_are_served_to_a_browser_without_a_token() {
    use switchboard::server::http::{Page, Pages};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = asked.clone();
    let options = HttpServeOptions::default()
        .host_auth(Names)
        .pages(Pages::new(move |request| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            (request.path == "/oauth/callback").then(|| {
                let page = Page::text(
                    200,
                    format!(
                        "state {} cookie {}",
                        request.param("state").unwrap_or_default(),
                        request.cookie("login").unwrap_or("-")
                    ),
                )
                .set_cookie("login=; Max-Age=0");
                Box::pin(async move { page }) as BoxFuture<'static, Page>
            })
        }));
    let _server = serve_http(Arc::new(WhoAmI), listener, options).unwrap();
    let client = reqwest::Client::new();
    let page = client
        .get(format!("{base}/oauth/callback?code=c&state=a%20b"))
        .header("cookie", "x=1; login=sealed")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["set-cookie"], "login=; Max-Age=0");
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    assert_eq!(page.text().await.unwrap(), "state a b cookie sealed");
    let other = client
        .get(format!("{base}/elsewhere"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    let before = asked.load(std::sync::atomic::Ordering::SeqCst);
    let foreign = client
        .get(format!("{base}/oauth/callback?state=x"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), before);
    // The endpoint itself still wants a token.
    let endpoint = post(
        &base,
        None,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    )
    .await;
    assert_eq!(endpoint.status, 401);
}
