//! The connection doctor: why a server is not ready, step by step, with
//! where it failed and what to do. The configuration's steps are
//! `switchboard doctor`'s own findings for the server (file:line, unset
//! variables, a command not found, trust); then, for a local server, its
//! command and its start (exit status, stderr); for a remote one, the name
//! resolved, a TCP connection, an HTTP(S) request without credentials (a
//! TLS failure says so here), and — when it refuses — the authorization
//! it names (`WWW-Authenticate`, its resource metadata); last, what the
//! hub's own connection made of it (`initialize`, the era).

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_hub::config::LoadedConfig;
use switchboard_hub::{Hub, ServerState, TransportConfig};

use crate::configure::Context;

/// How long one network step may take.
const STEP: Duration = Duration::from_secs(5);

/// One step: passed (`ok: true`), failed (`false`), or only said (`null`).
fn step(name: &str, ok: Option<bool>, detail: String, advice: Option<String>) -> Value {
    json!({ "step": name, "ok": ok, "detail": detail, "advice": advice })
}

/// `{"name": "NAME"}`: every step, in order; the first that failed is
/// where to look.
pub(super) async fn diagnose(
    context: &Context,
    hub: &Hub,
    loaded: &LoadedConfig,
    body: &[u8],
) -> Result<Value, (u16, String)> {
    let request = super::api::request(body)?;
    let name = request
        .get("name")
        .and_then(Value::as_str)
        .ok_or((400, "no server `name`".to_owned()))?;
    let config = loaded
        .servers
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| (404, format!("no server `{name}` is configured")))?;
    let mut steps = Vec::new();

    // The configuration, as `switchboard doctor` reads it.
    let findings = crate::commands::doctor::findings(context, loaded, name);
    if findings.is_empty() {
        steps.push(step(
            "configuration",
            Some(true),
            format!("no problems in {}", config.origin.file.display()),
            None,
        ));
    }
    for finding in &findings {
        let at = match (&finding["file"], &finding["line"]) {
            (Value::String(file), Value::Number(line)) => format!("{file}:{line}: "),
            (Value::String(file), _) => format!("{file}: "),
            _ => String::new(),
        };
        steps.push(step(
            "configuration",
            match finding["severity"].as_str() {
                Some("error") => Some(false),
                Some("warning") => None,
                _ => Some(true),
            },
            format!("{at}{}", finding["message"].as_str().unwrap_or_default()),
            None,
        ));
    }

    let status = hub.list().into_iter().find(|s| s.name == name);
    let expanded = loaded
        .expander(&context.locations)
        .expand(config)
        .map(|e| e.config)
        .ok();
    match expanded.as_ref().map(|c| &c.transport) {
        Some(TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
            ..
        }) => {
            let found = crate::commands::doctor::on_path(
                command,
                env.get("PATH").map(String::as_str),
                cwd.as_deref(),
            );
            steps.push(step(
                "command",
                Some(found),
                if found {
                    format!(
                        "`{command}` is found; it runs with {} argument(s)",
                        args.len()
                    )
                } else {
                    format!("`{command}` is not found")
                },
                (!found).then(|| "install it, or give its full path".to_owned()),
            ));
        }
        Some(TransportConfig::Http { url, .. }) => network(url, &mut steps).await,
        _ => {}
    }

    // What the hub's connection made of it.
    let (reason, stderr) = status
        .as_ref()
        .map(|s| crate::hub::reason(s, Some(config), None))
        .unwrap_or_default();
    let connection = match status.as_ref().map(|s| &s.state) {
        Some(ServerState::Ready) => {
            let status = status.as_ref().expect("a ready server has a status");
            step(
                "initialize",
                Some(true),
                format!(
                    "ready: {} era, protocol {}, {} tool(s)",
                    status.era.map(|e| e.to_string()).unwrap_or_default(),
                    status.protocol_version.clone().unwrap_or_default(),
                    status.tools.len()
                ),
                None,
            )
        }
        Some(ServerState::NeedsAuth { .. }) => step(
            "initialize",
            Some(false),
            "the server wants a login".to_owned(),
            Some("log in (the Log in button beside it)".to_owned()),
        ),
        Some(state) => step(
            "initialize",
            Some(false),
            [
                Some(state.name().to_owned()),
                reason,
                stderr.map(|s| format!("stderr: {s}")),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; "),
            Some(match state {
                ServerState::NeedsApproval { .. } => "approve it (the button beside it)".to_owned(),
                ServerState::Disabled => "start it (the Start button beside it)".to_owned(),
                _ => "fix what the steps above say, then Restart".to_owned(),
            }),
        ),
        None => step(
            "initialize",
            None,
            "not in this console's hub".to_owned(),
            None,
        ),
    };
    steps.push(connection);
    Ok(json!({ "server": name, "steps": steps }))
}

