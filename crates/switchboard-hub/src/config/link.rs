//! One-click install links, read as the server entry they ask for.
//!
//! | link | form |
//! |---|---|
//! | Cursor | `cursor://anysphere.cursor-deeplink/mcp/install?name=N&config=BASE64(JSON)`, and its web form `https://cursor.com/[LANG/]install-mcp?…` |
//! | VS Code | `vscode:mcp/install?URLENCODED(JSON with "name")`, `vscode:mcp/install?name=N&config=JSON[&inputs=JSON]` (`vscode-insiders:` too), and the web redirects `https://[insiders.]vscode.dev/redirect?url=…` and `…/redirect/mcp/install?…` |
//!
//! A link comes from a web page: it is someone else's text. The entry it
//! asks for is returned as the JSON object Claude Code writes (`command`,
//! `args`, `env`; or `type`, `url`, `headers`), so it is read by the same
//! reader as `add-json` and written the same; it is never run here. VS
//! Code's `${input:ID}` prompts become `${ID}` variable references (the
//! value is never in the link, nor written), listed as [`LinkNeed`]s; keys
//! neither client reads are refused by the reader or warned about here.

use base64::Engine as _;
use serde_json::{Map, Value};

/// Longest link read (a config of a few kilobytes is already generous).
pub const MAX_LINK_BYTES: usize = 64 * 1024;

/// Which client's link it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkKind {
    /// Cursor's deep link.
    Cursor,
    /// VS Code's (or VS Code Insiders') install link.
    VsCode,
}

/// A variable the entry refers to that the link only described.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkNeed {
    /// The variable (`GITHUB_TOKEN`).
    pub name: String,
    /// The link's words about it.
    pub description: Option<String>,
    /// Marked as a password.
    pub secret: bool,
}

/// An install link, read.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct InstallLink {
    /// Whose link.
    pub kind: LinkKind,
    /// The server's name as the link gives it (unchecked).
    pub name: Option<String>,
    /// The entry, as Claude Code's JSON.
    pub entry: Value,
    /// Variables to set.
    pub needs: Vec<LinkNeed>,
    /// What was left out and why.
    pub warnings: Vec<String>,
}

/// `text` read as a Cursor or VS Code install link.
///
/// # Errors
/// A message saying what is wrong with the link.
pub fn parse_link(text: &str) -> Result<InstallLink, String> {
    let text = text.trim();
    if text.len() > MAX_LINK_BYTES {
        return Err(format!(
            "the link is {} bytes; links over {MAX_LINK_BYTES} are not read",
            text.len()
        ));
    }
    let url = reqwest::Url::parse(text).map_err(|e| format!("not a link ({e})"))?;
    let query = url.query().unwrap_or("");
    match (url.scheme(), url.host_str().unwrap_or(""), url.path()) {
        ("cursor", "anysphere.cursor-deeplink", "/mcp/install") => cursor(query),
        ("https", "cursor.com" | "www.cursor.com", path)
            if path.trim_end_matches('/').ends_with("/install-mcp") =>
        {
            cursor(query)
        }
        ("vscode" | "vscode-insiders", _, "mcp/install") => vscode(query),
        ("https", "vscode.dev" | "insiders.vscode.dev", "/redirect") => {
            let inner = pairs(query)
                .into_iter()
                .find(|(k, _)| k == "url")
                .map(|(_, v)| v)
                .ok_or("a vscode.dev redirect without its `url`")?;
            if inner.starts_with("https:") {
                return Err("a redirect to another web page, not an install link".into());
            }
            parse_link(&inner)
        }
        ("https", "vscode.dev" | "insiders.vscode.dev", "/redirect/mcp/install") => vscode(query),
        _ => Err(
            "not a Cursor (`cursor://anysphere.cursor-deeplink/mcp/install?…`) or VS Code (`vscode:mcp/install?…`) install link"
                .into(),
        ),
    }
}

/// `k=v&…`, each percent-decoded (`+` as a space, as forms have it).
fn pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(&k.replace('+', " ")), decode(&v.replace('+', " ")))
        })
        .collect()
}

/// Percent-decoding; a malformed escape stays as written.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn object(text: &str, what: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!("the link's {what} is not a JSON object")),
        Err(e) => Err(format!("the link's {what} is not valid JSON ({e})")),
    }
}

fn cursor(query: &str) -> Result<InstallLink, String> {
    let pairs = pairs(query);
    let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let name = get("name");
    let config = get("config").ok_or("the Cursor link has no `config`")?;
    // Standard or URL-safe, padded or not; a `+` a form decoder made a
    // space is a `+` again.
    let config: String = config
        .chars()
        .filter(|c| !c.is_whitespace() || *c == ' ')
        .map(|c| if c == ' ' { '+' } else { c })
        .collect();
    let trimmed = config.trim_end_matches('=');
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(trimmed)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(trimmed))
        .map_err(|e| format!("the Cursor link's `config` is not base64 ({e})"))?;
    let text = String::from_utf8(bytes).map_err(|_| "the Cursor link's `config` is not text")?;
    let config = object(&text, "`config`")?;
    entry(LinkKind::Cursor, name, config, Vec::new())
}

