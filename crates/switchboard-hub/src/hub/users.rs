//! Many users, each with their own servers and logins, for a web
//! application with many instances (feature `oauth`).
//!
//! [`Users`] keeps one [`Hub`] per user, made when the user is first seen
//! and shut down when idle. What must outlive an instance and be seen by
//! every other is in a [`UserStore`]: each user's servers (name and URL),
//! their OAuth tokens and their pending logins. So
//! [`Users::add_server_for`] may begin a login on one instance (the
//! authorization URL to send the user to) and [`Users::finish_login`] end
//! it on whichever instance the browser comes back to; the first instance
//! hears of it through [`UserStore::watch`] and connects the server too;
//! after a restart the user's servers come back with their stored tokens.
//!
//! A callback finishes only a login of the user who began it: the pending
//! login is looked up under the user the application says the request is
//! from (its own session), and another user's `state` finds nothing.
//! `switchboard-postgres` implements the store on PostgreSQL.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use switchboard_auth::loopback::parse_redirect;
use switchboard_auth::pending::PendingStore;
use switchboard_auth::ssrf::UrlGuard;
use switchboard_auth::store::{CredentialStore, StoreError};
use tokio::sync::{Notify, OnceCell};
use tokio_util::sync::CancellationToken;
use url::Url;

use super::{Connect, Hub, HubError, OAuthLogins, ServerState};
use crate::config::{Dialect, Origin, Scope, ServerConfig, TransportConfig};

/// How long a user's hub is kept without use by default.
pub const DEFAULT_IDLE_LIMIT: Duration = Duration::from_secs(15 * 60);
/// How many users' hubs an instance keeps by default; one more shuts the
/// least recently used down.
pub const DEFAULT_MAX_USERS: usize = 1_000;
/// How many servers one user may add by default.
pub const DEFAULT_MAX_SERVERS_PER_USER: usize = 32;
/// The longest user id accepted, in bytes.
pub const MAX_USER_LEN: usize = 256;
/// The longest server URL accepted, in bytes.
pub const MAX_URL_LEN: usize = 2_048;
/// The longest server name a URL is turned into.
const MAX_DERIVED_NAME: usize = 40;

/// One of a user's servers, as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserServer {
    /// Its name in the user's hub (the prefix of its tools).
    pub name: String,
    /// Its Streamable HTTP URL.
    pub url: String,
}

/// Told that a user's servers or credentials changed on some instance
/// (`None`: anything may have changed, after the store lost its watch for
/// a while); returns `false` to stop being told.
pub type UserChanged = Arc<dyn Fn(Option<&str>) -> bool + Send + Sync>;

/// Where [`Users`] keeps what every instance shares. Every method but
/// [`watch`](Self::watch) may block on I/O; [`Users`] calls them inside
/// `spawn_blocking`.
pub trait UserStore: Send + Sync + fmt::Debug {
    /// `user`'s OAuth credentials (each user sees only their own).
    fn credentials(&self, user: &str) -> Arc<dyn CredentialStore>;

    /// `user`'s pending logins (a callback finds only the logins of the
    /// user it is given).
    fn pending(&self, user: &str) -> Arc<dyn PendingStore>;

    /// `user`'s servers, in the order they were added.
    ///
    /// # Errors
    /// The store cannot be read.
    fn servers(&self, user: &str) -> Result<Vec<UserServer>, StoreError>;

    /// Adds a server at `url` for `user`, named `name` or, when that name
    /// is taken, `name-2`, `name-3`…, unless `user` has a server at `url`
    /// already; returns the server stored for `url`. Two instances adding
    /// at once store one.
    ///
    /// # Errors
    /// The store cannot be written.
    fn add_server(&self, user: &str, url: &str, name: &str) -> Result<UserServer, StoreError>;

    /// Removes `user`'s server `name`; whether there was one.
    ///
    /// # Errors
    /// The store cannot be written.
    fn remove_server(&self, user: &str, name: &str) -> Result<bool, StoreError>;

    /// Tells `changed` whenever a user's servers or credentials change,
    /// here or on another instance, until it returns `false`. The default
    /// tells nothing: a store only this process writes.
    fn watch(&self, changed: UserChanged) {
        let _ = changed;
    }
}

