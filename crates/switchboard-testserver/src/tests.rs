use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

use super::*;

const V: &str = DEFAULT_MODERN_VERSION;

struct Client {
    writer: WriteHalf<DuplexStream>,
    reader: BufReader<ReadHalf<DuplexStream>>,
    server: JoinHandle<io::Result<()>>,
}

impl Client {
    fn start(config: ServerConfig) -> Client {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(server);
        let server = tokio::spawn(serve(config, sr, sw));
        let (cr, cw) = tokio::io::split(client);
        Client {
            writer: cw,
            reader: BufReader::new(cr),
            server,
        }
    }

    async fn send_raw(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
        self.writer.flush().await.unwrap();
    }

    async fn send(&mut self, msg: Value) {
        self.send_raw(&msg.to_string()).await;
    }

    /// Next line from the server, or `None` on EOF.
    async fn recv_line(&mut self) -> Option<String> {
        let mut line = String::new();
        let n = tokio::time::timeout(Duration::from_secs(5), self.reader.read_line(&mut line))
            .await
            .expect("timed out waiting for the server")
            .unwrap();
        (n > 0).then_some(line)
    }

    async fn recv(&mut self) -> Value {
        let line = self.recv_line().await.expect("unexpected EOF");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad JSON {line:?}: {e}"))
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let resp = self.recv().await;
        assert_eq!(resp["id"], json!(id), "{resp}");
        resp
    }

    async fn finish(mut self) -> io::Result<()> {
        self.writer.shutdown().await.unwrap();
        drop(self.writer);
        tokio::time::timeout(Duration::from_secs(5), self.server)
            .await
            .expect("server did not stop")
            .unwrap()
    }
}

fn meta() -> Value {
    meta_with(V)
}

fn meta_with(version: &str) -> Value {
    json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }})
}

fn modern(mut extra: Value) -> Value {
    let m = meta();
    extra["_meta"] = m["_meta"].clone();
    extra
}

async fn legacy_init(c: &mut Client, version: &str) -> Value {
    let resp = c
        .request(
            1,
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            }),
        )
        .await;
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    resp
}

#[test]
fn parses_flags() {
    let args = [
        "--era",
        "modern",
        "--modern-versions=2026-07-28,2027-01-01",
        "--page-size",
        "3",
        "--extra-tools",
        "10",
        "--fault",
        "garbage",
        "--fault=repeat-cursor",
        "--stderr-line",
        "hi there",
        "--record",
        "/tmp/x",
        "--name",
        "n",
        "--legacy-version",
        "2099-01-01",
        "--stderr-flood",
        "100",
        "--extra-tool",
        "b__c",
        "--extra-tool=d",
    ];
    let c = ServerConfig::from_args(args.iter().map(|s| s.to_string())).unwrap();
    assert_eq!(c.era, Era::Modern);
    assert_eq!(c.modern_versions, ["2026-07-28", "2027-01-01"]);
    assert_eq!(c.page_size, Some(3));
    assert_eq!(c.extra_tools, 10);
    assert_eq!(c.named_tools, ["b__c", "d"]);
    assert_eq!(c.faults, [Fault::Garbage, Fault::RepeatCursor]);
    assert_eq!(c.stderr_lines, ["hi there"]);
    assert_eq!(c.record.as_deref(), Some(std::path::Path::new("/tmp/x")));
    assert_eq!(c.name, "n");
    assert_eq!(c.legacy_version.as_deref(), Some("2099-01-01"));
    assert_eq!(c.stderr_flood, 100);

    assert_eq!(
        ServerConfig::from_args(Vec::new()).unwrap(),
        ServerConfig::default()
    );
    for bad in [
        &["--bogus"][..],
        &["--era", "x"],
        &["--fault", "x"],
        &["--page-size"],
    ] {
        assert!(ServerConfig::from_args(bad.iter().map(|s| s.to_string())).is_err());
    }
}

#[test]
fn schema_rich_const_roundtrips_exactly() {
    let v: Value = serde_json::from_str(SCHEMA_RICH_INPUT_SCHEMA).unwrap();
    assert_eq!(serde_json::to_string(&v).unwrap(), SCHEMA_RICH_INPUT_SCHEMA);
    assert_eq!(GARBAGE_LINE_NL, format!("{GARBAGE_LINE}\n").as_bytes());
}

