//! One loader for every dialect: which files are read, which server wins.
//!
//! # Precedence
//!
//! 1. A managed (administrator) file — switchboard's `managed.toml` with
//!    servers, or Claude Code's `managed-mcp.json` — is exclusive: when one
//!    exists only its servers load (every other file, `--config` too, is
//!    ignored, and edits are refused).
//! 2. Otherwise, for two servers of the same **name**, the higher scope
//!    wins: `--config FILE` (explicit) > local > project > user. Within a
//!    scope, switchboard's own file beats an imported one (another
//!    client's), imports rank Claude Code, VS Code, Cursor, Gemini CLI,
//!    Codex, goose, Claude Desktop, and among `.mcp.json` files the one
//!    nearer the working directory wins. Two exceptions: an entry that
//!    starts unattended beats one that must ask a VS Code `${input:…}`
//!    (another client's working copy of the same server), unless the one
//!    that asks is in switchboard's own file or `--config`; and a project
//!    entry not approved yet never displaces a server the user can start:
//!    it waits (`SkipReason::AwaitsApproval`, a warning naming
//!    `switchboard approve NAME`), and the user's server runs until it is
//!    approved. A loser is reported (info) as shadowed — except another
//!    client's entry for another server (a different identity, see 3: two
//!    accounts under one name), which stays, renamed `NAME-CLIENT`
//!    (`github-cursor`, after [`Dialect::id`]; the same name on every run).
//!    The user's own choice stands: a name switchboard's file or
//!    `--config` gives, or one client's own scopes overriding each other,
//!    shadow as above; an entry that asks an input, or waits for approval,
//!    is not renamed either.
//! 3. Two servers of different names with the same **identity**
//!    ([`ServerConfig::identity`]: the command array, working directory,
//!    env names and values, or the URL and headers, the transport, headers
//!    helper and OAuth block) are one server configured twice: one from
//!    the user's own files beats one from a project file (a project entry
//!    never displaces the user's server), then one from `--config`, then
//!    one configured by hand in a switchboard file beats an imported one;
//!    otherwise the higher precedence wins. The other is reported as a
//!    skipped duplicate; a name the user types is still that server
//!    ([`LoadedConfig::named`]). Two entries that differ in anything (two
//!    accounts by env or headers) both stay.
//! 4. Policies (every allow and deny list read, deny wins) block servers;
//!    blocked servers are reported with the rule and file that block them.
//!
//! Before all this, an entry that runs switchboard's own gateway
//! (`switchboard serve`, as `claude mcp add switchboard -- switchboard
//! serve` writes it) is skipped ([`SkipReason::Gateway`]): a hub that
//! started it would start every server twice.
//!
//! A file that cannot be read or parsed is an error diagnostic with its
//! line and column; everything else still loads.

use std::path::{Path, PathBuf};

use super::diag::Diagnostic;
use super::dialect::{self, FileLoad, InputSpec};
use super::expand::Expander;
use super::locations::Locations;
use super::model::{Dialect, Scope, ServerConfig, Trust};
use super::policy::Policy;

/// What to read.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// Files given with `--config`, each read in the dialect its name and
    /// content suggest; they outrank every standard file.
    pub explicit: Vec<PathBuf>,
    /// Read only the explicit files (no standard file).
    pub strict: bool,
    /// Read only switchboard's own files, not other clients'.
    pub no_imports: bool,
    /// The approvals file to consult instead of
    /// [`Locations::approvals_file`].
    pub approvals: Option<PathBuf>,
}

impl LoadOptions {
    /// Every standard file, no explicit one.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a `--config FILE`.
    #[must_use]
    pub fn with_config(mut self, file: impl Into<PathBuf>) -> Self {
        self.explicit.push(file.into());
        self
    }

    /// Only the explicit files.
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Only switchboard's own files.
    #[must_use]
    pub fn no_imports(mut self, no_imports: bool) -> Self {
        self.no_imports = no_imports;
        self
    }

