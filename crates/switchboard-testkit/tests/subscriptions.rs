//! Subscriptions, list changes and the response cache against the test
//! server: `subscriptions/listen` (stateless era, stdio and Streamable
//! HTTP), `resources/subscribe` (session era), `list_changed` refreshing the
//! client's lists, and `ttlMs` answers served from the cache (counted by the
//! server's `hits` tool).

mod support;

use std::time::Duration;
use support::HttpServer;

use serde_json::{Value, json};
use switchboard::client::{Subscription, SubscriptionEvent};
use switchboard::transport::http::HttpConfig;
use switchboard::transport::stdio::StdioConfig;
use switchboard::types::{Era, SubscriptionFilter};
use switchboard::{Client, Error, Event, ListKind};

const SERVER: &str = env!("CARGO_BIN_EXE_switchboard-testkit-server");
const HELLO: &str = "test://static/hello";
const WAIT: Duration = Duration::from_secs(10);

fn args(value: Value) -> Option<serde_json::Map<String, Value>> {
    value.as_object().cloned()
}

/// How often the server has served `method`.
async fn hits(client: &Client, method: &str) -> u64 {
    let result = client
        .call_tool("hits", args(json!({"method": method})))
        .await
        .unwrap();
    result.structured_content.as_ref().unwrap()["count"]
        .as_u64()
        .unwrap()
}

async fn next(subscription: &mut Subscription) -> SubscriptionEvent {
    tokio::time::timeout(WAIT, subscription.next())
        .await
        .expect("a subscription event in time")
        .expect("the subscription is open")
}

/// Waits until `check` holds, polling.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn filter() -> SubscriptionFilter {
    SubscriptionFilter {
        tools_list_changed: Some(true),
        prompts_list_changed: Some(true),
        resource_subscriptions: Some(vec![HELLO.into()]),
        ..Default::default()
    }
}