#[tokio::test]
async fn legacy_handshake_and_tools_list() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Legacy));
    // Before initialize: only ping works.
    let r = c.request(9, "tools/list", json!({})).await;
    assert_eq!(r["error"]["code"], -32600);
    let r = c.request(8, "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    let r = c.request(7, "server/discover", meta()).await;
    assert_eq!(r["error"]["code"], -32601);

    let r = legacy_init(&mut c, "2025-06-18").await;
    let res = &r["result"];
    assert_eq!(res["protocolVersion"], "2025-06-18");
    assert_eq!(res["serverInfo"]["name"], DEFAULT_SERVER_NAME);
    assert_eq!(res["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(res["instructions"], "Test server for switchboard.");
    assert!(res.get("resultType").is_none());

    let r = c.request(2, "tools/list", json!({})).await;
    let tools = r["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_NAMES);
    assert!(r["result"].get("nextCursor").is_none());
    // The schema_rich schema is emitted byte-for-byte.
    let raw = serde_json::to_string(&r).unwrap();
    assert!(raw.contains(SCHEMA_RICH_INPUT_SCHEMA));

    let r = c
        .request(
            3,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        )
        .await;
    assert_eq!(r["result"]["structuredContent"]["sum"], 5);
    assert_eq!(r["result"]["content"][0]["text"], "5");
    let r = c
        .request(4, "tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["message"], "Unknown tool: nope");
    let r = c
        .request(5, "resources/read", json!({"uri": "test://nope"}))
        .await;
    assert_eq!(r["error"]["code"], -32002);
    assert_eq!(r["error"]["data"]["uri"], "test://nope");
    c.finish().await.unwrap();
}

#[tokio::test]
async fn legacy_version_negotiation() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Legacy));
    let r = legacy_init(&mut c, "1999-01-01").await;
    assert_eq!(r["result"]["protocolVersion"], LATEST_LEGACY_VERSION);
    c.finish().await.unwrap();

    let mut c = Client::start(ServerConfig::default().with_legacy_version("2099-01-01"));
    let r = legacy_init(&mut c, "2025-11-25").await;
    assert_eq!(r["result"]["protocolVersion"], "2099-01-01");
    c.finish().await.unwrap();
}

#[tokio::test]
async fn modern_discover_and_calls() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Modern).with_name("m"));
    let r = c.request(1, "server/discover", meta()).await;
    let res = &r["result"];
    assert_eq!(res["resultType"], "complete");
    assert_eq!(res["supportedVersions"], json!([V]));
    assert_eq!(
        res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "m"
    );
    assert_eq!(res["instructions"], "Test server for switchboard.");
    assert!(res["capabilities"]["prompts"].is_object());

    let r = c
        .request(
            2,
            "tools/call",
            modern(json!({"name": "echo", "arguments": {"text": "hi"}})),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["content"][0]["text"], "hi");
    assert!(r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());

    let r = c
        .request(3, "initialize", json!({"protocolVersion": "2025-11-25"}))
        .await;
    assert_eq!(r["error"]["code"], -32601);
    assert!(r["error"]["message"].as_str().unwrap().contains(V));

    let r = c
        .request(
            4,
            "prompts/get",
            modern(json!({"name": "greeting", "arguments": {"name": "Ann"}})),
        )
        .await;
    assert_eq!(r["result"]["messages"][0]["content"]["text"], "Hello, Ann!");
    let r = c
        .request(
            5,
            "completion/complete",
            modern(json!({
                "ref": {"type": "ref/prompt", "name": "greeting"},
                "argument": {"name": "name", "value": "b"},
            })),
        )
        .await;
    assert_eq!(r["result"]["completion"]["values"], json!(["bob"]));
    let r = c
        .request(
            6,
            "resources/read",
            modern(json!({"uri": "test://items/7"})),
        )
        .await;
    assert_eq!(r["result"]["contents"][0]["text"], "item 7");
    c.finish().await.unwrap();
}

#[tokio::test]
async fn modern_request_without_meta_is_invalid_params() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Modern));
    let r = c.request(1, "tools/list", json!({})).await;
    assert_eq!(r["error"]["code"], -32602);
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("io.modelcontextprotocol/protocolVersion"),
        "{msg}"
    );
    let r = c
        .request(
            2,
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("io.modelcontextprotocol/clientCapabilities"),
        "{msg}"
    );
    assert!(!msg.contains("protocolVersion"), "{msg}");
    c.finish().await.unwrap();
}

#[tokio::test]
async fn unsupported_version_is_32022() {
    let mut c = Client::start(ServerConfig::default());
    let r = c
        .request(1, "server/discover", meta_with("1900-01-01"))
        .await;
    assert_eq!(r["error"]["code"], -32022);
    assert_eq!(
        r["error"]["data"],
        json!({"supported": [V], "requested": "1900-01-01"})
    );
    c.finish().await.unwrap();
}

#[tokio::test]
async fn dual_serves_both_eras() {
    let mut c = Client::start(ServerConfig::default());
    let r = c.request(1, "server/discover", meta()).await;
    assert_eq!(r["result"]["resultType"], "complete");
    let r = legacy_init(&mut c, "2025-11-25").await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    let r = c.request(2, "prompts/list", json!({})).await;
    assert_eq!(r["result"]["prompts"].as_array().unwrap().len(), 2);
    assert!(r["result"].get("resultType").is_none());
    let r = c.request(3, "prompts/list", meta()).await;
    assert_eq!(r["result"]["resultType"], "complete");
    c.finish().await.unwrap();
}

#[tokio::test]
async fn pagination() {
    let config = ServerConfig::default()
        .with_era(Era::Modern)
        .with_page_size(5)
        .with_extra_tools(7);
    let mut c = Client::start(config);
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    for id in 1.. {
        let mut params = meta();
        if let Some(cur) = &cursor {
            params["cursor"] = json!(cur);
        }
        let r = c.request(id, "tools/list", params).await;
        let tools = r["result"]["tools"].as_array().unwrap();
        assert!(tools.len() <= 5);
        names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        pages += 1;
        match r["result"].get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_owned()),
            None => break,
        }
    }
    let expected: Vec<String> = TOOL_NAMES
        .iter()
        .map(|s| s.to_string())
        .chain((0..7).map(|i| format!("tool_{i}")))
        .collect();
    assert_eq!(names, expected);
    assert_eq!(pages, expected.len().div_ceil(5));

    let mut bad = meta();
    bad["cursor"] = json!("garbage");
    let r = c.request(100, "tools/list", bad).await;
    assert_eq!(r["error"]["code"], -32602);
    c.finish().await.unwrap();
}

#[tokio::test]
async fn repeat_cursor_fault() {
    let config = ServerConfig::default()
        .with_page_size(2)
        .with_fault(Fault::RepeatCursor);
    let mut c = Client::start(config);
    let first = c.request(1, "resources/list", meta()).await;
    let mut params = meta();
    params["cursor"] = first["result"]["nextCursor"].clone();
    let second = c.request(2, "resources/list", params).await;
    assert!(first["result"]["nextCursor"].is_string());
    assert_eq!(
        first["result"]["nextCursor"],
        second["result"]["nextCursor"]
    );
    c.finish().await.unwrap();
}

