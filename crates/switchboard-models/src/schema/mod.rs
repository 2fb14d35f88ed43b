//! Per-provider input-schema clean-up: only what a provider rejects is
//! changed, each rule documented and tested; OpenAI strict mode.
//!
//! A tool's `inputSchema` reaches OpenAI and Anthropic whole — same
//! keywords, same order — except for the two fixes of [`for_provider`].
//! Gemini's `parameters` take a subset of OpenAPI 3.0 (see
//! <https://ai.google.dev/api/caching#Schema>), so for Gemini the schema is
//! rewritten by the rules listed at [`gemini`](fn@gemini). [`openai_strict`] makes a
//! schema acceptable for OpenAI's `strict: true`. Every change is reported
//! as a [`Note`].
//!
//! The files: this one (the notes, JSON pointers, the two fixes of
//! [`for_provider`], [`drop_strict_nulls`]); `gemini.rs` (Gemini's rules,
//! [`gemini`](fn@gemini) — the writer's output as a `Value` — and
//! [`gemini_is_clean`]); `gemini_view.rs` (Gemini's one writer: the rules
//! written straight to JSON from the borrowed schema, what tool
//! definitions use); `strict.rs` (strict mode, written straight to JSON —
//! its one writer; [`openai_strict`] is that output as a `Value`). In test
//! builds only, `gemini_oracle.rs` and `strict_oracle.rs` are the
//! value-building writers the streaming ones replaced, kept as the tests'
//! oracles.

use std::collections::HashSet;
use std::fmt;

use serde_json::{Map, Value};

use crate::Provider;

mod gemini;
#[cfg(test)]
mod gemini_oracle;
mod gemini_view;
mod strict;
#[cfg(test)]
mod strict_oracle;

pub use gemini::{GEMINI_KEYWORDS, gemini, gemini_is_clean};
pub(crate) use gemini_view::{GeminiView, gemini_view};
pub use strict::{
    STRICT_MAX_DEPTH, STRICT_MAX_ENUM_VALUES, STRICT_MAX_PROPERTIES, openai_strict,
    openai_strict_noted,
};
pub(crate) use strict::{StrictView, strict_view};

/// What a clean-up changed, for the application's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// JSON pointer into the schema.
    pub at: String,
    /// What was done and why.
    pub what: String,
}

impl Note {
    pub(crate) fn new(at: &At<'_>, what: impl Into<String>) -> Self {
        let mut pointer = String::with_capacity(at.len());
        at.write_to(&mut pointer);
        Note {
            at: pointer,
            what: what.into(),
        }
    }
}

/// A JSON pointer into the schema being rewritten, written out only when
/// a note or an error needs it (building one string per keyword was most
/// of the time spent on a large tool list).
#[derive(Clone, Copy, Debug)]
pub(crate) enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    /// The length of the pointer written out.
    pub(crate) fn len(&self) -> usize {
        match self {
            At::Root => 0,
            At::Key(parent, key) => {
                let escapes = key.bytes().filter(|b| matches!(b, b'~' | b'/')).count();
                parent.len() + 1 + key.len() + escapes
            }
            At::Index(parent, i) => parent.len() + 1 + i.checked_ilog10().unwrap_or(0) as usize + 1,
        }
    }

    /// Writes the pointer out into `out` (sized by [`At::len`]: no
    /// reallocation on the way).
    pub(crate) fn write_to(&self, out: &mut String) {
        match self {
            At::Root => {}
            At::Key(parent, key) => {
                parent.write_to(out);
                out.push('/');
                for c in key.chars() {
                    match c {
                        '~' => out.push_str("~0"),
                        '/' => out.push_str("~1"),
                        c => out.push(c),
                    }
                }
            }
            At::Index(parent, i) => {
                use fmt::Write as _;
                parent.write_to(out);
                let _ = write!(out, "/{i}");
            }
        }
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Root => Ok(()),
            At::Key(parent, key) => write!(f, "{parent}/{}", escape(key)),
            At::Index(parent, i) => write!(f, "{parent}/{i}"),
        }
    }
}

