//! How a command ends: whatever happens — its answer, an error, a timeout,
//! SIGINT/SIGTERM/SIGHUP (Ctrl-C on Windows), output that nobody reads any
//! more — every server it started is closed the normal way (stdin closed,
//! SIGTERM, SIGKILL after the grace period, to the whole process group)
//! before the process exits. A second signal stops waiting: the servers
//! are dropped (the library kills them) and the CLI exits at once.

use std::future::Future;
use std::io::IsTerminal as _;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use switchboard::Client;
use switchboard_hub::Hub;

/// What a command started: closed when it ends, however it ends.
#[derive(Clone, Default)]
pub(crate) struct Servers {
    started: Arc<Mutex<Vec<Started>>>,
    /// Told the first signal, when the command drains on it.
    drain: Arc<Mutex<Option<tokio::sync::oneshot::Sender<u8>>>>,
    /// Told each SIGINT (Ctrl-C), when the command handles them itself.
    interrupts: Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<()>>>>,
}

enum Started {
    Client(Client),
    Hub(Hub),
    /// A connection to the background session, whose servers are not
    /// this command's to stop.
    Session(Client),
}

impl Servers {
    /// `client` is closed when the command ends.
    pub(crate) fn client(&self, client: &Client) {
        self.push(Started::Client(client.clone()));
    }

    /// `client`, connected to the background session, is closed when the
    /// command ends (the session's servers run on).
    pub(crate) fn session(&self, client: &Client) {
        self.push(Started::Session(client.clone()));
    }

    /// Whether the command started servers of its own (not only used the
    /// background session's).
    fn own_servers(&self) -> bool {
        self.started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|s| !matches!(s, Started::Session(_)))
    }

    /// `hub`'s servers are shut down when the command ends.
    pub(crate) fn hub(&self, hub: &Hub) {
        self.push(Started::Hub(hub.clone()));
    }

    /// The command stops by itself on the first signal: it is told the
    /// signal's exit code through the answer, and runs on until it ends
    /// (a second signal drops it, as for any command).
    pub(crate) fn drain_on_signal(&self) -> tokio::sync::oneshot::Receiver<u8> {
        let (tell, told) = tokio::sync::oneshot::channel();
        *self.drain.lock().unwrap_or_else(|e| e.into_inner()) = Some(tell);
        told
    }

    /// The command handles Ctrl-C itself (the shell: it cancels the
    /// command running, not the shell): each SIGINT is sent here instead
    /// of ending the command, while the receiver lives. SIGTERM and SIGHUP
    /// still end it.
    pub(crate) fn interrupts(&self) -> tokio::sync::mpsc::UnboundedReceiver<()> {
        let (tell, told) = tokio::sync::mpsc::unbounded_channel();
        *self.interrupts.lock().unwrap_or_else(|e| e.into_inner()) = Some(tell);
        told
    }

    /// Hands a SIGINT to the command, if it takes them.
    fn interrupted(&self) -> bool {
        self.interrupts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|tell| tell.send(()).is_ok())
    }

    fn push(&self, started: Started) {
        self.started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(started);
    }

    /// Closes everything started, all at once (each waits out its own
    /// grace period). Closing twice is harmless: a closed client returns
    /// at once.
    async fn close(&self) {
        let started = std::mem::take(&mut *self.started.lock().unwrap_or_else(|e| e.into_inner()));
        let mut closing = tokio::task::JoinSet::new();
        for started in started {
            match started {
                Started::Client(client) | Started::Session(client) => {
                    closing.spawn(async move { client.close().await })
                }
                Started::Hub(hub) => closing.spawn(async move { hub.shutdown().await }),
            };
        }
        while closing.join_next().await.is_some() {}
    }
}

/// How a command ended.
pub(crate) enum Ended<T> {
    /// It ran to the end.
    Done(T),
    /// A signal stopped it; the exit code that says which.
    Signal(u8),
    /// Writing to stdout or stderr failed (a closed pipe: `… | head`).
    OutputClosed,
}

