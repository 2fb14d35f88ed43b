//! HTTP transport tests with a tiny raw HTTP/1.1 (and WebSocket) client.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::*;
use crate::DEFAULT_MODERN_VERSION as V;

const T: Duration = Duration::from_secs(5);

async fn start(config: ServerConfig) -> (SocketAddr, JoinHandle<io::Result<()>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (addr, tokio::spawn(serve_http(config, listener)))
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("bad JSON {:?}: {e}", self.body))
    }

    /// `data:` payloads of the SSE events in the body, with their `event:`.
    fn events(&self) -> Vec<(Option<String>, String)> {
        self.body.split("\n\n").filter_map(parse_event).collect()
    }
}

fn parse_event(block: &str) -> Option<(Option<String>, String)> {
    let mut event = None;
    let mut data = None;
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            event = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("data:") {
            data = Some(v.trim_start().to_owned());
        }
    }
    data.map(|d| (event, d))
}

/// One HTTP/1.1 connection.
struct Http {
    io: BufReader<TcpStream>,
    /// Body framing of the response being read.
    chunked: bool,
    remaining: Option<usize>,
    done: bool,
    sse_buf: String,
}

impl Http {
    async fn connect(addr: SocketAddr) -> Http {
        Http {
            io: BufReader::new(TcpStream::connect(addr).await.unwrap()),
            chunked: false,
            remaining: None,
            done: false,
            sse_buf: String::new(),
        }
    }

    async fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        if method == "POST" {
            req.push_str("Content-Type: application/json\r\n");
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        req.push_str(body);
        self.io.get_mut().write_all(req.as_bytes()).await.unwrap();
    }

    async fn line(&mut self) -> String {
        let mut line = String::new();
        tokio::time::timeout(T, self.io.read_line(&mut line))
            .await
            .expect("timed out")
            .unwrap();
        line.trim_end_matches(['\r', '\n']).to_owned()
    }

    async fn head(&mut self) -> (u16, Vec<(String, String)>) {
        let status_line = self.line().await;
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let line = self.line().await;
            if line.is_empty() {
                break;
            }
            let (n, v) = line.split_once(':').unwrap();
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        self.chunked = get("transfer-encoding").is_some_and(|v| v.contains("chunked"));
        self.remaining = get("content-length").map(|v| v.parse().unwrap());
        self.done = !self.chunked && self.remaining.is_none() && status == 101;
        self.sse_buf.clear();
        (status, headers)
    }

    /// The next piece of the body, `None` at its end.
    async fn chunk(&mut self) -> Option<String> {
        if self.done {
            return None;
        }
        if self.chunked {
            let size_line = self.line().await;
            let size = usize::from_str_radix(size_line.split(';').next().unwrap().trim(), 16)
                .unwrap_or_else(|_| panic!("bad chunk size {size_line:?}"));
            if size == 0 {
                self.line().await;
                self.done = true;
                return None;
            }
            let mut buf = vec![0; size + 2];
            tokio::time::timeout(T, self.io.read_exact(&mut buf))
                .await
                .expect("timed out")
                .unwrap();
            buf.truncate(size);
            Some(String::from_utf8(buf).unwrap())
        } else if let Some(n) = self.remaining {
            self.done = true;
            let mut buf = vec![0; n];
            tokio::time::timeout(T, self.io.read_exact(&mut buf))
                .await
                .expect("timed out")
                .unwrap();
            Some(String::from_utf8(buf).unwrap())
        } else {
            self.done = true;
            let mut buf = Vec::new();
            tokio::time::timeout(T, self.io.read_to_end(&mut buf))
                .await
                .expect("timed out")
                .unwrap();
            Some(String::from_utf8(buf).unwrap())
        }
    }

    async fn body(&mut self) -> String {
        let mut body = String::new();
        while let Some(c) = self.chunk().await {
            body.push_str(&c);
        }
        body
    }

    async fn response(&mut self) -> Resp {
        let (status, headers) = self.head().await;
        let body = self.body().await;
        Resp {
            status,
            headers,
            body,
        }
    }

    /// The next SSE block (event or comment), `None` at the end of the body.
    async fn sse_block(&mut self) -> Option<String> {
        loop {
            if let Some(i) = self.sse_buf.find("\n\n") {
                let block = self.sse_buf[..i].to_owned();
                self.sse_buf.drain(..i + 2);
                return Some(block);
            }
            let c = self.chunk().await?;
            self.sse_buf.push_str(&c);
        }
    }

    /// The next SSE event with data (skipping comments).
    async fn sse_event(&mut self) -> Option<(Option<String>, String)> {
        loop {
            let block = self.sse_block().await?;
            if let Some(e) = parse_event(&block) {
                return Some(e);
            }
        }
    }
}

async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Resp {
    let mut c = Http::connect(addr).await;
    c.send(method, path, headers, body).await;
    c.response().await
}

const ACCEPT_BOTH: (&str, &str) = ("Accept", "application/json, text/event-stream");

async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: Value) -> Resp {
    let mut h = vec![ACCEPT_BOTH];
    h.extend_from_slice(headers);
    request(addr, "POST", "/mcp", &h, &body.to_string()).await
}

fn init_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }})
}

