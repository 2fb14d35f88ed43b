//! The console's JSON API over the hub: what the page shows and the calls
//! it makes. Peer text goes out as JSON strings; the page puts it in the
//! document as text, never as markup.

use bytes::Bytes;
use serde_json::{Map, Value, json};
use switchboard::RequestOptions;
use switchboard_hub::Hub;
use switchboard_hub::hub::audit::AuditKind;

use crate::failure::chain;
use switchboard_hub::config::LoadedConfig;
use tokio::sync::mpsc;

/// Every server the hub has: its state (and why, with the last lines it
/// wrote on stderr, when it is not ready), transport, era, protocol
/// version, tool count, and the file it is configured in.
pub(super) fn servers(
    hub: &Hub,
    loaded: &LoadedConfig,
    credentials: Option<&std::path::Path>,
    logins: &super::login::Logins,
) -> Value {
    let servers: Vec<Value> = hub
        .list()
        .into_iter()
        .map(|status| {
            let config = loaded.servers.iter().find(|s| s.name == status.name);
            // file:line, as `switchboard doctor` says where.
            let source =
                config.map(
                    |s| match crate::configure::entry_line(&s.origin.file, &s.name) {
                        Some(line) => format!("{}:{line}", s.origin.file.display()),
                        None => s.origin.file.display().to_string(),
                    },
                );
            let (reason, stderr) = crate::hub::reason(&status, config, credentials);
            // A project server waiting for approval: what it runs and
            // where each variable goes, as `switchboard approve` shows it.
            let pending = matches!(
                status.state,
                switchboard_hub::ServerState::NeedsApproval { .. }
            )
            .then(|| config.map(crate::approve::describe))
            .flatten();
            // An HTTP server may log in from the page.
            let remote = config.is_some_and(|c| {
                matches!(c.transport, switchboard_hub::TransportConfig::Http { .. })
            });
            json!({
                "name": status.name,
                "remote": remote,
                "login": logins.said(&status.name),
                "state": status.state.name(),
                "reason": reason,
                "stderr": stderr,
                "pending": pending,
                "transport": status.transport,
                "era": status.era.map(|e| e.to_string()),
                "protocolVersion": status.protocol_version,
                "tools": status.tools.len(),
                "source": source,
                "file": config.map(|s| s.origin.file.display().to_string()),
                "enabledInFile": config.is_none_or(|c| c.enabled),
            })
        })
        .collect();
    // Configured entries the hub does not run: left out (shadowed, a
    // duplicate, blocked by policy), with why.
    let mut servers = servers;
    for skipped in &loaded.skipped {
        if servers
            .iter()
            .any(|s| s["name"] == skipped.server.name.as_str())
        {
            continue;
        }
        servers.push(json!({
            "name": skipped.server.name,
            "state": "skipped",
            "reason": crate::configure::skip_reason(&skipped.reason, skipped.kept.as_deref(), Some(loaded)),
            "transport": match &skipped.server.transport {
                switchboard_hub::TransportConfig::Stdio { .. } => "stdio",
                switchboard_hub::TransportConfig::WebSocket { .. } => "websocket",
                _ => "http",
            },
            "tools": 0,
            "source": match crate::configure::entry_line(&skipped.server.origin.file, &skipped.server.name) {
                Some(line) => format!("{}:{line}", skipped.server.origin.file.display()),
                None => skipped.server.origin.file.display().to_string(),
            },
            "file": skipped.server.origin.file.display().to_string(),
            "skipped": true,
        }));
    }
    json!({ "servers": servers })
}

/// Every tool, with its hub-wide name, server and own name.
pub(super) fn tools(hub: &Hub) -> Value {
    let tools: Vec<Value> = hub
        .tools()
        .into_iter()
        .map(|tool| {
            let mut value = serde_json::to_value(&tool.tool).unwrap_or(Value::Null);
            value["tool"] = json!(tool.tool.name);
            value["name"] = json!(tool.name);
            value["server"] = json!(tool.server);
            value
        })
        .collect();
    json!({ "tools": tools })
}

