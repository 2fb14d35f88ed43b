//! Logins begun and not yet finished: what [`OAuthFlow::finish`] needs of
//! the request [`OAuthFlow::begin`] built (the PKCE verifier, the `state`,
//! the issuer, the token endpoint, the client registration, the resource and
//! the redirect URI), kept in a [`PendingStore`].
//!
//! The default, [`MemoryPendingStore`], keeps them in the process: a login
//! is finished by the flow that began it. A web application that begins a
//! login in one request and finishes it in another — another process, or
//! after a restart — gives the flow a [`FilePendingStore`] (or its own
//! store, a database say) with [`OAuthConfig::pending_store`].
//!
//! Entries expire ([`OAuthConfig::pending_login_expiry`], 10 minutes by
//! default): an expired one is refused by `finish`, and dropped whenever a
//! login begins, so abandoned browser tabs do not pile up.
//!
//! [`OAuthFlow::finish`]: crate::flow::OAuthFlow::finish
//! [`OAuthFlow::begin`]: crate::flow::OAuthFlow::begin
//! [`OAuthConfig::pending_store`]: crate::flow::OAuthConfig::pending_store
//! [`OAuthConfig::pending_login_expiry`]: crate::flow::OAuthConfig::pending_login_expiry

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::store::{FileLock, Secret, StoreError, read_private, sibling, write_private};

/// The file format [`FilePendingStore`] writes; a file with a higher version
/// is refused.
const FORMAT_VERSION: u32 = 1;

/// The most pending logins a [`FilePendingStore`] keeps; beginning one more
/// drops the oldest (a peer that makes us begin logins in a loop cannot
/// grow the file without bound).
pub const MAX_PENDING_LOGINS: usize = 256;

/// A login begun and not yet finished. Its `Debug` shows no secret (the
/// PKCE verifier and a client secret are [`Secret`]s).
#[derive(Clone, Serialize, Deserialize)]
pub struct PendingLogin {
    pub(crate) state: String,
    pub(crate) verifier: Secret,
    /// The server the login was begun for (the URL given to `begin`).
    pub(crate) server_url: String,
    pub(crate) issuer: String,
    /// Whether the issuer came from metadata (not from the 2025-03-26
    /// default endpoints), so that an `iss` is compared with it.
    pub(crate) issuer_known: bool,
    pub(crate) iss_required: bool,
    pub(crate) resource: String,
    pub(crate) token_endpoint: String,
    pub(crate) auth_method: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<Secret>,
    pub(crate) scope: Option<String>,
    /// The redirect URI sent in the authorization request; the code
    /// exchange must send the same.
    pub(crate) redirect_uri: String,
    /// When it was begun, in milliseconds since the Unix epoch.
    pub(crate) begun_ms: u64,
}

impl PendingLogin {
    /// The `state` value the authorization response must carry.
    pub fn state(&self) -> &str {
        &self.state
    }

    /// The server URL the login was begun for.
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// The resource (RFC 8707) the tokens will be for.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The authorization server's issuer.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// When it was begun.
    pub fn begun(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.begun_ms)
    }

    pub(crate) fn millis(time: SystemTime) -> u64 {
        time.duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

impl fmt::Debug for PendingLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingLogin")
            .field("server_url", &self.server_url)
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("client_id", &self.client_id)
            .field("begun", &self.begun())
            .finish_non_exhaustive()
    }
}

/// Where pending logins are kept between [`begin`] and [`finish`].
///
/// Every method may block on I/O; the flow calls them inside
/// `tokio::task::spawn_blocking`.
///
/// [`begin`]: crate::flow::OAuthFlow::begin
/// [`finish`]: crate::flow::OAuthFlow::finish
pub trait PendingStore: Send + Sync + fmt::Debug {
    /// Keeps `login` under its [`state`](PendingLogin::state), and drops
    /// every login begun before `expired_before`.
    ///
    /// # Errors
    /// The store cannot be written.
    fn put(&self, login: PendingLogin, expired_before: SystemTime) -> Result<(), StoreError>;

    /// Removes and returns the login begun with `state`, if any (expired
    /// or not: the flow refuses an expired one).
    ///
    /// # Errors
    /// The store cannot be read or written.
    fn take(&self, state: &str) -> Result<Option<PendingLogin>, StoreError>;

