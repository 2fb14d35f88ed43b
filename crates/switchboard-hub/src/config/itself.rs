//! switchboard's own gateway in a host's file: after `claude mcp add
//! switchboard -- switchboard serve` (what `serve --help` suggests),
//! Claude Code's file lists the gateway as one of its servers, and every
//! hub built from that file would start a gateway that starts every
//! server again. Such an entry is recognised by its command and skipped
//! when loading ([`SkipReason::Gateway`](super::SkipReason::Gateway)); a
//! gateway served over HTTP is recognised by its URL when the hub
//! connects (the instance id its `/healthz` answers, see
//! [`Hub::instance_id`](crate::Hub::instance_id)).

use std::path::{Path, PathBuf};

use super::locations::Locations;
use super::model::{ServerConfig, TransportConfig};

/// Why a gateway entry is skipped, as diagnostics and listings say it.
pub(crate) const WHY: &str = "this is switchboard's own gateway (`switchboard serve`); skipped so it does not start every server twice";

/// Whether `server` runs switchboard's gateway: `switchboard serve …` (the
/// program called `switchboard`, or this very executable under any name,
/// with `serve` before any `--`), or `cargo run -p switchboard-cli -- serve
/// …` (`--bin switchboard` too). A wrapper (`npx`, `sh -c`) is not seen
/// through; `serve` refuses to run under another `serve` for those.
pub(crate) fn runs_gateway(server: &ServerConfig, locations: &Locations) -> bool {
    let TransportConfig::Stdio { command, args, .. } = &server.transport else {
        return false;
    };
    let before_dashes =
        |args: &[String]| -> bool { args.iter().take_while(|a| *a != "--").any(|a| a == "serve") };
    // Either separator: a Windows path is recognised wherever the file is
    // read.
    let base = command
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(command)
        .to_ascii_lowercase();
    let program = base.strip_suffix(".exe").unwrap_or(&base);
    if program == "cargo" {
        let Some(dashes) = args.iter().position(|a| a == "--") else {
            return false;
        };
        let (cargo, ours) = args.split_at(dashes);
        let named = cargo.windows(2).any(|pair| {
            matches!(
                (pair[0].as_str(), pair[1].as_str()),
                ("-p" | "--package", "switchboard-cli") | ("--bin", "switchboard")
            )
        }) || cargo
            .iter()
            .any(|a| a == "--package=switchboard-cli" || a == "--bin=switchboard");
        return cargo.first().is_some_and(|a| a == "run") && named && before_dashes(&ours[1..]);
    }
    before_dashes(args) && (program == "switchboard" || is_this_program(command, locations))
}

/// Whether `command` (a path, or a name looked up on `PATH`) is this very
/// executable.
fn is_this_program(command: &str, locations: &Locations) -> bool {
    let Ok(me) = std::env::current_exe().and_then(std::fs::canonicalize) else {
        return false;
    };
    let found = if Path::new(command).components().count() > 1 {
        Some(PathBuf::from(command))
    } else {
        locations.var("PATH").and_then(|path| {
            std::env::split_paths(path)
                .map(|dir| dir.join(command))
                .find(|candidate| candidate.is_file())
        })
    };
    found
        .and_then(|path| std::fs::canonicalize(path).ok())
        .is_some_and(|path| path == me)
}

/// The loopback address of a plain `http://` URL (`localhost` or a
/// loopback IP), where a gateway of this process could be listening; `None`
/// for any other URL.
#[cfg_attr(not(feature = "http-server"), allow(dead_code))]
pub(crate) fn loopback(url: &str) -> Option<(String, u16)> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']')?;
            (host, after.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let port = match port {
        Some(port) => port.parse().ok()?,
        None => 80,
    };
    let host = host.to_ascii_lowercase();
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback.then_some((host, port))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::{Dialect, Origin, Scope};

    fn stdio(command: &str, args: &[&str]) -> ServerConfig {
        ServerConfig::new(
            "s",
            TransportConfig::Stdio {
                command: command.into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
            Origin {
                file: PathBuf::from("/home/u/.claude.json"),
                dialect: Dialect::ClaudeCode,
                scope: Scope::User,
            },
        )
    }

    #[test]
    fn the_gateway_is_known_by_its_command() {
        let at = Locations::new("/home/u", "/w");
        for (command, args) in [
            ("switchboard", &["serve"][..]),
            (
                "/usr/local/bin/switchboard",
                &["serve", "--http", "127.0.0.1:8765"],
            ),
            ("switchboard", &["--config", "team.toml", "serve"]),
            (r"C:\bin\switchboard.exe", &["serve"]),
            (
                "cargo",
                &["run", "-q", "-p", "switchboard-cli", "--", "serve"],
            ),
            (
                "cargo",
                &["run", "--bin=switchboard", "--", "serve", "--http", ":0"],
            ),
        ] {
            assert!(
                runs_gateway(&stdio(command, args), &at),
                "{command} {args:?}"
            );
        }
        for (command, args) in [
            ("switchboard", &["list"][..]),
            ("switchboard", &["call", "s/t", "--", "serve"]),
            ("npx", &["-y", "mcp-server", "serve"]),
            ("cargo", &["run", "-p", "other", "--", "serve"]),
            ("cargo", &["run", "-p", "switchboard-cli", "--", "list"]),
            ("python", &["-m", "switchboard", "serve"]),
        ] {
            assert!(
                !runs_gateway(&stdio(command, args), &at),
                "{command} {args:?}"
            );
        }
        // This very executable, under whatever name it is installed.
        let me = std::env::current_exe().unwrap();
        assert!(runs_gateway(&stdio(me.to_str().unwrap(), &["serve"]), &at));
        let dir = me.parent().unwrap().to_str().unwrap().to_owned();
        let name = me.file_name().unwrap().to_str().unwrap().to_owned();
        let on_path = Locations::new("/home/u", "/w").with_var("PATH", &dir);
        assert!(runs_gateway(&stdio(&name, &["serve"]), &on_path));
        assert!(!runs_gateway(&stdio(&name, &["serve"]), &at));
    }

    #[test]
    fn only_plain_http_loopback_urls_are_probed() {
        assert_eq!(
            loopback("http://127.0.0.1:8765/mcp"),
            Some(("127.0.0.1".into(), 8765))
        );
        assert_eq!(
            loopback("http://localhost/mcp"),
            Some(("localhost".into(), 80))
        );
        assert_eq!(loopback("http://[::1]:9/mcp"), Some(("::1".into(), 9)));
        assert_eq!(
            loopback("http://user:pw@127.0.0.2:1/x"),
            Some(("127.0.0.2".into(), 1))
        );
        assert_eq!(loopback("https://127.0.0.1:8765/mcp"), None);
        assert_eq!(loopback("http://example.com:8765/mcp"), None);
        assert_eq!(loopback("http://10.0.0.1/mcp"), None);
    }
}
