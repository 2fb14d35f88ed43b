//! The background session: `switchboard up` keeps the configured servers
//! connected behind a Unix socket (the gateway, `serve`, speaking
//! newline-delimited JSON-RPC on it), so that `call` and `tools` answer in
//! milliseconds instead of starting servers each time; `switchboard down`
//! stops it; it stops by itself after an idle period.
//!
//! Where: `$SWITCHBOARD_SESSION_DIR`, else `$XDG_RUNTIME_DIR/switchboard`,
//! else `/tmp/switchboard-UID` — a directory of the user's own, mode 0700
//! (refused when it is anyone else's or open to others), holding
//! `session.sock` (0600), `session.pid` and `session.log` (the daemon's
//! stderr). Only the same user can connect: the socket's mode, and the
//! daemon checks every connection's peer credentials and drops another
//! uid's.

use std::io::BufRead as _;
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context as _, anyhow};

use crate::{failure::Failure, failure::exit};

/// How long `up` waits for the daemon to listen.
const START_WAIT: Duration = Duration::from_secs(60);
/// What the daemon prints on its stdout once it listens (read by `up`).
const READY: &str = "switchboard session ready";

/// The session's files.
pub(crate) struct Paths {
    pub(crate) dir: PathBuf,
    pub(crate) socket: PathBuf,
    pub(crate) pid: PathBuf,
    pub(crate) log: PathBuf,
    /// The directory the session reads project files in: another
    /// project's commands do not use it.
    pub(crate) project: PathBuf,
    /// The `--config FILE` the session was started with (empty: none): a
    /// command with another one does not use it.
    pub(crate) config: PathBuf,
}

impl Paths {
    /// Where the session lives (nothing is created).
    pub(crate) fn locate() -> Self {
        let dir = if let Some(dir) = std::env::var_os("SWITCHBOARD_SESSION_DIR") {
            PathBuf::from(dir)
        } else if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR")
            && Path::new(&runtime).is_absolute()
        {
            Path::new(&runtime).join("switchboard")
        } else {
            std::env::temp_dir().join(format!(
                "switchboard-{}",
                rustix::process::getuid().as_raw()
            ))
        };
        Self {
            socket: dir.join("session.sock"),
            pid: dir.join("session.pid"),
            log: dir.join("session.log"),
            project: dir.join("session.cwd"),
            config: dir.join("session.config"),
            dir,
        }
    }

    /// Creates the directory (0700) or checks the one there: a directory,
    /// not a link, ours, and closed to everyone else.
    fn prepare(&self) -> Result<(), Failure> {
        match std::fs::DirBuilder::new().mode(0o700).create(&self.dir) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => self.check(),
            Err(error) => Err(Failure::usage(anyhow!(
                "cannot create the session directory {}: {error}",
                self.dir.display()
            ))),
        }
    }

    fn check(&self) -> Result<(), Failure> {
        let meta = std::fs::symlink_metadata(&self.dir)
            .map_err(|e| Failure::usage(anyhow!("cannot read {}: {e}", self.dir.display())))?;
        let uid = rustix::process::getuid().as_raw();
        let why = if !meta.is_dir() {
            Some("it is not a directory")
        } else if meta.uid() != uid {
            Some("another user owns it")
        } else if meta.mode() & 0o077 != 0 {
            Some("other users can open it (its mode should be 0700)")
        } else {
            None
        };
        match why {
            Some(why) => Err(Failure::usage(anyhow!(
                "will not use {} for the session: {why}; remove it, or set \
                 SWITCHBOARD_SESSION_DIR to a directory of your own",
                self.dir.display()
            ))),
            None => Ok(()),
        }
    }
}

/// The running session's pid, if a daemon answers on the socket.
pub(crate) async fn running(paths: &Paths) -> Option<u32> {
    tokio::net::UnixStream::connect(&paths.socket).await.ok()?;
    std::fs::read_to_string(&paths.pid)
        .ok()
        .and_then(|pid| pid.trim().parse().ok())
}

