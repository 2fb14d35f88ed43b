//! Fake model-provider HTTP endpoints for tests: OpenAI's Responses and Chat
//! Completions APIs, Anthropic's Messages API and Google's Gemini API, each
//! answering from a script of [`Step`]s in that API's documented wire format,
//! non-streaming (JSON) and streaming (server-sent events).
//!
//! One file: test equipment speaking four wire formats side by side.
//!
//! Every request is recorded (body, headers, path) and its shape is checked
//! against what the real API accepts: a request the real API would refuse is
//! answered HTTP 400 with a JSON error body in that API's error format, and
//! the mistake is recorded in [`FakeProvider::problems`], which tests assert
//! is empty. A refused request does not consume a step of the script.

use std::collections::{HashSet, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// Largest accepted request body (64 MiB); larger ones get 413.
const BODY_LIMIT: usize = 64 << 20;
/// Cadence of [`Step::Endless`]'s text deltas.
const ENDLESS_CADENCE: Duration = Duration::from_millis(5);
/// The part of a tool call's arguments [`Step::CutMidCall`] sends before the
/// body ends.
const CUT_ARGUMENTS: &str = "{\"query\": \"unfin";

/// Which model API a [`FakeProvider`] speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// OpenAI's Responses API: `POST {base}/responses`, base ending in `/v1`.
    OpenAiResponses,
    /// OpenAI's Chat Completions API: `POST {base}/chat/completions`, base
    /// ending in `/v1`.
    OpenAiChat,
    /// Anthropic's Messages API: `POST {base}/v1/messages`.
    Anthropic,
    /// Google's Gemini API (v1beta): `POST
    /// {base}/v1beta/models/{model}:generateContent`, or
    /// `:streamGenerateContent?alt=sse` to stream.
    Gemini,
}

/// One scripted answer: each well-formed request takes the next step.
#[derive(Clone, Debug)]
pub enum Step {
    /// Answer with this text (streamed as several text deltas when streaming).
    Text(String),
    /// Ask for these tool calls, in order, in ONE answer (parallel calls):
    /// (name, arguments object). When streaming, each call's arguments JSON
    /// text is split into at least 3 deltas (Chat, Responses and Anthropic
    /// stream arguments as text; Gemini sends `functionCall` parts whole).
    Calls(Vec<(String, Value)>),
    /// A tool call whose arguments are this raw text (possibly not JSON at
    /// all). Gemini, which has no raw-text form, gets `args` as the JSON
    /// string value of the raw text; Anthropic's non-streaming `input` is the
    /// parsed text when it is JSON, else that string.
    RawCall {
        /// The tool's name.
        name: String,
        /// The arguments text, sent as it is.
        raw_arguments: String,
    },
    /// Answer this HTTP status with this body (served as `application/json`
    /// when it parses as JSON, else as text); with `retry_after`, a
    /// `retry-after: N` header (seconds). The step is consumed: the next
    /// request gets the next step.
    Status {
        /// The HTTP status code.
        status: u16,
        /// Seconds for a `retry-after` header, if any.
        retry_after: Option<u64>,
        /// The response body.
        body: String,
    },
    /// Streaming only: start a tool call of this name (name sent, part of its
    /// arguments sent), then end the response body without any terminal
    /// event. Gemini, which sends calls whole, gets a `functionCall` part
    /// and no `finishReason`. A non-streaming request taking this step is
    /// answered 400 and recorded as a problem.
    CutMidCall(String),
    /// Streaming only: text deltas forever (one every 5 ms) until the client
    /// goes away. A non-streaming request taking this step is answered 400
    /// and recorded as a problem.
    Endless,
    /// Anthropic, streaming: an SSE `event: error` with an
    /// `overloaded_error` after one text delta; Anthropic, not streaming:
    /// HTTP 529 with that error body (what the API does); the others: HTTP
    /// 503 with their error body.
    Overloaded,
}

/// A fake model API on a loopback port, served by a task of the current
/// tokio runtime until dropped.
#[derive(Debug)]
pub struct FakeProvider {
    api: Api,
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl FakeProvider {
    /// Serves `api` with `script` on 127.0.0.1:0. Requests beyond the script
    /// get HTTP 500 "script exhausted".
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(api: Api, script: Vec<Step>) -> FakeProvider {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0 for a fake provider");
        let addr = listener
            .local_addr()
            .expect("local address of a bound listener");
        let shared = Arc::new(Shared {
            api,
            script: Mutex::new(script.into()),
            log: Mutex::new(Log::default()),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let task = tokio::spawn(serve(listener, app));
        FakeProvider {
            api,
            addr,
            shared,
            task,
        }
    }

    /// The API this fake speaks.
    pub fn api(&self) -> Api {
        self.api
    }

    /// What a client takes as its base URL:
    ///  - OpenAiChat, OpenAiResponses: `http://127.0.0.1:PORT/v1` (the client
    ///    POSTs `{base}/chat/completions` or `{base}/responses`)
    ///  - Anthropic: `http://127.0.0.1:PORT` (the client POSTs
    ///    `{base}/v1/messages`)
    ///  - Gemini: `http://127.0.0.1:PORT` (the client POSTs
    ///    `{base}/v1beta/models/{model}:generateContent`, or
    ///    `{base}/v1beta/models/{model}:streamGenerateContent?alt=sse`)
    pub fn base_url(&self) -> String {
        match self.api {
            Api::OpenAiChat | Api::OpenAiResponses => format!("http://{}/v1", self.addr),
            Api::Anthropic | Api::Gemini => format!("http://{}", self.addr),
        }
    }

    /// Every request body received (parsed JSON), in order, including ones
    /// answered 400. A body that is not JSON is recorded as a JSON string of
    /// its text (lossily decoded); an unreadable one as `null`.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.log().requests.clone()
    }

    /// The headers of each request received (lowercased names), in order.
    pub fn headers(&self) -> Vec<Vec<(String, String)>> {
        self.shared.log().headers.clone()
    }

    /// The request paths (with query), in order.
    pub fn paths(&self) -> Vec<String> {
        self.shared.log().paths.clone()
    }

    /// Shape errors found (each also answered 400, or 404/405 for a wrong
    /// endpoint or method), in order, each as `request N: what is wrong`
    /// (N counting from 1); tests assert this is empty.
    pub fn problems(&self) -> Vec<String> {
        self.shared.log().problems.clone()
    }

    /// How many steps of the script are left.
    pub fn remaining(&self) -> usize {
        self.shared.script().len()
    }
}

impl Drop for FakeProvider {
    /// Aborts the server task, which ends its connections.
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// State shared between the [`FakeProvider`] and its server task.
#[derive(Debug)]
struct Shared {
    api: Api,
    script: Mutex<VecDeque<Step>>,
    log: Mutex<Log>,
}

/// What was received.
#[derive(Debug, Default)]
struct Log {
    requests: Vec<Value>,
    headers: Vec<Vec<(String, String)>>,
    paths: Vec<String>,
    problems: Vec<String>,
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn script(&self) -> MutexGuard<'_, VecDeque<Step>> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a request; its number, counting from 1.
    fn record(&self, path: String, headers: Vec<(String, String)>, body: Value) -> usize {
        let mut log = self.log();
        log.paths.push(path);
        log.headers.push(headers);
        log.requests.push(body);
        log.requests.len()
    }

    fn add_problems(&self, n: usize, problems: &[String]) {
        let mut log = self.log();
        for p in problems {
            log.problems.push(format!("request {n}: {p}"));
        }
    }
}

/// Accepts connections until aborted; aborting drops the connections.
/// (The fixture registry serves the same way.)
pub(crate) async fn serve(listener: TcpListener, app: Router) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let svc = hyper_util::service::TowerToHyperService::new(app.clone());
                    conns.spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                            .await;
                    });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// What the endpoint's path says.
struct Route {
    /// Gemini: whether the method streams.
    stream: Option<bool>,
    /// Gemini: the model named in the path.
    model: Option<String>,
}

/// Everything an answer needs to know about its request.
struct Ctx {
    api: Api,
    n: usize,
    model: String,
    stream: bool,
    include_usage: bool,
    prompt_tokens: u64,
    created: u64,
}

/// A tool call to send.
struct Call {
    name: String,
    /// The arguments as text (JSON, or raw).
    text: String,
    /// The arguments as JSON, when they were given as JSON.
    json: Option<Value>,
}

/// A complete answer.
enum Done {
    Text(String),
    Calls(Vec<Call>),
}

/// What to answer a well-formed request with (after [`Step::Status`]).
enum Reply {
    Done(Done),
    Cut(String),
    Endless,
    Overloaded,
}

/// Makes the next frame of an endless stream from its number.
type Ticker = Box<dyn FnMut(u64) -> Bytes + Send>;

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let api = shared.api;
    let (parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
    let headers = parts
        .headers
        .iter()
        .map(|(k, v)| {
            let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (k.as_str().to_ascii_lowercase(), v)
        })
        .collect();
    let raw = axum::body::to_bytes(body, BODY_LIMIT).await;
    let (body, parse_problem) = match &raw {
        Ok(b) => match serde_json::from_slice::<Value>(b) {
            Ok(v) => (v, None),
            Err(e) => (
                Value::String(String::from_utf8_lossy(b).into_owned()),
                Some(format!("the body is not valid JSON: {e}")),
            ),
        },
        Err(e) => (Value::Null, Some(format!("could not read the body: {e}"))),
    };
    let n = shared.record(path, headers, body.clone());

    let route = match route(api, &parts.method, &parts.uri) {
        Ok(r) => r,
        Err((status, msg)) => {
            shared.add_problems(n, std::slice::from_ref(&msg));
            return error_response(api, status, &msg);
        }
    };
    if raw.is_err() {
        let msg = parse_problem.unwrap_or_default();
        shared.add_problems(n, std::slice::from_ref(&msg));
        return error_response(api, StatusCode::PAYLOAD_TOO_LARGE, &msg);
    }
    let mut problems = Vec::new();
    match parse_problem {
        Some(p) => problems.push(p),
        None => {
            if api == Api::Anthropic {
                check_anthropic_headers(&parts.headers, &mut problems);
            }
            match api {
                Api::OpenAiChat => check_chat(&body, &mut problems),
                Api::OpenAiResponses => check_responses(&body, &mut problems),
                Api::Anthropic => check_anthropic(&body, &mut problems),
                Api::Gemini => check_gemini(&body, &mut problems),
            }
        }
    }
    if !problems.is_empty() {
        shared.add_problems(n, &problems);
        return error_response(api, StatusCode::BAD_REQUEST, &problems.join("; "));
    }

    let Some(step) = shared.script().pop_front() else {
        return error_response(api, StatusCode::INTERNAL_SERVER_ERROR, "script exhausted");
    };
    let ctx = Ctx {
        api,
        n,
        model: route
            .model
            .or_else(|| body.get("model").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default(),
        stream: route
            .stream
            .unwrap_or_else(|| body.get("stream") == Some(&Value::Bool(true))),
        include_usage: body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)),
        prompt_tokens: raw.as_ref().map_or(1, |b| b.len() as u64 / 4 + 1),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };
    let reply = match step {
        Step::Status {
            status,
            retry_after,
            body,
        } => return status_response(status, retry_after, body),
        Step::Text(t) => Reply::Done(Done::Text(t)),
        Step::Calls(calls) => Reply::Done(Done::Calls(
            calls
                .into_iter()
                .map(|(name, args)| Call {
                    name,
                    text: args.to_string(),
                    json: Some(args),
                })
                .collect(),
        )),
        Step::RawCall {
            name,
            raw_arguments,
        } => Reply::Done(Done::Calls(vec![Call {
            name,
            text: raw_arguments,
            json: None,
        }])),
        Step::CutMidCall(name) => Reply::Cut(name),
        Step::Endless => Reply::Endless,
        Step::Overloaded => Reply::Overloaded,
    };
    if !ctx.stream && matches!(reply, Reply::Cut(_) | Reply::Endless) {
        let msg = "the script's step answers only streaming requests, but this request does not \
                   ask to stream"
            .to_owned();
        shared.add_problems(n, std::slice::from_ref(&msg));
        return error_response(api, StatusCode::BAD_REQUEST, &msg);
    }
    match (reply, ctx.stream) {
        (Reply::Overloaded, false) => overloaded_response(api),
        (Reply::Done(done), false) => json_response(match api {
            Api::OpenAiChat => chat_json(&ctx, &done),
            Api::OpenAiResponses => responses_json(&ctx, &done),
            Api::Anthropic => anthropic_json(&ctx, &done),
            Api::Gemini => gemini_json(&ctx, &done),
        }),
        (reply, _) => match api {
            Api::OpenAiChat => chat_stream(&ctx, reply),
            Api::OpenAiResponses => responses_stream(&ctx, reply),
            Api::Anthropic => anthropic_stream(&ctx, reply),
            Api::Gemini => gemini_stream(&ctx, reply),
        },
    }
}

