//! Configured servers: where they are read from (`Locations`, `--config`),
//! and the commands that change or show them: `add`, `add-json`,
//! `import`, `remove`, `enable`, `disable`, `get`.
//!
//! One file: every command here reads or edits the same configuration
//! through the same `Context` and the same file-writing rules (the trust
//! questions are in `approve.rs`, the printing in `term/`).
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

use crate::cli::{AddArgs, AddTransport, ClientArg, ScopeArg};
use crate::failure::Failure;
use crate::term::output::print_json;

/// Where configuration is read from: the process's home and working
/// directory, and the `--config` file if one was given.
#[derive(Clone)]
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
    pub(crate) fn target(&self, scope: ScopeArg) -> (Target, Scope) {
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
        eprintln!(
            "{}",
            crate::term::sanitize::json(json!({ "diagnostic": object }).to_string())
        );
    } else {
        // A config file's text (names, values) is quoted in diagnostics.
        eprintln!(
            "{severity}: {}",
            crate::term::sanitize::term(&diagnostic.to_string())
        );
    }
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

pub(crate) fn check_name(name: &str) -> anyhow::Result<()> {
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
    let json = args.json;
    let (server, target) = added(context, &args)?;
    write_new(context, &target, server, json)
}

/// The server `args` describe and the file it goes to (nothing written).
pub(crate) fn added(context: &Context, args: &AddArgs) -> Result<(ServerConfig, Target), Failure> {
    let name = args.name.as_deref().unwrap_or_default();
    check_name(name).map_err(Failure::usage)?;
    let target = context.target(args.scope.unwrap_or(ScopeArg::Local));
    let url = args.url.as_ref().or(args.target.as_ref());
    if url.is_none() && (!args.headers.is_empty() || args.transport.is_some()) {
        return Err(Failure::usage(anyhow!(
            "--header and --transport are for a remote server: give its URL (`add NAME URL`)"
        )));
    }
    let transport = match url {
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
    if url.is_some() && !args.env.is_empty() {
        return Err(Failure::usage(anyhow!(
            "--env is for a local server's process; a remote server takes --header"
        )));
    }
    let server = ServerConfig::new(name, transport, origin(&target));
    Ok((server, target.0))
}

pub(crate) fn origin((target, scope): &(Target, Scope)) -> Origin {
    Origin {
        file: target.file.clone(),
        dialect: target.dialect,
        scope: *scope,
    }
}

/// What adding a server did.
pub(crate) struct Written {
    /// The file it was written to.
    pub(crate) file: PathBuf,
    /// What the edit says (a file made, a format kept).
    pub(crate) note: Option<String>,
    /// Another file that configures a server of that name.
    pub(crate) also_in: Option<String>,
    /// What was done so git ignores a local file made for it.
    pub(crate) git_ignored: Option<String>,
}

/// Adds `server` to `target`, approved as written when it is a project
/// file (the person adding it typed it).
pub(crate) fn write_added(
    context: &Context,
    target: &Target,
    server: &ServerConfig,
) -> Result<Written, Failure> {
    let before = config::load(&context.locations, &LoadOptions::new());
    let created = !target.file.exists();
    let edited = config::add_server(&context.locations, target, server)
        .map_err(|e| Failure::usage(e.into()))?;
    // The user typed this server: in a project file it is approved as
    // written.
    remember_written(context, &server.name, &edited.file);
    let git_ignored = created
        .then(|| git_ignore_local(context, &edited.file))
        .flatten();
    let also_in = before
        .get(&server.name)
        .filter(|s| s.origin.file != edited.file)
        .map(|s| s.origin.file.display().to_string());
    Ok(Written {
        file: edited.file,
        note: edited.note,
        also_in,
        git_ignored,
    })
}

/// Adds `server` to `target`, saying where, and what it shadows.
pub(crate) fn write_new(
    context: &Context,
    target: &Target,
    server: ServerConfig,
    json: bool,
) -> Result<u8, Failure> {
    let written = write_added(context, target, &server)?;
    if json {
        print_json(&json!({
            "added": server.name,
            "file": written.file.display().to_string(),
            "note": written.note,
            "alsoConfiguredIn": written.also_in,
            "gitIgnored": written.git_ignored,
        }));
    } else {
        println!("added `{}` to {}", server.name, written.file.display());
        if let Some(note) = &written.note {
            println!("note: {note}");
        }
        if let Some(ignored) = &written.git_ignored {
            println!("note: {ignored}");
        }
        if let Some(file) = written.also_in {
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
    let mut server = json_entry(context, name, text)?;
    let target = context.target(scope.unwrap_or(ScopeArg::Local));
    server.origin = origin(&target);
    write_new(context, &target.0, server, json)
}

/// The entry a Claude Code style JSON object describes, read as Claude
/// Code reads it (nothing written; its origin is to be set).
pub(crate) fn json_entry(
    context: &Context,
    name: &str,
    text: &str,
) -> Result<ServerConfig, Failure> {
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
    // The entry may hold secrets, and the temp dir is everyone's: a new
    // file only the user can read, never through a planted symlink.
    switchboard_hub::private_file::create_new_private(&scratch)
        .and_then(|mut file| std::io::Write::write_all(&mut file, wrapped.as_bytes()))
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
    let Some(server) = loaded
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
    Ok(server)
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
        .map(|s| (s.name.clone(), s.identity()))
        .collect();
    let mut imported = Vec::new();
    let mut skipped: Vec<(String, String, String)> = Vec::new();
    let mut notes = Vec::new();
    // A project file is for sharing (it is checked in): it gets `${VAR}`
    // references, never a literal secret copied from a private file.
    let shared = destination.1 == Scope::Project;
    let mut referenced = Vec::new();
    let created = !target.file.exists();
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
            // Importing must not launder a cloned project's server into a
            // file that is trusted (or approved) as the user's own.
            if !server.trust.allows_start() {
                skipped.push((
                    server.name.clone(),
                    from_file,
                    format!(
                        "from a project file not approved yet: run `switchboard approve {}` \
                         (after checking what it runs), then import again",
                        server.name
                    ),
                ));
                continue;
            }
            if taken.iter().any(|(n, _)| *n == server.name) {
                skipped.push((
                    server.name.clone(),
                    from_file,
                    format!("already configured in {}", target.file.display()),
                ));
                continue;
            }
            // Everything that makes a server different (env, headers …),
            // as the loader's duplicate check: two accounts stay two.
            if let Some((other, _)) = taken.iter().find(|(_, id)| *id == server.identity()) {
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
            let identity = server.identity();
            server.origin = origin(&destination);
            if shared {
                reference_secrets(&mut server, &mut referenced);
            }
            let edited = config::add_server(&context.locations, target, &server)
                .map_err(|e| Failure::usage(e.into()))?;
            notes.extend(edited.note);
            taken.push((server.name.clone(), identity));
            imported.push((server.name.clone(), from_file));
        }
    }
    // What the user chose to import into a project file is approved
    // there as written.
    for (name, _) in &imported {
        remember_written(context, name, &target.file);
    }
    let ignored = if created && target.file.exists() {
        git_ignore_local(context, &target.file)
    } else {
        None
    };
    for r in &referenced {
        eprintln!(
            "note: `{}`: the literal secret in {} was not copied into {} (a project file, \
             meant to be shared); it reads ${{{}}} there: set {} in your environment",
            r.server,
            r.key,
            target.file.display(),
            r.variable,
            r.variable
        );
    }
    if json {
        print_json(&json!({
            "from": dialect_name(dialect),
            "file": target.file.display().to_string(),
            "imported": imported.iter().map(|(n, f)| json!({"name": n, "from": f})).collect::<Vec<_>>(),
            "skipped": skipped.iter().map(|(n, f, r)| json!({"name": n, "from": f, "reason": r})).collect::<Vec<_>>(),
            "variables": referenced.iter().map(|r| json!({"server": r.server, "key": r.key, "variable": r.variable})).collect::<Vec<_>>(),
            "gitIgnored": ignored,
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
        if let Some(ignored) = ignored {
            println!("note: {ignored}");
        }
    }
    Ok(0)
}

/// The first time switchboard's local file is made in a git checkout,
/// makes sure git ignores it (it is the user's own, and may hold secrets):
/// nothing when git already ignores it (`git check-ignore`), else a line in
/// the repository's `info/exclude` (not a tracked `.gitignore`, which would
/// be a change to the project). Returns what was done, to tell the user.
fn git_ignore_local(context: &Context, file: &Path) -> Option<String> {
    let root = context.locations.project_root();
    if *file != context.locations.switchboard_local_file() || !root.join(".git").exists() {
        return None;
    }
    let relative = file.strip_prefix(root).ok()?.to_string_lossy().into_owned();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            // A repository's own config must not run anything here.
            .args(["-c", "core.fsmonitor=false"])
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
    };
    let exclude = match git(&["check-ignore", "-q", "--", &relative]).and_then(|o| o.status.code())
    {
        Some(0) => return None,
        // Not ignored: the exclude file git itself uses (worktrees too).
        Some(1) => git(&["rev-parse", "--git-path", "info/exclude"])
            .filter(|o| o.status.success())
            .map(|o| root.join(String::from_utf8_lossy(&o.stdout).trim()))
            .unwrap_or_else(|| root.join(".git/info/exclude")),
        // No git, or a checkout git cannot read: the plain files.
        _ => {
            let listed = |path: PathBuf| {
                std::fs::read_to_string(path).is_ok_and(|text| {
                    text.lines()
                        .any(|l| l.trim() == relative || l.trim() == format!("/{relative}"))
                })
            };
            if listed(root.join(".gitignore")) || listed(root.join(".git/info/exclude")) {
                return None;
            }
            if !root.join(".git").is_dir() {
                return None;
            }
            root.join(".git/info/exclude")
        }
    };
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("/{relative}\n"));
    let written = exclude
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&exclude, text));
    Some(match written {
        Ok(()) => format!(
            "{} is yours alone: added to {} so git ignores it",
            relative,
            exclude.display()
        ),
        Err(e) => format!(
            "{relative} may hold secrets and git does not ignore it; add it to .gitignore \
             (could not write {}: {e})",
            exclude.display()
        ),
    })
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
        SkipReason::AwaitsApproval => {
            format!("needs approval to replace {kept} (yours, which runs until then)")
        }
        SkipReason::Gateway => "this is switchboard's own gateway (`switchboard serve`); \
                                skipped so it does not start every server twice"
            .to_owned(),
        _ => "not used".to_owned(),
    }
}

