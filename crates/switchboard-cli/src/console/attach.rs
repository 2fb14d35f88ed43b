//! A console over a running gateway: the background session's, which
//! `switchboard console` opens while the project's session runs, or a
//! `switchboard serve --console`'s (its host on stdio tapped too). It shows
//! the session's own servers (the processes `call` and `tools` use), what
//! each host connected to the session sent it and was sent back (`host`
//! entries of the protocol view: every CLI command served by the session,
//! and the console's own calls) beside what the gateway forwarded to each
//! server, and calls tools as one more host of the gateway — so a server's
//! question during a call comes to the page, and the gateway's policy and
//! audit apply as to any host.
//!
//! How it is opened: the session listens on a second socket beside its
//! own, `console.sock` (0600, in the session's 0700 directory, another
//! uid's connections dropped as on the session socket). `switchboard
//! console` writes one line there (`{"port": N}`); the session binds the
//! console on 127.0.0.1 and answers with its address (the token in it
//! travels on the private socket only); the console serves while that
//! connection stays open, and counts as one of the session's clients, so
//! the session does not stop under it. Closing `switchboard console`
//! closes the console; the session runs on.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use switchboard::transport::tap::Tap;
use switchboard_hub::hub::audit::AuditLog;
use switchboard_hub::{Hub, HubServer};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};

use super::{Bound, Parts, Settings, asks, audit, protocol::Protocol, roots, say};
use crate::configure::Context;
use crate::failure::Failure;

/// The longest line `switchboard console` may send the session.
const MAX_REQUEST: usize = 4096;

/// What a gateway records for a console to show: nothing until one
/// attaches (an atomic load a message meanwhile).
#[derive(Clone)]
pub(crate) struct Taps(Arc<Protocol>);

impl Taps {
    pub(crate) fn new() -> Self {
        Self(Arc::new(Protocol::off()))
    }

    /// The tap of the gateway's connections to server `name`.
    pub(crate) fn server(&self, name: &str) -> Arc<dyn Tap> {
        self.0.tap(name)
    }

    /// The tap of host connection `name` to the gateway (the gateway's
    /// side of it).
    pub(crate) fn host(&self, name: &str) -> Arc<dyn Tap> {
        self.0.host_tap(name)
    }
}

/// A gateway a console can be opened over.
pub(crate) struct Attach {
    context: Context,
    hub: Hub,
    gateway: HubServer,
    credentials: Option<PathBuf>,
    audit: Option<Arc<AuditLog>>,
    taps: Taps,
    /// What the gateway is called in the page.
    called: &'static str,
    /// Consoles open now (the record is kept while any is).
    open: AtomicUsize,
    /// Consoles opened so far, to name each one's host connection.
    opened: AtomicUsize,
}

impl Attach {
    /// A console over `gateway` (called `called` in the page: "the
    /// background session", "this `switchboard serve`").
    pub(crate) fn new(
        called: &'static str,
        context: Context,
        hub: Hub,
        gateway: HubServer,
        credentials: Option<PathBuf>,
        audit: Option<Arc<AuditLog>>,
        taps: Taps,
    ) -> Arc<Self> {
        Arc::new(Self {
            called,
            context,
            hub,
            gateway,
            credentials,
            audit,
            taps,
            open: AtomicUsize::new(0),
            opened: AtomicUsize::new(0),
        })
    }

    /// Serves a console on 127.0.0.1:`port` over the gateway until
    /// `stop`; `opened` is told its address (with the token) once it
    /// listens.
    pub(crate) async fn serve(
        self: &Arc<Self>,
        port: u16,
        opened: impl FnOnce(&str),
        stop: impl std::future::Future,
    ) -> Result<(), Failure> {
        let n = self.opened.fetch_add(1, Ordering::Relaxed) + 1;
        let questions = Arc::new(asks::Asks::audited(None));
        let page = asks::PageElicitation(questions.clone());
        // The console's calls, as a host of the gateway; its connection
        // recorded like any host's.
        let name = format!("console-{n}");
        let mut gateway = self.gateway.clone();
        if let Some(log) = &self.audit {
            gateway = gateway.audit(log.clone(), name.clone());
        }
        let (ours, theirs) = switchboard::transport::memory::pair();
        let served = gateway.serve(
            switchboard::transport::tap::tap_connection(
                theirs.into_connection(),
                self.taps.host(&name),
            ),
            switchboard::server::ServeOptions::default(),
        );
        // Recording starts before the console's own handshake.
        if self.open.fetch_add(1, Ordering::SeqCst) == 0 {
            self.taps.0.set_on(true);
        }
        let closed = Closed(self.clone());
        let host = switchboard::Client::builder()
            .name("switchboard console")
            .mcp_apps()
            .elicitation(page.clone())
            .sampling(page)
            .connect(ours.into_connector())
            .await
            .map_err(|e| {
                Failure::usage(anyhow::anyhow!(
                    "the console cannot connect to the gateway: {e}"
                ))
            })?;
        // Bound once connected: nothing listens for a console that could
        // not be made.
        let bound = match Bound::listen(port).await {
            Ok(bound) => bound,
            Err(failure) => {
                host.close().await;
                return Err(failure);
            }
        };
        let parts = Parts {
            context: self.context.clone(),
            hub: self.hub.clone(),
            asks: questions,
            protocol: self.taps.0.clone(),
            roots: Arc::new(roots::RootsBook::default()),
            credentials: self.credentials.clone(),
            audit: self.audit.as_ref().and_then(audit::Audit::of).map(Arc::new),
            host: Some((host.clone(), self.called)),
        };
        let (state, listener, url) = bound.state(parts);
        opened(&url);
        super::serve(state, listener, stop).await;
        host.close().await;
        let _ = served.closed().await;
        drop(closed);
        Ok(())
    }

