//! The JSON-RPC engine: ids, the pending map, routing, timeouts and
//! cancellation. It never touches a socket; it drives a [`Connection`].
//!
//! One task per connection reads messages and routes them: responses wake
//! their caller through a oneshot, server requests go to the handler,
//! notifications go to subscribers. Callers write their own requests straight
//! to the sink, so a request costs one task hop (the response wake-up).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use switchboard_types::jsonrpc::ErrorObject;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;

use crate::transport::{Connection, MessageSink, StderrBuffer, TransportError};

mod error;
mod raw;
mod reader;

pub use error::EngineError;
pub use raw::RawResult;
use reader::Reader;

/// A callback for `notifications/progress` of one request.
pub type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

/// A callback for the server's log lines (`notifications/message`, their
/// params) heard while one request is in flight.
pub type LogCallback = Arc<dyn Fn(Option<&RawValue>) + Send + Sync>;

/// One progress update for a request.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// Progress so far; increases with each update.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A human-readable message, when given.
    pub message: Option<String>,
}

/// Limits and defaults of one connection's engine. Start from
/// [`EngineConfig::default`] and set the fields you need.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct EngineConfig {
    /// Timeout of a request without a per-call override. Default 60 s.
    pub request_timeout: Duration,
    /// Upper bound of a request's life when progress keeps resetting its
    /// timeout. Default 10 minutes.
    pub max_request_time: Duration,
    /// Requests in flight at once; more wait for a slot. Default 1024.
    pub max_in_flight: usize,
    /// Notifications buffered per subscriber before the oldest unread ones
    /// are dropped (with a warning). Default 1024.
    pub notification_buffer: usize,
    /// The id of the first request; each next one is one more. Default 1.
    pub first_request_id: i64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(60),
            max_request_time: Duration::from_secs(600),
            max_in_flight: 1024,
            notification_buffer: 1024,
            first_request_id: 1,
        }
    }
}

/// Per-request options: [`RequestOptions::default`] and its builder
/// methods ([`with_timeout`](RequestOptions::with_timeout),
/// [`meta`](RequestOptions::meta), [`on_progress`](RequestOptions::on_progress)).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RequestOptions {
    /// Overrides the engine's request timeout.
    pub timeout: Option<Duration>,
    /// Receives this request's progress notifications; also makes progress
    /// reset the timeout, up to [`EngineConfig::max_request_time`].
    pub progress: Option<ProgressCallback>,
    /// Extra `_meta` entries for this request (a W3C `traceparent`, a
    /// vendor-prefixed key …), merged by the client into the params' `_meta`.
    /// An entry the params' own `_meta` already has is left as the params
    /// set it; an entry here outranks the client's per-request protocol
    /// fields (as a field in the params' `_meta` does), while
    /// `progressToken` stays the client's.
    pub meta: serde_json::Map<String, serde_json::Value>,
    /// The caller's own mark for this request, never sent: a request the
    /// server sends about it (on its HTTP response stream) reaches the
    /// handler with this tag ([`ServerRequest::related_tag`],
    /// `HandlerContext::request_tag`), so a gateway can route it to whoever
    /// made the call.
    pub tag: Option<u64>,
    /// Hears every log line (`notifications/message`) the server sends
    /// while this request is in flight — in order with its answer: all
    /// the lines read before the answer are heard before the request
    /// completes. Log lines name no request, so they may be about another
    /// request in flight at the time.
    pub log: Option<LogCallback>,
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("meta", &self.meta)
            .field("tag", &self.tag)
            .field("log", &self.log.is_some())
            .finish()
    }
}

impl RequestOptions {
    /// Options with a timeout.
    pub fn timeout(timeout: Duration) -> Self {
        Self::default().with_timeout(timeout)
    }

    /// Sets the timeout, overriding the engine's request timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Adds an entry to this request's `_meta`, replacing one of the same
    /// key. For the W3C trace context keys (`traceparent`, `tracestate`,
    /// `baggage`) the 2026-07-28 revision names them without a prefix; it
    /// is up to the caller to send them only to servers of that revision
    /// (`Client::protocol_version`).
    #[must_use]
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.meta.insert(key.into(), value.into());
        self
    }

    /// Marks the request with the caller's `tag` ([`RequestOptions::tag`]).
    #[must_use]
    pub fn with_tag(mut self, tag: u64) -> Self {
        self.tag = Some(tag);
        self
    }

    /// Adds a log callback ([`RequestOptions::log`]).
    #[must_use]
    pub fn on_log(mut self, callback: impl Fn(Option<&RawValue>) + Send + Sync + 'static) -> Self {
        self.log = Some(Arc::new(callback));
        self
    }

    /// Adds a progress callback.
    #[must_use]
    pub fn on_progress(mut self, callback: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(callback));
        self
    }
}