/// Checks the method and path against `api`'s endpoint.
fn route(api: Api, method: &Method, uri: &Uri) -> Result<Route, (StatusCode, String)> {
    let path = uri.path();
    let want = match api {
        Api::OpenAiChat => "/v1/chat/completions",
        Api::OpenAiResponses => "/v1/responses",
        Api::Anthropic => "/v1/messages",
        Api::Gemini => "/v1beta/models/{model}:generateContent or :streamGenerateContent?alt=sse",
    };
    let route = match api {
        Api::OpenAiChat | Api::OpenAiResponses | Api::Anthropic if path == want => Route {
            stream: None,
            model: None,
        },
        Api::Gemini => {
            let found = path
                .strip_prefix("/v1beta/models/")
                .and_then(|rest| rest.rsplit_once(':'))
                .filter(|(model, _)| !model.is_empty() && !model.contains('/'));
            match found {
                Some((model, "generateContent")) => Route {
                    stream: Some(false),
                    model: Some(model.to_owned()),
                },
                Some((model, "streamGenerateContent")) => {
                    let sse = uri
                        .query()
                        .is_some_and(|q| q.split('&').any(|kv| kv == "alt=sse"));
                    if !sse {
                        return Err((
                            StatusCode::BAD_REQUEST,
                            "streamGenerateContent without `alt=sse`: this fake streams only \
                             server-sent events (without it Gemini streams one JSON array)"
                                .to_owned(),
                        ));
                    }
                    Route {
                        stream: Some(true),
                        model: Some(model.to_owned()),
                    }
                }
                _ => {
                    return Err((
                        StatusCode::NOT_FOUND,
                        format!("no endpoint at {path}: this fake serves POST {want}"),
                    ));
                }
            }
        }
        _ => {
            return Err((
                StatusCode::NOT_FOUND,
                format!("no endpoint at {path}: this fake serves POST {want}"),
            ));
        }
    };
    if method != Method::POST {
        return Err((
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{method} {path}: this endpoint takes POST"),
        ));
    }
    Ok(route)
}

// ---------------------------------------------------------------------------
// Responses shared by the four APIs
// ---------------------------------------------------------------------------

fn json_response(body: Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// An error in `api`'s error format.
fn error_response(api: Api, status: StatusCode, message: &str) -> Response {
    let code = status.as_u16();
    let body = match api {
        Api::OpenAiChat | Api::OpenAiResponses => {
            let kind = if status.is_server_error() {
                "server_error"
            } else {
                "invalid_request_error"
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
        Api::Anthropic => {
            let kind = match code {
                404 => "not_found_error",
                413 => "request_too_large",
                529 => "overloaded_error",
                500..=599 => "api_error",
                _ => "invalid_request_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Api::Gemini => {
            let kind = match code {
                404 => "NOT_FOUND",
                405 => "UNIMPLEMENTED",
                503 => "UNAVAILABLE",
                500..=599 => "INTERNAL",
                _ => "INVALID_ARGUMENT",
            };
            json!({"error": {"code": code, "message": message, "status": kind}})
        }
    };
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn overloaded_response(api: Api) -> Response {
    match api {
        Api::Anthropic => match StatusCode::from_u16(529) {
            Ok(s) => error_response(api, s, "Overloaded"),
            Err(_) => error_response(api, StatusCode::SERVICE_UNAVAILABLE, "Overloaded"),
        },
        Api::Gemini => error_response(
            api,
            StatusCode::SERVICE_UNAVAILABLE,
            "The model is overloaded. Please try again later.",
        ),
        Api::OpenAiChat | Api::OpenAiResponses => error_response(
            api,
            StatusCode::SERVICE_UNAVAILABLE,
            "The server is overloaded or not ready yet.",
        ),
    }
}

fn status_response(status: u16, retry_after: Option<u64>, body: String) -> Response {
    let Ok(code) = StatusCode::from_u16(status) else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the script's Status step has an invalid status {status}"),
        )
            .into_response();
    };
    let content_type = if serde_json::from_str::<Value>(&body).is_ok() {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    let mut r = (code, [(header::CONTENT_TYPE, content_type)], body).into_response();
    if let Some(secs) = retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

/// A streamed body: `frames`, then (for [`Step::Endless`]) a frame from
/// `ticker` every 5 ms until the client goes away.
fn sse_response(frames: Vec<Bytes>, ticker: Option<Ticker>) -> Response {
    let head = futures_util::stream::iter(frames.into_iter().map(Ok::<Bytes, Infallible>));
    let body = match ticker {
        None => Body::from_stream(head),
        Some(ticker) => Body::from_stream(head.chain(futures_util::stream::unfold(
            (ticker, 0u64),
            |(mut ticker, k)| async move {
                tokio::time::sleep(ENDLESS_CADENCE).await;
                let frame = ticker(k);
                Some((Ok(frame), (ticker, k + 1)))
            },
        ))),
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `data: JSON` and a blank line.
fn sse_data(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// `event: NAME`, `data: JSON` with `"type": NAME` first, and a blank line.
fn sse_event(name: &str, data: Value) -> Bytes {
    let mut m = Map::new();
    m.insert("type".into(), Value::String(name.to_owned()));
    if let Value::Object(rest) = data {
        m.extend(rest);
    }
    Bytes::from(format!("event: {name}\ndata: {}\n\n", Value::Object(m)))
}

/// `s` in pieces of about a quarter each (whole characters); with `three`,
/// at least three pieces (empty ones first when `s` is shorter than that).
fn pieces(s: &str, three: bool) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let size = chars.len().div_ceil(4).max(1);
    let mut out: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    while three && out.len() < 3 {
        out.insert(0, String::new());
    }
    out
}

fn output_tokens(done: &Done) -> u64 {
    let len = match done {
        Done::Text(t) => t.len(),
        Done::Calls(calls) => calls.iter().map(|c| c.name.len() + c.text.len()).sum(),
    };
    len as u64 / 4 + 1
}

fn call_id(prefix: &str, n: usize, i: usize) -> String {
    format!("{prefix}{n}_{i}")
}

// ---------------------------------------------------------------------------
// OpenAI Chat Completions
// ---------------------------------------------------------------------------

fn chat_usage(ctx: &Ctx, out: u64) -> Value {
    json!({"prompt_tokens": ctx.prompt_tokens, "completion_tokens": out,
           "total_tokens": ctx.prompt_tokens + out})
}

fn chat_json(ctx: &Ctx, done: &Done) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let finish = match done {
        Done::Text(t) => {
            message.insert("content".into(), json!(t));
            message.insert("refusal".into(), Value::Null);
            "stop"
        }
        Done::Calls(calls) => {
            message.insert("content".into(), Value::Null);
            message.insert("refusal".into(), Value::Null);
            let calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    json!({"id": call_id("call_", ctx.n, i), "type": "function",
                           "function": {"name": c.name, "arguments": c.text}})
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
            "tool_calls"
        }
    };
    json!({
        "id": format!("chatcmpl-{}", ctx.n),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        "usage": chat_usage(ctx, output_tokens(done)),
    })
}

/// Makes `chat.completion.chunk`s.
#[derive(Clone)]
struct ChatChunks {
    id: String,
    created: u64,
    model: String,
    usage_null: bool,
}

impl ChatChunks {
    fn chunk(&self, delta: Value, finish: Option<&str>) -> Bytes {
        let mut c = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if self.usage_null
            && let Value::Object(m) = &mut c
        {
            m.insert("usage".into(), Value::Null);
        }
        sse_data(&c)
    }
}

fn chat_stream(ctx: &Ctx, reply: Reply) -> Response {
    let chunks = ChatChunks {
        id: format!("chatcmpl-{}", ctx.n),
        created: ctx.created,
        model: ctx.model.clone(),
        usage_null: ctx.include_usage,
    };
    let mut f = Vec::new();
    let first_call = |i: usize, name: &str| {
        json!({"tool_calls": [{"index": i, "id": call_id("call_", ctx.n, i), "type": "function",
                               "function": {"name": name, "arguments": ""}}]})
    };
    let args_delta = |i: usize, piece: &str| json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]});
    let done = match reply {
        Reply::Overloaded => return overloaded_response(ctx.api),
        Reply::Cut(name) => {
            f.push(chunks.chunk(json!({"role": "assistant", "content": null}), None));
            f.push(chunks.chunk(first_call(0, &name), None));
            f.push(chunks.chunk(args_delta(0, CUT_ARGUMENTS), None));
            return sse_response(f, None);
        }
        Reply::Endless => {
            f.push(chunks.chunk(
                json!({"role": "assistant", "content": "", "refusal": null}),
                None,
            ));
            let ticker: Ticker =
                Box::new(move |k| chunks.chunk(json!({"content": format!("tick {k} ")}), None));
            return sse_response(f, Some(ticker));
        }
        Reply::Done(done) => done,
    };
    let finish = match &done {
        Done::Text(t) => {
            f.push(chunks.chunk(
                json!({"role": "assistant", "content": "", "refusal": null}),
                None,
            ));
            for p in pieces(t, false) {
                f.push(chunks.chunk(json!({"content": p}), None));
            }
            "stop"
        }
        Done::Calls(calls) => {
            f.push(chunks.chunk(json!({"role": "assistant", "content": null}), None));
            for (i, c) in calls.iter().enumerate() {
                f.push(chunks.chunk(first_call(i, &c.name), None));
                for p in pieces(&c.text, true) {
                    f.push(chunks.chunk(args_delta(i, &p), None));
                }
            }
            "tool_calls"
        }
    };
    f.push(chunks.chunk(json!({}), Some(finish)));
    if ctx.include_usage {
        f.push(sse_data(&json!({
            "id": chunks.id, "object": "chat.completion.chunk", "created": ctx.created,
            "model": ctx.model, "choices": [],
            "usage": chat_usage(ctx, output_tokens(&done)),
        })));
    }
    f.push(Bytes::from_static(b"data: [DONE]\n\n"));
    sse_response(f, None)
}

// ---------------------------------------------------------------------------
// OpenAI Responses
// ---------------------------------------------------------------------------

fn responses_object(ctx: &Ctx, status: &str, output: Vec<Value>, out: Option<u64>) -> Value {
    let usage = out.map(|out| {
        json!({"input_tokens": ctx.prompt_tokens, "input_tokens_details": {"cached_tokens": 0},
               "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
               "total_tokens": ctx.prompt_tokens + out})
    });
    json!({
        "id": format!("resp_{}", ctx.n), "object": "response", "created_at": ctx.created,
        "status": status, "error": null, "incomplete_details": null, "model": ctx.model,
        "output": output, "parallel_tool_calls": true, "usage": usage,
    })
}

fn message_item(ctx: &Ctx, text: &str, status: &str) -> Value {
    let content = if status == "completed" {
        json!([{"type": "output_text", "text": text, "annotations": []}])
    } else {
        json!([])
    };
    json!({"type": "message", "id": format!("msg_{}", ctx.n), "status": status,
           "role": "assistant", "content": content})
}

fn function_item(ctx: &Ctx, i: usize, name: &str, arguments: &str, status: &str) -> Value {
    json!({"type": "function_call", "id": call_id("fc_", ctx.n, i),
           "call_id": call_id("call_", ctx.n, i), "name": name, "arguments": arguments,
           "status": status})
}

fn responses_output(ctx: &Ctx, done: &Done) -> Vec<Value> {
    match done {
        Done::Text(t) => vec![message_item(ctx, t, "completed")],
        Done::Calls(calls) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| function_item(ctx, i, &c.name, &c.text, "completed"))
            .collect(),
    }
}

fn responses_json(ctx: &Ctx, done: &Done) -> Value {
    responses_object(
        ctx,
        "completed",
        responses_output(ctx, done),
        Some(output_tokens(done)),
    )
}

/// Responses API events, numbered.
struct Events {
    seq: u64,
    frames: Vec<Bytes>,
}

impl Events {
    fn push(&mut self, name: &str, mut data: Value) {
        if let Value::Object(m) = &mut data {
            m.insert("sequence_number".into(), json!(self.seq));
        }
        self.frames.push(sse_event(name, data));
        self.seq += 1;
    }
}

fn responses_stream(ctx: &Ctx, reply: Reply) -> Response {
    if let Reply::Overloaded = reply {
        return overloaded_response(ctx.api);
    }
    let mut ev = Events {
        seq: 0,
        frames: Vec::new(),
    };
    let created = json!({"response": responses_object(ctx, "in_progress", vec![], None)});
    ev.push("response.created", created.clone());
    ev.push("response.in_progress", created);
    let msg_id = format!("msg_{}", ctx.n);
    let text_at = json!({"item_id": msg_id, "output_index": 0, "content_index": 0});
    let with = |base: &Value, extra: Value| {
        let mut m = base.as_object().cloned().unwrap_or_default();
        if let Value::Object(extra) = extra {
            m.extend(extra);
        }
        Value::Object(m)
    };
    let start_message = |ev: &mut Events| {
        ev.push(
            "response.output_item.added",
            json!({"output_index": 0, "item": message_item(ctx, "", "in_progress")}),
        );
        ev.push(
            "response.content_part.added",
            with(
                &text_at,
                json!({"part": {"type": "output_text", "text": "", "annotations": []}}),
            ),
        );
    };
    let done = match reply {
        Reply::Overloaded => return overloaded_response(ctx.api),
        Reply::Cut(name) => {
            ev.push(
                "response.output_item.added",
                json!({"output_index": 0, "item": function_item(ctx, 0, &name, "", "in_progress")}),
            );
            ev.push(
                "response.function_call_arguments.delta",
                json!({"item_id": call_id("fc_", ctx.n, 0), "output_index": 0,
                       "delta": CUT_ARGUMENTS}),
            );
            return sse_response(ev.frames, None);
        }
        Reply::Endless => {
            start_message(&mut ev);
            let seq0 = ev.seq;
            let at = text_at.clone();
            let ticker: Ticker = Box::new(move |k| {
                let mut data = at.as_object().cloned().unwrap_or_default();
                data.insert("delta".into(), json!(format!("tick {k} ")));
                data.insert("logprobs".into(), json!([]));
                data.insert("sequence_number".into(), json!(seq0 + k));
                sse_event("response.output_text.delta", Value::Object(data))
            });
            return sse_response(ev.frames, Some(ticker));
        }
        Reply::Done(done) => done,
    };
    match &done {
        Done::Text(t) => {
            start_message(&mut ev);
            for p in pieces(t, false) {
                ev.push(
                    "response.output_text.delta",
                    with(&text_at, json!({"delta": p, "logprobs": []})),
                );
            }
            ev.push(
                "response.output_text.done",
                with(&text_at, json!({"text": t, "logprobs": []})),
            );
            ev.push(
                "response.content_part.done",
                with(
                    &text_at,
                    json!({"part": {"type": "output_text", "text": t, "annotations": []}}),
                ),
            );
            ev.push(
                "response.output_item.done",
                json!({"output_index": 0, "item": message_item(ctx, t, "completed")}),
            );
        }
        Done::Calls(calls) => {
            for (i, c) in calls.iter().enumerate() {
                let item_id = call_id("fc_", ctx.n, i);
                ev.push(
                    "response.output_item.added",
                    json!({"output_index": i,
                           "item": function_item(ctx, i, &c.name, "", "in_progress")}),
                );
                for p in pieces(&c.text, true) {
                    ev.push(
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": i, "delta": p}),
                    );
                }
                ev.push(
                    "response.function_call_arguments.done",
                    json!({"item_id": item_id, "output_index": i, "arguments": c.text}),
                );
                ev.push(
                    "response.output_item.done",
                    json!({"output_index": i,
                           "item": function_item(ctx, i, &c.name, &c.text, "completed")}),
                );
            }
        }
    }
    ev.push(
        "response.completed",
        json!({"response": responses_json(ctx, &done)}),
    );
    sse_response(ev.frames, None)
}

// ---------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------

fn anthropic_content(ctx: &Ctx, done: &Done) -> (Vec<Value>, &'static str) {
    match done {
        Done::Text(t) => (vec![json!({"type": "text", "text": t})], "end_turn"),
        Done::Calls(calls) => {
            let blocks = calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let input = c
                        .json
                        .clone()
                        .or_else(|| serde_json::from_str(&c.text).ok())
                        .unwrap_or_else(|| Value::String(c.text.clone()));
                    json!({"type": "tool_use", "id": call_id("toolu_", ctx.n, i),
                           "name": c.name, "input": input})
                })
                .collect();
            (blocks, "tool_use")
        }
    }
}

