//! Engine tests over an in-memory pair, with a scripted peer.

use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::transport::Incoming;
use crate::transport::memory::{self, MemoryEnd};
use switchboard_types::codes;
use switchboard_types::jsonrpc::RequestId;

fn start(config: EngineConfig) -> (Engine, MemoryEnd) {
    start_with(config, None)
}

fn start_with(
    config: EngineConfig,
    handler: Option<Arc<dyn RequestHandler>>,
) -> (Engine, MemoryEnd) {
    let (client, server) = memory::pair();
    let engine = Engine::start("test".into(), client.into_connection(), config, handler);
    (engine, server)
}

async fn next_json(peer: &mut MemoryEnd) -> Value {
    let bytes = tokio::time::timeout(Duration::from_secs(5), peer.recv())
        .await
        .expect("peer waited too long for a message")
        .expect("client side closed");
    serde_json::from_slice(&bytes).expect("client sent valid JSON")
}

async fn reply(peer: &MemoryEnd, id: &Value, result: Value) {
    peer.send(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string())
        .await
        .unwrap();
}

fn raw(value: Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(&value).unwrap()
}

#[tokio::test]
async fn routes_out_of_order_responses_and_never_reuses_ids() {
    let (engine, mut peer) = start(EngineConfig::default());
    let engine = Arc::new(engine);
    let mut calls = Vec::new();
    for n in 0..3 {
        let engine = engine.clone();
        calls.push(tokio::spawn(async move {
            let id = engine.allocate_id();
            let params = raw(json!({"n": n}));
            engine
                .request(id, "echo", Some(&params), RequestOptions::default())
                .await
        }));
    }
    let mut received = Vec::new();
    for _ in 0..3 {
        received.push(next_json(&mut peer).await);
    }
    let ids: HashSet<i64> = received.iter().map(|m| m["id"].as_i64().unwrap()).collect();
    assert_eq!(ids.len(), 3, "ids must be unique: {received:?}");
    // Answer in reverse order; each caller must get its own params back.
    for message in received.iter().rev() {
        reply(&peer, &message["id"], message["params"].clone()).await;
    }
    let mut results = Vec::new();
    for (n, call) in calls.into_iter().enumerate() {
        let result = call.await.unwrap().unwrap();
        let value: Value = serde_json::from_str(result.get()).unwrap();
        assert_eq!(value, json!({"n": n}));
        results.push(value);
    }
    assert!(engine.allocate_id() > *ids.iter().max().unwrap());
}

use std::collections::HashSet;

#[tokio::test]
async fn answers_ping_and_rejects_unhandled_requests() {
    let (_engine, mut peer) = start(EngineConfig::default());
    peer.send(r#"{"jsonrpc":"2.0","id":"p1","method":"ping"}"#)
        .await
        .unwrap();
    let pong = next_json(&mut peer).await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": "p1", "result": {}}));
    peer.send(r#"{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{}}"#)
        .await
        .unwrap();
    let answer = next_json(&mut peer).await;
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["error"]["code"], codes::METHOD_NOT_FOUND);
}

struct Roots;

impl RequestHandler for Roots {
    fn handle(
        &self,
        request: ServerRequest,
    ) -> Option<crate::transport::BoxFuture<'static, HandlerResult>> {
        (request.method == "roots/list").then(|| {
            Box::pin(async { Ok(raw(json!({"roots": [{"uri": "file:///tmp"}]}))) })
                as crate::transport::BoxFuture<'static, HandlerResult>
        })
    }
}

#[tokio::test]
async fn server_requests_go_to_the_handler() {
    let (_engine, mut peer) = start_with(EngineConfig::default(), Some(Arc::new(Roots)));
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#)
        .await
        .unwrap();
    let answer = next_json(&mut peer).await;
    assert_eq!(answer["result"]["roots"][0]["uri"], "file:///tmp");
}

