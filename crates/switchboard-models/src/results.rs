//! Tool results in each provider's form.
//!
//! One file: one conversion per provider over the same content blocks, side
//! by side so that the table below stays true.
//!
//! [`tool_result`] turns an MCP [`CallToolResult`] into what answers the
//! model's call; [`tool_failure`] does the same for a call that failed
//! before the tool gave a result.
//!
//! # What each block becomes
//!
//! | MCP content | OpenAI Responses | OpenAI Chat | Anthropic | Gemini |
//! |---|---|---|---|---|
//! | text | `output` string, or `input_text` | `content` string | `text` block | `response.output` string |
//! | image (png, jpeg, webp, still gif) | `input_image` (data URL) | saved, or a follow-up `user` message ([`ChatImages`]) | `image` block (png, jpeg, gif, webp) | `inlineData` part (png, jpeg, webp, heic, heif) |
//! | audio | saved | saved | saved | `inlineData` (wav, mp3, aiff, aac, ogg, flac) |
//! | embedded text resource | text with a `[resource <uri> (<mime>)]` header line | same | same | same |
//! | embedded blob | decoded; an image or PDF the provider takes goes inline after a header line, anything else is saved | same | same | same |
//! | PDF (blob) | `input_file` | saved | `document` block | `inlineData` |
//! | resource link | a text line naming the URI, name, type and description; not read | same | same | same |
//! | `tool_use`, `tool_result`, unknown blocks | a short text note | same | same | same |
//!
//! "Saved" means written to the [`MediaStore`] and referenced by path in
//! the text; without a store the text describes the item (type, size)
//! instead. Media larger than [`ResultOptions::max_inline_media`] are saved
//! too. Data that is not valid base64 becomes a note, never a panic. Images
//! are checked by their first bytes: a mislabelled PNG goes with the type
//! its bytes show, and bytes that are no image at all are not sent as one
//! (providers reject the whole request for a bad image).
//!
//! # Text
//!
//! Text blocks are kept in order; where a provider takes one string (Chat,
//! Responses without media, Gemini) they are joined with a blank line.
//! Empty text blocks are dropped (Anthropic rejects them); a result with
//! nothing left says `The tool returned no content.` instead of being empty.
//!
//! # `structuredContent`
//!
//! The spec asks a tool returning `structuredContent` to return the same
//! JSON as text too. When no text block parses to the same JSON value, its
//! compact JSON is added as a last text block, so the model sees it either
//! way. Gemini takes JSON natively: there `response.output` is the
//! structured value itself, text blocks mirroring it are dropped and any
//! other text goes in `response.text` — unless the JSON is larger than the
//! budget, in which case it is handled as text like everywhere else.
//!
//! # `isError`
//!
//! Anthropic gets `is_error: true`; Gemini gets `response.error` in place
//! of `response.output` (Gemini's documented convention). OpenAI has no
//! error flag, so the text starts with `Error: ` (unless it already starts
//! with "error").
//!
//! # Budget
//!
//! [`ResultOptions::budget`] bounds the bytes of text: text blocks,
//! embedded text resources, resource links, notes on unknown blocks and
//! the JSON of `structuredContent` — not the one-line notes about media
//! (where a file was saved, why an image is not shown), which are never
//! cut since without them the model would not know the media exist, and
//! not the blank lines joining blocks. Past the budget, text is cut on a
//! character boundary and a marker follows (on top of the budget), saying
//! how much was shown and how to see the rest; with a media store the
//! whole text is saved first and the marker names the file. Later text
//! blocks are dropped; media and their notes stay.
//! [`ProviderResult::truncated`] is set. Media are not counted: they have
//! their own cap ([`ResultOptions::max_inline_media`]).
//!
//! # Annotations
//!
//! Blocks annotated `audience: ["user"]` go to the model like any other
//! (as Claude Code does): the annotation is a hint, and the model is often
//! the only one who will read the result. [`ResultOptions::skip_user_only`]
//! drops them instead.
//!
//! # Call ids
//!
//! Gemini's `functionResponse` carries `id` when `call_id` is not empty
//! (Gemini function calls have an `id` only on some models; pass `""` when
//! the call had none). Gemini 3's nested `functionResponse.parts` are not
//! used: media go in parts after the `functionResponse`, which every model
//! takes.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use serde_json::{Map, Value, json};
use switchboard_types::{
    Annotations, CallToolResult, ContentBlock, EmbeddedResource, ResourceContents, ResourceLink,
    Role,
};