/// Legacy initialize; returns the session id.
async fn init(addr: SocketAddr) -> String {
    let r = post(addr, &[], init_body()).await;
    assert_eq!(r.status, 200, "{r:?}");
    let sid = r.header("mcp-session-id").expect("session id").to_owned();
    let r = post(
        addr,
        &[
            ("Mcp-Session-Id", &sid),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(r.status, 202, "{r:?}");
    assert!(r.body.is_empty());
    sid
}

fn call(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args}})
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn modern_call(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args, "_meta": meta()}})
}

fn modern_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![("MCP-Protocol-Version", V), ("Mcp-Method", method)];
    if let Some(name) = name {
        h.push(("Mcp-Name", name));
    }
    h
}

#[tokio::test]
async fn legacy_initialize_returns_session_and_json() {
    for era in [Era::Legacy, Era::Dual] {
        let (addr, _server) = start(ServerConfig::default().with_era(era)).await;
        let r = post(addr, &[], init_body()).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        let sid = r.header("mcp-session-id").expect("Mcp-Session-Id");
        assert!(sid.len() >= 16 && sid.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");

        let sid = init(addr).await;
        let r = post(
            addr,
            &[
                ("Mcp-Session-Id", &sid),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(
            r.json()["result"]["tools"].as_array().unwrap().len(),
            crate::TOOL_NAMES.len()
        );
        // Without MCP-Protocol-Version (assumed 2025-03-26) it still works.
        let r = post(
            addr,
            &[("Mcp-Session-Id", &sid)],
            call(3, "echo", json!({"text": "x"})),
        )
        .await;
        assert_eq!(r.json()["result"]["content"][0]["text"], "x", "{r:?}");
    }
}

#[tokio::test]
async fn session_errors() {
    let (addr, _server) = start(ServerConfig::default().with_era(Era::Legacy)).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    // Missing session: 400.
    let r = post(addr, &[], list.clone()).await;
    assert_eq!(r.status, 400, "{r:?}");
    // Unknown session: 404.
    let r = post(addr, &[("Mcp-Session-Id", "nope")], list.clone()).await;
    assert_eq!(r.status, 404, "{r:?}");
    // Unsupported MCP-Protocol-Version: 400.
    let sid = init(addr).await;
    let r = post(
        addr,
        &[
            ("Mcp-Session-Id", &sid),
            ("MCP-Protocol-Version", "1999-01-01"),
        ],
        list.clone(),
    )
    .await;
    assert_eq!(r.status, 400, "{r:?}");
    // Client responses are accepted with 202.
    let r = post(
        addr,
        &[("Mcp-Session-Id", &sid)],
        json!({"jsonrpc": "2.0", "id": 99, "result": {}}),
    )
    .await;
    assert_eq!(r.status, 202, "{r:?}");
    // DELETE forgets the session.
    let r = request(addr, "DELETE", "/mcp", &[("Mcp-Session-Id", &sid)], "").await;
    assert_eq!(r.status, 200, "{r:?}");
    let r = post(addr, &[("Mcp-Session-Id", &sid)], list).await;
    assert_eq!(r.status, 404, "{r:?}");
}

#[tokio::test]
async fn forget_session_makes_the_session_unknown() {
    let (addr, _server) = start(ServerConfig::default().with_fault(Fault::SessionLoss)).await;
    let sid = init(addr).await;
    let h = [
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let r = post(
        addr,
        &h,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    let tools = r.json()["result"]["tools"].clone();
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "forget_session"),
        "{tools}"
    );
    let r = post(addr, &h, call(3, "forget_session", json!({}))).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.json()["result"].is_object(), "{r:?}");
    let r = post(addr, &h, call(4, "echo", json!({"text": "x"}))).await;
    assert_eq!(r.status, 404, "{r:?}");
    // A new session works.
    let sid2 = init(addr).await;
    assert_ne!(sid, sid2);
}

#[tokio::test]
async fn modern_post_with_headers() {
    for era in [Era::Modern, Era::Dual] {
        let (addr, _server) = start(ServerConfig::default().with_era(era)).await;
        let r = post(
            addr,
            &modern_headers("tools/call", Some("echo")),
            modern_call(1, "echo", json!({"text": "hi"})),
        )
        .await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.header("mcp-session-id"), None);
        let v = r.json();
        assert_eq!(v["id"], 1);
        assert_eq!(v["result"]["content"][0]["text"], "hi");
        assert_eq!(v["result"]["resultType"], "complete");

        let discover = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover",
                              "params": {"_meta": meta()}});
        let r = post(addr, &modern_headers("server/discover", None), discover).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.json()["result"]["supportedVersions"], json!([V]));

        // Base64-encoded Mcp-Name.
        let read = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                          "params": {"uri": "test://static/hello", "_meta": meta()}});
        let r = post(
            addr,
            &modern_headers(
                "resources/read",
                Some("=?base64?dGVzdDovL3N0YXRpYy9oZWxsbw==?="),
            ),
            read,
        )
        .await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.json()["result"]["contents"][0]["text"], "Hello, world!");
    }
}

