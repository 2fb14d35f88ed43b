//! `switchboard doctor`: every config file checked without starting
//! anything — what the loader says (with file:line:col), each server's
//! trust state, `${VAR}` references to unset variables, commands that are
//! not on PATH — then, with `--check`, each server started as `list` does.
//! Exits 1 when something is wrong, for CI.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use switchboard_hub::config::{Diagnostic, LoadedConfig, Severity, SkipReason};
use switchboard_hub::{ServerConfig, TransportConfig};

use super::Run;
use crate::cli::seconds;
use crate::configure::{self, Context};
use crate::failure::Failure;
use crate::hub;
use crate::term::sanitize;

/// One thing found, where.
struct Finding {
    severity: Severity,
    file: Option<PathBuf>,
    line: Option<usize>,
    column: Option<usize>,
    server: Option<String>,
    message: String,
}

impl Finding {
    fn from_diagnostic(d: &Diagnostic) -> Self {
        Self {
            severity: d.severity,
            file: d.file.clone(),
            line: d.line,
            column: d.column,
            server: d.server.clone(),
            message: match &d.key {
                Some(key) => format!("key `{key}`: {}", d.message),
                None => d.message.clone(),
            },
        }
    }

    fn for_server(severity: Severity, server: &ServerConfig, message: String) -> Self {
        Self {
            severity,
            file: Some(server.origin.file.clone()),
            line: None,
            column: None,
            server: Some(server.name.clone()),
            message,
        }
    }

    /// Finds the line and column of `needle` in the file, after the
    /// server's name when there is one.
    fn locate(mut self, needle: &str) -> Self {
        if self.line.is_some() {
            return self;
        }
        let Some(text) = self
            .file
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
        else {
            return self;
        };
        let from = self
            .server
            .as_deref()
            .and_then(|name| {
                crate::configure::entry_offset(&text, name).or_else(|| text.find(name))
            })
            .unwrap_or(0);
        let at = text[from..]
            .find(needle)
            .map(|i| from + i)
            .or_else(|| (from > 0).then_some(from));
        if let Some(at) = at {
            let before = &text[..at];
            self.line = Some(before.matches('\n').count() + 1);
            self.column = Some(before.rsplit('\n').next().unwrap_or("").chars().count() + 1);
        }
        self
    }

    fn location(&self) -> String {
        let mut out = String::new();
        if let Some(file) = &self.file {
            out.push_str(&file.display().to_string());
            if let Some(line) = self.line {
                out.push_str(&format!(":{line}"));
                if let Some(column) = self.column {
                    out.push_str(&format!(":{column}"));
                }
            }
        }
        out
    }

    fn severity_name(&self) -> &'static str {
        match self.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            _ => "error",
        }
    }

    fn json(&self) -> Value {
        json!({
            "severity": self.severity_name(),
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "server": self.server,
            "message": self.message,
        })
    }
}

/// `doctor [--check]`.
pub(crate) async fn doctor(
    context: &Context,
    check: bool,
    json: bool,
    list: impl std::future::Future<Output = Result<u8, Failure>>,
) -> Result<u8, Failure> {
    let loaded = context.load_quiet();
    let mut findings: Vec<Finding> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.severity != Severity::Info)
        .map(Finding::from_diagnostic)
        .collect();
    findings.extend(servers(context, &loaded));
    // A host's entry for the gateway is how the gateway is used: said, not
    // a problem.
    findings.extend(
        loaded
            .skipped
            .iter()
            .filter(|s| s.reason == SkipReason::Gateway)
            .map(|s| {
                Finding::for_server(
                    Severity::Info,
                    &s.server,
                    crate::configure::skip_reason(&s.reason, None, None),
                )
            }),
    );
    let bad = findings
        .iter()
        .filter(|f| f.severity != Severity::Info)
        .count();
    if json {
        crate::term::output::print_json(&json!({
            "files": loaded.files,
            "servers": loaded.servers.len(),
            "findings": findings.iter().map(Finding::json).collect::<Vec<_>>(),
            "ok": bad == 0,
        }));
    } else {
        println!(
            "{} config file(s), {} server(s):",
            loaded.files.len(),
            loaded.servers.len()
        );
        for file in &loaded.files {
            println!("  {}", sanitize::line(&file.display().to_string()));
        }
        for finding in &findings {
            let location = finding.location();
            let mut line = format!("{}: ", finding.severity_name());
            if !location.is_empty() {
                line.push_str(&location);
                line.push_str(": ");
            }
            if let Some(server) = &finding.server {
                line.push_str(&format!("server `{server}`: "));
            }
            line.push_str(&finding.message);
            println!("{}", sanitize::term(&line));
        }
        if bad == 0 {
            println!("no problems found");
        } else {
            println!("{} found", crate::term::output::count(bad, "problem"));
        }
    }
    let mut code = if bad == 0 {
        0
    } else {
        crate::failure::exit::USAGE
    };
    if check {
        if !json {
            println!();
        }
        let listed = list.await?;
        if code == 0 {
            code = listed;
        }
    }
    Ok(code)
}