use crate::Provider;
use crate::media::MediaStore;

/// Default for [`ResultOptions::budget`]: 100 KB of text per result.
pub const DEFAULT_BUDGET: usize = 100_000;

/// Default for [`ResultOptions::max_inline_media`]: 5 MB (decoded) per item.
pub const DEFAULT_MAX_INLINE_MEDIA: usize = 5_000_000;

/// What a result with nothing to show says.
const NO_CONTENT: &str = "The tool returned no content.";

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
    /// Largest image, audio or document (decoded bytes) sent inline; larger
    /// ones are saved like media the provider cannot take.
    pub max_inline_media: usize,
    /// Leave out blocks annotated for the user only (`audience: ["user"]`).
    /// Off by default: they reach the model like any other block.
    pub skip_user_only: bool,
}

impl Default for ResultOptions {
    fn default() -> Self {
        Self {
            budget: DEFAULT_BUDGET,
            media: None,
            chat_images: ChatImages::default(),
            max_inline_media: DEFAULT_MAX_INLINE_MEDIA,
            skip_user_only: false,
        }
    }
}

impl ResultOptions {
    /// Sets the text budget, in bytes.
    pub fn budget(mut self, budget: usize) -> Self {
        self.budget = budget;
        self
    }

    /// Sets (or, with `None`, removes) the media store.
    pub fn media(mut self, media: Option<Arc<MediaStore>>) -> Self {
        self.media = media;
        self
    }

    /// Sets what Chat Completions does with images.
    pub fn chat_images(mut self, chat_images: ChatImages) -> Self {
        self.chat_images = chat_images;
        self
    }

    /// Sets the largest media item sent inline, in decoded bytes.
    pub fn max_inline_media(mut self, bytes: usize) -> Self {
        self.max_inline_media = bytes;
        self
    }