#[tokio::test]
async fn notifications_arrive_in_order() {
    let (engine, peer) = start(EngineConfig::default());
    let mut notifications = engine.subscribe();
    for n in 0..50 {
        peer.send(
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}})
                .to_string(),
        )
        .await
        .unwrap();
    }
    for n in 0..50 {
        let notification = notifications.recv().await.unwrap();
        assert_eq!(notification.method, "notifications/message");
        let params: Value = serde_json::from_str(notification.params.unwrap().get()).unwrap();
        assert_eq!(params["n"], n);
    }
}

#[tokio::test(start_paused = true)]
async fn timeout_cancels_and_late_response_is_dropped() {
    let (engine, mut peer) = start(EngineConfig::default());
    let id = engine.allocate_id();
    let call = engine.request(
        id,
        "tools/call",
        None,
        RequestOptions::timeout(Duration::from_secs(5)),
    );
    let (outcome, request) = tokio::join!(call, next_json(&mut peer));
    let error = outcome.unwrap_err();
    assert!(error.is_timeout(), "{error}");
    assert!(error.to_string().contains("`tools/call`"), "{error}");
    let cancel = next_json(&mut peer).await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    // The late answer is dropped without harm; the next request works.
    reply(&peer, &request["id"], json!({"late": true})).await;
    let id2 = engine.allocate_id();
    let (second, request2) = tokio::join!(
        engine.request(id2, "ping", None, RequestOptions::default()),
        async {
            let request2 = next_json(&mut peer).await;
            reply(&peer, &request2["id"], json!({})).await;
            request2
        }
    );
    assert_ne!(request2["id"], request["id"]);
    assert_eq!(second.unwrap().get(), "{}");
}

#[tokio::test]
async fn dropping_a_request_sends_cancelled_but_not_for_initialize() {
    let (engine, mut peer) = start(EngineConfig::default());
    {
        let id = engine.allocate_id();
        let call = engine.request(id, "initialize", None, RequestOptions::default());
        tokio::select! {
            _ = call => unreachable!("no answer was sent"),
            request = next_json(&mut peer) => assert_eq!(request["method"], "initialize"),
        }
    }
    {
        let id = engine.allocate_id();
        let call = engine.request(id, "tools/call", None, RequestOptions::default());
        tokio::select! {
            _ = call => unreachable!("no answer was sent"),
            request = next_json(&mut peer) => assert_eq!(request["method"], "tools/call"),
        }
    }
    let cancel = next_json(&mut peer).await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(
        cancel["params"]["requestId"], 2,
        "only the tools/call is cancelled"
    );
}

#[tokio::test]
async fn connection_death_fails_pending_and_later_requests_with_the_reason() {
    let (engine, mut peer) = start(EngineConfig::default());
    let engine = Arc::new(engine);
    let pending = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let id = engine.allocate_id();
            engine
                .request(id, "tools/list", None, RequestOptions::default())
                .await
        })
    };
    next_json(&mut peer).await;
    drop(peer);
    let error = tokio::time::timeout(Duration::from_secs(1), pending)
        .await
        .expect("pending request must fail at once")
        .unwrap()
        .unwrap_err();
    assert!(error.is_disconnected(), "{error}");
    let id = engine.allocate_id();
    let later = engine
        .request(id, "tools/list", None, RequestOptions::default())
        .await
        .unwrap_err();
    assert!(later.is_disconnected());
    let (EngineError::Disconnected { reason: a, .. }, EngineError::Disconnected { reason: b, .. }) =
        (&error, &later)
    else {
        unreachable!()
    };
    assert!(Arc::ptr_eq(a, b), "every caller gets the same reason");
}

#[tokio::test(start_paused = true)]
async fn progress_resets_the_timeout_up_to_the_maximum() {
    let config = EngineConfig {
        max_request_time: Duration::from_secs(30),
        ..EngineConfig::default()
    };
    let (engine, mut peer) = start(config);
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let options = RequestOptions::timeout(Duration::from_secs(10)).on_progress(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let id = engine.allocate_id();
    let started = Instant::now();
    let call = engine.request(id, "tools/call", None, options);
    let server = async {
        let request = next_json(&mut peer).await;
        // Progress every 8 s keeps the 10 s timeout alive, but never past 30 s.
        for step in 0..10 {
            tokio::time::sleep(Duration::from_secs(8)).await;
            let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": request["id"], "progress": step}});
            if peer.send(note.to_string()).await.is_err() {
                break;
            }
        }
    };
    let outcome = tokio::select! {
        outcome = call => outcome,
        () = server => unreachable!("the call must end first"),
    };
    let error = outcome.unwrap_err();
    assert!(error.is_timeout());
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(30) && elapsed < Duration::from_secs(31),
        "{elapsed:?}"
    );
    assert!(seen.load(Ordering::SeqCst) >= 3);
}

