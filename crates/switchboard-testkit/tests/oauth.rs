//! The OAuth client end to end against the test server's authorization
//! server (`--auth`): discovery, dynamic registration, PKCE, the code
//! exchange, calls with the token, refresh, a second store on the same
//! file; then, with `switchboard-oauth-client` as the other process: a
//! restart that refreshes with the stored confidential client, two
//! processes refreshing at once, step-up, an issuer change, and the
//! non-standard refresh error.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use support::HttpServer;
use switchboard::Client;
use switchboard::transport::BoxFuture;
use switchboard::transport::http::HttpConfig;
use switchboard_auth::flow::{
    AuthorizationRequest, Authorizer, OAuthConfig, OAuthError, OAuthFlow,
};
use switchboard_auth::provider::{LoginReason, OAuthProvider};
use switchboard_auth::store::{CredentialKey, CredentialStore, FileStore, StoredCredentials};

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

/// A query parameter of `url`.
fn query_param(url: &str, name: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// What a user's login did: the credentials stored, and the authorization
/// request's `client_id` and `scope`.
struct Login {
    credentials: StoredCredentials,
    client_id: String,
    scope: Vec<String>,
}

/// Logs in through `flow` as an application does: `begin` with the
/// server's challenge, the user approves, `finish`.
async fn log_in(flow: &OAuthFlow, mcp: &str, challenge: Option<&str>) -> Login {
    let request = flow.begin(mcp, challenge).await.unwrap();
    let url = request.authorization_url.to_string();
    let client_id = query_param(&url, "client_id").expect("client_id");
    let scope = query_param(&url, "scope")
        .unwrap_or_default()
        .split(' ')
        .map(str::to_owned)
        .collect();
    let (code, state, iss) = approve(&url).await;
    let credentials = flow.finish(&code, &state, iss.as_deref()).await.unwrap();
    Login {
        credentials,
        client_id,
        scope,
    }
}

/// The server's `WWW-Authenticate` challenge to a request without a token.
async fn challenge(server: &HttpServer) -> String {
    let response = reqwest::Client::new()
        .post(server.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned()
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
    call(client, "echo").await.unwrap()
}

async fn call(client: &Client, tool: &str) -> Result<String, switchboard::Error> {
    let result = client
        .call_tool(tool, json!({"text": "hi"}).as_object().cloned())
        .await?;
    Ok(serde_json::to_value(&result.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned())
}

/// A directory of its own for one test's credentials file, removed when
/// dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("switchboard-oauth-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn credentials(&self) -> PathBuf {
        self.0.join("credentials.json")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Starts `switchboard-oauth-client` on the credentials stored in `store`
/// under `key`, against `server`'s `/mcp`.
#[cfg(feature = "oauth-client")]
fn spawn_client(
    store: &Path,
    server: &HttpServer,
    key: &CredentialKey,
    extra: &[&str],
) -> std::process::Child {
    std::process::Command::new(support::oauth_client())
        .arg("--store")
        .arg(store)
        .args(["--server", &server.url("/mcp")])
        .args(["--resource", &key.resource, "--issuer", &key.issuer])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start switchboard-oauth-client")
}

/// The JSON line a `switchboard-oauth-client` run printed.
#[cfg(feature = "oauth-client")]
fn outcome(child: std::process::Child) -> Value {
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "switchboard-oauth-client printed {stdout:?} ({e}), status {}, stderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// One `switchboard-oauth-client` run, to the end.
#[cfg(feature = "oauth-client")]
fn run_client(store: &Path, server: &HttpServer, key: &CredentialKey, extra: &[&str]) -> Value {
    outcome(spawn_client(store, server, key, extra))
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

#[cfg(feature = "oauth-client")]
#[tokio::test]
async fn a_new_process_refreshes_with_the_stored_client_secret() {
    // The server makes every registered client confidential, and tokens
    // live 2 s, inside the refresh margin: each run refreshes, which needs
    // the client secret the registration gave.
    let mut server = HttpServer::start(&[
        "--era",
        "legacy",
        "--auth-token-ttl-secs",
        "2",
        "--auth-quirk",
        "confidential-clients",
    ]);
    let issuer = server.auth_issuer();
    let dir = TempDir::new("restart");
    let path = dir.credentials();
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&path));
    let login = log_in(&flow(store), &server.url("/mcp"), None).await;
    let credentials = login.credentials;
    assert_eq!(credentials.issuer, issuer);
    let secret = credentials
        .client_secret
        .clone()
        .expect("the registration gave a client secret");

    // What a new process finds in the file.
    let stored = FileStore::new(&path)
        .load(&credentials.key())
        .unwrap()
        .expect("stored");
    assert_eq!(stored.client_id, credentials.client_id);
    assert_eq!(stored.client_secret.as_ref(), Some(&secret));
    assert_eq!(stored.refresh_token, credentials.refresh_token);

    let key = credentials.key();
    let first = run_client(&path, &server, &key, &[]);
    assert_eq!(first["ok"], true, "{first}");
    assert_eq!(first["text"], "hi");
    let rotated = FileStore::new(&path).load(&key).unwrap().unwrap();
    let printed = first.to_string();
    for secret in [
        Some(&secret),
        rotated.access_token.as_ref(),
        rotated.refresh_token.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        assert!(!printed.contains(secret.expose()), "a secret was printed");
    }
    let after_first = stats(&server).await;
    assert!(
        after_first["refreshed"].as_u64().unwrap() >= 1,
        "{after_first}"
    );

    // Restarted again: the refresh token the first run rotated is in the
    // file, and works.
    let second = run_client(&path, &server, &key, &[]);
    assert_eq!(second["ok"], true, "{second}");
    let after_second = stats(&server).await;
    assert!(
        after_second["refreshed"].as_u64() > after_first["refreshed"].as_u64(),
        "{after_second}"
    );
    assert_eq!(after_second["clients_registered"], 1, "no new registration");
    assert_eq!(after_second["codes_issued"], 1, "no new login");
    assert_eq!(after_second["refresh_reused"], 0);
    let stored = FileStore::new(&path).load(&key).unwrap().unwrap();
    assert_eq!(stored.client_secret.as_ref(), Some(&secret));
    assert_ne!(stored.refresh_token, credentials.refresh_token, "rotated");

    // Without the secret the same file does not serve: the runs above
    // really used it.
    FileStore::new(&path)
        .update(&key, &mut |c| {
            let mut c = c?;
            c.client_secret = None;
            Some(c)
        })
        .unwrap();
    let without = run_client(&path, &server, &key, &[]);
    assert_eq!(without["ok"], false, "{without}");
}

#[cfg(feature = "oauth-client")]
#[tokio::test]
async fn two_processes_refreshing_at_once_lose_no_rotated_token() {
    // Tokens live 2 s, inside the refresh margin, so every request of both
    // processes refreshes, and every refresh rotates the refresh token.
    let mut server = HttpServer::start(&["--era", "legacy", "--auth-token-ttl-secs", "2"]);
    server.auth_issuer();
    let dir = TempDir::new("race");
    let path = dir.credentials();
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&path));
    let key = log_in(&flow(store), &server.url("/mcp"), None)
        .await
        .credentials
        .key();

    let calls = ["--calls", "5"];
    let a = spawn_client(&path, &server, &key, &calls);
    let b = spawn_client(&path, &server, &key, &calls);
    let (a, b) = (outcome(a), outcome(b));
    assert_eq!(a["ok"], true, "{a}");
    assert_eq!(b["ok"], true, "{b}");
    let during = stats(&server).await;
    // Each process connects and calls 5 times: well over 10 refreshes.
    assert!(during["refreshed"].as_u64().unwrap() >= 10, "{during}");
    assert_eq!(
        during["refresh_reused"], 0,
        "a rotated token was presented again: {during}"
    );

    // The refresh token in the file is the live one: a third run needs no
    // login.
    let c = run_client(&path, &server, &key, &[]);
    assert_eq!(c["ok"], true, "{c}");
    let after = stats(&server).await;
    assert_eq!(after["refresh_reused"], 0, "{after}");
    assert_eq!(after["codes_issued"], 1, "no second login");
    assert_eq!(after["clients_registered"], 1);
}

#[tokio::test]
async fn step_up_asks_for_the_union_of_scopes() {
    let mut server = HttpServer::start(&["--era", "legacy", "--auth"]);
    server.auth_issuer();
    let mcp = server.url("/mcp");
    let dir = TempDir::new("step-up");
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(dir.credentials()));
    let login = flow(store);
    // The first login asks for what the 401 names: mcp:read.
    let first = log_in(&login, &mcp, Some(&challenge(&server).await)).await;
    assert!(
        first.scope.iter().any(|s| s == "mcp:read"),
        "{:?}",
        first.scope
    );
    assert!(
        !first.scope.iter().any(|s| s == "mcp:admin"),
        "{:?}",
        first.scope
    );
    assert_eq!(first.credentials.scopes, ["mcp:read"]);

    let provider = Arc::new(OAuthProvider::for_credentials(
        login.clone(),
        &first.credentials,
    ));
    let client = Client::connect(HttpConfig::new(&mcp).auth(provider.clone()))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "hi");

    // admin_echo needs mcp:admin; the 403 names only that scope.
    let error = call(&client, "admin_echo").await.unwrap_err();
    assert!(error.is_auth_required(), "{error:?}");
    let needed = provider.login_needed().expect("step-up needs the user");
    assert_eq!(needed.reason, LoginReason::StepUp { attempt: 1 });
    let www = needed.www_authenticate.expect("the 403 challenge");
    assert!(www.contains("insufficient_scope"), "{www}");

    // The step-up asks for the scopes held and the new one.
    let second = log_in(&login, &mcp, Some(&www)).await;
    for scope in ["mcp:read", "mcp:admin"] {
        assert!(
            second.scope.iter().any(|s| s == scope),
            "{:?}",
            second.scope
        );
    }
    assert_eq!(second.client_id, first.client_id, "the same registration");
    provider.reset();
    assert_eq!(call(&client, "admin_echo").await.unwrap(), "hi");
    // Everything needs mcp:read: the stepped-up token still has it.
    assert_eq!(echo(&client).await, "hi");
    assert_eq!(provider.login_needed(), None);
    client.close().await;
}

