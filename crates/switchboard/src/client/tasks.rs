//! Tasks: tool calls that outlive a request, polled for their outcome.
//!
//! Two shapes exist, and [`Client::call_tool_and_wait`] drives both:
//! - **2025-11-25** (session era, core protocol): the client asks for a task
//!   with `params.task` when the server declares `tasks.requests.tools.call`
//!   and the tool's `execution.taskSupport` allows it, polls `tasks/get`,
//!   and fetches the outcome with `tasks/result`. While the task is
//!   `input_required`, `tasks/result` is where the server's questions
//!   arrive, as ordinary server requests the installed handlers answer.
//! - **2026-07-28**, the `io.modelcontextprotocol/tasks` extension: the
//!   client declares the extension on the call (per request), the server
//!   decides whether to answer with a task (`resultType: "task"`, fields
//!   inline), the client polls `tasks/get`, whose answer inlines the result
//!   or error, and answers `input_required` with `tasks/update`.
//!
//! Status notifications (`notifications/tasks/status`, `notifications/tasks`)
//! cut a wait short when they arrive; they are never relied on.
//!
//! Dropping a waiting future cancels its task: a guard queues `tasks/cancel`
//! on a set of requests the client owns (see [`Client::call_tool_and_wait`]),
//! so no task is left running on the server unobserved.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::time::Duration;

use serde_json::Value;
use switchboard_types::mrtr::InputRequest;
use switchboard_types::request::{self as rq, Request};
use switchboard_types::{
    CallToolRequestParams, CallToolResult, CancelTaskRequestParams, Era, ErrorObject,
    GetTaskPayloadRequestParams, GetTaskPayloadResult, GetTaskRequestParams, JsonObject, RequestId,
    RequestOutcome, TASKS_EXTENSION, Task, TaskMetadata, TaskStatus, TaskSupport,
    UpdateTaskRequestParams, codes, meta,
};
use tokio::time::Instant;

use super::{Client, add_meta, parse_result};
use crate::client::events::{Event, EventStream};
use crate::engine::{Progress, ProgressCallback, RequestOptions};
use crate::error::{Error, Result};

/// Shortest poll interval by default, whatever the server suggests.
pub const DEFAULT_MIN_POLL: Duration = Duration::from_millis(100);
/// Longest poll interval by default, whatever the server suggests.
pub const DEFAULT_MAX_POLL: Duration = Duration::from_secs(30);
/// The poll interval when the server suggests none (then clamped).
pub const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// How long a task is waited for by default.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(600);
/// How long a `tasks/cancel` sent on the caller's behalf may take.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// How [`Client::call_tool_and_wait`] calls the tool and waits for its task.
/// Setters never fail; the call reports a bad setting as [`Error::Config`].
///
/// The server's suggested poll interval (`pollInterval`, or
/// `pollIntervalMs`/`pollIntervalMilliseconds` in the extension) is
/// honoured, clamped to [`TaskOptions::poll_bounds`] (default 100 ms to
/// 30 s; [`DEFAULT_POLL`] when it suggests none), so a server can neither
/// make the client spin nor stall it.
#[derive(Clone)]
#[must_use]
pub struct TaskOptions {
    request: RequestOptions,
    max_wait: Duration,
    min_poll: Duration,
    max_poll: Duration,
    ttl: Option<Duration>,
    prefer_task: bool,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            request: RequestOptions::default(),
            max_wait: DEFAULT_MAX_WAIT,
            min_poll: DEFAULT_MIN_POLL,
            max_poll: DEFAULT_MAX_POLL,
            ttl: None,
            prefer_task: true,
        }
    }
}

impl fmt::Debug for TaskOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskOptions")
            .field("request", &self.request)
            .field("max_wait", &self.max_wait)
            .field("min_poll", &self.min_poll)
            .field("max_poll", &self.max_poll)
            .field("ttl", &self.ttl)
            .field("prefer_task", &self.prefer_task)
            .finish()
    }
}

impl From<RequestOptions> for TaskOptions {
    fn from(request: RequestOptions) -> Self {
        Self::default().request(request)
    }
}

impl TaskOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Options of each request on the way: the timeout applies to each
    /// request (the task as a whole has [`TaskOptions::max_wait`]); the
    /// progress callback follows the call's progress notifications for the
    /// task's whole life, and receives the task's status messages. Progress
    /// does not extend a request's timeout here.
    pub fn request(mut self, request: RequestOptions) -> Self {
        self.request = request;
        self
    }

    /// Receives the call's progress notifications for the task's whole life,
    /// and each new status message of the task (with the last progress
    /// values seen).
    pub fn on_progress(mut self, callback: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.request = self.request.on_progress(callback);
        self
    }

    /// How long to wait for a task once it exists (default 10 min). When it
    /// runs out the task is cancelled and the call fails with
    /// [`Error::Task`] ([`Error::is_timeout`] holds).
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// Bounds of the interval between polls (default 100 ms and 30 s).
    pub fn poll_bounds(mut self, min: Duration, max: Duration) -> Self {
        self.min_poll = min;
        self.max_poll = max;
        self
    }

    /// How long the server should keep the task after creation (2025-11-25
    /// `task.ttl`; the server may choose otherwise). Default: the server's.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Whether a tool whose `taskSupport` is `optional` runs as a task
    /// (2025-11-25; default true). A `required` tool always does.
    pub fn prefer_task(mut self, prefer: bool) -> Self {
        self.prefer_task = prefer;
        self
    }

    fn validate(&self) -> Result<()> {
        let bad = |setting, reason: &str| {
            Err(Error::Config {
                setting,
                reason: reason.into(),
            })
        };
        if self.max_wait.is_zero() {
            return bad("max_wait", "must be greater than zero");
        }
        if self.min_poll.is_zero() {
            return bad("poll_bounds", "the minimum must be greater than zero");
        }
        if self.min_poll > self.max_poll {
            return bad("poll_bounds", "the minimum is above the maximum");
        }
        Ok(())
    }

    /// The wait before the next poll of `task`.
    fn interval(&self, task: &Task) -> Duration {
        suggested_interval(task)
            .unwrap_or(DEFAULT_POLL)
            .clamp(self.min_poll, self.max_poll)
    }

    /// The options of one request on the way: its timeout and `_meta`, no progress
    /// (progress is followed through the event stream instead).
    fn per_request(&self) -> RequestOptions {
        RequestOptions {
            timeout: self.request.timeout,
            progress: None,
            meta: self.request.meta.clone(),
            tag: self.request.tag,
            log: self.request.log.clone(),
        }
    }
}

/// The server's suggested poll interval, whichever revision named it.
fn suggested_interval(task: &Task) -> Option<Duration> {
    task.poll_interval()
}

/// Which of the two task protocols a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    /// 2025-11-25, core protocol.
    Core,
    /// 2026-07-28, the `io.modelcontextprotocol/tasks` extension.
    Extension,
}

