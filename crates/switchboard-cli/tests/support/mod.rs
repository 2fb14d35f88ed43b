//! What the CLI's integration tests share: the binary and the bundled test
//! server on loopback HTTP.

pub(crate) mod pty;

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

/// The `switchboard` binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

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