/// What [`Users::add_server_for`] found.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Added {
    /// The server is ready for the user.
    Ready {
        /// Its name in the user's hub.
        server: String,
    },
    /// The server wants the user to log in: send them to
    /// `authorization_url`; the authorization server sends them back to
    /// the redirect URI, where [`Users::finish_login`] ends the login.
    NeedsAuth {
        /// Its name in the user's hub.
        server: String,
        /// The page to send the user to.
        authorization_url: Url,
    },
}

/// Settings of [`Users`] (from [`Users::builder`]).
#[derive(Clone)]
#[must_use]
pub struct UsersBuilder {
    store: Arc<dyn UserStore>,
    client_name: String,
    redirect_uri: String,
    allow_http_loopback: bool,
    allow_private: bool,
    idle_limit: Duration,
    max_users: usize,
    max_servers: usize,
    startup_timeout: Duration,
    /// Servers every user has, besides the ones they add.
    common: Vec<ServerConfig>,
    /// What each user's hub builder goes through before it is built.
    customize: Option<Customize>,
}

/// What [`Users::set_servers`] changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServersChanged {
    /// Servers new to every user.
    pub added: Vec<String>,
    /// Servers no user has any more.
    pub removed: Vec<String>,
    /// Servers whose configuration changed (started again).
    pub changed: Vec<String>,
}

impl ServersChanged {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Changes a user's hub builder (see [`UsersBuilder::customize`]); given
/// the user.
pub type Customize = Arc<dyn Fn(&str, super::HubBuilder) -> super::HubBuilder + Send + Sync>;

impl fmt::Debug for UsersBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UsersBuilder")
            .field("store", &self.store)
            .field("client_name", &self.client_name)
            .field("redirect_uri", &self.redirect_uri)
            .field("idle_limit", &self.idle_limit)
            .field("max_users", &self.max_users)
            .finish_non_exhaustive()
    }
}

