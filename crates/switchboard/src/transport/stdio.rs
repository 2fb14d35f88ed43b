//! The stdio transport: spawn a server process and speak newline-delimited
//! JSON over its stdin and stdout, keeping the tail of its stderr.
//!
//! ```no_run
//! use switchboard::transport::Connector;
//! use switchboard::transport::stdio::StdioConfig;
//!
//! # async fn demo() -> Result<(), switchboard::transport::TransportError> {
//! let server = StdioConfig::new("npx")
//!     .args(["-y", "@modelcontextprotocol/server-everything"])
//!     .env("LOG_LEVEL", "debug");
//! let mut connection = server.connect().await?;
//! connection.sink.send(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).await?;
//! let reply = connection.stream.recv().await?;
//! connection.sink.close().await;
//! # Ok(()) }
//! ```
//!
//! ## The process and its children
//! The server runs in a process group of its own (a job object on Windows),
//! so the processes it starts itself — `npx` and `uvx` run the real server
//! as a child — end with it:
//! - [`MessageSink::close`] closes stdin, waits [`StdioConfig::shutdown_grace`],
//!   sends `SIGTERM` to the group, waits again, then `SIGKILL`s the group.
//!   Whatever the server leaves running in its group after it exits is
//!   killed too.
//! - Dropping the connection without closing it is as polite, on a thread
//!   of its own that needs no Tokio runtime — but that thread ends with the
//!   program, so an application that exits soon after should await
//!   `Client::close` (or [`MessageSink::close`]),
//!   which returns once the server and its group are gone. Dropped where no
//!   runtime is running (after the runtime shut down), the group is
//!   `SIGKILL`ed at once, before `drop` returns.
//! - Last line of defence, when the client itself is killed (`SIGKILL`, no
//!   destructor runs): on Linux the server is started with a parent-death
//!   signal (`PR_SET_PDEATHSIG` = `SIGKILL`), so it dies with the thread
//!   that spawned it (a Tokio worker lives as long as its runtime); what the
//!   server started itself is not covered. On Windows the job object kills
//!   the whole tree when its last handle closes, which includes the client's
//!   death. macOS and other Unix systems have nothing beyond the process
//!   group: a killed client leaves the server to notice the end of its input.
//!
//! ## When the server exits
//! The end of the server's stdout ends the stream: `recv` waits up to 100 ms
//! for the process to exit and returns [`TransportError::Exited`] with its
//! status and the last lines of its stderr, or [`TransportError::Closed`] if
//! it is still running. A process that exits while something it started
//! keeps its stdout open is noticed only when that ends too (or by the
//! caller's request timeouts).
//!
//! ## Environment
//! The server does not inherit the parent's environment, which may hold
//! secrets meant for other programs: only the variables a program needs to
//! run and to reach the network as the user's other programs do are passed
//! on ([`INHERITED_ENV`]: the system's basics, then the proxy and CA
//! settings), plus what [`StdioConfig::env`] sets.
//! [`StdioConfig::inherit_env`] passes everything on;
//! [`StdioConfig::environment`] says what a server gets, by name.

use std::borrow::Cow;
#[cfg(any(windows, test))]
use std::ffi::OsStr;
use std::ffi::OsString;
use std::fmt;
use std::io;
#[cfg(any(windows, test))]
use std::path::Path;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop};

mod process;
#[cfg(target_os = "linux")]
mod spawn;
pub use process::kill_remaining;
use process::{LiveGroup, Process, die_with_parent};
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::AbortOnDropHandle;

use super::framing::{DEFAULT_MAX_MESSAGE_SIZE, LineReader, SharedWriter, WriteError};
use super::{
    BoxFuture, Connection, Connector, ExitInfo, Incoming, MessageSink, MessageStream,
    ServerEnvironment, StderrBuffer, TransportError,
};

/// The default stderr capacity: the last 64 KiB are kept.
pub const DEFAULT_STDERR_CAPACITY: usize = 64 * 1024;

