//! The JSON dialects. All but VS Code keep servers under `mcpServers`:
//!
//! - Claude Code: `.mcp.json` and `managed-mcp.json` (`mcpServers`),
//!   `~/.claude.json` (`mcpServers` for the user, `projects.<path>.mcpServers`
//!   for the local scope, `disabledMcpServers` and `disabledMcpjsonServers`
//!   switching servers off for that project), `managed-settings.json`
//!   (`allowedMcpServers`, `deniedMcpServers`). Entries: `type` (`stdio`,
//!   `http`, `sse`, `ws`), `command`, `args`, `env`, `url`, `headers`,
//!   `oauth` (`clientId`, `callbackPort`), `headersHelper` (a shell
//!   command printing a JSON object of headers, for `http`/`sse`); `timeout`
//!   in milliseconds.
//! - Claude Desktop: `command`, `args`, `env`.
//! - Cursor: `command`, `args`, `env`, `url`, `headers` (no `type`: a URL is
//!   Streamable HTTP falling back to SSE).
//! - VS Code: `servers` with `type` (`stdio`, `http` — Streamable falling
//!   back to SSE —, `sse`), `command`, `args`, `env`, `cwd`, `url`,
//!   `headers`; `inputs` (`promptString`: `id`, `description`, `password`,
//!   `default`) for `${input:ID}`. Comments and trailing commas allowed.
//! - Gemini CLI `settings.json`: `command`, `args`, `env`, `cwd`, `url`
//!   (SSE), `httpUrl` (Streamable HTTP), `headers`, `timeout` (ms),
//!   `includeTools`, `excludeTools`, `oauth` (`clientId`, `clientSecret`,
//!   `scopes`); `mcp.allowed` / `mcp.excluded` switch servers off.
//!
//! Every JSON dialect also takes `disabled: true` (or `enabled: false`),
//! which is how switchboard's edits switch a server off in these files.

use serde_json::{Map, Value};

use super::{Ctx, FileLoad, InputSpec, Obj, Unit, kind, rules};
use crate::config::diag::Diagnostic;
use crate::config::model::{
    Dialect, HeadersHelper, HttpKind, OAuthSettings, Scope, ServerConfig, ToolFilter,
    TransportConfig,
};

/// Parses JSON with comments (`//`, `/* */`) and trailing commas, which
/// VS Code and Gemini allow; they are blanked out in place, so the
/// positions of errors stay those of the file.
pub(crate) fn parse_jsonc(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(&strip_jsonc(text))
}

