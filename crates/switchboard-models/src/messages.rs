//! Prompts (`prompts/get`) as provider messages; resources
//! (`resources/read`) as context parts.
//!
//! Content is converted as in [`results`](crate::results) (same headers,
//! notes, media rules, budget and media folder), with what each provider
//! takes in a message rather than in a tool result:
//!
//! - **user** messages take images (every provider; OpenAI and Anthropic
//!   png, jpeg, webp, gif, Gemini its list) and PDFs (Responses
//!   `input_file`, Anthropic `document`, Gemini `inlineData`; Chat
//!   Completions gets them saved), Gemini also audio and video;
//! - **assistant** messages carry text only: no provider takes media from
//!   the assistant, so media there are saved (or described) like media a
//!   provider cannot take.
//!
//! # Prompts
//!
//! Each [`PromptMessage`](switchboard_types::PromptMessage) becomes one
//! message in the provider's shape:
//!
//! - OpenAI Chat: `{"role", "content"}`, content a string when it is only
//!   text, else `text` and `image_url` parts;
//! - OpenAI Responses: an input message `{"role", "content": [...]}` with
//!   `input_text` / `input_image` / `input_file` parts, or `output_text`
//!   for the assistant;
//! - Anthropic: `{"role", "content": [blocks]}`;
//! - Gemini: a `contents` entry `{"role": "user" | "model", "parts"}`.
//!
//! For Anthropic and Gemini, consecutive messages of the same role are
//! merged into one message with several blocks (parts): both APIs read
//! turns as alternating, and an MCP prompt message holds one block only.
//! OpenAI takes consecutive same-role messages as they are, so they stay
//! apart. A message left with no content (an empty text, or a block skipped
//! by [`ResultOptions::skip_user_only`]) is dropped, since providers reject
//! empty messages. The budget applies to each message on its own. The
//! prompt's `description` is for people choosing a prompt and is not
//! included; files the conversion saves are referenced by path in the text.
//!
//! # Resources
//!
//! [`resource_parts`] gives the content parts of a `user` message: text
//! contents under a `[resource <uri> (<mime>)]` header line, blobs as
//! images (or documents) where the provider takes them, else saved, all
//! under one budget.

use serde_json::{Value, json};
use switchboard_types::{GetPromptResult, ReadResourceResult, Role};

use crate::Provider;
use crate::results::{Converter, Part, Place, ResultOptions, content_part, join_text};

/// The prompt's messages in `provider`'s form (Gemini: `contents` entries).
pub fn prompt_messages(
    provider: Provider,
    prompt: &GetPromptResult,
    options: &ResultOptions,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut last_role: Option<Role> = None;
    for message in &prompt.messages {
        let place = match message.role {
            Role::User => Place::User,
            Role::Assistant => Place::Assistant,
        };
        let mut conv = Converter::new(provider, place, options, "prompt");
        conv.block(&message.content);
        conv.apply_budget();
        if conv.parts.is_empty() {
            continue;
        }
        let parts: Vec<Value> = conv
            .parts
            .iter()
            .map(|p| content_part(provider, place, p))
            .collect();
        let merge = matches!(provider, Provider::Anthropic | Provider::Gemini)
            && last_role == Some(message.role);
        last_role = Some(message.role);
        let role = match (provider, message.role) {
            (_, Role::User) => "user",
            (Provider::Gemini, Role::Assistant) => "model",
            (_, Role::Assistant) => "assistant",
        };
        let key = if provider == Provider::Gemini {
            "parts"
        } else {
            "content"
        };
        if merge && let Some(Value::Array(existing)) = out.last_mut().and_then(|m| m.get_mut(key)) {
            existing.extend(parts);
            continue;
        }
        let content = if provider == Provider::OpenAiChat
            && conv.parts.iter().all(|p| !matches!(p, Part::Inline(_)))
        {
            Value::String(join_text(&conv.parts))
        } else {
            Value::Array(parts)
        };
        out.push(json!({ "role": role, key: content }));
    }
    out
}

/// The resource's contents as content parts of a `user` message in
/// `provider`'s form.
pub fn resource_parts(
    provider: Provider,
    resource: &ReadResourceResult,
    options: &ResultOptions,
) -> Vec<Value> {
    let mut conv = Converter::new(provider, Place::User, options, "resource");
    for contents in &resource.contents {
        conv.contents(contents);
    }
    conv.apply_budget();
    if conv.parts.is_empty() {
        conv.text("[the resource has no contents]".into());
    }
    conv.parts
        .iter()
        .map(|p| content_part(provider, Place::User, p))
        .collect()
}