/// The default wait at each step of a graceful shutdown: 2 s.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Parent variables a server inherits unless [`StdioConfig::inherit_env`]
/// is set: what a program needs to run, then what it needs to reach the
/// network the way the user's other programs do.
///
/// Proxies and CA certificates are passed because without them a server
/// behind a corporate proxy or TLS-inspecting firewall cannot fetch
/// anything: `npx -y` and `uvx` hang downloading the server itself, and the
/// only symptom is a start-up timeout. A proxy URL may carry the proxy's
/// credentials (`http://user:pass@proxy:3128`); a server the user runs needs
/// them to reach the network at all, as every other program of theirs gets
/// them. The CA variables name files of public certificates, no secret.
///
/// Left out on purpose: `NODE_OPTIONS`, which runs code in every Node
/// server (`--require`, `--import`) and is often set for one tool only (an
/// IDE's debug terminal sets it to attach a debugger to every Node process,
/// and `--inspect` opens a port that runs whatever connects to it); package
/// manager settings (`npm_config_*`, `PIP_INDEX_URL` …), which carry
/// registry tokens; and everything else. Pass those with
/// [`StdioConfig::env`].
///
/// Unix passes both spellings of the proxy variables (curl and Python
/// read the lower-case ones first); names are case-insensitive on Windows.
#[cfg(unix)]
pub const INHERITED_ENV: &[&str] = &[
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "USER",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "TZ",
    // Proxies.
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    // CA certificates: OpenSSL and rustls, Node, Python requests, curl, pip.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "PIP_CERT",
];
/// Parent variables a server inherits unless [`StdioConfig::inherit_env`]
/// is set (see the Unix list for why each is there).
#[cfg(windows)]
pub const INHERITED_ENV: &[&str] = &[
    "PATH",
    "PATHEXT",
    "SYSTEMROOT",
    "USERNAME",
    "USERPROFILE",
    "APPDATA",
    "TEMP",
    "TMP",
    // Proxies.
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    // CA certificates.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "PIP_CERT",
];

/// The [`INHERITED_ENV`] variables this process has, with their values.
fn inherited() -> impl Iterator<Item = (&'static str, OsString)> {
    INHERITED_ENV
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|value| (*name, value)))
}

/// How many stderr lines an error carries.
const STDERR_TAIL_LINES: usize = 20;

/// How long the end of stdout waits for the process to exit before calling
/// it a closed connection with the process still running.
const EXIT_WAIT: Duration = Duration::from_millis(100);

/// The least time given to the stderr reader to catch up once the process
/// exited, so the error carries the last thing it printed.
const STDERR_DRAIN_MIN: Duration = Duration::from_millis(20);

/// The longest `close` waits for the end of an exited server's stderr.
const STDERR_DRAIN_ON_CLOSE: Duration = Duration::from_millis(250);

/// How long to wait for a `SIGKILL`ed process before leaving it to the
/// background reaper.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// How long the background reaper keeps trying.
const REAPER_PATIENCE: Duration = Duration::from_secs(60);

/// Longest stderr line logged in one piece.
const MAX_LOGGED_LINE: usize = 8 * 1024;

/// How to start a server process; a [`Connector`] that spawns a fresh
/// process on every [`connect`](Connector::connect).
///
/// The setters never fail; a command that cannot be started is reported by
/// `connect` as [`TransportError::Spawn`].
#[derive(Clone)]
#[must_use]
pub struct StdioConfig {
    command: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    inherit_env: bool,
    cwd: Option<PathBuf>,
    max_message_size: usize,
    stderr_capacity: usize,
    shutdown_grace: Duration,
}

impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Values of `env` are left out: they are often tokens.
        let env: Vec<_> = self.env.iter().map(|(key, _)| key).collect();
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &env)
            .field("inherit_env", &self.inherit_env)
            .field("cwd", &self.cwd)
            .field("max_message_size", &self.max_message_size)
            .field("stderr_capacity", &self.stderr_capacity)
            .field("shutdown_grace", &self.shutdown_grace)
            .finish()
    }
}

