//! Server configuration and the hand-written command-line parser.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Legacy (initialize-based) protocol versions the server can negotiate.
pub const LEGACY_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The legacy version answered when the client asks for one we do not know.
pub const LATEST_LEGACY_VERSION: &str = "2025-11-25";

/// The default modern (stateless, per-request `_meta`) protocol version.
pub const DEFAULT_MODERN_VERSION: &str = "2026-07-28";

/// Default `serverInfo.name`.
pub const DEFAULT_SERVER_NAME: &str = "switchboard-testserver";

/// Usage text printed for `--help` and on argument errors.
pub const USAGE: &str = "\
usage: switchboard-testserver [FLAGS]

Serves newline-delimited JSON-RPC (MCP) on stdin/stdout.

flags:
  --era legacy|modern|dual      protocol era (default: dual)
  --modern-versions V1,V2       supported modern versions (default: 2026-07-28)
  --legacy-version V            force the version answered to initialize
  --page-size N                 paginate list results, N items per page
  --extra-tools N               add generated tools tool_0..tool_{N-1}
  --fault NAME                  garbage | exit-before-init | repeat-cursor |
                                no-tools-capability (repeatable)
  --stderr-flood BYTES          write BYTES bytes of text to stderr at startup
  --stderr-line TEXT            write TEXT as a line to stderr at startup (repeatable)
  --record FILE                 append every received message to FILE
  --name NAME                   serverInfo name (default: switchboard-testserver)
  -h, --help                    print this help
";

/// Which protocol era(s) the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Era {
    /// Only the `initialize` handshake (2025-11-25 and earlier).
    Legacy,
    /// Only stateless requests with per-request `_meta` (2026-07-28 and later).
    Modern,
    /// Both: `initialize` selects legacy; `_meta`-carrying requests are modern.
    #[default]
    Dual,
}

impl FromStr for Era {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "legacy" => Ok(Era::Legacy),
            "modern" => Ok(Era::Modern),
            "dual" => Ok(Era::Dual),
            other => Err(format!(
                "invalid --era value {other:?} (expected legacy, modern or dual)"
            )),
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
            Era::Dual => "dual",
        })
    }
}

/// Deliberate misbehaviours, enabled with `--fault`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Write a non-JSON line at startup and before every outgoing message.
    Garbage,
    /// Exit with code 1 when the first request is not `initialize`.
    ExitBeforeInit,
    /// List results always carry the same `nextCursor` (a pagination loop).
    RepeatCursor,
    /// Do not declare the `tools` capability.
    NoToolsCapability,
}

impl FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "garbage" => Ok(Fault::Garbage),
            "exit-before-init" => Ok(Fault::ExitBeforeInit),
            "repeat-cursor" => Ok(Fault::RepeatCursor),
            "no-tools-capability" => Ok(Fault::NoToolsCapability),
            other => Err(format!(
                "unknown --fault {other:?} (expected garbage, exit-before-init, \
                 repeat-cursor or no-tools-capability)"
            )),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fault::Garbage => "garbage",
            Fault::ExitBeforeInit => "exit-before-init",
            Fault::RepeatCursor => "repeat-cursor",
            Fault::NoToolsCapability => "no-tools-capability",
        })
    }
}

/// Configuration of the test server. Build it with [`ServerConfig::from_args`],
/// or start from [`ServerConfig::default`] and set fields / use the builder
/// methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Protocol era (`--era`).
    pub era: Era,
    /// Supported modern versions (`--modern-versions`).
    pub modern_versions: Vec<String>,
    /// Version forced as the answer to `initialize` (`--legacy-version`).
    pub legacy_version: Option<String>,
    /// Items per page for list methods (`--page-size`); `None` = no pagination.
    pub page_size: Option<usize>,
    /// Number of generated `tool_N` tools (`--extra-tools`).
    pub extra_tools: usize,
    /// Enabled faults (`--fault`, repeatable).
    pub faults: Vec<Fault>,
    /// Bytes of text written to stderr at startup (`--stderr-flood`).
    pub stderr_flood: usize,
    /// Lines written to stderr at startup (`--stderr-line`, repeatable).
    pub stderr_lines: Vec<String>,
    /// File every received message is appended to (`--record`).
    pub record: Option<PathBuf>,
    /// `serverInfo.name` (`--name`).
    pub name: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            era: Era::Dual,
            modern_versions: vec![DEFAULT_MODERN_VERSION.to_owned()],
            legacy_version: None,
            page_size: None,
            extra_tools: 0,
            faults: Vec::new(),
            stderr_flood: 0,
            stderr_lines: Vec::new(),
            record: None,
            name: DEFAULT_SERVER_NAME.to_owned(),
        }
    }
}

