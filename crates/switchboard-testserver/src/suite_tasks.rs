//! The suite fixture's tools for the tasks extension scenarios
//! (`tasks-*`, SEP-2663): `greet` (never a task), `slow_compute`,
//! `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input` and
//! `test_tool_with_task`, as the suite's descriptions ask.
//!
//! A task-supporting tool runs as a task when the request may have one: a
//! 2026-07-28 request whose client capabilities (per request) declare
//! `io.modelcontextprotocol/tasks`, a session-era call with a `task`
//! param. Otherwise it runs as a plain call (`failing_job` and
//! `test_tool_with_task`, which require a task, are refused: -32021 in the
//! 2026-07-28 era, -32601 in the session era), and the asking tools ask as
//! any fixture tool does (an `input_required` round, or server→client
//! requests).

use serde_json::{Map, Value, json};

use crate::features;
use crate::fixture::Job;
use crate::server::{AsyncKind, Mode, RpcError, Shared, ToolOutcome, code};
use crate::tasks::{self, TaskWork};

/// The tools, in `tools/list` order, with their `execution.taskSupport`.
pub(crate) const TOOLS: [(&str, &str); 7] = [
    ("greet", "forbidden"),
    ("slow_compute", "optional"),
    ("failing_job", "required"),
    ("protocol_error_job", "optional"),
    ("confirm_delete", "optional"),
    ("multi_input", "optional"),
    ("test_tool_with_task", "required"),
];

/// How long `failing_job` works before it reports its error.
const FAILING_JOB_MS: u64 = 500;
/// How long `protocol_error_job` and `test_tool_with_task` work.
const SHORT_JOB_MS: u64 = 100;
/// The most `slow_compute` sleeps (seconds).
const MAX_SECONDS: u64 = 600;

/// Whether `name` is one of these tools.
pub(crate) fn is_task_tool(name: &str) -> bool {
    TOOLS.iter().any(|(n, _)| *n == name)
}

/// The `tools/list` entries.
pub(crate) fn tools() -> Vec<Value> {
    TOOLS
        .iter()
        .map(|(name, support)| {
            let schema = match *name {
                "greet" => json!({"type": "object", "properties": {"name": {"type": "string"}},
                                  "required": ["name"]}),
                "slow_compute" => json!({"type": "object", "properties": {
                    "seconds": {"type": "number"}, "label": {"type": "string"}}}),
                "confirm_delete" => json!({"type": "object", "properties": {
                    "filename": {"type": "string"}}}),
                _ => json!({"type": "object", "properties": {}}),
            };
            json!({
                "name": name,
                "description": format!("Conformance fixture tool {name} (tasks extension)"),
                "inputSchema": schema,
                "execution": {"taskSupport": support},
            })
        })
        .collect()
}

fn elicit(message: &str, properties: Value) -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties},
    }})
}

/// The input requests of an asking tool, by key.
fn asks(name: &str, args: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    match name {
        "confirm_delete" => {
            let file = args
                .get("filename")
                .and_then(Value::as_str)
                .unwrap_or("the file");
            out.insert(
                "confirm".into(),
                elicit(
                    &format!("Delete {file}?"),
                    json!({"confirm": {"type": "boolean"}}),
                ),
            );
        }
        "multi_input" => {
            out.insert(
                "name".into(),
                elicit("Your name?", json!({"name": {"type": "string"}})),
            );
            out.insert(
                "confirm".into(),
                elicit("Go ahead?", json!({"confirm": {"type": "boolean"}})),
            );
        }
        _ => {}
    }
    out
}

fn confirm_delete_done(got: &Map<String, Value>) -> Value {
    let yes = got.get("confirm").is_some_and(|a| {
        a["action"] == "accept" && a.pointer("/content/confirm") != Some(&json!(false))
    });
    features::tool_text(if yes { "deleted" } else { "kept" }.to_owned())
}

fn multi_input_done(got: &Map<String, Value>) -> Value {
    features::tool_text(format!("completed: {}", Value::Object(got.clone())))
}

fn finisher(name: &str) -> fn(&Map<String, Value>) -> Value {
    if name == "confirm_delete" {
        confirm_delete_done
    } else {
        multi_input_done
    }
}

fn greeting(got: &Value) -> String {
    let name = got
        .pointer("/content/name")
        .and_then(Value::as_str)
        .map_or_else(|| got.to_string(), str::to_owned);
    format!("Hello, {name}! (gathered before the task)")
}

