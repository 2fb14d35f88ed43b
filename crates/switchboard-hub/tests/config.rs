//! The config loader over fixture files modelled on each client's real
//! format: every dialect loads to the same normalized servers; precedence,
//! duplicates, policies, bad files, expansion and edits, each in a
//! throwaway home and project (the real home is never read).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use switchboard_hub::config::{
    Approvals, Dialect, EditError, HeadersHelper, HttpKind, LoadOptions, Locations, Origin, Scope,
    ServerConfig, Severity, SkipReason, Target, ToolFilter, TransportConfig, add_server, load,
    load_file, remove_server, set_enabled,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "switchboard-config-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        // Canonical, so paths compare equal to what the loader computes.
        Self(dir.canonicalize().unwrap())
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(fixtures().join(rel)).unwrap()
}

fn dummy_origin() -> Origin {
    Origin {
        file: PathBuf::new(),
        dialect: Dialect::Switchboard,
        scope: Scope::User,
    }
}

/// What approving every server of a project file does to the loaded
/// config (approvals themselves are tested in tests/trust.rs).
fn approve_all(loaded: &mut switchboard_hub::config::LoadedConfig) {
    for server in &mut loaded.servers {
        server.trust = switchboard_hub::config::Trust::Approved;
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The three servers every fixture describes, as far as `dialect` can say
/// them (what a format has no key for is left at its default).
fn expected(dialect: Dialect) -> Vec<ServerConfig> {
    use Dialect::*;
    let mut files = ServerConfig::new(
        "files",
        TransportConfig::Stdio {
            command: "npx".into(),
            args: strings(&["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]),
            env: BTreeMap::from([
                ("API_KEY".into(), "${API_KEY}".into()),
                ("LOG_LEVEL".into(), "debug".into()),
            ]),
            cwd: None,
        },
        dummy_origin(),
    );
    if matches!(dialect, Switchboard | Codex | Gemini | Goose) {
        files.request_timeout = Some(Duration::from_secs(30));
    }
    let docs = ServerConfig::new(
        "docs",
        TransportConfig::Http {
            url: "https://mcp.example.com/mcp".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer ${DOCS_TOKEN}".into())]),
            // VS Code's "http" and Cursor's bare url try Streamable HTTP,
            // then fall back to SSE.
            kind: if matches!(dialect, VsCode | Cursor) {
                HttpKind::Auto
            } else {
                HttpKind::Streamable
            },
        },
        dummy_origin(),
    );
    let mut legacy = ServerConfig::new(
        "legacy",
        TransportConfig::Stdio {
            command: "uvx".into(),
            args: strings(&["legacy-server"]),
            env: BTreeMap::new(),
            cwd: None,
        },
        dummy_origin(),
    );
    if matches!(dialect, Switchboard | Codex | Gemini | Goose) {
        legacy.enabled = false;
        legacy.tools = ToolFilter {
            include: strings(&["read_*"]),
            exclude: if dialect == Goose {
                vec![] // goose has available_tools only
            } else {
                strings(&["delete_*"])
            },
        };
    }
    let mut servers = vec![docs, files, legacy];
    if dialect == ClaudeDesktop {
        servers.remove(0); // Claude Desktop's file holds local servers only
    }
    servers
}

fn without_origin(mut servers: Vec<ServerConfig>) -> Vec<ServerConfig> {
    for s in &mut servers {
        s.origin = dummy_origin();
    }
    servers
}

#[test]
fn every_dialect_loads_the_same_servers() {
    let cases = [
        ("switchboard/switchboard.toml", Dialect::Switchboard),
        ("claude-code/.mcp.json", Dialect::ClaudeCode),
        (
            "claude-desktop/claude_desktop_config.json",
            Dialect::ClaudeDesktop,
        ),
        ("vscode/mcp.json", Dialect::VsCode),
        ("cursor/mcp.json", Dialect::Cursor),
        ("codex/config.toml", Dialect::Codex),
        ("gemini/settings.json", Dialect::Gemini),
        ("goose/config.yaml", Dialect::Goose),
    ];
    let locations = Locations::new("/nonexistent-home", "/nonexistent-project");
    for (rel, dialect) in cases {
        let file = fixtures().join(rel);
        let loaded = load_file(&locations, &file, dialect, Scope::User);
        let errors: Vec<String> = loaded
            .diagnostics
            .iter()
            .filter(|d| d.severity >= Severity::Warning)
            .map(ToString::to_string)
            .collect();
        assert!(errors.is_empty(), "{rel}: {errors:#?}");
        for s in &loaded.servers {
            assert_eq!(s.origin.file, file, "{rel}");
            assert_eq!(s.origin.dialect, dialect, "{rel}");
        }
        assert_eq!(
            without_origin(loaded.servers),
            expected(dialect),
            "{rel} ({dialect:?})"
        );
    }
}

#[test]
fn goose_builtins_are_skipped_and_said_so() {
    let locations = Locations::new("/h", "/p");
    let loaded = load_file(
        &locations,
        &fixtures().join("goose/config.yaml"),
        Dialect::Goose,
        Scope::User,
    );
    assert!(loaded.get("developer").is_none());
    assert!(
        loaded
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Info
                && d.server.as_deref() == Some("developer")
                && d.message.contains("built-in"))
    );
}

/// A home and a project (a git checkout with a subdirectory as cwd).
struct World {
    home: TempDir,
    project: TempDir,
    managed: TempDir,
}

impl World {
    fn new(name: &str) -> Self {
        let w = Self {
            home: TempDir::new(&format!("{name}-home")),
            project: TempDir::new(&format!("{name}-project")),
            managed: TempDir::new(&format!("{name}-managed")),
        };
        std::fs::create_dir_all(w.project.path().join(".git")).unwrap();
        std::fs::create_dir_all(w.project.path().join("sub")).unwrap();
        w
    }

    fn locations(&self) -> Locations {
        Locations::new(self.home.path(), self.project.path().join("sub"))
            .with_os(switchboard_hub::config::Os::Linux)
            .with_managed_dir(self.managed.path())
    }
}

fn command_of(s: &ServerConfig) -> String {
    match &s.transport {
        TransportConfig::Stdio { command, .. } => command.clone(),
        TransportConfig::Http { url, .. } | TransportConfig::WebSocket { url, .. } => url.clone(),
        _ => unreachable!(),
    }
}

#[test]
fn precedence_is_explicit_then_local_then_project_then_user() {
    let w = World::new("precedence");
    let root = w.project.path().to_string_lossy().into_owned();
    w.home.write(
        ".config/switchboard/config.toml",
        "[servers.a]\ncommand = \"a-user\"\n[servers.b]\ncommand = \"b-user\"\n[servers.c]\ncommand = \"c-user\"\n[servers.d]\ncommand = \"d-user\"\n",
    );
    w.project.write(
        "switchboard.toml",
        "[servers.b]\ncommand = \"b-project\"\n[servers.c]\ncommand = \"c-project\"\n[servers.d]\ncommand = \"d-project\"\n",
    );
    w.project.write(
        "switchboard.local.toml",
        "[servers.c]\ncommand = \"c-local\"\n[servers.d]\ncommand = \"d-local\"\n",
    );
    let explicit = w.home.write(
        "elsewhere/extra.toml",
        "[servers.d]\ncommand = \"d-explicit\"\n",
    );
    // Claude Code: ~/.claude.json local section, and .mcp.json in the
    // project root and in the working directory (nearer wins).
    w.home.write(
        ".claude.json",
        &fixture("claude-code/claude.json").replace("@PROJECT@", &root),
    );
    w.project.write(
        ".mcp.json",
        r#"{"mcpServers": {"e": {"command": "e-root"}, "f": {"command": "f-root"}}}"#,
    );
    w.project.write(
        "sub/.mcp.json",
        r#"{"mcpServers": {"f": {"command": "f-sub"}}}"#,
    );
    // An imported project server named like a switchboard project server.
    w.project.write(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"b": {"command": "b-cursor"}}}"#,
    );

    let options = LoadOptions::new().with_config(&explicit);
    let loaded = load(&w.locations(), &options);
    // Not approved yet, a project entry waits and the user's own server of
    // that name runs.
    assert_eq!(command_of(loaded.get("b").unwrap()), "b-user");
    assert_eq!(command_of(loaded.get("c").unwrap()), "c-user");
    assert!(
        loaded
            .awaiting_approval()
            .any(|s| command_of(s) == "b-project")
    );
    // Approved (an approval holds one entry of a name per project),
    // precedence is by scope.
    let mut approvals = Approvals::open(&loaded.approvals);
    for server in loaded
        .servers
        .iter()
        .chain(loaded.skipped.iter().map(|s| &s.server))
    {
        if ["b-project", "c-local", "d-local", "e-root", "f-sub"]
            .contains(&command_of(server).as_str())
        {
            approvals.approve(w.locations().project_root(), server);
        }
    }
    approvals.save().unwrap();
    let loaded = load(&w.locations(), &options);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let winners: BTreeMap<&str, String> = loaded
        .servers
        .iter()
        .map(|s| (s.name.as_str(), command_of(s)))
        .collect();
    assert_eq!(winners["a"], "a-user");
    assert_eq!(
        winners["b"], "b-project",
        "switchboard beats an import of the same scope"
    );
    assert_eq!(winners["c"], "c-local");
    assert_eq!(winners["d"], "d-explicit", "--config wins");
    assert_eq!(winners["e"], "e-root");
    assert_eq!(winners["f"], "f-sub", "the nearer .mcp.json wins");
    assert_eq!(winners["local-db"], "db-mcp");
    assert_eq!(loaded.get("local-db").unwrap().origin.scope, Scope::Local);
    assert_eq!(
        winners["user-search"], "https://search.example.com/sse",
        "~/.claude.json user servers"
    );
    assert!(
        loaded.get("elsewhere").is_none(),
        "another project's section"
    );
    // Every loser is reported as shadowed.
    let shadowed: Vec<String> = loaded
        .skipped
        .iter()
        .filter(|s| s.reason == SkipReason::Shadowed)
        .map(|s| command_of(&s.server))
        .collect();
    for loser in [
        "b-user",
        "b-cursor",
        "c-user",
        "c-project",
        "d-user",
        "d-project",
        "d-local",
        "f-root",
    ] {
        assert!(
            shadowed.contains(&loser.to_string()),
            "{loser} in {shadowed:?}"
        );
    }
    assert!(
        loaded
            .diagnostics
            .iter()
            .any(|d| d.server.as_deref() == Some("b") && d.message.contains("shadowed"))
    );

    // A standard file given with --config is read once (no shadowing of
    // itself).
    let local = w.project.path().join("switchboard.local.toml");
    let loaded = load(&w.locations(), &LoadOptions::new().with_config(&local));
    assert_eq!(loaded.get("c").unwrap().origin.scope, Scope::Explicit);
    assert!(
        !loaded
            .skipped
            .iter()
            .any(|s| s.server.origin.file == local && s.reason == SkipReason::Shadowed),
        "{:#?}",
        loaded.skipped
    );

    // Without --config the local file wins d; strict reads --config only.
    let loaded = load(&w.locations(), &LoadOptions::new());
    assert_eq!(command_of(loaded.get("d").unwrap()), "d-local");
    let loaded = load(
        &w.locations(),
        &LoadOptions::new().with_config(&explicit).strict(true),
    );
    assert_eq!(loaded.servers.len(), 1);
    assert_eq!(loaded.servers[0].origin.scope, Scope::Explicit);
}

#[test]
fn claude_json_switches_off_mcp_json_servers_for_its_project() {
    let w = World::new("claude-off");
    // Keyed by the directory Claude Code was started in (here the cwd,
    // below the project root).
    let root = w.project.path().join("sub").to_string_lossy().into_owned();
    w.home.write(
        ".claude.json",
        &fixture("claude-code/claude.json").replace("@PROJECT@", &root),
    );
    w.project
        .write(".mcp.json", &fixture("claude-code/.mcp.json"));
    let loaded = load(&w.locations(), &LoadOptions::new());
    assert!(!loaded.get("legacy").unwrap().enabled);
    assert!(loaded.get("files").unwrap().enabled);
    assert_eq!(loaded.get("local-db").unwrap().origin.scope, Scope::Local);
}

#[test]
fn a_vscode_shaped_file_where_mcp_servers_was_expected_is_reported() {
    let w = World::new("shape");
    w.project
        .write(".mcp.json", &fixture("bad/vscode-shaped.mcp.json"));
    let loaded = load(&w.locations(), &LoadOptions::new());
    assert!(loaded.servers.is_empty());
    let d = loaded
        .diagnostics
        .iter()
        .find(|d| d.is_error())
        .expect("an error, not a silently empty file");
    let text = d.to_string();
    assert!(
        text.contains(".mcp.json:2:")
            && text.contains("`servers`")
            && text.contains("`mcpServers`"),
        "{text}"
    );
}

#[test]
fn bad_files_name_file_line_and_column_and_the_rest_still_loads() {
    let w = World::new("bad");
    w.project
        .write(".mcp.json", &fixture("bad/syntax.mcp.json"));
    w.project
        .write("switchboard.toml", &fixture("bad/syntax.toml"));
    w.home
        .write(".config/goose/config.yaml", &fixture("bad/syntax.yaml"));
    w.home
        .write(".cursor/mcp.json", &fixture("bad/entry.mcp.json"));
    w.home.write(
        ".config/switchboard/config.toml",
        &fixture("bad/timeout.toml"),
    );
    let loaded = load(&w.locations(), &LoadOptions::new());
    let errors: Vec<String> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(ToString::to_string)
        .collect();
    let find = |needle: &str| {
        errors
            .iter()
            .find(|e| e.contains(needle))
            .unwrap_or_else(|| panic!("no error with {needle:?} in {errors:#?}"))
    };
    // JSON: the missing comma is noticed at the next key, line 5.
    assert!(find(".mcp.json:5:").contains("not valid JSON"));
    // TOML: the unclosed array, line 3 or 4.
    let toml = find("switchboard.toml:");
    assert!(
        toml.contains("not valid TOML") && (toml.contains(":3:") || toml.contains(":4:")),
        "{toml}"
    );
    let yaml = find("config.yaml:");
    assert!(
        yaml.contains("not valid YAML") && (yaml.contains(":4:") || yaml.contains(":5:")),
        "{yaml}"
    );
    // A bad entry: file, line of the key, server, key and what is wrong.
    let entry = find("server `broken`");
    assert!(
        entry.contains("cursor/mcp.json:8:")
            && entry.contains("key `args`")
            && entry.contains("expected an array of strings"),
        "{entry}"
    );
    let timeout = find("server `slow`");
    assert!(
        timeout.contains(":3:") && timeout.contains("\"30s\""),
        "{timeout}"
    );
    // …and the good servers of those files still load.
    for name in ["good", "also-good", "fine"] {
        assert!(loaded.get(name).is_some(), "{name}");
    }
    assert_eq!(errors.len(), 5, "{errors:#?}");
}

#[test]
fn duplicates_by_signature_keep_the_hand_configured_one() {
    let w = World::new("dups");
    w.home.write(
        ".config/switchboard/config.toml",
        "[servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/srv/data\"]\nenv = { LOG_LEVEL = \"debug\", API_KEY = \"${API_KEY}\" }\n",
    );
    // Imported under other names, in a higher scope (the same env and
    // headers: the same servers).
    w.project
        .write(".mcp.json", &fixture("claude-code/.mcp.json"));
    w.project.write(
        ".vscode/mcp.json",
        r#"{"servers": {"docs-again": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}}"#,
    );
    let loaded = load(&w.locations(), &LoadOptions::new());
    assert!(loaded.get("fs").is_some());
    assert!(
        loaded.get("files").is_none(),
        "the imported duplicate is skipped"
    );
    assert!(loaded.get("docs").is_some());
    assert!(loaded.get("docs-again").is_none());
    let files = loaded
        .skipped
        .iter()
        .find(|s| s.server.name == "files")
        .unwrap();
    assert_eq!(files.reason, SkipReason::Duplicate);
    assert_eq!(files.kept.as_deref(), Some("fs"));
    assert!(
        loaded
            .diagnostics
            .iter()
            .any(|d| d.server.as_deref() == Some("files")
                && d.message.contains("duplicate")
                && d.message.contains("`fs`"))
    );
    // Between two imports of the same scope, Claude Code's is kept.
    assert!(
        loaded
            .skipped
            .iter()
            .any(|s| s.server.name == "docs-again" && s.kept.as_deref() == Some("docs"))
    );
}

#[test]
fn policies_deny_wins_and_blocked_servers_are_reported() {
    let w = World::new("policy");
    w.managed.write(
        "managed-settings.json",
        r#"{"allowedMcpServers": [{"serverName": "files"}, {"serverUrl": "https://*.example.com/*"}, {"serverCommand": ["uvx", "legacy-server"]}],
            "deniedMcpServers": [{"serverName": "legacy"}]}"#,
    );
    w.project
        .write(".mcp.json", &fixture("claude-code/.mcp.json"));
    w.project.write(
        "switchboard.toml",
        "[servers.other]\ncommand = \"other\"\n[policy]\ndeny = [{ url = \"https://mcp.example.com/*\" }]\n",
    );
    let loaded = load(&w.locations(), &LoadOptions::new());
    assert!(loaded.managed.is_none(), "settings alone are not exclusive");
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["files"]);
    let reason = |name: &str| match &loaded
        .skipped
        .iter()
        .find(|s| s.server.name == name)
        .unwrap()
        .reason
    {
        SkipReason::Blocked(r) => r.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        reason("legacy").contains("denied"),
        "deny wins over the allowed command"
    );
    assert!(
        reason("docs").contains("switchboard.toml"),
        "denied by the project's own policy"
    );
    assert!(reason("other").contains("not on the allow list"));
}

