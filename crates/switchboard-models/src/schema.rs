//! Per-provider input-schema clean-up: only what a provider rejects is
//! changed, each rule documented and tested; OpenAI strict mode.
//!
//! SKELETON — owned by the names/definitions helper.

use serde_json::{Map, Value};

use crate::Provider;

/// What a clean-up changed, for the application's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// JSON pointer into the schema.
    pub at: String,
    /// What was done and why.
    pub what: String,
}

/// The schema `provider` gets for `schema` (a tool's `inputSchema`), and
/// what was changed.
pub fn for_provider(provider: Provider, schema: &Map<String, Value>) -> (Value, Vec<Note>) {
    let _ = (provider, schema);
    unimplemented!("schema helper")
}

/// The schema made strict for OpenAI (`strict: true`), or why it cannot be.
pub fn openai_strict(schema: &Map<String, Value>) -> Result<Value, String> {
    let _ = schema;
    unimplemented!("schema helper")
}
