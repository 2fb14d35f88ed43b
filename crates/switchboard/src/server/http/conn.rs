//! The accept loop and each connection's limits: at most
//! [`HttpServeOptions::max_connections`] open, at most
//! [`HttpServeOptions::max_pending_connections`] of them still waiting for
//! their first request's head (the oldest such one is closed for a newcomer,
//! so half-sent requests cannot keep a host out), a connection with no
//! request in progress closed after [`HttpServeOptions::header_timeout`]
//! (before its first request) or [`HttpServeOptions::idle_timeout`] (after
//! one), and a failing `accept` (out of descriptors) retried after a pause
//! that doubles up to a second, instead of at once.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::body::ResponseBody;
use super::{HttpServeOptions, State, route};

/// The first pause after a failed `accept`, and the longest.
const ACCEPT_BACKOFF_FIRST: Duration = Duration::from_millis(5);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The connections still waiting for their first request's head, oldest
/// first, each with what closes it.
#[derive(Default)]
struct Pending {
    next: AtomicU64,
    waiting: Mutex<VecDeque<(u64, CancellationToken)>>,
}

impl Pending {
    /// Registers a new connection; closes the oldest waiting one when
    /// `max` wait already.
    fn add(&self, max: usize) -> (u64, CancellationToken) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        while waiting.len() >= max.max(1) {
            if let Some((_, oldest)) = waiting.pop_front() {
                oldest.cancel();
            }
        }
        waiting.push_back((id, token.clone()));
        (id, token)
    }

    /// Closes the oldest waiting connection, if any; whether there was one.
    fn evict_oldest(&self) -> bool {
        let oldest = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        oldest.map(|(_, token)| token.cancel()).is_some()
    }

    /// The connection sent a whole request head: no longer waiting.
    fn done(&self, id: u64) {
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(other, _)| *other != id);
    }
}

/// Whether a connection has a request in progress, and since when it has
/// had none.
struct Activity {
    in_flight: AtomicUsize,
    /// Requests in progress other than a `GET` (an event stream with no
    /// call behind it): what a graceful shutdown waits for.
    calls: AtomicUsize,
    served: AtomicBool,
    idle_since: Mutex<Instant>,
    changed: Notify,
}

impl Activity {
    fn new() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            served: AtomicBool::new(false),
            idle_since: Mutex::new(Instant::now()),
            changed: Notify::new(),
        }
    }

    fn begin(self: &Arc<Self>, call: bool) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        if call {
            self.calls.fetch_add(1, Ordering::SeqCst);
        }
        self.served.store(true, Ordering::SeqCst);
        self.changed.notify_waiters();
        InFlight {
            activity: self.clone(),
            call,
        }
    }

    /// Resolves when no call is in progress on the connection.
    async fn calls_done(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.calls.load(Ordering::SeqCst) == 0 {
                return;
            }
            changed.await;
        }
    }

    /// Resolves when the connection has had no request in progress for as
    /// long as it may.
    async fn idle_too_long(&self, header_timeout: Duration, idle_timeout: Duration) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.in_flight.load(Ordering::SeqCst) > 0 {
                changed.await;
                continue;
            }
            let limit = if self.served.load(Ordering::SeqCst) {
                idle_timeout
            } else {
                header_timeout
            };
            let since = *self.idle_since.lock().unwrap_or_else(|e| e.into_inner());
            tokio::select! {
                () = tokio::time::sleep_until(since + limit) => {
                    if self.in_flight.load(Ordering::SeqCst) == 0
                        && *self.idle_since.lock().unwrap_or_else(|e| e.into_inner()) == since
                    {
                        return;
                    }
                }
                () = &mut changed => {}
            }
        }
    }
}

/// A request in progress on its connection, until its answer is sent (or
/// dropped); `call` unless it is a `GET`.
struct InFlight {
    activity: Arc<Activity>,
    call: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.activity;
        *activity
            .idle_since
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Instant::now();
        activity.in_flight.fetch_sub(1, Ordering::SeqCst);
        if self.call {
            activity.calls.fetch_sub(1, Ordering::SeqCst);
        }
        activity.changed.notify_waiters();
    }
}

/// A response body that marks its request done when it is dropped (sent
/// whole, or abandoned).
pub(super) struct Tracked {
    body: ResponseBody,
    _in_flight: InFlight,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = <ResponseBody as hyper::body::Body>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// Accepts connections on `listener` until dropped, each served on its
/// own task under the limits of `state.options`.
pub(super) async fn accept_loop(state: Arc<State>, listener: TcpListener, stop: CancellationToken) {
    let options: &HttpServeOptions = &state.options;
    let open = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let pending = Arc::new(Pending::default());
    let tasks = TaskTracker::new();
    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    // Cancelled when `stop` is: each connection then finishes its calls.
    let draining = CancellationToken::new();
    let mut backoff = ACCEPT_BACKOFF_FIRST;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        let (stream, _peer) = match accepted {
            Ok(accepted) => {
                backoff = ACCEPT_BACKOFF_FIRST;
                accepted
            }
            Err(error) => {
                // Out of descriptors (EMFILE, ENFILE) or a connection reset
                // before it was taken: retrying at once would spin. A
                // connection still waiting for its head gives its
                // descriptor back.
                tracing::warn!(%error, pause = ?backoff, "accepting a connection failed");
                pending.evict_oldest();
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = stop.cancelled() => break,
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        let permit = match open.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                // At the cap: a connection that has not said anything yet
                // makes room; else the newcomer waits for one to close.
                pending.evict_oldest();
                tokio::select! {
                    permit = open.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                    () = stop.cancelled() => break,
                }
            }
        };
        // Small answers go out at once, not held for an ACK.
        let _ = stream.set_nodelay(true);
        let (id, close) = pending.add(options.max_pending_connections);
        let (header_timeout, idle_timeout) = (options.header_timeout, options.idle_timeout);
        let state = state.clone();
        let pending = pending.clone();
        let shutdown = shutdown.child_token();
        let draining = draining.child_token();
        tasks.spawn(async move {
            let _permit = permit;
            let activity = Arc::new(Activity::new());
            let tracked = activity.clone();
            let first = pending.clone();
            let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
                let in_flight = tracked.begin(request.method() != hyper::Method::GET);
                first.done(id);
                let state = state.clone();
                async move {
                    let response = route::handle(&state, request).await;
                    Ok::<_, Infallible>(response.map(|body| Tracked {
                        body,
                        _in_flight: in_flight,
                    }))
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::pin!(connection);
            let mut drained = false;
            // Dropping the connection closes it, whatever it was doing.
            loop {
                tokio::select! {
                    _ = connection.as_mut() => break,
                    () = close.cancelled() => break,
                    () = activity.idle_too_long(header_timeout, idle_timeout), if !drained => break,
                    () = shutdown.cancelled() => break,
                    () = draining.cancelled(), if !drained => {
                        // No other request is read; the one in progress
                        // is answered.
                        drained = true;
                        connection.as_mut().graceful_shutdown();
                    }
                    // Its calls answered, an event stream left open
                    // with nothing behind it ends here.
                    () = activity.calls_done(), if drained => break,
                }
            }
            pending.done(id);
        });
    }
    // Graceful: no new connection, every call in progress answered.
    drop(listener);
    draining.cancel();
    tasks.close();
    tasks.wait().await;
}