#[tokio::test]
async fn garbage_is_skipped_and_counted() {
    let (engine, mut peer) = start(EngineConfig::default());
    let id = engine.allocate_id();
    let (outcome, ()) = tokio::join!(
        engine.request(id, "tools/list", None, RequestOptions::default()),
        async {
            let request = next_json(&mut peer).await;
            peer.send("this is not json").await.unwrap();
            peer.send(r#"{"jsonrpc":"1.0","id":1,"result":{}}"#)
                .await
                .unwrap();
            reply(&peer, &request["id"], json!({"tools": []})).await;
        }
    );
    assert!(outcome.is_ok());
    assert_eq!(engine.skipped_lines(), 2);
}

#[tokio::test]
async fn in_flight_requests_are_bounded() {
    let config = EngineConfig {
        max_in_flight: 1,
        ..EngineConfig::default()
    };
    let (engine, mut peer) = start(config);
    let engine = Arc::new(engine);
    let first = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let id = engine.allocate_id();
            engine
                .request(id, "a", None, RequestOptions::default())
                .await
        })
    };
    let a = next_json(&mut peer).await;
    let second = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let id = engine.allocate_id();
            engine
                .request(id, "b", None, RequestOptions::default())
                .await
        })
    };
    // The second request must not be written while the first is in flight.
    assert!(
        tokio::time::timeout(Duration::from_millis(100), peer.recv())
            .await
            .is_err()
    );
    reply(&peer, &a["id"], json!({})).await;
    let b = next_json(&mut peer).await;
    assert_eq!(b["method"], "b");
    reply(&peer, &b["id"], json!({})).await;
    first.await.unwrap().unwrap();
    second.await.unwrap().unwrap();
}

#[tokio::test]
async fn server_error_is_typed_and_names_the_server() {
    let (engine, mut peer) = start(EngineConfig::default());
    let id = engine.allocate_id();
    let (outcome, ()) = tokio::join!(
        engine.request(id, "tools/call", None, RequestOptions::default()),
        async {
            let request = next_json(&mut peer).await;
            peer.send(
                json!({"jsonrpc": "2.0", "id": request["id"],
                "error": {"code": -32602, "message": "Unknown tool: nope"}})
                .to_string(),
            )
            .await
            .unwrap();
        }
    );
    let error = outcome.unwrap_err();
    assert_eq!(error.code(), Some(-32602));
    assert_eq!(Some(error.server()), Some("test"));
    assert!(error.to_string().contains("Unknown tool: nope"));
}

#[tokio::test]
async fn batches_are_routed_element_by_element() {
    // JSON-RPC batches exist on 2025-03-26 connections.
    let (engine, mut peer) = start(EngineConfig::default());
    let engine = Arc::new(engine);
    let mut notifications = engine.subscribe();
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let id = engine.allocate_id();
                engine
                    .request(id, "tools/list", None, RequestOptions::default())
                    .await
            })
        })
        .collect();
    let a = next_json(&mut peer).await;
    let b = next_json(&mut peer).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": b["id"], "result": {"which": "b"}},
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        {"jsonrpc": "2.0", "id": a["id"], "result": {"which": "a"}},
        {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"},
    ]);
    peer.send(batch.to_string()).await.unwrap();
    let mut answers = Vec::new();
    for call in calls {
        let result = call.await.unwrap().unwrap();
        answers.push(serde_json::from_str::<Value>(result.get()).unwrap()["which"].clone());
    }
    assert_eq!(answers, [json!("a"), json!("b")]);
    assert_eq!(
        notifications.recv().await.unwrap().method,
        "notifications/tools/list_changed"
    );
    let pong = next_json(&mut peer).await;
    assert_eq!(pong["id"], "srv-1");
}