/// A request the server sent us.
#[derive(Debug)]
#[non_exhaustive]
pub struct ServerRequest {
    /// The request's id, as the peer sent it.
    pub id: switchboard_types::jsonrpc::RequestId,
    /// The method.
    pub method: String,
    /// The params, unparsed.
    pub params: Option<Box<RawValue>>,
    /// The tag ([`RequestOptions::tag`]) of our request this one came
    /// about, when the transport knows (it came on that request's HTTP
    /// response stream) and the request is still waiting.
    pub related_tag: Option<u64>,
}

/// A notification the server sent us.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerNotification {
    /// The method.
    pub method: String,
    /// The params, unparsed.
    pub params: Option<Arc<RawValue>>,
}

/// The answer to a server request: a result or a JSON-RPC error.
pub type HandlerResult = Result<Box<RawValue>, ErrorObject>;

/// The response to request `id` as the bytes sent. A result's text is not
/// copied: the envelope is written around it, in its own buffer (grown by
/// the few bytes of the envelope, and moved within it).
pub(crate) fn response_bytes(
    id: &switchboard_types::jsonrpc::RequestId,
    outcome: HandlerResult,
) -> Vec<u8> {
    use switchboard_types::jsonrpc::{JsonRpcMessage, JsonRpcResponse};
    let result = match outcome {
        Ok(result) => result,
        Err(error) => {
            return JsonRpcMessage::Response(JsonRpcResponse {
                id: Some(id.clone()),
                outcome: Err(error),
            })
            .to_vec();
        }
    };
    let mut head = br#"{"jsonrpc":"2.0","id":"#.to_vec();
    serde_json::to_writer(&mut head, id).expect("an id always serializes");
    head.extend_from_slice(br#","result":"#);
    let mut bytes = String::from(Box::<str>::from(result)).into_bytes();
    let len = bytes.len();
    bytes.reserve_exact(head.len() + 1);
    bytes.resize(len + head.len(), 0);
    bytes.copy_within(..len, head.len());
    bytes[..head.len()].copy_from_slice(&head);
    bytes.push(b'}');
    bytes
}

/// Answers requests the server sends (sampling, elicitation, roots …).
/// `ping` is answered by the engine itself.
pub trait RequestHandler: Send + Sync + 'static {
    /// Returns the answer's future, or `None` when this handler does not
    /// handle `request.method` (the server then gets -32601).
    fn handle(
        &self,
        request: ServerRequest,
    ) -> Option<crate::transport::BoxFuture<'static, HandlerResult>>;
}

/// What the reader hands a waiting caller.
enum Answer {
    /// The server's result or JSON-RPC error.
    Reply(Result<RawResult, ErrorObject>),
    /// A reply with this request's id arrived but cannot be used; says what
    /// was wrong.
    Unusable(String),
    /// The transport lost the reply; says how.
    Lost(String),
}

struct Pending {
    tx: oneshot::Sender<Answer>,
    progress: Option<(ProgressCallback, Arc<Mutex<Option<Instant>>>)>,
    tag: Option<u64>,
    log: Option<LogCallback>,
}

/// State shared by callers and the reader task.
struct Shared {
    server: Arc<str>,
    pending: Mutex<PendingMap>,
    subscribers: Mutex<Vec<Subscriber>>,
    skipped_lines: AtomicU64,
    /// Server requests our handlers are working on (a user filling in a
    /// form): the server is waiting on us, so our requests' timeouts wait too.
    asks: Mutex<Asks>,
    /// Flips to true once the reader has recorded why the connection died.
    closed_signal: tokio::sync::watch::Sender<bool>,
}

/// What a subscriber that asked for gaps to be marked receives: the
/// notifications, and where some were dropped, how many.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Notice {
    /// A notification from the server, in arrival order.
    Notification(ServerNotification),
    /// This many notifications were dropped here, because the subscriber's
    /// buffer was full.
    Lagged(u64),
}

