//! Tool definitions in each provider's shape.
//!
//! SKELETON — owned by the names/definitions helper.

use serde_json::Value;
use switchboard_types::Tool;

use crate::Provider;
use crate::schema::Note;

/// Default for [`DefinitionOptions::description_cap`], as Claude Code caps
/// descriptions and server instructions.
pub const DEFAULT_DESCRIPTION_CAP: usize = 2048;

/// How Gemini gets input schemas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum GeminiSchema {
    /// `parameters`: the OpenAPI subset Gemini accepts, cleaned up (see
    /// [`crate::schema`]).
    #[default]
    Parameters,
    /// `parametersJsonSchema`: the JSON Schema as is (newer Gemini models).
    JsonSchema,
}

/// How definitions are built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DefinitionOptions {
    /// Longest description (and server instructions), in characters;
    /// longer ones are cut with a visible marker.
    pub description_cap: usize,
    /// OpenAI `strict: true` where the schema allows it.
    pub strict: bool,
    /// Gemini's schema field.
    pub gemini_schema: GeminiSchema,
}

impl Default for DefinitionOptions {
    fn default() -> Self {
        Self {
            description_cap: DEFAULT_DESCRIPTION_CAP,
            strict: false,
            gemini_schema: GeminiSchema::default(),
        }
    }
}

/// A tool's untrusted behaviour hints, for approval UIs. The server
/// claims them; nothing checks them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolHints {
    /// Display title.
    pub title: Option<String>,
    /// Claims not to change its environment.
    pub read_only: Option<bool>,
    /// Claims it may destroy data.
    pub destructive: Option<bool>,
    /// Claims repeating a call has no further effect.
    pub idempotent: Option<bool>,
    /// Claims to reach the open world.
    pub open_world: Option<bool>,
}

impl ToolHints {
    /// The hints of `tool`'s annotations.
    pub fn of(tool: &Tool) -> Self {
        let _ = tool;
        unimplemented!("definitions helper")
    }
}

/// A tool definition for one provider.
#[derive(Clone, Debug, PartialEq)]
pub struct Definition {
    /// The JSON the provider takes for one tool (for Gemini, one entry of
    /// `functionDeclarations`).
    pub value: Value,
    /// What was changed to make it acceptable.
    pub notes: Vec<Note>,
}

/// `tool`'s definition for `provider` under `name`.
pub fn definition(
    provider: Provider,
    name: &str,
    tool: &Tool,
    options: &DefinitionOptions,
) -> Definition {
    let _ = (provider, name, tool, options);
    unimplemented!("definitions helper")
}

/// `text` cut to `cap` characters with a visible marker saying how much
/// was cut; unchanged when it fits.
pub fn cap_text(text: &str, cap: usize) -> std::borrow::Cow<'_, str> {
    let _ = (text, cap);
    unimplemented!("definitions helper")
}
