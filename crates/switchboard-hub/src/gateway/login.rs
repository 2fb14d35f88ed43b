//! The `SERVER__authenticate` tools: a host logs in to a backend that needs it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use switchboard::BoxFuture;
use switchboard::server::RequestContext;
use switchboard::types::CallToolResult;
use tokio::sync::{mpsc, oneshot};

use super::HubServer;
use super::calls::{Flight, ProgressQueue, error_result, host_approver};
use super::forward::Ask;
use crate::hub::HubError;
use crate::hub::audit::{self, AuditKind};

/// Starts a login to a server (by name): the page its user must open, and
/// the login's end (an error says why it failed).
pub type Authenticator = Arc<
    dyn Fn(
            &str,
        )
            -> BoxFuture<'static, Result<(String, BoxFuture<'static, Result<(), String>>), String>>
        + Send
        + Sync,
>;

/// What follows the server's name in the tool that logs in to it.
pub const AUTHENTICATE_TOOL: &str = "authenticate";

/// How long an `authenticate` call waits for the login to complete.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The tool a server waiting for a login is listed as.
pub(super) fn authenticate_tool(server: &str) -> switchboard::types::Tool {
    serde_json::from_value(serde_json::json!({
        "name": crate::hub::namespaced(server, AUTHENTICATE_TOOL),
        "description": format!(
            "Server `{server}` needs a login before its tools can be used: call this to log in \
             (you will be asked to open its login page); its tools appear when the login completes."
        ),
        "inputSchema": {"type": "object", "properties": {}},
    }))
    .expect("a valid tool")
}

impl HubServer {
    /// The servers waiting for a login.
    pub(super) fn waiting_for_login(&self) -> Vec<String> {
        self.hub
            .list()
            .into_iter()
            .filter(|s| matches!(s.state, crate::hub::ServerState::NeedsAuth { .. }))
            .map(|s| s.name)
            .collect()
    }

    /// The `authenticate` call for `server` as a flight: the host is asked
    /// to open the login page (a URL elicitation), then the login's end is
    /// awaited and the server started again.
    pub(super) async fn authenticate(
        &self,
        server: String,
        cx: &RequestContext,
    ) -> Result<Flight, CallToolResult> {
        let command = format!("switchboard login {server}");
        let can_open = cx
            .client_capabilities
            .elicitation
            .as_ref()
            .is_some_and(|e| e.url.is_some());
        let Some(authenticator) = self.authenticator.clone().filter(|_| can_open) else {
            tracing::warn!(%server, "server `{server}` needs a login: run `{command}`");
            return Err(error_result(format!(
                "Server `{server}` needs a login, and this host cannot open a login page for it \
                 (it did not declare URL elicitation): run `{command}` in a terminal; its tools \
                 appear when the login completes."
            )));
        };
        let hub = self.hub.clone();
        let name = crate::hub::namespaced(&server, AUTHENTICATE_TOOL);
        let (own_tx, own) = mpsc::unbounded_channel();
        let approver = audit::approver(
            self.audit.as_ref(),
            host_approver(name.clone(), own_tx.clone()),
        );
        let audit = self.audit.clone();
        let call: BoxFuture<'static, Result<CallToolResult, HubError>> = Box::pin(async move {
            // The policy first, as for any tool: nothing starts before.
            let allowed = hub
                .check_tool_named(&server, AUTHENTICATE_TOOL, None, Some(&approver))
                .await;
            audit::note_denied(audit.as_ref(), &allowed);
            allowed?;
            let (page, done) = match authenticator(&server).await {
                Ok(started) => {
                    audit::note(
                        audit.as_ref(),
                        AuditKind::Login,
                        Some(&server),
                        "start",
                        "ok",
                        None,
                    );
                    started
                }
                Err(why) => {
                    let why = why.to_string();
                    audit::note(
                        audit.as_ref(),
                        AuditKind::Login,
                        Some(&server),
                        "start",
                        "error",
                        Some(&why),
                    );
                    return Ok(error_result(format!(
                        "cannot start a login to `{server}`: {why} (or run `{command}` in a terminal)"
                    )));
                }
            };
            let mut id = [0u8; 16];
            let _ = aws_lc_rs::rand::fill(&mut id);
            let elicitation_id: String = id.iter().map(|b| format!("{b:02x}")).collect();
            let (answer, answered) = oneshot::channel();
            let _ = own_tx.send(Ask {
                method: "elicitation/create",
                params: serde_json::json!({
                    "mode": "url",
                    "message": format!("Log in to `{server}` to use its tools: open this page and approve."),
                    "url": page,
                    "elicitationId": elicitation_id,
                }),
                answer,
            });
            // The host's answer, or the login's end: behind a load
            // balancer the answer may reach another replica and never this
            // one, while the login, finished anywhere, is heard here.
            let deadline = tokio::time::Instant::now() + LOGIN_TIMEOUT;
            let mut done = done;
            let first = tokio::time::timeout_at(deadline, async {
                tokio::select! {
                    answer = answered => Err(matches!(
                        answer,
                        Ok(Ok(answer)) if answer.get("action").and_then(Value::as_str) == Some("accept")
                    )),
                    ended = &mut done => Ok(ended),
                }
            })
            .await;
            let ended = match first {
                Ok(Err(false)) => {
                    return Ok(error_result(format!(
                        "not logged in: the login page was not opened (run `{command}` in a terminal instead)"
                    )));
                }
                Ok(Err(true)) => tokio::time::timeout_at(deadline, done).await,
                Ok(Ok(ended)) => Ok(ended),
                Err(elapsed) => Err(elapsed),
            };
            let ended = match ended {
                Err(_) => Ok(error_result(format!(
                    "the login to `{server}` did not complete within {} s; call this tool again",
                    LOGIN_TIMEOUT.as_secs()
                ))),
                Ok(Err(why)) => Ok(error_result(format!(
                    "the login to `{server}` failed: {why}"
                ))),
                Ok(Ok(())) => match hub.login_completed(&server).await {
                    Ok(state) if state.is_ready() => Ok(CallToolResult::text(format!(
                        "Logged in to `{server}`: its tools are listed now."
                    ))),
                    Ok(state) => Ok(error_result(format!(
                        "logged in, but `{server}` is {state} now"
                    ))),
                    Err(error) => Ok(error_result(error.to_string())),
                },
            };
            audit::note_login_end(audit.as_ref(), &server, &ended);
            ended
        });
        Ok(Flight {
            name,
            server: None,
            call: super::calls::whole(call),
            progress: ProgressQueue::default(),
            logs: super::calls::LogQueue::default(),
            asks: mpsc::unbounded_channel().1,
            own,
            rounds: 0,
            _registration: None,
            passed: None,
        })
    }
}
