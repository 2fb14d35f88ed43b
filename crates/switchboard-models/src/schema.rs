//! Per-provider input-schema clean-up: only what a provider rejects is
//! changed, each rule documented and tested; OpenAI strict mode.
//!
//! A tool's `inputSchema` reaches OpenAI and Anthropic whole — same
//! keywords, same order — except for the two fixes of [`for_provider`].
//! Gemini's `parameters` take a subset of OpenAPI 3.0 (see
//! <https://ai.google.dev/api/caching#Schema>), so for Gemini the schema is
//! rewritten by the rules listed at [`gemini`]. [`openai_strict`] makes a
//! schema acceptable for OpenAI's `strict: true`. Every change is reported
//! as a [`Note`].

use std::collections::HashSet;
use std::fmt;

use serde_json::{Map, Value, json};

use crate::Provider;

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
/// - Gemini: the rules of [`gemini`].
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

// ---------------------------------------------------------------------------
// Gemini

/// Keywords Gemini's `Schema` takes; the rest are rewritten or dropped.
pub const GEMINI_KEYWORDS: [&str; 22] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// Most `$ref`s followed inside one another before the next is cut short
/// (a cycle stops sooner).
pub(crate) const MAX_REF_DEPTH: usize = 16;
/// Most `$ref`s inlined in one schema: a small schema whose definitions
/// refer to each other many times over could otherwise expand
/// exponentially.
pub(crate) const MAX_REF_EXPANSIONS: usize = 1000;

