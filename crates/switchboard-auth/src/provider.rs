//! [`OAuthProvider`]: stored OAuth tokens as an [`AuthProvider`] for the
//! HTTP transports.
//!
//! The provider sends the stored access token, refreshes it shortly before
//! it expires, and refreshes once when a server answers 401 to it. When only
//! the user can help (no token, the refresh token was refused, a second 401,
//! or a 403 `insufficient_scope`):
//! - a provider made with [`OAuthProvider::interactive`] logs in itself
//!   through its [`Authorizer`] — discovery, registration, the user's
//!   authorization, the code exchange, with the server's challenge (so a
//!   step-up asks for the scopes already granted plus the new ones, at most
//!   [`MAX_STEP_UPS`] times) — and the transport sends the refused request
//!   once more with the new token. The login runs while that request waits,
//!   so the client's request timeout must leave the user time to finish it;
//! - any other provider never opens a browser: the transport's request fails
//!   with `AuthorizationRequired`, and [`OAuthProvider::login_needed`] says
//!   why and carries the challenge to pass to [`OAuthFlow::begin`].
//!
//! A token stored as `DPoP`-bound (a flow with [`OAuthConfig::dpop`](super::flow::OAuthConfig::dpop))
//! is sent as `Authorization: DPoP …` with a fresh proof per request, and a
//! server's `use_dpop_nonce` refusal is answered with its nonce, not a
//! refresh.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use switchboard::transport::BoxFuture;
use switchboard::transport::http::{AuthProvider, RequestCredentials};

use crate::dpop;
use crate::flow::{Authorizer, OAuthError, OAuthFlow, REFRESH_MARGIN, Reuse};
use crate::metadata;
use crate::store::{CredentialKey, Secret, StoredCredentials};

/// How many step-up authorizations (403 `insufficient_scope`) are allowed
/// for one provider before it gives up.
pub const MAX_STEP_UPS: u32 = 3;

/// Why the user has to authorize (again).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginReason {
    /// Nothing usable is stored, or the refresh token was refused.
    NotLoggedIn,
    /// The server refused a freshly refreshed token (401 twice).
    Rejected,
    /// The server wants more scopes (403 `insufficient_scope`); `attempt`
    /// counts from 1 up to [`MAX_STEP_UPS`].
    StepUp {
        /// Which step-up this is.
        attempt: u32,
    },
    /// More than [`MAX_STEP_UPS`] step-ups were asked for: the server keeps
    /// refusing the scopes it asked for. Do not authorize again.
    StepUpExhausted,
}

/// The user has to authorize: run [`OAuthFlow::begin`] with
/// `www_authenticate`, then [`OAuthFlow::finish`], then retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginNeeded {
    /// Why.
    pub reason: LoginReason,
    /// The server's last `WWW-Authenticate` challenge, if any.
    pub www_authenticate: Option<String>,
}

/// Stored OAuth tokens for one server as an [`AuthProvider`]. Cheap to
/// clone; clones share their state.
#[derive(Clone)]
pub struct OAuthProvider {
    inner: Arc<Inner>,
}

struct Inner {
    flow: OAuthFlow,
    /// Present for an interactive provider.
    login: Option<Login>,
    /// One login at a time; a request refused meanwhile uses its result.
    login_lock: tokio::sync::Mutex<()>,
    state: Mutex<State>,
}

/// What an interactive provider logs in with.
struct Login {
    server_url: String,
    authorizer: Arc<dyn Authorizer>,
}

#[derive(Default)]
struct State {
    /// Where the credentials are stored; learnt from the first login for an
    /// interactive provider.
    key: Option<CredentialKey>,
    /// Counts the logins, so that a request refused while another one was
    /// logging in uses that login instead of starting its own.
    logins: u64,
    /// Why the last login failed.
    login_error: Option<Arc<OAuthError>>,
    /// The access token last handed out.
    current: Option<Held>,
    /// A token the server answered 401 to, to be replaced before the next
    /// request.
    rejected: Option<Secret>,
    /// The token a 401 refresh produced: a 401 to it too needs the user.
    refreshed_after_401: Option<Secret>,
    login_needed: Option<LoginNeeded>,
    step_ups: u32,
}

/// An access token as stored.
#[derive(Clone)]
struct Held {
    token: Secret,
    expires_at: Option<SystemTime>,
    /// `token_type` `DPoP`: sent with a proof.
    dpop: bool,
}

