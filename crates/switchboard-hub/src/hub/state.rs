//! What the hub tells about its servers: states, statuses, tools, events.

use std::fmt;
use std::sync::Arc;

use switchboard::Event;
use switchboard::transport::{ExitInfo, TransportError};
use switchboard::types::{Era, Implementation, ServerCapabilities, Tool};
use tokio::sync::broadcast;

use super::stats::ServerStats;

/// Where one server is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerState {
    /// Configured, not started yet.
    Pending,
    /// Starting for the first time.
    Connecting,
    /// Connected; its tools are fresh.
    Ready,
    /// Lost after it was ready; its last tools stay visible, marked stale.
    Reconnecting {
        /// The attempt under way or next (1-based).
        attempt: u32,
        /// Why the connection ended (or the last attempt failed).
        reason: Failure,
    },
    /// The server wants credentials (HTTP 401/403); log in, then
    /// [`Hub::login_completed`](super::Hub::login_completed) (or let
    /// [`HubBuilder::watch_credentials`](super::HubBuilder::watch_credentials)
    /// notice the login) to connect it.
    NeedsAuth {
        /// The server's `WWW-Authenticate` challenge, when it sent one.
        www_authenticate: Option<String>,
    },
    /// Could not start, or gave up reconnecting.
    Failed(Failure),
    /// Switched off in the configuration.
    Disabled,
    /// From a project file the user has not approved (or changed since):
    /// never started, nothing expanded or sent.
    NeedsApproval {
        /// An approval exists, but for another command, URL or set of env
        /// or header names.
        changed: bool,
    },
    /// Shut down by the hub.
    Stopped,
}

impl ServerState {
    /// A short name for tables and the state file: `pending`,
    /// `connecting`, `ready`, `reconnecting`, `needs-auth`, `failed`,
    /// `disabled`, `needs-approval`, `stopped`.
    pub fn name(&self) -> &'static str {
        match self {
            ServerState::Pending => "pending",
            ServerState::Connecting => "connecting",
            ServerState::Ready => "ready",
            ServerState::Reconnecting { .. } => "reconnecting",
            ServerState::NeedsAuth { .. } => "needs-auth",
            ServerState::Failed(_) => "failed",
            ServerState::Disabled => "disabled",
            ServerState::NeedsApproval { .. } => "needs-approval",
            ServerState::Stopped => "stopped",
        }
    }

    /// Ready for calls.
    pub fn is_ready(&self) -> bool {
        matches!(self, ServerState::Ready)
    }

    /// Done starting: anything but pending and connecting.
    pub fn is_settled(&self) -> bool {
        !matches!(self, ServerState::Pending | ServerState::Connecting)
    }
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerState::Reconnecting { attempt, reason } => {
                write!(f, "reconnecting (attempt {attempt}; {reason})")
            }
            ServerState::Failed(reason) => write!(f, "failed: {reason}"),
            other => f.write_str(other.name()),
        }
    }
}

/// Why a server failed or was lost: the error, and what the transport knew.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// What happened, with its causes (no secrets: the client's errors
    /// carry none).
    pub message: String,
    /// How the server process ended, for a local server that exited.
    pub exit: Option<ExitInfo>,
    /// The HTTP status, for a remote server that answered with one.
    pub http_status: Option<u16>,
    /// The last lines the server wrote to stderr.
    pub stderr_tail: Option<String>,
}

impl Failure {
    pub(crate) fn message(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            exit: None,
            http_status: None,
            stderr_tail: None,
        }
    }

    pub(crate) fn from_error(error: &switchboard::Error) -> Self {
        let transport = match error {
            switchboard::Error::Disconnected { reason, .. } => Some(&**reason),
            switchboard::Error::Transport { source, .. } => Some(&**source),
            _ => None,
        };
        Self {
            message: chain(error),
            exit: transport.and_then(TransportError::exit_status),
            http_status: transport.and_then(TransportError::http_status),
            stderr_tail: error.stderr_tail().map(str::to_owned),
        }
    }

    pub(crate) fn from_transport(error: Option<&Arc<TransportError>>) -> Self {
        match error {
            None => Self::message("the connection ended"),
            Some(error) => Self {
                message: chain(&**error),
                exit: error.exit_status(),
                http_status: error.http_status(),
                stderr_tail: error.stderr_tail().map(str::to_owned),
            },
        }
    }
}

