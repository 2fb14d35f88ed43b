//! OpenAI strict mode, the one writer: [`strict_view`] checks the schema
//! in a read-only pass (the refusal and its reason, the notes) and gives a
//! view whose `Serialize` writes the strict schema straight from the
//! borrowed input, without building a new `Value` tree. [`openai_strict`]
//! and [`openai_strict_noted`] are that view as a `Value`.
//!
//! One file: the check pass and the writer follow the same rules, and must
//! agree keyword by keyword.
//!
//! A `$ref` with keywords beside it, which strict mode inlines, is read
//! through a [`View`]: the definition with those keywords over it, looked
//! up on the fly (nested inlining chains views on the stack).
//!
//! The tests compare this writer over every JSON Schema keyword with the
//! value-building writer it replaced, kept as their oracle
//! (`strict_oracle.rs`, test builds only).

use std::collections::HashSet;
use std::sync::LazyLock;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use super::{At, MAX_REF_DEPTH, Note, has_type, local_target};

/// Most object properties in one strict schema (OpenAI's limit).
pub const STRICT_MAX_PROPERTIES: usize = 5000;
/// Deepest nesting of objects in a strict schema (OpenAI's limit).
pub const STRICT_MAX_DEPTH: usize = 10;
/// Most `enum` values in one strict schema, all enums together (OpenAI's
/// limit).
pub const STRICT_MAX_ENUM_VALUES: usize = 1000;

/// Keywords strict mode takes.
pub(super) const STRICT_KEYWORDS: [&str; 23] = [
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
pub(super) const STRICT_BLOCKERS: [&str; 14] = [
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
pub(super) const STRICT_FORMATS: [&str; 9] = [
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
///   for an argument it would have left out; [`drop_strict_nulls`](super::drop_strict_nulls) takes
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
    let (view, notes) = strict_view(schema)?;
    let value =
        serde_json::to_value(view).map_err(|e| format!("writing the strict schema: {e}"))?;
    Ok((value, notes))
}

/// The `"object"` of the `type` added to a root without one.
static OBJECT: LazyLock<Value> = LazyLock::new(|| Value::String("object".to_owned()));

/// Above this many `required` names, property lookups go through a set.
const REQUIRED_SCAN: usize = 16;

/// [`openai_strict_noted`] without its `Value`: the strict
/// schema as a view that serializes to the same text, and the same notes;
/// or the same reason when the schema cannot be strict.
///
/// # Errors
///
/// Exactly when `openai_strict_noted` fails, with its message.
pub(crate) fn strict_view(
    schema: &Map<String, Value>,
) -> Result<(StrictView<'_>, Vec<Note>), String> {
    let mut notes = Vec::new();
    let typed = !schema.contains_key("type");
    if typed {
        // `schema::add_type`'s note.
        notes.push(Note::new(
            &At::Root,
            "added `\"type\": \"object\"`: the schema had no `type` and the provider requires one",
        ));
    }
    let root = StrictView { schema };
    let view = root.view();
    if view.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the schema's root is not `\"type\": \"object\"`".into());
    }
    if view.contains("anyOf") || view.contains("oneOf") {
        return Err("the schema's root is a union (`anyOf`/`oneOf`)".into());
    }
    let mut check = Check {
        root: schema,
        properties: 0,
        enum_values: 0,
        inlined: 0,
        notes,
    };
    check.map(&view, &At::Root, 0, true)?;
    Ok((root, check.notes))
}

/// A tool's input schema made strict, written out when serialized (only
/// made by [`strict_view`], after the schema was checked).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StrictView<'a> {
    schema: &'a Map<String, Value>,
}

impl<'a> StrictView<'a> {
    fn view(&self) -> View<'a> {
        if self.schema.contains_key("type") {
            View::Plain(self.schema)
        } else {
            View::Typed(self.schema)
        }
    }
}

impl Serialize for StrictView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Node {
            root: self.schema,
            view: &self.view(),
            optional: false,
        }
        .serialize(serializer)
    }
}

// ---------------------------------------------------------------------------
// Schemas as `Strict` reads them

/// An object schema as `Strict` sees it: a map of the input, the root with
/// the `type` it adds, or a definition with the keywords beside a `$ref`
/// over it (the map `Strict::inline` builds).
#[derive(Clone, Copy, Debug)]
enum View<'a> {
    Plain(&'a Map<String, Value>),
    /// A root without `type`: `"type": "object"` first, then its keywords.
    Typed(&'a Map<String, Value>),
    /// The definition (`.0`), its keywords' values replaced by those of
    /// `.1` but for `$ref`, then `.1`'s other keywords in their order.
    Merged(&'a Map<String, Value>, &'a View<'a>),
}

impl<'a> View<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        match *self {
            View::Plain(map) => map.get(key),
            View::Typed(_) if key == "type" => Some(&OBJECT),
            View::Typed(map) => map.get(key),
            View::Merged(target, _) if key == "$ref" => target.get(key),
            View::Merged(target, over) => over.get(key).or_else(|| target.get(key)),
        }
    }

    fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    fn len(&self) -> usize {
        match *self {
            View::Plain(map) => map.len(),
            View::Typed(map) => map.len() + 1,
            View::Merged(target, over) => {
                let mut len = target.len();
                let _ = over.try_for_each::<()>(&mut |key, _| {
                    if key != "$ref" && !target.contains_key(key) {
                        len += 1;
                    }
                    Ok(())
                });
                len
            }
        }
    }

    /// Calls `f` with every keyword and its value, in the map's order.
    fn try_for_each<E>(
        &self,
        f: &mut dyn FnMut(&'a str, &'a Value) -> Result<(), E>,
    ) -> Result<(), E> {
        match *self {
            View::Plain(map) => map.iter().try_for_each(|(k, v)| f(k, v)),
            View::Typed(map) => {
                f("type", &OBJECT)?;
                map.iter().try_for_each(|(k, v)| f(k, v))
            }
            View::Merged(target, over) => {
                for (key, value) in target {
                    let value = if key == "$ref" {
                        value
                    } else {
                        over.get(key).unwrap_or(value)
                    };
                    f(key, value)?;
                }
                over.try_for_each(&mut |key, value| {
                    if key == "$ref" || target.contains_key(key) {
                        Ok(())
                    } else {
                        f(key, value)
                    }
                })
            }
        }
    }

    /// The map `Strict` turns this one into when it has a `$ref` and other
    /// keywords: the definition with those keywords over it.
    fn inlined(&'a self, root: &'a Map<String, Value>) -> Option<View<'a>> {
        let reference = self.get("$ref")?;
        if self.len() <= 1 {
            return None;
        }
        let target = reference.as_str().and_then(|r| local_target(root, r))?;
        Some(View::Merged(target, self))
    }
}

