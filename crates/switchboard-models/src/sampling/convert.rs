//! A server's `sampling/createMessage` as one model turn on any of the
//! four APIs, and the turn's answer as its result (SEP-1577's tools
//! included): the messages in the API's transcript form — text, images,
//! audio where the API takes them, the model's earlier `tool_use` blocks
//! and the server's `tool_result` blocks (through [`results::tool_result`],
//! as the agent sends tool results) — the tools as the API's definitions,
//! `toolChoice`, `maxTokens`, `temperature` and stop sequences in the
//! API's own fields. `metadata` is not passed on: a server does not get to
//! set fields of the user's model request.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use switchboard::HandlerError;
use switchboard::types::content::ToolUseContent;
use switchboard::types::sampling::{
    CreateMessageRequestParams, CreateMessageResult, ToolChoiceMode,
};
use switchboard::types::{CallToolResult, ContentBlock, Role};

use crate::Provider;
use crate::definitions::{DefinitionOptions, definition_json};
use crate::model::{self, ModelTurn};
use crate::results::{self, ResultOptions};

/// What one sampling request sends: the transcript, the system prompt,
/// the tools and the API's other fields.
#[derive(Debug)]
#[non_exhaustive]
pub struct SamplingTurn {
    /// The messages, in the API's transcript form.
    pub transcript: Vec<Value>,
    /// The system prompt.
    pub system: Option<String>,
    /// The tools, as the API's `tools` value.
    pub tools: Option<Box<RawValue>>,
    /// `max_tokens` and the like, under the API's names.
    pub fields: Map<String, Value>,
}

fn refuse(index: usize, provider: Provider, what: &str) -> HandlerError {
    HandlerError::InvalidParams(format!(
        "message {index}: {what} cannot be sent to the {provider} API"
    ))
}

/// `params` as a turn of `provider`'s API.
///
/// # Errors
/// [`HandlerError::InvalidParams`] for what the API cannot take (audio
/// where it takes none, an image in an assistant message, a resource, a
/// tool name the API refuses), naming the message.
pub fn sampling_turn(
    provider: Provider,
    params: &CreateMessageRequestParams,
) -> Result<SamplingTurn, HandlerError> {
    let mut transcript = Vec::with_capacity(params.messages.len());
    // Tool uses by id: a Gemini function response names its function.
    let mut uses: HashMap<&str, &str> = HashMap::new();
    for (index, message) in params.messages.iter().enumerate() {
        let blocks = message.content.blocks();
        match message.role {
            Role::User
                if blocks
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult(_))) =>
            {
                let mut answered = Vec::new();
                for block in blocks {
                    let ContentBlock::ToolResult(result) = block else {
                        return Err(refuse(
                            index,
                            provider,
                            "tool results mixed with other content",
                        ));
                    };
                    let name = uses.get(result.tool_use_id.as_str()).copied().unwrap_or("");
                    let call = CallToolResult {
                        content: result.content.clone(),
                        structured_content: result.structured_content.clone(),
                        is_error: result.is_error,
                        ..CallToolResult::default()
                    };
                    answered.push(results::tool_result(
                        provider,
                        &result.tool_use_id,
                        name,
                        &call,
                        &ResultOptions::default(),
                    ));
                }
                transcript.extend(model::answers(provider, answered));
            }
            Role::User => transcript.push(user(provider, index, blocks)?),
            Role::Assistant => {
                for block in blocks {
                    if let ContentBlock::ToolUse(used) = block {
                        uses.insert(&used.id, &used.name);
                    }
                }
                transcript.extend(assistant(provider, index, blocks)?);
            }
        }
    }
    let tools = match params.tools.as_deref() {
        Some(tools) if !tools.is_empty() => {
            let mut definitions = Vec::with_capacity(tools.len());
            for tool in tools {
                if !valid_name(&tool.name) {
                    return Err(HandlerError::InvalidParams(format!(
                        "tool name `{}` is not one a model API takes (1 to 64 of a-z, A-Z, 0-9, _ and -)",
                        tool.name.escape_debug()
                    )));
                }
                definitions.push(
                    definition_json(provider, &tool.name, tool, &DefinitionOptions::default()).0,
                );
            }
            let refs: Vec<&RawValue> = definitions.iter().map(|d| &**d).collect();
            Some(crate::toolset::joined(provider, &refs))
        }
        _ => None,
    };
    Ok(SamplingTurn {
        transcript,
        system: params.system_prompt.clone().filter(|s| !s.is_empty()),
        fields: fields(provider, params, tools.is_some()),
        tools,
    })
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `maxTokens`, `temperature`, stop sequences and `toolChoice` under the
/// API's names.
fn fields(
    provider: Provider,
    params: &CreateMessageRequestParams,
    tools: bool,
) -> Map<String, Value> {
    let mut fields = Map::new();
    let stop = params.stop_sequences.as_ref().filter(|s| !s.is_empty());
    let mode = params.tool_choice.as_ref().and_then(|c| c.mode.clone());
    match provider {
        Provider::Gemini => {
            let mut config = Map::new();
            config.insert("maxOutputTokens".into(), json!(params.max_tokens));
            if let Some(t) = params.temperature {
                config.insert("temperature".into(), json!(t));
            }
            if let Some(stop) = stop {
                config.insert("stopSequences".into(), json!(stop));
            }
            fields.insert("generationConfig".into(), Value::Object(config));
            if let (true, Some(mode)) = (tools, mode) {
                let mode = match mode {
                    ToolChoiceMode::Required => "ANY",
                    ToolChoiceMode::None => "NONE",
                    _ => "AUTO",
                };
                fields.insert(
                    "toolConfig".into(),
                    json!({"functionCallingConfig": {"mode": mode}}),
                );
            }
        }
        _ => {
            let max = match provider {
                Provider::OpenAiResponses => "max_output_tokens",
                _ => "max_tokens",
            };
            fields.insert(max.into(), json!(params.max_tokens));
            if let Some(t) = params.temperature {
                fields.insert("temperature".into(), json!(t));
            }
            match (provider, stop) {
                (Provider::OpenAiChat, Some(stop)) => {
                    fields.insert("stop".into(), json!(stop));
                }
                (Provider::Anthropic, Some(stop)) => {
                    fields.insert("stop_sequences".into(), json!(stop));
                }
                // The Responses API has no stop sequences.
                _ => {}
            }
            if let (true, Some(mode)) = (tools, mode) {
                let choice = match (provider, mode) {
                    (Provider::Anthropic, ToolChoiceMode::Required) => json!({"type": "any"}),
                    (Provider::Anthropic, ToolChoiceMode::None) => json!({"type": "none"}),
                    (Provider::Anthropic, _) => json!({"type": "auto"}),
                    (_, ToolChoiceMode::Required) => json!("required"),
                    (_, ToolChoiceMode::None) => json!("none"),
                    (_, _) => json!("auto"),
                };
                fields.insert("tool_choice".into(), choice);
            }
        }
    }
    fields
}

