//! `x-mcp-header` (2026-07-28): tool parameters a server wants mirrored into
//! `Mcp-Param-{Name}` headers, validated per the Streamable HTTP rules; and
//! the `=?base64?…?=` form of a header value, both ways. The client writes
//! the headers (`transport/http`), the server checks them
//! (`server/http/params.rs`).

use base64::Engine as _;
use serde_json::Value;

/// A header value as the 2026-07-28 rules require: plain when it is safe
/// visible ASCII without edge whitespace, else `=?base64?…?=`.
#[cfg(feature = "http")]
pub(crate) fn encode_header_value(value: &str) -> String {
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    let safe = !value.is_empty()
        && value
            .bytes()
            .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
        && !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t'])
        && !looks_encoded;
    if safe {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

/// A header value as sent (`=?base64?…?=` decoded; anything else, even
/// half of that form, is literal); `None` when the Base64 inside the form
/// is not valid (bad padding or characters) or not UTF-8.
#[cfg(feature = "http-server")]
pub(crate) fn decode_header_value(raw: &str) -> Option<String> {
    match raw
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(raw.to_owned()),
    }
}

/// The text a mirrored argument is compared as: a string, a boolean, an
/// integer; `None` when absent or of another type (no header then).
pub(crate) fn argument_text(params: &HeaderParam, arguments: &Value) -> Option<String> {
    let value = params
        .path
        .iter()
        .try_fold(arguments, |value, key| value.get(key))?;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// One parameter to mirror: where it sits in the arguments, and its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeaderParam {
    /// The chain of `properties` keys from the schema root.
    pub(crate) path: Vec<String>,
    /// The `{Name}` of `Mcp-Param-{Name}`.
    pub(crate) name: String,
}

/// The mirrored parameters of a tool, or why its definition is invalid.
pub(crate) fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut found = Vec::new();
    collect(input_schema, Some(Vec::new()), &mut found)?;
    let mut seen = std::collections::HashSet::new();
    for param in &found {
        if !seen.insert(param.name.to_ascii_lowercase()) {
            return Err(format!(
                "x-mcp-header {:?} is used more than once (names are case-insensitive)",
                param.name
            ));
        }
    }
    Ok(found)
}

/// Walks the schema; `path` is `Some` while the node is reachable from the
/// root through `properties` keys only.
fn collect(
    node: &Value,
    path: Option<Vec<String>>,
    found: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    match node {
        Value::Object(object) => {
            if let Some(name) = object.get("x-mcp-header") {
                let Some(path) = path.as_ref().filter(|p| !p.is_empty()) else {
                    return Err("x-mcp-header is only allowed on properties reachable from the schema root through `properties`".into());
                };
                let name = name
                    .as_str()
                    .ok_or_else(|| "x-mcp-header must be a string".to_owned())?;
                if name.is_empty() || !name.bytes().all(is_tchar) {
                    return Err(format!(
                        "x-mcp-header {name:?} is not a valid HTTP header name token"
                    ));
                }
                match object.get("type").and_then(Value::as_str) {
                    Some("string" | "integer" | "boolean") => {}
                    other => {
                        return Err(format!(
                            "x-mcp-header {name:?} is on a parameter of type {}, but only string, integer and boolean may be mirrored",
                            other.unwrap_or("(none)")
                        ));
                    }
                }
                found.push(HeaderParam {
                    path: path.clone(),
                    name: name.to_owned(),
                });
            }
            for (key, child) in object {
                match (key.as_str(), child) {
                    ("x-mcp-header", _) => {}
                    ("properties", Value::Object(properties)) => {
                        for (property, schema) in properties {
                            let child_path = path.as_ref().map(|p| {
                                let mut p = p.clone();
                                p.push(property.clone());
                                p
                            });
                            collect(schema, child_path, found)?;
                        }
                    }
                    // Anything else (items, oneOf, $defs, if/then …) is not
                    // statically reachable.
                    _ => collect(child, None, found)?,
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|item| collect(item, None, found)),
        _ => Ok(()),
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Mcp-Param-*` headers for a call with `arguments`.
#[cfg(feature = "http")]
pub(crate) fn param_headers(params: &[HeaderParam], arguments: &Value) -> Vec<(String, String)> {
    params
        .iter()
        .filter_map(|param| {
            let text = argument_text(param, arguments)?;
            Some((
                format!("Mcp-Param-{}", param.name),
                encode_header_value(&text),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn finds_annotations_on_the_properties_chain() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
            "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}}
        }});
        let params = header_params(&schema).unwrap();
        assert_eq!(
            params,
            vec![
                HeaderParam {
                    path: vec!["region".into()],
                    name: "Region".into()
                },
                HeaderParam {
                    path: vec!["opts".into(), "dry".into()],
                    name: "Dry-Run".into()
                },
            ]
        );
        let headers = param_headers(
            &params,
            &json!({"region": "us-west1", "opts": {"dry": true}, "query": "x"}),
        );
        assert_eq!(
            headers,
            vec![
                ("Mcp-Param-Region".to_owned(), "us-west1".to_owned()),
                ("Mcp-Param-Dry-Run".to_owned(), "true".to_owned()),
            ]
        );
        // Absent values are omitted; unsafe values are encoded.
        let headers = param_headers(&params, &json!({"region": "Hello, 世界"}));
        assert_eq!(
            headers,
            vec![(
                "Mcp-Param-Region".to_owned(),
                "=?base64?SGVsbG8sIOS4lueVjA==?=".to_owned()
            )]
        );
    }

    #[test]
    fn rejects_invalid_annotations() {
        let cases = [
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"properties": {"a": {"oneOf": [{"type": "string", "x-mcp-header": "A"}]}}}),
            json!({"$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}),
            json!({"type": "object", "x-mcp-header": "Root"}),
        ];
        for schema in cases {
            assert!(header_params(&schema).is_err(), "{schema}");
        }
        // A property that happens to be named x-mcp-header is fine.
        let schema = json!({"properties": {"x-mcp-header": {"type": "string"}}});
        assert_eq!(header_params(&schema).unwrap(), vec![]);
    }
}