#[tokio::test]
async fn modern_validation_errors() {
    let (addr, _server) = start(ServerConfig::default()).await;
    let body = modern_call(7, "echo", json!({"text": "hi"}));
    let check = |r: &Resp, status: u16, code: i64| {
        assert_eq!(r.status, status, "{r:?}");
        assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
        let v = r.json();
        assert_eq!(v["error"]["code"], code, "{v}");
        v
    };
    // Missing Mcp-Method.
    let r = post(
        addr,
        &[("MCP-Protocol-Version", V), ("Mcp-Name", "echo")],
        body.clone(),
    )
    .await;
    let v = check(&r, 400, -32020);
    assert_eq!(v["id"], 7);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Mcp-Method"),
        "{v}"
    );
    // Missing MCP-Protocol-Version.
    let r = post(
        addr,
        &[("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")],
        body.clone(),
    )
    .await;
    check(&r, 400, -32020);
    // Mcp-Method mismatch.
    let r = post(
        addr,
        &modern_headers("tools/list", Some("echo")),
        body.clone(),
    )
    .await;
    check(&r, 400, -32020);
    // Missing / mismatched Mcp-Name.
    let r = post(addr, &modern_headers("tools/call", None), body.clone()).await;
    check(&r, 400, -32020);
    let r = post(
        addr,
        &modern_headers("tools/call", Some("add")),
        body.clone(),
    )
    .await;
    check(&r, 400, -32020);
    // Header version differs from _meta.
    let r = post(
        addr,
        &[
            ("MCP-Protocol-Version", "2099-01-01"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
        ],
        body.clone(),
    )
    .await;
    check(&r, 400, -32020);
    // No _meta: -32602.
    let r = post(
        addr,
        &modern_headers("tools/call", Some("echo")),
        call(8, "echo", json!({"text": "hi"})),
    )
    .await;
    assert_eq!(check(&r, 400, -32602)["id"], 8);
    // Unsupported version: -32022 with the supported list.
    let mut old = body.clone();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = post(
        addr,
        &[
            ("MCP-Protocol-Version", "2099-01-01"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
        ],
        old,
    )
    .await;
    let v = check(&r, 400, -32022);
    assert_eq!(v["error"]["data"]["supported"], json!([V]));
    // Unknown method: 404 + -32601.
    let r = post(
        addr,
        &modern_headers("bogus/method", None),
        json!({"jsonrpc": "2.0", "id": 9, "method": "bogus/method", "params": {"_meta": meta()}}),
    )
    .await;
    check(&r, 404, -32601);
    // Tool errors stay 200.
    let r = post(
        addr,
        &modern_headers("tools/call", Some("fail")),
        modern_call(10, "fail", json!({})),
    )
    .await;
    check(&r, 200, -32603);
}

#[tokio::test]
async fn initialize_on_modern_only_server_is_400() {
    let (addr, _server) = start(ServerConfig::default().with_era(Era::Modern)).await;
    let r = post(addr, &[], init_body()).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.header("mcp-session-id"), None);
    let v = r.json();
    assert!(v["error"]["message"].as_str().unwrap().contains(V), "{v}");
    assert_eq!(v["error"]["data"]["supported"], json!([V]));
    // GET / DELETE are not part of the stateless revision.
    assert_eq!(
        request(addr, "GET", "/mcp", &[("Accept", "text/event-stream")], "")
            .await
            .status,
        405
    );
    assert_eq!(request(addr, "DELETE", "/mcp", &[], "").await.status, 405);
}

#[tokio::test]
async fn sse_response_mode() {
    let config = ServerConfig::default().with_http_response(HttpResponseMode::Sse);
    let (addr, _server) = start(config).await;
    let sid = init(addr).await;
    let mut body = call(2, "progress", json!({"steps": 2, "interval_ms": 5}));
    body["params"]["_meta"] = json!({"progressToken": "tok"});
    let r = post(addr, &[("Mcp-Session-Id", &sid)], body.clone()).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.body.contains("event: message\ndata: {"), "{}", r.body);
    let events = r.events();
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(events.iter().all(|(e, _)| e.as_deref() == Some("message")));
    let msgs: Vec<Value> = events
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(msgs[0]["method"], "notifications/progress");
    assert_eq!(msgs[0]["params"]["progressToken"], "tok");
    assert_eq!(msgs[1]["params"]["progress"], 2);
    assert_eq!(msgs[2]["id"], 2);
    assert_eq!(msgs[2]["result"]["content"][0]["text"], "completed 2 steps");

    // Immediate answers are one-event streams too.
    let r = post(
        addr,
        &[("Mcp-Session-Id", &sid)],
        call(3, "echo", json!({"text": "e"})),
    )
    .await;
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let events = r.events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        serde_json::from_str::<Value>(&events[0].1).unwrap()["id"],
        3
    );

    // A client that only accepts JSON gets JSON.
    let r = request(
        addr,
        "POST",
        "/mcp",
        &[("Accept", "application/json"), ("Mcp-Session-Id", &sid)],
        &body.to_string(),
    )
    .await;
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    assert_eq!(r.json()["id"], 2);
    // Neither: 406.
    let r = request(
        addr,
        "POST",
        "/mcp",
        &[("Accept", "text/html"), ("Mcp-Session-Id", &sid)],
        &body.to_string(),
    )
    .await;
    assert_eq!(r.status, 406);

    // Modern requests can stream too.
    let mut modern = modern_call(4, "progress", json!({"steps": 1, "interval_ms": 1}));
    modern["params"]["_meta"]["progressToken"] = json!(5);
    let r = post(
        addr,
        &modern_headers("tools/call", Some("progress")),
        modern,
    )
    .await;
    let events = r.events();
    assert_eq!(events.len(), 2, "{r:?}");
    let last: Value = serde_json::from_str(&events[1].1).unwrap();
    assert_eq!(last["result"]["resultType"], "complete");
}

