//! The per-connection reader task: everything the server sends (and what
//! the transport reports) is routed here, in arrival order.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::value::RawValue;
use switchboard_types::codes;
use switchboard_types::jsonrpc::{
    self, ErrorObject, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse,
    RequestId,
};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{
    Answer, AskGuard, Control, Pending, Progress, RawResult, RequestHandler, ServerNotification,
    ServerRequest, Shared, fail_all,
};
use crate::transport::{Incoming, MessageSink, MessageStream, TransportError};

/// The ids of the responses in bytes that did not parse as JSON-RPC (read
/// after replacing invalid UTF-8, so a response broken inside a string still
/// names its request). Only what claims to be JSON-RPC 2.0 counts (other
/// JSON is noise, skipped like any), and numeric ids only: ours are
/// numbers, and `"3"` is not `3`.
fn unusable_response_ids(bytes: &[u8]) -> Vec<i64> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        jsonrpc: Option<String>,
        #[serde(default)]
        id: Option<serde_json::Value>,
        #[serde(default)]
        method: Option<serde::de::IgnoredAny>,
    }
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Probes {
        One(Probe),
        Many(Vec<Probe>),
    }
    let text = String::from_utf8_lossy(bytes);
    let probes = match serde_json::from_str::<Probes>(&text) {
        Ok(Probes::One(probe)) => vec![probe],
        Ok(Probes::Many(probes)) => probes,
        Err(_) => return Vec::new(),
    };
    probes
        .into_iter()
        .filter(|probe| probe.method.is_none() && probe.jsonrpc.as_deref() == Some("2.0"))
        .filter_map(|probe| probe.id?.as_i64())
        .collect()
}

/// Where `part`, a slice of `text`, lies in it.
fn span_in(text: &str, part: &str) -> Option<std::ops::Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let range = start..start.checked_add(part.len())?;
    // Same address and length: no comparison of the text itself.
    text.get(range.clone())
        .is_some_and(|s| std::ptr::eq(s, part))
        .then_some(range)
}

/// Why bytes carrying a response could not be used, for the caller.
fn unusable_because(bytes: &[u8], error: &switchboard_types::jsonrpc::ParseError) -> String {
    use std::error::Error as _;
    if std::str::from_utf8(bytes).is_err() {
        return "the response is not valid UTF-8".to_owned();
    }
    match error.source() {
        Some(source) => format!("{error}: {source}"),
        None => error.to_string(),
    }
}

/// Routes `message`, which came back with request `id`'s send, when it is
/// simply that request's response (the usual case): the pending request
/// gets its answer at once, on the caller's task. Anything else — not
/// UTF-8, not JSON-RPC, a batch, another id — is given back, for the
/// reader to route with all its rules.
pub(super) fn answer_inline(shared: &Shared, id: i64, message: Vec<u8>) -> Result<(), Vec<u8>> {
    let text = match String::from_utf8(message) {
        Ok(text) => Arc::new(text),
        Err(error) => return Err(error.into_bytes()),
    };
    let outcome = match jsonrpc::IncomingRef::from_str(&text) {
        Ok(jsonrpc::IncomingRef::Single(jsonrpc::MessageRef::Response(response)))
            if response.id == Some(RequestId::Number(id)) =>
        {
            response.outcome.map(|raw| raw_result(&text, raw))
        }
        _ => {
            return Err(Arc::try_unwrap(text)
                .unwrap_or_else(|text| text.as_str().to_owned())
                .into_bytes());
        }
    };
    complete(shared, id, outcome);
    Ok(())
}

/// A response's result where it lies in `text` (no copy), or a copy when
/// it does not (an owned parse).
fn raw_result(text: &Arc<String>, raw: &RawValue) -> RawResult {
    match span_in(text, raw.get()) {
        Some(range) => RawResult::within(text.clone(), range),
        None => RawResult::from(raw),
    }
}

