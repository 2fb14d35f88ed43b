//! The hub's tools as rig tools: the example rig agent
//! (`examples/rig_agent.rs`, included here and run through its own `run`
//! and `agent`) against the testkit's fake provider endpoints and the
//! testkit's MCP server over Streamable HTTP, then the pieces of
//! `switchboard_models::rig` one by one: the hub's policy, skills, media,
//! and tool lists that change under a running agent.
//!
//! The fakes check every request's shape and record what was wrong; each
//! test asserts that nothing was and that the script ran to its end.
#![cfg(feature = "rig")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rig_agent::tool::server::ToolServer;
use serde_json::{Value, json};
use switchboard_hub::Hub;
use switchboard_hub::config::policy::ToolPolicy;
use switchboard_hub::hub::{ToolAnswer, ToolApprover, ToolAsk};
use switchboard_models::rig::{RigOptions, ToolSync, ToolsWatch, hub_tools, skill_tools};
use switchboard_models::{ChatImages, MediaStore, ResultOptions};
use switchboard_testkit::providers::{Api, FakeProvider, Step};
use tokio::sync::mpsc;

#[allow(dead_code)]
#[path = "../examples/rig_agent.rs"]
mod example;

/// No wait may take this long: a hang fails the test instead.
const WAIT: Duration = Duration::from_secs(30);

/// The testkit's MCP server (`args` its command line) and a hub running it
/// as `test`, started.
async fn hub_with_server(args: &[&str], policy: Option<ToolPolicy>) -> Hub {
    let (_, url) = switchboard_testkit::spawn_http(args).await;
    let mut hub = Hub::builder()
        .persist(false)
        .server(example::server_from_flag(&format!("test={url}")).unwrap());
    if let Some(policy) = policy {
        hub = hub.tool_policy(policy);
    }
    let hub = hub.build().unwrap();
    let report = hub.start().await.unwrap();
    assert!(report.not_ready.is_empty(), "{:?}", report.not_ready);
    hub
}

/// The texts of every tool result in a request body, whatever its API's
/// form: Chat `tool` messages, Responses `function_call_output` items,
/// Anthropic `tool_result` blocks, Gemini `functionResponse` parts.
fn tool_results(body: &Value) -> Vec<String> {
    fn text(value: &Value) -> String {
        match value {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            other => other.to_string(),
        }
    }
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                let kind = map.get("type").and_then(Value::as_str);
                if map.get("role").and_then(Value::as_str) == Some("tool") {
                    out.push(text(&map["content"]));
                } else if kind == Some("function_call_output") {
                    out.push(text(&map["output"]));
                } else if kind == Some("tool_result") {
                    out.push(text(map.get("content").unwrap_or(&Value::Null)));
                } else if let Some(response) = map.get("functionResponse") {
                    out.push(text(&response["response"]));
                } else {
                    map.values().for_each(|v| walk(v, out));
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, &mut out);
    out
}

/// The names of the tools a request offers, whatever its API's form.
fn offered(body: &Value) -> Vec<String> {
    let body = body.to_string();
    let mut names = Vec::new();
    for (i, _) in body.match_indices("\"name\":\"mcp__") {
        let rest = &body[i + 8..];
        if let Some(end) = rest.find('"') {
            names.push(rest[..end].to_owned());
        }
    }
    names.sort();
    names.dedup();
    names
}

/// How many `tools/call` requests the test server has had, counting this
/// question itself.
async fn calls_seen(hub: &Hub) -> u64 {
    let arguments = json!({"method": "tools/call"});
    let result = hub
        .call("test", "hits", arguments.as_object().cloned())
        .await
        .unwrap();
    result.content[0].as_text().unwrap().parse().unwrap()
}

