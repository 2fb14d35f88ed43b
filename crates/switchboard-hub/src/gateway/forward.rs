//! What backends ask of their client (elicitation, sampling, roots),
//! forwarded to the host call that caused them.
//!
//! The gateway's client to every backend declares elicitation (form and
//! URL), sampling (with tools) and roots through [`BackendAsks::client`]. Each
//! host call on a backend registers ([`BackendAsks::register`]) and sends
//! its call with the registration's tag
//! ([`RequestOptions::tag`](switchboard::RequestOptions::tag)). A backend's
//! ask reaches the call it came about — never another host's:
//! - an ask that says which call it is about (a 2026-07-28
//!   `input_required` round, a -32042 of that call, a session-era request
//!   on that call's HTTP response stream) goes to that call, or is
//!   declined once the call has ended;
//! - an ask that does not say (stdio, WebSocket, the GET stream) goes to
//!   the host whose calls are the only ones running on that backend, and
//!   is declined when calls of several hosts are running there, or none.
//!
//! A `roots/list` that reaches no call (a backend asking at its start, or
//! after `notifications/roots/list_changed`) is answered with the roots of
//! the host the gateway follows (`roots.rs`).
//!
//! The host's answer goes back to the backend. At most
//! [`MAX_ASKS_PER_HOST`] asks wait for one host at once; the next is
//! declined, so a host that leaves forms open never keeps another's out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitResult, ListRootsResult, Root,
};
use switchboard::{
    BoxFuture, ClientBuilder, ElicitationHandler, FormRequest, HandlerContext, HandlerError,
    SamplingHandler, UrlRequest,
};
use tokio::sync::{mpsc, oneshot};

/// The host's answer to an [`Ask`]: its result, or why there is none.
pub(crate) type AskAnswer = Result<Value, Refusal>;

/// Why an ask got no result from the host.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Declined on the host's behalf (it cannot answer); says why.
    Declined(String),
    /// The host call the ask went to ended before answering; says so.
    Ended(String),
    /// The host's error, or its failure to answer.
    Error(ErrorObject),
}

/// One request of a backend (or of the gateway's policy) for the host.
pub(crate) struct Ask {
    /// `elicitation/create` or `sampling/createMessage`.
    pub(crate) method: &'static str,
    /// Its params, as the host will get them.
    pub(crate) params: Value,
    /// Where the host's answer goes.
    pub(crate) answer: oneshot::Sender<AskAnswer>,
}

/// How many asks of backends may wait for one host's answers at once
/// (over all backends); past it that host's next ask is declined, so one
/// host leaving forms unanswered never keeps another host's out. The
/// backends' clients take up to [`MAX_ASKS`] asks at once in all.
pub(crate) const MAX_ASKS_PER_HOST: usize = 16;

/// How many asks of one backend may wait for hosts at once, all hosts
/// together (the backend client's `max_server_requests`).
pub(crate) const MAX_ASKS: usize = 1024;

/// Who made a host call: the connection of a session-era host, or, for a
/// 2026-07-28 host (whose requests share one connection), the name it
/// gives in `clientInfo` — good for sharing limits fairly, never for
/// routing an ask (a name can be claimed by anyone).
#[derive(Clone, Default)]
pub(crate) struct HostId {
    peer: Option<switchboard::server::Peer>,
    name: String,
}

impl HostId {
    /// The host on `peer`'s connection.
    pub(crate) fn peer(peer: switchboard::server::Peer) -> Self {
        Self {
            peer: Some(peer),
            name: String::new(),
        }
    }

    /// A host known only by the name it gives: its calls are not told
    /// apart from another's when an ask is routed.
    pub(crate) fn named(name: String) -> Self {
        Self { peer: None, name }
    }
}

struct Call {
    tag: u64,
    host: HostId,
    asks: mpsc::UnboundedSender<Ask>,
    /// This call's asks waiting for the host.
    waiting: Arc<AtomicUsize>,
}

impl Call {
    /// Whether an ask that names no call may go to `other`'s host as
    /// well as to this one's: the same call, or the same connection.
    fn same_host(&self, other: &Call) -> bool {
        self.tag == other.tag
            || matches!((&self.host.peer, &other.host.peer), (Some(a), Some(b)) if a.same_connection(b))
    }

    /// Whether `other`'s asks count against this call's host's limit.
    fn shares_limits(&self, other: &Call) -> bool {
        self.same_host(other)
            || (self.host.peer.is_none()
                && other.host.peer.is_none()
                && self.host.name == other.host.name)
    }
}

/// One ask waiting for its host; counted until dropped.
struct Waiting(Arc<AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

type Calls = HashMap<Arc<str>, Vec<Call>>;

/// The host calls running on each backend, oldest first: where that
/// backend's asks go.
#[derive(Clone, Default)]
pub struct BackendAsks {
    calls: Arc<Mutex<Calls>>,
    next: Arc<AtomicU64>,
    /// The hosts' roots as every backend gets them (`roots.rs`).
    roots: super::roots::HostRoots,
}

impl std::fmt::Debug for BackendAsks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendAsks").finish_non_exhaustive()
    }
}

