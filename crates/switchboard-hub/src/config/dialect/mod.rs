//! Reading one file of one dialect into [`ServerConfig`]s.
//!
//! Every format is first parsed into a `serde_json::Value` (a syntax error
//! is reported with its line and column), then each server entry is read
//! on its own: a bad entry is one error diagnostic (file, line of the
//! entry, key, what is wrong) and the other entries still load.

pub mod codex;
pub mod goose;
pub mod json;
pub mod switchboard;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use super::diag::{Diagnostic, find_entry, line_col};
use super::model::{Dialect, Origin, Scope, ServerConfig};
use super::policy::{Policy, Rule};

pub(crate) use switchboard::rule_from_table;

/// A VS Code `inputs` entry: a value asked of the user the first time a
/// server that names `${input:ID}` is started.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputSpec {
    /// The id `${input:ID}` names.
    pub id: String,
    /// The prompt shown.
    pub description: String,
    /// Whether the answer is a secret (shown masked).
    pub password: bool,
    /// The value offered.
    pub default: Option<String>,
}

/// What one file gave.
#[derive(Debug, Default)]
pub(crate) struct FileLoad {
    pub(crate) servers: Vec<ServerConfig>,
    pub(crate) diagnostics: Vec<Diagnostic>,
    pub(crate) inputs: Vec<InputSpec>,
    pub(crate) policy: Policy,
    /// Servers this file switches off wherever they are configured
    /// (`~/.claude.json`'s `disabledMcpServers`, `disabledMcpjsonServers`).
    pub(crate) disable: Vec<String>,
    /// `.mcp.json` servers the user allowed in Claude Code for this
    /// project (`~/.claude.json`'s `enabledMcpjsonServers`).
    pub(crate) enable: Vec<String>,
    /// Claude Code's `enableAllProjectMcpServers` for this project.
    pub(crate) enable_all: bool,
    /// Projects Codex trusts (`[projects."/path"] trust_level = "trusted"`).
    pub(crate) trusted_projects: Vec<std::path::PathBuf>,
    /// switchboard's `[sampling]` table, as the file says it (whether it
    /// counts depends on the file's scope).
    pub(crate) sampling: Option<super::model::SamplingSettings>,
}

/// Reads `text`, the content of `file`, as `dialect` in `scope`.
/// `projects` (the working directory, then the project root) pick
/// `~/.claude.json`'s project section: the first one it has.
pub(crate) fn parse(
    file: &Path,
    text: &str,
    dialect: Dialect,
    scope: Scope,
    projects: &[&Path],
) -> FileLoad {
    let ctx = Ctx {
        file,
        text,
        dialect,
        scope,
    };
    let mut out = FileLoad::default();
    match dialect {
        Dialect::Switchboard => switchboard::parse(&ctx, &mut out),
        Dialect::Codex => codex::parse(&ctx, &mut out),
        Dialect::Goose => goose::parse(&ctx, &mut out),
        Dialect::ClaudeCode
        | Dialect::ClaudeDesktop
        | Dialect::Cursor
        | Dialect::VsCode
        | Dialect::Gemini => json::parse(&ctx, &mut out, projects),
    }
    // A server must be named: `call SERVER/TOOL`, namespacing and
    // approvals all key on it (`"": {…}` in JSON, an anchor-only key in
    // YAML).
    out.servers.retain(|server| {
        let named = !server.name.trim().is_empty();
        if !named {
            out.diagnostics.push(
                Diagnostic::error("a server with an empty name is not loaded; give it a name")
                    .in_file(file),
            );
        }
        named
    });
    out
}

/// Parses JSON with comments and trailing commas, as the JSON dialects do.
pub(crate) fn json_value(text: &str) -> Result<Value, String> {
    json::parse_jsonc(text).map_err(|e| e.to_string())
}

/// Guesses a file's dialect from its name and, for JSON, its top-level
/// keys (for `--config FILE`).
pub(crate) fn sniff(file: &Path, text: &str) -> Dialect {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if name.ends_with(".yaml") || name.ends_with(".yml") {
        return Dialect::Goose;
    }
    if name.ends_with(".toml") {
        return if text.contains("mcp_servers") {
            Dialect::Codex
        } else {
            Dialect::Switchboard
        };
    }
    if name == "claude_desktop_config.json" {
        return Dialect::ClaudeDesktop;
    }
    if name == "settings.json" {
        return Dialect::Gemini;
    }
    let value = json::parse_jsonc(text).ok();
    match value.as_ref().and_then(Value::as_object) {
        Some(o) if o.contains_key("servers") && !o.contains_key("mcpServers") => Dialect::VsCode,
        _ => Dialect::ClaudeCode,
    }
}

