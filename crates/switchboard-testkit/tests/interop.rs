//! Interop: switchboard against independent MCP servers over stdio.
//!
//! * rmcp 3.9 (the official Rust SDK) — our bin `switchboard-rmcp-server`.
//!   rmcp 3.9 speaks both eras: it answers `server/discover` with
//!   `supportedVersions` 2024-11-05 … 2026-07-28, so Auto reaches the modern
//!   era on the first process. With `--legacy-only` it answers the probe with
//!   `-32022` (data.supported = the legacy versions) and keeps the pipe open,
//!   so Auto falls back to `initialize` on the same process (no respawn).
//! * `@modelcontextprotocol/server-everything` (npm, TypeScript SDK 1.x),
//!   installed by `scripts/install-interop.sh`: legacy only (2025-11-25);
//!   answers the probe with `-32601 Method not found` and stays up. Skipped
//!   when not installed, unless `SWITCHBOARD_REQUIRE_INTEROP=1`.
//! * our `switchboard-testserver` in each `--era`, and with
//!   `--fault exit-before-init` (dies on the probe → respawn + initialize).

mod support;

use std::ffi::OsString;
use std::future::Future;
use std::time::Duration;

use serde_json::json;
use switchboard::transport::stdio::StdioConfig;
use switchboard::types::{Era, ProtocolVersion};
use switchboard::{Client, EraMode};

use support::{args, text_of};

/// Upper bound for one whole test, so a hung server fails instead of hanging CI.
const TEST_TIMEOUT: Duration = Duration::from_secs(60);

async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(TEST_TIMEOUT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {TEST_TIMEOUT:?}"))
}

async fn connect(
    name: &str,
    mode: EraMode,
    program: impl Into<OsString>,
    argv: impl IntoIterator<Item = impl Into<OsString>>,
) -> Client {
    within(
        name,
        Client::builder()
            .name(name)
            .era_mode(mode)
            .connect(StdioConfig::new(program).args(argv)),
    )
    .await
    .unwrap_or_else(|e| panic!("{name}: connect in {mode:?} mode failed: {e}"))
}

fn assert_session(client: &Client, era: Era, version: ProtocolVersion, respawned: bool) {
    let name = client.server_name().to_owned();
    assert_eq!(client.era(), era, "{name}: era");
    assert_eq!(
        client.protocol_version(),
        &version,
        "{name}: protocol version"
    );
    assert_eq!(client.session().respawned, respawned, "{name}: respawned");
}

