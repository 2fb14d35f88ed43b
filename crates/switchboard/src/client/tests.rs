//! Unit tests of the client's negotiation and `_meta` helpers.
use super::negotiate::best_mutual;
use super::send::{probe_params, with_modern_meta};
use super::*;
use crate::engine::RequestOptions;
use serde_json::value::RawValue;
use switchboard_types::meta;

/// Connecting and calling must work from `tokio::spawn` on a
/// multi-thread runtime.
#[test]
fn client_futures_are_send() {
    fn assert_send<T: Send>(_: T) {}
    let connector = crate::transport::memory::pair().0.into_connector();
    assert_send(Client::builder().connect(connector));
    let client: Option<Client> = None;
    if let Some(client) = client {
        assert_send(client.list_tools());
        assert_send(client.call_tool("x", None));
        assert_send(client.read_resource("x"));
        assert_send(client.request_raw("x", None, RequestOptions::default()));
    }
}

#[test]
fn picks_newest_mutual_version() {
    let theirs = [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28];
    assert_eq!(
        best_mutual(&theirs, &ProtocolVersion::MODERN),
        Some(ProtocolVersion::V2026_07_28)
    );
    assert_eq!(best_mutual(&theirs[..1], &ProtocolVersion::MODERN), None);
}

#[test]
fn probe_params_are_the_modern_meta_fields_written_as_text() {
    let info = Implementation::new("a\"b", "1");
    let mut capabilities = switchboard_types::ClientCapabilities::default();
    capabilities.set_extension("x/y", serde_json::json!({"k": [1, "}"]}));
    for version in &ProtocolVersion::MODERN {
        let mut expected = Value::Object(JsonObject::new());
        add_meta(&mut expected, modern_meta(version, &info, &capabilities));
        let written = probe_params(version, &info, &capabilities);
        // The same members in the same order: the same text.
        assert_eq!(written.get(), serde_json::to_string(&expected).unwrap());
    }
}

#[test]
fn spliced_meta_equals_merged_meta() {
    use serde_json::json;
    let mut fields = JsonObject::new();
    fields.insert(
        "io.modelcontextprotocol/protocolVersion".into(),
        json!("2026-07-28"),
    );
    fields.insert(
        "io.modelcontextprotocol/clientInfo".into(),
        json!({"name": "a\"b", "version": "1"}),
    );
    let text = serde_json::to_string(&fields).unwrap();
    let fragment = &text[1..text.len() - 1];
    for (params, level, token) in [
        (None, None, None),
        (Some(json!({})), Some(LoggingLevel::Info), None),
        (
            Some(json!({"name": "t", "arguments": {"x": [1, "}"]}})),
            None,
            Some(7),
        ),
        (
            Some(json!({"uri": "u"})),
            Some(LoggingLevel::Error),
            Some(9),
        ),
    ] {
        let spliced = with_modern_meta(fragment, params.as_ref(), level, token).unwrap();
        let spliced: Value = serde_json::from_str(spliced.get()).unwrap();
        let mut merged = params.clone().unwrap_or_else(|| json!({}));
        add_meta(&mut merged, fields.clone());
        if let Some(level) = level {
            add_meta(
                &mut merged,
                [(meta::META_LOG_LEVEL.to_owned(), json!(level.as_str()))],
            );
        }
        if let Some(token) = token {
            add_meta(
                &mut merged,
                [(meta::PROGRESS_TOKEN.to_owned(), json!(token))],
            );
        }
        assert_eq!(spliced, merged, "{params:?}");
    }
}

#[test]
fn meta_is_merged_not_replaced() {
    let mut params = serde_json::json!({"name": "x", "_meta": {"progressToken": 5}});
    add_meta(&mut params, [("a/b".to_owned(), Value::from(1))]);
    assert_eq!(
        params,
        serde_json::json!({"name": "x", "_meta": {"progressToken": 5, "a/b": 1}})
    );
}

#[test]
fn result_type_peek_skips_content() {
    let raw = RawValue::from_string(
        r#"{"content":[{"type":"text","text":"x"}],"resultType":"input_required"}"#.into(),
    )
    .unwrap();
    let raw = crate::RawResult::from(raw);
    assert_eq!(peek_result_type(&raw).as_deref(), Some("input_required"));
    let raw = crate::RawResult::from(RawValue::from_string(r#"{"content":[]}"#.into()).unwrap());
    assert_eq!(peek_result_type(&raw), None);
}