#[test]
fn a_managed_file_is_exclusive_and_refuses_edits() {
    let w = World::new("managed");
    w.managed.write(
        "managed-mcp.json",
        r#"{"mcpServers": {"corp": {"type": "http", "url": "https://mcp.corp.example/mcp"}}}"#,
    );
    w.project
        .write(".mcp.json", &fixture("claude-code/.mcp.json"));
    let extra = w
        .home
        .write("x.toml", "[servers.mine]\ncommand = \"mine\"\n");
    let locations = w.locations();
    let loaded = load(&locations, &LoadOptions::new().with_config(&extra));
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["corp"]);
    assert_eq!(loaded.servers[0].origin.scope, Scope::Managed);
    assert!(loaded.managed.is_some());
    assert!(
        loaded
            .diagnostics
            .iter()
            .any(|d| d.file.as_deref() == Some(&*extra) && d.message.contains("managed"))
    );

    let target = w.project.path().join("switchboard.toml");
    let server = ServerConfig::new(
        "new",
        TransportConfig::Stdio {
            command: "x".into(),
            args: vec![],
            env: BTreeMap::new(),
            cwd: None,
        },
        dummy_origin(),
    );
    let err = add_server(
        &locations,
        &Target::new(&target, Dialect::Switchboard),
        &server,
    )
    .unwrap_err();
    assert!(matches!(err, EditError::Managed { .. }));
    let message = err.to_string();
    assert!(
        message.contains("managed-mcp.json") && message.contains("exclusive control"),
        "{message}"
    );
    assert!(
        remove_server(
            &locations,
            &Target::new(&target, Dialect::Switchboard),
            "corp"
        )
        .is_err()
    );
    assert!(!target.exists());
}

