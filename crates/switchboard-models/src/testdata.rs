//! Schemas the unit tests share.

use serde_json::{Value, json};

/// The five schemas of `benches/adapt.rs`'s corpus, for the unit tests
/// of both streaming writers.
pub(crate) fn bench_schemas() -> Vec<Value> {
    vec![
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}
            },
            "required": ["query"]
        }),
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "owner": {"type": "string"},
                "repo": {"type": "string"},
                "path": {"type": ["string", "null"]},
                "ref": {"$ref": "#/$defs/gitRef"}
            },
            "required": ["owner", "repo"],
            "additionalProperties": false,
            "$defs": {"gitRef": {"type": "object", "properties": {
                "kind": {"const": "branch"},
                "name": {"type": "string"}
            }}}
        }),
        json!({
            "type": "object",
            "properties": {
                "record": {"type": "object", "properties": {
                    "id": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
                    "meta": {"type": "object", "additionalProperties": {"type": "string"}}
                }, "required": ["id"]},
                "mode": {"oneOf": [{"const": "fast"}, {"const": "safe"}]}
            },
            "required": ["record"]
        }),
        json!({"type": "object", "properties": {}}),
        json!({
            "type": "object",
            "properties": {
                "sql": {"type": "string", "description": "A read-only query."},
                "params": {"type": "array", "items": {"type": ["string", "number", "boolean"]}},
                "timeout_ms": {"type": "integer", "exclusiveMinimum": 0}
            },
            "required": ["sql"]
        }),
    ]
}