impl ServerConfig {
    /// Parse command-line flags (without the program name).
    ///
    /// Accepts both `--flag value` and `--flag=value`. Returns a
    /// human-readable message for unknown flags or invalid values.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<ServerConfig, String> {
        let mut config = ServerConfig::default();
        let mut modern_versions_set = false;
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let (flag, mut inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
                _ => (arg, None),
            };
            let mut value = || {
                inline
                    .take()
                    .or_else(|| it.next())
                    .ok_or_else(|| format!("{flag} requires a value"))
            };
            match flag.as_str() {
                "--era" => config.era = value()?.parse()?,
                "--modern-versions" => {
                    let v = value()?;
                    let versions: Vec<String> = v
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect();
                    if versions.is_empty() {
                        return Err("--modern-versions requires at least one version".into());
                    }
                    if modern_versions_set {
                        config.modern_versions.extend(versions);
                    } else {
                        config.modern_versions = versions;
                        modern_versions_set = true;
                    }
                }
                "--legacy-version" => config.legacy_version = Some(value()?),
                "--page-size" => {
                    let n = parse_num(&flag, &value()?)?;
                    if n == 0 {
                        return Err("--page-size must be at least 1".into());
                    }
                    config.page_size = Some(n);
                }
                "--extra-tools" => config.extra_tools = parse_num(&flag, &value()?)?,
                "--fault" => {
                    let fault: Fault = value()?.parse()?;
                    if !config.faults.contains(&fault) {
                        config.faults.push(fault);
                    }
                }
                "--stderr-flood" => config.stderr_flood = parse_num(&flag, &value()?)?,
                "--stderr-line" => config.stderr_lines.push(value()?),
                "--record" => config.record = Some(PathBuf::from(value()?)),
                "--name" => config.name = value()?,
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        Ok(config)
    }

    /// Whether `fault` is enabled.
    pub fn has_fault(&self, fault: Fault) -> bool {
        self.faults.contains(&fault)
    }

    /// Set the era.
    pub fn with_era(mut self, era: Era) -> Self {
        self.era = era;
        self
    }

    /// Replace the supported modern versions.
    pub fn with_modern_versions<I, S>(mut self, versions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.modern_versions = versions.into_iter().map(Into::into).collect();
        self
    }

    /// Force the version answered to `initialize`.
    pub fn with_legacy_version(mut self, version: impl Into<String>) -> Self {
        self.legacy_version = Some(version.into());
        self
    }

    /// Paginate list results with `n` items per page.
    pub fn with_page_size(mut self, n: usize) -> Self {
        self.page_size = Some(n.max(1));
        self
    }

    /// Add `n` generated tools.
    pub fn with_extra_tools(mut self, n: usize) -> Self {
        self.extra_tools = n;
        self
    }

    /// Enable a fault.
    pub fn with_fault(mut self, fault: Fault) -> Self {
        if !self.faults.contains(&fault) {
            self.faults.push(fault);
        }
        self
    }

    /// Record every received message to `path`.
    pub fn with_record(mut self, path: impl Into<PathBuf>) -> Self {
        self.record = Some(path.into());
        self
    }

    /// Set `serverInfo.name`.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Write `bytes` bytes of text to stderr at startup.
    pub fn with_stderr_flood(mut self, bytes: usize) -> Self {
        self.stderr_flood = bytes;
        self
    }

    /// Write `line` to stderr at startup.
    pub fn with_stderr_line(mut self, line: impl Into<String>) -> Self {
        self.stderr_lines.push(line.into());
        self
    }
}

fn parse_num(flag: &str, v: &str) -> Result<usize, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("{flag} expects a non-negative integer, got {v:?}"))
}