    /// How many logins are kept (expired ones not yet dropped included).
    ///
    /// # Errors
    /// The store cannot be read.
    fn count(&self) -> Result<usize, StoreError>;
}

/// Pending logins in this process's memory (the default): a login is
/// finished by a flow that shares this store.
#[derive(Debug, Default)]
pub struct MemoryPendingStore {
    logins: Mutex<HashMap<String, PendingLogin>>,
}

impl MemoryPendingStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn logins(&self) -> std::sync::MutexGuard<'_, HashMap<String, PendingLogin>> {
        self.logins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl PendingStore for MemoryPendingStore {
    fn put(&self, login: PendingLogin, expired_before: SystemTime) -> Result<(), StoreError> {
        let cutoff = PendingLogin::millis(expired_before);
        let mut logins = self.logins();
        logins.retain(|_, l| l.begun_ms >= cutoff);
        logins.insert(login.state.clone(), login);
        Ok(())
    }

    fn take(&self, state: &str) -> Result<Option<PendingLogin>, StoreError> {
        Ok(self.logins().remove(state))
    }

    fn count(&self) -> Result<usize, StoreError> {
        Ok(self.logins().len())
    }
}

/// Pending logins in one JSON file, readable by its owner only (mode 0600
/// on Unix; never written through a symbolic link), so that a login begun
/// by one process can be finished by another, or after a restart.
///
/// Changes hold an exclusive lock on a sibling `<name>.lock` file and
/// replace the file whole (a new file, renamed over the old), as the
/// credentials [`FileStore`](crate::store::FileStore) does. The file holds
/// PKCE verifiers: keep it beside the credentials, never anywhere shared.
/// At most [`MAX_PENDING_LOGINS`] are kept.
#[derive(Debug, Clone)]
pub struct FilePendingStore {
    path: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct PendingFile {
    version: u32,
    #[serde(default)]
    logins: BTreeMap<String, PendingLogin>,
}

#[derive(Deserialize)]
struct VersionOnly {
    version: u32,
}

impl FilePendingStore {
    /// A store in the file at `path` (made on the first login begun).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// `pending-logins.json` beside the default credentials file
    /// ([`FileStore::default_path`](crate::store::FileStore::default_path)):
    /// `$XDG_CONFIG_HOME/switchboard/`, else `~/.config/switchboard/`.
    ///
    /// # Errors
    /// As [`FileStore::default_path`](crate::store::FileStore::default_path).
    pub fn default_path() -> Result<PathBuf, StoreError> {
        Ok(crate::store::FileStore::default_path()?.with_file_name("pending-logins.json"))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<PendingFile, StoreError> {
        let path = &self.path;
        let empty = || PendingFile {
            version: FORMAT_VERSION,
            logins: BTreeMap::new(),
        };
        let Some(bytes) = read_private(path, "pending logins")? else {
            return Ok(empty());
        };
        let corrupt = |source| StoreError::Corrupt {
            path: path.clone(),
            source,
        };
        let version: VersionOnly = serde_json::from_slice(&bytes).map_err(corrupt)?;
        if version.version > FORMAT_VERSION {
            return Err(StoreError::UnsupportedVersion {
                path: path.clone(),
                version: version.version,
            });
        }
        serde_json::from_slice(&bytes).map_err(corrupt)
    }

    fn write(&self, contents: &PendingFile) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(contents).map_err(|source| StoreError::Io {
            action: "serialize pending logins for",
            path: self.path.clone(),
            source: io::Error::other(source),
        })?;
        write_private(&self.path, &bytes)
    }

    fn locked<T>(&self, f: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        let _lock = FileLock::acquire(&sibling(&self.path, ".lock"))?;
        f()
    }
}

impl PendingStore for FilePendingStore {
    fn put(&self, login: PendingLogin, expired_before: SystemTime) -> Result<(), StoreError> {
        let cutoff = PendingLogin::millis(expired_before);
        self.locked(|| {
            let mut contents = self.read()?;
            contents.logins.retain(|_, l| l.begun_ms >= cutoff);
            while contents.logins.len() >= MAX_PENDING_LOGINS {
                let oldest = contents
                    .logins
                    .iter()
                    .min_by_key(|(_, l)| l.begun_ms)
                    .map(|(state, _)| state.clone());
                match oldest {
                    Some(state) => contents.logins.remove(&state),
                    None => break,
                };
            }
            contents.logins.insert(login.state.clone(), login);
            contents.version = FORMAT_VERSION;
            self.write(&contents)
        })
    }

