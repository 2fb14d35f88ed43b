//! What servers ask of the client: sampling, elicitation and roots.
//!
//! Install handlers on the [`ClientBuilder`](crate::ClientBuilder)
//! ([`sampling`](crate::ClientBuilder::sampling),
//! [`elicitation`](crate::ClientBuilder::elicitation),
//! [`roots`](crate::ClientBuilder::roots)); the client declares exactly the
//! capabilities the installed handlers support, in both eras, and routes
//! the server's asks to them:
//! - session era (2024-11-05 … 2025-11-25): server→client requests, over
//!   stdio, on a POST's SSE stream, on the GET stream;
//! - stateless era (2026-07-28): the `inputRequests` of an
//!   `input_required` result, answered in the retry (see
//!   [`Client::call_tool`](crate::Client::call_tool)).
//!
//! The same checks run whichever way an ask arrives: a sampling request's
//! tool-use messages must follow the spec's pairing rules, a form's schema
//! must be the restricted flat form, and a form answer is validated against
//! its schema before it is sent. A violation by the server is -32602; a
//! handler answer that breaks its form's schema is never sent.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;
use switchboard_types::elicitation::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitResult, ElicitationSchema, NumberType, PrimitiveSchemaDefinition,
};
use switchboard_types::jsonrpc::ErrorObject;
use switchboard_types::roots::{ListRootsResult, Root};
use switchboard_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use switchboard_types::{
    ClientCapabilities, ContentBlock, ElicitationCapability, Era, JsonObject, Role,
    RootsCapability, SamplingCapability, codes, methods,
};

pub use crate::transport::BoxFuture;

/// Who is asking: passed to every handler so it can tell the user which
/// server wants something.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HandlerContext {
    /// The server's name (as in error messages).
    pub server: Arc<str>,
    /// The era the ask arrived in.
    pub era: Era,
    /// The `inputRequests` key, for an ask that came in a 2026-07-28
    /// `input_required` result.
    pub input_key: Option<String>,
    /// The tag ([`RequestOptions::tag`](crate::RequestOptions::tag)) of
    /// the request this ask came about, when that is known: a 2026-07-28
    /// `input_required` round (and the session era's -32042) of that
    /// request, or a session-era request sent on its HTTP response stream.
    /// `None` when the server sent the ask on its own (stdio, WebSocket,
    /// the GET stream): it may be about any request in flight.
    pub request_tag: Option<u64>,
}

/// Why a handler produced no answer. Becomes the JSON-RPC error the server
/// gets (session era) or the error the call fails with (stateless era).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum HandlerError {
    /// The user refused (sampling: code -1, as the spec asks).
    Rejected(String),
    /// The server's request is malformed (-32602).
    InvalidParams(String),
    /// The handler failed (-32603).
    Failed(String),
    /// Any other JSON-RPC error, sent as is.
    Rpc(ErrorObject),
}

impl HandlerError {
    /// The JSON-RPC error object the server receives.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            HandlerError::Rejected(message) => ErrorObject::new(-1, message.clone()),
            HandlerError::InvalidParams(message) => {
                ErrorObject::new(codes::INVALID_PARAMS, message.clone())
            }
            HandlerError::Failed(message) => {
                ErrorObject::new(codes::INTERNAL_ERROR, message.clone())
            }
            HandlerError::Rpc(error) => error.clone(),
        }
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Rejected(m) => write!(f, "rejected: {m}"),
            HandlerError::InvalidParams(m) => write!(f, "invalid request: {m}"),
            HandlerError::Failed(m) => write!(f, "handler failed: {m}"),
            HandlerError::Rpc(e) => write!(f, "{} (code {})", e.message, e.code),
        }
    }
}

impl std::error::Error for HandlerError {}

/// Answers `sampling/createMessage`: runs the application's LLM.
///
/// The request has been checked before it gets here: tool-use and
/// tool-result messages pair up, tool results are not mixed with other
/// content, and `tools`/`toolChoice` only arrive if
/// [`SamplingHandler::supports_tools`] is true.
pub trait SamplingHandler: Send + Sync + 'static {
    /// Produces the model's message. Return [`HandlerError::Rejected`] when
    /// the user declines.
    fn create_message(
        &self,
        context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>>;

    /// Whether `tools`/`toolChoice` are supported (declares `sampling.tools`).
    fn supports_tools(&self) -> bool {
        false
    }
}