#[tokio::test]
async fn exit_before_init() {
    let config = ServerConfig::default().with_fault(Fault::ExitBeforeInit);
    let mut c = Client::start(config);
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": meta()}))
        .await;
    assert_eq!(c.recv_line().await, None, "no response expected");
    let err = c.server.await.unwrap().unwrap_err();
    assert_eq!(ServerExit::from_io_error(&err), Some(1));

    // initialize first: served normally.
    let config = ServerConfig::default().with_fault(Fault::ExitBeforeInit);
    let mut c = Client::start(config);
    legacy_init(&mut c, "2025-11-25").await;
    let r = c.request(2, "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    c.finish().await.unwrap();
}

#[tokio::test]
async fn concurrency_cancel_and_hang() {
    let path = std::env::temp_dir().join(format!(
        "switchboard-testkit-record-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    let mut c = Client::start(ServerConfig::default().with_record(&path));
    let call = |id: u64, name: &str, args: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": modern(json!({"name": name, "arguments": args}))})
    };
    c.send(call(1, "hang", json!({}))).await;
    c.send(call(2, "slow", json!({"ms": 300}))).await;
    let mut p = call(3, "progress", json!({"steps": 2, "interval_ms": 1}));
    p["params"]["_meta"]["progressToken"] = json!("tok");
    c.send(p).await;
    // progress notifications then the result, before the slow call finishes.
    let n1 = c.recv().await;
    assert_eq!(n1["method"], "notifications/progress");
    assert_eq!(n1["params"]["progressToken"], "tok");
    assert_eq!(n1["params"]["progress"], 1);
    assert_eq!(n1["params"]["total"], 2);
    let n2 = c.recv().await;
    assert_eq!(n2["params"]["progress"], 2);
    let r = c.recv().await;
    assert_eq!(r["id"], 3);
    c.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 1, "reason": "test"}}),
    )
    .await;
    let r = c.recv().await;
    assert_eq!(r["id"], 2);
    assert_eq!(r["result"]["content"][0]["text"], "done");

    // Batch.
    c.send_raw(&format!(
        "[{},{}]",
        json!({"jsonrpc": "2.0", "id": 10, "method": "ping", "params": meta()}),
        call(11, "echo", json!({"text": "b"}))
    ))
    .await;
    let r = c.recv().await;
    assert_eq!(r[0]["id"], 10);
    assert_eq!(r[1]["result"]["content"][0]["text"], "b");

    c.send_raw("{not json").await;
    assert_eq!(c.recv().await["error"]["code"], -32700);
    c.finish().await.unwrap();

    let recorded = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let methods: Vec<String> = recorded
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["method"].as_str().map(str::to_owned))
        .collect();
    assert!(methods.iter().any(|m| m == "notifications/cancelled"));
    assert_eq!(recorded.lines().count(), 6);
}

#[tokio::test]
async fn big_blob_and_garbage() {
    let mut c = Client::start(ServerConfig::default().with_fault(Fault::Garbage));
    assert_eq!(c.recv_line().await.unwrap(), "this is not json\n");
    let size = 16 << 20;
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": modern(json!({"name": "blob", "arguments": {"size": size}}))}))
        .await;
    assert_eq!(c.recv_line().await.unwrap(), "this is not json\n");
    let r = c.recv().await;
    assert_eq!(
        r["result"]["content"][0]["text"].as_str().unwrap().len(),
        size
    );
    c.finish().await.unwrap();
}

// ---------------------------------------------------------------------------
// Client features: server→client requests (session era) and MRTR.

const ALL_CAPS: &str = r#"{"sampling": {"tools": {}}, "elicitation": {"form": {}, "url": {}},
                           "roots": {"listChanged": true}}"#;

async fn legacy_init_caps(c: &mut Client, caps: Value) {
    let resp = c
        .request(
            1,
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": caps,
                "clientInfo": {"name": "t", "version": "0"},
            }),
        )
        .await;
    assert!(resp.get("result").is_some(), "{resp}");
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
}

fn tool_call(id: u64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": args}})
}

/// Answer the server→client request `req` with `result`.
async fn answer(c: &mut Client, req: &Value, result: Value) {
    c.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": result}))
        .await;
}

fn text_of(resp: &Value) -> &str {
    resp["result"]["content"][0]["text"].as_str().unwrap()
}

