//! The legacy HTTP+SSE transport (2024-11-05; deprecated since 2025-03-26).
//!
//! One GET event stream carries everything the server says. Its first
//! `endpoint` event names the URL that every outgoing message is POSTed to;
//! the answers come back as `message` events on the stream, never in the POST
//! response. The stream *is* the session: when it ends the connection ends,
//! as there is nothing to resume.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HeaderMap};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::AbortOnDropHandle;

use super::{
    AuthProvider, AuthRetries, HttpConfig, auth_failure, header_map, http_error, note_dpop_nonce,
};
use crate::transport::sse::{SseEvent, SseParser};
use crate::transport::{
    BoxFuture, Connection, Incoming, MessageSink, MessageStream, TransportError,
};

/// Messages queued for the engine's reader.
const QUEUE: usize = 1024;
/// Bytes of an error body kept for a message.
const ERROR_BODY_PREVIEW: usize = 512;
/// Bytes of a response body read at most when only a preview is needed: a
/// POST answer only ever says "Accepted" or why not.
const MAX_PREVIEW_READ: usize = 64 * 1024;

type Queued = Result<Vec<u8>, TransportError>;

/// Opens the event stream and waits for its `endpoint` event, all within
/// the connect timeout.
pub(super) async fn connect(
    config: &HttpConfig,
    url: url::Url,
    client: reqwest::Client,
) -> Result<Connection, TransportError> {
    let http = Http {
        client,
        headers: header_map(config),
        auth: config.auth.clone(),
    };
    let server = config.shown_url();
    let deadline = Instant::now() + config.connect_timeout;
    let request = http
        .request(reqwest::Method::GET, &url)
        .await
        .header(ACCEPT, "text/event-stream")
        .header(CACHE_CONTROL, "no-cache");
    let mut response = match tokio::time::timeout_at(deadline, request.send()).await {
        Err(_) => {
            return Err(failure(
                &server,
                format!(
                    "no answer within {:?} (the connect timeout)",
                    config.connect_timeout
                ),
            ));
        }
        Ok(Err(error)) => return Err(http_error(&server, error)),
        Ok(Ok(response)) => response,
    };

    let status = response.status();
    if matches!(status.as_u16(), 401 | 403) {
        // Not retried here: the connection was never made, so connecting
        // again (with whatever the provider now holds) is the retry.
        return Err(http.on_auth_failure(&response).await.error);
    }
    if !status.is_success() {
        let body = read_preview(response, config.read_timeout).await;
        return Err(TransportError::HttpStatus {
            status: status.as_u16(),
            body: preview(&body),
        });
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if !content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
    {
        let shown: String = content_type.chars().take(100).collect();
        return Err(TransportError::Config(format!(
            "{server} answered GET with content type {shown:?}, not an event stream; \
             point the URL at the server's legacy HTTP+SSE endpoint (often …/sse)"
        )));
    }

    let mut parser = SseParser::new(config.max_event_size);
    let mut events = Vec::new();
    // Messages that arrive before or with the endpoint; the spec puts the
    // endpoint first, but nothing a server says is dropped.
    let mut early: Vec<Vec<u8>> = Vec::new();
    let endpoint = 'endpoint: loop {
        let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => {
                return Err(failure(
                    &server,
                    format!(
                        "the server sent no `endpoint` event within {:?} (the connect timeout); \
                         is this a legacy HTTP+SSE endpoint?",
                        config.connect_timeout
                    ),
                ));
            }
            Ok(Err(error)) => return Err(http_error(&server, error)),
            Ok(Ok(None)) => {
                return Err(failure(
                    &server,
                    "the event stream ended before its `endpoint` event".into(),
                ));
            }
            Ok(Ok(Some(chunk))) => chunk,
        };
        parser
            .feed(&chunk, &mut events)
            .map_err(TransportError::Sse)?;
        let mut drained = events.drain(..);
        while let Some(event) = drained.next() {
            if event.kind() == "endpoint" {
                let endpoint = resolve_endpoint(&url, &server, &event.data)?;
                early.extend(drained.filter_map(message_data));
                break 'endpoint endpoint;
            }
            early.extend(message_data(event));
        }
        if early.len() > QUEUE {
            return Err(failure(
                &server,
                format!("the server sent more than {QUEUE} messages before its `endpoint` event"),
            ));
        }
    };
    tracing::debug!(server = %server, "legacy HTTP+SSE stream open");

    let (queue, rx) = mpsc::channel(QUEUE.max(early.len()));
    for message in early {
        // A fresh channel with room for all of them.
        let _ = queue.try_send(Ok(message));
    }
    let closing = CancellationToken::new();
    let reader = Reader {
        response,
        parser,
        queue,
        read_timeout: config.read_timeout,
        display: server.clone(),
    };
    let task = {
        let closing = closing.clone();
        AbortOnDropHandle::new(tokio::spawn(async move {
            tokio::select! {
                () = closing.cancelled() => {}
                () = reader.run() => {}
            }
        }))
    };
    let life = Arc::new(Life {
        _stop: closing.clone().drop_guard(),
        task,
    });
    Ok(Connection {
        sink: Arc::new(LegacySink {
            shared: Arc::new(Shared {
                http,
                // Named by the configured URL: the endpoint the server
                // chose may repeat a token of its path.
                display: server.clone(),
                endpoint,
                read_timeout: config.read_timeout,
                closing: closing.clone(),
            }),
            life: life.clone(),
        }),
        stream: Box::new(LegacyStream {
            rx,
            closing,
            _life: life,
        }),
        stderr: None,
    })
}

