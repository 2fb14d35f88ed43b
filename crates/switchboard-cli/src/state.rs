//! `--state URL`: the shared state on PostgreSQL (`switchboard-postgres`)
//! that gateway replicas keep together — the audit chain (`serve
//! --audit-database`, `audit verify --database`), each host user's backend
//! logins (with `--issuer`), and the tool policy rules every replica
//! enforces ([`SharedPolicy`], `policy deny … --state`). Its key comes
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

/// Runs `work` on the state at `state` (connected for it), off the async
/// runtime, as the state's methods block.
pub(crate) async fn on_shared<T: Send + 'static>(
    state: &crate::cli::SharedStateArgs,
    work: impl FnOnce(switchboard_postgres::PgState) -> Result<T, switchboard_auth::store::StoreError>
    + Send
    + 'static,
) -> Result<T, Failure> {
    let shared = crate::state::connect(&state.url, &state.state_key_file).await?;
    tokio::task::spawn_blocking(move || work(shared))
        .await
        .map_err(|e| Failure::usage(anyhow::anyhow!("{e}")))?
        .map_err(|e| Failure::usage(anyhow::Error::new(e)))
}

/// The tool policy rules every replica enforces (`switchboard policy deny
/// PATTERN --state …`), kept here as last read and read again whenever
/// the database announces a change.
#[derive(Clone)]
pub(crate) struct SharedPolicy {
    state: PgState,
    rules: std::sync::Arc<std::sync::RwLock<Vec<switchboard_postgres::SharedRule>>>,
}

/// Where shared rules are said to be written (in a refusal's reason).
const SHARED_RULES: &str = "the shared policy (switchboard policy rules --state …)";

impl SharedPolicy {
    /// The rules in `state` now.
    pub(crate) async fn load(state: PgState) -> Result<Self, Failure> {
        let reader = state.clone();
        let rules = tokio::task::spawn_blocking(move || reader.policy_rules())
            .await
            .map_err(|e| Failure::usage(anyhow::anyhow!("reading the shared policy: {e}")))?
            .map_err(|e| Failure::usage(anyhow::Error::new(e)))?;
        Ok(Self {
            state,
            rules: std::sync::Arc::new(std::sync::RwLock::new(rules)),
        })
    }

    /// `policy` (a config's) with the shared rules that hold for `user`
    /// (a host user's `sub` and groups; `None`: the rules for everyone).
    pub(crate) fn merge(
        &self,
        mut policy: switchboard_hub::config::policy::ToolPolicy,
        user: Option<(&str, &[String])>,
    ) -> switchboard_hub::config::policy::ToolPolicy {
        let rules = self
            .rules
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for rule in rules.iter().filter(|rule| rule.scope.holds_for(user)) {
            let source = match &rule.scope {
                switchboard_postgres::RuleScope::Everyone => SHARED_RULES.to_owned(),
                scope => format!("{SHARED_RULES}, for {scope}"),
            };
            let entry = (source, rule.pattern.clone());
            match rule.kind {
                switchboard_postgres::RuleKind::Deny => policy.deny.push(entry),
                switchboard_postgres::RuleKind::Ask => policy.ask.push(entry),
            }
        }
        policy
    }

    /// Reads the rules again whenever the database announces a change
    /// (made here or on another replica), then calls `changed`; for as
    /// long as the process runs.
    pub(crate) fn follow(&self, changed: impl Fn() + Send + Sync + 'static) {
        let this = self.clone();
        on_each_change(
            &self.state,
            PgState::watch_policy,
            PgState::policy_rules,
            move |read| {
                match read {
                    Ok(rules) => {
                        *this
                            .rules
                            .write()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = rules;
                        changed();
                    }
                    Err(error) => tracing::warn!(
                        %error,
                        "cannot read the shared policy; the rules in force are kept"
                    ),
                }
                None::<std::future::Ready<()>>
            },
        );
    }
}

/// Whenever `watch` says the database announced a change: `read` on a
/// blocking thread, then `apply` with what it read, awaiting the work it
/// gives back before the next read; for as long as the process runs.
fn on_each_change<T: Send + 'static, F: std::future::Future<Output = ()> + Send>(
    state: &PgState,
    watch: impl FnOnce(&PgState, Box<dyn Fn() -> bool + Send + Sync>),
    read: fn(&PgState) -> Result<T, switchboard_auth::store::StoreError>,
    mut apply: impl FnMut(Result<T, String>) -> Option<F> + Send + 'static,
) {
    let wake = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = wake.clone();
    watch(
        state,
        Box::new(move || {
            signal.notify_one();
            true
        }),
    );
    let state = state.clone();
    tokio::spawn(async move {
        loop {
            wake.notified().await;
            let reader = state.clone();
            let read = match tokio::task::spawn_blocking(move || read(&reader)).await {
                Ok(read) => read.map_err(|e| e.to_string()),
                Err(error) => Err(error.to_string()),
            };
            if let Some(work) = apply(read) {
                work.await;
            }
        }
    });
}

