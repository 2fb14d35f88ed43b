//! The send path: per-request `_meta`, `resultType` checks, the raw and
//! typed requests, pagination and notifications.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use switchboard_types::request::{self as rq, Paginated, Request};
use switchboard_types::{
    ClientCapabilities, Era, Implementation, JsonObject, LoggingLevel, PaginatedRequestParams,
    ProtocolVersion, meta,
};

use super::mrtr::to_params;
use super::{Client, level_from_code};
use crate::engine::{RawResult, RequestOptions};
use crate::error::{Error, Result};

/// The `_meta` fields every modern request carries.
pub(super) fn modern_meta(
    version: &ProtocolVersion,
    info: &Implementation,
    capabilities: &ClientCapabilities,
) -> JsonObject {
    let mut object = JsonObject::new();
    object.insert(
        meta::META_PROTOCOL_VERSION.into(),
        Value::String(version.as_str().into()),
    );
    object.insert(
        meta::META_CLIENT_INFO.into(),
        serde_json::to_value(info).expect("Implementation serializes"),
    );
    object.insert(
        meta::META_CLIENT_CAPABILITIES.into(),
        serde_json::to_value(capabilities).expect("ClientCapabilities serializes"),
    );
    object
}

/// A `server/discover` probe's params: an object holding only the
/// [`modern_meta`] fields as `_meta`, written straight to text (no
/// `Value` tree on a connect's path) and spliced as every request's are.
pub(super) fn probe_params(
    version: &ProtocolVersion,
    info: &Implementation,
    capabilities: &ClientCapabilities,
) -> Box<RawValue> {
    use serde::ser::SerializeMap;
    struct Fields<'a>(
        &'a ProtocolVersion,
        &'a Implementation,
        &'a ClientCapabilities,
    );
    impl Serialize for Fields<'_> {
        fn serialize<S: serde::Serializer>(
            &self,
            serializer: S,
        ) -> std::result::Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(3))?;
            map.serialize_entry(meta::META_PROTOCOL_VERSION, self.0.as_str())?;
            map.serialize_entry(meta::META_CLIENT_INFO, self.1)?;
            map.serialize_entry(meta::META_CLIENT_CAPABILITIES, self.2)?;
            map.end()
        }
    }
    let fields = serde_json::to_string(&Fields(version, info, capabilities))
        .expect("client info and capabilities serialize");
    // The members without their braces, as `with_modern_meta` takes them.
    with_modern_meta(&fields[1..fields.len() - 1], None, None, None)
        .expect("an object with a `_meta` object is JSON")
}

/// `params` (an object, or none) with `_meta` holding `fragment` (the
/// connection's per-request fields, serialized without braces), the log
/// level and the progress token.
pub(super) fn with_modern_meta(
    fragment: &str,
    params: Option<&Value>,
    level: Option<LoggingLevel>,
    progress: Option<i64>,
) -> std::result::Result<Box<RawValue>, serde_json::Error> {
    let body = match params {
        Some(params) => serde_json::to_string(params)?,
        None => "{}".to_owned(),
    };
    RawValue::from_string(splice_meta(&body, Some(fragment), level, progress))
}

