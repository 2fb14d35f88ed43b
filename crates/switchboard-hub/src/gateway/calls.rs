//! `tools/call` through the gateway: routing, the policy, backends' asks
//! forwarded to the host, 2026-07-28 rounds (a 2026-07-28 backend's own
//! passed through under a sealed state, `sealed.rs`; a session-era
//! backend's asks parked), progress and the audit line.
//!
//! Over ~600 lines: the call, its rounds and how each reaches the host are
//! one path, read together.

mod rounds;
mod sealed;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;

use switchboard::BoxFuture;
use switchboard::RequestOptions;
use switchboard::server::{Reply, RequestContext};
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::{
    CallToolRequestParams, CallToolResult, InputRequiredResult, RequestOutcome, codes,
};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::task::TaskTracker;

use super::HubServer;
use super::forward::{Ask, AskAnswer, HostId, Refusal, Registration};
use super::login::AUTHENTICATE_TOOL;
use super::names::without_identity;
use super::search::SEARCH_TOOL;
use crate::hub::audit::{self, AuditEntry, AuditKind, AuditLog};
use crate::hub::policy::{ToolAnswer, ToolApprover, ToolAsk};
use crate::hub::{CallRound, HubError};
use sealed::{SEALED_PREFIX, Sealer};

/// How long a host has to answer what a backend asked (a person may be
/// filling in a form).
const ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a call waits for a 2026-07-28 host's retry, and how many may
/// wait at once.
const PARK_TTL: Duration = Duration::from_secs(600);
const MAX_PARKED: usize = 1024;
/// Calls of one 2026-07-28 host (by the name it gives in `clientInfo`)
/// parked at once: one host filling [`MAX_PARKED`] cannot keep another's
/// asks out.
const MAX_PARKED_PER_HOST: usize = 64;

/// Progress updates of a backend waiting for the host, at most this many.
const PROGRESS_WAITING: usize = 16;

/// A backend's progress on its way to the host: at most
/// [`PROGRESS_WAITING`] updates wait; past that the newest replaces the
/// last waiting one (only the latest matters), so a host slower than its
/// backend never makes the gateway buffer.
#[derive(Clone, Default)]
pub(super) struct ProgressQueue(
    Arc<(
        Mutex<std::collections::VecDeque<switchboard::Progress>>,
        Notify,
    )>,
);

impl ProgressQueue {
    fn send(&self, progress: switchboard::Progress) {
        {
            let mut waiting = self.0.0.lock().unwrap_or_else(|e| e.into_inner());
            if waiting.len() >= PROGRESS_WAITING {
                waiting.pop_back();
            }
            waiting.push_back(progress);
        }
        self.0.1.notify_one();
    }

    fn try_recv(&self) -> Option<switchboard::Progress> {
        self.0
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
    }

    /// The next update. Cancel safe: nothing is taken unless returned.
    async fn recv(&self) -> switchboard::Progress {
        loop {
            if let Some(progress) = self.try_recv() {
                return progress;
            }
            self.0.1.notified().await;
        }
    }
}

/// Log lines of a backend waiting for the host, at most this many (more
/// are dropped, with a warning).
const LOGS_WAITING: usize = 256;

/// The backend's log lines on their way to the host of a call: filled by
/// the backend connection's reader as it reads them, so every line read
/// before the call's answer is here when the call completes.
#[derive(Clone, Default)]
pub(super) struct LogQueue(Arc<(Mutex<LogsWaiting>, Notify)>);

/// The lines waiting, and how many were dropped.
#[derive(Default)]
struct LogsWaiting {
    lines: std::collections::VecDeque<Value>,
    dropped: u64,
}

impl LogQueue {
    fn send(&self, line: Value) {
        {
            let mut waiting = self.0.0.lock().unwrap_or_else(|e| e.into_inner());
            if waiting.lines.len() >= LOGS_WAITING {
                if waiting.dropped == 0 {
                    tracing::warn!(
                        "a host reads its call's log lines slower than the backend writes them; \
                         dropping lines"
                    );
                }
                waiting.dropped += 1;
                return;
            }
            waiting.lines.push_back(line);
        }
        self.0.1.notify_one();
    }