/// Every server's resources and resource templates, each with its
/// server; and the servers whose listing failed, with why.
pub(super) async fn resources(hub: &Hub) -> Value {
    let (resources, templates) = tokio::join!(hub.resources(), hub.resource_templates());
    let tagged = |server: &str, item: Value| {
        let mut item = item;
        item["server"] = json!(server);
        item
    };
    let mut failed: Vec<Value> = Vec::new();
    for error in resources.failed.iter().chain(&templates.failed) {
        failed.push(json!({ "server": error.server(), "error": chain(error) }));
    }
    json!({
        "resources": resources.items.iter().map(|r| tagged(&r.server, to_json(&r.resource))).collect::<Vec<_>>(),
        "templates": templates.items.iter().map(|t| tagged(&t.server, to_json(&t.template))).collect::<Vec<_>>(),
        "failed": failed,
    })
}

/// Every server's prompts, each with its server.
pub(super) async fn prompts(hub: &Hub) -> Value {
    let listing = hub.prompts().await;
    let failed: Vec<Value> = listing
        .failed
        .iter()
        .map(|error| json!({ "server": error.server(), "error": chain(error) }))
        .collect();
    let prompts: Vec<Value> = listing
        .items
        .iter()
        .map(|p| {
            let mut item = to_json(&p.prompt);
            item["server"] = json!(p.server);
            item
        })
        .collect();
    json!({ "prompts": prompts, "failed": failed })
}

/// `{"server": "NAME", "uri": "…"}`: the resource read.
pub(super) async fn read(
    hub: &Hub,
    audit: Option<&super::audit::Audit>,
    body: &[u8],
) -> Result<Value, (u16, String)> {
    let request = request(body)?;
    let (server, uri) = (text(&request, "server")?, text(&request, "uri")?);
    let started = std::time::Instant::now();
    let result = hub
        .read_resource(server, uri)
        .await
        .map(|result| to_json(&result))
        .map_err(|e| (422, chain(&e)));
    audited(
        audit,
        AuditKind::ResourceRead,
        server,
        uri,
        None,
        &result,
        started,
    );
    result
}

/// A read or a prompt the page asked for, written to the audit log.
fn audited(
    audit: Option<&super::audit::Audit>,
    kind: AuditKind,
    server: &str,
    name: &str,
    arguments: Option<&Map<String, Value>>,
    result: &Result<Value, (u16, String)>,
    started: std::time::Instant,
) {
    let Some(audit) = audit else { return };
    let (outcome, message, bytes) = match result {
        Ok(value) => ("ok", None, serde_json::to_vec(value).map_or(0, |v| v.len())),
        Err((_, error)) => ("error", Some(error.as_str()), 0),
    };
    audit.record(
        kind,
        Some(server),
        name,
        arguments,
        outcome,
        message,
        started,
        bytes,
    );
}

/// `{"server": "NAME", "name": "PROMPT", "arguments": {"k": "v"}}`: the
/// prompt's messages.
pub(super) async fn prompt(
    hub: &Hub,
    audit: Option<&super::audit::Audit>,
    body: &[u8],
) -> Result<Value, (u16, String)> {
    let request = request(body)?;
    let (server, name) = (text(&request, "server")?, text(&request, "name")?);
    let arguments: std::collections::BTreeMap<String, String> = match request.get("arguments") {
        None | Some(Value::Null) => Default::default(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect(),
        Some(_) => return Err((400, "`arguments` must be an object".to_owned())),
    };
    let given: Map<String, Value> = arguments
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let started = std::time::Instant::now();
    let result = hub
        .get_prompt(server, name, Some(arguments))
        .await
        .map(|result| to_json(&result))
        .map_err(|e| (422, chain(&e)));
    audited(
        audit,
        AuditKind::PromptGet,
        server,
        name,
        Some(&given),
        &result,
        started,
    );
    result
}

pub(super) fn request(body: &[u8]) -> Result<Value, (u16, String)> {
    serde_json::from_slice(body).map_err(|e| (400, format!("the request is not JSON: {e}")))
}

pub(super) fn text<'a>(request: &'a Value, key: &str) -> Result<&'a str, (u16, String)> {
    request
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| (400, format!("no `{key}`")))
}

fn to_json(item: &impl serde::Serialize) -> Value {
    serde_json::to_value(item).unwrap_or(Value::Null)
}