/// The schema for Gemini's `parameters` and what was changed. Rules, each
/// with a [`Note`] where it applies:
///
/// 1. **`$ref`** to `#/$defs/…` or `#/definitions/…` is replaced by the
///    definition (keywords beside the `$ref` win over the definition's).
///    A reference back into itself (a cycle), more than 16 nested, or
///    beyond 1000 inlined in all becomes a schema of just the definition's
///    `type` (`object` when it has none) and a description naming it. Any other reference is dropped. The
///    `$defs`/`definitions` themselves are dropped.
/// 2. **`type` arrays**: `"null"` in the list becomes `"nullable": true`;
///    one other type stays as `type`; several become an `anyOf` of one
///    schema per type.
/// 3. **`anyOf` with `{"type": "null"}`**: that entry becomes
///    `"nullable": true`; a single remaining entry is merged into the
///    schema.
/// 4. **`oneOf`** becomes `anyOf` (Gemini has no exclusive union; the model
///    rarely produces a value matching two entries).
/// 5. **`allOf`** entries are merged into the schema: `properties` and
///    `required` are united, any other keyword is taken from the first
///    place that has it (the schema itself, then the entries in order).
/// 6. **`const`** of a string becomes a one-value `enum` (with
///    `"type": "string"` when the type is missing).
/// 7. **`enum`** must hold strings: `null` in it becomes `nullable`; an enum
///    with other non-strings (numbers, booleans) is dropped, and its values
///    are written into the description (`Allowed values: 1, 2, 3.`) so the
///    model still sees them; so is a non-string `const`. Without a `type`,
///    the values' own type is written (`integer`, `number` or `boolean`,
///    when they share one). A string enum without a `type` gets
///    `"type": "string"`.
/// 8. **`exclusiveMinimum`/`exclusiveMaximum`** (numbers, 2019-09 and later)
///    become `minimum`/`maximum` unless a tighter one is already there: the
///    bound becomes inclusive. The draft-4 boolean form is dropped.
/// 9. **tuple `items`** (an array, or `prefixItems`) become one `items`
///    schema: the entry or an `anyOf` of the entries.
/// 10. **`required`** entries naming no property are dropped (Gemini
///     rejects them); an empty `required` is dropped.
/// 11. **any other keyword** (`$schema`, `$id`, `$comment`,
///     `additionalProperties`, `patternProperties`, `examples`,
///     `if`/`then`/`else`, `not`, `dependentRequired`, `unevaluated*`,
///     `contentMediaType`, vendor `x-…` …) is dropped.
/// 12. **boolean schemas**: `true` becomes `{}`; `false` (nothing is
///     valid) also becomes `{}`, with a note.
///
/// Type names stay JSON Schema's lowercase ones (`"string"`); Gemini's API
/// takes them as well as its own `STRING`.
///
/// Only schema positions are rewritten (`properties` values, `items`,
/// `anyOf`/`oneOf`/`allOf` entries, definitions): a property named `type`
/// or `$ref` is a name, not a keyword.
pub fn gemini(schema: &Map<String, Value>) -> (Value, Vec<Note>) {
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

/// Deepest nesting of schemas [`gemini_is_clean`] walks; anything deeper
/// is reported as not clean (the full [`gemini`] then runs).
pub(crate) const CLEAN_MAX_DEPTH: usize = 64;

/// Whether [`gemini`] would leave `schema` exactly as it is — same keys in
/// the same order, same values, no [`Note`] — so that it can be sent
/// without being rewritten (or copied). A read-only walk that allocates
/// nothing.
///
/// `true` only when, at the top level and in every schema position below
/// it (`properties` values, `items`, `anyOf` entries):
///
/// - the schema is an object (not a boolean or another value) without
///   `$ref` (rule 1);
/// - every keyword is one of [`GEMINI_KEYWORDS`] (rules 1, 4–6, 8, 9, 11:
///   `$defs`, `definitions`, `oneOf`, `allOf`, `const`,
///   `exclusiveMinimum`/`exclusiveMaximum`, `prefixItems` and any other
///   keyword make it `false`);
/// - `type` is not an array (rule 2);
/// - `properties` is an object; `items` is one schema, not a tuple
///   (rule 9);
/// - `anyOf` is an array of at least two entries, none of them
///   `{"type": "null"}` (rule 3; an empty `anyOf` would be dropped);
/// - `enum` is an array of strings only, beside a `type` (rule 7);
/// - `required` is a non-empty array of distinct strings, each naming one
///   of the schema's `properties` (rule 10), and is the schema's last
///   keyword ([`gemini`] writes it after the others);
/// - the top level has a `type` or an `anyOf`;
/// - schemas nest at most 64 deep.
///
/// Values that are not schemas (`default`, `example`, `enum` entries,
/// property names) are not looked into: a property named `$ref` is fine.
#[must_use]
pub fn gemini_is_clean(schema: &Map<String, Value>) -> bool {
    (schema.contains_key("type") || schema.contains_key("anyOf")) && clean_map(schema, 0)
}

/// [`gemini_is_clean`] for a value in a schema position: [`Gemini::schema`]
/// rewrites anything but an object.
fn clean_schema(value: &Value, depth: usize) -> bool {
    value.as_object().is_some_and(|map| clean_map(map, depth))
}

/// [`gemini_is_clean`] for one schema object, keyword by keyword as
/// [`Gemini::schema_map`] goes.
fn clean_map(map: &Map<String, Value>, depth: usize) -> bool {
    if depth > CLEAN_MAX_DEPTH {
        return false;
    }
    let last = map.len().saturating_sub(1);
    map.iter()
        .enumerate()
        .all(|(i, (key, value))| match key.as_str() {
            // `type_keyword`: an array is rewritten, anything else copied.
            "type" => !value.is_array(),
            "properties" => value
                .as_object()
                .is_some_and(|p| p.values().all(|s| clean_schema(s, depth + 1))),
            // A tuple (an array) becomes one schema.
            "items" => clean_schema(value, depth + 1),
            // Fewer than two entries are dropped or merged; a null entry
            // becomes `nullable`.
            "anyOf" => value.as_array().is_some_and(|entries| {
                entries.len() >= 2
                    && entries
                        .iter()
                        .all(|e| !is_null_schema(e) && clean_schema(e, depth + 1))
            }),
            // Without a `type`, one is added.
            "enum" => {
                map.contains_key("type")
                    && value
                        .as_array()
                        .is_some_and(|values| values.iter().all(Value::is_string))
            }
            // Written after every other keyword, filtered and deduplicated.
            "required" => i == last && clean_required(map, value),
            // Copied unless an exclusive bound replaced them (never here).
            "minimum" | "maximum" => true,
            // Always rewritten or dropped, with a note.
            "$ref" | "$defs" | "definitions" | "oneOf" | "allOf" | "const" | "prefixItems"
            | "exclusiveMinimum" | "exclusiveMaximum" => false,
            k => GEMINI_KEYWORDS.contains(&k),
        })
}

/// Whether [`Gemini::required`] keeps `required` as it is.
fn clean_required(map: &Map<String, Value>, required: &Value) -> bool {
    let Some(names) = required.as_array() else {
        return false;
    };
    let Some(properties) = map.get("properties").and_then(Value::as_object) else {
        return false;
    };
    !names.is_empty()
        && names.iter().enumerate().all(|(i, name)| {
            name.as_str().is_some_and(|n| properties.contains_key(n)) && !names[..i].contains(name)
        })
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
        if clean_map(map, 0) {
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
        let out = if clean_map(&merged, 0) {
            merged
        } else {
            self.schema_map(&merged, at)
        };
        self.stack.pop();
        out
    }
}

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

/// The one JSON type of all of `values` (`integer` before `number`).
fn json_type(values: &[Value]) -> Option<&'static str> {
    if values.is_empty() {
        None
    } else if values.iter().all(|v| v.is_i64() || v.is_u64()) {
        Some("integer")
    } else if values.iter().all(Value::is_number) {
        Some("number")
    } else if values.iter().all(Value::is_boolean) {
        Some("boolean")
    } else {
        None
    }
}

