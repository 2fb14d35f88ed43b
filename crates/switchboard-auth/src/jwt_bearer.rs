//! The JWT bearer grant (RFC 7523 §2.1) for workload identity federation
//! (the MCP `io.modelcontextprotocol/auth/wif` extension): a workload
//! trades a JWT its platform issued (a Kubernetes service account token,
//! a CI job's OIDC token …) for an access token.
//!
//! ```no_run
//! use switchboard_auth::grant::{ClientAuth, GrantProvider};
//! use switchboard_auth::jwt_bearer::{AssertionFile, JwtBearer};
//! # fn main() -> Result<(), switchboard_auth::grant::GrantError> {
//! // Re-read on every grant: platforms rotate these files.
//! let grant = JwtBearer::new(AssertionFile::new("/var/run/secrets/tokens/mcp"))
//!     .client(ClientAuth::None { client_id: "my-workload".into() });
//! let provider = GrantProvider::builder("https://mcp.example.com/mcp", grant)
//!     .expected_issuer("https://auth.example.com")
//!     .build()?;
//! # let _ = provider; Ok(()) }
//! ```
//!
//! A refusal (`invalid_grant`, `invalid_scope`, `unauthorized_client`) is
//! reported as it is: the grant is not retried and no other grant is tried.

use std::fmt;
use std::path::PathBuf;

use switchboard::transport::BoxFuture;

use crate::client_credentials::requested_scope;
use crate::grant::{
    ClientAuth, Discovered, GRANT_JWT_BEARER, Grant, GrantError, TokenClient, TokenSet,
};
use crate::store::Secret;

/// Where the assertion comes from.
pub trait AssertionSource: Send + Sync + fmt::Debug + 'static {
    /// The assertion to present to the authorization server whose issuer
    /// is `audience`.
    fn assertion<'a>(&'a self, audience: &'a str) -> BoxFuture<'a, Result<Secret, GrantError>>;
}

/// A fixed assertion (for a token obtained elsewhere).
impl AssertionSource for Secret {
    fn assertion<'a>(&'a self, _audience: &'a str) -> BoxFuture<'a, Result<Secret, GrantError>> {
        Box::pin(async move { Ok(self.clone()) })
    }
}

/// An assertion read from a file each time it is needed (whitespace
/// trimmed), as platforms that rotate workload tokens provide them.
#[derive(Debug, Clone)]
pub struct AssertionFile {
    path: PathBuf,
}

impl AssertionFile {
    /// Reads `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

/// Largest assertion file read.
const MAX_ASSERTION: u64 = 64 * 1024;

impl AssertionSource for AssertionFile {
    fn assertion<'a>(&'a self, _audience: &'a str) -> BoxFuture<'a, Result<Secret, GrantError>> {
        Box::pin(async move {
            let path = self.path.clone();
            let read = tokio::task::spawn_blocking(move || {
                use std::io::Read as _;
                let mut text = String::new();
                std::fs::File::open(&path)?
                    .take(MAX_ASSERTION)
                    .read_to_string(&mut text)?;
                Ok::<_, std::io::Error>(text)
            })
            .await
            .map_err(std::io::Error::other)
            .and_then(|r| r);
            let error = |source| GrantError::Assertion {
                path: self.path.display().to_string(),
                source,
            };
            let text = read.map_err(error)?;
            let token = text.trim();
            if token.is_empty() {
                return Err(error(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the file is empty",
                )));
            }
            Ok(Secret::new(token))
        })
    }
}

/// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` with an
/// assertion from an [`AssertionSource`].
#[derive(Debug)]
pub struct JwtBearer {
    source: Box<dyn AssertionSource>,
    auth: ClientAuth,
    scopes: Option<Vec<String>>,
}

impl JwtBearer {
    /// The grant presenting `source`'s assertion, without client
    /// authentication (the assertion identifies the workload).
    pub fn new(source: impl AssertionSource) -> Self {
        Self {
            source: Box::new(source),
            auth: ClientAuth::Anonymous,
            scopes: None,
        }
    }

    /// Authenticates the client too (or names it, with
    /// [`ClientAuth::None`]).
    #[must_use]
    pub fn client(mut self, auth: ClientAuth) -> Self {
        self.auth = auth;
        self
    }

    /// Scopes to request instead of those the server names.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = String>) -> Self {
        self.scopes = Some(scopes.into_iter().collect());
        self
    }
}

/// The form of a JWT bearer token request.
pub(crate) fn jwt_bearer_form(
    assertion: &Secret,
    scope: Option<String>,
    resource: Option<&str>,
) -> Vec<(&'static str, String)> {
    let mut form = vec![
        ("grant_type", GRANT_JWT_BEARER.to_owned()),
        ("assertion", assertion.expose().to_owned()),
    ];
    if let Some(resource) = resource {
        form.push(("resource", resource.to_owned()));
    }
    if let Some(scope) = scope {
        form.push(("scope", scope));
    }
    form
}

impl Grant for JwtBearer {
    fn obtain<'a>(
        &'a self,
        client: &'a TokenClient,
        target: &'a Discovered,
    ) -> BoxFuture<'a, Result<TokenSet, GrantError>> {
        Box::pin(async move {
            let assertion = self.source.assertion(target.issuer()).await?;
            let form = jwt_bearer_form(
                &assertion,
                requested_scope(self.scopes.as_deref(), target),
                Some(&target.resource),
            );
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
    use crate::grant::GrantProvider;
    use crate::grant::tests::Stub;

    #[tokio::test]
    async fn presents_the_workload_jwt_from_a_file() {
        let dir = std::env::temp_dir().join(format!("sb-wif-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "header.payload.sig\n").unwrap();
        let stub = Stub::start().await;
        stub.standard();
        stub.reply("/token", 200, Vec::new(), json!({"access_token": "at"}));
        let grant = JwtBearer::new(AssertionFile::new(&path)).client(ClientAuth::None {
            client_id: "workload".into(),
        });
        let provider = GrantProvider::builder(format!("{}/mcp", stub.base), grant)
            .allow_http_loopback(true)
            .expected_issuer(stub.base.clone())
            .build()
            .unwrap();
        provider.authorize(None).await.unwrap();
        let request = &stub.token_requests()[0];
        assert_eq!(request.form["grant_type"], GRANT_JWT_BEARER);
        assert_eq!(request.form["assertion"], "header.payload.sig");
        assert_eq!(request.form["client_id"], "workload");
        std::fs::remove_file(&path).unwrap();
        let error = AssertionFile::new(&path)
            .assertion("aud")
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("cannot read the assertion from"),
            "{error}"
        );
        let _ = std::fs::remove_dir(&dir);
    }

    #[test]
    fn anonymous_requests_name_no_client() {
        assert_eq!(ClientAuth::Anonymous.client_id(), None);
        let form = jwt_bearer_form(&Secret::new("a"), None, None);
        assert_eq!(form.len(), 2);
    }
}
