//! The endpoint's routes: `/healthz`, `/metrics`, and the MCP endpoint's
//! `POST`, `GET` and `DELETE` — each a short step here; a request's
//! answer is `answer.rs`'s.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming as Body;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use switchboard_types::jsonrpc::RequestId;
use tokio::time::Instant;

use super::answer::{Asked, answer};
use super::auth;
use super::body::{ResponseBody, SseBody, json, reply, sse, sse_stream, with_header};
use super::guard;
use super::link::{Link, request_id, session_id};
use super::params::check_params;
use super::seal::SEALED_PREFIX;
use super::stateless::{Peek, check_stateless, contains_text};
use super::stream;
use super::{MAX_ENDED, Metrics, SESSION_HEADER, State, accepts_events};
use crate::server::HostUser;

/// The user a request is made for, when hosts are users.
type User = Option<Arc<HostUser>>;

/// A request refused before its handler saw it: the response to send.
pub(super) type Refused = Box<Response<ResponseBody>>;

pub(super) async fn handle(state: &State, request: Request<Body>) -> Response<ResponseBody> {
    let options = &state.options;
    let path = request.uri().path();
    let get = request.method() == Method::GET;
    if path == "/healthz" && get {
        return guard::host(options, request.headers()).unwrap_or_else(|| healthz(options));
    }
    if get && let Some(page) = auth::metadata_page(options, path) {
        return guard::host(options, request.headers()).unwrap_or(page);
    }
    if get
        && path != options.path
        && let Some(pages) = &options.pages
    {
        if let Some(refused) = guard::host(options, request.headers()) {
            return refused;
        }
        let asked = super::PageRequest {
            path: path.to_owned(),
            query: request.uri().query().map(str::to_owned),
            cookies: request
                .headers()
                .get(hyper::header::COOKIE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        };
        if let Some(page) = pages.answer(asked) {
            return page.await.into_response();
        }
    }
    let metrics = options
        .metrics
        .as_ref()
        .filter(|_| path == "/metrics" && get);
    if path != options.path && metrics.is_none() {
        return reply(StatusCode::NOT_FOUND, "not found\n");
    }
    // Before anything of the body is read.
    if let Some(refused) = guard::all(options, request.headers()) {
        return refused;
    }
    let user = match auth::user(options, request.headers()).await {
        Ok(user) => user,
        Err(refused) => return *refused,
    };
    if let Some(metrics) = metrics {
        return metrics_page(metrics);
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
    match head.method {
        Method::POST => post(state, &head.headers, session, events, body, user).await,
        Method::DELETE => end_session(state, session, user.as_deref()),
        // A session's standalone stream: what the server says outside any
        // request (list changes). The 2026-07-28 era has no sessions and
        // listens with `subscriptions/listen` instead.
        Method::GET if events => match session {
            Some(session) => session_stream(state, &head.headers, &session, user.as_deref()),
            None => not_allowed(),
        },
        _ => not_allowed(),
    }
}

/// `GET /healthz`: `ok`, and the instance id when there is one.
fn healthz(options: &super::HttpServeOptions) -> Response<ResponseBody> {
    let mut ok = reply(StatusCode::OK, "ok\n");
    if let Some(id) = options
        .instance
        .as_deref()
        .and_then(|id| hyper::header::HeaderValue::from_str(id).ok())
    {
        ok.headers_mut().insert(
            hyper::header::HeaderName::from_static(super::INSTANCE_HEADER),
            id,
        );
    }
    ok
}

/// `GET /metrics`: the page the handler renders.
fn metrics_page(Metrics(render): &Metrics) -> Response<ResponseBody> {
    let mut response = reply(StatusCode::OK, "");
    *response.body_mut() = http_body_util::Either::Left(Full::new(Bytes::from(render())));
    with_header(
        response,
        hyper::header::CONTENT_TYPE,
        "text/plain; version=0.0.4",
    )
}

fn not_allowed() -> Response<ResponseBody> {
    with_header(
        reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "POST, DELETE, or GET with a session and Accept: text/event-stream\n",
        ),
        hyper::header::ALLOW,
        "GET, POST, DELETE",
    )
}

/// `DELETE`: the session ends — only for its own user; a sealed one is
/// remembered as ended, so that its id is not taken up again.
fn end_session(
    state: &State,
    session: Option<String>,
    user: Option<&HostUser>,
) -> Response<ResponseBody> {
    let removed = session.and_then(|id| {
        let removed = {
            let mut sessions = state.sessions.lock().unwrap_or_else(|e| e.into_inner());
            match sessions.get(&id) {
                Some(link) if link.serves(user) => sessions.remove(&id),
                _ => None,
            }
        };
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
    match removed {
        Some(_) => reply(StatusCode::OK, ""),
        None => reply(StatusCode::NOT_FOUND, "no such session\n"),
    }
}

/// `GET` with a session: its standalone stream, or — with
/// `Last-Event-ID` — a request's stream taken up where the host lost it.
fn session_stream(
    state: &State,
    headers: &HeaderMap,
    session: &str,
    user: Option<&HostUser>,
) -> Response<ResponseBody> {
    let link = state
        .sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(session)
        .filter(|link| link.serves(user))
        .cloned();
    let Some(link) = link else {
        return reply(StatusCode::NOT_FOUND, "no such session\n");
    };
    link.touch();
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
                "no stream to resume after this Last-Event-ID: it ended, or its events are no \
                 longer kept\n",
            ),
        };
    }
    match link.open_standalone() {
        Some(rx) => sse(SseBody {
            first: None,
            rx,
            done: false,
        }),
        None => reply(
            StatusCode::CONFLICT,
            "this session's stream is open already\n",
        ),
    }
}