/// Hands request `id` its answer, if it still waits for one.
fn complete(shared: &Shared, id: i64, outcome: Result<RawResult, ErrorObject>) {
    let pending = shared.lock().map.remove(&id);
    match pending {
        Some(pending) => {
            let _ = pending.tx.send(Answer::Reply(outcome));
        }
        // A late answer to a request that timed out or was cancelled.
        None => tracing::trace!(server = %shared.server, id, "dropped a late response"),
    }
}

/// The per-connection reader: routes everything the server sends.
pub(super) struct Reader {
    pub(super) shared: Arc<Shared>,
    pub(super) sink: Arc<dyn MessageSink>,
    pub(super) handler: Option<Arc<dyn RequestHandler>>,
    pub(super) handlers: JoinSet<()>,
    pub(super) running: HashMap<RequestId, tokio::task::AbortHandle>,
    /// Every reply arrives in order on one stream (stdio, WebSocket), so an
    /// error with a null id can be about the one request pending.
    pub(super) single_pipe: bool,
    /// While a message of request `id`'s own stream is routed: that id.
    pub(super) relating: Option<RequestId>,
}

impl Reader {
    pub(super) async fn run(
        mut self,
        mut stream: Box<dyn MessageStream>,
        mut control: mpsc::UnboundedReceiver<Control>,
    ) {
        self.single_pipe = stream.is_single_pipe();
        let reason = loop {
            tokio::select! {
                biased;
                Some(control) = control.recv() => match control {
                    Control::Cancel { id, reason } => self.send_cancel(id, reason),
                    Control::Notify { method } => self.send_notification(method),
                    Control::Deliver { id, message } => self.route(message, Some(RequestId::Number(id))),
                },
                Some(_) = self.handlers.join_next(), if !self.handlers.is_empty() => {}
                message = stream.recv() => match message {
                    Ok(Some(Incoming::Message(bytes))) => self.route(bytes, None),
                    Ok(Some(Incoming::Answer { id, message })) => self.route(message, Some(id)),
                    Ok(Some(Incoming::Related { id, message })) => {
                        self.relating = Some(id);
                        self.route(message, None);
                        self.relating = None;
                    }
                    Ok(Some(Incoming::Lost { id, why })) => self.answer(&id, Answer::Lost(why)),
                    Ok(Some(Incoming::Violation { id, why })) => self.answer(&id, Answer::Unusable(why)),
                    Ok(None) => break TransportError::ClosedByClient,
                    Err(error) => break error,
                },
            }
        };
        match &reason {
            TransportError::ClosedByClient => {
                tracing::debug!(server = %self.shared.server, "connection closed")
            }
            other => {
                tracing::debug!(server = %self.shared.server, error = %other, "connection lost")
            }
        }
        fail_all(&self.shared, Arc::new(reason));
        // Answers to server requests can no longer be delivered.
        self.handlers.abort_all();
    }

    /// Routes one line or body. The text is checked as UTF-8 once and parsed
    /// once: a lone response's result stays where it arrived, as a range of
    /// the text handed to the caller (no copy, however large).
    ///
    /// `answering` is the request these bytes came in answer to, if the
    /// transport knows: unusable bytes fail it at once.
    fn route(&mut self, bytes: Vec<u8>, answering: Option<RequestId>) {
        let text = match String::from_utf8(bytes) {
            Ok(text) => Arc::new(text),
            // serde_json's own verdict, and the ids the bytes still name.
            Err(error) => {
                let bytes = error.into_bytes();
                match jsonrpc::Incoming::from_slice(&bytes) {
                    Ok(incoming) => incoming.into_iter().for_each(|m| self.dispatch(m)),
                    Err(error) => self.unparsable(&bytes, &error, answering),
                }
                return;
            }
        };
        let incoming = match jsonrpc::IncomingRef::from_str(&text) {
            Ok(incoming) => incoming,
            Err(error) => return self.unparsable(text.as_bytes(), &error, answering),
        };
        match incoming {
            jsonrpc::IncomingRef::Single(jsonrpc::MessageRef::Response(response)) => {
                let outcome = response.outcome.map(|raw| raw_result(&text, raw));
                self.on_response(response.id, outcome);
            }
            jsonrpc::IncomingRef::Single(message) => self.dispatch(message.into_owned()),
            jsonrpc::IncomingRef::Batch(messages) => messages
                .into_iter()
                .for_each(|m| self.dispatch(m.into_owned())),
        }
    }

