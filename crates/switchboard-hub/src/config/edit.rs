//! Edits for the CLI: add, remove, enable and disable a server in a file.
//!
//! - switchboard's TOML file is edited with `toml_edit`: the user's
//!   comments, blank lines and key order stay as they were; a new server
//!   is appended as `[servers.NAME]`.
//! - JSON files (Claude Code, Claude Desktop, Cursor, VS Code, Gemini CLI)
//!   are rewritten with their keys in the order they had (a new entry's
//!   keys in a fixed order), two-space indented. Comments a VS Code or
//!   Gemini file held cannot be kept: [`Edited::note`] says so.
//! - Codex and goose files are not edited (switchboard would have to keep
//!   comments it cannot parse there); the error says to use switchboard's
//!   file.
//!
//! Every write goes to a temporary file in the same directory, then is
//! renamed over the original (keeping its permissions), so a crash never
//! leaves half a file. When a managed (administrator) file is in force,
//! every edit is refused with [`EditError::Managed`].

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use toml_edit::{DocumentMut, InlineTable, Item, Table, value};

use super::dialect::json::parse_jsonc;
use super::dialect::switchboard::format_duration;
use super::locations::Locations;
use super::model::{Dialect, HeadersHelper, HttpKind, Scope, ServerConfig, TransportConfig};

/// Why an edit was not made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// A managed file is in force.
    #[error(
        "{} is managed by your administrator and has exclusive control over MCP servers, so servers cannot be added, removed, enabled or disabled; ask the administrator to change it",
        file.display()
    )]
    Managed {
        /// The managed file.
        file: PathBuf,
    },
    /// Reading or writing the file failed.
    #[error("{}: {action} failed", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid in its format; it is left as it is.
    #[error("{}: cannot edit, the file is not valid: {message}; fix it first", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// What the parser said (with the position).
        message: String,
    },
    /// No server of that name in the file.
    #[error("{}: no server `{name}` in this file", file.display())]
    NotFound {
        /// The file.
        file: PathBuf,
        /// The server.
        name: String,
    },
    /// A server of that name is already there.
    #[error("{}: a server `{name}` is already configured; remove it first or choose another name", file.display())]
    Exists {
        /// The file.
        file: PathBuf,
        /// The server.
        name: String,
    },
    /// The dialect cannot hold this, or switchboard does not edit it.
    #[error("{}: {reason}", file.display())]
    Unsupported {
        /// The file.
        file: PathBuf,
        /// What cannot be done and what to do instead.
        reason: String,
    },
}

/// An edit made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Edited {
    /// The file written.
    pub file: PathBuf,
    /// Something the user should know (comments dropped from a JSON file).
    pub note: Option<String>,
}

/// Where an edit goes: a file in a dialect, and for `~/.claude.json` a
/// project's section.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Target {
    /// The file (created if missing).
    pub file: PathBuf,
    /// Its dialect.
    pub dialect: Dialect,
    /// `~/.claude.json` only: the project whose section
    /// (`projects.<project>.mcpServers`) is edited instead of the top level.
    pub project: Option<String>,
}

impl Target {
    /// The top level of `file` in `dialect`.
    pub fn new(file: impl Into<PathBuf>, dialect: Dialect) -> Self {
        Self {
            file: file.into(),
            dialect,
            project: None,
        }
    }

    /// switchboard's own file for `scope` (local, project or user; `None`
    /// for the others).
    pub fn switchboard(locations: &Locations, scope: Scope) -> Option<Self> {
        let file = match scope {
            Scope::Local => locations.switchboard_local_file(),
            Scope::Project => locations.switchboard_project_file(),
            Scope::User => locations.switchboard_user_file(),
            _ => return None,
        };
        Some(Self::new(file, Dialect::Switchboard))
    }

    /// Claude Code's local scope: the working directory's section of
    /// `~/.claude.json`.
    pub fn claude_local(locations: &Locations) -> Self {
        Self {
            file: locations.claude_json(),
            dialect: Dialect::ClaudeCode,
            project: Some(locations.cwd().to_string_lossy().into_owned()),
        }
    }
}

