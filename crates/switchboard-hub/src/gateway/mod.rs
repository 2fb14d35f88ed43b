//! The hub as one MCP server: every ready server's tools under their
//! hub-wide names, served to a host of either era with
//! [`switchboard::server`].
//!
//! - Names: each server's [`Prefix`](crate::config::Prefix) says whether
//!   its tools, prompts and templates keep their own names or become
//!   `server__name`; the gateway in front of one server serves its own
//!   names (`on-collision`), so a host cannot tell the two apart. Every
//!   name fits 64 characters (`hub/routes.rs`).
//! - `tools/list` lists the tools of servers with a live connection (a
//!   server that failed, needs a login or is reconnecting has none listed);
//!   a session-era host gets `notifications/tools/list_changed` whenever
//!   that set changes (a server becomes ready or fails, a server's list
//!   changes, a server joins or leaves).
//! - `tools/call` routes by the hub-wide name. A backend that is not
//!   ready, closes during the call or fails it answers with an `isError`
//!   result saying which server and why, so one backend never fails the
//!   host's session; an unknown name is a `-32602` error.
//! - The host's progress token gets the backend's progress; the host
//!   cancelling the call cancels it on the backend.
//! - `prompts/get` and a prompt's `completion/complete` go to the server
//!   that lists the prompt.
//! - Resource URIs are served as the backend wrote them where that is
//!   unambiguous (one server, or a scheme and authority one backend alone
//!   lists), mapped reversibly where not: `ui://SERVER+REST` for an MCP
//!   App's UI resource, `switchboard://SERVER/URI` for the rest
//!   ([`resource_uri`]), templates as `switchboard://SERVER/~/TEMPLATE`
//!   ([`resource_template_uri`]); `resources/read` goes to the owner with
//!   the URI it wrote (`uris.rs`). Every URI a backend's tool result,
//!   prompt message, read or tool `_meta.ui` carries is served the same
//!   way, and only as written where reading it reaches that backend
//!   (`own_uris.rs`).
//! - MCP Apps: the `io.modelcontextprotocol/ui` extension declared to
//!   hosts and passed to backends, `_meta.ui` kept on tools and reads,
//!   app-only tools listed only to hosts that render apps; a view's call
//!   marked with [`APP_META`] reaches only its own server's app-only
//!   tools, by the name its HTML knows (`apps.rs` says why a marker, and
//!   where the rule stops).
//!
//! One file per concern: `handler.rs` answers each method, `names.rs`
//! names things, `uris.rs` serves URIs, `lists.rs` writes the lists,
//! `calls.rs` runs tool calls, `apps.rs` checks apps' calls,
//! `forward.rs` routes backends' asks to hosts, `tasks.rs` runs the tasks
//! of hosts that take the tasks extension, `serving.rs` runs the
//! gateway (its tasks, HTTP and the graceful stop), `login.rs`,
//! `search.rs` and `metrics.rs` the rest (`docs/ARCHITECTURE.md` has the map).

mod apps;
mod calls;
mod forward;
mod handler;
mod lists;
mod login;
mod metrics;
mod names;
mod own_uris;
mod roots;
mod search;
mod serving;
mod subscriptions;
mod tasks;
#[cfg(test)]
mod tests;
mod uris;
#[cfg(all(feature = "oauth", feature = "http-server"))]
pub mod users;

pub use apps::{APP_META, app_call_meta};
pub use forward::BackendAsks;
pub use login::{AUTHENTICATE_TOOL, Authenticator};
pub use names::{
    BACKEND_ERROR_META, ORIGIN_META, TOOL_ASK_META, resource_origin, resource_template_uri,
    resource_uri, skill_origin, skill_uri,
};
pub use roots::MAX_ROOTS;
pub use search::{Ranker, SEARCH_TOOL};
#[cfg(feature = "http-server")]
pub use serving::HttpGateway;
pub use subscriptions::MAX_SUBSCRIPTIONS_PER_HOST;
pub use tasks::{MAX_TASKS, MAX_TASKS_PER_HOST, TASK_TTL};

