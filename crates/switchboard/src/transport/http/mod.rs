//! Remote servers over HTTP: Streamable HTTP for both protocol eras, and the
//! legacy HTTP+SSE transport of 2024-11-05.
//!
//! The transport learns what it needs from the messages it carries — the
//! negotiated version from the `initialize` result, the per-request version
//! from `_meta`, the method and name for the 2026-07-28 routing headers — so
//! the engine above it stays transport-agnostic.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::{BoxFuture, Connection, Connector, TransportError};

pub(crate) use crate::param_headers::encode_header_value;
mod direct;
mod legacy_sse;
mod streamable;
mod tls;

/// Supplies the `Authorization` header. Consulted before every request; told
/// about every 401 and 403 so it can refresh or re-authorize. The
/// `switchboard-auth` crate implements it for OAuth 2.1 (MCP authorization).
pub trait AuthProvider: Send + Sync + 'static {
    /// The header value (e.g. `Bearer …`) for a request to `url`, if any.
    fn authorization(&self, url: &str) -> BoxFuture<'_, Option<String>>;

    /// The server refused the credentials (`status` 401 or 403), with its
    /// `WWW-Authenticate` challenge. Answers whether the refused request
    /// should be sent once more (new credentials are ready, e.g. after a
    /// refresh); it is, at most once per request.
    fn unauthorized(&self, status: u16, www_authenticate: Option<&str>) -> BoxFuture<'_, bool>;

    /// The credentials for one request (`method` and full `url`): the
    /// `Authorization` value and, for a DPoP-bound token (RFC 9449), a
    /// fresh `DPoP` proof. The transports call this, not
    /// [`authorization`](Self::authorization), so that a proof can depend
    /// on the method and URL; the default sends `authorization(url)` alone.
    fn request_credentials<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, RequestCredentials> {
        let _ = method;
        Box::pin(async move { RequestCredentials::new(self.authorization(url).await, None) })
    }

    /// A response from `url` carried `DPoP-Nonce: nonce` (RFC 9449 §8, §9):
    /// later proofs to that server must carry it. Called before
    /// [`unauthorized`](Self::unauthorized) for a 401 `use_dpop_nonce`
    /// challenge; a refused request is then worth one more try with the
    /// nonce, besides the one retry for new credentials. Ignored by default.
    fn dpop_nonce(&self, url: &str, nonce: &str) {
        let _ = (url, nonce);
    }
}

/// What [`AuthProvider::request_credentials`] puts on one request.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestCredentials {
    /// The `Authorization` header value (`Bearer …`, `DPoP …`).
    pub authorization: Option<String>,
    /// The `DPoP` header value: a proof for this method and URL.
    pub dpop: Option<String>,
}

impl RequestCredentials {
    /// An `Authorization` value and, optionally, a DPoP proof.
    pub fn new(authorization: Option<String>, dpop: Option<String>) -> Self {
        Self {
            authorization,
            dpop,
        }
    }

    /// Sets the headers on `request`.
    pub(crate) fn apply(self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        // Marked sensitive: never shown by a `Debug` of the request or its
        // headers, and kept out of HTTP/2 header compression tables.
        if let Some(value) = self.authorization {
            match reqwest::header::HeaderValue::from_str(&value) {
                Ok(mut value) => {
                    value.set_sensitive(true);
                    request = request.header(reqwest::header::AUTHORIZATION, value);
                }
                // Not a valid header value: reqwest reports it when sent.
                Err(_) => request = request.header(reqwest::header::AUTHORIZATION, value),
            }
        }
        if let Some(proof) = self.dpop {
            request = request.header(DPOP_HEADER, proof);
        }
        request
    }
}

impl fmt::Debug for RequestCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Credentials: only whether they are there.
        f.debug_struct("RequestCredentials")
            .field("authorization", &self.authorization.is_some())
            .field("dpop", &self.dpop.is_some())
            .finish()
    }
}

