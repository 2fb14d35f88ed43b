//! A [rig](https://docs.rs/rig-core) agent with your MCP servers' tools and
//! skills, on any provider rig speaks: OpenAI (Responses), any Chat
//! Completions server (OpenAI, llama.cpp, Ollama, vLLM …), Anthropic or
//! Gemini.
//!
//! ```text
//! OPENAI_API_KEY=sk-… cargo run -p switchboard-models --features rig \
//!     --example rig_agent -- --provider openai --model gpt-5.2 \
//!     "Which files in this directory mention tokio?"
//!
//! cargo run -p switchboard-models --features rig --example rig_agent -- \
//!     --provider openai-chat --base-url http://127.0.0.1:8080/v1 \
//!     --model qwen2.5 "What is 2 + 3? Use a tool."
//! ```
//!
//! The servers are the ones you have configured (switchboard's own files
//! and those of Claude Code, VS Code, Cursor … as `switchboard list` shows
//! them), only those of `--config FILE`, or the ones given with
//! `--server`. The hub runs them; `switchboard_models::rig` turns their
//! tools into rig tools, keeps them in step with the servers' tool lists
//! (`ToolSync`) and answers calls of tools that do not exist
//! (`UnknownTools`). Each tool call is printed as it is made (`→`) and
//! answered (`←`), then the model's answer.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use rig_agent::agent::{AgentHook, DispatchAction, DispatchEvent, OutcomeAction, OutcomeEvent};
use rig_agent::tool::server::ToolServer;
use rig_agent::{Agent, AgentBuilder, HookContext};
use rig_core::DynModel;
use rig_core::operation::Completion;
use rig_core::providers::{anthropic, gemini, openai};
use rig_core::wasm_compat::WasmCompatSend;
use switchboard_hub::config::{LoadOptions, Locations, load};
use switchboard_hub::hub::{ToolAnswer, ToolApprover, ToolAsk};
use switchboard_hub::{Dialect, HttpKind, Hub, Origin, Scope, ServerConfig, TransportConfig};
use switchboard_models::rig::{RigOptions, ToolSync, UnknownTools};
use switchboard_models::{MediaStore, ResultOptions};
use tokio::sync::mpsc;

const USAGE: &str = "\
A rig agent with MCP servers' tools, on any provider.

Usage: rig_agent --provider API --model NAME [options] PROMPT…

Options:
  --provider API        openai (the Responses API), openai-chat (Chat
                        Completions: OpenAI or any compatible server),
                        anthropic or gemini
  --model NAME          the model to ask
  --base-url URL        another API root: http://127.0.0.1:8080/v1 for
                        openai(-chat), the host for anthropic and gemini
  --api-key-env VAR     read the API key from $VAR (default OPENAI_API_KEY,
                        ANTHROPIC_API_KEY or GEMINI_API_KEY); needed unless
                        --base-url is given
  --config FILE         use only the servers of FILE (any client's format)
                        instead of every configured server
  --server [NAME=]SPEC  use only this server (may be repeated): a URL
                        (http://…/mcp) or a command line (split at spaces);
                        NAME defaults to `server`
  --max-turns N         most requests to the model (default 16)
  --max-tokens N        most tokens of one answer (default: the provider's;
                        4096 for anthropic, which needs one)
  --system TEXT         a system prompt
  --media DIR           where images, audio and files the model cannot take
                        inline are saved (a new folder under DIR per run;
                        default: the system's temporary folder)
  --confirm             ask on the terminal before each call the hub's tool
                        policy asks about (without it, such calls are
                        refused)
  --no-skills           do not offer the servers' skills
  -h, --help            this text
";

/// The APIs rig speaks that `--provider` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    /// OpenAI's Responses API.
    OpenAi,
    /// Chat Completions.
    OpenAiChat,
    /// Anthropic's Messages API.
    Anthropic,
    /// Gemini's generateContent.
    Gemini,
}

impl std::str::FromStr for Api {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "openai" => Api::OpenAi,
            "openai-chat" => Api::OpenAiChat,
            "anthropic" => Api::Anthropic,
            "gemini" => Api::Gemini,
            _ => {
                return Err(format!(
                    "unknown provider `{s}`: expected openai, openai-chat, anthropic or gemini"
                ));
            }
        })
    }
}

