use serde_json::json;
use switchboard_types::elicitation::{ElicitRequestFormParams, ElicitResult};
use switchboard_types::sampling::{CreateMessageRequestParams, CreateMessageResult};

use super::*;

fn sampling(messages: Value) -> CreateMessageRequestParams {
    serde_json::from_value(json!({"messages": messages, "maxTokens": 10})).unwrap()
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "t", "input": {}})
}

fn tool_result(id: &str) -> Value {
    json!({"type": "tool_result", "toolUseId": id, "content": []})
}

#[test]
fn sampling_tool_messages_must_pair_up() {
    let text = json!({"type": "text", "text": "hi"});
    let ok = sampling(json!([
        {"role": "user", "content": text},
        {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
        {"role": "user", "content": [tool_result("b"), tool_result("a")]},
    ]));
    assert_eq!(check_sampling(&ok, true), Ok(()));

    let cases = [
        (
            json!([{"role": "assistant", "content": tool_use("a")}, {"role": "user", "content": text}]),
            "tool result missing for tool use a",
        ),
        (
            json!([{"role": "assistant", "content": tool_use("a")},
                   {"role": "user", "content": [tool_result("a"), text]}]),
            "mixed with other content",
        ),
        (
            json!([{"role": "user", "content": tool_result("z")}]),
            "do not follow an assistant tool use",
        ),
        (
            json!([{"role": "assistant", "content": tool_use("a")},
                   {"role": "user", "content": [tool_result("a"), tool_result("x")]}]),
            "tool result x answers no tool use",
        ),
        (
            json!([{"role": "assistant", "content": tool_use("a")}]),
            "no tool result after it",
        ),
        (
            json!([{"role": "user", "content": tool_use("a")}]),
            "tool use must be in an assistant message",
        ),
    ];
    for (messages, expected) in cases {
        let error = check_sampling(&sampling(messages.clone()), true).unwrap_err();
        let HandlerError::InvalidParams(message) = &error else {
            panic!("{messages}: {error:?}")
        };
        assert!(message.contains(expected), "{messages}: {message}");
        assert_eq!(error.to_error_object().code, codes::INVALID_PARAMS);
    }
}

#[test]
fn sampling_tools_need_the_capability() {
    let mut params = sampling(json!([{"role": "user", "content": {"type": "text", "text": "x"}}]));
    params.tools = Some(vec![]);
    assert!(check_sampling(&params, false).is_err());
    assert!(check_sampling(&params, true).is_ok());
}

fn form(schema: Value) -> Result<FormRequest, HandlerError> {
    let params: ElicitRequestFormParams =
        serde_json::from_value(json!({"message": "m", "requestedSchema": schema})).unwrap();
    form_request(params)
}

#[test]
fn form_defaults_are_gathered_and_nested_forms_refused() {
    let request = form(json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "octocat"},
        "age": {"type": "integer", "default": 30},
        "ratio": {"type": "number", "default": 0.5},
        "ok": {"type": "boolean", "default": true},
        "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["a"]},
        "plain": {"type": "string"}
    }, "required": ["name"]}))
    .unwrap();
    assert_eq!(
        Value::Object(request.defaults),
        json!({"name": "octocat", "age": 30, "ratio": 0.5, "ok": true, "color": "green", "tags": ["a"]})
    );
    let nested = form(json!({"type": "object", "properties": {"o": {"type": "object"}}}));
    assert!(matches!(nested, Err(HandlerError::InvalidParams(m)) if m.contains("`o`")));
    let unknown_required = form(json!({"type": "object", "properties": {}, "required": ["ghost"]}));
    assert!(unknown_required.is_err());
}

