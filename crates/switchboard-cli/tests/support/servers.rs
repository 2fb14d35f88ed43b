//! Real npm servers the gateway's feature tests put behind it (MCP Apps
//! servers, the reference filesystem server), from the cache that
//! `scripts/install-interop.sh servers` fills: installed on first use when
//! npm is there; a test skips with a message only when npm (or node) is
//! missing, and fails then too with SWITCHBOARD_REQUIRE_INTEROP=1.
#![allow(dead_code)] // only the tests that run npm servers use it

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

pub(crate) use super::interop::cache;
use super::interop::{required, root};

fn have(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

/// One install at a time in this process.
static INSTALL: Mutex<()> = Mutex::new(());

/// The entry script (`dist/index.js`) of the npm package `package` of the
/// servers' cache, installing the cache's servers first when it is
/// missing. `None` (after a message on stderr) when npm or node is not
/// there: the test returns.
pub(crate) fn entry(test: &str, package: &str) -> Option<PathBuf> {
    if !have("npm") || !have("node") {
        assert!(
            !required(),
            "{test}: npm or node is missing (SWITCHBOARD_REQUIRE_INTEROP is set)"
        );
        eprintln!("skipping {test}: npm or node is missing, so {package} cannot run");
        return None;
    }
    let entry = cache()
        .join("servers/node_modules")
        .join(package)
        .join("dist/index.js");
    let _once = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    if !entry.is_file() {
        let status = Command::new("bash")
            .arg(root().join("scripts/install-interop.sh"))
            .arg("servers")
            .env("SWITCHBOARD_CACHE", cache())
            .status()
            .expect("bash runs the install script");
        assert!(status.success(), "{test}: installing {package} failed");
    }
    assert!(entry.is_file(), "{test}: no {}", entry.display());
    Some(entry)
}