async fn tool_names(client: &Client) -> Vec<String> {
    let tools = within("tools/list", client.list_tools())
        .await
        .unwrap_or_else(|e| panic!("{}: tools/list failed: {e}", client.server_name()));
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

fn assert_has_tools(client: &Client, names: &[String], wanted: &[&str]) {
    for want in wanted {
        assert!(
            names.iter().any(|n| n == want),
            "{}: tool {want:?} missing from {names:?}",
            client.server_name()
        );
    }
}

async fn call_text(client: &Client, tool: &str, arguments: serde_json::Value) -> String {
    let result = within(tool, client.call_tool(tool, Some(args(arguments))))
        .await
        .unwrap_or_else(|e| panic!("{}: tools/call {tool} failed: {e}", client.server_name()));
    assert_ne!(
        result.is_error,
        Some(true),
        "{}: {tool} returned isError: {}",
        client.server_name(),
        text_of(&result)
    );
    text_of(&result)
}

// ---------------------------------------------------------------- rmcp 3.9

#[cfg(feature = "rmcp")]
mod rmcp_server {
    use super::*;
    use support::rmcp_server;

    async fn exercise_tools(client: &Client) {
        let names = tool_names(client).await;
        assert_has_tools(client, &names, &["echo", "add", "blob"]);
        assert_eq!(
            call_text(client, "echo", json!({"message": "hi"})).await,
            "hi"
        );
        assert_eq!(
            call_text(client, "add", json!({"a": 2, "b": 40})).await,
            "42"
        );
        assert_eq!(
            call_text(client, "blob", json!({"size": 1000})).await.len(),
            1000
        );
    }

    #[tokio::test]
    async fn auto_reaches_modern() {
        let client = connect("rmcp", EraMode::Auto, rmcp_server(), Vec::<String>::new()).await;
        assert_session(&client, Era::Modern, ProtocolVersion::V2026_07_28, false);
        let info = client
            .server_info()
            .expect("rmcp sends serverInfo in discover _meta");
        assert_eq!(info.name, "switchboard-rmcp-server");
        exercise_tools(&client).await;

        // Resources and prompts, statelessly (per-request _meta).
        let resources = within("resources/list", client.list_resources())
            .await
            .unwrap();
        assert!(
            resources.iter().any(|r| r.uri == "test://static/hello"),
            "{resources:?}"
        );
        let read = within(
            "resources/read",
            client.read_resource("test://static/hello"),
        )
        .await
        .unwrap();
        let read = serde_json::to_value(&read).unwrap();
        assert_eq!(read["contents"][0]["text"], "hello from rmcp", "{read}");
        let prompt = within(
            "prompts/get",
            client.get_prompt(
                "greet",
                Some([("name".to_owned(), "Bob".to_owned())].into()),
            ),
        )
        .await
        .unwrap();
        let prompt = serde_json::to_value(&prompt).unwrap();
        assert_eq!(
            prompt["messages"][0]["content"]["text"], "Please greet Bob.",
            "{prompt}"
        );
        client.close().await;
    }

    #[tokio::test]
    async fn pinned_legacy() {
        let client = connect("rmcp", EraMode::Legacy, rmcp_server(), Vec::<String>::new()).await;
        assert_session(&client, Era::Legacy, ProtocolVersion::V2025_11_25, false);
        assert_eq!(
            client.server_info().unwrap().name,
            "switchboard-rmcp-server"
        );
        exercise_tools(&client).await;
        client.close().await;
    }

    #[tokio::test]
    async fn pinned_modern() {
        let client = connect("rmcp", EraMode::Modern, rmcp_server(), Vec::<String>::new()).await;
        assert_session(&client, Era::Modern, ProtocolVersion::V2026_07_28, false);
        exercise_tools(&client).await;
        client.close().await;
    }

    /// rmcp with the stateless revision switched off answers the probe with
    /// -32022 and keeps the pipe open: legacy on the same process.
    #[tokio::test]
    async fn legacy_only_auto_falls_back_without_respawn() {
        let client = connect(
            "rmcp-legacy",
            EraMode::Auto,
            rmcp_server(),
            ["--legacy-only"],
        )
        .await;
        assert_session(&client, Era::Legacy, ProtocolVersion::V2025_11_25, false);
        exercise_tools(&client).await;
        client.close().await;
    }

    #[tokio::test]
    async fn legacy_only_pinned_legacy() {
        let client = connect(
            "rmcp-legacy",
            EraMode::Legacy,
            rmcp_server(),
            ["--legacy-only"],
        )
        .await;
        assert_session(&client, Era::Legacy, ProtocolVersion::V2025_11_25, false);
        exercise_tools(&client).await;
        client.close().await;
    }

    #[tokio::test]
    async fn legacy_only_pinned_modern_fails() {
        let result = within(
            "connect",
            Client::builder()
                .name("rmcp-legacy")
                .era_mode(EraMode::Modern)
                .connect(StdioConfig::new(rmcp_server()).args(["--legacy-only"])),
        )
        .await;
        let error =
            result.expect_err("a legacy-only server cannot serve a client pinned to modern");
        let message = error.to_string();
        assert!(
            message.contains("2026-07-28") || message.contains("2025-11-25"),
            "{message}"
        );
    }
}

// ------------------------------------------------- npm server-everything

mod everything {
    use super::*;
    use support::everything_server;

    async fn exercise_tools(client: &Client) {
        let names = tool_names(client).await;
        assert_has_tools(client, &names, &["echo"]);
        assert_eq!(
            call_text(client, "echo", json!({"message": "hi"})).await,
            "Echo: hi"
        );
    }

    #[tokio::test]
    async fn auto_reaches_legacy() {
        let Some((node, argv)) = everything_server() else {
            return;
        };
        let client = connect("everything", EraMode::Auto, node, argv).await;
        // It answers server/discover with -32601 and stays up: no respawn.
        assert_session(&client, Era::Legacy, ProtocolVersion::V2025_11_25, false);
        exercise_tools(&client).await;
        client.close().await;
    }

    #[tokio::test]
    async fn pinned_legacy() {
        let Some((node, argv)) = everything_server() else {
            return;
        };
        let client = connect("everything", EraMode::Legacy, node, argv).await;
        assert_session(&client, Era::Legacy, ProtocolVersion::V2025_11_25, false);
        exercise_tools(&client).await;
        client.close().await;
    }
}

// ------------------------------------------------ switchboard-testserver

mod testserver {
    use super::*;
    use support::testserver;

    async fn auto(argv: &[&str]) -> Client {
        let client = connect(
            "testserver",
            EraMode::Auto,
            testserver(),
            argv.iter().copied(),
        )
        .await;
        let names = tool_names(&client).await;
        assert_has_tools(&client, &names, &["echo", "add"]);
        assert_eq!(
            call_text(&client, "echo", json!({"text": "hi"})).await,
            "hi"
        );
        client
    }

    #[tokio::test]
    async fn auto_modern_era() {
        let client = auto(&["--era", "modern"]).await;
        assert_session(&client, Era::Modern, ProtocolVersion::V2026_07_28, false);
        client.close().await;
    }

    #[tokio::test]
    async fn auto_dual_era_prefers_modern() {
        let client = auto(&["--era", "dual"]).await;
        assert_session(&client, Era::Modern, ProtocolVersion::V2026_07_28, false);
        client.close().await;
    }

    #[tokio::test]
    async fn auto_legacy_era() {
        let client = auto(&["--era", "legacy"]).await;
        assert_session(&client, Era::Legacy, ProtocolVersion::V2025_11_25, false);
        client.close().await;
    }

    #[tokio::test]
    async fn auto_exit_before_init_respawns() {
        let client = auto(&["--fault", "exit-before-init"]).await;
        assert_session(&client, Era::Legacy, ProtocolVersion::V2025_11_25, true);
        client.close().await;
    }
}