#[test]
fn form_answers_are_checked_against_the_schema() {
    let request = form(json!({"type": "object", "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "email": {"type": "string", "format": "email"},
        "when": {"type": "string", "format": "date-time"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1}
    }, "required": ["name"]}))
    .unwrap();
    let accept = |content: Value| ElicitResult::accept(content.as_object().cloned());
    let good = accept(
        json!({"name": "ann", "email": "a@b.io", "when": "2026-01-02T03:04:05Z",
                              "age": 3, "color": "r", "tags": ["b"]}),
    );
    assert_eq!(check_form_answer(&request.schema, &good), Ok(()));
    for bad in [
        json!({}),
        json!({"name": "a"}),
        json!({"name": "abcdef"}),
        json!({"name": "ann", "email": "nope"}),
        json!({"name": "ann", "when": "yesterday"}),
        json!({"name": "ann", "age": 3.5}),
        json!({"name": "ann", "age": 151}),
        json!({"name": "ann", "color": "g"}),
        json!({"name": "ann", "tags": ["a", "b"]}),
        json!({"name": "ann", "extra": 1}),
        json!({"name": 7}),
    ] {
        assert!(
            check_form_answer(&request.schema, &accept(bad.clone())).is_err(),
            "{bad} passed"
        );
    }
    assert_eq!(
        check_form_answer(&request.schema, &ElicitResult::decline()),
        Ok(())
    );
    let mut declined_with_content = ElicitResult::decline();
    declined_with_content.content = Some(JsonObject::new());
    assert!(check_form_answer(&request.schema, &declined_with_content).is_err());
}

#[test]
fn url_host_is_the_domain_to_show() {
    assert_eq!(
        url_host("https://Example.COM/a?b").as_deref(),
        Some("example.com")
    );
    assert_eq!(
        url_host("https://user:pw@evil.com@good.com:8443/").as_deref(),
        Some("good.com")
    );
    assert_eq!(url_host("http://[::1]:80/x").as_deref(), Some("::1"));
    assert_eq!(url_host("javascript:alert(1)"), None);
    assert_eq!(url_host("file:///etc/passwd"), None);
}

#[test]
fn url_requests_carry_the_host_the_browser_will_open() {
    let request = |url: &str| url_request(ElicitRequestUrlParams::new("m", url)).unwrap();
    let backslash = request(r"https://evil.example\@bank.com/");
    assert_eq!(backslash.domain, "evil.example");
    assert_eq!(backslash.shown.url, "https://evil.example/@bank.com/");
    let cyrillic = request("https://\u{430}pple.com/");
    assert_eq!(cyrillic.domain, "xn--pple-43d.com");
    assert!(
        cyrillic.shown.warnings.len() == 2,
        "{:?}",
        cyrillic.shown.warnings
    );
}

struct Echo;

impl SamplingHandler for Echo {
    fn create_message(
        &self,
        context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        Box::pin(async move {
            assert_eq!(&*context.server, "srv");
            let n = params.messages.len();
            Ok(serde_json::from_value(json!({
                "role": "assistant", "content": {"type": "text", "text": format!("{n} messages")},
                "model": "m"
            }))
            .unwrap())
        })
    }
}

struct Rude;

impl ElicitationHandler for Rude {
    fn elicit_form(
        &self,
        _: HandlerContext,
        _: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        // Content the form did not ask for: must never be sent.
        Box::pin(async { Ok(ElicitResult::accept(json!({"x": 1}).as_object().cloned())) })
    }
}

fn context() -> HandlerContext {
    HandlerContext {
        request_tag: None,
        server: "srv".into(),
        era: Era::Legacy,
        input_key: None,
    }
}

