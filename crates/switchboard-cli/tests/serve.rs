//! `switchboard serve`: the configured servers as one MCP server on stdio,
//! to a host of either era, in front of a session-era and a 2026-07-28
//! backend (the bundled test server, `switchboard __testserver`). The host
//! is this crate's own client; hosts no one here wrote are issue 19's
//! interop tests.

use std::sync::{Arc, Mutex};

use serde_json::json;
use switchboard::transport::stdio::StdioConfig;
use switchboard::types::{
    CallToolRequestParams, CreateMessageRequestParams, CreateMessageResult, ElicitResult,
    JsonObject,
};
use switchboard::{
    BoxFuture, Client, ElicitationHandler, EraMode, FormRequest, HandlerContext, HandlerError,
    RequestOptions, SamplingHandler,
};

#[allow(dead_code)] // only the binary's path is used here
mod support;

use support::BIN;
use support::gateway::{Sandbox, TOKEN, authed};

/// [`Sandbox::host`]'s settings for the gateway as a stdio server of our
/// own client.
fn gateway(sandbox: &Sandbox) -> StdioConfig {
    StdioConfig::new(BIN)
        .args(["serve"])
        .env("HOME", sandbox.home())
        .env("SWITCHBOARD_CREDENTIALS", sandbox.credentials())
        .cwd(sandbox.work())
}

/// A host of `mode` connected to the gateway.
async fn host(sandbox: &Sandbox, mode: EraMode) -> Client {
    Client::builder()
        .era_mode(mode)
        .connect(gateway(sandbox))
        .await
        .unwrap_or_else(|e| panic!("{mode:?}: {e}"))
}

