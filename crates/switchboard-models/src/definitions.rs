//! Tool definitions in each provider's shape.
//!
//! ```
//! use serde_json::json;
//! use switchboard_models::definitions::{DefinitionOptions, definition};
//! use switchboard_models::Provider;
//! use switchboard_types::Tool;
//!
//! let tool: Tool = serde_json::from_value(json!({
//!     "name": "create_issue",
//!     "description": "Opens an issue.",
//!     "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}}
//! })).unwrap();
//! let d = definition(Provider::Anthropic, "mcp__github__create_issue", &tool, &DefinitionOptions::default());
//! assert_eq!(d.value, json!({
//!     "name": "mcp__github__create_issue",
//!     "description": "Opens an issue.",
//!     "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}}
//! }));
//! ```
//!
//! A definition carries the name, the description and the input schema,
//! nothing else: annotations (`readOnlyHint` …) are the server's untrusted
//! claims and go to the application as [`ToolHints`], not to the model.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_types::Tool;

use crate::Provider;
use crate::schema::{self, Note};

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

impl DefinitionOptions {
    /// Sets the longest description, in characters.
    pub fn description_cap(mut self, cap: usize) -> Self {
        self.description_cap = cap;
        self
    }

    /// Asks for OpenAI `strict: true` where the schema allows it.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Sets Gemini's schema field.
    pub fn gemini_schema(mut self, gemini_schema: GeminiSchema) -> Self {
        self.gemini_schema = gemini_schema;
        self
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
    /// The hints of `tool`'s annotations; the title is `tool.title`, else
    /// `annotations.title`.
    pub fn of(tool: &Tool) -> Self {
        let annotations = tool.annotations.as_ref();
        ToolHints {
            title: tool
                .title
                .clone()
                .or_else(|| annotations.and_then(|a| a.title.clone())),
            read_only: annotations.and_then(|a| a.read_only_hint),
            destructive: annotations.and_then(|a| a.destructive_hint),
            idempotent: annotations.and_then(|a| a.idempotent_hint),
            open_world: annotations.and_then(|a| a.open_world_hint),
        }
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
///
/// - OpenAI Responses: `{"type": "function", "name", "description",
///   "parameters", "strict"}` — `strict` always written, since the
///   Responses API takes a missing one as `true`;
/// - OpenAI Chat Completions: `{"type": "function", "function": {"name",
///   "description", "parameters"}}`, plus `"strict": true` when strict;
/// - Anthropic: `{"name", "description", "input_schema"}`;
/// - Gemini: `{"name", "description", "parameters"}` (the schema cleaned
///   up, see [`schema::gemini`]; left out for a tool without arguments,
///   since Gemini rejects an object schema with no properties), or with
///   [`GeminiSchema::JsonSchema`] `"parametersJsonSchema"`: the input
///   schema as is.
///
/// The schema is [`schema::for_provider`]'s; with
/// [`DefinitionOptions::strict`], OpenAI gets [`schema::openai_strict`]'s
/// and `strict: true`, or — when the schema cannot be strict — the
/// ordinary one, `strict: false` and a note saying why.
///
/// The description is [`description`]'s, capped at
/// [`DefinitionOptions::description_cap`] characters by [`cap_text`];
/// when the tool has none at all, the key is left out (every provider
/// takes that).
pub fn definition(
    provider: Provider,
    name: &str,
    tool: &Tool,
    options: &DefinitionOptions,
) -> Definition {
    let mut notes = Vec::new();
    let parsed = tool.input_schema.to_object();
    let view = View::new(provider, name, tool, parsed.as_ref(), options, &mut notes);
    Definition {
        value: serde_json::to_value(&view).expect("a definition is JSON"),
        notes,
    }
}

/// [`definition`] as JSON text, written straight from `tool` where the
/// provider takes its schema as is: no copy of the schema is made, which
/// is most of the cost for thousands of tools (see `benches/adapt.rs`).
/// The text is exactly [`definition`]'s value, serialized.
pub fn definition_json(
    provider: Provider,
    name: &str,
    tool: &Tool,
    options: &DefinitionOptions,
) -> (Box<RawValue>, Vec<Note>) {
    let mut notes = Vec::new();
    let parsed = tool.input_schema.to_object();
    let view = View::new(provider, name, tool, parsed.as_ref(), options, &mut notes);
    let json = serde_json::value::to_raw_value(&view).expect("a definition is JSON");
    (json, notes)
}

/// A definition before it is written: the parts, with the schema borrowed
/// when it goes out unchanged. [`definition`] and [`definition_json`]
/// both write this, so their outputs cannot drift apart.
struct View<'a> {
    provider: Provider,
    name: &'a str,
    description: Option<Cow<'a, str>>,
    /// The schema's key (`parameters`, `input_schema`,
    /// `parametersJsonSchema`) and the schema; `None` leaves it out.
    parameters: Option<(&'static str, Schema<'a>)>,
    strict: bool,
}

enum Schema<'a> {
    /// The tool's schema text, byte for byte.
    AsIs(&'a RawValue),
    Changed(Value),
    /// Gemini's rewrite written straight from the input (same text as
    /// [`schema::gemini`]'s value); only for schemas with properties.
    Gemini(crate::schema::GeminiView<'a>),
    /// OpenAI strict mode written straight from the input (same text as
    /// [`schema::openai_strict`]'s value).
    Strict(crate::schema::StrictView<'a>),
}

impl<'a> View<'a> {
    /// `parsed` is `tool`'s input schema, parsed by the caller (so that
    /// the views can borrow it).
    fn new(
        provider: Provider,
        name: &'a str,
        tool: &'a Tool,
        parsed: Result<&'a Map<String, Value>, &serde_json::Error>,
        options: &DefinitionOptions,
        notes: &mut Vec<Note>,
    ) -> Self {
        let description = description(tool).map(|d| {
            let capped = cap_text(d, options.description_cap);
            if let Cow::Owned(_) = capped {
                notes.push(Note {
                    at: String::new(),
                    what: format!(
                        "description cut to {} characters (from {})",
                        options.description_cap,
                        d.chars().count()
                    ),
                });
            }
            capped
        });
        let is_openai = matches!(provider, Provider::OpenAiResponses | Provider::OpenAiChat);
        let mut strict = false;
        let raw = tool.input_schema.as_raw();
        let parsed = match parsed {
            // Too deep to walk: nothing can be cleaned, so the provider
            // gets the text and says what it thinks of it.
            Err(error) => {
                notes.push(Note {
                    at: String::new(),
                    what: format!("schema sent as is: it cannot be parsed ({error})"),
                });
                return View {
                    provider,
                    name,
                    description,
                    parameters: Some((
                        match provider {
                            Provider::Anthropic => "input_schema",
                            Provider::Gemini
                                if options.gemini_schema == GeminiSchema::JsonSchema =>
                            {
                                "parametersJsonSchema"
                            }
                            _ => "parameters",
                        },
                        Schema::AsIs(raw),
                    )),
                    strict,
                };
            }
            Ok(map) => map,
        };
        let schema = if is_openai && options.strict {
            // Written straight from the input: the same text and notes as
            // `schema::openai_strict_noted`'s value.
            match crate::schema::strict_view(parsed) {
                Ok((parameters, mut more)) => {
                    strict = true;
                    notes.append(&mut more);
                    Some(Schema::Strict(parameters))
                }
                Err(reason) => {
                    notes.push(Note {
                        at: String::new(),
                        what: format!("strict mode off for this tool: {reason}"),
                    });
                    Some(cleaned(provider, parsed, raw, notes))
                }
            }
        } else if provider == Provider::Gemini && options.gemini_schema == GeminiSchema::JsonSchema
        {
            None
        } else {
            Some(cleaned(provider, parsed, raw, notes))
        };
        let parameters = match provider {
            Provider::OpenAiResponses | Provider::OpenAiChat => {
                schema.map(|schema| ("parameters", schema))
            }
            Provider::Anthropic => schema.map(|schema| ("input_schema", schema)),
            Provider::Gemini => match schema {
                None => Some(("parametersJsonSchema", Schema::AsIs(raw))),
                Some(cleaned) if cleaned.takes_no_arguments(parsed) => {
                    notes.push(Note {
                        at: String::new(),
                        what: "`parameters` left out: the tool takes no arguments and Gemini \
                               rejects an object schema without properties"
                            .into(),
                    });
                    None
                }
                Some(cleaned) => Some(("parameters", cleaned)),
            },
        };
        View {
            provider,
            name,
            description,
            parameters,
            strict,
        }
    }
}

impl Serialize for Schema<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Schema::AsIs(raw) => raw.serialize(serializer),
            Schema::Changed(value) => value.serialize(serializer),
            Schema::Gemini(view) => view.serialize(serializer),
            Schema::Strict(view) => view.serialize(serializer),
        }
    }
}

impl Schema<'_> {
    /// `parsed` is what [`Schema::AsIs`] holds, parsed.
    fn takes_no_arguments(&self, parsed: &Map<String, Value>) -> bool {
        match self {
            Schema::AsIs(_) => object_without_properties(parsed),
            Schema::Changed(value) => value.as_object().is_some_and(object_without_properties),
            // Only made for input with properties, which the rewrite keeps.
            Schema::Gemini(_) => false,
            // Strict schemas are OpenAI's, never asked.
            Schema::Strict(_) => false,
        }
    }
}

