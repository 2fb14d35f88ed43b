//! The typed client: era negotiation, per-request `_meta`, pagination and
//! capability checks on top of the engine.
//!
//! This file holds the [`Client`] handle and its state; each concern has a
//! file of its own: `builder.rs` (settings and `connect`), `negotiate.rs`
//! (the era probe and `initialize`), `send.rs` (`_meta`, the raw and typed
//! requests, pagination), the typed calls by feature (`tools.rs`,
//! `resources.rs`, `prompts.rs`, `utility.rs`, `tasks.rs`,
//! `subscriptions.rs`, `app.rs` for MCP Apps), `mrtr.rs` (multi round-trip requests), `cache.rs`,
//! and what servers ask of the client (`handlers.rs`), the event stream
//! (`events.rs`) and the `outputSchema` check (`output_schema.rs`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_types::{
    Era, Implementation, JsonObject, LoggingLevel, ProtocolVersion, ServerCapabilities, methods,
};
use tokio::sync::mpsc;

use crate::engine::{Engine, HandlerResult, RequestHandler, ServerNotification, ServerRequest};
use crate::error::Result;
use crate::transport::{BoxFuture, Connector, TransportError};
use events::EventStream;
use handlers::{HandlerContext, HandlerError, Handlers};

pub mod app;
mod builder;
mod cache;
pub mod events;
pub mod handlers;
#[cfg(test)]
mod limits_tests;
mod mrtr;
mod negotiate;
pub mod output_schema;
#[cfg(test)]
mod probe_tests;
mod prompts;
mod raw_list;
mod resources;
#[cfg(test)]
mod scripted_tests;
mod send;
pub mod skills;
mod subscriptions;
pub mod tasks;
#[cfg(test)]
mod tests;
mod tools;
mod utility;

pub use builder::{
    ClientBuilder, DEFAULT_MAX_LIST_BYTES, DEFAULT_MAX_LIST_ITEMS, DEFAULT_MAX_SERVER_REQUESTS,
    DEFAULT_PROBE_NOTICE_AFTER, DEFAULT_PROBE_START_TIMEOUT, DEFAULT_PROBE_TIMEOUT,
    MAX_SETTING_DURATION, TOO_MANY_SERVER_REQUESTS,
};
pub use negotiate::{EraMode, ProbeWait, ServerSession};
pub use raw_list::RawList;
pub use subscriptions::{Subscription, SubscriptionEvent};

use builder::ListBudget;
use negotiate::Negotiator;
use send::{
    add_meta, check_result_type, modern_meta, parse_result, peek_result_type, probe_params,
};

/// A connection to one MCP server. Cheap to clone; the server stops when the
/// last clone is dropped (or on [`Client::close`]).
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    engine: Engine,
    session: ServerSession,
    modern_meta: Option<JsonObject>,
    /// `modern_meta` serialized, without its braces (see `with_modern_meta`).
    modern_meta_json: Option<String>,
    page_cap: usize,
    list_budget: ListBudget,
    output_validation_budget: Duration,
    handlers: Handlers,
    max_input_rounds: usize,
    url_elicitation_wait: Duration,
    /// The stateless era's per-request log level; 0 = none (see `level_code`).
    log_level: std::sync::atomic::AtomicU8,
    /// The tools from the last `tools/list`, by name (for `outputSchema`;
    /// also [`Client::tools`]).
    tools: std::sync::Mutex<subscriptions::ToolList>,
    /// The other lists, the response cache and the listens (subscriptions.rs).
    subs: subscriptions::State,
    output_validator: crate::client::output_schema::OutputValidator,
    /// Kept alive so the roots handle can reach this connection.
    _roots_listener: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Requests sent for futures that were dropped (`tasks/cancel`),
    /// owned by the client and aborted with it.
    background: std::sync::Mutex<tokio::task::JoinSet<()>>,
}

/// A log level as a small number, so it can live in an atomic.
fn level_code(level: Option<LoggingLevel>) -> u8 {
    level.map_or(0, |l| {
        1 + LoggingLevel::ALL.iter().position(|x| *x == l).unwrap_or(0) as u8
    })
}

fn level_from_code(code: u8) -> Option<LoggingLevel> {
    code.checked_sub(1)
        .and_then(|i| LoggingLevel::ALL.get(i as usize).copied())
}

/// Routes session-era server requests to the installed handlers.
struct SessionHandler {
    handlers: Handlers,
    server: Arc<str>,
    fallback: Option<Arc<dyn RequestHandler>>,
    /// One permit per request being answered, held until its answer is
    /// sent or it is cancelled ([`ClientBuilder::max_server_requests`]).
    running: Arc<tokio::sync::Semaphore>,
    limit: usize,
}

