//! `schema::gemini_is_clean`: never `true` for a schema `schema::gemini`
//! would change (property tests over random schemas mixing what Gemini
//! takes and what it does not), and `true` for schemas already in
//! Gemini's subset (hand-written realistic ones and generated ones).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRng, TestRunner};
use serde_json::{Map, Value, json};
use switchboard_models::schema::{gemini, gemini_is_clean};

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Whether `gemini` returns `schema` exactly (same keys, same order, same
/// values) and no notes.
fn gemini_keeps(schema: &Map<String, Value>) -> bool {
    let (out, notes) = gemini(schema);
    let same = out == Value::Object(schema.clone());
    let same_text = serde_json::to_string(&out).expect("serializes")
        == serde_json::to_string(schema).expect("serializes");
    notes.is_empty() && same && same_text
}

// ---------------------------------------------------------------------------
// Hand-written schemas

/// Realistic tool input schemas already in Gemini's subset.
fn clean_schemas() -> Vec<Value> {
    vec![
        json!({"type": "object", "properties": {}}),
        json!({"type": "object"}),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to read."}
            },
            "required": ["path"]
        }),
        json!({
            "type": "object",
            "description": "Search the web.",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 400},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                "safe": {"type": "boolean", "default": true},
                "region": {"type": "string", "enum": ["us", "eu", "asia"], "nullable": true}
            },
            "required": ["query"]
        }),
        json!({
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City and country."},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                "days": {"type": "number", "format": "double", "example": 3}
            },
            "required": ["location", "unit"]
        }),
        json!({
            "type": "object",
            "title": "Create issue",
            "properties": {
                "title": {"type": "string"},
                "labels": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 0,
                    "maxItems": 10
                },
                "assignee": {
                    "type": "object",
                    "properties": {
                        "login": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                        "id": {"type": "integer"}
                    },
                    "required": ["login"]
                },
                "due": {"type": "string", "format": "date-time"}
            },
            "required": ["title"]
        }),
        json!({
            "type": "object",
            "properties": {
                "rows": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"key": {"type": "string"}, "value": {"type": "number"}},
                        "minProperties": 1,
                        "propertyOrdering": ["key", "value"],
                        "required": ["key", "value"]
                    }
                },
                "target": {
                    "anyOf": [
                        {"type": "string", "description": "A name."},
                        {"type": "integer", "description": "An id."}
                    ]
                }
            }
        }),
        // Property names that are keywords elsewhere are names here.
        json!({
            "type": "object",
            "properties": {
                "type": {"type": "string"},
                "$ref": {"type": "string"},
                "const": {"type": "string"},
                "required": {"type": "boolean"},
                "properties": {"type": "object", "properties": {}}
            },
            "required": ["type", "$ref", "required"]
        }),
        // Values that are not schemas are not looked into.
        json!({
            "type": "object",
            "properties": {
                "config": {
                    "type": "object",
                    "default": {"$ref": "#/x", "const": 1, "oneOf": []},
                    "example": {"type": ["a", "b"]}
                }
            }
        }),
        json!({"anyOf": [{"type": "string"}, {"type": "object", "properties": {}}]}),
    ]
}

#[test]
fn realistic_clean_schemas_are_clean() {
    for schema in clean_schemas() {
        let schema = object(schema);
        assert!(gemini_keeps(&schema), "gemini changes {schema:?}");
        assert!(
            gemini_is_clean(&schema),
            "not reported clean: {}",
            Value::Object(schema.clone())
        );
    }
}

