//! The direct path for `http://` servers (`transport/http/direct.rs`):
//! keep-alive connections the transport drives itself, against a server
//! written here byte by byte — one that keeps connections, closes them
//! behind the client's back, redirects, cuts answers short and sends
//! endless headers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::Client;
use switchboard::transport::http::HttpConfig;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// What the server does with one request after reading it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Answer {
    /// Answers and keeps the connection.
    Keep,
    /// Answers as a session-era server (2025-11-25) does: no
    /// `server/discover`, a session id with `initialize`, 202 for a
    /// notification; it declares `tools.listChanged`, which only a GET
    /// stream could carry.
    Session,
    /// The same, declaring plain `tools`: nothing it could send unasked.
    QuietSession,
    /// Answers (saying nothing of closing) and then closes the connection.
    ThenClose,
    /// `307` to `/mcp`.
    Redirect,
    /// Promises 100 bytes of body, sends 10 and closes.
    Cut,
    /// A status line and then header lines without end.
    EndlessHeaders,
}

struct Server {
    url: String,
    /// Connections accepted.
    accepted: Arc<AtomicUsize>,
    /// Each request: its path and JSON-RPC method.
    seen: Arc<Mutex<Vec<(String, String)>>>,
    /// One message per connection the server closed, once it has.
    closed: mpsc::UnboundedReceiver<()>,
}

/// A modern (2026-07-28) server at `path`; `answer` decides, from the path
/// and the JSON-RPC method, what it does.
async fn serve(
    path: &str,
    answer: impl Fn(&str, &str) -> Answer + Send + Sync + 'static,
) -> Server {
    serve_on(
        TcpListener::bind("127.0.0.1:0").await.unwrap(),
        path,
        answer,
    )
}

/// [`serve`] on a listener of the test's own.
fn serve_on(
    listener: TcpListener,
    path: &str,
    answer: impl Fn(&str, &str) -> Answer + Send + Sync + 'static,
) -> Server {
    let url = format!("http://{}{path}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (closing, closed) = mpsc::unbounded_channel();
    let answer = Arc::new(answer);
    let (count, log) = (accepted.clone(), seen.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            count.fetch_add(1, Ordering::SeqCst);
            let (answer, log, closing) = (answer.clone(), log.clone(), closing.clone());
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut read = BufReader::new(read);
                loop {
                    let Some((verb, path, body)) = read_request(&mut read).await else {
                        return;
                    };
                    if verb != "POST" {
                        log.lock().unwrap().push((path, verb));
                        let refused =
                            "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n";
                        if write.write_all(refused.as_bytes()).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    let method = body["method"].as_str().unwrap_or_default().to_owned();
                    log.lock().unwrap().push((path.clone(), method.clone()));
                    let what = answer(&path, &method);
                    let reply = reply(&body, &method);
                    let bytes = match what {
                        Answer::Keep | Answer::ThenClose => response(200, &reply),
                        Answer::Session => {
                            session_era(&body, &method, json!({"tools": {"listChanged": true}}))
                        }
                        Answer::QuietSession => session_era(&body, &method, json!({"tools": {}})),
                        Answer::Redirect => "HTTP/1.1 307 Temporary Redirect\r\nlocation: /mcp\r\n\
                             content-length: 0\r\n\r\n"
                            .to_owned(),
                        Answer::Cut => "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                             content-length: 100\r\n\r\n{\"jsonrpc\""
                            .to_owned(),
                        Answer::EndlessHeaders => {
                            let _ = write.write_all(b"HTTP/1.1 200 OK\r\n").await;
                            let line = format!("x-junk: {}\r\n", "a".repeat(1000));
                            while write.write_all(line.as_bytes()).await.is_ok() {}
                            return;
                        }
                    };
                    if write.write_all(bytes.as_bytes()).await.is_err() {
                        return;
                    }
                    if matches!(what, Answer::ThenClose | Answer::Cut) {
                        drop(write);
                        let _ = closing.send(());
                        return;
                    }
                }
            });
        }
    });
    Server {
        url,
        accepted,
        seen,
        closed,
    }
}

