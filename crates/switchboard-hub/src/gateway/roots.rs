//! The host's roots, forwarded to the backends.
//!
//! Every backend's client declares roots (`roots.listChanged`): the
//! backends start before any host connects, and their connections are
//! shared by every host. A backend's `roots/list` — a session-era request,
//! or a 2026-07-28 backend's roots input request — is answered
//! (`forward.rs`, `Forward::list_roots`):
//!
//! - when it is about a host call (its tag, or the one host whose calls
//!   are running there), by that host, as elicitation is: a request to a
//!   session-era host, an `input_required` round to a 2026-07-28 host;
//!   refused when that host declares no roots;
//! - otherwise (a backend asking at its start or after a
//!   `roots/list_changed`, with no call to ask about) from one shared list
//!   ([`HostRoots`]) the gateway keeps from its hosts:
//!   - a session-era host connected to the gateway (stdio, in process, or
//!     an HTTP session: `ServerHandler::connected` starts the following)
//!     that declares roots is asked `roots/list` once it has sent
//!     `notifications/initialized`, and again on each of its
//!     `notifications/roots/list_changed` (over HTTP the request goes on
//!     the session's standalone stream: a host that never opens one is
//!     not heard, and counts as having no roots after [`ASK_WITHIN`]);
//!   - the list is the roots of the one such host; with none, or several
//!     (whose roots one shared backend cannot honour apart, and must not
//!     see mixed), it is empty. Each change sends every backend
//!     `notifications/roots/list_changed` (`switchboard::Roots::set`), so
//!     a backend that asked before the host came asks again.
//! - At most [`MAX_ROOTS`] roots of a host are passed on; an answer that is
//!   not a roots list counts as none.
//!
//! Limits: 2026-07-28 hosts feed no shared list (they have no connection
//! to ask on), so their roots reach a backend only when it asks during
//! their calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard::Roots;
use switchboard::server::Peer;
use switchboard::types::{ListRootsResult, Root};

/// Most roots of one host the gateway keeps (the rest are left out).
pub const MAX_ROOTS: usize = 1024;

/// How long a host may take to answer `roots/list`.
const ASK_WITHIN: Duration = Duration::from_secs(30);

/// The roots every backend gets, and the hosts they come from.
#[derive(Clone, Default)]
pub(crate) struct HostRoots {
    roots: Roots,
    hosts: Arc<Mutex<HashMap<u64, Vec<Root>>>>,
    next: Arc<AtomicU64>,
}

impl HostRoots {
    /// The list the backends' clients answer from.
    pub(crate) fn roots(&self) -> Roots {
        self.roots.clone()
    }

    /// Sets host `id`'s roots (`None`: it is gone) and gives the backends
    /// what follows, telling them only when it changed.
    fn update(&self, id: u64, roots: Option<Vec<Root>>) {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        match roots {
            Some(roots) => hosts.insert(id, roots),
            None => hosts.remove(&id),
        };
        let now = match hosts.values().collect::<Vec<_>>().as_slice() {
            [only] => (*only).clone(),
            _ => Vec::new(),
        };
        drop(hosts);
        if now != self.roots.get() {
            self.roots.set(now);
        }
    }

    /// Follows the roots of the host on `peer`'s connection until it goes
    /// away: its list after `notifications/initialized` and after each
    /// `notifications/roots/list_changed`, when it declares roots.
    pub(crate) fn follow(
        &self,
        peer: &Peer,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let this = self.clone();
        let capabilities = peer.initialized_capabilities();
        let mut notes = peer.notifications();
        let peer = peer.clone();
        async move {
            let Some(capabilities) = capabilities.await else {
                return;
            };
            if capabilities.roots.is_none() {
                return;
            }
            let id = this.next.fetch_add(1, Ordering::Relaxed);
            // Gone with the host, whatever ends this.
            let _gone = Gone(this.clone(), id);
            loop {
                let roots = match peer
                    .request("roots/list", serde_json::json!({}), ASK_WITHIN)
                    .await
                {
                    Ok(value) => serde_json::from_value::<ListRootsResult>(value)
                        .map(|result| result.roots)
                        .unwrap_or_else(|e| {
                            tracing::warn!(%e, "the host's roots/list answer is not a roots list");
                            Vec::new()
                        }),
                    Err(e) => {
                        tracing::warn!(%e, "the host did not answer roots/list");
                        Vec::new()
                    }
                };
                let mut roots = roots;
                roots.truncate(MAX_ROOTS);
                this.update(id, Some(roots));
                // The next change, or the end of the connection.
                loop {
                    match notes.recv().await {
                        Some(note) if note.method == "notifications/roots/list_changed" => break,
                        Some(_) => {}
                        None => return,
                    }
                }
            }
        }
    }
}

/// Takes a host's roots out when dropped.
struct Gone(HostRoots, u64);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0.update(self.1, None);
    }
}
