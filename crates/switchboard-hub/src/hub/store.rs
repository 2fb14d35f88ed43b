//! The state file: per server the last state, era/transport verdict and
//! tool list, so a listing answers before anything connects.
//!
//! One JSON document (`hub-state.json`) under the user's data directory
//! (`etcetera`: `$XDG_DATA_HOME/switchboard` on Linux, the platform's
//! equivalent elsewhere). Written by one task of the hub, at most every
//! 100 ms and once more at shutdown (fifty servers getting ready write it
//! a few times, not fifty), atomically (a temporary file in the same
//! directory, then a rename). A file that does not parse, or has another
//! format version, is discarded with a warning.
//!
//! It tells which servers a user has and what they offer, so it is theirs
//! alone: 0600 in a 0700 directory, written and read through
//! [`private_file`](crate::private_file) (no planted symlink is followed).
//! Servers are keyed by [`ServerConfig::state_signature`], a digest of the
//! configuration as written, so no expanded `${VAR}` value, nor a secret
//! written into an argument or a URL, is in the file.
//!
//! [`ServerConfig::state_signature`]: crate::ServerConfig::state_signature

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use switchboard::types::{Era, Tool};
use tokio::sync::Notify;

/// Bumped whenever the layout changes; other versions are discarded.
/// 2: signatures are digests (format 1 held commands and URLs, expanded).
const FORMAT: u32 = 2;
const FILE: &str = "hub-state.json";

/// What one server left behind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// `ServerConfig::state_signature`: an entry for another command or
    /// URL under the same name is not this server's.
    pub(crate) signature: String,
    pub(crate) state: String,
    #[serde(default)]
    pub(crate) transport: Option<String>,
    #[serde(default)]
    pub(crate) era: Option<Era>,
    #[serde(default)]
    pub(crate) protocol_version: Option<String>,
    /// The server's list itself, shared with the hub's view of it (a
    /// list of thousands of tools is kept once, not once more here).
    #[serde(default)]
    pub(crate) tools: Arc<[Tool]>,
}

#[derive(Serialize, Deserialize)]
struct Document {
    format: u32,
    servers: BTreeMap<String, Stored>,
}

/// The state file and its contents in memory.
pub(crate) struct Store {
    path: PathBuf,
    servers: Mutex<BTreeMap<String, Stored>>,
    /// Entries changed since the last write.
    dirty: AtomicBool,
    changed: Notify,
}

/// The default directory: `<data dir>/switchboard`.
pub(crate) fn default_dir() -> Option<PathBuf> {
    use etcetera::BaseStrategy;
    etcetera::choose_base_strategy()
        .ok()
        .map(|s| s.data_dir().join("switchboard"))
}

