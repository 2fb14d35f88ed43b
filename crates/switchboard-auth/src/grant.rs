//! Grants a client runs without a user at the keyboard — client
//! credentials ([`super::client_credentials`]), JWT bearer for workload
//! identity ([`super::jwt_bearer`]), enterprise-managed authorization
//! ([`super::enterprise`]) — and what they share: discovery of the
//! server's authorization server, token requests with client
//! authentication (`client_secret_basic`, `client_secret_post`,
//! `private_key_jwt`, none) and DPoP, and [`GrantProvider`], which makes
//! any [`Grant`] the HTTP transport's [`AuthProvider`]. The token request
//! itself also serves the authorization code flow ([`super::flow`]).
//!
//! One file: what the grants share — discovery, client authentication,
//! DPoP, the token request — is most of it.
//!
//! ```no_run
//! use std::sync::Arc;
//! use switchboard_auth::client_credentials::ClientCredentials;
//! use switchboard_auth::grant::{ClientAuth, GrantProvider};
//! use switchboard_auth::store::Secret;
//! use switchboard::transport::http::HttpConfig;
//! # fn main() -> Result<(), switchboard_auth::grant::GrantError> {
//! let grant = ClientCredentials::new(ClientAuth::SecretBasic {
//!     client_id: "my-service".into(),
//!     secret: Secret::new("from-the-vault"),
//! });
//! let provider = GrantProvider::builder("https://mcp.example.com/mcp", grant)
//!     .expected_issuer("https://auth.example.com")
//!     .build()?;
//! let config = HttpConfig::new("https://mcp.example.com/mcp").auth(Arc::new(provider));
//! # let _ = config; Ok(()) }
//! ```
//!
//! The provider obtains a token when the server first answers 401 (its
//! `WWW-Authenticate` names the resource metadata), again when the token
//! nears expiry, and at most [`MAX_REGRANTS`] more times when a server
//! refuses a token. A grant the authorization server refuses is not tried
//! again until [`GrantProvider::reset`]: the refusal is
//! [`GrantProvider::last_error`].

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde::Deserialize;
use switchboard::transport::BoxFuture;
use switchboard::transport::http::{AuthProvider, RequestCredentials};
use url::Url;

use crate::dpop::{self, DpopKey};
use crate::jwt::{self, JwtError, JwtSigner};
use crate::metadata::{
    self, AuthorizationServerMetadata, Challenge, MetadataError, ProtectedResourceMetadata,
};
use crate::resolve::GuardedResolver;
use crate::ssrf::{SsrfError, UrlGuard};
use crate::store::Secret;

/// Largest metadata or token response read.
const MAX_RESPONSE: usize = 1024 * 1024;
/// Per request to an authorization server or metadata URL.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long before expiry a token is replaced.
pub const RENEW_MARGIN: Duration = Duration::from_secs(30);
/// How many times a refused token is replaced by a new grant before the
/// provider gives up (until [`GrantProvider::reset`]).
pub const MAX_REGRANTS: u32 = 3;

/// `grant_type` of the JWT bearer grant (RFC 7523 §2.1).
pub const GRANT_JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of token exchange (RFC 8693 §2.1).
pub const GRANT_TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// How the client authenticates at a token endpoint.
#[derive(Clone)]
#[non_exhaustive]
pub enum ClientAuth {
    /// A public client: `client_id` in the form, no secret.
    None {
        /// The client id.
        client_id: String,
    },
    /// No client authentication and no `client_id` (grants whose assertion
    /// identifies the client, as workload identity's may).
    Anonymous,
    /// HTTP Basic with the form-urlencoded id and secret (RFC 6749 §2.3.1).
    SecretBasic {
        /// The client id.
        client_id: String,
        /// The client secret.
        secret: Secret,
    },
    /// Id and secret in the form body.
    SecretPost {
        /// The client id.
        client_id: String,
        /// The client secret.
        secret: Secret,
    },
    /// A signed client assertion (`private_key_jwt`, RFC 7523 §2.2) with
    /// `aud` the authorization server's issuer.
    PrivateKeyJwt {
        /// The client id (`iss` and `sub` of the assertion).
        client_id: String,
        /// The client's private key.
        key: Arc<JwtSigner>,
    },
}

impl fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (method, id) = match self {
            Self::None { client_id } => ("none", Some(client_id)),
            Self::Anonymous => ("anonymous", None),
            Self::SecretBasic { client_id, .. } => ("client_secret_basic", Some(client_id)),
            Self::SecretPost { client_id, .. } => ("client_secret_post", Some(client_id)),
            Self::PrivateKeyJwt { client_id, .. } => ("private_key_jwt", Some(client_id)),
        };
        f.debug_struct("ClientAuth")
            .field("method", &method)
            .field("client_id", &id)
            .finish_non_exhaustive()
    }
}

impl ClientAuth {
    /// The client id, if this method sends one.
    pub fn client_id(&self) -> Option<&str> {
        match self {
            Self::Anonymous => None,
            Self::None { client_id }
            | Self::SecretBasic { client_id, .. }
            | Self::SecretPost { client_id, .. }
            | Self::PrivateKeyJwt { client_id, .. } => Some(client_id),
        }
    }

    /// Adds the credentials to a token request; `audience` is the
    /// authorization server's issuer (the assertion's `aud`).
    fn apply(
        &self,
        request: reqwest::RequestBuilder,
        form: &mut Vec<(&'static str, String)>,
        audience: &str,
    ) -> Result<reqwest::RequestBuilder, GrantError> {
        Ok(match self {
            Self::Anonymous => request,
            Self::None { client_id } => {
                form.push(("client_id", client_id.clone()));
                request
            }
            Self::SecretBasic { client_id, secret } => {
                request.header(reqwest::header::AUTHORIZATION, basic(client_id, secret))
            }
            Self::SecretPost { client_id, secret } => {
                form.push(("client_id", client_id.clone()));
                form.push(("client_secret", secret.expose().to_owned()));
                request
            }
            Self::PrivateKeyJwt { client_id, key } => {
                form.push(("client_id", client_id.clone()));
                form.push(("client_assertion_type", jwt::CLIENT_ASSERTION_TYPE.into()));
                form.push((
                    "client_assertion",
                    jwt::client_assertion(key, client_id, audience)?,
                ));
                request
            }
        })
    }
}

/// `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1).
fn basic(client_id: &str, secret: &Secret) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", enc(client_id), enc(secret.expose()));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// What a token endpoint issued.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TokenSet {
    /// The token (`access_token`; for token exchange, the issued token).
    pub access_token: Secret,
    /// `token_type`: `Bearer`, `DPoP`, or `N_A` for an exchanged token.
    pub token_type: String,
    /// When it expires, from `expires_in`.
    pub expires_at: Option<SystemTime>,
    /// The scopes granted, space-separated.
    pub scope: Option<String>,
    /// `issued_token_type` (token exchange, RFC 8693 §2.2.1).
    pub issued_token_type: Option<String>,
    /// A refresh token, if one was issued.
    pub refresh_token: Option<Secret>,
}

impl TokenSet {
    /// Whether the token is DPoP-bound (`token_type` `DPoP`): it is sent as
    /// `Authorization: DPoP …` with a proof.
    pub fn is_dpop(&self) -> bool {
        self.token_type.eq_ignore_ascii_case(dpop::TOKEN_TYPE)
    }