#[test]
fn loaded_configs_keep_references_and_expansion_warns_about_unset_ones() {
    let w = World::new("expand");
    w.project
        .write("switchboard.toml", &fixture("switchboard/switchboard.toml"));
    let locations = w.locations().with_var("API_KEY", "sk-files");
    let mut loaded = load(&locations, &LoadOptions::new());
    // A project file's servers expand once approved (tests/trust.rs).
    approve_all(&mut loaded);
    let files = loaded.get("files").unwrap();
    let listing = format!("{files:?}");
    assert!(!listing.contains("sk-files"));
    let mut expander = loaded.expander(&locations);
    let runnable = expander.expand(files).unwrap();
    match &runnable.config.transport {
        TransportConfig::Stdio { env, .. } => assert_eq!(env["API_KEY"], "sk-files"),
        _ => unreachable!(),
    }
    assert!(runnable.warnings.is_empty());
    let docs = expander.expand(loaded.get("docs").unwrap()).unwrap();
    assert_eq!(docs.warnings.len(), 1);
    let w0 = docs.warnings[0].to_string();
    assert!(
        w0.contains("switchboard.toml")
            && w0.contains("key `headers.Authorization`")
            && w0.contains("DOCS_TOKEN"),
        "{w0}"
    );
}

#[test]
fn vscode_inputs_are_prompted_once_with_the_files_description() {
    let locations = Locations::new("/h", "/p");
    let loaded = load_file(
        &locations,
        &fixtures().join("vscode/inputs.json"),
        Dialect::VsCode,
        Scope::Project,
    );
    assert_eq!(loaded.inputs.len(), 1);
    // A project file's inputs are asked once its servers are approved
    // (tests/trust.rs).
    let mut loaded = loaded;
    approve_all(&mut loaded);
    let mut non_interactive = loaded.expander(&locations);
    let err = non_interactive
        .expand(loaded.get("perplexity").unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("input:api-key"), "{err}");

    let mut prompts = Vec::new();
    let mut expander = loaded.expander(&locations).with_prompt(|spec| {
        prompts.push((spec.description.clone(), spec.password));
        Ok("pplx-123".into())
    });
    for name in ["perplexity", "perplexity-too"] {
        let runnable = expander.expand(loaded.get(name).unwrap()).unwrap();
        match &runnable.config.transport {
            TransportConfig::Stdio { env, .. } => {
                assert_eq!(env["PERPLEXITY_API_KEY"], "pplx-123");
            }
            _ => unreachable!(),
        }
    }
    drop(expander);
    assert_eq!(prompts, [("Perplexity API Key".to_string(), true)]);
}

