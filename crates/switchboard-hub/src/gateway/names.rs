//! Names and URIs: how the gateway names its backends' prompts, resources,
//! templates and skills, and finds the backend again from the name.

use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::{JsonObject, ReadResourceResult, ResourceContents, codes};
use switchboard::types::{SkillEntry, SkillFiles};

use crate::hub::Hub;

/// The `_meta` key of each listed tool that names its server and its own
/// name there: `{"server": …, "tool": …}`.
pub const ORIGIN_META: &str = "switchboard/origin";

/// The `_meta` key of a call's error result that the gateway made of the
/// backend's JSON-RPC error (the model reads the text; a client that
/// wants the error as the backend said it, `switchboard`'s own commands
/// among them, reads this): the error object, `{"code", "message",
/// "data"}`.
pub const BACKEND_ERROR_META: &str = "switchboard/backendError";

/// The `_meta` key of the form the gateway sends a host when the tool
/// policy asks before a call (`ask = [...]`): what is asked about,
/// `{"server", "tool", "arguments", "rule"}`, for a client that asks its
/// user in its own words (`switchboard`'s commands ask as `call` does).
/// The form itself is a plain one any host can fill.
pub const TOOL_ASK_META: &str = "switchboard/toolAsk";

/// The server and own name of the prompt the hub lists as `name`.
pub(super) async fn prompt_route(hub: &Hub, name: &str) -> Result<(String, String), ErrorObject> {
    hub.prompts()
        .await
        .items
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| (p.server, p.prompt.name))
        .ok_or_else(|| ErrorObject::new(codes::INVALID_PARAMS, format!("Unknown prompt: {name}")))
}

/// The gateway URI of `server`'s resource `uri`:
/// `switchboard://SERVER/URI`, both parts percent-encoded (everything but
/// RFC 3986's unreserved characters), so any server name and URI survive
/// the round trip ([`resource_origin`]).
pub fn resource_uri(server: &str, uri: &str) -> String {
    format!("{URI_PREFIX}{}/{}", encode(server), encode(uri))
}

/// The gateway template of `server`'s resource template:
/// `switchboard://SERVER/~/TEMPLATE`, the template as written after the
/// `~/` mark, so that a URI the host expands from it carries, after the
/// mark, exactly the URI the server's template expands to (its
/// percent-encodings included); [`resource_origin`] reads both forms.
pub fn resource_template_uri(server: &str, template: &str) -> String {
    format!("{URI_PREFIX}{}/{RAW_MARK}{template}", encode(server))
}

/// Marks a gateway URI whose original URI follows as written (an encoded
/// original never starts so: its `/` is `%2F`).
pub(super) const RAW_MARK: &str = "~/";

/// The gateway URI of `server`'s skill file `uri`: `skill://PATH` becomes
/// `skill://SERVER/PATH` — still a skill URI whose last segments are the
/// skill's own (its name, then `SKILL.md`), so hosts of the skills
/// extension take it as it is. `None` for a URI that is not `skill://`.
pub fn skill_uri(server: &str, uri: &str) -> Option<String> {
    let path = uri.strip_prefix(SKILL_SCHEME)?;
    Some(format!("{SKILL_SCHEME}{}/{path}", encode(server)))
}

/// The server and original URI of a gateway skill URI.
pub fn skill_origin(uri: &str) -> Option<(String, String)> {
    let (server, path) = uri.strip_prefix(SKILL_SCHEME)?.split_once('/')?;
    // A dot segment (`skill://a/../b/x`, also percent-encoded) is no
    // skill file of `a`'s: hosts and servers resolve it differently.
    let dot = |segment: &str| {
        let segment = segment.to_ascii_lowercase().replace("%2e", ".");
        segment == "." || segment == ".."
    };
    if path.is_empty() || path.split('/').any(dot) {
        return None;
    }
    Some((decode(server)?, format!("{SKILL_SCHEME}{path}")))
}

const SKILL_SCHEME: &str = "skill://";

/// A backend's skill entry as the gateway lists it: every URI through
/// [`skill_uri`].
pub(super) fn gateway_skill(server: &str, mut entry: SkillEntry) -> Option<SkillEntry> {
    entry.uri = skill_uri(server, &entry.uri)?;
    if let SkillFiles::Listed(files) = &mut entry.resources {
        for file in files {
            file.uri = skill_uri(server, &file.uri)?;
        }
    }
    Some(entry)
}

/// A backend's read as the gateway answers it: each content's URI through
/// `rewrite`; the backend's caching hints and identity dropped (they were
/// for it), the rest of its `_meta` kept.
pub(super) fn as_gateway_read(
    mut result: ReadResourceResult,
    rewrite: impl Fn(&str) -> String,
) -> ReadResourceResult {
    for contents in &mut result.contents {
        let uri = match contents {
            ResourceContents::Text(c) => &mut c.uri,
            ResourceContents::Blob(c) => &mut c.uri,
        };
        *uri = rewrite(uri);
    }
    result.result_type = None;
    result.ttl_ms = None;
    result.cache_scope = None;
    without_identity(&mut result.meta);
    result
}

/// A backend's `_meta` without the backend's identity (the 2026-07-28
/// `serverInfo`): what the gateway answers is its own.
pub(super) fn without_identity(meta: &mut Option<JsonObject>) {
    if let Some(entries) = meta {
        entries.remove(switchboard::types::meta::META_SERVER_INFO);
        if entries.is_empty() {
            *meta = None;
        }
    }
}

/// The server and original URI of a gateway URI, when it is one.
pub fn resource_origin(uri: &str) -> Option<(String, String)> {
    let (server, original) = uri.strip_prefix(URI_PREFIX)?.split_once('/')?;
    let original = match original.strip_prefix(RAW_MARK) {
        Some(raw) => raw.to_owned(),
        None => decode(original)?,
    };
    Some((decode(server)?, original))
}

pub(super) const URI_PREFIX: &str = "switchboard://";

pub(super) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

pub(super) fn decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}
