//! Tool definitions for every provider (insta snapshots of realistic MCP
//! tools) and one test per schema clean-up rule.

use serde_json::{Map, Value, json};
use switchboard_models::definitions::{
    DEFAULT_DESCRIPTION_CAP, cap_text, definition, description, instructions,
};
use switchboard_models::schema::{self, Note, drop_strict_nulls, for_provider, openai_strict};
use switchboard_models::{DefinitionOptions, GeminiSchema, Provider, ToolHints};
use switchboard_types::Tool;

fn tool(value: Value) -> Tool {
    serde_json::from_value(value).expect("a tool")
}

/// `tool`'s input schema, parsed.
fn input(tool: &Tool) -> Map<String, Value> {
    tool.input_schema.to_object().unwrap()
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

// ---------------------------------------------------------------------------
// The tools

fn weather() -> Tool {
    tool(json!({
        "name": "get_weather",
        "description": "Current weather for a place.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City and country, e.g. `Paris, France`."},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
            },
            "required": ["location"]
        }
    }))
}

fn create_issue() -> Tool {
    tool(json!({
        "name": "create_issue",
        "title": "Create issue",
        "description": "Opens an issue in a GitHub repository.",
        "inputSchema": {
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
        }
    }))
}

fn tree() -> Tool {
    tool(json!({
        "name": "write_outline",
        "description": "Writes an outline of nested sections.",
        "inputSchema": {
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
        }
    }))
}

fn query() -> Tool {
    tool(json!({
        "name": "run_query",
        "description": "Runs a read-only SQL query.",
        "inputSchema": {
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
        }
    }))
}

fn long_description() -> Tool {
    let description = format!(
        "Searches the archive. {}",
        "Every parameter is documented at length in this generated text. ".repeat(160)
    );
    assert!(description.len() > 10_000);
    tool(json!({
        "name": "search_archive",
        "description": description,
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    }))
}

fn annotated() -> Tool {
    tool(json!({
        "name": "delete_file",
        "inputSchema": {"properties": {"path": {"type": "string"}}, "required": ["path"]},
        "annotations": {
            "title": "Delete a file",
            "readOnlyHint": false,
            "destructiveHint": true,
            "idempotentHint": true,
            "openWorldHint": false
        }
    }))
}

fn no_arguments() -> Tool {
    tool(json!({
        "name": "list_projects",
        "description": "Lists the projects you can see.",
        "inputSchema": {"type": "object"}
    }))
}

fn tools() -> Vec<(&'static str, Tool)> {
    vec![
        ("weather", weather()),
        ("create_issue", create_issue()),
        ("tree", tree()),
        ("query", query()),
        ("long_description", long_description()),
        ("annotated", annotated()),
        ("no_arguments", no_arguments()),
    ]
}

/// The definition and its notes, as reviewed in the snapshot.
fn reviewed(provider: Provider, tool: &Tool, options: &DefinitionOptions) -> Value {
    let d = definition(provider, &format!("mcp__srv__{}", tool.name), tool, options);
    let notes: Vec<String> = d
        .notes
        .iter()
        .map(|n| format!("{}: {}", n.at, n.what))
        .collect();
    json!({"definition": d.value, "notes": notes})
}

#[test]
fn snapshots_for_every_provider() {
    let plain = DefinitionOptions::default();
    let strict = DefinitionOptions::default().strict(true);
    for (label, tool) in tools() {
        for provider in Provider::ALL {
            insta::assert_json_snapshot!(
                format!("{label}__{provider}"),
                reviewed(provider, &tool, &plain)
            );
        }
        for provider in [Provider::OpenAiResponses, Provider::OpenAiChat] {
            insta::assert_json_snapshot!(
                format!("{label}__{provider}_strict"),
                reviewed(provider, &tool, &strict)
            );
        }
        insta::assert_json_snapshot!(
            format!("{label}__gemini_json_schema"),
            reviewed(
                Provider::Gemini,
                &tool,
                &DefinitionOptions::default().gemini_schema(GeminiSchema::JsonSchema)
            )
        );
    }
}

// ---------------------------------------------------------------------------
// Definitions

#[test]
fn openai_and_anthropic_get_the_schema_losslessly() {
    let tool = create_issue();
    for provider in [
        Provider::OpenAiResponses,
        Provider::OpenAiChat,
        Provider::Anthropic,
    ] {
        let (value, notes) = for_provider(provider, &input(&tool));
        assert_eq!(value, Value::Object(input(&tool)));
        // Same order of keys, too.
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string(&tool.input_schema).unwrap()
        );
        assert!(notes.is_empty(), "{notes:?}");
    }
}

#[test]
fn responses_always_writes_strict_and_chat_only_when_strict() {
    let tool = weather();
    let plain = definition(
        Provider::OpenAiResponses,
        "f",
        &tool,
        &DefinitionOptions::default(),
    );
    assert_eq!(plain.value["strict"], json!(false));
    let chat = definition(
        Provider::OpenAiChat,
        "f",
        &tool,
        &DefinitionOptions::default(),
    );
    assert!(chat.value["function"].get("strict").is_none());
    let strict = DefinitionOptions::default().strict(true);
    let chat = definition(Provider::OpenAiChat, "f", &tool, &strict);
    assert_eq!(chat.value["function"]["strict"], json!(true));
    let responses = definition(Provider::OpenAiResponses, "f", &tool, &strict);
    assert_eq!(responses.value["strict"], json!(true));
}

