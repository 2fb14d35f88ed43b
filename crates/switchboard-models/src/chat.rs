//! A small client for model endpoints: OpenAI-compatible Chat Completions
//! (OpenAI itself and the many local servers that speak its API:
//! llama.cpp's `llama-server`, Ollama, vLLM, LM Studio …) by default, and
//! with [`ChatClientBuilder::provider`] OpenAI Responses, Anthropic
//! Messages or Gemini.
//!
//! It sends a request body as given and hands back the answer as JSON, or
//! its server-sent events one by one ([`ChatClient::stream`]); the shape of
//! both is the caller's business (see [`crate::model`], [`crate::agent`]
//! and, with feature `sampling`, [`crate::sampling`]). It authenticates as
//! each API wants (`Authorization: Bearer`, Anthropic's `x-api-key` and
//! `anthropic-version`, Gemini's `x-goog-api-key`), and sends a request
//! again after an answer of 408, 429, 5xx or 529 (Anthropic's
//! "overloaded") or a failed connection, waiting what `retry-after` says
//! (at most [`MAX_RETRY_WAIT`]) or 0.5, 1, 2 s …, up to
//! [`ChatClientBuilder::retries`] times.
//!
//! ```no_run
//! # async fn demo() -> Result<(), switchboard_models::chat::ChatError> {
//! use switchboard_models::chat::ChatClient;
//!
//! let chat = ChatClient::builder("http://127.0.0.1:8080/v1", "qwen2.5")
//!     .api_key(std::env::var("OPENAI_API_KEY").ok())
//!     .build()?;
//! let answer = chat
//!     .complete(&serde_json::json!({
//!         "model": chat.model(),
//!         "messages": [{"role": "user", "content": "Say hi"}],
//!     }))
//!     .await?;
//! println!("{}", answer["choices"][0]["message"]["content"]);
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::Provider;

/// Default for [`ChatClientBuilder::timeout`]: a local model on a CPU can
/// take minutes to answer a long conversation.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Default for [`ChatClientBuilder::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`ChatClientBuilder::max_response_bytes`]: 16 MiB, far more
/// than any chat answer, little enough that a broken endpoint cannot
/// exhaust memory.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// How much of an error answer's body is kept (in characters).
const BODY_EXCERPT: usize = 1000;

/// Default for [`ChatClientBuilder::retries`].
pub const DEFAULT_RETRIES: u32 = 3;
/// The longest wait before sending again, whatever `retry-after` says.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// The `anthropic-version` header sent to Anthropic.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The full `…/chat/completions` URL for `base`, which may be the API root
/// (`http://127.0.0.1:8080/v1`) or already the full URL.
pub fn completions_url(base: &str) -> String {
    endpoint_url(Provider::OpenAiChat, base, "", false)
}

/// The URL a request for `model` goes to at `base` (the API root, or the
/// full URL) for `provider`: `{base}/chat/completions`, `{base}/responses`,
/// `{base}/v1/messages` (`{base}/messages` when `base` ends in `/v1`), or
/// Gemini's `{base}/v1beta/models/{model}:generateContent` (with `stream`,
/// `:streamGenerateContent?alt=sse`; `{base}/models/…` when `base` ends in
/// a version).
pub fn endpoint_url(provider: Provider, base: &str, model: &str, stream: bool) -> String {
    let base = base.trim_end_matches('/');
    let under = |path: &str| {
        if base.ends_with(path) {
            base.to_owned()
        } else {
            format!("{base}{path}")
        }
    };
    match provider {
        Provider::OpenAiChat => under("/chat/completions"),
        Provider::OpenAiResponses => under("/responses"),
        Provider::Anthropic if base.ends_with("/messages") => base.to_owned(),
        Provider::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
        Provider::Anthropic => format!("{base}/v1/messages"),
        Provider::Gemini => {
            let root = match base.rsplit_once('/') {
                Some((_, last)) if last.starts_with("v1") => base.to_owned(),
                _ => format!("{base}/v1beta"),
            };
            let method = if stream {
                "streamGenerateContent?alt=sse"
            } else {
                "generateContent"
            };
            format!("{root}/models/{model}:{method}")
        }
    }
}

