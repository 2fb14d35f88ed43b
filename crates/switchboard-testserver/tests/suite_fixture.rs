//! `--suite-fixture` over the in-memory pair: the names, contents and
//! behaviours the official conformance suite's server scenarios check, in
//! both eras.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testserver::{
    DEFAULT_MODERN_VERSION, Era, SUITE_PROMPT_NAMES, SUITE_TOOL_NAMES, ServerConfig, serve,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

struct Peer {
    writer: WriteHalf<DuplexStream>,
    reader: BufReader<ReadHalf<DuplexStream>>,
    next_id: u64,
}

impl Peer {
    fn start(era: Era) -> Peer {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(server);
        let config = ServerConfig::default().with_era(era).with_suite_fixture();
        tokio::spawn(serve(config, sr, sw));
        let (cr, cw) = tokio::io::split(client);
        Peer {
            writer: cw,
            reader: BufReader::new(cr),
            next_id: 0,
        }
    }

    async fn send(&mut self, msg: Value) {
        let mut line = msg.to_string().into_bytes();
        line.push(b'\n');
        self.writer.write_all(&line).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(5), self.reader.read_line(&mut line))
            .await
            .expect("timed out waiting for the server")
            .unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad JSON {line:?}: {e}"))
    }

    /// Send a request; collect what arrives until its answer.
    async fn exchange(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut before = Vec::new();
        loop {
            let msg = self.recv().await;
            if msg["id"] == json!(id) && msg.get("method").is_none() {
                return (msg, before);
            }
            before.push(msg);
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.exchange(method, params).await.0
    }

    async fn initialize(&mut self, capabilities: Value) {
        let init = self
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                       "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        assert!(init["result"]["capabilities"]["completions"].is_object());
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }
}

fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": DEFAULT_MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

