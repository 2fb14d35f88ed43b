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
//! Everything else stays reqwest's: requests are built as reqwest requests
//! and answers read as reqwest responses; `https://`, a proxy and a
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
use reqwest::ResponseBuilderExt;
use tokio::net::TcpStream;

type Conn = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

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
    pub(super) async fn send(
        &self,
        mut request: reqwest::Request,
    ) -> Result<reqwest::Response, DirectError> {
        let body = match request.body_mut().take() {
            Some(body) => Bytes::copy_from_slice(body.as_bytes().unwrap_or_default()),
            None => Bytes::new(),
        };
        let mut target = self.target.clone();
        let mut at = request.url().clone();
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
                && let Some(next) = response
                    .headers()
                    .get(hyper::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|location| at.join(location).ok())
                    .filter(|next| next.origin() == at.origin())
                && let Ok(next_target) = path_and_query(&next).parse()
            {
                // Read to its end, so that the connection can be used again.
                Driven::new(response.into_body(), idle, &self.idle)
                    .drain()
                    .await;
                (at, target, hops) = (next, next_target, hops + 1);
                continue;
            }
            let (mut parts, body) = response.into_parts();
            let mut body = Driven::new(body, idle, &self.idle);
            // Nothing to read (a 202, a 405 without a body): the
            // connection is free now, whether or not anyone reads it.
            if body.body.is_end_stream() {
                body.release();
            }
            // The answer's URL, as reqwest's own client gives it; without
            // one, the conversion parses a placeholder URL for every answer.
            let (with_url, ()) = hyper::Response::builder()
                .url(at)
                .body(())
                .unwrap_or_default()
                .into_parts();
            parts.extensions.extend(with_url.extensions);
            let response = hyper::Response::from_parts(parts, reqwest::Body::wrap(body));
            return Ok(reqwest::Response::from(response));
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
async fn tcp_connect(address: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(address),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_nonblocking(true)?;
    match socket.connect(&address.into()) {
        Ok(()) => return TcpStream::from_std(socket.into()),
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
    let stream = TcpStream::from_std(socket.into())?;
    if !done {
        stream.writable().await?;
    }
    match stream.take_error()? {
        Some(error) => Err(error),
        None => Ok(stream),
    }
}

#[cfg(not(unix))]
async fn tcp_connect(address: SocketAddr) -> std::io::Result<TcpStream> {
    TcpStream::connect(address).await
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
struct Driven {
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
