//! Tools that exercise client-side protocol features: server→client
//! requests (session era) and multi round-trip requests (stateless era),
//! logging levels, structured output, and the opaque `requestState` codec.

use serde_json::{Map, Value, json};

use crate::server::{RpcError, code};

/// `_meta` key of the per-request log level (2026-07-28).
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of the subscription id on `subscriptions/listen` streams.
pub(crate) const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The URL asked for by `ask_url` and `needs_url`.
pub(crate) const CONSENT_URL: &str = "https://example.com/consent?x=1";

/// Syslog severities, lowest first (RFC 5424 order reversed).
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Index of a log level name (`debug` = 0 … `emergency` = 7).
pub(crate) fn level_index(name: &str) -> Option<u8> {
    LEVELS.iter().position(|l| *l == name).map(|i| i as u8)
}

/// `notifications/message` at `level` (an index into [`LEVELS`]).
pub(crate) fn log_message(level: u8, data: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": LEVELS[usize::from(level)], "logger": "testserver", "data": data},
    })
}

// ---------------------------------------------------------------------------
// requestState: base64url(JSON) + "." + a keyed FNV-1a checksum. Not
// cryptographic; it only has to catch a client that edits or invents state.

const STATE_KEY: u64 = 0x7377_6974_6368_6264;

fn checksum(payload: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ STATE_KEY;
    for b in payload.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Binds a `requestState` to the arguments of the call that got it.
pub(crate) fn args_digest(args: &Map<String, Value>) -> String {
    format!(
        "{:016x}",
        checksum(&Value::Object(args.clone()).to_string())
    )
}

/// Seal `state` into an opaque `requestState` string.
pub(crate) fn seal_state(state: &Value) -> String {
    let payload = crate::b64::encode_url(state.to_string().as_bytes());
    let sum = checksum(&payload);
    format!("{payload}.{sum:016x}")
}

/// Open and verify a `requestState` produced by [`seal_state`].
pub(crate) fn open_state(sealed: &str) -> Result<Value, RpcError> {
    let bad = || {
        RpcError::new(
            code::INVALID_PARAMS,
            "Invalid params: requestState failed verification",
        )
    };
    let (payload, sum) = sealed.rsplit_once('.').ok_or_else(bad)?;
    if u64::from_str_radix(sum, 16).ok() != Some(checksum(payload)) || sum.len() != 16 {
        return Err(bad());
    }
    let bytes = crate::b64::decode(payload).ok_or_else(bad)?;
    serde_json::from_slice(&bytes).map_err(|_| bad())
}

// ---------------------------------------------------------------------------
// Interactive tools (sampling, elicitation, roots).

/// The interactive tools: the input requests each one needs, by key.
pub(crate) fn interactive_keys(tool: &str) -> Option<&'static [&'static str]> {
    Some(match tool {
        "sample" => &["sample"],
        "ask" => &["ask"],
        "ask_url" => &["ask_url"],
        "roots" => &["roots"],
        "multi" => &["sample", "ask", "roots"],
        _ => return None,
    })
}

fn cap<'a>(caps: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(caps, |v, k| v.get(k))
        .filter(|v| !v.is_null())
}

/// The tool error to return when the client lacks a capability needed by
/// the input request `key` (with the tool's `args`), if it does.
pub(crate) fn missing_capability(
    key: &str,
    args: &Map<String, Value>,
    caps: &Value,
) -> Option<Value> {
    let missing = match key {
        "sample" => {
            if cap(caps, &["sampling"]).is_none() {
                Some("sampling")
            } else if wants_tools(args) && cap(caps, &["sampling", "tools"]).is_none() {
                Some("sampling.tools")
            } else {
                None
            }
        }
        "ask" => {
            let e = cap(caps, &["elicitation"]);
            let form = e.is_some_and(|e| {
                e.get("form").is_some() || e.as_object().is_some_and(Map::is_empty)
            });
            (!form).then_some("elicitation.form")
        }
        "ask_url" => cap(caps, &["elicitation", "url"])
            .is_none()
            .then_some("elicitation.url"),
        "roots" => cap(caps, &["roots"]).is_none().then_some("roots"),
        _ => None,
    }?;
    Some(tool_error(format!(
        "the client did not declare the {missing} capability"
    )))
}