#[test]
fn strict_falls_back_with_a_note_when_impossible() {
    let tool = query(); // `labels` is a free-form map
    let d = definition(
        Provider::OpenAiResponses,
        "f",
        &tool,
        &DefinitionOptions::default().strict(true),
    );
    assert_eq!(d.value["strict"], json!(false));
    assert_eq!(d.value["parameters"], Value::Object(input(&tool)));
    assert!(
        d.notes
            .iter()
            .any(|n| n.what.starts_with("strict mode off") && n.what.contains("free-form map")),
        "{:?}",
        d.notes
    );
}

#[test]
fn strict_is_only_for_openai() {
    let strict = DefinitionOptions::default().strict(true);
    let d = definition(Provider::Anthropic, "f", &weather(), &strict);
    assert_eq!(d.value["input_schema"], Value::Object(input(&weather())));
}

#[test]
fn annotations_stay_out_of_definitions_and_become_hints() {
    let tool = annotated();
    for provider in Provider::ALL {
        let text = definition(provider, "f", &tool, &DefinitionOptions::default())
            .value
            .to_string();
        assert!(!text.contains("Hint"), "{provider}: {text}");
    }
    let hints = ToolHints::of(&tool);
    assert_eq!(hints.title.as_deref(), Some("Delete a file"));
    assert_eq!(hints.read_only, Some(false));
    assert_eq!(hints.destructive, Some(true));
    assert_eq!(hints.idempotent, Some(true));
    assert_eq!(hints.open_world, Some(false));
    // `title` beats `annotations.title`.
    let mut titled = tool.clone();
    titled.title = Some("Remove".into());
    assert_eq!(ToolHints::of(&titled).title.as_deref(), Some("Remove"));
    assert_eq!(ToolHints::of(&weather()), ToolHints::default());
}

#[test]
fn description_falls_back_to_the_title_and_is_never_empty() {
    assert_eq!(
        description(&weather()),
        Some("Current weather for a place.")
    );
    assert_eq!(description(&annotated()), Some("Delete a file"));
    let mut blank = weather();
    blank.description = Some("  ".into());
    assert_eq!(description(&blank), None);
    let d = definition(
        Provider::Anthropic,
        "f",
        &blank,
        &DefinitionOptions::default(),
    );
    assert!(d.value.get("description").is_none());
}

#[test]
fn long_descriptions_are_capped_in_characters_with_a_marker() {
    let tool = long_description();
    let full = tool.description.clone().unwrap();
    for provider in Provider::ALL {
        let d = definition(provider, "f", &tool, &DefinitionOptions::default());
        let text = match provider {
            Provider::OpenAiChat => &d.value["function"]["description"],
            _ => &d.value["description"],
        }
        .as_str()
        .unwrap()
        .to_owned();
        assert!(text.chars().count() <= DEFAULT_DESCRIPTION_CAP);
        assert!(text.chars().count() > DEFAULT_DESCRIPTION_CAP - 40);
        assert!(text.ends_with("more characters cut]"), "{text}");
        assert!(
            d.notes
                .iter()
                .any(|n| n.what.starts_with("description cut"))
        );
        let kept = text.split(" … [").next().unwrap();
        assert!(full.starts_with(kept));
    }
}

#[test]
fn cap_text_counts_characters_and_says_how_many_were_cut() {
    assert_eq!(cap_text("short", 10), "short");
    assert!(matches!(
        cap_text("short", 5),
        std::borrow::Cow::Borrowed(_)
    ));
    // Multi-byte text under the cap in characters but not in bytes.
    let accents = "é".repeat(10);
    assert_eq!(cap_text(&accents, 10), accents);
    let text = "ü".repeat(100);
    let capped = cap_text(&text, 40);
    assert_eq!(capped.chars().count(), 40, "{capped}");
    assert_eq!(
        capped,
        format!("{} … [87 more characters cut]", "ü".repeat(13))
    );
    // Trailing white space before the marker is trimmed and counted.
    let words = format!("{}{}", "word ".repeat(10), "x".repeat(100));
    let capped = cap_text(&words, 40);
    assert!(capped.chars().count() <= 40);
    let kept = capped.split(" … [").next().unwrap();
    assert!(!kept.ends_with(' '));
    let cut: usize = capped
        .rsplit('[')
        .next()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(kept.chars().count() + cut, words.chars().count());
    // A cap smaller than the marker: just the first characters.
    assert_eq!(cap_text("abcdefghij", 3), "abc");
    assert_eq!(cap_text("abc", 0), "");
}

#[test]
fn instructions_name_the_server_and_are_capped() {
    let options = DefinitionOptions::default().description_cap(50);
    assert_eq!(
        instructions("github", "Use owner/repo form.", &options),
        "Instructions from MCP server `github`:\nUse owner/repo form."
    );
    assert_eq!(instructions("github", " \n ", &options), "");
    let long = instructions("github", &"a".repeat(500), &options);
    let body = long.split_once('\n').unwrap().1;
    assert_eq!(body.chars().count(), 50);
    assert!(body.ends_with("more characters cut]"));
}