#[tokio::test]
async fn step_up_gives_up_after_three() {
    // The server never accepts any token for admin_echo.
    let mut server = HttpServer::start(&["--era", "legacy", "--auth-quirk", "step-up-loop"]);
    server.auth_issuer();
    let mcp = server.url("/mcp");
    let dir = TempDir::new("step-up-loop");
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(dir.credentials()));
    let login = flow(store);
    let first = log_in(&login, &mcp, Some(&challenge(&server).await)).await;
    let provider = Arc::new(OAuthProvider::for_credentials(
        login.clone(),
        &first.credentials,
    ));
    let client = Client::connect(HttpConfig::new(&mcp).auth(provider.clone()))
        .await
        .unwrap();

    // The application's loop: authorize whenever the provider asks to.
    let mut reasons = Vec::new();
    for _ in 0..6 {
        let error = call(&client, "admin_echo").await.unwrap_err();
        assert!(error.is_auth_required(), "{error:?}");
        let needed = provider.login_needed().expect("the provider says why");
        reasons.push(needed.reason.clone());
        match needed.reason {
            LoginReason::StepUp { .. } => {
                let www = needed.www_authenticate.expect("the 403 challenge");
                let again = log_in(&login, &mcp, Some(&www)).await;
                assert!(
                    again.scope.iter().any(|s| s == "mcp:admin"),
                    "{:?}",
                    again.scope
                );
                provider.reset();
            }
            _ => break,
        }
    }
    assert_eq!(
        reasons,
        [
            LoginReason::StepUp { attempt: 1 },
            LoginReason::StepUp { attempt: 2 },
            LoginReason::StepUp { attempt: 3 },
            LoginReason::StepUpExhausted,
        ]
    );
    assert_eq!(
        stats(&server).await["codes_issued"],
        4,
        "one login, three step-ups"
    );
    client.close().await;
}