impl StdioConfig {
    /// Runs `command`, looked up in `PATH` (on Windows also with the
    /// extensions in `PATHEXT`, so `npx` finds `npx.cmd`).
    pub fn new(command: impl Into<OsString>) -> Self {
        Self {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            inherit_env: false,
            cwd: None,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            stderr_capacity: DEFAULT_STDERR_CAPACITY,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<OsString>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the server; it overrides an
    /// inherited one of the same name.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets environment variables for the server.
    pub fn envs(
        mut self,
        vars: impl IntoIterator<Item = (impl Into<OsString>, impl Into<OsString>)>,
    ) -> Self {
        self.env.extend(
            vars.into_iter()
                .map(|(key, value)| (key.into(), value.into())),
        );
        self
    }

    /// Passes the parent's whole environment on (default `false`: only the
    /// variables listed in the [module docs](self) and those set with
    /// [`env`](Self::env)).
    pub fn inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// The server's working directory (default: the parent's).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The largest message accepted from the server, in bytes (default
    /// 64 MiB). A longer line fails the connection with
    /// [`TransportError::MessageTooLarge`].
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// How much of the server's stderr is kept, in bytes (default 64 KiB).
    pub fn stderr_capacity(mut self, bytes: usize) -> Self {
        self.stderr_capacity = bytes;
        self
    }

    /// How long each step of a graceful shutdown waits for the server to
    /// exit before the next, harsher one (default 2 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// The environment a server started now gets, by name: the parent's
    /// whole one with [`inherit_env`](Self::inherit_env), else the
    /// [`INHERITED_ENV`] variables the parent has, and what
    /// [`env`](Self::env) sets.
    pub fn environment(&self) -> ServerEnvironment {
        if self.inherit_env {
            return ServerEnvironment::Whole;
        }
        let mut names: Vec<String> = inherited()
            .map(|(name, _)| name.to_owned())
            .chain(
                self.env
                    .iter()
                    .map(|(name, _)| name.to_string_lossy().into_owned()),
            )
            .collect();
        names.sort();
        names.dedup();
        ServerEnvironment::Only(names)
    }

    /// The program to start: on Windows, resolved through `PATH` and
    /// `PATHEXT`, because `CreateProcess` only ever tries `.exe`.
    #[cfg(windows)]
    fn program(&self) -> PathBuf {
        let lookup = |name: &str| {
            let configured = self
                .env
                .iter()
                .rev()
                .find(|(key, _)| key.eq_ignore_ascii_case(name));
            configured
                .map(|(_, value)| value.clone())
                .or_else(|| std::env::var_os(name))
        };
        resolve_command(
            &self.command,
            lookup("PATH").as_deref(),
            lookup("PATHEXT").as_deref(),
            Path::is_file,
        )
    }

    #[cfg(not(windows))]
    fn program(&self) -> PathBuf {
        PathBuf::from(&self.command)
    }

    /// Starts the server through `process_wrap` (where [`spawn::spawn`]
    /// is not used): its own process group (a job object on Windows),
    /// killed on drop; on Linux the death signal is armed in a `pre_exec`,
    /// which makes the start a `fork`.
    fn spawn_wrapped(&self) -> io::Result<Box<dyn ChildWrapper>> {
        let mut command = CommandWrap::with_new(self.program(), |command| {
            command.args(&self.args);
            if !self.inherit_env {
                command.env_clear();
                command.envs(inherited());
            }
            command.envs(self.env.iter().map(|(key, value)| (key, value)));
            if let Some(dir) = &self.cwd {
                command.current_dir(dir);
            }
            command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            #[cfg(target_os = "linux")]
            die_with_parent(command);
        });
        #[cfg(unix)]
        command.wrap(process_wrap::tokio::ProcessGroup::leader());
        #[cfg(windows)]
        command.wrap(process_wrap::tokio::JobObject);
        command.wrap(KillOnDrop);
        command.spawn()
    }

    /// Starts the server without `fork` ([`spawn`]), given the same as
    /// [`StdioConfig::spawn_wrapped`] gives the command.
    #[cfg(target_os = "linux")]
    fn spawn_own(&self) -> io::Result<Box<dyn ChildWrapper>> {
        let mut env: Vec<(OsString, OsString)> = if self.inherit_env {
            std::env::vars_os().collect()
        } else {
            inherited()
                .map(|(key, value)| (key.into(), value))
                .collect()
        };
        env.extend(self.env.iter().cloned());
        spawn::spawn(&spawn::Spec {
            program: self.command.as_os_str(),
            args: &self.args,
            env,
            cwd: self.cwd.as_deref(),
        })
    }

    fn spawn(&self) -> Result<Connection, TransportError> {
        let described = self.describe();
        let spawn_error = |source| TransportError::Spawn {
            command: described.clone(),
            source,
        };
        #[cfg(target_os = "linux")]
        let started = if spawn::supported() {
            Some(self.spawn_own().map_err(spawn_error)?)
        } else {
            None
        };
        #[cfg(not(target_os = "linux"))]
        let started: Option<Box<dyn ChildWrapper>> = None;
        let mut child = match started {
            Some(child) => child,
            None => self.spawn_wrapped().map_err(spawn_error)?,
        };
        let pid = child.id();
        let stdin = child.stdin().take();
        let stdout = child.stdout().take();
        let stderr_pipe = child.stderr().take();

        let stderr = StderrBuffer::new(self.stderr_capacity);
        let stderr_eof = CancellationToken::new();
        let stderr_task = stderr_pipe.map(|pipe| {
            AbortOnDropHandle::new(tokio::spawn(drain_stderr(
                pipe,
                stderr.clone(),
                described.clone(),
                stderr_eof.clone().drop_guard(),
            )))
        });
        let process = Arc::new(Process {
            group: std::sync::Mutex::new(Some(LiveGroup::new(pid))),
            child: tokio::sync::Mutex::new(Some(child)),
            exit: OnceLock::new(),
            closing: CancellationToken::new(),
            closed: tokio::sync::OnceCell::new(),
            stderr: stderr.clone(),
            stderr_eof,
            _stderr_task: stderr_task,
            grace: self.shutdown_grace,
            command: described.clone(),
        });
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            // Dropping `process` kills what was started.
            drop(process);
            return Err(spawn_error(io::Error::other(
                "the server's pipes were not set up",
            )));
        };
        tracing::debug!(server = %described, pid, "spawned server process");
        Ok(Connection {
            sink: Arc::new(StdioSink {
                process: Arc::clone(&process),
                stdin: SharedWriter::new(stdin, process.closing.clone()),
            }),
            stream: Box::new(StdioStream {
                stdout: LineReader::with_max_message_size(stdout, self.max_message_size),
                process,
                ended: None,
            }),
            stderr: Some(stderr),
        })
    }
}

impl Connector for StdioConfig {
    fn connect(&self) -> BoxFuture<'_, Result<Connection, TransportError>> {
        // Spawning inside the future keeps it on the runtime the caller polls.
        Box::pin(async move { self.spawn() })
    }