/// Where a change to the configured server `name` goes: the switchboard
/// file of `scope` when given, else the file it is configured in.
fn locate(
    context: &Context,
    name: &str,
    scope: Option<ScopeArg>,
    quiet: bool,
) -> Result<Target, Failure> {
    if let Some(scope) = scope {
        return Ok(context.target(scope).0);
    }
    let mut loaded = if quiet {
        context.load_quiet()
    } else {
        context.load(false)
    };
    if loaded.named(name).is_none() {
        return Err(not_configured(name, &loaded));
    }
    let server = loaded.get(name).expect("named above");
    let origin = &server.origin;
    Ok(match (origin.dialect, origin.scope) {
        (Dialect::ClaudeCode, Scope::Local) => Target::claude_local(&context.locations),
        (dialect, _) => Target::new(&origin.file, dialect),
    })
}

/// Where server `name`'s entry starts in a config file's `text` (a byte
/// offset), in any of the formats read: a JSON or YAML key (`"name":`,
/// `name:` at a line's start), a TOML table (`[servers.name]`,
/// `[mcp_servers."name"]`); the earliest. `None` when none is found.
pub(crate) fn entry_offset(text: &str, name: &str) -> Option<usize> {
    let quoted = format!("\"{name}\"");
    let mut found: Vec<usize> = Vec::new();
    // A JSON (or quoted YAML/TOML) key: the name in quotes, then `:` or
    // `=`, or a TOML table header's last part.
    for (at, _) in text.match_indices(&quoted) {
        let after = text[at + quoted.len()..].trim_start_matches([' ', '\t']);
        let header = text[..at].ends_with('.') && after.starts_with(']');
        if after.starts_with(':') || after.starts_with('=') || header {
            found.push(at);
        }
    }
    for (at, _) in text.match_indices(name) {
        let before = text[..at].chars().next_back();
        let after = &text[at + name.len()..];
        // `[servers.name]` (TOML), `name:` or `name =` at a line's start.
        let header = before == Some('.') && after.starts_with(']');
        let line_start = text[..at]
            .rsplit('\n')
            .next()
            .is_some_and(|l| l.trim().is_empty());
        let key = line_start
            && after
                .trim_start_matches([' ', '\t'])
                .starts_with([':', '=']);
        if header || key {
            found.push(at);
        }
    }
    found.into_iter().min()
}

