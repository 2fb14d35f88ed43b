//! Content blocks: what tool results, prompts and sampling messages carry.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::JsonObject;
use crate::resources::{Resource, ResourceContents};
use crate::util::{TypeTagged, from_object, take};

/// Who a message or content is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant (the model).
    Assistant,
}

/// Hints about how content is used or shown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(
        default,
        serialize_with = "crate::util::ser_opt_f64",
        skip_serializing_if = "Option::is_none"
    )]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change (2025-06-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Text (`"type": "text"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Content metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl TextContent {
    /// Plain text without annotations.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

/// An image (`"type": "image"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image bytes.
    pub data: String,
    /// The image's MIME type.
    pub mime_type: String,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Content metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Audio (`"type": "audio"`, 2025-03-26).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64-encoded audio bytes.
    pub data: String,
    /// The audio's MIME type.
    pub mime_type: String,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Content metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// A link to a resource (`"type": "resource_link"`, 2025-06-18): a
/// [`Resource`] the client may read or subscribe to.
pub type ResourceLink = Resource;

/// A resource's contents inlined (`"type": "resource"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Content metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// A model's request to call a tool (`"type": "tool_use"`, sampling, 2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// Id matched by the [`ToolResultContent::tool_use_id`] answering it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The tool's arguments.
    pub input: JsonObject,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Content metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The outcome of a tool use (`"type": "tool_result"`, sampling, 2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The [`ToolUseContent::id`] this answers.
    pub tool_use_id: String,
    /// The result, like a [`CallToolResult`](crate::CallToolResult)'s content.
    pub content: Vec<ContentBlock>,
    /// Structured result, any JSON value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Content metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// One block of content, tagged by `"type"`.
///
/// A block of a type this crate does not know becomes [`ContentBlock::Other`]
/// and re-serializes as received, so one new block type never fails a
/// whole result. A block of a known type that is malformed is an error.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `"text"`.
    Text(TextContent),
    /// `"image"`.
    Image(ImageContent),
    /// `"audio"` (2025-03-26).
    Audio(AudioContent),
    /// `"resource_link"` (2025-06-18).
    ResourceLink(ResourceLink),
    /// `"resource"`.
    Resource(EmbeddedResource),
    /// `"tool_use"` (sampling only, 2025-11-25).
    ToolUse(ToolUseContent),
    /// `"tool_result"` (sampling only, 2025-11-25).
    ToolResult(ToolResultContent),
    /// A block of unknown type, kept verbatim (including its `"type"`).
    Other(JsonObject),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// The block's `"type"`; `None` only for an `Other` block without one.
    pub fn kind(&self) -> Option<&str> {
        Some(match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            ContentBlock::ResourceLink(_) => "resource_link",
            ContentBlock::Resource(_) => "resource",
            ContentBlock::ToolUse(_) => "tool_use",
            ContentBlock::ToolResult(_) => "tool_result",
            ContentBlock::Other(map) => return map.get("type").and_then(Value::as_str),
        })
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(text) => Some(&text.text),
            _ => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(value: TextContent) -> Self {
        ContentBlock::Text(value)
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        fn tagged<S: Serializer, T: Serialize>(
            s: S,
            kind: &str,
            inner: &T,
        ) -> Result<S::Ok, S::Error> {
            TypeTagged { kind, inner }.serialize(s)
        }
        match self {
            ContentBlock::Text(c) => tagged(serializer, "text", c),
            ContentBlock::Image(c) => tagged(serializer, "image", c),
            ContentBlock::Audio(c) => tagged(serializer, "audio", c),
            ContentBlock::ResourceLink(c) => tagged(serializer, "resource_link", c),
            ContentBlock::Resource(c) => tagged(serializer, "resource", c),
            ContentBlock::ToolUse(c) => tagged(serializer, "tool_use", c),
            ContentBlock::ToolResult(c) => tagged(serializer, "tool_result", c),
            ContentBlock::Other(map) => map.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = JsonObject::deserialize(deserializer)?;
        let kind = match map.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            Some(_) => return Err(de::Error::custom("content block `type` is not a string")),
            None => return Err(de::Error::custom("content block without `type`")),
        };
        let known = matches!(
            kind.as_str(),
            "text" | "image" | "audio" | "resource_link" | "resource" | "tool_use" | "tool_result"
        );
        if !known {
            return Ok(ContentBlock::Other(map));
        }
        take(&mut map, "type");
        let what = format!("`{kind}` content block");
        Ok(match kind.as_str() {
            "text" => ContentBlock::Text(from_object(map, &what)?),
            "image" => ContentBlock::Image(from_object(map, &what)?),
            "audio" => ContentBlock::Audio(from_object(map, &what)?),
            "resource_link" => ContentBlock::ResourceLink(from_object(map, &what)?),
            "resource" => ContentBlock::Resource(from_object(map, &what)?),
            "tool_use" => ContentBlock::ToolUse(from_object(map, &what)?),
            _ => ContentBlock::ToolResult(from_object(map, &what)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_block_is_kept_verbatim() {
        let raw = r#"{"type":"hologram","z":1,"a":[1,2]}"#;
        let block: ContentBlock = serde_json::from_str(raw).unwrap();
        assert!(matches!(&block, ContentBlock::Other(_)));
        assert_eq!(block.kind(), Some("hologram"));
        assert_eq!(serde_json::to_string(&block).unwrap(), raw);
    }

    #[test]
    fn malformed_known_block_is_an_error() {
        let err = serde_json::from_value::<ContentBlock>(json!({"type": "text"})).unwrap_err();
        assert!(err.to_string().contains("`text` content block"), "{err}");
        assert!(serde_json::from_value::<ContentBlock>(json!({"text": "x"})).is_err());
    }

    #[test]
    fn known_block_writes_type_first() {
        let block = ContentBlock::text("hi");
        assert_eq!(
            serde_json::to_string(&block).unwrap(),
            r#"{"type":"text","text":"hi"}"#
        );
    }
}