    /// Consults this approvals file instead of the user's.
    #[must_use]
    pub fn approvals(mut self, file: impl Into<PathBuf>) -> Self {
        self.approvals = Some(file.into());
        self
    }
}

/// Why a configured server is not among [`LoadedConfig::servers`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// A server of the same name with higher precedence won.
    Shadowed,
    /// The same server (signature) under another name won.
    Duplicate,
    /// A policy blocks it (the message says which rule, in which file).
    Blocked(String),
    /// A project server that would replace one of the same name from the
    /// user's own files, not approved yet: the user's runs until it is
    /// (`kept` names it; [`LoadedConfig::awaiting_approval`] lists these).
    AwaitsApproval,
    /// switchboard's own gateway (`switchboard serve`), as a host's file
    /// lists it: a hub that started it would start every server twice.
    Gateway,
}

/// A configured server that does not run, and why.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Skipped {
    /// The server as configured.
    pub server: ServerConfig,
    /// Why it is left out.
    pub reason: SkipReason,
    /// The name of the server kept instead (shadowed, duplicate).
    pub kept: Option<String>,
}

/// The result of loading: servers plus everything found on the way.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct LoadedConfig {
    /// The servers that won, sorted by name, references unexpanded.
    pub servers: Vec<ServerConfig>,
    /// Bad files and entries, shadowed and duplicate servers, blocked
    /// servers, skipped entries, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// Servers left out (shadowed, duplicates, blocked).
    pub skipped: Vec<Skipped>,
    /// The merged policy.
    pub policy: Policy,
    /// The managed file in force, if any: the only source, and no edits.
    pub managed: Option<PathBuf>,
    /// The files that existed and were read.
    pub files: Vec<PathBuf>,
    /// VS Code `inputs` declared by the files read (only files the user
    /// trusts or approved a server of: an unapproved file cannot make
    /// switchboard ask anything).
    pub inputs: Vec<InputSpec>,
    /// The approvals file consulted.
    pub approvals: PathBuf,
    /// Where servers' sampling requests go: the `[sampling]` of the
    /// user's own (or a managed, or the `--config`) switchboard file; a
    /// project's is ignored, with a warning.
    pub sampling: Option<super::model::SamplingSettings>,
}

impl LoadedConfig {
    /// The winning server called `name`.
    pub fn get(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The server a name the user typed means: the winner of that name,
    /// else an entry skipped as a [duplicate](SkipReason::Duplicate) of a
    /// server that runs. A typed name is never refused as a duplicate: that
    /// entry is the same server, so it is taken back among
    /// [`servers`](Self::servers) under its own name (still subject to the
    /// policy) and returned.
    pub fn named(&mut self, name: &str) -> Option<&ServerConfig> {
        if self.get(name).is_none() {
            let at = self.skipped.iter().position(|s| {
                s.server.name == name
                    && s.reason == SkipReason::Duplicate
                    && s.kept.as_deref().is_some_and(|k| self.get(k).is_some())
                    && self.policy.check(&s.server).is_ok()
            })?;
            let server = self.skipped.remove(at).server;
            let at = self.servers.partition_point(|s| s.name < server.name);
            self.servers.insert(at, server);
        }
        self.get(name)
    }

    /// Whether any file or entry could not be read.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The servers from project files the user has not approved (or
    /// changed since): not to be started or expanded.
    pub fn needs_approval(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.iter().filter(|s| !s.trust.allows_start())
    }

    /// Project servers waiting for approval to replace a server of the
    /// same name from the user's own files (which runs until then): what
    /// `approve NAME` and `approve --all` approve besides
    /// [`needs_approval`](Self::needs_approval).
    pub fn awaiting_approval(&self) -> impl Iterator<Item = &ServerConfig> {
        self.skipped
            .iter()
            .filter(|s| s.reason == SkipReason::AwaitsApproval)
            .map(|s| &s.server)
    }

    /// A non-interactive [`Expander`] that knows the files' `inputs`; add
    /// a prompt with [`Expander::with_prompt`].
    pub fn expander<'a>(&self, locations: &'a Locations) -> Expander<'a> {
        Expander::new(locations).with_inputs(self.inputs.iter().cloned())
    }
}