#[test]
fn schemas_gemini_rewrites_are_not_clean() {
    let cases = [
        // No top-level type (one is added).
        json!({"properties": {"a": {"type": "string"}}}),
        json!({"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema"}),
        json!({"type": "object", "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}),
        json!({"type": "object", "properties": {"a": {"type": ["string"]}}}),
        json!({"type": "object", "properties": {"a": {"const": "x"}}}),
        json!({"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x", null]}}}),
        // A string enum without a type gets one.
        json!({"type": "object", "properties": {"a": {"enum": ["x", "y"]}}}),
        json!({"type": "object", "properties": {"a": {"type": "number", "exclusiveMinimum": 0}}}),
        json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}),
        json!({"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}]}),
        json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}),
        json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}}),
        json!({"type": "object", "properties": {"a": {"anyOf": []}}}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}),
        json!({"type": "object", "properties": {"a": {"type": "array", "prefixItems": [{"type": "string"}]}}}),
        json!({"type": "object", "properties": {"a": true}}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": true}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/a"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": []}),
        json!({"type": "object", "required": ["a"]}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"}),
        // `required` is written last: another keyword after it moves.
        json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}),
        json!({"type": "object", "properties": "a"}),
        json!({"type": "object", "properties": {"a": {"type": "string", "x-secret": true}}}),
    ];
    for schema in cases {
        let schema = object(schema);
        assert!(!gemini_keeps(&schema), "gemini keeps {schema:?}");
        assert!(
            !gemini_is_clean(&schema),
            "reported clean: {}",
            Value::Object(schema)
        );
    }
}

#[test]
fn too_deep_is_not_clean() {
    let mut schema = json!({"type": "string"});
    for _ in 0..100 {
        schema = json!({"type": "array", "items": schema});
    }
    let schema = object(schema);
    assert!(gemini_keeps(&schema));
    assert!(!gemini_is_clean(&schema));
}

// ---------------------------------------------------------------------------
// Random schemas

/// Property names: plain ones and keywords.
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

/// One keyword and its value; `inner` makes nested schemas.
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
        1 => prop_oneof![
            Just("#/$defs/a"),
            Just("#/definitions/b"),
            Just("#/$defs/missing"),
            Just("https://example.com/s.json"),
        ].prop_map(Value::from).prop_map(key("$ref")),
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
        1 => (
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

/// A schema mixing what Gemini takes and what it rewrites.
fn schema() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        6 => prop::collection::vec(entry(Just(json!({"type": "string"})).boxed()), 0..4)
            .prop_map(map_of),
        1 => any::<bool>().prop_map(Value::from),
        1 => Just(json!({"type": "null"})),
        1 => Just(json!(3)),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            1 => inner.clone(),
            6 => prop::collection::vec(entry(inner), 0..6).prop_map(map_of),
        ]
    })
    .boxed()
}

fn root() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec(entry(schema()), 0..7).prop_map(|entries| entries.into_iter().collect())
}

/// Leaf keywords Gemini copies as they are.
fn plain_entry() -> impl Strategy<Value = (String, Value)> {
    prop_oneof![
        "[a-z ]{0,8}".prop_map(|d| ("description".to_owned(), Value::from(d))),
        "[a-z]{1,6}".prop_map(|t| ("title".to_owned(), Value::from(t))),
        prop_oneof![Just("date-time"), Just("uri"), Just("int32")]
            .prop_map(|f| ("format".to_owned(), Value::from(f))),
        scalar().prop_map(|v| ("default".to_owned(), v)),
        scalar().prop_map(|v| ("example".to_owned(), v)),
        any::<bool>().prop_map(|b| ("nullable".to_owned(), Value::from(b))),
        (0i64..10).prop_map(|n| ("minimum".to_owned(), Value::from(n))),
        (0.0f64..10.0).prop_map(|n| ("maximum".to_owned(), Value::from(n))),
        (0u64..10).prop_map(|n| ("minLength".to_owned(), Value::from(n))),
        Just(("pattern".to_owned(), Value::from("^x+$"))),
        Just((
            "default".to_owned(),
            json!({"$ref": "#/x", "oneOf": [], "type": ["a"]})
        )),
    ]
}

