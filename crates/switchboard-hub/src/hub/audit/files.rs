//! What an audit log keeps outside its own file, in a directory of the
//! user's own under the state directory (one per log, named after a digest
//! of the log's absolute path): the MAC key, the arguments' salt, the
//! anchor (where the chain stands) and the single-writer lock. And the
//! checks on every file the log touches: the user's own, never through a
//! symlink.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::AuditError;

/// Bytes of the key and of the salt.
const SECRET_BYTES: usize = 32;

/// The current user's id.
#[cfg(unix)]
pub(super) fn my_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Refuses `meta` when another user owns it (`what` names it).
pub(super) fn check_owner(path: &Path, meta: &fs::Metadata) -> Result<(), AuditError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if meta.uid() != my_uid() {
            return Err(AuditError::Foreign {
                path: path.to_owned(),
                uid: meta.uid(),
            });
        }
    }
    let _ = (path, meta);
    Ok(())
}

/// Refuses a file or directory others can read or write.
fn check_private(path: &Path, meta: &fs::Metadata) -> Result<(), AuditError> {
    check_owner(path, meta)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(AuditError::Exposed {
                path: path.to_owned(),
                mode,
            });
        }
    }
    Ok(())
}

/// Opens `path` with `options`, never through a symlink.
pub(super) fn open_no_follow(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Reads `path` (never through a symlink) after checking its owner; `None`
/// when it does not exist.
pub(super) fn read_own(path: &Path) -> Result<Option<Vec<u8>>, AuditError> {
    let mut file = match open_no_follow(path, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(AuditError::io("open", path, e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| AuditError::io("stat", path, e))?;
    check_owner(path, &meta)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| AuditError::io("read", path, e))?;
    Ok(Some(bytes))
}

/// The log's absolute path with its directory resolved (the file itself
/// need not exist), after checking that directory is the user's own.
pub(super) fn resolve(path: &Path) -> Result<PathBuf, AuditError> {
    let name = path.file_name().ok_or_else(|| AuditError::Io {
        what: "use",
        path: path.to_owned(),
        source: io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
    })?;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = fs::canonicalize(parent).map_err(|e| AuditError::io("resolve", parent, e))?;
    let meta = fs::metadata(&dir).map_err(|e| AuditError::io("stat", &dir, e))?;
    check_owner(&dir, &meta)?;
    Ok(dir.join(name))
}

/// The directory holding `log`'s key, salt, anchor and lock: under `base`
/// (default `<data dir>/switchboard/audit`), named after a digest of the
/// log's resolved path.
pub(super) fn state_dir(base: Option<&Path>, log: &Path) -> Result<PathBuf, AuditError> {
    let base = match base {
        Some(base) => base.to_owned(),
        None => crate::hub::store::default_dir()
            .map(|d| d.join("audit"))
            .ok_or_else(|| AuditError::Io {
                what: "find",
                path: PathBuf::from("<data dir>/switchboard/audit"),
                source: io::Error::new(io::ErrorKind::NotFound, "no home directory"),
            })?,
    };
    let digest = super::sha256_hex(log.as_os_str().as_encoded_bytes());
    Ok(base.join(&digest[..32]))
}

/// Makes `dir` (0700) or checks the one there: a directory (not a
/// symlink) of the user's own that no one else can enter.
pub(super) fn private_dir(dir: &Path) -> Result<(), AuditError> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => check_private(dir, &meta),
        Ok(_) => Err(AuditError::io(
            "use",
            dir,
            io::Error::other("not a directory (a symlink is never followed)"),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            crate::private_file::create_private_dir(dir)
                .map_err(|e| AuditError::io("create", dir, e))
        }
        Err(e) => Err(AuditError::io("stat", dir, e)),
    }
}

/// The secret in `dir/name`: read when there (it must be the user's own,
/// 0600), made when `create` and missing.
pub(super) fn secret(dir: &Path, name: &str, create: bool) -> Result<Vec<u8>, AuditError> {
    let path = dir.join(name);
    loop {
        match open_no_follow(&path, OpenOptions::new().read(true)) {
            Ok(mut file) => {
                let meta = file
                    .metadata()
                    .map_err(|e| AuditError::io("stat", &path, e))?;
                check_private(&path, &meta)?;
                let mut text = String::new();
                file.read_to_string(&mut text)
                    .map_err(|e| AuditError::io("read", &path, e))?;
                return unhex(text.trim())
                    .filter(|b| b.len() == SECRET_BYTES)
                    .ok_or_else(|| AuditError::io("read", &path, io::Error::other("not a key")));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                let mut bytes = [0u8; SECRET_BYTES];
                aws_lc_rs::rand::fill(&mut bytes)
                    .map_err(|_| AuditError::io("generate", &path, io::Error::other("no RNG")))?;
                match crate::private_file::create_new_private(&path) {
                    Ok(mut file) => {
                        file.write_all(hex(&bytes).as_bytes())
                            .and_then(|()| file.sync_all())
                            .map_err(|e| AuditError::io("write", &path, e))?;
                        return Ok(bytes.to_vec());
                    }
                    // Another opener made it first: read theirs.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(AuditError::io("create", &path, e)),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(AuditError::NoState { path: path.clone() });
            }
            Err(e) => return Err(AuditError::io("open", &path, e)),
        }
    }
}

/// Takes the single-writer lock of the log whose state is in `dir`, held
/// until the returned file is dropped.
pub(super) fn lock(dir: &Path, log: &Path) -> Result<File, AuditError> {
    let path = dir.join("lock");
    let file = open_no_follow(
        &path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode_private(),
    )
    .map_err(|e| AuditError::io("open", &path, e))?;
    let meta = file
        .metadata()
        .map_err(|e| AuditError::io("stat", &path, e))?;
    check_owner(&path, &meta)?;
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => Ok(file),
        Err(fs4::TryLockError::WouldBlock) => Err(AuditError::Busy {
            path: log.to_owned(),
        }),
        Err(fs4::TryLockError::Error(e)) => Err(AuditError::io("lock", &path, e)),
    }
}

trait ModePrivate {
    fn mode_private(&mut self) -> &mut Self;
}

impl ModePrivate for OpenOptions {
    fn mode_private(&mut self) -> &mut Self {
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(self, 0o600);
        self
    }
}

/// Where the chain stands, kept outside the log: the current file's
/// sequence number, the oldest file kept, and the current file's line
/// count and last MAC; `tag` is the MAC of all that.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Anchor {
    pub(super) seq: u64,
    pub(super) oldest: u64,
    pub(super) lines: u64,
    pub(super) mac: String,
    #[serde(default)]
    pub(super) tag: String,
}

