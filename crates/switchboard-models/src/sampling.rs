//! The chat endpoint as the handler of servers' `sampling/createMessage`
//! requests: [`ChatSampling`], and the conversions it is made of
//! ([`chat_request`], [`sampling_result`]) for clients that put their own
//! consent prompt in front (the `switchboard` CLI does).
//!
//! ```no_run
//! # fn demo(hub: switchboard_hub::HubBuilder) -> Result<(), Box<dyn std::error::Error>> {
//! use switchboard_models::chat::ChatClient;
//! use switchboard_models::sampling::ChatSampling;
//!
//! let sampling = ChatSampling::new(ChatClient::new("http://127.0.0.1:8080/v1", "qwen2.5")?);
//! let hub = hub.client(move |_, client| client.sampling(sampling.clone()));
//! # Ok(()) }
//! ```
//!
//! A handler that answers without asking lets every server spend the
//! user's model: install it only for servers the user trusts with that.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value, json};
use switchboard::handlers::BoxFuture;
use switchboard::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use switchboard::types::{ContentBlock, Role};
use switchboard::{HandlerContext, HandlerError, SamplingHandler};

use crate::chat::{ChatClient, ChatError};

/// Default for [`ChatSampling::with_max_calls`].
pub const DEFAULT_MAX_CALLS: usize = 32;

/// Answers sampling requests with the model behind a [`ChatClient`],
/// without asking anyone. Cheap to clone; clones share one count of model
/// calls, at most [`ChatSampling::with_max_calls`] (default
/// [`DEFAULT_MAX_CALLS`], 32) for the handler's life: a server that keeps
/// asking cannot spend the user's model without end.
#[derive(Clone, Debug)]
pub struct ChatSampling {
    chat: ChatClient,
    calls: Arc<AtomicUsize>,
    max_calls: usize,
}

impl ChatSampling {
    /// A handler sending every request to `chat`.
    pub fn new(chat: ChatClient) -> Self {
        Self {
            chat,
            calls: Arc::default(),
            max_calls: DEFAULT_MAX_CALLS,
        }
    }

    /// Most model calls this handler and its clones make (default
    /// [`DEFAULT_MAX_CALLS`]); later requests are refused with
    /// [`HandlerError::Rejected`], naming the limit.
    #[must_use]
    pub fn with_max_calls(mut self, calls: usize) -> Self {
        self.max_calls = calls;
        self
    }

    /// Model calls made so far (refused ones not counted).
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed).min(self.max_calls)
    }

    /// The chat client.
    pub fn chat(&self) -> &ChatClient {
        &self.chat
    }

    /// Sends one sampling request and converts the answer.
    ///
    /// # Errors
    /// [`HandlerError::InvalidParams`] for content the endpoint cannot take
    /// (see [`chat_request`]); [`HandlerError::Rejected`] past the limit of
    /// model calls; [`HandlerError::Failed`] when the endpoint
    /// fails (the message says how) or answers without a choice.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request.
    pub async fn sample(
        &self,
        params: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, HandlerError> {
        let body = chat_request(params, self.chat.model())?;
        if self.calls.fetch_add(1, Ordering::Relaxed) >= self.max_calls {
            return Err(HandlerError::Rejected(format!(
                "this run has already made {} model calls for servers' sampling requests, its limit (ChatSampling::with_max_calls)",
                self.max_calls
            )));
        }
        let answer = self
            .chat
            .complete(&body)
            .await
            .map_err(|e| HandlerError::Failed(describe(&e)))?;
        sampling_result(&answer, self.chat.model())
    }
}

/// A chat error and its cause on one line: a handler error has no source.
fn describe(error: &ChatError) -> String {
    match std::error::Error::source(error) {
        Some(source) => format!("{error}: {source}"),
        None => error.to_string(),
    }
}

impl SamplingHandler for ChatSampling {
    fn create_message(
        &self,
        context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        let this = self.clone();
        Box::pin(async move {
            tracing::info!(
                server = %context.server,
                messages = params.messages.len(),
                max_tokens = params.max_tokens,
                "sampling request sent to the chat endpoint"
            );
            this.sample(&params).await
        })
    }
}

