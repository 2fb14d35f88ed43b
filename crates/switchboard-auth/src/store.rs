//! Where OAuth credentials live between runs: the OS keyring by default, a
//! JSON file (mode 0600) when there is none.
//!
//! Credentials are keyed by the server's resource URI **and** the
//! authorization server's issuer ([`CredentialKey`]), so when a server moves
//! to another issuer nothing is found under the new key and the client
//! registers again instead of sending one issuer's client id to another.
//!
//! Every store offers [`CredentialStore::update`], a read-modify-write that
//! holds a lock shared by every process on the machine: two CLIs refreshing
//! the same token at once cannot lose the refresh token the first one was
//! handed when the authorization server rotated it.
//!
//! Secret values are [`Secret`]s: their `Debug` and `Display` print
//! `[redacted]`, and [`StoredCredentials`]' `Debug` shows only the names of
//! its extra fields, so neither can reach a log or a terminal by accident.
//!
//! The methods block on file and keyring I/O; from async code call them
//! inside `tokio::task::spawn_blocking`.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The largest credentials file read; anything bigger is refused rather than
/// loaded into memory.
pub const MAX_FILE_SIZE: u64 = 1024 * 1024;

/// The file format written; a file with a higher version is refused so an
/// older switchboard never rewrites what a newer one stored.
const FORMAT_VERSION: u32 = 1;

/// The keyring service every entry is stored under.
const KEYRING_SERVICE: &str = "switchboard";

/// A secret value: a token or a client secret.
///
/// `Debug` and `Display` print `[redacted]`; the value is reached only
/// through [`Secret::expose`], so every place that uses it is easy to find.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret value itself. Never log or print it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Which credentials: one server (its resource URI) at one authorization
/// server (its issuer).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CredentialKey {
    /// The protected resource's URI (RFC 8707), e.g. `https://mcp.example.com/mcp`.
    pub resource: String,
    /// The authorization server's issuer identifier (RFC 8414).
    pub issuer: String,
}

impl CredentialKey {
    /// The key for `resource` at `issuer`.
    pub fn new(resource: impl Into<String>, issuer: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            issuer: issuer.into(),
        }
    }

    /// The key as one string: resource and issuer joined by a space, which
    /// neither a URI nor an issuer identifier can contain.
    fn storage_name(&self) -> String {
        format!("{} {}", self.resource, self.issuer)
    }
}

impl fmt::Display for CredentialKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (issuer {})", self.resource, self.issuer)
    }
}

/// What is kept for one [`CredentialKey`]: the client registration and the
/// tokens it was last issued.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCredentials {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// The protected resource's URI the tokens are for.
    pub resource: String,
    /// The client id, pre-registered or from dynamic client registration.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// The current access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<Secret>,
    /// The current refresh token; replaced whenever the server rotates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// The token type the server gave, normally `Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// When the access token expires (stored as Unix seconds).
    #[serde(default, with = "unix_secs", skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<SystemTime>,
    /// When the tokens were received (stored as Unix seconds).
    #[serde(default, with = "unix_secs", skip_serializing_if = "Option::is_none")]
    pub received_at: Option<SystemTime>,
    /// The scopes granted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Anything else, kept as it was written (a newer switchboard's fields
    /// survive an older one's rewrite).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl StoredCredentials {
    /// A registration with no tokens yet.
    pub fn new(
        resource: impl Into<String>,
        issuer: impl Into<String>,
        client_id: impl Into<String>,
    ) -> Self {
        Self {
            issuer: issuer.into(),
            resource: resource.into(),
            client_id: client_id.into(),
            client_secret: None,
            access_token: None,
            refresh_token: None,
            token_type: None,
            expires_at: None,
            received_at: None,
            scopes: Vec::new(),
            extra: serde_json::Map::new(),
        }
    }

    /// The key these credentials are stored under.
    pub fn key(&self) -> CredentialKey {
        CredentialKey::new(self.resource.clone(), self.issuer.clone())
    }
}

