//! switchboard's own TOML file (`switchboard.toml` in the project,
//! `switchboard.local.toml` beside it for what is not checked in,
//! `~/.config/switchboard/config.toml` for the user, `managed.toml` for an
//! administrator):
//!
//! ```toml
//! # A local server.
//! [servers.files]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"]
//! env = { LOG_LEVEL = "debug", API_KEY = "${FILES_API_KEY}" }
//! cwd = "${workspaceFolder}"          # optional
//! startup_timeout = "10s"             # "500ms", "30s", "2m"; a unit is required
//! request_timeout = "30s"
//! required = true                     # the hub fails to start without it
//!
//! # A remote server.
//! [servers.docs]
//! url = "https://mcp.example.com/mcp"
//! transport = "streamable-http"       # "http" (default: Streamable, then legacy SSE), "sse", "websocket"
//! headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
//! oauth = { client_id = "switchboard", client_secret = "${DOCS_SECRET}", scopes = ["read"], callback_port = 8123, issuer = "https://auth.example.com" }
//! # Headers from a command, run on each connection attempt: its stdout is a
//! # JSON object of string values (Claude Code's `headersHelper`).
//! headers_helper = "~/bin/docs-token --json"
//! headers_helper_timeout = "10s"      # the default
//!
//! # Configured but switched off, and only some tools when on.
//! [servers.legacy]
//! command = "uvx"
//! args = ["legacy-server"]
//! enabled = false
//! tools = { include = ["read_*"], exclude = ["delete_*"] }
//!
//! # Hub-wide names (tools, prompts, resource templates): "always"
//! # (server__name; the default with several servers), "never" (the
//! # server's own names, which win a collision; at most one such server),
//! # "on-collision" (own names unless another server has the same one;
//! # the gateway's default when it serves one server).
//! [servers.github]
//! url = "https://api.example.com/mcp"
//! prefix = "never"
//!
//! # How a server's sampling requests may be answered: only narrower than
//! # the user's `[sampling]` (any file may narrow).
//! [servers.notes]
//! command = "notes-server"
//! sampling = { allow = false }        # or { max_calls = 3, model = "claude-haiku-4-5" }
//!
//! # Where servers' sampling requests go (your own file only: a project's
//! # cannot say where your model requests go, nor with which key).
//! [sampling]
//! provider = "anthropic"              # "openai" (Responses), "openai-chat", "anthropic", "gemini"
//! model = "claude-sonnet-4-5"
//! models = ["claude-haiku-4-5"]       # what hints and servers' `model` may pick
//! base_url = "https://api.anthropic.com"   # optional; else ANTHROPIC_BASE_URL, else the public API
//! key_env = "ANTHROPIC_API_KEY"       # optional; the provider's usual variable
//! max_calls = 32                      # model calls in one run, all servers
//!
//! # Which servers may run (any file may narrow; deny wins).
//! [policy]
//! allow = [{ name = "files" }, { command = ["npx", "-y", "pkg"] }, { url = "https://*.example.com/*" }]
//! deny = [{ url = "http://*" }]
//!
//! # What may be called — by the CLI, the library's `Hub`, the agent and
//! # the gateway alike — by (server, tool): `SERVER/TOOL` globs, or globs
//! # over `SERVER__TOOL` (deny wins, then allow lists, then ask; any file
//! # may narrow).
//! [policy.tools]
//! deny = ["*/delete_*"]
//! ask = ["github/*"]
//! ```
//!
//! Values keep `${…}` references as written; see [`expand`](crate::config::expand).

use std::time::Duration;

use serde_json::{Map, Value};

use super::{Ctx, FileLoad, Obj, kind, rules};
use crate::config::diag::Diagnostic;
use crate::config::model::{
    HeadersHelper, HttpKind, OAuthSettings, Prefix, SamplingSettings, ServerConfig, ServerSampling,
    ToolFilter, TransportConfig,
};
use crate::config::policy::Rule;

/// Parses TOML into a JSON table, reporting a syntax error with its
/// position.
pub(super) fn toml_root(ctx: &Ctx<'_>, out: &mut FileLoad) -> Option<Map<String, Value>> {
    match ctx.text.parse::<toml_edit::DocumentMut>() {
        Ok(doc) => Some(table_to_json(doc.as_table())),
        Err(e) => {
            let offset = e.span().map_or(0, |s| s.start);
            out.diagnostics
                .push(ctx.syntax(offset, e.message().trim_end()));
            None
        }
    }
}

