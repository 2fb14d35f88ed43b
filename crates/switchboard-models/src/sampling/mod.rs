//! A model of any of the four APIs as the handler of servers'
//! `sampling/createMessage` requests ([`ModelSampling`]; [`ChatSampling`]
//! is its older name), and the conversions it is made of
//! ([`sampling_turn`], [`sampling_result_of`]) for clients that put their
//! own consent prompt in front (the `switchboard` CLI does).
//!
//! ```no_run
//! # fn demo(hub: switchboard_hub::HubBuilder) -> Result<(), Box<dyn std::error::Error>> {
//! use switchboard_models::Provider;
//! use switchboard_models::chat::ChatClient;
//! use switchboard_models::sampling::ModelSampling;
//!
//! let model = ChatClient::builder("https://api.anthropic.com", "claude-sonnet-4-5")
//!     .provider(Provider::Anthropic)
//!     .api_key(std::env::var("ANTHROPIC_API_KEY").ok())
//!     .build()?;
//! let sampling = ModelSampling::new(model)
//!     .with_models(["claude-sonnet-4-5", "claude-haiku-4-5"]);
//! let hub = hub.client(move |_, client| client.sampling(sampling.clone()));
//! # Ok(()) }
//! ```
//!
//! Tools (SEP-1577, `sampling.tools`) are offered to the model in its
//! API's form and its calls come back as `tool_use` blocks; the server
//! runs them and asks again with the `tool_result`s. `modelPreferences`
//! hints pick among the models the handler allows
//! ([`ModelSampling::with_models`]): the first hint that names one (a
//! case-insensitive part of its name) wins, else the handler's own model.
//! `includeContext` (`thisServer`, `allServers`) adds what the
//! [`ModelSampling::with_context`] hook gives to the system prompt.
//!
//! A handler that answers without asking lets every server spend the
//! user's model: install it only for servers the user trusts with that.

mod convert;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use switchboard::handlers::BoxFuture;
use switchboard::types::sampling::{
    CreateMessageRequestParams, CreateMessageResult, IncludeContext,
};
use switchboard::{HandlerContext, HandlerError, SamplingHandler};

use crate::chat::ChatError;
use crate::model::{Model, ModelRequest};

pub use convert::{SamplingTurn, sampling_result_of, sampling_turn};

/// Default for [`ModelSampling::with_max_calls`].
pub const DEFAULT_MAX_CALLS: usize = 32;

/// The older name of [`ModelSampling`].
pub type ChatSampling = ModelSampling;

/// What `includeContext` adds: given the asking server and what it asked
/// for, the text to add to the system prompt (none: nothing).
pub type ContextHook = Arc<dyn Fn(&str, &IncludeContext) -> Option<String> + Send + Sync>;

/// Answers sampling requests with a [`Model`] (a
/// [`ChatClient`](crate::chat::ChatClient) of any of the four APIs),
/// without asking anyone. Cheap to clone; clones share one count of model
/// calls, at most [`ModelSampling::with_max_calls`] (default
/// [`DEFAULT_MAX_CALLS`], 32) for the handler's life: a server that keeps
/// asking cannot spend the user's model without end.
#[derive(Clone)]
pub struct ModelSampling {
    model: Arc<dyn Model>,
    calls: Arc<AtomicUsize>,
    max_calls: usize,
    models: Vec<String>,
    tools: bool,
    context: Option<ContextHook>,
}

impl std::fmt::Debug for ModelSampling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSampling")
            .field("model", &self.model)
            .field("calls", &self.calls())
            .field("max_calls", &self.max_calls)
            .field("models", &self.models)
            .field("tools", &self.tools)
            .field("context", &self.context.is_some())
            .finish()
    }
}

impl ModelSampling {
    /// A handler sending every request to `model`.
    pub fn new(model: impl Model + 'static) -> Self {
        Self::shared(Arc::new(model))
    }

    /// [`new`](Self::new) with a model shared with others.
    pub fn shared(model: Arc<dyn Model>) -> Self {
        Self {
            model,
            calls: Arc::default(),
            max_calls: DEFAULT_MAX_CALLS,
            models: Vec::new(),
            tools: true,
            context: None,
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

    /// The models a request's `modelPreferences` hints may pick (on the
    /// same endpoint); without any, every request gets the handler's own.
    #[must_use]
    pub fn with_models<S: Into<String>>(mut self, models: impl IntoIterator<Item = S>) -> Self {
        self.models = models.into_iter().map(Into::into).collect();
        self
    }

    /// Whether servers may offer the model tools (declares
    /// `sampling.tools`; default yes).
    #[must_use]
    pub fn with_tools(mut self, tools: bool) -> Self {
        self.tools = tools;
        self
    }

    /// What a request's `includeContext` adds to the system prompt.
    #[must_use]
    pub fn with_context(mut self, context: ContextHook) -> Self {
        self.context = Some(context);
        self
    }

    /// Model calls made so far (refused ones not counted).
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed).min(self.max_calls)
    }