/// What `doctor` finds about server `name`, as its JSON findings (the
/// console's connection doctor shows them).
pub(crate) fn findings(context: &Context, loaded: &LoadedConfig, name: &str) -> Vec<Value> {
    let diagnostics = loaded
        .diagnostics
        .iter()
        .filter(|d| d.severity != Severity::Info && d.server.as_deref() == Some(name))
        .map(Finding::from_diagnostic);
    diagnostics
        .chain(servers(context, loaded))
        .filter(|f| f.server.as_deref() == Some(name))
        .map(|f| f.json())
        .collect()
}

/// Each server's trust state, unset variables and missing command.
fn servers(context: &Context, loaded: &LoadedConfig) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut expander = loaded.expander(&context.locations);
    for server in &loaded.servers {
        if !server.enabled {
            findings.push(
                Finding::for_server(Severity::Info, server, "disabled".to_owned())
                    .locate(&server.name),
            );
            continue;
        }
        if !server.trust.allows_start() {
            findings.push(
                Finding::for_server(
                    Severity::Info,
                    server,
                    format!("not started: {}", crate::approve::pending_reason(server)),
                )
                .locate(&server.name),
            );
            continue;
        }
        let expanded = match expander.expand(server) {
            Ok(expanded) => expanded,
            Err(error) => {
                findings.push(
                    Finding::for_server(Severity::Error, server, error.to_string())
                        .locate(&server.name),
                );
                continue;
            }
        };
        for warning in &expanded.warnings {
            // The reference as written is quoted first in the message.
            let reference = warning
                .message
                .split('`')
                .nth(1)
                .unwrap_or(&server.name)
                .to_owned();
            findings.push(Finding::from_diagnostic(warning).locate(&reference));
        }
        if let TransportConfig::Stdio {
            command, env, cwd, ..
        } = &expanded.config.transport
            && !on_path(command, env.get("PATH").map(String::as_str), cwd.as_deref())
        {
            findings.push(
                Finding::for_server(
                    Severity::Error,
                    server,
                    format!(
                        "the command `{command}` is not found{}: install it, or give its full path",
                        if command.contains('/') {
                            ""
                        } else {
                            " on PATH"
                        }
                    ),
                )
                .locate(command),
            );
        }
    }
    findings
}

/// Whether `command` can be run: a path that exists, or a name found on
/// `path` (the server's own PATH, else this process's).
pub(crate) fn on_path(command: &str, path: Option<&str>, cwd: Option<&Path>) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    let runnable = |file: &Path| {
        std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let file = Path::new(command);
        return match cwd {
            Some(dir) if file.is_relative() => runnable(&dir.join(file)),
            _ => runnable(file),
        };
    }
    let path = path
        .map(std::ffi::OsString::from)
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    std::env::split_paths(&path).any(|dir| runnable(&dir.join(command)))
}

/// `doctor`: the config files checked, then (`--check`) every server started.
pub(crate) async fn run(
    run: Run<'_>,
    check: bool,
    timeout: f64,
    json: bool,
) -> Result<u8, Failure> {
    let timeout = seconds("--timeout", timeout)?;
    let context = configure::Context::new(run.config)?;
    let list = hub::list(
        &context,
        json,
        timeout,
        run.creds,
        run.servers,
        hub::ListView {
            strict: true,
            ..hub::ListView::default()
        },
    );
    doctor(&context, check, json, list).await
}