/// Whether `Strict` writes `key` (with `value`) into its output map.
fn kept(key: &str, value: &Value) -> bool {
    match key {
        "additionalProperties" | "nullable" | "required" => false,
        "format" => value.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)),
        "oneOf" => true,
        k => STRICT_KEYWORDS.contains(&k),
    }
}

/// The names in a `required` value, for lookups.
enum Required<'a> {
    Few(&'a [Value]),
    Many(HashSet<&'a str>),
}

impl<'a> Required<'a> {
    fn of(required: Option<&'a Value>) -> Self {
        let names = required
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if names.len() <= REQUIRED_SCAN {
            Required::Few(names)
        } else {
            Required::Many(names.iter().filter_map(Value::as_str).collect())
        }
    }

    fn contains(&self, name: &str) -> bool {
        match self {
            Required::Few(names) => names.iter().any(|n| n.as_str() == Some(name)),
            Required::Many(names) => names.contains(name),
        }
    }
}

// ---------------------------------------------------------------------------
// What the output map of one schema looks like

/// What `Strict::schema_map` reads of a schema (no `$ref` to inline left)
/// to shape its output map.
struct Shape<'a> {
    /// Keywords written into the output map.
    kept: usize,
    /// No `$ref`, `anyOf`/`oneOf` or `const`: `make_nullable` can add
    /// `null` to a `type`.
    simple: bool,
    ty: Option<&'a Value>,
    /// `anyOf` or `oneOf` (the output's `anyOf`).
    union: Option<&'a Value>,
    properties: Option<&'a Value>,
    nullable: bool,
    is_object: bool,
    /// The first of `STRICT_BLOCKERS` there (its index).
    blocker: Option<usize>,
    reference: Option<&'a Value>,
    items: bool,
    /// `type`, `anyOf`, `oneOf`, `$ref`, `enum`, `const` or `properties`.
    shaped: bool,
    required: Option<&'a Value>,
    additional: Option<&'a Value>,
}

impl<'a> Shape<'a> {
    fn of(view: &View<'a>) -> Self {
        let mut shape = Shape {
            kept: 0,
            simple: true,
            ty: None,
            union: None,
            properties: None,
            nullable: false,
            is_object: false,
            blocker: None,
            reference: None,
            items: false,
            shaped: false,
            required: None,
            additional: None,
        };
        // One pass over the keywords: cheaper than looking each one up.
        let _ = view.try_for_each::<()>(&mut |key, value| {
            shape.kept += usize::from(kept(key, value));
            match key {
                "type" => shape.ty = Some(value),
                "anyOf" | "oneOf" => {
                    shape.simple = false;
                    shape.union = Some(value);
                }
                "$ref" => {
                    shape.simple = false;
                    shape.reference = Some(value);
                }
                "const" => shape.simple = false,
                "properties" => shape.properties = Some(value),
                "nullable" => shape.nullable = value == &Value::Bool(true),
                "items" => shape.items = true,
                "required" => shape.required = Some(value),
                "additionalProperties" => shape.additional = Some(value),
                _ => {
                    if let Some(i) = STRICT_BLOCKERS.iter().position(|b| *b == key) {
                        shape.blocker = Some(shape.blocker.map_or(i, |j| j.min(i)));
                    }
                }
            }
            shape.shaped |= matches!(
                key,
                "type" | "anyOf" | "oneOf" | "$ref" | "enum" | "const" | "properties"
            );
            Ok(())
        });
        shape.is_object =
            shape.ty.is_some_and(|t| has_type(t, "object")) || shape.properties.is_some();
        shape
    }

    fn has_properties(&self) -> bool {
        self.properties
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty())
    }
}

/// How the output map of a schema is written: the kept keywords, `null`
/// added to its `type` and `enum` or to its `anyOf`, the keywords of a
/// closed object after them, and up to two `{"anyOf": [<map>, {"type":
/// "null"}]}` around it — `make_nullable` for `nullable: true`, the
/// object's keywords, `make_nullable` for an optional property, in that
/// order.
#[derive(Default)]
struct Plan {
    null_type: bool,
    null_any: bool,
    /// `properties` (when missing), `required` and `additionalProperties`
    /// after the kept keywords.
    closed: bool,
    wraps: usize,
    /// The object's keywords on the first wrapper.
    wrap_closed: bool,
}

impl Plan {
    fn new(shape: &Shape<'_>, optional: bool, root: &Map<String, Value>) -> Self {
        let mut plan = Plan::default();
        if shape.nullable {
            plan.make_nullable(shape, root);
        }
        if shape.is_object {
            if plan.wraps == 0 {
                plan.closed = true;
            } else {
                plan.wrap_closed = true;
            }
        }
        if optional {
            plan.make_nullable(shape, root);
        }
        plan
    }

    /// `make_nullable` on the map as planned so far.
    fn make_nullable(&mut self, shape: &Shape<'_>, root: &Map<String, Value>) {
        if self.wraps > 0 {
            // `{"anyOf": [<map>, {"type": "null"}]}`: takes `null` already,
            // unless the object's keywords were added beside the `anyOf`.
            if self.wraps == 1 && self.wrap_closed {
                self.wraps = 2;
            }
            return;
        }
        if shape.simple && matches!(shape.ty, Some(Value::String(_) | Value::Array(_))) {
            self.null_type = true;
            return;
        }
        let len = shape.kept
            + if self.closed {
                2 + usize::from(shape.properties.is_none())
            } else {
                0
            };
        if len == 1
            && let Some(Value::Array(entries)) = shape.union
        {
            if !self.null_any && !entries.iter().any(|e| writes_null_schema(e, root)) {
                self.null_any = true;
            }
            return;
        }
        self.wraps = 1;
    }
}

/// Whether `Strict` turns `entry` into exactly `{"type": "null"}`.
fn writes_null_schema(entry: &Value, root: &Map<String, Value>) -> bool {
    fn check(view: &View<'_>, root: &Map<String, Value>) -> bool {
        if let Some(merged) = view.inlined(root) {
            return check(&merged, root);
        }
        let shape = Shape::of(view);
        shape.kept == 1 && shape.ty.and_then(Value::as_str) == Some("null") && !shape.is_object
    }
    entry
        .as_object()
        .is_some_and(|map| check(&View::Plain(map), root))
}

// ---------------------------------------------------------------------------
// The checks and the notes, in `Strict`'s order

struct Check<'r> {
    root: &'r Map<String, Value>,
    properties: usize,
    enum_values: usize,
    inlined: usize,
    notes: Vec<Note>,
}