fn anthropic_message(ctx: &Ctx, content: Vec<Value>, stop: Option<&str>, out: u64) -> Value {
    json!({
        "id": format!("msg_{}", ctx.n), "type": "message", "role": "assistant",
        "model": ctx.model, "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": ctx.prompt_tokens, "output_tokens": out,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    })
}

fn anthropic_json(ctx: &Ctx, done: &Done) -> Value {
    let (content, stop) = anthropic_content(ctx, done);
    anthropic_message(ctx, content, Some(stop), output_tokens(done))
}

fn anthropic_stream(ctx: &Ctx, reply: Reply) -> Response {
    let mut f = vec![
        sse_event(
            "message_start",
            json!({"message": anthropic_message(ctx, vec![], None, 1)}),
        ),
        sse_event("ping", json!({})),
    ];
    let start = |index: usize, block: Value| {
        sse_event(
            "content_block_start",
            json!({"index": index, "content_block": block}),
        )
    };
    let text_block = json!({"type": "text", "text": ""});
    let text = |index: usize, t: &str| {
        sse_event(
            "content_block_delta",
            json!({"index": index, "delta": {"type": "text_delta", "text": t}}),
        )
    };
    let json_delta = |index: usize, t: &str| {
        sse_event(
            "content_block_delta",
            json!({"index": index, "delta": {"type": "input_json_delta", "partial_json": t}}),
        )
    };
    let stop = |index: usize| sse_event("content_block_stop", json!({"index": index}));
    let use_block = |i: usize, name: &str| json!({"type": "tool_use", "id": call_id("toolu_", ctx.n, i), "name": name, "input": {}});
    let done = match reply {
        Reply::Overloaded => {
            f.push(start(0, text_block));
            f.push(text(0, "Hel"));
            f.push(sse_event(
                "error",
                json!({"error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ));
            return sse_response(f, None);
        }
        Reply::Cut(name) => {
            f.push(start(0, use_block(0, &name)));
            f.push(json_delta(0, ""));
            f.push(json_delta(0, CUT_ARGUMENTS));
            return sse_response(f, None);
        }
        Reply::Endless => {
            f.push(start(0, text_block));
            let ticker: Ticker = Box::new(|k| {
                sse_event(
                    "content_block_delta",
                    json!({"index": 0, "delta": {"type": "text_delta",
                                                 "text": format!("tick {k} ")}}),
                )
            });
            return sse_response(f, Some(ticker));
        }
        Reply::Done(done) => done,
    };
    let reason = match &done {
        Done::Text(t) => {
            f.push(start(0, text_block));
            for p in pieces(t, false) {
                f.push(text(0, &p));
            }
            f.push(stop(0));
            "end_turn"
        }
        Done::Calls(calls) => {
            for (i, c) in calls.iter().enumerate() {
                f.push(start(i, use_block(i, &c.name)));
                for p in pieces(&c.text, true) {
                    f.push(json_delta(i, &p));
                }
                f.push(stop(i));
            }
            "tool_use"
        }
    };
    f.push(sse_event(
        "message_delta",
        json!({"delta": {"stop_reason": reason, "stop_sequence": null},
               "usage": {"output_tokens": output_tokens(&done)}}),
    ));
    f.push(sse_event("message_stop", json!({})));
    sse_response(f, None)
}

// ---------------------------------------------------------------------------
// Gemini
// ---------------------------------------------------------------------------

fn gemini_call_part(ctx: &Ctx, i: usize, c: &Call) -> Value {
    let args = c
        .json
        .clone()
        .unwrap_or_else(|| Value::String(c.text.clone()));
    json!({"functionCall": {"name": c.name, "args": args, "id": call_id("call_", ctx.n, i)}})
}

/// Makes `GenerateContentResponse`s.
#[derive(Clone)]
struct GeminiChunks {
    usage: Value,
    model: String,
    id: String,
}

impl GeminiChunks {
    fn new(ctx: &Ctx, out: u64) -> GeminiChunks {
        GeminiChunks {
            usage: json!({"promptTokenCount": ctx.prompt_tokens, "candidatesTokenCount": out,
                          "totalTokenCount": ctx.prompt_tokens + out}),
            model: ctx.model.clone(),
            id: format!("resp-{}", ctx.n),
        }
    }

    fn response(&self, parts: Vec<Value>, finish: bool) -> Value {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}});
        if let Value::Object(m) = &mut candidate {
            if finish {
                m.insert("finishReason".into(), json!("STOP"));
            }
            m.insert("index".into(), json!(0));
        }
        json!({"candidates": [candidate], "usageMetadata": self.usage,
               "modelVersion": self.model, "responseId": self.id})
    }

    /// One SSE event; Gemini ends its events with CRLF CRLF.
    fn frame(&self, parts: Vec<Value>, finish: bool) -> Bytes {
        Bytes::from(format!("data: {}\r\n\r\n", self.response(parts, finish)))
    }
}

fn gemini_json(ctx: &Ctx, done: &Done) -> Value {
    let parts = match done {
        Done::Text(t) => vec![json!({"text": t})],
        Done::Calls(calls) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| gemini_call_part(ctx, i, c))
            .collect(),
    };
    GeminiChunks::new(ctx, output_tokens(done)).response(parts, true)
}

