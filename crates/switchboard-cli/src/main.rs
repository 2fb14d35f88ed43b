//! `switchboard`: talk to any MCP server from the terminal.

/// See Cargo.toml: the gateway's hot path allocates per message.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod approve;
mod args;
mod ask;
mod configure;
mod demo;
mod doctor;
mod fronted;
mod hub;
mod lifecycle;
mod listen;
mod login;
#[cfg(feature = "otlp")]
mod otlp;
mod output;
mod policy;
mod sampling;
mod sanitize;
mod session;
mod shell;
mod suggest;
mod ui;

use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use std::sync::Arc;

use switchboard::transport::Connector;
use switchboard::transport::http::{HttpConfig, HttpTransport};
use switchboard::transport::stdio::StdioConfig;
use switchboard::transport::ws::WebSocketConfig;
use switchboard::types::roots::Root;
use switchboard::types::{CallToolRequestParams, LoggingLevel};
use switchboard::{Client, EraMode, RequestOptions, Roots, TaskOptions};

use crate::ui::Ui;

/// A remote server's URL: http(s) or ws(s), with its scheme written out.
pub(crate) fn server_url(text: &str) -> Result<String, String> {
    let text = text.trim();
    match text.split_once("://") {
        Some((scheme, rest)) if !rest.is_empty() => {
            if ["http", "https", "ws", "wss"].contains(&scheme.to_ascii_lowercase().as_str()) {
                Ok(text.to_owned())
            } else {
                Err(format!(
                    "`{scheme}://` is not a scheme an MCP server is reached by: use https:// \
                     (or http:// on loopback, ws:// or wss://)"
                ))
            }
        }
        _ => Err(format!(
            "`{text}` has no scheme: did you mean https://{}?",
            text.trim_start_matches(':').trim_start_matches('/')
        )),
    }
}

/// Each subcommand's examples, shown at the end of its `--help` (and in
/// the manual). A test checks that every subcommand has some.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "demo",
        "switchboard demo\nswitchboard demo --json | jq '.servers[].era'",
    ),
    (
        "info",
        "switchboard info -- npx -y @modelcontextprotocol/server-everything\nswitchboard info --url https://mcp.example.com/mcp\nswitchboard info github            # a configured server, with its state",
    ),
    (
        "complete",
        "switchboard complete everything/complex-prompt temperature=0\nswitchboard complete --resource 'file:///{path}' path=src/ -- my-server",
    ),
    (
        "tools",
        "switchboard tools                          # every configured server's\nswitchboard tools --server github --json\nswitchboard tools --for anthropic > tools.json\nswitchboard tools -- uvx mcp-server-time",
    ),
    (
        "resources",
        "switchboard resources\nswitchboard resources --server docs --json",
    ),
    (
        "prompts",
        "switchboard prompts\nswitchboard prompts --server everything",
    ),
    (
        "skills",
        "switchboard skills                         # every configured server's\nswitchboard skills --server docs --json\nswitchboard skills -- switchboard __testserver --skills",
    ),
    (
        "skill",
        "switchboard skill pdf-processing           # the one server that has it\nswitchboard skill docs/pdf-processing --file references/FORMS.md\nswitchboard skill code-review --json -- switchboard __testserver --skills",
    ),
    (
        "call",
        "switchboard call everything/echo '{\"message\": \"hi\"}'\nswitchboard call everything__get-sum --arg a=1 --arg b=2\nswitchboard call echo '{\"message\": \"hi\"}'     # the one server that has it\nswitchboard call get_current_time '{\"timezone\": \"UTC\"}' -- uvx mcp-server-time",
    ),
    (
        "read",
        "switchboard read 'file:///README.md' --server docs\nswitchboard read demo://resource/static/document/architecture.md -- npx -y @modelcontextprotocol/server-everything\nswitchboard read ui://weather/dashboard --server weather -o dashboard.html   # an MCP App's HTML",
    ),
    (
        "prompt",
        "switchboard prompt everything/simple-prompt\nswitchboard prompt review --server github --arg pr=42",
    ),
    (
        "login",
        "switchboard login notion                   # a configured server\nswitchboard login https://mcp.example.com/mcp",
    ),
    ("logout", "switchboard logout notion"),
    (
        "auth",
        "switchboard auth status\nswitchboard auth status --json",
    ),
    (
        "policy",
        "switchboard policy list\nswitchboard policy revoke github/delete_repo\nswitchboard policy revoke github/*   # every tool of a server",
    ),
    (
        "auth status",
        "switchboard auth status --json | jq '.[].server'",
    ),
    (
        "list",
        "switchboard list\nswitchboard list --json --timeout 10",
    ),
    (
        "add",
        "switchboard add everything -- npx -y @modelcontextprotocol/server-everything\nswitchboard add docs https://mcp.example.com/mcp\nswitchboard add -t http -s user api https://api.example.com/mcp -H 'Authorization: Bearer ${API_TOKEN}'\nswitchboard add -e API_KEY='${API_KEY}' search -- uvx search-mcp",
    ),
    (
        "add-json",
        "switchboard add-json time '{\"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}'\nswitchboard add-json -s user docs '{\"type\": \"http\", \"url\": \"https://mcp.example.com/mcp\"}'",
    ),
    (
        "import",
        "switchboard import --from claude-desktop\nswitchboard import --from cursor -s project",
    ),
    (
        "remove",
        "switchboard remove docs\nswitchboard remove docs -s user",
    ),
    ("enable", "switchboard enable github"),
    ("disable", "switchboard disable github"),
    (
        "get",
        "switchboard get github\nswitchboard get github --json",
    ),
    (
        "approve",
        "switchboard approve db                      # after reading what it runs\nswitchboard approve --all",
    ),
    ("trust", "switchboard trust\nswitchboard trust --all --json"),
    (
        "untrust",
        "switchboard untrust db\nswitchboard untrust --all",
    ),
    (
        "serve",
        "switchboard serve                                   # for a host that starts it\nswitchboard serve --http 127.0.0.1:8080 --audit ~/switchboard-audit.jsonl\nclaude mcp add switchboard -- switchboard serve",
    ),
    (
        "shell",
        "switchboard shell\nswitchboard shell everything\n  switchboard> call everything__echo message=hi\n  switchboard> call everything/get-sum        # asks for a and b",
    ),
    (
        "completions",
        "switchboard completions bash > ~/.local/share/bash-completion/completions/switchboard\nswitchboard completions zsh > \"${fpath[1]}/_switchboard\"\nswitchboard completions fish > ~/.config/fish/completions/switchboard.fish",
    ),
    (
        "man",
        "switchboard man > ~/.local/share/man/man1/switchboard.1 && man switchboard",
    ),
    (
        "doctor",
        "switchboard doctor\nswitchboard doctor --check                  # and start every server\nswitchboard doctor --json | jq '.findings[] | select(.severity == \"error\")'",
    ),
    (
        "up",
        "switchboard up                              # stops after 30 idle minutes\nswitchboard up --idle 8h\nswitchboard call everything/echo '{\"message\": \"hi\"}'   # through the session",
    ),
    ("down", "switchboard down"),
    (
        "audit",
        "switchboard audit verify ~/switchboard-audit.jsonl",
    ),
    ("audit verify", "switchboard audit verify audit.jsonl"),
];

