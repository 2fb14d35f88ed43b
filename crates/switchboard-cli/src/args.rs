//! `--arg KEY=VALUE` parsing, coerced the way the MCP Inspector CLI does.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use serde_json::{Map, Value};

/// A value is JSON when it parses as JSON (`1`, `true`, `{"a":1}`,
/// `"012"`), otherwise the literal string (`012`, `hello`).
fn coerce(value: &str) -> Value {
    serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()))
}

fn split(pair: &str) -> anyhow::Result<(&str, &str)> {
    let (key, value) = pair
        .split_once('=')
        .with_context(|| format!("--arg {pair:?} is not KEY=VALUE"))?;
    if key.is_empty() {
        bail!("--arg {pair:?} has an empty key");
    }
    Ok((key, value))
}

/// Tool arguments from `--args-json` and `--arg`s (which win).
pub(crate) fn tool_arguments(
    json: Option<&str>,
    pairs: &[String],
) -> anyhow::Result<Map<String, Value>> {
    let mut arguments = match json {
        Some(text) => {
            let trimmed = text.trim_start();
            let value = match serde_json::from_str::<Value>(text) {
                Ok(value) => value,
                // A word, not JSON: most likely the server's command, typed
                // without the `--` before it.
                Err(_) if !trimmed.is_empty() && !trimmed.starts_with(['{', '[', '"']) => bail!(
                    "the tool's arguments `{text}` are not JSON: give them as one JSON object \
                     ('{{\"key\": \"value\"}}') or as --arg KEY=VALUE; if `{text}` starts the \
                     server's command, put `--` before it (switchboard call TOOL -- {text} …)"
                ),
                Err(error) => {
                    return Err(anyhow::Error::new(error)
                        .context(format!("the tool's arguments `{text}` are not valid JSON")));
                }
            };
            match value {
                Value::Object(object) => object,
                other => bail!(
                    "the tool's arguments must be one JSON object, not {}",
                    kind(&other)
                ),
            }
        }
        None => Map::new(),
    };
    for pair in pairs {
        let (key, value) = split(pair)?;
        arguments.insert(key.to_owned(), coerce(value));
    }
    Ok(arguments)
}

/// Prompt arguments: always strings.
pub(crate) fn prompt_arguments(pairs: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|pair| split(pair).map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_server_command_given_as_arguments_is_told_its_dashes() {
        let said = tool_arguments(Some("npx"), &[]).unwrap_err().to_string();
        assert!(said.contains("put `--` before it"), "{said}");
        assert!(!said.contains("--args-json"), "{said}");
        let said = format!("{:#}", tool_arguments(Some("{\"a\": "), &[]).unwrap_err());
        assert!(said.contains("are not valid JSON"), "{said}");
        let said = tool_arguments(Some("[1]"), &[]).unwrap_err().to_string();
        assert!(said.contains("one JSON object, not an array"), "{said}");
    }

    #[test]
    fn coerces_like_the_inspector() {
        let args = tool_arguments(
            None,
            &[
                "n=1".into(),
                r#"o={"a":1}"#.into(),
                r#"s="012""#.into(),
                "z=012".into(),
                "t=true".into(),
                "w=hello world".into(),
                "e=".into(),
                "eq=a=b".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"n": 1, "o": {"a": 1}, "s": "012", "z": "012", "t": true,
                   "w": "hello world", "e": "", "eq": "a=b"})
        );
    }

    #[test]
    fn args_json_is_merged_under_args() {
        let args = tool_arguments(Some(r#"{"a":1,"b":2}"#), &["b=3".into()]).unwrap();
        assert_eq!(Value::Object(args), json!({"a": 1, "b": 3}));
        assert!(
            tool_arguments(Some("[1]"), &[])
                .unwrap_err()
                .to_string()
                .contains("JSON object")
        );
        assert!(tool_arguments(None, &["novalue".into()]).is_err());
        assert!(tool_arguments(None, &["=1".into()]).is_err());
    }
}