impl Client {
    /// Calls a tool and returns its final result, whichever form the server
    /// chose: an immediate result, a 2025-11-25 task, or a 2026-07-28 task
    /// (tasks extension). A result with `is_error: Some(true)` is `Ok`.
    ///
    /// A task is asked for (2025-11-25) when the server declares
    /// `tasks.requests.tools.call` and the tool's `execution.taskSupport` is
    /// `required`, or `optional` and [`TaskOptions::prefer_task`] holds; the
    /// tool list is fetched once if the tool is not known yet. In 2026-07-28
    /// the extension is declared on this call when the server offers it, and
    /// the server decides. Otherwise this is [`Client::call_tool_with`].
    ///
    /// The task is polled at the server's suggested interval within
    /// [`TaskOptions::poll_bounds`]; a status notification cuts a wait
    /// short. While it is `input_required` the installed handlers answer
    /// (through `tasks/update` in 2026-07-28, through the server requests
    /// that arrive during `tasks/result` in 2025-11-25). Progress
    /// notifications and status messages go to the progress callback.
    ///
    /// # Errors
    /// [`Error::Task`] when the task failed (with the server's JSON-RPC
    /// error, see [`Error::error_object`]) or was cancelled, and when it did
    /// not end within [`TaskOptions::max_wait`] (it is then cancelled, and
    /// [`Error::is_timeout`] holds); [`Error::Config`] for bad options; as
    /// [`Client::call_tool`] otherwise.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call: the request in flight gets
    /// `notifications/cancelled`, and a task that was created and has not
    /// ended gets `tasks/cancel` (when the server supports it). That request
    /// is queued on a set the client owns — never a detached task — and is
    /// sent within a few seconds; it keeps the connection open until then,
    /// even if the last clone of the client is dropped meanwhile. Without a
    /// Tokio runtime at the time of the drop, no `tasks/cancel` is sent and
    /// the task runs until the server's ttl.
    pub async fn call_tool_and_wait(
        &self,
        params: &CallToolRequestParams,
        options: TaskOptions,
    ) -> Result<CallToolResult> {
        self.require(
            "tools",
            rq::CallTool::METHOD,
            self.capabilities().tools.is_some(),
        )?;
        options.validate()?;
        let flavor = match self.task_flavor() {
            Some(Flavor::Extension) => Some(Flavor::Extension),
            Some(Flavor::Core) if self.core_task_wanted(&params.name, &options).await? => {
                Some(Flavor::Core)
            }
            _ => None,
        };
        let Some(flavor) = flavor else {
            return self.call_tool_with(params, options.request.clone()).await;
        };
        let mut value = serde_json::to_value(params).map_err(|source| Error::Serialize {
            method: rq::CallTool::METHOD.into(),
            source,
        })?;
        match flavor {
            Flavor::Core if params.task.is_none() => {
                let task = TaskMetadata {
                    ttl: options
                        .ttl
                        .map(|ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
                    ..TaskMetadata::default()
                };
                value["task"] = serde_json::to_value(task).expect("TaskMetadata serializes");
            }
            Flavor::Core => {}
            Flavor::Extension => self.declare_tasks_extension(&mut value),
        }
        // Listen before calling, so no progress or status is missed.
        let mut waiter = Waiter::new(self, flavor, &params.name, &options);
        if let Some(token) = waiter.token {
            add_meta(
                &mut value,
                [(meta::PROGRESS_TOKEN.to_owned(), Value::from(token))],
            );
        }
        let per_request = options.per_request();
        let call = || {
            self.request_rounds::<_, RequestOutcome<CallToolResult>>(
                rq::CallTool::METHOD,
                &value,
                per_request.clone(),
            )
        };
        let outcome = match waiter
            .drive(self.with_url_elicitation(per_request.tag, call))
            .await
        {
            // As in `call_tool_with`: the tool definitions changed under us.
            Err(error)
                if error.code() == Some(codes::HEADER_MISMATCH) && self.era() == Era::Modern =>
            {
                self.list_tools().await?;
                waiter.drive(call()).await
            }
            outcome => outcome,
        }?;
        let result = match outcome {
            RequestOutcome::Complete(result) => result,
            RequestOutcome::Task(created) => waiter.wait(created.task).await?,
            RequestOutcome::InputRequired(_) => {
                return Err(Error::Protocol {
                    server: self.inner.engine.server().clone(),
                    detail: "it answered `tools/call` with `input_required`, which this protocol version does not have".into(),
                });
            }
        };
        self.check_output(&params.name, result).await
    }

    /// A task's current state (`tasks/get`).
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`] when the server declares no task support
    /// (nothing is sent); [`Error::Server`] with -32602 for an unknown or
    /// expired task; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request, not the task.
    pub async fn get_task(&self, task_id: &str) -> Result<Task> {
        self.require_tasks(rq::GetTask::METHOD)?;
        let params = GetTaskRequestParams {
            task_id: task_id.to_owned(),
            ..Default::default()
        };
        self.task_request::<rq::GetTask>(&params, RequestOptions::default())
            .await
            .map(|result| result.task)
    }

    /// The outcome of a task (`tasks/result`, 2025-11-25): the original
    /// request's result, e.g. with
    /// [`GetTaskPayloadResult::into_result::<CallToolResult>`](GetTaskPayloadResult::into_result).
    /// The server answers only once the task has ended, so give `options` a
    /// timeout long enough; server requests that arrive meanwhile go to the
    /// installed handlers.
    ///
    /// # Errors
    /// [`Error::NotInThisEra`] on a 2026-07-28 connection (the result comes
    /// with [`Client::get_task`] there); [`Error::CapabilityMissing`] without
    /// the `tasks` capability; [`Error::Server`] with the task's own error
    /// when it failed with one; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request, not the task.
    pub async fn task_result(
        &self,
        task_id: &str,
        options: RequestOptions,
    ) -> Result<GetTaskPayloadResult> {
        self.require_legacy(rq::GetTaskPayload::METHOD)?;
        self.require_tasks(rq::GetTaskPayload::METHOD)?;
        let params = GetTaskPayloadRequestParams {
            task_id: task_id.to_owned(),
            ..Default::default()
        };
        self.request::<rq::GetTaskPayload>(&params, options).await
    }

    /// Every task the server lists for this client (`tasks/list`,
    /// 2025-11-25), following pagination.
    ///
    /// # Errors
    /// [`Error::NotInThisEra`] on a 2026-07-28 connection;
    /// [`Error::CapabilityMissing`] without `tasks.list`;
    /// [`Error::Pagination`] when the list does not end; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Cancel safe: dropping it cancels the page in flight.
    pub async fn list_tasks(&self) -> Result<Vec<Task>> {
        self.require_legacy(rq::ListTasks::METHOD)?;
        self.require(
            "tasks.list",
            rq::ListTasks::METHOD,
            self.capabilities()
                .tasks
                .as_ref()
                .is_some_and(|t| t.list.is_some()),
        )?;
        self.list_all::<rq::ListTasks>().await
    }

    /// Asks the server to cancel a task (`tasks/cancel`). Returns the task
    /// as the server left it (2025-11-25); the extension only acknowledges
    /// (`None`), and the task may still end otherwise.
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`] without task support, or in 2025-11-25
    /// without `tasks.cancel`; [`Error::Server`] with -32602 for an unknown
    /// or already ended task; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request; the server may or may not
    /// have cancelled the task.
    pub async fn cancel_task(&self, task_id: &str) -> Result<Option<Task>> {
        self.require_tasks(rq::CancelTask::METHOD)?;
        self.require(
            "tasks.cancel",
            rq::CancelTask::METHOD,
            self.can_cancel_tasks(),
        )?;
        self.send_task_cancel(task_id, RequestOptions::default())
            .await
            .map(|result| result.task())
    }

