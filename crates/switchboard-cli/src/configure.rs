//! Configured servers: where they are read from (`Locations`, `--config`),
//! and the commands that change or show them: `add`, `add-json`,
//! `import`, `remove`, `enable`, `disable`, `get`.
//!
//! Servers are written to switchboard's own TOML file for the chosen scope
//! (`-s local|project|user`) or to the `--config` file. `remove`,
//! `enable` and `disable` edit the file the server is configured in,
//! whichever client's it is (and say which).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};
use serde_json::{Value, json};
use switchboard_hub::config::{
    self, Diagnostic, LoadOptions, LoadedConfig, Locations, Severity, SkipReason, Target,
};
use switchboard_hub::{Dialect, HttpKind, Origin, Scope, ServerConfig, TransportConfig};

use crate::Failure;
use crate::output::print_json;

/// Where configuration is read from: the process's home and working
/// directory, and the `--config` file if one was given.
pub(crate) struct Context {
    pub(crate) locations: Locations,
    pub(crate) explicit: Option<PathBuf>,
}

impl Context {
    pub(crate) fn new(explicit: Option<PathBuf>) -> Result<Self, Failure> {
        let locations = Locations::from_process()
            .map_err(|e| Failure::usage(anyhow!("cannot find the configuration files: {e}")))?;
        Ok(Self {
            locations,
            explicit,
        })
    }

    /// Every configured server, the load's diagnostics printed on stderr
    /// (infos about servers the listing shows as skipped are left out).
    pub(crate) fn load(&self, json: bool) -> LoadedConfig {
        let mut options = LoadOptions::new();
        if let Some(file) = &self.explicit {
            options = options.with_config(file);
        }
        let loaded = config::load(&self.locations, &options);
        let skipped: Vec<&str> = loaded
            .skipped
            .iter()
            .map(|s| s.server.name.as_str())
            .collect();
        for diagnostic in &loaded.diagnostics {
            if diagnostic.severity == Severity::Info
                && diagnostic
                    .server
                    .as_deref()
                    .is_some_and(|s| skipped.contains(&s))
            {
                continue;
            }
            report_diagnostic(diagnostic, json);
        }
        loaded
    }

    /// Every configured server, nothing printed.
    pub(crate) fn load_quiet(&self) -> LoadedConfig {
        let mut options = LoadOptions::new();
        if let Some(file) = &self.explicit {
            options = options.with_config(file);
        }
        config::load(&self.locations, &options)
    }

    /// The file `add` and `import` write: the `--config` file, else
    /// switchboard's file for `scope`.
    fn target(&self, scope: ScopeArg) -> (Target, Scope) {
        match &self.explicit {
            Some(file) => (Target::new(file, dialect_for(file)), Scope::Explicit),
            None => (
                Target::switchboard(&self.locations, scope.into())
                    .expect("local, project and user have a switchboard file"),
                scope.into(),
            ),
        }
    }
}

/// A `--config` file written by `add`: switchboard's TOML unless its name
/// says JSON (then Claude Code's `mcpServers` shape).
fn dialect_for(file: &Path) -> Dialect {
    match file.extension().and_then(|e| e.to_str()) {
        Some("json") => Dialect::ClaudeCode,
        _ => Dialect::Switchboard,
    }
}

