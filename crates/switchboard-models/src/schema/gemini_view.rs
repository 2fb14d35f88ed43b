//! Gemini's one writer: [`gemini_view`] writes the rewrite of a schema
//! (the rules listed at [`gemini`](fn@super::gemini)) straight to JSON from
//! the borrowed input, without building a new `Value` tree. A read-only
//! pass computes the notes (in the rules' order: a schema's own keywords,
//! then its `allOf` entries, `required`, the merged `anyOf`) and whether
//! the top level gets a `type`; the view's `Serialize` then walks the
//! borrowed input and writes the rewritten schema.
//!
//! One file: the read-only pass and the writer walk the same schema by the
//! same rules, and must agree keyword by keyword.
//!
//! Clean subtrees are written as they are; local `$ref`s are inlined with
//! the keywords beside them merged in without a copy (through definitions
//! that are `$ref`s with keywords beside them too), or cut short by the
//! cycle, depth and expansion limits. Only a schema that `allOf` entries
//! or the one entry left of an `anyOf` are merged into is copied: its own
//! keywords and each entry are written into `Value`s, in the order the
//! rules visit them (so `$ref`s count the same), merged, then written.
//! The value-building writer this one replaced, `gemini_oracle.rs`, is the
//! tests' oracle: same text, same notes.
//!
//! One room although it is long: the notes pass and the writing pass
//! apply the same rules to the same [`Obj`] view and must agree key for
//! key (the notes pass asks the writer what a merged entry becomes); split
//! by pass, each rule would live in two files.

use std::cell::RefCell;
use std::fmt;

use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use super::gemini::{
    CLEAN_MAX_DEPTH, GEMINI_KEYWORDS, MAX_REF_EXPANSIONS, is_null_schema, json_type,
};
use super::{At, MAX_REF_DEPTH, Note, local_target};

/// A tool's input schema as Gemini's `parameters`, as something to
/// serialize: [`gemini`](fn@super::gemini) is its text as a `Value`.
pub(crate) struct GeminiView<'a> {
    root: &'a Map<String, Value>,
    /// The top level gets `"type": "object"` first.
    prepend: bool,
}

/// The Gemini rewrite of `schema` without copying it, and what it changed
/// (see [`gemini`](fn@super::gemini) for the rules).
pub(crate) fn gemini_view(schema: &Map<String, Value>) -> (GeminiView<'_>, Vec<Note>) {
    let mut walk = Walk {
        root: schema,
        notes: Vec::new(),
        refs: Refs::new(),
    };
    let typed = walk.map(Obj::plain(schema), &At::Root);
    if !typed {
        walk.notes.push(Note::new(
            &At::Root,
            "added `\"type\": \"object\"`: the schema had no `type`",
        ));
    }
    (
        GeminiView {
            root: schema,
            prepend: !typed,
        },
        walk.notes,
    )
}

impl Serialize for GeminiView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let cx = Cx {
            root: self.root,
            refs: RefCell::new(Refs::new()),
        };
        MapOut {
            cx: &cx,
            obj: Obj::plain(self.root),
            prepend: self.prepend,
        }
        .serialize(serializer)
    }
}

// ---------------------------------------------------------------------------
// `$ref` bookkeeping, shared by both passes

#[derive(Clone, Copy)]
struct Refs<'a> {
    stack: [&'a str; MAX_REF_DEPTH],
    len: usize,
    expansions: usize,
}

impl<'a> Refs<'a> {
    fn new() -> Self {
        Refs {
            stack: [""; MAX_REF_DEPTH],
            len: 0,
            expansions: 0,
        }
    }

    /// Why `reference` is not expanded, if it is not.
    fn cut(&self, reference: &str) -> Option<&'static str> {
        if self.stack[..self.len].contains(&reference) {
            Some("recursive")
        } else if self.len >= MAX_REF_DEPTH {
            Some("too deeply nested")
        } else if self.expansions >= MAX_REF_EXPANSIONS {
            Some("one too many (the schema expands too far)")
        } else {
            None
        }
    }

    fn push(&mut self, reference: &'a str) {
        self.expansions += 1;
        self.stack[self.len] = reference;
        self.len += 1;
    }

    fn pop(&mut self) {
        self.len -= 1;
    }
}

// ---------------------------------------------------------------------------
// The notes pass

struct Walk<'a> {
    root: &'a Map<String, Value>,
    notes: Vec<Note>,
    refs: Refs<'a>,
}

impl<'a> Walk<'a> {
    fn note(&mut self, at: &At<'_>, what: impl Into<String>) {
        self.notes.push(Note::new(at, what));
    }

    fn schema(&mut self, value: &'a Value, at: &At<'_>) {
        match value {
            Value::Object(map) => {
                self.map(Obj::plain(map), at);
            }
            Value::Bool(b) => self.note(
                at,
                if *b {
                    "boolean schema `true` became `{}`"
                } else {
                    "boolean schema `false` (no value valid) became `{}`: Gemini cannot \
                     express it"
                },
            ),
            _ => self.note(at, "a non-schema value in a schema position became `{}`"),
        }
    }