const COMMENTED: &str = r#"# My servers. Keep this comment.
[servers.files]   # the file server
command = "npx"
args = [
    "-y",   # non-interactive
    "@modelcontextprotocol/server-filesystem",
]

# Remote one.
[servers.docs]
url = "https://mcp.example.com/mcp"
"#;

#[test]
fn toml_edits_keep_comments_and_formatting() {
    let w = World::new("edit-toml");
    let locations = w.locations();
    let file = w.project.write("switchboard.toml", COMMENTED);
    let loaded = load_file(
        &locations,
        &fixtures().join("switchboard/switchboard.toml"),
        Dialect::Switchboard,
        Scope::User,
    );
    let legacy = loaded.get("legacy").unwrap();
    add_server(
        &locations,
        &Target::new(&file, Dialect::Switchboard),
        legacy,
    )
    .unwrap();
    let after_add = std::fs::read_to_string(&file).unwrap();
    assert!(after_add.starts_with(COMMENTED), "{after_add}");
    // What was added reads back as the same server.
    let reread = load_file(&locations, &file, Dialect::Switchboard, Scope::Project);
    let mut back = reread.get("legacy").unwrap().clone();
    back.origin = legacy.origin.clone();
    back.trust = legacy.trust.clone();
    assert_eq!(&back, legacy);
    assert!(matches!(
        add_server(
            &locations,
            &Target::new(&file, Dialect::Switchboard),
            legacy
        ),
        Err(EditError::Exists { .. })
    ));

    set_enabled(
        &locations,
        &Target::new(&file, Dialect::Switchboard),
        "files",
        false,
    )
    .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("[servers.files]   # the file server\n"),
        "{text}"
    );
    assert!(text.contains("\"-y\",   # non-interactive"), "{text}");
    let reread = load_file(&locations, &file, Dialect::Switchboard, Scope::Project);
    assert!(!reread.get("files").unwrap().enabled);
    set_enabled(
        &locations,
        &Target::new(&file, Dialect::Switchboard),
        "files",
        true,
    )
    .unwrap();
    remove_server(
        &locations,
        &Target::new(&file, Dialect::Switchboard),
        "legacy",
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), COMMENTED);
    assert!(matches!(
        remove_server(
            &locations,
            &Target::new(&file, Dialect::Switchboard),
            "legacy"
        ),
        Err(EditError::NotFound { .. })
    ));
    // No temporary file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(w.project.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn json_edits_keep_key_order_and_round_trip() {
    let w = World::new("edit-json");
    let locations = w.locations();
    let file = w.project.write(
        ".mcp.json",
        "{\n  \"zeta\": 1,\n  \"mcpServers\": {\n    \"z\": {\"command\": \"z\"},\n    \"a\": {\"command\": \"a\"}\n  },\n  \"alpha\": 2\n}\n",
    );
    let source = load_file(
        &locations,
        &fixtures().join("claude-code/.mcp.json"),
        Dialect::ClaudeCode,
        Scope::Project,
    );
    let docs = source.get("docs").unwrap();
    add_server(&locations, &Target::new(&file, Dialect::ClaudeCode), docs).unwrap();
    set_enabled(
        &locations,
        &Target::new(&file, Dialect::ClaudeCode),
        "z",
        false,
    )
    .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let keys = |t: &str| -> Vec<usize> {
        [
            "\"zeta\"",
            "\"mcpServers\"",
            "\"z\"",
            "\"a\"",
            "\"docs\"",
            "\"alpha\"",
        ]
        .iter()
        .map(|k| t.find(k).unwrap_or_else(|| panic!("{k} in {t}")))
        .collect()
    };
    let at = keys(&text);
    assert!(at.windows(2).all(|w| w[0] < w[1]), "order kept: {text}");
    let reread = load_file(&locations, &file, Dialect::ClaudeCode, Scope::Project);
    assert!(!reread.get("z").unwrap().enabled);
    let mut back = reread.get("docs").unwrap().clone();
    back.origin = docs.origin.clone();
    assert_eq!(&back, docs);

    // Gemini switches servers off through mcp.excluded.
    let gemini = w
        .home
        .write(".gemini/settings.json", &fixture("gemini/settings.json"));
    set_enabled(
        &locations,
        &Target::new(&gemini, Dialect::Gemini),
        "legacy",
        true,
    )
    .unwrap();
    set_enabled(
        &locations,
        &Target::new(&gemini, Dialect::Gemini),
        "files",
        false,
    )
    .unwrap();
    let reread = load_file(&locations, &gemini, Dialect::Gemini, Scope::User);
    assert!(reread.get("legacy").unwrap().enabled);
    assert!(!reread.get("files").unwrap().enabled);

    // Codex and goose files are not edited.
    let codex = w
        .home
        .write(".codex/config.toml", &fixture("codex/config.toml"));
    let err = remove_server(&locations, &Target::new(&codex, Dialect::Codex), "files").unwrap_err();
    assert!(matches!(err, EditError::Unsupported { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(&codex).unwrap(),
        fixture("codex/config.toml")
    );
}

#[test]
fn json_edits_say_when_comments_are_dropped_and_keep_permissions() {
    let w = World::new("edit-notes");
    let locations = w.locations();
    let vscode = w
        .project
        .write(".vscode/mcp.json", &fixture("vscode/mcp.json"));
    let edited = set_enabled(
        &locations,
        &Target::new(&vscode, Dialect::VsCode),
        "files",
        false,
    )
    .unwrap();
    assert!(
        edited
            .note
            .as_deref()
            .is_some_and(|n| n.contains("comments")),
        "{edited:?}"
    );
    let reread = load_file(&locations, &vscode, Dialect::VsCode, Scope::Project);
    assert!(!reread.get("files").unwrap().enabled);
    assert_eq!(reread.servers.len(), 3);

    let claude = w.home.write(".mcp.json", &fixture("claude-code/.mcp.json"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let edited = remove_server(
        &locations,
        &Target::new(&claude, Dialect::ClaudeCode),
        "legacy",
    )
    .unwrap();
    assert_eq!(edited.note, None);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&claude).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "a private file stays private");
    }
    // A server the dialect cannot hold is refused, and the file is left alone.
    let desktop = w.home.write(
        "desktop.json",
        &fixture("claude-desktop/claude_desktop_config.json"),
    );
    let remote = load_file(
        &locations,
        &fixtures().join("claude-code/.mcp.json"),
        Dialect::ClaudeCode,
        Scope::Project,
    );
    let err = add_server(
        &locations,
        &Target::new(&desktop, Dialect::ClaudeDesktop),
        remote.get("docs").unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(err, EditError::Unsupported { .. }) && err.to_string().contains("remote"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&desktop).unwrap(),
        fixture("claude-desktop/claude_desktop_config.json")
    );
}

