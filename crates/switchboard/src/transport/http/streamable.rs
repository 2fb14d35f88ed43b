//! Streamable HTTP (2025-03-26 … 2025-11-25 sessions, and 2026-07-28
//! stateless requests).
//!
//! `send` POSTs the message and, for a JSON answer, reads it inline (no task
//! hop); an SSE answer is read by a task owned by the connection. Everything
//! the server says is queued for `recv`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use switchboard_types::RequestId;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::direct::{Answer, Direct, DirectError, ReadError};
use super::{
    AuthProvider, AuthRetries, HttpConfig, auth_failure, encode_header_value, header_map,
    http_error, note_dpop_nonce,
};
use crate::param_headers::{HeaderParam, header_params, param_headers};
use crate::transport::{
    BoxFuture, Connection, Incoming, MessageSink, MessageStream, Sent, TransportError,
    escaped_preview,
};

mod streams;

use streams::{get_stream, read_stream, response_stream};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const LAST_EVENT_ID: &str = "last-event-id";
/// Messages queued for the engine's reader.
const QUEUE: usize = 1024;
/// Resumptions of one broken response stream before its request fails.
const MAX_RESUMES: u32 = 3;
/// Reconnections of the GET stream before it is given up.
const MAX_GET_RETRIES: u32 = 5;
/// How long finishing the handshake waits for the GET stream to open.
const GET_STREAM_WAIT: Duration = Duration::from_millis(500);
/// Bytes of an error body kept for a message.
const ERROR_BODY_PREVIEW: usize = 512;

type Queued = Result<Incoming, TransportError>;

