//! The web application's users ([`UserStore`]) on the shared database:
//! each user's servers in `switchboard_user_servers`, their credentials
//! and pending logins in the stores beside, and every change announced on
//! the channel [`CHANNEL`] (`NOTIFY`, the user's id as payload), which
//! [`UserStore::watch`] listens to.

use std::sync::Arc;

use switchboard_auth::pending::PendingStore;
use switchboard_auth::store::{CredentialStore, StoreError};
use switchboard_hub::hub::users::{UserChanged, UserServer, UserStore};

use crate::{PgState, database};

/// The channel every change of a user's servers or credentials is
/// announced on.
pub const CHANNEL: &str = "switchboard_users";

/// The longest payload announced; a longer user id is announced as empty
/// (anyone may have changed). PostgreSQL's limit is 8,000 bytes.
const MAX_PAYLOAD: usize = 1_000;

/// The payload announcing a change of `user`.
pub(crate) fn payload(user: &str) -> &str {
    if user.len() <= MAX_PAYLOAD { user } else { "" }
}

/// The most suffixes tried for a taken name.
const MAX_SUFFIX: usize = 1_000;

impl UserStore for PgState {
    fn credentials(&self, user: &str) -> Arc<dyn CredentialStore> {
        Arc::new(PgState::credentials(self, user))
    }

    fn pending(&self, user: &str) -> Arc<dyn PendingStore> {
        Arc::new(PgState::pending(self, user))
    }

    fn servers(&self, user: &str) -> Result<Vec<UserServer>, StoreError> {
        let (pool, user) = (self.pool(), user.to_owned());
        let rows: Vec<(String, String)> = self.run(async move {
            sqlx::query_as(
                "SELECT name, url FROM switchboard_user_servers WHERE user_id = $1 \
                 ORDER BY added_at, name",
            )
            .bind(user)
            .fetch_all(&pool)
            .await
            .map_err(|e| database("read a user's servers", e))
        })?;
        Ok(rows
            .into_iter()
            .map(|(name, url)| UserServer { name, url })
            .collect())
    }

    fn add_server(&self, user: &str, url: &str, name: &str) -> Result<UserServer, StoreError> {
        let (pool, user, url, name) = (
            self.pool(),
            user.to_owned(),
            url.to_owned(),
            name.to_owned(),
        );
        self.run(async move {
            let mut tx = pool
                .begin()
                .await
                .map_err(|e| database("begin a transaction", e))?;
            // One instance at a time adds this user's servers.
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('switchboard_user_servers:' || $1, 0))")
                .bind(&user)
                .execute(&mut *tx)
                .await
                .map_err(|e| database("lock a user's servers", e))?;
            let had: Option<String> = sqlx::query_scalar(
                "SELECT name FROM switchboard_user_servers WHERE user_id = $1 AND url = $2",
            )
            .bind(&user)
            .bind(&url)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| database("read a user's servers", e))?;
            if let Some(name) = had {
                return Ok(UserServer { name, url });
            }
            let taken: Vec<String> =
                sqlx::query_scalar("SELECT name FROM switchboard_user_servers WHERE user_id = $1")
                    .bind(&user)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(|e| database("read a user's servers", e))?;
            let free = std::iter::once(name.clone())
                .chain((2..=MAX_SUFFIX).map(|n| format!("{name}-{n}")))
                .find(|candidate| !taken.contains(candidate))
                .ok_or_else(|| {
                    StoreError::backend(format!("every name like `{name}` is taken"), None)
                })?;
            sqlx::query(
                "INSERT INTO switchboard_user_servers (user_id, name, url) VALUES ($1, $2, $3)",
            )
            .bind(&user)
            .bind(&free)
            .bind(&url)
            .execute(&mut *tx)
            .await
            .map_err(|e| database("add a user's server", e))?;
            notify(&mut tx, &user).await?;
            tx.commit()
                .await
                .map_err(|e| database("commit a user's server", e))?;
            Ok(UserServer { name: free, url })
        })
    }

    fn remove_server(&self, user: &str, name: &str) -> Result<bool, StoreError> {
        let (pool, user, name) = (self.pool(), user.to_owned(), name.to_owned());
        self.run(async move {
            let mut tx = pool
                .begin()
                .await
                .map_err(|e| database("begin a transaction", e))?;
            let removed = sqlx::query(
                "DELETE FROM switchboard_user_servers WHERE user_id = $1 AND name = $2",
            )
            .bind(&user)
            .bind(&name)
            .execute(&mut *tx)
            .await
            .map_err(|e| database("remove a user's server", e))?
            .rows_affected()
                > 0;
            if removed {
                notify(&mut tx, &user).await?;
            }
            tx.commit()
                .await
                .map_err(|e| database("commit a user's server", e))?;
            Ok(removed)
        })
    }

    fn watch(&self, changed: UserChanged) {
        crate::listen::listen(self, CHANNEL, "users' changes", move |payload| {
            changed(payload.filter(|user| !user.is_empty()))
        });
    }
}

/// Announces (at commit) that `user`'s state changed.
pub(crate) async fn notify(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    user: &str,
) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(payload(user))
        .execute(&mut **tx)
        .await
        .map(drop)
        .map_err(|e| database("announce a change", e))
}