    /// Sets whether blocks for the user only are left out.
    pub fn skip_user_only(mut self, skip: bool) -> Self {
        self.skip_user_only = skip;
        self
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
    let structured = result.structured_content.as_ref();
    // Gemini takes the structured value as is, if it fits the budget.
    let gemini_structured = structured.filter(|value| {
        provider == Provider::Gemini
            && serde_json::to_string(value).is_ok_and(|s| s.len() <= options.budget)
    });
    let mirrors = |block: &ContentBlock| {
        structured.is_some_and(|s| {
            block
                .as_text()
                .and_then(|t| serde_json::from_str::<Value>(t.trim()).ok())
                .is_some_and(|v| &v == s)
        })
    };

    let mut conv = Converter::new(provider, Place::ToolResult, options, name);
    for block in &result.content {
        if gemini_structured.is_some() && mirrors(block) {
            continue;
        }
        conv.block(block);
    }
    if gemini_structured.is_none()
        && let Some(value) = structured
        && !result.content.iter().any(mirrors)
    {
        conv.text(value.to_string());
    }
    conv.apply_budget();
    if conv.parts.is_empty() && gemini_structured.is_none() {
        conv.parts.push(Part::Text(NO_CONTENT.into()));
    }
    let Converter {
        parts,
        saved,
        truncated,
        ..
    } = conv;
    let is_error = result.is_error();

    let mut out = ProviderResult {
        saved,
        truncated,
        ..ProviderResult::default()
    };
    match provider {
        Provider::OpenAiResponses => {
            let parts = openai_error(parts, is_error);
            let output = if parts.iter().all(|p| !matches!(p, Part::Inline(_))) {
                Value::String(join_text(&parts))
            } else {
                Value::Array(
                    parts
                        .iter()
                        .map(|p| content_part(provider, Place::ToolResult, p))
                        .collect(),
                )
            };
            out.items.push(json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": output,
            }));
        }
        Provider::OpenAiChat => {
            let parts = openai_error(parts, is_error);
            out.items.push(json!({
                "role": "tool",
                "tool_call_id": call_id,
                "content": join_text(&parts),
            }));
            let images: Vec<Value> = parts
                .iter()
                .filter(|p| matches!(p, Part::Inline(_)))
                .map(|p| content_part(provider, Place::User, p))
                .collect();
            if !images.is_empty() {
                let mut content = vec![json!({
                    "type": "text",
                    "text": format!("Images from tool {name} (call {call_id}):"),
                })];
                content.extend(images);
                out.follow_up
                    .push(json!({ "role": "user", "content": content }));
            }
        }
        Provider::Anthropic => {
            let content: Vec<Value> = parts
                .iter()
                .map(|p| content_part(provider, Place::ToolResult, p))
                .collect();
            let mut block = json!({
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": content,
            });
            if is_error {
                block["is_error"] = Value::Bool(true);
            }
            out.items.push(block);
        }
        Provider::Gemini => {
            let text = join_text(&parts);
            let inline: Vec<&Inline> = parts
                .iter()
                .filter_map(|p| match p {
                    Part::Inline(i) => Some(i),
                    Part::Text(_) | Part::Note(_) => None,
                })
                .collect();
            let key = if is_error { "error" } else { "output" };
            let mut response = Map::new();
            match gemini_structured {
                Some(value) => {
                    response.insert(key.into(), value.clone());
                    if !text.is_empty() {
                        response.insert("text".into(), Value::String(text));
                    }
                }
                None if text.is_empty() => {
                    let mimes: Vec<&str> = inline.iter().map(|i| i.mime.as_str()).collect();
                    response.insert(
                        key.into(),
                        Value::String(format!("See the attached {}.", mimes.join(", "))),
                    );
                }
                None => {
                    response.insert(key.into(), Value::String(text));
                }
            }
            out.items.push(gemini_function_response(
                call_id,
                name,
                Value::Object(response),
            ));
            out.items
                .extend(inline.into_iter().map(|i| inline_part(provider, i)));
        }
    }
    out
}

/// A call that failed before the tool gave a result (unknown tool, server
/// down, bad arguments …), told to the model as a tool error.
pub fn tool_failure(
    provider: Provider,
    call_id: &str,
    name: &str,
    message: &str,
) -> ProviderResult {
    let message = if message.trim().is_empty() {
        "the call failed"
    } else {
        message
    };
    let item = match provider {
        Provider::OpenAiResponses => json!({
            "type": "function_call_output",
            "call_id": call_id,
            "output": error_text(message),
        }),
        Provider::OpenAiChat => json!({
            "role": "tool",
            "tool_call_id": call_id,
            "content": error_text(message),
        }),
        Provider::Anthropic => json!({
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": [{"type": "text", "text": message}],
            "is_error": true,
        }),
        Provider::Gemini => gemini_function_response(call_id, name, json!({ "error": message })),
    };
    ProviderResult {
        items: vec![item],
        ..ProviderResult::default()
    }
}

fn gemini_function_response(call_id: &str, name: &str, response: Value) -> Value {
    let mut inner = Map::new();
    if !call_id.is_empty() {
        inner.insert("id".into(), Value::String(call_id.into()));
    }
    inner.insert("name".into(), Value::String(name.into()));
    inner.insert("response".into(), response);
    json!({ "functionResponse": inner })
}

/// `text` marked as an error for OpenAI, which has no error flag.
fn error_text(text: &str) -> String {
    let starts_with_error = text
        .get(..5)
        .is_some_and(|head| head.eq_ignore_ascii_case("error"));
    if starts_with_error {
        text.to_owned()
    } else {
        format!("Error: {text}")
    }
}

fn openai_error(mut parts: Vec<Part>, is_error: bool) -> Vec<Part> {
    if !is_error {
        return parts;
    }
    match parts.first_mut() {
        Some(Part::Text(text) | Part::Note(text)) => *text = error_text(text),
        _ => parts.insert(0, Part::Text("Error: the tool reported a failure.".into())),
    }
    parts
}

