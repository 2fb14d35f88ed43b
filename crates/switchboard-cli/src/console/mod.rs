//! `switchboard console`: the configured servers in a web page, served on
//! 127.0.0.1 only, behind the checks of [`guard`] on every request. The
//! page and its script ship inside the binary (`assets/`); it shows every
//! server with its state and where it is configured (a project server
//! waiting for approval with what it runs, and approved there); lists,
//! searches and calls tools with a form built from each tool's input
//! schema; reads resources (templates filled in) and gets prompts; and
//! shows every JSON-RPC message each server's connection carried
//! ([`protocol`]) and what they say on their own ([`activity`]); gives
//! each server the roots the page sets ([`roots`]); logs in to a server ([`login`]); says step by step why
//! a server is not ready ([`doctor`]); hosts MCP Apps, each view on an
//! origin of its own ([`apps`]); adds, enables, disables and removes
//! servers in the files ([`edit`]); shows an audit log, verified
//! ([`audit`]); and is served over a running gateway — the background
//! session's, or `serve --console`'s — with what its hosts sent
//! ([`attach`]).
//!
//! The browser is opened on a private file (0600) that forwards to the
//! address with the token, so the token never appears on a command line
//! another local user could read (`/proc/PID/cmdline` of the browser).

mod activity;
mod api;
mod apps;
mod asks;
pub(crate) mod attach;
mod audit;
mod doctor;
mod edit;
mod guard;
mod login;
mod protocol;
mod roots;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response};
use switchboard_hub::Hub;
use switchboard_hub::config::LoadedConfig;

use crate::configure::Context;
use crate::failure::Failure;
use crate::lifecycle::Servers;
use guard::{Guard, Pass, Seen};

/// What the console answers with: a whole body, or a call's lines as
/// they come.
type Body = BoxBody<Bytes, std::convert::Infallible>;

/// The largest request body the console reads (a tool call's arguments).
const MAX_BODY: usize = 1 << 20;

/// The most connections each of the console's listeners serves at once
/// (the page's own, and apps' views): more wait to be accepted, so
/// another local process cannot exhaust the console's memory or files.
pub(crate) const MAX_CONNECTIONS: usize = 64;

/// How long a connection may take to send a request's headers (and an
/// idle one is kept): a connection that sends nothing gives its slot up.
pub(crate) const HEADER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The console's own pages may load only its own script and style, talk
/// only to itself, and be framed by no one.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; media-src 'self' data:; connect-src 'self'; \
    frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");
const PROTOCOL_SCRIPT: &str = include_str!("assets/protocol.js");
const APPS_SCRIPT: &str = include_str!("assets/apps.js");
const ACTIVITY_SCRIPT: &str = include_str!("assets/activity.js");
const CONFIG_SCRIPT: &str = include_str!("assets/config.js");
const AUDIT_SCRIPT: &str = include_str!("assets/audit.js");

struct State {
    context: Context,
    hub: Hub,
    asks: Arc<asks::Asks>,
    protocol: Arc<protocol::Protocol>,
    activity: Arc<activity::Activity>,
    apps: Arc<apps::Apps>,
    logins: Arc<login::Logins>,
    roots: Arc<roots::RootsBook>,
    /// The configuration as last read (again after each change the page
    /// makes).
    loaded: std::sync::RwLock<Arc<LoadedConfig>>,
    credentials: Option<std::path::PathBuf>,
    /// The audit log the page's calls are written to and shown from.
    audit: Option<Arc<audit::Audit>>,
    /// In a gateway, its host client the page calls tools through.
    host: Option<switchboard::Client>,
    /// In a gateway, what it is called in the page.
    gateway: Option<&'static str>,
    guard: Guard,
}

/// What `switchboard console` was told.
pub(crate) struct Settings {
    /// The port on 127.0.0.1 (0: any free one).
    pub(crate) port: u16,
    /// Whether the browser is opened.
    pub(crate) open: bool,
    /// The audit log (`--audit FILE`).
    pub(crate) audit: Option<std::path::PathBuf>,
    /// Whether calls' arguments are written to it too.
    pub(crate) audit_arguments: bool,
}

