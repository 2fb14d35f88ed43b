//! Completion of the command line at each Tab: configured servers' names
//! (from the configuration files) and their tools (as the hub's state file
//! recorded them on an earlier run) — read, nothing started, nothing
//! printed but the candidates. `completions SHELL` prints the shell's
//! registration, which calls this executable back with [`VAR`] set.

use std::ffi::OsString;

use clap_complete::engine::CompletionCandidate;

use crate::configure::Context;

/// The variable the shell's registration sets when it asks for candidates
/// (not clap's default `COMPLETE`, which another program's may have set).
pub(crate) const VAR: &str = "SWITCHBOARD_COMPLETE";

/// Answers the shell and exits, when its registration called (else
/// returns at once).
pub(crate) fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(super::cli_command)
        .var(VAR)
        .complete();
}

/// `completions SHELL`: the registration script, which asks this
/// executable (by its path now) for the candidates at each Tab.
pub(crate) fn registration(shell: clap_complete::Shell) -> std::io::Result<String> {
    use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Zsh};
    let completer: &dyn EnvCompleter = match shell {
        clap_complete::Shell::Bash => &Bash,
        clap_complete::Shell::Elvish => &Elvish,
        clap_complete::Shell::Fish => &Fish,
        clap_complete::Shell::PowerShell => &Powershell,
        _ => &Zsh,
    };
    let executable = std::env::current_exe()
        .map(OsString::from)
        .unwrap_or_else(|_| OsString::from("switchboard"));
    let mut script = Vec::new();
    completer.write_registration(
        VAR,
        "switchboard",
        "switchboard",
        &executable.to_string_lossy(),
        &mut script,
    )?;
    Ok(String::from_utf8_lossy(&script).into_owned())
}

/// The configured servers (of the working directory's project and the
/// user's files), each with where it is configured.
pub(crate) fn servers() -> Vec<CompletionCandidate> {
    let Ok(context) = Context::new(None) else {
        return Vec::new();
    };
    context
        .load_quiet()
        .servers
        .iter()
        .map(|server| {
            CompletionCandidate::new(crate::term::sanitize::line(&server.name).into_owned()).help(
                Some(
                    crate::term::sanitize::line(&server.origin.file.display().to_string())
                        .into_owned()
                        .into(),
                ),
            )
        })
        .collect()
}

/// The configured servers' tools as `SERVER/TOOL`, each with the start of
/// its description, as the state file recorded them (a server never
/// started has none yet).
pub(crate) fn tools() -> Vec<CompletionCandidate> {
    let Ok(context) = Context::new(None) else {
        return Vec::new();
    };
    let loaded = context.load_quiet();
    let Ok(hub) = switchboard_hub::Hub::builder()
        .servers(loaded.servers.iter().cloned())
        .build()
    else {
        return Vec::new();
    };
    hub.tools()
        .into_iter()
        .map(|listed| {
            let description = listed.tool.description.as_deref().unwrap_or_default();
            let candidate = CompletionCandidate::new(format!(
                "{}/{}",
                crate::term::sanitize::line(&listed.server),
                crate::term::sanitize::line(&listed.tool.name)
            ));
            if description.is_empty() {
                candidate
            } else {
                candidate.help(Some(crate::term::output::short(description, 60).into()))
            }
        })
        .collect()
}
