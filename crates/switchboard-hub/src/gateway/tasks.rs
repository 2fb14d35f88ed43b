//! Tasks the gateway owns (the tasks extension, `io.modelcontextprotocol/tasks`,
//! SEP-2663): a host that declared the extension (at `initialize`, or in a
//! 2026-07-28 request's `_meta` client capabilities) and calls a tool its
//! backend marks `execution.taskSupport` `optional` or `required` gets a
//! task handle at once (a flat `CreateTaskResult`); the call runs on the
//! gateway's task tracker as any call of that host would (the same
//! routing, policy, URIs, and asks), whatever the backend's era, and the
//! host polls `tasks/get` for its state and, once done, its result or
//! error inline.
//!
//! - What the backend asks during the call (elicitation, sampling, roots;
//!   an ask of the tool policy) makes the task `input_required` with the
//!   asks as `inputRequests`; the host answers with `tasks/update` (one
//!   answer at a time if it likes) and the call goes on once every one
//!   is answered. (A session-era host is asked directly, as in any call.)
//! - `tasks/cancel` is acknowledged empty, also for a task that ended;
//!   a running task becomes `cancelled` and its call is dropped, which
//!   cancels it on the backend. (A call waiting for the host's answers is
//!   held by the gateway until its wait expires, as any parked call.)
//! - A `required` tool called by a 2026-07-28 host that did not declare
//!   the extension is refused with -32021 naming it; a session-era host
//!   gets the call answered whole, as before.
//! - Ids are 128 random bits and belong to the host that made them: its
//!   connection and the name it gives (stateless hosts share one
//!   connection, so the id is what keeps one such host's task from
//!   another's); any other id is unknown (-32602).
//! - **A 2026-07-28 backend that offers the extension itself** is not
//!   wrapped: a 2026-07-28 host's call goes to it with the host's task
//!   capability, so its rounds come back as they are (an
//!   `input_required` round first, if that is how the tool works: the
//!   MRTR → tasks composition) and its own task handle is followed — the
//!   host gets an id of the gateway's, and its `tasks/get`, `tasks/update`
//!   and `tasks/cancel` go to that backend under the backend's id.
//! - Bounded: at most [`MAX_TASKS_PER_HOST`] tasks of one host and
//!   [`MAX_TASKS`] in all are kept; a task is forgotten (its call
//!   dropped) [`TASK_TTL`] after it was created, the `ttlMs` it announces.
//!   When full, a call is answered whole instead, as without tasks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use switchboard::server::tasks::{client_declares_tasks, missing_tasks_extension};
use switchboard::server::{Peer, Reply, RequestContext};
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::tasks::{
    CancelTaskRequestParams, CreateTaskResult, GetTaskRequestParams, GetTaskResult,
    TASKS_EXTENSION, Task, TaskStatus, UpdateTaskRequestParams,
};
use switchboard::types::{
    CallToolRequestParams, CallToolResult, EmptyResult, Era, InputResponses, JsonObject,
    RequestOutcome, ResultType, TaskSupport, codes, meta,
};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::HubServer;

/// How long a task is kept after it was created (`ttlMs`).
pub const TASK_TTL: Duration = Duration::from_secs(60 * 60);
/// The polling interval suggested to hosts (`pollIntervalMs`).
const POLL_INTERVAL_MS: u64 = 250;
/// The most tasks kept for one host.
pub const MAX_TASKS_PER_HOST: usize = 64;
/// The most tasks kept in all.
pub const MAX_TASKS: usize = 1024;

/// Who made a task: the host's connection and the name it gave.
struct Owner {
    peer: Peer,
    name: String,
}

impl Owner {
    fn of(cx: &RequestContext) -> Self {
        Self {
            peer: cx.peer.clone(),
            name: host_name(cx),
        }
    }

    fn is(&self, cx: &RequestContext) -> bool {
        self.peer.same_connection(&cx.peer) && self.name == host_name(cx)
    }
}

fn host_name(cx: &RequestContext) -> String {
    cx.client_info
        .as_ref()
        .map(|info| info.name.clone())
        .unwrap_or_default()
}

struct Entry {
    owner: Owner,
    created: Instant,
    /// The task as `tasks/get` shows it.
    task: Task,
    /// Answers received to the outstanding `inputRequests`.
    answers: InputResponses,
    /// Where the answers go once all are in.
    resume: Option<oneshot::Sender<InputResponses>>,
    /// The running call.
    work: Option<AbortHandle>,
    /// A backend's own task, followed: its server and its id there.
    backend: Option<(String, String)>,
}

impl Entry {
    fn set(&mut self, status: TaskStatus, message: &str) {
        self.task.status = status;
        self.task.status_message = Some(message.to_owned());
        self.task.last_updated_at = now_iso();
        if self.task.status.is_terminal() {
            self.task.input_requests = None;
            self.answers.clear();
            self.resume = None;
            self.work = None;
        }
    }
}

