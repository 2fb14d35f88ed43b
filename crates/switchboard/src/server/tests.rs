//! The server side against this crate's own client, over an in-memory byte
//! stream, in both eras.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use switchboard_types::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

use super::*;
use crate::transport::Connector;
use crate::transport::framing::{IoConnector, io_connection};
use crate::{Client, EraMode, RequestOptions};

/// Tools `echo` (its text back), `slow` (waits to be released; counts how
/// often it was dropped unfinished), `steps` (three progress steps) and
/// `flood` (progress until dropped, counted like `slow`).
#[derive(Default)]
struct Fixture {
    release: Notify,
    started: Notify,
    dropped: AtomicUsize,
    dropped_signal: Notify,
}

struct DropCount(Arc<Fixture>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
        self.0.dropped_signal.notify_one();
    }
}

struct Handler(Arc<Fixture>);

fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
}

impl ServerHandler for Handler {
    fn info(&self) -> Implementation {
        Implementation::new("fixture", "1.2.3")
    }

    fn capabilities(&self) -> ServerCapabilities {
        serde_json::from_value(json!({"tools": {}, "resources": {}})).unwrap()
    }

    fn instructions(&self) -> Option<String> {
        Some("use echo".to_owned())
    }

    fn list_tools(&self, _: PaginatedRequestParams, _: RequestContext) -> Reply<ListToolsResult> {
        Box::pin(async {
            Ok(ListToolsResult {
                // `flood` is called, never listed.
                tools: vec![tool("echo"), tool("slow"), tool("steps"), tool("ask")],
                ..Default::default()
            })
        })
    }

    fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Reply<RequestOutcome<CallToolResult>> {
        let fixture = self.0.clone();
        Box::pin(async move {
            if params.name == "ask" {
                return ask(params, cx).await;
            }
            let done = match params.name.as_str() {
                "echo" => {
                    let text = params
                        .arguments
                        .as_ref()
                        .and_then(|a| a.get("text"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    Ok(CallToolResult::text(format!(
                        "{text} ({:?}, {})",
                        cx.era,
                        cx.client_info.map(|i| i.name).unwrap_or_default()
                    )))
                }
                "slow" => {
                    let guard = DropCount(fixture.clone());
                    fixture.started.notify_one();
                    fixture.release.notified().await;
                    std::mem::forget(guard);
                    Ok(CallToolResult::text("released"))
                }
                // Progress of 1 KiB without end, until dropped.
                "flood" => {
                    let guard = DropCount(fixture.clone());
                    let filler = "x".repeat(1024);
                    for step in 1.. {
                        cx.progress(f64::from(step), None, Some(&filler))
                            .await
                            .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))?;
                    }
                    std::mem::forget(guard);
                    Ok(CallToolResult::text("never"))
                }
                "steps" => {
                    for step in 1..=3 {
                        cx.progress(f64::from(step), Some(3.0), Some("working"))
                            .await
                            .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))?;
                    }
                    Ok(CallToolResult::text("done"))
                }
                other => Err(ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!("Unknown tool: {other}"),
                )),
            };
            done.map(RequestOutcome::Complete)
        })
    }
}

/// `ask`: one progress step, then asks the client's name — with an
/// `elicitation/create` request in the session era, an `input_required`
/// round in 2026-07-28 — and answers what the client said.
async fn ask(
    params: CallToolRequestParams,
    cx: RequestContext,
) -> Result<RequestOutcome<CallToolResult>, ErrorObject> {
    let form = json!({
        "message": "Your name?",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    });
    let failed = |e: EngineError| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string());
    if params.input_responses.is_none() {
        cx.progress(1.0, None, Some("asking"))
            .await
            .map_err(failed)?;
    }
    let answer = match cx.era {
        Era::Legacy => cx
            .request("elicitation/create", form, Duration::from_secs(10))
            .await
            .map_err(failed)?,
        _ => match params.input_responses {
            None => {
                let requests = json!({"who": {"method": "elicitation/create", "params": form}});
                return Ok(RequestOutcome::InputRequired(
                    switchboard_types::InputRequiredResult {
                        input_requests: Some(serde_json::from_value(requests).unwrap()),
                        request_state: Some("asked".to_owned()),
                        ..Default::default()
                    },
                ));
            }
            Some(responses) => {
                assert_eq!(params.request_state.as_deref(), Some("asked"));
                serde_json::to_value(&responses["who"]).unwrap()
            }
        },
    };
    Ok(RequestOutcome::Complete(CallToolResult::text(
        answer["content"]["name"].as_str().unwrap_or("?").to_owned(),
    )))
}