/// Where converted content goes: what a provider takes differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// A tool result.
    ToolResult,
    /// A `user` message (prompt messages, resources).
    User,
    /// An `assistant` (Gemini `model`) message: text only.
    Assistant,
}

/// Content on its way to a provider.
#[derive(Clone, Debug)]
pub(crate) enum Part {
    /// Text, counted against the budget.
    Text(String),
    /// A line about media (where it was saved, why it is not shown): text
    /// to the provider, but never cut, since without it the model would
    /// not know the media exist.
    Note(String),
    Inline(Inline),
}

/// Media the provider takes inline.
#[derive(Clone, Debug)]
pub(crate) struct Inline {
    /// The MIME type to send.
    pub(crate) mime: String,
    /// Canonical base64 of the bytes.
    pub(crate) data: String,
    pub(crate) kind: Kind,
    /// For OpenAI `input_file`.
    pub(crate) filename: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Image,
    Document,
    /// Audio or video (Gemini only).
    Other,
}

/// Turns MCP content into [`Part`]s for one provider and place, saving
/// what cannot go inline.
pub(crate) struct Converter<'a> {
    provider: Provider,
    place: Place,
    options: &'a ResultOptions,
    /// Names saved files (the tool or prompt name).
    hint: &'a str,
    pub(crate) parts: Vec<Part>,
    pub(crate) saved: Vec<PathBuf>,
    pub(crate) truncated: bool,
}

impl<'a> Converter<'a> {
    pub(crate) fn new(
        provider: Provider,
        place: Place,
        options: &'a ResultOptions,
        hint: &'a str,
    ) -> Self {
        Self {
            provider,
            place,
            options,
            hint,
            parts: Vec::new(),
            saved: Vec::new(),
            truncated: false,
        }
    }

    pub(crate) fn text(&mut self, text: String) {
        if !text.is_empty() {
            self.parts.push(Part::Text(text));
        }
    }

    fn note(&mut self, note: String) {
        self.parts.push(Part::Note(note));
    }

    fn skipped(&self, annotations: Option<&Annotations>) -> bool {
        self.options.skip_user_only
            && annotations
                .and_then(|a| a.audience.as_deref())
                .is_some_and(|aud| !aud.is_empty() && aud.iter().all(|r| *r == Role::User))
    }

    pub(crate) fn block(&mut self, block: &ContentBlock) {
        match block {
            ContentBlock::Text(t) => {
                if !self.skipped(t.annotations.as_ref()) {
                    self.text(t.text.clone());
                }
            }
            ContentBlock::Image(image) => {
                if !self.skipped(image.annotations.as_ref()) {
                    let hint = format!("{}-image", self.hint);
                    self.binary("image", Some(&image.mime_type), &image.data, &hint, None);
                }
            }
            ContentBlock::Audio(audio) => {
                if !self.skipped(audio.annotations.as_ref()) {
                    let hint = format!("{}-audio", self.hint);
                    self.binary("audio", Some(&audio.mime_type), &audio.data, &hint, None);
                }
            }
            ContentBlock::Resource(EmbeddedResource {
                resource,
                annotations,
                ..
            }) => {
                if !self.skipped(annotations.as_ref()) {
                    self.contents(resource);
                }
            }
            ContentBlock::ResourceLink(link) => {
                if !self.skipped(link.annotations.as_ref()) {
                    self.text(link_text(link));
                }
            }
            ContentBlock::ToolUse(t) => self.text(format!(
                "[tool_use block for tool \"{}\" omitted: not expected here]",
                t.name
            )),
            ContentBlock::ToolResult(_) => {
                self.text("[tool_result block omitted: not expected here]".into());
            }
            other => {
                let kind = other.kind().unwrap_or("unknown");
                self.text(format!(
                    "[content block of type \"{kind}\" omitted: not supported]"
                ));
            }
        }
    }

