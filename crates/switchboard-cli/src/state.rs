//! `--state URL`: the shared state on PostgreSQL (`switchboard-postgres`)
//! that gateway replicas keep together — for now the audit chain
//! (`serve --audit-database`, `audit verify --database`). Its key comes
//! from a private file; the URL may not carry a password (the command
//! line is readable by every local user).

use std::path::Path;

use switchboard_postgres::{PgState, StateKey};

use crate::failure::Failure;

/// Refuses a database URL whose password would show in the process list.
pub(crate) fn check_url(url: &str) -> Result<(), Failure> {
    let parsed = url::Url::parse(url).map_err(|e| {
        Failure::usage(anyhow::anyhow!(
            "--state wants a PostgreSQL URL (postgres://USER@HOST/DB, or ?host=/run/postgresql for a Unix socket): {e}"
        ))
    })?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(Failure::usage(anyhow::anyhow!(
            "--state wants a postgres:// URL, not {}://",
            parsed.scheme()
        )));
    }
    if parsed.password().is_some() {
        return Err(Failure::usage(anyhow::anyhow!(
            "the --state URL holds a password, which every local user can read on the command line: \
             connect over a Unix socket (?host=/run/postgresql) or keep the password in ~/.pgpass"
        )));
    }
    Ok(())
}

/// Connects to the state at `url` with the key in `key_file` (yours,
/// 0600, 64 hex digits), migrating its schema; off the async runtime, as
/// connecting blocks.
pub(crate) async fn connect(url: &str, key_file: &Path) -> Result<PgState, Failure> {
    check_url(url)?;
    let text = crate::listen::read_private(key_file, "state key file")?;
    let key = StateKey::from_hex(&text).map_err(|e| {
        Failure::usage(anyhow::anyhow!(
            "cannot use the state key in {}: {e} (make one with `openssl rand -hex 32`)",
            key_file.display()
        ))
    })?;
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || PgState::connect(&url, key))
        .await
        .map_err(|e| Failure::usage(anyhow::anyhow!("connecting to the state database: {e}")))?
        .map_err(|e| {
            let mut failure =
                Failure::usage(anyhow::Error::new(e).context("cannot use the --state database"));
            failure.code = crate::failure::exit::UNREACHABLE;
            failure
        })
}
