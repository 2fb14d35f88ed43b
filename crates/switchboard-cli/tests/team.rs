//! The team gateway: `switchboard serve --http` replicas sharing their
//! state in a real PostgreSQL the test starts (`--state URL
//! --state-key-file FILE`). Their audit records make one chain, which
//! `switchboard audit verify --database` checks, and which a change made
//! in the database breaks; a password on the command line and a key file
//! others can read are refused. Behind nginx (the sample config of
//! `docs/team-gateway.nginx.conf`, run as it is), two replicas serve one
//! host of each era round robin, and one killed mid-call fails that call
//! and no other.
#![cfg(unix)]

use std::path::{Path, PathBuf};

use serde_json::json;
use switchboard::{Client, EraMode};
use switchboard_testkit::nginx::Nginx;
use switchboard_testkit::postgres::Postgres;

#[allow(dead_code)] // the pty helpers are not used here
mod support;

use support::BIN;
use support::gateway::{Sandbox, authed};

/// A state key in a file of the sandbox's own, mode 0600.
fn key_file(sandbox: &Sandbox) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = sandbox.work().join("state.key");
    std::fs::write(&path, "0f".repeat(32)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// A replica, killed when dropped (a failed assertion leaves no gateway
/// running).
struct Replica {
    url: String,
    child: std::process::Child,
}

impl Replica {
    fn start(sandbox: &Sandbox, shared: &[&str]) -> Self {
        let (url, child) = sandbox.http_gateway(shared);
        Self { url, child }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh PostgreSQL, its database's URL, a sandbox and a state key
/// for `test`; `None` without PostgreSQL.
fn team(test: &str) -> Option<(Postgres, String, Sandbox, PathBuf)> {
    let postgres = Postgres::start(test)?;
    let url = postgres.database("switchboard");
    let sandbox = Sandbox::new(test);
    let key = key_file(&sandbox);
    Some((postgres, url, sandbox, key))
}

/// A session key in a file of the sandbox's own, mode 0600.
fn session_key_file(sandbox: &Sandbox) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = sandbox.work().join("session.key");
    std::fs::write(&path, "a5".repeat(32)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// `docs/team-gateway.nginx.conf` for replicas at `upstreams`
/// (`http://127.0.0.1:PORT/mcp`), in `prefix`, on `port`.
fn nginx_config(prefix: &Path, port: u16, upstreams: &[String]) -> String {
    let sample = include_str!("../../../docs/team-gateway.nginx.conf");
    let authority = |url: &str| {
        url.trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned()
    };
    let config = sample
        .replace("PREFIX", &prefix.display().to_string())
        .replace("LISTEN", &format!("127.0.0.1:{port}"))
        .replace("127.0.0.1:8001", &authority(&upstreams[0]))
        .replace("127.0.0.1:8002", &authority(&upstreams[1]));
    assert!(
        !config.contains(":800"),
        "the sample's upstreams changed: {config}"
    );
    config
}

/// A replica's Prometheus text.
async fn metrics(replica: &str) -> String {
    let url = replica.replace("/mcp", "/metrics");
    reqwest::Client::new()
        .get(url)
        .bearer_auth(support::gateway::TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// A metric's value for `server` in Prometheus text.
fn metric(text: &str, name: &str, server: &str) -> u64 {
    let line = format!("{name}{{server=\"{server}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&line))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn verify(sandbox: &Sandbox, url: &str, key: &Path) -> (bool, String) {
    let output = sandbox
        .host(BIN)
        .args(["audit", "verify", "--database", url, "--state-key-file"])
        .arg(key)
        .output()
        .unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

#[tokio::test]
async fn two_replicas_write_one_audit_chain_in_the_database() {
    let Some((postgres, url, sandbox, key)) = team("team-audit") else {
        return;
    };
    let shared = [
        "--state",
        &url,
        "--state-key-file",
        key.to_str().unwrap(),
        "--audit-database",
    ];
    let replicas = [
        Replica::start(&sandbox, &shared),
        Replica::start(&sandbox, &shared),
    ];
    let mut hosts = Vec::new();
    for replica in &replicas {
        hosts.push(
            Client::builder()
                .era_mode(EraMode::Legacy)
                .connect(authed(&replica.url))
                .await
                .unwrap(),
        );
    }
    // Calls alternate between the replicas.
    for n in 0..6 {
        let text = format!("hunter{n}");
        hosts[n % 2]
            .call_tool("old__echo", json!({ "text": text }).as_object().cloned())
            .await
            .unwrap();
    }
    for host in hosts {
        host.close().await;
    }
    let (intact, said) = verify(&sandbox, &url, &key);
    assert!(intact, "{said}");
    assert!(said.contains("intact: 6 records"), "{said}");
    // One order, both replicas' records in it; no argument in the clear.
    let records = postgres.psql(
        "switchboard",
        "SELECT record FROM switchboard_audit ORDER BY seq",
    );
    assert_eq!(records.lines().count(), 6, "{records}");
    assert!(!records.contains("hunter"), "{records}");
    // A record edited in the database: the chain breaks right after it.
    postgres.psql(
        "switchboard",
        "UPDATE switchboard_audit SET record = replace(record, '\"ok\"', '\"tool_error\"') WHERE seq = 3",
    );
    let (intact, said) = verify(&sandbox, &url, &key);
    assert!(!intact, "{said}");
    assert!(said.contains("breaks at record 4"), "{said}");
    drop(replicas);
}

#[test]
fn a_password_on_the_command_line_and_an_open_key_file_are_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let sandbox = Sandbox::new("team-refused");
    let key = key_file(&sandbox);
    let serve = |url: &str| {
        sandbox
            .host(BIN)
            .args(["serve", "--http", "127.0.0.1:0", "--state", url])
            .arg("--state-key-file")
            .arg(&key)
            .arg("--audit-database")
            .env("SWITCHBOARD_TOKEN", support::gateway::TOKEN)
            .output()
            .unwrap()
    };
    let refused = serve("postgres://team:s3cret-pw@db.example/switchboard");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("password"), "{said}");
    assert!(!said.contains("s3cret-pw"), "the password repeated: {said}");
    // --state alone says that it shares nothing yet.
    let alone = sandbox
        .host(BIN)
        .args(["serve", "--http", "127.0.0.1:0", "--state"])
        .arg("postgres://team@localhost/switchboard?host=/nonexistent")
        .arg("--state-key-file")
        .arg(&key)
        .env("SWITCHBOARD_TOKEN", support::gateway::TOKEN)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&alone.stderr);
    assert!(
        said.contains("--state shares nothing without --audit-database"),
        "{said}"
    );
    // The database cannot be reached (exit 4), each cause said once.
    assert_eq!(alone.status.code(), Some(4), "{said}");
    assert_eq!(
        said.matches("No such file or directory").count(),
        1,
        "{said}"
    );
    // A key others can read is not a key.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = serve("postgres://team@localhost/switchboard?host=/nonexistent");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("open to other users"), "{said}");
    // --audit-database without --state says what is missing.
    let output = sandbox
        .host(BIN)
        .args(["serve", "--audit-database"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--state"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_behind_nginx_serve_both_eras_and_one_dying_fails_only_its_call() {
    let Some((_postgres, url, sandbox, key)) = team("team-nginx") else {
        return;
    };
    let session_key = session_key_file(&sandbox);
    let shared = [
        "--state",
        &url,
        "--state-key-file",
        key.to_str().unwrap(),
        "--audit-database",
        "--session-key-file",
        session_key.to_str().unwrap(),
    ];
    let mut replicas = vec![
        Replica::start(&sandbox, &shared),
        Replica::start(&sandbox, &shared),
    ];
    let upstreams: Vec<String> = replicas.iter().map(|r| r.url.clone()).collect();
    let Some(nginx) = Nginx::start("team-nginx", |prefix, port| {
        nginx_config(prefix, port, &upstreams)
    }) else {
        return;
    };
    let front = format!("http://127.0.0.1:{}/mcp", nginx.port());
    let legacy = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(authed(&front))
        .await
        .unwrap();
    let modern = Client::builder()
        .era_mode(EraMode::Modern)
        .connect(authed(&front))
        .await
        .unwrap();
    // Round robin: the session's requests land on both replicas, which
    // serve it from its sealed id (three calls a round, so each host's
    // calls alternate between the two).
    for n in 0..6 {
        let text = format!("call {n}");
        for (host, tool) in [
            (&legacy, "old__echo"),
            (&modern, "new__echo"),
            (&modern, "new__echo"),
        ] {
            let result = host
                .call_tool(tool, json!({ "text": text }).as_object().cloned())
                .await
                .unwrap_or_else(|e| panic!("{tool} {n}: {e:#}\nnginx: {}", nginx.log()));
            assert!(
                serde_json::to_string(&result.content)
                    .unwrap()
                    .contains(&text)
            );
        }
    }
    for replica in &replicas {
        let text = metrics(&replica.url).await;
        assert!(
            metric(&text, "switchboard_calls_total", "old") > 0
                && metric(&text, "switchboard_calls_total", "new") > 0,
            "{} served no call of one era:\n{text}",
            replica.url
        );
    }

    // A slow call; the replica running it is killed.
    let slow = {
        let legacy = legacy.clone();
        tokio::spawn(async move {
            legacy
                .call_tool("old__slow", json!({"ms": 120_000}).as_object().cloned())
                .await
        })
    };
    let running = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            for (n, replica) in replicas.iter().enumerate() {
                if metric(
                    &metrics(&replica.url).await,
                    "switchboard_calls_in_flight",
                    "old",
                ) > 0
                {
                    return n;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the slow call never started on a replica");
    drop(replicas.remove(running));
    let failed = tokio::time::timeout(std::time::Duration::from_secs(30), slow)
        .await
        .expect("the call on the killed replica never ended")
        .unwrap();
    assert!(failed.is_err(), "{failed:?}");
    // The next calls go to the replica left, in the same session.
    for n in 0..3 {
        let text = format!("after {n}");
        for (host, tool) in [(&legacy, "old__echo"), (&modern, "new__echo")] {
            let result = host
                .call_tool(tool, json!({ "text": text }).as_object().cloned())
                .await
                .unwrap_or_else(|e| panic!("{tool} after the kill: {e:#}"));
            assert!(
                serde_json::to_string(&result.content)
                    .unwrap()
                    .contains(&text)
            );
        }
    }
    legacy.close().await;
    modern.close().await;
    // One chain, records of both replicas in it, intact.
    let (intact, said) = verify(&sandbox, &url, &key);
    assert!(intact, "{said}");
}
