//! The event streams of a Streamable HTTP connection: a request's SSE
//! response stream (resumed with `Last-Event-ID` when it breaks) and the GET
//! stream for server-initiated messages (reconnected with backoff).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::ACCEPT;
use serde_json::value::RawValue;
use switchboard_types::RequestId;

use super::{
    Answer, LAST_EVENT_ID, MAX_GET_RETRIES, MAX_RESUMES, Shared, is_response_to, lost_response,
    record_initialize_result,
};
use crate::transport::sse::{SseEvent, SseParser};
use crate::transport::{PREVIEW_BYTES, TransportError, escaped_preview};
/// Reads one request's response stream, resuming it with `Last-Event-ID`
/// when it breaks before the response.
pub(super) async fn response_stream(
    shared: Arc<Shared>,
    response: Answer,
    id: RequestId,
    is_initialize: bool,
) {
    let mut outcome = read_stream(&shared, response, Some((&id, is_initialize))).await;
    let mut resumes = 0;
    loop {
        match outcome {
            StreamEnd::Answered => break,
            StreamEnd::Failed(error) => {
                shared
                    .push(Ok(lost_response(
                        &id,
                        format!("the response stream failed: {error}"),
                    )))
                    .await;
                break;
            }
            StreamEnd::Ended {
                last_event_id: None,
                retry: _,
                clean: true,
                head,
            } if resumes == 0 => {
                // Nothing to resume from: the server ended the stream it
                // owed the answer on. The answer is lost (the server may
                // have dropped the session), and said at once, with what
                // the stream held.
                shared
                    .push(Ok(lost_response(
                        &id,
                        format!(
                            "HTTP 200 with content type `text/event-stream` ended without the response; the stream began {}",
                            escaped_preview(&head)
                        ),
                    )))
                    .await;
                break;
            }
            StreamEnd::Ended {
                last_event_id,
                retry,
                ..
            } => {
                let session = shared.state().session_id.clone();
                let Some(last_event_id) = last_event_id.filter(|_| resumes < MAX_RESUMES) else {
                    shared
                        .push(Ok(lost_response(
                            &id,
                            "the server closed the response stream before answering",
                        )))
                        .await;
                    break;
                };
                resumes += 1;
                tokio::time::sleep(retry.unwrap_or(Duration::ZERO).min(Duration::from_secs(30)))
                    .await;
                let version = shared.state().negotiated_version.clone();
                let request = shared
                    .request(reqwest::Method::GET, session.as_deref(), version.as_deref())
                    .await
                    .header(ACCEPT, "text/event-stream")
                    .header(LAST_EVENT_ID, last_event_id);
                outcome = match shared.send_request(request).await {
                    Ok(response) if response.status().is_success() => {
                        read_stream(&shared, response, Some((&id, is_initialize))).await
                    }
                    Ok(response) => StreamEnd::Failed(TransportError::HttpStatus {
                        status: response.status().as_u16(),
                        body: String::new(),
                    }),
                    Err(error) => StreamEnd::Failed(error),
                };
            }
        }
    }
    shared.state().streams.remove(&id);
}

pub(super) enum StreamEnd {
    /// The response for the request arrived.
    Answered,
    /// The stream ended without it.
    Ended {
        last_event_id: Option<String>,
        retry: Option<Duration>,
        /// The server ended it (rather than the connection breaking).
        clean: bool,
        /// The first bytes of the stream, for a message.
        head: Vec<u8>,
    },
    Failed(TransportError),
}