impl Held {
    fn from_credentials(creds: StoredCredentials) -> Option<Self> {
        let dpop = creds
            .token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case(dpop::TOKEN_TYPE));
        Some(Self {
            token: creds.access_token?,
            expires_at: creds.expires_at,
            dpop,
        })
    }
}

impl fmt::Debug for OAuthProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthProvider")
            .field("key", &self.state().key)
            .field("interactive", &self.inner.login.is_some())
            .finish_non_exhaustive()
    }
}

impl OAuthProvider {
    /// A provider for the credentials stored under `key`, refreshed through
    /// `flow`.
    pub fn new(flow: OAuthFlow, key: CredentialKey) -> Self {
        Self::build(flow, Some(key), None)
    }

    /// A provider for the server at `server_url` (its MCP endpoint) that
    /// logs in through `authorizer` whenever the server asks: on a 401 with
    /// no usable token (none yet, or refused and not refreshable) and on a
    /// 403 `insufficient_scope`. The transport then sends the refused
    /// request once more.
    ///
    /// Credentials already in the flow's store for the server and its
    /// authorization server (from an earlier run) are used without the user
    /// when they can serve. Why a login failed is logged (`tracing`
    /// warning) and kept in [`login_error`](Self::login_error); the request
    /// fails with the transport's `AuthorizationRequired`.
    ///
    /// ```no_run
    /// # async fn run(authorizer: std::sync::Arc<dyn switchboard_auth::flow::Authorizer>) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
    /// use switchboard_auth::provider::OAuthProvider;
    /// use switchboard_auth::store::default_store;
    /// use switchboard::transport::http::HttpConfig;
    ///
    /// let url = "https://mcp.example.com/mcp";
    /// let config = OAuthConfig::new("my-app", "http://127.0.0.1:8976/callback", default_store()?);
    /// let provider = OAuthProvider::interactive(OAuthFlow::new(config)?, url, authorizer);
    /// let client = switchboard::Client::builder()
    ///     .connect(HttpConfig::new(url).auth(Arc::new(provider)))
    ///     .await?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub fn interactive(
        flow: OAuthFlow,
        server_url: impl Into<String>,
        authorizer: Arc<dyn Authorizer>,
    ) -> Self {
        let login = Login {
            server_url: server_url.into(),
            authorizer,
        };
        Self::build(flow, None, Some(login))
    }

    fn build(flow: OAuthFlow, key: Option<CredentialKey>, login: Option<Login>) -> Self {
        Self {
            inner: Arc::new(Inner {
                flow,
                login,
                login_lock: tokio::sync::Mutex::new(()),
                state: Mutex::new(State {
                    key,
                    ..State::default()
                }),
            }),
        }
    }

    /// Where the credentials in use are stored: the key given to
    /// [`new`](Self::new), or the one the last login of an interactive
    /// provider stored under (`None` before it).
    pub fn key(&self) -> Option<CredentialKey> {
        self.state().key.clone()
    }

    /// Why the last login of an interactive provider failed, until one
    /// succeeds.
    pub fn login_error(&self) -> Option<Arc<OAuthError>> {
        self.state().login_error.clone()
    }

    /// A provider for `credentials` (as [`OAuthFlow::finish`] returns them).
    pub fn for_credentials(flow: OAuthFlow, credentials: &StoredCredentials) -> Self {
        Self::new(flow, credentials.key())
    }

    /// The flow it refreshes through, to run [`OAuthFlow::begin`] with.
    pub fn flow(&self) -> &OAuthFlow {
        &self.inner.flow
    }

    /// Whether, and why, the user has to authorize; `None` while the stored
    /// tokens serve.
    pub fn login_needed(&self) -> Option<LoginNeeded> {
        self.state().login_needed.clone()
    }

    /// Forgets the cached token and any pending login, after a new
    /// authorization stored fresh credentials. The step-up count is kept.
    pub fn reset(&self) {
        let mut state = self.state();
        state.current = None;
        state.rejected = None;
        state.refreshed_after_401 = None;
        state.login_needed = None;
    }

    /// The access token to send, refreshing first when needed.
    ///
    /// # Errors
    /// [`OAuthError::LoginRequired`] when the user has to authorize;
    /// otherwise the refresh or the store failed.
    ///
    /// # Cancel safety
    /// Not cancel safe while a refresh is in flight (see
    /// [`OAuthFlow::refresh`]).
    pub async fn access_token(&self) -> Result<Secret, OAuthError> {
        self.held().await.map(|held| held.token)
    }

    /// The token to send and its type, refreshing first when needed (as
    /// [`access_token`](Self::access_token)).
    async fn held(&self) -> Result<Held, OAuthError> {
        let (key, rejected) = {
            let state = self.state();
            let Some(key) = state.key.clone() else {
                return Err(OAuthError::LoginRequired);
            };
            // Only a refused token stops the sending: a step-up not (yet)
            // granted leaves the token held serving what it was granted for.
            if let Some(needed) = &state.login_needed
                && needed.reason == LoginReason::Rejected
            {
                return Err(OAuthError::LoginRequired);
            }
            match (&state.current, &state.rejected) {
                (Some(held), None)
                    if held
                        .expires_at
                        .is_none_or(|at| at > SystemTime::now() + REFRESH_MARGIN) =>
                {
                    return Ok(held.clone());
                }
                _ => (key, state.rejected.clone()),
            }
        };
        let result = self.inner.flow.refresh(&key, rejected.as_ref()).await;
        let mut state = self.state();
        match result {
            Ok(creds) => {
                let Some(held) = Held::from_credentials(creds) else {
                    return Err(OAuthError::LoginRequired);
                };
                if rejected.is_some() {
                    state.refreshed_after_401 = Some(held.token.clone());
                }
                state.rejected = None;
                state.login_needed = None;
                state.current = Some(held.clone());
                Ok(held)
            }
            Err(e) => {
                if e.is_login_required() {
                    state.current = None;
                    state.login_needed = Some(LoginNeeded {
                        reason: LoginReason::NotLoggedIn,
                        www_authenticate: None,
                    });
                }
                Err(e)
            }
        }
    }

    /// Runs a login with the server's challenge, unless another login
    /// finished since the refusal (`logins` was the count then). Answers
    /// whether new credentials are ready.
    async fn log_in(&self, login: &Login, www_authenticate: Option<&str>, logins: u64) -> bool {
        let _one_at_a_time = self.inner.login_lock.lock().await;
        let refused = {
            let state = self.state();
            if state.logins != logins {
                return true;
            }
            state.current.as_ref().map(|held| held.token.clone())
        };
        // A login stored earlier (by another run, or `OAuthFlow::finish`)
        // serves without the user, unless it is the token just refused.
        let reuse = Reuse {
            refused: refused.as_ref(),
        };
        let outcome = self
            .inner
            .flow
            .login_or_reuse(
                &login.server_url,
                www_authenticate,
                login.authorizer.as_ref(),
                Some(reuse),
            )
            .await;
        match outcome {
            Ok(creds) => {
                let mut state = self.state();
                state.key = Some(creds.key());
                state.current = Held::from_credentials(creds);
                state.rejected = None;
                state.refreshed_after_401 = None;
                state.login_needed = None;
                state.login_error = None;
                state.logins += 1;
                state.current.is_some()
            }
            Err(e) => {
                self.login_failed(login, e);
                false
            }
        }
    }

    fn login_failed(&self, login: &Login, error: OAuthError) {
        let mut chain = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            chain.push_str(": ");
            chain.push_str(&cause.to_string());
            source = cause.source();
        }
        tracing::warn!(
            server = %redact(&login.server_url),
            "OAuth login failed: {chain}"
        );
        self.state().login_error = Some(Arc::new(error));
    }

    /// Whether a refusal is a DPoP nonce challenge to the DPoP token held,
    /// with a nonce known for the server.
    fn nonce_refusal(&self, www_authenticate: Option<&str>) -> bool {
        let Some(key) = self.inner.flow.dpop_key() else {
            return false;
        };
        let nonce_challenge = www_authenticate.is_some_and(|h| {
            metadata::parse_www_authenticate(h)
                .iter()
                .any(|c| c.error() == Some(dpop::USE_DPOP_NONCE))
        });
        let state = self.state();
        let server = match (&self.inner.login, &state.key) {
            (Some(login), _) => Some(login.server_url.as_str()),
            (None, Some(key)) => Some(key.resource.as_str()),
            (None, None) => None,
        };
        nonce_challenge
            && state.current.as_ref().is_some_and(|held| held.dpop)
            && server.is_some_and(|server| key.nonce_for(server).is_some())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a refusal; `true` when a refresh is due, so the refused
    /// request is worth sending once more.
    fn on_unauthorized(&self, status: u16, www_authenticate: Option<&str>) -> bool {
        let mut state = self.state();
        let challenge = www_authenticate.map(str::to_owned);
        let step_up = status == 403
            && www_authenticate.is_some_and(|h| {
                metadata::parse_www_authenticate(h).iter().any(|c| {
                    (c.is_bearer() || c.scheme.eq_ignore_ascii_case(dpop::SCHEME))
                        && c.is_insufficient_scope()
                })
            });
        if step_up {
            state.step_ups += 1;
            let reason = if state.step_ups > MAX_STEP_UPS {
                LoginReason::StepUpExhausted
            } else {
                LoginReason::StepUp {
                    attempt: state.step_ups,
                }
            };
            state.login_needed = Some(LoginNeeded {
                reason,
                www_authenticate: challenge,
            });
            return false;
        }
        if status != 401 {
            return false;
        }
        let sent = state.current.as_ref().map(|held| held.token.clone());
        match sent {
            Some(token) if state.refreshed_after_401.as_ref() != Some(&token) => {
                // Refresh once before the next request.
                state.rejected = Some(token);
                true
            }
            sent => {
                state.login_needed = Some(LoginNeeded {
                    reason: if sent.is_some() {
                        LoginReason::Rejected
                    } else {
                        LoginReason::NotLoggedIn
                    },
                    www_authenticate: challenge,
                });
                false
            }
        }
    }
}