impl Store {
    /// Loads `dir/hub-state.json`; a missing file is an empty store, a bad
    /// one is discarded with a warning.
    pub(crate) fn open(dir: &Path) -> Self {
        let path = dir.join(FILE);
        let servers = match crate::private_file::read_no_follow(&path) {
            Ok(bytes) => match serde_json::from_slice::<Document>(&bytes) {
                Ok(doc) if doc.format == FORMAT => doc.servers,
                Ok(doc) => {
                    tracing::warn!(path = %path.display(), format = doc.format, "hub state file has another format; discarded");
                    BTreeMap::new()
                }
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "hub state file is corrupt; discarded");
                    BTreeMap::new()
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot read the hub state file; starting without it");
                BTreeMap::new()
            }
        };
        Self {
            path,
            servers: Mutex::new(servers),
            dirty: AtomicBool::new(false),
            changed: Notify::new(),
        }
    }

    /// The entry for `name`, if it was written for the same `signature`.
    pub(crate) fn get(&self, name: &str, signature: &str) -> Option<Stored> {
        self.lock()
            .get(name)
            .filter(|s| s.signature == signature)
            .cloned()
    }

    /// Records `name`'s entry; [`Store::flush`] writes it.
    pub(crate) fn put(&self, name: &str, entry: Stored) {
        let mut servers = self.lock();
        if servers.get(name) == Some(&entry) {
            return;
        }
        servers.insert(name.to_owned(), entry);
        drop(servers);
        self.dirty.store(true, Ordering::Release);
        self.changed.notify_one();
    }

    /// Waits until an entry changed since the last flush.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }

    /// Writes the file if anything changed. A failed write is a warning:
    /// the state file is a cache. Called from one task only (the hub's
    /// writer), so writes never interleave. The entries are copied out
    /// (their tool lists shared, not copied) and written as they are
    /// serialized, never as one text in memory.
    pub(crate) fn flush(&self) {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return;
        }
        let doc = Document {
            format: FORMAT,
            servers: self.lock().clone(),
        };
        if let Err(error) = write_atomically(&self.path, &doc) {
            tracing::warn!(path = %self.path.display(), %error, "cannot write the hub state file");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Stored>> {
        self.servers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn write_atomically(path: &Path, doc: &Document) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::private_file::create_private_dir(dir)?;
    crate::private_file::write_atomically_with(path, false, |file| {
        let mut out = std::io::BufWriter::new(file);
        serde_json::to_writer_pretty(&mut out, doc).map_err(std::io::Error::other)?;
        std::io::Write::flush(&mut out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "switchboard-hub-store-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn entry(sig: &str) -> Stored {
        Stored {
            signature: sig.into(),
            state: "ready".into(),
            transport: Some("stdio".into()),
            era: Some(Era::Modern),
            protocol_version: Some("2026-07-28".into()),
            tools: Arc::from([Tool {
                name: "echo".into(),
                ..Tool::default()
            }]),
        }
    }

    #[test]
    fn round_trips_and_ignores_another_signature() {
        let dir = temp_dir("roundtrip");
        let store = Store::open(&dir);
        store.put("a", entry("sig-a"));
        store.flush();
        let again = Store::open(&dir);
        assert_eq!(again.get("a", "sig-a"), Some(entry("sig-a")));
        assert_eq!(again.get("a", "sig-other"), None);
        assert_eq!(again.get("b", "sig-a"), None);
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from(FILE)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn corrupt_or_old_files_are_discarded_and_then_replaced() {
        let dir = temp_dir("corrupt");
        std::fs::create_dir_all(&dir).unwrap();
        for bad in [
            &b"{not json"[..],
            br#"{"format":0,"servers":{"a":{"signature":"sig-a","state":"ready"}}}"#,
            br#"[1,2,3]"#,
        ] {
            std::fs::write(dir.join(FILE), bad).unwrap();
            let store = Store::open(&dir);
            assert_eq!(store.get("a", "sig-a"), None);
            store.put("a", entry("sig-a"));
            store.flush();
            assert_eq!(Store::open(&dir).get("a", "sig-a"), Some(entry("sig-a")));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private_and_planted_symlinks_are_neither_read_nor_written_through() {
        use std::os::unix::fs::{PermissionsExt as _, symlink};
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = temp_dir("symlinks");
        let outside = temp_dir("symlinks-outside");
        std::fs::create_dir_all(&outside).unwrap();
        // Someone else's copy of a state document, and a file to protect.
        let planted = outside.join("planted.json");
        std::fs::write(
            &planted,
            format!(
                r#"{{"format":{FORMAT},"servers":{{"a":{}}}}}"#,
                serde_json::to_string(&entry("sig-a")).unwrap()
            ),
        )
        .unwrap();
        let victim = outside.join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        symlink(&planted, dir.join(FILE)).unwrap();
        let pid = std::process::id();
        for n in 0..8 {
            symlink(&victim, dir.join(format!(".{FILE}.{pid}.{n}.tmp"))).unwrap();
        }

        let store = Store::open(&dir);
        assert_eq!(
            store.get("a", "sig-a"),
            None,
            "a symlinked state file is not read"
        );
        store.put("b", entry("sig-b"));
        store.flush();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert!(std::fs::symlink_metadata(dir.join(FILE)).unwrap().is_file());
        assert_eq!(Store::open(&dir).get("b", "sig-b"), Some(entry("sig-b")));
        assert_eq!(mode(&dir.join(FILE)), 0o600);
        assert_eq!(mode(&dir), 0o700);
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }
}
