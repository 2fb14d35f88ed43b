//! A turn on the OpenAI Responses API: the transcript as `input` items,
//! the system prompt as `instructions`, `store: false` (every turn carries
//! its whole input, so no state is left at the provider and any
//! compatible endpoint serves it). Streamed events assembled: text deltas,
//! function calls from `response.output_item.added`, their arguments'
//! deltas and `…done` items, until `response.completed`, whose `output`
//! is what the transcript keeps (without item ids: items of a response
//! that was not stored cannot be referred to).

use serde_json::{Value, json};

use super::{Body, ModelCall, ModelRequest, ModelTurn, StreamEvent, cut, event_json, head, usage};
use crate::chat::{ChatClient, ChatError, Flow, Streamed};

pub(super) async fn turn(
    client: &ChatClient,
    request: &ModelRequest<'_>,
) -> Result<ModelTurn, ChatError> {
    let body = Body {
        head: head(
            Some(client.model()),
            &[
                ("instructions", request.system.map(|s| json!(s))),
                ("stream", Some(json!(true))),
                ("store", Some(json!(false))),
            ],
        ),
        key: "input",
        first: None,
        request,
    };

    let mut text = String::new();
    // Calls by item id, in the order they began: (item id, call).
    let mut calls: Vec<(String, ModelCall)> = Vec::new();
    let mut done: Option<Value> = None;
    let streamed = client
        .stream(&body, |name, data| {
            let event = event_json(client, data)?;
            let kind = event["type"].as_str().or(name).unwrap_or("");
            match kind {
                "response.output_text.delta" => {
                    if let Some(delta) = event["delta"].as_str() {
                        text.push_str(delta);
                        request.tell(StreamEvent::Text(delta.to_owned()));
                    }
                }
                "response.output_item.added" | "response.output_item.done" => {
                    let item = &event["item"];
                    if item["type"] == "function_call" {
                        let id = item["id"].as_str().unwrap_or_default().to_owned();
                        let call = ModelCall {
                            id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                            name: item["name"].as_str().unwrap_or_default().to_owned(),
                            arguments: json!(item["arguments"].as_str().unwrap_or_default()),
                        };
                        match calls.iter_mut().find(|(item_id, _)| *item_id == id) {
                            Some((_, known)) => *known = call,
                            None => {
                                request.tell(StreamEvent::CallStarted {
                                    id: call.id.clone(),
                                    name: call.name.clone(),
                                });
                                calls.push((id, call));
                            }
                        }
                    }
                }
                "response.function_call_arguments.delta" => {
                    let id = event["item_id"].as_str().unwrap_or_default();
                    let delta = event["delta"].as_str().unwrap_or_default();
                    if let Some((_, call)) = calls.iter_mut().find(|(item_id, _)| item_id == id) {
                        let mut arguments = call.arguments.as_str().unwrap_or_default().to_owned();
                        arguments.push_str(delta);
                        call.arguments = json!(arguments);
                        request.tell(StreamEvent::CallArguments {
                            id: call.id.clone(),
                            delta: delta.to_owned(),
                        });
                    }
                }
                "response.completed" | "response.incomplete" => {
                    done = Some(event["response"].clone());
                    return Ok(Flow::Done);
                }
                "response.failed" | "error" => {
                    let error = if kind == "error" {
                        event.clone()
                    } else {
                        event["response"]["error"].clone()
                    };
                    let message = error["message"].as_str().unwrap_or("no message");
                    let code = error["code"].as_str().unwrap_or_default();
                    return Err(ChatError::Stream {
                        url: client.url().to_owned(),
                        reason: format!("the endpoint sent an error: {message} {code}")
                            .trim()
                            .to_owned(),
                        retryable: matches!(code, "server_error" | "rate_limit_exceeded")
                            || message.contains("overloaded"),
                    });
                }
                _ => {}
            }
            Ok(Flow::More)
        })
        .await?;
    let response = match streamed {
        Streamed::Whole(answer) => answer,
        Streamed::Events => done.unwrap_or_default(),
        Streamed::Ended => return Err(cut(client, "no `response.completed`")),
    };
    from_response(client, &response, text)
}

/// The turn a whole response gives: its `output` items.
fn from_response(
    client: &ChatClient,
    response: &Value,
    streamed_text: String,
) -> Result<ModelTurn, ChatError> {
    let Some(output) = response.get("output").and_then(Value::as_array) else {
        return Err(super::malformed(
            client,
            "the response has no `output`",
            &response.to_string(),
        ));
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut items = Vec::new();
    for item in output {
        match item["type"].as_str() {
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    if let Some(piece) = part["text"].as_str() {
                        text.push_str(piece);
                    } else if let Some(refusal) = part["refusal"].as_str() {
                        text.push_str(refusal);
                    }
                }
            }
            Some("function_call") => calls.push(ModelCall {
                id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                name: item["name"].as_str().unwrap_or_default().to_owned(),
                arguments: json!(item["arguments"].as_str().unwrap_or_default()),
            }),
            // Reasoning items are kept only with their encrypted content
            // (`include`): without it, one not stored cannot be sent back.
            Some("reasoning") if item.get("encrypted_content").is_none() => continue,
            _ => {}
        }
        let mut kept = item.clone();
        if let Some(kept) = kept.as_object_mut() {
            kept.remove("id");
            kept.remove("status");
        }
        items.push(kept);
    }
    if text.is_empty() {
        text = streamed_text;
    }
    Ok(ModelTurn {
        text,
        calls,
        items,
        stop: response["status"].as_str().map(str::to_owned),
        usage: response
            .get("usage")
            .and_then(|u| usage(u, "input_tokens", "output_tokens")),
        model: response["model"].as_str().map(str::to_owned),
    })
}
