//! The hub against real server processes: the test server of
//! `switchboard-testkit`, run by this very binary (`hub __testserver …`),
//! since a dev-dependency's binaries are not built for another crate's
//! tests. Hence `harness = false` and the runner of `support/mod.rs`: every
//! `async fn` marked `#[apply(process_test!)]` is a test, run with
//! libtest's command line (`cargo test -p switchboard-hub --test hub
//! crash`) on a fresh multi-threaded runtime.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::RequestOptions;
use switchboard::types::{CallToolResult, ContentBlock, Era, JsonObject};
use switchboard_hub::hub::Hub;
use switchboard_hub::{
    Backoff, Dialect, HubError, HubEvent, Origin, Scope, ServerConfig, ServerState, ToolFilter,
    TransportConfig,
};

mod support;

use macro_rules_attribute::apply;
use support::{alive, next_matching, process_test};

fn main() {
    support::main();
}

// ------------------------------------------------------------------ helpers

fn origin() -> Origin {
    Origin {
        file: PathBuf::from("/tests/hub.toml"),
        dialect: Dialect::Switchboard,
        scope: Scope::Explicit,
    }
}

/// The test server under `name`, with extra test-server flags.
fn testserver(name: &str, flags: &[&str]) -> ServerConfig {
    let mut args = vec!["__testserver".to_owned()];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    ServerConfig::new(
        name,
        TransportConfig::Stdio {
            command: std::env::current_exe()
                .expect("current exe")
                .to_string_lossy()
                .into_owned(),
            args,
            env: BTreeMap::new(),
            cwd: None,
        },
        origin(),
    )
}

fn shell(name: &str, script: &str) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: BTreeMap::new(),
            cwd: None,
        },
        origin(),
    )
}

/// A fresh, empty directory for one test's state file.
fn state_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("switchboard-hub-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn args(value: Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

fn kill(signal: &str, pid: u32) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {signal} {pid}");
}

/// The test server's pid, as its `spawn_grandchild` tool tells it (and the
/// grandchild's).
async fn pids(hub: &Hub, server: &str) -> (u32, u32) {
    let result = hub
        .call(server, "spawn_grandchild", None)
        .await
        .expect("spawn_grandchild");
    let structured = result.structured_content.expect("structuredContent");
    let pid = |key: &str| structured[key].as_u64().expect("pid") as u32;
    (pid("serverPid"), pid("pid"))
}

// -------------------------------------------------------------------- tests

/// Acceptance 1: a server crashes with a call in flight; the hub reports
/// it, reconnects after a backoff, lists the tools stale then fresh; the
/// call fails with the typed error and a later call succeeds.
#[apply(process_test!)]
async fn crash_mid_session_reports_reconnects_and_recovers() {
    let dir = state_dir("crash");
    let hub = Hub::builder()
        .server(testserver("s", &[]))
        .state_dir(&dir)
        .build()
        .unwrap();
    let mut events = hub.events();
    let report = hub.start().await.expect("start");
    assert_eq!(report.ready, vec!["s".to_owned()]);
    let tools = hub.tools();
    assert!(tools.iter().any(|t| t.name == "s__hang"), "{tools:?}");
    assert!(tools.iter().all(|t| !t.stale));

    // `hang` never answers: it is in flight when the server dies.
    let hanging = {
        let hub = hub.clone();
        tokio::spawn(async move { hub.call("s", "hang", None).await })
    };
    let waited = Instant::now();
    while hub.stats("s").unwrap().in_flight == 0 {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "hang never started"
        );
        tokio::task::yield_now().await;
    }
    let exit = hub.call("s", "exit", args(json!({"code": 3}))).await;
    assert!(
        exit.as_ref().is_err_and(HubError::is_closed_during_call),
        "{exit:?}"
    );

    let reason = next_matching(&mut events, "the crash", |e| match e {
        HubEvent::StateChanged {
            state: ServerState::Reconnecting { attempt: 1, reason },
            ..
        } => Some(reason.clone()),
        _ => None,
    })
    .await;
    let lost_at = Instant::now();
    assert_eq!(reason.exit.and_then(|e| e.code), Some(3), "{reason:?}");
    assert!(
        reason
            .stderr_tail
            .as_deref()
            .unwrap_or("")
            .contains("exiting with code 3"),
        "{reason:?}"
    );
    // The backoff (at least 0.25 s) has not passed: still reconnecting.
    let stale = hub.tools();
    assert!(
        !stale.is_empty() && stale.iter().all(|t| t.stale),
        "{stale:?}"
    );
    let early = hub
        .call("s", "echo", args(json!({"text": "too soon"})))
        .await;
    assert!(
        matches!(&early, Err(e @ HubError::Unavailable { .. }) if e.is_retryable()),
        "{early:?}"
    );

    let error = hanging.await.unwrap().expect_err("hang cannot succeed");
    assert!(error.is_closed_during_call(), "{error:?}");
    assert!(
        error.to_string().contains("server `s` closed while `hang`"),
        "{error}"
    );

    next_matching(&mut events, "fresh tools", |e| match e {
        HubEvent::ToolsChanged { stale: false, .. } => Some(()),
        _ => None,
    })
    .await;
    next_matching(&mut events, "ready again", |e| match e {
        HubEvent::StateChanged {
            state: ServerState::Ready,
            ..
        } => Some(()),
        _ => None,
    })
    .await;
    let backoff = lost_at.elapsed();
    assert!(
        backoff >= Duration::from_millis(200),
        "reconnected after {backoff:?}"
    );
    assert!(hub.tools().iter().all(|t| !t.stale));

    let again = hub
        .call_tool("s__echo", args(json!({"text": "again"})))
        .await
        .expect("a call after the reconnection");
    assert_eq!(text(&again), "again");
    let stats = hub.stats("s").unwrap();
    assert_eq!(stats.reconnects, 1);
    assert_eq!(stats.calls, 4, "{stats:?}");
    assert_eq!(stats.errors, 3, "{stats:?}");
    assert!(stats.p50.is_some() && stats.p99 >= stats.p50, "{stats:?}");
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `slow` is annotated read-only: cut off by a crash, it is sent again to
/// the next connection and succeeds; `hang` (not read-only) fails.
#[apply(process_test!)]
async fn a_read_only_call_cut_by_a_crash_is_sent_again() {
    let hub = Hub::builder()
        .server(testserver("r", &[]))
        .backoff(Backoff::new(
            Duration::from_millis(50),
            Duration::from_secs(1),
            3,
        ))
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let (first_pid, _) = pids(&hub, "r").await;
    let spawn_call = |tool: &'static str, arguments: Option<JsonObject>| {
        let hub = hub.clone();
        tokio::spawn(async move { hub.call("r", tool, arguments).await })
    };
    let slow = spawn_call("slow", args(json!({"ms": 1500})));
    let hang = spawn_call("hang", None);
    let waited = Instant::now();
    while hub.stats("r").unwrap().in_flight < 2 {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "calls never started"
        );
        tokio::task::yield_now().await;
    }
    let _ = hub.call("r", "exit", args(json!({"code": 5}))).await;
    let hung = hang.await.unwrap();
    assert!(
        hung.as_ref().is_err_and(HubError::is_closed_during_call),
        "{hung:?}"
    );
    let replayed = slow
        .await
        .unwrap()
        .expect("the read-only call is sent again");
    assert_eq!(text(&replayed), "done");
    let (second_pid, _) = pids(&hub, "r").await;
    assert_ne!(first_pid, second_pid, "answered by the new server");
    assert_eq!(hub.stats("r").unwrap().reconnects, 1);
    hub.shutdown().await;
}