/// The schema `provider` gets for `schema` (a tool's `inputSchema`), and
/// what was changed.
///
/// - every provider but Gemini: the schema as is, except that
///   - a missing top-level `type` becomes `"type": "object"` ([`add_type`]):
///     OpenAI and Anthropic reject function parameters without it;
///   - for OpenAI (both APIs), a top-level object schema without
///     `properties` gets `"properties": {}` ([`add_properties`]): OpenAI
///     answers "object schema missing properties" otherwise. Anthropic
///     takes such a schema, so it is left alone there.
/// - Gemini: the rules of [`gemini`](fn@gemini).
pub fn for_provider(provider: Provider, schema: &Map<String, Value>) -> (Value, Vec<Note>) {
    let mut notes = Vec::new();
    match provider {
        Provider::Gemini => gemini(schema),
        Provider::OpenAiResponses | Provider::OpenAiChat => {
            let mut out = add_type(schema, &mut notes);
            add_properties(&mut out, &mut notes);
            (Value::Object(out), notes)
        }
        Provider::Anthropic => (Value::Object(add_type(schema, &mut notes)), notes),
    }
}

/// Rule: a schema without a top-level `type` gets `"type": "object"`
/// (written first; every other keyword kept in order). MCP tools' input
/// schemas are objects, and OpenAI and Anthropic require the `type`.
pub fn add_type(schema: &Map<String, Value>, notes: &mut Vec<Note>) -> Map<String, Value> {
    if schema.contains_key("type") {
        return schema.clone();
    }
    notes.push(Note::new(
        &At::Root,
        "added `\"type\": \"object\"`: the schema had no `type` and the provider requires one",
    ));
    let mut out = Map::with_capacity(schema.len() + 1);
    out.insert("type".into(), "object".into());
    out.extend(schema.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

/// Rule: a top-level `"type": "object"` schema without `properties` gets
/// `"properties": {}` (OpenAI rejects object parameters without them).
pub fn add_properties(schema: &mut Map<String, Value>, notes: &mut Vec<Note>) {
    if schema.get("type").and_then(Value::as_str) == Some("object")
        && !schema.contains_key("properties")
    {
        schema.insert("properties".into(), Value::Object(Map::new()));
        notes.push(Note::new(
            &At::Root,
            "added `\"properties\": {}`: OpenAI rejects an object schema without properties",
        ));
    }
}

/// Most `$ref`s followed inside one another before the next is cut short
/// (a cycle stops sooner); strict mode's limit on `$ref`s inlined inside
/// one another too.
pub(crate) const MAX_REF_DEPTH: usize = 16;

/// The definition a local `$ref` (`#/$defs/…`, `#/definitions/…`) points at.
pub(crate) fn local_target<'a>(
    root: &'a Map<String, Value>,
    reference: &str,
) -> Option<&'a Map<String, Value>> {
    let pointer = reference.strip_prefix('#')?;
    if !(pointer.starts_with("/$defs/") || pointer.starts_with("/definitions/")) {
        return None;
    }
    let mut current = root;
    for part in pointer.split('/').skip(1) {
        current = if part.contains('~') {
            current.get(&part.replace("~1", "/").replace("~0", "~"))
        } else {
            current.get(part)
        }?
        .as_object()?;
    }
    Some(current)
}

/// A JSON-pointer token.
fn escape(token: &str) -> std::borrow::Cow<'_, str> {
    if token.contains(['~', '/']) {
        token.replace('~', "~0").replace('/', "~1").into()
    } else {
        token.into()
    }
}

/// Whether a `type` value (a name or a list of names) names `wanted`.
pub(crate) fn has_type(value: &Value, wanted: &str) -> bool {
    match value {
        Value::String(t) => t == wanted,
        Value::Array(types) => types.iter().any(|t| t.as_str() == Some(wanted)),
        _ => false,
    }
}

/// Takes out of `arguments` the `null`s a model sent under strict mode for
/// properties that were optional in `input_schema` (the schema before
/// [`openai_strict`]), in nested objects and objects in arrays too (local
/// `$ref`s followed), so that the server gets the arguments it described.
/// A `null` for a property the schema required, or whose own schema allows
/// `null`, stays.
pub fn drop_strict_nulls(input_schema: &Map<String, Value>, arguments: &mut Map<String, Value>) {
    drop_nulls_in(input_schema, input_schema, arguments, 0);
}

