//! A result's JSON text where it arrived: a range of the message's text,
//! shared, so a large result is neither copied nor scanned again before the
//! caller parses it.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

/// The JSON text of a request's result, exactly as the server sent it.
///
/// It is a range of the message it arrived in (one UTF-8 string, checked
/// once when it arrived), not a copy: the envelope is parsed once to find
/// it, and the caller parses the result itself from here. Cloning is cheap
/// (the text is shared).
#[derive(Clone)]
pub struct RawResult {
    text: Arc<String>,
    range: Range<usize>,
}

impl RawResult {
    /// `range` of `text`, which must be a whole JSON value.
    pub(crate) fn within(text: Arc<String>, range: Range<usize>) -> Self {
        debug_assert!(text.get(range.clone()).is_some());
        Self { text, range }
    }

    /// The result's JSON text.
    pub fn get(&self) -> &str {
        // The range came from the parser, on character boundaries.
        self.text.get(self.range.clone()).unwrap_or("null")
    }

    /// Parses the result as `T`.
    ///
    /// # Errors
    /// When the result is not a `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(self.get())
    }

    /// The result as a [`RawValue`] of its own (a copy).
    pub fn to_raw_value(&self) -> Box<RawValue> {
        // The text was parsed as one JSON value when it arrived.
        RawValue::from_string(self.get().to_owned()).unwrap_or_else(|_| RawValue::NULL.to_owned())
    }

    /// How many bytes of JSON the result is.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Never true for a result that arrived (JSON has no empty value);
    /// here for the `len` convention.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }
}

impl From<Box<RawValue>> for RawResult {
    fn from(raw: Box<RawValue>) -> Self {
        let text: Box<str> = raw.into();
        let text = text.into_string();
        let range = 0..text.len();
        Self {
            text: Arc::new(text),
            range,
        }
    }
}

impl From<&RawValue> for RawResult {
    fn from(raw: &RawValue) -> Self {
        Self::from(raw.to_owned())
    }
}

impl fmt::Debug for RawResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RawResult").field(&self.get()).finish()
    }
}

impl fmt::Display for RawResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl serde::Serialize for RawResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_raw_value().serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_reads_its_own_text_and_converts() {
        let text = Arc::new(r#"{"jsonrpc":"2.0","id":1,"result":{"a":[1,2]}}"#.to_owned());
        let start = text.find(r#"{"a""#).unwrap();
        let raw = RawResult::within(text.clone(), start..text.len() - 1);
        assert_eq!(raw.get(), r#"{"a":[1,2]}"#);
        assert_eq!(raw.len(), 11);
        assert_eq!(raw.to_raw_value().get(), r#"{"a":[1,2]}"#);
        let value: serde_json::Value = raw.parse().unwrap();
        assert_eq!(value["a"][1], 2);
        let owned = RawResult::from(RawValue::from_string("[true]".to_owned()).unwrap());
        assert_eq!(owned.get(), "[true]");
        assert_eq!(format!("{owned}"), "[true]");
    }
}
