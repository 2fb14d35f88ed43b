//! One model turn on any of the four APIs: the [`Model`] seam the agent
//! loop and the sampling bridge ask, and its implementation by
//! [`ChatClient`] for each [`Provider`] — thin clients of our own, one file
//! per API, rather than a framework's providers: each API's own streaming
//! events are assembled here (text deltas, tool calls and their argument
//! deltas), the transcript stays in each API's own form (Chat Completions
//! messages; Responses input items; Anthropic content blocks; Gemini
//! `functionCall`/`functionResponse` parts), and nothing is lost in a
//! translation to a common shape.
//!
//! A turn is used only when it ended as its API says an answer ends
//! (`[DONE]` or a `finish_reason`; `response.completed`; `message_stop`; a
//! `finishReason`): a stream cut in the middle of a tool call is an error,
//! never a call. Every call the model names is handed over as it named it;
//! whether such a tool exists is the caller's business.

mod anthropic;
mod gemini;
mod openai_chat;
mod responses;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::Provider;
use crate::chat::{ChatClient, ChatError};
use crate::results::ProviderResult;

/// A boxed future, as [`Model::turn`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A model behind one of the four APIs, asked one turn at a time.
pub trait Model: Send + Sync + fmt::Debug {
    /// The API it speaks: the shape of its transcript, tools and results.
    fn provider(&self) -> Provider;

    /// The model's name, as requests name it.
    fn model(&self) -> &str;

    /// One turn: the transcript so far (in this API's form) and the tool
    /// definitions (this API's `tools` value) in, the model's answer out.
    /// Streamed pieces go to `request.observer` as they arrive.
    fn turn<'a>(&'a self, request: ModelRequest<'a>)
    -> BoxFuture<'a, Result<ModelTurn, ChatError>>;

    /// The same endpoint with the model `model` instead (for sampling's
    /// model hints), if this model can say another.
    fn with_model(&self, model: &str) -> Option<std::sync::Arc<dyn Model>> {
        let _ = model;
        None
    }
}

/// What one turn sends.
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The system prompt (Responses' `instructions`, Anthropic's `system`,
    /// Gemini's `systemInstruction`; for Chat Completions a first `system`
    /// message, unless the transcript starts with one).
    pub system: Option<&'a str>,
    /// The conversation so far, in this API's form.
    pub transcript: &'a [Value],
    /// The `tools` value, in this API's form (none: no tools).
    pub tools: Option<&'a RawValue>,
    /// More top-level fields of the request (`temperature`, `max_tokens`,
    /// Gemini's `generationConfig` …); they win over the client's own.
    pub fields: &'a Map<String, Value>,
    /// Told of each streamed piece as it arrives.
    pub observer: Option<&'a (dyn Fn(&StreamEvent) + Send + Sync)>,
}

impl fmt::Debug for ModelRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelRequest")
            .field("system", &self.system.is_some())
            .field("transcript", &self.transcript.len())
            .field("tools", &self.tools.is_some())
            .field("fields", &self.fields.keys().collect::<Vec<_>>())
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

impl<'a> ModelRequest<'a> {
    /// A request of `transcript`, with nothing else.
    pub fn new(transcript: &'a [Value]) -> Self {
        Self {
            system: None,
            transcript,
            tools: None,
            fields: empty(),
            observer: None,
        }
    }

    /// With the system prompt `system`.
    pub fn system(mut self, system: Option<&'a str>) -> Self {
        self.system = system;
        self
    }

    /// With the tool definitions `tools`.
    pub fn tools(mut self, tools: Option<&'a RawValue>) -> Self {
        self.tools = tools;
        self
    }

    /// With the extra fields `fields`.
    pub fn fields(mut self, fields: &'a Map<String, Value>) -> Self {
        self.fields = fields;
        self
    }

    /// With `observer` told of each streamed piece.
    pub fn observer(mut self, observer: Option<&'a (dyn Fn(&StreamEvent) + Send + Sync)>) -> Self {
        self.observer = observer;
        self
    }

