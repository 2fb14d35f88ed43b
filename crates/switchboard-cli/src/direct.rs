//! A server given on the command line, after `--` or with `--url`:
//! connecting to it, answering what it asks (forms, sampling, roots) and
//! showing what it says meanwhile.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use switchboard::transport::Connector;
use switchboard::transport::http::{HttpConfig, HttpTransport};
use switchboard::transport::stdio::StdioConfig;
use switchboard::transport::ws::WebSocketConfig;
use switchboard::types::roots::Root;
use switchboard::{Client, EraMode, Roots};

use crate::cli::{EraArg, ServerArgs, TransportArg, seconds};
use crate::failure::Failure;
use crate::term::sanitize;
use crate::term::ui::Ui;
use crate::{lifecycle, login, sampling};

pub(crate) fn stdio_config(server: &ServerArgs) -> Result<StdioConfig, Failure> {
    let (program, rest) = server
        .command
        .split_first()
        .context("no server command given after `--` (or --url URL)")
        .map_err(Failure::usage)?;
    let mut config = StdioConfig::new(program)
        .args(rest.iter().cloned())
        .inherit_env(server.inherit_env);
    if let Some(bytes) = max_message_size(server) {
        config = config.max_message_size(bytes);
    }
    for pair in &server.env {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("--env {pair:?} is not KEY=VALUE"))
            .map_err(Failure::usage)?;
        config = config.env(key, value);
    }
    Ok(config)
}

/// `--max-message-size`, as the transports take it.
pub(crate) fn max_message_size(server: &ServerArgs) -> Option<usize> {
    server
        .max_message_size
        .map(|bytes| usize::try_from(bytes).unwrap_or(usize::MAX))
}

pub(crate) fn headers(server: &ServerArgs) -> Result<Vec<(&str, &str)>, Failure> {
    server.headers.iter().map(|h| parse_header(h)).collect()
}

/// One `--header 'Name: value'`, trimmed.
pub(crate) fn parse_header(header: &str) -> Result<(&str, &str), Failure> {
    header
        .split_once(':')
        .map(|(name, value)| (name.trim(), value.trim()))
        .with_context(|| format!("--header {header:?} is not 'Name: value'"))
        .map_err(Failure::usage)
}

/// The connector for `--url`: WebSocket for ws:// URLs or `--transport ws`,
/// HTTP otherwise.
pub(crate) fn url_connector(
    server: &ServerArgs,
    url: &str,
    credentials: Option<&std::path::Path>,
) -> Result<Arc<dyn Connector>, Failure> {
    let websocket = matches!(server.transport, TransportArg::Ws)
        || (matches!(server.transport, TransportArg::Auto)
            && (url.starts_with("ws://") || url.starts_with("wss://")));
    if websocket {
        let mut config = WebSocketConfig::new(url);
        if let Some(bytes) = max_message_size(server) {
            config = config.max_message_size(bytes);
        }
        for (name, value) in headers(server)? {
            config = config.header(name, value);
        }
        return Ok(Arc::new(config));
    }
    let mut config = HttpConfig::new(url).transport(match server.transport {
        TransportArg::Auto | TransportArg::Ws => HttpTransport::Auto,
        TransportArg::Http => HttpTransport::StreamableHttp,
        TransportArg::Sse => HttpTransport::Sse,
    });
    if let Some(bytes) = max_message_size(server) {
        config = config.max_body_size(bytes).max_event_size(bytes);
    }
    let headers = headers(server)?;
    // An Authorization header given by hand wins over stored logins.
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        && let Some(provider) = login::provider_for(url, credentials, None)
    {
        config = config.auth(provider);
    }
    for (name, value) in headers {
        config = config.header(name, value);
    }
    Ok(Arc::new(config))
}

/// Runs one request while showing what the server says meanwhile.
pub(crate) async fn with_events<T>(client: &Client, ui: &Ui, work: impl Future<Output = T>) -> T {
    let mut events = client.events();
    let mut work = std::pin::pin!(work);
    let out = loop {
        tokio::select! {
            biased;
            Some(event) = events.next() => ui.event(&event),
            out = &mut work => break out,
        }
    };
    // What arrived before the answer is shown before the result.
    loop {
        tokio::select! {
            biased;
            Some(event) = events.next() => ui.event(&event),
            () = std::future::ready(()) => break,
        }
    }
    ui.finish();
    out
}

/// `--root` paths as file:// roots, named after their last component.
pub(crate) fn roots(paths: &[PathBuf]) -> Result<Roots, Failure> {
    let mut roots = Vec::new();
    for path in paths {
        let absolute = std::fs::canonicalize(path)
            .with_context(|| format!("--root {}: not found", path.display()))
            .map_err(Failure::usage)?;
        let uri = url::Url::from_file_path(&absolute)
            .map_err(|()| anyhow::anyhow!("--root {}: not a local path", path.display()))
            .map_err(Failure::usage)?;
        roots.push(Root {
            uri: uri.to_string(),
            name: absolute
                .file_name()
                .map(|n| n.to_string_lossy().into_owned()),
            ..Default::default()
        });
    }
    Ok(Roots::new(roots))
}

