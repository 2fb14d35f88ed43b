//! What the tests driving hosts and servers no one here wrote share: the
//! interop cache that scripts/install-interop.sh fills, and the rule that
//! a missing package skips a test with a message, or fails it with
//! SWITCHBOARD_REQUIRE_INTEROP=1 (as in CI).

#![allow(dead_code)] // each test binary uses some of it

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The repository's root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The interop cache (`SWITCHBOARD_CACHE`, else `<repo>/.cache`).
pub(crate) fn cache() -> PathBuf {
    std::env::var_os("SWITCHBOARD_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".cache"))
}

/// Whether a missing package fails the test instead of skipping it.
pub(crate) fn required() -> bool {
    std::env::var("SWITCHBOARD_REQUIRE_INTEROP")
        .is_ok_and(|v| matches!(v.as_str(), "1" | "true" | "yes"))
}

/// Says why `test` does not run (or fails, when packages are required).
pub(crate) fn skip(test: &str, why: &str) {
    assert!(
        !required(),
        "{test}: {why} (SWITCHBOARD_REQUIRE_INTEROP is set)"
    );
    eprintln!("skipping {test}: {why} (run scripts/install-interop.sh)");
}

/// Runs `command` (a host) to its end, at most `within`.
pub(crate) fn finish(mut command: Command, within: Duration) -> std::process::Output {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().expect("the host starts");
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    wait.recv_timeout(within)
        .expect("the host did not finish in time")
        .expect("the host ran")
}