/// Reads every file `options` and `locations` name and merges them.
pub fn load(locations: &Locations, options: &LoadOptions) -> LoadedConfig {
    let mut loaded = LoadedConfig::default();
    let mut found: Vec<(usize, ServerConfig)> = Vec::new();
    let mut said = Said::default();

    // Policies in the managed directory apply whatever else is read.
    let settings = locations.claude_code_managed_settings();
    if settings.exists() {
        read_into(
            &mut loaded,
            &settings,
            Dialect::ClaudeCode,
            Scope::Managed,
            locations,
            &mut found,
            &mut said,
        );
        found.clear();
    }
    for (file, dialect) in locations.managed_files() {
        if file.exists() {
            let before = found.len();
            read_into(
                &mut loaded,
                &file,
                dialect,
                Scope::Managed,
                locations,
                &mut found,
                &mut said,
            );
            if found.len() > before || dialect == Dialect::ClaudeCode {
                loaded.managed.get_or_insert(file);
            }
        }
    }

    if let Some(managed) = &loaded.managed {
        for file in &options.explicit {
            loaded.diagnostics.push(
                Diagnostic::warning(format!(
                    "ignored: the managed file {} is in force and is the only source of servers",
                    managed.display()
                ))
                .in_file(file),
            );
        }
    } else {
        let mut files: Vec<(PathBuf, Option<Dialect>, Scope)> = options
            .explicit
            .iter()
            .map(|f| (f.clone(), None, Scope::Explicit))
            .collect();
        if !options.strict {
            // A standard file also given with --config is read once, as
            // the explicit one.
            let given: Vec<PathBuf> = options.explicit.iter().map(|f| same_file(f)).collect();
            files.extend(
                locations
                    .standard_files()
                    .into_iter()
                    .filter(|(_, d, _)| !options.no_imports || *d == Dialect::Switchboard)
                    .filter(|(f, _, _)| !given.contains(&same_file(f)))
                    .map(|(f, d, s)| (f, Some(d), s)),
            );
        }
        for (file, dialect, scope) in files {
            if scope == Scope::Explicit && !file.exists() {
                loaded.diagnostics.push(
                    Diagnostic::error(
                        "the file given with --config does not exist; check the path",
                    )
                    .in_file(&file),
                );
                continue;
            }
            if !file.is_file() {
                continue;
            }
            if matches!(scope, Scope::Project | Scope::Local)
                && !locations.is_user_file(&file)
                && let Some(why) = file
                    .parent()
                    .and_then(super::trust::unsafe_dir)
                    .or_else(|| super::trust::unsafe_dir(&file))
            {
                loaded
                    .diagnostics
                    .push(Diagnostic::warning(why).in_file(&file));
                continue;
            }
            read_into(
                &mut loaded,
                &file,
                dialect.unwrap_or(Dialect::Switchboard),
                scope,
                locations,
                &mut found,
                &mut said,
            );
        }
    }

    read_claude_settings(locations, &mut said);
    let approvals_file = options
        .approvals
        .clone()
        .unwrap_or_else(|| locations.approvals_file());
    judge(&mut loaded, locations, approvals_file, &said, &mut found);
    // An input is asked only for a file the user trusts or approved a
    // server of.
    loaded.inputs = std::mem::take(&mut said.inputs)
        .into_iter()
        .filter(|(file, scope, _)| {
            let project =
                matches!(scope, Scope::Project | Scope::Local) && !locations.is_user_file(file);
            !project
                || found
                    .iter()
                    .any(|(_, s)| &s.origin.file == file && s.trust.allows_start())
        })
        .map(|(_, _, input)| input)
        .collect();
    for (_, s) in &mut found {
        if s.origin.dialect == Dialect::ClaudeCode && s.enabled && said.off.contains(&s.name) {
            s.enabled = false;
            loaded.diagnostics.push(
                Diagnostic::info(
                    "switched off for this project in ~/.claude.json (disabledMcpServers / disabledMcpjsonServers): loaded as disabled",
                )
                .in_file(&s.origin.file)
                .server(&s.name),
            );
        }
    }

    skip_gateways(&mut loaded, locations, &mut found);
    resolve(&mut loaded, found);
    one_unprefixed(&mut loaded);
    loaded
}

