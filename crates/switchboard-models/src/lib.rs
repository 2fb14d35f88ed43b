//! MCP tools, results, prompts and resources as the objects model APIs take.
//!
//! An agent hands a model its MCP servers' tools as ordinary function tools
//! and gives the model each result back in the form its API accepts. This
//! crate does that for four API shapes ([`Provider`]):
//!
//! - **names** ([`names`]): `mcp__<server>__<tool>`, sanitized to the
//!   provider's rule, shortened with a stable hash when too long, collisions
//!   resolved deterministically, and mapped back to (server, tool);
//! - **definitions** ([`definitions`]): descriptions capped with a visible
//!   marker, input schemas passed whole except for what a provider rejects
//!   ([`schema`]), OpenAI strict mode on request, annotations exposed as
//!   untrusted hints;
//! - **results** ([`results`]): text, images, audio, embedded resources,
//!   resource links, `structuredContent` and `isError` in each provider's
//!   form, with media a provider cannot take saved to a per-session folder
//!   ([`media`]) and a size budget;
//! - **prompts and resources** ([`messages`]) as provider messages and
//!   context parts;
//! - a [`Toolset`] that ties them together, with an opt-in `search_tools`
//!   meta-tool for large tool lists;
//! - a [`Skillset`]: servers' skills (the MCP skills extension) as two
//!   tools, `load_skill` (whose description lists each skill's name and
//!   description) and `read_skill_file`, loaded and verified on demand;
//! - with feature `agent`, an OpenAI-compatible chat client and an agent
//!   loop over a [`switchboard_hub::Hub`] (see `examples/agent.rs`); with
//!   feature `sampling`, the same endpoint as a sampling handler.
//!
//! Everything here is plain data in, JSON out (a [`serde_json::Value`], or
//! for a toolset's definitions JSON text that serializes as itself): exactly
//! what the provider's HTTP API takes, so it works with any client crate
//! (or none).
//!
//! ```
//! use serde_json::json;
//! use switchboard_models::{Lookup, Provider, ResultOptions, Toolset, ToolsetOptions, results};
//! use switchboard_types::{CallToolResult, Tool};
//!
//! let tool: Tool = serde_json::from_value(json!({
//!     "name": "get_weather",
//!     "description": "The weather in a city.",
//!     "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}
//! })).unwrap();
//! // Many servers' tools (from a Hub: `Toolset::from_hub`).
//! let tools = Toolset::new(
//!     Provider::Anthropic,
//!     ToolsetOptions::default(),
//!     [("weather".to_owned(), tool)],
//! );
//! // The request's `tools`:
//! let param: serde_json::Value = serde_json::from_str(tools.tools_param().get()).unwrap();
//! assert_eq!(param[0]["name"], "mcp__weather__get_weather");
//!
//! // The model calls `mcp__weather__get_weather`: which server, which tool?
//! let Lookup::Tool(entry) = tools.lookup("mcp__weather__get_weather") else { panic!() };
//! assert_eq!((entry.server.as_str(), entry.tool.name.as_str()), ("weather", "get_weather"));
//!
//! // The server's result, as the `tool_result` block Anthropic takes.
//! let result = CallToolResult::text("Sunny, 21 °C");
//! let answer = results::tool_result(
//!     Provider::Anthropic, "toolu_01", &entry.name, &result, &ResultOptions::default(),
//! );
//! assert_eq!(answer.items[0]["type"], "tool_result");
//! assert_eq!(answer.items[0]["tool_use_id"], "toolu_01");
//! ```
//!
//! ## Cargo features
//!
//! | feature | default | what |
//! |---|---|---|
//! | `hub` | yes | [`Toolset::from_hub`]: the tools of every server a [`switchboard_hub::Hub`] runs |
//! | `agent` | no | `chat::ChatClient` (a client of any of the four APIs: OpenAI Chat Completions and compatible servers, OpenAI Responses, Anthropic, Gemini), `model::Model` (one turn) and `agent::Agent`, the loop that gives a model the hub's tools and runs its calls; `examples/agent.rs` |
//! | `sampling` | no | `sampling::ModelSampling`: such a model answering servers' `sampling/createMessage`, tools included |
//! | `oauth` | no | the agent starts a server's login when the model calls its `authenticate` tool ([`ToolsetOptions::authenticate`]), through the hub's OAuth (`switchboard-hub/oauth`) |
//! | `rig` | no | `rig::hub_tools`, `rig::skill_tools`: the hub's tools and skills as tools of the [rig](https://docs.rs/rig-core) agent framework, kept in step with the hub by `rig::ToolSync` (or `rig::ToolsWatch`); `examples/rig_agent.rs` |
//!
//! ## Limits (all configurable)
//!
//! - descriptions and server instructions: 2048 characters
//!   ([`DefinitionOptions::description_cap`]), cut with a marker;
//! - a result's text: 100 000 bytes ([`ResultOptions::budget`]), cut with
//!   a marker saying what was cut and where the whole is;
//! - inline media: 5 MB per item ([`ResultOptions::max_inline_media`]);
//!   bigger ones go to the media folder;
//! - `search_tools`: stands in for the list above 40 tools, returns at
//!   most 8 ([`SearchOptions`]);
//! - the agent: 16 rounds, 8 calls at once, a 16 MiB answer, 300 s per
//!   request (see `agent::AgentBuilder` and `chat::ChatClientBuilder`).

use std::fmt;

pub mod definitions;
pub mod media;
pub mod messages;
pub mod names;
pub mod results;
pub mod schema;
pub mod search;
pub mod skills;
#[cfg(test)]
mod testdata;
pub mod toolset;

#[cfg(feature = "agent")]
pub mod agent;
#[cfg(feature = "agent")]
pub mod chat;
#[cfg(feature = "agent")]
pub mod model;
#[cfg(feature = "rig")]
pub mod rig;
#[cfg(feature = "sampling")]
pub mod sampling;
#[cfg(feature = "agent")]
mod sse;

pub use definitions::{Definition, DefinitionOptions, GeminiSchema, ToolHints};
pub use media::MediaStore;
pub use names::{Collision, NameOptions, Names};
pub use results::{ChatImages, ProviderResult, ResultOptions};
pub use skills::{SkillCall, SkillInfo, SkillOptions, Skillset};
pub use toolset::{Lookup, SearchOptions, ToolEntry, Toolset, ToolsetOptions};

/// The API a value is shaped for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Responses API (`/v1/responses`): `function` tools,
    /// `function_call_output` items.
    OpenAiResponses,
    /// OpenAI Chat Completions (`/v1/chat/completions`) and the many
    /// servers compatible with it (llama.cpp, Ollama, vLLM …).
    OpenAiChat,
    /// Anthropic Messages API: `tools` with `input_schema`, `tool_result`
    /// blocks.
    Anthropic,
    /// Gemini API: `functionDeclarations`, `functionResponse` parts.
    Gemini,
}

impl Provider {
    /// Every provider, for tests and loops.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAiResponses,
        Provider::OpenAiChat,
        Provider::Anthropic,
        Provider::Gemini,
    ];

    /// A short stable name: `openai-responses`, `openai-chat`, `anthropic`, `gemini`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAiResponses => "openai-responses",
            Provider::OpenAiChat => "openai-chat",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Provider {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown provider `{s}`: expected one of openai-responses, openai-chat, \
                     anthropic, gemini"
                )
            })
    }
}

/// An error and its causes, for a model (which sees no `source`): each
/// cause once, `: `-separated.
#[cfg(feature = "hub")]
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
