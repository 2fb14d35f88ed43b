//! The gateway's audit log: one JSON line per event, tamper-evident.
//!
//! **What is recorded.** Each line has a `kind` — `tool_call`,
//! `resource_read`, `prompt_get`, `elicitation` and `sampling` (a
//! backend's request forwarded to a host), `policy` (a call denied, or an
//! `ask` answered), `login` (started and finished through the gateway) —,
//! the time (`ts_ms`), the host's session, the server, the name (tool,
//! URI, prompt, method), the outcome with its message, the duration and
//! the result's size. Arguments are recorded as `args_mac`, an
//! HMAC-SHA256 under the log's own salt, so equal arguments in two logs do
//! not match and a guessed argument cannot be confirmed without the salt;
//! the arguments themselves only when asked ([`AuditOptions::arguments`]).
//! Every string is bounded ([`AuditOptions::max_record_bytes`]; a cut
//! field ends with a `…[N more bytes]` marker), so large calls cannot push
//! other records out of the retained files.
//!
//! **The chain.** Each line's `prev` is the HMAC-SHA256, under a key only
//! the user's own account reads, of the line before it. Each file starts
//! with a `header` line naming its sequence number and the previous file's
//! (sequence, line count, last MAC), its `prev` that last MAC, so the
//! chain runs on across files. The anchor, outside the log, holds the
//! current file's sequence, the oldest sequence kept, its line count and
//! last MAC, itself under a MAC; a line is appended to it after each
//! record (the last whole line in force), and it is rewritten whole,
//! atomically, at each start and rotation. [`verify`] then detects an edited line (even with the chain
//! recomputed: that needs the key), a removed, inserted or reordered line,
//! a removed head (line 1 not the expected header), a truncated tail (the
//! anchor's count and MAC), a missing or truncated rotated file (the next
//! header's count and MAC), and a file of another user. Files older than
//! the retention were dropped on purpose: the oldest kept file's header
//! sequence number says how many came before it.
//!
//! **Where the secrets are.** The key, the salt, the anchor and the
//! single-writer lock live in `<data dir>/switchboard/audit/<digest of the
//! log's path>/` (0700, files 0600; [`AuditOptions::state_dir`] moves the
//! base), refused when another user owns them or others can read them.
//! The limit: whoever holds the key — the user's own account, or root —
//! can rewrite the log and its anchor.
//!
//! **One writer.** The lock is held for the [`AuditLog`]'s whole life: a
//! second gateway opening the same log is refused ([`AuditError::Busy`]).
//! The log file and its directory must be the user's own; no symlink is
//! followed.
//!
//! **Rotation.** Past [`AuditOptions::max_bytes`] the file is renamed to
//! `FILE.1` (`FILE.1` to `FILE.2`, …) and a new one starts with its header;
//! [`AuditOptions::keep`] rotated files are kept, older ones removed.

mod files;
mod verify;

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use files::Anchor;
pub use verify::{Verified, VerifyError, verify};

/// The `prev` of a chain's very first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Bumped when the line layout changes.
const FORMAT: u64 = 2;

/// What the audit log keeps, how large it grows, where its secrets are.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AuditOptions {
    /// Record the call's arguments themselves, not only their salted MAC.
    /// Default `false`: arguments can hold secrets.
    pub arguments: bool,
    /// Rotate to `FILE.1` past this many bytes. Default 16 MiB.
    pub max_bytes: u64,
    /// Rotated files kept (`FILE.1` … `FILE.N`); older ones are removed.
    /// Default 4.
    pub keep: u64,
    /// The most bytes one line takes: longer fields are cut with a marker.
    /// Default 8 KiB (at least 1 KiB).
    pub max_record_bytes: usize,
    /// Where the per-log directories of keys, salts and anchors are.
    /// Default `<data dir>/switchboard/audit`.
    pub state_dir: Option<PathBuf>,
}

impl Default for AuditOptions {
    fn default() -> Self {
        Self {
            arguments: false,
            max_bytes: 16 << 20,
            keep: 4,
            max_record_bytes: 8 << 10,
            state_dir: None,
        }
    }
}