/// Leaves out the entries that run switchboard's own gateway (a host's
/// file after `claude mcp add switchboard -- switchboard serve`), before
/// names are settled: the gateway never shadows a server, nor is shadowed.
fn skip_gateways(
    loaded: &mut LoadedConfig,
    locations: &Locations,
    found: &mut Vec<(usize, ServerConfig)>,
) {
    let (gateways, servers): (Vec<_>, Vec<_>) = std::mem::take(found)
        .into_iter()
        .partition(|(_, s)| super::itself::runs_gateway(s, locations));
    *found = servers;
    for (_, server) in gateways {
        loaded.diagnostics.push(
            Diagnostic::info(super::itself::WHY)
                .in_file(&server.origin.file)
                .server(&server.name),
        );
        loaded.skipped.push(Skipped {
            server,
            reason: SkipReason::Gateway,
            kept: None,
        });
    }
}

/// At most one server keeps its own names whatever the others have
/// (`prefix = "never"`): two could offer the same name, and neither may
/// take the other's. Every later one is refused that setting (an error
/// naming both servers and their files) and named `server__name`.
fn one_unprefixed(loaded: &mut LoadedConfig) {
    let mut first: Option<(String, PathBuf)> = None;
    for s in &mut loaded.servers {
        if s.prefix != Some(super::Prefix::Never) || !s.enabled {
            continue;
        }
        match &first {
            None => first = Some((s.name.clone(), s.origin.file.clone())),
            Some((name, file)) => {
                loaded.diagnostics.push(
                    Diagnostic::error(format!(
                        "`prefix = \"never\"` is set for both `{name}` ({}) and `{}`: their names could collide; `{}` is served as `{}__name` until one of them says \"on-collision\" or \"always\"",
                        file.display(),
                        s.name,
                        s.name,
                        s.name,
                    ))
                    .in_file(&s.origin.file)
                    .server(&s.name),
                );
                s.prefix = Some(super::Prefix::Always);
            }
        }
    }
}

fn same_file(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Reads one file in a known dialect and scope, without the rest.
pub fn load_file(
    locations: &Locations,
    file: &Path,
    dialect: Dialect,
    scope: Scope,
) -> LoadedConfig {
    load_one(locations, |loaded, found, said| {
        read_into(loaded, file, dialect, scope, locations, found, said);
    })
}

/// A configuration given as `text` rather than read from a file (one kept
/// in a gateway's shared state, say), in `dialect` and `scope`, as
/// [`load_file`] would read it; `name` stands for the file in diagnostics
/// and relative paths. No file is read for it.
pub fn load_text(
    locations: &Locations,
    name: &Path,
    text: &str,
    dialect: Dialect,
    scope: Scope,
) -> LoadedConfig {
    load_one(locations, |loaded, found, said| {
        parse_into(loaded, name, text, dialect, scope, locations, found, said);
    })
}

fn load_one(
    locations: &Locations,
    read: impl FnOnce(&mut LoadedConfig, &mut Vec<(usize, ServerConfig)>, &mut Said),
) -> LoadedConfig {
    let mut loaded = LoadedConfig::default();
    let mut found = Vec::new();
    let mut said = Said::default();
    read(&mut loaded, &mut found, &mut said);
    judge(
        &mut loaded,
        locations,
        locations.approvals_file(),
        &said,
        &mut found,
    );
    loaded.inputs = said.inputs.into_iter().map(|(_, _, i)| i).collect();
    skip_gateways(&mut loaded, locations, &mut found);
    resolve(&mut loaded, found);
    loaded
}

fn read_into(
    loaded: &mut LoadedConfig,
    file: &Path,
    dialect: Dialect,
    scope: Scope,
    locations: &Locations,
    found: &mut Vec<(usize, ServerConfig)>,
    said: &mut Said,
) {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            loaded
                .diagnostics
                .push(Diagnostic::error(format!("cannot read the file: {e}")).in_file(file));
            return;
        }
    };
    let dialect = if scope == Scope::Explicit {
        dialect::sniff(file, &text)
    } else {
        dialect
    };
    parse_into(loaded, file, &text, dialect, scope, locations, found, said);
}

