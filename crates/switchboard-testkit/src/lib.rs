//! switchboard's test servers: [`switchboard_testserver`] (its public items
//! re-exported, so `switchboard_testkit::serve` and friends are the same items)
//! plus what only tests need: HTTP transports in front of it (Streamable
//! HTTP, legacy HTTP+SSE and WebSocket, see [`serve_http`]) and a built-in
//! OAuth 2.1 authorization server (`--auth`, see [`AuthConfig`]) whose
//! access tokens are JWTs ([`jwt_issuer`]); a
//! real PostgreSQL started for a test ([`postgres`]); and MCP Bundles, a
//! good one that runs and hostile ones ([`bundle`]).
//!
//! Not published. The `switchboard-testkit-server` binary is
//! `switchboard-testserver` with `--http` (see [`run_stdio_main`]); the
//! `switchboard-rmcp-server` binary is the official Rust SDK's server as an
//! independent peer for interop tests and the benchmark.
//!
//! It deliberately does not depend on the `switchboard` crates (but for the
//! `oauth-client` feature's binary).

mod authserver;
pub mod bundle;
mod http;
pub mod jwt_issuer;
pub mod nginx;
#[cfg(unix)]
pub mod postgres;
pub mod providers;
pub mod registry;
#[cfg(feature = "rmcp")]
pub mod rmcp_host;

pub use authserver::{ADMIN_TOOL, SCOPE_ADMIN, SCOPE_READ};
pub use http::{serve_http, spawn_http};
pub use switchboard_testserver::{
    ALL_HTTP_TRANSPORTS, AuthConfig, AuthQuirk, DEFAULT_MODERN_VERSION, DEFAULT_SERVER_NAME,
    DEFAULT_TOKEN_TTL_SECS, Era, Fault, GARBAGE_LINE, HttpResponseMode, HttpTransport,
    LATEST_LEGACY_VERSION, LEGACY_VERSIONS, SCHEMA_RICH_INPUT_SCHEMA, ServerConfig, ServerExit,
    TINY_PNG_BASE64, TOOL_NAMES, USAGE, serve,
};

use switchboard_testserver::{HTTP_USAGE, exit_with, run_in_runtime};

/// README.md's Rust code blocks, compiled by `cargo test --doc` so that the
/// library examples there cannot rot (this crate's dev-dependencies have
/// every crate they use).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;

/// docs/library.md's Rust code blocks, compiled the same way.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
pub struct LibraryGuideExamples;

/// Entry point of the `switchboard-testkit-server` binary (and of test
/// binaries that run themselves as a server): parses `args` (without the
/// program name), serves stdin/stdout (or HTTP with `--http ADDR`) and
/// exits the process.
///
/// With `--http`, binds ADDR, prints exactly one line
/// `listening on http://IP:PORT` to stdout (with `--auth`, a second one:
/// `auth issuer URL`) and serves until killed (or until the `exit` tool is
/// called).
///
/// Exit codes: 0 on EOF, 2 on bad arguments, the requested code for the
/// `exit` tool, 1 for `exit-before-init` and I/O errors (including a failed
/// bind).
pub fn run_stdio_main(args: Vec<String>) -> ! {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprint!("{USAGE}\n{HTTP_USAGE}");
        std::process::exit(0);
    }
    let config = match ServerConfig::from_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("switchboard-testserver: {e}");
            eprint!("{USAGE}\n{HTTP_USAGE}");
            std::process::exit(2);
        }
    };
    exit_with(match config.http.clone() {
        Some(addr) => run_in_runtime(http::run_http_main(config, &addr)),
        None => run_in_runtime(serve(config, tokio::io::stdin(), tokio::io::stdout())),
    })
}