    fn expires_within(&self, margin: Duration) -> bool {
        self.expires_at
            .is_some_and(|at| at <= SystemTime::now() + margin)
    }
}

/// Obtaining a token failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// A setting is unusable.
    #[error("bad OAuth grant setting: {0}")]
    Config(String),
    /// A server-controlled URL was refused.
    #[error("a URL given by the server was refused")]
    Ssrf(#[from] SsrfError),
    /// A metadata document must not be used.
    #[error("the authorization metadata was refused")]
    Metadata(#[from] MetadataError),
    /// No protected resource metadata was found.
    #[error(
        "no OAuth protected resource metadata found for {server}; the server does not support MCP authorization (configure a token header instead)"
    )]
    NoResourceMetadata {
        /// The server URL, without query.
        server: String,
    },
    /// No authorization server metadata was found.
    #[error(
        "no authorization server metadata found for issuer {issuer}; check the authorization server named by {server}"
    )]
    NoServerMetadata {
        /// The issuer tried.
        issuer: String,
        /// The MCP server.
        server: String,
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
    /// A token endpoint refused the request (OAuth error code and
    /// description): check the client's credentials, assertion or scopes.
    #[error("the token endpoint {url} refused: {error}{}; {}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default(), refusal_hint(error))]
    Refused {
        /// The token endpoint, without query.
        url: String,
        /// The OAuth error code (`invalid_client`, `invalid_grant`, …).
        error: String,
        /// The server's description.
        description: Option<String>,
    },
    /// The MCP server names an authorization server that is not one of
    /// the expected issuers the credentials were configured for. Nothing
    /// was sent to it, not even a metadata request.
    #[error(
        "{server} names the authorization server {found}, but the configured credentials are for {}; nothing was sent to {found} (if it is trusted, add it as an expected issuer)",
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
    /// Credentials are configured without an expected issuer, so no
    /// authorization server is trusted with them. Nothing was sent to the
    /// one the server names.
    #[error(
        "{server} names the authorization server {found}, but no expected issuer is configured for the credentials; nothing was sent to {found} (name the issuer the credentials belong to with `expected_issuer`)"
    )]
    IssuerNotNamed {
        /// The MCP server, without query.
        server: String,
        /// The issuer the server's metadata names.
        found: String,
    },
    /// A client assertion or DPoP proof could not be signed.
    #[error("signing failed")]
    Jwt(#[from] JwtError),
    /// The workload or identity token could not be read.
    #[error("cannot read the assertion from {path}")]
    Assertion {
        /// Where it was read from.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// What to do about an OAuth error code (RFC 6749 §5.2, RFC 9449 §8).
fn refusal_hint(error: &str) -> &'static str {
    match error {
        "invalid_client" => "check the client id and its secret or key",
        "invalid_grant" => {
            "the assertion, code or refresh token is invalid or expired; obtain a new one"
        }
        "invalid_scope" => "request only scopes the authorization server allows",
        "unauthorized_client" => {
            "this client may not use this grant; ask the authorization server's administrator"
        }
        "unsupported_grant_type" => "the authorization server does not offer this grant",
        "invalid_dpop_proof" | "use_dpop_nonce" => {
            "the DPoP proof was refused; check the key and the server's nonce"
        }
        _ => "check the client's configuration for this authorization server",
    }
}

impl GrantError {
    /// The OAuth error code, when a token endpoint refused.
    pub fn oauth_error(&self) -> Option<&str> {
        match self {
            Self::Refused { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// What discovery found for an MCP server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Discovered {
    /// The MCP server's URL.
    pub server: Url,
    /// The resource (RFC 8707) tokens are for, as its metadata writes it.
    pub resource: String,
    /// The protected resource metadata.
    pub resource_metadata: ProtectedResourceMetadata,
    /// The authorization server's metadata (its `issuer` checked).
    pub metadata: AuthorizationServerMetadata,
    /// The token endpoint, checked by the URL guard.
    pub token_endpoint: Url,
    /// The scope to request when the grant has none configured: the
    /// challenge's, else the resource's `scopes_supported`.
    pub scope: Option<String>,
}

impl Discovered {
    /// The authorization server's issuer identifier (the audience of client
    /// assertions and of ID-JAGs).
    pub fn issuer(&self) -> &str {
        &self.metadata.issuer
    }
}

/// The authorization servers configured credentials may be sent to: the
/// issuers named, or any when the user said so. None by default, so
/// credentials never go to an authorization server the user did not name.
#[derive(Clone, Debug, Default)]
pub(crate) struct IssuerPins {
    named: Vec<String>,
    any: bool,
}

impl IssuerPins {
    pub(crate) fn add(&mut self, issuer: String) {
        self.named.push(issuer);
    }

    pub(crate) fn set_any(&mut self, any: bool) {
        self.any = any;
    }

    /// The first entry that is not an absolute URL, with the reason.
    pub(crate) fn first_bad(&self) -> Option<String> {
        self.named.iter().find_map(|entry| match Url::parse(entry) {
            Ok(url) if url.has_host() => None,
            Ok(_) => Some(format!("expected issuer `{entry}`: it has no host")),
            Err(e) => Some(format!("expected issuer `{entry}`: {e}")),
        })
    }

    /// Whether `found`, the issuer `server`'s metadata names, may receive
    /// the credentials. Issuers are compared as parsed URLs, so
    /// `https://as.example` and `https://as.example/` are the same one.
    ///
    /// # Errors
    /// [`GrantError::IssuerNotNamed`] when no issuer is named,
    /// [`GrantError::IssuerMismatch`] when `found` is not one of them.
    pub(crate) fn check(&self, found: &Url, server: &Url) -> Result<(), GrantError> {
        if self.any {
            return Ok(());
        }
        if self.named.is_empty() {
            return Err(GrantError::IssuerNotNamed {
                server: shown(server),
                found: shown(found),
            });
        }
        let named: Vec<Url> = self
            .named
            .iter()
            .filter_map(|n| Url::parse(n).ok())
            .collect();
        if named.iter().any(|n| n == found) {
            return Ok(());
        }
        Err(GrantError::IssuerMismatch {
            server: shown(server),
            expected: named.iter().map(shown).collect(),
            found: shown(found),
        })
    }
}

/// Token requests and discovery: a client that follows no redirect,
/// checks every server-controlled URL with the [`UrlGuard`], connects
/// only to addresses the guard allows, and discovers only authorization
/// servers its credentials are meant for
/// ([`expected_issuer`](Self::expected_issuer)).
#[derive(Clone)]
pub struct TokenClient {
    http: reqwest::Client,
    guard: UrlGuard,
    dpop: Option<DpopKey>,
    issuers: IssuerPins,
}

impl fmt::Debug for TokenClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenClient")
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

/// A token endpoint's answer (RFC 6749 §5.1, RFC 8693 §2.2).
#[derive(Deserialize)]
struct TokenResponse {
    access_token: Option<String>,
    token_type: Option<String>,
    #[serde(default, deserialize_with = "lenient_seconds")]
    expires_in: Option<u64>,
    refresh_token: Option<String>,
    scope: Option<String>,
    issued_token_type: Option<String>,
    /// A string (RFC 6749), or an object with a `code` from some servers.
    error: Option<serde_json::Value>,
    error_description: Option<serde_json::Value>,
}

/// The longest lifetime a token response can claim (one year): a larger
/// `expires_in` (`1e300`) is taken as this, so the expiry stays a time the
/// clock can hold and the token is refreshed at the latest then.
pub const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);

/// When a token that lives `seconds` from now expires, within
/// [`MAX_TOKEN_LIFETIME`].
fn expiry_after(seconds: u64) -> SystemTime {
    let now = SystemTime::now();
    let lifetime = Duration::from_secs(seconds).min(MAX_TOKEN_LIFETIME);
    now.checked_add(lifetime).unwrap_or(now)
}

/// `expires_in` as a number or, as some servers send it, a numeric
/// string; anything else is treated as absent rather than failing the
/// whole response.
fn lenient_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

impl TokenClient {
    /// A client whose guard allows plain `http` to loopback hosts when
    /// `allow_http_loopback`; token requests carry a DPoP proof when `dpop`
    /// is given. It trusts no authorization server until one is named with
    /// [`expected_issuer`](Self::expected_issuer) (or
    /// [`trust_any_issuer`](Self::trust_any_issuer)).
    ///
    /// # Errors
    /// [`GrantError::Config`] if the HTTP client cannot be built.
    pub fn new(allow_http_loopback: bool, dpop: Option<DpopKey>) -> Result<Self, GrantError> {
        let guard = UrlGuard::builder()
            .allow_http_loopback(allow_http_loopback)
            .build()?;
        let http = http_client(&guard)?;
        Ok(Self {
            http,
            guard,
            dpop,
            issuers: IssuerPins::default(),
        })
    }

    /// Adds an authorization server [`discover`](Self::discover) may
    /// return: the issuer identifier (`https://auth.example.com`) the
    /// credentials were issued by. Call again for more than one. An entry
    /// that is not a URL matches nothing.
    #[must_use]
    pub fn expected_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.add(issuer.into());
        self
    }

    /// Lets [`discover`](Self::discover) return whatever authorization
    /// server the MCP server names, so the credentials go wherever the
    /// server points. Only for servers trusted as much as the credentials
    /// (local test suites); off by default.
    #[must_use]
    pub fn trust_any_issuer(mut self, trust: bool) -> Self {
        self.issuers.set_any(trust);
        self
    }

    pub(crate) fn with_issuers(mut self, issuers: IssuerPins) -> Self {
        self.issuers = issuers;
        self
    }

    /// The DPoP key token requests are bound to, if any.
    pub fn dpop(&self) -> Option<&DpopKey> {
        self.dpop.as_ref()
    }

    /// `url` if the URL guard allows it.
    ///
    /// # Errors
    /// [`GrantError::Ssrf`] when it does not.
    pub fn check_url(&self, url: &str) -> Result<Url, GrantError> {
        Ok(self.guard.check(url, None)?)
    }

    /// `url`, an endpoint named by `target`'s authorization server
    /// metadata, if the URL guard allows it.
    ///
    /// # Errors
    /// [`GrantError::Ssrf`] when it does not.
    pub fn check_endpoint(&self, url: &str, target: &Discovered) -> Result<Url, GrantError> {
        let issuer = Url::parse(target.issuer()).ok();
        Ok(self.guard.check(url, issuer.as_ref())?)
    }

    /// POSTs a JSON document (a registration) and reads the JSON answer.
    ///
    /// # Errors
    /// The request failed, or the answer is not a 2xx `T`.
    pub async fn post_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &Url,
        body: &serde_json::Value,
    ) -> Result<T, GrantError> {
        let response = self
            .http
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(http_error(url))?;
        let status = response.status().as_u16();
        let bytes = read_body(response, url).await?;
        if !(200..300).contains(&status) {
            let preview = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
            return Err(bad(url, status, &format!("refused: {preview}")));
        }
        serde_json::from_slice(&bytes).map_err(|e| bad(url, status, &format!("bad answer: {e}")))
    }

    /// Finds the authorization server for the MCP server at `server_url`:
    /// its protected resource metadata (the challenge's `resource_metadata`
    /// first, then the well-known URLs), the resource check, the check
    /// that the issuer it names is an expected one, then the authorization
    /// server's metadata with its issuer check.
    ///
    /// # Errors
    /// [`GrantError::IssuerMismatch`] or [`GrantError::IssuerNotNamed`]
    /// when the server names an authorization server that is not expected
    /// (before any request to it); otherwise nothing usable was found, a
    /// check failed, or a request failed.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is kept.
    pub async fn discover(
        &self,
        server_url: &str,
        www_authenticate: Option<&str>,
    ) -> Result<Discovered, GrantError> {
        let server =
            Url::parse(server_url).map_err(|e| GrantError::Config(format!("server URL: {e}")))?;
        let challenges = www_authenticate
            .map(metadata::parse_www_authenticate)
            .unwrap_or_default();
        // A DPoP-only server challenges with `DPoP`, not `Bearer`.
        let challenge = challenges
            .iter()
            .find(|c| c.is_bearer())
            .or_else(|| {
                challenges
                    .iter()
                    .find(|c| c.scheme.eq_ignore_ascii_case(dpop::SCHEME))
            })
            .cloned();
        let mut found = None;
        for url in metadata::protected_resource_metadata_urls(&server, challenge.as_ref()) {
            let url = self.guard.check(url.as_str(), None)?;
            if let Some(prm) = get_json::<ProtectedResourceMetadata>(&self.http, &url).await? {
                found = Some(prm);
                break;
            }
        }
        let prm = found.ok_or_else(|| GrantError::NoResourceMetadata {
            server: shown(&server),
        })?;
        let resource = metadata::check_resource(&server, &prm)?.to_owned();
        let issuer_text = prm
            .authorization_servers
            .as_deref()
            .and_then(|s| s.first())
            .ok_or_else(|| GrantError::NoResourceMetadata {
                server: shown(&server),
            })?;
        let issuer = self.guard.check(issuer_text, None)?;
        // Before any request to it: an unexpected authorization server
        // learns nothing, not even that this client exists.
        self.issuers.check(&issuer, &server)?;
        let mut asm = None;
        for url in metadata::authorization_server_metadata_urls(&issuer) {
            let url = self.guard.check(url.as_str(), Some(&issuer))?;
            if let Some(found) = get_json::<AuthorizationServerMetadata>(&self.http, &url).await? {
                metadata::check_issuer(&issuer, &found)?;
                asm = Some(found);
                break;
            }
        }
        let asm = asm.ok_or_else(|| GrantError::NoServerMetadata {
            issuer: shown(&issuer),
            server: shown(&server),
        })?;
        let token_endpoint =
            asm.token_endpoint
                .as_deref()
                .ok_or_else(|| GrantError::BadResponse {
                    url: shown(&issuer),
                    status: 200,
                    detail: "the authorization server metadata has no token_endpoint".into(),
                })?;
        let token_endpoint = self.guard.check(token_endpoint, Some(&issuer))?;
        let scope = metadata::choose_scopes(challenge.as_ref(), Some(&prm), Some(&asm), &[], false);
        Ok(Discovered {
            server,
            resource,
            resource_metadata: prm,
            metadata: asm,
            token_endpoint,
            scope,
        })
    }

    /// POSTs a token request: `form` plus the client's credentials (a
    /// client assertion's `aud` is `audience`), with a DPoP proof when
    /// this client has a key and `dpop` is set. A `use_dpop_nonce` refusal
    /// is retried once with the server's nonce.
    ///
    /// # Errors
    /// [`GrantError::Refused`] with the server's OAuth error, or the
    /// request or response failed.
    ///
    /// # Cancel safety
    /// Cancel safe; a nonce learned is kept.
    pub async fn request(
        &self,
        endpoint: &Url,
        auth: &ClientAuth,
        audience: &str,
        form: Vec<(&'static str, String)>,
        dpop: bool,
    ) -> Result<TokenSet, GrantError> {
        let key = self.dpop.as_ref().filter(|_| dpop);
        token_request(&self.http, endpoint, auth, audience, &form, key).await
    }
}

/// GETs a JSON document through `http`; `None` for a 4xx (not there: try
/// the next URL).
pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &Url,
) -> Result<Option<T>, GrantError> {
    let response = http
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(http_error(url))?;
    let status = response.status().as_u16();
    if (400..500).contains(&status) {
        return Ok(None);
    }
    let bytes = read_body(response, url).await?;
    if status != 200 {
        return Err(bad(url, status, "unexpected status"));
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| bad(url, status, &format!("not valid metadata: {e}")))
}

/// POSTs a token request through `http`: `form` plus the client's
/// credentials (a client assertion's `aud` is `audience`), with a DPoP
/// proof when `key` is given; a `use_dpop_nonce` refusal that brings a new
/// nonce is retried once with it. An `error` in the answer is a refusal
/// whatever the status (some servers answer a failed refresh with 200), as
/// a string or as an object with a `code`.
///
/// # Errors
/// [`GrantError::Refused`] with the server's OAuth error, or the request
/// or response failed.
///
/// # Cancel safety
/// Cancel safe; a nonce learned is kept.
pub(crate) async fn token_request(
    http: &reqwest::Client,
    endpoint: &Url,
    auth: &ClientAuth,
    audience: &str,
    form: &[(&'static str, String)],
    key: Option<&DpopKey>,
) -> Result<TokenSet, GrantError> {
    let mut nonce_retried = false;
    loop {
        let mut form = form.to_vec();
        let mut request = auth.apply(http.post(endpoint.clone()), &mut form, audience)?;
        if let Some(key) = key {
            request = request.header(dpop::HEADER, key.proof("POST", endpoint.as_str(), None)?);
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let response = request
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(http_error(endpoint))?;
        let status = response.status().as_u16();
        let new_nonce = match (key, response.headers().get(dpop::NONCE_HEADER)) {
            (Some(key), Some(nonce)) => nonce
                .to_str()
                .is_ok_and(|n| key.remember_nonce(endpoint.as_str(), n)),
            _ => false,
        };
        let bytes = read_body(response, endpoint).await?;
        let token: TokenResponse = serde_json::from_slice(&bytes)
            .map_err(|e| bad(endpoint, status, &format!("not a token response: {e}")))?;
        if let Some((error, description)) = token.refusal() {
            if error == dpop::USE_DPOP_NONCE && new_nonce && !nonce_retried {
                nonce_retried = true;
                continue;
            }
            return Err(GrantError::Refused {
                url: shown(endpoint),
                error,
                description,
            });
        }
        let (true, Some(access_token)) = ((200..300).contains(&status), token.access_token) else {
            return Err(bad(endpoint, status, "no access token in the response"));
        };
        return Ok(TokenSet {
            access_token: Secret::new(access_token),
            token_type: token.token_type.unwrap_or_else(|| "Bearer".into()),
            expires_at: token.expires_in.map(expiry_after),
            scope: token.scope,
            issued_token_type: token.issued_token_type,
            refresh_token: token.refresh_token.map(Secret::new),
        });
    }
}

impl TokenResponse {
    /// The OAuth error code and description, if the answer is an error:
    /// `error` as a string, or an object with a `code` (or `error`) and a
    /// `message` (or `description`).
    fn refusal(&self) -> Option<(String, Option<String>)> {
        let error = self.error.as_ref().filter(|e| !e.is_null())?;
        let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).map(str::to_owned);
        let (code, nested) = match error {
            serde_json::Value::String(code) => (code.clone(), None),
            serde_json::Value::Object(o) => (
                text(o.get("code").or_else(|| o.get("error")))
                    .unwrap_or_else(|| "unknown_error".to_owned()),
                text(o.get("message").or_else(|| o.get("description"))),
            ),
            other => (other.to_string(), None),
        };
        Some((code, text(self.error_description.as_ref()).or(nested)))
    }
}

/// Reads a response body of at most [`MAX_RESPONSE`] bytes.
pub(crate) async fn read_body(
    mut response: reqwest::Response,
    url: &Url,
) -> Result<Vec<u8>, GrantError> {
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(http_error(url))? {
        if body.len() + chunk.len() > MAX_RESPONSE {
            return Err(bad(url, status, "response too large"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn http_error(url: &Url) -> impl FnOnce(reqwest::Error) -> GrantError + '_ {
    move |source| GrantError::Http {
        url: shown(url),
        source: source.without_url(),
    }
}

fn bad(url: &Url, status: u16, detail: &str) -> GrantError {
    GrantError::BadResponse {
        url: shown(url),
        status,
        detail: detail.to_owned(),
    }
}

/// The HTTP client for authorization servers and metadata: it follows no
/// redirect, gives each request [`REQUEST_TIMEOUT`], and connects only to
/// addresses `guard` allows (a [`GuardedResolver`] over the system
/// resolver).
pub(crate) fn http_client(guard: &UrlGuard) -> Result<reqwest::Client, GrantError> {
    http_client_resolving(guard, None)
}

/// [`http_client`], resolving names with `inner` (then the guard) instead
/// of the system resolver.
pub(crate) fn http_client_resolving(
    guard: &UrlGuard,
    inner: Option<Arc<dyn reqwest::dns::Resolve>>,
) -> Result<reqwest::Client, GrantError> {
    let resolver = match inner {
        Some(inner) => GuardedResolver::with_inner(guard.clone(), inner),
        None => GuardedResolver::new(guard.clone()),
    };
    client_builder()
        .map_err(GrantError::Config)?
        .dns_resolver(resolver)
        .build()
        .map_err(|e| GrantError::Config(format!("cannot build the HTTP client: {e}")))
}

/// A client builder with no redirects and [`REQUEST_TIMEOUT`]; resolving
/// is left to the caller. TLS is the transports' own, whose CA roots are
/// read at the first `https://` handshake: a bad `SSL_CERT_FILE` fails
/// that handshake, naming the variable, not the client's construction (nor
/// what never needs TLS).
///
/// # Errors
/// Why TLS cannot be set up, for the caller's `Config` error.
pub(crate) fn client_builder() -> Result<reqwest::ClientBuilder, String> {
    let builder = switchboard::transport::http::reqwest_builder().map_err(|e| e.to_string())?;
    Ok(builder
        .redirect(reqwest::redirect::Policy::none())
        .timeout(REQUEST_TIMEOUT))
}

/// A URL for messages: no credentials, query or fragment.
pub(crate) fn shown(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.into()
}

/// A way to obtain a token for a discovered server.
pub trait Grant: Send + Sync + fmt::Debug + 'static {
    /// Runs the grant against `target`'s authorization server through
    /// `client`.
    fn obtain<'a>(
        &'a self,
        client: &'a TokenClient,
        target: &'a Discovered,
    ) -> BoxFuture<'a, Result<TokenSet, GrantError>>;

    /// Refreshes with `refresh_token` (RFC 6749 §6), for grants that get
    /// one; `None` (the default) means obtain anew instead.
    fn refresh<'a>(
        &'a self,
        client: &'a TokenClient,
        target: &'a Discovered,
        refresh_token: &'a Secret,
    ) -> Option<BoxFuture<'a, Result<TokenSet, GrantError>>> {
        let _ = (client, target, refresh_token);
        None
    }
}

/// Any [`Grant`] as the HTTP transport's [`AuthProvider`]: discovers on
/// the first 401, runs the grant, sends the token (`Bearer`, or `DPoP`
/// with a fresh proof per request), replaces it before expiry. Cheap to
/// clone.
#[derive(Clone)]
pub struct GrantProvider {
    inner: Arc<ProviderInner>,
}

struct ProviderInner {
    server: String,
    grant: Box<dyn Grant>,
    client: TokenClient,
    /// The token sent; read on every request without waiting.
    current: Mutex<Option<Arc<TokenSet>>>,
    /// Serialises grants so concurrent 401s run one.
    state: tokio::sync::Mutex<ProviderState>,
    last_error: Mutex<Option<Arc<GrantError>>>,
    /// The last grant was refused: no more until `reset`.
    failed: AtomicBool,
    /// Grants run because a server refused a token.
    regrants: AtomicU32,
}

#[derive(Default)]
struct ProviderState {
    discovered: Option<Arc<Discovered>>,
}

impl fmt::Debug for GrantProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrantProvider")
            .field("server", &self.inner.server)
            .field("grant", &self.inner.grant)
            .field("client", &self.inner.client)
            .field("has_token", &self.current().is_some())
            .finish_non_exhaustive()
    }
}

/// Builds a [`GrantProvider`]. Setters never fail; [`build`](Self::build)
/// reports a bad setting.
#[must_use]
#[derive(Debug)]
pub struct GrantProviderBuilder {
    server: String,
    grant: Box<dyn Grant>,
    dpop: Option<DpopKey>,
    allow_http_loopback: bool,
    issuers: IssuerPins,
}

impl GrantProviderBuilder {
    /// Binds tokens to `key` (RFC 9449): token requests carry proofs, and a
    /// `DPoP` token is sent with a fresh proof per request.
    pub fn dpop(mut self, key: DpopKey) -> Self {
        self.dpop = Some(key);
        self
    }

    /// Allow plain `http` to loopback hosts (local servers, tests,
    /// conformance); off by default.
    pub fn allow_http_loopback(mut self, allow: bool) -> Self {
        self.allow_http_loopback = allow;
        self
    }

    /// The issuer identifier of the authorization server the grant's
    /// credentials (client secret, private key, assertion, ID token) were
    /// issued for, such as `https://auth.example.com`. Call again to allow
    /// more than one.
    ///
    /// The credentials go only to an expected issuer: when the MCP server's
    /// resource metadata names another, the grant fails with
    /// [`GrantError::IssuerMismatch`] before any request to it. With no
    /// expected issuer (and no [`trust_any_issuer`](Self::trust_any_issuer))
    /// every grant fails with [`GrantError::IssuerNotNamed`], which names
    /// the issuer the server asked for.
    pub fn expected_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.add(issuer.into());
        self
    }

    /// Sends the credentials to whatever authorization server the MCP
    /// server names, expected or not. A server can then steer them to a
    /// party of its choosing: only for servers trusted as much as the
    /// credentials (a local conformance suite). Off by default.
    pub fn trust_any_issuer(mut self, trust: bool) -> Self {
        self.issuers.set_any(trust);
        self
    }

    /// The provider.
    ///
    /// # Errors
    /// [`GrantError::Config`] for an unusable server URL, expected issuer
    /// or HTTP client.
    pub fn build(self) -> Result<GrantProvider, GrantError> {
        Url::parse(&self.server).map_err(|e| GrantError::Config(format!("server URL: {e}")))?;
        if let Some(bad) = self.issuers.first_bad() {
            return Err(GrantError::Config(bad));
        }
        Ok(GrantProvider {
            inner: Arc::new(ProviderInner {
                server: self.server,
                grant: self.grant,
                client: TokenClient::new(self.allow_http_loopback, self.dpop)?
                    .with_issuers(self.issuers),
                current: Mutex::new(None),
                state: tokio::sync::Mutex::new(ProviderState::default()),
                last_error: Mutex::new(None),
                failed: AtomicBool::new(false),
                regrants: AtomicU32::new(0),
            }),
        })
    }
}