/// What went wrong talking to the chat endpoint. `Display` names the
/// endpoint (without credentials) and what failed; the underlying error is
/// the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChatError {
    /// The base URL is not an `http` or `https` URL.
    #[error("invalid chat endpoint URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// The HTTP client could not be set up (TLS backend …).
    #[error("the HTTP client for the chat endpoint could not be set up")]
    Client {
        /// The HTTP library's error.
        #[source]
        source: BoxError,
    },
    /// The endpoint could not be reached (refused, DNS, TLS …).
    #[error("the chat endpoint {url} could not be reached (is the server running?)")]
    Connect {
        /// The completions URL.
        url: String,
        /// The HTTP library's error.
        #[source]
        source: BoxError,
    },
    /// No complete answer within the timeout.
    #[error("the chat endpoint {url} did not answer within {} s", after.as_secs_f64())]
    Timeout {
        /// The completions URL.
        url: String,
        /// The timeout.
        after: Duration,
    },
    /// The endpoint answered with an error status.
    #[error(
        "the chat endpoint {url} answered HTTP {}{}: {}",
        status_text(*status),
        auth_hint(*status),
        detail(message.as_deref(), body)
    )]
    Status {
        /// The completions URL.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The error's `error.message` (OpenAI's error shape, or a plain
        /// `error` string), if the body has one.
        message: Option<String>,
        /// The start of the body, as text.
        body: String,
    },
    /// The answer's body could not be read.
    #[error("the chat endpoint {url}'s answer could not be read")]
    Read {
        /// The completions URL.
        url: String,
        /// The HTTP library's error.
        #[source]
        source: BoxError,
    },
    /// The answer is larger than [`ChatClientBuilder::max_response_bytes`].
    #[error(
        "the chat endpoint {url}'s answer is larger than {limit} bytes; raise the limit if this is expected"
    )]
    TooLarge {
        /// The completions URL.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// The request is not JSON (a `Serialize` that fails, or a map with
    /// keys that are not strings).
    #[error("the chat request could not be written as JSON")]
    Request {
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// A streamed answer broke off or said something that cannot be
    /// used: it ended before its last event (cut mid-answer), an event is
    /// not JSON, or the endpoint sent an error event (`retryable` for an
    /// overloaded endpoint). Nothing of it is used.
    #[error("the chat endpoint {url}'s streamed answer cannot be used: {reason}")]
    Stream {
        /// The request URL.
        url: String,
        /// What went wrong.
        reason: String,
        /// Whether sending the request again may work.
        retryable: bool,
    },
    /// The answer is not JSON.
    #[error("the chat endpoint {url} answered with something that is not JSON")]
    Json {
        /// The completions URL.
        url: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
}

impl ChatError {
    /// The request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ChatError::Timeout { .. })
    }

    /// The HTTP status of an error answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            ChatError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether sending the same request again later may work (unreachable,
    /// timed out, 408, 429, 5xx).
    pub fn is_retryable(&self) -> bool {
        match self {
            ChatError::Connect { .. } | ChatError::Timeout { .. } => true,
            ChatError::Status { status, .. } => matches!(status, 408 | 429 | 500..=599),
            ChatError::Stream { retryable, .. } => *retryable,
            _ => false,
        }
    }
}

fn status_text(status: u16) -> String {
    reqwest::StatusCode::from_u16(status).map_or_else(|_| status.to_string(), |s| s.to_string())
}

fn detail(message: Option<&str>, body: &str) -> String {
    match message {
        Some(message) => message.to_owned(),
        None if body.trim().is_empty() => "(no body)".to_owned(),
        None => body.chars().take(300).collect(),
    }
}

fn auth_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => " (is the API key right?)",
        _ => "",
    }
}

/// Builds a [`ChatClient`]. Setters never fail; [`build`](Self::build)
/// reports a bad URL.
#[must_use]
#[derive(Clone)]
pub struct ChatClientBuilder {
    provider: Provider,
    base: String,
    model: String,
    retries: u32,
    api_key: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
    max_response_bytes: usize,
    http: Option<reqwest::Client>,
}

impl fmt::Debug for ChatClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatClientBuilder")
            .field("provider", &self.provider)
            .field("base", &self.base)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("http", &self.http.is_some())
            .finish()
    }
}

