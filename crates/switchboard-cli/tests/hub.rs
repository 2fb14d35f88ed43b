//! Configured servers end to end: `import`, `add`, `remove`, `enable`,
//! `disable`, `get`, then `list`, `tools`, `call`, `resources`, `prompts`,
//! `read` and `prompt` across them through
//! the hub, each test in a throwaway HOME and working directory with the
//! bundled test server (`switchboard __testserver`) as the servers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

mod support;

use support::{BIN, HttpServer};

/// A HOME and a project directory of their own; nothing of the user's
/// configuration (or the runner's XDG variables) is read.
struct Sandbox {
    root: PathBuf,
}

impl Sandbox {
    fn new(name: &str) -> Self {
        let root =
            std::env::temp_dir().join(format!("switchboard-hub-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home")).unwrap();
        // A repository root, so the project root is the working directory.
        std::fs::create_dir_all(root.join("work/.git")).unwrap();
        Self { root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    /// switchboard's user file.
    fn user_file(&self) -> PathBuf {
        self.home().join(".config/switchboard/config.toml")
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn command(&self) -> Command {
        support::isolated(
            &self.work(),
            &self.home(),
            &self.root.join("credentials.json"),
        )
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .expect("runs switchboard")
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    );
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    })
}

/// The `list --json` entry of the server `name` that is in use (not a
/// shadowed or duplicate copy).
fn entry<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["servers"]
        .as_array()
        .expect("a servers array")
        .iter()
        .find(|s| s["name"] == name && s["skipped"].is_null())
        .unwrap_or_else(|| panic!("no server {name} in {list:#}"))
}

fn test_server(args: &[&str]) -> Value {
    let mut all = vec!["__testserver"];
    all.extend(args);
    json!({ "command": BIN, "args": all })
}

