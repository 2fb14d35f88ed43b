//! Linux: starting a server as `posix_spawn` does — `clone(CLONE_VM |
//! CLONE_VFORK)`, the child running on a stack of its own until `execve` —
//! with the parent-death signal armed in between (issue 35).
//!
//! The standard library starts a process with `posix_spawn` unless the
//! command has a `pre_exec` closure, and then it `fork`s: the client's page
//! tables are copied, torn down again at `execve`, and the client takes
//! copy-on-write faults meanwhile. Arming `PR_SET_PDEATHSIG` needs code
//! between the two, so it cost every server start about 0.23 ms (a 1.57 ms
//! cold connect against 1.34 ms without it, in the hot-path benchmark).
//! Here the child shares the client's memory while the client's thread
//! waits, and makes raw system calls only: no allocation, no lock, no
//! signal handler (every signal is blocked from before the `clone` until
//! the child has set its own mask for `execve`).
//!
//! What the child is given is what [`super::StdioConfig::spawn`] gives a
//! `tokio::process::Command`: the program (searched for in the child's
//! `PATH` when it has no `/`), arguments, environment, working directory,
//! three pipes, a process group of its own, `SIGPIPE` at its default and
//! no signal blocked. The process is then handled through
//! `process_wrap`'s `ChildWrapper`, as a wrapped tokio child is.

use std::ffi::{CString, OsStr, OsString};
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};

use process_wrap::tokio::ChildWrapper;
use tokio::io::unix::AsyncFd;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

/// The child's stack: a handful of system calls need little.
const CHILD_STACK: usize = 64 * 1024;

/// What a server is started with.
pub(super) struct Spec<'a> {
    pub(super) program: &'a OsStr,
    pub(super) args: &'a [OsString],
    /// The whole environment, in order (a later name wins).
    pub(super) env: Vec<(OsString, OsString)>,
    pub(super) cwd: Option<&'a Path>,
}

/// Everything the child reads, prepared by the parent (the child may not
/// allocate).
struct ChildArgs {
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    /// `/bin/sh PATH ARGS…`, for a file `execve` does not recognise (a
    /// script without `#!`), as `execvp` runs it.
    sh_argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    /// The pipe ends that become the child's stdin, stdout and stderr.
    fds: [libc::c_int; 3],
    parent: libc::pid_t,
    /// The child's `errno` when it failed before `execve` (0: it did not).
    error: AtomicI32,
}

/// Set as the error when the client died before the death signal was armed.
const PARENT_GONE: i32 = -1;

/// The child, between `clone` and `execve`: raw system calls only.
#[allow(unsafe_code)]
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points at the parent's `ChildArgs`, alive and not
    // touched by the parent (its thread waits in `clone` until this
    // process execs or exits). Every call below is a plain system call
    // wrapper: async-signal-safe, no allocation, no lock.
    unsafe {
        let args = &*(arg as *const ChildArgs);
        let fail = |code: i32| -> libc::c_int {
            args.error.store(code, Ordering::SeqCst);
            libc::_exit(127)
        };
        let errno = || *libc::__errno_location();
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
            return fail(errno());
        }
        // The client may have died before the signal was armed: then it
        // never comes, so do not start the server at all.
        if libc::getppid() != args.parent {
            return fail(PARENT_GONE);
        }
        if libc::setpgid(0, 0) != 0 {
            return fail(errno());
        }
        for (target, &fd) in args.fds.iter().enumerate() {
            let target = target as libc::c_int;
            let done = if fd == target {
                // Already in place: it only has to survive `execve`.
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, target)
            };
            if done < 0 {
                return fail(errno());
            }
        }
        if !args.cwd.is_null() && libc::chdir(args.cwd) != 0 {
            return fail(errno());
        }
        // As the standard library's children: SIGPIPE at its default (the
        // client ignores it), nothing blocked.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(args.path, args.argv, args.envp);
        if errno() == libc::ENOEXEC {
            libc::execve(*args.sh_argv, args.sh_argv, args.envp);
        }
        fail(errno())
    }
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a NUL byte in the command, its arguments or its environment",
        )
    })
}

/// The program to `execve`: as written when it has a `/`, else the first
/// executable file of that name in `PATH` (the child's), as `execvp` finds
/// it.
fn resolve(program: &OsStr, path: Option<&OsStr>) -> io::Result<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(program));
    }
    let path = path.map_or(b"/bin:/usr/bin".as_slice(), OsStr::as_bytes);
    for dir in path.split(|&b| b == b':') {
        let dir = if dir.is_empty() { b".".as_slice() } else { dir };
        let candidate = Path::new(OsStr::from_bytes(dir)).join(program);
        if is_executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(io::Error::from_raw_os_error(libc::ENOENT))
}