/// The 1-based line of server `name`'s entry in `file`, if it is found.
pub(crate) fn entry_line(file: &Path, name: &str) -> Option<usize> {
    let text = std::fs::read_to_string(file).ok()?;
    let at = entry_offset(&text, name)?;
    Some(text[..at].matches('\n').count() + 1)
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
    let failure = Failure::usage(anyhow!(
        "no server named `{name}` is configured ({}); `switchboard list` shows them",
        if names.is_empty() {
            "none is".to_owned()
        } else {
            format!("configured: {}", names.join(", "))
        }
    ));
    match crate::suggest::closest(name, names.iter().copied()) {
        Some(near) => failure.with_hint(format!("did you mean `{near}`?")),
        None => failure,
    }
}

pub(crate) fn remove(
    context: &Context,
    name: &str,
    scope: Option<ScopeArg>,
    json: bool,
) -> Result<u8, Failure> {
    let (edited, now) = removed(context, name, scope, false)?;
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

/// Removes `name` from the file it is configured in (or `scope`'s); the
/// edit, and the file that configures a server of that name now, if one
/// does. `quiet`: the load's diagnostics are not printed.
pub(crate) fn removed(
    context: &Context,
    name: &str,
    scope: Option<ScopeArg>,
    quiet: bool,
) -> Result<(config::Edited, Option<String>), Failure> {
    let target = locate(context, name, scope, quiet)?;
    let installed = installed_bundle(context, &target, name);
    let edited = config::remove_server(&context.locations, &target, name)
        .map_err(|e| Failure::usage(e.into()))?;
    if let Some(dir) = installed {
        // A bundle `install` put there: its files and secrets go with it.
        let _ = std::fs::remove_dir_all(&dir);
        if let Ok(mut secrets) = config::Secrets::load(&context.locations)
            && secrets.remove_server(name) > 0
            && let Err(e) = secrets.save()
        {
            eprintln!("warning: `{name}`'s secrets could not be removed: {e}");
        }
    }
    let after = config::load(&context.locations, &LoadOptions::new());
    let now = after.get(name).map(|s| s.origin.file.display().to_string());
    Ok((edited, now))
}

/// The directory `install` unpacked `name` into, when `target`'s entry of
/// that name runs from it.
fn installed_bundle(context: &Context, target: &Target, name: &str) -> Option<PathBuf> {
    let dir = context.locations.data_dir().join("bundles").join(name);
    let loaded = config::load_file(
        &context.locations,
        &target.file,
        target.dialect,
        Scope::User,
    );
    let server = loaded.servers.into_iter().find(|s| s.name == name)?;
    match server.transport {
        TransportConfig::Stdio { cwd: Some(cwd), .. } if cwd == dir => Some(dir),
        _ => None,
    }
}

pub(crate) fn set_enabled(
    context: &Context,
    name: &str,
    enabled: bool,
    scope: Option<ScopeArg>,
    json: bool,
) -> Result<u8, Failure> {
    let edited = enabled_in(context, name, enabled, scope, false)?;
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

/// Enables or disables `name` in the file it is configured in (or
/// `scope`'s); the edit. `quiet`: the load's diagnostics are not printed.
pub(crate) fn enabled_in(
    context: &Context,
    name: &str,
    enabled: bool,
    scope: Option<ScopeArg>,
    quiet: bool,
) -> Result<config::Edited, Failure> {
    let target = locate(context, name, scope, quiet)?;
    config::set_enabled(&context.locations, &target, name, enabled)
        .map_err(|e| Failure::usage(e.into()))
}

/// Words that make a name (a variable, a header, a query parameter, an
/// option) look like it holds a secret.
const SECRET_WORDS: [&str; 8] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASS",
    "AUTH",
    "COOKIE",
    "CREDENTIAL",
];

/// Whether `name` looks like it names a secret (`API_KEY`, `Authorization`,
/// `access_token`, `sig`).
pub(crate) fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| upper.contains(word))
        || matches!(upper.as_str(), "SIG" | "SIGNATURE" | "PWD" | "CODE")
}

