//! Suite fixture mode (`--suite-fixture`): the tools, prompts, resources,
//! templates, completions and behaviours that the official MCP conformance
//! suite's *server* scenarios call by their own names (`test_*` tools,
//! `test://` resources), in both eras.
//!
//! The session era asks the client with server→client requests (sampling,
//! elicitation, roots) and logs and reports progress on the request's
//! stream; the stateless era (2026-07-28) answers the same tools with
//! `input_required` results (SEP-2322), logs only when the request's `_meta`
//! names a level, and rejects a call whose needed client capability is
//! undeclared with -32021.
//!
//! The fixture replaces the catalog; every other behaviour of the server
//! (eras, `_meta` validation, subscriptions, caching hints, faults) is the
//! test server's own.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::features::{self, level_index, log_message};
use crate::server::{AsyncKind, Mode, RpcError, Shared, ToolOutcome, code};
use crate::{TINY_PNG_BASE64, b64};

/// `ttlMs` given to the stateless era's cacheable results unless
/// `--cache-ttl-ms` says otherwise (the suite's `caching` scenario).
pub(crate) const DEFAULT_CACHE_TTL_MS: u64 = 60_000;

const JSON_SCHEMA_2020_12_TOOL: &str = "json_schema_2020_12_tool";

/// Names of the fixture's tools, in `tools/list` order.
pub const SUITE_TOOL_NAMES: [&str; 36] = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_error_handling",
    "test_tool_with_progress",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    JSON_SCHEMA_2020_12_TOOL,
    "test_reconnection",
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_trigger_tool_change",
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    "test_mrtr_echo_state",
    "test_mrtr_no_state",
    "test_custom_headers",
    // The tasks extension's (`suite_tasks.rs`).
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
];

/// Names of the fixture's prompts, in `prompts/list` order.
pub const SUITE_PROMPT_NAMES: [&str; 5] = [
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
    "test_input_required_result_prompt",
];

/// A session-era job of the fixture (run by [`run`]).
#[derive(Debug)]
pub enum Job {
    /// Three `info` log lines, ~50 ms apart, then the result.
    Logging {
        /// The request's minimum level (`None`: no log lines).
        level: Option<u8>,
    },
    /// Progress 0, 50 and 100 of 100, ~50 ms apart.
    Progress {
        /// The request's progress token (`None`: just the delays).
        token: Option<Value>,
    },
    /// Ask the client (server→client requests, in order), then answer.
    Ask {
        /// The tool.
        tool: String,
        /// `(key, method, params)` of each request.
        asks: Vec<(String, String, Value)>,
    },
}

impl Job {
    /// Whether the job waits on the client (so cannot end after EOF).
    pub fn waits_on_client(&self) -> bool {
        matches!(self, Job::Ask { .. })
    }
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": no_args()})
}

/// The `tools/list` entries.
pub(crate) fn tools() -> Vec<Value> {
    let mut out: Vec<Value> = SUITE_TOOL_NAMES
        .iter()
        .filter(|name| !crate::suite_tasks::is_task_tool(name))
        .map(|name| tool(name, &format!("Conformance fixture tool {name}")))
        .collect();
    out.extend(crate::suite_tasks::tools());
    let set = |out: &mut Vec<Value>, name: &str, schema: Value| {
        if let Some(t) = out.iter_mut().find(|t| t["name"] == name) {
            t["inputSchema"] = schema;
        }
    };
    set(
        &mut out,
        "test_sampling",
        json!({"type": "object", "properties": {"prompt": {"type": "string"}},
               "required": ["prompt"]}),
    );
    set(
        &mut out,
        "test_elicitation",
        json!({"type": "object", "properties": {"message": {"type": "string"}},
               "required": ["message"]}),
    );
    // SEP-2243: the argument is mirrored in an `Mcp-Param-Region` header.
    set(
        &mut out,
        "test_custom_headers",
        json!({"type": "object",
               "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
               "required": ["region"]}),
    );
    // SEP-1613 / SEP-2106: these keywords reach the client as written.
    set(
        &mut out,
        JSON_SCHEMA_2020_12_TOOL,
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                      "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false,
        }),
    );
    out
}

