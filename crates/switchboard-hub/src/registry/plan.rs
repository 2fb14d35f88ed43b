//! A registry's `server.json` as a server entry to write: which command or
//! URL, which arguments, which environment variables and headers — or why
//! it cannot be written.
//!
//! What a registry says is checked as an attacker wrote it: a package name
//! or version that is not one of its registry's names (`pkg; rm -rf ~`, a
//! range, a flag) is refused; runtime arguments are taken only for OCI
//! images (for npm and PyPI a runtime argument could change what the
//! runner fetches) and never ones that widen a container's reach
//! (`--privileged`, host mounts and namespaces); a remote URL on a
//! private or loopback address is refused; a deleted server is refused
//! and a deprecated one said so. Environment variables and secret headers
//! are written as `${NAME}` references, never as values; a positional
//! argument without a fixed value becomes a `${NAME}` reference of its
//! hint. The entry is pinned to the version the registry gave.

use std::collections::BTreeMap;

use super::{Argument, Input, Package, ServerResponse, Transport};

/// Which of a server's ways to run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The first package a runner here can run (npm, PyPI, OCI, NuGet),
    /// else the first remote.
    Auto,
    /// Its packages' `n`th (0-based).
    Package(usize),
    /// Its remotes' `n`th (0-based).
    Remote(usize),
}

/// A server entry to write.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Planned {
    /// A local server: this command and arguments, these variables.
    Command {
        /// The runner (`npx`, `uvx`, `docker`, `dnx`).
        command: String,
        /// Its arguments, the package pinned.
        args: Vec<String>,
        /// Variables, as `${NAME}` references.
        env: BTreeMap<String, String>,
    },
    /// A remote server.
    Remote {
        /// Its URL (`{name}` templates turned into `${NAME}` references).
        url: String,
        /// `sse` or `http`.
        transport: &'static str,
        /// Headers, secret ones as `${NAME}` references.
        headers: BTreeMap<String, String>,
    },
}

/// What the entry needs from the user: each variable it references, with
/// the registry's description and whether it is a secret or required.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Needed {
    /// The variable.
    pub name: String,
    /// The registry's words about it.
    pub description: Option<String>,
    /// A secret: never written literally.
    pub secret: bool,
    /// The server needs it.
    pub required: bool,
}

/// A planned entry, what it needs, and warnings to show (a deprecation).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Plan {
    /// The entry.
    pub entry: Planned,
    /// The variables it references.
    pub needs: Vec<Needed>,
    /// Said before writing.
    pub warnings: Vec<String>,
}

/// Whether `server` may be written or installed at all: an error for a
/// deleted one, a warning for a deprecated one.
///
/// # Errors
/// The message saying it is deleted (with the registry's reason).
pub fn usable(server: &ServerResponse) -> Result<Vec<String>, String> {
    let reason = || {
        server
            .status_message()
            .map(|m| format!(": {m}"))
            .unwrap_or_default()
    };
    match server.status() {
        "deleted" => Err(format!(
            "`{}` is deleted from the registry{}; it is not written",
            server.server.name,
            reason()
        )),
        "deprecated" => Ok(vec![format!(
            "`{}` is deprecated{}",
            server.server.name,
            reason()
        )]),
        _ => Ok(Vec::new()),
    }
}

/// `server`'s entry as `choice` picks it; or why it cannot be written.
///
/// # Errors
/// A message naming what was refused and why.
pub fn plan(server: &ServerResponse, choice: Choice) -> Result<Plan, String> {
    let detail = &server.server;
    let warnings = usable(server)?;
    let runnable =
        |p: &&Package| matches!(p.registry_type.as_str(), "npm" | "pypi" | "oci" | "nuget");
    let (entry, needs) = match choice {
        Choice::Package(n) => package(detail.packages.get(n).ok_or_else(|| {
            format!(
                "`{}` has {} package(s); there is no package {n}",
                detail.name,
                detail.packages.len()
            )
        })?)?,
        Choice::Remote(n) => remote(detail.remotes.get(n).ok_or_else(|| {
            format!(
                "`{}` has {} remote(s); there is no remote {n}",
                detail.name,
                detail.remotes.len()
            )
        })?)?,
        Choice::Auto => match (
            detail.packages.iter().find(runnable),
            detail.remotes.first(),
        ) {
            (Some(p), _) => package(p)?,
            (None, Some(r)) => remote(r)?,
            (None, None) => {
                return Err(format!(
                    "`{}` has no package switchboard can run (npm, PyPI, OCI, NuGet) and no remote{}",
                    detail.name,
                    if detail.packages.iter().any(|p| p.registry_type == "mcpb") {
                        "; its `.mcpb` bundle installs with `switchboard install`"
                    } else {
                        ""
                    }
                ));
            }
        },
    };
    Ok(Plan {
        entry,
        needs,
        warnings,
    })
}