/// What the shared servers' document is called in diagnostics.
fn shared_name(version: i64) -> std::path::PathBuf {
    std::path::PathBuf::from(format!(
        "<the shared servers, version {version} (switchboard team show --state …)>"
    ))
}

/// The shared servers' document read as a config, with what makes it
/// unfit to share: an error in it, a `[policy]` (shared rules are
/// `switchboard policy deny … --state`), or no server at all.
pub(crate) fn check_shared(
    context: &crate::configure::Context,
    text: &str,
    version: i64,
) -> (switchboard_hub::config::LoadedConfig, Option<String>) {
    use switchboard_hub::config::{Dialect, Scope, Severity};
    let loaded = switchboard_hub::config::load_text(
        &context.locations,
        &shared_name(version),
        text,
        Dialect::Switchboard,
        Scope::User,
    );
    let unfit = if let Some(error) = loaded
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error)
    {
        Some(error.to_string())
    } else if loaded.policy != Default::default() {
        Some(
            "it has a [policy] section: the rules every replica enforces are written with \
             `switchboard policy deny|ask PATTERN --state …`"
                .to_owned(),
        )
    } else if loaded.servers.is_empty() && loaded.skipped.is_empty() {
        Some(
            "it names no server (`[servers.NAME]`); `switchboard team clear` removes the shared servers"
                .to_owned(),
        )
    } else {
        None
    };
    (loaded, unfit)
}

/// The servers every replica serves besides its files (`switchboard team
/// push FILE --state …`), kept here as last read and read again whenever
/// the database announces a change.
#[derive(Clone)]
pub(crate) struct SharedServers {
    state: PgState,
    document: std::sync::Arc<std::sync::RwLock<Option<switchboard_postgres::SharedConfig>>>,
}

impl SharedServers {
    /// The shared servers in `state` now.
    pub(crate) async fn load(state: PgState) -> Result<Self, Failure> {
        let reader = state.clone();
        let document = tokio::task::spawn_blocking(move || reader.shared_config())
            .await
            .map_err(|e| Failure::usage(anyhow::anyhow!("reading the shared servers: {e}")))?
            .map_err(|e| Failure::usage(anyhow::Error::new(e)))?;
        if let Some(document) = &document {
            eprintln!(
                "serving the shared servers of the state database (version {})",
                document.version
            );
        }
        Ok(Self {
            state,
            document: std::sync::Arc::new(std::sync::RwLock::new(document)),
        })
    }

    /// `loaded` (the files') with the shared servers no file names; a
    /// shared server a file names too is left out, said as a warning.
    pub(crate) fn merge_into(
        &self,
        context: &crate::configure::Context,
        loaded: &mut switchboard_hub::config::LoadedConfig,
    ) {
        let document = self
            .document
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let Some(document) = document else { return };
        let (shared, _) = check_shared(context, &document.text, document.version);
        loaded.diagnostics.extend(shared.diagnostics);
        for server in shared.servers {
            let named = loaded.servers.iter().any(|s| s.name == server.name)
                || loaded.skipped.iter().any(|s| s.server.name == server.name);
            if named {
                loaded.diagnostics.push(
                    switchboard_hub::config::Diagnostic::warning(format!(
                        "the shared server `{}` is not served here: this replica's files name one too, which wins",
                        server.name
                    ))
                    .in_file(&shared_name(document.version))
                    .server(&server.name),
                );
            } else {
                loaded.servers.push(server);
            }
        }
        loaded.servers.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// Reads the document again whenever the database announces a change
    /// (made from anywhere), then awaits `changed` when it did change; for
    /// as long as the process runs. A document that cannot be read keeps
    /// the servers in force, said on stderr.
    pub(crate) fn follow<F>(&self, changed: impl Fn() -> F + Send + Sync + 'static)
    where
        F: std::future::Future<Output = ()> + Send,
    {
        let this = self.clone();
        on_each_change(
            &self.state,
            PgState::watch_config,
            PgState::shared_config,
            move |read| {
                let document = match read {
                    Ok(document) => document,
                    Err(error) => {
                        eprintln!(
                            "warning: the shared servers cannot be read ({}); the servers in force are kept",
                            crate::term::sanitize::line(&error)
                        );
                        return None;
                    }
                };
                let mut now = this
                    .document
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if *now == document {
                    return None;
                }
                match &document {
                    Some(d) => eprintln!("the shared servers changed (version {})", d.version),
                    None => eprintln!("the shared servers were cleared"),
                }
                *now = document;
                Some(changed())
            },
        );
    }
}
