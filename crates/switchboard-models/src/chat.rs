//! A small client for OpenAI-compatible Chat Completions endpoints: OpenAI
//! itself and the many local servers that speak its API (llama.cpp's
//! `llama-server`, Ollama, vLLM, LM Studio …).
//!
//! It sends a request body as given and hands back the answer as JSON; the
//! shape of both is the caller's business (see [`crate::agent`] and, with
//! feature `sampling`, [`crate::sampling`]).
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

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The full `…/chat/completions` URL for `base`, which may be the API root
/// (`http://127.0.0.1:8080/v1`) or already the full URL.
pub fn completions_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/chat/completions") {
        base.to_owned()
    } else {
        format!("{base}/chat/completions")
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
    base: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
    max_response_bytes: usize,
    http: Option<reqwest::Client>,
}

impl fmt::Debug for ChatClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatClientBuilder")
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
    /// The API key, sent as `Authorization: Bearer …`; `None` or an empty
    /// key sends none (local servers rarely want one).
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
        let url = completions_url(&self.base);
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
    url: String,
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
            base: base.into(),
            model: model.into(),
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

    /// The full completions URL requests go to.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The model requests name.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// Whether an API key is sent.
    pub fn has_api_key(&self) -> bool {
        self.inner.api_key.is_some()
    }

    /// POSTs `request` (a Chat Completions body: `model`, `messages` …;
    /// a `Value` or any `Serialize` that writes one) and returns the answer.
    ///
    /// # Errors
    /// [`ChatError::Connect`], [`ChatError::Timeout`], [`ChatError::Status`]
    /// (with the error's message), [`ChatError::Read`],
    /// [`ChatError::TooLarge`], [`ChatError::Json`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request (the connection closes).
    pub async fn complete<T: serde::Serialize + ?Sized>(
        &self,
        request: &T,
    ) -> Result<Value, ChatError> {
        let request =
            serde_json::to_string(request).map_err(|source| ChatError::Request { source })?;
        let inner = &*self.inner;
        let url = || inner.shown.clone();
        let timeout = |e: &reqwest::Error| {
            e.is_timeout().then(|| ChatError::Timeout {
                url: url(),
                after: inner.timeout,
            })
        };
        let mut builder = inner
            .http
            .post(&inner.url)
            .timeout(inner.timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(request);
        if let Some(key) = &inner.api_key {
            builder = builder.bearer_auth(key);
        }
        let mut response = builder.send().await.map_err(|e| {
            timeout(&e).unwrap_or_else(|| ChatError::Connect {
                url: url(),
                source: Box::new(e.without_url()),
            })
        })?;
        let status = response.status();
        let too_large = || ChatError::TooLarge {
            url: url(),
            limit: inner.max_response_bytes,
        };
        if response
            .content_length()
            .is_some_and(|l| l > inner.max_response_bytes as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        loop {
            let chunk = response.chunk().await.map_err(|e| {
                timeout(&e).unwrap_or_else(|| ChatError::Read {
                    url: url(),
                    source: Box::new(e.without_url()),
                })
            })?;
            let Some(chunk) = chunk else { break };
            if body.len() + chunk.len() > inner.max_response_bytes {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            return Err(ChatError::Status {
                url: url(),
                status: status.as_u16(),
                message: error_message(&text),
                body: text.chars().take(BODY_EXCERPT).collect(),
            });
        }
        serde_json::from_slice(&body).map_err(|source| ChatError::Json { url: url(), source })
    }
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