/// A handler that takes `delay` to answer (a user filling in a form).
struct SlowUser {
    delay: Duration,
}

impl RequestHandler for SlowUser {
    fn handle(
        &self,
        _: ServerRequest,
    ) -> Option<crate::transport::BoxFuture<'static, HandlerResult>> {
        let delay = self.delay;
        Some(Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(raw(json!({"action": "decline"})))
        }))
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_waits_while_our_handler_answers_the_server() {
    let config = EngineConfig {
        max_request_time: Duration::from_secs(60),
        ..EngineConfig::default()
    };
    let handler = Arc::new(SlowUser {
        delay: Duration::from_secs(25),
    });
    let (engine, mut peer) = start_with(config, Some(handler));
    let id = engine.allocate_id();
    let call = engine.request(
        id,
        "tools/call",
        None,
        RequestOptions::timeout(Duration::from_secs(10)),
    );
    let server = async {
        let request = next_json(&mut peer).await;
        // The server asks the user (25 s) before it can answer; then it
        // takes 5 s more — within 10 s of the user's answer.
        peer.send(r#"{"jsonrpc":"2.0","id":"ask-1","method":"elicitation/create"}"#)
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&peer.recv().await.unwrap()).unwrap();
        assert_eq!(answer["id"], "ask-1");
        tokio::time::sleep(Duration::from_secs(5)).await;
        reply(&peer, &request["id"], json!({"ok": true})).await;
        peer
    };
    let started = Instant::now();
    let (outcome, mut peer) = tokio::join!(call, server);
    assert!(outcome.is_ok(), "{outcome:?}");
    assert!(started.elapsed() >= Duration::from_secs(30));

    // Once the handler is done, the usual timeout applies again.
    let id = engine.allocate_id();
    let call = engine.request(
        id,
        "tools/call",
        None,
        RequestOptions::timeout(Duration::from_secs(10)),
    );
    let started = Instant::now();
    let (outcome, _) = tokio::join!(call, next_json(&mut peer));
    assert!(outcome.unwrap_err().is_timeout());
    assert!(started.elapsed() < Duration::from_secs(11));
}

#[tokio::test]
async fn a_transport_report_fails_its_request_at_once_as_what_it_says() {
    let (engine, mut peer) = start(EngineConfig::default());
    let engine = &engine;
    let ask = |n: i64| {
        let id = engine.allocate_id();
        let params = raw(json!({"n": n}));
        async move {
            engine
                .request(id, "tools/call", Some(&params), RequestOptions::default())
                .await
        }
    };
    let (lost, ()) = tokio::join!(ask(1), async {
        let request = next_json(&mut peer).await;
        peer.lose_response(
            RequestId::Number(request["id"].as_i64().unwrap()),
            "stream broke",
        )
        .await
        .unwrap();
    });
    match lost.unwrap_err() {
        EngineError::ResponseLost { method, reason, .. } => {
            assert_eq!(method, "tools/call");
            assert_eq!(reason, "stream broke");
        }
        other => panic!("not a lost response: {other}"),
    }
    let (unusable, ()) = tokio::join!(ask(2), async {
        let request = next_json(&mut peer).await;
        peer.report(Incoming::Violation {
            id: RequestId::Number(request["id"].as_i64().unwrap()),
            why: "the body is not JSON".into(),
        })
        .await
        .unwrap();
    });
    match unusable.unwrap_err() {
        EngineError::ProtocolViolation { what, .. } => assert_eq!(what, "the body is not JSON"),
        other => panic!("not a protocol violation: {other}"),
    }
    // Nothing reached a subscriber: a report is no notification.
    let mut notices = engine.subscribe_marking_gaps();
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#)
        .await
        .unwrap();
    let notice = notices.recv().await.unwrap();
    assert!(
        matches!(&notice, Notice::Notification(n) if n.method == "notifications/message"),
        "{notice:?}"
    );
}