pub(super) fn connect(config: &HttpConfig, url: url::Url, client: reqwest::Client) -> Connection {
    let (queue, rx) = mpsc::channel(QUEUE);
    let closing = CancellationToken::new();
    let headers = header_map(config);
    let mut post_headers = headers.clone();
    post_headers.append(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    post_headers.append(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let direct = if config.client.is_none() {
        Direct::for_url(&url, config.connect_timeout)
    } else {
        None
    };
    let shared = Arc::new(Shared {
        client,
        direct,
        display: config.shown_parsed_url(&url),
        url,
        headers,
        post_headers,
        auth: config.auth.clone(),
        read_timeout: config.read_timeout,
        max_body_size: config.max_body_size,
        max_event_size: config.max_event_size,
        state: Mutex::new(State::default()),
        queue,
        closing: closing.clone(),
        tasks: Mutex::new(JoinSet::new()),
        reinit: tokio::sync::Mutex::new(()),
    });
    let life = Arc::new(closing.clone().drop_guard());
    Connection {
        sink: Arc::new(HttpSink {
            shared: shared.clone(),
            _life: life.clone(),
        }),
        stream: Box::new(HttpStream {
            rx,
            closing,
            _life: life,
        }),
        stderr: None,
    }
}

struct Shared {
    client: reqwest::Client,
    /// The connections of an `http://` server reached without a proxy.
    direct: Option<Direct>,
    url: url::Url,
    display: String,
    /// The configured headers.
    headers: HeaderMap,
    /// The configured headers, `Accept` and `Content-Type`: every POST's.
    post_headers: HeaderMap,
    auth: Option<Arc<dyn AuthProvider>>,
    read_timeout: Duration,
    max_body_size: usize,
    max_event_size: usize,
    state: Mutex<State>,
    queue: mpsc::Sender<Queued>,
    /// Cancelled on close, or when both halves of the connection are gone.
    closing: CancellationToken,
    tasks: Mutex<JoinSet<()>>,
    /// Held while a lost session is re-established.
    reinit: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    session_id: Option<String>,
    /// The version `initialize` settled on (session era).
    negotiated_version: Option<String>,
    /// The `initialize` request, kept to re-establish a lost session.
    initialize: Option<Vec<u8>>,
    /// Response streams by request id, closed to cancel (stateless era).
    streams: HashMap<RequestId, tokio::task::AbortHandle>,
    get_stream_started: bool,
    /// Session era: neither side declared anything the server could send
    /// unasked (see [`streams::may_push`]), so the GET stream waits until
    /// a request asks for progress.
    quiet: bool,
    /// Ids of `tools/list` requests in flight (stateless era), whose answers
    /// teach the `x-mcp-header` mirroring.
    tool_lists: std::collections::HashSet<RequestId>,
    /// `Mcp-Param-*` parameters per tool name.
    tool_headers: HashMap<String, Vec<HeaderParam>>,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn http_error(&self, error: reqwest::Error) -> TransportError {
        http_error(&self.display, error)
    }

    fn direct_error(&self, error: DirectError) -> TransportError {
        TransportError::Http {
            url: self.display.clone(),
            source: Box::new(error),
        }
    }

    fn read_error(&self, error: ReadError) -> TransportError {
        match error {
            ReadError::General(error) => self.http_error(error),
            ReadError::Direct(error) => self.direct_error(error),
        }
    }

    async fn push(&self, item: Queued) {
        let _ = self.queue.send(item).await;
    }

    /// Queues a message from the server, after learning from (and
    /// filtering) a `tools/list` answer.
    /// `answering`: the request whose POST this body answered (an
    /// unusable body then fails it at once).
    async fn deliver(&self, message: Vec<u8>, answering: Option<RequestId>) {
        let message = self.learn(message);
        let incoming = match answering {
            Some(id) => Incoming::Answer { id, message },
            None => Incoming::Message(message),
        };
        self.push(Ok(incoming)).await;
    }

    /// Queues a message that came on request `id`'s response stream and
    /// is not its answer.
    async fn deliver_related(&self, message: Vec<u8>, id: RequestId) {
        self.push(Ok(Incoming::Related { id, message })).await;
    }

    /// `message`, after learning from (and filtering) it if it answers a
    /// `tools/list`.
    fn learn(&self, message: Vec<u8>) -> Vec<u8> {
        if self.state().tool_lists.is_empty() {
            message
        } else {
            self.learn_tool_headers(message)
        }
    }

    /// Records each tool's `x-mcp-header` parameters and drops tools whose
    /// annotations are invalid, as the 2026-07-28 Streamable HTTP rules say.
    fn learn_tool_headers(&self, message: Vec<u8>) -> Vec<u8> {
        let Ok(IncomingSniff {
            id: Some(id),
            method: None,
        }) = serde_json::from_slice::<IncomingSniff<'_>>(&message)
        else {
            return message;
        };
        if !self.state().tool_lists.remove(&id) {
            return message;
        }
        let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&message) else {
            return message;
        };
        let Some(tools) = value
            .pointer_mut("/result/tools")
            .and_then(serde_json::Value::as_array_mut)
        else {
            return message;
        };
        let before = tools.len();
        let mut learned = Vec::new();
        tools.retain(|tool| {
            let name = tool.get("name").and_then(serde_json::Value::as_str).unwrap_or("");
            let schema = tool.get("inputSchema").unwrap_or(&serde_json::Value::Null);
            match header_params(schema) {
                Ok(params) => {
                    learned.push((name.to_owned(), params));
                    true
                }
                Err(reason) => {
                    tracing::warn!(server = %self.display, tool = %name, %reason, "left out a tool with an invalid x-mcp-header annotation");
                    false
                }
            }
        });
        let removed = tools.len() != before;
        {
            let mut state = self.state();
            for (name, params) in learned {
                if params.is_empty() {
                    state.tool_headers.remove(&name);
                } else {
                    state.tool_headers.insert(name, params);
                }
            }
        }
        if removed {
            serde_json::to_vec(&value).unwrap_or(message)
        } else {
            message
        }
    }

    fn spawn(
        &self,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> tokio::task::AbortHandle {
        let closing = self.closing.clone();
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        // Reap finished tasks so the set does not grow with every request.
        while tasks.try_join_next().is_some() {}
        tasks.spawn(async move {
            tokio::select! {
                () = closing.cancelled() => {}
                () = task => {}
            }
        })
    }

    /// A request with the headers every message carries.
    async fn request(
        &self,
        method: reqwest::Method,
        session: Option<&str>,
        version: Option<&str>,
    ) -> reqwest::RequestBuilder {
        self.request_with(method, &self.headers, session, version)
            .await
    }

    /// A POST with the headers every message carries, `Accept` and
    /// `Content-Type` among them.
    async fn post(&self, session: Option<&str>, version: Option<&str>) -> reqwest::RequestBuilder {
        self.request_with(reqwest::Method::POST, &self.post_headers, session, version)
            .await
    }

    /// A request from the connection's pre-parsed URL and pre-built
    /// `headers`: no header name is parsed and the header map is allocated
    /// once.
    async fn request_with(
        &self,
        method: reqwest::Method,
        headers: &HeaderMap,
        session: Option<&str>,
        version: Option<&str>,
    ) -> reqwest::RequestBuilder {
        // A DPoP proof names the method; nothing is kept without a provider.
        let method_name = self.auth.as_ref().map(|_| method.clone());
        let mut request = reqwest::Request::new(method, self.url.clone());
        let mut headers = headers.clone();
        // A value that is no header value is left to reqwest, which reports
        // it when the request is sent.
        let mut invalid = Vec::new();
        for (name, value) in [(SESSION_HEADER, session), (VERSION_HEADER, version)] {
            if let Some(value) = value {
                match HeaderValue::from_str(value) {
                    Ok(value) => {
                        headers.append(HeaderName::from_static(name), value);
                    }
                    Err(_) => invalid.push((name, value)),
                }
            }
        }
        *request.headers_mut() = headers;
        let mut request = reqwest::RequestBuilder::from_parts(self.client.clone(), request);
        for (name, value) in invalid {
            request = request.header(name, value);
        }
        if let (Some(auth), Some(method)) = (&self.auth, &method_name) {
            request = auth
                .request_credentials(method.as_str(), self.url.as_str())
                .await
                .apply(request);
        }
        request
    }

    async fn send_request(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Answer, TransportError> {
        let response = tokio::select! {
            response = self.execute(request) => response,
            () = self.closing.cancelled() => Err(TransportError::ClosedByClient),
        };
        if let Ok(response) = &response
            && response.status().is_success()
        {
            // A server may hand out the next DPoP nonce with any answer.
            note_dpop_nonce(self.auth.as_ref(), self.url.as_str(), response.headers());
        }
        response
    }

    /// Sends `request` on the direct path where there is one.
    async fn execute(&self, request: reqwest::RequestBuilder) -> Result<Answer, TransportError> {
        let Some(direct) = &self.direct else {
            return request
                .send()
                .await
                .map(Answer::General)
                .map_err(|e| self.http_error(e));
        };
        let request = request.build().map_err(|e| self.http_error(e))?;
        direct.send(request).await.map_err(|e| self.direct_error(e))
    }

    async fn on_auth_failure(&self, response: &Answer) -> super::AuthFailure {
        auth_failure(
            self.auth.as_ref(),
            self.url.as_str(),
            response.status().as_u16(),
            response.headers(),
        )
        .await
    }

    /// Reads a whole body within the size limit and the idle timeout.
    async fn read_body(
        &self,
        mut response: Answer,
        limit: usize,
    ) -> Result<Vec<u8>, TransportError> {
        let expected = response.content_length().unwrap_or(0).min(limit as u64) as usize;
        let mut body = Vec::with_capacity(expected);
        loop {
            let chunk = tokio::time::timeout(self.read_timeout, response.chunk())
                .await
                .map_err(|_| TransportError::IdleTimeout(self.read_timeout))?
                .map_err(|e| self.read_error(e))?;
            let Some(chunk) = chunk else { return Ok(body) };
            if body.len() + chunk.len() > limit {
                return Err(TransportError::MessageTooLarge {
                    limit,
                    setting: "max_body_size",
                });
            }
            body.extend_from_slice(&chunk);
        }
    }
}

/// What `send` needs to know about an outgoing message.
#[derive(Deserialize, Default)]
struct Sniff<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(borrow, default)]
    params: Option<SniffParams<'a>>,
}

#[derive(Deserialize, Default)]
struct SniffParams<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<Cow<'a, str>>,
    #[serde(rename = "taskId", borrow, default)]
    task_id: Option<Cow<'a, str>>,
    #[serde(rename = "requestId", default)]
    request_id: Option<RequestId>,
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<SniffMeta<'a>>,
}

