//! The client's error type.

use std::sync::Arc;
use std::time::Duration;

use switchboard_types::{ErrorObject, ProtocolVersion, codes};

use crate::engine::EngineError;
use crate::transport::{ServerEnvironment, TransportError};

/// Everything that can go wrong talking to a server. Every message names the
/// server; the cause, when there is one, is the [`std::error::Error::source`].
///
/// A tool result with `isError: true` is not an `Error`: it is data the model
/// should see.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a JSON-RPC error.
    #[error("server `{server}` answered `{method}` with an error: {error}")]
    Server {
        /// The server's name.
        server: Arc<str>,
        /// The method that failed.
        method: String,
        /// The error object, as sent.
        error: Box<ErrorObject>,
    },
    /// The request may have reached the server, but its response was lost
    /// (its stream broke, or the session ended). It was not sent again,
    /// since that could run it twice.
    #[error("server `{server}`: the response to `{method}` was lost: {reason}")]
    ResponseLost {
        /// The server's name.
        server: Arc<str>,
        /// The method.
        method: String,
        /// What happened.
        reason: String,
    },
    /// No answer within the timeout; the request was cancelled.
    #[error(
        "server `{server}` did not answer `{method}` within {after:.1?} (raise the request timeout if it needs longer)"
    )]
    Timeout {
        /// The server's name.
        server: Arc<str>,
        /// The method.
        method: String,
        /// How long we waited.
        after: Duration,
    },
    /// A server process this client started did not answer the handshake
    /// (`initialize`) within the request timeout. Apart from
    /// [`Error::Timeout`] because it says which environment variables the
    /// server got (names only): one missing a variable it needs (a proxy,
    /// a CA file, a token) often just hangs.
    #[error(
        "server `{server}` did not answer `{method}` within {after:.1?} of starting (raise the request timeout if it needs longer); it was started with {environment}{}",
        if matches!(environment, ServerEnvironment::Whole) { "" } else { ", so one it needs may be missing" }
    )]
    StartTimeout {
        /// The server's name.
        server: Arc<str>,
        /// The handshake's method.
        method: String,
        /// How long we waited.
        after: Duration,
        /// What the server was started with.
        environment: ServerEnvironment,
    },
    /// The connection is gone; every pending and later request gets this.
    #[error("server `{server}`: connection lost")]
    Disconnected {
        /// The server's name.
        server: Arc<str>,
        /// Why the connection died (exit status, stderr tail …).
        #[source]
        reason: Arc<TransportError>,
    },
    /// The transport failed to start or to send.
    #[error("server `{server}`: transport failure")]
    Transport {
        /// The server's name.
        server: Arc<str>,
        /// The transport's error.
        #[source]
        source: Box<TransportError>,
    },
    /// The server broke the protocol (malformed result, unknown result type …).
    #[error("server `{server}` broke the protocol: {detail}")]
    Protocol {
        /// The server's name.
        server: Arc<str>,
        /// What was wrong.
        detail: String,
    },
    /// A reply to a pending request arrived but cannot be used (both
    /// `result` and `error`, neither, invalid UTF-8, an HTTP body that is
    /// not the JSON-RPC message it claims to be). The request fails at once
    /// rather than waiting for its timeout; it may have run on the server.
    /// (An event stream that ends without the answer is
    /// [`ResponseLost`](Self::ResponseLost), also at once.)
    #[error("server `{server}` sent an unusable reply to `{method}`: {what}")]
    ProtocolViolation {
        /// The server's name.
        server: Arc<str>,
        /// The method of the request the reply was for.
        method: String,
        /// What was wrong with the reply.
        what: String,
    },
    /// The client is pinned to an era the server does not speak.
    #[error("server `{server}` does not speak the era this client is pinned to: {detail}")]
    WrongEra {
        /// The server's name.
        server: Arc<str>,
        /// What the server did, and what to do.
        detail: String,
    },
    /// The server answered `initialize` with a version we do not speak.
    #[error(
        "server `{server}` answered with protocol version {server_version}, but this client asked for {requested} and supports {supported}"
    )]
    UnsupportedVersion {
        /// The server's name.
        server: Arc<str>,
        /// The version we asked for.
        requested: ProtocolVersion,
        /// The version the server wants.
        server_version: String,
        /// What we support, for the message.
        supported: String,
    },
    /// The server did not declare the capability the call needs.
    #[error(
        "server `{server}` does not offer {capability} (it did not declare the `{capability}` capability), so `{method}` cannot be called"
    )]
    CapabilityMissing {
        /// The server's name.
        server: Arc<str>,
        /// The missing capability.
        capability: &'static str,
        /// The method that needs it.
        method: &'static str,
    },
    /// The method does not exist in the protocol era this server speaks.
    #[error("`{method}` does not exist in protocol {version} spoken by server `{server}`")]
    NotInThisEra {
        /// The server's name.
        server: Arc<str>,
        /// The method.
        method: &'static str,
        /// The negotiated version.
        version: ProtocolVersion,
    },
    /// A list did not end: a repeated cursor, or more pages than the cap.
    #[error("server `{server}`: listing `{method}` stopped: {reason}")]
    Pagination {
        /// The server's name.
        server: Arc<str>,
        /// The list method.
        method: &'static str,
        /// What happened.
        reason: String,
    },
    /// The server needs input before it can answer (a multi round-trip
    /// request, 2026-07-28); the raw `InputRequiredResult` is kept.
    #[error(
        "server `{server}` needs more input to answer `{method}`, and no handler can provide it"
    )]
    InputRequired {
        /// The server's name.
        server: Arc<str>,
        /// The method.
        method: String,
        /// The `InputRequiredResult`, as sent.
        result: Box<serde_json::value::RawValue>,
    },
    /// A handler could not answer what the server asked for during a
    /// multi round-trip request (2026-07-28), so the request was abandoned.
    #[error(
        "server `{server}` asked for `{input_method}` (input `{key}`) to answer `{method}`, and this client could not provide it"
    )]
    InputFailed {
        /// The server's name.
        server: Arc<str>,
        /// The request that needed the input.
        method: String,
        /// The `inputRequests` key.
        key: String,
        /// What the server asked for (`sampling/createMessage` …).
        input_method: String,
        /// Why the handler did not answer.
        #[source]
        source: Box<crate::client::handlers::HandlerError>,
    },
    /// The server kept answering `input_required` past the round cap.
    #[error(
        "server `{server}` still needed input for `{method}` after {rounds} rounds (raise `max_input_rounds` if this is expected)"
    )]
    TooManyRounds {
        /// The server's name.
        server: Arc<str>,
        /// The request.
        method: String,
        /// The rounds taken.
        rounds: usize,
    },
    /// The tool's `structuredContent` does not match its `outputSchema`.
    #[error("server `{server}`: the tool's result does not match its outputSchema")]
    OutputMismatch {
        /// The server's name.
        server: Arc<str>,
        /// Where and how it failed.
        #[source]
        mismatch: Box<crate::client::output_schema::OutputMismatch>,
        /// The result as received, for callers that want it anyway.
        result: Box<switchboard_types::CallToolResult>,
    },
    /// A task ended without a result (it failed or was cancelled), or the
    /// client stopped waiting for it and cancelled it (then `status` is the
    /// last one seen, not terminal, and [`Error::is_timeout`] holds).
    #[error("server `{server}`: task `{task_id}` of `{method}` {detail}")]
    Task {
        /// The server's name.
        server: Arc<str>,
        /// The task's id.
        task_id: String,
        /// The request the task runs (`tools/call`).
        method: String,
        /// The task's last known status.
        status: switchboard_types::TaskStatus,
        /// What happened and what to do, for the message.
        detail: String,
        /// The JSON-RPC error the task failed with, when the server gave one.
        error: Option<Box<ErrorObject>>,
    },
    /// A skill (the skills extension) was not loaded, or one of its files
    /// not used: its entry breaks the extension's rules, or what the server
    /// sent does not match the entry (size, digest, frontmatter). Nothing of
    /// the unverified content is returned.
    #[error("server `{server}`: skill {skill:?} refused: {problem}")]
    Skill {
        /// The server's name.
        server: Arc<str>,
        /// The skill's URI (its `SKILL.md`).
        skill: String,
        /// What did not match.
        problem: crate::client::skills::SkillProblem,
    },
    /// A tool's app (MCP Apps) was not returned by
    /// [`Client::app_for`](crate::Client::app_for): the tool has none, its
    /// read failed (the read's error is the source, and the predicates look
    /// through to it), or what the server sent is not an app.
    #[error("server `{server}`: {}", problem.describe(tool, uri))]
    App {
        /// The server's name.
        server: Arc<str>,
        /// The tool's name.
        tool: String,
        /// The app's URI as the tool names it (empty when it names none).
        uri: String,
        /// What was wrong.
        problem: crate::client::app::AppProblem,
        /// The read's error, for [`AppProblem::Read`](crate::client::app::AppProblem::Read)
        /// (as the source it is this `Box<Error>`).
        #[source]
        cause: Option<Box<Error>>,
    },
    /// A setting passed to a builder is invalid.
    #[error("invalid setting `{setting}`: {reason}")]
    Config {
        /// The setting.
        setting: &'static str,
        /// Why.
        reason: String,
    },
    /// Serializing the request failed (a caller-supplied value is not JSON).
    #[error("could not serialize the `{method}` request")]
    Serialize {
        /// The method.
        method: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    /// The error the predicates judge: a failed read's own error for an
    /// app that could not be read ([`Error::App`]), else this one.
    fn looked_through(&self) -> &Error {
        match self {
            Error::App {
                cause: Some(cause), ..
            } => cause.looked_through(),
            _ => self,
        }
    }

    /// The request timed out, or a task did not end within the wait.
    pub fn is_timeout(&self) -> bool {
        match self.looked_through() {
            Error::Timeout { .. } | Error::StartTimeout { .. } => true,
            Error::Task { status, .. } => !status.is_terminal(),
            _ => false,
        }
    }

    /// The connection is gone (the server exited or closed it).
    pub fn is_disconnected(&self) -> bool {
        matches!(self.looked_through(), Error::Disconnected { .. })
    }

    /// The server answered with a JSON-RPC error.
    pub fn is_server_error(&self) -> bool {
        matches!(self.looked_through(), Error::Server { .. })
    }

    /// The server could not be reached or started, or the connection (or a
    /// response on its way) was lost. Never true for
    /// [`is_protocol_violation`](Self::is_protocol_violation) or
    /// [`is_local_setup`](Self::is_local_setup) errors.
    pub fn is_unreachable(&self) -> bool {
        match self.looked_through() {
            Error::Transport { source, .. } => {
                !source.is_protocol_violation() && !source.is_local_setup()
            }
            Error::Disconnected { reason, .. } => !reason.is_protocol_violation(),
            Error::ResponseLost { .. } => true,
            _ => false,
        }
    }

    /// The server broke the protocol: it sent something that is not a
    /// usable MCP or JSON-RPC message (an unusable reply, a malformed
    /// result, a broken event stream), or a skill file other than its
    /// listing says ([`Error::Skill`]). The same kind of failure on every
    /// transport; retrying the same server is unlikely to help.
    pub fn is_protocol_violation(&self) -> bool {
        match self.looked_through() {
            Error::Protocol { .. } | Error::ProtocolViolation { .. } => true,
            // An app that is not one by the extension's rules.
            Error::App { problem, .. } => problem.is_protocol_violation(),
            // A skill's file other than its listing promised (the caller
            // asking for a file the skill does not have is not one).
            Error::Skill { problem, .. } => !matches!(
                problem,
                crate::client::skills::SkillProblem::NotListed { .. }
            ),
            Error::Transport { source, .. } => source.is_protocol_violation(),
            Error::Disconnected { reason, .. } => reason.is_protocol_violation(),
            _ => false,
        }
    }

    /// Trying the same request again may succeed: the connection failed or
    /// was lost, or the request timed out (it was cancelled, but may have
    /// run: retry what is safe to run twice). False for what the server
    /// answered (a JSON-RPC error), protocol violations, credentials the
    /// server wants, a response lost after it was sent for sure, and local
    /// errors.
    pub fn is_retryable(&self) -> bool {
        match self.looked_through() {
            Error::Timeout { .. } | Error::StartTimeout { .. } => true,
            Error::Transport { source, .. } => {
                !source.is_protocol_violation()
                    && !source.is_auth_required()
                    && !source.is_local_setup()
            }
            Error::Disconnected { reason, .. } => {
                !reason.is_protocol_violation() && !reason.is_auth_required()
            }
            _ => false,
        }
    }

    /// The server wants credentials (HTTP 401/403).
    pub fn is_auth_required(&self) -> bool {
        match self.looked_through() {
            Error::Transport { source, .. } => source.is_auth_required(),
            Error::Disconnected { reason, .. } => reason.is_auth_required(),
            _ => false,
        }
    }

    /// The server's `WWW-Authenticate` challenge, when it wants
    /// credentials and sent one (see [`is_auth_required`](Self::is_auth_required)).
    pub fn www_authenticate(&self) -> Option<&str> {
        match self.looked_through() {
            Error::Transport { source, .. } => source.www_authenticate(),
            Error::Disconnected { reason, .. } => reason.www_authenticate(),
            _ => None,
        }
    }

    /// The JSON-RPC error object, when the server answered with one.
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match self.looked_through() {
            Error::Server { error, .. } => Some(error),
            Error::Task {
                error: Some(error), ..
            } => Some(error),
            _ => None,
        }
    }

    /// The JSON-RPC error code, when the server answered with an error.
    pub fn code(&self) -> Option<i64> {
        self.error_object().map(|e| e.code)
    }

    /// The server said the method does not exist.
    pub fn is_method_not_found(&self) -> bool {
        self.code() == Some(codes::METHOD_NOT_FOUND)
    }

    /// What the server wrote to stderr before the connection died, when known.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self.looked_through() {
            Error::Disconnected { reason, .. } => reason.stderr_tail(),
            Error::Transport { source, .. } => source.stderr_tail(),
            _ => None,
        }
    }

    /// The environment variables (names) a server that never answered its
    /// handshake was started with ([`Error::StartTimeout`]): what a caller
    /// says to tell the user how to pass more.
    pub fn start_environment(&self) -> Option<&ServerEnvironment> {
        match self.looked_through() {
            Error::StartTimeout { environment, .. } => Some(environment),
            _ => None,
        }
    }

    /// A setting on this machine is wrong, not the server (no CA
    /// certificates to check an HTTPS server with: see
    /// [`TransportError::CaCertificates`]); trying again will not help.
    pub fn is_local_setup(&self) -> bool {
        match self.looked_through() {
            Error::Transport { source, .. } => source.is_local_setup(),
            Error::Disconnected { reason, .. } => reason.is_local_setup(),
            _ => false,
        }
    }

    /// The name of the server the error is about, when it names one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Error::Server { server, .. }
            | Error::Timeout { server, .. }
            | Error::StartTimeout { server, .. }
            | Error::ResponseLost { server, .. }
            | Error::Disconnected { server, .. }
            | Error::Transport { server, .. }
            | Error::Protocol { server, .. }
            | Error::ProtocolViolation { server, .. }
            | Error::WrongEra { server, .. }
            | Error::UnsupportedVersion { server, .. }
            | Error::CapabilityMissing { server, .. }
            | Error::NotInThisEra { server, .. }
            | Error::Pagination { server, .. }
            | Error::InputRequired { server, .. }
            | Error::InputFailed { server, .. }
            | Error::TooManyRounds { server, .. }
            | Error::OutputMismatch { server, .. }
            | Error::Task { server, .. }
            | Error::Skill { server, .. }
            | Error::App { server, .. } => Some(server),
            Error::Config { .. } | Error::Serialize { .. } => None,
        }
    }
}

