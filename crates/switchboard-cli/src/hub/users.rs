//! `serve --http --issuer … --state …`: each host user served their own
//! backends. Every user gets the configured servers in a hub of their
//! own, logged in with their own tokens, kept in the shared state
//! (`switchboard_hub::gateway::users`); a backend that wants a login is
//! that user's `SERVER__authenticate` tool, which sends the host a link
//! to the gateway's login pages (at the `--audience` URL's origin).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use switchboard::types::Implementation;
use switchboard_hub::config::LoadedConfig;
use switchboard_hub::gateway::users::{UserGateway, UserLogins};
use switchboard_hub::hub::users::Users;
use switchboard_hub::hub::{BackendAsks, Prefix};
use switchboard_hub::{HubServer, ServerConfig};

use super::serve::{DRAIN_GRACE, ROUNDS, ServeSettings, http_listener, with_shared_for};
use crate::configure::Context;
use crate::failure::{Failure, exit};
use crate::lifecycle::Servers;

/// What `serve` read: the configuration, its runnable servers, and the
/// files to watch (as they were when read).
pub(super) struct Served<'a> {
    pub(super) context: &'a Context,
    pub(super) loaded: &'a LoadedConfig,
    pub(super) runnable: Vec<ServerConfig>,
    pub(super) watched: (Vec<std::path::PathBuf>, super::serve::Stamps),
}

/// Serves the configured servers to each host user as their own, until a
/// signal; a changed config file changes every user's servers and policy.
pub(super) async fn serve_users(
    served: Served<'_>,
    settings: ServeSettings,
    state: switchboard_postgres::PgState,
    servers: &Servers,
) -> Result<u8, Failure> {
    let Served {
        context,
        loaded,
        runnable,
        watched,
    } = served;
    let fronted = settings.fronted.clone();
    let Some(mut listener) = settings.http else {
        unreachable!("serve_users is for --http");
    };
    let Some(users_args) = listener.users.as_ref() else {
        unreachable!("serve_users is for --issuer");
    };
    let audience = url::Url::parse(users_args.audience())
        .map_err(|e| Failure::usage(anyhow::anyhow!("--audience: {e}")))?;
    let public_url = audience
        .join("/")
        .map_err(|e| Failure::usage(anyhow::anyhow!("--audience: {e}")))?;
    // The links and the login cookie are sealed with the session key,
    // which replicas share; one replica alone may use one of its own.
    let key = match &listener.session_key {
        Some(key) => key.clone(),
        None => {
            let key = switchboard::server::http::SessionKey::generate()
                .ok_or_else(|| Failure::usage(anyhow::anyhow!("no randomness for a key")))?;
            listener.session_key = Some(key.clone());
            key
        }
    };
    let logins = UserLogins {
        public_url: public_url.clone(),
        resource: audience.to_string(),
        host_auth: Arc::new(users_args.checker()),
        key: key.clone(),
        client_name: "switchboard gateway".to_owned(),
        allow_http_loopback: users_args.issuer_on_loopback(),
    };
    // Each user's backend asks (sampling, elicitation) go to that user's
    // host: the hub's clients and the user's gateway share them.
    let asks: Arc<Mutex<HashMap<String, BackendAsks>>> = Arc::default();
    let prefix = if runnable.len() == 1 {
        Prefix::OnCollision
    } else {
        Prefix::Always
    };
    // The config's rules, read again with the servers when a file
    // changes. Each user's "always" answers are theirs, kept in the shared
    // state: one user's never lets another's call run unasked.
    let file_rules = Arc::new(std::sync::RwLock::new(loaded.policy.tools.clone()));
    let (rules, allows, client_asks, shared) = (
        file_rules.clone(),
        state.clone(),
        asks.clone(),
        settings.shared_policy.clone(),
    );
    // The groups each user's latest token named: their hub holds the
    // shared rules for them, for their groups, and everyone's.
    let groups: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    let groups_of_user = groups.clone();
    // One probe per server for every user and replica.
    let verdicts: Arc<dyn switchboard_hub::hub::VerdictStore> = Arc::new(state.era_verdicts());
    let users = Users::builder(Arc::new(state))
        .client_name("switchboard gateway")
        .redirect_uri(
            public_url
                .join(switchboard_hub::gateway::users::CALLBACK_PATH)
                .map_err(|e| Failure::usage(anyhow::anyhow!("--audience: {e}")))?,
        )
        // The servers are the operator's configured ones: a local one is
        // reached over plain http as `serve` reaches it for one user.
        .allow_http_loopback(true)
        .servers(runnable)
        .customize(move |user, builder| {
            let forwarding = asks_of(&client_asks, user);
            // The configuration's tool policy and the shared rules (no
            // terminal to ask on), read again when the shared rules change.
            let (file_rules, shared_rules) = (rules.clone(), shared.clone());
            let rules_now = move || {
                file_rules
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone()
            };
            let (known, who) = (groups_of_user.clone(), user.to_owned());
            let current = move || {
                known
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get(&who)
                    .cloned()
                    .unwrap_or_default()
            };
            let now = current();
            let who = user.to_owned();
            crate::policy::with_rules(
                builder.default_prefix(prefix),
                with_shared_for(shared.as_ref(), rules_now(), Some((user, &now))),
                crate::policy::shared_allows_of(&allows, user),
            )
            .tool_policy_source(move || {
                let now = current();
                Ok(with_shared_for(
                    shared_rules.as_ref(),
                    rules_now(),
                    Some((&who, &now)),
                ))
            })
            .client(move |server, client| forwarding.client(&server.name, client))
            .verdict_store(verdicts.clone())
        })
        .build()
        .map_err(|e| Failure::usage(anyhow::anyhow!("{e}")))?;
    if fronted.reads_files() {
        let shared_servers = settings.shared_servers.clone();
        let reloading = {
            let (context, users, rules) = (context.clone(), users.clone(), file_rules.clone());
            let shared_servers = shared_servers.clone();
            move || {
                let (context, fronted) = (context.clone(), fronted.clone());
                let (users, rules) = (users.clone(), rules.clone());
                let shared_servers = shared_servers.clone();
                async move {
                    reload(&context, &fronted, shared_servers.as_ref(), &users, &rules).await;
                }
            }
        };
        let (files, read_as) = watched;
        tokio::spawn(super::serve::watch_files(files, read_as, reloading.clone()));
        // Servers pushed to the shared state, here or anywhere.
        if let Some(shared) = &shared_servers {
            shared.follow(reloading);
        }
    }
    if let Some(shared) = &settings.shared_policy {
        let users = users.clone();
        shared.follow(move || {
            for hub in users.loaded_hubs() {
                if let Err(error) = hub.reload_tool_policy() {
                    tracing::warn!(%error, "the shared policy changed and could not be applied");
                }
            }
        });
    }
    let info = Implementation::new("switchboard", env!("CARGO_PKG_VERSION"));
    let (audit, max_tools) = (settings.audit.map(Arc::new), settings.max_tools);
    let rounds = key.derive(ROUNDS);
    let loaded_users = users.clone();
    let gateway = UserGateway::new(users.clone(), info.clone(), logins, {
        move |user, hub, authenticator| {
            // Only the users whose hubs this replica keeps.
            asks.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .retain(|kept, _| kept == user || loaded_users.is_loaded(kept));
            let mut gateway = HubServer::new(hub, info.clone())
                .forward_asks(asks_of(&asks, user))
                .authenticator(authenticator)
                .round_key(rounds);
            if let Some(log) = &audit {
                gateway = gateway.audit(log.clone(), format!("http {user}"));
            }
            if let Some(max) = max_tools {
                gateway = super::serve::with_tool_search(gateway, max);
            }
            gateway
        }
    });
    // A token naming other groups than the user's last one: their hub's
    // policy follows it before the request is served.
    let (claim, loaded_users) = (users_args.groups_claim().to_owned(), users.clone());
    gateway.on_request(move |user, hub| {
        let now = super::host_auth::groups_in(&user.claims, &claim);
        let mut known = groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if known.get(&user.sub) == Some(&now) {
            return;
        }
        known.retain(|kept, _| loaded_users.is_loaded(kept));
        known.insert(user.sub.clone(), now);
        drop(known);
        if let Err(error) = hub.reload_tool_policy() {
            tracing::warn!(%error, "a user's groups changed and the policy could not be applied");
        }
    });
    let addr = listener.addr;
    let (bound, options, _token_file) = http_listener(listener).await?;
    let measured = gateway.clone();
    let options = options
        .pages(gateway.pages())
        .metrics(switchboard::server::http::Metrics::new(move || {
            measured.metrics_text()
        }));
    let signal = servers.drain_on_signal();
    let served = switchboard::server::http::serve_http(Arc::new(gateway), bound, options)
        .map_err(|e| Failure::usage(anyhow::anyhow!("cannot serve on {addr}: {e}")))?;
    eprintln!("listening on http://{}/mcp", served.local_addr());
    eprintln!("each user is served their own servers; their login pages are at {public_url}oauth/");
    let code = signal.await.unwrap_or(exit::SIGTERM);
    eprintln!("stopping: answering the calls in progress, taking no new ones (again to stop now)");
    served.shutdown(DRAIN_GRACE).await;
    users.shutdown().await;
    Ok(code)
}