pub(crate) struct Ctx<'a> {
    pub(crate) file: &'a Path,
    pub(crate) text: &'a str,
    pub(crate) dialect: Dialect,
    pub(crate) scope: Scope,
}

impl Ctx<'_> {
    pub(crate) fn origin(&self, scope: Scope) -> Origin {
        Origin {
            file: self.file.to_path_buf(),
            dialect: self.dialect,
            scope,
        }
    }

    /// A syntax error at byte `offset`.
    pub(crate) fn syntax(&self, offset: usize, message: impl std::fmt::Display) -> Diagnostic {
        let (line, column) = line_col(self.text, offset);
        self.syntax_at(line, column, message)
    }

    pub(crate) fn syntax_at(
        &self,
        line: usize,
        column: usize,
        message: impl std::fmt::Display,
    ) -> Diagnostic {
        Diagnostic::error(format!(
            "not valid {}: {message}; fix the file (none of its servers loads until then)",
            self.format_name()
        ))
        .in_file(self.file)
        .at(line, column)
    }

    fn format_name(&self) -> &'static str {
        match self.dialect {
            Dialect::Switchboard | Dialect::Codex => "TOML",
            Dialect::Goose => "YAML",
            _ => "JSON",
        }
    }

    /// An error about `key` of server `server`.
    pub(crate) fn entry_error(&self, server: &str, key: Option<&str>, msg: String) -> Diagnostic {
        let mut d = Diagnostic::error(msg)
            .in_file(self.file)
            .server(server)
            .at_opt(find_entry(self.text, server, key));
        if let Some(key) = key {
            d = d.key(key);
        }
        d
    }

    /// An error about the file's structure (a top-level key of the wrong
    /// type or shape).
    pub(crate) fn file_error(&self, key: &str, msg: String) -> Diagnostic {
        let position = find_entry(self.text, key, None);
        Diagnostic::error(msg)
            .in_file(self.file)
            .key(key)
            .at_opt(position)
    }

    pub(crate) fn obj<'v>(&'v self, server: &'v str, map: &'v Map<String, Value>) -> Obj<'v> {
        Obj {
            ctx: self,
            server,
            map,
        }
    }
}

/// The unit a dialect writes timeouts in.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Unit {
    Millis,
    Secs,
}

/// One server's entry, read key by key with errors that name the key.
pub(crate) struct Obj<'a> {
    ctx: &'a Ctx<'a>,
    pub(crate) server: &'a str,
    pub(crate) map: &'a Map<String, Value>,
}

type R<T> = Result<T, Diagnostic>;

