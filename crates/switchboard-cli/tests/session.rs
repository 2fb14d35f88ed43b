//! The background session: `switchboard up`, `call` through it, `down`,
//! the idle stop, and who may connect.
#![cfg(unix)]

#[allow(dead_code)] // the HTTP test server is not used here
mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::BIN;
use support::home::Home;

/// A HOME whose user config has one server, `t` (the bundled test server
/// behind a shell that notes each start in `spawns`), and a session
/// directory of its own. The session is stopped when dropped.
struct Sandbox {
    home: Home,
}

impl Sandbox {
    fn new(name: &str) -> Self {
        let name = format!("session-{name}");
        let spawns =
            std::env::temp_dir().join(format!("switchboard-{name}-{}/spawns", std::process::id()));
        let home = Home::new(
            &name,
            &format!(
                "[servers.t]\ncommand = \"sh\"\nargs = [\"-c\", \"echo $$ >> '{}'; exec '{BIN}' __testserver\"]\n",
                spawns.display()
            ),
        );
        assert_eq!(spawns.parent(), Some(home.root.as_path()));
        Self { home }
    }

    /// `SWITCHBOARD_SESSION_DIR`: every session of the user is below it.
    fn base(&self) -> PathBuf {
        self.home.root.join("session")
    }

    /// The directory of the one session below [`Sandbox::base`] (of the
    /// project `up` ran in); a path that does not exist before `up`.
    fn dir(&self) -> PathBuf {
        let sessions = self.sessions();
        assert!(sessions.len() <= 1, "more than one session: {sessions:?}");
        sessions
            .into_iter()
            .next()
            .unwrap_or_else(|| self.base().join("none"))
    }

    /// Every session's directory.
    fn sessions(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.base())
            .map(|dir| dir.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }

    fn socket(&self) -> PathBuf {
        self.dir().join("session.sock")
    }

    /// `switchboard` here, the session allowed.
    fn command(&self) -> Command {
        let mut command = self.home.command();
        command
            .env("SWITCHBOARD_SESSION_DIR", self.base())
            .env_remove("SWITCHBOARD_NO_SESSION");
        command
    }

    fn switchboard(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .expect("switchboard runs")
    }