#[tokio::test]
async fn a_declined_step_up_leaves_the_other_tools_working() {
    let mut server = HttpServer::start(&["--era", "legacy", "--auth"]);
    server.auth_issuer();
    let mcp = server.url("/mcp");
    let dir = TempDir::new("step-up-declined");
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(dir.credentials()));
    let login = flow(store);
    let first = log_in(&login, &mcp, Some(&challenge(&server).await)).await;
    let provider = Arc::new(OAuthProvider::for_credentials(login, &first.credentials));
    let client = Client::connect(HttpConfig::new(&mcp).auth(provider.clone()))
        .await
        .unwrap();
    let error = call(&client, "admin_echo").await.unwrap_err();
    assert!(error.is_auth_required(), "{error:?}");
    assert_eq!(
        provider.login_needed().map(|n| n.reason),
        Some(LoginReason::StepUp { attempt: 1 })
    );
    // The user does not authorize more: the token held still serves what
    // it was granted for.
    let echoed = call(&client, "echo").await;
    assert_eq!(echoed.as_deref().ok(), Some("hi"), "{echoed:?}");
    client.close().await;
}

#[cfg(feature = "oauth-client")]
#[tokio::test]
async fn a_new_issuer_gets_a_new_registration() {
    let dir = TempDir::new("issuer");
    let path = dir.credentials();
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&path));
    let login = flow(store.clone());

    let mut before = HttpServer::start(&["--era", "legacy", "--auth"]);
    let old_issuer = before.auth_issuer();
    let mcp = before.url("/mcp");
    let old = log_in(&login, &mcp, Some(&challenge(&before).await)).await;
    let old_key = old.credentials.key();
    assert_eq!(old_key.issuer, old_issuer);
    assert_eq!(run_client(&path, &before, &old_key, &[])["ok"], true);

    // The same server URL, now with another authorization server.
    let addr = before.addr().to_owned();
    drop(before);
    let mut after =
        HttpServer::start_on(&addr, &["--era", "legacy", "--auth-issuer-suffix", "two"]);
    let new_issuer = after.auth_issuer();
    assert_ne!(new_issuer, old_issuer);
    assert_eq!(after.url("/mcp"), mcp);

    let new = log_in(&login, &mcp, Some(&challenge(&after).await)).await;
    let new_key = new.credentials.key();
    assert_eq!(new_key.issuer, new_issuer);
    assert_eq!(new_key.resource, old_key.resource);
    assert_ne!(new.client_id, old.credentials.client_id, "registered anew");
    let counts = stats(&after).await;
    assert_eq!(counts["clients_registered"], 1, "{counts}");

    // Both issuers' credentials are kept apart in the file.
    let file = FileStore::new(&path);
    let kept = file
        .load(&old_key)
        .unwrap()
        .expect("the old issuer's entry");
    assert_eq!(kept.client_id, old.credentials.client_id);
    let current = file
        .load(&new_key)
        .unwrap()
        .expect("the new issuer's entry");
    assert_eq!(current.client_id, new.client_id);

    let run = run_client(&path, &after, &new_key, &[]);
    assert_eq!(run["ok"], true, "{run}");
}

