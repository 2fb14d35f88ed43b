//! Tool policy rules every replica enforces, in `switchboard_policy_rules`:
//! `deny` and `ask` patterns (as `[policy.tools]` writes them) that a
//! team adds once (`switchboard policy deny PATTERN --state …`), beside
//! each replica's own files. A change is announced on [`POLICY_CHANNEL`],
//! which [`PgState::watch_policy`] listens to.

use switchboard_auth::store::StoreError;

use crate::{PgState, database};

/// The channel every change of the shared rules is announced on.
pub const POLICY_CHANNEL: &str = "switchboard_policy";

/// The longest pattern kept.
pub const MAX_PATTERN_LEN: usize = 512;

/// What a shared rule does to the tools its pattern names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// Refused.
    Deny,
    /// Asked about first.
    Ask,
}

impl RuleKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Ask => "ask",
        }
    }
}

/// One shared rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedRule {
    /// What it does.
    pub kind: RuleKind,
    /// The tools it names (`server/tool`, globs as in `[policy.tools]`).
    pub pattern: String,
}

fn check_pattern(pattern: &str) -> Result<(), StoreError> {
    if pattern.is_empty()
        || pattern.len() > MAX_PATTERN_LEN
        || pattern.chars().any(char::is_control)
    {
        return Err(StoreError::backend(
            format!("a policy pattern is 1 to {MAX_PATTERN_LEN} bytes with no control characters"),
            None,
        ));
    }
    Ok(())
}

impl PgState {
    /// The shared rules, oldest first.
    ///
    /// # Errors
    /// The database cannot be read.
    pub fn policy_rules(&self) -> Result<Vec<SharedRule>, StoreError> {
        let pool = self.pool();
        let rows: Vec<(String, String)> = self.run(async move {
            sqlx::query_as(
                "SELECT kind, pattern FROM switchboard_policy_rules ORDER BY added_at, pattern",
            )
            .fetch_all(&pool)
            .await
            .map_err(|e| database("read the policy rules", e))
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(kind, pattern)| {
                let kind = match kind.as_str() {
                    "deny" => RuleKind::Deny,
                    "ask" => RuleKind::Ask,
                    _ => return None,
                };
                Some(SharedRule { kind, pattern })
            })
            .collect())
    }

    /// Adds a shared rule (announced to every replica); whether it is new.
    ///
    /// # Errors
    /// An unusable pattern; the database cannot be written.
    pub fn add_policy_rule(&self, kind: RuleKind, pattern: &str) -> Result<bool, StoreError> {
        check_pattern(pattern)?;
        self.change_rule(
            "INSERT INTO switchboard_policy_rules (kind, pattern) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING",
            kind,
            pattern,
        )
    }

    /// Removes a shared rule (announced to every replica); whether there
    /// was one.
    ///
    /// # Errors
    /// The database cannot be written.
    pub fn remove_policy_rule(&self, kind: RuleKind, pattern: &str) -> Result<bool, StoreError> {
        self.change_rule(
            "DELETE FROM switchboard_policy_rules WHERE kind = $1 AND pattern = $2",
            kind,
            pattern,
        )
    }

    fn change_rule(
        &self,
        sql: &'static str,
        kind: RuleKind,
        pattern: &str,
    ) -> Result<bool, StoreError> {
        let (pool, pattern) = (self.pool(), pattern.to_owned());
        self.run(async move {
            let mut tx = pool
                .begin()
                .await
                .map_err(|e| database("begin a transaction", e))?;
            let changed = sqlx::query(sql)
                .bind(kind.as_str())
                .bind(pattern)
                .execute(&mut *tx)
                .await
                .map_err(|e| database("write the policy rules", e))?
                .rows_affected()
                > 0;
            if changed {
                sqlx::query("SELECT pg_notify($1, '')")
                    .bind(POLICY_CHANNEL)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| database("announce a policy change", e))?;
            }
            tx.commit()
                .await
                .map_err(|e| database("commit the policy rules", e))?;
            Ok(changed)
        })
    }

    /// Calls `changed` whenever the shared rules may have changed (here or
    /// on another replica, or while the watch was lost), until it returns
    /// `false`. It runs on the state's runtime: it should only signal.
    pub fn watch_policy(&self, changed: impl Fn() -> bool + Send + Sync + 'static) {
        crate::listen::listen(self, POLICY_CHANNEL, "policy changes", move |_| changed());
    }
}
