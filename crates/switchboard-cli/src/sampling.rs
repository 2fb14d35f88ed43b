//! Sampling from the command line: declined with the reason, unless an
//! OpenAI-compatible endpoint is configured (`--sampling-url`), in which
//! case each request is shown to the user and sent only with their consent
//! (or `--yes`).

use std::sync::Arc;
use std::time::Duration;

use inquire::{Confirm, InquireError};
use serde_json::{Map, Value, json};
use switchboard::handlers::BoxFuture;
use switchboard::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use switchboard::types::{ContentBlock, Role};
use switchboard::{HandlerContext, HandlerError, SamplingHandler};

use crate::ui::Ui;

/// Where sampling requests go.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    /// The full `…/chat/completions` URL.
    pub(crate) url: String,
    pub(crate) model: String,
    /// The API key (never printed).
    pub(crate) key: Option<String>,
    /// The environment variable the key came from, for messages.
    pub(crate) key_env: String,
}

impl Endpoint {
    /// `base` may be the API root (`…/v1`) or the full completions URL.
    pub(crate) fn new(base: &str, model: String, key_env: String) -> Self {
        let base = base.trim_end_matches('/');
        let url = if base.ends_with("/chat/completions") {
            base.to_owned()
        } else {
            format!("{base}/chat/completions")
        };
        let key = std::env::var(&key_env).ok().filter(|k| !k.is_empty());
        Self {
            url,
            model,
            key,
            key_env,
        }
    }
}

#[derive(Debug)]
pub(crate) struct CliSampling {
    pub(crate) ui: Arc<Ui>,
    pub(crate) endpoint: Option<Endpoint>,
    /// `--yes`: send without asking.
    pub(crate) preapproved: bool,
    pub(crate) http: reqwest::Client,
}

impl SamplingHandler for CliSampling {
    fn create_message(
        &self,
        context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        let ui = self.ui.clone();
        let endpoint = self.endpoint.clone();
        let preapproved = self.preapproved;
        let http = self.http.clone();
        Box::pin(async move {
            let server = context.server.to_string();
            let Some(endpoint) = endpoint else {
                let message = "no model is configured; pass --sampling-url URL \
                               --sampling-model NAME (an OpenAI-compatible endpoint) to answer \
                               sampling requests"
                    .to_owned();
                ui.notice(&format!(
                    "declined server `{server}`'s sampling request: {message}"
                ));
                return Err(HandlerError::Rejected(message));
            };
            if !preapproved {
                if let Err(why) = ui.can_prompt() {
                    let message = format!(
                        "server `{server}`'s sampling request was not sent to {}: nobody could \
                         approve it ({}); pass --yes to send sampling requests without asking",
                        endpoint.url,
                        why.reason()
                    );
                    ui.notice(&message);
                    return Err(HandlerError::Rejected(message));
                }
                let summary = summary(&server, &params, &endpoint, ui.styled());
                let question = format!("Send it to {}?", endpoint.url);
                let approved = ui
                    .prompt(move || {
                        eprintln!("{summary}");
                        Confirm::new(&question)
                            .with_default(false)
                            .with_help_message("no declines the request")
                            .prompt()
                    })
                    .await
                    .map_err(HandlerError::Failed)?;
                match approved {
                    Ok(true) => {}
                    Ok(false)
                    | Err(InquireError::OperationCanceled | InquireError::OperationInterrupted) => {
                        return Err(HandlerError::Rejected(
                            "the user declined the sampling request".into(),
                        ));
                    }
                    Err(error) => {
                        return Err(HandlerError::Failed(format!(
                            "the terminal prompt failed: {error}"
                        )));
                    }
                }
            }
            let result = sample(&http, &endpoint, &params).await?;
            let text: usize = result
                .content
                .blocks()
                .iter()
                .filter_map(ContentBlock::as_text)
                .map(str::len)
                .sum();
            ui.notice(&format!(
                "answered server `{server}`'s sampling request with {text} bytes of text from \
                 model {}",
                result.model
            ));
            Ok(result)
        })
    }
}

/// What is about to be sent, for the user to judge.
fn summary(
    server: &str,
    params: &CreateMessageRequestParams,
    endpoint: &Endpoint,
    styled: bool,
) -> String {
    let mut out = String::new();
    let head = format!(
        "Server `{server}` wants model {} to answer {} message(s) (at most {} tokens):",
        endpoint.model,
        params.messages.len(),
        params.max_tokens
    );
    out.push('\n');
    if styled {
        out.push_str(&format!("\x1b[1m{head}\x1b[0m"));
    } else {
        out.push_str(&head);
    }
    if let Some(system) = &params.system_prompt {
        out.push_str(&format!("\n  system: {}", shorten(system)));
    }
    for message in &params.messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for block in message.content.blocks() {
            let shown = match block {
                ContentBlock::Text(t) => shorten(&t.text),
                ContentBlock::Image(i) => format!("[image {}]", i.mime_type),
                ContentBlock::Audio(a) => format!("[audio {}]", a.mime_type),
                other => format!("[{}]", other.kind().unwrap_or("unknown")),
            };
            out.push_str(&format!("\n  {role}: {shown}"));
        }
    }
    out
}