#[cfg(feature = "oauth-client")]
#[tokio::test]
async fn after_an_issuer_change_the_old_credentials_ask_for_login() {
    let dir = TempDir::new("issuer-old");
    let path = dir.credentials();
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&path));
    let mut before = HttpServer::start(&["--era", "legacy", "--auth"]);
    before.auth_issuer();
    let old = log_in(
        &flow(store),
        &before.url("/mcp"),
        Some(&challenge(&before).await),
    )
    .await;
    let addr = before.addr().to_owned();
    drop(before);
    let mut after =
        HttpServer::start_on(&addr, &["--era", "legacy", "--auth-issuer-suffix", "two"]);
    after.auth_issuer();

    // A process with the old issuer's credentials: the new authorization
    // server knows neither the tokens nor the client. The user must be
    // asked to log in, not shown a refused refresh forever.
    let run = run_client(&path, &after, &old.credentials.key(), &[]);
    assert_eq!(run["ok"], false, "{run}");
    assert_eq!(run["auth_required"], true, "{run}");
    assert!(
        run["login_needed"].is_string(),
        "the user is not asked to log in: {run}"
    );
}

#[cfg(feature = "oauth-client")]
#[tokio::test]
async fn a_refresh_refused_with_http_200_asks_for_login() {
    // The authorization server answers every refresh with HTTP 200 and
    // {"error":"invalid_refresh_token"}.
    refresh_refused_asks_for_login("refresh-200-error").await;
}