/// An error and its sources, `: `-separated.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// One server as the hub sees it now.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerStatus {
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: ServerState,
    /// A required server's failure fails [`Hub::start`](super::Hub::start).
    pub required: bool,
    /// The transport in use (`stdio`, `streamable-http`, `sse` …), from
    /// the live connection or the state file.
    pub transport: Option<String>,
    /// The protocol era, likewise.
    pub era: Option<Era>,
    /// The protocol version, likewise.
    pub protocol_version: Option<String>,
    /// Its tools as the server lists them (before filtering), fresh while
    /// ready, else the last known ones.
    pub tools: Arc<[Tool]>,
    /// The tools are not from the live connection (reconnecting, or read
    /// from the state file).
    pub tools_stale: bool,
    /// The state the last run recorded (`ready`, `failed`, `needs-auth`),
    /// from the state file.
    pub last_known_state: Option<String>,
    /// Its counters.
    pub stats: ServerStats,
    /// What the live connection's server says about using it
    /// (`instructions`), while ready; untrusted text for a system prompt.
    pub instructions: Option<String>,
    /// What the live connection's server offers (`capabilities` of its
    /// `initialize` or `server/discover` answer), while ready; `None`
    /// otherwise (the state file does not keep them).
    pub capabilities: Option<ServerCapabilities>,
    /// The live connection's server's `serverInfo` (name, version …),
    /// while ready and when it gave one.
    pub server_info: Option<Implementation>,
}

/// A tool in the hub's aggregated list.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HubTool {
    /// The hub-wide name (what
    /// [`Hub::call_tool`](super::Hub::call_tool) takes): `server__tool`,
    /// or `server__tool_HASH` when that was taken (see `renamed_from`).
    pub name: String,
    /// The server offering it.
    pub server: String,
    /// The tool as the server describes it (its own `name`).
    pub tool: Tool,
    /// From a connection that is gone or from the state file.
    pub stale: bool,
    /// The `server__tool` name this tool would have had, when another
    /// tool earlier in configuration order has it (server `a__b`'s tool
    /// `c` and server `a`'s tool `b__c` both make `a__b__c`): `name` is
    /// then `server__tool_HASH`, a hash of server and tool, the same on
    /// every run. The hub also logs a warning naming both tools.
    pub renamed_from: Option<String>,
}

/// Something that changed in the hub, for UIs. One server's events come
/// in the order they happened; different servers' interleave.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum HubEvent {
    /// A server's state changed.
    StateChanged {
        /// The server.
        server: String,
        /// Its new state.
        state: ServerState,
    },
    /// A server's tool list changed (or went stale, or fresh again).
    ToolsChanged {
        /// The server.
        server: String,
        /// How many tools it lists now (before filtering).
        count: usize,
        /// The list is the last known one, not from a live connection.
        stale: bool,
    },
    /// What a connected server said, in the order it said it: progress
    /// ([`Event::Progress`], also given to the call's own progress
    /// callback), log messages ([`Event::Log`]), resource updates, prompt
    /// and resource list changes, task status, and notifications the
    /// client does not know. Never [`Event::Closed`] or [`Event::Lagged`]:
    /// those are the hub's business (a state change, a tool refresh), and
    /// a tool list change arrives as [`HubEvent::ToolsChanged`] once the
    /// new list is in. They pass through the server's supervisor task, so
    /// a call's last progress or log line may arrive after the call has
    /// returned: to show a call's progress in order with its result, use
    /// its progress callback ([`Hub::call_with`](super::Hub::call_with))
    /// or the server's own [`Client::events`](switchboard::Client::events)
    /// ([`Hub::client`](super::Hub::client)). Peer text inside is
    /// untrusted: sanitise before showing it on a terminal.
    Server {
        /// The server.
        server: String,
        /// What it said.
        event: Event,
    },
    /// A server joined the hub ([`Hub::add`](super::Hub::add), or
    /// [`Hub::reload`](super::Hub::reload) found it).
    ServerAdded {
        /// The server.
        server: String,
    },
    /// A server left the hub ([`Hub::remove`](super::Hub::remove), or
    /// [`Hub::reload`](super::Hub::reload) no longer found it); it was
    /// stopped first.
    ServerRemoved {
        /// The server.
        server: String,
    },
    /// [`Hub::reload`](super::Hub::reload) found this server's
    /// configuration changed: its connection was closed and the new
    /// configuration starts (if it is enabled and may start).
    ServerChanged {
        /// The server.
        server: String,
    },
    /// A [`Hub::reload`](super::Hub::reload) finished; what it did.
    Reloaded(super::ReloadReport),
    /// This stream fell behind and missed this many events; read
    /// [`Hub::list`](super::Hub::list) to catch up.
    Lagged(u64),
}

/// The hub's events from the moment it was made. Bounded: a consumer that
/// falls behind gets [`HubEvent::Lagged`] instead of the events it missed;
/// the hub never waits for it.
#[derive(Debug)]
pub struct HubEvents {
    pub(crate) rx: broadcast::Receiver<HubEvent>,
}

impl HubEvents {
    /// The next event; `None` once the hub is gone.
    ///
    /// # Cancel safety
    /// Cancel safe: no event is lost if the future is dropped.
    pub async fn next(&mut self) -> Option<HubEvent> {
        match self.rx.recv().await {
            Ok(event) => Some(event),
            Err(broadcast::error::RecvError::Lagged(missed)) => Some(HubEvent::Lagged(missed)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}