impl GrantProvider {
    /// A provider for the MCP server at `server_url` that runs `grant`.
    pub fn builder(server_url: impl Into<String>, grant: impl Grant) -> GrantProviderBuilder {
        GrantProviderBuilder {
            server: server_url.into(),
            grant: Box::new(grant),
            dpop: None,
            allow_http_loopback: false,
            issuers: IssuerPins::default(),
        }
    }

    /// Obtains a token now (discovering first, from `www_authenticate` if
    /// given) instead of waiting for the server's 401.
    ///
    /// # Errors
    /// Discovery or the grant failed; the error is also
    /// [`last_error`](Self::last_error).
    ///
    /// # Cancel safety
    /// Cancel safe: the token is kept only once obtained.
    pub async fn authorize(&self, www_authenticate: Option<&str>) -> Result<(), Arc<GrantError>> {
        let mut state = self.inner.state.lock().await;
        self.run(&mut state, www_authenticate).await
    }

    /// The last failure to obtain a token, if the latest attempt failed.
    pub fn last_error(&self) -> Option<Arc<GrantError>> {
        lock(&self.inner.last_error).clone()
    }

    /// Forgets the token, the discovery and any failure: the next 401 runs
    /// the grant afresh.
    pub fn reset(&self) {
        *lock(&self.inner.current) = None;
        *lock(&self.inner.last_error) = None;
        self.inner.failed.store(false, Ordering::SeqCst);
        self.inner.regrants.store(0, Ordering::SeqCst);
        // A grant running now rediscovers anyway.
        if let Ok(mut state) = self.inner.state.try_lock() {
            *state = ProviderState::default();
        }
    }