#[cfg(feature = "oauth-client")]
#[tokio::test]
async fn a_refresh_refused_with_http_200_and_an_error_object_asks_for_login() {
    // {"error":{"code":"invalid_refresh_token","message":…}} with HTTP 200.
    refresh_refused_asks_for_login("refresh-200-error-object").await;
}

/// A refresh refused in the `quirk`'s way: the stored credentials' next
/// run says the user must log in (not a parse error), and a login mends it.
#[cfg(feature = "oauth-client")]
async fn refresh_refused_asks_for_login(quirk: &str) {
    let mut server = HttpServer::start(&["--era", "legacy", "--auth-quirk", quirk]);
    server.auth_issuer();
    let mcp = server.url("/mcp");
    let dir = TempDir::new(quirk);
    let path = dir.credentials();
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&path));
    let login = flow(store.clone());
    let first = log_in(&login, &mcp, Some(&challenge(&server).await)).await;
    let key = first.credentials.key();
    // An hour later: the stored access token has expired.
    let expire = |store: &Arc<dyn CredentialStore>| {
        store
            .update(&key, &mut |c| {
                let mut c = c?;
                c.expires_at = Some(SystemTime::now() - Duration::from_secs(1));
                Some(c)
            })
            .unwrap()
    };
    expire(&store);

    let run = run_client(&path, &server, &key, &[]);
    assert_eq!(run["ok"], false, "{run}");
    assert_eq!(run["auth_required"], true, "{run}");
    assert_eq!(run["login_needed"], "NotLoggedIn", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        !error.contains("token response") && !error.contains("parse"),
        "reported as a parse error: {error}"
    );
    // The registration is kept.
    let stored = store.load(&key).unwrap().expect("the registration stays");
    assert_eq!(stored.client_id, first.credentials.client_id);

    // Logging in again works, with the same registration.
    let again = log_in(&login, &mcp, Some(&challenge(&server).await)).await;
    assert_eq!(again.client_id, first.credentials.client_id);
    let run = run_client(&path, &server, &key, &[]);
    assert_eq!(run["ok"], true, "{run}");
    assert_eq!(stats(&server).await["clients_registered"], 1);
}

/// Lets the runtime see the connections a stopped server closed: the
/// shared HTTP client's pool would otherwise hand the restarted server's
/// first request a dead connection (the test blocked the runtime while it
/// stopped and restarted the server, which an application would not).
/// The closes are there already (the old server's process has exited):
/// each yield lets the runtime poll its I/O driver and run the tasks it
/// woke, the pool's connection tasks that read the close among them.
async fn settle() {
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
}

/// What one authorization asked the user for.
#[derive(Debug, Clone)]
struct Asked {
    issuer: String,
    client_id: String,
    scope: Vec<String>,
}

