//! What the PostgreSQL tests share: a database of their own on a fresh
//! PostgreSQL, the state key, and plain SQL as an attacker sends it.
#![allow(dead_code)] // each test binary uses some of it

use switchboard_postgres::StateKey;
use switchboard_testkit::postgres::Postgres;

/// The schema version this build migrates to.
pub(crate) const SCHEMA: i64 = 8;

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

pub(crate) fn key() -> StateKey {
    StateKey::from_hex(KEY).unwrap()
}

/// A database of its own for `test` on a fresh PostgreSQL.
pub(crate) fn database(test: &str) -> Option<(Postgres, String)> {
    let postgres = Postgres::start(test)?;
    let url = postgres.database("switchboard");
    Some((postgres, url))
}

/// Plain SQL on the test's database, as an attacker with write access to
/// it would send it.
pub(crate) struct Sql {
    runtime: tokio::runtime::Runtime,
    pool: sqlx::PgPool,
}

impl Sql {
    pub(crate) fn new(url: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let pool = runtime.block_on(sqlx::PgPool::connect(url)).unwrap();
        Self { runtime, pool }
    }

    /// Runs `sql` (statements separated by `;`).
    pub(crate) fn exec(&self, sql: &str) {
        self.runtime
            .block_on(sqlx::raw_sql(sql).execute(&self.pool))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The one text column of each row `sql` selects.
    pub(crate) fn strings(&self, sql: &str) -> Vec<String> {
        self.runtime
            .block_on(sqlx::query_scalar::<_, String>(sql).fetch_all(&self.pool))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}