/// The command line with each subcommand's examples.
fn cli_command() -> clap::Command {
    use clap::CommandFactory as _;
    let mut command = Cli::command();
    for (path, examples) in EXAMPLES {
        let text = format!(
            "Examples:\n{}",
            examples
                .lines()
                .map(|l| format!("  {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        command = match path.split_once(' ') {
            Some((parent, child)) => {
                command.mut_subcommand(parent, |c| c.mut_subcommand(child, |c| c.after_help(text)))
            }
            None => command.mut_subcommand(path, |c| c.after_help(text)),
        };
    }
    // Options where they do nothing are not shown there (they still
    // parse, so a shared alias keeps working): sampling answers a server's
    // `sampling/createMessage` during a call or a prompt, not a listing.
    for listing in [
        "tools",
        "resources",
        "prompts",
        "skills",
        "skill",
        "info",
        "complete",
        "read",
    ] {
        command = command.mut_subcommand(listing, |mut c| {
            for id in [
                "sampling_url",
                "sampling_model",
                "sampling_key_env",
                "sampling_max_calls",
            ] {
                c = c.mut_arg(id, |a| a.hide(true));
            }
            c
        });
    }
    command
}

/// The subcommands that take a server command after `--`.
const TAKE_A_COMMAND: [&str; 9] = [
    "info",
    "tools",
    "resources",
    "prompts",
    "call",
    "read",
    "prompt",
    "complete",
    "add",
];

/// When a parse error comes from a server command typed without the `--`
/// before it (`switchboard tools npx -y server`), the command line with
/// it, as a hint.
fn forgotten_dashes(error: &clap::Error, argv: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(error.kind(), ErrorKind::UnknownArgument) || argv.iter().any(|a| a == "--") {
        return None;
    }
    let subcommand = argv
        .iter()
        .skip(1)
        .position(|a| TAKE_A_COMMAND.contains(&a.as_str()))?
        + 1;
    let Some(ContextValue::String(invalid)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    // Where the server command starts: the first word past the
    // subcommand's own positionals (`call TOOL`, `add NAME`, `complete
    // PROMPT ARG=`), flags aside; else the word clap could not place.
    let own = match argv[subcommand].as_str() {
        "call" | "read" | "prompt" | "add" => 1,
        "complete" => 2,
        _ => 0,
    };
    let words: Vec<usize> = (subcommand + 1..argv.len())
        .filter(|&i| !argv[i].starts_with('-'))
        .collect();
    let start = match words.get(own) {
        Some(&i) => i,
        None => {
            argv.iter()
                .skip(subcommand + 1)
                .position(|a| a == invalid)?
                + subcommand
                + 1
        }
    };
    // `add NAME CMD …` keeps the name before the `--`; `call TOOL CMD …`
    // its tool.
    let mut fixed: Vec<String> = vec!["switchboard".to_owned()];
    fixed.extend(argv[1..start].iter().cloned());
    fixed.push("--".to_owned());
    fixed.extend(argv[start..].iter().cloned());
    let command = argv[start..].join(" ");
    Some(format!(
        "hint: if `{}` is the server's command, put `--` before it:\n  {}",
        sanitize::line(&command),
        sanitize::line(&fixed.join(" "))
    ))
}

/// `add NAME URL`'s URL: as [`server_url`], but a word that is no host
/// (`npx`) is a command whose `--` was forgotten.
pub(crate) fn add_url(text: &str) -> Result<String, String> {
    let host_like = text.contains('.') || text.contains(':') || text.contains('/');
    if !text.contains("://") && !host_like {
        return Err(format!(
            "`{text}` is not a URL: to add a local server, put its command after `--`: \
             switchboard add NAME -- {text} …"
        ));
    }
    server_url(text)
}

/// The longest idle period `up` takes: a year (a longer one overflowed the
/// clock and crashed the session).
const MAX_IDLE_SECONDS: u64 = 365 * 86_400;

/// `90s`, `30m`, `8h`, `1d`, or plain seconds, at most 365 days.
fn parse_idle(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 90s, 30m or 8h"))?;
    let seconds = match unit {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(86_400),
        _ => return Err(format!("`{text}`: the unit is s, m, h or d")),
    };
    if seconds == 0 {
        return Err("the idle period must be at least one second".to_owned());
    }
    if seconds > MAX_IDLE_SECONDS {
        return Err(format!(
            "`{text}` is too long: the idle period is at most 365d; to keep the session \
             until `switchboard down`, give 365d"
        ));
    }
    Ok(Duration::from_secs(seconds))
}

/// Exit codes, as documented in README.md.
mod exit {
    pub(crate) const USAGE: u8 = 1;
    pub(crate) const AUTH_REQUIRED: u8 = 3;
    pub(crate) const UNREACHABLE: u8 = 4;
    pub(crate) const TOOL_ERROR: u8 = 5;
    pub(crate) const PROTOCOL_VIOLATION: u8 = 6;
    /// Ended by SIGHUP, SIGINT (Ctrl-C), SIGTERM: 128 + the signal, as a
    /// shell reports a process the signal killed.
    pub(crate) const SIGHUP: u8 = 129;
    pub(crate) const SIGINT: u8 = 130;
    pub(crate) const SIGTERM: u8 = 143;
    /// stdout or stderr was closed by its reader (`… | head`): 128 + SIGPIPE.
    pub(crate) const OUTPUT_CLOSED: u8 = 141;
}

#[derive(Parser, Debug)]
#[command(
    name = "switchboard",
    version,
    about = "Talk to any MCP server: both protocol eras, from one command.",
    after_help = "Exit codes: 0 ok, 1 usage or config error (and JSON-RPC errors), \
                  3 authorization required, 4 server unreachable, failed to start, lost \
                  or timed out, 5 the tool returned isError, 6 the server broke the protocol, \
                  129/130/143 ended by SIGHUP/SIGINT/SIGTERM (servers closed first), \
                  141 output closed by its reader."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The credentials file for OAuth logins (created 0600), instead of the
    /// default store (the OS keyring; on Linux
    /// ~/.config/switchboard/credentials.json). Also SWITCHBOARD_CREDENTIALS.
    #[arg(long, global = true, value_name = "FILE")]
    credentials: Option<PathBuf>,
    /// A config file of servers (switchboard TOML, or any client's file),
    /// read before every other and winning a name they share; `add` and
    /// `import` write to it.
    #[arg(long = "config", global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print results' and resources' text byte for byte. Without it, control
    /// characters a server wrote (escape sequences among them) are shown as
    /// escapes (`\x1b`); `--json` output is escaped JSON either way.
    #[arg(long, global = true)]
    raw: bool,
    /// Send this command's traces to an OpenTelemetry collector (OTLP over
    /// HTTP/protobuf; its base URL, traces go to /v1/traces). Also
    /// OTEL_EXPORTER_OTLP_ENDPOINT.
    #[cfg(feature = "otlp")]
    #[arg(long, global = true, value_name = "URL")]
    otlp_endpoint: Option<String>,
}

#[derive(clap::Args, Debug, Clone)]
struct ServerArgs {
    /// Print one JSON document on stdout instead of tables.
    #[arg(long, global = true)]
    json: bool,
    /// Protocol era: auto (probe, then fall back), modern (2026-07-28) or legacy (initialize).
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    era: EraArg,
    /// Request timeout in seconds.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// The largest message taken from the server, in bytes: a line on
    /// stdio, a WebSocket message, an HTTP response body or event (default
    /// each transport's own, 64 MiB on HTTP).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    max_message_size: Option<u64>,
    /// Environment variable for the server, KEY=VALUE (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// Pass the whole environment to the server, not just the safe list.
    #[arg(long)]
    inherit_env: bool,
    /// Always show what the server wrote to stderr.
    #[arg(long)]
    server_logs: bool,
    /// A remote server's URL, instead of a command.
    #[arg(long, value_name = "URL", conflicts_with = "command", value_parser = server_url)]
    url: Option<String>,
    /// A header for every HTTP request, 'Name: value' (repeatable).
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME: VALUE",
        requires = "url"
    )]
    headers: Vec<String>,
    /// The transport: auto (detect; ws:// and wss:// URLs use WebSocket), http
    /// (Streamable HTTP only), sse (the legacy HTTP+SSE transport; the URL is
    /// its event stream, often …/sse) or ws (WebSocket).
    #[arg(long, value_enum, default_value_t = TransportArg::Auto, requires = "url")]
    transport: TransportArg,
    /// The server command and its arguments, after `--`. Without it (and
    /// without --url), `tools` and `call` use the configured servers.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
    /// Never prompt: decline every form, URL and sampling request the
    /// server sends (the default when stdin is not a terminal).
    #[arg(long, help_heading = "Answering the server")]
    no_input: bool,
    /// Send the server's sampling requests to --sampling-url without asking.
    #[arg(long, short = 'y', help_heading = "Answering the server")]
    yes: bool,
    /// A directory (or file) the server may work in, offered as a file://
    /// root (repeatable). Without it the working directory is offered.
    #[arg(
        long = "root",
        value_name = "PATH",
        help_heading = "Answering the server"
    )]
    roots: Vec<PathBuf>,
    /// Offer the server no roots at all (not even the working directory).
    #[arg(long, conflicts_with = "roots", help_heading = "Answering the server")]
    no_roots: bool,
    /// An OpenAI-compatible API (…/v1, or the full …/chat/completions URL)
    /// that answers the server's sampling requests; without it they are
    /// declined.
    #[arg(
        long,
        value_name = "URL",
        requires = "sampling_model",
        help_heading = "Answering the server"
    )]
    sampling_url: Option<String>,
    /// The model --sampling-url should use.
    #[arg(
        long,
        value_name = "NAME",
        requires = "sampling_url",
        help_heading = "Answering the server"
    )]
    sampling_model: Option<String>,
    /// The environment variable holding the --sampling-url API key (sent as
    /// a bearer token; none is sent when it is unset).
    #[arg(
        long,
        value_name = "VAR",
        default_value = "OPENAI_API_KEY",
        help_heading = "Answering the server"
    )]
    sampling_key_env: String,
    /// At most this many sampling requests go to --sampling-url in one run
    /// (across every server); later ones are declined, saying so.
    #[arg(
        long,
        value_name = "N",
        default_value_t = switchboard_models::sampling::DEFAULT_MAX_CALLS,
        requires = "sampling_url",
        help_heading = "Answering the server"
    )]
    sampling_max_calls: usize,
    /// The least severe log message the server should send (shown on stderr
    /// as it arrives).
    #[arg(long, value_enum, value_name = "LEVEL")]
    log_level: Option<LevelArg>,
}

/// `tools --for PROVIDER`: the tools as a model API's `tools` value.
#[derive(Debug, clap::Args)]
struct ModelArgs {
    /// Print the tools as the `tools` value of a model API request:
    /// openai-responses, openai-chat, anthropic or gemini (names
    /// `mcp__SERVER__TOOL`, made valid for the API).
    #[arg(long = "for", value_name = "PROVIDER")]
    provider: Option<switchboard_models::Provider>,
    /// With --for openai-*: strict mode where a tool's schema allows it.
    #[arg(long, requires = "provider")]
    strict: bool,
}