/// Plays the user's browser for an interactive provider: approves every
/// authorization at once, and remembers what each asked for.
#[derive(Debug, Default)]
struct Browser {
    asked: std::sync::Mutex<Vec<Asked>>,
    /// The user approves this many authorizations and closes the browser
    /// on the others (`None`: approves all).
    approves: Option<usize>,
}

impl Browser {
    fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }
}

impl Authorizer for Browser {
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<reqwest::Url, OAuthError>> {
        Box::pin(async move {
            let url = request.authorization_url.to_string();
            let count = self.asked.lock().unwrap().len();
            self.asked.lock().unwrap().push(Asked {
                issuer: request.issuer.clone(),
                client_id: query_param(&url, "client_id").unwrap_or_default(),
                scope: request
                    .scope
                    .as_deref()
                    .unwrap_or_default()
                    .split(' ')
                    .map(str::to_owned)
                    .collect(),
            });
            if self.approves.is_some_and(|n| count >= n) {
                return Err(OAuthError::Interaction(
                    "the user closed the browser".into(),
                ));
            }
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let response = http
                .get(&url)
                .send()
                .await
                .map_err(|e| OAuthError::Interaction(Box::new(e)))?;
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    OAuthError::Interaction(format!("no redirect: {}", response.status()).into())
                })?;
            reqwest::Url::parse(location).map_err(|e| OAuthError::Interaction(Box::new(e)))
        })
    }
}

/// An interactive provider for `server`'s `/mcp`, logging in through a
/// [`Browser`], its credentials in `store`.
fn interactive(server: &HttpServer, store: &Path) -> (Arc<OAuthProvider>, Arc<Browser>) {
    interactive_with(server, store, Browser::default())
}

fn interactive_with(
    server: &HttpServer,
    store: &Path,
    browser: Browser,
) -> (Arc<OAuthProvider>, Arc<Browser>) {
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(store));
    let browser = Arc::new(browser);
    let provider = OAuthProvider::interactive(flow(store), server.url("/mcp"), browser.clone());
    (Arc::new(provider), browser)
}

fn has(scopes: &[String], scope: &str) -> bool {
    scopes.iter().any(|s| s == scope)
}

#[tokio::test]
async fn the_interactive_provider_logs_in_and_steps_up_with_the_union_of_scopes() {
    let mut server = HttpServer::start(&["--era", "legacy", "--auth"]);
    server.auth_issuer();
    let dir = TempDir::new("interactive-step-up");
    let (provider, browser) = interactive(&server, &dir.credentials());
    let client = Client::connect(HttpConfig::new(server.url("/mcp")).auth(provider.clone()))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "hi");
    let first = browser.asked();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(has(&first[0].scope, "mcp:read"), "{first:?}");
    assert!(!has(&first[0].scope, "mcp:admin"), "{first:?}");

    // admin_echo's 403 names only mcp:admin: the provider logs in again
    // asking for both, and the call goes through.
    assert_eq!(call(&client, "admin_echo").await.unwrap(), "hi");
    let asked = browser.asked();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(has(&asked[1].scope, "mcp:read"), "{asked:?}");
    assert!(has(&asked[1].scope, "mcp:admin"), "{asked:?}");
    assert_eq!(asked[1].client_id, asked[0].client_id);
    assert_eq!(echo(&client).await, "hi");
    let counts = stats(&server).await;
    assert_eq!(counts["clients_registered"], 1, "{counts}");
    assert_eq!(counts["codes_issued"], 2, "{counts}");
    client.close().await;
}

#[tokio::test]
async fn an_interactive_step_up_the_user_declines_leaves_the_other_tools_working() {
    let mut server = HttpServer::start(&["--era", "legacy", "--auth"]);
    server.auth_issuer();
    let dir = TempDir::new("interactive-step-up-declined");
    let browser = Browser {
        approves: Some(1),
        ..Browser::default()
    };
    let (provider, browser) = interactive_with(&server, &dir.credentials(), browser);
    let client = Client::connect(HttpConfig::new(server.url("/mcp")).auth(provider.clone()))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "hi");
    let error = call(&client, "admin_echo").await.unwrap_err();
    assert!(error.is_auth_required(), "{error:?}");
    assert_eq!(browser.asked().len(), 2, "the step-up was asked for");
    // The token held still serves what it was granted for, without asking
    // the user again.
    assert_eq!(echo(&client).await, "hi");
    assert_eq!(echo(&client).await, "hi");
    assert_eq!(browser.asked().len(), 2, "{:?}", browser.asked());
    client.close().await;
}