#[test]
fn an_explicit_file_is_read_in_the_dialect_its_shape_says() {
    let w = World::new("sniff");
    let vscode = w.home.write("given.json", &fixture("vscode/mcp.json"));
    let codex = w.home.write("given.toml", &fixture("codex/config.toml"));
    let goose = w.home.write("given.yaml", &fixture("goose/config.yaml"));
    for (file, dialect) in [
        (&vscode, Dialect::VsCode),
        (&codex, Dialect::Codex),
        (&goose, Dialect::Goose),
    ] {
        let loaded = load(
            &w.locations(),
            &LoadOptions::new().with_config(file).strict(true),
        );
        assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
        assert_eq!(
            without_origin(loaded.servers.clone()),
            {
                let mut e = expected(dialect);
                e.sort_by(|a, b| a.name.cmp(&b.name));
                e
            },
            "{dialect:?}"
        );
        assert!(
            loaded
                .servers
                .iter()
                .all(|s| s.origin.dialect == dialect && s.origin.scope == Scope::Explicit)
        );
    }
    let missing = load(
        &w.locations(),
        &LoadOptions::new().with_config(w.home.path().join("nope.toml")),
    );
    assert!(
        missing
            .diagnostics
            .iter()
            .any(|d| d.is_error() && d.message.contains("does not exist"))
    );
}

#[test]
fn entries_a_dialect_marks_as_not_runnable_or_unread_are_reported() {
    let w = World::new("odd");
    let file = w.project.write(
        ".mcp.json",
        r#"{"mcpServers": {
  "ws": {"type": "ws", "url": "wss://ws.example/mcp"},
  "with-env-file": {"command": "x", "envFile": "${workspaceFolder}/.env"},
  "neither": {"args": ["x"]},
  "both": {"command": "x", "url": "https://x.example"}
}}"#,
    );
    let loaded = load_file(&w.locations(), &file, Dialect::ClaudeCode, Scope::Project);
    assert!(matches!(
        loaded.get("ws").unwrap().transport,
        TransportConfig::WebSocket { .. }
    ));
    assert!(loaded.get("with-env-file").is_some());
    let said = |server: &str, severity: Severity, needle: &str| {
        loaded.diagnostics.iter().any(|d| {
            d.server.as_deref() == Some(server)
                && d.severity == severity
                && d.message.contains(needle)
        })
    };
    assert!(said("with-env-file", Severity::Warning, "envFile"));
    assert!(said("neither", Severity::Error, "neither `command`"));
    assert!(said("both", Severity::Error, "keep one"));
    assert!(loaded.get("neither").is_none() && loaded.get("both").is_none());
}

#[test]
fn a_misspelt_key_in_switchboards_own_file_is_a_warning_with_its_line() {
    let w = World::new("typo");
    let file = w.project.write(
        "switchboard.toml",
        "[servers.files]\ncommand = \"npx\"\nargz = [\"-y\"]\n",
    );
    let loaded = load_file(&w.locations(), &file, Dialect::Switchboard, Scope::Project);
    assert!(loaded.get("files").is_some());
    let warning = loaded
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Warning)
        .expect("a warning for `argz`")
        .to_string();
    assert!(
        warning.contains("switchboard.toml:3:1")
            && warning.contains("key `argz`")
            && warning.contains("args"),
        "{warning}"
    );
}

#[test]
fn edits_reach_claude_codes_local_scope_and_switchboards_scoped_files() {
    let w = World::new("edit-targets");
    let locations = w.locations();
    let root = w.project.path().to_string_lossy().into_owned();
    let claude_json = w.home.write(
        ".claude.json",
        &fixture("claude-code/claude.json").replace("@PROJECT@", &root),
    );
    let source = load_file(
        &locations,
        &fixtures().join("claude-code/.mcp.json"),
        Dialect::ClaudeCode,
        Scope::Project,
    );
    let local = Target::claude_local(&locations);
    assert_eq!(local.file, claude_json);
    add_server(&locations, &local, source.get("files").unwrap()).unwrap();
    let loaded = load(&locations, &LoadOptions::new());
    let files = loaded.get("files").unwrap();
    assert_eq!(files.origin.scope, Scope::Local, "{files:?}");
    // The rest of ~/.claude.json is still there, in its order.
    let text = std::fs::read_to_string(&claude_json).unwrap();
    let at = |k: &str| text.find(k).unwrap_or_else(|| panic!("{k} in {text}"));
    assert!(at("numStartups") < at("theme") && at("theme") < at("\"projects\""));
    assert!(loaded.get("local-db").is_some() && loaded.get("user-search").is_some());

    let user = Target::switchboard(&locations, Scope::User).unwrap();
    add_server(&locations, &user, source.get("docs").unwrap()).unwrap();
    assert_eq!(
        load(&locations, &LoadOptions::new())
            .get("docs")
            .unwrap()
            .origin
            .file,
        w.home.path().join(".config/switchboard/config.toml")
    );
    assert!(Target::switchboard(&locations, Scope::Managed).is_none());
}

