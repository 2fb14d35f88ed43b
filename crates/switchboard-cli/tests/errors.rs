//! Errors that say what to do, names found the way people type them, and
//! plain output when piped.

#[allow(dead_code)] // the HTTP test server is not used here
mod support;

use std::process::Output;

use support::BIN;
use support::home::Home;

/// A HOME whose user config has `t` (the bundled test server) and
/// `broken` (a server that exits at once, saying `boom`).
fn sandbox(name: &str) -> Home {
    Home::new(
        &format!("errors-{name}"),
        &format!(
            "[servers.t]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\n\n\
             [servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"echo boom >&2; exit 3\"]\n"
        ),
    )
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_server_command_without_its_dashes_gets_the_fixed_command_line() {
    let sandbox = sandbox("dashes");
    for (args, fixed) in [
        (
            &["tools", "npx", "-y", "some-server"][..],
            "switchboard tools -- npx -y some-server",
        ),
        (
            &["add", "x", "npx", "-y", "@scope/server"][..],
            "switchboard add x -- npx -y @scope/server",
        ),
        (
            &["call", "echo", "uvx", "--from", "pkg", "srv"][..],
            "switchboard call echo -- uvx --from pkg srv",
        ),
    ] {
        let output = sandbox.run(args);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("put `--` before it") && stderr(&output).contains(fixed),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    // `add NAME WORD`: a word that is no URL is a command missing its `--`.
    let output = sandbox.run(&["add", "x", "npx"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("switchboard add NAME -- npx"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_url_without_a_scheme_is_a_usage_error_that_suggests_https() {
    let sandbox = sandbox("scheme");
    for args in [
        &["tools", "--url", "mcp.example.com/mcp"][..],
        &["add", "docs", "mcp.example.com/mcp"][..],
    ] {
        let output = sandbox.run(args);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("did you mean https://mcp.example.com/mcp"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn add_takes_a_url_after_the_name_as_claude_code_does() {
    let sandbox = sandbox("add");
    let output = sandbox.run(&["add", "docs", "https://mcp.example.com/mcp"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let output = sandbox.run(&["add", "-t", "http", "api", "https://api.example.com/mcp"]);
    assert!(output.status.success(), "{}", stderr(&output));
    for (name, url) in [
        ("docs", "https://mcp.example.com/mcp"),
        ("api", "https://api.example.com/mcp"),
    ] {
        let got = sandbox.run(&["get", name, "--json"]);
        assert!(got.status.success(), "{}", stderr(&got));
        assert!(stdout(&got).contains(url), "{}", stdout(&got));
    }
    let got = sandbox.run(&["get", "api", "--json"]);
    assert!(stdout(&got).contains("streamable"), "{}", stdout(&got));
}

#[test]
fn unknown_names_get_did_you_mean_and_known_ones_are_found_as_typed() {
    let sandbox = sandbox("names");
    // A tool the server does not have: the closest one it does.
    let output = sandbox.run(&["call", "t/ech", "{}"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("did you mean `t/echo`?"),
        "{}",
        stderr(&output)
    );
    // A server that is not configured: the closest one that is.
    let output = sandbox.run(&["call", "tt/echo", r#"{"text":"x"}"#]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("did you mean `t`?"),
        "{}",
        stderr(&output)
    );
    // Once `tools` has listed them: a tool name that one server has works
    // alone, and the `mcp__server__tool` names of `tools --for anthropic`
    // (and Claude Code) work too.
    let listed = sandbox.run(&["tools", "--server", "t"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    for name in ["echo", "mcp__t__echo", "t__echo", "t/echo"] {
        let output = sandbox.run(&["call", name, r#"{"text":"found"}"#]);
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        assert!(
            stdout(&output).contains("found"),
            "{name}: {}",
            stdout(&output)
        );
    }
    let output = sandbox.run(&["call", "ecoh", r#"{"text":"x"}"#]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("did you mean `echo`?"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn tools_of_a_broken_server_exit_non_zero_with_its_reason() {
    let sandbox = sandbox("broken");
    let output = sandbox.run(&["tools", "--server", "broken"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("exit code 3") && stderr(&output).contains("broken"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn list_shows_a_failed_servers_last_stderr_line_and_no_tool_count() {
    let sandbox = sandbox("list-stderr");
    let output = sandbox.run(&["list"]);
    assert!(
        stdout(&output).contains("stderr: boom"),
        "{}",
        stdout(&output)
    );
    let output = sandbox.run(&["list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let servers = listed["servers"].as_array().expect("servers");
    let broken = servers.iter().find(|s| s["name"] == "broken").unwrap();
    assert!(broken["tools"].is_null(), "{broken}");
    let t = servers.iter().find(|s| s["name"] == "t").unwrap();
    assert!(t["tools"].as_u64().unwrap() > 0, "{t}");
}

#[test]
fn a_server_command_given_as_a_calls_arguments_is_told_its_dashes() {
    let sandbox = sandbox("call-dashes");
    let output = sandbox.run(&["call", "echo", "npx"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("put `--` before it"),
        "{}",
        stderr(&output)
    );
    assert!(
        !stderr(&output).contains("--args-json"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn tables_are_plain_aligned_text_when_piped() {
    let sandbox = sandbox("plain");
    for args in [&["tools", "--server", "t"][..], &["list"][..]] {
        let output = sandbox.run(args);
        let text = stdout(&output);
        assert!(
            !text.contains(['│', '┌', '└', '═', '┆']),
            "{args:?} drew boxes into a pipe:\n{text}"
        );
        // Aligned: every row's second column starts where the header's does.
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(lines.len() >= 2, "{args:?}:\n{text}");
    }
    let tools = stdout(&sandbox.run(&["tools", "--server", "t"]));
    let header = tools.lines().next().unwrap();
    let column = header.find("description").expect("a description column");
    let echo = tools.lines().find(|l| l.contains("t__echo")).unwrap();
    assert_eq!(
        echo.find("Echoes"),
        Some(column),
        "not aligned:\n{header}\n{echo}"
    );
}

#[test]
fn auth_status_says_where_the_logins_are_in_words() {
    let sandbox = sandbox("auth");
    let output = sandbox
        .command()
        .env_remove("SWITCHBOARD_CREDENTIALS")
        .args(["auth", "status"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("the file ") && text.contains("credentials.json"),
        "{text}"
    );
    assert!(
        !text.contains("FileStore") && !text.contains("{ path"),
        "{text}"
    );
}

/// What a terminal shows, escape sequences and spinner lines left out.
fn screen_lines(seen: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut chars = seen.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ … final byte in @..~
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        plain.push(c);
    }
    plain
        .split(['\n', '\r'])
        .filter(|l| !l.trim().is_empty() && !l.contains("checking"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn on_a_terminal_list_fits_100_columns_skipped_entries_are_counted_and_get_has_no_empty_header() {
    let sandbox = sandbox("terminal");
    // Claude Desktop's file (a user file: nothing to approve) has a `t`
    // too: a second entry, skipped, and counted.
    let desktop = sandbox
        .root
        .join("home/.config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(desktop.parent().unwrap()).unwrap();
    std::fs::write(
        &desktop,
        format!(r#"{{"mcpServers": {{"t": {{"command": {BIN:?}, "args": ["__testserver", "--era", "legacy"]}}}}}}"#),
    )
    .unwrap();
    let home = sandbox.home();
    let work = sandbox.work();
    let env = [("SWITCHBOARD_NO_SESSION", "1")];
    let (code, seen) = support::pty::Terminal::start(&["list"], &work, &home, &env).finish();
    assert_eq!(code, 0, "{seen}");
    let lines = screen_lines(&seen);
    let table: Vec<&String> = lines.iter().filter(|l| l.contains('│')).collect();
    assert!(!table.is_empty(), "{seen}");
    for line in &table {
        assert!(
            line.chars().count() <= 100,
            "wider than 100 columns: {line}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("not used") && l.contains("list --all")),
        "{lines:#?}"
    );
    assert!(
        !table
            .iter()
            .any(|l| l.contains("shadowed") || l.contains("duplicate"))
    );
    // --all lists them.
    let (_, seen) = support::pty::Terminal::start(&["list", "--all"], &work, &home, &env).finish();
    assert!(
        screen_lines(&seen)
            .iter()
            .any(|l| l.contains('│') && (l.contains("shadowed") || l.contains("duplicate"))),
        "{seen}"
    );
    // `get`: the first row under the top border is a field, not an empty
    // header.
    let (code, seen) = support::pty::Terminal::start(&["get", "t"], &work, &home, &env).finish();
    assert_eq!(code, 0, "{seen}");
    let lines = screen_lines(&seen);
    let top = lines
        .iter()
        .position(|l| l.starts_with('┌'))
        .expect("a table");
    assert!(lines[top + 1].contains("name"), "{lines:#?}");
    assert!(!lines.iter().any(|l| l.starts_with('╞')), "{lines:#?}");
}

#[test]
fn a_server_whose_variable_is_not_set_is_not_started_and_the_variable_is_named() {
    let root =
        std::env::temp_dir().join(format!("switchboard-errors-unset-{}", std::process::id()));
    let started = root.join("started");
    let home = Home::new(
        "errors-unset",
        &format!(
            "[servers.s]\ncommand = \"sh\"\n\
             args = [\"-c\", \"touch '{}'; exec '{BIN}' __testserver\"]\n\
             env = {{ API_KEY = \"${{SWITCHBOARD_TEST_SURELY_UNSET}}\" }}\n",
            started.display()
        ),
    );
    let output = home
        .command()
        .env_remove("SWITCHBOARD_TEST_SURELY_UNSET")
        .args(["call", "s/echo", r#"{"text":"hi"}"#])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("SWITCHBOARD_TEST_SURELY_UNSET is not set"),
        "{}",
        stderr(&output)
    );
    assert!(!started.exists(), "the server was started");
    // Set, it starts.
    let output = home
        .command()
        .env("SWITCHBOARD_TEST_SURELY_UNSET", "a value")
        .args(["call", "s/echo", r#"{"text":"hi"}"#])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(started.exists());
}

#[test]
fn a_bare_prompt_name_or_resource_uri_finds_the_one_server_that_has_it() {
    let sandbox = sandbox("bare");
    let output = sandbox.run(&["prompt", "greeting", "--arg", "name=Ada"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("Hello, Ada!"),
        "{}",
        stdout(&output)
    );
    let output = sandbox.run(&["read", "test://static/hello"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("Hello, world!"),
        "{}",
        stdout(&output)
    );
    // What no server has is said, with what to give instead.
    let output = sandbox.run(&["read", "test://no/such/thing"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--server NAME"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn on_a_narrow_terminal_tool_names_are_never_broken() {
    let sandbox = sandbox("narrow");
    let env = [("SWITCHBOARD_NO_SESSION", "1")];
    let (code, seen) = support::pty::Terminal::start_sized(
        &["tools", "--", BIN, "__testserver"],
        &sandbox.work(),
        &sandbox.home(),
        &env,
        40,
    )
    .finish();
    assert_eq!(code, 0, "{seen}");
    let lines = screen_lines(&seen);
    for name in ["spawn_grandchild", "schema_rich", "long_line"] {
        assert!(
            lines.iter().any(|l| l.contains(name)),
            "`{name}` is broken across lines:\n{}",
            lines.join("\n")
        );
    }
}

#[test]
fn a_typo_on_a_server_after_dashes_gets_the_closest_name() {
    let sandbox = sandbox("direct-typo");
    let output = sandbox.run(&["call", "ecko", "{}", "--", BIN, "__testserver"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("did you mean `echo`?"),
        "{}",
        stderr(&output)
    );
    let output = sandbox.run(&["prompt", "greetin", "--", BIN, "__testserver"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("did you mean `greeting`?"),
        "{}",
        stderr(&output)
    );
}
