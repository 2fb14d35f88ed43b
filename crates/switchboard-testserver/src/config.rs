//! Server configuration and the hand-written command-line parser.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::auth::{AuthConfig, check_issuer_suffix};

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

Serves newline-delimited JSON-RPC (MCP) on stdin/stdout until EOF.

flags:
  --era legacy|modern|dual      protocol era (default: dual)
  --modern-versions V1,V2       supported modern versions (default: 2026-07-28)
  --legacy-version V            force the version answered to initialize
  --page-size N                 paginate list results, N items per page
  --extra-tools N               add generated tools tool_0..tool_{N-1}
  --extra-tool NAME             add a tool NAME answering \"NAME called\" (repeatable)
  --fault NAME                  garbage | exit-before-init | repeat-cursor |
                                no-tools-capability | session-loss |
                                cut-stream | no-get-stream (repeatable)
  --stderr-flood BYTES          write BYTES bytes of text to stderr at startup
  --stderr-line TEXT            write TEXT as a line to stderr at startup (repeatable)
  --record FILE                 append every received message to FILE
  --name NAME                   serverInfo name (default: switchboard-testserver)
  --cache-ttl-ms N              stateless era: add ttlMs N and cacheScope to
                                server/discover, the list results and
                                resources/read (default: no caching hints)
  --cache-scope public|private  override cacheScope (default: public for
                                discover and lists, private for resources/read)
  --http, --transports, --http-response, --require-header, --auth*
                                HTTP settings: parsed, but only the HTTP front
                                end of switchboard-testkit (unpublished) serves
                                them; this server refuses --http
  --skills                      offer the skills extension (SEP-2640):
                                skills pdf-processing and code-review,
                                skills/list, skills/get, their files through
                                resources/read and resources/list
  --skills-tamper digest|size|frontmatter|file
                                serve pdf-processing wrong (implies --skills):
                                SKILL.md's digest, size or frontmatter does not
                                match the listing, or references/FORMS.md's
                                digest does not
  --skills-directories          declare directoryRead and serve
                                resources/directory/read (implies --skills), with
                                a third skill, live-notes, listed as dynamic
  --apps                        MCP Apps: tools dashboard, dashboard_refresh
                                (app-only), legacy_app (ui/resourceUri) and
                                odd_app (a malformed _meta.ui), and their ui://
                                views through resources/read and resources/list
  --probe-app                   MCP Apps: tool probe, whose view tries its host
                                (window.top, a fetch of the `beacon` URL it is
                                given, tools/call of each name in `call`) and
                                logs what happened; probe_refresh (app-only)
                                and model_only (visibility model)
  --suite-fixture               serve what the official MCP conformance suite's
                                server scenarios call (test_* tools and prompts,
                                test:// resources and template, completion,
                                logging, progress, sampling, elicitation,
                                input_required) instead of the catalog; implies
                                caching hints (ttlMs 60000) unless --cache-ttl-ms
  -h, --help                    print this help