#[tokio::test]
async fn json_mode_drops_progress_and_accept_sse_only_streams() {
    let (addr, _server) = start(ServerConfig::default()).await;
    let sid = init(addr).await;
    let mut body = call(2, "progress", json!({"steps": 2, "interval_ms": 1}));
    body["params"]["_meta"] = json!({"progressToken": "tok"});
    let r = post(addr, &[("Mcp-Session-Id", &sid)], body.clone()).await;
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "completed 2 steps"
    );
    let r = request(
        addr,
        "POST",
        "/mcp",
        &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid)],
        &body.to_string(),
    )
    .await;
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.events().len(), 3);
}

#[tokio::test]
async fn cancelled_notification_cancels_a_session_request() {
    let (addr, _server) = start(ServerConfig::default()).await;
    let sid = init(addr).await;
    let mut c = Http::connect(addr).await;
    let hang = call(5, "hang", json!({})).to_string();
    c.send(
        "POST",
        "/mcp",
        &[ACCEPT_BOTH, ("Mcp-Session-Id", &sid)],
        &hang,
    )
    .await;
    // A cancel that arrives before the server took the call cancels
    // nothing: cancel again until the call answers.
    let mut response = std::pin::pin!(c.response());
    let deadline = tokio::time::Instant::now() + T;
    let r = loop {
        let r = post(
            addr,
            &[("Mcp-Session-Id", &sid)],
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 5, "reason": "test"}}),
        )
        .await;
        assert_eq!(r.status, 202);
        tokio::select! {
            r = &mut response => break r,
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the hang call was never cancelled"
        );
    };
    assert_eq!(r.json()["error"]["code"], -32800, "{r:?}");
}

#[tokio::test]
async fn get_stream_and_no_get_stream() {
    let (addr, _server) = start(ServerConfig::default()).await;
    let sid = init(addr).await;
    let mut c = Http::connect(addr).await;
    c.send(
        "GET",
        "/mcp",
        &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid)],
        "",
    )
    .await;
    let (status, headers) = c.head().await;
    assert_eq!(status, 200);
    assert!(headers.contains(&("content-type".into(), "text/event-stream".into())));
    // The stream stays open.
    let next = tokio::time::timeout(Duration::from_millis(200), c.sse_block()).await;
    assert!(next.is_err(), "stream should stay open: {next:?}");
    // Without a session: 400; unknown session: 404.
    let accept = ("Accept", "text/event-stream");
    assert_eq!(
        request(addr, "GET", "/mcp", &[accept], "").await.status,
        400
    );
    let r = request(addr, "GET", "/mcp", &[accept, ("Mcp-Session-Id", "x")], "").await;
    assert_eq!(r.status, 404);
    // DELETE ends the stream.
    let r = request(addr, "DELETE", "/mcp", &[("Mcp-Session-Id", &sid)], "").await;
    assert_eq!(r.status, 200);
    assert_eq!(tokio::time::timeout(T, c.sse_block()).await.unwrap(), None);

    let (addr, _server) = start(ServerConfig::default().with_fault(Fault::NoGetStream)).await;
    let sid = init(addr).await;
    let r = request(addr, "GET", "/mcp", &[accept, ("Mcp-Session-Id", &sid)], "").await;
    assert_eq!(r.status, 405);
}

#[tokio::test]
async fn cut_stream_resumes_on_get() {
    let config = ServerConfig::default()
        .with_http_response(HttpResponseMode::Sse)
        .with_fault(Fault::CutStream);
    let (addr, _server) = start(config).await;
    let sid = init(addr).await;
    let mut body = call(2, "progress", json!({"steps": 3, "interval_ms": 20}));
    body["params"]["_meta"] = json!({"progressToken": "tok"});
    let r = post(addr, &[("Mcp-Session-Id", &sid)], body).await;
    assert_eq!(r.status, 200);
    let blocks: Vec<&str> = r.body.split("\n\n").filter(|b| !b.is_empty()).collect();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    // Priming: an id and empty data.
    let priming_id = blocks[0]
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("priming id");
    assert!(
        blocks[0].lines().any(|l| l == "data: " || l == "data:"),
        "{blocks:?}"
    );
    // First progress event, with an id; no response.
    let last_id = blocks[1]
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap();
    assert_ne!(priming_id, last_id);
    let (_, data) = parse_event(blocks[1]).unwrap();
    let first: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(first["params"]["progress"], 1);

    let r = request(
        addr,
        "GET",
        "/mcp",
        &[
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", &sid),
            ("Last-Event-ID", last_id),
        ],
        "",
    )
    .await;
    assert_eq!(r.status, 200);
    let msgs: Vec<Value> = r
        .events()
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(msgs.len(), 3, "{msgs:?}");
    assert_eq!(msgs[0]["params"]["progress"], 2);
    assert_eq!(msgs[1]["params"]["progress"], 3);
    assert_eq!(msgs[2]["id"], 2);
    assert_eq!(msgs[2]["result"]["content"][0]["text"], "completed 3 steps");
}