#[apply(process_test!)]
async fn start_reports_failures_and_required_servers_fail_it() {
    let mut disabled = testserver("off", &[]);
    disabled.enabled = false;
    let hub = Hub::builder()
        .servers([
            testserver("good", &[]),
            shell("dies", "echo boom >&2; exit 7"),
            shell("missing", "exec /nonexistent/switchboard-test-binary"),
            disabled,
        ])
        .persist(false)
        .build()
        .unwrap();
    let report = hub.start().await.expect("nothing required");
    assert_eq!(report.ready, vec!["good".to_owned()]);
    let not_ready: Vec<_> = report.not_ready.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(not_ready, ["dies", "missing"]);
    let dies = hub.status("dies").unwrap();
    let ServerState::Failed(failure) = &dies.state else {
        panic!("{dies:?}")
    };
    assert_eq!(failure.exit.and_then(|e| e.code), Some(7), "{failure:?}");
    assert!(
        failure
            .stderr_tail
            .as_deref()
            .unwrap_or("")
            .contains("boom")
    );
    assert!(matches!(
        hub.status("off").unwrap().state,
        ServerState::Disabled
    ));
    let off = hub.call("off", "echo", args(json!({"text": "x"}))).await;
    assert!(matches!(off, Err(HubError::Unavailable { .. })), "{off:?}");
    // The others keep working.
    assert!(
        hub.call("good", "echo", args(json!({"text": "x"})))
            .await
            .is_ok()
    );
    hub.shutdown().await;

    let mut required = shell("dies", "exit 7");
    required.required = true;
    let hub = Hub::builder()
        .servers([testserver("good", &[]), required])
        .persist(false)
        .build()
        .unwrap();
    let error = hub.start().await.expect_err("a required server failed");
    assert!(
        matches!(&error, HubError::RequiredFailed { server, .. } if server == "dies"),
        "{error:?}"
    );
    hub.shutdown().await;

    let duplicate = Hub::builder()
        .servers([testserver("a", &[]), testserver("a", &[])])
        .build();
    assert!(matches!(duplicate, Err(HubError::Config { .. })));
}

