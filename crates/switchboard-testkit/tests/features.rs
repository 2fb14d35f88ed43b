//! What servers ask of the client — sampling, form and URL elicitation,
//! roots — plus progress, logging, the event stream and structured output,
//! against the test server in both eras, over stdio and Streamable HTTP
//! (and the legacy HTTP+SSE transport in the session era).
//!
//! The session era delivers the asks as server→client requests; the
//! stateless era as `input_required` results the client answers and
//! retries. The same handlers must give the same results either way.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::HttpServer;

use serde_json::{Value, json};
use switchboard::handlers::BoxFuture;
use switchboard::transport::http::{HttpConfig, HttpTransport};
use switchboard::transport::stdio::StdioConfig;
use switchboard::transport::ws::WebSocketConfig;
use switchboard::types::{
    CallToolRequestParams, CreateMessageRequestParams, CreateMessageResult, ElicitResult, Era,
    LoggingLevel, Root,
};
use switchboard::{
    Client, ClientBuilder, ElicitationHandler, Error, Event, FormRequest, HandlerContext,
    HandlerError, RequestOptions, Roots, SamplingHandler, UrlRequest,
};

const SERVER: &str = env!("CARGO_BIN_EXE_switchboard-testkit-server");

/// Generous bound for anything that should happen at once.
const PATIENCE: Duration = Duration::from_secs(20);

/// Where a test runs: an era and a transport.
#[derive(Clone, Copy, Debug)]
enum Target {
    Stdio(Era),
    Http(Era),
    /// Session era with SSE answers: the asks ride the POST's stream.
    HttpPostStream,
    LegacySse,
    WebSocket(Era),
}

impl Target {
    const ALL: [Target; 8] = [
        Target::Stdio(Era::Legacy),
        Target::Stdio(Era::Modern),
        Target::Http(Era::Legacy),
        Target::Http(Era::Modern),
        Target::HttpPostStream,
        Target::LegacySse,
        Target::WebSocket(Era::Legacy),
        Target::WebSocket(Era::Modern),
    ];

    fn era(self) -> Era {
        match self {
            Target::Stdio(era) | Target::Http(era) | Target::WebSocket(era) => era,
            Target::HttpPostStream | Target::LegacySse => Era::Legacy,
        }
    }

    fn era_flag(self) -> &'static str {
        match self.era() {
            Era::Legacy => "legacy",
            _ => "modern",
        }
    }
}

/// A connected client and whatever keeps its server alive.
struct Connected {
    client: Client,
    _http: Option<HttpServer>,
}

async fn connect(target: Target, builder: ClientBuilder) -> Connected {
    let builder = builder.name(format!("{target:?}"));
    let (client, http) = match target {
        Target::Stdio(_) => {
            let config = StdioConfig::new(SERVER).args(["--era", target.era_flag()]);
            (builder.connect(config).await, None)
        }
        // Session era: JSON answers, so the asks, progress and log lines
        // travel on the GET stream. Stateless era (no GET stream): SSE
        // answers carry them.
        Target::Http(Era::Legacy) => {
            let server = HttpServer::start(&["--era", "legacy"]);
            let config = HttpConfig::new(format!("{}/mcp", server.base));
            (builder.connect(config).await, Some(server))
        }
        Target::Http(_) | Target::HttpPostStream => {
            let server = HttpServer::start(&["--era", target.era_flag(), "--http-response", "sse"]);
            let config = HttpConfig::new(format!("{}/mcp", server.base));
            (builder.connect(config).await, Some(server))
        }
        Target::WebSocket(_) => {
            let server = HttpServer::start(&["--era", target.era_flag()]);
            let url = format!("{}/ws", server.base).replace("http://", "ws://");
            (
                builder.connect(WebSocketConfig::new(url)).await,
                Some(server),
            )
        }
        Target::LegacySse => {
            let server = HttpServer::start(&["--era", "legacy"]);
            let config =
                HttpConfig::new(format!("{}/sse", server.base)).transport(HttpTransport::Sse);
            (builder.connect(config).await, Some(server))
        }
    };
    let client = client.unwrap_or_else(|e| panic!("{target:?}: connect: {e}"));
    assert_eq!(client.era(), target.era(), "{target:?}");
    Connected {
        client,
        _http: http,
    }
}