/// A form the server wants the user to fill in.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FormRequest {
    /// What to ask.
    pub message: String,
    /// The fields (checked to be the spec's restricted flat form).
    pub schema: ElicitationSchema,
    /// Each field's `default`, to pre-fill the form.
    pub defaults: JsonObject,
    /// The request as sent (for `_meta` and fields this crate does not know).
    pub params: ElicitRequestFormParams,
}

/// A page the server wants the user to open (URL mode). The library never
/// opens or fetches it: the handler shows [`shown`](Self::shown) (the URL
/// as the browser parses it, its host and warnings), and opens
/// `shown.url` only with the user's consent.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct UrlRequest {
    /// Why the user should open it.
    pub message: String,
    /// The full URL, as sent.
    pub url: String,
    /// The URL's host as the browser will connect to it (punycode for a
    /// non-ASCII name), to show prominently: `shown.host`.
    pub domain: String,
    /// The URL parsed once as the browser will: the text to show and open,
    /// its host and what to warn about.
    pub shown: crate::url_display::DisplayUrl,
    /// Correlates `notifications/elicitation/complete`.
    pub elicitation_id: Option<String>,
    /// The request as sent.
    pub params: ElicitRequestUrlParams,
}

/// Answers `elicitation/create`: asks the user.
pub trait ElicitationHandler: Send + Sync + 'static {
    /// Fills in a form. Return `accept` with content, `decline` or `cancel`.
    /// The content is validated against the form's schema before it is sent.
    fn elicit_form(
        &self,
        context: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>>;

    /// Whether URL mode is handled (declares `elicitation.url`).
    fn supports_url(&self) -> bool {
        false
    }

    /// Asks the user's consent to open a URL; `accept` means they agreed
    /// (and it was opened), not that the out-of-band flow finished.
    fn elicit_url(
        &self,
        context: HandlerContext,
        request: UrlRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        let _ = (context, request);
        Box::pin(async { Ok(ElicitResult::decline()) })
    }
}

/// The application's roots, shared by every client it was given to.
/// Changing them sends `notifications/roots/list_changed` to each connected
/// session-era server (stateless-era servers ask again when they need them).
#[derive(Clone, Default)]
pub struct Roots {
    inner: Arc<RootsInner>,
}

#[derive(Default)]
struct RootsInner {
    roots: Mutex<Vec<Root>>,
    listeners: Mutex<Vec<Weak<dyn Fn() + Send + Sync>>>,
    /// How many times the roots were set.
    changes: std::sync::atomic::AtomicU64,
}

impl fmt::Debug for Roots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Roots").field("roots", &self.get()).finish()
    }
}

impl Roots {
    /// Roots with these entries.
    pub fn new(roots: Vec<Root>) -> Self {
        let this = Self::default();
        *this.inner.roots.lock().unwrap_or_else(|e| e.into_inner()) = roots;
        this
    }

    /// The current roots.
    pub fn get(&self) -> Vec<Root> {
        self.inner
            .roots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the roots and tells connected servers.
    pub fn set(&self, roots: Vec<Root>) {
        *self.inner.roots.lock().unwrap_or_else(|e| e.into_inner()) = roots;
        self.inner
            .changes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let listeners: Vec<_> = {
            let mut listeners = self
                .inner
                .listeners
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            listeners.retain(|l| l.strong_count() > 0);
            listeners.iter().filter_map(Weak::upgrade).collect()
        };
        for listener in listeners {
            listener();
        }
    }

    /// How many times the roots were set so far.
    pub(crate) fn changes(&self) -> u64 {
        self.inner.changes.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Calls `listener` on every change while the returned `Arc` lives.
    pub(crate) fn listen(&self, listener: Arc<dyn Fn() + Send + Sync>) {
        self.inner
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::downgrade(&listener));
    }
}

/// Answers `roots/list` knowing which request it is about (its
/// [`HandlerContext`]), for a client whose roots are not one list — a
/// gateway that asks the host whose call the server is working on, say.
/// Installed with [`ClientBuilder::roots_from`](crate::ClientBuilder::roots_from).
pub trait RootsHandler: Send + Sync + 'static {
    /// The roots for the request of `context`.
    fn list_roots(
        &self,
        context: HandlerContext,
    ) -> BoxFuture<'static, Result<Vec<Root>, HandlerError>>;
}

