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

/// The configurable test server with this crate's HTTP front end
/// (`switchboard-testkit-server`: `switchboard-testserver` plus `--http`).
pub(crate) fn testserver() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_switchboard-testkit-server"))
}

/// The one-run OAuth client of this crate (`switchboard-oauth-client`);
/// only built with the `oauth-client` feature (on by default).
#[cfg(feature = "oauth-client")]
pub(crate) fn oauth_client() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_switchboard-oauth-client"))
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
    let (node, entry) = everything_node()?;
    Some((
        node,
        vec![entry.to_string_lossy().into_owned(), "stdio".into()],
    ))
}

/// `node` and the entry script of `@modelcontextprotocol/server-everything`
/// (`<cache>/…/dist/index.js`), whose first argument picks the transport
/// (`stdio`, `sse`, `streamableHttp`).
///
/// `None` when either is missing, after [`skip_or_fail`] (so it panics
/// instead when `SWITCHBOARD_REQUIRE_INTEROP=1`); the test should return.
pub(crate) fn everything_node() -> Option<(PathBuf, PathBuf)> {
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
    Some((node, entry))
}

/// The Python interop server script (`interop/python_server.py`; usage
/// `python python_server.py {streamable-http|sse|stdio} PORT`).
pub(crate) fn python_server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join("python_server.py")
}

/// The interpreter of the venv `<cache>/python-mcp-<version>` that
/// `scripts/install-interop.sh` creates for the Python SDK (PyPI `mcp`).
///
/// `None` when it is missing, after [`skip_or_fail`]; the test should
/// return.
pub(crate) fn python_sdk(version: &str) -> Option<PathBuf> {
    let venv = cache_dir().join(format!("python-mcp-{version}"));
    let python = if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    };
    if python.is_file() {
        Some(python)
    } else {
        skip_or_fail(
            &current_test_name(),
            &format!(
                "the Python SDK mcp=={version} is not installed ({} is missing); \
                 run scripts/install-interop.sh",
                python.display()
            ),
        );
        None
    }
}

/// A loopback port that was free a moment ago: bound on `127.0.0.1:0`,
/// read, and released, for servers that take a port but cannot bind 0.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// How much of a server's output [`ServerProcess`] keeps (the tail).
const OUTPUT_KEEP: usize = 64 * 1024;

/// A server process started by a test, killed and reaped when dropped.
///
/// Its stdin is closed; its stdout and stderr are drained by threads into
/// one buffer (the last 64 KiB), shown by [`ServerProcess::output`] and in
/// this type's panics. The first stdout line is also kept for
/// [`ServerProcess::first_line`] (`listening on …` announcements).
pub(crate) struct ServerProcess {
    name: String,
    child: std::process::Child,
    output: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    first_line: std::sync::mpsc::Receiver<String>,
}

