//! The audit view: an audit log (`console --audit FILE`) with its chain
//! verified, newest records first. The console writes its own calls to
//! the log, with the gateway's chain and format (`switchboard audit verify`
//! checks both alike); a log another gateway is writing (`serve --audit`
//! on the same file) is shown and verified, not written.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use switchboard_hub::hub::audit::{self, AuditEntry, AuditError, AuditKind, AuditLog};

/// How many of the newest records the view shows.
const SHOWN: usize = 500;

/// The console's audit log, if it was given one.
pub(super) struct Audit {
    path: PathBuf,
    /// Written by this console; `None` when another gateway writes it.
    log: Option<Arc<AuditLog>>,
    options: audit::AuditOptions,
    /// The `session` of this console's records.
    session: String,
    /// Whether this process writes the log (this console, or the gateway
    /// it is attached to), not another one.
    ours: bool,
}

impl Audit {
    /// `path` opened for writing, or for reading only when another
    /// gateway holds it; other failures (another user's file, an exposed
    /// key) are said.
    pub(super) fn open(path: PathBuf, arguments: bool) -> Result<Self, AuditError> {
        let mut options = audit::AuditOptions::default();
        options.arguments = arguments;
        let log = match AuditLog::open(&path, options.clone()) {
            Ok(log) => Some(Arc::new(log)),
            Err(AuditError::Busy { .. }) => None,
            Err(error) => return Err(error),
        };
        Ok(Self {
            path,
            ours: log.is_some(),
            log,
            options,
            session: format!("console-{}", std::process::id()),
        })
    }

    /// A gateway's log, shown by a console attached to it (the gateway
    /// writes it; the console's calls reach it as a host's). `None` for a
    /// shared chain (a database's): `switchboard audit verify --database`
    /// checks that one.
    pub(super) fn of(log: &Arc<AuditLog>) -> Option<Self> {
        Some(Self {
            path: log.path()?.to_path_buf(),
            log: None,
            options: audit::AuditOptions::default(),
            session: String::new(),
            ours: true,
        })
    }

    /// Records one thing the page did: its kind, server, name (tool, URI,
    /// prompt, method), arguments, outcome and message, and how long it
    /// took.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record(
        &self,
        kind: AuditKind,
        server: Option<&str>,
        name: &str,
        arguments: Option<&serde_json::Map<String, Value>>,
        outcome: &str,
        message: Option<&str>,
        started: Instant,
        bytes: usize,
    ) {
        let Some(log) = &self.log else { return };
        let entry = AuditEntry {
            kind,
            session: &self.session,
            server,
            name,
            arguments,
            outcome,
            message,
            duration: started.elapsed(),
            bytes,
        };
        if let Err(error) = log.record(&entry) {
            eprintln!(
                "switchboard console: could not write the audit log {}: {error}",
                self.path.display()
            );
        }
    }

    /// The view: the file, whether this console writes it, the chain's
    /// verdict, and the newest records of the current file.
    pub(super) fn view(&self) -> Value {
        let verdict = match audit::verify(&self.path, &self.options) {
            Ok(verified) => json!({
                "intact": true,
                "records": verified.records,
                "files": verified.files,
                "dropped": verified.dropped,
                "unanchored": verified.unanchored,
            }),
            Err(error) => json!({ "intact": false, "error": error.to_string() }),
        };
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let records: Vec<Value> = text
            .lines()
            .rev()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|record| record.get("kind").and_then(Value::as_str) != Some("header"))
            .take(SHOWN)
            .map(|mut record| {
                // The chain's MACs say nothing to a reader.
                if let Some(record) = record.as_object_mut() {
                    record.remove("prev");
                }
                record
            })
            .collect();
        json!({
            "file": self.path.display().to_string(),
            "writing": self.ours,
            "verdict": verdict,
            "records": records,
        })
    }
}

/// What the view says when the console has no log.
pub(super) fn none() -> Value {
    json!({ "file": null })
}

/// The outcome of a call for the log: `ok`, `tool_error` (the result
/// says it failed) or `error`, with the message, and the result's size.
pub(super) fn call_outcome(answer: &Value) -> (&'static str, Option<String>, usize) {
    if let Some(error) = answer.get("error").and_then(Value::as_str) {
        return ("error", Some(error.to_owned()), 0);
    }
    let result = &answer["result"];
    let bytes = serde_json::to_vec(result).map_or(0, |v| v.len());
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = result["content"][0]["text"].as_str().map(str::to_owned);
        return ("tool_error", text, bytes);
    }
    ("ok", None, bytes)
}

/// A tool call under way, recorded when it ends — as `cancelled` when the
/// page gave it up (its task dropped).
pub(super) struct Pending {
    audit: Arc<Audit>,
    server: Option<String>,
    name: String,
    arguments: Option<serde_json::Map<String, Value>>,
    started: Instant,
    done: bool,
}

impl Pending {
    pub(super) fn new(
        audit: Arc<Audit>,
        server: Option<String>,
        name: &str,
        arguments: Option<&serde_json::Map<String, Value>>,
    ) -> Self {
        Self {
            audit,
            server,
            name: name.to_owned(),
            arguments: arguments.cloned(),
            started: Instant::now(),
            done: false,
        }
    }

    /// The call answered `answer` (`{"result"}` or `{"error"}`).
    pub(super) fn finish(mut self, answer: &Value) {
        let (outcome, message, bytes) = call_outcome(answer);
        self.write(outcome, message.as_deref(), bytes);
        self.done = true;
    }

    fn write(&self, outcome: &str, message: Option<&str>, bytes: usize) {
        self.audit.record(
            AuditKind::ToolCall,
            self.server.as_deref(),
            &self.name,
            self.arguments.as_ref(),
            outcome,
            message,
            self.started,
            bytes,
        );
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            self.write("cancelled", Some("cancelled from the console"), 0);
        }
    }
}
