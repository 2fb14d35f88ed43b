//! Servers in `needs-auth` after a login: connected again without a
//! restart of the hub.
//!
//! - [`Hub::login_completed`] (a login made in this process) and
//!   [`Hub::credentials_changed`] (every server in `needs-auth`) start the
//!   servers again;
//! - [`HubBuilder::watch_credentials`] watches a file for logins made by
//!   other processes (the credentials file, or the CLI's index of logins):
//!   its size, modification time and inode are looked at every interval
//!   (1 s by default, [`DEFAULT_CREDENTIALS_POLL`]), and a change calls
//!   [`Hub::credentials_changed`];
//! - with the feature `oauth`, [`HubBuilder::oauth`] gives every HTTP server
//!   its stored OAuth tokens, and [`Hub::connect`], [`Hub::finish_login`]
//!   and [`Hub::login`] run the authorization code flow for a server: a web
//!   application begins in one request (the authorization URL to send the
//!   user to) and finishes in another, in another process or after a
//!   restart when the pending logins are kept in a
//!   [`FilePendingStore`](switchboard_auth::pending::FilePendingStore).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use super::{Hub, HubBuilder, HubError, HubInner, ServerState};

/// How often [`HubBuilder::watch_credentials`] looks at its file by
/// default.
pub const DEFAULT_CREDENTIALS_POLL: Duration = Duration::from_secs(1);
/// The shortest interval [`HubBuilder::watch_credentials`] accepts.
pub const MIN_CREDENTIALS_POLL: Duration = Duration::from_millis(10);

/// The hub's login settings (a builder field, then shared).
#[derive(Clone, Default)]
pub(crate) struct LoginSettings {
    watch: Option<(PathBuf, Duration)>,
    watching: Arc<AtomicBool>,
    #[cfg(feature = "oauth")]
    oauth: Option<oauth::OAuthLogins>,
}

impl std::fmt::Debug for LoginSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("LoginSettings");
        debug.field("watch", &self.watch);
        #[cfg(feature = "oauth")]
        debug.field("oauth", &self.oauth);
        debug.finish_non_exhaustive()
    }
}

impl LoginSettings {
    /// The first bad setting.
    pub(crate) fn check(&self) -> Result<(), HubError> {
        match &self.watch {
            Some((_, interval)) if *interval < MIN_CREDENTIALS_POLL => Err(HubError::Config {
                setting: "watch_credentials",
                reason: format!("the interval must be at least {MIN_CREDENTIALS_POLL:?}"),
            }),
            _ => Ok(()),
        }
    }
}

impl HubBuilder {
    /// Watches `file` for logins made by other processes: every `interval`
    /// (at least [`MIN_CREDENTIALS_POLL`]; [`DEFAULT_CREDENTIALS_POLL`] is
    /// a good choice) its size, modification time and inode are compared
    /// with the last ones seen, and a change starts every server in
    /// `needs-auth` again ([`Hub::credentials_changed`]). Give the file a
    /// login rewrites: a credentials file, or the CLI's index of logins
    /// (which a login with the OS keyring rewrites too). The watch runs
    /// from [`Hub::start`] until the hub shuts down.
    pub fn watch_credentials(mut self, file: impl Into<PathBuf>, interval: Duration) -> Self {
        self.login.watch = Some((file.into(), interval));
        self
    }
}

impl Hub {
    /// Starts `server` again after a login stored credentials for it (in
    /// this process), when it is not running — in `needs-auth`, say — and
    /// waits until it is ready or has failed again; as
    /// [`restart`](Hub::restart).
    ///
    /// # Errors
    /// As [`restart`](Hub::restart).
    ///
    /// # Cancel safety
    /// Dropping the future stops waiting; the server keeps starting.
    pub async fn login_completed(&self, server: &str) -> Result<ServerState, HubError> {
        self.restart(server).await
    }