/// The network steps to `url`: name, TCP, HTTP(S), authorization.
async fn network(url: &str, steps: &mut Vec<Value>) {
    let Ok(parsed) = url::Url::parse(url) else {
        steps.push(step(
            "URL",
            Some(false),
            format!("{url:?} is not a URL"),
            None,
        ));
        return;
    };
    let host = parsed.host_str().unwrap_or_default().to_owned();
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addresses = match tokio::time::timeout(
        STEP,
        tokio::net::lookup_host((host.trim_matches(['[', ']']), port)),
    )
    .await
    {
        Ok(Ok(found)) => found.collect::<Vec<_>>(),
        Ok(Err(error)) => {
            steps.push(step(
                "DNS",
                Some(false),
                format!("{host}: {error}"),
                Some("check the host name in the URL, and this machine's DNS".to_owned()),
            ));
            return;
        }
        Err(_) => {
            steps.push(step(
                "DNS",
                Some(false),
                format!("{host}: no answer in {} s", STEP.as_secs()),
                None,
            ));
            return;
        }
    };
    let Some(first) = addresses.first().copied() else {
        steps.push(step(
            "DNS",
            Some(false),
            format!("{host}: no address"),
            None,
        ));
        return;
    };
    steps.push(step(
        "DNS",
        Some(true),
        format!(
            "{host} is {}",
            addresses
                .iter()
                .map(|a| a.ip().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None,
    ));
    match tokio::time::timeout(STEP, tokio::net::TcpStream::connect(first)).await {
        Ok(Ok(_)) => steps.push(step(
            "TCP",
            Some(true),
            format!("connected to {first}"),
            None,
        )),
        Ok(Err(error)) => {
            steps.push(step(
                "TCP",
                Some(false),
                format!("{first}: {error}"),
                Some("is the server running, and listening on that port?".to_owned()),
            ));
            return;
        }
        Err(_) => {
            steps.push(step(
                "TCP",
                Some(false),
                format!("{first}: no answer in {} s", STEP.as_secs()),
                Some("a firewall, or a proxy this machine needs".to_owned()),
            ));
            return;
        }
    }
    let client = crate::login::probe_client(STEP);
    let Some(client) = client else {
        steps.push(step("HTTP", None, "no HTTP client here".to_owned(), None));
        return;
    };
    let scheme = parsed.scheme().to_uppercase();
    let response = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .send()
        .await;
    let response = match response {
        Ok(response) => response,
        Err(error) => {
            let detail = crate::failure::chain(&error);
            let tls = parsed.scheme() == "https"
                && (detail.contains("certificate")
                    || detail.contains("tls")
                    || detail.contains("TLS"));
            steps.push(step(
                if tls { "TLS" } else { &scheme },
                Some(false),
                detail,
                tls.then(|| {
                    "the server's certificate is not trusted here (self-signed, expired, or for \
                     another name)"
                        .to_owned()
                }),
            ));
            return;
        }
    };
    let code = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (ok, advice) = match code {
        // It answers (a session-era server refuses a ping without a
        // session: 400; one that wants a login: 401, 403).
        200..=299 | 400 | 401 | 403 => (Some(true), None),
        301..=308 => (
            Some(false),
            Some(format!(
                "it redirects to {}: configure that URL",
                response
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("another address")
            )),
        ),
        404 | 405 => (
            Some(false),
            Some("the URL may not be the MCP endpoint (often it ends in /mcp)".to_owned()),
        ),
        _ => (Some(false), Some("the server says it failed".to_owned())),
    };
    steps.push(step(
        &scheme,
        ok,
        format!("POST {url} answered {code}"),
        advice,
    ));
    if let Some(challenge) = challenge.filter(|_| matches!(code, 401 | 403)) {
        let metadata = challenge
            .split([',', ' '])
            .find_map(|part| part.trim().strip_prefix("resource_metadata="))
            .map(|m| m.trim_matches('"').to_owned());
        let mut detail = format!("it asks for authorization: {challenge}");
        if let Some(metadata) = &metadata
            && let Ok(answer) = client.get(metadata).send().await
            && let Ok(document) = answer.json::<Value>().await
        {
            let servers = document["authorization_servers"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            detail = format!("it asks for authorization; its authorization server: {servers}");
        }
        steps.push(step(
            "authorization",
            None,
            detail,
            Some("log in (the Log in button beside it)".to_owned()),
        ));
    }
}
