//! The endpoint's routes: `/healthz`, `/metrics`, and the MCP endpoint's
//! `POST`, `GET` and `DELETE`.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming as Body;
use hyper::{Method, Request, Response, StatusCode};
use switchboard_types::jsonrpc::{ErrorObject, JsonRpcMessage, RequestId};
use tokio::time::Instant;

use super::body::{ResponseBody, SseBody, json, reply, rpc_error, sse, sse_stream};
use super::guard;
use super::link::{Link, Running, request_id, session_id};
use super::params::check_params;
use super::seal::{InitializeAnswer, InitializeBody, SEALED_PREFIX};
use super::stateless::{check_stateless, contains_text, error_code_status};
use super::stream::{self, Source};
use super::{MAX_ENDED, Metrics, SESSION_HEADER, State, accepts_events};
use crate::engine::HandlerResult;
use crate::server::SessionState;
use crate::transport::BoxFuture;

pub(super) async fn handle(state: &State, request: Request<Body>) -> Response<ResponseBody> {
    let options = &state.options;
    if request.uri().path() == "/healthz" && request.method() == Method::GET {
        if let Some(refused) = guard::host(options, request.headers()) {
            return refused;
        }
        return reply(StatusCode::OK, "ok\n");
    }
    let metrics = options
        .metrics
        .as_ref()
        .filter(|_| request.uri().path() == "/metrics" && request.method() == Method::GET);
    if request.uri().path() != options.path && metrics.is_none() {
        return reply(StatusCode::NOT_FOUND, "not found\n");
    }
    // Before anything of the body is read.
    if let Some(refused) = guard::all(options, request.headers()) {
        return refused;
    }
    if let Some(Metrics(render)) = metrics {
        let mut response = reply(StatusCode::OK, "");
        *response.body_mut() = http_body_util::Either::Left(Full::new(Bytes::from(render())));
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        return response;
    }
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let events = accepts_events(&request);
    // The head is kept for the 2026-07-28 checks, the body read: no copy
    // of the header map.
    let (head, body) = request.into_parts();
    let headers = &head.headers;
    match head.method {
        Method::POST => {}
        Method::DELETE => {
            let removed = session.and_then(|id| {
                let removed = state
                    .sessions
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                if removed.is_some() && id.starts_with(SEALED_PREFIX) {
                    let mut ended = state.ended.lock().unwrap_or_else(|e| e.into_inner());
                    if ended.len() >= MAX_ENDED
                        && let Some(oldest) = ended
                            .iter()
                            .min_by_key(|(_, at)| **at)
                            .map(|(id, _)| id.clone())
                    {
                        ended.remove(&oldest);
                    }
                    ended.insert(id, Instant::now());
                }
                removed
            });
            return match removed {
                Some(_) => reply(StatusCode::OK, ""),
                None => reply(StatusCode::NOT_FOUND, "no such session\n"),
            };
        }
        // A session's standalone stream: what the server says outside any
        // request (list changes). The 2026-07-28 era has no sessions and
        // listens with `subscriptions/listen` instead.
        Method::GET if session.is_some() && events => {
            let link = session.and_then(|id| {
                state
                    .sessions
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&id)
                    .cloned()
            });
            let Some(link) = link else {
                return reply(StatusCode::NOT_FOUND, "no such session\n");
            };
            link.touch();
            // A request's stream taken up where the host lost it.
            if let Some(last) = headers.get("last-event-id") {
                let resumed = last
                    .to_str()
                    .ok()
                    .and_then(stream::parse_event_id)
                    .and_then(|(number, after)| stream::resume(&link, number, after));
                return match resumed {
                    Some(body) => sse_stream(body),
                    None => reply(
                        StatusCode::BAD_REQUEST,
                        "no stream to resume after this Last-Event-ID: it ended, or its events \
                         are no longer kept\n",
                    ),
                };
            }
            return match link.open_standalone() {
                Some(rx) => sse(SseBody {
                    first: None,
                    rx,
                    done: false,
                }),
                None => reply(
                    StatusCode::CONFLICT,
                    "this session's stream is open already\n",
                ),
            };
        }
        _ => {
            let mut response = reply(
                StatusCode::METHOD_NOT_ALLOWED,
                "POST, DELETE, or GET with a session and Accept: text/event-stream\n",
            );
            response.headers_mut().insert(
                hyper::header::ALLOW,
                hyper::header::HeaderValue::from_static("GET, POST, DELETE"),
            );
            return response;
        }
    }
    let body = match tokio::time::timeout(
        options.body_timeout,
        Limited::new(body, options.max_body).collect(),
    )
    .await
    {
        Ok(Ok(body)) => body.to_bytes().to_vec(),
        Ok(Err(_)) => return reply(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large\n"),
        Err(_) => {
            let mut response = reply(
                StatusCode::REQUEST_TIMEOUT,
                "the request's body did not arrive in time\n",
            );
            response.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            return response;
        }
    };
    let Some((id, method)) = request_id(&body) else {
        return json(
            StatusCode::BAD_REQUEST,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: one JSON-RPC message per POST"}}"#.to_vec(),
        );
    };
    let is_request = id.is_some() && method.is_some();
    // A request with no session that does not open one is of the
    // 2026-07-28 era: its headers and `_meta` are checked here.
    let modern_initialize = method.as_deref() == Some("initialize")
        && contains_text(&body, switchboard_types::meta::META_PROTOCOL_VERSION);
    let stateless =
        session.is_none() && (method.as_deref() != Some("initialize") || modern_initialize);
    if stateless
        && is_request
        && let Some(response) = check_stateless(headers, &body, id.as_deref())
            .or_else(|| check_params(&*state.handler, headers, &body, id.as_deref()))
    {
        return response;
    }
    let (link, new_session) = match (&session, method.as_deref()) {
        (Some(id), _) => {
            let link = state
                .sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(id)
                .cloned();
            // A session sealed by a replica (or by this process before a
            // restart) is taken up here.
            let resumed = match (&link, &options.session_key) {
                (None, Some(key))
                    if !state
                        .ended
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .contains_key(id) =>
                {
                    key.open(id, options.session_lifetime)
                }
                _ => None,
            };
            match (link, resumed) {
                (Some(link), _) => (link, None),
                (None, Some(resumed)) => {
                    let mut serve = options.serve.clone();
                    serve.session = Some(resumed);
                    let mut sessions = state.sessions.lock().unwrap_or_else(|e| e.into_inner());
                    if !make_room(&mut sessions, options.max_sessions) {
                        return reply(StatusCode::SERVICE_UNAVAILABLE, "too many sessions\n");
                    }
                    let link = sessions
                        .entry(id.clone())
                        .or_insert_with(|| {
                            Arc::new(Link::open(
                                state.handler.clone(),
                                serve,
                                options.stream_stall,
                            ))
                        })
                        .clone();
                    (link, None)
                }
                (None, None) => return reply(StatusCode::NOT_FOUND, "no such session\n"),
            }
        }
        (None, Some("initialize")) => {
            let mut sessions = state.sessions.lock().unwrap_or_else(|e| e.into_inner());
            if !make_room(&mut sessions, options.max_sessions) {
                return reply(StatusCode::SERVICE_UNAVAILABLE, "too many sessions\n");
            }
            let link = Arc::new(Link::open(
                state.handler.clone(),
                options.serve.clone(),
                options.stream_stall,
            ));
            if options.session_key.is_some() {
                // Sealed once the answer says which version was chosen.
                (link, Some(String::new()))
            } else {
                let id = session_id();
                if id.is_empty() {
                    return reply(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "no randomness for a session id\n",
                    );
                }
                sessions.insert(id.clone(), link.clone());
                (link, Some(id))
            }
        }
        // The stateless era, or a stray message: the one connection all
        // of them share, each request under an id of the gateway's own.
        (None, _) => (state.stateless_link(), None),
    };
    let stateless = session.is_none() && new_session.is_none();
    if !is_request {
        // A notification or a response (to a request of ours) goes to the
        // connection; a session-era `notifications/cancelled` also stops
        // the request it names here.
        if method.as_deref() == Some("notifications/cancelled") {
            link.cancel_named(&body);
        }
        link.deliver(body).await;
        return reply(StatusCode::ACCEPTED, "");
    }
    let request = match JsonRpcMessage::from_slice(&body) {
        Ok(JsonRpcMessage::Request(request)) => request,
        _ => {
            return json(
                StatusCode::BAD_REQUEST,
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not one JSON-RPC request"}}"#.to_vec(),
            );
        }
    };
    let initialize = new_session
        .as_deref()
        .is_some_and(str::is_empty)
        .then(|| serde_json::from_slice::<InitializeBody>(&body).ok())
        .flatten();
    drop(body);
    // What the handler says about the request travels under the id the
    // request is handled with: a stateless one gets one of ours (two
    // clients may use the same id at once), a session's keeps its own.
    let client_id = request.id.clone();
    let ours = if stateless {
        RequestId::String(format!(
            "sb-{}",
            state
                .next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ))
    } else {
        request.id.clone()
    };
    let ours_text = serde_json::to_string(&ours).unwrap_or_default();
    // A session's host that sends an id still in flight (on another
    // connection) is refused at once: two answers cannot share one id.
    let Some(said) = link.expect(&ours_text) else {
        return rpc_error(
            StatusCode::OK,
            Some(&ours_text),
            switchboard_types::codes::INVALID_REQUEST,
            "Invalid Request: a request with this id is in progress in this session already; \
             use a new id for each request",
        );
    };
    // What is said on a stateless request's stream names it by its id (a
    // listen's `subscriptionId`): the client's own, not ours.
    let relabel = Relabel::new(stateless, &ours_text, &client_id);
    let cancelled = (!stateless).then(|| link.cancellable(&ours_text));
    link.touch();
    let answer = link.served.answer(ours, request.method, request.params);
    let running = Running {
        link: link.clone(),
        id: ours_text,
    };
    // The answer's text becomes the body: written around, not copied.
    let respond = move |outcome: HandlerResult| crate::engine::response_bytes(&client_id, outcome);
    // The answer alone is plain JSON; something said about the request
    // first (progress, a request of the server's) turns the response into
    // an event stream that ends with the answer — when the client takes
    // one, else what comes before the answer is dropped. So does an answer
    // slower than `stream_after` for a host whose stream can be resumed.
    // Dropping the answer's future (the client went away) cancels the
    // request, unless its stream can be resumed.
    let started = Instant::now();
    let resume_window = options
        .resume_window
        .filter(|_| !stateless && new_session.is_none() && events && resumes(headers));
    let deadline = tokio::time::sleep(match resume_window {
        Some(_) => options.stream_after.min(options.request_timeout),
        None => options.request_timeout,
    });
    tokio::pin!(deadline);
    let mut answer = answer;
    let mut said = said;
    let mut cancelled: BoxFuture<'static, ()> = Box::pin(async move {
        match cancelled {
            Some(rx) => {
                let _ = rx.await;
            }
            None => std::future::pending().await,
        }
    });
    // What was said before the answer is in the channel before the answer
    // is ready: taken first, in order.
    let first = loop {
        tokio::select! {
            biased;
            message = said.recv() => match message {
                Some(_) if !events => continue,
                Some((_, message)) => break Ok(Err(Some(message))),
                None => continue,
            },
            outcome = &mut answer => break Ok(Ok(outcome)),
            () = &mut cancelled => {
                let outcome = Err(ErrorObject::new(-32800, "Request cancelled"));
                return json(StatusCode::OK, respond(outcome));
            }
            () = &mut deadline => match resume_window {
                Some(_) if started.elapsed() < options.request_timeout => break Ok(Err(None)),
                _ => break Err(()),
            },
        }
    };
    let relabel = move |message| relabel.apply(message);
    let stream_respond = respond.clone();
    let stream = |early: Vec<Vec<u8>>,
                  said,
                  answer: BoxFuture<'static, HandlerResult>,
                  cancelled,
                  running| {
        let source = Source {
            link: link.clone(),
            running,
            said,
            answer,
            cancelled,
            early,
            relabel: Box::new(relabel),
            respond: Box::new(stream_respond),
            deadline: started + options.request_timeout,
            timeout: options.request_timeout,
            stall: options.stream_stall,
        };
        sse_stream(stream::open(source, resume_window))
    };
    match first {
        // The handler runs inside that wait: what it said on the way to
        // its answer is in the channel still, to go first.
        Ok(Ok(outcome)) if events && !said.is_empty() => {
            let mut early = Vec::new();
            while let Ok((_, message)) = said.try_recv() {
                early.push(message);
            }
            let outcome = std::future::ready(outcome);
            stream(early, said, Box::pin(outcome), cancelled, running)
        }
        Ok(Ok(outcome)) => {
            drop(running);
            let status = match &outcome {
                Err(error) if stateless => error_code_status(error.code),
                _ => StatusCode::OK,
            };
            let answer = respond(outcome);
            let new_session = match (new_session, &options.session_key) {
                (Some(id), Some(key)) if id.is_empty() => {
                    let sealed = initialize
                        .zip(serde_json::from_slice::<InitializeAnswer>(&answer).ok())
                        .and_then(|(request, answer)| {
                            key.seal(&SessionState::new(
                                answer.result.protocol_version,
                                request.params.capabilities,
                                request.params.client_info,
                            ))
                        });
                    let Some(id) = sealed else {
                        // Nothing of the session is kept: dropping the link
                        // ends it.
                        return rpc_error(
                            StatusCode::BAD_REQUEST,
                            serde_json::from_slice::<serde_json::Value>(&answer)
                                .ok()
                                .and_then(|a| a.get("id").map(ToString::to_string))
                                .as_deref(),
                            switchboard_types::codes::INVALID_REQUEST,
                            &format!(
                                "Invalid Request: the initialize request's capabilities are too \
                                 large to carry in a session id (at most {} bytes)",
                                super::seal::MAX_SEALED_STATE
                            ),
                        );
                    };
                    state
                        .sessions
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id.clone(), link.clone());
                    Some(id)
                }
                (other, _) => other,
            };
            let mut response = json(status, answer);
            if let Some(id) = new_session
                && let Ok(value) = hyper::header::HeaderValue::from_str(&id)
            {
                response.headers_mut().insert(SESSION_HEADER, value);
            }
            response
        }
        // Something said first, or (resumable) the answer is slow: the
        // rest on a task of its own.
        Ok(Err(first)) => stream(
            first.into_iter().collect(),
            said,
            answer,
            cancelled,
            running,
        ),
        Err(()) => reply(StatusCode::GATEWAY_TIMEOUT, "the request took too long\n"),
    }
}