client-feature tools (both eras unless noted; capabilities come from
initialize or from each request's _meta clientCapabilities):
  sample {prompt, tools?}   sampling/createMessage (tools needs sampling.tools)
  ask                       form elicitation (defaults); returns action + content
  ask_url                   URL elicitation; session era then sends
                            notifications/elicitation/complete
  needs_url                 session era: -32042 first, success when called again
  roots, roots_changes      roots/list; count of roots/list_changed received
  multi                     sampling + elicitation + roots
  state_only, forever       stateless era: requestState-only input_required
                            (twice / always)
  mrtr_ids                  ids and rounds of every MRTR tool call
  progress {steps, delay_ms|interval_ms}, flood {count}
                            progress + log lines (logging/setLevel or _meta
                            io.modelcontextprotocol/logLevel)
  weather, bad_weather      structured output matching / violating outputSchema
  add_tool                  adds dynamic_<n>; notifications/tools/list_changed to
                            session-era connections and opted-in listen streams
  touch {uri}               notifications/resources/updated to resources/subscribe
                            subscribers (session era) and listen streams
  close_subscriptions       ends every subscriptions/listen stream with its result
  hits {method?}            requests served per method (proves a cache hit)
  slow_task {ms}, must_task {ms}
                            tasks: taskSupport optional / required. Session era:
                            params.task -> {task}; tasks/get|result|list|cancel,
                            notifications/tasks/status. Stateless era (client
                            declares extensions io.modelcontextprotocol/tasks):
                            resultType \"task\"; tasks/get|update|cancel,
                            notifications/tasks on listen streams (taskIds)
  input_task                stateless-era task that is input_required until
                            tasks/update answers its \"ask\" elicitation
Session era: server->client requests travel on the connection (stdio, /sse,
/ws), on the POST's SSE stream, or on the GET stream when the POST is
answered with JSON. Stateless era: InputRequiredResult (MRTR).
";

/// The HTTP flags, which only an HTTP front end (switchboard-testkit's
/// `serve_http`) acts on; its `--help` prints them after [`USAGE`].
#[doc(hidden)]
pub const HTTP_USAGE: &str = "\
HTTP flags (switchboard-testkit: Streamable HTTP at /mcp, legacy HTTP+SSE at
/sse + /messages, WebSocket at /ws):
  --http ADDR                   serve HTTP on ADDR (e.g. 127.0.0.1:0) instead of
                                stdio; prints `listening on http://IP:PORT`
  --transports LIST             HTTP endpoints to serve: streamable,sse,ws
                                (default: all three; others answer 404)
  --http-response json|sse      how POST /mcp answers requests (default: json)
  --require-header 'NAME: VALUE'
                                HTTP POSTs without this header get 401 (repeatable)
  --auth                        HTTP: serve a built-in OAuth 2.1 authorization
                                server (issuer printed on a second stdout line,
                                `auth issuer URL`); /mcp, /sse, /messages, /ws
                                then need a Bearer token with scope mcp:read,
                                the admin_echo tool also mcp:admin (403 step-up)
  --auth-token-ttl-secs N       access-token lifetime (default: 3600; implies --auth)
  --auth-quirk Q                misbehave (repeatable; implies --auth):
                                refresh-200-error: refresh answers 200
                                  {\"error\":\"invalid_refresh_token\"};
                                refresh-200-error-object: the same with
                                  {\"error\":{\"code\":…,\"message\":…}};
                                confidential-clients: registration gives every
                                  client a secret (client_secret_basic);
                                step-up-loop: admin_echo is refused (403
                                  insufficient_scope) whatever the scopes
  --auth-issuer-suffix X        issuer is http://IP:PORT/X (implies --auth)
  --auth-resource URL           tokens may also be asked for resource URL (aud URL;
                                repeatable; implies --auth)
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
    /// HTTP: add the `forget_session` tool, which makes the server forget the
    /// current Streamable HTTP session (later requests with its id get 404).
    SessionLoss,
    /// HTTP, SSE response mode: the `progress` tool's response stream is cut
    /// after a priming event and the first progress event; the rest is
    /// delivered when the client resumes with `GET /mcp` + `Last-Event-ID`.
    CutStream,
    /// HTTP: `GET /mcp` answers 405 (no standalone SSE stream).
    NoGetStream,
}

impl FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "garbage" => Ok(Fault::Garbage),
            "exit-before-init" => Ok(Fault::ExitBeforeInit),
            "repeat-cursor" => Ok(Fault::RepeatCursor),
            "no-tools-capability" => Ok(Fault::NoToolsCapability),
            "session-loss" => Ok(Fault::SessionLoss),
            "cut-stream" => Ok(Fault::CutStream),
            "no-get-stream" => Ok(Fault::NoGetStream),
            other => Err(format!(
                "unknown --fault {other:?} (expected garbage, exit-before-init, \
                 repeat-cursor, no-tools-capability, session-loss, cut-stream \
                 or no-get-stream)"
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
            Fault::SessionLoss => "session-loss",
            Fault::CutStream => "cut-stream",
            Fault::NoGetStream => "no-get-stream",
        })
    }
}

/// An HTTP endpoint family served with `--http` (`--transports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpTransport {
    /// Streamable HTTP at `/mcp`.
    Streamable,
    /// Legacy HTTP+SSE (2024-11-05): `GET /sse` + `POST /messages?session=…`.
    Sse,
    /// WebSocket at `/ws` (subprotocol `mcp`, one message per text frame).
    Ws,
}

/// All HTTP transports, the default for `--transports`.
pub const ALL_HTTP_TRANSPORTS: [HttpTransport; 3] = [
    HttpTransport::Streamable,
    HttpTransport::Sse,
    HttpTransport::Ws,
];

impl FromStr for HttpTransport {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "streamable" => Ok(HttpTransport::Streamable),
            "sse" => Ok(HttpTransport::Sse),
            "ws" => Ok(HttpTransport::Ws),
            other => Err(format!(
                "unknown transport {other:?} (expected streamable, sse or ws)"
            )),
        }
    }
}