    /// Starts every server in `needs-auth` again (without waiting), after
    /// credentials changed somewhere; returns their names. A server whose
    /// credentials are still missing is `needs-auth` again.
    pub fn credentials_changed(&self) -> Vec<String> {
        let shared = &self.inner.shared;
        let mut started = Vec::new();
        if self.inner.cancel.is_cancelled() {
            return started;
        }
        for slot in shared.slots() {
            let waiting = matches!(slot.view.borrow().state, ServerState::NeedsAuth { .. });
            if waiting && slot.config.enabled && slot.config.trust.allows_start() {
                self.run(&slot);
                started.push(slot.config.name.clone());
            }
        }
        if !started.is_empty() {
            tracing::debug!(servers = ?started, "credentials changed: servers needing a login start again");
        }
        started
    }

    /// Starts the watch of [`HubBuilder::watch_credentials`], once.
    pub(crate) fn start_credentials_watch(&self) {
        let settings = &self.inner.shared.login;
        let Some((file, interval)) = settings.watch.clone() else {
            return;
        };
        if settings.watching.swap(true, Ordering::AcqRel) {
            return;
        }
        let hub = Arc::downgrade(&self.inner);
        let cancel = self.inner.cancel.child_token();
        // Looked at now, not when the task first runs: a login written in
        // between is a change.
        let first = fingerprint(&file);
        self.inner
            .shared
            .tasks
            .spawn(watch(hub, file, first, interval, cancel));
    }
}

/// What tells a file's versions apart: size, modification time, and (on
/// Unix) the inode, which an atomic rewrite (a rename) always changes.
#[derive(PartialEq, Eq, Debug)]
struct Fingerprint {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

fn fingerprint(file: &Path) -> Option<Fingerprint> {
    let meta = std::fs::metadata(file).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Fingerprint {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
    })
}

/// Polls `file` every `interval` until `cancel` or the hub is gone. Holds
/// the hub weakly: dropping the last handle still stops it.
async fn watch(
    hub: Weak<HubInner>,
    file: PathBuf,
    mut last: Option<Fingerprint>,
    interval: Duration,
    cancel: CancellationToken,
) {
    let mut restarted: Vec<String> = Vec::new();
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
        let now = fingerprint(&file);
        if now == last {
            continue;
        }
        let Some(inner) = hub.upgrade() else { return };
        let hub_now = Hub { inner };
        // A change seen while servers started by the last one still
        // connect waits for them: they may have read the store before it
        // (a login writes its client registration, then its tokens).
        let connecting = restarted.iter().any(|name| {
            hub_now
                .status(name)
                .is_ok_and(|status| !status.state.is_settled())
        });
        if connecting {
            continue;
        }
        last = now;
        restarted = hub_now.credentials_changed();
    }
}

#[cfg(feature = "oauth")]
pub use oauth::{Connect, OAuthLogins};

#[cfg(feature = "oauth")]
mod oauth {
    use std::sync::Arc;
    use std::time::Duration;

    use switchboard::transport::BoxFuture;
    use switchboard::transport::http::AuthProvider;
    use switchboard_auth::flow::{
        AuthorizationRequest, Authorizer, OAuthConfig, OAuthError, OAuthFlow,
    };
    use switchboard_auth::pending::{FilePendingStore, MemoryPendingStore, PendingStore};
    use switchboard_auth::provider::OAuthProvider;
    use switchboard_auth::store::{CredentialStore, Secret};
    use url::Url;

    use super::super::{Hub, HubBuilder, HubError, ServerState};
    use crate::config::{ServerConfig, TransportConfig};

    /// OAuth for a hub's HTTP servers ([`HubBuilder::oauth`]): where tokens
    /// and pending logins are kept, and what the client says of itself.
    /// A server's `oauth` block (client id and secret, scopes) is used for
    /// its logins and refreshes; its `callback_port` is the CLI's (the hub
    /// uses the redirect URI given here).
    #[derive(Clone)]
    #[must_use]
    pub struct OAuthLogins {
        client_name: String,
        redirect_uri: String,
        store: Arc<dyn CredentialStore>,
        pending: Arc<dyn PendingStore>,
        allow_http_loopback: bool,
        pending_expiry: Option<Duration>,
    }