const DPOP_HEADER: &str = "DPoP";
const DPOP_NONCE_HEADER: &str = "DPoP-Nonce";

/// Hands a response's `DPoP-Nonce` to the provider.
pub(crate) fn note_dpop_nonce(
    auth: Option<&Arc<dyn AuthProvider>>,
    url: &str,
    headers: &reqwest::header::HeaderMap,
) {
    if let Some(auth) = auth
        && let Some(nonce) = headers.get(DPOP_NONCE_HEADER).and_then(|v| v.to_str().ok())
    {
        auth.dpop_nonce(url, nonce);
    }
}

/// Which HTTP transport to speak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpTransport {
    /// Streamable HTTP, falling back to legacy HTTP+SSE when the server
    /// refuses it (default).
    #[default]
    Auto,
    /// Streamable HTTP only.
    StreamableHttp,
    /// The legacy HTTP+SSE transport only (2024-11-05): the URL is the
    /// server's event-stream endpoint (often `…/sse`).
    Sse,
}

/// Default for [`HttpConfig::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`HttpConfig::read_timeout`].
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(300);
/// Default for [`HttpConfig::max_body_size`] and [`HttpConfig::max_event_size`].
pub const DEFAULT_MAX_BODY_SIZE: usize = 64 * 1024 * 1024;

/// A remote MCP server. Setters never fail; `connect` reports the first bad
/// setting.
#[must_use]
#[derive(Clone)]
pub struct HttpConfig {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) auth: Option<Arc<dyn AuthProvider>>,
    pub(crate) transport: HttpTransport,
    pub(crate) connect_timeout: Duration,
    pub(crate) read_timeout: Duration,
    pub(crate) max_body_size: usize,
    pub(crate) max_event_size: usize,
    pub(crate) client: Option<reqwest::Client>,
    /// What errors and logs call the URL, when not `url` itself.
    pub(crate) display: Option<String>,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values are often credentials: names only.
        let headers: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("HttpConfig")
            .field("url", &self.shown_url())
            .field("headers", &headers)
            .field("auth", &self.auth.is_some())
            .field("transport", &self.transport)
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("max_body_size", &self.max_body_size)
            .field("max_event_size", &self.max_event_size)
            .finish_non_exhaustive()
    }
}

