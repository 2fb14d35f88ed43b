//! Hostile servers over WebSocket (issue 15): a reply that carries a
//! pending request's id but cannot be used fails that request at once,
//! never after the timeout; a string id does not answer a numeric request;
//! an `id: null` error fails the one pending request, and none of several.
//! (Invalid UTF-8 cannot reach the client here: a text frame is UTF-8 by
//! the protocol, and binary frames are skipped.)
#![cfg(feature = "websocket")]

use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use switchboard::transport::ws::WebSocketConfig;
use switchboard::{Client, Error};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, header};

/// What "at once" means for a reply that cannot be used.
const AT_ONCE: Duration = Duration::from_secs(1);
/// Bound for waits that must end, so a regression fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(10);

/// How the server answers `tools/list` (everything else is answered well).
#[derive(Clone, Copy)]
enum Mode {
    BothResultAndError,
    Neither,
    StringId,
    /// Answers each `tools/list` with an `id: null` parse error, after
    /// `pending` of them have arrived.
    NullId {
        pending: usize,
    },
}

/// A legacy-era WebSocket server on loopback that misbehaves as `mode`
/// says; its URL.
// tungstenite's handshake callback returns its (large) `ErrorResponse`.
#[allow(clippy::result_large_err)]
async fn server(mode: Mode) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let callback = |_: &Request, mut response: Response| {
                    response.headers_mut().insert(
                        header::SEC_WEBSOCKET_PROTOCOL,
                        HeaderValue::from_static("mcp"),
                    );
                    Ok(response)
                };
                let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, callback).await else {
                    return;
                };
                let mut lists = Vec::new();
                while let Some(Ok(message)) = ws.next().await {
                    let Message::Text(text) = message else {
                        continue;
                    };
                    let request: Value = serde_json::from_str(&text).unwrap();
                    let (Some(method), Some(id)) = (request["method"].as_str(), request.get("id"))
                    else {
                        continue;
                    };
                    let replies = match (method, mode) {
                        ("initialize", _) => vec![json!({"jsonrpc": "2.0", "id": id, "result": {
                            "protocolVersion": "2025-06-18",
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "hostile-ws", "version": "1"},
                        }})],
                        ("tools/list", Mode::BothResultAndError) => vec![json!({
                            "jsonrpc": "2.0", "id": id, "result": {"tools": []},
                            "error": {"code": -32000, "message": "and also failed"},
                        })],
                        ("tools/list", Mode::Neither) => vec![json!({"jsonrpc": "2.0", "id": id})],
                        ("tools/list", Mode::StringId) => vec![json!({
                            "jsonrpc": "2.0", "id": id.to_string(), "result": {"tools": []},
                        })],
                        ("tools/list", Mode::NullId { pending }) => {
                            lists.push(id.clone());
                            if lists.len() < pending {
                                continue;
                            }
                            vec![json!({"jsonrpc": "2.0", "id": null,
                                "error": {"code": -32700, "message": "Parse error"}})]
                        }
                        _ => vec![json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32601, "message": "Method not found"}})],
                    };
                    for reply in replies {
                        if ws.send(Message::text(reply.to_string())).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    url
}

async fn connect(mode: Mode) -> Client {
    let url = server(mode).await;
    tokio::time::timeout(
        PATIENCE,
        Client::builder()
            .request_timeout(Duration::from_secs(60))
            .connect(WebSocketConfig::new(&url)),
    )
    .await
    .expect("connect timed out")
    .expect("connect")
}

/// `tools/list`'s error and how long it took.
async fn list_error(client: &Client) -> (Error, Duration) {
    let started = Instant::now();
    let error = tokio::time::timeout(PATIENCE, client.list_tools())
        .await
        .expect("tools/list was not answered within the patience bound")
        .expect_err("tools/list must fail");
    (error, started.elapsed())
}

#[tokio::test]
async fn a_response_with_both_result_and_error_fails_at_once() {
    let client = connect(Mode::BothResultAndError).await;
    let (error, took) = list_error(&client).await;
    assert!(took < AT_ONCE, "took {took:?}: {error}");
    assert!(error.is_protocol_violation(), "{error:?}");
    assert!(error.to_string().contains("both"), "{error}");
}

#[tokio::test]
async fn a_response_with_neither_result_nor_error_fails_at_once() {
    let client = connect(Mode::Neither).await;
    let (error, took) = list_error(&client).await;
    assert!(took < AT_ONCE, "took {took:?}: {error}");
    assert!(error.is_protocol_violation(), "{error:?}");
    assert!(error.to_string().contains("neither"), "{error}");
}

#[tokio::test]
async fn a_string_id_does_not_answer_a_numeric_request() {
    let url = server(Mode::StringId).await;
    let client = Client::builder()
        .request_timeout(Duration::from_millis(500))
        .connect(WebSocketConfig::new(&url))
        .await
        .expect("connect");
    let error = client.list_tools().await.expect_err("\"3\" is not 3");
    assert!(error.is_timeout(), "{error:?}");
}

#[tokio::test]
async fn a_null_id_error_fails_the_one_pending_request_at_once() {
    let client = connect(Mode::NullId { pending: 1 }).await;
    let (error, took) = list_error(&client).await;
    assert!(took < AT_ONCE, "took {took:?}: {error}");
    assert!(error.to_string().contains("Parse error"), "{error}");
}

#[tokio::test]
async fn a_null_id_error_fails_none_of_several_pending_requests() {
    let url = server(Mode::NullId { pending: 2 }).await;
    let client = Client::builder()
        .request_timeout(Duration::from_millis(800))
        .connect(WebSocketConfig::new(&url))
        .await
        .expect("connect");
    let (a, b) = tokio::join!(client.list_tools(), client.list_tools());
    // Neither can be blamed: both wait for their own answer (here, the
    // timeout), none is failed by a guess.
    for result in [a, b] {
        let error = result.expect_err("no answer came");
        assert!(error.is_timeout(), "{error:?}");
    }
}