/// A name of `kind` that is only that: letters, digits and `allowed`,
/// not starting with `-`, at most 214 bytes.
fn checked<'a>(kind: &str, value: &'a str, allowed: &str) -> Result<&'a str, String> {
    let ok = !value.is_empty()
        && value.len() <= 214
        && !value.starts_with('-')
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || allowed.contains(c));
    if ok {
        Ok(value)
    } else {
        Err(format!(
            "the registry's {kind} `{}` is not one a package registry gives; it is not written",
            value.escape_debug()
        ))
    }
}

/// An exact version (no range, no `latest`).
fn version(package: &Package) -> Result<&str, String> {
    let version = package
        .version
        .as_deref()
        .ok_or_else(|| format!("the package `{}` has no version to pin", package.identifier))?;
    let version = checked("version", version, ".+_-")?;
    if version == "latest" {
        return Err(format!(
            "the package `{}` gives `latest`, not a version to pin",
            package.identifier
        ));
    }
    Ok(version)
}

/// An environment variable's or header's name: `A-Z a-z 0-9 _ -`.
fn var_name(name: &str) -> Result<&str, String> {
    checked("variable name", name, "_-")
}

fn package(package: &Package) -> Result<(Planned, Vec<Needed>), String> {
    if package.transport.kind != "stdio" && !package.transport.kind.is_empty() {
        return Err(format!(
            "the package `{}` speaks `{}` once running; only stdio packages are written",
            package.identifier.escape_debug(),
            package.transport.kind.escape_debug()
        ));
    }
    let mut needs = Vec::new();
    let mut env = BTreeMap::new();
    for variable in &package.environment_variables {
        let name = var_name(&variable.name)?;
        env.insert(name.to_owned(), format!("${{{name}}}"));
        needs.push(needed(name, variable));
    }
    let mut tail = Vec::new();
    for argument in &package.package_arguments {
        tail.extend(argument_words(argument, &mut needs)?);
    }
    let (command, mut args) = match package.registry_type.as_str() {
        "npm" => {
            no_runtime_arguments(package)?;
            let name = checked("npm package", &package.identifier, "@/._~-")?;
            (
                "npx",
                vec!["-y".to_owned(), format!("{name}@{}", version(package)?)],
            )
        }
        "pypi" => {
            no_runtime_arguments(package)?;
            let name = checked("PyPI package", &package.identifier, "._-")?;
            ("uvx", vec![format!("{name}=={}", version(package)?)])
        }
        "nuget" => {
            no_runtime_arguments(package)?;
            let name = checked("NuGet package", &package.identifier, "._-")?;
            (
                "dnx",
                vec![format!("{name}@{}", version(package)?), "--yes".to_owned()],
            )
        }
        "oci" => {
            let image = checked("OCI image", &package.identifier, "./:_@-")?;
            // A tag in the identifier, or the version as the tag.
            let image = match (&package.version, image.rsplit_once(':')) {
                (_, Some((_, tag))) if !tag.contains('/') => image.to_owned(),
                (Some(_), _) => format!("{image}:{}", version(package)?),
                (None, _) => {
                    return Err(format!("the image `{image}` has no tag or version to pin"));
                }
            };
            let mut args = vec!["run".to_owned(), "-i".to_owned(), "--rm".to_owned()];
            for argument in &package.runtime_arguments {
                let words = argument_words(argument, &mut needs)?;
                for word in &words {
                    docker_word(word)?;
                }
                args.extend(words);
            }
            for name in env.keys() {
                args.push("-e".to_owned());
                args.push(name.clone());
            }
            args.push(image);
            ("docker", args)
        }
        other => {
            return Err(format!(
                "packages of type `{}` are not written by switchboard (npm, PyPI, OCI, NuGet are; an `.mcpb` bundle installs with `switchboard install`)",
                other.escape_debug()
            ));
        }
    };
    args.extend(tail);
    Ok((
        Planned::Command {
            command: command.to_owned(),
            args,
            env,
        },
        needs,
    ))
}

fn no_runtime_arguments(package: &Package) -> Result<(), String> {
    if package.runtime_arguments.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the package `{}` asks for runtime arguments to its runner, which could change what it fetches and runs; it is not written",
            package.identifier.escape_debug()
        ))
    }
}

/// A `docker run` word that widens what a container may reach.
fn docker_word(word: &str) -> Result<(), String> {
    let flag = word.split('=').next().unwrap_or(word);
    let widening = [
        "--privileged",
        "--cap-add",
        "--pid",
        "--ipc",
        "--userns",
        "--security-opt",
        "--device",
        "--network=host",
        "--net=host",
    ];
    let host_mount = (word.starts_with('/') && word.contains(':'))
        || word.contains("/var/run/docker.sock")
        || word == "/:/host";
    if widening.contains(&flag) || widening.contains(&word) || host_mount {
        return Err(format!(
            "the image's runtime argument `{}` would widen what the container reaches; it is not written",
            word.escape_debug()
        ));
    }
    Ok(())
}

