//! What servers ask the console's user (elicitation: a form, or a page to
//! open): held until the page answers it, or until the request that
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
use switchboard::{ElicitationHandler, FormRequest, HandlerContext, HandlerError, UrlRequest};
use tokio::sync::oneshot;

/// The questions waiting for the page.
#[derive(Default)]
pub(super) struct Asks {
    next: AtomicU64,
    pending: Mutex<BTreeMap<u64, Pending>>,
}

struct Pending {
    /// What the page shows.
    shown: Value,
    answer: oneshot::Sender<ElicitResult>,
}

impl Asks {
    /// The questions waiting, oldest first.
    pub(super) fn list(&self) -> Value {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        json!({ "asks": pending.values().map(|p| p.shown.clone()).collect::<Vec<_>>() })
    }

    /// `{"id": N, "action": "accept"|"decline"|"cancel", "content": {…}}`:
    /// the answer to question `id`, given to the server.
    pub(super) fn answer(&self, body: &[u8]) -> Result<Value, (u16, String)> {
        let request: Value = serde_json::from_slice(body)
            .map_err(|e| (400, format!("the request is not JSON: {e}")))?;
        let id = request
            .get("id")
            .and_then(Value::as_u64)
            .ok_or((400, "no question `id`".to_owned()))?;
        let result = match request.get("action").and_then(Value::as_str) {
            Some("accept") => match request.get("content") {
                None | Some(Value::Null) => ElicitResult::accept(None),
                Some(Value::Object(content)) => ElicitResult::accept(Some(content.clone())),
                Some(_) => return Err((400, "`content` must be an object".to_owned())),
            },
            Some("decline") => ElicitResult::decline(),
            Some("cancel") => ElicitResult::cancel(),
            _ => return Err((400, "`action` is accept, decline or cancel".to_owned())),
        };
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)
            .ok_or((
                404,
                format!("no question {id} waits (answered, or its call ended)"),
            ))?;
        let _ = pending.answer.send(result);
        Ok(json!({ "answered": id }))
    }

    /// Holds `shown` for the page; its answer.
    fn ask(
        self: &Arc<Self>,
        mut shown: Value,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
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

/// The hub's servers' elicitation handler: every question to the page.
#[derive(Clone)]
pub(super) struct PageElicitation(pub(super) Arc<Asks>);

impl ElicitationHandler for PageElicitation {
    fn elicit_form(
        &self,
        context: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        self.0.ask(json!({
            "mode": "form",
            "server": context.server.to_string(),
            "message": request.message,
            "schema": request.params.requested_schema,
        }))
    }

    fn supports_url(&self) -> bool {
        true
    }

    fn elicit_url(
        &self,
        context: HandlerContext,
        request: UrlRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        self.0.ask(json!({
            "mode": "url",
            "server": context.server.to_string(),
            "message": request.message,
            "url": request.shown.url,
            "host": request.shown.host,
            "warnings": request.shown.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }))
    }
}
