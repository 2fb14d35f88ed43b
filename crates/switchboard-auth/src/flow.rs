//! The application-driven authorization code flow (MCP 2025-11-25 and
//! 2026-07-28 "Authorization"): discovery, client registration, the
//! authorization URL with PKCE S256, the code exchange and refresh.
//!
//! One file: the steps share one state (the pending login with its PKCE
//! verifier and `state`, the discovered metadata) and read in the order the
//! specification gives them.
//!
//! ```no_run
//! # async fn run(store: std::sync::Arc<dyn switchboard_auth::store::CredentialStore>) -> Result<(), switchboard_auth::flow::OAuthError> {
//! use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
//! let flow = OAuthFlow::new(OAuthConfig::new("my-app", "http://127.0.0.1:8976/callback", store))?;
//! let request = flow.begin("https://mcp.example.com/mcp", None).await?;
//! println!("open {}", request.authorization_url);
//! // … the browser comes back to the redirect URI with `code`, `state` and `iss` …
//! # let (code, state, iss) = (String::new(), String::new(), None::<String>);
//! let credentials = flow.finish(&code, &state, iss.as_deref()).await?;
//! # let _ = credentials; Ok(()) }
//! ```
//!
//! Every URL a server controls (metadata, endpoints) passes [`UrlGuard`]
//! before it is fetched, and the HTTP client follows no redirect.
//! The PKCE verifier and the `state` value come from `pkce.rs` (aws-lc-rs's
//! CSPRNG and SHA-256); the token requests go through [`crate::grant`]'s,
//! the one token request of every grant.
//!
//! With a DPoP key ([`OAuthConfig::dpop`], RFC 9449) the authorization
//! request carries the key's `dpop_jkt`, the code exchange and every refresh
//! a proof, and a `DPoP` token is stored with its type, so that an
//! [`OAuthProvider`](super::provider::OAuthProvider) sends it as
//! `Authorization: DPoP …` with a fresh proof per request.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use switchboard::transport::BoxFuture;
use url::Url;

use crate::dpop::{self, DpopKey};
use crate::grant::{self, ClientAuth, GrantError, IssuerPins, TokenSet, shown};
use crate::jwt::JwtError;
use crate::metadata::{
    self, AuthorizationServerMetadata, Challenge, MetadataError, ProtectedResourceMetadata,
};
use crate::pending::{MemoryPendingStore, PendingLogin, PendingStore};
use crate::pkce;
use crate::ssrf::{SsrfError, UrlGuard};
use crate::store::{CredentialKey, CredentialStore, Secret, StoreError, StoredCredentials};

/// How long before expiry an access token is refreshed.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// How long a login begun with [`OAuthFlow::begin`] waits for its
/// [`finish`](OAuthFlow::finish) by default
/// ([`OAuthConfig::pending_login_expiry`]).
pub const PENDING_LOGIN_EXPIRY: Duration = Duration::from_secs(10 * 60);
/// Where the token endpoint is remembered in [`StoredCredentials::extra`].
const EXTRA_TOKEN_ENDPOINT: &str = "token_endpoint";
/// Where the token endpoint auth method is remembered.
const EXTRA_AUTH_METHOD: &str = "token_endpoint_auth_method";

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenAuthMethod {
    /// HTTP Basic with the client id and secret.
    ClientSecretBasic,
    /// Client id and secret in the form body.
    ClientSecretPost,
    /// A public client: the client id in the form body, no secret.
    None,
}

impl TokenAuthMethod {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
            Self::None => "none",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "client_secret_basic" => Some(Self::ClientSecretBasic),
            "client_secret_post" => Some(Self::ClientSecretPost),
            "none" => Some(Self::None),
            _ => None,
        }
    }

    /// How a token request authenticates `client_id` with this method: a
    /// secret-based method without a secret sends the id alone.
    fn client_auth(self, client_id: &str, secret: Option<&Secret>) -> ClientAuth {
        let client_id = client_id.to_owned();
        match (self, secret) {
            (Self::ClientSecretBasic, Some(secret)) => ClientAuth::SecretBasic {
                client_id,
                secret: secret.clone(),
            },
            (Self::ClientSecretPost, Some(secret)) => ClientAuth::SecretPost {
                client_id,
                secret: secret.clone(),
            },
            _ => ClientAuth::None { client_id },
        }
    }

    /// The method for a client with or without a secret, among those the
    /// server supports (RFC 8414: absent means `client_secret_basic`).
    fn choose(has_secret: bool, supported: Option<&[String]>) -> Self {
        if !has_secret {
            return Self::None;
        }
        let supports = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
        if !supports("client_secret_basic") && supports("client_secret_post") {
            Self::ClientSecretPost
        } else {
            Self::ClientSecretBasic
        }
    }
}

/// What the application configures once. Setters never fail;
/// [`OAuthFlow::new`] reports a bad setting.
#[derive(Clone)]
#[must_use]
pub struct OAuthConfig {
    pub(crate) client_name: String,
    pub(crate) redirect_uri: String,
    pub(crate) pre_registered: Option<(String, Option<Secret>)>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) scopes: Option<Vec<String>>,
    pub(crate) allow_http_loopback: bool,
    pub(crate) allow_hosts: Vec<String>,
    pub(crate) store: Arc<dyn CredentialStore>,
    pub(crate) dpop: Option<DpopKey>,
    pub(crate) issuers: IssuerPins,
    pub(crate) pending_expiry: Duration,
    pub(crate) pending_store: Arc<dyn PendingStore>,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_name", &self.client_name)
            .field("redirect_uri", &self.redirect_uri)
            .field(
                "pre_registered",
                &self.pre_registered.as_ref().map(|(id, _)| id),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("allow_http_loopback", &self.allow_http_loopback)
            .field("allow_hosts", &self.allow_hosts)
            .field("store", &self.store)
            .field("dpop", &self.dpop)
            .field("issuers", &self.issuers)
            .field("pending_expiry", &self.pending_expiry)
            .field("pending_store", &self.pending_store)
            .finish()
    }
}

impl OAuthConfig {
    /// A client called `client_name` that receives the authorization
    /// response at `redirect_uri`, keeping credentials in `store`.
    pub fn new(
        client_name: impl Into<String>,
        redirect_uri: impl Into<String>,
        store: Arc<dyn CredentialStore>,
    ) -> Self {
        Self {
            client_name: client_name.into(),
            redirect_uri: redirect_uri.into(),
            pre_registered: None,
            client_metadata_url: None,
            scopes: None,
            allow_http_loopback: false,
            allow_hosts: Vec::new(),
            store,
            dpop: None,
            issuers: IssuerPins::default(),
            pending_expiry: PENDING_LOGIN_EXPIRY,
            pending_store: Arc::new(MemoryPendingStore::new()),
        }
    }

    /// A client id (and secret, for a confidential client) registered with
    /// the authorization server beforehand; used before anything else.
    ///
    /// A secret goes only to the authorization server it was issued by:
    /// name it with [`expected_issuer`](Self::expected_issuer). Without
    /// one, a login with a secret fails with [`OAuthError::IssuerNotNamed`]
    /// before any request to the authorization server the MCP server
    /// names. A client id alone (a public client) needs no expected issuer.
    pub fn pre_registered(mut self, client_id: impl Into<String>, secret: Option<Secret>) -> Self {
        self.pre_registered = Some((client_id.into(), secret));
        self
    }

    /// The HTTPS URL of this client's Client ID Metadata Document, used as
    /// the `client_id` where the server supports it.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Scopes to request instead of those the challenge or metadata name.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = String>) -> Self {
        self.scopes = Some(scopes.into_iter().collect());
        self
    }

    /// Allow plain `http` to loopback hosts (local servers, tests,
    /// conformance); off by default.
    pub fn allow_http_loopback(mut self, allow: bool) -> Self {
        self.allow_http_loopback = allow;
        self
    }

    /// Hosts an authorization server's endpoints may live on besides the
    /// issuer's own (see [`UrlGuard`]); bare host names or IP addresses.
    pub fn allow_hosts(mut self, hosts: impl IntoIterator<Item = String>) -> Self {
        self.allow_hosts.extend(hosts);
        self
    }

    /// The issuer identifier of the authorization server the
    /// [`pre_registered`](Self::pre_registered) client secret belongs to,
    /// such as `https://auth.example.com`. Call again to allow more than
    /// one. When the MCP server's resource metadata names another
    /// authorization server, the login fails with
    /// [`OAuthError::IssuerMismatch`] before any request to it. Clients
    /// without a secret (dynamically registered, Client ID Metadata
    /// Document, public pre-registered ids) do not need it.
    pub fn expected_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.add(issuer.into());
        self
    }

    /// Sends the pre-registered client secret to whatever authorization
    /// server the MCP server names, expected or not. A server can then
    /// steer the secret to a party of its choosing: only for servers
    /// trusted as much as the secret (a local conformance suite). Off by
    /// default.
    pub fn trust_any_issuer(mut self, trust: bool) -> Self {
        self.issuers.set_any(trust);
        self
    }

    /// How long a login begun with [`OAuthFlow::begin`] (or by
    /// [`OAuthFlow::login`]) can still be finished; afterwards its
    /// redirect is refused with [`OAuthError::LoginExpired`] and the login
    /// starts again. [`PENDING_LOGIN_EXPIRY`] (10 minutes) by default.
    pub fn pending_login_expiry(mut self, expiry: Duration) -> Self {
        self.pending_expiry = expiry;
        self
    }

    /// Where logins begun and not yet finished are kept (default: this
    /// process's memory, [`MemoryPendingStore`]). A
    /// [`FilePendingStore`](crate::pending::FilePendingStore) lets another
    /// process, or this one after a restart, [`finish`](OAuthFlow::finish)
    /// a login [`begin`](OAuthFlow::begin) started.
    pub fn pending_store(mut self, store: Arc<dyn PendingStore>) -> Self {
        self.pending_store = store;
        self
    }

    /// Binds the tokens to `key` (DPoP, RFC 9449): the authorization
    /// request names the key (`dpop_jkt`), the code exchange and refreshes
    /// carry proofs (retried once with the server's nonce on
    /// `use_dpop_nonce`), and a `DPoP` token is sent with a fresh proof per
    /// request.
    pub fn dpop(mut self, key: DpopKey) -> Self {
        self.dpop = Some(key);
        self
    }
}

/// The user's part of a login: open the authorization URL (in a browser,
/// usually) and wait until the authorization server sends the user agent
/// back to the redirect URI.
///
/// [`OAuthFlow::login`] calls it between [`OAuthFlow::begin`] and
/// [`OAuthFlow::finish_redirect`], and an
/// [`OAuthProvider`](super::provider::OAuthProvider) made with
/// [`interactive`](super::provider::OAuthProvider::interactive) calls it
/// whenever the server asks for a login. A desktop application implements it
/// with a loopback HTTP server on the redirect URI that opens the browser and
/// returns the first request it receives; a headless test follows the
/// authorization server's redirect itself.
///
/// ```no_run
/// use switchboard_auth::flow::{AuthorizationRequest, Authorizer, OAuthError};
/// use switchboard::transport::BoxFuture;
///
/// #[derive(Debug)]
/// struct AskOnTheTerminal;
///
/// impl Authorizer for AskOnTheTerminal {
///     fn authorize<'a>(
///         &'a self,
///         request: &'a AuthorizationRequest,
///     ) -> BoxFuture<'a, Result<url::Url, OAuthError>> {
///         Box::pin(async move {
///             println!("open {} and paste the address you land on", request.authorization_url);
///             let mut line = String::new();
///             std::io::stdin()
///                 .read_line(&mut line)
///                 .map_err(|e| OAuthError::Interaction(Box::new(e)))?;
///             url::Url::parse(line.trim()).map_err(|e| OAuthError::Interaction(Box::new(e)))
///         })
///     }
/// }
/// ```
pub trait Authorizer: Send + Sync + 'static {
    /// Shows `request.authorization_url` to the user and returns the URL the
    /// authorization server redirected back to, with its whole query
    /// (`code`, `state` and `iss`, or `error`). The redirect is not checked
    /// here: [`OAuthFlow::finish_redirect`] does that.
    ///
    /// # Errors
    /// [`OAuthError::Interaction`] when the user agent could not be shown the
    /// URL or never came back (closed, timed out, cancelled).
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<Url, OAuthError>>;
}

