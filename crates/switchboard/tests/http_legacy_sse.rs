//! The legacy HTTP+SSE transport (2024-11-05) against a hand-written loopback
//! server, and the whole client over it against the npm reference server.
#![cfg(feature = "http")]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::transport::http::{AuthProvider, HttpConfig, HttpTransport};
use switchboard::transport::{BoxFuture, Connection, Connector, TransportError};
use switchboard::{Client, EraMode};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

/// Generous bound for anything that should happen at once.
const PATIENCE: Duration = Duration::from_secs(10);
const SECRET: &str = "Bearer secret-token";

// ------------------------------------------------------------ test server

/// How the loopback server behaves.
#[derive(Clone)]
struct Behaviour {
    /// The data of the `endpoint` event; `None` sends none.
    endpoint: Option<String>,
    /// Answer GET with this status line and extra header lines instead.
    refuse_get: Option<(&'static str, &'static str)>,
    content_type: &'static str,
}

impl Default for Behaviour {
    fn default() -> Self {
        Self {
            endpoint: Some("/messages?sessionId=abc".into()),
            refuse_get: None,
            content_type: "text/event-stream",
        }
    }
}

#[derive(Clone, Debug)]
struct Seen {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

struct State {
    behaviour: Behaviour,
    seen: Mutex<Vec<Seen>>,
    /// The open event stream, fed by POSTs.
    stream: Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>,
    /// How many event streams have ended.
    ended: watch::Sender<usize>,
}

/// A legacy HTTP+SSE server: GET (any path) opens the event stream; POST to
/// `…/sse` is 405, as a server without Streamable HTTP says; POST to any
/// other path takes a message and answers on the stream.
struct TestServer {
    base: String,
    state: Arc<State>,
    _tasks: JoinSet<()>,
}

impl TestServer {
    async fn start(behaviour: Behaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let state = Arc::new(State {
            behaviour,
            seen: Mutex::new(Vec::new()),
            stream: Mutex::new(None),
            ended: watch::Sender::new(0),
        });
        let mut tasks = JoinSet::new();
        let accepting = state.clone();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((socket, _)) = listener.accept().await {
                while connections.try_join_next().is_some() {}
                connections.spawn(serve(accepting.clone(), socket));
            }
        });
        Self {
            base,
            state,
            _tasks: tasks,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    fn posts(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "POST")
            .collect()
    }

    async fn wait_streams_ended(&self, count: usize) {
        let mut ended = self.state.ended.subscribe();
        tokio::time::timeout(PATIENCE, ended.wait_for(|n| *n >= count))
            .await
            .expect("the server should see the event stream end")
            .expect("server alive");
    }
}

struct Request {
    seen: Seen,
    body: Vec<u8>,
}

async fn read_request<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await.ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap_or(0));
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    Some(Request {
        seen: Seen {
            method,
            target,
            headers,
        },
        body,
    })
}

async fn respond(write: &mut OwnedWriteHalf, status: &str, extra: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = write.write_all(response.as_bytes()).await;
    let _ = write.shutdown().await;
}