use std::sync::Arc;
use std::time::Duration;

use switchboard::server::{self, ServeOptions, Served};
use switchboard::transport::Connection;
use switchboard::transport::memory;
use switchboard::types::Implementation;
use switchboard::{Client, ClientBuilder};
use tokio::sync::watch;

use crate::hub::Hub;
use crate::hub::audit::AuditLog;
use calls::ParkedCalls;
use search::Search;
use subscriptions::Subscriptions;
use tokio_util::task::TaskTracker;
use uris::{UriClaims, Uris};

/// The hub as a [`ServerHandler`](switchboard::server::ServerHandler);
/// see the module documentation.
#[derive(Clone)]
pub struct HubServer {
    hub: Hub,
    info: Implementation,
    /// Flips to `true` when the hub's first start is over, and how long a
    /// `tools/list` waits for that.
    started: Option<(watch::Receiver<bool>, Duration)>,
    /// Where each tool call is recorded, and the host's session there.
    audit: Option<(Arc<AuditLog>, Arc<str>)>,
    /// Where backends' asks find the host call running on them.
    asks: Option<BackendAsks>,
    /// Calls waiting for a 2026-07-28 host's retry, by `requestState`.
    parked: ParkedCalls,
    /// The tool-search mode, when on.
    search: Option<Search>,
    /// Starts logins for the `authenticate` tools, when given.
    authenticator: Option<Authenticator>,
    /// Which backend claims which URIs, by their lists.
    uris: UriClaims,
    /// Hosts' resource subscriptions.
    subscriptions: Subscriptions,
    /// The tasks the gateway runs for hosts (`tasks.rs`).
    host_tasks: tasks::HostTasks,
    /// Every task the gateway starts (the hub's first start, forwarding
    /// list changes and resource updates, serving in-process clients) or
    /// is given ([`HubServer::spawn`]).
    tasks: TaskTracker,
}

