//! `serve` (the configured servers as one MCP server, on stdio or HTTP)
//! and the background session's daemon (`up` starts it).

use std::time::Duration;

use super::Run;
use crate::cli::{MAX_IDLE_SECONDS, ServeArgs};
use crate::failure::Failure;
use crate::{configure, fronted, hub, listen, session};

/// `serve`: the configured servers as one MCP server, on stdio or `--http`.
pub(crate) async fn serve(run: Run<'_>, args: ServeArgs) -> Result<u8, Failure> {
    let ServeArgs {
        wait_ready,
        console,
        audit: audit_file,
        audit_arguments,
        audit_keep,
        state,
        state_key_file,
        audit_database,
        http,
        token,
        token_file,
        no_auth,
        allow_host,
        max_connections,
        threads: _,
        session_key_file,
        users,
        max_tools,
        max_message_size,
        only,
        url,
        headers,
        command,
    } = args;
    let token = listen::token_source(token.as_deref(), token_file.as_deref(), no_auth)?;
    let users = hub::host_auth::HostUsers::from_args(users, &token)?;
    let fronted = fronted::Fronted::from_args(only, url, &headers, command)?;
    let session_key = session_key_file
        .map(|path| {
            listen::read_private(&path, "session key file").and_then(|text| {
                switchboard::server::http::SessionKey::from_hex(&text).map_err(|e| {
                    Failure::usage(anyhow::anyhow!(
                        "cannot use the session key in {}: {e}",
                        path.display()
                    ))
                })
            })
        })
        .transpose()?;
    let context = configure::Context::new(run.config)?;
    let mut options = switchboard_hub::hub::audit::AuditOptions::default();
    options.arguments = audit_arguments;
    options.keep = audit_keep;
    if audit_arguments && audit_file.is_none() && !audit_database {
        return Err(Failure::usage(anyhow::anyhow!(
            "--audit-arguments says what the audit log records: give --audit FILE or --audit-database"
        )));
    }
    let shared = match (&state, &state_key_file) {
        (Some(url), Some(key)) => Some(crate::state::connect(url, key).await?),
        _ => None,
    };
    let shared_policy = match &shared {
        Some(state) => Some(crate::state::SharedPolicy::load(state.clone()).await?),
        None => None,
    };
    let shared_servers = match &shared {
        Some(state) => Some(crate::state::SharedServers::load(state.clone()).await?),
        None => None,
    };
    let per_user = shared.clone().filter(|_| users.is_some());
    let audit = match (shared, audit_file) {
        (Some(shared), _) if audit_database => Some(switchboard_hub::hub::audit::AuditLog::shared(
            std::sync::Arc::new(shared.audit()),
            options,
        )),
        (_, Some(path)) => Some(
            switchboard_hub::hub::audit::AuditLog::open(&path, options).map_err(|e| {
                // The chain: an I/O error's cause is its source.
                Failure::usage(
                    anyhow::Error::new(e)
                        .context(format!("cannot open the audit log {}", path.display())),
                )
            })?,
        ),
        _ => None,
    };
    let settings = hub::ServeSettings {
        wait_ready: Duration::from_secs(wait_ready),
        http: http.map(|addr| listen::Listener {
            addr,
            token,
            session_key,
            allowed_hosts: allow_host,
            max_connections,
            users,
        }),
        session: None,
        console,
        audit,
        max_tools,
        max_message_size: max_message_size.map(|b| usize::try_from(b).unwrap_or(usize::MAX)),
        fronted,
        state: per_user,
        shared_policy,
        shared_servers,
    };
    hub::serve(&context, run.creds, settings, run.servers).await
}

/// `__session`: the background session's daemon, behind the session socket.
pub(crate) async fn session(run: Run<'_>, idle: u64) -> Result<u8, Failure> {
    let context = configure::Context::new(run.config)?;
    let daemon = session::Daemon::bind(
        &context,
        Duration::from_secs(idle.clamp(1, MAX_IDLE_SECONDS)),
    )
    .await?;
    let settings = hub::ServeSettings {
        wait_ready: Duration::from_secs(10),
        http: None,
        session: Some(daemon),
        console: false,
        audit: None,
        max_tools: None,
        max_message_size: None,
        fronted: fronted::Fronted::All,
        state: None,
        shared_policy: None,
        shared_servers: None,
    };
    hub::serve(&context, run.creds, settings, run.servers).await
}