/// Fails with [`EditError::Managed`] when a managed file is in force.
///
/// # Errors
/// [`EditError::Managed`] naming the managed file.
pub fn ensure_not_managed(locations: &Locations) -> Result<(), EditError> {
    for (file, _) in locations.managed_files() {
        if file.is_file() {
            return Err(EditError::Managed { file });
        }
    }
    Ok(())
}

/// Adds `server` to `file` (created if missing) in `dialect`.
///
/// # Errors
/// [`EditError`]: managed, the name exists, the file is invalid, the
/// dialect cannot express the server, or the write failed.
pub fn add_server(
    locations: &Locations,
    target: &Target,
    server: &ServerConfig,
) -> Result<Edited, EditError> {
    ensure_not_managed(locations)?;
    let (file, dialect, project) = (&*target.file, target.dialect, target.project.as_deref());
    match dialect {
        Dialect::Switchboard => edit_toml(file, |doc| {
            let servers = servers_table(doc);
            if servers.contains_key(&server.name) {
                return Err(Change::Exists);
            }
            servers.insert(&server.name, Item::Table(toml_server(server)));
            Ok(())
        }),
        _ => {
            let entry = json_server(file, dialect, server)?;
            edit_json(file, dialect, project, |root, key| {
                let servers = object_at(root, key);
                if servers.contains_key(&server.name) {
                    return Err(Change::Exists);
                }
                servers.insert(server.name.clone(), entry);
                if dialect == Dialect::Gemini && !server.enabled {
                    gemini_excluded(root, &server.name, true);
                }
                Ok(())
            })
        }
    }
    .map_err(|c| c.into_error(file, &server.name))
}

/// Removes the server `name` from `file`.
///
/// # Errors
/// [`EditError`]: managed, not found, invalid file, unsupported dialect,
/// or the write failed.
pub fn remove_server(
    locations: &Locations,
    target: &Target,
    name: &str,
) -> Result<Edited, EditError> {
    ensure_not_managed(locations)?;
    let (file, dialect, project) = (&*target.file, target.dialect, target.project.as_deref());
    match dialect {
        Dialect::Switchboard => edit_toml(file, |doc| {
            servers_table(doc)
                .remove(name)
                .map(drop)
                .ok_or(Change::NotFound)
        }),
        _ => edit_json(file, dialect, project, |root, key| {
            object_at(root, key)
                .shift_remove(name)
                .ok_or(Change::NotFound)?;
            if dialect == Dialect::Gemini {
                gemini_excluded(root, name, false);
            }
            Ok(())
        }),
    }
    .map_err(|c| c.into_error(file, name))
}

/// Switches the server `name` in `file` on or off (switchboard:
/// `enabled = false`; Gemini: `mcp.excluded`; other JSON dialects:
/// `"disabled": true`). Switching on removes the key.
///
/// # Errors
/// [`EditError`]: managed, not found, invalid file, unsupported dialect,
/// or the write failed.
pub fn set_enabled(
    locations: &Locations,
    target: &Target,
    name: &str,
    enabled: bool,
) -> Result<Edited, EditError> {
    ensure_not_managed(locations)?;
    let (file, dialect, project) = (&*target.file, target.dialect, target.project.as_deref());
    match dialect {
        Dialect::Switchboard => edit_toml(file, |doc| {
            let entry = servers_table(doc)
                .get_mut(name)
                .and_then(Item::as_table_like_mut)
                .ok_or(Change::NotFound)?;
            if enabled {
                entry.remove("enabled");
            } else {
                entry.insert("enabled", value(false));
            }
            Ok(())
        }),
        _ => edit_json(file, dialect, project, |root, key| {
            let entry = object_at(root, key)
                .get_mut(name)
                .and_then(Value::as_object_mut)
                .ok_or(Change::NotFound)?;
            if dialect == Dialect::Gemini {
                gemini_excluded(root, name, !enabled);
            } else if enabled {
                entry.shift_remove("disabled");
                entry.shift_remove("enabled");
            } else {
                entry.insert("disabled".into(), Value::Bool(true));
            }
            Ok(())
        }),
    }
    .map_err(|c| c.into_error(file, name))
}

enum Change {
    Exists,
    NotFound,
    Failed(EditError),
}

impl Change {
    fn into_error(self, file: &Path, name: &str) -> EditError {
        match self {
            Self::Exists => EditError::Exists {
                file: file.to_path_buf(),
                name: name.to_owned(),
            },
            Self::NotFound => EditError::NotFound {
                file: file.to_path_buf(),
                name: name.to_owned(),
            },
            Self::Failed(e) => e,
        }
    }
}

