//! Elicitation: a server asks the user for input (`elicitation/create`,
//! 2025-06-18), by form or (2025-11-25) by sending them to a URL.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::JsonObject;
use crate::tasks::TaskMetadata;
use crate::util::{TypeTagged, from_object, take};

string_enum! {
    /// How the user is asked.
    pub enum ElicitMode {
        /// An in-client form described by a restricted JSON Schema.
        Form => "form",
        /// An out-of-band web page (2025-11-25).
        Url => "url",
    }
}

/// Params of a form-mode `elicitation/create`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// [`ElicitMode::Form`] or absent (form is the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<ElicitMode>,
    /// What to ask the user.
    pub message: String,
    /// The form's fields.
    pub requested_schema: ElicitationSchema,
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

/// Params of a URL-mode `elicitation/create` (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestUrlParams {
    /// Always [`ElicitMode::Url`].
    pub mode: ElicitMode,
    /// Why the user should open the URL.
    pub message: String,
    /// The page to open.
    pub url: String,
    /// Correlates `notifications/elicitation/complete` (2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
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

impl ElicitRequestUrlParams {
    /// URL-mode params without an elicitation id.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            mode: ElicitMode::Url,
            message: message.into(),
            url: url.into(),
            elicitation_id: None,
            task: None,
            meta: None,
            extra: crate::Extra::new(),
        }
    }
}

/// Params of `elicitation/create`, told apart by `mode`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitRequestParams {
    /// `mode` absent or `"form"`.
    Form(ElicitRequestFormParams),
    /// `mode: "url"` (2025-11-25).
    Url(ElicitRequestUrlParams),
    /// A mode this crate does not know, kept verbatim; decline it.
    Other(JsonObject),
}

impl ElicitRequestParams {
    /// The message shown to the user, whatever the mode.
    pub fn message(&self) -> Option<&str> {
        match self {
            ElicitRequestParams::Form(p) => Some(&p.message),
            ElicitRequestParams::Url(p) => Some(&p.message),
            ElicitRequestParams::Other(map) => map.get("message").and_then(Value::as_str),
        }
    }
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitRequestParams::Form(p) => p.serialize(serializer),
            ElicitRequestParams::Url(p) => p.serialize(serializer),
            ElicitRequestParams::Other(map) => map.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        match map.get("mode") {
            None => from_object(map, "form elicitation").map(ElicitRequestParams::Form),
            Some(Value::String(mode)) if mode == "form" => {
                from_object(map, "form elicitation").map(ElicitRequestParams::Form)
            }
            Some(Value::String(mode)) if mode == "url" => {
                from_object(map, "URL elicitation").map(ElicitRequestParams::Url)
            }
            Some(Value::String(_)) => Ok(ElicitRequestParams::Other(map)),
            Some(_) => Err(de::Error::custom("elicitation `mode` is not a string")),
        }
    }
}

/// The restricted JSON Schema of a form: a flat object of primitive fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElicitationSchema {
    /// The dialect (2025-11-25).
    #[serde(rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub r#type: String,
    /// The fields, in the server's order.
    #[serde(with = "crate::util::ordered_map")]
    pub properties: Vec<(String, PrimitiveSchemaDefinition)>,
    /// Names of required fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl Default for ElicitationSchema {
    fn default() -> Self {
        Self {
            schema: None,
            r#type: "object".to_owned(),
            properties: Vec::new(),
            required: None,
            extra: crate::Extra::new(),
        }
    }
}

impl ElicitationSchema {
    /// The schema of field `name`.
    pub fn property(&self, name: &str) -> Option<&PrimitiveSchemaDefinition> {
        self.properties
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, schema)| schema)
    }

    /// Whether field `name` is required.
    pub fn is_required(&self, name: &str) -> bool {
        self.required
            .as_ref()
            .is_some_and(|required| required.iter().any(|r| r == name))
    }
}

/// A text field (`"type": "string"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// `email`, `uri`, `date` or `date-time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Default value (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