/// Fills every form with the name "Ada".
struct Ada;

impl crate::ElicitationHandler for Ada {
    fn elicit_form(
        &self,
        _: crate::HandlerContext,
        _: crate::FormRequest,
    ) -> BoxFuture<'static, Result<switchboard_types::ElicitResult, crate::HandlerError>> {
        let mut content = JsonObject::new();
        content.insert("name".into(), json!("Ada"));
        Box::pin(async move { Ok(switchboard_types::ElicitResult::accept(Some(content))) })
    }
}

/// Calls `ask` on `client`, with its progress; what it answered and the
/// progress messages seen.
async fn call_ask(client: &Client) -> (String, Vec<Option<String>>) {
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = steps.clone();
    let options = RequestOptions::default().on_progress(move |p| {
        seen.lock().unwrap().push(p.message);
    });
    let params = CallToolRequestParams {
        name: "ask".into(),
        ..Default::default()
    };
    let result = client.call_tool_with(&params, options).await.unwrap();
    let text = result.content[0].as_text().unwrap().to_owned();
    let steps = steps.lock().unwrap().clone();
    (text, steps)
}

#[tokio::test]
async fn a_handler_asks_a_client_of_each_era() {
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let (_fixture, _served, connector) = served(ServeOptions::default());
        let client = Client::builder()
            .era_mode(mode)
            .elicitation(Ada)
            .connect(connector)
            .await
            .unwrap();
        let (text, steps) = call_ask(&client).await;
        assert_eq!(text, "Ada", "{mode:?}");
        assert_eq!(steps, [Some("asking".to_owned())], "{mode:?}");
    }
}

/// Over Streamable HTTP: progress and the handler's own request travel on
/// the POST's event stream (session era), the `input_required` round in a
/// plain answer (2026-07-28); a call that says nothing first is plain JSON.
#[cfg(all(feature = "http", feature = "http-server"))]
#[tokio::test]
async fn over_http_a_handler_speaks_on_the_requests_stream() {
    let (_server, url) = http_fixture(Arc::new(Fixture::default())).await;
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let client = Client::builder()
            .era_mode(mode)
            .elicitation(Ada)
            .connect(crate::transport::http::HttpConfig::new(url.as_str()))
            .await
            .unwrap();
        let (text, steps) = call_ask(&client).await;
        assert_eq!(text, "Ada", "{mode:?}");
        assert_eq!(steps, [Some("asking".to_owned())], "{mode:?}");
        let result = client.call_tool("echo", args("plain")).await.unwrap();
        assert!(result.content[0].as_text().unwrap().starts_with("plain"));
        client.close().await;
    }
    // A plain call is answered with JSON, not a stream.
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let response = raw_post(&url, body, "echo").await;
    assert!(
        response.contains("content-type: application/json"),
        "{response}"
    );
    let body = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"steps","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}}}"#;
    let response = raw_post(&url, body, "steps").await;
    assert!(
        response.contains("content-type: text/event-stream"),
        "{response}"
    );
    assert_eq!(
        response.matches("notifications/progress").count(),
        3,
        "{response}"
    );
    assert!(response.contains(r#""id":8"#), "{response}");
}

/// A stateless POST is held to the 2026-07-28 rules: headers that repeat
/// the body, a full `_meta`, no session-era methods; refusals carry their
/// HTTP status (400, 404).
#[cfg(all(feature = "http", feature = "http-server"))]
#[tokio::test]
async fn over_http_a_stateless_request_is_held_to_its_revisions_rules() {
    let (_server, url) = http_fixture(Arc::new(Fixture::default())).await;
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    // Mcp-Name says `steps`, the body `echo`.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo",{meta}}}}}"#
    );
    let response = raw_post(&url, &body, "steps").await;
    assert!(response.starts_with("http/1.1 400"), "{response}");
    assert!(response.contains("-32020"), "{response}");
    // No `_meta`.
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}"#;
    let response = raw_post(&url, body, "echo").await;
    assert!(response.starts_with("http/1.1 400"), "{response}");
    assert!(response.contains("-32602"), "{response}");
    // An unknown version: 400 with -32022.
    let body = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let response = raw_post(&url, body, "echo").await;
    assert!(response.starts_with("http/1.1 400"), "{response}");
    assert!(response.contains("-32022"), "{response}");
}

