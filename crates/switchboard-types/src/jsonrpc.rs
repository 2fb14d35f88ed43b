//! The JSON-RPC 2.0 envelope, kept lossless and cheap to route.
//!
//! Params and results stay as [`RawValue`] until someone needs them, so the
//! engine can route a 16 MiB result without building a tree for it.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A request id: a number or a string, never null.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// A numeric id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(value: i64) -> Self {
        RequestId::Number(value)
    }
}

impl From<&str> for RequestId {
    fn from(value: &str) -> Self {
        RequestId::String(value.to_owned())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl de::Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or integer request id")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("request id out of range"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RequestId, E> {
                // Some peers echo integer ids as floats (`1.0`); accept exact integers only.
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    Ok(RequestId::Number(v as i64))
                } else {
                    Err(E::custom("request id must be an integer"))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
                Ok(RequestId::String(v))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code; see [`crate::codes`].
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Additional information, kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ErrorObject {
    /// An error object without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// A request: has an id and a method.
#[derive(Clone, Debug)]
pub struct JsonRpcRequest {
    /// The id the response will carry.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params, unparsed.
    pub params: Option<Box<RawValue>>,
}

/// A notification: a method without an id.
#[derive(Clone, Debug)]
pub struct JsonRpcNotification {
    /// The method name.
    pub method: String,
    /// The params, unparsed.
    pub params: Option<Box<RawValue>>,
}

/// A response: a result or an error for one request id.
#[derive(Clone, Debug)]
pub struct JsonRpcResponse {
    /// The id of the request answered; `None` only for errors about a
    /// request whose id could not be read.
    pub id: Option<RequestId>,
    /// The result, unparsed, or the error.
    pub outcome: Result<Box<RawValue>, ErrorObject>,
}

/// One JSON-RPC message.
#[derive(Clone, Debug)]
pub enum JsonRpcMessage {
    /// A request expecting a response.
    Request(JsonRpcRequest),
    /// A notification.
    Notification(JsonRpcNotification),
    /// A response to an earlier request.
    Response(JsonRpcResponse),
}

/// What one line or body held: a message, or a batch of them (2025-03-26).
#[derive(Clone, Debug)]
pub enum Incoming {
    /// A single message.
    Single(JsonRpcMessage),
    /// A JSON-RPC batch.
    Batch(Vec<JsonRpcMessage>),
}

impl IntoIterator for Incoming {
    type Item = JsonRpcMessage;
    type IntoIter = std::vec::IntoIter<JsonRpcMessage>;

    fn into_iter(self) -> Self::IntoIter {
        match self {
            Incoming::Single(message) => vec![message].into_iter(),
            Incoming::Batch(messages) => messages.into_iter(),
        }
    }
}

/// Why bytes were not a JSON-RPC message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// Not JSON at all, or JSON of the wrong shape for an envelope field.
    #[error("invalid JSON-RPC message")]
    Json(#[source] serde_json::Error),
    /// `jsonrpc` was missing or not `"2.0"`.
    #[error("unsupported jsonrpc version {0:?} (only \"2.0\" is accepted)")]
    Version(Option<String>),
    /// Valid JSON-RPC framing, but neither request, notification nor response.
    #[error("not a JSON-RPC message: {0}")]
    Shape(&'static str),
    /// An empty batch array.
    #[error("empty JSON-RPC batch")]
    EmptyBatch,
}

/// The envelope as it arrives: every field optional, so the shape can be
/// judged; params and result borrow the text they arrived in.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Option<RequestId>>,
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

/// Distinguishes an absent field (`None`) from `null` (`Some(None)`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<RequestId>>, D::Error> {
    Option::<RequestId>::deserialize(d).map(Some)
}

impl<'a> Envelope<'a> {
    fn into_message(self) -> Result<MessageRef<'a>, ParseError> {
        match self.jsonrpc.as_deref() {
            Some("2.0") => {}
            other => return Err(ParseError::Version(other.map(str::to_owned))),
        }
        match (self.method, self.id) {
            (Some(_), _) if self.result.is_some() || self.error.is_some() => Err(
                ParseError::Shape("a message with a method cannot carry a result or error"),
            ),
            (Some(method), Some(Some(id))) => Ok(MessageRef::Request(JsonRpcRequest {
                id,
                method,
                params: self.params.map(RawValue::to_owned),
            })),
            (Some(_), Some(None)) => Err(ParseError::Shape("a request id cannot be null")),
            (Some(method), None) => Ok(MessageRef::Notification(JsonRpcNotification {
                method,
                params: self.params.map(RawValue::to_owned),
            })),
            (None, id) => {
                let outcome = match (self.result, self.error) {
                    (Some(result), None) => Ok(result),
                    (None, Some(error)) => Err(error),
                    (Some(_), Some(_)) => {
                        return Err(ParseError::Shape(
                            "a response cannot carry both result and error",
                        ));
                    }
                    (None, None) => {
                        return Err(ParseError::Shape(
                            "no method, result or error: neither request, notification nor response",
                        ));
                    }
                };
                let id = match id {
                    Some(id) => id,
                    None => return Err(ParseError::Shape("a response must carry an id")),
                };
                if id.is_none() && outcome.is_ok() {
                    return Err(ParseError::Shape("a result response needs a non-null id"));
                }
                Ok(MessageRef::Response(ResponseRef { id, outcome }))
            }
        }
    }
}

/// A response whose result still lies in the text it arrived in.
#[derive(Clone, Debug)]
pub struct ResponseRef<'a> {
    /// As [`JsonRpcResponse::id`].
    pub id: Option<RequestId>,
    /// The result, borrowed from the message's text, or the error.
    pub outcome: Result<&'a RawValue, ErrorObject>,
}

/// One JSON-RPC message whose response result (the part that can be large)
/// is borrowed, not copied: a reader can hand it on without a second copy.
#[derive(Clone, Debug)]
pub enum MessageRef<'a> {
    /// A request expecting a response.
    Request(JsonRpcRequest),
    /// A notification.
    Notification(JsonRpcNotification),
    /// A response to an earlier request.
    Response(ResponseRef<'a>),
}

impl MessageRef<'_> {
    /// The message with its result copied out.
    pub fn into_owned(self) -> JsonRpcMessage {
        match self {
            MessageRef::Request(request) => JsonRpcMessage::Request(request),
            MessageRef::Notification(notification) => JsonRpcMessage::Notification(notification),
            MessageRef::Response(ResponseRef { id, outcome }) => {
                JsonRpcMessage::Response(JsonRpcResponse {
                    id,
                    outcome: outcome.map(RawValue::to_owned),
                })
            }
        }
    }
}

