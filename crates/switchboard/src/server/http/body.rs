//! What the endpoint answers: a whole body (plain text or JSON) or an
//! event stream.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;

use super::link::Sent;
use super::stream::StreamBody;

/// A response body: a whole JSON answer, or an event stream (a session's
/// standalone stream, or a request's: `stream`).
pub(super) type ResponseBody =
    http_body_util::Either<Full<Bytes>, http_body_util::Either<SseBody, StreamBody>>;

/// Server-sent events: each message as one `message` event; ends after a
/// request's answer (never, for the standalone stream).
pub(super) struct SseBody {
    pub(super) first: Option<Vec<u8>>,
    pub(super) rx: mpsc::Receiver<Sent>,
    pub(super) done: bool,
}

pub(super) fn sse_event(message: &[u8]) -> Bytes {
    sse_event_with_id(None, message)
}

/// One `message` event, with its `id:` line when it has one.
pub(super) fn sse_event_with_id(id: Option<&str>, message: &[u8]) -> Bytes {
    let mut event = Vec::with_capacity(message.len() + 48);
    if let Some(id) = id {
        event.extend_from_slice(b"id: ");
        event.extend_from_slice(id.as_bytes());
        event.push(b'\n');
    }
    event.extend_from_slice(b"event: message\ndata: ");
    event.extend_from_slice(message);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

impl hyper::body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        use std::task::Poll;
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(hyper::body::Frame::data(sse_event(&first)))));
        }
        if self.done {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some((last, message))) => {
                self.done = last;
                Poll::Ready(Some(Ok(hyper::body::Frame::data(sse_event(&message)))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

pub(super) fn sse(body: SseBody) -> Response<ResponseBody> {
    event_stream(http_body_util::Either::Left(body))
}

/// A request's event stream.
pub(super) fn sse_stream(body: StreamBody) -> Response<ResponseBody> {
    event_stream(http_body_util::Either::Right(body))
}

fn event_stream(body: http_body_util::Either<SseBody, StreamBody>) -> Response<ResponseBody> {
    let mut response = Response::new(http_body_util::Either::Right(body));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    response.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-cache"),
    );
    response
}

pub(super) fn reply(status: StatusCode, body: &'static str) -> Response<ResponseBody> {
    let mut response = Response::new(http_body_util::Either::Left(Full::new(Bytes::from_static(
        body.as_bytes(),
    ))));
    *response.status_mut() = status;
    response
}

/// `response` with one more header.
pub(super) fn with_header(
    mut response: Response<ResponseBody>,
    name: hyper::header::HeaderName,
    value: &'static str,
) -> Response<ResponseBody> {
    response
        .headers_mut()
        .insert(name, hyper::header::HeaderValue::from_static(value));
    response
}

pub(super) fn json(status: StatusCode, body: Vec<u8>) -> Response<ResponseBody> {
    let mut response = Response::new(http_body_util::Either::Left(Full::new(Bytes::from(body))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// A JSON-RPC error answer to request `id` (JSON text), with its status.
pub(super) fn rpc_error(
    status: StatusCode,
    id: Option<&str>,
    code: i64,
    message: &str,
) -> Response<ResponseBody> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.and_then(|id| serde_json::from_str::<serde_json::Value>(id).ok()),
        "error": {"code": code, "message": message},
    });
    json(status, body.to_string().into_bytes())
}
