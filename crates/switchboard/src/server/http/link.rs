//! A connection to the handler fed by POSTs, and where what the handler
//! says goes: the stream of the request it is about, else the session's
//! standalone stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use switchboard_types::jsonrpc::RequestId;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::stream::Stream;
use crate::server::{ServeOptions, Served, ServerHandler, serve};
use crate::transport::{
    BoxFuture, Connection, Incoming, MessageSink, MessageStream, TransportError,
};

/// How many messages a request's stream (and the standalone stream) holds
/// for a host that reads it slowly.
pub(super) const STREAM_CAPACITY: usize = 32;

/// Resumable streams a session keeps at once (running requests, and
/// answers no connection has taken yet).
pub(super) const MAX_STREAMS: usize = 256;

/// One message the handler sent about a request, and whether it is the
/// request's answer (the last).
pub(super) type Sent = (bool, Vec<u8>);

/// One connection to the handler, fed by POSTs: what it answers goes to
/// the POST waiting for that id, with what it says about the request on
/// the way (progress, its own requests) when the client takes a stream.
pub(super) struct Link {
    /// Answers the requests; dropping it closes the connection.
    pub(super) served: Served,
    pub(super) to_handler: mpsc::Sender<Vec<u8>>,
    pub(super) routes: Arc<Mutex<Routes>>,
    pub(super) last_used: Mutex<Instant>,
    /// The user (`sub`) whose session this is, when hosts are users: no
    /// other user's request reaches it.
    pub(super) owner: Option<String>,
}

#[derive(Default)]
pub(super) struct Routes {
    /// The POSTs waiting, by request id (JSON text).
    pub(super) waiting: HashMap<String, mpsc::Sender<Sent>>,
    /// The session's standalone stream (`GET`), when one is open.
    pub(super) standalone: Option<mpsc::Sender<Sent>>,
    /// What the server said outside any request while no standalone
    /// stream was open (the host opens it just after the handshake, and
    /// the server may speak first: a list change, a `roots/list`): the
    /// last [`STREAM_CAPACITY`], handed to the stream when it opens.
    pub(super) unsent: std::collections::VecDeque<Vec<u8>>,
    /// How to stop each running request of a session, by id.
    pub(super) cancels: HashMap<String, oneshot::Sender<()>>,
    /// The session's resumable request streams, by number (see `stream`).
    pub(super) streams: HashMap<u64, Arc<Stream>>,
    /// The last stream number given.
    pub(super) last_stream: u64,
}

pub(super) struct LinkSink {
    routes: Arc<Mutex<Routes>>,
    /// How long a request's stream may stay full.
    stall: std::time::Duration,
}

/// The id, method and whether it is a request, of a message from the host.
pub(super) fn request_id(message: &[u8]) -> Option<(Option<String>, Option<String>)> {
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
        #[serde(default)]
        method: Option<String>,
    }
    let peek: Peek<'_> = serde_json::from_slice(message).ok()?;
    Some((peek.id.map(|id| id.get().to_owned()), peek.method))
}