    fn tell(&self, event: StreamEvent) {
        if let Some(observer) = self.observer {
            observer(&event);
        }
    }
}

fn empty() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

/// A streamed piece of a turn, as it arrives.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// Text of the answer.
    Text(String),
    /// The model began a tool call.
    CallStarted {
        /// The call's id (empty when the API gives none yet).
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A piece of a call's arguments (JSON text).
    CallArguments {
        /// The call's id.
        id: String,
        /// The piece.
        delta: String,
    },
}

/// One tool call the model asked for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ModelCall {
    /// Its id, as the API gave it (Gemini's may be empty: answered without
    /// one).
    pub id: String,
    /// The tool's name, as the model wrote it.
    pub name: String,
    /// Its arguments: a JSON text (possibly not valid JSON), or a JSON
    /// value (Gemini, Anthropic).
    pub arguments: Value,
}

/// The model's answer to one turn.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelTurn {
    /// Its text (the text parts joined).
    pub text: String,
    /// The tool calls it asks for, in order.
    pub calls: Vec<ModelCall>,
    /// What the transcript gets for it, in the API's form (the assistant
    /// message, or the output items).
    pub items: Vec<Value>,
    /// Why it ended, as the API said (`stop`, `tool_calls`, `end_turn`,
    /// `STOP` …).
    pub stop: Option<String>,
    /// Tokens it took, when the API said: (input, output).
    pub usage: Option<(u64, u64)>,
    /// The model that answered, when the API said.
    pub model: Option<String>,
}

impl ModelCall {
    /// A call of `name` with `arguments` (a JSON text or value), its id
    /// `id` (for a [`Model`] of one's own).
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

impl ModelTurn {
    /// A turn that answers `text` (for a [`Model`] of one's own); its
    /// transcript items are given with [`with_items`](Self::with_items).
    pub fn answer(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// A turn that asks for `calls`.
    pub fn calling(calls: Vec<ModelCall>) -> Self {
        Self {
            calls,
            ..Self::default()
        }
    }

    /// With `items` for the transcript.
    #[must_use]
    pub fn with_items(mut self, items: Vec<Value>) -> Self {
        self.items = items;
        self
    }

    /// With the API's stop reason.
    #[must_use]
    pub fn with_stop(mut self, stop: impl Into<String>) -> Self {
        self.stop = Some(stop.into());
        self
    }

    /// With the tokens it took: (input, output).
    #[must_use]
    pub fn with_usage(mut self, input: u64, output: u64) -> Self {
        self.usage = Some((input, output));
        self
    }
}

impl Model for ChatClient {
    fn provider(&self) -> Provider {
        ChatClient::provider(self)
    }

    fn model(&self) -> &str {
        ChatClient::model(self)
    }

    fn with_model(&self, model: &str) -> Option<std::sync::Arc<dyn Model>> {
        Some(std::sync::Arc::new(self.for_model(model)))
    }

