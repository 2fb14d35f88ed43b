//! The client against the test server over real loopback HTTP: detection of
//! era and transport from a URL alone, SSE answers and their resumption,
//! session loss, and the GET stream.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::HttpServer;

use serde_json::{Value, json};
use switchboard::transport::http::{HttpConfig, HttpTransport};
use switchboard::transport::ws::WebSocketConfig;
use switchboard::types::{CallToolRequestParams, Era};
use switchboard::{Client, Error, RequestOptions};

fn args(value: Value) -> Option<serde_json::Map<String, Value>> {
    value.as_object().cloned()
}

async fn echo(client: &Client) -> String {
    let result = client
        .call_tool("echo", args(json!({"text": "over http"})))
        .await
        .unwrap();
    serde_json::to_value(&result).unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_url_alone_finds_the_era_and_transport() {
    let cases: [(&[&str], &str, Era, &str); 7] = [
        (&["--era", "dual"], "/mcp", Era::Modern, "streamable-http"),
        (&["--era", "modern"], "/mcp", Era::Modern, "streamable-http"),
        (&["--era", "legacy"], "/mcp", Era::Legacy, "streamable-http"),
        (
            &["--era", "dual", "--http-response", "sse"],
            "/mcp",
            Era::Modern,
            "streamable-http",
        ),
        (
            &["--era", "legacy", "--http-response", "sse"],
            "/mcp",
            Era::Legacy,
            "streamable-http",
        ),
        // A server that only has the 2024-11-05 transport.
        (
            &["--era", "legacy", "--transports", "sse"],
            "/sse",
            Era::Legacy,
            "sse",
        ),
        (
            &["--era", "legacy", "--transports", "sse,ws"],
            "/sse",
            Era::Legacy,
            "sse",
        ),
    ];
    for (server_args, path, era, transport) in cases {
        let server = HttpServer::start(server_args);
        let url = server.url(path);
        let client = Client::connect(HttpConfig::new(&url))
            .await
            .unwrap_or_else(|e| panic!("{server_args:?} {path}: {e}"));
        assert_eq!(client.era(), era, "{server_args:?} {path}");
        assert_eq!(
            client.session().transport,
            transport,
            "{server_args:?} {path}"
        );
        assert!(client.list_tools().await.unwrap().len() >= 13);
        assert_eq!(echo(&client).await, "over http");
        client.close().await;
    }
}

#[tokio::test]
async fn websocket_urls_work() {
    let server = HttpServer::start(&["--era", "dual"]);
    let url = server.url("/ws").replace("http://", "ws://");
    let client = Client::connect(WebSocketConfig::new(url)).await.unwrap();
    assert_eq!(client.session().transport, "websocket");
    assert_eq!(echo(&client).await, "over http");
}

#[tokio::test]
async fn progress_arrives_over_sse_answers() {
    for era in ["legacy", "modern"] {
        let server = HttpServer::start(&["--era", era, "--http-response", "sse"]);
        let client = Client::connect(HttpConfig::new(server.url("/mcp")))
            .await
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let params = CallToolRequestParams {
            name: "progress".into(),
            arguments: args(json!({"steps": 3, "interval_ms": 5})),
            ..Default::default()
        };
        let options =
            RequestOptions::default().on_progress(move |p| sink.lock().unwrap().push(p.progress));
        client.call_tool_with(&params, options).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0], "{era}");
    }
}

#[tokio::test]
async fn a_cut_response_stream_is_resumed_with_last_event_id() {
    // The conformance scenario `sse-retry`: the server closes the answer's
    // stream after an event with an id; the client resumes it with GET and
    // Last-Event-ID and gets the rest, including the response.
    let server = HttpServer::start(&[
        "--era",
        "legacy",
        "--http-response",
        "sse",
        "--fault",
        "cut-stream",
    ]);
    let client = Client::connect(HttpConfig::new(server.url("/mcp")))
        .await
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let params = CallToolRequestParams {
        name: "progress".into(),
        arguments: args(json!({"steps": 3, "interval_ms": 20})),
        ..Default::default()
    };
    let options = RequestOptions::timeout(Duration::from_secs(10))
        .on_progress(move |p| sink.lock().unwrap().push(p.progress));
    let result = client.call_tool_with(&params, options).await.unwrap();
    assert_ne!(result.is_error, Some(true));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![1.0, 2.0, 3.0],
        "every event once, none lost at the cut"
    );
}

#[tokio::test]
async fn session_loss_mid_flight_fails_the_lost_call_and_recovers() {
    let record = std::env::temp_dir().join(format!(
        "switchboard-http-session-loss-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&record);
    let server = HttpServer::start(&[
        "--era",
        "legacy",
        "--http-response",
        "sse",
        "--fault",
        "session-loss",
        "--record",
        record.to_str().unwrap(),
    ]);
    let client = Client::connect(HttpConfig::new(server.url("/mcp")))
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Legacy);
    // A slow call is in flight when the server forgets the session.
    let slow = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("slow", args(json!({"ms": 3000}))).await })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|m| m["params"]["name"] == "slow")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never received the slow call"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = std::fs::remove_file(&record);
    client.call_tool("forget_session", None).await.unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(5), slow)
        .await
        .expect("the lost call must fail promptly, not wait for a timeout")
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(lost, Error::ResponseLost { .. }),
        "typed, not replayed: {lost}"
    );
    // The next call meets a 404, the session is re-established, and it works.
    assert_eq!(echo(&client).await, "over http");
    assert_eq!(echo(&client).await, "over http");
}

