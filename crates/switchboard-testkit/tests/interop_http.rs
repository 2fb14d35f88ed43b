//! Interop: switchboard against independent MCP servers over loopback HTTP.
//!
//! Each test starts one server on a free port and connects with
//! `Client::connect(HttpConfig::new(url))` only — no era or transport
//! setting — so what is tested is detection: the era and transport the client
//! lands in from a URL alone, then `tools/list` and `tools/call echo`.
//!
//! | server                                   | URL    | era (version)        | transport         |
//! |------------------------------------------|--------|----------------------|-------------------|
//! | npm server-everything `streamableHttp`   | `/mcp` | legacy (2025-11-25)  | `streamable-http` |
//! | npm server-everything `sse`              | `/sse` | legacy (2025-11-25)  | `sse`             |
//! | Python SDK 2.3.0, streamable-http        | `/mcp` | modern (2026-07-28)  | `streamable-http` |
//! | Python SDK 2.3.0, sse                    | `/sse` | legacy (2025-11-25)  | `sse`             |
//! | Python SDK 1.30.0, streamable-http       | `/mcp` | legacy (2025-11-25)  | `streamable-http` |
//! | Python SDK 1.30.0, sse                   | `/sse` | legacy (2025-11-25)  | `sse`             |
//! | rmcp 3.9 `switchboard-rmcp-server --http`| `/mcp` | modern (2026-07-28)  | `streamable-http` |
//! | the same with `--legacy-only`            | `/mcp` | legacy (2025-11-25)  | `streamable-http` |
//!
//! The npm and Python servers come from `scripts/install-interop.sh`; when
//! they are missing the tests print `SKIP: …` and pass, unless
//! `SWITCHBOARD_REQUIRE_INTEROP=1`.

mod support;

use std::future::Future;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use switchboard::Client;
use switchboard::transport::http::HttpConfig;
use switchboard::types::{Era, ProtocolVersion};

use support::{ServerProcess, args, free_port, text_of};

/// Upper bound for one client step, so a hung server fails instead of
/// hanging CI.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a server may take to start accepting connections.
const START_TIMEOUT: Duration = Duration::from_secs(15);

async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(STEP_TIMEOUT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {STEP_TIMEOUT:?}"))
}

/// What a server should land in, and how its echo tool answers.
struct Expect {
    era: Era,
    version: ProtocolVersion,
    transport: &'static str,
    /// The text `echo {message: "hi"}` answers with.
    echo: &'static str,
}

const LEGACY_SSE: Expect = Expect {
    era: Era::Legacy,
    version: ProtocolVersion::V2025_11_25,
    transport: "sse",
    echo: "hi",
};

/// Connects to `url` with nothing but the URL, checks era, version and
/// transport, lists tools and calls `echo`.
async fn check(server: &ServerProcess, name: &str, url: &str, expect: Expect) {
    let client = within(
        &format!("{name}: connect {url}"),
        Client::connect(HttpConfig::new(url)),
    )
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{name}: connect {url} failed: {e}\nserver output:\n{}",
            server.output()
        )
    });
    let session = client.session();
    assert_eq!(
        (session.era, session.transport),
        (expect.era, expect.transport),
        "{name} at {url}: era and transport"
    );
    assert_eq!(
        client.protocol_version(),
        &expect.version,
        "{name} at {url}: protocol version"
    );

    let tools = within(&format!("{name}: tools/list"), client.list_tools())
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{name}: tools/list failed: {e}\nserver output:\n{}",
                server.output()
            )
        });
    let names: Vec<String> = tools.into_iter().map(|t| t.name.to_string()).collect();
    assert!(
        names.iter().any(|n| n == "echo"),
        "{name}: no echo tool in {names:?}"
    );

    let result = within(
        &format!("{name}: tools/call echo"),
        client.call_tool("echo", Some(args(json!({"message": "hi"})))),
    )
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{name}: tools/call echo failed: {e}\nserver output:\n{}",
            server.output()
        )
    });
    assert_ne!(
        result.is_error,
        Some(true),
        "{name}: echo returned isError: {}",
        text_of(&result)
    );
    assert_eq!(text_of(&result), expect.echo, "{name}: echo text");
    within(&format!("{name}: close"), client.close()).await;
}

// ------------------------------------------------- npm server-everything

mod everything {
    use super::*;
    use support::everything_node;

    const LEGACY_HTTP: Expect = Expect {
        era: Era::Legacy,
        version: ProtocolVersion::V2025_11_25,
        transport: "streamable-http",
        echo: "Echo: hi",
    };

