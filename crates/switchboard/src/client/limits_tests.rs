//! Issue 15: what a hostile server can make the client spend is bounded by
//! the client's settings (lists, server requests, output checks, the probe).

use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;

use super::*;
use crate::error::Error;
use crate::transport::memory::{self, MemoryEnd};
use std::time::Instant;

async fn recv(peer: &mut MemoryEnd) -> Value {
    serde_json::from_slice(&peer.recv().await.expect("client hung up")).unwrap()
}

async fn answer(peer: &mut MemoryEnd, result: Value) -> Value {
    let request = recv(peer).await;
    peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string())
        .await
        .unwrap();
    request
}

async fn modern_client(builder: ClientBuilder) -> (Client, MemoryEnd) {
    let (client_end, mut server) = memory::pair();
    let connect = builder.name("hostile").connect(client_end.into_connector());
    let discover = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}});
    let (client, _) = tokio::join!(connect, answer(&mut server, discover));
    (client.unwrap(), server)
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

#[tokio::test]
async fn a_list_stops_at_its_item_budget_across_pages() {
    let (client, mut server) = modern_client(Client::builder().max_list_items(3)).await;
    let script = async {
        answer(
            &mut server,
            json!({"tools": [tool("a", "x"), tool("b", "x")], "nextCursor": "2"}),
        )
        .await;
        answer(
            &mut server,
            json!({"tools": [tool("c", "x"), tool("d", "x")]}),
        )
        .await;
    };
    let (listed, ()) = tokio::join!(client.list_tools(), script);
    let error = listed.unwrap_err();
    assert!(matches!(error, Error::Pagination { .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains("3 items"), "{text}");
    assert!(text.contains("max_list_items"), "{text}");
}

#[tokio::test]
async fn a_list_stops_at_its_byte_budget_across_pages() {
    let (client, mut server) = modern_client(Client::builder().max_list_bytes(1000)).await;
    let long = "y".repeat(600);
    let script = async {
        answer(
            &mut server,
            json!({"tools": [tool("a", &long)], "nextCursor": "2"}),
        )
        .await;
        answer(&mut server, json!({"tools": [tool("b", &long)]})).await;
    };
    let (listed, ()) = tokio::join!(client.list_tools(), script);
    let text = listed.unwrap_err().to_string();
    assert!(text.contains("1000 bytes"), "{text}");
    assert!(text.contains("max_list_bytes"), "{text}");
}

#[tokio::test]
async fn the_default_list_budget_lets_ordinary_lists_through() {
    let (client, mut server) = modern_client(Client::builder()).await;
    let script = async {
        answer(
            &mut server,
            json!({"tools": [tool("a", "x"), tool("b", "x")], "nextCursor": "2"}),
        )
        .await;
        answer(&mut server, json!({"tools": [tool("c", "x")]})).await;
    };
    let (listed, ()) = tokio::join!(client.list_tools(), script);
    assert_eq!(listed.unwrap().len(), 3);
}

/// Answers nothing until the test ends; counts the requests it holds.
struct Stuck {
    started: Mutex<usize>,
    changed: Arc<Notify>,
}

impl RequestHandler for Stuck {
    fn handle(&self, _request: ServerRequest) -> Option<BoxFuture<'static, HandlerResult>> {
        *self.started.lock().unwrap() += 1;
        self.changed.notify_one();
        Some(Box::pin(std::future::pending()))
    }
}

#[tokio::test]
async fn the_seventeenth_concurrent_server_request_is_refused() {
    let stuck = Arc::new(Stuck {
        started: Mutex::new(0),
        changed: Arc::new(Notify::new()),
    });
    let (_client, mut server) =
        modern_client(Client::builder().request_handler(stuck.clone())).await;
    for id in 1..=16 {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "x/slow"});
        server.send(request.to_string()).await.unwrap();
    }
    while *stuck.started.lock().unwrap() < 16 {
        stuck.changed.notified().await;
    }
    let request = json!({"jsonrpc": "2.0", "id": 17, "method": "x/slow"});
    server.send(request.to_string()).await.unwrap();
    // Without the limit no answer ever comes: the deadline only turns that
    // hang into a failure.
    let reply = tokio::time::timeout(Duration::from_secs(10), recv(&mut server))
        .await
        .expect("the 17th request got no answer");
    assert_eq!(reply["id"], 17);
    assert_eq!(reply["error"]["code"], TOO_MANY_SERVER_REQUESTS);
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("limit 16"), "{message}");
    assert!(message.contains("max_server_requests"), "{message}");
    assert_eq!(*stuck.started.lock().unwrap(), 16, "no 17th handler ran");
}

