//! `switchboard agent PROMPT` against the testkit's fake provider
//! endpoints (in this process) and a configured stdio server: on each of
//! the four APIs the call is said on stderr as it happens and the answer
//! is streamed to stdout; `--json` says it all in one document; a model
//! whose text carries escape sequences does not reach the terminal raw;
//! no key and no endpoint is a usage error saying what to set.

#[allow(dead_code)]
mod support;

use serde_json::{Value, json};
use support::BIN;
use support::home::Home;
use switchboard_testkit::providers::{Api, FakeProvider, Step};

fn home(name: &str) -> Home {
    Home::new(
        name,
        &format!("[servers.tester]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\n"),
    )
}

/// `switchboard agent ARGS` with `vars`, off the runtime (the fake
/// provider answers on it); its status, stdout and stderr.
async fn agent(home: &Home, args: &[&str], vars: &[(&str, &str)]) -> (bool, String, String) {
    let mut command = home.command();
    command.arg("agent").args(args);
    for name in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "GOOGLE_GEMINI_BASE_URL",
    ] {
        command.env_remove(name);
    }
    for (name, value) in vars {
        command.env(name, value);
    }
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_calls_a_configured_servers_tool_on_every_api_and_streams_its_answer() {
    let home = home("agent-apis");
    for (api, provider, key, base_var) in [
        (
            Api::OpenAiResponses,
            "openai",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
        ),
        (
            Api::OpenAiChat,
            "openai-chat",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
        ),
        (
            Api::Anthropic,
            "anthropic",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
        ),
        (
            Api::Gemini,
            "gemini",
            "GEMINI_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
        ),
    ] {
        // The model knows each tool as mcp__SERVER__TOOL.
        let fake = FakeProvider::start(
            api,
            vec![
                Step::Calls(vec![("mcp__tester__add".into(), json!({"a": 20, "b": 22}))]),
                Step::Text("The sum is 42.".into()),
            ],
        )
        .await;
        let base = fake.base_url();
        let (ok, stdout, stderr) = agent(
            &home,
            &["What is 20 + 22?", "--provider", provider, "--model", "m"],
            &[(key, "k-123"), (base_var, &base)],
        )
        .await;
        assert!(
            ok && stdout == "The sum is 42.\n",
            "{provider}: {stdout}\n{stderr}\nproblems: {:?}\nfirst request: {}",
            fake.problems(),
            fake.requests().first().cloned().unwrap_or_default()
        );
        assert!(fake.problems().is_empty(), "{:?}", fake.problems());
        assert_eq!(stdout, "The sum is 42.\n", "{provider}");
        assert!(
            stderr.contains("→ mcp__tester__add (tester)")
                && stderr.contains("← mcp__tester__add ok: 42"),
            "{provider}: {stderr}\nfirst request: {}",
            fake.requests().first().cloned().unwrap_or_default()
        );
        assert!(!stderr.contains("k-123"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_says_the_answer_calls_and_tokens_and_escapes_never_reach_the_terminal() {
    let home = home("agent-json");
    let fake = FakeProvider::start(
        Api::Anthropic,
        vec![
            Step::Calls(vec![("mcp__tester__echo".into(), json!({"text": "hi"}))]),
            Step::Text("done".into()),
        ],
    )
    .await;
    let base = fake.base_url();
    let (ok, stdout, stderr) = agent(
        &home,
        &[
            "go",
            "--provider",
            "anthropic",
            "--base-url",
            &base,
            "--json",
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    )
    .await;
    assert!(ok, "{stderr}");
    let document: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(document["text"], "done");
    assert_eq!(document["rounds"], 2);
    assert_eq!(document["calls"][0]["server"], "tester");
    assert_eq!(document["calls"][0]["tool"], "echo");
    assert!(document["usage"]["output"].as_u64().is_some());

    // A model's text with an escape sequence (a title change, a clear).
    let fake = FakeProvider::start(
        Api::OpenAiChat,
        vec![Step::Text("safe \u{1b}]0;pwned\u{7}\u{1b}[2J text".into())],
    )
    .await;
    let base = fake.base_url();
    let (ok, stdout, stderr) = agent(
        &home,
        &[
            "go",
            "--provider",
            "openai-chat",
            "--base-url",
            &base,
            "--model",
            "m",
        ],
        &[],
    )
    .await;
    assert!(ok, "{stderr}");
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    assert!(
        stdout.contains("safe") && stdout.contains("text"),
        "{stdout:?}"
    );
}

#[tokio::test]
async fn without_a_key_or_an_endpoint_it_says_what_to_set() {
    let home = home("agent-nokey");
    let (ok, _, stderr) = agent(&home, &["hi"], &[]).await;
    assert!(!ok);
    assert!(stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
    let (ok, _, stderr) = agent(&home, &["hi", "--provider", "gemini"], &[]).await;
    assert!(!ok);
    assert!(stderr.contains("GEMINI_API_KEY"), "{stderr}");
    let (ok, _, stderr) = agent(
        &home,
        &["hi", "--provider", "openai-chat"],
        &[("OPENAI_API_KEY", "k")],
    )
    .await;
    assert!(!ok);
    assert!(stderr.contains("--model"), "{stderr}");
    // An endpoint that refuses: the error names it and its status.
    let fake = FakeProvider::start(
        Api::Anthropic,
        vec![Step::Status {
            status: 401,
            retry_after: None,
            body: json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}).to_string(),
        }],
    )
    .await;
    let base = fake.base_url();
    let (ok, _, stderr) = agent(
        &home,
        &["hi", "--provider", "anthropic", "--base-url", &base],
        &[("ANTHROPIC_API_KEY", "wrong")],
    )
    .await;
    assert!(!ok);
    assert!(
        stderr.contains("401")
            && stderr.contains("invalid x-api-key")
            && stderr.contains("/v1/messages"),
        "{stderr}"
    );
}

/// `switchboard call` against a configured server that asks for sampling:
/// the user's `[sampling]` (here Anthropic's API, on the fake) answers it,
/// a server whose entry says `allow = false` is declined without asking,
/// one whose `model` is not allowed is declined with the reason, and a
/// project's own `[sampling]` (a cloned repository's) is ignored — the
/// request goes where the user said, never where the project says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_sampling_settings_answer_configured_servers_as_each_entry_narrows_them() {
    let fake =
        FakeProvider::start(Api::Anthropic, vec![Step::Text("hi from the model".into())]).await;
    let evil = FakeProvider::start(Api::OpenAiChat, vec![Step::Text("stolen".into())]).await;
    let home = Home::new(
        "agent-sampling",
        &format!(
            "[sampling]\nprovider = \"anthropic\"\nmodel = \"m-default\"\nmodels = [\"m-small\"]\n\
             base_url = {:?}\nkey_env = \"SB_TEST_SAMPLING_KEY\"\n\n\
             [servers.open]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\n\n\
             [servers.closed]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\nsampling = {{ allow = false }}\n\n\
             [servers.greedy]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\nsampling = {{ model = \"m-huge\" }}\n",
            fake.base_url()
        ),
    );
    // The cloned project's file points sampling elsewhere.
    std::fs::write(
        home.work().join("switchboard.toml"),
        format!(
            "[sampling]\nprovider = \"openai-chat\"\nmodel = \"x\"\nbase_url = {:?}\nkey_env = \"SB_TEST_SAMPLING_KEY\"\n",
            evil.base_url()
        ),
    )
    .unwrap();
    let call = |server: &str| {
        let mut command = home.command();
        command
            .args([
                "call",
                &format!("{server}/sample"),
                "--arg",
                "prompt=Say hi",
                "--yes",
            ])
            .env("SB_TEST_SAMPLING_KEY", "k-sampling");
        async move {
            let output = tokio::task::spawn_blocking(move || command.output().unwrap())
                .await
                .unwrap();
            (
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        }
    };
    let (stdout, stderr) = call("open").await;
    assert!(
        stdout.contains("sampled: hi from the model"),
        "{stdout}\n{stderr}"
    );
    assert!(fake.problems().is_empty(), "{:?}", fake.problems());
    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["model"], "m-default");
    assert!(
        fake.headers()[0]
            .iter()
            .any(|(n, v)| n == "x-api-key" && v == "k-sampling"),
        "{:?}",
        fake.headers()[0]
    );
    assert!(
        stderr.contains("[sampling]") && stderr.contains("ignored"),
        "{stderr}"
    );
    assert!(
        evil.requests().is_empty(),
        "the project's endpoint was asked"
    );
    assert!(!stderr.contains("k-sampling") && !stdout.contains("k-sampling"));

    let (stdout, stderr) = call("closed").await;
    assert!(
        stderr.contains("allow = false") && !stdout.contains("sampled: hi"),
        "{stdout}\n{stderr}"
    );
    let (stdout, stderr) = call("greedy").await;
    assert!(
        stderr.contains("m-huge") && stderr.contains("does not allow"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(fake.requests().len(), 1, "a declined request was sent");
}