    fn current(&self) -> Option<Arc<TokenSet>> {
        lock(&self.inner.current).clone()
    }

    async fn run(
        &self,
        state: &mut ProviderState,
        www_authenticate: Option<&str>,
    ) -> Result<(), Arc<GrantError>> {
        let inner = &*self.inner;
        let outcome = async {
            let discovered = match (&state.discovered, www_authenticate) {
                (Some(d), None) => d.clone(),
                _ => Arc::new(
                    inner
                        .client
                        .discover(&inner.server, www_authenticate)
                        .await?,
                ),
            };
            state.discovered = Some(discovered.clone());
            let refresh_token = lock(&inner.current)
                .as_ref()
                .and_then(|t| t.refresh_token.clone());
            if let Some(refresh_token) = &refresh_token
                && let Some(refresh) =
                    inner
                        .grant
                        .refresh(&inner.client, &discovered, refresh_token)
            {
                match refresh.await {
                    Ok(mut token) => {
                        // A refresh answer without a refresh token keeps the old one.
                        token.refresh_token.get_or_insert_with(|| refresh_token.clone());
                        return Ok(token);
                    }
                    Err(error) => {
                        tracing::debug!(server = %inner.server, %error, "refresh failed; running the grant again");
                    }
                }
            }
            inner.grant.obtain(&inner.client, &discovered).await
        }
        .await;
        match outcome {
            Ok(token) => {
                *lock(&inner.current) = Some(Arc::new(token));
                *lock(&inner.last_error) = None;
                inner.failed.store(false, Ordering::SeqCst);
                Ok(())
            }
            Err(error) => {
                tracing::warn!(server = %inner.server, error = %error, "OAuth grant failed");
                inner.failed.store(true, Ordering::SeqCst);
                let error = Arc::new(error);
                *lock(&inner.last_error) = Some(error.clone());
                Err(error)
            }
        }
    }