/// The `prompts/list` entries.
pub(crate) fn prompts() -> Vec<Value> {
    let arg = |name: &str| json!({"name": name, "description": format!("Argument {name}"), "required": true});
    vec![
        json!({"name": "test_simple_prompt", "description": "A prompt without arguments"}),
        json!({"name": "test_prompt_with_arguments", "description": "A prompt with two arguments",
               "arguments": [arg("arg1"), arg("arg2")]}),
        json!({"name": "test_prompt_with_embedded_resource",
               "description": "A prompt with an embedded resource", "arguments": [arg("resourceUri")]}),
        json!({"name": "test_prompt_with_image", "description": "A prompt with an image"}),
        json!({"name": "test_input_required_result_prompt",
               "description": "Stateless era: asks for context (input_required) before answering"}),
    ]
}

/// The `resources/list` entries.
pub(crate) fn resources() -> Vec<Value> {
    vec![
        json!({"uri": "test://static-text", "name": "static-text",
               "description": "A static text resource", "mimeType": "text/plain"}),
        json!({"uri": "test://static-binary", "name": "static-binary",
               "description": "A static binary resource (a PNG)", "mimeType": "image/png"}),
        json!({"uri": "test://watched-resource", "name": "watched-resource",
               "description": "A resource to subscribe to", "mimeType": "text/plain"}),
        json!({"uri": "test://example-resource", "name": "example-resource",
               "description": "A resource prompts embed", "mimeType": "text/plain"}),
    ]
}

/// The `resources/templates/list` entries.
pub(crate) fn templates() -> Vec<Value> {
    vec![json!({
        "uriTemplate": "test://template/{id}/data",
        "name": "template-data",
        "description": "Data by id",
        "mimeType": "application/json",
    })]
}

/// A 1-sample, 8 kHz, 8-bit mono WAV file, base64.
fn tiny_wav_base64() -> String {
    let mut wav = Vec::with_capacity(45);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&37u32.to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000u32.to_le_bytes());
    wav.extend_from_slice(&8000u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes());
    wav.extend_from_slice(&8u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&1u32.to_le_bytes());
    wav.push(128);
    b64::encode(&wav)
}

fn text(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}]})
}

fn image_block() -> Value {
    json!({"type": "image", "data": TINY_PNG_BASE64, "mimeType": "image/png"})
}

fn elicit(message: &str, properties: Value, required: &[&str]) -> (String, Value) {
    (
        "elicitation/create".to_owned(),
        json!({"message": message,
               "requestedSchema": {"type": "object", "properties": properties, "required": required}}),
    )
}

fn sample(prompt: &str, max_tokens: u64) -> (String, Value) {
    (
        "sampling/createMessage".to_owned(),
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
               "maxTokens": max_tokens}),
    )
}

fn roots() -> (String, Value) {
    ("roots/list".to_owned(), json!({}))
}