    fn try_recv(&self) -> Option<Value> {
        self.0
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lines
            .pop_front()
    }

    /// The next line. Cancel safe: nothing is taken unless returned.
    async fn recv(&self) -> Value {
        loop {
            if let Some(line) = self.try_recv() {
                return line;
            }
            self.0.1.notified().await;
        }
    }
}

/// A host's call in progress: the backend's call and what comes on the way.
pub(super) struct Flight {
    pub(super) name: String,
    pub(super) server: Option<String>,
    pub(super) call: BoxFuture<'static, Result<RequestOutcome<CallToolResult>, HubError>>,
    pub(super) progress: ProgressQueue,
    /// The backend's log lines the host hears.
    pub(super) logs: LogQueue,
    pub(super) asks: mpsc::UnboundedReceiver<Ask>,
    /// Asks of the gateway's own: the policy's question, the login page.
    pub(super) own: mpsc::UnboundedReceiver<Ask>,
    pub(super) rounds: usize,
    pub(super) _registration: Option<Registration>,
    /// A 2026-07-28 backend's round, when the host gets it as it is: what
    /// its sealed `requestState` says besides the backend's own.
    pub(super) passed: Option<Passed>,
}

/// What a passed-through round's sealed state carries of its call.
pub(super) struct Passed {
    /// The tool's hub-wide name.
    name: String,
    digest: String,
    /// Set when the user allowed the call (the policy asked).
    approved: Arc<std::sync::atomic::AtomicBool>,
}

/// A call that is answered whole, as a [`Flight`]'s.
pub(super) fn whole(
    call: BoxFuture<'static, Result<CallToolResult, HubError>>,
) -> BoxFuture<'static, Result<RequestOutcome<CallToolResult>, HubError>> {
    Box::pin(async move { call.await.map(RequestOutcome::Complete) })
}

/// A call waiting for a 2026-07-28 host's retry with the answer to `key`.
struct Parked {
    pub(super) flight: Flight,
    pub(super) key: String,
    pub(super) answer: oneshot::Sender<AskAnswer>,
    /// The host's name (`clientInfo.name`), for [`MAX_PARKED_PER_HOST`].
    pub(super) host: String,
}

/// Calls waiting for a 2026-07-28 host's retry, and the key that seals
/// the rounds passed through.
#[derive(Clone, Default)]
pub(super) struct ParkedCalls(Arc<Mutex<HashMap<String, Parked>>>, Sealer);

impl ParkedCalls {
    pub(super) fn sealer(&self) -> &Sealer {
        &self.1
    }

    /// No call parked yet, rounds sealed with `key`.
    pub(super) fn sealed_with(key: &[u8; 32]) -> Self {
        Self(Arc::default(), Sealer::shared(key))
    }

    fn take(&self, state: &str) -> Option<Parked> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(state)
    }

    /// Keeps `parked` under a fresh unguessable `requestState` for at most
    /// [`PARK_TTL`]; `None` when too many wait already.
    fn park(&self, parked: Parked, tasks: &TaskTracker) -> Result<String, Box<Parked>> {
        let mut bytes = [0u8; 16];
        if aws_lc_rs::rand::fill(&mut bytes).is_err() {
            return Err(Box::new(parked));
        }
        let state: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        {
            let mut calls = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let of_host = calls.values().filter(|p| p.host == parked.host).count();
            if calls.len() >= MAX_PARKED || of_host >= MAX_PARKED_PER_HOST {
                return Err(Box::new(parked));
            }
            calls.insert(state.clone(), parked);
        }
        let calls = Arc::downgrade(&self.0);
        let expiring = state.clone();
        tasks.spawn(async move {
            tokio::time::sleep(PARK_TTL).await;
            if let Some(calls) = calls.upgrade() {
                // Dropping the call cancels it on the backend.
                calls
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&expiring);
            }
        });
        Ok(state)
    }
}

