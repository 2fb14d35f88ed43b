//! The hub while it runs: servers added, removed, switched, restarted and
//! reloaded (with their processes watched: a changed server restarts, an
//! unchanged one keeps its pid); each server's progress, log lines,
//! resource updates and list changes in the hub's events, in both eras;
//! roots offered to every server. Real processes: the test server is this
//! binary (`runtime __testserver …`), see `support/mod.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard::types::{CallToolResult, ContentBlock, JsonObject, LoggingLevel, Root};
use switchboard::{Event, RequestOptions, Roots};
use switchboard_hub::hub::Hub;
use switchboard_hub::{
    Dialect, HubError, HubEvent, Origin, Scope, ServerConfig, ServerState, TransportConfig,
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
        file: PathBuf::from("/tests/runtime.toml"),
        dialect: Dialect::Switchboard,
        scope: Scope::Explicit,
    }
}

/// The test server under `name`, in `era`, with extra flags.
fn testserver(name: &str, era: &str, flags: &[&str]) -> ServerConfig {
    let mut args = vec!["__testserver".to_owned(), "--era".into(), era.into()];
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

fn root(uri: &str) -> Root {
    Root {
        uri: uri.into(),
        ..Default::default()
    }
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

/// The test server's pid, as its `spawn_grandchild` tool tells it.
async fn pid(hub: &Hub, server: &str) -> u32 {
    let result = hub
        .call(server, "spawn_grandchild", None)
        .await
        .expect("spawn_grandchild");
    let structured = result.structured_content.expect("structuredContent");
    structured["serverPid"].as_u64().expect("pid") as u32
}

fn tool_names(hub: &Hub) -> Vec<String> {
    hub.tools().into_iter().map(|t| t.name).collect()
}

fn has_tool(hub: &Hub, name: &str) -> bool {
    tool_names(hub).iter().any(|n| n == name)
}

// -------------------------------------------------------------------- tests

/// `add`, `remove`, `reload` (a changed server restarts, an unchanged one
/// keeps its process), `disable`, `enable` and `restart` while the hub
/// runs, each with its events.
#[apply(process_test!)]
async fn servers_come_and_go_while_the_hub_runs() {
    let configured = Arc::new(Mutex::new(vec![
        testserver("a", "legacy", &[]),
        testserver("b", "modern", &[]),
    ]));
    let source = configured.clone();
    let hub = Hub::builder()
        .servers(configured.lock().unwrap().clone())
        .config_source(move || Ok(source.lock().unwrap().clone()))
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let pid_a = pid(&hub, "a").await;
    let pid_b = pid(&hub, "b").await;
    let mut events = hub.events();

    // add: the new server starts at once, its tools join the list.
    let state = hub.add(testserver("c", "legacy", &[])).await.unwrap();
    assert_eq!(state, ServerState::Ready);
    next_matching(&mut events, "c added", |e| match e {
        HubEvent::ServerAdded { server } if server == "c" => Some(()),
        _ => None,
    })
    .await;
    assert!(has_tool(&hub, "c__echo"), "{:?}", tool_names(&hub));
    let pid_c = pid(&hub, "c").await;
    let again = hub.add(testserver("c", "legacy", &[])).await.unwrap_err();
    assert!(
        matches!(&again, HubError::ServerExists { server } if server == "c"),
        "{again}"
    );
    let names: Vec<_> = hub.list().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["a", "b", "c"]);

    // remove: stopped (its process gone), out of the list and the routes.
    hub.remove("c").await.unwrap();
    next_matching(&mut events, "c removed", |e| match e {
        HubEvent::ServerRemoved { server } if server == "c" => Some(()),
        _ => None,
    })
    .await;
    assert!(
        !alive(pid_c),
        "the removed server's process {pid_c} still runs"
    );
    assert!(!has_tool(&hub, "c__echo"));
    assert!(matches!(
        hub.call_tool("c__echo", args(json!({"message": "x"})))
            .await,
        Err(HubError::UnknownTool { .. })
    ));
    assert!(matches!(
        hub.remove("c").await,
        Err(HubError::UnknownServer { .. })
    ));

    // reload: `a` unchanged keeps its process, `b` changed restarts, `d`
    // is new.
    *configured.lock().unwrap() = vec![
        testserver("a", "legacy", &[]),
        testserver("b", "modern", &["--extra-tool", "fresh"]),
        testserver("d", "legacy", &[]),
    ];
    let report = hub.reload().await.unwrap();
    assert_eq!(report.unchanged, ["a"]);
    assert_eq!(report.changed, ["b"]);
    assert_eq!(report.added, ["d"]);
    assert!(report.removed.is_empty());
    next_matching(&mut events, "b changed", |e| match e {
        HubEvent::ServerChanged { server } if server == "b" => Some(()),
        _ => None,
    })
    .await;
    let reloaded = next_matching(&mut events, "the reload's report", |e| match e {
        HubEvent::Reloaded(r) => Some(r.clone()),
        _ => None,
    })
    .await;
    assert_eq!(reloaded, report);
    assert_eq!(
        pid(&hub, "a").await,
        pid_a,
        "the unchanged server restarted"
    );
    assert!(alive(pid_a));
    assert!(
        !alive(pid_b),
        "the changed server's old process {pid_b} still runs"
    );
    let new_b = pid(&hub, "b").await;
    assert_ne!(new_b, pid_b);
    assert!(has_tool(&hub, "b__fresh"), "{:?}", tool_names(&hub));
    assert!(has_tool(&hub, "d__echo"));
    let called = hub.call_tool("b__fresh", None).await.unwrap();
    assert_eq!(text(&called), "fresh called");

    // A reload that drops `d`, and one whose source fails (nothing changes).
    configured.lock().unwrap().pop();
    let pid_d = pid(&hub, "d").await;
    let report = hub.reload().await.unwrap();
    assert_eq!(report.removed, ["d"]);
    assert_eq!(report.unchanged, ["a", "b"]);
    assert!(!alive(pid_d));
    let failing = Hub::builder()
        .config_source(|| Err("switchboard.toml: line 3: expected `=`".into()))
        .persist(false)
        .build()
        .unwrap();
    let error = failing.reload().await.unwrap_err();
    assert!(error.to_string().contains("line 3"), "{error}");

    // disable / enable.
    hub.disable("a").await.unwrap();
    assert_eq!(hub.status("a").unwrap().state, ServerState::Disabled);
    next_matching(&mut events, "a disabled", |e| match e {
        HubEvent::StateChanged {
            server,
            state: ServerState::Disabled,
        } if server == "a" => Some(()),
        _ => None,
    })
    .await;
    assert!(!alive(pid_a), "the disabled server's process still runs");
    assert!(!has_tool(&hub, "a__echo"));
    assert!(matches!(
        hub.call("a", "echo", None).await,
        Err(HubError::Unavailable {
            state: ServerState::Disabled,
            ..
        })
    ));
    assert_eq!(hub.enable("a").await.unwrap(), ServerState::Ready);
    assert!(has_tool(&hub, "a__echo"));
    let pid_a2 = pid(&hub, "a").await;

    // restart: a running server gets a new process.
    assert_eq!(hub.restart("a").await.unwrap(), ServerState::Ready);
    let pid_a3 = pid(&hub, "a").await;
    assert_ne!(pid_a3, pid_a2);
    assert!(!alive(pid_a2));

    hub.shutdown().await;
    assert!(!alive(pid_a3) && !alive(new_b));
    assert!(matches!(
        hub.add(testserver("e", "legacy", &[])).await,
        Err(HubError::Unavailable { .. })
    ));
}

/// A server added before `start` waits for it, like the configured ones.
#[apply(process_test!)]
async fn a_server_added_before_start_starts_with_the_others() {
    let hub = Hub::builder().persist(false).build().unwrap();
    let state = hub.add(testserver("early", "legacy", &[])).await.unwrap();
    assert_eq!(state, ServerState::Pending);
    let report = hub.start().await.unwrap();
    assert_eq!(report.ready, ["early"]);
    hub.shutdown().await;
}

/// Each server's progress and log lines reach the call's progress callback
/// and the hub's events, tagged with the server and in order; resource
/// updates reach them through `subscribe_resource`, and a 2026-07-28
/// server's tool list change (which it sends only on a listen) refreshes
/// the hub's list. Both eras.
#[apply(process_test!)]
async fn each_servers_progress_logs_and_updates_reach_the_hub_events() {
    let hub = Hub::builder()
        .servers([
            testserver("old", "legacy", &[]),
            testserver("new", "modern", &[]),
        ])
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    for server in ["old", "new"] {
        let mut events = hub.events();
        hub.client(server)
            .unwrap()
            .set_logging_level(LoggingLevel::Debug)
            .await
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options = RequestOptions::default().on_progress(move |p| {
            sink.lock().unwrap().push(p.progress);
        });
        let result = hub
            .call_with(
                server,
                "progress",
                args(json!({"steps": 3, "interval_ms": 50})),
                options,
            )
            .await
            .unwrap();
        assert_ne!(result.is_error, Some(true), "{}", text(&result));
        // The steps sent well before the result (50 ms apart) have reached
        // the callback; the last may race the result out of the test
        // server (see hub.rs, `call_options_bring_progress_back…`).
        let seen = seen.lock().unwrap().clone();
        assert!(seen.starts_with(&[1.0, 2.0]), "{server}: {seen:?}");
        // In the events, tagged with this server: its progress steps (the
        // first two at least, as above), in order, and log lines. (The other server's late lines may
        // interleave: only the order per server is promised.)
        let mut steps = Vec::new();
        let mut logs = 0;
        while steps.len() < 2 || logs == 0 {
            let event = next_matching(&mut events, "progress and logs", |e| match e {
                HubEvent::Server {
                    server: from,
                    event,
                } if from == server => Some(event.clone()),
                _ => None,
            })
            .await;
            match event {
                Event::Progress(p) => steps.push(p.progress),
                Event::Log(_) => logs += 1,
                _ => {}
            }
        }
        assert!(steps.windows(2).all(|w| w[0] < w[1]), "{server}: {steps:?}");

        // A resource subscription, then an update.
        let uri = format!("test://{server}/watched");
        hub.subscribe_resource(server, &uri).await.unwrap();
        hub.call(server, "touch", args(json!({"uri": uri})))
            .await
            .unwrap();
        next_matching(&mut events, "the resource update", |e| match e {
            HubEvent::Server {
                server: from,
                event: Event::ResourceUpdated { uri: got },
            } if from == server && *got == uri => Some(()),
            _ => None,
        })
        .await;
        hub.unsubscribe_resource(server, &uri).await.unwrap();

        // A tool list change.
        let before = hub.status(server).unwrap().tools.len();
        hub.call(server, "add_tool", None).await.unwrap();
        next_matching(&mut events, "the tool list change", |e| match e {
            HubEvent::ToolsChanged {
                server: from,
                count,
                stale: false,
            } if from == server && *count == before + 1 => Some(()),
            _ => None,
        })
        .await;
        assert!(
            hub.tools()
                .iter()
                .any(|t| t.server == server && t.tool.name.starts_with("dynamic_")),
            "{server}: {:?}",
            tool_names(&hub)
        );
    }
    hub.shutdown().await;
}

/// A resource subscription is renewed when its server reconnects.
#[apply(process_test!)]
async fn subscriptions_outlive_a_reconnection() {
    let hub = Hub::builder()
        .servers([
            testserver("old", "legacy", &[]),
            testserver("new", "modern", &[]),
        ])
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    for server in ["old", "new"] {
        let uri = format!("test://{server}/kept");
        hub.subscribe_resource(server, &uri).await.unwrap();
        assert_eq!(hub.restart(server).await.unwrap(), ServerState::Ready);
        let mut events = hub.events();
        hub.call(server, "touch", args(json!({"uri": uri})))
            .await
            .unwrap();
        next_matching(&mut events, "the update after the restart", |e| match e {
            HubEvent::Server {
                server: from,
                event: Event::ResourceUpdated { uri: got },
            } if from == server && *got == uri => Some(()),
            _ => None,
        })
        .await;
    }
    hub.shutdown().await;
}

/// Roots: offered to every server when the hub is given some (and changed
/// for all at once), not offered otherwise.
#[apply(process_test!)]
async fn roots_are_offered_only_when_given() {
    let roots = Roots::new(vec![root("file:///work/project")]);
    let hub = Hub::builder()
        .servers([
            testserver("old", "legacy", &[]),
            testserver("new", "modern", &[]),
        ])
        .roots(roots.clone())
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    for server in ["old", "new"] {
        let result = hub.call(server, "roots", None).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{server}: {}", text(&result));
        assert!(
            text(&result).contains("file:///work/project"),
            "{server}: {}",
            text(&result)
        );
    }
    hub.roots().unwrap().set(vec![root("file:///work/other")]);
    for server in ["old", "new"] {
        let result = hub.call(server, "roots", None).await.unwrap();
        assert!(
            text(&result).contains("file:///work/other"),
            "{}",
            text(&result)
        );
    }
    hub.shutdown().await;

    let bare = Hub::builder()
        .server(testserver("old", "legacy", &[]))
        .persist(false)
        .build()
        .unwrap();
    bare.start().await.unwrap();
    let result = bare.call("old", "roots", None).await.unwrap();
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    assert!(text(&result).contains("roots"), "{}", text(&result));
    bare.shutdown().await;
}