#[test]
fn gemini_without_arguments_leaves_parameters_out() {
    let d = definition(
        Provider::Gemini,
        "f",
        &no_arguments(),
        &DefinitionOptions::default(),
    );
    assert!(d.value.get("parameters").is_none(), "{}", d.value);
    assert!(d.notes.iter().any(|n| n.what.contains("no arguments")));
}

#[test]
fn gemini_json_schema_sends_the_schema_as_is() {
    let tool = query();
    let d = definition(
        Provider::Gemini,
        "f",
        &tool,
        &DefinitionOptions::default().gemini_schema(GeminiSchema::JsonSchema),
    );
    assert_eq!(d.value["parametersJsonSchema"], Value::Object(input(&tool)));
    assert!(d.value.get("parameters").is_none());
    assert!(d.notes.is_empty());
}

// ---------------------------------------------------------------------------
// OpenAI and Anthropic rules

#[test]
fn rule_missing_type_becomes_object() {
    let schema = object(json!({"properties": {"a": {"type": "string"}}}));
    for provider in [
        Provider::OpenAiResponses,
        Provider::OpenAiChat,
        Provider::Anthropic,
    ] {
        let (value, notes) = for_provider(provider, &schema);
        assert_eq!(
            value,
            json!({"type": "object", "properties": {"a": {"type": "string"}}})
        );
        assert_eq!(value.as_object().unwrap().keys().next().unwrap(), "type");
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].at, "");
    }
}

#[test]
fn rule_openai_object_without_properties_gets_empty_properties() {
    let schema = object(json!({"type": "object"}));
    for provider in [Provider::OpenAiResponses, Provider::OpenAiChat] {
        let (value, notes) = for_provider(provider, &schema);
        assert_eq!(value, json!({"type": "object", "properties": {}}));
        assert_eq!(notes.len(), 1);
    }
    // Anthropic takes it as it is.
    let (value, notes) = for_provider(Provider::Anthropic, &schema);
    assert_eq!(value, json!({"type": "object"}));
    assert!(notes.is_empty());
}

// ---------------------------------------------------------------------------
// Gemini rules

fn gemini(schema: Value) -> (Value, Vec<Note>) {
    for_provider(Provider::Gemini, &object(schema))
}

fn noted(notes: &[Note], at: &str, what: &str) -> bool {
    notes.iter().any(|n| n.at == at && n.what.contains(what))
}

#[test]
fn gemini_keeps_what_it_accepts() {
    let schema = json!({
        "type": "object",
        "title": "T",
        "description": "D",
        "properties": {
            "s": {"type": "string", "format": "date-time", "minLength": 1, "maxLength": 9,
                  "pattern": "^x", "enum": ["a", "b"], "nullable": true, "default": "a", "example": "a"},
            "n": {"type": "number", "minimum": 0, "maximum": 1},
            "a": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
            "o": {"type": "object", "properties": {"x": {"type": "boolean"}},
                  "minProperties": 1, "maxProperties": 2}
        },
        "required": ["s"],
        "propertyOrdering": ["s", "n", "a", "o"]
    });
    let (value, notes) = gemini(schema.clone());
    assert_eq!(value, schema);
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn gemini_rule_ref_is_inlined_with_siblings_winning() {
    let (value, notes) = gemini(json!({
        "type": "object",
        "properties": {"id": {"$ref": "#/$defs/id", "description": "Mine."}},
        "$defs": {"id": {"type": "string", "description": "Theirs.", "pattern": "^a"}}
    }));
    assert_eq!(
        value,
        json!({"type": "object", "properties": {
            "id": {"type": "string", "description": "Mine.", "pattern": "^a"}
        }})
    );
    assert!(noted(&notes, "/properties/id/$ref", "inlined"));
    assert!(noted(&notes, "/$defs", "dropped `$defs`"));
    // `definitions` (draft 7) too, with pointer escapes.
    let (value, _) = gemini(json!({
        "type": "object",
        "properties": {"p": {"$ref": "#/definitions/a~1b"}},
        "definitions": {"a/b": {"type": "integer"}}
    }));
    assert_eq!(value["properties"]["p"], json!({"type": "integer"}));
}

#[test]
fn gemini_rule_recursive_ref_becomes_a_plain_object() {
    let (value, notes) = gemini(input(&tree()).into());
    let root = &value["properties"]["root"];
    assert_eq!(root["type"], "object");
    let inner = &root["properties"]["children"]["items"];
    assert_eq!(inner["type"], "object");
    assert!(inner.get("properties").is_none());
    assert!(
        inner["description"]
            .as_str()
            .unwrap()
            .contains("#/$defs/section"),
        "{inner}"
    );
    assert!(noted(
        &notes,
        "/properties/root/properties/children/items/$ref",
        "recursive"
    ));
    assert!(!value.to_string().contains("$ref"));
}

#[test]
fn gemini_rule_ref_expansion_is_bounded() {
    // Each level refers to the next twice: 2^20 copies if unbounded.
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
    let (value, notes) = gemini(json!({
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/d0"}},
        "$defs": defs
    }));
    assert!(value.to_string().len() < 2_000_000);
    assert!(notes.iter().any(|n| n.what.contains("too deeply nested")));
}

#[test]
fn gemini_rule_unknown_ref_is_dropped() {
    let (value, notes) = gemini(json!({
        "type": "object",
        "properties": {"x": {"$ref": "https://example.com/schema.json", "description": "X."}}
    }));
    assert_eq!(value["properties"]["x"], json!({"description": "X."}));
    assert!(noted(&notes, "/properties/x/$ref", "dropped `$ref`"));
}

#[test]
fn gemini_rule_type_arrays() {
    let (value, notes) = gemini(json!({"type": "object", "properties": {
        "a": {"type": ["string", "null"]},
        "b": {"type": ["string", "integer"], "description": "Either."},
        "c": {"type": ["null", "number", "boolean"]}
    }}));
    assert_eq!(
        value["properties"]["a"],
        json!({"type": "string", "nullable": true})
    );
    assert_eq!(
        value["properties"]["b"],
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}], "description": "Either."})
    );
    assert_eq!(
        value["properties"]["c"],
        json!({"anyOf": [{"type": "number"}, {"type": "boolean"}], "nullable": true})
    );
    assert!(noted(&notes, "/properties/a/type", "one `type`"));
    assert!(noted(&notes, "/properties/b/type", "`anyOf`"));
}

