//! The agent on all four model APIs, against the testkit's fake provider
//! endpoints (each speaking one API's documented wire format, streaming
//! included, and refusing a request of the wrong shape) and two MCP
//! servers: one multi-turn task with two parallel tool calls, an image
//! result and a tool error passes the same way on each. Then the hostile
//! provider: a stream cut mid-call, malformed arguments, an unknown tool,
//! 429 with `retry-after`, an endless stream, an overloaded endpoint —
//! each a typed error or a retry, never a hang, never a call the model did
//! not name.
#![cfg(feature = "agent")]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use switchboard_hub::Hub;
use switchboard_hub::config::{Dialect, HttpKind, Origin, Scope, ServerConfig, TransportConfig};
use switchboard_models::agent::{Agent, AgentError, AgentEvent};
use switchboard_models::chat::{ChatClient, ChatError};
use switchboard_models::{Provider, Toolset, ToolsetOptions};
use switchboard_testkit::providers::{Api, FakeProvider, Step};

/// Each API as the fake and the client name it.
const APIS: [(Api, Provider); 4] = [
    (Api::OpenAiResponses, Provider::OpenAiResponses),
    (Api::OpenAiChat, Provider::OpenAiChat),
    (Api::Anthropic, Provider::Anthropic),
    (Api::Gemini, Provider::Gemini),
];

/// No run may take this long: a hang fails the test instead.
const WAIT: Duration = Duration::from_secs(30);

fn http_server(name: &str, url: &str) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Http {
            url: url.to_owned(),
            headers: BTreeMap::new(),
            kind: HttpKind::Auto,
        },
        Origin {
            file: PathBuf::from("/tests/providers.toml"),
            dialect: Dialect::Switchboard,
            scope: Scope::Explicit,
        },
    )
}

/// A hub of two test servers, `alpha` and `beta`, ready.
async fn two_servers() -> Hub {
    let (_, alpha) = switchboard_testkit::spawn_http(&[]).await;
    let (_, beta) = switchboard_testkit::spawn_http(&[]).await;
    let hub = Hub::builder()
        .persist(false)
        .server(http_server("alpha", &alpha))
        .server(http_server("beta", &beta))
        .build()
        .unwrap();
    hub.start().await.unwrap();
    hub
}

/// The name the model knows `server`'s `tool` by, on `provider`.
fn name_of(hub: &Hub, provider: Provider, server: &str, tool: &str) -> String {
    Toolset::from_hub(provider, ToolsetOptions::default(), hub)
        .entries()
        .iter()
        .find(|e| e.server == server && e.tool.name == tool)
        .unwrap_or_else(|| panic!("no {server}/{tool}"))
        .name
        .clone()
}