#[test]
fn huge_negative_and_nan_timeouts_are_clamped_or_reported_never_a_panic() {
    let w = World::new("numbers");
    let file = w.home.write(
        "given.toml",
        "[mcp_servers.huge]\ncommand = \"huge\"\nstartup_timeout_sec = 1e300\ntool_timeout_sec = 1.7976931348623157e308\n\n\
         [mcp_servers.millis]\ncommand = \"millis\"\nstartup_timeout_ms = 1e300\n\n\
         [mcp_servers.negative]\ncommand = \"negative\"\ntool_timeout_sec = -1\n\n\
         [mcp_servers.nan]\ncommand = \"nan\"\nstartup_timeout_sec = nan\n\n\
         [mcp_servers.inf]\ncommand = \"inf\"\nstartup_timeout_sec = inf\n",
    );
    let loaded = load(&w.locations(), &LoadOptions::new().with_config(&file));
    let server = |name: &str| loaded.servers.iter().find(|s| s.name == name);
    let max = switchboard_hub::config::dialect::MAX_DURATION;
    let huge = server("huge").expect("a huge timeout is clamped, not refused");
    assert_eq!(huge.startup_timeout, Some(max));
    assert_eq!(huge.request_timeout, Some(max));
    assert_eq!(server("millis").unwrap().startup_timeout, Some(max));
    let negative = loaded
        .diagnostics
        .iter()
        .map(ToString::to_string)
        .find(|d| d.contains("server `negative`"))
        .unwrap_or_else(|| panic!("no diagnostic for -1: {:#?}", loaded.diagnostics));
    assert!(
        negative.contains("tool_timeout_sec") && negative.contains("expected a number ≥ 0"),
        "{negative}"
    );
    // TOML's nan and inf have no JSON form: an error, or no timeout at all.
    for name in ["nan", "inf"] {
        let said = loaded
            .diagnostics
            .iter()
            .any(|d| d.is_error() && d.to_string().contains(&format!("server `{name}`")));
        let timeout = server(name).and_then(|s| s.startup_timeout);
        assert!(said || timeout.is_none(), "{name}: {timeout:?}");
    }
}

#[test]
fn a_server_with_an_empty_name_is_not_loaded() {
    let w = TempDir::new("empty-name");
    let file = w.write(
        ".mcp.json",
        r#"{"mcpServers": {"": {"command": "true"}, " ": {"command": "false"}, "ok": {"command": "x"}}}"#,
    );
    let locations = Locations::new(w.path(), w.path());
    let loaded = load_file(&locations, &file, Dialect::ClaudeCode, Scope::Project);
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["ok"]);
    assert!(
        loaded
            .diagnostics
            .iter()
            .any(|d| d.is_error() && d.to_string().contains("empty name")),
        "{:?}",
        loaded.diagnostics
    );
}

#[test]
fn a_headers_helper_is_read_from_claude_code_and_switchboard_files_and_written_back() {
    let w = World::new("helper");
    let locations = w.locations();
    let mcp_json = w.project.write(
        ".mcp.json",
        r#"{"mcpServers": {
            "docs": {"type": "http", "url": "https://docs.example/mcp",
                     "headersHelper": "~/bin/token --json"},
            "local": {"command": "run", "headersHelper": "~/bin/token"}
        }}"#,
    );
    let loaded = load_file(&locations, &mcp_json, Dialect::ClaudeCode, Scope::Project);
    let docs = loaded.get("docs").unwrap();
    let helper = docs.headers_helper.as_ref().expect("a helper");
    assert_eq!(helper.command, "~/bin/token --json");
    assert_eq!(helper.timeout, HeadersHelper::DEFAULT_TIMEOUT);
    assert_eq!(helper.max_output, HeadersHelper::DEFAULT_MAX_OUTPUT);
    // On a local server it is not run, and the file is told so.
    assert!(loaded.get("local").unwrap().headers_helper.is_none());
    assert!(
        loaded
            .diagnostics
            .iter()
            .any(|d| d.message.contains("`headersHelper` gives HTTP headers")),
        "{:#?}",
        loaded.diagnostics
    );

    let toml = w.home.write(
        "helper.toml",
        "[servers.docs]\nurl = \"https://docs.example/mcp\"\n\
         headers_helper = \"~/bin/token\"\nheaders_helper_timeout = \"3s\"\n\
         [servers.wrong]\ncommand = \"run\"\nheaders_helper = \"~/bin/token\"\n",
    );
    let loaded = load_file(&locations, &toml, Dialect::Switchboard, Scope::User);
    let docs = loaded.get("docs").unwrap();
    let helper = docs.headers_helper.as_ref().expect("a helper");
    assert_eq!(
        (helper.command.as_str(), helper.timeout),
        ("~/bin/token", Duration::from_secs(3))
    );
    assert!(loaded.get("wrong").is_none());
    assert!(
        loaded
            .diagnostics
            .iter()
            .any(|d| d.is_error() && d.message.contains("needs an HTTP `url`")),
        "{:#?}",
        loaded.diagnostics
    );

    // Written into switchboard's file and Claude Code's, it reads back.
    let target = w.project.write("switchboard.toml", "");
    add_server(
        &locations,
        &Target::new(&target, Dialect::Switchboard),
        docs,
    )
    .unwrap();
    let reread = load_file(&locations, &target, Dialect::Switchboard, Scope::Project);
    assert_eq!(
        reread.get("docs").unwrap().headers_helper,
        docs.headers_helper
    );
    let target = w.project.write("other.mcp.json", "{}");
    add_server(&locations, &Target::new(&target, Dialect::ClaudeCode), docs).unwrap();
    let reread = load_file(&locations, &target, Dialect::ClaudeCode, Scope::Project);
    assert_eq!(
        reread
            .get("docs")
            .unwrap()
            .headers_helper
            .as_ref()
            .map(|h| &h.command),
        Some(&helper.command)
    );
}