impl Check<'_> {
    fn schema(&mut self, value: &Value, at: &At<'_>, depth: usize) -> Result<(), String> {
        match value {
            Value::Object(map) => self.map(&View::Plain(map), at, depth, false),
            Value::Bool(true) => Err(format!("`{at}` allows any value (`true`)")),
            _ => Err(format!("`{at}` is not a schema")),
        }
    }

    fn map(&mut self, map: &View<'_>, at: &At<'_>, depth: usize, root: bool) -> Result<(), String> {
        let at_or_root = |at: &At<'_>| {
            if matches!(at, At::Root) {
                "the root".to_owned()
            } else {
                format!("`{at}`")
            }
        };
        let shape = Shape::of(map);
        if let Some(i) = shape.blocker {
            return Err(format!(
                "{} uses `{}`, which strict mode does not support",
                at_or_root(at),
                STRICT_BLOCKERS[i]
            ));
        }
        if let Some(reference) = shape.reference
            && map.len() > 1
        {
            return self.inline(map, reference, at, depth, root);
        }
        if !shape.shaped {
            return Err(format!(
                "{} has no `type` (any value), which strict mode does not support",
                at_or_root(at)
            ));
        }
        if shape.ty.is_some_and(|t| has_type(t, "array")) && !shape.items {
            return Err(format!(
                "{} is an array without `items` (any items)",
                at_or_root(at)
            ));
        }
        let is_object = shape.is_object;
        let depth = depth + usize::from(is_object);
        if depth > STRICT_MAX_DEPTH {
            return Err(format!(
                "objects are nested more than {STRICT_MAX_DEPTH} levels deep (OpenAI's limit)"
            ));
        }
        let mut union = false;
        map.try_for_each(&mut |key, value| {
            let here = At::Key(at, key);
            match key {
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
                    let required = Required::of(shape.required);
                    let mut optional = String::new();
                    for (name, schema) in properties {
                        self.schema(schema, &At::Key(&here, name), depth)?;
                        if !required.contains(name) {
                            if !optional.is_empty() {
                                optional.push_str(", ");
                            }
                            optional.push('`');
                            optional.push_str(name);
                            optional.push('`');
                        }
                    }
                    if !optional.is_empty() {
                        self.notes.push(Note::new(
                            &here,
                            format!(
                                "optional {optional} made required and nullable: strict mode \
                                 requires every property"
                            ),
                        ));
                    }
                }
                "items" => {
                    if value.is_array() {
                        return Err(format!(
                            "`{here}` is a tuple, which strict mode does not support"
                        ));
                    }
                    self.schema(value, &here, depth)?;
                }
                "anyOf" | "oneOf" => {
                    let Value::Array(entries) = value else {
                        return Err(format!("`{here}` is not an array"));
                    };
                    for (i, entry) in entries.iter().enumerate() {
                        self.schema(entry, &At::Index(&here, i), depth)?;
                    }
                    if key == "oneOf" {
                        self.notes.push(Note::new(
                            &here,
                            "`oneOf` became `anyOf`: strict mode has no `oneOf`",
                        ));
                    }
                    if union {
                        return Err(format!("{} has both `anyOf` and `oneOf`", at_or_root(at)));
                    }
                    union = true;
                }
                "$defs" | "definitions" => {
                    let Value::Object(definitions) = value else {
                        return Err(format!("`{here}` is not an object"));
                    };
                    for (name, schema) in definitions {
                        self.schema(schema, &At::Key(&here, name), 0)?;
                    }
                }
                "additionalProperties" if value != &Value::Bool(false) => {
                    return Err(format!(
                        "{} allows additional properties (a free-form map)",
                        at_or_root(at)
                    ));
                }
                "enum" => {
                    self.enum_values += value.as_array().map_or(0, Vec::len);
                    if self.enum_values > STRICT_MAX_ENUM_VALUES {
                        return Err(format!(
                            "more than {STRICT_MAX_ENUM_VALUES} enum values (OpenAI's limit)"
                        ));
                    }
                }
                "format" if !kept(key, value) => self.notes.push(Note::new(
                    &here,
                    format!("removed `format` {value}: strict mode does not support it"),
                )),
                k if STRICT_KEYWORDS.contains(&k) => {}
                _ => self.notes.push(Note::new(
                    &here,
                    format!("removed `{key}`: strict mode does not support it"),
                )),
            }
            Ok(())
        })?;
        if is_object {
            let plan = Plan::new(&shape, false, self.root);
            let has_properties = plan.wraps == 0 && shape.has_properties();
            let closed = shape.additional == Some(&Value::Bool(false));
            if !has_properties && !root && !closed {
                return Err(format!(
                    "`{at}` is an object without properties (a free-form map)"
                ));
            }
        }
        Ok(())
    }

    fn inline(
        &mut self,
        map: &View<'_>,
        reference: &Value,
        at: &At<'_>,
        depth: usize,
        root: bool,
    ) -> Result<(), String> {
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
        self.inlined += 1;
        let out = self.map(&View::Merged(target, map), at, depth, root);
        self.inlined -= 1;
        out
    }
}

// ---------------------------------------------------------------------------
// Writing

fn invalid<E: serde::ser::Error>() -> E {
    E::custom("strict view of a schema that was not checked")
}

/// One schema of the output (a property, `items`, an `anyOf` entry, a
/// definition).
struct Schema<'a> {
    root: &'a Map<String, Value>,
    value: &'a Value,
    optional: bool,
}

impl Serialize for Schema<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.value else {
            return Err(invalid());
        };
        Node {
            root: self.root,
            view: &View::Plain(map),
            optional: self.optional,
        }
        .serialize(serializer)
    }
}

struct Node<'a> {
    root: &'a Map<String, Value>,
    view: &'a View<'a>,
    /// An optional property: made nullable.
    optional: bool,
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let shape = Shape::of(self.view);
        if shape.reference.is_some() && self.view.len() > 1 {
            let merged = self.view.inlined(self.root).ok_or_else(invalid)?;
            return Node {
                view: &merged,
                ..*self
            }
            .serialize(serializer);
        }
        let plan = Plan::new(&shape, self.optional, self.root);
        Wrapped {
            node: self,
            shape: &shape,
            plan: &plan,
            wraps: plan.wraps,
        }
        .serialize(serializer)
    }
}

/// The output map inside `wraps` of `{"anyOf": [<map>, {"type": "null"}]}`.
struct Wrapped<'n, 'a> {
    node: &'n Node<'a>,
    shape: &'n Shape<'a>,
    plan: &'n Plan,
    wraps: usize,
}

