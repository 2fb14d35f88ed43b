//! goose `config.yaml`: `extensions.NAME` with `type` (`stdio`, `sse`,
//! `streamable_http`; `builtin`, `platform`, `frontend` and
//! `inline_python` are goose's own and skipped), `cmd`, `args`, `envs`,
//! `env_keys` (names passed through), `uri`, `headers`, `timeout`
//! (seconds, per tool call), `enabled`, `available_tools` (the tools
//! offered; empty means all).

use serde_json::Value;

use super::{Ctx, FileLoad, Obj, Unit, kind};
use crate::config::diag::Diagnostic;
use crate::config::model::{HttpKind, ServerConfig, ToolFilter, TransportConfig};

pub(super) fn parse(ctx: &Ctx<'_>, out: &mut FileLoad) {
    let root: Value = match serde_norway::from_str(ctx.text) {
        Ok(Value::Null) => return,
        Ok(v) => v,
        Err(e) => {
            let d = match e.location() {
                Some(at) => ctx.syntax_at(at.line(), at.column(), strip_position(&e)),
                None => ctx.syntax_at(1, 1, e),
            };
            out.diagnostics.push(d);
            return;
        }
    };
    let Some(extensions) = root.get("extensions") else {
        return;
    };
    let Value::Object(extensions) = extensions else {
        out.diagnostics.push(ctx.file_error(
            "extensions",
            format!(
                "expected a table of extensions by name, found {}",
                kind(extensions)
            ),
        ));
        return;
    };
    for (name, entry) in extensions {
        let Value::Object(map) = entry else {
            out.diagnostics.push(ctx.entry_error(
                name,
                None,
                format!("expected a table, found {}", kind(entry)),
            ));
            continue;
        };
        match server(&ctx.obj(name, map), ctx) {
            Ok(Some(s)) => out.servers.push(s),
            Ok(None) => out.diagnostics.push(
                ctx.entry_error(
                    name,
                    Some("type"),
                    "a goose built-in extension, not an MCP server switchboard runs; skipped"
                        .into(),
                )
                .severity_info(),
            ),
            Err(d) => out.diagnostics.push(d),
        }
    }
}

fn strip_position(e: &serde_norway::Error) -> String {
    let s = e.to_string();
    match s.find(" at line ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

fn server(o: &Obj<'_>, ctx: &Ctx<'_>) -> Result<Option<ServerConfig>, Diagnostic> {
    let ty = o.str("type")?;
    let transport = match ty.as_deref() {
        Some("stdio") | None if o.has("cmd") => {
            let mut env = o.string_map("envs")?;
            for var in o.strings("env_keys")?.unwrap_or_default() {
                env.entry(var.clone()).or_insert(format!("${{{var}}}"));
            }
            TransportConfig::Stdio {
                command: o.str("cmd")?.unwrap_or_default(),
                args: o.strings("args")?.unwrap_or_default(),
                env,
                cwd: None,
            }
        }
        Some("stdio") => return Err(o.err("cmd", "a stdio extension needs `cmd`")),
        Some(t @ ("sse" | "streamable_http")) => {
            let Some(url) = o.str("uri")? else {
                return Err(o.err("uri", format!("a `{t}` extension needs `uri`")));
            };
            TransportConfig::Http {
                url,
                headers: o.string_map("headers")?,
                kind: if t == "sse" {
                    HttpKind::Sse
                } else {
                    HttpKind::Streamable
                },
            }
        }
        Some("builtin" | "platform" | "frontend" | "inline_python") => return Ok(None),
        Some(other) => {
            return Err(o.err(
                "type",
                format!("unknown type `{other}`; goose's are stdio, sse, streamable_http"),
            ));
        }
        None => return Err(o.err("type", "no `type` (stdio, sse or streamable_http)")),
    };
    let mut s = ServerConfig::new(o.server, transport, ctx.origin(ctx.scope));
    s.enabled = o.bool("enabled")?.unwrap_or(true);
    s.request_timeout = o.duration("timeout", Unit::Secs)?;
    s.tools = ToolFilter {
        include: o.strings("available_tools")?.unwrap_or_default(),
        exclude: Vec::new(),
    };
    Ok(Some(s))
}
