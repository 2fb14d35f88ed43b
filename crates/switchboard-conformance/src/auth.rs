//! The `auth/*` scenarios that use the authorization code flow: the
//! transport gets an OAuth provider that logs in headlessly (the suite's
//! authorization server redirects straight back with a code).

use serde_json::Value;
use switchboard::Error;
use switchboard::transport::http::HttpConfig;

/// `config` as the scenario needs it: unchanged for scenarios without
/// authorization, with an auth provider for `auth/*` ones.
pub(crate) async fn configure(
    config: HttpConfig,
    url: &str,
    scenario: &str,
    context: &Value,
) -> Result<HttpConfig, Error> {
    if !scenario.starts_with("auth/") {
        return Ok(config);
    }
    if crate::auth_ext::handles(scenario) {
        return crate::auth_ext::configure(config, url, scenario, context).await;
    }
    let _ = url;
    Ok(config)
}