/// Stateless requests share one connection under ids of the server's own:
/// two clients using the same id at once each get their own answer, with
/// their id; a client that goes away cancels its request.
#[cfg(all(feature = "http", feature = "http-server"))]
#[tokio::test]
async fn over_http_stateless_requests_share_a_connection_and_cancel_by_leaving() {
    let fixture = Arc::new(Fixture::default());
    let (_server, url) = http_fixture(fixture.clone()).await;
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let echo = |text: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}},{meta}}}}}"#
        )
    };
    let (first, second) = (echo("first"), echo("second"));
    let (a, b) = tokio::join!(
        raw_post(&url, &first, "echo"),
        raw_post(&url, &second, "echo")
    );
    for (response, text) in [(a, "first"), (b, "second")] {
        assert!(response.contains(r#""id":1"#), "{response}");
        assert!(response.contains(&format!("{text} (Modern")), "{response}");
    }
    // A slow call whose client leaves: its handler is dropped.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"slow",{meta}}}}}"#
    );
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-method: tools/call\r\n\
         mcp-name: slow\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    fixture.started.notified().await;
    drop(stream);
    fixture.dropped_signal.notified().await;
    assert_eq!(fixture.dropped.load(Ordering::SeqCst), 1);
}

/// A connection that sends nothing, or half a head, is closed after the
/// header deadline; past `max_pending_connections` the oldest such one is
/// closed at once for the newcomer; a body that never comes gets 408.
#[cfg(all(feature = "http", feature = "http-server"))]
#[tokio::test]
async fn over_http_silent_and_half_sent_connections_are_closed() {
    use tokio::io::AsyncReadExt;
    let options = http::HttpServeOptions {
        header_timeout: std::time::Duration::from_millis(300),
        body_timeout: std::time::Duration::from_millis(300),
        max_pending_connections: 2,
        ..Default::default()
    };
    let (_server, url) = http_fixture_with(Arc::new(Fixture::default()), options).await;
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let closed = |mut stream: tokio::net::TcpStream| async move {
        let mut rest = Vec::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            stream.read_to_end(&mut rest),
        )
        .await
        .expect("closed by the server")
        .map(|_| String::from_utf8_lossy(&rest).into_owned())
        .unwrap_or_default()
    };
    // The oldest of three waiting connections makes room for the third.
    let first = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut second = tokio::net::TcpStream::connect(address).await.unwrap();
    second
        .write_all(format!("POST /mcp HTTP/1.1\r\nhost: {address}\r\n").as_bytes())
        .await
        .unwrap();
    let third = tokio::net::TcpStream::connect(address).await.unwrap();
    let started = tokio::time::Instant::now();
    assert_eq!(closed(first).await, "");
    assert!(started.elapsed() < std::time::Duration::from_millis(300));
    // The others after the header deadline.
    assert_eq!(closed(second).await, "");
    assert_eq!(closed(third).await, "");
    // A body announced and not sent.
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
                 content-length: 100\r\n\r\n{{"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    assert!(closed(stream).await.starts_with("HTTP/1.1 408"));
}

/// A host that reads nothing of its event stream while the handler keeps
/// talking is cut off after `stream_stall`: its request is cancelled, not
/// buffered for.
#[cfg(all(feature = "http", feature = "http-server"))]
#[tokio::test]
async fn over_http_a_host_that_never_reads_its_stream_is_cut_off() {
    let fixture = Arc::new(Fixture::default());
    let options = http::HttpServeOptions {
        stream_stall: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    let (_server, url) = http_fixture_with(fixture.clone(), options).await;
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}}}"#;
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
                 accept: application/json, text/event-stream\r\nmcp-method: tools/call\r\n\
                 mcp-name: flood\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    // Never read; the handler is dropped once the stream is full.
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        fixture.dropped_signal.notified(),
    )
    .await
    .expect("the flooding request was cancelled");
    assert_eq!(fixture.dropped.load(Ordering::SeqCst), 1);
    drop(stream);
}