/// The example, as a user runs it: each provider rig speaks, pointed at a
/// fake endpoint of that API, with the test server given by `--server`.
/// The model's call reaches the MCP server, its answer reaches the model,
/// and the model's last words are the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_answers_with_a_tool_on_every_provider() {
    let (_, url) = switchboard_testkit::spawn_http(&[]).await;
    let media = std::env::temp_dir().join(format!("switchboard-rig-{}", std::process::id()));
    for (api, provider) in [
        (Api::OpenAiChat, "openai-chat"),
        (Api::OpenAiResponses, "openai"),
        (Api::Anthropic, "anthropic"),
        (Api::Gemini, "gemini"),
    ] {
        let fake = FakeProvider::start(
            api,
            vec![
                Step::Calls(vec![("mcp__test__add".into(), json!({"a": 2, "b": 3}))]),
                Step::Text("2 + 3 = 5.".into()),
            ],
        )
        .await;
        let args = [
            "--provider",
            provider,
            "--base-url",
            &fake.base_url(),
            "--model",
            "test-model",
            "--server",
            &format!("test={url}"),
            "--media",
            media.to_str().unwrap(),
            "--system",
            "Be brief.",
            // Without a generation setting rig sends Gemini
            // `generationConfig: null`, which the fake refuses (Google's
            // JSON mapping reads a null as unset).
            "--max-tokens",
            "1024",
            "What is 2 + 3?",
        ];
        let mut out = Vec::new();
        let answer = tokio::time::timeout(
            WAIT,
            example::run(args.iter().map(|a| a.to_string()).collect(), &mut out),
        )
        .await
        .unwrap_or_else(|_| panic!("{provider}: the run hung"))
        .unwrap_or_else(|e| panic!("{provider}: {e}\nproblems: {:?}", fake.problems()));
        let printed = String::from_utf8_lossy(&out);
        assert!(
            fake.problems().is_empty(),
            "{provider}: {:?}",
            fake.problems()
        );
        assert_eq!(fake.remaining(), 0, "{provider}");
        assert_eq!(answer.as_deref(), Some("2 + 3 = 5."), "{provider}");
        let requests = fake.requests();
        assert_eq!(requests.len(), 2, "{provider}");
        // Offered under this crate's names, with the server's schema.
        let first = requests[0].to_string();
        assert!(
            offered(&requests[0]).contains(&"mcp__test__add".to_owned())
                && first.contains("Be brief."),
            "{provider}: {first}"
        );
        // The server's answer went back to the model.
        let results = tool_results(&requests[1]);
        assert_eq!(results.len(), 1, "{provider}: {}", requests[1]);
        // `add` answers "5", and `{"sum": 5}` as structured content that
        // the text carries too.
        assert!(
            results[0].contains('5') && results[0].contains("sum"),
            "{provider}: {results:?}"
        );
        assert!(
            printed.contains("→ mcp__test__add {\"a\":2,\"b\":3}")
                && printed.contains("← mcp__test__add: 5")
                && printed.trim_end().ends_with("2 + 3 = 5."),
            "{provider}: {printed}"
        );
    }
    let _ = std::fs::remove_dir_all(&media);
}

/// Arguments that are not JSON, and a tool that does not exist: the model
/// is told so as a tool result, the run goes on, and no tool is called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_and_unknown_tools_are_told_to_the_model_and_call_nothing() {
    let hub = hub_with_server(&[], None).await;
    let fake = FakeProvider::start(
        Api::OpenAiChat,
        vec![
            Step::RawCall {
                name: "mcp__test__add".into(),
                raw_arguments: "{\"a\": 2, \"b\":".into(),
            },
            Step::Calls(vec![("mcp__test__made_up".into(), json!({}))]),
            Step::Text("I could not do it.".into()),
        ],
    )
    .await;
    let before = calls_seen(&hub).await;
    let answer = run_agent(&hub, &fake, None, "add").await;
    assert_eq!(answer, "I could not do it.");
    assert!(fake.problems().is_empty(), "{:?}", fake.problems());
    assert_eq!(fake.remaining(), 0);
    assert_eq!(calls_seen(&hub).await, before + 1, "a tool was called");

    let requests = fake.requests();
    let bad = tool_results(&requests[1]);
    assert!(
        bad.len() == 1 && bad[0].contains("mcp__test__add") && bad[0].contains("JSON"),
        "{bad:?}"
    );
    let unknown = tool_results(&requests[2]);
    let unknown = unknown.last().unwrap();
    assert!(
        unknown.contains("no tool named `mcp__test__made_up`")
            && unknown.contains("mcp__test__echo"),
        "{unknown}"
    );
    hub.shutdown().await;
}

/// The example's agent (`example::agent`) on `hub` against `fake`
/// (Chat Completions), asked `prompt`: its answer.
async fn run_agent(
    hub: &Hub,
    fake: &FakeProvider,
    approver: Option<Arc<dyn ToolApprover>>,
    prompt: &str,
) -> String {
    let model = example::model(
        example::Api::OpenAiChat,
        "test-model",
        Some(&fake.base_url()),
        "sk-test".into(),
    );
    let settings = example::Settings {
        max_turns: 8,
        max_tokens: None,
        system: None,
        media: None,
        skills: false,
        approver,
    };
    let (lines, printed) = mpsc::unbounded_channel();
    let (agent, _sync) = example::agent(hub, model, settings, lines).await;
    let mut out = Vec::new();
    tokio::time::timeout(WAIT, example::ask(&agent, prompt, printed, &mut out))
        .await
        .expect("the run hung")
        .unwrap_or_else(|e| panic!("{e}\nproblems: {:?}", fake.problems()))
}

