//! What servers ask the console's user — elicitation (a form, or a page to
//! open) and sampling (a message for the model, which the user writes or
//! refuses) — and what the tool policy asks (`ask` rules): held until the page answers it, or until the request that
//! caused it goes (a cancelled call takes its question with it). The page
//! asks for the questions while a call runs and shows each in a modal; a
//! URL is shown as the browser will open it, its host apart, with what to
//! be wary of (a user name before `@`, punycode, mixed scripts).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard::handlers::BoxFuture;
use switchboard::types::elicitation::ElicitResult;
use switchboard::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use switchboard::{
    ElicitationHandler, FormRequest, HandlerContext, HandlerError, SamplingHandler, UrlRequest,
};
use switchboard_hub::hub::{ToolAnswer, ToolAsk};
use tokio::sync::oneshot;

/// The questions waiting for the page.
#[derive(Default)]
pub(super) struct Asks {
    next: AtomicU64,
    pending: Mutex<BTreeMap<u64, Pending>>,
    /// Where each answer is written, if the console keeps a log.
    audit: Option<Arc<super::audit::Audit>>,
}

struct Pending {
    /// What the page shows.
    shown: Value,
    /// The page's answer, as it sent it.
    answer: oneshot::Sender<Value>,
}

impl Asks {
    /// Questions whose answers are written to `audit`.
    pub(super) fn audited(audit: Option<Arc<super::audit::Audit>>) -> Self {
        Self {
            audit,
            ..Self::default()
        }
    }

    /// The questions waiting, oldest first.
    pub(super) fn list(&self) -> Value {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        json!({ "asks": pending.values().map(|p| p.shown.clone()).collect::<Vec<_>>() })
    }

    /// `{"id": N, "action": "accept"|"decline"|"cancel", …}` (a form's
    /// `content`, a message's `text`): the answer to question `id`, given
    /// to the server.
    pub(super) fn answer(&self, body: &[u8]) -> Result<Value, (u16, String)> {
        let request: Value = serde_json::from_slice(body)
            .map_err(|e| (400, format!("the request is not JSON: {e}")))?;
        let id = request
            .get("id")
            .and_then(Value::as_u64)
            .ok_or((400, "no question `id`".to_owned()))?;
        if !matches!(
            request.get("action").and_then(Value::as_str),
            Some("accept" | "decline" | "cancel")
        ) {
            return Err((400, "`action` is accept, decline or cancel".to_owned()));
        }
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)
            .ok_or((
                404,
                format!("no question {id} waits (answered, or its call ended)"),
            ))?;
        if let Some(audit) = &self.audit {
            use switchboard_hub::hub::audit::AuditKind;
            let shown = &pending.shown;
            let (kind, name) = match shown["mode"].as_str() {
                Some("policy") => (AuditKind::Policy, shown["tool"].as_str()),
                Some("sampling") => (AuditKind::Sampling, Some("sampling/createMessage")),
                _ => (AuditKind::Elicitation, Some("elicitation/create")),
            };
            let outcome = match (request["action"].as_str(), request["text"].as_str()) {
                (Some("accept"), Some("always")) if kind == AuditKind::Policy => "always",
                (Some(action), _) => action,
                _ => "cancel",
            };
            audit.record(
                kind,
                shown["server"].as_str(),
                name.unwrap_or_default(),
                None,
                outcome,
                Some("answered in the console"),
                std::time::Instant::now(),
                0,
            );
        }
        let _ = pending.answer.send(request);
        Ok(json!({ "answered": id }))
    }

    /// Holds `shown` for the page; its answer.
    fn ask(self: &Arc<Self>, mut shown: Value) -> BoxFuture<'static, Result<Value, HandlerError>> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        shown["id"] = json!(id);
        let (answer, answered) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Pending { shown, answer });
        let gone = Gone {
            asks: self.clone(),
            id,
        };
        Box::pin(async move {
            let answer = answered.await;
            drop(gone);
            answer.map_err(|_| HandlerError::Failed("the console stopped".to_owned()))
        })
    }
}

/// Takes a question off the list when its request goes unanswered.
struct Gone {
    asks: Arc<Asks>,
    id: u64,
}

impl Drop for Gone {
    fn drop(&mut self) {
        self.asks
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

/// The hub's servers' elicitation and sampling handler: every question to
/// the page.
#[derive(Clone)]
pub(super) struct PageElicitation(pub(super) Arc<Asks>);

impl PageElicitation {
    /// The tool policy's `ask` (`[policy.tools]`), put to the page: run
    /// once, always (remembered as `call` remembers it), or not.
    pub(super) fn approve(&self, ask: ToolAsk) -> BoxFuture<'static, ToolAnswer> {
        let pair = format!("{}/{}", ask.server, ask.tool);
        let asked = self.0.ask(json!({
            "mode": "policy",
            "server": ask.server,
            "tool": ask.tool,
            "rule": ask.rule,
            "arguments": ask.arguments,
        }));
        Box::pin(async move {
            match asked.await {
                Ok(answer) => match (
                    answer.get("action").and_then(Value::as_str),
                    answer.get("text").and_then(Value::as_str),
                ) {
                    (Some("accept"), Some("always")) => ToolAnswer::Always,
                    (Some("accept"), _) => ToolAnswer::Once,
                    _ => ToolAnswer::Refuse(format!(
                        "the console's user did not allow `{pair}` to run"
                    )),
                },
                Err(error) => ToolAnswer::Refuse(format!("the question went unanswered: {error}")),
            }
        })
    }
}

/// A form's or a page's answer as the server gets it.
fn elicit_result(
    asked: BoxFuture<'static, Result<Value, HandlerError>>,
) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
    Box::pin(async move {
        let answer = asked.await?;
        Ok(match answer.get("action").and_then(Value::as_str) {
            Some("accept") => {
                ElicitResult::accept(answer.get("content").and_then(Value::as_object).cloned())
            }
            Some("decline") => ElicitResult::decline(),
            _ => ElicitResult::cancel(),
        })
    })
}

impl ElicitationHandler for PageElicitation {
    fn elicit_form(
        &self,
        context: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        elicit_result(self.0.ask(json!({
            "mode": "form",
            "server": context.server.to_string(),
            "message": request.message,
            "schema": request.params.requested_schema,
        })))
    }

    fn supports_url(&self) -> bool {
        true
    }

    fn elicit_url(
        &self,
        context: HandlerContext,
        request: UrlRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        elicit_result(self.0.ask(json!({
            "mode": "url",
            "server": context.server.to_string(),
            "message": request.message,
            "url": request.shown.url,
            "host": request.shown.host,
            "warnings": request.shown.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        })))
    }
}

/// Sampling: the server's messages are shown; the user writes the
/// model's answer, or refuses. Nothing goes to a model.
impl SamplingHandler for PageElicitation {
    fn create_message(
        &self,
        context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        let asked = self.0.ask(json!({
            "mode": "sampling",
            "server": context.server.to_string(),
            "systemPrompt": params.system_prompt,
            "messages": params.messages,
            "maxTokens": params.max_tokens,
        }));
        Box::pin(async move {
            let answer = asked.await?;
            match (
                answer.get("action").and_then(Value::as_str),
                answer.get("text").and_then(Value::as_str),
            ) {
                (Some("accept"), Some(text)) => serde_json::from_value(json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": text},
                    "model": "switchboard console (written by its user)",
                    "stopReason": "endTurn",
                }))
                .map_err(|e| HandlerError::Failed(e.to_string())),
                _ => Err(HandlerError::Rejected(
                    "the console's user refused the sampling request".to_owned(),
                )),
            }
        })
    }
}