impl fmt::Debug for StoredCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `extra` may hold a registration access token or an id token: only
        // its field names are shown.
        f.debug_struct("StoredCredentials")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("access_token", &self.access_token)
            .field("refresh_token", &self.refresh_token)
            .field("token_type", &self.token_type)
            .field("expires_at", &self.expires_at)
            .field("received_at", &self.received_at)
            .field("scopes", &self.scopes)
            .field("extra", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

mod unix_secs {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        time: &Option<SystemTime>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match time {
            Some(time) => {
                let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
                serializer.serialize_some(&secs)
            }
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<SystemTime>, D::Error> {
        let secs = Option::<u64>::deserialize(deserializer)?;
        Ok(secs.and_then(|secs| UNIX_EPOCH.checked_add(Duration::from_secs(secs))))
    }
}

/// A credential store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading, writing or locking a file failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done, e.g. `"read"`.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The credentials file is not valid JSON of the expected shape. It is
    /// left as it is; move it aside (or delete it) and log in again.
    #[error(
        "the credentials file {} is corrupt; it was left untouched: move it aside or delete it, then log in again",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The credentials file is larger than [`MAX_FILE_SIZE`].
    #[error(
        "the credentials file {} is {size} bytes, more than the {limit} allowed; move it aside or delete it, then log in again",
        path.display()
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The largest size read.
        limit: u64,
    },
    /// The credentials file was written by a newer switchboard.
    #[error(
        "the credentials file {} has format version {version}, newer than this switchboard understands ({FORMAT_VERSION}); upgrade switchboard",
        path.display()
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version found.
        version: u32,
    },
    /// No directory for the credentials file could be found (neither
    /// `XDG_CONFIG_HOME` nor `HOME` is set, or `APPDATA` on Windows).
    #[error(
        "no configuration directory for the credentials file: set XDG_CONFIG_HOME or HOME, or give a path"
    )]
    NoConfigDir,
    /// The OS keyring failed.
    #[error("the OS keyring failed for {key}")]
    Keyring {
        /// The entry's key.
        key: CredentialKey,
        /// The keyring's error.
        #[source]
        source: keyring::Error,
    },
    /// A store of another kind (a database, see [`StoreError::backend`])
    /// failed.
    #[error("{what}")]
    Backend {
        /// What failed, and where.
        what: String,
        /// Why, when another error says.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// An entry in the OS keyring is not valid JSON of the expected shape.
    #[error(
        "the OS keyring entry for {key} is corrupt; delete it (service \"{KEYRING_SERVICE}\") and log in again"
    )]
    KeyringCorrupt {
        /// The entry's key.
        key: CredentialKey,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
}

impl StoreError {
    /// A failure of a store of another kind (a database): `what` says what
    /// failed and where, for a person to read (never a secret).
    pub fn backend(
        what: impl Into<String>,
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self::Backend {
            what: what.into(),
            source,
        }
    }

    fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Self + 'a {
        move |source| Self::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Somewhere credentials are kept between runs.
///
/// Every method blocks on I/O; from async code call it inside
/// `tokio::task::spawn_blocking`.
pub trait CredentialStore: Send + Sync + fmt::Debug {
    /// The credentials stored under `key`, if any.
    ///
    /// # Errors
    /// The store cannot be read, or what it holds is corrupt.
    fn load(&self, key: &CredentialKey) -> Result<Option<StoredCredentials>, StoreError>;

    /// Where the credentials are kept, for a person to read ("the file
    /// …", "the OS keyring"); never a secret.
    fn describe(&self) -> String {
        "a credential store of the application's own".to_owned()
    }

    /// Stores `credentials` under `key`, replacing what was there (an
    /// [`update`](Self::update) by default).
    ///
    /// # Errors
    /// The store cannot be written.
    fn save(&self, key: &CredentialKey, credentials: &StoredCredentials) -> Result<(), StoreError> {
        self.update(key, &mut |_| Some(credentials.clone()))
            .map(drop)
    }

    /// Removes what is stored under `key`; nothing stored is not an error
    /// (an [`update`](Self::update) by default).
    ///
    /// # Errors
    /// The store cannot be written.
    fn delete(&self, key: &CredentialKey) -> Result<(), StoreError> {
        self.update(key, &mut |_| None).map(drop)
    }