impl UsersBuilder {
    /// The name sent in dynamic client registration (default
    /// `switchboard`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Where authorization servers send the user back (the application's
    /// callback route, where it calls [`Users::finish_login`]); required.
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = uri.into();
        self
    }

    /// Allows plain `http` to servers and authorization servers on this
    /// machine (local servers, tests); default `false`.
    pub fn allow_http_loopback(mut self, allow: bool) -> Self {
        self.allow_http_loopback = allow;
        self
    }

    /// Allows servers at private addresses (`10/8`, `192.168/16`,
    /// link-local, loopback…): for an application whose users' servers
    /// are on its own network. Off by default: a user's URL is the
    /// user's choice, and the application's server connects to it.
    pub fn allow_private(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// How long a user's hub is kept without use (default
    /// [`DEFAULT_IDLE_LIMIT`]); it is made again, from the store, when the
    /// user comes back.
    pub fn idle_limit(mut self, limit: Duration) -> Self {
        self.idle_limit = limit;
        self
    }

    /// How many users' hubs this instance keeps (default
    /// [`DEFAULT_MAX_USERS`]).
    pub fn max_users(mut self, max: usize) -> Self {
        self.max_users = max;
        self
    }

    /// How many servers one user may add (default
    /// [`DEFAULT_MAX_SERVERS_PER_USER`]).
    pub fn max_servers_per_user(mut self, max: usize) -> Self {
        self.max_servers = max;
        self
    }

    /// Servers every user has, besides those they add (a gateway's
    /// configured servers): each user's hub connects them with that
    /// user's own tokens, or lists them as `needs-auth` until the user
    /// logs in. They are not stored, and not removed when the store's
    /// servers change. Default none.
    pub fn servers(mut self, servers: impl IntoIterator<Item = ServerConfig>) -> Self {
        self.common = servers.into_iter().collect();
        self
    }

    /// Passes each user's hub builder, before it is built, through
    /// `customize` (given the user): a tool policy, the clients' settings,
    /// what every hub of the application shares. The builder's OAuth
    /// logins and servers are set already; leave them.
    pub fn customize(
        mut self,
        customize: impl Fn(&str, super::HubBuilder) -> super::HubBuilder + Send + Sync + 'static,
    ) -> Self {
        self.customize = Some(Arc::new(customize));
        self
    }

    /// How long a user's server may take to connect (default 30 s).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Makes the users' hubs (none yet: each is made when its user is
    /// first seen) and starts watching the store. Call it inside a Tokio
    /// runtime.
    ///
    /// # Errors
    /// [`HubError::Config`]: no redirect URI, or a zero limit.
    pub fn build(self) -> Result<Users, HubError> {
        let bad = |setting, reason: &str| {
            Err(HubError::Config {
                setting,
                reason: reason.into(),
            })
        };
        if Url::parse(&self.redirect_uri).is_err() {
            return bad("redirect_uri", "must be the application's callback URL");
        }
        if self.idle_limit.is_zero() {
            return bad("idle_limit", "must be more than zero");
        }
        if self.max_users == 0 {
            return bad("max_users", "must be at least 1");
        }
        if self.startup_timeout.is_zero() {
            return bad("startup_timeout", "must be more than zero");
        }
        let inner = Arc::new(UsersInner {
            common: std::sync::RwLock::new(self.common.clone()),
            settings: self,
            hubs: Mutex::default(),
            changed: Mutex::default(),
            wake: Arc::new(Notify::new()),
            cancel: CancellationToken::new(),
        });
        let weak = Arc::downgrade(&inner);
        inner.settings.store.watch(Arc::new(move |user| {
            let Some(inner) = weak.upgrade() else {
                return false;
            };
            let mut changed = inner.changed.lock().unwrap_or_else(|e| e.into_inner());
            // Bounded by the users this instance has a hub for.
            match user {
                Some(user) if changed.len() < inner.settings.max_users => {
                    changed.insert(Some(user.to_owned()));
                }
                _ => {
                    changed.clear();
                    changed.insert(None);
                }
            }
            inner.wake.notify_one();
            true
        }));
        tokio::spawn(follow_changes(
            Arc::downgrade(&inner),
            inner.wake.clone(),
            inner.cancel.clone(),
        ));
        tokio::spawn(shut_idle_hubs(Arc::downgrade(&inner), inner.cancel.clone()));
        Ok(Users { inner })
    }
}

/// Many users' hubs (see the module docs). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Users {
    inner: Arc<UsersInner>,
}

struct UsersInner {
    settings: UsersBuilder,
    /// The servers every user has now ([`Users::set_servers`]).
    common: std::sync::RwLock<Vec<ServerConfig>>,
    hubs: Mutex<HashMap<String, Arc<Entry>>>,
    /// The users the store said changed, not yet looked at.
    changed: Mutex<HashSet<Option<String>>>,
    wake: Arc<Notify>,
    cancel: CancellationToken,
}

impl fmt::Debug for UsersInner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Users")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Drop for UsersInner {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A user's hub, made once, and when it was last used.
struct Entry {
    hub: OnceCell<Hub>,
    used: Mutex<Instant>,
}

impl Entry {
    fn new() -> Self {
        Self {
            hub: OnceCell::new(),
            used: Mutex::new(Instant::now()),
        }
    }

    fn touch(&self) {
        *self.used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }
}

impl Users {
    /// Settings for users whose state is kept in `store`.
    pub fn builder(store: Arc<dyn UserStore>) -> UsersBuilder {
        UsersBuilder {
            store,
            client_name: "switchboard".into(),
            redirect_uri: String::new(),
            allow_http_loopback: false,
            allow_private: false,
            idle_limit: DEFAULT_IDLE_LIMIT,
            max_users: DEFAULT_MAX_USERS,
            max_servers: DEFAULT_MAX_SERVERS_PER_USER,
            startup_timeout: Duration::from_secs(30),
            common: Vec::new(),
            customize: None,
        }
    }

    /// `user`'s hub: the one this instance has, or one made now from the
    /// store (their servers connected with their stored tokens; one
    /// without is `needs-auth`).
    ///
    /// # Errors
    /// [`HubError::Config`] for an unusable user id; [`HubError::UserState`]
    /// when the store cannot be read.
    pub async fn hub(&self, user: &str) -> Result<Hub, HubError> {
        check_user(user)?;
        let entry = self.entry(user);
        entry.touch();
        let made = entry
            .hub
            .get_or_try_init(|| self.make_hub(user))
            .await
            .cloned();
        if made.is_err() {
            self.forget(user, &entry);
        }
        made
    }