/// What a line records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuditKind {
    /// A host's `tools/call`.
    ToolCall,
    /// A host's `resources/read`.
    ResourceRead,
    /// A host's `prompts/get`.
    PromptGet,
    /// A backend's (or the policy's) elicitation forwarded to a host.
    Elicitation,
    /// A backend's sampling request forwarded to a host.
    Sampling,
    /// A policy decision: a call denied, or an `ask` answered.
    Policy,
    /// A login started or finished through the gateway.
    Login,
}

impl AuditKind {
    /// The `kind` written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolCall => "tool_call",
            Self::ResourceRead => "resource_read",
            Self::PromptGet => "prompt_get",
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Policy => "policy",
            Self::Login => "login",
        }
    }

    /// The kind of a backend's request to its client, by method.
    pub fn of_ask(method: &str) -> Self {
        if method.starts_with("sampling/") {
            Self::Sampling
        } else {
            Self::Elicitation
        }
    }
}

/// One event, as the gateway saw it.
#[derive(Clone, Debug)]
pub struct AuditEntry<'a> {
    /// What happened.
    pub kind: AuditKind,
    /// The host's session.
    pub session: &'a str,
    /// The server concerned.
    pub server: Option<&'a str>,
    /// The tool, URI, prompt or method.
    pub name: &'a str,
    /// The arguments.
    pub arguments: Option<&'a serde_json::Map<String, Value>>,
    /// `ok`, `tool_error`, `error`, `deny`, `allowed`, `refused`, …
    pub outcome: &'a str,
    /// The error's message, or what was decided and why.
    pub message: Option<&'a str>,
    /// How long it took.
    pub duration: std::time::Duration,
    /// The result's size as JSON, in bytes.
    pub bytes: usize,
}

impl<'a> AuditEntry<'a> {
    /// An entry of `kind` with no arguments, duration or size.
    pub fn event(
        kind: AuditKind,
        session: &'a str,
        server: Option<&'a str>,
        name: &'a str,
        outcome: &'a str,
        message: Option<&'a str>,
    ) -> Self {
        Self {
            kind,
            session,
            server,
            name,
            arguments: None,
            outcome,
            message,
            duration: std::time::Duration::ZERO,
            bytes: 0,
        }
    }
}

/// Why an audit log cannot be opened or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// A file operation failed.
    #[error("cannot {what} {}", path.display())]
    Io {
        /// The operation.
        what: &'static str,
        /// On what.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Another user owns a file or directory the log uses.
    #[error(
        "{} belongs to another user (uid {uid}), who could have written or replaced it: use a file in a directory of your own",
        path.display()
    )]
    Foreign {
        /// The file or directory.
        path: PathBuf,
        /// Its owner.
        uid: u32,
    },
    /// A key, salt or their directory is open to others.
    #[error(
        "{} can be read by other users (mode {mode:o}), so its key may be known: remove that directory to start a new log with a new key",
        path.display()
    )]
    Exposed {
        /// The file or directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Another writer holds the log.
    #[error(
        "another gateway is writing the audit log {}: give each gateway its own --audit FILE",
        path.display()
    )]
    Busy {
        /// The log.
        path: PathBuf,
    },
    /// The log's key, salt or anchor is missing.
    #[error(
        "{} is missing: without it the log cannot be checked (it is made when a gateway first writes the log, and kept per path: a moved log is not found)",
        path.display()
    )]
    NoState {
        /// The missing file.
        path: PathBuf,
    },
    /// A shared store could not keep a record, or be read.
    #[error("{what}")]
    Store {
        /// What failed, and where.
        what: String,
        /// Why.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The log does not match its anchor (or the anchor itself changed).
    #[error(
        "{}: {why}; run `switchboard audit verify` on the log, and move the log and its rotated files aside to start a new one",
        path.display()
    )]
    Tampered {
        /// The file.
        path: PathBuf,
        /// What does not hold.
        why: String,
    },
}

impl AuditError {
    fn io(what: &'static str, path: &Path, source: io::Error) -> Self {
        Self::Io {
            what,
            path: path.to_owned(),
            source,
        }
    }
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    files::hex(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes).as_ref())
}

