//! Servers from project files (a cloned repository's `.mcp.json`,
//! `.vscode/mcp.json`, `switchboard.toml` …) run only once the user
//! approved them: the question on a terminal, `approve`, `trust` (the
//! approvals) and `untrust`.

use std::io::IsTerminal as _;

use serde_json::{Value, json};
use switchboard_hub::config::{ApprovalChange, Approvals, LoadedConfig, Trust, trust};
use switchboard_hub::{ServerConfig, TransportConfig};

use crate::configure::Context;
use crate::failure::Failure;
use crate::term::output::print_json;

/// Text from a config file as it may be shown on a terminal: control
/// characters (escape sequences among them) written as `\u{…}`.
pub(crate) fn clean(text: &str) -> String {
    crate::term::sanitize::line(text).into_owned()
}

/// One word of a command line, quoted the way a POSIX shell would need it.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./:=@%+,${}".contains(c));
    if plain {
        clean(word)
    } else {
        format!("'{}'", clean(&word.replace('\'', r"'\''")))
    }
}

/// What the server would run or reach, exactly as written.
pub(crate) fn what_runs(server: &ServerConfig) -> String {
    match &server.transport {
        TransportConfig::Stdio { command, args, .. } => std::iter::once(command)
            .chain(args)
            .map(|w| quote(w))
            .collect::<Vec<_>>()
            .join(" "),
        TransportConfig::Http { url, .. } | TransportConfig::WebSocket { url, .. } => clean(url),
        _ => String::new(),
    }
}

/// Where the server is configured: `FILE:LINE` when the line is found.
pub(crate) fn place(server: &ServerConfig) -> String {
    let file = clean(&server.origin.file.display().to_string());
    match trust::locate(server) {
        Some(line) => format!("{file}:{line}"),
        None => file,
    }
}

/// The lines that describe a pending server: file and line, what runs, the
/// working directory, the names of the env vars and headers, and every
/// variable it would receive with where it goes.
pub(crate) fn describe(server: &ServerConfig) -> Vec<String> {
    let mut lines = vec![format!("  file:      {}", place(server))];
    match &server.transport {
        TransportConfig::Stdio { env, cwd, .. } => {
            lines.push(format!("  runs:      {}", what_runs(server)));
            if let Some(cwd) = cwd {
                lines.push(format!(
                    "  in:        {}",
                    clean(&cwd.display().to_string())
                ));
            }
            if !env.is_empty() {
                let names: Vec<String> = env.keys().map(|k| clean(k)).collect();
                lines.push(format!("  env:       {}", names.join(", ")));
            }
        }
        TransportConfig::Http { headers, .. } | TransportConfig::WebSocket { headers, .. } => {
            lines.push(format!("  connects:  {}", what_runs(server)));
            if !headers.is_empty() {
                let names: Vec<String> = headers.keys().map(|k| clean(k)).collect();
                lines.push(format!("  headers:   {}", names.join(", ")));
            }
            if let Some(helper) = &server.headers_helper {
                lines.push(format!(
                    "  runs:      {} (its headers helper, before each connection)",
                    clean(&helper.command)
                ));
            }
        }
        _ => {}
    }
    let changes = server.changes_since_approval();
    if !changes.is_empty() {
        lines.push("  changed since you approved it:".to_owned());
        for change in changes {
            lines.push(format!("    {}", change_shown(change, true)));
        }
    }
    let references = trust::references(server);
    if !references.is_empty() {
        lines.push("  it will receive:".to_owned());
        for r in references {
            lines.push(format!("    ${{{}}} → {}", clean(&r.name), clean(&r.place)));
        }
    }
    lines
}

