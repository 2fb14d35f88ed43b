//! `http://` servers reached without a proxy: HTTP/1.1 on connections the
//! transport owns and drives itself (issue 35).
//!
//! A general client (reqwest over hyper-util's pool) runs every connection
//! as a task of its own: each request is handed to that task and its answer
//! handed back, two task switches per call, besides the pool's and
//! connector's bookkeeping. Here the task that sends a request also drives
//! its connection until the answer's head is in, and whoever reads the body
//! (the caller for a JSON answer, a stream reader for SSE) drives it from
//! then on. When the body ends the connection goes back to a small pool of
//! idle ones, undriven until its next request. A dropped body closes its
//! connection, which is how a 2026-07-28 request is cancelled.
//!
//! Requests are still built as reqwest requests (the headers, credentials
//! and body every path shares); answers come back as an [`Answer`], which
//! the transport reads the same way whichever path gave it, without
//! wrapping hyper's answer into a reqwest one. `https://`, a proxy and a
//! caller's own client take the general path.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

type Conn = http1::Connection<TokioIo<Stream>, Full<Bytes>>;

/// Same-origin 307/308 redirects followed for one request, as the
/// transport's reqwest client follows them.
const MAX_REDIRECTS: usize = 4;
/// Idle connections kept for later requests; more are closed when they
/// come back.
const MAX_IDLE: usize = 64;
/// An idle connection older than this is closed rather than used (servers
/// close theirs after a while; hyper-util's pool keeps them 90 s).
const IDLE_FOR: Duration = Duration::from_secs(60);

/// The variables through which reqwest would send an `http://` request to
/// a proxy: a server with any of them set takes reqwest's path.
const PROXY_VARIABLES: [&str; 4] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"];

/// The connections to one `http://` origin.
pub(super) struct Direct {
    host: String,
    port: u16,
    /// The `Host` header.
    authority: hyper::header::HeaderValue,
    /// The request target: the URL's path and query.
    target: hyper::Uri,
    connect_timeout: Duration,
    idle: Arc<Mutex<Vec<Idle>>>,
}

struct Idle {
    since: Instant,
    sender: SendRequest<Full<Bytes>>,
    conn: Conn,
}

/// Why a request on the direct path failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum DirectError {
    #[error("cannot connect to {0}")]
    Connect(String, #[source] std::io::Error),
    #[error("no connection to {0} within {1:?} (the connect timeout)")]
    ConnectTimeout(String, Duration),
    #[error("the request failed")]
    Request(#[source] hyper::Error),
    #[error("reading the answer failed")]
    Read(#[source] hyper::Error),
}

/// An HTTP answer, from the direct path or from reqwest's.
pub(super) enum Answer {
    /// reqwest's: `https://`, a proxy, a caller's own client.
    General(reqwest::Response),
    /// The direct path's: the head as hyper gave it, and a body that drives
    /// its connection as it is read (no conversion into a reqwest answer,
    /// which costs a boxed body and an extension map per answer). One box
    /// for both: the body holds its connection.
    Direct(Box<(hyper::http::response::Parts, Driven)>),
}

/// Why reading an answer's body failed.
pub(super) enum ReadError {
    General(reqwest::Error),
    /// Always [`DirectError::Read`].
    Direct(DirectError),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::General(error) => error.fmt(f),
            Self::Direct(error) => match std::error::Error::source(error) {
                Some(cause) => write!(f, "{error}: {cause}"),
                None => error.fmt(f),
            },
        }
    }
}

impl Answer {
    pub(super) fn status(&self) -> hyper::StatusCode {
        match self {
            Self::General(response) => response.status(),
            Self::Direct(answer) => answer.0.status,
        }
    }

    pub(super) fn headers(&self) -> &hyper::HeaderMap {
        match self {
            Self::General(response) => response.headers(),
            Self::Direct(answer) => &answer.0.headers,
        }
    }

