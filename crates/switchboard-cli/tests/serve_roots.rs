//! The host's roots reach the backends behind `switchboard serve`
//! (`gateway/roots.rs`): the real npm `@modelcontextprotocol/server-filesystem`,
//! which honours its client's roots, lets a host with roots [A] list A and
//! refuses it B (the directory it was started with), and follows the host
//! when its roots change; the bundled test server's `roots` tool, in a
//! session-era backend (a `roots/list` request) and a 2026-07-28 one (a
//! roots input request), answers the roots of the host whose call it
//! serves — a session-era host asked by request, a 2026-07-28 host by an
//! `input_required` round — and hears `notifications/roots/list_changed`. The npm test skips with a message
//! only when npm is missing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard::transport::stdio::StdioConfig;
use switchboard::types::{CallToolResult, JsonObject, Root};
use switchboard::{Client, EraMode, Roots};

#[allow(dead_code)] // the pty and HTTP helpers are not used here
mod support;

use support::BIN;
use support::gateway::Sandbox;
use support::servers;

const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem";

/// `switchboard serve [args…]` in the sandbox, for a host with `roots`.
async fn host(sandbox: &Sandbox, mode: EraMode, args: &[&str], roots: Option<&Roots>) -> Client {
    let mut builder = Client::builder().era_mode(mode);
    if let Some(roots) = roots {
        builder = builder.roots(roots.clone());
    }
    builder
        .connect(
            StdioConfig::new(BIN)
                .args(std::iter::once("serve").chain(args.iter().copied()))
                .env("HOME", sandbox.home())
                .env("SWITCHBOARD_CREDENTIALS", sandbox.credentials())
                .env("SWITCHBOARD_NO_SESSION", "1")
                .cwd(sandbox.work()),
        )
        .await
        .unwrap_or_else(|e| panic!("{mode:?} serve {args:?}: {e}"))
}

fn root(dir: &Path) -> Root {
    Root {
        uri: format!("file://{}", dir.display()),
        name: None,
        ..Default::default()
    }
}