    fn transport_name(&self) -> &'static str {
        "stdio"
    }

    fn environment(&self) -> Option<ServerEnvironment> {
        Some(StdioConfig::environment(self))
    }

    fn describe(&self) -> String {
        let mut line = quote(&self.command.to_string_lossy()).into_owned();
        for arg in &self.args {
            line.push(' ');
            line.push_str(&quote(&arg.to_string_lossy()));
        }
        line
    }
}

/// Quotes a word of a command line for display when it would be ambiguous.
fn quote(word: &str) -> Cow<'_, str> {
    if word.is_empty() || word.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
        Cow::Owned(format!("{word:?}"))
    } else {
        Cow::Borrowed(word)
    }
}

/// Finds what Windows would run for `command`: a bare name without an
/// extension is searched in each `PATH` directory with each `PATHEXT`
/// extension (so `npx` is `…\nodejs\npx.cmd`); a name with a directory but
/// no extension gets the extensions only. Anything else, and a name not
/// found, is returned unchanged for the spawn to report.
///
/// Uses Windows separators (`;` in lists, `\` or `/` in paths) whatever the
/// host, so it is tested on every platform.
#[cfg(any(windows, test))]
fn resolve_command(
    command: &OsStr,
    path: Option<&OsStr>,
    pathext: Option<&OsStr>,
    is_file: impl Fn(&Path) -> bool,
) -> PathBuf {
    let unchanged = || PathBuf::from(command);
    let Some(text) = command.to_str() else {
        return unchanged();
    };
    let file_name = text.rsplit(['/', '\\']).next().unwrap_or(text);
    if file_name.is_empty() || file_name.contains('.') {
        return unchanged();
    }
    let pathext = pathext.map_or(Cow::Borrowed(".COM;.EXE;.BAT;.CMD"), OsStr::to_string_lossy);
    // PATHEXT is upper case; the files are usually lower case, and the name
    // ends up in messages.
    let extensions: Vec<String> = pathext
        .split(';')
        .map(str::trim)
        .filter(|ext| ext.starts_with('.') && ext.len() > 1)
        .map(str::to_ascii_lowercase)
        .collect();
    if file_name.len() != text.len() {
        return extensions
            .iter()
            .map(|ext| PathBuf::from(format!("{text}{ext}")))
            .find(|candidate| is_file(candidate))
            .unwrap_or_else(unchanged);
    }
    let path = path.map(OsStr::to_string_lossy).unwrap_or_default();
    path.split(';')
        .map(|dir| dir.trim().trim_matches('"'))
        .filter(|dir| !dir.is_empty())
        .flat_map(|dir| {
            extensions
                .iter()
                .map(move |ext| Path::new(dir).join(format!("{file_name}{ext}")))
        })
        .find(|candidate| is_file(candidate))
        .unwrap_or_else(unchanged)
}

