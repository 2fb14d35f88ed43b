//! Human output (tables, content) and `--json` documents.
//!
//! Rendering goes through each value's JSON form, so fields the types add
//! later show up without touching this file.

use std::io::IsTerminal as _;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;
use serde_json::{Value, json};
use switchboard::Client;
use switchboard::types::apps::{APP_MIME_TYPE, ToolUi, Visibility, is_app_mime_type, is_ui_uri};

use crate::term::sanitize;

pub(crate) fn print_json(value: &Value) {
    println!(
        "{}",
        sanitize::json(serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()))
    );
}

/// `--raw`: a result's text is printed byte for byte (the one exception to
/// escaping what a server wrote).
static RAW: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Prints results' text unescaped from now on (`--raw`).
pub(crate) fn set_raw(raw: bool) {
    RAW.store(raw, std::sync::atomic::Ordering::Relaxed);
}

/// A result's text (or resource body) for stdout: escaped unless `--raw`.
fn body(text: &str) -> std::borrow::Cow<'_, str> {
    if RAW.load(std::sync::atomic::Ordering::Relaxed) {
        std::borrow::Cow::Borrowed(text)
    } else {
        sanitize::term(text)
    }
}

fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

pub(crate) fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

pub(crate) fn info_json(client: &Client, connect_time: Duration) -> Value {
    let session = client.session();
    json!({
        "server": client.server_name(),
        "transport": session.transport,
        "era": session.era,
        "protocolVersion": session.protocol_version,
        "serverInfo": session.server_info,
        "capabilities": session.capabilities,
        "instructions": session.instructions,
        "respawned": session.respawned,
        "connectMs": connect_time.as_secs_f64() * 1000.0,
        "apps": apps(client).iter().map(|(name, ui)| json!({
            "tool": name,
            "resourceUri": ui.resource_uri,
            "visibility": ui.visibility(),
        })).collect::<Vec<_>>(),
    })
}

/// The tools with an app (MCP Apps) among the client's last listed tools,
/// with their `_meta.ui`.
fn apps(client: &Client) -> Vec<(String, ToolUi)> {
    client
        .tools()
        .iter()
        .flat_map(|tools| tools.iter())
        .filter_map(|tool| Some((tool.name.clone(), tool.ui()?)))
        .filter(|(_, ui)| ui.resource_uri.is_some())
        .collect()
}

/// Who may call a tool with an app, for a table: "model, app", "app only".
fn audience(ui: &ToolUi) -> String {
    if ui.is_app_only() && ui.visibility() == [Visibility::App] {
        return "app only".to_owned();
    }
    let names: Vec<String> = ui
        .visibility()
        .iter()
        .map(|v| sanitize::line(v.as_str()).into_owned())
        .collect();
    if names.is_empty() {
        "nobody".to_owned()
    } else {
        names.join(", ")
    }
}

/// A tool's tag in `tools`: `[app]` for a tool with an app, `[app only]`
/// for one only its app may call (hidden from the model).
fn app_tag(tool: &Value) -> Option<&'static str> {
    let ui = ToolUi::from_meta(tool.get("_meta")?.as_object()?)?;
    if ui.is_app_only() {
        Some("[app only]")
    } else if ui.resource_uri.is_some() {
        Some("[app]")
    } else {
        None
    }
}

/// The width tables get on a terminal that reports none (0 columns, as
/// some CI terminals and serial consoles do).
const DEFAULT_WIDTH: u16 = 100;

/// A table for stdout: box drawing fitted to the width on a terminal;
/// plain text in aligned columns when stdout is a pipe or a file, so that
/// `grep`, `awk` and `cut` read it.
pub(crate) fn table(header: &[&str]) -> Table {
    let mut table = bare_table();
    table.set_header(header.iter().copied());
    table
}

/// A table of KEY, VALUE rows: [`table`] without a header row.
pub(crate) fn pairs_table() -> Table {
    bare_table()
}