impl Shared {
    /// `tools/call` of one of [`TOOLS`].
    pub(crate) fn suite_task_call(
        &self,
        mode: Mode,
        name: &str,
        args: Map<String, Value>,
        mut params: Map<String, Value>,
    ) -> Result<ToolOutcome, RpcError> {
        let support = TOOLS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("forbidden", |(_, s)| *s);
        let wants = match mode {
            Mode::Legacy => params.get("task").is_some_and(Value::is_object),
            Mode::Modern => tasks::client_wants_tasks(&self.client_caps(mode, &params)),
        };
        let as_task = wants && support != "forbidden";
        if !as_task && support == "required" {
            return Err(match mode {
                Mode::Modern => tasks::missing_extension(),
                Mode::Legacy => RpcError::new(
                    code::METHOD_NOT_FOUND,
                    format!("Method not found: tool {name} must be called as a task"),
                ),
            });
        }
        let task = |work: TaskWork| {
            let owner = std::sync::Arc::downgrade(&self.conn);
            Ok(ToolOutcome::Done(self.tasks.create(
                &self.catalog,
                mode == Mode::Modern,
                owner,
                work,
            )))
        };
        match name {
            "greet" => {
                let who = args.get("name").and_then(Value::as_str).unwrap_or("World");
                Ok(ToolOutcome::Done(features::tool_text(format!(
                    "Hello, {who}!"
                ))))
            }
            "slow_compute" => {
                let seconds = args
                    .get("seconds")
                    .and_then(Value::as_f64)
                    .unwrap_or(1.0)
                    .clamp(0.0, MAX_SECONDS as f64);
                let ms = (seconds * 1000.0) as u64;
                let label = args.get("label").and_then(Value::as_str).unwrap_or("");
                let result = features::tool_text(format!("computed {label} in {ms} ms"));
                match (as_task, ms) {
                    (true, _) => task(TaskWork::Finish {
                        ms,
                        outcome: Ok(result),
                    }),
                    (false, 0) => Ok(ToolOutcome::Done(result)),
                    (false, ms) => Ok(ToolOutcome::Async(AsyncKind::Slow { ms })),
                }
            }
            "failing_job" => task(TaskWork::Finish {
                ms: FAILING_JOB_MS,
                outcome: Ok(features::tool_error("failing_job always fails".to_owned())),
            }),
            "protocol_error_job" => {
                let error = json!({"code": code::INTERNAL_ERROR,
                                   "message": "Internal error: protocol_error_job crashed"});
                if as_task {
                    task(TaskWork::Finish {
                        ms: SHORT_JOB_MS,
                        outcome: Err(error),
                    })
                } else {
                    Err(RpcError::new(
                        code::INTERNAL_ERROR,
                        "Internal error: protocol_error_job crashed",
                    ))
                }
            }
            "confirm_delete" | "multi_input" => {
                let requests = asks(name, &args);
                match (as_task, mode) {
                    (true, Mode::Modern) => task(TaskWork::Ask {
                        requests,
                        finish: finisher(name),
                    }),
                    // The session era's tasks have no tasks/update.
                    (true, Mode::Legacy) => Ok(ToolOutcome::Done(features::tool_error(format!(
                        "{name} asks through tasks/update, which only 2026-07-28 has"
                    )))),
                    (false, Mode::Legacy) => Ok(ToolOutcome::Async(AsyncKind::Fixture(Job::Ask {
                        tool: name.to_owned(),
                        asks: requests
                            .into_iter()
                            .map(|(k, r)| {
                                (
                                    k,
                                    r["method"].as_str().unwrap_or("").to_owned(),
                                    r["params"].clone(),
                                )
                            })
                            .collect(),
                    }))),
                    (false, Mode::Modern) => {
                        let responses = params
                            .get("inputResponses")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default();
                        let missing: Map<String, Value> = requests
                            .into_iter()
                            .filter(|(k, _)| !responses.get(k).is_some_and(Value::is_object))
                            .collect();
                        Ok(ToolOutcome::Done(if missing.is_empty() {
                            finisher(name)(&responses)
                        } else {
                            json!({"resultType": "input_required", "inputRequests": missing})
                        }))
                    }
                }
            }
            // Required: gathers `user_name` (an input_required round),
            // then becomes a task whose result names it.
            "test_tool_with_task" => {
                let answer = params
                    .remove("inputResponses")
                    .and_then(|r| r.get("user_name").cloned())
                    .filter(Value::is_object);
                match (answer, mode) {
                    (Some(answer), _) => task(TaskWork::Finish {
                        ms: SHORT_JOB_MS,
                        outcome: Ok(features::tool_text(greeting(&answer))),
                    }),
                    (None, Mode::Legacy) => task(TaskWork::Finish {
                        ms: SHORT_JOB_MS,
                        outcome: Ok(features::tool_text(
                            "Hello! (no name asked: the session era has no input_required)"
                                .to_owned(),
                        )),
                    }),
                    (None, Mode::Modern) => {
                        let mut requests = Map::new();
                        requests.insert(
                            "user_name".into(),
                            elicit("Your name?", json!({"name": {"type": "string"}})),
                        );
                        Ok(ToolOutcome::Done(json!({
                            "resultType": "input_required",
                            "inputRequests": requests,
                            "requestState": features::seal_state(&json!({"tool": name, "round": 0})),
                        })))
                    }
                }
            }
            _ => Err(RpcError::invalid_params(format!("Unknown tool: {name}"))),
        }
    }
}