#[tokio::test]
async fn legacy_sse_transport() {
    let (addr, _server) = start(ServerConfig::default().with_era(Era::Legacy)).await;
    let mut c = Http::connect(addr).await;
    c.send("GET", "/sse", &[("Accept", "text/event-stream")], "")
        .await;
    let (status, headers) = c.head().await;
    assert_eq!(status, 200);
    assert!(headers.contains(&("content-type".into(), "text/event-stream".into())));
    let (event, endpoint) = c.sse_event().await.unwrap();
    assert_eq!(event.as_deref(), Some("endpoint"));
    assert!(endpoint.starts_with("/messages?session="), "{endpoint}");

    let r = request(addr, "POST", &endpoint, &[], &init_body().to_string()).await;
    assert_eq!(r.status, 202, "{r:?}");
    let (event, data) = c.sse_event().await.unwrap();
    assert_eq!(event.as_deref(), Some("message"));
    let v: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(v["id"], 1);
    assert_eq!(v["result"]["protocolVersion"], "2025-11-25");

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = request(addr, "POST", &endpoint, &[], &initialized.to_string()).await;
    assert_eq!(r.status, 202);
    let mut body = call(2, "progress", json!({"steps": 1, "interval_ms": 1}));
    body["params"]["_meta"] = json!({"progressToken": 1});
    request(addr, "POST", &endpoint, &[], &body.to_string()).await;
    let (_, data) = c.sse_event().await.unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&data).unwrap()["method"],
        "notifications/progress"
    );
    let (_, data) = c.sse_event().await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&data).unwrap()["id"], 2);

    // Unknown / missing session.
    let r = request(addr, "POST", "/messages?session=nope", &[], "{}").await;
    assert_eq!(r.status, 404);
    let r = request(addr, "POST", "/messages", &[], "{}").await;
    assert_eq!(r.status, 400);
    // Closing the stream ends the session.
    drop(c);
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let r = request(addr, "POST", &endpoint, &[], &initialized.to_string()).await;
        if r.status == 404 {
            break;
        }
        assert_eq!(r.status, 202, "{r:?}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "the session outlived its stream"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn transports_flag_disables_endpoints() {
    let config = ServerConfig::from_args(["--transports", "sse"].map(String::from)).unwrap();
    let (addr, _server) = start(config).await;
    let r = post(addr, &[], init_body()).await;
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!(request(addr, "GET", "/ws", &[], "").await.status, 404);
    // POST to the SSE URL (transport detection): 405.
    assert_eq!(request(addr, "POST", "/sse", &[], "{}").await.status, 405);
    let mut c = Http::connect(addr).await;
    c.send("GET", "/sse", &[], "").await;
    assert_eq!(c.head().await.0, 200);

    let config = ServerConfig::default().with_transports([HttpTransport::Streamable]);
    let (addr, _server) = start(config).await;
    assert_eq!(request(addr, "GET", "/sse", &[], "").await.status, 404);
    assert_eq!(post(addr, &[], init_body()).await.status, 200);
}

#[tokio::test]
async fn require_header_401() {
    let config = ServerConfig::from_args(
        ["--require-header", "Authorization: Bearer secret"].map(String::from),
    )
    .unwrap();
    let (addr, _server) = start(config).await;
    let r = post(addr, &[], init_body()).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let r = post(addr, &[("Authorization", "Bearer wrong")], init_body()).await;
    assert_eq!(r.status, 401);
    let r = post(addr, &[("authorization", "Bearer secret")], init_body()).await;
    assert_eq!(r.status, 200, "{r:?}");
}

#[tokio::test]
async fn body_limit_and_origin() {
    let (addr, _server) = start(ServerConfig::default()).await;
    let mut c = Http::connect(addr).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{{",
        64 * 1024 * 1024 + 1
    );
    c.io.get_mut().write_all(head.as_bytes()).await.unwrap();
    assert_eq!(c.head().await.0, 413);

    let r = post(addr, &[("Origin", "https://evil.example")], init_body()).await;
    assert_eq!(r.status, 403);
    let r = post(addr, &[("Origin", "http://localhost:3000")], init_body()).await;
    assert_eq!(r.status, 200);
    let r = request(addr, "POST", "/mcp", &[], "not json").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32700);
}

/// Minimal WebSocket client: handshake, masked text frames out, frames in.
struct Ws {
    io: TcpStream,
}

impl Ws {
    async fn connect(addr: SocketAddr) -> Ws {
        let mut c = Http::connect(addr).await;
        c.send(
            "GET",
            "/ws",
            &[
                ("Upgrade", "websocket"),
                ("Connection", "Upgrade"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Protocol", "mcp"),
            ],
            "",
        )
        .await;
        let (status, headers) = c.head().await;
        assert_eq!(status, 101);
        let get = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("sec-websocket-protocol"), Some("mcp"));
        assert_eq!(
            get("sec-websocket-accept"),
            Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        );
        assert!(c.io.buffer().is_empty());
        Ws {
            io: c.io.into_inner(),
        }
    }

