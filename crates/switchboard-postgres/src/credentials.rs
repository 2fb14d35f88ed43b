//! One user's OAuth credentials in the shared database (see the crate
//! docs): a row per resource × issuer, its value sealed and bound to the
//! row; `update` under a transaction-scoped advisory lock on the row's key.

use switchboard_auth::store::{CredentialKey, CredentialStore, StoreError, StoredCredentials};

use crate::{PgState, database, unreadable};

/// The table's name as the sealed values name it.
const TABLE: &str = "switchboard_credentials";

/// User `user`'s credentials (from [`PgState::credentials`]).
#[derive(Clone, Debug)]
pub struct PgCredentialStore {
    state: PgState,
    user: String,
}

impl PgCredentialStore {
    pub(crate) fn new(state: PgState, user: &str) -> Self {
        Self {
            state,
            user: user.to_owned(),
        }
    }

    /// The user whose credentials these are.
    pub fn user(&self) -> &str {
        &self.user
    }

    fn row<'a>(&'a self, key: &'a CredentialKey) -> [&'a str; 4] {
        [TABLE, &self.user, &key.resource, &key.issuer]
    }

    fn open(&self, key: &CredentialKey, sealed: &[u8]) -> Result<StoredCredentials, StoreError> {
        let plain = self.state.key().open(&self.row(key), sealed).map_err(|e| {
            unreadable(&format!("credentials for {key} of user {:?}", self.user), e)
        })?;
        serde_json::from_slice(&plain)
            .map_err(|e| unreadable(&format!("credentials for {key} of user {:?}", self.user), e))
    }

    fn seal(
        &self,
        key: &CredentialKey,
        credentials: &StoredCredentials,
    ) -> Result<Vec<u8>, StoreError> {
        let plain =
            serde_json::to_vec(credentials).map_err(|e| unreadable("credentials to write", e))?;
        self.state
            .key()
            .seal(&self.row(key), &plain)
            .map_err(|e| unreadable("credentials to write", e))
    }

    /// The advisory lock's key for `key`'s row: every replica computes the
    /// same one (the first 8 bytes of the SHA-256 of the row's parts, each
    /// after its length).
    fn lock_id(&self, key: &CredentialKey) -> i64 {
        let mut parts = Vec::new();
        for part in [TABLE, &self.user, &key.resource, &key.issuer] {
            parts.extend((part.len() as u64).to_be_bytes());
            parts.extend(part.as_bytes());
        }
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &parts);
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest.as_ref()[..8]);
        i64::from_be_bytes(first)
    }
}

/// A transaction holding a row's lock, between the read and the write.
type Locked = sqlx::Transaction<'static, sqlx::Postgres>;

impl CredentialStore for PgCredentialStore {
    fn load(&self, key: &CredentialKey) -> Result<Option<StoredCredentials>, StoreError> {
        let (pool, user, key_owned) = (self.state.pool(), self.user.clone(), key.clone());
        let sealed: Option<Vec<u8>> = self.state.run(async move {
            sqlx::query_scalar(
                "SELECT sealed FROM switchboard_credentials \
                 WHERE user_id = $1 AND resource = $2 AND issuer = $3",
            )
            .bind(user)
            .bind(key_owned.resource)
            .bind(key_owned.issuer)
            .fetch_optional(&pool)
            .await
            .map_err(|e| database("read credentials", e))
        })?;
        sealed.map(|sealed| self.open(key, &sealed)).transpose()
    }

    fn describe(&self) -> String {
        format!("the PostgreSQL state store (user {:?})", self.user)
    }

    fn update(
        &self,
        key: &CredentialKey,
        f: &mut dyn FnMut(Option<StoredCredentials>) -> Option<StoredCredentials>,
    ) -> Result<Option<StoredCredentials>, StoreError> {
        // The read, under a lock every replica takes for this row; the
        // transaction keeps it while `f` runs here and until the write.
        let (pool, user, key_owned, lock) = (
            self.state.pool(),
            self.user.clone(),
            key.clone(),
            self.lock_id(key),
        );
        let (tx, sealed): (Locked, Option<Vec<u8>>) = self.state.run(async move {
            let mut tx = pool
                .begin()
                .await
                .map_err(|e| database("begin a transaction", e))?;
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(lock)
                .execute(&mut *tx)
                .await
                .map_err(|e| database("lock credentials", e))?;
            let sealed = sqlx::query_scalar(
                "SELECT sealed FROM switchboard_credentials \
                 WHERE user_id = $1 AND resource = $2 AND issuer = $3",
            )
            .bind(user)
            .bind(key_owned.resource)
            .bind(key_owned.issuer)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| database("read credentials", e))?;
            Ok((tx, sealed))
        })?;
        let decided = sealed
            .map(|sealed| self.open(key, &sealed))
            .transpose()
            .and_then(|before| {
                let after = f(before);
                let sealed = after
                    .as_ref()
                    .map(|after| self.seal(key, after))
                    .transpose()?;
                Ok((after, sealed))
            });
        let (after, sealed) = match decided {
            Ok(decided) => decided,
            Err(error) => {
                // Rolled back (and the lock let go) on the state's runtime.
                let _ = self.state.run(async move {
                    let _ = tx.rollback().await;
                    Ok(())
                });
                return Err(error);
            }
        };
        let (user, key_owned) = (self.user.clone(), key.clone());
        let user_for_notice = user.clone();
        self.state.run(async move {
            let mut tx = tx;
            let query = match sealed {
                Some(sealed) => sqlx::query(
                    "INSERT INTO switchboard_credentials (user_id, resource, issuer, sealed) \
                     VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (user_id, resource, issuer) \
                     DO UPDATE SET sealed = EXCLUDED.sealed, updated_at = now()",
                )
                .bind(user)
                .bind(key_owned.resource)
                .bind(key_owned.issuer)
                .bind(sealed),
                None => sqlx::query(
                    "DELETE FROM switchboard_credentials \
                     WHERE user_id = $1 AND resource = $2 AND issuer = $3",
                )
                .bind(user)
                .bind(key_owned.resource)
                .bind(key_owned.issuer),
            };
            query
                .execute(&mut *tx)
                .await
                .map_err(|e| database("write credentials", e))?;
            // Every instance with a hub for this user connects its servers
            // again (a login finished here, a token refreshed).
            crate::users::notify(&mut tx, &user_for_notice).await?;
            tx.commit()
                .await
                .map_err(|e| database("commit credentials", e))
        })?;
        Ok(after)
    }
}
