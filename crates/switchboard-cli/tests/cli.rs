//! The `switchboard` binary end to end, against its own bundled test server.

use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("runs switchboard")
}

/// `switchboard <command…> -- switchboard __testserver <server args…>`
fn against(command: &[&str], server: &[&str]) -> Output {
    let mut args: Vec<&str> = command.to_vec();
    args.extend(["--", BIN, "__testserver"]);
    args.extend(server);
    run(&args)
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn info_json_reports_era_and_version() {
    let cases = [
        (&["--era", "dual"][..], "modern", "2026-07-28", false),
        (&["--era", "modern"][..], "modern", "2026-07-28", false),
        (&["--era", "legacy"][..], "legacy", "2025-11-25", false),
        (
            &["--era", "legacy", "--fault", "exit-before-init"][..],
            "legacy",
            "2025-11-25",
            true,
        ),
    ];
    for (server, era, version, respawned) in cases {
        let output = against(&["info", "--json"], server);
        assert!(output.status.success(), "{server:?}: {}", stderr(&output));
        let info = stdout_json(&output);
        assert_eq!(info["era"], era, "{server:?}");
        assert_eq!(info["protocolVersion"], version, "{server:?}");
        assert_eq!(info["respawned"], respawned, "{server:?}");
        assert_eq!(info["serverInfo"]["name"], "switchboard-testserver");
    }
}

#[test]
fn call_coerces_arguments_and_prints_json() {
    let output = against(
        &["call", "add", "--arg", "a=2", "--arg", "b=3", "--json"],
        &[],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let result = stdout_json(&output);
    assert_eq!(result["structuredContent"]["sum"], 5);

    let output = against(&["call", "echo", "--arg", "text=012"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "012");

    let output = against(
        &["call", "echo", "--args-json", r#"{"text":"from json"}"#],
        &[],
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "from json");
}

#[test]
fn a_tool_error_exits_5() {
    let output = against(&["call", "error"], &[]);
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("something went wrong"));
}

#[test]
fn a_server_that_fails_to_start_exits_4_with_its_stderr() {
    let output = run(&[
        "info",
        "--",
        "sh",
        "-c",
        "echo 'fatal: missing API key' >&2; exit 7",
    ]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("exit code 7"), "{text}");
    assert!(text.contains("fatal: missing API key"), "{text}");
    assert_eq!(
        text.lines().next().map(|l| l.starts_with("error: ")),
        Some(true),
        "{text}"
    );

    let output = run(&["tools", "--json", "--", "/nonexistent/server-binary"]);
    assert_eq!(output.status.code(), Some(4));
    let error: Value = serde_json::from_str(stderr(&output).trim()).expect("one JSON error object");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/server-binary"),
        "{error}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn usage_errors_exit_1() {
    assert_eq!(run(&["tools"]).status.code(), Some(1), "no server command");
    let output = against(&["call", "echo", "--arg", "novalue"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("KEY=VALUE"));
}

#[test]
fn listings_print_tables() {
    let output = against(&["tools"], &["--era", "legacy"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("echo") && text.contains("text: string"),
        "{text}"
    );
    let output = against(&["resources"], &[]);
    assert!(String::from_utf8_lossy(&output.stdout).contains("test://items/{id}"));
    let output = against(&["prompts", "--json"], &[]);
    assert_eq!(stdout_json(&output)["prompts"][0]["name"], "greeting");
    let output = against(&["read", "test://static/hello"], &[]);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "Hello, world!"
    );
    let output = against(&["prompt", "greeting", "--arg", "name=Ada"], &[]);
    assert!(String::from_utf8_lossy(&output.stdout).contains("user: Hello, Ada!"));
}

#[test]
fn server_logs_are_shown_on_request() {
    let output = against(
        &["info", "--server-logs"],
        &["--stderr-line", "hello from the server"],
    );
    assert!(output.status.success());
    assert!(
        stderr(&output).contains("hello from the server"),
        "{}",
        stderr(&output)
    );
    let output = against(&["info"], &["--stderr-line", "hello from the server"]);
    assert!(
        !stderr(&output).contains("hello from the server"),
        "hidden by default"
    );
}

#[test]
fn the_demo_runs_every_scenario() {
    let output = run(&["demo", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let demo = stdout_json(&output);
    let eras: Vec<&str> = demo["demo"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["era"].as_str().unwrap())
        .collect();
    assert_eq!(eras, ["modern", "legacy", "legacy"]);
    assert_eq!(demo["demo"][2]["respawned"], true);
}

/// The bundled test server on loopback HTTP; killed when dropped.
struct HttpServer(std::process::Child, String);

impl HttpServer {
    fn start(args: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = Command::new(BIN)
            .args(["__testserver", "--http", "127.0.0.1:0"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap()
            .to_owned();
        Self(child, base)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_url_is_enough() {
    for (era, expected) in [("dual", "modern"), ("legacy", "legacy")] {
        let server = HttpServer::start(&["--era", era]);
        let url = format!("{}/mcp", server.1);
        let output = run(&["info", "--json", "--url", &url]);
        assert!(output.status.success(), "{}", stderr(&output));
        let info = stdout_json(&output);
        assert_eq!(info["era"], expected);
        assert_eq!(info["transport"], "streamable-http");
        let output = run(&["call", "echo", "--arg", "text=remote", "--url", &url]);
        assert_eq!(
            String::from_utf8_lossy(&output.stdout).trim(),
            "remote",
            "{}",
            stderr(&output)
        );
    }
    let server = HttpServer::start(&["--era", "legacy", "--transports", "sse,ws"]);
    let info = stdout_json(&run(&[
        "info",
        "--json",
        "--url",
        &format!("{}/sse", server.1),
    ]));
    assert_eq!(info["transport"], "sse");
    let ws = format!("{}/ws", server.1.replace("http://", "ws://"));
    let info = stdout_json(&run(&["info", "--json", "--url", &ws]));
    assert_eq!(info["transport"], "websocket");
}

#[test]
fn authorization_required_exits_3_and_headers_fix_it() {
    let server = HttpServer::start(&["--require-header", "X-Api-Key: sesame"]);
    let url = format!("{}/mcp", server.1);
    let output = run(&["tools", "--url", &url]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("authorization"),
        "{}",
        stderr(&output)
    );
    let output = run(&["tools", "--url", &url, "--header", "X-Api-Key: sesame"]);
    assert!(output.status.success(), "{}", stderr(&output));
    // A server nobody listens on is unreachable: exit 4.
    drop(server);
    assert_eq!(run(&["tools", "--url", &url]).status.code(), Some(4));
}