/// The POST URL the `endpoint` event names, resolved against the stream's
/// URL; refused on another origin, where our headers would leak.
fn resolve_endpoint(
    sse_url: &url::Url,
    display: &str,
    data: &str,
) -> Result<url::Url, TransportError> {
    let endpoint = sse_url.join(data.trim()).map_err(|e| {
        TransportError::Config(format!(
            "the server at {display} sent an `endpoint` event that is not a URL ({e})"
        ))
    })?;
    if endpoint.origin() != sse_url.origin() {
        return Err(TransportError::Config(format!(
            "the server at {display} names a message endpoint on another origin ({}); \
             refusing to send messages and credentials there (the scheme, host and port \
             must match the SSE URL)",
            endpoint.origin().ascii_serialization()
        )));
    }
    Ok(endpoint)
}

/// What both the GET and the POSTs need.
struct Http {
    client: reqwest::Client,
    headers: HeaderMap,
    auth: Option<Arc<dyn AuthProvider>>,
}

impl Http {
    /// A request with the custom and `Authorization` headers.
    async fn request(&self, method: reqwest::Method, url: &url::Url) -> reqwest::RequestBuilder {
        // A DPoP proof names the method; nothing is kept without a provider.
        let method_name = self.auth.as_ref().map(|_| method.clone());
        let mut request = self
            .client
            .request(method, url.clone())
            .headers(self.headers.clone());
        if let (Some(auth), Some(method)) = (&self.auth, &method_name) {
            request = auth
                .request_credentials(method.as_str(), url.as_str())
                .await
                .apply(request);
        }
        request
    }

    async fn on_auth_failure(&self, response: &reqwest::Response) -> super::AuthFailure {
        auth_failure(
            self.auth.as_ref(),
            response.url().as_str(),
            response.status().as_u16(),
            response.headers(),
        )
        .await
    }
}

/// An HTTP failure we diagnosed ourselves.
fn failure(display: &str, why: String) -> TransportError {
    TransportError::Http {
        url: display.to_owned(),
        source: why.into(),
    }
}

fn preview(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY_PREVIEW)])
        .trim()
        .to_owned()
}

/// The start of a body, for a message (or to drain a short one so the
/// connection goes back to the pool); best effort within the idle timeout.
async fn read_preview(mut response: reqwest::Response, read_timeout: Duration) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < MAX_PREVIEW_READ {
        match tokio::time::timeout(read_timeout, response.chunk()).await {
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body
}

/// The JSON-RPC message an event carries, if any.
fn message_data(event: SseEvent) -> Option<Vec<u8>> {
    match event.kind() {
        "message" if !event.data.trim().is_empty() => Some(event.data.into_bytes()),
        "message" => None,
        other => {
            tracing::debug!(
                event = other,
                "ignoring an SSE event that carries no message"
            );
            None
        }
    }
}

/// Reads the event stream for the life of the connection.
struct Reader {
    response: reqwest::Response,
    parser: SseParser,
    queue: mpsc::Sender<Queued>,
    read_timeout: Duration,
    display: String,
}

impl Reader {
    async fn run(mut self) {
        let error = self.read().await;
        tracing::debug!(server = %self.display, %error, "legacy HTTP+SSE stream ended");
        // The engine hears why; later `recv`s then see `Closed`.
        let _ = self.queue.send(Err(error)).await;
    }

    /// Queues every message until the stream ends; returns why it ended.
    async fn read(&mut self) -> TransportError {
        let mut events = Vec::new();
        loop {
            let chunk = match tokio::time::timeout(self.read_timeout, self.response.chunk()).await {
                Err(_) => return TransportError::IdleTimeout(self.read_timeout),
                Ok(Err(error)) => return http_error(&self.display, error),
                Ok(Ok(None)) => {
                    return TransportError::Closed {
                        stderr_tail: String::new(),
                    };
                }
                Ok(Ok(Some(chunk))) => chunk,
            };
            if let Err(error) = self.parser.feed(&chunk, &mut events) {
                return TransportError::Sse(error);
            }
            for event in events.drain(..) {
                if event.kind() == "endpoint" {
                    tracing::debug!(server = %self.display, "ignoring a second `endpoint` event");
                    continue;
                }
                if let Some(message) = message_data(event)
                    && self.queue.send(Ok(message)).await.is_err()
                {
                    // Nobody reads any more.
                    return TransportError::ClosedByClient;
                }
            }
        }
    }
}

/// Owned by both halves: the last one dropped stops the stream task.
struct Life {
    _stop: DropGuard,
    task: AbortOnDropHandle<()>,
}

struct Shared {
    http: Http,
    endpoint: url::Url,
    /// The endpoint without its query (which holds the session id).
    display: String,
    read_timeout: Duration,
    /// Cancelled on close, or when both halves of the connection are gone.
    closing: CancellationToken,
}

struct LegacySink {
    shared: Arc<Shared>,
    life: Arc<Life>,
}

impl MessageSink for LegacySink {
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            let shared = &self.shared;
            if shared.closing.is_cancelled() {
                return Err(TransportError::ClosedByClient);
            }
            tokio::select! {
                result = post(shared, message) => result,
                () = shared.closing.cancelled() => Err(TransportError::ClosedByClient),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // Dropping the GET stream ends the session on the server.
            self.shared.closing.cancel();
            self.life.task.abort();
        })
    }
}