    /// `node dist/index.js <mode>` on a free port (env `PORT`; it listens on
    /// all interfaces, reached at 127.0.0.1).
    fn start(node: &Path, entry: &Path, mode: &str) -> (ServerProcess, u16) {
        let port = free_port();
        let mut command = Command::new(node);
        command.arg(entry).arg(mode).env("PORT", port.to_string());
        let mut server = ServerProcess::spawn(&format!("server-everything {mode}"), command);
        server.wait_until_accepting(port, START_TIMEOUT);
        (server, port)
    }

    #[tokio::test]
    async fn streamable_http_is_legacy() {
        let Some((node, entry)) = everything_node() else {
            return;
        };
        let (server, port) = start(&node, &entry, "streamableHttp");
        let url = format!("http://127.0.0.1:{port}/mcp");
        check(&server, "server-everything", &url, LEGACY_HTTP).await;
    }

    #[tokio::test]
    async fn sse_is_legacy_sse() {
        let Some((node, entry)) = everything_node() else {
            return;
        };
        let (server, port) = start(&node, &entry, "sse");
        let url = format!("http://127.0.0.1:{port}/sse");
        check(
            &server,
            "server-everything",
            &url,
            Expect {
                echo: "Echo: hi",
                ..LEGACY_SSE
            },
        )
        .await;
    }
}

// ------------------------------------------------------- Python SDK

mod python {
    use super::*;
    use support::{python_sdk, python_server_script};

    /// `python python_server.py <mode> PORT` from the venv of SDK `version`.
    /// `None` (after `SKIP:`) when that venv is missing.
    fn start(version: &str, mode: &str) -> Option<(ServerProcess, u16)> {
        let python = python_sdk(version)?;
        let port = free_port();
        let mut command = Command::new(python);
        command
            .arg(python_server_script())
            .arg(mode)
            .arg(port.to_string())
            .env("PYTHONUNBUFFERED", "1");
        let mut server = ServerProcess::spawn(&format!("python mcp=={version} {mode}"), command);
        server.wait_until_accepting(port, START_TIMEOUT);
        Some((server, port))
    }

    async fn run(version: &str, mode: &str, path: &str, expect: Expect) {
        let Some((server, port)) = start(version, mode) else {
            return;
        };
        let url = format!("http://127.0.0.1:{port}{path}");
        check(
            &server,
            &format!("python mcp=={version} {mode}"),
            &url,
            expect,
        )
        .await;
    }

    #[tokio::test]
    async fn sdk2_streamable_http_is_modern() {
        run(
            "2.3.0",
            "streamable-http",
            "/mcp",
            Expect {
                era: Era::Modern,
                version: ProtocolVersion::V2026_07_28,
                transport: "streamable-http",
                echo: "hi",
            },
        )
        .await;
    }

    #[tokio::test]
    async fn sdk2_sse_is_legacy_sse() {
        run("2.3.0", "sse", "/sse", LEGACY_SSE).await;
    }

    #[tokio::test]
    async fn sdk1_streamable_http_is_legacy() {
        run(
            "1.30.0",
            "streamable-http",
            "/mcp",
            Expect {
                era: Era::Legacy,
                version: ProtocolVersion::V2025_11_25,
                transport: "streamable-http",
                echo: "hi",
            },
        )
        .await;
    }

    #[tokio::test]
    async fn sdk1_sse_is_legacy_sse() {
        run("1.30.0", "sse", "/sse", LEGACY_SSE).await;
    }
}

// ------------------------------------------------------------- rmcp 3.9

#[cfg(feature = "rmcp")]
mod rmcp_server {
    use super::*;
    use support::rmcp_server;

    /// `switchboard-rmcp-server --http 127.0.0.1:0 [extra]`; it binds the
    /// port itself and announces `listening on http://127.0.0.1:PORT/mcp`.
    fn start(extra: &[&str]) -> (ServerProcess, String) {
        let mut command = Command::new(rmcp_server());
        command.args(["--http", "127.0.0.1:0"]).args(extra);
        let mut server = ServerProcess::spawn("switchboard-rmcp-server --http", command);
        let url = server.listening_url(START_TIMEOUT);
        (server, url)
    }

    #[tokio::test]
    async fn streamable_http_is_modern() {
        let (server, url) = start(&[]);
        check(
            &server,
            "rmcp",
            &url,
            Expect {
                era: Era::Modern,
                version: ProtocolVersion::V2026_07_28,
                transport: "streamable-http",
                echo: "hi",
            },
        )
        .await;
    }

    #[tokio::test]
    async fn legacy_only_streamable_http_is_legacy() {
        let (server, url) = start(&["--legacy-only"]);
        check(
            &server,
            "rmcp --legacy-only",
            &url,
            Expect {
                era: Era::Legacy,
                version: ProtocolVersion::V2025_11_25,
                transport: "streamable-http",
                echo: "hi",
            },
        )
        .await;
    }
}