/// Reads the server's stderr into the ring and the log until it ends; it
/// must keep reading, or a chatty server blocks on a full pipe.
async fn drain_stderr(mut pipe: ChildStderr, buffer: StderrBuffer, server: String, eof: DropGuard) {
    // Tells `recv` the tail is complete, however this task ends.
    let _eof = eof;
    let mut chunk = vec![0_u8; 8 * 1024];
    let mut partial = Vec::new();
    loop {
        let read = match pipe.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => &chunk[..n],
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                tracing::debug!(server = %server, %error, "reading the server's stderr failed");
                break;
            }
        };
        buffer.push(read);
        log_stderr(&mut partial, read, &server);
    }
    if !partial.is_empty() {
        log_stderr_line(&partial, &server);
    }
}

/// Logs each complete line in `read`; an unfinished one waits in `partial`.
fn log_stderr(partial: &mut Vec<u8>, read: &[u8], server: &str) {
    let mut rest = read;
    while let Some(newline) = memchr::memchr(b'\n', rest) {
        if partial.is_empty() {
            log_stderr_line(&rest[..newline], server);
        } else {
            partial.extend_from_slice(&rest[..newline]);
            log_stderr_line(partial, server);
            partial.clear();
        }
        rest = &rest[newline + 1..];
    }
    partial.extend_from_slice(rest);
    if partial.len() > MAX_LOGGED_LINE {
        log_stderr_line(partial, server);
        partial.clear();
    }
}

fn log_stderr_line(line: &[u8], server: &str) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    tracing::debug!(
        target: "switchboard::stderr",
        server = %server,
        "{}",
        String::from_utf8_lossy(line)
    );
}

/// Converts a platform exit status.
fn exit_info(status: ExitStatus) -> ExitInfo {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal = None;
    ExitInfo {
        code: status.code(),
        signal,
    }
}

struct StdioSink {
    process: Arc<Process>,
    stdin: SharedWriter<ChildStdin>,
}

impl StdioSink {
    fn write_error(&self, error: io::Error) -> TransportError {
        if error.kind() != io::ErrorKind::BrokenPipe {
            return TransportError::Io(error);
        }
        let stderr_tail = self.process.tail();
        match self.process.exit.get() {
            Some(&status) => TransportError::Exited {
                status,
                stderr_tail,
            },
            None => TransportError::Closed { stderr_tail },
        }
    }
}

impl MessageSink for StdioSink {
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            let closing = &self.process.closing;
            if closing.is_cancelled() {
                return Err(TransportError::ClosedByClient);
            }
            // A server that stopped reading must not keep `close` waiting for
            // the writer; the half-written frame goes with the connection.
            // Messages queued while another is written go out together.
            tokio::select! {
                biased;
                written = self.stdin.send(message) => written.map_err(|e| match e {
                    WriteError::Closed => TransportError::ClosedByClient,
                    WriteError::Io(e) => self.write_error(e),
                }),
                () = closing.cancelled() => Err(TransportError::ClosedByClient),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.process
                .closed
                .get_or_init(|| self.process.shutdown(&self.stdin))
                .await;
        })
    }
}

/// Why the stream ended, kept to answer every later `recv` the same way.
#[derive(Clone, Copy)]
enum EndReason {
    Exited(ExitInfo),
    Closed,
}

impl EndReason {
    fn error(self, process: &Process) -> TransportError {
        let stderr_tail = process.tail();
        match self {
            EndReason::Exited(status) => TransportError::Exited {
                status,
                stderr_tail,
            },
            EndReason::Closed => TransportError::Closed { stderr_tail },
        }
    }
}

struct StdioStream {
    process: Arc<Process>,
    stdout: LineReader<ChildStdout>,
    ended: Option<EndReason>,
}