#[allow(clippy::too_many_arguments)] // read_into's, and the text
fn parse_into(
    loaded: &mut LoadedConfig,
    file: &Path,
    text: &str,
    dialect: Dialect,
    scope: Scope,
    locations: &Locations,
    found: &mut Vec<(usize, ServerConfig)>,
    said: &mut Said,
) {
    let FileLoad {
        servers,
        diagnostics,
        inputs,
        policy,
        disable: off,
        enable,
        enable_all,
        trusted_projects,
        sampling,
    } = dialect::parse(
        file,
        text,
        dialect,
        scope,
        &[locations.cwd(), locations.project_root()],
    );
    if let Some(sampling) = sampling {
        if matches!(scope, Scope::User | Scope::Managed | Scope::Explicit)
            || locations.is_user_file(file)
        {
            // Managed files are read first: theirs stands.
            loaded.sampling.get_or_insert(sampling);
        } else {
            loaded.diagnostics.push(
                Diagnostic::warning(
                    "`[sampling]` in a project's file is ignored: where your model requests go, \
                     and with which key, is said in your own file (~/.config/switchboard/config.toml)",
                )
                .in_file(file),
            );
        }
    }
    let index = loaded.files.len();
    loaded.files.push(file.to_path_buf());
    loaded.diagnostics.extend(diagnostics);
    said.inputs
        .extend(inputs.into_iter().map(|i| (file.to_path_buf(), scope, i)));
    loaded.policy.allow.extend(policy.allow);
    loaded.policy.deny.extend(policy.deny);
    loaded.policy.tools.allow.extend(policy.tools.allow);
    loaded.policy.tools.deny.extend(policy.tools.deny);
    loaded.policy.tools.ask.extend(policy.tools.ask);
    said.off.extend(off);
    // What the user decided in other clients counts only from the user's
    // own files, never from a project's.
    let users = !matches!(scope, Scope::Project | Scope::Local) || locations.is_user_file(file);
    if users {
        let here = file.display().to_string();
        if enable_all {
            said.enable_all.get_or_insert(format!(
                "Claude Code's enableAllProjectMcpServers in {here}"
            ));
        }
        for name in enable {
            said.enable
                .entry(name)
                .or_insert_with(|| format!("Claude Code's enabledMcpjsonServers in {here}"));
        }
        said.trusted_projects
            .extend(trusted_projects.into_iter().map(|p| (p, here.clone())));
    }
    found.extend(servers.into_iter().map(|s| (index, s)));
}

/// Gives every server found its trust, from the approvals in
/// `approvals_file` and what the user's files said.
fn judge(
    loaded: &mut LoadedConfig,
    locations: &Locations,
    approvals_file: PathBuf,
    said: &Said,
    found: &mut [(usize, ServerConfig)],
) {
    let approvals = super::trust::Approvals::open(&approvals_file);
    let decisions = said.decisions(locations);
    for (_, server) in found {
        super::trust::assess(locations, &approvals, &decisions, server);
    }
    loaded.approvals = approvals_file;
}

/// What the files read said beside their servers.
#[derive(Default)]
struct Said {
    /// Servers switched off for this project (Claude Code).
    off: Vec<String>,
    /// `.mcp.json` servers allowed for this project (name → where said).
    enable: std::collections::BTreeMap<String, String>,
    /// Every `.mcp.json` server allowed for this project (where said).
    enable_all: Option<String>,
    /// Projects Codex trusts, with the file that says so.
    trusted_projects: Vec<(PathBuf, String)>,
    /// VS Code inputs, with the file and scope that declared them.
    inputs: Vec<(PathBuf, Scope, InputSpec)>,
}