/// A value written literally (not a `${VAR}` reference, not empty).
fn literal(value: &str) -> bool {
    !value.contains('$') && !value.is_empty()
}

/// A value as written in the file. References (`${VAR}`) are shown; a
/// literal value under a name that looks secret is not.
fn as_written(key: &str, value: &str) -> String {
    if !secret_name(key) || !literal(value) {
        value.to_owned()
    } else {
        format!(
            "<hidden: {} characters written literally in the file>",
            value.chars().count()
        )
    }
}

/// What stands for a hidden part of a URL or an argument.
const HIDDEN: &str = "<hidden>";

/// `url` as written, with the secrets a URL can carry hidden: the
/// userinfo's password (the user name too when it stands alone: a token
/// passed as `https://TOKEN@host`), and the values of query and fragment
/// parameters with secret-looking names (`token`, `api_key`, `sig`, …).
/// References (`${VAR}`) stay. Text that is not a URL is returned as is.
pub(crate) fn redact_url(url: &str) -> String {
    replace_url_secrets(url, &mut |_| HIDDEN.to_owned())
}

/// `args` as written, with secrets hidden: the value of a long option whose
/// name looks secret (`--api-key=…`, `--token …`), a secret-looking
/// `NAME=value` (`-e GITHUB_TOKEN=…`), and the secrets of URLs
/// ([`redact_url`]). References (`${VAR}`) stay.
pub(crate) fn redact_args(args: &[String]) -> Vec<String> {
    replace_arg_secrets(args, &mut |_| HIDDEN.to_owned())
}