fn strip_jsonc(text: &str) -> String {
    // Comments first, so that a trailing comma followed by a comment is
    // seen as trailing.
    let mut out = text.as_bytes().to_vec();
    each_outside_strings(text.as_bytes(), |bytes, i| match bytes[i] {
        b'/' if bytes.get(i + 1) == Some(&b'/') => {
            let end = bytes[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(bytes.len(), |p| i + p);
            out[i..end].fill(b' ');
            end
        }
        b'/' if bytes.get(i + 1) == Some(&b'*') => {
            let end = text[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |e| i + 2 + e + 2);
            for byte in &mut out[i..end] {
                if *byte != b'\n' {
                    *byte = b' ';
                }
            }
            end
        }
        _ => i + 1,
    });
    let without_comments = out.clone();
    each_outside_strings(&without_comments, |bytes, i| {
        if bytes[i] == b',' {
            let next = bytes[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
            if matches!(next, Some(b'}' | b']')) {
                out[i] = b' ';
            }
        }
        i + 1
    });
    // Only ASCII bytes outside strings were replaced by spaces (a
    // comment's multi-byte characters are blanked whole).
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// Calls `visit(bytes, i)` at each byte outside a JSON string; `visit`
/// returns where to go on.
fn each_outside_strings(bytes: &[u8], mut visit: impl FnMut(&[u8], usize) -> usize) {
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            i = visit(bytes, i);
        }
    }
}

/// Where a JSON error is, 1-based. serde_json counts a newline as the first
/// character of the next line, at column 0 (a raw newline inside a string
/// fails there): such an error points at the end of the line it ends.
fn error_position(text: &str, e: &serde_json::Error) -> (usize, usize) {
    match (e.line(), e.column()) {
        (line, 0) if line > 1 => {
            let ended = text.lines().nth(line - 2).unwrap_or_default();
            (line - 1, ended.chars().count() + 1)
        }
        (line, column) => (line.max(1), column.max(1)),
    }
}

pub(super) fn parse(ctx: &Ctx<'_>, out: &mut FileLoad, projects: &[&std::path::Path]) {
    let root = match parse_jsonc(ctx.text) {
        Ok(v) => v,
        Err(e) => {
            let (line, column) = error_position(ctx.text, &e);
            let d = ctx.syntax_at(line, column, strip_position(&e));
            out.diagnostics.push(d);
            return;
        }
    };
    let Value::Object(root) = root else {
        out.diagnostics.push(
            Diagnostic::error(format!(
                "expected a JSON object at the top, found {}",
                kind(&root)
            ))
            .in_file(ctx.file)
            .at(1, 1),
        );
        return;
    };
    let (want, other) = match ctx.dialect {
        Dialect::VsCode => ("servers", "mcpServers"),
        _ => ("mcpServers", "servers"),
    };
    if !root.contains_key(want) && root.get(other).is_some_and(Value::is_object) {
        let shape = if other == "servers" {
            "VS Code's"
        } else {
            "Claude Code's"
        };
        out.diagnostics.push(ctx.file_error(
            other,
            format!(
                "servers are under `{other}` ({shape} shape) but {:?} reads `{want}`: no server of this file is loaded; rename the key to `{want}`",
                ctx.dialect
            ),
        ));
    }
    if let Some(servers) = root.get(want) {
        read_servers(ctx, out, want, servers, ctx.scope);
    }
    if ctx.dialect == Dialect::VsCode {
        read_inputs(ctx, out, &root);
    }
    if ctx.dialect == Dialect::ClaudeCode {
        read_claude_json_project(ctx, out, &root, projects);
        let allow = root.get("allowedMcpServers");
        let deny = root.get("deniedMcpServers");
        if allow.is_some() || deny.is_some() {
            let source = ctx.file.display().to_string();
            let allow = allow.map(|v| rules(ctx, "allowedMcpServers", v));
            let deny = deny.map(|v| rules(ctx, "deniedMcpServers", v));
            match (allow.transpose(), deny.transpose()) {
                (Ok(allow), Ok(deny)) => {
                    out.policy.merge(&source, allow, deny.unwrap_or_default());
                }
                (Err(e), _) | (_, Err(e)) => out.diagnostics.push(e),
            }
        }
    }
    if ctx.dialect == Dialect::Gemini {
        apply_gemini_lists(ctx, out, &root);
    }
}

fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

fn read_servers(ctx: &Ctx<'_>, out: &mut FileLoad, key: &str, servers: &Value, scope: Scope) {
    let Value::Object(servers) = servers else {
        out.diagnostics.push(ctx.file_error(
            key,
            format!(
                "expected a table of servers by name, found {}",
                kind(servers)
            ),
        ));
        return;
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
        match server(&ctx.obj(name, map), ctx, scope, &mut out.diagnostics) {
            Ok(Some(s)) => out.servers.push(s),
            Ok(None) => {}
            Err(d) => out.diagnostics.push(d),
        }
    }
}

fn server(
    o: &Obj<'_>,
    ctx: &Ctx<'_>,
    scope: Scope,
    diags: &mut Vec<Diagnostic>,
) -> Result<Option<ServerConfig>, Diagnostic> {
    let ty = o.str("type")?;
    let gemini_http = if ctx.dialect == Dialect::Gemini {
        o.str("httpUrl")?
    } else {
        None
    };
    let url = o.str("url")?;
    let transport = match (ty.as_deref(), o.str("command")?, gemini_http, url) {
        (Some("stdio") | None, Some(command), None, None) => TransportConfig::Stdio {
            command,
            args: o.strings("args")?.unwrap_or_default(),
            env: o.string_map("env")?,
            cwd: o.str("cwd")?.map(Into::into),
        },
        (Some("stdio"), None, _, _) => {
            return Err(o.err("command", "a stdio server needs `command`"));
        }
        (_, Some(_), _, Some(_)) | (_, Some(_), Some(_), _) => {
            return Err(o.err(
                "command",
                "both `command` and a URL are given; keep one (a local or a remote server)",
            ));
        }
        (_, None, Some(url), _) => TransportConfig::Http {
            url,
            headers: o.string_map("headers")?,
            kind: HttpKind::Streamable,
        },
        (ty, None, None, Some(url)) => {
            let headers = o.string_map("headers")?;
            let kind = match (ty, ctx.dialect) {
                (Some("ws"), _) => {
                    return Ok(Some(finish(
                        o,
                        ctx,
                        scope,
                        TransportConfig::WebSocket { url, headers },
                        diags,
                    )?));
                }
                (Some("sse"), _) => HttpKind::Sse,
                (None, Dialect::Gemini) => HttpKind::Sse,
                (Some("http" | "streamable-http" | "streamableHttp"), Dialect::VsCode) => {
                    HttpKind::Auto
                }
                (Some("http" | "streamable-http" | "streamableHttp"), _) => HttpKind::Streamable,
                (None, _) => HttpKind::Auto,
                (Some(other), _) => return Err(unsupported_type(o, other)),
            };
            TransportConfig::Http { url, headers, kind }
        }
        (Some(other), None, None, None)
            if !matches!(other, "stdio" | "http" | "sse" | "ws" | "streamable-http") =>
        {
            diags.push(
                ctx.entry_error(
                    o.server,
                    Some("type"),
                    format!("type `{other}` is not a kind of server switchboard runs; skipped"),
                )
                .severity_info(),
            );
            return Ok(None);
        }
        _ => {
            return Err(o.neither_command_nor_url());
        }
    };
    finish(o, ctx, scope, transport, diags).map(Some)
}

fn unsupported_type(o: &Obj<'_>, ty: &str) -> Diagnostic {
    o.err(
        "type",
        format!("unknown type `{ty}` for a URL; use `http`, `sse` or `ws`"),
    )
}

fn finish(
    o: &Obj<'_>,
    ctx: &Ctx<'_>,
    scope: Scope,
    transport: TransportConfig,
    diags: &mut Vec<Diagnostic>,
) -> Result<ServerConfig, Diagnostic> {
    let mut s = ServerConfig::new(o.server, transport, ctx.origin(scope));
    if o.bool("disabled")? == Some(true) || o.bool("enabled")? == Some(false) {
        s.enabled = false;
    }
    s.request_timeout = o.duration("timeout", Unit::Millis)?;
    s.tools = ToolFilter {
        include: o.strings("includeTools")?.unwrap_or_default(),
        exclude: o.strings("excludeTools")?.unwrap_or_default(),
    };
    if let Some(Value::Object(oauth)) = o.map.get("oauth") {
        let a = ctx.obj(o.server, oauth);
        if a.bool("enabled")? != Some(false) {
            let settings = OAuthSettings {
                client_id: a.str("clientId")?,
                client_secret: a.str("clientSecret")?,
                scopes: a.strings("scopes")?.unwrap_or_default(),
                callback_port: a.port("callbackPort")?,
                issuer: a.str("issuer")?,
            };
            s.oauth = Some(settings);
        }
    } else if o.has("oauth") {
        return Err(o.err("oauth", "expected a table"));
    }
    if ctx.dialect == Dialect::ClaudeCode
        && let Some(command) = o.str("headersHelper")?
    {
        if matches!(s.transport, TransportConfig::Http { .. }) {
            s.headers_helper = Some(HeadersHelper::new(command));
        } else {
            diags.push(
                ctx.entry_error(
                    o.server,
                    Some("headersHelper"),
                    "`headersHelper` gives HTTP headers; this server is not an `http` or `sse` \
                     one, so it is not run"
                        .into(),
                )
                .severity_warning(),
            );
        }
    }
    if o.has("envFile") {
        diags.push(
            ctx.entry_error(
                o.server,
                Some("envFile"),
                "`envFile` is not read by switchboard; copy the variables into `env`".into(),
            )
            .severity_warning(),
        );
    }
    Ok(s)
}

fn read_inputs(ctx: &Ctx<'_>, out: &mut FileLoad, root: &Map<String, Value>) {
    let Some(inputs) = root.get("inputs") else {
        return;
    };
    let Value::Array(inputs) = inputs else {
        out.diagnostics.push(ctx.file_error(
            "inputs",
            format!("expected an array, found {}", kind(inputs)),
        ));
        return;
    };
    for input in inputs {
        let Some(map) = input.as_object() else {
            out.diagnostics.push(ctx.file_error(
                "inputs",
                format!("each input is a table, found {}", kind(input)),
            ));
            continue;
        };
        let get = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_owned);
        let Some(id) = get("id") else {
            out.diagnostics
                .push(ctx.file_error("inputs", "an input has no `id`".into()));
            continue;
        };
        out.inputs.push(InputSpec {
            description: get("description").unwrap_or_else(|| id.clone()),
            id,
            password: map.get("password").and_then(Value::as_bool) == Some(true),
            default: get("default"),
        });
    }
}

