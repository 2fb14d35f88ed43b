//! Crate-private macros.

/// An enum over known string values plus `Other(String)`, so a value added
/// by a later revision round-trips instead of failing the whole message.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $value:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this crate does not know, kept verbatim.
            Other(String),
        }

        impl $name {
            /// The wire string.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $value, )+
                    Self::Other(other) => other,
                }
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                match value {
                    $( $value => Self::$variant, )+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                match value.as_str() {
                    $( $value => Self::$variant, )+
                    _ => Self::Other(value),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(Self::from)
            }
        }
    };
}

/// A page of a `*/list` result: the items plus the fields every list result
/// shares (cursor, 2026-07-28 result type and caching, `_meta`, unknown fields).
macro_rules! list_result {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            #[doc = $item_doc:literal]
            pub $field:ident: Vec<$item:ty>,
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            #[doc = $item_doc]
            pub $field: Vec<$item>,
            /// The cursor for the next page; `None` on the last page.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub next_cursor: Option<String>,
            /// `complete` (2026-07-28).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub result_type: Option<$crate::meta::ResultType>,
            /// Freshness in milliseconds (2026-07-28).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub ttl_ms: Option<u64>,
            /// Who may cache it (2026-07-28).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub cache_scope: Option<$crate::meta::CacheScope>,
            /// Result metadata.
            #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
            pub meta: Option<$crate::meta::JsonObject>,
            /// Fields this crate does not know.
            #[serde(flatten)]
            pub extra: $crate::Extra,
        }
    };
}