impl Serialize for Wrapped<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.wraps == 0 {
            return self.core(serializer);
        }
        let inner = Wrapped {
            wraps: self.wraps - 1,
            ..*self
        };
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("anyOf", &(inner, NullSchema))?;
        if self.wraps == 1 && self.plan.wrap_closed {
            map.serialize_entry("properties", &Empty)?;
            map.serialize_entry("required", &[(); 0])?;
            map.serialize_entry("additionalProperties", &false)?;
        }
        map.end()
    }
}

impl Wrapped<'_, '_> {
    fn core<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Node { root, view, .. } = *self.node;
        let plan = self.plan;
        let mut map = serializer.serialize_map(None)?;
        view.try_for_each(&mut |key, value| match key {
            "properties" => map.serialize_entry(
                key,
                &Properties {
                    root,
                    required: self.shape.required,
                    properties: value.as_object().ok_or_else(invalid)?,
                },
            ),
            "items" => map.serialize_entry(
                key,
                &Schema {
                    root,
                    value,
                    optional: false,
                },
            ),
            "anyOf" | "oneOf" => map.serialize_entry(
                "anyOf",
                &Union {
                    root,
                    entries: value.as_array().ok_or_else(invalid)?,
                    null: plan.null_any,
                },
            ),
            "$defs" | "definitions" => map.serialize_entry(
                key,
                &Definitions {
                    root,
                    definitions: value.as_object().ok_or_else(invalid)?,
                },
            ),
            "type" if plan.null_type => map.serialize_entry(key, &NullableType(value)),
            "enum" if plan.null_type => map.serialize_entry(key, &NullableEnum(value)),
            _ if kept(key, value) => map.serialize_entry(key, value),
            _ => Ok(()),
        })?;
        if plan.closed {
            let properties = self.shape.properties.and_then(Value::as_object);
            if properties.is_none() {
                map.serialize_entry("properties", &Empty)?;
            }
            map.serialize_entry("required", &Names(properties))?;
            map.serialize_entry("additionalProperties", &false)?;
        }
        map.end()
    }
}

struct Properties<'a> {
    root: &'a Map<String, Value>,
    required: Option<&'a Value>,
    properties: &'a Map<String, Value>,
}

impl Serialize for Properties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let required = Required::of(self.required);
        let mut map = serializer.serialize_map(Some(self.properties.len()))?;
        for (name, value) in self.properties {
            map.serialize_entry(
                name,
                &Schema {
                    root: self.root,
                    value,
                    optional: !required.contains(name),
                },
            )?;
        }
        map.end()
    }
}

struct Definitions<'a> {
    root: &'a Map<String, Value>,
    definitions: &'a Map<String, Value>,
}

impl Serialize for Definitions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.definitions.len()))?;
        for (name, value) in self.definitions {
            map.serialize_entry(
                name,
                &Schema {
                    root: self.root,
                    value,
                    optional: false,
                },
            )?;
        }
        map.end()
    }
}

struct Union<'a> {
    root: &'a Map<String, Value>,
    entries: &'a [Value],
    /// `{"type": "null"}` after the entries.
    null: bool,
}

impl Serialize for Union<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = self.entries.len() + usize::from(self.null);
        let mut seq = serializer.serialize_seq(Some(len))?;
        for value in self.entries {
            seq.serialize_element(&Schema {
                root: self.root,
                value,
                optional: false,
            })?;
        }
        if self.null {
            seq.serialize_element(&NullSchema)?;
        }
        seq.end()
    }
}

/// The names of the properties, in their order: every one is required.
struct Names<'a>(Option<&'a Map<String, Value>>);

impl Serialize for Names<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.map_or(0, Map::len)))?;
        for name in self.0.into_iter().flat_map(Map::keys) {
            seq.serialize_element(name)?;
        }
        seq.end()
    }
}

/// `{"type": "null"}`.
struct NullSchema;

impl Serialize for NullSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("type", "null")?;
        map.end()
    }
}

/// `{}`.
struct Empty;

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_map(Some(0))?.end()
    }
}

/// A `type` that takes `null` too: `"null"` as is, `T` as `[T, "null"]`,
/// a list with `"null"` added when missing.
struct NullableType<'a>(&'a Value);

impl Serialize for NullableType<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(t) if t == "null" => serializer.serialize_str(t),
            Value::String(t) => {
                let mut seq = serializer.serialize_seq(Some(2))?;
                seq.serialize_element(t)?;
                seq.serialize_element("null")?;
                seq.end()
            }
            Value::Array(types) => {
                let missing = !types.iter().any(|t| t.as_str() == Some("null"));
                let mut seq = serializer.serialize_seq(Some(types.len() + usize::from(missing)))?;
                for t in types {
                    seq.serialize_element(t)?;
                }
                if missing {
                    seq.serialize_element("null")?;
                }
                seq.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// An `enum` list with `null` added when missing.
struct NullableEnum<'a>(&'a Value);