impl From<EngineError> for Error {
    /// The engine's error as the client's, variant for variant.
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::Server {
                server,
                method,
                error,
            } => Error::Server {
                server,
                method,
                error,
            },
            EngineError::ResponseLost {
                server,
                method,
                reason,
            } => Error::ResponseLost {
                server,
                method,
                reason,
            },
            EngineError::Timeout {
                server,
                method,
                after,
            } => Error::Timeout {
                server,
                method,
                after,
            },
            EngineError::Disconnected { server, reason } => Error::Disconnected { server, reason },
            EngineError::Transport { server, source } => Error::Transport { server, source },
            EngineError::ProtocolViolation {
                server,
                method,
                what,
            } => Error::ProtocolViolation {
                server,
                method,
                what,
            },
        }
    }
}

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod retry_tests {
    use super::*;

    #[test]
    fn an_output_mismatch_says_its_layer_and_leaves_the_rest_to_its_source() {
        use std::error::Error as _;
        let error = Error::OutputMismatch {
            server: "s".into(),
            mismatch: Box::new(
                crate::client::output_schema::OutputMismatch::MissingStructuredContent {
                    tool: "weather".into(),
                },
            ),
            result: Box::default(),
        };
        let shown = error.to_string();
        assert!(
            !shown.contains("weather"),
            "said twice with its source: {shown}"
        );
        assert!(error.source().unwrap().to_string().contains("weather"));
    }

    #[test]
    fn a_start_timeout_names_the_variables_the_server_got() {
        let error = Error::StartTimeout {
            server: "s".into(),
            method: "initialize".into(),
            after: std::time::Duration::from_secs(1),
            environment: ServerEnvironment::Only(vec!["HOME".into(), "PATH".into()]),
        };
        assert!(error.is_timeout() && error.is_retryable());
        assert_eq!(error.server(), Some("s"));
        assert!(error.start_environment().is_some());
        let shown = error.to_string();
        assert!(
            shown.contains("only the environment variables HOME, PATH"),
            "{shown}"
        );
        assert!(shown.contains("may be missing"), "{shown}");
        let whole = Error::StartTimeout {
            server: "s".into(),
            method: "initialize".into(),
            after: std::time::Duration::from_secs(1),
            environment: ServerEnvironment::Whole,
        };
        assert!(!whole.to_string().contains("missing"), "{whole}");
    }

    #[cfg(feature = "http")]
    #[test]
    fn no_ca_certificates_is_a_setting_to_fix_not_an_outage() {
        let error = Error::Transport {
            server: "s".into(),
            source: Box::new(TransportError::CaCertificates(
                crate::transport::CaCertificatesError::from_environment(),
            )),
        };
        assert!(error.is_local_setup());
        assert!(!error.is_unreachable() && !error.is_retryable());
    }

    #[test]
    fn timeouts_are_retryable_answers_and_lost_responses_are_not() {
        let timeout = Error::Timeout {
            server: "s".into(),
            method: "tools/call".into(),
            after: std::time::Duration::from_secs(1),
        };
        assert!(timeout.is_retryable());
        let lost = Error::ResponseLost {
            server: "s".into(),
            method: "tools/call".into(),
            reason: "stream ended".into(),
        };
        assert!(!lost.is_retryable());
    }

    #[test]
    fn the_challenge_is_reachable_from_the_client_error() {
        const CHALLENGE: &str = "Bearer resource_metadata=\"https://a.example/prm\"";
        let refused = || TransportError::AuthorizationRequired {
            status: 401,
            www_authenticate: Some(CHALLENGE.into()),
        };
        let error = Error::Transport {
            server: "a".into(),
            source: Box::new(refused()),
        };
        assert!(error.is_auth_required());
        assert_eq!(error.www_authenticate(), Some(CHALLENGE));
        let error = Error::Disconnected {
            server: "a".into(),
            reason: Arc::new(refused()),
        };
        assert_eq!(error.www_authenticate(), Some(CHALLENGE));
    }

    #[test]
    fn an_engine_error_becomes_the_same_client_error() {
        let lost = EngineError::ResponseLost {
            server: "s".into(),
            method: "tools/call".into(),
            reason: "stream ended".into(),
        };
        let shown = lost.to_string();
        let error = Error::from(lost);
        assert!(matches!(error, Error::ResponseLost { .. }));
        assert_eq!(error.to_string(), shown);
        let violation = EngineError::ProtocolViolation {
            server: "s".into(),
            method: "tools/call".into(),
            what: "not JSON".into(),
        };
        let shown = violation.to_string();
        let error = Error::from(violation);
        assert!(error.is_protocol_violation());
        assert_eq!(error.to_string(), shown);
    }
}
