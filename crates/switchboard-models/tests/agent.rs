//! The example agent (`examples/agent.rs`, included here and run through
//! its own `run`) against a scripted OpenAI-compatible endpoint on
//! loopback and the testkit's MCP server over Streamable HTTP (in this
//! process: a dev-dependency's binaries are not built for this crate).
//!
//! The fake endpoint answers from a script and records every check that
//! did not hold; each test asserts that none failed and that the script
//! ran to its end.
#![cfg(feature = "agent")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_hub::Hub;
use switchboard_models::agent::{Agent, AgentOutcome};
use switchboard_models::chat::ChatClient;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

#[allow(dead_code)]
#[path = "../examples/agent.rs"]
mod agent_example;

/// One request the fake endpoint got.
#[derive(Clone, Debug)]
struct Request {
    /// The request line and headers.
    head: String,
    body: Value,
}

impl Request {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

/// What the script noticed; a test fails when this is not empty.
#[derive(Debug, Default)]
struct Checks {
    failures: Vec<String>,
}

impl Checks {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }
}

type Script = Box<dyn FnMut(usize, &Request, &mut Checks) -> (u16, Value) + Send>;

/// A scripted OpenAI-compatible endpoint: each POST goes to the script
/// (with its 0-based index), whose answer is sent back.
struct FakeChat {
    base: String,
    state: Arc<Mutex<(Vec<Request>, Checks, Script)>>,
    task: JoinHandle<()>,
}

impl FakeChat {
    async fn start(script: Script) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new((Vec::new(), Checks::default(), script)));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let shared = shared.clone();
                connections.spawn(async move {
                    let _ = serve(stream, &shared).await;
                });
            }
        });
        FakeChat { base, state, task }
    }

    /// The requests so far, and the failed checks.
    fn finish(self) -> (Vec<Request>, Vec<String>) {
        self.task.abort();
        let mut state = self.state.lock().unwrap();
        (
            std::mem::take(&mut state.0),
            std::mem::take(&mut state.1.failures),
        )
    }
}

async fn serve(
    stream: tokio::net::TcpStream,
    shared: &Mutex<(Vec<Request>, Checks, Script)>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let request = Request {
        head,
        body: Value::Null,
    };
    let length: usize = request
        .header("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    let request = Request {
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        ..request
    };
    let (status, answer) = {
        let mut state = shared.lock().unwrap();
        let (requests, checks, script) = &mut *state;
        let index = requests.len();
        requests.push(request.clone());
        checks.check(
            request.head.starts_with("POST /v1/chat/completions "),
            || format!("request {index} went to the wrong place: {}", request.head),
        );
        script(index, &request, checks)
    };
    let answer = answer.to_string();
    let mut stream = reader.into_inner();
    stream
        .write_all(
            format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{answer}",
                answer.len()
            )
            .as_bytes(),
        )
        .await?;
    stream.shutdown().await
}

/// A chat completion that asks for `calls` (id, name, arguments string).
fn tool_calls(calls: &[(&str, &str, &str)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": calls},
            "finish_reason": "tool_calls"
        }]
    })
}

/// A chat completion answering `text`.
fn answer(text: &str) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"
        }]
    })
}

/// The text of a message's `content` (a string or text parts).
fn content_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// The `tool` message answering `id` in `body`'s messages.
fn tool_message<'a>(body: &'a Value, id: &str) -> Option<&'a Value> {
    body["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
}

/// The testkit's MCP server over Streamable HTTP on loopback.
struct McpServer {
    url: String,
    task: JoinHandle<std::io::Result<()>>,
}

impl McpServer {
    async fn start() -> Self {
        Self::start_with(switchboard_testkit::ServerConfig::default()).await
    }

    async fn start_with(config: switchboard_testkit::ServerConfig) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let task = tokio::spawn(switchboard_testkit::serve_http(config, listener));
        McpServer { url, task }
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A fresh directory under the system's temporary one.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-models-agent-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn run_example(args: &[&str]) -> (Result<Option<AgentOutcome>, String>, String) {
    let mut out = Vec::new();
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        agent_example::run(args.iter().map(|a| a.to_string()).collect(), &mut out),
    )
    .await
    .expect("the example finished within a minute");
    (result, String::from_utf8_lossy(&out).into_owned())
}