/// SEP-1699, as a host whose connection drops: a 2025-11-25 host's slow
/// call becomes a resumable stream (a priming event with an id and
/// `retry:` first); the connection dropping does not cancel the call; a
/// `GET` with `Last-Event-ID` gets the answer that came meanwhile. Another
/// session cannot take the stream up, nor can an id the stream never had.
#[cfg(all(feature = "http", feature = "http-server"))]
#[tokio::test]
async fn over_http_a_dropped_stream_resumes_with_last_event_id() {
    use tokio::io::AsyncReadExt;
    let fixture = Arc::new(Fixture::default());
    let (_server, url) = http_fixture(fixture.clone()).await;
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    // One request on a connection of its own; the connection, and the
    // response head (lowercased) once it came.
    let send = |head: String, body: &'static str| async move {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let request = format!(
            "{head}\r\nhost: {address}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\n\
             mcp-protocol-version: 2025-11-25\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        while !response.windows(4).any(|w| w == b"\r\n\r\n") {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the connection closed before a response head");
            response.extend_from_slice(&chunk[..n]);
        }
        (stream, String::from_utf8_lossy(&response).to_lowercase())
    };
    // Reads until `marker` arrives (or the connection ends).
    let read_until = |mut stream: tokio::net::TcpStream, mut seen: String, marker: &'static str| async move {
        while !seen.contains(marker) {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
        (stream, seen)
    };
    let session = |head: &str| {
        head.lines()
            .find_map(|line| line.strip_prefix("mcp-session-id: "))
            .expect("a session id")
            .trim()
            .to_owned()
    };
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}"#;
    let (_, head) = send("POST /mcp HTTP/1.1".to_owned(), initialize).await;
    let ours = session(&head);
    let (_, head) = send("POST /mcp HTTP/1.1".to_owned(), initialize).await;
    let theirs = session(&head);

    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}"#;
    let (stream, head) = send(
        format!("POST /mcp HTTP/1.1\r\nmcp-session-id: {ours}"),
        call,
    )
    .await;
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    let (stream, seen) = read_until(stream, head, "retry:").await;
    assert!(seen.contains("id: s1-0\nretry: 1000\ndata: \n\n"), "{seen}");
    fixture.started.notified().await;
    // The host's connection drops; the call runs on and is answered.
    drop(stream);
    fixture.release.notify_one();

    // Another session cannot take the stream up.
    let (stream, head) = send(
        format!("GET /mcp HTTP/1.1\r\nmcp-session-id: {theirs}\r\nlast-event-id: s1-0"),
        "",
    )
    .await;
    assert!(head.starts_with("http/1.1 400"), "{head}");
    drop(stream);
    // Nor an event the stream never had.
    let (stream, head) = send(
        format!("GET /mcp HTTP/1.1\r\nmcp-session-id: {ours}\r\nlast-event-id: s1-7"),
        "",
    )
    .await;
    assert!(head.starts_with("http/1.1 400"), "{head}");
    drop(stream);

    let (stream, head) = send(
        format!("GET /mcp HTTP/1.1\r\nmcp-session-id: {ours}\r\nlast-event-id: s1-0"),
        "",
    )
    .await;
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    let (_stream, seen) = read_until(stream, head, "released").await;
    assert!(seen.contains("id: s1-1\n"), "{seen}");
    assert!(seen.contains(r#""id":1,"result""#), "{seen}");
    assert!(seen.contains("released"), "{seen}");
    assert_eq!(
        fixture.dropped.load(Ordering::SeqCst),
        0,
        "the dropped connection did not cancel the call"
    );
}

/// A call on an event stream that says nothing for the request timeout
/// ends with a -32001 error on its stream, and the handler is stopped.
#[cfg(all(feature = "http", feature = "http-server"))]
#[tokio::test]
async fn over_http_a_silent_stream_times_out_with_an_error_answer() {
    let fixture = Arc::new(Fixture::default());
    let options = http::HttpServeOptions {
        request_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let (_server, url) = http_fixture_with(fixture.clone(), options).await;
    let host = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(crate::transport::http::HttpConfig::new(url.as_str()))
        .await
        .unwrap();
    assert_eq!(host.protocol_version().as_str(), "2025-11-25");
    let error = host.call_tool("slow", None).await.unwrap_err();
    // The server's answer, not the client giving up.
    assert!(
        error
            .to_string()
            .contains("longer than the endpoint allows"),
        "{error}"
    );
    tokio::time::timeout(Duration::from_secs(30), async {
        while fixture.dropped.load(Ordering::SeqCst) == 0 {
            fixture.dropped_signal.notified().await;
        }
    })
    .await
    .expect("the handler was stopped");
}

/// At the session cap, a new host's `initialize` ends the least recently
/// used idle session instead of being refused: one host's idle sessions do
/// not lock the others out; a busy session is never ended for it.
#[cfg(all(feature = "http", feature = "http-server"))]
#[tokio::test]
async fn over_http_idle_sessions_make_room_for_a_new_host() {
    let fixture = Arc::new(Fixture::default());
    let options = http::HttpServeOptions::default().max_sessions(2);
    let (_server, url) = http_fixture_with(fixture.clone(), options).await;
    let connect = || async {
        // (A host whose session ended gets 404 and opens another.)
        Client::builder()
            .era_mode(EraMode::Legacy)
            .connect(crate::transport::http::HttpConfig::new(url.as_str()))
            .await
    };
    let _first = connect().await.unwrap();
    let busy = connect().await.unwrap();
    // `busy` has a request in progress; `first` is the idle one.
    let slow = busy.clone();
    let running = tokio::spawn(async move { slow.call_tool("slow", None).await });
    fixture.started.notified().await;
    let newcomer = connect().await.expect("room was made");
    newcomer.call_tool("echo", args("new")).await.unwrap();
    // The busy one ran on.
    fixture.release.notify_one();
    running.await.unwrap().unwrap();
    // Both sessions busy: a third host is refused.
    let (one, two) = (newcomer.clone(), busy.clone());
    let a = tokio::spawn(async move { one.call_tool("slow", None).await });
    fixture.started.notified().await;
    let b = tokio::spawn(async move { two.call_tool("slow", None).await });
    fixture.started.notified().await;
    assert!(connect().await.is_err());
    fixture.release.notify_one();
    fixture.release.notify_one();
    let _ = (a.await, b.await);
}

/// Shutting the server down gracefully: the listener closes at once, a
/// call in progress still gets its answer, and the shutdown ends once it
/// has (the host's open event stream does not hold it up).
#[cfg(all(feature = "http", feature = "http-server"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_graceful_shutdown_answers_calls_in_progress_and_refuses_new_ones() {
    let fixture = Arc::new(Fixture::default());
    let (server, url) = http_fixture(fixture.clone()).await;
    let addr = server.local_addr();
    let host = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(crate::transport::http::HttpConfig::new(url.as_str()))
        .await
        .unwrap();
    let slow = host.clone();
    let running = tokio::spawn(async move { slow.call_tool("slow", None).await });
    fixture.started.notified().await;
    let stopping = tokio::spawn(server.shutdown(Duration::from_secs(60)));
    // The listener goes: a new connection is refused.
    tokio::time::timeout(Duration::from_secs(10), async {
        while tokio::net::TcpStream::connect(addr).await.is_ok() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the listener closed");
    assert!(
        !stopping.is_finished(),
        "the call in progress is waited for"
    );
    fixture.release.notify_one();
    let result = running
        .await
        .unwrap()
        .expect("the call in progress is answered");
    assert_eq!(result.is_error, None, "{result:?}");
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("the shutdown ends once the call is answered, well before its grace")
        .unwrap();
}

/// The fixture served over Streamable HTTP on loopback, and its URL.
#[cfg(all(feature = "http", feature = "http-server"))]
async fn http_fixture(fixture: Arc<Fixture>) -> (http::HttpServer, String) {
    http_fixture_with(fixture, http::HttpServeOptions::default()).await
}

/// [`http_fixture`] with `options`.
#[cfg(all(feature = "http", feature = "http-server"))]
async fn http_fixture_with(
    fixture: Arc<Fixture>,
    options: http::HttpServeOptions,
) -> (http::HttpServer, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = http::serve_http(Arc::new(Handler(fixture)), listener, options).unwrap();
    let url = format!("http://{}/mcp", server.local_addr());
    (server, url)
}

/// One POST with `Accept` taking both, over a plain socket; the whole
/// response, headers lowercased.
#[cfg(all(feature = "http", feature = "http-server"))]
async fn raw_post(url: &str, body: &str, tool: &str) -> String {
    use tokio::io::AsyncReadExt;
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\
         mcp-method: tools/call\r\nmcp-name: {tool}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, rest) = response.split_once("\r\n\r\n").unwrap();
    format!("{}\r\n\r\n{rest}", head.to_lowercase())
}

fn served(
    options: ServeOptions,
) -> (
    Arc<Fixture>,
    Served,
    IoConnector<
        impl tokio::io::AsyncRead + Send + Unpin + 'static,
        impl tokio::io::AsyncWrite + Send + Unpin + 'static,
    >,
) {
    let fixture = Arc::new(Fixture::default());
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_end);
    let served = serve(
        Arc::new(Handler(fixture.clone())),
        io_connection(read, write),
        options,
    );
    let (read, write) = tokio::io::split(client_end);
    (fixture, served, IoConnector::new(read, write))
}

fn args(text: &str) -> Option<JsonObject> {
    Some(json!({"text": text}).as_object().unwrap().clone())
}

#[tokio::test]
async fn a_client_of_each_era_lists_and_calls() {
    for (mode, era) in [
        (EraMode::Legacy, Era::Legacy),
        (EraMode::Auto, Era::Modern),
        (EraMode::Modern, Era::Modern),
    ] {
        let (_fixture, _served, connector) = served(ServeOptions::default());
        let client = Client::builder()
            .era_mode(mode)
            .connect(connector)
            .await
            .unwrap();
        assert_eq!(client.era(), era, "{mode:?}");
        assert_eq!(client.server_info().unwrap().name, "fixture");
        let names: Vec<String> = client
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["echo", "slow", "steps", "ask"]);
        let result = client.call_tool("echo", args("hi")).await.unwrap();
        let text = result.content[0].as_text().unwrap().to_owned();
        assert_eq!(text, format!("hi ({era:?}, switchboard)"), "{mode:?}");
        // What the handler does not implement is an error naming it.
        let error = client.read_resource("file:///nope").await.unwrap_err();
        assert!(error.to_string().contains("file:///nope"), "{error}");
        let error = client.call_tool("missing", None).await.unwrap_err();
        assert!(
            error.to_string().contains("Unknown tool: missing"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_session_era_request_before_initialize_is_refused() {
    let (_fixture, _served, connector) = served(ServeOptions::default());
    let connection = connector.connect().await.unwrap();
    connection
        .sink
        .send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .await
        .unwrap();
    let mut stream = connection.stream;
    let reply = stream
        .recv()
        .await
        .unwrap()
        .unwrap()
        .into_message()
        .unwrap();
    let reply: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(reply["error"]["code"], codes::INVALID_REQUEST);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not initialized"),
        "{reply}"
    );
}

/// Sends one raw line to a fresh server and returns its one-line answer.
async fn exchange(line: &[u8]) -> Value {
    let fixture = Arc::new(Fixture::default());
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let _served = serve(
        Arc::new(Handler(fixture)),
        io_connection(read, write),
        ServeOptions::default(),
    );
    let (read, mut write) = tokio::io::split(client_end);
    write.write_all(line).await.unwrap();
    write.write_all(b"\n").await.unwrap();
    let mut answer = String::new();
    BufReader::new(read).read_line(&mut answer).await.unwrap();
    serde_json::from_str(&answer).unwrap()
}

#[tokio::test]
async fn an_unsupported_stateless_version_names_the_supported_ones() {
    let reply = exchange(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#).await;
    assert_eq!(reply["error"]["code"], codes::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(reply["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(reply["error"]["data"]["requested"], "2099-01-01");
}

#[tokio::test]
async fn a_stateless_list_carries_the_fields_the_schema_requires() {
    let reply = exchange(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#).await;
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete", "{reply}");
    assert_eq!(result["ttlMs"], 0, "{reply}");
    assert_eq!(result["cacheScope"], "private", "{reply}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "fixture",
        "{reply}"
    );
    assert_eq!(result["tools"].as_array().unwrap().len(), 4, "{reply}");
}

#[tokio::test]
async fn a_cancelled_call_stops_its_handler_and_the_limit_bounds_the_rest() {
    let (fixture, _served, connector) = served(ServeOptions::default().max_concurrent_requests(1));
    let client = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(connector)
        .await
        .unwrap();
    let mut call = Box::pin(client.call_tool("slow", None));
    let started = fixture.started.notified();
    tokio::select! {
        _ = &mut call => panic!("slow finished without being released"),
        () = started => {}
    }
    // One request running: the next is refused at once, saying why.
    let error = client.call_tool("echo", args("x")).await.unwrap_err();
    assert!(
        error.to_string().contains("max_concurrent_requests"),
        "{error}"
    );
    // Dropping the call cancels it; the server drops the handler's future.
    drop(call);
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        fixture.dropped_signal.notified(),
    )
    .await
    .expect("the handler was not cancelled");
    assert_eq!(fixture.dropped.load(Ordering::SeqCst), 1);
    // And the slot is free again.
    let result = client.call_tool("echo", args("again")).await.unwrap();
    assert!(result.content[0].as_text().unwrap().starts_with("again"));
}

#[tokio::test]
async fn progress_reaches_the_caller_in_both_eras() {
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let (_fixture, _served, connector) = served(ServeOptions::default());
        let client = Client::builder()
            .era_mode(mode)
            .connect(connector)
            .await
            .unwrap();
        let steps = Arc::new(Mutex::new(Vec::new()));
        let seen = steps.clone();
        let options = RequestOptions::default().on_progress(move |p| {
            seen.lock().unwrap().push((p.progress, p.total, p.message));
        });
        let params = CallToolRequestParams {
            name: "steps".into(),
            ..Default::default()
        };
        let result = client.call_tool_with(&params, options).await.unwrap();
        assert_eq!(result.content[0].as_text().unwrap(), "done");
        let steps = steps.lock().unwrap().clone();
        assert_eq!(
            steps,
            (1..=3)
                .map(|s| (f64::from(s), Some(3.0), Some("working".to_owned())))
                .collect::<Vec<_>>(),
            "{mode:?}"
        );
    }
}

/// A client that sent `notifications/initialized` before the server's own
/// side of `serve` was done setting up (its thread preempted right after
/// the connection started being read, as on a loaded machine) is still
/// initialized: nothing the client sends is read before the server is
/// listening for it. (The gateway's `list_changed` forwarder waits on
/// this; a lost `initialized` left a host hearing of no change ever.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_initialized_while_the_server_sets_up_is_initialized() {
    #[derive(Default)]
    struct Slow(Mutex<Option<Peer>>);
    impl ServerHandler for Slow {
        fn info(&self) -> Implementation {
            Implementation::new("slow", "1")
        }
        fn capabilities(&self) -> ServerCapabilities {
            ServerCapabilities::default()
        }
        fn connected(&self, peer: &Peer) {
            *self.0.lock().unwrap() = Some(peer.clone());
            // The thread that called `serve` loses the CPU here.
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }
    let (server_end, mut client) = crate::transport::memory::pair();
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "early", "version": "1"}}})
            .to_string(),
        )
        .await
        .unwrap();
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .await
        .unwrap();
    let handler = Arc::new(Slow::default());
    let served = serve(
        handler.clone(),
        server_end.into_connection(),
        ServeOptions::default(),
    );
    let answer: serde_json::Value = serde_json::from_slice(&client.recv().await.unwrap()).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    let peer = handler.0.lock().unwrap().clone().unwrap();
    let initialized = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        peer.session_initialized(),
    )
    .await;
    assert_eq!(initialized, Ok(true), "the client's initialized was lost");
    drop(served);
}