/// Runs `command`, then closes what it started, then says how it ended.
/// A signal drops the command (its requests in flight are cancelled: the
/// server is told) before the servers are closed, unless the command
/// drains on signals ([`Servers::drain_on_signal`]: it is told, and ends
/// by itself); a second signal drops it, or drops the servers still
/// closing, at once.
pub(crate) async fn run<T>(servers: &Servers, command: impl Future<Output = T>) -> Ended<T> {
    let mut signals = match Signals::new() {
        Ok(signals) => Some(signals),
        Err(error) => {
            eprintln!("warning: cannot handle signals, Ctrl-C may leave servers running: {error}");
            None
        }
    };
    let ended = {
        let mut command = CatchPrintFailure(Box::pin(command));
        let ended = |ended| match ended {
            Ok(value) => Ended::Done(value),
            Err(()) => Ended::OutputClosed,
        };
        tokio::select! {
            biased;
            code = ending(&mut signals, servers) => {
                let drain = servers.drain.lock().unwrap_or_else(|e| e.into_inner()).take();
                match drain.map(|drain| drain.send(code)) {
                    // It stops by itself; a second signal stops waiting.
                    Some(Ok(())) => tokio::select! {
                        biased;
                        code = next(&mut signals) => Ended::Signal(code),
                        done = &mut command => ended(done),
                    },
                    _ => Ended::Signal(code),
                }
            }
            done = &mut command => ended(done),
        }
    };
    if let Ended::Signal(_) = ended
        && std::io::stderr().is_terminal()
    {
        // Closing may take the servers' grace periods; say why it waits.
        // A command that used the background session's servers cancelled
        // its request (dropped above: the server is told) and stops none.
        let said: &[u8] = if servers.own_servers() {
            "\nstopping the servers… (again to kill them now)\n".as_bytes()
        } else {
            "\ncancelled\n".as_bytes()
        };
        let _ = std::io::Write::write_all(&mut std::io::stderr(), said);
    }
    tokio::select! {
        biased;
        code = next(&mut signals) => {
            // Dropped with this future: the library kills their groups.
            Ended::Signal(code)
        }
        () = servers.close() => ended,
    }
}

/// The next signal that ends the command: a SIGINT the command takes
/// itself ([`Servers::interrupts`]) is handed to it instead.
async fn ending(signals: &mut Option<Signals>, servers: &Servers) -> u8 {
    loop {
        let code = next(signals).await;
        if code != crate::failure::exit::SIGINT || !servers.interrupted() {
            return code;
        }
    }
}

async fn next(signals: &mut Option<Signals>) -> u8 {
    match signals {
        Some(signals) => signals.next().await,
        None => std::future::pending().await,
    }
}

#[cfg(unix)]
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal, as the exit code a shell gives for it (128 + n).
    async fn next(&mut self) -> u8 {
        tokio::select! {
            _ = self.interrupt.recv() => crate::failure::exit::SIGINT,
            _ = self.terminate.recv() => crate::failure::exit::SIGTERM,
            _ = self.hangup.recv() => crate::failure::exit::SIGHUP,
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn new() -> std::io::Result<Self> {
        Ok(Self)
    }

    async fn next(&mut self) -> u8 {
        let _ = tokio::signal::ctrl_c().await;
        crate::failure::exit::SIGINT
    }
}

/// Set when `println!`/`eprintln!` failed (they panic): the panic is then
/// no bug to report but the end of the output.
static PRINT_FAILED: AtomicBool = AtomicBool::new(false);

/// Installs the panic hook that keeps quiet about a failed print (the
/// reader of stdout or stderr went away) and reports every other panic as
/// before. Rust ignores SIGPIPE, so `switchboard tools | head -1` makes
/// `println!` panic; restoring SIGPIPE's default would instead let a
/// server that closes its stdin kill the CLI on its next write.
pub(crate) fn quiet_print_failures() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        // std's own words (library/std/src/io/stdio.rs, `print_to`).
        if message.starts_with("failed printing to stdout")
            || message.starts_with("failed printing to stderr")
        {
            PRINT_FAILED.store(true, Ordering::SeqCst);
            return;
        }
        report(info);
    }));
}

/// Whether a print failed: the panic that ends `main` is the output's end.
pub(crate) fn print_failed() -> bool {
    PRINT_FAILED.load(Ordering::SeqCst)
}

/// The command, with a failed print turned into `Err(())` so that the
/// servers are still closed. Any other panic goes on unwinding.
struct CatchPrintFailure<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchPrintFailure<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let command = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| command.poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) if print_failed() => Poll::Ready(Err(())),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}
