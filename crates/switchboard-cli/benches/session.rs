//! A whole `switchboard call SERVER/TOOL` process, wall time, with the
//! background session up (`switchboard up`) against the same call without
//! it (the CLI starts the server itself), same run. Issue 20's goal: ≤ 50 ms
//! with the session.
//!
//! ```sh
//! cargo bench -p switchboard-cli --bench session             # 30 calls each
//! cargo bench -p switchboard-cli --bench session -- --calls 100
//! ```
//!
//! The servers: the bundled test server over stdio (`t`, which starts in a
//! few milliseconds) and, when `scripts/install-interop.sh` has installed
//! it, the npm reference server `everything` (Node: what a real server's
//! start costs).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench" || a == "--calls");
    let calls: usize = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(if bench { 30 } else { 2 });

    let root =
        std::env::temp_dir().join(format!("switchboard-session-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let config = root.join("home/.config/switchboard/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::create_dir_all(root.join("work")).unwrap();
    let cache = std::env::var_os("SWITCHBOARD_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.cache"));
    let everything =
        cache.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut toml = format!("[servers.t]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\n");
    if everything.exists() {
        toml.push_str(&format!(
            "\n[servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            everything.display().to_string()
        ));
    }
    std::fs::write(&config, toml).unwrap();
    let run = |args: &[&str], session: bool| -> Duration {
        let mut command = Command::new(BIN);
        command
            .current_dir(root.join("work"))
            .env("HOME", root.join("home"))
            .env("SWITCHBOARD_CREDENTIALS", root.join("credentials.json"))
            .env("SWITCHBOARD_SESSION_DIR", root.join("session"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("SWITCHBOARD_CONFIG")
            .args(args);
        if !session {
            command.env("SWITCHBOARD_NO_SESSION", "1");
        }
        let started = Instant::now();
        let output = command.output().expect("switchboard runs");
        let took = started.elapsed();
        assert!(
            output.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        took
    };
    let mut targets = vec![("t/echo", r#"{"text":"hi"}"#)];
    if everything.exists() {
        targets.push(("everything/echo", r#"{"message":"hi"}"#));
    } else {
        eprintln!(
            "session bench: {} is not installed (scripts/install-interop.sh): the bundled server only",
            everything.display()
        );
    }
    let measure = |target: &str, arguments: &str, session: bool| -> Vec<Duration> {
        let call = ["call", target, arguments];
        run(&call, session); // warm-up: caches, page cache
        let mut samples: Vec<Duration> = (0..calls).map(|_| run(&call, session)).collect();
        samples.sort();
        samples
    };
    let without: Vec<Vec<Duration>> = targets
        .iter()
        .map(|(target, arguments)| measure(target, arguments, false))
        .collect();
    run(&["up"], true);
    let with: Vec<Vec<Duration>> = targets
        .iter()
        .map(|(target, arguments)| measure(target, arguments, true))
        .collect();
    run(&["down"], true);
    let _ = std::fs::remove_dir_all(PathBuf::from(&root));

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let p = |samples: &[Duration], q: f64| ms(samples[((samples.len() - 1) as f64 * q) as usize]);
    println!("session bench: {calls} calls each, whole `switchboard call` processes, wall time");
    println!();
    println!(
        "| call | without the session: p50 / p90 | with `switchboard up`: p50 / p90 | goal ≤ 50 ms |"
    );
    println!("|---|---|---|---|");
    for (i, (target, _)) in targets.iter().enumerate() {
        let verdict = if p(&with[i], 0.5) <= 50.0 {
            "PASS"
        } else {
            "MISS"
        };
        println!(
            "| `{target}` | {:.1} / {:.1} ms | {:.1} / {:.1} ms | {verdict} |",
            p(&without[i], 0.5),
            p(&without[i], 0.9),
            p(&with[i], 0.5),
            p(&with[i], 0.9)
        );
    }
}
