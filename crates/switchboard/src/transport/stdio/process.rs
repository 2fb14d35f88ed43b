//! A stdio server's process while it runs and after: its process group
//! (registered so that [`kill_remaining`] can end it at exit), the shared
//! handle the sink and the stream hold, the polite shutdown (stdin closed,
//! `SIGTERM`, `SIGKILL`) and the background one a dropped connection gets,
//! and the parent-death signal.

use super::*;

/// Process groups of the servers this process started and has not reaped
/// yet, by leader pid: what [`kill_remaining`] kills when the program is
/// about to exit while some are still starting or being stopped politely.
#[cfg(unix)]
static LIVE_GROUPS: std::sync::Mutex<std::collections::BTreeSet<u32>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// A server's process group in [`LIVE_GROUPS`] while this lives; it goes
/// wherever the child goes (the background reaper included) and leaves the
/// registry once the leader is reaped.
pub(super) struct LiveGroup(#[cfg_attr(not(unix), allow(dead_code))] Option<u32>);

impl LiveGroup {
    pub(super) fn new(pid: Option<u32>) -> Self {
        #[cfg(unix)]
        if let Some(pid) = pid {
            LIVE_GROUPS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(pid);
        }
        Self(pid)
    }
}

impl Drop for LiveGroup {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.0 {
            LIVE_GROUPS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&pid);
        }
    }
}

/// Kills, at once, the process group of every server this process started
/// and has not finished stopping: one still connecting, one whose `Client`
/// was dropped and is being stopped politely on a background thread. Call
/// it right before the program exits (after `Client::close` /
/// `Hub::shutdown` of what it could close), so that nothing it started
/// outlives it — a background thread dies with the process. On Windows the
/// job object already kills the tree when the process ends; this does
/// nothing there.
pub fn kill_remaining() {
    #[cfg(unix)]
    {
        let groups: Vec<u32> = LIVE_GROUPS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .copied()
            .collect();
        for pid in groups {
            // The group id stays reserved while any member lives, and the
            // entry leaves the registry once the leader is reaped: it
            // cannot name a stranger's group.
            if let Some(group) = rustix::process::Pid::from_raw(pid as i32) {
                tracing::debug!(pid, "killing a server still running at exit");
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
        }
    }
}

/// The server process, shared by the sink and the stream. The last one
/// dropped kills the process group if `close` did not finish.
pub(super) struct Process {
    /// Registered while the server may be running (see [`kill_remaining`]).
    pub(super) group: std::sync::Mutex<Option<LiveGroup>>,
    /// `None` once the process was shut down and reaped.
    pub(super) child: tokio::sync::Mutex<Option<Box<dyn ChildWrapper>>>,
    pub(super) exit: OnceLock<ExitInfo>,
    /// Cancelled when `close` starts: pending sends and receives stop.
    pub(super) closing: CancellationToken,
    /// Set when `close` finished, so later calls return at once.
    pub(super) closed: tokio::sync::OnceCell<()>,
    pub(super) stderr: StderrBuffer,
    /// Cancelled when the stderr reader stopped.
    pub(super) stderr_eof: CancellationToken,
    pub(super) _stderr_task: Option<AbortOnDropHandle<()>>,
    pub(super) grace: Duration,
    pub(super) command: String,
}

impl Process {
    pub(super) fn tail(&self) -> String {
        self.stderr.tail(STDERR_TAIL_LINES)
    }

    fn record_exit(&self, status: ExitStatus) -> ExitInfo {
        *self.exit.get_or_init(|| exit_info(status))
    }

    /// stdout ended: find out whether the process exited, and make sure the
    /// stderr tail holds everything it wrote.
    pub(super) async fn on_stdout_eof(&self) -> EndReason {
        let deadline = Instant::now() + EXIT_WAIT;
        let status = tokio::time::timeout_at(deadline, async {
            let mut child = self.child.lock().await;
            match child.as_mut() {
                Some(child) => child.wait().await.ok(),
                None => None,
            }
        })
        .await
        .ok()
        .flatten();
        let Some(status) = status else {
            return EndReason::Closed;
        };
        let drained = deadline.max(Instant::now() + STDERR_DRAIN_MIN);
        let _ = tokio::time::timeout_at(drained, self.stderr_eof.cancelled()).await;
        EndReason::Exited(self.record_exit(status))
    }

    pub(super) async fn shutdown(&self, stdin: &SharedWriter<ChildStdin>) {
        self.closing.cancel();
        // An MCP server ends when its input ends: closing stdin is the polite
        // request to exit.
        drop(stdin.take().await);
        let mut guard = self.child.lock().await;
        let Some(child) = guard.as_mut() else {
            return;
        };
        let mut status = tokio::time::timeout(self.grace, child.wait()).await.ok();
        #[cfg(unix)]
        if status.is_none() {
            tracing::debug!(server = %self.command, "server ignored the end of its input; sending SIGTERM");
            let _ = child.signal(libc::SIGTERM);
            status = tokio::time::timeout(self.grace, child.wait()).await.ok();
        }
        if status.is_none() {
            tracing::debug!(server = %self.command, "server did not exit; killing it");
            let _ = child.start_kill();
            status = tokio::time::timeout(KILL_WAIT, child.wait()).await.ok();
        }
        // Children the server started and left running in its group have no
        // one else to stop them. (On Unix this kills the group; its id stays
        // reserved while any member lives, so it cannot hit a stranger.)
        let _ = child.start_kill();
        match status {
            Some(Ok(status)) => {
                self.record_exit(status);
                guard.take();
                // Reaped, and its group killed: nothing left to kill at exit.
                drop(self.group.lock().unwrap_or_else(|e| e.into_inner()).take());
                // What it wrote last is readable once `close` returns (the
                // group was killed, so nothing holds the pipe open for long).
                let _ =
                    tokio::time::timeout(STDERR_DRAIN_ON_CLOSE, self.stderr_eof.cancelled()).await;
            }
            // Not reaped: `Drop` hands the child to the background reaper.
            Some(Err(error)) => {
                tracing::debug!(server = %self.command, %error, "waiting for the server failed");
            }
            None => {
                tracing::warn!(server = %self.command, "server process did not die after SIGKILL")
            }
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let Some(mut child) = self.child.get_mut().take() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_err() {
            // No runtime: the program is most likely on its way out, and a
            // thread may not live long enough to be polite. Kill the group
            // now, before anything else can end this process.
            tracing::debug!(server = %self.command, "dropped outside a runtime; killing the server's process group");
            let _ = child.start_kill();
        }
        let group = self
            .group
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        shutdown_in_background(child, group, self.command.clone(), self.grace);
    }
}

/// Asks Linux to `SIGKILL` the server when the thread that spawned it ends
/// (the last line of defence when this process is killed with `SIGKILL`
/// and no `Drop` runs). The signal reaches the server process only, not
/// what it started itself.
///
/// Used only where [`spawn::spawn`] is not (a kernel without `pidfd_open`).
/// One of the two reviewed exceptions to `deny(unsafe_code)` (the other is
/// `stdio/spawn.rs`): `pre_exec` runs between `fork` and `exec`.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(super) fn die_with_parent(command: &mut tokio::process::Command) {
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before `exec`, where only
    // async-signal-safe calls are allowed: it makes two raw system calls
    // (`prctl(PR_SET_PDEATHSIG)` and `getppid`) through rustix, allocates
    // nothing, takes no lock and touches no state shared with the parent.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            // The parent may have died before the signal was armed: then it
            // never comes, so do not start the server at all.
            if rustix::process::getppid() != Some(parent) {
                return Err(io::Error::other(
                    "the client exited while starting the server",
                ));
            }
            Ok(())
        });
    }
}