impl Api {
    /// The variable the provider's key is usually in.
    fn key_env(self) -> &'static str {
        match self {
            Api::OpenAi | Api::OpenAiChat => "OPENAI_API_KEY",
            Api::Anthropic => "ANTHROPIC_API_KEY",
            Api::Gemini => "GEMINI_API_KEY",
        }
    }
}

/// The command line, parsed.
#[derive(Debug, Default)]
struct Args {
    provider: Option<Api>,
    model: Option<String>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    config: Option<PathBuf>,
    servers: Vec<String>,
    max_turns: Option<usize>,
    max_tokens: Option<u64>,
    system: Option<String>,
    media: Option<PathBuf>,
    confirm: bool,
    no_skills: bool,
    help: bool,
    prompt: Vec<String>,
}

fn parse(args: Vec<String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            parsed.prompt.extend(args.by_ref());
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            parsed.prompt.push(arg);
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.into())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs {what}"))
        };
        match flag.as_str() {
            "-h" | "--help" => parsed.help = true,
            "--confirm" => parsed.confirm = true,
            "--no-skills" => parsed.no_skills = true,
            "--provider" => parsed.provider = Some(value("a provider")?.parse()?),
            "--model" => parsed.model = Some(value("a model name")?),
            "--base-url" => parsed.base_url = Some(value("a URL")?),
            "--api-key-env" => parsed.api_key_env = Some(value("a variable name")?),
            "--config" => parsed.config = Some(value("a file")?.into()),
            "--server" => parsed.servers.push(value("a URL or a command")?),
            "--system" => parsed.system = Some(value("a prompt")?),
            "--media" => parsed.media = Some(value("a folder")?.into()),
            "--max-turns" => {
                let n = value("a number")?;
                parsed.max_turns = Some(
                    n.parse()
                        .map_err(|_| format!("--max-turns needs a number, not `{n}`"))?,
                );
            }
            "--max-tokens" => {
                let n = value("a number")?;
                parsed.max_tokens = Some(
                    n.parse()
                        .map_err(|_| format!("--max-tokens needs a number, not `{n}`"))?,
                );
            }
            _ => return Err(format!("unknown option `{arg}` (see --help)")),
        }
    }
    Ok(parsed)
}

/// `--server [NAME=]SPEC`.
pub(crate) fn server_from_flag(spec: &str) -> Result<ServerConfig, String> {
    let (name, spec) = match spec.split_once('=') {
        Some((name, rest))
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            (name, rest)
        }
        _ => ("server", spec),
    };
    let transport = if spec.starts_with("http://") || spec.starts_with("https://") {
        TransportConfig::Http {
            url: spec.to_owned(),
            headers: BTreeMap::new(),
            kind: HttpKind::Auto,
        }
    } else {
        let mut words = spec.split_whitespace().map(str::to_owned);
        let command = words
            .next()
            .ok_or("--server needs a URL or a command line")?;
        TransportConfig::Stdio {
            command,
            args: words.collect(),
            env: BTreeMap::new(),
            cwd: None,
        }
    };
    let origin = Origin {
        file: "--server".into(),
        dialect: Dialect::Switchboard,
        scope: Scope::Explicit,
    };
    Ok(ServerConfig::new(name, transport, origin))
}

/// The configured servers (all of them, or only `--config FILE`'s),
/// expanded and ready to run; problems are printed.
fn configured(config: Option<PathBuf>, out: &mut impl Write) -> Result<Vec<ServerConfig>, String> {
    let locations = Locations::from_process()?;
    let options = match config {
        Some(file) => LoadOptions::new().with_config(file).strict(true),
        None => LoadOptions::new(),
    };
    let loaded = load(&locations, &options);
    for diagnostic in &loaded.diagnostics {
        if diagnostic.is_error() {
            let _ = writeln!(out, "config: {diagnostic}");
        }
    }
    if loaded.has_errors() && loaded.servers.is_empty() {
        return Err("the configuration could not be read (see above)".into());
    }
    let mut expander = loaded.expander(&locations);
    let mut servers = Vec::new();
    for server in loaded.servers.iter().filter(|s| s.enabled) {
        match expander.expand(server) {
            Ok(expanded) => servers.push(expanded.config),
            Err(error) => {
                let _ = writeln!(out, "server `{}` left out: {error}", server.name);
            }
        }
    }
    Ok(servers)
}