/// The task of the issue: two tool calls at once, then a sampling tool, a
/// tool that does not exist and arguments that are not JSON, then the
/// answer; every request checked. (The `sample` tool needs `--sampling`,
/// hence feature `sampling`.)
#[cfg(feature = "sampling")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_agent_completes_a_scripted_multi_tool_task() {
    let server = McpServer::start().await;
    let dir = scratch_dir("task");
    let config = dir.join("switchboard.toml");
    std::fs::write(
        &config,
        format!("[servers.test]\nurl = \"{}\"\n", server.url),
    )
    .unwrap();
    // A variable cargo sets for every test run stands in for an API key.
    let key = std::env::var("CARGO_MANIFEST_DIR").ok();
    let expected_auth = key.as_ref().map(|k| format!("Bearer {k}"));
    let media = dir.join("media");
    let media_dir = media.display().to_string();
    let mut chat_round = 0;
    let chat = FakeChat::start(Box::new(move |index, request, checks| {
        let body = &request.body;
        let is_chat = body.get("tools").is_some();
        if !is_chat {
            // The `sample` tool's sampling request, through --sampling.
            checks.check(index == 2, || {
                format!("a sampling request came as request {index}")
            });
            checks.check(
                body["messages"]
                    == json!([
                        {"role": "system", "content": "You are a test model."},
                        {"role": "user", "content": "Say hi"}
                    ]),
                || format!("sampling messages: {}", body["messages"]),
            );
            checks.check(body["max_tokens"] == 100, || {
                format!("max_tokens: {}", body["max_tokens"])
            });
            checks.check(body["model"] == "test-model", || {
                format!("sampling model: {}", body["model"])
            });
            return (200, answer("hi from the model"));
        }
        chat_round += 1;
        checks.check(body["model"] == "test-model", || {
            format!("model: {}", body["model"])
        });
        checks.check(request.header("authorization") == expected_auth, || {
            format!(
                "round {chat_round}: authorization {:?}",
                request.header("authorization")
            )
        });
        match chat_round {
            1 => {
                checks.check(
                    body["messages"]
                        == json!([
                            // The system prompt, then the server's own instructions.
                            {"role": "system", "content": "Use the tools.\n\n\
                                Instructions from MCP server `test`:\n\
                                Test server for switchboard."},
                            {"role": "user", "content": "add 2 and 3, then echo hello agent"}
                        ]),
                    || format!("round 1 messages: {}", body["messages"]),
                );
                let tools = body["tools"].as_array().cloned().unwrap_or_default();
                let find = |name: &str| {
                    tools
                        .iter()
                        .find(|t| t["function"]["name"] == name)
                        .cloned()
                };
                let add = find("mcp__test__add");
                checks.check(
                    add.as_ref().is_some_and(|add| {
                        add["type"] == "function"
                            && add["function"]["description"] == "Adds two numbers"
                            && add["function"]["parameters"]["properties"]
                                == json!({"a": {"type": "number"}, "b": {"type": "number"}})
                            && add["function"]["parameters"]["required"] == json!(["a", "b"])
                    }),
                    || format!("the add tool's definition: {add:?}"),
                );
                let echo = find("mcp__test__echo");
                checks.check(
                    echo.as_ref().is_some_and(|echo| {
                        echo["type"] == "function"
                            && echo["function"]["parameters"]["properties"]["text"]["type"]
                                == "string"
                    }),
                    || format!("the echo tool's definition: {echo:?}"),
                );
                checks.check(find("mcp__test__sample").is_some(), || {
                    "the sample tool is not offered".into()
                });
                (
                    200,
                    tool_calls(&[
                        ("call_add", "mcp__test__add", r#"{"a": 2, "b": 3}"#),
                        ("call_echo", "mcp__test__echo", r#"{"text": "hello agent"}"#),
                    ]),
                )
            }
            2 => {
                let messages = body["messages"].as_array().cloned().unwrap_or_default();
                checks.check(messages.len() == 5, || {
                    format!("round 2: {} messages: {}", messages.len(), body["messages"])
                });
                let assistant = messages.get(2).cloned().unwrap_or_default();
                checks.check(
                    assistant["role"] == "assistant"
                        && assistant["tool_calls"][0]["id"] == "call_add"
                        && assistant["tool_calls"][1]["id"] == "call_echo",
                    || format!("round 2: the assistant message sent back: {assistant}"),
                );
                // In the order the model asked.
                checks.check(
                    messages
                        .get(3)
                        .is_some_and(|m| m["tool_call_id"] == "call_add")
                        && messages
                            .get(4)
                            .is_some_and(|m| m["tool_call_id"] == "call_echo"),
                    || format!("round 2: tool messages out of order: {}", body["messages"]),
                );
                let add = tool_message(body, "call_add").map(content_text);
                checks.check(add.as_deref().is_some_and(|t| t.contains('5')), || {
                    format!("round 2: the add result: {add:?}")
                });
                let echo = tool_message(body, "call_echo").map(content_text);
                checks.check(
                    echo.as_deref().is_some_and(|t| t.contains("hello agent")),
                    || format!("round 2: the echo result: {echo:?}"),
                );
                (
                    200,
                    tool_calls(&[
                        (
                            "call_sample",
                            "mcp__test__sample",
                            r#"{"prompt": "Say hi"}"#,
                        ),
                        ("call_ghost", "mcp__nope__ghost", "{}"),
                        ("call_bad", "mcp__test__add", "{not json"),
                        ("call_image", "mcp__test__image", "{}"),
                    ]),
                )
            }
            3 => {
                checks.check(index == 3, || format!("round 3 came as request {index}"));
                let sample = tool_message(body, "call_sample").map(content_text);
                checks.check(
                    sample
                        .as_deref()
                        .is_some_and(|t| t.contains("hi from the model")),
                    || format!("round 3: the sample result: {sample:?}"),
                );
                let ghost = tool_message(body, "call_ghost").map(content_text);
                checks.check(
                    ghost
                        .as_deref()
                        .is_some_and(|t| t.contains("mcp__nope__ghost")),
                    || format!("round 3: the unknown tool's error: {ghost:?}"),
                );
                let bad = tool_message(body, "call_bad").map(content_text);
                checks.check(
                    bad.as_deref().is_some_and(|t| t.contains("not valid JSON")),
                    || format!("round 3: the bad arguments' error: {bad:?}"),
                );
                // Chat Completions takes no image in a tool message: the
                // image is saved in the run's media folder, named in text.
                let image = tool_message(body, "call_image").map(content_text);
                checks.check(
                    image.as_deref().is_some_and(|t| {
                        t.contains("a 1x1 PNG image") && t.contains(media_dir.as_str())
                    }),
                    || format!("round 3: the image result: {image:?}"),
                );
                (200, answer("2 + 3 = 5, and the echo said hello agent."))
            }
            _ => {
                checks
                    .failures
                    .push(format!("unexpected round {chat_round}"));
                (500, json!({"error": {"message": "the script is over"}}))
            }
        }
    }))
    .await;

    let mut args = vec![
        "--base-url",
        &chat.base,
        "--model",
        "test-model",
        "--config",
        config.to_str().unwrap(),
        "--system",
        "Use the tools.",
        "--sampling",
        "--media",
        media.to_str().unwrap(),
    ];
    let key_env = ["--api-key-env", "CARGO_MANIFEST_DIR"];
    if key.is_some() {
        args.extend(key_env);
    } else {
        args.extend(["--api-key-env", "SWITCHBOARD_MODELS_TEST_NO_SUCH_VAR"]);
    }
    args.extend(["add 2 and 3, then echo hello agent"]);
    let (result, output) = run_example(&args).await;
    let (requests, failures) = chat.finish();
    // One session folder with the one image, its bytes as the server sent them.
    let saved: Vec<std::path::PathBuf> = std::fs::read_dir(&media)
        .map(|sessions| {
            sessions
                .flatten()
                .flat_map(|s| std::fs::read_dir(s.path()).into_iter().flatten().flatten())
                .map(|f| f.path())
                .collect()
        })
        .unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(saved.len(), 1, "{saved:?}\noutput:\n{output}");
    assert!(
        saved[0].extension().is_some_and(|e| e == "png"),
        "{saved:?}"
    );

    assert!(
        failures.is_empty(),
        "failed checks: {failures:#?}\noutput:\n{output}"
    );
    let outcome = result
        .unwrap_or_else(|e| panic!("{e}\noutput:\n{output}"))
        .expect("an outcome");
    assert_eq!(requests.len(), 4, "three rounds and one sampling request");
    assert_eq!(outcome.text, "2 + 3 = 5, and the echo said hello agent.");
    assert_eq!(outcome.rounds, 3);
    let calls: Vec<(&str, Option<&str>, Option<&str>, bool)> = outcome
        .calls
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.server.as_deref(),
                c.tool.as_deref(),
                c.is_error,
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("mcp__test__add", Some("test"), Some("add"), false),
            ("mcp__test__echo", Some("test"), Some("echo"), false),
            ("mcp__test__sample", Some("test"), Some("sample"), false),
            ("mcp__nope__ghost", None, None, true),
            ("mcp__test__add", Some("test"), Some("add"), true),
            ("mcp__test__image", Some("test"), Some("image"), false),
        ]
    );
    assert!(output.contains("1 server(s) ready"), "{output}");
    assert!(
        output.contains(r#"→ mcp__test__add {"a": 2, "b": 3}"#),
        "{output}"
    );
    assert!(output.contains("← mcp__test__add: 5"), "{output}");
    assert!(
        output.contains("← mcp__nope__ghost (error): there is no tool"),
        "{output}"
    );
    assert!(
        output
            .trim_end()
            .ends_with("2 + 3 = 5, and the echo said hello agent."),
        "{output}"
    );
    if let Some(key) = &key {
        assert!(!output.contains(key.as_str()), "the key is never printed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_keeps_calling_tools_stops_at_the_round_limit() {
    let server = McpServer::start().await;
    let chat = FakeChat::start(Box::new(|index, request, checks| {
        if index > 0 {
            let previous = format!("call_{}", index - 1);
            let echoed = tool_message(&request.body, &previous).map(content_text);
            checks.check(echoed.as_deref() == Some("again"), || {
                format!("request {index}: the echo result: {echoed:?}")
            });
        }
        let id = format!("call_{index}");
        (
            200,
            tool_calls(&[(&id, "mcp__test__echo", r#"{"text": "again"}"#)]),
        )
    }))
    .await;
    let spec = format!("test={}", server.url);
    let (result, output) = run_example(&[
        "--base-url",
        &chat.base,
        "--model",
        "m",
        "--server",
        &spec,
        "--max-rounds",
        "3",
        "--api-key-env",
        "SWITCHBOARD_MODELS_TEST_NO_SUCH_VAR",
        "loop forever",
    ])
    .await;
    let (requests, failures) = chat.finish();
    assert!(failures.is_empty(), "{failures:#?}");
    let error = result.expect_err("the run fails");
    assert!(
        error.starts_with("the model was still calling tools after 3 rounds (2 tool calls made)"),
        "{error}"
    );
    assert_eq!(requests.len(), 3, "no request after the limit");
    assert_eq!(output.matches("→ mcp__test__echo").count(), 2, "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_error_is_reported_with_its_status_and_message() {
    let server = McpServer::start().await;
    let chat = FakeChat::start(Box::new(|_, _, _| {
        (
            500,
            json!({"error": {"message": "model exploded", "type": "server_error"}}),
        )
    }))
    .await;
    let dir = scratch_dir("status");
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"test": {"type": "http", "url": server.url}}}).to_string(),
    )
    .unwrap();
    let (result, output) = run_example(&[
        "--base-url",
        &format!("{}/chat/completions", chat.base),
        "--model",
        "m",
        "--config",
        config.to_str().unwrap(),
        "--api-key-env",
        "SWITCHBOARD_MODELS_TEST_NO_SUCH_VAR",
        "hi",
    ])
    .await;
    let (requests, failures) = chat.finish();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(output.contains("1 server(s) ready"), "{output}");
    // A 500 is sent again, as many times as the client's retries say.
    assert_eq!(
        requests.len(),
        1 + switchboard_models::chat::DEFAULT_RETRIES as usize
    );
    let error = result.expect_err("the run fails");
    assert!(
        error.contains("round 1: the model request failed"),
        "{error}"
    );
    assert!(
        error.contains("answered HTTP 500 Internal Server Error: model exploded"),
        "{error}"
    );
}

#[tokio::test]
async fn without_tools_the_request_has_none_and_the_answer_ends_the_run() {
    let chat = FakeChat::start(Box::new(|_, request, checks| {
        checks.check(request.body.get("tools").is_none(), || {
            format!("tools sent: {}", request.body["tools"])
        });
        checks.check(request.body["temperature"] == 0.0, || {
            format!("temperature: {}", request.body["temperature"])
        });
        checks.check(request.header("authorization").is_none(), || {
            "a key was sent".into()
        });
        (200, answer("just text"))
    }))
    .await;
    let hub = Hub::builder().persist(false).build().unwrap();
    let client = ChatClient::new(chat.base.clone(), "m").unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let agent = Agent::builder(hub.clone(), client)
        .request_field("temperature", json!(0.0))
        .observer(move |e| seen.lock().unwrap().push(format!("{e:?}")))
        .build()
        .unwrap();
    let outcome = agent.run("hello").await.unwrap();
    hub.shutdown().await;
    let (requests, failures) = chat.finish();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(requests.len(), 1);
    assert_eq!(outcome.text, "just text");
    assert_eq!(outcome.rounds, 1);
    assert!(outcome.calls.is_empty());
    assert_eq!(outcome.messages.len(), 2, "the prompt and the answer");
    let events = events.lock().unwrap();
    assert!(events[0].starts_with("Request"), "{events:?}");
    assert!(events[1].starts_with("Answer"), "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_application_declines_is_not_made_and_the_model_is_told() {
    let server = McpServer::start().await;
    let chat = FakeChat::start(Box::new(|index, request, checks| match index {
        0 => (
            200,
            tool_calls(&[
                ("call_slow", "mcp__test__slow", r#"{"ms": 1}"#),
                ("call_echo", "mcp__test__echo", r#"{"text": "not allowed"}"#),
            ]),
        ),
        _ => {
            let slow = tool_message(&request.body, "call_slow").map(content_text);
            checks.check(
                slow.as_deref().is_some_and(|t| !t.contains("declined")),
                || format!("the approved call: {slow:?}"),
            );
            let echo = tool_message(&request.body, "call_echo").map(content_text);
            checks.check(
                echo.as_deref().is_some_and(|t| {
                    t.contains("the user declined this call to `mcp__test__echo`")
                }),
                || format!("the declined call: {echo:?}"),
            );
            (200, answer("done"))
        }
    }))
    .await;
    let hub = Hub::builder()
        .persist(false)
        .server(agent_example::server_from_flag(&format!("test={}", server.url)).unwrap())
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let agent = Agent::builder(
        hub.clone(),
        ChatClient::new(chat.base.clone(), "m").unwrap(),
    )
    // Only what the server calls read-only runs.
    .approval(move |request| {
        seen.lock().unwrap().push((
            request.name.clone(),
            request.server.clone(),
            request.tool.clone(),
            request.arguments.clone(),
        ));
        let read_only = request.hints.read_only == Some(true);
        async move { read_only }
    })
    .build()
    .unwrap();
    let outcome = agent.run("go").await.unwrap();
    hub.shutdown().await;
    let (_, failures) = chat.finish();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(outcome.text, "done");
    let flags: Vec<(&str, bool)> = outcome
        .calls
        .iter()
        .map(|c| (c.name.as_str(), c.is_error))
        .collect();
    assert_eq!(
        flags,
        [("mcp__test__slow", false), ("mcp__test__echo", true)]
    );
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(
        asked[1],
        (
            "mcp__test__echo".to_owned(),
            "test".to_owned(),
            "echo".to_owned(),
            Some(serde_json::from_value(json!({"text": "not allowed"})).unwrap())
        )
    );
}

#[tokio::test]
async fn the_example_explains_itself() {
    let (result, output) = run_example(&["--help"]).await;
    assert!(result.unwrap().is_none());
    assert!(output.contains("--base-url URL"), "{output}");
    let (result, _) = run_example(&["--model", "m", "hi"]).await;
    assert_eq!(result.unwrap_err(), "--base-url is required (see --help)");
    let (result, _) = run_example(&["--bogus"]).await;
    assert_eq!(result.unwrap_err(), "unknown option `--bogus` (see --help)");
}

#[test]
fn the_example_takes_a_server_as_a_url_or_a_command_line() {
    use switchboard_hub::TransportConfig;
    let named = agent_example::server_from_flag("files=npx -y pkg --root=/tmp").unwrap();
    assert_eq!(named.name, "files");
    let TransportConfig::Stdio { command, args, .. } = &named.transport else {
        panic!("{named:?}")
    };
    assert_eq!(command, "npx");
    assert_eq!(args, &["-y", "pkg", "--root=/tmp"]);
    let unnamed = agent_example::server_from_flag("npx -y pkg --root=/tmp").unwrap();
    assert_eq!(unnamed.name, "server");
    let remote = agent_example::server_from_flag("docs=https://example.com/mcp").unwrap();
    assert_eq!(remote.name, "docs");
    assert!(
        matches!(&remote.transport, TransportConfig::Http { url, .. } if url == "https://example.com/mcp"),
        "{remote:?}"
    );
    assert!(agent_example::server_from_flag("  ").is_err());
}

/// The OAuth redirect URI of the test login (nothing listens: the test
/// reads the code from the authorization server's redirect).
const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// What the user does in the browser: the testkit's authorization server
/// approves at once and redirects; the code, state and issuer from there.
async fn approve(url: &str) -> (String, String, Option<String>) {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = http.get(url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 302, "{url}");
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(REDIRECT), "{location}");
    let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    (
        query["code"].clone(),
        query["state"].clone(),
        query.get("iss").cloned(),
    )
}

/// The `authenticate` pseudo-tool through the application's login hook: a
/// server that needs a login is offered to the model as `…__authenticate`
/// (and none of its tools); the model calls it and gets the login URL for
/// the user; the user logs in (the test, inside the hook) and the hub
/// connects the server, so the next round of the same run lists the
/// server's tools, which the model then calls. (The hub's own OAuth, and
/// the tools in the next run, are `a_server_that_needs_a_login_offers_an_authenticate_tool`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_asks_for_a_login_and_the_next_round_has_the_servers_tools() {
    use switchboard::transport::http::AuthProvider;
    use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
    use switchboard_auth::provider::OAuthProvider;
    use switchboard_auth::store::{CredentialStore, FileStore, StoredCredentials};
    use switchboard_hub::{Dialect, Origin, Scope, ServerConfig, ServerState, TransportConfig};

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mcp = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = tokio::spawn(switchboard_testkit::serve_http(
        switchboard_testkit::ServerConfig::default()
            .with_auth(switchboard_testkit::AuthConfig::default()),
        listener,
    ));
    let dir = scratch_dir("login");
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(dir.join("credentials.json")));
    let flow = OAuthFlow::new(
        OAuthConfig::new("switchboard-test", REDIRECT, store).allow_http_loopback(true),
    )
    .unwrap();
    // The hub sends the tokens once there are some.
    let logged_in: Arc<Mutex<Option<StoredCredentials>>> = Arc::default();
    let hub = Hub::builder()
        .server(ServerConfig::new(
            "secure",
            TransportConfig::Http {
                url: mcp.clone(),
                headers: Default::default(),
                kind: Default::default(),
            },
            Origin {
                file: dir.join("switchboard.toml"),
                dialect: Dialect::Switchboard,
                scope: Scope::Explicit,
            },
        ))
        .auth({
            let (flow, logged_in) = (flow.clone(), logged_in.clone());
            move |_| {
                let credentials = logged_in.lock().unwrap().clone()?;
                let provider = OAuthProvider::for_credentials(flow.clone(), &credentials);
                Some(Arc::new(provider) as Arc<dyn AuthProvider>)
            }
        })
        .persist(false)
        .build()
        .unwrap();
    let report = hub.start().await.unwrap();
    assert!(
        matches!(&report.not_ready[..], [(_, ServerState::NeedsAuth { .. })]),
        "{report:?}"
    );

    let mut chat_round = 0;
    let chat = FakeChat::start(Box::new(move |_, request, checks| {
        let body = &request.body;
        chat_round += 1;
        let names: Vec<String> = body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        match chat_round {
            1 => {
                checks.check(names == ["mcp__secure__authenticate"], || {
                    format!("round 1 tools: {names:?}")
                });
                let description = body["tools"][0]["function"]["description"]
                    .as_str()
                    .unwrap_or_default();
                checks.check(
                    description.contains("server `secure` needs the user to log in"),
                    || format!("the authenticate tool says: {description}"),
                );
                (
                    200,
                    tool_calls(&[("call_login", "mcp__secure__authenticate", "{}")]),
                )
            }
            2 => {
                // The same run: the login completed while the tool ran,
                // and this round lists the server's tools instead.
                let told = tool_message(body, "call_login")
                    .map(content_text)
                    .unwrap_or_default();
                checks.check(
                    told.contains("Ask the user to open this URL") && told.contains("/authorize?"),
                    || format!("the login's result: {told}"),
                );
                checks.check(
                    names.iter().any(|n| n == "mcp__secure__echo")
                        && !names.iter().any(|n| n.ends_with("__authenticate")),
                    || format!("round 2 tools (after the login): {names:?}"),
                );
                (
                    200,
                    tool_calls(&[(
                        "call_echo",
                        "mcp__secure__echo",
                        r#"{"text":"after the login"}"#,
                    )]),
                )
            }
            3 => {
                let told = tool_message(body, "call_echo")
                    .map(content_text)
                    .unwrap_or_default();
                checks.check(told.contains("after the login"), || {
                    format!("the echo's result: {told}")
                });
                (200, answer("done"))
            }
            n => {
                checks.check(false, || format!("an unexpected request {n}"));
                (500, json!({"error": "unexpected"}))
            }
        }
    }))
    .await;
    // The application's login: begins the flow, and (this test's user
    // being quick) the user logs in and the hub connects the server
    // before the tool answers.
    let agent = Agent::builder(
        hub.clone(),
        ChatClient::new(chat.base.clone(), "test-model").unwrap(),
    )
    .login({
        let (flow, mcp, hub) = (flow.clone(), mcp.clone(), hub.clone());
        move |server| {
            let (flow, mcp, hub, logged_in) =
                (flow.clone(), mcp.clone(), hub.clone(), logged_in.clone());
            async move {
                assert_eq!(server, "secure");
                let request = flow.begin(&mcp, None).await.map_err(|e| e.to_string())?;
                let url = request.authorization_url.to_string();
                let (code, state, iss) = approve(&url).await;
                let credentials = flow.finish(&code, &state, iss.as_deref()).await.unwrap();
                *logged_in.lock().unwrap() = Some(credentials);
                assert_eq!(hub.restart(&server).await.unwrap(), ServerState::Ready);
                Ok(url)
            }
        }
    })
    .build()
    .unwrap();
    let outcome = agent.run("use the secure server").await.unwrap();
    assert_eq!(outcome.text, "done");
    assert_eq!(outcome.rounds, 3);
    let (_, failures) = chat.finish();
    assert!(failures.is_empty(), "{failures:#?}");
    hub.shutdown().await;
    server.abort();
}

/// Plays the browser: GETs the authorization URL (the test authorization
/// server approves at once) and returns where it redirects to.
#[cfg(feature = "oauth")]
fn approve_raw(authorization_url: &str) -> url::Url {
    use std::io::{Read as _, Write as _};
    let url = url::Url::parse(authorization_url).unwrap();
    let host = url.host_str().unwrap();
    let port = url.port().unwrap();
    let mut stream = std::net::TcpStream::connect((host, port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let target = format!("{}?{}", url.path(), url.query().unwrap_or(""));
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 302"), "{answer}");
    let location = answer
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(name, _)| name.eq_ignore_ascii_case("location"))
                .map(|(_, value)| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no Location in {answer}"));
    url::Url::parse(&location).unwrap()
}

/// A server that needs a login offers the model its `authenticate` tool;
/// the call answers with the login URL; once the user (the test) has
/// logged in, the next request lists the server's tools instead.
#[cfg(feature = "oauth")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_needs_a_login_offers_an_authenticate_tool() {
    use switchboard_auth::pending::FilePendingStore;
    use switchboard_auth::store::FileStore;
    use switchboard_hub::ServerState;
    use switchboard_hub::hub::OAuthLogins;
    use switchboard_models::toolset::ToolsetOptions;

    let (server, mcp) = switchboard_testkit::spawn_http(&["--auth"]).await;
    let dir = scratch_dir("authenticate");

    let login_url = Arc::new(Mutex::new(None::<String>));
    let seen_url = login_url.clone();
    let tool_names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let chat = FakeChat::start(Box::new(move |index, request, checks| {
        let body = &request.body;
        let tools = tool_names(body);
        match index {
            0 => {
                checks.check(tools == ["mcp__remote__authenticate"], || {
                    format!("before the login: {tools:?}")
                });
                (
                    200,
                    tool_calls(&[("call_auth", "mcp__remote__authenticate", "{}")]),
                )
            }
            1 => {
                let text = tool_message(body, "call_auth")
                    .map(content_text)
                    .unwrap_or_default();
                let url = text
                    .split_whitespace()
                    .find(|w| w.starts_with("http") && w.contains("response_type=code"))
                    .map(str::to_owned);
                checks.check(url.is_some(), || format!("no login URL in {text:?}"));
                *seen_url.lock().unwrap() = url;
                (200, answer("Please open the login page."))
            }
            2 => {
                checks.check(
                    tools.iter().any(|t| t == "mcp__remote__echo")
                        && !tools.iter().any(|t| t.ends_with("authenticate")),
                    || format!("after the login: {tools:?}"),
                );
                (
                    200,
                    tool_calls(&[("call_echo", "mcp__remote__echo", r#"{"text": "in"}"#)]),
                )
            }
            _ => {
                let echo = tool_message(body, "call_echo").map(content_text);
                checks.check(echo.as_deref() == Some("in"), || {
                    format!("the echo: {echo:?}")
                });
                (200, answer("done"))
            }
        }
    }))
    .await;

    let logins = OAuthLogins::new(
        "switchboard-test",
        "http://127.0.0.1:9/callback",
        Arc::new(FileStore::new(dir.join("credentials.json"))),
    )
    .pending_store(Arc::new(FilePendingStore::new(dir.join("pending.json"))))
    .allow_http_loopback(true);
    let hub = Hub::builder()
        .persist(false)
        .server(agent_example::server_from_flag(&format!("remote={mcp}")).unwrap())
        .oauth(logins)
        .build()
        .unwrap();
    let report = hub.start().await.unwrap();
    assert!(
        matches!(report.not_ready[..], [(_, ServerState::NeedsAuth { .. })]),
        "{report:?}"
    );
    let agent = Agent::builder(
        hub.clone(),
        ChatClient::new(chat.base.clone(), "m").unwrap(),
    )
    .toolset_options(ToolsetOptions::default().authenticate(true))
    .build()
    .unwrap();
    let first = agent.run("echo in").await.unwrap();
    assert_eq!(first.text, "Please open the login page.");

    // The user logs in at the URL the model was given.
    let url = login_url.lock().unwrap().clone().expect("a login URL");
    let redirect = tokio::task::spawn_blocking(move || approve_raw(&url))
        .await
        .unwrap();
    let query = |name: &str| {
        redirect
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let (name, state) = hub
        .finish_login(
            &query("state").unwrap(),
            &query("code").unwrap(),
            query("iss").as_deref(),
        )
        .await
        .unwrap();
    assert_eq!((name.as_str(), state), ("remote", ServerState::Ready));

    let mut messages = first.messages;
    messages.push(json!({"role": "user", "content": "I have logged in."}));
    let second = agent.run_messages(messages).await.unwrap();
    assert_eq!(second.text, "done");
    hub.shutdown().await;
    server.abort();
    let (requests, failures) = chat.finish();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(requests.len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The function named `name` in a request's `tools`.
fn tool_named<'a>(body: &'a Value, name: &str) -> Option<&'a Value> {
    body["tools"]
        .as_array()?
        .iter()
        .find(|t| t["function"]["name"] == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_sees_the_skills_and_loads_one_when_it_needs_it() {
    let server = McpServer::start_with(
        switchboard_testkit::ServerConfig::from_args(["--skills".to_owned()]).unwrap(),
    )
    .await;
    let chat = FakeChat::start(Box::new(|index, request, checks| match index {
        0 => {
            let load = tool_named(&request.body, "load_skill");
            checks.check(
                load.and_then(|t| t["function"]["description"].as_str())
                    .is_some_and(|d| {
                        d.contains("- pdf-processing: Extract, fill, and assemble PDF documents")
                    }),
                || format!("load_skill lists the skills: {load:?}"),
            );
            checks.check(
                tool_named(&request.body, "read_skill_file").is_some()
                    && tool_named(&request.body, "mcp__test__echo").is_some(),
                || "the skill tools beside the server's".into(),
            );
            (
                200,
                tool_calls(&[("call_load", "load_skill", r#"{"name": "pdf-processing"}"#)]),
            )
        }
        1 => {
            let loaded = tool_message(&request.body, "call_load").map(content_text);
            checks.check(
                loaded.as_deref().is_some_and(|t| {
                    t.contains("# PDF processing") && t.contains("references/FORMS.md")
                }),
                || format!("the skill's instructions: {loaded:?}"),
            );
            (
                200,
                tool_calls(&[(
                    "call_file",
                    "read_skill_file",
                    r#"{"skill": "pdf-processing", "path": "references/FORMS.md"}"#,
                )]),
            )
        }
        _ => {
            let file = tool_message(&request.body, "call_file").map(content_text);
            checks.check(
                file.as_deref().is_some_and(|t| t.contains("# Forms")),
                || format!("the file: {file:?}"),
            );
            (200, answer("done"))
        }
    }))
    .await;
    let hub = Hub::builder()
        .persist(false)
        .server(agent_example::server_from_flag(&format!("test={}", server.url)).unwrap())
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let agent = Agent::builder(
        hub.clone(),
        ChatClient::new(chat.base.clone(), "m").unwrap(),
    )
    .build()
    .unwrap();
    let outcome = agent.run("fill in the form").await.unwrap();
    let (_, failures) = chat.finish();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(outcome.text, "done");
    let calls: Vec<(&str, bool)> = outcome
        .calls
        .iter()
        .map(|c| (c.name.as_str(), c.is_error))
        .collect();
    assert_eq!(calls, [("load_skill", false), ("read_skill_file", false)]);

    // Turned off: no skill tools.
    let chat = FakeChat::start(Box::new(|_, request, checks| {
        checks.check(tool_named(&request.body, "load_skill").is_none(), || {
            "no load_skill".into()
        });
        (200, answer("done"))
    }))
    .await;
    let agent = Agent::builder(
        hub.clone(),
        ChatClient::new(chat.base.clone(), "m").unwrap(),
    )
    .skills(false)
    .build()
    .unwrap();
    agent.run("hi").await.unwrap();
    hub.shutdown().await;
    let (_, failures) = chat.finish();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The hub's tool policy holds for the agent: a denied tool is neither
/// offered to the model nor called; an `ask` tool is refused without the
/// application's approver, and answered by it when it gives one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_follows_the_hubs_tool_policy() {
    let server = McpServer::start().await;
    let chat = FakeChat::start(Box::new(|index, request, checks| match index {
        0 => {
            checks.check(
                tool_named(&request.body, "mcp__test__slow").is_none(),
                || "the denied tool was offered to the model".to_owned(),
            );
            (
                200,
                tool_calls(&[
                    ("call_slow", "mcp__test__slow", r#"{"ms": 1}"#),
                    ("call_echo", "mcp__test__echo", r#"{"text": "asked"}"#),
                ]),
            )
        }
        1 => {
            let slow = tool_message(&request.body, "call_slow").map(content_text);
            checks.check(
                slow.as_deref().is_some_and(|t| t.contains("no tool named")),
                || format!("the denied call: {slow:?}"),
            );
            let echo = tool_message(&request.body, "call_echo").map(content_text);
            checks.check(
                echo.as_deref()
                    .is_some_and(|t| t.contains("was not called") && t.contains("asks first")),
                || format!("the asked call without an approver: {echo:?}"),
            );
            (200, answer("done"))
        }
        2 => (
            200,
            tool_calls(&[("call_echo", "mcp__test__echo", r#"{"text": "allowed"}"#)]),
        ),
        _ => {
            let echo = tool_message(&request.body, "call_echo").map(content_text);
            checks.check(
                echo.as_deref()
                    .is_some_and(|t| t.contains("allowed") && !t.contains("not called")),
                || format!("the approved call: {echo:?}"),
            );
            (200, answer("done"))
        }
    }))
    .await;
    let mut policy = switchboard_hub::config::policy::ToolPolicy::default();
    policy.deny.push(("policy.toml".into(), "test/slow".into()));
    policy.ask.push(("policy.toml".into(), "test/echo".into()));
    let hub = Hub::builder()
        .persist(false)
        .server(agent_example::server_from_flag(&format!("test={}", server.url)).unwrap())
        .tool_policy(policy)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let chat_client = ChatClient::new(chat.base.clone(), "m").unwrap();
    let outcome = Agent::builder(hub.clone(), chat_client.clone())
        .build()
        .unwrap()
        .run("go")
        .await
        .unwrap();
    assert!(
        outcome.calls.iter().all(|c| c.is_error),
        "{:?}",
        outcome.calls
    );
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let approver: Arc<dyn switchboard_hub::hub::ToolApprover> = Arc::new(
        move |ask: switchboard_hub::hub::ToolAsk| -> switchboard::BoxFuture<
            'static,
            switchboard_hub::hub::ToolAnswer,
        > {
            seen.lock().unwrap().push((ask.server.clone(), ask.tool.clone()));
            Box::pin(async { switchboard_hub::hub::ToolAnswer::Once })
        },
    );
    let outcome = Agent::builder(hub.clone(), chat_client)
        .tool_approver(approver)
        .build()
        .unwrap()
        .run("go")
        .await
        .unwrap();
    hub.shutdown().await;
    let (_, failures) = chat.finish();
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(!outcome.calls[0].is_error, "{:?}", outcome.calls);
    assert_eq!(
        *asked.lock().unwrap(),
        [("test".to_owned(), "echo".to_owned())]
    );
}
