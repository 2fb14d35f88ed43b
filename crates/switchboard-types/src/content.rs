//! Content blocks: what tool results, prompts and sampling messages carry.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::JsonObject;
use crate::resources::{Resource, ResourceContents};
use crate::util::{TypeTagged, take};

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
        deserializer.deserialize_map(BlockVisitor)
    }
}

/// Reads a block straight into its type when `"type"` comes first, as
/// every server writes it: no `JsonObject` in between. Otherwise the whole
/// object is read first and then sorted out.
struct BlockVisitor;

/// A block member's name: `type` without an allocation.
enum Key {
    Type,
    Other(String),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl de::Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(if key == "type" {
                    Key::Type
                } else {
                    Key::Other(key.to_owned())
                })
            }

            fn visit_string<E: de::Error>(self, key: String) -> Result<Key, E> {
                Ok(if key == "type" {
                    Key::Type
                } else {
                    Key::Other(key)
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

impl<'de> de::Visitor<'de> for BlockVisitor {
    type Value = ContentBlock;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a content block (an object with a `type`)")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
        let first = match map.next_key::<Key>()? {
            None => return Err(de::Error::custom("content block without `type`")),
            Some(Key::Type) => None,
            Some(Key::Other(key)) => Some(key),
        };
        let Some(first) = first else {
            let kind = match map.next_value::<Value>()? {
                Value::String(kind) => kind,
                _ => return Err(de::Error::custom("content block `type` is not a string")),
            };
            return read_block(kind, de::value::MapAccessDeserializer::new(map));
        };
        // `type` comes later: the whole object, then its type.
        let mut object = JsonObject::new();
        let value = map.next_value::<Value>()?;
        object.insert(first, value);
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            object.insert(key, value);
        }
        from_map(object)
    }
}

/// The rest of a block whose `type` (`kind`) came first.
fn read_block<'de, D: Deserializer<'de>>(kind: String, rest: D) -> Result<ContentBlock, D::Error> {
    fn known<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        kind: &str,
        rest: D,
        extra: impl FnOnce(&T) -> &crate::Extra,
    ) -> Result<T, D::Error> {
        let block = T::deserialize(rest)
            .map_err(|e| de::Error::custom(format!("invalid `{kind}` content block: {e}")))?;
        // A second `type` lands among the unknown members; as one object
        // it would be written out twice.
        if extra(&block).contains_key("type") {
            return Err(de::Error::custom(format!(
                "invalid `{kind}` content block: `type` given twice"
            )));
        }
        Ok(block)
    }
    Ok(match kind.as_str() {
        "text" => ContentBlock::Text(known(&kind, rest, |b: &TextContent| &b.extra)?),
        "image" => ContentBlock::Image(known(&kind, rest, |b: &ImageContent| &b.extra)?),
        "audio" => ContentBlock::Audio(known(&kind, rest, |b: &AudioContent| &b.extra)?),
        "resource_link" => {
            ContentBlock::ResourceLink(known(&kind, rest, |b: &ResourceLink| &b.extra)?)
        }
        "resource" => ContentBlock::Resource(known(&kind, rest, |b: &EmbeddedResource| &b.extra)?),
        "tool_use" => ContentBlock::ToolUse(known(&kind, rest, |b: &ToolUseContent| &b.extra)?),
        "tool_result" => {
            ContentBlock::ToolResult(known(&kind, rest, |b: &ToolResultContent| &b.extra)?)
        }
        _ => {
            let mut object = JsonObject::new();
            object.insert("type".to_owned(), Value::String(kind));
            // A later `type` replaces the first in place, as when the
            // object is read whole.
            object.extend(JsonObject::deserialize(rest)?);
            ContentBlock::Other(object)
        }
    })
}

/// A block read whole (its `type` was not first).
fn from_map<E: de::Error>(mut map: JsonObject) -> Result<ContentBlock, E> {
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
    read_block(kind, Value::Object(map)).map_err(de::Error::custom)
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
    fn a_block_reads_the_same_whatever_its_member_order() {
        let first: ContentBlock =
            serde_json::from_str(r#"{"type":"text","text":"hi","x":[1]}"#).unwrap();
        let last: ContentBlock =
            serde_json::from_str(r#"{"text":"hi","x":[1],"type":"text"}"#).unwrap();
        let tree: ContentBlock =
            serde_json::from_value(json!({"text": "hi", "type": "text", "x": [1]})).unwrap();
        assert_eq!(first, last);
        assert_eq!(first, tree);
        assert_eq!(first.as_text(), Some("hi"));
        assert_eq!(
            serde_json::to_string(&last).unwrap(),
            r#"{"type":"text","text":"hi","x":[1]}"#
        );
        let unknown: ContentBlock = serde_json::from_str(r#"{"z":1,"type":"holo"}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&unknown).unwrap(),
            r#"{"z":1,"type":"holo"}"#
        );
    }

    #[test]
    fn a_second_type_is_refused_or_replaces_the_first_as_in_one_object() {
        let err =
            serde_json::from_str::<ContentBlock>(r#"{"type":"text","text":"a","type":"image"}"#)
                .unwrap_err();
        assert!(err.to_string().contains("`type` given twice"), "{err}");
        let unknown: ContentBlock =
            serde_json::from_str(r#"{"type":"holo","a":1,"type":"gram"}"#).unwrap();
        assert_eq!(unknown.kind(), Some("gram"));
        assert_eq!(
            serde_json::to_string(&unknown).unwrap(),
            r#"{"type":"gram","a":1}"#
        );
    }

    #[test]
    fn a_malformed_block_in_text_names_its_type_and_where() {
        let err = serde_json::from_str::<ContentBlock>(r#"{"type":"text","text":3}"#).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("invalid `text` content block: invalid type"),
            "{text}"
        );
        assert_eq!(text.matches(" at line ").count(), 1, "{text}");
        let err = serde_json::from_str::<ContentBlock>(r#"{"type":7}"#).unwrap_err();
        assert!(err.to_string().contains("`type` is not a string"), "{err}");
        let err = serde_json::from_str::<ContentBlock>("{}").unwrap_err();
        assert!(err.to_string().contains("without `type`"), "{err}");
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