    impl std::fmt::Debug for OAuthLogins {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("OAuthLogins")
                .field("client_name", &self.client_name)
                .field("redirect_uri", &self.redirect_uri)
                .field("store", &self.store)
                .field("pending", &self.pending)
                .field("allow_http_loopback", &self.allow_http_loopback)
                .finish_non_exhaustive()
        }
    }

    /// The default pending store: the file beside the default credentials
    /// file, or memory when there is none.
    fn default_pending() -> Arc<dyn PendingStore> {
        match FilePendingStore::default_path() {
            Ok(path) => Arc::new(FilePendingStore::new(path)),
            Err(error) => {
                tracing::warn!(%error, "pending logins are kept in memory: they do not survive a restart");
                Arc::new(MemoryPendingStore::new())
            }
        }
    }

    impl OAuthLogins {
        /// Logins as `client_name` (sent in dynamic registration), the
        /// authorization server sending the user back to `redirect_uri`,
        /// tokens kept in `store`. Pending logins are kept in the 0600
        /// file [`FilePendingStore::default_path`], so a login begun
        /// before a restart (or in another process) can be finished; in
        /// memory when there is no such place (no home directory), or as
        /// [`pending_store`](Self::pending_store) says.
        ///
        /// [`FilePendingStore::default_path`]: switchboard_auth::pending::FilePendingStore::default_path
        pub fn new(
            client_name: impl Into<String>,
            redirect_uri: impl Into<String>,
            store: Arc<dyn CredentialStore>,
        ) -> Self {
            Self {
                client_name: client_name.into(),
                redirect_uri: redirect_uri.into(),
                store,
                pending: default_pending(),
                allow_http_loopback: false,
                pending_expiry: None,
            }
        }

        /// Where logins begun by [`Hub::connect`] wait for
        /// [`Hub::finish_login`] (default: the 0600 file
        /// `pending-logins.json` beside the default credentials file).
        pub fn pending_store(mut self, store: Arc<dyn PendingStore>) -> Self {
            self.pending = store;
            self
        }

        /// Allows plain `http` to servers and authorization servers on this
        /// machine (local servers, tests); default `false`.
        pub fn allow_http_loopback(mut self, allow: bool) -> Self {
            self.allow_http_loopback = allow;
            self
        }

        /// How long a begun login may wait for its finish (default
        /// [`PENDING_LOGIN_EXPIRY`](switchboard_auth::flow::PENDING_LOGIN_EXPIRY)).
        pub fn pending_login_expiry(mut self, expiry: Duration) -> Self {
            self.pending_expiry = Some(expiry);
            self
        }

        /// The flow for `server` (its `oauth` block applied).
        fn flow(
            &self,
            server: Option<&ServerConfig>,
            pending: Arc<dyn PendingStore>,
        ) -> Result<OAuthFlow, OAuthError> {
            let mut config =
                OAuthConfig::new(&self.client_name, &self.redirect_uri, self.store.clone())
                    .allow_http_loopback(self.allow_http_loopback)
                    .pending_store(pending);
            if let Some(expiry) = self.pending_expiry {
                config = config.pending_login_expiry(expiry);
            }
            if let Some(settings) = server.and_then(|s| s.oauth.as_ref()) {
                if let Some(id) = &settings.client_id {
                    let secret = settings.client_secret.as_ref().map(Secret::new);
                    config = config.pre_registered(id.clone(), secret);
                }
                if !settings.scopes.is_empty() {
                    config = config.scopes(settings.scopes.iter().cloned());
                }
                if let Some(issuer) = &settings.issuer {
                    config = config.expected_issuer(issuer.clone());
                }
            }
            OAuthFlow::new(config)
        }

        /// The provider a connection attempt to `server` uses: its stored
        /// tokens, refreshed; never the user (a server with none is
        /// `needs-auth`).
        pub(crate) fn provider(&self, server: &ServerConfig) -> Option<Arc<dyn AuthProvider>> {
            let url = http_url(server)?;
            // Its own memory store: a connection attempt's abandoned
            // logins never reach the shared pending store.
            let flow = self
                .flow(Some(server), Arc::new(MemoryPendingStore::new()))
                .inspect_err(|e| tracing::warn!(server = %server.name, error = %e, "no OAuth for this server"))
                .ok()?;
            let provider = OAuthProvider::interactive(flow, url, Arc::new(StoredOnly));
            Some(Arc::new(provider))
        }
    }

    /// The "user" of a connection attempt: never there, so only stored
    /// credentials serve.
    #[derive(Debug)]
    struct StoredOnly;

    impl Authorizer for StoredOnly {
        fn authorize<'a>(
            &'a self,
            _request: &'a AuthorizationRequest,
        ) -> BoxFuture<'a, Result<Url, OAuthError>> {
            Box::pin(async { Err(OAuthError::LoginRequired) })
        }
    }

    /// The URL of an HTTP server; `None` for any other.
    fn http_url(server: &ServerConfig) -> Option<&str> {
        match &server.transport {
            TransportConfig::Http { url, headers, .. }
                if !headers
                    .keys()
                    .any(|k| k.eq_ignore_ascii_case("authorization")) =>
            {
                Some(url)
            }
            _ => None,
        }
    }

    /// What [`Hub::connect`] found.
    #[derive(Clone, Debug)]
    #[non_exhaustive]
    pub enum Connect {
        /// The server is ready.
        Ready,
        /// The server wants a login: send the user to `authorization_url`;
        /// the authorization server sends them back to the redirect URI
        /// with `code` and `state` for [`Hub::finish_login`].
        NeedsAuth {
            /// The page to send the user to.
            authorization_url: Url,
            /// The `state` the redirect will carry.
            state: String,
        },
    }

    impl HubBuilder {
        /// OAuth for every HTTP server without an `Authorization` header:
        /// the tokens stored in `logins`' store are sent and refreshed (this
        /// replaces an [`auth`](HubBuilder::auth) factory set before), and
        /// [`Hub::connect`], [`Hub::finish_login`] and [`Hub::login`] log in.
        pub fn oauth(mut self, logins: OAuthLogins) -> Self {
            let for_provider = logins.clone();
            self.auth = Some(Arc::new(move |server: &ServerConfig| {
                for_provider.provider(server)
            }));
            self.login.oauth = Some(logins);
            self
        }
    }

    impl Hub {
        fn logins(&self) -> Result<&OAuthLogins, HubError> {
            self.inner
                .shared
                .login
                .oauth
                .as_ref()
                .ok_or_else(|| HubError::Config {
                    setting: "oauth",
                    reason: "logins need HubBuilder::oauth".into(),
                })
        }

        /// Connects `server` (started, or started again when not
        /// running) and, when it wants a login, begins one: the
        /// authorization URL to send the user to. The pending login is kept
        /// in [`OAuthLogins::pending_store`] until [`Hub::finish_login`].
        ///
        /// # Errors
        /// [`HubError::UnknownServer`]; [`HubError::Unavailable`] when it
        /// failed or is disabled; [`HubError::Login`] when it is not an
        /// HTTP server or the login cannot begin; [`HubError::Config`]
        /// without [`HubBuilder::oauth`].
        ///
        /// # Cancel safety
        /// Dropping the future stops waiting; the server keeps starting.
        pub async fn connect(&self, server: &str) -> Result<Connect, HubError> {
            let logins = self.logins()?;
            let state = self.restart(server).await?;
            let www_authenticate = match state {
                ServerState::Ready => return Ok(Connect::Ready),
                ServerState::NeedsAuth { www_authenticate } => www_authenticate,
                state => {
                    return Err(HubError::Unavailable {
                        server: server.into(),
                        state,
                    });
                }
            };
            let config = &self.slot(server)?.config;
            let url = remote(config)?;
            let flow = logins
                .flow(Some(config), logins.pending.clone())
                .map_err(|e| login_error(Some(server), e))?;
            let request = flow
                .begin(url, www_authenticate.as_deref())
                .await
                .map_err(|e| login_error(Some(server), e))?;
            Ok(Connect::NeedsAuth {
                authorization_url: request.authorization_url,
                state: request.state,
            })
        }

        /// Finishes a login [`Hub::connect`] began — in this process or, with
        /// a shared [`OAuthLogins::pending_store`], another — with the
        /// authorization response's `code`, `state` and `iss`; stores the
        /// tokens and connects the server it was for. Returns the server's
        /// name and its state.
        ///
        /// # Errors
        /// [`HubError::Login`] when the state is unknown or expired, the
        /// authorization server refused, or no server of this hub has the
        /// URL the login was begun for (the tokens are stored all the same).
        ///
        /// # Cancel safety
        /// Not cancel safe until the tokens are stored (the pending login
        /// is used up when the exchange starts).
        pub async fn finish_login(
            &self,
            state: &str,
            code: &str,
            iss: Option<&str>,
        ) -> Result<(String, ServerState), HubError> {
            let logins = self.logins()?;
            let flow = logins
                .flow(None, logins.pending.clone())
                .map_err(|e| login_error(None, e))?;
            let finished = flow
                .finish_with_server(code, state, iss)
                .await
                .map_err(|e| login_error(None, e))?;
            let name = self
                .inner
                .shared
                .slots()
                .iter()
                .find(|slot| http_url(&slot.config) == Some(finished.server_url.as_str()))
                .map(|slot| slot.config.name.clone())
                .ok_or_else(|| HubError::Login {
                    server: Some(finished.server_url.clone()),
                    source: "the login was for a server this hub does not have".into(),
                })?;
            let state = self.login_completed(&name).await?;
            Ok((name, state))
        }

        /// Logs in to `server` now, the user's part through `authorizer`
        /// (which shows the URL and waits for the redirect), then connects
        /// it. For a desktop application; a web application uses
        /// [`Hub::connect`] and [`Hub::finish_login`].
        ///
        /// # Errors
        /// As [`Hub::connect`]; [`HubError::Login`] when the login failed.
        ///
        /// # Cancel safety
        /// Cancel safe until the authorizer returns.
        pub async fn login(
            &self,
            server: &str,
            authorizer: &dyn Authorizer,
        ) -> Result<ServerState, HubError> {
            let logins = self.logins()?;
            let slot = self.slot(server)?;
            let url = remote(&slot.config)?;
            let www_authenticate = match &slot.view.borrow().state {
                ServerState::NeedsAuth { www_authenticate } => www_authenticate.clone(),
                _ => None,
            };
            let flow = logins
                .flow(Some(&slot.config), Arc::new(MemoryPendingStore::new()))
                .map_err(|e| login_error(Some(server), e))?;
            flow.login(url, www_authenticate.as_deref(), authorizer)
                .await
                .map_err(|e| login_error(Some(server), e))?;
            self.login_completed(server).await
        }
    }

    fn remote(config: &ServerConfig) -> Result<&str, HubError> {
        http_url(config).ok_or_else(|| HubError::Login {
            server: Some(config.name.clone()),
            source: "only an HTTP server without an Authorization header logs in with OAuth".into(),
        })
    }

    fn login_error(server: Option<&str>, error: OAuthError) -> HubError {
        HubError::Login {
            server: server.map(str::to_owned),
            source: Box::new(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_interval_below_the_minimum_is_refused() {
        let error = Hub::builder()
            .persist(false)
            .watch_credentials("credentials.json", Duration::from_millis(1))
            .build()
            .unwrap_err();
        assert!(
            matches!(
                error,
                HubError::Config {
                    setting: "watch_credentials",
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(
            Hub::builder()
                .persist(false)
                .watch_credentials("credentials.json", DEFAULT_CREDENTIALS_POLL)
                .build()
                .is_ok()
        );
    }

    #[test]
    fn a_rewrite_by_rename_is_a_change() {
        let dir = std::env::temp_dir().join(format!("switchboard-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("credentials.json");
        assert_eq!(fingerprint(&file), None);
        std::fs::write(&file, "{}").unwrap();
        let first = fingerprint(&file);
        assert!(first.is_some());
        // Same size, perhaps the same mtime: the inode tells them apart.
        let aside = dir.join("new");
        std::fs::write(&aside, "{}").unwrap();
        std::fs::rename(&aside, &file).unwrap();
        if cfg!(unix) {
            assert_ne!(fingerprint(&file), first);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