#[apply(process_test!)]
async fn tools_are_namespaced_filtered_and_routed() {
    let mut two = testserver("two", &[]);
    two.tools = ToolFilter {
        include: vec!["echo".into(), "ad*".into()],
        exclude: vec!["add".into()],
    };
    let hub = Hub::builder()
        .servers([testserver("one", &[]), two])
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let names: Vec<String> = hub.tools().into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"one__echo".to_owned()) && names.contains(&"one__add".to_owned()));
    let of_two: Vec<_> = names.iter().filter(|n| n.starts_with("two__")).collect();
    assert_eq!(of_two, ["two__echo", "two__add_tool"]);
    // `one__…` come before `two__…`: configuration order.
    let first_two = names.iter().position(|n| n.starts_with("two__")).unwrap();
    assert!(names[..first_two].iter().all(|n| n.starts_with("one__")));

    let echoed = hub
        .call_tool("two__echo", args(json!({"text": "routed"})))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "routed");
    assert_eq!(hub.stats("two").unwrap().calls, 1);
    assert_eq!(hub.stats("one").unwrap().calls, 0);
    let sum = hub
        .call_tool("one__add", args(json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(sum.structured_content.unwrap()["sum"].as_f64(), Some(5.0));

    let hidden = hub
        .call_tool("two__add", args(json!({"a": 1, "b": 1})))
        .await;
    assert!(
        matches!(hidden, Err(HubError::UnknownTool { .. })),
        "{hidden:?}"
    );
    let direct = hub.call("two", "add", args(json!({"a": 1, "b": 1}))).await;
    assert!(
        matches!(direct, Err(HubError::ToolNotAllowed { .. })),
        "{direct:?}"
    );
    let nobody = hub.call("three", "echo", None).await;
    assert!(
        matches!(nobody, Err(HubError::UnknownServer { .. })),
        "{nobody:?}"
    );
    let failing = hub.call("one", "fail", None).await;
    assert!(
        matches!(&failing, Err(HubError::Call { source, .. }) if source.is_server_error()),
        "{failing:?}"
    );
    assert_eq!(hub.stats("one").unwrap().errors, 1);
    hub.shutdown().await;
}

#[apply(process_test!)]
async fn colliding_names_are_made_unique_and_each_calls_its_own_server() {
    // Server `a__b`'s tool `c` and server `a`'s tool `b__c` both want
    // `a__b__c`; `a__b` comes first in the configuration, so it keeps it.
    let servers = || {
        [
            testserver("a__b", &["--extra-tool", "c"]),
            testserver("a", &["--extra-tool", "b__c"]),
        ]
    };
    let hub = Hub::builder()
        .servers(servers())
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let tools = hub.tools();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    let listed = names.len();
    names.dedup();
    assert_eq!(names.len(), listed, "two tools share a name: {names:?}");
    let find = |server: &str, tool: &str| {
        tools
            .iter()
            .find(|t| t.server == server && t.tool.name == tool)
            .unwrap_or_else(|| panic!("{server}'s {tool} is not listed"))
            .clone()
    };
    let kept = find("a__b", "c");
    assert_eq!(kept.name, "a__b__c");
    assert_eq!(kept.renamed_from, None);
    let renamed = find("a", "b__c");
    assert_eq!(renamed.renamed_from.as_deref(), Some("a__b__c"));
    // A hash of server and tool, fixed (see `routes.rs`).
    assert_eq!(renamed.name, "a__b__c_6e45u373");
    assert_eq!(
        find("a", "echo").renamed_from,
        None,
        "others keep their names"
    );

    let called = hub.call_tool("a__b__c", None).await.unwrap();
    assert_eq!(text(&called), "c called");
    let called = hub.call_tool(&renamed.name, None).await.unwrap();
    assert_eq!(text(&called), "b__c called");
    assert_eq!(hub.stats("a__b").unwrap().calls, 1);
    assert_eq!(hub.stats("a").unwrap().calls, 1);
    hub.shutdown().await;

    // Stable: another hub of the same configuration names it the same.
    let again = Hub::builder()
        .servers(servers())
        .persist(false)
        .build()
        .unwrap();
    again.start().await.unwrap();
    let same = again
        .tools()
        .into_iter()
        .find(|t| t.server == "a" && t.tool.name == "b__c")
        .unwrap();
    assert_eq!(same.name, renamed.name);
    again.shutdown().await;
}

#[apply(process_test!)]
async fn a_tool_list_change_renames_the_later_tool_and_routes_follow() {
    // `q__p` adds `dynamic_0` at runtime: `q__p__dynamic_0`, the name `q`'s
    // tool `p__dynamic_0` has until then. `q__p` comes first, so it takes
    // the name and `q`'s tool is renamed.
    let hub = Hub::builder()
        .servers([
            // The session era: its `list_changed` needs no subscription.
            testserver("q__p", &["--era", "legacy"]),
            testserver("q", &["--extra-tool", "p__dynamic_0"]),
        ])
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let before = hub.call_tool("q__p__dynamic_0", None).await.unwrap();
    assert_eq!(text(&before), "p__dynamic_0 called");
    assert!(hub.tools().iter().all(|t| t.renamed_from.is_none()));

    let mut events = hub.events();
    hub.call("q__p", "add_tool", None).await.unwrap();
    next_matching(&mut events, "q__p's new tool list", |e| match e {
        HubEvent::ToolsChanged { server, stale, .. } if server == "q__p" && !stale => Some(()),
        _ => None,
    })
    .await;
    let tools = hub.tools();
    let kept = tools.iter().find(|t| t.name == "q__p__dynamic_0").unwrap();
    assert_eq!(
        (kept.server.as_str(), kept.tool.name.as_str()),
        ("q__p", "dynamic_0")
    );
    let renamed = tools
        .iter()
        .find(|t| t.server == "q" && t.tool.name == "p__dynamic_0")
        .unwrap();
    assert_eq!(renamed.renamed_from.as_deref(), Some("q__p__dynamic_0"));
    // What is listed is what is routed.
    let now = hub.call_tool("q__p__dynamic_0", None).await.unwrap();
    assert_eq!(text(&now), "dynamic_0 called");
    let moved = hub.call_tool(&renamed.name, None).await.unwrap();
    assert_eq!(text(&moved), "p__dynamic_0 called");
    hub.shutdown().await;
}

#[apply(process_test!)]
async fn status_carries_what_each_era_negotiated_while_ready() {
    let hub = Hub::builder()
        .servers([
            testserver("old", &["--era", "legacy", "--name", "old-impl"]),
            testserver("new", &["--era", "modern", "--name", "new-impl"]),
        ])
        .persist(false)
        .build()
        .unwrap();
    let before = hub.status("old").unwrap();
    assert!(before.capabilities.is_none() && before.server_info.is_none());
    hub.start().await.unwrap();
    for (server, era, version, implementation) in [
        ("old", Era::Legacy, "2025-11-25", "old-impl"),
        ("new", Era::Modern, "2026-07-28", "new-impl"),
    ] {
        let status = hub.status(server).unwrap();
        assert_eq!(status.state, ServerState::Ready, "{server}");
        assert_eq!(status.era, Some(era), "{server}");
        assert_eq!(
            status.protocol_version.as_deref(),
            Some(version),
            "{server}"
        );
        let capabilities = status
            .capabilities
            .unwrap_or_else(|| panic!("{server}: no capabilities while ready"));
        assert!(capabilities.tools.is_some(), "{server}");
        assert!(capabilities.resources.is_some(), "{server}");
        assert_eq!(
            status.server_info.map(|i| i.name).as_deref(),
            Some(implementation),
            "{server}"
        );
        assert!(status.instructions.is_some(), "{server}");
    }
    hub.shutdown().await;
    let after = hub.status("new").unwrap();
    assert_eq!(after.state, ServerState::Stopped);
    assert!(after.capabilities.is_none(), "{after:?}");
    assert!(after.server_info.is_none() && after.instructions.is_none());
}

#[apply(process_test!)]
async fn call_options_bring_progress_back_and_bound_the_call() {
    let dir = state_dir("call-options");
    std::fs::create_dir_all(&dir).unwrap();
    let record = |server: &str| dir.join(format!("{server}.jsonl"));
    let recorded = |server: &str| record(server).to_string_lossy().into_owned();
    let hub = Hub::builder()
        .servers([
            testserver("old", &["--era", "legacy", "--record", &recorded("old")]),
            testserver("new", &["--era", "modern", "--record", &recorded("new")]),
        ])
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    for server in ["old", "new"] {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let options = RequestOptions::default().on_progress(move |p| {
            let _ = tx.send(p.progress);
        });
        let done = hub
            .call_with(server, "progress", args(json!({"steps": 3})), options)
            .await
            .unwrap();
        assert_ne!(done.is_error, Some(true), "{server}: {done:?}");
        // Every progress notification sent before the result has been
        // delivered when the call returns (the hub's calls follow progress
        // through the client's event stream, which is drained first).
        let mut seen = Vec::new();
        while let Ok(progress) = rx.try_recv() {
            seen.push(progress);
        }
        assert_eq!(seen, [1.0, 2.0, 3.0], "{server}");

        // The hub-wide name takes options too; `hang` never answers.
        let started = Instant::now();
        let hung = hub
            .call_tool_with(
                &format!("{server}__hang"),
                None,
                RequestOptions::timeout(Duration::from_millis(300)),
            )
            .await;
        let waited = started.elapsed();
        assert!(
            matches!(&hung, Err(e @ HubError::Call { server: s, .. }) if e.is_timeout() && s == server),
            "{server}: {hung:?}"
        );
        assert!(
            waited < Duration::from_secs(10),
            "{server}: the 300 ms timeout took {waited:?}"
        );
        assert_eq!(hub.stats(server).unwrap().timeouts, 1, "{server}");
        // The server is still usable after the timeout.
        let echoed = hub
            .call(server, "echo", args(json!({"text": "still here"})))
            .await
            .unwrap();
        assert_eq!(text(&echoed), "still here");

        // The caller's `_meta` reaches the server, on either era.
        let options = RequestOptions::default().meta("com.example/call", format!("from-{server}"));
        hub.call_with(server, "echo", args(json!({"text": "meta"})), options)
            .await
            .unwrap();
        let sent = std::fs::read_to_string(record(server)).unwrap();
        let call = sent
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .find(|m| m["params"]["arguments"]["text"] == "meta")
            .unwrap_or_else(|| panic!("{server} recorded no call with _meta: {sent}"));
        assert_eq!(
            call["params"]["_meta"]["com.example/call"],
            format!("from-{server}"),
            "{server}: {call}"
        );
    }
    hub.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[apply(process_test!)]
async fn state_file_answers_listing_before_start_and_corrupt_files_are_dropped() {
    let dir = state_dir("persist");
    let config = || testserver("p", &[]);
    let hub = Hub::builder()
        .server(config())
        .state_dir(&dir)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let live = hub.status("p").unwrap();
    hub.shutdown().await;

    let cold = Hub::builder()
        .server(config())
        .state_dir(&dir)
        .build()
        .unwrap();
    let listed = cold.status("p").unwrap();
    assert_eq!(listed.state, ServerState::Pending);
    assert_eq!(listed.last_known_state.as_deref(), Some("ready"));
    assert_eq!(listed.transport.as_deref(), Some("stdio"));
    assert_eq!(listed.era, live.era);
    assert!(listed.era.is_some());
    assert_eq!(listed.tools, live.tools);
    assert!(listed.tools_stale);
    let tools = cold.tools();
    assert!(!tools.is_empty() && tools.iter().all(|t| t.stale && t.server == "p"));

    // Another command under the same name is another server.
    let other = Hub::builder()
        .server(testserver("p", &["--name", "other"]))
        .state_dir(&dir)
        .build()
        .unwrap();
    assert!(other.status("p").unwrap().tools.is_empty());

    let file = dir.join("hub-state.json");
    for bad in [
        "{\"format\": 1, \"servers\": ",
        "{\"format\": 99, \"servers\": {}}",
    ] {
        std::fs::write(&file, bad).unwrap();
        let fresh = Hub::builder()
            .server(config())
            .state_dir(&dir)
            .build()
            .unwrap();
        let status = fresh.status("p").unwrap();
        assert!(status.tools.is_empty() && status.last_known_state.is_none());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[apply(process_test!)]
async fn the_state_file_is_private_and_holds_no_expanded_or_literal_secret() {
    use std::os::unix::fs::PermissionsExt;
    use switchboard_hub::config::{Expander, Locations};

    let dir = state_dir("private");
    let locations = Locations::new("/nonexistent-home", "/nonexistent-project")
        .with_var("SECRET", "sk-expanded-4b1d");
    // One server given a `${SECRET}` reference, one a secret written literally.
    let referenced = testserver("ref", &["--name", "${SECRET}"]);
    let expanded = Expander::new(&locations)
        .expand(&referenced)
        .unwrap()
        .config;
    match &expanded.transport {
        TransportConfig::Stdio { args, .. } => assert!(args.contains(&"sk-expanded-4b1d".into())),
        other => panic!("{other:?}"),
    }
    let literal = testserver("lit", &["--name", "sk-literal-77e0"]);
    let hub = Hub::builder()
        .server(expanded.clone())
        .server(literal.clone())
        .state_dir(&dir)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    hub.shutdown().await;

    let file = dir.join("hub-state.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("\"ref\"") && text.contains("\"lit\""),
        "{text}"
    );
    for secret in ["sk-expanded-4b1d", "sk-literal-77e0"] {
        assert!(!text.contains(secret), "{secret} in the state file: {text}");
    }
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&dir), 0o700);

    // The entries still answer for the same servers, expanded anew: the
    // state belongs to the configuration as written.
    let cold = Hub::builder()
        .server(
            Expander::new(&locations)
                .expand(&referenced)
                .unwrap()
                .config,
        )
        .server(literal)
        .state_dir(&dir)
        .build()
        .unwrap();
    assert_eq!(
        cold.status("ref").unwrap().last_known_state.as_deref(),
        Some("ready")
    );
    assert_eq!(
        cold.status("lit").unwrap().last_known_state.as_deref(),
        Some("ready")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[apply(process_test!)]
async fn shutdown_leaves_no_process_behind() {
    let hub = Hub::builder()
        .servers((0..3).map(|i| testserver(&format!("s{i}"), &[])))
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let mut all = Vec::new();
    for i in 0..3 {
        let (server, grandchild) = pids(&hub, &format!("s{i}")).await;
        assert!(alive(server) && alive(grandchild));
        all.extend([server, grandchild]);
    }
    hub.shutdown().await;
    // The servers are reaped by the time shutdown returns; the grandchildren
    // were killed with their group, but another process reaps them.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let survivors: Vec<_> = all.iter().filter(|&&pid| alive(pid)).collect();
        if survivors.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "still running: {survivors:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        hub.list().iter().all(|s| s.state == ServerState::Stopped),
        "{:?}",
        hub.list()
    );
}

#[apply(process_test!)]
async fn a_lagging_event_consumer_gets_a_marker_and_never_blocks_the_hub() {
    let hub = Hub::builder()
        .servers((0..3).map(|i| testserver(&format!("s{i}"), &[])))
        .event_capacity(2)
        .persist(false)
        .build()
        .unwrap();
    let mut events = hub.events();
    // Nobody reads while three servers start (nine events).
    hub.start().await.unwrap();
    let first = events.next().await;
    assert!(
        matches!(first, Some(HubEvent::Lagged(n)) if n > 0),
        "{first:?}"
    );
    assert!(events.next().await.is_some());
    hub.shutdown().await;
}

#[apply(process_test!)]
async fn a_missed_keepalive_ping_reconnects() {
    let hub = Hub::builder()
        .server(testserver("k", &["--era", "legacy"]))
        .keepalive(Some(Duration::from_millis(200)))
        .backoff(Backoff::new(
            Duration::from_millis(50),
            Duration::from_secs(1),
            3,
        ))
        .persist(false)
        .build()
        .unwrap();
    let mut events = hub.events();
    hub.start().await.unwrap();
    let (pid, _) = pids(&hub, "k").await;
    // A stopped process answers nothing, and its pipes stay open.
    kill("-STOP", pid);
    let reason = next_matching(&mut events, "the missed ping", |e| match e {
        HubEvent::StateChanged {
            state: ServerState::Reconnecting { reason, .. },
            ..
        } => Some(reason.clone()),
        _ => None,
    })
    .await;
    assert!(reason.message.contains("keepalive"), "{reason:?}");
    next_matching(&mut events, "ready again", |e| match e {
        HubEvent::StateChanged {
            state: ServerState::Ready,
            ..
        } => Some(()),
        _ => None,
    })
    .await;
    let (new_pid, _) = pids(&hub, "k").await;
    assert_ne!(new_pid, pid);
    // The stopped server was killed when its connection was dropped.
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "the unresponsive server still runs"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    hub.shutdown().await;
}

#[apply(process_test!)]
async fn startup_timeout_fails_a_server_that_never_answers() {
    let mut silent = shell("silent", "exec sleep 30");
    silent.startup_timeout = Some(Duration::from_millis(300));
    let hub = Hub::builder()
        .server(silent)
        .persist(false)
        .build()
        .unwrap();
    let started = Instant::now();
    hub.start().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let status = hub.status("silent").unwrap();
    assert!(
        matches!(&status.state, ServerState::Failed(f) if f.message.contains("did not start within")),
        "{status:?}"
    );
    hub.shutdown().await;
}

/// The test server on loopback HTTP (`listening on http://…` is its first
/// line); killed when dropped.
struct HttpServer {
    child: std::process::Child,
    base: String,
    /// Kept open: the server may write more, and a closed pipe could end it.
    _stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl HttpServer {
    fn start(flags: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["__testserver", "--http", "127.0.0.1:0"])
            .args(flags)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap()
            .to_owned();
        Self {
            child,
            base,
            _stdout: stdout,
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A 401 is `needs-auth` with the server's challenge, and the application's
/// auth factory is asked for the server's provider on each attempt.
#[apply(process_test!)]
async fn a_remote_server_that_answers_401_needs_auth() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let server = HttpServer::start(&["--auth"]);
    let remote = ServerConfig::new(
        "remote",
        TransportConfig::Http {
            url: format!("{}/mcp", server.base),
            headers: BTreeMap::new(),
            kind: switchboard_hub::HttpKind::Auto,
        },
        origin(),
    );
    let asked = Arc::new(AtomicUsize::new(0));
    let hub = Hub::builder()
        .server(remote)
        .auth({
            let asked = asked.clone();
            move |config| {
                assert_eq!(config.name, "remote");
                asked.fetch_add(1, Ordering::SeqCst);
                None
            }
        })
        .persist(false)
        .build()
        .unwrap();
    let report = hub.start().await.unwrap();
    assert!(report.ready.is_empty());
    let status = hub.status("remote").unwrap();
    let ServerState::NeedsAuth { www_authenticate } = &status.state else {
        panic!("{status:?}")
    };
    assert!(
        www_authenticate
            .as_deref()
            .is_some_and(|c| c.starts_with("Bearer")),
        "{www_authenticate:?}"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    let call = hub.call("remote", "echo", None).await;
    assert!(
        call.as_ref().is_err_and(HubError::is_auth_required),
        "{call:?}"
    );
    hub.shutdown().await;
}

/// A server that failed (or needed a login) is started again on request;
/// one that runs is restarted (a new process); nothing starts after a
/// shutdown.
#[apply(process_test!)]
async fn a_failed_server_restarts_on_request() {
    let dir = state_dir("restart");
    std::fs::create_dir_all(&dir).unwrap();
    let gate = dir.join("gate");
    let exe = std::env::current_exe().unwrap();
    let gated = ServerConfig::new(
        "gated",
        TransportConfig::Stdio {
            command: "sh".into(),
            args: vec![
                "-c".into(),
                r#"if [ -e "$2" ]; then exec "$1" __testserver; fi; echo locked >&2; exit 3"#
                    .into(),
                "sh".into(),
                exe.to_string_lossy().into_owned(),
                gate.to_string_lossy().into_owned(),
            ],
            env: BTreeMap::new(),
            cwd: None,
        },
        origin(),
    );
    let hub = Hub::builder().server(gated).persist(false).build().unwrap();
    let report = hub.start().await.unwrap();
    assert!(
        matches!(&report.not_ready[..], [(_, ServerState::Failed(f))] if f.exit.and_then(|e| e.code) == Some(3)),
        "{report:?}"
    );
    std::fs::write(&gate, "").unwrap();
    let state = hub.restart("gated").await.unwrap();
    assert_eq!(state, ServerState::Ready);
    // A running server is restarted: a new process, the old one gone.
    let (pid, _) = pids(&hub, "gated").await;
    assert_eq!(hub.restart("gated").await.unwrap(), ServerState::Ready);
    assert_ne!(
        pids(&hub, "gated").await.0,
        pid,
        "the server kept its process"
    );
    assert!(!alive(pid), "the old process {pid} still runs");
    hub.shutdown().await;
    let after = hub.restart("gated").await;
    assert!(
        matches!(after, Err(HubError::Unavailable { .. })),
        "{after:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The server's request timeout reaches its client, the application's
/// template is applied to every connection attempt, and a timed-out call
/// is counted as one.
#[apply(process_test!)]
async fn request_timeouts_and_the_client_template_apply_per_server() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut quick = testserver("quick", &[]);
    quick.request_timeout = Some(Duration::from_millis(200));
    let built = Arc::new(AtomicUsize::new(0));
    let hub = Hub::builder()
        .servers([quick, testserver("patient", &[])])
        .client({
            let built = built.clone();
            move |config, builder| {
                built.fetch_add(1, Ordering::SeqCst);
                builder.client_info(switchboard::types::Implementation::new(
                    format!("hub-test-{}", config.name),
                    "1.0",
                ))
            }
        })
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    assert_eq!(built.load(Ordering::SeqCst), 2);
    let timed_out = hub.call("quick", "slow", args(json!({"ms": 2000}))).await;
    assert!(
        timed_out.as_ref().is_err_and(HubError::is_timeout),
        "{timed_out:?}"
    );
    let patient = hub.call("patient", "slow", args(json!({"ms": 400}))).await;
    assert_eq!(text(&patient.unwrap()), "done");
    let stats = hub.stats("quick").unwrap();
    assert_eq!((stats.calls, stats.errors, stats.timeouts), (1, 1, 1));
    assert!(
        stats.p50.unwrap() >= Duration::from_millis(200),
        "{stats:?}"
    );
    hub.shutdown().await;
}

// ------------------------------------------------------------ tool policy

fn policy(deny: &[&str], ask: &[&str]) -> switchboard_hub::config::policy::ToolPolicy {
    let rules = |rules: &[&str]| {
        rules
            .iter()
            .map(|r| ("/tests/policy.toml".to_owned(), (*r).to_owned()))
            .collect()
    };
    switchboard_hub::config::policy::ToolPolicy {
        deny: rules(deny),
        ask: rules(ask),
        ..Default::default()
    }
}

/// An approver answering `answer` and counting the questions.
fn answering(
    answer: switchboard_hub::hub::ToolAnswer,
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> std::sync::Arc<dyn switchboard_hub::hub::ToolApprover> {
    std::sync::Arc::new(
        move |_: switchboard_hub::hub::ToolAsk| -> switchboard::BoxFuture<
            'static,
            switchboard_hub::hub::ToolAnswer,
        > {
            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let answer = answer.clone();
            Box::pin(async move { answer })
        },
    )
}

/// The attacker's route: `a`'s tool `b__c` is denied, and it is also
/// reachable under the hashed name it got because `a__b`'s `c` took
/// `a__b__c`. The deny names the (server, tool) pair, so no name escapes
/// it; the other tool that wanted the name is not caught by it.
#[apply(process_test!)]
async fn a_denied_tool_is_refused_under_every_name_and_not_listed() {
    let servers = || {
        [
            testserver("a__b", &["--extra-tool", "c"]),
            testserver("a", &["--extra-tool", "b__c"]),
        ]
    };
    for rule in ["a/b__c", "a/b__*"] {
        let hub = Hub::builder()
            .servers(servers())
            .persist(false)
            .tool_policy(policy(&[rule], &[]))
            .build()
            .unwrap();
        hub.start().await.unwrap();
        assert!(
            !hub.tools()
                .iter()
                .any(|t| t.server == "a" && t.tool.name == "b__c"),
            "{rule}: the denied tool is listed"
        );
        for error in [
            hub.call_tool("a__b__c_6e45u373", None).await.unwrap_err(),
            hub.call("a", "b__c", None).await.unwrap_err(),
        ] {
            assert!(
                matches!(error, HubError::ToolDenied { .. }),
                "{rule}: {error:?}"
            );
            let said = error.to_string();
            assert!(
                said.contains("server `a`")
                    && said.contains("b__c")
                    && said.contains(rule)
                    && said.contains("/tests/policy.toml"),
                "{rule}: {said}"
            );
        }
        // `a__b`'s `c` keeps its name and runs.
        let called = hub.call_tool("a__b__c", None).await.unwrap();
        assert_eq!(text(&called), "c called");
        assert_eq!(
            hub.stats("a").unwrap().calls,
            0,
            "{rule}: nothing reached `a`"
        );
        hub.shutdown().await;
    }
    // The hub-wide form of the rule is matched against the pair's own
    // `SERVER__TOOL`: the hashed name does not escape it either.
    let hub = Hub::builder()
        .servers(servers())
        .persist(false)
        .tool_policy(policy(&["a__b__c"], &[]))
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let error = hub.call_tool("a__b__c_6e45u373", None).await.unwrap_err();
    assert!(error.is_policy_refusal(), "{error:?}");
    hub.shutdown().await;
}

/// `ask`: answered by the caller's approver (per call, else the hub's);
/// with none the call is refused; "always" is remembered per server
/// identity, in a private file, and revocable.
#[apply(process_test!)]
async fn an_ask_is_answered_by_the_callers_approver_and_always_is_remembered() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use switchboard_hub::hub::{RememberedAllows, ToolAnswer};
    let dir = state_dir("ask-approver");
    let file = dir.join("data").join("tool-allows.json");
    let hub = Hub::builder()
        .server(testserver("s", &[]))
        .persist(false)
        .tool_policy(policy(&[], &["s/echo"]))
        .remembered_allows(RememberedAllows::at(&file))
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let echo = || args(json!({"text": "hi"}));
    // Nobody to ask: refused, and the server never sees it.
    let error = hub.call("s", "echo", echo()).await.unwrap_err();
    assert!(
        matches!(error, HubError::ToolNotApproved { .. })
            && error.to_string().contains("asks first")
            && error.to_string().contains("s/echo"),
        "{error}"
    );
    assert_eq!(hub.stats("s").unwrap().calls, 0);
    // Refused by the caller's user.
    let asked = Arc::new(AtomicUsize::new(0));
    let refuse = answering(ToolAnswer::Refuse("the user said no".into()), asked.clone());
    let error = hub
        .call_asking("s", "echo", echo(), RequestOptions::default(), Some(refuse))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("the user said no"), "{error}");
    // Once: runs, and the next call is asked again.
    let once = answering(ToolAnswer::Once, asked.clone());
    for _ in 0..2 {
        hub.call_tool_asking(
            "s__echo",
            echo(),
            RequestOptions::default(),
            Some(once.clone()),
        )
        .await
        .unwrap();
    }
    assert_eq!(asked.load(Ordering::SeqCst), 3);
    // Always: remembered, not asked again; the file is private.
    let always = answering(ToolAnswer::Always, asked.clone());
    hub.call_asking("s", "echo", echo(), RequestOptions::default(), Some(always))
        .await
        .unwrap();
    let asked_before = asked.load(Ordering::SeqCst);
    hub.call("s", "echo", echo()).await.unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), asked_before);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }
    hub.shutdown().await;
    // A server of that name configured otherwise is another identity:
    // asked again (and refused with nobody to ask).
    let changed = Hub::builder()
        .server(testserver("s", &["--name", "other"]))
        .persist(false)
        .tool_policy(policy(&[], &["s/echo"]))
        .remembered_allows(RememberedAllows::at(&file))
        .build()
        .unwrap();
    changed.start().await.unwrap();
    let error = changed.call("s", "echo", echo()).await.unwrap_err();
    assert!(error.is_policy_refusal(), "{error}");
    changed.shutdown().await;
    // Revoked: asked again.
    let again = Hub::builder()
        .server(testserver("s", &[]))
        .persist(false)
        .tool_policy(policy(&[], &["s/echo"]))
        .remembered_allows(RememberedAllows::at(&file))
        .build()
        .unwrap();
    again.start().await.unwrap();
    again.call("s", "echo", echo()).await.unwrap();
    assert_eq!(again.remembered_allows().revoke("s", "echo").unwrap(), 1);
    let error = again.call("s", "echo", echo()).await.unwrap_err();
    assert!(error.is_policy_refusal(), "{error}");
    again.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The question may stay open a while: if the server is replaced
/// meanwhile (a reload with another configuration), the answer does not
/// let whatever now has the name run.
#[apply(process_test!)]
async fn an_ask_answered_after_its_server_changed_calls_nothing() {
    use std::sync::Arc;
    use switchboard_hub::hub::{ToolAnswer, ToolApprover, ToolAsk};
    let hub = Hub::builder()
        .server(testserver("s", &[]))
        .persist(false)
        .tool_policy(policy(&[], &["s/echo"]))
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let (asked_tx, asked) = tokio::sync::oneshot::channel::<()>();
    let (answer_tx, answer) = tokio::sync::oneshot::channel::<()>();
    let asked_tx = std::sync::Mutex::new(Some(asked_tx));
    let answer = Arc::new(tokio::sync::Mutex::new(Some(answer)));
    let approver: Arc<dyn ToolApprover> = Arc::new(
        move |_: ToolAsk| -> switchboard::BoxFuture<'static, ToolAnswer> {
            if let Some(tx) = asked_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            let answer = answer.clone();
            Box::pin(async move {
                if let Some(rx) = answer.lock().await.take() {
                    let _ = rx.await;
                }
                ToolAnswer::Once
            })
        },
    );
    let calling = hub.clone();
    let call = tokio::spawn(async move {
        calling
            .call_asking(
                "s",
                "echo",
                args(json!({"text": "x"})),
                RequestOptions::default(),
                Some(approver),
            )
            .await
    });
    asked.await.unwrap();
    // While the question is open, `s` is replaced by another server.
    hub.apply(vec![testserver("s", &["--name", "replaced"])])
        .await
        .unwrap();
    answer_tx.send(()).unwrap();
    let error = call.await.unwrap().unwrap_err();
    assert!(
        error.is_policy_refusal() && error.to_string().contains("while the question was open"),
        "{error}"
    );
    assert_eq!(hub.stats("s").unwrap().calls, 0, "the new `s` got no call");
    hub.shutdown().await;
}

/// The policy is live: a deny given by the policy source is applied by
/// the next reload, to the next call and listing.
#[apply(process_test!)]
async fn a_deny_read_on_reload_applies_to_the_next_call() {
    use std::sync::{Arc, Mutex};
    let rules = Arc::new(Mutex::new(policy(&[], &[])));
    let source = rules.clone();
    let hub = Hub::builder()
        .server(testserver("s", &[]))
        .persist(false)
        .config_source(|| Ok(vec![testserver("s", &[])]))
        .tool_policy_source(move || Ok(source.lock().unwrap().clone()))
        .build()
        .unwrap();
    hub.start().await.unwrap();
    hub.call("s", "echo", args(json!({"text": "x"})))
        .await
        .unwrap();
    *rules.lock().unwrap() = policy(&["s/echo"], &[]);
    let report = hub.reload().await.unwrap();
    assert!(report.policy_changed);
    assert_eq!(report.unchanged, vec!["s".to_owned()]);
    let error = hub
        .call("s", "echo", args(json!({"text": "x"})))
        .await
        .unwrap_err();
    assert!(matches!(error, HubError::ToolDenied { .. }), "{error:?}");
    assert!(!hub.tools().iter().any(|t| t.tool.name == "echo"));
    hub.shutdown().await;
}

/// Issue 28 (low): a backend that sends 20,000
/// `notifications/tools/list_changed` in a row gets two or three
/// `tools/list` beyond its first, not one per notification (on main: one
/// each, in turn; 1,025 of them with the client's default buffer, which
/// drops the rest). One re-list runs at a time, covering every
/// notification already heard, and whatever is heard while it runs makes
/// exactly one more. The client's buffer here holds the whole flood, so
/// none is dropped and the backend's last word after it (a log line)
/// reaches the hub's events once the hub has heard all of it.
#[apply(process_test!)]
async fn a_flood_of_tool_list_changes_costs_a_handful_of_listings() {
    const FLOOD: usize = 20_000;
    // The first listing, the one the flood started, and the one it asked
    // for while that ran.
    const HANDFUL: usize = 3;
    let dir = state_dir("flood");
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("requests.log");
    let server = ServerConfig::new(
        "flood",
        TransportConfig::Stdio {
            command: std::env::current_exe()
                .expect("current exe")
                .to_string_lossy()
                .into_owned(),
            args: vec![
                "__listserver".into(),
                "--flood".into(),
                FLOOD.to_string(),
                "--record".into(),
                record.to_string_lossy().into_owned(),
            ],
            env: BTreeMap::new(),
            cwd: None,
        },
        origin(),
    );
    let hub = Hub::builder()
        .server(server)
        .persist(false)
        .event_capacity(4096)
        .client(|_, client| client.notification_buffer(2 * FLOOD))
        .build()
        .unwrap();
    let mut events = hub.events();
    hub.start().await.unwrap();
    // Every list the hub takes in (the first one too) is a `ToolsChanged`:
    // wait for the flood's end and a list taken in after its start.
    let mut lists = 0;
    let mut flood_over = false;
    while !(flood_over && lists >= 2) {
        match next_matching(&mut events, "the flood's end", |e| Some(e.clone())).await {
            HubEvent::ToolsChanged { .. } => {
                lists += 1;
                assert!(
                    lists <= HANDFUL,
                    "{FLOOD} list_changed notifications: the hub took in {lists} tool lists already"
                );
            }
            HubEvent::Server {
                event: switchboard::Event::Log(log),
                ..
            } if log.data == "flood sent" => flood_over = true,
            HubEvent::Lagged(missed) => panic!("the hub's events lagged by {missed}"),
            _ => {}
        }
    }
    // At most one more listing runs now; stopping the hub ends it. The
    // backend recorded every request it read.
    hub.shutdown().await;
    let asked = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .filter(|method| *method == "tools/list")
        .count();
    println!("{FLOOD} list_changed: {asked} tools/list");
    assert!(
        (2..=HANDFUL).contains(&asked),
        "{FLOOD} list_changed notifications made {asked} tools/list"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// MCP Apps through the gateway, in both backend eras: two app servers
/// whose views have the same `ui://` URI. A host that renders apps sees
/// each tool's `_meta.ui.resourceUri` as a `ui://` URI of its own server
/// (the two no longer collide), reads it through the gateway and gets the
/// backend's exact HTML, MIME type and `_meta.ui`; the app-only tool is
/// listed to it and to no host that does not render apps.
#[apply(process_test!)]
async fn mcp_apps_come_through_the_gateway_whole() {
    use switchboard::types::apps::APP_MIME_TYPE;
    use switchboard::types::{Implementation, ResourceContents};
    use switchboard_hub::HubServer;
    for era in ["legacy", "modern"] {
        let hub = Hub::builder()
            .servers([
                testserver("w1", &["--apps", "--era", era]),
                testserver("w2", &["--apps", "--era", era]),
            ])
            .client(|_, builder| builder.mcp_apps())
            .persist(false)
            .build()
            .unwrap();
        hub.start().await.unwrap();
        let direct = hub.client("w1").unwrap();
        let gateway = HubServer::new(hub.clone(), Implementation::new("gateway", "1.0.0"));
        let host = gateway
            .clone()
            .connect(switchboard::Client::builder().mcp_apps())
            .await
            .unwrap();
        let tools = host.list_tools().await.unwrap();
        let tool = |name: &str| {
            tools
                .iter()
                .find(|t| t.name == name)
                .unwrap_or_else(|| panic!("{era}: no {name} in {tools:?}"))
        };
        assert!(tool("w1__dashboard_refresh").is_app_only(), "{era}");
        let uris: Vec<String> = ["w1__dashboard", "w2__dashboard"]
            .iter()
            .map(|name| tool(name).app_uri().expect("an app's tool"))
            .collect();
        assert_ne!(uris[0], uris[1], "{era}: the two apps' views collide");
        for uri in &uris {
            assert!(uri.starts_with("ui://"), "{era}: {uri}");
        }
        let own = direct
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .find(|t| t.name == "dashboard")
            .unwrap()
            .app_uri()
            .unwrap();
        let through = host.read_resource(&uris[0]).await.unwrap();
        let backend = direct.read_resource(&own).await.unwrap();
        assert_eq!(through.contents.len(), 1, "{era}");
        let (ResourceContents::Text(through), ResourceContents::Text(backend)) =
            (&through.contents[0], &backend.contents[0])
        else {
            panic!("{era}: HTML as text expected: {through:?}");
        };
        assert_eq!(through.text, backend.text, "{era}: the same HTML");
        assert_eq!(through.mime_type.as_deref(), Some(APP_MIME_TYPE), "{era}");
        assert_eq!(through.meta, backend.meta, "{era}: the same _meta.ui");
        assert_eq!(
            through.uri, uris[0],
            "{era}: the contents under the served URI"
        );
        // The host's app calls its app-only tool through the gateway.
        let refreshed = host.call_tool("w1__dashboard_refresh", None).await.unwrap();
        assert_ne!(refreshed.is_error, Some(true), "{era}: {refreshed:?}");
        host.close().await;

        // A host that renders no app is not shown app-only tools.
        let plain = gateway
            .connect(switchboard::Client::builder())
            .await
            .unwrap();
        let names: Vec<String> = plain
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert!(
            names.contains(&"w1__dashboard".to_owned()),
            "{era}: {names:?}"
        );
        assert!(
            !names.iter().any(|n| n.ends_with("dashboard_refresh")),
            "{era}: {names:?}"
        );
        plain.close().await;
        hub.shutdown().await;
    }
}

/// A session-era host subscribes to a backend's resource through the
/// gateway and hears of its updates under the URI it subscribed to,
/// whichever era the backend speaks; once it unsubscribes it hears no
/// more (the next update it hears is of another subscription).
#[apply(process_test!)]
async fn a_hosts_subscription_brings_the_backends_updates() {
    use switchboard::Event;
    use switchboard::types::Implementation;
    use switchboard_hub::HubServer;
    for era in ["legacy", "modern"] {
        let hub = Hub::builder()
            .server(testserver("s", &["--era", era]))
            .persist(false)
            .build()
            .unwrap();
        hub.start().await.unwrap();
        let host = HubServer::new(hub.clone(), Implementation::new("gateway", "1.0.0"))
            .connect(switchboard::Client::builder().era_mode(switchboard::EraMode::Legacy))
            .await
            .unwrap();
        let mut events = host.events();
        let next_update = async |events: &mut switchboard::EventStream| loop {
            match events.next().await {
                Some(Event::ResourceUpdated { uri }) => break uri,
                Some(_) => continue,
                None => panic!("{era}: the host's events ended"),
            }
        };
        let touch = |uri: &str| json!({ "uri": uri }).as_object().cloned();
        let (first, second) = ("test://static/hello", "test://static/other");
        host.subscribe_resource(first).await.unwrap();
        host.call_tool("s__touch", touch(first)).await.unwrap();
        assert_eq!(next_update(&mut events).await, first, "{era}");
        host.unsubscribe_resource(first).await.unwrap();
        host.call_tool("s__touch", touch(first)).await.unwrap();
        host.subscribe_resource(second).await.unwrap();
        host.call_tool("s__touch", touch(second)).await.unwrap();
        assert_eq!(
            next_update(&mut events).await,
            second,
            "{era}: after unsubscribing"
        );
        host.close().await;
        hub.shutdown().await;
    }
}

/// A session-era host hears the log lines its call's backend sends while
/// the call runs, before its result.
#[apply(process_test!)]
async fn a_calls_log_lines_reach_its_host() {
    use switchboard::Event;
    use switchboard::types::Implementation;
    use switchboard_hub::{BackendAsks, HubServer};
    let asks = BackendAsks::new();
    let forwarding = asks.clone();
    let hub = Hub::builder()
        .server(testserver("s", &["--era", "legacy"]))
        .client(move |server, builder| forwarding.client(&server.name, builder))
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let host = HubServer::new(hub.clone(), Implementation::new("gateway", "1.0.0"))
        .forward_asks(asks)
        .connect(switchboard::Client::builder().era_mode(switchboard::EraMode::Legacy))
        .await
        .unwrap();
    let mut events = host.events();
    let result = host
        .call_tool("s__flood", json!({"count": 3}).as_object().cloned())
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match events.next().await {
            Some(Event::Log(line)) => seen.push(line.data["seq"].as_u64().unwrap()),
            Some(_) => {}
            None => panic!("the host's events ended after {seen:?}"),
        }
    }
    assert_eq!(seen, [0, 1, 2]);
    host.close().await;
    hub.shutdown().await;
}
