//! The servers every replica serves besides its own files: one
//! switchboard TOML document (`switchboard team push FILE`) in
//! `switchboard_shared_config`, sealed under the state key (it names
//! commands the replicas run, and may hold secrets), its changes announced
//! on [`CONFIG_CHANNEL`] so every replica reloads it at once.
//!
//! A document that does not open with the key is an error, never "no
//! servers": a replica keeps the servers in force and says why. The
//! database can still drop the document or put back an older one sealed
//! with the same key (whoever writes it can delete rows); a replica says
//! each version it loads, so an operator sees it.

use switchboard_auth::store::StoreError;

use crate::{PgState, database};

/// The channel a change of the shared servers is announced on.
pub const CONFIG_CHANNEL: &str = "switchboard_config";

/// The largest shared document kept (1 MiB).
pub const MAX_SHARED_CONFIG: usize = 1 << 20;

const TABLE: &str = "switchboard_shared_config";

/// The shared servers' document as kept.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedConfig {
    /// The switchboard TOML text.
    pub text: String,
    /// Its version: one more at every push.
    pub version: i64,
}

impl PgState {
    /// The shared servers' document, if one was pushed.
    ///
    /// # Errors
    /// The database cannot be read; the document does not open with the
    /// state key (written or changed without it).
    pub fn shared_config(&self) -> Result<Option<SharedConfig>, StoreError> {
        let pool = self.pool();
        let row: Option<(i64, Vec<u8>)> = self.run(async move {
            sqlx::query_as("SELECT version, document FROM switchboard_shared_config WHERE id = 1")
                .fetch_optional(&pool)
                .await
                .map_err(|e| database("read the shared servers", e))
        })?;
        let Some((version, sealed)) = row else {
            return Ok(None);
        };
        let plain = self
            .key()
            .open(&[TABLE, &version.to_string()], &sealed)
            .map_err(|e| crate::unreadable("a shared servers document", e))?;
        let text = String::from_utf8(plain)
            .map_err(|e| crate::unreadable("a shared servers document", e))?;
        Ok((!text.is_empty()).then_some(SharedConfig { text, version }))
    }

    /// Keeps `text` as the shared servers' document (`None`, or empty:
    /// none), and announces it to every replica; the new version.
    ///
    /// # Errors
    /// A document over [`MAX_SHARED_CONFIG`]; the database cannot be
    /// written.
    pub fn set_shared_config(&self, text: Option<&str>) -> Result<i64, StoreError> {
        if text.is_some_and(|t| t.len() > MAX_SHARED_CONFIG) {
            return Err(StoreError::backend(
                format!("a shared servers document is at most {MAX_SHARED_CONFIG} bytes"),
                None,
            ));
        }
        let (pool, state, text) = (self.pool(), self.clone(), text.map(str::to_owned));
        self.run(async move {
            let mut tx = pool
                .begin()
                .await
                .map_err(|e| database("begin a transaction", e))?;
            // Pushes from two places at once take turns.
            let last: Option<i64> = sqlx::query_scalar(
                "SELECT version FROM switchboard_shared_config WHERE id = 1 FOR UPDATE",
            )
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| database("read the shared servers' version", e))?;
            let version = last.unwrap_or(0) + 1;
            // Cleared is an empty document, so versions only ever grow.
            let sealed = state
                .key()
                .seal(
                    &[TABLE, &version.to_string()],
                    text.as_deref().unwrap_or_default().as_bytes(),
                )
                .map_err(|e| crate::unreadable("a document to write", e))?;
            sqlx::query(
                "INSERT INTO switchboard_shared_config (id, version, document) VALUES (1, $1, $2) \
                 ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, \
                 document = EXCLUDED.document, since = now()",
            )
            .bind(version)
            .bind(sealed)
            .execute(&mut *tx)
            .await
            .map_err(|e| database("write the shared servers", e))?;
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CONFIG_CHANNEL)
                .bind(version.to_string())
                .execute(&mut *tx)
                .await
                .map_err(|e| database("announce the shared servers", e))?;
            tx.commit()
                .await
                .map_err(|e| database("commit the shared servers", e))?;
            Ok(version)
        })
    }

    /// Calls `changed` whenever the shared servers may have changed (here
    /// or on another replica, or while the watch was lost), until it
    /// returns `false`. It runs on the state's runtime: it should only
    /// signal.
    pub fn watch_config(&self, changed: impl Fn() -> bool + Send + Sync + 'static) {
        crate::listen::listen(self, CONFIG_CHANNEL, "shared server changes", move |_| {
            changed()
        });
    }
}