    /// Walks one schema object; whether the output has a `type` or an
    /// `anyOf`.
    fn map(&mut self, map: Obj<'_, 'a>, at: &At<'_>) -> bool {
        if clean(map, 0) {
            return map.contains_key("type") || map.contains_key("anyOf");
        }
        if let Some(reference) = map.get("$ref") {
            return self.reference(map, reference, at);
        }
        let has = |k: &str| map.contains_key(k);
        // Where the writer starts on this schema, for the top level's
        // `type` when something is merged into it (below).
        let start = matches!(at, At::Root).then_some(self.refs);
        let mut typed = false;
        // An `anyOf` left with one entry, merged into the schema.
        let mut single = false;
        for (key, value) in map.iter() {
            let here = At::Key(at, key);
            match key.as_str() {
                "type" => {
                    typed = true;
                    if let Value::Array(types) = value {
                        let count = types.iter().filter(|t| t.as_str() != Some("null")).count();
                        if count >= 2 {
                            self.note(
                                &here,
                                "a `type` array of several types became an `anyOf`: Gemini \
                                 takes one type",
                            );
                        } else {
                            self.note(
                                &here,
                                "a `type` array became one `type` (and `\"nullable\": true` \
                                 for `null`)",
                            );
                        }
                    }
                }
                "properties" => match value {
                    Value::Object(properties) => {
                        for (name, schema) in properties {
                            self.schema(schema, &At::Key(&here, name));
                        }
                    }
                    _ => self.note(&here, "dropped `properties`: not an object"),
                },
                "items" => match value {
                    Value::Array(entries) => self.tuple(entries, &here),
                    other => self.schema(other, &here),
                },
                "prefixItems" => match (value, has("items")) {
                    (Value::Array(entries), false) => self.tuple(entries, &here),
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
                    if key == "oneOf" && has("anyOf") {
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
                    let mut converted = 0;
                    for (i, entry) in entries.iter().enumerate() {
                        if is_null_schema(entry) {
                            self.note(
                                &At::Index(&here, i),
                                "`{\"type\": \"null\"}` became `\"nullable\": true`",
                            );
                            continue;
                        }
                        self.schema(entry, &At::Index(&here, i));
                        converted += 1;
                    }
                    single = converted == 1 && !types_after(map, key);
                    if converted > 0 {
                        typed = true;
                    }
                }
                "allOf" => {} // merged below, after the schema's own keywords
                "const" => {
                    if has("enum") {
                        self.note(&here, "dropped `const`: the schema has an `enum` too");
                        continue;
                    }
                    match value {
                        Value::String(_) => {
                            typed = true;
                            self.note(
                                &here,
                                "`const` became a one-value `enum`: Gemini has no `const`",
                            );
                        }
                        other => {
                            if !has("type") && json_type(std::slice::from_ref(other)).is_some() {
                                typed = true;
                            }
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
                    if strings_or_null(values) {
                        if values.iter().any(Value::is_null) {
                            self.note(&here, "`null` in `enum` became `\"nullable\": true`");
                        }
                        if !has("type") {
                            typed = true;
                            self.note(
                                &here,
                                "added `\"type\": \"string\"` to a string `enum` without a type",
                            );
                        }
                    } else {
                        if !has("type") && json_type(values).is_some() {
                            typed = true;
                        }
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
                    if value.as_f64().is_none() {
                        self.note(
                            &here,
                            format!("dropped `{key}`: Gemini has no exclusive bounds"),
                        );
                    } else if exclusive_bound(map, key).is_none() {
                        self.note(
                            &here,
                            format!("dropped `{key}`: `{inclusive}` is tighter already"),
                        );
                    } else {
                        self.note(
                            &here,
                            format!(
                                "`{key}` became `{inclusive}` (inclusive): Gemini has no \
                                 exclusive bounds"
                            ),
                        );
                    }
                }
                "$defs" | "definitions" => {
                    self.note(
                        &here,
                        format!("dropped `{key}`: references to it are inlined"),
                    );
                }
                "minimum" | "maximum" | "required" => {}
                k if GEMINI_KEYWORDS.contains(&k) => {}
                _ => self.note(
                    &here,
                    format!("dropped `{key}`: not part of the schema Gemini accepts"),
                ),
            }
        }
        // The property names the `allOf` entries bring (`required` may
        // name them).
        let mut merged_names: Vec<String> = Vec::new();
        match map.get("allOf") {
            Some(Value::Array(entries)) => {
                let here = At::Key(at, "allOf");
                // Only a `required` name the schema's own `properties` lack
                // asks what the entries become.
                let own = map.get("properties").and_then(Value::as_object);
                let asked = matches!(map.get("required"), Some(Value::Array(names))
                    if names.iter().any(|name| name.is_string() && !named(own, name)));
                for (i, entry) in entries.iter().enumerate() {
                    if asked
                        && let Value::Object(converted) =
                            self.converted(self.refs, Written::Value(entry))
                        && let Some(Value::Object(properties)) = converted.get("properties")
                    {
                        merged_names.extend(properties.keys().cloned());
                    }
                    self.schema(entry, &At::Index(&here, i));
                }
                self.note(
                    &here,
                    "`allOf` was merged into the schema (properties and required united): \
                     Gemini has no `allOf`",
                );
            }
            Some(_) => self.note(&At::Key(at, "allOf"), "dropped `allOf`: not an array"),
            None => {}
        }
        if let Some(required) = map.get("required") {
            let at = At::Key(at, "required");
            match required {
                Value::Array(names) => {
                    let properties = map.get("properties").and_then(Value::as_object);
                    for name in names {
                        let merged = name
                            .as_str()
                            .is_some_and(|n| merged_names.iter().any(|m| m == n));
                        if !named(properties, name) && !merged {
                            self.note(
                                &at,
                                format!("dropped {name} from `required`: no such property"),
                            );
                        }
                    }
                }
                _ => self.note(&at, "dropped `required`: not an array"),
            }
        }
        if single {
            self.note(
                &At::Key(at, "anyOf"),
                "an `anyOf` of a single schema was merged into the schema",
            );
        }
        // What is merged in can decide whether the top level has a `type`
        // (a `type` that is not an array of several types stays): then
        // ask the writer, from where it starts on this schema.
        let sure = map
            .get("type")
            .is_some_and(|t| !t.as_array().is_some_and(|types| several(types)));
        if let Some(refs) = start
            && !sure
            && (single || matches!(map.get("allOf"), Some(Value::Array(_))))
        {
            let out = self.converted(refs, Written::Obj(map));
            typed = out.get("type").is_some() || out.get("anyOf").is_some();
        }
        typed
    }

    /// What the writer makes of a schema (`gemini`'s value for it),
    /// starting with `refs` (the `$ref`s being inlined and the count so
    /// far, as the writer has them there): what the notes need to know of
    /// a schema merged into another.
    fn converted(&self, refs: Refs<'a>, what: Written<'_, 'a>) -> Value {
        let cx = Cx {
            root: self.root,
            refs: RefCell::new(refs),
        };
        // Writing a `Value` fails only for a map key that is not a
        // string; every key here is one.
        match what {
            Written::Value(value) => serde_json::to_value(SchemaOut { cx: &cx, value }),
            Written::Obj(obj) => serde_json::to_value(MapOut {
                cx: &cx,
                obj,
                prepend: false,
            }),
        }
        .unwrap_or(Value::Null)
    }

    fn tuple(&mut self, entries: &'a [Value], at: &At<'_>) {
        self.note(
            at,
            "tuple items became one `items` schema: Gemini has no tuples",
        );
        for (i, entry) in entries.iter().enumerate() {
            self.schema(entry, &At::Index(at, i));
        }
    }

    fn reference(&mut self, map: Obj<'_, 'a>, reference: &'a Value, at: &At<'_>) -> bool {
        let here = At::Key(at, "$ref");
        let Some(target) = reference.as_str().and_then(|r| local_target(self.root, r)) else {
            self.note(
                &here,
                format!(
                    "dropped `$ref` {reference}: only `#/$defs/…` and `#/definitions/…` are inlined"
                ),
            );
            return self.map(
                Obj {
                    skip_ref: true,
                    ..map
                },
                at,
            );
        };
        let reference = reference.as_str().unwrap_or_default();
        if let Some(why) = self.refs.cut(reference) {
            self.note(
                &here,
                format!("`$ref` {reference} is {why}: not expanded, only its type kept"),
            );
            return true;
        }
        let merged = map.merged(target);
        self.note(
            &here,
            format!("`$ref` {reference} was inlined: Gemini has no `$ref`"),
        );
        self.refs.push(reference);
        let typed = self.map(merged, at);
        self.refs.pop();
        typed
    }
}

/// What [`Walk::converted`] writes.
enum Written<'o, 'a> {
    Value(&'a Value),
    Obj(Obj<'o, 'a>),
}

// ---------------------------------------------------------------------------
// The writing pass

struct Cx<'a> {
    root: &'a Map<String, Value>,
    refs: RefCell<Refs<'a>>,
}

/// Any value in a schema position.
struct SchemaOut<'c, 'a> {
    cx: &'c Cx<'a>,
    value: &'a Value,
}

impl Serialize for SchemaOut<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::Object(map) => MapOut {
                cx: self.cx,
                obj: Obj::plain(map),
                prepend: false,
            }
            .serialize(serializer),
            _ => serializer.serialize_map(Some(0))?.end(),
        }
    }
}

/// One schema object, with `"type": "object"` first when `prepend`.
struct MapOut<'c, 'o, 'a> {
    cx: &'c Cx<'a>,
    obj: Obj<'o, 'a>,
    prepend: bool,
}