/// The hub's `[policy.tools]` holds for rig: a denied tool is not offered
/// (a call of it is a call of an unknown tool), an `ask` tool is refused
/// with the rule's words without an approver and runs with one, and a
/// deny put in force after the tools were made refuses the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hubs_tool_policy_refuses_calls_with_a_message() {
    let mut policy = ToolPolicy::default();
    policy.deny.push(("policy.toml".into(), "test/add".into()));
    policy.ask.push(("policy.toml".into(), "test/echo".into()));
    let hub = hub_with_server(&[], Some(policy)).await;

    let fake = FakeProvider::start(
        Api::OpenAiChat,
        vec![
            // One call a turn: rig runs none of a turn's calls when one
            // of them is of an unknown tool.
            Step::Calls(vec![("mcp__test__echo".into(), json!({"text": "asked"}))]),
            Step::Calls(vec![("mcp__test__add".into(), json!({"a": 1, "b": 1}))]),
            Step::Text("Refused.".into()),
        ],
    )
    .await;
    let before = calls_seen(&hub).await;
    assert_eq!(run_agent(&hub, &fake, None, "go").await, "Refused.");
    assert!(fake.problems().is_empty(), "{:?}", fake.problems());
    assert_eq!(calls_seen(&hub).await, before + 1, "a tool was called");
    let requests = fake.requests();
    let offered = offered(&requests[0]);
    assert!(
        offered.contains(&"mcp__test__echo".to_owned())
            && !offered.contains(&"mcp__test__add".to_owned()),
        "{offered:?}"
    );
    let asked = tool_results(&requests[1]);
    assert!(
        asked.len() == 1
            && asked[0].contains("server `test`: `echo` was not called")
            && asked[0].contains("policy.toml"),
        "{asked:?}"
    );
    let denied = tool_results(&requests[2]);
    assert!(
        denied.len() == 2 && denied[1].contains("no tool named `mcp__test__add`"),
        "{denied:?}"
    );

    // With an approver, the asked call runs.
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let approver: Arc<dyn ToolApprover> = Arc::new(
        move |ask: ToolAsk| -> switchboard::BoxFuture<'static, ToolAnswer> {
            seen.lock().unwrap().push((ask.server, ask.tool));
            Box::pin(async { ToolAnswer::Once })
        },
    );
    let fake = FakeProvider::start(
        Api::OpenAiChat,
        vec![
            Step::Calls(vec![("mcp__test__echo".into(), json!({"text": "allowed"}))]),
            Step::Text("Done.".into()),
        ],
    )
    .await;
    assert_eq!(run_agent(&hub, &fake, Some(approver), "go").await, "Done.");
    assert!(fake.problems().is_empty(), "{:?}", fake.problems());
    assert_eq!(tool_results(&fake.requests()[1]), ["allowed"]);
    assert_eq!(
        *asked.lock().unwrap(),
        [("test".to_owned(), "echo".to_owned())]
    );

    // A deny put in force after the tools were made.
    let tools = hub_tools(&hub, &RigOptions::default());
    let echo = tools
        .iter()
        .find(|t| t.name().as_str() == "mcp__test__echo")
        .unwrap();
    let mut policy = ToolPolicy::default();
    policy.deny.push(("later.toml".into(), "test/echo".into()));
    hub.set_tool_policy(policy);
    let error = echo.execute(json!({"text": "denied"})).await.unwrap_err();
    let feedback = error.model_feedback().unwrap_or_default();
    assert!(
        feedback.contains("server `test`: `echo` was not called")
            && feedback.contains("later.toml"),
        "{feedback}"
    );
    hub.shutdown().await;
}

