//! The team gateway: `switchboard serve --http` replicas sharing their
//! state in a real PostgreSQL the test starts (`--state URL
//! --state-key-file FILE`). Their audit records make one chain, which
//! `switchboard audit verify --database` checks, and which a change made
//! in the database breaks; a password on the command line and a key file
//! others can read are refused.
#![cfg(unix)]

use std::path::{Path, PathBuf};

use serde_json::json;
use switchboard::{Client, EraMode};
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
    let Some(postgres) = Postgres::start("team-audit") else {
        return;
    };
    let url = postgres.database("switchboard");
    let sandbox = Sandbox::new("team-audit");
    let key = key_file(&sandbox);
    let shared = [
        "--state",
        &url,
        "--state-key-file",
        key.to_str().unwrap(),
        "--audit-database",
    ];
    let replicas = [sandbox.http_gateway(&shared), sandbox.http_gateway(&shared)];
    let mut hosts = Vec::new();
    for (address, _) in &replicas {
        hosts.push(
            Client::builder()
                .era_mode(EraMode::Legacy)
                .connect(authed(address))
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
    for (_, mut child) in replicas {
        let _ = child.kill();
        let _ = child.wait();
    }
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
