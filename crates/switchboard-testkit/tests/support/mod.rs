//! Helpers shared by switchboard-testkit's integration tests.
//!
//! Use with `mod support;` at the top of a test file. Every helper is
//! generic (no test-specific assertions); not every test file uses all of
//! them, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::env;
use std::path::{Path, PathBuf};

/// Environment variable naming the cache that `scripts/install-interop.sh`
/// installs into; defaults to `<workspace>/.cache`.
pub(crate) const CACHE_ENV: &str = "SWITCHBOARD_CACHE";
/// Environment variable that turns a missing external interop server from a
/// skip into a failure (CI sets it to `1`).
pub(crate) const REQUIRE_INTEROP_ENV: &str = "SWITCHBOARD_REQUIRE_INTEROP";

/// npm package name of the MCP reference server.
pub(crate) const EVERYTHING_PKG: &str = "@modelcontextprotocol/server-everything";

/// The configurable test server of this crate (`switchboard-testserver`).
pub(crate) fn testserver() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_switchboard-testserver"))
}

/// The rmcp 3.9 server of this crate (`switchboard-rmcp-server`); only built
/// with the `rmcp` feature (on by default).
#[cfg(feature = "rmcp")]
pub(crate) fn rmcp_server() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_switchboard-rmcp-server"))
}

/// The workspace root (two levels above this crate's manifest).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/<name> sits two levels below the workspace root")
        .to_path_buf()
}

/// The interop cache: `$SWITCHBOARD_CACHE`, else `<workspace>/.cache`.
pub(crate) fn cache_dir() -> PathBuf {
    match env::var_os(CACHE_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace_root().join(".cache"),
    }
}

/// Whether missing interop servers must fail the test instead of skipping it
/// (`SWITCHBOARD_REQUIRE_INTEROP=1`, or `true`/`yes`).
pub(crate) fn interop_required() -> bool {
    env::var(REQUIRE_INTEROP_ENV)
        .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
        .unwrap_or(false)
}

/// Reports that an external dependency of a test is missing: panics when
/// [`interop_required`], otherwise prints `SKIP: <test>: <reason>` to stderr.
/// The caller returns from the test after this.
pub(crate) fn skip_or_fail(test: &str, reason: &str) {
    if interop_required() {
        panic!("{test}: {reason} ({REQUIRE_INTEROP_ENV}=1, so this fails instead of skipping)");
    }
    eprintln!("SKIP: {test}: {reason}");
}

/// An executable named `name` on `PATH`, if any.
pub(crate) fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// The entry script of the npm reference server in the interop cache, if
/// installed (not checking for node).
pub(crate) fn everything_entry() -> Option<PathBuf> {
    let entry = cache_dir()
        .join("npm")
        .join("node_modules")
        .join(EVERYTHING_PKG)
        .join("dist")
        .join("index.js");
    entry.is_file().then_some(entry)
}

/// How to run `@modelcontextprotocol/server-everything` over stdio:
/// `(node, [<cache>/…/dist/index.js, "stdio"])`.
///
/// `None` when node or the package is missing; a `SKIP:` line naming
/// `scripts/install-interop.sh` has then been printed to stderr, and the
/// test should return. Panics instead when `SWITCHBOARD_REQUIRE_INTEROP=1`.
pub(crate) fn everything_server() -> Option<(PathBuf, Vec<String>)> {
    let test = current_test_name();
    let Some(node) = find_in_path("node") else {
        skip_or_fail(
            &test,
            "`node` is not on PATH; install Node.js and run scripts/install-interop.sh",
        );
        return None;
    };
    let Some(entry) = everything_entry() else {
        skip_or_fail(
            &test,
            &format!(
                "{EVERYTHING_PKG} is not installed in {}; run scripts/install-interop.sh",
                cache_dir().join("npm").display()
            ),
        );
        return None;
    };
    Some((
        node,
        vec![entry.to_string_lossy().into_owned(), "stdio".into()],
    ))
}

/// The name of the running test (libtest names its threads after tests).
pub(crate) fn current_test_name() -> String {
    std::thread::current()
        .name()
        .filter(|name| *name != "main")
        .unwrap_or("test")
        .to_owned()
}

/// The `text` of every `{"type": "text"}` block in a tool result, joined by
/// newlines. Works on anything serializable with a `content` array (or on
/// the array itself), so it does not depend on the content types' shape.
pub(crate) fn text_of(result: &impl serde::Serialize) -> String {
    let value = serde_json::to_value(result).expect("tool result serializes");
    let blocks = match &value {
        serde_json::Value::Array(blocks) => blocks.clone(),
        other => other
            .get("content")
            .and_then(|c| c.as_array())
            .cloned()
            .unwrap_or_default(),
    };
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
        .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A JSON object literal as the `arguments` map of a tool call.
pub(crate) fn args(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("tool arguments must be a JSON object, got {other}"),
    }
}