/// A server's `list_changed` reaches a registry `ToolSync` keeps: the new
/// tool is installed; when the server goes, its tools leave the registry,
/// a tool made before answers that it is gone, and `ToolsWatch` tells.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_list_changes_reach_the_agents_registry() {
    let hub = hub_with_server(&[], None).await;
    let options = RigOptions::default();
    let registry = ToolServer::new().run();
    let mut sync = ToolSync::start(&hub, options.clone(), registry.clone()).await;
    assert_eq!(sync.syncs(), 1);
    let has = |name: &str| registry.toolset().contains(name);
    assert!(has("mcp__test__add") && !has("mcp__test__dynamic_0"));

    // The server adds a tool and says so.
    let added = hub.call("test", "add_tool", None).await.unwrap();
    assert!(!added.is_error(), "{added:?}");
    tokio::time::timeout(WAIT, async {
        while !has("mcp__test__dynamic_0") {
            assert!(sync.synced().await, "the sync ended");
        }
    })
    .await
    .expect("the new tool never came");

    // The server goes away.
    let echo = hub_tools(&hub, &options)
        .into_iter()
        .find(|t| t.name().as_str() == "mcp__test__echo")
        .unwrap();
    assert!(echo.is_live());
    let mut watch = ToolsWatch::new(&hub, &options);
    hub.remove("test").await.unwrap();
    assert!(
        tokio::time::timeout(WAIT, watch.changed())
            .await
            .expect("no change was told")
    );
    assert!(watch.tools().is_empty());
    tokio::time::timeout(WAIT, async {
        while has("mcp__test__echo") {
            assert!(sync.synced().await, "the sync ended");
        }
    })
    .await
    .expect("the tools never left");
    assert!(!has("mcp__test__dynamic_0"));
    assert!(!echo.is_live());
    let error = echo.execute(json!({"text": "hi"})).await.unwrap_err();
    assert!(
        error
            .model_feedback()
            .is_some_and(|f| f.contains("is no longer offered") && f.contains("`test`")),
        "{:?}",
        error.model_feedback()
    );
    hub.shutdown().await;
}

/// Skills as rig tools: `load_skill` loads and verifies a skill's
/// instructions, `read_skill_file` one of its files, and an unknown skill
/// is a tool error naming the skills there are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_rig_tools() {
    let hub = hub_with_server(&["--skills"], None).await;
    let (tools, failed) = skill_tools(&hub, &RigOptions::default()).await;
    assert!(failed.is_empty(), "{failed:?}");
    let names: Vec<&str> = tools.iter().map(|t| t.name().as_str()).collect();
    assert_eq!(names, ["load_skill", "read_skill_file"]);
    assert!(
        tools[0]
            .definition()
            .description
            .contains("- pdf-processing: Extract, fill, and assemble PDF documents"),
        "{}",
        tools[0].definition().description
    );
    let loaded = tools[0]
        .execute(json!({"name": "pdf-processing"}))
        .await
        .unwrap();
    let loaded = loaded.as_text().unwrap_or_default();
    assert!(
        loaded.contains("# PDF processing") && loaded.contains("references/FORMS.md"),
        "{loaded}"
    );
    let file = tools[1]
        .execute(json!({"skill": "pdf-processing", "path": "references/FORMS.md"}))
        .await
        .unwrap();
    assert!(file.as_text().is_some_and(|t| t.contains("# Forms")));
    let unknown = tools[0]
        .execute(json!({"name": "no-such-skill"}))
        .await
        .unwrap_err();
    assert!(
        unknown
            .model_feedback()
            .is_some_and(|f| f.starts_with("Error: ") && f.contains("pdf-processing")),
        "{:?}",
        unknown.model_feedback()
    );
    // Turned off: none.
    let (none, _) = skill_tools(&hub, &RigOptions::default().skills(None)).await;
    assert!(none.is_empty());
    hub.shutdown().await;
}

