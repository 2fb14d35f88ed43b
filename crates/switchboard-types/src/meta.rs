//! `_meta` objects, reserved meta keys, and the pieces every request and
//! result shares: [`ResultType`], [`CacheScope`], [`EmptyResult`],
//! [`PaginatedRequestParams`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON object that keeps its key order (`preserve_order` is on).
pub type JsonObject = serde_json::Map<String, Value>;

/// The contents of a `_meta` field.
pub type Meta = JsonObject;

/// `_meta` key for the request's protocol version (2026-07-28).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key for the client's [`Implementation`](crate::Implementation) (2026-07-28).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key for the client's [`ClientCapabilities`](crate::ClientCapabilities) (2026-07-28).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key for the per-request [`LoggingLevel`](crate::LoggingLevel) (2026-07-28).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key for the server's [`Implementation`](crate::Implementation) on results (2026-07-28).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key tagging notifications of a `subscriptions/listen` stream (2026-07-28).
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key associating a message with a task (2025-11-25).
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// `_meta` key asking the receiver for progress notifications.
pub const PROGRESS_TOKEN: &str = "progressToken";

string_enum! {
    /// What a result is (2026-07-28 `resultType`). Results from earlier
    /// revisions omit it and count as [`ResultType::Complete`].
    #[derive(Default)]
    pub enum ResultType {
        /// An ordinary, final result.
        #[default]
        Complete => "complete",
        /// An interim [`InputRequiredResult`](crate::InputRequiredResult): answer
        /// its input requests and retry.
        InputRequired => "input_required",
        /// A task handle from the tasks extension (`CreateTaskResult`).
        Task => "task",
    }
}

string_enum! {
    /// Who may cache a cacheable result (2026-07-28 `cacheScope`).
    pub enum CacheScope {
        /// Shared intermediaries may cache the result.
        Public => "public",
        /// Only this client may cache the result.
        Private => "private",
    }
}

/// A result with no payload: `ping`, `resources/subscribe`, `logging/setLevel`, …
///
/// A 2026-07-28 `resultType` lands in `extra`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Params carrying nothing but `_meta`: `ping`, `roots/list`, …
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Params of a notification that carries nothing but `_meta`
/// (`notifications/*/list_changed`, `notifications/initialized`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationParams {
    /// Notification metadata, e.g. [`META_SUBSCRIPTION_ID`].
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Params of a paginated list request (`tools/list`, `resources/list`, …).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// The `nextCursor` of the previous page; `None` for the first page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Request metadata (required in 2026-07-28; see [`RequestMeta`]).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The reserved keys of a 2026-07-28 request `_meta`, typed.
///
/// Build one, then [`RequestMeta::into_object`] it into a request's `meta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestMeta {
    /// [`META_PROTOCOL_VERSION`]; required on every 2026-07-28 request.
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol_version: Option<crate::ProtocolVersion>,
    /// [`META_CLIENT_CAPABILITIES`]; required on every 2026-07-28 request.
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_capabilities: Option<crate::ClientCapabilities>,
    /// [`META_CLIENT_INFO`]; clients should send it.
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<crate::Implementation>,
    /// [`META_LOG_LEVEL`]; without it a server must not send `notifications/message`.
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<crate::LoggingLevel>,
    /// [`PROGRESS_TOKEN`]: ask for `notifications/progress`.
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    pub progress_token: Option<crate::ProgressToken>,
    /// Other keys (trace context, extensions, …).
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl RequestMeta {
    /// The `_meta` object.
    pub fn into_object(self) -> JsonObject {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => unreachable!("RequestMeta always serializes to an object"),
        }
    }

    /// Reads the reserved keys out of a `_meta` object.
    ///
    /// # Errors
    /// When a reserved key holds a value of the wrong shape.
    pub fn from_object(meta: &JsonObject) -> Result<Self, serde_json::Error> {
        serde_json::from_value(Value::Object(meta.clone()))
    }
}

/// The server's identity from a result's `_meta`
/// ([`META_SERVER_INFO`], 2026-07-28), if present and well-formed.
pub fn server_info_from_meta(meta: Option<&JsonObject>) -> Option<crate::Implementation> {
    let info = meta?.get(META_SERVER_INFO)?;
    crate::Implementation::deserialize(info).ok()
}

/// The `subscriptions/listen` stream a notification belongs to
/// ([`META_SUBSCRIPTION_ID`], 2026-07-28), if present and well-formed.
pub fn subscription_id_from_meta(meta: Option<&JsonObject>) -> Option<crate::RequestId> {
    let id = meta?.get(META_SUBSCRIPTION_ID)?;
    crate::RequestId::deserialize(id).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_type_keeps_unknown_values() {
        let parsed: ResultType = serde_json::from_str("\"streaming\"").unwrap();
        assert_eq!(parsed, ResultType::Other("streaming".into()));
        assert_eq!(serde_json::to_string(&parsed).unwrap(), "\"streaming\"");
        let known: ResultType = serde_json::from_str("\"input_required\"").unwrap();
        assert_eq!(known, ResultType::InputRequired);
        let scope: CacheScope = serde_json::from_str("\"public\"").unwrap();
        assert_eq!(scope, CacheScope::Public);
    }
}
