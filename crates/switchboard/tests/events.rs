//! The ordered event stream over an in-memory pair: order under load, gaps
//! reported where they happen, the end of the connection.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard::transport::memory::{self, MemoryEnd};
use switchboard::{Client, EraMode, Event, RequestOptions};

async fn recv(peer: &mut MemoryEnd) -> Value {
    serde_json::from_slice(&peer.recv().await.expect("client hung up")).unwrap()
}

async fn send(peer: &MemoryEnd, message: Value) {
    peer.send(message.to_string()).await.unwrap();
}

/// A session-era client over a memory pair, with `buffer` events per stream.
async fn connect(buffer: usize) -> (Client, MemoryEnd) {
    let (client_end, mut server) = memory::pair();
    let connect = Client::builder()
        .name("memory")
        .era_mode(EraMode::Legacy)
        .notification_buffer(buffer)
        .connect(client_end.into_connector());
    let handshake = async {
        let init = recv(&mut server).await;
        assert_eq!(init["method"], "initialize");
        send(
            &server,
            json!({"jsonrpc": "2.0", "id": init["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "memory", "version": "1"}}}),
        )
        .await;
        assert_eq!(
            recv(&mut server).await["method"],
            "notifications/initialized"
        );
    };
    let (client, ()) = tokio::join!(connect, handshake);
    (client.unwrap(), server)
}

fn log(seq: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/message",
           "params": {"level": "info", "data": {"seq": seq}}})
}

fn progress(token: &Value, seq: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/progress",
           "params": {"progressToken": token, "progress": seq}})
}

/// 10 000 notifications interleaved with the responses to 100 calls, 10
/// of them in flight at a time and answered out of order: the event stream
/// sees every notification exactly once, in the order the server sent it,
/// and every call gets its own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_arrive_in_order_under_load() {
    const CALLS: u64 = 100;
    const PER_CALL: u64 = 100;
    // Room for every event: this test is about order and cross-talk; the
    // gap reporting of a full buffer has its own test below. (A starved
    // consumer on a loaded 2-core CI machine must not make it flaky.)
    let (client, mut server) = connect((CALLS * PER_CALL) as usize).await;
    let mut events = client.events();

    let consumer = tokio::spawn(async move {
        let mut next = 0u64;
        let mut progress_seen = 0u64;
        while let Some(event) = events.next().await {
            match event {
                Event::Log(log) => {
                    assert_eq!(log.data["seq"], next, "a log line out of order");
                    next += 1;
                }
                Event::Progress(p) => {
                    // Progress notifications carry the sequence too.
                    assert_eq!(p.progress as u64, next, "progress out of order");
                    next += 1;
                    progress_seen += 1;
                }
                Event::Lagged(n) => panic!("{n} events dropped at seq {next}"),
                Event::Closed(_) => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        (next, progress_seen)
    });

    let script = async {
        let mut seq = 0u64;
        let mut waiting: Vec<Value> = Vec::new();
        let mut answered = 0u64;
        while answered < CALLS {
            // Keep ten requests in hand, then answer the newest first.
            while waiting.len() < 10 && answered + (waiting.len() as u64) < CALLS {
                let request = recv(&mut server).await;
                assert_eq!(request["method"], "tools/call");
                waiting.push(request);
            }
            let request = waiting.pop().unwrap();
            let token = request["params"]["_meta"]["progressToken"].clone();
            for i in 0..PER_CALL {
                let message = if i.is_multiple_of(10) {
                    progress(&token, seq)
                } else {
                    log(seq)
                };
                send(&server, message).await;
                seq += 1;
            }
            send(
                &server,
                json!({"jsonrpc": "2.0", "id": request["id"], "result": {
                    "content": [{"type": "text", "text": request["params"]["arguments"]["n"].to_string()}]}}),
            )
            .await;
            answered += 1;
            // Let the consumer run now and then, as a real server's pace would.
            if answered.is_multiple_of(10) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        server
    };

    let calls = async {
        let mut set = tokio::task::JoinSet::new();
        for n in 0..CALLS {
            let client = client.clone();
            set.spawn(async move {
                let mut params = switchboard::types::CallToolRequestParams {
                    name: "t".into(),
                    ..Default::default()
                };
                params.arguments = json!({"n": n}).as_object().cloned();
                let options = RequestOptions::default().on_progress(|_| {});
                let result = client.call_tool_with(&params, options).await.unwrap();
                let text = serde_json::to_value(&result.content[0]).unwrap()["text"].clone();
                assert_eq!(text, n.to_string(), "call {n} got another call's answer");
            });
        }
        while let Some(done) = set.join_next().await {
            done.unwrap();
        }
    };
    let (server, ()) = tokio::join!(script, calls);
    client.close().await;
    drop(server);
    let (seen, progress_seen) = tokio::time::timeout(Duration::from_secs(30), consumer)
        .await
        .expect("the event stream did not end after close")
        .unwrap();
    assert_eq!(seen, CALLS * PER_CALL);
    assert_eq!(progress_seen, CALLS * PER_CALL / 10);
}

/// A consumer that does not keep up is told where it lost events and how
/// many; nothing else is reordered or lost.
#[tokio::test]
async fn a_slow_consumer_gets_lagged_where_the_gap_is() {
    let (client, server) = connect(8).await;
    let mut events = client.events();
    for seq in 0..20 {
        send(&server, log(seq)).await;
    }
    // A ping round trip: the reader has routed all twenty by now.
    let ping = client.ping();
    let mut server = server;
    let answer = async {
        let request = recv(&mut server).await;
        send(
            &server,
            json!({"jsonrpc": "2.0", "id": request["id"], "result": {}}),
        )
        .await;
    };
    let (pinged, ()) = tokio::join!(ping, answer);
    pinged.unwrap();
    let mut seen = Vec::new();
    for _ in 0..8 {
        match events.next().await.unwrap() {
            Event::Log(l) => seen.push(l.data["seq"].as_u64().unwrap()),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen, (0..8).collect::<Vec<_>>());
    // The buffer was full for 8..20; the next delivery marks the gap first.
    send(&server, log(20)).await;
    assert!(matches!(events.next().await.unwrap(), Event::Lagged(12)));
    match events.next().await.unwrap() {
        Event::Log(l) => assert_eq!(l.data["seq"], 20),
        other => panic!("{other:?}"),
    }
}

/// When the server goes away the stream says so and ends; a stream made
/// after that ends at once.
#[tokio::test]
async fn the_stream_ends_with_closed() {
    let (client, server) = connect(16).await;
    let mut events = client.events();
    drop(server);
    let closed = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("no end of stream");
    assert!(matches!(closed, Some(Event::Closed(Some(_)))), "{closed:?}");
    assert!(events.next().await.is_none());
    let mut late = client.events();
    assert!(matches!(late.next().await, Some(Event::Closed(Some(_)))));
}