/// Why the host cannot take `ask`, if it cannot, and the capability it
/// lacks as a -32021 error's `requiredCapabilities` (`None` for a request
/// no capability lets a host take).
fn host_cannot(cx: &RequestContext, ask: &Ask) -> Option<(String, Option<Value>)> {
    let caps = &cx.client_capabilities;
    let missing = match ask.method {
        "elicitation/create" => {
            let url = ask.params.get("mode").and_then(Value::as_str) == Some("url");
            match &caps.elicitation {
                None => Some("elicitation"),
                Some(e) if url && e.url.is_none() => Some("elicitation.url"),
                Some(e) if !url && e.form.is_none() && e.url.is_some() => Some("elicitation.form"),
                Some(_) => None,
            }
        }
        "sampling/createMessage" => match &caps.sampling {
            None => Some("sampling"),
            Some(s) if ask.params.get("tools").is_some() && s.tools.is_none() => {
                Some("sampling.tools")
            }
            Some(_) => None,
        },
        "roots/list" => caps.roots.is_none().then_some("roots"),
        _ => Some("that request"),
    }?;
    let required = match missing {
        "elicitation" => Some(serde_json::json!({"elicitation": {}})),
        "elicitation.url" => Some(serde_json::json!({"elicitation": {"url": {}}})),
        "elicitation.form" => Some(serde_json::json!({"elicitation": {"form": {}}})),
        "sampling" => Some(serde_json::json!({"sampling": {}})),
        "sampling.tools" => Some(serde_json::json!({"sampling": {"tools": {}}})),
        "roots" => Some(serde_json::json!({"roots": {}})),
        _ => None,
    };
    Some((
        format!(
            "the host did not declare the {missing} capability, so `{}` was declined on its behalf",
            ask.method
        ),
        required,
    ))
}

/// The -32021 error of the 2026-07-28 revision: the call needs
/// `required`, which the host did not declare.
fn missing_capability(method: &str, required: Value) -> ErrorObject {
    ErrorObject {
        code: codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        message: format!(
            "the server needs to send `{method}` for this request, and the client did not declare the capability"
        ),
        data: Some(serde_json::json!({ "requiredCapabilities": required })),
    }
}

fn host_error(error: switchboard::engine::EngineError) -> Refusal {
    match error {
        switchboard::engine::EngineError::Server { error, .. } => Refusal::Error(*error),
        other => Refusal::Error(ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("the host did not answer: {other}"),
        )),
    }
}

/// The gateway's answer to the policy's `ask` for the host calling `name`
/// (its hub-wide name): an elicitation form put to the host's user
/// through `own` (the flight's own asks), with an `always` box; a host
/// that cannot take it, declines or fails to answer refuses the call.
pub(super) fn host_approver(
    name: String,
    own: mpsc::UnboundedSender<Ask>,
) -> Arc<dyn ToolApprover> {
    Arc::new(move |ask: ToolAsk| -> BoxFuture<'static, ToolAnswer> {
        let name = name.clone();
        let own = own.clone();
        Box::pin(async move {
            let arguments = serde_json::to_string(&ask.arguments).unwrap_or_default();
            let (answer, answered) = oneshot::channel();
            let sent = own.send(Ask {
                method: "elicitation/create",
                params: serde_json::json!({
                    "mode": "form",
                    "message": format!(
                        "Allow the tool `{name}` (server `{}`'s `{}`) to run with the arguments \
                         {arguments}? (switchboard's policy asks first: {})",
                        ask.server, ask.tool, ask.rule
                    ),
                    "_meta": {
                        super::names::TOOL_ASK_META: {
                            "server": ask.server,
                            "tool": ask.tool,
                            "arguments": ask.arguments,
                            "rule": ask.rule,
                        },
                    },
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "always": {
                                "type": "boolean",
                                "title": "Always allow this tool of this server",
                                "description": "Remembered until the server's configuration \
                                    changes or `switchboard policy revoke` forgets it",
                                "default": false,
                            },
                        },
                    },
                }),
                answer,
            });
            if sent.is_err() {
                return ToolAnswer::Refuse("the host's call ended before it was asked".into());
            }
            match answered.await {
                Ok(Ok(answer))
                    if answer.get("action").and_then(Value::as_str) == Some("accept") =>
                {
                    let always = answer
                        .pointer("/content/always")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    if always {
                        ToolAnswer::Always
                    } else {
                        ToolAnswer::Once
                    }
                }
                Ok(Ok(_)) | Err(_) => {
                    ToolAnswer::Refuse(format!("the user did not allow `{name}` to run"))
                }
                Ok(Err(Refusal::Declined(why) | Refusal::Ended(why))) => ToolAnswer::Refuse(
                    format!("switchboard's policy asks the user before `{name}` runs, and {why}"),
                ),
                Ok(Err(Refusal::Error(error))) => ToolAnswer::Refuse(format!(
                    "asking the user before `{name}` runs failed: {}",
                    error.message
                )),
            }
        })
    })
}

