//! Logging in to a server from the console: the OAuth flow of `switchboard
//! login NAME` (its own loopback for the browser to come back to, the
//! tokens kept in the same store), begun by the page, which shows the
//! consent page's host as the browser will open it before it opens it.
//! When the browser comes back, the server starts again with its new
//! credentials; the page follows its state, and a login that failed is
//! said on the server's row.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_hub::TransportConfig;

use super::State;

/// Configured HTTP server `name`'s URL and OAuth settings, their
/// variables expanded.
fn remote(
    console: &State,
    name: &str,
) -> Result<(String, Option<switchboard_hub::config::OAuthSettings>), (u16, String)> {
    let loaded = console.loaded();
    let config = loaded
        .servers
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| (404, format!("no server `{name}` is configured")))?;
    let expanded = loaded
        .expander(&console.context.locations)
        .expand(config)
        .map_err(|e| (422, e.to_string()))?;
    match expanded.config.transport {
        TransportConfig::Http { url, .. } => Ok((url, expanded.config.oauth)),
        _ => Err((
            422,
            format!("`{name}` is not an HTTP server: only those log in with OAuth"),
        )),
    }
}

/// How long a login waits for the browser to come back.
const WAIT: Duration = Duration::from_secs(300);

/// The logins begun from the page, by server: under way, or why the
/// last one failed.
#[derive(Default)]
pub(super) struct Logins {
    state: Mutex<HashMap<String, String>>,
}

impl Logins {
    /// What to show beside `server`: `waiting for the browser`, or why
    /// its last login failed.
    pub(super) fn said(&self, server: &str) -> Option<String> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(server)
            .cloned()
    }

    fn set(&self, server: &str, said: Option<String>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match said {
            Some(said) => state.insert(server.to_owned(), said),
            None => state.remove(server),
        };
    }

    /// `{"name": "NAME"}`: logged out of configured HTTP server NAME (as
    /// `switchboard logout`: its credentials removed); the server started
    /// again without them — its state then.
    pub(super) async fn logout(console: &State, body: &[u8]) -> Result<Value, (u16, String)> {
        let request = super::api::request(body)?;
        let name = super::api::text(&request, "name")?;
        let (url, _) = remote(console, name)?;
        let gone = crate::login::remove_logins(&url, console.credentials.as_deref())
            .await
            .map_err(|e| (422, format!("{e:#}")))?;
        let state = console
            .hub
            .restart(name)
            .await
            .map_err(|e| (422, crate::failure::chain(&e)))?;
        Ok(json!({ "server": name, "removed": gone.len(), "state": state.name() }))
    }

    /// `{"name": "NAME"}`: a login to configured HTTP server NAME begun;
    /// the page to open, its host as the browser will connect to it, and
    /// what to be wary of in it. The login ends in the background.
    pub(super) async fn begin(
        self: &Arc<Self>,
        console: &State,
        body: &[u8],
    ) -> Result<Value, (u16, String)> {
        let request = super::api::request(body)?;
        let name = super::api::text(&request, "name")?;
        let (url, oauth) = remote(console, name)?;
        let credentials = console.credentials.as_deref();
        let (page, done) =
            crate::login::gateway_login(name, &url, oauth.as_ref(), credentials, WAIT)
                .await
                .map_err(|e| (422, format!("{e:#}")))?;
        let shown =
            switchboard::url_display::url_display(&page).map_err(|e| (422, e.to_string()))?;
        let warnings = crate::term::ask::url_warnings(&shown);
        // With its port when it has one: the page's whole address.
        let host = match url::Url::parse(&shown.url).ok().and_then(|u| u.port()) {
            Some(port) => format!("{}:{port}", shown.host),
            None => shown.host.clone(),
        };
        self.set(name, Some("waiting for the browser".to_owned()));
        let logins = self.clone();
        let hub = console.hub.clone();
        let server = name.to_owned();
        tokio::spawn(async move {
            match done.await {
                Ok(()) => {
                    logins.set(&server, None);
                    let _ = hub.login_completed(&server).await;
                }
                Err(error) => logins.set(&server, Some(format!("the login failed: {error:#}"))),
            }
        });
        Ok(json!({
            "server": name,
            "url": shown.url,
            "host": host,
            "warnings": warnings,
        }))
    }
}
