//! Protocol revisions and the two eras they belong to.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A protocol revision string such as `"2025-11-25"`.
///
/// Revisions are dates, so their string order is their age order. Unknown
/// revisions are representable: a server may answer with one, and the client
/// must be able to name it in an error.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProtocolVersion(Cow<'static, str>);

impl ProtocolVersion {
    /// The first public revision; HTTP+SSE transport.
    pub const V2024_11_05: Self = Self(Cow::Borrowed("2024-11-05"));
    /// Streamable HTTP, OAuth 2.1, JSON-RPC batches.
    pub const V2025_03_26: Self = Self(Cow::Borrowed("2025-03-26"));
    /// Structured tool output, form elicitation, `MCP-Protocol-Version` header.
    pub const V2025_06_18: Self = Self(Cow::Borrowed("2025-06-18"));
    /// The last revision with `initialize` and sessions.
    pub const V2025_11_25: Self = Self(Cow::Borrowed("2025-11-25"));
    /// The stateless revision: `server/discover`, per-request `_meta`.
    pub const V2026_07_28: Self = Self(Cow::Borrowed("2026-07-28"));

    /// The newest revision this crate knows.
    pub const LATEST: Self = Self::V2026_07_28;
    /// The newest revision that uses the `initialize` handshake.
    pub const LATEST_LEGACY: Self = Self::V2025_11_25;

    /// Every revision this crate knows, oldest first.
    pub const KNOWN: [Self; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];
    /// The legacy (session-era) revisions a client may accept from `initialize`.
    pub const LEGACY: [Self; 4] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
    ];
    /// The modern (stateless) revisions this crate speaks.
    pub const MODERN: [Self; 1] = [Self::V2026_07_28];

    /// A version from any string; it need not be known.
    pub fn new(version: impl Into<String>) -> Self {
        let version = version.into();
        Self::KNOWN
            .into_iter()
            .find(|known| known.as_str() == version)
            .unwrap_or(Self(Cow::Owned(version)))
    }

    /// The revision string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this crate knows the revision.
    pub fn is_known(&self) -> bool {
        Self::KNOWN.contains(self)
    }

    /// The era of this revision: [`Era::Modern`] for 2026-07-28 and later.
    pub fn era(&self) -> Era {
        if self.as_str() >= Self::V2026_07_28.as_str() {
            Era::Modern
        } else {
            Era::Legacy
        }
    }
}

impl fmt::Debug for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for ProtocolVersion {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::new)
    }
}

/// The protocol eras (see `basic/versioning.mdx` of 2026-07-28): two so
/// far; a later revision may add another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Era {
    /// Session era, 2024-11-05 … 2025-11-25: an `initialize` handshake.
    Legacy,
    /// Stateless era, 2026-07-28 and later: `server/discover`, per-request `_meta`.
    Modern,
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_versions_are_interned_and_ordered() {
        let v = ProtocolVersion::new("2025-06-18");
        assert_eq!(v, ProtocolVersion::V2025_06_18);
        assert!(v.is_known());
        assert!(ProtocolVersion::V2024_11_05 < ProtocolVersion::V2026_07_28);
        assert_eq!(ProtocolVersion::V2025_11_25.era(), Era::Legacy);
        assert_eq!(ProtocolVersion::V2026_07_28.era(), Era::Modern);
        assert!(!ProtocolVersion::new("1900-01-01").is_known());
    }

    #[test]
    fn serializes_as_plain_string() {
        let json = serde_json::to_string(&ProtocolVersion::V2026_07_28).unwrap();
        assert_eq!(json, "\"2026-07-28\"");
        let back: ProtocolVersion = serde_json::from_str("\"2099-01-01\"").unwrap();
        assert_eq!(back.as_str(), "2099-01-01");
    }
}