    /// The body's length, when the answer says it.
    pub(super) fn content_length(&self) -> Option<u64> {
        match self {
            Self::General(response) => response.content_length(),
            Self::Direct(answer) => answer.1.size_hint().exact(),
        }
    }

    /// The body's next piece; `None` at its end.
    pub(super) async fn chunk(&mut self) -> Result<Option<Bytes>, ReadError> {
        match self {
            Self::General(response) => response.chunk().await.map_err(ReadError::General),
            Self::Direct(answer) => loop {
                let body = &mut answer.1;
                match std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await {
                    None => return Ok(None),
                    Some(Err(error)) => return Err(ReadError::Direct(DirectError::Read(error))),
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data()
                            && !data.is_empty()
                        {
                            return Ok(Some(data));
                        }
                    }
                }
            },
        }
    }
}

impl Direct {
    /// The direct path to `url`, when it can take it: `http://`, no proxy
    /// configured, reqwest's own client in use.
    pub(super) fn for_url(url: &url::Url, connect_timeout: Duration) -> Option<Self> {
        if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        if PROXY_VARIABLES
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
        {
            return None;
        }
        let host = match url.host()? {
            url::Host::Domain(name) => name.to_owned(),
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => ip.to_string(),
        };
        let port = url.port_or_known_default()?;
        let authority = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str()?),
            None => url.host_str()?.to_owned(),
        };
        let target = path_and_query(url);
        Some(Self {
            host,
            port,
            authority: hyper::header::HeaderValue::from_str(&authority).ok()?,
            target: target.parse().ok()?,
            connect_timeout,
            idle: Arc::default(),
        })
    }

    /// Sends `request` (built for this origin) and returns the answer's
    /// head; its body drives the connection as it is read. A 307 or 308 to
    /// the same origin is followed (four at most), as the transport's
    /// reqwest client follows them; any other comes back as it is.
    pub(super) async fn send(&self, mut request: reqwest::Request) -> Result<Answer, DirectError> {
        let body = match request.body_mut().take() {
            Some(body) => Bytes::copy_from_slice(body.as_bytes().unwrap_or_default()),
            None => Bytes::new(),
        };
        let mut target = self.target.clone();
        // Where a redirect is resolved from: the request's URL, then the
        // last redirect's.
        let mut at: Option<url::Url> = None;
        let mut hops = 0;
        loop {
            let mut head = hyper::Request::new(Full::new(body.clone()));
            *head.method_mut() = request.method().clone();
            *head.uri_mut() = target;
            *head.headers_mut() = request.headers().clone();
            head.headers_mut()
                .insert(hyper::header::HOST, self.authority.clone());
            let (response, idle) = self.exchange(head).await?;
            if matches!(response.status().as_u16(), 307 | 308)
                && hops < MAX_REDIRECTS
                && let Some(location) = response
                    .headers()
                    .get(hyper::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
            {
                let base = at.get_or_insert_with(|| request.url().clone());
                if let Some(next) = base
                    .join(location)
                    .ok()
                    .filter(|next| next.origin() == base.origin())
                    && let Ok(next_target) = path_and_query(&next).parse()
                {
                    // Read to its end, so that the connection can be used
                    // again.
                    Driven::new(response.into_body(), idle, &self.idle)
                        .drain()
                        .await;
                    (at, target, hops) = (Some(next), next_target, hops + 1);
                    continue;
                }
            }
            let (parts, body) = response.into_parts();
            let mut body = Driven::new(body, idle, &self.idle);
            // Nothing to read (a 202, a 405 without a body): the
            // connection is free now, whether or not anyone reads it.
            if body.body.is_end_stream() {
                body.release();
            }
            return Ok(Answer::Direct(Box::new((parts, body))));
        }
    }

    /// Sends `request` on an idle connection, or a new one if none is left
    /// or the idle one turns out closed before taking it.
    async fn exchange(
        &self,
        mut request: hyper::Request<Full<Bytes>>,
    ) -> Result<(hyper::Response<Incoming>, Idle), DirectError> {
        loop {
            let (mut idle, fresh) = match self.checkout() {
                Some(idle) => (idle, false),
                None => (self.connect().await?, true),
            };
            let ready = drive(&mut idle.conn, idle.sender.ready()).await;
            if !matches!(ready, Some(Ok(()))) {
                if fresh {
                    let error = match ready {
                        Some(Err(error)) => error,
                        _ => return Err(self.closed()),
                    };
                    return Err(DirectError::Request(error));
                }
                continue;
            }
            let sent = idle.sender.try_send_request(request);
            match drive(&mut idle.conn, sent).await {
                Some(Ok(response)) => return Ok((response, idle)),
                Some(Err(mut error)) => match error.take_message() {
                    // Never written: another connection may take it.
                    Some(unsent) if !fresh => request = unsent,
                    _ => return Err(DirectError::Request(error.into_error())),
                },
                None => return Err(self.closed()),
            }
        }
    }

    fn closed(&self) -> DirectError {
        DirectError::Connect(
            format!("{}:{}", self.host, self.port),
            std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "the server closed the connection before answering",
            ),
        )
    }

    /// The most recently used idle connection that is still open.
    fn checkout(&self) -> Option<Idle> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(conn) = idle.pop() {
            if conn.since.elapsed() < IDLE_FOR && !conn.sender.is_closed() {
                return Some(conn);
            }
        }
        None
    }

    async fn connect(&self) -> Result<Idle, DirectError> {
        let origin = || format!("{}:{}", self.host, self.port);
        let stream = tokio::time::timeout(self.connect_timeout, async {
            let addresses: Vec<SocketAddr> = match self.host.parse::<std::net::IpAddr>() {
                Ok(ip) => vec![SocketAddr::new(ip, self.port)],
                Err(_) => tokio::net::lookup_host((self.host.as_str(), self.port))
                    .await?
                    .collect(),
            };
            let mut last = None;
            for address in addresses {
                match tcp_connect(address).await {
                    Ok(stream) => return Ok(stream),
                    Err(error) => last = Some(error),
                }
            }
            Err(last.unwrap_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "the name has no address")
            }))
        })
        .await
        .map_err(|_| DirectError::ConnectTimeout(origin(), self.connect_timeout))?
        .map_err(|e| DirectError::Connect(origin(), e))?;
        stream
            .tcp
            .set_nodelay(true)
            .map_err(|e| DirectError::Connect(origin(), e))?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(DirectError::Request)?;
        Ok(Idle {
            since: Instant::now(),
            sender,
            conn,
        })
    }
}