/// The input requests `tool` needs in `round` (0-based), by key; `None`
/// for a tool that asks nothing.
fn asks(tool: &str, args: &Map<String, Value>, round: u64) -> Option<Vec<(String, String, Value)>> {
    let one = |key: &str, (method, params): (String, Value)| vec![(key.to_owned(), method, params)];
    let name_schema = || json!({"name": {"type": "string"}});
    Some(match tool {
        "test_sampling" => {
            let prompt = args
                .get("prompt")
                .and_then(Value::as_str)
                .unwrap_or("Hello");
            one("sampling", sample(prompt, 100))
        }
        "test_elicitation" => {
            let message = args
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("Please provide your information");
            one(
                "elicitation",
                elicit(
                    message,
                    json!({
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"},
                    }),
                    &["username", "email"],
                ),
            )
        }
        "test_elicitation_sep1034_defaults" => one(
            "elicitation",
            elicit(
                "Please review the defaults",
                json!({
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"],
                               "default": "active"},
                    "verified": {"type": "boolean", "default": true},
                }),
                &[],
            ),
        ),
        "test_elicitation_sep1330_enums" => one(
            "elicitation",
            elicit(
                "Please pick options",
                json!({
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                   "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array",
                                      "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]}},
                }),
                &[],
            ),
        ),
        "test_streaming_elicitation" | "test_input_required_result_elicitation" => one(
            "user_name",
            elicit("What is your name?", name_schema(), &["name"]),
        ),
        "test_missing_capability" => one("sampling", sample("Say hello", 50)),
        "test_input_required_result_sampling" => one(
            "capital_question",
            sample("What is the capital of France?", 100),
        ),
        "test_input_required_result_list_roots" => one("client_roots", roots()),
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state"
        | "test_mrtr_echo_state"
        | "test_mrtr_no_state" => one(
            "confirmation",
            elicit(
                "Please confirm",
                json!({"ok": {"type": "boolean"}}),
                &["ok"],
            ),
        ),
        "test_input_required_result_multiple_inputs"
        | "test_input_required_result_capabilities" => {
            let (m1, p1) = elicit("What is your name?", name_schema(), &["name"]);
            let (m2, p2) = sample("Generate a greeting", 50);
            let mut v = vec![
                ("user_name".to_owned(), m1, p1),
                ("greeting".to_owned(), m2, p2),
            ];
            if tool == "test_input_required_result_multiple_inputs" {
                let (m3, p3) = roots();
                v.push(("client_roots".to_owned(), m3, p3));
            }
            v
        }
        "test_input_required_result_multi_round" if round == 0 => one(
            "step1",
            elicit("Step 1: What is your name?", name_schema(), &["name"]),
        ),
        "test_input_required_result_multi_round" => one(
            "step2",
            elicit(
                "Step 2: What is your favorite color?",
                json!({"color": {"type": "string"}}),
                &["color"],
            ),
        ),
        _ => return None,
    })
}

/// The capability a server→client request needs.
fn needed_capability(method: &str) -> &'static str {
    match method {
        "sampling/createMessage" => "sampling",
        "elicitation/create" => "elicitation",
        _ => "roots",
    }
}

fn declared(caps: &Value, method: &str) -> bool {
    caps.get(needed_capability(method))
        .is_some_and(|c| !c.is_null())
}

/// The result of an asking tool once every answer is in (by key).
fn finish(tool: &str, got: &Map<String, Value>, state_ok: bool) -> Value {
    let first = got.values().next().cloned().unwrap_or(Value::Null);
    let elicited = |r: &Value| {
        format!(
            "action={}, content={}",
            r.get("action").and_then(Value::as_str).unwrap_or("?"),
            r.get("content").cloned().unwrap_or_else(|| json!({}))
        )
    };
    match tool {
        "test_sampling" => {
            let t = first
                .pointer("/content/text")
                .and_then(Value::as_str)
                .unwrap_or("");
            text(format!("LLM response: {t}"))
        }
        "test_elicitation" => text(format!("User response: {}", elicited(&first))),
        "test_elicitation_sep1034_defaults" | "test_elicitation_sep1330_enums" => {
            text(format!("Elicitation completed: {}", elicited(&first)))
        }
        _ if state_ok => text(format!("state-ok: {}", Value::Object(got.clone()))),
        _ => text(format!("completed: {}", Value::Object(got.clone()))),
    }
}

/// Tools whose retry must carry the `requestState` they were given.
fn needs_state(tool: &str) -> bool {
    matches!(
        tool,
        "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state"
            | "test_input_required_result_multi_round"
            | "test_mrtr_echo_state"
    )
}

/// A retry's opened `requestState` and its `inputResponses`.
type Retry = (Option<Value>, Option<Map<String, Value>>);

/// `requestState` and `inputResponses` of a stateless-era retry, checked:
/// the state opened (else -32602), the responses an object (else -32602).
fn retry_params(tool: &str, params: &mut Map<String, Value>) -> Result<Retry, RpcError> {
    let state = match params.remove("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            let state = features::open_state(&s)?;
            if state.get("tool").and_then(Value::as_str) != Some(tool) {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: requestState was not issued for {tool}"
                )));
            }
            Some(state)
        }
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: requestState must be a string",
            ));
        }
    };
    let responses = match params.remove("inputResponses") {
        None => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: inputResponses must be an object",
            ));
        }
    };
    Ok((state, responses))
}

