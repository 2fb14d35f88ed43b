//! A handler's result as the JSON text that is sent, never as a
//! `serde_json::Value` tree: a list of thousands of tools (each schema
//! kept as its raw text, `switchboard_types::Schema`) would be a map tree
//! of ten times its size. The result is serialized once, into a buffer of
//! its exact size, and what the 2026-07-28 revision adds to it
//! (`resultType`, caching hints, the server's identity in `_meta`) is
//! spliced into that text in place.

use std::io;

use serde::Serialize;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use switchboard_types::jsonrpc::ErrorObject;
use switchboard_types::{codes, meta};

fn unserializable(error: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        format!("cannot serialize the result: {error}"),
    )
}

/// Counts what is written, keeping nothing.
struct Count(usize);

impl io::Write for Count {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0 += data.len();
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `value` as JSON text, in a buffer of exactly its size: measured first,
/// so a large result is never copied into ever larger buffers on its way
/// (for a [`ServerHandler::list_json`](super::ServerHandler::list_json)
/// answer too).
///
/// # Errors
/// What serializing `value` fails with.
pub fn exact_json<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, serde_json::Error> {
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value)?;
    let mut text = Vec::with_capacity(count.0);
    serde_json::to_writer(&mut text, value)?;
    let text = String::from_utf8(text).map_err(serde::ser::Error::custom)?;
    RawValue::from_string(text)
}

/// [`exact_json`], failing as the answer's error.
pub(super) fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, ErrorObject> {
    exact_json(value).map_err(unserializable)
}

/// The members of a JSON object, in order, their values as they lie in
/// the text.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Each)
    }
}

impl Members<'_> {
    /// The value of member `key` (the last, if the object repeats it, as
    /// a parser reading it into a map keeps).
    fn get(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// The result's `resultType`, when it is an object that has one.
pub(super) fn result_type(result: &RawValue) -> Option<String> {
    let members: Members<'_> = serde_json::from_str(result.get()).ok()?;
    serde_json::from_str(members.get("resultType")?.get()).ok()
}

/// What a stateless-era result carries, added to `result` unless the
/// handler set it: `resultType: "complete"`, for a cacheable method
/// `ttlMs: 0` and `cacheScope: "private"`, and the server's identity in
/// `_meta` (beside the handler's own entries). A result that is not an
/// object is left as it is.
pub(super) fn modern(
    result: Box<RawValue>,
    cacheable: bool,
    server_info: &Value,
) -> Result<Box<RawValue>, ErrorObject> {
    let (empty, additions, meta) = {
        let Ok(members) = serde_json::from_str::<Members<'_>>(result.get()) else {
            return Ok(result);
        };
        let mut additions: Vec<(&str, Value)> = Vec::new();
        if members.get("resultType").is_none() {
            additions.push(("resultType", Value::from("complete")));
        }
        if cacheable {
            if members.get("ttlMs").is_none() {
                additions.push(("ttlMs", Value::from(0)));
            }
            if members.get("cacheScope").is_none() {
                additions.push(("cacheScope", Value::from("private")));
            }
        }
        // The handler's `_meta`, replaced where it lies with the server's
        // identity added; another `_meta` than an object is left alone.
        let mut meta = None;
        match members.get("_meta") {
            None => additions.push((
                "_meta",
                serde_json::json!({ meta::META_SERVER_INFO: server_info }),
            )),
            Some(raw) => {
                if let Ok(Value::Object(mut entries)) = serde_json::from_str(raw.get()) {
                    entries.insert(meta::META_SERVER_INFO.to_owned(), server_info.clone());
                    let at = raw.get().as_ptr() as usize - result.get().as_ptr() as usize;
                    let text = serde_json::to_string(&entries).map_err(unserializable)?;
                    meta = Some((at..at + raw.get().len(), text));
                }
            }
        }
        (members.0.is_empty(), additions, meta)
    };
    if additions.is_empty() && meta.is_none() {
        return Ok(result);
    }
    let mut text = String::from(Box::<str>::from(result));
    if let Some((range, entries)) = meta {
        text.replace_range(range, &entries);
    }
    if !additions.is_empty() {
        let mut tail = String::new();
        for (key, value) in additions {
            if !(tail.is_empty() && empty) {
                tail.push(',');
            }
            tail.push_str(&serde_json::to_string(key).map_err(unserializable)?);
            tail.push(':');
            tail.push_str(&serde_json::to_string(&value).map_err(unserializable)?);
        }
        tail.push('}');
        let end = text.rfind('}').expect("an object ends with `}`");
        text.truncate(end);
        text.reserve_exact(tail.len());
        text.push_str(&tail);
    }
    RawValue::from_string(text).map_err(unserializable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn modern_of(text: &str, cacheable: bool) -> Value {
        let info = serde_json::json!({"name": "s", "version": "1"});
        serde_json::from_str(modern(raw(text), cacheable, &info).unwrap().get()).unwrap()
    }

    #[test]
    fn results_are_serialized_whole_and_exactly() {
        let value = serde_json::json!({"tools": [{"name": "a"}], "x": "é\n"});
        let text = to_raw(&value).unwrap();
        assert_eq!(text.get(), serde_json::to_string(&value).unwrap());
    }

    #[test]
    fn modern_results_get_what_the_revision_requires_unless_set() {
        let info = serde_json::json!({"name": "s", "version": "1"});
        // Nothing set: everything added, in this order, after the rest.
        let text = modern(raw(r#"{"tools":[]}"#), true, &info).unwrap();
        assert_eq!(
            text.get(),
            r#"{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#
        );
        // An empty object, not cacheable.
        assert_eq!(
            modern_of("{}", false),
            serde_json::json!({"resultType": "complete", "_meta": {meta::META_SERVER_INFO: info}})
        );
        // What the handler set stays; its `_meta` keeps its place and entries.
        let text = modern(
            raw(r#"{"resultType":"input_required","_meta":{"a":1},"ttlMs":5,"cacheScope":"public","b":[1]}"#),
            true,
            &info,
        )
        .unwrap();
        assert_eq!(
            text.get(),
            r#"{"resultType":"input_required","_meta":{"a":1,"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"ttlMs":5,"cacheScope":"public","b":[1]}"#
        );
        // A `_meta` that is not an object is left alone; a result that is
        // not an object, too.
        assert_eq!(modern_of(r#"{"_meta":null}"#, false)["_meta"], Value::Null);
        assert_eq!(modern(raw("[1]"), true, &info).unwrap().get(), "[1]");
        // Whitespace around, as a handler's own text may have.
        assert_eq!(
            modern_of(" { \"a\" : 1 } ", false),
            serde_json::json!({"a": 1, "resultType": "complete", "_meta": {meta::META_SERVER_INFO: info}})
        );
    }

    #[test]
    fn the_result_type_is_read_from_the_top_level_only() {
        assert_eq!(
            result_type(&raw(
                r#"{"a":{"resultType":"x"},"resultType":"input_required"}"#
            )),
            Some("input_required".to_owned())
        );
        assert_eq!(result_type(&raw(r#"{"a":{"resultType":"x"}}"#)), None);
        assert_eq!(result_type(&raw("[]")), None);
    }
}