impl State {
    /// The configuration as last read.
    fn loaded(&self) -> Arc<LoadedConfig> {
        self.loaded
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The files read again.
    fn reread(&self) {
        let loaded = Arc::new(self.context.load_quiet());
        *self
            .loaded
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = loaded;
    }

    /// The files read again after the page changed them, and the running
    /// servers brought in line in the background (the page follows each
    /// server's state as it starts or stops).
    fn refresh(&self) {
        self.reread();
        let (context, hub) = (self.context.clone(), self.hub.clone());
        let gateway = self.host.is_some();
        tokio::spawn(async move {
            // A gateway reads its files as it reads them on a change
            // (the servers it fronts, approvals, policy).
            let done = if gateway {
                hub.reload().await.map(drop).map_err(|e| e.to_string())
            } else {
                crate::hub::reapply(&context, &hub).await.map(drop)
            };
            if let Err(error) = done {
                eprintln!(
                    "switchboard console: the servers were not brought in line with the files: {error}"
                );
            }
        });
    }
}

/// `console [--port N] [--no-open]`: serves the console until a signal
/// while the configured servers start, and opens it in the browser unless
/// told not to. When the project's background session runs, the console
/// is the session's instead ([`attach`]): its servers, and what its hosts
/// sent.
pub(crate) async fn console(
    context: &Context,
    settings: Settings,
    credentials: Option<&Path>,
    servers: &Servers,
) -> Result<u8, Failure> {
    if settings.audit.is_none()
        && let Some(code) = attach::through_session(context, &settings).await?
    {
        return Ok(code);
    }
    let Settings { port, open, .. } = settings;
    let audit = settings
        .audit
        .map(|path| {
            audit::Audit::open(path.clone(), settings.audit_arguments).map_err(|e| {
                Failure::usage(
                    anyhow::Error::new(e)
                        .context(format!("cannot open the audit log {}", path.display())),
                )
            })
        })
        .transpose()?
        .map(Arc::new);
    // Bound before the servers start: a port in use fails at once.
    let bound = Bound::listen(port).await?;
    // The servers start while the page opens (it shows each one's state
    // as it changes); one waiting for approval is approved in the page.
    // What the servers ask (forms, pages to open, sampling) is asked in
    // the page.
    let questions = Arc::new(asks::Asks::audited(audit.clone()));
    let page = asks::PageElicitation(questions.clone());
    // Every message each server's connection carries, for the protocol
    // view.
    let protocol = Arc::new(protocol::Protocol::default());
    let tapped = protocol.clone();
    // Each server's roots, none until the page sets them.
    let roots = Arc::new(roots::RootsBook::default());
    let rooted = roots.clone();
    let approver = page.clone();
    let approve = move |ask| approver.approve(ask);
    let hub = crate::hub::open_unasked(
        context,
        credentials,
        servers,
        approve,
        move |config, client| {
            client
                .mcp_apps()
                .elicitation(page.clone())
                .sampling(page.clone())
                .tap(tapped.tap(&config.name))
                .roots(rooted.of(&config.name))
        },
    )?;
    let parts = Parts {
        context: context.clone(),
        hub,
        asks: questions,
        protocol,
        roots,
        credentials: credentials.map(Path::to_path_buf),
        audit,
        host: None,
    };
    let (state, listener, url) = bound.state(parts);
    // Written, not printed: a reader that has gone (`| head -1`) must not
    // stop the console.
    say(&[
        &format!("switchboard console: {url}"),
        "(Ctrl-C stops it and its servers)",
    ]);
    // Kept until the console stops, then removed.
    let _launch = if open {
        open_browser(&url, state.guard.port())
    } else {
        None
    };
    serve(state, listener, servers.drain_on_signal()).await;
    Ok(0)
}

/// Lines on stdout, written whatever becomes of its reader.
fn say(lines: &[&str]) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
}