impl From<EditError> for Change {
    fn from(e: EditError) -> Self {
        Self::Failed(e)
    }
}

fn read_or_empty(file: &Path) -> Result<String, EditError> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(EditError::Io {
            file: file.to_path_buf(),
            action: "reading",
            source,
        }),
    }
}

fn edit_toml(
    file: &Path,
    change: impl FnOnce(&mut DocumentMut) -> Result<(), Change>,
) -> Result<Edited, Change> {
    let text = read_or_empty(file)?;
    let mut doc: DocumentMut =
        text.parse()
            .map_err(|e: toml_edit::TomlError| EditError::Invalid {
                file: file.to_path_buf(),
                message: e.to_string().trim_end().replace('\n', " "),
            })?;
    change(&mut doc)?;
    write_atomic(file, doc.to_string().as_bytes())?;
    Ok(Edited {
        file: file.to_path_buf(),
        note: None,
    })
}

fn servers_table(doc: &mut DocumentMut) -> &mut Table {
    let item = doc.entry("servers").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    if !item.is_table() {
        let mut t = Table::new();
        t.set_implicit(true);
        *item = Item::Table(t);
    }
    item.as_table_mut().expect("made a table above")
}

fn inline_strings(map: &std::collections::BTreeMap<String, String>) -> InlineTable {
    map.iter()
        .map(|(k, v)| (k.as_str(), toml_edit::Value::from(v.as_str())))
        .collect()
}

fn string_array(items: &[String]) -> toml_edit::Array {
    items.iter().map(String::as_str).collect()
}

fn toml_server(s: &ServerConfig) -> Table {
    let mut t = Table::new();
    match &s.transport {
        TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            t.insert("command", value(command.as_str()));
            if !args.is_empty() {
                t.insert("args", value(string_array(args)));
            }
            if !env.is_empty() {
                t.insert("env", value(inline_strings(env)));
            }
            if let Some(cwd) = cwd {
                t.insert("cwd", value(cwd.to_string_lossy().as_ref()));
            }
        }
        TransportConfig::Http { url, headers, kind } => {
            t.insert("url", value(url.as_str()));
            match kind {
                HttpKind::Streamable => {
                    t.insert("transport", value("streamable-http"));
                }
                HttpKind::Sse => {
                    t.insert("transport", value("sse"));
                }
                _ => {}
            }
            if !headers.is_empty() {
                t.insert("headers", value(inline_strings(headers)));
            }
        }
        TransportConfig::WebSocket { url, headers } => {
            t.insert("url", value(url.as_str()));
            t.insert("transport", value("websocket"));
            if !headers.is_empty() {
                t.insert("headers", value(inline_strings(headers)));
            }
        }
    }
    if !s.enabled {
        t.insert("enabled", value(false));
    }
    if s.required {
        t.insert("required", value(true));
    }
    if let Some(d) = s.startup_timeout {
        t.insert("startup_timeout", value(format_duration(d)));
    }
    if let Some(d) = s.request_timeout {
        t.insert("request_timeout", value(format_duration(d)));
    }
    if !s.tools.include.is_empty() || !s.tools.exclude.is_empty() {
        let mut tools = InlineTable::new();
        if !s.tools.include.is_empty() {
            tools.insert("include", string_array(&s.tools.include).into());
        }
        if !s.tools.exclude.is_empty() {
            tools.insert("exclude", string_array(&s.tools.exclude).into());
        }
        t.insert("tools", value(tools));
    }
    if let Some(o) = &s.oauth {
        let mut oauth = InlineTable::new();
        if let Some(id) = &o.client_id {
            oauth.insert("client_id", id.as_str().into());
        }
        if let Some(secret) = &o.client_secret {
            oauth.insert("client_secret", secret.as_str().into());
        }
        if !o.scopes.is_empty() {
            oauth.insert("scopes", string_array(&o.scopes).into());
        }
        if let Some(port) = o.callback_port {
            oauth.insert("callback_port", i64::from(port).into());
        }
        if let Some(issuer) = &o.issuer {
            oauth.insert("issuer", issuer.as_str().into());
        }
        t.insert("oauth", value(oauth));
    }
    if let Some(helper) = &s.headers_helper {
        t.insert("headers_helper", value(helper.command.as_str()));
        if helper.timeout != HeadersHelper::DEFAULT_TIMEOUT {
            t.insert(
                "headers_helper_timeout",
                value(format_duration(helper.timeout)),
            );
        }
    }
    t
}