#[tokio::test]
async fn session_era_server_requests() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Legacy));
    legacy_init_caps(&mut c, serde_json::from_str(ALL_CAPS).unwrap()).await;

    // sample with tools.
    c.send(tool_call(
        2,
        "sample",
        json!({"prompt": "hi", "tools": true}),
    ))
    .await;
    let req = c.recv().await;
    assert_eq!(req["method"], "sampling/createMessage");
    assert_eq!(req["params"]["messages"][0]["content"]["text"], "hi");
    assert_eq!(req["params"]["tools"][0]["name"], "get_weather");
    assert_eq!(req["params"]["toolChoice"]["mode"], "auto");
    let sampled = json!({"role": "assistant", "content": {"type": "text", "text": "hello"},
                         "model": "m1", "stopReason": "endTurn"});
    answer(&mut c, &req, sampled.clone()).await;
    let r = c.recv().await;
    assert_eq!(r["id"], 2);
    assert_eq!(text_of(&r), "sampled: hello (model m1)");

    // Form elicitation with defaults.
    c.send(tool_call(3, "ask", json!({}))).await;
    let req = c.recv().await;
    assert_eq!(req["method"], "elicitation/create");
    let props = &req["params"]["requestedSchema"]["properties"];
    assert_eq!(props["name"]["default"], "octocat");
    assert_eq!(props["age"]["maximum"], 150);
    assert_eq!(props["color"]["default"], "green");
    assert_eq!(props["email"]["format"], "email");
    let content = json!({"name": "x", "age": 3, "subscribe": false, "color": "red"});
    answer(
        &mut c,
        &req,
        json!({"action": "accept", "content": content}),
    )
    .await;
    let r = c.recv().await;
    let v: Value = serde_json::from_str(text_of(&r)).unwrap();
    assert_eq!(v, json!({"action": "accept", "content": content}));

    // URL elicitation, then the completion notification, then the result.
    c.send(tool_call(4, "ask_url", json!({}))).await;
    let req = c.recv().await;
    assert_eq!(req["params"]["mode"], "url");
    assert_eq!(req["params"]["url"], "https://example.com/consent?x=1");
    let eid = req["params"]["elicitationId"].clone();
    assert!(eid.is_string());
    answer(&mut c, &req, json!({"action": "accept"})).await;
    let n = c.recv().await;
    assert_eq!(n["method"], "notifications/elicitation/complete");
    assert_eq!(n["params"]["elicitationId"], eid);
    let r = c.recv().await;
    assert_eq!(r["id"], 4);
    assert_eq!(text_of(&r), r#"{"action":"accept"}"#);

    // needs_url: -32042 first, then success.
    let r = c
        .request(5, "tools/call", json!({"name": "needs_url"}))
        .await;
    assert_eq!(r["error"]["code"], -32042);
    let e = &r["error"]["data"]["elicitations"][0];
    assert_eq!(e["mode"], "url");
    assert!(e["elicitationId"].is_string());
    let r = c
        .request(6, "tools/call", json!({"name": "needs_url"}))
        .await;
    assert_eq!(text_of(&r), "authorized");

    // roots + list_changed counting.
    c.send(tool_call(7, "roots", json!({}))).await;
    let req = c.recv().await;
    assert_eq!(req["method"], "roots/list");
    let roots = json!([{"uri": "file:///tmp", "name": "tmp"}]);
    answer(&mut c, &req, json!({"roots": roots})).await;
    let r = c.recv().await;
    assert_eq!(serde_json::from_str::<Value>(text_of(&r)).unwrap(), roots);
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}))
        .await;
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}))
        .await;
    let r = c
        .request(8, "tools/call", json!({"name": "roots_changes"}))
        .await;
    assert_eq!(text_of(&r), "2");

    // multi: three requests in sequence, each with a fresh id.
    c.send(tool_call(9, "multi", json!({"prompt": "p"}))).await;
    let mut ids = Vec::new();
    for (method, result) in [
        ("sampling/createMessage", sampled.clone()),
        ("elicitation/create", json!({"action": "decline"})),
        ("roots/list", json!({"roots": []})),
    ] {
        let req = c.recv().await;
        assert_eq!(req["method"], method);
        ids.push(req["id"].clone());
        answer(&mut c, &req, result).await;
    }
    ids.dedup();
    assert_eq!(ids.len(), 3);
    let r = c.recv().await;
    let v: Value = serde_json::from_str(text_of(&r)).unwrap();
    assert_eq!(v["sample"], "sampled: hello (model m1)");
    assert_eq!(v["ask"]["action"], "decline");

    // An error answer becomes a tool error.
    c.send(tool_call(10, "roots", json!({}))).await;
    let req = c.recv().await;
    c.send(json!({"jsonrpc": "2.0", "id": req["id"],
                  "error": {"code": -32601, "message": "no roots"}}))
        .await;
    let r = c.recv().await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    c.finish().await.unwrap();
}

#[tokio::test]
async fn session_era_missing_capabilities_are_tool_errors() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Legacy));
    legacy_init_caps(&mut c, json!({"sampling": {}, "elicitation": {}})).await;
    for (tool, args, missing) in [
        (
            "sample",
            json!({"prompt": "x", "tools": true}),
            "sampling.tools",
        ),
        ("ask_url", json!({}), "elicitation.url"),
        ("roots", json!({}), "roots"),
        ("multi", json!({}), "roots"),
    ] {
        let r = c
            .request(2, "tools/call", json!({"name": tool, "arguments": args}))
            .await;
        assert_eq!(r["result"]["isError"], true, "{tool}: {r}");
        assert!(text_of(&r).contains(missing), "{tool}: {r}");
    }
    // `elicitation: {}` means form mode.
    c.send(tool_call(3, "ask", json!({}))).await;
    assert_eq!(c.recv().await["method"], "elicitation/create");
    c.finish().await.unwrap();
}

fn modern_call(id: u64, name: &str, args: Value, caps: Value) -> Value {
    let mut m = meta();
    m["_meta"]["io.modelcontextprotocol/clientCapabilities"] = caps;
    m["name"] = json!(name);
    m["arguments"] = args;
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": m})
}