/// A user message of text, images and audio.
fn user(provider: Provider, index: usize, blocks: &[ContentBlock]) -> Result<Value, HandlerError> {
    if let ([ContentBlock::Text(text)], false) = (blocks, provider == Provider::Gemini) {
        return Ok(json!({"role": "user", "content": text.text}));
    }
    let mut parts = Vec::with_capacity(blocks.len());
    for block in blocks {
        parts.push(match (provider, block) {
            (Provider::Gemini, ContentBlock::Text(t)) => json!({"text": t.text}),
            (Provider::Gemini, ContentBlock::Image(i)) => {
                json!({"inlineData": {"mimeType": i.mime_type, "data": i.data}})
            }
            (Provider::Gemini, ContentBlock::Audio(a)) => {
                json!({"inlineData": {"mimeType": a.mime_type, "data": a.data}})
            }
            (Provider::Anthropic, ContentBlock::Text(t)) => json!({"type": "text", "text": t.text}),
            (Provider::Anthropic, ContentBlock::Image(i)) => json!({
                "type": "image",
                "source": {"type": "base64", "media_type": i.mime_type, "data": i.data},
            }),
            (Provider::OpenAiResponses, ContentBlock::Text(t)) => {
                json!({"type": "input_text", "text": t.text})
            }
            (Provider::OpenAiResponses, ContentBlock::Image(i)) => json!({
                "type": "input_image",
                "image_url": format!("data:{};base64,{}", i.mime_type, i.data),
            }),
            (Provider::OpenAiChat, ContentBlock::Text(t)) => {
                json!({"type": "text", "text": t.text})
            }
            (Provider::OpenAiChat, ContentBlock::Image(i)) => json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{};base64,{}", i.mime_type, i.data)},
            }),
            (Provider::OpenAiChat, ContentBlock::Audio(a)) => {
                let format = match a.mime_type.as_str() {
                    "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
                    "audio/mpeg" | "audio/mp3" => "mp3",
                    other => {
                        return Err(refuse(
                            index,
                            provider,
                            &format!("audio of type {other} (only wav and mp3)"),
                        ));
                    }
                };
                json!({"type": "input_audio", "input_audio": {"data": a.data, "format": format}})
            }
            (_, other) => {
                return Err(refuse(
                    index,
                    provider,
                    &format!("{} content", other.kind().unwrap_or("unknown")),
                ));
            }
        });
    }
    Ok(match provider {
        Provider::Gemini => json!({"role": "user", "parts": parts}),
        _ => json!({"role": "user", "content": parts}),
    })
}