    /// Adds the server at `url` for `user` (or finds the one they have at
    /// that URL) and connects it: ready, or the authorization URL to send
    /// the user to. Every instance sharing the store sees the server. A
    /// server added by this call that fails is removed again.
    ///
    /// # Errors
    /// [`HubError::Config`] for an unusable user id or URL, or one server
    /// too many; [`HubError::UserState`] when the store fails;
    /// [`HubError::Unavailable`] when the server failed;
    /// [`HubError::Login`] when its login cannot begin.
    pub async fn add_server_for(&self, user: &str, url: &str) -> Result<Added, HubError> {
        let url = self.check_url(url).await?;
        let hub = self.hub(user).await?;
        let stored = self.stored_servers(user).await?;
        let known = stored.iter().find(|s| s.url == url).cloned();
        let added = known.is_none();
        let server = match known {
            Some(server) => server,
            None => {
                if stored.len() >= self.inner.settings.max_servers {
                    return Err(HubError::Config {
                        setting: "max_servers_per_user",
                        reason: format!(
                            "this user has {} servers, the most allowed; remove one first",
                            stored.len()
                        ),
                    });
                }
                let (store, owner, wanted) = (self.store(), user.to_owned(), derive_name(&url));
                let url = url.clone();
                blocking(user, move || store.add_server(&owner, &url, &wanted)).await?
            }
        };
        sync_servers(&hub, &self.stored_servers(user).await?, &self.common()).await;
        let connected = match hub.connect(&server.name).await {
            Ok(connected) => connected,
            Err(error) => {
                // A server added now that cannot be reached is not kept:
                // the user sees why and may add it again.
                if added {
                    let _ = self.remove_server_for(user, &server.name).await;
                }
                return Err(error);
            }
        };
        match connected {
            Connect::Ready => Ok(Added::Ready {
                server: server.name,
            }),
            Connect::NeedsAuth {
                authorization_url, ..
            } => Ok(Added::NeedsAuth {
                server: server.name,
                authorization_url,
            }),
        }
    }

    /// Ends a login [`add_server_for`](Self::add_server_for) began — on
    /// this instance or another — with the URL the authorization server
    /// sent `user`'s browser back to; stores the tokens and connects the
    /// server (here, and on every instance that has a hub for `user`).
    /// Returns the server's name and state.
    ///
    /// # Errors
    /// [`HubError::Login`] when the callback carries an error or no code,
    /// its `state` is not a pending login of `user` (used already, expired,
    /// or another user's), or the exchange failed; as
    /// [`hub`](Self::hub).
    pub async fn finish_login(
        &self,
        user: &str,
        callback_url: &str,
    ) -> Result<(String, ServerState), HubError> {
        let callback = parse_redirect(callback_url, None).map_err(|e| HubError::Login {
            server: None,
            source: Box::new(e),
        })?;
        let hub = self.hub(user).await?;
        // A server added on another instance since this hub was made.
        sync_servers(&hub, &self.stored_servers(user).await?, &self.common()).await;
        hub.finish_login(&callback.state, &callback.code, callback.iss.as_deref())
            .await
    }

    /// Removes `user`'s server `name` from the store and from their hub.
    /// Its stored tokens stay until the user logs out of its issuer.
    ///
    /// # Errors
    /// [`HubError::UnknownServer`]; [`HubError::UserState`].
    pub async fn remove_server_for(&self, user: &str, name: &str) -> Result<(), HubError> {
        let hub = self.hub(user).await?;
        let (store, owner, server) = (self.store(), user.to_owned(), name.to_owned());
        let removed = blocking(user, move || store.remove_server(&owner, &server)).await?;
        if !removed {
            return Err(HubError::UnknownServer {
                server: name.into(),
            });
        }
        let _ = hub.remove(name).await;
        Ok(())
    }

