//! `[policy.tools]` on every path the CLI has: `call` with a hub of its
//! own (deny refused with its exit code and message; `ask` refused without
//! a terminal, answered on one — once or always, the latter listed and
//! revoked by `switchboard policy`), the gateway (a deny added to the file
//! while `serve` runs applies to the next call) and the background
//! session (`up`).

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard::Client;
use switchboard::transport::stdio::StdioConfig;

#[allow(dead_code)] // the HTTP test server is not used here
mod support;

use support::BIN;
use support::home::Home;
use support::pty::Terminal;

fn config(policy: &str) -> String {
    format!("[servers.s]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\n\n{policy}")
}

fn said(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn call_refuses_a_denied_tool_with_the_rule_and_where_it_is() {
    let home = Home::new(
        "policy-deny",
        &config("[policy.tools]\ndeny = [\"s/echo\"]\n"),
    );
    let output = home.run(&["call", "s/echo", r#"{"text":"x"}"#]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("server `s`")
            && stderr.contains("denied by the policy")
            && stderr.contains("s/echo")
            && stderr.contains("config.toml"),
        "{}",
        said(&output)
    );
    // The hub-wide name reaches the same pair.
    let output = home.run(&["call", "s__echo", r#"{"text":"x"}"#]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    // Nor is it listed.
    let output = home.run(&["tools", "--json"]);
    assert!(output.status.success(), "{}", said(&output));
    let listed = String::from_utf8_lossy(&output.stdout);
    assert!(!listed.contains("s__echo"), "{listed}");
    assert!(listed.contains("s__add_tool"), "{listed}");
}

#[test]
fn call_without_a_terminal_refuses_an_ask_and_says_how_to_allow_it() {
    let home = Home::new(
        "policy-ask",
        &config("[policy.tools]\nask = [\"s/echo\"]\n"),
    );
    let output = home.run(&["call", "s/echo", r#"{"text":"x"}"#]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("asks before `s/echo`")
            && stderr.contains("not a terminal")
            && stderr.contains("[policy.tools]"),
        "{}",
        said(&output)
    );
    assert!(output.stdout.is_empty(), "{}", said(&output));
}

#[test]
fn call_on_a_terminal_asks_and_always_is_remembered_until_revoked() {
    let home = Home::new(
        "policy-pty",
        &config("[policy.tools]\nask = [\"s/echo\"]\n"),
    );
    let run = |answer: &str| {
        let mut terminal = Terminal::start(
            &["call", "s/echo", r#"{"text":"hello"}"#],
            &home.work(),
            &home.home(),
            &[("SWITCHBOARD_NO_SESSION", "1")],
        );
        terminal.expect("[N] no: ");
        terminal.send(answer);
        terminal.finish()
    };
    // No: not called.
    let (code, shown) = run("n\r");
    assert_eq!(code, 1, "{shown}");
    assert!(shown.contains("did not allow `s/echo`"), "{shown}");
    // Once: called, and nothing remembered.
    let (code, shown) = run("y\r");
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("hello"), "{shown}");
    let listed = home.run(&["policy", "list", "--json"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout).trim(),
        "[]",
        "{}",
        said(&listed)
    );
    // Always: remembered, so a call without a terminal runs.
    let (code, shown) = run("a\r");
    assert_eq!(code, 0, "{shown}");
    let listed = home.run(&["policy", "list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("s/echo"),
        "{}",
        said(&listed)
    );
    let file = home
        .home()
        .join(".local/share/switchboard/tool-allows.json");
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let output = home.run(&["call", "s/echo", r#"{"text":"again"}"#]);
    assert!(output.status.success(), "{}", said(&output));
    // Revoked: asked again (refused without a terminal).
    let revoked = home.run(&["policy", "revoke", "s/echo"]);
    assert!(revoked.status.success(), "{}", said(&revoked));
    let output = home.run(&["call", "s/echo", r#"{"text":"again"}"#]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let unknown = home.run(&["policy", "revoke", "s/echo"]);
    assert_eq!(unknown.status.code(), Some(1), "{}", said(&unknown));
}

/// Waits (polling, with a deadline) until `check` holds.
fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// (One server behind the gateway: its tools keep their own names.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_added_while_serving_applies_to_the_next_call() {
    let home = Home::new("policy-live", &config(""));
    let host = Client::builder()
        .connect(
            StdioConfig::new(BIN)
                .args(["serve"])
                .env("HOME", home.home())
                .env(
                    "SWITCHBOARD_CREDENTIALS",
                    home.root.join("credentials.json"),
                )
                .cwd(home.work()),
        )
        .await
        .unwrap();
    let echo = || json!({"text": "x"}).as_object().cloned();
    let result = host.call_tool("echo", echo()).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let mut file = std::fs::read_to_string(home.config()).unwrap();
    file.push_str("[policy.tools]\ndeny = [\"s/echo\"]\n");
    std::fs::write(home.config(), file).unwrap();
    let stderr = || host.stderr().unwrap_or_default();
    wait_until("the gateway applied the new policy", || {
        stderr().contains("tool policy applied")
    });
    let result = host.call_tool("echo", echo()).await.unwrap();
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = result.content[0].as_text().unwrap_or_default().to_owned();
    assert!(
        text.contains("denied by the policy") && text.contains("s/echo"),
        "{text}"
    );
    let names: Vec<String> = host
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(!names.iter().any(|n| n == "echo"), "{names:?}");
    host.close().await;
}

/// A policy file broken while the gateway runs does not lift its rules:
/// the reload is refused, saying where, and the deny in force still holds
/// (the server itself comes from another client's file, so it stays).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_file_broken_while_serving_keeps_the_rules_in_force() {
    let home = Home::new("policy-broken", "[policy.tools]\ndeny = [\"s/echo\"]\n");
    std::fs::write(
        home.home().join(".claude.json"),
        json!({"mcpServers": {"s": {"command": BIN, "args": ["__testserver"]}}}).to_string(),
    )
    .unwrap();
    let host = Client::builder()
        .connect(
            StdioConfig::new(BIN)
                .args(["serve"])
                .env("HOME", home.home())
                .env(
                    "SWITCHBOARD_CREDENTIALS",
                    home.root.join("credentials.json"),
                )
                .cwd(home.work()),
        )
        .await
        .unwrap();
    let echo = || json!({"text": "x"}).as_object().cloned();
    let denied = |result: &switchboard::types::CallToolResult| {
        result.is_error == Some(true)
            && result.content[0]
                .as_text()
                .is_some_and(|t| t.contains("denied by the policy"))
    };
    let result = host.call_tool("echo", echo()).await.unwrap();
    assert!(denied(&result), "{result:?}");
    std::fs::write(home.config(), "[policy.tools\ndeny = [\"s/echo\"\n").unwrap();
    let stderr = || host.stderr().unwrap_or_default();
    wait_until("the gateway looked at the changed file", || {
        stderr().contains("config changed")
    });
    assert!(
        stderr().contains("could not be reloaded") && stderr().contains("config.toml"),
        "{}",
        stderr()
    );
    let result = host.call_tool("echo", echo()).await.unwrap();
    assert!(
        denied(&result),
        "the broken file lifted the deny: {result:?}"
    );
    host.close().await;
}

#[test]
fn the_session_honours_deny_and_ask_and_a_deny_added_while_it_runs() {
    let home = Home::new(
        "policy-session",
        &config("[policy.tools]\nask = [\"s/add_*\"]\n"),
    );
    let dir: PathBuf = home.root.join("session");
    let run = |args: &[&str]| {
        home.command()
            .env("SWITCHBOARD_SESSION_DIR", &dir)
            .env_remove("SWITCHBOARD_NO_SESSION")
            .args(args)
            .output()
            .unwrap()
    };
    let up = run(&["up"]);
    assert!(up.status.success(), "{}", said(&up));
    let call = run(&["call", "s/echo", r#"{"text":"through"}"#]);
    assert!(call.status.success(), "{}", said(&call));
    // Asked, and nobody can answer: not called; said as without a session.
    let call = run(&["call", "s/add_tool", "{}"]);
    assert_eq!(call.status.code(), Some(1), "{}", said(&call));
    assert!(said(&call).contains("not a terminal"), "{}", said(&call));
    // A deny written while the session runs holds for the next call.
    let mut file = std::fs::read_to_string(home.config()).unwrap();
    file.push_str("deny = [\"s/echo\"]\n");
    std::fs::write(home.config(), file).unwrap();
    // The project's session directory, the one below `dir`.
    let log = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .next()
        .expect("the session's directory")
        .path()
        .join("session.log");
    wait_until("the session applied the new policy", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("tool policy applied"))
    });
    let call = run(&["call", "s/echo", r#"{"text":"through"}"#]);
    let shown = said(&call);
    assert_eq!(call.status.code(), Some(1), "{shown}");
    assert!(shown.contains("denied by the policy"), "{shown}");
    // The session's gateway, which `tools` asks, lists it no more.
    let tools = run(&["tools", "--json"]);
    assert!(tools.status.success(), "{}", said(&tools));
    let listed: serde_json::Value = serde_json::from_slice(&tools.stdout).unwrap();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"s__add_tool"), "{names:?}");
    assert!(!names.contains(&"s__echo"), "{names:?}");
    let down = run(&["down"]);
    assert!(down.status.success(), "{}", said(&down));
}

/// A host's user who ticks "always": counts the questions.
#[derive(Clone, Default)]
struct Always(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl switchboard::ElicitationHandler for Always {
    fn elicit_form(
        &self,
        _: switchboard::HandlerContext,
        request: switchboard::FormRequest,
    ) -> switchboard::BoxFuture<
        'static,
        Result<switchboard::types::ElicitResult, switchboard::HandlerError>,
    > {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut content = request.defaults.clone();
        content.insert("always".into(), json!(true));
        Box::pin(async move { Ok(switchboard::types::ElicitResult::accept(Some(content))) })
    }
}

/// Through the gateway, the host's user may allow a tool always: the
/// next call (from any host) is not asked about, and `policy list` shows
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_allowing_always_is_not_asked_again() {
    let home = Home::new(
        "policy-always",
        &config("[policy.tools]\nask = [\"s/echo\"]\n"),
    );
    let user = Always::default();
    let host = Client::builder()
        .elicitation(user.clone())
        .connect(
            StdioConfig::new(BIN)
                .args(["serve"])
                .env("HOME", home.home())
                .env(
                    "SWITCHBOARD_CREDENTIALS",
                    home.root.join("credentials.json"),
                )
                .cwd(home.work()),
        )
        .await
        .unwrap();
    let echo = || json!({"text": "x"}).as_object().cloned();
    for _ in 0..2 {
        let result = host.call_tool("echo", echo()).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }
    assert_eq!(user.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    host.close().await;
    let listed = home.run(&["policy", "list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("s/echo"),
        "{}",
        said(&listed)
    );
}

/// `shell`'s calls follow the policy too: a denied tool is not there to
/// call, an `ask` one is asked about on the terminal.
#[test]
fn the_shell_asks_and_refuses_as_call_does() {
    let home = Home::new(
        "policy-shell",
        &config("[policy.tools]\nask = [\"s/echo\"]\ndeny = [\"s/add\"]\n"),
    );
    let mut terminal = Terminal::start(
        &["shell", "s"],
        &home.work(),
        &home.home(),
        &[("SWITCHBOARD_NO_SESSION", "1")],
    );
    terminal.expect("switchboard> ");
    terminal.send("call s__echo text=shellhello\r");
    terminal.expect("[N] no: ");
    terminal.send("y\r");
    terminal.expect("(ok, ");
    terminal.expect("switchboard> ");
    // Denied: not listed, and the shell says why, as `call` does.
    terminal.send("call s__add a=1 b=2\r");
    terminal.expect_times("denied by the policy", 1);
    terminal.expect_times("switchboard> ", 3);
    terminal.send("call s/add a=1 b=2\r");
    terminal.expect_times("denied by the policy", 2);
    terminal.expect_times("switchboard> ", 4);
    terminal.send("exit\r");
    let (code, seen) = terminal.finish();
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("shellhello"), "{seen}");
}
