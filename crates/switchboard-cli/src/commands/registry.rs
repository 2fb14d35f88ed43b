//! `switchboard search QUERY` and `switchboard show NAME`: servers in the
//! MCP registry (the official one, `--registry URL` or
//! `SWITCHBOARD_REGISTRY`). Everything the registry says is someone
//! else's text: shown sanitised, never run.

use anyhow::anyhow;
use serde_json::json;
use switchboard_hub::registry::{OFFICIAL, Package, RegistryClient, ServerResponse, Transport};

use crate::failure::Failure;
use crate::term::{output, sanitize};

/// The registry `--registry`, else `SWITCHBOARD_REGISTRY`, else the
/// official one; its answers cached on disk.
pub(crate) fn client(registry: Option<&str>) -> Result<RegistryClient, Failure> {
    let env = std::env::var("SWITCHBOARD_REGISTRY")
        .ok()
        .filter(|v| !v.is_empty());
    let url = registry
        .map(str::to_owned)
        .or(env)
        .unwrap_or_else(|| OFFICIAL.to_owned());
    let client = RegistryClient::new(&url).map_err(|e| Failure::usage(anyhow::Error::new(e)))?;
    // Answers kept between runs as the registry's cache headers allow.
    Ok(match switchboard_hub::config::Locations::from_process() {
        Ok(locations) => client.with_cache_dir(locations.cache_dir().join("registry")),
        Err(_) => client,
    })
}

fn failed(error: switchboard_hub::registry::RegistryError) -> Failure {
    let mut failure = Failure::usage(anyhow!("{}", sanitize::line(&error.to_string())));
    if matches!(
        error,
        switchboard_hub::registry::RegistryError::Connect { .. }
    ) {
        failure.code = crate::failure::exit::UNREACHABLE;
    }
    failure
}

/// How a package runs, in one line: `npm @x/y@1.2.3`, `pypi mcp-x==1`,
/// `oci image:tag`, `mcpb URL`.
fn package_line(package: &Package) -> String {
    let version = package.version.as_deref().unwrap_or("?");
    let line = match package.registry_type.as_str() {
        "npm" => format!("npm {}@{version}", package.identifier),
        "pypi" => format!("pypi {}=={version}", package.identifier),
        "oci" => format!("oci {}:{version}", package.identifier),
        "nuget" => format!("nuget {} {version}", package.identifier),
        other => format!("{other} {} {version}", package.identifier),
    };
    sanitize::line(&line).into_owned()
}

fn remote_line(remote: &Transport) -> String {
    sanitize::line(&format!(
        "remote {} {}",
        remote.kind,
        remote.url.as_deref().unwrap_or("?")
    ))
    .into_owned()
}

fn status_line(server: &ServerResponse) -> String {
    match (server.status(), server.status_message()) {
        ("active", _) => "active".to_owned(),
        (status, Some(message)) => {
            format!("{}: {}", sanitize::line(status), output::short(message, 60))
        }
        (status, None) => sanitize::line(status).into_owned(),
    }
}

/// `search QUERY`: the latest version of each matching server.
pub(crate) async fn search(
    query: Option<String>,
    registry: Option<String>,
    limit: usize,
    json: bool,
) -> Result<u8, Failure> {
    let client = client(registry.as_deref())?;
    let found = client
        .search(query.as_deref(), limit)
        .await
        .map_err(failed)?;
    if json {
        output::print_json(&json!({
            "registry": client.url(),
            "servers": found,
        }));
        return Ok(0);
    }
    let mut table = output::table(&["name", "version", "status", "description", "runs as"]);
    for server in &found {
        let detail = &server.server;
        let runs: Vec<String> = detail
            .packages
            .iter()
            .map(package_line)
            .chain(detail.remotes.iter().map(remote_line))
            .collect();
        table.add_row(vec![
            sanitize::line(&detail.name).into_owned(),
            sanitize::line(&detail.version).into_owned(),
            status_line(server),
            output::short(&detail.description, 60),
            runs.join("\n"),
        ]);
    }
    println!("{table}");
    println!(
        "{} from {} (`switchboard show NAME` for one)",
        output::count(found.len(), "server"),
        sanitize::line(client.url())
    );
    Ok(0)
}