    fn dispatch(&mut self, message: JsonRpcMessage) {
        match message {
            JsonRpcMessage::Response(response) => {
                self.on_response(response.id, response.outcome.map(RawResult::from))
            }
            JsonRpcMessage::Notification(notification) => self.on_notification(notification),
            JsonRpcMessage::Request(request) => self.on_request(request),
        }
    }

    /// Bytes that are not JSON-RPC: a reply to a pending request fails it at
    /// once, rather than leaving it to time out as if nothing had come;
    /// anything else is skipped and counted.
    fn unparsable(
        &mut self,
        bytes: &[u8],
        error: &jsonrpc::ParseError,
        answering: Option<RequestId>,
    ) {
        let mut ids = unusable_response_ids(bytes);
        if let Some(RequestId::Number(id)) = answering
            && !ids.contains(&id)
        {
            ids.push(id);
        }
        let failed: Vec<Pending> = {
            let mut pending = self.shared.lock();
            ids.iter().filter_map(|id| pending.map.remove(id)).collect()
        };
        if !failed.is_empty() {
            let what = unusable_because(bytes, error);
            tracing::warn!(server = %self.shared.server, %what, "unusable response");
            for pending in failed {
                let _ = pending.tx.send(Answer::Unusable(what.clone()));
            }
            return;
        }
        self.shared.skipped_lines.fetch_add(1, Ordering::Relaxed);
        let preview = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]);
        tracing::warn!(
            server = %self.shared.server,
            error = %error,
            line = %preview,
            "skipped a line that is not JSON-RPC"
        );
    }

    /// Hands request `id` what its transport reported about its answer.
    fn answer(&self, id: &RequestId, answer: Answer) {
        let RequestId::Number(id) = *id else {
            return;
        };
        let pending = self.shared.lock().map.remove(&id);
        match pending {
            Some(pending) => {
                let _ = pending.tx.send(answer);
            }
            None => {
                tracing::trace!(server = %self.shared.server, id, "a report about a finished request")
            }
        }
    }

    fn on_response(&mut self, id: Option<RequestId>, outcome: Result<RawResult, ErrorObject>) {
        let id = match id {
            Some(RequestId::Number(id)) => id,
            // Our ids are numbers: `"3"` is another request's id, not 3's.
            Some(RequestId::String(ref s)) => {
                tracing::debug!(server = %self.shared.server, id = %s, "response for an unknown id");
                return;
            }
            None => {
                // JSON-RPC's answer to a request the server could not parse.
                // On one ordered pipe with one request pending, it can only
                // be about that one; with several, nobody can tell which.
                if let Err(error) = &outcome {
                    let lone = if self.single_pipe {
                        let mut pending = self.shared.lock();
                        let lone = (pending.map.len() == 1)
                            .then(|| pending.map.keys().next().copied())
                            .flatten();
                        lone.and_then(|id| pending.map.remove(&id))
                    } else {
                        None
                    };
                    match lone {
                        Some(pending) => {
                            let _ = pending.tx.send(Answer::Reply(outcome));
                        }
                        None => {
                            tracing::warn!(server = %self.shared.server, %error, "server reported an error without a request id")
                        }
                    }
                }
                return;
            }
        };
        complete(&self.shared, id, outcome);
    }

    fn on_notification(&mut self, notification: JsonRpcNotification) {
        match notification.method.as_str() {
            "notifications/progress" => self.on_progress(notification.params.as_deref()),
            "notifications/message" => self.on_log(notification.params.as_deref()),
            "notifications/cancelled" => {
                if let Some(id) = cancelled_request_id(notification.params.as_deref())
                    && let Some(handle) = self.running.remove(&id)
                {
                    handle.abort();
                }
            }
            _ => {}
        }
        let notification = ServerNotification {
            method: notification.method,
            params: notification.params.map(Arc::from),
        };
        let mut subscribers = self
            .shared
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        subscribers.retain_mut(|sub| sub.deliver(&notification, &self.shared.server));
    }

    /// A log line, to the requests in flight that listen for them.
    fn on_log(&self, params: Option<&RawValue>) {
        let listeners: Vec<_> = self
            .shared
            .lock()
            .map
            .values()
            .filter_map(|p| p.log.clone())
            .collect();
        for listener in listeners {
            listener(params);
        }
    }

    fn on_progress(&self, params: Option<&RawValue>) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Params {
            progress_token: RequestId,
            progress: f64,
            total: Option<f64>,
            message: Option<String>,
        }
        let Some(params) = params.and_then(|p| serde_json::from_str::<Params>(p.get()).ok()) else {
            tracing::debug!(server = %self.shared.server, "malformed progress notification");
            return;
        };
        let RequestId::Number(token) = params.progress_token else {
            return;
        };
        let callback = {
            let pending = self.shared.lock();
            pending.map.get(&token).and_then(|p| {
                p.progress.as_ref().map(|(callback, seen)| {
                    *seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                    callback.clone()
                })
            })
        };
        if let Some(callback) = callback {
            callback(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }

    fn on_request(&mut self, request: JsonRpcRequest) {
        let sink = self.sink.clone();
        let id = request.id.clone();
        if request.method == "ping" {
            let response = JsonRpcMessage::Response(JsonRpcResponse {
                id: Some(id),
                outcome: Ok(RawValue::from_string("{}".to_owned()).expect("valid JSON")),
            });
            self.handlers.spawn(async move {
                let _ = sink.send(&response.to_vec()).await;
            });
            return;
        }
        let related_tag = match &self.relating {
            Some(RequestId::Number(ours)) => self
                .shared
                .lock()
                .map
                .get(ours)
                .and_then(|pending| pending.tag),
            _ => None,
        };
        let future = self.handler.as_ref().and_then(|h| {
            h.handle(ServerRequest {
                id: request.id.clone(),
                method: request.method.clone(),
                params: request.params,
                related_tag,
            })
        });
        let handle = match future {
            Some(future) => {
                let ask = AskGuard::new(self.shared.clone());
                self.handlers.spawn(async move {
                    let outcome = future.await;
                    drop(ask);
                    // Written around the result's own text and handed
                    // over: a large answer is never held twice.
                    let _ = sink.send_owned(super::response_bytes(&id, outcome)).await;
                })
            }
            None => {
                let method = request.method;
                self.handlers.spawn(async move {
                    let response = JsonRpcMessage::Response(JsonRpcResponse {
                        id: Some(id),
                        outcome: Err(ErrorObject::new(
                            codes::METHOD_NOT_FOUND,
                            format!("Method not found: {method}"),
                        )),
                    });
                    let _ = sink.send(&response.to_vec()).await;
                })
            }
        };
        self.running.retain(|_, handle| !handle.is_finished());
        self.running.insert(request.id, handle);
    }

    fn send_notification(&mut self, method: &'static str) {
        let sink = self.sink.clone();
        self.handlers.spawn(async move {
            let message = format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#);
            let _ = sink.send(message.as_bytes()).await;
        });
    }

    fn send_cancel(&mut self, id: i64, reason: &'static str) {
        let sink = self.sink.clone();
        self.handlers.spawn(async move {
            let message = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"{reason}"}}}}"#
            );
            let _ = sink.send(message.as_bytes()).await;
        });
    }
}

fn cancelled_request_id(params: Option<&RawValue>) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Params {
        request_id: RequestId,
    }
    serde_json::from_str::<Params>(params?.get())
        .ok()
        .map(|p| p.request_id)
}
