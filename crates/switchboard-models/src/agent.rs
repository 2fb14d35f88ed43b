//! An agent loop over any of the four model APIs (a [`Model`]: OpenAI
//! Chat Completions and its compatible servers, OpenAI Responses,
//! Anthropic Messages, Gemini), with the tools of a [`Hub`]'s MCP servers.
//!
//! Each round sends the conversation and the tool definitions
//! ([`Toolset::tools_param`], in the model's API form), streamed; when the
//! model asks for tool calls, they run through the hub (at most
//! [`AgentBuilder::parallel_calls`] at once), their results go back in the
//! API's own form ([`results::tool_result`], grouped by
//! [`model::answers`]) and the next round starts; the first answer without
//! tool calls ends the run. The conversation is kept in the API's own form
//! ([`AgentOutcome::messages`]).
//! Mistakes of the model — a tool that does not exist, arguments that are
//! not JSON — and failed calls are told to the model as tool errors, so it
//! can correct itself; only the endpoint failing or too many rounds end a
//! run with an error.
//!
//! ```no_run
//! # async fn demo(hub: switchboard_hub::Hub) -> Result<(), Box<dyn std::error::Error>> {
//! use switchboard_models::agent::Agent;
//! use switchboard_models::chat::ChatClient;
//!
//! let chat = ChatClient::new("http://127.0.0.1:8080/v1", "qwen2.5")?;
//! let agent = Agent::builder(hub, chat)
//!     .system_prompt("You are a careful assistant.")
//!     .max_rounds(8)
//!     .build()?;
//! let outcome = agent.run("What is 2 + 3? Use the add tool.").await?;
//! println!("{} ({} tool calls)", outcome.text, outcome.calls.len());
//! # Ok(()) }
//! ```

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use switchboard_hub::Hub;
use switchboard_types::{CallToolResult, ContentBlock};
use tracing::Instrument as _;

use crate::chat::ChatError;
use crate::definitions::{self, ToolHints};
use crate::model::{self, Model, ModelCall, ModelRequest, StreamEvent};
use crate::results::{self, ProviderResult, ResultOptions};
use crate::skills::{SkillOptions, Skillset};
use crate::toolset::{Lookup, Toolset, ToolsetOptions};
use crate::{Provider, error_chain};

/// Default for [`AgentBuilder::max_rounds`].
pub const DEFAULT_MAX_ROUNDS: usize = 16;
/// Default for [`AgentBuilder::parallel_calls`].
pub const DEFAULT_PARALLEL_CALLS: usize = 8;

/// Longest summary of a result in an [`AgentEvent::Result`], in characters.
const SUMMARY: usize = 200;

/// One tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallRecord {
    /// The round (1-based) it was asked for in.
    pub round: usize,
    /// The call's id (the model's, or one made up when it sent none).
    pub id: String,
    /// The name the model used.
    pub name: String,
    /// The server it went to (`None`: unknown tool or `search_tools`).
    pub server: Option<String>,
    /// The server's name for the tool.
    pub tool: Option<String>,
    /// Whether the model was told of an error (the tool's `isError`, a
    /// failed call, an unknown tool, bad arguments).
    pub is_error: bool,
}

/// How a run ended.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// The model's final answer.
    pub text: String,
    /// How many requests went to the model.
    pub rounds: usize,
    /// Every tool call, in the order the model asked for them.
    pub calls: Vec<CallRecord>,
    /// The whole conversation in the model API's form, the final answer
    /// included: add a user message ([`model::user_message`]) and pass it
    /// to [`Agent::run_messages`] to go on.
    pub messages: Vec<Value>,
    /// Tokens the run's requests took, as the API counted them: (input,
    /// output), summed over rounds that said.
    pub usage: (u64, u64),
}

/// A tool call waiting for the application's yes or no
/// ([`AgentBuilder::approval`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The name the model used.
    pub name: String,
    /// The server it goes to.
    pub server: String,
    /// The server's name for the tool.
    pub tool: String,
    /// The tool's hints (read-only, destructive …): the server's claims,
    /// untrusted; a UI may use them to decide what to ask about.
    pub hints: ToolHints,
    /// The arguments the server will get.
    pub arguments: Option<Map<String, Value>>,
}