    /// Reads what is stored under `key`, hands it to `f`, and stores what
    /// `f` returns (`None` deletes), all under a lock that every process
    /// using the same store takes: no other `update`, `save` or `delete`
    /// runs in between. Returns what is stored now: what `f` returned (a
    /// refresh hands its new token on from here).
    ///
    /// A refresh runs here: `f` sees the refresh token another process may
    /// just have rotated, not the one this process read earlier.
    ///
    /// # Errors
    /// The store cannot be locked, read or written; on an error nothing
    /// was changed.
    fn update(
        &self,
        key: &CredentialKey,
        f: &mut dyn FnMut(Option<StoredCredentials>) -> Option<StoredCredentials>,
    ) -> Result<Option<StoredCredentials>, StoreError>;
}

/// The store a CLI uses: the OS keyring when it works here, otherwise the
/// file at [`FileStore::default_path`].
///
/// On Linux the file is the default: the keyring backend that builds
/// without system libraries is the kernel's keyutils, which lives in memory
/// and would lose every login at reboot. Use [`KeyringStore`] directly to
/// opt in.
///
/// # Errors
/// Neither the keyring works nor a configuration directory is known.
pub fn default_store() -> Result<Arc<dyn CredentialStore>, StoreError> {
    if cfg!(target_os = "linux") {
        return Ok(Arc::new(FileStore::new(FileStore::default_path()?)));
    }
    let lock_path = FileStore::default_path()
        .ok()
        .map(|path| path.with_file_name("keyring.lock"));
    match KeyringStore::probe() {
        Ok(()) => Ok(Arc::new(KeyringStore { lock_path })),
        Err(error) => {
            tracing::debug!(
                error = %error,
                "the OS keyring is unavailable; credentials go to a file"
            );
            Ok(Arc::new(FileStore::new(FileStore::default_path()?)))
        }
    }
}

/// The on-disk shape of the credentials file.
#[derive(Serialize, Deserialize)]
struct FileContents {
    version: u32,
    #[serde(default)]
    entries: BTreeMap<String, StoredCredentials>,
}

impl FileContents {
    fn empty() -> Self {
        Self {
            version: FORMAT_VERSION,
            entries: BTreeMap::new(),
        }
    }
}

/// Credentials in one JSON file, readable by its owner only (mode 0600 on
/// Unix).
///
/// Every change rewrites the file whole: a new file in the same directory,
/// flushed to disk, then renamed over the old one, so a crash leaves either
/// the old contents or the new. Changes hold an exclusive lock on a sibling
/// `<name>.lock` file, shared with every other process that opens the same
/// path.
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
}

impl FileStore {
    /// A store in the file at `path` (made on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The store in the file at [`FileStore::default_path`].
    ///
    /// # Errors
    /// No configuration directory is known.
    pub fn open_default() -> Result<Self, StoreError> {
        Ok(Self::new(Self::default_path()?))
    }

    /// `$XDG_CONFIG_HOME/switchboard/credentials.json`, else
    /// `~/.config/switchboard/credentials.json` (`%APPDATA%\switchboard\…`
    /// on Windows).
    ///
    /// # Errors
    /// None of those variables is set to an absolute path.
    pub fn default_path() -> Result<PathBuf, StoreError> {
        default_path_from(|name| std::env::var_os(name))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock_path(&self) -> PathBuf {
        sibling(&self.path, ".lock")
    }

    /// Reads the whole file; a missing file is an empty store.
    fn read(&self) -> Result<FileContents, StoreError> {
        let path = &self.path;
        let Some(bytes) = read_private(path, "credentials")? else {
            return Ok(FileContents::empty());
        };
        let version: VersionOnly =
            serde_json::from_slice(&bytes).map_err(|source| StoreError::Corrupt {
                path: path.clone(),
                source,
            })?;
        if version.version > FORMAT_VERSION {
            return Err(StoreError::UnsupportedVersion {
                path: path.clone(),
                version: version.version,
            });
        }
        serde_json::from_slice(&bytes).map_err(|source| StoreError::Corrupt {
            path: path.clone(),
            source,
        })
    }

    /// Replaces the file atomically with `contents`.
    fn write(&self, contents: &FileContents) -> Result<(), StoreError> {
        let path = &self.path;
        let bytes = serde_json::to_vec_pretty(contents).map_err(|source| StoreError::Io {
            action: "serialize credentials for",
            path: path.clone(),
            source: io::Error::other(source),
        })?;
        write_private(path, &bytes)
    }

    /// Runs `f` holding the cross-process lock.
    fn locked<T>(&self, f: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        let _lock = FileLock::acquire(&self.lock_path())?;
        f()
    }

    /// Moves a corrupt (or any) credentials file aside to
    /// `<name>.corrupt-<unix seconds>` so the next save starts afresh, and
    /// returns where it went; `None` if there was no file.
    ///
    /// # Errors
    /// The file cannot be locked or renamed.
    pub fn quarantine(&self) -> Result<Option<PathBuf>, StoreError> {
        self.locked(|| {
            let secs = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let aside = sibling(&self.path, &format!(".corrupt-{secs}"));
            match fs::rename(&self.path, &aside) {
                Ok(()) => Ok(Some(aside)),
                Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(error) => Err(StoreError::io("move aside", &self.path)(error)),
            }
        })
    }
}

#[derive(Deserialize)]
struct VersionOnly {
    version: u32,
}

impl CredentialStore for FileStore {
    fn describe(&self) -> String {
        format!("the file {}", self.path().display())
    }