    fn take(&self, state: &str) -> Result<Option<PendingLogin>, StoreError> {
        self.locked(|| {
            let mut contents = self.read()?;
            let taken = contents.logins.remove(state);
            if taken.is_some() {
                self.write(&contents)?;
            }
            Ok(taken)
        })
    }

    fn count(&self) -> Result<usize, StoreError> {
        Ok(self.read()?.logins.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_file_is_beside_the_default_credentials() {
        if let Ok(credentials) = crate::store::FileStore::default_path() {
            let pending = FilePendingStore::default_path().unwrap();
            assert_eq!(pending.parent(), credentials.parent());
            assert_eq!(pending.file_name().unwrap(), "pending-logins.json");
        }
    }

    fn login(state: &str, begun: SystemTime) -> PendingLogin {
        PendingLogin {
            state: state.into(),
            verifier: Secret::new("VERIFIER-SECRET"),
            server_url: "https://mcp.example/mcp".into(),
            issuer: "https://as.example".into(),
            issuer_known: true,
            iss_required: false,
            resource: "https://mcp.example/mcp".into(),
            token_endpoint: "https://as.example/token".into(),
            auth_method: "none".into(),
            client_id: "cid".into(),
            client_secret: Some(Secret::new("CLIENT-SECRET")),
            scope: None,
            redirect_uri: "http://127.0.0.1:1/callback".into(),
            begun_ms: PendingLogin::millis(begun),
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("switchboard-pending-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_file_store_hands_a_login_to_another_instance_once() {
        let dir = scratch("handoff");
        let path = dir.join("pending.json");
        let now = SystemTime::now();
        FilePendingStore::new(&path)
            .put(login("s1", now), now - Duration::from_secs(600))
            .unwrap();
        // Another instance, as another process would make.
        let other = FilePendingStore::new(&path);
        assert_eq!(other.count().unwrap(), 1);
        let taken = other.take("s1").unwrap().expect("the login is found");
        assert_eq!(taken.verifier.expose(), "VERIFIER-SECRET");
        assert_eq!(taken.redirect_uri, "http://127.0.0.1:1/callback");
        assert!(other.take("s1").unwrap().is_none(), "used up");
        assert!(!format!("{taken:?}").contains("SECRET"), "{taken:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn expired_logins_are_dropped_and_the_file_is_bounded() {
        let dir = scratch("bounded");
        let store = FilePendingStore::new(dir.join("pending.json"));
        let now = SystemTime::now();
        store
            .put(login("old", now - Duration::from_secs(700)), UNIX_EPOCH)
            .unwrap();
        store
            .put(login("new", now), now - Duration::from_secs(600))
            .unwrap();
        assert!(store.take("old").unwrap().is_none());
        for i in 0..MAX_PENDING_LOGINS + 5 {
            store
                .put(
                    login(&format!("s{i}"), now + Duration::from_millis(i as u64)),
                    UNIX_EPOCH,
                )
                .unwrap();
        }
        assert_eq!(store.count().unwrap(), MAX_PENDING_LOGINS);
        assert!(
            store.take("new").unwrap().is_none(),
            "the oldest went first"
        );
        assert!(
            store
                .take(&format!("s{}", MAX_PENDING_LOGINS + 4))
                .unwrap()
                .is_some()
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_not_written_through() {
        let dir = scratch("symlink");
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let path = dir.join("pending.json");
        std::os::unix::fs::symlink(&victim, sibling(&path, ".lock")).unwrap();
        let now = SystemTime::now();
        let result = FilePendingStore::new(&path).put(login("s", now), UNIX_EPOCH);
        assert!(result.is_err(), "the lock file is a symlink: refused");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let _ = std::fs::remove_dir_all(dir);
    }
}