/// Whether the request's host takes resumable streams: it speaks
/// 2025-11-25 or later (an older one may not take the priming event's
/// empty data).
fn resumes(headers: &hyper::HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|version| version >= "2025-11-25")
}

/// Whether one more session fits: at the cap, the session used least
/// recently that has no request in progress ends (its host gets 404 and
/// opens another), so that hosts holding sessions they do not use cannot
/// keep a new host out; only when every session is busy is there no room.
fn make_room(sessions: &mut std::collections::HashMap<String, Arc<Link>>, max: usize) -> bool {
    while sessions.len() >= max.max(1) {
        let idle = sessions
            .iter()
            .filter(|(_, link)| link.is_idle())
            .min_by_key(|(_, link)| *link.last_used.lock().unwrap_or_else(|e| e.into_inner()))
            .map(|(id, _)| id.clone());
        match idle {
            Some(id) => {
                tracing::info!("at the session cap: the least recently used idle session ends");
                sessions.remove(&id);
            }
            None => return false,
        }
    }
    true
}

/// The rewrite of what is said on a stateless request's stream: its id in
/// `_meta`'s `subscriptionId` (ours, given to the handler) back to the
/// client's.
struct Relabel(Option<(Vec<u8>, Vec<u8>)>);

impl Relabel {
    fn new(stateless: bool, ours: &str, client: &RequestId) -> Self {
        let key = switchboard_types::meta::META_SUBSCRIPTION_ID;
        Self(stateless.then(|| {
            let client = serde_json::to_string(client).unwrap_or_default();
            (
                format!("\"{key}\":{ours}").into_bytes(),
                format!("\"{key}\":{client}").into_bytes(),
            )
        }))
    }

    /// `message`, naming the client's id where it named ours.
    fn apply(&self, message: Vec<u8>) -> Vec<u8> {
        let Some((ours, client)) = &self.0 else {
            return message;
        };
        let Some(at) = message
            .windows(ours.len())
            .position(|window| window == ours.as_slice())
        else {
            return message;
        };
        let mut out = Vec::with_capacity(message.len() + client.len());
        out.extend_from_slice(&message[..at]);
        out.extend_from_slice(client);
        out.extend_from_slice(&message[at + ours.len()..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stateless_streams_subscription_id_is_the_clients() {
        let relabel = Relabel::new(true, "\"sb-5\"", &RequestId::Number(3));
        let said = br#"{"method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"sb-5"}}}"#;
        let out = String::from_utf8(relabel.apply(said.to_vec())).unwrap();
        assert!(
            out.contains(r#""io.modelcontextprotocol/subscriptionId":3}"#),
            "{out}"
        );
        // A session's request keeps its own id: nothing to rewrite.
        let kept = Relabel::new(false, "\"sb-5\"", &RequestId::Number(3));
        assert_eq!(kept.apply(said.to_vec()), said.to_vec());
    }
}
