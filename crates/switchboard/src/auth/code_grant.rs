//! The authorization code grant (PKCE S256) as a [`Grant`], so that a
//! [`GrantProvider`](super::grant::GrantProvider) with a DPoP key obtains
//! DPoP-bound tokens (RFC 9449 §5, §10: the token request carries a proof,
//! the authorization request the key's `dpop_jkt`) and refreshes them with
//! proofs too.
//!
//! A [`UserAgent`] takes the user through the authorization request and
//! hands back the redirect; a client without a pre-registered id registers
//! dynamically (RFC 7591) as a public native client.
//!
//! [`super::flow::OAuthFlow`] is the full application-driven flow with a
//! credential store; this grant keeps its tokens in memory, for DPoP until
//! that flow binds tokens itself.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use oauth2::{CsrfToken, PkceCodeChallenge};
use serde::Deserialize;
use url::Url;

use super::client_credentials::requested_scope;
use super::grant::{ClientAuth, Discovered, Grant, GrantError, TokenClient, TokenSet, shown};
use super::metadata;
use super::store::Secret;
use crate::transport::BoxFuture;

/// Takes the user through an authorization request.
pub trait UserAgent: Send + Sync + fmt::Debug + 'static {
    /// Opens `authorization_url` (a browser, or anything that completes it)
    /// and returns the URL the authorization server redirected back to,
    /// with its `code`, `state` and `iss`.
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a Url,
    ) -> BoxFuture<'a, Result<Url, GrantError>>;
}

/// A [`UserAgent`] for authorization servers that answer without a user
/// (consent given beforehand, test and conformance servers): it GETs the
/// authorization URL and returns where the first redirect points.
#[derive(Debug, Clone)]
pub struct RedirectAgent {
    http: reqwest::Client,
}

impl RedirectAgent {
    /// An agent with its own HTTP client, which follows no redirect.
    ///
    /// # Errors
    /// [`GrantError::Config`] if the HTTP client cannot be built.
    pub fn new() -> Result<Self, GrantError> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| GrantError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { http })
    }
}

impl UserAgent for RedirectAgent {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a Url,
    ) -> BoxFuture<'a, Result<Url, GrantError>> {
        Box::pin(async move {
            let response = self
                .http
                .get(authorization_url.clone())
                .send()
                .await
                .map_err(|source| GrantError::Http {
                    url: shown(authorization_url),
                    source: source.without_url(),
                })?;
            let status = response.status().as_u16();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| GrantError::BadResponse {
                    url: shown(authorization_url),
                    status,
                    detail: "no redirect back: this authorization server needs a user; use a browser-based UserAgent".into(),
                })?;
            authorization_url
                .join(location)
                .map_err(|e| GrantError::BadResponse {
                    url: shown(authorization_url),
                    status,
                    detail: format!("the redirect back is not a URL: {e}"),
                })
        })
    }
}

/// The authorization code grant with PKCE S256.
pub struct AuthorizationCode {
    client_name: String,
    redirect_uri: String,
    agent: Box<dyn UserAgent>,
    scopes: Option<Vec<String>>,
    /// Pre-registered, or registered dynamically on first use.
    client: Mutex<Option<ClientAuth>>,
}

impl fmt::Debug for AuthorizationCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationCode")
            .field("client_name", &self.client_name)
            .field("redirect_uri", &self.redirect_uri)
            .field("agent", &self.agent)
            .field("scopes", &self.scopes)
            .field("client", &*lock(&self.client))
            .finish()
    }
}

impl AuthorizationCode {
    /// A client called `client_name` that receives the authorization
    /// response at `redirect_uri` through `agent`.
    pub fn new(
        client_name: impl Into<String>,
        redirect_uri: impl Into<String>,
        agent: impl UserAgent,
    ) -> Self {
        Self {
            client_name: client_name.into(),
            redirect_uri: redirect_uri.into(),
            agent: Box::new(agent),
            scopes: None,
            client: Mutex::new(None),
        }
    }

    /// A client registered beforehand (no dynamic registration).
    #[must_use]
    pub fn pre_registered(self, auth: ClientAuth) -> Self {
        *lock(&self.client) = Some(auth);
        self
    }