fn args(value: serde_json::Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Calls `tool` until `done` accepts its result, at most 30 s (the roots
/// travel host → gateway → backend and back on their own time); the last
/// result.
async fn until(
    host: &Client,
    tool: &str,
    arguments: serde_json::Value,
    done: impl Fn(&CallToolResult) -> bool,
) -> CallToolResult {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let result = host
            .call_tool(tool, args(arguments.clone()))
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        if done(&result) || Instant::now() > deadline {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn ok(result: &CallToolResult) -> bool {
    result.is_error != Some(true)
}

/// Two directories, each with a file.
fn dirs(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let base =
        std::env::temp_dir().join(format!("switchboard-roots-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let (a, b) = (base.join("a"), base.join("b"));
    for (dir, file) in [(&a, "in-a.txt"), (&b, "in-b.txt")] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(file), file).unwrap();
    }
    // server-filesystem compares resolved paths.
    let (a, b) = (a.canonicalize().unwrap(), b.canonicalize().unwrap());
    (base, a, b)
}

#[tokio::test]
async fn server_filesystem_behind_the_gateway_honours_the_hosts_roots() {
    let test = "server_filesystem_behind_the_gateway_honours_the_hosts_roots";
    let Some(entry) = servers::entry(test, FILESYSTEM) else {
        return;
    };
    let (base, a, b) = dirs("fs");
    // Started with B: without the host's roots, B is what it serves.
    let sandbox = Sandbox::with_config(
        "roots-fs",
        &format!(
            "[servers.fs]\ncommand = \"node\"\nargs = [{:?}, {:?}]\n",
            entry.to_str().unwrap(),
            b.to_str().unwrap()
        ),
    );
    let roots = Roots::new(vec![root(&a)]);
    let host = host(&sandbox, EraMode::Legacy, &["--server", "fs"], Some(&roots)).await;
    let list = |dir: &Path| json!({"path": dir.to_str().unwrap()});
    let listed = until(&host, "list_directory", list(&a), ok).await;
    assert!(ok(&listed), "A is a root of the host: {}", text(&listed));
    assert!(text(&listed).contains("in-a.txt"), "{}", text(&listed));
    let refused = host
        .call_tool("list_directory", args(list(&b)))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true), "B is not: {}", text(&refused));
    assert!(!text(&refused).contains("in-b.txt"), "{}", text(&refused));

    // The host's roots change: the backend follows.
    roots.set(vec![root(&b)]);
    let listed = until(&host, "list_directory", list(&b), ok).await;
    assert!(ok(&listed), "B is now the root: {}", text(&listed));
    assert!(text(&listed).contains("in-b.txt"), "{}", text(&listed));
    let refused = host
        .call_tool("list_directory", args(list(&a)))
        .await
        .unwrap();
    assert_eq!(
        refused.is_error,
        Some(true),
        "A no longer is: {}",
        text(&refused)
    );
    host.close().await;
    let _ = std::fs::remove_dir_all(&base);
}

/// The roots a `roots` tool call reports (the backend asked for them).
fn reported(result: &CallToolResult) -> Vec<String> {
    let roots: Vec<Root> =
        serde_json::from_str(&text(result)).unwrap_or_else(|e| panic!("{e}: {}", text(result)));
    roots.into_iter().map(|r| r.uri).collect()
}

/// The test server's `roots` in a backend of each era: the host's roots,
/// asked by request (session era) or input request (2026-07-28); a change
/// of the host's roots is heard by the session-era backend; a host without
/// roots gives its backends none.
#[tokio::test]
async fn backends_of_each_era_get_the_hosts_roots_and_hear_them_change() {
    let (base, a, b) = dirs("eras");
    let sandbox = Sandbox::new("roots-eras");
    let roots = Roots::new(vec![root(&a)]);
    let host = host(&sandbox, EraMode::Legacy, &[], Some(&roots)).await;
    let want_a = vec![root(&a).uri];
    for tool in ["old__roots", "new__roots"] {
        let result = until(&host, tool, json!({}), |r| ok(r) && reported(r) == want_a).await;
        assert_eq!(reported(&result), want_a, "{tool}: {}", text(&result));
    }
    roots.set(vec![root(&b)]);
    let changes = until(&host, "old__roots_changes", json!({}), |r| {
        text(r).trim().parse::<u64>().is_ok_and(|n| n >= 1)
    })
    .await;
    assert!(
        text(&changes).trim().parse::<u64>().is_ok_and(|n| n >= 1),
        "the backend heard no roots/list_changed: {}",
        text(&changes)
    );
    let want_b = vec![root(&b).uri];
    for tool in ["old__roots", "new__roots"] {
        let result = until(&host, tool, json!({}), |r| ok(r) && reported(r) == want_b).await;
        assert_eq!(reported(&result), want_b, "{tool}: {}", text(&result));
    }
    host.close().await;

    // A 2026-07-28 host is asked on its call (an input_required round).
    let roots = Roots::new(vec![root(&a)]);
    let modern = self::host(&sandbox, EraMode::Modern, &[], Some(&roots)).await;
    for tool in ["old__roots", "new__roots"] {
        let result = modern.call_tool(tool, None).await.unwrap();
        assert_eq!(
            reported(&result),
            want_a,
            "2026-07-28 host, {tool}: {}",
            text(&result)
        );
    }
    modern.close().await;

    // A host that declares no roots: its call's backend gets none.
    let plain = self::host(&sandbox, EraMode::Legacy, &[], None).await;
    for tool in ["old__roots", "new__roots"] {
        let result = plain.call_tool(tool, None).await.unwrap();
        assert!(
            !ok(&result) || reported(&result).is_empty(),
            "{tool}: {}",
            text(&result)
        );
        assert!(
            !text(&result).contains(&root(&a).uri),
            "{tool}: {}",
            text(&result)
        );
    }
    plain.close().await;
    let _ = std::fs::remove_dir_all(&base);
}