    /// Answers a task's `inputRequests` (`tasks/update`, 2026-07-28 tasks
    /// extension). [`Client::call_tool_and_wait`] does this itself with the
    /// installed handlers.
    ///
    /// # Errors
    /// [`Error::NotInThisEra`] on a session-era connection;
    /// [`Error::CapabilityMissing`] when the server does not offer the
    /// extension; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request; the server may or may not
    /// have taken the answers.
    pub async fn update_task(&self, params: &UpdateTaskRequestParams) -> Result<()> {
        if self.era() != Era::Modern {
            return Err(Error::NotInThisEra {
                server: self.inner.engine.server().clone(),
                method: rq::UpdateTask::METHOD,
                version: self.protocol_version().clone(),
            });
        }
        self.require_tasks(rq::UpdateTask::METHOD)?;
        self.task_request::<rq::UpdateTask>(params, RequestOptions::default())
            .await
            .map(drop)
    }

    /// The task protocol this connection speaks, if the server offers one.
    fn task_flavor(&self) -> Option<Flavor> {
        let capabilities = self.capabilities();
        match self.era() {
            Era::Modern => capabilities
                .extension(TASKS_EXTENSION)
                .is_some()
                .then_some(Flavor::Extension),
            Era::Legacy => capabilities.tasks.is_some().then_some(Flavor::Core),
            // No task protocol is known for an era added to the types later.
            _ => None,
        }
    }

    fn require_tasks(&self, method: &'static str) -> Result<Flavor> {
        self.task_flavor().ok_or_else(|| Error::CapabilityMissing {
            server: self.inner.engine.server().clone(),
            capability: match self.era() {
                Era::Modern => TASKS_EXTENSION,
                Era::Legacy => "tasks",
                _ => "tasks",
            },
            method,
        })
    }

    fn can_cancel_tasks(&self) -> bool {
        match self.task_flavor() {
            Some(Flavor::Extension) => true,
            Some(Flavor::Core) => self
                .capabilities()
                .tasks
                .as_ref()
                .is_some_and(|t| t.cancel.is_some()),
            None => false,
        }
    }

    /// 2025-11-25: whether this call should be task-augmented.
    async fn core_task_wanted(&self, tool: &str, options: &TaskOptions) -> Result<bool> {
        let declared = self
            .capabilities()
            .tasks
            .as_ref()
            .is_some_and(|t| t.supports_request(rq::CallTool::METHOD));
        if !declared {
            return Ok(false);
        }
        let support = || {
            let tools = self.tools()?;
            let found = tools.iter().find(|t| t.name == tool)?;
            Some(
                found
                    .execution
                    .as_ref()
                    .and_then(|e| e.task_support.clone()),
            )
        };
        let support = match support() {
            Some(known) => known,
            None => {
                self.list_tools().await?;
                support().flatten()
            }
        };
        Ok(match support {
            Some(TaskSupport::Required) => true,
            Some(TaskSupport::Optional) => options.prefer_task,
            _ => false,
        })
    }

    /// 2026-07-28: declares the tasks extension in this request's
    /// capabilities (the server may only answer with a task, and may
    /// require the declaration on `tasks/*`, when the request carries it).
    fn declare_tasks_extension(&self, params: &mut Value) {
        let Some(fields) = &self.inner.modern_meta else {
            return;
        };
        let mut capabilities = fields
            .get(meta::META_CLIENT_CAPABILITIES)
            .cloned()
            .unwrap_or_else(|| Value::Object(JsonObject::new()));
        if let Some(object) = capabilities.as_object_mut() {
            let extensions = object
                .entry("extensions")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            if let Some(extensions) = extensions.as_object_mut() {
                extensions
                    .entry(TASKS_EXTENSION)
                    .or_insert_with(|| Value::Object(JsonObject::new()));
            }
        }
        add_meta(
            params,
            [(meta::META_CLIENT_CAPABILITIES.to_owned(), capabilities)],
        );
    }

    /// A `tasks/*` request, declaring the extension in 2026-07-28.
    async fn task_request<R: Request>(
        &self,
        params: &R::Params,
        options: RequestOptions,
    ) -> Result<R::Result> {
        let mut value = serde_json::to_value(params).map_err(|source| Error::Serialize {
            method: R::METHOD.into(),
            source,
        })?;
        self.declare_tasks_extension(&mut value);
        let raw = self.request_raw(R::METHOD, Some(value), options).await?;
        parse_result(self.inner.engine.server(), R::METHOD, raw.get())
    }

    async fn send_task_cancel(
        &self,
        task_id: &str,
        options: RequestOptions,
    ) -> Result<switchboard_types::CancelTaskResult> {
        let params = CancelTaskRequestParams {
            task_id: task_id.to_owned(),
            ..Default::default()
        };
        self.task_request::<rq::CancelTask>(&params, options).await
    }

    /// Sends `tasks/cancel` for a task whose waiter was dropped, from a set
    /// of requests this client owns.
    fn queue_task_cancel(&self, task_id: String) {
        if !self.can_cancel_tasks() {
            tracing::debug!(server = %self.server_name(), task = %task_id, "the server cannot cancel tasks; leaving the task to its ttl");
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(server = %self.server_name(), task = %task_id, "no runtime to send tasks/cancel on; leaving the task to its ttl");
            return;
        };
        let client = self.clone();
        let send = async move {
            let options = RequestOptions::timeout(CANCEL_WAIT);
            if let Err(error) = client.send_task_cancel(&task_id, options).await {
                tracing::debug!(server = %client.server_name(), task = %task_id, %error, "tasks/cancel for a dropped call failed");
            }
        };
        let mut owned = self
            .inner
            .background
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        while owned.try_join_next().is_some() {}
        owned.spawn_on(send, &runtime);
    }
}

/// Cancels the task when the waiting future is dropped before it ended.
struct CancelOnDrop {
    client: Client,
    task_id: Option<String>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(task_id) = self.task_id.take() {
            self.client.queue_task_cancel(task_id);
        }
    }
}

