//! The engine's error: what can go wrong with one JSON-RPC exchange. The
//! client's `Error` wraps it (`From`), variant for variant.

use std::sync::Arc;
use std::time::Duration;

use switchboard_types::jsonrpc::ErrorObject;

use crate::transport::TransportError;

/// A request or notification that did not get an answer the engine could
/// hand back. Every message names the server; the cause, when there is one,
/// is the [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
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
    /// The request may have reached the server, but the transport lost its
    /// response (its stream broke, or the session ended).
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
    /// The connection is gone; every pending and later request gets this.
    #[error("server `{server}`: connection lost")]
    Disconnected {
        /// The server's name.
        server: Arc<str>,
        /// Why the connection died (exit status, stderr tail …).
        #[source]
        reason: Arc<TransportError>,
    },
    /// The transport failed to send.
    #[error("server `{server}`: transport failure")]
    Transport {
        /// The server's name.
        server: Arc<str>,
        /// The transport's error.
        #[source]
        source: Box<TransportError>,
    },
    /// A reply to a pending request arrived but cannot be used.
    #[error("server `{server}` sent an unusable reply to `{method}`: {what}")]
    ProtocolViolation {
        /// The server's name.
        server: Arc<str>,
        /// The method of the request the reply was for.
        method: String,
        /// What was wrong with the reply.
        what: String,
    },
}

impl EngineError {
    /// No answer within the timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(self, EngineError::Timeout { .. })
    }

    /// The connection is gone (the server exited or closed it).
    pub fn is_disconnected(&self) -> bool {
        matches!(self, EngineError::Disconnected { .. })
    }

    /// The JSON-RPC error code, when the server answered with an error.
    pub fn code(&self) -> Option<i64> {
        match self {
            EngineError::Server { error, .. } => Some(error.code),
            _ => None,
        }
    }

    /// The name of the server the error is about.
    pub fn server(&self) -> &str {
        match self {
            EngineError::Server { server, .. }
            | EngineError::ResponseLost { server, .. }
            | EngineError::Timeout { server, .. }
            | EngineError::Disconnected { server, .. }
            | EngineError::Transport { server, .. }
            | EngineError::ProtocolViolation { server, .. } => server,
        }
    }
}
