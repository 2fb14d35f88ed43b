//! The terminal belongs to the user: every string a server sends — tool
//! names, titles and descriptions, its name, version and instructions,
//! results, resource text, prompt messages, log and progress messages, an
//! elicitation's message and field titles, the stderr it leaves behind, a
//! skill's description, frontmatter, instructions and files — is shown
//! with its control characters escaped, under a real pty. The server
//! (`tests/fixtures/hostile_server.py`) puts a window title, a clipboard
//! write (OSC 52), a hyperlink (OSC 8), hidden text and an 8-bit CSI in
//! each of them.

use std::path::PathBuf;

#[allow(dead_code)] // the HTTP test server is not used here
mod support;

use support::pty::Terminal;

/// What must never reach the terminal raw.
const ATTACKS: [&str; 5] = [
    "\u{1b}]0;PWNED",
    "\u{1b}]52;",
    "\u{1b}]8;;",
    "\u{1b}[8m",
    "\u{9b}31m",
];

fn server() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hostile_server.py")
        .display()
        .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-terminal-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    std::fs::create_dir_all(dir.join("work/.git")).unwrap();
    dir
}

fn python() -> Option<&'static str> {
    ["python3", "python"].into_iter().find(|p| {
        std::process::Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Runs `switchboard ARGS -- python3 hostile_server.py` on a pty, answers
/// with `keys` after `wait_for` if given, and checks what was shown: no
/// attack raw, and every `expected` text there (escaped).
fn check(args: &[&str], interact: Option<(&str, &str)>, expected: &[&str]) -> String {
    let Some(python) = python() else {
        panic!("python3 is needed for the hostile test server");
    };
    let dir = scratch(&args.join("-").replace(['/', ' '], "_"));
    let script = server();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", python, &script]);
    let mut terminal = Terminal::start(&all, &dir.join("work"), &dir.join("home"), &[]);
    if let Some((wait_for, keys)) = interact {
        terminal.expect(wait_for);
        terminal.send(keys);
    }
    let (_, shown) = terminal.finish();
    for attack in ATTACKS {
        assert!(
            !shown.contains(attack),
            "`switchboard {}` let {attack:?} reach the terminal:\n{shown:?}",
            args.join(" ")
        );
    }
    for text in expected {
        assert!(
            shown.contains(text),
            "`switchboard {}` did not show {text:?}:\n{shown}",
            args.join(" ")
        );
    }
    let _ = std::fs::remove_dir_all(dir);
    shown
}

/// The escaped form of the title attack, as the user sees it.
const SHOWN: &str = "\\x1b]0;PWNED\\x07";

#[test]
fn tool_names_titles_and_descriptions() {
    check(
        &["tools"],
        None,
        &["says hello", "evil\\x1b]0;PWNED", "arg\\x1b"],
    );
}

#[test]
fn server_name_version_and_instructions() {
    check(
        &["info"],
        None,
        &["hostile \\x1b]0;PWNED", "6.6.6", "instructions \\x1b"],
    );
}

#[test]
fn results_logs_and_progress() {
    check(
        &["call", "greet", "--log-level", "debug"],
        None,
        &[
            "result \\x1b]0;PWNED",
            "second line",
            "logged \\x1b",
            "log \\x1b",
        ],
    );
}

#[test]
fn resources_and_prompts() {
    check(&["resources"], None, &["resource \\x1b"]);
    check(
        &["read", "file:///r"],
        None,
        &["resource text \\x1b]0;PWNED"],
    );
    check(&["prompts"], None, &["prompt \\x1b"]);
    check(&["prompt", "p"], None, &["prompt message \\x1b]0;PWNED"]);
}

#[test]
fn skills_and_their_files() {
    check(&["skills"], None, &["skill description \\x1b]0;PWNED"]);
    check(
        &["skill", "hostile"],
        None,
        &["skill body \\x1b]0;PWNED", "license \\x1b]0;PWNED"],
    );
    check(
        &["skill", "hostile", "--file", "ref.md"],
        None,
        &["skill file \\x1b]0;PWNED"],
    );
}

#[test]
fn an_elicitations_message_and_field_titles() {
    // Esc dismisses the form once its field is asked.
    check(
        &["call", "ask"],
        Some(("field \\x1b", "\u{1b}")),
        &[
            "elicit \\x1b]0;PWNED",
            "field \\x1b]0;PWNED",
            "elicitation: cancel",
        ],
    );
}

#[test]
fn completions() {
    check(
        &["complete", "p", "x"],
        None,
        &["value \\x1b]0;PWNED", "second \\x1b"],
    );
}

/// The same server configured (in a `--config` file): `info NAME`, a
/// call's result, log and progress lines, completions and prompts go
/// through the same gate.
#[test]
fn a_configured_servers_info_call_logs_and_completions() {
    let Some(python) = python() else {
        panic!("python3 is needed for the hostile test server");
    };
    let dir = scratch("configured");
    let config = dir.join("servers.toml");
    std::fs::write(
        &config,
        format!(
            "[servers.hostile]\ncommand = {python:?}\nargs = [{:?}]\n",
            server()
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    for (args, expected) in [
        (
            &["info", "hostile"][..],
            &[
                "ready",
                "hostile \\x1b]0;PWNED",
                "6.6.6",
                "instructions \\x1b",
            ][..],
        ),
        (
            &["call", "hostile/greet", "--log-level", "debug"],
            &["result \\x1b]0;PWNED", "logged \\x1b", "log \\x1b"],
        ),
        (&["complete", "hostile/p", "x"], &["value \\x1b]0;PWNED"]),
        (
            &["prompt", "p", "--server", "hostile"],
            &["prompt message \\x1b]0;PWNED"],
        ),
    ] {
        let mut all = args.to_vec();
        all.extend(["--config", &config]);
        let terminal = Terminal::start(&all, &dir.join("work"), &dir.join("home"), &[]);
        let (_, shown) = terminal.finish();
        for attack in ATTACKS {
            assert!(
                !shown.contains(attack),
                "`switchboard {}` let {attack:?} reach the terminal:\n{shown:?}",
                args.join(" ")
            );
        }
        for text in expected {
            assert!(
                shown.contains(text),
                "`switchboard {}` did not show {text:?}:\n{shown}",
                args.join(" ")
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn raw_prints_a_results_text_byte_for_byte() {
    let Some(python) = python() else {
        panic!("python3 is needed for the hostile test server");
    };
    let script = server();
    let output = std::process::Command::new(support::BIN)
        .args(["call", "greet", "--raw", "--", python, &script])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("result \u{1b}]0;PWNED\u{7}"), "{stdout:?}");
}

#[test]
fn a_crashed_servers_stderr_and_error_texts() {
    check(&["call", "crash"], None, &["dying \\x1b]0;PWNED"]);
    check(&["call", "nosuch"], None, &[]);
    let shown = check(&["call", "evil\u{1b}]0;PWNED\u{7}"], None, &[]);
    assert!(shown.contains(SHOWN) || shown.contains("evil"), "{shown}");
}