/// The tools' names as the host lists them.
async fn tool_names(host: &Client) -> Vec<String> {
    host.list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

fn args(value: serde_json::Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

#[tokio::test]
async fn a_host_of_each_era_lists_and_calls_tools_of_both_backends() {
    let sandbox = Sandbox::new("eras");
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let host = host(&sandbox, mode).await;
        assert_eq!(host.server_info().unwrap().name, "switchboard");
        // The first list waits for the servers' start.
        let names = tool_names(&host).await;
        for wanted in ["old__echo", "new__echo", "old__progress"] {
            assert!(names.iter().any(|n| n == wanted), "{mode:?}: {names:?}");
        }
        for server in ["old", "new"] {
            let result = host
                .call_tool(format!("{server}__echo"), args(json!({"text": server})))
                .await
                .unwrap();
            assert_ne!(result.is_error, Some(true), "{mode:?} {server}: {result:?}");
            let text = result.content[0].as_text().unwrap();
            assert!(text.contains(server), "{mode:?} {server}: {text}");
        }
        // An unknown name is the host's error; the session goes on.
        let error = host.call_tool("nobody__echo", None).await.unwrap_err();
        assert!(error.to_string().contains("Unknown tool"), "{error}");
        host.call_tool("old__echo", args(json!({"text": "still"})))
            .await
            .unwrap();
        host.close().await;
    }
}

/// A host's user: fills every form with the name "Ada" (or declines
/// everything), answers every sampling request as model `host-model`;
/// records the messages it was shown.
#[derive(Clone, Default)]
struct User {
    decline: bool,
    shown: Arc<Mutex<Vec<String>>>,
}

impl ElicitationHandler for User {
    fn elicit_form(
        &self,
        _: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        self.shown.lock().unwrap().push(request.message.clone());
        let answer = if self.decline {
            ElicitResult::decline()
        } else {
            let mut content = request.defaults.clone();
            if content.contains_key("name") {
                content.insert("name".into(), json!("Ada"));
            }
            ElicitResult::accept(Some(content))
        };
        Box::pin(async move { Ok(answer) })
    }
}

impl SamplingHandler for User {
    fn create_message(
        &self,
        _: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        self.shown
            .lock()
            .unwrap()
            .push(format!("{} messages", params.messages.len()));
        Box::pin(async {
            Ok(serde_json::from_value(json!({
                "role": "assistant",
                "content": {"type": "text", "text": "hello from the host"},
                "model": "host-model",
            }))
            .unwrap())
        })
    }
}

/// A host of `mode` whose user is `user`.
async fn host_with(sandbox: &Sandbox, mode: EraMode, user: &User) -> Client {
    Client::builder()
        .era_mode(mode)
        .elicitation(user.clone())
        .sampling(user.clone())
        .connect(gateway(sandbox))
        .await
        .unwrap_or_else(|e| panic!("{mode:?}: {e}"))
}

fn text(result: &switchboard::types::CallToolResult) -> String {
    result.content[0].as_text().unwrap_or_default().to_owned()
}

/// Every pair of eras: a session-era and a 2026-07-28 host, each in front
/// of a session-era backend (which sends `elicitation/create` and
/// `sampling/createMessage` requests) and a 2026-07-28 one (which answers
/// `input_required`). The host's answers reach the backend, whose result
/// says what it got.
/// Over stdio and over Streamable HTTP (where a session-era host gets the
/// backend's requests, and progress, on its POST's event stream).
#[tokio::test]
async fn a_backends_elicitation_and_sampling_reach_the_host_across_eras() {
    let sandbox = Sandbox::new("asks");
    let (url, mut http) = sandbox.http_gateway(&[]);
    for (mode, over_http) in [
        (EraMode::Legacy, false),
        (EraMode::Modern, false),
        (EraMode::Legacy, true),
        (EraMode::Modern, true),
    ] {
        let user = User::default();
        let host = if over_http {
            Client::builder()
                .era_mode(mode)
                .elicitation(user.clone())
                .sampling(user.clone())
                .connect(authed(url.as_str()))
                .await
                .unwrap()
        } else {
            host_with(&sandbox, mode, &user).await
        };
        host.list_tools().await.unwrap();
        let mode = (mode, over_http);
        // Progress comes through too.
        let steps = Arc::new(Mutex::new(Vec::new()));
        let seen = steps.clone();
        let options = RequestOptions::default().on_progress(move |p| {
            seen.lock().unwrap().push(p.progress);
        });
        let params = CallToolRequestParams {
            name: "old__progress".into(),
            arguments: args(json!({"steps": 2})),
            ..Default::default()
        };
        host.call_tool_with(&params, options).await.unwrap();
        assert_eq!(*steps.lock().unwrap(), [1.0, 2.0], "{mode:?}");
        for server in ["old", "new"] {
            let result = host
                .call_tool(format!("{server}__ask"), None)
                .await
                .unwrap();
            assert_ne!(result.is_error, Some(true), "{mode:?} {server}: {result:?}");
            let answer: serde_json::Value = serde_json::from_str(&text(&result)).unwrap();
            assert_eq!(answer["action"], "accept", "{mode:?} {server}: {answer}");
            assert_eq!(
                answer["content"]["name"], "Ada",
                "{mode:?} {server}: {answer}"
            );

            let result = host
                .call_tool(format!("{server}__sample"), args(json!({"prompt": "hi"})))
                .await
                .unwrap();
            assert_eq!(
                text(&result),
                "sampled: hello from the host (model host-model)",
                "{mode:?} {server}: {result:?}"
            );
        }
        let shown = user.shown.lock().unwrap().clone();
        assert_eq!(
            shown,
            [
                "Please tell us about yourself",
                "1 messages",
                "Please tell us about yourself",
                "1 messages"
            ],
            "{mode:?}"
        );
        host.close().await;
    }
    let _ = http.kill();
    let _ = http.wait();
}

/// A host that declared neither elicitation nor sampling: a session-era
/// one is declined for (the backend hears "decline", the call still
/// ends); a 2026-07-28 one is told -32021 with the capability the call
/// needs when a session-era backend asks, as the spec has a server do,
/// and gets a 2026-07-28 backend's own answer (it sees the host's
/// capabilities).
#[tokio::test]
async fn an_ask_the_host_cannot_take_is_declined_on_its_behalf() {
    let sandbox = Sandbox::new("declined");
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let host = host(&sandbox, mode).await;
        host.list_tools().await.unwrap();
        for server in ["old", "new"] {
            let asked = host.call_tool(format!("{server}__ask"), None).await;
            let sampled = host
                .call_tool(format!("{server}__sample"), args(json!({"prompt": "hi"})))
                .await;
            if mode == EraMode::Modern && server == "old" {
                for (outcome, capability) in [(asked, "elicitation"), (sampled, "sampling")] {
                    assert_missing_capability(outcome, capability, server);
                }
                continue;
            }
            if mode == EraMode::Modern {
                // A 2026-07-28 backend sees the host's own capabilities and
                // answers as it chooses: the test server, an error result.
                for (outcome, capability) in [(asked, "elicitation"), (sampled, "sampling")] {
                    let result = outcome.unwrap();
                    assert_eq!(
                        result.is_error,
                        Some(true),
                        "{server} {capability}: {result:?}"
                    );
                    assert!(
                        text(&result).contains(&format!("did not declare the {capability}")),
                        "{server} {capability}: {result:?}"
                    );
                }
                continue;
            }
            let answer: serde_json::Value = serde_json::from_str(&text(&asked.unwrap())).unwrap();
            assert_eq!(answer["action"], "decline", "{mode:?} {server}: {answer}");
            let result = sampled.unwrap();
            assert_eq!(result.is_error, Some(true), "{mode:?} {server}: {result:?}");
            assert!(
                text(&result).contains("did not declare the sampling capability"),
                "{mode:?} {server}: {result:?}"
            );
        }
        host.close().await;
    }
}

/// A 2026-07-28 host's call that needed `capability` it did not declare:
/// -32021, the capability named in `requiredCapabilities`.
fn assert_missing_capability(
    outcome: Result<switchboard::types::CallToolResult, switchboard::Error>,
    capability: &str,
    what: &str,
) {
    match outcome {
        Err(switchboard::Error::Server { error, .. }) => {
            assert_eq!(error.code, -32021, "{what} {capability}: {error:?}");
            let data = error.data.unwrap_or_default();
            assert!(
                data["requiredCapabilities"].get(capability).is_some(),
                "{what} {capability}: {data}"
            );
        }
        other => panic!("{what} {capability}: not -32021: {other:?}"),
    }
}