/// `url` with each literal secret (see [`redact_url`]) replaced by what
/// `replace` makes of the name it is under (`password`, `token`, a query
/// parameter's name).
fn replace_url_secrets(url: &str, replace: &mut dyn FnMut(&str) -> String) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // The authority ends where a browser ends it: `\` counts as `/`.
    let end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let userinfo = match userinfo.split_once(':') {
                Some((user, password)) if literal(password) => {
                    format!("{user}:{}", replace("password"))
                }
                None if literal(userinfo) => replace("token"),
                _ => userinfo.to_owned(),
            };
            format!("{userinfo}@{host}")
        }
        None => authority.to_owned(),
    };
    let (before_fragment, fragment) = match tail.split_once('#') {
        Some((before, fragment)) => (before, Some(fragment)),
        None => (tail, None),
    };
    let (path, query) = match before_fragment.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (before_fragment, None),
    };
    let mut out = format!("{scheme}://{authority}{path}");
    if let Some(query) = query {
        out.push('?');
        out.push_str(&replace_pair_secrets(query, replace));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(&replace_pair_secrets(fragment, replace));
    }
    out
}

/// `a=1&token=x` with the values of secret-looking names replaced.
fn replace_pair_secrets(text: &str, replace: &mut dyn FnMut(&str) -> String) -> String {
    text.split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if secret_name(name) && literal(value) => {
                format!("{name}={}", replace(name))
            }
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// `args` with each literal secret (see [`redact_args`]) replaced by what
/// `replace` makes of the name it is under.
fn replace_arg_secrets(args: &[String], replace: &mut dyn FnMut(&str) -> String) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut secret_option: Option<&str> = None;
    for arg in args {
        if let Some(option) = secret_option.take()
            && !arg.starts_with('-')
        {
            out.push(if literal(arg) {
                replace(option)
            } else {
                arg.clone()
            });
            continue;
        }
        if let Some(option) = arg.strip_prefix("--") {
            match option.split_once('=') {
                Some((name, value)) if secret_name(name) && literal(value) => {
                    out.push(format!("--{name}={}", replace(name)));
                }
                Some(_) => out.push(replace_url_secrets(arg, replace)),
                None => {
                    secret_option = secret_name(option).then_some(option);
                    out.push(arg.clone());
                }
            }
            continue;
        }
        match arg.split_once('=') {
            Some((name, value))
                if !name.is_empty()
                    && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
                    && secret_name(name)
                    && literal(value) =>
            {
                out.push(format!("{name}={}", replace(name)));
            }
            _ => out.push(replace_url_secrets(arg, replace)),
        }
    }
    out
}

/// A literal secret `import` kept out of a project file: the `${VAR}`
/// written instead, and where.
struct Referenced {
    server: String,
    key: String,
    variable: String,
}

