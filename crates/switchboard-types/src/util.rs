//! Crate-private serde helpers.

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::JsonObject;

/// Serializes `inner` with a leading `"type"` key: the tag lives on the enum,
/// not on the struct, so struct literals stay free of constant fields.
#[derive(Serialize)]
pub(crate) struct TypeTagged<'a, T: Serialize> {
    #[serde(rename = "type")]
    pub(crate) kind: &'a str,
    #[serde(flatten)]
    pub(crate) inner: &'a T,
}

/// For `Option<Option<T>>` fields: absent is `None`, `null` is `Some(None)`.
pub(crate) fn double_option<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// Removes `key` keeping the order of the remaining keys.
pub(crate) fn take(map: &mut JsonObject, key: &str) -> Option<Value> {
    map.shift_remove(key)
}

/// Converts an object into `T`, naming `what` in the error.
pub(crate) fn from_object<T: DeserializeOwned, E: de::Error>(
    map: JsonObject,
    what: &str,
) -> Result<T, E> {
    serde_json::from_value(Value::Object(map))
        .map_err(|e| E::custom(format!("invalid {what}: {e}")))
}

/// `Vec<(String, T)>` as a JSON object, keeping key order (a form's fields
/// are shown in the order the server wrote them).
pub(crate) mod ordered_map {
    use std::fmt;
    use std::marker::PhantomData;

    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<S: Serializer, T: Serialize>(
        entries: &[(String, T)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(entries.len()))?;
        for (key, value) in entries {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        deserializer: D,
    ) -> Result<Vec<(String, T)>, D::Error> {
        struct EntriesVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for EntriesVisitor<T> {
            type Value = Vec<(String, T)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::with_capacity(access.size_hint().unwrap_or(0).min(256));
                while let Some(entry) = access.next_entry::<String, T>()? {
                    entries.push(entry);
                }
                Ok(entries)
            }
        }
        deserializer.deserialize_map(EntriesVisitor(PhantomData))
    }
}

/// Writes an integral `f64` as an integer, so `50` read into an `f64`
/// goes back out as `50`, not `50.0`.
pub(crate) fn ser_f64<S: serde::Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    // 2^53: beyond it not every integer is representable, so keep the float.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if value.fract() == 0.0 && value.abs() < EXACT {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

/// [`ser_f64`] for an optional field (pair with `skip_serializing_if`).
pub(crate) fn ser_opt_f64<S: serde::Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => ser_f64(value, serializer),
        None => serializer.serialize_none(),
    }
}