/// One diagnostic on stderr: `warning: FILE:LINE:COL: …`, or a JSON line
/// with `--json`.
pub(crate) fn report_diagnostic(diagnostic: &Diagnostic, json: bool) {
    let severity = match diagnostic.severity {
        Severity::Info => "info",
        Severity::Warning => "warning",
        _ => "error",
    };
    if json {
        let mut object = json!({ "severity": severity, "message": diagnostic.to_string() });
        if let Some(file) = &diagnostic.file {
            object["file"] = json!(file.display().to_string());
        }
        if let Some(line) = diagnostic.line {
            object["line"] = json!(line);
        }
        if let Some(column) = diagnostic.column {
            object["column"] = json!(column);
        }
        if let Some(server) = &diagnostic.server {
            object["server"] = json!(server);
        }
        eprintln!("{}", json!({ "diagnostic": object }));
    } else {
        eprintln!("{severity}: {diagnostic}");
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScopeArg {
    /// This project, for you only (ROOT/switchboard.local.toml).
    Local,
    /// This project, checked in (ROOT/switchboard.toml).
    Project,
    /// Every project (~/.config/switchboard/config.toml on Linux).
    User,
}

impl From<ScopeArg> for Scope {
    fn from(scope: ScopeArg) -> Self {
        match scope {
            ScopeArg::Local => Scope::Local,
            ScopeArg::Project => Scope::Project,
            ScopeArg::User => Scope::User,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClientArg {
    /// Claude Desktop's claude_desktop_config.json.
    ClaudeDesktop,
    /// Claude Code's .mcp.json files and ~/.claude.json.
    ClaudeCode,
    /// VS Code's mcp.json (user and .vscode/).
    #[value(name = "vscode")]
    VsCode,
    /// Cursor's mcp.json (~/.cursor and .cursor/).
    Cursor,
    /// Codex's config.toml.
    Codex,
    /// Gemini CLI's settings.json.
    Gemini,
    /// goose's config.yaml.
    Goose,
}

impl From<ClientArg> for Dialect {
    fn from(client: ClientArg) -> Self {
        match client {
            ClientArg::ClaudeDesktop => Dialect::ClaudeDesktop,
            ClientArg::ClaudeCode => Dialect::ClaudeCode,
            ClientArg::VsCode => Dialect::VsCode,
            ClientArg::Cursor => Dialect::Cursor,
            ClientArg::Codex => Dialect::Codex,
            ClientArg::Gemini => Dialect::Gemini,
            ClientArg::Goose => Dialect::Goose,
        }
    }
}

/// How a file's format is called in messages.
pub(crate) fn dialect_name(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Switchboard => "switchboard",
        Dialect::ClaudeCode => "Claude Code",
        Dialect::ClaudeDesktop => "Claude Desktop",
        Dialect::VsCode => "VS Code",
        Dialect::Cursor => "Cursor",
        Dialect::Codex => "Codex",
        Dialect::Gemini => "Gemini CLI",
        Dialect::Goose => "goose",
        _ => "another client",
    }
}

/// The scope as `--json` and tables show it.
pub(crate) fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Explicit => "explicit",
        Scope::Local => "local",
        Scope::Project => "project",
        Scope::User => "user",
        Scope::Managed => "managed",
        _ => "other",
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub(crate) enum AddTransport {
    /// Streamable HTTP, falling back to legacy HTTP+SSE.
    Http,
    /// The legacy HTTP+SSE transport.
    Sse,
    /// WebSocket.
    Ws,
}

#[derive(clap::Args, Debug)]
pub(crate) struct AddArgs {
    /// Where to write it (default local: this project, for you only).
    #[arg(short = 's', long, value_enum)]
    scope: Option<ScopeArg>,
    /// An environment variable for the server, KEY=VALUE (repeatable).
    /// Write secrets as references, '${VAR}', so the file never holds them.
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// The server's name (letters, digits, '-', '_', '.').
    name: String,
    /// A remote server's URL, instead of a command.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    url: Option<String>,
    /// A header for the remote server, 'Name: value' (repeatable).
    #[arg(
        short = 'H',
        long = "header",
        value_name = "NAME: VALUE",
        requires = "url"
    )]
    headers: Vec<String>,
    /// The remote transport (default: detect).
    #[arg(long, value_enum, requires = "url")]
    transport: Option<AddTransport>,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND", required_unless_present = "url")]
    command: Vec<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

fn check_name(name: &str) -> anyhow::Result<()> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || "-_.".contains(c))
    {
        bail!(
            "`{name}` cannot be a server name: use letters, digits, '-', '_' and '.' \
             (a '/' would make `call SERVER/TOOL` ambiguous)"
        );
    }
    Ok(())
}

fn pairs(
    items: &[String],
    separator: char,
    flag: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|item| {
            let (key, value) = item
                .split_once(separator)
                .filter(|(k, _)| !k.trim().is_empty())
                .with_context(|| {
                    format!(
                        "{flag} {item:?} is not {}",
                        match separator {
                            '=' => "KEY=VALUE",
                            _ => "'Name: value'",
                        }
                    )
                })?;
            Ok((key.trim().to_owned(), value.trim_start().to_owned()))
        })
        .collect()
}