/// `[policy.tools]`: a denied tool is neither listed nor called; an `ask`
/// tool runs only when the host's user accepts, in both eras.
#[tokio::test]
async fn the_tool_policy_denies_and_asks() {
    let sandbox = Sandbox::with_config(
        "policy",
        "[policy.tools]\ndeny = [\"old__add_*\"]\nask = [\"*__echo\"]\n",
    );
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let user = User::default();
        let host = host_with(&sandbox, mode, &user).await;
        let names = tool_names(&host).await;
        assert!(
            !names.iter().any(|n| n == "old__add_tool"),
            "{mode:?}: {names:?}"
        );
        assert!(
            names.iter().any(|n| n == "new__add_tool"),
            "{mode:?}: {names:?}"
        );
        let result = host.call_tool("old__add_tool", None).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{mode:?}: {result:?}");
        assert!(
            text(&result).contains("denied by the policy") && text(&result).contains("old__add_*"),
            "{mode:?}: {result:?}"
        );
        // Accepted: it runs, and the user saw what would run.
        let result = host
            .call_tool("old__echo", args(json!({"text": "allowed"})))
            .await
            .unwrap();
        assert_ne!(result.is_error, Some(true), "{mode:?}: {result:?}");
        assert!(text(&result).contains("allowed"), "{mode:?}: {result:?}");
        let shown = user.shown.lock().unwrap().clone();
        assert_eq!(shown.len(), 1, "{mode:?}: {shown:?}");
        assert!(
            shown[0].contains("old__echo") && shown[0].contains("allowed"),
            "{mode:?}: {shown:?}"
        );
        host.close().await;

        // Declined: not called.
        let user = User {
            decline: true,
            ..User::default()
        };
        let declining = host_with(&sandbox, mode, &user).await;
        declining.list_tools().await.unwrap();
        let result = declining
            .call_tool("new__echo", args(json!({"text": "refused"})))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(true), "{mode:?}: {result:?}");
        assert!(
            text(&result).contains("did not allow"),
            "{mode:?}: {result:?}"
        );
        declining.close().await;

        // A host that cannot ask: not called either (a 2026-07-28 host is
        // told the capability it lacks).
        let mute = crate::host(&sandbox, mode).await;
        mute.list_tools().await.unwrap();
        let outcome = mute
            .call_tool("old__echo", args(json!({"text": "x"})))
            .await;
        if mode == EraMode::Modern {
            assert_missing_capability(outcome, "elicitation", "the policy's ask");
        } else {
            let result = outcome.unwrap();
            assert_eq!(result.is_error, Some(true), "{mode:?}: {result:?}");
            assert!(
                text(&result).contains("did not declare the elicitation capability"),
                "{mode:?}: {result:?}"
            );
        }
        mute.close().await;
    }
}

#[tokio::test]
async fn a_backends_progress_reaches_the_host() {
    let sandbox = Sandbox::new("progress");
    let host = host(&sandbox, EraMode::Legacy).await;
    host.list_tools().await.unwrap();
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = steps.clone();
    let options = RequestOptions::default().on_progress(move |p| {
        seen.lock().unwrap().push(p.progress);
    });
    let params = CallToolRequestParams {
        name: "new__progress".into(),
        arguments: args(json!({"steps": 3})),
        ..Default::default()
    };
    let result = host.call_tool_with(&params, options).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(*steps.lock().unwrap(), [1.0, 2.0, 3.0]);
    host.close().await;
}

#[tokio::test]
async fn a_hosts_cancellation_reaches_the_backend() {
    let sandbox = Sandbox::new("cancel");
    let host = host(&sandbox, EraMode::Legacy).await;
    host.list_tools().await.unwrap();
    let cancelled = |host: Client| async move {
        let result = host
            .call_tool(
                "old__hits",
                args(json!({"method": "notifications/cancelled"})),
            )
            .await
            .unwrap();
        result.content[0].as_text().unwrap().to_owned()
    };
    assert_eq!(cancelled(host.clone()).await, "0");
    // `hang` never answers; the host gives up on it.
    let hanging = RequestOptions::default().with_timeout(std::time::Duration::from_millis(300));
    let params = CallToolRequestParams {
        name: "old__hang".into(),
        ..Default::default()
    };
    let error = host.call_tool_with(&params, hanging).await.unwrap_err();
    assert!(error.is_timeout(), "{error}");
    // The cancellation travels host → gateway → backend while the next
    // call is on its way; the backend counts it (each try a round trip).
    let mut seen = String::new();
    for _ in 0..100 {
        seen = cancelled(host.clone()).await;
        if seen == "1" {
            break;
        }
    }
    assert_eq!(seen, "1", "the backend never got the cancellation");
    host.close().await;
}

