//! The `switchboard` binary end to end, against its own bundled test server.

use std::process::{Command, Output};

use serde_json::Value;

mod support;

use support::{BIN, HttpServer};

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
    // (`tools` and `call` without a server command use the configured
    // servers: tests/hub.rs.)
    let output = run(&["info"]);
    assert_eq!(output.status.code(), Some(1), "no server command");
    assert!(stderr(&output).contains("no server command"));
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
    assert_eq!(
        demo["demo"][0]["skills"],
        serde_json::json!(["pdf-processing", "code-review"])
    );
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

/// `against`, with extra environment variables.
fn against_env(command: &[&str], server: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args: Vec<&str> = command.to_vec();
    args.extend(["--", BIN, "__testserver"]);
    args.extend(server);
    Command::new(BIN)
        .args(&args)
        .envs(env.iter().copied())
        .output()
        .expect("runs switchboard")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

const ERAS: [&str; 2] = ["modern", "legacy"];

#[test]
fn forms_are_declined_without_input_and_say_why() {
    for era in ERAS {
        let output = against(&["call", "ask", "--no-input", "--era", era], &[]);
        assert!(output.status.success(), "{era}: {}", stderr(&output));
        assert!(
            stdout(&output).contains(r#"{"action":"decline"}"#),
            "{era}: {}",
            stdout(&output)
        );
        assert!(
            stderr(&output).contains("--no-input"),
            "{}",
            stderr(&output)
        );

        // Tests run without a terminal on stdin: nobody can answer either.
        let output = against(&["call", "ask", "--era", era], &[]);
        assert!(stdout(&output).contains(r#"{"action":"decline"}"#), "{era}");
        let text = stderr(&output);
        assert!(
            text.contains("stdin is not a terminal")
                && text.contains("Please tell us about yourself"),
            "{era}: {text}"
        );
    }
}

#[test]
fn url_elicitation_without_a_terminal_is_declined_and_shows_the_url() {
    for era in ERAS {
        let output = against(&["call", "ask_url", "--era", era], &[]);
        assert!(
            stdout(&output).contains(r#""action":"decline""#),
            "{era}: {}",
            stdout(&output)
        );
        let text = stderr(&output);
        assert!(
            text.contains("https://") && text.contains("(domain "),
            "{era}: {text}"
        );
    }
}

#[test]
fn sampling_without_an_endpoint_is_declined_with_the_reason() {
    let reason = "no model is configured; pass --sampling-url";
    // 2026-07-28: the call fails with the client's reason.
    let output = against(
        &["call", "sample", "--arg", "prompt=hi", "--era", "modern"],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains(reason), "{}", stderr(&output));
    // Session era: the server gets the error and reports it in the result.
    let output = against(
        &["call", "sample", "--arg", "prompt=hi", "--era", "legacy"],
        &[],
    );
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert!(stdout(&output).contains(reason), "{}", stdout(&output));
    assert!(stderr(&output).contains(reason), "{}", stderr(&output));
}

/// A one-route OpenAI-compatible endpoint on loopback: answers every POST
/// with `reply` and hands each request (head, body) to the test.
struct ChatStub {
    url: String,
    requests: std::sync::mpsc::Receiver<(String, Value)>,
}

impl ChatStub {
    fn start(reply: &'static str) -> Self {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let (tx, requests) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(8) {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                let length = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let answer = serde_json::json!({
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": "stub-model",
                    "choices": [{
                        "index": 0,
                        "message": {"role": "assistant", "content": reply},
                        "finish_reason": "stop"
                    }]
                })
                .to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                if tx.send((head, body)).is_err() {
                    return;
                }
            }
        });
        Self { url, requests }
    }
}

#[test]
fn sampling_goes_to_an_openai_compatible_endpoint() {
    let stub = ChatStub::start("hello from the stub");
    for era in ERAS {
        let output = against_env(
            &[
                "call",
                "sample",
                "--arg",
                "prompt=Say hi",
                "--era",
                era,
                "--sampling-url",
                &stub.url,
                "--sampling-model",
                "test-model",
                "--sampling-key-env",
                "SB_TEST_SAMPLING_KEY",
                "--yes",
            ],
            &[],
            &[("SB_TEST_SAMPLING_KEY", "sekrit")],
        );
        assert!(output.status.success(), "{era}: {}", stderr(&output));
        assert!(
            stdout(&output).contains("sampled: hello from the stub (model stub-model)"),
            "{era}: {}",
            stdout(&output)
        );
        let (head, body) = stub
            .requests
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        assert!(head.starts_with("POST /v1/chat/completions "), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("authorization: bearer sekrit"),
            "{head}"
        );
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(
            body["messages"],
            serde_json::json!([
                {"role": "system", "content": "You are a test model."},
                {"role": "user", "content": "Say hi"}
            ])
        );
        assert!(
            !stderr(&output).contains("sekrit"),
            "the key is never printed"
        );
    }
    // Without --yes (and no terminal to ask on) nothing is sent.
    let output = against(
        &[
            "call",
            "sample",
            "--arg",
            "prompt=hi",
            "--era",
            "legacy",
            "--sampling-url",
            &stub.url,
            "--sampling-model",
            "test-model",
        ],
        &[],
    );
    assert!(
        stdout(&output).contains("pass --yes"),
        "{}",
        stdout(&output)
    );
    assert!(
        stub.requests.try_recv().is_err(),
        "nothing reached the endpoint"
    );
}