/// The text of a tool result's first block.
fn text_of(result: &switchboard::types::CallToolResult) -> String {
    let block = serde_json::to_value(&result.content[0]).unwrap();
    block["text"].as_str().unwrap_or_default().to_owned()
}

async fn call(client: &Client, tool: &str, arguments: Value) -> switchboard::Result<String> {
    let params = CallToolRequestParams {
        name: tool.into(),
        arguments: arguments.as_object().cloned(),
        ..Default::default()
    };
    let result = tokio::time::timeout(
        PATIENCE,
        client.call_tool_with(&params, RequestOptions::default()),
    )
    .await
    .unwrap_or_else(|_| panic!("{tool} hung"))?;
    let text = text_of(&result);
    if result.is_error == Some(true) {
        return Ok(format!("ERROR: {text}"));
    }
    Ok(text)
}

/// A model that echoes the last user text; records what it was asked.
#[derive(Clone, Default)]
struct Model {
    seen: Arc<Mutex<Vec<(HandlerContext, CreateMessageRequestParams)>>>,
    tools: bool,
    refuse: bool,
}

impl SamplingHandler for Model {
    fn create_message(
        &self,
        context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        let last = serde_json::to_value(&params.messages.last().unwrap().content).unwrap();
        let text = last["text"].as_str().unwrap_or_default().to_owned();
        self.seen.lock().unwrap().push((context, params));
        let refuse = self.refuse;
        Box::pin(async move {
            if refuse {
                return Err(HandlerError::Rejected("the user said no".into()));
            }
            Ok(serde_json::from_value(json!({
                "role": "assistant",
                "content": {"type": "text", "text": format!("echo {text}")},
                "model": "test-model",
                "stopReason": "endTurn"
            }))
            .unwrap())
        })
    }

    fn supports_tools(&self) -> bool {
        self.tools
    }
}

/// A user who accepts every form with its defaults (plus an email) and
/// consents to every URL; records what was asked.
#[derive(Clone, Default)]
struct Person {
    forms: Arc<Mutex<Vec<FormRequest>>>,
    urls: Arc<Mutex<Vec<UrlRequest>>>,
    url_mode: bool,
}

impl ElicitationHandler for Person {
    fn elicit_form(
        &self,
        _: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        let mut content = request.defaults.clone();
        content.insert("email".into(), json!("ann@example.com"));
        self.forms.lock().unwrap().push(request);
        Box::pin(async move { Ok(ElicitResult::accept(Some(content))) })
    }

    fn supports_url(&self) -> bool {
        self.url_mode
    }

    fn elicit_url(
        &self,
        _: HandlerContext,
        request: UrlRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        self.urls.lock().unwrap().push(request);
        Box::pin(async { Ok(ElicitResult::accept(None)) })
    }
}

fn work_roots() -> Roots {
    Roots::new(vec![Root {
        uri: "file:///work".into(),
        name: Some("work".into()),
        ..Default::default()
    }])
}

#[tokio::test]
async fn sampling_reaches_the_handler_in_both_eras() {
    for target in Target::ALL {
        let model = Model {
            tools: true,
            ..Default::default()
        };
        let c = connect(target, Client::builder().sampling(model.clone())).await;
        let text = call(&c.client, "sample", json!({"prompt": "hi"}))
            .await
            .unwrap();
        assert_eq!(text, "sampled: echo hi (model test-model)", "{target:?}");
        let text = call(
            &c.client,
            "sample",
            json!({"prompt": "weather?", "tools": true}),
        )
        .await
        .unwrap();
        assert_eq!(
            text, "sampled: echo weather? (model test-model)",
            "{target:?}"
        );
        let seen = model.seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "{target:?}");
        assert_eq!(
            seen[0].1.system_prompt.as_deref(),
            Some("You are a test model.")
        );
        assert!(seen[0].1.tools.is_none());
        assert_eq!(
            seen[1].1.tools.as_ref().map(Vec::len),
            Some(1),
            "{target:?}"
        );
        assert_eq!(seen[0].0.era, target.era());
        assert_eq!(
            seen[0].0.input_key.as_deref(),
            (target.era() == Era::Modern).then_some("sample"),
            "{target:?}"
        );
    }
}