#[tokio::test]
async fn prompts_and_resources_of_both_backends_come_through() {
    let sandbox = Sandbox::new("features");
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let host = host(&sandbox, mode).await;
        host.list_tools().await.unwrap();
        let prompts: Vec<String> = host
            .list_prompts()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        for wanted in ["old__greeting", "new__greeting"] {
            assert!(prompts.iter().any(|p| p == wanted), "{mode:?}: {prompts:?}");
        }
        let arguments = std::collections::BTreeMap::from([("name".to_owned(), "Ada".to_owned())]);
        let prompt = host
            .get_prompt("new__greeting", Some(arguments))
            .await
            .unwrap();
        assert!(format!("{prompt:?}").contains("Hello, Ada!"), "{prompt:?}");

        let uris: Vec<String> = host
            .list_resources()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.uri)
            .collect();
        let hello = "switchboard://old/test%3A%2F%2Fstatic%2Fhello";
        assert!(uris.iter().any(|u| u == hello), "{mode:?}: {uris:?}");
        assert!(
            uris.iter().any(|u| u.starts_with("switchboard://new/")),
            "{mode:?}: {uris:?}"
        );
        let read = host.read_resource(hello).await.unwrap();
        assert_eq!(read.contents[0].uri(), hello, "{mode:?}");
        assert!(format!("{read:?}").contains("Hello, world!"), "{read:?}");
        // Templates: the host expands the gateway's template, the read
        // reaches the server as its own template would have expanded.
        let templates: Vec<String> = host
            .list_resource_templates()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.uri_template)
            .collect();
        let template = "switchboard://new/~/test://items/{id}";
        assert!(
            templates.iter().any(|t| t == template),
            "{mode:?}: {templates:?}"
        );
        let item = template.replace("{id}", "42");
        let read = host.read_resource(&item).await.unwrap();
        assert_eq!(read.contents[0].uri(), item, "{mode:?}");
        assert!(format!("{read:?}").contains("item 42"), "{read:?}");
        // A URI both backends list (test://static) is neither's as written:
        // the host's error.
        let error = host.read_resource("test://static/hello").await.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("no server of this gateway lists it"),
            "{error}"
        );
        // -32002 in the session era, -32602 in 2026-07-28 (SEP-2164).
        let code = if mode == EraMode::Modern {
            "-32602"
        } else {
            "-32002"
        };
        assert!(error.to_string().contains(code), "{mode:?}: {error}");
        host.close().await;
    }
}

#[tokio::test]
async fn a_backend_that_dies_fails_only_its_own_call() {
    let sandbox = Sandbox::new("dies");
    let host = host(&sandbox, EraMode::Legacy).await;
    host.list_tools().await.unwrap();
    // `old` exits in the middle of the call: the host gets a tool error
    // naming the server, not a broken session.
    let result = host
        .call_tool("old__exit", args(json!({"code": 3})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = result.content[0].as_text().unwrap();
    assert!(text.contains("old"), "{text}");
    // The other backend and the session go on.
    let result = host
        .call_tool("new__echo", args(json!({"text": "alive"})))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text().unwrap(), "alive");
    host.close().await;
}

#[tokio::test]
async fn a_project_server_not_approved_is_not_started_and_nothing_is_asked() {
    let sandbox = Sandbox::new("untrusted");
    // A cloned repository's `.mcp.json`: it would run a command.
    let marker = sandbox.work().join("ran");
    std::fs::write(
        sandbox.work().join(".mcp.json"),
        serde_json::to_string(&json!({"mcpServers": {"evil": {
            "command": "sh", "args": ["-c", format!("touch {}", marker.display())]
        }}}))
        .unwrap(),
    )
    .unwrap();
    let mut host = sandbox.host(BIN);
    host.arg("serve")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let output = host.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("`evil` is not started"), "{stderr}");
    assert!(stderr.contains("switchboard approve evil"), "{stderr}");
    // Said once, not twice.
    assert_eq!(
        stderr.matches("switchboard approve evil`").count(),
        1,
        "{stderr}"
    );
    // Nothing but protocol on stdout (here: nothing at all), and no command ran.
    assert!(
        output.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(!marker.exists());
}

#[tokio::test]
async fn the_gateway_never_starts_itself() {
    let sandbox = Sandbox::new("itself");
    // What `claude mcp add switchboard -- switchboard serve` writes, and the
    // same behind a shell wrapper: the gateway reads every client's files.
    std::fs::write(
        sandbox.home().join(".claude.json"),
        serde_json::to_string(&json!({"mcpServers": {
            "me": {"command": BIN, "args": ["serve"]},
            "wrapped": {"command": "sh", "args": ["-c", format!("exec {BIN:?} serve")]},
        }}))
        .unwrap(),
    )
    .unwrap();
    let output = sandbox
        .host(BIN)
        .arg("serve")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`me` is not started: this is switchboard's own gateway"),
        "{stderr}"
    );
    // The wrapped one starts, sees a gateway among its ancestors and stops;
    // the configured backends are served.
    let host = host(&sandbox, EraMode::Legacy).await;
    let names = tool_names(&host).await;
    assert!(names.iter().any(|n| n == "old__echo"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("me__") || n.starts_with("wrapped__")),
        "{names:?}"
    );
    host.close().await;
}

