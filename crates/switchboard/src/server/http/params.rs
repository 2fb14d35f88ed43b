//! SEP-2243's `Mcp-Param-*` headers on a 2026-07-28 request: each argument
//! a tool mirrors (`x-mcp-header`) must arrive in its header too, and
//! match it.

use hyper::{HeaderMap, Response, StatusCode};
use serde_json::Value;

use super::body::{ResponseBody, rpc_error};
use super::stateless::Peek;
use crate::param_headers::{argument_text, decode_header_value, header_params};
use crate::server::ServerHandler;

/// The refusal (400, -32020) of a `tools/call` whose `Mcp-Param-*`
/// headers do not agree with its arguments, for a tool whose schema the
/// handler gives ([`ServerHandler::tool_input_schema`]): a mirrored
/// argument without its header, a header whose `=?base64?…?=` value does
/// not decode, a header whose value is not the argument's (surrounding
/// whitespace aside), or a header for an argument the call leaves out.
pub(super) fn check_params(
    handler: &dyn ServerHandler,
    user: Option<&crate::server::HostUser>,
    headers: &HeaderMap,
    peek: &Peek,
    id: Option<&str>,
) -> Option<Response<ResponseBody>> {
    if peek.method != "tools/call" {
        return None;
    }
    let params = peek.params.as_ref()?;
    let name = params.name.as_ref()?.as_str()?;
    let schema = handler.tool_input_schema_for(name, user)?;
    let mirrored = header_params(&schema).ok()?;
    let null = Value::Null;
    let arguments = params.arguments.as_ref().unwrap_or(&null);
    let mismatch = |what: String| {
        Some(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            switchboard_types::codes::HEADER_MISMATCH,
            &format!("Header mismatch: {what}"),
        ))
    };
    for param in &mirrored {
        let header = format!("Mcp-Param-{}", param.name);
        let sent = headers
            .get(header.as_str())
            .map(|v| v.to_str().map(str::trim));
        match (argument_text(param, arguments), sent) {
            (None, None) => {}
            (Some(_), None) => return mismatch(format!("the {header} header is missing")),
            (_, Some(Err(_))) => {
                return mismatch(format!("the {header} header is not visible ASCII"));
            }
            (None, Some(Ok(_))) => {
                return mismatch(format!(
                    "the {header} header is sent but the call has no such argument"
                ));
            }
            (Some(argument), Some(Ok(raw))) => match decode_header_value(raw) {
                None => {
                    return mismatch(format!("the {header} header's Base64 value is invalid"));
                }
                Some(value) if value != argument => {
                    return mismatch(format!(
                        "the {header} header's value does not match the argument"
                    ));
                }
                Some(_) => {}
            },
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_types::{Implementation, ServerCapabilities};

    /// A server whose tool `geo` mirrors `region` into `Mcp-Param-Region`.
    struct Geo;

    impl ServerHandler for Geo {
        fn info(&self) -> Implementation {
            Implementation::new("geo", "1")
        }

        fn capabilities(&self) -> ServerCapabilities {
            ServerCapabilities::default()
        }

        fn tool_input_schema(&self, name: &str) -> Option<Value> {
            (name == "geo").then(|| {
                json!({"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"}}})
            })
        }
    }

    /// The status of `region` (absent: `None`) sent with `header`.
    fn status(region: Option<&str>, header: Option<&str>) -> Option<StatusCode> {
        let arguments = region.map_or(json!({}), |r| json!({"region": r}));
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "geo", "arguments": arguments}});
        let mut headers = HeaderMap::new();
        if let Some(header) = header {
            headers.insert("mcp-param-region", header.parse().unwrap());
        }
        let peek = serde_json::from_value(body).unwrap();
        check_params(&Geo, None, &headers, &peek, Some("1")).map(|response| response.status())
    }

    #[test]
    fn mirrored_arguments_must_arrive_in_their_headers() {
        let refused = Some(StatusCode::BAD_REQUEST);
        assert_eq!(status(Some("Hello"), Some("Hello")), None);
        assert_eq!(status(Some("Hello"), Some("  Hello ")), None);
        assert_eq!(status(Some("Hello"), Some("=?base64?SGVsbG8=?=")), None);
        assert_eq!(status(None, None), None);
        // Half the form is literal.
        assert_eq!(
            status(Some("=?base64?SGVsbG8="), Some("=?base64?SGVsbG8=")),
            None
        );
        assert_eq!(status(Some("Hello"), None), refused);
        assert_eq!(status(Some("Hello"), Some("Bye")), refused);
        assert_eq!(status(Some("Hello"), Some("=?base64?SGVsbG8?=")), refused);
        assert_eq!(
            status(Some("Hello"), Some("=?base64?SGVs!!!bG8=?=")),
            refused
        );
        assert_eq!(status(None, Some("Hello")), refused);
    }
}
