//! The protocol view's record: every JSON-RPC message each server's
//! connection carried, both ways, as the client's tap
//! ([`switchboard::transport::tap`]) saw it, with when, what kind, which
//! method and — for an answer — how long after its request. Bounded: the
//! newest [`MAX_ENTRIES`] messages, each kept to its first [`MAX_TEXT`]
//! bytes; the page asks for what came after the last one it has.
//!
//! In a gateway (`switchboard serve`, the background session) the record
//! also holds what each host sent the gateway and what the gateway sent it
//! (`host` entries, [`Protocol::host_tap`]), beside what the gateway
//! forwarded to each server; there it records only while a console is
//! attached ([`Protocol::set_on`]), so a gateway nobody watches pays one
//! atomic load a message.
//!
//! The record also keeps every task it saw go by (a call answered with a
//! task, `tasks/get`, `tasks/list`, a status notification), each with its
//! latest status, for the Tasks view: whoever started it, the console
//! sees it.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use switchboard::transport::tap::{Direction, Tap};

/// How many messages are kept (the oldest go first).
pub(crate) const MAX_ENTRIES: usize = 20_000;
/// How much of one message is kept for the view.
pub(crate) const MAX_TEXT: usize = 16 * 1024;
/// How many messages one answer to the page carries at most.
const MAX_PAGE: usize = 5_000;
/// How many requests awaiting an answer are remembered (for timings).
const MAX_PENDING: usize = 10_000;
/// How many tasks are remembered.
const MAX_TASKS: usize = 500;
/// What of a task is kept (its status, not its result).
const TASK_FIELDS: [&str; 7] = [
    "taskId",
    "status",
    "statusMessage",
    "createdAt",
    "lastUpdatedAt",
    "ttl",
    "pollInterval",
];

struct Entry {
    seq: u64,
    /// The server's name, or the host connection's.
    server: Arc<str>,
    /// A host's connection to the gateway, not a server's.
    host: bool,
    sent: bool,
    at_ms: f64,
    kind: &'static str,
    method: Option<String>,
    id: Option<String>,
    latency_ms: Option<f64>,
    size: usize,
    text: String,
}

#[derive(Default)]
struct Record {
    entries: VecDeque<Entry>,
    next: u64,
    /// When each request still unanswered went: (server or host, whether
    /// a host's, direction it went, id).
    pending: HashMap<(Arc<str>, bool, bool, String), f64>,
    /// Every task seen, by (server, task id), with its latest status; in
    /// the order first seen.
    tasks: Vec<((Arc<str>, String), Value)>,
}

/// Every server's messages (see the module docs).
pub(crate) struct Protocol {
    started: Instant,
    /// Whether messages are recorded now.
    on: AtomicBool,
    record: Mutex<Record>,
}

impl Default for Protocol {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            on: AtomicBool::new(true),
            record: Mutex::default(),
        }
    }
}

impl Protocol {
    /// A record that notes nothing until [`Protocol::set_on`] (a
    /// gateway's, until a console attaches).
    pub(crate) fn off() -> Self {
        let protocol = Self::default();
        protocol.on.store(false, Ordering::Relaxed);
        protocol
    }

    /// Records from now on (`true`), or stops and forgets (`false`).
    pub(crate) fn set_on(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
        if !on {
            *self.record.lock().unwrap_or_else(|e| e.into_inner()) = Record::default();
        }
    }

    /// The tap for `server`'s connections.
    pub(crate) fn tap(self: &Arc<Self>, server: &str) -> Arc<dyn Tap> {
        let protocol = self.clone();
        let server: Arc<str> = server.into();
        Arc::new(move |direction: Direction, message: &[u8]| {
            if protocol.on.load(Ordering::Relaxed) {
                protocol.note(&server, false, direction == Direction::Sent, message);
            }
        })
    }

    /// The tap for a host's connection to the gateway, `name` (what the
    /// gateway sent the host is `sent`).
    pub(crate) fn host_tap(self: &Arc<Self>, name: &str) -> Arc<dyn Tap> {
        let protocol = self.clone();
        let name: Arc<str> = name.into();
        Arc::new(move |direction: Direction, message: &[u8]| {
            if protocol.on.load(Ordering::Relaxed) {
                protocol.note(&name, true, direction == Direction::Sent, message);
            }
        })
    }