fn table_to_json(table: &toml_edit::Table) -> Map<String, Value> {
    table
        .iter()
        .filter_map(|(k, item)| item_to_json(item).map(|v| (k.to_owned(), v)))
        .collect()
}

fn item_to_json(item: &toml_edit::Item) -> Option<Value> {
    match item {
        toml_edit::Item::None => None,
        toml_edit::Item::Value(v) => Some(value_to_json(v)),
        toml_edit::Item::Table(t) => Some(Value::Object(table_to_json(t))),
        toml_edit::Item::ArrayOfTables(a) => Some(Value::Array(
            a.iter().map(|t| Value::Object(table_to_json(t))).collect(),
        )),
    }
}

fn value_to_json(v: &toml_edit::Value) -> Value {
    use toml_edit::Value as T;
    match v {
        T::String(s) => Value::String(s.value().clone()),
        T::Integer(i) => Value::from(*i.value()),
        T::Float(f) => serde_json::Number::from_f64(*f.value()).map_or(Value::Null, Value::Number),
        T::Boolean(b) => Value::Bool(*b.value()),
        T::Datetime(d) => Value::String(d.value().to_string()),
        T::Array(a) => Value::Array(a.iter().map(value_to_json).collect()),
        T::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_owned(), value_to_json(v)))
                .collect(),
        ),
    }
}

/// `[policy.tools]`: `allow`, `deny` and `ask`, each a list of (server,
/// tool) patterns ([`ToolPolicy`](crate::config::policy::ToolPolicy)).
fn tool_policy(ctx: &Ctx<'_>, tools: &Value, out: &mut FileLoad) {
    let Value::Object(tools) = tools else {
        out.diagnostics.push(ctx.file_error(
            "policy.tools",
            format!("expected a table, found {}", kind(tools)),
        ));
        return;
    };
    let source = ctx.file.display().to_string();
    for (key, value) in tools {
        let globs: Option<Vec<String>> = match value {
            Value::Array(items) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect(),
            _ => None,
        };
        let Some(globs) = globs else {
            out.diagnostics.push(ctx.file_error(
                &format!("policy.tools.{key}"),
                "expected a list of (server, tool) patterns, like [\"github/delete_*\"] or [\"github__delete_*\"]"
                    .to_owned(),
            ));
            continue;
        };
        let policy = &mut out.policy.tools;
        match key.as_str() {
            "allow" => policy.allow.push((source.clone(), globs)),
            "deny" => policy
                .deny
                .extend(globs.into_iter().map(|g| (source.clone(), g))),
            "ask" => policy
                .ask
                .extend(globs.into_iter().map(|g| (source.clone(), g))),
            other => out.diagnostics.push(ctx.file_error(
                &format!("policy.tools.{other}"),
                "unknown key: the tool policy has `allow`, `deny` and `ask`".to_owned(),
            )),
        }
    }
}