    /// Scopes to request instead of those the server names.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = String>) -> Self {
        self.scopes = Some(scopes.into_iter().collect());
        self
    }

    async fn client_auth(
        &self,
        client: &TokenClient,
        target: &Discovered,
    ) -> Result<ClientAuth, GrantError> {
        if let Some(auth) = lock(&self.client).clone() {
            return Ok(auth);
        }
        let endpoint = target
            .metadata
            .registration_endpoint
            .as_deref()
            .ok_or_else(|| {
                GrantError::Config(format!(
                    "authorization server {} offers no dynamic client registration; configure a pre-registered client",
                    target.issuer()
                ))
            })?;
        let endpoint = client.check_endpoint(endpoint, target)?;
        let redirect = Url::parse(&self.redirect_uri)
            .map_err(|e| GrantError::Config(format!("redirect_uri: {e}")))?;
        // RFC 8252: a loopback or private-scheme redirect is a native app.
        let native = redirect.scheme() != "https"
            || matches!(
                redirect.host_str(),
                Some("localhost" | "127.0.0.1" | "[::1]")
            );
        let body = serde_json::json!({
            "client_name": self.client_name,
            "redirect_uris": [self.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": if native { "native" } else { "web" },
        });
        #[derive(Deserialize)]
        struct Registered {
            client_id: String,
            client_secret: Option<String>,
            token_endpoint_auth_method: Option<String>,
        }
        let registered: Registered = client.post_json(&endpoint, &body).await?;
        let auth = match (
            registered.client_secret,
            registered.token_endpoint_auth_method.as_deref(),
        ) {
            (Some(secret), Some("client_secret_post")) => ClientAuth::SecretPost {
                client_id: registered.client_id,
                secret: Secret::new(secret),
            },
            (Some(secret), _) => ClientAuth::SecretBasic {
                client_id: registered.client_id,
                secret: Secret::new(secret),
            },
            (None, _) => ClientAuth::None {
                client_id: registered.client_id,
            },
        };
        *lock(&self.client) = Some(auth.clone());
        Ok(auth)
    }
}

