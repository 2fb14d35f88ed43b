//! Each user's remembered "always allow" answers to the tool policy's
//! `ask` ([`PgToolAllows`], the hub's [`AllowStore`]) in
//! `switchboard_tool_allows`: given through one replica, they hold on
//! every other; revoked anywhere, they stop at once, as every question
//! reads the table again (nothing is cached, so nothing need be
//! announced). One user's answers never allow another user's calls.
//!
//! A row carries the state key's tag over its values (a sealed empty
//! value bound to the row): a row written or changed by someone with the
//! database but not the key allows nothing, and is said in the log.

use std::io;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use switchboard_auth::store::StoreError;
use switchboard_hub::hub::policy::MAX_REMEMBERED_ALLOWS;
use switchboard_hub::hub::{AllowStore, RememberedAllow, RememberedAllows};

use crate::{PgState, database};

/// The table's name as the tags name it.
const TABLE: &str = "switchboard_tool_allows";

/// The longest server name, tool name and identity kept (as the schema
/// checks them).
const MAX_SERVER: usize = 256;
const MAX_TOOL: usize = 512;
const MAX_IDENTITY: usize = 256;

/// One user's remembered allows (from [`PgState::tool_allows`]).
#[derive(Clone, Debug)]
pub struct PgToolAllows {
    state: PgState,
    user: String,
}

/// One row as read, with its owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserAllow {
    /// Whose answer it is.
    pub user: String,
    /// The answer.
    pub allow: RememberedAllow,
}

type Row = (String, String, String, String, Vec<u8>, f64);

impl PgState {
    /// User `user`'s remembered allows.
    pub fn tool_allows(&self, user: &str) -> PgToolAllows {
        PgToolAllows {
            state: self.clone(),
            user: user.to_owned(),
        }
    }

    /// Every user's remembered allows (`user` given: that user's only),
    /// oldest first. Rows whose tag does not hold are left out.
    ///
    /// # Errors
    /// The database cannot be read.
    pub fn all_tool_allows(&self, user: Option<&str>) -> Result<Vec<UserAllow>, StoreError> {
        self.read_allows(user.map(str::to_owned), None)
    }

    /// The rows of `user` (else every user's), of one server's tool (else
    /// every one), whose tag holds.
    fn read_allows(
        &self,
        user: Option<String>,
        pair: Option<(String, String)>,
    ) -> Result<Vec<UserAllow>, StoreError> {
        let pool = self.pool();
        let (server, tool) = pair.unzip();
        let rows: Vec<Row> = self.run(async move {
            sqlx::query_as(
                "SELECT user_id, server, tool, identity, seal, \
                 extract(epoch FROM since)::float8 FROM switchboard_tool_allows \
                 WHERE ($1::text IS NULL OR user_id = $1) AND ($2::text IS NULL OR server = $2) \
                 AND ($3::text IS NULL OR tool = $3) ORDER BY since, user_id, server, tool",
            )
            .bind(user)
            .bind(server)
            .bind(tool)
            .fetch_all(&pool)
            .await
            .map_err(|e| database("read the remembered allows", e))
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|row| self.checked(row))
            .collect())
    }

    /// Forgets the allows of `server`'s tools matching `tool` (a glob, as
    /// `switchboard policy revoke` takes it) of `user`, or of every user;
    /// how many.
    ///
    /// # Errors
    /// The database cannot be written.
    pub fn revoke_tool_allows(
        &self,
        user: Option<&str>,
        server: &str,
        tool: &str,
    ) -> Result<usize, StoreError> {
        let users: std::collections::BTreeSet<String> = self
            .all_tool_allows(user)?
            .into_iter()
            .filter(|found| found.allow.server == server)
            .map(|found| found.user)
            .collect();
        let mut revoked = 0;
        for user in users {
            // The hub's own revocation (its glob) over this user's rows.
            revoked += RememberedAllows::shared(Arc::new(self.tool_allows(&user)))
                .revoke(server, tool)
                .map_err(|e| StoreError::backend(e.to_string(), None))?;
        }
        Ok(revoked)
    }

    /// The row as an allow, when its tag holds.
    fn checked(&self, (user, server, tool, identity, seal, since): Row) -> Option<UserAllow> {
        if let Err(error) = self
            .key()
            .open(&[TABLE, &user, &server, &tool, &identity], &seal)
        {
            tracing::warn!(
                %error,
                user = %user.escape_debug(),
                server = %server.escape_debug(),
                tool = %tool.escape_debug(),
                "a remembered allow in the database was not written with this state key; it allows nothing"
            );
            return None;
        }
        Some(UserAllow {
            allow: RememberedAllow::new(&server, &tool, &identity, since.max(0.0) as u64),
            user,
        })
    }
}

