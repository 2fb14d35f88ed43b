//! [`Schema`]: a tool's JSON Schema, kept as the text it arrived in.
//!
//! A parsed schema (a `serde_json` map tree with `preserve_order`) is more
//! than ten times its text, and most schemas are only ever handed on to a
//! model. So a tool keeps its schemas raw, checked only to be JSON objects,
//! and the few callers that walk one parse it when they need to.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::meta::JsonObject;

/// A JSON Schema object (a tool's `inputSchema` or `outputSchema`), kept as
/// its exact JSON text: it serializes byte for byte as received, so a
/// schema reaches the model as the server wrote it.
///
/// Deserializing checks that the value is a JSON object and nothing more;
/// [`Schema::to_object`] and [`Schema::parse`] parse it on demand. Clones
/// share the text.
///
/// Two schemas are equal when they are the same JSON value: equal text, or
/// text that parses to equal values (key order and whitespace aside).
///
/// ```
/// use switchboard_types::Schema;
///
/// let schema: Schema = serde_json::from_str(r#"{"type": "object"}"#).unwrap();
/// assert_eq!(schema.as_str(), r#"{"type": "object"}"#);
/// assert_eq!(schema.to_object().unwrap()["type"], "object");
/// assert!(serde_json::from_str::<Schema>("true").is_err());
/// ```
#[derive(Clone)]
pub struct Schema(Arc<RawValue>);

/// serde_json's marker for a raw value (its `RawValue` asks for a newtype
/// struct of this name). Asking for it ourselves lets [`Schema`] take the raw
/// text from serde_json and still accept any other deserializer (serde's
/// buffer for `#[serde(flatten)]`, for one) through a parsed object.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

impl Schema {
    /// The schema's JSON text, exactly as received.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The schema as a [`RawValue`], for writing it into other JSON as is.
    pub fn as_raw(&self) -> &RawValue {
        &self.0
    }

    /// Parses the schema into a map tree (in key order).
    ///
    /// # Errors
    /// When the text is nested deeper than `serde_json` parses (128 levels):
    /// the raw text is kept without that limit.
    pub fn to_object(&self) -> Result<JsonObject, serde_json::Error> {
        serde_json::from_str(self.as_str())
    }

    /// Parses the schema into `T`.
    ///
    /// # Errors
    /// When the schema is not a `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.as_str())
    }

    /// A schema from JSON text.
    ///
    /// # Errors
    /// When `text` is not JSON or not a JSON object.
    pub fn from_json(text: impl Into<String>) -> Result<Self, serde_json::Error> {
        let raw = RawValue::from_string(text.into())?;
        Self::from_raw(raw).map_err(de::Error::custom)
    }

    fn from_raw(raw: Box<RawValue>) -> Result<Self, NotAnObject> {
        // The text is valid JSON (and a raw value starts at its first byte),
        // so an object is exactly a value that opens with a brace.
        if raw.get().trim_start().starts_with('{') {
            Ok(Schema(Arc::from(raw)))
        } else {
            Err(NotAnObject)
        }
    }

    /// A schema from a JSON value.
    ///
    /// # Errors
    /// When `value` is not an object.
    pub fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        match value {
            Value::Object(map) => Ok(map.into()),
            other => Err(de::Error::invalid_type(unexpected(&other), &NotAnObject)),
        }
    }
}

impl Default for Schema {
    /// `{}`, the schema every value matches.
    fn default() -> Self {
        JsonObject::new().into()
    }
}

impl From<JsonObject> for Schema {
    fn from(map: JsonObject) -> Self {
        let raw = serde_json::value::to_raw_value(&map)
            .expect("a JSON map with string keys always serializes");
        Schema(Arc::from(raw))
    }
}

impl From<&JsonObject> for Schema {
    fn from(map: &JsonObject) -> Self {
        let raw = serde_json::value::to_raw_value(map)
            .expect("a JSON map with string keys always serializes");
        Schema(Arc::from(raw))
    }
}