/// The stateless-era handling of an asking tool or prompt: the complete
/// result (from `done`) once every answer is in, else `input_required`.
fn modern_round(
    tool: &str,
    args: &Map<String, Value>,
    caps: &Value,
    params: &mut Map<String, Value>,
    done: impl FnOnce(&Map<String, Value>, bool) -> Value,
) -> Result<Value, RpcError> {
    let (state, responses) = retry_params(tool, params)?;
    let round = state
        .as_ref()
        .and_then(|s| s.get("round"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let all = asks(tool, args, round).unwrap_or_default();
    let capable: Vec<_> = if tool == "test_input_required_result_capabilities" {
        all.into_iter()
            .filter(|(_, m, _)| declared(caps, m))
            .collect()
    } else {
        if let Some((_, m, _)) = all.iter().find(|(_, m, _)| !declared(caps, m)) {
            return Err(missing_capability(needed_capability(m)));
        }
        all
    };
    let mut got = Map::new();
    let mut missing = Map::new();
    for (key, method, req) in capable {
        match responses.as_ref().and_then(|r| r.get(&key)) {
            Some(answer @ Value::Object(_)) => {
                got.insert(key, answer.clone());
            }
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: inputResponses.{key} must be an object"
                )));
            }
            None => {
                missing.insert(key, json!({"method": method, "params": req}));
            }
        }
    }
    let state_ok = state.is_some();
    let more_rounds = tool == "test_input_required_result_multi_round" && round == 0;
    if missing.is_empty() && (state_ok || !needs_state(tool)) && !more_rounds {
        return Ok(done(&got, state_ok));
    }
    let next_round = if missing.is_empty() { round + 1 } else { round };
    if next_round != round {
        // The next round's questions.
        missing = asks(tool, args, next_round)
            .unwrap_or_default()
            .into_iter()
            .map(|(k, m, p)| (k, json!({"method": m, "params": p})))
            .collect();
    }
    let sealed = features::seal_state(&json!({"tool": tool, "round": next_round}));
    let mut result = json!({"resultType": "input_required", "requestState": sealed});
    if !missing.is_empty() {
        result["inputRequests"] = Value::Object(missing);
    }
    Ok(result)
}

fn missing_capability(cap: &str) -> RpcError {
    let mut required = Map::new();
    required.insert(cap.to_owned(), json!({}));
    RpcError::new(
        code::MISSING_CLIENT_CAPABILITY,
        format!("Missing required client capability: {cap}"),
    )
    .with_data(json!({"requiredCapabilities": required}))
}

