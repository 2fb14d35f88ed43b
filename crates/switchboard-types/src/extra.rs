//! [`Extra`]: the members of an object that its type does not name, kept
//! so that nothing a peer sent is lost on the way through.
//!
//! Each member is kept as its JSON text, not as a `serde_json::Value`
//! tree: a list of thousands of tools, resources or prompts is held in
//! bulk by clients, the hub and the gateway, and an unknown member parsed
//! into a tree (with `preserve_order`, an `IndexMap` per object and 80
//! bytes per value) costs many times its text. An object without unknown
//! members costs one pointer.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::JsonObject;

/// The unknown members of an object, in the order they came, each as its
/// JSON text (serialized back as it was, compacted). Read one with
/// [`Extra::get`] (its text) or [`Extra::value`] (parsed).
#[derive(Clone, Default)]
pub struct Extra(Option<Box<Members>>);

/// Each member's name and text, in order.
type Members = Vec<(String, Box<RawValue>)>;

impl Extra {
    /// No members.
    #[must_use]
    pub const fn new() -> Self {
        Self(None)
    }

    fn members(&self) -> &[(String, Box<RawValue>)] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }

    /// Whether there are no members.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.members().is_empty()
    }

    /// How many members there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.members().len()
    }

    /// Whether member `key` is here.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Member `key`'s JSON text.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.members()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| &**v)
    }

    /// Member `key`, parsed.
    #[must_use]
    pub fn value(&self, key: &str) -> Option<Value> {
        self.get(key).map(parse)
    }

    /// Sets member `key` to `value` (in place when it is already here, as
    /// a map keeping insertion order does).
    ///
    /// # Panics
    /// Never for a `Value`; for a `T` whose `Serialize` fails (a map with
    /// non-string keys), as `serde_json::json!` does.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Serialize) {
        let value = serde_json::value::to_raw_value(&value)
            .expect("a value that serializes to JSON (string keys only)");
        self.insert_raw(key.into(), value);
    }

    fn insert_raw(&mut self, key: String, value: Box<RawValue>) {
        let members = self.0.get_or_insert_with(Box::default);
        match members.iter_mut().find(|(k, _)| *k == key) {
            Some((_, old)) => *old = value,
            None => members.push((key, value)),
        }
    }

    /// Removes member `key`, giving back its text.
    pub fn remove(&mut self, key: &str) -> Option<Box<RawValue>> {
        let members = self.0.as_mut()?;
        let at = members.iter().position(|(k, _)| k == key)?;
        let (_, value) = members.remove(at);
        if members.is_empty() {
            self.0 = None;
        }
        Some(value)
    }

    /// The members, in order, as JSON text.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.into_iter()
    }

    /// The members as a map tree.
    #[must_use]
    pub fn to_object(&self) -> JsonObject {
        self.iter().map(|(k, v)| (k.to_owned(), parse(v))).collect()
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a str, &'a RawValue);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Box<RawValue>)>,
        fn(&'a (String, Box<RawValue>)) -> (&'a str, &'a RawValue),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.members().iter().map(|(k, v)| (k.as_str(), &**v))
    }
}

fn parse(text: &RawValue) -> Value {
    serde_json::from_str(text.get()).expect("kept text is JSON")
}

impl From<JsonObject> for Extra {
    fn from(object: JsonObject) -> Self {
        object.into_iter().collect()
    }
}

impl FromIterator<(String, Value)> for Extra {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(members: I) -> Self {
        let mut extra = Self::new();
        for (key, value) in members {
            extra.insert(key, value);
        }
        extra
    }
}

/// Equal when both hold the same members with equal values, in any order
/// (as `serde_json::Map` compares).
impl PartialEq for Extra {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.iter().all(|(key, value)| {
                other.get(key).is_some_and(|theirs| {
                    theirs.get() == value.get() || parse(theirs) == parse(value)
                })
            })
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (k, v.get())))
            .finish()
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (key, value) in self.iter() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Extra;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Extra, A::Error> {
                let mut extra = Extra::new();
                // Each value goes through a tree for a moment: under
                // `#[serde(flatten)]` the members come buffered, and
                // `RawValue` reads only from JSON text.
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    let text = serde_json::value::to_raw_value(&value)
                        .map_err(serde::de::Error::custom)?;
                    extra.insert_raw(key, text);
                }
                Ok(extra)
            }
        }
        deserializer.deserialize_map(Members)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn members_keep_their_order_and_their_values() {
        let extra: Extra =
            serde_json::from_value(json!({"b": {"x": [1, 2.5, null]}, "a": "text", "b2": true}))
                .unwrap();
        assert_eq!(extra.len(), 3);
        assert_eq!(
            serde_json::to_string(&extra).unwrap(),
            r#"{"b":{"x":[1,2.5,null]},"a":"text","b2":true}"#
        );
        assert_eq!(extra.value("a"), Some(json!("text")));
        assert_eq!(extra.get("b").unwrap().get(), r#"{"x":[1,2.5,null]}"#);
        assert!(extra.get("c").is_none());
    }

    #[test]
    fn insert_replaces_in_place_and_remove_empties() {
        let mut extra = Extra::new();
        assert!(extra.is_empty());
        extra.insert("a", 1);
        extra.insert("b", json!({"k": "v"}));
        extra.insert("a", "again");
        assert_eq!(
            serde_json::to_string(&extra).unwrap(),
            r#"{"a":"again","b":{"k":"v"}}"#
        );
        assert_eq!(extra.remove("a").unwrap().get(), r#""again""#);
        assert!(extra.remove("a").is_none());
        extra.remove("b");
        assert!(extra.is_empty());
        assert_eq!(extra, Extra::new());
    }

    #[test]
    fn equality_ignores_order_and_spelling() {
        let one: Extra = serde_json::from_str(r#"{"a": 1, "b": [1,2]}"#).unwrap();
        let two: Extra = serde_json::from_str(r#"{"b":[1, 2],"a":1}"#).unwrap();
        assert_eq!(one, two);
        let three: Extra = serde_json::from_str(r#"{"a": 2, "b": [1,2]}"#).unwrap();
        assert_ne!(one, three);
        assert_eq!(
            one.to_object(),
            json!({"a": 1, "b": [1, 2]}).as_object().unwrap().clone()
        );
    }

    #[test]
    fn an_object_without_unknown_members_costs_a_pointer() {
        assert_eq!(size_of::<Extra>(), size_of::<usize>());
    }
}
