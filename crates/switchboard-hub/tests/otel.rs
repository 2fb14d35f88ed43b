//! Feature `otel`: a hub call made inside an OpenTelemetry span carries
//! the span's W3C trace context in `_meta` to a server of the 2026-07-28
//! revision, and nothing of it to a server of the session era. The test
//! server is this very binary (`otel __testserver …`), with the runner of
//! `tests/support/mod.rs` as in `tests/hub.rs`. The test installs the
//! process's global tracing subscriber, so it is this binary's only test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::{Value, json};
use switchboard::RequestOptions;
use switchboard_hub::hub::Hub;
use switchboard_hub::{Dialect, Origin, Scope, ServerConfig, TransportConfig};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

mod support;

use macro_rules_attribute::apply;
use support::process_test;

fn main() {
    support::main();
}

fn testserver(name: &str, flags: &[&str]) -> ServerConfig {
    let mut args = vec!["__testserver".to_owned()];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    ServerConfig::new(
        name,
        TransportConfig::Stdio {
            command: std::env::current_exe()
                .expect("current exe")
                .to_string_lossy()
                .into_owned(),
            args,
            env: BTreeMap::new(),
            cwd: None,
        },
        Origin {
            file: PathBuf::from("/tests/otel.toml"),
            dialect: Dialect::Switchboard,
            scope: Scope::Explicit,
        },
    )
}

/// The params of the `tools/call` requests a server recorded.
fn recorded_calls(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .expect("record file")
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["method"] == "tools/call")
        .map(|message| message["params"].clone())
        .collect()
}

#[apply(process_test!)]
async fn a_call_in_a_span_sends_its_traceparent_to_modern_servers_only() {
    // Spans are sampled and given ids; nothing is exported.
    let provider = SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("hub-test")));
    tracing::subscriber::set_global_default(subscriber).expect("first subscriber");

    let dir = std::env::temp_dir().join(format!("switchboard-hub-otel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let modern_record = dir.join("modern.jsonl");
    let legacy_record = dir.join("legacy.jsonl");
    let hub = Hub::builder()
        .server(testserver(
            "modern",
            &[
                "--era",
                "modern",
                "--record",
                modern_record.to_str().unwrap(),
            ],
        ))
        .server(testserver(
            "legacy",
            &[
                "--era",
                "legacy",
                "--record",
                legacy_record.to_str().unwrap(),
            ],
        ))
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.expect("start");

    let caller = tracing::info_span!("caller");
    let caller_context = caller.context().span().span_context().clone();
    assert!(caller_context.is_valid());
    let arguments = json!({"text": "traced"}).as_object().cloned();
    hub.call_tool("modern__echo", arguments.clone())
        .instrument(caller.clone())
        .await
        .unwrap();
    hub.call_tool("legacy__echo", arguments.clone())
        .instrument(caller.clone())
        .await
        .unwrap();
    // The caller's `_meta` is merged with the hub's trace context; a
    // `traceparent` the caller gives is the one sent.
    let theirs = RequestOptions::default().meta("com.example/k", "v");
    hub.call_with("modern", "echo", arguments.clone(), theirs)
        .instrument(caller.clone())
        .await
        .unwrap();
    let own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let theirs = RequestOptions::default().meta("traceparent", own);
    hub.call_with("modern", "echo", arguments, theirs)
        .instrument(caller)
        .await
        .unwrap();
    hub.shutdown().await;

    let calls = recorded_calls(&modern_record);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[1]["_meta"]["com.example/k"], "v", "{:?}", calls[1]);
    assert_eq!(
        calls[1]["_meta"]["traceparent"].as_str().map(|t| &t[..35]),
        Some(&*format!("00-{:032x}", caller_context.trace_id())),
        "the hub's trace context beside the caller's entries: {:?}",
        calls[1]
    );
    assert_eq!(calls[2]["_meta"]["traceparent"], own, "{:?}", calls[2]);
    let meta = &calls[0]["_meta"];
    let traceparent = meta["traceparent"].as_str().expect("a traceparent");
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!(parts[0], "00", "{traceparent}");
    assert_eq!(
        parts[1],
        format!("{:032x}", caller_context.trace_id()),
        "the caller's trace"
    );
    assert!(
        parts[2].len() == 16
            && parts[2].bytes().all(|b| b.is_ascii_hexdigit())
            && parts[2] != "0000000000000000",
        "{traceparent}"
    );
    assert_ne!(
        parts[2],
        format!("{:016x}", caller_context.span_id()),
        "the parent is the hub's `mcp.request` span, a child of the caller's"
    );
    assert_eq!(parts[3], "01", "sampled: {traceparent}");
    assert!(
        meta.get("tracestate").is_none(),
        "an empty tracestate is not sent"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
        "the per-request fields are still there"
    );

    let calls = recorded_calls(&legacy_record);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        calls[0]
            .get("_meta")
            .is_none_or(|meta| meta.get("traceparent").is_none()),
        "{calls:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
