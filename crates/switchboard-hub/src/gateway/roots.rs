//! The host's roots, forwarded to the backends.
//!
//! Every backend's client declares roots (`roots.listChanged`) and
//! answers `roots/list` — a session-era request, or a 2026-07-28 backend's
//! roots input request — from one shared list ([`HostRoots`]): the
//! backends start before any host connects and their connections are
//! shared by every host, so the list is the gateway's, fed by its hosts.
//!
//! - A session-era host connected to the gateway (stdio, or in process)
//!   that declares roots is asked `roots/list` once it has sent
//!   `notifications/initialized`, and again on each of its
//!   `notifications/roots/list_changed`.
//! - The backends get the roots of the one such host connected; with none,
//!   or with several (whose roots one shared backend cannot honour
//!   apart, and must not see mixed), they get an empty list. Each change
//!   of what they get sends them `notifications/roots/list_changed`
//!   (`switchboard::Roots::set`), so a backend that asked at its start
//!   (before the host) asks again.
//! - At most [`MAX_ROOTS`] roots of a host are kept; a host's answer that
//!   is not a roots list counts as none.
//!
//! Not forwarded: the roots of hosts over HTTP (each request of theirs is
//! served apart from a connection the gateway sees) and of 2026-07-28
//! hosts (which take no request outside their own calls); their backends
//! get the empty list.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard::Roots;
use switchboard::server::Served;
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

    /// Follows the roots of the host on `served` until it goes away: its
    /// list after `notifications/initialized` and after each
    /// `notifications/roots/list_changed`, when it declares roots.
    pub(crate) fn follow(
        &self,
        served: &Served,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let this = self.clone();
        let capabilities = served.initialized_capabilities();
        let mut notes = served.notifications();
        let peer = served.peer().clone();
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