/// One call's wait for its task.
struct Waiter<'a> {
    client: &'a Client,
    flavor: Flavor,
    tool: &'a str,
    options: &'a TaskOptions,
    events: EventStream,
    events_open: bool,
    /// The call's own progress token, when the caller follows progress.
    token: Option<i64>,
    progress: Option<ProgressCallback>,
    /// The last progress and total seen, to go with status messages.
    last_progress: (f64, Option<f64>),
    /// The status and message last reported to the progress callback.
    reported: Option<(TaskStatus, Option<String>)>,
    task_id: Option<String>,
    last_status: TaskStatus,
    /// A newer state from a status notification, not yet looked at.
    pushed: Option<Task>,
    /// The latest `requestState` (extension); echoed on the next request.
    request_state: Option<String>,
    /// `inputRequests` keys already answered (extension).
    answered: HashSet<String>,
    guard: CancelOnDrop,
}

impl<'a> Waiter<'a> {
    fn new(client: &'a Client, flavor: Flavor, tool: &'a str, options: &'a TaskOptions) -> Self {
        let progress = options.request.progress.clone();
        Self {
            client,
            flavor,
            tool,
            options,
            events: client.events(),
            events_open: true,
            token: progress.as_ref().map(|_| client.inner.engine.allocate_id()),
            progress,
            last_progress: (0.0, None),
            reported: None,
            task_id: None,
            last_status: TaskStatus::Working,
            pushed: None,
            request_state: None,
            answered: HashSet::new(),
            guard: CancelOnDrop {
                client: client.clone(),
                task_id: None,
            },
        }
    }

    /// Runs `future` while following the event stream.
    async fn drive<T>(&mut self, future: impl Future<Output = T>) -> T {
        let mut future = std::pin::pin!(future);
        loop {
            // Events first: the reader queues a notification before it
            // completes the request that followed it on the wire, so the
            // call's last progress is delivered before the call returns.
            tokio::select! {
                biased;
                event = self.events.next(), if self.events_open => self.on_event(event),
                output = &mut future => return output,
            }
        }
    }

    /// Waits `interval`, or less if a status notification brings news.
    async fn pause(&mut self, interval: Duration) -> Option<Task> {
        if let Some(task) = self.pushed.take() {
            return Some(task);
        }
        let mut sleep = std::pin::pin!(tokio::time::sleep(interval));
        loop {
            tokio::select! {
                () = &mut sleep => return None,
                event = self.events.next(), if self.events_open => {
                    self.on_event(event);
                    if let Some(task) = self.pushed.take() {
                        return Some(task);
                    }
                }
            }
        }
    }

    fn on_event(&mut self, event: Option<Event>) {
        match event {
            Some(Event::Progress(update)) => {
                let ours = matches!((self.token, &update.progress_token),
                    (Some(token), RequestId::Number(n)) if token == *n);
                if let (true, Some(callback)) = (ours, &self.progress) {
                    self.last_progress = (update.progress, update.total);
                    callback(Progress {
                        progress: update.progress,
                        total: update.total,
                        message: update.message,
                    });
                }
            }
            Some(Event::TaskStatus(status))
                if Some(&status.task.task_id) == self.task_id.as_ref() =>
            {
                self.pushed = Some(status.task);
            }
            Some(Event::Closed(_)) | None => self.events_open = false,
            Some(_) => {}
        }
    }

