//! What backends ask of their client (elicitation, sampling), forwarded to
//! the host whose call is running on that backend.
//!
//! The gateway's client to every backend declares elicitation (form and
//! URL) and sampling (with tools) through [`BackendAsks::client`]. When a
//! backend asks — a session-era server→client request, or an
//! `input_required` round of a 2026-07-28 backend — the ask goes to the
//! newest host call running on that backend ([`BackendAsks::register`]);
//! the host's answer goes back to the backend. With no host call running,
//! the ask is declined with a log line.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::{CreateMessageRequestParams, CreateMessageResult, ElicitResult};
use switchboard::{
    BoxFuture, ClientBuilder, ElicitationHandler, FormRequest, HandlerContext, HandlerError,
    SamplingHandler, UrlRequest,
};
use tokio::sync::{mpsc, oneshot};

/// The host's answer to an [`Ask`]: its result, or why there is none.
pub(crate) type AskAnswer = Result<Value, Refusal>;

/// Why an ask got no result from the host.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Declined on the host's behalf (it cannot answer); says why.
    Declined(String),
    /// The host's error, or its failure to answer.
    Error(ErrorObject),
}

/// One request of a backend (or of the gateway's policy) for the host.
pub(crate) struct Ask {
    /// `elicitation/create` or `sampling/createMessage`.
    pub(crate) method: &'static str,
    /// Its params, as the host will get them.
    pub(crate) params: Value,
    /// Where the host's answer goes.
    pub(crate) answer: oneshot::Sender<AskAnswer>,
}

type Calls = HashMap<Arc<str>, Vec<(u64, mpsc::UnboundedSender<Ask>)>>;

/// The host calls running on each backend, newest last: where that
/// backend's asks go.
#[derive(Clone, Default)]
pub struct BackendAsks {
    calls: Arc<Mutex<Calls>>,
    next: Arc<AtomicU64>,
}

impl std::fmt::Debug for BackendAsks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendAsks").finish_non_exhaustive()
    }
}

/// A host call's place in [`BackendAsks`]; leaves it when dropped.
pub(crate) struct Registration {
    asks: BackendAsks,
    server: Arc<str>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut calls = self.asks.calls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = calls.get_mut(&self.server) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                calls.remove(&self.server);
            }
        }
    }
}

impl BackendAsks {
    /// No call running yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Installs the forwarding handlers on the client builder of `server`
    /// (for [`HubBuilder::client`](crate::HubBuilder::client)).
    pub fn client(&self, server: &str, builder: ClientBuilder) -> ClientBuilder {
        let forward = Forward {
            asks: self.clone(),
            server: Arc::from(server),
        };
        builder.elicitation(forward.clone()).sampling(forward)
    }

    /// Makes the caller the newest host call on `server`: that server's
    /// asks arrive on the receiver until the registration is dropped.
    pub(crate) fn register(&self, server: &str) -> (Registration, mpsc::UnboundedReceiver<Ask>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let server: Arc<str> = Arc::from(server);
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(server.clone())
            .or_default()
            .push((id, tx));
        let registration = Registration {
            asks: self.clone(),
            server,
            id,
        };
        (registration, rx)
    }

    /// Hands `server`'s ask to the newest host call on it and waits for
    /// the host's answer.
    async fn ask(&self, server: &str, method: &'static str, params: Value) -> AskAnswer {
        let target = self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(server)
            .and_then(|list| list.last().map(|(_, tx)| tx.clone()));
        let Some(target) = target else {
            let why = format!(
                "server `{server}` sent `{method}` while no host call was running on it; declined"
            );
            tracing::warn!("{why}");
            return Err(Refusal::Declined(why));
        };
        let (answer, answered) = oneshot::channel();
        if target
            .send(Ask {
                method,
                params,
                answer,
            })
            .is_err()
        {
            return Err(Refusal::Declined(format!(
                "the host call on server `{server}` ended before `{method}` could reach it"
            )));
        }
        answered.await.unwrap_or_else(|_| {
            Err(Refusal::Declined(format!(
                "the host call on server `{server}` ended before answering `{method}`"
            )))
        })
    }
}

#[derive(Clone)]
struct Forward {
    asks: BackendAsks,
    server: Arc<str>,
}

impl Forward {
    /// Forwards an `elicitation/create` with these params (form or URL).
    fn elicit<P: serde::Serialize>(
        &self,
        params: &P,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        let forward = self.clone();
        let params = to_value(params);
        Box::pin(async move {
            let params = params?;
            match forward
                .asks
                .ask(&forward.server, "elicitation/create", params)
                .await
            {
                Ok(value) => serde_json::from_value(value).map_err(|e| {
                    HandlerError::Failed(format!("the host's elicitation answer is malformed: {e}"))
                }),
                Err(Refusal::Declined(_)) => Ok(ElicitResult::decline()),
                Err(Refusal::Error(error)) => Err(HandlerError::Rpc(error)),
            }
        })
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, HandlerError> {
    serde_json::to_value(value).map_err(|e| HandlerError::Failed(e.to_string()))
}

impl ElicitationHandler for Forward {
    fn elicit_form(
        &self,
        _context: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        self.elicit(&request.params)
    }

    fn supports_url(&self) -> bool {
        true
    }

    fn elicit_url(
        &self,
        _context: HandlerContext,
        request: UrlRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        self.elicit(&request.params)
    }
}

impl SamplingHandler for Forward {
    fn create_message(
        &self,
        _context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        let forward = self.clone();
        Box::pin(async move {
            let params = to_value(&params)?;
            match forward
                .asks
                .ask(&forward.server, "sampling/createMessage", params)
                .await
            {
                Ok(value) => serde_json::from_value(value).map_err(|e| {
                    HandlerError::Failed(format!("the host's sampling answer is malformed: {e}"))
                }),
                Err(Refusal::Declined(why)) => Err(HandlerError::Rejected(why)),
                Err(Refusal::Error(error)) => Err(HandlerError::Rpc(error)),
            }
        })
    }

    fn supports_tools(&self) -> bool {
        true
    }
}