/// `prefix` in switchboard's file: each value read; a misspelt one is an
/// error naming the choices; two `never` servers are refused, naming
/// both, and the later one is prefixed.
#[test]
fn prefix_is_read_and_two_unprefixed_servers_are_refused() {
    use switchboard_hub::config::Prefix;
    let w = World::new("prefix");
    w.home.write(
        ".config/switchboard/config.toml",
        "[servers.a]\ncommand = \"a\"\nprefix = \"never\"\n\n\
         [servers.b]\ncommand = \"b\"\nprefix = \"never\"\n\n\
         [servers.c]\ncommand = \"c\"\nprefix = \"on-collision\"\n\n\
         [servers.d]\ncommand = \"d\"\n\n\
         [servers.e]\ncommand = \"e\"\nprefix = \"sometimes\"\n",
    );
    let loaded = load(&w.locations(), &LoadOptions::new());
    let prefix = |name: &str| loaded.get(name).map(|s| s.prefix);
    assert_eq!(prefix("a"), Some(Some(Prefix::Never)));
    assert_eq!(prefix("b"), Some(Some(Prefix::Always)));
    assert_eq!(prefix("c"), Some(Some(Prefix::OnCollision)));
    assert_eq!(prefix("d"), Some(None));
    assert_eq!(prefix("e"), None, "a bad entry is not loaded");
    let errors: Vec<String> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(ToString::to_string)
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("`a`") && e.contains("`b`") && e.contains("prefix")),
        "{errors:#?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("sometimes") && e.contains("on-collision")),
        "{errors:#?}"
    );
}

fn env_of(s: &ServerConfig) -> BTreeMap<String, String> {
    match &s.transport {
        TransportConfig::Stdio { env, .. } => env.clone(),
        _ => BTreeMap::new(),
    }
}

fn header_of(s: &ServerConfig, name: &str) -> Option<String> {
    match &s.transport {
        TransportConfig::Http { headers, .. } | TransportConfig::WebSocket { headers, .. } => {
            headers.get(name).cloned()
        }
        _ => None,
    }
}

/// Two clients configure one name for two accounts (other headers on one
/// URL, other env for one command): both are served, the second under
/// `NAME-CLIENT`, the same name on every run. A third client's copy of
/// one of them is that server again, not a third.
#[test]
fn one_name_for_two_accounts_in_two_clients_keeps_both() {
    let w = World::new("two-accounts");
    let url = "https://api.githubcopilot.com/mcp/";
    w.home.write(
        ".claude.json",
        &serde_json::json!({"mcpServers": {
            "github": {"type": "http", "url": url, "headers": {"Authorization": "Bearer work-token"}},
        }})
        .to_string(),
    );
    w.home.write(
        ".cursor/mcp.json",
        &serde_json::json!({"mcpServers": {
            "github": {"url": url, "headers": {"Authorization": "Bearer personal-token"}},
            "db": {"command": "db-mcp", "env": {"DB_ACCOUNT": "staging"}},
        }})
        .to_string(),
    );
    w.home.write(
        ".config/Claude/claude_desktop_config.json",
        &serde_json::json!({"mcpServers": {
            "db": {"command": "db-mcp", "env": {"DB_ACCOUNT": "production"}},
            "github": {"command": "never-used"},
        }})
        .to_string(),
    );
    w.home.write(
        ".gemini/settings.json",
        &serde_json::json!({"mcpServers": {
            "db": {"command": "db-mcp", "env": {"DB_ACCOUNT": "staging"}},
        }})
        .to_string(),
    );
    let first = load(&w.locations(), &LoadOptions::new());
    assert!(!first.has_errors(), "{:#?}", first.diagnostics);
    let github = first.get("github").expect("github");
    assert_eq!(
        header_of(github, "Authorization").as_deref(),
        Some("Bearer work-token")
    );
    let personal = first
        .get("github-cursor")
        .unwrap_or_else(|| panic!("the second account is served: {:#?}", first.servers));
    assert_eq!(
        header_of(personal, "Authorization").as_deref(),
        Some("Bearer personal-token")
    );
    // Claude Desktop's `github` is a third server of that name.
    assert_eq!(
        command_of(first.get("github-claude-desktop").expect("desktop's")),
        "never-used"
    );
    // Cursor's db (ranked above Gemini's and Claude Desktop's) keeps the
    // name; Gemini's is the same server (one), Claude Desktop's another.
    assert_eq!(env_of(first.get("db").unwrap())["DB_ACCOUNT"], "staging");
    assert_eq!(
        env_of(first.get("db-claude-desktop").expect("production"))["DB_ACCOUNT"],
        "production"
    );
    assert!(first.get("db-gemini").is_none(), "{:#?}", first.servers);
    assert!(
        first
            .skipped
            .iter()
            .any(|s| s.server.origin.dialect == Dialect::Gemini && s.kept.as_deref() == Some("db"))
    );
    assert!(first.diagnostics.iter().any(|d| {
        d.server.as_deref() == Some("github-cursor")
            && d.message.contains("served as `github-cursor`")
    }));
    // Stable: the same names again.
    let names = |l: &switchboard_hub::config::LoadedConfig| -> Vec<String> {
        l.servers.iter().map(|s| s.name.clone()).collect()
    };
    assert_eq!(
        names(&first),
        names(&load(&w.locations(), &LoadOptions::new()))
    );

    // The user's own file chose the name: another client's entry of it
    // is the one it replaces, shadowed.
    w.home.write(
        ".config/switchboard/config.toml",
        &format!(
            "[servers.github]\nurl = \"{url}\"\nheaders = {{ Authorization = \"Bearer mine\" }}\n"
        ),
    );
    let loaded = load(&w.locations(), &LoadOptions::new());
    assert_eq!(
        header_of(loaded.get("github").unwrap(), "Authorization").as_deref(),
        Some("Bearer mine")
    );
    assert!(loaded.get("github-cursor").is_none());
    assert!(loaded.get("github-claude-code").is_none());
}