impl ModelArgs {
    /// The tools as `provider`'s `tools` value; renamed collisions and
    /// schema changes reported on stderr.
    fn print(
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
enum LevelArg {
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
enum TransportArg {
    Auto,
    Http,
    Sse,
    Ws,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum EraArg {
    Auto,
    Modern,
    Legacy,
}

#[derive(Subcommand, Debug)]
enum AuthCommand {
    /// List the stored logins: server, issuer, client id, scopes, token
    /// expiry (never a token).
    Status {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum PolicyCommand {
    /// List the tools remembered as always allowed (SERVER/TOOL).
    List {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Forget a remembered allow: the next call is asked about again.
    Revoke {
        /// SERVER/TOOL, or SERVER/* for every tool of a server.
        #[arg(value_name = "SERVER/TOOL")]
        target: String,
    },
}

#[derive(Subcommand, Debug)]
enum AuditCommand {
    /// Check an audit log (`serve --audit FILE`) and its rotated files
    /// FILE.1, FILE.2, …: every line's `prev` must be the keyed MAC of the
    /// line before, each file must start with its header linking it to the
    /// one before, and the current file must end where its anchor says.
    /// Exit 0 with the counts when intact; otherwise 1 and what does not
    /// hold and where (an edited line, a cut tail, a removed head, a
    /// missing rotated file, a file of another user).
    ///
    /// Example: `switchboard audit verify ~/switchboard-audit.jsonl`
    Verify {
        /// The log (the file `serve --audit` writes, not a rotated one).
        file: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the bundled test server and show what switchboard does, no setup needed.
    Demo {
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show the negotiated era, protocol version, server info and
    /// capabilities: `info -- COMMAND…`, `info --url URL`, or a configured
    /// server's (with its state) as `info NAME` or `info --server NAME`.
    Info {
        /// The configured server (as --server).
        #[arg(value_name = "NAME", conflicts_with = "only")]
        name: Option<String>,
        /// The configured server.
        #[arg(long = "server", value_name = "NAME")]
        only: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Ask the server to complete an argument of a prompt (or, with
    /// --resource, of a resource template): `complete PROMPT NAME=PARTIAL
    /// -- COMMAND…`, or on a configured server as `complete SERVER/PROMPT
    /// NAME=PARTIAL`, `complete SERVER__PROMPT …` or `--server NAME`.
    Complete {
        /// The prompt's name (SERVER/NAME or SERVER__NAME for a configured
        /// server); with --resource, the resource template's URI template.
        target: String,
        /// The argument to complete and what is typed so far, NAME=PARTIAL
        /// (NAME alone: nothing typed yet).
        #[arg(value_name = "NAME=PARTIAL")]
        argument: String,
        /// TARGET is a resource template's URI template, not a prompt.
        #[arg(long)]
        resource: bool,
        /// An argument already given, KEY=VALUE (repeatable): context for
        /// the completion.
        #[arg(long = "context", value_name = "KEY=VALUE")]
        context: Vec<String>,
        /// The configured server to ask.
        #[arg(long = "server", value_name = "NAME")]
        only: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the server's tools; without a server command, every configured
    /// server's tools, named SERVER__TOOL.
    Tools {
        /// Only this configured server's tools.
        #[arg(long = "server", value_name = "NAME")]
        only: Option<String>,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the server's resources and resource templates; without a
    /// server command, every configured server's, with their server.
    Resources {
        /// Only this configured server's resources.
        #[arg(long = "server", value_name = "NAME")]
        only: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the server's prompts; without a server command, every
    /// configured server's, with their server.
    Prompts {
        /// Only this configured server's prompts.
        #[arg(long = "server", value_name = "NAME")]
        only: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the server's skills (the skills extension): name, description
    /// and files; without a server command, every configured server's.
    /// Reads no skill file.
    Skills {
        /// Only this configured server's skills.
        #[arg(long = "server", value_name = "NAME")]
        only: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Load a skill and show it: its SKILL.md is read and checked against
    /// the server's listing (size, SHA-256, frontmatter) before anything
    /// of it is shown. NAME is the skill's name, SERVER/NAME, SERVER__NAME
    /// or its skill:// URI.
    Skill {
        /// The skill.
        name: String,
        /// Show this file of the skill instead (a path inside it, such as
        /// references/FORMS.md), checked against the listing too.
        #[arg(long, value_name = "PATH")]
        file: Option<String>,
        /// The configured server to ask.
        #[arg(long = "server", value_name = "NAME")]
        only: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Call a tool: `call TOOL -- COMMAND…`, or a configured server's
    /// tool as `call SERVER/TOOL` or `call SERVER__TOOL`.
    ///
    /// A configured server's tool follows `[policy.tools]`: a denied one
    /// is refused (exit 1), one the policy asks about is asked on the
    /// terminal (once, always — see `switchboard policy` — or no) and
    /// refused without one.
    Call {
        /// The tool's name (SERVER/TOOL or SERVER__TOOL for a configured server).
        tool: String,
        /// The arguments as one JSON object (as --args-json).
        #[arg(value_name = "JSON", conflicts_with = "args_json")]
        json_args: Option<String>,
        /// An argument, KEY=VALUE; the value is read as JSON when it parses
        /// (`n=1` is a number, `o={"a":1}` an object), else as a string.
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        /// All arguments as one JSON object; --arg values are merged over it.
        #[arg(long, value_name = "JSON")]
        args_json: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Read a resource: `read URI -- COMMAND…`, or a configured server's
    /// as `read URI --server NAME`. An MCP App's HTML (a ui:// resource) is
    /// not printed on a terminal: give -o FILE, or --raw.
    Read {
        /// The resource URI.
        uri: String,
        /// The configured server to read from.
        #[arg(long = "server", value_name = "NAME")]
        only: Option<String>,
        /// Write the contents to FILE (text as is, a blob decoded) instead
        /// of printing them.
        #[arg(
            short = 'o',
            long = "output",
            value_name = "FILE",
            conflicts_with = "json"
        )]
        output: Option<PathBuf>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Get a prompt: `prompt NAME -- COMMAND…`, or a configured server's
    /// as `prompt NAME --server SERVER`, `prompt SERVER/NAME` or
    /// `prompt SERVER__NAME`.
    Prompt {
        /// The prompt's name (SERVER/NAME or SERVER__NAME for a configured server).
        name: String,
        /// The configured server to ask.
        #[arg(long = "server", value_name = "NAME")]
        only: Option<String>,
        /// An argument, KEY=VALUE (prompt arguments are strings).
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Log in to a remote server with OAuth: opens the browser (and prints
    /// the URL), receives the authorization on 127.0.0.1, stores the tokens.
    Login(login::LoginArgs),
    /// Remove the stored credentials of a server.
    Logout {
        /// The server's URL, as given to `login` (or its resource URI).
        #[arg(value_name = "URL")]
        server: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The tool policy's remembered answers: tools the user allowed
    /// "always" when `[policy.tools]` asked (per server, as configured
    /// then: a changed server is asked about again).
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Stored OAuth credentials.
    Auth {
        #[command(subcommand)]
        command: AuthCommand,
    },
    /// Every configured server (all clients' files) with its source file,
    /// state and the reason, checked in parallel.
    List {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
        /// Seconds each server may take to start.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
        /// Every detail, at any width: full paths, the whole reason and the
        /// server's last stderr line (by default the table fits 100
        /// columns; `get NAME` shows one server in full).
        #[arg(long)]
        wide: bool,
        /// One row per shadowed or skipped entry too (by default they are
        /// counted below the table).
        #[arg(long)]
        all: bool,
    },
    /// Add a server: `add NAME -- COMMAND [ARGS…]` or `add NAME --url URL`.
    Add(configure::AddArgs),
    /// Add a server from a JSON object as Claude Code writes it
    /// ({"command": …, "args": […], "env": {…}} or {"type": "http", "url": …}).
    #[command(name = "add-json")]
    AddJson {
        /// The server's name.
        name: String,
        /// The server entry.
        #[arg(value_name = "JSON")]
        entry: String,
        /// Where to write it (default local).
        #[arg(short = 's', long, value_enum)]
        scope: Option<configure::ScopeArg>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Copy another client's servers into switchboard's own file (default
    /// the user file), references as written.
    Import {
        /// The client whose servers to copy.
        #[arg(long, value_enum)]
        from: configure::ClientArg,
        /// Where to write them (default user).
        #[arg(short = 's', long, value_enum)]
        scope: Option<configure::ScopeArg>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a server from the file it is configured in (or from
    /// switchboard's file of --scope).
    Remove(NameArgs),
    /// Switch a configured server on.
    Enable(NameArgs),
    /// Switch a configured server off (it stays configured).
    Disable(NameArgs),
    /// Show a configured server as written: `${VAR}` references, never
    /// their values.
    Get {
        /// The server's name.
        name: String,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Approve servers from this project's files (`.mcp.json`,
    /// `.vscode/mcp.json`, `switchboard.toml` …) so that they may run;
    /// shows what each runs and which variables it receives.
    Approve(ServerNames),
    /// List the approvals of this project (every project with --all) and
    /// the servers that wait for one.
    Trust {
        /// Every project's approvals.
        #[arg(long)]
        all: bool,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Revoke approvals of this project's servers.
    Untrust(ServerNames),
    /// Serve every configured server's tools as one MCP server on
    /// stdin/stdout, for an MCP host to start: tools named SERVER__TOOL,
    /// to hosts of either protocol era.
    ///
    /// Servers start in the background; each one's tools appear when it is
    /// ready (hosts of the session era are told the list changed). Project
    /// servers not yet approved are not started (approve them with
    /// `switchboard approve`); nothing is asked on the terminal, since
    /// stdin is the host's. Logs go to stderr (RUST_LOG).
    ///
    /// What a server asks of its client (a form, a URL to open, a model's
    /// answer) goes to the host, in the host's era; a host that cannot
    /// answer gets it declined. `[policy.tools]` in a switchboard config
    /// file limits what may be called (here, by `call`, `shell` and the
    /// library alike), by (server, tool) patterns `SERVER/TOOL` or globs
    /// over SERVER__TOOL: `deny = ["*/delete_*"]` (not listed, refused),
    /// `ask = ["github/*"]` (the host's user confirms each call, or allows
    /// it always: `switchboard policy list`), `allow = […]`; changes to
    /// the file apply to the next call.
    ///
    /// Example, in a host's configuration:
    /// `{"mcpServers": {"switchboard": {"command": "switchboard", "args": ["serve"]}}}`
    Serve {
        /// How long the host's first requests wait for the servers to
        /// start (seconds); later ones do not wait, except a call of a
        /// tool no ready server has, which waits for the servers still
        /// starting before it is an unknown tool. Short enough for a
        /// host's health check (Claude Code gives a server ~5 s): a server
        /// that starts later has its tools listed then, and the host is
        /// told (`list_changed`). A client that lists once and does not
        /// hear `list_changed` (the Inspector's CLI) in front of a server
        /// slower to start than this: raise it.
        #[arg(long, value_name = "SECONDS", default_value_t = 4)]
        wait_ready: u64,
        /// Record every tool call, resource read, prompt get, forwarded
        /// elicitation and sampling, policy decision and login in FILE:
        /// JSON lines, 0600, chained by a keyed MAC (`switchboard audit
        /// verify FILE`); the arguments as a salted MAC unless
        /// --audit-arguments. FILE and its directory must be your own; one
        /// gateway writes it at a time. Rotated to FILE.1 past 16 MiB.
        #[arg(long, value_name = "FILE")]
        audit: Option<PathBuf>,
        /// How many rotated audit files to keep (FILE.1 … FILE.N); older
        /// ones are removed, and `audit verify` counts them as dropped.
        #[arg(long, value_name = "N", default_value_t = 4, requires = "audit")]
        audit_keep: u64,
        /// Write the calls' arguments into the audit log too (they may hold
        /// secrets).
        #[arg(long, requires = "audit")]
        audit_arguments: bool,
        /// Serve Streamable HTTP at ADDR (path /mcp) instead of stdio, e.g.
        /// 127.0.0.1:8080 (port 0 picks one; the address is printed on
        /// stderr). Every request must carry a bearer token: one is
        /// generated, written to $XDG_RUNTIME_DIR/switchboard/serve-PORT.token
        /// (0600) and printed once on stderr, unless --token-file or
        /// SWITCHBOARD_TOKEN gives one (32 characters at least).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Refused: a token on the command line is readable by every local
        /// user. Use --token-file or SWITCHBOARD_TOKEN.
        #[arg(long, value_name = "TOKEN", requires = "http", hide = true)]
        token: Option<String>,
        /// The bearer token, from FILE (yours, mode 0600): at least 32
        /// characters.
        #[arg(long, value_name = "FILE", requires = "http")]
        token_file: Option<PathBuf>,
        /// Serve HTTP without a token: any process that reaches the port
        /// calls every tool with your credentials (a warning is printed).
        #[arg(long, requires = "http", conflicts_with = "token_file")]
        no_auth: bool,
        /// A host name (as in the Host header) served besides localhost
        /// and IP addresses, e.g. a replica's DNS name; repeatable.
        #[arg(long, value_name = "NAME", requires = "http")]
        allow_host: Vec<String>,
        /// Connections open at once (default 256); the oldest one that has
        /// not sent a request yet is closed for a newcomer.
        #[arg(long, value_name = "N", requires = "http")]
        max_connections: Option<usize>,
        /// Worker threads (default 2). 1 runs the whole gateway on one
        /// thread (a current-thread runtime): no answer crosses threads,
        /// so each call costs less CPU, at the price of using one core.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
        threads: Option<u16>,
        /// A file holding a 32-byte key as 64 hex digits (`openssl rand
        /// -hex 32`): session ids are sealed with it, so replicas given the
        /// same file serve each other's sessions with no shared store.
        #[arg(long, value_name = "FILE", requires = "http")]
        session_key_file: Option<PathBuf>,
        /// The host's tool budget: with more tools than N, list only
        /// `search_tools` and the tools found with it so far (hosts cap
        /// their tools at 40–128).
        #[arg(long, value_name = "N")]
        max_tools: Option<usize>,
        /// Refuse messages larger than this from any server (bytes).
        #[arg(long, value_name = "BYTES")]
        max_message_size: Option<u64>,
        /// Serve only this configured server (repeatable); the others are
        /// not started.
        #[arg(long = "server", value_name = "NAME", conflicts_with_all = ["url", "command"])]
        only: Vec<String>,
        /// Front the remote server at URL alone, under its own names; no
        /// config file is read (a login in the browser when it needs one).
        #[arg(long, value_name = "URL", conflicts_with = "command", value_parser = server_url)]
        url: Option<String>,
        /// A header for every request to --url, 'Name: value' (repeatable).
        #[arg(
            long = "header",
            short = 'H',
            value_name = "NAME: VALUE",
            requires = "url"
        )]
        headers: Vec<String>,
        /// Front the server this command starts alone, under its own
        /// names; no config file is read: `switchboard serve -- npx -y
        /// @modelcontextprotocol/server-everything`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// An interactive shell on the configured servers (or one): connect
    /// once, then `tools`, `call TOOL` (missing arguments are asked for,
    /// field by field), `read`, `prompt`, `servers`; history, Tab
    /// completion of commands and names, the servers' log lines and a
    /// call's progress printed as they arrive.
    Shell {
        /// Only this configured server.
        #[arg(value_name = "NAME")]
        name: Option<String>,
    },
    /// Print a completion script for your shell.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff).
    Man,
    /// Check every config file without starting anything: what is wrong
    /// in them (file:line:col), each server's trust state, `${VAR}`
    /// references to unset variables, commands not on PATH; with --check,
    /// then start each server as `list` does. Exits 1 when something is
    /// wrong, for CI.
    Doctor {
        /// Then start each server and report its state.
        #[arg(long)]
        check: bool,
        /// How long --check gives the servers to start, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = 30.0)]
        timeout: f64,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Start the background session: the configured servers stay
    /// connected behind a Unix socket of your own (0600), so `call` and
    /// `tools` answer in milliseconds instead of starting servers each time.
    /// It stops after --idle with no client, or with `switchboard down`;
    /// config changes are picked up. Set SWITCHBOARD_NO_SESSION=1 to keep a
    /// command from using it.
    Up {
        /// Stop after this long with no client (e.g. 90s, 30m, 8h).
        #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_idle)]
        idle: Duration,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Stop the background session `switchboard up` started (its servers
    /// are closed first).
    Down {
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The background session's daemon (started by `up`).
    #[command(name = "__session", hide = true)]
    Session {
        /// Idle seconds before stopping.
        #[arg(long, default_value_t = 1800)]
        idle: u64,
    },
    /// Audit logs of `serve --audit`.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Run the bundled test server on stdin/stdout (used by `demo`).
    #[command(name = "__testserver", hide = true)]
    TestServer {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `approve` and `untrust`: some of this project's servers, or all.
#[derive(clap::Args, Debug)]
struct ServerNames {
    /// The servers.
    #[arg(value_name = "NAME", required_unless_present = "all")]
    names: Vec<String>,
    /// Every one of this project (waiting for approval, or approved).
    #[arg(long)]
    all: bool,
    /// Print one JSON document.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
struct NameArgs {
    /// The server's name.
    name: String,
    /// Change switchboard's file of this scope instead of the file the
    /// server is configured in.
    #[arg(short = 's', long, value_enum)]
    scope: Option<configure::ScopeArg>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    // The hidden test-server mode must not touch stdout before serving.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("__testserver") {
        switchboard_testserver::run_stdio_main(argv[2..].to_vec());
    }
    lifecycle::quiet_print_failures();
    let parsed = cli_command()
        .try_get_matches()
        .and_then(|matches| <Cli as clap::FromArgMatches>::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { exit::USAGE } else { 0 };
            let _ = error.print();
            if let Some(fix) = forgotten_dashes(&error, &argv) {
                eprintln!("\n{fix}");
            }
            return ExitCode::from(code);
        }
    };
    output::set_raw(cli.raw);
    #[cfg(feature = "otlp")]
    let endpoint = cli
        .otlp_endpoint
        .clone()
        .or_else(|| std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok())
        .filter(|e| !e.is_empty());
    #[cfg(not(feature = "otlp"))]
    let endpoint: Option<String> = None;
    // Dropped last, after the runtime: flushes the spans still queued.
    let _telemetry = init_tracing(endpoint.as_deref());
    let json = match &cli.command {
        Command::Demo { json } => *json,
        Command::Info { server, .. }
        | Command::Complete { server, .. }
        | Command::Tools { server, .. }
        | Command::Resources { server, .. }
        | Command::Prompts { server, .. }
        | Command::Skills { server, .. }
        | Command::Skill { server, .. }
        | Command::Call { server, .. }
        | Command::Read { server, .. }
        | Command::Prompt { server, .. } => server.json,
        Command::Login(args) => args.json,
        Command::Logout { json, .. }
        | Command::Auth {
            command: AuthCommand::Status { json },
        }
        | Command::Policy {
            command: PolicyCommand::List { json },
        } => *json,
        Command::Policy {
            command: PolicyCommand::Revoke { .. },
        } => false,
        Command::List { json, .. }
        | Command::AddJson { json, .. }
        | Command::Import { json, .. }
        | Command::Get { json, .. }
        | Command::Trust { json, .. } => *json,
        Command::Approve(names) | Command::Untrust(names) => names.json,
        Command::Add(args) => args.json,
        Command::Remove(args) | Command::Enable(args) | Command::Disable(args) => args.json,
        Command::Up { json, .. } | Command::Down { json } | Command::Doctor { json, .. } => *json,
        Command::TestServer { .. }
        | Command::Serve { .. }
        | Command::Session { .. }
        | Command::Shell { .. }
        | Command::Completions { .. }
        | Command::Man
        | Command::Audit { .. } => false,
    };
    // `serve --threads 1`: one thread for everything (docs/PERFORMANCE.md,
    // "The gateway against nginx and the bridges").
    let threads = match &cli.command {
        Command::Serve {
            threads: Some(n), ..
        } => usize::from(*n),
        _ => 2,
    };
    let mut builder = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(threads);
        builder
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: could not start the async runtime: {error}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let span = tracing::info_span!("switchboard");
    let code = match runtime.block_on(tracing::Instrument::instrument(run(cli), span)) {
        Ok(code) => code,
        Err(failure) => {
            // Nothing more to say when stderr is closed too.
            let _ = std::panic::catch_unwind(|| failure.report(json));
            failure.code
        }
    };
    if matches!(code, exit::SIGHUP | exit::SIGINT | exit::SIGTERM) {
        // After a second signal servers may still run: their clients are
        // dropped here (the library kills them) without waiting on
        // anything that would block.
        runtime.shutdown_timeout(Duration::from_millis(500));
    }
    // Whatever could not be closed politely — a server still starting when
    // a signal or a connect timeout came, one whose polite stop runs on a
    // thread that dies with this process — is killed now, group and all.
    switchboard::transport::stdio::kill_remaining();
    ExitCode::from(code)
}

#[cfg(feature = "otlp")]
use otlp::Guard as TelemetryGuard;
/// Without the `otlp` feature there is nothing to flush.
#[cfg(not(feature = "otlp"))]
type TelemetryGuard = std::convert::Infallible;

/// Logs on stderr as RUST_LOG says and, with an OTLP endpoint, the spans
/// (info and up) to the collector.
fn init_tracing(endpoint: Option<&str>) -> Option<TelemetryGuard> {
    use tracing_subscriber::prelude::*;
    // Quiet by default; RUST_LOG=switchboard=debug shows the protocol.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    #[cfg(feature = "otlp")]
    if let Some(endpoint) = endpoint {
        match otlp::layer(endpoint) {
            Ok((traces, guard)) => {
                let traces = traces.with_filter(tracing_subscriber::filter::LevelFilter::INFO);
                let _ = tracing_subscriber::registry()
                    .with(logs)
                    .with(traces)
                    .try_init();
                return Some(guard);
            }
            Err(error) => eprintln!("warning: traces are not exported: {error:#}"),
        }
    }
    let _ = endpoint;
    let _ = tracing_subscriber::registry().with(logs).try_init();
    None
}

/// A failed command: what to print and which exit code to use.
struct Failure {
    code: u8,
    error: anyhow::Error,
    stderr_tail: Option<String>,
    server: Option<String>,
    /// What to do next (the login command, for authorization required).
    hint: Option<String>,
}

impl Failure {
    /// The same failure, with a line that says what to do.
    fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    fn usage(error: anyhow::Error) -> Self {
        Self {
            code: exit::USAGE,
            error,
            stderr_tail: None,
            server: None,
            hint: None,
        }
    }

    fn from_client(error: switchboard::Error) -> Self {
        let code = match &error {
            e if e.is_auth_required() => exit::AUTH_REQUIRED,
            // The same kind of failure gets the same code on every transport.
            e if e.is_protocol_violation() => exit::PROTOCOL_VIOLATION,
            // A server that cannot be started, dies, loses the response, or
            // never answers.
            e if e.is_unreachable() || e.is_timeout() => exit::UNREACHABLE,
            _ => exit::USAGE,
        };
        let stderr_tail = error.stderr_tail().map(str::to_owned);
        let server = error.server().map(str::to_owned);
        Self {
            code,
            error: anyhow::Error::new(error),
            stderr_tail,
            server,
            hint: None,
        }
    }

    fn report(&self, json: bool) {
        // One line: the error and its causes.
        let message = format!("{:#}", self.error);
        if json {
            let mut object = json!({ "message": message, "exitCode": self.code });
            if let Some(server) = &self.server {
                object["server"] = Value::String(server.clone());
            }
            if let Some(tail) = &self.stderr_tail {
                object["serverStderr"] = Value::String(tail.clone());
            }
            if let Some(hint) = &self.hint {
                object["hint"] = Value::String(hint.clone());
            }
            eprintln!("{}", sanitize::json(json!({ "error": object }).to_string()));
        } else {
            // Error texts quote servers, files and authorization servers.
            eprintln!("error: {}", sanitize::term(&message));
            if let Some(hint) = &self.hint {
                eprintln!("{}", sanitize::term(hint));
            }
            if let Some(tail) = &self.stderr_tail {
                eprintln!("server stderr (last lines):");
                for line in tail.lines() {
                    eprintln!("  | {}", sanitize::line(line));
                }
            }
        }
    }
}

impl From<switchboard::Error> for Failure {
    fn from(error: switchboard::Error) -> Self {
        Self::from_client(error)
    }
}

/// The remote server a command talks to, if any.
fn remote_url(command: &Command) -> Option<&str> {
    match command {
        Command::Info { server, .. }
        | Command::Complete { server, .. }
        | Command::Tools { server, .. }
        | Command::Resources { server, .. }
        | Command::Prompts { server, .. }
        | Command::Skills { server, .. }
        | Command::Skill { server, .. }
        | Command::Call { server, .. }
        | Command::Read { server, .. }
        | Command::Prompt { server, .. } => server.url.as_deref(),
        _ => None,
    }
}

/// Whether the server sent more than a size limit allows.
fn message_too_large(error: &anyhow::Error) -> bool {
    use switchboard::transport::TransportError;
    error.chain().any(|cause| {
        // A lost connection keeps its reason behind an `Arc`, a failed
        // send behind a `Box`.
        let transport = cause
            .downcast_ref::<TransportError>()
            .or_else(|| cause.downcast_ref::<Arc<TransportError>>().map(|r| &**r))
            .or_else(|| cause.downcast_ref::<Box<TransportError>>().map(|r| &**r));
        matches!(
            transport,
            Some(
                TransportError::MessageTooLarge { .. }
                    | TransportError::Sse(
                        switchboard::transport::sse::SseError::EventTooLarge { .. }
                    )
            )
        )
    })
}

/// Runs the command; then, however it ended, closes every server it
/// started; then reports.
async fn run(cli: Cli) -> Result<u8, Failure> {
    let url = remote_url(&cli.command).map(str::to_owned);
    let credentials = cli.credentials.clone();
    let servers = lifecycle::Servers::default();
    let result = match lifecycle::run(&servers, run_command(cli, &servers)).await {
        lifecycle::Ended::Done(result) => result,
        lifecycle::Ended::Signal(code) => return Ok(code),
        lifecycle::Ended::OutputClosed => return Ok(exit::OUTPUT_CLOSED),
    };
    result.map_err(|mut failure| {
        if failure.hint.is_none() && message_too_large(&failure.error) {
            failure.hint = Some(
                "to accept larger messages, raise the limit with --max-message-size BYTES".into(),
            );
        }
        if failure.code == exit::AUTH_REQUIRED
            && let Some(url) = url
        {
            failure.hint = Some(format!(
                "to log in, run: {}",
                login::login_command(&url, credentials.as_deref())
            ));
        }
        failure
    })
}

async fn run_command(cli: Cli, servers: &lifecycle::Servers) -> Result<u8, Failure> {
    let creds = cli.credentials.as_deref();
    match cli.command {
        Command::Demo { json } => demo::run(json, servers).await,
        Command::Serve {
            wait_ready,
            audit,
            audit_arguments,
            audit_keep,
            http,
            token,
            token_file,
            no_auth,
            allow_host,
            max_connections,
            threads: _,
            session_key_file,
            max_tools,
            max_message_size,
            only,
            url,
            headers,
            command,
        } => {
            let token = listen::token_source(token.as_deref(), token_file.as_deref(), no_auth)?;
            let fronted = fronted::Fronted::from_args(only, url, &headers, command)?;
            let session_key = session_key_file
                .map(|path| {
                    listen::read_private(&path, "session key file").and_then(|text| {
                        switchboard::server::http::SessionKey::from_hex(&text).map_err(|e| {
                            Failure::usage(anyhow::anyhow!(
                                "cannot use the session key in {}: {e}",
                                path.display()
                            ))
                        })
                    })
                })
                .transpose()?;
            let context = configure::Context::new(cli.config)?;
            let audit = audit
                .map(|path| {
                    let mut options = switchboard_hub::hub::audit::AuditOptions::default();
                    options.arguments = audit_arguments;
                    options.keep = audit_keep;
                    switchboard_hub::hub::audit::AuditLog::open(&path, options).map_err(|e| {
                        // The chain: an I/O error's cause is its source.
                        Failure::usage(
                            anyhow::Error::new(e)
                                .context(format!("cannot open the audit log {}", path.display())),
                        )
                    })
                })
                .transpose()?;
            let settings = hub::ServeSettings {
                wait_ready: Duration::from_secs(wait_ready),
                http: http.map(|addr| listen::Listener {
                    addr,
                    token,
                    session_key,
                    allowed_hosts: allow_host,
                    max_connections,
                }),
                session: None,
                audit,
                max_tools,
                max_message_size: max_message_size
                    .map(|b| usize::try_from(b).unwrap_or(usize::MAX)),
                fronted,
            };
            hub::serve(&context, creds, settings, servers).await
        }
        Command::Up { idle, json } => session::up(idle, json, cli.config.as_deref()).await,
        Command::Completions { shell } => {
            // Written whole through print!, whose failure on a closed pipe
            // ends the command quietly (exit 141), as every output does.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cli_command(), "switchboard", &mut script);
            print!("{}", String::from_utf8_lossy(&script));
            Ok(0)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cli_command())
                .render(&mut page)
                .map_err(|e| Failure::usage(anyhow::anyhow!("cannot render the manual: {e}")))?;
            print!("{}", String::from_utf8_lossy(&page));
            Ok(0)
        }
        Command::Shell { name } => {
            let context = configure::Context::new(cli.config)?;
            hub::shell(&context, name.as_deref(), creds, servers).await
        }
        Command::Doctor {
            check,
            timeout,
            json,
        } => {
            let timeout = seconds("--timeout", timeout)?;
            let context = configure::Context::new(cli.config)?;
            let list = hub::list(
                &context,
                json,
                timeout,
                creds,
                servers,
                hub::ListView {
                    strict: true,
                    ..hub::ListView::default()
                },
            );
            doctor::doctor(&context, check, json, list).await
        }
        Command::Down { json } => session::down(json).await,
        Command::Session { idle } => {
            let context = configure::Context::new(cli.config)?;
            let daemon = session::Daemon::bind(
                Duration::from_secs(idle.clamp(1, MAX_IDLE_SECONDS)),
                context.explicit.as_deref(),
            )
            .await?;
            let settings = hub::ServeSettings {
                wait_ready: Duration::from_secs(10),
                http: None,
                session: Some(daemon),
                audit: None,
                max_tools: None,
                max_message_size: None,
                fronted: fronted::Fronted::All,
            };
            hub::serve(&context, creds, settings, servers).await
        }
        Command::Audit {
            command: AuditCommand::Verify { file },
        } => {
            use switchboard_hub::hub::audit;
            match audit::verify(&file, &audit::AuditOptions::default()) {
                Ok(verified) => {
                    let mut text = format!(
                        "{}: intact: {} records in {} file(s)",
                        file.display(),
                        verified.records,
                        verified.files
                    );
                    if verified.dropped > 0 {
                        text += &format!(
                            ", {} older file(s) removed by the retention setting",
                            verified.dropped
                        );
                    }
                    if verified.unanchored > 0 {
                        text += &format!(
                            ", {} line(s) written after the anchor (a write under way, or a crash)",
                            verified.unanchored
                        );
                    }
                    println!("{text}");
                    Ok(0)
                }
                Err(error) => Err(Failure::usage(
                    anyhow::Error::new(error)
                        .context(format!("the audit log {} does not verify", file.display())),
                )),
            }
        }
        Command::Info { name, only, server } => {
            if server.command.is_empty() && server.url.is_none() {
                let Some(name) = name.or(only) else {
                    return Err(Failure::usage(anyhow::anyhow!(
                        "`info` needs a server: no server command given after `--` (or --url), \
                         and no configured server's NAME"
                    )));
                };
                let context = configure::Context::new(cli.config)?;
                let answer = hub_client(&server)?;
                return hub::info(
                    &context,
                    &name,
                    server.json,
                    creds,
                    max_message_size(&server),
                    answer,
                    servers,
                )
                .await;
            }
            no_configured_server(name.as_deref().or(only.as_deref()))?;
            let (client, connect_time, _) = connect(&server, creds, servers).await?;
            // Its tools, for the apps among them (MCP Apps); `info` stands
            // without them.
            if client.capabilities().tools.is_some() {
                let _ = client.list_tools().await;
            }
            let info = output::info_json(&client, connect_time);
            if server.json {
                output::print_json(&info);
            } else {
                output::print_info(&client, connect_time);
            }
            finish(&client, &server).await;
            Ok(0)
        }
        Command::Tools {
            only,
            model,
            server,
        } => {
            if server.command.is_empty() && server.url.is_none() {
                let context = configure::Context::new(cli.config)?;
                return hub::tools(
                    &context,
                    only.as_deref(),
                    &model,
                    server.json,
                    creds,
                    max_message_size(&server),
                    servers,
                )
                .await;
            }
            no_configured_server(only.as_deref())?;
            let (client, _, _) = connect(&server, creds, servers).await?;
            let tools = client.list_tools().await?;
            if let Some(provider) = model.provider {
                // The server's own name (the command line is no name).
                let name = client
                    .server_info()
                    .map_or_else(|| client.server_name(), |info| info.name.as_str())
                    .to_owned();
                model.print(
                    provider,
                    tools.into_iter().map(|t| (name.clone(), t)).collect(),
                );
            } else if server.json {
                output::print_json(&json!({ "tools": tools }));
            } else {
                output::print_tools(&tools);
            }
            finish(&client, &server).await;
            Ok(0)
        }
        Command::Resources { only, server } => {
            if server.command.is_empty() && server.url.is_none() {
                let context = configure::Context::new(cli.config)?;
                return hub::resources(
                    &context,
                    only.as_deref(),
                    server.json,
                    creds,
                    max_message_size(&server),
                    servers,
                )
                .await;
            }
            no_configured_server(only.as_deref())?;
            let (client, _, _) = connect(&server, creds, servers).await?;
            let resources = client.list_resources().await?;
            let templates = client.list_resource_templates().await?;
            if server.json {
                output::print_json(
                    &json!({ "resources": resources, "resourceTemplates": templates }),
                );
            } else {
                output::print_resources(&resources, &templates);
            }
            finish(&client, &server).await;
            Ok(0)
        }
        Command::Prompts { only, server } => {
            if server.command.is_empty() && server.url.is_none() {
                let context = configure::Context::new(cli.config)?;
                return hub::prompts(
                    &context,
                    only.as_deref(),
                    server.json,
                    creds,
                    max_message_size(&server),
                    servers,
                )
                .await;
            }
            no_configured_server(only.as_deref())?;
            let (client, _, _) = connect(&server, creds, servers).await?;
            let prompts = client.list_prompts().await?;
            if server.json {
                output::print_json(&json!({ "prompts": prompts }));
            } else {
                output::print_prompts(&prompts);
            }
            finish(&client, &server).await;
            Ok(0)
        }
        Command::Skills { only, server } => {
            if server.command.is_empty() && server.url.is_none() {
                let context = configure::Context::new(cli.config)?;
                return hub::skills(
                    &context,
                    only.as_deref(),
                    server.json,
                    creds,
                    max_message_size(&server),
                    servers,
                )
                .await;
            }
            no_configured_server(only.as_deref())?;
            let (client, _, _) = connect(&server, creds, servers).await?;
            let skills = client.list_skills().await?;
            if server.json {
                output::print_json(&json!({ "skills": skills }));
            } else {
                output::print_skills(&skills);
            }
            finish(&client, &server).await;
            Ok(0)
        }
        Command::Skill {
            name,
            file,
            only,
            server,
        } => {
            if server.command.is_empty() && server.url.is_none() {
                let context = configure::Context::new(cli.config)?;
                return hub::skill(
                    &context,
                    only.as_deref(),
                    &name,
                    file.as_deref(),
                    server.json,
                    creds,
                    max_message_size(&server),
                    servers,
                )
                .await;
            }
            no_configured_server(only.as_deref())?;
            let (client, _, _) = connect(&server, creds, servers).await?;
            let skills = client.list_skills().await?;
            let (_, entry) = hub::pick_skill(
                skills.iter().map(|e| ("", e, e.name().unwrap_or_default())),
                &name,
            )?;
            let skill = client.load_skill(entry).await?;
            let files = client.skill_files(&skill).await?;
            let contents = match &file {
                Some(path) => Some(
                    client
                        .read_skill_file(&skill, &hub::skill_file_uri(entry, path))
                        .await?,
                ),
                None => None,
            };
            output::print_skill(None, &skill, &files, contents.as_ref(), server.json);
            finish(&client, &server).await;
            Ok(0)
        }
        Command::Call {
            tool,
            json_args,
            args,
            args_json,
            server,
        } => {
            let arguments = args::tool_arguments(args_json.or(json_args).as_deref(), &args)
                .map_err(Failure::usage)?;
            if server.command.is_empty() && server.url.is_none() {
                let context = configure::Context::new(cli.config)?;
                let answer = hub_client(&server)?;
                return hub::call(
                    &context,
                    &tool,
                    arguments,
                    server.json,
                    creds,
                    max_message_size(&server),
                    answer,
                    servers,
                )
                .await;
            }
            let (client, _, ui) = connect(&server, creds, servers).await?;
            let started = Instant::now();
            let params = CallToolRequestParams {
                name: tool,
                arguments: Some(arguments),
                ..Default::default()
            };
            // The callback only asks for a progress token: progress is
            // shown from the event stream, in order with the log lines.
            let options = RequestOptions::default().on_progress(|_| {});
            // A tool that must run as a task runs as one (and waits for it);
            // any other is a plain call.
            let options = TaskOptions::new().prefer_task(false).request(options);
            let result =
                with_events(&client, &ui, client.call_tool_and_wait(&params, options)).await?;
            let elapsed = started.elapsed();
            if server.json {
                output::print_json(&serde_json::to_value(&result).unwrap_or(Value::Null));
            } else {
                output::print_call_result(&result, elapsed);
            }
            finish(&client, &server).await;
            Ok(if result.is_error == Some(true) {
                exit::TOOL_ERROR
            } else {
                0
            })
        }
        Command::Read {
            uri,
            only,
            output: to,
            server,
        } => {
            if server.command.is_empty() && server.url.is_none() {
                let Some(only) = only else {
                    return Err(Failure::usage(anyhow::anyhow!(
                        "`read` on a configured server needs the server: give --server NAME \
                         (or a server command after `--`, or --url)"
                    )));
                };
                let context = configure::Context::new(cli.config)?;
                let answer = hub_client(&server)?;
                return hub::read(
                    &context,
                    &only,
                    &uri,
                    server.json,
                    to.as_deref(),
                    creds,
                    max_message_size(&server),
                    answer,
                    servers,
                )
                .await;
            }
            no_configured_server(only.as_deref())?;
            let (client, _, ui) = connect(&server, creds, servers).await?;
            let result = with_events(&client, &ui, client.read_resource(&uri)).await?;
            let shown = output::emit_read_result(&result, server.json, to.as_deref());
            finish(&client, &server).await;
            shown.map_err(Failure::usage)?;
            Ok(0)
        }
        Command::Prompt {
            name,
            only,
            args,
            server,
        } => {
            let arguments = args::prompt_arguments(&args).map_err(Failure::usage)?;
            if server.command.is_empty() && server.url.is_none() {
                let context = configure::Context::new(cli.config)?;
                let answer = hub_client(&server)?;
                return hub::prompt(
                    &context,
                    only.as_deref(),
                    &name,
                    arguments,
                    server.json,
                    creds,
                    max_message_size(&server),
                    answer,
                    servers,
                )
                .await;
            }
            no_configured_server(only.as_deref())?;
            let (client, _, ui) = connect(&server, creds, servers).await?;
            let result =
                with_events(&client, &ui, client.get_prompt(&name, Some(arguments))).await?;
            if server.json {
                output::print_json(&serde_json::to_value(&result).unwrap_or(Value::Null));
            } else {
                output::print_prompt_result(&result);
            }
            finish(&client, &server).await;
            Ok(0)
        }
        Command::Complete {
            target,
            argument,
            resource,
            context,
            only,
            server,
        } => {
            let (argument, partial) = argument.split_once('=').unwrap_or((&argument, ""));
            let context = args::prompt_arguments(&context).map_err(Failure::usage)?;
            let completion = hub::Completion {
                target: &target,
                resource,
                argument,
                partial,
                context,
            };
            if server.command.is_empty() && server.url.is_none() {
                let config = configure::Context::new(cli.config)?;
                let answer = hub_client(&server)?;
                return hub::complete(
                    &config,
                    only.as_deref(),
                    &completion,
                    server.json,
                    creds,
                    max_message_size(&server),
                    answer,
                    servers,
                )
                .await;
            }
            no_configured_server(only.as_deref())?;
            let (client, _, ui) = connect(&server, creds, servers).await?;
            let params = completion.params(&target);
            let result = with_events(&client, &ui, client.complete(&params)).await?;
            output::print_completion(&result, server.json);
            finish(&client, &server).await;
            Ok(0)
        }
        Command::Login(args) => login::login(args, creds, cli.config)
            .await
            .map_err(Failure::usage),
        Command::Logout { server, json } => login::logout(&server, creds, json)
            .await
            .map_err(Failure::usage),
        Command::Auth {
            command: AuthCommand::Status { json },
        } => login::status(creds, json).await.map_err(Failure::usage),
        Command::Policy { command } => {
            let context = configure::Context::new(cli.config)?;
            match command {
                PolicyCommand::List { json } => policy::list(&context, json),
                PolicyCommand::Revoke { target } => policy::revoke(&context, &target),
            }
        }
        Command::List {
            json,
            timeout,
            wide,
            all,
        } => {
            let timeout = seconds("--timeout", timeout)?;
            let context = configure::Context::new(cli.config)?;
            let view = hub::ListView {
                wide,
                all,
                strict: false,
            };
            hub::list(&context, json, timeout, creds, servers, view).await
        }
        Command::Add(args) => configure::add(&configure::Context::new(cli.config)?, args),
        Command::AddJson {
            name,
            entry,
            scope,
            json,
        } => configure::add_json(
            &configure::Context::new(cli.config)?,
            &name,
            &entry,
            scope,
            json,
        ),
        Command::Import { from, scope, json } => {
            configure::import(&configure::Context::new(cli.config)?, from, scope, json)
        }
        Command::Remove(args) => configure::remove(
            &configure::Context::new(cli.config)?,
            &args.name,
            args.scope,
            args.json,
        ),
        Command::Enable(args) => configure::set_enabled(
            &configure::Context::new(cli.config)?,
            &args.name,
            true,
            args.scope,
            args.json,
        ),
        Command::Disable(args) => configure::set_enabled(
            &configure::Context::new(cli.config)?,
            &args.name,
            false,
            args.scope,
            args.json,
        ),
        Command::Get { name, json } => {
            configure::get(&configure::Context::new(cli.config)?, &name, json)
        }
        Command::Approve(pick) => approve::approve(
            &configure::Context::new(cli.config)?,
            &pick.names,
            pick.all,
            pick.json,
        ),
        Command::Trust { all, json } => {
            approve::list(&configure::Context::new(cli.config)?, all, json)
        }
        Command::Untrust(pick) => approve::untrust(
            &configure::Context::new(cli.config)?,
            &pick.names,
            pick.all,
            pick.json,
        ),
        Command::TestServer { args } => switchboard_testserver::run_stdio_main(args),
    }
}

/// A number of seconds given on the command line as a duration: positive
/// and finite (`nan`, `-1` and `inf` are refused, never a panic); above a
/// year it is a year.
fn seconds(flag: &str, value: f64) -> Result<Duration, Failure> {
    const YEAR: f64 = 365.0 * 24.0 * 3600.0;
    if !value.is_finite() || value <= 0.0 {
        return Err(Failure::usage(anyhow::anyhow!(
            "{flag} must be a positive number of seconds, not {value}"
        )));
    }
    Ok(Duration::from_secs_f64(value.min(YEAR)))
}

fn stdio_config(server: &ServerArgs) -> Result<StdioConfig, Failure> {
    let (program, rest) = server
        .command
        .split_first()
        .context("no server command given after `--` (or --url URL)")
        .map_err(Failure::usage)?;
    let mut config = StdioConfig::new(program)
        .args(rest.iter().cloned())
        .inherit_env(server.inherit_env);
    if let Some(bytes) = max_message_size(server) {
        config = config.max_message_size(bytes);
    }
    for pair in &server.env {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("--env {pair:?} is not KEY=VALUE"))
            .map_err(Failure::usage)?;
        config = config.env(key, value);
    }
    Ok(config)
}

/// `--max-message-size`, as the transports take it.
fn max_message_size(server: &ServerArgs) -> Option<usize> {
    server
        .max_message_size
        .map(|bytes| usize::try_from(bytes).unwrap_or(usize::MAX))
}

fn headers(server: &ServerArgs) -> Result<Vec<(&str, &str)>, Failure> {
    server.headers.iter().map(|h| parse_header(h)).collect()
}

/// One `--header 'Name: value'`, trimmed.
fn parse_header(header: &str) -> Result<(&str, &str), Failure> {
    header
        .split_once(':')
        .map(|(name, value)| (name.trim(), value.trim()))
        .with_context(|| format!("--header {header:?} is not 'Name: value'"))
        .map_err(Failure::usage)
}

/// The connector for `--url`: WebSocket for ws:// URLs or `--transport ws`,
/// HTTP otherwise.
fn url_connector(
    server: &ServerArgs,
    url: &str,
    credentials: Option<&std::path::Path>,
) -> Result<Arc<dyn Connector>, Failure> {
    let websocket = matches!(server.transport, TransportArg::Ws)
        || (matches!(server.transport, TransportArg::Auto)
            && (url.starts_with("ws://") || url.starts_with("wss://")));
    if websocket {
        let mut config = WebSocketConfig::new(url);
        if let Some(bytes) = max_message_size(server) {
            config = config.max_message_size(bytes);
        }
        for (name, value) in headers(server)? {
            config = config.header(name, value);
        }
        return Ok(Arc::new(config));
    }
    let mut config = HttpConfig::new(url).transport(match server.transport {
        TransportArg::Auto | TransportArg::Ws => HttpTransport::Auto,
        TransportArg::Http => HttpTransport::StreamableHttp,
        TransportArg::Sse => HttpTransport::Sse,
    });
    if let Some(bytes) = max_message_size(server) {
        config = config.max_body_size(bytes).max_event_size(bytes);
    }
    let headers = headers(server)?;
    // An Authorization header given by hand wins over stored logins.
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        && let Some(provider) = login::provider_for(url, credentials, None)
    {
        config = config.auth(provider);
    }
    for (name, value) in headers {
        config = config.header(name, value);
    }
    Ok(Arc::new(config))
}

/// Runs one request while showing what the server says meanwhile.
pub(crate) async fn with_events<T>(client: &Client, ui: &Ui, work: impl Future<Output = T>) -> T {
    let mut events = client.events();
    let mut work = std::pin::pin!(work);
    let out = loop {
        tokio::select! {
            biased;
            Some(event) = events.next() => ui.event(&event),
            out = &mut work => break out,
        }
    };
    // What arrived before the answer is shown before the result.
    loop {
        tokio::select! {
            biased;
            Some(event) = events.next() => ui.event(&event),
            () = std::future::ready(()) => break,
        }
    }
    ui.finish();
    out
}

/// `--root` paths as file:// roots, named after their last component.
fn roots(paths: &[PathBuf]) -> Result<Roots, Failure> {
    let mut roots = Vec::new();
    for path in paths {
        let absolute = std::fs::canonicalize(path)
            .with_context(|| format!("--root {}: not found", path.display()))
            .map_err(Failure::usage)?;
        let uri = url::Url::from_file_path(&absolute)
            .map_err(|()| anyhow::anyhow!("--root {}: not a local path", path.display()))
            .map_err(Failure::usage)?;
        roots.push(Root {
            uri: uri.to_string(),
            name: absolute
                .file_name()
                .map(|n| n.to_string_lossy().into_owned()),
            ..Default::default()
        });
    }
    Ok(Roots::new(roots))
}

/// The handlers that answer the server: forms and URLs by asking the
/// user, sampling through --sampling-url (or declined), roots from --root.
fn answering(
    builder: switchboard::ClientBuilder,
    server: &ServerArgs,
    ui: &Arc<Ui>,
    roots: Option<&Roots>,
) -> switchboard::ClientBuilder {
    let endpoint = match (&server.sampling_url, &server.sampling_model) {
        (Some(url), Some(model)) => Some(sampling::Endpoint::new(
            url,
            model.clone(),
            server.sampling_key_env.clone(),
        )),
        _ => None,
    };
    let mut builder = builder
        .elicitation(ask::TerminalElicitation { ui: ui.clone() })
        .sampling(sampling::CliSampling {
            ui: ui.clone(),
            endpoint,
            preapproved: server.yes,
            http: reqwest::Client::new(),
            max_calls: server.sampling_max_calls,
        });
    if let Some(roots) = roots {
        builder = builder.roots(roots.clone());
    }
    if let Some(level) = server.log_level {
        builder = builder.log_level(level.into());
    }
    builder
}

/// What every connection of a command shares: the checked `--timeout`,
/// the terminal, the roots (`--root`s, else the working directory, or
/// none with `--no-roots`).
fn answer_setup(server: &ServerArgs) -> Result<(Duration, Arc<Ui>, Option<Roots>), Failure> {
    if !server.timeout.is_finite() || server.timeout <= 0.0 {
        return Err(Failure::usage(anyhow::anyhow!(
            "--timeout must be a positive number of seconds"
        )));
    }
    let roots = if server.no_roots {
        None
    } else if server.roots.is_empty() {
        Some(roots(&[PathBuf::from(".")])?)
    } else {
        Some(roots(&server.roots)?)
    };
    Ok((
        seconds("--timeout", server.timeout)?,
        Ui::new(server.json, server.no_input),
        roots,
    ))
}

/// `--server NAME` names a configured server: refused beside a server
/// command or `--url`.
fn no_configured_server(only: Option<&str>) -> Result<(), Failure> {
    if only.is_some() {
        return Err(Failure::usage(anyhow::anyhow!(
            "--server names a configured server; it cannot go with a server command or --url"
        )));
    }
    Ok(())
}

/// How the hub's clients for `call`, `read`, `prompt`, `info` and
/// `complete` are set up: answering the server as for a server given after
/// `--`; `--timeout` and `--era` where the configuration does not say; and
/// the terminal that shows what the server says.
fn hub_client(
    server: &ServerArgs,
) -> Result<
    hub::Answer<
        impl Fn(
            &switchboard_hub::ServerConfig,
            switchboard::ClientBuilder,
        ) -> switchboard::ClientBuilder
        + Send
        + Sync
        + 'static,
    >,
    Failure,
> {
    let (timeout, ui, roots) = answer_setup(server)?;
    let shown = ui.clone();
    let server_logs = server.server_logs;
    let server = server.clone();
    let customize = move |config: &switchboard_hub::ServerConfig, builder| {
        let mut builder = answering(builder, &server, &ui, roots.as_ref());
        if config.request_timeout.is_none() {
            builder = builder.request_timeout(timeout);
        }
        match server.era {
            EraArg::Auto => builder,
            EraArg::Modern => builder.era_mode(EraMode::Modern),
            EraArg::Legacy => builder.era_mode(EraMode::Legacy),
        }
    };
    Ok(hub::Answer {
        customize,
        ui: shown,
        server_logs,
    })
}

/// Connects to the server of `server`; the client is closed when the
/// command ends, whichever way it ends.
async fn connect(
    server: &ServerArgs,
    credentials: Option<&std::path::Path>,
    servers: &lifecycle::Servers,
) -> Result<(Client, Duration, Arc<Ui>), Failure> {
    let (timeout, ui, roots) = answer_setup(server)?;
    let mode = match server.era {
        EraArg::Auto => EraMode::Auto,
        EraArg::Modern => EraMode::Modern,
        EraArg::Legacy => EraMode::Legacy,
    };
    let started = Instant::now();
    let builder = Client::builder().era_mode(mode).request_timeout(timeout);
    let builder = answering(builder, server, &ui, roots.as_ref());
    let (name, connecting) = match &server.url {
        Some(url) => (
            url.clone(),
            builder.connect_arc(url_connector(server, url, credentials)?),
        ),
        None => (
            server.command.join(" "),
            builder.connect_arc(Arc::new(stdio_config(server)?)),
        ),
    };
    let waiting_for = match mode {
        EraMode::Legacy => format!("waiting for {name} to answer initialize …"),
        _ => format!(
            "waiting for {name} to answer server/discover (a 2026-07-28 probe; older servers \
             may not answer it) …"
        ),
    };
    let client = say_if_slow(connecting, &ui, &waiting_for).await?;
    servers.client(&client);
    Ok((client, started.elapsed(), ui))
}

/// Awaits `work`, saying `what` on stderr once if it takes over a second.
async fn say_if_slow<T>(work: impl Future<Output = T>, ui: &Ui, what: &str) -> T {
    let mut work = std::pin::pin!(work);
    tokio::select! {
        out = &mut work => return out,
        () = tokio::time::sleep(Duration::from_secs(1)) => ui.notice(what),
    }
    work.await
}

async fn finish(client: &Client, server: &ServerArgs) {
    // Closed first: the server's last words are in the buffer only once it
    // has exited and its stderr has been read to the end.
    client.close().await;
    if server.server_logs {
        show_stderr(client);
    }
}

/// `--server-logs`: what a closed client's server wrote to stderr.
fn show_stderr(client: &Client) {
    if let Some(stderr) = client.stderr().filter(|s| !s.is_empty()) {
        eprintln!("server stderr:");
        for line in stderr.lines() {
            eprintln!("  | {}", sanitize::line(line));
        }
    }
}