    /// The users' hubs this instance has now (made, not shut down).
    pub fn loaded_hubs(&self) -> Vec<Hub> {
        self.hubs()
            .values()
            .filter_map(|entry| entry.hub.get().cloned())
            .collect()
    }

    /// Whether this instance has a hub for `user` now.
    pub fn is_loaded(&self, user: &str) -> bool {
        self.hubs().contains_key(user)
    }

    /// `user`'s pending logins in the store: where a login of the
    /// application's own that must finish on any instance keeps its step.
    pub fn pending_store(&self, user: &str) -> Arc<dyn PendingStore> {
        self.store().pending(user)
    }

    /// How many users' hubs this instance has now.
    pub fn loaded(&self) -> usize {
        self.hubs().len()
    }

    /// Shuts every user's hub down and stops watching the store.
    pub async fn shutdown(&self) {
        self.inner.cancel.cancel();
        let entries: Vec<_> = self.hubs().drain().map(|(_, entry)| entry).collect();
        for entry in entries {
            if let Some(hub) = entry.hub.get() {
                hub.shutdown().await;
            }
        }
    }

    fn hubs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        self.inner.hubs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The servers every user has now.
    fn common(&self) -> Vec<ServerConfig> {
        self.inner
            .common
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the servers every user has ([`UsersBuilder::servers`]; a
    /// gateway's configuration read again): each loaded hub drops the
    /// removed ones, adds the new ones and starts the changed ones again
    /// (a user's own servers are left alone); hubs made later have the new
    /// list. The names added, removed and changed.
    pub async fn set_servers(&self, servers: Vec<ServerConfig>) -> ServersChanged {
        let before = std::mem::replace(
            &mut *self.inner.common.write().unwrap_or_else(|e| e.into_inner()),
            servers.clone(),
        );
        let named =
            |list: &[ServerConfig], name: &str| list.iter().find(|s| s.name == name).cloned();
        let mut changed = ServersChanged::default();
        for server in &servers {
            match named(&before, &server.name) {
                None => changed.added.push(server.name.clone()),
                Some(old) if old != *server => changed.changed.push(server.name.clone()),
                Some(_) => {}
            }
        }
        for old in &before {
            if named(&servers, &old.name).is_none() {
                changed.removed.push(old.name.clone());
            }
        }
        if changed.is_empty() {
            return changed;
        }
        let loaded: Vec<(String, Hub)> = self
            .hubs()
            .iter()
            .filter_map(|(user, entry)| entry.hub.get().map(|hub| (user.clone(), hub.clone())))
            .collect();
        for (user, hub) in loaded {
            // The hub's servers as it was made with them: these, then the
            // user's own ([`Hub::apply`] keeps what is unchanged).
            let own = match self.stored_servers(&user).await {
                Ok(stored) => stored,
                Err(error) => {
                    tracing::warn!(%error, "a user's servers could not be read; their hub keeps its servers");
                    continue;
                }
            };
            let wanted = servers
                .iter()
                .cloned()
                .chain(own.iter().map(server_config))
                .collect();
            if let Err(error) = hub.apply(wanted).await {
                tracing::warn!(%error, "a user's hub could not take the configured servers");
            }
        }
        changed
    }

    pub(crate) fn store(&self) -> Arc<dyn UserStore> {
        self.inner.settings.store.clone()
    }

    /// `user`'s entry, made now when new; past the most users, the least
    /// recently used one's hub is shut down.
    fn entry(&self, user: &str) -> Arc<Entry> {
        let mut hubs = self.hubs();
        if let Some(entry) = hubs.get(user) {
            return entry.clone();
        }
        if hubs.len() >= self.inner.settings.max_users {
            let oldest = hubs
                .iter()
                .max_by_key(|(_, entry)| entry.idle_for())
                .map(|(user, _)| user.clone());
            if let Some(entry) = oldest.and_then(|user| hubs.remove(&user)) {
                shut_down(entry);
            }
        }
        let entry = Arc::new(Entry::new());
        hubs.insert(user.to_owned(), entry.clone());
        entry
    }

    /// Drops `user`'s entry if it is still `entry`.
    fn forget(&self, user: &str, entry: &Arc<Entry>) {
        let mut hubs = self.hubs();
        if hubs.get(user).is_some_and(|e| Arc::ptr_eq(e, entry)) {
            hubs.remove(user);
        }
    }

    async fn stored_servers(&self, user: &str) -> Result<Vec<UserServer>, HubError> {
        let (store, owner) = (self.store(), user.to_owned());
        blocking(user, move || store.servers(&owner)).await
    }

    async fn make_hub(&self, user: &str) -> Result<Hub, HubError> {
        let settings = &self.inner.settings;
        let store = self.store();
        let logins = OAuthLogins::new(
            &settings.client_name,
            &settings.redirect_uri,
            store.credentials(user),
        )
        .pending_store(store.pending(user))
        .allow_http_loopback(settings.allow_http_loopback);
        let servers = self.stored_servers(user).await?;
        let builder = Hub::builder()
            .servers(self.common())
            .servers(servers.iter().map(server_config))
            .persist(false)
            .startup_timeout(settings.startup_timeout)
            .oauth(logins);
        let hub = match &settings.customize {
            Some(customize) => customize(user, builder),
            None => builder,
        }
        .build()?;
        hub.start().await?;
        Ok(hub)
    }

    /// `url` if the application may connect to it for a user: https (or
    /// http to loopback when allowed), no user or password in it, and —
    /// unless private addresses are allowed — neither its host nor any
    /// address its name resolves to in a private, loopback or link-local
    /// range (the SSRF guard of the OAuth code). The name is resolved
    /// again when the server connects: a name that changes its answer in
    /// between is not caught here.
    async fn check_url(&self, url: &str) -> Result<String, HubError> {
        let bad = |reason: String| HubError::Config {
            setting: "url",
            reason,
        };
        if url.len() > MAX_URL_LEN {
            return Err(bad(format!("a server URL is at most {MAX_URL_LEN} bytes")));
        }
        let settings = &self.inner.settings;
        let guard = UrlGuard::builder()
            .allow_http_loopback(settings.allow_http_loopback)
            .allow_private(settings.allow_private)
            .build()
            .map_err(|e| bad(e.to_string()))?;
        let parsed = guard.check(url, None).map_err(|e| bad(e.to_string()))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad("a server URL may not carry a user or password".into()));
        }
        if let Some(url::Host::Domain(name)) = parsed.host() {
            let port = parsed.port_or_known_default().unwrap_or(443);
            let addresses = tokio::net::lookup_host((name, port))
                .await
                .map_err(|e| bad(format!("`{name}` does not resolve: {e}")))?;
            for address in addresses {
                guard
                    .check_resolved(address.ip())
                    .map_err(|e| bad(e.to_string()))?;
            }
        }
        Ok(parsed.to_string())
    }
}

