//! The flags of the commands that edit the configuration (`add`,
//! `import`, `remove`, …) and of `login`.

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScopeArg {
    /// This project, for you only (ROOT/switchboard.local.toml).
    Local,
    /// This project, checked in (ROOT/switchboard.toml).
    Project,
    /// Every project (~/.config/switchboard/config.toml on Linux).
    User,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClientArg {
    /// Claude Desktop's claude_desktop_config.json.
    ClaudeDesktop,
    /// Claude Code's .mcp.json files and ~/.claude.json.
    ClaudeCode,
    /// VS Code's mcp.json (user and .vscode/).
    #[value(name = "vscode")]
    VsCode,
    /// Cursor's mcp.json (~/.cursor and .cursor/).
    Cursor,
    /// Codex's config.toml.
    Codex,
    /// Gemini CLI's settings.json.
    Gemini,
    /// goose's config.yaml.
    Goose,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub(crate) enum AddTransport {
    /// Streamable HTTP, falling back to legacy HTTP+SSE.
    Http,
    /// The legacy HTTP+SSE transport.
    Sse,
    /// WebSocket.
    Ws,
}

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("installer").args(["from_registry", "link"])))]
pub(crate) struct AddArgs {
    /// Where to write it (default local: this project, for you only).
    #[arg(short = 's', long, value_enum)]
    pub(crate) scope: Option<ScopeArg>,
    /// An environment variable for the server, KEY=VALUE (repeatable).
    /// Write secrets as references, '${VAR}', so the file never holds them.
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub(crate) env: Vec<String>,
    /// The server's name (letters, digits, '-', '_', '.'); with
    /// --from-registry, its name in the registry (`io.github.owner/name`);
    /// with --link, the entry's name (default: the link's).
    #[arg(required_unless_present = "link")]
    pub(crate) name: Option<String>,
    /// Write the server a Cursor or VS Code install link describes
    /// (`cursor://anysphere.cursor-deeplink/mcp/install?…`,
    /// `vscode:mcp/install?…`, or their web forms); shown, and written
    /// only when you say yes.
    #[arg(long, value_name = "URL", conflicts_with_all = ["from_registry", "command", "url", "target", "env", "headers", "transport"])]
    pub(crate) link: Option<String>,
    /// Write the server as the MCP registry describes it: its package's
    /// runner pinned to the version (`npx -y pkg@1.2.3`, `uvx pkg==1.2.3`,
    /// `docker run …`), its variables and secret headers as `${VAR}`
    /// references, or its remote URL; shown before it is written.
    #[arg(long, conflicts_with_all = ["command", "url", "target", "env", "headers", "transport"])]
    pub(crate) from_registry: bool,
    /// With --from-registry: the registry's root URL (default:
    /// SWITCHBOARD_REGISTRY, else the official registry).
    #[arg(long, value_name = "URL", requires = "from_registry")]
    pub(crate) registry: Option<String>,
    /// With --from-registry: this version (default: the latest).
    #[arg(long, value_name = "V", requires = "from_registry")]
    pub(crate) version: Option<String>,
    /// With --from-registry: the server's Nth package (0-based) instead
    /// of the first one switchboard can run.
    #[arg(
        long,
        value_name = "N",
        requires = "from_registry",
        conflicts_with = "remote"
    )]
    pub(crate) package: Option<usize>,
    /// With --from-registry: the server's Nth remote (0-based).
    #[arg(long, value_name = "N", requires = "from_registry")]
    pub(crate) remote: Option<usize>,
    /// With --from-registry: the entry's name (default: the registry
    /// name's last part).
    #[arg(long = "as", value_name = "NAME", requires = "from_registry")]
    pub(crate) as_name: Option<String>,
    /// With --from-registry: write a project's entry without asking; with
    /// --link: write the entry without asking.
    #[arg(long, requires = "installer")]
    pub(crate) yes: bool,
    /// A remote server's URL (as --url): `add NAME URL`, as `claude mcp add`
    /// takes it.
    #[arg(
        value_name = "URL",
        conflicts_with_all = ["command", "url"],
        value_parser = super::add_url
    )]
    pub(crate) target: Option<String>,
    /// A remote server's URL, instead of a command.
    #[arg(long, value_name = "URL", conflicts_with = "command", value_parser = super::server_url)]
    pub(crate) url: Option<String>,
    /// A header for the remote server, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub(crate) headers: Vec<String>,
    /// The remote transport (default: detect).
    #[arg(short = 't', long, value_enum)]
    pub(crate) transport: Option<AddTransport>,
    /// The server command and its arguments, after `--`.
    #[arg(
        last = true,
        value_name = "COMMAND",
        required_unless_present_any = ["url", "target", "from_registry", "link"]
    )]
    pub(crate) command: Vec<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `switchboard login`'s options.
#[derive(clap::Args, Debug)]
pub(crate) struct LoginArgs {
    /// The server: its URL (its MCP endpoint, e.g.
    /// https://mcp.example.com/mcp), or the name of a configured HTTP server
    /// (its URL and its `oauth` block: client id and secret, scopes,
    /// callback port; the options below win over the block).
    #[arg(value_name = "URL|NAME")]
    pub(crate) server: String,
    /// Do not open a browser: print the URL and read the URL the browser was
    /// redirected to, pasted on stdin (for SSH sessions).
    #[arg(long)]
    pub(crate) no_browser: bool,
    /// The loopback port the browser is redirected to (default: any free
    /// port; fix one for servers that register redirect URIs exactly).
    #[arg(long, value_name = "PORT")]
    pub(crate) port: Option<u16>,
    /// How long to wait for the authorization, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub(crate) timeout: u64,
    /// A scope to ask for instead of those the server names (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub(crate) scopes: Vec<String>,
    /// A client id registered with the authorization server beforehand
    /// (for servers without dynamic client registration).
    #[arg(long, value_name = "ID")]
    pub(crate) client_id: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}