impl Serialize for MapOut<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let map = self.obj;
        if clean(map, 0) {
            let mut out = serializer.serialize_map(None)?;
            if self.prepend {
                out.serialize_entry("type", "object")?;
            }
            for (key, value) in map.iter() {
                out.serialize_entry(key, value)?;
            }
            return out.end();
        }
        if let Some(reference) = map.get("$ref") {
            return self.reference(reference, serializer);
        }
        self.rewrite(serializer)
    }
}

impl<'a> MapOut<'_, '_, 'a> {
    fn reference<S: Serializer>(
        &self,
        reference: &'a Value,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let Some(target) = reference
            .as_str()
            .and_then(|r| local_target(self.cx.root, r))
        else {
            return MapOut {
                obj: Obj {
                    skip_ref: true,
                    ..self.obj
                },
                ..*self
            }
            .serialize(serializer);
        };
        let reference = reference.as_str().unwrap_or_default();
        let cut = self.cx.refs.borrow().cut(reference).is_some();
        if cut {
            let mut out = serializer.serialize_map(None)?;
            match target.get("type").filter(|t| t.is_string()) {
                Some(kind) => out.serialize_entry("type", kind)?,
                None => out.serialize_entry("type", "object")?,
            }
            let description = self
                .obj
                .get("description")
                .or_else(|| target.get("description"))
                .and_then(Value::as_str);
            match description {
                Some(d) => out.serialize_entry(
                    "description",
                    &Text(format_args!(
                        "{d} (Same structure as `{reference}`, not repeated.)"
                    )),
                )?,
                None => out.serialize_entry(
                    "description",
                    &Text(format_args!(
                        "(Same structure as `{reference}`, not repeated.)"
                    )),
                )?,
            }
            return out.end();
        }
        let merged = self.obj.merged(target);
        self.cx.refs.borrow_mut().push(reference);
        let result = MapOut {
            cx: self.cx,
            obj: merged,
            prepend: self.prepend,
        }
        .serialize(serializer);
        self.cx.refs.borrow_mut().pop();
        result
    }

    fn rewrite<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let scan = Scan::of(self.obj);
        if scan.merges(self.obj) {
            self.rewrite_merged(&scan, serializer)
        } else {
            self.write(&scan, true, serializer)
        }
    }

    /// A schema that `allOf` entries or its one `anyOf` entry are merged
    /// into. The schema's own keywords, then each entry, are written into
    /// `Value`s (in this order, so that `$ref`s are counted where `gemini`
    /// counts them), merged, then written out: a copy of this schema only.
    fn rewrite_merged<S: Serializer>(
        &self,
        scan: &Scan<'a>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let merged = self.merged(scan).map_err(S::Error::custom)?;
        let mut out = serializer.serialize_map(None)?;
        if self.prepend {
            out.serialize_entry("type", "object")?;
        }
        for (key, value) in &merged {
            out.serialize_entry(key, value)?;
        }
        out.end()
    }

    fn merged(&self, scan: &Scan<'a>) -> Result<Map<String, Value>, serde_json::Error> {
        let map = self.obj;
        let mut out = match serde_json::to_value(OwnKeys { schema: self, scan })? {
            Value::Object(out) => out,
            _ => Map::new(),
        };
        if let Some(Value::Array(entries)) = map.get("allOf") {
            for value in entries {
                let entry = SchemaOut { cx: self.cx, value };
                if let Value::Object(entry) = serde_json::to_value(entry)? {
                    merge_into(&mut out, entry);
                }
            }
        }
        if let Some(Value::Array(names)) = map.get("required") {
            let properties = out.get("properties").and_then(Value::as_object);
            // Entries already there (merged from `allOf`) stay first.
            let mut kept = match out.get("required") {
                Some(Value::Array(existing)) => existing.clone(),
                _ => Vec::new(),
            };
            for name in names {
                if named(properties, name) && !kept.contains(name) {
                    kept.push(name.clone());
                }
            }
            if kept.is_empty() {
                out.shift_remove("required");
            } else {
                out.insert("required".into(), Value::Array(kept));
            }
        }
        if let Some(Value::Array(entries)) = out.get("anyOf")
            && let [Value::Object(_)] = entries.as_slice()
            && let Some(Value::Array(mut entries)) = out.shift_remove("anyOf")
            && let Some(Value::Object(only)) = entries.pop()
        {
            merge_into(&mut out, only);
        }
        if scan.nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        // The schema's own description has the values already.
        if let Some(extra) = scan.extra
            && !map.contains_key("description")
        {
            let base = out.get("description").and_then(Value::as_str).unwrap_or("");
            let text = Described { base, extra }.to_string();
            out.insert("description".into(), Value::String(text));
        }
        Ok(out)
    }

    /// Writes the schema's own keywords; with `whole`, also what follows
    /// them (`required`, `nullable`, the description with the values
    /// written into it) — without, what is merged in comes first.
    fn write<S: Serializer>(
        &self,
        scan: &Scan<'a>,
        whole: bool,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let map = self.obj;
        let cx = self.cx;
        let has = |k: &str| map.contains_key(k);
        let Scan {
            nullable,
            extra,
            types_at,
            union_at,
        } = *scan;
        let exclusive_minimum = exclusive_bound(map, "exclusiveMinimum");
        let exclusive_maximum = exclusive_bound(map, "exclusiveMaximum");
        let mut minimum_done = false;
        let mut maximum_done = false;

        let mut out = serializer.serialize_map(None)?;
        if whole && self.prepend {
            out.serialize_entry("type", "object")?;
        }
        for (i, (key, value)) in map.iter().enumerate() {
            match key.as_str() {
                "type" => match value {
                    Value::Array(types) => {
                        let mut others = types.iter().filter(|t| t.as_str() != Some("null"));
                        match (others.next(), others.next(), union_at) {
                            (None, _, _) => out.serialize_entry("type", "null")?,
                            (Some(one), None, _) => out.serialize_entry("type", one)?,
                            // Written where the `anyOf` stands.
                            (Some(_), Some(_), Some((at, _))) if at < i => {}
                            (Some(_), Some(_), Some((_, entries))) => {
                                out.serialize_entry("anyOf", &AnyOf { cx, entries })?
                            }
                            (Some(_), Some(_), None) => {
                                out.serialize_entry("anyOf", &TypesAnyOf(types))?
                            }
                        }
                    }
                    other => out.serialize_entry("type", other)?,
                },
                "properties" => {
                    if let Value::Object(properties) = value {
                        out.serialize_entry("properties", &Properties { cx, properties })?;
                    }
                }
                "items" => match value {
                    Value::Array(entries) => {
                        out.serialize_entry("items", &Tuple { cx, entries })?
                    }
                    other => out.serialize_entry("items", &SchemaOut { cx, value: other })?,
                },
                "prefixItems" => {
                    if let (Value::Array(entries), false) = (value, has("items")) {
                        out.serialize_entry("items", &Tuple { cx, entries })?;
                    }
                }
                "anyOf" | "oneOf" => match (union_at, types_at) {
                    (Some((at, _)), Some((types, _))) if at == i && types < i => {}
                    (Some((at, _)), Some((_, types))) if at == i => {
                        out.serialize_entry("anyOf", &TypesAnyOf(types))?;
                    }
                    (Some((at, entries)), None) if at == i => {
                        out.serialize_entry("anyOf", &AnyOf { cx, entries })?;
                    }
                    _ => {}
                },
                "const" => {
                    if has("enum") {
                        continue;
                    }
                    if value.is_string() {
                        out.serialize_entry("enum", std::slice::from_ref(value))?;
                        if !has("type") {
                            out.serialize_entry("type", "string")?;
                        }
                    } else if !has("type")
                        && let Some(t) = json_type(std::slice::from_ref(value))
                    {
                        out.serialize_entry("type", t)?;
                    }
                }
                "enum" => {
                    let Value::Array(values) = value else {
                        continue;
                    };
                    if strings_or_null(values) {
                        out.serialize_entry("enum", &Strings(values))?;
                        if !has("type") {
                            out.serialize_entry("type", "string")?;
                        }
                    } else if !has("type")
                        && let Some(t) = json_type(values)
                    {
                        out.serialize_entry("type", t)?;
                    }
                }
                "exclusiveMinimum" => {
                    if let Some(bound) = exclusive_minimum
                        && !minimum_done
                    {
                        out.serialize_entry("minimum", bound)?;
                        minimum_done = true;
                    }
                }
                "exclusiveMaximum" => {
                    if let Some(bound) = exclusive_maximum
                        && !maximum_done
                    {
                        out.serialize_entry("maximum", bound)?;
                        maximum_done = true;
                    }
                }
                "minimum" if !minimum_done => {
                    out.serialize_entry("minimum", exclusive_minimum.unwrap_or(value))?;
                    minimum_done = true;
                }
                "maximum" if !maximum_done => {
                    out.serialize_entry("maximum", exclusive_maximum.unwrap_or(value))?;
                    maximum_done = true;
                }
                // Written already (an exclusive bound before it replaced it).
                "minimum" | "maximum" => {}
                "nullable" => {
                    if nullable {
                        out.serialize_entry("nullable", &true)?;
                    } else {
                        out.serialize_entry("nullable", value)?;
                    }
                }
                "description" => match extra {
                    Some(extra) => out.serialize_entry(
                        "description",
                        &Text(Described {
                            base: value.as_str().unwrap_or(""),
                            extra,
                        }),
                    )?,
                    None => out.serialize_entry("description", value)?,
                },
                "$defs" | "definitions" | "required" | "allOf" => {}
                k if GEMINI_KEYWORDS.contains(&k) => out.serialize_entry(key, value)?,
                _ => {}
            }
        }
        if !whole {
            return out.end();
        }
        if let Some(Value::Array(names)) = map.get("required") {
            let properties = map.get("properties").and_then(Value::as_object);
            let required = Required { names, properties };
            if required.kept().next().is_some() {
                out.serialize_entry("required", &required)?;
            }
        }
        if nullable && !has("nullable") {
            out.serialize_entry("nullable", &true)?;
        }
        if let Some(extra) = extra
            && !has("description")
        {
            out.serialize_entry("description", &Text(Described { base: "", extra }))?;
        }
        out.end()
    }
}