/// `serve --http` added to Claude Code by its URL (`claude mcp add
/// --transport http switchboard http://127.0.0.1:PORT/mcp`) is read by the
/// gateway itself: its `/healthz` answers the gateway's instance id, and
/// the gateway does not connect to itself (every tool twice, through
/// itself).
#[tokio::test]
async fn an_http_gateway_in_a_hosts_file_does_not_serve_itself() {
    let sandbox = Sandbox::new("itself-url");
    // The port first, so that the host's file can name the gateway's URL.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        sandbox.home().join(".claude.json"),
        json!({"mcpServers": {"switchboard": {
            "type": "http",
            "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": {"Authorization": format!("Bearer {TOKEN}")},
        }}})
        .to_string(),
    )
    .unwrap();
    let (url, mut gateway) = sandbox.http_gateway_on(&format!("127.0.0.1:{port}"), &[]);
    let health = reqwest::get(url.replace("/mcp", "/healthz")).await.unwrap();
    assert_eq!(health.status(), 200);
    let instance = health.headers()["switchboard-instance"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(instance.len(), 32, "{instance}");
    let host = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(authed(url.as_str()))
        .await
        .unwrap();
    // The first list waits for the servers' start, the gateway's own
    // entry's included.
    let names = tool_names(&host).await;
    assert!(names.iter().any(|n| n == "old__echo"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("switchboard__")),
        "{names:?}"
    );
    host.close().await;
    // Another gateway has another id.
    let (other, mut second) = sandbox.http_gateway(&[]);
    let health = reqwest::get(other.replace("/mcp", "/healthz"))
        .await
        .unwrap();
    assert_ne!(health.headers()["switchboard-instance"], instance.as_str());
    for child in [&mut gateway, &mut second] {
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[tokio::test]
async fn every_call_is_in_the_audit_log_and_verify_catches_an_edit() {
    let sandbox = Sandbox::new("audit");
    let log = sandbox.work().join("audit.jsonl");
    let host = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(gateway(&sandbox).args(["--audit", log.to_str().unwrap()]))
        .await
        .unwrap();
    host.call_tool("old__echo", args(json!({"text": "hunter2"})))
        .await
        .unwrap();
    host.call_tool("new__exit", args(json!({"code": 3})))
        .await
        .unwrap();
    host.call_tool("nobody__echo", None).await.unwrap_err();
    host.close().await;

    let text = std::fs::read_to_string(&log).unwrap();
    let all: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(all[0]["kind"], "header", "{text}");
    let lines = &all[1..];
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines.iter().all(|l| l["kind"] == "tool_call"), "{text}");
    assert_eq!(lines[0]["name"], "old__echo");
    assert_eq!(lines[0]["server"], "old");
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[1]["outcome"], "tool_error");
    assert_eq!(lines[2]["outcome"], "error");
    assert!(!text.contains("hunter2"), "arguments are hashed: {text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let verify = || {
        sandbox
            .host(BIN)
            .args(["audit", "verify", log.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let ok = verify();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        String::from_utf8_lossy(&ok.stdout).contains("intact: 3 records in 1 file(s)"),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    std::fs::write(&log, text.replace("\"ok\"", "\"error\"")).unwrap();
    let broken = verify();
    assert!(!broken.status.success());
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert!(stderr.contains("breaks at line 3"), "{stderr}");
}

/// Finding 6: more than tool calls are audited.
#[tokio::test]
async fn the_audit_log_records_prompt_gets_and_resource_reads() {
    let sandbox = Sandbox::new("audit-kinds");
    let log = sandbox.work().join("audit.jsonl");
    let host = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(gateway(&sandbox).args(["--audit", log.to_str().unwrap()]))
        .await
        .unwrap();
    host.list_tools().await.unwrap();
    let arguments = std::collections::BTreeMap::from([("name".to_owned(), "Ada".to_owned())]);
    host.get_prompt("new__greeting", Some(arguments))
        .await
        .unwrap();
    let hello = "switchboard://old/test%3A%2F%2Fstatic%2Fhello";
    host.read_resource(hello).await.unwrap();
    host.close().await;
    let text = std::fs::read_to_string(&log).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<(&str, &str, &str)> = records
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap(),
                r["server"].as_str().unwrap_or_default(),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("prompt_get", "new", "ok"), ("resource_read", "old", "ok")],
        "{text}"
    );
    assert_eq!(records[1]["name"], hello);
}

/// Finding 6: policy decisions, the elicitation that asks and a backend's
/// elicitation and sampling forwarded to the host are audited.
#[tokio::test]
async fn the_audit_log_records_policy_decisions_and_forwarded_asks() {
    let sandbox = Sandbox::with_config(
        "audit-policy",
        "[policy.tools]\ndeny = [\"old__add_*\"]\nask = [\"*__echo\"]\n",
    );
    let log = sandbox.work().join("audit.jsonl");
    let user = User::default();
    let host = Client::builder()
        .era_mode(EraMode::Legacy)
        .elicitation(user.clone())
        .sampling(user.clone())
        .connect(gateway(&sandbox).args(["--audit", log.to_str().unwrap()]))
        .await
        .unwrap();
    host.list_tools().await.unwrap();
    host.call_tool("old__add_tool", None).await.unwrap();
    host.call_tool("old__echo", args(json!({"text": "allowed"})))
        .await
        .unwrap();
    host.call_tool("old__ask", None).await.unwrap();
    host.call_tool("old__sample", args(json!({"prompt": "hi"})))
        .await
        .unwrap();
    host.close().await;
    let text = std::fs::read_to_string(&log).unwrap();
    let seen: Vec<(String, String)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                r["kind"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let seen: Vec<(&str, &str)> = seen.iter().map(|(k, o)| (k.as_str(), o.as_str())).collect();
    assert_eq!(
        seen,
        [
            ("policy", "deny"),
            ("tool_call", "tool_error"),
            ("elicitation", "forwarded"),
            ("policy", "allowed"),
            ("tool_call", "ok"),
            ("elicitation", "forwarded"),
            ("tool_call", "ok"),
            ("sampling", "forwarded"),
            ("tool_call", "ok"),
        ],
        "{text}"
    );
}

/// Finding 6, as the attacker: a log rewritten with its chain recomputed,
/// or cut at its tail, does not verify; a second gateway on the same log
/// is refused while the first writes it.
#[tokio::test]
async fn audit_verify_catches_a_rechained_edit_and_a_cut_tail_and_one_writer_at_a_time() {
    let sandbox = Sandbox::new("audit-tamper");
    let log = sandbox.work().join("audit.jsonl");
    let host = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(gateway(&sandbox).args(["--audit", log.to_str().unwrap()]))
        .await
        .unwrap();
    for text in ["one", "two"] {
        host.call_tool("old__echo", args(json!({ "text": text })))
            .await
            .unwrap();
    }
    let second = sandbox
        .host(BIN)
        .args(["serve", "--audit", log.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("another gateway is writing"), "{stderr}");
    host.close().await;

    let verify = || {
        let out = sandbox
            .host(BIN)
            .args(["audit", "verify", log.to_str().unwrap()])
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert!(verify().0, "{}", verify().1);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The first call's outcome changed and every later `prev` rewritten:
    // without the key no value is right (the library's tests forge a plain
    // SHA-256 chain, which verified before).
    let mut forged = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
        if i == 1 {
            value["outcome"] = "error".into();
        }
        if i > 1 {
            value["prev"] = format!("{:064x}", line.len() * i).into();
        }
        forged.push(value.to_string());
    }
    std::fs::write(&log, forged.join("\n") + "\n").unwrap();
    let (ok, stderr) = verify();
    assert!(!ok && stderr.contains("breaks at line 3"), "{stderr}");
    // The last record dropped.
    std::fs::write(&log, lines[..lines.len() - 1].join("\n") + "\n").unwrap();
    let (ok, stderr) = verify();
    assert!(!ok && stderr.contains("its tail was cut"), "{stderr}");
}

#[tokio::test]
async fn hosts_of_each_era_over_http_list_and_call_both_backends() {
    let sandbox = Sandbox::new("http");
    let (url, mut gateway) = sandbox.http_gateway(&[]);
    for mode in [EraMode::Legacy, EraMode::Modern, EraMode::Auto] {
        let host = Client::builder()
            .era_mode(mode)
            .connect(authed(url.as_str()))
            .await
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        let names = tool_names(&host).await;
        for wanted in ["old__echo", "new__echo"] {
            assert!(names.iter().any(|n| n == wanted), "{mode:?}: {names:?}");
        }
        for server in ["old", "new"] {
            let result = host
                .call_tool(format!("{server}__echo"), args(json!({"text": server})))
                .await
                .unwrap();
            assert_eq!(result.content[0].as_text().unwrap(), server, "{mode:?}");
        }
        host.close().await;
    }
    let _ = gateway.kill();
    let _ = gateway.wait();
}

#[tokio::test]
async fn the_http_gateway_refuses_other_origins_and_missing_tokens() {
    let sandbox = Sandbox::new("http-guard");
    let (url, mut gateway) = sandbox.http_gateway(&[]);
    let post = |headers: Vec<(&'static str, &'static str)>| {
        let url = url.clone();
        async move {
            let client = reqwest::Client::new();
            let mut request = client
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                // A well-formed 2026-07-28 request: only the guard may refuse it.
                .header("mcp-method", "server/discover")
                .body(
                    r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
                );
            for (name, value) in headers {
                request = request.header(name, value);
            }
            request.send().await.unwrap().status().as_u16()
        }
    };
    assert_eq!(post(vec![]).await, 401, "no token");
    assert_eq!(post(vec![("authorization", "Bearer nope")]).await, 401);
    assert_eq!(
        post(vec![
            ("authorization", BEARER),
            ("origin", "https://evil.example"),
        ])
        .await,
        403,
        "a foreign origin (DNS rebinding)"
    );
    assert_eq!(
        post(vec![
            ("authorization", BEARER),
            ("origin", "http://localhost:3000"),
        ])
        .await,
        200
    );
    // The metrics sit behind the same guard.
    let metrics = |token: Option<&'static str>| {
        let url = url.replace("/mcp", "/metrics");
        async move {
            let mut request = reqwest::Client::new().get(url);
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    assert_eq!(metrics(None).await.0, 401);
    // One call through the gateway (it waits for the backends' start).
    let called = reqwest::Client::new()
        .post(url.as_str())
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "old__echo")
        .body(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"old__echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(called.status().as_u16(), 200);
    assert!(called.text().await.unwrap().contains(r#""text":"hi""#));
    let (status, text) = metrics(Some(TOKEN)).await;
    assert_eq!(status, 200, "{text}");
    for line in [
        "# TYPE switchboard_calls_total counter",
        "switchboard_backend_up{server=\"old\",state=\"ready\"} 1",
        "switchboard_backend_up{server=\"new\",state=\"ready\"} 1",
        "switchboard_calls_total{server=\"old\"} 1",
        "switchboard_calls_total{server=\"new\"} 0",
        "switchboard_call_duration_seconds_bucket{server=\"old\",le=\"+Inf\"} 1",
        "switchboard_call_duration_seconds_count{server=\"old\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
    }
    // A token on the command line is refused before anything starts.
    let refused = sandbox
        .host(BIN)
        .args(["serve", "--http", "127.0.0.1:0", "--token", TOKEN])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--token-file"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let _ = gateway.kill();
    let _ = gateway.wait();
}

/// `Authorization`'s value for [`TOKEN`].
const BEARER: &str = "Bearer test-token-0123456789abcdefghijklmnopqrstuv";

/// One POST of a session-era host: the status, the session id the answer
/// set and the body.
async fn session_post(
    url: &str,
    session: Option<&str>,
    body: &str,
) -> (u16, Option<String>, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, id, response.text().await.unwrap())
}

/// `--session-key-file`: a session opened on one replica is served by
/// another holding the same key (no shared store); a replica without it,
/// a tampered id and a deleted session get 404.
#[tokio::test]
async fn replicas_with_one_session_key_serve_each_others_sessions() {
    let sandbox = Sandbox::new("replicas");
    let key = sandbox.work().join("session.key");
    std::fs::write(
        &key,
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
    )
    .unwrap();
    // Refused unless closed to other users.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let key = key.to_str().unwrap();
    let (a, replica_a) = sandbox.http_gateway(&["--session-key-file", key]);
    let (b, replica_b) = sandbox.http_gateway(&["--session-key-file", key]);
    let (c, keyless) = sandbox.http_gateway(&[]);

    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}"#;
    let (status, session, body) = session_post(&a, None, initialize).await;
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");
    assert!(session.starts_with("s1."), "{session}");
    let (status, _, _) = session_post(
        &b,
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, 202);
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"old__echo","arguments":{"text":"on b"}}}"#;
    let (status, _, body) = session_post(&b, Some(&session), call).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""text":"on b""#), "{body}");

    // Not without the key, not with a changed id.
    assert_eq!(session_post(&c, Some(&session), call).await.0, 404);
    let mut tampered = session.clone().into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_eq!(session_post(&b, Some(&tampered), call).await.0, 404);

    // Ended where it is deleted.
    let deleted = reqwest::Client::new()
        .delete(b.as_str())
        .bearer_auth(TOKEN)
        .header("mcp-session-id", session.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    assert_eq!(session_post(&b, Some(&session), call).await.0, 404);

    for mut gateway in [replica_a, replica_b, keyless] {
        let _ = gateway.kill();
        let _ = gateway.wait();
    }
}

/// `--threads 1` (the whole gateway on one current-thread runtime, the
/// fastest per call: docs/PERFORMANCE.md) serves as the default does: a
/// session-era host's session and call, and a 2026-07-28 host's call.
#[tokio::test]
async fn a_one_thread_http_gateway_serves_both_eras() {
    let sandbox = Sandbox::new("one-thread");
    let (url, mut gateway) = sandbox.http_gateway(&["--threads", "1"]);
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}"#;
    let (status, session, body) = session_post(&url, None, initialize).await;
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");
    let (status, _, _) = session_post(
        &url,
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, 202);
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"old__echo","arguments":{"text":"one thread"}}}"#;
    let (status, _, body) = session_post(&url, Some(&session), call).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""text":"one thread""#), "{body}");
    let called = reqwest::Client::new()
        .post(url.as_str())
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "old__echo")
        .body(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"old__echo","arguments":{"text":"stateless"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(called.status().as_u16(), 200);
    assert!(
        called
            .text()
            .await
            .unwrap()
            .contains(r#""text":"stateless""#)
    );
    let _ = gateway.kill();
    let _ = gateway.wait();
}

/// `--max-tools`: past the budget only `search_tools` is listed; what a
/// search finds is listed from then on (a session-era host hears
/// `list_changed`), and any tool can still be called by its name.
#[tokio::test]
async fn past_the_tool_budget_the_host_searches() {
    let sandbox = Sandbox::new("search");
    let host = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(
            StdioConfig::new(BIN)
                .args(["serve", "--max-tools", "8"])
                .env("HOME", sandbox.home())
                .env("SWITCHBOARD_CREDENTIALS", sandbox.credentials())
                .cwd(sandbox.work()),
        )
        .await
        .unwrap();
    let mut events = host.events();
    assert_eq!(tool_names(&host).await, ["search_tools"]);
    let result = host
        .call_tool("search_tools", args(json!({"query": "echoes", "limit": 3})))
        .await
        .unwrap();
    let found = text(&result);
    assert!(
        found.contains("old__echo") && found.contains("new__echo"),
        "{found}"
    );
    loop {
        match events.next().await {
            Some(switchboard::Event::ListChanged(switchboard::ListKind::Tools)) => break,
            Some(_) => continue,
            None => panic!("no list_changed before the connection ended"),
        }
    }
    let names = tool_names(&host).await;
    assert_eq!(names[0], "search_tools", "{names:?}");
    for wanted in ["old__echo", "new__echo"] {
        assert!(names.iter().any(|n| n == wanted), "{names:?}");
    }
    assert!(names.len() <= 8, "{names:?}");
    // Not listed, still callable.
    let result = host
        .call_tool("old__add", args(json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    host.close().await;
}

#[tokio::test]
async fn the_backends_skills_come_through_verified_by_the_host() {
    // A third backend with skills, and one that serves a skill wrong.
    let sandbox = Sandbox::with_config(
        "skills",
        &format!(
            "[servers.docs]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--skills\"]\n\n\
             [servers.evil]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--skills-tamper\", \"digest\"]\n"
        ),
    );
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let host = host(&sandbox, mode).await;
        assert!(host.offers_skills(), "{mode:?}");
        let skills = host.list_skills().await.unwrap();
        let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://docs/pdf-processing/SKILL.md",
                "skill://docs/code-review/SKILL.md",
                "skill://evil/pdf-processing/SKILL.md",
                "skill://evil/code-review/SKILL.md",
            ],
            "{mode:?}"
        );
        // Still skills by the extension's rules: the name last, the files
        // inside the skill's (rewritten) directory.
        assert!(skills.iter().all(|s| s.problems().is_empty()), "{mode:?}");
        let got = host.get_skill(&skills[0].uri).await.unwrap();
        assert_eq!(got, skills[0], "{mode:?}");
        let error = host
            .get_skill("skill://docs/nothing/SKILL.md")
            .await
            .unwrap_err();
        assert_eq!(error.code(), Some(-32602), "{mode:?}: {error}");
        let error = host
            .get_skill("skill://nobody/x/SKILL.md")
            .await
            .unwrap_err();
        assert_eq!(error.code(), Some(-32602), "{mode:?}: {error}");

        // The host loads and verifies through the gateway, bytes unchanged.
        let skill = host.load_skill(&skills[0]).await.unwrap();
        assert!(skill.instructions().contains("# PDF processing"));
        let forms = host
            .read_skill_file(&skill, "skill://docs/pdf-processing/references/FORMS.md")
            .await
            .unwrap();
        assert!(forms.verified() && forms.text().unwrap().starts_with("# Forms"));
        let logo = host
            .read_skill_file(&skill, "skill://docs/pdf-processing/assets/logo.png")
            .await
            .unwrap();
        assert_eq!(&logo.bytes()[..4], b"\x89PNG");
        // A backend's tampered skill stays refused by the host.
        let error = host.load_skill(&skills[2]).await.unwrap_err();
        assert!(
            matches!(error, switchboard::Error::Skill { .. }),
            "{mode:?}: {error}"
        );
        // Skill files keep their skill URI in the gateway's resources.
        let resources: Vec<String> = host
            .list_resources()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.uri)
            .collect();
        assert!(
            resources
                .iter()
                .any(|u| u == "skill://docs/code-review/SKILL.md"),
            "{mode:?}: {resources:?}"
        );
        host.close().await;
    }
}