impl RequestHandler for SessionHandler {
    fn handle(&self, request: ServerRequest) -> Option<BoxFuture<'static, HandlerResult>> {
        let Ok(permit) = self.running.clone().try_acquire_owned() else {
            tracing::warn!(server = %self.server, method = %request.method, limit = self.limit, "too many concurrent requests from the server; refusing one");
            let refusal = switchboard_types::jsonrpc::ErrorObject::new(
                TOO_MANY_SERVER_REQUESTS,
                format!(
                    "too many concurrent requests from the server; limit {} (the client's max_server_requests)",
                    self.limit
                ),
            );
            return Some(Box::pin(std::future::ready(Err(refusal))));
        };
        match request.method.as_str() {
            methods::SAMPLING_CREATE_MESSAGE
            | methods::ELICITATION_CREATE
            | methods::ROOTS_LIST => {}
            _ => {
                let answer = self.fallback.as_ref()?.handle(request)?;
                return Some(Box::pin(async move {
                    let answer = answer.await;
                    drop(permit);
                    answer
                }));
            }
        }
        let handlers = self.handlers.clone();
        let context = HandlerContext {
            server: self.server.clone(),
            era: Era::Legacy,
            input_key: None,
            request_tag: request.related_tag,
        };
        Some(Box::pin(async move {
            let params = match request.params.as_deref() {
                Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
                    HandlerError::InvalidParams(format!("params are not JSON: {e}"))
                        .to_error_object()
                })?,
                None => Value::Object(JsonObject::new()),
            };
            let answer = handlers
                .answer(context, &request.method, params)
                .await
                .map_err(|e| e.to_error_object())?;
            drop(permit);
            serde_json::value::to_raw_value(&answer)
                .map_err(|e| HandlerError::Failed(e.to_string()).to_error_object())
        }))
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("server", self.inner.engine.server())
            .field("era", &self.inner.session.era)
            .field("protocol_version", &self.inner.session.protocol_version)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder with default settings.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Connects with default settings.
    ///
    /// # Errors
    /// As [`ClientBuilder::connect`].
    ///
    /// # Cancel safety
    /// As [`ClientBuilder::connect`].
    pub async fn connect(connector: impl Connector) -> Result<Self> {
        Self::builder().connect(connector).await
    }

    /// The server's name, as used in messages.
    pub fn server_name(&self) -> &str {
        self.inner.engine.server()
    }

    /// What was negotiated.
    pub fn session(&self) -> &ServerSession {
        &self.inner.session
    }

    /// The era in use; persist it and pass it to [`ClientBuilder::era_hint`]
    /// to skip the probe next time.
    pub fn era(&self) -> Era {
        self.inner.session.era
    }

    /// The protocol version in use.
    pub fn protocol_version(&self) -> &ProtocolVersion {
        &self.inner.session.protocol_version
    }

    /// The server's self-description.
    pub fn server_info(&self) -> Option<&Implementation> {
        self.inner.session.server_info.as_ref()
    }

    /// What the server offers.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.session.capabilities
    }

    /// The server's instructions for the model.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.session.instructions.as_deref()
    }

    /// What the server wrote to stderr (the last 64 KiB by default), for
    /// process transports.
    pub fn stderr(&self) -> Option<String> {
        self.inner.engine.stderr().map(|s| s.contents())
    }

    /// How many lines the server wrote that were not JSON-RPC (skipped).
    pub fn skipped_lines(&self) -> u64 {
        self.inner.engine.skipped_lines()
    }

    /// Why the connection died, once it has.
    pub fn connection_error(&self) -> Option<Arc<TransportError>> {
        self.inner.engine.closed_reason()
    }

    /// The server's notifications, in arrival order, from now on.
    pub fn notifications(&self) -> mpsc::Receiver<ServerNotification> {
        self.inner.engine.subscribe()
    }

    /// Everything the server says from now on, typed and in arrival order,
    /// ending with [`Event::Closed`](crate::client::events::Event::Closed). Each
    /// stream buffers up to [`ClientBuilder::notification_buffer`] events
    /// and reports any it had to drop as
    /// [`Event::Lagged`](crate::client::events::Event::Lagged).
    pub fn events(&self) -> EventStream {
        let engine = &self.inner.engine;
        EventStream::new(
            engine.subscribe_marking_gaps(),
            Box::new(engine.closed_reader()),
        )
    }

    /// Closes the connection gracefully: for a process, close its stdin,
    /// then SIGTERM, then SIGKILL. Pending requests fail.
    ///
    /// # Cancel safety
    /// If dropped midway the process is still stopped when the last clone
    /// of the client is dropped.
    pub async fn close(&self) {
        self.inner.engine.close().await;
    }
}