fn servers_key(dialect: Dialect) -> &'static str {
    if dialect == Dialect::VsCode {
        "servers"
    } else {
        "mcpServers"
    }
}

fn edit_json(
    file: &Path,
    dialect: Dialect,
    project: Option<&str>,
    change: impl FnOnce(&mut Map<String, Value>, &str) -> Result<(), Change>,
) -> Result<Edited, Change> {
    if matches!(dialect, Dialect::Codex | Dialect::Goose) {
        return Err(EditError::Unsupported {
            file: file.to_path_buf(),
            reason: format!(
                "switchboard does not edit {dialect:?}'s file (it would lose its comments); edit it by hand, or add the server to switchboard's own file"
            ),
        }
        .into());
    }
    let text = read_or_empty(file)?;
    let mut root = if text.trim().is_empty() {
        Map::new()
    } else {
        match parse_jsonc(&text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(EditError::Invalid {
                    file: file.to_path_buf(),
                    message: "the top level is not an object".into(),
                }
                .into());
            }
            Err(e) => {
                return Err(EditError::Invalid {
                    file: file.to_path_buf(),
                    message: e.to_string(),
                }
                .into());
            }
        }
    };
    let container = match project {
        Some(project) => object_at(object_at(&mut root, "projects"), project),
        None => &mut root,
    };
    change(container, servers_key(dialect))?;
    let mut out =
        serde_json::to_string_pretty(&Value::Object(root)).map_err(|e| EditError::Invalid {
            file: file.to_path_buf(),
            message: e.to_string(),
        })?;
    out.push('\n');
    write_atomic(file, out.as_bytes())?;
    let had_comments = text.contains("//")
        && text.lines().any(|l| l.trim_start().starts_with("//"))
        || text.contains("/*");
    Ok(Edited {
        file: file.to_path_buf(),
        note: had_comments
            .then(|| "the file's comments could not be kept (JSON is rewritten whole)".to_owned()),
    })
}

fn object_at<'m>(root: &'m mut Map<String, Value>, key: &str) -> &'m mut Map<String, Value> {
    let slot = root.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut().expect("made an object above")
}

fn gemini_excluded(root: &mut Map<String, Value>, name: &str, excluded: bool) {
    let mcp = object_at(root, "mcp");
    let list = mcp.entry("excluded").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let list = list.as_array_mut().expect("made an array above");
    list.retain(|v| v.as_str() != Some(name));
    if excluded {
        list.push(Value::String(name.to_owned()));
    }
    if list.is_empty() {
        mcp.shift_remove("excluded");
        if mcp.is_empty() {
            root.shift_remove("mcp");
        }
    }
}