/// The one-liners: `serve -- CMD ARGS…` and `serve --url URL` front
/// exactly that server under its own names, with no config file read (the
/// sandbox's two configured servers are not started); `serve --server NAME` fronts one configured
/// server, under its own names too; `--server` with a name no file has is
/// a usage error naming those that are.
#[tokio::test]
async fn serve_fronts_one_given_or_named_server_under_its_own_names() {
    let sandbox = Sandbox::new("one-liners");
    for (how, argv) in [
        (
            "--",
            vec!["serve", "--", BIN, "__testserver", "--era", "legacy"],
        ),
        ("--server", vec!["serve", "--server", "new"]),
    ] {
        for mode in [EraMode::Legacy, EraMode::Modern] {
            let host = Client::builder()
                .era_mode(mode)
                .connect(
                    StdioConfig::new(BIN)
                        .args(argv.clone())
                        .env("HOME", sandbox.home())
                        .env("SWITCHBOARD_CREDENTIALS", sandbox.credentials())
                        .cwd(sandbox.work()),
                )
                .await
                .unwrap_or_else(|e| panic!("{how} {mode:?}: {e}"));
            let names = tool_names(&host).await;
            assert!(
                names.iter().any(|n| n == "echo"),
                "{how} {mode:?}: {names:?}"
            );
            assert!(
                !names.iter().any(|n| n.contains("__")),
                "{how} {mode:?}: {names:?}"
            );
            let result = host
                .call_tool("echo", args(json!({"text": "hi"})))
                .await
                .unwrap();
            assert_ne!(result.is_error, Some(true), "{how} {mode:?}: {result:?}");
            host.close().await;
        }
    }
    let output = std::process::Command::new(BIN)
        .args(["serve", "--server", "nobody"])
        .env("HOME", sandbox.home())
        .current_dir(sandbox.work())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nobody") && stderr.contains("old") && stderr.contains("new"),
        "{stderr}"
    );
}
