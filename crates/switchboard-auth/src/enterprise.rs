//! Enterprise-managed authorization (the MCP
//! `io.modelcontextprotocol/enterprise-managed-authorization` extension,
//! SEP-990; "cross-app access"): the user's enterprise identity provider
//! trades their ID token for an Identity Assertion JWT Authorization Grant
//! (ID-JAG) by token exchange (RFC 8693), and the MCP server's
//! authorization server trades the ID-JAG for an access token by the JWT
//! bearer grant (RFC 7523).
//!
//! ```no_run
//! use switchboard_auth::enterprise::{EnterpriseGrant, IdentityProvider};
//! use switchboard_auth::grant::{ClientAuth, GrantProvider};
//! use switchboard_auth::store::Secret;
//! # fn main() -> Result<(), switchboard_auth::grant::GrantError> {
//! # let id_token = Secret::new("");
//! let idp = IdentityProvider::new(
//!     "https://idp.example.com/oauth2/token",
//!     ClientAuth::None { client_id: "mcp-client-at-idp".into() },
//! );
//! let grant = EnterpriseGrant::new(idp, id_token, ClientAuth::SecretBasic {
//!     client_id: "mcp-client".into(),
//!     secret: Secret::new("secret"),
//! });
//! let provider = GrantProvider::builder("https://mcp.example.com/mcp", grant)
//!     .expected_issuer("https://auth.example.com")
//!     .build()?;
//! # let _ = provider; Ok(()) }
//! ```

use std::fmt;

use switchboard::transport::BoxFuture;

use crate::client_credentials::requested_scope;
use crate::grant::{
    ClientAuth, Discovered, GRANT_TOKEN_EXCHANGE, Grant, GrantError, TokenClient, TokenSet, shown,
};
use crate::jwt_bearer::{AssertionSource, jwt_bearer_form};
use crate::store::Secret;

/// `requested_token_type` / `issued_token_type` of an ID-JAG.
pub const TOKEN_TYPE_ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// `subject_token_type` of an OpenID Connect ID token.
pub const TOKEN_TYPE_ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";

/// The enterprise identity provider's token endpoint and how this client
/// authenticates there.
#[derive(Debug, Clone)]
pub struct IdentityProvider {
    token_endpoint: String,
    auth: ClientAuth,
}

impl IdentityProvider {
    /// The IdP whose token endpoint is `token_endpoint` (from its OpenID
    /// configuration), with this client's credentials there.
    pub fn new(token_endpoint: impl Into<String>, auth: ClientAuth) -> Self {
        Self {
            token_endpoint: token_endpoint.into(),
            auth,
        }
    }
}

/// Token exchange at the IdP, then the JWT bearer grant at the MCP
/// server's authorization server.
pub struct EnterpriseGrant {
    idp: IdentityProvider,
    subject: Box<dyn AssertionSource>,
    auth: ClientAuth,
    scopes: Option<Vec<String>>,
}

impl fmt::Debug for EnterpriseGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterpriseGrant")
            .field("idp", &self.idp)
            .field("subject", &self.subject)
            .field("auth", &self.auth)
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl EnterpriseGrant {
    /// Exchanges the user's ID token (`id_token`, or any
    /// [`AssertionSource`] of one) at `idp`, then presents the ID-JAG to
    /// the MCP server's authorization server as the client `auth`
    /// authenticates.
    pub fn new(idp: IdentityProvider, id_token: impl AssertionSource, auth: ClientAuth) -> Self {
        Self {
            idp,
            subject: Box::new(id_token),
            auth,
            scopes: None,
        }
    }

    /// Scopes to request instead of those the server names.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = String>) -> Self {
        self.scopes = Some(scopes.into_iter().collect());
        self
    }
}

/// The token exchange form (RFC 8693 §2.1) asking the IdP for an ID-JAG
/// for `audience` (the authorization server's issuer) and `resource`.
pub(crate) fn token_exchange_form(
    id_token: &Secret,
    audience: &str,
    resource: &str,
    scope: Option<String>,
) -> Vec<(&'static str, String)> {
    let mut form = vec![
        ("grant_type", GRANT_TOKEN_EXCHANGE.to_owned()),
        ("requested_token_type", TOKEN_TYPE_ID_JAG.to_owned()),
        ("subject_token", id_token.expose().to_owned()),
        ("subject_token_type", TOKEN_TYPE_ID_TOKEN.to_owned()),
        ("audience", audience.to_owned()),
        ("resource", resource.to_owned()),
    ];
    if let Some(scope) = scope {
        form.push(("scope", scope));
    }
    form
}