fn gemini_stream(ctx: &Ctx, reply: Reply) -> Response {
    let done = match reply {
        Reply::Overloaded => return overloaded_response(ctx.api),
        Reply::Cut(name) => {
            let chunks = GeminiChunks::new(ctx, 1);
            let part = json!({"functionCall": {"name": name, "args": {},
                                               "id": call_id("call_", ctx.n, 0)}});
            return sse_response(vec![chunks.frame(vec![part], false)], None);
        }
        Reply::Endless => {
            let chunks = GeminiChunks::new(ctx, 1);
            let ticker: Ticker =
                Box::new(move |k| chunks.frame(vec![json!({"text": format!("tick {k} ")})], false));
            return sse_response(Vec::new(), Some(ticker));
        }
        Reply::Done(done) => done,
    };
    let chunks = GeminiChunks::new(ctx, output_tokens(&done));
    let parts: Vec<Value> = match &done {
        Done::Text(t) => pieces(t, false)
            .into_iter()
            .map(|p| json!({"text": p}))
            .collect(),
        Done::Calls(calls) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| gemini_call_part(ctx, i, c))
            .collect(),
    };
    let parts = if parts.is_empty() {
        vec![json!({"text": ""})]
    } else {
        parts
    };
    let last = parts.len() - 1;
    let frames = parts
        .into_iter()
        .enumerate()
        .map(|(k, p)| chunks.frame(vec![p], k == last))
        .collect();
    sse_response(frames, None)
}

// ---------------------------------------------------------------------------
// Shape checks shared by the four APIs
// ---------------------------------------------------------------------------

/// The JSON type of `v`, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `key` of `v` in camelCase or snake_case (Gemini's JSON accepts both).
fn field<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    v.get(camel).or_else(|| v.get(snake))
}

fn check_model(b: &Value, p: &mut Vec<String>) {
    match b.get("model") {
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(Value::String(_)) => p.push("`model` must not be empty".into()),
        Some(v) => p.push(format!("`model` must be a string, not {}", kind(v))),
        None => p.push("`model` is required".into()),
    }
}

fn check_stream_flag(b: &Value, p: &mut Vec<String>) {
    if let Some(v) = b.get("stream")
        && !v.is_boolean()
        && !v.is_null()
    {
        p.push(format!("`stream` must be a boolean, not {}", kind(v)));
    }
}

/// The body's `tools` array, if any.
fn tools_of<'a>(b: &'a Value, p: &mut Vec<String>) -> &'a [Value] {
    match b.get("tools") {
        None | Some(Value::Null) => &[],
        Some(Value::Array(a)) => a,
        Some(v) => {
            p.push(format!("`tools` must be an array, not {}", kind(v)));
            &[]
        }
    }
}

// ---------------------------------------------------------------------------
// Chat Completions checks
// ---------------------------------------------------------------------------

fn check_chat(b: &Value, p: &mut Vec<String>) {
    check_model(b, p);
    check_stream_flag(b, p);
    if b.get("stream_options").is_some_and(|v| !v.is_null())
        && b.get("stream") != Some(&Value::Bool(true))
    {
        p.push("`stream_options` is only allowed when `stream` is true".into());
    }
    match b.get("messages") {
        Some(Value::Array(msgs)) if !msgs.is_empty() => check_chat_messages(msgs, p),
        Some(Value::Array(_)) => p.push("`messages` must not be empty".into()),
        Some(v) => p.push(format!("`messages` must be an array, not {}", kind(v))),
        None => p.push("`messages` is required".into()),
    }
    for (i, t) in tools_of(b, p).iter().enumerate() {
        if str_of(t, "type") != Some("function") {
            p.push(format!("tools[{i}].type must be \"function\""));
        }
        match t.get("function") {
            Some(f @ Value::Object(_)) => {
                if !f.get("name").is_some_and(Value::is_string) {
                    p.push(format!("tools[{i}].function.name is required (a string)"));
                }
                match f.get("parameters") {
                    Some(Value::Object(_)) => {}
                    Some(v) => p.push(format!(
                        "tools[{i}].function.parameters must be a JSON Schema object, not {}",
                        kind(v)
                    )),
                    None => p.push(format!(
                        "tools[{i}].function.parameters is required (a JSON Schema object)"
                    )),
                }
            }
            _ if t.get("name").is_some() => p.push(format!(
                "tools[{i}] has `name` at the top level, the Responses API's shape; Chat \
                 Completions wants {{\"type\":\"function\",\"function\":{{\"name\",\
                 \"description\",\"parameters\"}}}}"
            )),
            _ => p.push(format!(
                "tools[{i}].function is required (an object with name and parameters)"
            )),
        }
    }
}

fn check_chat_content(m: &Value, at: &str, optional: bool, p: &mut Vec<String>) {
    match m.get("content") {
        None | Some(Value::Null) if optional => {}
        None | Some(Value::Null) => p.push(format!("{at}.content is required")),
        Some(Value::String(_)) => {}
        Some(Value::Array(parts)) => {
            for (k, part) in parts.iter().enumerate() {
                match str_of(part, "type") {
                    Some("text") => {
                        if !part.get("text").is_some_and(Value::is_string) {
                            p.push(format!("{at}.content[{k}].text is required (a string)"));
                        }
                    }
                    Some("image_url" | "input_audio" | "file" | "refusal") => {}
                    Some(t) => p.push(format!(
                        "{at}.content[{k}].type {t:?} is not a content part type (text, \
                         image_url, input_audio, file)"
                    )),
                    None => p.push(format!("{at}.content[{k}].type is required")),
                }
            }
        }
        Some(v) => p.push(format!(
            "{at}.content must be a string or an array of parts, not {}",
            kind(v)
        )),
    }
}

/// The ids of an assistant message's tool calls, after checking them.
fn chat_tool_calls(m: &Value, i: usize, p: &mut Vec<String>) -> Vec<String> {
    let calls = match m.get("tool_calls") {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(calls)) => calls,
        Some(v) => {
            p.push(format!(
                "messages[{i}].tool_calls must be an array, not {}",
                kind(v)
            ));
            return Vec::new();
        }
    };
    let mut ids = Vec::new();
    for (k, c) in calls.iter().enumerate() {
        let at = format!("messages[{i}].tool_calls[{k}]");
        match str_of(c, "id") {
            Some(id) => ids.push(id.to_owned()),
            None => p.push(format!("{at}.id is required (a string)")),
        }
        if str_of(c, "type") != Some("function") {
            p.push(format!("{at}.type must be \"function\""));
        }
        if c.pointer("/function/name")
            .and_then(Value::as_str)
            .is_none()
        {
            p.push(format!("{at}.function.name is required (a string)"));
        }
        match c.pointer("/function/arguments") {
            Some(Value::String(_)) => {}
            Some(v) => p.push(format!(
                "{at}.function.arguments must be a string of JSON text, not {}",
                kind(v)
            )),
            None => p.push(format!("{at}.function.arguments is required (a string)")),
        }
    }
    ids
}

fn check_chat_messages(msgs: &[Value], p: &mut Vec<String>) {
    // The calls of the last assistant message not yet answered, and where.
    let mut pending: Vec<String> = Vec::new();
    let mut pending_from = 0;
    let mut earlier: HashSet<String> = HashSet::new();
    let mut answered: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        let at = format!("messages[{i}]");
        let Some(role) = str_of(m, "role") else {
            p.push(format!("{at}.role is required (a string)"));
            continue;
        };
        match role {
            "tool" => {
                match str_of(m, "tool_call_id") {
                    None => p.push(format!("{at}.tool_call_id is required (a string)")),
                    Some(id) => {
                        if let Some(k) = pending.iter().position(|x| x == id) {
                            pending.remove(k);
                            answered.insert(id.to_owned());
                        } else if answered.contains(id) {
                            p.push(format!("{at} answers tool call {id:?} a second time"));
                        } else if earlier.contains(id) {
                            p.push(format!(
                                "{at} answers tool call {id:?} of an earlier turn: tool messages \
                                 must follow the assistant message whose tool_calls they answer"
                            ));
                        } else {
                            p.push(format!(
                                "{at}.tool_call_id {id:?} matches no tool_calls[].id of an \
                                 earlier assistant message"
                            ));
                        }
                    }
                }
                check_chat_content(m, &at, false, p);
            }
            "user" | "assistant" => {
                if !pending.is_empty() {
                    p.push(format!(
                        "messages[{pending_from}] asks for tool call(s) {} that no tool message \
                         answers before {at} ({role})",
                        pending.join(", ")
                    ));
                    pending.clear();
                }
                if role == "assistant" {
                    let ids = chat_tool_calls(m, i, p);
                    for id in &ids {
                        if !earlier.insert(id.clone()) {
                            p.push(format!("{at} reuses tool call id {id:?}"));
                        }
                    }
                    check_chat_content(m, &at, !ids.is_empty(), p);
                    pending = ids;
                    pending_from = i;
                } else {
                    check_chat_content(m, &at, false, p);
                }
            }
            "system" | "developer" => check_chat_content(m, &at, false, p),
            other => p.push(format!(
                "{at}.role {other:?} is not one of system, developer, user, assistant, tool"
            )),
        }
    }
    if !pending.is_empty() {
        p.push(format!(
            "messages[{pending_from}] asks for tool call(s) {} that no tool message answers",
            pending.join(", ")
        ));
    }
}

// ---------------------------------------------------------------------------
// Responses checks
// ---------------------------------------------------------------------------

fn check_responses(b: &Value, p: &mut Vec<String>) {
    check_model(b, p);
    check_stream_flag(b, p);
    if let Some(v) = b.get("instructions")
        && !v.is_string()
        && !v.is_null()
    {
        p.push(format!("`instructions` must be a string, not {}", kind(v)));
    }
    let chained = b.get("previous_response_id").is_some_and(Value::is_string);
    match b.get("input") {
        Some(Value::String(_)) => {}
        Some(Value::Array(items)) => check_responses_input(items, chained, p),
        Some(v) => p.push(format!(
            "`input` must be a string or an array of items, not {}",
            kind(v)
        )),
        None if chained => {}
        None => p.push("`input` is required".into()),
    }
    for (i, t) in tools_of(b, p).iter().enumerate() {
        match str_of(t, "type") {
            Some("function") => {
                if t.get("function").is_some() {
                    p.push(format!(
                        "tools[{i}] nests `function`, the Chat Completions shape; the Responses \
                         API wants {{\"type\":\"function\",\"name\",\"description\",\
                         \"parameters\"}} at the top level"
                    ));
                } else if !t.get("name").is_some_and(Value::is_string) {
                    p.push(format!("tools[{i}].name is required (a string)"));
                }
                if let Some(v) = t.get("parameters")
                    && !v.is_object()
                    && !v.is_null()
                {
                    p.push(format!(
                        "tools[{i}].parameters must be a JSON Schema object, not {}",
                        kind(v)
                    ));
                }
            }
            Some(_) => {} // built-in tools: web_search, file_search, mcp, …
            None => p.push(format!("tools[{i}].type is required")),
        }
    }
}