/// An [`Authorizer`] for authorization servers that answer without a user
/// (consent given beforehand, test and conformance servers): it GETs the
/// authorization URL and returns where the redirect points, without
/// following it.
#[derive(Debug, Clone)]
pub struct RedirectAgent {
    http: reqwest::Client,
}

impl RedirectAgent {
    /// An agent with its own HTTP client, which follows no redirect. It
    /// stands in for the user's browser, so like a browser it goes where
    /// the authorization URL points without the SSRF guard's resolver (the
    /// URL itself passed the flow's guard).
    ///
    /// # Errors
    /// [`OAuthError::Config`] if the HTTP client cannot be built.
    pub fn new() -> Result<Self, OAuthError> {
        let http = grant::client_builder()
            .map_err(OAuthError::Config)?
            .build()
            .map_err(|e| OAuthError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { http })
    }
}

impl Authorizer for RedirectAgent {
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<Url, OAuthError>> {
        Box::pin(async move {
            let failed = |detail: String| OAuthError::Interaction(detail.into());
            let response = self
                .http
                .get(request.authorization_url.clone())
                .send()
                .await
                .map_err(|e| OAuthError::Interaction(Box::new(e.without_url())))?;
            let status = response.status();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    failed(format!(
                        "the authorization endpoint answered {status} without redirecting back; this authorization server needs a user (use a browser-based Authorizer)"
                    ))
                })?;
            request
                .authorization_url
                .join(location)
                .map_err(|e| failed(format!("the redirect back is not a URL: {e}")))
        })
    }
}

/// Authorization failed or needs the user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// A setting of [`OAuthConfig`] is unusable.
    #[error("bad OAuth setting: {0}")]
    Config(String),
    /// A server-controlled URL was refused.
    #[error("a URL given by the server was refused")]
    Ssrf(#[from] SsrfError),
    /// A metadata document must not be used.
    #[error("the authorization metadata was refused")]
    Metadata(#[from] MetadataError),
    /// No protected resource metadata was found for the server.
    #[error(
        "no OAuth protected resource metadata found for {server}; the server does not support MCP authorization (configure a token header instead)"
    )]
    NoResourceMetadata {
        /// The server URL, without query.
        server: String,
    },
    /// No authorization server metadata was found.
    #[error("no authorization server metadata found for issuer {issuer}")]
    NoServerMetadata {
        /// The issuer tried.
        issuer: String,
    },
    /// The server allows no registration this client can do.
    #[error(
        "authorization server {issuer} offers no way for this client to register; configure a pre-registered client id"
    )]
    RegistrationRequired {
        /// The issuer.
        issuer: String,
    },
    /// An HTTP request failed.
    #[error("request to {url} failed")]
    Http {
        /// The URL, without query.
        url: String,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// A server answered something that cannot be used.
    #[error("{url} answered {status}: {detail}")]
    BadResponse {
        /// The URL, without query.
        url: String,
        /// The HTTP status.
        status: u16,
        /// What was wrong.
        detail: String,
    },
    /// The `state` of the authorization response matches no request begun
    /// here: it may be forged.
    #[error("the authorization response's state matches no pending request; start again")]
    StateMismatch,
    /// The `iss` of the authorization response (RFC 9207) is not the
    /// authorization server the request went to, or is missing where the
    /// server promised it.
    #[error(
        "the authorization response came from issuer {found:?}, expected {expected}; it was refused"
    )]
    IssMismatch {
        /// The issuer the request went to.
        expected: String,
        /// The `iss` received.
        found: Option<String>,
    },
    /// The token endpoint refused (OAuth error code and description).
    #[error("the token endpoint refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    TokenRefused {
        /// The OAuth error code.
        error: String,
        /// The server's description.
        description: Option<String>,
    },
    /// The [`Authorizer`] could not complete its part (the browser could not
    /// be opened, the user never came back, the wait was cancelled).
    #[error("the login in the browser did not complete; try logging in again")]
    Interaction(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The authorization server redirected back with an `error` instead of
    /// a code (the user declined, or the request was refused).
    #[error("the authorization server refused the login: {error}{}; log in again or check the client's registration", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    AuthorizationDenied {
        /// The OAuth error code (`access_denied`, `invalid_scope`, …).
        error: String,
        /// The server's description.
        description: Option<String>,
    },
    /// The redirect back from the authorization server cannot be used.
    #[error("the authorization response is unusable: {detail}; start the login again")]
    InvalidRedirect {
        /// What is wrong with it.
        detail: String,
    },
    /// The refresh token is no longer valid: log in again.
    #[error("the login has expired or was revoked; log in again")]
    LoginRequired,
    /// The authorization response came back after the login waited longer
    /// than [`OAuthConfig::pending_login_expiry`]; it was refused.
    #[error(
        "the login waited more than {}s for the browser and has expired; start it again",
        expiry.as_secs()
    )]
    LoginExpired {
        /// How long a login may wait.
        expiry: Duration,
    },
    /// The MCP server names an authorization server other than the ones
    /// the pre-registered client secret was configured for; nothing was
    /// sent to it, not even a metadata request.
    #[error(
        "{server} names the authorization server {found}, but the client secret is for {}; nothing was sent to {found} (if it is trusted, add it with `expected_issuer`)",
        expected.join(" or ")
    )]
    IssuerMismatch {
        /// The MCP server, without query.
        server: String,
        /// The issuers configured, as URLs.
        expected: Vec<String>,
        /// The issuer the server's metadata names.
        found: String,
    },
    /// A pre-registered client secret is configured without an expected
    /// issuer, so no authorization server is trusted with it.
    #[error(
        "{server} names the authorization server {found}, but no expected issuer is configured for the client secret; nothing was sent to {found} (name the issuer the secret belongs to with `expected_issuer`)"
    )]
    IssuerNotNamed {
        /// The MCP server, without query.
        server: String,
        /// The issuer the server's metadata names.
        found: String,
    },
    /// The credential store failed.
    #[error("the credential store failed")]
    Store(#[from] StoreError),
    /// A DPoP proof could not be signed.
    #[error("the DPoP proof could not be signed")]
    Proof(#[source] JwtError),
    /// The system's random number generator failed, so no PKCE verifier or
    /// `state` could be made; nothing was sent.
    #[error("the system's random number generator failed; no login was started")]
    Random,
}

impl OAuthError {
    /// Whether the user must log in (again) interactively.
    pub fn is_login_required(&self) -> bool {
        matches!(self, Self::LoginRequired)
    }

    /// The flow's error for what the shared token request and HTTP helpers
    /// of [`super::grant`] report.
    fn from_grant(error: GrantError) -> Self {
        match error {
            GrantError::Config(reason) => Self::Config(reason),
            GrantError::Ssrf(e) => Self::Ssrf(e),
            GrantError::Metadata(e) => Self::Metadata(e),
            GrantError::NoResourceMetadata { server } => Self::NoResourceMetadata { server },
            GrantError::NoServerMetadata { issuer, .. } => Self::NoServerMetadata { issuer },
            GrantError::Http { url, source } => Self::Http { url, source },
            GrantError::BadResponse {
                url,
                status,
                detail,
            } => Self::BadResponse {
                url,
                status,
                detail,
            },
            GrantError::Refused {
                error, description, ..
            } => Self::TokenRefused { error, description },
            GrantError::Jwt(e) => Self::Proof(e),
            GrantError::Assertion { path, source } => {
                Self::Config(format!("cannot read {path}: {source}"))
            }
            GrantError::IssuerMismatch {
                server,
                expected,
                found,
            } => Self::IssuerMismatch {
                server,
                expected,
                found,
            },
            GrantError::IssuerNotNamed { server, found } => Self::IssuerNotNamed { server, found },
        }
    }
}

/// An authorization request for the user to complete in a browser.
#[derive(Clone)]
pub struct AuthorizationRequest {
    /// Open this in the browser.
    pub authorization_url: Url,
    /// The `state` sent; [`OAuthFlow::finish`] checks the response's.
    pub state: String,
    /// The issuer the request goes to.
    pub issuer: String,
    /// The resource (RFC 8707) the tokens will be for.
    pub resource: String,
    /// The scopes requested, space-separated, if any.
    pub scope: Option<String>,
}

impl fmt::Debug for AuthorizationRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationRequest")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// A login [`OAuthFlow::finish_with_server`] completed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FinishedLogin {
    /// The credentials now stored.
    pub credentials: StoredCredentials,
    /// The server URL given to [`OAuthFlow::begin`].
    pub server_url: String,
}

/// Runs the authorization code flow. Cheap to clone.
#[derive(Clone)]
pub struct OAuthFlow {
    inner: Arc<Inner>,
}

struct Inner {
    config: OAuthConfig,
    guard: UrlGuard,
    http: reqwest::Client,
    /// The clock pending logins age by; a test's own in unit tests.
    now: Arc<dyn Fn() -> SystemTime + Send + Sync>,
}