/// The installed handlers; answers asks from either era.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) sampling: Option<Arc<dyn SamplingHandler>>,
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub(crate) roots: Option<Roots>,
    /// Answers `roots/list` in place of [`Handlers::roots`]' list.
    pub(crate) roots_handler: Option<Arc<dyn RootsHandler>>,
}

impl fmt::Debug for Handlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handlers")
            .field("sampling", &self.sampling.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("roots", &self.roots)
            .finish()
    }
}

impl Handlers {
    /// `base` plus what the installed handlers support.
    pub(crate) fn capabilities(&self, base: &ClientCapabilities) -> ClientCapabilities {
        let mut caps = base.clone();
        if let Some(sampling) = &self.sampling {
            let entry = caps
                .sampling
                .get_or_insert_with(SamplingCapability::default);
            if sampling.supports_tools() && entry.tools.is_none() {
                entry.tools = Some(JsonObject::new());
            }
        }
        if let Some(elicitation) = &self.elicitation {
            let entry = caps
                .elicitation
                .get_or_insert_with(ElicitationCapability::default);
            if entry.form.is_none() {
                entry.form = Some(JsonObject::new());
            }
            if elicitation.supports_url() && entry.url.is_none() {
                entry.url = Some(JsonObject::new());
            }
        }
        if self.roots.is_some() {
            let entry = caps.roots.get_or_insert_with(RootsCapability::default);
            entry.list_changed.get_or_insert(true);
        }
        caps
    }

    /// Answers one ask. `params` is the request's params object (or null).
    pub(crate) async fn answer(
        &self,
        context: HandlerContext,
        method: &str,
        params: Value,
    ) -> Result<Value, HandlerError> {
        match method {
            methods::SAMPLING_CREATE_MESSAGE => {
                let Some(handler) = &self.sampling else {
                    return Err(not_declared("sampling", method));
                };
                let params: CreateMessageRequestParams = parse(method, params)?;
                check_sampling(&params, handler.supports_tools())?;
                let result = handler.create_message(context, params).await?;
                to_value(&result)
            }
            methods::ELICITATION_CREATE => {
                let Some(handler) = &self.elicitation else {
                    return Err(not_declared("elicitation", method));
                };
                let params: ElicitRequestParams = parse(method, params)?;
                let result = match params {
                    ElicitRequestParams::Form(form) => {
                        let request = form_request(form)?;
                        let schema = request.schema.clone();
                        let result = handler.elicit_form(context, request).await?;
                        check_form_answer(&schema, &result)?;
                        result
                    }
                    ElicitRequestParams::Url(url) => {
                        if !handler.supports_url() {
                            return Err(HandlerError::InvalidParams(
                                "URL-mode elicitation was not declared by this client".into(),
                            ));
                        }
                        let request = url_request(url)?;
                        handler.elicit_url(context, request).await?
                    }
                    _ => {
                        return Err(HandlerError::InvalidParams(
                            "unknown elicitation mode".into(),
                        ));
                    }
                };
                to_value(&result)
            }
            methods::ROOTS_LIST => {
                let Some(roots) = &self.roots else {
                    return Err(not_declared("roots", method));
                };
                let roots = match &self.roots_handler {
                    Some(handler) => handler.list_roots(context).await?,
                    None => roots.get(),
                };
                let result = ListRootsResult {
                    roots,
                    ..Default::default()
                };
                to_value(&result)
            }
            other => Err(HandlerError::Rpc(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            ))),
        }
    }
}