string_enum! {
    /// The JSON type of a [`NumberSchema`].
    pub enum NumberType {
        /// Any number.
        Number => "number",
        /// Integers only.
        Integer => "integer",
    }
}

/// A number field (`"type": "number"` or `"integer"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumberSchema {
    /// `number` or `integer`.
    #[serde(rename = "type")]
    pub r#type: NumberType,
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum.
    #[serde(
        default,
        serialize_with = "crate::util::ser_opt_f64",
        skip_serializing_if = "Option::is_none"
    )]
    pub minimum: Option<f64>,
    /// Maximum.
    #[serde(
        default,
        serialize_with = "crate::util::ser_opt_f64",
        skip_serializing_if = "Option::is_none"
    )]
    pub maximum: Option<f64>,
    /// Default value (2025-11-25).
    #[serde(
        default,
        serialize_with = "crate::util::ser_opt_f64",
        skip_serializing_if = "Option::is_none"
    )]
    pub default: Option<f64>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// A checkbox (`"type": "boolean"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// One choice with a label: `{"const": value, "title": label}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value submitted.
    #[serde(rename = "const")]
    pub value: String,
    /// The label shown.
    pub title: String,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Single choice without labels (`"type": "string"` + `enum`, 2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Default choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Single choice with labels (`"type": "string"` + `oneOf`, 2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    pub one_of: Vec<EnumOption>,
    /// Default choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// `items` of an [`UntitledMultiSelectEnumSchema`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub r#type: String,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// `items` of a [`TitledMultiSelectEnumSchema`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The choices.
    pub any_of: Vec<EnumOption>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Multiple choice without labels (`"type": "array"`, 2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: UntitledEnumItems,
    /// Default choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Multiple choice with labels (`"type": "array"`, 2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: TitledEnumItems,
    /// Default choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Single choice with parallel `enumNames` labels (2025-06-18 `EnumSchema`;
/// deprecated since 2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Labels, one per choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Default choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// One form field. Told apart by `type` and then by `enum` / `enumNames` /
/// `oneOf` / `items`; a shape this crate does not know is kept as `Other`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PrimitiveSchemaDefinition {
    /// `"string"`.
    String(StringSchema),
    /// `"number"` or `"integer"`.
    Number(NumberSchema),
    /// `"boolean"`.
    Boolean(BooleanSchema),
    /// `"string"` with `enum`.
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    /// `"string"` with `oneOf`.
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    /// `"array"` with `items.enum`.
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    /// `"array"` with `items.anyOf`.
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
    /// `"string"` with `enum` and `enumNames`.
    LegacyTitledEnum(LegacyTitledEnumSchema),
    /// Anything else, kept verbatim.
    Other(JsonObject),
}

impl Serialize for PrimitiveSchemaDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use PrimitiveSchemaDefinition as P;
        let s = serializer;
        match self {
            P::String(inner) => TypeTagged {
                kind: "string",
                inner,
            }
            .serialize(s),
            P::Number(inner) => inner.serialize(s),
            P::Boolean(inner) => TypeTagged {
                kind: "boolean",
                inner,
            }
            .serialize(s),
            P::UntitledSingleSelectEnum(inner) => TypeTagged {
                kind: "string",
                inner,
            }
            .serialize(s),
            P::TitledSingleSelectEnum(inner) => TypeTagged {
                kind: "string",
                inner,
            }
            .serialize(s),
            P::UntitledMultiSelectEnum(inner) => TypeTagged {
                kind: "array",
                inner,
            }
            .serialize(s),
            P::TitledMultiSelectEnum(inner) => TypeTagged {
                kind: "array",
                inner,
            }
            .serialize(s),
            P::LegacyTitledEnum(inner) => TypeTagged {
                kind: "string",
                inner,
            }
            .serialize(s),
            P::Other(map) => map.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use PrimitiveSchemaDefinition as P;
        let mut map = JsonObject::deserialize(deserializer)?;
        let kind = map
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let items = map.get("items").and_then(Value::as_object);
        let items_titled = items.is_some_and(|items| items.contains_key("anyOf"));
        let items_untitled = items.is_some_and(|items| items.contains_key("enum"));
        let has = |key: &str| map.contains_key(key);
        let what = "elicitation field schema";
        Ok(match kind.as_str() {
            "number" | "integer" => P::Number(from_object(map, what)?),
            "string" if has("enum") && has("enumNames") => {
                take(&mut map, "type");
                P::LegacyTitledEnum(from_object(map, what)?)
            }
            "string" if has("enum") => {
                take(&mut map, "type");
                P::UntitledSingleSelectEnum(from_object(map, what)?)
            }
            "string" if has("oneOf") => {
                take(&mut map, "type");
                P::TitledSingleSelectEnum(from_object(map, what)?)
            }
            "string" => {
                take(&mut map, "type");
                P::String(from_object(map, what)?)
            }
            "boolean" => {
                take(&mut map, "type");
                P::Boolean(from_object(map, what)?)
            }
            "array" if items_titled => {
                take(&mut map, "type");
                P::TitledMultiSelectEnum(from_object(map, what)?)
            }
            "array" if items_untitled => {
                take(&mut map, "type");
                P::UntitledMultiSelectEnum(from_object(map, what)?)
            }
            _ => P::Other(map),
        })
    }
}

/// The user's response to an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted (form) or consented (URL).
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// The client's answer to `elicitation/create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted form values (accepted form mode only): strings,
    /// numbers, booleans, or (2025-11-25) arrays of strings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl ElicitResult {
    fn with(action: ElicitAction, content: Option<JsonObject>) -> Self {
        Self {
            action,
            content,
            meta: None,
            extra: crate::Extra::new(),
        }
    }

    /// Accepted, with form values (`None` for URL mode).
    pub fn accept(content: Option<JsonObject>) -> Self {
        Self::with(ElicitAction::Accept, content)
    }

    /// Declined.
    pub fn decline() -> Self {
        Self::with(ElicitAction::Decline, None)
    }

    /// Cancelled.
    pub fn cancel() -> Self {
        Self::with(ElicitAction::Cancel, None)
    }
}