fn shorten(text: &str) -> String {
    const MAX: usize = 400;
    let one_line = text.replace('\n', " ⏎ ");
    if one_line.chars().count() > MAX {
        let cut: String = one_line.chars().take(MAX).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// The OpenAI chat-completions request for a sampling request.
pub(crate) fn chat_request(
    params: &CreateMessageRequestParams,
    model: &str,
) -> Result<Value, HandlerError> {
    let mut messages = Vec::new();
    if let Some(system) = params.system_prompt.as_ref().filter(|s| !s.is_empty()) {
        messages.push(json!({"role": "system", "content": system}));
    }
    for (index, message) in params.messages.iter().enumerate() {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let blocks = message.content.blocks();
        let content = if let [ContentBlock::Text(text)] = blocks {
            Value::String(text.text.clone())
        } else {
            let mut parts = Vec::new();
            for block in blocks {
                parts.push(match block {
                    ContentBlock::Text(t) => json!({"type": "text", "text": t.text}),
                    ContentBlock::Image(i) => json!({
                        "type": "image_url",
                        "image_url": {"url": format!("data:{};base64,{}", i.mime_type, i.data)},
                    }),
                    ContentBlock::Audio(a) => {
                        let format = match a.mime_type.as_str() {
                            "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
                            "audio/mpeg" | "audio/mp3" => "mp3",
                            other => {
                                return Err(HandlerError::InvalidParams(format!(
                                    "message {index}: audio of type {other} cannot be sent to \
                                     an OpenAI-compatible endpoint (only wav and mp3)"
                                )));
                            }
                        };
                        json!({"type": "input_audio", "input_audio": {"data": a.data, "format": format}})
                    }
                    other => {
                        return Err(HandlerError::InvalidParams(format!(
                            "message {index}: {} content cannot be sent to an OpenAI-compatible \
                             endpoint by switchboard",
                            other.kind().unwrap_or("unknown")
                        )));
                    }
                });
            }
            Value::Array(parts)
        };
        messages.push(json!({"role": role, "content": content}));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("max_tokens".into(), json!(params.max_tokens));
    if let Some(temperature) = params.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(stop) = params.stop_sequences.as_ref().filter(|s| !s.is_empty()) {
        body.insert("stop".into(), json!(stop));
    }
    Ok(Value::Object(body))
}

/// The sampling result for a chat-completions answer.
pub(crate) fn sampling_result(
    answer: &Value,
    model: &str,
) -> Result<CreateMessageResult, HandlerError> {
    let choice = answer
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| {
            HandlerError::Failed("the sampling endpoint's answer has no choices".into())
        })?;
    let message = &choice["message"];
    let text = match &message["content"] {
        Value::String(text) => text.clone(),
        // Some servers answer with content parts.
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    let stop_reason = match choice["finish_reason"].as_str() {
        Some("stop") | None => "endTurn".to_owned(),
        Some("length") => "maxTokens".to_owned(),
        Some("tool_calls") | Some("function_call") => "toolUse".to_owned(),
        Some(other) => other.to_owned(),
    };
    Ok(CreateMessageResult {
        role: Role::Assistant,
        content: ContentBlock::text(text).into(),
        model: answer
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(model)
            .to_owned(),
        stop_reason: Some(stop_reason),
        meta: None,
        extra: Map::new(),
    })
}

async fn sample(
    http: &reqwest::Client,
    endpoint: &Endpoint,
    params: &CreateMessageRequestParams,
) -> Result<CreateMessageResult, HandlerError> {
    let body = chat_request(params, &endpoint.model)?;
    let mut request = http
        .post(&endpoint.url)
        .timeout(Duration::from_secs(300))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    if let Some(key) = &endpoint.key {
        request = request.bearer_auth(key);
    }
    let failed = |what: String| HandlerError::Failed(format!("the sampling endpoint {what}"));
    let response = request.send().await.map_err(|e| {
        failed(format!(
            "{} could not be reached: {}",
            endpoint.url,
            e.without_url()
        ))
    })?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| failed(format!("answer could not be read: {}", e.without_url())))?;
    if !status.is_success() {
        let hint = if matches!(status.as_u16(), 401 | 403) {
            format!(" (is the key in ${} right?)", endpoint.key_env)
        } else {
            String::new()
        };
        let detail: String = text.chars().take(300).collect();
        return Err(failed(format!(
            "{} answered HTTP {status}{hint}: {detail}",
            endpoint.url
        )));
    }
    let answer: Value = serde_json::from_str(&text)
        .map_err(|e| failed(format!("answered with something that is not JSON: {e}")))?;
    sampling_result(&answer, &endpoint.model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translates_to_chat_completions_and_back() {
        let params: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "assistant", "content": {"type": "text", "text": "hello"}},
                {"role": "user", "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"}
                ]}
            ],
            "systemPrompt": "be brief",
            "maxTokens": 50,
            "temperature": 0.5,
            "stopSequences": ["END"]
        }))
        .unwrap();
        let body = chat_request(&params, "m").unwrap();
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "hello"},
                    {"role": "user", "content": [
                        {"type": "text", "text": "what is this?"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
                    ]}
                ],
                "max_tokens": 50,
                "temperature": 0.5,
                "stop": ["END"]
            })
        );
        let result = sampling_result(
            &json!({"model": "gpt-x", "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "length"}]}),
            "m",
        )
        .unwrap();
        assert_eq!(result.model, "gpt-x");
        assert_eq!(result.stop_reason.as_deref(), Some("maxTokens"));
        assert_eq!(result.content.blocks()[0].as_text(), Some("ok"));
    }

    #[test]
    fn the_endpoint_url_takes_a_base_or_the_full_path() {
        let a = Endpoint::new("http://h/v1/", "m".into(), "SB_TEST_NO_SUCH_VAR".into());
        assert_eq!(a.url, "http://h/v1/chat/completions");
        assert!(a.key.is_none());
        let b = Endpoint::new("http://h/v1/chat/completions", "m".into(), "X".into());
        assert_eq!(b.url, "http://h/v1/chat/completions");
    }
}