/// `switchboard up`: starts the daemon (this program's hidden `__session`)
/// in its own process group, and returns once it listens.
pub(crate) async fn up(idle: Duration, json: bool, config: Option<&Path>) -> Result<u8, Failure> {
    let paths = Paths::locate();
    paths.prepare()?;
    if let Some(pid) = running(&paths).await {
        say(
            json,
            "running",
            pid,
            &paths,
            "the session is already running",
        );
        return Ok(0);
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&paths.log)
        .map_err(|e| Failure::usage(anyhow!("cannot open {}: {e}", paths.log.display())))?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::usage(anyhow!("cannot find this program: {e}")))?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("__session")
        .arg("--idle")
        .arg(idle.as_secs().to_string());
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    use std::os::unix::process::CommandExt as _;
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        // Out of the terminal's process group: Ctrl-C in the shell that ran
        // `up` does not reach it.
        .process_group(0)
        .spawn()
        .map_err(|e| Failure::usage(anyhow!("cannot start the session: {e}")))?;
    let stdout = child.stdout.take().expect("piped");
    let ready = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        line
    });
    let line = tokio::time::timeout(START_WAIT, ready).await;
    match line {
        Ok(Ok(line)) if line.trim() == READY => {
            say(json, "started", child.id(), &paths, "the session is up");
            Ok(0)
        }
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            let mut failure = Failure::usage(anyhow!(
                "the session did not start; its log is {}",
                paths.log.display()
            ));
            failure.code = exit::UNREACHABLE;
            Err(failure)
        }
    }
}

/// `switchboard down`: stops the daemon (SIGTERM; it closes its servers).
pub(crate) async fn down(json: bool) -> Result<u8, Failure> {
    let paths = Paths::locate();
    let Some(pid) = running(&paths).await else {
        if json {
            crate::term::output::print_json(&serde_json::json!({"state": "not running"}));
        } else {
            println!("no session is running");
        }
        return Ok(0);
    };
    // Only a process that is our session: its command line says so.
    let ours = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|line| line.split(|b| *b == 0).any(|arg| arg == b"__session"))
        .unwrap_or(cfg!(not(target_os = "linux")));
    let target = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .filter(|_| ours)
        .ok_or_else(|| {
            Failure::usage(anyhow!(
                "{} names pid {pid}, which is not a switchboard session; remove the file",
                paths.pid.display()
            ))
        })?;
    rustix::process::kill_process(target, rustix::process::Signal::TERM)
        .map_err(|e| Failure::usage(anyhow!("cannot stop the session (pid {pid}): {e}")))?;
    // Gone when the socket no longer answers (it closes its servers first).
    for _ in 0..200 {
        if running(&paths).await.is_none() && !Path::new(&format!("/proc/{pid}")).exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    say(json, "stopped", pid, &paths, "the session is down");
    Ok(0)
}

fn say(json: bool, state: &str, pid: u32, paths: &Paths, text: &str) {
    if json {
        crate::term::output::print_json(&serde_json::json!({
            "state": state,
            "pid": pid,
            "socket": paths.socket,
            "log": paths.log,
        }));
    } else {
        println!("{text} (pid {pid}, socket {})", paths.socket.display());
    }
}

/// The daemon's listening side, given to `serve`.
pub(crate) struct Daemon {
    listener: tokio::net::UnixListener,
    paths: Paths,
    idle: Duration,
}

impl Daemon {
    /// Binds the socket (0600) and writes the pid file. A socket left by a
    /// session that died is replaced; a live one is an error.
    pub(crate) async fn bind(idle: Duration, config: Option<&Path>) -> Result<Self, Failure> {
        let paths = Paths::locate();
        paths.prepare()?;
        if let Some(pid) = running(&paths).await {
            return Err(Failure::usage(anyhow!(
                "a session is already running (pid {pid})"
            )));
        }
        let _ = std::fs::remove_file(&paths.socket);
        let listener = tokio::net::UnixListener::bind(&paths.socket).map_err(|e| {
            Failure::usage(anyhow!("cannot listen on {}: {e}", paths.socket.display()))
        })?;
        std::fs::set_permissions(&paths.socket, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| Failure::usage(anyhow!("cannot restrict the socket: {e}")))?;
        let cwd = std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .map_err(|e| Failure::usage(anyhow!("cannot read the working directory: {e}")))?;
        std::fs::write(&paths.project, cwd.as_os_str().as_encoded_bytes()).map_err(|e| {
            Failure::usage(anyhow!("cannot write {}: {e}", paths.project.display()))
        })?;
        std::fs::write(&paths.config, config_key(config))
            .map_err(|e| Failure::usage(anyhow!("cannot write {}: {e}", paths.config.display())))?;
        std::fs::write(&paths.pid, format!("{}\n", std::process::id()))
            .map_err(|e| Failure::usage(anyhow!("cannot write {}: {e}", paths.pid.display())))?;
        Ok(Self {
            listener,
            paths,
            idle,
        })
    }

