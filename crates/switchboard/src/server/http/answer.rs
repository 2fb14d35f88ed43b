//! Answering one request `POST`ed to the endpoint: the handler's answer
//! as plain JSON, or an event stream when something is said about the
//! request first or (for a host whose stream can be resumed) the answer is
//! slow; a new sealed session's id made from its `initialize` exchange.

use std::sync::Arc;

use hyper::{HeaderMap, Response, StatusCode};
use switchboard_types::jsonrpc::{ErrorObject, JsonRpcMessage, RequestId};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::body::{ResponseBody, json, rpc_error, sse_stream};
use super::link::{Link, Running, Sent};
use super::route::{Refused, Relabel, resumes};
use super::seal::{InitializeAnswer, InitializeBody};
use super::stateless::error_code_status;
use super::stream::{self, Source};
use super::{SESSION_HEADER, State};
use crate::engine::HandlerResult;
use crate::server::SessionState;
use crate::transport::BoxFuture;

/// A request read and routed to its connection.
pub(super) struct Asked<'a> {
    pub(super) state: &'a State,
    pub(super) headers: &'a HeaderMap,
    pub(super) link: Arc<Link>,
    /// The id of the session the request opens (empty: sealed from the
    /// answer).
    pub(super) new_session: Option<String>,
    /// Of the 2026-07-28 era: handled under an id of ours.
    pub(super) stateless: bool,
    /// The client takes an event stream.
    pub(super) events: bool,
    pub(super) body: Vec<u8>,
    /// The user the host's token names, when hosts are users.
    pub(super) user: Option<Arc<crate::server::HostUser>>,
}

/// What came first from the handler.
enum First {
    /// The answer, with nothing said before it.
    Answer(HandlerResult),
    /// Something said first (or, resumable and slow, nothing yet): the
    /// rest goes on a stream.
    Said(Option<Vec<u8>>),
    /// The request was cancelled (`notifications/cancelled`).
    Cancelled,
    /// Past the endpoint's request timeout.
    TimedOut,
}

pub(super) async fn answer(asked: Asked<'_>) -> Response<ResponseBody> {
    let Asked {
        state,
        headers,
        link,
        new_session,
        stateless,
        events,
        body,
        user,
    } = asked;
    let options = &state.options;
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
    let Some(mut said) = link.expect(&ours_text) else {
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
    let mut cancelled: BoxFuture<'static, ()> = Box::pin(async move {
        match cancelled {
            Some(rx) => {
                let _ = rx.await;
            }
            None => std::future::pending().await,
        }
    });
    link.touch();
    let mut answer = link
        .served
        .answer(ours, request.method, request.params, user);
    let running = Running {
        link: link.clone(),
        id: ours_text,
    };
    // The answer's text becomes the body: written around, not copied.
    let respond = move |outcome: HandlerResult| crate::engine::response_bytes(&client_id, outcome);
    // Dropping the answer's future (the client went away) cancels the
    // request, unless its stream can be resumed.
    let started = Instant::now();
    let resume_window = options
        .resume_window
        .filter(|_| !stateless && new_session.is_none() && events && resumes(headers));
    let first = first_word(
        state,
        &mut said,
        &mut answer,
        &mut cancelled,
        events,
        started,
        resume_window.is_some(),
    )
    .await;
    let stream = |early: Vec<Vec<u8>>, said, answer, cancelled, running| {
        let source = Source {
            link: link.clone(),
            running,
            said,
            answer,
            cancelled,
            early,
            relabel: Box::new(move |message| relabel.apply(message)),
            respond: Box::new(respond.clone()),
            deadline: started + options.request_timeout,
            timeout: options.request_timeout,
            stall: options.stream_stall,
        };
        sse_stream(stream::open(source, resume_window))
    };
    match first {
        // The handler runs inside that wait: what it said on the way to
        // its answer is in the channel still, to go first.
        First::Answer(outcome) if events && !said.is_empty() => {
            let mut early = Vec::new();
            while let Ok((_, message)) = said.try_recv() {
                early.push(message);
            }
            let outcome = std::future::ready(outcome);
            stream(early, said, Box::pin(outcome), cancelled, running)
        }
        First::Answer(outcome) => {
            drop(running);
            let status = match &outcome {
                Err(error) if stateless => error_code_status(error.code),
                _ => StatusCode::OK,
            };
            let answer = respond(outcome);
            let new_session = match new_session {
                Some(id) if id.is_empty() => {
                    match seal_session(state, initialize, &answer, &link) {
                        Ok(id) => Some(id),
                        Err(refused) => return *refused,
                    }
                }
                other => other,
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
        First::Said(first) => stream(
            first.into_iter().collect(),
            said,
            answer,
            cancelled,
            running,
        ),
        First::Cancelled => {
            let outcome = Err(ErrorObject::new(-32800, "Request cancelled"));
            json(StatusCode::OK, respond(outcome))
        }
        First::TimedOut => {
            super::body::reply(StatusCode::GATEWAY_TIMEOUT, "the request took too long\n")
        }
    }
}

/// Waits for what comes first: the answer, something said about the
/// request (taken first, in order: it is in the channel before the answer
/// is ready), a cancellation, or the deadline — `stream_after` for a
/// resumable host (its stream then opens), else the request timeout.
async fn first_word(
    state: &State,
    said: &mut mpsc::Receiver<Sent>,
    answer: &mut BoxFuture<'static, HandlerResult>,
    cancelled: &mut BoxFuture<'static, ()>,
    events: bool,
    started: Instant,
    resumable: bool,
) -> First {
    let options = &state.options;
    let deadline = tokio::time::sleep(if resumable {
        options.stream_after.min(options.request_timeout)
    } else {
        options.request_timeout
    });
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            biased;
            message = said.recv() => match message {
                Some(_) if !events => continue,
                Some((_, message)) => return First::Said(Some(message)),
                None => continue,
            },
            outcome = &mut *answer => return First::Answer(outcome),
            () = &mut *cancelled => return First::Cancelled,
            () = &mut deadline => {
                return if resumable && started.elapsed() < options.request_timeout {
                    First::Said(None)
                } else {
                    First::TimedOut
                };
            }
        }
    }
}

/// A sealed session's id, made from its `initialize` request and answer
/// (the version chosen, the client's capabilities and info), and the
/// session kept under it; refused when they do not fit in an id.
fn seal_session(
    state: &State,
    initialize: Option<InitializeBody>,
    answer: &[u8],
    link: &Arc<Link>,
) -> Result<String, Refused> {
    let sealed = state.options.session_key.as_ref().and_then(|key| {
        initialize
            .zip(serde_json::from_slice::<InitializeAnswer>(answer).ok())
            .and_then(|(request, answer)| {
                key.seal(
                    &SessionState::new(
                        answer.result.protocol_version,
                        request.params.capabilities,
                        request.params.client_info,
                    ),
                    link.owner.as_deref(),
                )
            })
    });
    let Some(id) = sealed else {
        // Nothing of the session is kept: dropping the link ends it.
        return Err(Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            serde_json::from_slice::<serde_json::Value>(answer)
                .ok()
                .and_then(|a| a.get("id").map(ToString::to_string))
                .as_deref(),
            switchboard_types::codes::INVALID_REQUEST,
            &format!(
                "Invalid Request: the initialize request's capabilities are too large to carry \
                 in a session id (at most {} bytes)",
                super::seal::MAX_SEALED_STATE
            ),
        )));
    };
    state
        .sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id.clone(), link.clone());
    Ok(id)
}