impl Shared {
    /// `tools/call` of the fixture.
    pub(crate) fn fixture_call(
        &self,
        mode: Mode,
        name: &str,
        args: Map<String, Value>,
        mut params: Map<String, Value>,
    ) -> Result<ToolOutcome, RpcError> {
        let done = |v: Value| Ok(ToolOutcome::Done(v));
        match name {
            "test_simple_text" => return done(text("This is a simple text response for testing.")),
            "test_image_content" => return done(json!({"content": [image_block()]})),
            "test_audio_content" => {
                return done(
                    json!({"content": [{"type": "audio", "data": tiny_wav_base64(),
                                                "mimeType": "audio/wav"}]}),
                );
            }
            "test_embedded_resource" => {
                return done(json!({"content": [{"type": "resource", "resource": {
                    "uri": "test://embedded-resource", "mimeType": "text/plain",
                    "text": "This is an embedded resource content.",
                }}]}));
            }
            "test_multiple_content_types" => {
                return done(json!({"content": [
                    {"type": "text", "text": "Multiple content types test:"},
                    image_block(),
                    {"type": "resource", "resource": {
                        "uri": "test://mixed-content-resource", "mimeType": "application/json",
                        "text": "{\"test\":\"data\",\"value\":123}",
                    }},
                ]}));
            }
            "test_error_handling" => {
                return done(json!({"isError": true, "content": [{"type": "text",
                    "text": "This tool intentionally returns an error for testing"}]}));
            }
            JSON_SCHEMA_2020_12_TOOL | "test_custom_headers" => {
                return done(text(Value::Object(args).to_string()));
            }
            "test_tool_with_logging" | "test_logging_tool" => {
                let level = self.log_level(mode, &params);
                return Ok(ToolOutcome::Async(AsyncKind::Fixture(Job::Logging {
                    level: match mode {
                        // The session era logs unless told otherwise.
                        Mode::Legacy => Some(level.unwrap_or(0)),
                        Mode::Modern => level,
                    },
                })));
            }
            "test_tool_with_progress" => {
                let token = params
                    .get_mut("_meta")
                    .and_then(|m| m.get_mut("progressToken"))
                    .map(Value::take);
                return Ok(ToolOutcome::Async(AsyncKind::Fixture(Job::Progress {
                    token,
                })));
            }
            // The session era's `cut-stream` fault cuts this call's stream
            // after its priming event; the answer waits for the client's
            // resuming GET (SEP-1699).
            "test_reconnection" => {
                return Ok(ToolOutcome::Async(AsyncKind::Progress {
                    steps: 1,
                    interval_ms: 100,
                    pad: 0,
                    token: None,
                    log: None,
                }));
            }
            "test_trigger_tool_change" => {
                let told = self.broadcast(
                    &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                    true,
                    None,
                );
                return done(text(format!("tools list change announced to {told}")));
            }
            _ => {}
        }
        let caps = self.client_caps(mode, &params);
        let Some(asked) = asks(name, &args, 0) else {
            return Err(RpcError::invalid_params(format!("Unknown tool: {name}")));
        };
        match mode {
            Mode::Modern => {
                let tool = name.to_owned();
                modern_round(name, &args, &caps, &mut params, |got, state_ok| {
                    finish(&tool, got, state_ok)
                })
                .map(ToolOutcome::Done)
            }
            Mode::Legacy => {
                if let Some((_, m, _)) = asked.iter().find(|(_, m, _)| !declared(&caps, m)) {
                    return done(features::tool_error(format!(
                        "the client did not declare the {} capability",
                        needed_capability(m)
                    )));
                }
                let mut asks = asked;
                if name == "test_input_required_result_multi_round" {
                    asks.extend(self::asks(name, &args, 1).unwrap_or_default());
                }
                Ok(ToolOutcome::Async(AsyncKind::Fixture(Job::Ask {
                    tool: name.to_owned(),
                    asks,
                })))
            }
        }
    }