/// What came back to the redirect URI.
#[derive(Debug, Default)]
struct Response {
    code: Option<String>,
    state: Option<String>,
    iss: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

impl Response {
    fn parse(redirect: &Url) -> Self {
        let mut response = Self::default();
        for (name, value) in redirect.query_pairs() {
            let slot = match name.as_ref() {
                "code" => &mut response.code,
                "state" => &mut response.state,
                "iss" => &mut response.iss,
                "error" => &mut response.error,
                "error_description" => &mut response.error_description,
                _ => continue,
            };
            slot.get_or_insert_with(|| value.into_owned());
        }
        response
    }
}

impl Grant for AuthorizationCode {
    fn obtain<'a>(
        &'a self,
        client: &'a TokenClient,
        target: &'a Discovered,
    ) -> BoxFuture<'a, Result<TokenSet, GrantError>> {
        Box::pin(async move {
            metadata::require_pkce_s256(&target.metadata)?;
            let endpoint = target
                .metadata
                .authorization_endpoint
                .as_deref()
                .ok_or_else(|| GrantError::BadResponse {
                    url: target.issuer().to_owned(),
                    status: 200,
                    detail: "the authorization server metadata has no authorization_endpoint"
                        .into(),
                })?;
            let mut url = client.check_endpoint(endpoint, target)?;
            let auth = self.client_auth(client, target).await?;
            let client_id = auth.client_id().unwrap_or_default().to_owned();
            let scope = requested_scope(self.scopes.as_deref(), target);
            let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
            let state = CsrfToken::new_random().secret().clone();
            {
                let mut q = url.query_pairs_mut();
                q.append_pair("response_type", "code")
                    .append_pair("client_id", &client_id)
                    .append_pair("redirect_uri", &self.redirect_uri)
                    .append_pair("code_challenge", challenge.as_str())
                    .append_pair("code_challenge_method", metadata::PKCE_S256)
                    .append_pair("state", &state)
                    .append_pair("resource", &target.resource);
                if let Some(scope) = &scope {
                    q.append_pair("scope", scope);
                }
                if let Some(key) = client.dpop() {
                    // RFC 9449 §10: binds the code to the key.
                    q.append_pair("dpop_jkt", key.thumbprint());
                }
            }
            let redirect = self.agent.authorize(&url).await?;
            let response = Response::parse(&redirect);
            let authorization = shown(&url);
            if let Some(error) = response.error {
                return Err(GrantError::Refused {
                    url: authorization,
                    error,
                    description: response.error_description,
                });
            }
            if response.state.as_deref() != Some(state.as_str()) {
                return Err(GrantError::BadResponse {
                    url: authorization,
                    status: 302,
                    detail: "the authorization response's state is not the one sent (it may be forged); start again".into(),
                });
            }
            let iss_required = target
                .metadata
                .authorization_response_iss_parameter_supported
                == Some(true);
            match response.iss.as_deref() {
                Some(iss) if iss == target.issuer() => {}
                None if !iss_required => {}
                found => {
                    return Err(GrantError::BadResponse {
                        url: authorization,
                        status: 302,
                        detail: format!(
                            "the authorization response came from issuer {found:?}, expected {}; it was refused (RFC 9207)",
                            target.issuer()
                        ),
                    });
                }
            }
            let code = response.code.ok_or_else(|| GrantError::BadResponse {
                url: authorization,
                status: 302,
                detail: "the authorization response has no code".into(),
            })?;
            let form = vec![
                ("grant_type", "authorization_code".to_owned()),
                ("code", code),
                ("redirect_uri", self.redirect_uri.clone()),
                ("code_verifier", verifier.secret().clone()),
                ("resource", target.resource.clone()),
            ];
            client
                .request(&target.token_endpoint, &auth, target.issuer(), form, true)
                .await
        })
    }

    fn refresh<'a>(
        &'a self,
        client: &'a TokenClient,
        target: &'a Discovered,
        refresh_token: &'a Secret,
    ) -> Option<BoxFuture<'a, Result<TokenSet, GrantError>>> {
        let auth = lock(&self.client).clone()?;
        Some(Box::pin(async move {
            let form = vec![
                ("grant_type", "refresh_token".to_owned()),
                ("refresh_token", refresh_token.expose().to_owned()),
                ("resource", target.resource.clone()),
            ];
            client
                .request(&target.token_endpoint, &auth, target.issuer(), form, true)
                .await
        }))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::auth::dpop::DpopKey;
    use crate::auth::grant::GrantProvider;
    use crate::auth::grant::tests::Stub;
    use crate::transport::http::AuthProvider as _;

    /// Answers the authorization request as `answer` says, from its query.
    struct Agent<F>(F);

    impl<F> fmt::Debug for Agent<F> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("Agent")
        }
    }

    impl<F> UserAgent for Agent<F>
    where
        F: Fn(&Url) -> Url + Send + Sync + 'static,
    {
        fn authorize<'a>(
            &'a self,
            authorization_url: &'a Url,
        ) -> BoxFuture<'a, Result<Url, GrantError>> {
            Box::pin(async move { Ok((self.0)(authorization_url)) })
        }
    }

    fn param(url: &Url, name: &str) -> String {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    }

    fn code_server(stub: &Stub) {
        stub.reply(
            "/.well-known/oauth-protected-resource/mcp",
            200,
            Vec::new(),
            json!({"resource": format!("{}/mcp", stub.base), "authorization_servers": [stub.base]}),
        );
        stub.reply(
            "/.well-known/oauth-authorization-server",
            200,
            Vec::new(),
            json!({
                "issuer": stub.base,
                "authorization_endpoint": format!("{}/authorize", stub.base),
                "token_endpoint": format!("{}/token", stub.base),
                "registration_endpoint": format!("{}/register", stub.base),
                "code_challenge_methods_supported": ["S256"],
                "authorization_response_iss_parameter_supported": true,
                "dpop_signing_alg_values_supported": ["ES256"],
            }),
        );
        stub.reply("/register", 201, Vec::new(), json!({"client_id": "dyn-1"}));
    }

    fn provider(stub: &Stub, grant: AuthorizationCode, key: &DpopKey) -> GrantProvider {
        GrantProvider::builder(format!("{}/mcp", stub.base), grant)
            .dpop(key.clone())
            .allow_http_loopback(true)
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn a_dpop_bound_code_exchange_then_a_dpop_refresh() {
        let stub = Stub::start().await;
        code_server(&stub);
        // Expires within the renewal margin: the next use refreshes.
        stub.reply(
            "/token",
            200,
            Vec::new(),
            json!({"access_token": "at1", "token_type": "DPoP", "expires_in": 5, "refresh_token": "rt1"}),
        );
        stub.reply(
            "/token",
            200,
            Vec::new(),
            json!({"access_token": "at2", "token_type": "DPoP", "expires_in": 3600}),
        );
        let key = DpopKey::generate().unwrap();
        let issuer = stub.base.clone();
        let jkt = key.thumbprint().to_owned();
        let agent = Agent(move |url: &Url| {
            assert_eq!(param(url, "client_id"), "dyn-1");
            assert_eq!(param(url, "code_challenge_method"), "S256");
            assert_eq!(param(url, "dpop_jkt"), jkt);
            assert!(param(url, "resource").ends_with("/mcp"));
            let mut back = Url::parse("http://127.0.0.1:1/cb").unwrap();
            back.query_pairs_mut()
                .append_pair("code", "c1")
                .append_pair("state", &param(url, "state"))
                .append_pair("iss", &issuer);
            back
        });
        let grant = AuthorizationCode::new("test", "http://127.0.0.1:1/cb", agent);
        let provider = provider(&stub, grant, &key);
        assert!(provider.unauthorized(401, Some(&stub.challenge())).await);
        let requests = stub.token_requests();
        let exchange = &requests[0];
        assert_eq!(exchange.form["grant_type"], "authorization_code");
        assert_eq!(exchange.form["code"], "c1");
        assert_eq!(exchange.form["client_id"], "dyn-1");
        assert!(!exchange.form["code_verifier"].is_empty());
        assert!(
            exchange.headers.contains_key("dpop"),
            "a proof at the token endpoint"
        );

        let url = format!("{}/mcp", stub.base);
        let creds = provider.request_credentials("POST", &url).await;
        assert_eq!(creds.authorization.as_deref(), Some("DPoP at2"));
        let requests = stub.token_requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].form["grant_type"], "refresh_token");
        assert_eq!(requests[1].form["refresh_token"], "rt1");
        assert!(requests[1].headers.contains_key("dpop"));
    }

    #[tokio::test]
    async fn a_forged_state_or_a_wrong_issuer_is_refused() {
        for (state, iss) in [
            ("forged", None),
            ("", Some("https://evil.example.com")),
            ("", None),
        ] {
            let stub = Stub::start().await;
            code_server(&stub);
            let agent = Agent(move |url: &Url| {
                let mut back = Url::parse("http://127.0.0.1:1/cb").unwrap();
                let sent = param(url, "state");
                back.query_pairs_mut()
                    .append_pair("code", "c1")
                    .append_pair("state", if state.is_empty() { &sent } else { state });
                if let Some(iss) = iss {
                    back.query_pairs_mut().append_pair("iss", iss);
                }
                back
            });
            let grant = AuthorizationCode::new("test", "http://127.0.0.1:1/cb", agent)
                .pre_registered(ClientAuth::None {
                    client_id: "pre".into(),
                });
            let key = DpopKey::generate().unwrap();
            let provider = provider(&stub, grant, &key);
            let error = provider.authorize(None).await.unwrap_err();
            assert!(
                error.to_string().contains("state") || error.to_string().contains("issuer"),
                "{error}"
            );
            assert!(stub.token_requests().is_empty(), "no code exchange");
        }
    }

    #[tokio::test]
    async fn an_authorization_error_is_reported() {
        let stub = Stub::start().await;
        code_server(&stub);
        let agent = Agent(|_: &Url| {
            Url::parse("http://127.0.0.1:1/cb?error=access_denied&error_description=no").unwrap()
        });
        let grant = AuthorizationCode::new("test", "http://127.0.0.1:1/cb", agent);
        let key = DpopKey::generate().unwrap();
        let provider = provider(&stub, grant, &key);
        let error = provider.authorize(None).await.unwrap_err();
        assert_eq!(error.oauth_error(), Some("access_denied"));
        let _ = Arc::clone(&error);
    }
}