fn not_declared(capability: &str, method: &str) -> HandlerError {
    HandlerError::Rpc(ErrorObject::new(
        codes::METHOD_NOT_FOUND,
        format!("this client did not declare `{capability}`, so it does not answer `{method}`"),
    ))
}

fn parse<T: serde::de::DeserializeOwned>(method: &str, params: Value) -> Result<T, HandlerError> {
    serde_json::from_value(params)
        .map_err(|e| HandlerError::InvalidParams(format!("malformed `{method}` params: {e}")))
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, HandlerError> {
    serde_json::to_value(value).map_err(|e| HandlerError::Failed(e.to_string()))
}

/// The spec's rules on tool use in sampling (2025-11-25).
pub(crate) fn check_sampling(
    params: &CreateMessageRequestParams,
    tools_supported: bool,
) -> Result<(), HandlerError> {
    if !tools_supported && (params.tools.is_some() || params.tool_choice.is_some()) {
        return Err(HandlerError::InvalidParams(
            "tools in sampling were not declared by this client (sampling.tools)".into(),
        ));
    }
    let mut open_uses: Option<Vec<&str>> = None;
    for (index, message) in params.messages.iter().enumerate() {
        let blocks = message.content.blocks();
        let results: Vec<&str> = blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult(r) => Some(r.tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        if !results.is_empty() {
            if message.role != Role::User {
                return Err(HandlerError::InvalidParams(format!(
                    "message {index}: tool results must be in a user message"
                )));
            }
            if results.len() != blocks.len() {
                return Err(HandlerError::InvalidParams(format!(
                    "message {index}: tool results are mixed with other content"
                )));
            }
        }
        if let Some(uses) = open_uses.take() {
            let mut missing: Vec<&str> = uses
                .iter()
                .copied()
                .filter(|id| !results.contains(id))
                .collect();
            if !missing.is_empty() {
                missing.sort_unstable();
                return Err(HandlerError::InvalidParams(format!(
                    "message {index}: tool result missing for tool use {}",
                    missing.join(", ")
                )));
            }
            if let Some(extra) = results.iter().find(|id| !uses.contains(id)) {
                return Err(HandlerError::InvalidParams(format!(
                    "message {index}: tool result {extra} answers no tool use"
                )));
            }
        } else if !results.is_empty() {
            return Err(HandlerError::InvalidParams(format!(
                "message {index}: tool results do not follow an assistant tool use"
            )));
        }
        let uses: Vec<&str> = blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse(u) => Some(u.id.as_str()),
                _ => None,
            })
            .collect();
        if !uses.is_empty() {
            if message.role != Role::Assistant {
                return Err(HandlerError::InvalidParams(format!(
                    "message {index}: tool use must be in an assistant message"
                )));
            }
            open_uses = Some(uses);
        }
    }
    // A trailing assistant tool use is fine only if the model is to answer
    // it — it cannot be: the server must send the results first.
    if open_uses.is_some() {
        return Err(HandlerError::InvalidParams(
            "the last message is a tool use with no tool result after it".into(),
        ));
    }
    Ok(())
}