/// One request's method, path and JSON body; `None` at the end of the
/// connection.
async fn read_request(
    read: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> Option<(String, String, Value)> {
    let mut line = String::new();
    if read.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut words = line.split(' ');
    let verb = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let mut length = 0;
    loop {
        let mut header = String::new();
        read.read_line(&mut header).await.ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    read.read_exact(&mut body).await.ok()?;
    Some((
        verb,
        path,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    ))
}

/// What a session-era server answers.
fn session_era(body: &Value, method: &str, capabilities: Value) -> String {
    let id = &body["id"];
    match method {
        "server/discover" => response(
            200,
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
        ),
        "initialize" => {
            let text = json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "serverInfo": {"name": "session", "version": "1"}}})
            .to_string();
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\n\
                 content-length: {}\r\n\r\n{text}",
                text.len()
            )
        }
        _ if id.is_null() => "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned(),
        "tools/list" => response(
            200,
            &json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}),
        ),
        _ => response(200, &reply(body, method)),
    }
}

fn reply(body: &Value, method: &str) -> Value {
    let result = match method {
        "server/discover" => json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "direct", "version": "1"}}
        }),
        "tools/call" => {
            json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]})
        }
        _ => json!({"resultType": "complete"}),
    };
    json!({"jsonrpc": "2.0", "id": body["id"], "result": result})
}

fn response(status: u16, body: &Value) -> String {
    let text = body.to_string();
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
        text.len()
    )
}

#[tokio::test]
async fn calls_share_one_keep_alive_connection() {
    let server = serve("/mcp", |_, _| Answer::Keep).await;
    let client = Client::connect(HttpConfig::new(&server.url)).await.unwrap();
    for _ in 0..50 {
        client.call_tool("t", None).await.unwrap();
    }
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
    // And calls at once each take a connection of their own, which stay.
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let client = client.clone();
        calls.spawn(async move { client.call_tool("t", None).await.map(drop) });
    }
    while let Some(outcome) = calls.join_next().await {
        outcome.unwrap().unwrap();
    }
    let after = server.accepted.load(Ordering::SeqCst);
    assert!((2..=8).contains(&after), "{after} connections");
    for _ in 0..20 {
        client.call_tool("t", None).await.unwrap();
    }
    assert_eq!(server.accepted.load(Ordering::SeqCst), after);
}

#[tokio::test]
async fn a_session_era_handshake_and_its_get_stream_share_one_connection() {
    let server = serve("/mcp", |_, _| Answer::Session).await;
    let client = Client::connect(HttpConfig::new(&server.url)).await.unwrap();
    assert_eq!(client.protocol_version().as_str(), "2025-11-25");
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let seen = server.seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|(_, m)| m == "GET"),
        "the GET stream was asked for: {seen:?}"
    );
    // The probe, `initialize`, `notifications/initialized`, the GET (405)
    // and `tools/list`, one after another on one connection.
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1, "{seen:?}");
}

#[tokio::test]
async fn a_server_with_nothing_to_send_unasked_gets_no_get_stream_until_a_call_asks_for_progress() {
    let server = serve("/mcp", |_, _| Answer::QuietSession).await;
    let client = Client::connect(HttpConfig::new(&server.url)).await.unwrap();
    assert_eq!(client.protocol_version().as_str(), "2025-11-25");
    client.list_tools().await.unwrap();
    client.call_tool("t", None).await.unwrap();
    let gets = |server: &Server| {
        let seen = server.seen.lock().unwrap();
        seen.iter().filter(|(_, m)| m == "GET").count()
    };
    assert_eq!(gets(&server), 0, "{:?}", server.seen.lock().unwrap());
    // A call that asks for progress: a server answering in JSON could send
    // it only on the GET stream, which is opened for it, once.
    let params = switchboard::types::CallToolRequestParams {
        name: "t".into(),
        ..Default::default()
    };
    for _ in 0..2 {
        let options = switchboard::RequestOptions::default().on_progress(|_| {});
        client.call_tool_with(&params, options).await.unwrap();
    }
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(gets(&server), 1, "{seen:?}");
    // Opened before the call went out, so the call's progress has a stream.
    let get = seen.iter().position(|(_, m)| m == "GET").unwrap();
    let calls: Vec<usize> = (0..seen.len())
        .filter(|&i| seen[i].1 == "tools/call")
        .collect();
    assert_eq!(calls.len(), 3, "{seen:?}");
    assert!(calls[0] < get && get < calls[1], "{seen:?}");
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_replaced_and_nothing_is_sent_twice() {
    let mut server = serve("/mcp", |_, method| match method {
        "tools/call" => Answer::ThenClose,
        _ => Answer::Keep,
    })
    .await;
    let client = Client::connect(HttpConfig::new(&server.url)).await.unwrap();
    for round in 1..=10 {
        client.call_tool("t", None).await.unwrap();
        // The server has closed the connection the client keeps.
        server.closed.recv().await.unwrap();
        let calls = server
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, m)| m == "tools/call")
            .count();
        assert_eq!(calls, round, "each call reached the server once");
    }
    assert_eq!(server.accepted.load(Ordering::SeqCst), 10);
}