/// What a console shows, over a hub made by whoever made it.
struct Parts {
    context: Context,
    hub: Hub,
    asks: Arc<asks::Asks>,
    protocol: Arc<protocol::Protocol>,
    roots: Arc<roots::RootsBook>,
    credentials: Option<std::path::PathBuf>,
    audit: Option<Arc<audit::Audit>>,
    /// In a gateway: a host client of it, through which the page calls
    /// tools (so what a server asks during a call comes to the page, and
    /// the gateway's policy and audit apply as to any host), and what the
    /// gateway is called in the page.
    host: Option<(switchboard::Client, &'static str)>,
}

/// A console's listeners, bound: its page's and its apps' views'.
struct Bound {
    listener: tokio::net::TcpListener,
    guard: Guard,
    apps: Arc<apps::Apps>,
}

impl Bound {
    /// 127.0.0.1:`port` (0: any free one) and a port for apps' views.
    async fn listen(port: u16) -> Result<Self, Failure> {
        let usage = |what: String| Failure::usage(anyhow::anyhow!(what));
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .await
            .map_err(|e| usage(format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
        let addr: SocketAddr = listener
            .local_addr()
            .map_err(|e| usage(format!("the console's address: {e}")))?;
        let guard = Guard::new(addr).map_err(|e| usage(format!("cannot make a token: {e}")))?;
        // Apps' views come from an origin of their own.
        let apps = apps::Apps::start(addr)
            .await
            .map_err(|e| usage(format!("cannot listen on 127.0.0.1 for apps' views: {e}")))?;
        Ok(Self {
            listener,
            guard,
            apps,
        })
    }

    /// The console over `parts`: its state, its listener, and the address
    /// with the token to open it at.
    fn state(self, parts: Parts) -> (Arc<State>, tokio::net::TcpListener, String) {
        let activity = activity::Activity::follow(&parts.hub);
        let state = Arc::new(State {
            loaded: std::sync::RwLock::new(Arc::new(parts.context.load_quiet())),
            context: parts.context,
            hub: parts.hub,
            activity,
            asks: parts.asks,
            protocol: parts.protocol,
            apps: self.apps,
            logins: Arc::default(),
            roots: parts.roots,
            credentials: parts.credentials,
            audit: parts.audit,
            host: parts.host.as_ref().map(|(host, _)| host.clone()),
            gateway: parts.host.map(|(_, gateway)| gateway),
            guard: self.guard,
        });
        let url = state.guard.sign_in_url();
        (state, self.listener, url)
    }
}

/// Serves the console until `stop`; then its apps' listener and what
/// follows the hub for it stop too.
async fn serve(
    state: Arc<State>,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future,
) {
    tokio::pin!(stop);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = async {
                let slot = slots.clone().acquire_owned().await;
                (listener.accept().await, slot)
            } => accepted,
            _ = &mut stop => break,
        };
        let (Ok((stream, _)), Ok(slot)) = accepted else {
            continue;
        };
        let state = state.clone();
        connections.spawn(async move {
            let _slot = slot;
            let service = hyper::service::service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, std::convert::Infallible>(handle(&state, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_WAIT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
        // Ended connections are let go of as they end.
        while connections.try_join_next().is_some() {}
    }
    connections.abort_all();
    state.apps.stop();
    state.activity.stop();
}

/// Opens the console in the user's browser through a private file that
/// forwards to `url`; the file, kept while the console runs.
fn open_browser(url: &str, port: u16) -> Option<crate::listen::TokenFile> {
    let page = format!(
        "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={url}\">\
         <title>switchboard console</title>"
    );
    let file = match crate::listen::private_runtime_file(&format!("console-{port}.html"), &page) {
        Ok(file) => file,
        Err(error) => {
            eprintln!(
                "warning: cannot write the page that opens the console ({error}); open the address above"
            );
            return None;
        }
    };
    let target = format!("file://{}", file.path().display());
    if let Err(error) = webbrowser::open(&target) {
        eprintln!("warning: cannot open a browser ({error}); open the address above");
    }
    Some(file)
}

fn header<'a>(request: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    request.headers().get(name)?.to_str().ok()
}

/// One request: checked, then answered.
async fn handle(state: &State, request: Request<Incoming>) -> Response<Body> {
    let query_token = request.uri().query().and_then(|query| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("token="))
    });
    let seen = Seen {
        method: request.method().as_str(),
        host: header(&request, "host"),
        origin: header(&request, "origin"),
        cookie: header(&request, "cookie"),
        authorization: header(&request, "authorization"),
        content_type: header(&request, "content-type"),
        query_token,
    };
    let pass = match state.guard.check(&seen) {
        Ok(pass) => pass,
        Err(refused) => return respond(refused.status(), "text/plain", refused.text().into()),
    };
    if pass == Pass::SignIn {
        // The cookie, then the console by a navigation of its own (a
        // same-site one: the cookie goes with it), without the token in
        // the address bar or the history.
        let mut response = respond(
            200,
            "text/html; charset=utf-8",
            "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url=/\">\
             <title>switchboard console</title>"
                .into(),
        );
        if let Ok(cookie) = state.guard.cookie().parse() {
            response.headers_mut().insert("set-cookie", cookie);
        }
        return response;
    }
    let path = request.uri().path().to_owned();
    match (request.method().as_str(), path.as_str()) {
        ("GET", "/") => {
            // The page may frame apps' views, from their origin only.
            let mut page = respond(200, "text/html; charset=utf-8", INDEX.into());
            let policy = format!("{CSP}; frame-src {}", state.apps.origin());
            if let Ok(policy) = policy.parse() {
                page.headers_mut().insert("content-security-policy", policy);
            }
            page
        }
        ("GET", "/console.js") => respond(200, "text/javascript; charset=utf-8", SCRIPT.into()),
        ("GET", "/protocol.js") => respond(
            200,
            "text/javascript; charset=utf-8",
            PROTOCOL_SCRIPT.into(),
        ),
        ("GET", "/apps.js") => respond(200, "text/javascript; charset=utf-8", APPS_SCRIPT.into()),
        ("GET", "/activity.js") => respond(
            200,
            "text/javascript; charset=utf-8",
            ACTIVITY_SCRIPT.into(),
        ),
        ("GET", "/audit.js") => respond(200, "text/javascript; charset=utf-8", AUDIT_SCRIPT.into()),
        ("GET", "/config.js") => {
            respond(200, "text/javascript; charset=utf-8", CONFIG_SCRIPT.into())
        }
        ("GET", "/console.css") => respond(200, "text/css; charset=utf-8", STYLE.into()),
        ("GET", "/api/servers") => {
            let mut servers = api::servers(
                &state.hub,
                &state.loaded(),
                state.credentials.as_deref(),
                &state.logins,
            );
            // A gateway's servers (the session's), not the console's own.
            servers["gateway"] = state.gateway.into();
            json(200, &servers)
        }
        ("GET", "/api/tools") => json(200, &api::tools(&state.hub)),
        ("GET", "/api/resources") => json(200, &api::resources(&state.hub).await),
        ("GET", "/api/prompts") => json(200, &api::prompts(&state.hub).await),
        ("GET", "/api/asks") => json(200, &state.asks.list()),
        ("GET", "/api/skills") => json(200, &api::skills(&state.hub).await),
        ("GET", "/api/protocol") => json(200, &state.protocol.since(after(&request))),
        ("GET", "/api/tasks") => json(200, &state.protocol.tasks()),
        ("GET", "/api/roots") => json(200, &state.roots.list()),
        ("GET", "/api/audit") => json(
            200,
            &state.audit.as_ref().map_or_else(audit::none, |a| a.view()),
        ),
        ("GET", "/api/activity") => json(200, &state.activity.since(after(&request))),
        ("GET", "/api/protocol/export") => {
            let mut response = respond(200, "application/x-ndjson", state.protocol.export());
            if let Ok(value) = "attachment; filename=\"switchboard-protocol.ndjson\"".parse() {
                response.headers_mut().insert("content-disposition", value);
            }
            response
        }
        (
            "POST",
            "/api/call" | "/api/approve" | "/api/read" | "/api/prompt" | "/api/answer"
            | "/api/app/open" | "/api/app/request" | "/api/app/close" | "/api/login"
            | "/api/server" | "/api/doctor" | "/api/complete" | "/api/skill" | "/api/subscribe"
            | "/api/logout" | "/api/task" | "/api/roots" | "/api/add" | "/api/config",
        ) => {
            let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
                Ok(body) => body.to_bytes(),
                Err(_) => {
                    return respond(
                        413,
                        "text/plain",
                        format!("a request body is at most {MAX_BODY} bytes"),
                    );
                }
            };
            if path == "/api/call" {
                return match api::call(&state.hub, state.host.as_ref(), state.audit.as_ref(), &body)
                {
                    Ok(lines) => {
                        let mut response = respond(200, "application/x-ndjson", String::new());
                        *response.body_mut() = lines.boxed();
                        response
                    }
                    Err((status, error)) => json(status, &serde_json::json!({ "error": error })),
                };
            }
            let answer = match path.as_str() {
                "/api/read" => api::read(&state.hub, state.audit.as_deref(), &body).await,
                "/api/prompt" => api::prompt(&state.hub, state.audit.as_deref(), &body).await,
                "/api/answer" => state.asks.answer(&body),
                "/api/server" => api::server_action(&state.hub, &body).await,
                "/api/complete" => api::complete(&state.hub, &body).await,
                "/api/subscribe" => api::subscribe(&state.hub, &body).await,
                "/api/task" => api::task(&state.hub, &body).await,
                "/api/roots" if state.host.is_some() => Err((
                    409,
                    "the session's servers get the roots of the hosts it serves, not the console's"
                        .to_owned(),
                )),
                "/api/roots" => state.roots.set(&body),
                "/api/add" => edit::add(state, &body).await,
                "/api/config" => edit::change(state, &body).await,
                "/api/logout" => login::Logins::logout(state, &body).await,
                "/api/skill" => api::skill(&state.hub, &body).await,
                "/api/doctor" => {
                    doctor::diagnose(&state.context, &state.hub, &state.loaded(), &body).await
                }
                "/api/app/open" => state.apps.open(&state.hub, &body).await,
                "/api/app/request" => state.apps.request(&state.hub, &body).await,
                "/api/app/close" => state.apps.close(&body),
                "/api/login" => state.logins.begin(state, &body).await,
                _ => {
                    let answer = api::approve(&state.context, &state.hub, &body).await;
                    state.reread();
                    answer
                }
            };
            match answer {
                Ok(result) => json(200, &result),
                Err((status, error)) => json(status, &serde_json::json!({ "error": error })),
            }
        }
        _ => respond(404, "text/plain", "not found".into()),
    }
}

/// `after=N` of the query: the last entry the page has.
fn after(request: &Request<Incoming>) -> Option<u64> {
    request.uri().query().and_then(|query| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("after="))
            .and_then(|after| after.parse().ok())
    })
}

fn json(status: u16, value: &serde_json::Value) -> Response<Body> {
    respond(
        status,
        "application/json",
        serde_json::to_string(value).unwrap_or_default(),
    )
}

/// A response with the console's headers: its CSP, no sniffing, no
/// referrer, no caching.
fn respond(status: u16, content_type: &str, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-type", content_type),
        ("content-security-policy", CSP),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
        ("x-frame-options", "DENY"),
    ] {
        if let Ok(value) = value.parse() {
            headers.insert(name, value);
        }
    }
    response
}