fn wants_tools(args: &Map<String, Value>) -> bool {
    args.get("tools").and_then(Value::as_bool) == Some(true)
}

/// A tool result with `isError: true`.
pub(crate) fn tool_error(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

pub(crate) fn tool_text(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// The `ask` form schema: flat, with defaults.
pub(crate) fn ask_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "default": "octocat"},
            "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150, "default": 30},
            "subscribe": {"type": "boolean", "title": "Subscribe", "default": true},
            "color": {"type": "string", "title": "Color", "enum": ["red", "green", "blue"], "default": "green"},
            "email": {"type": "string", "title": "Email", "format": "email"},
        },
        "required": ["name"],
    })
}

/// The server→client request (`{method, params}`) for input key `key`.
/// `elicitation_id` is set in the session era (URL mode needs one there;
/// 2026-07-28 has none).
pub(crate) fn input_request(
    key: &str,
    args: &Map<String, Value>,
    modern: bool,
    elicitation_id: Option<&str>,
) -> Value {
    match key {
        "sample" => {
            let prompt = args
                .get("prompt")
                .and_then(Value::as_str)
                .unwrap_or("Say hello");
            let mut params = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "systemPrompt": "You are a test model.",
                "maxTokens": 100,
            });
            if wants_tools(args) {
                params["tools"] = json!([{
                    "name": "get_weather",
                    "description": "Get current weather for a city",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                }]);
                params["toolChoice"] = json!({"mode": "auto"});
            }
            json!({"method": "sampling/createMessage", "params": params})
        }
        "ask" => {
            let mut params = json!({
                "message": "Please tell us about yourself",
                "requestedSchema": ask_schema(),
            });
            if modern {
                params["mode"] = json!("form");
            }
            json!({"method": "elicitation/create", "params": params})
        }
        "ask_url" => {
            let mut params = json!({
                "mode": "url",
                "message": "Please open the consent page to continue",
                "url": CONSENT_URL,
            });
            if let Some(id) = elicitation_id {
                params["elicitationId"] = json!(id);
            }
            json!({"method": "elicitation/create", "params": params})
        }
        _ => json!({"method": "roots/list", "params": {}}),
    }
}

/// Text of a `CreateMessageResult`'s content (one block or an array).
fn sampled_text(resp: &Value) -> String {
    let block_text = |b: &Value| match b.get("type").and_then(Value::as_str) {
        Some("text") => b
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        Some("tool_use") => format!(
            "[tool_use {} {}]",
            b.get("name").and_then(Value::as_str).unwrap_or("?"),
            b.get("input").unwrap_or(&Value::Null)
        ),
        Some(other) => format!("[{other}]"),
        None => String::new(),
    };
    match resp.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().map(block_text).collect::<Vec<_>>().join(" "),
        Some(block) => block_text(block),
        None => String::new(),
    }
}

/// The final tool result from the client's answers (by input key).
pub(crate) fn finish(tool: &str, got: &Map<String, Value>) -> Value {
    let null = Value::Null;
    let get = |k: &str| got.get(k).unwrap_or(&null);
    let sampled = |r: &Value| {
        format!(
            "sampled: {} (model {})",
            sampled_text(r),
            r.get("model").and_then(Value::as_str).unwrap_or("?")
        )
    };
    let elicited = |r: &Value| {
        let mut out = Map::new();
        out.insert(
            "action".into(),
            r.get("action").cloned().unwrap_or(Value::Null),
        );
        if let Some(c) = r.get("content") {
            out.insert("content".into(), c.clone());
        }
        Value::Object(out)
    };
    let roots = |r: &Value| r.get("roots").cloned().unwrap_or_else(|| json!([]));
    match tool {
        "sample" => tool_text(sampled(get("sample"))),
        "ask" => tool_text(elicited(get("ask")).to_string()),
        "ask_url" => tool_text(elicited(get("ask_url")).to_string()),
        "roots" => tool_text(roots(get("roots")).to_string()),
        _ => tool_text(
            json!({
                "sample": sampled(get("sample")),
                "ask": elicited(get("ask")),
                "roots": roots(get("roots")),
            })
            .to_string(),
        ),
    }
}