    fn note(&self, server: &Arc<str>, host: bool, sent: bool, message: &[u8]) {
        let at_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let parsed: Option<Value> = serde_json::from_slice(message).ok();
        let (kind, method, id) = match &parsed {
            Some(Value::Object(object)) => {
                let method = object.get("method").and_then(Value::as_str);
                let id = object
                    .get("id")
                    .filter(|id| !id.is_null())
                    .map(|id| match id {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    });
                let kind = match (method, &id) {
                    (Some(_), Some(_)) => "request",
                    (Some(_), None) => "notification",
                    (None, _) if object.contains_key("error") => "error",
                    (None, _) => "response",
                };
                (kind, method.map(str::to_owned), id)
            }
            Some(Value::Array(_)) => ("batch", None, None),
            _ => ("unreadable", None, None),
        };
        let mut text =
            String::from_utf8_lossy(&message[..message.len().min(MAX_TEXT)]).into_owned();
        if message.len() > MAX_TEXT {
            text.push_str(&format!(" … ({} bytes in all)", message.len()));
        }
        let mut record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        if !sent
            && !host
            && let Some(message) = &parsed
        {
            for task in tasks_in(message) {
                record.note_task(server, task);
            }
        }
        let latency_ms = match (kind, &id) {
            ("request", Some(id)) => {
                if record.pending.len() >= MAX_PENDING {
                    record.pending.clear();
                }
                record
                    .pending
                    .insert((server.clone(), host, sent, id.clone()), at_ms);
                None
            }
            // An answer goes the other way from its request.
            ("response" | "error", Some(id)) => record
                .pending
                .remove(&(server.clone(), host, !sent, id.clone()))
                .map(|asked| at_ms - asked),
            _ => None,
        };
        let seq = record.next;
        record.next += 1;
        if record.entries.len() >= MAX_ENTRIES {
            record.entries.pop_front();
        }
        record.entries.push_back(Entry {
            seq,
            server: server.clone(),
            host,
            sent,
            at_ms,
            kind,
            method,
            id,
            latency_ms,
            size: message.len(),
            text,
        });
    }

    /// The messages after `after` (a `seq`; none: from the oldest kept),
    /// at most [`MAX_PAGE`]; `next` is the `after` to ask with next, and
    /// `dropped` says whether some went before the page saw them.
    pub(crate) fn since(&self, after: Option<u64>) -> Value {
        let record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        let first = record.entries.front().map_or(record.next, |e| e.seq);
        let from = after.map_or(first, |after| after.saturating_add(1));
        let skip = usize::try_from(from.saturating_sub(first)).unwrap_or(usize::MAX);
        let entries: Vec<Value> = record
            .entries
            .iter()
            .skip(skip)
            .take(MAX_PAGE)
            .map(entry_json)
            .collect();
        let next = entries
            .last()
            .and_then(|e| e["seq"].as_u64())
            .or(after)
            .or_else(|| first.checked_sub(1));
        json!({
            "entries": entries,
            "next": next,
            "dropped": from < first,
        })
    }

    /// Every task seen, each with its server and latest status.
    pub(crate) fn tasks(&self) -> Value {
        let record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        let tasks: Vec<Value> = record
            .tasks
            .iter()
            .map(|((server, _), task)| {
                let mut task = task.clone();
                task["server"] = json!(&**server);
                task
            })
            .collect();
        json!({ "tasks": tasks })
    }

    /// Every message kept, one JSON line each, for a download.
    pub(crate) fn export(&self) -> String {
        let record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        for entry in &record.entries {
            out.push_str(&entry_json(entry).to_string());
            out.push('\n');
        }
        out
    }
}

impl Record {
    fn note_task(&mut self, server: &Arc<str>, task: &serde_json::Map<String, Value>) {
        let Some(id) = task.get("taskId").and_then(Value::as_str) else {
            return;
        };
        let kept: serde_json::Map<String, Value> = TASK_FIELDS
            .iter()
            .filter_map(|field| Some(((*field).to_owned(), task.get(*field)?.clone())))
            .collect();
        let key = (server.clone(), id.to_owned());
        match self.tasks.iter_mut().find(|(k, _)| *k == key) {
            Some((_, known)) => {
                if let Some(known) = known.as_object_mut() {
                    known.extend(kept);
                }
            }
            None => {
                if self.tasks.len() >= MAX_TASKS {
                    self.tasks.remove(0);
                }
                self.tasks.push((key, Value::Object(kept)));
            }
        }
    }
}

/// The tasks a received message shows: a call answered with a task (flat,
/// or `{task}`), `tasks/get`'s task, `tasks/list`'s, a status
/// notification's.
fn tasks_in(message: &Value) -> Vec<&serde_json::Map<String, Value>> {
    fn is_task(v: &Value) -> Option<&serde_json::Map<String, Value>> {
        v.as_object()
            .filter(|o| o.get("taskId").is_some_and(Value::is_string) && o.contains_key("status"))
    }
    let mut found = Vec::new();
    if let Some(result) = message.get("result") {
        found.extend(is_task(result));
        found.extend(result.get("task").and_then(is_task));
        if let Some(list) = result.get("tasks").and_then(Value::as_array) {
            found.extend(list.iter().filter_map(is_task));
        }
    }
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    if method.starts_with("notifications/tasks") {
        found.extend(message.get("params").and_then(is_task));
    }
    found
}