/// Checks the form is the spec's restricted flat form and gathers defaults.
pub(crate) fn form_request(params: ElicitRequestFormParams) -> Result<FormRequest, HandlerError> {
    let schema = &params.requested_schema;
    if schema.r#type != "object" {
        return Err(HandlerError::InvalidParams(format!(
            "requestedSchema must have type \"object\", not {:?}",
            schema.r#type
        )));
    }
    let mut defaults = JsonObject::new();
    for (name, field) in &schema.properties {
        let default = match field {
            PrimitiveSchemaDefinition::String(s) => s.default.clone().map(Value::String),
            PrimitiveSchemaDefinition::Number(n) => n.default.map(|d| match n.r#type {
                NumberType::Integer if d.fract() == 0.0 && d.abs() < 9.0e15 => {
                    Value::from(d as i64)
                }
                _ => Value::from(d),
            }),
            PrimitiveSchemaDefinition::Boolean(b) => b.default.map(Value::Bool),
            PrimitiveSchemaDefinition::UntitledSingleSelectEnum(e) => {
                e.default.clone().map(Value::String)
            }
            PrimitiveSchemaDefinition::TitledSingleSelectEnum(e) => {
                e.default.clone().map(Value::String)
            }
            PrimitiveSchemaDefinition::LegacyTitledEnum(e) => e.default.clone().map(Value::String),
            PrimitiveSchemaDefinition::UntitledMultiSelectEnum(e) => e
                .default
                .clone()
                .map(|d| Value::Array(d.into_iter().map(Value::String).collect())),
            PrimitiveSchemaDefinition::TitledMultiSelectEnum(e) => e
                .default
                .clone()
                .map(|d| Value::Array(d.into_iter().map(Value::String).collect())),
            _ => {
                return Err(HandlerError::InvalidParams(format!(
                    "field `{name}` is not a primitive (string, number, integer, boolean or enum): \
                     elicitation forms must be flat"
                )));
            }
        };
        if let Some(default) = default {
            defaults.insert(name.clone(), default);
        }
    }
    if let Some(required) = &schema.required
        && let Some(unknown) = required.iter().find(|r| schema.property(r).is_none())
    {
        return Err(HandlerError::InvalidParams(format!(
            "required field `{unknown}` is not in the form"
        )));
    }
    Ok(FormRequest {
        message: params.message.clone(),
        schema: params.requested_schema.clone(),
        defaults,
        params,
    })
}

pub(crate) fn url_request(params: ElicitRequestUrlParams) -> Result<UrlRequest, HandlerError> {
    let shown = crate::url_display::url_display(&params.url).map_err(|_| {
        HandlerError::InvalidParams(format!("`{}` is not an absolute http(s) URL", params.url))
    })?;
    Ok(UrlRequest {
        message: params.message.clone(),
        url: params.url.clone(),
        domain: shown.host.clone(),
        shown,
        elicitation_id: params.elicitation_id.clone(),
        params,
    })
}

/// The host of an `http`/`https` URL as the browser will connect to it.
#[cfg(test)]
fn url_host(url: &str) -> Option<String> {
    crate::url_display::url_display(url)
        .ok()
        .map(|shown| shown.host)
}

/// A form answer must match its form: the client never sends content the
/// server did not ask for or in a shape it cannot read.
pub(crate) fn check_form_answer(
    schema: &ElicitationSchema,
    result: &ElicitResult,
) -> Result<(), HandlerError> {
    let bad = |detail: String| {
        Err(HandlerError::Failed(format!(
            "the elicitation answer does not match the requested form, so it was not sent: {detail}"
        )))
    };
    if result.action != ElicitAction::Accept {
        if result.content.is_some() {
            return bad("only an `accept` answer may carry content".into());
        }
        return Ok(());
    }
    let empty = JsonObject::new();
    let content = result.content.as_ref().unwrap_or(&empty);
    for required in schema.required.iter().flatten() {
        if !content.contains_key(required) {
            return bad(format!("required field `{required}` is missing"));
        }
    }
    for (name, value) in content {
        let Some(field) = schema.property(name) else {
            return bad(format!("field `{name}` is not in the form"));
        };
        if let Err(detail) = check_field(field, value) {
            return bad(format!("field `{name}`: {detail}"));
        }
    }
    Ok(())
}