/// A host call's place in [`BackendAsks`]; leaves it when dropped.
pub(crate) struct Registration {
    asks: BackendAsks,
    server: Arc<str>,
    id: u64,
}

impl Registration {
    /// The tag the call goes with
    /// ([`RequestOptions::with_tag`](switchboard::RequestOptions::with_tag)).
    pub(crate) fn tag(&self) -> u64 {
        self.id
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut calls = self.asks.calls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = calls.get_mut(&self.server) {
            list.retain(|call| call.tag != self.id);
            if list.is_empty() {
                calls.remove(&self.server);
            }
        }
    }
}

impl BackendAsks {
    /// No call running yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Installs the forwarding handlers on the client builder of `server`
    /// (for [`HubBuilder::client`](crate::HubBuilder::client)), and
    /// declares MCP Apps to it on behalf of the hosts: a backend offers
    /// its apps' tools only to a client that declares them, and the
    /// connection is shared by every host (a host that does not render
    /// apps is not shown their app-only tools). It declares roots too,
    /// answered with the host's (`roots.rs`): the backend starts before
    /// any host connects.
    pub fn client(&self, server: &str, builder: ClientBuilder) -> ClientBuilder {
        let forward = Forward {
            asks: self.clone(),
            server: Arc::from(server),
        };
        builder
            .elicitation(forward.clone())
            .sampling(forward.clone())
            .max_server_requests(MAX_ASKS)
            .mcp_apps()
            .roots_from(self.roots.roots(), forward)
    }

    /// The hosts' roots the backends get (`roots.rs`).
    pub(crate) fn host_roots(&self) -> &super::roots::HostRoots {
        &self.roots
    }

    /// Registers a call of `host` on `server`: the asks it causes arrive
    /// on the receiver until the registration is dropped.
    pub(crate) fn register(
        &self,
        server: &str,
        host: HostId,
    ) -> (Registration, mpsc::UnboundedReceiver<Ask>) {
        let (tx, rx) = mpsc::unbounded_channel();
        // Tags start at 1, and are unique for the gateway's life.
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let server: Arc<str> = Arc::from(server);
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(server.clone())
            .or_default()
            .push(Call {
                tag: id,
                host,
                asks: tx,
                waiting: Arc::default(),
            });
        let registration = Registration {
            asks: self.clone(),
            server,
            id,
        };
        (registration, rx)
    }

    /// Where `server`'s ask about the call tagged `tag` (or about an
    /// unknown one) goes, or why it goes nowhere.
    fn target(
        &self,
        server: &str,
        method: &str,
        tag: Option<u64>,
    ) -> Result<(mpsc::UnboundedSender<Ask>, Waiting), String> {
        let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        let list = calls.get(server).map(Vec::as_slice).unwrap_or_default();
        let call = match tag {
            Some(tag) => list.iter().find(|call| call.tag == tag).ok_or_else(|| {
                format!(
                    "server `{server}` sent `{method}` about a host call that has ended; declined"
                )
            })?,
            None => match list {
                [] => {
                    return Err(format!(
                        "server `{server}` sent `{method}` while no host call was running on it; declined"
                    ));
                }
                [first, rest @ ..] if rest.iter().all(|call| call.same_host(first)) => first,
                _ => {
                    return Err(format!(
                        "server `{server}` sent `{method}` without saying which call it is about, while calls of several hosts were running on it; declined so that no host sees another's"
                    ));
                }
            },
        };
        let waiting: usize = calls
            .values()
            .flatten()
            .filter(|other| call.shares_limits(other))
            .map(|other| other.waiting.load(Ordering::Relaxed))
            .sum();
        if waiting >= MAX_ASKS_PER_HOST {
            return Err(format!(
                "server `{server}` sent `{method}` while {waiting} asks already wait for that host's answers (at most {MAX_ASKS_PER_HOST}); declined"
            ));
        }
        call.waiting.fetch_add(1, Ordering::Relaxed);
        Ok((call.asks.clone(), Waiting(call.waiting.clone())))
    }

    /// Whether the call registered as `tag` is of the one host whose calls
    /// are running on `server`: what the backend sends without saying
    /// which call it is about (a log line) may then go to that host.
    pub(crate) fn alone_on(&self, server: &str, tag: u64) -> bool {
        let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        let list = calls.get(server).map(Vec::as_slice).unwrap_or_default();
        match list.iter().find(|call| call.tag == tag) {
            Some(mine) => list.iter().all(|call| call.same_host(mine)),
            None => false,
        }
    }

    /// Whether `server`'s ask that names no call would reach one (the
    /// one host whose calls are running there).
    fn reaches_a_call(&self, server: &str, method: &str) -> bool {
        self.target(server, method, None).is_ok()
    }