    async fn send(&mut self, text: &str) {
        let payload = text.as_bytes();
        let mask = [1u8, 2, 3, 4];
        let mut frame = vec![0x81];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
        }
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.io.write_all(&frame).await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let mut hdr = [0u8; 2];
        tokio::time::timeout(T, self.io.read_exact(&mut hdr))
            .await
            .expect("timed out")
            .unwrap();
        assert_eq!(hdr[0], 0x81, "expected a final text frame");
        let len = match hdr[1] & 0x7f {
            126 => {
                let mut b = [0u8; 2];
                self.io.read_exact(&mut b).await.unwrap();
                u16::from_be_bytes(b) as usize
            }
            127 => {
                let mut b = [0u8; 8];
                self.io.read_exact(&mut b).await.unwrap();
                u64::from_be_bytes(b) as usize
            }
            n => n as usize,
        };
        let mut payload = vec![0; len];
        self.io.read_exact(&mut payload).await.unwrap();
        serde_json::from_slice(&payload).unwrap()
    }
}

#[tokio::test]
async fn websocket_roundtrip() {
    let (addr, _server) = start(ServerConfig::default()).await;
    let mut ws = Ws::connect(addr).await;
    ws.send(&init_body().to_string()).await;
    let v = ws.recv().await;
    assert_eq!(v["result"]["protocolVersion"], "2025-11-25");
    ws.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .await;
    let mut body = call(2, "progress", json!({"steps": 1, "interval_ms": 1}));
    body["params"]["_meta"] = json!({"progressToken": "p"});
    ws.send(&body.to_string()).await;
    assert_eq!(ws.recv().await["method"], "notifications/progress");
    assert_eq!(ws.recv().await["id"], 2);
    ws.send("not json").await;
    assert_eq!(ws.recv().await["error"]["code"], -32700);
    // Modern requests work on a fresh connection as on stdio.
    let mut ws = Ws::connect(addr).await;
    ws.send(&modern_call(1, "echo", json!({"text": "w"})).to_string())
        .await;
    assert_eq!(ws.recv().await["result"]["content"][0]["text"], "w");
}

#[tokio::test]
async fn exit_tool_stops_the_server() {
    let (addr, server) = start(ServerConfig::default()).await;
    let sid = init(addr).await;
    let mut c = Http::connect(addr).await;
    c.send(
        "POST",
        "/mcp",
        &[ACCEPT_BOTH, ("Mcp-Session-Id", &sid)],
        &call(2, "exit", json!({"code": 7})).to_string(),
    )
    .await;
    let err = tokio::time::timeout(T, server)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(ServerExit::from_io_error(&err), Some(7));
}

