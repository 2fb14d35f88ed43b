//! How long adapting 10 000 MCP tools for a model API takes: names,
//! definitions (schema clean-up, capped descriptions) and the request's
//! `tools` value, for every provider.
//!
//! ```text
//! cargo bench -p switchboard-models --bench adapt            # or: -- ROUNDS
//! ```
//!
//! The tools: 100 servers × 100 tools, shaped like real ones — names with
//! dots and dashes, a few over the 64-character limit, same-named tools
//! across servers, descriptions from 80 characters to 6 KB (over the cap),
//! schemas with nested objects, enums, optional fields, `$defs`/`$ref`,
//! type arrays and `const` (what Gemini's clean-up rewrites).
//!
//! Printed per provider: the median and the slowest of the rounds for
//! `Toolset::new` alone and with `tools_param()` (the JSON value a
//! request carries), and the serialized size. The target is ≤ 50 ms.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_models::{DefinitionOptions, Provider, SearchOptions, Toolset, ToolsetOptions};
use switchboard_types::Tool;

const SERVERS: usize = 100;
const TOOLS_PER_SERVER: usize = 100;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes `--bench`; a bare number sets the rounds.
    let rounds: usize = args[1..].iter().find_map(|a| a.parse().ok()).unwrap_or(21);
    let tools = corpus();
    let total = tools.len();
    println!(
        "adapting {total} tools ({SERVERS} servers × {TOOLS_PER_SERVER}), median and max of {rounds} rounds"
    );
    println!(
        "{:<24} {:>14} {:>14} {:>22} {:>10}",
        "provider", "Toolset::new", "(max)", "new + tools_param()", "JSON size"
    );
    let mut worst = Duration::ZERO;
    for (label, provider, options) in [
        (
            "openai-responses",
            Provider::OpenAiResponses,
            ToolsetOptions::default(),
        ),
        (
            "openai-chat",
            Provider::OpenAiChat,
            ToolsetOptions::default(),
        ),
        (
            "openai-chat strict",
            Provider::OpenAiChat,
            ToolsetOptions::default().definitions(strict()),
        ),
        ("anthropic", Provider::Anthropic, ToolsetOptions::default()),
        ("gemini", Provider::Gemini, ToolsetOptions::default()),
        (
            "anthropic + search",
            Provider::Anthropic,
            ToolsetOptions::default().search(Some(SearchOptions::default())),
        ),
    ] {
        // Warm the allocator and caches.
        black_box(Toolset::new(provider, options.clone(), tools.clone()));
        let mut build = Vec::with_capacity(rounds);
        let mut full = Vec::with_capacity(rounds);
        let mut size = 0;
        for _ in 0..rounds {
            let input = tools.clone();
            let started = Instant::now();
            let set = Toolset::new(provider, options.clone(), input);
            build.push(started.elapsed());
            let param = set.tools_param();
            full.push(started.elapsed());
            size = serde_json::to_string(&param).map_or(0, |s| s.len());
            black_box((set, param));
        }
        build.sort();
        full.sort();
        let median = full[rounds / 2];
        worst = worst.max(median);
        println!(
            "{label:<24} {:>14} {:>14} {:>22} {:>9}K",
            ms(build[rounds / 2]),
            ms(*build.last().expect("rounds > 0")),
            ms(median),
            size / 1024
        );
    }
    println!(
        "slowest median (new + tools_param): {} — target ≤ 50 ms: {}",
        ms(worst),
        if worst <= Duration::from_millis(50) {
            "met"
        } else {
            "NOT met"
        }
    );
}

fn strict() -> DefinitionOptions {
    let mut options = DefinitionOptions::default();
    options.strict = true;
    options
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// 10 000 (server, tool) pairs, deterministic.
fn corpus() -> Vec<(String, Tool)> {
    let mut out = Vec::with_capacity(SERVERS * TOOLS_PER_SERVER);
    for s in 0..SERVERS {
        let server = match s % 4 {
            0 => format!("github-{s}"),
            1 => format!("acme.internal.files-{s}"),
            2 => format!("db_{s}"),
            _ => format!("Search Server {s}"),
        };
        for t in 0..TOOLS_PER_SERVER {
            out.push((server.clone(), tool(s, t)));
        }
    }
    out
}

fn tool(s: usize, t: usize) -> Tool {
    let name = match t % 10 {
        // Same name on every server: only the server part tells them apart.
        0 => "search".to_owned(),
        1 => format!("repos.get-content.v{t}"),
        // Over 64 characters once prefixed: truncated with a hash.
        2 => format!("create_or_update_a_very_descriptively_named_resource_with_options_{t}"),
        _ => format!("tool_{s}_{t}"),
    };
    let description = match t % 7 {
        0 => "Searches things.".repeat(5),
        // Over the 2048-character cap, as generated OpenAPI servers write.
        1 => format!(
            "Operation {t}. {}",
            "Parameters are described below. ".repeat(200)
        ),
        _ => format!(
            "Does thing number {t} for server {s}: reads the input, checks it and returns a \
             summary of what changed, with links to every record it touched."
        ),
    };
    let schema = match t % 5 {
        0 => json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}
            },
            "required": ["query"]
        }),
        1 => json!({
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
        2 => json!({
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
        3 => json!({"type": "object", "properties": {}}),
        _ => json!({
            "type": "object",
            "properties": {
                "sql": {"type": "string", "description": "A read-only query."},
                "params": {"type": "array", "items": {"type": ["string", "number", "boolean"]}},
                "timeout_ms": {"type": "integer", "exclusiveMinimum": 0}
            },
            "required": ["sql"]
        }),
    };
    let Value::Object(input_schema) = schema else {
        unreachable!("object literals")
    };
    Tool {
        name,
        description: Some(description),
        input_schema: input_schema.into(),
        ..Tool::default()
    }
}