#[test]
fn gemini_rule_any_of_with_null() {
    let (value, notes) = gemini(json!({"type": "object", "properties": {
        "a": {"anyOf": [{"type": "string", "format": "email"}, {"type": "null"}], "description": "Mail."},
        "b": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}
    }}));
    assert_eq!(
        value["properties"]["a"],
        json!({"description": "Mail.", "type": "string", "format": "email", "nullable": true})
    );
    assert_eq!(
        value["properties"]["b"],
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": true})
    );
    assert!(noted(&notes, "/properties/a/anyOf/1", "nullable"));
    assert!(noted(&notes, "/properties/a/anyOf", "single schema"));
}

#[test]
fn gemini_rule_one_of_becomes_any_of() {
    let (value, notes) = gemini(json!({"type": "object", "properties": {
        "m": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    }}));
    assert_eq!(
        value["properties"]["m"],
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    );
    assert!(noted(&notes, "/properties/m/oneOf", "became `anyOf`"));
}

#[test]
fn gemini_rule_all_of_is_merged() {
    let (value, notes) = gemini(json!({"type": "object", "properties": {
        "p": {"description": "Both.", "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"$ref": "#/$defs/b"}
        ]}
    }, "$defs": {"b": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"],
                        "description": "Not this one."}}}));
    assert_eq!(
        value["properties"]["p"],
        json!({
            "description": "Both.",
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a", "b"]
        })
    );
    assert!(noted(&notes, "/properties/p/allOf", "merged"));
}

#[test]
fn gemini_rule_const() {
    let (value, notes) = gemini(json!({"type": "object", "properties": {
        "s": {"const": "postgres"},
        "n": {"type": "integer", "const": 42, "description": "The answer."}
    }}));
    assert_eq!(
        value["properties"]["s"],
        json!({"enum": ["postgres"], "type": "string"})
    );
    assert_eq!(
        value["properties"]["n"],
        json!({"type": "integer", "description": "The answer. Must be 42."})
    );
    assert!(noted(&notes, "/properties/s/const", "one-value `enum`"));
    assert!(noted(&notes, "/properties/n/const", "description"));
}

#[test]
fn gemini_rule_enum_values_must_be_strings() {
    let (value, notes) = gemini(json!({"type": "object", "properties": {
        "n": {"type": "integer", "enum": [1, 2, 3]},
        "s": {"enum": ["a", null]},
        "t": {"type": "string", "enum": ["x"]}
    }}));
    assert_eq!(
        value["properties"]["n"],
        json!({"type": "integer", "description": "Allowed values: 1, 2, 3."})
    );
    assert_eq!(
        value["properties"]["s"],
        json!({"enum": ["a"], "type": "string", "nullable": true})
    );
    assert_eq!(
        value["properties"]["t"],
        json!({"type": "string", "enum": ["x"]})
    );
    assert!(noted(&notes, "/properties/n/enum", "dropped `enum`"));
    // Without a type, the values' own type is kept.
    let (value, _) = gemini(json!({"type": "object", "properties": {
        "i": {"enum": [0, 1]},
        "f": {"enum": [0.5, 1]},
        "b": {"const": true},
        "m": {"enum": [1, "a"]}
    }}));
    assert_eq!(
        value["properties"]["i"],
        json!({"type": "integer", "description": "Allowed values: 0, 1."})
    );
    assert_eq!(
        value["properties"]["f"],
        json!({"type": "number", "description": "Allowed values: 0.5, 1."})
    );
    assert_eq!(
        value["properties"]["b"],
        json!({"type": "boolean", "description": "Must be true."})
    );
    assert_eq!(
        value["properties"]["m"],
        json!({"description": "Allowed values: 1, \"a\"."})
    );
    assert!(noted(&notes, "/properties/s/enum", "nullable"));
}

