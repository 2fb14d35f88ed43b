//! The hub's error type.

use super::state::ServerState;

/// What can go wrong in the hub. `Display` names the server and says what
/// to do; a client error is the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// A builder setting is invalid.
    #[error("invalid hub setting `{setting}`: {reason}")]
    Config {
        /// The setting.
        setting: &'static str,
        /// Why.
        reason: String,
    },
    /// A login could not begin or finish.
    #[error("{}the login failed; start it again", server.as_ref().map(|s| format!("server `{s}`: ")).unwrap_or_default())]
    Login {
        /// The server (its URL when the hub has no server for it); `None`
        /// when a login to finish was not found.
        server: Option<String>,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// No server of that name is configured.
    #[error("no server named `{server}` is configured")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// No tool of that hub-wide name is listed (see [`Hub::tools`](super::Hub::tools)).
    #[error("no tool named `{name}` is offered by any server (list them with `tools`)")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The server's tool filter does not offer this tool.
    #[error("server `{server}`: tool `{tool}` is excluded by the configuration's tool filter")]
    ToolNotAllowed {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The tool policy (`[policy.tools]`) denies this tool; nothing was
    /// sent.
    #[error("server `{server}`: `{tool}` was not called: {reason}")]
    ToolDenied {
        /// The server.
        server: String,
        /// The tool's own name.
        tool: String,
        /// The rule, the file it is written in, and what to do.
        reason: String,
    },
    /// The tool policy asks before this tool runs, and the call was not
    /// allowed (refused, nobody to ask, or the server changed while the
    /// question was open); nothing was sent.
    #[error("server `{server}`: `{tool}` was not called: {reason}")]
    ToolNotApproved {
        /// The server.
        server: String,
        /// The tool's own name.
        tool: String,
        /// Why, and what to do.
        reason: String,
    },
    /// The server is not ready (starting, reconnecting, failed, needs
    /// authorization, disabled or stopped).
    #[error("server `{server}` is not ready ({state}); {}", advice(state))]
    Unavailable {
        /// The server.
        server: String,
        /// Its state when the call was made.
        state: ServerState,
    },
    /// The server's connection closed while the call was under way. The
    /// call was not sent again (it may have run); call again once the
    /// server is ready.
    #[error(
        "server `{server}` closed while `{tool}` was running; it was not retried, since it may have run (call again once the server has reconnected)"
    )]
    ClosedDuringCall {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The client's error (with the exit status and stderr tail).
        #[source]
        source: Box<switchboard::Error>,
    },
    /// The call failed (the server answered with an error, timed out …).
    #[error("server `{server}`: calling `{tool}` failed")]
    Call {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The client's error.
        #[source]
        source: Box<switchboard::Error>,
    },
    /// The server did not declare the capability the request needs, so it
    /// was not sent (see [`Hub::client`](super::Hub::client) and
    /// `Client::capabilities`).
    #[error(
        "server `{server}` does not offer {capability} (it did not declare the `{capability}` capability), so `{method}` was not sent; send it to a server that declares it"
    )]
    CapabilityMissing {
        /// The server.
        server: String,
        /// The capability (`resources`, `prompts`, `completions`).
        capability: &'static str,
        /// The method that needs it.
        method: &'static str,
    },
    /// A request other than a tool call failed (the server answered with
    /// an error, timed out, the connection closed …).
    #[error("server `{server}`: `{method}` failed")]
    Request {
        /// The server.
        server: String,
        /// The method (`resources/read`, `prompts/get` …).
        method: &'static str,
        /// The client's error.
        #[source]
        source: Box<switchboard::Error>,
    },
    /// A server marked `required` did not start, so the start failed.
    #[error("required server `{server}` did not start ({state})")]
    RequiredFailed {
        /// The server.
        server: String,
        /// The state it ended in.
        state: ServerState,
    },
    /// [`Hub::add`](super::Hub::add) was given a name the hub has.
    #[error("a server named `{server}` is already in the hub (remove it first, or reload)")]
    ServerExists {
        /// The name.
        server: String,
    },
    /// A user's shared state (their servers, tokens or pending logins in
    /// a `UserStore`, feature `oauth`) could not be used.
    #[error("the shared state of user `{user}` could not be used; nothing was changed")]
    UserState {
        /// The user.
        user: String,
        /// What the store said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// [`Hub::reload`](super::Hub::reload) could not read the servers
    /// (nothing was changed).
    #[error("could not reload the configuration (nothing changed): {reason}")]
    Reload {
        /// What the configuration source said.
        reason: String,
    },
}

fn advice(state: &ServerState) -> &'static str {
    match state {
        ServerState::Pending => "start the hub first",
        ServerState::Connecting | ServerState::Reconnecting { .. } => "try again shortly",
        ServerState::NeedsAuth { .. } => "log in to it, then start it again",
        ServerState::Failed(_) => "see its failure reason and fix its configuration",
        ServerState::Disabled => "enable it in the configuration",
        ServerState::NeedsApproval { .. } => {
            "it comes from a project file: approve it (`switchboard approve NAME`) to start it"
        }
        _ => "start a new hub",
    }
}

impl HubError {
    /// The server it is about, when it names one.
    pub fn server(&self) -> Option<&str> {
        match self {
            HubError::UnknownServer { server }
            | HubError::ServerExists { server }
            | HubError::ToolNotAllowed { server, .. }
            | HubError::ToolDenied { server, .. }
            | HubError::ToolNotApproved { server, .. }
            | HubError::Unavailable { server, .. }
            | HubError::ClosedDuringCall { server, .. }
            | HubError::Call { server, .. }
            | HubError::CapabilityMissing { server, .. }
            | HubError::Request { server, .. }
            | HubError::RequiredFailed { server, .. } => Some(server),
            _ => None,
        }
    }

    /// The tool policy kept the call from running
    /// ([`HubError::ToolDenied`], [`HubError::ToolNotApproved`]).
    pub fn is_policy_refusal(&self) -> bool {
        matches!(
            self,
            HubError::ToolDenied { .. } | HubError::ToolNotApproved { .. }
        )
    }

    /// The connection closed under the call ([`HubError::ClosedDuringCall`]).
    pub fn is_closed_during_call(&self) -> bool {
        matches!(self, HubError::ClosedDuringCall { .. })
    }

    /// The call timed out.
    pub fn is_timeout(&self) -> bool {
        match self {
            HubError::Call { source, .. } | HubError::Request { source, .. } => source.is_timeout(),
            _ => false,
        }
    }

    /// The server wants credentials.
    pub fn is_auth_required(&self) -> bool {
        match self {
            HubError::Unavailable { state, .. } | HubError::RequiredFailed { state, .. } => {
                matches!(state, ServerState::NeedsAuth { .. })
            }
            HubError::Call { source, .. } | HubError::Request { source, .. } => {
                source.is_auth_required()
            }
            _ => false,
        }
    }

    /// Calling again later may succeed (the server is starting or
    /// reconnecting, or closed under the call or request).
    pub fn is_retryable(&self) -> bool {
        match self {
            HubError::ClosedDuringCall { .. } => true,
            // A read, a prompt or a completion is safe to send again.
            HubError::Request { source, .. } => super::closed_under_call(source),
            HubError::Unavailable { state, .. } => matches!(
                state,
                ServerState::Connecting | ServerState::Reconnecting { .. }
            ),
            _ => false,
        }
    }
}
