//! Multi round-trip requests (2026-07-28, SEP-2322).
//!
//! Instead of sending `sampling/createMessage`, `elicitation/create` or
//! `roots/list` to the client, a server answers `tools/call`,
//! `prompts/get` or `resources/read` with an [`InputRequiredResult`]. The
//! client fulfils each [`InputRequest`] and retries the original request
//! with the [`InputResponses`] and the echoed `requestState`.

use std::collections::BTreeMap;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::elicitation::{ElicitRequestParams, ElicitResult};
use crate::meta::{EmptyParams, JsonObject, ResultType};
use crate::methods;
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};
use crate::tasks::CreateTaskResult;
use crate::util::{from_object, take};

/// Input requests keyed by server-chosen ids.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// Input responses keyed by the ids of the [`InputRequests`] they answer.
pub type InputResponses = BTreeMap<String, InputResponse>;

#[derive(Serialize)]
struct MethodTagged<'a, P: Serialize> {
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
    #[serde(flatten)]
    extra: &'a crate::Extra,
}

/// Splits `{method, params, ...}` after checking `method`.
fn split_request<P: DeserializeOwned, E: de::Error>(
    mut map: JsonObject,
    method: &str,
) -> Result<(Option<P>, JsonObject), E> {
    match take(&mut map, "method") {
        Some(Value::String(m)) if m == method => {}
        Some(other) => {
            return Err(E::custom(format!(
                "expected method {method:?}, found {other}"
            )));
        }
        None => return Err(E::custom(format!("missing method (expected {method:?})"))),
    }
    let params = match take(&mut map, "params") {
        Some(Value::Object(params)) => Some(from_object(params, &format!("{method} params"))?),
        Some(_) => return Err(E::custom(format!("{method} params are not an object"))),
        None => None,
    };
    Ok((params, map))
}

macro_rules! embedded_request {
    ($(#[$meta:meta])* $name:ident, $params:ty, $method:path) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            /// The request's params.
            pub params: $params,
            /// Fields this crate does not know (e.g. an `id`), kept.
            pub extra: crate::Extra,
        }

        impl $name {
            /// A request with these params.
            pub fn new(params: $params) -> Self {
                Self { params, extra: crate::Extra::new() }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                MethodTagged { method: $method, params: Some(&self.params), extra: &self.extra }
                    .serialize(serializer)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let map = JsonObject::deserialize(deserializer)?;
                Self::from_map(map)
            }
        }

        impl $name {
            fn from_map<E: de::Error>(map: JsonObject) -> Result<Self, E> {
                let (params, extra) = split_request(map, $method)?;
                let params =
                    params.ok_or_else(|| E::custom(concat!("missing params for ", stringify!($name))))?;
                Ok(Self { params, extra: extra.into() })
            }
        }
    };
}

embedded_request!(
    /// A `sampling/createMessage` request as carried in [`InputRequests`].
    CreateMessageRequest,
    CreateMessageRequestParams,
    methods::SAMPLING_CREATE_MESSAGE
);

embedded_request!(
    /// An `elicitation/create` request as carried in [`InputRequests`].
    ElicitRequest,
    ElicitRequestParams,
    methods::ELICITATION_CREATE
);

/// A `roots/list` request as carried in [`InputRequests`]; params are optional.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListRootsRequest {
    /// The request's params, if any.
    pub params: Option<EmptyParams>,
    /// Fields this crate does not know (e.g. an `id`), kept.
    pub extra: crate::Extra,
}

impl ListRootsRequest {
    fn from_map<E: de::Error>(map: JsonObject) -> Result<Self, E> {
        let (params, extra) = split_request(map, methods::ROOTS_LIST)?;
        Ok(Self {
            params,
            extra: extra.into(),
        })
    }
}

impl Serialize for ListRootsRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        MethodTagged {
            method: methods::ROOTS_LIST,
            params: self.params.as_ref(),
            extra: &self.extra,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ListRootsRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::from_map(JsonObject::deserialize(deserializer)?)
    }
}

/// One thing a server needs from the client before it can finish.
// Transient values, read once and dropped: boxing would only cost callers.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum InputRequest {
    /// Sample from the client's LLM.
    CreateMessage(CreateMessageRequest),
    /// List the client's roots.
    ListRoots(ListRootsRequest),
    /// Ask the user.
    Elicit(ElicitRequest),
    /// A method this crate does not know, kept verbatim.
    Other(JsonObject),
}

impl InputRequest {
    /// The request's method.
    pub fn method(&self) -> Option<&str> {
        match self {
            InputRequest::CreateMessage(_) => Some(methods::SAMPLING_CREATE_MESSAGE),
            InputRequest::ListRoots(_) => Some(methods::ROOTS_LIST),
            InputRequest::Elicit(_) => Some(methods::ELICITATION_CREATE),
            InputRequest::Other(map) => map.get("method").and_then(Value::as_str),
        }
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            InputRequest::CreateMessage(r) => r.serialize(serializer),
            InputRequest::ListRoots(r) => r.serialize(serializer),
            InputRequest::Elicit(r) => r.serialize(serializer),
            InputRequest::Other(map) => map.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        let method = match map.get("method") {
            Some(Value::String(method)) => method.as_str(),
            Some(_) => return Err(de::Error::custom("input request `method` is not a string")),
            None => return Err(de::Error::custom("input request without `method`")),
        };
        match method {
            methods::SAMPLING_CREATE_MESSAGE => {
                CreateMessageRequest::from_map(map).map(Self::CreateMessage)
            }
            methods::ROOTS_LIST => ListRootsRequest::from_map(map).map(Self::ListRoots),
            methods::ELICITATION_CREATE => ElicitRequest::from_map(map).map(Self::Elicit),
            _ => Ok(Self::Other(map)),
        }
    }
}