#[test]
fn gemini_rule_exclusive_bounds_become_inclusive() {
    let (value, notes) = gemini(json!({"type": "object", "properties": {
        "a": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
        "b": {"type": "number", "minimum": 5, "exclusiveMinimum": 1},
        "c": {"type": "number", "exclusiveMaximum": 3, "maximum": 9},
        "d": {"type": "number", "minimum": 1, "exclusiveMinimum": true}
    }}));
    assert_eq!(
        value["properties"]["a"],
        json!({"type": "integer", "minimum": 0, "maximum": 10})
    );
    assert_eq!(
        value["properties"]["b"],
        json!({"type": "number", "minimum": 5})
    );
    assert_eq!(
        value["properties"]["c"],
        json!({"type": "number", "maximum": 3})
    );
    assert_eq!(
        value["properties"]["d"],
        json!({"type": "number", "minimum": 1})
    );
    assert!(noted(
        &notes,
        "/properties/a/exclusiveMinimum",
        "became `minimum`"
    ));
    assert!(noted(&notes, "/properties/b/exclusiveMinimum", "tighter"));
}

#[test]
fn gemini_rule_tuples_become_one_items_schema() {
    let (value, notes) = gemini(json!({"type": "object", "properties": {
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
        "old": {"type": "array", "items": [{"type": "string"}]}
    }}));
    assert_eq!(
        value["properties"]["pair"],
        json!({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}})
    );
    assert_eq!(
        value["properties"]["old"],
        json!({"type": "array", "items": {"type": "string"}})
    );
    assert!(noted(&notes, "/properties/pair/prefixItems", "tuple"));
}

#[test]
fn gemini_rule_required_names_only_properties() {
    let (value, notes) = gemini(json!({
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a", "ghost", 7]
    }));
    assert_eq!(value["required"], json!(["a"]));
    assert!(noted(&notes, "/required", "\"ghost\""));
    let (value, _) = gemini(json!({"type": "object", "properties": {}, "required": ["x"]}));
    assert!(value.get("required").is_none());
}

#[test]
fn gemini_rule_unknown_keywords_are_dropped() {
    let (value, notes) = gemini(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:x",
        "$comment": "c",
        "type": "object",
        "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"},
                             "patternProperties": {"^x": {}}, "x-vendor": 1}},
        "additionalProperties": false,
        "examples": [{}],
        "if": {}, "then": {}, "else": {},
        "not": {"required": ["z"]},
        "dependentRequired": {},
        "unevaluatedProperties": false,
        "contentMediaType": "text/plain"
    }));
    assert_eq!(
        value,
        json!({"type": "object", "properties": {"m": {"type": "object"}}})
    );
    for keyword in [
        "$schema",
        "$id",
        "$comment",
        "additionalProperties",
        "examples",
        "if",
        "then",
        "else",
        "not",
        "dependentRequired",
        "unevaluatedProperties",
        "contentMediaType",
    ] {
        assert!(
            noted(
                &notes,
                &format!("/{}", keyword),
                &format!("dropped `{keyword}`")
            ),
            "{keyword}: {notes:?}"
        );
    }
    assert!(noted(&notes, "/properties/m/patternProperties", "dropped"));
    assert!(noted(&notes, "/properties/m/x-vendor", "dropped"));
}

#[test]
fn gemini_properties_named_like_keywords_are_names() {
    let (value, notes) = gemini(json!({
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "$ref": {"type": "string"},
            "const": {"type": "integer"},
            "properties": {"type": "object", "properties": {"oneOf": {"type": "boolean"}}}
        },
        "required": ["type", "$ref"]
    }));
    assert_eq!(
        value,
        json!({
            "type": "object",
            "properties": {
                "type": {"type": "string"},
                "$ref": {"type": "string"},
                "const": {"type": "integer"},
                "properties": {"type": "object", "properties": {"oneOf": {"type": "boolean"}}}
            },
            "required": ["type", "$ref"]
        })
    );
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn gemini_rule_boolean_schemas() {
    let (value, notes) =
        gemini(json!({"type": "object", "properties": {"any": true, "none": false}}));
    assert_eq!(value["properties"], json!({"any": {}, "none": {}}));
    assert!(noted(&notes, "/properties/none", "`false`"));
}

#[test]
fn gemini_missing_root_type_becomes_object() {
    let (value, notes) = gemini(json!({"properties": {"a": {"type": "string"}}}));
    assert_eq!(value["type"], "object");
    assert!(noted(&notes, "", "added `\"type\": \"object\"`"));
}

#[test]
fn gemini_schema_function_is_for_provider() {
    let input = input(&query());
    assert_eq!(
        schema::gemini(&input),
        for_provider(Provider::Gemini, &input)
    );
}

// ---------------------------------------------------------------------------
// OpenAI strict mode

#[test]
fn strict_closes_objects_and_requires_everything() {
    let strict = openai_strict(&input(&create_issue())).unwrap();
    assert_eq!(
        strict,
        json!({
            "type": "object",
            "properties": {
                "owner": {"type": "string"},
                "repo": {"type": "string"},
                "title": {"type": "string"},
                "body": {"type": ["string", "null"], "description": "Markdown."},
                "labels": {"type": ["array", "null"], "items": {"type": "string"}, "maxItems": 10},
                "assignee": {
                    "type": ["object", "null"],
                    "properties": {
                        "login": {"type": "string"},
                        "notify": {"type": ["boolean", "null"]}
                    },
                    "required": ["login", "notify"],
                    "additionalProperties": false
                }
            },
            "required": ["owner", "repo", "title", "body", "labels", "assignee"],
            "additionalProperties": false
        })
    );
}

