//! Sampling: a server asks the client's LLM for a completion
//! (`sampling/createMessage`; deprecated in 2026-07-28).

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::{ContentBlock, Role};
use crate::meta::JsonObject;
use crate::tasks::TaskMetadata;
use crate::tools::Tool;

/// A hint for choosing a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelHint {
    /// A full or partial model name, e.g. `"claude-3-5-sonnet"` or `"claude"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The server's model preferences; priorities range from 0 to 1.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Hints, in order of preference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters.
    #[serde(
        default,
        serialize_with = "crate::util::ser_opt_f64",
        skip_serializing_if = "Option::is_none"
    )]
    pub cost_priority: Option<f64>,
    /// How much speed matters.
    #[serde(
        default,
        serialize_with = "crate::util::ser_opt_f64",
        skip_serializing_if = "Option::is_none"
    )]
    pub speed_priority: Option<f64>,
    /// How much capability matters.
    #[serde(
        default,
        serialize_with = "crate::util::ser_opt_f64",
        skip_serializing_if = "Option::is_none"
    )]
    pub intelligence_priority: Option<f64>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

string_enum! {
    /// Which MCP context to include in a sampling prompt.
    pub enum IncludeContext {
        /// None.
        None => "none",
        /// From the requesting server (deprecated).
        ThisServer => "thisServer",
        /// From all servers (deprecated).
        AllServers => "allServers",
    }
}

string_enum! {
    /// How the model may use the offered tools (2025-11-25).
    pub enum ToolChoiceMode {
        /// The model decides.
        Auto => "auto",
        /// The model must use a tool.
        Required => "required",
        /// The model must not use tools.
        None => "none",
    }
}

/// Tool selection for sampling (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// The mode; `auto` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// A sampling message's content: one block, or (2025-11-25) an array of them.
// Transient values, read once and dropped: boxing would only cost callers.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum SamplingContent {
    /// A single block, written as an object.
    Single(ContentBlock),
    /// Several blocks, written as an array.
    Multiple(Vec<ContentBlock>),
}

impl SamplingContent {
    /// The blocks, whichever way they were written.
    pub fn blocks(&self) -> &[ContentBlock] {
        match self {
            SamplingContent::Single(block) => std::slice::from_ref(block),
            SamplingContent::Multiple(blocks) => blocks,
        }
    }

    /// The blocks, owned.
    pub fn into_blocks(self) -> Vec<ContentBlock> {
        match self {
            SamplingContent::Single(block) => vec![block],
            SamplingContent::Multiple(blocks) => blocks,
        }
    }
}

impl From<ContentBlock> for SamplingContent {
    fn from(value: ContentBlock) -> Self {
        SamplingContent::Single(value)
    }
}

impl From<Vec<ContentBlock>> for SamplingContent {
    fn from(value: Vec<ContentBlock>) -> Self {
        SamplingContent::Multiple(value)
    }
}

impl Serialize for SamplingContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SamplingContent::Single(block) => block.serialize(serializer),
            SamplingContent::Multiple(blocks) => blocks.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            value @ Value::Object(_) => serde_json::from_value(value)
                .map(SamplingContent::Single)
                .map_err(de::Error::custom),
            value @ Value::Array(_) => serde_json::from_value(value)
                .map(SamplingContent::Multiple)
                .map_err(de::Error::custom),
            _ => Err(de::Error::custom(
                "sampling content must be a content block or an array of them",
            )),
        }
    }
}

/// A message in a sampling conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: SamplingContent,
    /// Message metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Params of `sampling/createMessage`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// Model preferences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the client may modify or omit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which MCP context to include.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(
        default,
        serialize_with = "crate::util::ser_opt_f64",
        skip_serializing_if = "Option::is_none"
    )]
    pub temperature: Option<f64>,
    /// The most tokens to sample.
    pub max_tokens: u64,
    /// Stop sequences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata, passed through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may use (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use them (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Run as a task (2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The client's answer to `sampling/createMessage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Normally `assistant`.
    pub role: Role,
    /// The sampled content.
    pub content: SamplingContent,
    /// The model that produced it.
    pub model: String,
    /// Why sampling stopped: `endTurn`, `stopSequence`, `maxTokens`, `toolUse`, or other.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}