/// A path for a table cell: relative to the working directory when inside
/// it (`./x`), under the home directory as `~/x`, else as it is.
pub(crate) fn short_path(path: &str) -> String {
    let path_buf = std::path::Path::new(path);
    if let Ok(cwd) = std::env::current_dir()
        && let Ok(rest) = path_buf.strip_prefix(&cwd)
    {
        return format!("./{}", rest.display());
    }
    if let Some(home) = std::env::var_os("HOME")
        && let Ok(rest) = path_buf.strip_prefix(std::path::Path::new(&home))
    {
        return format!("~/{}", rest.display());
    }
    path.to_owned()
}

/// The table every other is: box drawing on a terminal, plain otherwise.
fn bare_table() -> Table {
    use std::io::IsTerminal as _;
    let mut table = Table::new();
    if std::io::stdout().is_terminal() {
        let width = match crossterm::terminal::size() {
            Ok((columns, _)) if columns > 0 => columns,
            _ => DEFAULT_WIDTH,
        };
        table
            .load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(width);
    } else {
        table
            .load_preset(comfy_table::presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled);
    }
    table
}

/// A string field a server wrote, escaped for one line of a table.
fn text(value: &Value, key: &str) -> String {
    sanitize::line(value.get(key).and_then(Value::as_str).unwrap_or("")).into_owned()
}

