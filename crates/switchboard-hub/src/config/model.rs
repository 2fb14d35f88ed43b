//! The normalized server configuration.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// How a server's tools, prompts and resource templates are named among
/// those of other servers (`prefix = "…"` in switchboard's file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Prefix {
    /// `server__name`, always (the hub's default with several servers).
    #[default]
    Always,
    /// The server's own name, always: this server's names win a collision
    /// (two such servers in one configuration are refused at load).
    Never,
    /// The server's own name unless another server offers the same name;
    /// then `server__name` (the gateway's default when it serves one
    /// server).
    OnCollision,
}

impl Prefix {
    /// What the file says: `always`, `never`, `on-collision`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "always" => Some(Self::Always),
            "never" => Some(Self::Never),
            "on-collision" => Some(Self::OnCollision),
            _ => None,
        }
    }

    /// As the file says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Never => "never",
            Self::OnCollision => "on-collision",
        }
    }
}

/// One server, whichever file and dialect it came from.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The server's name: unique within a loaded configuration.
    pub name: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// `false`: configured but switched off (kept, listed as disabled).
    pub enabled: bool,
    /// A required server that fails to start fails the hub's start.
    pub required: bool,
    /// How long connecting (spawn or HTTP setup, then the handshake) may
    /// take; `None` is the hub's default.
    pub startup_timeout: Option<Duration>,
    /// The default timeout for each request; `None` is the client default.
    pub request_timeout: Option<Duration>,
    /// Which of the server's tools are offered.
    pub tools: ToolFilter,
    /// How its tools' and prompts' hub-wide names are made; `None` is the
    /// hub's default ([`HubBuilder::default_prefix`](crate::hub::HubBuilder::default_prefix)).
    pub prefix: Option<Prefix>,
    /// OAuth settings for a remote server, when the file gives any.
    pub oauth: Option<OAuthSettings>,
    /// A command whose output gives a remote server's HTTP headers, run on
    /// each connection attempt (Claude Code's `headersHelper`).
    pub headers_helper: Option<HeadersHelper>,
    /// Where it was configured.
    pub origin: Origin,
    /// Whether it may run: a server from a project file needs the user's
    /// approval first (see [`trust`](super::trust)).
    pub trust: Trust,
    /// How its `sampling/createMessage` requests may be answered: only
    /// narrower than the user's [`SamplingSettings`] (`sampling = {…}` in
    /// its entry).
    pub sampling: ServerSampling,
    /// The [`signature`](Self::signature) before expansion, recorded by
    /// the [`Expander`](super::Expander) in the copy it makes.
    pub(crate) source_signature: Option<String>,
    /// What changed since the user approved it, when it needs approval
    /// again (set by [`trust`](super::trust) when loading).
    pub(crate) approval_changes: Vec<super::trust::ApprovalChange>,
    /// A remote server's URL as written, recorded by the
    /// [`Expander`](super::Expander) in the copy it makes: what errors
    /// show, so an expanded `${TOKEN}` in its path never does.
    pub(crate) written_url: Option<String>,
}

impl ServerConfig {
    /// A server called `name` reached by `transport`, enabled, not
    /// required, with no filters, configured in `origin`.
    pub fn new(name: impl Into<String>, transport: TransportConfig, origin: Origin) -> Self {
        Self {
            name: name.into(),
            transport,
            enabled: true,
            required: false,
            startup_timeout: None,
            request_timeout: None,
            tools: ToolFilter::default(),
            prefix: None,
            oauth: None,
            headers_helper: None,
            origin,
            trust: Trust::Trusted,
            sampling: ServerSampling::default(),
            source_signature: None,
            approval_changes: Vec::new(),
            written_url: None,
        }
    }

    /// What changed, field by field, since the user approved this project
    /// server, when it [needs approval](Trust::NeedsApproval) again
    /// because it changed; empty otherwise.
    pub fn changes_since_approval(&self) -> &[super::trust::ApprovalChange] {
        &self.approval_changes
    }

    /// What identifies the server regardless of its name: the command
    /// array for a local server, the URL for a remote one. Two entries
    /// with the same signature are the same server configured twice.
    pub fn signature(&self) -> String {
        match &self.transport {
            TransportConfig::Stdio { command, args, .. } => {
                let mut parts = vec![command.as_str()];
                parts.extend(args.iter().map(String::as_str));
                format!(
                    "stdio:{}",
                    serde_json::to_string(&parts).unwrap_or_default()
                )
            }
            TransportConfig::Http { url, .. } | TransportConfig::WebSocket { url, .. } => {
                format!("url:{url}")
            }
        }
    }

