//! A turn on OpenAI Chat Completions (and the servers compatible with it):
//! `stream: true`, `chat.completion.chunk` deltas assembled — text, and
//! each tool call (by its `index`) from its id and name and its arguments'
//! pieces — until `[DONE]` or a `finish_reason`. A server that answers
//! with one `chat.completion` instead is read the same way.

use serde_json::{Map, Value, json};

use super::{Body, ModelCall, ModelRequest, ModelTurn, StreamEvent, cut, event_json, head, usage};
use crate::chat::{ChatClient, ChatError, Flow, Streamed};

#[derive(Default)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

pub(super) async fn turn(
    client: &ChatClient,
    request: &ModelRequest<'_>,
) -> Result<ModelTurn, ChatError> {
    let has_system = request
        .transcript
        .first()
        .is_some_and(|m| m["role"] == "system" || m["role"] == "developer");
    let body = Body {
        head: head(Some(client.model()), &[("stream", Some(json!(true)))]),
        key: "messages",
        first: request
            .system
            .filter(|_| !has_system)
            .map(|system| json!({"role": "system", "content": system})),
        request,
    };

    let mut text = String::new();
    let mut calls: Vec<Call> = Vec::new();
    let mut finish: Option<String> = None;
    let mut tokens = None;
    let mut answered: Option<String> = None;
    let streamed = client
        .stream(&body, |_, data| {
            if data.trim() == "[DONE]" {
                return Ok(Flow::Done);
            }
            let chunk = event_json(client, data)?;
            if let Some(error) = chunk.get("error") {
                return Err(ChatError::Stream {
                    url: client.url().to_owned(),
                    reason: format!("the endpoint sent an error: {error}"),
                    retryable: false,
                });
            }
            if answered.is_none() {
                answered = chunk["model"].as_str().map(str::to_owned);
            }
            if let Some(found) = chunk
                .get("usage")
                .and_then(|u| usage(u, "prompt_tokens", "completion_tokens"))
            {
                tokens = Some(found);
            }
            let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
                return Ok(Flow::More);
            };
            let delta = &choice["delta"];
            if let Some(piece) = delta["content"].as_str().filter(|p| !p.is_empty()) {
                text.push_str(piece);
                request.tell(StreamEvent::Text(piece.to_owned()));
            }
            if let Some(pieces) = delta["tool_calls"].as_array() {
                for (n, piece) in pieces.iter().enumerate() {
                    let index = piece["index"].as_u64().map_or(n, |i| i as usize);
                    if index > 1024 {
                        continue;
                    }
                    while calls.len() <= index {
                        calls.push(Call::default());
                    }
                    let call = &mut calls[index];
                    let started = call.name.is_empty();
                    if let Some(id) = piece["id"].as_str() {
                        call.id = id.to_owned();
                    }
                    if let Some(name) = piece["function"]["name"].as_str() {
                        call.name.push_str(name);
                    }
                    if started && !call.name.is_empty() {
                        request.tell(StreamEvent::CallStarted {
                            id: call.id.clone(),
                            name: call.name.clone(),
                        });
                    }
                    if let Some(arguments) = piece["function"]["arguments"].as_str() {
                        call.arguments.push_str(arguments);
                        request.tell(StreamEvent::CallArguments {
                            id: call.id.clone(),
                            delta: arguments.to_owned(),
                        });
                    }
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                finish = Some(reason.to_owned());
            }
            Ok(Flow::More)
        })
        .await?;
    match streamed {
        Streamed::Whole(answer) => whole(client, &answer),
        Streamed::Ended if finish.is_none() => {
            Err(cut(client, "no `[DONE]` and no `finish_reason`"))
        }
        Streamed::Events | Streamed::Ended => {
            let calls: Vec<ModelCall> = calls
                .into_iter()
                .filter(|c| !c.name.is_empty() || !c.arguments.is_empty())
                .map(|c| ModelCall {
                    id: c.id,
                    name: c.name,
                    arguments: Value::String(c.arguments),
                })
                .collect();
            let message = assistant(&text, &calls);
            Ok(ModelTurn {
                text,
                calls,
                items: vec![message],
                stop: finish,
                usage: tokens,
                model: answered,
            })
        }
    }
}

/// The assistant message the transcript keeps for a turn.
fn assistant(text: &str, calls: &[ModelCall]) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) },
    });
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
    }
    message
}

/// A `chat.completion` answered whole.
fn whole(client: &ChatClient, answer: &Value) -> Result<ModelTurn, ChatError> {
    let choice = answer.get("choices").and_then(|c| c.get(0));
    let Some(message) = choice
        .and_then(|c| c.get("message"))
        .and_then(Value::as_object)
    else {
        return Err(super::malformed(
            client,
            "the answer has no `choices[0].message`",
            &answer.to_string(),
        ));
    };
    let text = message_text(message);
    let calls: Vec<ModelCall> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|call| ModelCall {
            id: call["id"].as_str().unwrap_or_default().to_owned(),
            name: call["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            arguments: call["function"]["arguments"].clone(),
        })
        .collect();
    let mut kept = Value::Object(message.clone());
    if calls.iter().any(|c| c.id.is_empty()) {
        kept = assistant(&text, &calls);
    }
    Ok(ModelTurn {
        text,
        calls,
        items: vec![kept],
        stop: choice
            .and_then(|c| c["finish_reason"].as_str())
            .map(str::to_owned),
        usage: answer
            .get("usage")
            .and_then(|u| usage(u, "prompt_tokens", "completion_tokens")),
        model: answer["model"].as_str().map(str::to_owned),
    })
}

/// A message's text: its `content` string, or its text parts joined; its
/// refusal when it has no content.
pub(crate) fn message_text(message: &Map<String, Value>) -> String {
    match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => message
            .get("refusal")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_text_parts_or_refusals() {
        let m = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(message_text(&m(json!({"content": "hi"}))), "hi");
        assert_eq!(
            message_text(&m(
                json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
            )),
            "ab"
        );
        assert_eq!(
            message_text(&m(json!({"content": null, "refusal": "no"}))),
            "no"
        );
    }
}