/// `body` (an object's text, without `_meta`) with a `_meta` member holding
/// `fragment` (members without braces), the log level and the progress
/// token; `body` itself when there is none of them.
fn splice_meta(
    body: &str,
    fragment: Option<&str>,
    level: Option<LoggingLevel>,
    progress: Option<i64>,
) -> String {
    if fragment.is_none() && level.is_none() && progress.is_none() {
        return body.to_owned();
    }
    let mut out = String::with_capacity(body.len() + fragment.map_or(0, str::len) + 80);
    // An object serializes as `{…}`: reopen it before the closing brace.
    out.push_str(&body[..body.len() - 1]);
    if body.len() > 2 {
        out.push(',');
    }
    out.push_str(r#""_meta":{"#);
    // The fragment, when not empty, is the first member.
    let mut first = fragment.is_none_or(str::is_empty);
    out.push_str(fragment.unwrap_or(""));
    let mut member = |out: &mut String, name: &str| {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
        out.push('"');
        out.push_str(name);
        out.push_str("\":");
    };
    if let Some(level) = level {
        member(&mut out, meta::META_LOG_LEVEL);
        out.push('"');
        out.push_str(level.as_str());
        out.push('"');
    }
    if let Some(token) = progress {
        member(&mut out, meta::PROGRESS_TOKEN);
        out.push_str(&token.to_string());
    }
    out.push_str("}}");
    out
}

/// Merges `fields` into `params._meta`, making `params` an object if needed.
pub(super) fn add_meta(params: &mut Value, fields: impl IntoIterator<Item = (String, Value)>) {
    if !params.is_object() {
        *params = Value::Object(JsonObject::new());
    }
    let object = params.as_object_mut().expect("made an object above");
    let entry = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if !entry.is_object() {
        *entry = Value::Object(JsonObject::new());
    }
    let meta = entry.as_object_mut().expect("made an object above");
    for (key, value) in fields {
        meta.insert(key, value);
    }
}

pub(super) fn parse_result<T: DeserializeOwned>(
    server: &Arc<str>,
    method: &str,
    raw: &str,
) -> Result<T> {
    serde_json::from_str(raw).map_err(|error| Error::Protocol {
        server: server.clone(),
        detail: format!("its `{method}` result is malformed: {error}"),
    })
}

/// 2026-07-28: an absent `resultType` means complete; an unknown one is an error.
pub(super) fn check_result_type(
    server: &Arc<str>,
    method: &str,
    raw: &RawResult,
    result_type: Option<&str>,
) -> Result<()> {
    match result_type {
        None | Some("complete") => Ok(()),
        // A task handle (the tasks extension), which only `tools/call` may
        // answer with; `Client::call_tool_and_wait` declares the extension.
        Some("task") if method == rq::CallTool::METHOD => Ok(()),
        Some("input_required") => Err(Error::InputRequired {
            server: server.clone(),
            method: method.to_owned(),
            result: raw.to_raw_value(),
        }),
        Some(other) => Err(Error::Protocol {
            server: server.clone(),
            detail: format!("its `{method}` result has an unknown resultType {other:?}"),
        }),
    }
}

/// The same params with `_meta.progressToken` set to `token` (for a
/// re-issued request, whose progress must not be confused with the first).
pub(super) fn renumber_progress(
    raw: &RawValue,
    token: Option<i64>,
) -> std::result::Result<Box<RawValue>, serde_json::Error> {
    let Some(token) = token else {
        return Ok(raw.to_owned());
    };
    let mut value: Value = serde_json::from_str(raw.get())?;
    add_meta(
        &mut value,
        [(meta::PROGRESS_TOKEN.to_owned(), Value::from(token))],
    );
    serde_json::value::to_raw_value(&value)
}

/// Reads only `resultType`, skipping the rest without building it.
pub(super) fn peek_result_type(raw: &RawResult) -> Option<Cow<'_, str>> {
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(rename = "resultType", borrow, default)]
        result_type: Option<Cow<'a, str>>,
    }
    serde_json::from_str::<Peek<'_>>(raw.get())
        .ok()
        .and_then(|p| p.result_type)
}

impl Client {
    /// Sends any request and returns its raw result: the escape hatch for
    /// methods the types do not know. In the stateless era the per-request
    /// `_meta` fields are added.
    ///
    /// # Errors
    /// As [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request (`notifications/cancelled`).
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<RawResult> {
        // Cacheable methods of the stateless era (cache.rs).
        match self.cache_key(method, params.as_ref()) {
            Some(key) => self.request_cached(key, method, params, options).await,
            None => {
                let outcome = self.send_raw(method, params, options).await;
                self.note_refusal(method, &outcome);
                outcome
            }
        }
    }

    /// Sends typed params, which must serialize as an object (anything
    /// else is sent as `{}`). They are serialized once, straight to text,
    /// unless something needs them as a JSON value: the cache (a cacheable
    /// method of the stateless era), their own `_meta` or the options'
    /// (merged member by member). Otherwise as [`Client::request_raw`].
    pub(super) async fn send_typed<P: Serialize>(
        &self,
        method: &str,
        params: &P,
        options: RequestOptions,
    ) -> Result<RawResult> {
        let serialize = |source| Error::Serialize {
            method: method.to_owned(),
            source,
        };
        let cached = self.inner.session.era == Era::Modern && self.inner.subs.cache.caches(method);
        if cached || !options.meta.is_empty() {
            return self
                .request_raw(method, Some(to_params(method, params)?), options)
                .await;
        }
        let mut body = serde_json::value::to_raw_value(params).map_err(serialize)?;
        if !body.get().starts_with('{') {
            body = serde_json::value::to_raw_value(&JsonObject::new()).map_err(serialize)?;
        }
        // A `"_meta"` anywhere, even inside an argument, takes the long way:
        // telling a member from a string would mean parsing.
        if body.get().contains(r#""_meta""#) {
            return self
                .request_raw(method, Some(to_params(method, params)?), options)
                .await;
        }
        let engine = &self.inner.engine;
        let id = engine.allocate_id();
        let token = options.progress.is_some().then_some(id);
        let fragment = self.inner.modern_meta_json.as_deref();
        let level = fragment.and_then(|_| {
            level_from_code(
                self.inner
                    .log_level
                    .load(std::sync::atomic::Ordering::Relaxed),
            )
        });
        let raw = if fragment.is_none() && token.is_none() {
            body
        } else {
            RawValue::from_string(splice_meta(body.get(), fragment, level, token))
                .map_err(serialize)?
        };
        let outcome = self.send_params(id, method, Some(raw), options).await;
        self.note_refusal(method, &outcome);
        outcome
    }