/// Results go through this crate's conversion: an image is saved to the
/// media folder and named by path (Chat Completions' tool messages take
/// no image), or with `ChatImages::FollowUp` handed to rig as an image
/// block; text is cut to the budget; `isError` is a failed result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_converted_with_media_and_budget() {
    let hub = hub_with_server(&[], None).await;
    let base = std::env::temp_dir().join(format!("switchboard-rig-media-{}", std::process::id()));
    let media = Arc::new(MediaStore::session(&base).unwrap());
    let tool = |options: &RigOptions, name: &str| {
        hub_tools(&hub, options)
            .into_iter()
            .find(|t| t.name().as_str() == name)
            .unwrap()
    };

    let saving = RigOptions::default().results(ResultOptions::default().media(Some(media.clone())));
    let image = tool(&saving, "mcp__test__image")
        .execute(json!({}))
        .await
        .unwrap();
    let text = image.as_text().unwrap_or_default().to_owned();
    let folder = media.dir().display().to_string();
    assert!(
        text.contains(&folder) && text.contains("a 1x1 PNG image"),
        "{text}"
    );

    let inline =
        RigOptions::default().results(ResultOptions::default().chat_images(ChatImages::FollowUp));
    let image = tool(&inline, "mcp__test__image")
        .execute(json!({}))
        .await
        .unwrap();
    let parts: Vec<String> = image
        .as_content()
        .iter()
        .map(|c| serde_json::to_value(c).unwrap()["type"].to_string())
        .collect();
    assert_eq!(parts.len(), 2, "{parts:?}");

    let small = RigOptions::default().results(ResultOptions::default().budget(10));
    let echoed = tool(&small, "mcp__test__echo")
        .execute(json!({"text": "x".repeat(100)}))
        .await
        .unwrap();
    let echoed = echoed.as_text().unwrap_or_default();
    assert!(
        echoed.starts_with("xxxxxxxxxx") && !echoed.contains(&"x".repeat(11)),
        "{echoed}"
    );

    let error = tool(&RigOptions::default(), "mcp__test__error")
        .execute(json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.model_feedback(), Some("Error: something went wrong"));
    assert!(
        error.message().contains("server `test`"),
        "{}",
        error.message()
    );

    let not_object = tool(&RigOptions::default(), "mcp__test__echo")
        .execute(json!(["hi"]))
        .await
        .unwrap_err();
    assert!(
        not_object
            .model_feedback()
            .is_some_and(|f| f.contains("an array, not an object")),
        "{:?}",
        not_object.model_feedback()
    );
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&base);
}

/// The agent tests' task (`tests/providers.rs`), through rig: two
/// servers, two parallel calls, an image result and a tool error, three
/// turns, on each of the four APIs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_four_api_task_passes_through_rig_too() {
    let (_, alpha) = switchboard_testkit::spawn_http(&[]).await;
    let (_, beta) = switchboard_testkit::spawn_http(&[]).await;
    let media = std::env::temp_dir().join(format!("switchboard-rig-task-{}", std::process::id()));
    for (api, provider) in [
        (Api::OpenAiChat, "openai-chat"),
        (Api::OpenAiResponses, "openai"),
        (Api::Anthropic, "anthropic"),
        (Api::Gemini, "gemini"),
    ] {
        let fake = FakeProvider::start(
            api,
            vec![
                Step::Calls(vec![
                    ("mcp__alpha__echo".into(), json!({"text": "hello there"})),
                    ("mcp__beta__add".into(), json!({"a": 2, "b": 3})),
                ]),
                Step::Calls(vec![
                    ("mcp__alpha__image".into(), json!({})),
                    ("mcp__beta__error".into(), json!({})),
                ]),
                Step::Text("Echoed, added to 5, saw the image; the error tool failed.".into()),
            ],
        )
        .await;
        let args = [
            "--provider",
            provider,
            "--base-url",
            &fake.base_url(),
            "--model",
            "test-model",
            "--server",
            &format!("alpha={alpha}"),
            "--server",
            &format!("beta={beta}"),
            "--media",
            media.to_str().unwrap(),
            "--max-tokens",
            "1024",
            "Do the four things.",
        ];
        let mut out = Vec::new();
        let answer = tokio::time::timeout(
            WAIT,
            example::run(args.iter().map(|a| a.to_string()).collect(), &mut out),
        )
        .await
        .unwrap_or_else(|_| panic!("{provider}: the run hung"))
        .unwrap_or_else(|e| panic!("{provider}: {e}\nproblems: {:?}", fake.problems()));
        assert!(
            fake.problems().is_empty(),
            "{provider}: {:?}",
            fake.problems()
        );
        assert_eq!(fake.remaining(), 0, "{provider}");
        assert_eq!(
            answer.as_deref(),
            Some("Echoed, added to 5, saw the image; the error tool failed."),
            "{provider}"
        );
        let requests = fake.requests();
        let second = tool_results(&requests[1]);
        assert!(
            second.len() == 2
                && second.iter().any(|r| r.contains("hello there"))
                && second.iter().any(|r| r.contains('5')),
            "{provider}: {second:?}"
        );
        // The whole conversation: the first turn's results, then these.
        let third = tool_results(&requests[2]);
        let third = &third[2..];
        assert!(
            third.len() == 2
                && third.iter().any(|r| r.contains("image"))
                && third.iter().any(|r| r.contains("something went wrong")),
            "{provider}: {third:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&media);
}