impl MessageStream for StdioStream {
    fn is_single_pipe(&self) -> bool {
        true
    }

    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Incoming>, TransportError>> {
        Box::pin(async move {
            let closing = &self.process.closing;
            if closing.is_cancelled() {
                return Ok(None);
            }
            if let Some(reason) = self.ended {
                return Err(reason.error(&self.process));
            }
            let read = tokio::select! {
                biased;
                () = closing.cancelled() => return Ok(None),
                read = self.stdout.read_message() => read,
            };
            let reason = match read {
                Ok(Some(message)) => return Ok(Some(Incoming::Message(message))),
                _ if closing.is_cancelled() => return Ok(None),
                Err(error) => return Err(error),
                Ok(None) => self.process.on_stdout_eof().await,
            };
            if closing.is_cancelled() {
                return Ok(None);
            }
            self.ended = Some(reason);
            Err(reason.error(&self.process))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_and_ca_files_are_passed_on_and_code_for_node_is_not() {
        for name in [
            "HTTPS_PROXY",
            "NO_PROXY",
            "SSL_CERT_FILE",
            "NODE_EXTRA_CA_CERTS",
        ] {
            assert!(INHERITED_ENV.contains(&name), "{name}");
        }
        assert!(!INHERITED_ENV.contains(&"NODE_OPTIONS"));
    }

    #[test]
    fn the_environment_a_server_gets_is_named_never_shown() {
        let config = StdioConfig::new("server")
            .env("API_KEY", "sesame")
            .env("PATH", "/opt/bin");
        let ServerEnvironment::Only(names) = config.environment() else {
            panic!("not inherited whole");
        };
        assert!(names.iter().any(|n| n == "API_KEY"), "{names:?}");
        // Sorted, and PATH (inherited and set) once.
        assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
        assert!(!config.environment().to_string().contains("sesame"));
        assert_eq!(
            config.inherit_env(true).environment(),
            ServerEnvironment::Whole
        );
    }

    fn resolve(command: &str, path: &str, pathext: Option<&str>, files: &[&Path]) -> PathBuf {
        resolve_command(
            OsStr::new(command),
            Some(OsStr::new(path)),
            pathext.map(OsStr::new),
            |candidate| files.contains(&candidate),
        )
    }

    #[test]
    fn bare_name_is_found_with_pathext() {
        let npx_cmd = Path::new(r"C:\Program Files\nodejs").join("npx.cmd");
        let path = r"C:\Windows\system32;C:\Program Files\nodejs";
        assert_eq!(
            resolve("npx", path, Some(".COM;.EXE;.BAT;.CMD"), &[&npx_cmd]),
            npx_cmd
        );
        // Without PATHEXT the Windows default list applies.
        assert_eq!(resolve("npx", path, None, &[&npx_cmd]), npx_cmd);
    }

    #[test]
    fn earlier_directories_and_extensions_win() {
        let first_cmd = Path::new(r"C:\a").join("uvx.cmd");
        let second_exe = Path::new(r"C:\b").join("uvx.exe");
        let first_exe = Path::new(r"C:\a").join("uvx.exe");
        let path = r#"C:\a;"C:\b""#;
        assert_eq!(
            resolve("uvx", path, Some(".EXE;.CMD"), &[&first_cmd, &second_exe]),
            first_cmd
        );
        assert_eq!(
            resolve("uvx", path, Some(".EXE;.CMD"), &[&first_cmd, &first_exe]),
            first_exe
        );
        assert_eq!(
            resolve("uvx", path, Some(".EXE;.CMD"), &[&second_exe]),
            second_exe
        );
    }

    #[test]
    fn explicit_extension_or_unknown_name_is_left_alone() {
        let node = Path::new(r"C:\nodejs").join("node.exe.cmd");
        assert_eq!(
            resolve("node.exe", r"C:\nodejs", None, &[&node]),
            PathBuf::from("node.exe")
        );
        assert_eq!(
            resolve("missing", r"C:\nodejs", None, &[]),
            PathBuf::from("missing")
        );
    }

    #[test]
    fn path_with_directory_gets_extensions_only() {
        let script = PathBuf::from(r"C:\tools\server.bat");
        assert_eq!(
            resolve(r"C:\tools\server", r"C:\other", None, &[&script]),
            script
        );
        assert_eq!(
            resolve(r"C:\tools\absent", r"C:\other", None, &[]),
            PathBuf::from(r"C:\tools\absent")
        );
    }

    #[test]
    fn describe_shows_the_command_line() {
        let config = StdioConfig::new("npx")
            .args(["-y", "@scope/server"])
            .arg("two words")
            .env("API_KEY", "secret");
        assert_eq!(config.describe(), r#"npx -y @scope/server "two words""#);
        assert!(!format!("{config:?}").contains("secret"));
    }

    #[test]
    fn stderr_lines_are_split_across_reads() {
        let mut partial = Vec::new();
        log_stderr(&mut partial, b"one\ntw", "s");
        assert_eq!(partial, b"tw");
        log_stderr(&mut partial, b"o\r\nthree", "s");
        assert_eq!(partial, b"three");
        log_stderr(&mut partial, &vec![b'x'; MAX_LOGGED_LINE], "s");
        assert!(partial.is_empty());
    }
}
