//! The value-building writer of OpenAI strict mode, kept only for the
//! tests as the oracle the streaming writer ([`super::strict`]) is
//! checked against: the same refusal and reason, the same notes and,
//! serialized, the same text. Not shipped.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::gemini::is_null_schema;
use super::strict::{
    STRICT_BLOCKERS, STRICT_FORMATS, STRICT_KEYWORDS, STRICT_MAX_DEPTH, STRICT_MAX_ENUM_VALUES,
    STRICT_MAX_PROPERTIES,
};
use super::{At, MAX_REF_DEPTH, Note, add_type, has_type, local_target};

/// What `openai_strict_noted` gave before the streaming writer: the
/// strict schema built as a `Value`, and the notes; or why not.
pub(super) fn openai_strict_noted(
    schema: &Map<String, Value>,
) -> Result<(Value, Vec<Note>), String> {
    let mut notes = Vec::new();
    let typed;
    let root = if schema.contains_key("type") {
        schema
    } else {
        typed = add_type(schema, &mut notes);
        &typed
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the schema's root is not `\"type\": \"object\"`".into());
    }
    if root.contains_key("anyOf") || root.contains_key("oneOf") {
        return Err("the schema's root is a union (`anyOf`/`oneOf`)".into());
    }
    let mut cx = Strict {
        root: schema,
        properties: 0,
        enum_values: 0,
        inlined: 0,
        notes,
    };
    let out = cx.schema_map(root, &At::Root, 0, true)?;
    Ok((out, cx.notes))
}

struct Strict<'a> {
    root: &'a Map<String, Value>,
    properties: usize,
    enum_values: usize,
    /// `$ref`s being inlined inside one another.
    inlined: usize,
    notes: Vec<Note>,
}

impl Strict<'_> {
    fn schema(
        &mut self,
        value: &Value,
        at: &At<'_>,
        depth: usize,
        root: bool,
    ) -> Result<Value, String> {
        match value {
            Value::Object(map) => self.schema_map(map, at, depth, root),
            Value::Bool(true) => Err(format!("`{at}` allows any value (`true`)")),
            _ => Err(format!("`{at}` is not a schema")),
        }
    }

    fn schema_map(
        &mut self,
        map: &Map<String, Value>,
        at: &At<'_>,
        depth: usize,
        root: bool,
    ) -> Result<Value, String> {
        let at_or_root = |at: &At<'_>| {
            if matches!(at, At::Root) {
                "the root".to_owned()
            } else {
                format!("`{at}`")
            }
        };
        if let Some(blocker) = STRICT_BLOCKERS.iter().find(|k| map.contains_key(**k)) {
            return Err(format!(
                "{} uses `{blocker}`, which strict mode does not support",
                at_or_root(at)
            ));
        }
        if let Some(reference) = map.get("$ref")
            && map.len() > 1
        {
            return self.inline(map, reference, at, depth, root);
        }
        let shaped = [
            "type",
            "anyOf",
            "oneOf",
            "$ref",
            "enum",
            "const",
            "properties",
        ];
        if !shaped.iter().any(|k| map.contains_key(*k)) {
            return Err(format!(
                "{} has no `type` (any value), which strict mode does not support",
                at_or_root(at)
            ));
        }
        if map.get("type").is_some_and(|t| has_type(t, "array")) && !map.contains_key("items") {
            return Err(format!(
                "{} is an array without `items` (any items)",
                at_or_root(at)
            ));
        }
        let is_object = map.get("type").is_some_and(|t| has_type(t, "object"))
            || map.contains_key("properties");
        let depth = depth + usize::from(is_object);
        if depth > STRICT_MAX_DEPTH {
            return Err(format!(
                "objects are nested more than {STRICT_MAX_DEPTH} levels deep (OpenAI's limit)"
            ));
        }
        let mut out = Map::with_capacity(map.len() + 2);
        for (key, value) in map {
            let here = At::Key(at, key);
            match key.as_str() {
                "properties" => {
                    let Value::Object(properties) = value else {
                        return Err(format!("`{here}` is not an object"));
                    };
                    self.properties += properties.len();
                    if self.properties > STRICT_MAX_PROPERTIES {
                        return Err(format!(
                            "more than {STRICT_MAX_PROPERTIES} properties (OpenAI's limit)"
                        ));
                    }
                    let required: HashSet<&str> = map
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let mut converted = Map::with_capacity(properties.len());
                    let mut optional = Vec::new();
                    for (name, schema) in properties {
                        let at = At::Key(&here, name);
                        let mut schema = self.schema(schema, &at, depth, false)?;
                        if !required.contains(name.as_str()) {
                            schema = make_nullable(schema);
                            optional.push(format!("`{name}`"));
                        }
                        converted.insert(name.clone(), schema);
                    }
                    if !optional.is_empty() {
                        self.notes.push(Note::new(
                            &here,
                            format!(
                                "optional {} made required and nullable: strict mode requires \
                                 every property",
                                optional.join(", ")
                            ),
                        ));
                    }
                    out.insert(key.clone(), Value::Object(converted));
                }
                "items" => {
                    if value.is_array() {
                        return Err(format!(
                            "`{here}` is a tuple, which strict mode does not support"
                        ));
                    }
                    out.insert(key.clone(), self.schema(value, &here, depth, false)?);
                }
                "anyOf" | "oneOf" => {
                    let Value::Array(entries) = value else {
                        return Err(format!("`{here}` is not an array"));
                    };
                    let mut converted = Vec::with_capacity(entries.len());
                    for (i, entry) in entries.iter().enumerate() {
                        converted.push(self.schema(entry, &At::Index(&here, i), depth, false)?);
                    }
                    if key == "oneOf" {
                        self.notes.push(Note::new(
                            &here,
                            "`oneOf` became `anyOf`: strict mode has no `oneOf`",
                        ));
                    }
                    if out.contains_key("anyOf") {
                        // One union of both would loosen the schema.
                        return Err(format!("{} has both `anyOf` and `oneOf`", at_or_root(at)));
                    }
                    out.insert("anyOf".into(), Value::Array(converted));
                }
                "$defs" | "definitions" => {
                    let Value::Object(definitions) = value else {
                        return Err(format!("`{here}` is not an object"));
                    };
                    let mut converted = Map::with_capacity(definitions.len());
                    for (name, schema) in definitions {
                        let at = At::Key(&here, name);
                        converted.insert(name.clone(), self.schema(schema, &at, 0, false)?);
                    }
                    out.insert(key.clone(), Value::Object(converted));
                }
                "additionalProperties" if value != &Value::Bool(false) => {
                    return Err(format!(
                        "{} allows additional properties (a free-form map)",
                        at_or_root(at)
                    ));
                }
                "additionalProperties" => {} // written below
                "enum" => {
                    let count = value.as_array().map_or(0, Vec::len);
                    self.enum_values += count;
                    if self.enum_values > STRICT_MAX_ENUM_VALUES {
                        return Err(format!(
                            "more than {STRICT_MAX_ENUM_VALUES} enum values (OpenAI's limit)"
                        ));
                    }
                    out.insert(key.clone(), value.clone());
                }
                "format" if value.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)) => {
                    out.insert(key.clone(), value.clone());
                }
                "format" => self.notes.push(Note::new(
                    &here,
                    format!("removed `format` {value}: strict mode does not support it"),
                )),
                "nullable" => {} // folded into `type` below
                "required" => {} // every property, written below
                k if STRICT_KEYWORDS.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                _ => self.notes.push(Note::new(
                    &here,
                    format!("removed `{key}`: strict mode does not support it"),
                )),
            }
        }
        if map.get("nullable") == Some(&Value::Bool(true)) {
            let schema = make_nullable(Value::Object(out));
            let Value::Object(map) = schema else {
                unreachable!("make_nullable keeps an object")
            };
            out = map;
        }
        if is_object {
            let has_properties = out
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty());
            let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
            if !has_properties && !root && !closed {
                return Err(format!(
                    "`{at}` is an object without properties (a free-form map)"
                ));
            }
            let names: Vec<Value> = out
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(|k| Value::String(k.clone())).collect())
                .unwrap_or_default();
            if !out.contains_key("properties") {
                out.insert("properties".into(), Value::Object(Map::new()));
            }
            out.insert("required".into(), Value::Array(names));
            out.insert("additionalProperties".into(), Value::Bool(false));
        }
        Ok(Value::Object(out))
    }

    /// A `$ref` with other keywords beside it (strict mode takes a bare
    /// `$ref` only): the definition, with those keywords winning, in its
    /// place.
    fn inline(
        &mut self,
        map: &Map<String, Value>,
        reference: &Value,
        at: &At<'_>,
        depth: usize,
        root: bool,
    ) -> Result<Value, String> {
        let Some(target) = reference.as_str().and_then(|r| local_target(self.root, r)) else {
            return Err(format!(
                "`{at}` has keywords beside a `$ref` that cannot be inlined"
            ));
        };
        if self.inlined >= MAX_REF_DEPTH {
            return Err(format!(
                "`{at}`: `$ref`s with keywords beside them nest too deeply to inline"
            ));
        }
        self.notes.push(Note::new(
            &At::Key(at, "$ref"),
            format!(
                "`$ref` {reference} was inlined: strict mode takes no keywords beside a `$ref`"
            ),
        ));
        let mut merged = target.clone();
        for (k, v) in map {
            if k != "$ref" {
                merged.insert(k.clone(), v.clone());
            }
        }
        self.inlined += 1;
        let out = self.schema(&Value::Object(merged), at, depth, root);
        self.inlined -= 1;
        out
    }
}

