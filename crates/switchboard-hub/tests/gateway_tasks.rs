//! Issue 29: the tasks extension (`io.modelcontextprotocol/tasks`) served
//! by the gateway (`gateway/tasks.rs`): a 2026-07-28 host that declares it
//! and calls a task-supporting tool gets a task handle at once, polls it to
//! the result, and can cancel one (the backend's call is cancelled); a host
//! that does not declare it is refused a task-required tool (-32021) and
//! the `tasks/*` methods; a task is the host's alone.
//!
//! The backend is a real process: the test server (`must_task`: task
//! support required, `slow_task`: optional) run by this very binary
//! (`gateway_tasks __testserver …`, see `support/mod.rs`), in each era: a
//! session-era backend's call becomes a task of the gateway's; a 2026-07-28
//! backend (which offers the extension) makes its own task, which the
//! gateway follows under an id of its own — the host sees the same either
//! way, and a cancellation reaches the backend as `tasks/cancel` then.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::types::Implementation;
use switchboard::types::tasks::TASKS_EXTENSION;
use switchboard::{Client, EraMode, RequestOptions};
use switchboard_hub::{Dialect, Hub, HubServer, Origin, Scope, ServerConfig, TransportConfig};

mod support;

use macro_rules_attribute::apply;
use support::process_test;

fn main() {
    support::main();
}

/// The test server in `era` (stdio), recording what it receives in `record`.
fn backend(era: &str, record: &Path) -> ServerConfig {
    let exe = std::env::current_exe().expect("current exe");
    let args = ["__testserver", "--era", era, "--name", "s", "--record"]
        .map(String::from)
        .into_iter()
        .chain([record.to_string_lossy().into_owned()])
        .collect();
    ServerConfig::new(
        "s",
        TransportConfig::Stdio {
            command: exe.to_string_lossy().into_owned(),
            args,
            env: BTreeMap::new(),
            cwd: None,
        },
        Origin {
            file: PathBuf::from("/tests/tasks.toml"),
            dialect: Dialect::Switchboard,
            scope: Scope::Explicit,
        },
    )
}

/// A 2026-07-28 host named `name` on the gateway, declaring the tasks
/// extension when `tasks`.
async fn host(gateway: &HubServer, name: &str, tasks: bool) -> Client {
    let mut builder = Client::builder()
        .era_mode(EraMode::Modern)
        .client_info(Implementation::new(name, "1.0.0"));
    if tasks {
        builder = builder.extension(TASKS_EXTENSION, json!({}));
    }
    gateway.clone().connect(builder).await.unwrap()
}

async fn request(
    client: &Client,
    method: &str,
    params: Value,
) -> Result<Value, switchboard::Error> {
    client
        .request_raw(method, Some(params), RequestOptions::default())
        .await
        .map(|raw| raw.parse().unwrap())
}

/// The error code `method` is refused with.
async fn refused(client: &Client, method: &str, params: Value) -> (i64, Option<Value>) {
    match request(client, method, params).await {
        Ok(result) => panic!("{method} was answered: {result}"),
        Err(error) => {
            let object = error.error_object().expect("a JSON-RPC error").clone();
            (object.code, object.data)
        }
    }
}

/// `tasks/get` until the task is terminal (the host's side of the
/// protocol: it polls), within a deadline.
async fn settle(client: &Client, id: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let task = request(client, "tasks/get", json!({"taskId": id}))
            .await
            .unwrap();
        assert_eq!(task["taskId"], id);
        if matches!(
            task["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        ) {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task did not end: {task}"
        );
        let poll = task["pollIntervalMs"].as_u64().unwrap_or(100);
        tokio::time::sleep(Duration::from_millis(poll)).await;
    }
}