impl ServerProcess {
    /// Spawns `command` (its stdio is overridden as described above).
    pub(crate) fn spawn(name: &str, mut command: std::process::Command) -> Self {
        use std::io::{BufRead, BufReader, Read};
        use std::process::Stdio;
        use std::sync::{Arc, Mutex, mpsc};

        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot start {command:?}: {e}"));
        let output = Arc::new(Mutex::new(Vec::new()));
        let append = |output: &Arc<Mutex<Vec<u8>>>, bytes: &[u8]| {
            let mut buf = output.lock().unwrap_or_else(|e| e.into_inner());
            buf.extend_from_slice(bytes);
            if buf.len() > OUTPUT_KEEP {
                let excess = buf.len() - OUTPUT_KEEP;
                buf.drain(..excess);
            }
        };
        let (line_tx, first_line) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        let out = Arc::clone(&output);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let mut first = true;
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        append(&out, line.as_bytes());
                        if std::mem::take(&mut first) {
                            let _ = line_tx.send(line.trim_end().to_owned());
                        }
                    }
                }
            }
        });
        let mut stderr = child.stderr.take().expect("piped stderr");
        let err = Arc::clone(&output);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                append(&err, &chunk[..n]);
            }
        });
        Self {
            name: name.to_owned(),
            child,
            output,
            first_line,
        }
    }

    /// What the server has written to stdout and stderr so far (the tail).
    pub(crate) fn output(&self) -> String {
        let buf = self.output.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// The first line the server writes to stdout (without the newline);
    /// panics when none comes within `timeout` or the server exits first.
    pub(crate) fn first_line(&mut self, timeout: std::time::Duration) -> String {
        match self.first_line.recv_timeout(timeout) {
            Ok(line) => line,
            Err(_) => panic!(
                "{}: no stdout line within {timeout:?}; output:\n{}",
                self.name,
                self.output()
            ),
        }
    }

    /// The URL of a `listening on URL` first stdout line.
    pub(crate) fn listening_url(&mut self, timeout: std::time::Duration) -> String {
        let line = self.first_line(timeout);
        match line.strip_prefix("listening on ") {
            Some(url) => url.trim().to_owned(),
            None => panic!(
                "{}: expected `listening on URL`, got {line:?}; output:\n{}",
                self.name,
                self.output()
            ),
        }
    }

    /// Polls until a TCP connection to `127.0.0.1:port` succeeds; panics when
    /// the server exits or `timeout` passes first.
    pub(crate) fn wait_until_accepting(&mut self, port: u16, timeout: std::time::Duration) {
        use std::net::{Ipv4Addr, SocketAddr, TcpStream};
        use std::time::{Duration, Instant};

        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + timeout;
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{}: exited ({status}) before accepting on {addr}; output:\n{}",
                    self.name,
                    self.output()
                );
            }
            if Instant::now() >= deadline {
                panic!(
                    "{}: not accepting on {addr} after {timeout:?}; output:\n{}",
                    self.name,
                    self.output()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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

/// npm package name of the TypeScript SDK that `interop/ts_everything_server.mjs`
/// runs on.
pub(crate) const TS_SDK_PKG: &str = "@modelcontextprotocol/sdk";

/// How to run `interop/ts_everything_server.mjs` (our server on the npm
/// TypeScript SDK): `(node, script)`. It loads the SDK from
/// `<cache>/npm`, so give it `SWITCHBOARD_CACHE=`[`cache_dir`]; add
/// `--http 0` for Streamable HTTP (it announces `listening on URL`).
///
/// `None` when node or the SDK is missing, after [`skip_or_fail`]; the test
/// should return.
pub(crate) fn ts_everything_server() -> Option<(PathBuf, PathBuf)> {
    let test = current_test_name();
    let Some(node) = find_in_path("node") else {
        skip_or_fail(
            &test,
            "`node` is not on PATH; install Node.js and run scripts/install-interop.sh",
        );
        return None;
    };
    let npm = cache_dir().join("npm");
    let manifest = npm
        .join("node_modules")
        .join(TS_SDK_PKG)
        .join("package.json");
    if !manifest.is_file() {
        skip_or_fail(
            &test,
            &format!(
                "{TS_SDK_PKG} is not installed in {}; run scripts/install-interop.sh",
                npm.display()
            ),
        );
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join("ts_everything_server.mjs");
    Some((node, script))
}

/// The Python client-features server script
/// (`interop/python_features_server.py`; usage
/// `python python_features_server.py {stdio|streamable-http} [PORT]`).
pub(crate) fn python_features_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join("python_features_server.py")
}

/// A test server process serving HTTP on loopback (`--http 127.0.0.1:0`
/// plus `args`); killed when dropped.
pub(crate) struct HttpServer {
    child: std::process::Child,
    /// Held open: a server that prints more (`--auth` prints its issuer)
    /// must not die of a closed pipe.
    stdout: std::io::BufReader<std::process::ChildStdout>,
    /// `http://127.0.0.1:PORT`, as the server announced it.
    pub(crate) base: String,
}

impl HttpServer {
    pub(crate) fn start(args: &[&str]) -> Self {
        Self::start_on("127.0.0.1:0", args)
    }

    /// Serves on `addr` (e.g. the port of a server that was stopped, to
    /// restart it at the same URL).
    pub(crate) fn start_on(addr: &str, args: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(testserver())
            .args(["--http", addr])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the test server");
        let mut line = String::new();
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        stdout
            .read_line(&mut line)
            .expect("the server announces its address");
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Self {
            child,
            stdout,
            base,
        }
    }

    /// The URL of `path` on this server.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The `127.0.0.1:PORT` it listens on.
    pub(crate) fn addr(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// The issuer an `--auth` server announces on its second stdout line
    /// (`auth issuer URL`); call once.
    pub(crate) fn auth_issuer(&mut self) -> String {
        use std::io::BufRead;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("an --auth server announces its issuer");
        line.trim()
            .strip_prefix("auth issuer ")
            .unwrap_or_else(|| panic!("unexpected second line {line:?}"))
            .to_owned()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