/// A TCP connection to `address`. On Linux a non-blocking connect to a
/// loopback address has finished by the time the call returns (the whole
/// handshake runs inside it), but says "in progress": a zero-timeout
/// `poll` sees that, and the stream is used at once, rather than after a
/// turn of the reactor to learn what is already so. Anything else waits
/// for the reactor as `TcpStream::connect` does.
#[cfg(unix)]
async fn tcp_connect(address: SocketAddr) -> std::io::Result<Stream> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(address),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_nonblocking(true)?;
    match socket.connect(&address.into()) {
        Ok(()) => return Stream::new(socket, true),
        Err(error) if error.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(error) => return Err(error),
    }
    let mut ready = [rustix::event::PollFd::new(
        &socket,
        rustix::event::PollFlags::OUT,
    )];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let done = rustix::event::poll(&mut ready, Some(&zero)).is_ok_and(|n| n == 1);
    let stream = Stream::new(socket, done)?;
    if !done {
        stream.tcp.writable().await?;
    }
    match stream.tcp.take_error()? {
        Some(error) => Err(error),
        None => Ok(stream),
    }
}

#[cfg(not(unix))]
async fn tcp_connect(address: SocketAddr) -> std::io::Result<Stream> {
    Ok(Stream {
        tcp: TcpStream::connect(address).await?,
        writable: false,
    })
}