/// `approver`, noting in `approved` when it lets the call run (carried in
/// the sealed state of the call's next round, so the user is not asked
/// again on the host's retry).
fn remembering(
    approved: Arc<std::sync::atomic::AtomicBool>,
    approver: Arc<dyn ToolApprover>,
) -> Arc<dyn ToolApprover> {
    Arc::new(move |ask: ToolAsk| -> BoxFuture<'static, ToolAnswer> {
        let answer = approver.approve(ask);
        let approved = approved.clone();
        Box::pin(async move {
            let answer = answer.await;
            if matches!(answer, ToolAnswer::Once | ToolAnswer::Always) {
                approved.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            answer
        })
    })
}

/// A list result the gateway wrote (`list_json`), read back as its type
/// (for a caller of the typed method; the server asks for the text).
pub(super) fn read_back<T: serde::de::DeserializeOwned + Send + 'static>(
    written: Option<Reply<Box<RawValue>>>,
) -> Reply<T> {
    Box::pin(async move {
        let text = written.expect("the gateway writes its lists").await?;
        serde_json::from_str(text.get())
            .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
    })
}

/// A tool result saying why the call did not run or failed.
pub(super) fn error_result(text: String) -> CallToolResult {
    let mut result = CallToolResult::text(text);
    result.is_error = Some(true);
    result
}

/// Writes the audit line of one answered round.
pub(super) fn record(
    log: &AuditLog,
    session: &str,
    server: Option<&str>,
    name: &str,
    arguments: Option<&switchboard::types::JsonObject>,
    outcome: &Result<RequestOutcome<CallToolResult>, ErrorObject>,
    started: std::time::Instant,
) {
    let (kind, message, bytes) = match outcome {
        Ok(RequestOutcome::Complete(result)) => {
            let failed = result.is_error == Some(true);
            (
                if failed { "tool_error" } else { "ok" },
                failed.then(|| {
                    result
                        .content
                        .first()
                        .and_then(|c| c.as_text())
                        .unwrap_or_default()
                        .to_owned()
                }),
                serde_json::to_vec(result).map_or(0, |v| v.len()),
            )
        }
        Ok(_) => ("input_required", None, 0),
        Err(error) => ("error", Some(error.message.clone()), 0),
    };
    let entry = AuditEntry {
        kind: AuditKind::ToolCall,
        session,
        server,
        name,
        arguments,
        outcome: kind,
        message: message.as_deref(),
        duration: started.elapsed(),
        bytes,
    };
    if let Err(error) = log.record(&entry) {
        tracing::error!(log = %log.describe(), %error, "could not write the audit log");
    }
}

