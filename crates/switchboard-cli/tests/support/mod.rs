//! What the CLI's integration tests share: the binary and the bundled test
//! server on loopback HTTP.

pub(crate) mod browser;
pub(crate) mod gateway;
pub(crate) mod home;
pub(crate) mod interop;
pub(crate) mod intruder;
pub(crate) mod pty;
pub(crate) mod raw;
pub(crate) mod servers;
pub(crate) mod url_opener;

use std::path::Path;
use std::process::Command;
use std::thread::JoinHandle;

use switchboard_testkit::{ServerConfig, serve_http};
use tokio::sync::oneshot;

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
        .env("SWITCHBOARD_CREDENTIALS", credentials)
        // A background session the runner has up is not the test's.
        .env("SWITCHBOARD_NO_SESSION", "1");
    for var in SCRUBBED {
        command.env_remove(var);
    }
    command
}

/// The bundled test server over loopback HTTP on a free port, with extra
/// `args` (its flags, as `switchboard-testkit-server` takes them); stopped
/// when dropped. `.1` is its base URL (`http://127.0.0.1:PORT`).
///
/// It runs in this test process (switchboard-testkit's `serve_http` on a
/// thread of its own): the `switchboard` binary links no HTTP server.
#[allow(dead_code)] // not every test binary that shares `support` runs one
pub(crate) struct HttpServer(Background, pub(crate) String);

/// The thread serving an [`HttpServer`], and the way to stop it.
pub(crate) struct Background {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// The authorization server's issuer, with `--auth`.
    issuer: Option<String>,
}

#[allow(dead_code)] // not every test binary that shares `support` runs one
impl HttpServer {
    pub(crate) fn start(args: &[&str]) -> Self {
        let config = ServerConfig::from_args(args.iter().map(|a| a.to_string()))
            .expect("valid test server flags");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let issuer = config.auth.as_ref().map(|auth| auth.issuer_for(addr));
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("start the test server's runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                // Ends when dropped (listener, connections, streams), or by
                // itself when the `exit` tool is called.
                tokio::select! {
                    _ = serve_http(config, listener) => {}
                    _ = stopped => {}
                }
            });
        });
        let background = Background {
            stop: Some(stop),
            thread: Some(thread),
            issuer,
        };
        Self(background, format!("http://{addr}"))
    }

    /// The built-in authorization server's issuer (started with `--auth`).
    #[allow(dead_code)] // only the login tests ask
    pub(crate) fn issuer(&self) -> &str {
        self.0
            .issuer
            .as_deref()
            .expect("the test server was started with --auth")
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