/// The gateway's tasks, shared by every connection it serves.
#[derive(Clone, Default)]
pub(super) struct HostTasks {
    tasks: Arc<Mutex<HashMap<String, Entry>>>,
}

impl HostTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The task `id` of the host of `cx`, changed by `f`; -32602 when
    /// there is none.
    fn with<R>(
        &self,
        id: &str,
        cx: &RequestContext,
        f: impl FnOnce(&mut Entry) -> R,
    ) -> Result<R, ErrorObject> {
        let mut tasks = self.lock();
        forget_expired(&mut tasks);
        match tasks.get_mut(id) {
            Some(entry) if entry.owner.is(cx) => Ok(f(entry)),
            _ => Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!("Invalid params: unknown task `{id}`"),
            )),
        }
    }

    /// Changes task `id` from its call (whoever the host is).
    fn update(&self, id: &str, f: impl FnOnce(&mut Entry)) {
        if let Some(entry) = self.lock().get_mut(id)
            && !entry.task.status.is_terminal()
        {
            f(entry);
        }
    }
}

/// Whether one more task of `owner` may be kept.
fn has_room(tasks: &HashMap<String, Entry>, owner: &Owner) -> bool {
    let mine = tasks
        .values()
        .filter(|e| e.owner.name == owner.name && e.owner.peer.same_connection(&owner.peer))
        .count();
    mine < MAX_TASKS_PER_HOST && tasks.len() < MAX_TASKS
}

fn forget_expired(tasks: &mut HashMap<String, Entry>) {
    tasks.retain(|_, entry| {
        let keep = entry.created.elapsed() < TASK_TTL;
        if !keep && let Some(work) = &entry.work {
            work.abort();
        }
        keep
    });
}

tokio::task_local! {
    /// Set while a task's call runs: a backend's JSON-RPC error then fails
    /// the task rather than becoming an `isError` result (`calls.rs`).
    static IN_TASK: ();
}

/// Whether a task's call is running on this tokio task.
pub(super) fn in_task() -> bool {
    IN_TASK.try_with(|()| ()).is_ok()
}

