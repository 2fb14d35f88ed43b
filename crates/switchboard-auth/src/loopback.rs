//! Receiving the authorization response: on a loopback redirect URI
//! (RFC 8252 §7.3, `http://127.0.0.1:PORT/callback`) that the browser is
//! sent back to, or from the redirect URL a user pastes when the browser
//! runs on another machine (an SSH session).
//!
//! A native application binds the receiver first, because the redirect URI
//! (with its port) must be known before [`OAuthFlow`](super::flow::OAuthFlow)
//! is made; the flow's `begin` then gives the URL to open and the `state`
//! the response must carry:
//!
//! ```no_run
//! # async fn run(store: std::sync::Arc<dyn switchboard_auth::store::CredentialStore>) -> Result<(), Box<dyn std::error::Error>> {
//! use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
//! use switchboard_auth::loopback::{DEFAULT_TIMEOUT, LoopbackReceiver};
//!
//! let receiver = LoopbackReceiver::bind(0).await?; // an ephemeral port
//! let flow = OAuthFlow::new(OAuthConfig::new("my-app", receiver.redirect_uri(), store))?;
//! let request = flow.begin("https://mcp.example.com/mcp", None).await?;
//! println!("open {}", request.authorization_url);
//! let response = receiver.receive(&request.state, DEFAULT_TIMEOUT).await?;
//! flow.finish(&response.code, &response.state, response.iss.as_deref()).await?;
//! # Ok(()) }
//! ```
//!
//! A web application needs none of this: its own HTTP server owns the
//! redirect URI. It calls `begin` when a connection reports
//! `is_auth_required()`, sends the user to `authorization_url`, and when
//! the browser comes back calls `finish(code, state, iss)` with the query
//! parameters of that request ([`parse_redirect`] reads them from a whole
//! URL). Keep the [`OAuthFlow`](super::flow::OAuthFlow) (it is cheap to
//! clone) between the two: it remembers the PKCE verifier per `state`.
//!
//! A pasted URL is read with [`parse_redirect`], which checks the `state`
//! the same way. [`LoopbackAuthorizer`] is the receiver as an
//! [`Authorizer`], for [`OAuthFlow::login`](super::flow::OAuthFlow::login)
//! and an interactive [`OAuthProvider`](super::provider::OAuthProvider).

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use switchboard::transport::BoxFuture;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use url::Url;

use crate::flow::{AuthorizationRequest, Authorizer, OAuthError};

/// How long [`LoopbackReceiver::receive`] is usually given: five minutes
/// for the user to log in.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The path of the redirect URI.
pub const CALLBACK_PATH: &str = "/callback";
/// The largest request head (request line and headers) read from the
/// browser; anything longer is answered 431 and ignored.
const MAX_REQUEST_HEAD: usize = 8 * 1024;
/// How long one connection may take to send its request: browsers open
/// speculative connections that never send anything.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 16;

/// The authorization response's parameters, for
/// [`OAuthFlow::finish`](super::flow::OAuthFlow::finish).
#[derive(Clone, PartialEq, Eq)]
pub struct CallbackParams {
    /// The authorization code.
    pub code: String,
    /// The `state`, equal to the one the request was sent with.
    pub state: String,
    /// The issuer (RFC 9207), when the server sends it.
    pub iss: Option<String>,
}

impl fmt::Debug for CallbackParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The code is a credential until it is exchanged.
        f.debug_struct("CallbackParams")
            .field("code", &"[redacted]")
            .field("iss", &self.iss)
            .finish_non_exhaustive()
    }
}

/// No usable authorization response arrived.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallbackError {
    /// The loopback port cannot be listened on (with a fixed port: it is
    /// probably in use).
    #[error("cannot listen on 127.0.0.1:{port} for the authorization response")]
    Bind {
        /// The port asked for (0: any).
        port: u16,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Accepting a connection failed.
    #[error("accepting the browser's connection failed")]
    Accept(#[source] io::Error),
    /// Nothing arrived in time.
    #[error("no authorization response arrived within {} s; start the login again", waited.as_secs())]
    Timeout {
        /// How long was waited.
        waited: Duration,
    },
    /// The authorization server answered with an error (the user declined,
    /// or the request was refused).
    #[error("the authorization server refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The OAuth error code, e.g. `access_denied`.
        error: String,
        /// The server's description, control characters removed.
        description: Option<String>,
    },
    /// The response's `state` is not this login's: it belongs to another
    /// attempt, or was forged.
    #[error("the authorization response belongs to another login (its state does not match)")]
    StateMismatch,
    /// The input is not an authorization response.
    #[error("not an authorization response: {0}")]
    Malformed(String),
}