impl HttpConfig {
    /// A server at `url` (its MCP endpoint).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            headers: Vec::new(),
            auth: None,
            transport: HttpTransport::Auto,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            read_timeout: DEFAULT_READ_TIMEOUT,
            max_body_size: DEFAULT_MAX_BODY_SIZE,
            max_event_size: DEFAULT_MAX_BODY_SIZE,
            client: None,
            display: None,
        }
    }

    /// Names the server in errors and logs by `shown` (redacted the same
    /// way: no user info, no query) instead of the URL connected to. A
    /// configuration's URL as written, `https://host/${TOKEN}/mcp`, keeps
    /// the expanded token of its path out of every message.
    pub fn display_url(mut self, shown: impl Into<String>) -> Self {
        self.display = Some(shown.into());
        self
    }

    /// The URL as errors and logs show it.
    pub(crate) fn shown_url(&self) -> String {
        match &self.display {
            Some(shown) => redact_written(shown),
            None => redact_url(&self.url),
        }
    }

    /// [`HttpConfig::shown_url`], given the URL parsed.
    pub(crate) fn shown_parsed_url(&self, url: &url::Url) -> String {
        match &self.display {
            Some(shown) => redact_written(shown),
            None => redact_parsed(url),
        }
    }

    /// Adds a header sent with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Supplies `Authorization` headers and hears about 401/403.
    pub fn auth(mut self, provider: Arc<dyn AuthProvider>) -> Self {
        self.auth = Some(provider);
        self
    }

    /// Which transport to speak (default [`HttpTransport::Auto`]).
    pub fn transport(mut self, transport: HttpTransport) -> Self {
        self.transport = transport;
        self
    }

    /// TCP and TLS connect timeout (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Longest silence on a response body or event stream before it is
    /// considered dead (default 5 min). Streams have no total timeout.
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Largest JSON response body accepted (default 64 MiB).
    pub fn max_body_size(mut self, bytes: usize) -> Self {
        self.max_body_size = bytes;
        self
    }

    /// Largest single SSE event accepted (default 64 MiB).
    pub fn max_event_size(mut self, bytes: usize) -> Self {
        self.max_event_size = bytes;
        self
    }

    /// Uses this `reqwest` client instead of the shared one.
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    fn validate(&self) -> Result<url::Url, TransportError> {
        let url = url::Url::parse(&self.url).map_err(|e| {
            TransportError::Config(format!("bad server URL {:?}: {e}", self.shown_url()))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(TransportError::Config(format!(
                "server URL {:?} must start with http:// or https://",
                self.shown_url()
            )));
        }
        for (name, value) in &self.headers {
            reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| TransportError::Config(format!("bad header name {name:?}")))?;
            reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| TransportError::Config(format!("bad value for header {name:?}")))?;
        }
        for (setting, value) in [
            ("max_body_size", self.max_body_size),
            ("max_event_size", self.max_event_size),
        ] {
            if value == 0 {
                return Err(TransportError::Config(format!(
                    "{setting} must be at least 1"
                )));
            }
        }
        if self.read_timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(TransportError::Config(
                "timeouts must be greater than zero".into(),
            ));
        }
        Ok(url)
    }

    /// The shared pooled client, or one built for non-default settings.
    fn http_client(&self) -> Result<reqwest::Client, TransportError> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        if self.connect_timeout == DEFAULT_CONNECT_TIMEOUT {
            static SHARED: OnceLock<reqwest::Client> = OnceLock::new();
            if let Some(client) = SHARED.get() {
                return Ok(client.clone());
            }
            let client = build_client(DEFAULT_CONNECT_TIMEOUT)?;
            return Ok(SHARED.get_or_init(|| client).clone());
        }
        build_client(self.connect_timeout)
    }
}

/// A `reqwest` client builder with TLS as the HTTP transports set it up:
/// the platform's certificate verifier, whose CA roots are read at the first
/// `https://` handshake rather than by `build()`. So building a client
/// never fails (or panics, as `reqwest::Client::new()` does) for a bad
/// `SSL_CERT_FILE`; a command that needs no TLS is not stopped by one, and
/// an `https://` request that does fails naming it
/// ([`CaCertificatesError`](crate::transport::CaCertificatesError) in its
/// error's sources).
///
/// # Errors
/// [`TransportError::Config`] if TLS cannot be set up at all (the crypto
/// provider supports no TLS version).
pub fn reqwest_builder() -> Result<reqwest::ClientBuilder, TransportError> {
    Ok(reqwest::Client::builder().tls_backend_preconfigured(tls::client_config()?))
}

fn build_client(connect_timeout: Duration) -> Result<reqwest::Client, TransportError> {
    reqwest_builder()?
        .connect_timeout(connect_timeout)
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            // Only same-origin 307/308: other redirects would change the
            // method or leak headers to another host.
            let same_origin = attempt
                .previous()
                .last()
                .is_some_and(|from| from.origin() == attempt.url().origin());
            let status = attempt.status().as_u16();
            if same_origin && matches!(status, 307 | 308) && attempt.previous().len() < 5 {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }))
        .build()
        .map_err(|e| TransportError::Config(format!("cannot build the HTTP client: {e}")))
}

/// What detection found for one server URL: its era, and whether it needed
/// the legacy HTTP+SSE transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpVerdict {
    /// The protocol era.
    pub era: switchboard_types::Era,
    /// [`HttpTransport::StreamableHttp`] or [`HttpTransport::Sse`].
    pub transport: HttpTransport,
}