impl ChatClientBuilder {
    /// The API the endpoint speaks (default [`Provider::OpenAiChat`]).
    pub fn provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// How many times a request is sent again after a retryable failure
    /// (default [`DEFAULT_RETRIES`]; 0: never).
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// The API key, sent as `Authorization: Bearer …` (Anthropic:
    /// `x-api-key`; Gemini: `x-goog-api-key`); `None` or an empty key
    /// sends none (local servers rarely want one).
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key.filter(|k| !k.is_empty());
        self
    }

    /// How long one request may take, answer included (default
    /// [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long connecting may take (default [`DEFAULT_CONNECT_TIMEOUT`];
    /// ignored with [`http_client`](Self::http_client)).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest answer accepted, in bytes (default
    /// [`DEFAULT_MAX_RESPONSE_BYTES`]).
    pub fn max_response_bytes(mut self, limit: usize) -> Self {
        self.max_response_bytes = limit;
        self
    }

    /// Sends with this HTTP client (sharing its connection pool and proxy
    /// settings) instead of one of its own.
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    /// Makes the client.
    ///
    /// # Errors
    /// [`ChatError::InvalidUrl`] for a base that is not an `http(s)` URL;
    /// [`ChatError::Client`] when the HTTP client cannot be set up.
    pub fn build(self) -> Result<ChatClient, ChatError> {
        let url = endpoint_url(self.provider, &self.base, &self.model, false);
        let invalid = |reason: String| ChatError::InvalidUrl {
            url: self.base.clone(),
            reason,
        };
        let parsed = reqwest::Url::parse(&url).map_err(|e| invalid(e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(invalid(format!(
                "the scheme must be http or https, not `{}`",
                parsed.scheme()
            )));
        }
        let shown = shown_url(&parsed);
        let http = match self.http {
            Some(http) => http,
            // TLS as the MCP transports set it up: the CA roots are read at
            // the first `https://` handshake, so a bad `SSL_CERT_FILE` fails
            // that request naming the variable, not this build.
            None => switchboard::transport::http::reqwest_builder()
                .map_err(|e| ChatError::Client {
                    source: Box::new(e),
                })?
                .connect_timeout(self.connect_timeout)
                .build()
                .map_err(|e| ChatError::Client {
                    source: Box::new(e),
                })?,
        };
        Ok(ChatClient {
            inner: Arc::new(Inner {
                base: self.base.clone(),
                provider: self.provider,
                stream_url: endpoint_url(self.provider, &self.base, &self.model, true),
                retries: self.retries,
                url,
                shown,
                model: self.model,
                api_key: self.api_key,
                timeout: self.timeout,
                max_response_bytes: self.max_response_bytes,
                http,
            }),
        })
    }
}

/// The URL as messages show it: no user name, password or query (where
/// keys hide).
fn shown_url(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.to_string()
}

/// An OpenAI-compatible Chat Completions endpoint and model. Cheap to clone.
#[derive(Clone)]
pub struct ChatClient {
    inner: Arc<Inner>,
}

struct Inner {
    /// The base as given, for [`ChatClient::for_model`].
    base: String,
    provider: Provider,
    url: String,
    /// Where streamed requests go (Gemini's differs).
    stream_url: String,
    retries: u32,
    shown: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    max_response_bytes: usize,
    http: reqwest::Client,
}

impl fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatClient")
            .field("provider", &self.inner.provider)
            .field("url", &self.inner.shown)
            .field("model", &self.inner.model)
            .field(
                "api_key",
                &self.inner.api_key.as_ref().map(|_| "<redacted>"),
            )
            .field("timeout", &self.inner.timeout)
            .field("max_response_bytes", &self.inner.max_response_bytes)
            .finish()
    }
}

impl ChatClient {
    /// A builder for `model` at `base`: the API root (`…/v1`) or the full
    /// `…/chat/completions` URL.
    pub fn builder(base: impl Into<String>, model: impl Into<String>) -> ChatClientBuilder {
        ChatClientBuilder {
            provider: Provider::OpenAiChat,
            base: base.into(),
            model: model.into(),
            retries: DEFAULT_RETRIES,
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            http: None,
        }
    }

