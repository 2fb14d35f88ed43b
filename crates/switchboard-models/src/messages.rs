//! Prompts (`prompts/get`) as provider messages; resources
//! (`resources/read`) as context parts.
//!
//! SKELETON — owned by the results helper.

use serde_json::Value;
use switchboard_types::{GetPromptResult, ReadResourceResult};

use crate::Provider;
use crate::results::ResultOptions;

/// The prompt's messages in `provider`'s form (Gemini: `contents` entries).
pub fn prompt_messages(
    provider: Provider,
    prompt: &GetPromptResult,
    options: &ResultOptions,
) -> Vec<Value> {
    let _ = (provider, prompt, options);
    unimplemented!("results helper")
}

/// The resource's contents as content parts of a `user` message in
/// `provider`'s form.
pub fn resource_parts(
    provider: Provider,
    resource: &ReadResourceResult,
    options: &ResultOptions,
) -> Vec<Value> {
    let _ = (provider, resource, options);
    unimplemented!("results helper")
}