/// Reads the authorization response from a redirect URL the user pasted:
/// the whole URL (`http://127.0.0.1:PORT/callback?code=…&state=…`), or
/// just its query (`code=…&state=…`, with or without the `?`).
///
/// # Errors
/// [`CallbackError::StateMismatch`] when `expected_state` is given and the
/// response's differs; [`CallbackError::Denied`] for an error response
/// (with the right state); [`CallbackError::Malformed`] for anything else
/// that is not a response with a `code`.
pub fn parse_redirect(
    input: &str,
    expected_state: Option<&str>,
) -> Result<CallbackParams, CallbackError> {
    let input = input.trim();
    let query = match Url::parse(input) {
        Ok(url) => url.query().map(str::to_owned).ok_or_else(|| {
            CallbackError::Malformed("the URL has no query (no code= or state=)".into())
        })?,
        Err(_) => input.strip_prefix('?').unwrap_or(input).to_owned(),
    };
    if !query.split('&').any(|pair| {
        pair.starts_with("code=") || pair.starts_with("error=") || pair.starts_with("state=")
    }) {
        return Err(CallbackError::Malformed(
            "paste the whole URL the browser was sent to; it contains code= and state=".into(),
        ));
    }
    parse_query(&query, expected_state)
}

/// The response's parameters from a redirect's query string.
fn parse_query(query: &str, expected_state: Option<&str>) -> Result<CallbackParams, CallbackError> {
    let mut code = None;
    let mut state = None;
    let mut iss = None;
    let mut error = None;
    let mut description = None;
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let slot = match &*name {
            "code" => &mut code,
            "state" => &mut state,
            "iss" => &mut iss,
            "error" => &mut error,
            "error_description" => &mut description,
            _ => continue,
        };
        // RFC 6749 §3.1: a parameter must not appear twice.
        if slot.replace(value.into_owned()).is_some() {
            return Err(CallbackError::Malformed(format!("{name} appears twice")));
        }
    }
    // The state first: a forged error response must not end a login.
    if let Some(expected) = expected_state
        && state.as_deref() != Some(expected)
    {
        return Err(CallbackError::StateMismatch);
    }
    if let Some(error) = error {
        return Err(CallbackError::Denied {
            error: printable(&error),
            description: description.as_deref().map(printable),
        });
    }
    match (code, state) {
        (Some(code), Some(state)) if !code.is_empty() => Ok(CallbackParams { code, state, iss }),
        (_, None) => Err(CallbackError::Malformed("no state".into())),
        _ => Err(CallbackError::Malformed("no code".into())),
    }
}

/// Server-controlled text without control characters (no terminal escape
/// sequences), at most 200 characters.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// A [`LoopbackReceiver`] as the user's part of
/// [`OAuthFlow::login`](super::flow::OAuthFlow::login) and of an
/// interactive [`OAuthProvider`](super::provider::OAuthProvider): hands the
/// authorization URL to `show` (print it, open a browser) and waits for the
/// browser to come back. Give the flow [`redirect_uri`](Self::redirect_uri).
///
/// ```no_run
/// # async fn run(store: std::sync::Arc<dyn switchboard_auth::store::CredentialStore>) -> Result<(), Box<dyn std::error::Error>> {
/// use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
/// use switchboard_auth::loopback::{LoopbackAuthorizer, LoopbackReceiver};
///
/// let authorizer = LoopbackAuthorizer::new(LoopbackReceiver::bind(0).await?, |url| {
///     println!("open {url}");
/// });
/// let flow = OAuthFlow::new(OAuthConfig::new("my-app", authorizer.redirect_uri(), store))?;
/// let credentials = flow.login("https://mcp.example.com/mcp", None, &authorizer).await?;
/// # let _ = credentials; Ok(()) }
/// ```
pub struct LoopbackAuthorizer {
    receiver: LoopbackReceiver,
    timeout: Duration,
    show: Box<dyn Fn(&Url) + Send + Sync>,
}