    /// One connection to the session's console socket: its request line
    /// read, the console opened and its address written back, then served
    /// until the connection closes.
    pub(crate) async fn control(self: Arc<Self>, stream: tokio::net::UnixStream) {
        let (read, mut write) = stream.into_split();
        let mut read = tokio::io::BufReader::new(read.take(MAX_REQUEST as u64));
        let mut line = String::new();
        let asked = tokio::time::timeout(super::HEADER_WAIT, read.read_line(&mut line)).await;
        let port = match asked {
            Ok(Ok(n)) if n > 0 => serde_json::from_str::<Value>(&line)
                .ok()
                .and_then(|request| request.get("port")?.as_u64())
                .and_then(|port| u16::try_from(port).ok()),
            _ => None,
        };
        let Some(port) = port else {
            let _ = write
                .write_all(b"{\"error\":\"the request was not {\\\"port\\\": N}\"}\n")
                .await;
            return;
        };
        // The console serves until `switchboard console` goes (its
        // connection reaches its end).
        let mut rest = read.into_inner().into_inner();
        let gone = async move {
            let mut sink = [0u8; 256];
            while matches!(rest.read(&mut sink).await, Ok(n) if n > 0) {}
        };
        let (said, told) = tokio::sync::oneshot::channel::<String>();
        let writer = tokio::spawn(async move {
            if let Ok(url) = told.await {
                let line = json!({ "url": url }).to_string() + "\n";
                let _ = write.write_all(line.as_bytes()).await;
            }
            write
        });
        let served = self
            .serve(
                port,
                move |url| {
                    let _ = said.send(url.to_owned());
                },
                gone,
            )
            .await;
        if let Err(failure) = served
            && let Ok(mut write) = writer.await
        {
            let line = json!({ "error": format!("{:#}", failure.error) }).to_string() + "\n";
            let _ = write.write_all(line.as_bytes()).await;
        }
    }
}

/// Stops the record when the last console closes.
struct Closed(Arc<Attach>);

impl Drop for Closed {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.taps.0.set_on(false);
        }
    }
}

/// `switchboard console` while the project's background session runs:
/// the session's console, served by the session while this command runs.
/// `None` when no session runs (or `SWITCHBOARD_NO_SESSION` is set): the
/// console starts its own servers.
pub(super) async fn through_session(
    context: &Context,
    settings: &Settings,
) -> Result<Option<u8>, Failure> {
    if std::env::var_os("SWITCHBOARD_NO_SESSION").is_some() {
        return Ok(None);
    }
    let paths = crate::session::Paths::locate(context);
    if paths.check().is_err() {
        return Ok(None);
    }
    let Ok(stream) = tokio::net::UnixStream::connect(paths.dir.join(CONSOLE_SOCKET)).await else {
        return Ok(None);
    };
    let (read, mut write) = stream.into_split();
    let request = json!({ "port": settings.port }).to_string() + "\n";
    let usage = |what: String| Failure::usage(anyhow::anyhow!(what));
    write
        .write_all(request.as_bytes())
        .await
        .map_err(|e| usage(format!("the session did not take the request: {e}")))?;
    let mut read = tokio::io::BufReader::new(read);
    let mut line = String::new();
    read.read_line(&mut line)
        .await
        .map_err(|e| usage(format!("the session did not answer: {e}")))?;
    let answer: Value = serde_json::from_str(&line).unwrap_or_default();
    let url = match (answer["url"].as_str(), answer["error"].as_str()) {
        (Some(url), _) => url.to_owned(),
        (None, Some(error)) => return Err(usage(format!("the session's console: {error}"))),
        (None, None) => return Err(usage("the session did not open a console".to_owned())),
    };
    say(&[
        &format!("switchboard console: {url}"),
        "(the background session's servers; Ctrl-C closes the console, the session runs on)",
    ]);
    let port = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse().ok())
        .unwrap_or(0);
    let _launch = if settings.open {
        super::open_browser(&url, port)
    } else {
        None
    };
    let mut rest = [0u8; 64];
    let mut interrupt =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = async { while matches!(read.read(&mut rest).await, Ok(n) if n > 0) {} } => {
            eprintln!("switchboard console: the session stopped");
            return Ok(Some(crate::failure::exit::USAGE));
        }
        _ = async { match &mut interrupt { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
        _ = async { match &mut terminate { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
    }
    Ok(Some(0))
}

/// The session's console socket, beside its own.
pub(crate) const CONSOLE_SOCKET: &str = "console.sock";