/// `{"name": "SERVER__TOOL", "arguments": {…}}`: the tool called; what
/// it says as it runs, a JSON line each — `{"progress": {…}}`, then
/// `{"result": {…}}` or `{"error": "…"}`. Or the status and error to
/// answer at once.
pub(super) fn call(
    hub: &Hub,
    host: Option<&switchboard::Client>,
    audit: Option<&std::sync::Arc<super::audit::Audit>>,
    body: &[u8],
) -> Result<Lines, (u16, String)> {
    let request = request(body)?;
    let name = request
        .get("name")
        .and_then(Value::as_str)
        .ok_or((400, "no tool `name`".to_owned()))?
        .to_owned();
    let arguments: Option<Map<String, Value>> = match request.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map.clone()),
        Some(_) => return Err((400, "`arguments` must be an object".to_owned())),
    };
    let (tell, lines) = mpsc::unbounded_channel();
    let progress = tell.clone();
    let options = RequestOptions::default().on_progress(move |p| {
        let _ = progress.send(line(&json!({"progress": {
            "progress": p.progress, "total": p.total, "message": p.message,
        }})));
    });
    let audited = audit.map(|audit| {
        super::audit::Pending::new(
            audit.clone(),
            hub.tool_server(&name),
            &name,
            arguments.as_ref(),
        )
    });
    let hub = hub.clone();
    let host = host.cloned();
    let call = tokio::spawn(async move {
        let answer = match host {
            // In a gateway: as one of its hosts.
            Some(host) => {
                let params = switchboard::types::CallToolRequestParams {
                    name,
                    arguments,
                    ..Default::default()
                };
                match host.call_tool_with(&params, options).await {
                    Ok(result) => json!({ "result": result }),
                    Err(error) => json!({ "error": chain(&error) }),
                }
            }
            None => match hub.call_tool_with(&name, arguments, options).await {
                Ok(result) => json!({ "result": result }),
                Err(error) => json!({ "error": chain(&error) }),
            },
        };
        if let Some(audited) = audited {
            audited.finish(&answer);
        }
        let _ = tell.send(line(&answer));
    });
    Ok(Lines { lines, call })
}

fn line(value: &Value) -> Bytes {
    let mut text = value.to_string();
    text.push('\n');
    Bytes::from(text)
}

/// A call's answer as it comes (see [`call`]). Dropped before its end —
/// the page cancelled, and its connection closed — it drops the call,
/// which cancels it on its server (`notifications/cancelled`).
pub(super) struct Lines {
    lines: mpsc::UnboundedReceiver<Bytes>,
    call: tokio::task::JoinHandle<()>,
}

impl Drop for Lines {
    fn drop(&mut self) {
        self.call.abort();
    }
}

impl hyper::body::Body for Lines {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        self.lines
            .poll_recv(cx)
            .map(|line| line.map(|line| Ok(hyper::body::Frame::data(line))))
    }
}

/// `{"name": "NAME", "action": "restart" | "stop" | "start"}`: the
/// server restarted, stopped (disabled in this console's hub: its tools
/// leave the list; the configuration is not changed) or started again;
/// its state then.
pub(super) async fn server_action(hub: &Hub, body: &[u8]) -> Result<Value, (u16, String)> {
    let request = request(body)?;
    let (name, action) = (text(&request, "name")?, text(&request, "action")?);
    let state = match action {
        "restart" => hub.restart(name).await,
        "start" => hub.enable(name).await,
        "stop" => hub
            .disable(name)
            .await
            .map(|()| switchboard_hub::ServerState::Disabled),
        other => return Err((400, format!("no action `{other}`: restart, stop or start"))),
    }
    .map_err(|e| (422, chain(&e)))?;
    Ok(json!({ "name": name, "state": state.name() }))
}

/// `{"name": "NAME"}`: the project server approved and started; its
/// state.
pub(super) async fn approve(
    context: &crate::configure::Context,
    hub: &Hub,
    body: &[u8],
) -> Result<Value, (u16, String)> {
    let request = request(body)?;
    let name = request
        .get("name")
        .and_then(Value::as_str)
        .ok_or((400, "no server `name`".to_owned()))?;
    let state = crate::hub::approve_and_start(context, hub, name)
        .await
        .map_err(|e| (422, e))?;
    Ok(json!({ "name": name, "state": state.name() }))
}

