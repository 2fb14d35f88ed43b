//! The background session: `switchboard up` keeps the configured servers
//! connected behind a Unix socket (the gateway, `serve`, speaking
//! newline-delimited JSON-RPC on it), so that `call` and `tools` answer in
//! milliseconds instead of starting servers each time; `switchboard down`
//! stops it; it stops by itself after an idle period.
//!
//! One session a project: a session serves the servers of the files it
//! read, which depend on the project (its root, and the `.mcp.json` files
//! from there down to the working directory) and on `--config FILE`. So
//! the session's place is keyed on those: `up` in a subdirectory of a
//! project whose session runs finds it running, and every command in the
//! project uses it; `up` in another project starts that project's own.
//!
//! Where: `$SWITCHBOARD_SESSION_DIR`, else `$XDG_RUNTIME_DIR/switchboard`,
//! else `/tmp/switchboard-UID` — a directory of the user's own, mode 0700
//! (refused when it is anyone else's or open to others) — then a
//! directory for the project (the first 16 hex digits of the SHA-256 of
//! what the key is made of, 0700), holding `session.sock` (0600),
//! `session.pid`, `session.log` (the daemon's stderr) and
//! `session.project` (the project root, for messages), and `console.sock`
//! (0600), where `switchboard console` asks for the session's console
//! (`console::attach`). Only the same user
//! can connect: the modes, and the daemon checks every connection's peer
//! credentials and drops another uid's.

use std::io::BufRead as _;
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context as _, anyhow};

use crate::configure::Context;
use crate::{failure::Failure, failure::exit};

/// How long `up` waits for the daemon to listen.
const START_WAIT: Duration = Duration::from_secs(60);
/// What the daemon prints on its stdout once it listens (read by `up`).
const READY: &str = "switchboard session ready";

/// The session's files.
pub(crate) struct Paths {
    /// Every session of this user is below it.
    base: PathBuf,
    pub(crate) dir: PathBuf,
    pub(crate) socket: PathBuf,
    pub(crate) pid: PathBuf,
    pub(crate) log: PathBuf,
    /// The project root the session serves (shown in messages).
    pub(crate) project: PathBuf,
}

