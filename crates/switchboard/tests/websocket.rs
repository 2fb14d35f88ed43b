//! The WebSocket transport against an in-test server on loopback.
#![cfg(feature = "websocket")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use switchboard::Client;
use switchboard::transport::ws::WebSocketConfig;
use switchboard::transport::{Connection, Connector, TransportError};
use switchboard::types::Era;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{self, HeaderMap, HeaderValue, header};
use tokio_tungstenite::tungstenite::{Bytes, Message};
use tokio_util::task::AbortOnDropHandle;

/// Generous bound for anything that should happen at once.
const PATIENCE: Duration = Duration::from_secs(10);

/// What the server puts in `Sec-WebSocket-Protocol`.
#[derive(Clone, Copy)]
enum Answer {
    Mcp,
    NoSubprotocol,
    OtherSubprotocol,
    /// Refuses the handshake with this status.
    Refuse(u16),
}

#[derive(Default)]
struct Seen {
    handshakes: Vec<HeaderMap>,
    methods: Vec<String>,
    pongs: usize,
    close_frames: usize,
}

struct TestServer {
    url: String,
    seen: Arc<Mutex<Seen>>,
    hang_up: Arc<Notify>,
    _task: AbortOnDropHandle<()>,
}

impl TestServer {
    async fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("ws://{}/mcp", listener.local_addr().expect("address"));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let hang_up = Arc::new(Notify::new());
        let (seen2, hang_up2) = (seen.clone(), hang_up.clone());
        let task = tokio::spawn(async move {
            // Dropped with the accept loop, so every connection ends with the test.
            let mut connections = JoinSet::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                connections.spawn(serve(tcp, answer, seen2.clone(), hang_up2.clone()));
            }
        });
        Self {
            url,
            seen,
            hang_up,
            _task: AbortOnDropHandle::new(task),
        }
    }

    fn seen<T>(&self, read: impl FnOnce(&Seen) -> T) -> T {
        read(&self.seen.lock().unwrap())
    }

    /// Waits until `check` holds on what the server saw.
    async fn wait_for(&self, what: &str, check: impl Fn(&Seen) -> bool) {
        tokio::time::timeout(PATIENCE, async {
            while !self.seen(&check) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("the server never saw {what}"));
    }
}

// tungstenite's handshake callback must return its (large) `ErrorResponse`.
#[allow(clippy::result_large_err)]
async fn serve(tcp: TcpStream, answer: Answer, seen: Arc<Mutex<Seen>>, hang_up: Arc<Notify>) {
    let seen2 = seen.clone();
    let callback = move |request: &Request, mut response: Response| {
        seen2
            .lock()
            .unwrap()
            .handshakes
            .push(request.headers().clone());
        let subprotocol = match answer {
            Answer::Mcp => Some("mcp"),
            Answer::NoSubprotocol => None,
            Answer::OtherSubprotocol => Some("graphql-ws"),
            Answer::Refuse(status) => {
                let refusal: ErrorResponse = http::Response::builder()
                    .status(status)
                    .header(header::WWW_AUTHENTICATE, r#"Bearer realm="test""#)
                    .body(Some("not for you".into()))
                    .expect("response");
                return Err(refusal);
            }
        };
        if let Some(subprotocol) = subprotocol {
            response.headers_mut().insert(
                header::SEC_WEBSOCKET_PROTOCOL,
                HeaderValue::from_static(subprotocol),
            );
        }
        Ok(response)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, callback).await else {
        return;
    };
    loop {
        let message = tokio::select! {
            message = ws.next() => message,
            () = hang_up.notified() => {
                let _ = ws.close(None).await;
                // Drain until the client answers the close frame.
                while let Some(Ok(_)) = ws.next().await {}
                return;
            }
        };
        let text = match message {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Pong(_))) => {
                seen.lock().unwrap().pongs += 1;
                continue;
            }
            Some(Ok(Message::Close(_))) => {
                seen.lock().unwrap().close_frames += 1;
                continue;
            }
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return,
        };
        let request: Value = serde_json::from_str(&text).expect("the client sends JSON");
        let Some(method) = request["method"].as_str() else {
            continue;
        };
        seen.lock().unwrap().methods.push(method.to_owned());
        if request.get("id").is_none() {
            continue;
        }
        for reply in answer_to(method, &request["id"]) {
            if ws.send(reply).await.is_err() {
                return;
            }
        }
    }
}