impl fmt::Display for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HttpTransport::Streamable => "streamable",
            HttpTransport::Sse => "sse",
            HttpTransport::Ws => "ws",
        })
    }
}

/// How `POST /mcp` answers a request (`--http-response`), unless the
/// client's `Accept` header only allows the other one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpResponseMode {
    /// One `application/json` body.
    #[default]
    Json,
    /// A `text/event-stream` carrying progress notifications, then the response.
    Sse,
}

impl FromStr for HttpResponseMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "json" => Ok(HttpResponseMode::Json),
            "sse" => Ok(HttpResponseMode::Sse),
            other => Err(format!(
                "invalid --http-response value {other:?} (expected json or sse)"
            )),
        }
    }
}

impl fmt::Display for HttpResponseMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HttpResponseMode::Json => "json",
            HttpResponseMode::Sse => "sse",
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
    /// Tools with these names, each answering `NAME called`
    /// (`--extra-tool`, repeatable).
    pub named_tools: Vec<String>,
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
    /// Serve HTTP on this address instead of stdio (`--http`).
    pub http: Option<String>,
    /// HTTP endpoints that exist (`--transports`); the others answer 404.
    pub transports: Vec<HttpTransport>,
    /// How `POST /mcp` answers requests (`--http-response`).
    pub http_response: HttpResponseMode,
    /// Headers (name, value) every HTTP POST must carry, else 401
    /// (`--require-header`, repeatable).
    pub require_headers: Vec<(String, String)>,
    /// Stateless era caching hint `ttlMs` on cacheable results
    /// (`--cache-ttl-ms`); `None`: no hints.
    pub cache_ttl_ms: Option<u64>,
    /// `cacheScope` for every cacheable result (`--cache-scope`); `None`:
    /// `public` for discover and lists, `private` for `resources/read`.
    pub cache_scope: Option<String>,
    /// The built-in OAuth authorization server and bearer-token checks on
    /// the HTTP endpoints (`--auth`); `None`: no authorization.
    pub auth: Option<AuthConfig>,
    /// Offer the skills extension (`--skills`); `skills_tamper` implies it.
    pub skills: bool,
    /// Serve `pdf-processing` not as listed (`--skills-tamper`).
    pub skills_tamper: Option<crate::skills::Tamper>,
    /// `directoryRead` and `resources/directory/read`, and the dynamic
    /// skill `live-notes` (`--skills-directories`).
    pub skills_directories: bool,
    /// Serve the conformance suite's server fixture instead of the catalog
    /// (`--suite-fixture`).
    pub suite_fixture: bool,
    /// MCP Apps: tools with `_meta.ui` and their `ui://` views (`--apps`).
    pub apps: bool,
    /// An app that tests its host (`--probe-app`).
    pub probe_app: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            era: Era::Dual,
            modern_versions: vec![DEFAULT_MODERN_VERSION.to_owned()],
            legacy_version: None,
            page_size: None,
            extra_tools: 0,
            named_tools: Vec::new(),
            faults: Vec::new(),
            stderr_flood: 0,
            stderr_lines: Vec::new(),
            record: None,
            name: DEFAULT_SERVER_NAME.to_owned(),
            http: None,
            transports: ALL_HTTP_TRANSPORTS.to_vec(),
            http_response: HttpResponseMode::Json,
            require_headers: Vec::new(),
            cache_ttl_ms: None,
            cache_scope: None,
            auth: None,
            skills: false,
            skills_tamper: None,
            skills_directories: false,
            suite_fixture: false,
            apps: false,
            probe_app: false,
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
                "--extra-tool" => config.named_tools.push(value()?),
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
                "--http" => config.http = Some(value()?),
                "--transports" => {
                    let v = value()?;
                    let mut transports = Vec::new();
                    for t in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        let t: HttpTransport = t.parse()?;
                        if !transports.contains(&t) {
                            transports.push(t);
                        }
                    }
                    if transports.is_empty() {
                        return Err("--transports requires at least one transport".into());
                    }
                    config.transports = transports;
                }
                "--http-response" => config.http_response = value()?.parse()?,
                "--require-header" => {
                    let v = value()?;
                    config.require_headers.push(parse_header(&v)?);
                }
                "--cache-ttl-ms" => {
                    config.cache_ttl_ms = Some(parse_num(&flag, &value()?)? as u64);
                }
                "--cache-scope" => {
                    let v = value()?;
                    if v != "public" && v != "private" {
                        return Err(format!(
                            "invalid --cache-scope value {v:?} (expected public or private)"
                        ));
                    }
                    config.cache_scope = Some(v);
                }
                "--skills" => config.skills = true,
                "--suite-fixture" => config.suite_fixture = true,
                "--apps" => config.apps = true,
                "--probe-app" => config.probe_app = true,
                "--skills-directories" => {
                    config.skills_directories = true;
                    config.skills = true;
                }
                "--skills-tamper" => {
                    config.skills_tamper = Some(value()?.parse()?);
                    config.skills = true;
                }
                "--auth" => {
                    config.auth.get_or_insert_with(AuthConfig::default);
                }
                "--auth-token-ttl-secs" => {
                    let secs = parse_num(&flag, &value()?)? as u64;
                    config
                        .auth
                        .get_or_insert_with(AuthConfig::default)
                        .token_ttl_secs = secs;
                }
                "--auth-quirk" => {
                    let quirk = value()?.parse()?;
                    let auth = config.auth.take().unwrap_or_default().with_quirk(quirk);
                    config.auth = Some(auth);
                }
                "--auth-issuer-suffix" => {
                    let suffix = check_issuer_suffix(&value()?)?;
                    config
                        .auth
                        .get_or_insert_with(AuthConfig::default)
                        .issuer_suffix = Some(suffix);
                }
                "--auth-resource" => {
                    let resource = value()?;
                    if !resource.starts_with("http://") && !resource.starts_with("https://") {
                        return Err(format!("--auth-resource expects a URL, got {resource:?}"));
                    }
                    config
                        .auth
                        .get_or_insert_with(AuthConfig::default)
                        .resources
                        .push(resource);
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        if config.suite_fixture {
            config = config.with_suite_fixture();
        }
        Ok(config)
    }

    /// Serve the official MCP conformance suite's server fixture (its
    /// `test_*` tools and prompts, `test://` resources) instead of the
    /// catalog, with caching hints unless [`ServerConfig::with_cache_ttl_ms`]
    /// set others.
    pub fn with_suite_fixture(mut self) -> Self {
        self.suite_fixture = true;
        self.cache_ttl_ms
            .get_or_insert(crate::fixture::DEFAULT_CACHE_TTL_MS);
        self
    }

    /// Whether the HTTP transport `t` is enabled.
    pub fn has_transport(&self, t: HttpTransport) -> bool {
        self.transports.contains(&t)
    }

    /// Serve HTTP on `addr` (read by switchboard-testkit's `run_stdio_main`;
    /// this crate's [`run_stdio_main`](crate::run_stdio_main) refuses it).
    pub fn with_http(mut self, addr: impl Into<String>) -> Self {
        self.http = Some(addr.into());
        self
    }

    /// Replace the enabled HTTP transports.
    pub fn with_transports<I: IntoIterator<Item = HttpTransport>>(mut self, transports: I) -> Self {
        self.transports = transports.into_iter().collect();
        self
    }

    /// Set how `POST /mcp` answers requests.
    pub fn with_http_response(mut self, mode: HttpResponseMode) -> Self {
        self.http_response = mode;
        self
    }

    /// Require this header (exact value) on every HTTP POST, else 401.
    pub fn with_require_header(
        mut self,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        self.require_headers.push((name.into(), value.into()));
        self
    }

    /// Add stateless-era caching hints (`ttlMs`) to cacheable results.
    pub fn with_cache_ttl_ms(mut self, ttl_ms: u64) -> Self {
        self.cache_ttl_ms = Some(ttl_ms);
        self
    }

    /// Serve the built-in OAuth authorization server and require its
    /// bearer tokens on the HTTP endpoints.
    pub fn with_auth(mut self, auth: AuthConfig) -> Self {
        self.auth = Some(auth);
        self
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

    /// Add a tool named `name` that answers `name called`.
    pub fn with_named_tool(mut self, name: impl Into<String>) -> Self {
        self.named_tools.push(name.into());
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

fn parse_header(v: &str) -> Result<(String, String), String> {
    match v.split_once(':') {
        Some((name, value))
            if !name.trim().is_empty()
                && name
                    .trim()
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)) =>
        {
            Ok((name.trim().to_owned(), value.trim().to_owned()))
        }
        _ => Err(format!("--require-header expects 'Name: value', got {v:?}")),
    }
}