pub(super) fn parse(ctx: &Ctx<'_>, out: &mut FileLoad) {
    let Some(root) = toml_root(ctx, out) else {
        return;
    };
    if let Some(policy) = root.get("policy") {
        match policy {
            Value::Object(p) => {
                let allow = p.get("allow").map(|v| rules(ctx, "allow", v)).transpose();
                let deny = p.get("deny").map(|v| rules(ctx, "deny", v)).transpose();
                match (allow, deny) {
                    (Ok(allow), Ok(deny)) => out.policy.merge(
                        &ctx.file.display().to_string(),
                        allow,
                        deny.unwrap_or_default(),
                    ),
                    (Err(e), _) | (_, Err(e)) => out.diagnostics.push(e),
                }
                if let Some(tools) = p.get("tools") {
                    tool_policy(ctx, tools, out);
                }
            }
            other => out
                .diagnostics
                .push(ctx.file_error("policy", format!("expected a table, found {}", kind(other)))),
        }
    }
    if let Some(sampling) = root.get("sampling") {
        match sampling_settings(ctx, sampling) {
            Ok(settings) => out.sampling = Some(settings),
            Err(d) => out.diagnostics.push(d),
        }
    }
    let servers = match root.get("servers") {
        None => {
            for wrong in ["mcpServers", "mcp_servers"] {
                if root.contains_key(wrong) {
                    out.diagnostics.push(ctx.file_error(
                        wrong,
                        format!("switchboard reads `[servers.NAME]`, not `{wrong}`: no server of this file is loaded; rename the tables"),
                    ));
                }
            }
            return;
        }
        Some(Value::Object(s)) => s,
        Some(other) => {
            out.diagnostics.push(ctx.file_error(
                "servers",
                format!("expected tables `[servers.NAME]`, found {}", kind(other)),
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
        for key in map.keys().filter(|k| !KEYS.contains(&k.as_str())) {
            out.diagnostics.push(
                ctx.entry_error(
                    name,
                    Some(key),
                    format!(
                        "unknown key, ignored; a server's keys are {}",
                        KEYS.join(", ")
                    ),
                )
                .severity_warning(),
            );
        }
        match server(&ctx.obj(name, map), ctx) {
            Ok(s) => out.servers.push(s),
            Err(d) => out.diagnostics.push(d),
        }
    }
}

/// The keys of a server's table (a misspelt one is a warning: switchboard's
/// own file is checked strictly; other clients' files are not).
const KEYS: [&str; 17] = [
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "transport",
    "headers",
    "headers_helper",
    "headers_helper_timeout",
    "enabled",
    "required",
    "startup_timeout",
    "request_timeout",
    "tools",
    "prefix",
    "oauth",
    "sampling",
];

/// The providers `[sampling]` takes.
const PROVIDERS: [&str; 4] = ["openai", "openai-chat", "anthropic", "gemini"];

fn sampling_settings(ctx: &Ctx<'_>, value: &Value) -> Result<SamplingSettings, Diagnostic> {
    let Value::Object(map) = value else {
        return Err(ctx.file_error(
            "sampling",
            format!("expected a table, found {}", kind(value)),
        ));
    };
    for key in map.keys() {
        if ![
            "provider",
            "model",
            "models",
            "base_url",
            "key_env",
            "max_calls",
        ]
        .contains(&key.as_str())
        {
            return Err(ctx.file_error(
                &format!("sampling.{key}"),
                "unknown key: `[sampling]` has provider, model, models, base_url, key_env and max_calls".to_owned(),
            ));
        }
    }
    let o = ctx.obj("[sampling]", map);
    let provider = o.str("provider")?;
    if let Some(p) = provider.as_deref().filter(|p| !PROVIDERS.contains(p)) {
        return Err(o.err(
            "provider",
            format!(
                "unknown provider `{p}`; use one of {}",
                PROVIDERS.join(", ")
            ),
        ));
    }
    let key_env = o.str("key_env")?;
    if let Some(k) = key_env
        .as_deref()
        .filter(|k| k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    {
        return Err(o.err(
            "key_env",
            format!("`{k}` is not an environment variable's name"),
        ));
    }
    Ok(SamplingSettings {
        provider,
        model: o.str("model")?,
        models: o.strings("models")?.unwrap_or_default(),
        base_url: o.str("base_url")?,
        key_env,
        max_calls: o.count("max_calls")?,
        source: Some(ctx.file.to_path_buf()),
    })
}

fn server(o: &Obj<'_>, ctx: &Ctx<'_>) -> Result<ServerConfig, Diagnostic> {
    let transport_name = o.str("transport")?;
    let transport = match (o.str("command")?, o.str("url")?) {
        (Some(command), None) => {
            if let Some(t) = transport_name.as_deref().filter(|t| *t != "stdio") {
                return Err(o.err(
                    "transport",
                    format!("`{t}` needs `url`; a server with `command` is stdio"),
                ));
            }
            TransportConfig::Stdio {
                command,
                args: o.strings("args")?.unwrap_or_default(),
                env: o.string_map("env")?,
                cwd: o.str("cwd")?.map(Into::into),
            }
        }
        (None, Some(url)) => {
            let headers = o.string_map("headers")?;
            let ws = url.starts_with("ws://") || url.starts_with("wss://");
            match transport_name.as_deref() {
                Some("websocket") => TransportConfig::WebSocket { url, headers },
                None if ws => TransportConfig::WebSocket { url, headers },
                Some("http") | None => TransportConfig::Http {
                    url,
                    headers,
                    kind: HttpKind::Auto,
                },
                Some("streamable-http") => TransportConfig::Http {
                    url,
                    headers,
                    kind: HttpKind::Streamable,
                },
                Some("sse") => TransportConfig::Http {
                    url,
                    headers,
                    kind: HttpKind::Sse,
                },
                Some(other) => {
                    return Err(o.err(
                        "transport",
                        format!(
                            "unknown transport `{other}`; use \"http\", \"streamable-http\", \"sse\" or \"websocket\""
                        ),
                    ));
                }
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
    s.startup_timeout = duration(o, "startup_timeout")?;
    s.request_timeout = duration(o, "request_timeout")?;
    let helper_timeout = duration(o, "headers_helper_timeout")?;
    match o.str("headers_helper")? {
        Some(command) if matches!(s.transport, TransportConfig::Http { .. }) => {
            let mut helper = HeadersHelper::new(command);
            if let Some(timeout) = helper_timeout {
                helper = helper.timeout(timeout);
            }
            s.headers_helper = Some(helper);
        }
        Some(_) => {
            return Err(o.err(
                "headers_helper",
                "`headers_helper` gives HTTP headers: it needs an HTTP `url`",
            ));
        }
        None if helper_timeout.is_some() => {
            return Err(o.err(
                "headers_helper_timeout",
                "`headers_helper_timeout` without `headers_helper`",
            ));
        }
        None => {}
    }
    match o.map.get("tools") {
        None => {}
        Some(Value::Object(t)) => {
            let t = ctx.obj(o.server, t);
            s.tools = ToolFilter {
                include: t.strings("include")?.unwrap_or_default(),
                exclude: t.strings("exclude")?.unwrap_or_default(),
            };
        }
        Some(other) => {
            return Err(o.err(
                "tools",
                format!(
                    "expected a table with `include` and/or `exclude`, found {}",
                    kind(other)
                ),
            ));
        }
    }
    if let Some(prefix) = o.str("prefix")? {
        s.prefix = Some(Prefix::parse(&prefix).ok_or_else(|| {
            o.err(
                "prefix",
                format!(
                    "unknown prefix `{prefix}`; use \"always\" (server__name), \"never\" (the server's own names) or \"on-collision\""
                ),
            )
        })?);
    }
    match o.map.get("sampling") {
        None => {}
        Some(Value::Object(m)) => {
            let m = ctx.obj(o.server, m);
            for key in m.map.keys() {
                if !["allow", "model", "max_calls"].contains(&key.as_str()) {
                    return Err(o.err(
                        "sampling",
                        format!("unknown key `{key}`: a server's `sampling` has allow, model and max_calls"),
                    ));
                }
            }
            s.sampling = ServerSampling {
                allow: m.bool("allow")?,
                model: m.str("model")?,
                max_calls: m.count("max_calls")?,
            };
        }
        Some(other) => {
            return Err(o.err(
                "sampling",
                format!(
                    "expected a table (allow, model, max_calls), found {}",
                    kind(other)
                ),
            ));
        }
    }
    match o.map.get("oauth") {
        None => {}
        Some(Value::Object(a)) => {
            let a = ctx.obj(o.server, a);
            s.oauth = Some(OAuthSettings {
                client_id: a.str("client_id")?,
                client_secret: a.str("client_secret")?,
                scopes: a.strings("scopes")?.unwrap_or_default(),
                callback_port: a.port("callback_port")?,
                issuer: a.str("issuer")?,
            });
        }
        Some(other) => {
            return Err(o.err("oauth", format!("expected a table, found {}", kind(other))));
        }
    }
    Ok(s)
}

fn duration(o: &Obj<'_>, key: &str) -> Result<Option<Duration>, Diagnostic> {
    match o.map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => parse_duration(s).map(Some).ok_or_else(|| {
            o.err(
                key,
                format!(
                    "`{s}` is not a duration; write a number and a unit: \"500ms\", \"30s\", \"2m\""
                ),
            )
        }),
        Some(other) => Err(o.err(
            key,
            format!(
                "expected a duration with its unit (\"30s\"), found {}",
                kind(other)
            ),
        )),
    }
}

/// `"500ms"`, `"30s"`, `"1.5s"`, `"2m"`, `"1h"`.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = s.split_at(split);
    let n: f64 = number.parse().ok()?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    // Clamped like the other dialects' numbers (see `clamp_secs`).
    secs.is_finite().then(|| super::clamp_secs(secs))
}

/// Writes a duration the way [`parse_duration`] reads it.
pub(crate) fn format_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// A policy rule from `{name}`, `{command}`, `{url}` (switchboard) or
/// `{serverName}`, `{serverCommand}`, `{serverUrl}` (Claude Code).
pub(crate) fn rule_from_table(v: &Value) -> Option<Rule> {
    let o = v.as_object()?;
    if o.len() != 1 {
        return None;
    }
    let (k, v) = o.iter().next()?;
    match (k.as_str(), v) {
        ("name" | "serverName", Value::String(s)) => Some(Rule::Name(s.clone())),
        ("url" | "serverUrl", Value::String(s)) => Some(Rule::Url(s.clone())),
        ("command" | "serverCommand", Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|x| x.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(Rule::Command),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("30"), None);
        assert_eq!(parse_duration("30 parsecs"), None);
        assert_eq!(format_duration(Duration::from_secs(30)), "30s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    }
}
