//! The gateway's audit log: one JSON line per tool call, tamper-evident.
//!
//! Each line records the time (`ts_ms`, Unix milliseconds), the host's
//! session, the server, the tool (its own name and the hub-wide one), a
//! SHA-256 of the arguments (the arguments themselves only when asked:
//! [`AuditOptions::arguments`]), the outcome (`ok`, `tool_error` or
//! `error` with its message), the duration and the result's size in bytes,
//! and `prev`: the SHA-256 of the previous line's text (64 zeros for the
//! first). Changing, removing or reordering a line breaks the chain, which
//! [`verify`] checks (`switchboard audit verify FILE`).
//!
//! The file is created 0600 (never through a symlink) and appended to; a
//! line is written whole, under a lock. When it passes
//! [`AuditOptions::max_bytes`] it is renamed to `FILE.1` (replacing an older
//! one) and a new file starts whose first line's `prev` is the hash of the
//! last line of `FILE.1`, so the chain runs on across the two.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};

/// The `prev` of a chain's first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What the audit log keeps, and how large it grows.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AuditOptions {
    /// Record the call's arguments themselves, not only their hash.
    /// Default `false`: arguments can hold secrets.
    pub arguments: bool,
    /// Rotate to `FILE.1` past this many bytes. Default 16 MiB.
    pub max_bytes: u64,
}

impl Default for AuditOptions {
    fn default() -> Self {
        Self {
            arguments: false,
            max_bytes: 16 << 20,
        }
    }
}

/// One tool call, as the gateway saw it.
#[derive(Clone, Debug)]
pub struct AuditEntry<'a> {
    /// The host's session.
    pub session: &'a str,
    /// The server that ran it.
    pub server: Option<&'a str>,
    /// The name the host called.
    pub name: &'a str,
    /// The arguments.
    pub arguments: Option<&'a serde_json::Map<String, Value>>,
    /// `ok`, `tool_error` or `error`.
    pub outcome: &'a str,
    /// The error's message, for `error` and `tool_error`.
    pub message: Option<&'a str>,
    /// How long the call took.
    pub duration: std::time::Duration,
    /// The result's size as JSON, in bytes.
    pub bytes: usize,
}

struct State {
    file: File,
    written: u64,
    prev: String,
}

/// An open audit log.
pub struct AuditLog {
    path: PathBuf,
    options: AuditOptions,
    state: Mutex<State>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn sha256(bytes: &[u8]) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Opens `path` for appending: 0600 when created, never through a symlink.
fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// The hash of the last line of `path` (the chain's head), [`GENESIS`] for
/// an empty or missing file.
fn head_of(path: &Path) -> io::Result<String> {
    let bytes = match crate::private_file::read_no_follow(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(GENESIS.to_owned()),
        Err(error) => return Err(error),
    };
    Ok(bytes
        .split(|b| *b == b'\n')
        .rfind(|line| !line.is_empty())
        .map_or_else(|| GENESIS.to_owned(), sha256))
}

impl AuditLog {
    /// Opens (or creates) the log at `path`, continuing its chain.
    ///
    /// # Errors
    /// When the file cannot be read or opened (a symlink is refused).
    pub fn open(path: impl Into<PathBuf>, options: AuditOptions) -> io::Result<Self> {
        let path = path.into();
        let prev = head_of(&path)?;
        let file = open_append(&path)?;
        let written = file.metadata()?.len();
        Ok(Self {
            path,
            options,
            state: Mutex::new(State {
                file,
                written,
                prev,
            }),
        })
    }

    /// Where the log is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one call's line.
    ///
    /// # Errors
    /// When the line cannot be written (the chain then stays at the last
    /// line written).
    pub fn record(&self, entry: &AuditEntry<'_>) -> io::Result<()> {
        let arguments = entry
            .arguments
            .map(|a| serde_json::to_vec(a).unwrap_or_default())
            .unwrap_or_else(|| b"null".to_vec());
        let ts_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.written >= self.options.max_bytes {
            let rotated = PathBuf::from(format!("{}.1", self.path.display()));
            std::fs::rename(&self.path, &rotated)?;
            state.file = open_append(&self.path)?;
            state.written = 0;
        }
        let mut line = json!({
            "ts_ms": ts_ms,
            "session": entry.session,
            "server": entry.server,
            "name": entry.name,
            "args_sha256": sha256(&arguments),
            "outcome": entry.outcome,
            "ms": u64::try_from(entry.duration.as_millis()).unwrap_or(u64::MAX),
            "bytes": entry.bytes,
            "prev": state.prev,
        });
        if let Some(message) = entry.message {
            line["message"] = Value::from(message);
        }
        if self.options.arguments {
            line["arguments"] = entry
                .arguments
                .map_or(Value::Null, |a| Value::Object(a.clone()));
        }
        let mut text = serde_json::to_vec(&line).unwrap_or_default();
        let hash = sha256(&text);
        text.push(b'\n');
        state.file.write_all(&text)?;
        state.written += text.len() as u64;
        state.prev = hash;
        Ok(())
    }
}

/// Why a log does not verify.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The file could not be read.
    #[error("cannot read the audit log: {0}")]
    Io(#[from] io::Error),
    /// A line is not one of ours.
    #[error("line {line} is not an audit record: {why}")]
    Malformed {
        /// 1-based.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// A line's `prev` is not the hash of the line before it: a line was
    /// changed, removed, inserted or reordered there.
    #[error(
        "the chain breaks at line {line}: its `prev` is not the hash of the line before it (a line was changed, removed or moved at or before it)"
    )]
    Broken {
        /// 1-based.
        line: usize,
    },
}

