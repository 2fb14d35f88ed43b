//! Many MCP servers at once.
//!
//! - [`config`]: one loader for every config dialect users already have
//!   (Claude Code, Claude Desktop, VS Code, Cursor, Codex, Gemini CLI,
//!   goose, and switchboard's own TOML), normalized into [`ServerConfig`],
//!   with variable expansion, precedence and policies.
//! - [`hub`]: the [`Hub`] that connects named servers in
//!   parallel, keeps each one's state, reconnects, and routes tool calls by
//!   namespaced name; resources, resource templates, prompts and completion
//!   are listed across servers and routed by server name; the tool policy
//!   (`[policy.tools]`) is decided there for every call, whoever makes it
//!   ([`hub::policy`]).
//! - [`bundle`]: MCP Bundles (`.mcpb`): the manifest read and the archive
//!   unpacked only after the whole archive is judged (sizes, count, paths,
//!   links, a command that runs the bundle's own code), and the command to
//!   run with the user's answers (secrets kept out as references).
//! - [`private_file`]: how the files that may hold server details are
//!   written (owner-only, atomically, never through a planted symlink).
//!
//! ## Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `otel` | off | a call made inside a span that has an OpenTelemetry context (`tracing-opentelemetry`) carries its W3C `traceparent` (and `tracestate`) in `_meta` to servers of the 2026-07-28 revision |
//! | `oauth` | off | OAuth logins for HTTP servers through `switchboard-auth`: `HubBuilder::oauth` (stored tokens sent and refreshed), `Hub::connect` (ready, or the authorization URL), `Hub::finish_login` (in this process or another, with a shared pending store), `Hub::login` (an `Authorizer` shows the URL and waits); `hub::users::Users`, a hub per user of a web application, their state in a shared `UserStore` |

pub mod bundle;
pub mod config;
pub mod gateway;
pub mod hub;
pub mod private_file;
pub mod registry;

pub use config::{
    Dialect, HeadersHelper, HttpKind, Origin, Scope, ServerConfig, ToolFilter, TransportConfig,
};
pub use hub::{
    BackendAsks, Backoff, Failure, Hub, HubBuilder, HubError, HubEvent, HubEvents, HubListing,
    HubPrompt, HubResource, HubResourceTemplate, HubServer, HubSkill, HubTool, ServerState,
    ServerStats, ServerStatus, StartReport,
};

/// Entry points for `fuzz/` (feature `fuzzing`, never on by default): the
/// config dialects' parser without a file on disk or the trust store.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz_entry {
    use std::path::Path;

    use crate::config::{Diagnostic, Dialect, Scope, ServerConfig};

    /// What one file said, as `load_file` would read it before trust and
    /// precedence: its servers and its diagnostics.
    pub fn parse_config(
        file: &Path,
        text: &str,
        dialect: Dialect,
        scope: Scope,
    ) -> (Vec<ServerConfig>, Vec<Diagnostic>) {
        let load = crate::config::dialect::parse(file, text, dialect, scope, &[file]);
        (load.servers, load.diagnostics)
    }
}
