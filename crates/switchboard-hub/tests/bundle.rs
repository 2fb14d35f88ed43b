//! The testkit's good bundle unpacked and run for real: `node` on the
//! entry point that [`bundle::entry`] gives lists its tools and sees the
//! secret it was given (resolved here as the CLI resolves the reference).
//! Skips with a message when node is missing, and fails then too with
//! SWITCHBOARD_REQUIRE_INTEROP=1.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use switchboard_hub::bundle::{self, Limits};
use switchboard_testkit::bundle::good_node_bundle;

#[test]
fn the_good_bundle_runs_with_node_and_gets_its_secret() {
    if Command::new("node").arg("--version").output().is_err() {
        let required = std::env::var("SWITCHBOARD_REQUIRE_INTEROP")
            .is_ok_and(|v| matches!(v.as_str(), "1" | "true" | "yes"));
        assert!(
            !required,
            "node is missing (SWITCHBOARD_REQUIRE_INTEROP is set)"
        );
        eprintln!("skipping the_good_bundle_runs_with_node: node is missing");
        return;
    }
    let scratch = std::env::temp_dir().join(format!("sb-bundle-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let bundle = bundle::unpack(
        &good_node_bundle(),
        &scratch.join("echo"),
        &Limits::default(),
    )
    .expect("the good bundle unpacks");
    let answers = BTreeMap::from([("api_key".to_owned(), "s3cret".to_owned())]);
    let entry = bundle::entry(&bundle, &scratch.join("home"), "test", &answers).unwrap();
    let reference = "${secret:test.api_key}";
    assert_eq!(entry.env["API_KEY"], reference);
    let env = entry.env.iter().map(|(k, v)| {
        let value = if v == reference {
            &entry.secrets["api_key"]
        } else {
            v
        };
        (k.clone(), value.clone())
    });

    let mut child = Command::new(&entry.command)
        .args(&entry.args)
        .envs(env)
        .current_dir(&entry.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node starts");
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "has_key", "arguments": {"key": "s3cret"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hello"}}}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for request in &requests {
        writeln!(stdin, "{request}").unwrap();
    }
    drop(stdin); // the server exits at the end of its input
    let replies: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|line| serde_json::from_str(&line.unwrap()).unwrap())
        .collect();
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&scratch);

    assert_eq!(
        replies.len(),
        4,
        "one reply per request, none to the notification: {replies:?}"
    );
    assert_eq!(replies[0]["result"]["protocolVersion"], "2025-06-18");
    let tools: Vec<&str> = replies[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["echo", "has_key"]);
    assert_eq!(
        replies[2]["result"]["content"][0]["text"], "true",
        "the secret reached API_KEY"
    );
    assert_eq!(replies[3]["result"]["content"][0]["text"], "hello");
}