impl Grant for EnterpriseGrant {
    fn obtain<'a>(
        &'a self,
        client: &'a TokenClient,
        target: &'a Discovered,
    ) -> BoxFuture<'a, Result<TokenSet, GrantError>> {
        Box::pin(async move {
            let idp_endpoint = client.check_url(&self.idp.token_endpoint)?;
            let scope = requested_scope(self.scopes.as_deref(), target);
            let id_token = self.subject.assertion(idp_endpoint.as_str()).await?;
            let form =
                token_exchange_form(&id_token, target.issuer(), &target.resource, scope.clone());
            // The IdP's client assertion audience is the IdP itself; an
            // ID-JAG is not sender-constrained, so no DPoP proof there.
            let exchanged = client
                .request(
                    &idp_endpoint,
                    &self.idp.auth,
                    idp_endpoint.as_str(),
                    form,
                    false,
                )
                .await?;
            if let Some(issued) = &exchanged.issued_token_type
                && issued != TOKEN_TYPE_ID_JAG
            {
                return Err(GrantError::BadResponse {
                    url: shown(&idp_endpoint),
                    status: 200,
                    detail: format!(
                        "the token exchange issued a {issued}, not an ID-JAG ({TOKEN_TYPE_ID_JAG}); check that the IdP supports enterprise-managed authorization for this client"
                    ),
                });
            }
            let form = jwt_bearer_form(&exchanged.access_token, scope, None);
            client
                .request(
                    &target.token_endpoint,
                    &self.auth,
                    target.issuer(),
                    form,
                    true,
                )
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::grant::tests::Stub;
    use crate::grant::{GRANT_JWT_BEARER, GrantProvider};

    #[test]
    fn the_token_exchange_asks_for_an_id_jag() {
        let form = token_exchange_form(
            &Secret::new("id-token"),
            "https://as.example.com",
            "https://mcp.example.com/mcp",
            Some("read".into()),
        );
        let get = |k: &str| form.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(
            get("grant_type"),
            Some("urn:ietf:params:oauth:grant-type:token-exchange")
        );
        assert_eq!(
            get("requested_token_type"),
            Some("urn:ietf:params:oauth:token-type:id-jag")
        );
        assert_eq!(get("subject_token"), Some("id-token"));
        assert_eq!(
            get("subject_token_type"),
            Some("urn:ietf:params:oauth:token-type:id_token")
        );
        assert_eq!(get("audience"), Some("https://as.example.com"));
        assert_eq!(get("resource"), Some("https://mcp.example.com/mcp"));
        assert_eq!(get("scope"), Some("read"));
    }

    #[tokio::test]
    async fn exchanges_at_the_idp_then_presents_the_id_jag() {
        let stub = Stub::start().await;
        stub.standard();
        stub.reply(
            "/idp/token",
            200,
            Vec::new(),
            json!({"access_token": "the-id-jag", "issued_token_type": TOKEN_TYPE_ID_JAG, "token_type": "N_A"}),
        );
        stub.reply("/token", 200, Vec::new(), json!({"access_token": "at"}));
        let idp = IdentityProvider::new(
            format!("{}/idp/token", stub.base),
            ClientAuth::None {
                client_id: "idp-client".into(),
            },
        );
        let grant = EnterpriseGrant::new(
            idp,
            Secret::new("id-token"),
            ClientAuth::SecretBasic {
                client_id: "mcp-client".into(),
                secret: Secret::new("s"),
            },
        );
        let provider = GrantProvider::builder(format!("{}/mcp", stub.base), grant)
            .allow_http_loopback(true)
            .expected_issuer(stub.base.clone())
            .build()
            .unwrap();
        provider.authorize(Some(&stub.challenge())).await.unwrap();
        let requests = stub.token_requests();
        assert_eq!(requests.len(), 2);
        let exchange = &requests[0];
        assert_eq!(exchange.path, "/idp/token");
        assert_eq!(exchange.form["client_id"], "idp-client");
        assert_eq!(exchange.form["audience"], stub.base.as_str());
        assert_eq!(exchange.form["resource"], format!("{}/mcp", stub.base));
        let bearer = &requests[1];
        assert_eq!(bearer.path, "/token");
        assert_eq!(bearer.form["grant_type"], GRANT_JWT_BEARER);
        assert_eq!(bearer.form["assertion"], "the-id-jag");
        assert!(bearer.headers["authorization"].starts_with("Basic "));
    }

    #[tokio::test]
    async fn another_issued_token_type_is_refused() {
        let stub = Stub::start().await;
        stub.standard();
        stub.reply(
            "/idp/token",
            200,
            Vec::new(),
            json!({"access_token": "x", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}),
        );
        let idp = IdentityProvider::new(format!("{}/idp/token", stub.base), ClientAuth::Anonymous);
        let grant = EnterpriseGrant::new(idp, Secret::new("id"), ClientAuth::Anonymous);
        let provider = GrantProvider::builder(format!("{}/mcp", stub.base), grant)
            .allow_http_loopback(true)
            .expected_issuer(stub.base.clone())
            .build()
            .unwrap();
        let error = provider.authorize(None).await.unwrap_err();
        assert!(error.to_string().contains("not an ID-JAG"), "{error}");
        assert_eq!(
            stub.token_requests().len(),
            1,
            "nothing presented to the AS"
        );
    }
}