/// Decides whether a tool call may run: `true` runs it, `false` tells the
/// model the user declined it.
pub type Approval =
    Arc<dyn Fn(ApprovalRequest) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// What the agent is doing, for UIs ([`AgentBuilder::observer`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A request is about to go to the model.
    Request {
        /// The round (1-based).
        round: usize,
        /// Messages in the conversation.
        messages: usize,
        /// Tool definitions sent.
        tools: usize,
    },
    /// A tool call is about to run.
    Call {
        /// The round.
        round: usize,
        /// The call's id.
        id: String,
        /// The name the model used.
        name: String,
        /// The server it goes to (`None`: unknown tool or `search_tools`).
        server: Option<String>,
        /// The arguments as the model sent them (a JSON string, usually).
        arguments: Value,
    },
    /// A tool call finished.
    Result {
        /// What was called and whether it failed.
        call: CallRecord,
        /// The start of the result's text, or the error.
        summary: String,
    },
    /// A piece of the model's text, as it streams in.
    Delta {
        /// The round.
        round: usize,
        /// The piece.
        text: String,
    },
    /// The model answered without tool calls.
    Answer {
        /// The round.
        round: usize,
        /// The answer.
        text: String,
    },
}

/// Why a run did not produce an answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A builder setting is invalid.
    #[error("invalid agent setting `{setting}`: {reason}")]
    Config {
        /// The setting.
        setting: &'static str,
        /// Why.
        reason: String,
    },
    /// The request to the model failed.
    #[error("round {round}: the model request failed")]
    Chat {
        /// The round.
        round: usize,
        /// The chat client's error.
        #[source]
        source: ChatError,
    },
    /// The endpoint answered with something that is not a chat completion.
    #[error("round {round}: the model's answer is not a chat completion: {reason}")]
    Answer {
        /// The round.
        round: usize,
        /// What is missing.
        reason: String,
    },
    /// The run's requests took more tokens than
    /// [`AgentBuilder::max_tokens`] allows.
    #[error(
        "the run took {used} tokens, over its budget of {budget}, after round {round} ({} tool calls made)",
        calls.len()
    )]
    TokenBudget {
        /// The round after which the budget was spent.
        round: usize,
        /// Input and output tokens taken so far.
        used: u64,
        /// The budget.
        budget: u64,
        /// The calls made.
        calls: Vec<CallRecord>,
    },
    /// The model still asked for tools in the last allowed round.
    #[error(
        "the model was still calling tools after {max_rounds} rounds ({} tool calls made); \
         raise the round limit or break the task up",
        calls.len()
    )]
    TooManyRounds {
        /// The limit.
        max_rounds: usize,
        /// The calls made.
        calls: Vec<CallRecord>,
    },
}

impl AgentError {
    /// The run hit the round limit.
    pub fn is_too_many_rounds(&self) -> bool {
        matches!(self, AgentError::TooManyRounds { .. })
    }

    /// The chat client's error, if the endpoint failed.
    pub fn chat_error(&self) -> Option<&ChatError> {
        match self {
            AgentError::Chat { source, .. } => Some(source),
            _ => None,
        }
    }
}

type Observer = Arc<dyn Fn(&AgentEvent) + Send + Sync>;
/// Starts a server's login; the URL for the user, or why not.
type Login = Arc<
    dyn Fn(String) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>> + Send + Sync,
>;

/// Builds an [`Agent`]. Setters never fail; [`build`](Self::build) reports
/// the first bad setting.
#[must_use]
#[derive(Clone)]
pub struct AgentBuilder {
    agent: Agent,
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AgentBuilder").field(&self.agent).finish()
    }
}

impl AgentBuilder {
    /// A fixed toolset (it must be for [`Provider::OpenAiChat`]). Without
    /// one, each run builds one from the hub's current tools with
    /// [`toolset_options`](Self::toolset_options).
    pub fn toolset(mut self, toolset: Arc<Toolset>) -> Self {
        self.agent.toolset = Some(toolset);
        self
    }

    /// How each run's toolset is built from the hub (naming, definitions,
    /// `search_tools`).
    pub fn toolset_options(mut self, options: ToolsetOptions) -> Self {
        self.agent.toolset_options = options;
        self
    }