/// The first line of a description, shortened for a table cell.
pub(crate) fn short(description: &str, limit: usize) -> String {
    let line = description.lines().next().unwrap_or("");
    let line = &*sanitize::line(line);
    if line.chars().count() > limit {
        let cut: String = line.chars().take(limit.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

pub(crate) fn print_info(client: &Client, connect_time: Duration) {
    print_session(client, Some(connect_time), &[]);
}

/// The session's table, after the rows `first`.
fn print_session(client: &Client, connect_time: Option<Duration>, first: &[(&str, String)]) {
    let session = client.session();
    let mut table = pairs_table();
    for (key, value) in first {
        table.add_row(vec![(*key).to_owned(), value.clone()]);
    }
    table.add_row(vec![
        "server".to_owned(),
        sanitize::line(client.server_name()).into_owned(),
    ]);
    if let Some(info) = &session.server_info {
        let info = to_json(info);
        table.add_row(vec![
            "server info".to_owned(),
            format!("{} {}", text(&info, "name"), text(&info, "version")),
        ]);
    }
    table.add_row(vec!["transport".to_owned(), session.transport.to_owned()]);
    table.add_row(vec!["era".to_owned(), session.era.to_string()]);
    table.add_row(vec![
        "protocol version".to_owned(),
        session.protocol_version.to_string(),
    ]);
    let capabilities = to_json(&session.capabilities);
    let names: Vec<&str> = capabilities
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    table.add_row(vec!["capabilities".to_owned(), names.join(", ")]);
    let apps = apps(client);
    if !apps.is_empty() {
        let lines: Vec<String> = apps
            .iter()
            .map(|(name, ui)| {
                format!(
                    "{}: {} ({})",
                    sanitize::line(name),
                    sanitize::line(ui.resource_uri.as_deref().unwrap_or_default()),
                    audience(ui)
                )
            })
            .collect();
        table.add_row(vec!["apps".to_owned(), lines.join("\n")]);
    }
    if session.respawned {
        table.add_row(vec![
            "note".to_owned(),
            "the server exited when probed with server/discover; restarted with initialize"
                .to_owned(),
        ]);
    }
    if let Some(connect_time) = connect_time {
        table.add_row(vec!["connect time".to_owned(), millis(connect_time)]);
    }
    if let Some(instructions) = &session.instructions {
        table.add_row(vec!["instructions".to_owned(), short(instructions, 200)]);
    }
    println!("{table}");
}

pub(crate) fn print_tools<T: Serialize>(tools: &[T]) {
    let mut table = table(&["tool", "description", "arguments"]);
    for tool in tools {
        let tool = to_json(tool);
        let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let arguments: Vec<String> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .map(|(name, property)| {
                        let kind = property
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("any");
                        let mark = if required.contains(&name.as_str()) {
                            ""
                        } else {
                            "?"
                        };
                        format!("{}{mark}: {}", sanitize::line(name), sanitize::line(kind))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let name = match app_tag(&tool) {
            Some(tag) => format!("{} {tag}", text(&tool, "name")),
            None => text(&tool, "name"),
        };
        table.add_row(vec![
            name,
            short(&text(&tool, "description"), 60),
            arguments.join(", "),
        ]);
    }
    // A tool's name is what is typed back: never broken across lines
    // (the description wraps instead).
    if let Some(column) = table.column_mut(0) {
        column.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
    }
    println!("{table}");
    println!("{}", count(tools.len(), "tool"));
}

/// `1 tool`, `2 tools`: a number with its noun (a plain `s` plural).
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Whether the items came from configured servers (each with a `server`
/// field): their tables then start with a server column.
fn with_servers(items: &[Value]) -> bool {
    items.iter().any(|item| item.get("server").is_some())
}

/// A row, behind the item's server when the table has a server column.
fn row(servers: bool, item: &Value, cells: Vec<String>) -> Vec<String> {
    if servers {
        std::iter::once(text(item, "server")).chain(cells).collect()
    } else {
        cells
    }
}

fn headers<'a>(servers: bool, columns: &[&'a str]) -> Vec<&'a str> {
    let server: &[&str] = if servers { &["server"] } else { &[] };
    server.iter().chain(columns).copied().collect()
}

pub(crate) fn print_resources<R: Serialize, T: Serialize>(resources: &[R], templates: &[T]) {
    let resources: Vec<Value> = resources.iter().map(to_json).collect();
    let templates: Vec<Value> = templates.iter().map(to_json).collect();
    let servers = with_servers(&resources) || with_servers(&templates);
    let mut table = table(&headers(servers, &["uri", "name", "type", "description"]));
    for resource in &resources {
        table.add_row(row(
            servers,
            resource,
            vec![
                text(resource, "uri"),
                text(resource, "name"),
                text(resource, "mimeType"),
                short(&text(resource, "description"), 50),
            ],
        ));
    }
    for template in &templates {
        table.add_row(row(
            servers,
            template,
            vec![
                text(template, "uriTemplate"),
                text(template, "name"),
                format!("template {}", text(template, "mimeType"))
                    .trim()
                    .to_owned(),
                short(&text(template, "description"), 50),
            ],
        ));
    }
    println!("{table}");
    println!(
        "{} resources, {} templates",
        resources.len(),
        templates.len()
    );
}

pub(crate) fn print_prompts<P: Serialize>(prompts: &[P]) {
    let prompts: Vec<Value> = prompts.iter().map(to_json).collect();
    let servers = with_servers(&prompts);
    let mut table = table(&headers(servers, &["prompt", "description", "arguments"]));
    for prompt in &prompts {
        let arguments: Vec<String> = prompt
            .get("arguments")
            .and_then(Value::as_array)
            .map(|arguments| {
                arguments
                    .iter()
                    .map(|a| {
                        let required = a.get("required").and_then(Value::as_bool) == Some(true);
                        format!("{}{}", text(a, "name"), if required { "" } else { "?" })
                    })
                    .collect()
            })
            .unwrap_or_default();
        table.add_row(row(
            servers,
            prompt,
            vec![
                text(prompt, "name"),
                short(&text(prompt, "description"), 60),
                arguments.join(", "),
            ],
        ));
    }
    println!("{table}");
    println!("{} prompts", prompts.len());
}

/// `skills`: one row per skill (its server first when several servers
/// answered), with its description and how many files it has.
pub(crate) fn print_skills<S: Serialize>(skills: &[S]) {
    let skills: Vec<Value> = skills.iter().map(to_json).collect();
    let skills = &skills[..];
    let servers = with_servers(skills);
    let mut table = table(&headers(servers, &["skill", "description", "files"]));
    for skill in skills {
        let frontmatter = skill.get("frontmatter").cloned().unwrap_or(Value::Null);
        let files = match skill.get("resources") {
            Some(Value::Array(files)) => files.len().to_string(),
            Some(Value::String(word)) => sanitize::line(word).into_owned(),
            _ => "?".into(),
        };
        table.add_row(row(
            servers,
            skill,
            vec![
                text(&frontmatter, "name"),
                short(&text(&frontmatter, "description"), 60),
                files,
            ],
        ));
    }
    println!("{table}");
    println!(
        "{} skills (`switchboard skill NAME` loads one and shows it)",
        skills.len()
    );
}

/// `skill NAME`: the skill, loaded and verified — its frontmatter, its
/// files (`files`: their URIs, a `dynamic` skill's as its directory
/// listed them), then its instructions; or, with `--file`, that file.
/// `uri`: the skill's URI to show, when not the one it was loaded from
/// (its server's own, for one loaded through a gateway).
pub(crate) fn print_skill(
    server: Option<&str>,
    skill: &switchboard::Skill,
    uri: Option<&str>,
    files: &[String],
    file: Option<&switchboard::SkillFileContents>,
    json: bool,
) {
    let entry = skill.entry();
    if json {
        let mut value = json!({
            "skill": entry,
            "instructions": skill.instructions(),
            "files": files,
        });
        if let Some(server) = server {
            value["server"] = json!(server);
        }
        if let Some(file) = file {
            value["file"] = match file.text() {
                Some(text) => {
                    json!({"uri": file.uri, "mimeType": file.mime_type, "text": text, "verified": file.verified()})
                }
                None => {
                    use base64::Engine as _;
                    json!({"uri": file.uri, "mimeType": file.mime_type, "blob": base64::engine::general_purpose::STANDARD.encode(file.bytes()), "verified": file.verified()})
                }
            };
        }
        print_json(&value);
        return;
    }
    if let Some(file) = file {
        let kind = file.mime_type.as_deref().unwrap_or("");
        eprintln!("── {} {}", sanitize::line(&file.uri), sanitize::line(kind));
        match file.text() {
            Some(text) => println!("{}", body(text)),
            None => println!(
                "[binary: {} bytes; --json gives it as base64]",
                file.bytes().len()
            ),
        }
        return;
    }
    let mut pairs = pairs_table();
    pairs.add_row(vec![
        "skill".to_owned(),
        sanitize::line(skill.name()).into_owned(),
    ]);
    if let Some(server) = server {
        pairs.add_row(vec![
            "server".to_owned(),
            sanitize::line(server).into_owned(),
        ]);
    }
    pairs.add_row(vec![
        "uri".to_owned(),
        sanitize::line(uri.unwrap_or(&entry.uri)).into_owned(),
    ]);
    pairs.add_row(vec![
        "verified".to_owned(),
        match entry.resources {
            switchboard::types::SkillFiles::Listed(_) => {
                "size, sha256 and frontmatter match the listing"
            }
            switchboard::types::SkillFiles::Dynamic => {
                "frontmatter matches the listing (files are dynamic: no digests)"
            }
        }
        .to_owned(),
    ]);
    for (key, value) in skill.frontmatter() {
        if key == "name" {
            continue;
        }
        let value = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        pairs.add_row(vec![sanitize::line(key).into_owned(), short(&value, 200)]);
    }
    let path_of = |uri: &'_ str| -> String {
        let path = entry
            .directory()
            .and_then(|d| uri.strip_prefix(d))
            .map_or(uri, |p| p.trim_start_matches('/'));
        sanitize::line(path).into_owned()
    };
    let files: Vec<String> = match entry.resources {
        switchboard::types::SkillFiles::Listed(_) => skill
            .files()
            .iter()
            .map(|f| format!("{} ({} bytes)", path_of(&f.uri), f.size))
            .collect(),
        // Found through its directory: no size or digest to show.
        switchboard::types::SkillFiles::Dynamic => files.iter().map(|u| path_of(u)).collect(),
    };
    if !files.is_empty() {
        pairs.add_row(vec!["files".to_owned(), files.join(", ")]);
    }
    println!("{pairs}");
    println!();
    println!("{}", body(skill.instructions().trim()));
}

/// One content block as a line or paragraph of text.
pub(crate) fn describe_block(block: &Value) -> String {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("?");
    match kind {
        "text" => body(block.get("text").and_then(Value::as_str).unwrap_or("")).into_owned(),
        "image" | "audio" => {
            let bytes = block
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, |d| d.len() * 3 / 4);
            format!("[{kind}: {}, about {bytes} bytes]", text(block, "mimeType"))
        }
        "resource_link" => {
            format!("[link: {} {}]", text(block, "uri"), text(block, "name")).replace(" ]", "]")
        }
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            match resource.get("text").and_then(Value::as_str) {
                Some(contents) => {
                    format!("[resource {}]\n{}", text(&resource, "uri"), body(contents))
                }
                None => format!("[resource {}: binary]", text(&resource, "uri")),
            }
        }
        other => format!("[{} content]", sanitize::line(other)),
    }
}