impl fmt::Debug for LoopbackAuthorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackAuthorizer")
            .field("receiver", &self.receiver)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackAuthorizer {
    /// Waits on `receiver` (for [`DEFAULT_TIMEOUT`]) after showing each
    /// authorization URL through `show`.
    pub fn new(receiver: LoopbackReceiver, show: impl Fn(&Url) + Send + Sync + 'static) -> Self {
        Self {
            receiver,
            timeout: DEFAULT_TIMEOUT,
            show: Box::new(show),
        }
    }

    /// How long to wait for the browser (default [`DEFAULT_TIMEOUT`]).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The redirect URI to configure the flow with.
    pub fn redirect_uri(&self) -> String {
        self.receiver.redirect_uri()
    }
}

impl Authorizer for LoopbackAuthorizer {
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<Url, OAuthError>> {
        Box::pin(async move {
            (self.show)(&request.authorization_url);
            let received = self.receiver.receive(&request.state, self.timeout).await;
            let mut redirect = Url::parse(&self.receiver.redirect_uri())
                .map_err(|e| OAuthError::Interaction(Box::new(e)))?;
            let mut query = redirect.query_pairs_mut();
            match received {
                Ok(params) => {
                    query
                        .append_pair("code", &params.code)
                        .append_pair("state", &params.state);
                    if let Some(iss) = &params.iss {
                        query.append_pair("iss", iss);
                    }
                }
                // Handed on as the redirect said it, so the flow reports the
                // refusal the way it does for every authorizer.
                Err(CallbackError::Denied { error, description }) => {
                    query
                        .append_pair("error", &error)
                        .append_pair("state", &request.state);
                    if let Some(description) = &description {
                        query.append_pair("error_description", description);
                    }
                }
                Err(e) => return Err(OAuthError::Interaction(Box::new(e))),
            }
            drop(query);
            Ok(redirect)
        })
    }
}

/// Listens on `127.0.0.1` for the browser to come back to the redirect
/// URI. Binding happens in [`bind`](Self::bind), so the port is known (and
/// taken) before the authorization URL is built.
#[derive(Debug)]
pub struct LoopbackReceiver {
    listener: TcpListener,
    port: u16,
}