fn all_caps() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {}})
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn session_era_serves_the_suite_fixture() {
    let mut p = Peer::start(Era::Legacy);
    p.initialize(json!({"sampling": {}, "elicitation": {}}))
        .await;

    let tools = p.request("tools/list", json!({})).await;
    assert_eq!(names(&tools["result"], "tools"), SUITE_TOOL_NAMES);
    let schema = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .unwrap()["inputSchema"]
        .clone();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
    assert!(schema["if"].is_object() && schema["allOf"][0]["anyOf"].is_array());

    let call = |name: &str| json!({"name": name, "arguments": {}});
    let r = p.request("tools/call", call("test_simple_text")).await;
    assert_eq!(
        r["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );
    let r = p.request("tools/call", call("test_audio_content")).await;
    assert_eq!(r["result"]["content"][0]["mimeType"], "audio/wav");
    let r = p
        .request("tools/call", call("test_embedded_resource"))
        .await;
    assert_eq!(
        r["result"]["content"][0]["resource"]["uri"],
        "test://embedded-resource"
    );
    let r = p
        .request("tools/call", call("test_multiple_content_types"))
        .await;
    let types: Vec<&str> = r["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["text", "image", "resource"]);
    let r = p.request("tools/call", call("test_error_handling")).await;
    assert_eq!(r["result"]["isError"], true);

    // Logging: three lines at info, in order, before the result.
    p.request("logging/setLevel", json!({"level": "debug"}))
        .await;
    let (r, before) = p
        .exchange("tools/call", call("test_tool_with_logging"))
        .await;
    assert!(r["result"]["content"].is_array());
    let logs: Vec<&Value> = before.iter().map(|m| &m["params"]["data"]).collect();
    assert_eq!(
        logs,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ]
    );

    // Progress: 0, 50, 100 of 100 with the request's token.
    let (_, before) = p
        .exchange(
            "tools/call",
            json!({"name": "test_tool_with_progress", "arguments": {},
                   "_meta": {"progressToken": "tok"}}),
        )
        .await;
    let progress: Vec<(Value, Value)> = before
        .iter()
        .map(|m| {
            (
                m["params"]["progress"].clone(),
                m["params"]["progressToken"].clone(),
            )
        })
        .collect();
    assert_eq!(
        progress,
        [
            (json!(0), json!("tok")),
            (json!(50), json!("tok")),
            (json!(100), json!("tok"))
        ]
    );

    // Sampling: a sampling/createMessage with the prompt, the answer in the result.
    p.send(json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call",
                  "params": {"name": "test_sampling", "arguments": {"prompt": "Say hi"}}}))
        .await;
    let ask = p.recv().await;
    assert_eq!(ask["method"], "sampling/createMessage");
    assert_eq!(ask["params"]["messages"][0]["content"]["text"], "Say hi");
    assert_eq!(ask["params"]["maxTokens"], 100);
    p.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "hi there"},
        "model": "m", "stopReason": "endTurn"}}))
        .await;
    let r = p.recv().await;
    assert_eq!(r["result"]["content"][0]["text"], "LLM response: hi there");

    // SEP-1034: a default for every primitive type.
    p.send(json!({"jsonrpc": "2.0", "id": 101, "method": "tools/call",
                  "params": {"name": "test_elicitation_sep1034_defaults", "arguments": {}}}))
        .await;
    let ask = p.recv().await;
    assert_eq!(ask["method"], "elicitation/create");
    let props = &ask["params"]["requestedSchema"]["properties"];
    assert_eq!(props["name"]["default"], "John Doe");
    assert_eq!(props["age"]["default"], 30);
    assert_eq!(props["score"]["default"], 95.5);
    assert_eq!(props["status"]["default"], "active");
    assert_eq!(props["verified"]["default"], true);
    p.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}}))
        .await;
    let r = p.recv().await;
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Elicitation completed: action=decline, content={}"
    );

    // Prompts, resources, the template, completion, subscriptions.
    let prompts = p.request("prompts/list", json!({})).await;
    assert_eq!(names(&prompts["result"], "prompts"), SUITE_PROMPT_NAMES);
    let r = p
        .request(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments",
                   "arguments": {"arg1": "one", "arg2": "two"}}),
        )
        .await;
    let text = r["result"]["messages"].to_string();
    assert!(text.contains("one") && text.contains("two"), "{text}");
    let r = p
        .request(
            "prompts/get",
            json!({"name": "test_prompt_with_embedded_resource",
                   "arguments": {"resourceUri": "test://example-resource"}}),
        )
        .await;
    assert_eq!(r["result"]["messages"][0]["content"]["type"], "resource");
    let r = p
        .request("resources/read", json!({"uri": "test://static-text"}))
        .await;
    assert_eq!(
        r["result"]["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    let r = p
        .request("resources/read", json!({"uri": "test://static-binary"}))
        .await;
    assert_eq!(r["result"]["contents"][0]["mimeType"], "image/png");
    let r = p
        .request("resources/read", json!({"uri": "test://template/123/data"}))
        .await;
    assert!(
        r["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Data for ID: 123")
    );
    let r = p.request("resources/templates/list", json!({})).await;
    assert_eq!(
        r["result"]["resourceTemplates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );
    let r = p
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": "par"}}),
        )
        .await;
    assert_eq!(
        r["result"]["completion"]["values"],
        json!(["paris", "park", "party"])
    );
    let r = p
        .request(
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    assert_eq!(r["result"], json!({}));
}

#[tokio::test]
async fn stateless_era_answers_with_input_required() {
    let mut p = Peer::start(Era::Modern);
    let call = |name: &str, extra: Value| {
        let mut params = json!({"name": name, "arguments": {}, "_meta": meta(all_caps())});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        params
    };

    let r = p
        .request(
            "tools/call",
            call("test_input_required_result_elicitation", json!({})),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "input_required");
    assert_eq!(
        r["result"]["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    // Extra keys are ignored; a missing key is asked again; a malformed
    // answer or null inputResponses is an error.
    let accept = json!({"action": "accept", "content": {"name": "Alice"}});
    let r = p
        .request(
            "tools/call",
            call(
                "test_input_required_result_elicitation",
                json!({"inputResponses": {"user_name": accept, "other": accept}}),
            ),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "complete");
    let r = p
        .request(
            "tools/call",
            call(
                "test_input_required_result_elicitation",
                json!({"inputResponses": {"wrong_key": accept}}),
            ),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "input_required");
    for bad in [json!({"user_name": 12345}), Value::Null] {
        let r = p
            .request(
                "tools/call",
                call(
                    "test_input_required_result_elicitation",
                    json!({"inputResponses": bad}),
                ),
            )
            .await;
        assert_eq!(r["error"]["code"], -32602, "{r}");
    }

    // Three rounds, each with new state.
    let r1 = p
        .request(
            "tools/call",
            call("test_input_required_result_multi_round", json!({})),
        )
        .await;
    let s1 = r1["result"]["requestState"].clone();
    let r2 = p
        .request(
            "tools/call",
            call(
                "test_input_required_result_multi_round",
                json!({"inputResponses": {"step1": accept}, "requestState": s1}),
            ),
        )
        .await;
    assert_eq!(
        r2["result"]["inputRequests"]["step2"]["method"],
        "elicitation/create"
    );
    assert_ne!(r2["result"]["requestState"], s1);
    let r3 = p
        .request(
            "tools/call",
            call(
                "test_input_required_result_multi_round",
                json!({"inputResponses": {"step2": accept},
                       "requestState": r2["result"]["requestState"]}),
            ),
        )
        .await;
    assert_eq!(r3["result"]["resultType"], "complete");

    // The state is checked: echoed it completes with "state-ok", tampered
    // it is refused.
    let r = p
        .request(
            "tools/call",
            call("test_input_required_result_request_state", json!({})),
        )
        .await;
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let r = p
        .request(
            "tools/call",
            call(
                "test_input_required_result_request_state",
                json!({"inputResponses": {"confirmation": accept}, "requestState": state}),
            ),
        )
        .await;
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("state-ok")
    );
    let r = p
        .request(
            "tools/call",
            call(
                "test_input_required_result_request_state",
                json!({"inputResponses": {"confirmation": accept},
                       "requestState": format!("{state}-TAMPERED")}),
            ),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);

    // Only what the client declared is asked for.
    let r = p
        .request(
            "tools/call",
            json!({"name": "test_input_required_result_capabilities", "arguments": {},
                   "_meta": meta(json!({"sampling": {}}))}),
        )
        .await;
    let asked: Vec<&str> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v["method"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["sampling/createMessage"]);

    // A needed capability that was not declared: -32021 naming it.
    let r = p
        .request(
            "tools/call",
            json!({"name": "test_missing_capability", "arguments": {}, "_meta": meta(json!({}))}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );

    // No log lines without a level in _meta.
    let (r, before) = p
        .exchange(
            "tools/call",
            json!({"name": "test_logging_tool", "arguments": {}, "_meta": meta(json!({}))}),
        )
        .await;
    assert!(r["result"]["content"].is_array());
    assert!(before.is_empty(), "{before:?}");

    // A prompt that asks first.
    let r = p
        .request(
            "prompts/get",
            json!({"name": "test_input_required_result_prompt", "_meta": meta(all_caps())}),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "input_required");
    let r = p
        .request(
            "prompts/get",
            json!({"name": "test_input_required_result_prompt", "_meta": meta(all_caps()),
                   "inputResponses": {"user_context": {"action": "accept",
                                                       "content": {"context": "ctx"}}}}),
        )
        .await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"],
        "Prompt with context: ctx"
    );

    // Removed in 2026-07-28; not-found reads are -32602 with the uri;
    // caching hints on reads.
    let r = p.request("ping", json!({"_meta": meta(json!({}))})).await;
    assert_eq!(r["error"]["code"], -32601);
    let uri = "test://nonexistent-resource-for-conformance-testing";
    let r = p
        .request(
            "resources/read",
            json!({"uri": uri, "_meta": meta(json!({}))}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"]["uri"], uri);
    let r = p
        .request(
            "resources/read",
            json!({"uri": "test://static-text", "_meta": meta(json!({}))}),
        )
        .await;
    assert!(r["result"]["ttlMs"].is_u64() && r["result"]["cacheScope"].is_string());
}