#[test]
fn parses_http_flags() {
    let args = [
        "--http",
        "127.0.0.1:0",
        "--transports",
        "sse,ws",
        "--http-response=sse",
        "--require-header",
        "X-Api-Key: k1",
        "--require-header",
        "Authorization:Bearer t",
        "--fault",
        "session-loss",
        "--fault",
        "cut-stream",
        "--fault",
        "no-get-stream",
    ];
    let c = ServerConfig::from_args(args.iter().map(|s| s.to_string())).unwrap();
    assert_eq!(c.http.as_deref(), Some("127.0.0.1:0"));
    assert_eq!(c.transports, [HttpTransport::Sse, HttpTransport::Ws]);
    assert_eq!(c.http_response, HttpResponseMode::Sse);
    assert_eq!(
        c.require_headers,
        [
            ("X-Api-Key".to_owned(), "k1".to_owned()),
            ("Authorization".to_owned(), "Bearer t".to_owned())
        ]
    );
    assert_eq!(
        c.faults,
        [Fault::SessionLoss, Fault::CutStream, Fault::NoGetStream]
    );
    let d = ServerConfig::default();
    assert_eq!(d.transports, crate::ALL_HTTP_TRANSPORTS);
    assert_eq!(d.http_response, HttpResponseMode::Json);
    for bad in [
        &["--transports", "tcp"][..],
        &["--transports", ""],
        &["--http-response", "xml"],
        &["--require-header", "novalue"],
        &["--http"],
    ] {
        assert!(
            ServerConfig::from_args(bad.iter().map(|s| s.to_string())).is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn header_value_decoding() {
    assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
    assert_eq!(
        decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
        Some("Hello, 世界")
    );
    assert_eq!(decode_header_value("=?base64?!!?="), None);
    assert_eq!(parse_event_id("s12-3"), Some(("s12", 3)));
    assert!(origin_is_local("http://127.0.0.1:8080"));
    assert!(origin_is_local("http://[::1]:1"));
    assert!(!origin_is_local("http://localhost.evil.com"));
    assert!(!origin_is_local("null"));
}

#[tokio::test]
async fn closing_the_response_cancels_the_request() {
    for mode in [HttpResponseMode::Json, HttpResponseMode::Sse] {
        let metrics = tokio::runtime::Handle::current().metrics();
        let (addr, _server) = start(ServerConfig::default().with_http_response(mode)).await;
        // The server alone; a session keeps no task of its own.
        let baseline = metrics.num_alive_tasks();
        let sid = init(addr).await;
        // The connections and requests of `init` end.
        wait_tasks(|n| n <= baseline, &format!("init's tasks to end ({mode})")).await;
        let mut c = Http::connect(addr).await;
        let hang = call(5, "hang", json!({})).to_string();
        c.send(
            "POST",
            "/mcp",
            &[ACCEPT_BOTH, ("Mcp-Session-Id", &sid)],
            &hang,
        )
        .await;
        // The connection and the request's task.
        wait_tasks(
            |n| n >= baseline + 2,
            &format!("the hang call's tasks ({mode})"),
        )
        .await;
        drop(c);
        let deadline = tokio::time::Instant::now() + T;
        while metrics.num_alive_tasks() > baseline {
            assert!(
                tokio::time::Instant::now() < deadline,
                "request not cancelled ({mode})"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Waits until the runtime's count of alive tasks satisfies `ok`.
async fn wait_tasks(ok: impl Fn(usize) -> bool, what: &str) {
    let metrics = tokio::runtime::Handle::current().metrics();
    let deadline = tokio::time::Instant::now() + T;
    while !ok(metrics.num_alive_tasks()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited {T:?} for {what}: {} tasks alive",
            metrics.num_alive_tasks()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

// ---------------------------------------------------------------------------
// Server→client requests (session era) and MRTR (stateless era) over HTTP.

const CAPS: &str = r#"{"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}}"#;

fn init_caps_body() -> Value {
    let mut b = init_body();
    b["params"]["capabilities"] = serde_json::from_str(CAPS).unwrap();
    b
}

/// Legacy initialize with every client capability; returns the session id.
async fn init_caps(addr: SocketAddr) -> String {
    let r = post(addr, &[], init_caps_body()).await;
    assert_eq!(r.status, 200, "{r:?}");
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(addr, &[("Mcp-Session-Id", &sid)], initialized).await;
    assert_eq!(r.status, 202);
    sid
}

async fn next_msg(c: &mut Http) -> Value {
    let (_, data) = c.sse_event().await.expect("stream ended");
    serde_json::from_str(&data).unwrap()
}

#[tokio::test]
async fn server_request_on_post_sse_stream() {
    let config = ServerConfig::default().with_http_response(HttpResponseMode::Sse);
    let (addr, _server) = start(config).await;
    let sid = init_caps(addr).await;
    let mut c = Http::connect(addr).await;
    let body = call(2, "roots", json!({})).to_string();
    c.send(
        "POST",
        "/mcp",
        &[ACCEPT_BOTH, ("Mcp-Session-Id", &sid)],
        &body,
    )
    .await;
    assert_eq!(c.head().await.0, 200);
    let req = next_msg(&mut c).await;
    assert_eq!(req["method"], "roots/list");
    // The client answers with a new POST: 202, no body.
    let answer = json!({"jsonrpc": "2.0", "id": req["id"],
                        "result": {"roots": [{"uri": "file:///r"}]}});
    let r = post(addr, &[("Mcp-Session-Id", &sid)], answer).await;
    assert_eq!(r.status, 202, "{r:?}");
    let resp = next_msg(&mut c).await;
    assert_eq!(resp["id"], 2);
    assert_eq!(
        resp["result"]["content"][0]["text"],
        r#"[{"uri":"file:///r"}]"#
    );
}

#[tokio::test]
async fn server_request_on_get_stream_when_answering_json() {
    let record = std::env::temp_dir().join(format!(
        "switchboard-testkit-ask-url-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&record);
    let config = ServerConfig {
        record: Some(record.clone()),
        ..ServerConfig::default()
    };
    let (addr, _server) = start(config).await;
    let sid = init_caps(addr).await;
    // The request is sent before the GET stream opens: it waits for it.
    let call_sid = sid.clone();
    let call_task = tokio::spawn(async move {
        let mut c = Http::connect(addr).await;
        let body = call(2, "ask_url", json!({})).to_string();
        c.send(
            "POST",
            "/mcp",
            &[ACCEPT_BOTH, ("Mcp-Session-Id", &call_sid)],
            &body,
        )
        .await;
        c.response().await
    });
    // The server has the call before the GET stream opens.
    let deadline = tokio::time::Instant::now() + T;
    while !std::fs::read_to_string(&record).is_ok_and(|r| r.contains("\"ask_url\"")) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server never received the ask_url call"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = std::fs::remove_file(&record);
    let mut get = Http::connect(addr).await;
    get.send(
        "GET",
        "/mcp",
        &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid)],
        "",
    )
    .await;
    assert_eq!(get.head().await.0, 200);
    let req = next_msg(&mut get).await;
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["params"]["mode"], "url");
    let eid = req["params"]["elicitationId"].clone();
    let answer = json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept"}});
    let r = post(addr, &[("Mcp-Session-Id", &sid)], answer).await;
    assert_eq!(r.status, 202);
    let n = next_msg(&mut get).await;
    assert_eq!(n["method"], "notifications/elicitation/complete");
    assert_eq!(n["params"]["elicitationId"], eid);
    let r = tokio::time::timeout(T, call_task).await.unwrap().unwrap();
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        r#"{"action":"accept"}"#
    );
}

#[tokio::test]
async fn server_request_over_legacy_sse_and_websocket() {
    let (addr, _server) = start(ServerConfig::default().with_era(Era::Legacy)).await;
    let mut c = Http::connect(addr).await;
    c.send("GET", "/sse", &[("Accept", "text/event-stream")], "")
        .await;
    assert_eq!(c.head().await.0, 200);
    let (_, endpoint) = c.sse_event().await.unwrap();
    let post_msg = |m: Value| {
        let endpoint = endpoint.clone();
        async move { request(addr, "POST", &endpoint, &[], &m.to_string()).await }
    };
    assert_eq!(post_msg(init_caps_body()).await.status, 202);
    assert_eq!(next_msg(&mut c).await["id"], 1);
    post_msg(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    post_msg(call(2, "sample", json!({"prompt": "p"}))).await;
    let req = next_msg(&mut c).await;
    assert_eq!(req["method"], "sampling/createMessage");
    post_msg(json!({"jsonrpc": "2.0", "id": req["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "t"}, "model": "m"}}))
    .await;
    let r = next_msg(&mut c).await;
    assert_eq!(r["result"]["content"][0]["text"], "sampled: t (model m)");

    let mut ws = Ws::connect(addr).await;
    ws.send(&init_caps_body().to_string()).await;
    assert_eq!(ws.recv().await["id"], 1);
    ws.send(&call(2, "ask", json!({})).to_string()).await;
    let req = ws.recv().await;
    assert_eq!(req["method"], "elicitation/create");
    ws.send(
        &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "cancel"}}).to_string(),
    )
    .await;
    let r = ws.recv().await;
    assert_eq!(r["result"]["content"][0]["text"], r#"{"action":"cancel"}"#);
}

#[tokio::test]
async fn modern_input_required_over_http() {
    let (addr, _server) = start(ServerConfig::default().with_era(Era::Modern)).await;
    let mut body = modern_call(1, "ask", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {}});
    let r = post(
        addr,
        &modern_headers("tools/call", Some("ask")),
        body.clone(),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    let res = r.json()["result"].clone();
    assert_eq!(res["resultType"], "input_required");
    body["id"] = json!(2);
    body["params"]["requestState"] = res["requestState"].clone();
    body["params"]["inputResponses"] =
        json!({"ask": {"action": "accept", "content": {"name": "z"}}});
    let r = post(
        addr,
        &modern_headers("tools/call", Some("ask")),
        body.clone(),
    )
    .await;
    let v = r.json();
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_eq!(
        v["result"]["content"][0]["text"],
        r#"{"action":"accept","content":{"name":"z"}}"#
    );
    body["id"] = json!(3);
    body["params"]["requestState"] = json!("forged.0000000000000000");
    let r = post(addr, &modern_headers("tools/call", Some("ask")), body).await;
    assert_eq!(r.json()["error"]["code"], -32602);
}

#[tokio::test]
async fn list_changes_on_get_stream_and_listen_over_http() {
    let (addr, _server) = start(ServerConfig::default()).await;
    // Session era: a GET stream gets list changes caused by anyone.
    let sid = init(addr).await;
    let mut get = Http::connect(addr).await;
    get.send(
        "GET",
        "/mcp",
        &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid)],
        "",
    )
    .await;
    assert_eq!(get.head().await.0, 200);

    // Stateless era: the listen request's response stream stays open.
    let mut listen = Http::connect(addr).await;
    let mut body = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
                          "params": {"_meta": meta(), "notifications": {"toolsListChanged": true}}});
    let h = modern_headers("subscriptions/listen", None);
    let mut headers = vec![ACCEPT_BOTH];
    headers.extend_from_slice(&h);
    listen
        .send("POST", "/mcp", &headers, &body.to_string())
        .await;
    let (status, hdrs) = listen.head().await;
    assert_eq!(status, 200);
    assert!(hdrs.contains(&("content-type".into(), "text/event-stream".into())));
    let ack = next_msg(&mut listen).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");

    let r = post(
        addr,
        &modern_headers("tools/call", Some("add_tool")),
        modern_call(1, "add_tool", json!({})),
    )
    .await;
    assert_eq!(r.json()["result"]["structuredContent"]["notified"], 2);
    let n = next_msg(&mut listen).await;
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    let n = next_msg(&mut get).await;
    assert_eq!(n["method"], "notifications/tools/list_changed");

    // Closing the listen stream ends the subscription.
    drop(listen);
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let r = post(
            addr,
            &modern_headers("tools/call", Some("add_tool")),
            modern_call(2, "add_tool", json!({})),
        )
        .await;
        let notified = &r.json()["result"]["structuredContent"]["notified"];
        if notified == 1 {
            break;
        }
        assert_eq!(notified, 2, "{r:?}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "the subscription outlived its stream"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A listen without SSE in Accept is refused.
    body["id"] = json!(10);
    let mut headers = vec![("Accept", "application/json")];
    headers.extend_from_slice(&h);
    let r = request(addr, "POST", "/mcp", &headers, &body.to_string()).await;
    assert_eq!(r.status, 406);
}