fn print_blob_aware(contents: &Value) {
    if let Some(text) = contents.get("text").and_then(Value::as_str) {
        println!("{}", body(text));
    } else if let Some(blob) = contents.get("blob").and_then(Value::as_str) {
        println!(
            "[binary: {}, about {} bytes]",
            text(contents, "mimeType"),
            blob.len() * 3 / 4
        );
    }
}

pub(crate) fn print_call_result<T: Serialize>(result: &T, elapsed: Duration) {
    let result = to_json(result);
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        println!("{}", describe_block(block));
    }
    // Printed unless a text block already says it (servers are told to
    // send it as JSON text too, for older clients).
    if let Some(structured) = result.get("structuredContent")
        && !result
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .any(|text| serde_json::from_str::<Value>(text).is_ok_and(|v| &v == structured))
    {
        println!("structured: {}", sanitize::json(structured.to_string()));
    }
    let status = if is_error {
        "tool reported an error"
    } else {
        "ok"
    };
    eprintln!("({status}, {})", millis(elapsed));
}

/// `read` refused to print an app's HTML on a terminal.
#[derive(Debug)]
pub(crate) struct HtmlOnTerminal {
    uri: String,
}

impl std::fmt::Display for HtmlOnTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is an MCP App's HTML ({APP_MIME_TYPE}), not shown on a terminal: \
             write it to a file with `-o FILE`, or print it anyway with `--raw`",
            sanitize::line(&self.uri)
        )
    }
}