    /// How results are given to the model (size budget, media folder,
    /// images).
    pub fn result_options(mut self, options: ResultOptions) -> Self {
        self.agent.results = options;
        self
    }

    /// Most requests to the model in one run (default
    /// [`DEFAULT_MAX_ROUNDS`]).
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.agent.max_rounds = rounds;
        self
    }

    /// Most tool calls of one round running at once (default
    /// [`DEFAULT_PARALLEL_CALLS`]).
    pub fn parallel_calls(mut self, calls: usize) -> Self {
        self.agent.parallel_calls = calls;
        self
    }

    /// Ends the run with [`AgentError::TokenBudget`] once its requests
    /// have taken more than `tokens` (input and output, as the API counts
    /// them; rounds whose API says nothing count nothing). Default: no
    /// budget.
    pub fn max_tokens(mut self, tokens: u64) -> Self {
        self.agent.max_tokens = Some(tokens);
        self
    }

    /// Asks `approve` before each call to a server's tool (not before
    /// `search_tools`); a call it refuses is not made, and the model is
    /// told the user declined it. Calls of one round are asked about one
    /// at a time, in the model's order. Without it every call runs.
    pub fn approval<F, Fut>(mut self, approve: F) -> Self
    where
        F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.agent.approval = Some(Arc::new(move |request| Box::pin(approve(request))));
        self
    }

    /// Answers the hub's tool policy when it asks before a call
    /// (`[policy.tools]` `ask`, see `switchboard_hub::hub::policy`): the
    /// application's own question to its user (allow once, always, or
    /// refuse). Without it the hub's approver answers, if it has one;
    /// with neither an `ask` tool is refused and the model is told why. A
    /// denied tool is never offered to the model nor called.
    pub fn tool_approver(mut self, approver: Arc<dyn switchboard_hub::hub::ToolApprover>) -> Self {
        self.agent.tool_approver = Some(approver);
        self
    }

    /// Whether [`Agent::run`]'s system message carries each ready
    /// server's `instructions` after the system prompt, each capped at
    /// the definitions' description cap (default: yes).
    pub fn server_instructions(mut self, include: bool) -> Self {
        self.agent.server_instructions = include;
        self
    }

    /// Whether the model gets the hub's skills (the skills extension) as
    /// the `load_skill` and `read_skill_file` tools of a [`Skillset`]
    /// (default: yes). Each run lists them once, reading no skill file;
    /// a skill is loaded, and verified, when the model calls for it.
    pub fn skills(mut self, offer: bool) -> Self {
        self.agent.skills = offer;
        self
    }

    /// The system message that opens each [`Agent::run`].
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.agent.system = Some(prompt.into());
        self
    }

    /// A field sent in every request (`temperature`, `max_tokens`,
    /// `tool_choice` …); `model`, `messages` and `tools` are the agent's.
    pub fn request_field(mut self, name: impl Into<String>, value: Value) -> Self {
        self.agent.fields.insert(name.into(), value);
        self
    }

    /// How the `authenticate` tool of a server waiting for a login
    /// ([`ToolsetOptions::authenticate`], which this turns on) starts that
    /// login: `start` gets the server's name and gives the URL the user
    /// must open (or says why it cannot), which the model is handed to
    /// pass on. Without it, the hub's own OAuth starts the login
    /// (`Hub::connect`, feature `oauth`). Once the login completes and the server is ready, the next
    /// round lists its tools: without a fixed [`toolset`](Self::toolset),
    /// the toolset is built again whenever the hub's tools or waiting
    /// servers change.
    pub fn login<F, Fut>(mut self, start: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        self.agent.toolset_options.authenticate = true;
        self.agent.login = Some(Arc::new(move |server| Box::pin(start(server))));
        self
    }

    /// Called with each [`AgentEvent`], on the task running the agent:
    /// keep it quick.
    pub fn observer(mut self, observer: impl Fn(&AgentEvent) + Send + Sync + 'static) -> Self {
        self.agent.observer = Some(Arc::new(observer));
        self
    }

    /// Makes the agent.
    ///
    /// # Errors
    /// [`AgentError::Config`] for zero rounds or parallel calls, or a
    /// toolset for another provider.
    pub fn build(self) -> Result<Agent, AgentError> {
        let bad = |setting, reason: &str| {
            Err(AgentError::Config {
                setting,
                reason: reason.into(),
            })
        };
        if self.agent.max_rounds == 0 {
            return bad("max_rounds", "must be at least 1");
        }
        if self.agent.parallel_calls == 0 {
            return bad("parallel_calls", "must be at least 1");
        }
        if let Some(name) = ["model", "messages", "tools", "input", "contents", "stream"]
            .into_iter()
            .find(|name| self.agent.fields.contains_key(*name))
        {
            return Err(AgentError::Config {
                setting: "request_field",
                reason: format!("`{name}` is the agent's own field; it cannot be set"),
            });
        }
        if self.agent.max_tokens == Some(0) {
            return bad("max_tokens", "must be at least 1");
        }
        let provider = self.agent.model.provider();
        if let Some(toolset) = &self.agent.toolset
            && toolset.provider() != provider
        {
            return Err(AgentError::Config {
                setting: "toolset",
                reason: format!("must be built for the model's API, {provider}"),
            });
        }
        Ok(self.agent)
    }
}

