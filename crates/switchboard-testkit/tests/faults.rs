//! Fault tests against a real server process: crashes, garbage, over-long
//! lines, silence, and what is left behind when a client goes away.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::transport::stdio::StdioConfig;
use switchboard::{Client, RequestOptions};

const SERVER: &str = env!("CARGO_BIN_EXE_switchboard-testkit-server");

fn server(args: &[&str]) -> StdioConfig {
    StdioConfig::new(SERVER).args(args.iter().copied())
}

fn args(value: Value) -> Option<serde_json::Map<String, Value>> {
    value.as_object().cloned()
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn alive(pid: u32) -> bool {
    // A zombie still has a /proc entry; its state letter is Z.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

async fn wait_gone_async(pid: u32, within: Duration) -> bool {
    // Waits on the runtime, so the client's aborted tasks can be dropped.
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

fn wait_gone(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

#[tokio::test]
async fn server_exit_mid_call_is_a_typed_error_with_status_and_stderr() {
    let client = Client::connect(server(&["--era", "dual"])).await.unwrap();
    let started = Instant::now();
    let error = client
        .call_tool("exit", args(json!({"code": 3})))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");
    assert!(error.is_disconnected(), "{error}");
    let switchboard::Error::Disconnected { reason, .. } = &error else {
        unreachable!()
    };
    assert_eq!(
        reason.exit_status().and_then(|s| s.code),
        Some(3),
        "{reason}"
    );
    let tail = error.stderr_tail().expect("stderr tail is kept");
    assert!(tail.contains("exiting with code 3"), "{tail}");
    assert!(
        error_chain(&error).contains("exit code 3"),
        "{}",
        error_chain(&error)
    );
    // Every later request fails at once with the same reason.
    let later = client.list_tools().await.unwrap_err();
    assert!(later.is_disconnected());
}

#[tokio::test]
async fn garbage_lines_are_skipped_and_calls_still_succeed() {
    let client = Client::connect(server(&["--fault", "garbage"]))
        .await
        .unwrap();
    let result = client
        .call_tool("echo", args(json!({"text": "still here"})))
        .await
        .unwrap();
    let result = serde_json::to_value(&result).unwrap();
    assert_eq!(result["content"][0]["text"], "still here");
    assert!(client.skipped_lines() >= 2, "{}", client.skipped_lines());
}

#[tokio::test]
async fn an_over_long_line_fails_clearly_naming_the_limit() {
    let client = Client::connect(server(&[]).max_message_size(64 * 1024))
        .await
        .unwrap();
    let error = client
        .call_tool("long_line", args(json!({"size": 200_000})))
        .await
        .unwrap_err();
    let chain = error_chain(&error);
    assert!(error.is_disconnected(), "{chain}");
    assert!(chain.contains("65536"), "names the limit: {chain}");
    assert!(
        chain.contains("max_message_size"),
        "names the setting: {chain}"
    );
}

#[tokio::test]
async fn a_default_client_takes_a_16_mib_result() {
    let client = Client::connect(server(&[])).await.unwrap();
    let result = client
        .call_tool("blob", args(json!({"size": 16 * 1024 * 1024})))
        .await
        .unwrap();
    let result = serde_json::to_value(&result).unwrap();
    assert_eq!(
        result["content"][0]["text"].as_str().unwrap().len(),
        16 * 1024 * 1024
    );
}

#[tokio::test]
async fn a_silent_server_times_out_and_is_told_of_the_cancel() {
    let dir = tempdir();
    let record = dir.join("received.jsonl");
    let record_arg = record.to_str().unwrap();
    let client = Client::connect(server(&["--record", record_arg]))
        .await
        .unwrap();

    // Timeout.
    let params = switchboard::types::CallToolRequestParams {
        name: "hang".into(),
        ..Default::default()
    };
    let error = client
        .call_tool_with(&params, RequestOptions::timeout(Duration::from_millis(300)))
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");

    // A dropped call, dropped once the server has it.
    {
        let call = client.call_tool("hang", None);
        tokio::pin!(call);
        let deadline = Instant::now() + Duration::from_secs(3);
        while records(&record)
            .iter()
            .filter(|m| m["params"]["name"] == "hang")
            .count()
            < 2
        {
            assert!(
                Instant::now() < deadline,
                "the server never received the second hang call"
            );
            tokio::select! {
                _ = &mut call => unreachable!("hang never answers"),
                () = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
    }

    // The server saw two hang calls and a cancel for each.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let seen = records(&record);
        let hang_ids: Vec<Value> = seen
            .iter()
            .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == "hang")
            .map(|m| m["id"].clone())
            .collect();
        let cancelled: Vec<Value> = seen
            .iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .map(|m| m["params"]["requestId"].clone())
            .collect();
        if hang_ids.len() == 2 && cancelled == hang_ids {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "server-side record: calls {hang_ids:?}, cancels {cancelled:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The connection is still usable.
    client
        .call_tool("echo", args(json!({"text": "ok"})))
        .await
        .unwrap();
}

#[tokio::test]
async fn dropping_the_client_leaves_no_child_or_grandchild() {
    let client = Client::connect(server(&[])).await.unwrap();
    let result = client.call_tool("spawn_grandchild", None).await.unwrap();
    let structured = result.structured_content.clone().expect("pids");
    let grandchild = structured["pid"].as_u64().unwrap() as u32;
    let child = structured["serverPid"].as_u64().unwrap() as u32;
    assert!(alive(child) && alive(grandchild));
    drop(client);
    assert!(
        wait_gone_async(child, Duration::from_secs(3)).await,
        "server {child} still alive"
    );
    assert!(
        wait_gone_async(grandchild, Duration::from_secs(3)).await,
        "grandchild {grandchild} still alive"
    );
}

#[test]
fn dropping_the_client_after_its_runtime_is_gone_leaves_nothing() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (client, child, grandchild) = runtime.block_on(async {
        let client = Client::connect(server(&[])).await.unwrap();
        let result = client.call_tool("spawn_grandchild", None).await.unwrap();
        let structured = result.structured_content.clone().unwrap();
        (
            client,
            structured["serverPid"].as_u64().unwrap() as u32,
            structured["pid"].as_u64().unwrap() as u32,
        )
    });
    drop(runtime);
    drop(client);
    assert!(
        wait_gone(child, Duration::from_secs(3)),
        "server {child} still alive"
    );
    assert!(
        wait_gone(grandchild, Duration::from_secs(3)),
        "grandchild {grandchild} still alive"
    );
}

#[tokio::test]
async fn close_stops_the_server_gracefully() {
    let client = Client::connect(server(&[])).await.unwrap();
    let result = client.call_tool("spawn_grandchild", None).await.unwrap();
    let structured = result.structured_content.clone().unwrap();
    let child = structured["serverPid"].as_u64().unwrap() as u32;
    let grandchild = structured["pid"].as_u64().unwrap() as u32;
    client.close().await;
    assert!(wait_gone_async(child, Duration::from_secs(5)).await);
    assert!(wait_gone_async(grandchild, Duration::from_secs(5)).await);
    let error = client.list_tools().await.unwrap_err();
    assert!(error.is_disconnected(), "{error}");
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-faults-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