impl Paths {
    /// Where the session of `context`'s project (and `--config`) lives
    /// (nothing is created).
    pub(crate) fn locate(context: &Context) -> Self {
        let base = if let Some(dir) = std::env::var_os("SWITCHBOARD_SESSION_DIR") {
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
        let dir = base.join(key(context));
        Self {
            socket: dir.join("session.sock"),
            pid: dir.join("session.pid"),
            log: dir.join("session.log"),
            project: dir.join("session.project"),
            dir,
            base,
        }
    }

    /// Creates the directories (0700) or checks those there: directories,
    /// not links, ours, and closed to everyone else.
    fn prepare(&self) -> Result<(), Failure> {
        for dir in [&self.base, &self.dir] {
            match std::fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => check(dir)?,
                Err(error) => {
                    return Err(Failure::usage(anyhow!(
                        "cannot create the session directory {}: {error}",
                        dir.display()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Both directories are safe to use (see [`Paths::prepare`]).
    pub(crate) fn check(&self) -> Result<(), Failure> {
        check(&self.base)?;
        check(&self.dir)
    }
}

/// What keys a project's session: the project root, the `.mcp.json`
/// files read from the working directory (a subdirectory with one of its
/// own reads other servers), and `--config FILE` (canonical), as 16 hex
/// digits of their SHA-256.
fn key(context: &Context) -> String {
    use sha2::Digest as _;
    let mut digest = sha2::Sha256::new();
    let canonical =
        |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut part = |bytes: &[u8]| {
        digest.update((bytes.len() as u64).to_le_bytes());
        digest.update(bytes);
    };
    part(
        canonical(context.locations.project_root())
            .as_os_str()
            .as_encoded_bytes(),
    );
    for file in context.locations.mcp_json_files() {
        if file.is_file() {
            part(canonical(&file).as_os_str().as_encoded_bytes());
        }
    }
    part(b"--config");
    if let Some(config) = &context.explicit {
        part(canonical(config).as_os_str().as_encoded_bytes());
    }
    digest
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `dir` is a directory, not a link, ours, and closed to everyone else.
fn check(dir: &Path) -> Result<(), Failure> {
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| Failure::usage(anyhow!("cannot read {}: {e}", dir.display())))?;
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
            dir.display()
        ))),
        None => Ok(()),
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
pub(crate) async fn up(context: &Context, idle: Duration, json: bool) -> Result<u8, Failure> {
    let paths = Paths::locate(context);
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
    if let Some(config) = &context.explicit {
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
pub(crate) async fn down(context: &Context, json: bool) -> Result<u8, Failure> {
    let paths = Paths::locate(context);
    let Some(pid) = running(&paths).await else {
        if json {
            crate::term::output::print_json(&serde_json::json!({"state": "not running"}));
        } else {
            println!(
                "no session is running for {}",
                context.locations.project_root().display()
            );
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
    let project = std::fs::read(&paths.project)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .map_or_else(|| paths.dir.clone(), PathBuf::from);
    if json {
        crate::term::output::print_json(&serde_json::json!({
            "state": state,
            "pid": pid,
            "socket": paths.socket,
            "log": paths.log,
            "project": project,
        }));
    } else {
        println!(
            "{text} for {} (pid {pid}, socket {})",
            project.display(),
            paths.socket.display()
        );
    }
}

/// The daemon's listening side, given to `serve`.
pub(crate) struct Daemon {
    listener: tokio::net::UnixListener,
    /// Where `switchboard console` asks for the session's console
    /// (`console::attach`).
    consoles: tokio::net::UnixListener,
    paths: Paths,
    idle: Duration,
}

impl Daemon {
    /// The session's directory (where [`write_status`] writes).
    pub(crate) fn dir(&self) -> PathBuf {
        self.paths.dir.clone()
    }

    /// Binds the socket (0600) and writes the pid file. A socket left by a
    /// session that died is replaced; a live one is an error.
    pub(crate) async fn bind(context: &Context, idle: Duration) -> Result<Self, Failure> {
        let paths = Paths::locate(context);
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
        let console_socket = paths.dir.join(crate::console::attach::CONSOLE_SOCKET);
        let _ = std::fs::remove_file(&console_socket);
        let consoles = tokio::net::UnixListener::bind(&console_socket).map_err(|e| {
            Failure::usage(anyhow!(
                "cannot listen on {}: {e}",
                console_socket.display()
            ))
        })?;
        std::fs::set_permissions(&console_socket, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| Failure::usage(anyhow!("cannot restrict the console socket: {e}")))?;
        let root = context.locations.project_root();
        std::fs::write(&paths.project, root.as_os_str().as_encoded_bytes()).map_err(|e| {
            Failure::usage(anyhow!("cannot write {}: {e}", paths.project.display()))
        })?;
        std::fs::write(&paths.pid, format!("{}\n", std::process::id()))
            .map_err(|e| Failure::usage(anyhow!("cannot write {}: {e}", paths.pid.display())))?;
        Ok(Self {
            listener,
            consoles,
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
        attach: Arc<crate::console::attach::Attach>,
        taps: crate::console::attach::Taps,
    ) -> Result<u8, Failure> {
        let _cleanup = Cleanup(vec![
            self.paths.dir.join(crate::console::attach::CONSOLE_SOCKET),
            self.paths.socket.clone(),
            self.paths.pid.clone(),
            self.paths.project.clone(),
            self.paths.dir.join(STATUS),
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
                    accepted = self.listener.accept() => break Some((accepted, false)),
                    accepted = self.consoles.accept() => break Some((accepted, true)),
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
            let (accepted, console) = accepted;
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
            if console {
                // A console open counts as a client: the session does not
                // stop under it.
                connected.fetch_add(1, Ordering::SeqCst);
                let (connected, changed, attach) =
                    (connected.clone(), changed.clone(), attach.clone());
                tokio::spawn(async move {
                    attach.control(stream).await;
                    connected.fetch_sub(1, Ordering::SeqCst);
                    changed.notify_one();
                });
                continue;
            }
            n += 1;
            let (read, write) = stream.into_split();
            // What the host sent and was sent, for a console attached.
            let connection = switchboard::transport::tap::tap_connection(
                switchboard::transport::framing::io_connection(read, write),
                taps.host(&format!("session-{n}")),
            );
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

/// A client connected to the running session of this command's project
/// (and `--config`), if one runs.
pub(crate) async fn connect(
    context: &Context,
    customize: impl FnOnce(switchboard::ClientBuilder) -> switchboard::ClientBuilder,
) -> Option<switchboard::Client> {
    if std::env::var_os("SWITCHBOARD_NO_SESSION").is_some() {
        return None;
    }
    let paths = Paths::locate(context);
    paths.check().ok()?;
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

/// The name of the file (in the session's directory, 0600) where the
/// daemon says what each of its servers is: its state, the fingerprint
/// of the configuration it runs, and its tools' names. A command uses the
/// session for a server only when the session runs that very server,
/// ready: the same configuration, `${VAR}`s expanded with the command's
/// own environment. Otherwise the command starts the server itself, so
/// its words and exit code are those it has without a session (a server
/// that crashed on start, an unknown tool, another `WEATHER_KEY`).
const STATUS: &str = "servers.json";

/// What the daemon says of its servers (see [`STATUS`]).
#[derive(serde::Serialize, serde::Deserialize, Default, Debug)]
pub(crate) struct Status {
    servers: std::collections::BTreeMap<String, ServerStatus>,
}

/// One server in [`Status`].
#[derive(serde::Serialize, serde::Deserialize, Debug)]
struct ServerStatus {
    /// [`switchboard_hub::ServerState::name`].
    state: String,
    /// [`fingerprint`] of the configuration it runs.
    fingerprint: String,
    /// Its tools' own names (as the server lists them).
    tools: Vec<String>,
    /// Its prompts' own names.
    #[serde(default)]
    prompts: Vec<String>,
    /// What `list` shows of it: its transport, era and protocol version.
    #[serde(default)]
    transport: Option<String>,
    #[serde(default)]
    era: Option<String>,
    #[serde(default)]
    protocol_version: Option<String>,
    /// What a 2026-07-28 server says it is on each result
    /// (`_meta["io.modelcontextprotocol/serverInfo"]`), where the session's
    /// gateway puts its own (`None` for a session-era server, whose
    /// results carry none).
    #[serde(default)]
    results_server_info: Option<serde_json::Value>,
}

/// What tells one configuration of a server from another: the SHA-256
/// (hex) of its name and [`identity`](switchboard_hub::ServerConfig::identity)
/// (command, arguments, env and headers with their values, …) as
/// expanded. Kept in a file only this user can read.
pub(crate) fn fingerprint(config: &switchboard_hub::ServerConfig) -> String {
    use sha2::Digest as _;
    let mut digest = sha2::Sha256::new();
    digest.update(config.name.as_bytes());
    digest.update([0]);
    digest.update(config.identity().as_bytes());
    digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The fingerprints of the configurations the session's hub runs, by
/// server, as the daemon last read the files.
pub(crate) type Fingerprints = Arc<std::sync::Mutex<std::collections::BTreeMap<String, String>>>;

/// The daemon's side: writes [`STATUS`] now and again at every change of
/// a server's state or tools, until the hub goes.
pub(crate) async fn write_status(
    hub: switchboard_hub::Hub,
    fingerprints: Fingerprints,
    dir: PathBuf,
) {
    let mut events = hub.events();
    loop {
        let mut prompts: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for listed in hub.prompts().await.items {
            prompts
                .entry(listed.server)
                .or_default()
                .push(listed.prompt.name);
        }
        let status = Status {
            servers: hub
                .list()
                .into_iter()
                .filter_map(|server| {
                    let fingerprint = fingerprints
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .get(&server.name)?
                        .clone();
                    Some((
                        server.name.clone(),
                        ServerStatus {
                            state: server.state.name().to_owned(),
                            fingerprint,
                            tools: server.tools.iter().map(|t| t.name.clone()).collect(),
                            prompts: prompts.remove(&server.name).unwrap_or_default(),
                            transport: server.transport.clone(),
                            era: server.era.map(|e| e.to_string()),
                            protocol_version: server.protocol_version.clone(),
                            results_server_info: hub
                                .client(&server.name)
                                .ok()
                                .filter(|c| c.era() == switchboard::types::Era::Modern)
                                .and_then(|c| serde_json::to_value(c.server_info()?).ok()),
                        },
                    ))
                })
                .collect(),
        };
        if let Err(error) = write_private(
            &dir,
            STATUS,
            &serde_json::to_vec(&status).unwrap_or_default(),
        ) {
            eprintln!("switchboard session: cannot write its status: {error}");
        }
        // The next change of a state, a tool list or a prompt list.
        loop {
            match events.next().await {
                None => return,
                Some(
                    switchboard_hub::HubEvent::StateChanged { .. }
                    | switchboard_hub::HubEvent::ToolsChanged { .. }
                    | switchboard_hub::HubEvent::Server {
                        event:
                            switchboard::Event::ListChanged(switchboard::events::ListKind::Prompts),
                        ..
                    },
                ) => break,
                Some(_) => {}
            }
        }
    }
}

/// Writes `name` in `dir` whole (a temporary file renamed over it), 0600.
fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let temporary = dir.join(format!(".{name}.{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&temporary, dir.join(name))
}

/// How long a command waits for the session to pick up a server it does
/// not run yet (one just added: the session reads the files again every
/// 2 s), and for one it is starting.
const RELOAD_WAIT: Duration = Duration::from_secs(5);
const START_WAIT_FOR_SERVER: Duration = Duration::from_secs(30);

/// What a command asks of the session's server, besides being ready.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Needs<'a> {
    /// Nothing more.
    Server,
    /// That it lists this tool.
    Tool(&'a str),
    /// That it lists this prompt.
    Prompt(&'a str),
}

/// Whether this project's session runs `config` (as this command expanded
/// it) ready, and has what `needs` says — waiting for a reload that adds
/// it and for its start. `false` when no session runs, when the
/// session runs another configuration of it (`${VAR}` with other values,
/// a file changed since), when the server failed or waits for a login in
/// the session, or has no such tool: the command then starts the server
/// itself.
pub(crate) async fn serves(
    context: &Context,
    config: &switchboard_hub::ServerConfig,
    needs: Needs<'_>,
) -> Option<Serving> {
    let server = ready_in_session(context, config).await?;
    let has = match needs {
        Needs::Server => true,
        Needs::Tool(tool) => server.tools.iter().any(|n| n == tool),
        Needs::Prompt(prompt) => server.prompts.iter().any(|n| n == prompt),
    };
    has.then_some(Serving {
        results_server_info: server.results_server_info,
    })
}

/// What a command through the session needs to say what it says without
/// it: the server's own `serverInfo` for its results' `_meta`, where the
/// gateway puts its own (`None`: the server puts none there).
pub(crate) struct Serving {
    pub(crate) results_server_info: Option<serde_json::Value>,
}

/// What `list` shows of a server the session runs ready.
pub(crate) struct Ready {
    /// How many tools it lists.
    pub(crate) tools: usize,
    pub(crate) transport: Option<String>,
    pub(crate) era: Option<String>,
    pub(crate) protocol_version: Option<String>,
}

/// [`Ready`] of `config` when this project's session runs it ready, as
/// this command expanded it ([`serves`] with nothing more needed).
pub(crate) async fn ready(
    context: &Context,
    config: &switchboard_hub::ServerConfig,
) -> Option<Ready> {
    let server = ready_in_session(context, config).await?;
    Some(Ready {
        tools: server.tools.len(),
        transport: server.transport,
        era: server.era,
        protocol_version: server.protocol_version,
    })
}

/// Each server's state as the running session of this project last
/// said it (`ready`, `failed`, …; [`STATUS`]); empty when none runs.
pub(crate) fn states(context: &Context) -> std::collections::BTreeMap<String, String> {
    let paths = Paths::locate(context);
    let status: Status = std::fs::read(paths.dir.join(STATUS))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    status
        .servers
        .into_iter()
        .map(|(name, server)| (name, server.state))
        .collect()
}

/// The session's status of `config` once it is ready there (see
/// [`serves`]).
async fn ready_in_session(
    context: &Context,
    config: &switchboard_hub::ServerConfig,
) -> Option<ServerStatus> {
    if std::env::var_os("SWITCHBOARD_NO_SESSION").is_some() {
        return None;
    }
    let paths = Paths::locate(context);
    if paths.check().is_err() || running(&paths).await.is_none() {
        return None;
    }
    let ours = fingerprint(config);
    let started = std::time::Instant::now();
    loop {
        let mut status: Status = std::fs::read(paths.dir.join(STATUS))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        match status.servers.remove(&config.name) {
            None if started.elapsed() < RELOAD_WAIT => {}
            None => return None,
            Some(server) if server.fingerprint != ours => return None,
            Some(server) => match server.state.as_str() {
                "ready" => return Some(server),
                "pending" | "connecting" | "reconnecting"
                    if started.elapsed() < START_WAIT_FOR_SERVER => {}
                _ => return None,
            },
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