/// An argument's words: a named one's flag and value, a positional one's
/// value — a fixed value as given, else a `${NAME}` reference.
fn argument_words(argument: &Argument, needs: &mut Vec<Needed>) -> Result<Vec<String>, String> {
    let value = match (&argument.input.value, &argument.value_hint, &argument.name) {
        (Some(value), _, _) => Some(value.clone()),
        (None, hint, name) => {
            let label = hint
                .as_deref()
                .or_else(|| name.as_deref().map(|n| n.trim_start_matches('-')))
                .unwrap_or("ARG");
            let var = crate::config::link::variable(label);
            if !argument.input.is_required
                && argument.input.default.is_none()
                && argument.kind == "named"
            {
                None
            } else {
                needs.push(Needed {
                    name: var.clone(),
                    description: argument.input.description.clone(),
                    secret: argument.input.is_secret,
                    required: argument.input.is_required,
                });
                Some(format!("${{{var}}}"))
            }
        }
    };
    Ok(match (argument.kind.as_str(), value) {
        ("named", Some(value)) => {
            let flag = argument.name.as_deref().unwrap_or_default();
            checked("flag", flag.trim_start_matches('-'), "_-.")?;
            vec![flag.to_owned(), value]
        }
        ("named", None) => Vec::new(),
        (_, Some(value)) => vec![value],
        (_, None) => Vec::new(),
    })
}

fn needed(name: &str, input: &Input) -> Needed {
    Needed {
        name: name.to_owned(),
        description: input.input.description.clone(),
        secret: input.input.is_secret,
        required: input.input.is_required,
    }
}

fn remote(remote: &Transport) -> Result<(Planned, Vec<Needed>), String> {
    let transport = match remote.kind.as_str() {
        "streamable-http" => "http",
        "sse" => "sse",
        other => {
            return Err(format!(
                "a remote of type `{}` is not one switchboard reaches",
                other.escape_debug()
            ));
        }
    };
    let template = remote.url.as_deref().ok_or("the remote has no URL")?;
    let mut needs = Vec::new();
    let url = references(template, None, &mut needs)?;
    let parsed = reqwest::Url::parse(&template.replace(['{', '}'], "")).map_err(|e| {
        format!(
            "the remote URL `{}` is not a URL: {e}",
            template.escape_debug()
        )
    })?;
    if parsed.scheme() != "https" {
        return Err(format!(
            "the remote URL `{}` is not https",
            template.escape_debug()
        ));
    }
    if private_host(&parsed) {
        return Err(format!(
            "the remote URL `{}` points at a private or loopback address; a registry's server does not live on your network — it is not written",
            template.escape_debug()
        ));
    }
    let mut headers = BTreeMap::new();
    for header in &remote.headers {
        let name = var_name(&header.name)?;
        let value = match &header.input.value {
            // A template (`Bearer {api_key}`) keeps its words, its names
            // as references.
            Some(value) if value.contains('{') => references(value, Some(header), &mut needs)?,
            Some(value) if !header.input.is_secret => value.clone(),
            _ => {
                let var = name.to_ascii_uppercase().replace('-', "_");
                needs.push(needed(&var, header));
                format!("${{{var}}}")
            }
        };
        headers.insert(name.to_owned(), value);
    }
    Ok((
        Planned::Remote {
            url,
            transport,
            headers,
        },
        needs,
    ))
}

/// A loopback, private, link-local, shared or unspecified address, or a
/// name that only a local network resolves.
pub(super) fn private_host(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return true;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => {
            let [a, b, ..] = ip.octets();
            ip.is_loopback()
                || ip.is_private()
                || ip.is_link_local()
                || ip.is_unspecified()
                || (a == 100 && (64..128).contains(&b))
        }
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || (ip.segments()[0] & 0xfe00) == 0xfc00
                || (ip.segments()[0] & 0xffc0) == 0xfe80
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_private())
        }
        Err(_) => {
            let name = bare.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost"
                || [".localhost", ".local", ".internal", ".lan", ".home.arpa"]
                    .iter()
                    .any(|suffix| name.ends_with(suffix))
        }
    }
}

/// `template` with each `{name}` as a `${NAME}` reference, each noted in
/// `needs` with `input`'s words.
fn references(
    template: &str,
    input: Option<&Input>,
    needs: &mut Vec<Needed>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            return Err(format!(
                "`{}` has an unclosed `{{`",
                template.escape_debug()
            ));
        };
        let var = var_name(&rest[open + 1..open + close])?
            .to_ascii_uppercase()
            .replace('-', "_");
        out.push_str(&format!("${{{var}}}"));
        if !needs.iter().any(|n| n.name == var) {
            needs.push(match input {
                Some(input) => needed(&var, input),
                None => Needed {
                    name: var.clone(),
                    description: None,
                    secret: false,
                    required: true,
                },
            });
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