pub(crate) fn add(context: &Context, args: AddArgs) -> Result<u8, Failure> {
    check_name(&args.name).map_err(Failure::usage)?;
    let target = context.target(args.scope.unwrap_or(ScopeArg::Local));
    let transport = match &args.url {
        Some(url) => {
            let headers = pairs(&args.headers, ':', "--header").map_err(Failure::usage)?;
            let websocket = matches!(args.transport, Some(AddTransport::Ws))
                || (args.transport.is_none()
                    && (url.starts_with("ws://") || url.starts_with("wss://")));
            if websocket {
                TransportConfig::WebSocket {
                    url: url.clone(),
                    headers,
                }
            } else {
                TransportConfig::Http {
                    url: url.clone(),
                    headers,
                    kind: match args.transport {
                        Some(AddTransport::Sse) => HttpKind::Sse,
                        Some(AddTransport::Http) => HttpKind::Streamable,
                        _ => HttpKind::Auto,
                    },
                }
            }
        }
        None => {
            let (command, rest) = args
                .command
                .split_first()
                .context("no server command given after `--` (or give --url URL)")
                .map_err(Failure::usage)?;
            TransportConfig::Stdio {
                command: command.clone(),
                args: rest.to_vec(),
                env: pairs(&args.env, '=', "--env").map_err(Failure::usage)?,
                cwd: None,
            }
        }
    };
    if args.url.is_some() && !args.env.is_empty() {
        return Err(Failure::usage(anyhow!(
            "--env is for a local server's process; a remote server takes --header"
        )));
    }
    let server = ServerConfig::new(&args.name, transport, origin(&target));
    write_new(context, &target.0, server, args.json)
}

fn origin((target, scope): &(Target, Scope)) -> Origin {
    Origin {
        file: target.file.clone(),
        dialect: target.dialect,
        scope: *scope,
    }
}

/// Adds `server` to `target`, saying where, and what it shadows.
fn write_new(
    context: &Context,
    target: &Target,
    server: ServerConfig,
    json: bool,
) -> Result<u8, Failure> {
    let before = config::load(&context.locations, &LoadOptions::new());
    let edited = config::add_server(&context.locations, target, &server)
        .map_err(|e| Failure::usage(e.into()))?;
    // The user typed this server: in a project file it is approved as
    // written.
    crate::approve::remember_written(context, &server.name, &edited.file);
    let other = before
        .get(&server.name)
        .filter(|s| s.origin.file != edited.file)
        .map(|s| s.origin.file.display().to_string());
    if json {
        print_json(&json!({
            "added": server.name,
            "file": edited.file.display().to_string(),
            "note": edited.note,
            "alsoConfiguredIn": other,
        }));
    } else {
        println!("added `{}` to {}", server.name, edited.file.display());
        if let Some(note) = &edited.note {
            println!("note: {note}");
        }
        if let Some(file) = other {
            println!(
                "note: `{}` is also configured in {file}; the one with the higher scope \
                 (local > project > user) is used",
                server.name
            );
        }
    }
    Ok(0)
}

