//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the
//! server side: `tasks/get`, `tasks/update` and `tasks/cancel` reach the
//! handler ([`ServerHandler::get_task`] …) only when its capabilities
//! declare the extension, and only for a request whose client declared it
//! too (per request in 2026-07-28, at `initialize` in the session era);
//! any other client is refused with -32021 naming the extension. The
//! extension's removed methods (`tasks/result`, `tasks/list`) are not
//! answered (-32601). A handler creates a task by answering `tools/call`
//! with [`RequestOutcome::Task`](switchboard_types::RequestOutcome::Task).

use serde_json::value::RawValue;
use switchboard_types::jsonrpc::ErrorObject;
use switchboard_types::tasks::TASKS_EXTENSION;
use switchboard_types::{ClientCapabilities, codes};

use super::{RequestContext, ServerHandler, typed};
use crate::transport::BoxFuture;

/// Whether the handler declares the tasks extension.
pub(super) fn offers_tasks(handler: &dyn ServerHandler) -> bool {
    handler.capabilities().extension(TASKS_EXTENSION).is_some()
}

/// Whether a client with `capabilities` declared the tasks extension.
pub fn client_declares_tasks(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
}

/// -32021: the request needs the tasks extension, which its client did
/// not declare; `data.requiredCapabilities` names it.
pub fn missing_tasks_extension() -> ErrorObject {
    let mut error = ErrorObject::new(
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("Missing required client capability: the {TASKS_EXTENSION} extension"),
    );
    error.data = Some(serde_json::json!({
        "requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}
    }));
    error
}

/// `method` (`tasks/get`, `tasks/update` or `tasks/cancel`) for a handler
/// that offers the extension: the handler's answer, or -32021.
pub(super) fn dispatch(
    handler: &std::sync::Arc<dyn ServerHandler>,
    method: &str,
    params: Option<&RawValue>,
    cx: RequestContext,
) -> BoxFuture<'static, Result<Box<RawValue>, ErrorObject>> {
    if !client_declares_tasks(&cx.client_capabilities) {
        let error = missing_tasks_extension();
        return Box::pin(async move { Err(error) });
    }
    match method {
        "tasks/get" => typed(params, |p| handler.get_task(p, cx)),
        "tasks/update" => typed(params, |p| handler.update_task(p, cx)),
        _ => typed(params, |p| handler.cancel_task(p, cx)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};
    use switchboard_types::tasks::{
        CancelTaskRequestParams, GetTaskRequestParams, GetTaskResult, Task, TaskStatus,
        UpdateTaskRequestParams,
    };
    use switchboard_types::{EmptyResult, Implementation, ServerCapabilities};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use crate::server::{Reply, RequestContext, ServeOptions, ServerHandler, serve};
    use crate::transport::framing::io_connection;

    /// Knows one task, `t1`; declares the extension when `offers`.
    struct Tasks {
        offers: bool,
    }

    impl ServerHandler for Tasks {
        fn info(&self) -> Implementation {
            Implementation::new("tasks", "1.0.0")
        }

        fn capabilities(&self) -> ServerCapabilities {
            let extensions = if self.offers {
                json!({super::TASKS_EXTENSION: {}})
            } else {
                json!({})
            };
            serde_json::from_value(json!({"tools": {}, "extensions": extensions})).unwrap()
        }

        fn get_task(
            &self,
            params: GetTaskRequestParams,
            _: RequestContext,
        ) -> Reply<GetTaskResult> {
            Box::pin(async move {
                if params.task_id != "t1" {
                    return Err(switchboard_types::jsonrpc::ErrorObject::new(
                        switchboard_types::codes::INVALID_PARAMS,
                        "unknown task",
                    ));
                }
                Ok(GetTaskResult {
                    task: Task {
                        task_id: "t1".to_owned(),
                        status: TaskStatus::Working,
                        created_at: "2026-07-28T00:00:00Z".to_owned(),
                        last_updated_at: "2026-07-28T00:00:00Z".to_owned(),
                        ..Task::default()
                    },
                    ..Default::default()
                })
            })
        }

        fn update_task(&self, _: UpdateTaskRequestParams, _: RequestContext) -> Reply<EmptyResult> {
            Box::pin(async { Ok(EmptyResult::default()) })
        }

        fn cancel_task(&self, _: CancelTaskRequestParams, _: RequestContext) -> Reply<EmptyResult> {
            Box::pin(async { Ok(EmptyResult::default()) })
        }
    }

    /// Sends `method` with `params` (2026-07-28, the client's capabilities
    /// `caps`) to a fresh server and returns its answer.
    async fn exchange(offers: bool, method: &str, params: Value, caps: Value) -> Value {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(server_end);
        let _served = serve(
            Arc::new(Tasks { offers }),
            io_connection(read, write),
            ServeOptions::default(),
        );
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
        });
        let line = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (read, mut write) = tokio::io::split(client_end);
        write.write_all(line.to_string().as_bytes()).await.unwrap();
        write.write_all(b"\n").await.unwrap();
        let mut answer = String::new();
        BufReader::new(read).read_line(&mut answer).await.unwrap();
        serde_json::from_str(&answer).unwrap()
    }

    fn declares() -> Value {
        json!({"extensions": {super::TASKS_EXTENSION: {}}})
    }

    #[tokio::test]
    async fn the_task_methods_reach_a_handler_that_offers_them_for_a_client_that_declared_them() {
        let got = exchange(true, "tasks/get", json!({"taskId": "t1"}), declares()).await;
        assert_eq!(got["result"]["taskId"], "t1", "{got}");
        assert_eq!(got["result"]["status"], "working", "{got}");
        assert_eq!(got["result"]["resultType"], "complete", "{got}");
        for method in ["tasks/update", "tasks/cancel"] {
            let params = json!({"taskId": "t1", "inputResponses": {}});
            let got = exchange(true, method, params, declares()).await;
            assert_eq!(got["result"]["resultType"], "complete", "{method}: {got}");
            assert!(got["result"].get("taskId").is_none(), "{method}: {got}");
        }
    }

    #[tokio::test]
    async fn a_client_that_did_not_declare_the_extension_is_refused_with_32021() {
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let params = json!({"taskId": "t1", "inputResponses": {}});
            let got = exchange(true, method, params, json!({})).await;
            assert_eq!(got["error"]["code"], -32021, "{method}: {got}");
            assert!(
                got["error"]["data"]["requiredCapabilities"]["extensions"][super::TASKS_EXTENSION]
                    .is_object(),
                "{method}: {got}"
            );
        }
    }

    #[tokio::test]
    async fn removed_and_unoffered_task_methods_are_not_found() {
        for method in ["tasks/result", "tasks/list"] {
            let got = exchange(true, method, json!({"taskId": "t1"}), declares()).await;
            assert_eq!(got["error"]["code"], -32601, "{method}: {got}");
        }
        let got = exchange(false, "tasks/get", json!({"taskId": "t1"}), declares()).await;
        assert_eq!(got["error"]["code"], -32601, "{got}");
    }
}