impl Said {
    fn decisions(&self, locations: &Locations) -> super::trust::Decisions {
        let here = [locations.project_root(), locations.cwd()];
        super::trust::Decisions {
            enable_all_mcp_json: self.enable_all.clone(),
            enabled_mcp_json: self.enable.clone(),
            codex_trusted: self
                .trusted_projects
                .iter()
                .find(|(p, _)| here.contains(&p.as_path()))
                .map(|(p, file)| format!("Codex trusts {} (trust_level in {file})", p.display())),
        }
    }
}

/// Claude Code's user settings (`~/.claude/settings.json`): the
/// `.mcp.json` servers the user allowed or switched off everywhere.
fn read_claude_settings(locations: &Locations, said: &mut Said) {
    let file = locations.home().join(".claude").join("settings.json");
    let Ok(text) = std::fs::read_to_string(&file) else {
        return;
    };
    let Ok(serde_json::Value::Object(root)) = dialect::json_value(&text) else {
        return;
    };
    let here = file.display().to_string();
    let names = |key: &str| -> Vec<String> {
        root.get(key)
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(serde_json::Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    if root.get("enableAllProjectMcpServers") == Some(&serde_json::Value::Bool(true)) {
        said.enable_all.get_or_insert(format!(
            "Claude Code's enableAllProjectMcpServers in {here}"
        ));
    }
    for name in names("enabledMcpjsonServers") {
        said.enable
            .entry(name)
            .or_insert_with(|| format!("Claude Code's enabledMcpjsonServers in {here}"));
    }
    said.off.extend(names("disabledMcpjsonServers"));
}

/// Precedence rank: lower wins. Scope first, then switchboard's own file
/// before imported ones, then the dialects in a fixed order (Claude Code,
/// VS Code, Cursor, Gemini CLI, Codex, goose, Claude Desktop), then the
/// later file read (a nearer `.mcp.json`).
fn rank(file_index: usize, s: &ServerConfig) -> (Scope, u8, std::cmp::Reverse<usize>) {
    let dialect = match s.origin.dialect {
        Dialect::Switchboard => 0,
        Dialect::ClaudeCode => 1,
        Dialect::VsCode => 2,
        Dialect::Cursor => 3,
        Dialect::Gemini => 4,
        Dialect::Codex => 5,
        Dialect::Goose => 6,
        _ => 7,
    };
    (s.origin.scope, dialect, std::cmp::Reverse(file_index))
}

/// Whether the entry names a VS Code `${input:ID}`: it cannot start
/// without asking the user.
fn needs_input(s: &ServerConfig) -> bool {
    super::trust::approval_fields(s)
        .values()
        .any(|v| v.contains("${input:"))
}

/// Whether the user chose this entry's name for switchboard: written in
/// switchboard's own file or in the file given with `--config`.
fn chosen(s: &ServerConfig) -> bool {
    s.origin.dialect == Dialect::Switchboard || s.origin.scope == Scope::Explicit
}

fn resolve(loaded: &mut LoadedConfig, mut found: Vec<(usize, ServerConfig)>) {
    // Names: the first of each name wins, except that a project entry not
    // approved yet never displaces the user's own server of that name: it
    // waits (a cloned repository can neither stop nor replace a server the
    // user configured; once approved, the project's wins by its scope).
    // `--config` comes first whatever; then an entry that can start
    // unattended before one that must ask a `${input:…}` (another client's
    // copy of the same server that works), unless the user's own file has
    // it.
    let configured: std::collections::BTreeSet<String> =
        found.iter().map(|(_, s)| s.name.clone()).collect();
    found.sort_by_key(|(i, s)| {
        (
            !s.trust.allows_start(),
            s.origin.scope != Scope::Explicit,
            needs_input(s) && !chosen(s),
            rank(*i, s),
        )
    });
    let mut winners: Vec<(usize, ServerConfig)> = Vec::new();
    for (i, mut s) in found {
        if let Some((kept_at, kept)) = winners.iter().find(|(_, w)| w.name == s.name) {
            if !s.trust.allows_start() && rank(i, &s) < rank(*kept_at, kept) {
                loaded.diagnostics.push(
                    Diagnostic::warning(format!(
                        "waits for approval to replace `{}` from {} (yours, which runs until then): `switchboard approve {}`",
                        kept.name,
                        kept.origin.file.display(),
                        s.name
                    ))
                    .in_file(&s.origin.file)
                    .server(&s.name),
                );
                let kept = Some(kept.name.clone());
                loaded.skipped.push(Skipped {
                    server: s,
                    reason: SkipReason::AwaitsApproval,
                    kept,
                });
                continue;
            }
            // Another client's entry of that name for another server (two
            // accounts: other env or headers) stays reachable under a name
            // of its own, `NAME-CLIENT`, stable from run to run. Not when
            // the user's own file chose the name (an import it replaces),
            // nor within one client (its own scopes override), nor for an
            // entry that could not start unattended anyway.
            let own = format!("{}-{}", s.name, s.origin.dialect.id());
            if !chosen(kept)
                && kept.origin.dialect != s.origin.dialect
                && kept.identity() != s.identity()
                && s.trust == Trust::Trusted
                && !needs_input(&s)
                && !configured.contains(&own)
                && !winners.iter().any(|(_, w)| w.name == own)
            {
                loaded.diagnostics.push(
                    Diagnostic::info(format!(
                        "this entry of `{}` is served as `{own}`: `{}` in {} is another server (other env, headers or command)",
                        s.name,
                        kept.name,
                        kept.origin.file.display(),
                    ))
                    .in_file(&s.origin.file)
                    .server(&own),
                );
                s.name = own;
                winners.push((i, s));
                continue;
            }
            let why = if needs_input(&s) && !needs_input(kept) && !chosen(&s) {
                "it can start without asking for a ${input:…}".to_owned()
            } else {
                format!("{:?} scope wins", kept.origin.scope)
            };
            loaded.diagnostics.push(
                Diagnostic::info(format!(
                    "shadowed by `{}` in {} ({why})",
                    kept.name,
                    kept.origin.file.display(),
                ))
                .in_file(&s.origin.file)
                .server(&s.name),
            );
            let kept = Some(kept.name.clone());
            loaded.skipped.push(Skipped {
                server: s,
                reason: SkipReason::Shadowed,
                kept,
            });
        } else {
            winners.push((i, s));
        }
    }
    // Identities: the user's own files first (a project's entry never
    // displaces the user's server, nor escapes the user's rules for it
    // under a new name), then hand-made (switchboard), then precedence.
    // `--config FILE` is the user's choice for this run: its entries keep
    // their names.
    winners.sort_by_key(|(i, s)| {
        (
            s.trust != Trust::Trusted,
            s.origin.scope != Scope::Explicit,
            s.origin.dialect != Dialect::Switchboard,
            rank(*i, s),
        )
    });
    let mut kept: Vec<ServerConfig> = Vec::new();
    for (_, s) in winners {
        let identity = s.identity();
        if let Some(other) = kept.iter().find(|k| k.identity() == identity) {
            loaded.diagnostics.push(
                Diagnostic::info(format!(
                    "the same server as `{}` in {} ({}, the same env, headers and settings); skipped as a duplicate",
                    other.name,
                    other.origin.file.display(),
                    s.signature()
                ))
                .in_file(&s.origin.file)
                .server(&s.name),
            );
            let name = Some(other.name.clone());
            loaded.skipped.push(Skipped {
                server: s,
                reason: SkipReason::Duplicate,
                kept: name,
            });
            continue;
        }
        if let Err(denied) = loaded.policy.check(&s) {
            loaded.diagnostics.push(
                Diagnostic::warning(format!("not started: {}", denied.reason))
                    .in_file(&s.origin.file)
                    .server(&s.name),
            );
            loaded.skipped.push(Skipped {
                server: s,
                reason: SkipReason::Blocked(denied.reason),
                kept: None,
            });
            continue;
        }
        kept.push(s);
    }
    kept.sort_by(|a, b| a.name.cmp(&b.name));
    loaded.servers = kept;
}