    /// Follows a created task to its end, within the maximum wait.
    async fn wait(&mut self, task: Task) -> Result<CallToolResult> {
        self.task_id = Some(task.task_id.clone());
        self.guard.task_id = Some(task.task_id.clone());
        let now = Instant::now();
        // A max_wait past the clock's end waits as long as the clock can.
        let deadline = now
            .checked_add(self.options.max_wait)
            .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30));
        match tokio::time::timeout_at(deadline, self.follow(task)).await {
            Ok(outcome) => {
                // Ended, or failed on the way: a task still running is
                // cancelled by the guard.
                if outcome.is_ok() || self.last_status.is_terminal() {
                    self.guard.task_id = None;
                }
                outcome
            }
            Err(_) => {
                let task_id = self.task_id.clone().unwrap_or_default();
                let running = self.guard.task_id.take().is_some();
                let cancelled = running && self.client.can_cancel_tasks();
                if cancelled {
                    let options = RequestOptions::timeout(CANCEL_WAIT);
                    if let Err(error) = self.client.send_task_cancel(&task_id, options).await {
                        tracing::debug!(server = %self.client.server_name(), task = %task_id, %error, "tasks/cancel after the wait ran out failed");
                    }
                }
                let status = self.last_status.clone();
                let detail = format!(
                    "did not end within {:?} (last status `{status}`){}; raise TaskOptions::max_wait if it needs longer",
                    self.options.max_wait,
                    if cancelled {
                        ", so it was cancelled"
                    } else {
                        ""
                    },
                );
                Err(self.ended(&task_id, status, detail, None))
            }
        }
    }

    async fn follow(&mut self, mut task: Task) -> Result<CallToolResult> {
        loop {
            self.observe(&task);
            let answered = match (&task.status, self.flavor) {
                (TaskStatus::Cancelled, _) => {
                    let detail = match &task.status_message {
                        Some(message) => format!("was cancelled: {message}"),
                        None => "was cancelled".to_owned(),
                    };
                    return Err(self.ended(&task.task_id, TaskStatus::Cancelled, detail, None));
                }
                (TaskStatus::Completed | TaskStatus::Failed, Flavor::Extension) => {
                    return self.inline_outcome(task);
                }
                (
                    TaskStatus::Completed | TaskStatus::Failed | TaskStatus::InputRequired,
                    Flavor::Core,
                ) => return self.core_outcome(&task).await,
                (TaskStatus::InputRequired, Flavor::Extension) => self.answer(&task).await?,
                _ => false,
            };
            // After answering, look again soon: the server may need more.
            let interval = if answered {
                self.options.min_poll
            } else {
                self.options.interval(&task)
            };
            task = match self.pause(interval).await {
                Some(pushed) => pushed,
                None => self.poll(&task.task_id).await?,
            };
        }
    }

    /// Takes in a task state: its status, its `requestState`, and a status
    /// message for the progress callback.
    fn observe(&mut self, task: &Task) {
        self.last_status = task.status.clone();
        if self.flavor == Flavor::Extension {
            // The most recent state, or none if the last message had none.
            self.request_state = task.request_state.clone();
        }
        let seen = (task.status.clone(), task.status_message.clone());
        if self.reported.as_ref() != Some(&seen) {
            if let (Some(callback), Some(message)) = (&self.progress, &task.status_message) {
                callback(Progress {
                    progress: self.last_progress.0,
                    total: self.last_progress.1,
                    message: Some(message.clone()),
                });
            }
            self.reported = Some(seen);
        }
        if task.status.is_terminal() {
            self.guard.task_id = None;
        }
    }

    async fn poll(&mut self, task_id: &str) -> Result<Task> {
        let client = self.client;
        let params = GetTaskRequestParams {
            task_id: task_id.to_owned(),
            request_state: self.request_state.clone(),
            ..Default::default()
        };
        let options = self.options.per_request();
        let result = self
            .drive(client.task_request::<rq::GetTask>(&params, options))
            .await?;
        if result.task.task_id != task_id {
            return Err(Error::Protocol {
                server: client.inner.engine.server().clone(),
                detail: format!(
                    "it answered `tasks/get` for task `{task_id}` with task `{}`",
                    result.task.task_id
                ),
            });
        }
        Ok(result.task)
    }

    /// 2025-11-25: the outcome through `tasks/result`, which answers once
    /// the task has ended (the server's questions arrive meanwhile).
    async fn core_outcome(&mut self, task: &Task) -> Result<CallToolResult> {
        let client = self.client;
        let params = GetTaskPayloadRequestParams {
            task_id: task.task_id.clone(),
            ..Default::default()
        };
        // The maximum wait bounds it from outside.
        let options = RequestOptions::timeout(self.options.max_wait);
        let outcome = self
            .drive(client.request::<rq::GetTaskPayload>(&params, options))
            .await;
        match outcome {
            Ok(payload) => {
                self.guard.task_id = None;
                payload
                    .into_result::<CallToolResult>()
                    .map_err(|error| Error::Protocol {
                        server: client.inner.engine.server().clone(),
                        detail: format!(
                            "the `tasks/result` of task `{}` is not a `tools/call` result: {error}",
                            task.task_id
                        ),
                    })
            }
            // "Exactly what the underlying request would have returned".
            Err(Error::Server { error, .. }) => {
                self.guard.task_id = None;
                let detail = match &task.status_message {
                    Some(message) => format!("failed: {message} ({error})"),
                    None => format!("failed: {error}"),
                };
                Err(self.ended(&task.task_id, TaskStatus::Failed, detail, Some(error)))
            }
            Err(error) => Err(error),
        }
    }

    /// 2026-07-28: the outcome inlined in the task.
    fn inline_outcome(&self, task: Task) -> Result<CallToolResult> {
        let server = || self.client.inner.engine.server().clone();
        if task.status == TaskStatus::Completed {
            return match task.result_as::<CallToolResult>() {
                Ok(Some(result)) => Ok(result),
                Ok(None) => Err(Error::Protocol {
                    server: server(),
                    detail: format!("its completed task `{}` carries no result", task.task_id),
                }),
                Err(error) => Err(Error::Protocol {
                    server: server(),
                    detail: format!(
                        "the result of task `{}` is not a `tools/call` result: {error}",
                        task.task_id
                    ),
                }),
            };
        }
        let detail = match (&task.status_message, &task.error) {
            (Some(message), Some(error)) => format!("failed: {message} ({error})"),
            (Some(message), None) => format!("failed: {message}"),
            (None, Some(error)) => format!("failed: {error}"),
            (None, None) => "failed".to_owned(),
        };
        let error = task.error.map(Box::new);
        Err(self.ended(&task.task_id, TaskStatus::Failed, detail, error))
    }

    /// 2026-07-28: answers the input requests not answered yet with the
    /// installed handlers, through `tasks/update`. Returns whether it sent
    /// anything.
    async fn answer(&mut self, task: &Task) -> Result<bool> {
        let fresh: BTreeMap<String, InputRequest> = task
            .input_requests
            .iter()
            .flatten()
            .filter(|(key, _)| !self.answered.contains(*key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect();
        if fresh.is_empty() {
            return Ok(false);
        }
        let client = self.client;
        let keys: Vec<String> = fresh.keys().cloned().collect();
        let responses = self
            .drive(client.answer_inputs(rq::CallTool::METHOD, fresh, self.options.request.tag))
            .await?;
        let input_responses =
            serde_json::from_value(Value::Object(responses)).map_err(|source| {
                Error::Serialize {
                    method: rq::UpdateTask::METHOD.into(),
                    source,
                }
            })?;
        let params = UpdateTaskRequestParams {
            task_id: task.task_id.clone(),
            input_responses,
            request_state: self.request_state.clone(),
            ..Default::default()
        };
        let options = self.options.per_request();
        self.drive(client.task_request::<rq::UpdateTask>(&params, options))
            .await?;
        self.answered.extend(keys);
        Ok(true)
    }

    fn ended(
        &self,
        task_id: &str,
        status: TaskStatus,
        detail: String,
        error: Option<Box<ErrorObject>>,
    ) -> Error {
        Error::Task {
            server: self.client.inner.engine.server().clone(),
            task_id: task_id.to_owned(),
            method: rq::CallTool::METHOD.to_owned(),
            status,
            detail: format!("(tool `{}`) {detail}", self.tool),
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Both task protocols against scripted servers over the in-memory pair,
    //! with paused time (so intervals are exact).

    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use switchboard_types::ElicitResult;

    use super::*;
    use crate::client::handlers::{ElicitationHandler, FormRequest, HandlerContext, HandlerError};
    use crate::client::{ClientBuilder, EraMode};
    use crate::transport::BoxFuture;
    use crate::transport::memory::{self, MemoryEnd};

    const EXT_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";

    async fn recv(peer: &mut MemoryEnd) -> Value {
        serde_json::from_slice(&peer.recv().await.expect("the client hung up")).unwrap()
    }

    async fn expect(peer: &mut MemoryEnd, method: &str) -> Value {
        let message = recv(peer).await;
        assert_eq!(message["method"], method, "{message}");
        message
    }

    async fn reply(peer: &mut MemoryEnd, request: &Value, result: Value) {
        let response = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        peer.send(response.to_string()).await.unwrap();
    }

    async fn reply_error(peer: &mut MemoryEnd, request: &Value, code: i64, message: &str) {
        let response = json!({"jsonrpc": "2.0", "id": request["id"],
            "error": {"code": code, "message": message}});
        peer.send(response.to_string()).await.unwrap();
    }

    /// A task as a server writes it, with `fields` added.
    fn task(id: &str, status: &str, fields: Value) -> Value {
        let mut task = json!({"taskId": id, "status": status,
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z"});
        let object = task.as_object_mut().unwrap();
        object.extend(fields.as_object().unwrap().clone());
        task
    }

    fn text_of(result: &CallToolResult) -> String {
        serde_json::to_value(&result.content[0]).unwrap()["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn call(client: &Client, name: &str, options: TaskOptions) -> Result<CallToolResult> {
        client.call_tool_and_wait(&tool_call(name), options).await
    }

    fn tool_call(name: &str) -> CallToolRequestParams {
        CallToolRequestParams {
            name: name.into(),
            ..Default::default()
        }
    }

    async fn modern_client(capabilities: Value, builder: ClientBuilder) -> (Client, MemoryEnd) {
        let (client_end, mut server) = memory::pair();
        let connect = builder
            .name("scripted")
            .era_mode(EraMode::Modern)
            .connect(client_end.into_connector());
        let script = async {
            let probe = expect(&mut server, "server/discover").await;
            let discover = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": capabilities,
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}});
            reply(&mut server, &probe, discover).await;
        };
        let (client, ()) = tokio::join!(connect, script);
        (client.unwrap(), server)
    }

    async fn legacy_client(capabilities: Value, builder: ClientBuilder) -> (Client, MemoryEnd) {
        let (client_end, mut server) = memory::pair();
        let connect = builder
            .name("scripted")
            .era_mode(EraMode::Legacy)
            .connect(client_end.into_connector());
        let script = async {
            let init = expect(&mut server, "initialize").await;
            let result = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                "serverInfo": {"name": "s", "version": "1"}});
            reply(&mut server, &init, result).await;
            expect(&mut server, "notifications/initialized").await;
        };
        let (client, ()) = tokio::join!(connect, script);
        (client.unwrap(), server)
    }

    fn extension_caps() -> Value {
        json!({"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    }

    fn core_caps() -> Value {
        json!({"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}})
    }

    /// Asserts that `elapsed` is `expected`, give or take scheduling.
    fn assert_waited(elapsed: Duration, expected: Duration) {
        assert!(
            elapsed >= expected && elapsed < expected + Duration::from_millis(50),
            "waited {elapsed:?}, expected {expected:?}"
        );
    }

    struct Answers(&'static str);

    impl ElicitationHandler for Answers {
        fn elicit_form(
            &self,
            _context: HandlerContext,
            _request: FormRequest,
        ) -> BoxFuture<'static, std::result::Result<ElicitResult, HandlerError>> {
            let name = self.0;
            Box::pin(async move {
                Ok(ElicitResult::accept(Some(
                    json!({"name": name}).as_object().unwrap().clone(),
                )))
            })
        }
    }

    #[test]
    fn waiting_futures_are_send() {
        fn assert_send<T: Send>(_: T) {}
        let client: Option<Client> = None;
        if let Some(client) = client {
            assert_send(call(&client, "x", TaskOptions::new()));
            assert_send(client.get_task("t"));
            assert_send(client.cancel_task("t"));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn core_task_is_polled_at_its_interval_then_fetched() {
        let (client, mut server) = legacy_client(core_caps(), Client::builder()).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options = TaskOptions::new()
            .ttl(Duration::from_secs(60))
            .on_progress(move |p| sink.lock().unwrap().push(p));
        let script = async {
            // The tool is not known yet: its taskSupport is looked up.
            let list = expect(&mut server, "tools/list").await;
            let tools = json!({"tools": [{"name": "slow", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "optional"}}]});
            reply(&mut server, &list, tools).await;
            let call = expect(&mut server, "tools/call").await;
            assert_eq!(call["params"]["task"], json!({"ttl": 60000}));
            let token = call["params"]["_meta"]["progressToken"].clone();
            assert!(token.is_i64(), "{call}");
            let created =
                json!({"task": task("t1", "working", json!({"ttl": 60000, "pollInterval": 2000}))});
            reply(&mut server, &call, created).await;
            let start = Instant::now();
            // Progress on the call's token outlives the call's response.
            let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1, "total": 4}});
            server.send(progress.to_string()).await.unwrap();

            let get = expect(&mut server, "tasks/get").await;
            assert_waited(start.elapsed(), Duration::from_secs(2));
            assert_eq!(get["params"]["taskId"], "t1");
            let working = task(
                "t1",
                "working",
                json!({"pollInterval": 3000, "statusMessage": "half way"}),
            );
            reply(&mut server, &get, working).await;
            let start = Instant::now();
            let get = expect(&mut server, "tasks/get").await;
            assert_waited(start.elapsed(), Duration::from_secs(3));
            reply(&mut server, &get, task("t1", "completed", json!({}))).await;
            let fetch = expect(&mut server, "tasks/result").await;
            assert_eq!(fetch["params"]["taskId"], "t1");
            let result = json!({"content": [{"type": "text", "text": "done"}],
                "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}});
            reply(&mut server, &fetch, result).await;
        };
        let (result, ()) = tokio::join!(call(&client, "slow", options), script);
        assert_eq!(text_of(&result.unwrap()), "done");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                Progress {
                    progress: 1.0,
                    total: Some(4.0),
                    message: None
                },
                Progress {
                    progress: 1.0,
                    total: Some(4.0),
                    message: Some("half way".into())
                },
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn extension_task_is_polled_and_its_input_answered_once() {
        let builder = Client::builder().elicitation(Answers("Luca"));
        let (client, mut server) = modern_client(extension_caps(), builder).await;
        let ask = json!({"name": {"method": "elicitation/create", "params": {"mode": "form",
            "message": "Your name?", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string"}}, "required": ["name"]}}}});
        let script = async {
            let call = expect(&mut server, "tools/call").await;
            let meta = &call["params"]["_meta"];
            // The extension is declared on this call, beside what the
            // handlers declare, and the other per-request fields stay.
            assert_eq!(
                meta[EXT_CAPS]["extensions"]["io.modelcontextprotocol/tasks"],
                json!({})
            );
            assert!(meta[EXT_CAPS]["elicitation"].is_object(), "{meta}");
            assert_eq!(
                meta["io.modelcontextprotocol/protocolVersion"],
                "2026-07-28"
            );
            assert!(call["params"].get("task").is_none());
            let mut created = task(
                "t2",
                "working",
                json!({"ttlMs": 60000, "pollIntervalMs": 500, "requestState": "s1"}),
            );
            created["resultType"] = json!("task");
            reply(&mut server, &call, created).await;
            let start = Instant::now();

            let get = expect(&mut server, "tasks/get").await;
            assert_waited(start.elapsed(), Duration::from_millis(500));
            assert_eq!(get["params"]["taskId"], "t2");
            assert_eq!(get["params"]["requestState"], "s1");
            assert!(
                get["params"]["_meta"][EXT_CAPS]["extensions"]["io.modelcontextprotocol/tasks"]
                    .is_object()
            );
            let mut waiting = task(
                "t2",
                "input_required",
                json!({"pollIntervalMs": 500, "requestState": "s2", "inputRequests": ask}),
            );
            waiting["resultType"] = json!("complete");
            reply(&mut server, &get, waiting.clone()).await;

            let update = expect(&mut server, "tasks/update").await;
            assert_eq!(update["params"]["taskId"], "t2");
            assert_eq!(update["params"]["requestState"], "s2");
            assert_eq!(
                update["params"]["inputResponses"]["name"]["action"],
                "accept"
            );
            assert_eq!(
                update["params"]["inputResponses"]["name"]["content"]["name"],
                "Luca"
            );
            reply(&mut server, &update, json!({"resultType": "complete"})).await;
            let start = Instant::now();

            // The server has not taken the answer in yet: the same key is
            // not answered twice.
            let get = expect(&mut server, "tasks/get").await;
            assert_waited(start.elapsed(), DEFAULT_MIN_POLL);
            waiting["requestState"] = json!("s3");
            reply(&mut server, &get, waiting).await;
            let get = expect(&mut server, "tasks/get").await;
            assert_eq!(get["params"]["requestState"], "s3");
            let done = task(
                "t2",
                "completed",
                json!({"resultType": "complete",
                "result": {"content": [{"type": "text", "text": "Hello, Luca!"}], "isError": false}}),
            );
            reply(&mut server, &get, done).await;
        };
        let (result, ()) = tokio::join!(call(&client, "hello", TaskOptions::new()), script);
        assert_eq!(text_of(&result.unwrap()), "Hello, Luca!");
    }

    #[tokio::test(start_paused = true)]
    async fn an_immediate_result_needs_no_task() {
        let (client, mut server) = modern_client(extension_caps(), Client::builder()).await;
        let script = async {
            let call = expect(&mut server, "tools/call").await;
            reply(
                &mut server,
                &call,
                json!({"content": [{"type": "text", "text": "now"}]}),
            )
            .await;
        };
        let (result, ()) = tokio::join!(call(&client, "quick", TaskOptions::new()), script);
        assert_eq!(text_of(&result.unwrap()), "now");
    }

    /// Progress the server sent right before its result reaches the
    /// callback before the call returns, though both arrive together.
    #[tokio::test(start_paused = true)]
    async fn progress_sent_before_the_result_is_delivered_before_the_call_returns() {
        let (client, mut server) = modern_client(extension_caps(), Client::builder()).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let options =
            TaskOptions::new().on_progress(move |p| sink.lock().unwrap().push(p.progress));
        let script = async {
            let call = expect(&mut server, "tools/call").await;
            let token = call["params"]["_meta"]["progressToken"].clone();
            for step in [1, 2, 3] {
                let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": step, "total": 3}});
                server.send(progress.to_string()).await.unwrap();
            }
            reply(
                &mut server,
                &call,
                json!({"content": [{"type": "text", "text": "done"}]}),
            )
            .await;
        };
        let (result, ()) = tokio::join!(call(&client, "steps", options), script);
        assert_eq!(text_of(&result.unwrap()), "done");
        assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0]);
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_wait_cancels_the_task() {
        let (client, mut server) = modern_client(extension_caps(), Client::builder()).await;
        let call = call(&client, "slow", TaskOptions::new());
        let script = async {
            let call = expect(&mut server, "tools/call").await;
            let mut created = task("t3", "working", json!({"pollIntervalMs": 1000}));
            created["resultType"] = json!("task");
            reply(&mut server, &call, created).await;
            // Not answered: the caller gives up while it is in flight.
            expect(&mut server, "tasks/get").await
        };
        let get = tokio::select! {
            _ = call => panic!("the call ended"),
            get = script => get,
        };
        // Both, in either order (the time limit turns a missing one into a
        // failure instead of a hang).
        let (mut cancelled_get, mut cancelled_task) = (false, false);
        while !(cancelled_get && cancelled_task) {
            let message = tokio::time::timeout(Duration::from_secs(60), recv(&mut server));
            let message = message.await.expect("tasks/cancel was not sent");
            match message["method"].as_str() {
                Some("notifications/cancelled") => {
                    assert_eq!(message["params"]["requestId"], get["id"]);
                    cancelled_get = true;
                }
                Some("tasks/cancel") => {
                    assert_eq!(message["params"]["taskId"], "t3");
                    assert!(message["params"]["_meta"][EXT_CAPS]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
                    reply(&mut server, &message, json!({"resultType": "complete"})).await;
                    cancelled_task = true;
                }
                _ => panic!("unexpected {message}"),
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn running_out_of_time_cancels_the_task() {
        let (client, mut server) = modern_client(extension_caps(), Client::builder()).await;
        let options = TaskOptions::new().max_wait(Duration::from_secs(5));
        let script = async {
            let call = expect(&mut server, "tools/call").await;
            let mut created = task("t5", "working", json!({"pollIntervalMs": 2000}));
            created["resultType"] = json!("task");
            reply(&mut server, &call, created).await;
            for _ in 0..2 {
                let get = expect(&mut server, "tasks/get").await;
                reply(
                    &mut server,
                    &get,
                    task("t5", "working", json!({"pollIntervalMs": 2000})),
                )
                .await;
            }
            let cancel = expect(&mut server, "tasks/cancel").await;
            assert_eq!(cancel["params"]["taskId"], "t5");
            reply(&mut server, &cancel, json!({})).await;
        };
        let (result, ()) = tokio::join!(call(&client, "slow", options), script);
        let error = result.unwrap_err();
        assert!(error.is_timeout(), "{error}");
        assert!(
            matches!(&error, Error::Task { status: TaskStatus::Working, task_id, .. } if task_id == "t5"),
            "{error:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_task_is_an_error_naming_task_and_server() {
        let (client, mut server) = modern_client(extension_caps(), Client::builder()).await;
        let script = async {
            let call = expect(&mut server, "tools/call").await;
            let mut created = task("t4", "working", json!({}));
            created["resultType"] = json!("task");
            reply(&mut server, &call, created).await;
            let get = expect(&mut server, "tasks/get").await;
            let failed = task(
                "t4",
                "failed",
                json!({"statusMessage": "Tool execution failed",
                "error": {"code": -32603, "message": "rate limit exceeded"}}),
            );
            reply(&mut server, &get, failed).await;
            // No tasks/cancel for an ended task: the next request is the caller's.
            let next = expect(&mut server, "tasks/get").await;
            assert_eq!(next["params"]["taskId"], "other");
            reply_error(&mut server, &next, -32602, "Task not found").await;
        };
        let calls = async {
            let error = call(&client, "flaky", TaskOptions::new())
                .await
                .unwrap_err();
            let _ = client.get_task("other").await;
            error
        };
        let (error, ()) = tokio::join!(calls, script);
        assert!(
            matches!(&error, Error::Task { status: TaskStatus::Failed, task_id, .. } if task_id == "t4"),
            "{error:?}"
        );
        assert_eq!(error.code(), Some(-32603));
        assert!(!error.is_timeout());
        let message = error.to_string();
        for part in ["scripted", "t4", "flaky", "rate limit exceeded"] {
            assert!(message.contains(part), "{message} lacks {part}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn core_failed_and_cancelled_tasks_are_errors() {
        let (client, mut server) = legacy_client(core_caps(), Client::builder()).await;
        let script = async {
            let list = expect(&mut server, "tools/list").await;
            let tools = json!({"tools": [{"name": "must", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "required"}}]});
            reply(&mut server, &list, tools).await;
            // Failed: tasks/result hands back the underlying error.
            let call = expect(&mut server, "tools/call").await;
            assert!(call["params"]["task"].is_object());
            reply(
                &mut server,
                &call,
                json!({"task": task("f1", "working", json!({}))}),
            )
            .await;
            let get = expect(&mut server, "tasks/get").await;
            reply(
                &mut server,
                &get,
                task("f1", "failed", json!({"statusMessage": "boom"})),
            )
            .await;
            let fetch = expect(&mut server, "tasks/result").await;
            reply_error(&mut server, &fetch, -32603, "boom").await;
            // Cancelled: nothing to fetch.
            let call = expect(&mut server, "tools/call").await;
            reply(
                &mut server,
                &call,
                json!({"task": task("c1", "working", json!({}))}),
            )
            .await;
            let get = expect(&mut server, "tasks/get").await;
            reply(&mut server, &get, task("c1", "cancelled", json!({}))).await;
            let next = expect(&mut server, "tools/call").await;
            reply(
                &mut server,
                &next,
                json!({"task": task("d1", "completed", json!({}))}),
            )
            .await;
            let fetch = expect(&mut server, "tasks/result").await;
            // isError is data, even when the task says failed.
            reply(
                &mut server,
                &fetch,
                json!({"content": [{"type": "text", "text": "bad input"}], "isError": true}),
            )
            .await;
        };
        let calls = async {
            let options = TaskOptions::new;
            let failed = call(&client, "must", options()).await;
            let cancelled = call(&client, "must", options()).await;
            let data = call(&client, "must", options()).await;
            (failed, cancelled, data)
        };
        let ((failed, cancelled, data), ()) = tokio::join!(calls, script);
        let failed = failed.unwrap_err();
        assert!(
            matches!(
                &failed,
                Error::Task {
                    status: TaskStatus::Failed,
                    ..
                }
            ),
            "{failed:?}"
        );
        assert_eq!(failed.code(), Some(-32603));
        let cancelled = cancelled.unwrap_err();
        assert!(
            matches!(&cancelled, Error::Task { status: TaskStatus::Cancelled, task_id, .. } if task_id == "c1"),
            "{cancelled:?}"
        );
        assert!(
            cancelled.to_string().contains("was cancelled"),
            "{cancelled}"
        );
        assert!(data.unwrap().is_error());
    }

    #[tokio::test(start_paused = true)]
    async fn poll_interval_is_clamped_to_the_bounds() {
        let (client, mut server) = modern_client(extension_caps(), Client::builder()).await;
        // Each step: the interval suggested before a poll, and the wait expected.
        async fn run(server: &mut MemoryEnd, steps: &[(Option<u64>, Duration)]) {
            let call = expect(server, "tools/call").await;
            let interval =
                |ms: Option<u64>| ms.map_or(json!({}), |ms| json!({"pollIntervalMs": ms}));
            let mut created = task("p", "working", interval(steps[0].0));
            created["resultType"] = json!("task");
            reply(server, &call, created).await;
            for (i, (_, expected)) in steps.iter().enumerate() {
                let start = Instant::now();
                let get = expect(server, "tasks/get").await;
                assert_waited(start.elapsed(), *expected);
                let answer = match steps.get(i + 1) {
                    Some((next, _)) => task("p", "working", interval(*next)),
                    None => task("p", "completed", json!({"result": {"content": []}})),
                };
                reply(server, &get, answer).await;
            }
        }
        let ms = Duration::from_millis;
        let secs = Duration::from_secs;
        let default_steps = [
            (Some(1), DEFAULT_MIN_POLL),
            (Some(3_600_000), DEFAULT_MAX_POLL),
            (None, DEFAULT_POLL),
            (Some(1500), ms(1500)),
        ];
        let (result, ()) = tokio::join!(
            call(&client, "p", TaskOptions::new()),
            run(&mut server, &default_steps)
        );
        result.unwrap();
        let options = TaskOptions::new().poll_bounds(secs(2), secs(4));
        let custom_steps = [
            (Some(1), secs(2)),
            (Some(3_600_000), secs(4)),
            (Some(3000), secs(3)),
        ];
        let (result, ()) =
            tokio::join!(call(&client, "p", options), run(&mut server, &custom_steps));
        result.unwrap();
        // Bounds the wrong way round are refused before anything is sent.
        let error = call(
            &client,
            "p",
            TaskOptions::new().poll_bounds(secs(5), secs(1)),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                error,
                Error::Config {
                    setting: "poll_bounds",
                    ..
                }
            ),
            "{error}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_declared_support_no_task_method_is_sent() {
        // Session era, no `tasks` capability.
        let (client, mut server) = legacy_client(json!({"tools": {}}), Client::builder()).await;
        assert!(matches!(
            client.get_task("t").await,
            Err(Error::CapabilityMissing { .. })
        ));
        assert!(matches!(
            client.list_tasks().await,
            Err(Error::CapabilityMissing { .. })
        ));
        assert!(matches!(
            client.cancel_task("t").await,
            Err(Error::CapabilityMissing { .. })
        ));
        assert!(matches!(
            client.task_result("t", RequestOptions::default()).await,
            Err(Error::CapabilityMissing { .. })
        ));
        let update = UpdateTaskRequestParams::default();
        assert!(matches!(
            client.update_task(&update).await,
            Err(Error::NotInThisEra { .. })
        ));
        let script = async {
            // Straight to an ordinary call: no tools/list, no `task`.
            let call = expect(&mut server, "tools/call").await;
            assert!(call["params"].get("task").is_none(), "{call}");
            reply(
                &mut server,
                &call,
                json!({"content": [{"type": "text", "text": "plain"}]}),
            )
            .await;
        };
        let (result, ()) = tokio::join!(call(&client, "slow", TaskOptions::new()), script);
        assert_eq!(text_of(&result.unwrap()), "plain");

        // Session era with tasks, but a tool that forbids them.
        let (client, mut server) = legacy_client(core_caps(), Client::builder()).await;
        let script = async {
            let list = expect(&mut server, "tools/list").await;
            let tools = json!({"tools": [{"name": "quick", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "forbidden"}}]});
            reply(&mut server, &list, tools).await;
            let call = expect(&mut server, "tools/call").await;
            assert!(call["params"].get("task").is_none(), "{call}");
            reply(&mut server, &call, json!({"content": []})).await;
        };
        let (result, ()) = tokio::join!(call(&client, "quick", TaskOptions::new()), script);
        result.unwrap();

        // Stateless era without the extension.
        let (client, mut server) = modern_client(json!({"tools": {}}), Client::builder()).await;
        assert!(matches!(
            client.get_task("t").await,
            Err(Error::CapabilityMissing { .. })
        ));
        assert!(matches!(
            client.task_result("t", RequestOptions::default()).await,
            Err(Error::NotInThisEra { .. })
        ));
        assert!(matches!(
            client.list_tasks().await,
            Err(Error::NotInThisEra { .. })
        ));
        let script = async {
            let call = expect(&mut server, "tools/call").await;
            let caps = &call["params"]["_meta"][EXT_CAPS];
            assert!(caps.is_object(), "{call}");
            assert!(caps.get("extensions").is_none(), "{call}");
            reply(&mut server, &call, json!({"content": []})).await;
        };
        let (result, ()) = tokio::join!(call(&client, "slow", TaskOptions::new()), script);
        result.unwrap();
    }
}
