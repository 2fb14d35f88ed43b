//! Codex `~/.codex/config.toml`: `[mcp_servers.NAME]` tables with
//! `command`, `args`, `env`, `env_vars` (names passed through from the
//! environment), `cwd`; or `url` (Streamable HTTP), `http_headers`,
//! `env_http_headers` (header → variable), `bearer_token_env_var`;
//! `startup_timeout_sec` (seconds, a float; the older `startup_timeout_ms`
//! too), `tool_timeout_sec`, `enabled`, `required`, `enabled_tools`,
//! `disabled_tools`, `scopes` (OAuth).
//!
//! Codex does not expand variables in its file; the variables it reads by
//! name are written here as `${VAR}` references, so that expansion gives
//! what Codex would send and a listing never shows their values.

use serde_json::Value;

use super::switchboard::toml_root;
use super::{Ctx, FileLoad, Obj, Unit, kind};
use crate::config::diag::Diagnostic;
use crate::config::model::{HttpKind, OAuthSettings, ServerConfig, ToolFilter, TransportConfig};

pub(super) fn parse(ctx: &Ctx<'_>, out: &mut FileLoad) {
    let Some(root) = toml_root(ctx, out) else {
        return;
    };
    // The projects the user told Codex to trust: only the user's own file
    // says so (a project's `.codex/config.toml` cannot trust itself).
    if ctx.scope == crate::config::model::Scope::User
        && let Some(Value::Object(projects)) = root.get("projects")
    {
        for (path, settings) in projects {
            if settings.get("trust_level").and_then(Value::as_str) == Some("trusted") {
                out.trusted_projects.push(path.into());
            }
        }
    }
    let servers = match root.get("mcp_servers") {
        None => {
            if root.contains_key("mcpServers") {
                out.diagnostics.push(ctx.file_error(
                    "mcpServers",
                    "Codex reads `[mcp_servers.NAME]`, not `mcpServers`: no server of this file is loaded; rename the tables".into(),
                ));
            }
            return;
        }
        Some(Value::Object(servers)) => servers,
        Some(other) => {
            out.diagnostics.push(ctx.file_error(
                "mcp_servers",
                format!(
                    "expected tables `[mcp_servers.NAME]`, found {}",
                    kind(other)
                ),
            ));
            return;
        }
    };
    for (name, entry) in servers {
        let Value::Object(map) = entry else {
            out.diagnostics.push(ctx.entry_error(
                name,
                None,
                format!("expected a table, found {}", kind(entry)),
            ));
            continue;
        };
        match server(&ctx.obj(name, map), ctx) {
            Ok(s) => out.servers.push(s),
            Err(d) => out.diagnostics.push(d),
        }
    }
}

fn server(o: &Obj<'_>, ctx: &Ctx<'_>) -> Result<ServerConfig, Diagnostic> {
    let transport = match (o.str("command")?, o.str("url")?) {
        (Some(command), None) => {
            let mut env = o.string_map("env")?;
            for var in o.strings("env_vars")?.unwrap_or_default() {
                env.entry(var.clone()).or_insert(format!("${{{var}}}"));
            }
            TransportConfig::Stdio {
                command,
                args: o.strings("args")?.unwrap_or_default(),
                env,
                cwd: o.str("cwd")?.map(Into::into),
            }
        }
        (None, Some(url)) => {
            let mut headers = o.string_map("http_headers")?;
            for (header, var) in o.string_map("env_http_headers")? {
                headers.insert(header, format!("${{{var}}}"));
            }
            if let Some(var) = o.str("bearer_token_env_var")? {
                headers.insert("Authorization".into(), format!("Bearer ${{{var}}}"));
            }
            TransportConfig::Http {
                url,
                headers,
                kind: HttpKind::Streamable,
            }
        }
        (Some(_), Some(_)) => {
            return Err(o.both_command_and_url());
        }
        (None, None) => {
            return Err(o.neither_command_nor_url());
        }
    };
    let mut s = ServerConfig::new(o.server, transport, ctx.origin(ctx.scope));
    s.enabled = o.bool("enabled")?.unwrap_or(true);
    s.required = o.bool("required")?.unwrap_or(false);
    s.startup_timeout = match o.duration("startup_timeout_sec", Unit::Secs)? {
        Some(d) => Some(d),
        None => o.duration("startup_timeout_ms", Unit::Millis)?,
    };
    s.request_timeout = o.duration("tool_timeout_sec", Unit::Secs)?;
    s.tools = ToolFilter {
        include: o.strings("enabled_tools")?.unwrap_or_default(),
        exclude: o.strings("disabled_tools")?.unwrap_or_default(),
    };
    if let Some(scopes) = o.strings("scopes")? {
        s.oauth = Some(OAuthSettings {
            scopes,
            ..OAuthSettings::default()
        });
    }
    Ok(s)
}