impl HttpVerdict {
    /// A verdict: `era`, spoken over `transport`.
    pub fn new(era: switchboard_types::Era, transport: HttpTransport) -> Self {
        Self { era, transport }
    }
}

/// Verdicts by server URL, for this process. Keyed by the full endpoint
/// URL rather than the origin: one origin often hosts several servers.
fn verdicts() -> std::sync::MutexGuard<'static, std::collections::HashMap<String, HttpVerdict>> {
    static VERDICTS: OnceLock<std::sync::Mutex<std::collections::HashMap<String, HttpVerdict>>> =
        OnceLock::new();
    VERDICTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Every detection verdict this process has made or been given, to persist
/// (the hub stores them across restarts).
pub fn remembered_verdicts() -> Vec<(String, HttpVerdict)> {
    verdicts()
        .iter()
        .map(|(url, v)| (url.clone(), *v))
        .collect()
}

/// Seeds a verdict (for example one persisted by an earlier run): the next
/// [`HttpTransport::Auto`] connection to `url` uses it instead of detecting,
/// and detects afresh if it no longer holds.
pub fn remember_verdict(url: &str, verdict: HttpVerdict) {
    verdicts().insert(url.to_owned(), verdict);
}

/// Forgets the verdict for `url`.
pub fn forget_verdict(url: &str) {
    verdicts().remove(url);
}

impl HttpConfig {
    fn cached_verdict(&self) -> Option<HttpVerdict> {
        (self.transport == HttpTransport::Auto)
            .then(|| verdicts().get(&self.url).copied())
            .flatten()
    }
}

impl Connector for HttpConfig {
    fn connect(&self) -> BoxFuture<'_, Result<Connection, TransportError>> {
        Box::pin(async move {
            let url = self.validate()?;
            // Our own client's roots are read now, so that none is the
            // setting to fix, not a failed request; a caller's client
            // brings its own.
            if url.scheme() == "https" && self.client.is_none() {
                tls::check_roots()?;
            }
            let client = self.http_client()?;
            let transport = match self.cached_verdict() {
                Some(HttpVerdict {
                    transport: HttpTransport::Sse,
                    ..
                }) => HttpTransport::Sse,
                _ => self.transport,
            };
            match transport {
                HttpTransport::Sse => {
                    match legacy_sse::connect(self, url.clone(), client.clone()).await {
                        Err(error) if self.transport == HttpTransport::Auto => {
                            // The remembered verdict no longer holds: detect afresh.
                            tracing::debug!(server = %self.shown_url(), %error, "remembered SSE verdict failed");
                            forget_verdict(&self.url);
                            Ok(streamable::connect(self, url, client))
                        }
                        outcome => outcome,
                    }
                }
                HttpTransport::Auto | HttpTransport::StreamableHttp => {
                    Ok(streamable::connect(self, url, client))
                }
            }
        })
    }

    fn remembered_era(&self) -> Option<switchboard_types::Era> {
        self.cached_verdict().map(|v| v.era)
    }

    fn remember(&self, era: switchboard_types::Era, transport: &'static str) {
        if self.transport != HttpTransport::Auto {
            return;
        }
        let transport = match transport {
            "sse" => HttpTransport::Sse,
            _ => HttpTransport::StreamableHttp,
        };
        remember_verdict(&self.url, HttpVerdict { era, transport });
    }

    fn describe(&self) -> String {
        self.shown_url()
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn transport_name(&self) -> &'static str {
        let remembered_sse = matches!(
            self.cached_verdict(),
            Some(HttpVerdict {
                transport: HttpTransport::Sse,
                ..
            })
        );
        match self.transport {
            HttpTransport::Sse => "sse",
            HttpTransport::Auto if remembered_sse => "sse",
            HttpTransport::Auto | HttpTransport::StreamableHttp => "streamable-http",
        }
    }

    /// For [`HttpTransport::Auto`]: the same server over the legacy HTTP+SSE
    /// transport.
    fn fallback(&self) -> Option<Arc<dyn Connector>> {
        (self.transport == HttpTransport::Auto)
            .then(|| Arc::new(self.clone().transport(HttpTransport::Sse)) as Arc<dyn Connector>)
    }
}