    fn spawns(&self) -> Vec<String> {
        std::fs::read_to_string(self.home.root.join("spawns"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn pid(&self) -> Option<u32> {
        pid_in(&self.dir())
    }
}

/// The pid a session directory's pid file names.
fn pid_in(dir: &std::path::Path) -> Option<u32> {
    std::fs::read_to_string(dir.join("session.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for dir in self.sessions() {
            if let Some(pid) = pid_in(&dir) {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        }
    }
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Waits (up to a generous bound) until process `pid` has exited.
fn exited(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn calls_go_through_the_session_to_one_server_process_and_down_stops_it() {
    let sandbox = Sandbox::new("calls");
    let up = sandbox.switchboard(&["up"]);
    assert!(up.status.success(), "{}", text(&up));
    assert!(
        String::from_utf8_lossy(&up.stdout).contains("the session is up"),
        "{}",
        text(&up)
    );
    // Only this user: the directory 0700, the socket 0600.
    let mode = |path: PathBuf| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(sandbox.base()), 0o700);
    assert_eq!(mode(sandbox.dir()), 0o700);
    assert_eq!(mode(sandbox.socket()), 0o600);
    // A second `up` finds it running.
    let again = sandbox.switchboard(&["up"]);
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("already running"),
        "{}",
        text(&again)
    );

    for word in ["first", "second"] {
        let call = sandbox.switchboard(&["call", "t/echo", &format!(r#"{{"text":"{word}"}}"#)]);
        assert!(call.status.success(), "{}", text(&call));
        assert!(
            String::from_utf8_lossy(&call.stdout).contains(word),
            "{}",
            text(&call)
        );
    }
    // `tools` lists through it too, each tool with its server and name.
    let tools = sandbox.switchboard(&["tools", "--json"]);
    assert!(tools.status.success(), "{}", text(&tools));
    let listed: serde_json::Value = serde_json::from_slice(&tools.stdout).unwrap();
    let echo = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "t__echo")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(echo["server"], "t");
    assert_eq!(echo["tool"], "echo");
    assert!(echo.get("_meta").is_none(), "{echo}");
    // `read` and `prompt` too; the server's own URI comes back.
    let read = sandbox.switchboard(&["read", "test://static/hello", "--server", "t", "--json"]);
    assert!(read.status.success(), "{}", text(&read));
    let read: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(read["contents"][0]["uri"], "test://static/hello", "{read}");
    assert_eq!(read["contents"][0]["text"], "Hello, world!", "{read}");
    let prompt = sandbox.switchboard(&["prompt", "t/greeting", "--arg", "name=Ada"]);
    assert!(prompt.status.success(), "{}", text(&prompt));
    assert!(
        String::from_utf8_lossy(&prompt.stdout).contains("Hello, Ada!"),
        "{}",
        text(&prompt)
    );
    // One server process served the calls, the listing, the read and the
    // prompt: the session's.
    assert_eq!(sandbox.spawns().len(), 1, "spawns: {:?}", sandbox.spawns());
    // Without the session (SWITCHBOARD_NO_SESSION), the call starts its own.
    let own = sandbox
        .command()
        .env("SWITCHBOARD_NO_SESSION", "1")
        .args(["call", "t/echo", r#"{"text":"third"}"#])
        .output()
        .unwrap();
    assert!(own.status.success(), "{}", text(&own));
    assert_eq!(sandbox.spawns().len(), 2, "spawns: {:?}", sandbox.spawns());
    // From another project's directory (other project files), neither.
    let elsewhere = sandbox.home.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let other = sandbox
        .command()
        .current_dir(&elsewhere)
        .args(["call", "t/echo", r#"{"text":"fourth"}"#])
        .output()
        .unwrap();
    assert!(other.status.success(), "{}", text(&other));
    assert_eq!(sandbox.spawns().len(), 3, "spawns: {:?}", sandbox.spawns());

    let pid = sandbox.pid().expect("the pid file");
    let down = sandbox.switchboard(&["down"]);
    assert!(down.status.success(), "{}", text(&down));
    assert!(exited(pid), "the session (pid {pid}) is still running");
    assert!(!sandbox.socket().exists(), "the socket is left behind");
    // Its server went with it.
    let server: u32 = sandbox.spawns()[0].parse().unwrap();
    assert!(
        exited(server),
        "the session's server (pid {server}) outlived it"
    );
    let down = sandbox.switchboard(&["down"]);
    assert!(
        String::from_utf8_lossy(&down.stdout).contains("no session is running"),
        "{}",
        text(&down)
    );
}

/// `list` and `complete` go through the session too, and every command
/// says what it says without it: the same output, no server started.
#[test]
fn list_complete_and_results_as_json_are_the_same_through_the_session() {
    let sandbox = Sandbox::new("list");
    let alone = |args: &[&str]| {
        sandbox
            .command()
            .env("SWITCHBOARD_NO_SESSION", "1")
            .args(args)
            .output()
            .unwrap()
    };
    let lists = [&["list"][..], &["list", "--json"], &["list", "--wide"]];
    let completes = [
        &["complete", "t/greeting", "name=a"][..],
        &["complete", "greeting", "name", "--server", "t", "--json"],
        // Results as JSON: the server's own `_meta`, not the gateway's.
        &["call", "t/echo", r#"{"text":"x"}"#, "--json"],
        &["prompt", "t/greeting", "--arg", "name=Ada", "--json"],
        &["read", "test://static/hello", "--server", "t", "--json"],
    ];
    let without: Vec<Output> = lists.iter().chain(&completes).map(|a| alone(a)).collect();
    for output in &without {
        assert!(output.status.success(), "{}", text(output));
    }
    let started = sandbox.spawns().len();
    assert_eq!(started, lists.len() + completes.len());

    let up = sandbox.switchboard(&["up"]);
    assert!(up.status.success(), "{}", text(&up));
    let with: Vec<Output> = lists
        .iter()
        .chain(&completes)
        .map(|a| sandbox.switchboard(a))
        .collect();
    for (args, (with, without)) in lists
        .iter()
        .chain(&completes)
        .zip(with.iter().zip(&without))
    {
        assert_eq!(
            (with.status.code(), &with.stdout, &with.stderr),
            (without.status.code(), &without.stdout, &without.stderr),
            "{args:?}:\nwith the session: {}\nwithout: {}",
            text(with),
            text(without)
        );
    }
    // The session's server answered them all: one start more, its own.
    assert_eq!(
        sandbox.spawns().len(),
        started + 1,
        "spawns: {:?}",
        sandbox.spawns()
    );
    let down = sandbox.switchboard(&["down"]);
    assert!(down.status.success(), "{}", text(&down));
}

#[test]
fn the_session_stops_by_itself_after_its_idle_period() {
    let sandbox = Sandbox::new("idle");
    let up = sandbox.switchboard(&["up", "--idle", "1s"]);
    assert!(up.status.success(), "{}", text(&up));
    let pid = sandbox.pid().expect("the pid file");
    assert!(exited(pid), "the idle session (pid {pid}) did not stop");
    assert!(!sandbox.socket().exists());
    let log = std::fs::read_to_string(sandbox.dir().join("session.log")).unwrap();
    assert!(log.contains("no client for 1 s"), "{log}");
}

#[test]
fn a_connection_from_another_user_is_refused() {
    if !support::intruder::can_switch_user() {
        eprintln!("skipped: needs root, to connect as another user");
        return;
    }
    let sandbox = Sandbox::new("peer");
    let up = sandbox.switchboard(&["up"]);
    assert!(up.status.success(), "{}", text(&up));
    // Opened up on purpose, so that only the session's own check stands
    // between the other user and the servers.
    for dir in [sandbox.base(), sandbox.dir()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(sandbox.socket(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let said = support::intruder::send_as_nobody(
        &sandbox.socket(),
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"p","version":"1"}}}"#,
    );
    // Closed without a word.
    assert!(
        said.contains("answer:b''") || said.contains("answer:reset"),
        "{said}"
    );
    let log = std::fs::read_to_string(sandbox.dir().join("session.log")).unwrap();
    assert!(log.contains("refused a connection from uid 65534"), "{log}");
    // This user still gets in.
    for dir in [sandbox.base(), sandbox.dir()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let call = sandbox.switchboard(&["call", "t/echo", r#"{"text":"mine"}"#]);
    assert!(call.status.success(), "{}", text(&call));
    assert_eq!(sandbox.spawns().len(), 1);
}

#[test]
fn a_server_added_to_the_config_is_picked_up_by_the_running_session() {
    let sandbox = Sandbox::new("reload");
    let up = sandbox.switchboard(&["up"]);
    assert!(up.status.success(), "{}", text(&up));
    let config = sandbox.home.config();
    let mut toml = std::fs::read_to_string(&config).unwrap();
    toml.push_str(&format!(
        "\n[servers.u]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--era\", \"modern\"]\n"
    ));
    std::fs::write(&config, toml).unwrap();
    // The session says so in its log once it has reloaded.
    let log = sandbox.dir().join("session.log");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("config changed: added u")
    {
        assert!(
            Instant::now() < deadline,
            "no reload: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let call = sandbox.switchboard(&["call", "u/echo", r#"{"text":"new one"}"#]);
    assert!(call.status.success(), "{}", text(&call));
    assert!(String::from_utf8_lossy(&call.stdout).contains("new one"));
}

impl Sandbox {
    /// `work/.mcp.json` (a project file) with server `p`, whose env sends
    /// `API_KEY` = `value`; each start of it notes `PID key=$API_KEY` in
    /// `seen`.
    fn project_server(&self, value: &str) {
        let script = format!(
            "echo \"$$ key=$API_KEY\" >> '{}'; exec '{BIN}' __testserver",
            self.seen().display()
        );
        let entry = serde_json::json!({"mcpServers": {"p": {
            "command": "sh", "args": ["-c", script], "env": {"API_KEY": value}
        }}});
        std::fs::write(self.home.work().join(".mcp.json"), entry.to_string()).unwrap();
    }

    fn seen(&self) -> PathBuf {
        self.home.root.join("seen")
    }

    fn seen_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.seen())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `switchboard` with `PUBLIC_KEY` and `AWS_SECRET_ACCESS_KEY` set.
    fn with_keys(&self, args: &[&str]) -> Output {
        self.command()
            .env("PUBLIC_KEY", "public-value")
            .env("AWS_SECRET_ACCESS_KEY", "aws-secret-value")
            .args(args)
            .output()
            .expect("switchboard runs")
    }

    /// Waits until the session's log holds `text`; the log.
    fn log_says(&self, text: &str) -> String {
        let log = self.dir().join("session.log");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = std::fs::read_to_string(&log).unwrap_or_default();
            if now.contains(text) {
                return now;
            }
            assert!(
                Instant::now() < deadline,
                "the log never said {text:?}: {now}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Finding 2 of issue 28, live: an approved project server's env value is
/// changed by a later commit while the session serves; the session stops
/// it and does not start it with the new value.
#[test]
fn a_project_server_changed_while_serving_is_stopped_not_restarted_with_the_new_values() {
    let sandbox = Sandbox::new("changed-live");
    sandbox.project_server("${PUBLIC_KEY}");
    assert!(sandbox.with_keys(&["approve", "p"]).status.success());
    let up = sandbox.with_keys(&["up"]);
    assert!(up.status.success(), "{}", text(&up));
    let call = sandbox.with_keys(&["call", "p/echo", r#"{"text":"approved"}"#]);
    assert!(call.status.success(), "{}", text(&call));
    let seen = sandbox.seen_lines();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].ends_with("key=public-value"), "{seen:?}");
    let server: u32 = seen[0].split(' ').next().unwrap().parse().unwrap();

    sandbox.project_server("${AWS_SECRET_ACCESS_KEY}");
    let log = sandbox.log_says("config changed:");
    assert!(
        log.contains("server `p` is not started")
            && log.contains("env API_KEY changed")
            && log.contains("stopped until approved p"),
        "{log}"
    );
    assert!(
        !sandbox
            .seen_lines()
            .iter()
            .any(|l| l.contains("aws-secret-value")),
        "restarted with the new value: {:?}",
        sandbox.seen_lines()
    );
    assert!(
        exited(server),
        "the changed server (pid {server}) still runs"
    );
    let call = sandbox.with_keys(&["call", "p/echo", r#"{"text":"changed"}"#]);
    assert_eq!(call.status.code(), Some(1), "{}", text(&call));
    assert!(
        text(&call).contains("env API_KEY changed"),
        "{}",
        text(&call)
    );
    assert_eq!(sandbox.seen_lines().len(), 1, "{:?}", sandbox.seen_lines());
}

/// Finding 9 of issue 28: `untrust` reaches the running session: the
/// server is stopped and calls are refused, the session not restarted.
#[test]
fn untrust_stops_the_server_in_the_running_session() {
    let sandbox = Sandbox::new("untrust");
    sandbox.project_server("plain");
    assert!(sandbox.with_keys(&["approve", "p"]).status.success());
    let up = sandbox.with_keys(&["up"]);
    assert!(up.status.success(), "{}", text(&up));
    let session = sandbox.pid().expect("the pid file");
    let call = sandbox.with_keys(&["call", "p/echo", r#"{"text":"approved"}"#]);
    assert!(call.status.success(), "{}", text(&call));
    let seen = sandbox.seen_lines();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let server: u32 = seen[0].split(' ').next().unwrap().parse().unwrap();

    let untrust = sandbox.with_keys(&["untrust", "p"]);
    assert!(untrust.status.success(), "{}", text(&untrust));
    let log = sandbox.log_says("config changed:");
    assert!(log.contains("stopped until approved p"), "{log}");
    assert!(
        exited(server),
        "the revoked server (pid {server}) still runs"
    );
    let call = sandbox.with_keys(&["call", "p/echo", r#"{"text":"revoked"}"#]);
    assert_eq!(call.status.code(), Some(1), "{}", text(&call));
    assert!(
        text(&call).contains("switchboard approve p"),
        "{}",
        text(&call)
    );
    // The session's own list no longer has its tools.
    let tools = sandbox.with_keys(&["tools", "--json"]);
    assert!(!String::from_utf8_lossy(&tools.stdout).contains("p__echo"));
    assert_eq!(sandbox.seen_lines().len(), 1, "{:?}", sandbox.seen_lines());
    assert_eq!(sandbox.pid(), Some(session), "the session was restarted");
}

/// `--config FILE call` reaches FILE's server, not the session's server of
/// that name.
#[test]
fn a_call_with_another_config_file_does_not_go_through_the_session() {
    let sandbox = Sandbox::new("other-config");
    let up = sandbox.switchboard(&["up"]);
    assert!(up.status.success(), "{}", text(&up));
    // The session starts its servers after `up` returns: a call through it
    // waits for its `t`, so the count below is settled.
    let first = sandbox.switchboard(&["call", "t/echo", r#"{"text":"session's"}"#]);
    assert!(first.status.success(), "{}", text(&first));
    let session_spawns = sandbox.spawns();
    assert_eq!(session_spawns.len(), 1, "{session_spawns:?}");
    let other = sandbox.home.root.join("other.toml");
    let marker = sandbox.home.root.join("other-spawns");
    std::fs::write(
        &other,
        format!(
            "[servers.t]\ncommand = \"sh\"\nargs = [\"-c\", \"echo $$ >> '{}'; exec '{BIN}' __testserver\"]\n",
            marker.display()
        ),
    )
    .unwrap();
    let call = sandbox.switchboard(&[
        "--config",
        other.to_str().unwrap(),
        "call",
        "t/echo",
        r#"{"text":"file's"}"#,
    ]);
    assert!(call.status.success(), "{}", text(&call));
    assert_eq!(
        std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .lines()
            .count(),
        1,
        "the call went to the session's `t`"
    );
    assert_eq!(sandbox.spawns(), session_spawns);
}

#[test]
fn an_idle_period_past_the_clock_is_refused_with_a_clear_error() {
    let sandbox = Sandbox::new("idle-max");
    let up = sandbox.switchboard(&["up", "--idle", "18446744073709551615s"]);
    assert!(!up.status.success(), "{}", text(&up));
    assert!(text(&up).contains("at most 365d"), "{}", text(&up));
    assert!(!text(&up).contains("panicked"), "{}", text(&up));
    assert_eq!(sandbox.pid(), None);
}

#[test]
fn a_projects_session_serves_its_subdirectories_and_another_project_gets_its_own() {
    let sandbox = Sandbox::new("projects");
    let up = sandbox.switchboard(&["up"]);
    assert!(up.status.success(), "{}", text(&up));
    // From a subdirectory of the project (the git checkout): the same
    // session, found running, and used.
    let sub = sandbox.home.work().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let again = sandbox
        .command()
        .current_dir(&sub)
        .arg("up")
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again));
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(said.contains("already running"), "{}", text(&again));
    assert!(
        said.contains(&*sandbox.home.work().to_string_lossy()),
        "the project is named: {}",
        text(&again)
    );
    let call = sandbox
        .command()
        .current_dir(&sub)
        .args(["call", "t/echo", r#"{"text":"from below"}"#])
        .output()
        .unwrap();
    assert!(call.status.success(), "{}", text(&call));
    assert_eq!(sandbox.spawns().len(), 1, "spawns: {:?}", sandbox.spawns());
    // Another project (another checkout): `up` there starts its own
    // session; not "already running", then ignored.
    let other = sandbox.home.root.join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    let up_other = sandbox
        .command()
        .current_dir(&other)
        .arg("up")
        .output()
        .unwrap();
    assert!(up_other.status.success(), "{}", text(&up_other));
    assert!(
        String::from_utf8_lossy(&up_other.stdout).contains("the session is up"),
        "{}",
        text(&up_other)
    );
    assert_eq!(sandbox.sessions().len(), 2, "{:?}", sandbox.sessions());
    let call = sandbox
        .command()
        .current_dir(&other)
        .args(["call", "t/echo", r#"{"text":"other"}"#])
        .output()
        .unwrap();
    assert!(call.status.success(), "{}", text(&call));
    assert_eq!(sandbox.spawns().len(), 2, "spawns: {:?}", sandbox.spawns());
    // `down` there stops that one only.
    let down = sandbox
        .command()
        .current_dir(&other)
        .arg("down")
        .output()
        .unwrap();
    assert!(down.status.success(), "{}", text(&down));
    let call = sandbox
        .command()
        .current_dir(&sub)
        .args(["call", "t/echo", r#"{"text":"still"}"#])
        .output()
        .unwrap();
    assert!(call.status.success(), "{}", text(&call));
    assert_eq!(sandbox.spawns().len(), 2, "spawns: {:?}", sandbox.spawns());
}

/// `shell` works with the session's servers when the session runs them
/// as the shell would start them: it starts none of its own, and every
/// command says what it says without the session (the same transcript,
/// timings aside).
#[test]
fn the_shell_uses_the_session_and_says_what_it_says_without_it() {
    let sandbox = Sandbox::new("shell");
    let base = sandbox.base();
    let credentials = sandbox.home.root.join("credentials.json");
    let script = [
        "servers",
        "tools",
        "call t__echo text=through",
        "call t/echo text=again",
        "call t__ech",
        "read t test://static/hello",
        "read t test://no/such",
        "read nosuch test://static/hello",
        "prompt t/greeting name=Ada",
        "prompt t/nosuch",
    ];
    let transcript = |session: bool| {
        let mut env = vec![
            ("SWITCHBOARD_SESSION_DIR", base.to_str().unwrap()),
            ("SWITCHBOARD_CREDENTIALS", credentials.to_str().unwrap()),
        ];
        if !session {
            env.push(("SWITCHBOARD_NO_SESSION", "1"));
        }
        let mut terminal = support::pty::Terminal::start(
            &["shell"],
            &sandbox.home.work(),
            &sandbox.home.home(),
            &env,
        );
        terminal.expect("switchboard> ");
        let greeting = terminal.seen.clone();
        for (done, line) in script.iter().enumerate() {
            terminal.send(&format!("{line}\r"));
            terminal.expect_times("switchboard> ", done + 2);
        }
        terminal.send("exit\r");
        let (code, seen) = terminal.finish();
        assert_eq!(code, 0, "{seen}");
        // Numbers (timings among them) masked: each run of digits and
        // dots is one `#`.
        let mut commands = String::new();
        // From the first command's echo: where the greeting's last
        // escape sequences end depends on how the terminal's bytes came.
        let start = greeting.len() + seen[greeting.len()..].find(script[0]).unwrap_or(0);
        let mut chars = seen[start..].chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_digit() {
                while chars.next_if(|c| c.is_ascii_digit() || *c == '.').is_some() {}
                commands.push('#');
            } else {
                commands.push(c);
            }
        }
        (greeting, commands)
    };

    let (alone, without) = transcript(false);
    assert!(!alone.contains("session"), "{alone}");
    assert_eq!(sandbox.spawns().len(), 1, "spawns: {:?}", sandbox.spawns());
    for said in [
        "t  ready",
        "t__echo",
        "through",
        "again",
        "did you mean `t__echo`?",
        "Hello, world!",
        "test://no/such",
        "no server `nosuch`",
        "Hello, Ada!",
        "prompts/get",
    ] {
        assert!(without.contains(said), "{said:?} missing from:\n{without}");
    }

    let up = sandbox.switchboard(&["up"]);
    assert!(up.status.success(), "{}", text(&up));
    // The session's server is started (a call through it waits for that).
    let call = sandbox.switchboard(&["call", "t/echo", r#"{"text":"ready"}"#]);
    assert!(call.status.success(), "{}", text(&call));
    assert_eq!(sandbox.spawns().len(), 2, "spawns: {:?}", sandbox.spawns());
    let (greeting, through) = transcript(true);
    assert!(
        greeting.contains("the background session's servers"),
        "{greeting}"
    );
    // No server of the shell's own: the session's served every command.
    assert_eq!(sandbox.spawns().len(), 2, "spawns: {:?}", sandbox.spawns());
    assert_eq!(through, without);
}
