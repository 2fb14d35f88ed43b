//! What the CLI's integration tests share: the binary and the bundled test
//! server on loopback HTTP.

pub(crate) mod pty;

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The `switchboard` binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// Variables a test never lets through from the runner's environment:
/// they say where the runner's own configuration lives.
pub(crate) const SCRUBBED: [&str; 7] = [
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "SWITCHBOARD_CONFIG",
    "CODEX_HOME",
    "GOOSE_CONFIG_DIR",
];

/// `switchboard` in `cwd` with HOME `home` and its credentials file in
/// `credentials`: nothing of the runner's configuration is read.
#[allow(dead_code)] // not every test binary that shares `support` runs one
pub(crate) fn isolated(cwd: &Path, home: &Path, credentials: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .current_dir(cwd)
        .env("HOME", home)
        .env("SWITCHBOARD_CREDENTIALS", credentials);
    for var in SCRUBBED {
        command.env_remove(var);
    }
    command
}

/// The bundled test server (`switchboard __testserver --http`) on a free
/// loopback port, with extra `args`; killed when dropped. `.1` is its base
/// URL (`http://127.0.0.1:PORT`).
pub(crate) struct HttpServer(Child, pub(crate) String);

impl HttpServer {
    pub(crate) fn start(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(["__testserver", "--http", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap()
            .to_owned();
        Self(child, base)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