/// The configured headers, as a map (validated by `HttpConfig::validate`).
pub(crate) fn header_map(config: &HttpConfig) -> reqwest::header::HeaderMap {
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &config.headers {
        if let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(name.as_bytes()),
            reqwest::header::HeaderValue::from_str(value),
        ) {
            let mut value = value;
            // A hand-written `Authorization` (or any credential-looking
            // header) is a secret: marked sensitive, as a login's token is.
            let lower = name.as_str();
            if lower == "authorization"
                || lower == "proxy-authorization"
                || lower == "cookie"
                || lower.contains("token")
                || lower.contains("key")
                || lower.contains("secret")
            {
                value.set_sensitive(true);
            }
            headers.append(name, value);
        }
    }
    headers
}

/// A failed HTTP exchange, named by the redacted URL `display`.
pub(crate) fn http_error(display: &str, error: reqwest::Error) -> TransportError {
    TransportError::Http {
        url: display.to_owned(),
        source: Box::new(error.without_url()),
    }
}

/// A 401/403: tells the auth provider (a `DPoP-Nonce` first), and says
/// what the server wants.
pub(crate) async fn auth_failure(
    auth: Option<&Arc<dyn AuthProvider>>,
    url: &str,
    status: u16,
    headers: &reqwest::header::HeaderMap,
) -> AuthFailure {
    let www_authenticate = headers
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let nonce = headers.contains_key(DPOP_NONCE_HEADER)
        && www_authenticate
            .as_deref()
            .is_some_and(|w| w.contains("use_dpop_nonce"));
    let retry = match auth {
        Some(auth) => {
            note_dpop_nonce(Some(auth), url, headers);
            auth.unauthorized(status, www_authenticate.as_deref()).await
        }
        None => false,
    };
    AuthFailure {
        retry,
        nonce,
        error: TransportError::AuthorizationRequired {
            status,
            www_authenticate,
        },
    }
}

/// What a 401/403 means for the request that got it.
pub(crate) struct AuthFailure {
    /// The provider has new credentials: send the request once more.
    pub(crate) retry: bool,
    /// The refusal was a DPoP nonce challenge (RFC 9449 §9) with a nonce.
    pub(crate) nonce: bool,
    /// The error to report when it is not retried.
    pub(crate) error: TransportError,
}

/// The retries one request has had after a 401/403: one with new
/// credentials, and one with a new DPoP nonce.
#[derive(Default)]
pub(crate) struct AuthRetries {
    credentials: bool,
    nonce: bool,
}

impl AuthRetries {
    /// Whether the request should be sent again after `failure`.
    pub(crate) fn allow(&mut self, failure: &AuthFailure) -> bool {
        if !failure.retry {
            return false;
        }
        if failure.nonce && !self.nonce {
            self.nonce = true;
            return true;
        }
        if !self.credentials {
            self.credentials = true;
            return true;
        }
        false
    }
}

/// The URL without user info or query (which may hold secrets).
pub(crate) fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) => redact_parsed(&parsed),
        Err(_) => url.chars().take(200).collect(),
    }
}

/// [`redact_url`] of a URL already parsed.
pub(crate) fn redact_parsed(url: &url::Url) -> String {
    if url.username().is_empty() && url.password().is_none() && url.query().is_none() {
        // Nothing to take out (each setter parses the URL again).
        return url.to_string();
    }
    let mut parsed = url.clone();
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    if parsed.query().is_some() {
        parsed.set_query(Some("…"));
    }
    parsed.to_string()
}