/// `{"server": "NAME", "kind": "prompt" | "template", "name": "…",
/// "argument": "…", "value": "…", "context": {"other": "given"}}`: the
/// server's completions of that argument (`completion/complete`), as
/// `switchboard complete` asks for them.
pub(super) async fn complete(hub: &Hub, body: &[u8]) -> Result<Value, (u16, String)> {
    let request = request(body)?;
    let server = text(&request, "server")?;
    let params = crate::commands::act::completion(
        text(&request, "name")?,
        text(&request, "kind")? == "template",
        text(&request, "argument")?,
        request.get("value").and_then(Value::as_str).unwrap_or(""),
        request
            .get("context")
            .and_then(Value::as_object)
            .map(|given| {
                given
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default(),
    );
    let result = hub
        .complete(server, &params)
        .await
        .map_err(|e| (422, chain(&e)))?;
    Ok(to_json(&result.completion))
}

/// Every server's skills (the skills extension), each with its server
/// and hub-wide name; and the servers whose listing failed.
pub(super) async fn skills(hub: &Hub) -> Value {
    let listing = hub.skills().await;
    let failed: Vec<Value> = listing
        .failed
        .iter()
        .map(|error| json!({ "server": error.server(), "error": chain(error) }))
        .collect();
    let skills: Vec<Value> = listing
        .items
        .iter()
        .map(|skill| {
            let mut item = to_json(&skill.entry);
            item["server"] = json!(skill.server);
            item["wide"] = json!(skill.name);
            item["name"] = json!(skill.entry.name());
            item["description"] = json!(skill.entry.description());
            item
        })
        .collect();
    json!({ "skills": skills, "failed": failed })
}

/// `{"server": "NAME", "uri": "SKILL URI", "path": "FILE"?}`: the skill
/// loaded and verified against its listing (as `switchboard skill`
/// does): its frontmatter and text, its files; with `path`, that file,
/// read and verified too.
pub(super) async fn skill(hub: &Hub, body: &[u8]) -> Result<Value, (u16, String)> {
    let request = request(body)?;
    let (server, uri) = (text(&request, "server")?, text(&request, "uri")?);
    let path = request.get("path").and_then(Value::as_str);
    let entry = hub
        .skills()
        .await
        .items
        .into_iter()
        .find(|s| s.server == server && s.entry.uri == uri)
        .map(|s| s.entry)
        .ok_or_else(|| (404, format!("{server} lists no skill {uri}")))?;
    let (skill, files, contents) = crate::hub::load_for_showing(hub, server, &entry, path)
        .await
        .map_err(|e| (422, chain(&e)))?;
    let file = contents.map(|file| {
        let bytes = file.bytes();
        json!({
            "uri": file.uri,
            "mimeType": file.mime_type,
            "size": bytes.len(),
            "text": std::str::from_utf8(bytes).ok(),
        })
    });
    Ok(json!({
        "server": server,
        "uri": uri,
        "name": skill.name(),
        "description": skill.description(),
        "frontmatter": skill.frontmatter(),
        "markdown": skill.markdown(),
        "files": files,
        "file": file,
    }))
}

/// `{"server": "NAME", "uri": "…", "subscribe": true | false}`: the
/// resource subscribed to (its updates then show in the Activity tab) or
/// no more.
pub(super) async fn subscribe(hub: &Hub, body: &[u8]) -> Result<Value, (u16, String)> {
    let request = request(body)?;
    let (server, uri) = (text(&request, "server")?, text(&request, "uri")?);
    let on = request
        .get("subscribe")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let done = if on {
        hub.subscribe_resource(server, uri).await
    } else {
        hub.unsubscribe_resource(server, uri).await
    };
    done.map_err(|e| (422, chain(&e)))?;
    Ok(json!({ "server": server, "uri": uri, "subscribed": on }))
}

/// `{"server": "NAME", "taskId": "…", "action": "poll" | "cancel"}`: the
/// task asked for (`tasks/get`) or cancelled (`tasks/cancel`); the task
/// as the server answers (the Tasks view sees it go by as well).
pub(super) async fn task(hub: &Hub, body: &[u8]) -> Result<Value, (u16, String)> {
    let request = request(body)?;
    let (server, id) = (text(&request, "server")?, text(&request, "taskId")?);
    let client = hub.client(server).map_err(|e| (422, chain(&e)))?;
    let task = match text(&request, "action")? {
        "poll" => client.get_task(id).await.map(|task| to_json(&task)),
        "cancel" => client
            .cancel_task(id)
            .await
            .map(|task| task.map_or(json!({ "taskId": id }), |task| to_json(&task))),
        other => return Err((400, format!("no action `{other}`: poll or cancel"))),
    }
    .map_err(|e| (422, chain(&e)))?;
    Ok(task)
}
