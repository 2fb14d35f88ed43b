//! The client credentials grant (OAuth 2.1 §4.2; the MCP
//! `io.modelcontextprotocol/oauth-client-credentials` extension): a
//! service acting on its own behalf, authenticated with a secret
//! (`client_secret_basic`/`_post`) or a signed assertion
//! (`private_key_jwt`, RFC 7523 §2.2).
//!
//! ```no_run
//! use std::sync::Arc;
//! use switchboard_auth::client_credentials::ClientCredentials;
//! use switchboard_auth::grant::{ClientAuth, GrantProvider};
//! use switchboard_auth::jwt::{JwtAlgorithm, JwtSigner};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let pem = "";
//! let key = JwtSigner::from_pem(pem, JwtAlgorithm::Es256)?;
//! let grant = ClientCredentials::new(ClientAuth::PrivateKeyJwt {
//!     client_id: "my-service".into(),
//!     key: Arc::new(key),
//! });
//! let provider = GrantProvider::builder("https://mcp.example.com/mcp", grant)
//!     .expected_issuer("https://auth.example.com")
//!     .build()?;
//! # let _ = provider; Ok(()) }
//! ```

use switchboard::transport::BoxFuture;

use crate::grant::{ClientAuth, Discovered, Grant, GrantError, TokenClient, TokenSet};

/// `grant_type=client_credentials` with the client's own credentials.
#[derive(Debug, Clone)]
pub struct ClientCredentials {
    auth: ClientAuth,
    scopes: Option<Vec<String>>,
}

impl ClientCredentials {
    /// The grant for the client `auth` authenticates.
    pub fn new(auth: ClientAuth) -> Self {
        Self { auth, scopes: None }
    }

    /// Scopes to request instead of those the server's challenge or
    /// metadata name.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = String>) -> Self {
        self.scopes = Some(scopes.into_iter().collect());
        self
    }

    /// The form of the token request (client credentials go in by
    /// [`ClientAuth`]).
    pub(crate) fn form(&self, target: &Discovered) -> Vec<(&'static str, String)> {
        let mut form = vec![
            ("grant_type", "client_credentials".to_owned()),
            ("resource", target.resource.clone()),
        ];
        if let Some(scope) = requested_scope(self.scopes.as_deref(), target) {
            form.push(("scope", scope));
        }
        form
    }
}

/// The configured scopes, else the discovered ones.
pub(crate) fn requested_scope(
    configured: Option<&[String]>,
    target: &Discovered,
) -> Option<String> {
    match configured {
        Some(scopes) => (!scopes.is_empty()).then(|| scopes.join(" ")),
        None => target.scope.clone(),
    }
}

impl Grant for ClientCredentials {
    fn obtain<'a>(
        &'a self,
        client: &'a TokenClient,
        target: &'a Discovered,
    ) -> BoxFuture<'a, Result<TokenSet, GrantError>> {
        Box::pin(async move {
            client
                .request(
                    &target.token_endpoint,
                    &self.auth,
                    target.issuer(),
                    self.form(target),
                    true,
                )
                .await
        })
    }
}
