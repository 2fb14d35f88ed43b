//! switchboard's shared state on PostgreSQL, for gateways that run as
//! several replicas and web applications with many instances: what must
//! outlive one process and be seen by every other.
//!
//! - [`PgCredentialStore`]: OAuth credentials per user × resource ×
//!   issuer — the same [`CredentialStore`] the file and keyring stores
//!   implement, so the OAuth flow and the hub use it unchanged. Secrets are
//!   sealed at rest with a [`StateKey`] the database never sees, each value
//!   bound to its row. An `update` (a token refresh) runs under a
//!   transaction-scoped advisory lock on its key: two replicas refreshing
//!   one token at once store one rotation, and the second sees the first's.
//! - [`PgPendingStore`]: logins begun and not yet finished, consumed once
//!   (`DELETE … RETURNING`), so the browser's callback may land on any
//!   replica and a replayed `state` finds nothing. Kept in the database
//!   rather than sealed into the OAuth `state` itself: a sealed state can
//!   be replayed until it expires unless every replica also remembers the
//!   ones used — which is this table again.
//!
//! - Each user's servers, for a web application's `Users` (the hub's
//!   `UserStore`, implemented by [`PgState`]): a server added, a login
//!   finished or a token refreshed on one instance is announced to every
//!   other (`NOTIFY` on [`CHANNEL`]), which connects the user's server too.
//! - [`PgToolAllows`]: each user's remembered "always allow" answers to
//!   the tool policy's `ask` (the hub's `AllowStore`), read again on every
//!   question, so a revocation on any replica holds at once.
//! - [`PgVerdicts`]: the era and transport each remote server was found
//!   to speak (the hub's `VerdictStore`), so one replica's detection saves
//!   every other its probe.
//! - The servers every replica serves besides its own files
//!   ([`PgState::shared_config`], `switchboard team push`): one sealed
//!   document, its changes announced on [`CONFIG_CHANNEL`].
//! - [`PgAudit`]: the audit log as one ordered, tamper-evident chain every
//!   replica appends to (the hub's `AuditLog::shared`), checked by
//!   [`PgState::verify_audit`].
//!
//! The schema is versioned and migrated when [`PgState::connect`] runs
//! (`migrations/`; replicas starting at once take PostgreSQL's lock in
//! turn). The stores' methods block, as the trait says (from async code,
//! inside `spawn_blocking`); they run their queries on the state's own
//! small runtime.
//!
//! [`CredentialStore`]: switchboard_auth::store::CredentialStore

mod allows;
mod audit;
mod config;
mod credentials;
mod listen;
mod pending;
mod policy;
mod seal;
mod users;
mod verdicts;

use std::sync::Arc;

use sqlx::postgres::{PgPool, PgPoolOptions};
use switchboard_auth::store::StoreError;

pub use allows::{PgToolAllows, UserAllow};
pub use audit::{ChainError, ChainVerified, PgAudit};
pub use config::{CONFIG_CHANNEL, MAX_SHARED_CONFIG, SharedConfig};
pub use credentials::PgCredentialStore;
pub use pending::PgPendingStore;
pub use policy::{MAX_PATTERN_LEN, MAX_SCOPE_LEN, POLICY_CHANNEL, RuleKind, RuleScope, SharedRule};
pub use seal::{SealError, StateKey};
pub use users::CHANNEL;
pub use verdicts::PgVerdicts;

/// The most connections one process keeps open to the database.
pub const MAX_CONNECTIONS: u32 = 8;

/// Why the shared state cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The database cannot be reached (the URL is not repeated: it may
    /// hold a password). The error is said whole in the message, its
    /// causes included, and is not also the `source` (a report that walks
    /// the chain would say each cause twice).
    #[error("cannot connect to the database: {0}")]
    Connect(sqlx::Error),
    /// The schema could not be brought to this version (said whole, as
    /// [`PgError::Connect`]).
    #[error("cannot migrate the database's schema: {0}")]
    Migrate(sqlx::migrate::MigrateError),
    /// No runtime for the queries could be made.
    #[error("cannot start the database's runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// The shared state on one database (see the crate docs). Cheap to clone.