async fn serve(state: Arc<State>, socket: tokio::net::TcpStream) {
    let (read, mut write) = socket.into_split();
    let mut reader = BufReader::new(read);
    let Some(request) = read_request(&mut reader).await else {
        return;
    };
    state.seen.lock().unwrap().push(request.seen.clone());
    let behaviour = &state.behaviour;
    match request.seen.method.as_str() {
        "GET" => {
            if let Some((status, extra)) = behaviour.refuse_get {
                return respond(&mut write, status, extra, "go away").await;
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
                behaviour.content_type
            );
            if write.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let (tx, mut rx) = mpsc::unbounded_channel();
            *state.stream.lock().unwrap() = Some(tx);
            let mut opening = String::from(": welcome\n\n");
            if let Some(endpoint) = &behaviour.endpoint {
                opening.push_str(&format!("event: endpoint\ndata: {endpoint}\n\n"));
            }
            if write.write_all(opening.as_bytes()).await.is_ok() {
                let mut buf = [0_u8; 64];
                loop {
                    tokio::select! {
                        event = rx.recv() => match event {
                            Some(event) if write.write_all(&event).await.is_ok() => {}
                            // Hung up by a POST, or the client is gone.
                            _ => break,
                        },
                        read = reader.read(&mut buf) => if matches!(read, Ok(0) | Err(_)) {
                            break;
                        },
                    }
                }
            }
            drop(write);
            state.ended.send_modify(|n| *n += 1);
        }
        "POST" if request.seen.target.ends_with("/sse") => {
            respond(&mut write, "405 Method Not Allowed", "", "").await;
        }
        // A DPoP proof without the server's nonce: ask for it (RFC 9449 §9).
        "POST"
            if request.seen.header("dpop").is_some()
                && proof_claims(request.seen.header("dpop"))["nonce"] != "n1" =>
        {
            respond(
                &mut write,
                "401 Unauthorized",
                "WWW-Authenticate: DPoP error=\"use_dpop_nonce\"\r\nDPoP-Nonce: n1\r\n",
                "",
            )
            .await;
        }
        "POST" => {
            let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
                return respond(&mut write, "400 Bad Request", "", "not JSON").await;
            };
            match message["method"].as_str() {
                Some("test/fail") => {
                    respond(
                        &mut write,
                        "500 Internal Server Error",
                        "",
                        "boom: it broke",
                    )
                    .await;
                }
                Some("test/hangup") => {
                    respond(&mut write, "202 Accepted", "", "Accepted").await;
                    state.stream.lock().unwrap().take();
                }
                Some(method) => {
                    respond(&mut write, "202 Accepted", "", "Accepted").await;
                    if let Some(id) = message.get("id") {
                        let answer = json!({"jsonrpc": "2.0", "id": id, "result": result_for(method, &message)});
                        let event = format!("event: message\ndata: {answer}\n\n");
                        if let Some(stream) = &*state.stream.lock().unwrap() {
                            let _ = stream.send(event.into_bytes());
                        }
                    }
                }
                None => respond(&mut write, "202 Accepted", "", "").await,
            }
        }
        _ => respond(&mut write, "405 Method Not Allowed", "", "").await,
    }
}

fn result_for(method: &str, message: &Value) -> Value {
    match method {
        "initialize" => json!({
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mini-sse", "version": "0.0.1"},
        }),
        "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
        _ => json!({"echo": method, "params": message.get("params")}),
    }
}

// ------------------------------------------------------------ helpers

#[derive(Default)]
struct TestAuth {
    told: Mutex<Vec<(u16, Option<String>)>>,
}

impl AuthProvider for TestAuth {
    fn authorization(&self, _url: &str) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { Some(SECRET.to_owned()) })
    }

    fn unauthorized(&self, status: u16, www_authenticate: Option<&str>) -> BoxFuture<'_, bool> {
        let challenge = www_authenticate.map(str::to_owned);
        Box::pin(async move {
            self.told.lock().unwrap().push((status, challenge));
            false
        })
    }
}

/// The claims of a DPoP proof header (not verified: the library's tests
/// check signatures).
fn proof_claims(proof: Option<&str>) -> Value {
    use base64::Engine as _;
    let payload = proof
        .unwrap_or_default()
        .split('.')
        .nth(1)
        .unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// A DPoP-bound token with a fresh proof per request; learns nonces.
#[derive(Debug)]
struct DpopAuth {
    key: switchboard_auth::dpop::DpopKey,
}

impl AuthProvider for DpopAuth {
    fn authorization(&self, _url: &str) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { Some("DPoP tok".to_owned()) })
    }

    fn request_credentials<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, switchboard::transport::http::RequestCredentials> {
        let proof = self.key.proof(method, url, Some("tok")).ok();
        Box::pin(async move {
            switchboard::transport::http::RequestCredentials::new(Some("DPoP tok".into()), proof)
        })
    }

    fn unauthorized(&self, _status: u16, www_authenticate: Option<&str>) -> BoxFuture<'_, bool> {
        let nonce = www_authenticate.is_some_and(|w| w.contains("use_dpop_nonce"));
        Box::pin(async move { nonce })
    }

    fn dpop_nonce(&self, url: &str, nonce: &str) {
        self.key.remember_nonce(url, nonce);
    }
}

fn sse(url: String) -> HttpConfig {
    HttpConfig::new(url).transport(HttpTransport::Sse)
}

