//! How a command ends: its exit code, and the error it prints.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::term::sanitize;

/// Exit codes, as documented in README.md.
pub(crate) mod exit {
    pub(crate) const USAGE: u8 = 1;
    pub(crate) const AUTH_REQUIRED: u8 = 3;
    pub(crate) const UNREACHABLE: u8 = 4;
    pub(crate) const TOOL_ERROR: u8 = 5;
    pub(crate) const PROTOCOL_VIOLATION: u8 = 6;
    /// Ended by SIGHUP, SIGINT (Ctrl-C), SIGTERM: 128 + the signal, as a
    /// shell reports a process the signal killed.
    pub(crate) const SIGHUP: u8 = 129;
    pub(crate) const SIGINT: u8 = 130;
    pub(crate) const SIGTERM: u8 = 143;
    /// stdout or stderr was closed by its reader (`… | head`): 128 + SIGPIPE.
    pub(crate) const OUTPUT_CLOSED: u8 = 141;
}
/// A failed command: what to print and which exit code to use.
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) error: anyhow::Error,
    pub(crate) stderr_tail: Option<String>,
    pub(crate) server: Option<String>,
    /// What to do next (the login command, for authorization required).
    pub(crate) hint: Option<String>,
}

impl Failure {
    /// The same failure, with a line that says what to do.
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub(crate) fn usage(error: anyhow::Error) -> Self {
        Self {
            code: exit::USAGE,
            error,
            stderr_tail: None,
            server: None,
            hint: None,
        }
    }

    pub(crate) fn from_client(error: switchboard::Error) -> Self {
        let code = match &error {
            e if e.is_auth_required() => exit::AUTH_REQUIRED,
            // The same kind of failure gets the same code on every transport.
            e if e.is_protocol_violation() => exit::PROTOCOL_VIOLATION,
            // A server that cannot be started, dies, loses the response, or
            // never answers.
            e if e.is_unreachable() || e.is_timeout() => exit::UNREACHABLE,
            _ => exit::USAGE,
        };
        let stderr_tail = error.stderr_tail().map(str::to_owned);
        let server = error.server().map(str::to_owned);
        // A server that never answered its handshake: the error names the
        // variables it got; say how to give it more.
        let hint = matches!(
            error.start_environment(),
            Some(switchboard::transport::ServerEnvironment::Only(_))
        )
        .then(|| {
            "pass a variable it needs with --env KEY=VALUE, or all of yours with --inherit-env"
                .to_owned()
        });
        Self {
            code,
            error: anyhow::Error::new(error),
            stderr_tail,
            server,
            hint,
        }
    }

    pub(crate) fn report(&self, json: bool) {
        // One line: the error and its causes.
        let message = format!("{:#}", self.error);
        if json {
            let mut object = json!({ "message": message, "exitCode": self.code });
            if let Some(server) = &self.server {
                object["server"] = Value::String(server.clone());
            }
            if let Some(tail) = &self.stderr_tail {
                object["serverStderr"] = Value::String(tail.clone());
            }
            if let Some(hint) = &self.hint {
                object["hint"] = Value::String(hint.clone());
            }
            eprintln!("{}", sanitize::json(json!({ "error": object }).to_string()));
        } else {
            // Error texts quote servers, files and authorization servers.
            eprintln!("error: {}", sanitize::term(&message));
            if let Some(hint) = &self.hint {
                eprintln!("{}", sanitize::term(hint));
            }
            if let Some(tail) = &self.stderr_tail {
                eprintln!("server stderr (last lines):");
                for line in tail.lines() {
                    eprintln!("  | {}", sanitize::line(line));
                }
            }
        }
    }
}

impl From<switchboard::Error> for Failure {
    fn from(error: switchboard::Error) -> Self {
        Self::from_client(error)
    }
}
/// Whether the server sent more than a size limit allows.
pub(crate) fn message_too_large(error: &anyhow::Error) -> bool {
    use switchboard::transport::TransportError;
    error.chain().any(|cause| {
        // A lost connection keeps its reason behind an `Arc`, a failed
        // send behind a `Box`.
        let transport = cause
            .downcast_ref::<TransportError>()
            .or_else(|| cause.downcast_ref::<Arc<TransportError>>().map(|r| &**r))
            .or_else(|| cause.downcast_ref::<Box<TransportError>>().map(|r| &**r));
        matches!(
            transport,
            Some(
                TransportError::MessageTooLarge { .. }
                    | TransportError::Sse(
                        switchboard::transport::sse::SseError::EventTooLarge { .. }
                    )
            )
        )
    })
}

/// An error and its causes on one line (a cause already in the text is
/// not said again), as the shell and the console print an error.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}
