//! The client against a scripted modern server over the in-memory pair.

use serde_json::json;

use super::*;
use crate::engine::RequestOptions;
use crate::error::Error;
use crate::transport::memory::{self, MemoryEnd};
use switchboard_types::CallToolRequestParams;
use switchboard_types::RequestOutcome;

pub(super) async fn answer(peer: &mut MemoryEnd, result: Value) -> Value {
    let request: Value = serde_json::from_slice(&peer.recv().await.unwrap()).unwrap();
    peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string())
        .await
        .unwrap();
    request
}

async fn modern_client() -> (Client, MemoryEnd) {
    modern_client_with(json!({"tools": {}})).await
}

/// A client connected to a scripted stateless-era server that declares
/// `capabilities`.
pub(super) async fn modern_client_with(capabilities: Value) -> (Client, MemoryEnd) {
    let (client_end, mut server) = memory::pair();
    let connect = Client::builder()
        .name("scripted")
        .connect(client_end.into_connector());
    let discover = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": capabilities, "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}});
    let (client, probe) = tokio::join!(connect, answer(&mut server, discover));
    let meta = &probe["params"]["_meta"];
    assert_eq!(probe["method"], "server/discover");
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "switchboard"
    );
    assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
    (client.unwrap(), server)
}

#[tokio::test]
async fn every_modern_request_carries_meta_and_result_types_are_checked() {
    let (client, mut server) = modern_client().await;

    // Absent resultType: complete.
    let (result, request) = tokio::join!(
        client.call_tool("t", None),
        answer(
            &mut server,
            json!({"content": [{"type": "text", "text": "ok"}]})
        )
    );
    assert!(result.is_ok());
    let meta = &request["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "switchboard"
    );

    // Unknown resultType: an error naming it.
    let (result, _) = tokio::join!(
        client.call_tool("t", None),
        answer(
            &mut server,
            json!({"resultType": "hologram", "content": []})
        )
    );
    let error = result.unwrap_err();
    assert!(
        matches!(error, Error::Protocol { .. }) && error.to_string().contains("hologram"),
        "{error}"
    );

    // input_required with state only: retried with the state echoed
    // byte for byte, under a new id.
    let script = async {
        let first = answer(
            &mut server,
            json!({"resultType": "input_required", "requestState": "a\u{e9} \"b\""}),
        )
        .await;
        let retry = answer(&mut server, json!({"content": []})).await;
        (first, retry)
    };
    let (result, (first, retry)) = tokio::join!(client.call_tool("t", None), script);
    result.unwrap();
    assert_ne!(first["id"], retry["id"]);
    assert_eq!(retry["params"]["requestState"], "a\u{e9} \"b\"");
    assert!(first["params"].get("requestState").is_none());

    // The one-round variant hands the interim result to the caller.
    let params = CallToolRequestParams {
        name: "t".into(),
        ..Default::default()
    };
    let (result, _) = tokio::join!(
        client.call_tool_once(&params, RequestOptions::default()),
        answer(
            &mut server,
            json!({"resultType": "input_required", "requestState": "abc"})
        )
    );
    match result.unwrap() {
        RequestOutcome::InputRequired(interim) => {
            assert_eq!(interim.request_state.as_deref(), Some("abc"))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn per_request_meta_reaches_the_server_and_only_that_request() {
    let (client, mut server) = modern_client().await;
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
    let params = CallToolRequestParams {
        name: "t".into(),
        ..Default::default()
    };
    let options = RequestOptions::default()
        .meta("traceparent", traceparent)
        .meta("tracestate", "vendor=x")
        // Like a field in the params' own `_meta`, it outranks the
        // client's per-request field.
        .meta("io.modelcontextprotocol/protocolVersion", "1999-01-01");
    let (result, request) = tokio::join!(
        client.call_tool_with(&params, options),
        answer(&mut server, json!({"content": []}))
    );
    result.unwrap();
    let meta = &request["params"]["_meta"];
    assert_eq!(meta["traceparent"], traceparent);
    assert_eq!(meta["tracestate"], "vendor=x");
    assert_eq!(request["params"]["name"], "t");
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"], "1999-01-01",
        "an entry the caller gives explicitly is sent as given"
    );

    // Without extra meta: the connection's fields only, nothing left
    // over from the call before.
    let (result, request) = tokio::join!(
        client.call_tool("t", None),
        answer(&mut server, json!({"content": []}))
    );
    result.unwrap();
    let meta = request["params"]["_meta"].as_object().unwrap();
    let keys: Vec<_> = meta.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "io.modelcontextprotocol/protocolVersion",
            "io.modelcontextprotocol/clientInfo",
            "io.modelcontextprotocol/clientCapabilities",
        ]
    );
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
}

#[tokio::test]
async fn a_header_mismatch_refreshes_tools_and_retries_once() {
    let (client, mut server) = modern_client().await;
    let script = async {
        let first: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
        assert_eq!(first["method"], "tools/call");
        let mismatch = json!({"jsonrpc": "2.0", "id": first["id"],
            "error": {"code": -32020, "message": "Header mismatch"}});
        server.send(mismatch.to_string()).await.unwrap();
        let list = answer(&mut server, json!({"tools": []})).await;
        assert_eq!(list["method"], "tools/list");
        let retry = answer(&mut server, json!({"content": []})).await;
        assert_eq!(retry["method"], "tools/call");
        assert_ne!(retry["id"], first["id"], "a retry is a new request");
        // A second mismatch is not retried again.
        let again: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
        let mismatch = json!({"jsonrpc": "2.0", "id": again["id"],
            "error": {"code": -32020, "message": "Header mismatch"}});
        server.send(mismatch.to_string()).await.unwrap();
        let list = answer(&mut server, json!({"tools": []})).await;
        assert_eq!(list["method"], "tools/list");
        let last: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
        let mismatch = json!({"jsonrpc": "2.0", "id": last["id"],
            "error": {"code": -32020, "message": "Header mismatch"}});
        server.send(mismatch.to_string()).await.unwrap();
    };
    let calls = async {
        client.call_tool("t", None).await.unwrap();
        client.call_tool("t", None).await.unwrap_err()
    };
    let (error, ()) = tokio::join!(calls, script);
    assert_eq!(error.code(), Some(-32020));
}