/// `NAME` made an environment variable's name: upper case, `_` for what
/// is not a letter or digit, no leading digit.
fn variable_name(parts: &[&str]) -> String {
    let mut out = String::new();
    for part in parts.iter().filter(|p| !p.is_empty()) {
        if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
        for c in part.chars() {
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_uppercase());
            } else if !out.ends_with('_') && !out.is_empty() {
                out.push('_');
            }
        }
    }
    let out = out.trim_end_matches('_').to_owned();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{out}")
    } else {
        out
    }
}

/// Replaces every literal secret in `server` (env and header values under
/// secret-looking names, the OAuth client secret, secrets in args and URLs)
/// by a `${VAR}` reference, named after the server and key
/// (`GITHUB_TOKEN` for `env.GITHUB_TOKEN`, `DOCS_AUTHORIZATION` for a
/// header); says which in `referenced`. For files meant to be shared.
fn reference_secrets(server: &mut ServerConfig, referenced: &mut Vec<Referenced>) {
    let name = server.name.clone();
    let mut record = |key: String, variable: String| {
        let reference = format!("${{{variable}}}");
        referenced.push(Referenced {
            server: name.clone(),
            key,
            variable,
        });
        reference
    };
    let in_url = |url: &str, record: &mut dyn FnMut(String, String) -> String| {
        replace_url_secrets(url, &mut |part| {
            record(format!("url ({part})"), variable_name(&[&name, part]))
        })
    };
    match &mut server.transport {
        TransportConfig::Stdio { args, env, .. } => {
            let replaced = replace_arg_secrets(args, &mut |option| {
                let variable = if option
                    .chars()
                    .all(|c| c == '_' || c.is_ascii_alphanumeric())
                    && option.chars().any(|c| c.is_ascii_uppercase())
                {
                    variable_name(&[option])
                } else {
                    variable_name(&[&name, option])
                };
                record(format!("args ({option})"), variable)
            });
            *args = replaced;
            for (key, value) in env.iter_mut() {
                if secret_name(key) && literal(value) {
                    // The key already names a variable: the user most
                    // likely has it set under that name.
                    *value = record(format!("env.{key}"), variable_name(&[key]));
                }
            }
        }
        TransportConfig::Http { url, headers, .. }
        | TransportConfig::WebSocket { url, headers } => {
            *url = in_url(url, &mut record);
            for (key, value) in headers.iter_mut() {
                if !secret_name(key) || !literal(value) {
                    continue;
                }
                // Keep the scheme of `Authorization: Bearer …`.
                let (scheme, _) = value
                    .split_once(' ')
                    .filter(|(s, rest)| {
                        ["Bearer", "Basic", "Token", "Bot", "DPoP"]
                            .iter()
                            .any(|k| s.eq_ignore_ascii_case(k))
                            && !rest.is_empty()
                    })
                    .map_or(("", ""), |(s, r)| (s, r));
                let variable = if scheme.is_empty() {
                    variable_name(&[&name, key])
                } else {
                    variable_name(&[&name, "token"])
                };
                let reference = record(format!("headers.{key}"), variable);
                *value = if scheme.is_empty() {
                    reference
                } else {
                    format!("{scheme} {reference}")
                };
            }
        }
        _ => {}
    }
    if let Some(oauth) = &mut server.oauth
        && let Some(secret) = &mut oauth.client_secret
        && literal(secret)
    {
        *secret = record(
            "oauth.client_secret".into(),
            variable_name(&[&name, "client_secret"]),
        );
    }
}

fn shown_map(map: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    map.iter()
        .map(|(k, v)| (k.clone(), as_written(k, v)))
        .collect()
}

