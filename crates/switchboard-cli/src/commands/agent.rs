//! `switchboard agent PROMPT`: a one-shot agent — the prompt to a model of
//! any of the four APIs, with every configured server's tools (through one
//! hub: the trust gate, `[policy.tools]` and its questions as for `call`),
//! each tool call said on stderr as it happens, the answer streamed to
//! stdout.

use std::sync::Arc;

use anyhow::anyhow;
use serde_json::json;
use switchboard_models::Provider;
use switchboard_models::agent::{Agent, AgentEvent};
use switchboard_models::chat::ChatClient;

use crate::cli::AgentArgs;
use crate::commands::Run;
use crate::configure::Context;
use crate::failure::Failure;
use crate::term::{output, sanitize};

/// Each API's name on the command line, key and base URL variables,
/// default endpoint and model.
struct Api {
    name: &'static str,
    provider: Provider,
    keys: &'static [&'static str],
    base_var: &'static str,
    base: &'static str,
    model: Option<&'static str>,
}

const APIS: [Api; 4] = [
    Api {
        name: "anthropic",
        provider: Provider::Anthropic,
        keys: &["ANTHROPIC_API_KEY"],
        base_var: "ANTHROPIC_BASE_URL",
        base: "https://api.anthropic.com",
        model: Some("claude-sonnet-4-5"),
    },
    Api {
        name: "gemini",
        provider: Provider::Gemini,
        keys: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        base_var: "GOOGLE_GEMINI_BASE_URL",
        base: "https://generativelanguage.googleapis.com",
        model: Some("gemini-2.5-flash"),
    },
    Api {
        name: "openai",
        provider: Provider::OpenAiResponses,
        keys: &["OPENAI_API_KEY"],
        base_var: "OPENAI_BASE_URL",
        base: "https://api.openai.com/v1",
        model: Some("gpt-5-mini"),
    },
    Api {
        name: "openai-chat",
        provider: Provider::OpenAiChat,
        keys: &["OPENAI_API_KEY"],
        base_var: "OPENAI_BASE_URL",
        base: "https://api.openai.com/v1",
        model: None,
    },
];

/// The names `--provider` takes.
pub(crate) const PROVIDERS: [&str; 4] = ["openai", "openai-chat", "anthropic", "gemini"];

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The model client `args` and the environment say.
fn client(args: &AgentArgs) -> Result<ChatClient, Failure> {
    let api = match &args.provider {
        Some(name) => APIS.iter().find(|api| api.name == name).ok_or_else(|| {
            Failure::usage(anyhow!("--provider is one of {}", PROVIDERS.join(", ")))
        })?,
        None => APIS
            .iter()
            .find(|api| api.keys.iter().any(|key| env(key).is_some()))
            .ok_or_else(|| {
                Failure::usage(anyhow!(
                    "which model? Set ANTHROPIC_API_KEY, GEMINI_API_KEY or OPENAI_API_KEY, or say \
                     --provider {} (with --base-url for a local server such as Ollama)",
                    PROVIDERS.join("|")
                ))
            })?,
    };
    let key = api.keys.iter().find_map(|key| env(key));
    let base = args
        .base_url
        .clone()
        .or_else(|| env(api.base_var))
        .unwrap_or_else(|| api.base.to_owned());
    if key.is_none() && base == api.base {
        return Err(Failure::usage(anyhow!(
            "{} needs an API key: set {} (or give --base-url for an endpoint that needs none)",
            api.base,
            api.keys.join(" or ")
        )));
    }
    let model = args
        .model
        .clone()
        .or_else(|| api.model.map(str::to_owned))
        .ok_or_else(|| {
            Failure::usage(anyhow!(
                "--provider {} needs --model (the name the server knows the model by)",
                api.name
            ))
        })?;
    ChatClient::builder(base, model)
        .provider(api.provider)
        .api_key(key)
        .build()
        .map_err(|e| Failure::usage(anyhow::Error::new(e)))
}

/// Runs the agent; 0 when it answered.
pub(crate) async fn run(run: Run<'_>, args: AgentArgs) -> Result<u8, Failure> {
    let model = client(&args)?;
    let context = Context::new(run.config.clone())?;
    let opened = crate::hub::open_all(
        &context,
        args.only.as_deref(),
        "tools",
        args.json,
        run.creds,
        None,
        run.servers,
    )
    .await?;
    let json = args.json;
    let streamed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let wrote = streamed.clone();
    let agent = Agent::builder(opened.hub.clone(), model)
        .max_rounds(args.max_rounds)
        .observer(move |event| say(event, json, &wrote))
        .build()
        .map_err(|e| Failure::usage(anyhow::Error::new(e)))?;
    let outcome = agent.run(&args.prompt).await;
    opened.hub.shutdown().await;
    let outcome = outcome.map_err(|e| {
        if streamed.load(std::sync::atomic::Ordering::Relaxed) {
            println!();
        }
        Failure::usage(anyhow::Error::new(e))
    })?;
    if json {
        output::print_json(&json!({
            "text": outcome.text,
            "rounds": outcome.rounds,
            "usage": {"input": outcome.usage.0, "output": outcome.usage.1},
            "calls": outcome.calls.iter().map(|c| json!({
                "round": c.round,
                "name": c.name,
                "server": c.server,
                "tool": c.tool,
                "is_error": c.is_error,
            })).collect::<Vec<_>>(),
        }));
    } else if !streamed.load(std::sync::atomic::Ordering::Relaxed) {
        // An endpoint that did not stream: the answer whole.
        println!("{}", sanitize::term(&outcome.text));
    } else {
        println!();
    }
    Ok(0)
}

/// What the agent does, as it does it: tool calls and their results on
/// stderr, the answer's text on stdout (without `--json`).
fn say(event: &AgentEvent, json: bool, streamed: &std::sync::atomic::AtomicBool) {
    use std::io::Write as _;
    match event {
        AgentEvent::Delta { text, .. } if !json => {
            streamed.store(true, std::sync::atomic::Ordering::Relaxed);
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{}", sanitize::term(text));
            let _ = out.flush();
        }
        AgentEvent::Call {
            name,
            server,
            arguments,
            ..
        } => {
            let arguments = match arguments {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let arguments: String = arguments.chars().take(200).collect();
            eprintln!(
                "→ {}{} {}",
                sanitize::line(name),
                server
                    .as_deref()
                    .map(|s| format!(" ({})", sanitize::line(s)))
                    .unwrap_or_default(),
                sanitize::line(&arguments)
            );
        }
        AgentEvent::Result { call, summary } => eprintln!(
            "← {} {}: {}",
            sanitize::line(&call.name),
            if call.is_error { "failed" } else { "ok" },
            sanitize::line(summary)
        ),
        _ => {}
    }
}