/// The stateless-era handling of one call of an interactive or
/// state-only tool: an `input_required` result or the final result.
///
/// `state` is the opened `requestState` of a retry (already verified to
/// belong to `tool`), `responses` its `inputResponses`, `id` this request's id.
pub(crate) fn modern_round(
    tool: &str,
    args: &Map<String, Value>,
    caps: &Value,
    id: &Value,
    state: Option<Value>,
    responses: Option<&Map<String, Value>>,
) -> Value {
    let round = state
        .as_ref()
        .and_then(|s| s.get("round"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let next_state = |got: Map<String, Value>| {
        seal_state(&json!({
            "tool": tool,
            "args": args_digest(args),
            "round": round + 1,
            "id": id,
            "got": got,
        }))
    };
    match tool {
        "state_only" if round >= 2 => {
            return tool_text(format!("state_only done after {round} state-only retries"));
        }
        "state_only" | "forever" => {
            return json!({"resultType": "input_required", "requestState": next_state(Map::new())});
        }
        _ => {}
    }
    let Some(keys) = interactive_keys(tool) else {
        return tool_error(format!("{tool} is not an interactive tool"));
    };
    for key in keys {
        if let Some(err) = missing_capability(key, args, caps) {
            return err;
        }
    }
    let mut got = match state.and_then(|mut s| s.get_mut("got").map(Value::take)) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    if let Some(responses) = responses {
        for key in keys.iter().copied() {
            if let Some(r) = responses.get(key) {
                got.insert(key.to_owned(), r.clone());
            }
        }
    }
    let missing: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| !got.contains_key(*k))
        .collect();
    if missing.is_empty() {
        return finish(tool, &got);
    }
    let requests: Map<String, Value> = missing
        .iter()
        .map(|k| ((*k).to_owned(), input_request(k, args, true, None)))
        .collect();
    json!({
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": next_state(got),
    })
}

// ---------------------------------------------------------------------------
// Tool list entries.

/// The feature tools, in `tools/list` order (after the original ones).
pub(crate) fn feature_tools() -> Vec<Value> {
    let no_args = || json!({"type": "object", "properties": {}, "additionalProperties": false});
    let weather_schema = json!({
        "type": "object",
        "properties": {
            "temperature": {"type": "number"},
            "conditions": {"type": "string"},
        },
        "required": ["temperature", "conditions"],
    });
    vec![
        json!({
            "name": "sample",
            "description": "Asks the client to sample a message (sampling/createMessage); \
                            with tools=true also offers a tool (needs sampling.tools)",
            "inputSchema": {
                "type": "object",
                "properties": {"prompt": {"type": "string"}, "tools": {"type": "boolean"}},
                "required": ["prompt"],
            },
        }),
        json!({
            "name": "ask",
            "description": "Form elicitation with defaults; returns the action and content as JSON",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "ask_url",
            "description": "URL-mode elicitation; session era also sends notifications/elicitation/complete",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "needs_url",
            "description": "Session era: fails with -32042 (URL elicitation required) the first time, \
                            succeeds when called again",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "roots",
            "description": "Asks the client for its roots (roots/list); returns them as JSON",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "roots_changes",
            "description": "How many notifications/roots/list_changed this connection received",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "multi",
            "description": "Asks for sampling, elicitation and roots (one InputRequiredResult in the \
                            stateless era; three requests in sequence in the session era)",
            "inputSchema": {
                "type": "object",
                "properties": {"prompt": {"type": "string"}},
            },
        }),
        json!({
            "name": "state_only",
            "description": "Stateless era: answers input_required with only requestState twice, then completes",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "forever",
            "description": "Stateless era: always answers input_required (requestState only)",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "mrtr_ids",
            "description": "The JSON-RPC ids of every call of an MRTR tool so far, with the round",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "flood",
            "description": "Sends `count` notifications/message (data {\"seq\": i}), then the result",
            "inputSchema": {
                "type": "object",
                "properties": {"count": {"type": "integer", "minimum": 0}},
                "required": ["count"],
            },
        }),
        json!({
            "name": "add_tool",
            "description": "Adds a tool dynamic_<n> and announces notifications/tools/list_changed",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "touch",
            "description": "Sends notifications/resources/updated for `uri` to its subscribers",
            "inputSchema": {
                "type": "object",
                "properties": {"uri": {"type": "string"}},
                "required": ["uri"],
            },
        }),
        json!({
            "name": "close_subscriptions",
            "description": "Ends every subscriptions/listen stream gracefully (with its result)",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "hits",
            "description": "How many requests of `method` the server has served, and how many \
                            notifications/cancelled it got (all methods without `method`)",
            "inputSchema": {
                "type": "object",
                "properties": {"method": {"type": "string"}},
            },
        }),
        json!({
            "name": "slow_task",
            "description": "Sleeps `ms` (default 100) then answers; may run as a task \
                            (2025-11-25 task param, or the 2026-07-28 tasks extension)",
            "inputSchema": {
                "type": "object",
                "properties": {"ms": {"type": "integer", "minimum": 0}},
            },
            "execution": {"taskSupport": "optional"},
        }),
        json!({
            "name": "must_task",
            "description": "Like slow_task, but only as a task",
            "inputSchema": {
                "type": "object",
                "properties": {"ms": {"type": "integer", "minimum": 0}},
            },
            "execution": {"taskSupport": "required"},
        }),
        json!({
            "name": "input_task",
            "description": "Stateless era task that goes input_required (form elicitation) \
                            until tasks/update answers it",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "weather",
            "description": "Returns structured content matching its output schema",
            "inputSchema": no_args(),
            "outputSchema": weather_schema.clone(),
        }),
        json!({
            "name": "bad_weather",
            "description": "Returns structured content that does NOT match its output schema",
            "inputSchema": no_args(),
            "outputSchema": weather_schema,
        }),
    ]
}

/// `weather` / `bad_weather` results.
pub(crate) fn weather(bad: bool) -> Value {
    if bad {
        json!({
            "content": [{"type": "text", "text": "{\"temperature\":\"warm\",\"conditions\":\"sunny\"}"}],
            "structuredContent": {"temperature": "warm", "conditions": "sunny"},
        })
    } else {
        json!({
            "content": [{"type": "text", "text": "{\"temperature\":21.5,\"conditions\":\"sunny\"}"}],
            "structuredContent": {"temperature": 21.5, "conditions": "sunny"},
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_roundtrip_and_tamper() {
        let s = json!({"tool": "ask", "round": 1, "id": 7, "got": {}});
        let sealed = seal_state(&s);
        assert_eq!(open_state(&sealed).unwrap(), s);
        let mut tampered = sealed.clone().into_bytes();
        tampered[3] ^= 1;
        assert!(open_state(&String::from_utf8(tampered).unwrap()).is_err());
        assert!(open_state("garbage").is_err());
        for n in 0..5 {
            let data: Vec<u8> = (0..n).collect();
            assert_eq!(
                crate::b64::decode(&crate::b64::encode_url(&data)).unwrap(),
                data
            );
        }
    }
}
