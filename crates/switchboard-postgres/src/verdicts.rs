//! The era and transport each remote server was found to speak
//! ([`PgVerdicts`], the hub's [`VerdictStore`]) in
//! `switchboard_era_verdicts`: detected by one replica, used by every
//! other without a probe.
//!
//! A row is keyed by a keyed digest of the URL (never the URL: it may
//! hold a secret) and its verdict is sealed bound to that key, so a row
//! written, changed or moved without the state key is not used (and said
//! in the log). A verdict is a hint: the hub detects afresh when one no
//! longer holds, and writes the new one over it.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use switchboard::transport::http::{HttpTransport, HttpVerdict};
use switchboard::types::Era;
use switchboard_hub::hub::VerdictStore;

use crate::{PgState, database};

/// The table's name as the digests and seals name it.
const TABLE: &str = "switchboard_era_verdicts";

/// The era verdicts every replica shares (from [`PgState::era_verdicts`]).
/// One value may serve many hubs (a gateway's per-user hubs): what it
/// wrote last for a server is remembered, and the same verdict is not
/// written again.
#[derive(Clone, Debug)]
pub struct PgVerdicts {
    state: PgState,
    written: Arc<Mutex<HashMap<Vec<u8>, HttpVerdict>>>,
}

impl PgState {
    /// The shared era verdicts, for `HubBuilder::verdict_store`.
    pub fn era_verdicts(&self) -> PgVerdicts {
        PgVerdicts {
            state: self.clone(),
            written: Arc::default(),
        }
    }
}

fn encode(verdict: HttpVerdict) -> &'static [u8] {
    match (verdict.era, verdict.transport) {
        (Era::Modern, HttpTransport::Sse) => b"modern sse",
        (Era::Modern, _) => b"modern streamable-http",
        (_, HttpTransport::Sse) => b"legacy sse",
        (_, _) => b"legacy streamable-http",
    }
}

fn decode(bytes: &[u8]) -> Option<HttpVerdict> {
    let (era, transport) = match bytes {
        b"modern sse" => (Era::Modern, HttpTransport::Sse),
        b"modern streamable-http" => (Era::Modern, HttpTransport::StreamableHttp),
        b"legacy sse" => (Era::Legacy, HttpTransport::Sse),
        b"legacy streamable-http" => (Era::Legacy, HttpTransport::StreamableHttp),
        _ => return None,
    };
    Some(HttpVerdict::new(era, transport))
}

impl PgVerdicts {
    /// The row's key for `url`, and its hex form (what the seal is bound to).
    fn key_of(&self, url: &str) -> (Vec<u8>, String) {
        let key = self.state.key().name_digest(TABLE, url);
        let hex = key.iter().map(|b| format!("{b:02x}")).collect();
        (key, hex)
    }
}

impl PgVerdicts {
    fn written(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, HttpVerdict>> {
        self.written.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl VerdictStore for PgVerdicts {
    fn get(&self, url: &str) -> io::Result<Option<HttpVerdict>> {
        let (key, hex) = self.key_of(url);
        let pool = self.state.pool();
        let sealed: Option<Vec<u8>> = self
            .state
            .run(async move {
                sqlx::query_scalar(
                    "SELECT verdict FROM switchboard_era_verdicts WHERE server_key = $1",
                )
                .bind(key)
                .fetch_optional(&pool)
                .await
                .map_err(|e| database("read an era verdict", e))
            })
            .map_err(io::Error::other)?;
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let opened = self.state.key().open(&[TABLE, &hex], &sealed);
        match opened.ok().as_deref().and_then(decode) {
            Some(verdict) => Ok(Some(verdict)),
            None => {
                tracing::warn!(
                    "an era verdict in the database was not written with this state key, or not for this server; it is not used"
                );
                Ok(None)
            }
        }
    }

    fn put(&self, url: &str, verdict: HttpVerdict) -> io::Result<()> {
        let (key, hex) = self.key_of(url);
        if self.written().get(&key) == Some(&verdict) {
            return Ok(());
        }
        let sealed = self
            .state
            .key()
            .seal(&[TABLE, &hex], encode(verdict))
            .map_err(|e| io::Error::other(crate::unreadable("a verdict to write", e)))?;
        let (pool, stored) = (self.state.pool(), key.clone());
        self.state
            .run(async move {
                sqlx::query(
                    "INSERT INTO switchboard_era_verdicts (server_key, verdict) VALUES ($1, $2) \
                     ON CONFLICT (server_key) DO UPDATE SET verdict = EXCLUDED.verdict, since = now()",
                )
                .bind(stored)
                .bind(sealed)
                .execute(&pool)
                .await
                .map_err(|e| database("store an era verdict", e))
                .map(drop)
            })
            .map_err(io::Error::other)?;
        let mut written = self.written();
        // Bounded: a gateway of many users' servers forgets, and writes again.
        if written.len() >= 10_000 {
            written.clear();
        }
        written.insert(key, verdict);
        Ok(())
    }
}