/// Queues every message event of `response`; stops after the response to
/// `awaited` (a request id, and whether it is `initialize`).
pub(super) async fn read_stream(
    shared: &Arc<Shared>,
    mut response: Answer,
    awaited: Option<(&RequestId, bool)>,
) -> StreamEnd {
    let mut parser = SseParser::new(shared.max_event_size);
    let mut events = Vec::new();
    let mut retry = None;
    let mut head = Vec::new();
    loop {
        let chunk = match tokio::time::timeout(shared.read_timeout, response.chunk()).await {
            Err(_) => return StreamEnd::Failed(TransportError::IdleTimeout(shared.read_timeout)),
            Ok(Err(error)) => {
                tracing::debug!(server = %shared.display, %error, "event stream broke");
                return StreamEnd::Ended {
                    last_event_id: parser.last_event_id().map(str::to_owned),
                    retry,
                    clean: false,
                    head,
                };
            }
            Ok(Ok(None)) => {
                return StreamEnd::Ended {
                    last_event_id: parser.last_event_id().map(str::to_owned),
                    retry,
                    clean: true,
                    head,
                };
            }
            Ok(Ok(Some(chunk))) => chunk,
        };
        if head.len() <= PREVIEW_BYTES {
            let room = PREVIEW_BYTES + 1 - head.len();
            head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        if let Err(error) = parser.feed(&chunk, &mut events) {
            return StreamEnd::Failed(TransportError::Sse(error));
        }
        for event in events.drain(..) {
            if let Some(ms) = event.retry {
                retry = Some(Duration::from_millis(ms));
            }
            if let Some(data) = message_data(event) {
                let answered = awaited.is_some_and(|(id, _)| is_response_to(data.as_bytes(), id));
                if answered && awaited.is_some_and(|(_, init)| init) {
                    record_initialize_result(shared, data.as_bytes());
                }
                match awaited {
                    // What the server sends about the request on its own
                    // stream (an elicitation the call needs) says so.
                    Some((id, _)) if !answered => {
                        shared.deliver_related(data.into_bytes(), id.clone()).await
                    }
                    _ => shared.deliver(data.into_bytes(), None).await,
                }
                if answered {
                    return StreamEnd::Answered;
                }
            }
        }
    }
}

/// The JSON-RPC message an event carries, if any (a priming event carries
/// none).
pub(super) fn message_data(event: SseEvent) -> Option<String> {
    (event.kind() == "message" && !event.data.trim().is_empty()).then_some(event.data)
}

/// The GET stream for server-initiated messages: 405 means the server offers
/// none; failures reconnect with bounded, jittered backoff.
pub(super) async fn get_stream(shared: Arc<Shared>, ready: tokio::sync::oneshot::Sender<()>) {
    let mut ready = Some(ready);
    let mut last_event_id: Option<String> = None;
    let mut failures = 0_u32;
    loop {
        let (session, version) = {
            let state = shared.state();
            (state.session_id.clone(), state.negotiated_version.clone())
        };
        let mut request = shared
            .request(reqwest::Method::GET, session.as_deref(), version.as_deref())
            .await
            .header(ACCEPT, "text/event-stream");
        if let Some(id) = &last_event_id {
            request = request.header(LAST_EVENT_ID, id.as_str());
        }
        let response = shared.send_request(request).await;
        // Answered (or refused): the handshake need not wait any longer.
        if let Some(ready) = ready.take() {
            let _ = ready.send(());
        }
        let delay = match response {
            Ok(response) if response.status().as_u16() == 405 => {
                tracing::debug!(server = %shared.display, "server offers no GET stream");
                return;
            }
            Ok(response) if response.status().is_success() => {
                failures = 0;
                match read_stream(&shared, response, None).await {
                    StreamEnd::Ended {
                        last_event_id: id,
                        retry,
                        ..
                    } => {
                        last_event_id = id.or(last_event_id);
                        retry
                    }
                    StreamEnd::Failed(error) => {
                        tracing::debug!(server = %shared.display, %error, "GET stream failed");
                        None
                    }
                    StreamEnd::Answered => None,
                }
            }
            Ok(response) => {
                tracing::debug!(server = %shared.display, status = response.status().as_u16(), "GET stream refused");
                failures += 1;
                None
            }
            Err(TransportError::ClosedByClient) => return,
            Err(error) => {
                tracing::debug!(server = %shared.display, %error, "GET stream failed");
                failures += 1;
                None
            }
        };
        if failures > MAX_GET_RETRIES {
            tracing::warn!(server = %shared.display, "gave up on the server's GET stream after {MAX_GET_RETRIES} retries; server-initiated messages arrive only with responses");
            return;
        }
        let backoff = delay.unwrap_or_else(|| backoff(failures));
        tokio::time::sleep(backoff).await;
    }
}

/// Exponential backoff from 250 ms, capped at 30 s, with jitter.
pub(super) fn backoff(failures: u32) -> Duration {
    let base = 250_u64.saturating_mul(1 << failures.min(7)).min(30_000);
    // Jitter without a random-number crate: the clock's low bits.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    Duration::from_millis(base / 2 + u64::from(nanos) % (base / 2 + 1))
}

/// Whether the server of a session-era connection may send anything unasked,
/// which only the GET stream can carry: its capabilities (`result` of
/// `initialize`) declare list changes, resource subscriptions, logging, or
/// anything this client does not know, or the client's (in `initialize`,
/// the request) declare anything at all (roots, sampling and elicitation
/// are requests a server may send at any time). A server that declares
/// only plain `tools`, `prompts`, `resources` and `completions` gets no GET
/// stream until a request asks for progress: it has nothing to send on it,
/// and each open one holds a connection on both sides.
pub(super) fn may_push(server: Option<&RawValue>, initialize: Option<&[u8]>) -> bool {
    // Read as borrowed text, not as `Value` trees: only which members are
    // there and whether a few flags are set matter (issue 35: this runs in
    // every session-era connect).
    type Members<'a> = BTreeMap<Cow<'a, str>, &'a RawValue>;
    #[derive(serde::Deserialize)]
    struct Flags<'a> {
        #[serde(rename = "listChanged", borrow, default)]
        list_changed: Option<&'a RawValue>,
        #[serde(borrow, default)]
        subscribe: Option<&'a RawValue>,
    }
    let set = |flag: Option<&RawValue>| flag.is_some_and(|v| !matches!(v.get(), "false" | "null"));
    fn flags(value: &RawValue) -> Flags<'_> {
        serde_json::from_str(value.get()).unwrap_or(Flags {
            list_changed: None,
            subscribe: None,
        })
    }
    let Some(server) = server.and_then(|raw| serde_json::from_str::<Members<'_>>(raw.get()).ok())
    else {
        return true;
    };
    let server_pushes = server.iter().any(|(name, value)| match name.as_ref() {
        "tools" | "prompts" => set(flags(value).list_changed),
        "resources" => {
            let flags = flags(value);
            set(flags.list_changed) || set(flags.subscribe)
        }
        "completions" => false,
        _ => value.get() != "null",
    });
    if server_pushes {
        return true;
    }
    #[derive(serde::Deserialize)]
    struct Request<'a> {
        #[serde(borrow)]
        params: Params<'a>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow, default)]
        capabilities: Option<Members<'a>>,
    }
    match initialize.map(serde_json::from_slice::<Request<'_>>) {
        Some(Ok(request)) => request
            .params
            .capabilities
            .is_some_and(|client| client.values().any(|v| v.get() != "null")),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;
    use serde_json::{Value, json};

    use super::may_push;

    fn raw(value: &Value) -> Box<RawValue> {
        RawValue::from_string(value.to_string()).expect("JSON")
    }

    fn pushes(server: Value, client: Value) -> bool {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": client,
                "clientInfo": {"name": "c", "version": "1"}}})
        .to_string();
        may_push(Some(&raw(&server)), Some(initialize.as_bytes()))
    }

    #[test]
    fn only_a_session_where_neither_side_declares_anything_pushed_is_quiet() {
        for quiet in [
            json!({}),
            json!({"tools": {}, "prompts": {}, "resources": {}, "completions": {}}),
            json!({"tools": {"listChanged": false}, "resources": {"subscribe": false}}),
        ] {
            assert!(!pushes(quiet.clone(), json!({})), "{quiet}");
        }
        for server in [
            json!({"tools": {"listChanged": true}}),
            json!({"prompts": {"listChanged": true}}),
            json!({"resources": {"listChanged": true}}),
            json!({"resources": {"subscribe": true}}),
            json!({"logging": {}}),
            json!({"tasks": {"requests": {}}}),
            json!({"experimental": {}}),
            json!({"somethingNew": {}}),
        ] {
            assert!(pushes(server.clone(), json!({})), "{server}");
        }
        for client in [
            json!({"roots": {"listChanged": true}}),
            json!({"sampling": {}}),
            json!({"elicitation": {"form": {}}}),
        ] {
            assert!(pushes(json!({"tools": {}}), client.clone()), "{client}");
        }
        // What cannot be read is taken as pushing.
        assert!(may_push(None, Some(b"{}")));
        assert!(may_push(Some(&raw(&json!([]))), Some(b"{}")));
        assert!(may_push(Some(&raw(&json!({}))), Some(b"not json")));
        assert!(may_push(Some(&raw(&json!({}))), None));
    }
}