#[test]
fn import_from_claude_desktop_then_list_tools_and_call() {
    let sandbox = Sandbox::new("import");
    let desktop = sandbox
        .home()
        .join(".config/Claude/claude_desktop_config.json");
    let config = json!({
        "mcpServers": {
            "alpha": test_server(&[]),
            "beta": test_server(&["--era", "legacy"]),
            "broken": {
                "command": "sh",
                "args": ["-c", "echo 'fatal: missing API key' >&2; exit 7"],
                "env": { "API_KEY": "${BROKEN_API_KEY:-none}" }
            }
        },
        "globalShortcut": "Ctrl+Space"
    });
    sandbox.write(&desktop, &serde_json::to_string_pretty(&config).unwrap());

    let output = sandbox.run(&["import", "--from", "claude-desktop"]);
    ok(&output, "import");
    let said = text(&output.stdout);
    assert!(said.contains("imported 3"), "{said}");
    let file = std::fs::read_to_string(sandbox.user_file()).expect("the user file was written");
    for name in ["alpha", "beta", "broken"] {
        assert!(file.contains(&format!("[servers.{name}]")), "{file}");
    }
    // References are copied as written, never expanded.
    assert!(file.contains("${BROKEN_API_KEY:-none}"), "{file}");

    // Importing again copies nothing and says why.
    let output = sandbox.run(&["import", "--from", "claude-desktop", "--json"]);
    ok(&output, "second import");
    let report = stdout_json(&output);
    assert_eq!(report["imported"], json!([]), "{report:#}");
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 3, "{report:#}");
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("already configured"),
        "{report:#}"
    );

    let output = sandbox.run(&["list", "--json"]);
    ok(&output, "list");
    let list = stdout_json(&output);
    for name in ["alpha", "beta"] {
        let server = entry(&list, name);
        assert_eq!(server["state"], "ready", "{name}: {list:#}");
        assert_eq!(
            server["source"],
            sandbox.user_file().display().to_string(),
            "{name}: {list:#}"
        );
        assert!(server["tools"].as_u64().unwrap() >= 2, "{list:#}");
    }
    let broken = entry(&list, "broken");
    assert_eq!(broken["state"], "failed", "{list:#}");
    let reason = broken["reason"].as_str().unwrap();
    assert!(reason.contains("exit code 7"), "{reason}");
    assert!(
        broken["stderr"]
            .as_str()
            .unwrap()
            .contains("fatal: missing API key"),
        "{list:#}"
    );
    // Claude Desktop's own copies are still configured: listed as
    // shadowed by switchboard's file, not run twice.
    let shadowed: Vec<&Value> = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == "alpha" && !s["skipped"].is_null())
        .collect();
    assert_eq!(shadowed.len(), 1, "{list:#}");
    assert_eq!(shadowed[0]["source"], desktop.display().to_string());

    let output = sandbox.run(&["tools", "--json"]);
    ok(&output, "tools");
    let tools = stdout_json(&output);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"alpha__echo"), "{names:?}");
    assert!(names.contains(&"beta__add"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("broken__")),
        "{names:?}"
    );
    assert!(
        text(&output.stderr).contains("broken"),
        "the failed server is mentioned: {}",
        text(&output.stderr)
    );

    let output = sandbox.run(&["tools", "--server", "beta", "--json"]);
    ok(&output, "tools --server");
    let tools = stdout_json(&output);
    let tools = tools["tools"].as_array().unwrap();
    assert!(!tools.is_empty());
    assert!(
        tools
            .iter()
            .all(|t| t["name"].as_str().unwrap().starts_with("beta__") && t["server"] == "beta"),
        "{tools:?}"
    );

    let output = sandbox.run(&["call", "alpha/echo", r#"{"text":"hello from the hub"}"#]);
    ok(&output, "call alpha/echo");
    assert_eq!(text(&output.stdout).trim(), "hello from the hub");

    let output = sandbox.run(&["call", "beta__add", r#"{"a":2,"b":3}"#, "--json"]);
    ok(&output, "call beta__add");
    assert_eq!(stdout_json(&output)["structuredContent"]["sum"], 5);

    // A tool error is exit 5, as with a server given on the command line.
    let output = sandbox.run(&["call", "alpha/error"]);
    assert_eq!(output.status.code(), Some(5), "{}", text(&output.stderr));

    // The broken server: exit 4, its failure and its stderr.
    let output = sandbox.run(&["call", "broken/echo", r#"{"text":"x"}"#]);
    assert_eq!(output.status.code(), Some(4), "{}", text(&output.stderr));
    let error = text(&output.stderr);
    assert!(error.contains("`broken`"), "{error}");
    assert!(error.contains("fatal: missing API key"), "{error}");

    let output = sandbox.run(&["call", "nosuch/echo"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("no server named `nosuch`"),
        "{}",
        text(&output.stderr)
    );
    let output = sandbox.run(&["call", "plain_tool_name"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("SERVER/TOOL"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn add_get_disable_enable_remove_round_trip() {
    let sandbox = Sandbox::new("edit");
    let output = sandbox.run(&[
        "add",
        "-s",
        "user",
        "-e",
        "API_KEY=${MY_SECRET}",
        "-e",
        "LITERAL_TOKEN=sk-written-in-the-file",
        "echoer",
        "--",
        BIN,
        "__testserver",
    ]);
    ok(&output, "add");
    assert!(
        text(&output.stdout).contains(&sandbox.user_file().display().to_string()),
        "says where: {}",
        text(&output.stdout)
    );

    // `get` shows references as written and never a secret's value.
    let output = sandbox
        .command()
        .args(["get", "echoer"])
        .env("MY_SECRET", "sk-expanded-secret")
        .output()
        .unwrap();
    ok(&output, "get");
    let shown = text(&output.stdout);
    assert!(shown.contains("${MY_SECRET}"), "{shown}");
    assert!(shown.contains(&sandbox.user_file().display().to_string()));
    assert!(!shown.contains("sk-expanded-secret"), "{shown}");
    assert!(!shown.contains("sk-written-in-the-file"), "{shown}");
    assert!(shown.contains("__testserver"), "{shown}");
    let output = sandbox.run(&["get", "echoer", "--json"]);
    ok(&output, "get --json");
    let got = stdout_json(&output);
    assert_eq!(got["enabled"], true);
    assert_eq!(got["scope"], "user");
    assert_eq!(got["env"]["API_KEY"], "${MY_SECRET}");

    // The same name again is refused, the file untouched.
    let before = std::fs::read_to_string(sandbox.user_file()).unwrap();
    let output = sandbox.run(&["add", "-s", "user", "echoer", "--", "true"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("already configured"));
    assert_eq!(
        std::fs::read_to_string(sandbox.user_file()).unwrap(),
        before
    );

    ok(&sandbox.run(&["disable", "echoer"]), "disable");
    let list = stdout_json(&sandbox.run(&["list", "--json"]));
    assert_eq!(entry(&list, "echoer")["state"], "disabled", "{list:#}");
    let output = sandbox.run(&["call", "echoer/echo", r#"{"text":"x"}"#]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("switchboard enable echoer"),
        "{}",
        text(&output.stderr)
    );

    ok(&sandbox.run(&["enable", "echoer"]), "enable");
    // (Its `${MY_SECRET}` set: a server whose variable is not is not
    // started.)
    let with_secret = |args: &[&str]| {
        sandbox
            .command()
            .args(args)
            .env("MY_SECRET", "sk-expanded-secret")
            .output()
            .unwrap()
    };
    let list = stdout_json(&with_secret(&["list", "--json"]));
    assert_eq!(entry(&list, "echoer")["state"], "ready", "{list:#}");
    let output = with_secret(&["call", "echoer/echo", r#"{"text":"back"}"#]);
    ok(&output, "call after enable");
    assert_eq!(text(&output.stdout).trim(), "back");

    ok(&sandbox.run(&["remove", "echoer"]), "remove");
    assert!(
        !std::fs::read_to_string(sandbox.user_file())
            .unwrap()
            .contains("echoer")
    );
    let output = sandbox.run(&["get", "echoer"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("no server named `echoer`"));
    let output = sandbox.run(&["remove", "echoer"]);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn add_remote_and_add_json_go_to_the_chosen_scope() {
    let sandbox = Sandbox::new("remote");
    let output = sandbox.run(&[
        "add",
        "-s",
        "project",
        "remote",
        "--url",
        "https://mcp.example.com/mcp",
        "-H",
        "Authorization: Bearer ${EXAMPLE_TOKEN}",
    ]);
    ok(&output, "add --url");
    let project = sandbox.work().join("switchboard.toml");
    let file = std::fs::read_to_string(&project).expect("the project file");
    assert!(file.contains("https://mcp.example.com/mcp"), "{file}");
    let got = stdout_json(&sandbox.run(&["get", "remote", "--json"]));
    assert_eq!(got["scope"], "project");
    assert_eq!(got["url"], "https://mcp.example.com/mcp");
    assert_eq!(got["headers"]["Authorization"], "Bearer ${EXAMPLE_TOKEN}");

    let server = json!({"type": "stdio", "command": BIN, "args": ["__testserver"],
                        "env": {"LEVEL": "debug"}});
    let output = sandbox.run(&["add-json", "json-server", &server.to_string()]);
    ok(&output, "add-json");
    // The default scope is local: the project's private file.
    let local = std::fs::read_to_string(sandbox.work().join("switchboard.local.toml")).unwrap();
    assert!(local.contains("[servers.json-server]"), "{local}");
    let got = stdout_json(&sandbox.run(&["get", "json-server", "--json"]));
    assert_eq!(got["command"], BIN);
    assert_eq!(got["env"]["LEVEL"], "debug");
    let output = sandbox.run(&["call", "json-server/echo", r#"{"text":"via json"}"#]);
    ok(&output, "call the add-json server");
    assert_eq!(text(&output.stdout).trim(), "via json");

    // A bad entry is refused with what is wrong; nothing is written.
    let output = sandbox.run(&["add-json", "bad", r#"{"command": 3}"#]);
    assert_eq!(output.status.code(), Some(1));
    let error = text(&output.stderr);
    assert!(error.contains("command"), "{error}");
    let output = sandbox.run(&["add-json", "bad", "{not json"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("line 1"));
    assert!(
        !std::fs::read_to_string(sandbox.work().join("switchboard.local.toml"))
            .unwrap()
            .contains("bad")
    );
}

#[test]
fn list_reports_bad_files_with_their_position_and_keeps_going() {
    let sandbox = Sandbox::new("diag");
    sandbox.write(
        &sandbox.work().join(".mcp.json"),
        "{\n  \"mcpServers\": {\n    \"x\": [1, 2}\n  }\n}\n",
    );
    let vscode = json!({
        "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
        "servers": {"asks": {"command": BIN, "args": ["__testserver", "--name", "asks"],
                             "env": {"API_KEY": "${input:api-key}"}}}
    });
    sandbox.write(
        &sandbox.work().join(".vscode/mcp.json"),
        &vscode.to_string(),
    );
    let config = sandbox.root.join("explicit.toml");
    sandbox.write(
        &config,
        &format!("[servers.good]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\n"),
    );
    // A project file's server is asked about only once approved
    // (tests/trust.rs).
    ok(&sandbox.run(&["approve", "asks"]), "approve asks");
    let output = sandbox.run(&["list", "--json", "--config", config.to_str().unwrap()]);
    ok(&output, "list with a bad file");
    let stderr = text(&output.stderr);
    let mcp_json = sandbox.work().join(".mcp.json").display().to_string();
    assert!(
        stderr.contains(&format!("{mcp_json}:3:")),
        "file:line:col on stderr: {stderr}"
    );
    let list = stdout_json(&output);
    // A VS Code `${input:…}` cannot be asked without a terminal: that
    // server fails with the reason, the others run.
    let asks = entry(&list, "asks");
    assert_eq!(asks["state"], "failed", "{list:#}");
    assert!(
        asks["reason"]
            .as_str()
            .unwrap()
            .contains("${input:api-key}"),
        "{list:#}"
    );
    let good = entry(&list, "good");
    assert_eq!(good["state"], "ready", "{list:#}");
    assert_eq!(good["scope"], "explicit");
    assert_eq!(good["source"], config.display().to_string());

    // Nothing configured at all: an empty list and a hint, exit 0.
    let empty = Sandbox::new("empty");
    let output = empty.run(&["list"]);
    ok(&output, "empty list");
    assert!(
        text(&output.stdout).contains("switchboard add"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn a_server_command_still_means_that_server() {
    // `tools -- CMD` talks to CMD, not to the configured servers.
    let sandbox = Sandbox::new("direct");
    let output = sandbox.run(&["tools", "--json", "--", BIN, "__testserver"]);
    ok(&output, "tools -- cmd");
    let tools = stdout_json(&output);
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "echo")
    );
    // And `call TOOL JSON -- CMD` takes the arguments positionally too.
    let output = sandbox.run(&[
        "call",
        "echo",
        r#"{"text":"positional"}"#,
        "--",
        BIN,
        "__testserver",
    ]);
    ok(&output, "call with positional JSON");
    assert_eq!(text(&output.stdout).trim(), "positional");
}

#[test]
fn import_reports_servers_already_configured_under_another_name() {
    let sandbox = Sandbox::new("dupes");
    // Configured by hand first.
    ok(
        &sandbox.run(&["add", "-s", "user", "mine", "--", BIN, "__testserver"]),
        "add",
    );
    let cursor = sandbox.home().join(".cursor/mcp.json");
    // The same program under another account (its env differs) is
    // another server, not a duplicate.
    let mut account2 = test_server(&[]);
    account2["env"] = json!({"ACCOUNT": "2"});
    let config = json!({ "mcpServers": {
        "theirs": test_server(&[]),
        "other": test_server(&["--era", "legacy"]),
        "account2": account2,
    }});
    sandbox.write(&cursor, &config.to_string());
    let output = sandbox.run(&["import", "--from", "cursor", "--json"]);
    ok(&output, "import --from cursor");
    let report = stdout_json(&output);
    let mut imported: Vec<&str> = report["imported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    imported.sort_unstable();
    assert_eq!(imported, ["account2", "other"], "{report:#}");
    let skipped = &report["skipped"][0];
    assert_eq!(skipped["name"], "theirs", "{report:#}");
    assert!(
        skipped["reason"]
            .as_str()
            .unwrap()
            .contains("already configured as `mine`"),
        "{report:#}"
    );

    // Cursor's copy runs as a duplicate of `mine`, not twice.
    let list = stdout_json(&sandbox.run(&["list", "--json"]));
    let theirs = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "theirs")
        .unwrap();
    assert_eq!(theirs["skipped"], "duplicate", "{list:#}");
    // Asked for by name, it is that server: a typed name is never
    // refused as a duplicate.
    let output = sandbox.run(&["call", "theirs/echo", r#"{"text": "by name"}"#]);
    ok(&output, "call theirs/echo");
    assert!(text(&output.stdout).contains("by name"));
    assert!(
        theirs["reason"].as_str().unwrap().contains("`mine`"),
        "{list:#}"
    );

    // Removing switchboard's `other` leaves Cursor's, which is used now.
    let output = sandbox.run(&["remove", "other"]);
    ok(&output, "remove other");
    let said = text(&output.stdout);
    assert!(said.contains("still configured in"), "{said}");
    assert!(said.contains(&cursor.display().to_string()), "{said}");
    let got = stdout_json(&sandbox.run(&["get", "other", "--json"]));
    assert_eq!(got["dialect"], "Cursor");
    // Edits go to the file a server is configured in: now Cursor's.
    ok(
        &sandbox.run(&["disable", "other"]),
        "disable in Cursor's file",
    );
    let cursor_file: Value =
        serde_json::from_str(&std::fs::read_to_string(&cursor).unwrap()).unwrap();
    assert_eq!(cursor_file["mcpServers"]["other"]["disabled"], true);
}

#[test]
fn import_into_the_project_file_writes_references_for_literal_secrets() {
    let sandbox = Sandbox::new("import-secrets");
    let mut local = test_server(&[]);
    local["env"] = json!({"GITHUB_TOKEN": "ghp_env_2", "LOG_LEVEL": "debug"});
    let config = json!({ "mcpServers": {
        "files": local,
        "other": {"command": "some-tool", "args": ["--api-key=sk-arg-1", "serve"]},
        "docs": {
            "url": "https://docs.example/mcp?token=sk-url-3&page=1",
            "headers": {"Authorization": "Bearer sk-header-4", "X-Trace": "on"},
        },
    }});
    sandbox.write(
        &sandbox.home().join(".cursor/mcp.json"),
        &config.to_string(),
    );
    let output = sandbox.run(&["import", "--from", "cursor", "-s", "project", "--json"]);
    ok(&output, "import -s project");
    let report = stdout_json(&output);
    let file = PathBuf::from(report["file"].as_str().unwrap());
    assert!(file.starts_with(sandbox.work()), "{report:#}");
    let written = std::fs::read_to_string(&file).unwrap();
    for secret in ["sk-arg-1", "ghp_env_2", "sk-url-3", "sk-header-4"] {
        assert!(!written.contains(secret), "{secret} copied:\n{written}");
    }
    for kept in ["debug", "page=1", "on"] {
        assert!(written.contains(kept), "{kept} lost:\n{written}");
    }
    let variables: Vec<&str> = report["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["variable"].as_str().unwrap())
        .collect();
    for variable in ["OTHER_API_KEY", "GITHUB_TOKEN", "DOCS_TOKEN"] {
        assert!(variables.contains(&variable), "{report:#}");
        assert!(written.contains(&format!("${{{variable}}}")), "{written}");
    }
    assert!(written.contains("Bearer ${DOCS_TOKEN}"), "{written}");
    let said = text(&output.stderr);
    assert!(said.contains("set GITHUB_TOKEN"), "{said}");

    // With the variables set, the imported server runs as before.
    let output = sandbox
        .command()
        .args(["call", "files/echo", "--arg", "text=hi"])
        .env("GITHUB_TOKEN", "ghp_env_2")
        .output()
        .unwrap();
    ok(&output, "call the imported server");

    // The user file is the user's own: it keeps what was written.
    let output = sandbox.run(&["import", "--from", "cursor", "-s", "user", "--json"]);
    ok(&output, "import -s user");
    let written = std::fs::read_to_string(sandbox.user_file()).unwrap();
    assert!(written.contains("ghp_env_2"), "{written}");
}

#[test]
fn the_local_file_is_private_and_git_ignores_it_from_its_first_write() {
    let sandbox = Sandbox::new("local-ignored");
    let exclude = sandbox.work().join(".git/info/exclude");
    let output = sandbox.run(&["add", "one", "--", BIN, "__testserver"]);
    ok(&output, "add -s local");
    let local = sandbox.work().join("switchboard.local.toml");
    assert!(local.is_file());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&local).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let excluded = std::fs::read_to_string(&exclude).unwrap_or_default();
    assert_eq!(
        excluded
            .lines()
            .filter(|l| *l == "/switchboard.local.toml")
            .count(),
        1
    );
    assert!(
        text(&output.stdout).contains("git ignores it"),
        "{}",
        text(&output.stdout)
    );
    // Written once, not again.
    ok(
        &sandbox.run(&["add", "two", "--", BIN, "__testserver"]),
        "add again",
    );
    let again = std::fs::read_to_string(&exclude).unwrap();
    assert_eq!(again, excluded);

    // Already ignored by the project: left alone.
    let other = Sandbox::new("local-already-ignored");
    other.write(&other.work().join(".gitignore"), "switchboard.local.toml\n");
    let output = other.run(&["add", "one", "--", BIN, "__testserver"]);
    ok(&output, "add -s local");
    assert!(!other.work().join(".git/info/exclude").exists());
    assert!(!text(&output.stdout).contains("git ignores it"));
}

#[test]
fn get_hides_secrets_in_urls_and_arguments() {
    let sandbox = Sandbox::new("get-secrets");
    ok(
        &sandbox.run(&[
            "add",
            "-s",
            "user",
            "--url",
            "https://u:pw-1@docs.example/mcp?api_key=sk-2&page=1",
            "docs",
        ]),
        "add remote",
    );
    ok(
        &sandbox.run(&[
            "add",
            "-s",
            "user",
            "files",
            "--",
            BIN,
            "__testserver",
            "--token",
            "sk-3",
            "--name=${NAME}",
        ]),
        "add local",
    );
    for name in ["docs", "files"] {
        for json in [true, false] {
            let mut args = vec!["get", name];
            if json {
                args.push("--json");
            }
            let output = sandbox.run(&args);
            ok(&output, "get");
            let shown = text(&output.stdout);
            for secret in ["pw-1", "sk-2", "sk-3"] {
                assert!(!shown.contains(secret), "{secret} shown:\n{shown}");
            }
            assert!(
                shown.contains("page=1") || shown.contains("${NAME}"),
                "{shown}"
            );
        }
    }
}

#[test]
fn a_remote_server_that_refuses_is_needs_auth_and_its_call_exits_3() {
    // Two servers: the same URL twice would be one server (a duplicate).
    let (first, second) = (
        HttpServer::start(&["--require-header", "X-Api-Key: sesame"]),
        HttpServer::start(&["--require-header", "X-Api-Key: sesame"]),
    );
    let (url, other_url) = (format!("{}/mcp", first.1), format!("{}/mcp", second.1));
    let sandbox = Sandbox::new("auth");
    ok(
        &sandbox.run(&["add", "-s", "user", "locked", "--url", &url]),
        "add locked",
    );
    // The header's reference is expanded only when the server starts.
    ok(
        &sandbox.run(&[
            "add",
            "-s",
            "user",
            "open",
            "--url",
            &other_url,
            "-H",
            "X-Api-Key: ${SESAME}",
        ]),
        "add open",
    );
    let with_key = |args: &[&str]| {
        sandbox
            .command()
            .args(args)
            .env("SESAME", "sesame")
            .output()
            .unwrap()
    };
    let output = with_key(&["list", "--json"]);
    ok(&output, "list");
    let list = stdout_json(&output);
    assert_eq!(entry(&list, "open")["state"], "ready", "{list:#}");
    let locked = entry(&list, "locked");
    assert_eq!(locked["state"], "needs-auth", "{list:#}");
    assert!(
        locked["reason"]
            .as_str()
            .unwrap()
            .contains("switchboard login"),
        "{list:#}"
    );

    let output = with_key(&["call", "open/echo", r#"{"text":"let in"}"#]);
    ok(&output, "call open/echo");
    assert_eq!(text(&output.stdout).trim(), "let in");

    let output = with_key(&["call", "locked/echo", r#"{"text":"x"}"#]);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains(&format!("to log in, run: switchboard login {url}")),
        "{}",
        text(&output.stderr)
    );
    // Without the variable the server is not started (the reference is
    // never sent as written), and the variable is named.
    let output = sandbox.run(&["call", "open/echo", r#"{"text":"x"}"#]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("SESAME is not set"),
        "the unset variable is named"
    );
}

#[test]
fn a_configured_server_is_answered_like_one_given_on_the_command_line() {
    let sandbox = Sandbox::new("answer");
    ok(
        &sandbox.run(&["add", "-s", "user", "asker", "--", BIN, "__testserver"]),
        "add",
    );
    // A form: declined without a terminal, saying why.
    let output = sandbox.run(&["call", "asker/ask", "--no-input"]);
    ok(&output, "call asker/ask");
    assert!(
        text(&output.stdout).contains(r#"{"action":"decline"}"#),
        "{}",
        text(&output.stdout)
    );
    assert!(
        text(&output.stderr).contains("--no-input"),
        "{}",
        text(&output.stderr)
    );
    // Roots from --root.
    let output = sandbox.run(&["call", "asker/roots", "--root", ".", "--json"]);
    ok(&output, "call asker/roots");
    let work = std::fs::canonicalize(sandbox.work()).unwrap();
    assert!(
        text(&output.stdout).contains(&format!("file://{}", work.display())),
        "{}",
        text(&output.stdout)
    );
    // --timeout is the request timeout.
    let output = sandbox.run(&["call", "asker/slow", r#"{"ms": 5000}"#, "--timeout", "0.3"]);
    assert_eq!(output.status.code(), Some(4), "{}", text(&output.stderr));
}

#[test]
fn import_from_claude_code_reads_every_file_it_has() {
    let sandbox = Sandbox::new("claude-code");
    let work = sandbox.work().display().to_string();
    let claude_json = json!({
        "mcpServers": { "user-wide": test_server(&["--name", "user-wide"]) },
        "projects": { work: { "mcpServers": { "mine-here": test_server(&["--name", "mine-here"]) } } },
        "numStartups": 3
    });
    sandbox.write(
        &sandbox.home().join(".claude.json"),
        &claude_json.to_string(),
    );
    let mcp_json = json!({ "mcpServers": {
        "checked-in": { "type": "http", "url": "https://mcp.example.com/mcp",
                        "headers": { "Authorization": "Bearer ${EXAMPLE_TOKEN}" } }
    }});
    sandbox.write(&sandbox.work().join(".mcp.json"), &mcp_json.to_string());

    let output = sandbox.run(&["import", "--from", "claude-code", "--json"]);
    ok(&output, "import --from claude-code");
    let report = stdout_json(&output);
    let names = |report: &Value, key: &str| -> Vec<String> {
        let mut names: Vec<String> = report[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&report, "imported"),
        ["mine-here", "user-wide"],
        "{report:#}"
    );
    // The checked-in server waits for approval (tests/trust.rs): import
    // does not copy it into the trusted user file before that.
    assert_eq!(names(&report, "skipped"), ["checked-in"], "{report:#}");
    assert!(
        report["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("switchboard approve checked-in"),
        "{report:#}"
    );
    ok(
        &sandbox.run(&["approve", "checked-in"]),
        "approve checked-in",
    );
    let output = sandbox.run(&["import", "--from", "claude-code", "--json"]);
    ok(&output, "import --from claude-code, approved");
    let report = stdout_json(&output);
    assert_eq!(names(&report, "imported"), ["checked-in"], "{report:#}");
    let file = std::fs::read_to_string(sandbox.user_file()).unwrap();
    assert!(file.contains("Bearer ${EXAMPLE_TOKEN}"), "{file}");
    // The project's .mcp.json still outranks the user file it was copied
    // into; `get` says both.
    let got = stdout_json(&sandbox.run(&["get", "checked-in", "--json"]));
    assert_eq!(got["scope"], "project", "{got:#}");
    assert_eq!(
        got["alsoConfigured"][0]["source"],
        sandbox.user_file().display().to_string(),
        "{got:#}"
    );

    // A client with no file says where it looked.
    let output = sandbox.run(&["import", "--from", "goose"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("no goose configuration found"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn tools_for_a_model_api_are_its_tools_value_with_valid_unique_names() {
    let sandbox = Sandbox::new("for-model");
    // Two servers whose names collide once made valid (`a.b` and `a_b`).
    ok(
        &sandbox.run(&["add", "-s", "user", "a.b", "--", BIN, "__testserver"]),
        "add a.b",
    );
    ok(
        // Other arguments: the same command twice is one server (a duplicate).
        &sandbox.run(&[
            "add",
            "-s",
            "user",
            "a_b",
            "--",
            BIN,
            "__testserver",
            "--name",
            "b",
        ]),
        "add a_b",
    );
    let output = sandbox.run(&["tools", "--for", "anthropic"]);
    ok(&output, "tools --for anthropic");
    let tools = stdout_json(&output);
    let names: Vec<&str> = tools
        .as_array()
        .expect("the `tools` array")
        .iter()
        .map(|t| t["name"].as_str().expect("a name"))
        .collect();
    assert!(names.contains(&"mcp__a_b__echo"), "{names:?}");
    let unique: std::collections::BTreeSet<&&str> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for name in &names {
        assert!(
            name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__a_b__echo")
        .unwrap();
    assert_eq!(
        echo["input_schema"]["required"],
        json!(["text"]),
        "{echo:#}"
    );
    // The renamed duplicate is reported, naming both servers.
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("is taken by a.b/echo") || stderr.contains("is taken by a_b/echo"),
        "{stderr}"
    );

    // Gemini: one functionDeclarations entry; a single server given by command.
    let output = sandbox.run(&["tools", "--for", "gemini", "--", BIN, "__testserver"]);
    ok(&output, "tools --for gemini -- …");
    let tools = stdout_json(&output);
    let declarations = tools[0]["functionDeclarations"]
        .as_array()
        .expect("functionDeclarations");
    assert!(
        declarations
            .iter()
            .any(|d| d["name"] == "mcp__switchboard-testserver__add"),
        "{tools:#}"
    );

    let output = sandbox.run(&["tools", "--for", "cohere"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("openai-chat"));
}

#[test]
fn call_runs_a_configured_servers_task_only_tool_as_a_task() {
    let sandbox = Sandbox::new("task");
    for era in ["dual", "legacy"] {
        ok(
            &sandbox.run(&[
                "add",
                "-s",
                "user",
                era,
                "--",
                BIN,
                "__testserver",
                "--era",
                era,
            ]),
            "add",
        );
        let target = format!("{era}/must_task");
        let output = sandbox.run(&["call", &target, "--arg", "ms=10"]);
        ok(&output, &format!("call {target}"));
        let said = text(&output.stdout);
        assert!(said.starts_with("done"), "{era}: {said}");
    }
}

#[test]
fn resources_prompts_read_and_prompt_on_configured_servers() {
    let sandbox = Sandbox::new("features");
    // Two servers (different commands: the same command twice is one
    // server under two names).
    for (name, era) in [("one", "dual"), ("two", "legacy")] {
        ok(
            &sandbox.run(&[
                "add",
                "-s",
                "user",
                name,
                "--",
                BIN,
                "__testserver",
                "--era",
                era,
            ]),
            "add",
        );
    }

    // Across both servers: a server column, a `server` field.
    let output = sandbox.run(&["resources"]);
    ok(&output, "resources");
    let table = text(&output.stdout);
    assert!(table.contains("server"), "{table}");
    for name in ["one", "two"] {
        assert!(
            table
                .lines()
                .any(|l| l.contains(name) && l.contains("test://static/hello")),
            "{name}: {table}"
        );
    }
    let output = sandbox.run(&["resources", "--json"]);
    ok(&output, "resources --json");
    let listed = stdout_json(&output);
    for name in ["one", "two"] {
        assert!(
            listed["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["server"] == name && r["uri"] == "test://static/hello"),
            "{name}: {listed:#}"
        );
    }
    let output = sandbox.run(&["prompts", "--json"]);
    ok(&output, "prompts --json");
    let listed = stdout_json(&output);
    for name in ["one", "two"] {
        assert!(
            listed["prompts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["server"] == name && p["name"] == "greeting"),
            "{name}: {listed:#}"
        );
    }
    let output = sandbox.run(&["prompts", "--server", "two"]);
    ok(&output, "prompts --server two");
    let table = text(&output.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.contains("two") && l.contains("greeting")),
        "{table}"
    );
    assert!(
        !table
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("one")),
        "{table}"
    );

    // One server's resource and prompt, printed as for `-- command`.
    let output = sandbox.run(&["read", "test://static/hello", "--server", "one"]);
    ok(&output, "read --server one");
    assert!(
        text(&output.stdout).contains("Hello, world!"),
        "{}",
        text(&output.stdout)
    );
    for args in [
        &["prompt", "greeting", "--server", "two", "--arg", "name=Ada"][..],
        &["prompt", "two/greeting", "--arg", "name=Ada"][..],
    ] {
        let output = sandbox.run(args);
        ok(&output, &args.join(" "));
        assert!(
            text(&output.stdout).contains("Hello, Ada!"),
            "{}",
            text(&output.stdout)
        );
    }

    // `read` without --server, of a URI both servers list, says which to
    // give (with one server listing it, that one is read: errors.rs).
    let output = sandbox.run(&["read", "test://static/hello"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("give --server one or --server two"),
        "{}",
        text(&output.stderr)
    );

    // An unknown server: a clear error, exit 1.
    for args in [
        &["read", "test://static/hello", "--server", "nope"][..],
        &["prompt", "nope/greeting"][..],
        &["resources", "--server", "nope"][..],
        &["prompts", "--server", "nope"][..],
    ] {
        let output = sandbox.run(args);
        assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
        assert!(
            text(&output.stderr).contains("nope"),
            "{}",
            text(&output.stderr)
        );
    }

    // A server that cannot start is reported; the listing still succeeds
    // while another server answered, and fails when none did.
    ok(
        &sandbox.run(&[
            "add",
            "-s",
            "user",
            "broken",
            "--",
            "/nonexistent/switchboard-test-command",
        ]),
        "add broken",
    );
    let output = sandbox.run(&["prompts"]);
    ok(&output, "prompts with a broken server");
    assert!(
        text(&output.stderr).contains("broken"),
        "{}",
        text(&output.stderr)
    );
    let output = sandbox.run(&["prompts", "--server", "broken"]);
    assert_eq!(output.status.code(), Some(4), "{}", text(&output.stderr));
}

#[test]
fn info_and_complete_on_configured_servers() {
    let sandbox = Sandbox::new("info-complete");
    for (name, era) in [("one", "dual"), ("two", "legacy")] {
        ok(
            &sandbox.run(&[
                "add",
                "-s",
                "user",
                name,
                "--",
                BIN,
                "__testserver",
                "--era",
                era,
                "--name",
                &format!("{name}-server"),
            ]),
            "add",
        );
    }
    ok(
        &sandbox.run(&[
            "add",
            "-s",
            "user",
            "broken",
            "--",
            "/nonexistent/switchboard-test-command",
        ]),
        "add broken",
    );

    // `info NAME`: its state, source and session.
    let output = sandbox.run(&["info", "one"]);
    ok(&output, "info one");
    let shown = text(&output.stdout);
    for part in [
        "ready",
        "one-server",
        "2026-07-28",
        "config.toml (user)",
        "tools",
    ] {
        assert!(shown.contains(part), "{part:?} not in:\n{shown}");
    }
    let output = sandbox.run(&["info", "--server", "two", "--json"]);
    ok(&output, "info --server two --json");
    let info = stdout_json(&output);
    assert_eq!(info["state"], "ready", "{info:#}");
    assert_eq!(info["server"], "two", "{info:#}");
    assert_eq!(info["serverInfo"]["name"], "two-server", "{info:#}");
    assert_eq!(info["transport"], "stdio", "{info:#}");
    assert_eq!(info["scope"], "user", "{info:#}");
    assert!(
        info["protocolVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("2025")),
        "{info:#}"
    );
    assert!(info["capabilities"]["prompts"].is_object(), "{info:#}");
    // One that cannot start: its state and why, exit 4.
    let output = sandbox.run(&["info", "broken"]);
    assert_eq!(output.status.code(), Some(4), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("broken")
            && text(&output.stderr).contains("switchboard-test-command"),
        "{}",
        text(&output.stderr)
    );
    let output = sandbox.run(&["info"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("NAME"),
        "{}",
        text(&output.stderr)
    );

    // `complete`: SERVER/PROMPT, --server, SERVER__PROMPT; one value a line.
    for args in [
        &["complete", "one/greeting", "name=a"][..],
        &["complete", "greeting", "name=a", "--server", "two"][..],
        &["complete", "two__greeting", "name=a"][..],
    ] {
        let output = sandbox.run(args);
        ok(&output, &args.join(" "));
        assert_eq!(text(&output.stdout), "alice\n", "{}", args.join(" "));
    }
    let output = sandbox.run(&["complete", "one/greeting", "name", "--json"]);
    ok(&output, "complete --json");
    assert_eq!(
        stdout_json(&output)["completion"]["values"],
        json!(["alice", "bob", "carol"])
    );
    // The same for a server given after `--`.
    let output = sandbox.run(&["complete", "greeting", "name=c", "--", BIN, "__testserver"]);
    ok(&output, "complete -- …");
    assert_eq!(text(&output.stdout), "carol\n");
    // A template needs --server; an unknown server is named.
    let output = sandbox.run(&["complete", "--resource", "test://t/{id}", "id"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("--server NAME"));
    let output = sandbox.run(&["complete", "nope/greeting", "name=a"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("nope"));
}

#[test]
fn a_configured_servers_progress_and_log_lines_show_as_for_a_command() {
    let sandbox = Sandbox::new("progress");
    for era in ["dual", "legacy"] {
        ok(
            &sandbox.run(&[
                "add",
                "-s",
                "user",
                era,
                "--",
                BIN,
                "__testserver",
                "--era",
                era,
            ]),
            "add",
        );
        let target = format!("{era}/progress");
        let output = sandbox.run(&["call", &target, "--arg", "steps=3", "--log-level", "info"]);
        ok(&output, &target);
        let stderr = text(&output.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("(ok")).collect();
        assert_eq!(
            lines,
            [
                "progress: 1/3 step 1 of 3",
                r#"[info] testserver: {"step":1,"of":3}"#,
                "progress: 2/3 step 2 of 3",
                r#"[info] testserver: {"step":2,"of":3}"#,
                "progress: 3/3 step 3 of 3",
            ],
            "{era}"
        );
        // Without --log-level the server sends no log lines.
        let output = sandbox.run(&["call", &target, "--arg", "steps=2"]);
        ok(&output, &target);
        assert!(
            !text(&output.stderr).contains("[info]"),
            "{}",
            text(&output.stderr)
        );
        assert!(text(&output.stderr).contains("progress: 2/2"));
    }
    // --server-logs: what the server wrote to stderr, after the result.
    ok(
        &sandbox.run(&[
            "add",
            "-s",
            "user",
            "talker",
            "--",
            "sh",
            "-c",
            &format!("echo 'hello from stderr' >&2; exec {BIN} __testserver"),
        ]),
        "add talker",
    );
    let output = sandbox.run(&["call", "talker/echo", "--arg", "text=x", "--server-logs"]);
    ok(&output, "call --server-logs");
    assert!(
        text(&output.stderr).contains("  | hello from stderr"),
        "{}",
        text(&output.stderr)
    );
    let output = sandbox.run(&["call", "talker/echo", "--arg", "text=x"]);
    assert!(!text(&output.stderr).contains("hello from stderr"));
}

/// Under a terminal a configured server's progress is a bar and its log
/// lines are printed above it, as for a server given after `--`.
#[test]
fn a_configured_servers_progress_bar_and_log_lines_on_a_terminal() {
    let sandbox = Sandbox::new("progress-pty");
    ok(
        &sandbox.run(&["add", "-s", "user", "slow", "--", BIN, "__testserver"]),
        "add",
    );
    let mut terminal = support::pty::Terminal::start(
        &[
            "call",
            "slow/progress",
            "--arg",
            "steps=3",
            "--arg",
            "delay_ms=300",
            "--log-level",
            "info",
        ],
        &sandbox.work(),
        &sandbox.home(),
        &[],
    );
    // The bar: percent, step and message.
    terminal.expect("1/3 step 1 of 3");
    terminal.expect(r#"[info] testserver: {"step":1,"of":3}"#);
    terminal.expect("% 2/3 step 2 of 3");
    let (code, shown) = terminal.finish();
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("completed 3 steps"), "{shown}");
    assert!(
        !shown.contains("progress: 1/3"),
        "a bar, not lines: {shown}"
    );
}

/// A session-era server in `sh` listing one tool, `tool`, whose call
/// answers `answered by SERVER/TOOL`.
fn one_tool_server(server: &str, tool: &str) -> String {
    format!(
        r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\)[,}}].*/\1/p')
  [ -n "$id" ] || continue
  case "$line" in
    *'"method":"initialize"'*) printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"{server}","version":"0"}}}}}}\n' "$id" ;;
    *'"method":"tools/list"'*) printf '{{"jsonrpc":"2.0","id":%s,"result":{{"tools":[{{"name":"{tool}","inputSchema":{{"type":"object"}}}}]}}}}\n' "$id" ;;
    *'"method":"tools/call"'*) printf '{{"jsonrpc":"2.0","id":%s,"result":{{"content":[{{"type":"text","text":"answered by {server}/{tool}"}}]}}}}\n' "$id" ;;
    *) printf '{{"jsonrpc":"2.0","id":%s,"error":{{"code":-32601,"message":"Method not found"}}}}\n' "$id" ;;
  esac
done"#
    )
}

#[test]
fn call_takes_the_hub_wide_name_of_a_renamed_tool() {
    let sandbox = Sandbox::new("renamed");
    // `a__b`'s `c` and `a`'s `b__c` both want `a__b__c`.
    for (server, tool) in [("a__b", "c"), ("a", "b__c")] {
        ok(
            &sandbox.run(&[
                "add",
                "-s",
                "user",
                server,
                "--",
                "sh",
                "-c",
                &one_tool_server(server, tool),
            ]),
            "add",
        );
    }
    let output = sandbox.run(&["tools", "--json"]);
    ok(&output, "tools --json");
    let tools = stdout_json(&output);
    let tools = tools["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 2, "{tools:#?}");
    let renamed = tools
        .iter()
        .find(|t| t["name"] != "a__b__c")
        .expect("one renamed");
    let name = renamed["name"].as_str().unwrap();
    assert!(name.starts_with("a__b__c_"), "{name}");
    let (server, tool) = (
        renamed["server"].as_str().unwrap(),
        renamed["tool"].as_str().unwrap(),
    );
    let output = sandbox.run(&["call", name]);
    ok(&output, &format!("call {name}"));
    assert_eq!(
        text(&output.stdout).trim(),
        format!("answered by {server}/{tool}")
    );
    // The name it wanted still reaches the tool that kept it.
    let kept = tools.iter().find(|t| t["name"] == "a__b__c").unwrap();
    let output = sandbox.run(&["call", "a__b__c"]);
    ok(&output, "call a__b__c");
    assert_eq!(
        text(&output.stdout).trim(),
        format!(
            "answered by {}/{}",
            kept["server"].as_str().unwrap(),
            kept["tool"].as_str().unwrap()
        )
    );
}

#[test]
fn a_headers_helper_is_kept_shown_and_its_failure_is_the_servers_state() {
    let sandbox = Sandbox::new("helper");
    let written = json!({
        "type": "http",
        "url": "http://127.0.0.1:9/mcp",
        "headersHelper": "echo 'vault: not logged in' >&2; exit 7"
    });
    ok(
        &sandbox.run(&["add-json", "-s", "user", "remote", &written.to_string()]),
        "add-json",
    );
    let file = std::fs::read_to_string(sandbox.user_file()).unwrap();
    assert!(file.contains("headers_helper = "), "{file}");
    let got = stdout_json(&sandbox.run(&["get", "remote", "--json"]));
    assert_eq!(
        got["headersHelper"], "echo 'vault: not logged in' >&2; exit 7",
        "{got:#}"
    );
    assert_eq!(got["headersHelperTimeoutSecs"], 10.0, "{got:#}");

    let list = stdout_json(&sandbox.run(&["list", "--json"]));
    let remote = entry(&list, "remote");
    assert_eq!(remote["state"], "failed", "{list:#}");
    let reason = remote["reason"].as_str().unwrap();
    for part in ["headers helper", "exit code 7", "run it by hand"] {
        assert!(reason.contains(part), "{part:?} not in {reason}");
    }
    // Its stderr may hold a token (issue 28): never in the reason.
    assert!(!reason.contains("vault: not logged in"), "{reason}");
    let output = sandbox.run(&["call", "remote/echo"]);
    assert_eq!(output.status.code(), Some(4), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("headers helper"),
        "{}",
        text(&output.stderr)
    );
}

/// After `claude mcp add switchboard -- switchboard serve` (what `serve
/// --help` shows), Claude Code's file lists the gateway: `list`, `tools`
/// and `doctor` say it is skipped, and never start a nested gateway that
/// would start every server again.
#[test]
fn a_hosts_entry_for_the_gateway_is_skipped_not_started() {
    let sandbox = Sandbox::new("gateway-entry");
    sandbox.write(
        &sandbox.home().join(".claude.json"),
        &json!({"mcpServers": {
            "alpha": test_server(&[]),
            // This very binary, and `switchboard` by name (not on PATH here).
            "switchboard": {"command": BIN, "args": ["serve"]},
            "by-name": {"command": "switchboard", "args": ["serve", "--http", "127.0.0.1:0"]},
        }})
        .to_string(),
    );
    let output = sandbox.run(&["list", "--json"]);
    ok(&output, "list");
    let list = stdout_json(&output);
    for name in ["switchboard", "by-name"] {
        let row = list["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {list:#}"));
        assert_eq!(row["skipped"], "gateway", "{row:#}");
        assert!(
            row["reason"]
                .as_str()
                .unwrap()
                .contains("switchboard's own gateway"),
            "{row:#}"
        );
    }
    assert_eq!(entry(&list, "alpha")["state"], "ready", "{list:#}");

    let output = sandbox.run(&["tools", "--json"]);
    ok(&output, "tools");
    let tools = stdout_json(&output);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"alpha__echo"), "{names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("alpha__")),
        "only alpha's tools, none through a nested gateway: {names:?}"
    );

    let output = sandbox.run(&["doctor"]);
    let said = text(&output.stdout);
    assert!(
        said.contains("server `switchboard`") && said.contains("switchboard's own gateway"),
        "{said}"
    );
    // Typed, the name says why it is not used.
    let output = sandbox.run(&["call", "switchboard/echo", "{}"]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("switchboard's own gateway"),
        "{}",
        text(&output.stderr)
    );
}

/// A name the user types is never refused as a duplicate: `info` and
/// `call` on the name of another client's copy of a configured server
/// reach that server.
#[test]
fn a_typed_name_of_a_duplicate_reaches_the_server() {
    let sandbox = Sandbox::new("typed-duplicate");
    sandbox.write(
        &sandbox.user_file(),
        &format!("[servers.fs]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\n"),
    );
    sandbox.write(
        &sandbox
            .home()
            .join(".config/Claude/claude_desktop_config.json"),
        &json!({"mcpServers": {"filesystem": test_server(&[])}}).to_string(),
    );
    let list = stdout_json(&sandbox.run(&["list", "--json"]));
    let row = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "filesystem")
        .unwrap_or_else(|| panic!("{list:#}"));
    assert_eq!(row["skipped"], "duplicate", "{row:#}");
    let output = sandbox.run(&["info", "filesystem"]);
    ok(&output, "info filesystem");
    assert!(
        text(&output.stdout).contains("ready"),
        "{}",
        text(&output.stdout)
    );
    let output = sandbox.run(&["call", "filesystem/echo", r#"{"text": "same server"}"#]);
    ok(&output, "call filesystem/echo");
    assert!(text(&output.stdout).contains("same server"));
}

/// A VS Code `${input:…}` is asked once on a terminal and remembered for
/// the project (0600): the next run, even without a terminal, uses it.
#[test]
fn an_input_answered_once_is_remembered_for_the_project() {
    let sandbox = Sandbox::new("inputs");
    let got = sandbox.root.join("got");
    let vscode = json!({
        "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
        "servers": {"asks": {
            "command": "sh",
            "args": ["-c", format!("echo \"$API_KEY\" >> '{}'; exec '{BIN}' __testserver", got.display())],
            "env": {"API_KEY": "${input:api-key}"}
        }}
    });
    sandbox.write(
        &sandbox.work().join(".vscode/mcp.json"),
        &vscode.to_string(),
    );
    ok(&sandbox.run(&["approve", "asks"]), "approve asks");
    let mut terminal = support::pty::Terminal::start(
        &["call", "asks/echo", r#"{"text":"first"}"#],
        &sandbox.work(),
        &sandbox.home(),
        &[("SWITCHBOARD_NO_SESSION", "1")],
    );
    terminal.expect("API key");
    terminal.send("k-one\r");
    let (code, shown) = terminal.finish();
    assert_eq!(code, 0, "{shown}");
    // Without a terminal now: not asked, the answer given.
    let output = sandbox.run(&["call", "asks/echo", r#"{"text":"second"}"#]);
    ok(&output, "the second call");
    assert_eq!(
        std::fs::read_to_string(&got)
            .unwrap()
            .lines()
            .collect::<Vec<_>>(),
        ["k-one", "k-one"]
    );
    let file = sandbox.home().join(".local/share/switchboard/inputs.json");
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }
}