    /// A resource's contents: text under a header line naming it, or a
    /// blob handled like media.
    pub(crate) fn contents(&mut self, contents: &ResourceContents) {
        match contents {
            ResourceContents::Text(t) => {
                let mut text = resource_header(&t.uri, t.mime_type.as_deref());
                text.push('\n');
                text.push_str(&t.text);
                self.text(text);
            }
            ResourceContents::Blob(b) => {
                let what = format!("resource {}", b.uri);
                let hint =
                    uri_file_name(&b.uri).unwrap_or_else(|| format!("{}-resource", self.hint));
                let header = resource_header(&b.uri, b.mime_type.as_deref());
                self.binary(&what, b.mime_type.as_deref(), &b.blob, &hint, Some(header));
            }
        }
    }

    /// Base64 `data`: inline when the provider takes it here, else saved
    /// (or described).
    fn binary(
        &mut self,
        what: &str,
        mime: Option<&str>,
        data: &str,
        hint: &str,
        header: Option<String>,
    ) {
        let declared = mime.map(essence).filter(|m| !m.is_empty());
        let Some(bytes) = decode_base64(data) else {
            let mime = declared.as_deref().unwrap_or("unknown type");
            self.note(format!(
                "[{what} ({mime}) not shown: its data is not valid base64]"
            ));
            return;
        };
        let (mime, bad_image) = effective_mime(declared.as_deref(), &bytes);
        let n = bytes.len();
        let shown = mime.as_deref().unwrap_or("unknown type");
        let inline = (!bad_image && n <= self.options.max_inline_media)
            .then(|| mime.as_deref().and_then(|m| self.inline_kind(m, &bytes)))
            .flatten();
        if let Some((kind, send_as)) = inline {
            if let Some(header) = header {
                self.note(header);
            }
            if self.provider == Provider::OpenAiChat && self.place == Place::ToolResult {
                self.note(format!(
                    "[{what} ({shown}, {n} bytes) attached in the next user message]"
                ));
            }
            let ext = crate::media::extension(Some(send_as));
            let filename = if hint.to_ascii_lowercase().ends_with(&format!(".{ext}")) {
                hint.to_owned()
            } else {
                format!("{hint}.{ext}")
            };
            self.parts.push(Part::Inline(Inline {
                mime: send_as.to_owned(),
                data: STANDARD.encode(&bytes),
                kind,
                filename,
            }));
            return;
        }
        let reason = if bad_image {
            format!("its bytes are not {shown}")
        } else if n > self.options.max_inline_media
            && mime
                .as_deref()
                .is_some_and(|m| self.inline_kind(m, &bytes).is_some())
        {
            format!(
                "larger than the {} byte inline limit",
                self.options.max_inline_media
            )
        } else {
            match self.place {
                Place::Assistant => "assistant messages carry text only".to_owned(),
                Place::ToolResult => {
                    format!(
                        "{} takes no {shown} in tool results",
                        api_name(self.provider)
                    )
                }
                Place::User => format!("{} takes no {shown} in messages", api_name(self.provider)),
            }
        };
        let text = match &self.options.media {
            Some(store) => match store.save(&bytes, mime.as_deref(), hint) {
                Ok(path) => {
                    let text = format!("[{what} ({shown}, {n} bytes) saved to {}]", path.display());
                    self.saved.push(path);
                    text
                }
                Err(e) => format!(
                    "[{what} ({shown}, {n} bytes) not shown: {reason}, and saving it failed: {e}]"
                ),
            },
            None => format!("[{what} ({shown}, {n} bytes) not shown: {reason}]"),
        };
        self.note(text);
    }