#[tokio::test]
async fn a_lost_modern_response_is_reissued_once_with_a_new_id() {
    let (client, mut server) = modern_client().await;
    let lost = |id: &Value| crate::transport::Incoming::Lost {
        id: serde_json::from_value(id.clone()).unwrap(),
        why: "stream broke".into(),
    };
    let script = async {
        let first: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
        server.report(lost(&first["id"])).await.unwrap();
        let retry = answer(&mut server, json!({"content": []})).await;
        assert_ne!(retry["id"], first["id"]);
        assert_eq!(retry["params"]["name"], "t");
        // Lost twice: the error reaches the caller.
        let a: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
        server.report(lost(&a["id"])).await.unwrap();
        let b: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
        server.report(lost(&b["id"])).await.unwrap();
    };
    let calls = async {
        client.call_tool("t", None).await.unwrap();
        client.call_tool("t", None).await.unwrap_err()
    };
    let (error, ()) = tokio::join!(calls, script);
    assert!(matches!(error, Error::ResponseLost { .. }), "{error}");
}

#[tokio::test]
async fn unknown_content_blocks_do_not_fail_a_result() {
    let (client, mut server) = modern_client().await;
    let (result, _) = tokio::join!(
        client.call_tool("t", None),
        answer(
            &mut server,
            json!({"content": [{"type": "hologram", "x": 1}, {"type": "text", "text": "ok"}]})
        )
    );
    let result = result.unwrap();
    assert_eq!(result.content.len(), 2);
    assert_eq!(
        serde_json::to_value(&result.content[0]).unwrap(),
        json!({"type": "hologram", "x": 1})
    );
}

/// A client that negotiated 2025-11-25 with a scripted server.
async fn session_client() -> (Client, MemoryEnd) {
    let (client_end, mut server) = memory::pair();
    let connect = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(client_end.into_connector());
    let script = async {
        let init = answer(
            &mut server,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1"}}),
        )
        .await;
        assert_eq!(init["method"], "initialize");
        let initialized: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
        assert_eq!(initialized["method"], "notifications/initialized");
    };
    let (client, ()) = tokio::join!(connect, script);
    (client.unwrap(), server)
}

/// Sends `tools/call` with `params` and `options`; what the server got.
async fn sent_params(
    client: &Client,
    server: &mut MemoryEnd,
    params: &CallToolRequestParams,
    options: RequestOptions,
) -> Value {
    let (result, request) = tokio::join!(
        client.call_tool_with(params, options),
        answer(server, json!({"content": []}))
    );
    result.unwrap();
    assert_eq!(request["method"], "tools/call");
    let mut params = request["params"].clone();
    // The progress token is the request's id.
    if let Some(token) = params.pointer_mut("/_meta/progressToken") {
        assert_eq!(*token, request["id"]);
        *token = json!("id");
    }
    params
}

/// Typed params go out as text, with the per-request `_meta` spliced in,
/// unless their own `_meta` (or the options') has to be merged: every way
/// gives the server the same params.
#[tokio::test]
async fn typed_params_reach_the_server_as_given_with_their_meta_merged() {
    let mut arguments = JsonObject::new();
    arguments.insert("text".into(), json!("a \"_meta\": {}"));
    arguments.insert("_meta".into(), json!({"inner": true}));
    let plain = CallToolRequestParams {
        name: "t".into(),
        arguments: Some(arguments.clone()),
        ..Default::default()
    };
    let mut own_meta = plain.clone();
    own_meta.meta = Some(serde_json::from_value(json!({"mine": 1})).unwrap());
    let progress = || RequestOptions::default().on_progress(|_| {});

    let (client, mut server) = session_client().await;
    let got = sent_params(&client, &mut server, &plain, RequestOptions::default()).await;
    assert_eq!(got, json!({"name": "t", "arguments": arguments}));
    let got = sent_params(&client, &mut server, &plain, progress()).await;
    assert_eq!(
        got,
        json!({"name": "t", "arguments": arguments, "_meta": {"progressToken": "id"}})
    );
    let got = sent_params(&client, &mut server, &own_meta, progress()).await;
    assert_eq!(
        got,
        json!({"name": "t", "arguments": arguments, "_meta": {"mine": 1, "progressToken": "id"}})
    );
    let bare = CallToolRequestParams {
        name: "t".into(),
        ..Default::default()
    };
    let got = sent_params(&client, &mut server, &bare, progress()).await;
    assert_eq!(got, json!({"name": "t", "_meta": {"progressToken": "id"}}));

    let (client, mut server) = modern_client().await;
    client
        .set_logging_level(LoggingLevel::Warning)
        .await
        .unwrap();
    let got = sent_params(&client, &mut server, &plain, progress()).await;
    let meta = got["_meta"].as_object().unwrap();
    assert_eq!(got["arguments"], json!(arguments));
    assert_eq!(meta["progressToken"], "id");
    assert_eq!(meta[switchboard_types::meta::META_LOG_LEVEL], "warning");
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let got = sent_params(&client, &mut server, &own_meta, RequestOptions::default()).await;
    let meta = got["_meta"].as_object().unwrap();
    assert_eq!(meta["mine"], 1);
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert!(meta.get("progressToken").is_none());
}
