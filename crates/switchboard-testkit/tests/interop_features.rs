//! Interop of the client-side features — sampling, form and URL
//! elicitation, roots, progress and logging — with servers on the official
//! SDKs that ask the client for things mid-call.
//!
//! | server                                      | transport       | era (version)       | asks arrive as             |
//! |---------------------------------------------|-----------------|---------------------|----------------------------|
//! | `interop/ts_everything_server.mjs` (TS SDK) | stdio           | legacy (2025-11-25) | server→client requests     |
//! | the same with `--http 0`                    | Streamable HTTP | legacy (2025-11-25) | requests on the POST's SSE |
//! | `interop/python_features_server.py`, 1.30.0 | stdio, HTTP     | legacy (2025-11-25) | server→client requests     |
//! | the same on mcp 2.3.0                       | stdio, HTTP     | modern (2026-07-28) | `input_required` rounds    |
//! | mcp 2.3.0 with the client pinned to legacy  | stdio           | legacy (2025-11-25) | server→client requests     |
//!
//! Every server has the same tools with the same result texts, so one set of
//! checks runs against each (`feature_tests!`): the handler is called with
//! what the server sent, and the tool's result carries the handler's
//! answer; progress reaches the callback and the event stream in order; log
//! lines arrive as events. Beside them: URL mode and -32042 (TS, Python),
//! SEP-1330 enum forms and a server cancelling its ask (TS), the log level
//! filtering (TS, mcp 2.x in 2026-07-28), and a client without handlers.
//! The servers come from `scripts/install-interop.sh`; when they are
//! missing the tests print `SKIP: …` and pass, unless
//! `SWITCHBOARD_REQUIRE_INTEROP=1`.

mod support;

use std::future::Future;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::handlers::{
    BoxFuture, ElicitationHandler, FormRequest, HandlerContext, HandlerError, Roots,
    SamplingHandler, UrlRequest,
};
use switchboard::transport::http::HttpConfig;
use switchboard::transport::stdio::StdioConfig;
use switchboard::types::elicitation::ElicitResult;
use switchboard::types::roots::Root;
use switchboard::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use switchboard::types::tools::CallToolRequestParams;
use switchboard::types::{Era, LoggingLevel, ProtocolVersion};
use switchboard::{Client, EraMode, Error, Event, EventStream, Progress, RequestOptions};

use support::{ServerProcess, args, cache_dir, free_port, text_of};

/// Upper bound for one client step, so a hung server fails instead of
/// hanging CI.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a server may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// The client's name, which handlers see as `HandlerContext::server`.
const CLIENT_NAME: &str = "features";
/// The prompt the sampling handler refuses.
const REJECTED_PROMPT: &str = "please refuse this";

async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(STEP_TIMEOUT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {STEP_TIMEOUT:?}"))
}

// ------------------------------------------------------------ handlers

/// One ask a handler received.
#[derive(Debug)]
enum Ask {
    Sampling(HandlerContext, Box<CreateMessageRequestParams>),
    Form(HandlerContext, Box<FormRequest>),
    Url(HandlerContext, Box<UrlRequest>),
}

/// Every ask, in order, shared by the handlers of one client.
#[derive(Debug, Default)]
struct Recorder {
    asks: Mutex<Vec<Ask>>,
    /// Handler futures dropped before they finished.
    abandoned: AtomicUsize,
}

/// Counts its handler future as abandoned if dropped before `finished`.
struct AbandonProbe {
    recorder: Arc<Recorder>,
    finished: bool,
}

