//! A turn on the Anthropic Messages API: `system` beside the messages,
//! `max_tokens` (the request's, else 4096), the streamed content blocks
//! assembled — text deltas, and each `tool_use` from its start and its
//! `input_json_delta` pieces — until `message_stop`. An `error` event
//! (`overloaded_error` and the like) ends the turn with an error, marked
//! retryable when the API says it is overloaded or busy.

use serde_json::{Value, json};

use super::{Body, ModelCall, ModelRequest, ModelTurn, StreamEvent, cut, event_json, head, usage};
use crate::chat::{ChatClient, ChatError, Flow, Streamed};

/// `max_tokens` when the request does not say: Anthropic requires one.
const DEFAULT_MAX_TOKENS: u64 = 4096;

/// A content block being streamed.
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    /// Kept as sent (thinking, and blocks this client does not know).
    Other(Value),
}

pub(super) async fn turn(
    client: &ChatClient,
    request: &ModelRequest<'_>,
) -> Result<ModelTurn, ChatError> {
    let body = Body {
        head: head(
            Some(client.model()),
            &[
                ("max_tokens", Some(json!(DEFAULT_MAX_TOKENS))),
                ("system", request.system.map(|s| json!(s))),
                ("stream", Some(json!(true))),
            ],
        ),
        key: "messages",
        first: None,
        request,
    };

    let mut blocks: Vec<Block> = Vec::new();
    let mut stop: Option<String> = None;
    let (mut input_tokens, mut output_tokens) = (None, None);
    let mut answered: Option<String> = None;
    let streamed = client
        .stream(&body, |name, data| {
            let event = event_json(client, data)?;
            let kind = event["type"].as_str().or(name).unwrap_or("");
            match kind {
                "message_start" => {
                    input_tokens = event["message"]["usage"]["input_tokens"].as_u64();
                    answered = event["message"]["model"].as_str().map(str::to_owned);
                }
                "content_block_start" => {
                    let block = &event["content_block"];
                    blocks.push(match block["type"].as_str() {
                        Some("text") => {
                            Block::Text(block["text"].as_str().unwrap_or("").to_owned())
                        }
                        Some("tool_use") => {
                            let (id, name) = (
                                block["id"].as_str().unwrap_or_default().to_owned(),
                                block["name"].as_str().unwrap_or_default().to_owned(),
                            );
                            request.tell(StreamEvent::CallStarted {
                                id: id.clone(),
                                name: name.clone(),
                            });
                            Block::ToolUse {
                                id,
                                name,
                                json: String::new(),
                            }
                        }
                        _ => Block::Other(block.clone()),
                    });
                }
                "content_block_delta" => {
                    let delta = &event["delta"];
                    match (blocks.last_mut(), delta["type"].as_str()) {
                        (Some(Block::Text(text)), Some("text_delta")) => {
                            let piece = delta["text"].as_str().unwrap_or_default();
                            text.push_str(piece);
                            request.tell(StreamEvent::Text(piece.to_owned()));
                        }
                        (Some(Block::ToolUse { id, json, .. }), Some("input_json_delta")) => {
                            let piece = delta["partial_json"].as_str().unwrap_or_default();
                            json.push_str(piece);
                            request.tell(StreamEvent::CallArguments {
                                id: id.clone(),
                                delta: piece.to_owned(),
                            });
                        }
                        (Some(Block::Other(block)), Some(kind)) => {
                            // Thinking and its signature, kept whole.
                            let field = match kind {
                                "thinking_delta" => "thinking",
                                "signature_delta" => "signature",
                                _ => return Ok(Flow::More),
                            };
                            let piece = delta[field].as_str().unwrap_or_default();
                            let so_far = block[field].as_str().unwrap_or_default().to_owned();
                            block[field] = json!(so_far + piece);
                        }
                        _ => {}
                    }
                }
                "message_delta" => {
                    if let Some(reason) = event["delta"]["stop_reason"].as_str() {
                        stop = Some(reason.to_owned());
                    }
                    if let Some(tokens) = event["usage"]["output_tokens"].as_u64() {
                        output_tokens = Some(tokens);
                    }
                }
                "message_stop" => return Ok(Flow::Done),
                "error" => {
                    let error = &event["error"];
                    let kind = error["type"].as_str().unwrap_or("error");
                    return Err(ChatError::Stream {
                        url: client.url().to_owned(),
                        reason: format!(
                            "the endpoint sent an error: {kind}: {}",
                            error["message"].as_str().unwrap_or("no message")
                        ),
                        retryable: matches!(
                            kind,
                            "overloaded_error" | "api_error" | "rate_limit_error"
                        ),
                    });
                }
                _ => {}
            }
            Ok(Flow::More)
        })
        .await?;
    match streamed {
        Streamed::Whole(answer) => whole(client, &answer),
        Streamed::Ended => Err(cut(client, "no `message_stop`")),
        Streamed::Events => {
            let content: Vec<Value> = blocks
                .into_iter()
                .filter_map(|block| match block {
                    Block::Text(text) if text.is_empty() => None,
                    Block::Text(text) => Some(json!({"type": "text", "text": text})),
                    Block::ToolUse { id, name, json } => {
                        // An empty input is `{}`; one that is not JSON is
                        // kept as its text for the caller to refuse.
                        let input = if json.trim().is_empty() {
                            json!({})
                        } else {
                            serde_json::from_str::<Value>(&json).unwrap_or(Value::String(json))
                        };
                        Some(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
                    }
                    Block::Other(block) => Some(block),
                })
                .collect();
            Ok(from_content(
                content,
                stop,
                input_tokens.zip(output_tokens),
                answered,
            ))
        }
    }
}

/// A message answered whole.
fn whole(client: &ChatClient, answer: &Value) -> Result<ModelTurn, ChatError> {
    let Some(content) = answer.get("content").and_then(Value::as_array) else {
        return Err(super::malformed(
            client,
            "the answer has no `content`",
            &answer.to_string(),
        ));
    };
    Ok(from_content(
        content.clone(),
        answer["stop_reason"].as_str().map(str::to_owned),
        answer
            .get("usage")
            .and_then(|u| usage(u, "input_tokens", "output_tokens")),
        answer["model"].as_str().map(str::to_owned),
    ))
}

fn from_content(
    mut content: Vec<Value>,
    stop: Option<String>,
    usage: Option<(u64, u64)>,
    model: Option<String>,
) -> ModelTurn {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in &mut content {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("tool_use") => {
                calls.push(ModelCall {
                    id: block["id"].as_str().unwrap_or_default().to_owned(),
                    name: block["name"].as_str().unwrap_or_default().to_owned(),
                    arguments: block["input"].clone(),
                });
                // The transcript must hold an object, whatever was sent.
                if !block["input"].is_object() {
                    block["input"] = json!({});
                }
            }
            _ => {}
        }
    }
    ModelTurn {
        text,
        calls,
        items: vec![json!({"role": "assistant", "content": content})],
        stop,
        usage,
        model,
    }
}