impl AuthProvider for OAuthProvider {
    fn authorization(&self, url: &str) -> BoxFuture<'_, Option<String>> {
        let url = url.to_owned();
        Box::pin(async move { self.request_credentials("GET", &url).await.authorization })
    }

    fn request_credentials<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, RequestCredentials> {
        Box::pin(async move {
            let held = match self.held().await {
                Ok(held) => held,
                Err(e) => {
                    tracing::debug!(error = %e, "no OAuth token to send");
                    return RequestCredentials::default();
                }
            };
            let key = self.inner.flow.dpop_key().filter(|_| held.dpop);
            dpop::request_credentials(key, held.token.expose(), method, url)
        })
    }

    fn dpop_nonce(&self, url: &str, nonce: &str) {
        if let Some(key) = self.inner.flow.dpop_key() {
            key.remember_nonce(url, nonce);
        }
    }

    fn unauthorized(&self, status: u16, www_authenticate: Option<&str>) -> BoxFuture<'_, bool> {
        if self.nonce_refusal(www_authenticate) {
            // RFC 9449 §9: the token is still good; the transport sends the
            // request again with the nonce it handed over.
            return Box::pin(async { true });
        }
        let logins = self.state().logins;
        let retry = self.on_unauthorized(status, www_authenticate);
        let Some(login) = &self.inner.login else {
            return Box::pin(async move { retry });
        };
        Box::pin(async move {
            if retry {
                // Refresh now rather than before the retry, so that a
                // refresh that cannot work still leaves room to log in.
                match self.access_token().await {
                    Ok(_) => return true,
                    Err(e) if e.is_login_required() => {}
                    Err(e) => {
                        self.login_failed(login, e);
                        return false;
                    }
                }
            }
            let Some(needed) = self.login_needed() else {
                return false;
            };
            if needed.reason == LoginReason::StepUpExhausted {
                return false;
            }
            self.log_in(login, needed.www_authenticate.as_deref(), logins)
                .await
        })
    }
}

