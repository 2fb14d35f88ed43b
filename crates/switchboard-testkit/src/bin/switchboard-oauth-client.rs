//! `switchboard-oauth-client`: one run of an OAuth client, for tests that
//! need more than one process on the same credentials file (a restart, two
//! processes refreshing at once).
//!
//! ```text
//! switchboard-oauth-client --store FILE --server URL --resource URI --issuer URL
//!                          [--calls N] [--tool NAME]
//! ```
//!
//! It opens the [`FileStore`] at `FILE`, builds an [`OAuthProvider`] for
//! the credentials stored under `(resource, issuer)`, connects to the MCP
//! server at `URL` over HTTP and calls the tool (default `echo`) `N` times
//! (default 1). It never logs in: when the stored credentials do not serve,
//! it says why. It prints one JSON line and never a token:
//! `{"ok":true,"calls":N,"text":"…"}`, or
//! `{"ok":false,"auth_required":…,"login_needed":"NotLoggedIn"|…|null,"error":"…"}`
//! (exit status 2); bad arguments exit with status 64.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::Client;
use switchboard::transport::http::HttpConfig;
use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
use switchboard_auth::provider::OAuthProvider;
use switchboard_auth::store::{CredentialKey, CredentialStore, FileStore};

/// The redirect URI the tests register with (never reached: no login here).
const REDIRECT: &str = "http://127.0.0.1:9/callback";
/// The whole run, so a hung server fails the test instead of stalling it.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

struct Args {
    store: String,
    server: String,
    key: CredentialKey,
    calls: u32,
    tool: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut store, mut server, mut resource, mut issuer) = (None, None, None, None);
    let (mut calls, mut tool) = (1, "echo".to_owned());
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--store" => store = Some(value()?),
            "--server" => server = Some(value()?),
            "--resource" => resource = Some(value()?),
            "--issuer" => issuer = Some(value()?),
            "--calls" => calls = value()?.parse().map_err(|e| format!("--calls: {e}"))?,
            "--tool" => tool = value()?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let need = |v: Option<String>, name: &str| v.ok_or(format!("{name} is required"));
    Ok(Args {
        store: need(store, "--store")?,
        server: need(server, "--server")?,
        key: CredentialKey::new(need(resource, "--resource")?, need(issuer, "--issuer")?),
        calls,
        tool,
    })
}

/// The error and its sources, joined by `: `.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

async fn run(args: Args) -> Value {
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&args.store));
    let flow = match OAuthFlow::new(
        OAuthConfig::new("switchboard-test", REDIRECT, store).allow_http_loopback(true),
    ) {
        Ok(flow) => flow,
        Err(e) => return json!({"ok": false, "error": chain(&e)}),
    };
    let provider = Arc::new(OAuthProvider::new(flow, args.key));
    let failed = |error: &switchboard::Error| {
        json!({
            "ok": false,
            "auth_required": error.is_auth_required(),
            "login_needed": provider.login_needed().map(|n| format!("{:?}", n.reason)),
            "error": chain(error),
        })
    };
    let client = match Client::connect(HttpConfig::new(&args.server).auth(provider.clone())).await {
        Ok(client) => client,
        Err(e) => return failed(&e),
    };
    let mut text = String::new();
    for _ in 0..args.calls {
        let arguments = json!({"text": "hi"}).as_object().cloned();
        match client.call_tool(&args.tool, arguments).await {
            Ok(result) => {
                let content = serde_json::to_value(&result.content).unwrap_or_default();
                text = content[0]["text"].as_str().unwrap_or_default().to_owned();
            }
            Err(e) => {
                let out = failed(&e);
                client.close().await;
                return out;
            }
        }
    }
    client.close().await;
    json!({"ok": true, "calls": args.calls, "text": text})
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("switchboard-oauth-client: {e}");
            std::process::exit(64);
        }
    };
    let out = match tokio::time::timeout(RUN_TIMEOUT, run(args)).await {
        Ok(out) => out,
        Err(_) => json!({"ok": false, "error": format!("no result within {RUN_TIMEOUT:?}")}),
    };
    println!("{out}");
    if out["ok"] != true {
        std::process::exit(2);
    }
}
