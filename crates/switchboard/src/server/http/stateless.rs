//! The 2026-07-28 revision's checks of a request without a session.

use hyper::{Response, StatusCode};

use super::body::{ResponseBody, rpc_error};

/// The HTTP status of a stateless error answer: 404 for an unknown
/// method, 400 for a request the server refuses as malformed (the
/// 2026-07-28 revision's mapping), else 200.
pub(super) fn error_code_status(code: i64) -> StatusCode {
    use switchboard_types::codes;
    match code {
        codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        codes::INVALID_PARAMS
        | codes::INVALID_REQUEST
        | codes::PARSE_ERROR
        | codes::HEADER_MISMATCH
        | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// Whether `needle` occurs in `haystack`.
pub(super) fn contains_text(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// What the checks of a stateless request read of its body (parsed once
/// for all of them).
#[derive(serde::Deserialize)]
pub(super) struct Peek {
    pub(super) method: String,
    #[serde(default)]
    pub(super) params: Option<PeekParams>,
}

#[derive(serde::Deserialize)]
pub(super) struct PeekParams {
    #[serde(default)]
    pub(super) name: Option<serde_json::Value>,
    #[serde(default)]
    uri: Option<serde_json::Value>,
    #[serde(rename = "taskId", default)]
    task_id: Option<serde_json::Value>,
    #[serde(rename = "_meta", default)]
    meta: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub(super) arguments: Option<serde_json::Value>,
}

/// The 2026-07-28 revision's checks of a stateless request: `Mcp-Method`
/// (and `Mcp-Name` for a call, a prompt, a read or a task's
/// `tasks/get|update|cancel`) must repeat the body,
/// `MCP-Protocol-Version` must agree with `_meta`, `_meta` must carry the
/// protocol version and the client's capabilities, and the session era's
/// methods (`ping` …) do not exist. Header values are compared after
/// trimming surrounding whitespace, case-sensitively. Returns the refusal
/// to send, if any.
pub(super) fn check_stateless(
    headers: &hyper::HeaderMap,
    peek: &Peek,
    id: Option<&str>,
) -> Option<Response<ResponseBody>> {
    use switchboard_types::{codes, meta};
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let mismatch = |what: String| {
        Some(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            codes::HEADER_MISMATCH,
            &format!("Header mismatch: {what}"),
        ))
    };
    match header("mcp-method") {
        Some(method) if method == peek.method => {}
        Some(method) => {
            return mismatch(format!(
                "Mcp-Method is `{method}` but the body's method is `{}`",
                peek.method
            ));
        }
        None => return mismatch("the Mcp-Method header is missing".to_owned()),
    }
    let params = peek.params.as_ref();
    let routed = match peek.method.as_str() {
        "tools/call" | "prompts/get" => params.and_then(|p| p.name.as_ref()),
        "resources/read" => params.and_then(|p| p.uri.as_ref()),
        // The tasks extension (SEP-2663): the task's id.
        "tasks/get" | "tasks/update" | "tasks/cancel" => params.and_then(|p| p.task_id.as_ref()),
        _ => None,
    };
    if let Some(routed) = routed.and_then(serde_json::Value::as_str) {
        match header("mcp-name") {
            Some(name) if name == routed => {}
            Some(name) => {
                return mismatch(format!(
                    "Mcp-Name is `{name}` but the body names `{routed}`"
                ));
            }
            None => return mismatch("the Mcp-Name header is missing".to_owned()),
        }
    }
    if matches!(
        peek.method.as_str(),
        "ping"
            | "initialize"
            | "logging/setLevel"
            | "resources/subscribe"
            | "resources/unsubscribe"
    ) {
        return Some(rpc_error(
            StatusCode::NOT_FOUND,
            id,
            codes::METHOD_NOT_FOUND,
            &format!(
                "Method not found: {} (the 2026-07-28 revision has no such method)",
                peek.method
            ),
        ));
    }
    let meta = params.and_then(|p| p.meta.as_ref());
    let invalid = |what: &str| {
        Some(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            codes::INVALID_PARAMS,
            &format!("Invalid params: {what}"),
        ))
    };
    let Some(meta) = meta else {
        return invalid(
            "missing _meta (a request without a session is of the 2026-07-28 revision)",
        );
    };
    let Some(version) = meta.get(meta::META_PROTOCOL_VERSION) else {
        return invalid(&format!(
            "missing required _meta field {}",
            meta::META_PROTOCOL_VERSION
        ));
    };
    if !meta.contains_key(meta::META_CLIENT_CAPABILITIES) {
        return invalid(&format!(
            "missing required _meta field {}",
            meta::META_CLIENT_CAPABILITIES
        ));
    }
    if let (Some(header), Some(version)) = (header("mcp-protocol-version"), version.as_str())
        && header != version
    {
        return mismatch(format!(
            "MCP-Protocol-Version is `{header}` but _meta says `{version}`"
        ));
    }
    None
}