impl Serialize for NullableEnum<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Array(values) = self.0 else {
            return self.0.serialize(serializer);
        };
        let missing = !values.contains(&Value::Null);
        let mut seq = serializer.serialize_seq(Some(values.len() + usize::from(missing)))?;
        for value in values {
            seq.serialize_element(value)?;
        }
        if missing {
            seq.serialize_element(&())?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    use serde_json::json;

    use super::*;
    use crate::schema::strict_oracle::openai_strict_noted;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    /// `strict_view` agrees with `openai_strict_noted`: same refusal and
    /// reason, or the same text and notes. `Ok(true)` when strict.
    fn agrees(schema: &Map<String, Value>) -> Result<bool, String> {
        match (openai_strict_noted(schema), strict_view(schema)) {
            (Err(expected), Err(got)) if expected == got => Ok(false),
            (Ok((value, notes)), Ok((view, got_notes))) => {
                let expected = serde_json::to_string(&value).expect("serializes");
                let got = serde_json::to_string(&view).map_err(|e| format!("{e}"))?;
                if expected != got {
                    return Err(format!(
                        "text differs:\n  strict {expected}\n  view   {got}"
                    ));
                }
                let pretty = serde_json::to_string_pretty(&value).expect("serializes");
                if pretty != serde_json::to_string_pretty(&view).map_err(|e| format!("{e}"))? {
                    return Err("pretty text differs".into());
                }
                if notes != got_notes {
                    return Err(format!(
                        "notes differ:\n  strict {notes:?}\n  view   {got_notes:?}"
                    ));
                }
                Ok(true)
            }
            (expected, got) => Err(format!(
                "outcome differs:\n  strict {:?}\n  view   {:?}",
                expected.map(|(v, _)| v.to_string()),
                got.map(|(v, _)| serde_json::to_string(&v).unwrap_or_default())
            )),
        }
    }

    fn assert_agrees(schema: &Value) -> bool {
        match agrees(&object(schema.clone())) {
            Ok(strict) => strict,
            Err(e) => panic!("{schema}\n{e}"),
        }
    }

    /// The schemas of `tests/definitions.rs` (its tools and its strict
    /// tests) and hand-written edge cases.
    fn known_schemas() -> Vec<Value> {
        let mut deep = json!({"type": "object", "properties": {"leaf": {"type": "string"}}});
        let mut nested = Vec::new();
        for _ in 0..10 {
            deep = json!({"type": "object", "properties": {"x": deep}});
            nested.push(deep.clone());
        }
        let many: Map<String, Value> = (0..5001)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let fewer: Map<String, Value> = (0..40)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let some_required: Vec<String> = (0..40).step_by(3).map(|i| format!("p{i}")).collect();
        let values: Vec<String> = (0..1001).map(|i| format!("v{i}")).collect();
        let mut out = vec![
            // tests/definitions.rs tools
            json!({
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "City and country, e.g. `Paris, France`."},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
                },
                "required": ["location"]
            }),
            json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {
                    "owner": {"type": "string"},
                    "repo": {"type": "string"},
                    "title": {"type": "string", "minLength": 1},
                    "body": {"type": "string", "description": "Markdown."},
                    "labels": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
                    "assignee": {
                        "type": "object",
                        "properties": {
                            "login": {"type": "string"},
                            "notify": {"type": "boolean"}
                        },
                        "required": ["login"],
                        "additionalProperties": false
                    }
                },
                "required": ["owner", "repo", "title"],
                "additionalProperties": false
            }),
            json!({
                "type": "object",
                "properties": {
                    "document": {"$ref": "#/$defs/docId", "description": "The document to write into."},
                    "root": {"$ref": "#/$defs/section"}
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
            }),
            json!({
                "type": "object",
                "properties": {
                    "sql": {"type": "string"},
                    "dialect": {"const": "postgres"},
                    "params": {"type": "array", "items": {"type": ["string", "number", "boolean", "null"]}},
                    "timeout_ms": {"type": ["integer", "null"], "exclusiveMinimum": 0, "maximum": 60000},
                    "mode": {"oneOf": [
                        {"type": "string", "enum": ["fast", "safe"]},
                        {"type": "null"}
                    ]},
                    "retries": {"enum": [0, 1, 3]},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "type": {"type": "string", "description": "A property named like a keyword."}
                },
                "required": ["sql", "missing"]
            }),
            json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
            json!({"properties": {"path": {"type": "string"}}, "required": ["path"]}),
            json!({"type": "object"}),
            json!({}),
            json!({"properties": {"location": {"type": "string"}, "unit": {"type": "string", "default": "c"}}}),
            // tests/definitions.rs strict tests
            json!({
                "type": "object",
                "properties": {
                    "r": {"$ref": "#/$defs/r"},
                    "c": {"const": "x"},
                    "u": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    "e": {"type": "string", "enum": ["a", "b"]}
                },
                "$defs": {"r": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}
            }),
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {
                    "a": {"type": "string", "default": "x", "minLength": 1, "format": "uri", "examples": ["x"]},
                    "d": {"type": "string", "format": "date"},
                    "o": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                    "n": {"type": "integer", "nullable": true, "minimum": 0}
                },
                "required": ["a", "d", "o", "n"]
            }),
            json!({"type": "string"}),
            json!({"type": "object", "anyOf": [{}]}),
            json!({"type": "object", "additionalProperties": true}),
            json!({"type": "object", "properties": {"m": {"type": "object"}}}),
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
            json!({"type": "object", "properties": {"a": {"allOf": [{"type": "string"}]}}}),
            json!({"type": "object", "properties": {"a": {"not": {"type": "string"}}}}),
            json!({"type": "object", "properties": {"a": {"description": "anything"}}}),
            json!({"type": "object", "properties": {"a": {"type": "array"}}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}),
            json!({"type": "object", "properties": many}),
            json!({"type": "object", "properties": fewer, "required": some_required}),
            json!({"type": "object", "properties": {"e": {"type": "string", "enum": values}}}),
            json!({
                "type": "object",
                "properties": {"n": {"$ref": "#/$defs/n", "description": "N."}},
                "required": ["n"],
                "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n", "description": "Next."}}}}
            }),
            // Edge cases of `make_nullable` and the object keywords.
            json!({"type": "object", "properties": {
                "a": {"properties": {"x": {"type": "string"}}, "nullable": true},
                "b": {"properties": {"x": {"type": "string"}}, "nullable": true, "additionalProperties": false},
                "c": {"const": 1, "nullable": true},
                "d": {"anyOf": [{"type": "string"}], "nullable": true},
                "e": {"anyOf": [{"type": "null", "default": 1}], "nullable": true},
                "f": {"type": "null", "enum": [1], "nullable": true},
                "g": {"type": 5, "nullable": true},
                "h": {"oneOf": [{"$ref": "#/$defs/z", "title": "t"}]},
                "i": {"type": ["object", "null"], "properties": {}, "additionalProperties": false},
                "k": {"properties": {"x": {"type": "string"}}, "nullable": true, "additionalProperties": false},
                "j": {"enum": "x", "type": "string"}
            }, "required": ["b"], "$defs": {"z": {"type": "null"}}}),
            json!({"$ref": "#/$defs/r", "$defs": {"r": {"properties": {"a": {"type": "string"}}}}}),
            json!({"type": "object", "$ref": "#/$defs/r", "title": "T",
                   "$defs": {"r": {"type": "object", "nullable": true, "properties": {"a": {"type": "string"}}}}}),
            json!({"type": "object", "properties": {"a/b~c": {"type": "string", "x-y": 1}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a~1b", "title": "t"}},
                   "$defs": {"a/b": {"type": "integer", "$comment": "c"}}}),
            json!({"type": "object", "oneOf": [{"type": "object"}]}),
            json!({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}], "oneOf": [{"type": "string"}]}}}),
            json!({"type": "object", "properties": {"a": true}}),
            json!({"type": "object", "properties": {"a": false}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": 3}}}),
            json!({"type": "object", "properties": {"a": {"anyOf": {}}}}),
            json!({"type": "object", "$defs": []}),
        ];
        out.extend(nested);
        out
    }

    #[test]
    fn known_schemas_agree() {
        let mut strict = 0;
        for schema in crate::testdata::bench_schemas()
            .iter()
            .chain(&known_schemas())
        {
            strict += usize::from(assert_agrees(schema));
        }
        assert!(strict > 15, "{strict}");
    }

    /// The bench's schemas that can be strict are written by the view (the
    /// third has a free-form map: refused by both).
    #[test]
    fn bench_schemas_stream() {
        for (i, schema) in crate::testdata::bench_schemas().into_iter().enumerate() {
            let map = object(schema.clone());
            if i == 2 {
                assert!(strict_view(&map).is_err());
                assert!(!assert_agrees(&schema));
                continue;
            }
            let (view, _) = strict_view(&map).expect("strict");
            assert!(serde_json::to_string(&view).is_ok(), "{schema}");
            assert!(assert_agrees(&schema));
        }
    }

    /// `$ref`s with keywords beside them inlined inside one another: the
    /// same limit.
    #[test]
    fn inlining_chains_agree() {
        for length in [1, 2, 15, 16, 17, 18, 30] {
            let mut defs = Map::new();
            for i in 0..length {
                defs.insert(
                    format!("d{i}"),
                    json!({"$ref": format!("#/$defs/d{}", i + 1), "title": format!("t{i}"), "default": i}),
                );
            }
            defs.insert(
                format!("d{length}"),
                json!({"type": "string", "title": "last"}),
            );
            let schema = json!({"type": "object", "properties": {
                "a": {"$ref": "#/$defs/d0", "description": "x"},
                "b": {"type": "array", "items": {"$ref": "#/$defs/d0", "minItems": 1}}
            }, "$defs": defs});
            assert_agrees(&schema);
        }
    }

    /// Every JSON Schema (and OpenAPI) keyword, alone and beside a type, on
    /// a property, the root and through an inlined `$ref`: catches a
    /// keyword list here drifting from `schema.rs`'s.
    #[test]
    fn every_keyword_agrees() {
        let keywords = [
            "$schema",
            "$id",
            "$anchor",
            "$dynamicAnchor",
            "$dynamicRef",
            "$vocabulary",
            "$comment",
            "$defs",
            "definitions",
            "$ref",
            "type",
            "enum",
            "const",
            "multipleOf",
            "maximum",
            "exclusiveMaximum",
            "minimum",
            "exclusiveMinimum",
            "maxLength",
            "minLength",
            "pattern",
            "maxItems",
            "minItems",
            "uniqueItems",
            "maxContains",
            "minContains",
            "maxProperties",
            "minProperties",
            "required",
            "dependentRequired",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
            "if",
            "then",
            "else",
            "dependentSchemas",
            "prefixItems",
            "items",
            "contains",
            "additionalItems",
            "properties",
            "patternProperties",
            "additionalProperties",
            "propertyNames",
            "unevaluatedItems",
            "unevaluatedProperties",
            "format",
            "contentEncoding",
            "contentMediaType",
            "contentSchema",
            "title",
            "description",
            "default",
            "deprecated",
            "readOnly",
            "writeOnly",
            "examples",
            "example",
            "nullable",
            "discriminator",
            "xml",
            "externalDocs",
            "x-vendor",
            "propertyOrdering",
            "id",
            "dependencies",
            "extends",
            "disallow",
            "divisibleBy",
        ];
        let values = [
            json!(true),
            json!(false),
            json!("date"),
            json!("uri"),
            json!(1),
            json!([]),
            json!({}),
            json!({"type": "string"}),
            json!([{"type": "string"}]),
            json!(["a"]),
            json!("#/$defs/s"),
        ];
        let mut cases = 0;
        for keyword in keywords {
            for value in &values {
                let mut p = Map::new();
                p.insert(keyword.to_owned(), value.clone());
                let mut typed = object(json!({"type": "string"}));
                typed.insert(keyword.to_owned(), value.clone());
                let mut over_ref = object(json!({"$ref": "#/$defs/s"}));
                over_ref.insert(keyword.to_owned(), value.clone());
                let mut root = object(json!({"properties": {"a": {"type": "string"}}}));
                root.insert(keyword.to_owned(), value.clone());
                for schema in [
                    json!({"type": "object", "properties": {"a": p}, "$defs": {"s": {"type": "integer"}}}),
                    json!({"type": "object", "properties": {"a": typed}, "required": ["a"], "$defs": {"s": {"type": "integer"}}}),
                    json!({"type": "object", "properties": {"a": over_ref}, "$defs": {"s": {"type": "integer", "enum": [1]}}}),
                    Value::Object(root),
                ] {
                    assert_agrees(&schema);
                    cases += 1;
                }
            }
        }
        assert!(cases > 3000);
    }

    // -----------------------------------------------------------------------
    // Random schemas

    /// `tests/definitions.rs`'s `schema`: mixing what strict mode takes and
    /// what it refuses.
    fn mixed_schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!({"type": "string", "format": "uri"})),
            Just(json!({"type": ["integer", "null"], "exclusiveMaximum": 9})),
            Just(json!({"const": 3})),
            Just(json!({"const": "x"})),
            Just(json!({"enum": ["a", 1, null]})),
            Just(json!({"$ref": "#/$defs/a", "description": "beside"})),
            Just(json!({"$ref": "#/$defs/b"})),
            Just(json!({"$ref": "#/nowhere"})),
            Just(json!(true)),
            Just(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            Just(json!({"x-vendor": 1, "$comment": "c", "not": {}})),
        ];
        leaf.prop_recursive(4, 48, 4, |inner| {
            prop_oneof![
                prop::collection::btree_map("[a-c]|type|\\$ref|properties", inner.clone(), 0..4)
                    .prop_map(|m| json!({"type": "object", "properties": m, "required": ["a", "type", "z"]})),
                prop::collection::vec(inner.clone(), 0..3).prop_map(|v| json!({"anyOf": v})),
                prop::collection::vec(inner.clone(), 0..3).prop_map(|v| json!({"oneOf": v})),
                prop::collection::vec(inner.clone(), 0..3).prop_map(|v| json!({"allOf": v})),
                inner.clone().prop_map(|i| json!({"type": "array", "items": i})),
                prop::collection::vec(inner, 0..3)
                    .prop_map(|v| json!({"type": "array", "prefixItems": v})),
            ]
        })
    }

    fn mixed_root() -> impl Strategy<Value = Map<String, Value>> {
        (mixed_schema(), mixed_schema(), mixed_schema()).prop_map(|(p, a, b)| {
            object(json!({
                "type": "object",
                "properties": {"p": p, "q": {"$ref": "#/$defs/a"}},
                "$defs": {"a": a, "b": b}
            }))
        })
    }

    /// `tests/definitions.rs`'s `strict_schema`: mostly what strict mode
    /// takes.
    fn strict_schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!({"type": "string", "default": "d", "minLength": 2})),
            Just(json!({"type": ["integer", "null"]})),
            Just(json!({"type": "number", "nullable": true})),
            Just(json!({"const": "x"})),
            Just(json!({"type": "string", "enum": ["a", "b"]})),
            Just(json!({"$ref": "#/$defs/a", "description": "beside"})),
            Just(json!({"$ref": "#/$defs/b"})),
        ];
        leaf.prop_recursive(4, 48, 4, |inner| {
            prop_oneof![
                prop::collection::btree_map("[a-c]|type|\\$ref|properties", inner.clone(), 1..4)
                    .prop_map(
                        |m| json!({"type": "object", "properties": m, "required": ["a", "type"]})
                    ),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"anyOf": v})),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"oneOf": v})),
                inner.prop_map(|i| json!({"type": "array", "items": i})),
            ]
        })
    }

    fn strict_root() -> impl Strategy<Value = Map<String, Value>> {
        (strict_schema(), strict_schema()).prop_map(|(p, a)| {
            object(json!({
                "type": "object",
                "properties": {"p": p, "q": {"$ref": "#/$defs/a"}},
                "required": ["q"],
                "$defs": {"a": a, "b": {"type": "object", "properties": {"x": {"type": "string"}}}}
            }))
        })
    }

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => "[a-d]",
            1 => Just("type".to_owned()),
            1 => Just("$ref".to_owned()),
            1 => Just("required".to_owned()),
            1 => Just("properties".to_owned()),
            1 => Just("a/b~c".to_owned()),
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
            3 => Just("string"),
            1 => Just("integer"),
            1 => Just("number"),
            1 => Just("boolean"),
            3 => Just("object"),
            2 => Just("array"),
            2 => Just("null"),
        ]
        .prop_map(Value::from)
    }

    fn map_of(entries: Vec<(String, Value)>) -> Value {
        Value::Object(entries.into_iter().collect())
    }

    fn reference() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => Just("#/$defs/a"),
            3 => Just("#/$defs/b"),
            2 => Just("#/definitions/c"),
            1 => Just("#/$defs/x~1y"),
            1 => Just("#/$defs/missing"),
            1 => Just("https://example.com/s.json"),
        ]
        .prop_map(Value::from)
    }

    /// One keyword and its value, `tests/gemini_clean.rs`'s `entry` tuned
    /// for strict mode: `inner` makes nested schemas.
    fn entry(inner: BoxedStrategy<Value>) -> impl Strategy<Value = (String, Value)> {
        let key = |k: &'static str| move |v: Value| (k.to_owned(), v);
        let entries = prop::collection::vec(
            prop_oneof![5 => inner.clone(), 1 => Just(json!({"type": "null"}))],
            0..4,
        );
        prop_oneof![
            8 => prop_oneof![
                5 => type_name(),
                2 => prop::collection::vec(type_name(), 0..3).prop_map(Value::from),
                1 => Just(json!(7)),
            ].prop_map(key("type")),
            2 => "[a-z ]{0,8}".prop_map(Value::from).prop_map(key("description")),
            7 => prop::collection::vec((name(), inner.clone()), 0..4)
                .prop_map(map_of)
                .prop_map(key("properties")),
            1 => Just(json!([])).prop_map(key("properties")),
            4 => prop_oneof![
                8 => inner.clone(),
                1 => prop::collection::vec(inner.clone(), 0..2).prop_map(Value::from),
            ].prop_map(key("items")),
            3 => entries.clone().prop_map(Value::from).prop_map(key("anyOf")),
            2 => entries.prop_map(Value::from).prop_map(key("oneOf")),
            3 => reference().prop_map(key("$ref")),
            1 => prop::collection::vec((prop_oneof![Just("a".to_owned()), Just("b".to_owned())], inner.clone()), 0..3)
                .prop_map(map_of)
                .prop_map(key("$defs")),
            1 => scalar().prop_map(key("const")),
            3 => prop_oneof![
                4 => prop::collection::vec("[a-c]".prop_map(Value::from), 0..4).prop_map(Value::from),
                2 => prop::collection::vec(scalar(), 0..4).prop_map(Value::from),
                1 => scalar(),
            ].prop_map(key("enum")),
            5 => prop_oneof![
                8 => prop::collection::vec(name().prop_map(Value::from), 0..4).prop_map(Value::from),
                1 => scalar(),
            ].prop_map(key("required")),
            3 => prop_oneof![4 => Just(json!(false)), 1 => Just(json!(true)), 1 => inner.clone()]
                .prop_map(key("additionalProperties")),
            3 => prop_oneof![4 => Just(json!(true)), 1 => Just(json!(false)), 1 => Just(json!(1))]
                .prop_map(key("nullable")),
            2 => prop_oneof![
                Just("date-time"), Just("uuid"), Just("uri"), Just("int32"), Just("email")
            ].prop_map(Value::from).prop_map(key("format")),
            2 => (
                prop_oneof![
                    Just("minimum"), Just("maximum"), Just("exclusiveMinimum"),
                    Just("title"), Just("default"), Just("minLength"), Just("pattern"),
                    Just("minItems"), Just("examples"), Just("$comment"), Just("x-vendor"),
                    Just("$schema"), Just("uniqueItems"),
                ],
                scalar(),
            ).prop_map(|(k, v)| (k.to_owned(), v)),
            1 => (
                prop_oneof![Just("allOf"), Just("not"), Just("prefixItems"), Just("if")],
                Just(json!({})),
            ).prop_map(|(k, v)| (k.to_owned(), v)),
        ]
    }

    fn schema() -> BoxedStrategy<Value> {
        let leaf = prop_oneof![
            8 => prop::collection::vec(entry(Just(json!({"type": "string"})).boxed()), 1..4)
                .prop_map(map_of),
            2 => Just(json!({"type": "string"})),
            1 => any::<bool>().prop_map(Value::from),
            1 => Just(json!({"type": "null"})),
            1 => Just(json!(3)),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                1 => inner.clone(),
                6 => prop::collection::vec(entry(inner), 1..6).prop_map(map_of),
            ]
        })
        .boxed()
    }

    /// A root whose `$defs` the `$ref`s above point at (some of them `$ref`s
    /// with keywords beside them, so that inlining chains).
    fn root() -> impl Strategy<Value = Map<String, Value>> {
        (
            prop::collection::vec(entry(schema()), 0..7),
            schema(),
            schema(),
            schema(),
            schema(),
            any::<bool>(),
        )
            .prop_map(|(entries, a, b, c, d, typed)| {
                let mut map: Map<String, Value> = Map::new();
                if typed {
                    map.insert("type".into(), "object".into());
                }
                map.extend(entries);
                map.insert("$defs".into(), json!({"a": a, "b": b, "x/y": d}));
                map.insert("definitions".into(), json!({"c": c}));
                map
            })
    }

    /// A decoration: a keyword strict mode keeps, removes, or (rarely)
    /// refuses.
    fn extra() -> impl Strategy<Value = (String, Value)> {
        let key = |k: &'static str| move |v: Value| (k.to_owned(), v);
        prop_oneof![
            4 => "[a-z]{0,5}".prop_map(Value::from).prop_map(key("description")),
            2 => "[A-Z]{1,3}".prop_map(Value::from).prop_map(key("title")),
            4 => prop_oneof![4 => Just(json!(true)), 1 => Just(json!(false))].prop_map(key("nullable")),
            2 => prop_oneof![Just("date"), Just("uri"), Just("uuid"), Just("int64")]
                .prop_map(Value::from)
                .prop_map(key("format")),
            3 => (
                prop_oneof![
                    Just("default"), Just("examples"), Just("minLength"), Just("$comment"),
                    Just("x-vendor"), Just("minimum"), Just("maxItems"), Just("pattern"),
                    Just("uniqueItems"), Just("readOnly"),
                ],
                scalar(),
            ).prop_map(|(k, v)| (k.to_owned(), v)),
            1 => prop_oneof![Just(json!(["a", "b"])), Just(json!([1, null])), Just(json!("x"))]
                .prop_map(key("enum")),
            1 => prop_oneof![Just(json!(false)), Just(json!(false)), Just(json!(true))]
                .prop_map(key("additionalProperties")),
            1 => prop_oneof![Just("#/$defs/a"), Just("#/$defs/b"), Just("#/definitions/c")]
                .prop_map(Value::from)
                .prop_map(key("$ref")),
            1 => prop::collection::vec("[a-c]".prop_map(Value::from), 0..3)
                .prop_map(Value::from)
                .prop_map(key("required")),
        ]
    }

    /// A schema of one kind (mostly what strict mode takes), decorated,
    /// its keywords shuffled.
    fn valid_schema() -> BoxedStrategy<Value> {
        let decorate = |core: Vec<(String, Value)>| {
            (Just(core), prop::collection::vec(extra(), 0..3)).prop_flat_map(|(mut core, extra)| {
                for (k, v) in extra {
                    if !core.iter().any(|(c, _)| *c == k) {
                        core.push((k, v));
                    }
                }
                Just(core).prop_shuffle().prop_map(map_of)
            })
        };
        let pair = |k: &str, v: Value| (k.to_owned(), v);
        let leaf = prop_oneof![
            4 => prop_oneof![Just("string"), Just("integer"), Just("number"), Just("boolean"), Just("null")]
                .prop_map(move |t| vec![pair("type", json!(t))]),
            1 => prop::collection::vec(prop_oneof![Just("string"), Just("null"), Just("integer")], 1..3)
                .prop_map(move |t| vec![pair("type", json!(t))]),
            1 => scalar().prop_map(move |c| vec![pair("const", c)]),
            1 => Just(vec![pair("type", json!("string")), pair("enum", json!(["x", "y"]))]),
            1 => Just(vec![pair("enum", json!([1, 2, null]))]),
            1 => prop_oneof![Just("#/$defs/a"), Just("#/$defs/b"), Just("#/definitions/c"), Just("#/$defs/x~1y")]
                .prop_map(move |r| vec![pair("$ref", json!(r))]),
        ];
        leaf.prop_flat_map(decorate)
            .boxed()
            .prop_recursive(4, 48, 5, move |inner| {
                let object = (
                    prop::collection::vec((name(), inner.clone()), 0..4),
                    prop::collection::vec(name(), 0..4),
                    any::<bool>(),
                    any::<bool>(),
                )
                    .prop_map(move |(properties, required, typed, closed)| {
                        let names: Vec<Value> = required.into_iter().map(Value::from).collect();
                        let mut core = vec![
                            pair("properties", map_of(properties)),
                            pair("required", Value::from(names)),
                        ];
                        if typed {
                            core.push(pair("type", json!("object")));
                        }
                        if closed {
                            core.push(pair("additionalProperties", json!(false)));
                        }
                        core
                    });
                let array = inner.clone().prop_map(move |items| {
                    vec![pair("type", json!("array")), pair("items", items)]
                });
                let union = (
                    prop_oneof![Just("anyOf"), Just("oneOf")],
                    prop::collection::vec(
                        prop_oneof![4 => inner.clone(), 1 => Just(json!({"type": "null"}))],
                        1..4,
                    ),
                )
                    .prop_map(move |(k, entries)| vec![pair(k, Value::from(entries))]);
                prop_oneof![4 => object, 2 => array, 2 => union]
                    .prop_flat_map(decorate)
                    .boxed()
            })
            .boxed()
    }

    /// A root of [`valid_schema`]s, its `$defs` what their `$ref`s point at.
    fn valid_root() -> impl Strategy<Value = Map<String, Value>> {
        (
            prop::collection::vec((name(), valid_schema()), 0..5),
            prop::collection::vec(name(), 0..4),
            valid_schema(),
            valid_schema(),
            valid_schema(),
            valid_schema(),
            prop::collection::vec(extra(), 0..2),
            any::<bool>(),
        )
            .prop_map(|(properties, required, a, b, c, d, extra, typed)| {
                let mut map: Map<String, Value> = Map::new();
                if typed {
                    map.insert("type".into(), "object".into());
                }
                map.insert("properties".into(), map_of(properties));
                map.insert(
                    "required".into(),
                    required.into_iter().map(Value::from).collect(),
                );
                map.extend(extra);
                map.insert("$defs".into(), json!({"a": a, "b": b, "x/y": d}));
                map.insert("definitions".into(), json!({"c": c}));
                map
            })
    }

    fn run(cases: u32, strategy: impl Strategy<Value = Map<String, Value>>) -> (u32, u32) {
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        let (ok, total) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        runner
            .run(&strategy, |schema| {
                total.set(total.get() + 1);
                match agrees(&schema) {
                    Ok(strict) => {
                        ok.set(ok.get() + u32::from(strict));
                        Ok(())
                    }
                    Err(e) => Err(TestCaseError::fail(format!(
                        "{}\n{e}",
                        Value::Object(schema.clone())
                    ))),
                }
            })
            .unwrap_or_else(|e| panic!("{e}"));
        (ok.get(), total.get())
    }

    #[test]
    fn random_schemas_agree() {
        run(3000, root());
    }

    #[test]
    fn random_valid_schemas_agree() {
        let (ok, total) = run(4000, valid_root());
        assert!(ok * 5 > total, "only {ok} of {total} strict");
    }

    #[test]
    fn random_mostly_strict_schemas_agree() {
        let (ok, total) = run(1500, strict_root());
        assert!(ok * 4 > total, "only {ok} of {total} strict");
    }

    #[test]
    fn random_mixed_schemas_agree() {
        run(1500, mixed_root());
    }
}