/// A model with the hub's tools. Cheap to clone; runs are independent.
#[derive(Clone)]
pub struct Agent {
    hub: Hub,
    model: Arc<dyn Model>,
    max_tokens: Option<u64>,
    toolset: Option<Arc<Toolset>>,
    toolset_options: ToolsetOptions,
    results: ResultOptions,
    max_rounds: usize,
    parallel_calls: usize,
    system: Option<String>,
    server_instructions: bool,
    skills: bool,
    approval: Option<Approval>,
    /// Answers the hub's tool policy's `ask`.
    tool_approver: Option<Arc<dyn switchboard_hub::hub::ToolApprover>>,
    /// Held while the approval hook is asked.
    asking: Arc<tokio::sync::Mutex<()>>,
    fields: Map<String, Value>,
    observer: Option<Observer>,
    login: Option<Login>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("hub", &self.hub)
            .field("model", &self.model)
            .field("toolset", &self.toolset.as_ref().map(|t| t.entries().len()))
            .field("results", &self.results)
            .field("max_rounds", &self.max_rounds)
            .field("parallel_calls", &self.parallel_calls)
            .field("system", &self.system.is_some())
            .field("fields", &self.fields.keys().collect::<Vec<_>>())
            .field("observer", &self.observer.is_some())
            .field("login", &self.login.is_some())
            .finish()
    }
}

impl Agent {
    /// A builder for an agent using `hub`'s tools and `model` (a
    /// [`ChatClient`](crate::chat::ChatClient) of any of the four APIs, or a [`Model`] of one's own).
    pub fn builder(hub: Hub, model: impl Model + 'static) -> AgentBuilder {
        Self::builder_shared(hub, Arc::new(model))
    }

    /// [`builder`](Self::builder) with a model shared with others.
    pub fn builder_shared(hub: Hub, model: Arc<dyn Model>) -> AgentBuilder {
        AgentBuilder {
            agent: Agent {
                hub,
                model,
                max_tokens: None,
                toolset: None,
                toolset_options: ToolsetOptions::default(),
                results: ResultOptions::default(),
                max_rounds: DEFAULT_MAX_ROUNDS,
                parallel_calls: DEFAULT_PARALLEL_CALLS,
                system: None,
                server_instructions: true,
                skills: true,
                approval: None,
                tool_approver: None,
                asking: Arc::default(),
                fields: Map::new(),
                observer: None,
                login: None,
            },
        }
    }

    /// The model.
    pub fn model(&self) -> &dyn Model {
        &*self.model
    }