    /// A client with default settings and no API key.
    ///
    /// # Errors
    /// As [`ChatClientBuilder::build`].
    pub fn new(base: impl Into<String>, model: impl Into<String>) -> Result<Self, ChatError> {
        Self::builder(base, model).build()
    }

    /// The full URL requests go to.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The API the endpoint speaks.
    pub fn provider(&self) -> Provider {
        self.inner.provider
    }

    /// The same endpoint, settings and connection pool, for `model`.
    pub fn for_model(&self, model: &str) -> ChatClient {
        let inner = &*self.inner;
        let url = endpoint_url(inner.provider, &inner.base, model, false);
        ChatClient {
            inner: Arc::new(Inner {
                base: inner.base.clone(),
                provider: inner.provider,
                shown: reqwest::Url::parse(&url)
                    .map_or_else(|_| inner.shown.clone(), |u| shown_url(&u)),
                url,
                stream_url: endpoint_url(inner.provider, &inner.base, model, true),
                retries: inner.retries,
                model: model.to_owned(),
                api_key: inner.api_key.clone(),
                timeout: inner.timeout,
                max_response_bytes: inner.max_response_bytes,
                http: inner.http.clone(),
            }),
        }
    }

    /// The model requests name.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// Whether an API key is sent.
    pub fn has_api_key(&self) -> bool {
        self.inner.api_key.is_some()
    }