fn check_field(field: &PrimitiveSchemaDefinition, value: &Value) -> Result<(), String> {
    let one_of = |allowed: &mut dyn Iterator<Item = &str>, v: &Value| -> Result<(), String> {
        let Some(v) = v.as_str() else {
            return Err(format!("{v} is not a string"));
        };
        let allowed: Vec<&str> = allowed.collect();
        if allowed.contains(&v) {
            Ok(())
        } else {
            Err(format!("{v:?} is not one of {allowed:?}"))
        }
    };
    let many =
        |allowed: Vec<&str>, min: Option<u64>, max: Option<u64>, v: &Value| -> Result<(), String> {
            let Some(items) = v.as_array() else {
                return Err(format!("{v} is not an array"));
            };
            if min.is_some_and(|m| (items.len() as u64) < m) {
                return Err(format!("fewer than {} items", min.unwrap_or(0)));
            }
            if max.is_some_and(|m| (items.len() as u64) > m) {
                return Err(format!("more than {} items", max.unwrap_or(0)));
            }
            for item in items {
                one_of(&mut allowed.iter().copied(), item)?;
            }
            Ok(())
        };
    match field {
        PrimitiveSchemaDefinition::String(s) => {
            let Some(text) = value.as_str() else {
                return Err(format!("{value} is not a string"));
            };
            let length = text.chars().count() as u64;
            if s.min_length.is_some_and(|m| length < m) {
                return Err(format!(
                    "shorter than {} characters",
                    s.min_length.unwrap_or(0)
                ));
            }
            if s.max_length.is_some_and(|m| length > m) {
                return Err(format!(
                    "longer than {} characters",
                    s.max_length.unwrap_or(0)
                ));
            }
            if let Some(format) = &s.format
                && !string_matches_format(format, text)
            {
                return Err(format!("{text:?} is not a valid {format}"));
            }
            Ok(())
        }
        PrimitiveSchemaDefinition::Number(n) => {
            let Some(number) = value.as_f64() else {
                return Err(format!("{value} is not a number"));
            };
            if n.r#type == NumberType::Integer && !(value.is_i64() || value.is_u64()) {
                return Err(format!("{value} is not an integer"));
            }
            if n.minimum.is_some_and(|m| number < m) {
                return Err(format!("{value} is below the minimum"));
            }
            if n.maximum.is_some_and(|m| number > m) {
                return Err(format!("{value} is above the maximum"));
            }
            Ok(())
        }
        PrimitiveSchemaDefinition::Boolean(_) => value
            .is_boolean()
            .then_some(())
            .ok_or_else(|| format!("{value} is not a boolean")),
        PrimitiveSchemaDefinition::UntitledSingleSelectEnum(e) => {
            one_of(&mut e.values.iter().map(String::as_str), value)
        }
        PrimitiveSchemaDefinition::LegacyTitledEnum(e) => {
            one_of(&mut e.values.iter().map(String::as_str), value)
        }
        PrimitiveSchemaDefinition::TitledSingleSelectEnum(e) => {
            one_of(&mut e.one_of.iter().map(|o| o.value.as_str()), value)
        }
        PrimitiveSchemaDefinition::UntitledMultiSelectEnum(e) => many(
            e.items.values.iter().map(String::as_str).collect(),
            e.min_items,
            e.max_items,
            value,
        ),
        PrimitiveSchemaDefinition::TitledMultiSelectEnum(e) => many(
            e.items.any_of.iter().map(|o| o.value.as_str()).collect(),
            e.min_items,
            e.max_items,
            value,
        ),
        _ => Err("the field's type is not one a form may have".into()),
    }
}

/// Whether `text` is a valid `format` (`email`, `uri`, `date`, `date-time`:
/// the four string formats elicitation forms allow; any other format is an
/// annotation and always matches). Form answers are checked with this
/// before they are sent; a UI can check input the same way.
pub fn string_matches_format(format: &str, text: &str) -> bool {
    match format {
        "email" => text
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.')),
        "uri" => text.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }),
        "date" => is_date(text),
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(date, time)| is_date(date) && is_time(time)),
        // Unknown formats are annotations, not assertions.
        _ => true,
    }
}

fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    parts.len() == 3
        && digits(parts[0], 4)
        && digits(parts[1], 2)
        && digits(parts[2], 2)
        && (1..=12).contains(&parts[1].parse::<u8>().unwrap_or(0))
        && (1..=31).contains(&parts[2].parse::<u8>().unwrap_or(0))
}

fn is_time(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 9
        && bytes[2] == b':'
        && bytes[5] == b':'
        && [0, 1, 3, 4, 6, 7]
            .iter()
            .all(|&i| bytes[i].is_ascii_digit())
        && (text.ends_with(['Z', 'z']) || text[8..].contains(['+', '-']))
}

#[cfg(test)]
mod tests;