/// A legacy-era server: no `server/discover`, `initialize`, one tool; and
/// two test methods that make noise or send too much.
fn answer_to(method: &str, id: &Value) -> Vec<Message> {
    let result = |result: Value| {
        Message::text(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string())
    };
    match method {
        "initialize" => vec![result(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "ws-test", "version": "1.0.0"},
        }))],
        "tools/list" => vec![result(json!({
            "tools": [{
                "name": "echo",
                "description": "Says it back",
                "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
            }],
        }))],
        "test/noise" => vec![
            Message::Ping(Bytes::from_static(b"are you there")),
            Message::Binary(Bytes::from_static(b"{\"not\": \"json-rpc\"}")),
            result(json!({"after": "noise"})),
        ],
        "test/big" => vec![result(json!({"blob": "x".repeat(4096)}))],
        _ => vec![Message::text(
            json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": -32601, "message": format!("Method not found: {method}")},
            })
            .to_string(),
        )],
    }
}

async fn open(config: WebSocketConfig) -> Connection {
    tokio::time::timeout(PATIENCE, config.connect())
        .await
        .expect("connect timed out")
        .expect("connect")
}

async fn connect_error(config: WebSocketConfig) -> TransportError {
    match tokio::time::timeout(PATIENCE, config.connect())
        .await
        .expect("connect timed out")
    {
        Ok(_) => panic!("connected"),
        Err(error) => error,
    }
}

async fn recv(connection: &mut Connection) -> Result<Option<Vec<u8>>, TransportError> {
    let incoming = tokio::time::timeout(PATIENCE, connection.stream.recv())
        .await
        .expect("recv timed out")?;
    Ok(incoming.map(|incoming| incoming.into_message().expect("a message, not a report")))
}

async fn recv_json(connection: &mut Connection) -> Value {
    let message = recv(connection).await.expect("recv").expect("a message");
    serde_json::from_slice(&message).expect("JSON")
}

/// The error and all its sources, for assertions on what a user would read.
fn full_message(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

#[tokio::test]
async fn client_lands_in_the_legacy_era_and_lists_tools() {
    let server = TestServer::start(Answer::Mcp).await;
    let config = WebSocketConfig::new(&server.url);
    assert!(config.is_remote());
    let client = tokio::time::timeout(PATIENCE, Client::builder().connect(config))
        .await
        .expect("connect timed out")
        .expect("connect");

    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version().as_str(), "2025-11-25");
    assert_eq!(client.server_info().expect("server info").name, "ws-test");
    let tools = client.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["echo"]);
    // Auto mode probed first, was told -32601, and fell back to initialize.
    assert_eq!(
        server.seen(|seen| seen.methods.clone()),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );

    // Many requests at once share the socket without mixing their frames.
    let lists = (0..20).map(|_| client.list_tools());
    for tools in futures_util::future::join_all(lists).await {
        assert_eq!(tools.expect("tools/list").len(), 1);
    }

    client.close().await;
    server
        .wait_for("the close frame", |seen| seen.close_frames == 1)
        .await;
}

#[tokio::test]
async fn the_handshake_asks_for_mcp_and_carries_custom_headers() {
    let server = TestServer::start(Answer::Mcp).await;
    let _connection = open(
        WebSocketConfig::new(&server.url)
            .header("Authorization", "Bearer token-123")
            .header("X-Tenant", "blue"),
    )
    .await;
    let headers = server.seen(|seen| seen.handshakes[0].clone());
    assert_eq!(headers[header::SEC_WEBSOCKET_PROTOCOL], "mcp");
    assert_eq!(headers[header::AUTHORIZATION], "Bearer token-123");
    assert_eq!(headers["x-tenant"], "blue");
}

#[tokio::test]
async fn a_server_without_the_mcp_subprotocol_is_refused() {
    for answer in [Answer::NoSubprotocol, Answer::OtherSubprotocol] {
        let server = TestServer::start(answer).await;
        let error = connect_error(WebSocketConfig::new(&server.url)).await;
        assert!(
            matches!(error, TransportError::Http { .. }),
            "{}",
            full_message(&error)
        );
        assert!(
            full_message(&error).contains("`mcp` WebSocket subprotocol"),
            "{}",
            full_message(&error)
        );

        let error = Client::builder()
            .connect(WebSocketConfig::new(&server.url))
            .await
            .expect_err("connected");
        assert!(!error.is_auth_required());
        assert!(full_message(&error).contains("subprotocol"));
    }
}