#[derive(Deserialize, Default)]
struct SniffMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    protocol_version: Option<Cow<'a, str>>,
    #[serde(rename = "progressToken", default)]
    progress_token: Option<serde::de::IgnoredAny>,
}

impl<'a> Sniff<'a> {
    fn parse(message: &'a [u8]) -> Self {
        serde_json::from_slice(message).unwrap_or_default()
    }

    /// Whether the message asks for progress notifications.
    fn asks_progress(&self) -> bool {
        self.params
            .as_ref()
            .and_then(|p| p.meta.as_ref())
            .is_some_and(|meta| meta.progress_token.is_some())
    }

    fn modern_version(&self) -> Option<&str> {
        self.params
            .as_ref()?
            .meta
            .as_ref()?
            .protocol_version
            .as_deref()
    }

    /// `Mcp-Name`: the tool or prompt name, the resource URI, or (the
    /// `io.modelcontextprotocol/tasks` extension) the task id.
    fn routing_name(&self) -> Option<&str> {
        let params = self.params.as_ref()?;
        match self.method.as_deref()? {
            "tools/call" | "prompts/get" => params.name.as_deref(),
            "resources/read" => params.uri.as_deref(),
            "tasks/get" | "tasks/update" | "tasks/cancel" => params.task_id.as_deref(),
            _ => None,
        }
    }
}