/// The model `name` of `api`, at `base_url` when given, with `key`.
pub(crate) fn model(
    api: Api,
    name: &str,
    base_url: Option<&str>,
    key: String,
) -> DynModel<Completion> {
    match api {
        Api::OpenAi | Api::OpenAiChat => {
            let mut config = openai::OpenAIConfig::new(key);
            if let Some(url) = base_url {
                config = config.with_base_url(url.trim_end_matches('/'));
            }
            let client = config.client();
            if api == Api::OpenAi {
                client.responses(name).into()
            } else {
                client.chat(name).into()
            }
        }
        Api::Anthropic => {
            let mut config = anthropic::AnthropicConfig::new(key);
            if let Some(url) = base_url {
                config = config.with_base_url(url);
            }
            config.client().completion(name).into()
        }
        Api::Gemini => {
            let mut config = gemini::GeminiConfig::new(key);
            if let Some(url) = base_url {
                config = config.with_base_url(url.trim_end_matches('/'));
            }
            config.client().completion(name).into()
        }
    }
}

/// How the agent is built, from the command line.
pub(crate) struct Settings {
    /// Most requests to the model.
    pub(crate) max_turns: usize,
    /// Most tokens of one answer.
    pub(crate) max_tokens: Option<u64>,
    /// The system prompt.
    pub(crate) system: Option<String>,
    /// Where media go.
    pub(crate) media: Option<Arc<MediaStore>>,
    /// Whether the servers' skills are offered.
    pub(crate) skills: bool,
    /// Who answers the tool policy's `ask`.
    pub(crate) approver: Option<Arc<dyn ToolApprover>>,
}

/// Prints each tool call and its answer, one line each, through `lines`.
struct Printer {
    lines: mpsc::UnboundedSender<String>,
}

impl AgentHook for Printer {
    fn on_dispatch(
        &self,
        _ctx: &HookContext,
        event: DispatchEvent<'_>,
    ) -> impl Future<Output = DispatchAction> + WasmCompatSend {
        if let (Some(name), Some(arguments)) = (event.tool_name(), event.tool_args()) {
            let _ = self.lines.send(format!("→ {name} {arguments}"));
        }
        async { DispatchAction::Proceed }
    }

    fn on_outcome(
        &self,
        _ctx: &HookContext,
        event: OutcomeEvent<'_>,
    ) -> impl Future<Output = OutcomeAction> + WasmCompatSend {
        if let (Some(name), Some(result)) = (event.tool_name(), event.tool_result()) {
            let text = result.output().render();
            let summary = shorten(&text, 200);
            let error = if result.is_error() { " (error)" } else { "" };
            let _ = self.lines.send(format!("← {name}{error}: {summary}"));
        }
        async { OutcomeAction::Proceed }
    }
}