#[tokio::test(start_paused = true)]
async fn a_silent_discover_probe_costs_three_seconds_and_is_announced_after_one() {
    let (client_end, mut server) = memory::pair();
    let (notices_tx, mut notices) = tokio::sync::mpsc::unbounded_channel();
    let connect = Client::builder()
        .name("old")
        .on_probe_wait(move |wait| {
            let _ = notices_tx.send((tokio::time::Instant::now(), wait));
        })
        .connect(client_end.into_connector());
    let script = async {
        let probe = recv(&mut server).await;
        let probed = tokio::time::Instant::now();
        assert_eq!(probe["method"], "server/discover");
        // The timed-out probe is cancelled on the way.
        let mut init = recv(&mut server).await;
        while init["method"] == "notifications/cancelled" {
            init = recv(&mut server).await;
        }
        assert_eq!(init["method"], "initialize");
        let waited = probed.elapsed();
        let result = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"}});
        server
            .send(json!({"jsonrpc": "2.0", "id": init["id"], "result": result}).to_string())
            .await
            .unwrap();
        let mut next = recv(&mut server).await;
        while next["method"] == "notifications/cancelled" {
            next = recv(&mut server).await;
        }
        assert_eq!(next["method"], "notifications/initialized");
        (probed, waited)
    };
    let (client, (probed, waited)) = tokio::join!(connect, script);
    assert_eq!(client.unwrap().era(), Era::Legacy);
    assert!(
        waited >= Duration::from_secs(3) && waited < Duration::from_millis(3100),
        "{waited:?}"
    );
    let (at, wait) = notices.try_recv().expect("the wait was announced");
    assert_eq!(at - probed, Duration::from_secs(1));
    assert_eq!(wait.timeout, Duration::from_secs(3));
    assert!(wait.to_string().contains("server/discover"), "{wait}");
    assert!(notices.try_recv().is_err(), "announced once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backtracking_output_check_costs_its_budget_and_passes_unchecked() {
    let budget = Duration::from_millis(100);
    let (client, mut server) =
        modern_client(Client::builder().output_validation_budget(budget)).await;
    // Each string backtracks through the first branch (2^18 ways, under
    // the per-match step limit) and then matches the second: every item
    // is valid, so the validator checks them all.
    let schema = json!({"type": "array",
        "items": {"type": "string", "pattern": "^(?:(a|a)*(?=b)\\1c|a+\\d+)$"}});
    let evil = json!({"name": "evil", "inputSchema": {"type": "object"}, "outputSchema": schema});
    let (listed, _) = tokio::join!(
        client.list_tools(),
        answer(&mut server, json!({"tools": [evil]}))
    );
    listed.unwrap();
    let items: Vec<Value> = (0..30)
        .map(|i| Value::from(format!("{}{i}", "a".repeat(18))))
        .collect();
    let result = json!({"content": [], "structuredContent": items});
    let started = Instant::now();
    let (called, _) = tokio::join!(client.call_tool("evil", None), answer(&mut server, result));
    let elapsed = started.elapsed();
    let called = called.expect("an over-budget check passes the result on unchecked");
    assert_eq!(
        called.structured_content.unwrap().as_array().unwrap().len(),
        30
    );
    assert!(elapsed < budget + Duration::from_secs(1), "{elapsed:?}");
}