/// A sink that answers every request with the send, as an HTTP POST
/// answered with JSON does: `body(id)` is what comes back.
struct InlineSink {
    body: fn(i64) -> Vec<u8>,
}

impl MessageSink for InlineSink {
    fn send<'a>(
        &'a self,
        _: &'a [u8],
    ) -> crate::transport::BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async { Ok(()) })
    }

    fn send_request<'a>(
        &'a self,
        message: &'a [u8],
    ) -> crate::transport::BoxFuture<'a, Result<crate::transport::Sent, TransportError>> {
        let id = serde_json::from_slice::<Value>(message).unwrap()["id"]
            .as_i64()
            .unwrap();
        let body = (self.body)(id);
        Box::pin(async move { Ok(crate::transport::Sent::Answer(body)) })
    }

    fn close(&self) -> crate::transport::BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

#[tokio::test]
async fn an_answer_given_back_with_the_send_is_routed_there_or_by_the_reader() {
    let ask = |body: fn(i64) -> Vec<u8>| async move {
        let (client, _server) = memory::pair();
        let stream = client.into_connection().stream;
        let connection = Connection::new(Arc::new(InlineSink { body }), stream);
        let engine = Engine::start("test".into(), connection, EngineConfig::default(), None);
        let id = engine.allocate_id();
        let params = raw(json!({"n": 1}));
        let request = engine.request(id, "tools/call", Some(&params), RequestOptions::default());
        tokio::time::timeout(Duration::from_secs(5), request)
            .await
            .expect("answered at once, not left to time out")
    };
    // Simply the response: taken on the caller's task.
    let plain = ask(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"n":1}}}}"#).into())
        .await
        .unwrap();
    assert_eq!(plain.get(), r#"{"n":1}"#);
    // A batch holding it: the reader routes it.
    let batch = ask(|id| format!(r#"[{{"jsonrpc":"2.0","id":{id},"result":{{"n":2}}}}]"#).into())
        .await
        .unwrap();
    assert_eq!(batch.get(), r#"{"n":2}"#);
    // An error response: the server's error, as ever.
    let error = ask(|id| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"no"}}}}"#).into()
    })
    .await
    .unwrap_err();
    assert!(matches!(error, EngineError::Server { .. }), "{error}");
    // Not JSON-RPC: the reader fails the request it answered, at once.
    let garbage = ask(|_| b"<html>oops</html>".to_vec()).await.unwrap_err();
    assert!(
        matches!(garbage, EngineError::ProtocolViolation { .. }),
        "{garbage}"
    );
}

/// A request's log callback hears every `notifications/message` read
/// before its answer, in order, by the time the request completes — not
/// later, on another task's time — and none after it.
#[tokio::test]
async fn a_requests_log_lines_are_heard_before_it_completes() {
    let (engine, mut peer) = start(EngineConfig::default());
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    let options = RequestOptions::default().on_log(move |params| {
        let line: Value = serde_json::from_str(params.map_or("null", |p| p.get())).unwrap();
        sink.lock().unwrap().push(line["data"].clone());
    });
    let id = engine.allocate_id();
    let request = engine.request(id, "tools/call", None, options);
    let script = async {
        let call = next_json(&mut peer).await;
        for n in 0..3 {
            let line = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": n}});
            peer.send(line.to_string()).await.unwrap();
        }
        reply(&peer, &call["id"], json!({})).await;
    };
    let (answer, ()) = tokio::join!(request, script);
    answer.unwrap();
    assert_eq!(*heard.lock().unwrap(), [json!(0), json!(1), json!(2)]);
    // After the request: no longer heard.
    let line = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": 3}});
    peer.send(line.to_string()).await.unwrap();
    let ping = engine.allocate_id();
    let ping = engine.request(ping, "ping", None, RequestOptions::default());
    let answer_ping = async {
        let request = next_json(&mut peer).await;
        reply(&peer, &request["id"], json!({})).await;
    };
    let (pong, ()) = tokio::join!(ping, answer_ping);
    pong.unwrap();
    assert_eq!(heard.lock().unwrap().len(), 3);
}