/// The Chat Completions request for a sampling request: the system prompt,
/// the messages (text as a string, images as `image_url` data URLs, wav
/// and mp3 audio as `input_audio`), `max_tokens`, `temperature`, `stop`.
///
/// # Errors
/// [`HandlerError::InvalidParams`] for content a Chat Completions endpoint
/// cannot take (other audio formats, resources, tool use), naming the
/// message.
pub fn chat_request(
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
                parts.push(content_part(index, block)?);
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

fn content_part(index: usize, block: &ContentBlock) -> Result<Value, HandlerError> {
    Ok(match block {
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
                        "message {index}: audio of type {other} cannot be sent to an \
                         OpenAI-compatible endpoint (only wav and mp3)"
                    )));
                }
            };
            json!({"type": "input_audio", "input_audio": {"data": a.data, "format": format}})
        }
        other => {
            return Err(HandlerError::InvalidParams(format!(
                "message {index}: {} content cannot be sent to an OpenAI-compatible endpoint \
                 by switchboard",
                other.kind().unwrap_or("unknown")
            )));
        }
    })
}

/// The sampling result for a Chat Completions answer: the first choice's
/// text, the model that answered (else `model`), and the stop reason
/// (`stop` → `endTurn`, `length` → `maxTokens`, tool calls → `toolUse`,
/// others as given).
///
/// # Errors
/// [`HandlerError::Failed`] when the answer has no choice.
pub fn sampling_result(answer: &Value, model: &str) -> Result<CreateMessageResult, HandlerError> {
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
        extra: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(value: Value) -> CreateMessageRequestParams {
        serde_json::from_value(value).unwrap()
    }

    #[tokio::test]
    async fn model_calls_stop_at_the_limit() {
        // Nothing listens on the discard port: each call that is made
        // fails fast, which is enough to count it.
        let chat = ChatClient::new("http://127.0.0.1:9/v1", "m").unwrap();
        let sampling = ChatSampling::new(chat).with_max_calls(2);
        let clone = sampling.clone();
        let request = params(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}));
        for handler in [&sampling, &clone] {
            let error = handler.sample(&request).await.unwrap_err();
            assert!(matches!(error, HandlerError::Failed(_)), "{error}");
        }
        let error = sampling.sample(&request).await.unwrap_err();
        let HandlerError::Rejected(message) = &error else {
            panic!("{error}");
        };
        assert!(message.contains("2 model calls"), "{message}");
        assert!(message.contains("with_max_calls"), "{message}");
        assert_eq!(sampling.calls(), 2);
    }

    #[test]
    fn translates_to_chat_completions_and_back() {
        let params = params(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "assistant", "content": {"type": "text", "text": "hello"}},
                {"role": "user", "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                    {"type": "audio", "data": "BBBB", "mimeType": "audio/wav"}
                ]}
            ],
            "systemPrompt": "be brief",
            "maxTokens": 50,
            "temperature": 0.5,
            "stopSequences": ["END"]
        }));
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
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                        {"type": "input_audio", "input_audio": {"data": "BBBB", "format": "wav"}}
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
        let parts = sampling_result(
            &json!({"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "finish_reason": "stop"}]}),
            "m",
        )
        .unwrap();
        assert_eq!(parts.model, "m");
        assert_eq!(parts.stop_reason.as_deref(), Some("endTurn"));
        assert_eq!(parts.content.blocks()[0].as_text(), Some("ab"));
    }

    #[test]
    fn what_an_endpoint_cannot_take_is_refused_by_message() {
        let ogg = params(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "user", "content": [{"type": "audio", "data": "AA", "mimeType": "audio/ogg"}]}
            ],
            "maxTokens": 5
        }));
        let error = chat_request(&ogg, "m").unwrap_err();
        assert_eq!(
            error,
            HandlerError::InvalidParams(
                "message 1: audio of type audio/ogg cannot be sent to an OpenAI-compatible \
                 endpoint (only wav and mp3)"
                    .into()
            )
        );
        let empty = sampling_result(&json!({"choices": []}), "m").unwrap_err();
        assert!(matches!(empty, HandlerError::Failed(m) if m.contains("no choices")));
    }

    #[tokio::test]
    async fn an_unreachable_endpoint_fails_the_request_with_the_reason() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let chat = ChatClient::new(format!("http://127.0.0.1:{port}/v1"), "m").unwrap();
        let params = params(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 5
        }));
        let error = ChatSampling::new(chat).sample(&params).await.unwrap_err();
        let HandlerError::Failed(message) = error else {
            panic!("{error:?}")
        };
        assert!(
            message.contains(&format!(
                "127.0.0.1:{port}/v1/chat/completions could not be reached"
            )),
            "{message}"
        );
    }
}