/// The MAC that links a record to the next one (its `prev`): HMAC-SHA256
/// of the record's bytes under the chain's key, in hex. Shared with the
/// chains kept elsewhere ([`AuditStore`]).
pub fn mac_hex(key: &[u8], bytes: &[u8]) -> String {
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, key);
    files::hex(aws_lc_rs::hmac::sign(&key, bytes).as_ref())
}

/// Compares two MACs in constant time.
pub fn mac_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// `FILE.n` for `n > 0`, `FILE` for 0.
fn rotated(path: &Path, n: u64) -> PathBuf {
    if n == 0 {
        path.to_owned()
    } else {
        PathBuf::from(format!("{}.{n}", path.display()))
    }
}

/// Cuts `text` to `max` bytes (at a character boundary) with a marker.
fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[{} more bytes]", &text[..end], text.len() - end)
}

/// Anchor lines appended before the anchor file is rewritten to one line
/// (a rename, about 2 ms), which bounds it to about 1 MiB.
const ANCHOR_LINES: u32 = 4096;

struct State {
    file: File,
    anchor_file: File,
    anchor_lines: u32,
    written: u64,
    anchor: Anchor,
}

/// A chain of audit records kept somewhere other than a file — a
/// database several gateways share — that orders and links the records
/// itself: [`AuditLog::shared`] builds each record as for a file and hands
/// it here.
pub trait AuditStore: Send + Sync + 'static {
    /// The salt arguments are MACed under (`args_mac`): the same for every
    /// gateway writing the chain, secret from whoever reads it.
    fn salt(&self) -> &[u8];

    /// Appends `record` (a JSON object without `prev`) at the chain's end,
    /// linked to the record before it. Blocks until it is kept.
    ///
    /// # Errors
    /// [`AuditError::Store`] when it could not be kept.
    fn append(&self, record: serde_json::Map<String, Value>) -> Result<(), AuditError>;

    /// The chain as messages name it (`the PostgreSQL audit chain`).
    fn describe(&self) -> String;
}

/// An open audit log: a file with its single-writer lock held until
/// dropped, or a shared [`AuditStore`].
pub struct AuditLog {
    options: AuditOptions,
    salt: Vec<u8>,
    sink: Sink,
}

enum Sink {
    File(FileLog),
    Shared(Arc<dyn AuditStore>),
}

struct FileLog {
    path: PathBuf,
    dir: PathBuf,
    key: Vec<u8>,
    state: Mutex<State>,
    _lock: File,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("log", &self.describe())
            .finish_non_exhaustive()
    }
}

/// Opens `path` for appending: 0600 when created, never through a symlink,
/// refused when another user owns it.
fn open_append(path: &Path, create_new: bool) -> Result<File, AuditError> {
    let mut options = OpenOptions::new();
    options.append(true);
    if create_new {
        options.create_new(true);
    } else {
        options.create(true);
    }
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file =
        files::open_no_follow(path, &mut options).map_err(|e| AuditError::io("open", path, e))?;
    let meta = file
        .metadata()
        .map_err(|e| AuditError::io("stat", path, e))?;
    files::check_owner(path, &meta)?;
    Ok(file)
}