    /// Serves every connection of this user with `gateway` until the
    /// session has had no client for its idle period.
    pub(crate) async fn run(
        self,
        gateway: switchboard_hub::HubServer,
        audit: Option<Arc<switchboard_hub::hub::audit::AuditLog>>,
    ) -> Result<u8, Failure> {
        let _cleanup = Cleanup(vec![
            self.paths.socket.clone(),
            self.paths.pid.clone(),
            self.paths.project.clone(),
            self.paths.config.clone(),
        ]);
        let uid = rustix::process::getuid().as_raw();
        let connected = Arc::new(AtomicUsize::new(0));
        let changed = Arc::new(tokio::sync::Notify::new());
        println!("{READY}");
        let mut n = 0u64;
        loop {
            let idle = tokio::time::sleep(self.idle);
            tokio::pin!(idle);
            let accepted = loop {
                tokio::select! {
                    accepted = self.listener.accept() => break Some(accepted),
                    () = changed.notified() => {
                        if connected.load(Ordering::SeqCst) == 0 {
                            idle.as_mut().reset(tokio::time::Instant::now() + self.idle);
                        }
                    }
                    () = &mut idle, if connected.load(Ordering::SeqCst) == 0 => break None,
                }
            };
            let Some(accepted) = accepted else {
                eprintln!(
                    "switchboard session: no client for {} s; stopping",
                    self.idle.as_secs()
                );
                return Ok(0);
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    eprintln!("switchboard session: accept failed: {error}");
                    continue;
                }
            };
            match stream.peer_cred() {
                Ok(cred) if cred.uid() == uid => {}
                Ok(cred) => {
                    eprintln!(
                        "switchboard session: refused a connection from uid {} (pid {:?})",
                        cred.uid(),
                        cred.pid()
                    );
                    continue;
                }
                Err(error) => {
                    eprintln!("switchboard session: refused a connection: {error}");
                    continue;
                }
            }
            n += 1;
            let (read, write) = stream.into_split();
            let connection = switchboard::transport::framing::io_connection(read, write);
            let mut served = gateway.clone();
            if let Some(log) = &audit {
                served = served.audit(log.clone(), format!("session-{n}"));
            }
            let served = served.serve(connection, switchboard::server::ServeOptions::default());
            connected.fetch_add(1, Ordering::SeqCst);
            let (connected, changed) = (connected.clone(), changed.clone());
            tokio::spawn(async move {
                let _ = served.closed().await;
                connected.fetch_sub(1, Ordering::SeqCst);
                changed.notify_one();
            });
        }
    }
}

/// Removes the socket, the pid file and the project file when the daemon
/// ends.
struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for file in &self.0 {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// What names a `--config FILE` in `session.config`: its canonical path,
/// or nothing.
fn config_key(config: Option<&Path>) -> Vec<u8> {
    config
        .map(|file| {
            std::fs::canonicalize(file)
                .unwrap_or_else(|_| file.to_path_buf())
                .into_os_string()
                .into_encoded_bytes()
        })
        .unwrap_or_default()
}

/// A client connected to the running session, if one runs in this
/// directory with the same `--config` (`config`) as this command.
pub(crate) async fn connect(
    config: Option<&Path>,
    customize: impl FnOnce(switchboard::ClientBuilder) -> switchboard::ClientBuilder,
) -> Option<switchboard::Client> {
    if std::env::var_os("SWITCHBOARD_NO_SESSION").is_some() {
        return None;
    }
    let paths = Paths::locate();
    paths.check().ok()?;
    // The session read the config files of the directory it was started
    // in; a command run in another project has other project files.
    let here = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .ok()?;
    let there = std::fs::read(&paths.project).ok()?;
    if here.as_os_str().as_encoded_bytes() != there.as_slice() {
        return None;
    }
    // The session serves the servers of the files it read: a command given
    // another `--config` (or none, when the session had one) reads others.
    if std::fs::read(&paths.config).ok()? != config_key(config) {
        return None;
    }
    let stream = tokio::net::UnixStream::connect(&paths.socket).await.ok()?;
    let (read, write) = stream.into_split();
    let connector = switchboard::transport::framing::IoConnector::new(read, write);
    let client = customize(switchboard::Client::builder())
        .connect(connector)
        .await
        .with_context(|| format!("the session at {}", paths.socket.display()));
    match client {
        Ok(client) => Some(client),
        Err(error) => {
            eprintln!("warning: {error:#}; starting the servers here instead");
            None
        }
    }
}