    fn load(&self, key: &CredentialKey) -> Result<Option<StoredCredentials>, StoreError> {
        // Renames are atomic, so a reader without the lock still sees a
        // whole file.
        Ok(self.read()?.entries.remove(&key.storage_name()))
    }

    fn update(
        &self,
        key: &CredentialKey,
        f: &mut dyn FnMut(Option<StoredCredentials>) -> Option<StoredCredentials>,
    ) -> Result<Option<StoredCredentials>, StoreError> {
        self.locked(|| {
            let mut contents = self.read()?;
            let name = key.storage_name();
            let old = contents.entries.remove(&name);
            let had_entry = old.is_some();
            let new = f(old);
            if !had_entry && new.is_none() {
                return Ok(None);
            }
            if let Some(new) = &new {
                contents.entries.insert(name, new.clone());
            }
            contents.version = FORMAT_VERSION;
            self.write(&contents)?;
            Ok(new)
        })
    }
}

/// Reads the private file at `path` (`what` names it in a warning), at most
/// [`MAX_FILE_SIZE`] bytes; `None` when there is no file.
///
/// # Errors
/// The file cannot be read, or it is larger than [`MAX_FILE_SIZE`].
pub(crate) fn read_private(path: &Path, what: &str) -> Result<Option<Vec<u8>>, StoreError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(StoreError::io("open", path)(error)),
    };
    let metadata = file.metadata().map_err(StoreError::io("read", path))?;
    #[cfg(unix)]
    if std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o077 != 0 {
        tracing::warn!(
            path = %path.display(),
            "the {what} file can be read by other users; the next save makes it private (mode 0600)"
        );
    }
    let size = metadata.len();
    let mut bytes = Vec::new();
    // The size is checked again while reading: the file may grow between.
    file.take(MAX_FILE_SIZE + 1)
        .read_to_end(&mut bytes)
        .map_err(StoreError::io("read", path))?;
    if size > MAX_FILE_SIZE || bytes.len() as u64 > MAX_FILE_SIZE {
        return Err(StoreError::TooLarge {
            path: path.to_path_buf(),
            size: size.max(bytes.len() as u64),
            limit: MAX_FILE_SIZE,
        });
    }
    Ok(Some(bytes))
}