/// The handlers that answer the server: forms and URLs by asking the
/// user, sampling through --sampling-url or the user's `[sampling]`
/// (`settings`), as the server's own `sampling = {…}` (`rules`) narrows
/// it, or declined; roots from --root.
pub(crate) fn answering(
    builder: switchboard::ClientBuilder,
    server: &ServerArgs,
    ui: &Arc<Ui>,
    roots: Option<&Roots>,
    settings: Option<&switchboard_hub::config::SamplingSettings>,
    rules: Option<&switchboard_hub::config::ServerSampling>,
) -> switchboard::ClientBuilder {
    let (endpoint, max_calls) = match (&server.sampling_url, &server.sampling_model, settings) {
        (Some(url), Some(model), _) => (
            Ok(sampling::Endpoint::new(
                url,
                model.clone(),
                server.sampling_key_env.clone(),
            )),
            server.sampling_max_calls,
        ),
        (_, _, Some(settings)) => (
            sampling::Endpoint::from_settings(settings),
            settings.max_calls.unwrap_or(server.sampling_max_calls),
        ),
        _ => (
            Err(
                "no model is configured; pass --sampling-url URL --sampling-model NAME (an \
                 OpenAI-compatible endpoint), or set `[sampling]` in your config file, to answer \
                 sampling requests"
                    .to_owned(),
            ),
            server.sampling_max_calls,
        ),
    };
    let mut builder = builder
        .elicitation(crate::term::ask::TerminalElicitation { ui: ui.clone() })
        .sampling(sampling::CliSampling {
            ui: ui.clone(),
            endpoint,
            server: rules.cloned().unwrap_or_default(),
            preapproved: server.yes,
            http: sampling::http_client(),
            max_calls,
        });
    if let Some(roots) = roots {
        builder = builder.roots(roots.clone());
    }
    if let Some(level) = server.log_level {
        builder = builder.log_level(level.into());
    }
    builder
}

/// What every connection of a command shares: the checked `--timeout`,
/// the terminal, the roots (`--root`s, else the working directory, or
/// none with `--no-roots`).
pub(crate) fn answer_setup(
    server: &ServerArgs,
) -> Result<(Duration, Arc<Ui>, Option<Roots>), Failure> {
    if !server.timeout.is_finite() || server.timeout <= 0.0 {
        return Err(Failure::usage(anyhow::anyhow!(
            "--timeout must be a positive number of seconds"
        )));
    }
    let roots = if server.no_roots {
        None
    } else if server.roots.is_empty() {
        Some(roots(&[PathBuf::from(".")])?)
    } else {
        Some(roots(&server.roots)?)
    };
    Ok((
        seconds("--timeout", server.timeout)?,
        Ui::new(server.json, server.no_input),
        roots,
    ))
}

/// `--server NAME` names a configured server: refused beside a server
/// command or `--url`.
pub(crate) fn no_configured_server(only: Option<&str>) -> Result<(), Failure> {
    if only.is_some() {
        return Err(Failure::usage(anyhow::anyhow!(
            "--server names a configured server; it cannot go with a server command or --url"
        )));
    }
    Ok(())
}

/// Connects to the server of `server`; the client is closed when the
/// command ends, whichever way it ends.
pub(crate) async fn connect(
    server: &ServerArgs,
    credentials: Option<&std::path::Path>,
    servers: &lifecycle::Servers,
) -> Result<(Client, Duration, Arc<Ui>), Failure> {
    let (timeout, ui, roots) = answer_setup(server)?;
    let mode = match server.era {
        EraArg::Auto => EraMode::Auto,
        EraArg::Modern => EraMode::Modern,
        EraArg::Legacy => EraMode::Legacy,
    };
    let started = Instant::now();
    let builder = Client::builder().era_mode(mode).request_timeout(timeout);
    let builder = answering(builder, server, &ui, roots.as_ref(), None, None);
    let (name, connecting) = match &server.url {
        Some(url) => (
            url.clone(),
            builder.connect_arc(url_connector(server, url, credentials)?),
        ),
        None => (
            server.command.join(" "),
            builder.connect_arc(Arc::new(stdio_config(server)?)),
        ),
    };
    let waiting_for = match mode {
        EraMode::Legacy => format!("waiting for {name} to answer initialize …"),
        _ => format!(
            "waiting for {name} to answer server/discover (a 2026-07-28 probe; older servers \
             may not answer it) …"
        ),
    };
    let client = say_if_slow(connecting, &ui, &waiting_for).await?;
    servers.client(&client);
    Ok((client, started.elapsed(), ui))
}

/// Awaits `work`, saying `what` on stderr once if it takes over a second.
pub(crate) async fn say_if_slow<T>(work: impl Future<Output = T>, ui: &Ui, what: &str) -> T {
    let mut work = std::pin::pin!(work);
    tokio::select! {
        out = &mut work => return out,
        () = tokio::time::sleep(Duration::from_secs(1)) => ui.notice(what),
    }
    work.await
}

/// `--server-logs`: what a closed client's server wrote to stderr.
pub(crate) fn show_stderr(client: &Client) {
    if let Some(stderr) = client.stderr().filter(|s| !s.is_empty()) {
        eprintln!("server stderr:");
        for line in stderr.lines() {
            eprintln!("  | {}", sanitize::line(line));
        }
    }
}