/// An assistant message of text and tool uses, as the API's entries.
fn assistant(
    provider: Provider,
    index: usize,
    blocks: &[ContentBlock],
) -> Result<Vec<Value>, HandlerError> {
    let mut text = String::new();
    let mut uses: Vec<&ToolUseContent> = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ToolUse(used) => uses.push(used),
            other => {
                return Err(refuse(
                    index,
                    provider,
                    &format!(
                        "{} content in an assistant message",
                        other.kind().unwrap_or("unknown")
                    ),
                ));
            }
        }
    }
    let arguments = |used: &ToolUseContent| Value::Object(used.input.clone()).to_string();
    Ok(match provider {
        Provider::OpenAiChat => {
            let mut message = json!({
                "role": "assistant",
                "content": if text.is_empty() && !uses.is_empty() { Value::Null } else { json!(text) },
            });
            if !uses.is_empty() {
                message["tool_calls"] = uses
                    .iter()
                    .map(|u| {
                        json!({"id": u.id, "type": "function",
                                    "function": {"name": u.name, "arguments": arguments(u)}})
                    })
                    .collect();
            }
            vec![message]
        }
        Provider::OpenAiResponses => {
            let mut items = Vec::new();
            if !text.is_empty() {
                items.push(json!({"role": "assistant", "content": [{"type": "output_text", "text": text}]}));
            }
            items.extend(uses.iter().map(|u| {
                json!({"type": "function_call", "call_id": u.id, "name": u.name, "arguments": arguments(u)})
            }));
            items
        }
        Provider::Anthropic => {
            let mut content = Vec::new();
            if !text.is_empty() {
                content.push(json!({"type": "text", "text": text}));
            }
            content.extend(uses.iter().map(
                |u| json!({"type": "tool_use", "id": u.id, "name": u.name, "input": u.input}),
            ));
            vec![json!({"role": "assistant", "content": content})]
        }
        Provider::Gemini => {
            let mut parts = Vec::new();
            if !text.is_empty() {
                parts.push(json!({"text": text}));
            }
            parts.extend(
                uses.iter().map(
                    |u| json!({"functionCall": {"name": u.name, "args": u.input, "id": u.id}}),
                ),
            );
            vec![json!({"role": "model", "parts": parts})]
        }
    })
}

/// The sampling result of a turn: its text, its tool calls as `tool_use`
/// blocks (their arguments an object, whatever the model sent), the model
/// that answered, and the stop reason (`toolUse` when it asks for tools;
/// else the API's reason as `endTurn`, `maxTokens`, `stopSequence`, or as
/// given).
pub fn sampling_result_of(turn: &ModelTurn, model: &str) -> CreateMessageResult {
    let mut blocks = Vec::new();
    if !turn.text.is_empty() || turn.calls.is_empty() {
        blocks.push(ContentBlock::text(turn.text.clone()));
    }
    for (n, call) in turn.calls.iter().enumerate() {
        let input = match &call.arguments {
            Value::Object(map) => map.clone(),
            Value::String(text) => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            },
            _ => Map::new(),
        };
        blocks.push(ContentBlock::ToolUse(ToolUseContent {
            id: if call.id.is_empty() {
                format!("toolu_{n}")
            } else {
                call.id.clone()
            },
            name: call.name.clone(),
            input,
            ..ToolUseContent::default()
        }));
    }
    let stop = if !turn.calls.is_empty() {
        "toolUse".to_owned()
    } else {
        match turn.stop.as_deref() {
            None | Some("stop" | "end_turn" | "STOP" | "completed") => "endTurn".to_owned(),
            Some("length" | "max_tokens" | "MAX_TOKENS" | "incomplete") => "maxTokens".to_owned(),
            Some("stop_sequence") => "stopSequence".to_owned(),
            Some(other) => other.to_owned(),
        }
    };
    CreateMessageResult {
        role: Role::Assistant,
        content: if blocks.len() == 1 {
            blocks.remove(0).into()
        } else {
            blocks.into()
        },
        model: turn.model.clone().unwrap_or_else(|| model.to_owned()),
        stop_reason: Some(stop),
        meta: None,
        extra: Default::default(),
    }
}