fn strings(map: &std::collections::BTreeMap<String, String>) -> Value {
    Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn json_server(file: &Path, dialect: Dialect, s: &ServerConfig) -> Result<Value, EditError> {
    let unsupported = |what: &str| EditError::Unsupported {
        file: file.to_path_buf(),
        reason: format!(
            "{dialect:?}'s file cannot hold {what}; add the server to switchboard's own file"
        ),
    };
    let mut o = Map::new();
    let typed = matches!(dialect, Dialect::ClaudeCode | Dialect::VsCode);
    match &s.transport {
        TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            if typed {
                o.insert("type".into(), json!("stdio"));
            }
            o.insert("command".into(), json!(command));
            o.insert("args".into(), json!(args));
            if !env.is_empty() {
                o.insert("env".into(), strings(env));
            }
            if let Some(cwd) = cwd {
                if !matches!(dialect, Dialect::VsCode | Dialect::Gemini) {
                    return Err(unsupported("a working directory (cwd)"));
                }
                o.insert("cwd".into(), json!(cwd));
            }
        }
        TransportConfig::Http { url, headers, kind } => {
            match (dialect, kind) {
                (Dialect::ClaudeDesktop, _) => return Err(unsupported("a remote server")),
                (Dialect::Gemini, HttpKind::Sse) => {
                    o.insert("url".into(), json!(url));
                }
                (Dialect::Gemini, _) => {
                    o.insert("httpUrl".into(), json!(url));
                }
                (Dialect::Cursor, _) => {
                    o.insert("url".into(), json!(url));
                }
                (_, HttpKind::Sse) => {
                    o.insert("type".into(), json!("sse"));
                    o.insert("url".into(), json!(url));
                }
                _ => {
                    o.insert("type".into(), json!("http"));
                    o.insert("url".into(), json!(url));
                }
            }
            if !headers.is_empty() {
                o.insert("headers".into(), strings(headers));
            }
        }
        TransportConfig::WebSocket { url, headers } => {
            if dialect != Dialect::ClaudeCode {
                return Err(unsupported("a WebSocket server"));
            }
            o.insert("type".into(), json!("ws"));
            o.insert("url".into(), json!(url));
            if !headers.is_empty() {
                o.insert("headers".into(), strings(headers));
            }
        }
    }
    if let Some(t) = s.request_timeout {
        if !matches!(dialect, Dialect::ClaudeCode | Dialect::Gemini) {
            return Err(unsupported("a request timeout"));
        }
        o.insert("timeout".into(), json!(t.as_millis() as u64));
    }
    if !s.tools.include.is_empty() || !s.tools.exclude.is_empty() {
        if dialect != Dialect::Gemini {
            return Err(unsupported("a tool filter"));
        }
        if !s.tools.include.is_empty() {
            o.insert("includeTools".into(), json!(s.tools.include));
        }
        if !s.tools.exclude.is_empty() {
            o.insert("excludeTools".into(), json!(s.tools.exclude));
        }
    }
    if s.startup_timeout.is_some() || s.required {
        return Err(unsupported("a startup timeout or `required`"));
    }
    if let Some(oauth) = &s.oauth {
        let mut a = Map::new();
        if let Some(id) = &oauth.client_id {
            a.insert("clientId".into(), json!(id));
        }
        if let Some(secret) = &oauth.client_secret {
            a.insert("clientSecret".into(), json!(secret));
        }
        if !oauth.scopes.is_empty() {
            a.insert("scopes".into(), json!(oauth.scopes));
        }
        if let Some(port) = oauth.callback_port {
            a.insert("callbackPort".into(), json!(port));
        }
        if let Some(issuer) = &oauth.issuer {
            a.insert("issuer".into(), json!(issuer));
        }
        o.insert("oauth".into(), Value::Object(a));
    }
    if let Some(helper) = &s.headers_helper {
        if dialect != Dialect::ClaudeCode {
            return Err(unsupported("a headers helper"));
        }
        o.insert("headersHelper".into(), json!(helper.command));
    }
    if !s.enabled && dialect != Dialect::Gemini {
        o.insert("disabled".into(), json!(true));
    }
    Ok(Value::Object(o))
}

/// Replaces `file` atomically, through a temporary file that only its
/// owner can read and that is never a planted symlink. A new file is 0600
/// (it may hold server details, even secrets, until the user turns them
/// into references); a file replaced keeps its mode. Missing directories
/// are made 0700; existing ones are left as they are.
fn write_atomic(file: &Path, bytes: &[u8]) -> Result<(), EditError> {
    let io = |action, source| EditError::Io {
        file: file.to_path_buf(),
        action,
        source,
    };
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| io("creating its directory", e))?;
    crate::private_file::write_atomically(file, bytes, true).map_err(|e| io("writing", e))
}

#[cfg(all(test, unix))]
mod private_write_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn a_new_file_is_private_an_existing_one_keeps_its_mode_and_links_are_replaced() {
        let dir = std::env::temp_dir().join(format!("switchboard-edit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
        let new = dir.join("config.toml");
        write_atomic(&new, b"a = 1\n").unwrap();
        assert_eq!(mode(&new), 0o600);
        let shared = dir.join("switchboard.toml");
        std::fs::write(&shared, "").unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&shared, b"b = 2\n").unwrap();
        assert_eq!(mode(&shared), 0o644);
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let linked = dir.join("linked.toml");
        std::os::unix::fs::symlink(&victim, &linked).unwrap();
        write_atomic(&linked, b"c = 3\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let _ = std::fs::remove_dir_all(dir);
    }
}