#[tokio::test]
async fn answers_route_by_method_and_capabilities_follow_handlers() {
    let roots = Roots::new(vec![Root {
        uri: "file:///w".into(),
        ..Default::default()
    }]);
    let handlers = Handlers {
        sampling: Some(Arc::new(Echo)),
        elicitation: Some(Arc::new(Rude)),
        roots: Some(roots.clone()),
        roots_handler: None,
    };
    let caps = handlers.capabilities(&ClientCapabilities::default());
    let caps = serde_json::to_value(caps).unwrap();
    assert_eq!(
        caps,
        json!({"roots": {"listChanged": true}, "sampling": {}, "elicitation": {"form": {}}})
    );
    assert_eq!(
        serde_json::to_value(Handlers::default().capabilities(&ClientCapabilities::default()))
            .unwrap(),
        json!({})
    );

    let answer = handlers
        .answer(
            context(),
            methods::SAMPLING_CREATE_MESSAGE,
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "q"}}], "maxTokens": 5}),
        )
        .await
        .unwrap();
    assert_eq!(answer["content"]["text"], "1 messages");

    let answer = handlers
        .answer(context(), methods::ROOTS_LIST, json!({}))
        .await
        .unwrap();
    assert_eq!(answer, json!({"roots": [{"uri": "file:///w"}]}));

    let error = handlers
        .answer(
            context(),
            methods::ELICITATION_CREATE,
            json!({"message": "m", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, HandlerError::Failed(m) if m.contains("`x` is not in the form")));

    // URL mode was not declared: -32602, as the spec asks.
    let error = handlers
        .answer(
            context(),
            methods::ELICITATION_CREATE,
            json!({"mode": "url", "message": "m", "url": "https://e.com", "elicitationId": "1"}),
        )
        .await
        .unwrap_err();
    assert_eq!(error.to_error_object().code, codes::INVALID_PARAMS);

    let error = Handlers::default()
        .answer(context(), methods::ROOTS_LIST, json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.to_error_object().code, codes::METHOD_NOT_FOUND);
}

#[test]
fn changing_roots_calls_live_listeners_only() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let roots = Roots::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let listener: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    roots.listen(listener.clone());
    roots.set(vec![]);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    drop(listener);
    roots.set(vec![]);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// Answers with the request's tag as the root.
struct TagRoots;

impl RootsHandler for TagRoots {
    fn list_roots(
        &self,
        context: HandlerContext,
    ) -> BoxFuture<'static, Result<Vec<Root>, HandlerError>> {
        let uri = format!("file:///call/{}", context.request_tag.unwrap_or_default());
        Box::pin(async move {
            Ok(vec![Root {
                uri,
                ..Default::default()
            }])
        })
    }
}

#[tokio::test]
async fn a_roots_handler_answers_in_place_of_the_list_knowing_the_request() {
    let handlers = Handlers {
        roots: Some(Roots::new(vec![Root {
            uri: "file:///list".into(),
            ..Default::default()
        }])),
        roots_handler: Some(Arc::new(TagRoots)),
        ..Handlers::default()
    };
    let caps = serde_json::to_value(handlers.capabilities(&ClientCapabilities::default())).unwrap();
    assert_eq!(caps, json!({"roots": {"listChanged": true}}));
    let mut cx = context();
    cx.request_tag = Some(7);
    let answer = handlers
        .answer(cx, methods::ROOTS_LIST, json!({}))
        .await
        .unwrap();
    assert_eq!(answer, json!({"roots": [{"uri": "file:///call/7"}]}));
}

/// Roots set while the client connects — after the server may have read
/// them, before the client listens for changes — are announced with
/// `notifications/roots/list_changed` once it is connected (a gateway's
/// backend starting as its host arrives kept the roots it read first).
#[tokio::test]
async fn roots_set_during_the_handshake_are_announced() {
    use crate::client::subscriptions::script::{recv, reply};
    let roots = Roots::new(Vec::new());
    let (client_end, mut server) = crate::transport::memory::pair();
    let connect = crate::Client::builder()
        .era_mode(crate::EraMode::Legacy)
        .roots(roots.clone())
        .name("scripted")
        .connect(client_end.into_connector());
    let script = async {
        let initialize = recv(&mut server).await;
        assert_eq!(initialize["method"], "initialize", "{initialize}");
        // The host's roots change while the handshake runs.
        roots.set(vec![Root {
            uri: "file:///a".into(),
            ..Default::default()
        }]);
        let result = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"}});
        reply(&server, &initialize, result).await;
        let initialized = recv(&mut server).await;
        assert_eq!(initialized["method"], "notifications/initialized");
        let changed = tokio::time::timeout(std::time::Duration::from_secs(30), recv(&mut server))
            .await
            .expect("the change made during the handshake was announced");
        assert_eq!(changed["method"], "notifications/roots/list_changed");
    };
    let (client, ()) = tokio::join!(connect, script);
    client.unwrap();
}
