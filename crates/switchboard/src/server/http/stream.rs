//! A request's event stream — a `POST` answered with `text/event-stream`:
//! what the handler says about the request, then its answer.
//!
//! For a host of 2025-11-25 or later in a session the stream is
//! **resumable** (SEP-1699): it opens with a priming event (an id, empty
//! data and `retry:`), every event carries an id `s<stream>-<n>`, and a
//! connection that drops does not cancel the request. For
//! [`HttpServeOptions::resume_window`](super::HttpServeOptions::resume_window)
//! the request runs on and its last [`KEPT`] events are kept; a `GET` with
//! `Last-Event-ID` takes the stream up after that event (a connection
//! still reading it is closed: an event goes to one connection). With no
//! connection for that long the request is cancelled. An older host gets
//! no ids (it may not take an event without data) and its dropped
//! connection cancels the request, as before.
//!
//! The events live in one [`Stream`]: the pump (a task per stream) puts
//! them in, each connection's [`StreamBody`] reads them out by number.
//! Events a connection has not been handed yet are never dropped: a full
//! stream holds the pump, whose channel then fills, and the link cuts off
//! a host that reads nothing for `stream_stall` (see `link`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use switchboard_types::jsonrpc::ErrorObject;
use tokio::sync::{Notify, mpsc};

use super::link::{Link, Running, Sent};
use crate::engine::HandlerResult;
use crate::transport::BoxFuture;

/// Events a stream keeps: those not yet handed to a connection, and the
/// last ones handed (for a host that lost them in flight).
pub(super) const KEPT: usize = 32;

/// `retry:` of a resumable stream: how long a host waits before it
/// resumes a stream whose connection closed.
pub(super) const RETRY_MS: u64 = 1000;

/// How long a resumable stream is kept once its answer was handed to a
/// connection (at most the resume window).
const LINGER: Duration = Duration::from_secs(5);

/// JSON-RPC code of a request that ran past the endpoint's limit.
const REQUEST_TIMEOUT: i64 = -32001;

/// One request's events.
pub(super) struct Stream {
    /// The stream's number in its session (`s<number>-…` ids); 0 for a
    /// stream that is not resumable.
    number: u64,
    state: Mutex<StreamState>,
    /// Rung when a connection attaches, detaches or takes an event.
    changed: Notify,
}

#[derive(Default)]
struct StreamState {
    /// Events by number, from 1, in order.
    kept: VecDeque<(u64, Vec<u8>)>,
    /// The next event's number.
    next: u64,
    /// The answer is the last event in `kept`.
    done: bool,
    /// The request is over without an answer (cancelled, cut off).
    gone: bool,
    /// The connection reading the stream now: its generation, 0 for none.
    reader: u64,
    generations: u64,
    /// Events numbered below this were handed to a connection.
    handed: u64,
    waker: Option<Waker>,
}