/// A connection's stream. Its first write, when the connect was seen done
/// (so the socket can take it), goes straight to the socket: the reactor
/// has not reported the new socket writable yet, and asking it first costs
/// a turn of its own before the first request leaves. Everything else is
/// tokio's.
struct Stream {
    tcp: TcpStream,
    /// The socket is known writable and the reactor does not know it yet.
    writable: bool,
}

impl Stream {
    #[cfg(unix)]
    fn new(socket: socket2::Socket, writable: bool) -> std::io::Result<Self> {
        Ok(Self {
            tcp: TcpStream::from_std(socket.into())?,
            writable,
        })
    }

    /// The first write straight to the socket; `None` when it is not that
    /// write or the socket would block after all.
    #[cfg(unix)]
    fn write_first(&mut self, bufs: &[std::io::IoSlice<'_>]) -> Option<std::io::Result<usize>> {
        if !std::mem::take(&mut self.writable) {
            return None;
        }
        // `send` with `MSG_NOSIGNAL`, as tokio writes: a closed peer is an
        // error, not a signal.
        match socket2::SockRef::from(&self.tcp).send_vectored(bufs) {
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => None,
            written => Some(written),
        }
    }

    #[cfg(not(unix))]
    fn write_first(&mut self, _: &[std::io::IoSlice<'_>]) -> Option<std::io::Result<usize>> {
        None
    }
}

impl tokio::io::AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if let Some(written) = self.write_first(&[std::io::IoSlice::new(buf)]) {
            return Poll::Ready(written);
        }
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        if let Some(written) = self.write_first(bufs) {
            return Poll::Ready(written);
        }
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// A URL's request target: its path and query.
fn path_and_query(url: &url::Url) -> String {
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

/// Runs `future` while driving `conn`: `None` if the connection ended
/// first.
async fn drive<F: Future>(conn: &mut Conn, future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut ended = false;
    std::future::poll_fn(|cx| {
        if !ended {
            // The connection first: it writes what was queued and reads
            // what came, which is what the future waits for.
            if Pin::new(&mut *conn).poll(cx).is_ready() {
                ended = true;
            }
        }
        match future.as_mut().poll(cx) {
            Poll::Ready(output) => Poll::Ready(Some(output)),
            Poll::Pending if ended => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// A response body that drives its connection as it is read, and returns
/// the connection to the pool once it has been read to the end.
pub(super) struct Driven {
    body: Incoming,
    conn: Option<Idle>,
    pool: Arc<Mutex<Vec<Idle>>>,
}

impl Driven {
    fn new(body: Incoming, idle: Idle, pool: &Arc<Mutex<Vec<Idle>>>) -> Self {
        Self {
            body,
            conn: Some(idle),
            pool: pool.clone(),
        }
    }

    /// Reads the body to its end (a redirect's, a few bytes at most;
    /// given up past 64 KiB), which returns the connection to the pool.
    async fn drain(mut self) {
        let mut left: usize = 64 * 1024;
        while let Some(Ok(frame)) =
            std::future::poll_fn(|cx| Pin::new(&mut self).poll_frame(cx)).await
        {
            let read = frame.data_ref().map_or(0, Bytes::len);
            match left.checked_sub(read) {
                Some(rest) => left = rest,
                None => return,
            }
        }
    }

    fn release(&mut self) {
        let Some(mut idle) = self.conn.take() else {
            return;
        };
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < MAX_IDLE && !idle.sender.is_closed() {
            idle.since = Instant::now();
            pool.push(idle);
        }
    }
}

impl Body for Driven {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        if let Some(idle) = &mut this.conn
            && Pin::new(&mut idle.conn).poll(cx).is_ready()
        {
            // Closed (or failed): what it read is still in the body.
            this.conn = None;
        }
        let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
        if frame.is_none() || this.body.is_end_stream() {
            this.release();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