impl Serialize for View<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// `name`, `description` and the schema: the function itself.
        struct Function<'v, 'a>(&'v View<'a>, bool);
        impl Serialize for Function<'_, '_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let Function(view, with_strict) = *self;
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("name", view.name)?;
                if let Some(description) = &view.description {
                    map.serialize_entry("description", description.as_ref())?;
                }
                if let Some((key, schema)) = &view.parameters {
                    map.serialize_entry(key, schema)?;
                }
                if with_strict {
                    map.serialize_entry("strict", &true)?;
                }
                map.end()
            }
        }
        match self.provider {
            Provider::OpenAiResponses => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("type", "function")?;
                map.serialize_entry("name", self.name)?;
                if let Some(description) = &self.description {
                    map.serialize_entry("description", description.as_ref())?;
                }
                match &self.parameters {
                    Some((key, schema)) => map.serialize_entry(key, schema)?,
                    None => map.serialize_entry("parameters", &Value::Null)?,
                }
                // Always written: the Responses API takes a missing one as `true`.
                map.serialize_entry("strict", &self.strict)?;
                map.end()
            }
            Provider::OpenAiChat => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "function")?;
                map.serialize_entry("function", &Function(self, self.strict))?;
                map.end()
            }
            Provider::Anthropic | Provider::Gemini => Function(self, false).serialize(serializer),
        }
    }
}