    /// The token to send, replaced first when it nears expiry.
    async fn token(&self) -> Option<Arc<TokenSet>> {
        let current = self.current()?;
        if !current.expires_within(RENEW_MARGIN) {
            return Some(current);
        }
        let mut state = self.inner.state.lock().await;
        let current = self.current()?;
        if current.expires_within(RENEW_MARGIN) && !self.inner.failed.load(Ordering::SeqCst) {
            let _ = self.run(&mut state, None).await;
        }
        let token = self.current()?;
        // An expired token is useless; one still valid is sent as it is.
        token
            .expires_at
            .is_none_or(|at| at > SystemTime::now())
            .then_some(token)
    }

    async fn on_unauthorized(&self, status: u16, www_authenticate: Option<&str>) -> bool {
        let challenges = www_authenticate
            .map(metadata::parse_www_authenticate)
            .unwrap_or_default();
        let current = self.current();
        // RFC 9449 §9: the nonce came in the same response (the transport
        // handed it over before calling here); the token is still good.
        if let (Some(key), Some(token)) = (self.inner.client.dpop(), &current)
            && token.is_dpop()
            && challenges
                .iter()
                .any(|c| c.error() == Some(dpop::USE_DPOP_NONCE))
        {
            return key.nonce_for(&self.inner.server).is_some();
        }
        let step_up = status == 403 && challenges.iter().any(Challenge::is_insufficient_scope);
        if status != 401 && !step_up {
            return false;
        }
        let mut state = self.inner.state.lock().await;
        if self.inner.failed.load(Ordering::SeqCst) {
            return false;
        }
        // Another request replaced the refused token meanwhile: use that.
        let latest = self.current();
        let replaced = match (&current, &latest) {
            (Some(a), Some(b)) => !Arc::ptr_eq(a, b),
            (None, Some(_)) => true,
            _ => false,
        };
        if replaced {
            return true;
        }
        if latest.is_some() {
            if self.inner.regrants.load(Ordering::SeqCst) >= MAX_REGRANTS {
                return false;
            }
            self.inner.regrants.fetch_add(1, Ordering::SeqCst);
        }
        self.run(&mut state, www_authenticate).await.is_ok()
    }
}

