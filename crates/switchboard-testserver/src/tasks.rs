//! Tasks: the 2025-11-25 core tasks (task-augmented `tools/call`,
//! `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`,
//! `notifications/tasks/status`) and the 2026-07-28 extension
//! `io.modelcontextprotocol/tasks` (flat `CreateTaskResult` with
//! `resultType: "task"`, `tasks/get`, `tasks/update`, `tasks/cancel`,
//! `notifications/tasks` on `subscriptions/listen`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use tokio::sync::{oneshot, watch};
use tokio::task::{AbortHandle, JoinSet};

use crate::features;
use crate::server::{Catalog, ConnState, RpcError, code, lock};

/// The extension id (2026-07-28).
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key tying a result to its task.
pub(crate) const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// Task lifetime announced (and kept) by the server.
const TASK_TTL_MS: u64 = 60_000;
/// Suggested polling interval (short: this is a test server).
const POLL_INTERVAL_MS: u64 = 50;
/// `input_task`: time between the client's input and completion.
const INPUT_TASK_WORK: Duration = Duration::from_millis(10);

/// The work a task does.
#[derive(Debug)]
pub(crate) enum TaskWork {
    /// Sleep, then return a text result.
    Sleep { ms: u64 },
    /// Ask the client (stateless era, via `tasks/get` `inputRequests` and
    /// `tasks/update`), then return the answer.
    Input,
    /// Wait `ms`, then end: `Ok(result)` completes the task with that tool
    /// result, `Err(error)` fails it with that JSON-RPC error object.
    Finish {
        /// How long the work takes.
        ms: u64,
        /// The outcome.
        outcome: Result<Value, Value>,
    },
    /// Ask the client every request of `requests` at once (stateless era;
    /// the client may answer them over several `tasks/update`s), then
    /// complete with `finish` of the answers.
    Ask {
        /// The input requests, by key.
        requests: Map<String, Value>,
        /// The result, from the answers by key.
        finish: fn(&Map<String, Value>) -> Value,
    },
}

#[derive(Debug)]
struct TaskEntry {
    modern: bool,
    status: &'static str,
    message: Option<String>,
    created: String,
    updated: String,
    result: Option<Value>,
    error: Option<Value>,
    input_requests: Option<Map<String, Value>>,
    input_tx: Option<oneshot::Sender<Map<String, Value>>>,
    /// Answers received so far to the outstanding input requests.
    answers: Map<String, Value>,
    abort: Option<AbortHandle>,
    done: watch::Sender<bool>,
    /// The connection that created it (session era status notifications).
    owner: Weak<ConnState>,
}

impl TaskEntry {
    fn terminal(&self) -> bool {
        matches!(self.status, "completed" | "failed" | "cancelled")
    }

    fn set(&mut self, status: &'static str, message: Option<String>) {
        self.status = status;
        self.message = message;
        self.updated = now_iso();
        if self.terminal() {
            self.input_requests = None;
            self.input_tx = None;
            self.done.send_replace(true);
        }
    }
}

/// Every task the server knows, in creation order.
#[derive(Debug, Default)]
pub(crate) struct TaskStore {
    tasks: Mutex<(Vec<String>, HashMap<String, TaskEntry>)>,
    runs: Mutex<JoinSet<()>>,
    next: AtomicU64,
}