fn drop_nulls_in(
    root: &Map<String, Value>,
    schema: &Map<String, Value>,
    arguments: &mut Map<String, Value>,
    depth: usize,
) {
    if depth > 32 {
        return;
    }
    let schema = resolve_local(root, schema);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: HashSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    arguments.retain(|name, value| {
        !(value.is_null()
            && !required.contains(name.as_str())
            && properties
                .get(name)
                .and_then(Value::as_object)
                .is_none_or(|s| !allows_null(resolve_local(root, s))))
    });
    for (name, value) in arguments.iter_mut() {
        if let Some(Value::Object(sub)) = properties.get(name) {
            drop_nulls_value(root, sub, value, depth + 1);
        }
    }
}

/// [`drop_nulls_in`] for an object value, or for each element of an array
/// value whose schema has one `items` schema.
fn drop_nulls_value(
    root: &Map<String, Value>,
    schema: &Map<String, Value>,
    value: &mut Value,
    depth: usize,
) {
    match value {
        Value::Object(arguments) => drop_nulls_in(root, schema, arguments, depth),
        Value::Array(elements) => {
            if let Some(Value::Object(items)) = resolve_local(root, schema).get("items") {
                for element in elements {
                    drop_nulls_value(root, items, element, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn resolve_local<'a>(
    root: &'a Map<String, Value>,
    schema: &'a Map<String, Value>,
) -> &'a Map<String, Value> {
    let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
        return schema;
    };
    local_target(root, reference).unwrap_or(schema)
}

fn allows_null(schema: &Map<String, Value>) -> bool {
    schema.get("type").is_some_and(|t| has_type(t, "null"))
        || schema.get("nullable") == Some(&Value::Bool(true))
        || schema
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
        || schema.get("const") == Some(&Value::Null)
        || ["anyOf", "oneOf"].iter().any(|k| {
            schema
                .get(*k)
                .and_then(Value::as_array)
                .is_some_and(|entries| entries.iter().filter_map(Value::as_object).any(allows_null))
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pointers_are_escaped() {
        let root = At::Root;
        let a = At::Key(&root, "a/b");
        let b = At::Index(&a, 3);
        let c = At::Key(&b, "~x");
        assert_eq!(c.to_string(), "/a~1b/3/~0x");
        assert_eq!(root.to_string(), "");
    }

    #[test]
    fn note_pointers_are_sized_exactly() {
        let root = At::Root;
        let a = At::Key(&root, "properties");
        let b = At::Key(&a, "é/~ü");
        let c = At::Index(&b, 0);
        let d = At::Index(&c, 9);
        let e = At::Index(&d, 10);
        let f = At::Index(&e, 123_456);
        let g = At::Key(&f, "");
        for at in [root, a, b, c, d, e, f, g] {
            let note = Note::new(&at, "x");
            assert_eq!(note.at, at.to_string());
            assert_eq!(at.len(), note.at.len());
        }
    }

    #[test]
    fn local_targets_follow_defs_and_definitions_only() {
        let Value::Object(root) = json!({
            "$defs": {"a/b": {"type": "string"}, "n": {"$defs": {"m": {"type": "integer"}}}},
            "definitions": {"c~d": {"type": "number"}},
            "properties": {"p": {"type": "boolean"}}
        }) else {
            unreachable!()
        };
        let get = |r: &str| local_target(&root, r).map(|m| m["type"].clone());
        assert_eq!(get("#/$defs/a~1b"), Some(json!("string")));
        assert_eq!(get("#/definitions/c~0d"), Some(json!("number")));
        assert_eq!(get("#/$defs/n/$defs/m"), Some(json!("integer")));
        assert_eq!(get("#/properties/p"), None);
        assert_eq!(get("#"), None);
        assert_eq!(get("other.json#/$defs/a~1b"), None);
        assert_eq!(get("#/$defs/missing"), None);
    }
}