#[tokio::test]
async fn modern_mrtr_round_trips() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Modern));
    let caps: Value = serde_json::from_str(ALL_CAPS).unwrap();
    let call = |id: u64, name: &str, args: Value| modern_call(id, name, args, caps.clone());

    // sample: input_required, then complete on the retry.
    c.send(call(1, "sample", json!({"prompt": "hi", "tools": true})))
        .await;
    let r = c.recv().await;
    let res = &r["result"];
    assert_eq!(res["resultType"], "input_required", "{r}");
    let req = &res["inputRequests"]["sample"];
    assert_eq!(req["method"], "sampling/createMessage");
    assert_eq!(req["params"]["toolChoice"]["mode"], "auto");
    let state = res["requestState"].as_str().unwrap().to_owned();
    let sampled = json!({"role": "assistant", "content": {"type": "text", "text": "hey"},
                         "model": "m2"});
    let mut retry = call(2, "sample", json!({"prompt": "hi", "tools": true}));
    retry["params"]["inputResponses"] = json!({"sample": sampled});
    retry["params"]["requestState"] = json!(state);
    c.send(retry.clone()).await;
    let r = c.recv().await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(text_of(&r), "sampled: hey (model m2)");

    // The retry must use a new id.
    retry["id"] = json!(1);
    let r = c.request(1, "tools/call", retry["params"].clone()).await;
    assert_eq!(r["error"]["code"], -32600, "{r}");
    // Tampered, foreign or missing state is rejected.
    let mut bad = retry.clone();
    bad["id"] = json!(3);
    bad["params"]["requestState"] = json!(format!("x{state}"));
    let r = c.request(3, "tools/call", bad["params"].clone()).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    bad["params"]["requestState"] = json!(state);
    bad["params"]["name"] = json!("ask");
    let r = c.request(3, "tools/call", bad["params"].clone()).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    bad["params"]["name"] = json!("sample");
    bad["params"]["arguments"]["prompt"] = json!("other");
    let r = c.request(3, "tools/call", bad["params"].clone()).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("other arguments")
    );
    bad["params"]["arguments"]["prompt"] = json!("hi");
    bad["params"]
        .as_object_mut()
        .unwrap()
        .remove("requestState");
    let r = c.request(3, "tools/call", bad["params"].clone()).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");

    // multi: three keys; a partial answer asks again for the rest only.
    let r = c
        .request(
            4,
            "tools/call",
            call(4, "multi", json!({}))["params"].clone(),
        )
        .await;
    let keys: Vec<&String> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys.len(), 3, "{r}");
    assert_eq!(
        r["result"]["inputRequests"]["ask"]["params"]["mode"],
        "form"
    );
    assert_eq!(
        r["result"]["inputRequests"]["roots"]["method"],
        "roots/list"
    );
    let mut retry = call(5, "multi", json!({}));
    retry["params"]["requestState"] = r["result"]["requestState"].clone();
    retry["params"]["inputResponses"] =
        json!({"sample": sampled, "ask": {"action": "accept", "content": {"name": "n"}}});
    let r = c.request(5, "tools/call", retry["params"].clone()).await;
    let keys: Vec<&String> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["roots"], "{r}");
    let mut retry = call(6, "multi", json!({}));
    retry["params"]["requestState"] = r["result"]["requestState"].clone();
    retry["params"]["inputResponses"] = json!({"roots": {"roots": [{"uri": "file:///a"}]}});
    let r = c.request(6, "tools/call", retry["params"].clone()).await;
    let v: Value = serde_json::from_str(text_of(&r)).unwrap();
    assert_eq!(v["sample"], "sampled: hey (model m2)");
    assert_eq!(v["ask"]["content"]["name"], "n");
    assert_eq!(v["roots"][0]["uri"], "file:///a");

    // ask_url: URL mode, no elicitationId in this revision.
    let r = c
        .request(
            7,
            "tools/call",
            call(7, "ask_url", json!({}))["params"].clone(),
        )
        .await;
    let req = &r["result"]["inputRequests"]["ask_url"];
    assert_eq!(req["params"]["mode"], "url");
    assert!(req["params"].get("elicitationId").is_none());

    // state_only: two state-only rounds, then complete.
    let mut params = call(8, "state_only", json!({}))["params"].clone();
    for id in 8..10 {
        let r = c.request(id, "tools/call", params.clone()).await;
        assert_eq!(r["result"]["resultType"], "input_required", "{r}");
        assert!(r["result"].get("inputRequests").is_none());
        params["requestState"] = r["result"]["requestState"].clone();
    }
    let r = c.request(10, "tools/call", params).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    // forever never completes.
    let mut params = call(11, "forever", json!({}))["params"].clone();
    for id in 11..16 {
        let r = c.request(id, "tools/call", params.clone()).await;
        assert_eq!(r["result"]["resultType"], "input_required", "{r}");
        params["requestState"] = r["result"]["requestState"].clone();
    }
    // The ids and rounds are recorded.
    let r = c
        .request(
            16,
            "tools/call",
            call(16, "mrtr_ids", json!({}))["params"].clone(),
        )
        .await;
    let calls = r["result"]["structuredContent"]["calls"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(calls[0], json!({"id": 1, "tool": "sample", "round": 0}));
    assert_eq!(calls[1], json!({"id": 2, "tool": "sample", "round": 1}));
    assert_eq!(
        calls.last().unwrap(),
        &json!({"id": 15, "tool": "forever", "round": 4})
    );

    // Capabilities come from this request's _meta.
    let r = c
        .request(
            17,
            "tools/call",
            modern_call(17, "roots", json!({}), json!({}))["params"].clone(),
        )
        .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    let r = c
        .request(
            18,
            "tools/call",
            modern_call(
                18,
                "sample",
                json!({"prompt": "x", "tools": true}),
                json!({"sampling": {}}),
            )["params"]
                .clone(),
        )
        .await;
    assert!(text_of(&r).contains("sampling.tools"), "{r}");
    c.finish().await.unwrap();
}

