//! The agent loop's own cost per tool round trip: a model that answers at
//! once (in process, no HTTP: each turn asks for one `echo` call until the
//! last), and an MCP server in this process over loopback HTTP (the
//! testkit's). The loop's overhead is a round's time less the same call
//! made straight through the hub, measured interleaved in one run. For
//! reference, the same rounds with the real client against the testkit's
//! fake provider endpoint (streamed Chat Completions over loopback HTTP).
//!
//! ```text
//! cargo bench -p switchboard-models --features agent --bench agent_loop   # or: -- RUNS
//! ```
//!
//! The target: ≤ 200 µs of loop overhead per round trip, on every API.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_hub::Hub;
use switchboard_hub::config::{Dialect, HttpKind, Origin, Scope, ServerConfig, TransportConfig};
use switchboard_models::agent::Agent;
use switchboard_models::chat::{ChatClient, ChatError};
use switchboard_models::model::{BoxFuture, Model, ModelCall, ModelRequest, ModelTurn};
use switchboard_models::{Provider, Toolset, ToolsetOptions};
use switchboard_testkit::providers::{Api, FakeProvider, Step};

/// Tool round trips in one run.
const ROUNDS: usize = 50;

/// A model that answers at once: `ROUNDS` turns asking for `echo`, then
/// the answer.
#[derive(Debug)]
struct Instant0 {
    provider: Provider,
    tool: String,
    turns: AtomicUsize,
}

impl Model for Instant0 {
    fn provider(&self) -> Provider {
        self.provider
    }

    fn model(&self) -> &str {
        "instant"
    }

    fn turn<'a>(&'a self, _: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelTurn, ChatError>> {
        let n = self.turns.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            if n >= ROUNDS {
                return Ok(ModelTurn::answer("done").with_items(vec![item(
                    self.provider,
                    "done",
                    None,
                )]));
            }
            let id = format!("call_{n}");
            let call = ModelCall::new(&id, &self.tool, json!("{\"text\":\"hello\"}"));
            Ok(ModelTurn::calling(vec![call]).with_items(vec![item(
                self.provider,
                "",
                Some((&id, &self.tool)),
            )]))
        })
    }
}

/// The assistant item a real API would give for the turn.
fn item(provider: Provider, text: &str, call: Option<(&str, &str)>) -> serde_json::Value {
    match (provider, call) {
        (Provider::Anthropic, Some((id, name))) => json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": name, "input": {"text": "hello"}}]}),
        (Provider::Anthropic, None) => {
            json!({"role": "assistant", "content": [{"type": "text", "text": text}]})
        }
        (Provider::Gemini, Some((id, name))) => json!({"role": "model", "parts": [
            {"functionCall": {"id": id, "name": name, "args": {"text": "hello"}}}]}),
        (Provider::Gemini, None) => json!({"role": "model", "parts": [{"text": text}]}),
        (Provider::OpenAiResponses, Some((id, name))) => json!(
            {"type": "function_call", "call_id": id, "name": name, "arguments": "{\"text\":\"hello\"}"}),
        (_, Some((id, name))) => json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": "{\"text\":\"hello\"}"}}]}),
        (_, None) => json!({"role": "assistant", "content": text}),
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = args[1..].iter().find_map(|a| a.parse().ok()).unwrap_or(15);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench(runs));
}

async fn bench(runs: usize) {
    let (_server, url) = switchboard_testkit::spawn_http(&[]).await;
    let hub = Hub::builder()
        .persist(false)
        .server(ServerConfig::new(
            "t",
            TransportConfig::Http {
                url,
                headers: Default::default(),
                kind: HttpKind::Auto,
            },
            Origin {
                file: "/bench.toml".into(),
                dialect: Dialect::Switchboard,
                scope: Scope::Explicit,
            },
        ))
        .build()
        .unwrap();
    hub.start().await.unwrap();
    println!(
        "agent loop: {ROUNDS} tool round trips a run, median of {runs} runs, interleaved with {ROUNDS} direct hub calls"
    );
    println!(
        "{:<18} {:>14} {:>16} {:>16}",
        "api", "round trip", "direct call", "loop overhead"
    );
    let mut worst = Duration::ZERO;
    for provider in Provider::ALL {
        let tool = Toolset::from_hub(provider, ToolsetOptions::default(), &hub)
            .entries()
            .iter()
            .find(|e| e.tool.name == "echo")
            .expect("the test server's echo")
            .name
            .clone();
        let (mut rounds, mut direct) = (Vec::new(), Vec::new());
        for _ in 0..runs + 1 {
            let model = Instant0 {
                provider,
                tool: tool.clone(),
                turns: AtomicUsize::new(0),
            };
            let agent = Agent::builder(hub.clone(), model)
                .max_rounds(ROUNDS + 1)
                .skills(false)
                .build()
                .unwrap();
            let started = Instant::now();
            let outcome = agent.run("go").await.unwrap();
            let run = started.elapsed();
            assert_eq!(outcome.calls.len(), ROUNDS);
            assert!(outcome.calls.iter().all(|c| !c.is_error));
            let started = Instant::now();
            for _ in 0..ROUNDS {
                let arguments = json!({"text": "hello"}).as_object().cloned();
                hub.call_tool("t__echo", arguments).await.unwrap();
            }
            let calls = started.elapsed();
            rounds.push(run / ROUNDS as u32);
            direct.push(calls / ROUNDS as u32);
        }
        // The first run warms the connections up.
        rounds.remove(0);
        direct.remove(0);
        let (round, call) = (median(rounds), median(direct));
        let overhead = round.saturating_sub(call);
        worst = worst.max(overhead);
        println!(
            "{:<18} {:>11.1} µs {:>13.1} µs {:>13.1} µs",
            provider.as_str(),
            round.as_secs_f64() * 1e6,
            call.as_secs_f64() * 1e6,
            overhead.as_secs_f64() * 1e6
        );
    }
    println!(
        "worst loop overhead: {:.1} µs per round trip (target ≤ 200 µs): {}",
        worst.as_secs_f64() * 1e6,
        if worst <= Duration::from_micros(200) {
            "met"
        } else {
            "NOT MET"
        }
    );

    // For reference: the real client over loopback HTTP to a streaming
    // fake endpoint that answers at once.
    let tool = Toolset::from_hub(Provider::OpenAiChat, ToolsetOptions::default(), &hub)
        .entries()
        .iter()
        .find(|e| e.tool.name == "echo")
        .unwrap()
        .name
        .clone();
    let mut times = Vec::new();
    for _ in 0..runs.min(5) + 1 {
        let mut script: Vec<Step> = (0..ROUNDS)
            .map(|_| Step::Calls(vec![(tool.clone(), json!({"text": "hello"}))]))
            .collect();
        script.push(Step::Text("done".into()));
        let fake = FakeProvider::start(Api::OpenAiChat, script).await;
        let model = ChatClient::new(fake.base_url(), "m").unwrap();
        let agent = Agent::builder(hub.clone(), model)
            .max_rounds(ROUNDS + 1)
            .skills(false)
            .build()
            .unwrap();
        let started = Instant::now();
        agent.run("go").await.unwrap();
        times.push(started.elapsed() / ROUNDS as u32);
        assert!(fake.problems().is_empty(), "{:?}", fake.problems());
    }
    times.remove(0);
    println!(
        "with the HTTP client and a streaming fake endpoint (openai-chat): {:.1} µs per round trip",
        median(times).as_secs_f64() * 1e6
    );
    hub.shutdown().await;
}