fn shorten(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > max {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// A rig agent with `hub`'s tools (and skills), kept in step with the hub
/// by the returned [`ToolSync`] (keep it while the agent runs); tool calls
/// are told through `lines`.
pub(crate) async fn agent(
    hub: &Hub,
    model: DynModel<Completion>,
    settings: Settings,
    lines: mpsc::UnboundedSender<String>,
) -> (Agent, ToolSync) {
    let mut options = RigOptions::default()
        .results(ResultOptions::default().media(settings.media))
        .skills(settings.skills.then(Default::default));
    if let Some(approver) = settings.approver {
        options = options.approver(approver);
    }
    let registry = ToolServer::new().run();
    let sync = ToolSync::start(hub, options, registry.clone()).await;
    let mut builder = AgentBuilder::new(model)
        .default_max_turns(settings.max_turns)
        .add_hook(UnknownTools)
        .add_hook(Printer { lines });
    if let Some(system) = settings.system {
        builder = builder.preamble(system);
    }
    if let Some(max_tokens) = settings.max_tokens {
        builder = builder.max_tokens(max_tokens);
    }
    (builder.tool_server_handle(registry).build(), sync)
}

/// Runs `agent` on `prompt`, printing the tool calls told through
/// `printed` as they happen, then the answer; the answer.
pub(crate) async fn ask(
    agent: &Agent,
    prompt: &str,
    mut printed: mpsc::UnboundedReceiver<String>,
    out: &mut impl Write,
) -> Result<String, String> {
    let mut work = std::pin::pin!(agent.prompt(prompt).run());
    let result = loop {
        tokio::select! {
            result = &mut work => break result,
            Some(line) = printed.recv() => {
                let _ = writeln!(out, "{line}");
            }
        }
    };
    while let Ok(line) = printed.try_recv() {
        let _ = writeln!(out, "{line}");
    }
    let answer = result.map_err(|e| chain(&e))?.output();
    let _ = writeln!(out, "\n{answer}");
    Ok(answer)
}

/// An error and its causes on one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Runs the agent as the command line says, printing to `out`; the
/// model's answer (`None` for `--help`) or what went wrong.
pub(crate) async fn run(args: Vec<String>, out: &mut impl Write) -> Result<Option<String>, String> {
    let args = parse(args)?;
    if args.help {
        let _ = write!(out, "{USAGE}");
        return Ok(None);
    }
    let api = args.provider.ok_or("--provider is required (see --help)")?;
    let name = args.model.ok_or("--model is required (see --help)")?;
    let prompt = args.prompt.join(" ");
    if prompt.trim().is_empty() {
        return Err("a prompt is required (see --help)".into());
    }
    let key_env = args.api_key_env.as_deref().unwrap_or(api.key_env());
    let key = match (std::env::var(key_env).ok(), &args.base_url) {
        (Some(key), _) if !key.is_empty() => key,
        // A local server or a proxy often takes no key.
        (_, Some(_)) => String::new(),
        (_, None) => {
            return Err(format!(
                "set ${key_env} to the API key (or give --base-url for an endpoint that needs none)"
            ));
        }
    };
    let model = model(api, &name, args.base_url.as_deref(), key);

    let servers = match (args.servers.is_empty(), args.config) {
        (false, Some(_)) => return Err("give --config or --server, not both".into()),
        (false, None) => args
            .servers
            .iter()
            .map(|s| server_from_flag(s))
            .collect::<Result<Vec<_>, _>>()?,
        (true, config) => configured(config, out)?,
    };
    let hub = Hub::builder()
        .servers(servers)
        .persist(false)
        .build()
        .map_err(|e| chain(&e))?;
    let base = args
        .media
        .unwrap_or_else(|| std::env::temp_dir().join("switchboard-media"));
    let media = MediaStore::session(&base)
        .map_err(|e| format!("cannot make a media folder under {}: {e}", base.display()))?;
    let settings = Settings {
        max_turns: args.max_turns.unwrap_or(16),
        // Anthropic's API needs it.
        max_tokens: args.max_tokens.or((api == Api::Anthropic).then_some(4096)),
        system: args.system,
        media: Some(Arc::new(media)),
        skills: !args.no_skills,
        approver: args.confirm.then(|| Arc::new(confirm_on_terminal) as _),
    };
    let result = started(&hub, model, settings, &prompt, out).await;
    hub.shutdown().await;
    result.map(Some)
}

/// Starts the hub's servers and asks the agent.
async fn started(
    hub: &Hub,
    model: DynModel<Completion>,
    settings: Settings,
    prompt: &str,
    out: &mut impl Write,
) -> Result<String, String> {
    let report = hub.start().await.map_err(|e| chain(&e))?;
    for (server, state) in &report.not_ready {
        let _ = writeln!(out, "server `{server}` is not ready: {state}");
    }
    let (lines, printed) = mpsc::unbounded_channel();
    let (agent, _sync) = agent(hub, model, settings, lines).await;
    let _ = writeln!(
        out,
        "{} server(s) ready, {} tool(s)",
        report.ready.len(),
        hub.tools().len()
    );
    ask(&agent, prompt, printed, out).await
}

/// `--confirm`: the terminal's yes or no for a call the hub's tool policy
/// asks about.
fn confirm_on_terminal(ask: ToolAsk) -> switchboard::BoxFuture<'static, ToolAnswer> {
    let arguments = ask.arguments.as_ref().map_or_else(
        || "{}".to_owned(),
        |a| serde_json::Value::Object(a.clone()).to_string(),
    );
    let question = format!(
        "run `{}` on server `{}` with {arguments} ({})? [y/N] ",
        ask.tool, ask.server, ask.rule
    );
    Box::pin(async move {
        // The terminal is read on a blocking thread; the answer is awaited.
        let yes = tokio::task::spawn_blocking(move || {
            eprint!("{question}");
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).is_ok()
                && matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
        })
        .await
        .unwrap_or(false);
        if yes {
            ToolAnswer::Once
        } else {
            ToolAnswer::Refuse("the user said no".into())
        }
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut out = std::io::stdout();
    match run(std::env::args().skip(1).collect(), &mut out).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("rig_agent: {error}");
            ExitCode::FAILURE
        }
    }
}