#[test]
fn strict_optional_without_simple_type_becomes_any_of_with_null() {
    let strict = openai_strict(&object(json!({
        "type": "object",
        "properties": {
            "r": {"$ref": "#/$defs/r"},
            "c": {"const": "x"},
            "u": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "e": {"type": "string", "enum": ["a", "b"]}
        },
        "$defs": {"r": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}
    })))
    .unwrap();
    assert_eq!(
        strict["properties"]["r"],
        json!({"anyOf": [{"$ref": "#/$defs/r"}, {"type": "null"}]})
    );
    assert_eq!(
        strict["properties"]["c"],
        json!({"anyOf": [{"const": "x"}, {"type": "null"}]})
    );
    assert_eq!(
        strict["properties"]["u"],
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})
    );
    assert_eq!(
        strict["properties"]["e"],
        json!({"type": ["string", "null"], "enum": ["a", "b", null]})
    );
    // Definitions are made strict too.
    assert_eq!(
        strict["$defs"]["r"],
        json!({"type": "object", "properties": {"x": {"type": "string"}},
               "required": ["x"], "additionalProperties": false})
    );
}

#[test]
fn strict_removes_unsupported_annotations_and_converts_one_of() {
    let strict = openai_strict(&object(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "a": {"type": "string", "default": "x", "minLength": 1, "format": "uri", "examples": ["x"]},
            "d": {"type": "string", "format": "date"},
            "o": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "n": {"type": "integer", "nullable": true, "minimum": 0}
        },
        "required": ["a", "d", "o", "n"]
    })))
    .unwrap();
    assert_eq!(
        strict,
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "d": {"type": "string", "format": "date"},
                "o": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "n": {"type": ["integer", "null"], "minimum": 0}
            },
            "required": ["a", "d", "o", "n"],
            "additionalProperties": false
        })
    );
}

#[test]
fn strict_refuses_what_it_cannot_express() {
    let cases = [
        (json!({"type": "string"}), "root"),
        (json!({"type": "object", "anyOf": [{}]}), "union"),
        (
            json!({"type": "object", "additionalProperties": true}),
            "additional properties",
        ),
        (
            json!({"type": "object", "properties": {"m": {"type": "object"}}}),
            "free-form map",
        ),
        (
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
            "additional properties",
        ),
        (
            json!({"type": "object", "properties": {"a": {"allOf": [{"type": "string"}]}}}),
            "allOf",
        ),
        (
            json!({"type": "object", "properties": {"a": {"not": {"type": "string"}}}}),
            "`not`",
        ),
        (
            json!({"type": "object", "properties": {"a": {"description": "anything"}}}),
            "no `type`",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "array"}}}),
            "without `items`",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}),
            "tuple",
        ),
    ];
    for (schema, why) in cases {
        let err = openai_strict(&object(schema.clone())).unwrap_err();
        assert!(err.contains(why), "{schema}: {err}");
    }
}

#[test]
fn strict_enforces_openai_limits() {
    // Eleven levels of objects.
    let mut schema = json!({"type": "object", "properties": {"leaf": {"type": "string"}}});
    for _ in 0..10 {
        schema = json!({"type": "object", "properties": {"x": schema}});
    }
    let err = openai_strict(&object(schema)).unwrap_err();
    assert!(err.contains("nested"), "{err}");
    // Ten levels are fine.
    let mut schema = json!({"type": "object", "properties": {"leaf": {"type": "string"}}});
    for _ in 0..9 {
        schema = json!({"type": "object", "properties": {"x": schema}});
    }
    assert!(openai_strict(&object(schema)).is_ok());
    // Too many properties.
    let properties: Map<String, Value> = (0..5001)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let err =
        openai_strict(&object(json!({"type": "object", "properties": properties}))).unwrap_err();
    assert!(err.contains("5000"), "{err}");
    // Too many enum values.
    let values: Vec<String> = (0..1001).map(|i| format!("v{i}")).collect();
    let err = openai_strict(&object(
        json!({"type": "object", "properties": {"e": {"type": "string", "enum": values}}}),
    ))
    .unwrap_err();
    assert!(err.contains("1000"), "{err}");
}

#[test]
fn strict_root_without_properties_is_a_tool_without_arguments() {
    let strict = openai_strict(&object(json!({"type": "object"}))).unwrap();
    assert_eq!(
        strict,
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
    );
}

