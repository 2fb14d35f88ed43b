//! Argument completion (`completion/complete`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::meta::{JsonObject, ResultType};

/// A prompt to complete arguments for (`"type": "ref/prompt"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptReference {
    /// The prompt's name.
    pub name: String,
    /// Display name (2025-06-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// A resource template (or, in 2024-11-05, a resource) to complete
/// arguments for (`"type": "ref/resource"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// The URI or URI template.
    pub uri: String,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// What is being completed, tagged by `"type"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum Reference {
    /// `"ref/prompt"`.
    #[serde(rename = "ref/prompt")]
    Prompt(PromptReference),
    /// `"ref/resource"`.
    #[serde(rename = "ref/resource")]
    Resource(ResourceTemplateReference),
}

/// The argument being completed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompleteArgument {
    /// The argument's name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
}

/// Context for a completion (2025-06-18).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompleteContext {
    /// Arguments already resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// Params of `completion/complete`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// What is being completed.
    #[serde(rename = "ref")]
    pub r#ref: Reference,
    /// The argument being completed.
    pub argument: CompleteArgument,
    /// Context (2025-06-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The completions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// At most 100 values.
    pub values: Vec<String>,
    /// How many exist in total, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more exist than were sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The result of `completion/complete`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The completions.
    pub completion: Completion,
    /// `complete` (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}