/// What `gemini` knows of a schema only once every keyword is seen.
#[derive(Clone, Copy)]
struct Scan<'a> {
    /// A `null` type, `anyOf`/`oneOf` entry or `enum` value.
    nullable: bool,
    /// Values written into the description.
    extra: Option<Extra<'a>>,
    /// Both a `type` array of several types and an `anyOf`/`oneOf` with
    /// an entry that is not `{"type": "null"}` write `anyOf`: the first
    /// of them where it stands, with the value of the last. Where each is
    /// (in the keys' order) and what it holds.
    types_at: Option<(usize, &'a [Value])>,
    union_at: Option<(usize, &'a [Value])>,
}

impl<'a> Scan<'a> {
    fn of(map: Obj<'_, 'a>) -> Self {
        let has = |k: &str| map.contains_key(k);
        let mut nullable = false;
        let mut extra = None;
        let mut types_at = None;
        let mut union_at = None;
        for (i, (key, value)) in map.iter().enumerate() {
            match (key.as_str(), value) {
                ("type", Value::Array(types)) => {
                    nullable |= types.iter().any(|t| t.as_str() == Some("null"));
                    if several(types) {
                        types_at = Some((i, types.as_slice()));
                    }
                }
                ("anyOf", Value::Array(entries)) => {
                    nullable |= entries.iter().any(is_null_schema);
                    if entries.iter().any(|e| !is_null_schema(e)) {
                        union_at = Some((i, entries.as_slice()));
                    }
                }
                ("oneOf", Value::Array(entries)) if !has("anyOf") => {
                    nullable |= entries.iter().any(is_null_schema);
                    if entries.iter().any(|e| !is_null_schema(e)) {
                        union_at = Some((i, entries.as_slice()));
                    }
                }
                ("const", value) if !has("enum") && !value.is_string() => {
                    extra = Some(Extra::Const(value));
                }
                ("enum", Value::Array(values)) => {
                    if strings_or_null(values) {
                        nullable |= values.iter().any(Value::is_null);
                    } else {
                        extra = Some(Extra::Enum(values));
                    }
                }
                _ => {}
            }
        }
        Scan {
            nullable,
            extra,
            types_at,
            union_at,
        }
    }

    /// Whether `gemini` merges something into the schema: `allOf`
    /// entries, or the one entry left of the `anyOf`/`oneOf` that writes
    /// the `anyOf` last.
    fn merges(&self, map: Obj<'_, '_>) -> bool {
        matches!(map.get("allOf"), Some(Value::Array(_)))
            || self.union_at.is_some_and(|(at, entries)| {
                entries.iter().filter(|e| !is_null_schema(e)).count() == 1
                    && self.types_at.is_none_or(|(types, _)| types < at)
            })
    }
}

/// A schema's own keywords, what is merged into it left out.
struct OwnKeys<'m, 'c, 'o, 'a> {
    schema: &'m MapOut<'c, 'o, 'a>,
    scan: &'m Scan<'a>,
}

impl Serialize for OwnKeys<'_, '_, '_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.schema.write(self.scan, false, serializer)
    }
}

/// A `type` array of several types as an `anyOf` of one schema per type.
struct TypesAnyOf<'a>(&'a [Value]);

impl Serialize for TypesAnyOf<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            self.0
                .iter()
                .filter(|t| t.as_str() != Some("null"))
                .map(TypeOnly),
        )
    }
}

struct TypeOnly<'a>(&'a Value);

impl Serialize for TypeOnly<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(Some(1))?;
        out.serialize_entry("type", self.0)?;
        out.end()
    }
}

struct Properties<'c, 'a> {
    cx: &'c Cx<'a>,
    properties: &'a Map<String, Value>,
}

impl Serialize for Properties<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(Some(self.properties.len()))?;
        for (name, value) in self.properties {
            out.serialize_entry(name, &SchemaOut { cx: self.cx, value })?;
        }
        out.end()
    }
}

/// Tuple items as one schema.
struct Tuple<'c, 'a> {
    cx: &'c Cx<'a>,
    entries: &'a [Value],
}