    /// Everything that makes the server different from another one, its
    /// name aside: the transport, the command, arguments, working
    /// directory and every env var with its value, or the URL and every
    /// header with its value, the headers helper and the OAuth block, as
    /// written. Two entries with the same identity are the same server
    /// configured twice; two that differ only in env (two accounts) are
    /// two servers. (Streamable HTTP asked for, or found by trying it
    /// first, reach the same endpoint: one identity.)
    pub fn identity(&self) -> String {
        let mut fields = super::trust::approval_fields(self);
        if let Some(kind) = fields.get_mut("transport")
            && kind == "streamable-http"
        {
            "http".clone_into(kind);
        }
        serde_json::to_string(&fields).unwrap_or_default()
    }

    /// The URL errors and logs show for a remote server: as written in
    /// the file (references unexpanded) for an expanded copy, else its
    /// URL; `None` for a local server.
    pub fn shown_url(&self) -> Option<&str> {
        match &self.transport {
            TransportConfig::Http { url, .. } | TransportConfig::WebSocket { url, .. } => {
                Some(self.written_url.as_deref().unwrap_or(url))
            }
            TransportConfig::Stdio { .. } => None,
        }
    }

    /// What the hub's state file keys the server's entry by: the SHA-256
    /// (hex) of the [`signature`](Self::signature) of the configuration as
    /// written, before `${VAR}` expansion. The same for a config and its
    /// expanded copy, and neither an expanded value nor a secret written
    /// into the args or URL can be read back from it.
    pub fn state_signature(&self) -> String {
        let source = match &self.source_signature {
            Some(source) => source.clone(),
            None => self.signature(),
        };
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, source.as_bytes());
        digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("enabled", &self.enabled)
            .field("required", &self.required)
            .field("startup_timeout", &self.startup_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("tools", &self.tools)
            .field("oauth", &self.oauth)
            .field("headers_helper", &self.headers_helper)
            .field("origin", &self.origin)
            .field("trust", &self.trust)
            .field("sampling", &self.sampling)
            .finish()
    }
}

/// A command that prints a remote server's HTTP headers (Claude Code's
/// `headersHelper`): run by the system shell (`sh -c`, `cmd /C` on
/// Windows) on each connection attempt, its stdout a JSON object of string
/// values, each a header sent with every request of that connection (over
/// a header of the same name in `headers`). It is told the server's name
/// and URL in `SWITCHBOARD_MCP_SERVER_NAME` / `SWITCHBOARD_MCP_SERVER_URL`
/// (and, for helpers written for Claude Code, `CLAUDE_CODE_MCP_SERVER_NAME`
/// / `CLAUDE_CODE_MCP_SERVER_URL`). A helper that fails, prints something
/// else, prints more than `max_output` bytes or runs longer than `timeout`
/// fails that attempt; its headers are never logged.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeadersHelper {
    /// The shell command, as written.
    pub command: String,
    /// How long it may run (default [`HeadersHelper::DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// The most it may print on stdout, in bytes (default
    /// [`HeadersHelper::DEFAULT_MAX_OUTPUT`]).
    pub max_output: usize,
}

impl HeadersHelper {
    /// 10 seconds, as Claude Code allows.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
    /// 64 KiB: far more than any set of headers.
    pub const DEFAULT_MAX_OUTPUT: usize = 64 * 1024;

    /// The shell command `command` with the default limits.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            timeout: Self::DEFAULT_TIMEOUT,
            max_output: Self::DEFAULT_MAX_OUTPUT,
        }
    }

    /// With another time limit.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// With another output limit, in bytes.
    #[must_use]
    pub fn max_output(mut self, bytes: usize) -> Self {
        self.max_output = bytes;
        self
    }
}

/// Whether a configured server may be started (and its references
/// expanded).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trust {
    /// From a file the user controls (the home directory's files,
    /// `--config FILE`, a managed file), or built in code.
    #[default]
    Trusted,
    /// From a project file, approved by the user for this project with
    /// exactly these values (command or URL, env and headers, helper,
    /// OAuth block).
    Approved,
    /// From a project file the user already allowed in another client;
    /// the text says where (Claude Code's `enabledMcpjsonServers`,
    /// Codex's trusted projects).
    TrustedBy(String),
    /// From a project file and not approved: not started, no request
    /// sent, no variable expanded.
    NeedsApproval {
        /// An approval exists for this server, but for other values
        /// ([`ServerConfig::changes_since_approval`] says which).
        changed: bool,
    },
}