/// Three clients' copies of one server: VS Code's asks a `${input:…}`,
/// Claude Desktop's and Cursor's have the token. The one that starts
/// unattended is kept; VS Code's is shadowed (not served beside it).
#[test]
fn a_copy_that_starts_unattended_is_preferred_over_one_that_asks_an_input() {
    let w = World::new("inputs");
    w.home.write(
        ".config/Code/User/mcp.json",
        r#"{
  // VS Code asks for the token on first start.
  "inputs": [{"type": "promptString", "id": "gh-token", "description": "GitHub token", "password": true}],
  "servers": {
    "github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${input:gh-token}"}}
  }
}"#,
    );
    let runnable = serde_json::json!({"mcpServers": {"github": {
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_literal"}}}})
    .to_string();
    w.home
        .write(".config/Claude/claude_desktop_config.json", &runnable);
    w.home.write(".cursor/mcp.json", &runnable);
    let loaded = load(&w.locations(), &LoadOptions::new());
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let github = loaded.get("github").unwrap();
    assert_eq!(
        env_of(github)["GITHUB_PERSONAL_ACCESS_TOKEN"],
        "ghp_literal",
        "{:#?}",
        loaded.servers
    );
    assert_eq!(github.origin.dialect, Dialect::Cursor);
    assert_eq!(loaded.servers.len(), 1, "{:#?}", loaded.servers);
    let vscode = loaded
        .skipped
        .iter()
        .find(|s| s.server.origin.dialect == Dialect::VsCode)
        .unwrap();
    assert_eq!(vscode.reason, SkipReason::Shadowed);
    assert!(loaded.diagnostics.iter().any(|d| {
        d.file.as_deref() == Some(vscode.server.origin.file.as_path())
            && d.message.contains("without asking")
    }));

    // Unless switchboard's own file has the copy that asks.
    w.home.write(
        ".config/switchboard/config.toml",
        "[servers.github]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-github\"]\nenv = { GITHUB_PERSONAL_ACCESS_TOKEN = \"${input:gh-token}\" }\n",
    );
    let loaded = load(&w.locations(), &LoadOptions::new());
    let github = loaded.get("github").unwrap();
    assert_eq!(github.origin.dialect, Dialect::Switchboard);
}

/// `--config FILE` is read first and keeps its names: an entry of it is
/// never the skipped duplicate of another file's, nor shadowed by a
/// copy that starts without an input.
#[test]
fn the_config_file_keeps_its_entries_against_duplicates_elsewhere() {
    let w = World::new("explicit-dups");
    w.home.write(
        ".config/switchboard/config.toml",
        "[servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/srv\"]\n",
    );
    w.home.write(
        ".config/Claude/claude_desktop_config.json",
        r#"{"mcpServers": {"notes": {"command": "notes-mcp", "env": {"KEY": "literal"}}}}"#,
    );
    let explicit = w.home.write(
        "team/mcp.json",
        r#"{"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
            "notes": {"command": "notes-mcp", "env": {"KEY": "${input:key}"}}
        }}"#,
    );
    let loaded = load(&w.locations(), &LoadOptions::new().with_config(&explicit));
    let files = loaded
        .get("files")
        .unwrap_or_else(|| panic!("--config's entry is kept: {:#?}", loaded.skipped));
    assert_eq!(files.origin.scope, Scope::Explicit);
    let fs = loaded
        .skipped
        .iter()
        .find(|s| s.server.name == "fs")
        .expect("the user file's copy is the duplicate");
    assert_eq!(fs.reason, SkipReason::Duplicate);
    assert_eq!(fs.kept.as_deref(), Some("files"));
    assert_eq!(loaded.get("notes").unwrap().origin.scope, Scope::Explicit);
}

/// A name the user types is never refused as a duplicate: it is the same
/// server, taken back under that name.
#[test]
fn a_typed_name_of_a_duplicate_is_that_server() {
    let w = World::new("typed-dup");
    w.home.write(
        ".config/switchboard/config.toml",
        "[servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"server-filesystem\"]\n",
    );
    w.home.write(
        ".config/Claude/claude_desktop_config.json",
        r#"{"mcpServers": {"filesystem": {"command": "npx", "args": ["-y", "server-filesystem"]}}}"#,
    );
    let mut loaded = load(&w.locations(), &LoadOptions::new());
    assert!(loaded.get("filesystem").is_none(), "a duplicate of fs");
    let named = loaded.named("filesystem").expect("the typed name");
    assert_eq!(named.identity(), loaded.get("fs").unwrap().identity());
    assert!(loaded.get("filesystem").is_some());
    assert!(!loaded.skipped.iter().any(|s| s.server.name == "filesystem"));
    assert!(loaded.named("nothing-of-that-name").is_none());
}

#[test]
fn sampling_settings_come_from_the_users_file_and_each_server_may_only_narrow_them() {
    let locations = Locations::new("/h", "/p");
    let text = "[sampling]\nprovider = \"gemini\"\nmodel = \"g\"\nmodels = [\"g-small\"]\n\
                key_env = \"MY_GEMINI_KEY\"\nmax_calls = 5\n\n\
                [servers.a]\ncommand = \"a\"\nsampling = { allow = false }\n\n\
                [servers.b]\ncommand = \"b\"\nsampling = { model = \"g-small\", max_calls = 2 }\n";
    let name = std::path::Path::new("/h/.config/switchboard/config.toml");
    let user = switchboard_hub::config::load_text(
        &locations,
        name,
        text,
        Dialect::Switchboard,
        Scope::User,
    );
    let settings = user.sampling.clone().expect("the user's [sampling]");
    assert_eq!(settings.provider.as_deref(), Some("gemini"));
    assert_eq!(settings.models, ["g-small"]);
    assert_eq!(settings.key_env.as_deref(), Some("MY_GEMINI_KEY"));
    assert_eq!(settings.max_calls, Some(5));
    assert_eq!(user.get("a").unwrap().sampling.allow, Some(false));
    let b = &user.get("b").unwrap().sampling;
    assert_eq!(
        (b.model.as_deref(), b.max_calls),
        (Some("g-small"), Some(2))
    );

    // A project's file: its servers' narrowing counts, its [sampling] not.
    let project = switchboard_hub::config::load_text(
        &locations,
        std::path::Path::new("/p/switchboard.toml"),
        text,
        Dialect::Switchboard,
        Scope::Project,
    );
    assert!(project.sampling.is_none());
    assert!(
        project
            .diagnostics
            .iter()
            .any(|d| d.message.contains("[sampling]") && d.message.contains("ignored")),
        "{:?}",
        project.diagnostics
    );

    // Mistakes are said, key by key.
    for (bad, says) in [
        ("[sampling]\nprovider = \"skynet\"\n", "unknown provider"),
        ("[sampling]\nendpoint = \"x\"\n", "unknown key"),
        (
            "[sampling]\nkey_env = \"A KEY; rm\"\n",
            "environment variable",
        ),
        ("[sampling]\nmax_calls = -1\n", "number"),
        (
            "[servers.x]\ncommand = \"x\"\nsampling = { allow = \"yes\" }\n",
            "true or false",
        ),
        (
            "[servers.x]\ncommand = \"x\"\nsampling = { base_url = \"http://evil\" }\n",
            "unknown key",
        ),
    ] {
        let loaded = switchboard_hub::config::load_text(
            &locations,
            name,
            bad,
            Dialect::Switchboard,
            Scope::User,
        );
        assert!(
            loaded
                .diagnostics
                .iter()
                .any(|d| d.to_string().contains(says)),
            "{bad}: {:?}",
            loaded.diagnostics
        );
        assert!(
            loaded.sampling.is_none() || !bad.starts_with("[sampling]"),
            "{bad}"
        );
    }
}