impl MessageSink for LinkSink {
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        // Answers never come this way (a POST's request is answered on its
        // own task): what comes is said about a request, and goes on its
        // stream, else on the standalone stream, else is kept (the last
        // few) until the client opens one. A host that leaves either
        // stream full for `stall` is cut off from it (its request
        // stopped), never buffered for.
        let related = crate::server::related_request();
        let target = {
            let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
            match related
                .as_deref()
                .and_then(|id| routes.waiting.get(id).cloned())
            {
                Some(target) => Some((target, related)),
                None => match routes.standalone.clone().filter(|tx| !tx.is_closed()) {
                    Some(target) => Some((target, None)),
                    None => {
                        // Kept for the standalone stream to come.
                        if routes.unsent.len() >= STREAM_CAPACITY {
                            tracing::debug!(
                                "no standalone stream is open: the oldest message kept for it \
                                 was dropped"
                            );
                            routes.unsent.pop_front();
                        }
                        routes.unsent.push_back(message.to_vec());
                        None
                    }
                },
            }
        };
        let stall = self.stall;
        Box::pin(async move {
            let Some((target, request)) = target else {
                return Ok(());
            };
            if let Err(mpsc::error::SendTimeoutError::Timeout(_)) =
                target.send_timeout((false, message.to_vec()), stall).await
            {
                tracing::warn!(
                    "the host has read nothing of its stream for {stall:?}: the stream is closed"
                );
                let cancel = {
                    let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
                    match &request {
                        Some(id) => {
                            routes.waiting.remove(&**id);
                            routes.cancels.remove(&**id)
                        }
                        None => {
                            routes.standalone = None;
                            None
                        }
                    }
                };
                if let Some(cancel) = cancel {
                    let _ = cancel.send(());
                }
            }
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

pub(super) struct LinkStream {
    rx: mpsc::Receiver<Vec<u8>>,
}

impl MessageStream for LinkStream {
    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Incoming>, TransportError>> {
        Box::pin(async move { Ok(self.rx.recv().await.map(Incoming::Message)) })
    }
}

impl Link {
    /// A connection to `handler`, of user `owner` when hosts are users; a
    /// host that leaves a request's stream full for `stall` is cut off
    /// from it.
    pub(super) fn open(
        handler: Arc<dyn ServerHandler>,
        mut options: ServeOptions,
        stall: std::time::Duration,
        owner: Option<String>,
    ) -> Self {
        options.owner = owner.as_deref().map(Arc::from);
        let (to_handler, rx) = mpsc::channel(64);
        let routes = Arc::new(Mutex::new(Routes::default()));
        let connection = Connection::new(
            Arc::new(LinkSink {
                routes: routes.clone(),
                stall,
            }),
            Box::new(LinkStream { rx }),
        );
        Self {
            served: serve(handler, connection, options),
            to_handler,
            routes,
            last_used: Mutex::new(Instant::now()),
            owner,
        }
    }

    /// Whether a request made for `user` may use this connection: the
    /// session's own user's, or any when hosts are not users.
    pub(super) fn serves(&self, user: Option<&crate::server::HostUser>) -> bool {
        self.owner.as_deref() == user.map(|u| u.sub.as_str())
    }

    pub(super) fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Hands a notification or a response of the client to the handler's
    /// connection.
    pub(super) async fn deliver(&self, message: Vec<u8>) {
        self.touch();
        let _ = self.to_handler.send(message).await;
    }

    pub(super) fn forget(&self, id: &str) {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        routes.waiting.remove(id);
        routes.cancels.remove(id);
    }

    /// Where what the handler says about request `id` (JSON text) arrives;
    /// `None` when a request with that id is in progress already.
    pub(super) fn expect(&self, id: &str) -> Option<mpsc::Receiver<Sent>> {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        if routes.waiting.get(id).is_some_and(|tx| !tx.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
        routes.waiting.insert(id.to_owned(), tx);
        Some(rx)
    }

    /// Resolves when the client cancels request `id` (JSON text).
    pub(super) fn cancellable(&self, id: &str) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .cancels
            .insert(id.to_owned(), tx);
        rx
    }

    /// Stops the request a `notifications/cancelled` names.
    pub(super) fn cancel_named(&self, notification: &[u8]) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Params {
            request_id: RequestId,
        }
        #[derive(serde::Deserialize)]
        struct Note {
            params: Params,
        }
        let Ok(note) = serde_json::from_slice::<Note>(notification) else {
            return;
        };
        let id = serde_json::to_string(&note.params.request_id).unwrap_or_default();
        let cancel = self
            .routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .cancels
            .remove(&id);
        if let Some(cancel) = cancel {
            let _ = cancel.send(());
        }
    }

    /// Whether no request of this connection is in progress.
    pub(super) fn is_idle(&self) -> bool {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .waiting
            .values()
            .all(mpsc::Sender::is_closed)
    }

    /// A number for a new resumable stream; `None` when the session
    /// keeps [`MAX_STREAMS`] already (the new one then ends with its
    /// connection).
    pub(super) fn next_stream(&self) -> Option<u64> {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        if routes.streams.len() >= MAX_STREAMS {
            return None;
        }
        routes.last_stream += 1;
        Some(routes.last_stream)
    }

    /// Keeps stream `number` for a resuming `GET`.
    pub(super) fn keep_stream(&self, number: u64, stream: Arc<Stream>) {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .streams
            .insert(number, stream);
    }

    pub(super) fn kept_stream(&self, number: u64) -> Option<Arc<Stream>> {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .streams
            .get(&number)
            .cloned()
    }

    pub(super) fn drop_stream(&self, number: u64) {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .streams
            .remove(&number);
    }

    /// Opens the standalone stream, unless one is open already.
    pub(super) fn open_standalone(&self) -> Option<mpsc::Receiver<Sent>> {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        if routes.standalone.as_ref().is_some_and(|tx| !tx.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
        // What was said before it opened goes first (at most its capacity
        // was kept).
        for message in routes.unsent.drain(..) {
            let _ = tx.try_send((false, message));
        }
        routes.standalone = Some(tx);
        Some(rx)
    }
}

pub(super) fn session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: no session that could be guessed.
        return String::new();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Leaves the request's routes when its exchange ends, however it ends.
pub(super) struct Running {
    pub(super) link: Arc<Link>,
    pub(super) id: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.link.forget(&self.id);
    }
}
