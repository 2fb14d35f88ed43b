//! The `auth/*` scenarios that use the authorization code flow: the
//! transport gets an interactive OAuth provider whose "browser" is the
//! library's `RedirectAgent`, which reads the authorization endpoint's
//! redirect itself (the suite's authorization server redirects straight
//! back with a code, no user involved). `auth/dpop` and `auth/dpop-nonce`
//! are the same flow with a DPoP key.
//!
//! Everything else is the library as an application would configure it: a
//! client name and loopback redirect URI, a Client ID Metadata Document URL
//! (used where the authorization server supports it), pre-registered
//! credentials when the scenario hands some over, plain HTTP to loopback
//! allowed (the suite's servers listen on `localhost`), and a credential
//! store that lives as long as the process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard::Error;
use switchboard::transport::http::HttpConfig;
use switchboard_auth::dpop::DpopKey;
use switchboard_auth::flow::{OAuthConfig, OAuthFlow, RedirectAgent};
use switchboard_auth::provider::OAuthProvider;
use switchboard_auth::store::{
    CredentialKey, CredentialStore, Secret, StoreError, StoredCredentials,
};

/// Where the authorization server sends the user back; nothing listens
/// there, the redirect is read from the authorization endpoint's answer.
const REDIRECT_URI: &str = "http://127.0.0.1:8976/callback";

/// The client's metadata document URL, the one the suite's `auth/basic-cimd`
/// expects as `client_id`.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

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
    let mut oauth = OAuthConfig::new(
        "switchboard-conformance",
        REDIRECT_URI,
        Arc::new(MemoryStore::default()),
    )
    .allow_http_loopback(true)
    .client_metadata_url(CLIENT_METADATA_URL);
    if let Some(client_id) = context.get("client_id").and_then(Value::as_str) {
        let secret = context
            .get("client_secret")
            .and_then(Value::as_str)
            .map(Secret::new);
        // The suite hands over the secret with the server it tests and
        // names no issuer: both are its own.
        oauth = oauth
            .pre_registered(client_id, secret)
            .trust_any_issuer(true);
    }
    if matches!(scenario, "auth/dpop" | "auth/dpop-nonce") {
        oauth = oauth.dpop(DpopKey::generate().map_err(config_error)?);
    }
    let flow = OAuthFlow::new(oauth).map_err(config_error)?;
    let agent = RedirectAgent::new().map_err(config_error)?;
    let provider = OAuthProvider::interactive(flow, url, Arc::new(agent));
    Ok(config.auth(Arc::new(provider)))
}

fn config_error(e: impl std::fmt::Display) -> Error {
    Error::Config {
        setting: "oauth",
        reason: e.to_string(),
    }
}

/// Credentials for this process only.
#[derive(Debug, Default)]
struct MemoryStore {
    entries: Mutex<HashMap<CredentialKey, StoredCredentials>>,
}

impl MemoryStore {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<CredentialKey, StoredCredentials>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl CredentialStore for MemoryStore {
    fn load(&self, key: &CredentialKey) -> Result<Option<StoredCredentials>, StoreError> {
        Ok(self.entries().get(key).cloned())
    }

    fn update(
        &self,
        key: &CredentialKey,
        f: &mut dyn FnMut(Option<StoredCredentials>) -> Option<StoredCredentials>,
    ) -> Result<Option<StoredCredentials>, StoreError> {
        let mut entries = self.entries();
        let updated = f(entries.get(key).cloned());
        match &updated {
            Some(credentials) => entries.insert(key.clone(), credentials.clone()),
            None => entries.remove(key),
        };
        Ok(updated)
    }
}