#[tokio::test]
async fn the_interactive_provider_gives_up_after_three_step_ups() {
    let mut server = HttpServer::start(&["--era", "legacy", "--auth-quirk", "step-up-loop"]);
    server.auth_issuer();
    let dir = TempDir::new("interactive-step-up-loop");
    let (provider, browser) = interactive(&server, &dir.credentials());
    let client = Client::connect(HttpConfig::new(server.url("/mcp")).auth(provider.clone()))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "hi");
    for _ in 0..5 {
        let error = call(&client, "admin_echo").await.unwrap_err();
        assert!(error.is_auth_required(), "{error:?}");
    }
    let asked = browser.asked();
    // The first login, then three step-ups, and no more however often the
    // tool is called.
    assert_eq!(asked.len(), 1 + 3, "{asked:?}");
    for step_up in &asked[1..] {
        assert!(has(&step_up.scope, "mcp:read"), "{asked:?}");
        assert!(has(&step_up.scope, "mcp:admin"), "{asked:?}");
    }
    assert_eq!(
        provider.login_needed().map(|n| n.reason),
        Some(LoginReason::StepUpExhausted)
    );
    client.close().await;
}

#[tokio::test]
async fn a_restarted_interactive_provider_registers_with_a_new_issuer() {
    let dir = TempDir::new("interactive-issuer");
    let mut before = HttpServer::start(&["--era", "legacy", "--auth"]);
    let old_issuer = before.auth_issuer();
    let (provider, browser) = interactive(&before, &dir.credentials());
    let client = Client::connect(HttpConfig::new(before.url("/mcp")).auth(provider))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "hi");
    client.close().await;
    let old = browser.asked();
    assert_eq!(old[0].issuer, old_issuer);

    let addr = before.addr().to_owned();
    drop(before);
    let mut after =
        HttpServer::start_on(&addr, &["--era", "legacy", "--auth-issuer-suffix", "two"]);
    let new_issuer = after.auth_issuer();
    settle().await;
    // A new run of the application, on the same credentials file.
    let (provider, browser) = interactive(&after, &dir.credentials());
    let client = Client::connect(HttpConfig::new(after.url("/mcp")).auth(provider.clone()))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "hi");
    let asked = browser.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].issuer, new_issuer);
    assert_ne!(asked[0].client_id, old[0].client_id, "registered anew");
    assert_eq!(stats(&after).await["clients_registered"], 1);
    assert_eq!(provider.key().map(|k| k.issuer), Some(new_issuer));
    client.close().await;
}

#[tokio::test]
async fn a_running_interactive_provider_logs_in_again_after_an_issuer_change() {
    let dir = TempDir::new("interactive-issuer-running");
    let mut before = HttpServer::start(&["--era", "legacy", "--auth"]);
    before.auth_issuer();
    let (provider, browser) = interactive(&before, &dir.credentials());
    let client = Client::connect(HttpConfig::new(before.url("/mcp")).auth(provider.clone()))
        .await
        .unwrap();
    assert_eq!(echo(&client).await, "hi");
    client.close().await;

    let addr = before.addr().to_owned();
    drop(before);
    let mut after =
        HttpServer::start_on(&addr, &["--era", "legacy", "--auth-issuer-suffix", "two"]);
    let new_issuer = after.auth_issuer();
    settle().await;
    // The same provider (a long-running application): its token and its
    // client are unknown to the new authorization server.
    let connected =
        Client::connect(HttpConfig::new(after.url("/mcp")).auth(provider.clone())).await;
    let client = connected.unwrap_or_else(|e| {
        panic!(
            "{e:?}; login error: {:?}; login needed: {:?}",
            provider.login_error(),
            provider.login_needed()
        )
    });
    assert_eq!(echo(&client).await, "hi");
    let asked = browser.asked();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[1].issuer, new_issuer);
    client.close().await;
}