#[tokio::test]
async fn undeclared_capabilities_are_not_asked_for() {
    for target in [Target::Stdio(Era::Legacy), Target::Stdio(Era::Modern)] {
        // Sampling without tools support: the server must not offer tools.
        let c = connect(target, Client::builder().sampling(Model::default())).await;
        let text = call(&c.client, "sample", json!({"prompt": "x", "tools": true}))
            .await
            .unwrap();
        assert!(
            text.contains("sampling.tools capability"),
            "{target:?}: {text}"
        );
        // No handlers at all: nothing is declared.
        let c = connect(target, Client::builder()).await;
        for (tool, capability) in [
            ("sample", "sampling"),
            ("ask", "elicitation.form"),
            ("ask_url", "elicitation.url"),
            ("roots", "roots"),
        ] {
            let text = call(&c.client, tool, json!({"prompt": "x"})).await.unwrap();
            assert_eq!(
                text,
                format!("ERROR: the client did not declare the {capability} capability"),
                "{target:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_refused_sampling_request_fails_the_call() {
    for target in [Target::Stdio(Era::Legacy), Target::Stdio(Era::Modern)] {
        let model = Model {
            refuse: true,
            ..Default::default()
        };
        let c = connect(target, Client::builder().sampling(model)).await;
        let outcome = call(&c.client, "sample", json!({"prompt": "hi"})).await;
        match (target.era(), outcome) {
            // The server got -1 and reports it as its tool's failure.
            (Era::Legacy, Ok(text)) => assert!(
                text.starts_with("ERROR") && text.contains("the user said no"),
                "{text}"
            ),
            // Nothing can be sent back in a retry: the call stops here.
            (
                Era::Modern,
                Err(Error::InputFailed {
                    key, input_method, ..
                }),
            ) => {
                assert_eq!(key, "sample");
                assert_eq!(input_method, "sampling/createMessage");
            }
            (_, other) => panic!("{target:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn form_elicitation_gets_defaults_and_answers_are_checked() {
    for target in Target::ALL {
        let person = Person::default();
        let c = connect(target, Client::builder().elicitation(person.clone())).await;
        let text = call(&c.client, "ask", json!({})).await.unwrap();
        let answer: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{text}"));
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {"name": "octocat", "age": 30,
                "subscribe": true, "color": "green", "email": "ann@example.com"}}),
            "{target:?}"
        );
        let forms = person.forms.lock().unwrap();
        assert_eq!(forms[0].message, "Please tell us about yourself");
        assert_eq!(forms[0].defaults.len(), 4, "{target:?}");
    }
}

#[tokio::test]
async fn url_elicitation_shows_the_domain_and_completes() {
    for target in Target::ALL {
        let person = Person {
            url_mode: true,
            ..Default::default()
        };
        let c = connect(target, Client::builder().elicitation(person.clone())).await;
        let mut events = c.client.events();
        let text = call(&c.client, "ask_url", json!({})).await.unwrap();
        assert_eq!(text, r#"{"action":"accept"}"#, "{target:?}");
        let urls = person.urls.lock().unwrap().clone();
        assert_eq!(urls[0].url, "https://example.com/consent?x=1");
        assert_eq!(urls[0].domain, "example.com");
        if target.era() == Era::Legacy {
            let id = urls[0]
                .elicitation_id
                .clone()
                .expect("session era has an id");
            let done = tokio::time::timeout(PATIENCE, async {
                loop {
                    match events.next().await {
                        Some(Event::ElicitationComplete(done)) => return done,
                        Some(_) => {}
                        None => panic!("stream ended"),
                    }
                }
            })
            .await
            .unwrap_or_else(|_| panic!("{target:?}: no elicitation/complete"));
            assert_eq!(done.elicitation_id, id);
        }
    }
}

#[tokio::test]
async fn url_elicitation_required_is_run_and_the_call_retried() {
    for target in [Target::Stdio(Era::Legacy), Target::Http(Era::Legacy)] {
        let person = Person {
            url_mode: true,
            ..Default::default()
        };
        let builder = Client::builder()
            .elicitation(person.clone())
            .url_elicitation_wait(Duration::from_secs(5));
        let c = connect(target, builder).await;
        let text = call(&c.client, "needs_url", json!({})).await.unwrap();
        assert!(!text.starts_with("ERROR"), "{target:?}: {text}");
        assert_eq!(person.urls.lock().unwrap().len(), 1, "{target:?}");

        // Without URL mode the -32042 reaches the caller.
        let c = connect(target, Client::builder().elicitation(Person::default())).await;
        let error = call(&c.client, "needs_url", json!({})).await.unwrap_err();
        assert_eq!(error.code(), Some(-32042), "{target:?}: {error}");
    }
}

#[tokio::test]
async fn roots_are_listed_and_changes_announced() {
    for target in Target::ALL {
        let roots = work_roots();
        let c = connect(target, Client::builder().roots(roots.clone())).await;
        let text = call(&c.client, "roots", json!({})).await.unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!([{"uri": "file:///work", "name": "work"}]),
            "{target:?}"
        );
        roots.set(vec![Root {
            uri: "file:///elsewhere".into(),
            ..Default::default()
        }]);
        let text = call(&c.client, "roots", json!({})).await.unwrap();
        assert!(text.contains("file:///elsewhere"), "{target:?}: {text}");
        if target.era() == Era::Legacy {
            // The notification is queued, not awaited: poll for it.
            let deadline = tokio::time::Instant::now() + PATIENCE;
            loop {
                let count = call(&c.client, "roots_changes", json!({})).await.unwrap();
                if count.contains('1') {
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{target:?}: {count}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

#[tokio::test]
async fn one_call_can_need_all_three() {
    for target in Target::ALL {
        let builder = Client::builder()
            .sampling(Model::default())
            .elicitation(Person::default())
            .roots(work_roots());
        let c = connect(target, builder).await;
        let text = call(&c.client, "multi", json!({"prompt": "all"}))
            .await
            .unwrap();
        let answer: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{text}"));
        assert_eq!(answer["sample"], "sampled: echo all (model test-model)");
        assert_eq!(answer["ask"]["action"], "accept");
        assert_eq!(answer["roots"][0]["uri"], "file:///work", "{target:?}");
    }
}

#[tokio::test]
async fn stateless_rounds_echo_state_use_new_ids_and_are_capped() {
    for target in [Target::Stdio(Era::Modern), Target::Http(Era::Modern)] {
        let builder = Client::builder()
            .elicitation(Person::default())
            .max_input_rounds(4);
        let c = connect(target, builder).await;
        let text = call(&c.client, "state_only", json!({})).await.unwrap();
        assert_eq!(
            text, "state_only done after 2 state-only retries",
            "{target:?}"
        );
        let error = call(&c.client, "forever", json!({})).await.unwrap_err();
        assert!(
            matches!(error, Error::TooManyRounds { rounds: 4, .. }),
            "{target:?}: {error}"
        );
        call(&c.client, "ask", json!({})).await.unwrap();
        let ids: Value =
            serde_json::from_str(&call(&c.client, "mrtr_ids", json!({})).await.unwrap()).unwrap();
        let ids: Vec<String> = ids
            .as_array()
            .unwrap_or_else(|| panic!("{ids}"))
            .iter()
            .map(|entry| entry["id"].to_string())
            .collect();
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        // state_only 3 + forever 5 + ask 2 requests, every one its own id.
        assert_eq!(ids.len(), 10, "{target:?}: {ids:?}");
        assert_eq!(unique.len(), ids.len(), "{target:?}: an id was reused");

        // Parallel calls never share state: each gets its own answers.
        let (a, b) = tokio::join!(
            call(&c.client, "ask", json!({})),
            call(&c.client, "state_only", json!({}))
        );
        assert!(a.unwrap().contains("octocat"));
        assert!(b.unwrap().contains("done"));

        // The one-round variant leaves the driving to the caller.
        let params = CallToolRequestParams {
            name: "ask".into(),
            ..Default::default()
        };
        let outcome = c
            .client
            .call_tool_once(&params, RequestOptions::default())
            .await
            .unwrap();
        match outcome {
            switchboard::types::RequestOutcome::InputRequired(interim) => {
                assert!(interim.request_state.is_some());
                assert!(interim.input_requests.unwrap().contains_key("ask"));
            }
            other => panic!("{target:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn progress_and_log_lines_reach_the_callback_and_the_stream() {
    for target in Target::ALL {
        let c = connect(target, Client::builder().log_level(LoggingLevel::Info)).await;
        let mut events = c.client.events();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options =
            RequestOptions::default().on_progress(move |p| sink.lock().unwrap().push(p.progress));
        let params = CallToolRequestParams {
            name: "progress".into(),
            arguments: json!({"steps": 3}).as_object().cloned(),
            ..Default::default()
        };
        let result = c.client.call_tool_with(&params, options).await.unwrap();
        assert_eq!(text_of(&result), "completed 3 steps");
        assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0], "{target:?}");
        // On the stream, in order: progress 1, log 1, progress 2, log 2, progress 3.
        let mut order = Vec::new();
        while order.len() < 5 {
            match tokio::time::timeout(PATIENCE, events.next()).await {
                Ok(Some(Event::Progress(p))) => order.push(format!("p{}", p.progress)),
                Ok(Some(Event::Log(l))) => order.push(format!("l{}", l.data["step"])),
                Ok(Some(other)) => panic!("{target:?}: {other:?}"),
                Ok(None) | Err(_) => panic!("{target:?}: only {order:?}"),
            }
        }
        assert_eq!(order, ["p1", "l1", "p2", "l2", "p3"], "{target:?}");

        // Raising the level silences info lines.
        c.client
            .set_logging_level(LoggingLevel::Error)
            .await
            .unwrap();
        let mut events = c.client.events();
        c.client
            .call_tool_with(&params, RequestOptions::default())
            .await
            .unwrap();
        c.client.close().await;
        while let Some(event) = events.next().await {
            assert!(!matches!(event, Event::Log(_)), "{target:?}: {event:?}");
        }
    }
}

#[tokio::test]
async fn ten_thousand_log_lines_arrive_in_order() {
    for target in [
        Target::Stdio(Era::Legacy),
        Target::Stdio(Era::Modern),
        Target::Http(Era::Modern),
    ] {
        let builder = Client::builder()
            .log_level(LoggingLevel::Info)
            .notification_buffer(10_000);
        let c = connect(target, builder).await;
        let mut events = c.client.events();
        let (result, ()) =
            tokio::join!(call(&c.client, "flood", json!({"count": 10_000})), async {
                for expected in 0..10_000u64 {
                    match tokio::time::timeout(PATIENCE, events.next()).await {
                        Ok(Some(Event::Log(l))) => {
                            assert_eq!(l.data["seq"], expected, "{target:?}")
                        }
                        other => panic!("{target:?} at {expected}: {other:?}"),
                    }
                }
            });
        result.unwrap();
    }
}

#[tokio::test]
async fn structured_output_is_checked_against_the_output_schema() {
    for target in [
        Target::Stdio(Era::Legacy),
        Target::Stdio(Era::Modern),
        Target::Http(Era::Modern),
    ] {
        let c = connect(target, Client::builder()).await;
        // Unknown tools are not checked: the schema comes from tools/list.
        call(&c.client, "bad_weather", json!({})).await.unwrap();
        c.client.list_tools().await.unwrap();
        call(&c.client, "weather", json!({})).await.unwrap();
        match call(&c.client, "bad_weather", json!({})).await {
            Err(Error::OutputMismatch {
                mismatch, result, ..
            }) => {
                let message = mismatch.to_string();
                assert!(message.contains("/temperature"), "{message}");
                assert!(result.structured_content.is_some());
            }
            other => panic!("{target:?}: {other:?}"),
        }
    }
}
