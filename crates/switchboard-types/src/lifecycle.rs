//! Identity, capabilities, and the two ways to meet a server: `initialize`
//! (2024-11-05 … 2025-11-25) and `server/discover` (2026-07-28).

use serde::{Deserialize, Serialize};

use crate::meta::{CacheScope, JsonObject, ResultType, server_info_from_meta};
use crate::version::ProtocolVersion;

string_enum! {
    /// The background an [`Icon`] is drawn for.
    pub enum IconTheme {
        /// For a light background.
        Light => "light",
        /// For a dark background.
        Dark => "dark",
    }
}

/// An icon a client may show (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `http(s):` or `data:` URI.
    pub src: String,
    /// The MIME type, when the URI does not tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The background the icon is designed for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The name and version of a client or server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display name (2025-06-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Human-readable description (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Home page (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Icons (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl Implementation {
    /// An implementation with just a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            ..Self::default()
        }
    }
}

/// The client's `roots` capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootsCapability {
    /// Whether the client sends `notifications/roots/list_changed` (legacy era).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The client's `sampling` capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingCapability {
    /// Present if the client honours `includeContext` (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// Present if the client supports `tools` and `toolChoice` (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The client's `elicitation` capability (2025-06-18).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCapability {
    /// Present if the client supports form mode (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// Present if the client supports URL mode (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl ElicitationCapability {
    /// Whether form mode is supported; an empty capability means form only.
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is supported.
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

/// The `tasks` capability of 2025-11-25 (client or server). In 2026-07-28
/// tasks are the `io.modelcontextprotocol/tasks` extension instead.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TasksCapability {
    /// Present if `tasks/list` is supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<JsonObject>,
    /// Present if `tasks/cancel` is supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<JsonObject>,
    /// Which requests may be task-augmented, nested by method segment:
    /// `{"tools": {"call": {}}}` for a server,
    /// `{"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}` for a client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl TasksCapability {
    /// Whether requests of `method` (e.g. `"tools/call"`) may be task-augmented.
    pub fn supports_request(&self, method: &str) -> bool {
        let Some(mut node) = self.requests.as_ref() else {
            return false;
        };
        for segment in method.split('/') {
            match node.get(segment) {
                Some(serde_json::Value::Object(next)) => node = next,
                _ => return false,
            }
        }
        true
    }
}

/// What a client supports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Present if the client can list roots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// Present if the client can sample from an LLM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Present if the client can elicit input from the user (2025-06-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Task support (2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TasksCapability>,
    /// Extensions by identifier, each with its settings object (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The server's `prompts` capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// Whether the server sends `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The server's `resources` capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether the server supports subscribing to resource updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether the server sends `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The server's `tools` capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Whether the server sends `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// What a server supports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Present if the server sends log messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Present if the server offers argument completion (2025-03-26).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Present if the server offers prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Present if the server offers resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Present if the server offers tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Task support (2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TasksCapability>,
    /// Extensions by identifier, each with its settings object (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl ServerCapabilities {
    /// The settings of extension `id`, if the server declares it.
    pub fn extension(&self, id: &str) -> Option<&serde_json::Value> {
        self.extensions.as_ref()?.get(id)
    }
}

/// Params of `initialize` (legacy era).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The newest revision the client supports.
    pub protocol_version: ProtocolVersion,
    /// What the client supports.
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The result of `initialize` (legacy era).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: ProtocolVersion,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// How to use the server, for the model's context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Params of `server/discover` (2026-07-28): only the request `_meta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiscoverRequestParams {
    /// Request metadata (see [`RequestMeta`](crate::RequestMeta)).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The result of `server/discover` (2026-07-28).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Always `complete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Every revision the server speaks.
    pub supported_versions: Vec<ProtocolVersion>,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// How to use the server, for the model's context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the result stays fresh, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache the result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result metadata; holds the server's identity.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl DiscoverResult {
    /// The server's identity from `_meta["io.modelcontextprotocol/serverInfo"]`.
    pub fn server_info(&self) -> Option<Implementation> {
        server_info_from_meta(self.meta.as_ref())
    }
}

/// `data` of an `UnsupportedProtocolVersionError` (-32022, 2026-07-28).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnsupportedProtocolVersionData {
    /// The revisions the server supports; retry with one of them.
    #[serde(default)]
    pub supported: Vec<ProtocolVersion>,
    /// The revision the client asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested: Option<ProtocolVersion>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// `data` of a `MissingRequiredClientCapabilityError` (-32021, 2026-07-28).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the server needs from the client.
    pub required_capabilities: ClientCapabilities,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn task_request_support_follows_method_segments() {
        let caps: TasksCapability =
            serde_json::from_value(json!({"requests": {"tools": {"call": {}}}})).unwrap();
        assert!(caps.supports_request("tools/call"));
        assert!(!caps.supports_request("tools/list"));
        assert!(!TasksCapability::default().supports_request("tools/call"));
    }

    #[test]
    fn empty_elicitation_capability_means_form() {
        let caps = ElicitationCapability::default();
        assert!(caps.supports_form() && !caps.supports_url());
    }
}
