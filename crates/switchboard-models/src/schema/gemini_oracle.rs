//! The value-building Gemini writer, kept only for the tests as the
//! oracle the streaming writer ([`super::gemini_view`]) is checked
//! against: the same notes and, serialized, the same text. Not shipped.

use serde_json::{Map, Value, json};

use super::gemini::{GEMINI_KEYWORDS, MAX_REF_EXPANSIONS, is_null_schema, json_type};
use super::gemini_view::clean_map;
use super::{At, MAX_REF_DEPTH, Note, local_target};

/// What [`gemini`](super::gemini) gave before the streaming writer was its
/// only writer: the schema built as a `Value`, and the notes.
pub(super) fn gemini(schema: &Map<String, Value>) -> (Value, Vec<Note>) {
    let mut cx = Gemini {
        root: schema,
        notes: Vec::new(),
        stack: Vec::new(),
        expansions: 0,
    };
    let mut out = cx.schema_map(schema, &At::Root);
    if !out.contains_key("type") && !out.contains_key("anyOf") {
        let mut typed = Map::with_capacity(out.len() + 1);
        typed.insert("type".into(), "object".into());
        typed.append(&mut out);
        out = typed;
        cx.notes.push(Note::new(
            &At::Root,
            "added `\"type\": \"object\"`: the schema had no `type`",
        ));
    }
    (Value::Object(out), cx.notes)
}

struct Gemini<'a> {
    root: &'a Map<String, Value>,
    notes: Vec<Note>,
    /// The `$ref`s being expanded, outermost first.
    stack: Vec<String>,
    expansions: usize,
}

