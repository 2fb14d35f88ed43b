//! The Streamable HTTP handshake: the GET stream opens beside the first
//! request, never in front of it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard::transport::http::HttpConfig;
use switchboard::{Client, EraMode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

const INIT_RESULT: &str = r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"slow-get","version":"1"}}"#;

/// What the server saw, and when.
#[derive(Default)]
struct Seen {
    initialized: Option<Instant>,
    get: Option<Instant>,
    tools_list: Option<Instant>,
    get_answered: bool,
}

/// A session-era server whose GET stream is held unanswered until `release`;
/// `tools/list` is answered only once the GET has arrived, so its answer
/// reaches the client while the GET is still pending.
async fn slow_get_server(
    seen: Arc<Mutex<Seen>>,
    release: Arc<Notify>,
) -> (String, tokio_util::task::AbortOnDropHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let get_arrived = Arc::new(Notify::new());
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let (seen, release, get_arrived) = (seen.clone(), release.clone(), get_arrived.clone());
            connections.spawn(async move {
                let Some((method, body)) = read_request(&mut socket).await else {
                    return;
                };
                let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let answer = if method == "GET" {
                    seen.lock().unwrap().get = Some(Instant::now());
                    get_arrived.notify_one();
                    release.notified().await;
                    seen.lock().unwrap().get_answered = true;
                    b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_vec()
                } else if message["method"] == "initialize" {
                    json_reply(&format!(
                        r#"{{"jsonrpc":"2.0","id":{},"result":{INIT_RESULT}}}"#,
                        message["id"]
                    ))
                } else if message["method"] == "notifications/initialized" {
                    seen.lock().unwrap().initialized = Some(Instant::now());
                    b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_vec()
                } else if message["method"] == "tools/list" {
                    seen.lock().unwrap().tools_list = Some(Instant::now());
                    get_arrived.notified().await;
                    json_reply(&format!(
                        r#"{{"jsonrpc":"2.0","id":{},"result":{{"tools":[{{"name":"t","inputSchema":{{"type":"object"}}}}]}}}}"#,
                        message["id"]
                    ))
                } else {
                    b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_vec()
                };
                let _ = socket.write_all(&answer).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (url, tokio_util::task::AbortOnDropHandle::new(task))
}

fn json_reply(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let method = head.split(' ').next()?.to_ascii_uppercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap_or(0));
    while buf.len() < head_end + length {
        let mut chunk = [0; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((method, buf[head_end..].to_vec()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_does_not_wait_for_the_get_stream() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let release = Arc::new(Notify::new());
    let (url, _server) = slow_get_server(seen.clone(), release.clone()).await;
    let client = tokio::time::timeout(
        Duration::from_secs(10),
        Client::builder()
            .era_mode(EraMode::Legacy)
            .connect(HttpConfig::new(url)),
    )
    .await
    .expect("connect timed out")
    .expect("connect");
    let tools = tokio::time::timeout(Duration::from_secs(10), client.list_tools())
        .await
        .expect("tools/list waited for the GET stream")
        .expect("tools/list");
    assert_eq!(tools.len(), 1);
    let (initialized, tools_list) = {
        let seen = seen.lock().unwrap();
        // The server held the GET stream through the whole exchange.
        assert!(seen.get.is_some(), "the client opened the GET stream");
        assert!(!seen.get_answered, "the GET stream was still unanswered");
        (seen.initialized.unwrap(), seen.tools_list.unwrap())
    };
    // A client that waits for the GET stream's answer sends tools/list only
    // after its wait for it runs out (it used to be 500 ms); this one sends
    // it right after `notifications/initialized`.
    let gap = tools_list.duration_since(initialized);
    assert!(
        gap < Duration::from_millis(400),
        "tools/list came {gap:?} after initialized"
    );
    release.notify_waiters();
    client.close().await;
}