impl Obj<'_> {
    pub(crate) fn err(&self, key: &str, msg: impl Into<String>) -> Diagnostic {
        self.ctx.entry_error(self.server, Some(key), msg.into())
    }

    /// An entry that names both a command and a URL.
    pub(crate) fn both_command_and_url(&self) -> Diagnostic {
        self.err(
            "url",
            "both `command` and `url` are given; keep one (a local or a remote server)",
        )
    }

    /// An entry that names neither a command nor a URL.
    pub(crate) fn neither_command_nor_url(&self) -> Diagnostic {
        self.err(
            "command",
            "neither `command` (a local server) nor `url` (a remote one) is given",
        )
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
    }

    pub(crate) fn str(&self, key: &str) -> R<Option<String>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.err(key, format!("expected a string, found {}", kind(other)))),
        }
    }

    pub(crate) fn strings(&self, key: &str) -> R<Option<Vec<String>>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(self.err(
                        &format!("{key}[{i}]"),
                        format!("expected a string, found {}", kind(other)),
                    )),
                })
                .collect::<R<Vec<_>>>()
                .map(Some),
            Some(other) => Err(self.err(
                key,
                format!("expected an array of strings, found {}", kind(other)),
            )),
        }
    }

    /// A table of strings; numbers and booleans are taken as written
    /// (`PORT = 8080` means `"8080"`).
    pub(crate) fn string_map(&self, key: &str) -> R<BTreeMap<String, String>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(o)) => o
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    Value::Number(_) | Value::Bool(_) => Ok((k.clone(), v.to_string())),
                    other => Err(self.err(
                        &format!("{key}.{k}"),
                        format!("expected a string, found {}", kind(other)),
                    )),
                })
                .collect(),
            Some(other) => Err(self.err(
                key,
                format!("expected a table of strings, found {}", kind(other)),
            )),
        }
    }

    pub(crate) fn bool(&self, key: &str) -> R<Option<bool>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.err(
                key,
                format!("expected true or false, found {}", kind(other)),
            )),
        }
    }

    pub(crate) fn number(&self, key: &str) -> R<Option<f64>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(f) if f >= 0.0 && f.is_finite() => Ok(Some(f)),
                _ => Err(self.err(key, format!("expected a number ≥ 0, found {n}"))),
            },
            Some(other) => Err(self.err(key, format!("expected a number, found {}", kind(other)))),
        }
    }

    /// A timeout in `unit`; above [`MAX_DURATION`] it is clamped to it
    /// (`1e300` means "a long time", not a reason to fail or overflow).
    pub(crate) fn duration(&self, key: &str, unit: Unit) -> R<Option<Duration>> {
        Ok(self.number(key)?.map(|n| {
            let secs = match unit {
                Unit::Millis => n / 1000.0,
                Unit::Secs => n,
            };
            clamp_secs(secs)
        }))
    }

    /// A whole number of things (calls, items): 0 to a million.
    pub(crate) fn count(&self, key: &str) -> R<Option<usize>> {
        match self.number(key)? {
            None => Ok(None),
            Some(n) if n.fract() == 0.0 && n <= 1_000_000.0 => Ok(Some(n as usize)),
            Some(n) => Err(self.err(
                key,
                format!("expected a whole number up to 1000000, found {n}"),
            )),
        }
    }

    pub(crate) fn port(&self, key: &str) -> R<Option<u16>> {
        match self.number(key)? {
            None => Ok(None),
            Some(n) if n.fract() == 0.0 && (1.0..=65535.0).contains(&n) => Ok(Some(n as u16)),
            Some(n) => Err(self.err(key, format!("expected a port (1-65535), found {n}"))),
        }
    }
}

/// The longest timeout a config file can set (365 days); larger values
/// are clamped to it, so that no deadline computed from one can overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// `secs` (finite and ≥ 0 or not) as a duration within [`MAX_DURATION`]:
/// NaN and negative values are zero.
pub(crate) fn clamp_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else if secs >= MAX_DURATION.as_secs_f64() {
        MAX_DURATION
    } else {
        Duration::from_secs_f64(secs)
    }
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a table",
    }
}

/// Reads a list of policy rules (`{name}`, `{command}`, `{url}` or
/// Claude Code's `{serverName}`, `{serverCommand}`, `{serverUrl}`).
pub(crate) fn rules(ctx: &Ctx<'_>, key: &str, value: &Value) -> R<Vec<Rule>> {
    let Value::Array(items) = value else {
        return Err(ctx.file_error(
            key,
            format!("expected an array of rules, found {}", kind(value)),
        ));
    };
    items
        .iter()
        .map(|item| {
            rule_from_table(item).ok_or_else(|| {
                ctx.file_error(
                    key,
                    format!(
                        "a rule is a table with one of name, command (an array) or url (a glob), found {item}"
                    ),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `oauth` block's `issuer` (where a client secret may go) is read
    /// from switchboard's TOML and the JSON dialects, and signed by the
    /// approval key.
    #[test]
    fn the_oauth_issuer_is_read_and_signed() {
        let toml = r#"[servers.docs]
url = "https://docs.example/mcp"
oauth = { client_id = "sb", client_secret = "${SECRET}", issuer = "https://as.example" }
"#;
        let json = r#"{"mcpServers": {"docs": {"type": "http", "url": "https://docs.example/mcp",
            "oauth": {"clientId": "sb", "clientSecret": "${SECRET}", "issuer": "https://as.example"}}}}"#;
        for (file, text, dialect) in [
            ("switchboard.toml", toml, Dialect::Switchboard),
            (".mcp.json", json, Dialect::ClaudeCode),
        ] {
            let load = parse(Path::new(file), text, dialect, Scope::Project, &[]);
            assert!(
                load.diagnostics.is_empty(),
                "{file}: {:?}",
                load.diagnostics
            );
            let server = &load.servers[0];
            let oauth = server.oauth.as_ref().expect("oauth");
            assert_eq!(
                oauth.issuer.as_deref(),
                Some("https://as.example"),
                "{file}"
            );
            let mut other = server.clone();
            other.oauth.as_mut().unwrap().issuer = Some("https://evil.example".into());
            assert_ne!(
                crate::config::trust::approval_key(server),
                crate::config::trust::approval_key(&other),
                "{file}: a changed issuer needs a new approval"
            );
        }
    }
}