/// The same polite sequence as `close` — the end of input (stdin closes as
/// the sink is dropped), wait, SIGTERM, wait, SIGKILL — then a kill of
/// whatever the server left running in its group, and reaping.
///
/// `Drop` may run outside any runtime (after it shut down) and must not
/// block the thread it runs on, so a short-lived thread does the waiting; it
/// ends as soon as the server has exited, which a well-behaved server does
/// at once when its input ends.
fn shutdown_in_background(
    mut child: Box<dyn ChildWrapper>,
    group: Option<LiveGroup>,
    server: String,
    grace: Duration,
) {
    let spawned = std::thread::Builder::new()
        .name("switchboard-shutdown".to_owned())
        .spawn(move || {
            // Leaves the registry when this thread is done with the server.
            let _group = group;
            let mut exited = wait_for_exit(&mut *child, grace, &server);
            #[cfg(unix)]
            if !exited {
                tracing::debug!(server = %server, "server ignored the end of its input; sending SIGTERM");
                let _ = child.signal(libc::SIGTERM);
                exited = wait_for_exit(&mut *child, grace, &server);
            }
            if !exited {
                tracing::debug!(server = %server, "server did not exit; killing it");
            }
            // Kills the server if still running, and in any case the
            // children it left in its group.
            let _ = child.start_kill();
            if !exited && !wait_for_exit(&mut *child, REAPER_PATIENCE, &server) {
                tracing::warn!(server = %server, "server process did not die after SIGKILL");
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "could not start a thread to stop the server; killing it now");
    }
}

/// Polls for the child's exit (reaping it) for up to `patience`.
fn wait_for_exit(child: &mut dyn ChildWrapper, patience: Duration, server: &str) -> bool {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) => {}
            Err(error) => {
                tracing::debug!(server = %server, %error, "waiting for the server failed");
                return true;
            }
        }
        if started.elapsed() >= patience {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}