#[tokio::test]
async fn a_missing_get_stream_is_quiet() {
    let server = HttpServer::start(&["--era", "legacy", "--fault", "no-get-stream"]);
    let events = Arc::new(Mutex::new(Vec::new()));
    let subscriber = Capture(events.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let client = Client::connect(HttpConfig::new(server.url("/mcp")))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "over http");
    // The client has met the refused GET stream (its debug line) before
    // the check: a warning about it would be there by then.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !events
        .lock()
        .unwrap()
        .iter()
        .any(|(_, e)| e.contains("server offers no GET stream"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the client never tried the GET stream: {:?}",
            events.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(echo(&client).await, "over http");
    let warnings: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|(level, _)| *level <= tracing::Level::WARN)
        .map(|(_, e)| e.clone())
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[tokio::test]
async fn required_headers_and_auth() {
    let server = HttpServer::start(&["--era", "dual", "--require-header", "X-Api-Key: sesame"]);
    let error = Client::connect(HttpConfig::new(server.url("/mcp")))
        .await
        .unwrap_err();
    assert!(error.is_auth_required(), "{error}");
    let client = Client::connect(HttpConfig::new(server.url("/mcp")).header("X-Api-Key", "sesame"))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "over http");
    // Pinned to Streamable HTTP, a legacy-only server is an error, not a fallback.
    let legacy_only = HttpServer::start(&["--era", "legacy", "--transports", "sse"]);
    let error = Client::connect(
        HttpConfig::new(legacy_only.url("/mcp")).transport(HttpTransport::StreamableHttp),
    )
    .await
    .unwrap_err();
    assert_eq!(
        match &error {
            Error::Transport { source, .. } => source.http_status(),
            _ => None,
        },
        Some(404),
        "{error}"
    );
}

/// Records WARN and ERROR events on this thread.
/// Every event at `debug` and above, with its level.
struct Capture(Arc<Mutex<Vec<(tracing::Level, String)>>>);

impl tracing::Subscriber for Capture {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::DEBUG
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        self.0.lock().unwrap().push((
            *event.metadata().level(),
            format!("{} {:?}", event.metadata().target(), event),
        ));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn verdicts_are_remembered_seeded_and_rechecked() {
    use switchboard::transport::http::{
        HttpVerdict, forget_verdict, remember_verdict, remembered_verdicts,
    };
    // Detection on a legacy-SSE server is remembered for its URL...
    let sse_only = HttpServer::start(&["--era", "legacy", "--transports", "sse"]);
    let url = sse_only.url("/sse");
    let client = Client::connect(HttpConfig::new(&url)).await.unwrap();
    assert_eq!(client.session().transport, "sse");
    let verdict = HttpVerdict::new(Era::Legacy, HttpTransport::Sse);
    assert!(remembered_verdicts().contains(&(url.clone(), verdict)));
    // ...and used the next time: straight to SSE, no probe.
    let again = Client::connect(HttpConfig::new(&url)).await.unwrap();
    assert_eq!(again.session().transport, "sse");
    assert!(again.session().negotiation_time <= client.session().negotiation_time * 2);

    // A stale (seeded) verdict is rechecked and replaced.
    let modern = HttpServer::start(&["--era", "modern", "--transports", "streamable"]);
    let url = modern.url("/mcp");
    remember_verdict(&url, verdict);
    let client = Client::connect(HttpConfig::new(&url)).await.unwrap();
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.session().transport, "streamable-http");
    let updated = remembered_verdicts()
        .into_iter()
        .find(|(u, _)| *u == url)
        .map(|(_, v)| v);
    assert_eq!(
        updated,
        Some(HttpVerdict::new(Era::Modern, HttpTransport::StreamableHttp))
    );
    forget_verdict(&url);
    assert!(!remembered_verdicts().iter().any(|(u, _)| *u == url));
}

#[tokio::test]
async fn a_timed_out_call_is_cancelled_on_the_server() {
    let record = std::env::temp_dir().join(format!(
        "switchboard-http-cancel-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&record);
    let server = HttpServer::start(&[
        "--era",
        "legacy",
        "--http-response",
        "sse",
        "--record",
        record.to_str().unwrap(),
    ]);
    let client = Client::connect(HttpConfig::new(server.url("/mcp")))
        .await
        .unwrap();
    let params = CallToolRequestParams {
        name: "hang".into(),
        ..Default::default()
    };
    let error = client
        .call_tool_with(&params, RequestOptions::timeout(Duration::from_millis(300)))
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    loop {
        let seen: Vec<Value> = std::fs::read_to_string(&record)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let hang = seen
            .iter()
            .find(|m| m["params"]["name"] == "hang")
            .map(|m| m["id"].clone());
        let cancelled = seen.iter().any(|m| {
            m["method"] == "notifications/cancelled"
                && Some(&m["params"]["requestId"]) == hang.as_ref()
        });
        if cancelled {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no cancel recorded: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(echo(&client).await, "over http");
    let _ = std::fs::remove_file(&record);
}