/// `show NAME [--version V]`: one version, whole.
pub(crate) async fn show(
    name: &str,
    version: Option<String>,
    registry: Option<String>,
    json: bool,
) -> Result<u8, Failure> {
    let client = client(registry.as_deref())?;
    let server = client
        .version(name, version.as_deref().unwrap_or("latest"))
        .await
        .map_err(failed)?;
    if json {
        output::print_json(&json!({"registry": client.url(), "server": server}));
        return Ok(0);
    }
    let detail = &server.server;
    let line = |text: &str| sanitize::line(text).into_owned();
    println!("{} {}", line(&detail.name), line(&detail.version));
    if let Some(title) = &detail.title {
        println!("  {}", line(title));
    }
    println!("  {}", sanitize::term(&detail.description));
    println!("  status: {}", status_line(&server));
    if let Some(site) = &detail.website_url {
        println!("  website: {}", line(site));
    }
    for package in &detail.packages {
        println!("  package: {}", package_line(package));
        if let Some(hint) = &package.runtime_hint {
            println!("    runtime: {}", line(hint));
        }
        if let Some(sha) = &package.file_sha256 {
            println!("    sha256: {}", line(sha));
        }
        for argument in package
            .runtime_arguments
            .iter()
            .chain(&package.package_arguments)
        {
            let label = argument
                .name
                .as_deref()
                .or(argument.value_hint.as_deref())
                .unwrap_or("(argument)");
            println!(
                "    argument {}{}{}",
                line(label),
                if argument.input.is_required {
                    " (required)"
                } else {
                    ""
                },
                argument
                    .input
                    .description
                    .as_deref()
                    .map(|d| format!(": {}", output::short(d, 70)))
                    .unwrap_or_default()
            );
        }
        for variable in &package.environment_variables {
            println!(
                "    env {}{}{}{}",
                line(&variable.name),
                if variable.input.is_secret {
                    " (secret)"
                } else {
                    ""
                },
                if variable.input.is_required {
                    " (required)"
                } else {
                    ""
                },
                variable
                    .input
                    .description
                    .as_deref()
                    .map(|d| format!(": {}", output::short(d, 70)))
                    .unwrap_or_default()
            );
        }
    }
    for remote in &detail.remotes {
        println!("  {}", remote_line(remote));
        for header in &remote.headers {
            println!(
                "    header {}{}{}",
                line(&header.name),
                if header.input.is_secret {
                    " (secret)"
                } else {
                    ""
                },
                if header.input.is_required {
                    " (required)"
                } else {
                    ""
                },
            );
        }
    }
    Ok(0)
}