/// `POST`: one JSON-RPC message, read whole (bounded in size and time),
/// checked, and given to its session's connection (or the stateless
/// one); a request is answered (`answer.rs`), anything else accepted.
async fn post(
    state: &State,
    headers: &HeaderMap,
    session: Option<String>,
    events: bool,
    body: Body,
    user: User,
) -> Response<ResponseBody> {
    let body = match read_body(state, body).await {
        Ok(body) => body,
        Err(refused) => return *refused,
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
        && let Ok(peek) = serde_json::from_slice::<Peek>(&body)
        && let Some(response) = check_stateless(headers, &peek, id.as_deref()).or_else(|| {
            check_params(
                &*state.handler,
                user.as_deref(),
                headers,
                &peek,
                id.as_deref(),
            )
        })
    {
        return response;
    }
    let found = find_link(
        state,
        session.as_deref(),
        method.as_deref(),
        user.as_deref(),
    );
    let (link, new_session) = match found {
        Ok(found) => found,
        Err(refused) => return *refused,
    };
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
    answer(Asked {
        state,
        headers,
        stateless: session.is_none() && new_session.is_none(),
        link,
        new_session,
        events,
        body,
        user,
    })
    .await
}

/// The body, whole: refused past `max_body`, or when it does not arrive
/// within `body_timeout` (and the connection closed).
async fn read_body(state: &State, body: Body) -> Result<Vec<u8>, Refused> {
    let options = &state.options;
    match tokio::time::timeout(
        options.body_timeout,
        Limited::new(body, options.max_body).collect(),
    )
    .await
    {
        Ok(Ok(body)) => Ok(body.to_bytes().to_vec()),
        Ok(Err(_)) => Err(Box::new(reply(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body is too large\n",
        ))),
        Err(_) => Err(Box::new(with_header(
            reply(
                StatusCode::REQUEST_TIMEOUT,
                "the request's body did not arrive in time\n",
            ),
            hyper::header::CONNECTION,
            "close",
        ))),
    }
}

/// The connection a message goes to, and the id of the session it opens
/// (empty: to be sealed from the `initialize` answer): its session's (a
/// sealed one taken up here when this process does not hold it), a new
/// session's for a session-era `initialize`, else the stateless one.
///
/// A session is its user's: a request of another user naming it is
/// answered 404, exactly as for an id that names no session, not 403 —
/// a 403 would tell that user the id is live (someone else's session),
/// and 404 is what sends a spec-following host to open a session of its
/// own.
fn find_link(
    state: &State,
    session: Option<&str>,
    method: Option<&str>,
    user: Option<&HostUser>,
) -> Result<(Arc<Link>, Option<String>), Refused> {
    let no_session = || Box::new(reply(StatusCode::NOT_FOUND, "no such session\n"));
    let owner = user.map(|u| u.sub.clone());
    let options = &state.options;
    match (session, method) {
        (Some(id), _) => {
            let link = state
                .sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(id)
                .cloned();
            if let Some(link) = link {
                return if link.serves(user) {
                    Ok((link, None))
                } else {
                    Err(no_session())
                };
            }
            // A session sealed by a replica (or by this process before a
            // restart) is taken up here.
            let ended = || {
                state
                    .ended
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .contains_key(id)
            };
            let resumed = match &options.session_key {
                Some(key) if !ended() => key.open(id, options.session_lifetime),
                _ => None,
            };
            let Some((resumed, sealed_for)) = resumed else {
                return Err(no_session());
            };
            if sealed_for != owner {
                return Err(no_session());
            }
            let mut serve = options.serve.clone();
            serve.session = Some(resumed);
            let mut sessions = state.sessions.lock().unwrap_or_else(|e| e.into_inner());
            if !make_room(&mut sessions, options.max_sessions) {
                return Err(Box::new(reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many sessions\n",
                )));
            }
            let link = sessions
                .entry(id.to_owned())
                .or_insert_with(|| {
                    Arc::new(Link::open(
                        state.handler.clone(),
                        serve,
                        options.stream_stall,
                        owner,
                    ))
                })
                .clone();
            Ok((link, None))
        }
        (None, Some("initialize")) => {
            let mut sessions = state.sessions.lock().unwrap_or_else(|e| e.into_inner());
            if !make_room(&mut sessions, options.max_sessions) {
                return Err(Box::new(reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many sessions\n",
                )));
            }
            let link = Arc::new(Link::open(
                state.handler.clone(),
                options.serve.clone(),
                options.stream_stall,
                owner,
            ));
            if options.session_key.is_some() {
                // Sealed once the answer says which version was chosen.
                return Ok((link, Some(String::new())));
            }
            let id = session_id();
            if id.is_empty() {
                return Err(Box::new(reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no randomness for a session id\n",
                )));
            }
            sessions.insert(id.clone(), link.clone());
            Ok((link, Some(id)))
        }
        // The stateless era, or a stray message: the one connection all
        // of them share, each request under an id of the gateway's own.
        (None, _) => Ok((state.stateless_link(), None)),
    }
}

/// Whether the request's host takes resumable streams: it speaks
/// 2025-11-25 or later (an older one may not take the priming event's
/// empty data).
pub(super) fn resumes(headers: &HeaderMap) -> bool {
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
pub(super) struct Relabel(Option<(Vec<u8>, Vec<u8>)>);

impl Relabel {
    pub(super) fn new(stateless: bool, ours: &str, client: &RequestId) -> Self {
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
    pub(super) fn apply(&self, message: Vec<u8>) -> Vec<u8> {
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
