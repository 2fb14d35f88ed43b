//! The typed client against the test server linked in-process over a byte
//! pipe with real newline framing: eras, versions, pagination, capabilities,
//! progress, and the lossless schema path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::transport::framing::IoConnector;
use switchboard::types::{
    CompleteArgument, CompleteRequestParams, Era, LoggingLevel, PromptReference, ProtocolVersion,
    Reference,
};
use switchboard::{Client, ClientBuilder, EraMode, Error, RequestOptions};
use switchboard_testkit::{Fault, SCHEMA_RICH_INPUT_SCHEMA, ServerConfig, TOOL_NAMES, serve};
use tokio::task::JoinHandle;

/// A running in-process server; aborted when dropped.
#[derive(Debug)]
struct Linked {
    server: JoinHandle<std::io::Result<()>>,
}

impl Drop for Linked {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn config(args: &[&str]) -> ServerConfig {
    ServerConfig::from_args(args.iter().map(|s| s.to_string())).expect("valid server flags")
}

fn link(
    server: ServerConfig,
) -> (
    IoConnector<impl tokio::io::AsyncRead, impl tokio::io::AsyncWrite>,
    Linked,
) {
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_end);
    let (client_read, client_write) = tokio::io::split(client_end);
    let server = tokio::spawn(serve(server, server_read, server_write));
    (
        IoConnector::new(client_read, client_write),
        Linked { server },
    )
}

async fn connect_with(builder: ClientBuilder, args: &[&str]) -> Result<(Client, Linked), Error> {
    let (connector, linked) = link(config(args));
    let client = builder.name("linked").connect(connector).await?;
    Ok((client, linked))
}

async fn connect(args: &[&str]) -> (Client, Linked) {
    connect_with(Client::builder(), args)
        .await
        .expect("connects")
}

fn args(value: Value) -> Option<serde_json::Map<String, Value>> {
    value.as_object().cloned()
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn temp_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "switchboard-client-{}-{}-{name}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ))
}

#[tokio::test]
async fn auto_reaches_modern_on_a_dual_server() {
    let (client, _server) = connect(&["--era", "dual"]).await;
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert_eq!(
        client.server_info().map(|i| i.name.as_str()),
        Some("switchboard-testserver")
    );
    assert_eq!(client.instructions(), Some("Test server for switchboard."));
    assert!(!client.session().respawned);
}

#[tokio::test]
async fn auto_reaches_modern_on_a_modern_only_server() {
    let (client, _server) = connect(&["--era", "modern"]).await;
    assert_eq!(client.era(), Era::Modern);
    // Every modern request carries the per-request _meta, or the server
    // (which checks it) would answer -32602.
    let raw = client
        .request_raw("tools/list", None, RequestOptions::default())
        .await
        .unwrap();
    let tools: Value = serde_json::from_str(raw.get()).unwrap();
    assert!(tools["tools"].as_array().unwrap().len() >= 13);
}

#[tokio::test]
async fn auto_falls_back_to_initialize_on_a_legacy_server() {
    let (client, _server) = connect(&["--era", "legacy"]).await;
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2025_11_25);
    client.ping().await.unwrap();
    client.set_logging_level(LoggingLevel::Debug).await.unwrap();
}

#[tokio::test]
async fn older_legacy_versions_are_accepted() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let (client, _server) = connect(&["--era", "legacy", "--legacy-version", version]).await;
        assert_eq!(client.protocol_version().as_str(), version);
    }
}

#[tokio::test]
async fn an_unknown_legacy_version_is_refused_naming_both() {
    let error = connect_with(
        Client::builder(),
        &["--era", "legacy", "--legacy-version", "2099-01-01"],
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, Error::UnsupportedVersion { .. }),
        "{message}"
    );
    assert!(
        message.contains("2099-01-01") && message.contains("2025-11-25"),
        "{message}"
    );
}

#[tokio::test]
async fn unsupported_modern_version_is_an_error_not_a_fallback() {
    // -32022 listing only versions we do not speak: a modern server we cannot
    // talk to. Falling back to initialize would be wrong.
    let error = connect_with(
        Client::builder(),
        &["--era", "modern", "--modern-versions", "2099-01-01"],
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, Error::UnsupportedVersion { .. }),
        "{message}"
    );
    assert!(message.contains("2099-01-01"), "{message}");
}

