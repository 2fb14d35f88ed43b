//! Issue 30 (item 3): servers on the Python SDK 2.3 (PyPI `mcp`) that take
//! seconds to start, over stdio in the auto era mode.
//!
//! Python SDK 2.x commits a stdio connection to the era of the first request
//! it reads: a `server/discover` makes it refuse a later `initialize` with
//! -32022. A probe that gave up on a slow server and sent `initialize` must
//! still end in the modern era, and eight servers starting at once (each
//! competing for the CPU) must all connect.
//!
//! Skipped when the venv `<cache>/python-mcp-2.3.0` is missing, unless
//! `SWITCHBOARD_REQUIRE_INTEROP=1`.

mod support;

use std::path::Path;
use std::time::Duration;

use switchboard::transport::stdio::StdioConfig;
use switchboard::types::{Era, ProtocolVersion};
use switchboard::{Client, Error};

use support::{args, python_sdk, python_server_script, text_of};

/// Upper bound for one whole test, so a hung server fails instead of
/// hanging CI (eight Python interpreters starting on two cores take ~20 s).
const TEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The Python interop server over stdio behind a wrapper that sleeps
/// `delay` seconds before it starts the interpreter (as `uvx`, `npx` or a
/// container would, while they fetch and start).
fn slow_python(python: &Path, delay: &str) -> StdioConfig {
    let script = python_server_script();
    StdioConfig::new("sh").args([
        "-c".as_ref(),
        r#"sleep "$0" && exec "$@""#.as_ref(),
        delay.as_ref(),
        python.as_os_str(),
        script.as_os_str(),
        "stdio".as_ref(),
    ])
}

/// Connects in the auto era mode, lists the tools and calls `echo`.
async fn connect_and_use(name: String, config: StdioConfig) -> Result<Client, String> {
    let client = Client::builder()
        .name(name.clone())
        .connect(config)
        .await
        .map_err(|e: Error| format!("{name}: connect failed: {e}"))?;
    let tools = client
        .list_tools()
        .await
        .map_err(|e| format!("{name}: tools/list failed: {e}"))?;
    if !tools.iter().any(|tool| &*tool.name == "echo") {
        return Err(format!("{name}: no `echo` tool in {tools:?}"));
    }
    let result = client
        .call_tool("echo", Some(args(serde_json::json!({"message": "hi"}))))
        .await
        .map_err(|e| format!("{name}: tools/call failed: {e}"))?;
    if text_of(&result) != "hi" {
        return Err(format!("{name}: echo said {}", text_of(&result)));
    }
    Ok(client)
}

fn assert_modern(client: &Client) {
    let name = client.server_name();
    assert_eq!(client.era(), Era::Modern, "{name}: era");
    assert_eq!(
        client.protocol_version(),
        &ProtocolVersion::V2026_07_28,
        "{name}: version"
    );
    assert!(!client.session().respawned, "{name}: respawned");
}

#[tokio::test]
async fn a_python_sdk_2_3_server_that_starts_in_four_seconds_connects_modern() {
    let Some(python) = python_sdk("2.3.0") else {
        return;
    };
    let connected = tokio::time::timeout(
        TEST_TIMEOUT,
        connect_and_use("python-after-4s".into(), slow_python(&python, "4")),
    )
    .await
    .expect("no answer within the test's bound");
    let client = connected.unwrap_or_else(|e| panic!("{e}"));
    assert_modern(&client);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_python_sdk_2_3_servers_starting_at_once_all_connect() {
    let Some(python) = python_sdk("2.3.0") else {
        return;
    };
    let delays = ["0", "0.6", "0.6", "0.6", "1", "2", "4", "4"];
    let all = futures_util::future::join_all(delays.iter().enumerate().map(|(i, delay)| {
        connect_and_use(
            format!("python-{i}-after-{delay}s"),
            slow_python(&python, delay),
        )
    }));
    let outcomes = tokio::time::timeout(TEST_TIMEOUT, all)
        .await
        .expect("no answer within the test's bound");
    let failures: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of 8 failed:\n{}",
        failures.len(),
        failures
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    for client in outcomes.into_iter().flatten() {
        assert_modern(&client);
        client.close().await;
    }
}