/// Where a subscriber's notifications go.
enum Outlet {
    /// Notifications only; a gap goes unmarked.
    Plain(mpsc::Sender<ServerNotification>),
    /// Notifications, and a [`Notice::Lagged`] where some were dropped.
    MarkingGaps(mpsc::Sender<Notice>),
}

/// How a `try_send` went, whatever the channel carries.
enum Sent {
    Yes,
    Full,
    Closed,
}

impl<T> From<Result<(), mpsc::error::TrySendError<T>>> for Sent {
    fn from(result: Result<(), mpsc::error::TrySendError<T>>) -> Self {
        match result {
            Ok(()) => Sent::Yes,
            Err(mpsc::error::TrySendError::Full(_)) => Sent::Full,
            Err(mpsc::error::TrySendError::Closed(_)) => Sent::Closed,
        }
    }
}

/// One reader of the notification stream.
struct Subscriber {
    tx: Outlet,
    /// Notifications dropped since the last one delivered, because this
    /// subscriber's buffer was full.
    lagged: u64,
}

impl Subscriber {
    /// Delivers `notification`, first marking any gap before it; `false`
    /// once the receiver is gone.
    fn deliver(&mut self, notification: &ServerNotification, server: &str) -> bool {
        if let Outlet::MarkingGaps(tx) = &self.tx
            && self.lagged > 0
        {
            match Sent::from(tx.try_send(Notice::Lagged(self.lagged))) {
                Sent::Yes => self.lagged = 0,
                Sent::Full => {
                    self.lagged += 1;
                    return true;
                }
                Sent::Closed => return false,
            }
        }
        let sent = match &self.tx {
            Outlet::Plain(tx) => Sent::from(tx.try_send(notification.clone())),
            Outlet::MarkingGaps(tx) => {
                Sent::from(tx.try_send(Notice::Notification(notification.clone())))
            }
        };
        match sent {
            Sent::Yes => {
                self.lagged = 0;
                true
            }
            Sent::Full => {
                if self.lagged == 0 {
                    tracing::warn!(
                        server = %server,
                        method = %notification.method,
                        "a notification subscriber is not keeping up; dropping notifications"
                    );
                }
                self.lagged += 1;
                true
            }
            Sent::Closed => false,
        }
    }
}

#[derive(Default)]
struct Asks {
    running: usize,
    last_finished: Option<Instant>,
}

/// Counts a running handler from its start until it ends or is aborted.
struct AskGuard(Arc<Shared>);

impl AskGuard {
    fn new(shared: Arc<Shared>) -> Self {
        shared
            .asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .running += 1;
        Self(shared)
    }
}

impl Drop for AskGuard {
    fn drop(&mut self) {
        let mut asks = self.0.asks.lock().unwrap_or_else(|e| e.into_inner());
        asks.running -= 1;
        asks.last_finished = Some(Instant::now());
    }
}

struct PendingMap {
    map: HashMap<i64, Pending>,
    /// Set once, when the connection dies; every later request fails with it.
    closed: Option<Arc<TransportError>>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, PendingMap> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How long a failed write waits for the reader to say why the connection
/// died (a process's exit status arrives within ~100 ms of its exit).
const SEND_FAILURE_GRACE: Duration = Duration::from_millis(500);

enum Control {
    Cancel {
        id: i64,
        reason: &'static str,
    },
    /// A parameterless notification to send from the reader (for callers
    /// that cannot await, like a roots change).
    Notify {
        method: &'static str,
    },
    /// An answer the transport gave back with a request's send that is not
    /// simply that request's response: routed as the stream's would be.
    Deliver {
        id: i64,
        message: Vec<u8>,
    },
}

/// A running JSON-RPC connection.
pub(crate) struct Engine {
    shared: Arc<Shared>,
    sink: Arc<dyn MessageSink>,
    config: EngineConfig,
    next_id: AtomicI64,
    in_flight: Semaphore,
    control: mpsc::UnboundedSender<Control>,
    stderr: Option<StderrBuffer>,
    _reader: AbortOnDropHandle<()>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("server", &self.shared.server)
            .field("next_id", &self.next_id)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Starts the reader task on the current runtime.
    pub(crate) fn start(
        server: Arc<str>,
        connection: Connection,
        config: EngineConfig,
        handler: Option<Arc<dyn RequestHandler>>,
    ) -> Self {
        Self::start_held(server, connection, config, handler).0
    }

