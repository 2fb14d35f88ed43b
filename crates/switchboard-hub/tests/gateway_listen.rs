//! Issue 29: what a 2026-07-28 host gets through the gateway that only
//! that revision has — `subscriptions/listen` streams of the changes it
//! asked for (and none it did not), and a 2026-07-28 backend's
//! `input_required` rounds as the backend wrote them, their state sealed
//! by the gateway.
//!
//! One backend over Streamable HTTP (this crate's own server), the host
//! on the gateway in process (`HubServer::connect`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::server::http::{HttpServeOptions, HttpServer, serve_http};
use switchboard::server::{Reply, RequestContext, ServeOptions, ServerHandler};
use switchboard::types::mrtr::{InputResponses, RequestOutcome};
use switchboard::types::subscriptions::SubscriptionFilter;
use switchboard::types::{
    CallToolRequestParams, CallToolResult, ElicitResult, EmptyResult, Implementation,
    ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, SubscribeRequestParams, UnsubscribeRequestParams,
};
use switchboard::{Client, EraMode, Event, ListKind, RequestOptions, SubscriptionEvent};
use switchboard_hub::{
    Dialect, HttpKind, Hub, HubServer, Origin, Scope, ServerConfig, TransportConfig,
};

/// The backend's own `requestState` of its one round.
const BACKEND_STATE: &str = "backend-state-1";

/// A backend whose tools change its lists, touch its resource, and ask
/// for a name in a 2026-07-28 round.
#[derive(Clone, Default)]
struct Backend {
    grown: Arc<AtomicBool>,
}

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

impl ServerHandler for Backend {
    fn info(&self) -> Implementation {
        Implementation::new("backend", "1.0.0")
    }

    fn capabilities(&self) -> ServerCapabilities {
        from(json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true},
        }))
    }

    fn list_tools(&self, _: PaginatedRequestParams, _: RequestContext) -> Reply<ListToolsResult> {
        let mut names = vec!["grow", "touch", "greet"];
        if self.grown.load(Ordering::SeqCst) {
            names.push("grown");
        }
        let tools: Vec<Value> = names
            .into_iter()
            .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
            .collect();
        Box::pin(async move { Ok(from(json!({ "tools": tools }))) })
    }

    fn list_prompts(
        &self,
        _: PaginatedRequestParams,
        _: RequestContext,
    ) -> Reply<ListPromptsResult> {
        Box::pin(async { Ok(from(json!({"prompts": [{"name": "p"}]}))) })
    }

    fn list_resources(
        &self,
        _: PaginatedRequestParams,
        _: RequestContext,
    ) -> Reply<ListResourcesResult> {
        Box::pin(async {
            Ok(from(
                json!({"resources": [{"uri": "mem://note", "name": "note"}]}),
            ))
        })
    }

    fn subscribe_resource(
        &self,
        _: SubscribeRequestParams,
        _: RequestContext,
    ) -> Reply<EmptyResult> {
        Box::pin(async { Ok(EmptyResult::default()) })
    }

    fn unsubscribe_resource(
        &self,
        _: UnsubscribeRequestParams,
        _: RequestContext,
    ) -> Reply<EmptyResult> {
        Box::pin(async { Ok(EmptyResult::default()) })
    }

    fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Reply<RequestOutcome<CallToolResult>> {
        let grown = self.grown.clone();
        Box::pin(async move {
            match params.name.as_str() {
                "grow" => {
                    grown.store(true, Ordering::SeqCst);
                    let _ = cx.notify("notifications/tools/list_changed", None).await;
                }
                "touch" => {
                    let _ = cx
                        .notify(
                            "notifications/resources/updated",
                            Some(json!({"uri": "mem://note"})),
                        )
                        .await;
                    let _ = cx.notify("notifications/prompts/list_changed", None).await;
                }
                "greet" => {
                    let answer = params
                        .input_responses
                        .as_ref()
                        .and_then(|r| r.get("user_name"))
                        .map(|r| serde_json::to_value(r).unwrap());
                    let Some(answer) = answer else {
                        return Ok(RequestOutcome::InputRequired(from(json!({
                            "resultType": "input_required",
                            "inputRequests": {"user_name": {
                                "method": "elicitation/create",
                                "params": {
                                    "message": "What is your name?",
                                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
                                },
                            }},
                            "requestState": BACKEND_STATE,
                        }))));
                    };
                    // Its own state comes back to it, unchanged.
                    let text = match params.request_state.as_deref() {
                        Some(BACKEND_STATE) => {
                            format!("Hello, {}!", answer["content"]["name"].as_str().unwrap())
                        }
                        other => format!("my state came back as {other:?}"),
                    };
                    return Ok(RequestOutcome::Complete(CallToolResult::text(text)));
                }
                _ => {}
            }
            Ok(RequestOutcome::Complete(CallToolResult::text("done")))
        })
    }
}