/// Reads only the id and shape of an incoming message.
#[derive(Deserialize)]
struct IncomingSniff<'a> {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
}

fn is_response_to(data: &[u8], id: &RequestId) -> bool {
    serde_json::from_slice::<IncomingSniff<'_>>(data)
        .is_ok_and(|m| m.method.is_none() && m.id.as_ref() == Some(id))
}

/// The report for a request whose answer can no longer arrive.
fn lost_response(id: &RequestId, why: impl Into<String>) -> Incoming {
    Incoming::Lost {
        id: id.clone(),
        why: why.into(),
    }
}

struct HttpSink {
    shared: Arc<Shared>,
    _life: Arc<DropGuard>,
}

impl MessageSink for HttpSink {
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        // Not asked for inline: an answer is queued for the reader.
        Box::pin(async move { send(self.shared.clone(), message, false).await.map(drop) })
    }

    fn send_request<'a>(
        &'a self,
        message: &'a [u8],
    ) -> BoxFuture<'a, Result<Sent, TransportError>> {
        Box::pin(send(self.shared.clone(), message, true))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let shared = &self.shared;
            if shared.closing.is_cancelled() {
                return;
            }
            shared.closing.cancel();
            let (session, version) = {
                let state = shared.state();
                (state.session_id.clone(), state.negotiated_version.clone())
            };
            if let Some(session) = session {
                // Ends the session on the server; 405 means it does not
                // allow that, which is fine.
                let request = shared
                    .request(reqwest::Method::DELETE, Some(&session), version.as_deref())
                    .await;
                let _ = tokio::time::timeout(Duration::from_secs(2), shared.execute(request)).await;
            }
            shared
                .tasks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .abort_all();
        })
    }
}

/// Sends `message`; with `inline`, a request's JSON answer is given back
/// rather than queued for the reader.
async fn send(shared: Arc<Shared>, message: &[u8], inline: bool) -> Result<Sent, TransportError> {
    let sniff = Sniff::parse(message);
    let initialized = sniff.method.as_deref() == Some("notifications/initialized");
    // A quiet session's GET stream opens with the first request that asks
    // for progress: a server answering in JSON can send progress nowhere
    // else.
    let wants_progress = sniff.id.is_some() && sniff.asks_progress();
    // The stream for server-initiated messages opens beside
    // `notifications/initialized`, not after it: one round trip, not two.
    // On the direct path it follows on the POST's connection instead: a
    // connection made for it would cost more than the round trip.
    let get_opened = if (initialized && shared.direct.is_none()) || wants_progress {
        open_get_stream(&shared, wants_progress)
    } else {
        None
    };
    // Progress needs the stream open before the server starts on the
    // request.
    let get_opened = match get_opened {
        Some(opened) if wants_progress => {
            let _ = tokio::time::timeout(GET_STREAM_WAIT, opened).await;
            None
        }
        opened => opened,
    };
    let outcome = send_sniffed(&shared, message, &sniff, inline).await;
    let get_opened = match get_opened {
        None if initialized && outcome.is_ok() => open_get_stream(&shared, false),
        opened => opened,
    };
    if let (Ok(_), Some(opened)) = (&outcome, get_opened) {
        let _ = tokio::time::timeout(GET_STREAM_WAIT, opened).await;
    }
    outcome
}

