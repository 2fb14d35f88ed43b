//! Tasks: long-running requests polled for their outcome.
//!
//! Two shapes exist. 2025-11-25 has tasks in the core protocol: the client
//! asks for one with `params.task`, the server answers
//! `{"task": {...}}`, and `tasks/get|result|list|cancel` follow. 2026-07-28
//! moves them to the `io.modelcontextprotocol/tasks` extension (SEP-2663): the
//! server may answer any `tools/call` with `resultType: "task"` and the task
//! fields inline, and `tasks/get|update|cancel` follow. [`Task`] holds the
//! union of both.

use std::time::Duration;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::jsonrpc::ErrorObject;
use crate::meta::{JsonObject, ResultType};
use crate::mrtr::{InputRequests, InputResponses};
use crate::util::{from_object, take};

/// The identifier of the tasks extension (2026-07-28), a key of
/// `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

string_enum! {
    /// Where a task is in its life.
    #[derive(Default)]
    pub enum TaskStatus {
        /// Running.
        #[default]
        Working => "working",
        /// Waiting for the client (see [`Task::input_requests`] in the extension).
        InputRequired => "input_required",
        /// Finished; the result is ready.
        Completed => "completed",
        /// Finished with an error.
        Failed => "failed",
        /// Cancelled.
        Cancelled => "cancelled",
    }
}

impl TaskStatus {
    /// Whether the task will not change any more.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// `params.task`: ask for task execution (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// How long to keep the task after creation, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// `_meta["io.modelcontextprotocol/related-task"]` (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTaskMetadata {
    /// The task a message belongs to.
    pub task_id: String,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// A task's state: the union of 2025-11-25 and the 2026-07-28 extension.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id.
    pub task_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// A human-readable note on the status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last change.
    pub last_updated_at: String,
    /// Retention from creation in milliseconds; `Some(None)` is `null`,
    /// unlimited (2025-11-25).
    #[serde(
        default,
        deserialize_with = "crate::util::double_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttl: Option<Option<u64>>,
    /// Retention from creation in seconds; `Some(None)` is `null`,
    /// unlimited (extension).
    #[serde(
        default,
        deserialize_with = "crate::util::double_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttl_seconds: Option<Option<u64>>,
    /// Retention from creation in milliseconds; `Some(None)` is `null`,
    /// unlimited (the extension's later drafts).
    #[serde(
        default,
        deserialize_with = "crate::util::double_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttl_ms: Option<Option<u64>>,
    /// Suggested polling interval in milliseconds (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
    /// Suggested polling interval in milliseconds (extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_interval_milliseconds: Option<u64>,
    /// Suggested polling interval in milliseconds (the extension's later
    /// drafts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// Opaque state to echo on the next `tasks/*` request (extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// What the server needs, when `input_required` (extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// The final result, when `completed` (extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// The JSON-RPC error, when `failed` (extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl Task {
    /// The suggested polling interval, whichever revision named it.
    pub fn poll_interval(&self) -> Option<Duration> {
        self.poll_interval_ms
            .or(self.poll_interval_milliseconds)
            .or(self.poll_interval)
            .map(Duration::from_millis)
    }

    /// Retention from creation: `Some(None)` for unlimited, `None` if not said.
    pub fn retention(&self) -> Option<Option<Duration>> {
        if let Some(ms) = self.ttl_ms {
            return Some(ms.map(Duration::from_millis));
        }
        if let Some(seconds) = self.ttl_seconds {
            return Some(seconds.map(Duration::from_secs));
        }
        self.ttl.map(|ms| ms.map(Duration::from_millis))
    }

    /// The final result parsed as `T` (extension, `completed` tasks).
    ///
    /// # Errors
    /// When there is no result or it is not a `T`.
    pub fn result_as<T: DeserializeOwned>(&self) -> Result<Option<T>, serde_json::Error> {
        self.result
            .as_ref()
            .map(|result| T::deserialize(&Value::Object(result.clone())))
            .transpose()
    }
}

/// A server's answer that a request now runs as a task.
///
/// Written nested (`{"task": {...}}`, 2025-11-25) unless `result_type` is
/// [`ResultType::Task`], in which case the task fields are inline (extension).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CreateTaskResult {
    /// `task` in the extension; absent in 2025-11-25.
    pub result_type: Option<ResultType>,
    /// The new task.
    pub task: Task,
    /// Result metadata.
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, beside the task (nested form only;
    /// in the inline form they land in `task.extra`).
    pub extra: crate::Extra,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreateTaskRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'a ResultType>,
    task: &'a Task,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a JsonObject>,
    #[serde(flatten)]
    extra: &'a crate::Extra,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InlineTaskRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'a ResultType>,
    #[serde(flatten)]
    task: &'a Task,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a JsonObject>,
    #[serde(flatten)]
    extra: &'a crate::Extra,
}

