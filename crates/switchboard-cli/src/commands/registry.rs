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