    /// POSTs `request` (a body of the client's API: for Chat Completions
    /// `model`, `messages` …; a `Value` or any `Serialize` that writes one)
    /// and returns the answer.
    ///
    /// # Errors
    /// [`ChatError::Connect`], [`ChatError::Timeout`], [`ChatError::Status`]
    /// (with the error's message), [`ChatError::Read`],
    /// [`ChatError::TooLarge`], [`ChatError::Json`] — the retryable ones
    /// after [`ChatClientBuilder::retries`] attempts more.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request (the connection closes).
    pub async fn complete<T: serde::Serialize + ?Sized>(
        &self,
        request: &T,
    ) -> Result<Value, ChatError> {
        let request =
            serde_json::to_string(request).map_err(|source| ChatError::Request { source })?;
        let (response, deadline) = self.send(&self.inner.url, request).await?;
        let mut body = Vec::new();
        let mut response = response;
        while let Some(chunk) = self.chunk(&mut response, deadline).await? {
            if body.len() + chunk.len() > self.inner.max_response_bytes {
                return Err(self.too_large());
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|source| ChatError::Json {
            url: self.inner.shown.clone(),
            source,
        })
    }

    /// POSTs `request` asking for a streamed answer (the body should say
    /// `"stream": true` where the API wants it; Gemini's URL says it) and
    /// hands each server-sent event to `event` — its `event:` name, if
    /// any, and its data — as it arrives, until `event` says
    /// [`Flow::Done`] or the stream ends. An endpoint that answers with
    /// plain JSON instead (one that does not stream) is handed over whole,
    /// as [`Streamed::Whole`].
    ///
    /// The whole answer is bounded by the timeout and by
    /// [`ChatClientBuilder::max_response_bytes`], so an endless stream ends
    /// with [`ChatError::Timeout`] or [`ChatError::TooLarge`]. Failures
    /// before the answer starts are sent again as [`complete`]'s are;
    /// nothing is sent again once an event was handed over.
    ///
    /// [`complete`]: Self::complete
    ///
    /// # Errors
    /// As [`complete`](Self::complete), and whatever `event` returns.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request (the connection closes).
    pub async fn stream<T: serde::Serialize + ?Sized>(
        &self,
        request: &T,
        mut event: impl FnMut(Option<&str>, &str) -> Result<Flow, ChatError>,
    ) -> Result<Streamed, ChatError> {
        let request =
            serde_json::to_string(request).map_err(|source| ChatError::Request { source })?;
        let (mut response, deadline) = self.send(&self.inner.stream_url, request).await?;
        let sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        let mut body = Vec::new();
        let mut read = 0usize;
        let mut parser = crate::sse::Parser::default();
        while let Some(chunk) = self.chunk(&mut response, deadline).await? {
            read += chunk.len();
            if read > self.inner.max_response_bytes {
                return Err(self.too_large());
            }
            if !sse {
                body.extend_from_slice(&chunk);
                continue;
            }
            for (name, data) in parser.feed(&chunk) {
                if event(name.as_deref(), &data)? == Flow::Done {
                    return Ok(Streamed::Events);
                }
            }
        }
        if sse {
            if let Some((name, data)) = parser.finish()
                && event(name.as_deref(), &data)? == Flow::Done
            {
                return Ok(Streamed::Events);
            }
            return Ok(Streamed::Ended);
        }
        serde_json::from_slice(&body)
            .map(Streamed::Whole)
            .map_err(|source| ChatError::Json {
                url: self.inner.shown.clone(),
                source,
            })
    }

    /// Sends `body` to `url` until it is answered with success, or fails
    /// for good: the answer (its body unread) and the request's deadline.
    async fn send(
        &self,
        url: &str,
        body: String,
    ) -> Result<(reqwest::Response, tokio::time::Instant), ChatError> {
        let inner = &*self.inner;
        let deadline = tokio::time::Instant::now() + inner.timeout;
        let mut attempt = 0;
        loop {
            let (error, wait) = match self.send_once(url, &body, deadline).await {
                Ok(response) => return Ok((response, deadline)),
                Err(failed) => failed,
            };
            if attempt >= inner.retries || !error.is_retryable() {
                return Err(error);
            }
            attempt += 1;
            let wait = wait
                .unwrap_or_else(|| Duration::from_millis(500) * 2u32.pow(attempt - 1))
                .min(MAX_RETRY_WAIT);
            if tokio::time::Instant::now() + wait >= deadline {
                return Err(error);
            }
            tracing::info!(attempt, wait_ms = wait.as_millis() as u64, %error, "sending the model request again");
            tokio::time::sleep(wait).await;
        }
    }

    /// One attempt: the answer, or the error and how long `retry-after`
    /// asks to wait.
    async fn send_once(
        &self,
        url: &str,
        body: &str,
        deadline: tokio::time::Instant,
    ) -> Result<reqwest::Response, (ChatError, Option<Duration>)> {
        let inner = &*self.inner;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let mut builder = inner
            .http
            .post(url)
            .timeout(left)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_owned());
        builder = match (inner.provider, &inner.api_key) {
            (Provider::Anthropic, key) => {
                let builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
                match key {
                    Some(key) => builder.header("x-api-key", key),
                    None => builder,
                }
            }
            (Provider::Gemini, Some(key)) => builder.header("x-goog-api-key", key),
            (_, Some(key)) => builder.bearer_auth(key),
            (_, None) => builder,
        };
        let response = builder.send().await.map_err(|e| {
            let error = self.timed_out(&e).unwrap_or_else(|| ChatError::Connect {
                url: inner.shown.clone(),
                source: Box::new(e.without_url()),
            });
            (error, None)
        })?;
        let status = response.status();
        if response
            .content_length()
            .is_some_and(|l| l > inner.max_response_bytes as u64)
        {
            return Err((self.too_large(), None));
        }
        if status.is_success() {
            return Ok(response);
        }
        let wait = retry_after(response.headers());
        let mut response = response;
        let mut body = Vec::new();
        loop {
            match self.chunk(&mut response, deadline).await {
                Ok(Some(chunk)) if body.len() + chunk.len() <= inner.max_response_bytes => {
                    body.extend_from_slice(&chunk);
                }
                Ok(Some(_)) => return Err((self.too_large(), None)),
                Ok(None) => break,
                Err(error) => return Err((error, wait)),
            }
        }
        let text = String::from_utf8_lossy(&body);
        Err((
            ChatError::Status {
                url: inner.shown.clone(),
                // Anthropic's "overloaded" is 529: retryable, as a 5xx.
                status: status.as_u16(),
                message: error_message(&text),
                body: text.chars().take(BODY_EXCERPT).collect(),
            },
            wait,
        ))
    }