/// Waits until the backend has received a message containing `needle`.
async fn backend_received(record: &Path, needle: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(record).unwrap_or_default();
        if text.contains(needle) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the backend never received {needle}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn tasks_through_the_gateway(era: &str) {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-hub-tasks-{era}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("backend.jsonl");
    let hub = Hub::builder()
        .server(backend(era, &record))
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let gateway = HubServer::new(hub.clone(), Implementation::new("gateway", "1.0.0"));
    let alice = host(&gateway, "alice", true).await;
    // The tools' names on the gateway (`s__must_task` …).
    let listed = alice.list_tools().await.unwrap();
    let name = |tool: &str| {
        listed
            .iter()
            .find(|t| t.name.ends_with(tool))
            .unwrap_or_else(|| panic!("{tool} is not listed"))
            .name
            .clone()
    };
    let (must_task, slow_task) = (name("must_task"), name("slow_task"));

    // The gateway declares the extension.
    let discovered = alice.capabilities().extension(TASKS_EXTENSION).cloned();
    assert!(discovered.is_some(), "the tasks extension is not declared");

    // A task-required tool: a handle at once, polled to its result.
    let created = request(
        &alice,
        "tools/call",
        json!({"name": must_task, "arguments": {"ms": 300}}),
    )
    .await
    .unwrap();
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("a taskId").to_owned();
    assert_eq!(id.len(), 32, "{id}");
    assert_eq!(created["status"], "working");
    assert!(
        created["ttlMs"].as_u64().is_some_and(|t| t > 0),
        "{created}"
    );
    assert!(created["pollIntervalMs"].as_u64().is_some(), "{created}");
    for absent in ["result", "error", "inputRequests", "task", "ttl"] {
        assert!(created.get(absent).is_none(), "{absent} in {created}");
    }
    let done = settle(&alice, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "done after 300 ms");
    assert!(done.get("error").is_none(), "{done}");
    // Ended tasks are still there, and cancelling one is acknowledged.
    let again = request(&alice, "tasks/get", json!({"taskId": id}))
        .await
        .unwrap();
    assert_eq!(again["status"], "completed");
    let ack = request(&alice, "tasks/cancel", json!({"taskId": id}))
        .await
        .unwrap();
    assert!(
        ack.get("taskId").is_none() && ack.get("status").is_none(),
        "{ack}"
    );

    // Cancelling a running task: cancelled, and the backend's call too.
    let created = request(
        &alice,
        "tools/call",
        json!({"name": slow_task, "arguments": {"ms": 60000}}),
    )
    .await
    .unwrap();
    let slow = created["taskId"].as_str().expect("a taskId").to_owned();
    backend_received(&record, "\"ms\":60000").await;
    let ack = request(&alice, "tasks/cancel", json!({"taskId": slow}))
        .await
        .unwrap();
    assert!(ack.get("status").is_none(), "{ack}");
    let cancelled = settle(&alice, &slow).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(cancelled.get("result").is_none(), "{cancelled}");
    match era {
        // The backend's own task, cancelled there under its own id.
        "modern" => backend_received(&record, "\"method\":\"tasks/cancel\"").await,
        _ => backend_received(&record, "notifications/cancelled").await,
    }
    if era == "modern" {
        let text = std::fs::read_to_string(&record).unwrap_or_default();
        assert!(
            !text.contains(&slow) && !text.contains(&id),
            "the gateway's task ids reached the backend:\n{text}"
        );
    }

    // A task is its host's: another host does not find it.
    let bob = host(&gateway, "bob", true).await;
    let (code, _) = refused(&bob, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(code, -32602);
    let (code, _) = refused(&bob, "tasks/cancel", json!({"taskId": slow})).await;
    assert_eq!(code, -32602);
    let (code, _) = refused(&alice, "tasks/get", json!({"taskId": "no-such-task"})).await;
    assert_eq!(code, -32602);

    // A host without the extension: a required tool and tasks/* refused
    // with -32021 naming it; an optional one is called as usual.
    let carol = host(&gateway, "carol", false).await;
    let (code, data) = refused(
        &carol,
        "tools/call",
        json!({"name": must_task, "arguments": {"ms": 10}}),
    )
    .await;
    assert_eq!(code, -32021);
    assert!(
        data.as_ref()
            .and_then(|d| d.pointer(&format!(
                "/requiredCapabilities/extensions/{}",
                TASKS_EXTENSION.replace('/', "~1")
            )))
            .is_some(),
        "{data:?}"
    );
    let (code, _) = refused(&carol, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(code, -32021);
    let plain = request(
        &carol,
        "tools/call",
        json!({"name": slow_task, "arguments": {"ms": 10}}),
    )
    .await
    .unwrap();
    assert!(plain.get("taskId").is_none(), "{plain}");
    assert_eq!(plain["resultType"], "complete", "{plain}");
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[apply(process_test!)]
async fn a_modern_backends_own_tasks_are_followed_under_the_gateways_ids() {
    tasks_through_the_gateway("modern").await;
}

#[apply(process_test!)]
async fn a_session_era_backends_task_tools_become_the_gateways_tasks() {
    tasks_through_the_gateway("legacy").await;
}
