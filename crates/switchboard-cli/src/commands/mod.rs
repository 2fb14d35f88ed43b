//! Each subcommand, run.

pub(crate) mod act;
pub(crate) mod agent;
mod audit;
mod docs;
pub(crate) mod doctor;
mod inspect;
mod install;
mod registry;
mod serve;
mod shell;
mod team;

use std::path::{Path, PathBuf};

use crate::cli::{AuditCommand, AuthCommand, Cli, Command, PolicyCommand, TeamCommand, seconds};
use crate::failure::Failure;
use crate::{approve, configure, demo, hub, lifecycle, login, policy, session};

/// What every command may use besides its own arguments.
pub(crate) struct Run<'a> {
    /// `--config FILE`.
    pub(crate) config: Option<PathBuf>,
    /// `--credentials FILE`.
    pub(crate) creds: Option<&'a Path>,
    /// Every server the command starts, closed when it ends.
    pub(crate) servers: &'a lifecycle::Servers,
}

/// Runs `cli`'s command.
pub(crate) async fn run(cli: Cli, servers: &lifecycle::Servers) -> Result<u8, Failure> {
    let creds = cli.credentials.as_deref();
    let run = Run {
        config: cli.config.clone(),
        creds,
        servers,
    };
    match cli.command {
        Command::Demo { json } => demo::run(json, servers).await,
        Command::Serve(args) => serve::serve(run, args).await,
        Command::Up { idle, json } => {
            session::up(&configure::Context::new(cli.config)?, idle, json).await
        }
        Command::Completions { shell } => docs::completions(shell),
        Command::Man => docs::man(),
        Command::Shell { name } => {
            let context = configure::Context::new(cli.config)?;
            shell::shell(&context, name.as_deref(), creds, servers).await
        }
        Command::Console {
            port,
            no_open,
            audit,
            audit_arguments,
        } => {
            let context = configure::Context::new(cli.config)?;
            let settings = crate::console::Settings {
                port,
                open: !no_open,
                audit,
                audit_arguments,
            };
            crate::console::console(&context, settings, creds, servers).await
        }
        Command::Doctor {
            check,
            timeout,
            json,
        } => doctor::run(run, check, timeout, json).await,
        Command::Down { json } => session::down(&configure::Context::new(cli.config)?, json).await,
        Command::Session { idle } => serve::session(run, idle).await,
        Command::Audit {
            command:
                AuditCommand::Verify {
                    file,
                    database,
                    state_key_file,
                },
        } => match (file, database, state_key_file) {
            (_, Some(url), Some(key)) => audit::verify_database(&url, &key).await,
            (Some(file), ..) => audit::verify(&file),
            _ => unreachable!("clap requires a file or --database with its key"),
        },
        Command::Agent(args) => agent::run(run, args).await,
        Command::Search {
            query,
            registry: url,
            limit,
            json,
        } => registry::search(query, url, limit, json).await,
        Command::Show {
            name,
            version,
            registry: url,
            json,
        } => registry::show(&name, version, url, json).await,
        Command::Install {
            bundle,
            as_name,
            set,
            yes,
            json,
        } => {
            install::install_file(
                &configure::Context::new(cli.config)?,
                &bundle,
                install::Settings {
                    as_name,
                    set,
                    yes,
                    json,
                },
            )
            .await
        }
        Command::Team { command } => match command {
            TeamCommand::Push { file, state } => {
                team::push(&configure::Context::new(cli.config)?, &file, &state).await
            }
            TeamCommand::Show { json, state } => team::show(&state, json).await,
            TeamCommand::Clear { state } => team::clear(&state).await,
        },
        Command::Info { name, only, server } => inspect::info(run, name, only, server).await,
        Command::Tools {
            only,
            model,
            server,
        } => inspect::tools(run, only, model, server).await,
        Command::Resources { only, server } => inspect::resources(run, only, server).await,
        Command::Prompts { only, server } => inspect::prompts(run, only, server).await,
        Command::Skills { only, server } => inspect::skills(run, only, server).await,
        Command::Skill {
            name,
            file,
            only,
            server,
        } => inspect::skill(run, name, file, only, server).await,
        Command::Call {
            tool,
            json_args,
            args,
            args_json,
            server,
        } => act::call(run, tool, json_args, args, args_json, server).await,
        Command::Read {
            uri,
            only,
            output: to,
            server,
        } => act::read(run, uri, only, to, server).await,
        Command::Prompt {
            name,
            only,
            args,
            server,
        } => act::prompt(run, name, only, args, server).await,
        Command::Complete {
            target,
            argument,
            resource,
            context,
            only,
            server,
        } => act::complete(run, target, argument, resource, context, only, server).await,
        Command::Login(args) => login::login(args, creds, cli.config)
            .await
            .map_err(Failure::usage),
        Command::Logout { server, json } => login::logout(&server, creds, json)
            .await
            .map_err(Failure::usage),
        Command::Auth {
            command: AuthCommand::Status { json },
        } => login::status(creds, json).await.map_err(Failure::usage),
        Command::Policy { command } => {
            let context = configure::Context::new(cli.config)?;
            match command {
                PolicyCommand::List { json, shared } => match shared.state() {
                    Some(state) => policy::shared_allows(&state, shared.user, json).await,
                    None => policy::list(&context, json),
                },
                PolicyCommand::Revoke { target, shared } => match shared.state() {
                    Some(state) => policy::shared_revoke(&state, shared.user, &target).await,
                    None => policy::revoke(&context, &target),
                },
                PolicyCommand::Deny {
                    pattern,
                    scope,
                    state,
                } => {
                    let kind = switchboard_postgres::RuleKind::Deny;
                    policy::shared_add(&state, kind, &pattern, scope.scope()).await
                }
                PolicyCommand::Ask {
                    pattern,
                    scope,
                    state,
                } => {
                    let kind = switchboard_postgres::RuleKind::Ask;
                    policy::shared_add(&state, kind, &pattern, scope.scope()).await
                }
                PolicyCommand::Remove {
                    kind,
                    pattern,
                    scope,
                    state,
                } => policy::shared_remove(&state, &kind, &pattern, scope.scope()).await,
                PolicyCommand::Rules { json, state } => policy::shared_list(&state, json).await,
            }
        }
        Command::List {
            json,
            timeout,
            wide,
            all,
        } => {
            let timeout = seconds("--timeout", timeout)?;
            let context = configure::Context::new(cli.config)?;
            let view = hub::ListView {
                wide,
                all,
                strict: false,
            };
            hub::list(&context, json, timeout, creds, servers, view).await
        }
        Command::Add(args) if args.link.is_some() => {
            install::add_link(&configure::Context::new(cli.config)?, args).await
        }
        Command::Add(args) if args.from_registry => {
            registry::add(&configure::Context::new(cli.config)?, args).await
        }
        Command::Add(args) => configure::add(&configure::Context::new(cli.config)?, args),
        Command::AddJson {
            name,
            entry,
            scope,
            json,
        } => configure::add_json(
            &configure::Context::new(cli.config)?,
            &name,
            &entry,
            scope,
            json,
        ),
        Command::Import { from, scope, json } => {
            configure::import(&configure::Context::new(cli.config)?, from, scope, json)
        }
        Command::Remove(args) => configure::remove(
            &configure::Context::new(cli.config)?,
            &args.name,
            args.scope,
            args.json,
        ),
        Command::Enable(args) => configure::set_enabled(
            &configure::Context::new(cli.config)?,
            &args.name,
            true,
            args.scope,
            args.json,
        ),
        Command::Disable(args) => configure::set_enabled(
            &configure::Context::new(cli.config)?,
            &args.name,
            false,
            args.scope,
            args.json,
        ),
        Command::Get { name, json } => {
            configure::get(&configure::Context::new(cli.config)?, &name, json)
        }
        Command::Approve(pick) => approve::approve(
            &configure::Context::new(cli.config)?,
            &pick.names,
            pick.all,
            pick.json,
        ),
        Command::Trust { all, json } => {
            approve::list(&configure::Context::new(cli.config)?, all, json)
        }
        Command::Untrust(pick) => approve::untrust(
            &configure::Context::new(cli.config)?,
            &pick.names,
            pick.all,
            pick.json,
        ),
        Command::TestServer { args } => switchboard_testserver::run_stdio_main(args),
    }
}