/// The backend over HTTP (`modern`: it speaks 2026-07-28, else only the
/// session era), and a 2026-07-28 host on a gateway in front of it (the
/// server `s`, its names prefixed `s__`).
async fn host_over_gateway(modern: bool) -> (Client, HttpServer, Hub) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut options = HttpServeOptions::default();
    if !modern {
        options.serve = ServeOptions::default().modern_versions(Vec::new());
    }
    let server = serve_http(Arc::new(Backend::default()), listener, options).unwrap();
    let config = ServerConfig::new(
        "s",
        TransportConfig::Http {
            url: format!("http://{}/mcp", server.local_addr()),
            headers: BTreeMap::new(),
            kind: HttpKind::Auto,
        },
        Origin {
            file: PathBuf::from("/tests/listen.toml"),
            dialect: Dialect::Switchboard,
            scope: Scope::Explicit,
        },
    );
    let hub = Hub::builder()
        .server(config)
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let host = HubServer::new(hub.clone(), Implementation::new("gateway", "1.0.0"))
        .connect(Client::builder().era_mode(EraMode::Modern))
        .await
        .unwrap();
    (host, server, hub)
}

/// The next change a listen stream reports, within a deadline.
async fn next_change(listen: &mut switchboard::Subscription) -> Event {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), listen.next())
            .await
            .expect("no change came on the listen stream");
        match event {
            Some(SubscriptionEvent::Event(event)) => return event,
            Some(SubscriptionEvent::Lagged(_)) => continue,
            other => panic!("the listen stream reported {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_host_gets_the_changes_it_listens_for_through_the_gateway() {
    // The backend speaks the session era: what it says unasked reaches the
    // hub as it says it (a 2026-07-28 backend's would come on the hub's own
    // listen streams, which this test backend does not serve).
    let (host, _backend, _hub) = host_over_gateway(false).await;
    let mut tools_and_note = host
        .listen(SubscriptionFilter {
            tools_list_changed: Some(true),
            resource_subscriptions: Some(vec!["mem://note".into()]),
            ..Default::default()
        })
        .await
        .unwrap();
    let acknowledged = tools_and_note.acknowledged();
    assert_eq!(acknowledged.tools_list_changed, Some(true));
    assert_eq!(
        acknowledged.resource_subscriptions.as_deref(),
        Some(&["mem://note".to_owned()][..])
    );
    let mut prompts = host
        .listen(SubscriptionFilter {
            prompts_list_changed: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();

    host.call_tool("s__grow", None).await.unwrap();
    let change = next_change(&mut tools_and_note).await;
    assert!(
        matches!(change, Event::ListChanged(ListKind::Tools)),
        "{change:?}"
    );
    // The new tool is there to list once the change was heard.
    let tools = host.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "s__grown"), "{tools:?}");

    host.call_tool("s__touch", None).await.unwrap();
    let change = next_change(&mut tools_and_note).await;
    assert!(
        matches!(&change, Event::ResourceUpdated { uri } if uri == "mem://note"),
        "{change:?}"
    );
    // The prompts-only stream heard nothing of the tools before the
    // prompt change it asked for.
    let change = next_change(&mut prompts).await;
    assert!(
        matches!(change, Event::ListChanged(ListKind::Prompts)),
        "{change:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_backends_round_reaches_a_2026_host_as_it_wrote_it() {
    let (host, _backend, _hub) = host_over_gateway(true).await;
    let call = CallToolRequestParams {
        name: "s__greet".into(),
        ..Default::default()
    };
    let RequestOutcome::InputRequired(round) = host
        .call_tool_once(&call, RequestOptions::default())
        .await
        .unwrap()
    else {
        panic!("no input_required round");
    };
    let requests = round.input_requests.unwrap();
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        ["user_name"],
        "the backend's own key"
    );
    let state = round.request_state.unwrap();
    assert!(!state.contains(BACKEND_STATE), "sealed: {state}");

    let mut answers = InputResponses::new();
    answers.insert(
        "user_name".into(),
        ElicitResult::accept(Some(from(json!({"name": "Alice"})))).into(),
    );
    let retry = CallToolRequestParams {
        input_responses: Some(answers),
        request_state: Some(state.clone()),
        ..call.clone()
    };
    let RequestOutcome::Complete(done) = host
        .call_tool_once(&retry, RequestOptions::default())
        .await
        .unwrap()
    else {
        panic!("the retry did not complete");
    };
    assert_eq!(done.content[0].as_text(), Some("Hello, Alice!"));

    // A state the host changed is refused, not passed on.
    let tampered = CallToolRequestParams {
        request_state: Some(format!("{state}-TAMPERED")),
        ..retry.clone()
    };
    let error = host
        .call_tool_once(&tampered, RequestOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(-32602), "{error}");
    // So is one of another call's arguments.
    let other = CallToolRequestParams {
        arguments: Some(from(json!({"x": 1}))),
        ..retry
    };
    let error = host
        .call_tool_once(&other, RequestOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(-32602), "{error}");
}