#[tokio::test]
async fn progress_logging_and_flood() {
    // Session era: log lines only after logging/setLevel, filtered by it.
    let mut c = Client::start(ServerConfig::default().with_era(Era::Legacy));
    legacy_init_caps(&mut c, json!({})).await;
    let mut p = tool_call(2, "progress", json!({"steps": 2, "delay_ms": 1}));
    p["params"]["_meta"] = json!({"progressToken": 7});
    c.send(p.clone()).await;
    assert_eq!(c.recv().await["method"], "notifications/progress");
    assert_eq!(c.recv().await["method"], "notifications/progress");
    assert_eq!(c.recv().await["id"], 2);
    let r = c
        .request(3, "logging/setLevel", json!({"level": "info"}))
        .await;
    assert_eq!(r["result"], json!({}));
    p["id"] = json!(4);
    c.send(p.clone()).await;
    let kinds: Vec<Value> = [(); 4].iter().map(|_| Value::Null).collect();
    let mut got = Vec::new();
    for _ in kinds {
        got.push(c.recv().await);
    }
    assert_eq!(got[0]["params"]["progress"], 1);
    assert_eq!(got[1]["method"], "notifications/message");
    assert_eq!(got[1]["params"]["level"], "info");
    assert_eq!(got[2]["params"]["progress"], 2);
    assert_eq!(got[3]["id"], 4);
    let r = c
        .request(5, "logging/setLevel", json!({"level": "error"}))
        .await;
    assert_eq!(r["result"], json!({}));
    c.send(tool_call(6, "flood", json!({"count": 3}))).await;
    assert_eq!(c.recv().await["id"], 6, "flood is info: filtered out");
    let r = c
        .request(7, "logging/setLevel", json!({"level": "loud"}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    c.request(8, "logging/setLevel", json!({"level": "debug"}))
        .await;
    let n = 10_000;
    c.send(tool_call(9, "flood", json!({"count": n}))).await;
    for i in 0..n {
        let m = c.recv().await;
        assert_eq!(m["params"]["data"]["seq"], i);
    }
    assert_eq!(text_of(&c.recv().await), format!("flooded {n}"));
    c.finish().await.unwrap();

    // Stateless era: only with _meta logLevel, which must be valid.
    let mut c = Client::start(ServerConfig::default().with_era(Era::Modern));
    let mut call = modern_call(1, "flood", json!({"count": 2}), json!({}));
    let r = c.request(1, "tools/call", call["params"].clone()).await;
    assert_eq!(text_of(&r), "flooded 2");
    call["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    c.send(call.clone()).await;
    assert_eq!(c.recv().await["params"]["data"]["seq"], 0);
    assert_eq!(c.recv().await["params"]["data"]["seq"], 1);
    assert_eq!(c.recv().await["id"], 1);
    call["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("warning");
    let r = c.request(1, "tools/call", call["params"].clone()).await;
    assert_eq!(text_of(&r), "flooded 2");
    call["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("verbose");
    let r = c.request(1, "tools/call", call["params"].clone()).await;
    assert_eq!(r["error"]["code"], -32602);
    let mut p = modern_call(2, "progress", json!({"steps": 2, "delay_ms": 1}), json!({}));
    p["params"]["_meta"]["progressToken"] = json!("t");
    p["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    c.send(p).await;
    let methods: Vec<Value> = [0; 4].iter().map(|_| Value::Null).collect();
    let mut got = Vec::new();
    for _ in methods {
        got.push(c.recv().await);
    }
    assert_eq!(got[0]["params"]["progressToken"], "t");
    assert_eq!(got[1]["method"], "notifications/message");
    assert_eq!(got[2]["params"]["progress"], 2);
    assert_eq!(got[3]["result"]["resultType"], "complete");
    c.finish().await.unwrap();
}

#[tokio::test]
async fn structured_output_tools() {
    let mut c = Client::start(ServerConfig::default());
    let r = c.request(1, "tools/list", meta()).await;
    let tools = r["result"]["tools"].as_array().unwrap();
    let schema =
        |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["outputSchema"].clone();
    assert_eq!(schema("weather"), schema("bad_weather"));
    assert_eq!(
        schema("weather")["required"],
        json!(["temperature", "conditions"])
    );
    let r = c
        .request(2, "tools/call", modern(json!({"name": "weather"})))
        .await;
    assert_eq!(r["result"]["structuredContent"]["temperature"], 21.5);
    let text: Value = serde_json::from_str(text_of(&r)).unwrap();
    assert_eq!(text, r["result"]["structuredContent"]);
    let r = c
        .request(3, "tools/call", modern(json!({"name": "bad_weather"})))
        .await;
    assert!(r["result"]["structuredContent"]["temperature"].is_string());
    c.finish().await.unwrap();
}

#[tokio::test]
async fn session_era_list_changes_and_resource_subscriptions() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Legacy));
    let r = legacy_init(&mut c, "2025-11-25").await;
    assert_eq!(r["result"]["capabilities"]["resources"]["subscribe"], true);
    let uri = "test://static/hello";
    let r = c
        .request(2, "resources/subscribe", json!({"uri": uri}))
        .await;
    assert_eq!(r["result"], json!({}));
    c.send(tool_call(3, "touch", json!({"uri": uri}))).await;
    let n = c.recv().await;
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(n["params"]["uri"], uri);
    assert_eq!(c.recv().await["id"], 3);
    // Not subscribed to this one.
    let r = c
        .request(
            4,
            "tools/call",
            json!({"name": "touch", "arguments": {"uri": "test://x"}}),
        )
        .await;
    assert_eq!(r["result"]["structuredContent"]["notified"], 0);
    c.request(5, "resources/unsubscribe", json!({"uri": uri}))
        .await;
    let r = c
        .request(
            6,
            "tools/call",
            json!({"name": "touch", "arguments": {"uri": uri}}),
        )
        .await;
    assert_eq!(r["result"]["structuredContent"]["notified"], 0);

    c.send(tool_call(7, "add_tool", json!({}))).await;
    assert_eq!(c.recv().await["method"], "notifications/tools/list_changed");
    let r = c.recv().await;
    assert_eq!(r["result"]["structuredContent"]["name"], "dynamic_0");
    let r = c.request(8, "tools/list", json!({})).await;
    let tools = r["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), TOOL_NAMES.len() + 1);
    assert_eq!(tools.last().unwrap()["name"], "dynamic_0");
    let r = c
        .request(9, "tools/call", json!({"name": "dynamic_0"}))
        .await;
    assert_eq!(text_of(&r), "dynamic_0 called");
    c.finish().await.unwrap();
}

#[tokio::test]
async fn modern_subscriptions_listen() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Modern));
    let mut listen = meta();
    listen["notifications"] = json!({
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourceSubscriptions": ["test://a"],
    });
    c.send(
        json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
                  "params": listen}),
    )
    .await;
    let ack = c.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]})
    );
    // A second subscription only for resources.
    let mut listen2 = meta();
    listen2["notifications"] = json!({"resourceSubscriptions": ["test://a"]});
    c.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen",
                  "params": listen2}),
    )
    .await;
    assert_eq!(
        c.recv().await["params"]["notifications"]["resourceSubscriptions"][0],
        "test://a"
    );

    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": modern(json!({"name": "add_tool"}))}))
        .await;
    let mut got = [c.recv().await, c.recv().await];
    got.sort_by_key(|m| m.get("id").is_some());
    assert_eq!(got[0]["method"], "notifications/tools/list_changed");
    assert_eq!(
        got[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_eq!(got[1]["result"]["structuredContent"]["notified"], 1);

    c.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                  "params": modern(json!({"name": "touch", "arguments": {"uri": "test://a"}}))}))
        .await;
    let mut subs = Vec::new();
    for _ in 0..3 {
        let m = c.recv().await;
        if m.get("id").is_some() {
            assert_eq!(m["result"]["structuredContent"]["notified"], 2);
        } else {
            assert_eq!(m["method"], "notifications/resources/updated");
            assert_eq!(m["params"]["uri"], "test://a");
            subs.push(m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone());
        }
    }
    subs.sort_by_key(Value::to_string);
    assert_eq!(subs, [json!("sub-1"), json!(2)]);

    // The client cancels one; the server closes the other gracefully.
    c.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 2}}),
    )
    .await;
    // The cancelled listen is gone once a touch reaches one subscriber.
    // Each round reads the answer and sub-1's update (in any order); an
    // update for the cancelled listen, sent before it was gone, can come
    // too, and never after an answer that counted one subscriber.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    for id in 100.. {
        c.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": modern(json!({"name": "touch", "arguments": {"uri": "test://a"}}))}))
            .await;
        let mut answer = Value::Null;
        let mut updated = false;
        while answer.is_null() || !updated {
            let m = c.recv().await;
            if m["id"] == id {
                answer = m;
            } else {
                assert_eq!(m["method"], "notifications/resources/updated", "{m}");
                let sub = &m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"];
                if sub == "sub-1" {
                    updated = true;
                } else {
                    assert_eq!(sub, 2, "{m}");
                }
            }
        }
        if answer["result"]["structuredContent"]["notified"] == 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled listen still gets updates: {answer}"
        );
    }
    c.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                  "params": modern(json!({"name": "close_subscriptions"}))}))
        .await;
    let mut got = [c.recv().await, c.recv().await];
    got.sort_by_key(|m| !m["id"].is_number());
    assert_eq!(got[0]["id"], 5);
    assert_eq!(text_of(&got[0]), "closed 1");
    assert_eq!(got[1]["id"], "sub-1");
    assert_eq!(got[1]["result"]["resultType"], "complete");
    assert_eq!(
        got[1]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    // Bad filter; the session-era RPC does not exist here.
    let r = c.request(6, "subscriptions/listen", meta()).await;
    assert_eq!(r["error"]["code"], -32602);
    let mut p = meta();
    p["uri"] = json!("test://a");
    let r = c.request(7, "resources/subscribe", p).await;
    assert_eq!(r["error"]["code"], -32601);
    // EOF ends open listens without waiting for them.
    c.send(
        json!({"jsonrpc": "2.0", "id": 8, "method": "subscriptions/listen",
                  "params": listen}),
    )
    .await;
    c.recv().await;
    c.finish().await.unwrap();
}