#[test]
fn strict_nulls_for_optional_arguments_are_dropped_again() {
    let input = input(&create_issue());
    let mut arguments = object(json!({
        "owner": "o", "repo": "r", "title": null, "body": null, "labels": null,
        "assignee": {"login": "me", "notify": null}
    }));
    drop_strict_nulls(&input, &mut arguments);
    assert_eq!(
        Value::Object(arguments),
        json!({"owner": "o", "repo": "r", "title": null, "assignee": {"login": "me"}})
    );
    // Objects in arrays too.
    let input = object(json!({"type": "object", "properties": {
        "rows": {"type": "array", "items": {"$ref": "#/$defs/row"}}
    }, "$defs": {"row": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"]}}}));
    let mut arguments = object(json!({"rows": [{"a": null, "b": null}, {"a": "x", "b": "y"}]}));
    drop_strict_nulls(&input, &mut arguments);
    assert_eq!(
        Value::Object(arguments),
        json!({"rows": [{"a": null}, {"a": "x", "b": "y"}]})
    );
    // A `null` the schema allows stays.
    let input = object(json!({"type": "object", "properties": {
        "n": {"type": ["string", "null"]},
        "r": {"$ref": "#/$defs/n"}
    }, "$defs": {"n": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}));
    let mut arguments = object(json!({"n": null, "r": null}));
    drop_strict_nulls(&input, &mut arguments);
    assert_eq!(Value::Object(arguments), json!({"n": null, "r": null}));
}

#[test]
fn strict_inlines_a_ref_with_keywords_beside_it() {
    let (strict, notes) = schema::openai_strict_noted(&input(&tree())).unwrap();
    // `document` had a description beside its `$ref`.
    assert_eq!(
        strict["properties"]["document"],
        json!({"type": "string", "pattern": "^doc-[0-9]+$", "description": "The document to write into."})
    );
    // A bare `$ref` stays.
    assert_eq!(
        strict["properties"]["root"],
        json!({"$ref": "#/$defs/section"})
    );
    assert!(noted(&notes, "/properties/document/$ref", "inlined"));
    assert!(noted(&notes, "/$defs/section/properties", "`children`"));
    // A self-reference with keywords beside it cannot be inlined forever.
    let looping = object(json!({
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/n", "description": "N."}},
        "required": ["n"],
        "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n", "description": "Next."}}}}
    }));
    let err = openai_strict(&looping).unwrap_err();
    // Whichever limit comes first, it ends.
    assert!(
        err.contains("too deeply") || err.contains("nested"),
        "{err}"
    );
}

#[test]
fn strict_notes_say_what_changed() {
    let (_, notes) = schema::openai_strict_noted(&input(&weather())).unwrap();
    assert!(noted(
        &notes,
        "/properties/unit/default",
        "removed `default`"
    ));
    assert!(noted(
        &notes,
        "/properties",
        "optional `unit` made required and nullable"
    ));
    let d = definition(
        Provider::OpenAiChat,
        "f",
        &weather(),
        &DefinitionOptions::default().strict(true),
    );
    assert_eq!(d.notes, notes);
}

#[test]
fn gemini_rewrites_keep_the_order_of_keywords() {
    let (value, _) = gemini(json!({"type": "object", "properties": {
        "a": {"description": "A.", "anyOf": [{"type": "string"}, {"type": "null"}], "title": "T", "default": "x"},
        "n": {"anyOf": [{"type": "null"}]}
    }, "required": ["ghost"], "title": "Root"}));
    let a = value["properties"]["a"].as_object().unwrap();
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        ["description", "title", "default", "type", "nullable"]
    );
    assert_eq!(value["properties"]["n"], json!({"nullable": true}));
    assert_eq!(
        value.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["type", "properties", "title"]
    );
}

// ---------------------------------------------------------------------------
// Properties over arbitrary schemas