/// Checks `path`'s chain; `first_prev` is what its first line must point
/// at ([`GENESIS`] for a log that never rotated; after a rotation, the
/// hash of `FILE.1`'s last line — `None` accepts whatever the first line
/// says). Returns how many lines it holds.
///
/// # Errors
/// [`VerifyError`] naming the first line that does not hold.
pub fn verify(path: &Path, first_prev: Option<&str>) -> Result<usize, VerifyError> {
    let file = File::open(path)?;
    let mut expected = first_prev.map(str::to_owned);
    let mut count = 0;
    for (index, line) in io::BufReader::new(file).split(b'\n').enumerate() {
        let line = line?;
        if line.is_empty() {
            continue;
        }
        let number = index + 1;
        let record: Value = serde_json::from_slice(&line).map_err(|e| VerifyError::Malformed {
            line: number,
            why: e.to_string(),
        })?;
        let prev =
            record
                .get("prev")
                .and_then(Value::as_str)
                .ok_or_else(|| VerifyError::Malformed {
                    line: number,
                    why: "no `prev`".into(),
                })?;
        if expected.as_deref().is_some_and(|e| e != prev) {
            return Err(VerifyError::Broken { line: number });
        }
        expected = Some(sha256(&line));
        count += 1;
    }
    Ok(count)
}

/// The hash of `path`'s last line: what the first line of the log that
/// follows it (after a rotation) points at.
///
/// # Errors
/// When the file cannot be read.
pub fn chain_head(path: &Path) -> io::Result<String> {
    head_of(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(name: &'a str, args: &'a serde_json::Map<String, Value>) -> AuditEntry<'a> {
        AuditEntry {
            session: "stdio-1",
            server: Some("old"),
            name,
            arguments: Some(args),
            outcome: "ok",
            message: None,
            duration: std::time::Duration::from_millis(3),
            bytes: 42,
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("switchboard-audit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_chain_verifies_and_any_edit_breaks_it() {
        let dir = scratch("chain");
        let path = dir.join("audit.jsonl");
        let args = json!({"text": "secret"}).as_object().unwrap().clone();
        let log = AuditLog::open(&path, AuditOptions::default()).unwrap();
        for name in ["old__echo", "old__add", "new__echo"] {
            log.record(&entry(name, &args)).unwrap();
        }
        drop(log);
        // Reopened, the chain goes on.
        let log = AuditLog::open(&path, AuditOptions::default()).unwrap();
        log.record(&entry("new__add", &args)).unwrap();
        assert_eq!(verify(&path, Some(GENESIS)).unwrap(), 4);
        let text = std::fs::read_to_string(&path).unwrap();
        // The arguments are hashed, not written.
        assert!(!text.contains("secret"), "{text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let lines: Vec<&str> = text.lines().collect();
        // A changed line, a removed line, two lines swapped.
        let edited = text.replace("old__add", "old__rm_");
        let removed = [lines[0], lines[2], lines[3]].join("\n");
        let swapped = [lines[0], lines[2], lines[1], lines[3]].join("\n");
        for (what, bad, at) in [
            ("edited", edited, 3),
            ("removed", removed, 2),
            ("swapped", swapped, 2),
        ] {
            std::fs::write(&path, bad).unwrap();
            match verify(&path, Some(GENESIS)) {
                Err(VerifyError::Broken { line }) => assert_eq!(line, at, "{what}"),
                other => panic!("{what}: {other:?}"),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn rotation_carries_the_chain_into_the_next_file() {
        let dir = scratch("rotate");
        let path = dir.join("audit.jsonl");
        let args = serde_json::Map::new();
        let options = AuditOptions {
            max_bytes: 1,
            arguments: true,
        };
        let log = AuditLog::open(&path, options).unwrap();
        log.record(&entry("a", &args)).unwrap();
        log.record(&entry("b", &args)).unwrap();
        let rotated = dir.join("audit.jsonl.1");
        assert_eq!(verify(&rotated, Some(GENESIS)).unwrap(), 1);
        let head = chain_head(&rotated).unwrap();
        assert_eq!(verify(&path, Some(&head)).unwrap(), 1);
        assert!(matches!(
            verify(&path, Some(GENESIS)),
            Err(VerifyError::Broken { line: 1 })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_never_followed() {
        let dir = scratch("symlink");
        let target = dir.join("elsewhere");
        std::fs::write(&target, "").unwrap();
        let path = dir.join("audit.jsonl");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(AuditLog::open(&path, AuditOptions::default()).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
