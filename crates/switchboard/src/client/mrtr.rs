//! Requests that take more than one round trip: the 2026-07-28
//! `input_required` driver, and the session era's -32042 (URL elicitation
//! required) retry.

use std::collections::HashSet;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_types::mrtr::{InputRequest, InputRequiredResult, RequestOutcome};
use switchboard_types::{ElicitAction, JsonObject, UrlElicitationRequiredData, codes};

use super::{Client, parse_result};
use crate::client::events::Event;
use crate::client::handlers::{HandlerContext, HandlerError};
use crate::engine::RequestOptions;
use crate::error::{Error, Result};

/// The wait before retrying a round that asked for nothing but carried
/// state: the server is waiting on something of its own.
fn state_only_backoff(consecutive: u32) -> Duration {
    Duration::from_millis(50u64.saturating_mul(1 << consecutive.min(5))).min(Duration::from_secs(1))
}

impl Client {
    /// Sends `method`, answering every `input_required` round through the
    /// installed handlers and retrying with the echoed `requestState`, a new
    /// id each time, up to the round cap.
    pub(crate) async fn request_rounds<P: Serialize, T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        options: RequestOptions,
    ) -> Result<T> {
        // No copy kept for retries: they are rare, and serializing the
        // caller's params again is cheaper than cloning every call's. The
        // first round's go out as text (`send_typed`), a retry's as JSON.
        let mut retry: Option<Value> = None;
        let mut rounds = 0usize;
        let mut state_only = 0u32;
        loop {
            let sent = match retry.take() {
                None => self.send_typed(method, params, options.clone()).await,
                Some(current) => {
                    self.request_raw(method, Some(current), options.clone())
                        .await
                }
            };
            let interim = match sent {
                Err(Error::InputRequired { result, .. }) => parse_result::<InputRequiredResult>(
                    self.inner.engine.server(),
                    method,
                    result.get(),
                )?,
                Ok(raw) => return parse_result(self.inner.engine.server(), method, raw.get()),
                Err(error) => return Err(error),
            };
            rounds += 1;
            if rounds > self.inner.max_input_rounds {
                return Err(Error::TooManyRounds {
                    server: self.inner.engine.server().clone(),
                    method: method.to_owned(),
                    rounds: rounds - 1,
                });
            }
            let requests = interim.input_requests.unwrap_or_default();
            if requests.is_empty() && interim.request_state.is_none() {
                return Err(Error::Protocol {
                    server: self.inner.engine.server().clone(),
                    detail: format!(
                        "its `{method}` input_required result has neither inputRequests nor requestState"
                    ),
                });
            }
            let responses = if requests.is_empty() {
                state_only += 1;
                tokio::time::sleep(state_only_backoff(state_only)).await;
                None
            } else {
                state_only = 0;
                Some(self.answer_inputs(method, requests, options.tag).await?)
            };
            // Every retry starts from the caller's params: nothing from an
            // earlier round leaks into the next.
            let mut current = to_params(method, params)?;
            let object = current
                .as_object_mut()
                .expect("to_params always makes an object");
            if let Some(responses) = responses {
                object.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = interim.request_state {
                object.insert("requestState".into(), Value::String(state));
            }
            retry = Some(current);
            tracing::debug!(server = %self.server_name(), %method, round = rounds, "retrying with input");
        }
    }

    /// One round only: the result, an `input_required` result, or a task.
    pub(crate) async fn request_once<P: Serialize, T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        options: RequestOptions,
    ) -> Result<RequestOutcome<T>> {
        match self.send_typed(method, params, options).await {
            Ok(raw) => parse_result(self.inner.engine.server(), method, raw.get()),
            Err(Error::InputRequired { result, .. }) => {
                parse_result(self.inner.engine.server(), method, result.get())
            }
            Err(error) => Err(error),
        }
    }

    /// Builds the `inputResponses` of a retry, one handler call per entry,
    /// in key order (a user sees one question at a time).
    pub(super) async fn answer_inputs(
        &self,
        method: &'static str,
        requests: std::collections::BTreeMap<String, InputRequest>,
        tag: Option<u64>,
    ) -> Result<JsonObject> {
        let mut responses = JsonObject::new();
        for (key, request) in requests {
            let input_method = request.method().unwrap_or("").to_owned();
            let failed = |source: HandlerError| Error::InputFailed {
                server: self.inner.engine.server().clone(),
                method: method.to_owned(),
                key: key.clone(),
                input_method: input_method.clone(),
                source: Box::new(source),
            };
            let mut value = serde_json::to_value(&request)
                .map_err(|e| failed(HandlerError::Failed(e.to_string())))?;
            let params = value
                .get_mut("params")
                .map(Value::take)
                .unwrap_or_else(|| Value::Object(JsonObject::new()));
            let context = HandlerContext {
                server: self.inner.engine.server().clone(),
                era: self.era(),
                input_key: Some(key.clone()),
                request_tag: tag,
            };
            let answer = self
                .inner
                .handlers
                .answer(context, &input_method, params)
                .await
                .map_err(failed)?;
            responses.insert(key, answer);
        }
        Ok(responses)
    }

    /// Runs `call`; if the server answers -32042 (URL elicitation
    /// required) and a URL-mode handler is installed, asks the user about
    /// each listed URL, waits for the server to report them complete, and
    /// runs `call` once more.
    pub(crate) async fn with_url_elicitation<T, F, Fut>(
        &self,
        tag: Option<u64>,
        call: F,
    ) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let error = match call().await {
            Err(error) if error.code() == Some(codes::URL_ELICITATION_REQUIRED) => error,
            other => return other,
        };
        let Some(handler) = self
            .inner
            .handlers
            .elicitation
            .clone()
            .filter(|h| h.supports_url())
        else {
            return Err(error);
        };
        let data = error
            .error_object()
            .and_then(|e| e.data.clone())
            .and_then(|d| serde_json::from_value::<UrlElicitationRequiredData>(d).ok());
        let Some(data) = data.filter(|d| !d.elicitations.is_empty()) else {
            return Err(error);
        };
        // Listen before asking, so a quick completion is not missed.
        let mut events = self.events();
        let mut waiting = HashSet::new();
        for params in data.elicitations {
            let id = params.elicitation_id.clone();
            let context = HandlerContext {
                server: self.inner.engine.server().clone(),
                era: self.era(),
                input_key: None,
                request_tag: tag,
            };
            let request = match crate::client::handlers::url_request(params) {
                Ok(request) => request,
                Err(e) => {
                    tracing::warn!(server = %self.server_name(), error = %e, "ignoring a malformed URL elicitation");
                    return Err(error);
                }
            };
            match handler.elicit_url(context, request).await {
                Ok(result) if result.action == ElicitAction::Accept => {
                    waiting.extend(id);
                }
                _ => return Err(error),
            }
        }
        let wait = async {
            while !waiting.is_empty() {
                match events.next().await {
                    Some(Event::ElicitationComplete(done)) => {
                        waiting.remove(&done.elicitation_id);
                    }
                    Some(Event::Closed(_)) | None => return,
                    Some(_) => {}
                }
            }
        };
        if tokio::time::timeout(self.inner.url_elicitation_wait, wait)
            .await
            .is_err()
        {
            tracing::debug!(server = %self.server_name(), "no elicitation/complete in time; retrying anyway");
        }
        call().await
    }
}

/// `params` as a JSON object (anything else becomes `{}`).
pub(super) fn to_params<P: Serialize>(method: &str, params: &P) -> Result<Value> {
    let value = serde_json::to_value(params).map_err(|source| Error::Serialize {
        method: method.to_owned(),
        source,
    })?;
    Ok(match value {
        Value::Object(_) => value,
        _ => Value::Object(JsonObject::new()),
    })
}
