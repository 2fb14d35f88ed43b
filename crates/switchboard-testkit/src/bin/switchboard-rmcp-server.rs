//! An MCP server over stdio built with the official Rust SDK (`rmcp` 3.9.0),
//! used as an independent peer by the interop tests and the benchmark.
//!
//! Tools: `echo {message}` → the message as text, `add {a, b}` → the sum as
//! text, `blob {size}` → a text of exactly `size` bytes. One resource
//! (`test://static/hello`, text `hello from rmcp`) and one prompt (`greet
//! {name}`).
//!
//! Usage: `switchboard-rmcp-server [--legacy-only] [--http ADDR]`
//!
//! * default transport: stdio.
//! * `--http ADDR` (e.g. `127.0.0.1:0`): rmcp's Streamable HTTP server
//!   (`StreamableHttpService` with its default config: sessions for the
//!   initialize era, stateless for 2026-07-28; `LocalSessionManager`), served
//!   with axum at the path `/mcp` of a TCP listener bound to `ADDR`. Once
//!   bound it prints exactly one line, `listening on http://IP:PORT/mcp`
//!   (the MCP endpoint, port resolved), to stdout, flushed, and serves until
//!   killed.
//!
//! * default: the SDK's own version set, 2024-11-05 … 2026-07-28. rmcp 3.9
//!   speaks both eras: it answers `server/discover` and stateless requests
//!   (per-request `_meta`) as well as `initialize`.
//! * `--legacy-only`: `supported_protocol_versions` narrowed to
//!   2024-11-05 … 2025-11-25, i.e. an rmcp server that has not adopted the
//!   stateless revision.
//!
//! # What rmcp 3.9 does with a request before `initialize` (stdio)
//!
//! Checked by hand (JSON lines piped into this binary) against
//! `rmcp-3.9.0/src/service/server.rs` (`serve_server_with_ct_inner`). For a
//! *request* it never exits and never stays silent: it answers, and keeps
//! waiting for a lifecycle to start on the same pipe.
//!
//! * `server/discover` whose `_meta` has `io.modelcontextprotocol/
//!   protocolVersion` (a supported one), `…/clientInfo` and
//!   `…/clientCapabilities` → a `DiscoverResult`: `resultType: "complete"`,
//!   `supportedVersions: ["2024-11-05", … "2026-07-28"]`, capabilities,
//!   instructions, `ttlMs: 0`, `cacheScope: "private"`, server info under
//!   `_meta["io.modelcontextprotocol/serverInfo"]`. A later `initialize` on
//!   the same pipe still works (negotiates 2025-11-25).
//! * the same with an unsupported version (2026-07-28 under
//!   `--legacy-only`) → error `-32022` "Unsupported protocol version",
//!   `data: {"requested": "2026-07-28", "supported": ["2024-11-05", …
//!   "2025-11-25"]}`; `initialize` afterwards on the same pipe works.
//! * `server/discover` or any other request whose `_meta` lacks
//!   `protocolVersion` or `clientCapabilities` (e.g. a bare
//!   `server/discover`, or `tools/list`) → error `-32602` "request
//!   _meta is missing or has malformed required fields: …"; no exit.
//! * `ping` → `{}`.
//! * any other request with complete `_meta` and a supported version (e.g.
//!   `tools/call` at 2026-07-28) → served statelessly; that request selects
//!   the stateless lifecycle for the connection.
//! * a notification (e.g. `notifications/initialized`) or a response before
//!   `initialize` → `ExpectedInitializeRequest`: nothing is written and the
//!   process exits with status 1 (this binary's choice on a serve error).
//! * EOF before `initialize` → exits with status 1 ("connection closed").
//!
//! So a switchboard client in Auto mode reaches the modern era (2026-07-28)
//! with the default server, and the legacy era (2025-11-25) on the same
//! process, without respawn, with `--legacy-only`.

use std::borrow::Cow;

use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    handler::server::{
        router::{prompt::PromptRouter, tool::ToolRouter},
        wrapper::Parameters,
    },
    model::{
        Implementation, ListResourcesResult, PaginatedRequestParams, PromptMessage,
        ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
        Resource, ResourceContents, Role, ServerCapabilities, ServerConfig,
    },
    prompt, prompt_handler, prompt_router, schemars,
    service::RequestContext,
    tool, tool_handler, tool_router,
};
use serde::Deserialize;

