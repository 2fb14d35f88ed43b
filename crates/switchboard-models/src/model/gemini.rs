//! A turn on the Gemini API (`…:streamGenerateContent?alt=sse`): the
//! transcript as `contents`, the system prompt as `systemInstruction`; the
//! streamed chunks' parts assembled — text pieces joined, `functionCall`
//! parts (which arrive whole) kept as sent, their `thoughtSignature`
//! included, as the API wants them back — until a chunk carries a
//! `finishReason`. A prompt the API blocks is an error saying why.

use serde_json::{Value, json};

use super::{Body, ModelCall, ModelRequest, ModelTurn, StreamEvent, cut, event_json, head, usage};
use crate::chat::{ChatClient, ChatError, Flow, Streamed};

pub(super) async fn turn(
    client: &ChatClient,
    request: &ModelRequest<'_>,
) -> Result<ModelTurn, ChatError> {
    let body = Body {
        head: head(
            None,
            &[(
                "systemInstruction",
                request.system.map(|s| json!({"parts": [{"text": s}]})),
            )],
        ),
        key: "contents",
        first: None,
        request,
    };

    let mut parts: Vec<Value> = Vec::new();
    let mut finish: Option<String> = None;
    let mut tokens = None;
    let mut answered: Option<String> = None;
    let streamed = client
        .stream(&body, |_, data| {
            let chunk = event_json(client, data)?;
            if answered.is_none() {
                answered = chunk["modelVersion"].as_str().map(str::to_owned);
            }
            take_chunk(
                client,
                request,
                &chunk,
                &mut parts,
                &mut finish,
                &mut tokens,
            )?;
            Ok(if finish.is_some() {
                Flow::Done
            } else {
                Flow::More
            })
        })
        .await?;
    match streamed {
        Streamed::Whole(answer) => {
            // `generateContent` answers one object; some proxies stream a
            // JSON array of chunks instead.
            let chunks = match answer {
                Value::Array(chunks) => chunks,
                one => vec![one],
            };
            for chunk in &chunks {
                if answered.is_none() {
                    answered = chunk["modelVersion"].as_str().map(str::to_owned);
                }
                take_chunk(client, request, chunk, &mut parts, &mut finish, &mut tokens)?;
            }
            if finish.is_none() {
                return Err(super::malformed(
                    client,
                    "the answer has no `finishReason`",
                    &Value::Array(chunks).to_string(),
                ));
            }
        }
        Streamed::Ended if finish.is_none() => return Err(cut(client, "no `finishReason`")),
        Streamed::Events | Streamed::Ended => {}
    }
    let mut text = String::new();
    let mut calls = Vec::new();
    for part in &mut parts {
        if part["thought"] == true {
            continue;
        }
        if let Some(piece) = part["text"].as_str() {
            text.push_str(piece);
        }
        if let Some(call) = part.get_mut("functionCall") {
            calls.push(ModelCall {
                id: call["id"].as_str().unwrap_or_default().to_owned(),
                name: call["name"].as_str().unwrap_or_default().to_owned(),
                arguments: call.get("args").cloned().unwrap_or_else(|| json!({})),
            });
            // The transcript must hold an object, whatever was sent.
            if call.get("args").is_some_and(|a| !a.is_object()) {
                call["args"] = json!({});
            }
        }
    }
    Ok(ModelTurn {
        text,
        calls,
        items: vec![json!({"role": "model", "parts": parts})],
        stop: finish,
        usage: tokens,
        model: answered,
    })
}

/// One chunk's parts into `parts` (a text piece joined to the text part
/// before it when neither carries anything else), its finish reason and
/// usage noted.
fn take_chunk(
    client: &ChatClient,
    request: &ModelRequest<'_>,
    chunk: &Value,
    parts: &mut Vec<Value>,
    finish: &mut Option<String>,
    tokens: &mut Option<(u64, u64)>,
) -> Result<(), ChatError> {
    if let Some(error) = chunk.get("error") {
        return Err(ChatError::Stream {
            url: client.url().to_owned(),
            reason: format!(
                "the endpoint sent an error: {}",
                error["message"].as_str().unwrap_or("no message")
            ),
            retryable: matches!(error["code"].as_u64(), Some(429 | 500..=599)),
        });
    }
    if let Some(blocked) = chunk["promptFeedback"]["blockReason"].as_str() {
        return Err(ChatError::Stream {
            url: client.url().to_owned(),
            reason: format!("the prompt was blocked ({blocked})"),
            retryable: false,
        });
    }
    if let Some(found) = chunk
        .get("usageMetadata")
        .and_then(|u| usage(u, "promptTokenCount", "candidatesTokenCount"))
    {
        *tokens = Some(found);
    }
    let Some(candidate) = chunk.get("candidates").and_then(|c| c.get(0)) else {
        return Ok(());
    };
    for part in candidate["content"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let plain_text = |p: &Value| {
            p.as_object()
                .is_some_and(|o| o.len() == 1 && o.get("text").is_some_and(Value::is_string))
        };
        if let Some(piece) = part["text"].as_str()
            && part["thought"] != true
        {
            request.tell(StreamEvent::Text(piece.to_owned()));
        }
        if let Some(call) = part.get("functionCall") {
            let id = call["id"].as_str().unwrap_or_default().to_owned();
            request.tell(StreamEvent::CallStarted {
                id: id.clone(),
                name: call["name"].as_str().unwrap_or_default().to_owned(),
            });
            request.tell(StreamEvent::CallArguments {
                id,
                delta: call.get("args").map(Value::to_string).unwrap_or_default(),
            });
        }
        match parts.last_mut() {
            Some(last) if plain_text(last) && plain_text(part) => {
                let joined = format!(
                    "{}{}",
                    last["text"].as_str().unwrap_or_default(),
                    part["text"].as_str().unwrap_or_default()
                );
                *last = json!({"text": joined});
            }
            _ => parts.push(part.clone()),
        }
    }
    if let Some(reason) = candidate["finishReason"].as_str() {
        *finish = Some(reason.to_owned());
    }
    Ok(())
}
