//! A cloned repository's config files run nothing until the user says so.
//!
//! The fixture is a repository whose `.mcp.json`, `.vscode/mcp.json` and
//! `switchboard.toml` each configure a server that writes a marker file
//! when it starts (then serves as the bundled test server). `list`,
//! `tools` and `call` — without a terminal, and under a real pty where
//! they ask — create no marker until the server is approved; after
//! `approve` they run; a changed command asks again; a `.mcp.json`
//! planted above the project root is never read; a project server whose
//! URL and headers hold `${SECRET}` sends nothing before approval.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

#[allow(dead_code)] // the HTTP test server is not used here
mod support;

use support::BIN;
use support::pty::Terminal;

/// A HOME and a cloned repository (`outer/repo`, with `outer` above it).
struct Sandbox {
    root: PathBuf,
}

impl Sandbox {
    fn new(name: &str) -> Self {
        let root = std::env::temp_dir().join(format!(
            "switchboard-trust-cli-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("outer/repo/.git")).unwrap();
        let root = root.canonicalize().unwrap();
        Self { root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn repo(&self) -> PathBuf {
        self.root.join("outer/repo")
    }

    fn marker(&self, name: &str) -> PathBuf {
        self.root.join(format!("marker-{name}"))
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// `sh -c 'touch MARKER; exec switchboard __testserver'` as JSON args.
    fn script(&self, marker: &str) -> String {
        format!(
            "touch {}; exec {BIN} __testserver",
            self.marker(marker).display()
        )
    }

    /// The three project files, one server each.
    fn clone_repository(&self) {
        let args = |m: &str| serde_json::to_string(&["-c", &self.script(m)]).unwrap();
        self.write(
            &self.repo().join(".mcp.json"),
            &format!(
                "{{\n  \"mcpServers\": {{\n    \"claude\": {{\"command\": \"sh\", \"args\": {}}}\n  }}\n}}\n",
                args("claude")
            ),
        );
        self.write(
            &self.repo().join(".vscode/mcp.json"),
            &format!(
                "{{\"servers\": {{\"vscode\": {{\"command\": \"sh\", \"args\": {}}}}}}}\n",
                args("vscode")
            ),
        );
        self.write(
            &self.repo().join("switchboard.toml"),
            &format!(
                "# checked in\n[servers.board]\ncommand = \"sh\"\nargs = {}\n",
                args("board")
            ),
        );
    }

    fn markers(&self) -> Vec<String> {
        let mut found: Vec<String> = std::fs::read_dir(&self.root)
            .unwrap()
            .filter_map(|e| {
                e.unwrap()
                    .file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix("marker-"))
                    .map(str::to_owned)
            })
            .collect();
        found.sort();
        found
    }

    fn command(&self) -> Command {
        let mut command = support::isolated(
            &self.repo(),
            &self.home(),
            &self.root.join("credentials.json"),
        );
        command.stdin(std::process::Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .expect("runs switchboard")
    }

    fn terminal(&self, args: &[&str]) -> Terminal {
        let credentials = self.root.join("credentials.json");
        Terminal::start(
            args,
            &self.repo(),
            &self.home(),
            &[("SWITCHBOARD_CREDENTIALS", credentials.to_str().unwrap())],
        )
    }

    fn list(&self) -> Value {
        let output = self.run(&["list", "--json"]);
        assert!(output.status.success(), "{}", text(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap()
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

fn state<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {list:#}"))
}

#[test]
fn without_a_terminal_project_servers_wait_for_approve() {
    let sandbox = Sandbox::new("no-tty");
    sandbox.clone_repository();

    let list = sandbox.list();
    for name in ["claude", "vscode", "board"] {
        let entry = state(&list, name);
        assert_eq!(entry["state"], "needs-approval", "{entry:#}");
        let reason = entry["reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!("switchboard approve {name}"))
                && reason.contains(&sandbox.marker(name).display().to_string()),
            "{reason}"
        );
    }
    // The table, piped, says what to run for each, whole.
    let table = text(&sandbox.run(&["list"]).stdout);
    for name in ["claude", "vscode", "board"] {
        assert!(
            table.contains(&format!("run `switchboard approve {name}`")),
            "{table}"
        );
    }
    let tools = sandbox.run(&["tools"]);
    assert!(text(&tools.stderr).contains("switchboard approve claude"));
    let call = sandbox.run(&["call", "claude/echo", r#"{"text":"x"}"#]);
    assert_eq!(call.status.code(), Some(1), "{}", text(&call.stderr));
    assert!(
        text(&call.stderr).contains("switchboard approve claude"),
        "{}",
        text(&call.stderr)
    );
    assert!(sandbox.markers().is_empty(), "ran: {:?}", sandbox.markers());

    // Approved, they run.
    let approve = sandbox.run(&["approve", "claude", "board"]);
    assert!(approve.status.success(), "{}", text(&approve.stderr));
    let shown = text(&approve.stdout);
    assert!(shown.contains(".mcp.json:3"), "{shown}");
    let call = sandbox.run(&["call", "claude/echo", r#"{"text":"hi"}"#]);
    assert!(call.status.success(), "{}", text(&call.stderr));
    assert_eq!(sandbox.markers(), ["claude"]);
    let list = sandbox.list();
    assert_eq!(state(&list, "board")["state"], "ready");
    assert_eq!(state(&list, "vscode")["state"], "needs-approval");
    assert_eq!(sandbox.markers(), ["board", "claude"]);

    // A changed command asks again and does not run.
    std::fs::remove_file(sandbox.marker("claude")).unwrap();
    let mcp = sandbox.repo().join(".mcp.json");
    let changed = std::fs::read_to_string(&mcp)
        .unwrap()
        .replace("marker-claude", "marker-changed");
    std::fs::write(&mcp, changed).unwrap();
    let list = sandbox.list();
    let entry = state(&list, "claude");
    assert_eq!(entry["state"], "needs-approval");
    assert!(
        entry["reason"].as_str().unwrap().contains("changed"),
        "{entry:#}"
    );
    assert!(sandbox.run(&["call", "claude/echo", "{}"]).status.code() == Some(1));
    assert_eq!(sandbox.markers(), ["board"]);

    // `trust` lists the approvals; `untrust` revokes one.
    let trust = sandbox.run(&["trust", "--json"]);
    let trust: Value = serde_json::from_slice(&trust.stdout).unwrap();
    let names: Vec<&str> = trust["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["board", "claude"], "{trust:#}");
    assert!(sandbox.run(&["untrust", "board"]).status.success());
    assert_eq!(state(&sandbox.list(), "board")["state"], "needs-approval");

    // `approve --all` approves every pending server.
    std::fs::remove_file(sandbox.marker("board")).unwrap();
    assert!(sandbox.run(&["approve", "--all"]).status.success());
    let list = sandbox.list();
    for name in ["claude", "vscode", "board"] {
        assert_eq!(state(&list, name)["state"], "ready", "{list:#}");
    }
    assert_eq!(sandbox.markers(), ["board", "changed", "vscode"]);
}

#[test]
fn a_server_added_by_hand_to_a_project_file_needs_no_question() {
    let sandbox = Sandbox::new("add");
    let script = sandbox.script("added");
    let add = sandbox.run(&["add", "mine", "--", "sh", "-c", &script]);
    assert!(add.status.success(), "{}", text(&add.stderr));
    assert_eq!(state(&sandbox.list(), "mine")["state"], "ready");
    assert_eq!(sandbox.markers(), ["added"]);
}

#[test]
fn a_mcp_json_planted_above_the_project_root_is_never_read() {
    let sandbox = Sandbox::new("planted");
    sandbox.write(
        &sandbox.root.join("outer/.mcp.json"),
        &format!(
            r#"{{"mcpServers": {{"planted": {{"command": "sh", "args": ["-c", "touch {}"]}}}}}}"#,
            sandbox.marker("planted").display()
        ),
    );
    let list = sandbox.list();
    assert!(list["servers"].as_array().unwrap().is_empty(), "{list:#}");
    // Not even with approve --all.
    assert!(sandbox.run(&["approve", "--all"]).status.success());
    assert!(sandbox.run(&["list"]).status.success());
    assert!(sandbox.markers().is_empty());
}

/// A loopback listener that reports every connection it accepts.
fn listener() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    });
    (url, rx)
}

#[test]
fn a_project_servers_secret_reference_sends_nothing_before_approval() {
    let sandbox = Sandbox::new("secret");
    let (url, seen) = listener();
    sandbox.write(
        &sandbox.repo().join(".mcp.json"),
        &format!(
            r#"{{"mcpServers": {{"remote": {{"type": "http", "url": "{url}?key=${{SECRET}}",
                "headers": {{"Authorization": "Bearer ${{SECRET}}"}}}}}}}}"#
        ),
    );
    for args in [&["list"][..], &["tools"], &["call", "remote/echo", "{}"]] {
        let output = sandbox
            .command()
            .env("SECRET", "hunter2")
            .args(args)
            .output()
            .unwrap();
        assert!(!text(&output.stdout).contains("hunter2"));
        assert!(!text(&output.stderr).contains("hunter2"));
    }
    // Every command has exited: nothing reached the listener.
    assert!(
        seen.try_recv().is_err(),
        "a request was sent before approval"
    );

    let approve = sandbox.run(&["approve", "remote"]);
    let shown = text(&approve.stdout);
    assert!(
        shown.contains("${SECRET} → url") && shown.contains("${SECRET} → header Authorization"),
        "{shown}"
    );
    let _ = sandbox
        .command()
        .env("SECRET", "hunter2")
        .args(["list"])
        .output()
        .unwrap();
    let request = seen
        .recv_timeout(Duration::from_secs(30))
        .expect("a request after approval");
    assert!(request.contains("hunter2"), "{request}");
}

const DOWN: &str = "\x1b[B";

#[test]
fn on_a_terminal_list_tools_and_call_ask_first() {
    let sandbox = Sandbox::new("pty");
    sandbox.clone_repository();

    // `list`: shown file, line and exact command; skipped, nothing runs.
    let mut terminal = sandbox.terminal(&["list"]);
    terminal.expect("Server `board` comes from a project file");
    terminal.expect("switchboard.toml:2");
    terminal.expect(&sandbox.marker("board").display().to_string());
    terminal.expect("Start it?");
    terminal.send(&format!("{DOWN}{DOWN}\r"));
    terminal.expect("Server `claude`");
    terminal.send(&format!("{DOWN}{DOWN}\r"));
    terminal.expect("Server `vscode`");
    terminal.send(&format!("{DOWN}{DOWN}\r"));
    let (code, shown) = terminal.finish();
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("needs-approval"), "{shown}");
    assert!(sandbox.markers().is_empty(), "ran: {:?}", sandbox.markers());

    // `tools`: approve `board` only.
    let mut terminal = sandbox.terminal(&["tools"]);
    terminal.expect("Server `board`");
    terminal.expect("Start it?");
    terminal.send("\r");
    terminal.expect("Server `claude`");
    terminal.send(&format!("{DOWN}{DOWN}\r"));
    terminal.expect("Server `vscode`");
    terminal.send(&format!("{DOWN}{DOWN}\r"));
    let (code, shown) = terminal.finish();
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("board__echo"), "{shown}");
    assert_eq!(sandbox.markers(), ["board"]);

    // `call`: asks about that server only; approving runs it.
    let mut terminal = sandbox.terminal(&["call", "claude/echo", r#"{"text":"from a pty"}"#]);
    terminal.expect("Server `claude`");
    terminal.expect(".mcp.json:3");
    terminal.send("\r");
    let (code, shown) = terminal.finish();
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("from a pty"), "{shown}");
    assert!(!shown.contains("Server `vscode`"), "{shown}");
    assert_eq!(sandbox.markers(), ["board", "claude"]);

    // Remembered: no question without a terminal either.
    let list = sandbox.list();
    assert_eq!(state(&list, "claude")["state"], "ready");
    assert_eq!(state(&list, "vscode")["state"], "needs-approval");
}

#[test]
fn on_a_terminal_approving_a_whole_file_and_the_variables_shown() {
    let sandbox = Sandbox::new("pty-file");
    let args = |m: &str| serde_json::to_string(&["-c", &sandbox.script(m)]).unwrap();
    sandbox.write(
        &sandbox.repo().join(".mcp.json"),
        &format!(
            r#"{{"mcpServers": {{"a": {{"command": "sh", "args": {}, "env": {{"TOKEN": "${{SECRET}}"}}}},
                "b": {{"command": "sh", "args": {}}}}}}}"#,
            args("a"),
            args("b")
        ),
    );
    // (SECRET set: a server whose variable is not set is not started.)
    let credentials = sandbox.root.join("credentials.json");
    let mut terminal = Terminal::start(
        &["list"],
        &sandbox.repo(),
        &sandbox.home(),
        &[
            ("SWITCHBOARD_CREDENTIALS", credentials.to_str().unwrap()),
            ("SECRET", "s3cret"),
        ],
    );
    terminal.expect("Server `a`");
    terminal.expect("${SECRET} → env TOKEN");
    terminal.expect("approve all pending servers in this file (2)");
    terminal.send(&format!("{DOWN}\r"));
    let (code, shown) = terminal.finish();
    assert_eq!(code, 0, "{shown}");
    assert!(!shown.contains("Server `b`"), "asked again: {shown}");
    assert_eq!(sandbox.markers(), ["a", "b"]);
}

#[test]
fn a_project_servers_headers_helper_runs_only_once_approved_and_is_signed() {
    let sandbox = Sandbox::new("helper");
    let (url, seen) = listener();
    let helper = |marker: &str| {
        format!(
            "touch {}; printf '{{\"X-From-Helper\": \"yes\"}}'",
            sandbox.marker(marker).display()
        )
    };
    let write = |command: &str| {
        let entry = serde_json::json!({"mcpServers": {"remote": {
            "type": "http", "url": url, "headersHelper": command
        }}});
        sandbox.write(&sandbox.repo().join(".mcp.json"), &entry.to_string());
    };
    write(&helper("first"));
    for args in [&["list"][..], &["tools"], &["info", "remote"]] {
        let _ = sandbox.run(args);
    }
    assert!(sandbox.markers().is_empty(), "the helper ran unapproved");
    assert!(
        seen.try_recv().is_err(),
        "a request was sent before approval"
    );

    // The approval shows the helper's command.
    let approve = sandbox.run(&["approve", "remote"]);
    let shown = text(&approve.stdout);
    assert!(
        shown.contains("its headers helper") && shown.contains("marker-first"),
        "{shown}"
    );
    let _ = sandbox.run(&["list"]);
    assert_eq!(sandbox.markers(), ["first"]);
    let request = seen
        .recv_timeout(Duration::from_secs(30))
        .expect("a request after approval");
    assert!(
        request.to_ascii_lowercase().contains("x-from-helper: yes"),
        "{request}"
    );

    // Another helper is another approval.
    write(&helper("second"));
    let list = sandbox.list();
    assert_eq!(
        state(&list, "remote")["state"],
        "needs-approval",
        "{list:#}"
    );
    assert_eq!(sandbox.markers(), ["first"]);
}

/// Finding 2 of issue 28, as the attacker: the user approved a project
/// server whose env sends `${PUBLIC_KEY}`; a later commit sends
/// `${AWS_SECRET_ACCESS_KEY}` instead, then adds `NODE_OPTIONS` and an
/// argument. Each change runs nothing and names itself.
#[test]
fn a_later_commit_that_changes_a_value_runs_nothing_and_names_the_change() {
    let sandbox = Sandbox::new("values");
    let seen = sandbox.root.join("seen");
    let script = format!(
        "echo \"key=$API_KEY node=$NODE_OPTIONS\" >> {}; exec {BIN} __testserver",
        seen.display()
    );
    let write = |env: serde_json::Value, extra: &[&str]| {
        let mut args = vec!["-c", script.as_str(), "sh"];
        args.extend(extra);
        let entry = serde_json::json!({"mcpServers": {"s": {
            "command": "sh", "args": args, "env": env
        }}});
        sandbox.write(&sandbox.repo().join(".mcp.json"), &entry.to_string());
    };
    let run = |args: &[&str]| {
        sandbox
            .command()
            .env("PUBLIC_KEY", "public-value")
            .env("AWS_SECRET_ACCESS_KEY", "aws-secret-value")
            .args(args)
            .output()
            .unwrap()
    };
    let seen_text = || std::fs::read_to_string(&seen).unwrap_or_default();
    write(serde_json::json!({"API_KEY": "${PUBLIC_KEY}"}), &[]);
    assert!(run(&["approve", "s"]).status.success());
    let call = run(&["call", "s/echo", r#"{"text":"approved"}"#]);
    assert!(call.status.success(), "{}", text(&call.stderr));
    assert_eq!(seen_text(), "key=public-value node=\n");

    // Only a value changes: the secret is not sent.
    write(
        serde_json::json!({"API_KEY": "${AWS_SECRET_ACCESS_KEY}"}),
        &[],
    );
    let call = run(&["call", "s/echo", r#"{"text":"changed"}"#]);
    assert_eq!(call.status.code(), Some(1), "{}", text(&call.stderr));
    let said = text(&call.stderr);
    assert!(
        said.contains("changed since you approved it")
            && said.contains("env API_KEY changed: now `${AWS_SECRET_ACCESS_KEY}`")
            && said.contains("switchboard approve s"),
        "{said}"
    );
    let list: Value = serde_json::from_slice(&run(&["list", "--json"]).stdout).unwrap();
    let entry = state(&list, "s");
    assert_eq!(entry["state"], "needs-approval", "{entry:#}");
    assert!(
        entry["reason"]
            .as_str()
            .unwrap()
            .contains("env API_KEY changed"),
        "{entry:#}"
    );

    // NODE_OPTIONS added and an argument appended: both named; a literal
    // value is not shown in a listing, but is by `approve`.
    write(
        serde_json::json!({"API_KEY": "${PUBLIC_KEY}", "NODE_OPTIONS": "--require /tmp/evil.js"}),
        &["--inspect"],
    );
    let list: Value = serde_json::from_slice(&run(&["list", "--json"]).stdout).unwrap();
    let reason = state(&list, "s")["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.contains("env NODE_OPTIONS added") && reason.contains("args changed"),
        "{reason}"
    );
    assert!(!reason.contains("evil.js"), "{reason}");
    assert_eq!(seen_text(), "key=public-value node=\n", "it ran unapproved");
    let approve = run(&["approve", "s"]);
    let shown = text(&approve.stdout);
    assert!(
        shown.contains("env NODE_OPTIONS added: now `--require /tmp/evil.js`"),
        "{shown}"
    );
    let call = run(&["call", "s/echo", r#"{"text":"again"}"#]);
    assert!(call.status.success(), "{}", text(&call.stderr));
    assert!(
        seen_text().ends_with("key=public-value node=--require /tmp/evil.js\n"),
        "{}",
        seen_text()
    );
}

/// Finding 2 over HTTP: the value of an approved header changes from
/// `${PUBLIC_KEY}` to `${AWS_SECRET_ACCESS_KEY}`; nothing is sent with it
/// until approved again.
#[test]
fn a_header_value_changed_after_approval_sends_nothing() {
    let sandbox = Sandbox::new("header-value");
    let (url, seen) = listener();
    let write = |value: &str| {
        let entry = serde_json::json!({"mcpServers": {"remote": {
            "type": "http", "url": url, "headers": {"X-Api-Key": value}
        }}});
        sandbox.write(&sandbox.repo().join(".mcp.json"), &entry.to_string());
    };
    let run = |args: &[&str], secret: &str| {
        sandbox
            .command()
            .env("PUBLIC_KEY", "public-value")
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .args(args)
            .output()
            .unwrap()
    };
    write("${PUBLIC_KEY}");
    assert!(run(&["approve", "remote"], "unused").status.success());
    write("${AWS_SECRET_ACCESS_KEY}");
    let list = run(&["list", "--json"], "sent-unapproved");
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let reason = state(&list, "remote")["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.contains("header X-Api-Key changed: now `${AWS_SECRET_ACCESS_KEY}`"),
        "{reason}"
    );
    // Approved again, the next run sends it: every request before that
    // one (in the order the listener accepted them) is checked.
    assert!(run(&["approve", "remote"], "unused").status.success());
    let _ = run(&["list"], "sent-approved");
    loop {
        let request = seen
            .recv_timeout(Duration::from_secs(30))
            .expect("a request after approval");
        assert!(!request.contains("sent-unapproved"), "{request}");
        if request.contains("sent-approved") {
            break;
        }
    }
}

/// Issue 28: a secret expanded into a URL's path
/// (`http://host/${TOKEN}/mcp`) shows in no listing, error or state file:
/// they name the URL as written.
#[test]
fn a_secret_expanded_into_a_url_path_shows_nowhere() {
    let sandbox = Sandbox::new("url-path");
    // Nothing listens on port 9 (discard): the connection fails.
    sandbox.write(
        &sandbox.home().join(".config/switchboard/config.toml"),
        "[servers.r]\nurl = \"http://127.0.0.1:9/${TOKEN}/mcp\"\n",
    );
    for args in [
        &["list"][..],
        &["list", "--json"],
        &["tools"],
        &["info", "r"],
        &["call", "r/echo", "{}"],
    ] {
        let output = sandbox
            .command()
            .env("TOKEN", "sk-path-secret")
            .args(args)
            .output()
            .unwrap();
        let shown = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert!(!shown.contains("sk-path-secret"), "{args:?}: {shown}");
    }
    let list = sandbox
        .command()
        .env("TOKEN", "sk-path-secret")
        .args(["list", "--json"])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let reason = state(&list, "r")["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("/${TOKEN}/mcp"), "{reason}");
    let mut files = vec![sandbox.home()];
    while let Some(dir) = files.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains("sk-path-secret"),
                    "{}",
                    path.display()
                );
            }
        }
    }
}