impl Serialize for CreateTaskResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.result_type == Some(ResultType::Task) {
            InlineTaskRef {
                result_type: self.result_type.as_ref(),
                task: &self.task,
                meta: self.meta.as_ref(),
                extra: &self.extra,
            }
            .serialize(serializer)
        } else {
            CreateTaskRef {
                result_type: self.result_type.as_ref(),
                task: &self.task,
                meta: self.meta.as_ref(),
                extra: &self.extra,
            }
            .serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for CreateTaskResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = JsonObject::deserialize(deserializer)?;
        let result_type = take(&mut map, "resultType")
            .map(|v| ResultType::deserialize(v).map_err(de::Error::custom))
            .transpose()?;
        let meta = match take(&mut map, "_meta") {
            Some(Value::Object(meta)) => Some(meta),
            Some(_) => return Err(de::Error::custom("`_meta` is not an object")),
            None => None,
        };
        let nested =
            !map.contains_key("taskId") && matches!(map.get("task"), Some(Value::Object(_)));
        if nested {
            let Some(Value::Object(task)) = take(&mut map, "task") else {
                unreachable!("checked above")
            };
            Ok(CreateTaskResult {
                result_type,
                task: from_object(task, "task")?,
                meta,
                extra: map.into(),
            })
        } else {
            Ok(CreateTaskResult {
                result_type,
                task: from_object(map, "task")?,
                meta,
                extra: crate::Extra::new(),
            })
        }
    }
}

/// Params of `tasks/get`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// The latest `requestState` seen for the task (extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The result of `tasks/get`: the task, inline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskResult {
    /// `complete` in the extension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The task (unknown fields land in `task.extra`).
    #[serde(flatten)]
    pub task: Task,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// Params of `tasks/cancel`.
pub type CancelTaskRequestParams = GetTaskRequestParams;

/// The result of `tasks/cancel`: the task (2025-11-25) or an empty
/// acknowledgement (extension).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskResult {
    /// `complete` in the extension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// The task's fields (2025-11-25) and anything else.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl CancelTaskResult {
    /// The task, if the server sent one (2025-11-25).
    pub fn task(&self) -> Option<Task> {
        Task::deserialize(&Value::Object(self.extra.to_object())).ok()
    }
}

/// Params of `tasks/result` (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPayloadRequestParams {
    /// The task.
    pub task_id: String,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The result of `tasks/result` (2025-11-25): the original request's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GetTaskPayloadResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// The original result's fields.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl GetTaskPayloadResult {
    /// The payload as the original request's result type, e.g. [`CallToolResult`](crate::CallToolResult).
    ///
    /// # Errors
    /// When the payload is not a `T`.
    pub fn into_result<T: DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        let mut map = self.extra.to_object();
        if let Some(meta) = self.meta {
            map.insert("_meta".to_owned(), Value::Object(meta));
        }
        serde_json::from_value(Value::Object(map))
    }
}

/// The result of `tasks/list` (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// This page of tasks.
    pub tasks: Vec<Task>,
    /// The cursor for the next page; `None` on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Params of `tasks/update` (extension): answers to a task's input requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Answers, keyed like the task's `inputRequests`.
    pub input_responses: InputResponses,
    /// The latest `requestState` seen for the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Params of `notifications/tasks/status`: the task, inline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskStatusNotificationParams {
    /// The task (unknown fields land in `task.extra`).
    #[serde(flatten)]
    pub task: Task,
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn create_task_result_keeps_its_form() {
        let nested = json!({"task": {"taskId": "t", "status": "working",
            "createdAt": "a", "lastUpdatedAt": "b", "ttl": null, "pollInterval": 500},
            "_meta": {"k": 1}});
        let parsed: CreateTaskResult = serde_json::from_value(nested.clone()).unwrap();
        assert_eq!(parsed.task.ttl, Some(None));
        assert_eq!(
            parsed.task.poll_interval(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(serde_json::to_value(&parsed).unwrap(), nested);

        let inline = json!({"resultType": "task", "taskId": "t", "status": "working",
            "createdAt": "a", "lastUpdatedAt": "b", "ttlSeconds": 60,
            "pollIntervalMilliseconds": 5000, "requestState": "s"});
        let later: Task = serde_json::from_value(json!({"taskId": "t", "status": "working",
            "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": 90000, "pollIntervalMs": 250}))
        .unwrap();
        assert_eq!(later.poll_interval(), Some(Duration::from_millis(250)));
        assert_eq!(later.retention(), Some(Some(Duration::from_secs(90))));
        let parsed: CreateTaskResult = serde_json::from_value(inline.clone()).unwrap();
        assert_eq!(parsed.task.retention(), Some(Some(Duration::from_secs(60))));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), inline);
    }

    #[test]
    fn get_task_result_carries_input_requests() {
        let raw = json!({"resultType": "complete", "taskId": "t", "status": "input_required",
            "createdAt": "a", "lastUpdatedAt": "b", "ttlSeconds": 3600,
            "inputRequests": {"name": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "m",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}},
            "future": true});
        let parsed: GetTaskResult = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(parsed.task.status, TaskStatus::InputRequired);
        assert_eq!(
            parsed.task.input_requests.as_ref().map(|r| r.len()),
            Some(1)
        );
        assert_eq!(parsed.task.extra.value("future"), Some(json!(true)));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), raw);
    }
}