impl LoopbackReceiver {
    /// Listens on `127.0.0.1:port`; `0` picks a free ephemeral port.
    ///
    /// # Errors
    /// [`CallbackError::Bind`]: the port is in use or not allowed.
    pub async fn bind(port: u16) -> Result<Self, CallbackError> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .await
            .map_err(|source| CallbackError::Bind { port, source })?;
        let port = listener
            .local_addr()
            .map_err(|source| CallbackError::Bind { port, source })?
            .port();
        Ok(Self { listener, port })
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT/callback`: the redirect URI to register and
    /// send (an IP literal, never `localhost`, as RFC 8252 §8.3 advises).
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits up to `timeout` for the browser to bring back the response to
    /// the request sent with `state`, answers the browser with a short
    /// page, and returns the response's parameters.
    ///
    /// Requests for other paths (a favicon) and responses with another
    /// `state` (a stale tab, a forged request) are answered and ignored;
    /// connections are served concurrently, each bounded in size and time,
    /// so a browser's idle speculative connection holds nothing up.
    ///
    /// # Errors
    /// [`CallbackError::Denied`] for an error response with this `state`;
    /// [`CallbackError::Timeout`]; [`CallbackError::Accept`].
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future closes the connections being
    /// served; the receiver keeps listening and can `receive` again.
    pub async fn receive(
        &self,
        state: &str,
        timeout: Duration,
    ) -> Result<CallbackParams, CallbackError> {
        let now = tokio::time::Instant::now();
        let deadline = now
            .checked_add(timeout)
            .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30));
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept(), if connections.len() < MAX_CONNECTIONS => {
                    let (stream, _) = accepted.map_err(CallbackError::Accept)?;
                    let state = state.to_owned();
                    connections.spawn(async move {
                        tokio::time::timeout(CONNECTION_TIMEOUT, serve(stream, &state))
                            .await
                            .ok()
                            .flatten()
                    });
                }
                Some(joined) = connections.join_next() => {
                    if let Ok(Some(outcome)) = joined {
                        return outcome;
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    return Err(CallbackError::Timeout { waited: timeout });
                }
            }
        }
    }
}

/// Reads one request and answers it; `Some` when it was this login's
/// authorization response (or its error).
async fn serve(
    mut stream: TcpStream,
    state: &str,
) -> Option<Result<CallbackParams, CallbackError>> {
    let head = match read_head(&mut stream).await {
        Ok(Some(head)) => head,
        Ok(None) => {
            respond(&mut stream, "431 Request Header Fields Too Large", PAGE_BAD).await;
            // Closing with unread bytes would reset the connection and could
            // lose the answer before the browser reads it.
            drain(&mut stream).await;
            return None;
        }
        Err(_) => return None,
    };
    let mut parts = head.lines().next().unwrap_or_default().split(' ');
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != CALLBACK_PATH {
        respond(&mut stream, "404 Not Found", PAGE_NOT_FOUND).await;
        return None;
    }
    if method != "GET" {
        respond(&mut stream, "405 Method Not Allowed", PAGE_BAD).await;
        return None;
    }
    match parse_query(query, Some(state)) {
        Ok(params) => {
            respond(&mut stream, "200 OK", PAGE_DONE).await;
            Some(Ok(params))
        }
        Err(denied @ CallbackError::Denied { .. }) => {
            respond(&mut stream, "200 OK", PAGE_DENIED).await;
            Some(Err(denied))
        }
        Err(CallbackError::StateMismatch) => {
            respond(&mut stream, "400 Bad Request", PAGE_OTHER_LOGIN).await;
            None
        }
        Err(_) => {
            respond(&mut stream, "400 Bad Request", PAGE_BAD).await;
            None
        }
    }
}

/// The request head up to the blank line; `None` when it exceeds
/// [`MAX_REQUEST_HEAD`].
async fn read_head(stream: &mut TcpStream) -> io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            if end > MAX_REQUEST_HEAD {
                return Ok(None);
            }
            buf.truncate(end);
            return Ok(Some(String::from_utf8_lossy(&buf).into_owned()));
        }
        if buf.len() > MAX_REQUEST_HEAD {
            return Ok(None);
        }
    }
}

/// Reads and drops what the peer still sends, up to 64 KiB.
async fn drain(stream: &mut TcpStream) {
    let mut chunk = [0u8; 4096];
    let mut left: usize = 64 * 1024;
    while left > 0 {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) {
    let page = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>switchboard</title></head>\
         <body style=\"font-family:sans-serif;margin:3em\"><p>{body}</p></body></html>"
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n{page}",
        page.len()
    );
    // The browser may already be gone; the outcome stands either way.
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

const PAGE_DONE: &str =
    "Authorization complete. You can close this tab and return to the terminal.";
const PAGE_DENIED: &str =
    "Authorization was not granted. The terminal says why; you can close this tab.";
const PAGE_OTHER_LOGIN: &str =
    "This response belongs to another login attempt. Use the URL the terminal printed last.";
const PAGE_BAD: &str = "This is not an authorization response.";
const PAGE_NOT_FOUND: &str = "Not found.";

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends `request` as the browser would and returns the whole answer.
    async fn browser(port: u16, request: String) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        tokio::time::timeout(WAIT, stream.read_to_string(&mut answer))
            .await
            .expect("the receiver answers and closes")
            .unwrap();
        answer
    }

    fn get(target: &str) -> String {
        format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n\r\n")
    }

    const WAIT: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn receives_the_response_and_tells_the_browser() {
        let receiver = LoopbackReceiver::bind(0).await.unwrap();
        let port = receiver.port();
        assert_ne!(port, 0);
        assert_eq!(
            receiver.redirect_uri(),
            format!("http://127.0.0.1:{port}/callback")
        );
        let (outcome, answer) = tokio::join!(
            receiver.receive("s1", WAIT),
            browser(
                port,
                get("/callback?code=c%2F1&state=s1&iss=http%3A%2F%2F127.0.0.1%3A9")
            )
        );
        let params = outcome.unwrap();
        assert_eq!(params.code, "c/1");
        assert_eq!(params.state, "s1");
        assert_eq!(params.iss.as_deref(), Some("http://127.0.0.1:9"));
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.contains("close this tab"), "{answer}");
        assert!(
            !format!("{params:?}").contains("c/1"),
            "the code is redacted"
        );
    }

    #[tokio::test]
    async fn ignores_other_paths_other_states_and_idle_connections() {
        let receiver = LoopbackReceiver::bind(0).await.unwrap();
        let port = receiver.port();
        let visits = async {
            // A speculative connection that never sends a byte.
            let _idle = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            let favicon = browser(port, get("/favicon.ico")).await;
            let stale = browser(port, get("/callback?code=old&state=other")).await;
            let no_code = browser(port, get("/callback?state=s1")).await;
            let post = browser(
                port,
                "POST /callback?code=c&state=s1 HTTP/1.1\r\n\r\n".into(),
            )
            .await;
            let real = browser(port, get("/callback?code=c2&state=s1")).await;
            (favicon, stale, no_code, post, real)
        };
        let (outcome, (favicon, stale, no_code, post, real)) =
            tokio::join!(receiver.receive("s1", WAIT), visits);
        assert_eq!(outcome.unwrap().code, "c2");
        assert!(favicon.starts_with("HTTP/1.1 404"), "{favicon}");
        assert!(stale.starts_with("HTTP/1.1 400"), "{stale}");
        assert!(stale.contains("another login"), "{stale}");
        assert!(no_code.starts_with("HTTP/1.1 400"), "{no_code}");
        assert!(post.starts_with("HTTP/1.1 405"), "{post}");
        assert!(real.starts_with("HTTP/1.1 200"), "{real}");
    }

    #[tokio::test]
    async fn an_oversized_request_is_refused_and_ignored() {
        // Just over the limit (ending in the chunk that crosses it), and
        // far over it (no end in sight when the limit is reached).
        for pad in [MAX_REQUEST_HEAD, 4 * MAX_REQUEST_HEAD] {
            let receiver = LoopbackReceiver::bind(0).await.unwrap();
            let port = receiver.port();
            let long = format!(
                "GET /callback?code=c&state=s1 HTTP/1.1\r\nX-Pad: {}\r\n\r\n",
                "a".repeat(pad)
            );
            let visits = async {
                let big = browser(port, long).await;
                let real = browser(port, get("/callback?code=c3&state=s1")).await;
                (big, real)
            };
            let (outcome, (big, _)) = tokio::join!(receiver.receive("s1", WAIT), visits);
            assert!(big.starts_with("HTTP/1.1 431"), "{pad}: {big}");
            assert_eq!(outcome.unwrap().code, "c3", "{pad}");
        }
    }

    #[tokio::test]
    async fn an_error_response_with_this_state_ends_the_wait() {
        let receiver = LoopbackReceiver::bind(0).await.unwrap();
        let port = receiver.port();
        let visits = async {
            // A forged error (wrong state) must not end the login.
            let forged = browser(port, get("/callback?error=access_denied&state=x")).await;
            let denied = browser(
                port,
                get("/callback?error=access_denied&error_description=no%1B%5B31m+way&state=s1"),
            )
            .await;
            (forged, denied)
        };
        let (outcome, (forged, denied)) = tokio::join!(receiver.receive("s1", WAIT), visits);
        assert!(forged.starts_with("HTTP/1.1 400"), "{forged}");
        assert!(denied.contains("not granted"), "{denied}");
        match outcome {
            Err(CallbackError::Denied { error, description }) => {
                assert_eq!(error, "access_denied");
                assert_eq!(description.as_deref(), Some("no[31m way"), "no escape byte");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn gives_up_after_the_timeout_and_can_wait_again() {
        let receiver = LoopbackReceiver::bind(0).await.unwrap();
        let started = std::time::Instant::now();
        let outcome = receiver.receive("s1", Duration::from_millis(200)).await;
        assert!(
            matches!(outcome, Err(CallbackError::Timeout { .. })),
            "{outcome:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(200));
        let port = receiver.port();
        let (outcome, _) = tokio::join!(
            receiver.receive("s1", WAIT),
            browser(port, get("/callback?code=late&state=s1"))
        );
        assert_eq!(outcome.unwrap().code, "late");
    }

    #[tokio::test]
    async fn a_fixed_port_in_use_is_a_bind_error() {
        let first = LoopbackReceiver::bind(0).await.unwrap();
        let error = LoopbackReceiver::bind(first.port()).await.unwrap_err();
        assert!(
            matches!(error, CallbackError::Bind { port, .. } if port == first.port()),
            "{error:?}"
        );
        assert!(error.to_string().contains(&first.port().to_string()));
    }

    fn authorization_request(state: &str) -> AuthorizationRequest {
        AuthorizationRequest {
            authorization_url: Url::parse("https://as.example/authorize?client_id=c").unwrap(),
            state: state.into(),
            issuer: "https://as.example".into(),
            resource: "https://mcp.example/mcp".into(),
            scope: None,
        }
    }

    #[tokio::test]
    async fn as_an_authorizer_it_shows_the_url_and_returns_the_redirect() {
        let (shown_tx, mut shown) = tokio::sync::mpsc::unbounded_channel();
        let authorizer =
            LoopbackAuthorizer::new(LoopbackReceiver::bind(0).await.unwrap(), move |url| {
                let _ = shown_tx.send(url.clone());
            });
        let redirect_uri = authorizer.redirect_uri();
        let port = Url::parse(&redirect_uri).unwrap().port().unwrap();
        let request = authorization_request("s1");
        let user = async {
            let url = shown.recv().await.unwrap();
            assert_eq!(url, request.authorization_url);
            browser(
                port,
                get("/callback?code=c1&state=s1&iss=https%3A%2F%2Fas.example"),
            )
            .await
        };
        let (redirect, page) = tokio::join!(authorizer.authorize(&request), user);
        let redirect = redirect.unwrap();
        assert!(page.contains("close this tab"), "{page}");
        assert!(redirect.as_str().starts_with(&redirect_uri), "{redirect}");
        let params = parse_redirect(redirect.as_str(), Some("s1")).unwrap();
        assert_eq!(
            (params.code.as_str(), params.iss.as_deref()),
            ("c1", Some("https://as.example"))
        );

        // A refusal comes back as the redirect said it; a timeout is an
        // interaction error.
        let request = authorization_request("s2");
        let (redirect, _) = tokio::join!(
            authorizer.authorize(&request),
            browser(port, get("/callback?error=access_denied&state=s2"))
        );
        assert!(matches!(
            parse_redirect(redirect.unwrap().as_str(), Some("s2")),
            Err(CallbackError::Denied { error, .. }) if error == "access_denied"
        ));
        let quick = LoopbackAuthorizer::new(LoopbackReceiver::bind(0).await.unwrap(), |_| {})
            .timeout(Duration::from_millis(50));
        let error = quick.authorize(&request).await.unwrap_err();
        assert!(matches!(error, OAuthError::Interaction(_)), "{error:?}");
    }

    #[test]
    fn parses_a_pasted_redirect() {
        let full =
            "  http://127.0.0.1:8976/callback?code=abc&state=s1&iss=https%3A%2F%2Fas.example\n";
        let params = parse_redirect(full, Some("s1")).unwrap();
        assert_eq!(
            (params.code.as_str(), params.iss.as_deref()),
            ("abc", Some("https://as.example"))
        );
        assert_eq!(
            parse_redirect("?code=abc&state=s1", Some("s1"))
                .unwrap()
                .code,
            "abc"
        );
        assert_eq!(
            parse_redirect("code=abc&state=s1", None).unwrap().state,
            "s1"
        );
    }

    #[test]
    fn refuses_pasted_text_that_is_not_this_logins_response() {
        let cases = [
            ("http://127.0.0.1:1/callback?code=abc&state=other", "state"),
            ("http://127.0.0.1:1/callback?state=s1", "no code"),
            ("http://127.0.0.1:1/callback?code=&state=s1", "no code"),
            ("http://127.0.0.1:1/callback?code=abc", "state"),
            ("http://127.0.0.1:1/callback", "no query"),
            ("hello", "paste the whole URL"),
            ("code=a&code=b&state=s1", "twice"),
        ];
        for (input, expected) in cases {
            let error = parse_redirect(input, Some("s1")).unwrap_err();
            assert!(
                error.to_string().contains(expected),
                "{input}: {error} (expected {expected:?})"
            );
        }
        let error = parse_redirect("error=access_denied&state=s1", Some("s1")).unwrap_err();
        assert!(
            matches!(&error, CallbackError::Denied { error, description: None } if error == "access_denied"),
            "{error:?}"
        );
    }
}