/// `schema` that also accepts `null`.
fn make_nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    let simple =
        !map.contains_key("$ref") && !map.contains_key("anyOf") && !map.contains_key("const");
    let nullable_type = match map.get("type") {
        Some(Value::String(t)) if simple && t == "null" => Some(Value::String(t.clone())),
        Some(Value::String(t)) if simple => Some(json!([t, "null"])),
        Some(Value::Array(types)) if simple => {
            let mut types = types.clone();
            if !types.iter().any(|t| t.as_str() == Some("null")) {
                types.push("null".into());
            }
            Some(Value::Array(types))
        }
        _ => None,
    };
    let Some(nullable_type) = nullable_type else {
        if map.len() == 1
            && let Some(Value::Array(entries)) = map.get_mut("anyOf")
        {
            if !entries.iter().any(is_null_schema) {
                entries.push(json!({"type": "null"}));
            }
            return Value::Object(map);
        }
        return json!({ "anyOf": [Value::Object(map), {"type": "null"}] });
    };
    map.insert("type".into(), nullable_type);
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_nullable_shapes() {
        assert_eq!(
            make_nullable(json!({"type": "string"})),
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            make_nullable(json!({"type": ["string", "null"]})),
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            make_nullable(json!({"type": "null"})),
            json!({"type": "null"})
        );
        assert_eq!(
            make_nullable(json!({"anyOf": [{"type": "string"}]})),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        );
        assert_eq!(
            make_nullable(json!({"anyOf": [{"type": "string"}], "description": "d"})),
            json!({"anyOf": [{"anyOf": [{"type": "string"}], "description": "d"}, {"type": "null"}]})
        );
        assert_eq!(
            make_nullable(json!({"type": "integer", "enum": [1, 2]})),
            json!({"type": ["integer", "null"], "enum": [1, 2, null]})
        );
    }
}