impl Stream {
    fn new(number: u64) -> Self {
        Self {
            number,
            state: Mutex::new(StreamState {
                next: 1,
                handed: 1,
                ..StreamState::default()
            }),
            changed: Notify::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, StreamState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn resumable(&self) -> bool {
        self.number != 0
    }

    /// Puts `message` on the stream once there is room (an event handed
    /// to a connection makes room); `false` when none was made for
    /// `stall`: the host reads nothing.
    async fn push(&self, message: Vec<u8>, last: bool, stall: Duration) -> bool {
        let room = async {
            loop {
                let notified = self.changed.notified();
                {
                    let mut state = self.state();
                    while state.kept.len() >= KEPT
                        && state.kept.front().is_some_and(|(n, _)| *n < state.handed)
                    {
                        state.kept.pop_front();
                    }
                    if state.kept.len() < KEPT {
                        return state;
                    }
                }
                notified.await;
            }
        };
        let Ok(mut state) = tokio::time::timeout(stall, room).await else {
            tracing::warn!(
                "the host has read nothing of its stream for {stall:?}: the stream is closed"
            );
            return false;
        };
        let n = state.next;
        state.next += 1;
        state.kept.push_back((n, message));
        state.done = last;
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
        true
    }

    /// Ends the stream with no answer.
    fn end(&self) {
        let mut state = self.state();
        state.gone = true;
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }

    /// Resolves once no connection has read the stream for `window`.
    async fn orphaned(&self, window: Duration) {
        loop {
            let notified = self.changed.notified();
            if self.state().reader == 0 {
                if tokio::time::timeout(window, notified).await.is_err() && self.state().reader == 0
                {
                    return;
                }
            } else {
                notified.await;
            }
        }
    }

    /// Resolves once the answer was handed to a connection.
    async fn delivered(&self) {
        loop {
            let notified = self.changed.notified();
            {
                let state = self.state();
                if state.handed >= state.next {
                    return;
                }
            }
            notified.await;
        }
    }

    /// A connection reading the stream from event `from` on (the one
    /// reading it so far stops), with the priming event first when
    /// `priming`; `None` when the events from `from` are no longer kept.
    fn attach(self: &Arc<Self>, from: u64, priming: bool) -> Option<StreamBody> {
        let mut state = self.state();
        let oldest = state.kept.front().map_or(state.next, |(n, _)| *n);
        if from < oldest || from > state.next || state.gone {
            return None;
        }
        state.generations += 1;
        state.reader = state.generations;
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
        let generation = state.reader;
        drop(state);
        self.changed.notify_waiters();
        Some(StreamBody {
            stream: self.clone(),
            generation,
            next: from,
            priming: priming.then(|| self.priming()),
            ended: false,
        })
    }

    fn priming(&self) -> Bytes {
        Bytes::from(format!(
            "id: s{}-0\nretry: {RETRY_MS}\ndata: \n\n",
            self.number
        ))
    }

    fn event(&self, n: u64, message: &[u8]) -> Bytes {
        let id = self.resumable().then(|| format!("s{}-{n}", self.number));
        super::body::sse_event_with_id(id.as_deref(), message)
    }
}

/// The number of the stream and the event after which a `Last-Event-ID`
/// (`s<stream>-<n>`) resumes.
pub(super) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, n) = id.strip_prefix('s')?.split_once('-')?;
    Some((stream.parse().ok()?, n.parse().ok()?))
}

/// One connection's reading of a [`Stream`]: the response body.
pub(super) struct StreamBody {
    stream: Arc<Stream>,
    generation: u64,
    /// The next event's number.
    next: u64,
    priming: Option<Bytes>,
    ended: bool,
}