fn vscode(query: &str) -> Result<InstallLink, String> {
    let whole = decode(query);
    if whole.trim_start().starts_with('{') {
        let mut config = object(&whole, "configuration")?;
        let name = match config.remove("name") {
            Some(Value::String(name)) => Some(name),
            Some(_) => return Err("the link's `name` is not a string".into()),
            None => None,
        };
        let inputs = match config.remove("inputs") {
            Some(Value::Array(inputs)) => inputs,
            Some(_) => return Err("the link's `inputs` is not a list".into()),
            None => Vec::new(),
        };
        return entry(LinkKind::VsCode, name, config, inputs);
    }
    let pairs = pairs(query);
    let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let config = object(
        &get("config").ok_or("the VS Code link has no configuration")?,
        "`config`",
    )?;
    let inputs = match get("inputs") {
        Some(text) => match serde_json::from_str(&text) {
            Ok(Value::Array(inputs)) => inputs,
            _ => return Err("the link's `inputs` is not a JSON list".into()),
        },
        None => Vec::new(),
    };
    entry(LinkKind::VsCode, get("name"), config, inputs)
}

/// Text as an environment variable's name: `github_token` →
/// `GITHUB_TOKEN` (also the registry's argument hints, `registry::plan`).
pub(crate) fn variable(id: &str) -> String {
    let mut name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// Every `${input:ID}` in `value`'s strings as `${VARIABLE}`; the ids met.
fn replace_inputs(value: &mut Value, met: &mut Vec<String>) {
    match value {
        Value::String(text) => {
            while let Some(start) = text.find("${input:") {
                let Some(len) = text[start..].find('}') else {
                    break;
                };
                let id = text[start + 8..start + len].to_owned();
                let name = variable(&id);
                text.replace_range(start..=start + len, &format!("${{{name}}}"));
                if !met.contains(&id) {
                    met.push(id);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| replace_inputs(v, met)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_inputs(v, met)),
        _ => {}
    }
}

fn entry(
    kind: LinkKind,
    name: Option<String>,
    mut config: Map<String, Value>,
    inputs: Vec<Value>,
) -> Result<InstallLink, String> {
    let mut warnings = Vec::new();
    // Words for VS Code's gallery and Cursor's own settings, not the entry.
    for key in ["gallery", "version", "description"] {
        config.remove(key);
    }
    if config.remove("envFile").is_some() {
        warnings.push(
            "the link's `envFile` is left out: switchboard reads variables from `env` and your environment"
                .into(),
        );
    }
    if let Some(Value::String(t)) = config.get("type")
        && t == "local"
    {
        config.insert("type".into(), Value::String("stdio".into()));
    }
    if config.get("type").is_none() && config.get("url").is_some() {
        config.insert("type".into(), Value::String("http".into()));
    }
    let mut entry = Value::Object(config);
    let mut met = Vec::new();
    replace_inputs(&mut entry, &mut met);
    let mut needs = Vec::new();
    for id in met {
        let spec = inputs
            .iter()
            .find(|i| i.get("id").and_then(Value::as_str) == Some(id.as_str()));
        needs.push(LinkNeed {
            name: variable(&id),
            description: spec
                .and_then(|s| s.get("description"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            secret: spec
                .and_then(|s| s.get("password"))
                .and_then(Value::as_bool)
                .unwrap_or(true),
        });
    }
    Ok(InstallLink {
        kind,
        name,
        entry,
        needs,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cursor_link(name: &str, config: &Value) -> String {
        format!(
            "cursor://anysphere.cursor-deeplink/mcp/install?name={name}&config={}",
            base64::engine::general_purpose::STANDARD.encode(config.to_string())
        )
    }

    #[test]
    fn cursor_links_in_every_form_read_as_their_entry() {
        // Cursor's documented example: a postgres server by npx.
        let postgres = json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/mydb"]});
        let link = parse_link(&cursor_link("postgres", &postgres)).unwrap();
        assert_eq!(link.kind, LinkKind::Cursor);
        assert_eq!(link.name.as_deref(), Some("postgres"));
        assert_eq!(link.entry, postgres);
        // Seen in the wild: padding percent-encoded, a remote by url alone.
        let keboola = parse_link("cursor://anysphere.cursor-deeplink/mcp/install?name=keboola&config=eyJ1cmwiOiJodHRwczovL21jcC5rZWJvb2xhLmNvbS9tY3AifQ%3D%3D").unwrap();
        assert_eq!(
            keboola.entry,
            json!({"type": "http", "url": "https://mcp.keboola.com/mcp"})
        );
        // The web form, and a `+` a form decoder turned into a space.
        let plus = json!({"command": "uvx", "args": ["a>b?"]});
        let encoded = base64::engine::general_purpose::STANDARD.encode(plus.to_string());
        assert!(encoded.contains('+') || encoded.contains('/'), "{encoded}");
        let web = parse_link(&format!(
            "https://cursor.com/en/install-mcp?name=x&config={encoded}"
        ))
        .unwrap();
        assert_eq!(web.entry, plus);
    }

    #[test]
    fn vscode_links_in_every_form_read_as_their_entry() {
        // VS Code's documented example.
        let github = parse_link("vscode:mcp/install?%7B%22name%22%3A%22github%22%2C%22gallery%22%3Atrue%2C%22url%22%3A%22https%3A%2F%2Fapi.githubcopilot.com%2Fmcp%2F%22%7D").unwrap();
        assert_eq!(github.kind, LinkKind::VsCode);
        assert_eq!(github.name.as_deref(), Some("github"));
        assert_eq!(
            github.entry,
            json!({"type": "http", "url": "https://api.githubcopilot.com/mcp/"})
        );
        // name/config/inputs, through the insiders redirect (as GitHub's
        // server's README has it): the token is asked, never in the link.
        let inputs = r#"[{"id":"github_token","type":"promptString","description":"GitHub Personal Access Token","password":true}]"#;
        let config = r#"{"command":"docker","args":["run","-i","--rm","-e","GITHUB_PERSONAL_ACCESS_TOKEN","ghcr.io/github/github-mcp-server"],"env":{"GITHUB_PERSONAL_ACCESS_TOKEN":"${input:github_token}"}}"#;
        let enc = |s: &str| s.bytes().map(|b| format!("%{b:02X}")).collect::<String>();
        let link = format!(
            "https://insiders.vscode.dev/redirect/mcp/install?name=github&inputs={}&config={}",
            enc(inputs),
            enc(config)
        );
        let read = parse_link(&link).unwrap();
        assert_eq!(read.name.as_deref(), Some("github"));
        assert_eq!(
            read.entry["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"],
            "${GITHUB_TOKEN}"
        );
        assert_eq!(
            read.needs,
            [LinkNeed {
                name: "GITHUB_TOKEN".into(),
                description: Some("GitHub Personal Access Token".into()),
                secret: true,
            }]
        );
        // The vscode.dev redirect wrapping a vscode: link.
        let wrapped = format!(
            "https://vscode.dev/redirect?url={}",
            enc(
                "vscode:mcp/install?%7B%22name%22%3A%22o%22%2C%22command%22%3A%22npx%22%2C%22args%22%3A%5B%22-y%22%2C%22%40cyanheads%2Fonebusaway-mcp-server%22%5D%7D"
            )
        );
        let read = parse_link(&wrapped).unwrap();
        assert_eq!(
            read.entry,
            json!({"command": "npx", "args": ["-y", "@cyanheads/onebusaway-mcp-server"]})
        );
        let insiders = parse_link("vscode-insiders:mcp/install?name=d&config=%7B%22type%22%3A%22http%22%2C%22url%22%3A%22https%3A%2F%2Fapi.mcp.ai%2Fp_discord%22%7D").unwrap();
        assert_eq!(insiders.name.as_deref(), Some("d"));
        assert_eq!(insiders.entry["url"], "https://api.mcp.ai/p_discord");
    }

    #[test]
    fn links_that_are_not_install_links_are_refused_with_the_reason() {
        for (link, why) in [
            ("https://example.com/mcp/install?name=x", "not a Cursor"),
            (
                "cursor://anysphere.cursor-deeplink/mcp/install?name=x",
                "no `config`",
            ),
            (
                "cursor://anysphere.cursor-deeplink/mcp/install?name=x&config=!!!",
                "not base64",
            ),
            (
                "cursor://anysphere.cursor-deeplink/mcp/install?name=x&config=WzFd",
                "not a JSON object",
            ),
            ("vscode:mcp/install?%7Bnope", "not valid JSON"),
            (
                "https://vscode.dev/redirect?url=https%3A%2F%2Fevil.example",
                "another web page",
            ),
            ("cursor://other.host/mcp/install?config=e30", "not a Cursor"),
        ] {
            let error = parse_link(link).unwrap_err();
            assert!(error.contains(why), "{link}: {error}");
        }
        let huge = format!("vscode:mcp/install?{}", "a".repeat(MAX_LINK_BYTES));
        assert!(parse_link(&huge).unwrap_err().contains("not read"));
    }
}