    /// [`Client::request_raw`] past the cache.
    pub(super) async fn send_raw(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<RawResult> {
        let engine = &self.inner.engine;
        let id = engine.allocate_id();
        // The common stateless-era case, params without `_meta` of their
        // own: the per-request fields are spliced in as text, serialized
        // once per connection, instead of built as JSON objects per call.
        if let Some(fragment) = &self.inner.modern_meta_json
            && options.meta.is_empty()
            && params
                .as_ref()
                .is_none_or(|p| p.is_object() && p.get("_meta").is_none())
        {
            let level = level_from_code(
                self.inner
                    .log_level
                    .load(std::sync::atomic::Ordering::Relaxed),
            );
            let token = options.progress.is_some().then_some(id);
            let raw =
                with_modern_meta(fragment, params.as_ref(), level, token).map_err(|source| {
                    Error::Serialize {
                        method: method.to_owned(),
                        source,
                    }
                })?;
            return self.send_params(id, method, Some(raw), options).await;
        }
        let mut params = params;
        if self.inner.modern_meta.is_some()
            || options.progress.is_some()
            || !options.meta.is_empty()
        {
            let params = params.get_or_insert_with(|| Value::Object(JsonObject::new()));
            // The caller's extra entries, where the params do not set them.
            let set = |k: &String| params.get("_meta").and_then(|m| m.get(k)).is_some();
            let extra: Vec<_> = options.meta.iter().filter(|(k, _)| !set(k)).collect();
            add_meta(
                params,
                extra.into_iter().map(|(k, v)| (k.clone(), v.clone())),
            );
            if let Some(fields) = &self.inner.modern_meta {
                // A field the caller set (a per-request capability) wins.
                let set = |k: &String| params.get("_meta").and_then(|m| m.get(k)).is_some();
                let fields: Vec<_> = fields.iter().filter(|(k, _)| !set(k)).collect();
                add_meta(
                    params,
                    fields.into_iter().map(|(k, v)| (k.clone(), v.clone())),
                );
                let level = self
                    .inner
                    .log_level
                    .load(std::sync::atomic::Ordering::Relaxed);
                if let Some(level) = level_from_code(level) {
                    add_meta(
                        params,
                        [(meta::META_LOG_LEVEL.to_owned(), Value::from(level.as_str()))],
                    );
                }
            }
            if options.progress.is_some() {
                add_meta(params, [(meta::PROGRESS_TOKEN.to_owned(), Value::from(id))]);
            }
        }
        let params = params
            .map(|p| serde_json::value::to_raw_value(&p))
            .transpose()
            .map_err(|source| Error::Serialize {
                method: method.to_owned(),
                source,
            })?;
        self.send_params(id, method, params, options).await
    }

    /// Sends request `id` with its final params; re-issues a lost
    /// stateless-era response once and checks `resultType`.
    pub(super) async fn send_params(
        &self,
        id: i64,
        method: &str,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
    ) -> Result<RawResult> {
        let engine = &self.inner.engine;
        let modern = self.inner.session.era == Era::Modern;
        let retry_options = modern.then(|| options.clone());
        let mut outcome = engine
            .request(id, method, params.as_deref(), options)
            .await
            .map_err(Error::from);
        // Stateless era: a response stream that broke before the answer is
        // re-issued once, with a new id (a session-era request is never
        // replayed: it may have run).
        if let (Err(Error::ResponseLost { reason, .. }), Some(options)) = (&outcome, retry_options)
        {
            tracing::debug!(server = %engine.server(), %method, %reason, "response lost; re-issuing once");
            let retry_id = engine.allocate_id();
            let params = params
                .as_deref()
                .map(|raw| renumber_progress(raw, options.progress.is_some().then_some(retry_id)))
                .transpose()
                .map_err(|source| Error::Serialize {
                    method: method.to_owned(),
                    source,
                })?;
            outcome = engine
                .request(retry_id, method, params.as_deref(), options)
                .await
                .map_err(Error::from);
        }
        let raw = outcome?;
        if modern {
            check_result_type(
                engine.server(),
                method,
                &raw,
                peek_result_type(&raw).as_deref(),
            )?;
        }
        Ok(raw)
    }

    /// Sends a typed request.
    ///
    /// # Errors
    /// [`Error::Server`] when the server answers with an error,
    /// [`Error::Timeout`], [`Error::Disconnected`], and [`Error::Protocol`]
    /// when the result does not parse.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request (`notifications/cancelled`).
    pub async fn request<R: Request>(
        &self,
        params: &R::Params,
        options: RequestOptions,
    ) -> Result<R::Result> {
        let value = serde_json::to_value(params).map_err(|source| Error::Serialize {
            method: R::METHOD.into(),
            source,
        })?;
        let value = (!value.is_null()).then_some(value);
        let raw = self.request_raw(R::METHOD, value, options).await?;
        parse_result(self.inner.engine.server(), R::METHOD, raw.get())
    }

    pub(super) fn require(
        &self,
        capability: &'static str,
        method: &'static str,
        present: bool,
    ) -> Result<()> {
        if present {
            Ok(())
        } else {
            Err(Error::CapabilityMissing {
                server: self.inner.engine.server().clone(),
                capability,
                method,
            })
        }
    }

    pub(super) fn require_legacy(&self, method: &'static str) -> Result<()> {
        if self.era() == Era::Legacy {
            Ok(())
        } else {
            Err(Error::NotInThisEra {
                server: self.inner.engine.server().clone(),
                method,
                version: self.protocol_version().clone(),
            })
        }
    }

    /// Follows every page of a list, its items parsed.
    pub(super) async fn list_all<R>(&self) -> Result<Vec<<R::Result as Paginated>::Item>>
    where
        R: Request<Params = PaginatedRequestParams>,
        R::Result: Paginated,
    {
        let mut items = Vec::new();
        self.follow_pages::<R>(|raw| {
            let page: R::Result = parse_result(self.inner.engine.server(), R::METHOD, raw.get())?;
            drop(raw);
            let next = page.next_cursor().map(str::to_owned);
            let page = page.into_items();
            let count = page.len();
            // The first page is the list so far: kept, not copied.
            if items.is_empty() {
                items = page;
            } else {
                items.extend(page);
            }
            Ok((count, next))
        })
        .await?;
        Ok(items)
    }

    /// Follows every page of a list: `page` takes each page's result (its
    /// text where it arrived) and says how many items it held and the
    /// next cursor.
    pub(super) async fn follow_pages<R>(
        &self,
        mut page: impl FnMut(RawResult) -> Result<(usize, Option<String>)>,
    ) -> Result<()>
    where
        R: Request<Params = PaginatedRequestParams>,
        R::Result: Paginated,
    {
        let mut items = 0usize;
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        let budget = self.inner.list_budget;
        let over = |what: String, setting: &str| Error::Pagination {
            server: self.inner.engine.server().clone(),
            method: R::METHOD,
            reason: format!(
                "{what}, over the limit (the client's `{setting}`; raise it if this list is expected to be that large)"
            ),
        };
        let mut bytes = 0usize;
        for _ in 0..self.inner.page_cap {
            let params = PaginatedRequestParams {
                cursor: cursor.take(),
                ..Default::default()
            };
            let raw = self
                .request_raw(
                    R::METHOD,
                    Some(
                        serde_json::to_value(&params).map_err(|source| Error::Serialize {
                            method: R::METHOD.into(),
                            source,
                        })?,
                    ),
                    RequestOptions::default(),
                )
                .await?;
            // Counted before the page is parsed: its parsed form is several
            // times larger than its text.
            bytes = bytes.saturating_add(raw.get().len());
            if bytes > budget.bytes {
                return Err(over(
                    format!("its pages passed {} bytes", budget.bytes),
                    "max_list_bytes",
                ));
            }
            let (count, next) = page(raw)?;
            items = items.saturating_add(count);
            if items > budget.items {
                return Err(over(
                    format!("it passed {} items", budget.items),
                    "max_list_items",
                ));
            }
            match next {
                None => return Ok(()),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(Error::Pagination {
                        server: self.inner.engine.server().clone(),
                        method: R::METHOD,
                        reason: format!("the server repeated cursor {next:?}"),
                    });
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(Error::Pagination {
            server: self.inner.engine.server().clone(),
            method: R::METHOD,
            reason: format!(
                "more than {} pages (raise the client's page cap if this is expected)",
                self.inner.page_cap
            ),
        })
    }

    /// Sends a notification (the escape hatch for notifications the types do
    /// not know).
    ///
    /// # Errors
    /// [`Error::Disconnected`] or [`Error::Transport`] when it cannot be sent.
    ///
    /// # Cancel safety
    /// Cancel safe: a notification dropped midway may or may not be sent,
    /// and the connection stays usable.
    pub async fn notify<P: Serialize>(&self, method: &str, params: Option<&P>) -> Result<()> {
        let params = params
            .map(serde_json::value::to_raw_value)
            .transpose()
            .map_err(|source| Error::Serialize {
                method: method.to_owned(),
                source,
            })?;
        Ok(self.inner.engine.notify(method, params.as_deref()).await?)
    }
}