    fn turn<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ChatError>> {
        Box::pin(async move {
            match ChatClient::provider(self) {
                Provider::OpenAiChat => openai_chat::turn(self, &request).await,
                Provider::OpenAiResponses => responses::turn(self, &request).await,
                Provider::Anthropic => anthropic::turn(self, &request).await,
                Provider::Gemini => gemini::turn(self, &request).await,
            }
        })
    }
}

/// A user's message, in `provider`'s transcript form.
pub fn user_message(provider: Provider, text: &str) -> Value {
    match provider {
        Provider::Gemini => json!({"role": "user", "parts": [{"text": text}]}),
        _ => json!({"role": "user", "content": text}),
    }
}

/// The answers to one turn's calls, in `provider`'s transcript form: Chat
/// Completions' `tool` messages and Responses' `function_call_output`
/// items one by one (then any follow-up messages); Anthropic's
/// `tool_result` blocks in one `user` message; Gemini's `functionResponse`
/// parts in one `user` content.
pub fn answers(provider: Provider, results: Vec<ProviderResult>) -> Vec<Value> {
    let mut items = Vec::new();
    let mut follow_up = Vec::new();
    for result in results {
        items.extend(result.items);
        follow_up.extend(result.follow_up);
    }
    let mut out = match provider {
        Provider::Anthropic => vec![json!({"role": "user", "content": items})],
        Provider::Gemini => vec![json!({"role": "user", "parts": items})],
        _ => items,
    };
    out.extend(follow_up);
    out
}

/// A stream that ended without its API's last event.
fn cut(client: &ChatClient, what: &str) -> ChatError {
    ChatError::Stream {
        url: client.url().to_owned(),
        reason: format!("it ended before the answer was complete ({what}); nothing of it is used"),
        retryable: true,
    }
}

/// An event that is not what its API sends.
fn malformed(client: &ChatClient, what: &str, data: &str) -> ChatError {
    let excerpt: String = data.chars().take(200).collect();
    ChatError::Stream {
        url: client.url().to_owned(),
        reason: format!("{what}: {excerpt}"),
        retryable: false,
    }
}

/// `data` as JSON, or the error saying which event was not.
fn event_json(client: &ChatClient, data: &str) -> Result<Value, ChatError> {
    serde_json::from_str(data).map_err(|_| malformed(client, "an event is not JSON", data))
}

/// A request's body, written without copying the transcript or the tool
/// definitions into a new JSON value: `head` (the client's own fields),
/// the transcript under its API's key (after `first`, if any), the tools,
/// then the request's `fields`, which win over `head`.
pub(super) struct Body<'a> {
    pub(super) head: Map<String, Value>,
    pub(super) key: &'static str,
    pub(super) first: Option<Value>,
    pub(super) request: &'a ModelRequest<'a>,
}

impl serde::Serialize for Body<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Transcript<'b>(Option<&'b Value>, &'b [Value]);
        impl serde::Serialize for Transcript<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.into_iter().chain(self.1))
            }
        }
        let fields = self.request.fields;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in &self.head {
            if !fields.contains_key(key) {
                map.serialize_entry(key, value)?;
            }
        }
        if !fields.contains_key(self.key) {
            map.serialize_entry(
                self.key,
                &Transcript(self.first.as_ref(), self.request.transcript),
            )?;
        }
        if let Some(tools) = self.request.tools
            && !fields.contains_key("tools")
        {
            map.serialize_entry("tools", tools)?;
        }
        for (key, value) in fields {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A body's head: the model's name (when the API puts it in the body),
/// then `more`.
fn head(model: Option<&str>, more: &[(&str, Option<Value>)]) -> Map<String, Value> {
    let mut head = Map::new();
    if let Some(model) = model {
        head.insert("model".into(), json!(model));
    }
    for (key, value) in more {
        if let Some(value) = value {
            head.insert((*key).to_owned(), value.clone());
        }
    }
    head
}

/// Input and output tokens from a usage object with these field names.
fn usage(value: &Value, input: &str, output: &str) -> Option<(u64, u64)> {
    Some((value.get(input)?.as_u64()?, value.get(output)?.as_u64()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_grouped_as_each_api_wants() {
        let result = |item: Value| ProviderResult {
            items: vec![item],
            ..ProviderResult::default()
        };
        let two = || vec![result(json!({"a": 1})), result(json!({"b": 2}))];
        assert_eq!(answers(Provider::OpenAiChat, two()).len(), 2);
        assert_eq!(answers(Provider::OpenAiResponses, two()).len(), 2);
        assert_eq!(
            answers(Provider::Anthropic, two()),
            [json!({"role": "user", "content": [{"a": 1}, {"b": 2}]})]
        );
        assert_eq!(
            answers(Provider::Gemini, two()),
            [json!({"role": "user", "parts": [{"a": 1}, {"b": 2}]})]
        );
        assert_eq!(
            user_message(Provider::Gemini, "hi"),
            json!({"role": "user", "parts": [{"text": "hi"}]})
        );
    }
}