impl Serialize for Tuple<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.entries {
            [] => serializer.serialize_map(Some(0))?.end(),
            [only] => SchemaOut {
                cx: self.cx,
                value: only,
            }
            .serialize(serializer),
            entries => {
                let mut out = serializer.serialize_map(Some(1))?;
                out.serialize_entry(
                    "anyOf",
                    &Entries {
                        cx: self.cx,
                        entries,
                    },
                )?;
                out.end()
            }
        }
    }
}

struct Entries<'c, 'a> {
    cx: &'c Cx<'a>,
    entries: &'a [Value],
}

impl Serialize for Entries<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_seq(Some(self.entries.len()))?;
        for value in self.entries {
            out.serialize_element(&SchemaOut { cx: self.cx, value })?;
        }
        out.end()
    }
}

/// `anyOf`/`oneOf` entries without the `{"type": "null"}` ones.
struct AnyOf<'c, 'a> {
    cx: &'c Cx<'a>,
    entries: &'a [Value],
}

impl Serialize for AnyOf<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_seq(None)?;
        for value in self.entries.iter().filter(|e| !is_null_schema(e)) {
            out.serialize_element(&SchemaOut { cx: self.cx, value })?;
        }
        out.end()
    }
}

/// The strings of an enum.
struct Strings<'a>(&'a [Value]);

impl Serialize for Strings<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().filter(|v| v.is_string()))
    }
}

/// `required` entries naming a property, each once.
struct Required<'a> {
    names: &'a [Value],
    properties: Option<&'a Map<String, Value>>,
}

impl<'a> Required<'a> {
    fn kept(&self) -> impl Iterator<Item = &'a Value> + '_ {
        let names = self.names;
        names.iter().enumerate().filter_map(move |(i, name)| {
            (named(self.properties, name) && !names[..i].contains(name)).then_some(name)
        })
    }
}

impl Serialize for Required<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.kept())
    }
}

/// Values written into the description.
#[derive(Clone, Copy)]
enum Extra<'a> {
    Const(&'a Value),
    Enum(&'a [Value]),
}

/// A description with the values `gemini` writes into it.
struct Described<'a> {
    base: &'a str,
    extra: Extra<'a>,
}

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.base)?;
        if !self.base.is_empty() {
            f.write_str(" ")?;
        }
        match self.extra {
            Extra::Const(value) => write!(f, "Must be {value}."),
            Extra::Enum(values) => {
                f.write_str("Allowed values: ")?;
                for (i, value) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{value}")?;
                }
                f.write_str(".")
            }
        }
    }
}

/// Text written as a JSON string without being collected first.
struct Text<T>(T);

impl<T: fmt::Display> Serialize for Text<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

// ---------------------------------------------------------------------------
// Helpers

/// A schema object as `gemini` sees it: a map as it is, the map without
/// its `$ref` (what a `$ref` that is not inlined leaves), or a definition
/// with the keywords beside the `$ref` that led to it merged in, all
/// without copying.
///
/// `gemini` inlines `{"$ref": r, ...beside}` as the definition with the
/// keywords beside the `$ref` inserted into it: the definition's keys keep
/// their places (with the value beside the `$ref` when there is one) and
/// the other keywords follow in their order. When the definition is itself
/// a `$ref` with keywords beside it, that merged map is merged into the
/// next definition the same way: `over` is then a merge too. Only `base`'s
/// `$ref` counts. `'o` is how long the `over` lives (the caller's frame).
#[derive(Clone, Copy)]
struct Obj<'o, 'a> {
    base: &'a Map<String, Value>,
    /// `base` without its `$ref`.
    skip_ref: bool,
    /// The schema whose keywords (all but `$ref`) win over `base`'s.
    over: Option<&'o Obj<'o, 'a>>,
}

impl<'o, 'a> Obj<'o, 'a> {
    fn plain(map: &'a Map<String, Value>) -> Self {
        Obj {
            base: map,
            skip_ref: false,
            over: None,
        }
    }