/// Runs a store call on a blocking thread.
async fn blocking<T: Send + 'static>(
    user: &str,
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, HubError> {
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| HubError::UserState {
        user: user.to_owned(),
        source,
    };
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| failed(Box::new(e)))?
        .map_err(|e| failed(Box::new(e)))
}

/// Adds to `hub` the stored servers it lacks, and removes those no longer
/// stored (each add waits until the server has settled).
async fn sync_servers(hub: &Hub, stored: &[UserServer], common: &[ServerConfig]) {
    let have: HashSet<String> = hub
        .list()
        .into_iter()
        .map(|s| s.name)
        .filter(|name| !common.iter().any(|c| &c.name == name))
        .collect();
    for server in stored.iter().filter(|s| !have.contains(&s.name)) {
        if let Err(error) = hub.add(server_config(server)).await {
            tracing::debug!(server = %server.name, %error, "a stored server could not be added");
        }
    }
    let wanted: HashSet<&str> = stored.iter().map(|s| s.name.as_str()).collect();
    for name in have.iter().filter(|n| !wanted.contains(n.as_str())) {
        let _ = hub.remove(name).await;
    }
}

fn server_config(server: &UserServer) -> ServerConfig {
    ServerConfig::new(
        &server.name,
        TransportConfig::Http {
            url: server.url.clone(),
            headers: Default::default(),
            kind: Default::default(),
        },
        Origin {
            file: "users".into(),
            dialect: Dialect::Switchboard,
            scope: Scope::User,
        },
    )
}

