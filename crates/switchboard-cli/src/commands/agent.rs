//! `switchboard agent PROMPT`: a one-shot agent — the prompt to a model of
//! any of the four APIs, with every configured server's tools (through one
//! hub: the trust gate, `[policy.tools]` and its questions as for `call`),
//! each tool call said on stderr as it happens, the answer streamed to
//! stdout.

use std::sync::Arc;

use anyhow::anyhow;
use serde_json::json;
use switchboard_models::agent::{Agent, AgentEvent};
use switchboard_models::chat::ChatClient;

use crate::cli::AgentArgs;
use crate::commands::Run;
use crate::configure::Context;
use crate::failure::Failure;
use crate::term::{output, sanitize};

/// The model client `args` and the environment say.
fn client(args: &AgentArgs) -> Result<ChatClient, Failure> {
    let endpoint = crate::providers::resolve(
        args.provider.as_deref(),
        args.base_url.clone(),
        None,
        args.model.clone(),
    )
    .map_err(|why| Failure::usage(anyhow!("{why}")))?;
    ChatClient::builder(endpoint.base, endpoint.model)
        .provider(endpoint.api.provider)
        .api_key(endpoint.key)
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
