//! The stdio transport against real processes (`sh`, `cat`, `env`, `seq`).
#![cfg(all(unix, feature = "stdio"))]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use switchboard::transport::stdio::{INHERITED_ENV, StdioConfig};
use switchboard::transport::{Connection, Connector, TransportError};

/// Generous bound for anything that should happen at once.
const PATIENCE: Duration = Duration::from_secs(10);

fn sh(script: &str) -> StdioConfig {
    StdioConfig::new("sh").arg("-c").arg(script)
}

async fn connect(config: &StdioConfig) -> Connection {
    config.connect().await.expect("spawn")
}

async fn recv(connection: &mut Connection) -> Result<Option<Vec<u8>>, TransportError> {
    let incoming = tokio::time::timeout(PATIENCE, connection.stream.recv())
        .await
        .expect("recv timed out")?;
    Ok(incoming.map(|incoming| incoming.into_message().expect("a message, not a report")))
}

async fn recv_line(connection: &mut Connection) -> String {
    let message = recv(connection).await.expect("recv").expect("a message");
    String::from_utf8(message).expect("utf-8")
}

/// Reads `leader grandchild` pids printed by [`WITH_GRANDCHILD`].
async fn recv_pids(connection: &mut Connection) -> [u32; 2] {
    let line = recv_line(connection).await;
    let pids: Vec<u32> = line.split(' ').map(|p| p.parse().expect("pid")).collect();
    assert!(alive(pids[0]) && alive(pids[1]), "both started: {line}");
    [pids[0], pids[1]]
}

/// A server whose background child keeps stdout open: only killing the
/// whole process group ends it.
const WITH_GRANDCHILD: &str = r#"sleep 300 & echo "$$ $!"; exec cat"#;

/// Whether `pid` still exists. A zombie counts as alive when it is our own
/// child (we failed to reap it); an orphaned zombie is dead, waiting only for
/// init.
fn alive(pid: u32) -> bool {
    let (state, ppid) = if cfg!(target_os = "linux") {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        let after_comm = &stat[stat.rfind(')').expect("stat format") + 2..];
        let mut fields = after_comm.split(' ');
        let state = fields.next().expect("state").to_owned();
        let ppid: u32 = fields.next().expect("ppid").parse().expect("ppid");
        (state, ppid)
    } else {
        let out = std::process::Command::new("ps")
            .args(["-o", "stat=,ppid=", "-p", &pid.to_string()])
            .output()
            .expect("ps");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut fields = text.split_whitespace();
        let Some(state) = fields.next() else {
            return false;
        };
        (
            state.to_owned(),
            fields.next().expect("ppid").parse().expect("ppid"),
        )
    };
    !(state.starts_with('Z') && ppid != std::process::id())
}

