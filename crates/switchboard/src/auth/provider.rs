//! [`OAuthProvider`]: stored OAuth tokens as an [`AuthProvider`] for the
//! HTTP transports.
//!
//! The provider never opens a browser. It sends the stored access token,
//! refreshes it shortly before it expires, and refreshes once when a server
//! answers 401 to it. When only the user can help (no token, the refresh
//! token was refused, a second 401, or a 403 `insufficient_scope`), the
//! transport's request fails with `AuthorizationRequired` and
//! [`OAuthProvider::login_needed`] says why and carries the challenge to
//! pass to [`OAuthFlow::begin`].

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::flow::{OAuthError, OAuthFlow, REFRESH_MARGIN};
use super::metadata;
use super::store::{CredentialKey, Secret, StoredCredentials};
use crate::transport::BoxFuture;
use crate::transport::http::AuthProvider;

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
    key: CredentialKey,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The access token last handed out, and when it expires.
    current: Option<(Secret, Option<SystemTime>)>,
    /// A token the server answered 401 to, to be replaced before the next
    /// request.
    rejected: Option<Secret>,
    /// The token a 401 refresh produced: a 401 to it too needs the user.
    refreshed_after_401: Option<Secret>,
    login_needed: Option<LoginNeeded>,
    step_ups: u32,
}

impl fmt::Debug for OAuthProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthProvider")
            .field("key", &self.inner.key)
            .finish_non_exhaustive()
    }
}

impl OAuthProvider {
    /// A provider for the credentials stored under `key`, refreshed through
    /// `flow`.
    pub fn new(flow: OAuthFlow, key: CredentialKey) -> Self {
        Self {
            inner: Arc::new(Inner {
                flow,
                key,
                state: Mutex::new(State::default()),
            }),
        }
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
        let rejected = {
            let state = self.state();
            if let Some(needed) = &state.login_needed
                && needed.reason != LoginReason::NotLoggedIn
            {
                return Err(OAuthError::LoginRequired);
            }
            match (&state.current, &state.rejected) {
                (Some((token, expires)), None)
                    if expires.is_none_or(|at| at > SystemTime::now() + REFRESH_MARGIN) =>
                {
                    return Ok(token.clone());
                }
                _ => state.rejected.clone(),
            }
        };
        let result = self
            .inner
            .flow
            .refresh(&self.inner.key, rejected.as_ref())
            .await;
        let mut state = self.state();
        match result {
            Ok(creds) => {
                let Some(token) = creds.access_token else {
                    return Err(OAuthError::LoginRequired);
                };
                if rejected.is_some() {
                    state.refreshed_after_401 = Some(token.clone());
                }
                state.rejected = None;
                state.login_needed = None;
                state.current = Some((token.clone(), creds.expires_at));
                Ok(token)
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
                metadata::parse_www_authenticate(h)
                    .iter()
                    .any(|c| c.is_bearer() && c.is_insufficient_scope())
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
        let sent = state.current.as_ref().map(|(t, _)| t.clone());
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
    fn authorization(&self, _url: &str) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            match self.access_token().await {
                Ok(token) => Some(format!("Bearer {}", token.expose())),
                Err(e) => {
                    tracing::debug!(error = %e, key = %self.inner.key, "no OAuth token to send");
                    None
                }
            }
        })
    }

    fn unauthorized(&self, status: u16, www_authenticate: Option<&str>) -> BoxFuture<'_, bool> {
        let retry = self.on_unauthorized(status, www_authenticate);
        Box::pin(async move { retry })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::auth::flow::tests::{Stub, logged_in};

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
}
