//! Tool results in each provider's form.
//!
//! SKELETON — owned by the results helper.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use switchboard_types::CallToolResult;

use crate::Provider;
use crate::media::MediaStore;

/// Default for [`ResultOptions::budget`]: 100 KB of text per result.
pub const DEFAULT_BUDGET: usize = 100_000;

/// What Chat Completions does with images (its `tool` messages take text only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChatImages {
    /// Saved to the media folder (or dropped with a note), referenced in text.
    #[default]
    Omit,
    /// Attached to a `user` message to send after the turn's tool messages
    /// ([`ProviderResult::follow_up`]).
    FollowUp,
}

/// How results are mapped.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ResultOptions {
    /// Bytes of text a result may carry; beyond it the text is cut with a
    /// marker saying what was cut and how to get the rest.
    pub budget: usize,
    /// Where media and blobs a provider cannot take go; without one they
    /// are described in text only.
    pub media: Option<Arc<MediaStore>>,
    /// Chat Completions and images.
    pub chat_images: ChatImages,
}

impl Default for ResultOptions {
    fn default() -> Self {
        Self {
            budget: DEFAULT_BUDGET,
            media: None,
            chat_images: ChatImages::default(),
        }
    }
}

/// A result in a provider's form.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ProviderResult {
    /// What answers the call:
    /// - OpenAI Responses: one `function_call_output` input item;
    /// - OpenAI Chat: one `tool` message;
    /// - Anthropic: one `tool_result` content block (a turn's blocks go in
    ///   one `user` message);
    /// - Gemini: a `functionResponse` part, then `inlineData` parts (a
    ///   turn's parts go in one `user` content).
    pub items: Vec<Value>,
    /// Messages to send after all of the turn's answers (Chat Completions
    /// images with [`ChatImages::FollowUp`]).
    pub follow_up: Vec<Value>,
    /// Files written to the media folder.
    pub saved: Vec<PathBuf>,
    /// Whether text was cut to the budget.
    pub truncated: bool,
}

/// `result` of the call `call_id` to the tool the model knows as `name`.
pub fn tool_result(
    provider: Provider,
    call_id: &str,
    name: &str,
    result: &CallToolResult,
    options: &ResultOptions,
) -> ProviderResult {
    let _ = (provider, call_id, name, result, options);
    unimplemented!("results helper")
}

/// A call that failed before the tool gave a result (unknown tool, server
/// down, bad arguments …), told to the model as a tool error.
pub fn tool_failure(
    provider: Provider,
    call_id: &str,
    name: &str,
    message: &str,
) -> ProviderResult {
    let _ = (provider, call_id, name, message);
    unimplemented!("results helper")
}