impl Gemini<'_> {
    fn note(&mut self, at: &At<'_>, what: impl Into<String>) {
        self.notes.push(Note::new(at, what));
    }

    /// Any schema value: an object or a boolean.
    fn schema(&mut self, value: &Value, at: &At<'_>) -> Value {
        match value {
            Value::Object(map) => Value::Object(self.schema_map(map, at)),
            Value::Bool(b) => {
                self.note(
                    at,
                    if *b {
                        "boolean schema `true` became `{}`"
                    } else {
                        "boolean schema `false` (no value valid) became `{}`: Gemini cannot \
                         express it"
                    },
                );
                Value::Object(Map::new())
            }
            _ => {
                self.note(at, "a non-schema value in a schema position became `{}`");
                Value::Object(Map::new())
            }
        }
    }

    fn schema_map(&mut self, map: &Map<String, Value>, at: &At<'_>) -> Map<String, Value> {
        // Nothing to change below here: one copy (cheaper than rebuilding
        // it key by key).
        if clean_map(map) {
            return map.clone();
        }
        if let Some(reference) = map.get("$ref") {
            return self.reference(map, reference, at);
        }
        let mut out = Map::with_capacity(map.len());
        // Appended to the description after everything else is known.
        let mut described: Vec<String> = Vec::new();
        let mut nullable = false;
        for (key, value) in map {
            let here = At::Key(at, key);
            match key.as_str() {
                "type" => self.type_keyword(value, &here, &mut out, &mut nullable),
                "properties" => match value {
                    Value::Object(properties) => {
                        let mut converted = Map::with_capacity(properties.len());
                        for (name, schema) in properties {
                            let at = At::Key(&here, name);
                            converted.insert(name.clone(), self.schema(schema, &at));
                        }
                        out.insert(key.clone(), Value::Object(converted));
                    }
                    _ => self.note(&here, "dropped `properties`: not an object"),
                },
                "items" => match value {
                    Value::Array(entries) => {
                        let items = self.tuple(entries, &here);
                        out.insert("items".into(), items);
                    }
                    other => {
                        let items = self.schema(other, &here);
                        out.insert("items".into(), items);
                    }
                },
                "prefixItems" => match (value, map.contains_key("items")) {
                    (Value::Array(entries), false) => {
                        let items = self.tuple(entries, &here);
                        out.insert("items".into(), items);
                    }
                    _ => self.note(
                        &here,
                        "dropped `prefixItems`: Gemini has no tuples and `items` is given",
                    ),
                },
                "anyOf" | "oneOf" => {
                    let Value::Array(entries) = value else {
                        self.note(&here, format!("dropped `{key}`: not an array"));
                        continue;
                    };
                    if key == "oneOf" && map.contains_key("anyOf") {
                        self.note(
                            &here,
                            "dropped `oneOf`: the schema has an `anyOf` already and Gemini \
                             takes one",
                        );
                        continue;
                    }
                    if key == "oneOf" {
                        self.note(&here, "`oneOf` became `anyOf`: Gemini has no `oneOf`");
                    }
                    let mut converted = Vec::with_capacity(entries.len());
                    for (i, entry) in entries.iter().enumerate() {
                        if is_null_schema(entry) {
                            nullable = true;
                            self.note(
                                &At::Index(&here, i),
                                "`{\"type\": \"null\"}` became `\"nullable\": true`",
                            );
                            continue;
                        }
                        converted.push(self.schema(entry, &At::Index(&here, i)));
                    }
                    if !converted.is_empty() {
                        out.insert("anyOf".into(), Value::Array(converted));
                    }
                }
                "allOf" => {} // merged below, after the schema's own keywords
                "const" => {
                    if map.contains_key("enum") {
                        self.note(&here, "dropped `const`: the schema has an `enum` too");
                        continue;
                    }
                    match value {
                        Value::String(_) => {
                            out.insert("enum".into(), Value::Array(vec![value.clone()]));
                            if !map.contains_key("type") {
                                out.insert("type".into(), "string".into());
                            }
                            self.note(
                                &here,
                                "`const` became a one-value `enum`: Gemini has no `const`",
                            );
                        }
                        other => {
                            if !map.contains_key("type")
                                && let Some(t) = json_type(std::slice::from_ref(other))
                            {
                                out.insert("type".into(), t.into());
                            }
                            described.push(format!("Must be {other}."));
                            self.note(
                                &here,
                                "dropped `const` (not a string; Gemini enums are strings) and \
                                 wrote its value into the description",
                            );
                        }
                    }
                }
                "enum" => {
                    let Value::Array(values) = value else {
                        self.note(&here, "dropped `enum`: not an array");
                        continue;
                    };
                    let has_null = values.iter().any(Value::is_null);
                    let strings = values.iter().filter(|v| v.is_string());
                    if strings.clone().count() + usize::from(has_null) == values.len() {
                        if has_null {
                            nullable = true;
                            self.note(&here, "`null` in `enum` became `\"nullable\": true`");
                        }
                        let mut kept = Vec::with_capacity(values.len() - usize::from(has_null));
                        kept.extend(strings.cloned());
                        out.insert("enum".into(), Value::Array(kept));
                        if !map.contains_key("type") {
                            out.insert("type".into(), "string".into());
                            self.note(
                                &here,
                                "added `\"type\": \"string\"` to a string `enum` without a type",
                            );
                        }
                    } else {
                        if !map.contains_key("type")
                            && let Some(t) = json_type(values)
                        {
                            out.insert("type".into(), t.into());
                        }
                        let listed: Vec<String> = values.iter().map(Value::to_string).collect();
                        described.push(format!("Allowed values: {}.", listed.join(", ")));
                        self.note(
                            &here,
                            "dropped `enum` (non-string values; Gemini enums are strings) and \
                             wrote its values into the description",
                        );
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let inclusive = if key == "exclusiveMinimum" {
                        "minimum"
                    } else {
                        "maximum"
                    };
                    let Some(bound) = value.as_f64() else {
                        self.note(
                            &here,
                            format!("dropped `{key}`: Gemini has no exclusive bounds"),
                        );
                        continue;
                    };
                    let tighter = map.get(inclusive).and_then(Value::as_f64).is_some_and(|m| {
                        if inclusive == "minimum" {
                            m > bound
                        } else {
                            m < bound
                        }
                    });
                    if tighter {
                        self.note(
                            &here,
                            format!("dropped `{key}`: `{inclusive}` is tighter already"),
                        );
                    } else {
                        out.insert(inclusive.into(), value.clone());
                        self.note(
                            &here,
                            format!(
                                "`{key}` became `{inclusive}` (inclusive): Gemini has no \
                                 exclusive bounds"
                            ),
                        );
                    }
                }
                "minimum" | "maximum" => {
                    // An exclusive bound that replaced this one wins (see above).
                    if !out.contains_key(key.as_str()) {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "$defs" | "definitions" => {
                    self.note(
                        &here,
                        format!("dropped `{key}`: references to it are inlined"),
                    );
                }
                "required" => {} // filtered below, once `properties` is known
                k if GEMINI_KEYWORDS.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                _ => self.note(
                    &here,
                    format!("dropped `{key}`: not part of the schema Gemini accepts"),
                ),
            }
        }
        if let Some(Value::Array(entries)) = map.get("allOf") {
            let at = At::Key(at, "allOf");
            self.all_of(entries, &at, &mut out);
        } else if map.contains_key("allOf") {
            self.note(&At::Key(at, "allOf"), "dropped `allOf`: not an array");
        }
        if let Some(required) = map.get("required") {
            self.required(required, &At::Key(at, "required"), &mut out);
        }
        // `anyOf` of one schema (after `null` became `nullable`): merged in.
        if let Some(Value::Array(entries)) = out.get("anyOf")
            && let [Value::Object(_)] = entries.as_slice()
            && let Some(Value::Array(mut entries)) = out.shift_remove("anyOf")
            && let Some(Value::Object(only)) = entries.pop()
        {
            merge_into(&mut out, only);
            self.note(
                &At::Key(at, "anyOf"),
                "an `anyOf` of a single schema was merged into the schema",
            );
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        if !described.is_empty() {
            let mut text = out
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            for extra in described {
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(&extra);
            }
            out.insert("description".into(), Value::String(text));
        }
        out
    }

    fn type_keyword(
        &mut self,
        value: &Value,
        at: &At<'_>,
        out: &mut Map<String, Value>,
        nullable: &mut bool,
    ) {
        let Value::Array(types) = value else {
            out.insert("type".into(), value.clone());
            return;
        };
        let mut others = types.iter().filter(|t| t.as_str() != Some("null"));
        let count = others.clone().count();
        if count < types.len() {
            *nullable = true;
        }
        match (count, others.next()) {
            (0, _) | (_, None) => {
                out.insert("type".into(), "null".into());
            }
            (1, Some(one)) => {
                out.insert("type".into(), one.clone());
            }
            (_, Some(first)) => {
                let mut entries = Vec::with_capacity(count);
                entries.extend(
                    std::iter::once(first)
                        .chain(others)
                        .map(|t| json!({ "type": t })),
                );
                out.insert("anyOf".into(), Value::Array(entries));
                self.note(
                    at,
                    "a `type` array of several types became an `anyOf`: Gemini takes one type",
                );
                return;
            }
        }
        self.note(
            at,
            "a `type` array became one `type` (and `\"nullable\": true` for `null`)",
        );
    }

    fn tuple(&mut self, entries: &[Value], at: &At<'_>) -> Value {
        self.note(
            at,
            "tuple items became one `items` schema: Gemini has no tuples",
        );
        let mut converted: Vec<Value> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| self.schema(e, &At::Index(at, i)))
            .collect();
        match converted.len() {
            0 => Value::Object(Map::new()),
            1 => converted.pop().expect("one"),
            _ => json!({ "anyOf": converted }),
        }
    }

    fn all_of(&mut self, entries: &[Value], at: &At<'_>, out: &mut Map<String, Value>) {
        for (i, entry) in entries.iter().enumerate() {
            let Value::Object(converted) = self.schema(entry, &At::Index(at, i)) else {
                continue;
            };
            merge_into(out, converted);
        }
        self.note(
            at,
            "`allOf` was merged into the schema (properties and required united): Gemini has \
             no `allOf`",
        );
    }

    fn required(&mut self, required: &Value, at: &At<'_>, out: &mut Map<String, Value>) {
        let Value::Array(names) = required else {
            self.note(at, "dropped `required`: not an array");
            return;
        };
        let properties = out.get("properties").and_then(Value::as_object);
        let mut kept: Vec<Value> = Vec::with_capacity(names.len());
        // Entries already there (merged from `allOf`) stay.
        if let Some(Value::Array(existing)) = out.get("required") {
            kept.extend(existing.iter().cloned());
        }
        for name in names {
            let named = name
                .as_str()
                .is_some_and(|n| properties.is_some_and(|p| p.contains_key(n)));
            if !named {
                self.note(
                    at,
                    format!("dropped {name} from `required`: no such property"),
                );
            } else if !kept.contains(name) {
                kept.push(name.clone());
            }
        }
        if kept.is_empty() {
            out.shift_remove("required");
        } else {
            out.insert("required".into(), Value::Array(kept));
        }
    }

    fn reference(
        &mut self,
        map: &Map<String, Value>,
        reference: &Value,
        at: &At<'_>,
    ) -> Map<String, Value> {
        let here = At::Key(at, "$ref");
        let root = self.root;
        let Some(target) = reference.as_str().and_then(|r| local_target(root, r)) else {
            self.note(
                &here,
                format!(
                    "dropped `$ref` {reference}: only `#/$defs/…` and `#/definitions/…` are inlined"
                ),
            );
            let mut siblings = map.clone();
            siblings.shift_remove("$ref");
            return self.schema_map(&siblings, at);
        };
        let reference = reference.as_str().unwrap_or_default().to_owned();
        if self.stack.contains(&reference)
            || self.stack.len() >= MAX_REF_DEPTH
            || self.expansions >= MAX_REF_EXPANSIONS
        {
            let why = if self.stack.contains(&reference) {
                "recursive"
            } else if self.stack.len() >= MAX_REF_DEPTH {
                "too deeply nested"
            } else {
                "one too many (the schema expands too far)"
            };
            self.note(
                &here,
                format!("`$ref` {reference} is {why}: not expanded, only its type kept"),
            );
            let mut out = Map::new();
            let kind = target.get("type").filter(|t| t.is_string());
            out.insert("type".into(), kind.cloned().unwrap_or("object".into()));
            let description = map
                .get("description")
                .or_else(|| target.get("description"))
                .and_then(Value::as_str)
                .map_or_else(
                    || format!("(Same structure as `{reference}`, not repeated.)"),
                    |d| format!("{d} (Same structure as `{reference}`, not repeated.)"),
                );
            out.insert("description".into(), Value::String(description));
            return out;
        }
        self.expansions += 1;
        self.note(
            &here,
            format!("`$ref` {reference} was inlined: Gemini has no `$ref`"),
        );
        // The definition, with the keywords beside the `$ref` winning.
        let mut merged = target.clone();
        for (k, v) in map {
            if k != "$ref" {
                merged.insert(k.clone(), v.clone());
            }
        }
        self.stack.push(reference);
        let out = if clean_map(&merged) {
            merged
        } else {
            self.schema_map(&merged, at)
        };
        self.stack.pop();
        out
    }
}

/// Merges `from` into `into`: `properties` and `required` united (what
/// `into` has wins), any other keyword only where `into` has none.
fn merge_into(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (key, value) in from {
        match (key.as_str(), into.get_mut(&key), value) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (name, schema) in theirs {
                    if !mine.contains_key(&name) {
                        mine.insert(name, schema);
                    }
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for name in theirs {
                    if !mine.contains(&name) {
                        mine.push(name);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, value) => {
                into.insert(key, value);
            }
        }
    }
}