fn check_responses_input(items: &[Value], chained: bool, p: &mut Vec<String>) {
    let mut calls: Vec<String> = Vec::new();
    let mut outputs: HashSet<String> = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        match (str_of(item, "type"), item.get("role")) {
            (None | Some("message"), Some(role)) => {
                let role = role.as_str().unwrap_or_default();
                let allowed: &[&str] = match role {
                    "user" | "system" | "developer" => &["input_text", "input_image", "input_file"],
                    "assistant" => &["output_text", "refusal"],
                    _ => {
                        p.push(format!(
                            "{at}.role {role:?} is not one of user, system, developer, assistant"
                        ));
                        continue;
                    }
                };
                match item.get("content") {
                    Some(Value::String(_)) => {}
                    Some(Value::Array(parts)) => {
                        for (k, part) in parts.iter().enumerate() {
                            let t = str_of(part, "type").unwrap_or_default();
                            if !allowed.contains(&t) {
                                p.push(format!(
                                    "{at}.content[{k}].type {t:?} is not allowed in a {role} \
                                     message (allowed: {})",
                                    allowed.join(", ")
                                ));
                            } else if matches!(t, "input_text" | "output_text")
                                && !part.get("text").is_some_and(Value::is_string)
                            {
                                p.push(format!("{at}.content[{k}].text is required"));
                            }
                        }
                    }
                    Some(v) => p.push(format!(
                        "{at}.content must be a string or an array of parts, not {}",
                        kind(v)
                    )),
                    None => p.push(format!("{at}.content is required")),
                }
            }
            (Some("message"), None) => p.push(format!("{at}.role is required")),
            (Some("function_call"), _) => {
                for key in ["call_id", "name", "arguments"] {
                    if !item.get(key).is_some_and(Value::is_string) {
                        p.push(format!("{at}.{key} is required (a string)"));
                    }
                }
                if let Some(id) = str_of(item, "call_id") {
                    if calls.iter().any(|c| c == id) {
                        p.push(format!("{at} repeats function call {id:?}"));
                    }
                    calls.push(id.to_owned());
                }
            }
            (Some("function_call_output"), _) => {
                match item.get("output") {
                    Some(Value::String(_) | Value::Array(_)) => {}
                    Some(v) => p.push(format!(
                        "{at}.output must be a string or an array of content parts, not {}",
                        kind(v)
                    )),
                    None => p.push(format!("{at}.output is required")),
                }
                match str_of(item, "call_id") {
                    None => p.push(format!("{at}.call_id is required (a string)")),
                    Some(id) => {
                        if !outputs.insert(id.to_owned()) {
                            p.push(format!("{at} answers function call {id:?} a second time"));
                        } else if !chained && !calls.iter().any(|c| c == id) {
                            p.push(format!(
                                "{at}.call_id {id:?} matches no function_call item earlier in \
                                 `input`"
                            ));
                        }
                    }
                }
            }
            (Some("reasoning" | "item_reference"), _) => {}
            (Some(t), _) => p.push(format!("{at}.type {t:?} is not an input item type")),
            (None, None) => p.push(format!("{at} has neither `type` nor `role`")),
        }
    }
    if !chained {
        for id in calls.iter().filter(|c| !outputs.contains(*c)) {
            p.push(format!(
                "no function_call_output in `input` for function call {id:?}"
            ));
        }
    }
}

// ---------------------------------------------------------------------------
// Anthropic checks
// ---------------------------------------------------------------------------

fn check_anthropic_headers(headers: &HeaderMap, p: &mut Vec<String>) {
    if !headers.contains_key("anthropic-version") {
        p.push("the anthropic-version header is required".into());
    }
}

fn check_anthropic(b: &Value, p: &mut Vec<String>) {
    check_model(b, p);
    check_stream_flag(b, p);
    match b.get("max_tokens") {
        Some(v) if v.as_u64().is_some_and(|n| n >= 1) => {}
        Some(v) => p.push(format!("`max_tokens` must be a positive integer, not {v}")),
        None => p.push("`max_tokens` is required".into()),
    }
    match b.get("system") {
        None | Some(Value::Null | Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for (k, blk) in blocks.iter().enumerate() {
                if str_of(blk, "type") != Some("text") || str_of(blk, "text").is_none() {
                    p.push(format!(
                        "system[{k}] must be a text block {{\"type\":\"text\",\"text\":…}}"
                    ));
                }
            }
        }
        Some(v) => p.push(format!(
            "`system` must be a string or an array of text blocks, not {}",
            kind(v)
        )),
    }
    match b.get("messages") {
        Some(Value::Array(msgs)) if !msgs.is_empty() => check_anthropic_messages(msgs, p),
        Some(Value::Array(_)) => p.push("`messages` must not be empty".into()),
        Some(v) => p.push(format!("`messages` must be an array, not {}", kind(v))),
        None => p.push("`messages` is required".into()),
    }
    for (i, t) in tools_of(b, p).iter().enumerate() {
        if !t.get("name").is_some_and(Value::is_string) {
            p.push(format!("tools[{i}].name is required (a string)"));
        }
        if matches!(str_of(t, "type"), Some(ty) if ty != "custom") {
            continue; // server and client tools of Anthropic's: bash, web_search, …
        }
        if t.get("function").is_some() || t.get("parameters").is_some() {
            p.push(format!(
                "tools[{i}] is in OpenAI's shape; Anthropic wants {{\"name\",\"description\",\
                 \"input_schema\"}}"
            ));
        } else if !t.get("input_schema").is_some_and(Value::is_object) {
            p.push(format!(
                "tools[{i}].input_schema is required (a JSON Schema object)"
            ));
        }
    }
}

/// Checks one block of an Anthropic message; the `tool_use` id it holds.
fn check_anthropic_block(blk: &Value, at: &str, role: &str, p: &mut Vec<String>) -> Option<String> {
    let nonblank = |v: &Value| v.as_str().is_some_and(|t| !t.trim().is_empty());
    match str_of(blk, "type") {
        Some("text") => {
            if !blk.get("text").is_some_and(nonblank) {
                p.push(format!(
                    "{at}: text content blocks must contain non-whitespace text"
                ));
            }
        }
        Some("image" | "document") => {
            if !blk.get("source").is_some_and(Value::is_object) {
                p.push(format!("{at}.source is required (an object)"));
            }
        }
        Some("tool_use") => {
            if role != "assistant" {
                p.push(format!(
                    "{at}: tool_use blocks belong in assistant messages"
                ));
            }
            if !blk.get("name").is_some_and(Value::is_string) {
                p.push(format!("{at}.name is required (a string)"));
            }
            if !blk.get("input").is_some_and(Value::is_object) {
                p.push(format!("{at}.input must be an object"));
            }
            match str_of(blk, "id") {
                Some(id) => return Some(id.to_owned()),
                None => p.push(format!("{at}.id is required (a string)")),
            }
        }
        Some("tool_result") => {
            if role != "user" {
                p.push(format!("{at}: tool_result blocks belong in user messages"));
            }
            match blk.get("content") {
                None | Some(Value::String(_)) => {}
                Some(Value::Array(parts)) => {
                    for (k, part) in parts.iter().enumerate() {
                        match str_of(part, "type") {
                            Some("text") if !part.get("text").is_some_and(nonblank) => {
                                p.push(format!(
                                    "{at}.content[{k}]: text content blocks must contain \
                                     non-whitespace text"
                                ));
                            }
                            Some("text" | "image" | "document" | "search_result") => {}
                            other => p.push(format!(
                                "{at}.content[{k}].type {other:?} is not allowed in a \
                                 tool_result (text, image, document, search_result)"
                            )),
                        }
                    }
                }
                Some(v) => p.push(format!(
                    "{at}.content must be a string or an array of blocks, not {}",
                    kind(v)
                )),
            }
            if let Some(v) = blk.get("is_error")
                && !v.is_boolean()
            {
                p.push(format!("{at}.is_error must be a boolean"));
            }
        }
        Some(
            "thinking"
            | "redacted_thinking"
            | "search_result"
            | "server_tool_use"
            | "web_search_tool_result"
            | "container_upload",
        ) => {}
        Some(t) => p.push(format!("{at}.type {t:?} is not a content block type")),
        None => p.push(format!("{at}.type is required")),
    }
    None
}

fn check_anthropic_messages(msgs: &[Value], p: &mut Vec<String>) {
    let last = msgs.len() - 1;
    let mut prev_role: Option<&str> = None;
    // The tool_use ids of the previous (assistant) message, and where.
    let mut open: Vec<String> = Vec::new();
    let mut open_from = 0;
    let mut all_uses: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        let at = format!("messages[{i}]");
        let role = match str_of(m, "role") {
            Some(r @ ("user" | "assistant")) => r,
            Some("system") => {
                p.push(format!(
                    "{at}.role \"system\" is not a message role: put system text in the \
                     top-level `system` parameter"
                ));
                continue;
            }
            Some(r) => {
                p.push(format!("{at}.role {r:?} is not user or assistant"));
                continue;
            }
            None => {
                p.push(format!("{at}.role is required"));
                continue;
            }
        };
        if i == 0 && role != "user" {
            p.push(format!("{at}: the first message must be role user"));
        }
        if prev_role == Some(role) {
            p.push(format!(
                "messages[{}] and {at} are both {role}: roles must alternate user/assistant",
                i - 1
            ));
        }
        prev_role = Some(role);
        let may_be_empty = role == "assistant" && i == last;
        let blocks: &[Value] = match m.get("content") {
            Some(Value::String(s)) => {
                if s.trim().is_empty() && !may_be_empty {
                    p.push(format!("{at}.content must not be empty"));
                }
                &[]
            }
            Some(Value::Array(a)) => {
                if a.is_empty() && !may_be_empty {
                    p.push(format!("{at}.content must not be empty"));
                }
                a
            }
            Some(v) => {
                p.push(format!(
                    "{at}.content must be a string or an array of blocks, not {}",
                    kind(v)
                ));
                &[]
            }
            None => {
                p.push(format!("{at}.content is required"));
                &[]
            }
        };
        let mut uses = Vec::new();
        let mut results: Vec<String> = Vec::new();
        let mut other_seen = false;
        for (k, blk) in blocks.iter().enumerate() {
            let bat = format!("{at}.content[{k}]");
            if str_of(blk, "type") == Some("tool_result") {
                if other_seen {
                    p.push(format!(
                        "{bat}: tool_result blocks must come before any other block of the \
                         message"
                    ));
                }
                match str_of(blk, "tool_use_id") {
                    Some(id) => results.push(id.to_owned()),
                    None => p.push(format!("{bat}.tool_use_id is required (a string)")),
                }
            } else {
                other_seen = true;
            }
            if let Some(id) = check_anthropic_block(blk, &bat, role, p) {
                uses.push(id);
            }
        }
        let mut seen: HashSet<&str> = HashSet::new();
        for id in &results {
            if !seen.insert(id) {
                p.push(format!("{at} has two tool_result blocks for {id:?}"));
            } else if !open.contains(id) {
                if all_uses.contains(id) {
                    p.push(format!(
                        "{at} answers tool_use {id:?} of an earlier turn: a tool_result must be \
                         in the user message right after the assistant message with that tool_use"
                    ));
                } else {
                    p.push(format!(
                        "{at} has a tool_result for {id:?}, which matches no tool_use of the \
                         assistant message right before it"
                    ));
                }
            }
        }
        let missing: Vec<&str> = open
            .iter()
            .map(String::as_str)
            .filter(|id| !seen.contains(id))
            .collect();
        if !missing.is_empty() {
            p.push(format!(
                "messages[{open_from}] has tool_use block(s) {} without a tool_result in {at}, \
                 the message right after it",
                missing.join(", ")
            ));
        }
        open.clear();
        if role == "assistant" {
            for id in &uses {
                if !all_uses.insert(id.clone()) {
                    p.push(format!("{at} reuses tool_use id {id:?}"));
                }
            }
            open = uses;
            open_from = i;
        }
    }
    if !open.is_empty() {
        p.push(format!(
            "messages[{open_from}] has tool_use block(s) {} but no user message with their \
             tool_result follows",
            open.join(", ")
        ));
    }
}

// ---------------------------------------------------------------------------
// Gemini checks
// ---------------------------------------------------------------------------

/// The data fields of a Gemini `Part` (camelCase, snake_case).
const GEMINI_PART_DATA: [(&str, &str); 7] = [
    ("text", "text"),
    ("inlineData", "inline_data"),
    ("fileData", "file_data"),
    ("functionCall", "function_call"),
    ("functionResponse", "function_response"),
    ("executableCode", "executable_code"),
    ("codeExecutionResult", "code_execution_result"),
];