impl std::fmt::Debug for HubServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubServer")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl HubServer {
    /// Serves `hub` as the server `info` names.
    pub fn new(hub: Hub, info: Implementation) -> Self {
        // Before anything starts: a server that is this gateway's own URL
        // is never connected to.
        #[cfg(feature = "http-server")]
        hub.mark_served();
        Self {
            hub,
            info,
            started: None,
            audit: None,
            asks: None,
            parked: ParkedCalls::default(),
            search: None,
            authenticator: None,
            uris: UriClaims::default(),
            subscriptions: Subscriptions::default(),
            host_tasks: tasks::HostTasks::default(),
            tasks: TaskTracker::new(),
        }
    }

    /// Lets a host log in to a server that needs it: `authenticator`
    /// starts a login to a server (by name) and answers the page to open
    /// and the login's end. A host that declared URL elicitation is asked
    /// to open the page when it calls that server's
    /// `SERVER__authenticate` tool; the server's tools appear when the
    /// login completes. Without it (or without URL elicitation) the tool
    /// says which command logs in.
    pub fn authenticator(mut self, authenticator: Authenticator) -> Self {
        self.authenticator = Some(authenticator);
        self
    }

    /// Tool-search mode, for hosts with small tool budgets: with more than
    /// `max_tools` tools, `tools/list` shows only `search_tools` and the
    /// tools found with it so far (at most `max_tools - 1`); a session-era
    /// host hears `list_changed` when a search adds some. Any tool can
    /// still be called by its name. `rank` orders tools for a query.
    pub fn tool_search(mut self, max_tools: usize, rank: Ranker) -> Self {
        self.search = Some(Search {
            max: max_tools.max(2),
            rank,
            found: Arc::default(),
        });
        self
    }

    /// Seals the `requestState` of 2026-07-28 rounds passed through with
    /// `key` instead of a key of this process: replicas given the same
    /// key (derived from their shared session key) take each other's
    /// rounds, so a host's retry may land on any of them.
    pub fn round_key(mut self, key: [u8; 32]) -> Self {
        self.parked = ParkedCalls::sealed_with(&key);
        self
    }

    /// Forwards what backends ask of their client (elicitation, sampling)
    /// to the host whose call is running on them, in the host's era: a
    /// request to a session-era host, an `input_required` round to a
    /// 2026-07-28 one. `asks` must be the one whose
    /// [`BackendAsks::client`] the hub's clients were built with. An ask
    /// the host cannot answer (it did not declare the capability) is
    /// declined on its behalf, with a log line.
    pub fn forward_asks(mut self, asks: BackendAsks) -> Self {
        self.asks = Some(asks);
        self
    }

    /// Records every tool call in `log` (see [`crate::hub::audit`]), as made
    /// in the host session `session`.
    pub fn audit(mut self, log: Arc<AuditLog>, session: impl Into<Arc<str>>) -> Self {
        self.audit = Some((log, session.into()));
        self
    }

    /// Makes every request wait (at most `at_most`) until `started` is
    /// `true` — the hub's first start is over — so a host that lists its
    /// tools once, right after connecting, sees every server that starts
    /// in time, not only the fast ones, and a call made at once is not an
    /// unknown tool. Once started, nothing waits.
    pub fn wait_for_start(mut self, started: watch::Receiver<bool>, at_most: Duration) -> Self {
        self.started = Some((started, at_most));
        self
    }

    /// Resolves when the hub's first start is over, or its wait is up (at
    /// once without [`HubServer::wait_for_start`]).
    fn first_start(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let started = self.started.clone();
        async move {
            if let Some((mut started, at_most)) = started {
                let _ = tokio::time::timeout(at_most, started.wait_for(|s| *s)).await;
            }
        }
    }

    /// Resolves when the hub's first start is over, however long it takes
    /// (each server's startup timeout bounds it; at once without
    /// [`HubServer::wait_for_start`]): a call of a tool no ready server
    /// has waits for it before it is an unknown tool, as the tool may be
    /// of a server still starting.
    fn start_over(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let started = self.started.clone();
        async move {
            if let Some((mut started, _)) = started {
                let _ = started.wait_for(|s| *s).await;
            }
        }
    }

    /// How URIs are served now (`uris.rs`).
    fn uris(&self) -> Uris {
        self.uris.now(self.hub.server_names())
    }

    /// The server a URI from the host belongs to and the URI it wrote.
    /// A URI no server claims has the backends' lists read again first
    /// (at most every few seconds), as a server may have added it since.
    async fn resolve(&self, uri: &str) -> Option<(String, String)> {
        if let Some(found) = self.uris().resolve(uri) {
            return Some(found);
        }
        if !self.uris.may_refresh() {
            return None;
        }
        self.hub
            .claim_uris(&self.uris, uris::Listed::Resources)
            .await;
        self.hub
            .claim_uris(&self.uris, uris::Listed::Templates)
            .await;
        self.uris().resolve(uri)
    }

    /// Serves the hub on `connection` until the host goes away, telling a
    /// session-era host when the lists change, and following its roots
    /// for the backends (`roots.rs`; both started for every connection by
    /// `ServerHandler::connected`).
    pub fn serve(self, connection: Connection, options: ServeOptions) -> Served {
        server::serve(Arc::new(self), connection, options)
    }

    /// A client of this gateway in this process: what a host gets over
    /// stdio or HTTP (the same names, policy, and backends' asks put to
    /// the client's own handlers), through an in-memory pair. `builder`
    /// sets the client's name and handlers. The gateway serves the
    /// connection until the client closes it or is dropped.
    ///
    /// # Errors
    /// What connecting fails with (the handshake, in the era `builder`
    /// asks for).
    pub async fn connect(self, builder: ClientBuilder) -> Result<Client, switchboard::Error> {
        let (ours, theirs) = memory::pair();
        let tasks = self.tasks.clone();
        let served = self.serve(theirs.into_connection(), ServeOptions::default());
        // The connection's task holds what serves it, and ends with it.
        tasks.spawn(async move {
            served.closed().await;
        });
        builder.connect(ours.into_connector()).await
    }
}