async fn connect(config: &HttpConfig) -> Result<Connection, TransportError> {
    tokio::time::timeout(PATIENCE, config.connect())
        .await
        .expect("connect timed out")
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

const INITIALIZE: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

// ------------------------------------------------------------ transport

#[tokio::test]
async fn a_request_is_posted_to_the_endpoint_and_answered_on_the_stream() {
    let server = TestServer::start(Behaviour::default()).await;
    let auth = Arc::new(TestAuth::default());
    let config = sse(server.url("/sse"))
        .header("X-Custom", "yes")
        .auth(auth.clone());
    assert_eq!(config.describe(), server.url("/sse"));
    assert!(config.is_remote());
    let mut connection = connect(&config).await.expect("connect");

    connection.sink.send(INITIALIZE).await.expect("send");
    let answer = recv_json(&mut connection).await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["protocolVersion"], "2024-11-05");

    let seen = server.seen();
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].target, "/sse");
    assert_eq!(seen[0].header("accept"), Some("text/event-stream"));
    let post = &server.posts()[0];
    assert_eq!(post.target, "/messages?sessionId=abc");
    assert_eq!(post.header("content-type"), Some("application/json"));
    for request in [&seen[0], post] {
        assert_eq!(request.header("authorization"), Some(SECRET));
        assert_eq!(request.header("x-custom"), Some("yes"));
    }
    assert!(auth.told.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_relative_endpoint_resolves_against_the_sse_url() {
    let server = TestServer::start(Behaviour {
        endpoint: Some("messages?sessionId=abc".into()),
        ..Behaviour::default()
    })
    .await;
    let mut connection = connect(&sse(server.url("/mcp/sse")))
        .await
        .expect("connect");
    connection
        .sink
        .send(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#)
        .await
        .expect("send");
    assert_eq!(recv_json(&mut connection).await["result"]["echo"], "ping");
    assert_eq!(server.posts()[0].target, "/mcp/messages?sessionId=abc");
}

#[tokio::test]
async fn a_cross_origin_endpoint_is_refused() {
    let server = TestServer::start(Behaviour {
        endpoint: Some("http://evil.example/messages?sessionId=abc".into()),
        ..Behaviour::default()
    })
    .await;
    let config = sse(server.url("/sse")).auth(Arc::new(TestAuth::default()));
    let error = connect(&config).await.expect_err("another origin");
    let TransportError::Config(message) = &error else {
        panic!("expected a configuration error, got {error:?}");
    };
    assert!(message.contains("another origin"), "{message}");
    assert!(message.contains("http://evil.example"), "{message}");
    assert!(!message.contains("sessionId"), "{message}");
    assert!(server.posts().is_empty());
}

#[tokio::test]
async fn unauthorized_get_requires_authorization_and_tells_the_provider() {
    let server = TestServer::start(Behaviour {
        refuse_get: Some((
            "401 Unauthorized",
            "WWW-Authenticate: Bearer realm=\"mcp\"\r\n",
        )),
        ..Behaviour::default()
    })
    .await;
    let auth = Arc::new(TestAuth::default());
    let error = connect(&sse(server.url("/sse")).auth(auth.clone()))
        .await
        .expect_err("401");
    assert!(error.is_auth_required(), "{error:?}");
    assert!(matches!(
        &error,
        TransportError::AuthorizationRequired { status: 401, www_authenticate: Some(c) } if c == "Bearer realm=\"mcp\""
    ));
    assert!(!error.to_string().contains("secret"));
    assert_eq!(
        *auth.told.lock().unwrap(),
        [(401, Some("Bearer realm=\"mcp\"".to_owned()))]
    );
}

#[tokio::test]
async fn other_get_failures_are_reported() {
    let server = TestServer::start(Behaviour {
        refuse_get: Some(("404 Not Found", "")),
        ..Behaviour::default()
    })
    .await;
    let error = connect(&sse(server.url("/sse"))).await.expect_err("404");
    assert!(
        matches!(&error, TransportError::HttpStatus { status: 404, body } if body == "go away"),
        "{error:?}"
    );

    let server = TestServer::start(Behaviour {
        content_type: "application/json",
        ..Behaviour::default()
    })
    .await;
    let error = connect(&sse(server.url("/sse"))).await.expect_err("JSON");
    assert!(
        matches!(&error, TransportError::Config(m) if m.contains("not an event stream")),
        "{error:?}"
    );
}

#[tokio::test]
async fn no_endpoint_event_within_the_connect_timeout_is_an_error() {
    let server = TestServer::start(Behaviour {
        endpoint: None,
        ..Behaviour::default()
    })
    .await;
    let started = Instant::now();
    let error = connect(&sse(server.url("/sse")).connect_timeout(Duration::from_millis(300)))
        .await
        .expect_err("no endpoint");
    assert!(started.elapsed() < PATIENCE);
    let TransportError::Http { source, .. } = &error else {
        panic!("expected an HTTP failure, got {error:?}");
    };
    assert!(
        source.to_string().contains("no `endpoint` event"),
        "{source}"
    );
}

#[tokio::test]
async fn the_server_closing_the_stream_ends_the_connection() {
    let server = TestServer::start(Behaviour::default()).await;
    let mut connection = connect(&sse(server.url("/sse"))).await.expect("connect");
    connection
        .sink
        .send(br#"{"jsonrpc":"2.0","method":"test/hangup"}"#)
        .await
        .expect("send");
    for _ in 0..2 {
        let error = recv(&mut connection).await.expect_err("stream ended");
        assert!(matches!(error, TransportError::Closed { .. }), "{error:?}");
    }
}

#[tokio::test]
async fn a_silent_stream_hits_the_idle_read_timeout() {
    let server = TestServer::start(Behaviour::default()).await;
    let config = sse(server.url("/sse")).read_timeout(Duration::from_millis(300));
    let mut connection = connect(&config).await.expect("connect");
    let error = recv(&mut connection).await.expect_err("idle");
    assert!(
        matches!(error, TransportError::IdleTimeout(t) if t == Duration::from_millis(300)),
        "{error:?}"
    );
    server.wait_streams_ended(1).await;
}

#[tokio::test]
async fn dpop_proofs_name_each_request_and_a_nonce_challenge_is_answered() {
    let server = TestServer::start(Behaviour::default()).await;
    let auth = Arc::new(DpopAuth {
        key: switchboard_auth::dpop::DpopKey::generate().unwrap(),
    });
    let mut connection = connect(&sse(server.url("/sse")).auth(auth))
        .await
        .expect("connect");
    connection.sink.send(INITIALIZE).await.expect("send");
    assert_eq!(recv_json(&mut connection).await["id"], 1);
    let seen = server.seen();
    let get = proof_claims(seen[0].header("dpop"));
    assert_eq!(get["htm"], "GET");
    assert_eq!(get["htu"], server.url("/sse"));
    let posts = server.posts();
    assert_eq!(posts.len(), 2, "refused for the nonce, then accepted");
    let (first, second) = (
        proof_claims(posts[0].header("dpop")),
        proof_claims(posts[1].header("dpop")),
    );
    assert_eq!(first["htm"], "POST");
    // The endpoint's query is not part of htu (RFC 9449 §4.2).
    assert_eq!(first["htu"], server.url("/messages"));
    assert_eq!(first.get("nonce"), None);
    assert_eq!(second["nonce"], "n1");
    assert_ne!(first["jti"], second["jti"]);
    assert_eq!(posts[1].header("authorization"), Some("DPoP tok"));
}

#[tokio::test]
async fn post_failures_are_reported() {
    let server = TestServer::start(Behaviour::default()).await;
    let connection = connect(&sse(server.url("/sse"))).await.expect("connect");
    let error = connection
        .sink
        .send(br#"{"jsonrpc":"2.0","id":5,"method":"test/fail"}"#)
        .await
        .expect_err("500");
    assert!(
        matches!(&error, TransportError::HttpStatus { status: 500, body } if body == "boom: it broke"),
        "{error:?}"
    );
}

#[tokio::test]
async fn close_ends_the_stream_and_recv_returns_none() {
    let server = TestServer::start(Behaviour::default()).await;
    let mut connection = connect(&sse(server.url("/sse"))).await.expect("connect");
    connection.sink.close().await;
    connection.sink.close().await;
    assert_eq!(recv(&mut connection).await.expect("clean close"), None);
    assert_eq!(recv(&mut connection).await.expect("clean close"), None);
    let error = connection.sink.send(INITIALIZE).await.expect_err("closed");
    assert!(matches!(error, TransportError::ClosedByClient), "{error:?}");
    server.wait_streams_ended(1).await;
    assert!(server.posts().is_empty());
}

#[tokio::test]
async fn dropping_the_connection_ends_the_stream() {
    let server = TestServer::start(Behaviour::default()).await;
    let connection = connect(&sse(server.url("/sse"))).await.expect("connect");
    let sink = connection.sink.clone();
    drop(connection);
    // The sink alone keeps it open: answers could still be read elsewhere.
    // A notification sent through it after the drop and taken by the
    // server: had the drop closed the stream, the server (on this same
    // runtime) would have seen it end while that round trip ran.
    sink.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await
        .expect("the sink still sends");
    assert_eq!(server.posts().len(), 1);
    assert_eq!(*server.state.ended.borrow(), 0);
    drop(sink);
    server.wait_streams_ended(1).await;
}

// ------------------------------------------------------------ fallback

#[tokio::test]
async fn only_auto_falls_back_to_legacy_sse() {
    let server = TestServer::start(Behaviour::default()).await;
    let auto = HttpConfig::new(server.url("/sse"));
    let fallback = auto.fallback().expect("Auto has a fallback");
    assert_eq!(fallback.describe(), auto.describe());
    assert!(
        fallback.fallback().is_none(),
        "no fallback from the fallback"
    );
    // It speaks the legacy transport: GET and an endpoint event.
    let mut connection = fallback.connect().await.expect("connect");
    connection.sink.send(INITIALIZE).await.expect("send");
    assert_eq!(recv_json(&mut connection).await["id"], 1);

    let streamable = HttpConfig::new(server.url("/sse")).transport(HttpTransport::StreamableHttp);
    assert!(streamable.fallback().is_none());
    assert!(sse(server.url("/sse")).fallback().is_none());
}

#[tokio::test]
async fn the_client_falls_back_from_streamable_http_to_legacy_sse() {
    let server = TestServer::start(Behaviour::default()).await;
    let client = tokio::time::timeout(
        PATIENCE,
        Client::connect(HttpConfig::new(server.url("/sse"))),
    )
    .await
    .expect("connect timed out")
    .expect("connect");
    assert_eq!(client.protocol_version().as_str(), "2024-11-05");
    let tools = client.list_tools().await.expect("tools/list");
    assert_eq!(tools[0].name, "echo");
    // The refused POSTs went to the URL itself; the rest to the endpoint.
    assert!(
        server
            .seen()
            .iter()
            .any(|s| s.method == "GET" && s.target == "/sse")
    );
    assert!(
        server
            .posts()
            .iter()
            .any(|s| s.target == "/messages?sessionId=abc")
    );
    client.close().await;
    server.wait_streams_ended(1).await;
}

// ------------------------------------------------------------ interop

/// `@modelcontextprotocol/server-everything` in the interop cache
/// (`$SWITCHBOARD_CACHE`, else `<workspace>/.cache`), installed by
/// `scripts/install-interop.sh`.
fn everything_entry() -> PathBuf {
    let cache = match std::env::var_os("SWITCHBOARD_CACHE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.cache"),
    };
    cache.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn skip_or_fail(reason: &str) {
    let required = std::env::var("SWITCHBOARD_REQUIRE_INTEROP")
        .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"));
    assert!(!required, "{reason} (SWITCHBOARD_REQUIRE_INTEROP is set)");
    eprintln!("SKIP: legacy SSE interop: {reason}; run scripts/install-interop.sh");
}

/// Kills the server when the test ends, however it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_works_over_legacy_sse_with_the_npm_reference_server() {
    let entry = everything_entry();
    if !entry.is_file() {
        return skip_or_fail(&format!("{} is not installed", entry.display()));
    }
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        probe.local_addr().expect("addr").port()
    };
    let spawned = std::process::Command::new("node")
        .arg(&entry)
        .arg("sse")
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let _server = match spawned {
        Ok(child) => KillOnDrop(child),
        Err(error) => return skip_or_fail(&format!("cannot run node: {error}")),
    };
    let deadline = Instant::now() + PATIENCE;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "server-everything did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = format!("http://127.0.0.1:{port}/sse");

    // Pinned to the legacy transport and era.
    let client = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(sse(url.clone()))
        .await
        .expect("connect over legacy SSE");
    exercise(&client).await;
    client.close().await;

    // All defaults: Streamable HTTP is refused (404), so the client falls
    // back to the legacy transport on its own.
    let client = tokio::time::timeout(PATIENCE, Client::connect(HttpConfig::new(url)))
        .await
        .expect("connect timed out")
        .expect("connect with defaults");
    exercise(&client).await;
    client.close().await;
}

async fn exercise(client: &Client) {
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let mut arguments = serde_json::Map::new();
    arguments.insert("message".into(), json!("hi"));
    let result = client
        .call_tool("echo", Some(arguments))
        .await
        .expect("tools/call");
    let text = serde_json::to_string(&result.content).expect("JSON");
    assert!(text.contains("hi"), "{text}");
    assert_ne!(result.is_error, Some(true));
}