#[tokio::test]
async fn closed_says_when_the_client_goes() {
    let (_fixture, served, connector) = served(ServeOptions::default());
    let client = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(connector)
        .await
        .unwrap();
    client.close().await;
    drop(client);
    let reason = served.closed().await;
    assert!(
        matches!(
            &*reason,
            TransportError::Closed { .. } | TransportError::ClosedByClient
        ),
        "{reason:?}"
    );
}

/// A handler of the skills extension when `declare`; its own listing.
struct Skilled {
    declare: bool,
}

impl ServerHandler for Skilled {
    fn info(&self) -> Implementation {
        Implementation::new("skilled", "1")
    }

    fn capabilities(&self) -> ServerCapabilities {
        let mut caps = json!({"resources": {}});
        if self.declare {
            caps["extensions"] = json!({ SKILLS_EXTENSION: {} });
        }
        serde_json::from_value(caps).unwrap()
    }

    fn list_skills(&self, _: PaginatedRequestParams, _: RequestContext) -> Reply<ListSkillsResult> {
        let entry = serde_json::from_value(json!({
            "uri": "skill://a/SKILL.md",
            "frontmatter": {"name": "a", "description": "A"},
            "resources": "dynamic",
        }))
        .unwrap();
        Box::pin(async move {
            Ok(ListSkillsResult {
                skills: vec![entry],
                ..Default::default()
            })
        })
    }
}