    /// `prompts/get` of the fixture.
    pub(crate) fn fixture_prompt(
        &self,
        mode: Mode,
        params: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let mut params = params
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let Some(name) = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(RpcError::invalid_params(
                "Invalid params: missing prompt name",
            ));
        };
        let args = params
            .get("arguments")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let arg = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "Missing required argument '{k}' for prompt {name}"
                    ))
                })
        };
        let user = |content: Value| json!({"role": "user", "content": content});
        let user_text = |t: String| user(json!({"type": "text", "text": t}));
        Ok(match name.as_str() {
            "test_simple_prompt" => json!({"messages": [
                user_text("This is a simple prompt for testing.".to_owned()),
            ]}),
            "test_prompt_with_arguments" => {
                let (a1, a2) = (arg("arg1")?, arg("arg2")?);
                json!({"messages": [
                    user_text(format!("Prompt with arguments: arg1='{a1}', arg2='{a2}'")),
                ]})
            }
            "test_prompt_with_embedded_resource" => {
                let uri = arg("resourceUri")?;
                json!({"messages": [
                    user(json!({"type": "resource", "resource": {"uri": uri,
                        "mimeType": "text/plain", "text": "Embedded resource content for testing."}})),
                    user_text("Please process the embedded resource above.".to_owned()),
                ]})
            }
            "test_prompt_with_image" => json!({"messages": [
                user(image_block()),
                user_text("Please analyze the image above.".to_owned()),
            ]}),
            "test_input_required_result_prompt" => {
                let finish = |got: &Map<String, Value>| {
                    let context = got
                        .get("user_context")
                        .and_then(|r| r.pointer("/content/context"))
                        .and_then(Value::as_str)
                        .unwrap_or("none")
                        .to_owned();
                    json!({"messages": [user_text(format!("Prompt with context: {context}"))]})
                };
                match mode {
                    // The session era has no input_required: the prompt
                    // answers without context.
                    Mode::Legacy => finish(&Map::new()),
                    Mode::Modern => {
                        let caps = self.client_caps(mode, &params);
                        if !declared(&caps, "elicitation/create") {
                            return Err(missing_capability("elicitation"));
                        }
                        let (state, responses) = retry_params(&name, &mut params)?;
                        match responses.as_ref().and_then(|r| r.get("user_context")) {
                            Some(answer @ Value::Object(_)) => {
                                let mut got = Map::new();
                                got.insert("user_context".into(), answer.clone());
                                finish(&got)
                            }
                            Some(_) => {
                                return Err(RpcError::invalid_params(
                                    "Invalid params: inputResponses.user_context must be an object",
                                ));
                            }
                            None => {
                                let _ = state;
                                let (m, p) = elicit(
                                    "What context should the prompt use?",
                                    json!({"context": {"type": "string"}}),
                                    &["context"],
                                );
                                json!({
                                    "resultType": "input_required",
                                    "inputRequests": {"user_context": {"method": m, "params": p}},
                                    "requestState": features::seal_state(&json!({"tool": name, "round": 0})),
                                })
                            }
                        }
                    }
                }
            }
            _ => return Err(RpcError::invalid_params(format!("Unknown prompt: {name}"))),
        })
    }

    /// Run a session-era [`Job`]: `emit` gets its notifications and
    /// server→client requests; returns the tool result.
    pub(crate) async fn run_fixture(
        &self,
        job: Job,
        emit: &mut (impl FnMut(Value) + Send),
    ) -> Value {
        let step = Duration::from_millis(50);
        match job {
            Job::Logging { level } => {
                let info = level_index("info").unwrap_or(1);
                let lines = [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ];
                for (i, line) in lines.iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(step).await;
                    }
                    if level.is_some_and(|l| l <= info) {
                        emit(log_message(info, json!(line)));
                    }
                }
                text("Tool with logging executed successfully")
            }
            Job::Progress { token } => {
                for (i, progress) in [0u64, 50, 100].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(step).await;
                    }
                    if let Some(token) = &token {
                        emit(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                                    "params": {"progressToken": token, "progress": progress,
                                               "total": 100}}));
                    }
                }
                text("Tool with progress executed successfully")
            }
            Job::Ask { tool, asks } => {
                let mut got = Map::new();
                for (key, method, params) in asks {
                    match self.ask_client(emit, &method, params).await {
                        Ok(answer) => {
                            got.insert(key, answer);
                        }
                        Err(e) => return features::tool_error(e),
                    }
                }
                finish(&tool, &got, false)
            }
        }
    }
}

/// `resources/read` of the fixture.
pub(crate) fn read_resource(params: Option<&Value>, mode: Mode) -> Result<Value, RpcError> {
    let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("Invalid params: missing uri"));
    };
    let text = |mime: &str, t: String| json!({"uri": uri, "mimeType": mime, "text": t});
    let content = match uri {
        "test://static-text" => text(
            "text/plain",
            "This is the content of the static text resource.".to_owned(),
        ),
        "test://static-binary" => {
            json!({"uri": uri, "mimeType": "image/png", "blob": TINY_PNG_BASE64})
        }
        "test://watched-resource" => text("text/plain", "Watched resource content.".to_owned()),
        "test://example-resource" => text("text/plain", "Example resource content.".to_owned()),
        _ => match uri
            .strip_prefix("test://template/")
            .and_then(|r| r.strip_suffix("/data"))
        {
            Some(id) if !id.is_empty() && !id.contains('/') => text(
                "application/json",
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                    .to_string(),
            ),
            _ => {
                // Legacy revisions used -32002; 2026-07-28 mandates -32602.
                let code = match mode {
                    Mode::Legacy => code::RESOURCE_NOT_FOUND,
                    Mode::Modern => code::INVALID_PARAMS,
                };
                return Err(
                    RpcError::new(code, "Resource not found").with_data(json!({"uri": uri}))
                );
            }
        },
    };
    Ok(json!({"contents": [content]}))
}

/// `completion/complete` of the fixture: `arg1` of
/// `test_prompt_with_arguments` from a fixed list, by prefix.
pub(crate) fn complete(params: Option<&Value>) -> Value {
    let arg = params.and_then(|p| p.get("argument"));
    let prefix = arg
        .and_then(|a| a.get("value"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let values: Vec<&str> = ["paris", "park", "party", "test", "testing"]
        .into_iter()
        .filter(|v| v.starts_with(prefix))
        .collect();
    json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})
}