/// The client's answer to one [`InputRequest`].
///
/// Told apart by field on the way in: `action` is an elicitation result,
/// `roots` a roots list, `model` a sampling result; anything else is kept
/// as `Other`.
// Transient values, read once and dropped: boxing would only cost callers.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum InputResponse {
    /// Answers a [`CreateMessageRequest`].
    CreateMessage(CreateMessageResult),
    /// Answers a [`ListRootsRequest`].
    ListRoots(ListRootsResult),
    /// Answers an [`ElicitRequest`].
    Elicit(ElicitResult),
    /// A shape this crate does not know, kept verbatim.
    Other(JsonObject),
}

impl From<CreateMessageResult> for InputResponse {
    fn from(value: CreateMessageResult) -> Self {
        InputResponse::CreateMessage(value)
    }
}

impl From<ListRootsResult> for InputResponse {
    fn from(value: ListRootsResult) -> Self {
        InputResponse::ListRoots(value)
    }
}

impl From<ElicitResult> for InputResponse {
    fn from(value: ElicitResult) -> Self {
        InputResponse::Elicit(value)
    }
}

impl Serialize for InputResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            InputResponse::CreateMessage(r) => r.serialize(serializer),
            InputResponse::ListRoots(r) => r.serialize(serializer),
            InputResponse::Elicit(r) => r.serialize(serializer),
            InputResponse::Other(map) => map.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        if map.contains_key("action") {
            from_object(map, "elicitation result").map(Self::Elicit)
        } else if map.contains_key("roots") {
            from_object(map, "roots list").map(Self::ListRoots)
        } else if map.contains_key("model") {
            from_object(map, "sampling result").map(Self::CreateMessage)
        } else {
            Ok(Self::Other(map))
        }
    }
}

/// An interim result: the server needs input, then a retry (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// [`ResultType::InputRequired`].
    pub result_type: ResultType,
    /// What the server needs; answer every entry in the retry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state to echo in the retry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl Default for InputRequiredResult {
    fn default() -> Self {
        Self {
            result_type: ResultType::InputRequired,
            input_requests: None,
            request_state: None,
            meta: None,
            extra: crate::Extra::new(),
        }
    }
}

/// What a request that may take more than one round trip returned.
///
/// Picked by `resultType`: `input_required` and `task` have their own
/// shapes; a 2025-11-25 task answer (no `resultType`, a `task` object) is a
/// [`RequestOutcome::Task`] too; anything else is parsed as `T`.
// Transient values, read once and dropped: boxing would only cost callers.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum RequestOutcome<T> {
    /// The final result.
    Complete(T),
    /// Answer the input requests and retry.
    InputRequired(InputRequiredResult),
    /// The request runs as a task; poll it.
    Task(CreateTaskResult),
}

impl<T: Serialize> Serialize for RequestOutcome<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestOutcome::Complete(r) => r.serialize(serializer),
            RequestOutcome::InputRequired(r) => r.serialize(serializer),
            RequestOutcome::Task(r) => r.serialize(serializer),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for RequestOutcome<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        match map.get("resultType").and_then(Value::as_str) {
            Some("input_required") => {
                from_object(map, "input-required result").map(Self::InputRequired)
            }
            Some("task") => from_object(map, "task result").map(Self::Task),
            None if matches!(map.get("task"), Some(Value::Object(_))) => {
                from_object(map, "task result").map(Self::Task)
            }
            _ => from_object(map, "result").map(Self::Complete),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::CallToolResult;
    use serde_json::json;

    #[test]
    fn outcome_follows_result_type() {
        let done: RequestOutcome<CallToolResult> =
            serde_json::from_value(json!({"resultType": "complete", "content": []})).unwrap();
        assert!(matches!(done, RequestOutcome::Complete(_)));
        let legacy: RequestOutcome<CallToolResult> =
            serde_json::from_value(json!({"content": []})).unwrap();
        assert!(matches!(legacy, RequestOutcome::Complete(_)));
        let more: RequestOutcome<CallToolResult> =
            serde_json::from_value(json!({"resultType": "input_required", "requestState": "s"}))
                .unwrap();
        assert!(matches!(more, RequestOutcome::InputRequired(_)));
        let task: RequestOutcome<CallToolResult> = serde_json::from_value(json!({"task": {
            "taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttl": 1}}))
        .unwrap();
        assert!(matches!(task, RequestOutcome::Task(_)));
    }

    #[test]
    fn embedded_request_checks_method_and_keeps_extra() {
        let raw = json!({"id": "x", "method": "roots/list"});
        let request: ListRootsRequest = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(serde_json::to_value(&request).unwrap(), raw);
        assert!(serde_json::from_value::<ElicitRequest>(raw).is_err());
        let unknown = json!({"method": "future/thing", "params": {}});
        let request: InputRequest = serde_json::from_value(unknown.clone()).unwrap();
        assert_eq!(request.method(), Some("future/thing"));
        assert_eq!(serde_json::to_value(&request).unwrap(), unknown);
    }
}