impl Anchor {
    fn tag_of(&self, key: &[u8]) -> String {
        let text = format!(
            "anchor|{}|{}|{}|{}",
            self.seq, self.oldest, self.lines, self.mac
        );
        super::mac_hex(key, text.as_bytes())
    }

    /// The anchor in `dir`, `None` when there is none; one whose tag does
    /// not hold is refused. The file is a line per append, the last whole
    /// one in force (a line cut by a crash is skipped).
    pub(super) fn load(dir: &Path, key: &[u8]) -> Result<Option<Self>, AuditError> {
        let path = dir.join("anchor");
        let Some(bytes) = read_own(&path)? else {
            return Ok(None);
        };
        let last = bytes
            .strip_suffix(b"\n")
            .map(|whole| whole.rsplit(|b| *b == b'\n').next().unwrap_or(whole))
            .or_else(|| {
                // No whole line at the end: the one before the cut.
                let upto = bytes.iter().rposition(|b| *b == b'\n')?;
                bytes[..upto].rsplit(|b| *b == b'\n').next()
            })
            .unwrap_or_default();
        let anchor: Self = serde_json::from_slice(last)
            .map_err(|e| AuditError::io("parse", &path, io::Error::other(e)))?;
        if !super::mac_eq(&anchor.tag_of(key), &anchor.tag) {
            return Err(AuditError::Tampered {
                path,
                why: "the anchor's own MAC does not hold: it was edited".into(),
            });
        }
        Ok(Some(anchor))
    }

    fn line(&mut self, key: &[u8]) -> Vec<u8> {
        self.tag = self.tag_of(key);
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Replaces the anchor file in `dir` with this one line, atomically
    /// (a private temporary file renamed over it), and opens it for the
    /// appends that follow.
    pub(super) fn reset(&mut self, dir: &Path, key: &[u8]) -> Result<File, AuditError> {
        let path = dir.join("anchor");
        crate::private_file::write_atomically(&path, &self.line(key), false)
            .map_err(|e| AuditError::io("write", &path, e))?;
        open_no_follow(&path, OpenOptions::new().append(true))
            .map_err(|e| AuditError::io("open", &path, e))
    }

    /// Appends this anchor as the one in force: one small `write` to a
    /// file opened for appending (a rename per record, or an fsync, cost
    /// milliseconds a call). Written after the log's line, so a crash of
    /// the process leaves the anchor behind the log, never ahead; after a
    /// power loss it may be ahead, and `verify` then says the tail was cut
    /// by the lines that never reached the disk.
    pub(super) fn append(&mut self, file: &mut &File, key: &[u8]) -> Result<(), AuditError> {
        file.write_all(&self.line(key))
            .map_err(|e| AuditError::io("append to", Path::new("the audit anchor"), e))
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}