#[tokio::test]
async fn a_same_origin_redirect_is_followed() {
    let server = serve("/old", |path, _| match path {
        "/old" => Answer::Redirect,
        _ => Answer::Keep,
    })
    .await;
    let client = Client::connect(HttpConfig::new(&server.url)).await.unwrap();
    client.call_tool("t", None).await.unwrap();
    let seen = server.seen.lock().unwrap().clone();
    let calls: Vec<&str> = seen
        .iter()
        .filter(|(_, m)| m == "tools/call")
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(calls, ["/old", "/mcp"]);
}

#[tokio::test]
async fn an_answer_cut_short_fails_its_call_and_the_next_call_works() {
    let cut = Arc::new(AtomicUsize::new(0));
    let once = cut.clone();
    let server = serve("/mcp", move |_, method| match method {
        "tools/call" if once.fetch_add(1, Ordering::SeqCst) == 0 => Answer::Cut,
        _ => Answer::Keep,
    })
    .await;
    let client = Client::connect(HttpConfig::new(&server.url)).await.unwrap();
    let error = client.call_tool("t", None).await.unwrap_err();
    let text = format!("{error:#}");
    assert!(text.contains(&server.url), "names the server: {text}");
    // And says what failed: the answer's body, not the request.
    let chain = chain(&error);
    assert!(chain.contains("reading the answer failed"), "{chain}");
    client.call_tool("t", None).await.unwrap();
}

#[tokio::test]
async fn endless_headers_fail_the_call_with_a_reason() {
    let server = serve("/mcp", |_, method| match method {
        "tools/call" => Answer::EndlessHeaders,
        _ => Answer::Keep,
    })
    .await;
    let client = Client::connect(HttpConfig::new(&server.url)).await.unwrap();
    let error = tokio::time::timeout(Duration::from_secs(30), client.call_tool("t", None))
        .await
        .expect("the call ends")
        .unwrap_err();
    let chain = chain(&error);
    assert!(chain.contains(&server.url), "{chain}");
    assert!(chain.contains("large"), "{chain}");
}

/// An error with its sources, joined by ": ".
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(error), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// The kernel's count of connections a full listen queue turned away.
fn listen_overflows() -> u64 {
    let netstat = std::fs::read_to_string("/proc/net/netstat").unwrap();
    let mut lines = netstat.lines();
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        if !names.starts_with("TcpExt:") {
            continue;
        }
        let at = names
            .split_whitespace()
            .position(|name| name == "ListenOverflows")
            .unwrap();
        return values.split_whitespace().nth(at).unwrap().parse().unwrap();
    }
    panic!("no TcpExt line in /proc/net/netstat");
}

#[tokio::test]
async fn a_connect_the_server_does_not_take_at_once_is_waited_for() {
    // A server whose accept queue (one place) is full: the client's SYN is
    // dropped, so its connect is still in progress when the call returns,
    // and goes through at the kernel's retry once the queue has room.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let address = listener.local_addr().unwrap();
    let filler = std::net::TcpStream::connect(address).unwrap();
    let overflows = listen_overflows();
    let url = format!("http://{address}/mcp");
    let connecting = tokio::spawn(Client::connect(HttpConfig::new(url)));
    // Until the kernel has turned the client's SYN away.
    tokio::time::timeout(Duration::from_secs(30), async {
        while listen_overflows() == overflows {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the client's SYN reaches the full queue");
    assert!(!connecting.is_finished());
    let (queued, _) = listener.accept().await.unwrap();
    drop((queued, filler));
    let server = serve_on(listener, "/mcp", |_, _| Answer::Keep);
    let client = tokio::time::timeout(Duration::from_secs(30), connecting)
        .await
        .expect("connects at the retry")
        .unwrap()
        .unwrap();
    client.call_tool("t", None).await.unwrap();
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_refused_connect_fails_at_once_naming_the_address() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let error = tokio::time::timeout(
        Duration::from_secs(30),
        Client::connect(HttpConfig::new(format!("http://{address}/mcp"))),
    )
    .await
    .expect("fails without waiting for the connect timeout")
    .unwrap_err();
    let chain = chain(&error);
    assert!(
        chain.contains(&format!("cannot connect to {address}")),
        "{chain}"
    );
    assert!(chain.to_lowercase().contains("refused"), "{chain}");
}