#[test]
fn progress_and_log_messages_are_lines_without_a_terminal() {
    for era in ERAS {
        let output = against(
            &[
                "call",
                "progress",
                "--arg",
                "steps=3",
                "--log-level",
                "info",
                "--era",
                era,
            ],
            &[],
        );
        assert!(output.status.success(), "{era}: {}", stderr(&output));
        let text = stderr(&output);
        // The last line is the call's timing.
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("(ok")).collect();
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
        assert_eq!(stdout(&output).lines().next(), Some("completed 3 steps"));

        // --json: one JSON object per line on stderr; stdout stays one document.
        let output = against(
            &[
                "call",
                "progress",
                "--arg",
                "steps=2",
                "--json",
                "--log-level",
                "info",
                "--era",
                era,
            ],
            &[],
        );
        assert!(output.status.success(), "{era}: {}", stderr(&output));
        let events: Vec<Value> = stderr(&output)
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect();
        assert_eq!(events.len(), 3, "{events:?}");
        assert_eq!(events[0]["progress"]["progress"], 1);
        assert_eq!(events[0]["progress"]["total"], 2);
        assert_eq!(events[1]["log"]["data"]["step"], 1);
        assert_eq!(events[2]["progress"]["message"], "step 2 of 2");
        assert_eq!(
            stdout_json(&output)["content"][0]["text"],
            "completed 2 steps"
        );
    }
}