impl AuthProvider for GrantProvider {
    fn authorization(&self, _url: &str) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let token = self.token().await?;
            let scheme = if token.is_dpop() {
                dpop::SCHEME
            } else {
                "Bearer"
            };
            Some(format!("{scheme} {}", token.access_token.expose()))
        })
    }

    fn request_credentials<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, RequestCredentials> {
        Box::pin(async move {
            let Some(token) = self.token().await else {
                return RequestCredentials::default();
            };
            let key = self.inner.client.dpop().filter(|_| token.is_dpop());
            dpop::request_credentials(key, token.access_token.expose(), method, url)
        })
    }

    fn unauthorized(&self, status: u16, www_authenticate: Option<&str>) -> BoxFuture<'_, bool> {
        let www_authenticate = www_authenticate.map(str::to_owned);
        Box::pin(async move {
            self.on_unauthorized(status, www_authenticate.as_deref())
                .await
        })
    }

    fn dpop_nonce(&self, url: &str, nonce: &str) {
        if let Some(key) = self.inner.client.dpop() {
            key.remember_nonce(url, nonce);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::{HashMap, VecDeque};

    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;
    use tokio_util::task::AbortOnDropHandle;

    use super::*;
    use crate::client_credentials::ClientCredentials;
    use crate::jwt::JwtAlgorithm;
    use crate::jwt::tests::{decode, verify_es256};

    /// One request the stub saw.
    #[derive(Debug, Clone)]
    pub(crate) struct Seen {
        pub(crate) path: String,
        pub(crate) headers: HashMap<String, String>,
        pub(crate) form: HashMap<String, String>,
    }

    /// An answer: status, extra headers, JSON body.
    type Reply = (u16, Vec<(&'static str, String)>, Value);

    #[derive(Default)]
    struct Routes {
        /// Answers per path, used in order; the last one repeats.
        replies: HashMap<String, VecDeque<Reply>>,
        seen: Vec<Seen>,
    }

    /// A loopback authorization server and resource metadata host.
    pub(crate) struct Stub {
        pub(crate) base: String,
        routes: Arc<Mutex<Routes>>,
        _task: AbortOnDropHandle<()>,
    }

    impl Stub {
        pub(crate) async fn start() -> Self {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            let routes = Arc::new(Mutex::new(Routes::default()));
            let shared = routes.clone();
            let task = tokio::spawn(async move {
                loop {
                    let Ok((mut socket, _)) = listener.accept().await else {
                        return;
                    };
                    let routes = shared.clone();
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let (head, body) = loop {
                        let n = socket.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            break (String::new(), String::new());
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        let text = String::from_utf8_lossy(&buf).into_owned();
                        if let Some((head, body)) = text.split_once("\r\n\r\n") {
                            let len = head
                                .lines()
                                .find_map(|l| {
                                    let (k, v) = l.split_once(':')?;
                                    k.eq_ignore_ascii_case("content-length")
                                        .then(|| v.trim().parse::<usize>().ok())?
                                })
                                .unwrap_or(0);
                            if body.len() >= len {
                                break (head.to_owned(), body.to_owned());
                            }
                        }
                    };
                    let target = head.split(' ').nth(1).unwrap_or("/").to_owned();
                    let path = target.split('?').next().unwrap_or("/").to_owned();
                    let headers = head
                        .lines()
                        .skip(1)
                        .filter_map(|l| l.split_once(':'))
                        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                        .collect();
                    let form = url::form_urlencoded::parse(body.as_bytes())
                        .into_owned()
                        .collect();
                    let (status, extra, reply) = {
                        let mut routes = routes.lock().unwrap();
                        routes.seen.push(Seen {
                            path: path.clone(),
                            headers,
                            form,
                        });
                        match routes.replies.get_mut(&path) {
                            Some(queue) if queue.len() > 1 => queue.pop_front().unwrap(),
                            Some(queue) => queue.front().cloned().unwrap(),
                            None => (404, Vec::new(), json!({"error": "not_found"})),
                        }
                    };
                    let body = reply.to_string();
                    let mut response = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                        body.len()
                    );
                    for (name, value) in extra {
                        response.push_str(&format!("{name}: {value}\r\n"));
                    }
                    response.push_str("\r\n");
                    response.push_str(&body);
                    let _ = socket.write_all(response.as_bytes()).await;
                    let _ = socket.shutdown().await;
                }
            });
            Self {
                base,
                routes,
                _task: AbortOnDropHandle::new(task),
            }
        }

        pub(crate) fn reply(
            &self,
            path: &str,
            status: u16,
            headers: Vec<(&'static str, String)>,
            body: Value,
        ) {
            self.routes
                .lock()
                .unwrap()
                .replies
                .entry(path.to_owned())
                .or_default()
                .push_back((status, headers, body));
        }

        /// PRM at the path-aware well-known URL and RFC 8414 metadata.
        pub(crate) fn standard(&self) {
            self.reply(
                "/.well-known/oauth-protected-resource/mcp",
                200,
                Vec::new(),
                json!({"resource": format!("{}/mcp", self.base), "authorization_servers": [self.base]}),
            );
            self.reply(
                "/.well-known/oauth-authorization-server",
                200,
                Vec::new(),
                json!({
                    "issuer": self.base,
                    "token_endpoint": format!("{}/token", self.base),
                    "grant_types_supported": ["client_credentials"],
                }),
            );
        }

        /// The token endpoint answers the next request with a DPoP nonce
        /// challenge (RFC 9449 §8) carrying `nonce`.
        pub(crate) fn nonce_first(&self, nonce: &str) {
            self.reply(
                "/token",
                400,
                vec![("DPoP-Nonce", nonce.to_owned())],
                json!({"error": "use_dpop_nonce"}),
            );
        }

        pub(crate) fn token_requests(&self) -> Vec<Seen> {
            self.routes
                .lock()
                .unwrap()
                .seen
                .iter()
                .filter(|s| s.path.ends_with("/token"))
                .cloned()
                .collect()
        }

        /// Every request the stub saw, in order.
        pub(crate) fn all_requests(&self) -> Vec<Seen> {
            self.routes.lock().unwrap().seen.clone()
        }

        pub(crate) fn challenge(&self) -> String {
            format!(
                r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#,
                self.base
            )
        }
    }

    fn provider(stub: &Stub, grant: impl Grant, dpop: Option<DpopKey>) -> GrantProvider {
        let mut builder = GrantProvider::builder(format!("{}/mcp", stub.base), grant)
            .allow_http_loopback(true)
            .expected_issuer(stub.base.clone());
        if let Some(key) = dpop {
            builder = builder.dpop(key);
        }
        builder.build().unwrap()
    }

    /// A resource server whose metadata names `foreign` as its
    /// authorization server, and `foreign` ready to hand out tokens.
    async fn server_naming(foreign: &Stub) -> Stub {
        let resource = Stub::start().await;
        resource.reply(
            "/.well-known/oauth-protected-resource/mcp",
            200,
            Vec::new(),
            json!({"resource": format!("{}/mcp", resource.base), "authorization_servers": [foreign.base]}),
        );
        foreign.standard();
        foreign.reply("/token", 200, Vec::new(), json!({"access_token": "stolen"}));
        resource
    }

    fn secret_grant() -> ClientCredentials {
        ClientCredentials::new(ClientAuth::SecretPost {
            client_id: "svc".into(),
            secret: Secret::new("the-secret"),
        })
    }

    #[tokio::test]
    async fn a_secret_never_reaches_an_issuer_other_than_the_expected_one() {
        let foreign = Stub::start().await;
        let resource = server_naming(&foreign).await;
        let provider = GrantProvider::builder(format!("{}/mcp", resource.base), secret_grant())
            .allow_http_loopback(true)
            .expected_issuer("https://auth.example.com")
            .build()
            .unwrap();
        let error = provider
            .authorize(Some(&resource.challenge()))
            .await
            .unwrap_err();
        assert!(
            matches!(&*error, GrantError::IssuerMismatch { expected, found, .. }
                if expected == &["https://auth.example.com/"] && found == &format!("{}/", foreign.base)),
            "{error:?}"
        );
        let text = error.to_string();
        assert!(
            text.contains("https://auth.example.com/") && text.contains(&foreign.base),
            "{text}"
        );
        // The foreign authorization server was not contacted at all.
        assert!(
            foreign.all_requests().is_empty(),
            "{:?}",
            foreign.all_requests()
        );
        assert!(!resource.all_requests().is_empty(), "discovery ran");
    }

    #[tokio::test]
    async fn without_an_expected_issuer_a_secret_goes_nowhere() {
        let foreign = Stub::start().await;
        let resource = server_naming(&foreign).await;
        let provider = GrantProvider::builder(format!("{}/mcp", resource.base), secret_grant())
            .allow_http_loopback(true)
            .build()
            .unwrap();
        let error = provider
            .authorize(Some(&resource.challenge()))
            .await
            .unwrap_err();
        assert!(
            matches!(&*error, GrantError::IssuerNotNamed { found, .. } if found == &format!("{}/", foreign.base)),
            "{error:?}"
        );
        assert!(error.to_string().contains("expected_issuer"), "{error}");
        assert!(foreign.all_requests().is_empty());

        // Named, or trusted on purpose, the same issuer gets the grant.
        for builder in [
            GrantProvider::builder(format!("{}/mcp", resource.base), secret_grant())
                .expected_issuer(foreign.base.clone()),
            GrantProvider::builder(format!("{}/mcp", resource.base), secret_grant())
                .trust_any_issuer(true),
        ] {
            let provider = builder.allow_http_loopback(true).build().unwrap();
            provider
                .authorize(Some(&resource.challenge()))
                .await
                .unwrap();
        }
        assert_eq!(foreign.token_requests().len(), 2);
    }

    #[test]
    fn an_expected_issuer_that_is_not_a_url_is_a_bad_setting() {
        let error = GrantProvider::builder("https://mcp.example.com/mcp", secret_grant())
            .expected_issuer("auth.example.com")
            .build()
            .unwrap_err();
        assert!(
            matches!(&error, GrantError::Config(m) if m.contains("auth.example.com")),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn client_secret_basic_on_the_first_401() {
        let stub = Stub::start().await;
        stub.standard();
        stub.reply(
            "/token",
            200,
            Vec::new(),
            json!({"access_token": "cc-1", "token_type": "Bearer", "expires_in": 3600}),
        );
        let grant = ClientCredentials::new(ClientAuth::SecretBasic {
            client_id: "svc:1".into(),
            secret: Secret::new("p@ss word"),
        });
        let provider = provider(&stub, grant, None);
        assert_eq!(
            provider.authorization("x").await,
            None,
            "no token before the 401"
        );
        assert!(provider.unauthorized(401, Some(&stub.challenge())).await);
        assert_eq!(
            provider.authorization("x").await.as_deref(),
            Some("Bearer cc-1")
        );
        let creds = provider.request_credentials("POST", "x").await;
        assert_eq!(creds.authorization.as_deref(), Some("Bearer cc-1"));
        assert_eq!(creds.dpop, None, "a bearer token carries no proof");
        let requests = stub.token_requests();
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        assert_eq!(request.form["grant_type"], "client_credentials");
        assert_eq!(request.form["resource"], format!("{}/mcp", stub.base));
        assert!(!request.form.contains_key("client_secret"));
        // RFC 6749 §2.3.1: each part form-urlencoded, then Basic.
        let basic = request.headers["authorization"]
            .strip_prefix("Basic ")
            .unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic)
            .unwrap();
        assert_eq!(String::from_utf8(decoded).unwrap(), "svc%3A1:p%40ss+word");
        assert!(
            !format!("{provider:?}").contains("cc-1"),
            "Debug hides the token"
        );
    }

    #[tokio::test]
    async fn private_key_jwt_assertions_are_for_the_issuer() {
        let stub = Stub::start().await;
        stub.standard();
        stub.reply("/token", 200, Vec::new(), json!({"access_token": "cc-2"}));
        let key = Arc::new(JwtSigner::generate(JwtAlgorithm::Es256).unwrap());
        let grant = ClientCredentials::new(ClientAuth::PrivateKeyJwt {
            client_id: "svc".into(),
            key: key.clone(),
        })
        .scopes(["read".to_owned(), "write".to_owned()]);
        let provider = provider(&stub, grant, None);
        provider.authorize(None).await.unwrap();
        let request = &stub.token_requests()[0];
        assert_eq!(
            request.form["client_assertion_type"],
            jwt::CLIENT_ASSERTION_TYPE
        );
        assert_eq!(request.form["scope"], "read write");
        assert!(!request.headers.contains_key("authorization"));
        let assertion = &request.form["client_assertion"];
        assert!(verify_es256(assertion, &key.public_jwk()));
        let claims = jwt::unverified_claims(assertion).unwrap();
        assert_eq!(claims["aud"], stub.base.as_str());
        assert_eq!(claims["iss"], "svc");
        assert_eq!(claims["sub"], "svc");
    }

    #[tokio::test]
    async fn dpop_tokens_follow_the_token_endpoint_nonce() {
        let stub = Stub::start().await;
        stub.standard();
        stub.nonce_first("as-nonce");
        stub.reply(
            "/token",
            200,
            Vec::new(),
            json!({"access_token": "bound", "token_type": "DPoP"}),
        );
        let key = DpopKey::generate().unwrap();
        let grant = ClientCredentials::new(ClientAuth::None {
            client_id: "c".into(),
        });
        let provider = provider(&stub, grant, Some(key.clone()));
        provider.authorize(None).await.unwrap();
        let requests = stub.token_requests();
        assert_eq!(requests.len(), 2, "one retry with the nonce");
        let proof = |seen: &Seen| {
            let jwt = seen.headers["dpop"].clone();
            decode(jwt.split('.').nth(1).unwrap())
        };
        assert!(proof(&requests[0]).get("nonce").is_none());
        assert_eq!(proof(&requests[1])["nonce"], "as-nonce");
        assert_eq!(proof(&requests[1])["htu"], format!("{}/token", stub.base));
        assert_ne!(proof(&requests[0])["jti"], proof(&requests[1])["jti"]);

        let url = format!("{}/mcp", stub.base);
        let creds = provider.request_credentials("POST", &url).await;
        assert_eq!(creds.authorization.as_deref(), Some("DPoP bound"));
        let sent = creds.dpop.unwrap();
        let claims = jwt::unverified_claims(&sent).unwrap();
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], url.as_str());
        assert_eq!(claims["ath"], dpop::access_token_hash("bound").as_str());
        // The stub is one origin, so the token endpoint's nonce applies.
        assert_eq!(claims["nonce"], "as-nonce");

        // The server asks for its nonce: the same token, retried with it.
        provider.dpop_nonce(&url, "rs-nonce");
        assert!(
            provider
                .unauthorized(401, Some(r#"DPoP error="use_dpop_nonce""#))
                .await
        );
        let creds = provider.request_credentials("POST", &url).await;
        let claims = jwt::unverified_claims(&creds.dpop.unwrap()).unwrap();
        assert_eq!(claims["nonce"], "rs-nonce");
        assert_eq!(stub.token_requests().len(), 2, "no new grant for a nonce");
    }

    #[test]
    fn expires_in_may_be_a_string() {
        let parse = |v: Value| {
            serde_json::from_value::<TokenResponse>(json!({"access_token": "a", "expires_in": v}))
                .unwrap()
                .expires_in
        };
        assert_eq!(parse(json!(3600)), Some(3600));
        assert_eq!(parse(json!("3600")), Some(3600));
        assert_eq!(parse(json!(-1)), None);
        assert_eq!(parse(json!({"x": 1})), None);
    }

    #[test]
    fn a_huge_expires_in_is_a_long_life_not_a_panic() {
        for v in [json!(1e300), json!(u64::MAX), json!("18446744073709551615")] {
            let token: TokenResponse =
                serde_json::from_value(json!({"access_token": "a", "expires_in": v})).unwrap();
            let expires_at = expiry_after(token.expires_in.unwrap());
            let lifetime = expires_at
                .duration_since(SystemTime::now())
                .unwrap_or_default();
            assert!(lifetime <= MAX_TOKEN_LIFETIME, "{lifetime:?}");
            assert!(
                lifetime > MAX_TOKEN_LIFETIME - Duration::from_secs(60),
                "{lifetime:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_refused_grant_is_reported_and_not_retried() {
        let stub = Stub::start().await;
        stub.standard();
        stub.reply(
            "/token",
            400,
            Vec::new(),
            json!({"error": "invalid_grant", "error_description": "expired"}),
        );
        let grant = ClientCredentials::new(ClientAuth::None {
            client_id: "c".into(),
        });
        let provider = provider(&stub, grant, None);
        assert!(!provider.unauthorized(401, Some(&stub.challenge())).await);
        let error = provider.last_error().unwrap();
        assert_eq!(error.oauth_error(), Some("invalid_grant"));
        assert!(
            error
                .to_string()
                .contains("/token refused: invalid_grant (expired); the assertion"),
            "{error}"
        );
        assert!(!provider.unauthorized(401, Some(&stub.challenge())).await);
        assert_eq!(stub.token_requests().len(), 1, "no second attempt");
        provider.reset();
        assert!(provider.last_error().is_none());
    }

    #[tokio::test]
    async fn refused_tokens_are_replaced_a_bounded_number_of_times() {
        let stub = Stub::start().await;
        stub.standard();
        stub.reply("/token", 200, Vec::new(), json!({"access_token": "t"}));
        let grant = ClientCredentials::new(ClientAuth::None {
            client_id: "c".into(),
        });
        let provider = provider(&stub, grant, None);
        assert!(provider.unauthorized(401, Some(&stub.challenge())).await);
        for _ in 0..MAX_REGRANTS {
            assert!(provider.unauthorized(401, None).await);
        }
        assert!(!provider.unauthorized(401, None).await);
        assert_eq!(stub.token_requests().len(), 1 + MAX_REGRANTS as usize);
        // A 403 that is not about scope is not a reason for a new token.
        assert!(
            !provider
                .unauthorized(403, Some("Bearer error=\"forbidden\""))
                .await
        );
    }

    #[tokio::test]
    async fn discovery_refuses_metadata_for_another_resource() {
        let stub = Stub::start().await;
        stub.reply(
            "/.well-known/oauth-protected-resource/mcp",
            200,
            Vec::new(),
            json!({"resource": "https://evil.example.com/mcp", "authorization_servers": [stub.base]}),
        );
        let client = TokenClient::new(true, None)
            .unwrap()
            .expected_issuer(stub.base.clone());
        let error = client
            .discover(&format!("{}/mcp", stub.base), None)
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                GrantError::Metadata(MetadataError::ResourceMismatch { .. })
            ),
            "{error}"
        );
        assert!(stub.token_requests().is_empty());
    }
}