#[tokio::test]
async fn pinned_modes_refuse_the_other_era() {
    let error = connect_with(
        Client::builder().era_mode(EraMode::Modern),
        &["--era", "legacy"],
    )
    .await
    .unwrap_err();
    assert!(matches!(error, Error::WrongEra { .. }), "{error}");
    assert!(error.to_string().contains("2026-07-28"), "{error}");

    let error = connect_with(
        Client::builder().era_mode(EraMode::Legacy),
        &["--era", "modern"],
    )
    .await
    .unwrap_err();
    assert!(error.is_server_error(), "{error}");

    let (client, _server) = connect_with(
        Client::builder().era_mode(EraMode::Legacy),
        &["--era", "dual"],
    )
    .await
    .unwrap();
    assert_eq!(client.era(), Era::Legacy);
}

#[tokio::test]
async fn a_remembered_verdict_skips_the_probe_and_is_rechecked_when_wrong() {
    let record = temp_file("hint.jsonl");
    let builder = Client::builder().era_hint(Some(Era::Legacy));
    let (client, _server) = connect_with(
        builder.clone(),
        &["--era", "dual", "--record", record.to_str().unwrap()],
    )
    .await
    .unwrap();
    assert_eq!(client.era(), Era::Legacy);
    let methods: Vec<Value> = records(&record)
        .iter()
        .map(|m| m["method"].clone())
        .collect();
    assert_eq!(methods.first(), Some(&json!("initialize")), "{methods:?}");
    assert!(!methods.contains(&json!("server/discover")));

    // The server became modern-only: the hint fails and the client probes.
    let (client, _server) = connect_with(builder, &["--era", "modern"]).await.unwrap();
    assert_eq!(client.era(), Era::Modern);
}

#[tokio::test]
async fn lists_follow_every_page() {
    for era in ["modern", "legacy"] {
        let (client, _server) =
            connect(&["--era", era, "--extra-tools", "25", "--page-size", "4"]).await;
        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools.len(), TOOL_NAMES.len() + 25, "{era}");
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOL_NAMES.len() + 25, "no page read twice");
        assert_eq!(client.list_resources().await.unwrap().len(), 2);
        assert_eq!(client.list_resource_templates().await.unwrap().len(), 1);
        assert_eq!(client.list_prompts().await.unwrap().len(), 2);
    }
}

#[tokio::test]
async fn a_repeated_cursor_ends_with_an_error_not_a_loop() {
    let (client, _server) = connect(&["--page-size", "2", "--fault", "repeat-cursor"]).await;
    let error = tokio::time::timeout(Duration::from_secs(5), client.list_tools())
        .await
        .expect("must not loop")
        .unwrap_err();
    assert!(matches!(error, Error::Pagination { .. }), "{error}");
    assert!(error.to_string().contains("repeated cursor"), "{error}");
}

#[tokio::test]
async fn the_page_cap_bounds_a_listing() {
    let (client, _server) = connect_with(
        Client::builder().page_cap(3),
        &["--extra-tools", "25", "--page-size", "4"],
    )
    .await
    .unwrap();
    let error = client.list_tools().await.unwrap_err();
    assert!(error.to_string().contains("more than 3 pages"), "{error}");
}

#[tokio::test]
async fn undeclared_features_fail_without_a_round_trip() {
    let record = temp_file("caps.jsonl");
    let (client, _server) = connect(&[
        "--fault",
        "no-tools-capability",
        "--record",
        record.to_str().unwrap(),
    ])
    .await;
    let error = client.list_tools().await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::CapabilityMissing {
                capability: "tools",
                ..
            }
        ),
        "{error}"
    );
    let error = client.call_tool("echo", None).await.unwrap_err();
    assert!(matches!(error, Error::CapabilityMissing { .. }), "{error}");
    // Resources still work, and the server never saw a tools request.
    client.list_resources().await.unwrap();
    let methods: Vec<Value> = records(&record)
        .iter()
        .map(|m| m["method"].clone())
        .collect();
    assert!(
        !methods
            .iter()
            .any(|m| m.as_str().is_some_and(|m| m.starts_with("tools/"))),
        "{methods:?}"
    );
}