/// A schema already in Gemini's subset: what `gemini` keeps as it is.
fn clean_schema() -> BoxedStrategy<Value> {
    let non_null_type = prop_oneof![
        Just("string"),
        Just("integer"),
        Just("number"),
        Just("boolean"),
        Just("object"),
        Just("array"),
    ];
    let leaf = (
        non_null_type,
        prop::collection::vec(plain_entry(), 0..3),
        prop::option::of(prop::collection::vec("[a-c]{1,2}", 0..4)),
    )
        .prop_map(|(t, plain, strings)| {
            let mut map = Map::new();
            map.insert("type".into(), t.into());
            map.extend(plain);
            if let Some(strings) = strings {
                map.insert("enum".into(), strings.into());
            }
            Value::Object(map)
        });
    leaf.prop_recursive(4, 48, 5, |inner| {
        let object = (
            prop::collection::vec((name(), inner.clone()), 0..5),
            prop::collection::vec(plain_entry(), 0..3),
            prop::collection::vec(any::<prop::sample::Index>(), 0..4),
        )
            .prop_flat_map(|(properties, plain, picks)| {
                let properties: Map<String, Value> = properties.into_iter().collect();
                let mut required: Vec<Value> = Vec::new();
                if !properties.is_empty() {
                    for pick in picks {
                        let name = properties.keys().nth(pick.index(properties.len()));
                        let name = Value::from(name.expect("in range").as_str());
                        if !required.contains(&name) {
                            required.push(name);
                        }
                    }
                }
                let mut entries = plain;
                entries.push(("type".into(), "object".into()));
                entries.push(("properties".into(), Value::Object(properties)));
                Just(entries).prop_shuffle().prop_map(move |entries| {
                    let mut map: Map<String, Value> = entries.into_iter().collect();
                    if !required.is_empty() {
                        map.insert("required".into(), required.clone().into());
                    }
                    Value::Object(map)
                })
            });
        let array = (inner.clone(), prop::collection::vec(plain_entry(), 0..2)).prop_flat_map(
            |(items, plain)| {
                let mut entries = plain;
                entries.push(("type".into(), "array".into()));
                entries.push(("items".into(), items));
                Just(entries)
                    .prop_shuffle()
                    .prop_map(|e| Value::Object(e.into_iter().collect()))
            },
        );
        let union = (
            prop::collection::vec(inner, 2..4),
            prop::option::of("[a-z ]{0,8}"),
        )
            .prop_map(|(entries, description)| {
                let mut map = Map::new();
                if let Some(d) = description {
                    map.insert("description".into(), d.into());
                }
                map.insert("anyOf".into(), entries.into());
                Value::Object(map)
            });
        prop_oneof![3 => object, 1 => array, 1 => union]
    })
    .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Never `true` for a schema `gemini` changes; and on these schemas the
    /// check is exact: `false` only for a schema `gemini` changes.
    #[test]
    fn clean_means_gemini_keeps_it(schema in root()) {
        let clean = gemini_is_clean(&schema);
        let (out, notes) = gemini(&schema);
        if clean {
            prop_assert_eq!(&out, &Value::Object(schema.clone()));
            prop_assert_eq!(
                serde_json::to_string(&out).unwrap(),
                serde_json::to_string(&schema).unwrap()
            );
            prop_assert!(notes.is_empty(), "{:?}", notes);
        } else {
            prop_assert!(!gemini_keeps(&schema), "kept but not clean: {}", Value::Object(schema));
        }
    }

    /// Nested the same way as the top level: each schema position.
    #[test]
    fn clean_nested_means_gemini_keeps_it(inner in schema()) {
        let schema = object(json!({"type": "object", "properties": {"p": inner}}));
        prop_assert_eq!(gemini_is_clean(&schema), gemini_keeps(&schema), "{}", Value::Object(schema));
    }
}