impl Trust {
    /// Whether the server may start.
    pub fn allows_start(&self) -> bool {
        !matches!(self, Trust::NeedsApproval { .. })
    }
}

/// How a server is reached. Environment and header values may hold
/// secrets: `Debug` shows their names only.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportConfig {
    /// A local process spoken to over stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// The working directory, if not the caller's.
        cwd: Option<PathBuf>,
    },
    /// A remote server over HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers.
        headers: BTreeMap<String, String>,
        /// Which HTTP transport the file asked for.
        kind: HttpKind,
    },
    /// A remote server over WebSocket.
    WebSocket {
        /// The `ws://` or `wss://` endpoint.
        url: String,
        /// Extra handshake headers.
        headers: BTreeMap<String, String>,
    },
}

impl fmt::Debug for TransportConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::Http { url, headers, kind } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("kind", kind)
                .finish(),
            Self::WebSocket { url, headers } => f
                .debug_struct("WebSocket")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// The HTTP transport a file names (`"http"`, `"streamable-http"`, `"sse"`, …).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpKind {
    /// Not said: Streamable HTTP, falling back to legacy HTTP+SSE.
    #[default]
    Auto,
    /// Streamable HTTP.
    Streamable,
    /// The legacy HTTP+SSE transport.
    Sse,
}

/// Which tools of a server are offered: a tool is offered when `include`
/// is empty or one of its globs matches, and no `exclude` glob matches
/// (deny wins).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// Globs of tool names to offer (empty: all).
    pub include: Vec<String>,
    /// Globs of tool names never offered.
    pub exclude: Vec<String>,
}

impl ToolFilter {
    /// Whether the tool called `tool` is offered: `include` is empty or
    /// one of its globs matches, and no `exclude` glob matches (deny
    /// wins). Globs know `*` (any run of characters) and `?` (one).
    pub fn allows(&self, tool: &str) -> bool {
        let matches = |glob: &String| glob_match(glob, tool);
        (self.include.is_empty() || self.include.iter().any(matches))
            && !self.exclude.iter().any(matches)
    }
}