    /// Hands `server`'s ask to the host call it came about and waits for
    /// the host's answer.
    async fn ask(
        &self,
        server: &str,
        tag: Option<u64>,
        method: &'static str,
        params: Value,
    ) -> AskAnswer {
        let (target, _waiting) = match self.target(server, method, tag) {
            Ok(target) => target,
            Err(why) => {
                tracing::warn!("{why}");
                return Err(Refusal::Declined(why));
            }
        };
        let (answer, answered) = oneshot::channel();
        if target
            .send(Ask {
                method,
                params,
                answer,
            })
            .is_err()
        {
            return Err(Refusal::Ended(format!(
                "the host call on server `{server}` ended before `{method}` could reach it"
            )));
        }
        answered.await.unwrap_or_else(|_| {
            Err(Refusal::Ended(format!(
                "the host call on server `{server}` ended before answering `{method}`"
            )))
        })
    }
}

#[derive(Clone)]
struct Forward {
    asks: BackendAsks,
    server: Arc<str>,
}

impl Forward {
    /// Forwards an `elicitation/create` with these params (form or URL).
    fn elicit<P: serde::Serialize>(
        &self,
        context: &HandlerContext,
        params: &P,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        let tag = context.request_tag;
        let forward = self.clone();
        let mut params = to_value(params);
        // The gateway's own key is the gateway's to send: a backend's
        // form dressed as the tool policy's question is sent without it.
        if let Ok(Value::Object(object)) = &mut params
            && let Some(Value::Object(meta)) = object.get_mut("_meta")
        {
            meta.remove(super::names::TOOL_ASK_META);
        }
        Box::pin(async move {
            let params = params?;
            match forward
                .asks
                .ask(&forward.server, tag, "elicitation/create", params)
                .await
            {
                Ok(value) => serde_json::from_value(value).map_err(|e| {
                    HandlerError::Failed(format!("the host's elicitation answer is malformed: {e}"))
                }),
                Err(Refusal::Declined(_) | Refusal::Ended(_)) => Ok(ElicitResult::decline()),
                Err(Refusal::Error(error)) => Err(HandlerError::Rpc(error)),
            }
        })
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, HandlerError> {
    serde_json::to_value(value).map_err(|e| HandlerError::Failed(e.to_string()))
}

impl ElicitationHandler for Forward {
    fn elicit_form(
        &self,
        context: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        self.elicit(&context, &request.params)
    }

    fn supports_url(&self) -> bool {
        true
    }

    fn elicit_url(
        &self,
        context: HandlerContext,
        request: UrlRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        self.elicit(&context, &request.params)
    }
}

impl SamplingHandler for Forward {
    fn create_message(
        &self,
        context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        let forward = self.clone();
        let tag = context.request_tag;
        Box::pin(async move {
            let params = to_value(&params)?;
            match forward
                .asks
                .ask(&forward.server, tag, "sampling/createMessage", params)
                .await
            {
                Ok(value) => serde_json::from_value(value).map_err(|e| {
                    HandlerError::Failed(format!("the host's sampling answer is malformed: {e}"))
                }),
                Err(Refusal::Declined(why) | Refusal::Ended(why)) => {
                    Err(HandlerError::Rejected(why))
                }
                Err(Refusal::Error(error)) => Err(HandlerError::Rpc(error)),
            }
        })
    }

    fn supports_tools(&self) -> bool {
        true
    }
}

impl switchboard::RootsHandler for Forward {
    /// The roots of the host whose call the backend asks about; with no
    /// call to ask about (a backend asking at its start, or after a
    /// `roots/list_changed`), the roots of the host the gateway follows
    /// (`roots.rs`).
    fn list_roots(
        &self,
        context: HandlerContext,
    ) -> BoxFuture<'static, Result<Vec<Root>, HandlerError>> {
        let forward = self.clone();
        let tag = context.request_tag;
        Box::pin(async move {
            let server = &forward.server;
            if tag.is_none() && !forward.asks.reaches_a_call(server, ROOTS_LIST) {
                return Ok(forward.asks.roots.roots().get());
            }
            match forward
                .asks
                .ask(server, tag, ROOTS_LIST, Value::Object(Default::default()))
                .await
            {
                Ok(value) => serde_json::from_value::<ListRootsResult>(value)
                    .map(|result| {
                        let mut roots = result.roots;
                        roots.truncate(super::roots::MAX_ROOTS);
                        roots
                    })
                    .map_err(|e| {
                        HandlerError::Failed(format!("the host's roots answer is malformed: {e}"))
                    }),
                // Asked about no call, put to the one host whose call ran
                // there, and that call ended first: the backend asked on
                // its own (after a `roots/list_changed`, say), and is
                // answered as one with no call to ask about — a refusal
                // would leave it on its old roots for good, as nothing
                // makes it ask again.
                Err(Refusal::Ended(_)) if tag.is_none() => Ok(forward.asks.roots.roots().get()),
                Err(Refusal::Declined(why) | Refusal::Ended(why)) => {
                    Err(HandlerError::Rejected(why))
                }
                Err(Refusal::Error(error)) => Err(HandlerError::Rpc(error)),
            }
        })
    }
}

const ROOTS_LIST: &str = "roots/list";