    /// `target` with this object's keywords but `$ref` merged in.
    fn merged(&'o self, target: &'a Map<String, Value>) -> Self {
        debug_assert!(!self.skip_ref, "only a map with its `$ref` is merged");
        // Nothing but the `$ref`: the definition as it is.
        if self.len() == 1 {
            return Obj::plain(target);
        }
        Obj {
            base: target,
            skip_ref: false,
            over: Some(self),
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        if key == "$ref" {
            return if self.skip_ref {
                None
            } else {
                self.base.get(key)
            };
        }
        self.over
            .and_then(|over| over.get(key))
            .or_else(|| self.base.get(key))
    }

    fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    fn len(&self) -> usize {
        match self.over {
            None => self.base.len() - usize::from(self.skip_ref && self.base.contains_key("$ref")),
            Some(_) => self.iter().count(),
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&'a String, &'a Value)> + use<'o, 'a> {
        let Obj {
            base,
            skip_ref,
            over,
        } = *self;
        // The keys `over` adds after `base`'s: straight from its map when
        // it is one, collected when it is a merge too (rare; typing it as
        // an iterator of iterators would not end).
        let not_base = move |(k, _): &(&'a String, &'a Value)| {
            k.as_str() != "$ref" && !base.contains_key(k.as_str())
        };
        let (beside, deeper): (Option<&'a Map<String, Value>>, Vec<_>) = match over {
            None => (None, Vec::new()),
            Some(over) if over.over.is_none() => (Some(over.base), Vec::new()),
            Some(over) => (None, over.iter().filter(not_base).collect()),
        };
        let added = beside
            .into_iter()
            .flat_map(Map::iter)
            .filter(not_base)
            .chain(deeper);
        base.iter()
            .filter_map(move |(k, v)| {
                if k.as_str() == "$ref" {
                    return (!skip_ref).then_some((k, v));
                }
                Some((k, over.and_then(|over| over.get(k)).unwrap_or(v)))
            })
            .chain(added)
    }
}

/// Merges `from` into `into` as `gemini` merges an `allOf` entry or the
/// one `anyOf` entry: `properties` and `required` united (what `into` has
/// wins), any other keyword only where `into` has none.
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

/// Whether `gemini` leaves `map` exactly as it is: the one check behind
/// [`gemini_is_clean`](super::gemini_is_clean), `gemini`'s copy of clean
/// subtrees and the view's.
pub(super) fn clean_map(map: &Map<String, Value>) -> bool {
    clean(Obj::plain(map), 0)
}

/// [`clean_map`] for an [`Obj`] (the map without its `$ref` when
/// `skip_ref`, a definition with keywords merged in).
fn clean(map: Obj<'_, '_>, depth: usize) -> bool {
    if depth > CLEAN_MAX_DEPTH {
        return false;
    }
    let last = map.len().saturating_sub(1);
    map.iter()
        .enumerate()
        .all(|(i, (key, value))| match key.as_str() {
            "type" => !value.is_array(),
            "properties" => value
                .as_object()
                .is_some_and(|p| p.values().all(|s| clean_value(s, depth + 1))),
            "items" => clean_value(value, depth + 1),
            "anyOf" => value.as_array().is_some_and(|entries| {
                entries.len() >= 2
                    && entries
                        .iter()
                        .all(|e| !is_null_schema(e) && clean_value(e, depth + 1))
            }),
            "enum" => {
                map.contains_key("type")
                    && value
                        .as_array()
                        .is_some_and(|values| values.iter().all(Value::is_string))
            }
            "required" => i == last && clean_required(map, value),
            "minimum" | "maximum" => true,
            "$ref" | "$defs" | "definitions" | "oneOf" | "allOf" | "const" | "prefixItems"
            | "exclusiveMinimum" | "exclusiveMaximum" => false,
            k => GEMINI_KEYWORDS.contains(&k),
        })
}

fn clean_value(value: &Value, depth: usize) -> bool {
    value
        .as_object()
        .is_some_and(|map| clean(Obj::plain(map), depth))
}

fn clean_required(map: Obj<'_, '_>, required: &Value) -> bool {
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

/// Whether a `required` entry names one of `properties`.
fn named(properties: Option<&Map<String, Value>>, name: &Value) -> bool {
    name.as_str()
        .is_some_and(|n| properties.is_some_and(|p| p.contains_key(n)))
}

/// Whether a `type` array names several types besides `null`.
fn several(types: &[Value]) -> bool {
    types
        .iter()
        .filter(|t| t.as_str() != Some("null"))
        .nth(1)
        .is_some()
}

/// Whether `map` has a `type` array of several types after `key`: that
/// `anyOf` replaces the one `key` writes.
fn types_after(map: Obj<'_, '_>, key: &str) -> bool {
    let mut seen = false;
    for (k, value) in map.iter() {
        if k == key {
            seen = true;
        } else if seen && k == "type" {
            return value.as_array().is_some_and(|types| several(types));
        }
    }
    false
}

/// Whether an enum holds only strings and at most one `null` (as `gemini`
/// counts them).
fn strings_or_null(values: &[Value]) -> bool {
    let strings = values.iter().filter(|v| v.is_string()).count();
    strings + usize::from(values.iter().any(Value::is_null)) == values.len()
}

/// The value of `key` (`exclusiveMinimum`/`exclusiveMaximum`) when it
/// becomes the inclusive bound (a number, and the inclusive one is not
/// tighter already).
fn exclusive_bound<'a>(map: Obj<'_, 'a>, key: &str) -> Option<&'a Value> {
    let value = map.get(key)?;
    let bound = value.as_f64()?;
    let (inclusive, is_min) = if key == "exclusiveMinimum" {
        ("minimum", true)
    } else {
        ("maximum", false)
    };
    let tighter = map
        .get(inclusive)
        .and_then(Value::as_f64)
        .is_some_and(|m| if is_min { m > bound } else { m < bound });
    (!tighter).then_some(value)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::gemini_view;
    use crate::schema::gemini_oracle::gemini;

    /// The view's text and notes are `gemini`'s.
    fn same(schema: &Map<String, Value>) {
        let (value, notes) = gemini(schema);
        let expected = serde_json::to_string(&value).expect("serializes");
        let (view, view_notes) = gemini_view(schema);
        let text = serde_json::to_string(&view).expect("serializes");
        assert_eq!(text, expected, "schema {}", Value::Object(schema.clone()));
        assert_eq!(
            view_notes,
            notes,
            "schema {}",
            Value::Object(schema.clone())
        );
    }

    /// Every `json!({...})` literal of `source` that is plain JSON, and
    /// every object inside it.
    fn literals(source: &str) -> Vec<Map<String, Value>> {
        let mut found = Vec::new();
        let mut rest = source;
        while let Some(start) = rest.find("json!(") {
            rest = &rest[start + 6..];
            if !rest.starts_with('{') {
                continue;
            }
            let mut depth = 0usize;
            let mut in_string = false;
            let mut escaped = false;
            let mut end = None;
            for (i, c) in rest.char_indices() {
                if in_string {
                    match (escaped, c) {
                        (true, _) => escaped = false,
                        (false, '\\') => escaped = true,
                        (false, '"') => in_string = false,
                        _ => {}
                    }
                    continue;
                }
                match c {
                    '"' => in_string = true,
                    '{' | '[' => depth += 1,
                    '}' | ']' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i + 1);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let Some(end) = end else { continue };
            if let Ok(value) = serde_json::from_str::<Value>(&rest[..end]) {
                objects(&value, &mut found);
            }
        }
        found
    }

    fn objects(value: &Value, out: &mut Vec<Map<String, Value>>) {
        match value {
            Value::Object(map) => {
                out.push(map.clone());
                map.values().for_each(|v| objects(v, out));
            }
            Value::Array(values) => values.iter().for_each(|v| objects(v, out)),
            _ => {}
        }
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    /// The schemas of `benches/adapt.rs`'s corpus.
    fn bench_schemas() -> Vec<Map<String, Value>> {
        crate::testdata::bench_schemas()
            .into_iter()
            .map(object)
            .collect()
    }

    #[test]
    fn bench_corpus_matches() {
        let from_source = literals(include_str!("../../benches/adapt.rs"));
        assert!(from_source.len() >= 5, "{}", from_source.len());
        for schema in bench_schemas().iter().chain(&from_source) {
            same(schema);
        }
    }

    #[test]
    fn test_file_schemas_match() {
        let mut count = 0;
        for source in [
            include_str!("../../tests/definitions.rs"),
            include_str!("../../tests/gemini_clean.rs"),
            include_str!("gemini.rs"),
            include_str!("gemini_oracle.rs"),
            include_str!("mod.rs"),
            include_str!("strict_oracle.rs"),
        ] {
            for schema in literals(source) {
                same(&schema);
                count += 1;
            }
        }
        assert!(count > 300, "{count}");
    }

    #[test]
    fn refs_with_siblings_match() {
        let schema = object(json!({
            "type": "object",
            "properties": {
                "document": {"$ref": "#/$defs/docId", "description": "The document to write into."},
                "root": {"$ref": "#/$defs/section"},
                "other": {"description": "Beside.", "$ref": "#/$defs/section", "x-y": 1}
            },
            "required": ["document", "root"],
            "$defs": {
                "docId": {"type": "string", "pattern": "^doc-[0-9]+$"},
                "section": {
                    "type": "object",
                    "description": "A section and its subsections.",
                    "properties": {
                        "heading": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/section"}}
                    },
                    "required": ["heading"]
                }
            }
        }));
        same(&schema);
    }

    #[test]
    fn ref_chains_with_siblings_match() {
        let defs = json!({
            "x": {"$ref": "#/$defs/y", "description": "Mid.", "minimum": 1, "x-mid": true},
            "y": {"maximum": 3, "type": "integer", "description": "Inner.", "exclusiveMinimum": 0},
            "z": {"title": "Z", "$ref": "#/$defs/x", "format": "int32"},
            "only": {"$ref": "#/$defs/y"},
            "away": {"$ref": "https://example.com/s.json", "pattern": "p", "title": "Away"},
            "loop": {"$ref": "#/$defs/loop2", "title": "L1"},
            "loop2": {"$ref": "#/$defs/loop", "title": "L2", "description": "Round."}
        });
        let cases = [
            json!({"properties": {"a": {"$ref": "#/$defs/x", "description": "Outer.", "title": "T"}}}),
            json!({"properties": {"a": {"title": "T", "$ref": "#/$defs/z", "minimum": 2}}}),
            json!({"properties": {"a": {"$ref": "#/$defs/only", "nullable": true}}}),
            json!({"properties": {"a": {"$ref": "#/$defs/x"}}}),
            json!({"properties": {"a": {"$ref": "#/$defs/away", "title": "Near"}}}),
            json!({"properties": {"a": {"$ref": "#/$defs/loop", "default": 1}}}),
            json!({"$ref": "#/$defs/z", "required": ["a"], "properties": {"a": true}}),
        ];
        for case in cases {
            let mut schema = object(case);
            schema.insert("$defs".into(), defs.clone());
            same(&schema);
        }
    }

    #[test]
    fn type_arrays_beside_unions_match() {
        let streamed = [
            json!({"type": ["string", "integer"], "anyOf": [{"minLength": 1}, {"minimum": 0}]}),
            json!({"anyOf": [{"minLength": 1}, {"minimum": 0}], "type": ["string", "integer", "null"]}),
            json!({"anyOf": [{"minLength": 1}], "type": ["string", "integer"]}),
            json!({"anyOf": [{"type": "null"}], "type": ["string", "integer"], "title": "T"}),
            json!({"type": ["string", "integer"], "anyOf": [{"type": "null"}, {"type": "null"}]}),
            json!({"type": ["string", "integer"], "anyOf": "x", "oneOf": [{"type": "boolean"}]}),
            json!({"oneOf": [{"type": "boolean"}, {"type": "null"}, true], "type": ["string", "integer"]}),
            json!({"type": ["string", "null", "integer"], "oneOf": [{"type": "boolean"}, 3]}),
            json!({"type": "object", "properties": {"a": {"type": ["array", "object"], "nullable": false, "oneOf": [{"items": {"type": "string"}}, {"properties": {}}]}}}),
        ];
        for case in streamed {
            let schema = object(case);
            same(&schema);
        }
        // The one `anyOf` entry left is merged into the schema.
        let merged = object(
            json!({"type": ["string", "integer"], "anyOf": [{"minLength": 1}, {"type": "null"}]}),
        );
        same(&merged);
    }

    #[test]
    fn merges_match() {
        let defs = json!({
            "named": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            "aged": {"properties": {"age": {"type": ["integer", "null"]}}, "required": ["age", "x"], "description": "Aged."},
            "via": {"$ref": "#/$defs/aged", "title": "Via"},
            "self": {"allOf": [{"$ref": "#/$defs/self"}, {"properties": {"s": {"$ref": "#/$defs/self"}}}]}
        });
        let cases = [
            json!({"allOf": [{"$ref": "#/$defs/named"}, {"$ref": "#/$defs/aged"}], "required": ["age", "name", "nope"]}),
            json!({"required": ["name"], "allOf": [{"$ref": "#/$defs/via", "nullable": false}], "enum": [1, 2], "type": ["integer", "null"]}),
            json!({"type": "object", "properties": {"p": {"allOf": [{"const": 3}, {"description": "From an entry."}], "enum": [1, null, 2]}}}),
            json!({"properties": {"p": {"anyOf": [{"$ref": "#/$defs/aged"}, {"type": "null"}], "description": 4, "const": true}}}),
            json!({"oneOf": [{"allOf": [{"$ref": "#/$defs/named"}]}], "allOf": [{"anyOf": [{"type": "string"}, {"type": "integer"}]}]}),
            json!({"anyOf": [{"type": "null"}], "allOf": [{"anyOf": [{"type": "null"}, {"type": "string"}], "nullable": false}]}),
            json!({"type": ["string", "integer"], "anyOf": [{"minLength": 1}, {"type": "null"}]}),
            json!({"$ref": "#/$defs/self"}),
            json!({"allOf": [true, false, 3, {"type": "null"}], "title": "T"}),
            json!({"allOf": "x", "required": ["a"], "properties": {"a": {}}}),
            json!({"allOf": [], "exclusiveMinimum": 2}),
            json!({"allOf": [{"required": ["a"]}, {"properties": {"a": {"allOf": [{"minimum": 1}]}}}], "required": ["b", "a"]}),
        ];
        for case in cases {
            let mut schema = object(case);
            schema.insert("$defs".into(), defs.clone());
            same(&schema);
        }
    }

    /// The 1000th inlined `$ref` is reached in the middle of a schema with
    /// things merged into it: the writer counts `$ref`s where `gemini`
    /// does (the schema's own keywords first, then each entry).
    #[test]
    fn merges_count_refs_in_order() {
        let mut defs = Map::new();
        for i in 0..9 {
            defs.insert(
                format!("d{i}"),
                json!({"type": "object", "properties": {
                    "l": {"$ref": format!("#/$defs/d{}", i + 1)},
                    "r": {"$ref": format!("#/$defs/d{}", i + 1)}
                }}),
            );
        }
        defs.insert("d9".into(), json!({"type": "string"}));
        let defs = Value::Object(defs);
        let cases = [
            json!({"allOf": [{"properties": {"b": {"$ref": "#/$defs/d1"}}}, {"$ref": "#/$defs/d2"}], "properties": {"a": {"$ref": "#/$defs/d1"}}, "items": {"$ref": "#/$defs/d3"}}),
            json!({"items": {"$ref": "#/$defs/d1"}, "anyOf": [{"$ref": "#/$defs/d1"}, {"type": "null"}], "properties": {"a": {"$ref": "#/$defs/d2"}}}),
            json!({"properties": {"x": {"allOf": [{"$ref": "#/$defs/d1"}], "properties": {"y": {"$ref": "#/$defs/d1"}}}}, "allOf": [{"$ref": "#/$defs/d2"}]}),
        ];
        for case in cases {
            let mut schema = object(case);
            schema.insert("$defs".into(), defs.clone());
            let (_, notes) = gemini(&schema);
            assert!(
                notes.iter().any(|n| n.what.contains("one too many")),
                "the limit is reached"
            );
            same(&schema);
        }
    }

    #[test]
    fn hand_written_cases_match() {
        let mut defs = Map::new();
        for i in 0..20 {
            defs.insert(
                format!("d{i}"),
                json!({"type": "object", "properties": {
                    "l": {"$ref": format!("#/$defs/d{}", i + 1)},
                    "r": {"$ref": format!("#/$defs/d{}", i + 1)}
                }}),
            );
        }
        defs.insert("d20".into(), json!({"type": "string"}));
        let bounded = json!({
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/d0"}},
            "$defs": defs
        });
        let cases = [
            bounded,
            json!({"$ref": "#/$defs/a", "$defs": {"a": {"properties": {"x": {"$ref": "#/$defs/a"}}}}}),
            json!({"$ref": "#/$defs/a", "$defs": {"a": {"type": "object"}}}),
            json!({"$ref": "https://x", "required": ["a"], "properties": {"a": true}}),
            json!({"properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/a"}}}),
            json!({"properties": {"a": {"$ref": "#/$defs/a~1b"}}, "$defs": {"a/b": {"enum": [1, 2]}}}),
            json!({"type": "object", "properties": {"a": {"minimum": 1, "exclusiveMinimum": 3, "maximum": 9, "exclusiveMaximum": 2}}}),
            json!({"type": "object", "properties": {"a": {"exclusiveMinimum": 3, "minimum": 1}}}),
            json!({"type": "object", "properties": {"a": {"exclusiveMinimum": 3, "minimum": 5}}}),
            json!({"type": "object", "properties": {"a": {"minimum": 5, "exclusiveMinimum": true}}}),
            json!({"type": "object", "properties": {"a": {"nullable": false, "type": ["null", "string"]}}}),
            json!({"type": "object", "properties": {"a": {"description": 3, "enum": [1, "x", null]}}}),
            json!({"type": "object", "properties": {"a": {"const": 2.5, "description": "D"}}}),
            json!({"type": "object", "properties": {"a": {"const": "x", "enum": ["y"]}}}),
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "null"}]}}}),
            json!({"type": ["null"], "description": "a \"quoted\" \\ one"}),
            json!({"prefixItems": [true, 3, {"type": "null"}], "type": "array"}),
            json!({"oneOf": [{"type": "string"}, {"type": "null"}, {"type": "integer"}], "anyOf": "x"}),
            json!({}),
            json!({"$ref": "https://x"}),
        ];
        for schema in cases {
            same(&object(schema));
        }
    }

    // -----------------------------------------------------------------------
    // Random schemas (the generator of `tests/gemini_clean.rs`, with more
    // bare `$ref`s)

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-d]",
            1 => Just("type".to_owned()),
            1 => Just("$ref".to_owned()),
            1 => Just("required".to_owned()),
            1 => Just("properties".to_owned()),
            1 => Just("enum".to_owned()),
            1 => Just("anyOf".to_owned()),
            1 => Just("const".to_owned()),
        ]
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => "[a-c]{0,2}".prop_map(Value::from),
            1 => Just(Value::Null),
            1 => any::<bool>().prop_map(Value::from),
            1 => (-3i64..3).prop_map(Value::from),
            1 => (-3.0f64..3.0).prop_map(Value::from),
        ]
    }

    fn type_name() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just("string"),
            Just("integer"),
            Just("number"),
            Just("boolean"),
            Just("object"),
            Just("array"),
            Just("null"),
        ]
        .prop_map(Value::from)
    }

    fn map_of(entries: Vec<(String, Value)>) -> Value {
        Value::Object(entries.into_iter().collect())
    }

    fn reference() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just("#/$defs/a"),
            Just("#/$defs/b"),
            Just("#/definitions/b"),
            Just("#/$defs/missing"),
            Just("https://example.com/s.json"),
        ]
        .prop_map(Value::from)
    }

    fn entry(inner: BoxedStrategy<Value>) -> impl Strategy<Value = (String, Value)> {
        let key = |k: &'static str| move |v: Value| (k.to_owned(), v);
        let null_schema = Just(json!({"type": "null"}));
        let entries = prop::collection::vec(
            prop_oneof![5 => inner.clone(), 1 => null_schema.clone()],
            0..4,
        );
        prop_oneof![
            6 => prop_oneof![
                4 => type_name(),
                2 => prop::collection::vec(type_name(), 0..3).prop_map(Value::from),
                1 => Just(json!(7)),
            ].prop_map(key("type")),
            3 => "[a-z ]{0,8}".prop_map(Value::from).prop_map(key("description")),
            6 => prop::collection::vec((name(), inner.clone()), 0..4)
                .prop_map(map_of)
                .prop_map(key("properties")),
            1 => Just(json!([])).prop_map(key("properties")),
            3 => prop_oneof![
                4 => inner.clone(),
                1 => prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            ].prop_map(key("items")),
            1 => prop::collection::vec(inner.clone(), 0..3)
                .prop_map(Value::from)
                .prop_map(key("prefixItems")),
            3 => entries.clone().prop_map(Value::from).prop_map(key("anyOf")),
            1 => entries.clone().prop_map(Value::from).prop_map(key("oneOf")),
            1 => entries.prop_map(Value::from).prop_map(key("allOf")),
            1 => reference().prop_map(key("$ref")),
            1 => prop::collection::vec((prop_oneof![Just("a".to_owned()), Just("b".to_owned())], inner.clone()), 0..3)
                .prop_map(map_of)
                .prop_map(key("$defs")),
            1 => prop::collection::vec((Just("b".to_owned()), inner), 0..2)
                .prop_map(map_of)
                .prop_map(key("definitions")),
            1 => scalar().prop_map(key("const")),
            3 => prop_oneof![
                4 => prop::collection::vec("[a-c]".prop_map(Value::from), 0..4),
                2 => prop::collection::vec(scalar(), 0..4),
            ].prop_map(Value::from).prop_map(key("enum")),
            4 => prop_oneof![
                6 => prop::collection::vec(name().prop_map(Value::from), 0..4).prop_map(Value::from),
                1 => scalar(),
            ].prop_map(key("required")),
            2 => (
                prop_oneof![
                    Just("minimum"),
                    Just("maximum"),
                    Just("exclusiveMinimum"),
                    Just("exclusiveMaximum")
                ],
                prop_oneof![3 => (-5i64..5).prop_map(Value::from), 1 => any::<bool>().prop_map(Value::from)],
            ).prop_map(|(k, v)| (k.to_owned(), v)),
            2 => (
                prop_oneof![
                    Just("nullable"),
                    Just("format"),
                    Just("title"),
                    Just("default"),
                    Just("example"),
                    Just("minItems"),
                    Just("maxLength"),
                    Just("pattern"),
                    Just("propertyOrdering"),
                ],
                scalar(),
            ).prop_map(|(k, v)| (k.to_owned(), v)),
            2 => (
                prop_oneof![
                    Just("additionalProperties"),
                    Just("$schema"),
                    Just("$comment"),
                    Just("x-vendor"),
                    Just("not"),
                    Just("examples"),
                    Just("uniqueItems"),
                ],
                scalar(),
            ).prop_map(|(k, v)| (k.to_owned(), v)),
        ]
    }

    fn schema() -> BoxedStrategy<Value> {
        let leaf = prop_oneof![
            6 => prop::collection::vec(entry(Just(json!({"type": "string"})).boxed()), 0..4)
                .prop_map(map_of),
            2 => reference().prop_map(|r| json!({"$ref": r})),
            1 => any::<bool>().prop_map(Value::from),
            1 => Just(json!({"type": "null"})),
            1 => Just(json!(3)),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                1 => inner.clone(),
                1 => reference().prop_map(|r| json!({"$ref": r})),
                6 => prop::collection::vec(entry(inner), 0..6).prop_map(map_of),
            ]
        })
        .boxed()
    }

    fn root() -> impl Strategy<Value = Map<String, Value>> {
        (
            prop::collection::vec(entry(schema()), 0..7),
            prop::option::of((schema(), schema())),
        )
            .prop_map(|(entries, defs)| {
                let mut map: Map<String, Value> = entries.into_iter().collect();
                if let Some((a, b)) = defs {
                    map.insert("$defs".into(), json!({"a": a, "b": b}));
                    map.insert("definitions".into(), json!({"b": b}));
                }
                map
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn view_is_gemini(schema in root()) {
            same(&schema);
        }

        #[test]
        fn nested_view_is_gemini(inner in schema()) {
            if let Value::Object(map) = inner {
                same(&map);
            }
        }
    }
}
