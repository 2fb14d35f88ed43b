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
    ];
    let c = ServerConfig::from_args(args.iter().map(|s| s.to_string())).unwrap();
    assert_eq!(c.era, Era::Modern);
    assert_eq!(c.modern_versions, ["2026-07-28", "2027-01-01"]);
    assert_eq!(c.page_size, Some(3));
    assert_eq!(c.extra_tools, 10);
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
