//! Hostile and broken servers: no server (nor anything it started)
//! outlives the CLI, whichever way the CLI ends — a signal mid-call, a
//! timeout — for a server given after `--` and for a configured one.
//!
//! Each server here is `sh -c '…; exec switchboard __testserver --record
//! FILE'`: the shell writes its own pid (the server's, after `exec`) and
//! the pid of a `sleep` it leaves running in the background (a grandchild
//! of the CLI), and the recorded messages show when the call has arrived.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod support;

use support::{BIN, HttpServer};

/// A generous bound that only keeps a broken build from hanging the suite.
const PATIENCE: Duration = Duration::from_secs(30);

/// A HOME, a project directory and the servers' pid files, of one test.
struct Sandbox {
    root: PathBuf,
}

impl Sandbox {
    fn new(name: &str) -> Self {
        let root =
            std::env::temp_dir().join(format!("switchboard-hostile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("work/.git")).unwrap();
        Self { root }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The server command: records its pid and leaves a grandchild.
    fn server(&self) -> Vec<String> {
        self.server_with("")
    }

    /// [`Sandbox::server`] with more test-server flags.
    fn server_with(&self, flags: &str) -> Vec<String> {
        let script = format!(
            "echo $$ > '{server}'; sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > '{grandchild}'; \
             exec '{BIN}' __testserver --record '{record}' {flags}",
            server = self.file("server.pid").display(),
            grandchild = self.file("grandchild.pid").display(),
            record = self.file("record.jsonl").display(),
        );
        vec!["sh".into(), "-c".into(), script]
    }

    fn command(&self) -> Command {
        let mut command = support::isolated(
            &self.root.join("work"),
            &self.root.join("home"),
            &self.file("credentials.json"),
        );
        command.stdin(Stdio::null());
        command
    }

    /// Configures the server as `hostile` (switchboard's user file).
    fn configure(&self) {
        let mut args = vec![
            "add".to_owned(),
            "-s".into(),
            "user".into(),
            "hostile".into(),
        ];
        args.push("--".into());
        args.extend(self.server());
        let output = self.command().args(&args).output().unwrap();
        assert!(
            output.status.success(),
            "add: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// The CLI with `args`, then the server command after `--` unless
    /// `configured`.
    fn spawn(&self, args: &[&str], configured: bool) -> Running {
        self.spawn_with(
            args,
            configured.then(Vec::new).unwrap_or_else(|| self.server()),
        )
    }

    /// The CLI with `args`, then `server` after `--` unless it is empty.
    fn spawn_with(&self, args: &[&str], server: Vec<String>) -> Running {
        let mut command = self.command();
        command.args(args);
        if !server.is_empty() {
            command.arg("--").args(server);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read on a thread so that a full pipe never blocks the CLI.
        let (tx, stderr) = mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Running {
            child,
            stderr,
            seen: String::new(),
        }
    }

    /// Waits until the server has received a `tools/call`.
    fn wait_for_call(&self, running: &mut Running) {
        let record = self.file("record.jsonl");
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = std::fs::read_to_string(&record).unwrap_or_default();
            if text.contains("\"tools/call\"") {
                return;
            }
            if let Ok(Some(status)) = running.child.try_wait() {
                panic!(
                    "the CLI ended ({status}) before the call arrived:\n{}",
                    running.drain()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the server never received the call; CLI stderr:\n{}",
                running.drain()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pid(&self, name: &str) -> u32 {
        let text = std::fs::read_to_string(self.file(name))
            .unwrap_or_else(|e| panic!("{name} was not written: {e}"));
        text.trim()
            .parse()
            .unwrap_or_else(|e| panic!("{name}: {text:?}: {e}"))
    }

    /// The server and its grandchild are gone (dead or a zombie that no
    /// longer runs), within a bounded wait.
    fn assert_no_server_left(&self) {
        for name in ["server.pid", "grandchild.pid"] {
            let pid = self.pid(name);
            let deadline = Instant::now() + PATIENCE;
            while alive(pid) {
                assert!(
                    Instant::now() < deadline,
                    "{name} ({pid}) still runs after the CLI exited: {}",
                    std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // Whatever a failed test left running.
        for name in ["server.pid", "grandchild.pid"] {
            if let Ok(pid) = std::fs::read_to_string(self.file(name)) {
                let _ = Command::new("kill")
                    .args(["-KILL", pid.trim()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Running and not a zombie (a zombie has ended; only its parent's reaping
/// is missing, which is no concern of the CLI's once it has exited).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        // `pid (comm) S …`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
    }
}

struct Running {
    child: Child,
    stderr: mpsc::Receiver<String>,
    seen: String,
}

impl Running {
    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args(["-s", name, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -s {name}");
    }

    /// The CLI's exit, within a bounded wait.
    fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!("the CLI did not exit:\n{}", self.drain());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn drain(&mut self) -> String {
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_millis(200)) {
            self.seen.push_str(&line);
            self.seen.push('\n');
        }
        self.seen.clone()
    }
}

/// A call that would run for minutes.
const SLOW_CALL: [&str; 4] = ["call", "slow", "--arg", "ms=600000"];

fn signal_mid_call(name: &str, signal: &str, code: i32, configured: bool) {
    let sandbox = Sandbox::new(name);
    let target = if configured {
        sandbox.configure();
        "hostile/slow"
    } else {
        "slow"
    };
    let mut running = sandbox.spawn(&["call", target, "--arg", "ms=600000"], configured);
    sandbox.wait_for_call(&mut running);
    running.signal(signal);
    let status = running.wait();
    assert_eq!(
        status.code(),
        Some(code),
        "exit after SIG{signal}: {status}; stderr:\n{}",
        running.drain()
    );
    sandbox.assert_no_server_left();
}

#[test]
fn sigint_mid_call_stops_the_server_and_its_children_then_exits_130() {
    signal_mid_call("int", "INT", 130, false);
}

#[test]
fn sigterm_mid_call_stops_the_server_and_its_children_then_exits_143() {
    signal_mid_call("term", "TERM", 143, false);
}

#[test]
fn sighup_mid_call_stops_the_server_and_its_children_then_exits_129() {
    signal_mid_call("hup", "HUP", 129, false);
}

#[test]
fn sigint_mid_call_of_a_configured_server_stops_it_then_exits_130() {
    signal_mid_call("hub-int", "INT", 130, true);
}

#[test]
fn sigterm_mid_call_of_a_configured_server_stops_it_then_exits_143() {
    signal_mid_call("hub-term", "TERM", 143, true);
}

fn timeout(name: &str, configured: bool) {
    let sandbox = Sandbox::new(name);
    let mut args = SLOW_CALL.to_vec();
    if configured {
        sandbox.configure();
        args[1] = "hostile/slow";
    }
    args.extend(["--timeout", "1"]);
    let mut running = sandbox.spawn(&args, configured);
    let status = running.wait();
    let stderr = running.drain();
    assert_eq!(status.code(), Some(4), "{status}; stderr:\n{stderr}");
    sandbox.assert_no_server_left();
}

#[test]
fn a_timed_out_call_leaves_no_server_behind() {
    timeout("timeout", false);
}

#[test]
fn a_timed_out_call_of_a_configured_server_leaves_no_server_behind() {
    timeout("hub-timeout", true);
}

/// The CLI's stdout is a pipe whose reader reads `lines` lines, then
/// closes it (as `| head -n LINES` does).
fn reader_goes_away(name: &str, args: &[&str], flags: &str, lines: usize) {
    let sandbox = Sandbox::new(name);
    let mut running = sandbox.spawn_with(args, sandbox.server_with(flags));
    let mut stdout = BufReader::new(running.child.stdout.take().unwrap());
    for _ in 0..lines {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "stdout ended early: {}", running.drain());
    }
    drop(stdout);
    let status = running.wait();
    let stderr = running.drain();
    assert!(
        matches!(status.code(), Some(0 | 141)),
        "exit {status}; stderr:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.is_empty(), "not quiet: {stderr}");
    sandbox.assert_no_server_left();
}

#[test]
fn a_closed_stdout_ends_tools_quietly() {
    reader_goes_away("pipe-tools", &["tools"], "", 0);
}

#[test]
fn a_reader_that_stops_early_ends_a_big_json_output_quietly() {
    // Far more than a pipe's buffer.
    reader_goes_away("pipe-json", &["tools", "--json"], "--extra-tools 3000", 1);
}

/// `call blob` (an answer of `size` bytes and a little more) with
/// `--max-message-size`: refused when larger, naming the flag; accepted
/// when the flag allows it. `server` is what follows the tool's arguments.
fn message_size_limit(what: &str, sandbox: &Sandbox, target: &str, server: &[String]) {
    let run = |limit: &str| {
        let mut args = vec![
            "call",
            target,
            "--arg",
            "size=200000",
            "--max-message-size",
            limit,
        ];
        args.extend(server.iter().map(String::as_str));
        let mut running = sandbox.spawn_with(&args, Vec::new());
        // Read, so that a full pipe never blocks the CLI.
        let mut stdout = running.child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            std::io::copy(&mut stdout, &mut std::io::sink()).unwrap_or_default()
        });
        let status = running.wait();
        let _ = reader.join();
        (status, running.drain())
    };
    let (status, stderr) = run("100000");
    assert!(
        !status.success(),
        "{what}: a 200 kB answer passed a 100 kB limit"
    );
    assert!(
        stderr.contains("--max-message-size"),
        "{what}: the error does not name the flag to raise:\n{stderr}"
    );
    let (status, stderr) = run("1000000");
    assert!(status.success(), "{what}: {status}\n{stderr}");
}

#[test]
fn max_message_size_limits_every_transport_and_is_named_when_hit() {
    let sandbox = Sandbox::new("limit");
    let mut stdio = vec!["--".to_owned()];
    stdio.extend(sandbox.server());
    message_size_limit("stdio", &sandbox, "blob", &stdio);

    let http = HttpServer::start(&[]);
    let url = |path: &str| vec!["--url".to_owned(), format!("{}{path}", http.1)];
    message_size_limit("streamable HTTP", &sandbox, "blob", &url("/mcp"));
    let mut sse = url("/sse");
    sse.extend(["--transport".to_owned(), "sse".to_owned()]);
    message_size_limit("HTTP+SSE", &sandbox, "blob", &sse);
    let ws = vec![
        "--url".to_owned(),
        format!("{}/ws", http.1.replace("http://", "ws://")),
    ];
    message_size_limit("WebSocket", &sandbox, "blob", &ws);

    sandbox.configure();
    message_size_limit("configured", &sandbox, "hostile/blob", &[]);
}

#[test]
fn a_server_that_never_answers_the_probe_is_named_while_waiting() {
    let sandbox = Sandbox::new("probe");
    // A server still starting when the signal comes is stopped too.
    let script = format!(
        "echo $$ > '{}'; sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > '{}'; exec sleep 1000",
        sandbox.file("server.pid").display(),
        sandbox.file("grandchild.pid").display()
    );
    let server = vec!["sh".to_owned(), "-c".to_owned(), script];
    let mut running = sandbox.spawn_with(&["info"], server);
    let deadline = Instant::now() + PATIENCE;
    while !running.seen.contains("server/discover") {
        let left = deadline.saturating_duration_since(Instant::now());
        match running.stderr.recv_timeout(left) {
            Ok(line) => {
                running.seen.push_str(&line);
                running.seen.push('\n');
            }
            Err(_) => panic!("nothing said about the probe:\n{}", running.seen),
        }
    }
    assert!(
        running.seen.contains("waiting for sh -c"),
        "{}",
        running.seen
    );
    running.signal("INT");
    let status = running.wait();
    assert_eq!(status.code(), Some(130), "{}", running.drain());
    // Still starting when the signal came, and stopped all the same.
    sandbox.assert_no_server_left();
}

#[test]
fn a_connect_timeout_leaves_no_starting_server_behind() {
    let sandbox = Sandbox::new("connect-timeout");
    // Never answers `initialize`, and leaves a grandchild.
    let script = format!(
        "echo $$ > '{}'; sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > '{}'; exec sleep 1000",
        sandbox.file("server.pid").display(),
        sandbox.file("grandchild.pid").display()
    );
    let server = vec!["sh".to_owned(), "-c".to_owned(), script];
    let mut running = sandbox.spawn_with(&["info", "--era", "legacy", "--timeout", "1"], server);
    let status = running.wait();
    assert_eq!(status.code(), Some(4), "{}", running.drain());
    sandbox.assert_no_server_left();
}