    /// The next piece of `response`'s body, within the deadline.
    async fn chunk(
        &self,
        response: &mut reqwest::Response,
        deadline: tokio::time::Instant,
    ) -> Result<Option<bytes::Bytes>, ChatError> {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => Err(ChatError::Timeout {
                url: self.inner.shown.clone(),
                after: self.inner.timeout,
            }),
            Ok(chunk) => chunk.map_err(|e| {
                self.timed_out(&e).unwrap_or_else(|| ChatError::Read {
                    url: self.inner.shown.clone(),
                    source: Box::new(e.without_url()),
                })
            }),
        }
    }

    fn timed_out(&self, error: &reqwest::Error) -> Option<ChatError> {
        error.is_timeout().then(|| ChatError::Timeout {
            url: self.inner.shown.clone(),
            after: self.inner.timeout,
        })
    }

    fn too_large(&self) -> ChatError {
        ChatError::TooLarge {
            url: self.inner.shown.clone(),
            limit: self.inner.max_response_bytes,
        }
    }
}

/// What [`ChatClient::stream`]'s event handler says: go on, or the answer
/// is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Hand over the next event.
    More,
    /// The answer is complete; stop reading.
    Done,
}

/// How a streamed request ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Streamed {
    /// The handler said [`Flow::Done`].
    Events,
    /// The stream ended without the handler saying it was complete.
    Ended,
    /// The endpoint answered with one JSON document, not a stream.
    Whole(Value),
}

/// How long `retry-after` (seconds, or an HTTP date) asks to wait.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    if let Ok(seconds) = value.trim().parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::from_secs_f64(seconds.min(3600.0)));
    }
    let when = httpdate_seconds(value.trim())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    Some(Duration::from_secs(when.saturating_sub(now)))
}

/// Seconds since the epoch of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn httpdate_seconds(text: &str) -> Option<u64> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as u64
        + 1;
    let (day, year): (u64, u64) = (day.parse().ok()?, year.parse().ok()?);
    let mut hms = time.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

/// The message of an error body: OpenAI's `{"error": {"message": …}}`,
/// `{"error": "…"}` (llama.cpp, Ollama) or `{"message": …}`.
fn error_message(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let message = match &value["error"] {
        Value::String(s) => Some(s.as_str()),
        error => error["message"]
            .as_str()
            .or_else(|| value["message"].as_str()),
    }?;
    const MAX: usize = 500;
    Some(if message.chars().count() > MAX {
        let cut: String = message.chars().take(MAX).collect();
        format!("{cut}…")
    } else {
        message.to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_takes_a_base_or_the_full_path() {
        assert_eq!(
            completions_url("http://h/v1/"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            completions_url("http://h/v1/chat/completions"),
            "http://h/v1/chat/completions"
        );
        let chat = ChatClient::new("http://h:8080/v1", "m").unwrap();
        assert_eq!(chat.url(), "http://h:8080/v1/chat/completions");
        assert_eq!(chat.model(), "m");
        assert!(!chat.has_api_key());
    }

    #[test]
    fn bad_urls_are_refused_and_secrets_never_shown() {
        let error = ChatClient::new("ftp://h/v1", "m").unwrap_err();
        assert!(error.to_string().contains("http or https"), "{error}");
        assert!(ChatClient::new("not a url", "m").is_err());
        let chat = ChatClient::builder("http://user:pw@h/v1?key=k", "m")
            .api_key(Some("sekrit".into()))
            .build()
            .unwrap();
        let debug = format!("{chat:?}");
        assert!(!debug.contains("sekrit") && !debug.contains("pw") && !debug.contains("key=k"));
        assert!(chat.has_api_key());
    }

    #[test]
    fn error_messages_are_found_in_the_usual_shapes() {
        assert_eq!(
            error_message(r#"{"error": {"message": "no such model", "type": "x"}}"#).as_deref(),
            Some("no such model")
        );
        assert_eq!(
            error_message(r#"{"error": "model not found"}"#).as_deref(),
            Some("model not found")
        );
        assert_eq!(
            error_message(r#"{"message": "busy"}"#).as_deref(),
            Some("busy")
        );
        assert_eq!(error_message("<html>"), None);
        let error = ChatError::Status {
            url: "http://h/v1/chat/completions".into(),
            status: 401,
            message: Some("bad key".into()),
            body: String::new(),
        };
        assert_eq!(
            error.to_string(),
            "the chat endpoint http://h/v1/chat/completions answered HTTP 401 Unauthorized \
             (is the API key right?): bad key"
        );
        assert!(!error.is_retryable());
        assert_eq!(error.status(), Some(401));
    }
}
