//! Which servers `serve` fronts: every configured one (the default), some
//! of them (`--server NAME…`), or exactly one given on the command line
//! (`serve -- CMD ARGS…`, `serve --url URL`), with no config file read —
//! the one-liners that replace `supergateway` and `mcp-remote`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use switchboard_hub::config::{
    Dialect, HttpKind, LoadedConfig, Origin, Scope, ServerConfig, TransportConfig,
};

use crate::failure::Failure;

/// What `serve` fronts besides (or instead of) the configuration.
#[derive(Debug, Clone)]
pub(crate) enum Fronted {
    /// Every configured server.
    All,
    /// Only these configured servers.
    Named(Vec<String>),
    /// This one server, given on the command line; no file is read.
    Given(Box<ServerConfig>),
}

impl Fronted {
    /// From `serve`'s arguments (clap keeps them exclusive).
    pub(crate) fn from_args(
        only: Vec<String>,
        url: Option<String>,
        headers: &[String],
        command: Vec<String>,
    ) -> Result<Self, Failure> {
        let origin = Origin {
            file: PathBuf::from("<command line>"),
            dialect: Dialect::Switchboard,
            scope: Scope::Explicit,
        };
        if let Some(url) = url {
            let mut parsed = BTreeMap::new();
            for header in headers {
                let (name, value) = crate::direct::parse_header(header)?;
                parsed.insert(name.to_owned(), value.to_owned());
            }
            let websocket = url.starts_with("ws://") || url.starts_with("wss://");
            let transport = if websocket {
                TransportConfig::WebSocket {
                    url: url.clone(),
                    headers: parsed,
                }
            } else {
                TransportConfig::Http {
                    url: url.clone(),
                    headers: parsed,
                    kind: HttpKind::Auto,
                }
            };
            let config = ServerConfig::new(name_of_url(&url), transport, origin);
            return Ok(Self::Given(Box::new(config)));
        }
        if let Some((program, args)) = command.split_first() {
            let transport = TransportConfig::Stdio {
                command: program.clone(),
                args: args.to_vec(),
                env: BTreeMap::new(),
                cwd: None,
            };
            let config = ServerConfig::new(name_of_command(&command), transport, origin);
            return Ok(Self::Given(Box::new(config)));
        }
        if only.is_empty() {
            Ok(Self::All)
        } else {
            Ok(Self::Named(only))
        }
    }

    /// Narrows what was loaded to what is fronted (a `Given` server
    /// replaces it all). A name no file configures is an error naming
    /// those that are.
    pub(crate) fn apply(&self, loaded: &mut LoadedConfig) -> Result<(), Failure> {
        match self {
            Self::All => Ok(()),
            Self::Given(config) => {
                *loaded = LoadedConfig::default();
                loaded.servers = vec![(**config).clone()];
                Ok(())
            }
            Self::Named(names) => {
                if let Some(missing) = names.iter().find(|n| loaded.named(n).is_none()) {
                    let known: Vec<String> = loaded
                        .servers
                        .iter()
                        .map(|s| crate::term::sanitize::line(&s.name).into_owned())
                        .collect();
                    return Err(Failure::usage(anyhow::anyhow!(
                        "--server {}: no configured server has that name (configured: {}; \
                         `switchboard list` shows them)",
                        crate::term::sanitize::line(missing),
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    )));
                }
                loaded.servers.retain(|s| names.contains(&s.name));
                Ok(())
            }
        }
    }

    /// Whether the config files are read (and watched) at all.
    pub(crate) fn reads_files(&self) -> bool {
        !matches!(self, Self::Given(_))
    }
}

/// A name for the server at `url`: its host (`mcp.example.com`), or
/// `remote`.
fn name_of_url(url: &str) -> String {
    url.split_once("://")
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split(['/', '?', '#']).next())
        .map(|authority| authority.rsplit('@').next().unwrap_or(authority))
        .map(|host| host.split(':').next().unwrap_or(host).to_owned())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "remote".to_owned())
}

/// A name for the server `command` starts: its package when a runner
/// starts one (`npx -y @scope/server-x@1` → `server-x`, `uvx mcp-foo` →
/// `mcp-foo`), else the program's file name.
fn name_of_command(command: &[String]) -> String {
    const RUNNERS: [&str; 8] = [
        "npx", "uvx", "bunx", "pnpx", "node", "python", "python3", "deno",
    ];
    let base = |text: &str| {
        let last = text.rsplit('/').next().unwrap_or(text);
        // `pkg@1.2.3`, but not a leading `@scope`.
        let last = match last.rfind('@') {
            Some(at) if at > 0 => &last[..at],
            _ => last,
        };
        last.trim_end_matches(".js")
            .trim_end_matches(".py")
            .to_owned()
    };
    let program = command.first().map(|p| base(p)).unwrap_or_default();
    let name = if RUNNERS.contains(&program.as_str()) {
        command
            .iter()
            .skip(1)
            .find(|arg| !arg.starts_with('-'))
            .map(|arg| base(arg))
            .unwrap_or(program)
    } else {
        program
    };
    if name.is_empty() {
        "server".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_given_server_is_named_after_what_it_runs() {
        assert_eq!(
            name_of_command(&strings(&[
                "npx",
                "-y",
                "@modelcontextprotocol/server-everything@2.0.0"
            ])),
            "server-everything"
        );
        assert_eq!(
            name_of_command(&strings(&["uvx", "mcp-server-git"])),
            "mcp-server-git"
        );
        assert_eq!(
            name_of_command(&strings(&["/usr/bin/my-server", "--x"])),
            "my-server"
        );
        assert_eq!(
            name_of_command(&strings(&["node", "dist/index.js"])),
            "index"
        );
        assert_eq!(
            name_of_url("https://user@mcp.example.com:8443/mcp?x=1"),
            "mcp.example.com"
        );
        assert_eq!(name_of_url("http://127.0.0.1:9000/mcp"), "127.0.0.1");
    }
}
