//! One user's pending logins in the shared database (see the crate docs):
//! begun on one replica, finished on whichever the browser comes back to,
//! each taken once. A `state` of another user's login finds nothing (and
//! leaves that login in place).

use std::time::{SystemTime, UNIX_EPOCH};

use switchboard_auth::pending::{MAX_PENDING_LOGINS, PendingLogin, PendingStore};
use switchboard_auth::store::StoreError;

use crate::{PgState, database, unreadable};

/// The table's name as the sealed values name it.
const TABLE: &str = "switchboard_pending_logins";

/// User `user`'s pending logins (from [`PgState::pending`]).
#[derive(Clone, Debug)]
pub struct PgPendingStore {
    state: PgState,
    user: String,
}

impl PgPendingStore {
    pub(crate) fn new(state: PgState, user: &str) -> Self {
        Self {
            state,
            user: user.to_owned(),
        }
    }

    /// The user whose logins these are.
    pub fn user(&self) -> &str {
        &self.user
    }
}

/// Seconds since the Unix epoch, as PostgreSQL takes them.
fn seconds(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl PendingStore for PgPendingStore {
    fn put(&self, login: PendingLogin, expired_before: SystemTime) -> Result<(), StoreError> {
        let plain = serde_json::to_vec(&login).map_err(|e| unreadable("a login to write", e))?;
        let sealed = self
            .state
            .key()
            .seal(&[TABLE, &self.user, login.state()], &plain)
            .map_err(|e| unreadable("a login to write", e))?;
        let (pool, user, state) = (
            self.state.pool(),
            self.user.clone(),
            login.state().to_owned(),
        );
        let (begun, expired) = (seconds(login.begun()), seconds(expired_before));
        self.state.run(async move {
            let mut tx = pool
                .begin()
                .await
                .map_err(|e| database("begin a transaction", e))?;
            sqlx::query("DELETE FROM switchboard_pending_logins WHERE begun_at < to_timestamp($1)")
                .bind(expired)
                .execute(&mut *tx)
                .await
                .map_err(|e| database("drop expired logins", e))?;
            sqlx::query(
                "INSERT INTO switchboard_pending_logins (state, user_id, sealed, begun_at) \
                 VALUES ($1, $2, $3, to_timestamp($4))",
            )
            .bind(state)
            .bind(&user)
            .bind(sealed)
            .bind(begun)
            .execute(&mut *tx)
            .await
            .map_err(|e| database("keep a pending login", e))?;
            // One user beginning logins in a loop keeps the newest only.
            sqlx::query(
                "DELETE FROM switchboard_pending_logins WHERE state IN ( \
                   SELECT state FROM switchboard_pending_logins WHERE user_id = $1 \
                   ORDER BY begun_at DESC OFFSET $2)",
            )
            .bind(&user)
            .bind(i64::try_from(MAX_PENDING_LOGINS).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await
            .map_err(|e| database("drop the oldest logins", e))?;
            tx.commit()
                .await
                .map_err(|e| database("commit a pending login", e))
        })
    }

    fn take(&self, state: &str) -> Result<Option<PendingLogin>, StoreError> {
        let (pool, user, owned) = (self.state.pool(), self.user.clone(), state.to_owned());
        // Taken once: the row goes in the same statement that reads it.
        let sealed: Option<Vec<u8>> = self.state.run(async move {
            sqlx::query_scalar(
                "DELETE FROM switchboard_pending_logins WHERE state = $1 AND user_id = $2 \
                 RETURNING sealed",
            )
            .bind(owned)
            .bind(user)
            .fetch_optional(&pool)
            .await
            .map_err(|e| database("take a pending login", e))
        })?;
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let plain = self
            .state
            .key()
            .open(&[TABLE, &self.user, state], &sealed)
            .map_err(|e| unreadable("a pending login", e))?;
        let login: PendingLogin =
            serde_json::from_slice(&plain).map_err(|e| unreadable("a pending login", e))?;
        // Sealed for this row, so it is this state's; said plainly anyway.
        if login.state() != state {
            return Err(StoreError::backend(
                "the PostgreSQL state store holds a pending login under another state",
                None,
            ));
        }
        Ok(Some(login))
    }

    fn count(&self) -> Result<usize, StoreError> {
        let (pool, user) = (self.state.pool(), self.user.clone());
        let n: i64 = self.state.run(async move {
            sqlx::query_scalar("SELECT count(*) FROM switchboard_pending_logins WHERE user_id = $1")
                .bind(user)
                .fetch_one(&pool)
                .await
                .map_err(|e| database("count pending logins", e))
        })?;
        Ok(usize::try_from(n).unwrap_or(0))
    }
}