/// What one line or body held, borrowing from it: see [`MessageRef`].
#[derive(Clone, Debug)]
pub enum IncomingRef<'a> {
    /// A single message.
    Single(MessageRef<'a>),
    /// A JSON-RPC batch.
    Batch(Vec<MessageRef<'a>>),
}

impl<'a> IncomingRef<'a> {
    /// Parses a line or body: one message or a batch array. One pass over
    /// the text; a result is located, not copied.
    ///
    /// # Errors
    /// As [`Incoming::from_slice`].
    pub fn from_slice(bytes: &'a [u8]) -> Result<Self, ParseError> {
        Self::parse(bytes, serde_json::Deserializer::from_slice(bytes))
    }

    /// As [`IncomingRef::from_slice`], for text already known to be UTF-8
    /// (serde_json then skips checking it again).
    ///
    /// # Errors
    /// As [`Incoming::from_slice`].
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &'a str) -> Result<Self, ParseError> {
        Self::parse(text.as_bytes(), serde_json::Deserializer::from_str(text))
    }

    /// One message or a batch from `json` (whose bytes are `bytes`), and
    /// nothing after it.
    fn parse<R: serde_json::de::Read<'a>>(
        bytes: &[u8],
        mut json: serde_json::Deserializer<R>,
    ) -> Result<Self, ParseError> {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        let incoming = if first == Some(&b'[') {
            let envelopes =
                Vec::<Envelope<'a>>::deserialize(&mut json).map_err(ParseError::Json)?;
            if envelopes.is_empty() {
                return Err(ParseError::EmptyBatch);
            }
            let messages = envelopes
                .into_iter()
                .map(Envelope::into_message)
                .collect::<Result<_, _>>()?;
            IncomingRef::Batch(messages)
        } else {
            IncomingRef::Single(
                Envelope::deserialize(&mut json)
                    .map_err(ParseError::Json)?
                    .into_message()?,
            )
        };
        json.end().map_err(ParseError::Json)?;
        Ok(incoming)
    }

    /// The messages with their results copied out.
    pub fn into_owned(self) -> Incoming {
        match self {
            IncomingRef::Single(message) => Incoming::Single(message.into_owned()),
            IncomingRef::Batch(messages) => {
                Incoming::Batch(messages.into_iter().map(MessageRef::into_owned).collect())
            }
        }
    }
}

impl JsonRpcMessage {
    /// Parses one message (not a batch).
    ///
    /// # Errors
    /// [`ParseError`] when the bytes are not a single JSON-RPC 2.0 message.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ParseError> {
        let envelope: Envelope<'_> = serde_json::from_slice(bytes).map_err(ParseError::Json)?;
        envelope.into_message().map(MessageRef::into_owned)
    }

    /// Serializes the message to compact JSON, into a buffer sized for it
    /// up front (a large result or params is copied once, not into ever
    /// larger buffers).
    pub fn to_vec(&self) -> Vec<u8> {
        let raw = |value: &Option<Box<RawValue>>| value.as_ref().map_or(0, |v| v.get().len());
        let hint = match self {
            JsonRpcMessage::Request(r) => r.method.len() + raw(&r.params),
            JsonRpcMessage::Notification(n) => n.method.len() + raw(&n.params),
            JsonRpcMessage::Response(r) => r.outcome.as_ref().map_or(0, |v| v.get().len()),
        };
        let mut buf = Vec::with_capacity(hint + 128);
        serde_json::to_writer(&mut buf, self).expect("a JSON-RPC message always serializes");
        buf
    }

    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            JsonRpcMessage::Request(r) => Some(&r.method),
            JsonRpcMessage::Notification(n) => Some(&n.method),
            JsonRpcMessage::Response(_) => None,
        }
    }
}