/// `*` and `?` globbing over characters, without backtracking blow-up
/// (the classic two-pointer match: remember the last `*` and retry from
/// one character further).
fn glob_match(glob: &str, text: &str) -> bool {
    let glob: Vec<char> = glob.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut g, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match glob.get(g) {
            Some('*') => {
                star = Some((g, t));
                g += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                g += 1;
                t += 1;
            }
            _ => match star {
                Some((sg, st)) => {
                    g = sg + 1;
                    t = st + 1;
                    star = Some((sg, st + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|&c| c == '*')
}

/// OAuth settings a file gives for a remote server. The secret, if any,
/// stays as written (usually a `${VAR}` reference).
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client.
    pub client_secret: Option<String>,
    /// Scopes to ask for instead of those the server names.
    pub scopes: Vec<String>,
    /// A fixed loopback port for the login callback.
    pub callback_port: Option<u16>,
    /// The authorization server (its issuer URL) the client secret belongs
    /// to: a login with a secret sends it only there, whatever
    /// authorization server the MCP server names (without it, a login with
    /// a secret is refused rather than send the secret to a server the
    /// configuration did not name).
    pub issuer: Option<String>,
}

impl fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// Where a server was configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub file: PathBuf,
    /// Its dialect.
    pub dialect: Dialect,
    /// Its place in the precedence order.
    pub scope: Scope,
}

/// The config file formats read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// switchboard's own TOML file.
    Switchboard,
    /// Claude Code: `.mcp.json`, `~/.claude.json`.
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json`.
    ClaudeDesktop,
    /// VS Code: `.vscode/mcp.json`, the user `mcp.json`.
    VsCode,
    /// Cursor: `.cursor/mcp.json`, `~/.cursor/mcp.json`.
    Cursor,
    /// Codex: `~/.codex/config.toml`.
    Codex,
    /// Gemini CLI: `settings.json`.
    Gemini,
    /// goose: `config.yaml`.
    Goose,
}

impl Dialect {
    /// The client's short name, as `import --from` says it
    /// (`claude-code`, `vscode`, …): what a server's name is suffixed with
    /// when two clients configure different servers under one name.
    pub fn id(self) -> &'static str {
        match self {
            Self::Switchboard => "switchboard",
            Self::ClaudeCode => "claude-code",
            Self::ClaudeDesktop => "claude-desktop",
            Self::VsCode => "vscode",
            Self::Cursor => "cursor",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Goose => "goose",
        }
    }
}

/// Precedence, highest first: an explicit `--config` file, then local,
/// project, user; an imported file (another client's) ranks below a
/// switchboard file of the same scope. A managed (admin) file is exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// Given on the command line (`--config FILE`).
    Explicit,
    /// The user's private settings for one project.
    Local,
    /// Checked into the project.
    Project,
    /// The user's settings for every project.
    User,
    /// An administrator's file: when present, the only source.
    Managed,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin {
            file: PathBuf::from("/x/.mcp.json"),
            dialect: Dialect::ClaudeCode,
            scope: Scope::Project,
        }
    }

    #[test]
    fn signatures_name_the_command_array_or_the_url() {
        let local = ServerConfig::new(
            "a",
            TransportConfig::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server".into()],
                env: BTreeMap::new(),
                cwd: None,
            },
            origin(),
        );
        assert_eq!(local.signature(), r#"stdio:["npx","-y","server"]"#);
        let remote = ServerConfig::new(
            "b",
            TransportConfig::Http {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::new(),
                kind: HttpKind::Auto,
            },
            origin(),
        );
        assert_eq!(remote.signature(), "url:https://example.com/mcp");
        assert_eq!(
            remote.state_signature(),
            "2d94abbb0616b8236e6b46eb16f4f41d0b4a3a0a118d19f1dd3426abeb4df060"
        );
    }

    #[test]
    fn tool_filters_allow_then_deny_and_deny_wins() {
        let all = ToolFilter::default();
        assert!(all.allows("anything"));
        let filter = ToolFilter {
            include: vec!["read_*".into(), "list?".into()],
            exclude: vec!["*secret*".into()],
        };
        assert!(filter.allows("read_file"));
        assert!(filter.allows("lists"));
        assert!(!filter.allows("list"));
        assert!(!filter.allows("write_file"));
        assert!(!filter.allows("read_secret_key"));
        let deny_only = ToolFilter {
            include: vec![],
            exclude: vec!["exit".into(), "*_admin".into()],
        };
        assert!(deny_only.allows("echo"));
        assert!(!deny_only.allows("exit"));
        assert!(!deny_only.allows("db_admin"));
        assert!(glob_match("a*b*c", "aXbYbZc"));
        assert!(!glob_match("a*b*c", "aXbYbZ"));
        assert!(glob_match("**", ""));
    }

    #[test]
    fn debug_shows_no_env_or_header_values() {
        let config = ServerConfig::new(
            "a",
            TransportConfig::Http {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer sk-secret".into())]),
                kind: HttpKind::Auto,
            },
            origin(),
        );
        let shown = format!("{config:?}");
        assert!(shown.contains("Authorization") && !shown.contains("sk-secret"));
    }
}

/// Where servers' `sampling/createMessage` requests go: the `[sampling]`
/// table of the user's own switchboard file (or a managed or `--config`
/// file; a project's file cannot say where the user's model requests go
/// and which key they carry).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SamplingSettings {
    /// The model API: `openai` (Responses), `openai-chat`, `anthropic`,
    /// `gemini`.
    pub provider: Option<String>,
    /// The model requests name.
    pub model: Option<String>,
    /// Other models of the same endpoint that a request's
    /// `modelPreferences` hints, or a server's own `model`, may pick.
    pub models: Vec<String>,
    /// The API's root URL (else the provider's usual variable, else its
    /// public endpoint).
    pub base_url: Option<String>,
    /// The environment variable holding the API key (else the provider's
    /// usual one).
    pub key_env: Option<String>,
    /// Most model calls in one run, every server's together.
    pub max_calls: Option<usize>,
    /// The file it was read from.
    pub source: Option<std::path::PathBuf>,
}

impl SamplingSettings {
    /// Settings of `provider` and `model`, nothing else.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            provider: Some(provider.into()),
            model: Some(model.into()),
            ..Self::default()
        }
    }
}

/// One server's narrowing of [`SamplingSettings`] (`sampling = { allow =
/// false }`, `{ max_calls = 3, model = "…" }`): any file may narrow, none
/// widens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerSampling {
    /// `false`: its requests are declined without asking.
    pub allow: Option<bool>,
    /// The model for its requests: the settings' model or one of their
    /// `models` (another is refused with a reason).
    pub model: Option<String>,
    /// Most model calls for it in one run.
    pub max_calls: Option<usize>,
}