#[test]
fn log_messages_arrive_in_order() {
    let output = against(
        &["call", "flood", "--arg", "count=40", "--era", "legacy"],
        &[],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let seqs: Vec<String> = stderr(&output)
        .lines()
        .filter(|l| !l.starts_with("(ok"))
        .map(str::to_owned)
        .collect();
    let expected: Vec<String> = (0..40)
        .map(|i| format!(r#"[info] testserver: {{"seq":{i}}}"#))
        .collect();
    assert_eq!(seqs, expected);
}

#[test]
fn roots_come_from_root_flags() {
    let dir = std::env::temp_dir().join(format!("switchboard-cli-root {}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = std::fs::canonicalize(&dir).unwrap();
    for era in ERAS {
        let output = against(
            &[
                "call",
                "roots",
                "--json",
                "--root",
                dir.to_str().unwrap(),
                "--era",
                era,
            ],
            &[],
        );
        assert!(output.status.success(), "{era}: {}", stderr(&output));
        let text = stdout_json(&output)["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let roots: Value = serde_json::from_str(&text).unwrap();
        let expected = format!("file://{}", dir.to_str().unwrap().replace(' ', "%20"));
        assert_eq!(roots[0]["uri"], expected.as_str(), "{era}");
        assert_eq!(roots[0]["name"], dir.file_name().unwrap().to_str().unwrap());

        // Without --root the working directory is offered.
        let output = against(&["call", "roots", "--json", "--era", era], &[]);
        assert!(output.status.success(), "{era}: {}", stderr(&output));
        let text = stdout_json(&output)["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let roots: Value = serde_json::from_str(&text).unwrap();
        let cwd = std::fs::canonicalize(".").unwrap();
        let expected = format!("file://{}", cwd.to_str().unwrap().replace(' ', "%20"));
        assert_eq!(roots.as_array().map(Vec::len), Some(1), "{era}: {roots}");
        assert_eq!(roots[0]["uri"], expected.as_str(), "{era}");

        // With --no-roots none are offered at all.
        let output = against(&["call", "roots", "--no-roots", "--era", era], &[]);
        assert_eq!(output.status.code(), Some(5), "{era}");
        assert!(stdout(&output).contains("did not declare the roots capability"));
    }
    let output = against(&["call", "roots", "--root", "/nonexistent/dir"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("--root /nonexistent/dir"),
        "{}",
        stderr(&output)
    );
    let _ = std::fs::remove_dir(&dir);
}

#[test]
fn call_runs_a_task_only_tool_as_a_task() {
    for era in ["dual", "legacy"] {
        let output = against(&["call", "must_task", "--arg", "ms=10"], &["--era", era]);
        assert!(output.status.success(), "{era}: {}", stderr(&output));
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(said.starts_with("done"), "{era}: {said}");
    }
}

#[test]
fn timeouts_that_are_not_a_positive_number_are_refused_never_a_panic() {
    for value in ["-1", "nan", "inf", "0"] {
        let output = Command::new(BIN)
            .args(["tools", &format!("--timeout={value}"), "--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "--timeout {value}: {stderr}");
        assert!(stderr.contains("positive number of seconds"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // Huge is a long time, not an overflow.
    let output = Command::new(BIN)
        .args(["list", "--timeout", "1e300"])
        .env(
            "HOME",
            std::env::temp_dir().join("switchboard-cli-huge-timeout"),
        )
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// MCP Apps: the test server with `--apps` (issue 29).
const DASHBOARD: &str = "ui://switchboard-testserver/dashboard";

#[test]
fn tools_and_info_show_which_tools_have_an_app() {
    let output = against(&["tools"], &["--apps"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let table = String::from_utf8_lossy(&output.stdout);
    let row = |tool: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(tool))
            .unwrap_or_else(|| panic!("no {tool} row:\n{table}"))
            .to_owned()
    };
    assert!(row("dashboard").contains("dashboard [app] "), "{table}");
    assert!(
        row("dashboard_refresh").contains("dashboard_refresh [app only] "),
        "{table}"
    );
    // The deprecated key counts; a malformed `_meta.ui` is no app, and no
    // failure either.
    assert!(row("legacy_app").contains("legacy_app [app] "), "{table}");
    assert!(!row("odd_app").contains('['), "{table}");
    assert!(!row("echo").contains('['), "{table}");

    let output = against(&["info"], &["--apps"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let info = String::from_utf8_lossy(&output.stdout);
    assert!(
        info.contains(&format!("dashboard: {DASHBOARD} (model, app)")),
        "{info}"
    );
    assert!(
        info.contains(&format!("dashboard_refresh: {DASHBOARD} (app only)")),
        "{info}"
    );
    assert!(
        info.contains("legacy_app: ui://switchboard-testserver/legacy (model, app)"),
        "{info}"
    );

    let info = stdout_json(&against(&["info", "--json"], &["--apps"]));
    assert_eq!(
        info["apps"][1],
        serde_json::json!({"tool": "dashboard_refresh", "resourceUri": DASHBOARD, "visibility": ["app"]})
    );
    assert_eq!(info["apps"].as_array().map(Vec::len), Some(3), "{info}");
    // A server without apps: no row, an empty list.
    let info = stdout_json(&against(&["info", "--json"], &[]));
    assert_eq!(info["apps"], serde_json::json!([]));
    let plain = against(&["info"], &[]);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("apps"));
}

#[test]
fn an_apps_html_is_kept_off_a_terminal_unless_asked_for() {
    let home = support::home::Home::new("apps-read", "");
    let (work, home_dir) = (home.work(), home.home());
    let env = [("SWITCHBOARD_NO_SESSION", "1")];
    let read = |extra: &[&str], uri: &str| {
        let mut args = vec!["read", uri];
        args.extend(extra);
        args.extend(["--", support::BIN, "__testserver", "--apps"]);
        support::pty::Terminal::start(&args, &work, &home_dir, &env).finish()
    };

    // On a terminal: refused, saying how, and nothing of the HTML shown.
    let (code, seen) = read(&[], DASHBOARD);
    assert_eq!(code, 1, "{seen}");
    assert!(seen.contains("MCP App's HTML"), "{seen}");
    assert!(seen.contains("-o FILE") && seen.contains("--raw"), "{seen}");
    assert!(!seen.contains("<!DOCTYPE"), "{seen}");
    // Any app's contents, whatever the URI: the legacy view (a blob) too.
    let (code, seen) = read(&[], "ui://switchboard-testserver/legacy");
    assert_eq!(code, 1, "{seen}");

    // --raw: printed.
    let (code, seen) = read(&["--raw"], DASHBOARD);
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("<!DOCTYPE html>"), "{seen}");

    // -o FILE: written, text as sent and a blob decoded.
    for (uri, file, start) in [
        (DASHBOARD, "dashboard.html", "<!DOCTYPE html>\n<html><head>"),
        (
            "ui://switchboard-testserver/legacy",
            "legacy.html",
            "<!DOCTYPE html>\n<html><body><p>An app named the old way",
        ),
    ] {
        let path = work.join(file);
        let (code, seen) = read(&["-o", path.to_str().unwrap()], uri);
        assert_eq!(code, 0, "{seen}");
        assert!(seen.contains("wrote "), "{seen}");
        assert!(!seen.contains("<!DOCTYPE"), "{seen}");
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.starts_with(start), "{written}");
    }

    // Other resources still print on a terminal.
    let (code, seen) = read(&[], "test://static/hello");
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("Hello, world!"), "{seen}");

    // Not a terminal: written as before.
    let output = against(&["read", DASHBOARD], &["--apps"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("<!DOCTYPE html>"));
}

#[test]
fn an_apps_html_is_kept_off_a_terminal_on_a_configured_server_too() {
    let home = support::home::Home::new(
        "apps-read-configured",
        &format!(
            "[servers.apps]\ncommand = {:?}\nargs = [\"__testserver\", \"--apps\"]\n",
            support::BIN
        ),
    );
    let env = [("SWITCHBOARD_NO_SESSION", "1")];
    let (code, seen) = support::pty::Terminal::start(
        &["read", DASHBOARD, "--server", "apps"],
        &home.work(),
        &home.home(),
        &env,
    )
    .finish();
    assert_eq!(code, 1, "{seen}");
    assert!(seen.contains("-o FILE"), "{seen}");
    assert!(!seen.contains("<!DOCTYPE"), "{seen}");
    let path = home.work().join("view.html");
    let output = home.run(&[
        "read",
        DASHBOARD,
        "--server",
        "apps",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
}
