//! Gemini's rules ([`gemini`], the schema as a `Value`), [`GEMINI_KEYWORDS`]
//! and the read-only check [`gemini_is_clean`]. The one writer is
//! [`gemini_view`](fn@super::gemini_view), which streams the rewrite from the
//! borrowed schema; [`gemini`] is its output as a `Value`.

use serde_json::{Map, Value};

use super::Note;
use super::gemini_view::{clean_map, gemini_view};

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

/// Most `$ref`s inlined in one schema: a small schema whose definitions
/// refer to each other many times over could otherwise expand
/// exponentially.
pub(super) const MAX_REF_EXPANSIONS: usize = 1000;

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
    let (view, notes) = gemini_view(schema);
    // Writing a `Value` fails only for a map key that is not a string;
    // every key the view writes is one.
    let value = serde_json::to_value(view).unwrap_or(Value::Null);
    (value, notes)
}

/// Deepest nesting of schemas [`gemini_is_clean`] walks; anything deeper
/// is reported as not clean (the full [`gemini`] then runs).
pub(super) const CLEAN_MAX_DEPTH: usize = 64;

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
    (schema.contains_key("type") || schema.contains_key("anyOf")) && clean_map(schema)
}

/// The one JSON type of all of `values` (`integer` before `number`).
pub(super) fn json_type(values: &[Value]) -> Option<&'static str> {
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

pub(super) fn is_null_schema(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|m| m.len() == 1 && m.get("type").and_then(Value::as_str) == Some("null"))
}