fn entry_json(entry: &Entry) -> Value {
    json!({
        "seq": entry.seq,
        "server": &*entry.server,
        "host": entry.host,
        "direction": if entry.sent { "sent" } else { "received" },
        "atMs": (entry.at_ms * 10.0).round() / 10.0,
        "kind": entry.kind,
        "method": entry.method,
        "id": entry.id,
        "latencyMs": entry.latency_ms.map(|ms| (ms * 10.0).round() / 10.0),
        "size": entry.size,
        "text": entry.text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_answers_and_notifications_are_told_apart_and_timed() {
        let protocol = Arc::new(Protocol::default());
        let tap = protocol.tap("t");
        tap.message(
            Direction::Sent,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        );
        tap.message(
            Direction::Received,
            br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
        );
        tap.message(
            Direction::Received,
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        );
        tap.message(Direction::Received, b"not json");
        let all = protocol.since(None);
        let entries = all["entries"].as_array().unwrap();
        let kinds: Vec<&str> = entries
            .iter()
            .map(|e| e["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["request", "notification", "response", "unreadable"]);
        assert_eq!(entries[0]["method"], "tools/list");
        assert_eq!(entries[0]["direction"], "sent");
        assert!(entries[2]["latencyMs"].as_f64().is_some(), "{}", entries[2]);
        assert_eq!(all["next"], 3);
        // Only what came after.
        let later = protocol.since(Some(1));
        assert_eq!(later["entries"].as_array().unwrap().len(), 2);
        assert_eq!(protocol.since(Some(3))["entries"], json!([]));
        assert_eq!(protocol.since(Some(3))["next"], 3);
        assert_eq!(protocol.export().lines().count(), 4);
    }

    #[test]
    fn every_task_seen_is_kept_with_its_latest_status() {
        let protocol = Arc::new(Protocol::default());
        let tap = protocol.tap("t");
        // 2026-07-28: a call answered with a task, flat.
        tap.message(
            Direction::Received,
            br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"a","status":"working","createdAt":"x"}}"#,
        );
        // 2025-11-25: `{task}`; then a status notification for `a`.
        tap.message(
            Direction::Received,
            br#"{"jsonrpc":"2.0","id":2,"result":{"task":{"taskId":"b","status":"working"}}}"#,
        );
        tap.message(
            Direction::Received,
            br#"{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"a","status":"completed","result":{"big":1}}}"#,
        );
        // What the client sends is not a task's status.
        tap.message(
            Direction::Sent,
            br#"{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"c","status":"x"}}"#,
        );
        let tasks = protocol.tasks();
        assert_eq!(
            tasks,
            json!({"tasks": [
                {"server": "t", "taskId": "a", "status": "completed", "createdAt": "x"},
                {"server": "t", "taskId": "b", "status": "working"},
            ]})
        );
    }

    #[test]
    fn it_is_bounded_and_says_what_the_page_missed() {
        let protocol = Arc::new(Protocol::default());
        let tap = protocol.tap("t");
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":"{}"}}"#,
            "a".repeat(MAX_TEXT)
        );
        tap.message(Direction::Received, big.as_bytes());
        let first = protocol.since(None);
        let text = first["entries"][0]["text"].as_str().unwrap();
        assert!(text.len() < MAX_TEXT + 64, "{}", text.len());
        assert!(text.ends_with("bytes in all)"), "{text}");
        for _ in 0..MAX_ENTRIES {
            tap.message(
                Direction::Sent,
                br#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
            );
        }
        let after_first = protocol.since(Some(0));
        assert_eq!(after_first["dropped"], false);
        let from_start = protocol.since(None);
        assert_eq!(from_start["entries"].as_array().unwrap().len(), MAX_PAGE);
        // One more: the page that saw only the first missed the second,
        // which is gone, and it is told.
        tap.message(
            Direction::Sent,
            br#"{"jsonrpc":"2.0","method":"ping","id":2}"#,
        );
        let missed = protocol.since(Some(0));
        assert_eq!(missed["dropped"], true);
        assert_eq!(missed["entries"][0]["seq"], 2);
        assert_eq!(protocol.since(Some(u64::MAX))["entries"], json!([]));
    }
}