/// POSTs one message; 2xx (usually 202) means the server took it.
async fn post(shared: &Shared, message: &[u8]) -> Result<(), TransportError> {
    let mut auth_retries = AuthRetries::default();
    let (response, status) = loop {
        let request = shared
            .http
            .request(reqwest::Method::POST, &shared.endpoint)
            .await
            .header(CONTENT_TYPE, "application/json")
            .body(message.to_vec());
        let response = tokio::time::timeout(shared.read_timeout, request.send())
            .await
            .map_err(|_| TransportError::IdleTimeout(shared.read_timeout))?
            .map_err(|e| http_error(&shared.display, e))?;
        let status = response.status();
        if !matches!(status.as_u16(), 401 | 403) {
            note_dpop_nonce(
                shared.http.auth.as_ref(),
                shared.endpoint.as_str(),
                response.headers(),
            );
            break (response, status);
        }
        let failure = shared.http.on_auth_failure(&response).await;
        // New credentials (or a DPoP nonce): the message was refused
        // unread, send it again.
        if auth_retries.allow(&failure) {
            continue;
        }
        return Err(failure.error);
    };
    // Read even a success body, so the connection goes back to the pool.
    let body = read_preview(response, shared.read_timeout).await;
    if status.is_success() {
        return Ok(());
    }
    Err(TransportError::HttpStatus {
        status: status.as_u16(),
        body: preview(&body),
    })
}

struct LegacyStream {
    rx: mpsc::Receiver<Queued>,
    closing: CancellationToken,
    _life: Arc<Life>,
}

impl MessageStream for LegacyStream {
    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Incoming>, TransportError>> {
        Box::pin(async move {
            tokio::select! {
                biased;
                () = self.closing.cancelled() => Ok(None),
                message = self.rx.recv() => match message {
                    Some(Ok(bytes)) => Ok(Some(Incoming::Message(bytes))),
                    Some(Err(error)) => Err(error),
                    None if self.closing.is_cancelled() => Ok(None),
                    // The stream task ended after queueing its reason.
                    None => Err(TransportError::Closed { stderr_tail: String::new() }),
                },
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_against_the_sse_url() {
        let sse = url::Url::parse("http://127.0.0.1:8080/mcp/sse?token=abc").unwrap();
        let resolve = |data: &str| resolve_endpoint(&sse, "sse", data).map(|u| u.to_string());
        assert_eq!(
            resolve("/messages?sessionId=1").unwrap(),
            "http://127.0.0.1:8080/messages?sessionId=1"
        );
        assert_eq!(
            resolve("messages?sessionId=1").unwrap(),
            "http://127.0.0.1:8080/mcp/messages?sessionId=1"
        );
        assert_eq!(
            resolve(" http://127.0.0.1:8080/m ").unwrap(),
            "http://127.0.0.1:8080/m"
        );
        for foreign in [
            "https://127.0.0.1:8080/m",
            "http://127.0.0.1:8081/m",
            "http://evil.example:8080/m",
            "//evil.example/m",
        ] {
            let error = resolve(foreign).unwrap_err();
            assert!(
                matches!(&error, TransportError::Config(m) if m.contains("another origin")),
                "{foreign}: {error}"
            );
        }
    }
}