    /// [`Engine::start`], but nothing is read from the connection until
    /// the returned sender is used or dropped: what the peer sent first
    /// (a client's `notifications/initialized` right behind its
    /// `initialize`) is not read before the caller has subscribed.
    pub(crate) fn start_held(
        server: Arc<str>,
        connection: Connection,
        config: EngineConfig,
        handler: Option<Arc<dyn RequestHandler>>,
    ) -> (Self, oneshot::Sender<()>) {
        let (release, held) = oneshot::channel();
        let shared = Arc::new(Shared {
            server,
            pending: Mutex::new(PendingMap {
                map: HashMap::new(),
                closed: None,
            }),
            subscribers: Mutex::new(Vec::new()),
            skipped_lines: AtomicU64::new(0),
            asks: Mutex::new(Asks::default()),
            closed_signal: tokio::sync::watch::Sender::new(false),
        });
        let (control, control_rx) = mpsc::unbounded_channel();
        let reader = Reader {
            shared: shared.clone(),
            sink: connection.sink.clone(),
            handler,
            handlers: JoinSet::new(),
            running: HashMap::new(),
            single_pipe: false,
            relating: None,
        };
        let task = tokio::spawn(async move {
            // Used or dropped, either way the caller is ready.
            let _ = held.await;
            reader.run(connection.stream, control_rx).await;
        });
        let first_id = config.first_request_id;
        let engine = Self {
            shared,
            sink: connection.sink,
            in_flight: Semaphore::new(config.max_in_flight.max(1)),
            config,
            next_id: AtomicI64::new(first_id),
            control,
            stderr: connection.stderr,
            _reader: AbortOnDropHandle::new(task),
        };
        (engine, release)
    }

    pub(crate) fn server(&self) -> &Arc<str> {
        &self.shared.server
    }

    pub(crate) fn stderr(&self) -> Option<&StderrBuffer> {
        self.stderr.as_ref()
    }

    /// Lines the server wrote that were not JSON-RPC and were skipped.
    pub(crate) fn skipped_lines(&self) -> u64 {
        self.shared.skipped_lines.load(Ordering::Relaxed)
    }

    /// Why the connection died, once it has.
    pub(crate) fn closed_reason(&self) -> Option<Arc<TransportError>> {
        self.shared.lock().closed.clone()
    }

    /// A fresh request id; ids are never reused on a connection.
    pub(crate) fn allocate_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Subscribes to the server's notifications, in arrival order.
    pub(crate) fn subscribe(&self) -> mpsc::Receiver<ServerNotification> {
        let (tx, rx) = mpsc::channel(self.config.notification_buffer.max(1));
        self.add_subscriber(Outlet::Plain(tx));
        rx
    }

    /// [`Engine::subscribe`], with a [`Notice::Lagged`] where notifications
    /// were dropped because the buffer was full.
    pub(crate) fn subscribe_marking_gaps(&self) -> mpsc::Receiver<Notice> {
        let (tx, rx) = mpsc::channel(self.config.notification_buffer.max(1));
        self.add_subscriber(Outlet::MarkingGaps(tx));
        rx
    }

    /// The receiver ends when the connection dies.
    fn add_subscriber(&self, tx: Outlet) {
        // Under the pending lock, so a subscriber never misses the close.
        let pending = self.shared.lock();
        if pending.closed.is_none() {
            self.shared
                .subscribers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Subscriber { tx, lagged: 0 });
        }
        drop(pending);
    }

    /// The per-subscriber buffer size.
    pub(crate) fn notification_buffer(&self) -> usize {
        self.config.notification_buffer
    }

    /// A function that queues a parameterless notification without
    /// awaiting (sent by the reader; dropped once the connection is gone).
    /// It does not keep the connection alive.
    pub(crate) fn notifier(&self) -> impl Fn(&'static str) + Send + Sync + 'static {
        let control = self.control.clone();
        move |method| {
            let _ = control.send(Control::Notify { method });
        }
    }

    /// Why the connection died, for a holder of the shared state only.
    pub(crate) fn closed_reader(
        &self,
    ) -> impl Fn() -> Option<Arc<TransportError>> + Send + Sync + 'static {
        let shared = self.shared.clone();
        move || shared.lock().closed.clone()
    }

    /// What flips to `true` once the connection is gone (holds nothing of
    /// the engine).
    pub(crate) fn closed_watch(&self) -> tokio::sync::watch::Receiver<bool> {
        self.shared.closed_signal.subscribe()
    }