impl HubServer {
    /// `tools/call` through the hub: a new call, or the retry of a parked
    /// one. Says which server it went to.
    pub(super) async fn call(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> (
        Option<String>,
        Result<RequestOutcome<CallToolResult>, ErrorObject>,
    ) {
        // A 2026-07-28 backend's round, sealed: the call goes on there.
        let mut prior = None;
        if let Some(state) = params.request_state.as_deref()
            && state.starts_with(SEALED_PREFIX)
        {
            match self.open_round(state, "tools/call", &params.name, &params.arguments) {
                Ok(round) => prior = Some(round),
                Err(error) => return (None, Err(error)),
            }
        } else if let Some(state) = params.request_state.as_deref() {
            let Some(parked) = self.parked.take(state) else {
                let error = ErrorObject::new(
                    codes::INVALID_PARAMS,
                    "Invalid params: this requestState is unknown or expired (a call waits \
                     10 minutes for its retry); call the tool again without it",
                );
                return (None, Err(error));
            };
            if parked.flight.name != params.name {
                let error = ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!(
                        "Invalid params: this requestState belongs to a call of `{}`, not `{}`",
                        parked.flight.name, params.name
                    ),
                );
                return (None, Err(error));
            }
            let answer = params
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(&parked.key))
                .map(|response| serde_json::to_value(response).unwrap_or_default());
            let _ = parked.answer.send(answer.ok_or_else(|| {
                Refusal::Declined("the host's retry did not answer the request".to_owned())
            }));
            let server = parked.flight.server.clone();
            return (server, self.drive(parked.flight, cx).await);
        }
        if let Some(server) = params
            .name
            .strip_suffix(AUTHENTICATE_TOOL)
            .and_then(|rest| rest.strip_suffix("__"))
            .filter(|server| self.waiting_for_login().iter().any(|s| s == server))
        {
            let server = server.to_owned();
            return match self.authenticate(server.clone(), &cx).await {
                Ok(flight) => (Some(server), self.drive(flight, cx).await),
                Err(result) => (Some(server), Ok(RequestOutcome::Complete(result))),
            };
        }
        if let Some(search) = &self.search
            && params.name == SEARCH_TOOL
        {
            let result = self.search_tools(search, &params, &cx).await;
            return (None, Ok(RequestOutcome::Complete(result)));
        }
        let mut server = self.hub.tool_server(&params.name);
        if server.is_none() {
            // Perhaps the tool of a server still starting.
            self.start_over().await;
            server = self.hub.tool_server(&params.name);
        }
        // A backend's state goes back to that backend only.
        if let Some(round) = &prior
            && server.as_deref() != Some(round.server.as_str())
        {
            let error = ErrorObject::new(
                codes::INVALID_PARAMS,
                format!(
                    "Invalid params: the tool `{}` is another server's now; call it again without the requestState",
                    params.name
                ),
            );
            return (server, Err(error));
        }
        // The backend's asks about this call come back to this host only.
        let (registration, asks) = match (&self.asks, &server) {
            (Some(backend_asks), Some(server)) => {
                let host = match cx.era {
                    switchboard::types::Era::Legacy => HostId::peer(cx.peer.clone()),
                    // Stateless hosts share one connection: known by name
                    // for limits only.
                    _ => HostId::named(
                        cx.client_info
                            .as_ref()
                            .map(|info| info.name.clone())
                            .unwrap_or_default(),
                    ),
                };
                let (registration, asks) = backend_asks.register(server, host);
                (Some(registration), asks)
            }
            _ => (None, mpsc::unbounded_channel().1),
        };
        let progress = ProgressQueue::default();
        let progress_tx = progress.clone();
        let mut options = if cx.progress_token().is_some() {
            RequestOptions::default().on_progress(move |p| progress_tx.send(p))
        } else {
            RequestOptions::default()
        };
        if let Some(registration) = &registration {
            options = options.with_tag(registration.tag());
        }
        // A host that takes log lines (every session-era one, a
        // 2026-07-28 one that asked) hears the backend's while its call
        // runs, when its calls are the only ones running there (a line
        // names no call: never another host's). The backend's reader hands
        // them over as it reads them: all those before the answer are in
        // the queue when the call completes.
        let logs = LogQueue::default();
        if log_level(&cx).is_some()
            && let (Some(server), Some(registration), Some(backend_asks)) =
                (&server, &registration, &self.asks)
        {
            let (queue, server, tag, asks) = (
                logs.clone(),
                server.clone(),
                registration.tag(),
                backend_asks.clone(),
            );
            options = options.on_log(move |params| {
                if !asks.alone_on(&server, tag) {
                    return;
                }
                let line = params
                    .and_then(|p| {
                        serde_json::from_str::<
                                switchboard::types::LoggingMessageNotificationParams,
                            >(p.get())
                            .ok()
                    })
                    .and_then(|line| serde_json::to_value(line).ok());
                if let Some(line) = line {
                    queue.send(line);
                }
            });
        }
        // A 2026-07-28 backend logs only when asked, per request: at the
        // level a 2026-07-28 host asked for, everything for a session-era
        // host (which hears what a session-era server sends unasked).
        if let Some(level) = log_level(&cx) {
            options
                .meta
                .insert(switchboard::types::meta::META_LOG_LEVEL.to_owned(), level);
        }
        let hub = self.hub.clone();
        let name = params.name.clone();
        // The hub decides; an `ask` is put to this host's user.
        let (own_tx, own) = mpsc::unbounded_channel();
        let audit = self.audit.clone();
        // A 2026-07-28 host calling a 2026-07-28 backend gets the
        // backend's rounds as they are (its keys, all of one round
        // together), under a sealed state of the gateway's.
        let passed = match &server {
            Some(server) if prior.is_some() || self.passes_rounds(server, &cx) => Some(Passed {
                name: name.clone(),
                digest: sealed::digest(Some(&params.arguments)),
                approved: Arc::default(),
            }),
            _ => None,
        };
        let call: BoxFuture<'static, Result<RequestOutcome<CallToolResult>, HubError>> =
            match &passed {
                Some(passed) => {
                    // The backend asks for what the host can give.
                    options.meta.insert(
                        switchboard::types::meta::META_CLIENT_CAPABILITIES.to_owned(),
                        rounds::host_capabilities(
                            &cx,
                            server
                                .as_deref()
                                .is_some_and(|server| self.follows_tasks(server, &cx)),
                        ),
                    );
                    let approved = passed.approved.clone();
                    let approver: Arc<dyn ToolApprover> =
                        if prior.as_ref().is_some_and(|r| r.approved) {
                            // The user allowed this call (these arguments) in
                            // an earlier round.
                            approved.store(true, std::sync::atomic::Ordering::Relaxed);
                            Arc::new(|_: ToolAsk| -> BoxFuture<'static, ToolAnswer> {
                                Box::pin(async { ToolAnswer::Once })
                            })
                        } else {
                            remembering(approved, host_approver(name.clone(), own_tx))
                        };
                    let approver = audit::approver(self.audit.as_ref(), approver);
                    let round = CallRound {
                        input_responses: params.input_responses,
                        request_state: prior.and_then(|r| r.state),
                    };
                    Box::pin(async move {
                        let result = hub
                            .call_tool_round(
                                &name,
                                params.arguments,
                                &round,
                                options,
                                Some(approver),
                            )
                            .await;
                        audit::note_denied(audit.as_ref(), &result);
                        result
                    })
                }
                None => {
                    let approver =
                        audit::approver(self.audit.as_ref(), host_approver(name.clone(), own_tx));
                    whole(Box::pin(async move {
                        let result = hub
                            .call_tool_asking(&name, params.arguments, options, Some(approver))
                            .await;
                        audit::note_denied(audit.as_ref(), &result);
                        result
                    }))
                }
            };
        let flight = Flight {
            name: params.name,
            server: server.clone(),
            call,
            progress,
            logs,
            asks,
            own,
            rounds: 0,
            _registration: registration,
            passed,
        };
        (server, self.drive(flight, cx).await)
    }

    /// Runs `flight` for the host of `cx` until the backend answers — or,
    /// for a 2026-07-28 host, until something must be asked of it: then it
    /// is parked and the host gets an `input_required` round.
    pub(super) async fn drive(
        &self,
        mut flight: Flight,
        cx: RequestContext,
    ) -> Result<RequestOutcome<CallToolResult>, ErrorObject> {
        enum Step {
            Progress(switchboard::Progress),
            Ask(Ask),
            Log(Value),
            Done(Box<Result<RequestOutcome<CallToolResult>, HubError>>),
        }
        loop {
            let step = tokio::select! {
                biased;
                p = flight.progress.recv() => Step::Progress(p),
                Some(ask) = flight.own.recv() => Step::Ask(ask),
                Some(ask) = flight.asks.recv() => Step::Ask(ask),
                line = flight.logs.recv() => Step::Log(line),
                outcome = &mut flight.call => Step::Done(Box::new(outcome)),
            };
            match step {
                Step::Log(line) => {
                    let _ = cx.notify("notifications/message", Some(line)).await;
                }
                Step::Progress(p) => {
                    let _ = cx.progress(p.progress, p.total, p.message.as_deref()).await;
                }
                Step::Ask(ask) => {
                    let cannot = host_cannot(&cx, &ask);
                    let why = cannot.as_ref().map(|(why, _)| why.clone());
                    let outcome = if why.is_some() {
                        "declined"
                    } else {
                        "forwarded"
                    };
                    audit::note(
                        self.audit.as_ref(),
                        AuditKind::of_ask(ask.method),
                        flight.server.as_deref(),
                        &flight.name,
                        outcome,
                        why.as_deref(),
                    );
                    if let Some((why, required)) = cannot {
                        tracing::warn!(tool = %flight.name, "{why}");
                        let _ = ask.answer.send(Err(Refusal::Declined(why)));
                        // A 2026-07-28 host is told what the call needs
                        // (-32021); the call ends (dropped, so cancelled).
                        if let Some(required) = required
                            && cx.era == switchboard::types::Era::Modern
                        {
                            return Err(missing_capability(ask.method, required));
                        }
                        continue;
                    }
                    if cx.era == switchboard::types::Era::Legacy {
                        let cx = cx.clone();
                        self.tasks.spawn(async move {
                            let answer = cx
                                .request(ask.method, ask.params, ASK_TIMEOUT)
                                .await
                                .map_err(host_error);
                            let _ = ask.answer.send(answer);
                        });
                        continue;
                    }
                    flight.rounds += 1;
                    let key = format!("{}-{}", ask.method.replace('/', "-"), flight.rounds);
                    let requests = serde_json::json!({
                        key.clone(): {"method": ask.method, "params": ask.params},
                    });
                    let requests = match serde_json::from_value(requests) {
                        Ok(requests) => requests,
                        Err(error) => {
                            let why =
                                format!("the backend's `{}` is malformed: {error}", ask.method);
                            let _ = ask.answer.send(Err(Refusal::Declined(why)));
                            continue;
                        }
                    };
                    let parked = Parked {
                        flight,
                        key,
                        answer: ask.answer,
                        host: cx
                            .client_info
                            .as_ref()
                            .map(|info| info.name.clone())
                            .unwrap_or_default(),
                    };
                    return match self.parked.park(parked, &self.tasks) {
                        Ok(state) => Ok(RequestOutcome::InputRequired(InputRequiredResult {
                            input_requests: Some(requests),
                            request_state: Some(state),
                            ..Default::default()
                        })),
                        Err(parked) => {
                            let why = format!(
                                "too many calls wait for their host's answers (at most {MAX_PARKED_PER_HOST} of one host, {MAX_PARKED} in all)"
                            );
                            tracing::warn!(tool = %parked.flight.name, "{why}; declined");
                            let Parked {
                                flight: back,
                                answer,
                                ..
                            } = *parked;
                            let _ = answer.send(Err(Refusal::Declined(why)));
                            flight = back;
                            continue;
                        }
                    };
                }
                Step::Done(outcome) => {
                    while let Some(p) = flight.progress.try_recv() {
                        let _ = cx.progress(p.progress, p.total, p.message.as_deref()).await;
                    }
                    // Log lines read before the answer go before the
                    // result (the backend's reader queued them first).
                    while let Some(line) = flight.logs.try_recv() {
                        let _ = cx.notify("notifications/message", Some(line)).await;
                    }
                    let outcome = match *outcome {
                        Ok(RequestOutcome::Complete(result)) => Ok(result),
                        Ok(RequestOutcome::InputRequired(required)) => {
                            let (Some(passed), Some(server)) = (&flight.passed, &flight.server)
                            else {
                                return Err(ErrorObject::new(
                                    codes::INTERNAL_ERROR,
                                    "a backend's input_required round reached a call that does not pass rounds on",
                                ));
                            };
                            return self
                                .seal_round(
                                    required,
                                    "tools/call",
                                    server,
                                    &passed.name,
                                    passed.digest.clone(),
                                    passed.approved.load(std::sync::atomic::Ordering::Relaxed),
                                )
                                .map(RequestOutcome::InputRequired);
                        }
                        // The backend's own task, followed (`tasks.rs`).
                        Ok(RequestOutcome::Task(task)) => {
                            let Some(server) = &flight.server else {
                                return Err(ErrorObject::new(
                                    codes::INTERNAL_ERROR,
                                    "a task came from no backend",
                                ));
                            };
                            return self
                                .follow_task(server, task, &cx)
                                .await
                                .map(RequestOutcome::Task);
                        }
                        Err(error) => Err(error),
                    };
                    let uris = std::cell::LazyCell::new(|| self.uris());
                    return finish(&uris, flight.server.as_deref(), outcome)
                        .map(RequestOutcome::Complete);
                }
            }
        }
    }
}