/// `tools/call` param `task` (session era) or the extension in the
/// request's capabilities (stateless era).
pub(crate) fn client_wants_tasks(caps: &Value) -> bool {
    caps.get("extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

/// -32021 naming the tasks extension.
pub(crate) fn missing_extension() -> RpcError {
    RpcError::new(
        code::MISSING_CLIENT_CAPABILITY,
        "Missing required client capability",
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

fn not_found(id: &str) -> RpcError {
    RpcError::invalid_params(format!("Failed to retrieve task: Task not found: {id}"))
}

impl TaskStore {
    /// Create a task and start its work; returns the `CreateTaskResult`
    /// (flat with `resultType: "task"` in the stateless era, `{task}` in
    /// the session era).
    pub(crate) fn create(
        &self,
        catalog: &Arc<Catalog>,
        modern: bool,
        owner: Weak<ConnState>,
        work: TaskWork,
    ) -> Value {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("task-{n}");
        let now = now_iso();
        let entry = TaskEntry {
            modern,
            status: "working",
            message: Some("The operation is now in progress.".to_owned()),
            created: now.clone(),
            updated: now,
            result: None,
            error: None,
            input_requests: None,
            input_tx: None,
            answers: Map::new(),
            abort: None,
            done: watch::channel(false).0,
            owner,
        };
        let view = view(&id, &entry);
        {
            let mut tasks = lock(&self.tasks);
            tasks.0.push(id.clone());
            tasks.1.insert(id.clone(), entry);
        }
        // Weak: the catalog owns the run, which must not keep it alive.
        let run = run(Arc::downgrade(catalog), id.clone(), work);
        let abort = {
            let mut runs = lock(&self.runs);
            while runs.try_join_next().is_some() {}
            runs.spawn(run)
        };
        if let Some(t) = lock(&self.tasks).1.get_mut(&id) {
            t.abort = Some(abort);
        }
        if modern {
            let mut v = view;
            v["resultType"] = json!("task");
            v
        } else {
            json!({"task": view})
        }
    }

    /// `tasks/get`: the task as seen now (stateless era: with `result`,
    /// `error` or `inputRequests`).
    pub(crate) fn get(&self, id: &str) -> Result<Value, RpcError> {
        let tasks = lock(&self.tasks);
        tasks
            .1
            .get(id)
            .map(|t| view(id, t))
            .ok_or_else(|| not_found(id))
    }

    /// `tasks/list` (session era): every task.
    pub(crate) fn list(&self) -> Value {
        let tasks = lock(&self.tasks);
        let list: Vec<Value> = tasks
            .0
            .iter()
            .filter_map(|id| tasks.1.get(id).map(|t| view(id, t)))
            .collect();
        json!({"tasks": list})
    }

    /// `tasks/cancel`: stop the work and mark the task cancelled. The
    /// session era refuses a terminal task (-32602) and answers the task;
    /// the stateless era acknowledges.
    pub(crate) fn cancel(&self, id: &str) -> Result<Value, RpcError> {
        let mut tasks = lock(&self.tasks);
        let t = tasks.1.get_mut(id).ok_or_else(|| not_found(id))?;
        if t.terminal() {
            if t.modern {
                return Ok(json!({}));
            }
            return Err(RpcError::invalid_params(format!(
                "Cannot cancel task {id}: it is already {}",
                t.status
            )));
        }
        if let Some(a) = t.abort.take() {
            a.abort();
        }
        t.set(
            "cancelled",
            Some("The task was cancelled by request.".to_owned()),
        );
        Ok(if t.modern { json!({}) } else { view(id, t) })
    }

    /// `tasks/update` (stateless era): deliver the answers to the
    /// outstanding input requests (unknown keys are ignored). A partial
    /// answer keeps the task `input_required` with the requests still
    /// unanswered; the work resumes once every one is answered.
    pub(crate) fn update(&self, id: &str, responses: Map<String, Value>) -> Result<(), RpcError> {
        let mut tasks = lock(&self.tasks);
        let t = tasks.1.get_mut(id).ok_or_else(|| not_found(id))?;
        let Some(outstanding) = t.input_requests.as_mut() else {
            return Ok(());
        };
        let mut changed = false;
        for (k, v) in responses {
            if outstanding.remove(&k).is_some() {
                t.answers.insert(k, v);
                changed = true;
            }
        }
        if changed {
            t.updated = now_iso();
        }
        if outstanding.is_empty()
            && let Some(tx) = t.input_tx.take()
        {
            t.input_requests = None;
            let answers = std::mem::take(&mut t.answers);
            t.set("working", Some("Input received.".to_owned()));
            let _ = tx.send(answers);
        }
        Ok(())
    }

    /// Wait until the task is terminal (`tasks/result`), then its outcome:
    /// `Ok(result)` or `Err(error object)`.
    pub(crate) async fn outcome(&self, id: &str) -> Result<Result<Value, Value>, RpcError> {
        let mut rx = {
            let tasks = lock(&self.tasks);
            tasks
                .1
                .get(id)
                .ok_or_else(|| not_found(id))?
                .done
                .subscribe()
        };
        let _ = rx.wait_for(|done| *done).await;
        let tasks = lock(&self.tasks);
        let t = tasks.1.get(id).ok_or_else(|| not_found(id))?;
        Ok(match (t.status, &t.result, &t.error) {
            ("completed", Some(r), _) => Ok(r.clone()),
            (_, _, Some(e)) => Err(e.clone()),
            _ => Err(json!({"code": code::REQUEST_CANCELLED, "message": "The task was cancelled"})),
        })
    }

    /// The task's owner (session era) and notification payload.
    pub(crate) fn snapshot(&self, id: &str) -> Option<(bool, Weak<ConnState>, Value)> {
        let tasks = lock(&self.tasks);
        tasks
            .1
            .get(id)
            .map(|t| (t.modern, t.owner.clone(), view(id, t)))
    }

    fn with<R>(&self, id: &str, f: impl FnOnce(&mut TaskEntry) -> R) -> Option<R> {
        lock(&self.tasks).1.get_mut(id).map(f)
    }
}

/// A task as `tasks/get` shows it.
fn view(id: &str, t: &TaskEntry) -> Value {
    let mut v = Map::new();
    v.insert("taskId".into(), json!(id));
    v.insert("status".into(), json!(t.status));
    if let Some(m) = &t.message {
        v.insert("statusMessage".into(), json!(m));
    }
    v.insert("createdAt".into(), json!(t.created));
    v.insert("lastUpdatedAt".into(), json!(t.updated));
    if t.modern {
        v.insert("ttlMs".into(), json!(TASK_TTL_MS));
        v.insert("pollIntervalMs".into(), json!(POLL_INTERVAL_MS));
        match t.status {
            "completed" => {
                v.insert(
                    "result".into(),
                    t.result.clone().unwrap_or_else(|| json!({})),
                );
            }
            "failed" => {
                v.insert("error".into(), t.error.clone().unwrap_or_else(|| json!({})));
            }
            "input_required" => {
                v.insert(
                    "inputRequests".into(),
                    Value::Object(t.input_requests.clone().unwrap_or_default()),
                );
            }
            _ => {}
        }
    } else {
        v.insert("ttl".into(), json!(TASK_TTL_MS));
        v.insert("pollInterval".into(), json!(POLL_INTERVAL_MS));
    }
    Value::Object(v)
}

/// A task's work, run in the store's `JoinSet`; every status change is
/// announced with [`Catalog::task_changed`].
async fn run(catalog: Weak<Catalog>, id: String, work: TaskWork) {
    let result = match work {
        TaskWork::Sleep { ms } => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            features::tool_text(format!("done after {ms} ms"))
        }
        TaskWork::Finish { ms, outcome } => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            match outcome {
                Ok(result) => result,
                Err(error) => {
                    let Some(catalog) = catalog.upgrade() else {
                        return;
                    };
                    let failed = catalog.tasks.with(&id, |t| {
                        if t.terminal() {
                            return false;
                        }
                        t.error = Some(error);
                        t.set("failed", Some("The operation failed.".to_owned()));
                        true
                    });
                    if failed == Some(true) {
                        catalog.task_changed(&id);
                    }
                    return;
                }
            }
        }
        TaskWork::Ask { requests, finish } => {
            let (tx, rx) = oneshot::channel();
            {
                let Some(catalog) = catalog.upgrade() else {
                    return;
                };
                catalog.tasks.with(&id, |t| {
                    t.input_requests = Some(requests);
                    t.input_tx = Some(tx);
                    t.set(
                        "input_required",
                        Some("Waiting for your answers.".to_owned()),
                    );
                });
                catalog.task_changed(&id);
            }
            let Ok(answers) = rx.await else { return };
            if let Some(catalog) = catalog.upgrade() {
                catalog.task_changed(&id);
            }
            tokio::time::sleep(INPUT_TASK_WORK).await;
            finish(&answers)
        }
        TaskWork::Input => {
            let (tx, rx) = oneshot::channel();
            let request = features::input_request("ask", &Map::new(), true, None);
            {
                let Some(catalog) = catalog.upgrade() else {
                    return;
                };
                catalog.tasks.with(&id, |t| {
                    let mut requests = Map::new();
                    requests.insert("ask".into(), request);
                    t.input_requests = Some(requests);
                    t.input_tx = Some(tx);
                    t.set(
                        "input_required",
                        Some("Waiting for your answer.".to_owned()),
                    );
                });
                catalog.task_changed(&id);
            }
            let Ok(mut answers) = rx.await else { return };
            if let Some(catalog) = catalog.upgrade() {
                catalog.task_changed(&id);
            }
            tokio::time::sleep(INPUT_TASK_WORK).await;
            let mut got = Map::new();
            got.insert("ask".into(), answers.remove("ask").unwrap_or(Value::Null));
            features::finish("ask", &got)
        }
    };
    let Some(catalog) = catalog.upgrade() else {
        return;
    };
    let finished = catalog.tasks.with(&id, |t| {
        if t.terminal() {
            return false;
        }
        t.result = Some(result);
        t.set("completed", Some("The operation completed.".to_owned()));
        true
    });
    if finished == Some(true) {
        catalog.task_changed(&id);
    }
}

/// The current time as ISO 8601 (`2025-11-25T10:30:00.123Z`).
pub(crate) fn now_iso() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_time_shape() {
        let t = super::now_iso();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z') && t.as_bytes()[10] == b'T');
    }
}