fn read_claude_json_project(
    ctx: &Ctx<'_>,
    out: &mut FileLoad,
    root: &Map<String, Value>,
    candidates: &[&std::path::Path],
) {
    let Some(Value::Object(projects)) = root.get("projects") else {
        return;
    };
    // Claude Code keys a project by the directory it was started in: the
    // working directory's section, then the project root's (when they
    // differ); on a name in both, the first wins.
    let mut seen = Vec::new();
    for dir in candidates {
        let key = dir.to_string_lossy();
        if seen.contains(&key) {
            continue;
        }
        let Some(project) = projects.get(key.as_ref()).and_then(Value::as_object) else {
            continue;
        };
        seen.push(key);
        if let Some(servers) = project.get("mcpServers") {
            read_servers(ctx, out, "mcpServers", servers, Scope::Local);
        }
        for list in ["disabledMcpServers", "disabledMcpjsonServers"] {
            if let Some(Value::Array(names)) = project.get(list) {
                out.disable
                    .extend(names.iter().filter_map(Value::as_str).map(str::to_owned));
            }
        }
        if let Some(Value::Array(names)) = project.get("enabledMcpjsonServers") {
            out.enable
                .extend(names.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        if project.get("enableAllProjectMcpServers") == Some(&Value::Bool(true)) {
            out.enable_all = true;
        }
    }
}

fn apply_gemini_lists(ctx: &Ctx<'_>, out: &mut FileLoad, root: &Map<String, Value>) {
    let Some(Value::Object(mcp)) = root.get("mcp") else {
        return;
    };
    let names = |k: &str| -> Option<Vec<String>> {
        mcp.get(k).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
    };
    let allowed = names("allowed");
    let excluded = names("excluded").unwrap_or_default();
    for s in &mut out.servers {
        let off =
            excluded.contains(&s.name) || allowed.as_ref().is_some_and(|a| !a.contains(&s.name));
        if off && s.enabled {
            s.enabled = false;
            let why = if excluded.contains(&s.name) {
                "listed in `mcp.excluded`"
            } else {
                "not in `mcp.allowed`"
            };
            out.diagnostics.push(
                ctx.entry_error(&s.name, None, format!("{why}: loaded as disabled"))
                    .severity_info(),
            );
        }
    }
}

impl Diagnostic {
    pub(crate) fn severity_info(mut self) -> Self {
        self.severity = crate::config::diag::Severity::Info;
        self
    }

    pub(crate) fn severity_warning(mut self) -> Self {
        self.severity = crate::config::diag::Severity::Warning;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_are_blanked_in_place() {
        let text = "{\n  // a comment with \"quotes\"\n  \"a\": \"//not a comment\", /* x\n */ \"b\": [1,2,],\n}";
        let v = parse_jsonc(text).unwrap();
        assert_eq!(v["a"], "//not a comment");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
        assert_eq!(strip_jsonc(text).lines().count(), text.lines().count());
    }

    struct Rng(u64);

    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Writes `v` as JSON with comments, blank space and trailing commas
    /// scattered between tokens (strings hold comment-like text too).
    fn noisy(v: &Value, rng: &mut Rng, out: &mut String) {
        let noise = |rng: &mut Rng, out: &mut String| match rng.next(5) {
            0 => out.push_str(" // a comment, with \"quotes\" and /* */\n"),
            1 => out.push_str("/* block\n , } ] */"),
            2 => out.push_str("\n\t "),
            _ => {}
        };
        noise(rng, out);
        match v {
            Value::Array(items) => {
                out.push('[');
                for item in items {
                    noisy(item, rng, out);
                    out.push(',');
                }
                if (items.is_empty() || rng.next(2) == 0) && out.ends_with(',') {
                    out.pop();
                }
                noise(rng, out);
                out.push(']');
            }
            Value::Object(map) => {
                out.push('{');
                for (k, item) in map {
                    out.push_str(&serde_json::to_string(k).unwrap());
                    noise(rng, out);
                    out.push(':');
                    noisy(item, rng, out);
                    out.push(',');
                }
                if (map.is_empty() || rng.next(2) == 0) && out.ends_with(',') {
                    out.pop();
                }
                noise(rng, out);
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
        noise(rng, out);
    }

    fn random_value(rng: &mut Rng, depth: u32) -> Value {
        const STRINGS: [&str; 6] = ["//", "/*", "*/", "a,}", "\\", "\"q\" // x"];
        match rng.next(if depth == 0 { 3 } else { 5 }) {
            0 => Value::String(STRINGS[rng.next(6) as usize].to_owned()),
            1 => Value::from(rng.next(1000)),
            2 => Value::Bool(rng.next(2) == 0),
            3 => Value::Array(
                (0..rng.next(4))
                    .map(|_| random_value(rng, depth - 1))
                    .collect(),
            ),
            _ => Value::Object(
                (0..rng.next(4))
                    .map(|i| (format!("k{i}/*"), random_value(rng, depth - 1)))
                    .collect(),
            ),
        }
    }

    #[test]
    fn property_comments_and_trailing_commas_never_change_the_value_or_positions() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..500 {
            let value = random_value(&mut rng, 4);
            let mut text = String::new();
            noisy(&value, &mut rng, &mut text);
            let stripped = strip_jsonc(&text);
            assert_eq!(stripped.len(), text.len());
            let newlines = |t: &str| t.match_indices('\n').map(|(i, _)| i).collect::<Vec<_>>();
            assert_eq!(newlines(&stripped), newlines(&text), "{text}");
            assert_eq!(parse_jsonc(&text).unwrap(), value, "{text}");
        }
    }
}