impl Incoming {
    /// Parses a line or body: one message or a batch array.
    ///
    /// # Errors
    /// [`ParseError`] for anything that is not JSON-RPC 2.0; one bad element
    /// fails a whole batch, since its framing can no longer be trusted.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ParseError> {
        IncomingRef::from_slice(bytes).map(IncomingRef::into_owned)
    }
}

fn serialize_raw_field<M: SerializeMap>(
    map: &mut M,
    key: &'static str,
    value: &Option<Box<RawValue>>,
) -> Result<(), M::Error> {
    if let Some(value) = value {
        map.serialize_entry(key, value)?;
    }
    Ok(())
}

impl Serialize for JsonRpcMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        match self {
            JsonRpcMessage::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                serialize_raw_field(&mut map, "params", &r.params)?;
            }
            JsonRpcMessage::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                serialize_raw_field(&mut map, "params", &n.params)?;
            }
            JsonRpcMessage::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                match &r.outcome {
                    Ok(result) => map.serialize_entry("result", result)?,
                    Err(error) => map.serialize_entry("error", error)?,
                }
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<JsonRpcMessage, ParseError> {
        JsonRpcMessage::from_slice(s.as_bytes())
    }

    #[test]
    fn classifies_messages() {
        let req = parse(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"a":1}}"#);
        assert!(matches!(
            req,
            Ok(JsonRpcMessage::Request(JsonRpcRequest {
                id: RequestId::Number(7),
                ..
            }))
        ));
        let note = parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(matches!(note, Ok(JsonRpcMessage::Notification(_))));
        let resp = parse(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#);
        assert!(matches!(
            resp,
            Ok(JsonRpcMessage::Response(JsonRpcResponse {
                id: Some(RequestId::String(_)),
                outcome: Ok(_)
            }))
        ));
        let err = parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#);
        assert!(matches!(
            err,
            Ok(JsonRpcMessage::Response(JsonRpcResponse {
                id: None,
                outcome: Err(_)
            }))
        ));
    }

    #[test]
    fn rejects_wrong_version_and_shapes() {
        assert!(
            matches!(parse(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#), Err(ParseError::Version(Some(v))) if v == "1.0")
        );
        assert!(matches!(
            parse(r#"{"id":1,"method":"x"}"#),
            Err(ParseError::Version(None))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1}"#),
            Err(ParseError::Shape(_))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","result":{}}"#),
            Err(ParseError::Shape(_))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}"#),
            Err(ParseError::Shape(_))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#),
            Err(ParseError::Shape(_))
        ));
        assert!(matches!(parse("not json"), Err(ParseError::Json(_))));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#),
            Err(ParseError::Json(_))
        ));
    }

    #[test]
    fn round_trips_raw_payload_bytes() {
        let line = r##"{"jsonrpc":"2.0","id":3,"result":{"z":1,"a":[1,2,{"$ref":"#/x"}]}}"##;
        let message = parse(line).unwrap();
        assert_eq!(String::from_utf8(message.to_vec()).unwrap(), line);
    }

    #[test]
    fn a_borrowed_result_lies_in_the_text_it_arrived_in() {
        let text =
            r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"a\"b"}]}}"#;
        let Ok(IncomingRef::Single(MessageRef::Response(response))) = IncomingRef::from_str(text)
        else {
            panic!("a response");
        };
        let result = response.outcome.unwrap().get();
        assert_eq!(result, r#"{"content":[{"type":"text","text":"a\"b"}]}"#);
        // The same bytes, not a copy of them.
        let start = text.find(r#"{"content""#).unwrap();
        assert!(std::ptr::eq(result, &text[start..text.len() - 1]));
        // Every shape judged as the owned parse judges it.
        for bad in [
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            "[]",
        ] {
            assert!(IncomingRef::from_str(bad).is_err(), "{bad}");
            assert!(IncomingRef::from_slice(bad.as_bytes()).is_err(), "{bad}");
            assert!(Incoming::from_slice(bad.as_bytes()).is_err(), "{bad}");
        }
        let batch = r#"[{"jsonrpc":"2.0","id":1,"result":[1]},{"jsonrpc":"2.0","method":"n","params":{"x":2}}]"#;
        let Ok(IncomingRef::Batch(messages)) = IncomingRef::from_str(batch) else {
            panic!("a batch");
        };
        let owned: Vec<_> = messages.into_iter().map(MessageRef::into_owned).collect();
        assert_eq!(
            String::from_utf8(owned[0].to_vec()).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"result":[1]}"#
        );
        assert_eq!(
            String::from_utf8(owned[1].to_vec()).unwrap(),
            r#"{"jsonrpc":"2.0","method":"n","params":{"x":2}}"#
        );
    }

    #[test]
    fn parses_batches() {
        let batch = Incoming::from_slice(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"}]"#,
        )
        .unwrap();
        assert_eq!(batch.into_iter().count(), 2);
        assert!(matches!(
            Incoming::from_slice(b" []"),
            Err(ParseError::EmptyBatch)
        ));
    }
}
