//! Whole `switchboard` processes, wall time from spawn to exit, side by side
//! in one run (issue 30: "`call`, `tools`, `read`, `prompt` and `list` with
//! `up` each ≤ 15 ms p50 on the bundled test server; without `up`, `list`
//! of 8 servers ≤ 1.2× the slowest server's own start").
//!
//! Two parts, each printed as a Markdown table:
//!
//! - **With `up`** (a session over a config of one server, `t`, the
//!   bundled test server run as `switchboard __testserver`): `call`,
//!   `tools`, `read`, `prompt`, `list`, rounds interleaved, against two
//!   floors: the CLI's start alone (`switchboard --version`) and a
//!   hand-written minimal client (`benches/cli/floor.rs`: std only, this
//!   binary run again as a process) doing the same request through the
//!   same session socket; and, for scale, that client starting its own test
//!   server and doing the call over stdio (what a command costs without a
//!   session at best).
//! - **Without `up`**: `list` over 8 configured servers against each
//!   server's own start (spawn → the answers to `initialize` and
//!   `tools/list`, by the minimal client, alone) and against the minimal
//!   client starting all 8 at once (the floor on this machine's cores).
//!   The 8: the bundled test server (three plain, one behind `sleep 0.3`),
//!   and, when `scripts/install-interop.sh` installed them in
//!   `$SWITCHBOARD_CACHE` (default `.cache`), two copies of the npm
//!   reference server `everything` and the TypeScript SDK server of
//!   `interop/` (Node), and the Python SDK 2.3 server of `interop/`; what
//!   is missing is replaced by the test server behind a `sleep` of about
//!   that server's start, and the table says so.
//!
//! Each row also gives the CPU time per run (user + system, from
//! `/proc/self/stat`'s reaped children, so a command's servers count in
//! its figure) and, with `up`, the session's (the daemon and its server,
//! read from `/proc` around each run).
//!
//! ```sh
//! scripts/bench.sh cli [--quick]        # builds the CLI with the release profile
//! SWITCHBOARD_BIN=target/release/switchboard \
//!   cargo bench -p switchboard-testkit --bench cli -- [--quick] [--runs N] [--rounds N] [--only up|list]
//! ```
//!
//! The CLI is `SWITCHBOARD_BIN`, else the one beside this binary (this
//! bench's profile, if built). `cargo test` runs this binary without
//! `--bench`: a smoke run (2 runs a row, 1 round of `list`, the stand-ins
//! only), skipped when there is no CLI beside it. It reports misses; it does not assert.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "cli/floor.rs"]
mod floor;

/// Variables that say where the runner's own configuration lives.
const SCRUBBED: [&str; 8] = [
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
    "SWITCHBOARD_CONFIG",
    "CODEX_HOME",
    "GOOSE_CONFIG_DIR",
];

/// Issue 30's targets.
const UP_TARGET_MS: f64 = 15.0;
const LIST_TARGET_RATIO: f64 = 1.2;

struct Plan {
    bench: bool,
    runs: usize,
    rounds: usize,
    up: bool,
    list: bool,
}

fn plan(args: &[String]) -> Plan {
    let bench = args.iter().any(|a| a == "--bench");
    let mut plan = Plan {
        bench,
        runs: if bench { 100 } else { 2 },
        rounds: if bench { 10 } else { 1 },
        up: true,
        // Run as a test (`cargo test --all-targets`), a smoke of the `up`
        // rows only: the 8 servers' starts take seconds of CPU each.
        list: bench,
    };
    for (i, arg) in args.iter().enumerate() {
        let value = || args.get(i + 1).and_then(|v| v.parse().ok());
        match arg.as_str() {
            "--quick" => {
                plan.runs = 30;
                plan.rounds = 3;
            }
            "--runs" => plan.runs = value().unwrap_or(plan.runs),
            "--rounds" => plan.rounds = value().unwrap_or(plan.rounds),
            "--only" => {
                let only = args.get(i + 1).map_or("", String::as_str);
                plan.up = only.split(',').any(|o| o == "up");
                plan.list = only.split(',').any(|o| o == "list");
            }
            _ => {}
        }
    }
    plan
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--floor-socket") => floor::socket_main(&args[1..]),
        Some("--floor-stdio") => floor::stdio_main(&args[1..]),
        _ => {}
    }
    let plan = plan(&args);
    let Some(bin) = switchboard_bin() else {
        eprintln!(
            "cli bench: no switchboard binary (set SWITCHBOARD_BIN, or run scripts/bench.sh cli); skipped"
        );
        return;
    };
    eprintln!("cli bench: {}", bin.display());
    let mut failed = false;
    if plan.up {
        if let Err(error) = with_up(&plan, &bin) {
            eprintln!("cli bench, with `up`: {error}");
            failed = true;
        }
        println!();
    }
    if plan.list
        && let Err(error) = list_of_eight(&plan, &bin)
    {
        eprintln!("cli bench, `list` of 8: {error}");
        failed = true;
    }
    if failed && !plan.bench {
        std::process::exit(1);
    }
}