    /// Runs `prompt` (after a system message of the system prompt and the
    /// servers' instructions, if any) to the model's final answer.
    ///
    /// # Errors
    /// As [`run_messages`](Self::run_messages).
    ///
    /// # Cancel safety
    /// Dropping the future abandons the model request and cancels the
    /// tool calls under way.
    pub async fn run(&self, prompt: &str) -> Result<AgentOutcome, AgentError> {
        let provider = self.model.provider();
        let mut messages = Vec::new();
        // Chat Completions keeps the system prompt in the conversation, as
        // its first message; the other APIs take it beside (every round,
        // from the agent's settings).
        if provider == Provider::OpenAiChat
            && let Some(system) = self.system_prompt()
        {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(model::user_message(provider, prompt));
        self.run_messages(messages).await
    }

    /// The system prompt and the ready servers' own instructions (capped
    /// like descriptions: they are the servers' text, not ours).
    fn system_prompt(&self) -> Option<String> {
        let mut system: Vec<String> = self.system.iter().cloned().collect();
        if self.server_instructions {
            let options = &self.toolset_options.definitions;
            system.extend(
                self.hub
                    .list()
                    .into_iter()
                    .filter_map(|s| {
                        let text = s.instructions?;
                        Some(definitions::instructions(&s.name, &text, options))
                    })
                    .filter(|text| !text.is_empty()),
            );
        }
        (!system.is_empty()).then(|| system.join("\n\n"))
    }

    /// Goes on with a conversation (in the model API's form, such as
    /// [`AgentOutcome::messages`] plus a new user message) to the model's
    /// next final answer.
    ///
    /// # Errors
    /// [`AgentError::Chat`] when the endpoint fails (after its retries) or
    /// its answer cannot be used (a stream cut mid-answer, events that are
    /// not JSON), [`AgentError::Answer`] when it answers with something
    /// else than a turn, [`AgentError::TooManyRounds`] when the model still
    /// asks for tools in the last round (those calls are not made),
    /// [`AgentError::TokenBudget`] past [`AgentBuilder::max_tokens`].
    ///
    /// # Cancel safety
    /// As [`run`](Self::run).
    pub async fn run_messages(&self, messages: Vec<Value>) -> Result<AgentOutcome, AgentError> {
        let mut built = None;
        let system = (self.model.provider() != Provider::OpenAiChat)
            .then(|| self.system_prompt())
            .flatten();
        let mut run = Run {
            messages,
            calls: Vec::new(),
            system,
            usage: (0, 0),
        };
        let skills = self.hub_skills().await;
        for round in 1..=self.max_rounds {
            let toolset = match &self.toolset {
                Some(toolset) => toolset.clone(),
                None => self.hub_toolset(&mut built),
            };
            let span = tracing::info_span!("agent.round", round);
            if let Some(text) = self
                .round(round, &toolset, skills.as_ref(), &mut run)
                .instrument(span)
                .await?
            {
                return Ok(AgentOutcome {
                    text,
                    rounds: round,
                    calls: run.calls,
                    messages: run.messages,
                    usage: run.usage,
                });
            }
            if let Some(budget) = self.max_tokens {
                let used = run.usage.0 + run.usage.1;
                if used > budget {
                    return Err(AgentError::TokenBudget {
                        round,
                        used,
                        budget,
                        calls: run.calls,
                    });
                }
            }
        }
        tracing::warn!(
            max_rounds = self.max_rounds,
            "the model was still calling tools"
        );
        Err(AgentError::TooManyRounds {
            max_rounds: self.max_rounds,
            calls: run.calls,
        })
    }

    /// The toolset of the hub's tools now: `built`'s again when the hub's
    /// tools and servers waiting for a login are the same (so what
    /// `search_tools` loaded stays loaded), else a new one.
    fn hub_toolset(&self, built: &mut Option<(Vec<String>, Arc<Toolset>)>) -> Arc<Toolset> {
        let mut key: Vec<String> = self.hub.tools().into_iter().map(|t| t.name).collect();
        if self.toolset_options.authenticate {
            key.extend(
                self.hub
                    .list()
                    .into_iter()
                    .filter(|s| matches!(s.state, switchboard_hub::ServerState::NeedsAuth { .. }))
                    .map(|s| format!("{}\u{0}needs-auth", s.name)),
            );
        }
        if let Some((old, toolset)) = built.as_ref()
            && *old == key
        {
            return toolset.clone();
        }
        let toolset = Arc::new(Toolset::from_hub(
            self.model.provider(),
            self.toolset_options.clone(),
            &self.hub,
        ));
        *built = Some((key, toolset.clone()));
        toolset
    }

    /// The hub's skills for this run, when [`skills`](AgentBuilder::skills)
    /// is on and a ready server offers some; listing failures are logged.
    async fn hub_skills(&self) -> Option<Skillset> {
        if !self.skills {
            return None;
        }
        let (skills, failed) =
            Skillset::from_hub(self.model.provider(), SkillOptions::default(), &self.hub).await;
        for error in &failed {
            tracing::warn!("skills not listed: {}", error_chain(error));
        }
        (!skills.is_empty()).then_some(skills)
    }

    /// One request and its tool calls; the final text when the model
    /// answered without tool calls.
    async fn round(
        &self,
        round: usize,
        toolset: &Toolset,
        skills: Option<&Skillset>,
        run: &mut Run,
    ) -> Result<Option<String>, AgentError> {
        let provider = self.model.provider();
        let skill_tools = skills.map(Skillset::definitions).unwrap_or_default();
        let tools = if skill_tools.is_empty() {
            toolset.tools_param()
        } else {
            let mut all = toolset.definitions();
            all.extend(skill_tools.iter().map(|d| &**d));
            joined_tools(provider, &all)
        };
        let tool_count = toolset.definitions().len() + skill_tools.len();
        self.emit(|| AgentEvent::Request {
            round,
            messages: run.messages.len(),
            tools: tool_count,
        });
        tracing::debug!(
            messages = run.messages.len(),
            tools = tool_count,
            "asking the model"
        );
        let observe = |event: &StreamEvent| {
            if let StreamEvent::Text(text) = event {
                self.emit(|| AgentEvent::Delta {
                    round,
                    text: text.clone(),
                });
            }
        };
        let request = ModelRequest::new(&run.messages)
            .system(run.system.as_deref())
            .tools((tool_count > 0).then_some(&*tools))
            .fields(&self.fields)
            .observer(self.observer.is_some().then_some(&observe as _));
        let turn = self
            .model
            .turn(request)
            .await
            .map_err(|source| AgentError::Chat { round, source })?;
        if let Some((input, output)) = turn.usage {
            run.usage.0 += input;
            run.usage.1 += output;
        }
        if turn.calls.is_empty() {
            tracing::info!(chars = turn.text.len(), "the model answered");
            self.emit(|| AgentEvent::Answer {
                round,
                text: turn.text.clone(),
            });
            run.messages.extend(turn.items);
            return Ok(Some(turn.text));
        }
        tracing::info!(calls = turn.calls.len(), "the model asked for tool calls");
        if round == self.max_rounds {
            return Ok(None);
        }
        run.messages.extend(turn.items);
        let mut answers = Vec::with_capacity(turn.calls.len());
        for chunk in turn.calls.chunks(self.parallel_calls) {
            answers.extend(
                join_all(
                    chunk
                        .iter()
                        .enumerate()
                        .map(|(i, call)| self.call(round, i, toolset, skills, call)),
                )
                .await,
            );
        }
        let mut results = Vec::with_capacity(answers.len());
        for (result, record) in answers {
            results.push(result);
            run.calls.push(record);
        }
        run.messages.extend(model::answers(provider, results));
        Ok(None)
    }

    /// Runs one call; what to tell the model, and the record.
    async fn call(
        &self,
        round: usize,
        index: usize,
        toolset: &Toolset,
        skills: Option<&Skillset>,
        call: &ModelCall,
    ) -> (ProviderResult, CallRecord) {
        let provider = self.model.provider();
        // The id the answer carries is the model's own (Gemini's may be
        // empty); the record's is made up when there is none.
        let answer_id = call.id.clone();
        let id = if call.id.is_empty() {
            format!("call_{round}_{index}")
        } else {
            call.id.clone()
        };
        let name = call.name.clone();
        let raw_arguments = call.arguments.clone();
        let lookup = toolset.lookup(&name);
        let (server, tool) = match lookup {
            Lookup::Tool(entry) | Lookup::Authenticate(entry) => {
                (Some(entry.server.clone()), Some(entry.tool.name.clone()))
            }
            _ => (None, None),
        };
        let mut record = CallRecord {
            round,
            id: id.clone(),
            name: name.clone(),
            server: server.clone(),
            tool: tool.clone(),
            is_error: true,
        };
        self.emit(|| AgentEvent::Call {
            round,
            id: id.clone(),
            name: name.clone(),
            server: server.clone(),
            arguments: raw_arguments.clone(),
        });
        tracing::debug!(name, ?server, ?tool, "tool call");
        let failure = |message: String| {
            tracing::info!(name, error = message, "tool call failed");
            (
                results::tool_failure(provider, &answer_id, &name, &message),
                message,
            )
        };
        let skill_call = skills.filter(|s| s.lookup(&name, None).is_some());
        let (result, summary) = match (lookup, arguments(&raw_arguments)) {
            // `load_skill`, `read_skill_file`: reads of the servers'
            // skills, verified, through the hub.
            (Lookup::Unknown, Ok(arguments)) if skill_call.is_some() => {
                let answer = match skill_call {
                    Some(skills) => skills.call(&self.hub, &name, arguments.as_ref()).await,
                    None => None,
                };
                match answer {
                    Some(result) => self.answered(&answer_id, &name, &result, &mut record),
                    None => failure(format!("there is no tool named `{name}`")),
                }
            }
            (Lookup::Unknown, _) => failure(format!(
                "there is no tool named `{name}`; call one of the tools the request lists"
            )),
            (_, Err(why)) => failure(format!(
                "the arguments of `{name}` {why}; send a JSON object that matches the tool's \
                 input schema"
            )),
            (Lookup::Search, Ok(arguments)) => {
                let result = toolset.search(arguments.as_ref());
                self.answered(&answer_id, &name, &result, &mut record)
            }
            (Lookup::Authenticate(entry), Ok(_)) => match self.authenticate(&entry.server).await {
                Ok(result) => self.answered(&answer_id, &name, &result, &mut record),
                Err(message) => failure(message),
            },
            (Lookup::Tool(entry), Ok(arguments)) => {
                let arguments = toolset.server_arguments(entry, arguments);
                if self.approved(entry, &name, &arguments).await {
                    match self
                        .hub
                        .call_asking(
                            &entry.server,
                            &entry.tool.name,
                            arguments,
                            switchboard::RequestOptions::default(),
                            self.tool_approver.clone(),
                        )
                        .await
                    {
                        Ok(result) => self.answered(&answer_id, &name, &result, &mut record),
                        Err(error) => failure(error_chain(&error)),
                    }
                } else {
                    failure(format!(
                        "the user declined this call to `{name}`; do not call it again \
                         with the same arguments, ask the user or do without it"
                    ))
                }
            }
        };
        self.emit(|| AgentEvent::Result {
            call: record.clone(),
            summary: summary.clone(),
        });
        (result, record)
    }

    /// Starts the login of `server` for its `authenticate` tool: through
    /// the application's [`login`](AgentBuilder::login) hook when it gave
    /// one, else the hub's OAuth (feature `oauth`). The URL for the user,
    /// or word that it is connected already.
    async fn authenticate(&self, server: &str) -> Result<CallToolResult, String> {
        match &self.login {
            Some(start) => {
                let url = start(server.to_owned())
                    .await
                    .map_err(|why| format!("could not start the login to `{server}`: {why}"))?;
                tracing::info!(server, "login started for the model");
                Ok(CallToolResult::text(format!(
                    "Ask the user to open this URL to log in to `{server}`: {url}\n\
                     Once they have, the server's tools are listed in the next request."
                )))
            }
            None => self.hub_login(server).await,
        }
    }

    /// The hub's OAuth starts the login of `server`.
    #[cfg(feature = "oauth")]
    async fn hub_login(&self, server: &str) -> Result<CallToolResult, String> {
        use switchboard_hub::hub::Connect;
        match self.hub.connect(server).await {
            Ok(Connect::NeedsAuth {
                authorization_url, ..
            }) => Ok(CallToolResult::text(format!(
                "Ask the user to open this URL to log in to `{server}`: {authorization_url}\n\
                 Once they have, the server's tools are listed in the next request."
            ))),
            Ok(_) => Ok(CallToolResult::text(format!(
                "`{server}` is connected; its tools are listed in the next request."
            ))),
            Err(error) => Err(error_chain(&error)),
        }
    }

    /// Without the `oauth` feature the agent cannot log in itself.
    #[cfg(not(feature = "oauth"))]
    async fn hub_login(&self, server: &str) -> Result<CallToolResult, String> {
        Err(format!(
            "this agent cannot start a login (no login hook, and built without the `oauth` \
             feature); ask the user to log in to `{server}` (`switchboard login {server}`)"
        ))
    }

    /// The application's answer for a call (yes without a hook). Calls
    /// of a round run concurrently, so the hook is held for one question
    /// at a time.
    async fn approved(
        &self,
        entry: &crate::ToolEntry,
        name: &str,
        arguments: &Option<Map<String, Value>>,
    ) -> bool {
        let Some(approve) = &self.approval else {
            return true;
        };
        let _one_at_a_time = self.asking.lock().await;
        approve(ApprovalRequest {
            name: name.to_owned(),
            server: entry.server.clone(),
            tool: entry.tool.name.clone(),
            hints: entry.hints.clone(),
            arguments: arguments.clone(),
        })
        .await
    }

    fn answered(
        &self,
        id: &str,
        name: &str,
        result: &CallToolResult,
        record: &mut CallRecord,
    ) -> (ProviderResult, String) {
        record.is_error = result.is_error == Some(true);
        tracing::debug!(name, is_error = record.is_error, "tool result");
        let text: String = result
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join(" ");
        let summary = shorten(&text, SUMMARY);
        (
            results::tool_result(self.model.provider(), id, name, result, &self.results),
            summary,
        )
    }

    fn emit(&self, event: impl FnOnce() -> AgentEvent) {
        if let Some(observer) = &self.observer {
            observer(&event());
        }
    }
}

/// A run's state between rounds.
struct Run {
    messages: Vec<Value>,
    calls: Vec<CallRecord>,
    /// The system prompt sent beside the conversation (not Chat's).
    system: Option<String>,
    usage: (u64, u64),
}

/// The `tools` value of `definitions` in `provider`'s form.
fn joined_tools(provider: Provider, definitions: &[&RawValue]) -> Box<RawValue> {
    crate::toolset::joined(provider, definitions)
}

/// The arguments of a call: Chat Completions sends a JSON string; some
/// servers (Ollama) send the object itself.
fn arguments(raw: &Value) -> Result<Option<Map<String, Value>>, String> {
    let parsed = match raw {
        Value::Null => return Ok(None),
        Value::String(s) if s.trim().is_empty() => return Ok(None),
        Value::String(s) => {
            serde_json::from_str::<Value>(s).map_err(|e| format!("are not valid JSON ({e})"))?
        }
        other => other.clone(),
    };
    match parsed {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Ok(None),
        other => Err(format!("are {}, not an object", kind(&other))),
    }
}

/// What kind of JSON value `value` is, for messages ("a string").
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn shorten(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > max {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// Polls every future on this task until all are done; outputs in input
/// order. (A round's calls borrow the agent and the toolset, so they are
/// not spawned.)
async fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|o| o.expect("every future finished"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_take_strings_objects_and_nothing() {
        assert_eq!(arguments(&json!(null)), Ok(None));
        assert_eq!(arguments(&json!("")), Ok(None));
        assert_eq!(
            arguments(&json!(r#"{"a": 1}"#)).unwrap().unwrap()["a"],
            json!(1)
        );
        assert_eq!(arguments(&json!({"a": 1})).unwrap().unwrap()["a"], json!(1));
        let bad = arguments(&json!("{not json")).unwrap_err();
        assert!(bad.starts_with("are not valid JSON"), "{bad}");
        assert_eq!(
            arguments(&json!("[1]")).unwrap_err(),
            "are an array, not an object"
        );
    }

    #[test]
    fn error_chains_name_every_cause_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] Inner);
        #[derive(Debug, thiserror::Error)]
        #[error("inner")]
        struct Inner;
        assert_eq!(error_chain(&Outer(Inner)), "outer: inner");
    }

    #[tokio::test]
    async fn join_all_keeps_the_input_order() {
        let slow = async {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            1
        };
        let fast = async { 2 };
        let futures: Vec<Pin<Box<dyn Future<Output = i32>>>> = vec![Box::pin(slow), Box::pin(fast)];
        assert_eq!(join_all(futures).await, vec![1, 2]);
    }
}