impl PgToolAllows {
    /// The user whose answers these are.
    pub fn user(&self) -> &str {
        &self.user
    }

    fn forget_row(&self, server: &str, tool: &str) -> Result<bool, StoreError> {
        let (pool, user, server, tool) = (
            self.state.pool(),
            self.user.clone(),
            server.to_owned(),
            tool.to_owned(),
        );
        self.state.run(async move {
            Ok(sqlx::query(
                "DELETE FROM switchboard_tool_allows \
                 WHERE user_id = $1 AND server = $2 AND tool = $3",
            )
            .bind(user)
            .bind(server)
            .bind(tool)
            .execute(&pool)
            .await
            .map_err(|e| database("forget a remembered allow", e))?
            .rows_affected()
                > 0)
        })
    }

    fn keep(&self, allow: RememberedAllow) -> Result<(), StoreError> {
        if allow.server.is_empty()
            || allow.server.len() > MAX_SERVER
            || allow.tool.is_empty()
            || allow.tool.len() > MAX_TOOL
            || allow.identity.len() > MAX_IDENTITY
            || self.user.len() > 1024
        {
            return Err(StoreError::backend(
                format!(
                    "a remembered allow names a server of 1 to {MAX_SERVER} bytes, a tool of \
                     1 to {MAX_TOOL} and a user of at most 1024"
                ),
                None,
            ));
        }
        let seal = self
            .state
            .key()
            .seal(
                &[
                    TABLE,
                    &self.user,
                    &allow.server,
                    &allow.tool,
                    &allow.identity,
                ],
                b"",
            )
            .map_err(|e| crate::unreadable("an allow to write", e))?;
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let (pool, user) = (self.state.pool(), self.user.clone());
        let max = i64::try_from(MAX_REMEMBERED_ALLOWS).unwrap_or(i64::MAX);
        self.state.run(async move {
            let mut tx = pool
                .begin()
                .await
                .map_err(|e| database("begin a transaction", e))?;
            sqlx::query(
                "INSERT INTO switchboard_tool_allows (user_id, server, tool, identity, seal, since) \
                 VALUES ($1, $2, $3, $4, $5, to_timestamp($6)) \
                 ON CONFLICT (user_id, server, tool) DO UPDATE \
                 SET identity = EXCLUDED.identity, seal = EXCLUDED.seal, since = EXCLUDED.since",
            )
            .bind(&user)
            .bind(allow.server)
            .bind(allow.tool)
            .bind(allow.identity)
            .bind(seal)
            .bind(since)
            .execute(&mut *tx)
            .await
            .map_err(|e| database("remember an allow", e))?;
            // One user answering "always" in a loop keeps the newest only.
            sqlx::query(
                "DELETE FROM switchboard_tool_allows WHERE user_id = $1 AND (server, tool) IN ( \
                 SELECT server, tool FROM switchboard_tool_allows WHERE user_id = $1 \
                 ORDER BY since DESC, server, tool OFFSET $2)",
            )
            .bind(&user)
            .bind(max)
            .execute(&mut *tx)
            .await
            .map_err(|e| database("forget the oldest allows", e))?;
            tx.commit()
                .await
                .map_err(|e| database("commit a remembered allow", e))
        })
    }
}

impl AllowStore for PgToolAllows {
    fn list(&self) -> io::Result<Vec<RememberedAllow>> {
        Ok(self
            .state
            .all_tool_allows(Some(&self.user))
            .map_err(io::Error::other)?
            .into_iter()
            .map(|found| found.allow)
            .collect())
    }

    fn remember(&self, allow: RememberedAllow) -> io::Result<()> {
        self.keep(allow).map_err(io::Error::other)
    }

    fn forget(&self, server: &str, tool: &str) -> io::Result<bool> {
        self.forget_row(server, tool).map_err(io::Error::other)
    }

    fn allows(&self, server: &str, identity: &str, tool: &str) -> io::Result<bool> {
        let found = self
            .state
            .read_allows(
                Some(self.user.clone()),
                Some((server.to_owned(), tool.to_owned())),
            )
            .map_err(io::Error::other)?;
        Ok(found.iter().any(|found| found.allow.identity == identity))
    }
}