/// A name for the server at `url`: its host, in lowercase letters, digits
/// and `-`.
fn derive_name(url: &str) -> String {
    let host = Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    let mut name = String::new();
    for c in host.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.ends_with('-') && !name.is_empty() {
            name.push('-');
        }
        if name.len() >= MAX_DERIVED_NAME {
            break;
        }
    }
    let name = name.trim_end_matches('-');
    if name.is_empty() {
        "server".into()
    } else {
        name.into()
    }
}

fn check_user(user: &str) -> Result<(), HubError> {
    let bad = |reason: &str| {
        Err(HubError::Config {
            setting: "user",
            reason: reason.into(),
        })
    };
    if user.is_empty() {
        return bad("a user id may not be empty");
    }
    if user.len() > MAX_USER_LEN {
        return bad("a user id is at most 256 bytes");
    }
    if user.chars().any(char::is_control) {
        return bad("a user id may not hold control characters");
    }
    Ok(())
}

/// Shuts an entry's hub down in the background.
fn shut_down(entry: Arc<Entry>) {
    if let Some(hub) = entry.hub.get().cloned() {
        tokio::spawn(async move { hub.shutdown().await });
    }
}

/// Brings the hubs of users the store said changed up to date: servers
/// added or removed elsewhere, and those in `needs-auth` started again
/// (a login finished elsewhere).
async fn follow_changes(users: Weak<UsersInner>, wake: Arc<Notify>, cancel: CancellationToken) {
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = wake.notified() => {}
        }
        let Some(inner) = users.upgrade() else { return };
        let users_now = Users { inner };
        let changed: Vec<Option<String>> = users_now
            .inner
            .changed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        let everyone = changed.iter().any(Option::is_none);
        let hubs: Vec<(String, Hub)> = users_now
            .hubs()
            .iter()
            .filter(|(user, _)| everyone || changed.contains(&Some((*user).clone())))
            .filter_map(|(user, entry)| entry.hub.get().map(|hub| (user.clone(), hub.clone())))
            .collect();
        for (user, hub) in hubs {
            match users_now.stored_servers(&user).await {
                Ok(stored) => sync_servers(&hub, &stored, &users_now.common()).await,
                Err(error) => tracing::warn!(%error, "a user's servers could not be read"),
            }
            hub.credentials_changed();
        }
    }
}

/// Shuts down the hubs unused for the idle limit.
async fn shut_idle_hubs(users: Weak<UsersInner>, cancel: CancellationToken) {
    let Some(limit) = users.upgrade().map(|inner| inner.settings.idle_limit) else {
        return;
    };
    let every = (limit / 4).max(Duration::from_millis(10));
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let Some(inner) = users.upgrade() else { return };
        let idle: Vec<Arc<Entry>> = {
            let mut hubs = inner.hubs.lock().unwrap_or_else(|e| e.into_inner());
            let gone: Vec<String> = hubs
                .iter()
                .filter(|(_, entry)| entry.hub.initialized() && entry.idle_for() >= limit)
                .map(|(user, _)| user.clone())
                .collect();
            gone.iter().filter_map(|user| hubs.remove(user)).collect()
        };
        for entry in idle {
            shut_down(entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_the_hosts_letters_and_digits() {
        assert_eq!(
            derive_name("https://mcp.example.com/mcp"),
            "mcp-example-com"
        );
        assert_eq!(derive_name("https://127.0.0.1:8080/x"), "127-0-0-1");
        assert_eq!(derive_name("https://[::1]/"), "1");
        assert_eq!(derive_name("not a url"), "server");
        assert!(derive_name(&format!("https://{}.com/", "a".repeat(90))).len() <= MAX_DERIVED_NAME);
    }

    #[test]
    fn a_user_id_is_bounded_and_printable() {
        assert!(check_user("alice").is_ok());
        assert!(check_user("x'; DROP TABLE users; --").is_ok());
        assert!(check_user("").is_err());
        assert!(check_user(&"a".repeat(MAX_USER_LEN + 1)).is_err());
        assert!(check_user("a\nb").is_err());
    }
}