/// One change since the approval: the field, and its value now as
/// written. `exact` (the approval question, on a terminal) shows the value
/// whole; otherwise (listings and errors, which may reach a log) a literal
/// secret in it is hidden and `${VAR}` references are shown.
fn change_shown(change: &ApprovalChange, exact: bool) -> String {
    let (Some(field), Some(now)) = (change.field(), change.now()) else {
        return clean(&change.to_string());
    };
    let shown = if exact {
        now.to_owned()
    } else {
        match field {
            "url" => crate::configure::redact_url(now),
            "args" => serde_json::from_str::<Vec<String>>(now)
                .map(|args| {
                    crate::configure::redact_args(&args)
                        .iter()
                        .map(|a| quote(a))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default(),
            "transport" | "command" | "cwd" | "headersHelper" => now.to_owned(),
            _ if now.contains('$') => now.to_owned(),
            _ => "a literal value (shown by `switchboard approve`)".to_owned(),
        }
    };
    format!("{}: now `{}`", clean(&change.to_string()), clean(&shown))
}

/// Why a pending server does not run, and the command that approves it.
pub(crate) fn pending_reason(server: &ServerConfig) -> String {
    let changed = matches!(server.trust, Trust::NeedsApproval { changed: true });
    let changes: Vec<String> = server
        .changes_since_approval()
        .iter()
        .map(|c| change_shown(c, false))
        .collect();
    format!(
        "{} {}{}: it runs `{}`; to allow it, run `switchboard approve {}` (or `switchboard approve --all`)",
        if changed {
            "changed since you approved it in"
        } else {
            "from a project file not approved yet:"
        },
        place(server),
        if changes.is_empty() {
            String::new()
        } else {
            format!(" ({})", changes.join("; "))
        },
        shown_safely(server),
        server.name
    )
}

/// What the server runs or reaches with literal secrets hidden (for
/// listings, which may end up in logs; the approval question shows it
/// exactly).
pub(crate) fn shown_safely(server: &ServerConfig) -> String {
    match &server.transport {
        TransportConfig::Stdio { command, args, .. } => std::iter::once(command.clone())
            .chain(crate::configure::redact_args(args))
            .map(|w| quote(&w))
            .collect::<Vec<_>>()
            .join(" "),
        TransportConfig::Http { url, .. } | TransportConfig::WebSocket { url, .. } => {
            clean(&crate::configure::redact_url(url))
        }
        _ => String::new(),
    }
}

/// Whether questions can be asked: stdin and stderr are a terminal.
pub(crate) fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// On a terminal, asks about each pending server (of `only`, when given):
/// approve, approve every pending server of its file, or skip. Approved
/// ones are remembered and marked approved in `loaded`; without a
/// terminal nothing is asked and nothing changes.
pub(crate) fn ask_pending(context: &Context, loaded: &mut LoadedConfig, only: Option<&str>) {
    if !interactive() {
        return;
    }
    let pending: Vec<usize> = loaded
        .servers
        .iter()
        .enumerate()
        .filter(|(_, s)| s.enabled && !s.trust.allows_start())
        .filter(|(_, s)| only.is_none_or(|name| name == s.name))
        .map(|(i, _)| i)
        .collect();
    if pending.is_empty() {
        return;
    }
    let mut approvals = Approvals::open(&loaded.approvals);
    let root = context.locations.project_root().to_path_buf();
    let mut whole_files: Vec<std::path::PathBuf> = Vec::new();
    let mut changed = false;
    for (at, &i) in pending.iter().enumerate() {
        let server = &loaded.servers[i];
        let yes = if whole_files.contains(&server.origin.file) {
            true
        } else {
            eprintln!();
            eprintln!(
                "Server `{}` comes from a project file{}:",
                clean(&server.name),
                if matches!(server.trust, Trust::NeedsApproval { changed: true }) {
                    " and changed since you approved it"
                } else {
                    ""
                }
            );
            for line in describe(server) {
                eprintln!("{line}");
            }
            // This one and those still to be asked about in its file.
            let in_file = pending[at..]
                .iter()
                .filter(|&&j| loaded.servers[j].origin.file == server.origin.file)
                .count();
            let options = vec![
                "approve".to_owned(),
                format!("approve all pending servers in this file ({in_file})"),
                "skip (do not start it)".to_owned(),
            ];
            match inquire::Select::new("Start it?", options.clone())
                .with_starting_cursor(0)
                .prompt()
            {
                Ok(answer) if answer == options[0] => true,
                Ok(answer) if answer == options[1] => {
                    whole_files.push(server.origin.file.clone());
                    true
                }
                _ => false,
            }
        };
        if yes {
            approvals.approve(&root, &loaded.servers[i]);
            loaded.servers[i].trust = Trust::Approved;
            changed = true;
        }
    }
    if changed && let Err(error) = approvals.save() {
        eprintln!("warning: the approvals could not be saved ({error}); you will be asked again");
    }
}

/// `approve NAME… | --all`: approves project servers for this project,
/// showing what each runs.
pub(crate) fn approve(
    context: &Context,
    names: &[String],
    all: bool,
    json: bool,
) -> Result<u8, Failure> {
    let loaded = context.load(json);
    let mut chosen: Vec<&ServerConfig> = Vec::new();
    let mut already = Vec::new();
    for name in names {
        // A project server waiting to replace the user's of this name is
        // what `approve NAME` means; the user's own needs no approval.
        if let Some(waiting) = loaded.awaiting_approval().find(|s| &s.name == name) {
            chosen.push(waiting);
            continue;
        }
        let Some(server) = loaded.get(name) else {
            return Err(crate::configure::not_configured(name, &loaded));
        };
        if server.trust.allows_start() {
            already.push(server);
        } else {
            chosen.push(server);
        }
    }
    if all {
        chosen.extend(
            loaded
                .needs_approval()
                .chain(loaded.awaiting_approval())
                .filter(|s| !names.contains(&s.name)),
        );
    }
    let mut approvals = Approvals::open(&loaded.approvals);
    let root = context.locations.project_root();
    for server in &chosen {
        approvals.approve(root, server);
    }
    if !chosen.is_empty() {
        approvals
            .save()
            .map_err(|e| Failure::usage(anyhow::Error::new(e)))?;
    }
    if json {
        print_json(&json!({
            "project": root.display().to_string(),
            "approved": chosen.iter().map(|s| json!({
                "name": s.name,
                "file": s.origin.file.display().to_string(),
                "runs": what_runs(s),
                "receives": trust::references(s).iter().map(|r| json!({"variable": r.name, "to": r.place})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "alreadyTrusted": already.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        }));
        return Ok(0);
    }
    if chosen.is_empty() && already.is_empty() {
        println!("no server of this project needs approval");
    }
    for server in &chosen {
        println!("approved `{}` for {}:", clean(&server.name), root.display());
        for line in describe(server) {
            println!("{line}");
        }
    }
    for server in already {
        println!(
            "`{}` needs no approval: {}",
            clean(&server.name),
            trusted_because(server)
        );
    }
    Ok(0)
}

fn trusted_because(server: &ServerConfig) -> String {
    match &server.trust {
        Trust::Approved => "already approved for this project".to_owned(),
        Trust::TrustedBy(why) => clean(why),
        _ => format!(
            "it comes from your own file {}",
            server.origin.file.display()
        ),
    }
}

/// `trust`: the approvals of this project (every project with `--all`),
/// and whether each still matches the configuration.
pub(crate) fn list(context: &Context, every_project: bool, json: bool) -> Result<u8, Failure> {
    let loaded = context.load(json);
    let approvals = Approvals::open(&loaded.approvals);
    let root = context.locations.project_root();
    let here = root.to_string_lossy();
    let mut rows = Vec::new();
    for (project, entries) in approvals.projects() {
        if !every_project && project != here {
            continue;
        }
        for approval in entries {
            let state = if project != here {
                "other project"
            } else {
                match loaded.get(&approval.server) {
                    Some(s) if s.trust == Trust::Approved => "approved",
                    Some(s) if !s.trust.allows_start() => "changed since",
                    Some(_) => "approved",
                    None => "not configured now",
                }
            };
            rows.push(json!({
                "project": project,
                "name": approval.server,
                "file": approval.file.display().to_string(),
                "approvedAt": approval.approved_at,
                "state": state,
            }));
        }
    }
    let pending: Vec<Value> = loaded
        .needs_approval()
        .chain(loaded.awaiting_approval())
        .map(|s| json!({"name": s.name, "file": s.origin.file.display().to_string(), "runs": shown_safely(s)}))
        .collect();
    if json {
        print_json(&json!({
            "file": loaded.approvals.display().to_string(),
            "approvals": rows,
            "pending": pending,
        }));
        return Ok(0);
    }
    println!("approvals ({}):", loaded.approvals.display());
    if rows.is_empty() {
        println!(
            "  none{}",
            if every_project {
                ""
            } else {
                " for this project"
            }
        );
    } else {
        let mut table = crate::term::output::table(&["server", "state", "file", "project"]);
        for row in &rows {
            let text = |k: &str| clean(row[k].as_str().unwrap_or_default());
            table.add_row(vec![
                text("name"),
                text("state"),
                text("file"),
                text("project"),
            ]);
        }
        println!("{table}");
    }
    for server in loaded.needs_approval().chain(loaded.awaiting_approval()) {
        println!(
            "pending: `{}` ({}) runs `{}`: `switchboard approve {}`",
            clean(&server.name),
            place(server),
            shown_safely(server),
            server.name
        );
    }
    Ok(0)
}

/// `untrust NAME… | --all`: forgets approvals of this project.
pub(crate) fn untrust(
    context: &Context,
    names: &[String],
    all: bool,
    json: bool,
) -> Result<u8, Failure> {
    let mut approvals = Approvals::open(context.locations.approvals_file());
    let root = context.locations.project_root();
    let targets: Vec<String> = if all {
        approvals
            .in_project(root)
            .into_iter()
            .map(|a| a.server.clone())
            .collect()
    } else {
        names.to_vec()
    };
    let mut revoked = Vec::new();
    let mut unknown = Vec::new();
    for name in targets {
        if approvals.revoke(root, &name) {
            revoked.push(name);
        } else {
            unknown.push(name);
        }
    }
    if !revoked.is_empty() {
        approvals
            .save()
            .map_err(|e| Failure::usage(anyhow::Error::new(e)))?;
    }
    if json {
        print_json(&json!({ "revoked": revoked, "notApproved": unknown }));
    } else {
        for name in &revoked {
            println!(
                "revoked the approval of `{}` for {}",
                clean(name),
                root.display()
            );
        }
        for name in &unknown {
            println!("`{}` has no approval in this project", clean(name));
        }
    }
    Ok(if unknown.is_empty() || !revoked.is_empty() {
        0
    } else {
        crate::failure::exit::USAGE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_from_a_file_never_reach_the_terminal() {
        assert_eq!(clean("a\u{1b}[2Jb"), "a\\x1b[2Jb");
        assert_eq!(clean("x\u{202e}y"), "x\\u202ey");
        assert_eq!(quote("touch /tmp/m"), "'touch /tmp/m'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("${HOME}/x"), "${HOME}/x");
    }

    #[test]
    fn listings_hide_literal_secrets_the_question_shows_them() {
        use switchboard_hub::{Dialect, Origin, Scope};
        let server = ServerConfig::new(
            "s",
            TransportConfig::Stdio {
                command: "srv".into(),
                args: vec!["--token".into(), "sk-live-123".into()],
                env: Default::default(),
                cwd: None,
            },
            Origin {
                file: "/p/.mcp.json".into(),
                dialect: Dialect::ClaudeCode,
                scope: Scope::Project,
            },
        );
        assert!(!shown_safely(&server).contains("sk-live-123"));
        assert!(!pending_reason(&server).contains("sk-live-123"));
        assert!(what_runs(&server).contains("sk-live-123"));
    }
}