#[tokio::test]
async fn caching_hints_and_hit_counter() {
    let config = ServerConfig::from_args(["--cache-ttl-ms", "5000"].map(String::from)).unwrap();
    assert_eq!(config.cache_ttl_ms, Some(5000));
    let mut c = Client::start(config);
    for (id, method, params, scope) in [
        (1, "server/discover", meta(), "public"),
        (2, "tools/list", meta(), "public"),
        (3, "prompts/list", meta(), "public"),
        (4, "resources/list", meta(), "public"),
        (5, "resources/templates/list", meta(), "public"),
        (
            6,
            "resources/read",
            modern(json!({"uri": "test://static/hello"})),
            "private",
        ),
    ] {
        let r = c.request(id, method, params).await;
        assert_eq!(r["result"]["ttlMs"], 5000, "{method}: {r}");
        assert_eq!(r["result"]["cacheScope"], scope, "{method}");
    }
    let r = c
        .request(
            7,
            "tools/call",
            modern(json!({"name": "echo", "arguments": {"text": "x"}})),
        )
        .await;
    assert!(r["result"].get("ttlMs").is_none());
    c.request(8, "tools/list", meta()).await;
    let r = c
        .request(
            9,
            "tools/call",
            modern(json!({"name": "hits", "arguments": {"method": "tools/list"}})),
        )
        .await;
    assert_eq!(text_of(&r), "2");
    assert_eq!(r["result"]["structuredContent"]["count"], 2);
    let r = c
        .request(10, "tools/call", modern(json!({"name": "hits"})))
        .await;
    assert_eq!(
        r["result"]["structuredContent"]["hits"]["server/discover"],
        1
    );
    c.finish().await.unwrap();

    // No flag, no hints; the session era never has them.
    let mut c = Client::start(ServerConfig::default().with_era(Era::Modern));
    let r = c.request(1, "tools/list", meta()).await;
    assert!(r["result"].get("ttlMs").is_none());
    c.finish().await.unwrap();
    let mut c = Client::start(
        ServerConfig::default()
            .with_cache_ttl_ms(1)
            .with_era(Era::Legacy),
    );
    legacy_init(&mut c, "2025-11-25").await;
    let r = c.request(2, "tools/list", json!({})).await;
    assert!(r["result"].get("ttlMs").is_none());
    c.finish().await.unwrap();
}