impl Drop for AbandonProbe {
    fn drop(&mut self) {
        if !self.finished {
            self.recorder.abandoned.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Recorder {
    fn push(&self, ask: Ask) {
        self.asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(ask);
    }

    fn take(&self) -> Vec<Ask> {
        std::mem::take(&mut *self.asks.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Answers every prompt with `sampled: <prompt>`, except
/// [`REJECTED_PROMPT`], which it refuses; takes 300 ms over a prompt that
/// starts with `slow`.
struct Sampler(Arc<Recorder>);

impl SamplingHandler for Sampler {
    fn create_message(
        &self,
        context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        let prompt = serde_json::to_value(&params).expect("params serialize")["messages"][0]
            ["content"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.0.push(Ask::Sampling(context, Box::new(params)));
        Box::pin(async move {
            if prompt.starts_with("slow") {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            if prompt == REJECTED_PROMPT {
                return Err(HandlerError::Rejected("the user refused to sample".into()));
            }
            Ok(serde_json::from_value(json!({
                "role": "assistant",
                "content": {"type": "text", "text": format!("sampled: {prompt}")},
                "model": "switchboard-test-model",
                "stopReason": "endTurn",
            }))
            .expect("a valid CreateMessageResult"))
        })
    }
}

/// What the form handler answers to the SEP-1034 form: every field changed
/// from its default.
fn sep1034_answer() -> Value {
    json!({"name": "Jane Smith", "age": 25, "score": 88.5, "status": "inactive", "verified": false})
}

/// What the form handler answers to the SEP-1330 form (one value from each
/// kind of enum).
fn sep1330_answer() -> Value {
    json!({
        "untitledSingle": "option1",
        "titledSingle": "value1",
        "legacyEnum": "opt1",
        "untitledMulti": ["option1", "option2"],
        "titledMulti": ["value1", "value2"],
    })
}

/// Fills in forms (declines one whose message says "decline"; takes 10 s
/// over one whose message starts with "slow", 2 s over "pause") and
/// consents to every URL.
struct Elicitor(Arc<Recorder>);

impl ElicitationHandler for Elicitor {
    fn elicit_form(
        &self,
        context: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        let fields: Vec<&str> = request
            .schema
            .properties
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        let answer = if request.message.contains("decline") {
            ElicitResult::decline()
        } else if fields == ["username", "email"] {
            ElicitResult::accept(Some(object(
                json!({"username": "alice", "email": "alice@example.com"}),
            )))
        } else if fields.contains(&"untitledSingle") {
            ElicitResult::accept(Some(object(sep1330_answer())))
        } else {
            ElicitResult::accept(Some(object(sep1034_answer())))
        };
        let slow = request.message.starts_with("slow");
        let pause = request.message.starts_with("pause");
        self.0.push(Ask::Form(context, Box::new(request)));
        let recorder = Arc::clone(&self.0);
        Box::pin(async move {
            if pause {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            if slow {
                let mut probe = AbandonProbe {
                    recorder,
                    finished: false,
                };
                tokio::time::sleep(Duration::from_secs(10)).await;
                probe.finished = true;
            }
            Ok(answer)
        })
    }

    fn supports_url(&self) -> bool {
        true
    }

    fn elicit_url(
        &self,
        context: HandlerContext,
        request: UrlRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        self.0.push(Ask::Url(context, Box::new(request)));
        Box::pin(async { Ok(ElicitResult::accept(None)) })
    }
}

fn object(value: Value) -> serde_json::Map<String, Value> {
    args(value)
}

fn root(uri: &str, name: &str) -> Root {
    serde_json::from_value(json!({"uri": uri, "name": name})).expect("a valid Root")
}

// ------------------------------------------------------------- servers

/// Which server, over what, with which era setting.
#[derive(Clone, Copy, Debug)]
enum Target {
    TsStdio,
    TsHttp,
    PythonStdio { sdk: &'static str, mode: EraMode },
    PythonHttp { sdk: &'static str },
}

/// Client settings that some tests change.
struct Settings {
    log_level: LoggingLevel,
    request_timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            log_level: LoggingLevel::Debug,
            request_timeout: STEP_TIMEOUT,
        }
    }
}

/// A connected client with its handlers and what they recorded.
struct Peer {
    label: String,
    client: Client,
    asks: Arc<Recorder>,
    roots: Roots,
    /// The HTTP server process (stdio servers belong to the client).
    server: Option<ServerProcess>,
}

impl Peer {
    /// Connects to `target` asking for every log level; `None` (after
    /// `SKIP:`) when it is not installed.
    async fn start(target: Target, era: Era) -> Option<Peer> {
        Self::start_with(target, era, Settings::default()).await
    }

    /// Connects to `target` with these client settings.
    async fn start_with(target: Target, era: Era, settings: Settings) -> Option<Peer> {
        let asks = Arc::new(Recorder::default());
        let roots = Roots::new(vec![root("file:///tmp/switchboard-a", "project a")]);
        let builder = |mode: EraMode| {
            Client::builder()
                .name(CLIENT_NAME)
                .era_mode(mode)
                .sampling(Sampler(Arc::clone(&asks)))
                .elicitation(Elicitor(Arc::clone(&asks)))
                .roots(roots.clone())
                .log_level(settings.log_level)
                .request_timeout(settings.request_timeout)
                .url_elicitation_wait(STEP_TIMEOUT)
        };
        let label = format!("{target:?}");
        let (connected, server) = match target {
            Target::TsStdio => {
                let (node, script) = support::ts_everything_server()?;
                let config = StdioConfig::new(node)
                    .arg(script)
                    .env("SWITCHBOARD_CACHE", cache_dir());
                (
                    within(&label, builder(EraMode::Auto).connect(config)).await,
                    None,
                )
            }
            Target::TsHttp => {
                let (node, script) = support::ts_everything_server()?;
                let mut command = Command::new(node);
                command
                    .arg(script)
                    .args(["--http", "0"])
                    .env("SWITCHBOARD_CACHE", cache_dir());
                let mut server = ServerProcess::spawn("ts_everything_server --http", command);
                let url = server.listening_url(START_TIMEOUT);
                let connected =
                    within(&label, builder(EraMode::Auto).connect(HttpConfig::new(url))).await;
                (connected, Some(server))
            }
            Target::PythonStdio { sdk, mode } => {
                let python = support::python_sdk(sdk)?;
                let config = StdioConfig::new(python)
                    .arg(support::python_features_script())
                    .arg("stdio");
                (within(&label, builder(mode).connect(config)).await, None)
            }
            Target::PythonHttp { sdk } => {
                let python = support::python_sdk(sdk)?;
                let port = free_port();
                let mut command = Command::new(python);
                command
                    .arg(support::python_features_script())
                    .arg("streamable-http")
                    .arg(port.to_string())
                    .env("PYTHONUNBUFFERED", "1");
                let mut server =
                    ServerProcess::spawn(&format!("python mcp=={sdk} features"), command);
                server.wait_until_accepting(port, START_TIMEOUT);
                let url = format!("http://127.0.0.1:{port}/mcp");
                let connected =
                    within(&label, builder(EraMode::Auto).connect(HttpConfig::new(url))).await;
                (connected, Some(server))
            }
        };
        let peer = Peer {
            client: connected.unwrap_or_else(|e| {
                panic!(
                    "{label}: connect failed: {e}\nserver output:\n{}",
                    server
                        .as_ref()
                        .map(ServerProcess::output)
                        .unwrap_or_default()
                )
            }),
            label,
            asks,
            roots,
            server,
        };
        assert_eq!(peer.client.era(), era, "{}: era", peer.label);
        let version = match era {
            Era::Modern => ProtocolVersion::V2026_07_28,
            _ => ProtocolVersion::V2025_11_25,
        };
        assert_eq!(
            peer.client.protocol_version(),
            &version,
            "{}: protocol version",
            peer.label
        );
        Some(peer)
    }

    fn era(&self) -> Era {
        self.client.era()
    }

    /// What the server printed (HTTP) or its stderr (stdio), for failures.
    fn server_output(&self) -> String {
        match &self.server {
            Some(server) => server.output(),
            None => self.client.stderr().unwrap_or_default(),
        }
    }

    async fn call(&self, tool: &str, arguments: Value) -> Result<String, Error> {
        self.call_with(tool, arguments, RequestOptions::default())
            .await
    }

    async fn call_with(
        &self,
        tool: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<String, Error> {
        let params: CallToolRequestParams =
            serde_json::from_value(json!({"name": tool, "arguments": arguments}))
                .expect("valid tools/call params");
        let result = within(
            &format!("{}: {tool}", self.label),
            self.client.call_tool_with(&params, options),
        )
        .await?;
        assert_ne!(
            result.is_error,
            Some(true),
            "{}: {tool} returned isError: {}\nserver output:\n{}",
            self.label,
            text_of(&result),
            self.server_output()
        );
        Ok(text_of(&result))
    }

    /// Calls `tool` and expects success.
    async fn text(&self, tool: &str, arguments: Value) -> String {
        self.call(tool, arguments).await.unwrap_or_else(|e| {
            panic!(
                "{}: {tool} failed: {e}\nserver output:\n{}",
                self.label,
                self.server_output()
            )
        })
    }

    /// Checks how an ask reached a handler: named after this client, in this
    /// era, and keyed by its `inputRequests` entry exactly in 2026-07-28.
    fn assert_context(&self, context: &HandlerContext, what: &str) {
        assert_eq!(
            &*context.server, CLIENT_NAME,
            "{}: {what}: server",
            self.label
        );
        assert_eq!(context.era, self.era(), "{}: {what}: era", self.label);
        assert_eq!(
            context.input_key.is_some(),
            self.era() == Era::Modern,
            "{}: {what}: input_key {:?} (only 2026-07-28 asks come in input_required)",
            self.label,
            context.input_key
        );
    }

    async fn close(self) {
        within(&format!("{}: close", self.label), self.client.close()).await;
    }
}

/// Events until `done` says enough or `STEP_TIMEOUT` passes.
async fn collect_events(events: &mut EventStream, done: impl Fn(&[Event]) -> bool) -> Vec<Event> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
    while !done(&seen) {
        match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(Some(event)) => seen.push(event),
            Ok(None) | Err(_) => break,
        }
    }
    seen
}

// --------------------------------------------------------------- checks

async fn check_simple_text(peer: &Peer) {
    assert_eq!(
        peer.text("test_simple_text", json!({})).await,
        "This is a simple text response for testing.",
        "{}",
        peer.label
    );
}

async fn check_progress(peer: &Peer) {
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let mut events = peer.client.events();
    let options = RequestOptions::default().on_progress(move |p| {
        sink.lock().unwrap_or_else(|e| e.into_inner()).push(p);
    });
    let text = peer
        .call_with("test_tool_with_progress", json!({}), options)
        .await
        .unwrap_or_else(|e| panic!("{}: test_tool_with_progress: {e}", peer.label));
    assert!(
        text.starts_with("Progress complete"),
        "{}: {text}",
        peer.label
    );
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let values: Vec<(f64, Option<f64>, Option<String>)> = seen
        .iter()
        .map(|p| (p.progress, p.total, p.message.clone()))
        .collect();
    assert_eq!(
        values,
        [
            (0.0, Some(100.0), Some("step 1 of 3".to_owned())),
            (50.0, Some(100.0), Some("step 2 of 3".to_owned())),
            (100.0, Some(100.0), Some("step 3 of 3".to_owned())),
        ],
        "{}: the progress callback, in order",
        peer.label
    );
    // The event stream sees the same notifications.
    let progress = collect_events(&mut events, |seen| {
        seen.iter()
            .filter(|e| matches!(e, Event::Progress(_)))
            .count()
            >= 3
    })
    .await;
    let values: Vec<f64> = progress
        .iter()
        .filter_map(|e| match e {
            Event::Progress(p) => Some(p.progress),
            _ => None,
        })
        .collect();
    assert_eq!(
        values,
        [0.0, 50.0, 100.0],
        "{}: Event::Progress in the event stream",
        peer.label
    );
}

async fn check_logging(peer: &Peer) {
    let mut events = peer.client.events();
    assert_eq!(
        peer.text("test_logging_tool", json!({})).await,
        "Logged 3 messages",
        "{}",
        peer.label
    );
    let logs = collect_events(&mut events, |seen| {
        seen.iter().filter(|e| matches!(e, Event::Log(_))).count() >= 3
    })
    .await;
    let logs: Vec<(String, Value)> = logs
        .iter()
        .filter_map(|e| match e {
            Event::Log(log) => Some((
                serde_json::to_value(log.level)
                    .expect("level serializes")
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                log.data.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        logs,
        [
            ("info".to_owned(), json!("log message 1 (info)")),
            ("warning".to_owned(), json!("log message 2 (warning)")),
            ("error".to_owned(), json!("log message 3 (error)")),
        ],
        "{}: Event::Log in the event stream\nserver output:\n{}",
        peer.label,
        peer.server_output()
    );
}

async fn check_sampling(peer: &Peer) {
    let text = peer
        .text("test_sampling", json!({"prompt": "What is 2+2?"}))
        .await;
    assert_eq!(
        text,
        "LLM response: sampled: What is 2+2? (model: switchboard-test-model, stopReason: endTurn)",
        "{}: the tool result carries the handler's answer",
        peer.label
    );
    let asks = peer.asks.take();
    let [Ask::Sampling(context, params)] = asks.as_slice() else {
        panic!("{}: expected one sampling ask, got {asks:?}", peer.label);
    };
    peer.assert_context(context, "sampling");
    let params = serde_json::to_value(params).expect("params serialize");
    assert_eq!(
        params["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "What is 2+2?"}}]),
        "{}: sampling messages",
        peer.label
    );
    assert_eq!(params["maxTokens"], 100, "{}: maxTokens", peer.label);
    assert_eq!(
        params["systemPrompt"], "You are a test.",
        "{}: systemPrompt",
        peer.label
    );

    // A refusal reaches the server as an error with the handler's message
    // (session era: the server fails the tool with isError, or fails the
    // request with that error) or fails the call (2026-07-28: an
    // `input_required` round cannot carry an error).
    let refused = peer
        .client
        .call_tool(
            "test_sampling",
            Some(args(json!({"prompt": REJECTED_PROMPT}))),
        )
        .await;
    match (peer.era(), refused) {
        (Era::Modern, Err(Error::InputFailed { input_method, .. })) => {
            assert_eq!(input_method, "sampling/createMessage", "{}", peer.label);
        }
        (Era::Modern, other) => panic!(
            "{}: a refused sampling in 2026-07-28 should fail the call with InputFailed, got {other:?}",
            peer.label
        ),
        (_, Ok(result)) => {
            assert_eq!(
                result.is_error,
                Some(true),
                "{}: a refused sampling should fail the tool: {}",
                peer.label,
                text_of(&result)
            );
            assert!(
                text_of(&result).contains("the user refused to sample"),
                "{}: the tool error should carry the refusal: {}",
                peer.label,
                text_of(&result)
            );
        }
        // mcp 2.x passes the client's error on as the request's error.
        (_, Err(e)) => assert!(
            e.error_object()
                .is_some_and(|o| o.message.contains("the user refused to sample")),
            "{}: a refused sampling should come back from the server as an error carrying the refusal, got {e}",
            peer.label
        ),
    }
    assert_eq!(peer.asks.take().len(), 1, "{}: one refused ask", peer.label);
}

/// The JSON after `prefix` in `text`.
fn json_after(text: &str, prefix: &str, label: &str) -> Value {
    let rest = text
        .split_once(prefix)
        .unwrap_or_else(|| panic!("{label}: {prefix:?} not in {text:?}"))
        .1;
    serde_json::from_str(rest)
        .unwrap_or_else(|e| panic!("{label}: not JSON after {prefix:?}: {rest:?}: {e}"))
}

async fn check_elicitation(peer: &Peer) {
    let text = peer
        .text("test_elicitation", json!({"message": "Who are you?"}))
        .await;
    assert_eq!(
        json_after(&text, "User response: ", &peer.label),
        json!({"action": "accept", "content": {"username": "alice", "email": "alice@example.com"}}),
        "{}: the tool result carries the form answer",
        peer.label
    );
    let asks = peer.asks.take();
    let [Ask::Form(context, form)] = asks.as_slice() else {
        panic!("{}: expected one form ask, got {asks:?}", peer.label);
    };
    peer.assert_context(context, "form");
    assert_eq!(form.message, "Who are you?", "{}: form message", peer.label);
    let schema = serde_json::to_value(&form.schema).expect("schema serializes");
    assert_eq!(
        schema["required"],
        json!(["username", "email"]),
        "{}: required fields",
        peer.label
    );
    assert_eq!(
        schema["properties"]["email"]["description"], "User's email address",
        "{}: field descriptions reach the handler",
        peer.label
    );
    assert!(form.defaults.is_empty(), "{}: no defaults", peer.label);

    // A declined form.
    let text = peer
        .text("test_elicitation", json!({"message": "Please decline"}))
        .await;
    assert_eq!(
        json_after(&text, "User response: ", &peer.label),
        json!({"action": "decline", "content": null}),
        "{}: the tool result carries the decline",
        peer.label
    );
    assert_eq!(
        peer.asks.take().len(),
        1,
        "{}: one declined ask",
        peer.label
    );
}

async fn check_elicitation_defaults(peer: &Peer) {
    let text = peer
        .text("test_elicitation_sep1034_defaults", json!({}))
        .await;
    assert!(
        text.starts_with("Elicitation completed: action=accept, content="),
        "{}: {text}",
        peer.label
    );
    assert_eq!(
        json_after(&text, "content=", &peer.label),
        sep1034_answer(),
        "{}: the tool result carries the form answer",
        peer.label
    );
    let asks = peer.asks.take();
    let [Ask::Form(context, form)] = asks.as_slice() else {
        panic!("{}: expected one form ask, got {asks:?}", peer.label);
    };
    peer.assert_context(context, "form");
    assert_eq!(
        Value::Object(form.defaults.clone()),
        json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true}),
        "{}: FormRequest::defaults has one default of each type",
        peer.label
    );
    let schema = serde_json::to_value(&form.schema).expect("schema serializes");
    assert_eq!(
        schema["properties"]["status"]["enum"],
        json!(["active", "inactive", "pending"]),
        "{}: the enum reaches the handler",
        peer.label
    );
}

async fn check_roots(peer: &Peer) {
    let roots_in = |text: &str| json_after(text, "", &peer.label)["roots"].clone();
    let text = peer.text("test_list_roots", json!({})).await;
    assert_eq!(
        roots_in(&text),
        json!([{"uri": "file:///tmp/switchboard-a", "name": "project a"}]),
        "{}: the server sees the client's roots",
        peer.label
    );

    // Changed roots: a session-era server is told (the TS server counts
    // the notifications); every server sees the new list when it asks.
    peer.roots.set(vec![
        root("file:///tmp/switchboard-b", "project b"),
        root("file:///tmp/switchboard-c", "project c"),
    ]);
    let wanted = json!([
        {"uri": "file:///tmp/switchboard-b", "name": "project b"},
        {"uri": "file:///tmp/switchboard-c", "name": "project c"},
    ]);
    let started = Instant::now();
    loop {
        let text = peer.text("test_list_roots", json!({})).await;
        let seen = json_after(&text, "", &peer.label);
        assert_eq!(seen["roots"], wanted, "{}: the new roots", peer.label);
        let notified = seen
            .get("listChanged")
            .is_none_or(|n| n.as_u64() >= Some(1));
        if notified {
            break;
        }
        assert!(
            started.elapsed() < STEP_TIMEOUT,
            "{}: roots.set() sent no notifications/roots/list_changed: {text}",
            peer.label
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// URL mode (TS server only): consent is asked with the full URL and its
/// domain, and the server's completion notice arrives as an event.
async fn check_url_elicitation(peer: &Peer) {
    let mut events = peer.client.events();
    assert_eq!(
        peer.text("test_url_elicitation", json!({})).await,
        "URL elicitation: action=accept, elicitationId=ts-url-elicitation-1",
        "{}",
        peer.label
    );
    let asks = peer.asks.take();
    let [Ask::Url(context, request)] = asks.as_slice() else {
        panic!("{}: expected one URL ask, got {asks:?}", peer.label);
    };
    peer.assert_context(context, "url");
    assert_eq!(request.url, "https://example.com/authorize?session=ts");
    assert_eq!(request.domain, "example.com");
    assert_eq!(
        request.elicitation_id.as_deref(),
        Some("ts-url-elicitation-1")
    );
    let seen = collect_events(&mut events, |seen| {
        seen.iter()
            .any(|e| matches!(e, Event::ElicitationComplete(_)))
    })
    .await;
    assert!(
        seen.iter().any(|e| matches!(e, Event::ElicitationComplete(done) if done.elicitation_id == "ts-url-elicitation-1")),
        "{}: no Event::ElicitationComplete for ts-url-elicitation-1 in {seen:?}",
        peer.label
    );
}

/// -32042 (TS server only): the call is refused with a URL; the handler
/// consents, the client waits for the server's completion notice (sent
/// 300 ms later, on no request) and retries, which succeeds.
async fn check_url_elicitation_required(peer: &Peer) {
    let started = Instant::now();
    assert_eq!(
        peer.text("test_url_elicitation_required", json!({})).await,
        "Authorized call succeeded",
        "{}",
        peer.label
    );
    // The wait for completion is STEP_TIMEOUT; coming back well before it
    // means the notification ended the wait.
    assert!(
        started.elapsed() < STEP_TIMEOUT / 2,
        "{}: the retry waited {:?}: notifications/elicitation/complete was missed",
        peer.label,
        started.elapsed()
    );
    let asks = peer.asks.take();
    let [Ask::Url(context, request)] = asks.as_slice() else {
        panic!("{}: expected one URL ask, got {asks:?}", peer.label);
    };
    assert_eq!(&*context.server, CLIENT_NAME);
    assert_eq!(
        request.url,
        "https://auth.example.com/authorize?session=required"
    );
    assert_eq!(request.domain, "auth.example.com");
    assert_eq!(request.elicitation_id.as_deref(), Some("ts-url-required-1"));
}

/// Several calls at once, each waiting on its own ask: every answer goes
/// back to the ask it belongs to, whichever handler finishes first.
async fn check_parallel_asks(peer: &Peer) {
    let prompts = ["slow one", "fast two", "slow three", "fast four"];
    let calls = prompts
        .iter()
        .map(|prompt| peer.text("test_sampling", json!({"prompt": prompt})));
    let texts = futures_util::future::join_all(calls).await;
    for (prompt, text) in prompts.iter().zip(&texts) {
        assert_eq!(
            text,
            &format!(
                "LLM response: sampled: {prompt} (model: switchboard-test-model, stopReason: endTurn)"
            ),
            "{}: each call gets the answer to its own ask",
            peer.label
        );
    }
    assert_eq!(
        peer.asks.take().len(),
        prompts.len(),
        "{}: one ask per call",
        peer.label
    );
}

/// A call that needs a form and a sample: asked one after the other in the
/// session era, both in one `input_required` round on 2026-07-28 (mcp
/// 2.x batches them).
async fn check_multi_ask(peer: &Peer) {
    assert_eq!(
        peer.text("test_multi_ask", json!({"prompt": "and one more"}))
            .await,
        "Multi: username=alice, LLM response: sampled: and one more \
         (model: switchboard-test-model, stopReason: endTurn)",
        "{}: the result carries both answers",
        peer.label
    );
    // In the session era the server asks in its order; in 2026-07-28 the
    // client answers in key order: either way one form and one sample.
    let asks = peer.asks.take();
    let form = asks.iter().find_map(|a| match a {
        Ask::Form(context, form) => Some((context, form)),
        _ => None,
    });
    let sampling = asks.iter().find_map(|a| match a {
        Ask::Sampling(context, _) => Some(context),
        _ => None,
    });
    let (Some((form_context, form)), Some(sampling_context), 2) = (form, sampling, asks.len())
    else {
        panic!("{}: expected a form and a sample; got {asks:?}", peer.label);
    };
    assert_eq!(form.message, "Who is asking?", "{}", peer.label);
    peer.assert_context(form_context, "form");
    peer.assert_context(sampling_context, "sampling");
    if peer.era() == Era::Modern {
        assert_ne!(
            form_context.input_key, sampling_context.input_key,
            "{}: two inputRequests keys",
            peer.label
        );
    }
}

// ---------------------------------------------------------------- tests

/// One test per feature for each target: `$era` is the era it must land in.
macro_rules! feature_tests {
    ($($name:ident: $target:expr, $era:expr;)*) => {$(
        mod $name {
            use super::*;

            async fn peer() -> Option<Peer> {
                Peer::start($target, $era).await
            }

            #[tokio::test]
            async fn simple_text() {
                let Some(peer) = peer().await else { return };
                check_simple_text(&peer).await;
                peer.close().await;
            }

            #[tokio::test]
            async fn progress() {
                let Some(peer) = peer().await else { return };
                check_progress(&peer).await;
                peer.close().await;
            }

            #[tokio::test]
            async fn logging() {
                let Some(peer) = peer().await else { return };
                check_logging(&peer).await;
                peer.close().await;
            }

            #[tokio::test]
            async fn sampling() {
                let Some(peer) = peer().await else { return };
                check_sampling(&peer).await;
                peer.close().await;
            }

            #[tokio::test]
            async fn elicitation() {
                let Some(peer) = peer().await else { return };
                check_elicitation(&peer).await;
                check_elicitation_defaults(&peer).await;
                peer.close().await;
            }

            #[tokio::test]
            async fn parallel_asks() {
                let Some(peer) = peer().await else { return };
                check_parallel_asks(&peer).await;
                peer.close().await;
            }

            #[tokio::test]
            async fn multi_ask() {
                let Some(peer) = peer().await else { return };
                check_multi_ask(&peer).await;
                peer.close().await;
            }

            #[tokio::test]
            async fn roots() {
                let Some(peer) = peer().await else { return };
                check_roots(&peer).await;
                peer.close().await;
            }
        }
    )*};
}

feature_tests! {
    ts_stdio: Target::TsStdio, Era::Legacy;
    ts_http: Target::TsHttp, Era::Legacy;
    py1_stdio: Target::PythonStdio { sdk: "1.30.0", mode: EraMode::Auto }, Era::Legacy;
    py1_http: Target::PythonHttp { sdk: "1.30.0" }, Era::Legacy;
    py2_stdio_modern: Target::PythonStdio { sdk: "2.3.0", mode: EraMode::Auto }, Era::Modern;
    py2_stdio_legacy: Target::PythonStdio { sdk: "2.3.0", mode: EraMode::Legacy }, Era::Legacy;
    py2_http_modern: Target::PythonHttp { sdk: "2.3.0" }, Era::Modern;
}

/// URL mode and -32042, which only the TS server has tools for.
async fn url_elicitation(target: Target) {
    let Some(peer) = Peer::start(target, Era::Legacy).await else {
        return;
    };
    check_url_elicitation(&peer).await;
    check_url_elicitation_required(&peer).await;
    peer.close().await;
}

#[tokio::test]
async fn ts_stdio_url_elicitation() {
    url_elicitation(Target::TsStdio).await;
}

#[tokio::test]
async fn ts_http_url_elicitation() {
    url_elicitation(Target::TsHttp).await;
}

/// A client with no handlers declares no sampling, elicitation or roots:
/// the server refuses to ask, or asks anyway and is refused by the client.
async fn without_handlers(target: Target, era: Era) {
    let label = format!("{target:?} without handlers");
    let connected = match target {
        Target::TsStdio => {
            let Some((node, script)) = support::ts_everything_server() else {
                return;
            };
            let config = StdioConfig::new(node)
                .arg(script)
                .env("SWITCHBOARD_CACHE", cache_dir());
            within(&label, Client::builder().name(CLIENT_NAME).connect(config)).await
        }
        Target::PythonStdio { sdk, mode } => {
            let Some(python) = support::python_sdk(sdk) else {
                return;
            };
            let config = StdioConfig::new(python)
                .arg(support::python_features_script())
                .arg("stdio");
            within(
                &label,
                Client::builder()
                    .name(CLIENT_NAME)
                    .era_mode(mode)
                    .connect(config),
            )
            .await
        }
        other => unreachable!("{other:?} is not used here"),
    };
    let client = connected.unwrap_or_else(|e| panic!("{label}: connect failed: {e}"));
    assert_eq!(client.era(), era, "{label}: era");
    for (tool, arguments, capability) in [
        ("test_sampling", json!({"prompt": "hi"}), "sampling"),
        ("test_elicitation", json!({"message": "hi"}), "elicitation"),
        ("test_list_roots", json!({}), "roots"),
    ] {
        let outcome = within(
            &format!("{label}: {tool}"),
            client.call_tool(tool, Some(args(arguments))),
        )
        .await;
        let refusal = match &outcome {
            Ok(result) if result.is_error == Some(true) => text_of(result),
            Ok(result) => panic!(
                "{label}: {tool} should be refused without the {capability} capability, got {}",
                text_of(result)
            ),
            Err(e) => e.to_string(),
        };
        // Refused by the server's own check ("does not support …", "did not
        // declare the …") or by this client answering the ask with -32601
        // ("did not declare `…`"): either way, not answered.
        assert!(
            (refusal.contains("did not declare") || refusal.contains("does not support"))
                && refusal.contains(capability),
            "{label}: {tool}: the refusal should name the missing {capability} capability: {refusal}"
        );
    }
    within(&format!("{label}: close"), client.close()).await;
}

#[tokio::test]
async fn ts_stdio_without_handlers() {
    without_handlers(Target::TsStdio, Era::Legacy).await;
}

#[tokio::test]
async fn py2_stdio_modern_without_handlers() {
    without_handlers(
        Target::PythonStdio {
            sdk: "2.3.0",
            mode: EraMode::Auto,
        },
        Era::Modern,
    )
    .await;
}

/// The server gives up on its ask after 300 ms and sends
/// `notifications/cancelled`: the client drops the handler's work (the
/// user's dialog would close) instead of letting it run to the end.
async fn server_cancels_ask(target: Target) {
    let Some(peer) = Peer::start(target, Era::Legacy).await else {
        return;
    };
    let text = peer
        .text(
            "test_elicitation_timeout",
            json!({"message": "slow: the server gives up"}),
        )
        .await;
    assert!(
        text.starts_with("Elicitation given up: "),
        "{}: {text}",
        peer.label
    );
    assert_eq!(peer.asks.take().len(), 1, "{}: one ask", peer.label);
    let started = Instant::now();
    while peer.asks.abandoned.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{}: the handler still runs 5 s after the server cancelled its request",
            peer.label
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    peer.close().await;
}

#[tokio::test]
async fn ts_stdio_server_cancels_ask() {
    server_cancels_ask(Target::TsStdio).await;
}

#[tokio::test]
async fn ts_http_server_cancels_ask() {
    server_cancels_ask(Target::TsHttp).await;
}

/// The client's log level reaches the server — `logging/setLevel` after
/// `initialize` (TS, which declares `logging`), `_meta` on each request
/// (2026-07-28) — and the server drops what is below it.
async fn log_level_filters(target: Target, era: Era) {
    let Some(peer) = Peer::start_with(
        target,
        era,
        Settings {
            log_level: LoggingLevel::Warning,
            ..Settings::default()
        },
    )
    .await
    else {
        return;
    };
    let mut events = peer.client.events();
    assert_eq!(
        peer.text("test_logging_tool", json!({})).await,
        "Logged 3 messages",
        "{}",
        peer.label
    );
    // The error line is the last one sent, so once it is here nothing else
    // is on its way.
    let seen = collect_events(&mut events, |seen| {
        seen.iter()
            .any(|e| matches!(e, Event::Log(log) if log.data == json!("log message 3 (error)")))
    })
    .await;
    let logged: Vec<&Value> = seen
        .iter()
        .filter_map(|e| match e {
            Event::Log(log) => Some(&log.data),
            _ => None,
        })
        .collect();
    assert_eq!(
        logged,
        [
            &json!("log message 2 (warning)"),
            &json!("log message 3 (error)")
        ],
        "{}: only warning and above",
        peer.label
    );
    peer.close().await;
}

#[tokio::test]
async fn ts_stdio_log_level_filters() {
    log_level_filters(Target::TsStdio, Era::Legacy).await;
}

#[tokio::test]
async fn ts_http_log_level_filters() {
    log_level_filters(Target::TsHttp, Era::Legacy).await;
}

#[tokio::test]
async fn py2_stdio_modern_log_level_filters() {
    log_level_filters(
        Target::PythonStdio {
            sdk: "2.3.0",
            mode: EraMode::Auto,
        },
        Era::Modern,
    )
    .await;
}

#[tokio::test]
async fn py2_http_modern_log_level_filters() {
    log_level_filters(Target::PythonHttp { sdk: "2.3.0" }, Era::Modern).await;
}

/// -32042 from the Python SDKs: the handler consents to the URL the error
/// names, and the call is retried as soon as the server's completion notice
/// arrives (over stdio it does in 2026-07-28 too).
async fn python_url_elicitation_required(target: Target, era: Era) {
    let Some(peer) = Peer::start(target, era).await else {
        return;
    };
    let started = Instant::now();
    assert_eq!(
        peer.text("test_url_elicitation_required", json!({})).await,
        "Authorized call succeeded",
        "{}",
        peer.label
    );
    let took = started.elapsed();
    assert!(
        took < STEP_TIMEOUT / 2,
        "{}: the retry waited {took:?}: notifications/elicitation/complete was missed",
        peer.label
    );
    let asks = peer.asks.take();
    let [Ask::Url(context, request)] = asks.as_slice() else {
        panic!("{}: expected one URL ask, got {asks:?}", peer.label);
    };
    assert_eq!(context.era, era, "{}", peer.label);
    assert_eq!(
        request.url,
        "https://auth.example.com/authorize?session=python"
    );
    assert_eq!(request.domain, "auth.example.com");
    assert_eq!(request.elicitation_id.as_deref(), Some("py-url-required-1"));
    peer.close().await;
}

#[tokio::test]
async fn py1_stdio_url_elicitation_required() {
    python_url_elicitation_required(
        Target::PythonStdio {
            sdk: "1.30.0",
            mode: EraMode::Auto,
        },
        Era::Legacy,
    )
    .await;
}

#[tokio::test]
async fn py1_http_url_elicitation_required() {
    python_url_elicitation_required(Target::PythonHttp { sdk: "1.30.0" }, Era::Legacy).await;
}

#[tokio::test]
async fn py2_stdio_legacy_url_elicitation_required() {
    python_url_elicitation_required(
        Target::PythonStdio {
            sdk: "2.3.0",
            mode: EraMode::Legacy,
        },
        Era::Legacy,
    )
    .await;
}

#[tokio::test]
async fn py2_stdio_modern_url_elicitation_required() {
    python_url_elicitation_required(
        Target::PythonStdio {
            sdk: "2.3.0",
            mode: EraMode::Auto,
        },
        Era::Modern,
    )
    .await;
}

/// A user who takes longer to answer than the request timeout: the call
/// waits on the client's own handler, not on the server, so it must not
/// time out. In 2026-07-28 no request is open while the handler runs; in
/// the session era the `tools/call` deadline keeps running meanwhile.
async fn slow_user(target: Target, era: Era) {
    let settings = Settings {
        request_timeout: Duration::from_secs(1),
        ..Settings::default()
    };
    let Some(peer) = Peer::start_with(target, era, settings).await else {
        return;
    };
    let text = peer
        .text(
            "test_elicitation",
            json!({"message": "pause: the user takes 2 s"}),
        )
        .await;
    assert_eq!(
        json_after(&text, "User response: ", &peer.label)["action"],
        "accept",
        "{}",
        peer.label
    );
    peer.close().await;
}

#[tokio::test]
async fn py2_stdio_modern_slow_user() {
    slow_user(
        Target::PythonStdio {
            sdk: "2.3.0",
            mode: EraMode::Auto,
        },
        Era::Modern,
    )
    .await;
}

#[tokio::test]
async fn ts_stdio_slow_user() {
    slow_user(Target::TsStdio, Era::Legacy).await;
}

#[tokio::test]
async fn py1_stdio_slow_user() {
    slow_user(
        Target::PythonStdio {
            sdk: "1.30.0",
            mode: EraMode::Auto,
        },
        Era::Legacy,
    )
    .await;
}

/// The five enum shapes of SEP-1330 (TS server only): the handler gets each
/// typed as its kind, and its answer passes both the client's check and the
/// SDK's schema validation.
async fn enum_forms(target: Target) {
    use switchboard::types::elicitation::PrimitiveSchemaDefinition as Field;

    let Some(peer) = Peer::start(target, Era::Legacy).await else {
        return;
    };
    let text = peer.text("test_elicitation_sep1330_enums", json!({})).await;
    assert_eq!(
        json_after(&text, "action=accept, content=", &peer.label),
        sep1330_answer(),
        "{}: the tool result carries the form answer",
        peer.label
    );
    let asks = peer.asks.take();
    let [Ask::Form(_, form)] = asks.as_slice() else {
        panic!("{}: expected one form ask, got {asks:?}", peer.label);
    };
    let kinds: Vec<(&str, &str)> = form
        .schema
        .properties
        .iter()
        .map(|(name, field)| {
            let kind = match field {
                Field::UntitledSingleSelectEnum(_) => "untitled single",
                Field::TitledSingleSelectEnum(_) => "titled single",
                Field::LegacyTitledEnum(_) => "legacy titled",
                Field::UntitledMultiSelectEnum(_) => "untitled multi",
                Field::TitledMultiSelectEnum(_) => "titled multi",
                _ => "other",
            };
            (name.as_str(), kind)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("untitledSingle", "untitled single"),
            ("titledSingle", "titled single"),
            ("legacyEnum", "legacy titled"),
            ("untitledMulti", "untitled multi"),
            ("titledMulti", "titled multi"),
        ],
        "{}: each field typed as its kind of enum",
        peer.label
    );
    peer.close().await;
}

#[tokio::test]
async fn ts_stdio_enum_forms() {
    enum_forms(Target::TsStdio).await;
}