impl hyper::body::Body for StreamBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        if let Some(priming) = self.priming.take() {
            return Poll::Ready(Some(Ok(hyper::body::Frame::data(priming))));
        }
        if self.ended {
            return Poll::Ready(None);
        }
        let stream = self.stream.clone();
        let mut state = stream.state();
        // Another connection took the stream up.
        if state.reader != self.generation {
            return Poll::Ready(None);
        }
        let next = self.next;
        if let Some((n, message)) = state.kept.iter().find(|(n, _)| *n >= next) {
            let (n, frame) = (*n, stream.event(*n, message));
            self.next = n + 1;
            state.handed = state.handed.max(n + 1);
            self.ended = state.done && self.next >= state.next;
            drop(state);
            stream.changed.notify_waiters();
            return Poll::Ready(Some(Ok(hyper::body::Frame::data(frame))));
        }
        if state.gone || (state.done && next >= state.next) {
            return Poll::Ready(None);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for StreamBody {
    fn drop(&mut self) {
        let mut state = self.stream.state();
        if state.reader == self.generation {
            state.reader = 0;
            drop(state);
            self.stream.changed.notify_waiters();
        }
    }
}

/// What a request's stream is made of.
pub(super) struct Source {
    pub(super) link: Arc<Link>,
    pub(super) running: Running,
    /// What the handler says about the request.
    pub(super) said: mpsc::Receiver<Sent>,
    /// The answer (dropping it cancels the request).
    pub(super) answer: BoxFuture<'static, HandlerResult>,
    /// Resolves when the host cancels the request.
    pub(super) cancelled: BoxFuture<'static, ()>,
    /// The messages said before the stream opened, in order.
    pub(super) early: Vec<Vec<u8>>,
    /// Makes each message the host's (a stateless request's ids).
    pub(super) relabel: Box<dyn Fn(Vec<u8>) -> Vec<u8> + Send + Sync>,
    /// The answer's bytes.
    pub(super) respond: Box<dyn Fn(HandlerResult) -> Vec<u8> + Send + Sync>,
    /// When the request has run too long, unless it says something
    /// first: each event pushes it out by `timeout`.
    pub(super) deadline: tokio::time::Instant,
    pub(super) timeout: Duration,
    /// How long the host may leave the stream full.
    pub(super) stall: Duration,
}

/// Opens `source`'s stream — resumable when `resume_window` is set — and
/// its first connection's body.
pub(super) fn open(source: Source, resume_window: Option<Duration>) -> StreamBody {
    let resumable = resume_window.and_then(|window| Some((source.link.next_stream()?, window)));
    let stream = Arc::new(Stream::new(resumable.map_or(0, |(number, _)| number)));
    let body = stream
        .attach(1, resumable.is_some())
        .expect("a new stream takes a connection from its first event");
    if let Some((number, _)) = resumable {
        source.link.keep_stream(number, stream.clone());
    }
    // The task ends with the request's answer, or when the request
    // ends otherwise; either way the stream stops being kept.
    tokio::spawn(pump(stream, source, resumable.map(|(_, window)| window)));
    body
}

async fn pump(stream: Arc<Stream>, source: Source, resume_window: Option<Duration>) {
    let Source {
        link,
        running,
        mut said,
        mut answer,
        mut cancelled,
        early,
        relabel,
        respond,
        deadline,
        timeout,
        stall,
    } = source;
    // A stream that is not resumable ends its request with its
    // connection.
    let window = resume_window.unwrap_or(Duration::ZERO);
    let orphaned = stream.orphaned(window);
    tokio::pin!(orphaned);
    let deadline = tokio::time::sleep_until(deadline);
    tokio::pin!(deadline);
    let push = |message, last| stream.push(message, last, stall);
    let finished = async {
        for message in early {
            if !push(relabel(message), false).await {
                return false;
            }
        }
        loop {
            let (message, last) = tokio::select! {
                biased;
                message = said.recv() => match message {
                    Some((_, message)) => (relabel(message), false),
                    // The link cut the stream off (its host did not read
                    // it).
                    None => return false,
                },
                outcome = &mut answer => {
                    while let Ok((_, message)) = said.try_recv() {
                        if !push(relabel(message), false).await {
                            return false;
                        }
                    }
                    (respond(outcome), true)
                }
                () = &mut deadline => {
                    let error = ErrorObject::new(
                        REQUEST_TIMEOUT,
                        "Request timed out: it took longer than the endpoint allows",
                    );
                    (respond(Err(error)), true)
                }
            };
            if !push(message, last).await {
                return false;
            }
            if last {
                return true;
            }
            deadline
                .as_mut()
                .reset(tokio::time::Instant::now() + timeout);
        }
    };
    let answered = tokio::select! {
        answered = finished => answered,
        () = &mut cancelled => false,
        () = &mut orphaned => false,
    };
    // The request is over: its handler (still running after a timeout)
    // stops, its routes go.
    drop((answer, said, cancelled, running));
    if answered {
        // Kept until a connection has it, or none came for the window;
        // then a little longer (resumable), for a host whose connection
        // died with the answer in flight.
        tokio::select! {
            () = stream.delivered() => {}
            () = &mut orphaned => {}
        }
        if stream.resumable() {
            tokio::time::sleep(LINGER.min(window)).await;
        }
    } else {
        stream.end();
    }
    if stream.resumable() {
        link.drop_stream(stream.number);
    }
}

/// Takes up stream `number` of `link` after event `after`.
pub(super) fn resume(link: &Link, number: u64, after: u64) -> Option<StreamBody> {
    link.kept_stream(number)?.attach(after + 1, false)
}