/// `SWITCHBOARD_BIN`, else `target/PROFILE/switchboard` beside this binary
/// (`target/PROFILE/deps/cli-HASH`).
fn switchboard_bin() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("SWITCHBOARD_BIN") {
        return Some(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("switchboard");
    bin.exists().then_some(bin)
}

/// Where `scripts/install-interop.sh` puts the servers.
fn cache() -> PathBuf {
    std::env::var_os("SWITCHBOARD_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache"))
}

fn interop(file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join(file)
        .display()
        .to_string()
}

/// A throwaway HOME (its user config), a project directory (a git
/// checkout) and a session directory; removed on drop, after stopping a
/// session started in it.
struct Sandbox {
    root: PathBuf,
    bin: PathBuf,
}

impl Sandbox {
    fn new(name: &str, bin: &Path, config: &str) -> Result<Sandbox, String> {
        let root = std::env::temp_dir().join(format!(
            "switchboard-cli-bench-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        let file = root.join("home/.config/switchboard/config.toml");
        std::fs::create_dir_all(file.parent().ok_or("no parent")?).map_err(fail)?;
        std::fs::create_dir_all(root.join("work/.git")).map_err(fail)?;
        std::fs::write(&file, config).map_err(fail)?;
        Ok(Sandbox {
            root,
            bin: bin.to_owned(),
        })
    }

    /// `program` in the project, with nothing of the runner's configuration.
    fn command(&self, program: &Path, args: &[String]) -> Command {
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(self.root.join("work"))
            .env("HOME", self.root.join("home"))
            .env(
                "SWITCHBOARD_CREDENTIALS",
                self.root.join("credentials.json"),
            )
            .env("SWITCHBOARD_SESSION_DIR", self.root.join("run"))
            .env_remove("SWITCHBOARD_NO_SESSION")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        for var in SCRUBBED {
            command.env_remove(var);
        }
        command
    }

    fn switchboard(&self, args: &[&str]) -> Command {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        self.command(&self.bin, &args)
    }

    /// The one session's directory below `run/`.
    fn session_dir(&self) -> Result<PathBuf, String> {
        std::fs::read_dir(self.root.join("run"))
            .map_err(fail)?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("session.sock").exists())
            .ok_or_else(|| "no session socket".to_owned())
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if self.session_dir().is_ok() {
            let _ = self
                .switchboard(&["down"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn fail(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// CPU ticks a second (`getconf CLK_TCK`; 100 on Linux).
fn ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// Fields 14.. of `/proc/PID/stat` (utime, stime, cutime, cstime), in ticks.
fn stat(pid: &str) -> Option<[u64; 4]> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<u64> = rest
        .split(' ')
        .skip(11)
        .take(4)
        .filter_map(|f| f.parse().ok())
        .collect();
    fields.try_into().ok()
}

/// CPU ticks of the children this process has reaped.
fn reaped() -> u64 {
    stat("self").map_or(0, |s| s[2] + s[3])
}

/// CPU ticks of `pid` and its live descendants.
fn tree(pid: u32) -> u64 {
    let own = stat(&pid.to_string()).map_or(0, |s| s[0] + s[1]);
    let children: u64 = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .map(tree)
        .sum();
    own + children
}

/// One row's samples.
#[derive(Default)]
struct Samples {
    wall: Vec<f64>,
    /// CPU ticks of the process (and what it reaped).
    cpu: u64,
    /// CPU ticks of the watched process tree (the session) meanwhile.
    watched: u64,
    /// Runs whose output missed what it should say.
    wrong: usize,
}

impl Samples {
    fn percentile(&self, p: f64) -> f64 {
        let mut sorted = self.wall.clone();
        sorted.sort_by(f64::total_cmp);
        if sorted.is_empty() {
            return f64::NAN;
        }
        let i = ((sorted.len() - 1) as f64 * p).round() as usize;
        sorted[i]
    }

    fn p50(&self) -> f64 {
        self.percentile(0.5)
    }

    fn p90(&self) -> f64 {
        self.percentile(0.9)
    }

    /// Milliseconds of CPU a run.
    fn cpu_ms(&self, ticks: u64, tps: f64) -> f64 {
        ticks as f64 * 1000.0 / tps / self.wall.len().max(1) as f64
    }
}

/// Runs `command` once, to its exit: its wall time in `samples`, its CPU,
/// the watched tree's CPU meanwhile, and whether its stdout says `expect`.
fn sample(
    samples: &mut Samples,
    command: &mut Command,
    watch: Option<u32>,
    expect: &dyn Fn(&str) -> bool,
) -> Result<(), String> {
    let cpu = reaped();
    let watched = watch.map_or(0, tree);
    let started = Instant::now();
    let output = command.output().map_err(fail)?;
    let wall = started.elapsed();
    samples.cpu += reaped() - cpu;
    samples.watched += watch.map_or(0, tree).saturating_sub(watched);
    if !output.status.success() {
        return Err(format!(
            "{:?} exited {}: {}{}",
            command.get_args().collect::<Vec<_>>(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if !expect(&String::from_utf8_lossy(&output.stdout)) {
        samples.wrong += 1;
    }
    samples.wall.push(wall.as_secs_f64() * 1000.0);
    Ok(())
}

/// A row of the table with `up`.
struct UpRow {
    id: &'static str,
    what: &'static str,
    program: PathBuf,
    args: Vec<String>,
    expect: &'static str,
    /// The id of the minimal client doing the same request.
    floor: Option<&'static str>,
    target: bool,
}

fn with_up(plan: &Plan, bin: &Path) -> Result<(), String> {
    let sandbox = Sandbox::new(
        "up",
        bin,
        &format!(
            "[servers.t]\ncommand = {:?}\nargs = [\"__testserver\"]\n",
            bin.display().to_string()
        ),
    )?;
    let up = sandbox.switchboard(&["up"]).output().map_err(fail)?;
    if !up.status.success() {
        return Err(format!("up: {}", String::from_utf8_lossy(&up.stderr)));
    }
    let dir = sandbox.session_dir()?;
    let socket = dir.join("session.sock").display().to_string();
    let daemon: u32 = std::fs::read_to_string(dir.join("session.pid"))
        .map_err(fail)?
        .trim()
        .parse()
        .map_err(fail)?;
    // The session's status says `t` is ready (it starts it in the
    // background; a command waits for it, the bench does not time that).
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(dir.join("servers.json")).is_ok_and(|s| s.contains("ready")) {
        if Instant::now() > deadline {
            return Err("the session's server did not become ready".to_owned());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let me = std::env::current_exe().map_err(fail)?;
    let s = |v: &[&str]| v.iter().map(|a| (*a).to_owned()).collect::<Vec<String>>();
    let floor = |method: &str, params: &str| s(&["--floor-socket", &socket, method, params]);
    let rows = vec![
        UpRow {
            id: "version",
            what: "`switchboard --version`: the CLI's start alone",
            program: bin.to_owned(),
            args: s(&["--version"]),
            expect: "switchboard",
            floor: None,
            target: false,
        },
        UpRow {
            id: "floor-call",
            what: "minimal client (std, no runtime): `tools/call t__echo` through the session socket",
            program: me.clone(),
            args: floor(
                "tools/call",
                r#"{"name":"t__echo","arguments":{"text":"hi"}}"#,
            ),
            expect: "hi",
            floor: None,
            target: false,
        },
        UpRow {
            id: "floor-tools",
            what: "minimal client: `tools/list` through the session socket",
            program: me.clone(),
            args: floor("tools/list", "{}"),
            expect: "t__echo",
            floor: None,
            target: false,
        },
        UpRow {
            id: "floor-read",
            what: "minimal client: `resources/read` through the session socket",
            program: me.clone(),
            args: floor("resources/read", r#"{"uri":"test://static/hello"}"#),
            expect: "Hello, world!",
            floor: None,
            target: false,
        },
        UpRow {
            id: "floor-prompt",
            what: "minimal client: `prompts/get t__greeting` through the session socket",
            program: me.clone(),
            args: floor(
                "prompts/get",
                r#"{"name":"t__greeting","arguments":{"name":"Ada"}}"#,
            ),
            expect: "Ada",
            floor: None,
            target: false,
        },
        UpRow {
            id: "floor-stdio-call",
            what: "minimal client starting its own test server: `tools/call echo` over stdio (no session)",
            program: me.clone(),
            args: s(&[
                "--floor-stdio",
                "tools/call",
                r#"{"name":"echo","arguments":{"text":"hi"}}"#,
                "--",
                &bin.display().to_string(),
                "__testserver",
            ]),
            expect: "hi",
            floor: None,
            target: false,
        },
        UpRow {
            id: "call",
            what: "`switchboard call t/echo '{\"text\":\"hi\"}'`",
            program: bin.to_owned(),
            args: s(&["call", "t/echo", r#"{"text":"hi"}"#]),
            expect: "hi",
            floor: Some("floor-call"),
            target: true,
        },
        UpRow {
            id: "tools",
            what: "`switchboard tools`",
            program: bin.to_owned(),
            args: s(&["tools"]),
            expect: "echo",
            floor: Some("floor-tools"),
            target: true,
        },
        UpRow {
            id: "read",
            what: "`switchboard read test://static/hello --server t`",
            program: bin.to_owned(),
            args: s(&["read", "test://static/hello", "--server", "t"]),
            expect: "Hello, world!",
            floor: Some("floor-read"),
            target: true,
        },
        UpRow {
            id: "prompt",
            what: "`switchboard prompt t/greeting --arg name=Ada`",
            program: bin.to_owned(),
            args: s(&["prompt", "t/greeting", "--arg", "name=Ada"]),
            expect: "Ada",
            floor: Some("floor-prompt"),
            target: true,
        },
        UpRow {
            id: "list",
            what: "`switchboard list`",
            program: bin.to_owned(),
            args: s(&["list"]),
            expect: "ready",
            floor: Some("floor-tools"),
            target: true,
        },
    ];
    let mut samples: Vec<Samples> = rows.iter().map(|_| Samples::default()).collect();
    let mut measure = |warm: bool| -> Result<(), String> {
        for (row, samples) in rows.iter().zip(samples.iter_mut()) {
            let expect = |out: &str| out.contains(row.expect);
            let mut command = sandbox.command(&row.program, &row.args);
            let mut scratch = Samples::default();
            let into = if warm { &mut scratch } else { samples };
            sample(into, &mut command, Some(daemon), &expect)?;
        }
        Ok(())
    };
    for _ in 0..3.min(plan.runs) {
        measure(true)?;
    }
    for _ in 0..plan.runs {
        measure(false)?;
    }
    let tps = ticks_per_second();
    let p50 = |id: &str| {
        rows.iter()
            .position(|r| r.id == id)
            .map_or(f64::NAN, |i| samples[i].p50())
    };
    let version = p50("version");
    println!(
        "### Whole processes with `up` (the bundled test server; {} runs a row, interleaved)",
        plan.runs
    );
    println!();
    println!(
        "| row | p50 ms | p90 ms | × `--version` | × minimal client | CPU ms/run: process; session | target | verdict |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (row, samples) in rows.iter().zip(&samples) {
        let floor = row
            .floor
            .map_or_else(String::new, |f| format!("{:.2}×", samples.p50() / p50(f)));
        let (target, verdict) = if row.target {
            let pass = samples.p50() <= UP_TARGET_MS && samples.wrong == 0;
            (
                format!("≤ {UP_TARGET_MS} ms p50"),
                if pass { "PASS" } else { "MISS" }.to_owned(),
            )
        } else {
            (String::new(), String::new())
        };
        let wrong = if samples.wrong > 0 {
            format!(" ({} runs said something else)", samples.wrong)
        } else {
            String::new()
        };
        println!(
            "| {}{wrong} | {:.2} | {:.2} | {:.2}× | {floor} | {:.2}; {:.2} | {target} | {verdict} |",
            row.what,
            samples.p50(),
            samples.p90(),
            samples.p50() / version,
            samples.cpu_ms(samples.cpu, tps),
            samples.cpu_ms(samples.watched, tps),
        );
    }
    println!();
    println!(
        "CPU: the process's own (with what it reaped: the server a command starts itself); \
         the session's: the daemon and its server while the row ran. \
         `list` starts nothing: it reads what the session says of `t`."
    );
    Ok(())
}

/// One of the 8 servers.
struct Server {
    name: String,
    command: Vec<String>,
    what: String,
}

/// The 8 servers a user might have: the bundled test server (three, and
/// one behind `sleep 0.3`), three Node servers, a Python SDK 2.3 server
/// (or the test server behind the `sleep` of about their start, when not
/// installed, or in a smoke run).
fn eight(bin: &Path, real: bool) -> (Vec<Server>, Vec<String>) {
    let mut notes = Vec::new();
    let bin = bin.display().to_string();
    let testserver = |name: &str, delay: Option<&str>, what: &str| Server {
        name: name.to_owned(),
        command: match delay {
            None => vec![bin.clone(), "__testserver".to_owned()],
            Some(delay) => vec![
                "sh".to_owned(),
                "-c".to_owned(),
                format!("sleep {delay}; exec '{bin}' __testserver"),
            ],
        },
        what: what.to_owned(),
    };
    let mut servers = vec![
        testserver("t1", None, "the bundled test server"),
        testserver("t2", None, "the bundled test server"),
        testserver("t3", None, "the bundled test server"),
        testserver(
            "t-slow",
            Some("0.3"),
            "the bundled test server behind `sleep 0.3`",
        ),
    ];
    let cache = cache();
    let everything =
        cache.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if real && node && everything.exists() {
        let entry = everything.display().to_string();
        for name in ["everything", "everything-2"] {
            servers.push(Server {
                name: name.to_owned(),
                command: vec!["node".to_owned(), entry.clone(), "stdio".to_owned()],
                what: "npm `@modelcontextprotocol/server-everything` (Node)".to_owned(),
            });
        }
        servers.push(Server {
            name: "ts-sdk".to_owned(),
            command: vec!["node".to_owned(), interop("ts_everything_server.mjs")],
            what: "a TypeScript SDK 1.x server (`interop/ts_everything_server.mjs`, Node)"
                .to_owned(),
        });
    } else {
        notes.push(format!(
            "Node or {} missing: three Node servers replaced by the test server behind `sleep 0.4`",
            everything.display()
        ));
        for name in ["everything", "everything-2", "ts-sdk"] {
            servers.push(testserver(
                name,
                Some("0.4"),
                "stand-in: the test server behind `sleep 0.4`",
            ));
        }
    }
    let python = cache.join("python-mcp-2.3.0/bin/python");
    if real && python.exists() {
        let python = python.display().to_string();
        servers.push(Server {
            name: "py".to_owned(),
            command: vec![
                python.clone(),
                interop("python_server.py"),
                "stdio".to_owned(),
            ],
            what: "Python SDK 2.3 (`interop/python_server.py`)".to_owned(),
        });
    } else {
        notes.push(format!(
            "{} missing: the Python server replaced by the test server behind `sleep 1`",
            python.display()
        ));
        servers.push(testserver(
            "py",
            Some("1"),
            "stand-in: the test server behind `sleep 1`",
        ));
    }
    (servers, notes)
}

fn list_of_eight(plan: &Plan, bin: &Path) -> Result<(), String> {
    let (servers, notes) = eight(bin, plan.bench);
    // Each its own `env`: identical entries would be one server (a
    // duplicate is skipped), and a server gets only the variables its entry
    // names besides the usual ones (the TypeScript one loads its SDK from
    // the cache).
    let cache = cache().display().to_string();
    let mut config = String::new();
    for server in &servers {
        let (program, args) = server.command.split_first().ok_or("no command")?;
        config.push_str(&format!(
            "[servers.{:?}]\ncommand = {program:?}\nargs = {args:?}\n\
             env = {{ SWITCHBOARD_BENCH_SERVER = {:?}, SWITCHBOARD_CACHE = {cache:?} }}\n\n",
            server.name, server.name
        ));
    }
    let sandbox = Sandbox::new("list8", bin, &config)?;
    // Every server ready once, before timing (a server that cannot start
    // here would make the ratio meaningless).
    let checked = sandbox
        .switchboard(&["list", "--json"])
        .env("SWITCHBOARD_NO_SESSION", "1")
        .output()
        .map_err(fail)?;
    let listed: serde_json::Value = serde_json::from_slice(&checked.stdout).map_err(fail)?;
    let ready = |listed: &serde_json::Value| {
        listed["servers"]
            .as_array()
            .map_or(0, |s| s.iter().filter(|s| s["state"] == "ready").count())
    };
    if ready(&listed) != servers.len() {
        eprintln!("cli bench: not every server is ready before timing: {listed}");
    }
    let mut own: Vec<Samples> = servers.iter().map(|_| Samples::default()).collect();
    let mut all = Samples::default();
    let mut list = Samples::default();
    let commands: Vec<Vec<String>> = servers.iter().map(|s| s.command.clone()).collect();
    let n = servers.len();
    for round in 0..=plan.rounds {
        let warm = round == 0;
        for (server, samples) in servers.iter().zip(own.iter_mut()) {
            let cpu = reaped();
            let took = floor::start(&server.command, Instant::now())?;
            if !warm {
                samples.cpu += reaped() - cpu;
                samples.wall.push(took.as_secs_f64() * 1000.0);
            }
        }
        let cpu = reaped();
        let took = floor::start_all(&commands)?;
        if !warm {
            all.cpu += reaped() - cpu;
            all.wall.push(took.as_secs_f64() * 1000.0);
        }
        let mut scratch = Samples::default();
        let into = if warm { &mut scratch } else { &mut list };
        let all_ready = |out: &str| out.matches(" ready ").count() >= n;
        let mut command = sandbox.switchboard(&["list"]);
        command.env("SWITCHBOARD_NO_SESSION", "1");
        sample(into, &mut command, None, &all_ready)?;
    }
    let tps = ticks_per_second();
    let (slowest, slowest_p50) = servers
        .iter()
        .zip(&own)
        .map(|(s, o)| (s.name.as_str(), o.p50()))
        .fold(("", 0.0), |a, b| if b.1 > a.1 { b } else { a });
    println!(
        "### `list` of 8 servers without `up` ({} round{}, interleaved; slowest own start: `{slowest}`)",
        plan.rounds,
        if plan.rounds == 1 { "" } else { "s" }
    );
    println!();
    println!("| row | p50 ms | p90 ms | × slowest own start | CPU ms/run | target | verdict |");
    println!("|---|---|---|---|---|---|---|");
    for (server, samples) in servers.iter().zip(&own) {
        println!(
            "| `{}`'s own start, alone: {} | {:.1} | {:.1} | {:.2}× | {:.1} | | |",
            server.name,
            server.what,
            samples.p50(),
            samples.p90(),
            samples.p50() / slowest_p50,
            samples.cpu_ms(samples.cpu, tps),
        );
    }
    println!(
        "| the 8 started at once by the minimal client (to the last answer) | {:.1} | {:.1} | {:.2}× | {:.1} | | |",
        all.p50(),
        all.p90(),
        all.p50() / slowest_p50,
        all.cpu_ms(all.cpu, tps),
    );
    let ratio = list.p50() / slowest_p50;
    let wrong = if list.wrong > 0 {
        format!(" ({} runs had a server not ready)", list.wrong)
    } else {
        String::new()
    };
    println!(
        "| `switchboard list` (no session), spawn to exit{wrong} | {:.1} | {:.1} | {ratio:.2}× | {:.1} | ≤ {LIST_TARGET_RATIO}× | {} |",
        list.p50(),
        list.p90(),
        list.cpu_ms(list.cpu, tps),
        if ratio <= LIST_TARGET_RATIO && list.wrong == 0 {
            "PASS"
        } else {
            "MISS"
        },
    );
    println!();
    println!(
        "Own start: spawn → the answers to `initialize` and `tools/list`, measured alone by \
         the minimal client. CPU: the process and the servers it started and reaped."
    );
    for note in notes {
        println!("- {note}");
    }
    Ok(())
}