/// `add NAME --from-registry`: the registry's `server.json` as an entry,
/// shown, then written (a project's only when the user says yes).
pub(crate) async fn add(
    context: &crate::configure::Context,
    args: crate::cli::AddArgs,
) -> Result<u8, Failure> {
    use switchboard_hub::config::{HttpKind, ServerConfig, TransportConfig};
    use switchboard_hub::registry::{Choice, Planned, plan};

    let client = client(args.registry.as_deref())?;
    let wanted = args.name.clone().unwrap_or_default();
    let server = client
        .version(&wanted, args.version.as_deref().unwrap_or("latest"))
        .await
        .map_err(failed)?;
    let choice = match (args.package, args.remote) {
        (Some(n), _) => Choice::Package(n),
        (_, Some(n)) => Choice::Remote(n),
        _ => Choice::Auto,
    };
    let local = args
        .as_name
        .clone()
        .unwrap_or_else(|| wanted.rsplit('/').next().unwrap_or(&wanted).to_owned());
    if let Some(package) = bundle_package(&server, choice) {
        return add_bundle(context, &client, &server, package, local, &args).await;
    }
    let planned =
        plan(&server, choice).map_err(|why| Failure::usage(anyhow!("{}", sanitize::line(&why))))?;
    crate::configure::check_name(&local)
        .map_err(|e| Failure::usage(anyhow!("{e} (give the entry a name with --as NAME)")))?;
    let target = context.target(args.scope.unwrap_or(crate::cli::ScopeArg::Local));
    let transport = match &planned.entry {
        Planned::Command { command, args, env } => TransportConfig::Stdio {
            command: command.clone(),
            args: args.clone(),
            env: env.clone(),
            cwd: None,
        },
        Planned::Remote {
            url,
            transport,
            headers,
        } => TransportConfig::Http {
            url: url.clone(),
            headers: headers.clone(),
            kind: if *transport == "sse" {
                HttpKind::Sse
            } else {
                HttpKind::Streamable
            },
        },
        _ => return Err(Failure::usage(anyhow!("this entry cannot be written"))),
    };
    // What is about to be written, whole, before it is.
    let line = |text: &str| sanitize::line(text).into_owned();
    let mut shown = format!(
        "`{}` {} from {}:",
        line(&server.server.name),
        line(&server.server.version),
        line(client.url())
    );
    for warning in &planned.warnings {
        shown.push_str(&format!("\n  warning: {}", line(warning)));
    }
    let needs: Vec<super::install::Need<'_>> = planned
        .needs
        .iter()
        .map(|n| super::install::Need {
            name: &n.name,
            description: n.description.as_deref(),
            secret: n.secret,
            required: n.required,
        })
        .collect();
    shown.push_str(&super::install::describe(&transport, &needs));
    eprintln!("{shown}");
    if matches!(target.1, switchboard_hub::config::Scope::Project) {
        super::install::confirm(
            format!(
                "Write `{local}` into this project's {}?",
                target.0.file.display()
            ),
            args.yes,
            "a project's entry is written only when you say yes",
        )
        .await?;
    }
    let config = ServerConfig::new(&local, transport, crate::configure::origin(&target));
    crate::configure::write_new(context, &target.0, config, args.json)
}

/// The `.mcpb` package `choice` picks: the one asked for, or, when the
/// server has nothing else to run, its first bundle.
fn bundle_package(
    server: &ServerResponse,
    choice: switchboard_hub::registry::Choice,
) -> Option<&Package> {
    use switchboard_hub::registry::Choice;
    let detail = &server.server;
    let mcpb = |p: &&Package| p.registry_type == "mcpb";
    match choice {
        Choice::Package(n) => detail.packages.get(n).filter(mcpb),
        Choice::Auto
            if detail.remotes.is_empty()
                && detail.packages.iter().all(|p| {
                    !matches!(p.registry_type.as_str(), "npm" | "pypi" | "oci" | "nuget")
                }) =>
        {
            detail.packages.iter().find(mcpb)
        }
        _ => None,
    }
}

/// `add --from-registry` of a server published as an `.mcpb` bundle:
/// downloaded, checked against the registry's `fileSha256`, and installed
/// as `switchboard install` installs a file (into the user's file).
async fn add_bundle(
    context: &crate::configure::Context,
    client: &RegistryClient,
    server: &ServerResponse,
    package: &Package,
    local: String,
    args: &crate::cli::AddArgs,
) -> Result<u8, Failure> {
    let name = sanitize::line(&server.server.name).into_owned();
    let warnings = switchboard_hub::registry::usable(server)
        .map_err(|why| Failure::usage(anyhow!("{}", sanitize::line(&why))))?;
    for warning in warnings {
        eprintln!("warning: {}", sanitize::line(&warning));
    }
    if matches!(
        args.scope,
        Some(crate::cli::ScopeArg::Project | crate::cli::ScopeArg::Local)
    ) {
        return Err(Failure::usage(anyhow!(
            "`{name}` is an `.mcpb` bundle: it installs for you alone, into your user file (leave out -s)"
        )));
    }
    eprintln!("downloading {} …", sanitize::line(&package.identifier));
    let bytes = client.download_bundle(package).await.map_err(failed)?;
    super::install::install_bytes(
        context,
        &bytes,
        &format!("{} (SHA-256 checked)", package.identifier),
        super::install::Settings {
            as_name: Some(local),
            set: Vec::new(),
            yes: args.yes,
            json: args.json,
        },
    )
    .await
}
