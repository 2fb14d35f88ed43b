//! Tool policy rules every replica enforces, in `switchboard_policy_rules`:
//! `deny` and `ask` patterns (as `[policy.tools]` writes them) that a
//! team adds once (`switchboard policy deny PATTERN --state …`), for
//! everyone or for one host user or group ([`RuleScope`]), beside
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

/// Whom a shared rule holds for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RuleScope {
    /// Every caller.
    Everyone,
    /// One host user (their token's `sub`).
    User(String),
    /// The host users whose token names this group.
    Group(String),
}

impl RuleScope {
    /// As the table keeps it: '', `user:SUB`, `group:NAME`.
    fn stored(&self) -> String {
        match self {
            Self::Everyone => String::new(),
            Self::User(sub) => format!("user:{sub}"),
            Self::Group(name) => format!("group:{name}"),
        }
    }

    fn read(stored: &str) -> Option<Self> {
        if stored.is_empty() {
            return Some(Self::Everyone);
        }
        match stored.split_once(':')? {
            ("user", sub) => Some(Self::User(sub.to_owned())),
            ("group", name) => Some(Self::Group(name.to_owned())),
            _ => None,
        }
    }

    /// Whether it holds for `user` (the token's `sub`) in `groups`; a
    /// caller who is no host user (`None`) is held by rules for everyone
    /// only.
    pub fn holds_for(&self, user: Option<(&str, &[String])>) -> bool {
        match (self, user) {
            (Self::Everyone, _) => true,
            (Self::User(sub), Some((user, _))) => sub == user,
            (Self::Group(name), Some((_, groups))) => groups.iter().any(|g| g == name),
            (_, None) => false,
        }
    }
}

impl std::fmt::Display for RuleScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Everyone => write!(f, "everyone"),
            Self::User(sub) => write!(f, "user {sub}"),
            Self::Group(name) => write!(f, "group {name}"),
        }
    }
}

/// The longest user or group a rule names.
pub const MAX_SCOPE_LEN: usize = 1024;

/// One shared rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedRule {
    /// What it does.
    pub kind: RuleKind,
    /// The tools it names (`server/tool`, globs as in `[policy.tools]`).
    pub pattern: String,
    /// Whom it holds for.
    pub scope: RuleScope,
}

fn check_rule(pattern: &str, scope: &RuleScope) -> Result<(), StoreError> {
    if pattern.is_empty()
        || pattern.len() > MAX_PATTERN_LEN
        || pattern.chars().any(char::is_control)
    {
        return Err(StoreError::backend(
            format!("a policy pattern is 1 to {MAX_PATTERN_LEN} bytes with no control characters"),
            None,
        ));
    }
    if let RuleScope::User(name) | RuleScope::Group(name) = scope
        && (name.is_empty() || name.len() > MAX_SCOPE_LEN || name.chars().any(char::is_control))
    {
        return Err(StoreError::backend(
            format!(
                "a rule's user or group is 1 to {MAX_SCOPE_LEN} bytes with no control characters"
            ),
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
        let rows: Vec<(String, String, String)> = self.run(async move {
            sqlx::query_as(
                "SELECT kind, pattern, scope FROM switchboard_policy_rules \
                 ORDER BY added_at, pattern, scope",
            )
            .fetch_all(&pool)
            .await
            .map_err(|e| database("read the policy rules", e))
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(kind, pattern, scope)| {
                let kind = match kind.as_str() {
                    "deny" => RuleKind::Deny,
                    "ask" => RuleKind::Ask,
                    _ => return None,
                };
                let scope = RuleScope::read(&scope)?;
                Some(SharedRule {
                    kind,
                    pattern,
                    scope,
                })
            })
            .collect())
    }

    /// Adds a shared rule (announced to every replica); whether it is new.
    ///
    /// # Errors
    /// An unusable pattern; the database cannot be written.
    pub fn add_policy_rule(
        &self,
        kind: RuleKind,
        pattern: &str,
        scope: &RuleScope,
    ) -> Result<bool, StoreError> {
        check_rule(pattern, scope)?;
        self.change_rule(
            "INSERT INTO switchboard_policy_rules (kind, pattern, scope) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
            kind,
            pattern,
            scope,
        )
    }

    /// Removes a shared rule (announced to every replica); whether there
    /// was one.
    ///
    /// # Errors
    /// The database cannot be written.
    pub fn remove_policy_rule(
        &self,
        kind: RuleKind,
        pattern: &str,
        scope: &RuleScope,
    ) -> Result<bool, StoreError> {
        self.change_rule(
            "DELETE FROM switchboard_policy_rules WHERE kind = $1 AND pattern = $2 AND scope = $3",
            kind,
            pattern,
            scope,
        )
    }

    fn change_rule(
        &self,
        sql: &'static str,
        kind: RuleKind,
        pattern: &str,
        scope: &RuleScope,
    ) -> Result<bool, StoreError> {
        let (pool, pattern, scope) = (self.pool(), pattern.to_owned(), scope.stored());
        self.run(async move {
            let mut tx = pool
                .begin()
                .await
                .map_err(|e| database("begin a transaction", e))?;
            let changed = sqlx::query(sql)
                .bind(kind.as_str())
                .bind(pattern)
                .bind(scope)
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