/// A change that (mostly) takes a clean schema just out of Gemini's subset.
#[derive(Clone, Copy, Debug)]
enum Mutation {
    /// `required` moved to the front.
    RequiredFirst,
    /// The first `required` name twice.
    RequiredTwice,
    /// A `required` name with no property.
    RequiredMissing,
    /// `required: []` (or one added).
    RequiredEmpty,
    /// A keyword added at some position.
    Keyword(&'static str, usize),
    /// `type` as an array, with or without `null`.
    TypeArray(bool),
    /// A `null`, or a number, in the `enum` (or one added).
    EnumWith(bool),
    /// `type` removed.
    NoType,
    /// `anyOf` cut to its first entry.
    AnyOfSingle,
    /// `{"type": "null"}` appended to `anyOf`.
    AnyOfNull,
    /// `items` as a one-entry tuple.
    ItemsTuple,
    /// The first property's schema as `true`.
    PropertyTrue,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let keyword = prop_oneof![
        Just("$schema"),
        Just("const"),
        Just("oneOf"),
        Just("allOf"),
        Just("$ref"),
        Just("$defs"),
        Just("additionalProperties"),
        Just("exclusiveMinimum"),
        Just("prefixItems"),
        Just("x-vendor"),
        Just("required"),
        // Kept as they are: the mutation changes nothing.
        Just("description"),
        Just("example"),
    ];
    prop_oneof![
        Just(Mutation::RequiredFirst),
        Just(Mutation::RequiredTwice),
        Just(Mutation::RequiredMissing),
        Just(Mutation::RequiredEmpty),
        (keyword, 0usize..6).prop_map(|(k, at)| Mutation::Keyword(k, at)),
        any::<bool>().prop_map(Mutation::TypeArray),
        any::<bool>().prop_map(Mutation::EnumWith),
        Just(Mutation::NoType),
        Just(Mutation::AnyOfSingle),
        Just(Mutation::AnyOfNull),
        Just(Mutation::ItemsTuple),
        Just(Mutation::PropertyTrue),
    ]
}

/// `map` with `key: value` inserted at position `at` (or replacing it).
fn insert_at(map: &mut Map<String, Value>, at: usize, key: &str, value: Value) {
    let old = std::mem::take(map);
    let at = at.min(old.len());
    for (i, (k, v)) in old.into_iter().enumerate() {
        if i == at {
            map.insert(key.to_owned(), value.clone());
        }
        if k != key {
            map.insert(k, v);
        }
    }
    if !map.contains_key(key) {
        map.insert(key.to_owned(), value);
    }
}

fn apply(map: &mut Map<String, Value>, mutation: Mutation) {
    match mutation {
        Mutation::RequiredFirst => {
            if let Some(required) = map.get("required").cloned() {
                insert_at(map, 0, "required", required);
            }
        }
        Mutation::RequiredTwice => {
            if let Some(Value::Array(names)) = map.get_mut("required")
                && let Some(first) = names.first().cloned()
            {
                names.push(first);
            }
        }
        Mutation::RequiredMissing => {
            if let Some(Value::Array(names)) = map.get_mut("required") {
                names.push("zz".into());
            } else {
                map.insert("required".into(), json!(["zz"]));
            }
        }
        Mutation::RequiredEmpty => {
            map.insert("required".into(), json!([]));
        }
        Mutation::Keyword(key, at) => {
            let value = match key {
                "$schema" | "$ref" => json!("#/$defs/a"),
                "const" | "description" | "example" => json!("c"),
                "oneOf" | "allOf" | "prefixItems" => json!([{"type": "string"}]),
                "$defs" => json!({"a": {"type": "string"}}),
                "additionalProperties" => json!(false),
                "exclusiveMinimum" => json!(1),
                "required" => json!(["a"]),
                _ => json!(true),
            };
            insert_at(map, at, key, value);
        }
        Mutation::TypeArray(null) => {
            if let Some(t) = map.get_mut("type") {
                *t = if null {
                    json!([t.clone(), "null"])
                } else {
                    json!([t.clone()])
                };
            }
        }
        Mutation::EnumWith(null) => {
            let extra = if null { Value::Null } else { json!(1) };
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.push(extra);
            } else {
                map.insert("enum".into(), json!(["a", extra]));
            }
        }
        Mutation::NoType => {
            map.shift_remove("type");
        }
        Mutation::AnyOfSingle => {
            if let Some(Value::Array(entries)) = map.get_mut("anyOf") {
                entries.truncate(1);
            }
        }
        Mutation::AnyOfNull => {
            if let Some(Value::Array(entries)) = map.get_mut("anyOf") {
                entries.push(json!({"type": "null"}));
            }
        }
        Mutation::ItemsTuple => {
            if let Some(items) = map.get_mut("items") {
                *items = json!([items.clone()]);
            }
        }
        Mutation::PropertyTrue => {
            if let Some(Value::Object(properties)) = map.get_mut("properties")
                && let Some((_, first)) = properties.iter_mut().next()
            {
                *first = json!(true);
            }
        }
    }
}