/// Reads the config again: every user's servers become the new ones, and
/// their hubs' policy the new rules (with the shared ones). A file that
/// cannot be read may hold rules: then nothing changes.
async fn reload(
    context: &Context,
    fronted: &crate::fronted::Fronted,
    shared: Option<&crate::state::SharedServers>,
    users: &Users,
    rules: &std::sync::RwLock<switchboard_hub::config::policy::ToolPolicy>,
) {
    let loaded = match super::serve::served_config(context, fronted, shared, false) {
        Ok(loaded) => loaded,
        Err(failure) => return super::serve::say_not_reloaded(&format!("{:#}", failure.error)),
    };
    if let Some(broken) = loaded
        .diagnostics
        .iter()
        .find(|d| d.severity == switchboard_hub::config::Severity::Error && d.server.is_none())
    {
        return super::serve::say_not_reloaded(&format!(
            "{broken}; the servers and tool policy in force are kept until it is fixed"
        ));
    }
    let runnable = super::prepare::prepare_asking(context, &loaded, None, false).runnable;
    let policy_changed = {
        let mut rules = rules
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = *rules != loaded.policy.tools;
        *rules = loaded.policy.tools.clone();
        changed
    };
    let changed = users.set_servers(runnable).await;
    if policy_changed {
        for hub in users.loaded_hubs() {
            if let Err(error) = hub.reload_tool_policy() {
                tracing::warn!(%error, "a user's tool policy could not be applied");
            }
        }
    }
    super::serve::say_changed(
        &changed.added,
        &changed.removed,
        &changed.changed,
        &[],
        policy_changed,
    );
}

/// `user`'s backend asks, made when first wanted.
fn asks_of(asks: &Mutex<HashMap<String, BackendAsks>>, user: &str) -> BackendAsks {
    asks.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(user.to_owned())
        .or_default()
        .clone()
}