/// `schema` is `raw`, parsed.
fn cleaned<'a>(
    provider: Provider,
    schema: &'a Map<String, Value>,
    raw: &'a RawValue,
    notes: &mut Vec<Note>,
) -> Schema<'a> {
    // The common case, checked without a copy: a schema the provider takes
    // as is (the conditions are those of `schema::for_provider`'s rules).
    let as_is = match provider {
        Provider::Anthropic => schema.contains_key("type"),
        Provider::OpenAiResponses | Provider::OpenAiChat => {
            schema.contains_key("type")
                && (schema.contains_key("properties")
                    || schema.get("type").and_then(Value::as_str) != Some("object"))
        }
        Provider::Gemini => schema::gemini_is_clean(schema),
    };
    if as_is {
        return Schema::AsIs(raw);
    }
    // Gemini's rewrite, streamed, when the schema has properties (a tool
    // with no arguments loses its `parameters`, decided on the value).
    if provider == Provider::Gemini
        && schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty())
    {
        let (view, mut more) = crate::schema::gemini_view(schema);
        notes.append(&mut more);
        return Schema::Gemini(view);
    }
    let (value, mut more) = schema::for_provider(provider, schema);
    notes.append(&mut more);
    Schema::Changed(value)
}

/// An object schema with no properties (and nothing else that could
/// describe arguments).
fn object_without_properties(map: &Map<String, Value>) -> bool {
    map.get("type").and_then(Value::as_str) == Some("object")
        && map
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        && !map.contains_key("anyOf")
}

/// The text a definition describes `tool` with, before capping: its
/// `description` when that has more than white space, else its display
/// name when that differs from the tool's name (`title`, then
/// `annotations.title`: a title is better than nothing), else `None`. An
/// empty description is never sent.
pub fn description(tool: &Tool) -> Option<&str> {
    if let Some(d) = tool.description.as_deref()
        && !d.trim().is_empty()
    {
        return Some(d);
    }
    let title = tool.display_name();
    (title != tool.name && !title.trim().is_empty()).then_some(title)
}

/// `text` cut to `cap` characters with a visible marker saying how much
/// was cut; unchanged when it fits.
///
/// Characters are Unicode scalar values (`char`s), so no character is
/// split. The result, marker included, is at most `cap` characters: the
/// kept text (trailing white space trimmed), then
/// `… [N more characters cut]`. A `cap` too small for the marker gives
/// just the first `cap` characters.
pub fn cap_text(text: &str, cap: usize) -> Cow<'_, str> {
    // Cheap exit: a string of at most `cap` bytes has at most `cap` chars.
    if text.len() <= cap {
        return Cow::Borrowed(text);
    }
    let total = text.chars().count();
    if total <= cap {
        return Cow::Borrowed(text);
    }
    // The marker with `total`'s digits is at least as long as the real one
    // (what is left out is less than `total`), so the first round fits;
    // a second with the real marker's width may keep a character more.
    let mut width = marker(total).chars().count();
    let mut best: Option<String> = None;
    for _ in 0..2 {
        let Some(keep) = cap.checked_sub(width) else {
            break;
        };
        let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
        let kept = text[..end].trim_end();
        let kept_chars = kept.chars().count();
        let marker = marker(total - kept_chars);
        let marker_chars = marker.chars().count();
        if kept_chars + marker_chars <= cap {
            best = Some(format!("{kept}{marker}"));
        }
        if marker_chars == width {
            break;
        }
        width = marker_chars;
    }
    Cow::Owned(best.unwrap_or_else(|| text.chars().take(cap).collect()))
}

fn marker(left_out: usize) -> String {
    format!(" … [{left_out} more characters cut]")
}

/// A server's `instructions` for a system prompt: a line naming the server,
/// then the text capped like descriptions ([`cap_text`] at
/// [`DefinitionOptions::description_cap`]). Empty (so it can be skipped)
/// when the text is only white space.
pub fn instructions(server: &str, text: &str, options: &DefinitionOptions) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let capped = cap_text(text, options.description_cap);
    format!("Instructions from MCP server `{server}`:\n{capped}")
}
