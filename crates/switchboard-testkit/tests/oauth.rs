//! The OAuth client end to end against the test server's authorization
//! server (`--auth`): discovery, dynamic registration, PKCE, the code
//! exchange, calls with the token, refresh, and a second store on the
//! same file that finds the registration and tokens and refreshes.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::HttpServer;
use switchboard::Client;
use switchboard::auth::flow::{OAuthConfig, OAuthFlow};
use switchboard::auth::provider::OAuthProvider;
use switchboard::auth::store::{CredentialStore, FileStore};
use switchboard::transport::http::HttpConfig;

const REDIRECT: &str = "http://127.0.0.1:9/callback";

fn flow(store: Arc<dyn CredentialStore>) -> OAuthFlow {
    OAuthFlow::new(OAuthConfig::new("switchboard-test", REDIRECT, store).allow_http_loopback(true))
        .expect("valid settings")
}

/// Plays the user's browser: follows the authorization URL to the
/// redirect and returns its `code`, `state` and `iss`.
async fn approve(url: &str) -> (String, String, Option<String>) {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = http.get(url).send().await.unwrap();
    assert_eq!(
        response.status().as_u16(),
        302,
        "{:?}",
        response.text().await
    );
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(REDIRECT), "{location}");
    let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    (
        query["code"].clone(),
        query["state"].clone(),
        query.get("iss").cloned(),
    )
}

async fn stats(server: &HttpServer) -> Value {
    reqwest::get(server.url("/auth/stats"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn echo(client: &Client) -> String {
    let result = client
        .call_tool("echo", json!({"text": "hi"}).as_object().cloned())
        .await
        .unwrap();
    serde_json::to_value(&result.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn log_in_call_refresh_and_reuse_the_stored_credentials() {
    // Tokens live 2 s: every call after the first is inside the refresh
    // margin, so the provider refreshes before sending.
    let server = HttpServer::start(&["--era", "legacy", "--auth", "--auth-token-ttl-secs", "2"]);
    let mcp = server.url("/mcp");
    let dir = std::env::temp_dir().join(format!("switchboard-oauth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("credentials.json");

    // Without credentials the server refuses, and says so.
    let error = Client::connect(HttpConfig::new(&mcp)).await.unwrap_err();
    assert!(error.is_auth_required(), "{error:?}");

    // Log in: discovery, registration, PKCE, the code exchange.
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(path.clone()));
    let login = flow(store.clone());
    let request = login.begin(&mcp, None).await.unwrap();
    let url = request.authorization_url.to_string();
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let (code, state, iss) = approve(&url).await;
    let credentials = login.finish(&code, &state, iss.as_deref()).await.unwrap();
    assert!(credentials.refresh_token.is_some());
    let before = stats(&server).await;
    assert_eq!(before["clients_registered"], 1);
    assert_eq!(before["codes_issued"], 1);

    // Calls carry the token; an expiring one is refreshed first.
    let provider = Arc::new(OAuthProvider::for_credentials(login, &credentials));
    let client = Client::connect(HttpConfig::new(&mcp).auth(provider))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "hi");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(echo(&client).await, "hi");
    let after = stats(&server).await;
    assert!(after["refreshed"].as_u64().unwrap() >= 1, "{after}");
    client.close().await;

    // Another process: a fresh store on the same file finds the client
    // and the tokens, and refreshes with them.
    let again: Arc<dyn CredentialStore> = Arc::new(FileStore::new(path.clone()));
    let stored = again.load(&credentials.key()).unwrap().expect("stored");
    assert_eq!(stored.client_id, credentials.client_id);
    // A native client registers as a public one (no secret); whatever
    // the registration gave is what the file holds.
    assert_eq!(
        stored.client_secret.as_ref().map(|s| s.expose().to_owned()),
        credentials
            .client_secret
            .as_ref()
            .map(|s| s.expose().to_owned())
    );
    let provider = Arc::new(OAuthProvider::new(flow(again), credentials.key()));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let client = Client::connect(HttpConfig::new(&mcp).auth(provider))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "hi");
    let last = stats(&server).await;
    assert!(
        last["refreshed"].as_u64() > after["refreshed"].as_u64(),
        "{last}"
    );
    assert_eq!(last["clients_registered"], 1, "no second registration");
    let _ = std::fs::remove_dir_all(&dir);
}