    /// Whether `mime` goes inline here, and the MIME type to send it as.
    fn inline_kind(&self, mime: &str, bytes: &[u8]) -> Option<(Kind, &'static str)> {
        let openai_image = || match mime {
            "image/png" => Some("image/png"),
            "image/jpeg" => Some("image/jpeg"),
            "image/webp" => Some("image/webp"),
            // OpenAI takes still GIFs only.
            "image/gif" if !animated_gif(bytes) => Some("image/gif"),
            _ => None,
        };
        let pdf = (mime == "application/pdf").then_some((Kind::Document, "application/pdf"));
        match (self.provider, self.place) {
            (_, Place::Assistant) => None,
            (Provider::OpenAiChat, Place::ToolResult) => match self.options.chat_images {
                ChatImages::FollowUp => openai_image().map(|m| (Kind::Image, m)),
                _ => None,
            },
            (Provider::OpenAiChat, _) => openai_image().map(|m| (Kind::Image, m)),
            (Provider::OpenAiResponses, _) => openai_image().map(|m| (Kind::Image, m)).or(pdf),
            (Provider::Anthropic, _) => match mime {
                "image/png" => Some((Kind::Image, "image/png")),
                "image/jpeg" => Some((Kind::Image, "image/jpeg")),
                "image/gif" => Some((Kind::Image, "image/gif")),
                "image/webp" => Some((Kind::Image, "image/webp")),
                _ => pdf,
            },
            (Provider::Gemini, _) => gemini_mime(mime).map(|m| {
                let kind = if m.starts_with("image/") {
                    Kind::Image
                } else if m == "application/pdf" {
                    Kind::Document
                } else {
                    Kind::Other
                };
                (kind, m)
            }),
        }
    }

    /// Cuts text past the budget, with a marker (see the module docs).
    pub(crate) fn apply_budget(&mut self) {
        let budget = self.options.budget;
        let total: usize = self
            .parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.len(),
                Part::Note(_) | Part::Inline(_) => 0,
            })
            .sum();
        if total <= budget {
            return;
        }
        let full_path = self.options.media.as_ref().and_then(|store| {
            let full = join_text(&self.parts);
            let hint = format!("{}-output", self.hint);
            store.save(full.as_bytes(), Some("text/plain"), &hint).ok()
        });
        let mut left = budget;
        let mut shown = 0;
        let mut marked = false;
        let mut parts = Vec::with_capacity(self.parts.len());
        for part in std::mem::take(&mut self.parts) {
            match part {
                Part::Text(mut text) => {
                    if marked {
                        continue;
                    }
                    if text.len() <= left {
                        left -= text.len();
                        shown += text.len();
                        parts.push(Part::Text(text));
                        continue;
                    }
                    let cut = floor_char_boundary(&text, left);
                    text.truncate(cut);
                    shown += cut;
                    if !text.is_empty() {
                        parts.push(Part::Text(text));
                    }
                    parts.push(Part::Text(cut_marker(shown, total, full_path.as_ref())));
                    marked = true;
                }
                other => parts.push(other),
            }
        }
        if let Some(path) = full_path {
            self.saved.push(path);
        }
        self.parts = parts;
        self.truncated = true;
    }
}

/// The API's name, for notes the model reads.
fn api_name(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAiResponses => "the OpenAI Responses API",
        Provider::OpenAiChat => "the OpenAI Chat Completions API",
        Provider::Anthropic => "the Anthropic API",
        Provider::Gemini => "the Gemini API",
    }
}

fn cut_marker(shown: usize, total: usize, saved: Option<&PathBuf>) -> String {
    let mut marker = format!("[… output cut: showed {shown} of {total} bytes.");
    match saved {
        Some(path) => {
            let _ = write!(
                marker,
                " The full output was saved to {}; ask for less (a narrower query, a page, a \
                 limit) to see the rest.]",
                path.display()
            );
        }
        None => {
            marker.push_str(" Ask for less (a narrower query, a page, a limit) to see the rest.]")
        }
    }
    marker
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Text parts joined with a blank line.
pub(crate) fn join_text(parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        if let Part::Text(text) | Part::Note(text) = part {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(text);
        }
    }
    out
}

/// One part in the provider's content-part shape.
pub(crate) fn content_part(provider: Provider, place: Place, part: &Part) -> Value {
    match part {
        Part::Text(text) | Part::Note(text) => match provider {
            Provider::OpenAiResponses if place == Place::Assistant => {
                json!({"type": "output_text", "text": text})
            }
            Provider::OpenAiResponses => json!({"type": "input_text", "text": text}),
            Provider::OpenAiChat | Provider::Anthropic => json!({"type": "text", "text": text}),
            Provider::Gemini => json!({ "text": text }),
        },
        Part::Inline(inline) => inline_part(provider, inline),
    }
}

