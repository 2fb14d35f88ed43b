//! A 2026-07-28 backend's `input_required` rounds for a 2026-07-28 host:
//! passed on as they are (the backend's keys, every request of a round
//! together), the backend's `requestState` sealed inside the gateway's
//! (`sealed.rs`), for `tools/call` (`calls.rs`) and `prompts/get`.

use serde_json::Value;
use switchboard::RequestOptions;
use switchboard::server::{Reply, RequestContext, ServerHandler};
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::meta::META_CLIENT_CAPABILITIES;
use switchboard::types::{
    GetPromptRequestParams, GetPromptResult, InputRequiredResult, RequestOutcome, codes,
};

use super::super::HubServer;
use super::super::handler::routed_error;
use super::super::names::{prompt_route, without_identity};
use super::sealed::{self, Round, Unsealed};
use crate::hub::audit::{self, AuditKind};

/// The capabilities a passed-through round is sent to the backend with:
/// the host's own, as it declared them on its request — the backend asks
/// for what the host can give, and answers -32021 for what it cannot —
/// but for the tasks extension unless `tasks` (the gateway follows the
/// backend's task handles only for a `tools/call` of a host that takes
/// them: `tasks.rs`).
pub(in super::super) fn host_capabilities(cx: &RequestContext, tasks: bool) -> Value {
    let mut capabilities = cx
        .meta
        .get(META_CLIENT_CAPABILITIES)
        .filter(|c| c.is_object())
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    if !tasks
        && let Some(extensions) = capabilities
            .get_mut("extensions")
            .and_then(Value::as_object_mut)
    {
        extensions.remove(switchboard::types::tasks::TASKS_EXTENSION);
    }
    capabilities
}

impl HubServer {
    /// Whether `server`'s rounds reach the host of `cx` as they are: both
    /// speak 2026-07-28. (A session-era backend's asks name no key, so a
    /// 2026-07-28 host gets them parked under keys of the gateway's.)
    pub(super) fn passes_rounds(&self, server: &str, cx: &RequestContext) -> bool {
        cx.era == switchboard::types::Era::Modern
            && self
                .hub
                .client(server)
                .is_ok_and(|client| client.era() == switchboard::types::Era::Modern)
    }

    /// The round a host's sealed `requestState` carries, checked against
    /// the retry (`method` of `name` with `arguments`); a state that was
    /// changed, is not this gateway's, has expired or is of another call
    /// is -32602.
    pub(super) fn open_round(
        &self,
        state: &str,
        method: &str,
        name: &str,
        arguments: &impl serde::Serialize,
    ) -> Result<Round, ErrorObject> {
        let invalid =
            |why: String| ErrorObject::new(codes::INVALID_PARAMS, format!("Invalid params: {why}"));
        let round = self.parked.sealer().open(state).map_err(|why| match why {
            Unsealed::Tampered => invalid(
                "this requestState was not issued by this gateway, or was changed; send the request again without it".to_owned(),
            ),
            Unsealed::Expired => invalid(format!(
                "this requestState has expired (a round is good for {} minutes); send the request again without it",
                sealed::ROUND_TTL.as_secs() / 60
            )),
        })?;
        if round.method != method || round.name != name {
            return Err(invalid(format!(
                "this requestState belongs to `{}` of `{}`, not `{method}` of `{name}`",
                round.method, round.name
            )));
        }
        if round.digest != sealed::digest(Some(arguments)) {
            return Err(invalid(
                "this requestState belongs to a request with other arguments".to_owned(),
            ));
        }
        Ok(round)
    }

    /// A backend's `input_required` round for the host: its requests as
    /// they are, its state sealed in the gateway's with what the retry
    /// needs (`sealed.rs`).
    pub(super) fn seal_round(
        &self,
        mut required: InputRequiredResult,
        method: &str,
        server: &str,
        name: &str,
        digest: String,
        approved: bool,
    ) -> Result<InputRequiredResult, ErrorObject> {
        let round = Round {
            method: method.to_owned(),
            server: server.to_owned(),
            name: name.to_owned(),
            digest,
            approved,
            state: required.request_state.take(),
            issued: sealed::now_secs(),
        };
        let state = self.parked.sealer().seal(&round).ok_or_else(|| {
            ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "server `{server}` asked for input with a requestState over {} KiB, more than the gateway carries",
                    sealed::MAX_BACKEND_STATE / 1024
                ),
            )
        })?;
        required.request_state = Some(state);
        without_identity(&mut required.meta);
        Ok(required)
    }

    /// `prompts/get` for a 2026-07-28 host: a 2026-07-28 backend's rounds
    /// passed on (see the module); any other prompt as
    /// [`ServerHandler::get_prompt`] answers it.
    pub(in super::super) fn prompt_round(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext,
    ) -> Reply<RequestOutcome<GetPromptResult>> {
        let this = self.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let prior = match params.request_state.as_deref() {
                Some(state) if state.starts_with(sealed::SEALED_PREFIX) => {
                    Some(this.open_round(state, "prompts/get", &params.name, &params.arguments)?)
                }
                _ => None,
            };
            let (server, name) = prompt_route(&this.hub, &params.name).await?;
            if prior.as_ref().is_some_and(|round| round.server != server) {
                return Err(ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!(
                        "Invalid params: the prompt `{}` is another server's now; get it again without the requestState",
                        params.name
                    ),
                ));
            }
            if prior.is_none() && !this.passes_rounds(&server, &cx) {
                return ServerHandler::get_prompt(&this, params, cx)
                    .await
                    .map(RequestOutcome::Complete);
            }
            let digest = sealed::digest(Some(&params.arguments));
            let mut options = RequestOptions::default();
            options.meta.insert(
                META_CLIENT_CAPABILITIES.to_owned(),
                host_capabilities(&cx, false),
            );
            let backend = GetPromptRequestParams {
                name,
                arguments: params.arguments,
                input_responses: params.input_responses,
                request_state: prior.and_then(|round| round.state),
                ..Default::default()
            };
            let outcome = this
                .hub
                .get_prompt_round(&server, backend, options)
                .await
                .map_err(routed_error);
            audit::note_result(
                this.audit.as_ref(),
                AuditKind::PromptGet,
                Some(&server),
                &params.name,
                &outcome,
            );
            match outcome? {
                RequestOutcome::Complete(result) => {
                    Ok(RequestOutcome::Complete(this.own_prompt(&server, result)))
                }
                RequestOutcome::InputRequired(required) => this
                    .seal_round(
                        required,
                        "prompts/get",
                        &server,
                        &params.name,
                        digest,
                        false,
                    )
                    .map(RequestOutcome::InputRequired),
                RequestOutcome::Task(task) => Ok(RequestOutcome::Task(task)),
            }
        })
    }
}