#[tokio::test]
async fn session_era_tasks() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Legacy));
    let r = legacy_init(&mut c, "2025-11-25").await;
    let caps = &r["result"]["capabilities"]["tasks"];
    assert_eq!(caps["requests"]["tools"]["call"], json!({}));
    assert_eq!(caps["list"], json!({}));
    let r = c.request(2, "tools/list", json!({})).await;
    let tools = r["result"]["tools"].as_array().unwrap();
    let support = |n: &str| {
        tools.iter().find(|t| t["name"] == n).unwrap()["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("slow_task"), "optional");
    assert_eq!(support("must_task"), "required");

    let r = c
        .request(
            3,
            "tools/call",
            json!({"name": "slow_task", "arguments": {"ms": 50}, "task": {"ttl": 1000}}),
        )
        .await;
    let task = &r["result"]["task"];
    assert_eq!(task["status"], "working", "{r}");
    assert!(task["pollInterval"].is_u64() && task["createdAt"].is_string());
    let id = task["taskId"].as_str().unwrap().to_owned();
    let r = c.request(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(r["result"]["status"], "working");
    c.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/result", "params": {"taskId": id}}))
        .await;
    let mut got = [c.recv().await, c.recv().await];
    got.sort_by_key(|m| m.get("id").is_some());
    assert_eq!(got[0]["method"], "notifications/tasks/status");
    assert_eq!(got[0]["params"]["status"], "completed");
    assert_eq!(got[1]["result"]["content"][0]["text"], "done after 50 ms");
    assert_eq!(
        got[1]["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    let r = c.request(6, "tasks/list", json!({})).await;
    assert_eq!(r["result"]["tasks"][0]["taskId"], id);
    let r = c.request(7, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(r["error"]["code"], -32602);
    let r = c.request(8, "tasks/get", json!({"taskId": "nope"})).await;
    assert_eq!(r["error"]["code"], -32602);

    // Cancelling a working task; its result is then an error.
    let r = c
        .request(
            9,
            "tools/call",
            json!({"name": "must_task", "arguments": {"ms": 60000}, "task": {}}),
        )
        .await;
    let id = r["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    c.send(json!({"jsonrpc": "2.0", "id": 10, "method": "tasks/cancel", "params": {"taskId": id}}))
        .await;
    let mut got = [c.recv().await, c.recv().await];
    got.sort_by_key(|m| m.get("id").is_some());
    assert_eq!(got[0]["params"]["status"], "cancelled");
    assert_eq!(got[1]["result"]["status"], "cancelled");
    let r = c.request(11, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(r["error"]["code"], -32800);

    // Task support rules.
    let r = c
        .request(12, "tools/call", json!({"name": "must_task"}))
        .await;
    assert_eq!(r["error"]["code"], -32601);
    let r = c
        .request(
            13,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}, "task": {}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32601);
    let r = c
        .request(
            14,
            "tools/call",
            json!({"name": "slow_task", "arguments": {"ms": 1}}),
        )
        .await;
    assert_eq!(text_of(&r), "done");
    c.finish().await.unwrap();
}

#[tokio::test]
async fn stateless_era_tasks_extension() {
    let mut c = Client::start(ServerConfig::default().with_era(Era::Modern));
    let r = c.request(1, "server/discover", meta()).await;
    assert_eq!(
        r["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}});
    let with_ext = |mut p: Value| {
        p["_meta"]["io.modelcontextprotocol/clientCapabilities"] = caps.clone();
        p
    };
    // Without the extension: no task, and must_task / tasks/* are -32021.
    let r = c
        .request(
            2,
            "tools/call",
            modern(json!({"name": "slow_task", "arguments": {"ms": 1}})),
        )
        .await;
    assert_eq!(text_of(&r), "done");
    let r = c
        .request(3, "tools/call", modern(json!({"name": "must_task"})))
        .await;
    assert_eq!(r["error"]["code"], -32021);
    assert!(
        r["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
            .is_object()
    );
    let r = c
        .request(4, "tasks/get", modern(json!({"taskId": "task-1"})))
        .await;
    assert_eq!(r["error"]["code"], -32021);
    let r = c
        .request(
            5,
            "subscriptions/listen",
            modern(json!({"notifications": {"taskIds": ["x"]}})),
        )
        .await;
    assert_eq!(r["error"]["code"], -32021);

    // slow_task: flat CreateTaskResult, notifications/tasks on a listen stream.
    let r = c
        .request(
            6,
            "tools/call",
            with_ext(modern(
                json!({"name": "slow_task", "arguments": {"ms": 100}}),
            )),
        )
        .await;
    let res = &r["result"];
    assert_eq!(res["resultType"], "task", "{r}");
    assert_eq!(res["status"], "working");
    assert!(res["ttlMs"].is_u64() && res["pollIntervalMs"].is_u64());
    assert!(res.get("task").is_none());
    let id = res["taskId"].as_str().unwrap().to_owned();
    c.send(
        json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
                  "params": with_ext(modern(json!({"notifications": {"taskIds": [id]}})))}),
    )
    .await;
    let ack = c.recv().await;
    assert_eq!(ack["params"]["notifications"]["taskIds"][0], id.as_str());
    let n = c.recv().await;
    assert_eq!(n["method"], "notifications/tasks");
    assert_eq!(n["params"]["status"], "completed");
    assert_eq!(
        n["params"]["result"]["content"][0]["text"],
        "done after 100 ms"
    );
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    let r = c
        .request(7, "tasks/get", with_ext(modern(json!({"taskId": id}))))
        .await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["status"], "completed");
    let r = c.request(8, "tasks/list", with_ext(meta())).await;
    assert_eq!(r["error"]["code"], -32601);

    // input_task: input_required until tasks/update answers.
    let r = c
        .request(
            9,
            "tools/call",
            with_ext(modern(json!({"name": "input_task"}))),
        )
        .await;
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    let get = |n: u64| (n, with_ext(modern(json!({"taskId": id}))));
    let mut status;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (n, p) = get(10);
        status = c.request(n, "tasks/get", p).await["result"].clone();
        if status["status"] == "input_required" || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        status["inputRequests"]["ask"]["method"], "elicitation/create",
        "{status}"
    );
    let mut p = with_ext(modern(json!({"taskId": id})));
    p["inputResponses"] =
        json!({"ask": {"action": "accept", "content": {"name": "q"}}, "other": {}});
    let r = c.request(11, "tasks/update", p).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (n, p) = get(12);
        status = c.request(n, "tasks/get", p).await["result"].clone();
        if status["status"] == "completed" || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        status["result"]["content"][0]["text"],
        r#"{"action":"accept","content":{"name":"q"}}"#
    );
    // Cancel acknowledges with an empty result.
    let r = c
        .request(
            13,
            "tools/call",
            with_ext(modern(
                json!({"name": "must_task", "arguments": {"ms": 60000}}),
            )),
        )
        .await;
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    let r = c
        .request(14, "tasks/cancel", with_ext(modern(json!({"taskId": id}))))
        .await;
    assert_eq!(r["result"]["resultType"], "complete");
    let r = c
        .request(15, "tasks/get", with_ext(modern(json!({"taskId": id}))))
        .await;
    assert_eq!(r["result"]["status"], "cancelled");
    c.finish().await.unwrap();
}