impl AuditLog {
    /// Opens (or creates) the log at `path`, continuing its chain after
    /// checking the current file against its anchor.
    ///
    /// # Errors
    /// [`AuditError`]: another gateway holds the log, a file or directory
    /// belongs to another user or is a symlink, the key is exposed, or the
    /// log does not match its anchor (truncated, edited, or written
    /// without one).
    pub fn open(path: impl Into<PathBuf>, options: AuditOptions) -> Result<Self, AuditError> {
        let path = files::resolve(&path.into())?;
        let dir = files::state_dir(options.state_dir.as_deref(), &path)?;
        if let Some(base) = dir.parent() {
            files::private_dir(base)?;
        }
        files::private_dir(&dir)?;
        let lock = files::lock(&dir, &path)?;
        let key = files::secret(&dir, "key", true)?;
        let salt = files::secret(&dir, "salt", true)?;
        let anchor = Anchor::load(&dir, &key)?;
        let existing = files::read_own(&path)?;
        let (file, written, mut anchor) = match (anchor, existing) {
            (None, Some(bytes)) if !bytes.is_empty() => {
                return Err(AuditError::Tampered {
                    path,
                    why: format!(
                        "it holds records but has no anchor in {} (an older switchboard wrote it, or the anchor was removed)",
                        dir.display()
                    ),
                });
            }
            (None, _) => {
                let file = open_append(&path, false)?;
                let mut anchor = Anchor {
                    seq: 0,
                    oldest: 0,
                    lines: 0,
                    mac: GENESIS.to_owned(),
                    tag: String::new(),
                };
                let written = header(&file, &path, &key, &mut anchor, None)?;
                (file, written, anchor)
            }
            (Some(anchor), None) => {
                return Err(AuditError::Tampered {
                    path,
                    why: format!(
                        "the file is missing, but its anchor records {} lines in file number {}",
                        anchor.lines, anchor.seq
                    ),
                });
            }
            (Some(mut anchor), Some(bytes)) => {
                let end = verify::check_current(&path, &bytes, &key, &anchor)?;
                anchor.lines = end.lines;
                anchor.mac = end.mac;
                let file = open_append(&path, false)?;
                (file, bytes.len() as u64, anchor)
            }
        };
        let anchor_file = anchor.reset(&dir, &key)?;
        Ok(Self {
            options,
            salt,
            sink: Sink::File(FileLog {
                path,
                dir,
                key,
                state: Mutex::new(State {
                    file,
                    anchor_file,
                    anchor_lines: 1,
                    written,
                    anchor,
                }),
                _lock: lock,
            }),
        })
    }

    /// A log whose records go to `store` (built as for a file: bounded,
    /// arguments MACed under the store's salt).
    pub fn shared(store: Arc<dyn AuditStore>, options: AuditOptions) -> Self {
        Self {
            options,
            salt: store.salt().to_vec(),
            sink: Sink::Shared(store),
        }
    }

    /// Where the log is (its resolved path); `None` for a shared one.
    pub fn path(&self) -> Option<&Path> {
        match &self.sink {
            Sink::File(file) => Some(&file.path),
            Sink::Shared(_) => None,
        }
    }

    /// Where its key, salt and anchor are; `None` for a shared one.
    pub fn state_dir(&self) -> Option<&Path> {
        match &self.sink {
            Sink::File(file) => Some(&file.dir),
            Sink::Shared(_) => None,
        }
    }

    /// The log as messages name it: its path, or the shared chain.
    pub fn describe(&self) -> String {
        match &self.sink {
            Sink::File(file) => file.path.display().to_string(),
            Sink::Shared(store) => store.describe(),
        }
    }

    /// Appends one event's line, rotating first when the file is full.
    ///
    /// # Errors
    /// When the line or the anchor cannot be written (the chain then stays
    /// at the last line written).
    pub fn record(&self, entry: &AuditEntry<'_>) -> Result<(), AuditError> {
        let ts_ms = now_ms();
        let max = self.options.max_record_bytes.max(1024);
        let short = 256.min(max / 8);
        let mut line = json!({
            "ts_ms": ts_ms,
            "kind": entry.kind.as_str(),
            "session": bounded(entry.session, short),
            "server": entry.server.map(|s| bounded(s, short)),
            "name": bounded(entry.name, short),
            "outcome": bounded(entry.outcome, short),
            "ms": u64::try_from(entry.duration.as_millis()).unwrap_or(u64::MAX),
            "bytes": entry.bytes,
        });
        if let Some(arguments) = entry.arguments {
            let text = serde_json::to_vec(arguments).unwrap_or_default();
            line["args_mac"] = mac_hex(&self.salt, &text).into();
            if self.options.arguments {
                line["arguments"] = if text.len() <= max / 2 {
                    Value::Object(arguments.clone())
                } else {
                    bounded(&String::from_utf8_lossy(&text), max / 2).into()
                };
            }
        }
        if let Some(message) = entry.message {
            line["message"] = bounded(message, max / 4).into();
        }
        // Escaping can still grow a line past the bound: then the
        // arguments go, then the message, then the names are cut short.
        let room = max.saturating_sub(GENESIS.len() + 16);
        let too_long = |line: &Value| serde_json::to_vec(line).map_or(0, |v| v.len()) > room;
        if too_long(&line) && line.get("arguments").is_some() {
            line["arguments"] = "…[cut]".into();
        }
        if too_long(&line) && line.get("message").is_some() {
            line["message"] = "…[cut]".into();
        }
        if too_long(&line) {
            line["session"] = bounded(entry.session, 32).into();
            line["server"] = entry.server.map(|s| bounded(s, 32)).into();
            line["name"] = bounded(entry.name, 32).into();
            line["outcome"] = bounded(entry.outcome, 32).into();
        }
        let log = match &self.sink {
            Sink::File(log) => log,
            Sink::Shared(store) => {
                let Value::Object(record) = line else {
                    unreachable!("built as an object")
                };
                return store.append(record);
            }
        };
        let mut state = log.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.written >= self.options.max_bytes {
            log.rotate(&mut state, self.options.keep)?;
        }
        line["prev"] = state.anchor.mac.clone().into();
        let text = serde_json::to_vec(&line).unwrap_or_default();
        let State {
            file,
            anchor_file,
            anchor_lines,
            written,
            anchor,
        } = &mut *state;
        *written += append(&mut &*file, &log.path, &log.key, &text, anchor)?;
        if *anchor_lines >= ANCHOR_LINES {
            *anchor_file = anchor.reset(&log.dir, &log.key)?;
            *anchor_lines = 1;
            return Ok(());
        }
        *anchor_lines += 1;
        anchor.append(&mut &*anchor_file, &log.key)
    }
}