impl std::error::Error for HtmlOnTerminal {}

/// The first contents entry that is an app's HTML (a `ui://` URI or the
/// app MIME type), when stdout is a terminal and `--raw` is not given.
fn html_on_terminal(result: &Value) -> Option<HtmlOnTerminal> {
    if RAW.load(std::sync::atomic::Ordering::Relaxed) || !std::io::stdout().is_terminal() {
        return None;
    }
    result
        .get("contents")
        .and_then(Value::as_array)?
        .iter()
        .find(|contents| {
            contents
                .get("uri")
                .and_then(Value::as_str)
                .is_some_and(is_ui_uri)
                || contents
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .is_some_and(is_app_mime_type)
        })
        .map(|contents| HtmlOnTerminal {
            uri: contents
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        })
}

/// `read`'s output: the result as JSON, its contents written to `to`
/// (`-o FILE`), or printed.
///
/// # Errors
/// An app's HTML for a terminal ([`HtmlOnTerminal`]); `to` not written.
pub(crate) fn emit_read_result<T: Serialize>(
    result: &T,
    json: bool,
    to: Option<&Path>,
) -> anyhow::Result<()> {
    if let Some(path) = to {
        return write_read_result(&to_json(result), path);
    }
    if json {
        print_json(&to_json(result));
        return Ok(());
    }
    print_read_result(result)?;
    Ok(())
}

