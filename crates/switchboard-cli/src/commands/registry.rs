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
/// official one.
pub(crate) fn client(registry: Option<&str>) -> Result<RegistryClient, Failure> {
    let env = std::env::var("SWITCHBOARD_REGISTRY")
        .ok()
        .filter(|v| !v.is_empty());
    let url = registry
        .map(str::to_owned)
        .or(env)
        .unwrap_or_else(|| OFFICIAL.to_owned());
    RegistryClient::new(&url).map_err(|e| Failure::usage(anyhow::Error::new(e)))
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
    let server = client
        .version(&args.name, args.version.as_deref().unwrap_or("latest"))
        .await
        .map_err(failed)?;
    let choice = match (args.package, args.remote) {
        (Some(n), _) => Choice::Package(n),
        (_, Some(n)) => Choice::Remote(n),
        _ => Choice::Auto,
    };
    let planned =
        plan(&server, choice).map_err(|why| Failure::usage(anyhow!("{}", sanitize::line(&why))))?;
    let local = args.as_name.clone().unwrap_or_else(|| {
        args.name
            .rsplit('/')
            .next()
            .unwrap_or(&args.name)
            .to_owned()
    });
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
    match &transport {
        TransportConfig::Stdio {
            command, args, env, ..
        } => {
            shown.push_str(&format!(
                "\n  runs: {} {}",
                line(command),
                args.iter().map(|a| line(a)).collect::<Vec<_>>().join(" ")
            ));
            for (name, value) in env {
                shown.push_str(&format!("\n  env {}={}", line(name), line(value)));
            }
        }
        TransportConfig::Http { url, headers, .. } => {
            shown.push_str(&format!("\n  url: {}", line(url)));
            for (name, value) in headers {
                shown.push_str(&format!("\n  header {}: {}", line(name), line(value)));
            }
        }
        _ => {}
    }
    for need in &planned.needs {
        shown.push_str(&format!(
            "\n  set ${}{}{}",
            line(&need.name),
            match (need.secret, need.required) {
                (true, true) => " (a secret, required)",
                (true, false) => " (a secret)",
                (false, true) => " (required)",
                (false, false) => "",
            },
            need.description
                .as_deref()
                .map(|d| format!(": {}", output::short(d, 80)))
                .unwrap_or_default()
        ));
    }
    eprintln!("{shown}");
    let project = matches!(target.1, switchboard_hub::config::Scope::Project);
    if project && !args.yes {
        let question = format!(
            "Write `{local}` into this project's {}?",
            target.0.file.display()
        );
        let approved = tokio::task::spawn_blocking(move || {
            if !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                return Err(());
            }
            inquire::Confirm::new(&question)
                .with_default(false)
                .prompt()
                .map_err(|_| ())
        })
        .await
        .unwrap_or(Err(()));
        match approved {
            Ok(true) => {}
            Ok(false) => return Err(Failure::usage(anyhow!("not written: you said no"))),
            Err(()) => {
                return Err(Failure::usage(anyhow!(
                    "not written: a project's entry is written only when you say yes (pass --yes after reading the above)"
                )));
            }
        }
    }
    let config = ServerConfig::new(&local, transport, crate::configure::origin(&target));
    crate::configure::write_new(context, &target.0, config, args.json)
}