impl FileLog {
    /// `FILE` → `FILE.1` → … → `FILE.keep`, older ones removed, and a new
    /// `FILE` with its header.
    fn rotate(&self, state: &mut State, keep: u64) -> Result<(), AuditError> {
        let seq = state.anchor.seq;
        let next = seq + 1;
        let oldest = state.anchor.oldest.max(next.saturating_sub(keep));
        for dropped in state.anchor.oldest..oldest {
            let name = rotated(&self.path, seq - dropped);
            match std::fs::remove_file(&name) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(AuditError::io("remove", &name, e)),
            }
        }
        if oldest <= seq {
            for n in (0..=seq - oldest).rev() {
                let from = rotated(&self.path, n);
                let to = rotated(&self.path, n + 1);
                match std::fs::rename(&from, &to) {
                    Ok(()) => {}
                    // A rotated file already gone: `verify` says so.
                    Err(e) if e.kind() == io::ErrorKind::NotFound && n > 0 => {}
                    Err(e) => return Err(AuditError::io("rotate", &from, e)),
                }
            }
        }
        let file = open_append(&self.path, true)?;
        let before = (seq, state.anchor.lines, state.anchor.mac.clone());
        state.anchor.seq = next;
        state.anchor.oldest = oldest;
        state.anchor.lines = 0;
        state.written = header(
            &file,
            &self.path,
            &self.key,
            &mut state.anchor,
            Some(before),
        )?;
        state.file = file;
        state.anchor_file = state.anchor.reset(&self.dir, &self.key)?;
        state.anchor_lines = 1;
        Ok(())
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Writes the header of the file numbered `anchor.seq`, after the file
/// `before` (its sequence, line count and last MAC).
fn header(
    file: &File,
    path: &Path,
    key: &[u8],
    anchor: &mut Anchor,
    before: Option<(u64, u64, String)>,
) -> Result<u64, AuditError> {
    let line = json!({
        "kind": "header",
        "format": FORMAT,
        "ts_ms": now_ms(),
        "seq": anchor.seq,
        "prev_file": before.as_ref().map(|(seq, lines, mac)| json!({
            "seq": seq, "lines": lines, "mac": mac,
        })),
        "prev": anchor.mac,
    });
    let text = serde_json::to_vec(&line).unwrap_or_default();
    let mut file = file;
    append(&mut file, path, key, &text, anchor)
}

/// Writes one line (whole, then synced) and moves the anchor on to it.
fn append(
    file: &mut &File,
    path: &Path,
    key: &[u8],
    text: &[u8],
    anchor: &mut Anchor,
) -> Result<u64, AuditError> {
    let mut bytes = Vec::with_capacity(text.len() + 1);
    bytes.extend_from_slice(text);
    bytes.push(b'\n');
    file.write_all(&bytes)
        // Written before the anchor moves on (not synced: see
        // `Anchor::append`).
        .map_err(|e| AuditError::io("append to", path, e))?;
    anchor.lines += 1;
    anchor.mac = mac_hex(key, text);
    Ok(bytes.len() as u64)
}

/// Records `entry`-like events for a gateway session: `audit` is the
/// server's log and session, `None` when it keeps none. Errors are logged.
pub(crate) fn note(
    audit: Option<&(Arc<AuditLog>, Arc<str>)>,
    kind: AuditKind,
    server: Option<&str>,
    name: &str,
    outcome: &str,
    message: Option<&str>,
) {
    if let Some((log, session)) = audit {
        let entry = AuditEntry::event(kind, session, server, name, outcome, message);
        if let Err(error) = log.record(&entry) {
            tracing::error!(log = %log.describe(), %error, "could not write the audit log");
        }
    }
}

/// Records the outcome of a host's request of `kind` (`ok`, or `error`
/// with its message).
pub(crate) fn note_result<T>(
    audit: Option<&(Arc<AuditLog>, Arc<str>)>,
    kind: AuditKind,
    server: Option<&str>,
    name: &str,
    result: &Result<T, switchboard::types::jsonrpc::ErrorObject>,
) {
    match result {
        Ok(_) => note(audit, kind, server, name, "ok", None),
        Err(error) => note(audit, kind, server, name, "error", Some(&error.message)),
    }
}

/// Records how a login started through the gateway ended.
pub(crate) fn note_login_end(
    audit: Option<&(Arc<AuditLog>, Arc<str>)>,
    server: &str,
    result: &Result<switchboard::types::CallToolResult, super::HubError>,
) {
    let why = match result {
        Ok(done) if done.is_error != Some(true) => None,
        Ok(failed) => Some(
            failed
                .content
                .first()
                .and_then(|c| c.as_text())
                .unwrap_or_default()
                .to_owned(),
        ),
        Err(error) => Some(error.to_string()),
    };
    let outcome = if why.is_some() { "error" } else { "ok" };
    note(
        audit,
        AuditKind::Login,
        Some(server),
        "finish",
        outcome,
        why.as_deref(),
    );
}

/// Records a call the policy denied (or whose `ask` was not allowed:
/// nobody to ask, or the server changed meanwhile), from its result.
pub(crate) fn note_denied<T>(
    audit: Option<&(Arc<AuditLog>, Arc<str>)>,
    result: &Result<T, super::HubError>,
) {
    match result {
        Err(super::HubError::ToolDenied {
            server,
            tool,
            reason,
        }) => note(
            audit,
            AuditKind::Policy,
            Some(server),
            tool,
            "deny",
            Some(reason),
        ),
        Err(super::HubError::ToolNotApproved {
            server,
            tool,
            reason,
        }) => note(
            audit,
            AuditKind::Policy,
            Some(server),
            tool,
            "not_allowed",
            Some(reason),
        ),
        _ => {}
    }
}

/// `approver`, recording each answer it gives to the policy's `ask`
/// (`allowed`, `allowed_always` or `refused`, with the rule).
pub(crate) fn approver(
    audit: Option<&(Arc<AuditLog>, Arc<str>)>,
    approver: Arc<dyn super::ToolApprover>,
) -> Arc<dyn super::ToolApprover> {
    let Some(audit) = audit.cloned() else {
        return approver;
    };
    Arc::new(
        move |ask: super::ToolAsk| -> switchboard::BoxFuture<'static, super::ToolAnswer> {
            let (server, tool, rule) = (ask.server.clone(), ask.tool.clone(), ask.rule.clone());
            let answer = approver.approve(ask);
            let audit = audit.clone();
            Box::pin(async move {
                let answer = answer.await;
                let outcome = match &answer {
                    super::ToolAnswer::Once => "allowed",
                    super::ToolAnswer::Always => "allowed_always",
                    _ => "refused",
                };
                note(
                    Some(&audit),
                    AuditKind::Policy,
                    Some(&server),
                    &tool,
                    outcome,
                    Some(&rule),
                );
                answer
            })
        },
    )
}

#[cfg(test)]
mod tests;