mod properties {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};
    use switchboard_models::Provider;
    use switchboard_models::definitions::cap_text;
    use switchboard_models::schema::{GEMINI_KEYWORDS, for_provider, openai_strict};

    fn schema() -> impl Strategy<Value = Value> {
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

    fn root() -> impl Strategy<Value = Map<String, Value>> {
        (schema(), schema(), schema()).prop_map(|(p, a, b)| {
            let Value::Object(map) = json!({
                "type": "object",
                "properties": {"p": p, "q": {"$ref": "#/$defs/a"}},
                "$defs": {"a": a, "b": b}
            }) else {
                unreachable!()
            };
            map
        })
    }

    /// Mostly what strict mode takes, so that most cases make it through.
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
            let Value::Object(map) = json!({
                "type": "object",
                "properties": {"p": p, "q": {"$ref": "#/$defs/a"}},
                "required": ["q"],
                "$defs": {"a": a, "b": {"type": "object", "properties": {"x": {"type": "string"}}}}
            }) else {
                unreachable!()
            };
            map
        })
    }

    /// Every schema position of a Gemini schema holds only what Gemini takes.
    fn check_gemini(value: &Value, at: &str) -> Result<(), String> {
        let Value::Object(map) = value else {
            return Err(format!("{at}: not an object"));
        };
        for (key, v) in map {
            if !GEMINI_KEYWORDS.contains(&key.as_str()) {
                return Err(format!("{at}: `{key}`"));
            }
            match key.as_str() {
                "properties" => {
                    for (name, s) in v.as_object().ok_or("properties")? {
                        check_gemini(s, &format!("{at}/properties/{name}"))?;
                    }
                }
                "items" => check_gemini(v, &format!("{at}/items"))?,
                "anyOf" => {
                    let entries = v.as_array().ok_or("anyOf")?;
                    if entries.is_empty() {
                        return Err(format!("{at}: empty anyOf"));
                    }
                    for (i, s) in entries.iter().enumerate() {
                        check_gemini(s, &format!("{at}/anyOf/{i}"))?;
                    }
                }
                "type" if !v.is_string() => return Err(format!("{at}: type {v}")),
                "enum" if !v.as_array().is_some_and(|e| e.iter().all(Value::is_string)) => {
                    return Err(format!("{at}: enum {v}"));
                }
                "required" => {
                    let properties = map.get("properties").and_then(Value::as_object);
                    for name in v.as_array().ok_or("required")? {
                        let known = name
                            .as_str()
                            .is_some_and(|n| properties.is_some_and(|p| p.contains_key(n)));
                        if !known {
                            return Err(format!("{at}: required {name}"));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Every object of a strict schema is closed and requires every property.
    fn check_strict(value: &Value, at: &str) -> Result<(), String> {
        match value {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get("properties") {
                    if map.get("additionalProperties") != Some(&Value::Bool(false)) {
                        return Err(format!("{at}: not closed"));
                    }
                    let required: Vec<&str> = map
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    if required != properties.keys().map(String::as_str).collect::<Vec<_>>() {
                        return Err(format!("{at}: required {required:?}"));
                    }
                    for (name, s) in properties {
                        check_strict(s, &format!("{at}/properties/{name}"))?;
                    }
                }
                for key in ["items", "anyOf", "$defs"] {
                    match map.get(key) {
                        Some(Value::Array(entries)) => {
                            for e in entries {
                                check_strict(e, &format!("{at}/{key}"))?;
                            }
                        }
                        Some(Value::Object(m)) if key == "$defs" => {
                            for (name, s) in m {
                                check_strict(s, &format!("{at}/$defs/{name}"))?;
                            }
                        }
                        Some(s) => check_strict(s, &format!("{at}/{key}"))?,
                        None => {}
                    }
                }
                for key in ["oneOf", "allOf", "not", "default"] {
                    if map.contains_key(key) {
                        return Err(format!("{at}: `{key}` left"));
                    }
                }
                Ok(())
            }
            _ => Err(format!("{at}: not an object")),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn gemini_output_is_what_gemini_takes(schema in root()) {
            let (value, _) = for_provider(Provider::Gemini, &schema);
            if let Err(e) = check_gemini(&value, "") {
                prop_assert!(false, "{e}\n{value}");
            }
        }

        #[test]
        fn strict_output_is_closed_and_fully_required(schema in strict_root()) {
            if let Ok(value) = openai_strict(&schema)
                && let Err(e) = check_strict(&value, "")
            {
                prop_assert!(false, "{e}\n{value}");
            }
        }

        #[test]
        fn other_providers_are_lossless_for_typed_schemas(schema in root()) {
            for provider in [Provider::OpenAiResponses, Provider::OpenAiChat, Provider::Anthropic] {
                let (value, notes) = for_provider(provider, &schema);
                prop_assert_eq!(&value, &Value::Object(schema.clone()));
                prop_assert!(notes.is_empty());
            }
        }

        #[test]
        fn cap_text_fits_and_keeps_a_prefix(text in "\\PC{0,300}", cap in 0usize..120) {
            let capped = cap_text(&text, cap);
            let total = text.chars().count();
            prop_assert!(capped.chars().count() <= cap);
            if total <= cap {
                prop_assert_eq!(capped.as_ref(), text.as_str());
            } else if let Some((kept, marker)) = capped.split_once(" … [") {
                prop_assert!(text.starts_with(kept));
                let cut: usize = marker.split(' ').next().unwrap().parse().unwrap();
                prop_assert_eq!(kept.chars().count() + cut, total);
            } else {
                prop_assert!(text.starts_with(capped.as_ref()));
                prop_assert_eq!(capped.chars().count(), cap);
            }
        }
    }
}

#[test]
fn definition_json_is_the_definition_written_out() {
    // The Toolset sends `definition_json`'s text; the snapshots review
    // `definition`'s value. They must be the same JSON, key order included.
    let mut bare = weather();
    let mut schema = input(&bare);
    schema.remove("type");
    bare.input_schema = schema.into();
    let mut no_properties = no_arguments();
    let mut schema = input(&no_properties);
    schema.remove("properties");
    no_properties.input_schema = schema.into();
    let mut all: Vec<Tool> = tools().into_iter().map(|(_, t)| t).collect();
    all.extend([bare, no_properties]);
    for options in [
        DefinitionOptions::default(),
        DefinitionOptions::default().strict(true),
        DefinitionOptions::default().gemini_schema(GeminiSchema::JsonSchema),
        DefinitionOptions::default().description_cap(40),
    ] {
        for tool in &all {
            for provider in Provider::ALL {
                let name = format!("mcp__srv__{}", tool.name);
                let value = definition(provider, &name, tool, &options);
                let (json, notes) = switchboard_models::definitions::definition_json(
                    provider, &name, tool, &options,
                );
                assert_eq!(
                    json.get(),
                    serde_json::to_string(&value.value).unwrap(),
                    "{provider} {}",
                    tool.name
                );
                assert_eq!(notes, value.notes, "{provider} {}", tool.name);
            }
        }
    }
}