async fn send_sniffed(
    shared: &Arc<Shared>,
    message: &[u8],
    sniff: &Sniff<'_>,
    inline: bool,
) -> Result<Sent, TransportError> {
    let method = sniff.method.as_deref();
    let modern_version = sniff.modern_version();
    let legacy_session = shared.state().negotiated_version.is_some();

    if method == Some("notifications/cancelled") {
        // The caller gave up: stop reading (and never resume) its stream.
        if let Some(id) = sniff.params.as_ref().and_then(|p| p.request_id.as_ref())
            && let Some(stream) = shared.state().streams.remove(id)
        {
            stream.abort();
        }
        // Stateless era: closing the response stream is the cancellation;
        // the session era also wants the notification.
        if !legacy_session {
            return Ok(Sent::Sent);
        }
    }
    if method == Some("initialize") {
        let mut state = shared.state();
        state.initialize = Some(message.to_vec());
        state.session_id = None;
        state.negotiated_version = None;
    }

    let mut reinitialized = false;
    let mut auth_retries = AuthRetries::default();
    loop {
        let (session, version) = {
            let state = shared.state();
            let version = modern_version
                .map(str::to_owned)
                .or_else(|| state.negotiated_version.clone());
            (state.session_id.clone(), version)
        };
        let mut request = shared
            .post(session.as_deref(), version.as_deref())
            .await
            .body(message.to_vec());
        if modern_version.is_some()
            && let Some(method) = method
        {
            request = request.header(
                HeaderName::from_static(METHOD_HEADER),
                encode_header_value(method),
            );
            if let Some(name) = sniff.routing_name() {
                request = request.header(
                    HeaderName::from_static(NAME_HEADER),
                    encode_header_value(name),
                );
            }
            for (name, value) in mirrored_params(shared, sniff, message) {
                request = request.header(name, value);
            }
            if method == "tools/list"
                && let Some(id) = &sniff.id
            {
                shared.state().tool_lists.insert(id.clone());
            }
        }
        let response = shared.send_request(request).await?;
        let status = response.status();

        if status.as_u16() == 401 || status.as_u16() == 403 {
            let failure = shared.on_auth_failure(&response).await;
            // New credentials (a refresh): the request never ran, so it
            // goes once more.
            if auth_retries.allow(&failure) {
                continue;
            }
            return Err(failure.error);
        }
        if status.as_u16() == 404
            && let Some(lost) = session
        {
            if reinitialized || method == Some("initialize") {
                return Err(TransportError::SessionExpired { session_id: lost });
            }
            reinitialize(shared, &lost).await?;
            reinitialized = true;
            // The request never reached the server: send it again.
            continue;
        }
        return on_response(shared, response, sniff, inline).await;
    }
}

/// `Mcp-Param-*` headers for a `tools/call` of a tool that asks for them.
fn mirrored_params(shared: &Shared, sniff: &Sniff<'_>, message: &[u8]) -> Vec<(String, String)> {
    if sniff.method.as_deref() != Some("tools/call") {
        return Vec::new();
    }
    let Some(name) = sniff.params.as_ref().and_then(|p| p.name.as_deref()) else {
        return Vec::new();
    };
    let Some(params) = shared.state().tool_headers.get(name).cloned() else {
        return Vec::new();
    };
    #[derive(Deserialize)]
    struct Call {
        params: CallParams,
    }
    #[derive(Deserialize)]
    struct CallParams {
        #[serde(default)]
        arguments: serde_json::Value,
    }
    serde_json::from_slice::<Call>(message)
        .map(|call| param_headers(&params, &call.params.arguments))
        .unwrap_or_default()
}

