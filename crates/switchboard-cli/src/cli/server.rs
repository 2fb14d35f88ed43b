//! The flags of the commands that reach a server: which server and how
//! (`--url`, a command after `--`, `--era`, `--timeout`, …), and
//! `tools --for`.

use std::path::PathBuf;

use serde_json::Value;
use switchboard::types::LoggingLevel;

use super::server_url;
use crate::term::{output, sanitize};

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ServerArgs {
    /// Print one JSON document on stdout instead of tables.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Protocol era: auto (probe, then fall back), modern (2026-07-28) or legacy (initialize).
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub(crate) era: EraArg,
    /// Request timeout in seconds.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) timeout: f64,
    /// The largest message taken from the server, in bytes: a line on
    /// stdio, a WebSocket message, an HTTP response body or event (default
    /// each transport's own, 64 MiB on HTTP).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_message_size: Option<u64>,
    /// Environment variable for the server, KEY=VALUE (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub(crate) env: Vec<String>,
    /// Pass the whole environment to the server, not just the safe list.
    #[arg(long)]
    pub(crate) inherit_env: bool,
    /// Always show what the server wrote to stderr.
    #[arg(long)]
    pub(crate) server_logs: bool,
    /// A remote server's URL, instead of a command.
    #[arg(long, value_name = "URL", conflicts_with = "command", value_parser = server_url)]
    pub(crate) url: Option<String>,
    /// A header for every HTTP request, 'Name: value' (repeatable).
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME: VALUE",
        requires = "url"
    )]
    pub(crate) headers: Vec<String>,
    /// The transport: auto (detect; ws:// and wss:// URLs use WebSocket), http
    /// (Streamable HTTP only), sse (the legacy HTTP+SSE transport; the URL is
    /// its event stream, often …/sse) or ws (WebSocket).
    #[arg(long, value_enum, default_value_t = TransportArg::Auto, requires = "url")]
    pub(crate) transport: TransportArg,
    /// The server command and its arguments, after `--`. Without it (and
    /// without --url), `tools` and `call` use the configured servers.
    #[arg(last = true, value_name = "COMMAND")]
    pub(crate) command: Vec<String>,
    /// Never prompt: decline every form, URL and sampling request the
    /// server sends (the default when stdin is not a terminal).
    #[arg(long, help_heading = "Answering the server")]
    pub(crate) no_input: bool,
    /// Send the server's sampling requests to --sampling-url without asking.
    #[arg(long, short = 'y', help_heading = "Answering the server")]
    pub(crate) yes: bool,
    /// A directory (or file) the server may work in, offered as a file://
    /// root (repeatable). Without it the working directory is offered.
    #[arg(
        long = "root",
        value_name = "PATH",
        help_heading = "Answering the server"
    )]
    pub(crate) roots: Vec<PathBuf>,
    /// Offer the server no roots at all (not even the working directory).
    #[arg(long, conflicts_with = "roots", help_heading = "Answering the server")]
    pub(crate) no_roots: bool,
    /// An OpenAI-compatible API (…/v1, or the full …/chat/completions URL)
    /// that answers the server's sampling requests; without it they are
    /// declined.
    #[arg(
        long,
        value_name = "URL",
        requires = "sampling_model",
        help_heading = "Answering the server"
    )]
    pub(crate) sampling_url: Option<String>,
    /// The model --sampling-url should use.
    #[arg(
        long,
        value_name = "NAME",
        requires = "sampling_url",
        help_heading = "Answering the server"
    )]
    pub(crate) sampling_model: Option<String>,
    /// The environment variable holding the --sampling-url API key (sent as
    /// a bearer token; none is sent when it is unset).
    #[arg(
        long,
        value_name = "VAR",
        default_value = "OPENAI_API_KEY",
        help_heading = "Answering the server"
    )]
    pub(crate) sampling_key_env: String,
    /// At most this many sampling requests go to --sampling-url in one run
    /// (across every server); later ones are declined, saying so.
    #[arg(
        long,
        value_name = "N",
        default_value_t = switchboard_models::sampling::DEFAULT_MAX_CALLS,
        requires = "sampling_url",
        help_heading = "Answering the server"
    )]
    pub(crate) sampling_max_calls: usize,
    /// The least severe log message the server should send (shown on stderr
    /// as it arrives).
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub(crate) log_level: Option<LevelArg>,
}
/// `tools --for PROVIDER`: the tools as a model API's `tools` value.
#[derive(Debug, clap::Args)]
pub(crate) struct ModelArgs {
    /// Print the tools as the `tools` value of a model API request:
    /// openai-responses, openai-chat, anthropic or gemini (names
    /// `mcp__SERVER__TOOL`, made valid for the API).
    #[arg(long = "for", value_name = "PROVIDER")]
    pub(crate) provider: Option<switchboard_models::Provider>,
    /// With --for openai-*: strict mode where a tool's schema allows it.
    #[arg(long, requires = "provider")]
    pub(crate) strict: bool,
}

impl ModelArgs {
    /// The tools as `provider`'s `tools` value; renamed collisions and
    /// schema changes reported on stderr.
    pub(crate) fn print(
        &self,
        provider: switchboard_models::Provider,
        tools: Vec<(String, switchboard::types::Tool)>,
    ) {
        let mut definitions = switchboard_models::DefinitionOptions::default();
        definitions.strict = self.strict;
        let set = switchboard_models::Toolset::new(
            provider,
            switchboard_models::ToolsetOptions::default().definitions(definitions),
            tools,
        );
        for collision in set.collisions() {
            let note = format!(
                "note: {}/{} is named `{}`: `{}` is taken by {}/{}",
                collision.server,
                collision.tool,
                collision.renamed,
                collision.wanted,
                collision.kept.0,
                collision.kept.1
            );
            eprintln!("{}", sanitize::line(&note));
        }
        for entry in set.entries() {
            for note in &entry.notes {
                let note = format!("note: {} at `{}`: {}", entry.name, note.at, note.what);
                eprintln!("{}", sanitize::line(&note));
            }
        }
        // Parsed back for pretty printing (keys stay in order).
        let param: Value =
            serde_json::from_str(set.tools_param().get()).expect("tools_param is JSON");
        output::print_json(&param);
    }
}
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub(crate) enum LevelArg {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl From<LevelArg> for LoggingLevel {
    fn from(level: LevelArg) -> Self {
        match level {
            LevelArg::Debug => LoggingLevel::Debug,
            LevelArg::Info => LoggingLevel::Info,
            LevelArg::Notice => LoggingLevel::Notice,
            LevelArg::Warning => LoggingLevel::Warning,
            LevelArg::Error => LoggingLevel::Error,
            LevelArg::Critical => LoggingLevel::Critical,
            LevelArg::Alert => LoggingLevel::Alert,
            LevelArg::Emergency => LoggingLevel::Emergency,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub(crate) enum TransportArg {
    Auto,
    Http,
    Sse,
    Ws,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub(crate) enum EraArg {
    Auto,
    Modern,
    Legacy,
}
