//! What the servers say on their own, for the console's Activity tab:
//! log messages, resource updates (of the resources the page subscribed
//! to), list changes, task statuses, finished URL elicitations, other
//! notifications, and each server's state changes — from the hub's event
//! stream, the newest [`MAX_ENTRIES`] kept. Progress is left out (each
//! call shows its own).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use switchboard::Event;
use switchboard_hub::{Hub, HubEvent};

/// How many entries are kept.
pub(crate) const MAX_ENTRIES: usize = 2_000;
/// How much of one entry's text is kept.
const MAX_TEXT: usize = 4_096;

#[derive(Default)]
struct Record {
    entries: VecDeque<Value>,
    next: u64,
}

/// The servers' activity (see the module docs).
pub(crate) struct Activity {
    started: Instant,
    record: Mutex<Record>,
    /// The task that follows the hub.
    following: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Activity {
    /// Follows `hub`'s events until it is gone.
    pub(crate) fn follow(hub: &Hub) -> Arc<Self> {
        let activity = Arc::new(Self {
            started: Instant::now(),
            record: Mutex::default(),
            following: Mutex::default(),
        });
        let mut events = hub.events();
        let noting = activity.clone();
        let task = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                if let Some((server, kind, text)) = describe(event) {
                    noting.note(&server, kind, text);
                }
            }
        });
        *activity.following.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
        activity
    }

    /// Stops following the hub.
    pub(crate) fn stop(&self) {
        if let Some(task) = self
            .following
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }

    fn note(&self, server: &str, kind: &str, mut text: String) {
        if text.len() > MAX_TEXT {
            let mut end = MAX_TEXT;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str(" …");
        }
        let at_ms = (self.started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
        let mut record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        let seq = record.next;
        record.next += 1;
        if record.entries.len() >= MAX_ENTRIES {
            record.entries.pop_front();
        }
        record.entries.push_back(json!({
            "seq": seq, "atMs": at_ms, "server": server, "kind": kind, "text": text,
        }));
    }

    /// The entries after `after` (a `seq`; none: all kept).
    pub(crate) fn since(&self, after: Option<u64>) -> Value {
        let record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        let entries: Vec<&Value> = record
            .entries
            .iter()
            .filter(|e| after.is_none_or(|after| e["seq"].as_u64().is_some_and(|s| s > after)))
            .collect();
        json!({ "entries": entries })
    }
}

/// An event as (server, kind, text); `None` for what is not shown.
fn describe(event: HubEvent) -> Option<(String, &'static str, String)> {
    match event {
        HubEvent::StateChanged { server, state } => {
            Some((server, "state", state.name().to_owned()))
        }
        HubEvent::Server { server, event } => {
            let (kind, text) = match event {
                Event::Log(log) => (
                    "log",
                    format!(
                        "[{}]{} {}",
                        serde_json::to_value(log.level)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default(),
                        log.logger.map(|l| format!(" {l}:")).unwrap_or_default(),
                        match log.data {
                            Value::String(text) => text,
                            other => other.to_string(),
                        }
                    ),
                ),
                Event::ResourceUpdated { uri } => ("resource-updated", uri),
                Event::ListChanged(kind) => ("list-changed", format!("{kind:?}")),
                Event::TaskStatus(status) => {
                    ("task", serde_json::to_string(&status).unwrap_or_default())
                }
                Event::ElicitationComplete(done) => (
                    "elicitation-complete",
                    serde_json::to_string(&done).unwrap_or_default(),
                ),
                // The client's own bookkeeping of its listens.
                Event::Notification(other)
                    if other.method == "notifications/subscriptions/acknowledged" =>
                {
                    return None;
                }
                Event::Notification(other) => (
                    "notification",
                    format!(
                        "{} {}",
                        other.method,
                        other.params.as_ref().map_or("", |p| p.get())
                    ),
                ),
                _ => return None,
            };
            Some((server, kind, text))
        }
        _ => None,
    }
}