fn client(fake: &FakeProvider, provider: Provider) -> ChatClient {
    ChatClient::builder(fake.base_url(), "test-model")
        .provider(provider)
        .api_key(Some("test-key".into()))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_task_with_parallel_calls_an_image_and_a_tool_error_passes_on_every_api() {
    let hub = two_servers().await;
    for (api, provider) in APIS {
        let name = |server: &str, tool: &str| name_of(&hub, provider, server, tool);
        let fake = FakeProvider::start(
            api,
            vec![
                Step::Calls(vec![
                    (name("alpha", "echo"), json!({"text": "hello there"})),
                    (name("beta", "add"), json!({"a": 2, "b": 3})),
                ]),
                Step::Calls(vec![
                    (name("alpha", "image"), json!({})),
                    (name("beta", "error"), json!({})),
                ]),
                Step::Text("Echoed, added to 5, saw the image; the error tool failed.".into()),
            ],
        )
        .await;
        let deltas = Arc::new(Mutex::new(String::new()));
        let seen = deltas.clone();
        let agent = Agent::builder(hub.clone(), client(&fake, provider))
            .system_prompt("Be brief.")
            .observer(move |event| {
                if let AgentEvent::Delta { text, .. } = event {
                    seen.lock().unwrap().push_str(text);
                }
            })
            .build()
            .unwrap();
        let outcome = tokio::time::timeout(WAIT, agent.run("Do the four things."))
            .await
            .unwrap_or_else(|_| panic!("{api:?}: the run hung"))
            .unwrap_or_else(|e| panic!("{api:?}: {e:#}\nproblems: {:?}", fake.problems()));
        assert!(fake.problems().is_empty(), "{api:?}: {:?}", fake.problems());
        assert_eq!(fake.remaining(), 0, "{api:?}");
        assert_eq!(
            outcome.text, "Echoed, added to 5, saw the image; the error tool failed.",
            "{api:?}"
        );
        assert_eq!(*deltas.lock().unwrap(), outcome.text, "{api:?}: streamed");
        assert_eq!(outcome.rounds, 3, "{api:?}");
        let calls: Vec<(Option<&str>, Option<&str>, bool)> = outcome
            .calls
            .iter()
            .map(|c| (c.server.as_deref(), c.tool.as_deref(), c.is_error))
            .collect();
        assert_eq!(
            calls,
            [
                (Some("alpha"), Some("echo"), false),
                (Some("beta"), Some("add"), false),
                (Some("alpha"), Some("image"), false),
                (Some("beta"), Some("error"), true),
            ],
            "{api:?}"
        );
        // What the model was sent back, in its API's own form.
        let requests = fake.requests();
        assert_eq!(requests.len(), 3, "{api:?}");
        let second = requests[1].to_string();
        assert!(
            second.contains("hello there") && second.contains('5'),
            "{api:?}: {second}"
        );
        let third = requests[2].to_string();
        let inlined = third.contains("iVBOR");
        match provider {
            Provider::Anthropic => assert!(
                inlined && third.contains("\"is_error\":true") && third.contains("tool_result"),
                "{third}"
            ),
            Provider::Gemini => assert!(
                inlined && third.contains("inlineData") && third.contains("functionResponse"),
                "{third}"
            ),
            Provider::OpenAiResponses => assert!(
                inlined && third.contains("input_image") && third.contains("function_call_output"),
                "{third}"
            ),
            // Chat Completions takes no image in a tool message: it comes
            // after the answers, in a user message.
            _ => assert!(
                third.contains("Error: ") && third.contains("\"role\":\"tool\""),
                "{third}"
            ),
        }
        if provider != Provider::OpenAiChat {
            // The system prompt went beside the conversation.
            assert!(requests[0].to_string().contains("Be brief."), "{api:?}");
        }
    }
    hub.shutdown().await;
}

/// A run against `script` on `api`, with `client` settings; its outcome,
/// the events seen and the fake.
async fn hostile(
    hub: &Hub,
    api: Api,
    provider: Provider,
    script: Vec<Step>,
    settings: impl FnOnce(
        switchboard_models::chat::ChatClientBuilder,
    ) -> switchboard_models::chat::ChatClientBuilder,
) -> (
    Result<switchboard_models::agent::AgentOutcome, AgentError>,
    Vec<String>,
    FakeProvider,
) {
    let fake = FakeProvider::start(api, script).await;
    let model = settings(
        ChatClient::builder(fake.base_url(), "test-model")
            .provider(provider)
            .api_key(Some("k".into())),
    )
    .build()
    .unwrap();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = calls.clone();
    let agent = Agent::builder(hub.clone(), model)
        .observer(move |event| {
            if let AgentEvent::Call { name, server, .. } = event {
                seen.lock()
                    .unwrap()
                    .push(format!("{name} -> {}", server.as_deref().unwrap_or("none")));
            }
        })
        .build()
        .unwrap();
    let outcome = tokio::time::timeout(WAIT, agent.run("go"))
        .await
        .unwrap_or_else(|_| panic!("{api:?}: the run hung"));
    let calls = calls.lock().unwrap().clone();
    (outcome, calls, fake)
}

fn stream_error(
    outcome: &Result<switchboard_models::agent::AgentOutcome, AgentError>,
) -> &ChatError {
    match outcome {
        Err(error) => error
            .chat_error()
            .unwrap_or_else(|| panic!("not the endpoint's error: {error:#}")),
        Ok(outcome) => panic!("the run succeeded: {}", outcome.text),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_provider_gets_a_typed_error_or_a_retry_and_never_a_call_it_did_not_name() {
    let hub = two_servers().await;
    for (api, provider) in APIS {
        let echo = name_of(&hub, provider, "alpha", "echo");

        // A stream cut in the middle of a tool call: an error, no call.
        let (outcome, calls, _fake) = hostile(
            &hub,
            api,
            provider,
            vec![Step::CutMidCall(echo.clone())],
            |b| b,
        )
        .await;
        let error = stream_error(&outcome);
        assert!(
            matches!(error, ChatError::Stream { .. }) && error.to_string().contains("ended before"),
            "{api:?}: {error}"
        );
        assert!(calls.is_empty(), "{api:?}: {calls:?}");

        // Arguments that are not JSON: told to the model, nothing called.
        let (outcome, calls, fake) = hostile(
            &hub,
            api,
            provider,
            vec![
                Step::RawCall {
                    name: echo.clone(),
                    raw_arguments: "{\"text\": \"unterminated".into(),
                },
                Step::Text("sorry".into()),
            ],
            |b| b,
        )
        .await;
        let outcome = outcome.unwrap_or_else(|e| {
            panic!(
                "{api:?}: {}\nproblems: {:?}",
                switchboard_models_error(&e),
                fake.problems()
            )
        });
        assert!(outcome.calls[0].is_error, "{api:?}");
        assert_eq!(outcome.calls[0].tool.as_deref(), Some("echo"));
        let told = fake.requests()[1].to_string();
        assert!(
            told.contains("not valid JSON") || told.contains("not an object"),
            "{api:?}: {told}"
        );
        assert!(fake.problems().is_empty(), "{api:?}: {:?}", fake.problems());
        let _ = calls;

        // A tool no server has: told to the model, nothing called.
        let (outcome, calls, fake) = hostile(
            &hub,
            api,
            provider,
            vec![
                Step::Calls(vec![("delete_everything".into(), json!({}))]),
                Step::Text("ok".into()),
            ],
            |b| b,
        )
        .await;
        let outcome = outcome.unwrap_or_else(|e| panic!("{api:?}: {e:#}"));
        assert_eq!(calls, ["delete_everything -> none"], "{api:?}");
        assert!(outcome.calls[0].is_error && outcome.calls[0].server.is_none());
        assert!(
            fake.requests()[1]
                .to_string()
                .contains("there is no tool named")
        );
        assert!(fake.problems().is_empty(), "{api:?}: {:?}", fake.problems());

        // 429 with `retry-after`: sent again after the wait, then answered.
        let started = std::time::Instant::now();
        let (outcome, _, fake) = hostile(
            &hub,
            api,
            provider,
            vec![
                Step::Status {
                    status: 429,
                    retry_after: Some(1),
                    body: json!({"error": {"message": "slow down"}}).to_string(),
                },
                Step::Text("after the wait".into()),
            ],
            |b| b,
        )
        .await;
        assert_eq!(outcome.unwrap().text, "after the wait", "{api:?}");
        assert_eq!(fake.requests().len(), 2);
        assert!(
            started.elapsed() >= Duration::from_millis(950),
            "{api:?}: did not wait"
        );

        // An endless stream: ended by the request's timeout, typed.
        let (outcome, calls, _fake) = hostile(&hub, api, provider, vec![Step::Endless], |b| {
            b.timeout(Duration::from_millis(600))
        })
        .await;
        assert!(stream_error(&outcome).is_timeout(), "{api:?}");
        assert!(calls.is_empty());

        // Overloaded: a typed error that says it may be sent again.
        let (outcome, _, _fake) = hostile(&hub, api, provider, vec![Step::Overloaded], |b| {
            b.retries(0)
        })
        .await;
        let error = stream_error(&outcome);
        assert!(error.is_retryable(), "{api:?}: {error}");
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn requests_carry_each_apis_own_authentication() {
    for (api, provider) in APIS {
        let fake = FakeProvider::start(api, vec![Step::Text("hi".into())]).await;
        let hub = Hub::builder().persist(false).build().unwrap();
        let agent = Agent::builder(hub, client(&fake, provider))
            .build()
            .unwrap();
        agent.run("hello").await.unwrap();
        let headers = fake.headers().remove(0);
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        match provider {
            Provider::Anthropic => {
                assert_eq!(header("x-api-key").as_deref(), Some("test-key"));
                assert!(header("anthropic-version").is_some());
                assert!(header("authorization").is_none());
            }
            Provider::Gemini => {
                assert_eq!(header("x-goog-api-key").as_deref(), Some("test-key"));
                assert!(fake.paths()[0].contains("test-model:streamGenerateContent?alt=sse"));
            }
            _ => assert_eq!(header("authorization").as_deref(), Some("Bearer test-key")),
        }
        // The key is never in the URL, nor in the body.
        assert!(!fake.paths()[0].contains("test-key"));
        assert!(!fake.requests()[0].to_string().contains("test-key"));
    }
}

/// An error with its causes.
fn switchboard_models_error(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A server's `sampling/createMessage` with tools, answered through each
/// API: the test server asks (offering `get_weather`), the fake provider
/// checks the request's shape, the model's call comes back to the server
/// as a `tool_use` block; then a conversation holding that call and its
/// result is sent on, as the server would continue it.
#[cfg(feature = "sampling")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_sampling_with_tools_is_answered_through_every_api() {
    use switchboard::Client;
    use switchboard::transport::http::HttpConfig;
    use switchboard_models::sampling::ModelSampling;

    let (_, server) = switchboard_testkit::spawn_http(&[]).await;
    for (api, provider) in APIS {
        let fake = FakeProvider::start(
            api,
            vec![
                Step::Calls(vec![("get_weather".into(), json!({"city": "Paris"}))]),
                Step::Text("It is sunny in Paris.".into()),
            ],
        )
        .await;
        let sampling = ModelSampling::new(client(&fake, provider));
        let host = Client::builder()
            .sampling(sampling.clone())
            .connect(HttpConfig::new(server.as_str()))
            .await
            .unwrap();
        let result = tokio::time::timeout(
            WAIT,
            host.call_tool(
                "sample",
                json!({"prompt": "What is the weather in Paris?", "tools": true})
                    .as_object()
                    .cloned(),
            ),
        )
        .await
        .unwrap()
        .unwrap();
        let said = serde_json::to_string(&result.content).unwrap();
        assert!(
            said.contains("[tool_use get_weather") && said.contains("Paris"),
            "{api:?}: {said}\nproblems: {:?}",
            fake.problems()
        );
        assert!(fake.problems().is_empty(), "{api:?}: {:?}", fake.problems());
        let request = fake.requests()[0].to_string();
        assert!(
            request.contains("get_weather") && request.contains("You are a test model."),
            "{api:?}: {request}"
        );
        // The token cap under the API's own name.
        let cap = match provider {
            Provider::OpenAiResponses => "\"max_output_tokens\":100",
            Provider::Gemini => "\"maxOutputTokens\":100",
            _ => "\"max_tokens\":100",
        };
        assert!(request.contains(cap), "{api:?}: {request}");
        host.close().await;

        // The server goes on with the call and its result.
        let params = serde_json::from_value(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "What is the weather in Paris?"}},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "toolUseId": "call_1",
                     "content": [{"type": "text", "text": "sunny, 24 °C"}]}
                ]}
            ],
            "maxTokens": 50,
            "tools": [{"name": "get_weather", "inputSchema": {"type": "object",
                "properties": {"city": {"type": "string"}}}}],
            "toolChoice": {"mode": "auto"}
        }))
        .unwrap();
        let answer = sampling
            .sample("test", &params)
            .await
            .unwrap_or_else(|e| panic!("{api:?}: {e}\nproblems: {:?}", fake.problems()));
        assert_eq!(
            answer.content.blocks()[0].as_text(),
            Some("It is sunny in Paris."),
            "{api:?}"
        );
        assert_eq!(answer.stop_reason.as_deref(), Some("endTurn"), "{api:?}");
        assert!(fake.problems().is_empty(), "{api:?}: {:?}", fake.problems());
        let continued = fake.requests()[1].to_string();
        assert!(continued.contains("sunny, 24"), "{api:?}: {continued}");
        assert_eq!(sampling.calls(), 2);
    }
}