fn check_gemini(b: &Value, p: &mut Vec<String>) {
    match b.get("contents") {
        Some(Value::Array(contents)) if !contents.is_empty() => {
            check_gemini_contents(contents, p);
        }
        Some(Value::Array(_)) => p.push("`contents` must not be empty".into()),
        Some(v) => p.push(format!("`contents` must be an array, not {}", kind(v))),
        None => p.push("`contents` is required".into()),
    }
    match field(b, "systemInstruction", "system_instruction") {
        None | Some(Value::Null) => {}
        Some(si @ Value::Object(_)) => match si.get("parts") {
            Some(Value::Array(parts)) if parts.iter().all(|x| str_of(x, "text").is_some()) => {}
            _ => p.push(
                "`systemInstruction.parts` must be an array of text parts {\"text\":…}".into(),
            ),
        },
        Some(v) => p.push(format!(
            "`systemInstruction` must be a Content object {{\"parts\":[{{\"text\":…}}]}}, not {}",
            kind(v)
        )),
    }
    for (i, t) in tools_of(b, p).iter().enumerate() {
        if let Some(decls) = field(t, "functionDeclarations", "function_declarations") {
            let Some(decls) = decls.as_array() else {
                p.push(format!("tools[{i}].functionDeclarations must be an array"));
                continue;
            };
            for (k, d) in decls.iter().enumerate() {
                if !d.get("name").is_some_and(Value::is_string) {
                    p.push(format!(
                        "tools[{i}].functionDeclarations[{k}].name is required (a string)"
                    ));
                }
                if let Some(v) = d.get("parameters")
                    && !v.is_object()
                {
                    p.push(format!(
                        "tools[{i}].functionDeclarations[{k}].parameters must be an object"
                    ));
                }
            }
        } else if t.get("type").is_some() || t.get("function").is_some() || !t.is_object() {
            p.push(format!(
                "tools[{i}] is not a Gemini Tool; function tools are \
                 {{\"functionDeclarations\":[{{\"name\",\"description\",\"parameters\"}}]}}"
            ));
        }
    }
    if let Some(v) = field(b, "generationConfig", "generation_config")
        && !v.is_object()
    {
        p.push(format!(
            "`generationConfig` must be an object, not {}",
            kind(v)
        ));
    }
}

