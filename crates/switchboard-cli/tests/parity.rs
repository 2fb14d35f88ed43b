//! The background session changes how fast a command answers, never what
//! it says: each case here runs without a session and then with `up`, and
//! the exit code, stdout and stderr must be the same (timings aside). A
//! server that crashed on start, a typo'd tool, a missing resource or
//! prompt, a `${VAR}` the caller sets, and a server just added.
#![cfg(unix)]

#[allow(dead_code)] // the HTTP test server is not used here
mod support;

use std::path::PathBuf;
use std::process::{Command, Output};

use support::BIN;
use support::home::Home;

/// A HOME whose user config has the bundled test server `t` (noting
/// every message it gets in `record`), a server
/// that exits on start saying why (`crashy`), and `w`, the test server
/// given `WEATHER_KEY` from `${WEATHER_KEY}`, noting each value it got in
/// `keys`.
struct Sandbox {
    home: Home,
}

impl Sandbox {
    fn new(name: &str) -> Self {
        let name = format!("parity-{name}");
        let root = std::env::temp_dir().join(format!("switchboard-{name}-{}", std::process::id()));
        let keys = root.join("keys");
        let home = Home::new(
            &name,
            &format!(
                "[servers.t]\ncommand = \"{BIN}\"\nargs = [\"__testserver\", \"--record\", \"{}\"]\n\n\
                 [servers.crashy]\ncommand = \"sh\"\n\
                 args = [\"-c\", \"echo 'cannot open the database' >&2; exit 3\"]\n\n\
                 [servers.w]\ncommand = \"sh\"\n\
                 args = [\"-c\", \"echo \\\"$WEATHER_KEY\\\" >> '{}'; exec '{BIN}' __testserver\"]\n\
                 env = {{ WEATHER_KEY = \"${{WEATHER_KEY}}\" }}\n",
                root.join("record").display(),
                keys.display()
            ),
        );
        assert_eq!(home.root, root);
        Self { home }
    }

    fn base(&self) -> PathBuf {
        self.home.root.join("session")
    }

    /// `switchboard` in the project, the session allowed (used when up).
    fn command(&self) -> Command {
        let mut command = self.home.command();
        command
            .env("SWITCHBOARD_SESSION_DIR", self.base())
            .env_remove("SWITCHBOARD_NO_SESSION")
            .env("WEATHER_KEY", "the caller's");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .expect("switchboard runs")
    }