async fn on_response(
    shared: &Arc<Shared>,
    response: Answer,
    sniff: &Sniff<'_>,
    inline: bool,
) -> Result<Sent, TransportError> {
    let status = response.status();
    let is_request = sniff.method.is_some() && sniff.id.is_some();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();

    if sniff.method.as_deref() == Some("initialize")
        && status.is_success()
        && let Some(session) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
    {
        shared.state().session_id = Some(session.to_owned());
    }

    if !status.is_success() {
        let body = shared
            .read_body(response, 64 * 1024)
            .await
            .unwrap_or_default();
        // A JSON-RPC error in the body is the server's answer (a modern
        // server rejects version, method or headers this way).
        if let (true, Some(id)) = (is_request, &sniff.id)
            && let Some(answer) = error_answer(&body, id)
        {
            shared.push(Ok(Incoming::Message(answer))).await;
            return Ok(Sent::Sent);
        }
        let preview = String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY_PREVIEW)])
            .trim()
            .to_owned();
        return Err(TransportError::HttpStatus {
            status: status.as_u16(),
            body: preview,
        });
    }

    if content_type.starts_with("text/event-stream") {
        let Some(id) = sniff.id.clone().filter(|_| is_request) else {
            // An event stream in reply to a notification: read what it says.
            let shared2 = shared.clone();
            shared.spawn(async move {
                let _ = read_stream(&shared2, response, None).await;
            });
            return Ok(Sent::Sent);
        };
        let is_initialize = sniff.method.as_deref() == Some("initialize");
        let shared2 = shared.clone();
        let key = id.clone();
        let handle = shared.spawn(async move {
            response_stream(shared2, response, id, is_initialize).await;
        });
        shared.state().streams.insert(key, handle);
        return Ok(Sent::Sent);
    }

    let body = shared.read_body(response, shared.max_body_size).await?;
    if is_request && !is_json_answer(status.as_u16(), &content_type, &body) {
        // The answer came and is unusable: the call fails now, not after
        // its timeout.
        return Err(TransportError::InvalidResponse {
            status: status.as_u16(),
            content_type: content_type.escape_debug().to_string(),
            body: if body.is_empty() {
                String::new()
            } else {
                escaped_preview(&body)
            },
        });
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        // 202 Accepted for a notification or response; an empty 200 for a
        // request means the answer will come on the GET stream.
        return Ok(Sent::Sent);
    }
    if sniff.method.as_deref() == Some("initialize") {
        record_initialize_result(shared, &body);
    }
    if !is_request && switchboard_types::jsonrpc::Incoming::from_slice(&body).is_err() {
        // Some servers answer a notification with 200 and `{}`: nothing to
        // deliver, and nothing worth a warning.
        tracing::trace!(server = %shared.display, "ignored a non-message body in reply to a notification");
        return Ok(Sent::Sent);
    }
    if inline && is_request {
        return Ok(Sent::Answer(shared.learn(body)));
    }
    shared
        .deliver(body, sniff.id.clone().filter(|_| is_request))
        .await;
    Ok(Sent::Sent)
}

/// Whether a non-SSE answer to a request can be the JSON-RPC answer: JSON,
/// said to be JSON, and (for a `200`) not empty. An empty `202` keeps its
/// old meaning (the answer comes on the GET stream).
fn is_json_answer(status: u16, content_type: &str, body: &[u8]) -> bool {
    if body.iter().all(u8::is_ascii_whitespace) {
        return status != 200;
    }
    let media = content_type.split(';').next().unwrap_or("").trim();
    // Only the first byte is judged here: the engine parses the body once,
    // and fails this request at once if it is not JSON-RPC after all.
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    (media == "application/json" || media.ends_with("+json")) && matches!(first, Some(b'{' | b'['))
}

/// Opens the stream for server-initiated messages (once per session) and
/// returns what says it has been answered: the caller waits for it
/// (briefly), so that whatever the server sends from then on has a stream
/// to go to. (Not waiting was tried for issue 18: the TypeScript SDK's
/// server drops a log line sent on a GET stream not yet open, and the
/// interop test caught the loss. The wait overlaps the
/// `notifications/initialized` POST, so it costs no round trip of its own.)
///
/// A quiet session opens none unless `anyway` (a request asks for
/// progress), and then only once the session is established.
fn open_get_stream(
    shared: &Arc<Shared>,
    anyway: bool,
) -> Option<tokio::sync::oneshot::Receiver<()>> {
    {
        let mut state = shared.state();
        let wanted = if anyway {
            state.negotiated_version.is_some()
        } else {
            !state.quiet
        };
        if state.get_stream_started || !wanted {
            return None;
        }
        state.get_stream_started = true;
    }
    let (ready, opened) = tokio::sync::oneshot::channel();
    shared.spawn(get_stream(shared.clone(), ready));
    Some(opened)
}

fn record_initialize_result(shared: &Shared, body: &[u8]) {
    #[derive(Deserialize)]
    struct Answer<'a> {
        #[serde(borrow)]
        result: Option<InitResult<'a>>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct InitResult<'a> {
        protocol_version: String,
        #[serde(borrow, default)]
        capabilities: Option<&'a serde_json::value::RawValue>,
    }
    if let Ok(Answer {
        result: Some(result),
    }) = serde_json::from_slice::<Answer<'_>>(body)
    {
        let mut state = shared.state();
        state.quiet = !streams::may_push(result.capabilities, state.initialize.as_deref());
        state.negotiated_version = Some(result.protocol_version);
    }
}