/// The log level a host takes on its calls: the one a 2026-07-28 host
/// asked for in the request's `_meta`, `debug` (everything) for a
/// session-era host; `None` for a 2026-07-28 host that asked for none.
fn log_level(cx: &RequestContext) -> Option<Value> {
    match cx.era {
        switchboard::types::Era::Legacy => Some(Value::from("debug")),
        _ => cx
            .meta
            .get(switchboard::types::meta::META_LOG_LEVEL)
            .filter(|level| level.is_string())
            .cloned(),
    }
}

/// The host's answer to a call from the backend's.
fn finish(
    uris: &impl std::ops::Deref<Target = super::uris::Uris>,
    server: Option<&str>,
    outcome: Result<CallToolResult, HubError>,
) -> Result<CallToolResult, ErrorObject> {
    match outcome {
        // What described the backend's answer in its own era is
        // not ours to pass on: the host gets this server's.
        Ok(mut result) => {
            // What it links to is its own.
            if let Some(server) = server {
                super::own_uris::own_content(uris, server, &mut result.content);
            }
            result.result_type = None;
            without_identity(&mut result.meta);
            Ok(result)
        }
        Err(HubError::UnknownTool { name }) => Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("Unknown tool: {name}"),
        )),
        // A capability the host did not declare (the backend was told
        // the host's): the backend's error is the host's, as it said it.
        Err(HubError::Call { source, .. })
            if source
                .error_object()
                .is_some_and(|e| e.code == codes::MISSING_REQUIRED_CLIENT_CAPABILITY) =>
        {
            Err(source.error_object().cloned().expect("checked above"))
        }
        // A task's call (`tasks.rs`): the backend's error fails the
        // task, as the backend said it (SEP-2663).
        Err(HubError::Call { source, .. })
            if super::tasks::in_task() && source.error_object().is_some() =>
        {
            Err(source.error_object().cloned().expect("checked above"))
        }
        // The backend's trouble is the call's result, not the
        // host's session's: the model reads why.
        Err(error) => {
            let backends = match &error {
                HubError::Call { source, .. } => source.error_object().cloned(),
                _ => None,
            };
            let mut text = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                let cause = cause.to_string();
                if !text.contains(&cause) {
                    text = format!("{text}: {cause}");
                }
                source = cause_of(source);
            }
            let mut result = error_result(text);
            if let Some(object) = backends
                .and_then(|object| serde_json::to_value(object).ok())
                .and_then(|value| value.as_object().cloned())
            {
                let mut meta = switchboard::types::JsonObject::new();
                meta.insert(
                    super::names::BACKEND_ERROR_META.to_owned(),
                    serde_json::Value::Object(object),
                );
                result.meta = Some(meta);
            }
            Ok(result)
        }
    }
}

fn cause_of<'a>(
    error: Option<&'a (dyn std::error::Error + 'static)>,
) -> Option<&'a (dyn std::error::Error + 'static)> {
    error.and_then(std::error::Error::source)
}