/// 128 random bits, hex.
fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    aws_lc_rs::rand::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl HubServer {
    /// For a `tools/call`: `Some` when the gateway answers it as a task
    /// (or refuses it: -32021), `None` when it is called as usual.
    pub(super) fn task_call(
        &self,
        params: &CallToolRequestParams,
        cx: &RequestContext,
    ) -> Option<Result<RequestOutcome<CallToolResult>, ErrorObject>> {
        // A retry of a round goes on as it began.
        if params.request_state.is_some() || params.input_responses.is_some() {
            return None;
        }
        let declared = client_declares_tasks(&cx.client_capabilities);
        // Only a 2026-07-28 host that takes no tasks is ever refused.
        if !declared && cx.era != Era::Modern {
            return None;
        }
        let support = self.hub.tool_task_support(&params.name)?;
        match support {
            TaskSupport::Required if !declared && cx.era == Era::Modern => {
                Some(Err(missing_tasks_extension()))
            }
            // The backend's own tasks are followed instead.
            TaskSupport::Optional | TaskSupport::Required
                if declared
                    && self
                        .hub
                        .tool_server(&params.name)
                        .is_some_and(|server| self.follows_tasks(&server, cx)) =>
            {
                None
            }
            TaskSupport::Optional | TaskSupport::Required if declared => {
                self.start_task(params.clone(), cx).map(Ok)
            }
            _ => None,
        }
    }

    /// Whether the host of `cx` gets `server`'s own task handles, followed:
    /// both speak 2026-07-28, the host takes tasks and the backend offers
    /// the extension.
    pub(super) fn follows_tasks(&self, server: &str, cx: &RequestContext) -> bool {
        cx.era == Era::Modern
            && client_declares_tasks(&cx.client_capabilities)
            && self.hub.client(server).is_ok_and(|client| {
                client.era() == Era::Modern
                    && client.capabilities().extension(TASKS_EXTENSION).is_some()
            })
    }

    /// A backend's task handle, for the host of `cx`: kept under an id of
    /// the gateway's. When the host has as many tasks as it may, the
    /// backend's task is cancelled and the call refused.
    pub(super) async fn follow_task(
        &self,
        server: &str,
        mut created: CreateTaskResult,
        cx: &RequestContext,
    ) -> Result<CreateTaskResult, ErrorObject> {
        let theirs = created.task.task_id.clone();
        let ours = {
            let mut tasks = self.host_tasks.lock();
            forget_expired(&mut tasks);
            let owner = Owner::of(cx);
            let room = has_room(&tasks, &owner);
            match new_id() {
                Some(id) if room => {
                    let mut task = created.task.clone();
                    task.task_id = id.clone();
                    tasks.insert(
                        id.clone(),
                        Entry {
                            owner,
                            created: Instant::now(),
                            task,
                            answers: InputResponses::new(),
                            resume: None,
                            work: None,
                            backend: Some((server.to_owned(), theirs.clone())),
                        },
                    );
                    Some(id)
                }
                _ => None,
            }
        };
        let Some(ours) = ours else {
            if let Ok(client) = self.hub.client(server) {
                let _ = client.cancel_task(&theirs).await;
            }
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "too many tasks (at most {MAX_TASKS_PER_HOST} of one host, {MAX_TASKS} in all): `{server}`'s task was cancelled; call the tool again once tasks have ended"
                ),
            ));
        };
        created.task.task_id = ours;
        Ok(created)
    }

    /// Creates the task and starts its call; `None` when the host has as
    /// many tasks as it may (the call is then answered whole).
    fn start_task(
        &self,
        params: CallToolRequestParams,
        cx: &RequestContext,
    ) -> Option<RequestOutcome<CallToolResult>> {
        let id = new_id()?;
        let now = now_iso();
        let task = Task {
            task_id: id.clone(),
            status: TaskStatus::Working,
            status_message: Some("The call is running.".to_owned()),
            created_at: now.clone(),
            last_updated_at: now,
            ttl_ms: Some(Some(TASK_TTL.as_millis() as u64)),
            poll_interval_ms: Some(POLL_INTERVAL_MS),
            ..Task::default()
        };
        {
            let mut tasks = self.host_tasks.lock();
            forget_expired(&mut tasks);
            let owner = Owner::of(cx);
            let room = has_room(&tasks, &owner);
            if !room {
                tracing::warn!(
                    tool = %params.name,
                    "too many tasks (at most {MAX_TASKS_PER_HOST} of one host, {MAX_TASKS} in all): the call is answered whole"
                );
                return None;
            }
            tasks.insert(
                id.clone(),
                Entry {
                    owner,
                    created: Instant::now(),
                    task: task.clone(),
                    answers: InputResponses::new(),
                    resume: None,
                    work: None,
                    backend: None,
                },
            );
        }
        // The call runs after this request is answered: nothing more is
        // said on its stream (no progress, no log lines).
        let mut cx = cx.clone();
        cx.meta.remove(meta::PROGRESS_TOKEN);
        cx.meta.remove(meta::META_LOG_LEVEL);
        let work = self
            .tasks
            .spawn(self.clone().run_task(id.clone(), params, cx));
        self.host_tasks
            .update(&id, |entry| entry.work = Some(work.abort_handle()));
        Some(RequestOutcome::Task(
            switchboard::types::tasks::CreateTaskResult {
                result_type: Some(ResultType::Task),
                task,
                meta: None,
                extra: Default::default(),
            },
        ))
    }

    /// A task's call: round after round until the backend answers, each
    /// `input_required` round waiting for the host's `tasks/update`s.
    async fn run_task(self, id: String, mut params: CallToolRequestParams, cx: RequestContext) {
        loop {
            let (_, outcome) = IN_TASK
                .scope((), self.call(params.clone(), cx.clone()))
                .await;
            let required = match outcome {
                Ok(RequestOutcome::Complete(result)) => {
                    let result = match serde_json::to_value(&result) {
                        Ok(serde_json::Value::Object(mut result)) => {
                            result.remove("resultType");
                            result
                        }
                        _ => JsonObject::new(),
                    };
                    self.host_tasks.update(&id, |entry| {
                        entry.task.result = Some(result);
                        entry.set(TaskStatus::Completed, "The call completed.");
                    });
                    return;
                }
                Ok(RequestOutcome::InputRequired(required)) => required,
                Ok(RequestOutcome::Task(_)) => {
                    let error = ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        "the backend answered with a task of its own, which the gateway does not follow",
                    );
                    self.host_tasks.update(&id, |entry| {
                        entry.task.error = Some(error);
                        entry.set(TaskStatus::Failed, "The call failed.");
                    });
                    return;
                }
                Err(error) => {
                    self.host_tasks.update(&id, |entry| {
                        entry.task.error = Some(error);
                        entry.set(TaskStatus::Failed, "The call failed.");
                    });
                    return;
                }
            };
            let (tx, rx) = oneshot::channel();
            self.host_tasks.update(&id, |entry| {
                entry.task.input_requests = required.input_requests.clone();
                entry.answers.clear();
                entry.resume = Some(tx);
                entry.set(TaskStatus::InputRequired, "Waiting for your answers.");
            });
            // Dropped with the task (cancelled or forgotten): the call ends.
            let Ok(answers) = rx.await else { return };
            params.input_responses = Some(answers);
            params.request_state = required.request_state;
        }
    }

    /// `tasks/get`.
    pub(super) fn get_host_task(
        &self,
        params: GetTaskRequestParams,
        cx: RequestContext,
    ) -> Reply<GetTaskResult> {
        let task_id = params.task_id.clone();
        if let Some(forwarded) = self.forward(&params.task_id, &cx, |client, theirs| async move {
            let mut task = client.get_task(&theirs).await?;
            task.task_id = task_id;
            Ok(GetTaskResult {
                result_type: None,
                task,
                meta: None,
            })
        }) {
            return forwarded;
        }
        let found = self
            .host_tasks
            .with(&params.task_id, &cx, |entry| GetTaskResult {
                result_type: None,
                task: entry.task.clone(),
                meta: None,
            });
        Box::pin(async move { found })
    }

    /// `tasks/update`: the answers to outstanding requests are kept (other
    /// keys ignored); once every request is answered the call goes on.
    pub(super) fn update_host_task(
        &self,
        params: UpdateTaskRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        let mut forwarded = params.clone();
        if let Some(forwarded) = self.forward(&params.task_id, &cx, |client, theirs| async move {
            forwarded.task_id = theirs;
            client.update_task(&forwarded).await?;
            Ok(EmptyResult::default())
        }) {
            return forwarded;
        }
        let done = self.host_tasks.with(&params.task_id, &cx, |entry| {
            let Some(outstanding) = entry.task.input_requests.as_mut() else {
                return;
            };
            for (key, answer) in params.input_responses {
                if outstanding.remove(&key).is_some() {
                    entry.answers.insert(key, answer);
                }
            }
            entry.task.last_updated_at = now_iso();
            if outstanding.is_empty()
                && let Some(resume) = entry.resume.take()
            {
                let answers = std::mem::take(&mut entry.answers);
                entry.task.input_requests = None;
                entry.set(TaskStatus::Working, "The call is running.");
                let _ = resume.send(answers);
            }
        });
        Box::pin(async move { done.map(|()| EmptyResult::default()) })
    }

    /// `tasks/cancel`.
    pub(super) fn cancel_host_task(
        &self,
        params: CancelTaskRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        if let Some(forwarded) = self.forward(&params.task_id, &cx, |client, theirs| async move {
            client.cancel_task(&theirs).await?;
            Ok(EmptyResult::default())
        }) {
            return forwarded;
        }
        let done = self.host_tasks.with(&params.task_id, &cx, |entry| {
            if entry.task.status.is_terminal() {
                return;
            }
            if let Some(work) = entry.work.take() {
                work.abort();
            }
            entry.set(TaskStatus::Cancelled, "The task was cancelled.");
        });
        Box::pin(async move { done.map(|()| EmptyResult::default()) })
    }
}

