//! JSON-RPC envelope and MCP message decoding (`switchboard-types`).
//!
//! Input: one line or body as a peer would send it.
//!
//! Invariants:
//! - no panic, and `to_vec` never fails on a decoded message;
//! - round trip: a decoded message re-encoded decodes to the same message
//!   (same kind, id, method, error) with params and result byte for byte
//!   as sent (they stay raw), and re-encoding that gives the same bytes;
//! - strict: a decoded message came from a JSON object whose `jsonrpc` is
//!   `"2.0"` (though strings in unknown fields may be invalid UTF-8); a
//!   batch decodes the same as its elements one by one;
//! - typed results (tools, prompts, resources, initialize, sampling) that
//!   decode re-encode to JSON that decodes to an equal value and encodes to
//!   the same JSON again: nothing is lost or invented on the second trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use switchboard_types::jsonrpc::{Incoming, JsonRpcMessage};
use switchboard_types::{
    CallToolResult, ErrorObject, GetPromptResult, InitializeResult, ListToolsResult,
    ReadResourceResult, RequestId, Tool,
};

/// Everything a message says, comparable.
#[derive(Debug, PartialEq)]
enum Said<'a> {
    Request(&'a RequestId, &'a str, Option<&'a str>),
    Notification(&'a str, Option<&'a str>),
    Response(Option<&'a RequestId>, Result<&'a str, &'a ErrorObject>),
}

fn said(message: &JsonRpcMessage) -> Said<'_> {
    match message {
        JsonRpcMessage::Request(r) => {
            Said::Request(&r.id, &r.method, r.params.as_deref().map(|p| p.get()))
        }
        JsonRpcMessage::Notification(n) => {
            Said::Notification(&n.method, n.params.as_deref().map(|p| p.get()))
        }
        JsonRpcMessage::Response(r) => {
            Said::Response(r.id.as_ref(), r.outcome.as_ref().map(|v| v.get()))
        }
    }
}

fn check_message(original: &[u8], message: &JsonRpcMessage) {
    // serde_json skips an unknown field without checking its strings are
    // UTF-8, so the envelope accepts such bytes
    // (fuzz/regressions/jsonrpc/invalid-utf8-in-unknown-field); judge the
    // rest of the JSON.
    let value: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(original))
        .expect("a decoded message is JSON");
    assert_eq!(
        value.get("jsonrpc").and_then(|v| v.as_str()),
        Some("2.0"),
        "accepted without jsonrpc \"2.0\""
    );
    let encoded = message.to_vec();
    let again = JsonRpcMessage::from_slice(&encoded).unwrap_or_else(|e| {
        panic!(
            "re-encoded message does not decode: {e}\n{}",
            String::from_utf8_lossy(&encoded)
        )
    });
    assert_eq!(
        said(message),
        said(&again),
        "the round trip changed the message"
    );
    assert_eq!(encoded, again.to_vec(), "encoding is not stable");
}

/// A typed value that decodes must survive a second trip unchanged.
fn typed<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(data: &[u8]) {
    let Ok(first) = serde_json::from_slice::<T>(data) else {
        return;
    };
    let json = serde_json::to_vec(&first).expect("a decoded value encodes");
    let second: T = serde_json::from_slice(&json).unwrap_or_else(|e| {
        panic!(
            "{} re-encoded does not decode: {e}\n{}",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(&json)
        )
    });
    assert_eq!(
        first,
        second,
        "{} changed on the trip",
        std::any::type_name::<T>()
    );
    assert_eq!(
        json,
        serde_json::to_vec(&second).expect("encodes"),
        "{} encodes differently the second time",
        std::any::type_name::<T>()
    );
}

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = JsonRpcMessage::from_slice(data) {
        check_message(data, &message);
    }
    match Incoming::from_slice(data) {
        Ok(Incoming::Single(message)) => check_message(data, &message),
        Ok(Incoming::Batch(messages)) => {
            assert!(!messages.is_empty(), "an empty batch was accepted");
            let text = String::from_utf8_lossy(data);
            let elements: Vec<&serde_json::value::RawValue> =
                serde_json::from_str(&text).expect("a decoded batch is a JSON array");
            assert_eq!(elements.len(), messages.len());
            for (element, message) in elements.iter().zip(&messages) {
                let alone = JsonRpcMessage::from_slice(element.get().as_bytes())
                    .expect("a batch element decodes alone");
                assert_eq!(said(&alone), said(message));
                check_message(element.get().as_bytes(), message);
            }
        }
        Err(_) => {}
    }
    typed::<Tool>(data);
    typed::<ListToolsResult>(data);
    typed::<CallToolResult>(data);
    typed::<InitializeResult>(data);
    typed::<GetPromptResult>(data);
    typed::<ReadResourceResult>(data);
});
