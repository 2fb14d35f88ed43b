//! Era and transport verdicts shared between processes.
//!
//! Connecting to a remote server of unknown era costs a probe (a
//! 2026-07-28 `server/discover`, then `initialize` if that is refused; or
//! a Streamable HTTP POST, then the legacy SSE stream). A process keeps
//! what it found for its own life, and the hub's state file keeps it for
//! the next run on this machine. A [`VerdictStore`] keeps it where every
//! process sharing the store finds it — the replicas of a team gateway,
//! each user's hub in one of them, the instances of a web application —
//! so a server is probed once, not once per replica and user.
//!
//! A verdict is a hint, never an authority: a connection using one that
//! no longer holds detects afresh, and the new verdict is stored over it.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard::transport::http::HttpVerdict;

/// Where era verdicts are kept for every process that shares the store
/// (switchboard-postgres keeps them in the database, keyed by a keyed
/// digest of the URL). Keyed by the server's endpoint URL as connected
/// (expanded); a store should not keep the URL itself, which may hold a
/// secret. Its methods block, as [`AllowStore`](super::AllowStore)'s do;
/// the hub calls them from `spawn_blocking`.
pub trait VerdictStore: Send + Sync + std::fmt::Debug {
    /// The verdict stored for `url`, if any.
    ///
    /// # Errors
    /// When the store cannot be read.
    fn get(&self, url: &str) -> io::Result<Option<HttpVerdict>>;

    /// Stores `verdict` for `url`, over any earlier one.
    ///
    /// # Errors
    /// When the store cannot be written.
    fn put(&self, url: &str, verdict: HttpVerdict) -> io::Result<()>;
}

/// The longest a connection waits for the store before detecting on its
/// own: a slow database costs at most this, never a failed connection.
const READ_LIMIT: Duration = Duration::from_secs(2);

/// A hub's use of a [`VerdictStore`]: what it read or wrote, so a
/// reconnection neither reads nor writes again an unchanged verdict.
#[derive(Clone, Debug)]
pub(crate) struct SharedVerdicts {
    store: Arc<dyn VerdictStore>,
    known: Arc<Mutex<HashMap<String, HttpVerdict>>>,
}

impl SharedVerdicts {
    pub(crate) fn new(store: Arc<dyn VerdictStore>) -> Self {
        Self {
            store,
            known: Arc::default(),
        }
    }

    /// The stored verdict for `url` (read once per hub; an unreadable or
    /// slow store is a warning and no verdict).
    pub(crate) async fn read(&self, url: &str, shown: &str) -> Option<HttpVerdict> {
        if let Some(known) = self.lock().get(url) {
            return Some(*known);
        }
        let (store, key) = (self.store.clone(), url.to_owned());
        let read = tokio::time::timeout(
            READ_LIMIT,
            tokio::task::spawn_blocking(move || store.get(&key)),
        )
        .await;
        match read {
            Ok(Ok(Ok(Some(verdict)))) => {
                self.lock().insert(url.to_owned(), verdict);
                Some(verdict)
            }
            Ok(Ok(Ok(None))) => None,
            Ok(Ok(Err(error))) => {
                tracing::warn!(server = %shown, %error, "cannot read the shared era verdict; detecting");
                None
            }
            Ok(Err(error)) => {
                tracing::warn!(server = %shown, %error, "cannot read the shared era verdict; detecting");
                None
            }
            Err(_) => {
                tracing::warn!(server = %shown, limit_ms = READ_LIMIT.as_millis() as u64, "the shared era verdict took too long to read; detecting");
                None
            }
        }
    }

    /// Stores `verdict` for `url` in the background, unless it is the one
    /// this hub already read or wrote.
    pub(crate) fn write(
        &self,
        tasks: &tokio_util::task::TaskTracker,
        url: &str,
        shown: String,
        verdict: HttpVerdict,
    ) {
        if self.lock().insert(url.to_owned(), verdict) == Some(verdict) {
            return;
        }
        let (store, key) = (self.store.clone(), url.to_owned());
        tasks.spawn_blocking(move || {
            if let Err(error) = store.put(&key, verdict) {
                tracing::warn!(server = %shown, %error, "cannot store the era verdict for the other replicas");
            }
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HttpVerdict>> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }
}
