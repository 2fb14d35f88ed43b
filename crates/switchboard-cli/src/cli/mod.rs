//! The command line: every subcommand, its flags and its help.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

pub(crate) mod complete;
mod config;
mod help;
mod server;
mod values;

pub(crate) use config::{AddArgs, AddTransport, ClientArg, LoginArgs, ScopeArg};
pub(crate) use help::{cli_command, forgotten_dashes};
pub(crate) use server::{EraArg, ModelArgs, ServerArgs, TransportArg};
use values::parse_idle;
pub(crate) use values::{MAX_IDLE_SECONDS, add_url, seconds, server_url};

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
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// The credentials file for OAuth logins (created 0600), instead of the
    /// default store (the OS keyring; on Linux
    /// ~/.config/switchboard/credentials.json). Also SWITCHBOARD_CREDENTIALS.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) credentials: Option<PathBuf>,
    /// A config file of servers (switchboard TOML, or any client's file),
    /// read before every other and winning a name they share; `add` and
    /// `import` write to it.
    #[arg(long = "config", global = true, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Print results' and resources' text byte for byte. Without it, control
    /// characters a server wrote (escape sequences among them) are shown as
    /// escapes (`\x1b`); `--json` output is escaped JSON either way.
    #[arg(long, global = true)]
    pub(crate) raw: bool,
    /// Send this command's traces to an OpenTelemetry collector (OTLP over
    /// HTTP/protobuf; its base URL, traces go to /v1/traces). Also
    /// OTEL_EXPORTER_OTLP_ENDPOINT.
    #[cfg(feature = "otlp")]
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
}
#[derive(Subcommand, Debug)]
pub(crate) enum AuthCommand {
    /// List the stored logins: server, issuer, client id, scopes, token
    /// expiry (never a token).
    Status {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum PolicyCommand {
    /// List the tools remembered as always allowed (SERVER/TOOL); with
    /// --state, those the gateway replicas' users answered.
    List {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        shared: SharedAllowsArgs,
    },
    /// Forget a remembered allow: the next call is asked about again (with
    /// --state, on every replica at once).
    Revoke {
        /// SERVER/TOOL, or SERVER/* for every tool of a server.
        #[arg(value_name = "SERVER/TOOL")]
        target: String,
        #[command(flatten)]
        shared: SharedAllowsArgs,
    },
    /// Refuse the tools PATTERN names on every gateway replica sharing
    /// the --state database, from their next call (beside each replica's
    /// own `[policy.tools]`). Example: `switchboard policy deny
    /// 'github/delete_*' --state URL --state-key-file FILE`
    Deny {
        /// SERVER/TOOL, with `*` globs, as `[policy.tools]` writes it.
        #[arg(value_name = "PATTERN")]
        pattern: String,
        #[command(flatten)]
        scope: RuleScopeArgs,
        #[command(flatten)]
        state: SharedStateArgs,
    },
    /// Ask before the tools PATTERN names run, on every replica (as
    /// `deny`).
    Ask {
        /// SERVER/TOOL, with `*` globs.
        #[arg(value_name = "PATTERN")]
        pattern: String,
        #[command(flatten)]
        scope: RuleScopeArgs,
        #[command(flatten)]
        state: SharedStateArgs,
    },
    /// Remove a shared `deny` or `ask` rule, on every replica.
    Remove {
        /// `deny` or `ask`.
        #[arg(value_name = "KIND", value_parser = ["deny", "ask"])]
        kind: String,
        /// The rule's pattern, as it was added.
        #[arg(value_name = "PATTERN")]
        pattern: String,
        #[command(flatten)]
        scope: RuleScopeArgs,
        #[command(flatten)]
        state: SharedStateArgs,
    },
    /// The shared rules every replica enforces.
    Rules {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        state: SharedStateArgs,
    },
}

/// The remembered allows of the replicas' shared state, rather than this
/// machine's file.
#[derive(clap::Args, Debug)]
pub(crate) struct SharedAllowsArgs {
    /// The PostgreSQL database the gateway replicas share (as their
    /// `serve --state`): its users' answers, not this machine's file.
    #[arg(long = "state", value_name = "URL", requires = "state_key_file")]
    pub(crate) url: Option<String>,
    /// The state key file (as their `serve --state-key-file`).
    #[arg(long, value_name = "FILE", requires = "url")]
    pub(crate) state_key_file: Option<PathBuf>,
    /// With --state: only this host user's (their token's `sub`); without
    /// it, every user's.
    #[arg(long, value_name = "SUB", requires = "url")]
    pub(crate) user: Option<String>,
}

impl SharedAllowsArgs {
    /// The shared state, when one is named.
    pub(crate) fn state(&self) -> Option<SharedStateArgs> {
        Some(SharedStateArgs {
            url: self.url.clone()?,
            state_key_file: self.state_key_file.clone()?,
        })
    }
}

/// Whom a shared rule holds for (everyone, without either).
#[derive(clap::Args, Debug)]
pub(crate) struct RuleScopeArgs {
    /// Only for this host user (their token's `sub`).
    #[arg(long, value_name = "SUB", conflicts_with = "group")]
    pub(crate) user: Option<String>,
    /// Only for the host users whose token names this group (the
    /// gateway's --groups-claim, `groups` by default).
    #[arg(long, value_name = "NAME")]
    pub(crate) group: Option<String>,
}

impl RuleScopeArgs {
    /// As the shared state takes it.
    pub(crate) fn scope(&self) -> switchboard_postgres::RuleScope {
        match (&self.user, &self.group) {
            (Some(user), _) => switchboard_postgres::RuleScope::User(user.clone()),
            (None, Some(group)) => switchboard_postgres::RuleScope::Group(group.clone()),
            (None, None) => switchboard_postgres::RuleScope::Everyone,
        }
    }
}

/// Where the replicas' shared state is.
#[derive(clap::Args, Debug)]
pub(crate) struct SharedStateArgs {
    /// The PostgreSQL database the gateway replicas share (as their
    /// `serve --state`).
    #[arg(long = "state", value_name = "URL")]
    pub(crate) url: String,
    /// The state key file (as their `serve --state-key-file`).
    #[arg(long, value_name = "FILE")]
    pub(crate) state_key_file: PathBuf,
}

/// `agent`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct AgentArgs {
    /// The task.
    #[arg(value_name = "PROMPT")]
    pub(crate) prompt: String,
    /// The model API: openai (Responses), openai-chat (Chat
    /// Completions, and the servers compatible with it), anthropic,
    /// gemini. Default: the first whose API key is set, in the order
    /// anthropic, gemini, openai.
    #[arg(long, value_parser = crate::providers::PROVIDERS)]
    pub(crate) provider: Option<String>,
    /// The model's name (default: a current one of the provider;
    /// openai-chat needs it).
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// The API's root URL (default: the provider's variable, else its
    /// public endpoint).
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// Most model requests in the run.
    #[arg(long, default_value_t = 16)]
    pub(crate) max_rounds: usize,
    /// Only this configured server's tools.
    #[arg(long = "server", value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
    pub(crate) only: Option<String>,
    /// Print one JSON document (the answer, the calls, the tokens)
    /// instead of streaming the answer.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Subcommand, Debug)]
pub(crate) enum TeamCommand {
    /// Make FILE (switchboard's TOML, `[servers.NAME]` entries only) the
    /// shared servers: checked as `switchboard list` would read it, kept
    /// sealed under the state key, and announced to every replica, which
    /// serves them beside its own files (its own entry wins a name both
    /// have). `${VAR}` references are expanded by each replica. Example:
    /// `switchboard team push servers.toml --state URL --state-key-file
    /// FILE`
    Push {
        /// The servers' file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        #[command(flatten)]
        state: SharedStateArgs,
    },
    /// Print the shared servers' document and its version.
    Show {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        state: SharedStateArgs,
    },
    /// Remove the shared servers: every replica stops them.
    Clear {
        #[command(flatten)]
        state: SharedStateArgs,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum AuditCommand {
    /// Check an audit log (`serve --audit FILE`) and its rotated files
    /// FILE.1, FILE.2, …: every line's `prev` must be the keyed MAC of the
    /// line before, each file must start with its header linking it to the
    /// one before, and the current file must end where its anchor says.
    /// Exit 0 with the counts when intact; otherwise 1 and what does not
    /// hold and where (an edited line, a cut tail, a removed head, a
    /// missing rotated file, a file of another user).
    ///
    /// With --database, the chain gateway replicas keep in their shared
    /// state (`serve --state URL --audit-database`) is checked instead:
    /// numbered without a gap, each record linked to the one before, its
    /// end where the head says.
    ///
    /// Example: `switchboard audit verify ~/switchboard-audit.jsonl`
    Verify {
        /// The log (the file `serve --audit` writes, not a rotated one).
        #[arg(required_unless_present = "database", conflicts_with = "database")]
        file: Option<PathBuf>,
        /// Check the audit chain in this PostgreSQL database (the URL
        /// `serve --state` was given) instead of a file.
        #[arg(long, value_name = "URL", requires = "state_key_file")]
        database: Option<String>,
        /// The state key the replicas share (64 hex digits in a file of
        /// your own, mode 0600).
        #[arg(long, value_name = "FILE", requires = "database")]
        state_key_file: Option<PathBuf>,
    },
}
#[derive(Subcommand, Debug)]
pub(crate) enum Command {
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
        #[arg(value_name = "NAME", conflicts_with = "only", add = clap_complete::ArgValueCandidates::new(complete::servers))]
        name: Option<String>,
        /// The configured server.
        #[arg(long = "server", value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
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
        #[arg(long = "server", value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
        only: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the server's tools; without a server command, every configured
    /// server's tools, named SERVER__TOOL.
    Tools {
        /// Only this configured server's tools.
        #[arg(long = "server", value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
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
        #[arg(long = "server", value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
        only: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the server's prompts; without a server command, every
    /// configured server's, with their server.
    Prompts {
        /// Only this configured server's prompts.
        #[arg(long = "server", value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
        only: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the server's skills (the skills extension): name, description
    /// and files; without a server command, every configured server's.
    /// Reads no skill file.
    Skills {
        /// Only this configured server's skills.
        #[arg(long = "server", value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
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
        #[arg(long = "server", value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
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
        #[arg(add = clap_complete::ArgValueCandidates::new(complete::tools))]
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
    /// as `read URI --server NAME` (without --server: the one configured
    /// server that lists URI). An MCP App's HTML (a ui:// resource) is not
    /// printed on a terminal: give -o FILE, or --raw.
    Read {
        /// The resource URI.
        uri: String,
        /// The configured server to read from.
        #[arg(long = "server", value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
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
    /// as `prompt NAME --server SERVER`, `prompt SERVER/NAME`, `prompt
    /// SERVER__NAME`, or `prompt NAME` (the one server that has it).
    Prompt {
        /// The prompt's name (SERVER/NAME or SERVER__NAME for a configured server).
        name: String,
        /// The configured server to ask.
        #[arg(long = "server", value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
        only: Option<String>,
        /// An argument, KEY=VALUE (prompt arguments are strings).
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Log in to a remote server with OAuth: opens the browser (and prints
    /// the URL), receives the authorization on 127.0.0.1, stores the tokens.
    Login(LoginArgs),
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
    Add(AddArgs),
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
        scope: Option<ScopeArg>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Copy another client's servers into switchboard's own file (default
    /// the user file), references as written.
    Import {
        /// The client whose servers to copy.
        #[arg(long, value_enum)]
        from: ClientArg,
        /// Where to write them (default user).
        #[arg(short = 's', long, value_enum)]
        scope: Option<ScopeArg>,
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
        #[arg(add = clap_complete::ArgValueCandidates::new(complete::servers))]
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
    Serve(ServeArgs),
    /// An interactive shell on the configured servers (or one): connect
    /// once, then `tools`, `call TOOL` (missing arguments are asked for,
    /// field by field), `read`, `prompt`, `servers`; history, Tab
    /// completion of commands and names, the servers' log lines and a
    /// call's progress printed as they arrive.
    Shell {
        /// Only this configured server.
        #[arg(value_name = "NAME", add = clap_complete::ArgValueCandidates::new(complete::servers))]
        name: Option<String>,
    },
    /// The configured servers in your browser: each server's state and
    /// where it is configured; search every tool and call one with a form
    /// made from its input schema. Served on 127.0.0.1 only, behind a
    /// token given once in the address it opens (then a cookie); other
    /// sites' pages and other host names are refused. While the project's
    /// background session runs, it is the session's console: its servers,
    /// and what each command sent it.
    Console {
        /// The port on 127.0.0.1 (0: any free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Print the address instead of opening a browser.
        #[arg(long)]
        no_open: bool,
        /// Write the page's calls, reads and prompts to this audit log
        /// (JSON lines, chained as `serve --audit` chains them) and show
        /// it, verified, in the Audit tab. A log a running gateway writes
        /// is shown and verified, not written.
        #[arg(long, value_name = "FILE")]
        audit: Option<PathBuf>,
        /// Write the calls' arguments into the audit log too.
        #[arg(long, requires = "audit")]
        audit_arguments: bool,
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
    /// A one-shot agent: PROMPT to a model, with every configured
    /// server's tools (as `call` runs them: the tool policy and its
    /// questions hold), each tool call printed on stderr as it happens and
    /// the answer streamed to stdout. The API key and endpoint come from
    /// each provider's usual variables (OPENAI_API_KEY/OPENAI_BASE_URL,
    /// ANTHROPIC_API_KEY/ANTHROPIC_BASE_URL, GEMINI_API_KEY/
    /// GOOGLE_GEMINI_BASE_URL) or --base-url, so any compatible endpoint
    /// works (Ollama, vLLM, a proxy).
    Agent(AgentArgs),
    /// Find servers in the MCP registry (the official one, --registry
    /// URL or SWITCHBOARD_REGISTRY): the latest version of each whose name
    /// holds QUERY, with its status and how it runs (npm, PyPI, OCI,
    /// NuGet, an `.mcpb` bundle, or a remote URL). Deleted servers are
    /// left out.
    Search {
        /// Part of the servers' names (none: every server).
        #[arg(value_name = "QUERY")]
        query: Option<String>,
        /// The registry's root URL.
        #[arg(long, value_name = "URL")]
        registry: Option<String>,
        /// Most servers listed.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print one JSON document (the registry's documents as they are).
        #[arg(long)]
        json: bool,
    },
    /// Show one server of the MCP registry: its packages with their
    /// arguments and environment variables (secret ones marked), its
    /// remote endpoints and headers, its status.
    Show {
        /// The server's name in the registry (`io.github.owner/name`).
        #[arg(value_name = "NAME")]
        name: String,
        /// This version (default: the latest).
        #[arg(long)]
        version: Option<String>,
        /// The registry's root URL.
        #[arg(long, value_name = "URL")]
        registry: Option<String>,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Install an `.mcpb` bundle (Claude Desktop's format): its manifest
    /// shown, its settings asked (secrets hidden, and kept out of every
    /// config file), unpacked into a private directory, and written into
    /// your user file. Archives that escape their directory, hold links,
    /// or are too large or too many files are refused, as are manifests
    /// that run a shell or inline code.
    Install {
        /// The bundle file.
        #[arg(value_name = "BUNDLE.mcpb")]
        bundle: std::path::PathBuf,
        /// The entry's name (default: the bundle's name).
        #[arg(long = "as", value_name = "NAME")]
        as_name: Option<String>,
        /// A setting of the bundle's `user_config`, KEY=VALUE (repeatable);
        /// a secret as KEY=env:VAR, read from that variable (never on the
        /// command line, which other users can read).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Install without asking (after reading what is shown).
        #[arg(long)]
        yes: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Audit logs of `serve --audit`.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// The servers every gateway replica sharing a --state database
    /// serves besides its own config files: pushed once, reloaded by every
    /// replica within a second.
    Team {
        #[command(subcommand)]
        command: TeamCommand,
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
pub(crate) struct ServerNames {
    /// The servers.
    #[arg(value_name = "NAME", required_unless_present = "all", add = clap_complete::ArgValueCandidates::new(complete::servers))]
    pub(crate) names: Vec<String>,
    /// Every one of this project (waiting for approval, or approved).
    #[arg(long)]
    pub(crate) all: bool,
    /// Print one JSON document.
    #[arg(long)]
    pub(crate) json: bool,
}
#[derive(clap::Args, Debug)]
pub(crate) struct NameArgs {
    /// The server's name.
    #[arg(add = clap_complete::ArgValueCandidates::new(complete::servers))]
    pub(crate) name: String,
    /// Change switchboard's file of this scope instead of the file the
    /// server is configured in.
    #[arg(short = 's', long, value_enum)]
    pub(crate) scope: Option<ScopeArg>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

impl Command {
    /// Whether the command prints JSON (`--json`): its errors do too.
    pub(crate) fn json(&self) -> bool {
        match self {
            Self::Demo { json } => *json,
            Self::Info { server, .. }
            | Self::Complete { server, .. }
            | Self::Tools { server, .. }
            | Self::Resources { server, .. }
            | Self::Prompts { server, .. }
            | Self::Skills { server, .. }
            | Self::Skill { server, .. }
            | Self::Call { server, .. }
            | Self::Read { server, .. }
            | Self::Prompt { server, .. } => server.json,
            Self::Login(args) => args.json,
            Self::Logout { json, .. }
            | Self::Auth {
                command: AuthCommand::Status { json },
            }
            | Self::Policy {
                command: PolicyCommand::List { json, .. } | PolicyCommand::Rules { json, .. },
            } => *json,
            Self::Policy {
                command:
                    PolicyCommand::Revoke { .. }
                    | PolicyCommand::Deny { .. }
                    | PolicyCommand::Ask { .. }
                    | PolicyCommand::Remove { .. },
            } => false,
            Self::List { json, .. }
            | Self::AddJson { json, .. }
            | Self::Import { json, .. }
            | Self::Get { json, .. }
            | Self::Trust { json, .. } => *json,
            Self::Approve(names) | Self::Untrust(names) => names.json,
            Self::Add(args) => args.json,
            Self::Remove(args) | Self::Enable(args) | Self::Disable(args) => args.json,
            Self::Up { json, .. } | Self::Down { json } | Self::Doctor { json, .. } => *json,
            Self::Team {
                command: TeamCommand::Show { json, .. },
            } => *json,
            Self::Agent(args) => args.json,
            Self::Search { json, .. } | Self::Show { json, .. } | Self::Install { json, .. } => {
                *json
            }
            Self::Team {
                command: TeamCommand::Push { .. } | TeamCommand::Clear { .. },
            } => false,
            Self::TestServer { .. }
            | Self::Serve(_)
            | Self::Session { .. }
            | Self::Shell { .. }
            | Self::Console { .. }
            | Self::Completions { .. }
            | Self::Man
            | Self::Audit { .. } => false,
        }
    }

    /// The remote server a command talks to, if any.
    pub(crate) fn remote_url(&self) -> Option<&str> {
        match self {
            Self::Info { server, .. }
            | Self::Complete { server, .. }
            | Self::Tools { server, .. }
            | Self::Resources { server, .. }
            | Self::Prompts { server, .. }
            | Self::Skills { server, .. }
            | Self::Skill { server, .. }
            | Self::Call { server, .. }
            | Self::Read { server, .. }
            | Self::Prompt { server, .. } => server.url.as_deref(),
            _ => None,
        }
    }
}

/// `serve`: the configured servers as one MCP server.
#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
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
    pub(crate) wait_ready: u64,
    /// Also serve `switchboard console` over this gateway, on 127.0.0.1
    /// (a free port; its address, with its token, said on stderr and kept
    /// in a private file while it runs): the servers it fronts, and — for
    /// a host on stdio — what the host sent beside what was forwarded.
    #[arg(long)]
    pub(crate) console: bool,
    /// Record every tool call, resource read, prompt get, forwarded
    /// elicitation and sampling, policy decision and login in FILE:
    /// JSON lines, 0600, chained by a keyed MAC (`switchboard audit
    /// verify FILE`); the arguments as a salted MAC unless
    /// --audit-arguments. FILE and its directory must be your own; one
    /// gateway writes it at a time. Rotated to FILE.1 past 16 MiB.
    #[arg(long, value_name = "FILE")]
    pub(crate) audit: Option<PathBuf>,
    /// How many rotated audit files to keep (FILE.1 … FILE.N); older
    /// ones are removed, and `audit verify` counts them as dropped.
    #[arg(long, value_name = "N", default_value_t = 4, requires = "audit")]
    pub(crate) audit_keep: u64,
    /// Write the calls' arguments into the audit log too (they may hold
    /// secrets).
    #[arg(long)]
    pub(crate) audit_arguments: bool,
    /// Keep what replicas of this gateway share in the PostgreSQL
    /// database at URL (postgres://USER@HOST/DB, or ?host=DIR for a Unix
    /// socket; no password on the command line — use ~/.pgpass): its
    /// schema is migrated at start. Needs --state-key-file. Shared now:
    /// the audit chain (--audit-database).
    #[arg(long, value_name = "URL", requires = "state_key_file")]
    pub(crate) state: Option<String>,
    /// The key every replica sharing --state uses (64 hex digits, e.g.
    /// `openssl rand -hex 32`, in a file of your own, mode 0600); the
    /// database never sees it.
    #[arg(long, value_name = "FILE", requires = "state")]
    pub(crate) state_key_file: Option<PathBuf>,
    /// Record the audit log (as --audit does) in the --state database:
    /// one chain every replica appends to, checked with `switchboard
    /// audit verify --database URL`.
    #[arg(long, requires = "state", conflicts_with = "audit")]
    pub(crate) audit_database: bool,
    /// Serve Streamable HTTP at ADDR (path /mcp) instead of stdio, e.g.
    /// 127.0.0.1:8080 (port 0 picks one; the address is printed on
    /// stderr). Every request must carry a bearer token: one is
    /// generated, written to $XDG_RUNTIME_DIR/switchboard/serve-PORT.token
    /// (0600) and printed once on stderr, unless --token-file or
    /// SWITCHBOARD_TOKEN gives one (32 characters at least).
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// Refused: a token on the command line is readable by every local
    /// user. Use --token-file or SWITCHBOARD_TOKEN.
    #[arg(long, value_name = "TOKEN", requires = "http", hide = true)]
    pub(crate) token: Option<String>,
    /// The bearer token, from FILE (yours, mode 0600): at least 32
    /// characters.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) token_file: Option<PathBuf>,
    /// Serve HTTP without a token: any process that reaches the port
    /// calls every tool with your credentials (a warning is printed).
    #[arg(long, requires = "http", conflicts_with = "token_file")]
    pub(crate) no_auth: bool,
    /// A host name (as in the Host header) served besides localhost
    /// and IP addresses, e.g. a replica's DNS name; repeatable.
    #[arg(long, value_name = "NAME", requires = "http")]
    pub(crate) allow_host: Vec<String>,
    /// Connections open at once (default 256); the oldest one that has
    /// not sent a request yet is closed for a newcomer.
    #[arg(long, value_name = "N", requires = "http")]
    pub(crate) max_connections: Option<usize>,
    /// Worker threads (default 2). 1 runs the whole gateway on one
    /// thread (a current-thread runtime): no answer crosses threads,
    /// so each call costs less CPU, at the price of using one core.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub(crate) threads: Option<u16>,
    /// A file holding a 32-byte key as 64 hex digits (`openssl rand
    /// -hex 32`): session ids are sealed with it, so replicas given the
    /// same file serve each other's sessions with no shared store.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) session_key_file: Option<PathBuf>,
    /// Hosts as users (`--issuer`, `--audience`, `--scope`).
    #[command(flatten)]
    pub(crate) users: crate::hub::host_auth::HostUserArgs,
    /// The host's tool budget: with more tools than N, list only
    /// `search_tools` and the tools found with it so far (hosts cap
    /// their tools at 40–128).
    #[arg(long, value_name = "N")]
    pub(crate) max_tools: Option<usize>,
    /// Refuse messages larger than this from any server (bytes).
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_message_size: Option<u64>,
    /// Serve only this configured server (repeatable); the others are
    /// not started.
    #[arg(long = "server", value_name = "NAME", conflicts_with_all = ["url", "command"])]
    pub(crate) only: Vec<String>,
    /// Front the remote server at URL alone, under its own names; no
    /// config file is read (a login in the browser when it needs one).
    #[arg(long, value_name = "URL", conflicts_with = "command", value_parser = server_url)]
    pub(crate) url: Option<String>,
    /// A header for every request to --url, 'Name: value' (repeatable).
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME: VALUE",
        requires = "url"
    )]
    pub(crate) headers: Vec<String>,
    /// Front the server this command starts alone, under its own
    /// names; no config file is read: `switchboard serve -- npx -y
    /// @modelcontextprotocol/server-everything`.
    #[arg(last = true, value_name = "COMMAND")]
    pub(crate) command: Vec<String>,
}