fn wait_gone(pids: &[u32], within: Duration) {
    let deadline = Instant::now() + within;
    while pids.iter().any(|&pid| alive(pid)) {
        assert!(
            Instant::now() < deadline,
            "still running after {within:?}: {:?}",
            pids.iter().filter(|&&pid| alive(pid)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test]
async fn echo_round_trip_through_cat() {
    let mut connection = connect(&StdioConfig::new("cat")).await;
    for id in 0..100 {
        let message = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        connection.sink.send(message.as_bytes()).await.unwrap();
    }
    for id in 0..100 {
        let expected = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        assert_eq!(recv_line(&mut connection).await, expected);
    }

    // Larger than both pipe buffers: sending and receiving must overlap.
    let big = format!(r#"{{"data":"{}"}}"#, "x".repeat(4 << 20));
    let sink = connection.sink.clone();
    let (sent, received) = tokio::join!(sink.send(big.as_bytes()), recv(&mut connection));
    sent.unwrap();
    assert_eq!(received.unwrap().unwrap(), big.as_bytes());

    connection.sink.close().await;
    assert!(recv(&mut connection).await.unwrap().is_none());
}

#[tokio::test]
async fn every_non_empty_line_is_passed_through() {
    let mut connection = connect(&sh(r#"printf 'not json\r\n\n{"a":1}\n'; exec cat"#)).await;
    assert_eq!(recv_line(&mut connection).await, "not json");
    assert_eq!(recv_line(&mut connection).await, r#"{"a":1}"#);
}

#[tokio::test]
async fn over_long_line_fails_with_the_limit_and_setting() {
    // The line never ends: the error must come from its first bytes past
    // the limit.
    let config = sh(r#"echo '{"ok":1}'; head -c 5000 /dev/zero | tr '\0' x; sleep 300"#)
        .max_message_size(1000);
    let mut connection = connect(&config).await;
    assert_eq!(recv_line(&mut connection).await, r#"{"ok":1}"#);
    let error = recv(&mut connection).await.unwrap_err();
    assert!(
        matches!(
            error,
            TransportError::MessageTooLarge {
                limit: 1000,
                setting: "max_message_size"
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("1000"), "{error}");
}

#[tokio::test]
async fn exit_is_reported_with_code_and_stderr_tail() {
    let script = r#"echo ready; read line; echo "first complaint" >&2; echo "fatal: config missing" >&2; exit 3"#;
    let mut connection = connect(&sh(script)).await;
    assert_eq!(recv_line(&mut connection).await, "ready");

    let started = Instant::now();
    connection.sink.send(b"{}").await.unwrap();
    let error = recv(&mut connection).await.unwrap_err();
    let elapsed = started.elapsed();
    let TransportError::Exited {
        status,
        stderr_tail,
    } = &error
    else {
        panic!("expected Exited, got {error:?}");
    };
    assert_eq!(status.code, Some(3));
    assert_eq!(stderr_tail, "first complaint\nfatal: config missing");
    assert_eq!(error.exit_status().and_then(|s| s.code), Some(3));
    assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");

    // Later calls give the same answer, and writing to the dead process
    // fails instead of hanging.
    assert!(matches!(
        recv(&mut connection).await,
        Err(TransportError::Exited { .. })
    ));
    let sent = tokio::time::timeout(PATIENCE, connection.sink.send(b"{}"))
        .await
        .expect("send to a dead process hung");
    assert!(sent.is_err());
}

#[tokio::test]
async fn stdout_closed_by_a_living_process_is_closed() {
    let mut connection = connect(&sh("exec >&-; sleep 300")).await;
    let started = Instant::now();
    let error = recv(&mut connection).await.unwrap_err();
    assert!(matches!(error, TransportError::Closed { .. }), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn unknown_command_is_a_spawn_error() {
    let config = StdioConfig::new("/nonexistent/switchboard-no-such-server").arg("--flag");
    let error = config.connect().await.unwrap_err();
    let TransportError::Spawn { command, .. } = &error else {
        panic!("expected Spawn, got {error:?}");
    };
    assert_eq!(command, "/nonexistent/switchboard-no-such-server --flag");
}

#[tokio::test]
async fn a_server_program_is_found_and_started_as_execvp_would() {
    // Found in the PATH the server gets, not only in the client's.
    let dir = std::env::temp_dir().join(format!("switchboard-path-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("sb-path-server");
    std::fs::write(&script, "#!/bin/sh\necho found\nexec cat\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", dir.display());
    let mut connection = connect(&StdioConfig::new("sb-path-server").env("PATH", &path)).await;
    assert_eq!(recv_line(&mut connection).await, "found");
    connection.sink.close().await;
    // Not in that PATH: no such file, named as such.
    let error = StdioConfig::new("sb-path-server")
        .connect()
        .await
        .unwrap_err();
    let TransportError::Spawn { source, .. } = &error else {
        panic!("expected Spawn, got {error:?}");
    };
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound, "{error}");
    // A NUL cannot reach `execve`: refused, nothing started.
    let error = StdioConfig::new("cat")
        .arg("a\0b")
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(error, TransportError::Spawn { .. }), "{error:?}");
    // A script without `#!` runs under /bin/sh, as `execvp` runs it.
    let plain = dir.join("sb-plain-script");
    std::fs::write(&plain, "echo plain \"$1\"\nexec cat\n").unwrap();
    std::fs::set_permissions(&plain, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut connection = connect(&StdioConfig::new(&plain).arg("arg")).await;
    assert_eq!(recv_line(&mut connection).await, "plain arg");
    connection.sink.close().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_server_starts_with_sigpipe_at_its_default_and_no_signal_blocked() {
    // This test process ignores SIGPIPE (Rust's runtime does); a server
    // must not inherit that, nor any blocked signal.
    let mut connection = connect(&sh(
        r#"grep -E '^Sig(Blk|Ign):' /proc/$$/status | tr '\t\n' '  '; echo; exec cat"#,
    ))
    .await;
    let line = recv_line(&mut connection).await;
    let mask = |name: &str, text: &str| {
        let words: Vec<&str> = text.split_whitespace().collect();
        let at = words.iter().position(|w| *w == name).expect(name);
        u64::from_str_radix(words[at + 1], 16).expect("a hex mask")
    };
    const SIGPIPE: u64 = 1 << (13 - 1);
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    assert_ne!(
        mask("SigIgn:", &own) & SIGPIPE,
        0,
        "the test itself ignores SIGPIPE"
    );
    assert_eq!(mask("SigBlk:", &line), 0, "{line}");
    assert_eq!(mask("SigIgn:", &line) & SIGPIPE, 0, "{line}");
    connection.sink.close().await;
}

/// Runs `env` and returns what it printed.
async fn child_env(config: StdioConfig) -> HashMap<String, String> {
    let mut connection = connect(&config).await;
    let mut vars = HashMap::new();
    loop {
        match recv(&mut connection).await {
            Ok(Some(line)) => {
                let line = String::from_utf8_lossy(&line).into_owned();
                if let Some((key, value)) = line.split_once('=') {
                    vars.insert(key.to_owned(), value.to_owned());
                }
            }
            Err(TransportError::Exited { status, .. }) if status.code == Some(0) => return vars,
            other => panic!("env failed: {other:?}"),
        }
    }
}

#[tokio::test]
async fn environment_is_a_whitelist_plus_configured() {
    // Cargo sets it for test runs; it is not on the whitelist.
    let parent_only = std::env::var("CARGO_MANIFEST_DIR").expect("run under cargo");
    let parent_path = std::env::var("PATH").expect("PATH");

    let vars = child_env(StdioConfig::new("env").env("SB_CONFIGURED", "hello")).await;
    assert_eq!(vars.get("SB_CONFIGURED").map(String::as_str), Some("hello"));
    assert_eq!(vars.get("PATH"), Some(&parent_path));
    assert!(!vars.contains_key("CARGO_MANIFEST_DIR"), "{vars:?}");
    for key in vars.keys() {
        assert!(
            INHERITED_ENV.contains(&key.as_str()) || key == "SB_CONFIGURED",
            "{key} leaked into the server"
        );
    }

    // A configured value overrides an inherited one.
    let vars = child_env(StdioConfig::new("env").env("PATH", "/sb/bin:/usr/bin:/bin")).await;
    assert_eq!(
        vars.get("PATH").map(String::as_str),
        Some("/sb/bin:/usr/bin:/bin")
    );

    let vars = child_env(
        StdioConfig::new("env")
            .inherit_env(true)
            .envs([("SB_CONFIGURED", "hello")]),
    )
    .await;
    assert_eq!(vars.get("CARGO_MANIFEST_DIR"), Some(&parent_only));
    assert_eq!(vars.get("SB_CONFIGURED").map(String::as_str), Some("hello"));
}

#[tokio::test]
async fn working_directory_is_configurable() {
    let dir = std::env::temp_dir().join(format!("switchboard-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut connection = connect(&sh("pwd -P; exec cat").cwd(&dir)).await;
    let printed = recv_line(&mut connection).await;
    assert_eq!(
        std::path::PathBuf::from(printed),
        dir.canonicalize().unwrap()
    );
    connection.sink.close().await;
    std::fs::remove_dir(&dir).unwrap();
}

#[tokio::test]
async fn each_connect_spawns_a_fresh_process() {
    let config = sh("echo $$; exec cat");
    assert_eq!(config.describe(), r#"sh -c "echo $$; exec cat""#);
    let mut first = connect(&config).await;
    let mut second = connect(&config).await;
    let first_pid = recv_line(&mut first).await;
    let second_pid = recv_line(&mut second).await;
    assert_ne!(first_pid, second_pid);
    first.sink.close().await;
    second.sink.send(b"still here").await.unwrap();
    assert_eq!(recv_line(&mut second).await, "still here");
}

#[tokio::test]
async fn dropping_the_connection_kills_child_and_grandchild() {
    let mut connection = connect(&sh(WITH_GRANDCHILD)).await;
    let pids = recv_pids(&mut connection).await;
    drop(connection);
    wait_gone(&pids, Duration::from_secs(2));
}

#[tokio::test]
async fn close_ends_child_and_grandchild() {
    let mut connection = connect(&sh(WITH_GRANDCHILD)).await;
    let pids = recv_pids(&mut connection).await;
    let started = Instant::now();
    connection.sink.close().await;
    // `cat` exits as soon as its input ends: no grace period was needed.
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    wait_gone(&pids, Duration::from_secs(2));

    // Idempotent, and both halves report the close.
    connection.sink.close().await;
    assert!(recv(&mut connection).await.unwrap().is_none());
    assert!(matches!(
        connection.sink.send(b"{}").await,
        Err(TransportError::ClosedByClient)
    ));
    drop(connection);
}

#[tokio::test]
async fn close_wakes_a_pending_recv() {
    let mut connection = connect(&StdioConfig::new("cat")).await;
    let sink = connection.sink.clone();
    let mut received = std::pin::pin!(recv(&mut connection));
    // Polled once, so that it is pending when the sink closes.
    tokio::select! {
        biased;
        early = &mut received => panic!("`cat` sent nothing, yet recv ended: {early:?}"),
        () = std::future::ready(()) => {}
    }
    sink.close().await;
    assert!(received.await.unwrap().is_none());
}

#[tokio::test]
async fn server_ignoring_stdin_and_sigterm_is_killed_after_the_grace() {
    let grace = Duration::from_millis(200);
    let script = "trap '' TERM; echo $$; while true; do sleep 0.1; done";
    let mut connection = connect(&sh(script).shutdown_grace(grace)).await;
    let pid: u32 = recv_line(&mut connection).await.parse().unwrap();

    let started = Instant::now();
    connection.sink.close().await;
    let elapsed = started.elapsed();
    // One grace after closing stdin, one after SIGTERM, then SIGKILL.
    assert!(elapsed >= grace * 2, "killed too early: {elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
    wait_gone(&[pid], Duration::from_secs(2));
}

#[test]
fn drop_after_the_runtime_shut_down_leaves_nothing_behind() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (connection, pids) = runtime.block_on(async {
        let mut connection = connect(&sh(WITH_GRANDCHILD)).await;
        let pids = recv_pids(&mut connection).await;
        (connection, pids)
    });
    drop(runtime);
    drop(connection);
    wait_gone(&pids, Duration::from_secs(2));
}

#[tokio::test]
async fn stderr_flood_keeps_the_tail_without_blocking_the_server() {
    // ~590 KB of stderr, far past the pipe buffer: the server would block
    // before "done" if stderr were not read.
    let config = sh("seq 1 100000 >&2; echo done; exec cat").stderr_capacity(4096);
    let mut connection = connect(&config).await;
    assert_eq!(recv_line(&mut connection).await, "done");

    let stderr = connection.stderr.clone().expect("stderr buffer");
    let deadline = Instant::now() + PATIENCE;
    while stderr.tail(1) != "100000" {
        assert!(Instant::now() < deadline, "tail: {:?}", stderr.tail(1));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(stderr.contents().len() <= 4096);
    assert!(stderr.dropped_bytes() > 500_000);
    assert_eq!(stderr.tail(2), "99999\n100000");
}

#[tokio::test]
async fn dropping_the_connection_lets_the_server_finish_its_exit_work() {
    // Dropping is as polite as `close`: the server sees the end of its input
    // and runs its exit path, instead of being killed mid-write.
    let marker = std::env::temp_dir().join(format!("switchboard-drop-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let script = format!(
        "echo ready; cat >/dev/null; sleep 0.2; echo saved > '{}'",
        marker.display()
    );
    let mut connection = connect(&sh(&script)).await;
    assert_eq!(recv_line(&mut connection).await, "ready");
    drop(connection);
    let deadline = Instant::now() + Duration::from_secs(3);
    while !marker.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let saved = std::fs::read_to_string(&marker).unwrap_or_default();
    let _ = std::fs::remove_file(&marker);
    assert_eq!(
        saved.trim(),
        "saved",
        "the server was killed before it finished"
    );
}

#[tokio::test]
async fn dropping_a_stubborn_server_still_ends_it_after_the_grace() {
    let grace = Duration::from_millis(200);
    let script = "trap '' TERM; echo $$; while true; do sleep 0.1; done";
    let mut connection = connect(&sh(script).shutdown_grace(grace)).await;
    let pid: u32 = recv_line(&mut connection).await.parse().unwrap();
    let started = Instant::now();
    drop(connection);
    wait_gone(&[pid], Duration::from_secs(3));
    assert!(
        started.elapsed() >= grace * 2,
        "killed before the grace: {:?}",
        started.elapsed()
    );
}