#[tokio::test]
async fn skills_methods_are_answered_only_for_a_handler_that_declares_the_extension() {
    for mode in [EraMode::Legacy, EraMode::Modern] {
        for declare in [true, false] {
            let (client_end, server_end) = tokio::io::duplex(1 << 16);
            let (read, write) = tokio::io::split(server_end);
            let _served = serve(
                Arc::new(Skilled { declare }),
                io_connection(read, write),
                ServeOptions::default(),
            );
            let (read, write) = tokio::io::split(client_end);
            let client = Client::builder()
                .era_mode(mode)
                .connect(IoConnector::new(read, write))
                .await
                .unwrap();
            assert_eq!(client.offers_skills(), declare, "{mode:?}");
            // Past the client's own check: what the server answers.
            let raw = client
                .request_raw("skills/list", Some(json!({})), RequestOptions::default())
                .await;
            if declare {
                assert!(
                    raw.unwrap().get().contains("skill://a/SKILL.md"),
                    "{mode:?}"
                );
                let unknown = client.get_skill("skill://b/SKILL.md").await.unwrap_err();
                assert_eq!(unknown.code(), Some(codes::INVALID_PARAMS), "{mode:?}");
            } else {
                let error = raw.unwrap_err();
                assert_eq!(
                    error.code(),
                    Some(codes::METHOD_NOT_FOUND),
                    "{mode:?}: {error}"
                );
            }
            client.close().await;
        }
    }
}