impl fmt::Debug for OAuthFlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthFlow")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl OAuthFlow {
    /// A flow with `config`.
    ///
    /// # Errors
    /// [`OAuthError::Config`] for an unusable redirect URI, expected
    /// issuer or client metadata URL (which must be `https` with a path).
    pub fn new(config: OAuthConfig) -> Result<Self, OAuthError> {
        Url::parse(&config.redirect_uri)
            .map_err(|e| OAuthError::Config(format!("redirect_uri: {e}")))?;
        if let Some(bad) = config.issuers.first_bad() {
            return Err(OAuthError::Config(bad));
        }
        if let Some(url) = &config.client_metadata_url {
            let parsed = Url::parse(url)
                .map_err(|e| OAuthError::Config(format!("client_metadata_url: {e}")))?;
            if parsed.scheme() != "https" || parsed.path() == "/" {
                return Err(OAuthError::Config(
                    "client_metadata_url must be an https URL with a path".into(),
                ));
            }
        }
        let guard = UrlGuard::builder()
            .allow_http_loopback(config.allow_http_loopback)
            .allow_hosts(config.allow_hosts.iter().cloned())
            .build()?;
        let http = grant::http_client(&guard).map_err(OAuthError::from_grant)?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                guard,
                http,
                now: Arc::new(SystemTime::now),
            }),
        })
    }

    /// Discovers the server's authorization server, registers this client
    /// if needed, and builds the authorization URL to open.
    ///
    /// `www_authenticate` is the server's challenge (from a 401, or a 403
    /// `insufficient_scope`, in which case the scopes already granted are
    /// requested again with the new ones).
    ///
    /// # Errors
    /// Discovery, metadata checks, the URL guard or registration failed.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is remembered until the request is built (a
    /// dynamic registration made before cancellation is lost); a request
    /// cancelled while it is being put in the pending store may be kept
    /// there, unused, until it expires.
    pub async fn begin(
        &self,
        server_url: &str,
        www_authenticate: Option<&str>,
    ) -> Result<AuthorizationRequest, OAuthError> {
        match self.start(server_url, www_authenticate, None).await? {
            Begun::Request(request) => Ok(request),
            Begun::Stored(_) => unreachable!("stored credentials are only offered when asked for"),
        }
    }

    /// [`begin`](Self::begin), or — when `reuse` is given and the challenge
    /// is not a step-up — the credentials already stored for the server and
    /// its authorization server, if they can serve without the user: an
    /// access token other than `reuse.refused` that is fresh or can be
    /// refreshed.
    pub(crate) async fn start(
        &self,
        server_url: &str,
        www_authenticate: Option<&str>,
        reuse: Option<Reuse<'_>>,
    ) -> Result<Begun, OAuthError> {
        let inner = &*self.inner;
        let server =
            Url::parse(server_url).map_err(|e| OAuthError::Config(format!("server URL: {e}")))?;
        let challenge = www_authenticate.and_then(auth_challenge);
        let found = self.discover(&server, challenge.as_ref()).await?;
        let Discovered {
            prm,
            resource,
            issuer,
            asm,
            defaults,
        } = found;
        let endpoint = |e: &Option<String>, name: &str| -> Result<Url, OAuthError> {
            let e = e.as_deref().ok_or_else(|| OAuthError::BadResponse {
                url: shown(&issuer),
                status: 200,
                detail: format!("the metadata has no {name}"),
            })?;
            Ok(inner.guard.check(e, Some(&issuer))?)
        };
        let authorization_endpoint =
            endpoint(&asm.authorization_endpoint, "authorization_endpoint")?;
        let token_endpoint = endpoint(&asm.token_endpoint, "token_endpoint")?;

        // Credentials belong to one authorization server: a server that
        // moved to another issuer gets a new registration, never the old one.
        let key = CredentialKey::new(resource.clone(), asm.issuer.clone());
        let mut stored = load(&inner.config.store, &key).await?;
        let step_up = challenge
            .as_ref()
            .is_some_and(Challenge::is_insufficient_scope);
        if let (Some(reuse), Some(creds), false) = (&reuse, &stored, step_up)
            && creds.access_token.is_some()
            && creds.access_token.as_ref() != reuse.refused
        {
            let fresh = creds
                .expires_at
                .is_none_or(|at| at > SystemTime::now() + REFRESH_MARGIN);
            if fresh {
                return Ok(Begun::Stored(creds.clone()));
            }
            if creds.refresh_token.is_some() {
                // Refreshed here, not on the next request: if it fails, the
                // user logs in now, before the refused request's one retry.
                let store = &inner.config.store;
                let dpop = inner.config.dpop.as_ref();
                match refresh_stored(&inner.http, store, &key, None, REFRESH_MARGIN, dpop).await {
                    Ok(creds) => return Ok(Begun::Stored(creds)),
                    // The refusal may have removed the tokens or the
                    // registration: read again what is left.
                    Err(e) if e.is_login_required() => stored = load(store, &key).await?,
                    Err(e) => return Err(e),
                }
            }
        }
        let client = self
            .client_for(&asm, &issuer, stored.as_ref(), defaults, &server)
            .await?;
        let auth_method = client.method.unwrap_or_else(|| {
            TokenAuthMethod::choose(
                client.secret.is_some(),
                asm.token_endpoint_auth_methods_supported.as_deref(),
            )
        });
        let (client_id, client_secret) = (client.id, client.secret);

        let earlier: Vec<String> = match (&challenge, &stored) {
            (Some(c), Some(s)) if c.is_insufficient_scope() => s.scopes.clone(),
            _ => Vec::new(),
        };
        let scope = match &inner.config.scopes {
            Some(scopes) => (!scopes.is_empty()).then(|| scopes.join(" ")),
            None => metadata::choose_scopes(
                challenge.as_ref(),
                prm.as_ref(),
                Some(&asm),
                &earlier,
                true,
            ),
        };

        let verifier = pkce::new_verifier().map_err(|_| OAuthError::Random)?;
        let state = pkce::new_state().map_err(|_| OAuthError::Random)?;
        let challenge_s256 = pkce::challenge_s256(&verifier);
        let mut url = authorization_endpoint;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client_id)
                .append_pair("redirect_uri", &inner.config.redirect_uri)
                .append_pair("code_challenge", &challenge_s256)
                .append_pair("code_challenge_method", metadata::PKCE_S256)
                .append_pair("state", &state)
                .append_pair("resource", &resource);
            if let Some(scope) = &scope {
                q.append_pair("scope", scope);
            }
            if let Some(key) = &inner.config.dpop {
                // RFC 9449 §10: binds the code to the key.
                q.append_pair("dpop_jkt", key.thumbprint());
            }
        }
        let now = (inner.now)();
        let pending = PendingLogin {
            state: state.clone(),
            verifier,
            server_url: server_url.to_owned(),
            issuer: asm.issuer.clone(),
            issuer_known: !defaults,
            iss_required: asm.authorization_response_iss_parameter_supported == Some(true),
            resource: resource.clone(),
            token_endpoint: token_endpoint.to_string(),
            auth_method: auth_method.as_str().to_owned(),
            client_id,
            client_secret,
            scope: scope.clone(),
            redirect_uri: inner.config.redirect_uri.clone(),
            begun_ms: PendingLogin::millis(now),
        };
        // Logins never finished are dropped once expired, so that the
        // store does not grow with every abandoned browser tab.
        let expired_before = now
            .checked_sub(inner.config.pending_expiry)
            .unwrap_or(std::time::UNIX_EPOCH);
        let store = inner.config.pending_store.clone();
        tokio::task::spawn_blocking(move || store.put(pending, expired_before))
            .await
            .map_err(|e| OAuthError::Config(format!("store task failed: {e}")))??;
        Ok(Begun::Request(AuthorizationRequest {
            authorization_url: url,
            state,
            issuer: asm.issuer,
            resource,
            scope,
        }))
    }

    /// Completes a request begun by [`begin`](Self::begin) with the
    /// authorization response's `code`, `state` and `iss` (RFC 9207), and
    /// stores the credentials.
    ///
    /// # Errors
    /// [`OAuthError::StateMismatch`], [`OAuthError::LoginExpired`] when the
    /// request is older than [`OAuthConfig::pending_login_expiry`],
    /// [`OAuthError::IssMismatch`], the token endpoint refused, or the
    /// store failed.
    ///
    /// # Cancel safety
    /// Not cancel safe: the pending request is used up when the exchange
    /// starts.
    pub async fn finish(
        &self,
        code: &str,
        state: &str,
        iss: Option<&str>,
    ) -> Result<StoredCredentials, OAuthError> {
        self.finish_with_server(code, state, iss)
            .await
            .map(|finished| finished.credentials)
    }

    /// [`finish`](Self::finish), also saying which server the login was
    /// begun for: with a shared [`PendingStore`], the process that finishes
    /// may not be the one that began.
    ///
    /// # Errors
    /// As [`finish`](Self::finish).
    ///
    /// # Cancel safety
    /// As [`finish`](Self::finish).
    pub async fn finish_with_server(
        &self,
        code: &str,
        state: &str,
        iss: Option<&str>,
    ) -> Result<FinishedLogin, OAuthError> {
        let inner = &*self.inner;
        let pending = self.take_pending(state).await?;
        let server_url = pending.server_url.clone();
        let token_endpoint = Url::parse(&pending.token_endpoint)
            .map_err(|e| OAuthError::Config(format!("pending login's token endpoint: {e}")))?;
        let auth_method =
            TokenAuthMethod::parse(&pending.auth_method).unwrap_or(TokenAuthMethod::None);
        // RFC 9207: a present `iss` is compared with the issuer recorded
        // from the metadata, as a plain string, advertised or not.
        match iss {
            Some(found) if found == pending.issuer || !pending.issuer_known => {}
            None if !pending.iss_required => {}
            found => {
                return Err(OAuthError::IssMismatch {
                    expected: pending.issuer,
                    found: found.map(str::to_owned),
                });
            }
        }
        let form = [
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.to_owned()),
            ("redirect_uri", pending.redirect_uri.clone()),
            ("code_verifier", pending.verifier.expose().to_owned()),
            ("resource", pending.resource.clone()),
        ];
        let auth = auth_method.client_auth(&pending.client_id, pending.client_secret.as_ref());
        let token = grant::token_request(
            &inner.http,
            &token_endpoint,
            &auth,
            &pending.issuer,
            &form,
            inner.config.dpop.as_ref(),
        )
        .await
        .map_err(OAuthError::from_grant)?;
        let mut creds = StoredCredentials::new(pending.resource, pending.issuer, pending.client_id);
        creds.client_secret = pending.client_secret;
        creds
            .extra
            .insert(EXTRA_TOKEN_ENDPOINT.into(), token_endpoint.as_str().into());
        creds
            .extra
            .insert(EXTRA_AUTH_METHOD.into(), auth_method.as_str().into());
        store_token(&mut creds, token, pending.scope.as_deref());
        let key = creds.key();
        let store = inner.config.store.clone();
        let saved = creds.clone();
        tokio::task::spawn_blocking(move || store.save(&key, &saved))
            .await
            .map_err(|e| OAuthError::Config(format!("store task failed: {e}")))??;
        Ok(FinishedLogin {
            credentials: creds,
            server_url,
        })
    }

    /// Completes a request begun by [`begin`](Self::begin) from the URL the
    /// authorization server redirected back to: reads `code`, `state` and
    /// `iss` from its query and calls [`finish`](Self::finish). An `error`
    /// in the redirect ends the request.
    ///
    /// # Errors
    /// [`OAuthError::StateMismatch`] when `state` is missing or unknown,
    /// [`OAuthError::AuthorizationDenied`] for an `error`,
    /// [`OAuthError::InvalidRedirect`] without a `code`; otherwise as
    /// [`finish`](Self::finish).
    ///
    /// # Cancel safety
    /// As [`finish`](Self::finish).
    pub async fn finish_redirect(&self, redirect: &Url) -> Result<StoredCredentials, OAuthError> {
        let response = AuthorizationResponse::parse(redirect);
        let state = response.state.ok_or(OAuthError::StateMismatch)?;
        if let Some(error) = response.error {
            // Known state only: a forged error must not end a real request.
            self.take_pending(&state).await?;
            return Err(OAuthError::AuthorizationDenied {
                error,
                description: response.error_description,
            });
        }
        let Some(code) = response.code else {
            let _ = self.take_pending(&state).await;
            return Err(OAuthError::InvalidRedirect {
                detail: "it carries neither a code nor an error".into(),
            });
        };
        self.finish(&code, &state, response.iss.as_deref()).await
    }

    /// A whole login for `server_url`: [`begin`](Self::begin), the user's
    /// part through `authorizer`, then [`finish_redirect`](Self::finish_redirect).
    /// Returns the credentials now stored.
    ///
    /// `www_authenticate` is the server's challenge, as for `begin`.
    ///
    /// # Errors
    /// As `begin`, the authorizer and `finish_redirect`.
    ///
    /// # Cancel safety
    /// Cancel safe until the authorizer returns; not after (see
    /// [`finish`](Self::finish)).
    pub async fn login(
        &self,
        server_url: &str,
        www_authenticate: Option<&str>,
        authorizer: &dyn Authorizer,
    ) -> Result<StoredCredentials, OAuthError> {
        self.login_or_reuse(server_url, www_authenticate, authorizer, None)
            .await
    }

    /// [`login`](Self::login), unless `reuse` is given and credentials
    /// stored earlier serve (see [`start`](Self::start)).
    pub(crate) async fn login_or_reuse(
        &self,
        server_url: &str,
        www_authenticate: Option<&str>,
        authorizer: &dyn Authorizer,
        reuse: Option<Reuse<'_>>,
    ) -> Result<StoredCredentials, OAuthError> {
        let request = match self.start(server_url, www_authenticate, reuse).await? {
            Begun::Stored(creds) => return Ok(creds),
            Begun::Request(request) => request,
        };
        // However this ends (an error, a redirect for another request,
        // cancellation), the request is not left pending.
        let _forget = Forget {
            flow: self,
            state: &request.state,
        };
        let redirect = authorizer.authorize(&request).await?;
        self.finish_redirect(&redirect).await
    }

    /// Refreshes the credentials stored under `key` when the access token
    /// expires within [`REFRESH_MARGIN`], or is `rejected` (the token a
    /// server answered 401 to; if another process already replaced it, its
    /// replacement is used as it is). The refresh runs under the store's lock, so two processes do
    /// not both rotate the refresh token; a refusal with `invalid_grant`
    /// (or HTTP 200 with an `error`) deletes the tokens.
    ///
    /// # Errors
    /// [`OAuthError::LoginRequired`] when the user must log in again;
    /// otherwise the token endpoint or the store failed.
    ///
    /// # Cancel safety
    /// Not cancel safe: cancelling mid-request may lose a rotated refresh
    /// token.
    pub async fn refresh(
        &self,
        key: &CredentialKey,
        rejected: Option<&Secret>,
    ) -> Result<StoredCredentials, OAuthError> {
        refresh_stored(
            &self.inner.http,
            &self.inner.config.store,
            key,
            rejected.cloned(),
            REFRESH_MARGIN,
            self.inner.config.dpop.as_ref(),
        )
        .await
    }

    /// Removes and returns the request begun with `state`.
    ///
    /// # Errors
    /// [`OAuthError::StateMismatch`] when there is none,
    /// [`OAuthError::LoginExpired`] when it is too old.
    async fn take_pending(&self, state: &str) -> Result<PendingLogin, OAuthError> {
        let inner = &*self.inner;
        let store = inner.config.pending_store.clone();
        let wanted = state.to_owned();
        let pending = tokio::task::spawn_blocking(move || store.take(&wanted))
            .await
            .map_err(|e| OAuthError::Config(format!("store task failed: {e}")))??
            .ok_or(OAuthError::StateMismatch)?;
        let expiry = inner.config.pending_expiry;
        let age = (inner.now)()
            .duration_since(pending.begun())
            .unwrap_or(Duration::ZERO);
        if age >= expiry {
            return Err(OAuthError::LoginExpired { expiry });
        }
        Ok(pending)
    }

    /// Refuses `issuer` unless the pre-registered client secret may go
    /// there ([`OAuthConfig::expected_issuer`]); a client without a secret
    /// may use any authorization server.
    ///
    /// # Errors
    /// [`OAuthError::IssuerMismatch`] or [`OAuthError::IssuerNotNamed`].
    fn check_issuer_pinned(&self, issuer: &Url, server: &Url) -> Result<(), OAuthError> {
        let config = &self.inner.config;
        match &config.pre_registered {
            Some((_, Some(_secret))) => config
                .issuers
                .check(issuer, server)
                .map_err(OAuthError::from_grant),
            _ => Ok(()),
        }
    }

    /// The key tokens are bound to, if any ([`OAuthConfig::dpop`]).
    pub fn dpop_key(&self) -> Option<&DpopKey> {
        self.inner.config.dpop.as_ref()
    }

    async fn discover_resource(
        &self,
        server: &Url,
        challenge: Option<&Challenge>,
    ) -> Result<(ProtectedResourceMetadata, String), OAuthError> {
        for url in metadata::protected_resource_metadata_urls(server, challenge) {
            let url = self.inner.guard.check(url.as_str(), None)?;
            let Some(prm) = get_json::<ProtectedResourceMetadata>(&self.inner.http, &url).await?
            else {
                continue;
            };
            let resource = metadata::check_resource(server, &prm)?.to_owned();
            return Ok((prm, resource));
        }
        Err(OAuthError::NoResourceMetadata {
            server: shown(server),
        })
    }

    async fn discover_server(
        &self,
        issuer: &Url,
    ) -> Result<AuthorizationServerMetadata, OAuthError> {
        for url in metadata::authorization_server_metadata_urls(issuer) {
            let url = self.inner.guard.check(url.as_str(), Some(issuer))?;
            if let Some(asm) =
                get_json::<AuthorizationServerMetadata>(&self.inner.http, &url).await?
            {
                metadata::check_issuer(issuer, &asm)?;
                return Ok(asm);
            }
        }
        Err(OAuthError::NoServerMetadata {
            issuer: shown(issuer),
        })
    }

    /// Where the server's authorization lives: its protected resource
    /// metadata and the first authorization server it names, or — for a
    /// 2025-03-26 server, which publishes no resource metadata — the
    /// authorization server at its origin (its metadata, else the default
    /// `/authorize`, `/token` and `/register`).
    async fn discover(
        &self,
        server: &Url,
        challenge: Option<&Challenge>,
    ) -> Result<Discovered, OAuthError> {
        let guard = &self.inner.guard;
        match self.discover_resource(server, challenge).await {
            Ok((prm, resource)) => {
                let issuer_text = prm
                    .authorization_servers
                    .as_deref()
                    .and_then(|s| s.first())
                    .ok_or_else(|| OAuthError::NoResourceMetadata {
                        server: shown(server),
                    })?;
                let issuer = guard.check(issuer_text, None)?;
                // Before any request to it: an unexpected authorization
                // server is not even asked for its metadata.
                self.check_issuer_pinned(&issuer, server)?;
                let asm = self.discover_server(&issuer).await?;
                metadata::require_pkce_s256(&asm)?;
                Ok(Discovered {
                    prm: Some(prm),
                    resource,
                    issuer,
                    asm,
                    defaults: false,
                })
            }
            Err(OAuthError::NoResourceMetadata { .. }) => {
                let legacy = metadata::legacy_2025_03_26_endpoints(server);
                let url = guard.check(legacy.metadata.as_str(), Some(&legacy.base))?;
                let found = get_json::<AuthorizationServerMetadata>(&self.inner.http, &url).await?;
                let (asm, defaults) = match found {
                    Some(asm) => {
                        // 2025-03-26 names no issuer beforehand: the document
                        // at the server's origin is the server's own, and its
                        // issuer may add a path (`…/oauth`), never another origin.
                        let same_origin = Url::parse(&asm.issuer)
                            .is_ok_and(|i| i.origin() == legacy.base.origin());
                        if !same_origin {
                            metadata::check_issuer(&legacy.base, &asm)?;
                        }
                        metadata::require_pkce_s256(&asm)?;
                        (asm, false)
                    }
                    None => {
                        let asm = serde_json::from_value(serde_json::json!({
                            "issuer": legacy.base.as_str(),
                            "authorization_endpoint": legacy.authorization_endpoint.as_str(),
                            "token_endpoint": legacy.token_endpoint.as_str(),
                            "registration_endpoint": legacy.registration_endpoint.as_str(),
                        }))
                        .map_err(|e| OAuthError::Config(format!("default endpoints: {e}")))?;
                        (asm, true)
                    }
                };
                // The issuer is the server's own origin (or a path on it):
                // the metadata request above carried nothing, the token
                // request will carry the secret.
                let issuer = Url::parse(&asm.issuer).map_err(|e| OAuthError::BadResponse {
                    url: shown(&url),
                    status: 200,
                    detail: format!("the issuer is not a URL: {e}"),
                })?;
                self.check_issuer_pinned(&issuer, server)?;
                Ok(Discovered {
                    prm: None,
                    resource: server.as_str().to_owned(),
                    issuer: legacy.base,
                    asm,
                    defaults,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// The client to use, in the order: pre-registered, stored
    /// registration, Client ID Metadata Document, dynamic registration.
    async fn client_for(
        &self,
        asm: &AuthorizationServerMetadata,
        issuer: &Url,
        stored: Option<&StoredCredentials>,
        defaults: bool,
        server: &Url,
    ) -> Result<ClientRegistration, OAuthError> {
        let config = &self.inner.config;
        if let Some((id, secret)) = &config.pre_registered {
            return Ok(ClientRegistration {
                id: id.clone(),
                secret: secret.clone(),
                method: None,
            });
        }
        if let Some(s) = stored {
            return Ok(ClientRegistration {
                id: s.client_id.clone(),
                secret: s.client_secret.clone(),
                method: s
                    .extra
                    .get(EXTRA_AUTH_METHOD)
                    .and_then(|v| v.as_str())
                    .and_then(TokenAuthMethod::parse),
            });
        }
        if let Some(url) = &config.client_metadata_url
            && asm.client_id_metadata_document_supported == Some(true)
        {
            return Ok(ClientRegistration {
                id: url.clone(),
                secret: None,
                method: Some(TokenAuthMethod::None),
            });
        }
        let Some(endpoint) = &asm.registration_endpoint else {
            return Err(OAuthError::RegistrationRequired {
                issuer: asm.issuer.clone(),
            });
        };
        let endpoint = self.inner.guard.check(endpoint, Some(issuer))?;
        let redirect = Url::parse(&config.redirect_uri)
            .map_err(|e| OAuthError::Config(format!("redirect_uri: {e}")))?;
        // RFC 8252: a loopback or private-scheme redirect is a native app.
        let native = redirect.scheme() != "https"
            || matches!(
                redirect.host_str(),
                Some("localhost" | "127.0.0.1" | "[::1]")
            );
        // A public client where the server allows one; otherwise a method
        // the server lists (RFC 7591 §2).
        let supported = asm.token_endpoint_auth_methods_supported.as_deref();
        let requested = match supported {
            Some(methods) if !methods.iter().any(|m| m == "none") => methods
                .iter()
                .find_map(|m| TokenAuthMethod::parse(m))
                .unwrap_or(TokenAuthMethod::None),
            _ => TokenAuthMethod::None,
        };
        let body = serde_json::json!({
            "client_name": config.client_name,
            "redirect_uris": [config.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": requested.as_str(),
            "application_type": if native { "native" } else { "web" },
        });
        let response = self
            .inner
            .http
            .post(endpoint.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(http_error(&endpoint))?;
        let status = response.status().as_u16();
        let bytes = grant::read_body(response, &endpoint)
            .await
            .map_err(OAuthError::from_grant)?;
        if defaults && matches!(status, 404 | 405) {
            // Neither resource metadata, nor metadata at the origin, nor a
            // registration endpoint: the server does not do OAuth.
            return Err(OAuthError::NoResourceMetadata {
                server: shown(server),
            });
        }
        if !(200..300).contains(&status) {
            return Err(bad(
                &endpoint,
                status,
                "dynamic client registration refused",
            ));
        }
        #[derive(Deserialize)]
        struct Registered {
            client_id: String,
            client_secret: Option<String>,
            token_endpoint_auth_method: Option<String>,
        }
        let reg: Registered = serde_json::from_slice(&bytes).map_err(|e| {
            bad(
                &endpoint,
                status,
                &format!("bad registration response: {e}"),
            )
        })?;
        let secret = reg.client_secret.map(Secret::new);
        // The server may grant another method than the one asked for; a
        // secret-based one needs the secret it issued.
        let method = reg
            .token_endpoint_auth_method
            .as_deref()
            .and_then(TokenAuthMethod::parse)
            .filter(|m| *m == TokenAuthMethod::None || secret.is_some());
        Ok(ClientRegistration {
            id: reg.client_id,
            secret,
            method,
        })
    }
}

/// What [`OAuthFlow::start`] did.
pub(crate) enum Begun {
    /// Credentials stored earlier serve.
    Stored(StoredCredentials),
    /// The user has to authorize.
    Request(AuthorizationRequest),
}

/// Stored credentials may serve instead of a new authorization.
#[derive(Clone, Copy)]
pub(crate) struct Reuse<'a> {
    /// The access token the server refused, never offered again.
    pub(crate) refused: Option<&'a Secret>,
}

/// The query of a redirect back from the authorization server.
struct AuthorizationResponse {
    code: Option<String>,
    state: Option<String>,
    iss: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

impl AuthorizationResponse {
    fn parse(redirect: &Url) -> Self {
        let mut response = Self {
            code: None,
            state: None,
            iss: None,
            error: None,
            error_description: None,
        };
        for (name, value) in redirect.query_pairs() {
            let slot = match name.as_ref() {
                "code" => &mut response.code,
                "state" => &mut response.state,
                "iss" => &mut response.iss,
                "error" => &mut response.error,
                "error_description" => &mut response.error_description,
                _ => continue,
            };
            // The first of a repeated parameter, as most servers read it.
            slot.get_or_insert_with(|| value.into_owned());
        }
        response
    }
}

/// Removes a pending request when dropped.
struct Forget<'a> {
    flow: &'a OAuthFlow,
    state: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let _ = self.flow.inner.config.pending_store.take(self.state);
    }
}

/// What discovery found for a server.
struct Discovered {
    /// The protected resource metadata (none for a 2025-03-26 server).
    prm: Option<ProtectedResourceMetadata>,
    /// The `resource` to send, exactly as the metadata writes it.
    resource: String,
    /// The issuer the metadata was looked up for.
    issuer: Url,
    asm: AuthorizationServerMetadata,
    /// No metadata at all: the 2025-03-26 default endpoints.
    defaults: bool,
}

/// The client id to authorize as, its secret, and the token endpoint auth
/// method the registration settled (`None`: choose from the metadata).
struct ClientRegistration {
    id: String,
    secret: Option<Secret>,
    method: Option<TokenAuthMethod>,
}

/// Refreshes the credentials stored under `key`, under the store's lock so
/// that two processes do not both rotate the refresh token. Nothing is
/// done while the stored access token is valid for more than `margin` and
/// is not the `rejected` one. Returns the credentials now stored.
///
/// A refresh refused with `invalid_grant` — or answered with HTTP 200 and
/// an `error` (some servers send `{"error":"invalid_refresh_token"}`) —
/// deletes the tokens and reports [`OAuthError::LoginRequired`].
///
/// # Errors
/// [`OAuthError::LoginRequired`] when there is nothing usable to refresh
/// with; otherwise the token endpoint or the store failed.
///
/// # Cancel safety
/// Not cancel safe: cancelling mid-request may lose a rotated refresh
/// token (the store keeps the old one).
async fn refresh_stored(
    http: &reqwest::Client,
    store: &Arc<dyn CredentialStore>,
    key: &CredentialKey,
    rejected: Option<Secret>,
    margin: Duration,
    dpop: Option<&DpopKey>,
) -> Result<StoredCredentials, OAuthError> {
    let store = store.clone();
    let key = key.clone();
    let http = http.clone();
    let dpop = dpop.cloned();
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let mut outcome: Result<(), OAuthError> = Ok(());
        let stored = store.update(&key, &mut |current| {
            let mut creds = current?;
            let fresh = creds.access_token.is_some()
                && creds
                    .expires_at
                    .is_none_or(|at| at > SystemTime::now() + margin);
            let force = rejected.is_some() && creds.access_token == rejected;
            if fresh && !force {
                return Some(creds);
            }
            match handle.block_on(refresh_once(&http, &creds, dpop.as_ref())) {
                Ok(token) => {
                    store_token(&mut creds, token, None);
                    Some(creds)
                }
                Err(RefreshFailed::ClientUnknown) => {
                    // The registration itself is dead: forget it, so that
                    // the next login registers again.
                    outcome = Err(OAuthError::LoginRequired);
                    None
                }
                Err(RefreshFailed::Other(e)) => {
                    if e.is_login_required() {
                        creds.access_token = None;
                        creds.refresh_token = None;
                        creds.expires_at = None;
                    }
                    outcome = Err(e);
                    Some(creds)
                }
            }
        })?;
        outcome?;
        stored
            .filter(|c| c.access_token.is_some())
            .ok_or(OAuthError::LoginRequired)
    })
    .await
    .map_err(|e| OAuthError::Config(format!("refresh task failed: {e}")))?
}

/// Why a refresh failed.
enum RefreshFailed {
    /// The token endpoint no longer knows the client (`invalid_client`).
    ClientUnknown,
    /// Anything else; [`OAuthError::LoginRequired`] when the refresh token
    /// is missing or was refused.
    Other(OAuthError),
}

async fn refresh_once(
    http: &reqwest::Client,
    creds: &StoredCredentials,
    dpop: Option<&DpopKey>,
) -> Result<TokenSet, RefreshFailed> {
    let login_required = || RefreshFailed::Other(OAuthError::LoginRequired);
    let refresh = creds.refresh_token.as_ref().ok_or_else(login_required)?;
    let endpoint = creds
        .extra
        .get(EXTRA_TOKEN_ENDPOINT)
        .and_then(|v| v.as_str())
        .and_then(|s| Url::parse(s).ok())
        .ok_or_else(login_required)?;
    let method = creds
        .extra
        .get(EXTRA_AUTH_METHOD)
        .and_then(|v| v.as_str())
        .and_then(TokenAuthMethod::parse)
        .unwrap_or(TokenAuthMethod::None);
    let form = [
        ("grant_type", "refresh_token".to_owned()),
        ("refresh_token", refresh.expose().to_owned()),
        ("resource", creds.resource.clone()),
    ];
    let auth = method.client_auth(&creds.client_id, creds.client_secret.as_ref());
    match grant::token_request(http, &endpoint, &auth, &creds.issuer, &form, dpop)
        .await
        .map_err(OAuthError::from_grant)
    {
        Err(OAuthError::TokenRefused { error, .. }) if error == "invalid_client" => {
            Err(RefreshFailed::ClientUnknown)
        }
        Err(OAuthError::TokenRefused { error, .. })
            if matches!(
                error.as_str(),
                "invalid_grant" | "invalid_refresh_token" | "invalid_token" | "unauthorized_client"
            ) =>
        {
            Err(login_required())
        }
        other => other.map_err(RefreshFailed::Other),
    }
}

/// Keeps what a token endpoint issued in `creds`; `requested` is the
/// scope asked for, kept when the answer names none.
fn store_token(creds: &mut StoredCredentials, token: TokenSet, requested: Option<&str>) {
    creds.access_token = Some(token.access_token);
    creds.token_type = Some(token.token_type);
    creds.expires_at = token.expires_at;
    creds.received_at = Some(SystemTime::now());
    // A refresh response without a refresh token keeps the old one.
    if let Some(refresh) = token.refresh_token {
        creds.refresh_token = Some(refresh);
    }
    if let Some(scope) = token.scope.as_deref().or(requested) {
        creds.scopes = scope.split_ascii_whitespace().map(str::to_owned).collect();
    }
}

/// The challenge that speaks for the server's authorization: its
/// `Bearer` one, else its `DPoP` one (a DPoP-only server has no other).
pub(crate) fn auth_challenge(www_authenticate: &str) -> Option<Challenge> {
    let mut challenges = metadata::parse_www_authenticate(www_authenticate);
    let i = challenges
        .iter()
        .position(Challenge::is_bearer)
        .or_else(|| {
            challenges
                .iter()
                .position(|c| c.scheme.eq_ignore_ascii_case(dpop::SCHEME))
        })?;
    Some(challenges.swap_remove(i))
}

/// GETs a JSON document; `None` for a 4xx (not there: try the next URL).
async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &Url,
) -> Result<Option<T>, OAuthError> {
    grant::get_json(http, url)
        .await
        .map_err(OAuthError::from_grant)
}

async fn load(
    store: &Arc<dyn CredentialStore>,
    key: &CredentialKey,
) -> Result<Option<StoredCredentials>, OAuthError> {
    let store = store.clone();
    let key = key.clone();
    tokio::task::spawn_blocking(move || store.load(&key))
        .await
        .map_err(|e| OAuthError::Config(format!("store task failed: {e}")))?
        .map_err(OAuthError::from)
}

fn http_error(url: &Url) -> impl FnOnce(reqwest::Error) -> OAuthError + '_ {
    move |source| OAuthError::Http {
        url: shown(url),
        source: source.without_url(),
    }
}