#[derive(Clone, Debug)]
pub struct PgState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: PgPool,
    key: StateKey,
    /// Where the queries run; shut down in the background when dropped
    /// (dropping may happen in async code).
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

impl PgState {
    /// Connects to the database at `url` (e.g.
    /// `postgres://switchboard@db/switchboard`, or a Unix socket's
    /// directory as `?host=/run/postgresql`) and brings its schema to this
    /// version. Blocks; call it from a thread that may block.
    ///
    /// # Errors
    /// [`PgError`]: the runtime, the connection, the migration.
    pub fn connect(url: &str, key: StateKey) -> Result<Self, PgError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("switchboard-postgres")
            .enable_all()
            .build()
            .map_err(PgError::Runtime)?;
        let pool = runtime.block_on(async {
            let pool = PgPoolOptions::new()
                .max_connections(MAX_CONNECTIONS)
                .acquire_timeout(std::time::Duration::from_secs(10))
                .connect(url)
                .await
                .map_err(PgError::Connect)?;
            MIGRATOR.run(&pool).await.map_err(PgError::Migrate)?;
            Ok::<_, PgError>(pool)
        });
        let pool = match pool {
            Ok(pool) => pool,
            Err(error) => {
                runtime.shutdown_background();
                return Err(error);
            }
        };
        Ok(Self {
            inner: Arc::new(Inner {
                pool,
                key,
                runtime: Some(runtime),
            }),
        })
    }

    /// User `user`'s credentials (each user sees only their own).
    pub fn credentials(&self, user: &str) -> PgCredentialStore {
        PgCredentialStore::new(self.clone(), user)
    }

    /// User `user`'s pending logins (a callback finishes only a login of
    /// the user who began it).
    pub fn pending(&self, user: &str) -> PgPendingStore {
        PgPendingStore::new(self.clone(), user)
    }

    /// The schema version in force (the newest migration applied).
    ///
    /// # Errors
    /// The database cannot be read.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        let pool = self.pool();
        self.run(async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success",
            )
            .fetch_one(&pool)
            .await
            .map_err(|e| database("read the schema version", e))
        })
    }

    /// Runs `work` on the state's own runtime, in the background, until it
    /// ends or the state is dropped.
    pub(crate) fn spawn(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        if let Some(runtime) = &self.inner.runtime {
            runtime.spawn(work);
        }
    }

    /// The connection pool (a handle: cheap to clone, for a task).
    pub(crate) fn pool(&self) -> PgPool {
        self.inner.pool.clone()
    }

    pub(crate) fn key(&self) -> &StateKey {
        &self.inner.key
    }

    /// Runs `work` on the state's own runtime and waits for it, from
    /// whatever thread calls (a `spawn_blocking` thread, a plain one, even
    /// a runtime's worker: the work never runs on the caller's runtime).
    pub(crate) fn run<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let runtime = self
            .inner
            .runtime
            .as_ref()
            .expect("the runtime lives as long as the state");
        let (done, answer) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = done.send(work.await);
        });
        let wait = || {
            answer.recv().unwrap_or_else(|_| {
                Err(StoreError::backend(
                    "the PostgreSQL state store's runtime stopped",
                    None,
                ))
            })
        };
        // On a worker of a multi-thread runtime (an audit record appended
        // as a call ends), its other tasks move to another worker while
        // this one waits for the database.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        }
    }
}

/// A database failure as the stores' error: what was being done, and why.
pub(crate) fn database(what: &str, error: sqlx::Error) -> StoreError {
    StoreError::backend(
        format!("the PostgreSQL state store could not {what}: {error}"),
        Some(Box::new(error)),
    )
}

/// A sealed value that does not open, or a value that does not parse, as
/// the stores' error.
pub(crate) fn unreadable(
    what: &str,
    error: impl std::error::Error + Send + Sync + 'static,
) -> StoreError {
    StoreError::backend(
        format!("the PostgreSQL state store holds {what} that cannot be used: {error}"),
        Some(Box::new(error)),
    )
}