#[tokio::test]
async fn an_input_schema_arrives_byte_for_byte() {
    for era in ["modern", "legacy"] {
        let (client, _server) = connect(&["--era", era]).await;
        let tools = client.list_tools().await.unwrap();
        let tool = tools
            .iter()
            .find(|t| t.name == "schema_rich")
            .expect("schema_rich tool");
        let schema = serde_json::to_string(&tool.input_schema).unwrap();
        assert_eq!(schema, SCHEMA_RICH_INPUT_SCHEMA, "{era}");
        assert!(
            schema.contains("$defs")
                && schema.contains("$ref")
                && schema.contains("additionalProperties")
        );
    }
}

#[tokio::test]
async fn progress_reaches_the_callback_in_both_eras() {
    for era in ["modern", "legacy"] {
        let (client, _server) = connect(&["--era", era]).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options =
            RequestOptions::default().on_progress(move |p| sink.lock().unwrap().push(p.progress));
        let params = switchboard::types::CallToolRequestParams {
            name: "progress".into(),
            arguments: args(json!({"steps": 3, "interval_ms": 5})),
            ..Default::default()
        };
        client.call_tool_with(&params, options).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0], "{era}");
    }
}

#[tokio::test]
async fn tool_errors_are_data_and_protocol_errors_are_errors() {
    let (client, _server) = connect(&[]).await;
    let result = client.call_tool("error", None).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let error = client.call_tool("no_such_tool", None).await.unwrap_err();
    assert_eq!(error.code(), Some(-32602), "{error}");
    assert!(
        error.to_string().contains("`linked`"),
        "names the server: {error}"
    );
}

#[tokio::test]
async fn resources_prompts_and_completion() {
    for era in ["modern", "legacy"] {
        let (client, _server) = connect(&["--era", era]).await;
        let read =
            serde_json::to_value(client.read_resource("test://items/7").await.unwrap()).unwrap();
        assert_eq!(read["contents"][0]["text"], "item 7");
        let prompt = client
            .get_prompt(
                "greeting",
                Some(BTreeMap::from([("name".to_owned(), "Ada".to_owned())])),
            )
            .await
            .unwrap();
        let prompt = serde_json::to_value(prompt).unwrap();
        assert_eq!(prompt["messages"][0]["content"]["text"], "Hello, Ada!");
        let params = CompleteRequestParams {
            r#ref: Reference::Prompt(PromptReference {
                name: "greeting".into(),
                ..Default::default()
            }),
            argument: CompleteArgument {
                name: "name".into(),
                value: "a".into(),
            },
            context: None,
            meta: None,
        };
        let completion = client.complete(&params).await.unwrap();
        assert_eq!(completion.completion.values, vec!["alice".to_owned()]);
    }
}

#[tokio::test]
async fn legacy_only_methods_are_refused_on_modern_connections() {
    let (client, _server) = connect(&["--era", "modern"]).await;
    let error = client.ping().await.unwrap_err();
    assert!(matches!(error, Error::NotInThisEra { .. }), "{error}");
}

#[tokio::test]
async fn the_log_level_travels_as_meta_in_the_stateless_era() {
    let (client, _server) = connect(&["--era", "modern"]).await;
    // No round trip: the level rides on every later request.
    client.set_logging_level(LoggingLevel::Info).await.unwrap();
    let mut events = client.events();
    let params = switchboard::types::CallToolRequestParams {
        name: "progress".into(),
        arguments: json!({"steps": 2}).as_object().cloned(),
        ..Default::default()
    };
    client
        .call_tool_with(&params, RequestOptions::default())
        .await
        .unwrap();
    match tokio::time::timeout(Duration::from_secs(5), events.next()).await {
        Ok(Some(switchboard::Event::Log(line))) => assert_eq!(line.data["step"], 1),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn bad_settings_are_reported_by_connect() {
    let error = connect_with(Client::builder().request_timeout(Duration::ZERO), &[])
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Config {
                setting: "request_timeout",
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn fault_flags_parse() {
    assert!(config(&["--fault", "garbage"]).has_fault(Fault::Garbage));
}