    /// Waits until the connection is gone and returns why.
    pub(crate) async fn wait_closed(&self) -> Arc<TransportError> {
        let mut closed = self.shared.closed_signal.subscribe();
        let _ = closed.wait_for(|closed| *closed).await;
        self.closed_reason()
            .unwrap_or_else(|| Arc::new(TransportError::ClosedByClient))
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), EngineError> {
        if let Some(reason) = self.closed_reason() {
            return Err(self.disconnected(reason));
        }
        let mut buf = Vec::with_capacity(64 + params.map_or(0, |p| p.get().len()));
        buf.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
        serde_json::to_writer(&mut buf, method).expect("strings serialize");
        if let Some(params) = params {
            buf.extend_from_slice(br#","params":"#);
            buf.extend_from_slice(params.get().as_bytes());
        }
        buf.push(b'}');
        match self.sink.send(&buf).await {
            Ok(()) => Ok(()),
            Err(error) => Err(self.send_failed(error).await),
        }
    }

    /// Sends request `id` (from [`Engine::allocate_id`]) and waits for its
    /// response.
    ///
    /// # Cancel safety
    /// Dropping the future sends `notifications/cancelled` for the request
    /// (except for `initialize`) and drops any late response.
    pub(crate) async fn request(
        &self,
        id: i64,
        method: &str,
        params: Option<&RawValue>,
        options: RequestOptions,
    ) -> Result<RawResult, EngineError> {
        let _permit = self
            .in_flight
            .acquire()
            .await
            .expect("the in-flight semaphore is never closed");
        let timeout = options.timeout.unwrap_or(self.config.request_timeout);
        let (tx, rx) = oneshot::channel();
        let progress_seen = options
            .progress
            .as_ref()
            .map(|_| Arc::new(Mutex::new(None)));
        {
            let mut pending = self.shared.lock();
            if let Some(reason) = &pending.closed {
                return Err(self.disconnected(reason.clone()));
            }
            pending.map.insert(
                id,
                Pending {
                    tx,
                    progress: options.progress.zip(progress_seen.clone()),
                    tag: options.tag,
                    log: options.log,
                },
            );
        }
        let mut guard = PendingGuard {
            engine: self,
            id,
            cancel: method != "initialize",
        };

        let mut buf = Vec::with_capacity(64 + params.map_or(0, |p| p.get().len()));
        buf.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        buf.extend_from_slice(id.to_string().as_bytes());
        buf.extend_from_slice(br#","method":"#);
        serde_json::to_writer(&mut buf, method).expect("strings serialize");
        if let Some(params) = params {
            buf.extend_from_slice(br#","params":"#);
            buf.extend_from_slice(params.get().as_bytes());
        }
        buf.push(b'}');
        let start = Instant::now();
        let hard_deadline = start + self.config.max_request_time.max(timeout);
        let mut deadline = start + timeout;
        // When the deadline passes: a later one, if progress arrived or one
        // of our handlers is (or just was) busy answering the server, up to
        // the hard deadline.
        let extend = |deadline: Instant| -> Option<Instant> {
            let last_progress = progress_seen
                .as_ref()
                .and_then(|seen| *seen.lock().unwrap_or_else(|e| e.into_inner()));
            let asks = self.shared.asks.lock().unwrap_or_else(|e| e.into_inner());
            let last_ask = if asks.running > 0 {
                Some(Instant::now())
            } else {
                asks.last_finished
            };
            drop(asks);
            let extended = last_progress
                .into_iter()
                .chain(last_ask)
                .max()
                .map(|at| (at + timeout).min(hard_deadline))?;
            (extended > deadline).then_some(extended)
        };
        let sleep = tokio::time::sleep_until(deadline);
        tokio::pin!(sleep);
        // The deadline covers sending too: an HTTP transport reads a JSON
        // answer inside `send`, and a server may never send it.
        let send = self.sink.send_request(&buf);
        tokio::pin!(send);
        loop {
            tokio::select! {
                biased;
                sent = &mut send => match sent {
                    Ok(crate::transport::Sent::Answer(message)) => {
                        // Routed here, on the caller's task: no hop through
                        // the reader when it is simply our response.
                        if let Err(message) = reader::answer_inline(&self.shared, id, message) {
                            let _ = self.control.send(Control::Deliver { id, message });
                        }
                        break;
                    }
                    Ok(_) => break,
                    Err(error) if error.is_protocol_violation() => {
                        // The answer came with the send (an HTTP body) and
                        // was unusable.
                        guard.cancel = false;
                        return Err(EngineError::ProtocolViolation {
                            server: self.shared.server.clone(),
                            method: method.to_owned(),
                            what: error.to_string(),
                        });
                    }
                    Err(error) => {
                        guard.cancel = false;
                        return Err(self.send_failed(error).await);
                    }
                },
                () = &mut sleep => {
                    if let Some(later) = extend(deadline) {
                        deadline = later;
                        sleep.as_mut().reset(deadline);
                        continue;
                    }
                    // The guard tells the server (on HTTP, dropping the send
                    // already closed the request).
                    return Err(EngineError::Timeout {
                        server: self.shared.server.clone(),
                        method: method.to_owned(),
                        after: start.elapsed(),
                    });
                }
            }
        }
        let mut rx = rx;
        loop {
            tokio::select! {
                biased;
                outcome = &mut rx => {
                    guard.cancel = false;
                    return match outcome {
                        Ok(Answer::Reply(Ok(result))) => Ok(result),
                        Ok(Answer::Unusable(what)) => Err(EngineError::ProtocolViolation {
                            server: self.shared.server.clone(),
                            method: method.to_owned(),
                            what,
                        }),
                        Ok(Answer::Lost(reason)) => Err(EngineError::ResponseLost {
                            server: self.shared.server.clone(),
                            method: method.to_owned(),
                            reason,
                        }),
                        Ok(Answer::Reply(Err(error))) => Err(EngineError::Server {
                            server: self.shared.server.clone(),
                            method: method.to_owned(),
                            error: Box::new(error),
                        }),
                        // The reader dropped our entry: the connection died.
                        Err(_) => Err(self.disconnected(
                            self.closed_reason().unwrap_or_else(|| Arc::new(TransportError::ClosedByClient)),
                        )),
                    };
                }
                () = &mut sleep => {
                    if let Some(later) = extend(deadline) {
                        deadline = later;
                        sleep.as_mut().reset(deadline);
                        continue;
                    }
                    return Err(EngineError::Timeout {
                        server: self.shared.server.clone(),
                        method: method.to_owned(),
                        after: start.elapsed(),
                    });
                    // The guard sends `notifications/cancelled`.
                }
            }
        }
    }

    fn disconnected(&self, reason: Arc<TransportError>) -> EngineError {
        EngineError::Disconnected {
            server: self.shared.server.clone(),
            reason,
        }
    }

    async fn send_failed(&self, error: TransportError) -> EngineError {
        // A dead pipe usually means the process exited; the reader's reason
        // (exit status, stderr) is the more useful one and follows shortly.
        // Only a broken connection has such a reason coming; an HTTP
        // status is the whole story and is returned at once.
        if matches!(
            error,
            TransportError::Closed { .. } | TransportError::Io(_) | TransportError::Exited { .. }
        ) {
            let mut closed = self.shared.closed_signal.subscribe();
            let _ =
                tokio::time::timeout(SEND_FAILURE_GRACE, closed.wait_for(|closed| *closed)).await;
        }
        match self.closed_reason() {
            Some(reason) => self.disconnected(reason),
            None => EngineError::Transport {
                server: self.shared.server.clone(),
                source: Box::new(error),
            },
        }
    }

    /// Closes the connection gracefully; pending requests fail.
    pub(crate) async fn close(&self) {
        self.sink.close().await;
        fail_all(&self.shared, Arc::new(TransportError::ClosedByClient));
    }
}

/// Removes a request's pending entry when its future ends, and tells the
/// server when the caller gave up.
struct PendingGuard<'a> {
    engine: &'a Engine,
    id: i64,
    cancel: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        let removed = self.engine.shared.lock().map.remove(&self.id).is_some();
        if removed && self.cancel {
            let _ = self.engine.control.send(Control::Cancel {
                id: self.id,
                reason: "request cancelled by the client",
            });
        }
    }
}

fn fail_all(shared: &Shared, reason: Arc<TransportError>) {
    let drained: Vec<Pending> = {
        let mut pending = shared.lock();
        if pending.closed.is_none() {
            pending.closed = Some(reason);
        }
        // Ending the subscribers' streams under the lock: a subscriber
        // added later sees `closed` and gets an ended stream.
        shared
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        pending.map.drain().map(|(_, p)| p).collect()
    };
    shared.closed_signal.send_replace(true);
    // Dropping the senders wakes every waiter with the recorded reason.
    drop(drained);
}

#[cfg(test)]
mod tests;