impl HubServer {
    /// For the host's task `id` that is a backend's own, followed: `request`
    /// sent to that backend with the backend's id, its errors the host's
    /// (`None`: the gateway's own task, answered here; unknown: -32602).
    fn forward<R, F>(
        &self,
        id: &str,
        cx: &RequestContext,
        request: impl FnOnce(switchboard::Client, String) -> F,
    ) -> Option<Reply<R>>
    where
        R: Send + 'static,
        F: Future<Output = Result<R, switchboard::Error>> + Send + 'static,
    {
        let (server, theirs) = match self.host_tasks.with(id, cx, |entry| entry.backend.clone()) {
            Err(error) => return Some(Box::pin(async move { Err(error) })),
            Ok(None) => return None,
            Ok(Some(backend)) => backend,
        };
        let client = match self.hub.client(&server) {
            Ok(client) => client,
            Err(e) => {
                let error = ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("the task's server `{server}` is not reachable now: {e}"),
                );
                return Some(Box::pin(async move { Err(error) }));
            }
        };
        let sent = request(client, theirs);
        Some(Box::pin(async move {
            sent.await.map_err(|e| backend_error(&server, &e))
        }))
    }
}

/// A backend's answer to a followed task's request, for the host: its own
/// JSON-RPC error as it is, anything else saying which server failed.
fn backend_error(server: &str, error: &switchboard::Error) -> ErrorObject {
    error.error_object().cloned().unwrap_or_else(|| {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("the task's server `{server}` did not answer: {error}"),
        )
    })
}

/// Now in ISO 8601 (`2026-07-28T10:30:00.123Z`).
fn now_iso() -> String {
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
    fn ids_are_long_and_distinct() {
        let (a, b) = (super::new_id().unwrap(), super::new_id().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    #[test]
    fn iso_time_shape() {
        let t = super::now_iso();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z') && t.as_bytes()[10] == b'T');
    }
}