/// Params of `notifications/elicitation/complete` (2025-11-25 only).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// The [`ElicitRequestUrlParams::elicitation_id`] that completed.
    pub elicitation_id: String,
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// `data` of a `URLElicitationRequiredError` (-32042, 2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UrlElicitationRequiredData {
    /// The URL elicitations to complete before retrying.
    pub elicitations: Vec<ElicitRequestUrlParams>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn form_fields_keep_order_and_kind() {
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "message": "m",
            "requestedSchema": {"type": "object", "properties": {
                "z": {"type": "string", "enum": ["a"], "enumNames": ["A"]},
                "a": {"type": "integer"},
                "m": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}},
                "q": {"type": "object"}
            }}
        }))
        .unwrap();
        let ElicitRequestParams::Form(form) = params else {
            panic!("not a form")
        };
        let names: Vec<_> = form
            .requested_schema
            .properties
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(names, ["z", "a", "m", "q"]);
        let s = &form.requested_schema;
        assert!(matches!(
            s.property("z"),
            Some(PrimitiveSchemaDefinition::LegacyTitledEnum(_))
        ));
        assert!(matches!(
            s.property("a"),
            Some(PrimitiveSchemaDefinition::Number(_))
        ));
        assert!(matches!(
            s.property("m"),
            Some(PrimitiveSchemaDefinition::TitledMultiSelectEnum(_))
        ));
        assert!(matches!(
            s.property("q"),
            Some(PrimitiveSchemaDefinition::Other(_))
        ));
    }

    #[test]
    fn unknown_mode_is_kept() {
        let raw = json!({"mode": "hologram", "message": "m"});
        let params: ElicitRequestParams = serde_json::from_value(raw.clone()).unwrap();
        assert!(matches!(params, ElicitRequestParams::Other(_)));
        assert_eq!(serde_json::to_value(&params).unwrap(), raw);
    }
}