#[tokio::test]
async fn a_refused_handshake_reports_its_status() {
    let server = TestServer::start(Answer::Refuse(401)).await;
    match connect_error(WebSocketConfig::new(&server.url)).await {
        TransportError::AuthorizationRequired {
            status,
            www_authenticate,
        } => {
            assert_eq!(status, 401);
            assert_eq!(www_authenticate.as_deref(), Some(r#"Bearer realm="test""#));
        }
        other => panic!("not an auth error: {}", full_message(&other)),
    }
    let error = Client::builder()
        .connect(WebSocketConfig::new(&server.url))
        .await
        .expect_err("connected");
    assert!(error.is_auth_required(), "{}", full_message(&error));

    let server = TestServer::start(Answer::Refuse(403)).await;
    let error = connect_error(WebSocketConfig::new(&server.url)).await;
    assert!(error.is_auth_required());
    assert_eq!(error.http_status(), Some(403));

    let server = TestServer::start(Answer::Refuse(404)).await;
    match connect_error(WebSocketConfig::new(&server.url)).await {
        TransportError::HttpStatus { status, body } => {
            assert_eq!(status, 404);
            assert_eq!(body, "not for you");
        }
        other => panic!("not an HTTP status: {}", full_message(&other)),
    }
}

#[tokio::test]
async fn the_server_closing_fails_the_next_request() {
    let server = TestServer::start(Answer::Mcp).await;
    let client = Client::builder()
        .connect(WebSocketConfig::new(&server.url))
        .await
        .expect("connect");
    client.list_tools().await.expect("tools/list");

    server.hang_up.notify_one();
    tokio::time::timeout(PATIENCE, async {
        while client.connection_error().is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the client never noticed the close");
    assert!(matches!(
        *client.connection_error().expect("a reason"),
        TransportError::Closed { .. }
    ));

    let error = client.list_tools().await.expect_err("the server is gone");
    assert!(error.is_disconnected(), "{}", full_message(&error));
}

#[tokio::test]
async fn recv_skips_binary_frames_and_answers_pings() {
    let server = TestServer::start(Answer::Mcp).await;
    let mut connection = open(WebSocketConfig::new(&server.url)).await;
    connection
        .sink
        .send(br#"{"jsonrpc":"2.0","id":1,"method":"test/noise"}"#)
        .await
        .expect("send");
    let answer = recv_json(&mut connection).await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["after"], "noise");
    server.wait_for("a pong", |seen| seen.pongs == 1).await;
}

#[tokio::test]
async fn a_message_over_the_limit_is_refused() {
    let server = TestServer::start(Answer::Mcp).await;
    let mut connection = open(WebSocketConfig::new(&server.url).max_message_size(1024)).await;
    connection
        .sink
        .send(br#"{"jsonrpc":"2.0","id":1,"method":"test/big"}"#)
        .await
        .expect("send");
    match recv(&mut connection).await {
        Err(TransportError::MessageTooLarge { limit, setting }) => {
            assert_eq!(limit, 1024);
            assert_eq!(setting, "max_message_size");
        }
        other => panic!("not refused: {other:?}"),
    }
}

#[tokio::test]
async fn close_sends_a_close_frame_and_ends_recv() {
    let server = TestServer::start(Answer::Mcp).await;
    let mut connection = open(WebSocketConfig::new(&server.url)).await;
    connection.sink.close().await;
    connection.sink.close().await;
    server
        .wait_for("the close frame", |seen| seen.close_frames >= 1)
        .await;
    assert!(matches!(recv(&mut connection).await, Ok(None)));
    assert!(matches!(
        connection.sink.send(b"{}").await,
        Err(TransportError::ClosedByClient)
    ));
    // Idempotent: one close frame for two calls.
    assert_eq!(server.seen(|seen| seen.close_frames), 1);
}

#[tokio::test]
async fn a_silent_server_hits_the_connect_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("ws://{}/mcp", listener.local_addr().expect("address"));
    // Accepts the TCP connection and never answers the upgrade.
    let held = Arc::new(Mutex::new(Vec::new()));
    let held2 = held.clone();
    let _task = AbortOnDropHandle::new(tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            held2.lock().unwrap().push(tcp);
        }
    }));
    let started = std::time::Instant::now();
    let error =
        connect_error(WebSocketConfig::new(url).connect_timeout(Duration::from_millis(200))).await;
    assert!(started.elapsed() < PATIENCE);
    assert!(
        full_message(&error).contains("connect timeout"),
        "{}",
        full_message(&error)
    );
}

#[tokio::test]
async fn bad_settings_fail_at_connect() {
    for config in [
        WebSocketConfig::new("http://127.0.0.1:1/mcp"),
        WebSocketConfig::new("ws://127.0.0.1:1/mcp").header("Upgrade", "h2c"),
        WebSocketConfig::new("ws://127.0.0.1:1/mcp").max_message_size(0),
    ] {
        assert!(matches!(
            connect_error(config).await,
            TransportError::Config(_)
        ));
    }
    let nobody = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("ws://{}/mcp", nobody.local_addr().expect("address"));
    drop(nobody);
    assert!(matches!(
        connect_error(WebSocketConfig::new(url)).await,
        TransportError::Http { .. }
    ));
}