/// Checks one part; a function call or response it holds, as (is it a
/// call, name, id).
fn check_gemini_part(
    part: &Value,
    at: &str,
    role: &str,
    p: &mut Vec<String>,
) -> Option<(bool, String, Option<String>)> {
    let present: Vec<(&str, &Value)> = GEMINI_PART_DATA
        .iter()
        .filter_map(|(c, s)| field(part, c, s).map(|v| (*c, v)))
        .collect();
    let [(which, data)] = present[..] else {
        let names: Vec<&str> = present.iter().map(|(c, _)| *c).collect();
        p.push(format!(
            "{at} must have exactly one of text, inlineData, fileData, functionCall, \
             functionResponse (has {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ));
        return None;
    };
    match which {
        "text" if !data.is_string() => p.push(format!("{at}.text must be a string")),
        "inlineData"
            if field(data, "mimeType", "mime_type")
                .and_then(Value::as_str)
                .is_none()
                || !data.get("data").is_some_and(Value::is_string) =>
        {
            p.push(format!(
                "{at}.inlineData needs `mimeType` and `data` (base64) strings"
            ));
        }
        "functionCall" | "functionResponse" => {
            let call = which == "functionCall";
            let want_role = if call { "model" } else { "user" };
            if role != want_role {
                p.push(format!(
                    "{at}: {} parts belong in {want_role} contents",
                    which
                ));
            }
            let name = str_of(data, "name");
            if name.is_none() {
                p.push(format!("{at}.{}.name is required (a string)", which));
            }
            if call {
                if let Some(v) = data.get("args")
                    && !v.is_object()
                {
                    p.push(format!("{at}.functionCall.args must be an object"));
                }
            } else if !data.get("response").is_some_and(Value::is_object) {
                p.push(format!(
                    "{at}.functionResponse.response is required (an object)"
                ));
            }
            let id = str_of(data, "id").map(str::to_owned);
            return name.map(|n| (call, n.to_owned(), id));
        }
        _ => {}
    }
    None
}

/// A function call's or response's name and id.
type NameId = (String, Option<String>);

fn check_gemini_contents(contents: &[Value], p: &mut Vec<String>) {
    // The function calls of the previous content (a model turn), and where.
    let mut asked: Option<(usize, Vec<NameId>)> = None;
    for (i, c) in contents.iter().enumerate() {
        let at = format!("contents[{i}]");
        let role = match str_of(c, "role") {
            None => "user",
            Some(r @ ("user" | "model")) => r,
            Some(r) => {
                let hint = match r {
                    "assistant" => ": Gemini calls it \"model\"",
                    "system" => ": use `systemInstruction`",
                    _ => "",
                };
                p.push(format!(
                    "{at}.role {r:?} is not \"user\" or \"model\"{hint}"
                ));
                r
            }
        };
        let parts: &[Value] = match c.get("parts") {
            Some(Value::Array(parts)) if !parts.is_empty() => parts,
            _ => {
                p.push(format!("{at}.parts must be a non-empty array"));
                &[]
            }
        };
        let mut calls = Vec::new();
        let mut responses = Vec::new();
        for (k, part) in parts.iter().enumerate() {
            match check_gemini_part(part, &format!("{at}.parts[{k}]"), role, p) {
                Some((true, name, id)) => calls.push((name, id)),
                Some((false, name, id)) => responses.push((name, id)),
                None => {}
            }
        }
        match asked.take() {
            None if !responses.is_empty() => p.push(format!(
                "{at} has functionResponse parts but does not follow a model content with \
                 functionCall parts"
            )),
            None => {}
            Some((j, _)) if responses.is_empty() => p.push(format!(
                "contents[{j}] asks for function calls but {at} does not answer them with \
                 functionResponse parts"
            )),
            Some((j, asked)) => check_gemini_answers(&asked, &responses, j, &at, p),
        }
        if role == "model" && !calls.is_empty() {
            asked = Some((i, calls));
        }
    }
    if let Some((j, _)) = asked {
        p.push(format!(
            "contents[{j}] asks for function calls but no content with their \
             functionResponse parts follows"
        ));
    }
}

fn check_gemini_answers(
    asked: &[NameId],
    responses: &[NameId],
    j: usize,
    at: &str,
    p: &mut Vec<String>,
) {
    if asked.len() != responses.len() {
        p.push(format!(
            "{at} has {} functionResponse part(s) but contents[{j}] asked for {} function \
             call(s)",
            responses.len(),
            asked.len()
        ));
        return;
    }
    let mut want: Vec<&str> = asked.iter().map(|(n, _)| n.as_str()).collect();
    let mut got: Vec<&str> = responses.iter().map(|(n, _)| n.as_str()).collect();
    want.sort_unstable();
    got.sort_unstable();
    if want != got {
        p.push(format!(
            "{at} answers functions {got:?} but contents[{j}] called {want:?}"
        ));
    }
    let ids: HashSet<&str> = asked.iter().filter_map(|(_, id)| id.as_deref()).collect();
    for (name, id) in responses {
        if let Some(id) = id
            && !ids.contains(id.as_str())
        {
            p.push(format!(
                "{at}: the functionResponse for {name:?} has id {id:?}, which matches no \
                 functionCall id of contents[{j}]"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Api; 4] = [
        Api::OpenAiChat,
        Api::OpenAiResponses,
        Api::Anthropic,
        Api::Gemini,
    ];

    /// POSTs `body` (sent as it is) to `path` under the fake's base URL with
    /// `api`'s usual headers: status, headers and body text.
    async fn post_raw(
        fake: &FakeProvider,
        stream: bool,
        body: String,
        extra: &[(&str, &str)],
    ) -> reqwest::Response {
        let base = fake.base_url();
        let url = match fake.api() {
            Api::OpenAiChat => format!("{base}/chat/completions"),
            Api::OpenAiResponses => format!("{base}/responses"),
            Api::Anthropic => format!("{base}/v1/messages"),
            Api::Gemini if stream => {
                format!("{base}/v1beta/models/gemini-test:streamGenerateContent?alt=sse")
            }
            Api::Gemini => format!("{base}/v1beta/models/gemini-test:generateContent"),
        };
        let auth: &[(&str, &str)] = match fake.api() {
            Api::OpenAiChat | Api::OpenAiResponses => &[("authorization", "Bearer sk-test")],
            Api::Anthropic => &[
                ("x-api-key", "ak-test"),
                ("anthropic-version", "2023-06-01"),
            ],
            Api::Gemini => &[("x-goog-api-key", "gk-test")],
        };
        let mut req = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .body(body);
        for (k, v) in auth.iter().chain(extra) {
            req = req.header(*k, *v);
        }
        req.send().await.expect("request to the fake")
    }

    async fn post(fake: &FakeProvider, stream: bool, body: &Value) -> (u16, String) {
        let resp = post_raw(fake, stream, body.to_string(), &[]).await;
        let status = resp.status().as_u16();
        (status, resp.text().await.expect("body"))
    }

    /// A minimal well-formed request for `api`, offering one tool.
    fn request(api: Api, stream: bool) -> Value {
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        match api {
            Api::OpenAiChat => json!({
                "model": "gpt-test", "stream": stream,
                "messages": [{"role": "system", "content": "Be brief."},
                             {"role": "user", "content": "Weather?"}],
                "tools": [{"type": "function", "function": {"name": "get_weather",
                           "description": "Weather", "parameters": schema}}],
            }),
            Api::OpenAiResponses => json!({
                "model": "gpt-test", "stream": stream, "instructions": "Be brief.",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]}],
                "tools": [{"type": "function", "name": "get_weather", "description": "Weather",
                           "parameters": schema}],
            }),
            Api::Anthropic => json!({
                "model": "claude-test", "max_tokens": 256, "stream": stream, "system": "Be brief.",
                "messages": [{"role": "user", "content": "Weather?"}],
                "tools": [{"name": "get_weather", "description": "Weather",
                           "input_schema": schema}],
            }),
            Api::Gemini => json!({
                "systemInstruction": {"parts": [{"text": "Be brief."}]},
                "contents": [{"role": "user", "parts": [{"text": "Weather?"}]}],
                "tools": [{"functionDeclarations": [{"name": "get_weather",
                           "description": "Weather", "parameters": schema}]}],
                "generationConfig": {"maxOutputTokens": 256},
            }),
        }
    }

    /// A well-formed request for `api` whose history has the assistant ask
    /// for two calls and both answered.
    fn answered_history(api: Api) -> Value {
        let mut body = request(api, false);
        let turn = match api {
            Api::OpenAiChat => json!([
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_a", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "call_b", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}]},
                {"role": "tool", "tool_call_id": "call_b", "content": "sunny"},
                {"role": "tool", "tool_call_id": "call_a", "content": "rain"},
                {"role": "assistant", "content": "Rain in Paris, sun in Rome."},
                {"role": "user", "content": "Thanks"},
            ]),
            Api::OpenAiResponses => json!([
                {"role": "user", "content": "Weather?"},
                {"type": "function_call", "call_id": "call_a", "name": "get_weather",
                 "arguments": "{\"city\":\"Paris\"}"},
                {"type": "function_call", "call_id": "call_b", "name": "get_weather",
                 "arguments": "{\"city\":\"Rome\"}"},
                {"type": "function_call_output", "call_id": "call_a", "output": "rain"},
                {"type": "function_call_output", "call_id": "call_b",
                 "output": [{"type": "input_text", "text": "sunny"}]},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Rain, sun."}]},
                {"role": "user", "content": "Thanks"},
            ]),
            Api::Anthropic => json!([
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_a", "name": "get_weather",
                     "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "get_weather",
                     "input": {"city": "Rome"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "rain"},
                    {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true,
                     "content": [{"type": "text", "text": "no data"}]},
                    {"type": "text", "text": "Go on."}]},
            ]),
            Api::Gemini => json!([
                {"role": "user", "parts": [{"text": "Weather?"}]},
                {"role": "model", "parts": [
                    {"functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Paris"}}},
                    {"functionCall": {"id": "c2", "name": "get_weather", "args": {"city": "Rome"}}}]},
                {"role": "user", "parts": [
                    {"functionResponse": {"id": "c2", "name": "get_weather",
                                          "response": {"result": "sunny"}}},
                    {"functionResponse": {"id": "c1", "name": "get_weather",
                                          "response": {"result": "rain"}}}]},
            ]),
        };
        let key = match api {
            Api::OpenAiChat | Api::Anthropic => "messages",
            Api::OpenAiResponses => "input",
            Api::Gemini => "contents",
        };
        body[key] = turn;
        body
    }

    /// The SSE events of a body: (event name, data).
    fn events(body: &str) -> Vec<(Option<String>, String)> {
        body.replace("\r\n", "\n")
            .split("\n\n")
            .filter(|b| !b.trim().is_empty())
            .map(|block| {
                let mut name = None;
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        name = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                (name, data)
            })
            .collect()
    }

    fn json_events(body: &str) -> Vec<Value> {
        events(body)
            .into_iter()
            .filter(|(_, d)| d != "[DONE]")
            .map(|(_, d)| serde_json::from_str(&d).expect("event data is JSON"))
            .collect()
    }

    /// The text a streamed answer carries, and whether it ended properly.
    fn streamed_text(api: Api, body: &str) -> (String, bool) {
        let evs = json_events(body);
        let mut text = String::new();
        for e in &evs {
            let piece = match api {
                Api::OpenAiChat => e.pointer("/choices/0/delta/content"),
                Api::OpenAiResponses if e["type"] == "response.output_text.delta" => e.get("delta"),
                Api::Anthropic if e["type"] == "content_block_delta" => e.pointer("/delta/text"),
                Api::Gemini => e.pointer("/candidates/0/content/parts/0/text"),
                _ => None,
            };
            text.push_str(piece.and_then(Value::as_str).unwrap_or_default());
        }
        let ended = match api {
            Api::OpenAiChat => body.trim_end().ends_with("data: [DONE]"),
            Api::OpenAiResponses => evs
                .last()
                .is_some_and(|e| e["type"] == "response.completed"),
            Api::Anthropic => evs.last().is_some_and(|e| e["type"] == "message_stop"),
            Api::Gemini => evs
                .last()
                .is_some_and(|e| e.pointer("/candidates/0/finishReason").is_some()),
        };
        (text, ended)
    }

    fn weather_calls() -> Vec<(String, Value)> {
        vec![
            (
                "get_weather".to_owned(),
                json!({"city": "Paris", "units": "metric"}),
            ),
            ("get_time".to_owned(), json!({"tz": "Europe/Paris"})),
        ]
    }

    #[tokio::test]
    async fn non_streaming_text_round_for_each_api() {
        for api in ALL {
            let fake = FakeProvider::start(api, vec![Step::Text("Hello, world".into())]).await;
            let (status, body) = post(&fake, false, &request(api, false)).await;
            assert_eq!(status, 200, "{api:?}: {body}");
            let v: Value = serde_json::from_str(&body).expect("JSON answer");
            let (text, end) = match api {
                Api::OpenAiChat => (
                    v.pointer("/choices/0/message/content"),
                    v.pointer("/choices/0/finish_reason"),
                ),
                Api::OpenAiResponses => (v.pointer("/output/0/content/0/text"), v.get("status")),
                Api::Anthropic => (v.pointer("/content/0/text"), v.get("stop_reason")),
                Api::Gemini => (
                    v.pointer("/candidates/0/content/parts/0/text"),
                    v.pointer("/candidates/0/finishReason"),
                ),
            };
            assert_eq!(text, Some(&json!("Hello, world")), "{api:?}: {v}");
            let want_end = ["stop", "completed", "end_turn", "STOP"];
            assert!(
                end.is_some_and(|e| want_end.iter().any(|w| e == w)),
                "{api:?}: {v}"
            );
            assert_eq!(fake.problems(), Vec::<String>::new());
            assert_eq!(fake.requests(), vec![request(api, false)]);
            let auth = ["authorization", "x-api-key", "x-goog-api-key"];
            assert!(
                fake.headers()[0]
                    .iter()
                    .any(|(k, _)| auth.contains(&k.as_str())),
                "{api:?}: {:?}",
                fake.headers()
            );
            assert_eq!(fake.paths().len(), 1);
        }
    }

    #[tokio::test]
    async fn streaming_text_round_for_each_api() {
        let text = "The quick brown fox jumps over the lazy dog.";
        for api in ALL {
            let fake = FakeProvider::start(api, vec![Step::Text(text.into())]).await;
            let (status, body) = post(&fake, true, &request(api, true)).await;
            assert_eq!(status, 200, "{api:?}: {body}");
            let (got, ended) = streamed_text(api, &body);
            assert_eq!(got, text, "{api:?}: {body}");
            assert!(ended, "{api:?} ends with its terminal event: {body}");
            assert!(json_events(&body).len() >= 4, "{api:?}: several deltas");
            assert_eq!(fake.problems(), Vec::<String>::new());
        }
    }

    #[tokio::test]
    async fn chat_streams_parallel_calls_with_split_arguments() {
        let fake = FakeProvider::start(Api::OpenAiChat, vec![Step::Calls(weather_calls())]).await;
        let mut body_req = request(Api::OpenAiChat, true);
        body_req["stream_options"] = json!({"include_usage": true});
        let (status, body) = post(&fake, true, &body_req).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.trim_end().ends_with("data: [DONE]"));
        let chunks = json_events(&body);
        let mut calls: Vec<(String, String, String, usize)> = Vec::new();
        let mut finish = None;
        for c in &chunks {
            assert_eq!(c["object"], "chat.completion.chunk");
            if let Some(f) = c
                .pointer("/choices/0/finish_reason")
                .and_then(Value::as_str)
            {
                finish = Some(f.to_owned());
            }
            let Some(tcs) = c
                .pointer("/choices/0/delta/tool_calls")
                .and_then(Value::as_array)
            else {
                continue;
            };
            for tc in tcs {
                let i = tc["index"].as_u64().expect("index") as usize;
                if let Some(id) = tc["id"].as_str() {
                    assert_eq!(i, calls.len(), "a call's first chunk has its id");
                    let name = tc["function"]["name"].as_str().expect("name").to_owned();
                    calls.push((id.to_owned(), name, String::new(), 0));
                } else {
                    assert!(tc["function"].get("name").is_none(), "name only first");
                    let piece = tc["function"]["arguments"].as_str().expect("arguments");
                    calls[i].2.push_str(piece);
                    calls[i].3 += 1;
                }
            }
        }
        assert_eq!(finish.as_deref(), Some("tool_calls"));
        assert!(
            chunks
                .last()
                .is_some_and(|c| c["usage"]["total_tokens"].is_u64())
        );
        let want = weather_calls();
        assert_eq!(calls.len(), 2);
        for ((id, name, args, deltas), (want_name, want_args)) in calls.iter().zip(&want) {
            assert!(id.starts_with("call_"));
            assert_eq!(name, want_name);
            assert!(*deltas >= 3, "{deltas} argument deltas");
            assert_eq!(
                &serde_json::from_str::<Value>(args).expect("JSON"),
                want_args
            );
        }
        assert_eq!(fake.problems(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn responses_streams_parallel_calls_with_split_arguments() {
        let fake =
            FakeProvider::start(Api::OpenAiResponses, vec![Step::Calls(weather_calls())]).await;
        let (status, body) = post(&fake, true, &request(Api::OpenAiResponses, true)).await;
        assert_eq!(status, 200, "{body}");
        let evs = events(&body);
        let mut args: Vec<(String, String, usize)> = Vec::new();
        for (k, (name, data)) in evs.iter().enumerate() {
            let v: Value = serde_json::from_str(data).expect("JSON");
            assert_eq!(Some(v["type"].as_str().expect("type")), name.as_deref());
            assert_eq!(v["sequence_number"], json!(k));
            match v["type"].as_str().unwrap_or_default() {
                "response.output_item.added" => {
                    let id = v["item"]["id"].as_str().expect("item id").to_owned();
                    args.push((id, String::new(), 0));
                }
                "response.function_call_arguments.delta" => {
                    let i = v["output_index"].as_u64().expect("output_index") as usize;
                    assert_eq!(v["item_id"].as_str(), Some(args[i].0.as_str()));
                    args[i].1.push_str(v["delta"].as_str().expect("delta"));
                    args[i].2 += 1;
                }
                "response.function_call_arguments.done" => {
                    let i = v["output_index"].as_u64().expect("output_index") as usize;
                    assert_eq!(v["arguments"].as_str(), Some(args[i].1.as_str()));
                }
                _ => {}
            }
        }
        assert_eq!(evs[0].0.as_deref(), Some("response.created"));
        let done: Value = serde_json::from_str(&evs[evs.len() - 1].1).expect("JSON");
        assert_eq!(done["type"], "response.completed");
        let output = done["response"]["output"].as_array().expect("output");
        let want = weather_calls();
        assert_eq!(output.len(), 2);
        for (((_, text, deltas), item), (name, value)) in args.iter().zip(output).zip(&want) {
            assert!(*deltas >= 3);
            assert_eq!(&serde_json::from_str::<Value>(text).expect("JSON"), value);
            assert_eq!(item["type"], "function_call");
            assert_eq!(item["name"], json!(name));
            assert!(
                item["call_id"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("call_"))
            );
        }
        assert_eq!(fake.problems(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn anthropic_streams_parallel_calls_with_split_arguments() {
        let fake = FakeProvider::start(Api::Anthropic, vec![Step::Calls(weather_calls())]).await;
        let (status, body) = post(&fake, true, &request(Api::Anthropic, true)).await;
        assert_eq!(status, 200, "{body}");
        let evs = events(&body);
        let names: Vec<&str> = evs.iter().filter_map(|(n, _)| n.as_deref()).collect();
        assert_eq!(names.first(), Some(&"message_start"));
        assert_eq!(names.last(), Some(&"message_stop"));
        assert!(names.contains(&"ping"));
        let mut blocks: Vec<(String, String, usize)> = Vec::new();
        let mut stop = None;
        for (name, data) in &evs {
            let v: Value = serde_json::from_str(data).expect("JSON");
            assert_eq!(Some(v["type"].as_str().expect("type")), name.as_deref());
            match name.as_deref() {
                Some("content_block_start") => {
                    assert_eq!(v["index"], json!(blocks.len()));
                    assert_eq!(v["content_block"]["type"], "tool_use");
                    assert_eq!(v["content_block"]["input"], json!({}));
                    let n = v["content_block"]["name"].as_str().expect("name");
                    blocks.push((n.to_owned(), String::new(), 0));
                }
                Some("content_block_delta") => {
                    let i = v["index"].as_u64().expect("index") as usize;
                    assert_eq!(v["delta"]["type"], "input_json_delta");
                    blocks[i]
                        .1
                        .push_str(v["delta"]["partial_json"].as_str().expect("json"));
                    blocks[i].2 += 1;
                }
                Some("message_delta") => {
                    stop = v["delta"]["stop_reason"].as_str().map(str::to_owned)
                }
                _ => {}
            }
        }
        assert_eq!(stop.as_deref(), Some("tool_use"));
        let want = weather_calls();
        assert_eq!(blocks.len(), 2);
        for ((name, text, deltas), (want_name, want_args)) in blocks.iter().zip(&want) {
            assert_eq!(name, want_name);
            assert!(*deltas >= 3);
            assert_eq!(
                &serde_json::from_str::<Value>(text).expect("JSON"),
                want_args
            );
        }
        assert_eq!(fake.problems(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn gemini_streams_whole_function_calls() {
        let fake = FakeProvider::start(Api::Gemini, vec![Step::Calls(weather_calls())]).await;
        let (status, body) = post(&fake, true, &request(Api::Gemini, true)).await;
        assert_eq!(status, 200, "{body}");
        assert!(
            body.contains("\r\n\r\n"),
            "Gemini ends events with CRLF CRLF"
        );
        let chunks = json_events(&body);
        assert_eq!(chunks.len(), 2);
        let mut calls = Vec::new();
        for (k, c) in chunks.iter().enumerate() {
            let finish = c.pointer("/candidates/0/finishReason");
            assert_eq!(
                finish.is_some(),
                k == chunks.len() - 1,
                "finishReason only last"
            );
            assert_eq!(
                c.pointer("/candidates/0/content/role"),
                Some(&json!("model"))
            );
            for part in c
                .pointer("/candidates/0/content/parts")
                .and_then(Value::as_array)
                .expect("parts")
            {
                calls.push(part["functionCall"].clone());
            }
        }
        let want = weather_calls();
        for (call, (name, args)) in calls.iter().zip(&want) {
            assert_eq!(&call["name"], name);
            assert_eq!(&call["args"], args);
            assert!(call["id"].is_string());
        }
        assert_eq!(
            fake.paths()[0],
            "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
        );
        assert_eq!(fake.problems(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn status_steps_carry_retry_after_and_are_consumed() {
        for api in ALL {
            let script = vec![
                Step::Status {
                    status: 429,
                    retry_after: Some(7),
                    body: r#"{"error":{"message":"slow down"}}"#.into(),
                },
                Step::Text("after".into()),
            ];
            let fake = FakeProvider::start(api, script).await;
            let resp = post_raw(&fake, false, request(api, false).to_string(), &[]).await;
            assert_eq!(resp.status().as_u16(), 429);
            let retry = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok());
            assert_eq!(retry, Some("7"));
            assert!(resp.text().await.expect("body").contains("slow down"));
            let (status, _) = post(&fake, false, &request(api, false)).await;
            assert_eq!(status, 200);
            let (status, body) = post(&fake, false, &request(api, false)).await;
            assert_eq!(status, 500);
            assert!(body.contains("script exhausted"), "{body}");
            assert_eq!(fake.problems(), Vec::<String>::new());
        }
    }

    #[tokio::test]
    async fn answered_tool_histories_are_accepted() {
        for api in ALL {
            let fake = FakeProvider::start(api, vec![Step::Text("ok".into())]).await;
            let (status, body) = post(&fake, false, &answered_history(api)).await;
            assert_eq!(status, 200, "{api:?}: {body}");
            assert_eq!(fake.problems(), Vec::<String>::new());
        }
    }

    /// Posts `body`, which must be refused 400 with a problem mentioning
    /// `needle`; the script's step stays for the next request.
    async fn assert_refused(api: Api, body: &Value, extra: &[(&str, &str)], needle: &str) {
        let fake = FakeProvider::start(api, vec![Step::Text("unused".into())]).await;
        let resp = post_raw(&fake, false, body.to_string(), extra).await;
        assert_eq!(resp.status().as_u16(), 400, "{api:?}");
        let text = resp.text().await.expect("body");
        let v: Value = serde_json::from_str(&text).expect("a JSON error body");
        let message = v.pointer("/error/message").and_then(Value::as_str);
        assert!(message.is_some_and(|m| m.contains(needle)), "{api:?}: {v}");
        let problems = fake.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("request 1: "), "{problems:?}");
        assert!(problems[0].contains(needle), "{problems:?}");
        assert_eq!(fake.requests(), vec![body.clone()]);
        assert_eq!(fake.remaining(), 1, "a refused request takes no step");
    }

    #[tokio::test]
    async fn chat_refuses_an_unknown_tool_call_id() {
        let mut body = answered_history(Api::OpenAiChat);
        body["messages"][3]["tool_call_id"] = json!("call_nope");
        // call_b is then left unanswered, too: two problems.
        let fake = FakeProvider::start(Api::OpenAiChat, vec![]).await;
        let (status, text) = post(&fake, false, &body).await;
        assert_eq!(status, 400);
        assert!(text.contains("call_nope"), "{text}");
        assert_eq!(fake.problems().len(), 2, "{:?}", fake.problems());
        let mut body = request(Api::OpenAiChat, false);
        body["messages"][1] = json!({"role": "tool", "tool_call_id": "call_x", "content": "r"});
        assert_refused(
            Api::OpenAiChat,
            &body,
            &[],
            "\"call_x\" matches no tool_calls",
        )
        .await;
    }

    #[tokio::test]
    async fn responses_refuses_chat_shaped_tools() {
        let mut body = request(Api::OpenAiResponses, false);
        body["tools"] = json!([{"type": "function",
                               "function": {"name": "get_weather", "parameters": {}}}]);
        assert_refused(Api::OpenAiResponses, &body, &[], "Chat Completions shape").await;
        let mut body = request(Api::OpenAiResponses, false);
        body["input"] = json!([{"type": "function_call_output", "call_id": "c9", "output": "x"}]);
        assert_refused(
            Api::OpenAiResponses,
            &body,
            &[],
            "\"c9\" matches no function_call",
        )
        .await;
    }

    #[tokio::test]
    async fn anthropic_refuses_missing_max_tokens_version_and_misplaced_results() {
        let mut body = request(Api::Anthropic, false);
        if let Value::Object(m) = &mut body {
            m.remove("max_tokens");
        }
        assert_refused(Api::Anthropic, &body, &[], "max_tokens").await;

        let fake = FakeProvider::start(Api::Anthropic, vec![]).await;
        let resp = reqwest::Client::new()
            .post(format!("{}/v1/messages", fake.base_url()))
            .header("x-api-key", "k")
            .body(request(Api::Anthropic, false).to_string())
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status().as_u16(), 400);
        assert!(fake.problems()[0].contains("anthropic-version"));

        let mut body = answered_history(Api::Anthropic);
        body["messages"][2]["content"] = json!([
            {"type": "text", "text": "Go on."},
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "rain"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": "sun"}]);
        let fake = FakeProvider::start(Api::Anthropic, vec![]).await;
        let (status, _) = post(&fake, false, &body).await;
        assert_eq!(status, 400);
        assert!(
            fake.problems()[0].contains("must come before"),
            "{:?}",
            fake.problems()
        );
    }

    #[tokio::test]
    async fn gemini_refuses_a_function_response_count_mismatch() {
        let mut body = answered_history(Api::Gemini);
        if let Some(parts) = body["contents"][2]["parts"].as_array_mut() {
            parts.pop();
        }
        assert_refused(Api::Gemini, &body, &[], "asked for 2 function call(s)").await;
    }

    #[tokio::test]
    async fn bad_json_wrong_path_and_stream_only_steps_are_problems() {
        let fake = FakeProvider::start(Api::OpenAiChat, vec![Step::Endless]).await;
        let resp = post_raw(&fake, false, "not json".into(), &[]).await;
        assert_eq!(resp.status().as_u16(), 400);
        assert_eq!(fake.requests()[0], json!("not json"));
        let resp = reqwest::Client::new()
            .post(format!("{}/completions", fake.base_url()))
            .body("{}")
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status().as_u16(), 404);
        let (status, _) = post(&fake, false, &request(Api::OpenAiChat, false)).await;
        assert_eq!(status, 400);
        let problems = fake.problems();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("not valid JSON"));
        assert!(problems[1].contains("/v1/completions"));
        assert!(problems[2].contains("only streaming"));
    }

    #[tokio::test]
    async fn endless_streams_until_the_client_goes_away() {
        for api in ALL {
            let fake = FakeProvider::start(api, vec![Step::Endless, Step::Text("x".into())]).await;
            let mut resp = post_raw(&fake, true, request(api, true).to_string(), &[]).await;
            assert_eq!(resp.status().as_u16(), 200);
            let mut seen = String::new();
            while seen.matches("tick ").count() < 3 {
                let chunk = resp.chunk().await.expect("read").expect("more body");
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
            drop(resp);
            // The server is still answering.
            let (status, _) = post(&fake, false, &request(api, false)).await;
            assert_eq!(status, 200, "{api:?}");
            assert_eq!(fake.problems(), Vec::<String>::new());
        }
    }

    #[tokio::test]
    async fn cut_mid_call_ends_without_a_terminal_event() {
        for api in ALL {
            let fake = FakeProvider::start(api, vec![Step::CutMidCall("get_weather".into())]).await;
            let (status, body) = post(&fake, true, &request(api, true)).await;
            assert_eq!(status, 200, "{api:?}");
            assert!(body.contains("get_weather"), "{api:?}: {body}");
            let (_, ended) = streamed_text(api, &body);
            assert!(!ended, "{api:?}: {body}");
            for terminal in [
                "[DONE]",
                "finish_reason\":\"",
                "response.completed",
                "message_stop",
                "finishReason",
            ] {
                assert!(!body.contains(terminal), "{api:?}: {body}");
            }
        }
    }

    #[tokio::test]
    async fn overloaded_is_an_sse_error_for_anthropic_and_503_for_the_others() {
        for api in ALL {
            let fake = FakeProvider::start(api, vec![Step::Overloaded]).await;
            let (status, body) = post(&fake, true, &request(api, true)).await;
            if api == Api::Anthropic {
                assert_eq!(status, 200);
                let evs = events(&body);
                let (name, data) = evs.last().expect("events");
                assert_eq!(name.as_deref(), Some("error"));
                let v: Value = serde_json::from_str(data).expect("JSON");
                assert_eq!(v["error"]["type"], "overloaded_error");
                let deltas = evs
                    .iter()
                    .filter(|(n, _)| n.as_deref() == Some("content_block_delta"));
                assert_eq!(deltas.count(), 1);
            } else {
                assert_eq!(status, 503, "{api:?}");
            }
        }
    }

    #[tokio::test]
    async fn raw_call_arguments_pass_through() {
        let raw = "{\"a\": 1";
        let step = || Step::RawCall {
            name: "f".into(),
            raw_arguments: raw.into(),
        };
        let fake = FakeProvider::start(Api::OpenAiChat, vec![step(), step()]).await;
        let (_, body) = post(&fake, true, &request(Api::OpenAiChat, true)).await;
        let args: String = json_events(&body)
            .iter()
            .filter_map(|c| c.pointer("/choices/0/delta/tool_calls/0/function/arguments"))
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(args, raw);
        let (_, body) = post(&fake, false, &request(Api::OpenAiChat, false)).await;
        let v: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(
            v.pointer("/choices/0/message/tool_calls/0/function/arguments"),
            Some(&json!(raw))
        );

        let fake = FakeProvider::start(Api::Gemini, vec![step()]).await;
        let (_, body) = post(&fake, false, &request(Api::Gemini, false)).await;
        let v: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(
            v.pointer("/candidates/0/content/parts/0/functionCall/args"),
            Some(&json!(raw))
        );
    }

    #[test]
    fn pieces_split_arguments_in_at_least_three() {
        assert_eq!(pieces("{}", true), vec!["", "{", "}"]);
        assert_eq!(pieces("abc", true).len(), 3);
        assert!(pieces("{\"city\":\"Paris\"}", true).len() >= 3);
        assert_eq!(pieces("héllo wörld", false).concat(), "héllo wörld");
        assert!(pieces("", false).is_empty());
    }
}