    fn keys(&self) -> Vec<String> {
        std::fs::read_to_string(self.home.root.join("keys"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.run(&["down"]);
    }
}

/// What a run said, timings masked (`12 ms`, `0.4 s`).
fn seen(output: &Output) -> String {
    let text = format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut masked = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(|c: char| c.is_ascii_digit()) {
        masked.push_str(&rest[..at]);
        let digits = rest[at..]
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or(rest.len() - at, |n| n);
        let after = &rest[at + digits..];
        let unit = ["ms", "µs", " ms", " µs", " s", "s"]
            .into_iter()
            .find(|u| after.starts_with(u));
        match unit {
            Some(unit) => {
                masked.push('T');
                rest = &after[unit.len()..];
            }
            None => {
                masked.push_str(&rest[at..at + digits]);
                rest = after;
            }
        }
    }
    masked.push_str(rest);
    masked
}

/// The cases whose words and exit codes must not depend on the session.
const CASES: &[&[&str]] = &[
    &["call", "crashy/query", "{}"],
    &["call", "t/ecko", r#"{"text":"hi"}"#],
    &["call", "t/error", "{}"],
    &["call", "nosuch/echo", "{}"],
    &["read", "test://no/such/thing", "--server", "t"],
    &["prompt", "t/no-such-prompt"],
    &["tools", "--server", "crashy"],
    &["tools"],
    &["call", "crashy/query", "{}", "--json"],
    &["call", "t/fail", "{}"],
    &["call", "t/ecko", "{}", "--json"],
    &["prompt", "t/greeting"],
    &["tools", "--server", "tt"],
    &["call", "t/echo", "{}"],
    &["call", "t__echo", r#"{"text":"hi"}"#],
    &["call", "echo", r#"{"text":"hi"}"#],
    &["read", "test://static/hello"],
    &["prompt", "greeting", "--arg", "name=Ada"],
    &["resources", "--server", "crashy"],
    &["prompts"],
    &["list"],
    &["list", "--json"],
];

#[test]
fn error_cases_say_the_same_with_and_without_the_session() {
    let sandbox = Sandbox::new("errors");
    let without: Vec<String> = CASES.iter().map(|args| seen(&sandbox.run(args))).collect();
    let up = sandbox.run(&["up"]);
    assert!(up.status.success(), "{}", seen(&up));
    for (args, without) in CASES.iter().zip(&without) {
        let with = seen(&sandbox.run(args));
        assert_eq!(
            &with,
            without,
            "`switchboard {}` says other things with the session",
            args.join(" ")
        );
    }
    // The cases said something worth comparing.
    assert!(without[0].contains("exit Some(4)"), "{}", without[0]);
    assert!(
        without[0].contains("cannot open the database"),
        "{}",
        without[0]
    );
    assert!(without[1].contains("did you mean"), "{}", without[1]);
}

#[test]
fn the_callers_variables_are_the_ones_a_server_gets() {
    let sandbox = Sandbox::new("vars");
    let up = sandbox
        .command()
        .env("WEATHER_KEY", "the session's")
        .arg("up")
        .output()
        .unwrap();
    assert!(up.status.success(), "{}", seen(&up));
    let call = sandbox.run(&["call", "w/echo", r#"{"text":"hi"}"#]);
    assert!(call.status.success(), "{}", seen(&call));
    // The server that answered got the caller's value.
    assert_eq!(
        sandbox.keys().last().map(String::as_str),
        Some("the caller's"),
        "{:?}",
        sandbox.keys()
    );
    // The same value as the session's: the session answers.
    let before = sandbox.keys().len();
    let same = sandbox
        .command()
        .env("WEATHER_KEY", "the session's")
        .args(["call", "w/echo", r#"{"text":"hi"}"#])
        .output()
        .unwrap();
    assert!(same.status.success(), "{}", seen(&same));
    assert_eq!(sandbox.keys().len(), before, "{:?}", sandbox.keys());
}

#[test]
fn a_server_added_while_the_session_runs_answers_at_once() {
    let sandbox = Sandbox::new("added");
    let up = sandbox.run(&["up"]);
    assert!(up.status.success(), "{}", seen(&up));
    // (Started through `sh`: not the same server as `t`.)
    let add = sandbox.run(&[
        "add",
        "-s",
        "user",
        "fresh",
        "--",
        "sh",
        "-c",
        &format!("exec '{BIN}' __testserver"),
    ]);
    assert!(add.status.success(), "{}", seen(&add));
    let call = sandbox.run(&["call", "fresh/echo", r#"{"text":"at once"}"#]);
    assert!(call.status.success(), "{}", seen(&call));
    assert!(seen(&call).contains("at once"), "{}", seen(&call));
}

/// Waits (polling, with a deadline) until `file` holds `what`.
fn wait_for(file: &std::path::Path, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(file).is_ok_and(|text| text.contains(what)) {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never held {what:?}",
            file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_through_the_session_cancels_the_call_and_says_so() {
    let sandbox = Sandbox::new("ctrl-c");
    let up = sandbox.run(&["up"]);
    assert!(up.status.success(), "{}", seen(&up));
    let base = sandbox.base();
    let mut terminal = support::pty::Terminal::start(
        &["call", "t/slow", r#"{"ms":60000}"#],
        &sandbox.home.work(),
        &sandbox.home.home(),
        &[("SWITCHBOARD_SESSION_DIR", &*base.to_string_lossy())],
    );
    let record = sandbox.home.root.join("record");
    wait_for(&record, "\"slow\"");
    terminal.send("\x03");
    terminal.expect("cancelled");
    let (code, shown) = terminal.finish();
    assert_eq!(code, 130, "{shown}");
    // It stopped no server (the session's run on), and said none.
    assert!(!shown.contains("stopping the servers"), "{shown}");
    // The session's server was told.
    wait_for(&record, "notifications/cancelled");
}