#[allow(unsafe_code)]
fn is_executable(path: &Path) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated string that lives across the call.
    let executable = unsafe { libc::access(c_path.as_ptr(), libc::X_OK) } == 0;
    executable && path.is_file()
}

/// A pipe, both ends close-on-exec: `(read, write)`.
#[allow(unsafe_code)]
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe2` writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just opened and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Whether this kernel has `pidfd_open` (Linux 5.3), which waiting on a
/// child started here needs; without it servers are started as before.
#[allow(unsafe_code)]
pub(super) fn supported() -> bool {
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        // SAFETY: a system call on this process's own id; the descriptor
        // it returns is closed at once.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
        if fd < 0 {
            return false;
        }
        // SAFETY: just opened, owned by nothing else.
        drop(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) });
        true
    })
}

/// Starts the server; must run inside a Tokio runtime (its pipes and exit
/// are registered with the reactor).
#[allow(unsafe_code)]
pub(super) fn spawn(spec: &Spec<'_>) -> io::Result<Box<dyn ChildWrapper>> {
    let path_var = spec
        .env
        .iter()
        .rev()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| value.as_os_str());
    let program = resolve(spec.program, path_var)?;
    let path = c_string(program.as_os_str().as_bytes())?;
    let mut arg_strings = vec![c_string(spec.program.as_bytes())?];
    for arg in spec.args {
        arg_strings.push(c_string(arg.as_bytes())?);
    }
    // A later name wins, as with `Command::env`.
    let mut env_strings: Vec<CString> = Vec::with_capacity(spec.env.len());
    let mut seen: Vec<&[u8]> = Vec::with_capacity(spec.env.len());
    for (key, value) in spec.env.iter().rev() {
        let key = key.as_bytes();
        if key.is_empty() || key.contains(&b'=') || seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let mut entry = Vec::with_capacity(key.len() + 1 + value.len());
        entry.extend_from_slice(key);
        entry.push(b'=');
        entry.extend_from_slice(value.as_bytes());
        env_strings.push(c_string(&entry)?);
    }
    env_strings.reverse();
    let cwd = spec
        .cwd
        .map(|dir| c_string(dir.as_os_str().as_bytes()))
        .transpose()?;
    let argv: Vec<*const libc::c_char> = arg_strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let sh = c_string(b"/bin/sh")?;
    let sh_argv: Vec<*const libc::c_char> = [sh.as_ptr(), path.as_ptr()]
        .into_iter()
        .chain(arg_strings[1..].iter().map(|s| s.as_ptr()))
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const libc::c_char> = env_strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();

    let (stdin_read, stdin_write) = pipe()?;
    let (stdout_read, stdout_write) = pipe()?;
    let (stderr_read, stderr_write) = pipe()?;
    let args = ChildArgs {
        path: path.as_ptr(),
        argv: argv.as_ptr(),
        sh_argv: sh_argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: cwd.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
        fds: [
            stdin_read.as_raw_fd(),
            stdout_write.as_raw_fd(),
            stderr_write.as_raw_fd(),
        ],
        // SAFETY: no preconditions.
        parent: unsafe { libc::getpid() },
        error: AtomicI32::new(0),
    };
    let mut stack = vec![0u8; CHILD_STACK];
    // The stack grows down from its end, 16-byte aligned.
    let top = {
        let end = stack.as_mut_ptr() as usize + CHILD_STACK;
        (end & !15) as *mut libc::c_void
    };
    // SAFETY: every signal is blocked around the `clone`, so no handler
    // runs in the child on the shared memory; the child runs `child_main`
    // on `stack` with `args`, both alive until `clone` returns, which with
    // CLONE_VFORK is after the child's `execve` or exit.
    let (pid, clone_error) = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            child_main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::addr_of!(args) as *mut libc::c_void,
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        (pid, clone_error)
    };
    drop(stack);
    drop((stdin_read, stdout_write, stderr_write));
    if pid < 0 {
        return Err(clone_error);
    }
    let failed = args.error.load(Ordering::SeqCst);
    if failed != 0 {
        let mut status = 0;
        // SAFETY: reaps the child that just exited.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        return Err(if failed == PARENT_GONE {
            io::Error::other("the client exited while starting the server")
        } else {
            io::Error::from_raw_os_error(failed)
        });
    }
    OwnChild::new(pid, stdin_write, stdout_read, stderr_read).map(|child| Box::new(child) as _)
}

/// A server started by [`spawn`]: the leader of its process group, waited
/// for through a pidfd, killed (with its group) when dropped unreaped.
#[derive(Debug)]
struct OwnChild {
    pid: libc::pid_t,
    exited: AsyncFd<OwnedFd>,
    status: Option<ExitStatus>,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
}

impl OwnChild {
    #[allow(unsafe_code)]
    fn new(pid: libc::pid_t, stdin: OwnedFd, stdout: OwnedFd, stderr: OwnedFd) -> io::Result<Self> {
        // SAFETY: a system call on the child just started (not reaped yet,
        // so its id cannot have been reused).
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let pidfd = if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            // SAFETY: just opened, owned by nothing else.
            Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
        };
        // SAFETY: an `OwnedFd` keeps its descriptor open and the same until
        // it is dropped, which is when the `AsyncFd` is.
        let registered = pidfd.and_then(|fd| {
            unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
                .map_err(io::Error::from)
        });
        let mut child = Self {
            pid,
            exited: match registered {
                Ok(fd) => fd,
                Err(error) => {
                    // Not watched: kill it now rather than leave it running.
                    // SAFETY: signals and reaps our own child.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, std::ptr::null_mut(), 0);
                    }
                    return Err(error);
                }
            },
            status: None,
            stdin: None,
            stdout: None,
            stderr: None,
        };
        child.stdin = Some(ChildStdin::from_std(std::process::ChildStdin::from(stdin))?);
        child.stdout = Some(ChildStdout::from_std(std::process::ChildStdout::from(
            stdout,
        ))?);
        child.stderr = Some(ChildStderr::from_std(std::process::ChildStderr::from(
            stderr,
        ))?);
        Ok(child)
    }

    #[allow(unsafe_code)]
    fn reap(&mut self, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let mut status = 0;
        // SAFETY: waits for our own child, writing its status to `status`.
        match unsafe { libc::waitpid(self.pid, &mut status, flags) } {
            0 => Ok(None),
            -1 => Err(io::Error::last_os_error()),
            _ => {
                let status = ExitStatus::from_raw(status);
                self.status = Some(status);
                Ok(Some(status))
            }
        }
    }

    #[allow(unsafe_code)]
    fn signal_group(&self, signal: libc::c_int) -> io::Result<()> {
        // SAFETY: signals the process group this child leads.
        if unsafe { libc::killpg(self.pid, signal) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for OwnChild {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if self.status.is_some() || matches!(self.reap(libc::WNOHANG), Ok(Some(_))) {
            return;
        }
        // As `kill_on_drop`: killed, and reaped where it cannot block anyone.
        // SAFETY: signals our own child, not reaped yet.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        let pid = self.pid;
        let reaper = std::thread::Builder::new()
            .name("switchboard-reap".into())
            .spawn(move || {
                // SAFETY: waits for our own child, just killed.
                unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
            });
        drop(reaper);
    }
}

impl ChildWrapper for OwnChild {
    fn inner(&self) -> &dyn ChildWrapper {
        self
    }

    fn inner_mut(&mut self) -> &mut dyn ChildWrapper {
        self
    }

    fn into_inner(self: Box<Self>) -> Box<dyn ChildWrapper> {
        self
    }

    fn stdin(&mut self) -> &mut Option<ChildStdin> {
        &mut self.stdin
    }

    fn stdout(&mut self) -> &mut Option<ChildStdout> {
        &mut self.stdout
    }

    fn stderr(&mut self) -> &mut Option<ChildStderr> {
        &mut self.stderr
    }

    fn id(&self) -> Option<u32> {
        match self.status {
            Some(_) => None,
            None => u32::try_from(self.pid).ok(),
        }
    }

    /// Kills the whole group, the leader reaped or not (what it left
    /// running has no one else to stop it; the group's id stays reserved
    /// while any member lives, so this cannot reach a stranger).
    fn start_kill(&mut self) -> io::Result<()> {
        self.signal_group(libc::SIGKILL)
    }

    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.reap(libc::WNOHANG)
    }

    fn wait(&mut self) -> Pin<Box<dyn Future<Output = io::Result<ExitStatus>> + Send + '_>> {
        Box::pin(async move {
            loop {
                if let Some(status) = self.reap(libc::WNOHANG)? {
                    return Ok(status);
                }
                // Readable once the process has exited.
                let mut ready = self.exited.readable().await?;
                ready.clear_ready();
            }
        })
    }

    fn signal(&self, sig: i32) -> io::Result<()> {
        self.signal_group(sig)
    }
}