const RESOURCE_URI: &str = "test://static/hello";
const RESOURCE_TEXT: &str = "hello from rmcp";
/// Upper bound for `blob`, so a typo cannot make the server allocate gigabytes.
const MAX_BLOB: usize = 64 * 1024 * 1024;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    message: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct BlobArgs {
    /// Number of bytes of text to return.
    size: usize,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

#[derive(Debug, Clone)]
struct RmcpServer {
    legacy_only: bool,
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

#[tool_router]
impl RmcpServer {
    fn new(legacy_only: bool) -> Self {
        Self {
            legacy_only,
            tool_router: Self::tool_router(),
            prompt_router: Self::prompt_router(),
        }
    }

    #[tool(description = "Echo the message back as text.")]
    fn echo(&self, Parameters(EchoArgs { message }): Parameters<EchoArgs>) -> String {
        message
    }

    #[tool(description = "Add two numbers; the sum as text.")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        format_number(a + b)
    }

    #[tool(description = "A text of exactly `size` bytes (for benchmarks).")]
    fn blob(
        &self,
        Parameters(BlobArgs { size }): Parameters<BlobArgs>,
    ) -> Result<String, ErrorData> {
        if size > MAX_BLOB {
            return Err(ErrorData::invalid_params(
                format!("size {size} is above the limit of {MAX_BLOB} bytes"),
                None,
            ));
        }
        Ok(blob(size))
    }
}

#[prompt_router]
impl RmcpServer {
    #[prompt(description = "A greeting for `name`.")]
    fn greet(&self, Parameters(GreetArgs { name }): Parameters<GreetArgs>) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!("Please greet {name}."),
        )]
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for RmcpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            "switchboard-rmcp-server",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("rmcp 3.9 interop peer for switchboard: echo, add, blob.")
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.legacy_only {
            Cow::Borrowed(ProtocolVersion::known_up_to(
                &ProtocolVersion::LATEST_WITH_INITIALIZE,
            ))
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(RESOURCE_URI, "hello")
                .with_description("A static text resource.")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri == RESOURCE_URI {
            Ok(
                ReadResourceResult::new(vec![ResourceContents::text(RESOURCE_TEXT, request.uri)])
                    .into(),
            )
        } else {
            Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ))
        }
    }
}

/// `3` rather than `3.0` for whole sums, so `add {a: 1, b: 2}` reads "3".
fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        value.to_string()
    }
}

/// `size` bytes of printable ASCII.
fn blob(size: usize) -> String {
    const PATTERN: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    PATTERN
        .iter()
        .copied()
        .cycle()
        .take(size)
        .map(char::from)
        .collect()
}

/// The path the `--http` mode serves MCP at.
const HTTP_PATH: &str = "/mcp";

/// Serves over stdio until the client hangs up; the exit status.
async fn serve_stdio(legacy_only: bool) -> i32 {
    let server = match RmcpServer::new(legacy_only)
        .serve(rmcp::transport::stdio())
        .await
    {
        Ok(server) => server,
        Err(error) => {
            eprintln!("switchboard-rmcp-server: {error}");
            return 1;
        }
    };
    match server.waiting().await {
        Ok(_) => 0,
        Err(error) => {
            eprintln!("switchboard-rmcp-server: {error}");
            1
        }
    }
}

/// Serves rmcp's Streamable HTTP transport at `http://ADDR/mcp` until killed;
/// the exit status.
async fn serve_http(legacy_only: bool, addr: &str) -> i32 {
    use std::io::Write as _;
    use std::sync::Arc;

    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };

    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("switchboard-rmcp-server: cannot bind {addr}: {error}");
            return 1;
        }
    };
    let local = match listener.local_addr() {
        Ok(local) => local,
        Err(error) => {
            eprintln!("switchboard-rmcp-server: {error}");
            return 1;
        }
    };
    let service = StreamableHttpService::new(
        move || Ok(RmcpServer::new(legacy_only)),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().route_service(HTTP_PATH, service);
    {
        let mut out = std::io::stdout().lock();
        if writeln!(out, "listening on http://{local}{HTTP_PATH}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return 1;
        }
    }
    match axum::serve(listener, router).await {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("switchboard-rmcp-server: {error}");
            1
        }
    }
}

fn main() {
    let mut legacy_only = false;
    let mut http: Option<String> = None;
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--legacy-only" => legacy_only = true,
            "--http" => match argv.next() {
                Some(addr) => http = Some(addr),
                None => {
                    eprintln!("switchboard-rmcp-server: --http needs an address, e.g. 127.0.0.1:0");
                    std::process::exit(2);
                }
            },
            "-h" | "--help" => {
                println!(
                    "switchboard-rmcp-server [--legacy-only] [--http ADDR]\n\n\
                     An rmcp 3.9 MCP server with tools echo{{message}}, add{{a,b}}, blob{{size}},\n\
                     the resource {RESOURCE_URI} and the prompt greet{{name}}. Stdio by default.\n\
                     --legacy-only  support only 2024-11-05 … 2025-11-25 (initialize era)\n\
                     --http ADDR    serve Streamable HTTP at http://ADDR{HTTP_PATH} instead (e.g.\n\
                     \x20              127.0.0.1:0); prints `listening on http://IP:PORT{HTTP_PATH}`"
                );
                return;
            }
            other => {
                eprintln!("switchboard-rmcp-server: unknown argument {other:?} (try --help)");
                std::process::exit(2);
            }
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = runtime.block_on(async move {
        match http {
            Some(addr) => serve_http(legacy_only, &addr).await,
            None => serve_stdio(legacy_only).await,
        }
    });
    std::process::exit(code);
}