/// Stored credentials whose access token has expired and whose refresh the
/// server refuses in the `quirk`'s way: a new interactive provider asks the
/// user to log in, and the application's next attempt at the latest works.
async fn interactive_refresh_refused_logs_in(quirk: &str) {
    let mut server = HttpServer::start(&["--era", "legacy", "--auth-quirk", quirk]);
    server.auth_issuer();
    let dir = TempDir::new(&format!("interactive-{quirk}"));
    let path = dir.credentials();
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&path));
    let first = log_in(
        &flow(store.clone()),
        &server.url("/mcp"),
        Some(&challenge(&server).await),
    )
    .await;
    store
        .update(&first.credentials.key(), &mut |c| {
            let mut c = c?;
            c.expires_at = Some(SystemTime::now() - Duration::from_secs(1));
            Some(c)
        })
        .unwrap();

    let (provider, browser) = interactive(&server, &path);
    let config = || HttpConfig::new(server.url("/mcp")).auth(provider.clone());
    let client = match Client::connect(config()).await {
        Ok(client) => client,
        Err(_) => Client::connect(config()).await.unwrap_or_else(|e| {
            panic!(
                "{e:?}; login error: {:?}; login needed: {:?}; asked: {:?}",
                provider.login_error(),
                provider.login_needed(),
                browser.asked()
            )
        }),
    };
    assert_eq!(echo(&client).await, "hi");
    let asked = browser.asked();
    assert_eq!(asked.len(), 1, "the user logs in again: {asked:?}");
    assert_eq!(asked[0].client_id, first.client_id, "the same registration");
    client.close().await;
}

#[tokio::test]
async fn an_interactive_provider_logs_in_when_a_refresh_is_refused_with_http_200() {
    interactive_refresh_refused_logs_in("refresh-200-error").await;
}

#[tokio::test]
async fn an_interactive_provider_logs_in_when_a_refresh_is_refused_with_an_error_object() {
    interactive_refresh_refused_logs_in("refresh-200-error-object").await;
}

#[tokio::test]
async fn the_interactive_provider_logs_in_at_once_when_a_refresh_is_refused_with_http_200() {
    let mut server = HttpServer::start(&["--era", "legacy", "--auth-quirk", "refresh-200-error"]);
    server.auth_issuer();
    let dir = TempDir::new("interactive-refresh-200");
    let path = dir.credentials();
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&path));
    let first = log_in(
        &flow(store.clone()),
        &server.url("/mcp"),
        Some(&challenge(&server).await),
    )
    .await;
    // Later: the stored access token has expired, and the refresh will be
    // answered 200 {"error":"invalid_refresh_token"}.
    store
        .update(&first.credentials.key(), &mut |c| {
            let mut c = c?;
            c.expires_at = Some(SystemTime::now() - Duration::from_secs(1));
            Some(c)
        })
        .unwrap();

    let (provider, browser) = interactive(&server, &path);
    let connected =
        Client::connect(HttpConfig::new(server.url("/mcp")).auth(provider.clone())).await;
    let client = connected.unwrap_or_else(|e| {
        panic!(
            "{e:?}; login error: {:?}; login needed: {:?}; asked: {:?}",
            provider.login_error(),
            provider.login_needed(),
            browser.asked()
        )
    });
    assert_eq!(echo(&client).await, "hi");
    let asked = browser.asked();
    assert_eq!(asked.len(), 1, "the user logs in again: {asked:?}");
    assert_eq!(asked[0].client_id, first.client_id, "the same registration");
    assert_eq!(stats(&server).await["refreshed"], 0);
    client.close().await;
}