fn is_null_schema(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|m| m.len() == 1 && m.get("type").and_then(Value::as_str) == Some("null"))
}

/// A JSON-pointer token.
fn escape(token: &str) -> std::borrow::Cow<'_, str> {
    if token.contains(['~', '/']) {
        token.replace('~', "~0").replace('/', "~1").into()
    } else {
        token.into()
    }
}

// ---------------------------------------------------------------------------
// OpenAI strict mode

/// Most object properties in one strict schema (OpenAI's limit).
pub const STRICT_MAX_PROPERTIES: usize = 5000;
/// Deepest nesting of objects in a strict schema (OpenAI's limit).
pub const STRICT_MAX_DEPTH: usize = 10;
/// Most `enum` values in one strict schema, all enums together (OpenAI's
/// limit).
pub const STRICT_MAX_ENUM_VALUES: usize = 1000;

/// Keywords strict mode takes.
pub(crate) const STRICT_KEYWORDS: [&str; 23] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "description",
    "title",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "nullable",
];

/// Keywords whose removal would let the model send values of another
/// shape than the server accepts; a schema with one cannot be strict.
pub(crate) const STRICT_BLOCKERS: [&str; 14] = [
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependentRequired",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "prefixItems",
    "contains",
    "additionalItems",
];

/// String formats strict mode takes; others are removed.
pub(crate) const STRICT_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The schema made strict for OpenAI (`strict: true`), or why it cannot be.
///
/// OpenAI's Structured Outputs rules, applied to every object schema:
/// - `additionalProperties: false` is added (a schema that allows other
///   properties — `true` or a schema, or an object schema without
///   `properties` below the root — is a free-form map: `Err`);
/// - every property is listed in `required`; a property that was optional
///   becomes nullable: `"type": [T, "null"]` (and `null` added to its
///   `enum`), or `{"anyOf": [<schema>, {"type": "null"}]}` when it has no
///   simple type (`$ref`, `anyOf`, `const`). The model then sends `null`
///   for an argument it would have left out; [`drop_strict_nulls`] takes
///   those out again before the call.
/// - OpenAPI's `nullable: true` becomes `null` in the `type` list;
/// - a `$ref` with keywords beside it (a `description`, say) is replaced
///   by its definition with those keywords merged in: strict mode takes
///   only a bare `$ref`;
/// - `oneOf` becomes `anyOf`;
/// - keywords strict mode rejects but that only annotate or loosely
///   constrain (`default`, `examples`, `$schema`, `$id`, `$comment`,
///   `minLength`, `maxLength`, `minProperties`, `maxProperties`,
///   `uniqueItems`, a `format` other than `date-time`, `time`, `date`,
///   `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`, vendor
///   keywords …) are removed — the server still checks its own schema;
/// - keywords that shape the value (`allOf`, `not`, `if`/`then`/`else`,
///   `patternProperties`, `dependent*`, `unevaluated*`, `prefixItems`,
///   tuple `items` …) make it `Err`, as does a schema that allows any
///   value (no `type`, `true`) or any items (an array without `items`).
///
/// # Errors
///
/// A message saying why the schema cannot be strict: the root is not an
/// object schema, a free-form map, a keyword above, or one of OpenAI's
/// limits ([`STRICT_MAX_DEPTH`] levels of objects, [`STRICT_MAX_PROPERTIES`]
/// properties, [`STRICT_MAX_ENUM_VALUES`] enum values).
pub fn openai_strict(schema: &Map<String, Value>) -> Result<Value, String> {
    openai_strict_noted(schema).map(|(value, _)| value)
}

/// [`openai_strict`] and what it changed.
///
/// # Errors
///
/// As [`openai_strict`].
pub fn openai_strict_noted(schema: &Map<String, Value>) -> Result<(Value, Vec<Note>), String> {
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

fn has_type(value: &Value, wanted: &str) -> bool {
    match value {
        Value::String(t) => t == wanted,
        Value::Array(types) => types.iter().any(|t| t.as_str() == Some(wanted)),
        _ => false,
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