/// `add-json NAME JSON`: a Claude Code style entry (`command`/`args`/
/// `env`, or `type` and `url`/`headers`), read as Claude Code reads it.
pub(crate) fn add_json(
    context: &Context,
    name: &str,
    text: &str,
    scope: Option<ScopeArg>,
    json: bool,
) -> Result<u8, Failure> {
    check_name(name).map_err(Failure::usage)?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| anyhow!("the server JSON is not valid: {e}"))
        .map_err(Failure::usage)?;
    if !value.is_object() {
        return Err(Failure::usage(anyhow!(
            "the server JSON must be an object such as {{\"command\": \"npx\", \"args\": [\"-y\", \"server\"]}}"
        )));
    }
    // Read through the Claude Code reader, so every key means what it
    // means there; the entry goes on the second line of a scratch file.
    let scratch = std::env::temp_dir().join(format!(
        "switchboard-add-json-{}-{}.json",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let wrapped = format!(
        "{{\"mcpServers\": {{{}:\n{text}\n}}}}\n",
        Value::String(name.to_owned())
    );
    // The entry may hold secrets: a new file only this user can read,
    // never one planted at that name in the shared temporary directory.
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(&scratch)
        .and_then(|mut f| std::io::Write::write_all(&mut f, wrapped.as_bytes()))
        .with_context(|| format!("cannot write {}", scratch.display()))
        .map_err(Failure::usage)?;
    let loaded = config::load_file(
        &context.locations,
        &scratch,
        Dialect::ClaudeCode,
        Scope::User,
    );
    let _ = std::fs::remove_file(&scratch);
    let mut problems = Vec::new();
    for d in &loaded.diagnostics {
        let mut d = d.clone();
        d.file = None;
        d.server = None;
        let at = d
            .line
            .map(|l| format!(" (line {})", l.saturating_sub(1).max(1)));
        d.line = None;
        d.column = None;
        let line = format!("{d}{}", at.unwrap_or_default());
        if d.is_error() {
            problems.push(line);
        } else {
            eprintln!("warning: {line}");
        }
    }
    let Some(mut server) = loaded
        .servers
        .into_iter()
        .next()
        .filter(|_| problems.is_empty())
    else {
        return Err(Failure::usage(anyhow!(
            "the server JSON cannot be used: {}",
            if problems.is_empty() {
                "it is not a server entry".to_owned()
            } else {
                problems.join("; ")
            }
        )));
    };
    let target = context.target(scope.unwrap_or(ScopeArg::Local));
    server.origin = origin(&target);
    write_new(context, &target.0, server, json)
}

/// `import --from CLIENT`: copies that client's servers into switchboard's
/// file, references as written; a name or server already there is
/// skipped and reported.
pub(crate) fn import(
    context: &Context,
    from: ClientArg,
    scope: Option<ScopeArg>,
    json: bool,
) -> Result<u8, Failure> {
    let dialect = Dialect::from(from);
    let sources: Vec<(PathBuf, Scope)> = context
        .locations
        .standard_files()
        .into_iter()
        .filter(|(_, d, _)| *d == dialect)
        .map(|(f, _, s)| (f, s))
        .collect();
    let present: Vec<&(PathBuf, Scope)> = sources.iter().filter(|(f, _)| f.is_file()).collect();
    if present.is_empty() {
        let looked: Vec<String> = sources
            .iter()
            .map(|(f, _)| f.display().to_string())
            .collect();
        return Err(Failure::usage(anyhow!(
            "no {} configuration found (looked for {})",
            dialect_name(dialect),
            looked.join(", ")
        )));
    }
    let destination = context.target(scope.unwrap_or(ScopeArg::User));
    let target = &destination.0;
    let existing = config::load_file(
        &context.locations,
        &target.file,
        target.dialect,
        Scope::User,
    );
    if target.file.exists() && existing.has_errors() {
        for d in existing.diagnostics.iter().filter(|d| d.is_error()) {
            report_diagnostic(d, json);
        }
        return Err(Failure::usage(anyhow!(
            "{} has errors; fix them before importing into it",
            target.file.display()
        )));
    }
    let mut taken: Vec<(String, String)> = existing
        .servers
        .iter()
        .map(|s| (s.name.clone(), s.signature()))
        .collect();
    let mut imported = Vec::new();
    let mut skipped: Vec<(String, String, String)> = Vec::new();
    let mut notes = Vec::new();
    for (file, file_scope) in present {
        let loaded = config::load_file(&context.locations, file, dialect, *file_scope);
        for d in loaded
            .diagnostics
            .iter()
            .filter(|d| d.severity != Severity::Info)
        {
            report_diagnostic(d, json);
        }
        for s in &loaded.skipped {
            skipped.push((
                s.server.name.clone(),
                file.display().to_string(),
                skip_reason(&s.reason, s.kept.as_deref(), Some(&loaded)),
            ));
        }
        for mut server in loaded.servers {
            let from_file = server.origin.file.display().to_string();
            if taken.iter().any(|(n, _)| *n == server.name) {
                skipped.push((
                    server.name.clone(),
                    from_file,
                    format!("already configured in {}", target.file.display()),
                ));
                continue;
            }
            if let Some((other, _)) = taken.iter().find(|(_, sig)| *sig == server.signature()) {
                skipped.push((
                    server.name.clone(),
                    from_file,
                    format!(
                        "the same server is already configured as `{other}` in {}",
                        target.file.display()
                    ),
                ));
                continue;
            }
            server.origin = origin(&destination);
            let edited = config::add_server(&context.locations, target, &server)
                .map_err(|e| Failure::usage(e.into()))?;
            notes.extend(edited.note);
            taken.push((server.name.clone(), server.signature()));
            imported.push((server.name.clone(), from_file));
        }
    }
    if json {
        print_json(&json!({
            "from": dialect_name(dialect),
            "file": target.file.display().to_string(),
            "imported": imported.iter().map(|(n, f)| json!({"name": n, "from": f})).collect::<Vec<_>>(),
            "skipped": skipped.iter().map(|(n, f, r)| json!({"name": n, "from": f, "reason": r})).collect::<Vec<_>>(),
        }));
    } else {
        let names: Vec<&str> = imported.iter().map(|(n, _)| n.as_str()).collect();
        println!(
            "imported {} server{} from {} into {}{}",
            imported.len(),
            if imported.len() == 1 { "" } else { "s" },
            dialect_name(dialect),
            target.file.display(),
            if names.is_empty() {
                String::new()
            } else {
                format!(": {}", names.join(", "))
            }
        );
        for (name, file, reason) in &skipped {
            println!("skipped `{name}` ({file}): {reason}");
        }
        for note in notes {
            println!("note: {note}");
        }
    }
    Ok(0)
}

/// Why a configured server is not used; `loaded` says where the one used
/// instead is configured.
pub(crate) fn skip_reason(
    reason: &SkipReason,
    kept: Option<&str>,
    loaded: Option<&LoadedConfig>,
) -> String {
    let name = kept.unwrap_or("another entry");
    let kept = match kept.and_then(|k| loaded?.get(k)) {
        Some(server) => format!("`{name}` in {}", server.origin.file.display()),
        None => format!("`{name}`"),
    };
    match reason {
        SkipReason::Shadowed => format!("shadowed by {kept}, which takes precedence"),
        SkipReason::Duplicate => format!("the same server as {kept}, which is used instead"),
        SkipReason::Blocked(why) => format!("blocked by policy: {why}"),
        _ => "not used".to_owned(),
    }
}

/// Where a change to the configured server `name` goes: the switchboard
/// file of `scope` when given, else the file it is configured in.
fn locate(context: &Context, name: &str, scope: Option<ScopeArg>) -> Result<Target, Failure> {
    if let Some(scope) = scope {
        return Ok(context.target(scope).0);
    }
    let loaded = context.load(false);
    let server = loaded
        .get(name)
        .ok_or_else(|| not_configured(name, &loaded))?;
    let origin = &server.origin;
    Ok(match (origin.dialect, origin.scope) {
        (Dialect::ClaudeCode, Scope::Local) => Target::claude_local(&context.locations),
        (dialect, _) => Target::new(&origin.file, dialect),
    })
}

pub(crate) fn not_configured(name: &str, loaded: &LoadedConfig) -> Failure {
    if let Some(skipped) = loaded.skipped.iter().find(|s| s.server.name == name) {
        return Failure::usage(anyhow!(
            "server `{name}` is configured in {} but not used: {}",
            skipped.server.origin.file.display(),
            skip_reason(&skipped.reason, skipped.kept.as_deref(), Some(loaded))
        ));
    }
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    Failure::usage(anyhow!(
        "no server named `{name}` is configured ({}); `switchboard list` shows them",
        if names.is_empty() {
            "none is".to_owned()
        } else {
            format!("configured: {}", names.join(", "))
        }
    ))
}

pub(crate) fn remove(
    context: &Context,
    name: &str,
    scope: Option<ScopeArg>,
    json: bool,
) -> Result<u8, Failure> {
    let target = locate(context, name, scope)?;
    let edited = config::remove_server(&context.locations, &target, name)
        .map_err(|e| Failure::usage(e.into()))?;
    let after = config::load(&context.locations, &LoadOptions::new());
    let now = after.get(name).map(|s| s.origin.file.display().to_string());
    if json {
        print_json(&json!({
            "removed": name,
            "file": edited.file.display().to_string(),
            "note": edited.note,
            "nowFrom": now,
        }));
    } else {
        println!("removed `{name}` from {}", edited.file.display());
        if let Some(note) = &edited.note {
            println!("note: {note}");
        }
        if let Some(file) = now {
            println!("note: `{name}` is still configured in {file}, which is used now");
        }
    }
    Ok(0)
}

pub(crate) fn set_enabled(
    context: &Context,
    name: &str,
    enabled: bool,
    scope: Option<ScopeArg>,
    json: bool,
) -> Result<u8, Failure> {
    let target = locate(context, name, scope)?;
    let edited = config::set_enabled(&context.locations, &target, name, enabled)
        .map_err(|e| Failure::usage(e.into()))?;
    let verb = if enabled { "enabled" } else { "disabled" };
    if json {
        print_json(&json!({
            verb: name,
            "file": edited.file.display().to_string(),
            "note": edited.note,
        }));
    } else {
        println!("{verb} `{name}` in {}", edited.file.display());
        if let Some(note) = &edited.note {
            println!("note: {note}");
        }
    }
    Ok(0)
}

/// A value as written in the file. References (`${VAR}`) are shown; a
/// literal value under a name that looks secret is not.
fn as_written(key: &str, value: &str) -> String {
    let upper = key.to_ascii_uppercase();
    let secret = [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASS",
        "AUTH",
        "COOKIE",
        "CREDENTIAL",
    ]
    .iter()
    .any(|word| upper.contains(word));
    if !secret || value.contains('$') || value.is_empty() {
        value.to_owned()
    } else {
        format!(
            "<hidden: {} characters written literally in the file>",
            value.chars().count()
        )
    }
}

fn shown_map(map: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    map.iter()
        .map(|(k, v)| (k.clone(), as_written(k, v)))
        .collect()
}

/// `get NAME`: the server as configured, references unexpanded.
pub(crate) fn get(context: &Context, name: &str, json: bool) -> Result<u8, Failure> {
    let loaded = context.load(json);
    let server = loaded
        .get(name)
        .ok_or_else(|| not_configured(name, &loaded))?;
    let mut doc = json!({
        "name": server.name,
        "enabled": server.enabled,
        "required": server.required,
        "source": server.origin.file.display().to_string(),
        "dialect": dialect_name(server.origin.dialect),
        "scope": scope_name(server.origin.scope),
    });
    match &server.transport {
        TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            doc["transport"] = json!("stdio");
            doc["command"] = json!(command);
            doc["args"] = json!(args);
            doc["env"] = json!(shown_map(env));
            if let Some(cwd) = cwd {
                doc["cwd"] = json!(cwd.display().to_string());
            }
        }
        TransportConfig::Http { url, headers, kind } => {
            doc["transport"] = json!(match kind {
                HttpKind::Streamable => "streamable-http",
                HttpKind::Sse => "sse",
                _ => "http",
            });
            doc["url"] = json!(url);
            doc["headers"] = json!(shown_map(headers));
        }
        TransportConfig::WebSocket { url, headers } => {
            doc["transport"] = json!("websocket");
            doc["url"] = json!(url);
            doc["headers"] = json!(shown_map(headers));
        }
        _ => {}
    }
    if let Some(t) = server.startup_timeout {
        doc["startupTimeoutSecs"] = json!(t.as_secs_f64());
    }
    if let Some(t) = server.request_timeout {
        doc["requestTimeoutSecs"] = json!(t.as_secs_f64());
    }
    if !server.tools.include.is_empty() {
        doc["includeTools"] = json!(server.tools.include);
    }
    if !server.tools.exclude.is_empty() {
        doc["excludeTools"] = json!(server.tools.exclude);
    }
    let others: Vec<Value> = loaded
        .skipped
        .iter()
        .filter(|s| s.server.name == name)
        .map(|s| {
            json!({
                "source": s.server.origin.file.display().to_string(),
                "reason": skip_reason(&s.reason, s.kept.as_deref(), Some(&loaded)),
            })
        })
        .collect();
    if !others.is_empty() {
        doc["alsoConfigured"] = json!(others);
    }
    if json {
        print_json(&doc);
        return Ok(0);
    }
    let mut table = crate::output::table(&["", ""]);
    let object = doc.as_object().cloned().unwrap_or_default();
    for (key, value) in object {
        let shown = match value {
            Value::String(s) => s,
            Value::Array(items) if key == "args" => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(" "),
            Value::Object(map) if key == "env" || key == "headers" => map
                .iter()
                .map(|(k, v)| {
                    let v = v.as_str().unwrap_or_default();
                    if key == "env" {
                        format!("{k}={v}")
                    } else {
                        format!("{k}: {v}")
                    }
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Value::Array(items) if key == "alsoConfigured" => items
                .iter()
                .map(|i| {
                    format!(
                        "{} ({})",
                        i["source"].as_str().unwrap_or_default(),
                        i["reason"].as_str().unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
            other => other.to_string(),
        };
        table.add_row(vec![key, shown]);
    }
    println!("{table}");
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_written_literally_are_hidden_references_are_shown() {
        assert_eq!(as_written("API_KEY", "${API_KEY}"), "${API_KEY}");
        assert_eq!(as_written("Authorization", "Bearer ${T}"), "Bearer ${T}");
        assert!(as_written("GITHUB_TOKEN", "ghp_abc").starts_with("<hidden"));
        assert!(as_written("Authorization", "Bearer abc").starts_with("<hidden"));
        assert_eq!(as_written("LOG_LEVEL", "debug"), "debug");
    }

    #[test]
    fn names_that_would_confuse_call_are_refused() {
        assert!(check_name("github-2.x_y").is_ok());
        assert!(check_name("données").is_ok());
        for bad in ["", "a/b", "a b", "a:b"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