    /// The handler's own model.
    pub fn model(&self) -> &dyn Model {
        &*self.model
    }

    /// The model a request's hints pick: the first hint naming an allowed
    /// model, else the handler's own.
    pub fn pick(&self, params: &CreateMessageRequestParams) -> String {
        let hints = params
            .model_preferences
            .as_ref()
            .and_then(|p| p.hints.as_deref())
            .unwrap_or_default();
        for hint in hints.iter().filter_map(|h| h.name.as_deref()) {
            let hint = hint.to_lowercase();
            if hint.is_empty() {
                continue;
            }
            if let Some(model) = self
                .models
                .iter()
                .find(|m| m.to_lowercase().contains(&hint))
            {
                return model.clone();
            }
        }
        self.model.model().to_owned()
    }

    /// Sends one sampling request of `server` and converts the answer.
    ///
    /// # Errors
    /// [`HandlerError::InvalidParams`] for content the API cannot take
    /// (see [`sampling_turn`]); [`HandlerError::Rejected`] past the limit
    /// of model calls; [`HandlerError::Failed`] when the endpoint fails
    /// (the message says how) or its answer cannot be used.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request.
    pub async fn sample(
        &self,
        server: &str,
        params: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, HandlerError> {
        self.sample_or_model_error(server, params)
            .await
            .map_err(|error| error.unwrap_or_else(|e| HandlerError::Failed(describe(&e))))
    }

    /// [`sample`](Self::sample), with the model's own error kept apart
    /// (`Err(Err(_))`), for a caller that words it for its user.
    ///
    /// # Errors
    /// As [`sample`](Self::sample).
    pub async fn sample_or_model_error(
        &self,
        server: &str,
        params: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, Result<HandlerError, ChatError>> {
        let mut turn = sampling_turn(self.model.provider(), params).map_err(Ok)?;
        if let (Some(hook), Some(include)) = (&self.context, &params.include_context)
            && *include != IncludeContext::None
            && let Some(context) = hook(server, include).filter(|c| !c.is_empty())
        {
            turn.system = Some(match turn.system.take() {
                Some(system) => format!("{system}\n\n{context}"),
                None => context,
            });
        }
        let name = self.pick(params);
        let model = match self.model.with_model(&name) {
            Some(other) if name != self.model.model() => other,
            _ => self.model.clone(),
        };
        if self.calls.fetch_add(1, Ordering::Relaxed) >= self.max_calls {
            return Err(Ok(HandlerError::Rejected(format!(
                "this run has already made {} model calls for servers' sampling requests, its limit (ModelSampling::with_max_calls)",
                self.max_calls
            ))));
        }
        let request = ModelRequest::new(&turn.transcript)
            .system(turn.system.as_deref())
            .tools(turn.tools.as_deref())
            .fields(&turn.fields);
        let answer = model.turn(request).await.map_err(Err)?;
        Ok(sampling_result_of(&answer, model.model()))
    }
}

/// A model error and its cause on one line: a handler error has no source.
pub fn describe(error: &ChatError) -> String {
    match std::error::Error::source(error) {
        Some(source) => format!("{error}: {source}"),
        None => error.to_string(),
    }
}

impl SamplingHandler for ModelSampling {
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
                tools = params.tools.as_ref().map_or(0, Vec::len),
                "sampling request sent to the model"
            );
            this.sample(&context.server, &params).await
        })
    }

    fn supports_tools(&self) -> bool {
        self.tools
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use switchboard::types::{ContentBlock, Role};

    use super::*;
    use crate::Provider;
    use crate::chat::ChatClient;
    use crate::model::{ModelCall, ModelTurn};

    fn params(value: Value) -> CreateMessageRequestParams {
        serde_json::from_value(value).unwrap()
    }

    #[tokio::test]
    async fn model_calls_stop_at_the_limit() {
        // Nothing listens on the discard port: each call that is made
        // fails fast, which is enough to count it.
        let chat = ChatClient::builder("http://127.0.0.1:9/v1", "m")
            .retries(0)
            .build()
            .unwrap();
        let sampling = ModelSampling::new(chat).with_max_calls(2);
        let clone = sampling.clone();
        let request = params(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}));
        for handler in [&sampling, &clone] {
            let error = handler.sample("s", &request).await.unwrap_err();
            assert!(matches!(error, HandlerError::Failed(_)), "{error}");
        }
        let error = sampling.sample("s", &request).await.unwrap_err();
        let HandlerError::Rejected(message) = &error else {
            panic!("{error}");
        };
        assert!(message.contains("2 model calls"), "{message}");
        assert!(message.contains("with_max_calls"), "{message}");
        assert_eq!(sampling.calls(), 2);
    }

    #[test]
    fn a_request_becomes_a_chat_completions_turn_and_its_answer_a_result() {
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
            "stopSequences": ["END"],
            "metadata": {"model": "the-servers-choice"}
        }));
        let turn = sampling_turn(Provider::OpenAiChat, &params).unwrap();
        assert_eq!(turn.system.as_deref(), Some("be brief"));
        assert_eq!(
            turn.transcript,
            [
                json!({"role": "user", "content": "hi"}),
                json!({"role": "assistant", "content": "hello"}),
                json!({"role": "user", "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {"type": "input_audio", "input_audio": {"data": "BBBB", "format": "wav"}}
                ]}),
            ]
        );
        // The server's metadata is not the user's request's.
        assert_eq!(
            Value::Object(turn.fields),
            json!({"max_tokens": 50, "temperature": 0.5, "stop": ["END"]})
        );
        let answer = ModelTurn {
            text: "ok".into(),
            stop: Some("length".into()),
            ..ModelTurn::default()
        };
        let result = sampling_result_of(&answer, "gpt-x");
        assert_eq!(result.model, "gpt-x");
        assert_eq!(result.stop_reason.as_deref(), Some("maxTokens"));
        assert_eq!(result.content.blocks()[0].as_text(), Some("ok"));
        assert_eq!(result.role, Role::Assistant);
    }

    #[test]
    fn tool_calls_come_back_as_tool_use_blocks_with_object_inputs() {
        let answer = ModelTurn {
            calls: vec![
                call("a", json!("{\"city\": \"Paris\"}")),
                call("", json!("not json")),
            ],
            stop: Some("tool_calls".into()),
            ..ModelTurn::default()
        };
        let result = sampling_result_of(&answer, "m");
        let blocks = result.content.blocks();
        assert_eq!(result.stop_reason.as_deref(), Some("toolUse"));
        let ContentBlock::ToolUse(first) = &blocks[0] else {
            panic!("{blocks:?}")
        };
        assert_eq!(
            (first.id.as_str(), first.name.as_str()),
            ("a", "get_weather")
        );
        assert_eq!(Value::Object(first.input.clone()), json!({"city": "Paris"}));
        let ContentBlock::ToolUse(second) = &blocks[1] else {
            panic!("{blocks:?}")
        };
        assert_eq!(second.id, "toolu_1");
        assert!(second.input.is_empty());
    }

    fn call(id: &str, arguments: Value) -> ModelCall {
        ModelCall {
            id: id.into(),
            name: "get_weather".into(),
            arguments,
        }
    }

    #[test]
    fn what_an_api_cannot_take_is_refused_by_message() {
        let ogg = params(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "user", "content": [{"type": "audio", "data": "AA", "mimeType": "audio/ogg"}]}
            ],
            "maxTokens": 5
        }));
        let error = sampling_turn(Provider::OpenAiChat, &ogg).unwrap_err();
        assert_eq!(
            error,
            HandlerError::InvalidParams(
                "message 1: audio of type audio/ogg (only wav and mp3) cannot be sent to the \
                 openai-chat API"
                    .into()
            )
        );
        let error = sampling_turn(Provider::Anthropic, &ogg).unwrap_err();
        assert!(error.to_string().contains("audio content"), "{error}");
        // Gemini takes audio inline.
        assert!(sampling_turn(Provider::Gemini, &ogg).is_ok());
        let bad_tool = params(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 5,
            "tools": [{"name": "rm -rf /", "inputSchema": {"type": "object"}}]
        }));
        let error = sampling_turn(Provider::OpenAiResponses, &bad_tool).unwrap_err();
        assert!(error.to_string().contains("tool name"), "{error}");
    }

    #[test]
    fn hints_pick_an_allowed_model_and_nothing_else() {
        let chat = ChatClient::new("http://127.0.0.1:9/v1", "default-model").unwrap();
        let sampling =
            ModelSampling::new(chat).with_models(["claude-sonnet-4-5", "claude-haiku-4-5"]);
        let asking = |hints: Value| {
            params(json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 5,
                "modelPreferences": {"hints": hints}
            }))
        };
        assert_eq!(
            sampling.pick(&asking(json!([{"name": "gpt-5"}, {"name": "HAIKU"}]))),
            "claude-haiku-4-5"
        );
        assert_eq!(
            sampling.pick(&asking(json!([{"name": "sonnet"}]))),
            "claude-sonnet-4-5"
        );
        assert_eq!(
            sampling.pick(&asking(json!([{"name": "gpt-5"}]))),
            "default-model"
        );
        assert_eq!(
            sampling.pick(&asking(json!([{"name": ""}]))),
            "default-model"
        );
    }

    #[tokio::test]
    async fn an_unreachable_endpoint_fails_the_request_with_the_reason() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let chat = ChatClient::builder(format!("http://127.0.0.1:{port}/v1"), "m")
            .retries(0)
            .build()
            .unwrap();
        let params = params(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 5
        }));
        let error = ModelSampling::new(chat)
            .sample("s", &params)
            .await
            .unwrap_err();
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
