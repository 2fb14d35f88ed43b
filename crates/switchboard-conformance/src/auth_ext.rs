//! The extension `auth/*` scenarios without a user: client credentials
//! (`client_secret_basic`, `private_key_jwt`), enterprise-managed
//! authorization (cross-app access) and workload identity (JWT bearer).
//! DPoP (`auth/dpop`, `auth/dpop-nonce`) is the authorization code flow
//! with a key, in [`crate::auth`].
//!
//! Each is a library grant behind a `GrantProvider`, configured from what
//! the suite hands over in `MCP_CONFORMANCE_CONTEXT`, as an application
//! would from its own configuration.

use std::sync::Arc;

use serde_json::Value;
use switchboard::Error;
use switchboard::transport::http::HttpConfig;
use switchboard_auth::client_credentials::ClientCredentials;
use switchboard_auth::enterprise::{EnterpriseGrant, IdentityProvider};
use switchboard_auth::grant::{ClientAuth, Grant, GrantProvider};
use switchboard_auth::jwt::{JwtAlgorithm, JwtSigner};
use switchboard_auth::jwt_bearer::JwtBearer;
use switchboard_auth::store::Secret;

/// Whether `scenario` is one of the extension scenarios this module drives
/// (`cross-app-access-complete-flow` is 0.1.16's name for alpha.12's
/// `enterprise-managed-authorization`).
pub(crate) fn handles(scenario: &str) -> bool {
    matches!(
        scenario,
        "auth/client-credentials-basic"
            | "auth/client-credentials-jwt"
            | "auth/cross-app-access-complete-flow"
            | "auth/enterprise-managed-authorization"
            | "auth/wif-jwt-bearer"
    )
}

/// `config` with the provider the extension scenario needs.
pub(crate) async fn configure(
    config: HttpConfig,
    url: &str,
    scenario: &str,
    context: &Value,
) -> Result<HttpConfig, Error> {
    let provider = match scenario {
        "auth/client-credentials-basic" => provider(
            url,
            ClientCredentials::new(ClientAuth::SecretBasic {
                client_id: text(context, "client_id")?,
                secret: Secret::new(text(context, "client_secret")?),
            }),
        ),
        "auth/client-credentials-jwt" => {
            let algorithm = match context.get("signing_algorithm").and_then(Value::as_str) {
                None => JwtAlgorithm::Es256,
                Some(name) => JwtAlgorithm::parse(name).ok_or_else(|| {
                    config_error(format!("signing algorithm {name:?} is not supported"))
                })?,
            };
            let key = JwtSigner::from_pem(&text(context, "private_key_pem")?, algorithm)
                .map_err(|e| config_error(e.to_string()))?;
            provider(
                url,
                ClientCredentials::new(ClientAuth::PrivateKeyJwt {
                    client_id: text(context, "client_id")?,
                    key: Arc::new(key),
                }),
            )
        }
        "auth/cross-app-access-complete-flow" | "auth/enterprise-managed-authorization" => {
            let idp = IdentityProvider::new(
                text(context, "idp_token_endpoint")?,
                ClientAuth::None {
                    client_id: text(context, "idp_client_id")?,
                },
            );
            provider(
                url,
                EnterpriseGrant::new(
                    idp,
                    Secret::new(text(context, "idp_id_token")?),
                    ClientAuth::SecretBasic {
                        client_id: text(context, "client_id")?,
                        secret: Secret::new(text(context, "client_secret")?),
                    },
                ),
            )
        }
        "auth/wif-jwt-bearer" => {
            let mut grant = JwtBearer::new(Secret::new(text(context, "valid_jwt")?));
            if let Some(client_id) = context.get("client_id").and_then(Value::as_str) {
                grant = grant.client(ClientAuth::None {
                    client_id: client_id.to_owned(),
                });
            }
            provider(url, grant)
        }
        _ => return Ok(config),
    }?;
    Ok(config.auth(Arc::new(provider)))
}

fn provider(url: &str, grant: impl Grant) -> Result<GrantProvider, Error> {
    GrantProvider::builder(url, grant)
        // The suite's servers listen on http://localhost.
        .allow_http_loopback(true)
        // The suite hands over the credentials with the server it tests
        // and names no issuer: both are its own.
        .trust_any_issuer(true)
        .build()
        .map_err(|e| config_error(e.to_string()))
}

/// A string the scenario must hand over.
fn text(context: &Value, name: &str) -> Result<String, Error> {
    context
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| config_error(format!("MCP_CONFORMANCE_CONTEXT has no `{name}`")))
}

fn config_error(reason: String) -> Error {
    Error::Config {
        setting: "oauth",
        reason,
    }
}