/// `get NAME`: the server as configured, references unexpanded.
pub(crate) fn get(context: &Context, name: &str, json: bool) -> Result<u8, Failure> {
    let mut loaded = context.load(json);
    if loaded.named(name).is_none() {
        return Err(not_configured(name, &loaded));
    }
    let server = loaded.get(name).expect("named above");
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
            doc["args"] = json!(redact_args(args));
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
            doc["url"] = json!(redact_url(url));
            doc["headers"] = json!(shown_map(headers));
        }
        TransportConfig::WebSocket { url, headers } => {
            doc["transport"] = json!("websocket");
            doc["url"] = json!(redact_url(url));
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
    if let Some(helper) = &server.headers_helper {
        // A command as written, as `command` is.
        doc["headersHelper"] = json!(helper.command);
        doc["headersHelperTimeoutSecs"] = json!(helper.timeout.as_secs_f64());
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
    let mut table = crate::term::output::pairs_table();
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

/// After `add` wrote `name` into a project file: the user typed it, so it
/// is approved as written.
pub(crate) fn remember_written(context: &Context, name: &str, file: &Path) {
    let loaded = context.load_quiet();
    let Some(server) = loaded.get(name).filter(|s| s.origin.file == file) else {
        return;
    };
    if !switchboard_hub::config::trust::is_project_server(&context.locations, server) {
        return;
    }
    let mut approvals = switchboard_hub::config::Approvals::open(&loaded.approvals);
    approvals.approve(context.locations.project_root(), server);
    if let Err(error) = approvals.save() {
        eprintln!(
            "warning: could not record the approval of `{name}` ({error}); `switchboard approve {name}` does it"
        );
    }
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
    fn urls_hide_userinfo_and_secret_query_values_but_not_references() {
        assert_eq!(
            redact_url("https://u:pw@h.example:8443/p?a=1&token=abc&api_key=${K}#access_token=z"),
            "https://u:<hidden>@h.example:8443/p?a=1&token=<hidden>&api_key=${K}#access_token=<hidden>"
        );
        assert_eq!(
            redact_url("https://ghp_x@github.com/o/r"),
            "https://<hidden>@github.com/o/r"
        );
        assert_eq!(
            redact_url("https://h.example/x?sig=s1&Signature=s2&page=2&X-Amz-Credential=c"),
            "https://h.example/x?sig=<hidden>&Signature=<hidden>&page=2&X-Amz-Credential=<hidden>"
        );
        assert_eq!(
            redact_url("https://${USER}:${PASS}@h.example/"),
            "https://${USER}:${PASS}@h.example/"
        );
        assert_eq!(
            redact_url(r"https://a:b@evil.example\@x"),
            r"https://a:<hidden>@evil.example\@x"
        );
        assert_eq!(redact_url("not a url"), "not a url");
        assert_eq!(
            redact_url("https://plain.example/a?q=1"),
            "https://plain.example/a?q=1"
        );
    }

    #[test]
    fn args_hide_secret_options_assignments_and_url_secrets() {
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            redact_args(&args(&[
                "-y",
                "server",
                "--token",
                "sk-1",
                "--api-key=sk-2",
                "--password",
                "${PW}",
                "--auth-stdin",
                "--verbose",
                "-e",
                "GITHUB_TOKEN=ghp_3",
                "LOG_LEVEL=debug",
                "https://h.example/?key=sk-4",
                "--url=https://u:sk-5@h.example/",
                "--name",
                "files",
            ])),
            args(&[
                "-y",
                "server",
                "--token",
                "<hidden>",
                "--api-key=<hidden>",
                "--password",
                "${PW}",
                "--auth-stdin",
                "--verbose",
                "-e",
                "GITHUB_TOKEN=<hidden>",
                "LOG_LEVEL=debug",
                "https://h.example/?key=<hidden>",
                "--url=https://u:<hidden>@h.example/",
                "--name",
                "files",
            ])
        );
    }

    #[test]
    fn an_entry_is_found_by_its_key_not_by_its_name_elsewhere() {
        let toml =
            "[servers.other]\ncommand = \"t\"\nargs = [\"t\"]\n\n[servers.t]\ncommand = \"x\"\n";
        let at = entry_offset(toml, "t").unwrap();
        assert!(toml[at..].starts_with("t]"), "{}", &toml[at..]);
        let json =
            "{\"mcpServers\": {\"a\": {\"command\": \"t\"},\n  \"t\": {\"command\": \"u\"}}}";
        let at = entry_offset(json, "t").unwrap();
        assert!(json[..at].ends_with("\n  "), "{}", &json[..at]);
        let quoted = "[mcp_servers.\"my.server\"]\ncommand = \"x\"\n";
        assert_eq!(entry_offset(quoted, "my.server"), Some(13));
        let yaml = "extensions:\n  fetch:\n    cmd: fetch\n";
        let at = entry_offset(yaml, "fetch").unwrap();
        assert_eq!(&yaml[at..at + 6], "fetch:");
        assert_eq!(entry_offset("nothing here", "t"), None);
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