/// Replaces the file at `path` atomically with `bytes`: a new 0600 file
/// beside it, flushed, renamed over it.
///
/// # Errors
/// The file cannot be written.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .subsec_nanos();
    let tmp = sibling(path, &format!(".tmp-{}-{nanos}", std::process::id()));
    let result = (|| {
        let mut file = create_private(&tmp, true).map_err(StoreError::io("create", &tmp))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(StoreError::io("write", &tmp))?;
        drop(file);
        fs::rename(&tmp, path).map_err(StoreError::io("replace", path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
        return result;
    }
    // The rename is durable only once the directory is flushed too.
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let _ = File::open(dir).and_then(|dir| dir.sync_all());
    }
    Ok(())
}

/// [`FileStore::default_path`] with the environment read through `var`.
fn default_path_from(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<PathBuf, StoreError> {
    let absolute = |name: &str| {
        var(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let config = if cfg!(windows) {
        absolute("APPDATA")
    } else {
        absolute("XDG_CONFIG_HOME").or_else(|| absolute("HOME").map(|home| home.join(".config")))
    };
    config
        .map(|dir| dir.join("switchboard").join("credentials.json"))
        .ok_or(StoreError::NoConfigDir)
}

/// `path` with `suffix` appended to its file name.
pub(crate) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Makes `path`'s directory (0700 on Unix) if missing.
fn ensure_parent(path: &Path) -> io::Result<()> {
    let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) else {
        return Ok(());
    };
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Opens `path` for writing, readable by its owner only: created with mode
/// 0600, or (when `new` is false and it exists) made 0600 if it was not.
///
/// A symbolic link at `path` is never followed (`O_NOFOLLOW`; `create_new`
/// refuses one as well), so another user who plants one beside the
/// credentials cannot make us create, lock or loosen the file it points
/// to: the open fails instead.
fn create_private(path: &Path, new: bool) -> io::Result<File> {
    ensure_parent(path)?;
    let mut options = OpenOptions::new();
    options.write(true);
    if new {
        options.create_new(true);
    } else {
        options.create(true).truncate(false);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    let file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let metadata = file.metadata()?;
        if !metadata.is_file() {
            return Err(io::Error::other("it is not a regular file"));
        }
        if metadata.permissions().mode() & 0o777 != 0o600 {
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(file)
}

/// An exclusive advisory lock on a file, released when dropped.
pub(crate) struct FileLock {
    file: File,
}

impl FileLock {
    pub(crate) fn acquire(path: &Path) -> Result<Self, StoreError> {
        let file =
            create_private(path, false).map_err(StoreError::io("open the lock file", path))?;
        // Called through the trait: `File::lock` in std is newer than the MSRV.
        fs4::FileExt::lock(&file).map_err(StoreError::io("lock", path))?;
        Ok(Self { file })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = fs4::FileExt::unlock(&self.file);
    }
}

/// Credentials in the OS keyring (macOS Keychain, Windows Credential
/// Manager, Linux kernel keyutils), one entry per key under the service
/// `switchboard`, the value being the credentials as JSON.
///
/// On Linux the keyutils keyring lasts for the login session: after a
/// reboot the user logs in again. On Windows an entry holds at most 2560
/// bytes, which very long tokens exceed ([`StoreError::Keyring`]).
#[derive(Debug, Clone, Default)]
pub struct KeyringStore {
    lock_path: Option<PathBuf>,
}

impl KeyringStore {
    /// A store in the OS keyring. `lock_path` is the file whose lock
    /// [`CredentialStore::update`] holds across processes; without one,
    /// updates are not serialized between processes.
    pub fn new(lock_path: Option<PathBuf>) -> Self {
        Self { lock_path }
    }

    /// Whether the keyring answers here at all (a container may lack the
    /// secret store or forbid the system call).
    ///
    /// # Errors
    /// The keyring's own error when it does not answer.
    pub fn probe() -> Result<(), keyring::Error> {
        let entry = keyring::Entry::new(KEYRING_SERVICE, "availability probe")?;
        match entry.get_password() {
            Ok(_) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(error) => Err(error),
        }
    }

    fn entry(key: &CredentialKey) -> Result<keyring::Entry, StoreError> {
        keyring::Entry::new(KEYRING_SERVICE, &key.storage_name()).map_err(|source| {
            StoreError::Keyring {
                key: key.clone(),
                source,
            }
        })
    }

    fn keyring_error(key: &CredentialKey) -> impl FnOnce(keyring::Error) -> StoreError + '_ {
        move |source| StoreError::Keyring {
            key: key.clone(),
            source,
        }
    }

    fn read(
        entry: &keyring::Entry,
        key: &CredentialKey,
    ) -> Result<Option<StoredCredentials>, StoreError> {
        match entry.get_password() {
            Ok(json) => {
                serde_json::from_str(&json)
                    .map(Some)
                    .map_err(|source| StoreError::KeyringCorrupt {
                        key: key.clone(),
                        source,
                    })
            }
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(error) => Err(Self::keyring_error(key)(error)),
        }
    }

    fn locked<T>(&self, f: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        let _lock = self
            .lock_path
            .as_deref()
            .map(FileLock::acquire)
            .transpose()?;
        f()
    }
}

impl CredentialStore for KeyringStore {
    fn describe(&self) -> String {
        "the OS keyring".to_owned()
    }

    fn load(&self, key: &CredentialKey) -> Result<Option<StoredCredentials>, StoreError> {
        Self::read(&Self::entry(key)?, key)
    }

    fn update(
        &self,
        key: &CredentialKey,
        f: &mut dyn FnMut(Option<StoredCredentials>) -> Option<StoredCredentials>,
    ) -> Result<Option<StoredCredentials>, StoreError> {
        self.locked(|| {
            let entry = Self::entry(key)?;
            let old = Self::read(&entry, key)?;
            let had_entry = old.is_some();
            let new = f(old);
            match &new {
                Some(new) => {
                    let json = serde_json::to_string(new).map_err(|error| {
                        Self::keyring_error(key)(keyring::Error::Invalid(
                            "credentials".into(),
                            error.to_string(),
                        ))
                    })?;
                    entry
                        .set_password(&json)
                        .map_err(Self::keyring_error(key))?;
                }
                None if had_entry => match entry.delete_credential() {
                    Ok(()) | Err(keyring::Error::NoEntry) => {}
                    Err(error) => return Err(Self::keyring_error(key)(error)),
                },
                None => {}
            }
            Ok(new)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Self {
            static COUNTER: AtomicU32 = AtomicU32::new(0);
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let dir = std::env::temp_dir().join(format!(
                "switchboard-store-{}-{nanos}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        fn file(&self) -> PathBuf {
            self.0.join("nested").join("credentials.json")
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn key() -> CredentialKey {
        CredentialKey::new("https://mcp.example.com/mcp", "https://auth.example.com")
    }

    fn sample() -> StoredCredentials {
        let mut credentials = StoredCredentials::new(
            "https://mcp.example.com/mcp",
            "https://auth.example.com",
            "client-123",
        );
        credentials.client_secret = Some(Secret::new("client-secret-value"));
        credentials.access_token = Some(Secret::new("access-token-value"));
        credentials.refresh_token = Some(Secret::new("refresh-token-value"));
        credentials.token_type = Some("Bearer".into());
        credentials.expires_at = Some(UNIX_EPOCH + Duration::from_secs(2_000_000_000));
        credentials.received_at = Some(UNIX_EPOCH + Duration::from_secs(1_999_996_400));
        credentials.scopes = vec!["tools:read".into(), "tools:call".into()];
        credentials
            .extra
            .insert("id_token".into(), "id-token-value".into());
        credentials
    }

    #[test]
    fn round_trip_through_a_new_store() {
        let dir = TempDir::new();
        let store = FileStore::new(dir.file());
        assert_eq!(store.load(&key()).unwrap(), None);
        store.save(&key(), &sample()).unwrap();

        let reopened = FileStore::new(dir.file());
        assert_eq!(reopened.load(&key()).unwrap(), Some(sample()));
        let other_issuer =
            CredentialKey::new("https://mcp.example.com/mcp", "https://other.example");
        assert_eq!(reopened.load(&other_issuer).unwrap(), None);

        let raw: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.file()).unwrap()).unwrap();
        assert_eq!(raw["version"], 1);
        let entry = &raw["entries"][key().storage_name()];
        assert_eq!(entry["expires_at"], 2_000_000_000u64);
        assert_eq!(entry["refresh_token"], "refresh-token-value");

        reopened.delete(&key()).unwrap();
        assert_eq!(store.load(&key()).unwrap(), None);
    }

    #[test]
    fn unknown_fields_survive_a_rewrite() {
        let dir = TempDir::new();
        let path = dir.file();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let name = key().storage_name();
        let json = serde_json::json!({"version": 1, "entries": {name.clone(): {
            "issuer": "https://auth.example.com", "resource": "https://mcp.example.com/mcp",
            "client_id": "c", "future_field": {"x": 1}
        }}});
        fs::write(&path, json.to_string()).unwrap();
        let store = FileStore::new(&path);
        store
            .update(&key(), &mut |old| {
                let mut old = old.unwrap();
                old.access_token = Some(Secret::new("new"));
                Some(old)
            })
            .unwrap();
        let raw: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(raw["entries"][&name]["future_field"]["x"], 1);
        assert_eq!(raw["entries"][&name]["access_token"], "new");
    }

    #[cfg(unix)]
    #[test]
    fn file_and_directory_are_private() {
        use std::os::unix::fs::PermissionsExt;

        let dir = TempDir::new();
        let store = FileStore::new(dir.file());
        store.save(&key(), &sample()).unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.file()), 0o600);
        assert_eq!(mode(dir.file().parent().unwrap()), 0o700);
        assert_eq!(mode(&store.lock_path()), 0o600);

        // A file someone loosened is private again after the next save.
        fs::set_permissions(dir.file(), fs::Permissions::from_mode(0o644)).unwrap();
        store.save(&key(), &sample()).unwrap();
        assert_eq!(mode(&dir.file()), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_loosened_lock_file_is_private_again() {
        use std::os::unix::fs::PermissionsExt;

        let dir = TempDir::new();
        let store = FileStore::new(dir.file());
        fs::create_dir_all(dir.file().parent().unwrap()).unwrap();
        fs::write(store.lock_path(), b"").unwrap();
        fs::set_permissions(store.lock_path(), fs::Permissions::from_mode(0o644)).unwrap();
        store.save(&key(), &sample()).unwrap();
        let mode = fs::metadata(store.lock_path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }

    /// Plants a symbolic link at `link` to `target`.
    #[cfg(unix)]
    fn plant(link: &Path, target: &Path) {
        fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, link).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_lock_path_is_not_followed() {
        use std::os::unix::fs::PermissionsExt;

        let dir = TempDir::new();
        let store = FileStore::new(dir.file());

        // A link to a file that does not exist yet: following it would
        // create the file wherever the link points.
        let absent = dir.0.join("created-through-the-link");
        plant(&store.lock_path(), &absent);
        let error = store.save(&key(), &sample()).unwrap_err();
        assert!(
            matches!(&error, StoreError::Io { path, .. } if *path == store.lock_path()),
            "{error:?}"
        );
        assert!(!absent.exists(), "the link was followed");
        assert!(!dir.file().exists(), "nothing is saved without the lock");

        // A link to someone's file: it is neither opened for writing nor
        // made private.
        let victim = dir.0.join("victim");
        fs::write(&victim, b"keep me").unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o644)).unwrap();
        fs::remove_file(store.lock_path()).unwrap();
        plant(&store.lock_path(), &victim);
        assert!(store.save(&key(), &sample()).is_err());
        assert_eq!(fs::read(&victim).unwrap(), b"keep me");
        let mode = fs::metadata(&victim).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_a_temporary_path_is_not_followed() {
        use std::os::unix::fs::PermissionsExt;

        // The temporary file's name is not predictable, so the function
        // that creates it is tried directly on a planted link.
        let dir = TempDir::new();
        let victim = dir.0.join("victim");
        fs::write(&victim, b"keep me").unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o644)).unwrap();
        let tmp = sibling(&dir.file(), ".tmp-1-2");
        plant(&tmp, &victim);
        assert!(create_private(&tmp, true).is_err());
        assert_eq!(fs::read(&victim).unwrap(), b"keep me");
        let mode = fs::metadata(&victim).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
        let absent = dir.0.join("absent");
        let tmp = sibling(&dir.file(), ".tmp-3-4");
        plant(&tmp, &absent);
        assert!(create_private(&tmp, true).is_err());
        assert!(!absent.exists());
    }

    #[test]
    fn debug_and_display_never_show_a_secret() {
        let credentials = sample();
        let debug = format!("{credentials:?} {credentials:#?}");
        for secret in [
            "client-secret-value",
            "access-token-value",
            "refresh-token-value",
            "id-token-value",
        ] {
            assert!(!debug.contains(secret), "{secret} leaked: {debug}");
        }
        assert!(debug.contains("client-123"));
        assert!(debug.contains("id_token"));
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(secret.to_string(), "[redacted]");
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn a_corrupt_file_is_reported_and_left_alone() {
        let dir = TempDir::new();
        let path = dir.file();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, b"{\"version\": 1, \"entries\": ").unwrap();
        let store = FileStore::new(&path);

        let error = store.load(&key()).unwrap_err();
        assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
        let message = error.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("move it aside"), "{message}");

        let error = store.save(&key(), &sample()).unwrap_err();
        assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
        assert_eq!(fs::read(&path).unwrap(), b"{\"version\": 1, \"entries\": ");

        let aside = store.quarantine().unwrap().unwrap();
        assert_eq!(fs::read(&aside).unwrap(), b"{\"version\": 1, \"entries\": ");
        assert!(aside.to_string_lossy().contains(".corrupt-"));
        store.save(&key(), &sample()).unwrap();
        assert_eq!(store.load(&key()).unwrap(), Some(sample()));
    }

    #[test]
    fn a_newer_format_is_refused() {
        let dir = TempDir::new();
        let path = dir.file();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, br#"{"version": 2, "entries": {"k": 5}}"#).unwrap();
        let store = FileStore::new(&path);
        let error = store.save(&key(), &sample()).unwrap_err();
        assert!(
            matches!(error, StoreError::UnsupportedVersion { version: 2, .. }),
            "{error:?}"
        );
        assert_eq!(
            fs::read(&path).unwrap(),
            br#"{"version": 2, "entries": {"k": 5}}"#
        );
    }

    #[test]
    fn an_oversized_file_is_refused() {
        let dir = TempDir::new();
        let path = dir.file();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut big = b"{\"version\":1,\"entries\":{},\"pad\":\"".to_vec();
        big.resize(MAX_FILE_SIZE as usize + 10, b'a');
        big.extend_from_slice(b"\"}");
        fs::write(&path, &big).unwrap();
        let error = FileStore::new(&path).load(&key()).unwrap_err();
        assert!(matches!(error, StoreError::TooLarge { .. }), "{error:?}");
        assert!(error.to_string().contains(&path.display().to_string()));
    }

    #[test]
    fn writes_leave_no_temporary_files() {
        let dir = TempDir::new();
        let store = FileStore::new(dir.file());
        for i in 0..5 {
            let key = CredentialKey::new(format!("https://mcp{i}.example"), "https://auth.example");
            store.save(&key, &sample()).unwrap();
        }
        store.delete(&key()).unwrap();
        let mut names: Vec<String> = fs::read_dir(dir.file().parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["credentials.json", "credentials.json.lock"]);
    }

    #[test]
    fn concurrent_updates_lose_nothing() {
        const THREADS: u64 = 8;
        const ROUNDS: u64 = 50;
        let dir = TempDir::new();
        let path = dir.file();
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || {
                    // Each thread opens its own store, as separate processes
                    // would: only the file lock keeps them apart.
                    let store = FileStore::new(path);
                    for _ in 0..ROUNDS {
                        store
                            .update(&key(), &mut |old| {
                                let mut credentials = old.unwrap_or_else(sample);
                                let count = credentials.extra.get("count").and_then(|v| v.as_u64());
                                credentials
                                    .extra
                                    .insert("count".into(), (count.unwrap_or(0) + 1).into());
                                Some(credentials)
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let stored = FileStore::new(&path).load(&key()).unwrap().unwrap();
        assert_eq!(stored.extra["count"], THREADS * ROUNDS);
    }

    /// The OS keyring, when this machine has one (Linux keyutils can be
    /// forbidden in a container): a round trip, then updates from several
    /// threads serialized by the lock file.
    #[test]
    fn keyring_round_trip_and_locked_updates() {
        if let Err(error) = KeyringStore::probe() {
            eprintln!("no OS keyring here, not tested: {error}");
            return;
        }
        let dir = TempDir::new();
        let unique = dir.0.file_name().unwrap().to_string_lossy().into_owned();
        let key = CredentialKey::new(format!("https://{unique}.test/mcp"), "https://auth.test");
        let store = KeyringStore::new(Some(dir.0.join("keyring.lock")));
        assert_eq!(store.load(&key).unwrap(), None);
        store.save(&key, &sample()).unwrap();
        assert_eq!(store.load(&key).unwrap(), Some(sample()));

        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (key, lock) = (key.clone(), dir.0.join("keyring.lock"));
                std::thread::spawn(move || {
                    let store = KeyringStore::new(Some(lock));
                    for _ in 0..25 {
                        store
                            .update(&key, &mut |old| {
                                let mut credentials = old.unwrap();
                                let count = credentials.extra.get("count").and_then(|v| v.as_u64());
                                credentials
                                    .extra
                                    .insert("count".into(), (count.unwrap_or(0) + 1).into());
                                Some(credentials)
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(store.load(&key).unwrap().unwrap().extra["count"], 100);
        store.delete(&key).unwrap();
        assert_eq!(store.load(&key).unwrap(), None);
        store.delete(&key).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn default_path_prefers_xdg_config_home() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        assert_eq!(
            default_path_from(env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])).unwrap(),
            Path::new("/x/switchboard/credentials.json")
        );
        // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
        assert_eq!(
            default_path_from(env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")])).unwrap(),
            Path::new("/h/.config/switchboard/credentials.json")
        );
        assert!(matches!(
            default_path_from(env(&[])),
            Err(StoreError::NoConfigDir)
        ));
    }
}