/// The stateless era on any transport: the cache, a listen, list changes,
/// resource updates and the server's graceful end.
async fn stateless_era(client: Client) {
    assert_eq!(client.era(), Era::Modern);

    // ttlMs: the second list and read are served from the cache.
    let before = client.list_tools().await.unwrap().len();
    client.list_tools().await.unwrap();
    assert_eq!(hits(&client, "tools/list").await, 1);
    client.read_resource(HELLO).await.unwrap();
    client.read_resource(HELLO).await.unwrap();
    assert_eq!(hits(&client, "resources/read").await, 1);

    let mut subscription = client.listen(filter()).await.unwrap();
    let granted = subscription.acknowledged();
    assert_eq!(granted.tools_list_changed, Some(true));
    assert_eq!(
        granted.resource_subscriptions.as_deref(),
        Some(&[HELLO.to_owned()][..])
    );

    // A new tool: the event, the cache invalidated, the list refreshed.
    client.call_tool("add_tool", None).await.unwrap();
    match next(&mut subscription).await {
        SubscriptionEvent::Event(Event::ListChanged(ListKind::Tools)) => {}
        other => panic!("{other:?}"),
    }
    eventually("the tool list is refreshed", || {
        client.tools().is_some_and(|t| t.len() == before + 1)
    })
    .await;
    assert_eq!(hits(&client, "tools/list").await, 2);
    assert_eq!(client.list_tools().await.unwrap().len(), before + 1);
    assert_eq!(
        hits(&client, "tools/list").await,
        2,
        "the refreshed list is cached"
    );

    // A touched resource: the event, and the next read goes to the server.
    client
        .call_tool("touch", args(json!({"uri": HELLO})))
        .await
        .unwrap();
    match next(&mut subscription).await {
        SubscriptionEvent::Event(Event::ResourceUpdated { uri }) => assert_eq!(uri, HELLO),
        other => panic!("{other:?}"),
    }
    client.read_resource(HELLO).await.unwrap();
    assert_eq!(hits(&client, "resources/read").await, 2);

    // The server ends every listen with its result: no re-listen.
    client.call_tool("close_subscriptions", None).await.unwrap();
    match next(&mut subscription).await {
        SubscriptionEvent::Ended(None) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(hits(&client, "subscriptions/listen").await, 1);

    // A listen dropped by the client: the next one still works.
    let subscription = client.listen(filter()).await.unwrap();
    drop(subscription);
    let mut again = client.listen(filter()).await.unwrap();
    client.call_tool("add_tool", None).await.unwrap();
    match next(&mut again).await {
        SubscriptionEvent::Event(Event::ListChanged(ListKind::Tools)) => {}
        other => panic!("{other:?}"),
    }
    client.close().await;
}

#[tokio::test]
async fn stateless_era_over_stdio() {
    let config = StdioConfig::new(SERVER).args(["--era", "modern", "--cache-ttl-ms", "60000"]);
    let client = Client::builder()
        .auto_refresh_lists(true)
        .connect(config)
        .await
        .unwrap();
    stateless_era(client).await;
}

#[tokio::test]
async fn stateless_era_over_streamable_http() {
    let server = HttpServer::start(&["--era", "modern", "--cache-ttl-ms", "60000"]);
    let client = Client::builder()
        .auto_refresh_lists(true)
        .connect(HttpConfig::new(server.url("/mcp")))
        .await
        .unwrap();
    stateless_era(client).await;
}

#[tokio::test]
async fn without_ttl_hints_nothing_is_cached() {
    let config = StdioConfig::new(SERVER).args(["--era", "modern"]);
    let client = Client::connect(config).await.unwrap();
    client.list_tools().await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(hits(&client, "tools/list").await, 2);
}

/// The session era: `resources/subscribe`, and list changes on the
/// connection's own stream.
async fn session_era(client: Client) {
    assert_eq!(client.era(), Era::Legacy);
    let error = client.listen(filter()).await.unwrap_err();
    assert!(matches!(error, Error::NotInThisEra { .. }), "{error}");

    let mut events = client.events();
    let before = client.list_tools().await.unwrap().len();
    client.subscribe_resource(HELLO).await.unwrap();
    client
        .call_tool("touch", args(json!({"uri": HELLO})))
        .await
        .unwrap();
    client.call_tool("add_tool", None).await.unwrap();
    let (mut updated, mut changed) = (false, false);
    while !(updated && changed) {
        match tokio::time::timeout(WAIT, events.next())
            .await
            .expect("events in time")
        {
            Some(Event::ResourceUpdated { uri }) => {
                assert_eq!(uri, HELLO);
                updated = true;
            }
            Some(Event::ListChanged(ListKind::Tools)) => changed = true,
            closed @ (Some(Event::Closed(_)) | None) => panic!("closed: {closed:?}"),
            Some(_) => {}
        }
    }
    eventually("the tool list is refreshed", || {
        client.tools().is_some_and(|t| t.len() == before + 1)
    })
    .await;

    // Unsubscribed: a touch no longer reaches this client.
    client.unsubscribe_resource(HELLO).await.unwrap();
    client
        .call_tool("touch", args(json!({"uri": HELLO})))
        .await
        .unwrap();
    client.call_tool("add_tool", None).await.unwrap();
    loop {
        match tokio::time::timeout(WAIT, events.next())
            .await
            .expect("events in time")
        {
            Some(Event::ResourceUpdated { uri }) => panic!("unsubscribed, yet told about {uri}"),
            // add_tool's notification comes after touch's would have.
            Some(Event::ListChanged(ListKind::Tools)) => break,
            closed @ (Some(Event::Closed(_)) | None) => panic!("closed: {closed:?}"),
            Some(_) => {}
        }
    }
    client.close().await;
}

#[tokio::test]
async fn session_era_over_stdio() {
    let config = StdioConfig::new(SERVER).args(["--era", "legacy"]);
    let client = Client::builder()
        .auto_refresh_lists(true)
        .connect(config)
        .await
        .unwrap();
    session_era(client).await;
}

#[tokio::test]
async fn session_era_over_streamable_http() {
    let server = HttpServer::start(&["--era", "legacy", "--http-response", "sse"]);
    let client = Client::builder()
        .auto_refresh_lists(true)
        .connect(HttpConfig::new(server.url("/mcp")))
        .await
        .unwrap();
    session_era(client).await;
}