fn bad(url: &Url, status: u16, detail: &str) -> OAuthError {
    OAuthError::BadResponse {
        url: shown(url),
        status,
        detail: detail.to_owned(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use base64::Engine as _;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;
    use tokio_util::task::AbortOnDropHandle;

    use super::*;
    use crate::store::FileStore;

    /// One request the stub saw.
    #[derive(Debug, Clone)]
    pub(crate) struct Seen {
        method: String,
        target: String,
        head: String,
        body: String,
    }

    type Routes = Arc<Mutex<HashMap<String, (u16, String)>>>;

    /// A loopback HTTP/1.1 server answering each path (query ignored) with
    /// a fixed status and JSON body, 404 otherwise.
    pub(crate) struct Stub {
        pub(crate) base: String,
        routes: Routes,
        seen: Arc<Mutex<Vec<Seen>>>,
        _task: AbortOnDropHandle<()>,
    }

    impl Stub {
        pub(crate) async fn start() -> Self {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            let routes: Routes = Arc::default();
            let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
            let (r, s) = (routes.clone(), seen.clone());
            let task = tokio::spawn(async move {
                let mut conns = tokio::task::JoinSet::new();
                loop {
                    let (mut sock, _) = listener.accept().await.unwrap();
                    let (r, s) = (r.clone(), s.clone());
                    conns.spawn(async move {
                        let mut buf = Vec::new();
                        let mut chunk = [0u8; 4096];
                        let head_end = loop {
                            let n = sock.read(&mut chunk).await.unwrap();
                            if n == 0 {
                                return;
                            }
                            buf.extend_from_slice(&chunk[..n]);
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                        let len = head
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().unwrap())
                            })
                            .unwrap_or(0);
                        while buf.len() < head_end + len {
                            let n = sock.read(&mut chunk).await.unwrap();
                            buf.extend_from_slice(&chunk[..n]);
                        }
                        let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
                        let mut first = head.split_whitespace();
                        let method = first.next().unwrap().to_owned();
                        let target = first.next().unwrap().to_owned();
                        let path = target.split('?').next().unwrap().to_owned();
                        s.lock().unwrap().push(Seen {
                            method,
                            target,
                            head,
                            body,
                        });
                        let (status, body) = r
                            .lock()
                            .unwrap()
                            .get(&path)
                            .cloned()
                            .unwrap_or((404, "{}".into()));
                        let response = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = sock.write_all(response.as_bytes()).await;
                    });
                }
            });
            Self {
                base,
                routes,
                seen,
                _task: AbortOnDropHandle::new(task),
            }
        }

        pub(crate) fn route(&self, path: &str, status: u16, body: serde_json::Value) {
            self.routes
                .lock()
                .unwrap()
                .insert(path.into(), (status, body.to_string()));
        }

        pub(crate) fn seen(&self) -> Vec<Seen> {
            self.seen.lock().unwrap().clone()
        }

        pub(crate) fn paths(&self) -> Vec<String> {
            self.seen().into_iter().map(|s| s.target).collect()
        }

        /// A complete server: resource metadata at the root, an issuer
        /// at `/as` with PKCE, registration and token endpoints.
        pub(crate) fn standard(&self) {
            let b = &self.base;
            self.route(
                "/.well-known/oauth-protected-resource",
                200,
                serde_json::json!({
                    "resource": format!("{b}/mcp"),
                    "authorization_servers": [format!("{b}/as")],
                    "scopes_supported": ["read"],
                }),
            );
            self.route(
                "/.well-known/oauth-authorization-server/as",
                200,
                self.as_metadata(),
            );
            self.route(
                "/register",
                201,
                serde_json::json!({"client_id": "dyn-client"}),
            );
        }

        pub(crate) fn as_metadata(&self) -> serde_json::Value {
            let b = &self.base;
            serde_json::json!({
                "issuer": format!("{b}/as"),
                "authorization_endpoint": format!("{b}/authorize"),
                "token_endpoint": format!("{b}/token"),
                "registration_endpoint": format!("{b}/register"),
                "code_challenge_methods_supported": ["S256"],
                "scopes_supported": ["read", "write", "offline_access"],
                "authorization_response_iss_parameter_supported": true,
            })
        }
    }

    pub(crate) struct TempDir(std::path::PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    pub(crate) fn temp_store() -> (TempDir, Arc<dyn CredentialStore>) {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "switchboard-flow-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let store = Arc::new(FileStore::new(dir.join("credentials.json")));
        (TempDir(dir), store)
    }

    pub(crate) fn flow(store: Arc<dyn CredentialStore>) -> OAuthFlow {
        OAuthFlow::new(
            OAuthConfig::new("test", "http://127.0.0.1:1/callback", store)
                .allow_http_loopback(true),
        )
        .unwrap()
    }

    pub(crate) fn query(url: &Url) -> HashMap<String, String> {
        url.query_pairs().into_owned().collect()
    }

    pub(crate) fn form(body: &str) -> HashMap<String, String> {
        url::form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect()
    }

    #[tokio::test]
    async fn discovery_follows_the_spec_order_with_fallback() {
        let stub = Stub::start().await;
        stub.standard();
        // The issuer's first well-known URL is missing: OIDC path-inserted next.
        stub.routes
            .lock()
            .unwrap()
            .remove("/.well-known/oauth-authorization-server/as");
        stub.route(
            "/.well-known/openid-configuration/as",
            200,
            stub.as_metadata(),
        );
        let (_dir, store) = temp_store();
        let header = format!(
            r#"Bearer resource_metadata="{}/stale-prm", scope="read""#,
            stub.base
        );
        flow(store)
            .begin(&format!("{}/mcp", stub.base), Some(&header))
            .await
            .unwrap();
        assert_eq!(
            stub.paths(),
            [
                "/stale-prm",
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-authorization-server/as",
                "/.well-known/openid-configuration/as",
                "/register",
            ]
        );
        let register = &stub.seen()[5];
        assert_eq!(register.method, "POST");
        let reg: serde_json::Value = serde_json::from_str(&register.body).unwrap();
        assert_eq!(reg["application_type"], "native");
        assert_eq!(reg["redirect_uris"][0], "http://127.0.0.1:1/callback");
    }

    #[tokio::test]
    async fn issuer_mismatch_is_refused() {
        let stub = Stub::start().await;
        stub.standard();
        let mut asm = stub.as_metadata();
        asm["issuer"] = "https://evil.example/as".into();
        stub.route("/.well-known/oauth-authorization-server/as", 200, asm);
        let (_dir, store) = temp_store();
        let err = flow(store)
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                OAuthError::Metadata(MetadataError::IssuerMismatch { .. })
            ),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn missing_pkce_is_refused() {
        let stub = Stub::start().await;
        stub.standard();
        let mut asm = stub.as_metadata();
        asm.as_object_mut()
            .unwrap()
            .remove("code_challenge_methods_supported");
        stub.route("/.well-known/oauth-authorization-server/as", 200, asm);
        let (_dir, store) = temp_store();
        let err = flow(store)
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                OAuthError::Metadata(MetadataError::PkceUnsupported { .. })
            ),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn non_loopback_http_metadata_is_refused() {
        let stub = Stub::start().await;
        stub.standard();
        let mut asm = stub.as_metadata();
        asm["token_endpoint"] = "http://auth.example/token".into();
        stub.route("/.well-known/oauth-authorization-server/as", 200, asm);
        let (_dir, store) = temp_store();
        let err = flow(store)
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::Ssrf(_)), "{err:?}");
    }

    #[tokio::test]
    async fn authorization_url_carries_pkce_state_resource_and_scope() {
        let stub = Stub::start().await;
        stub.standard();
        let (_dir, store) = temp_store();
        let header = r#"Bearer error="insufficient_scope", scope="write""#;
        let request = flow(store)
            .begin(&format!("{}/mcp", stub.base), Some(header))
            .await
            .unwrap();
        assert_eq!(request.authorization_url.path(), "/authorize");
        let q = query(&request.authorization_url);
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["client_id"], "dyn-client");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["code_challenge"].len(), 43);
        assert_eq!(q["state"], request.state);
        assert_eq!(q["resource"], format!("{}/mcp", stub.base));
        assert_eq!(q["scope"], "write offline_access");
    }

    #[tokio::test]
    async fn pre_registered_client_skips_registration() {
        let stub = Stub::start().await;
        stub.standard();
        let (_dir, store) = temp_store();
        let flow = OAuthFlow::new(
            OAuthConfig::new("test", "http://127.0.0.1:1/callback", store)
                .allow_http_loopback(true)
                .pre_registered("pre", Some(Secret::new("s3cret")))
                .expected_issuer(format!("{}/as", stub.base)),
        )
        .unwrap();
        let request = flow
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap();
        assert_eq!(query(&request.authorization_url)["client_id"], "pre");
        assert!(!stub.paths().iter().any(|p| p == "/register"));
        // The default token endpoint auth method is client_secret_basic.
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at", "token_type": "Bearer"}),
        );
        flow.finish("code", &request.state, Some(&request.issuer))
            .await
            .unwrap();
        let token = stub.seen().pop().unwrap();
        let expected = base64::engine::general_purpose::STANDARD.encode("pre:s3cret");
        assert!(
            token.head.to_ascii_lowercase().contains(&format!(
                "authorization: basic {}",
                expected.to_ascii_lowercase()
            )),
            "{}",
            token.head
        );
        assert!(!form(&token.body).contains_key("client_secret"));
    }

    /// A resource server whose metadata names `foreign`'s `/as` issuer,
    /// and `foreign` a complete authorization server.
    async fn server_naming(foreign: &Stub) -> Stub {
        let resource = Stub::start().await;
        resource.route(
            "/.well-known/oauth-protected-resource",
            200,
            serde_json::json!({
                "resource": format!("{}/mcp", resource.base),
                "authorization_servers": [format!("{}/as", foreign.base)],
            }),
        );
        foreign.standard();
        foreign.route(
            "/token",
            200,
            serde_json::json!({"access_token": "stolen", "token_type": "Bearer"}),
        );
        resource
    }

    fn with_secret(store: Arc<dyn CredentialStore>) -> OAuthConfig {
        OAuthConfig::new("test", "http://127.0.0.1:1/callback", store)
            .allow_http_loopback(true)
            .pre_registered("pre", Some(Secret::new("s3cret")))
    }

    #[tokio::test]
    async fn a_pre_registered_secret_never_reaches_another_issuer() {
        let foreign = Stub::start().await;
        let resource = server_naming(&foreign).await;
        let (_dir, store) = temp_store();
        let flow =
            OAuthFlow::new(with_secret(store).expected_issuer("https://auth.example.com")).unwrap();
        let err = flow
            .login(
                &format!("{}/mcp", resource.base),
                None,
                &RedirectAgent::new().unwrap(),
            )
            .await
            .unwrap_err();
        let found = format!("{}/as", foreign.base);
        assert!(
            matches!(&err, OAuthError::IssuerMismatch { expected, found: f, .. }
                if expected == &["https://auth.example.com/"] && f == &found),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains("https://auth.example.com/") && text.contains(&found),
            "{text}"
        );
        assert!(foreign.seen().is_empty(), "{:?}", foreign.paths());
        assert_eq!(pending_count(&flow), 0);
    }

    #[tokio::test]
    async fn a_secret_without_an_expected_issuer_goes_nowhere_but_registration_still_works() {
        let foreign = Stub::start().await;
        let resource = server_naming(&foreign).await;
        let server = format!("{}/mcp", resource.base);
        let (_dir, store) = temp_store();
        let err = OAuthFlow::new(with_secret(store.clone()))
            .unwrap()
            .begin(&server, None)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, OAuthError::IssuerNotNamed { found, .. } if found == &format!("{}/as", foreign.base)),
            "{err:?}"
        );
        assert!(foreign.seen().is_empty(), "{:?}", foreign.paths());

        // A client without a secret registers with whatever issuer the
        // server names, as before.
        let request = flow(store).begin(&server, None).await.unwrap();
        assert_eq!(request.issuer, format!("{}/as", foreign.base));
        assert!(foreign.paths().iter().any(|p| p == "/register"));
    }

    #[tokio::test]
    async fn a_2025_03_26_server_is_held_to_the_expected_issuer_too() {
        let stub = Stub::start().await;
        // No resource metadata: the issuer is the server's own origin.
        stub.route("/token", 200, serde_json::json!({"access_token": "stolen"}));
        let (_dir, store) = temp_store();
        let flow =
            OAuthFlow::new(with_secret(store).expected_issuer("https://auth.example.com")).unwrap();
        let err = flow
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::IssuerMismatch { .. }), "{err:?}");
        assert!(
            !stub
                .paths()
                .iter()
                .any(|p| p == "/token" || p == "/authorize"),
            "{:?}",
            stub.paths()
        );
    }

    #[tokio::test]
    async fn client_metadata_document_comes_before_dynamic_registration() {
        let stub = Stub::start().await;
        stub.standard();
        let cimd = "https://app.example/client.json";
        let mut asm = stub.as_metadata();
        asm["client_id_metadata_document_supported"] = true.into();
        stub.route("/.well-known/oauth-authorization-server/as", 200, asm);
        let (_dir, store) = temp_store();
        let flow = OAuthFlow::new(
            OAuthConfig::new("test", "http://127.0.0.1:1/callback", store)
                .allow_http_loopback(true)
                .client_metadata_url(cimd),
        )
        .unwrap();
        let request = flow
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap();
        assert_eq!(query(&request.authorization_url)["client_id"], cimd);
        assert!(!stub.paths().iter().any(|p| p == "/register"));
    }

    #[tokio::test]
    async fn no_way_to_register_asks_for_a_client_id() {
        let stub = Stub::start().await;
        stub.standard();
        let mut asm = stub.as_metadata();
        asm.as_object_mut().unwrap().remove("registration_endpoint");
        stub.route("/.well-known/oauth-authorization-server/as", 200, asm);
        let (_dir, store) = temp_store();
        let err = flow(store)
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap_err();
        assert!(
            matches!(err, OAuthError::RegistrationRequired { .. }),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn client_secret_post_when_basic_is_not_supported() {
        let stub = Stub::start().await;
        stub.standard();
        let mut asm = stub.as_metadata();
        asm["token_endpoint_auth_methods_supported"] = serde_json::json!(["client_secret_post"]);
        stub.route("/.well-known/oauth-authorization-server/as", 200, asm);
        stub.route("/token", 200, serde_json::json!({"access_token": "at"}));
        let (_dir, store) = temp_store();
        let flow = OAuthFlow::new(
            OAuthConfig::new("test", "http://127.0.0.1:1/callback", store)
                .allow_http_loopback(true)
                .pre_registered("pre", Some(Secret::new("s3cret")))
                .expected_issuer(format!("{}/as", stub.base)),
        )
        .unwrap();
        let request = flow
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap();
        flow.finish("code", &request.state, Some(&request.issuer))
            .await
            .unwrap();
        let token = stub.seen().pop().unwrap();
        let f = form(&token.body);
        assert_eq!(f["client_id"], "pre");
        assert_eq!(f["client_secret"], "s3cret");
        assert!(!token.head.to_ascii_lowercase().contains("authorization:"));
    }

    #[tokio::test]
    async fn finish_refuses_wrong_state_and_wrong_iss() {
        let stub = Stub::start().await;
        stub.standard();
        let (_dir, store) = temp_store();
        let flow = flow(store);
        let server = format!("{}/mcp", stub.base);
        let request = flow.begin(&server, None).await.unwrap();
        let err = flow
            .finish("code", "forged", Some(&request.issuer))
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::StateMismatch), "{err:?}");

        let err = flow
            .finish("code", &request.state, Some("https://evil.example"))
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::IssMismatch { .. }), "{err:?}");

        // The server promised `iss`: its absence is refused too.
        let request = flow.begin(&server, None).await.unwrap();
        let err = flow.finish("code", &request.state, None).await.unwrap_err();
        assert!(
            matches!(err, OAuthError::IssMismatch { found: None, .. }),
            "{err:?}"
        );
        assert!(!stub.paths().iter().any(|p| p == "/token"));
    }

    #[tokio::test]
    async fn code_exchange_sends_the_pkce_verifier_and_stores_tokens() {
        let stub = Stub::start().await;
        stub.standard();
        stub.route(
            "/token",
            200,
            serde_json::json!({
                "access_token": "at1", "token_type": "Bearer", "expires_in": 3600,
                "refresh_token": "rt1", "scope": "read offline_access",
            }),
        );
        let (_dir, store) = temp_store();
        let flow = flow(store.clone());
        let request = flow
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap();
        let challenge = query(&request.authorization_url)["code_challenge"].clone();
        let creds = flow
            .finish("the-code", &request.state, Some(&request.issuer))
            .await
            .unwrap();
        let token = stub.seen().pop().unwrap();
        assert_eq!(token.target, "/token");
        let f = form(&token.body);
        assert_eq!(f["grant_type"], "authorization_code");
        assert_eq!(f["code"], "the-code");
        assert_eq!(f["client_id"], "dyn-client");
        assert_eq!(f["resource"], format!("{}/mcp", stub.base));
        // The server's check (RFC 7636 §4.6), written out here rather than
        // through `pkce`, so that it also checks `pkce`.
        let sha256 =
            aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, f["code_verifier"].as_bytes());
        assert_eq!(
            base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, sha256),
            challenge
        );
        assert_eq!(creds.access_token.as_ref().unwrap().expose(), "at1");
        let stored = store.load(&creds.key()).unwrap().unwrap();
        assert_eq!(stored.refresh_token.unwrap().expose(), "rt1");
        assert_eq!(stored.scopes, ["read", "offline_access"]);
        // A second `finish` with the same state is refused: state is single-use.
        let err = flow
            .finish("the-code", &request.state, Some(&request.issuer))
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::StateMismatch));
    }

    /// A user agent that comes straight back with a code, recording what
    /// it was asked.
    #[derive(Default)]
    pub(crate) struct Redirects {
        /// `iss` to send instead of the request's issuer (`Some(None)`: none).
        pub(crate) iss: Option<Option<String>>,
        /// Fail instead of coming back.
        pub(crate) fail: bool,
        /// The authorization URLs seen.
        pub(crate) seen: Mutex<Vec<Url>>,
    }

    impl Redirects {
        pub(crate) fn count(&self) -> usize {
            self.seen.lock().unwrap().len()
        }

        pub(crate) fn scopes(&self) -> Vec<Option<String>> {
            self.seen
                .lock()
                .unwrap()
                .iter()
                .map(|u| query(u).get("scope").cloned())
                .collect()
        }
    }

    impl Authorizer for Redirects {
        fn authorize<'a>(
            &'a self,
            request: &'a AuthorizationRequest,
        ) -> BoxFuture<'a, Result<Url, OAuthError>> {
            self.seen
                .lock()
                .unwrap()
                .push(request.authorization_url.clone());
            let mut url = Url::parse("http://127.0.0.1:1/callback").unwrap();
            url.query_pairs_mut()
                .append_pair("code", "the-code")
                .append_pair("state", &request.state);
            match &self.iss {
                None => {
                    url.query_pairs_mut().append_pair("iss", &request.issuer);
                }
                Some(Some(iss)) => {
                    url.query_pairs_mut().append_pair("iss", iss);
                }
                Some(None) => {}
            }
            let fail = self.fail;
            Box::pin(async move {
                if fail {
                    Err(OAuthError::Interaction("the browser was closed".into()))
                } else {
                    Ok(url)
                }
            })
        }
    }

    /// A clock a test moves by hand.
    #[derive(Clone)]
    struct Clock(Arc<Mutex<SystemTime>>);

    impl Clock {
        fn advance(&self, by: Duration) {
            *self.0.lock().unwrap() += by;
        }
    }

    /// `config`'s flow, its pending logins aging by the clock returned.
    fn flow_with_clock(config: OAuthConfig) -> (OAuthFlow, Clock) {
        let clock = Clock(Arc::new(Mutex::new(SystemTime::now())));
        let mut flow = OAuthFlow::new(config).unwrap();
        let read = clock.clone();
        Arc::get_mut(&mut flow.inner).unwrap().now = Arc::new(move || *read.0.lock().unwrap());
        (flow, clock)
    }

    #[tokio::test]
    async fn a_pending_login_expires_after_ten_minutes_by_default() {
        let stub = Stub::start().await;
        stub.standard();
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at", "token_type": "Bearer"}),
        );
        let server = format!("{}/mcp", stub.base);
        let (_dir, store) = temp_store();
        let config = OAuthConfig::new("test", "http://127.0.0.1:1/callback", store)
            .allow_http_loopback(true);
        assert_eq!(config.pending_expiry, Duration::from_secs(600));
        let (flow, clock) = flow_with_clock(config);

        let late = flow.begin(&server, None).await.unwrap();
        clock.advance(PENDING_LOGIN_EXPIRY);
        let err = flow
            .finish("code", &late.state, Some(&late.issuer))
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::LoginExpired { .. }), "{err:?}");
        assert!(err.to_string().contains("start it again"), "{err}");
        // The expired request is gone, not left to be finished later.
        assert_eq!(pending_count(&flow), 0);
        assert!(!stub.paths().iter().any(|p| p == "/token"));

        // Just inside the limit it still finishes.
        let on_time = flow.begin(&server, None).await.unwrap();
        clock.advance(PENDING_LOGIN_EXPIRY - Duration::from_secs(1));
        flow.finish("code", &on_time.state, Some(&on_time.issuer))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn the_expiry_is_configurable_and_old_logins_are_dropped() {
        let stub = Stub::start().await;
        stub.standard();
        let server = format!("{}/mcp", stub.base);
        let (_dir, store) = temp_store();
        let (flow, clock) = flow_with_clock(
            OAuthConfig::new("test", "http://127.0.0.1:1/callback", store)
                .allow_http_loopback(true)
                .pending_login_expiry(Duration::from_secs(30)),
        );
        let abandoned = flow.begin(&server, None).await.unwrap();
        clock.advance(Duration::from_secs(30));
        let redirect = Url::parse(&format!(
            "http://127.0.0.1:1/callback?error=access_denied&state={}",
            abandoned.state
        ))
        .unwrap();
        let err = flow.finish_redirect(&redirect).await.unwrap_err();
        assert!(
            matches!(err, OAuthError::LoginExpired { expiry } if expiry == Duration::from_secs(30)),
            "{err:?}"
        );

        // Beginning a login drops the expired ones it finds.
        let _first = flow.begin(&server, None).await.unwrap();
        clock.advance(Duration::from_secs(31));
        let _second = flow.begin(&server, None).await.unwrap();
        assert_eq!(pending_count(&flow), 1);
    }

    fn pending_count(flow: &OAuthFlow) -> usize {
        flow.inner.config.pending_store.count().unwrap()
    }

    #[tokio::test]
    async fn login_runs_the_authorizer_between_begin_and_finish() {
        let stub = Stub::start().await;
        stub.standard();
        stub.route("/token", 200, serde_json::json!({"access_token": "at1"}));
        let (_dir, store) = temp_store();
        let flow = flow(store.clone());
        let redirects = Redirects::default();
        let creds = flow
            .login(&format!("{}/mcp", stub.base), None, &redirects)
            .await
            .unwrap();
        assert_eq!(redirects.count(), 1);
        assert_eq!(creds.access_token.as_ref().unwrap().expose(), "at1");
        assert_eq!(creds.client_id, "dyn-client");
        let token = stub.seen().pop().unwrap();
        assert_eq!(token.target, "/token");
        assert_eq!(form(&token.body)["code"], "the-code");
        assert!(store.load(&creds.key()).unwrap().is_some());
        assert_eq!(pending_count(&flow), 0);
    }

    #[tokio::test]
    async fn a_failed_authorizer_leaves_nothing_pending() {
        let stub = Stub::start().await;
        stub.standard();
        let (_dir, store) = temp_store();
        let flow = flow(store);
        let redirects = Redirects {
            fail: true,
            ..Redirects::default()
        };
        let err = flow
            .login(&format!("{}/mcp", stub.base), None, &redirects)
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::Interaction(_)), "{err:?}");
        assert_eq!(pending_count(&flow), 0);
        assert!(!stub.paths().iter().any(|p| p == "/token"));
    }

    #[tokio::test]
    async fn finish_redirect_reads_errors_and_refuses_what_is_unusable() {
        let stub = Stub::start().await;
        stub.standard();
        stub.route("/token", 200, serde_json::json!({"access_token": "at1"}));
        let (_dir, store) = temp_store();
        let flow = flow(store);
        let server = format!("{}/mcp", stub.base);
        let callback =
            |query: &str| Url::parse(&format!("http://127.0.0.1:1/callback?{query}")).unwrap();

        // The user declined: the request ends, its state is used up.
        let request = flow.begin(&server, None).await.unwrap();
        let err = flow
            .finish_redirect(&callback(&format!(
                "error=access_denied&error_description=no&state={}",
                request.state
            )))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, OAuthError::AuthorizationDenied { error, .. } if error == "access_denied"),
            "{err:?}"
        );
        assert!(err.to_string().contains("access_denied (no)"), "{err}");
        assert_eq!(pending_count(&flow), 0);

        // A forged error for a state never issued ends nothing.
        let request = flow.begin(&server, None).await.unwrap();
        let err = flow
            .finish_redirect(&callback("error=access_denied&state=forged"))
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::StateMismatch), "{err:?}");
        assert_eq!(pending_count(&flow), 1);

        // Neither code nor error.
        let err = flow
            .finish_redirect(&callback(&format!("state={}", request.state)))
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::InvalidRedirect { .. }), "{err:?}");

        // No state at all.
        let err = flow.finish_redirect(&callback("code=c")).await.unwrap_err();
        assert!(matches!(err, OAuthError::StateMismatch), "{err:?}");
        assert!(!stub.paths().iter().any(|p| p == "/token"));

        let request = flow.begin(&server, None).await.unwrap();
        let creds = flow
            .finish_redirect(&callback(&format!(
                "code=c&state={}&iss={}",
                request.state,
                url::form_urlencoded::byte_serialize(request.issuer.as_bytes()).collect::<String>()
            )))
            .await
            .unwrap();
        assert_eq!(creds.access_token.unwrap().expose(), "at1");
    }

    #[tokio::test]
    async fn iss_is_compared_as_a_string_even_when_not_advertised() {
        let stub = Stub::start().await;
        stub.standard();
        let mut asm = stub.as_metadata();
        asm.as_object_mut()
            .unwrap()
            .remove("authorization_response_iss_parameter_supported");
        stub.route("/.well-known/oauth-authorization-server/as", 200, asm);
        stub.route("/token", 200, serde_json::json!({"access_token": "at1"}));
        let (_dir, store) = temp_store();
        let flow = flow(store);
        let server = format!("{}/mcp", stub.base);
        let issuer = format!("{}/as", stub.base);
        for wrong in ["https://evil.example.com".to_owned(), format!("{issuer}/")] {
            let redirects = Redirects {
                iss: Some(Some(wrong.clone())),
                ..Redirects::default()
            };
            let err = flow.login(&server, None, &redirects).await.unwrap_err();
            assert!(
                matches!(&err, OAuthError::IssMismatch { found: Some(f), .. } if *f == wrong),
                "{err:?}"
            );
        }
        assert!(!stub.paths().iter().any(|p| p == "/token"));
        // Not advertised and not sent: accepted.
        let redirects = Redirects {
            iss: Some(None),
            ..Redirects::default()
        };
        flow.login(&server, None, &redirects).await.unwrap();
    }

    #[tokio::test]
    async fn registration_asks_for_a_supported_method_and_uses_the_one_granted() {
        let stub = Stub::start().await;
        stub.standard();
        let mut asm = stub.as_metadata();
        asm["token_endpoint_auth_methods_supported"] = serde_json::json!(["client_secret_post"]);
        stub.route("/.well-known/oauth-authorization-server/as", 200, asm);
        stub.route(
            "/register",
            201,
            serde_json::json!({
                "client_id": "dyn", "client_secret": "dyn-secret",
                "token_endpoint_auth_method": "client_secret_post",
            }),
        );
        stub.route("/token", 200, serde_json::json!({"access_token": "at1"}));
        let (_dir, store) = temp_store();
        let flow = flow(store);
        flow.login(&format!("{}/mcp", stub.base), None, &Redirects::default())
            .await
            .unwrap();
        let seen = stub.seen();
        let register = seen.iter().find(|s| s.target == "/register").unwrap();
        let body: serde_json::Value = serde_json::from_str(&register.body).unwrap();
        assert_eq!(body["token_endpoint_auth_method"], "client_secret_post");
        let token = seen.last().unwrap();
        let f = form(&token.body);
        assert_eq!(f["client_id"], "dyn");
        assert_eq!(f["client_secret"], "dyn-secret");
        assert!(!token.head.to_ascii_lowercase().contains("authorization:"));
    }

    #[tokio::test]
    async fn a_public_registration_sends_no_secret() {
        let stub = Stub::start().await;
        stub.standard();
        let mut asm = stub.as_metadata();
        asm["token_endpoint_auth_methods_supported"] = serde_json::json!(["none"]);
        stub.route("/.well-known/oauth-authorization-server/as", 200, asm);
        // A server that hands out a secret anyway, but grants `none`.
        stub.route(
            "/register",
            201,
            serde_json::json!({
                "client_id": "dyn", "client_secret": "unused",
                "token_endpoint_auth_method": "none",
            }),
        );
        stub.route("/token", 200, serde_json::json!({"access_token": "at1"}));
        let (_dir, store) = temp_store();
        let flow = flow(store);
        flow.login(&format!("{}/mcp", stub.base), None, &Redirects::default())
            .await
            .unwrap();
        let seen = stub.seen();
        let register = seen.iter().find(|s| s.target == "/register").unwrap();
        let body: serde_json::Value = serde_json::from_str(&register.body).unwrap();
        assert_eq!(body["token_endpoint_auth_method"], "none");
        let token = seen.last().unwrap();
        let f = form(&token.body);
        assert_eq!(f["client_id"], "dyn");
        assert!(!f.contains_key("client_secret"));
        assert!(!token.head.to_ascii_lowercase().contains("authorization:"));
    }

    #[tokio::test]
    async fn a_2025_03_26_server_has_its_metadata_at_the_origin() {
        let stub = Stub::start().await;
        let b = stub.base.clone();
        // No resource metadata; the authorization server lives under /oauth
        // and names itself so.
        stub.route(
            "/.well-known/oauth-authorization-server",
            200,
            serde_json::json!({
                "issuer": format!("{b}/oauth"),
                "authorization_endpoint": format!("{b}/oauth/authorize"),
                "token_endpoint": format!("{b}/oauth/token"),
                "registration_endpoint": format!("{b}/oauth/register"),
                "code_challenge_methods_supported": ["S256"],
            }),
        );
        stub.route(
            "/oauth/register",
            201,
            serde_json::json!({"client_id": "legacy"}),
        );
        stub.route(
            "/oauth/token",
            200,
            serde_json::json!({"access_token": "at1"}),
        );
        let (_dir, store) = temp_store();
        let flow = flow(store);
        let redirects = Redirects::default();
        let creds = flow
            .login(&format!("{b}/mcp"), None, &redirects)
            .await
            .unwrap();
        assert_eq!(creds.issuer, format!("{b}/oauth"));
        assert_eq!(redirects.seen.lock().unwrap()[0].path(), "/oauth/authorize");
        assert_eq!(
            stub.paths(),
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-authorization-server",
                "/oauth/register",
                "/oauth/token",
            ]
        );
    }

    #[tokio::test]
    async fn a_2025_03_26_server_without_metadata_gets_the_default_endpoints() {
        let stub = Stub::start().await;
        let b = stub.base.clone();
        stub.route(
            "/register",
            201,
            serde_json::json!({"client_id": "legacy", "client_secret": "s"}),
        );
        stub.route("/token", 200, serde_json::json!({"access_token": "at1"}));
        let (_dir, store) = temp_store();
        let flow = flow(store);
        // Without metadata there is no issuer to compare an `iss` with.
        let redirects = Redirects {
            iss: Some(Some("https://whatever.example".into())),
            ..Redirects::default()
        };
        let creds = flow
            .login(&format!("{b}/mcp"), None, &redirects)
            .await
            .unwrap();
        let url = redirects.seen.lock().unwrap()[0].clone();
        assert_eq!(url.path(), "/authorize");
        assert_eq!(query(&url)["code_challenge_method"], "S256");
        assert_eq!(creds.client_id, "legacy");
        let token = stub.seen().pop().unwrap();
        assert_eq!(token.target, "/token");
        // No metadata: RFC 8414's default method for a client with a secret.
        assert!(
            token
                .head
                .to_ascii_lowercase()
                .contains("authorization: basic")
        );
    }

    #[tokio::test]
    async fn a_server_without_any_oauth_is_reported_as_such() {
        let stub = Stub::start().await;
        let (_dir, store) = temp_store();
        let err = flow(store)
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap_err();
        assert!(
            matches!(err, OAuthError::NoResourceMetadata { .. }),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn a_2025_03_26_metadata_naming_another_origin_is_refused() {
        let stub = Stub::start().await;
        let b = stub.base.clone();
        stub.route(
            "/.well-known/oauth-authorization-server",
            200,
            serde_json::json!({
                "issuer": "https://attacker.example.com",
                "authorization_endpoint": format!("{b}/authorize"),
                "token_endpoint": format!("{b}/token"),
                "code_challenge_methods_supported": ["S256"],
            }),
        );
        let (_dir, store) = temp_store();
        let err = flow(store)
            .begin(&format!("{b}/mcp"), None)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                OAuthError::Metadata(MetadataError::IssuerMismatch { .. })
            ),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn endpoints_on_another_host_need_the_allow_list() {
        let stub = Stub::start().await;
        stub.standard();
        let mut asm = stub.as_metadata();
        asm["authorization_endpoint"] = "https://login.example.com/authorize".into();
        stub.route("/.well-known/oauth-authorization-server/as", 200, asm);
        let server = format!("{}/mcp", stub.base);
        let (_dir, store) = temp_store();
        let err = flow(store.clone()).begin(&server, None).await.unwrap_err();
        assert!(
            matches!(err, OAuthError::Ssrf(SsrfError::HostNotAllowed { .. })),
            "{err:?}"
        );
        let allowed = OAuthFlow::new(
            OAuthConfig::new("test", "http://127.0.0.1:1/callback", store.clone())
                .allow_http_loopback(true)
                .allow_hosts(["login.example.com".to_owned()]),
        )
        .unwrap();
        let request = allowed.begin(&server, None).await.unwrap();
        assert_eq!(
            request.authorization_url.host_str(),
            Some("login.example.com")
        );
        let bad = OAuthFlow::new(
            OAuthConfig::new("test", "http://127.0.0.1:1/callback", store)
                .allow_hosts(["https://login.example.com/".to_owned()]),
        )
        .unwrap_err();
        assert!(
            matches!(bad, OAuthError::Ssrf(SsrfError::BadAllowHost { .. })),
            "{bad:?}"
        );
    }

    #[tokio::test]
    async fn a_refresh_refused_with_invalid_client_forgets_the_registration() {
        let stub = Stub::start().await;
        let (_dir, store, flow, key) = logged_in(&stub).await;
        stub.route(
            "/token",
            401,
            serde_json::json!({"error": "invalid_client", "error_description": "unknown client"}),
        );
        let err = flow
            .refresh(&key, Some(&Secret::new("at1")))
            .await
            .unwrap_err();
        assert!(err.is_login_required(), "{err:?}");
        assert!(
            store.load(&key).unwrap().is_none(),
            "the dead registration is gone"
        );
        // The next login registers again instead of presenting it.
        let before = stub.paths().iter().filter(|p| *p == "/register").count();
        flow.begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap();
        let after = stub.paths().iter().filter(|p| *p == "/register").count();
        assert_eq!(after, before + 1);
    }

    #[tokio::test]
    async fn a_refresh_refused_with_an_error_object_means_log_in_again() {
        let stub = Stub::start().await;
        let (_dir, store, flow, key) = logged_in(&stub).await;
        stub.route(
            "/token",
            200,
            serde_json::json!({"error": {"code": "invalid_refresh_token", "message": "expired"}}),
        );
        let err = flow
            .refresh(&key, Some(&Secret::new("at1")))
            .await
            .unwrap_err();
        assert!(err.is_login_required(), "{err:?}");
        let stored = store.load(&key).unwrap().unwrap();
        assert!(stored.refresh_token.is_none() && stored.access_token.is_none());
    }

    #[tokio::test]
    async fn stored_credentials_are_refreshed_before_they_are_offered() {
        let stub = Stub::start().await;
        let (_dir, store, flow, key) = logged_in(&stub).await;
        let server = format!("{}/mcp", stub.base);
        let expire = || {
            store
                .update(&key, &mut |c| {
                    let mut c = c?;
                    c.expires_at = Some(SystemTime::now() - Duration::from_secs(1));
                    Some(c)
                })
                .unwrap();
        };
        let reuse = Some(Reuse { refused: None });
        expire();
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at2", "expires_in": 3600}),
        );
        match flow.start(&server, None, reuse).await.unwrap() {
            Begun::Stored(creds) => assert_eq!(creds.access_token.unwrap().expose(), "at2"),
            Begun::Request(_) => panic!("a refreshable login was not reused"),
        }
        // The refresh is refused: the user is asked, with the registration kept.
        expire();
        stub.route("/token", 200, serde_json::json!({"error": "invalid_grant"}));
        match flow.start(&server, None, reuse).await.unwrap() {
            Begun::Request(request) => {
                assert_eq!(query(&request.authorization_url)["client_id"], "dyn-client");
            }
            Begun::Stored(_) => panic!("a dead login was offered"),
        }
    }

    pub(crate) async fn logged_in(
        stub: &Stub,
    ) -> (TempDir, Arc<dyn CredentialStore>, OAuthFlow, CredentialKey) {
        stub.standard();
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at1", "expires_in": 3600, "refresh_token": "rt1"}),
        );
        let (dir, store) = temp_store();
        let flow = flow(store.clone());
        let request = flow
            .begin(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap();
        let creds = flow
            .finish("c", &request.state, Some(&request.issuer))
            .await
            .unwrap();
        (dir, store, flow, creds.key())
    }

    #[tokio::test]
    async fn refresh_rotates_and_stores_the_refresh_token() {
        let stub = Stub::start().await;
        let (_dir, store, flow, key) = logged_in(&stub).await;
        // Not expiring: nothing is sent.
        let before = stub.seen().len();
        flow.refresh(&key, None).await.unwrap();
        assert_eq!(stub.seen().len(), before);

        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at2", "expires_in": 3600, "refresh_token": "rt2"}),
        );
        let creds = flow.refresh(&key, Some(&Secret::new("at1"))).await.unwrap();
        assert_eq!(creds.access_token.unwrap().expose(), "at2");
        let sent = form(&stub.seen().pop().unwrap().body);
        assert_eq!(sent["grant_type"], "refresh_token");
        assert_eq!(sent["refresh_token"], "rt1");
        assert_eq!(sent["resource"], format!("{}/mcp", stub.base));
        let stored = store.load(&key).unwrap().unwrap();
        assert_eq!(stored.refresh_token.unwrap().expose(), "rt2");
        assert_eq!(stored.access_token.unwrap().expose(), "at2");
    }

    #[tokio::test]
    async fn refresh_answered_200_with_an_error_means_log_in_again() {
        let stub = Stub::start().await;
        let (_dir, store, flow, key) = logged_in(&stub).await;
        stub.route(
            "/token",
            200,
            serde_json::json!({"error": "invalid_refresh_token"}),
        );
        let err = flow
            .refresh(&key, Some(&Secret::new("at1")))
            .await
            .unwrap_err();
        assert!(err.is_login_required(), "{err:?}");
        let stored = store.load(&key).unwrap().unwrap();
        assert!(stored.refresh_token.is_none() && stored.access_token.is_none());
        assert_eq!(stored.client_id, "dyn-client");
    }

    /// Comes back with the query `answer` writes for the request.
    struct Answer(fn(&AuthorizationRequest) -> String);

    impl Authorizer for Answer {
        fn authorize<'a>(
            &'a self,
            request: &'a AuthorizationRequest,
        ) -> BoxFuture<'a, Result<Url, OAuthError>> {
            let back = format!("http://127.0.0.1:1/callback?{}", (self.0)(request));
            Box::pin(async move { Ok(Url::parse(&back).unwrap()) })
        }
    }

    #[tokio::test]
    async fn a_login_refuses_a_forged_state_another_issuer_and_an_error() {
        let stub = Stub::start().await;
        stub.standard();
        stub.route("/token", 200, serde_json::json!({"access_token": "at1"}));
        let (_dir, store) = temp_store();
        let flow = flow(store);
        let server = format!("{}/mcp", stub.base);
        type Expected = fn(&OAuthError) -> bool;
        let cases: [(Answer, Expected); 4] = [
            (Answer(|_| "code=c&state=forged".into()), |e| {
                matches!(e, OAuthError::StateMismatch)
            }),
            (
                Answer(|r| format!("code=c&state={}&iss=https%3A%2F%2Fevil.example", r.state)),
                |e| matches!(e, OAuthError::IssMismatch { found: Some(_), .. }),
            ),
            // The server promised `iss`.
            (Answer(|r| format!("code=c&state={}", r.state)), |e| {
                matches!(e, OAuthError::IssMismatch { found: None, .. })
            }),
            (
                Answer(|r| format!("error=access_denied&error_description=no&state={}", r.state)),
                |e| matches!(e, OAuthError::AuthorizationDenied { error, .. } if error == "access_denied"),
            ),
        ];
        for (answer, expected) in cases {
            let err = flow.login(&server, None, &answer).await.unwrap_err();
            assert!(expected(&err), "{err:?}");
            assert_eq!(pending_count(&flow), 0);
        }
        assert!(
            !stub.paths().iter().any(|p| p == "/token"),
            "no code exchange"
        );
        // The same flow still logs in with an honest answer.
        let honest = Answer(|r| {
            let iss: String = url::form_urlencoded::byte_serialize(r.issuer.as_bytes()).collect();
            format!("code=c&state={}&iss={iss}", r.state)
        });
        let creds = flow.login(&server, None, &honest).await.unwrap();
        assert_eq!(creds.access_token.unwrap().expose(), "at1");
    }

    #[tokio::test]
    async fn the_redirect_agent_returns_where_the_authorization_endpoint_points() {
        use crate::grant::tests::Stub as Replies;

        let stub = Replies::start().await;
        stub.reply(
            "/authorize",
            302,
            vec![("location", "/callback?code=c&state=s".into())],
            serde_json::json!({}),
        );
        let request = |path: &str| AuthorizationRequest {
            authorization_url: Url::parse(&format!("{}{path}?client_id=x", stub.base)).unwrap(),
            state: "s".into(),
            issuer: stub.base.clone(),
            resource: format!("{}/mcp", stub.base),
            scope: None,
        };
        let agent = RedirectAgent::new().unwrap();
        let back = agent.authorize(&request("/authorize")).await.unwrap();
        assert_eq!(
            back.as_str(),
            format!("{}/callback?code=c&state=s", stub.base)
        );

        // No redirect: a user is needed, which this agent cannot be.
        let err = agent.authorize(&request("/elsewhere")).await.unwrap_err();
        assert!(matches!(err, OAuthError::Interaction(_)), "{err:?}");
        assert!(
            std::error::Error::source(&err)
                .unwrap()
                .to_string()
                .contains("404 Not Found without redirecting back"),
            "{err}"
        );
    }
}