fn inline_part(provider: Provider, inline: &Inline) -> Value {
    let data_url = || format!("data:{};base64,{}", inline.mime, inline.data);
    match (provider, inline.kind) {
        (Provider::OpenAiResponses, Kind::Document) => json!({
            "type": "input_file",
            "filename": inline.filename,
            "file_data": data_url(),
        }),
        // `detail` is optional where tool outputs take images but required
        // by some schemas of message content; `auto` is the default anyway.
        (Provider::OpenAiResponses, _) => json!({
            "type": "input_image",
            "image_url": data_url(),
            "detail": "auto",
        }),
        (Provider::OpenAiChat, _) => json!({
            "type": "image_url",
            "image_url": { "url": data_url() },
        }),
        (Provider::Anthropic, kind) => json!({
            "type": if kind == Kind::Document { "document" } else { "image" },
            "source": {
                "type": "base64",
                "media_type": inline.mime,
                "data": inline.data,
            },
        }),
        (Provider::Gemini, _) => json!({
            "inlineData": { "mimeType": inline.mime, "data": inline.data },
        }),
    }
}

/// `[resource <uri> (<mime>)]`.
fn resource_header(uri: &str, mime: Option<&str>) -> String {
    match mime {
        Some(mime) if !mime.is_empty() => format!("[resource {uri} ({mime})]"),
        _ => format!("[resource {uri}]"),
    }
}

/// A resource link as a line of text: what it is, and that it was not read.
fn link_text(link: &ResourceLink) -> String {
    let mut about = vec![format!("name: {}", link.name)];
    if let Some(title) = link.title.as_deref().filter(|t| !t.is_empty()) {
        about.push(format!("title: {title}"));
    }
    if let Some(mime) = link.mime_type.as_deref().filter(|t| !t.is_empty()) {
        about.push(format!("type: {mime}"));
    }
    if let Some(size) = link.size {
        about.push(format!("size: {size} bytes"));
    }
    let mut text = format!("[resource link: {} ({})", link.uri, about.join(", "));
    if let Some(description) = link.description.as_deref().filter(|t| !t.is_empty()) {
        let _ = write!(text, ": {description}");
    }
    text.push_str(". Its contents are not included; it can be read if needed.]");
    text
}

/// The last path segment of a URI, as a file-name hint.
fn uri_file_name(uri: &str) -> Option<String> {
    let path = uri.split(['?', '#']).next()?;
    let last = path.rsplit('/').next()?;
    (!last.is_empty() && !last.contains(':')).then(|| last.to_owned())
}

/// The MIME type's essence, lowercase: `image/png` of `Image/PNG; x=y`.
/// `image/jpg`, a common mistake, is read as `image/jpeg`.
pub(crate) fn essence(mime: &str) -> String {
    let essence = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "image/jpg" {
        "image/jpeg".into()
    } else {
        essence
    }
}

/// The type to go by, and whether the bytes contradict a declared image
/// type so badly they must not be sent as an image.
fn effective_mime(declared: Option<&str>, bytes: &[u8]) -> (Option<String>, bool) {
    let sniffed = sniff(bytes);
    match (declared, sniffed) {
        // The bytes know better than a label (servers mislabel often).
        (Some(d), Some(s)) if d.starts_with("image/") || d == "application/octet-stream" => {
            (Some(s.into()), false)
        }
        (None, Some(s)) => (Some(s.into()), false),
        (Some(d), None) if matches!(d, "image/png" | "image/jpeg" | "image/gif" | "image/webp") => {
            (Some(d.into()), true)
        }
        (d, _) => (d.map(str::to_owned), false),
    }
}

/// The type of a PNG, JPEG, GIF, WebP or PDF by its first bytes.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else if bytes.starts_with(b"%PDF-") {
        Some("application/pdf")
    } else {
        None
    }
}