impl TryFrom<Value> for Schema {
    type Error = serde_json::Error;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Schema::from_value(value)
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        if self.as_str() == other.as_str() {
            return true;
        }
        match (
            serde_json::from_str::<Value>(self.as_str()),
            serde_json::from_str::<Value>(other.as_str()),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl PartialEq<JsonObject> for Schema {
    fn eq(&self, other: &JsonObject) -> bool {
        self.to_object().is_ok_and(|map| &map == other)
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Schema").field(&self.as_str()).finish()
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_newtype_struct(RAW_VALUE_TOKEN, SchemaVisitor)
    }
}

struct SchemaVisitor;

impl<'de> Visitor<'de> for SchemaVisitor {
    type Value = Schema;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&NotAnObject, formatter)
    }

    /// serde_json (from text or from a `Value`) answers the raw-value
    /// request with a one-entry map: the marker, then the text.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Schema, A::Error> {
        let Some(key) = map.next_key::<String>()? else {
            return Ok(Schema::default());
        };
        if key == RAW_VALUE_TOKEN {
            let text: String = map.next_value()?;
            let raw = RawValue::from_string(text).map_err(de::Error::custom)?;
            return Schema::from_raw(raw).map_err(|NotAnObject| {
                de::Error::invalid_value(de::Unexpected::Other("a non-object JSON value"), &self)
            });
        }
        // A deserializer that ignored the newtype and gave the object itself.
        let mut object = JsonObject::new();
        object.insert(key, map.next_value()?);
        while let Some((key, value)) = map.next_entry()? {
            object.insert(key, value);
        }
        Ok(object.into())
    }

    /// Any other deserializer: parse the value, then keep its text.
    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Schema, D::Error> {
        JsonObject::deserialize(deserializer).map(Schema::from)
    }
}

/// The error for a schema that is not a JSON object.
#[derive(Debug)]
struct NotAnObject;

impl fmt::Display for NotAnObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON Schema object")
    }
}

impl de::Expected for NotAnObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(_) => de::Unexpected::Other("number"),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_survives_byte_for_byte() {
        let text = r#"{ "type":"object",  "properties": {"b": {}, "a": {"minimum": 1.50}} }"#;
        let schema: Schema = serde_json::from_str(text).unwrap();
        assert_eq!(schema.as_str(), text);
        assert_eq!(serde_json::to_string(&schema).unwrap(), text);
    }

    #[test]
    fn only_objects_are_schemas() {
        for text in ["true", "[]", "\"object\"", "null", "1"] {
            assert!(serde_json::from_str::<Schema>(text).is_err(), "{text}");
            let value: Value = serde_json::from_str(text).unwrap();
            assert!(
                serde_json::from_value::<Schema>(value.clone()).is_err(),
                "{text}"
            );
            assert!(Schema::from_value(value).is_err(), "{text}");
            assert!(Schema::from_json(text).is_err(), "{text}");
        }
        assert!(Schema::from_json("{").is_err());
    }

    #[test]
    fn a_value_and_a_flatten_buffer_are_read_too() {
        let value = json!({"type": "object", "required": ["a"]});
        let from_value: Schema = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(from_value.as_str(), r#"{"type":"object","required":["a"]}"#);

        // A flattened struct is read from serde's buffer of the input,
        // not from serde_json: the schema is parsed, then written out.
        #[derive(Deserialize)]
        struct Inner {
            schema: Schema,
        }
        #[derive(Deserialize)]
        struct Outer {
            #[serde(flatten)]
            inner: Inner,
        }
        let outer: Outer =
            serde_json::from_str(r#"{"schema": {"type": "object", "required": ["a"]}, "x": 1}"#)
                .unwrap();
        assert_eq!(
            outer.inner.schema.as_str(),
            r#"{"type":"object","required":["a"]}"#
        );
        let bad = serde_json::from_str::<Outer>(r#"{"schema": [1], "x": 1}"#);
        assert!(bad.is_err());
    }

    #[test]
    fn equality_is_by_value() {
        let a = Schema::from_json(r#"{"a": 1, "b": [true]}"#).unwrap();
        let b = Schema::from_json(r#"{"b":[true],"a":1}"#).unwrap();
        let c = Schema::from_json(r#"{"a": 2, "b": [true]}"#).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, b.to_object().unwrap());
    }

    #[test]
    fn too_deep_to_parse_is_kept_and_reported() {
        let text = format!("{}1{}", r#"{"a":"#.repeat(200), "}".repeat(200));
        let schema: Schema = serde_json::from_str(&text).unwrap();
        assert_eq!(schema.as_str(), text);
        assert!(schema.to_object().is_err());
    }
}
