//! Tasks against the test server linked in-process, in both eras: the
//! 2025-11-25 core tasks (session era) and the 2026-07-28
//! `io.modelcontextprotocol/tasks` extension (stateless era), through
//! `Client::call_tool_and_wait` and the `tasks/*` calls.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::client::tasks::TaskOptions;
use switchboard::transport::BoxFuture;
use switchboard::transport::framing::IoConnector;
use switchboard::types::{CallToolRequestParams, ElicitResult, Era, TaskStatus};
use switchboard::{
    Client, ClientBuilder, ElicitationHandler, Error, FormRequest, HandlerContext, HandlerError,
};
use switchboard_testkit::{ServerConfig, serve};
use tokio::task::JoinHandle;

/// A running in-process server; aborted when dropped.
struct Linked {
    server: JoinHandle<std::io::Result<()>>,
}

impl Drop for Linked {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn connect_with(builder: ClientBuilder, era: &str) -> (Client, Linked) {
    let config = ServerConfig::from_args(["--era", era].iter().map(|s| s.to_string()))
        .expect("valid server flags");
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_end);
    let (client_read, client_write) = tokio::io::split(client_end);
    let server = tokio::spawn(serve(config, server_read, server_write));
    let client = builder
        .name("linked")
        .connect(IoConnector::new(client_read, client_write))
        .await
        .expect("connects");
    (client, Linked { server })
}

async fn connect(era: &str) -> (Client, Linked) {
    connect_with(Client::builder(), era).await
}

/// Both eras: the server speaks one, the client finds it.
const ERAS: [(&str, Era); 2] = [("legacy", Era::Legacy), ("modern", Era::Modern)];

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams {
        name: name.into(),
        arguments: arguments.as_object().cloned(),
        ..Default::default()
    }
}

fn text(result: &switchboard::types::CallToolResult) -> String {
    serde_json::to_value(&result.content[0]).unwrap()["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Polls `task_id` until it reaches `status`, or fails after a few seconds.
async fn until_status(client: &Client, task_id: &str, status: TaskStatus) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let task = client.get_task(task_id).await.expect("tasks/get");
        if task.status == status {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {task_id} is still {} (waiting for {status})",
            task.status
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_slow_tool_runs_as_a_task_and_its_result_comes_back() {
    for (flag, era) in ERAS {
        let (client, _server) = connect(flag).await;
        assert_eq!(client.era(), era);
        let messages = Arc::new(Mutex::new(Vec::new()));
        let sink = messages.clone();
        let options = TaskOptions::new().on_progress(move |p| {
            sink.lock().unwrap().extend(p.message);
        });
        let result = client
            .call_tool_and_wait(&call("slow_task", json!({"ms": 200})), options)
            .await
            .unwrap_or_else(|e| panic!("{flag}: {e}"));
        assert_eq!(text(&result), "done after 200 ms", "{flag}");
        // It really was a task: the server knows it, finished.
        let task = client.get_task("task-1").await.unwrap();
        assert_eq!(task.status, TaskStatus::Completed, "{flag}");
        // The status message of the running task reached the callback.
        let messages = messages.lock().unwrap().clone();
        assert!(
            messages.iter().any(|m| m.contains("in progress")),
            "{flag}: {messages:?}"
        );
        if era == Era::Legacy {
            let tasks = client.list_tasks().await.unwrap();
            assert_eq!(tasks.len(), 1, "{flag}");
        }
    }
}

#[tokio::test]
async fn a_tool_that_requires_a_task_works_only_through_the_task_path() {
    for (flag, _) in ERAS {
        let (client, _server) = connect(flag).await;
        let result = client
            .call_tool_and_wait(&call("must_task", json!({"ms": 10})), TaskOptions::new())
            .await
            .unwrap_or_else(|e| panic!("{flag}: {e}"));
        assert_eq!(text(&result), "done after 10 ms", "{flag}");
        // A plain call is refused: -32601 (session era), or the missing
        // extension (stateless era).
        let error = client.call_tool("must_task", None).await.unwrap_err();
        assert!(error.is_server_error(), "{flag}: {error}");
    }
}

#[tokio::test]
async fn dropping_the_wait_cancels_the_task_on_the_server() {
    for (flag, _) in ERAS {
        let (client, _server) = connect(flag).await;
        let params = call("slow_task", json!({"ms": 30_000}));
        let wait = client.call_tool_and_wait(&params, TaskOptions::new());
        let gave_up = tokio::time::timeout(Duration::from_millis(300), wait).await;
        assert!(gave_up.is_err(), "{flag}: the task ended early");
        until_status(&client, "task-1", TaskStatus::Cancelled).await;
    }
}

#[tokio::test]
async fn a_task_that_outlives_the_wait_is_cancelled_and_reported() {
    for (flag, _) in ERAS {
        let (client, _server) = connect(flag).await;
        let options = TaskOptions::new().max_wait(Duration::from_millis(300));
        let error = client
            .call_tool_and_wait(&call("slow_task", json!({"ms": 30_000})), options)
            .await
            .unwrap_err();
        assert!(error.is_timeout(), "{flag}: {error}");
        assert!(
            matches!(&error, Error::Task { task_id, .. } if task_id == "task-1"),
            "{flag}: {error:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains("linked") && message.contains("task-1"),
            "{message}"
        );
        until_status(&client, "task-1", TaskStatus::Cancelled).await;
    }
}

struct Ada;

impl ElicitationHandler for Ada {
    fn elicit_form(
        &self,
        _: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        let mut content = request.defaults.clone();
        content.insert("name".into(), json!("Ada"));
        Box::pin(async move { Ok(ElicitResult::accept(Some(content))) })
    }
}

#[tokio::test]
async fn an_input_required_task_is_answered_through_tasks_update() {
    let (client, _server) = connect_with(Client::builder().elicitation(Ada), "modern").await;
    let result = client
        .call_tool_and_wait(&call("input_task", json!({})), TaskOptions::new())
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(answer["action"], "accept", "{answer}");
    assert_eq!(answer["content"]["name"], "Ada", "{answer}");
}

#[tokio::test]
async fn task_methods_follow_the_era() {
    let (client, _server) = connect("modern").await;
    // No tasks/result or tasks/list in the extension.
    let error = client
        .task_result("task-1", switchboard::RequestOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotInThisEra { .. }), "{error}");
    assert!(matches!(
        client.list_tasks().await,
        Err(Error::NotInThisEra { .. })
    ));
    // An unknown task is the server's -32602.
    let error = client.get_task("nope").await.unwrap_err();
    assert_eq!(error.code(), Some(-32602), "{error}");

    let (client, _server) = connect("legacy").await;
    let error = client.update_task(&Default::default()).await.unwrap_err();
    assert!(matches!(error, Error::NotInThisEra { .. }), "{error}");
}