/// `read -o FILE`: the one contents entry's bytes (text as UTF-8, a blob
/// decoded) in FILE, and what was written on stderr.
fn write_read_result(result: &Value, path: &Path) -> anyhow::Result<()> {
    let contents: &[Value] = result
        .get("contents")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let [contents] = contents else {
        anyhow::bail!(
            "the read returned {} contents entries; -o writes exactly one (see them with --json)",
            contents.len()
        );
    };
    let bytes = match (contents.get("text"), contents.get("blob")) {
        (Some(Value::String(text)), _) => text.as_bytes().to_vec(),
        (_, Some(Value::String(blob))) => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|e| anyhow::anyhow!("the server's blob is not base64: {e}"))?,
        _ => anyhow::bail!("the contents have neither text nor blob"),
    };
    std::fs::write(path, &bytes)
        .map_err(|e| anyhow::anyhow!("could not write {}: {e}", path.display()))?;
    eprintln!(
        "wrote {} bytes of {} {} to {}",
        bytes.len(),
        text(contents, "uri"),
        text(contents, "mimeType"),
        path.display()
    );
    Ok(())
}

/// Prints a read's contents; an app's HTML only with `--raw` or when
/// stdout is not a terminal.
///
/// # Errors
/// [`HtmlOnTerminal`], with nothing printed.
pub(crate) fn print_read_result<T: Serialize>(result: &T) -> Result<(), HtmlOnTerminal> {
    let result = to_json(result);
    if let Some(refused) = html_on_terminal(&result) {
        return Err(refused);
    }
    for contents in result
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        eprintln!(
            "── {} {}",
            text(contents, "uri"),
            text(contents, "mimeType")
        );
        print_blob_aware(contents);
    }
    Ok(())
}

pub(crate) fn print_prompt_result<T: Serialize>(result: &T) {
    let result = to_json(result);
    if let Some(description) = result.get("description").and_then(Value::as_str) {
        eprintln!("{}", sanitize::term(description));
    }
    for message in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let content = message.get("content").cloned().unwrap_or(Value::Null);
        println!("{}: {}", text(message, "role"), describe_block(&content));
    }
}

/// A completion's values, one per line on stdout (a server's text, so
/// escaped, one line each), and how many more there are on stderr; or the
/// result as one JSON document.
pub(crate) fn print_completion<T: Serialize>(result: &T, json: bool) {
    let result = to_json(result);
    if json {
        print_json(&result);
        return;
    }
    let completion = result.get("completion").cloned().unwrap_or(Value::Null);
    let values: Vec<&str> = completion
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for value in &values {
        println!("{}", sanitize::line(value));
    }
    let total = completion.get("total").and_then(Value::as_u64);
    let more = completion.get("hasMore").and_then(Value::as_bool) == Some(true);
    if values.is_empty() {
        eprintln!("(no completions)");
    } else if more || total.is_some_and(|t| t > values.len() as u64) {
        match total {
            Some(total) => eprintln!("({} of {total})", values.len()),
            None => eprintln!("({}; the server has more)", values.len()),
        }
    }
}

/// A configured server's state, then its session as [`print_info`] shows
/// it (`client` while ready).
pub(crate) fn print_server_info(state: &str, source: &str, client: &Client) {
    let first = [
        ("state", state.to_owned()),
        ("source", sanitize::line(source).into_owned()),
    ];
    print_session(client, None, &first);
}

#[cfg(test)]
mod tests {

    #[test]
    fn counts_say_one_in_the_singular() {
        assert_eq!(count(1, "tool"), "1 tool");
        assert_eq!(count(0, "tool"), "0 tools");
        assert_eq!(count(33, "problem"), "33 problems");
    }

    use super::*;

    #[test]
    fn blocks_render_readably() {
        assert_eq!(describe_block(&json!({"type": "text", "text": "hi"})), "hi");
        assert_eq!(
            describe_block(&json!({"type": "image", "mimeType": "image/png", "data": "AAAA"})),
            "[image: image/png, about 3 bytes]"
        );
        assert_eq!(
            describe_block(&json!({"type": "hologram"})),
            "[hologram content]"
        );
        assert_eq!(short("a long line here", 6), "a lon…");
    }
}
