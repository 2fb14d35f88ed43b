//! The configuration changed from the page: a server added (the fields of
//! `switchboard add`), enabled, disabled or removed, written to the files
//! as those commands write them (`configure`), then the running servers
//! brought in line with the files (`hub::reapply`). The trust rules are the
//! CLI's: a server added to the project's file is approved as typed (the
//! person adding it wrote it); a changed project entry needs approval again.

use serde_json::{Value, json};

use super::State;
use super::api::{request, text};
use crate::cli::{AddArgs, AddTransport, ScopeArg};
use crate::failure::Failure;

/// What a failed edit says: the error, its causes, and what to do.
fn said(failure: &Failure) -> (u16, String) {
    let mut text = format!("{:#}", failure.error);
    if let Some(hint) = &failure.hint {
        text += &format!(" ({hint})");
    }
    (422, text)
}

/// The strings of `request[key]`: an array of strings, or none.
fn strings(request: &Value, key: &str) -> Result<Vec<String>, (u16, String)> {
    match request.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| (400, format!("`{key}` must hold strings only")))
            })
            .collect(),
        Some(_) => Err((400, format!("`{key}` must be an array of strings"))),
    }
}

fn scope(request: &Value) -> Result<Option<ScopeArg>, (u16, String)> {
    Ok(match request.get("scope").and_then(Value::as_str) {
        None | Some("") => None,
        Some("local") => Some(ScopeArg::Local),
        Some("project") => Some(ScopeArg::Project),
        Some("user") => Some(ScopeArg::User),
        Some(other) => {
            return Err((400, format!("no scope `{other}`: local, project or user")));
        }
    })
}

/// `{"name", "scope", "url" | "command": [COMMAND, ARG…], "env": ["K=V"],
/// "headers": ["Name: value"], "transport": "http" | "sse" | "ws"}`: the
/// server written to the scope's file, as `switchboard add` writes it,
/// then started.
pub(super) async fn add(state: &State, body: &[u8]) -> Result<Value, (u16, String)> {
    let request = request(body)?;
    let url = match request.get("url").and_then(Value::as_str) {
        None | Some("") => None,
        Some(url) => Some(crate::cli::server_url(url).map_err(|e| (422, e))?),
    };
    let transport = match request.get("transport").and_then(Value::as_str) {
        None | Some("" | "auto") => None,
        Some("http") => Some(AddTransport::Http),
        Some("sse") => Some(AddTransport::Sse),
        Some("ws") => Some(AddTransport::Ws),
        Some(other) => {
            return Err((400, format!("no transport `{other}`: http, sse or ws")));
        }
    };
    let args = AddArgs {
        scope: scope(&request)?,
        env: strings(&request, "env")?,
        name: Some(text(&request, "name")?.trim().to_owned()),
        link: None,
        target: None,
        url,
        headers: strings(&request, "headers")?,
        transport,
        command: strings(&request, "command")?,
        json: true,
        from_registry: false,
        registry: None,
        version: None,
        package: None,
        remote: None,
        as_name: None,
        yes: false,
    };
    let context = &state.context;
    let (server, target) = crate::configure::added(context, &args).map_err(|e| said(&e))?;
    let written = crate::configure::write_added(context, &target, &server).map_err(|e| said(&e))?;
    state.refresh();
    Ok(json!({
        "added": server.name,
        "file": written.file.display().to_string(),
        "note": written.note,
        "alsoConfiguredIn": written.also_in,
        "gitIgnored": written.git_ignored,
    }))
}

/// `{"name", "action": "enable" | "disable" | "remove"}`: the change
/// written to the file the server is configured in (whichever client's),
/// then the servers brought in line.
pub(super) async fn change(state: &State, body: &[u8]) -> Result<Value, (u16, String)> {
    let request = request(body)?;
    let (name, action) = (text(&request, "name")?, text(&request, "action")?);
    let context = &state.context;
    let answer = match action {
        "enable" | "disable" => {
            let edited =
                crate::configure::enabled_in(context, name, action == "enable", None, true)
                    .map_err(|e| said(&e))?;
            json!({
                "name": name,
                "done": format!("{action}d"),
                "file": edited.file.display().to_string(),
                "note": edited.note,
            })
        }
        "remove" => {
            let (edited, now) =
                crate::configure::removed(context, name, None, true).map_err(|e| said(&e))?;
            json!({
                "name": name,
                "done": "removed",
                "file": edited.file.display().to_string(),
                "note": edited.note,
                "nowFrom": now,
            })
        }
        other => {
            return Err((
                400,
                format!("no action `{other}`: enable, disable or remove"),
            ));
        }
    };
    state.refresh();
    Ok(answer)
}