/// A GIF with the looping extension every animated GIF carries.
fn animated_gif(bytes: &[u8]) -> bool {
    bytes.windows(11).any(|w| w == b"NETSCAPE2.0")
}

/// The MIME type Gemini documents for `mime`, when Gemini takes it inline.
fn gemini_mime(mime: &str) -> Option<&'static str> {
    Some(match mime {
        "image/png" => "image/png",
        "image/jpeg" => "image/jpeg",
        "image/webp" => "image/webp",
        "image/heic" => "image/heic",
        "image/heif" => "image/heif",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "audio/wav",
        "audio/mp3" | "audio/mpeg" => "audio/mp3",
        "audio/aiff" | "audio/x-aiff" => "audio/aiff",
        "audio/aac" => "audio/aac",
        "audio/ogg" => "audio/ogg",
        "audio/flac" | "audio/x-flac" => "audio/flac",
        "video/mp4" => "video/mp4",
        "video/mpeg" => "video/mpeg",
        "video/mov" | "video/quicktime" => "video/mov",
        "video/avi" | "video/x-msvideo" => "video/avi",
        "video/x-flv" => "video/x-flv",
        "video/mpg" => "video/mpg",
        "video/webm" => "video/webm",
        "video/wmv" | "video/x-ms-wmv" => "video/wmv",
        "video/3gpp" => "video/3gpp",
        "application/pdf" => "application/pdf",
        _ => return None,
    })
}

/// Base64 as servers send it: standard alphabet, padding optional,
/// whitespace (line breaks) ignored; URL-safe as a fallback.
fn decode_base64(data: &str) -> Option<Vec<u8>> {
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    const LENIENT_URL: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let compact: String;
    let data = if data.bytes().any(|b| b.is_ascii_whitespace()) {
        compact = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        &compact
    } else {
        data
    };
    LENIENT
        .decode(data)
        .or_else(|_| LENIENT_URL.decode(data))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_on_char_boundaries() {
        let s = "aé€😀";
        assert_eq!(floor_char_boundary(s, 0), 0);
        assert_eq!(floor_char_boundary(s, 1), 1);
        assert_eq!(floor_char_boundary(s, 2), 1);
        assert_eq!(floor_char_boundary(s, 3), 3);
        assert_eq!(floor_char_boundary(s, 5), 3);
        assert_eq!(floor_char_boundary(s, 6), 6);
        assert_eq!(floor_char_boundary(s, 9), 6);
        assert_eq!(floor_char_boundary(s, 10), 10);
        assert_eq!(floor_char_boundary(s, 99), 10);
    }

    #[test]
    fn base64_is_read_leniently() {
        assert_eq!(decode_base64("aGk=").unwrap(), b"hi");
        assert_eq!(decode_base64("aGk").unwrap(), b"hi");
        assert_eq!(decode_base64("aG\nk=").unwrap(), b"hi");
        assert_eq!(decode_base64("-_8").unwrap(), [0xfb, 0xff]);
        assert!(decode_base64("not base64!").is_none());
    }

    #[test]
    fn error_prefix_is_not_doubled() {
        assert_eq!(error_text("boom"), "Error: boom");
        assert_eq!(error_text("error: boom"), "error: boom");
        assert_eq!(error_text("ERROR boom"), "ERROR boom");
        assert_eq!(error_text("é"), "Error: é");
    }

    #[test]
    fn mime_types_are_normalized_and_sniffed() {
        assert_eq!(essence(" Image/JPG ; q=1"), "image/jpeg");
        let png = b"\x89PNG\r\n\x1a\n....";
        assert_eq!(
            effective_mime(Some("image/jpeg"), png),
            (Some("image/png".into()), false)
        );
        assert_eq!(
            effective_mime(Some("image/png"), b"nope"),
            (Some("image/png".into()), true)
        );
        assert_eq!(
            effective_mime(None, b"%PDF-1.4"),
            (Some("application/pdf".into()), false)
        );
        assert_eq!(
            effective_mime(Some("application/zip"), b"PK\x03\x04"),
            (Some("application/zip".into()), false)
        );
    }
}