/// A server URL for logs: no credentials, query or fragment.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.into()
        }
        Err(_) => "(not a URL)".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::flow::tests::{Redirects, Stub, flow, logged_in, temp_store};

    fn token_reply(stub: &Stub, access: &str, refresh: &str) {
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": access, "expires_in": 3600, "refresh_token": refresh}),
        );
    }

    fn token_requests(stub: &Stub) -> usize {
        stub.paths().iter().filter(|p| *p == "/token").count()
    }

    #[tokio::test]
    async fn sends_the_stored_token_without_refreshing() {
        let stub = Stub::start().await;
        let (_dir, _store, flow, key) = logged_in(&stub).await;
        let provider = OAuthProvider::new(flow, key);
        let before = token_requests(&stub);
        assert_eq!(
            provider.authorization("x").await.as_deref(),
            Some("Bearer at1")
        );
        assert_eq!(
            provider.authorization("x").await.as_deref(),
            Some("Bearer at1")
        );
        assert_eq!(token_requests(&stub), before);
    }

    #[tokio::test]
    async fn refreshes_before_expiry_and_keeps_the_rotated_token() {
        let stub = Stub::start().await;
        let (_dir, store, flow, key) = logged_in(&stub).await;
        store
            .update(&key, &mut |c| {
                let mut c = c?;
                c.expires_at = Some(SystemTime::now() + Duration::from_secs(10));
                Some(c)
            })
            .unwrap();
        token_reply(&stub, "at2", "rt2");
        let provider = OAuthProvider::new(flow, key.clone());
        assert_eq!(
            provider.authorization("x").await.as_deref(),
            Some("Bearer at2")
        );
        let stored = store.load(&key).unwrap().unwrap();
        assert_eq!(stored.refresh_token.unwrap().expose(), "rt2");
    }

    #[tokio::test]
    async fn refreshes_once_on_401_then_asks_for_login() {
        let stub = Stub::start().await;
        let (_dir, _store, flow, key) = logged_in(&stub).await;
        let provider = OAuthProvider::new(flow, key);
        assert_eq!(
            provider.authorization("x").await.as_deref(),
            Some("Bearer at1")
        );
        token_reply(&stub, "at2", "rt2");
        assert!(
            provider.unauthorized(401, Some("Bearer")).await,
            "a refresh is due: the refused request is worth one more try"
        );
        assert_eq!(provider.login_needed(), None);
        assert_eq!(
            provider.authorization("x").await.as_deref(),
            Some("Bearer at2")
        );
        let before = token_requests(&stub);
        assert!(
            !provider
                .unauthorized(401, Some(r#"Bearer error="invalid_token""#))
                .await,
            "the refreshed token was refused too: no retry, log in"
        );
        let needed = provider.login_needed().unwrap();
        assert_eq!(needed.reason, LoginReason::Rejected);
        assert_eq!(
            needed.www_authenticate.as_deref(),
            Some(r#"Bearer error="invalid_token""#)
        );
        assert_eq!(provider.authorization("x").await, None);
        assert_eq!(
            token_requests(&stub),
            before,
            "a second 401 must not refresh again"
        );
    }

    #[tokio::test]
    async fn refused_refresh_needs_login() {
        let stub = Stub::start().await;
        let (_dir, _store, flow, key) = logged_in(&stub).await;
        let provider = OAuthProvider::new(flow, key);
        provider.authorization("x").await.unwrap();
        stub.route(
            "/token",
            200,
            serde_json::json!({"error": "invalid_refresh_token"}),
        );
        provider.unauthorized(401, None).await;
        assert_eq!(provider.authorization("x").await, None);
        assert_eq!(
            provider.login_needed().unwrap().reason,
            LoginReason::NotLoggedIn
        );
    }

    #[tokio::test]
    async fn step_up_is_allowed_three_times() {
        let stub = Stub::start().await;
        let (_dir, _store, flow, key) = logged_in(&stub).await;
        let provider = OAuthProvider::new(flow, key);
        let header = r#"Bearer error="insufficient_scope", scope="write""#;
        for attempt in 1..=MAX_STEP_UPS {
            provider.unauthorized(403, Some(header)).await;
            let needed = provider.login_needed().unwrap();
            assert_eq!(needed.reason, LoginReason::StepUp { attempt });
            assert_eq!(needed.www_authenticate.as_deref(), Some(header));
            assert_eq!(
                provider.authorization("x").await.as_deref(),
                Some("Bearer at1"),
                "until the user grants more, the token serves what it can"
            );
            provider.reset();
        }
        provider.unauthorized(403, Some(header)).await;
        assert_eq!(
            provider.login_needed().unwrap().reason,
            LoginReason::StepUpExhausted
        );
        // A 403 without insufficient_scope is not a step-up.
        provider.reset();
        provider
            .unauthorized(403, Some(r#"Bearer error="forbidden""#))
            .await;
        assert_eq!(provider.login_needed(), None);
    }

    fn interactive(
        stub: &Stub,
        store: Arc<dyn crate::store::CredentialStore>,
    ) -> (OAuthProvider, Arc<Redirects>) {
        let redirects = Arc::new(Redirects::default());
        let provider = OAuthProvider::interactive(
            flow(store),
            format!("{}/mcp", stub.base),
            redirects.clone(),
        );
        (provider, redirects)
    }

    fn challenge(stub: &Stub, extra: &str) -> String {
        format!(
            r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource"{extra}"#,
            stub.base
        )
    }

    #[tokio::test]
    async fn interactive_logs_in_on_401_and_the_request_is_retried() {
        let stub = Stub::start().await;
        stub.standard();
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at1", "expires_in": 3600}),
        );
        let (_dir, store) = temp_store();
        let (provider, redirects) = interactive(&stub, store);
        assert_eq!(
            provider.authorization("x").await,
            None,
            "nothing before a login"
        );
        assert_eq!(provider.key(), None);
        assert!(
            provider
                .unauthorized(401, Some(&challenge(&stub, r#", scope="read""#)))
                .await,
            "logged in: the refused request goes again"
        );
        assert_eq!(redirects.count(), 1);
        assert_eq!(redirects.scopes(), [Some("read offline_access".to_owned())]);
        assert_eq!(
            provider.authorization("x").await.as_deref(),
            Some("Bearer at1")
        );
        let key = provider.key().unwrap();
        assert_eq!(key.issuer, format!("{}/as", stub.base));
        assert_eq!(provider.login_needed(), None);
        assert!(provider.login_error().is_none());
    }

    #[tokio::test]
    async fn a_401_refreshes_before_it_logs_in() {
        let stub = Stub::start().await;
        stub.standard();
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at1", "expires_in": 3600, "refresh_token": "rt1"}),
        );
        let (_dir, store) = temp_store();
        let (provider, redirects) = interactive(&stub, store);
        assert!(
            provider
                .unauthorized(401, Some(&challenge(&stub, "")))
                .await
        );
        provider.authorization("x").await.unwrap();
        token_reply(&stub, "at2", "rt2");
        assert!(
            provider
                .unauthorized(401, Some(&challenge(&stub, "")))
                .await
        );
        assert_eq!(redirects.count(), 1, "the refresh served: no second login");
        assert_eq!(
            provider.authorization("x").await.as_deref(),
            Some("Bearer at2")
        );
        // The refreshed token is refused too: now the user logs in again.
        assert!(
            provider
                .unauthorized(401, Some(&challenge(&stub, "")))
                .await
        );
        assert_eq!(redirects.count(), 2);
    }

    #[tokio::test]
    async fn step_up_asks_for_the_union_at_most_three_times() {
        let stub = Stub::start().await;
        stub.standard();
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at1", "expires_in": 3600}),
        );
        let (_dir, store) = temp_store();
        let (provider, redirects) = interactive(&stub, store);
        assert!(
            provider
                .unauthorized(401, Some(&challenge(&stub, r#", scope="read""#)))
                .await
        );
        let step_up = challenge(&stub, r#", scope="write", error="insufficient_scope""#);
        for _ in 0..MAX_STEP_UPS {
            assert!(provider.unauthorized(403, Some(&step_up)).await);
        }
        assert!(
            !provider.unauthorized(403, Some(&step_up)).await,
            "a fourth step-up is refused"
        );
        assert_eq!(redirects.count(), 1 + MAX_STEP_UPS as usize);
        let scopes = redirects.scopes();
        assert_eq!(scopes[0].as_deref(), Some("read offline_access"));
        assert_eq!(
            scopes[1].as_deref(),
            Some("read offline_access write"),
            "what was granted stays, the new scope is added"
        );
        assert_eq!(
            provider.login_needed().unwrap().reason,
            LoginReason::StepUpExhausted
        );
        assert_eq!(
            provider.authorization("x").await.as_deref(),
            Some("Bearer at1"),
            "the token keeps serving what it was granted for"
        );
    }

    #[tokio::test]
    async fn a_new_authorization_server_gets_a_new_registration() {
        let stub = Stub::start().await;
        stub.standard();
        // No refresh token: a refused token needs a new login.
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at1", "expires_in": 3600}),
        );
        let (_dir, store) = temp_store();
        let (provider, redirects) = interactive(&stub, store.clone());
        assert!(
            provider
                .unauthorized(401, Some(&challenge(&stub, "")))
                .await
        );
        let first = provider.key().unwrap();

        let b = stub.base.clone();
        stub.route(
            "/.well-known/oauth-protected-resource",
            200,
            serde_json::json!({"resource": format!("{b}/mcp"), "authorization_servers": [format!("{b}/as2")]}),
        );
        let mut asm = stub.as_metadata();
        asm["issuer"] = format!("{b}/as2").into();
        asm["registration_endpoint"] = format!("{b}/register2").into();
        stub.route("/.well-known/oauth-authorization-server/as2", 200, asm);
        stub.route(
            "/register2",
            201,
            serde_json::json!({"client_id": "client-2"}),
        );
        assert!(
            provider
                .unauthorized(401, Some(&challenge(&stub, "")))
                .await
        );

        let second = provider.key().unwrap();
        assert_eq!(second.issuer, format!("{b}/as2"));
        assert_eq!(redirects.count(), 2);
        let url = redirects.seen.lock().unwrap()[1].clone();
        assert_eq!(
            url.query_pairs().find(|(k, _)| k == "client_id").unwrap().1,
            "client-2",
            "the first server's client id is not reused"
        );
        assert!(stub.paths().iter().any(|p| p == "/register2"));
        assert_eq!(store.load(&second).unwrap().unwrap().client_id, "client-2");
        assert_eq!(store.load(&first).unwrap().unwrap().client_id, "dyn-client");
    }

    #[tokio::test]
    async fn a_failed_login_is_kept_and_nothing_is_retried() {
        let stub = Stub::start().await;
        stub.standard();
        let mut prm = serde_json::json!({
            "resource": "https://evil.example.com/mcp",
            "authorization_servers": [format!("{}/as", stub.base)],
        });
        stub.route("/.well-known/oauth-protected-resource", 200, prm.take());
        let (_dir, store) = temp_store();
        let (provider, redirects) = interactive(&stub, store);
        assert!(
            !provider
                .unauthorized(401, Some(&challenge(&stub, "")))
                .await
        );
        assert_eq!(
            redirects.count(),
            0,
            "nothing is authorized for a mismatched resource"
        );
        let error = provider.login_error().unwrap();
        assert!(
            matches!(
                *error,
                OAuthError::Metadata(metadata::MetadataError::ResourceMismatch { .. })
            ),
            "{error:?}"
        );
        assert_eq!(
            provider.login_needed().unwrap().reason,
            LoginReason::NotLoggedIn
        );
    }

    #[tokio::test]
    async fn concurrent_refusals_share_one_login() {
        let stub = Stub::start().await;
        stub.standard();
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at1", "expires_in": 3600}),
        );
        let (_dir, store) = temp_store();
        let (provider, redirects) = interactive(&stub, store);
        let header = challenge(&stub, "");
        let (a, b) = tokio::join!(
            provider.unauthorized(401, Some(&header)),
            provider.unauthorized(401, Some(&header))
        );
        assert!(a && b);
        assert_eq!(redirects.count(), 1);
    }

    #[tokio::test]
    async fn a_stored_login_serves_a_new_provider_without_the_user() {
        let stub = Stub::start().await;
        stub.standard();
        stub.route(
            "/token",
            200,
            serde_json::json!({"access_token": "at1", "expires_in": 3600}),
        );
        let (_dir, store) = temp_store();
        let (first, redirects) = interactive(&stub, store.clone());
        assert!(first.unauthorized(401, Some(&challenge(&stub, ""))).await);
        assert_eq!(redirects.count(), 1);

        // Another run, the same store: the server's first 401 is answered
        // from the store.
        let (second, redirects) = interactive(&stub, store);
        assert!(second.unauthorized(401, Some(&challenge(&stub, ""))).await);
        assert_eq!(redirects.count(), 0);
        assert_eq!(
            second.authorization("x").await.as_deref(),
            Some("Bearer at1")
        );
        // That token refused, with nothing to refresh it: the user logs in.
        assert!(second.unauthorized(401, Some(&challenge(&stub, ""))).await);
        assert_eq!(redirects.count(), 1);
        // A step-up never settles for what is stored.
        let step_up = challenge(&stub, r#", scope="write", error="insufficient_scope""#);
        assert!(second.unauthorized(403, Some(&step_up)).await);
        assert_eq!(redirects.count(), 2);
    }

    #[tokio::test]
    async fn a_dpop_bound_login_is_sent_with_proofs_and_refreshed_with_one() {
        use serde_json::json;

        use crate::dpop::{self, DpopKey};
        use crate::flow::OAuthConfig;
        use crate::flow::tests::query;
        use crate::grant::tests::Stub as Replies;
        use crate::jwt::unverified_claims;

        let stub = Replies::start().await;
        let base = &stub.base;
        stub.reply(
            "/.well-known/oauth-protected-resource/mcp",
            200,
            Vec::new(),
            json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
        );
        stub.reply(
            "/.well-known/oauth-authorization-server",
            200,
            Vec::new(),
            json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "code_challenge_methods_supported": ["S256"],
                "authorization_response_iss_parameter_supported": true,
                "dpop_signing_alg_values_supported": ["ES256"],
            }),
        );
        stub.reply("/register", 201, Vec::new(), json!({"client_id": "dyn-1"}));
        // The token endpoint asks for its nonce first.
        stub.nonce_first("as-nonce");
        stub.reply(
            "/token",
            200,
            Vec::new(),
            json!({"access_token": "at1", "token_type": "DPoP", "expires_in": 3600, "refresh_token": "rt1"}),
        );
        stub.reply(
            "/token",
            200,
            Vec::new(),
            json!({"access_token": "at2", "token_type": "DPoP", "expires_in": 3600}),
        );
        let key = DpopKey::generate().unwrap();
        let (_dir, store) = temp_store();
        let config = OAuthConfig::new("test", "http://127.0.0.1:1/callback", store.clone())
            .allow_http_loopback(true)
            .dpop(key.clone());
        let flow = OAuthFlow::new(config).unwrap();
        let url = format!("{base}/mcp");
        let token_endpoint = format!("{base}/token");
        let agent = Arc::new(Redirects::default());
        let provider = OAuthProvider::interactive(flow.clone(), url.clone(), agent.clone());
        let proof = |jwt: &str| unverified_claims(jwt).unwrap();

        assert!(provider.unauthorized(401, Some(&stub.challenge())).await);
        let authorization = agent.seen.lock().unwrap()[0].clone();
        assert_eq!(query(&authorization)["dpop_jkt"], key.thumbprint());
        let requests = stub.token_requests();
        assert_eq!(
            requests.len(),
            2,
            "one retry with the token endpoint's nonce"
        );
        assert!(proof(&requests[0].headers["dpop"]).get("nonce").is_none());
        let exchange = &requests[1];
        assert_eq!(exchange.form["grant_type"], "authorization_code");
        assert_eq!(exchange.form["code"], "the-code");
        assert_eq!(exchange.form["client_id"], "dyn-1");
        assert!(!exchange.form["code_verifier"].is_empty());
        let claims = proof(&exchange.headers["dpop"]);
        assert_eq!(claims["nonce"], "as-nonce");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], token_endpoint.as_str());

        // Sent as `DPoP` with a fresh proof for each request.
        let first = provider.request_credentials("POST", &url).await;
        assert_eq!(first.authorization.as_deref(), Some("DPoP at1"));
        let first = proof(first.dpop.as_deref().unwrap());
        assert_eq!(first["htm"], "POST");
        assert_eq!(first["htu"], url.as_str());
        assert_eq!(first["ath"], dpop::access_token_hash("at1").as_str());
        let second = provider.request_credentials("GET", &url).await;
        let second = proof(second.dpop.as_deref().unwrap());
        assert_eq!(second["htm"], "GET");
        assert_ne!(first["jti"], second["jti"]);
        assert_eq!(
            provider.authorization(&url).await.as_deref(),
            Some("DPoP at1")
        );

        // The server asks for its own nonce: the same token, sent again with it.
        provider.dpop_nonce(&url, "rs-nonce");
        assert!(
            provider
                .unauthorized(401, Some(r#"DPoP error="use_dpop_nonce""#))
                .await
        );
        let creds = provider.request_credentials("POST", &url).await;
        assert_eq!(creds.authorization.as_deref(), Some("DPoP at1"));
        assert_eq!(proof(creds.dpop.as_deref().unwrap())["nonce"], "rs-nonce");
        assert_eq!(
            stub.token_requests().len(),
            2,
            "no token request for a nonce"
        );

        // The token is refused: refreshed once, with a proof.
        assert!(
            provider
                .unauthorized(401, Some(r#"DPoP error="invalid_token""#))
                .await
        );
        let creds = provider.request_credentials("POST", &url).await;
        assert_eq!(creds.authorization.as_deref(), Some("DPoP at2"));
        let requests = stub.token_requests();
        assert_eq!(requests.len(), 3);
        let refresh = &requests[2];
        assert_eq!(refresh.form["grant_type"], "refresh_token");
        assert_eq!(refresh.form["refresh_token"], "rt1");
        assert_eq!(
            proof(&refresh.headers["dpop"])["htu"],
            token_endpoint.as_str()
        );
        assert_eq!(agent.count(), 1, "no second login");

        // The type is stored: a later run's provider sends `DPoP` too.
        let key = provider.key().unwrap();
        let stored = store.load(&key).unwrap().unwrap();
        assert_eq!(stored.token_type.as_deref(), Some("DPoP"));
        let later = OAuthProvider::new(flow, key);
        let creds = later.request_credentials("POST", &url).await;
        assert_eq!(creds.authorization.as_deref(), Some("DPoP at2"));
        assert!(creds.dpop.is_some());
    }
}