/// The body as a JSON-RPC error answer to `id`, if it is one.
fn error_answer(body: &[u8], id: &RequestId) -> Option<Vec<u8>> {
    let mut value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let object = value.as_object_mut()?;
    if object.get("jsonrpc")?.as_str()? != "2.0" || !object.get("error")?.is_object() {
        return None;
    }
    // The HTTP exchange pairs this answer with the request, whatever id the
    // server wrote (null, or a placeholder such as "server-error").
    object.insert("id".into(), serde_json::to_value(id).ok()?);
    serde_json::to_vec(&value).ok()
}

/// Re-establishes a lost session by replaying `initialize`, once per loss.
async fn reinitialize(shared: &Arc<Shared>, lost: &str) -> Result<(), TransportError> {
    let _one_at_a_time = shared.reinit.lock().await;
    let initialize = {
        let state = shared.state();
        if state.session_id.as_deref() != Some(lost) {
            // Another request already re-established it.
            return Ok(());
        }
        state.initialize.clone()
    };
    let Some(initialize) = initialize else {
        return Err(TransportError::SessionExpired {
            session_id: lost.to_owned(),
        });
    };
    tracing::info!(server = %shared.display, "the server lost the session; initializing again");
    // The engine never sees this exchange, so it gets an id of its own.
    let mut message: serde_json::Value =
        serde_json::from_slice(&initialize).map_err(|_| TransportError::SessionExpired {
            session_id: lost.to_owned(),
        })?;
    message["id"] = serde_json::Value::String(format!("switchboard-reinitialize-{lost}"));
    let version = shared.state().negotiated_version.clone();
    let request = shared
        .post(None, None)
        .await
        .body(serde_json::to_vec(&message).expect("JSON values serialize"));
    let response = shared.send_request(request).await?;
    let expired = || TransportError::SessionExpired {
        session_id: lost.to_owned(),
    };
    if !response.status().is_success() {
        return Err(expired());
    }
    let session = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // The answer may be JSON or a one-event stream; either way it is ours.
    let _ = shared.read_body(response, shared.max_body_size).await;
    {
        let mut state = shared.state();
        state.session_id = session.clone();
        state.get_stream_started = false;
    }
    let request = shared
        .post(session.as_deref(), version.as_deref())
        .await
        .body(&br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#[..]);
    let response = shared.send_request(request).await?;
    if !response.status().is_success() {
        return Err(expired());
    }
    if let Some(opened) = open_get_stream(shared, false) {
        let _ = tokio::time::timeout(GET_STREAM_WAIT, opened).await;
    }
    Ok(())
}

struct HttpStream {
    rx: mpsc::Receiver<Queued>,
    closing: CancellationToken,
    _life: Arc<DropGuard>,
}

impl MessageStream for HttpStream {
    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Incoming>, TransportError>> {
        Box::pin(async move {
            tokio::select! {
                biased;
                message = self.rx.recv() => match message {
                    Some(Ok(incoming)) => Ok(Some(incoming)),
                    Some(Err(error)) => Err(error),
                    None => Ok(None),
                },
                () = self.closing.cancelled() => Ok(None),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Sniff;

    #[test]
    fn mcp_name_comes_from_the_routing_field_of_each_method() {
        let name = |message: &str| {
            Sniff::parse(message.as_bytes())
                .routing_name()
                .map(str::to_owned)
        };
        assert_eq!(
            name(r#"{"method":"tools/call","params":{"name":"t","uri":"u"}}"#).as_deref(),
            Some("t")
        );
        assert_eq!(
            name(r#"{"method":"resources/read","params":{"uri":"file:///a"}}"#).as_deref(),
            Some("file:///a")
        );
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let message = format!(r#"{{"method":"{method}","params":{{"taskId":"t-1"}}}}"#);
            assert_eq!(name(&message).as_deref(), Some("t-1"), "{method}");
        }
        assert_eq!(
            name(r#"{"method":"tools/list","params":{"name":"x"}}"#),
            None
        );
    }
}