/// A URL as written in a configuration (`${VAR}` references kept, not
/// percent-encoded by a parse) without user info, query or fragment, as
/// [`redact_url`] shows a parsed one.
fn redact_written(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    let (path, after) = tail.split_at(path_end);
    let query = if after.starts_with('?') { "?…" } else { "" };
    let shown = if scheme.is_empty() {
        format!("{host}{path}{query}")
    } else {
        format!("{scheme}://{host}{path}{query}")
    };
    shown.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_follow_the_encoding_rules() {
        assert_eq!(encode_header_value("us-west1"), "us-west1");
        assert_eq!(
            encode_header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(
            encode_header_value("line1\nline2"),
            "=?base64?bGluZTEKbGluZTI=?="
        );
        assert_eq!(
            encode_header_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(encode_header_value("file:///a b.txt"), "file:///a b.txt");
    }

    #[test]
    fn refused_requests_are_retried_once_per_reason() {
        let failure = |retry, nonce| AuthFailure {
            retry,
            nonce,
            error: TransportError::ClosedByClient,
        };
        let mut retries = AuthRetries::default();
        assert!(
            !retries.allow(&failure(false, true)),
            "the provider decides"
        );
        assert!(retries.allow(&failure(true, false)), "new credentials");
        assert!(retries.allow(&failure(true, true)), "then a DPoP nonce");
        assert!(!retries.allow(&failure(true, true)));
        assert!(!retries.allow(&failure(true, false)));
        let mut retries = AuthRetries::default();
        assert!(retries.allow(&failure(true, true)));
        assert!(
            retries.allow(&failure(true, true)),
            "a nonce, then credentials"
        );
        assert!(!retries.allow(&failure(true, false)));
    }

    #[test]
    fn request_credentials_never_show_in_debug() {
        let creds = RequestCredentials::new(Some("Bearer secret".into()), Some("proof".into()));
        let shown = format!("{creds:?}");
        assert!(!shown.contains("secret") && !shown.contains("proof"));
    }

    #[test]
    fn urls_are_redacted() {
        assert_eq!(
            redact_url("https://user:secret@example.com/mcp?key=abc"),
            "https://example.com/mcp?%E2%80%A6"
        );
        let config =
            HttpConfig::new("https://example.com/mcp").header("Authorization", "Bearer secret");
        assert!(!format!("{config:?}").contains("secret"));
    }

    #[test]
    fn a_url_as_written_is_shown_without_userinfo_or_query_and_unencoded() {
        assert_eq!(
            redact_written("https://user:pw@host.example:8443/${TOKEN}/mcp?key=abc#f"),
            "https://host.example:8443/${TOKEN}/mcp?…"
        );
        assert_eq!(
            redact_written("http://127.0.0.1:9/${TOKEN}/mcp"),
            "http://127.0.0.1:9/${TOKEN}/mcp"
        );
    }

    #[test]
    fn bad_settings_are_reported() {
        assert!(HttpConfig::new("ftp://x").validate().is_err());
        assert!(HttpConfig::new("not a url").validate().is_err());
        assert!(
            HttpConfig::new("http://x")
                .header("bad name", "v")
                .validate()
                .is_err()
        );
        assert!(
            HttpConfig::new("http://x")
                .max_body_size(0)
                .validate()
                .is_err()
        );
        assert!(HttpConfig::new("http://127.0.0.1:1/mcp").validate().is_ok());
    }
}

#[cfg(test)]
mod sensitive_tests {
    use super::*;

    #[test]
    fn credential_headers_are_marked_sensitive() {
        let config = HttpConfig::new("https://example.com/mcp")
            .header("Authorization", "Bearer sk-live")
            .header("X-Api-Key", "k")
            .header("X-Trace", "t");
        let headers = header_map(&config);
        assert!(headers["authorization"].is_sensitive());
        assert!(headers["x-api-key"].is_sensitive());
        assert!(!headers["x-trace"].is_sensitive());
        assert!(!format!("{headers:?}").contains("sk-live"));
    }
}