/// How many schema objects `value` holds (itself included).
fn positions(value: &Value) -> usize {
    let Value::Object(map) = value else {
        return 0;
    };
    1 + map
        .iter()
        .map(|(key, child)| match (key.as_str(), child) {
            ("properties", Value::Object(properties)) => properties.values().map(positions).sum(),
            ("items", items) => positions(items),
            ("anyOf", Value::Array(entries)) => entries.iter().map(positions).sum(),
            _ => 0,
        })
        .sum::<usize>()
}

/// Applies `mutation` to the `n`th schema object of `value` (preorder over
/// schema positions); whether there was one.
fn mutate_nth(value: &mut Value, n: &mut usize, mutation: Mutation) -> bool {
    let Value::Object(map) = value else {
        return false;
    };
    if *n == 0 {
        apply(map, mutation);
        return true;
    }
    *n -= 1;
    for (key, child) in map.iter_mut() {
        let done = match (key.as_str(), child) {
            ("properties", Value::Object(properties)) => properties
                .values_mut()
                .any(|schema| mutate_nth(schema, n, mutation)),
            ("items", items) => mutate_nth(items, n, mutation),
            ("anyOf", Value::Array(entries)) => entries
                .iter_mut()
                .any(|entry| mutate_nth(entry, n, mutation)),
            _ => false,
        };
        if done {
            return true;
        }
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Clean schemas changed in one place, just across the line (or not):
    /// the check is exact on them.
    #[test]
    fn near_clean_schemas_are_judged_exactly(
        schema in clean_schema(),
        mutation in mutation(),
        at in any::<prop::sample::Index>(),
    ) {
        let mut schema = json!({"type": "object", "properties": {"p": schema}});
        let mut n = at.index(positions(&schema));
        prop_assert!(mutate_nth(&mut schema, &mut n, mutation));
        let schema = object(schema);
        prop_assert_eq!(
            gemini_is_clean(&schema),
            gemini_keeps(&schema),
            "{:?}: {}",
            mutation,
            Value::Object(schema.clone())
        );
    }

    /// Schemas in Gemini's subset are reported clean, and are.
    #[test]
    fn clean_grammar_is_clean(schema in clean_schema()) {
        let schema = object(json!({"type": "object", "properties": {"p": schema}}));
        prop_assert!(gemini_keeps(&schema), "gemini changes {}", Value::Object(schema.clone()));
        prop_assert!(gemini_is_clean(&schema), "not reported clean: {}", Value::Object(schema));
    }
}

/// The mixed grammar reaches both answers often enough for the properties
/// above to say something.
#[test]
fn mixed_grammar_yields_clean_and_unclean_schemas() {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let strategy = schema();
    let (mut clean, mut total) = (0, 0);
    for _ in 0..2000 {
        let inner = strategy.new_tree(&mut runner).expect("a value").current();
        let schema = object(json!({"type": "object", "properties": {"p": inner}}));
        total += 1;
        if gemini_is_clean(&schema) {
            assert!(gemini_keeps(&schema));
            clean += 1;
        }
    }
    assert!(clean * 20 >= total, "{clean} of {total} clean");
    assert!(clean * 2 <= total, "{clean} of {total} clean");
}
