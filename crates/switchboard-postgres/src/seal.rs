//! Secrets at rest: AES-256-GCM under the state key, each value bound to
//! the row it belongs to (its table and key columns as associated data),
//! so a sealed value copied to another row — another user's, another
//! server's — does not open, and neither does one changed by a byte.

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};

/// The key that seals what the database keeps: 32 bytes, given as 64 hex
/// digits (`StateKey::from_hex`); every replica sharing the database needs
/// the same one. The database never sees it.
pub struct StateKey {
    aead: LessSafeKey,
    /// Keys for other uses, derived from the same 32 bytes (HMAC-SHA256
    /// of the key over a label): the audit chain's MAC key and its
    /// arguments' salt. The bytes themselves are not kept.
    audit_key: [u8; 32],
    audit_salt: [u8; 32],
    /// The key of [`StateKey::name_digest`].
    name_key: [u8; 32],
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey([redacted])")
    }
}

/// Why a state key or a sealed value cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The key is not 64 hex digits.
    #[error("a state key is 64 hex digits (32 bytes)")]
    BadKey,
    /// A value did not open: changed, moved from another row, or sealed
    /// with another key.
    #[error(
        "a stored value does not open with the state key: it was changed, copied from another row, or sealed with another key"
    )]
    Tampered,
    /// The system's random generator failed.
    #[error("no random nonce: the system's generator failed")]
    Random,
}

impl StateKey {
    /// The key written as 64 hex digits (surrounding white space ignored).
    ///
    /// # Errors
    /// [`SealError::BadKey`] for anything else.
    pub fn from_hex(text: &str) -> Result<Self, SealError> {
        let text = text.trim();
        if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(SealError::BadKey);
        }
        let bytes: Vec<u8> = (0..32)
            .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16))
            .collect::<Result<_, _>>()
            .map_err(|_| SealError::BadKey)?;
        Self::from_bytes(&bytes)
    }

    /// A new random key, and its hex form (to keep in a file).
    ///
    /// # Errors
    /// [`SealError::Random`] when the system gives no random bytes.
    pub fn generate() -> Result<(Self, String), SealError> {
        let mut bytes = [0u8; 32];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| SealError::Random)?;
        let hex = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok((Self::from_bytes(&bytes)?, hex))
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self, SealError> {
        let key = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| SealError::BadKey)?;
        let derive = |label: &[u8]| -> [u8; 32] {
            let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, bytes);
            let mut out = [0u8; 32];
            out.copy_from_slice(aws_lc_rs::hmac::sign(&key, label).as_ref());
            out
        };
        Ok(Self {
            aead: LessSafeKey::new(key),
            audit_key: derive(b"switchboard audit chain key v1"),
            audit_salt: derive(b"switchboard audit arguments salt v1"),
            name_key: derive(b"switchboard row names v1"),
        })
    }

    /// The audit chain's MAC key.
    pub(crate) fn audit_key(&self) -> &[u8; 32] {
        &self.audit_key
    }

    /// The salt the audit chain MACs arguments under.
    pub(crate) fn audit_salt(&self) -> &[u8; 32] {
        &self.audit_salt
    }

    /// A name that must not be kept as it is (a URL that may hold a
    /// secret) as a row's key: HMAC-SHA256 under a key derived from the
    /// state key, over `label` and `name`. The same for every replica;
    /// without the key, not even a guessed name can be matched.
    pub(crate) fn name_digest(&self, label: &str, name: &str) -> Vec<u8> {
        let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &self.name_key);
        aws_lc_rs::hmac::sign(&key, &associated(&[label, name]))
            .as_ref()
            .to_vec()
    }

    /// `plain` sealed for the row `row` names: a fresh nonce, then the
    /// ciphertext and its tag.
    pub(crate) fn seal(&self, row: &[&str], plain: &[u8]) -> Result<Vec<u8>, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| SealError::Random)?;
        let mut sealed = plain.to_vec();
        self.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(associated(row)),
                &mut sealed,
            )
            .map_err(|_| SealError::Random)?;
        let mut out = nonce.to_vec();
        out.extend(sealed);
        Ok(out)
    }

    /// What [`StateKey::seal`] sealed for the same `row`.
    pub(crate) fn open(&self, row: &[&str], sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        if sealed.len() < NONCE_LEN {
            return Err(SealError::Tampered);
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError::Tampered)?;
        let mut body = body.to_vec();
        let plain = self
            .aead
            .open_in_place(nonce, Aad::from(associated(row)), &mut body)
            .map_err(|_| SealError::Tampered)?;
        Ok(plain.to_vec())
    }
}

/// The associated data naming a row: each part's length, then the part,
/// so that no two rows' parts run together the same way.
fn associated(row: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for part in row {
        out.extend((part.len() as u64).to_be_bytes());
        out.extend(part.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_opens_only_for_its_own_row_and_unchanged() {
        let (key, hex) = StateKey::generate().unwrap();
        let row = [
            "credentials",
            "alice",
            "https://a.example/mcp",
            "https://as.example",
        ];
        let sealed = key.seal(&row, b"secret").unwrap();
        assert_eq!(key.open(&row, &sealed).unwrap(), b"secret");
        // The same key again, from its hex form.
        let again = StateKey::from_hex(&hex).unwrap();
        assert_eq!(again.open(&row, &sealed).unwrap(), b"secret");
        // Another user's row, a byte changed, a cut value, another key.
        let bob = [
            "credentials",
            "bob",
            "https://a.example/mcp",
            "https://as.example",
        ];
        assert!(matches!(key.open(&bob, &sealed), Err(SealError::Tampered)));
        let shifted = [
            "credentials",
            "alic",
            "ehttps://a.example/mcp",
            "https://as.example",
        ];
        assert!(matches!(
            key.open(&shifted, &sealed),
            Err(SealError::Tampered)
        ));
        let mut changed = sealed.clone();
        *changed.last_mut().unwrap() ^= 1;
        assert!(matches!(key.open(&row, &changed), Err(SealError::Tampered)));
        assert!(matches!(
            key.open(&row, &sealed[..5]),
            Err(SealError::Tampered)
        ));
        let (other, _) = StateKey::generate().unwrap();
        assert!(matches!(
            other.open(&row, &sealed),
            Err(SealError::Tampered)
        ));
        // Two seals of one value differ (fresh nonces).
        assert_ne!(key.seal(&row, b"secret").unwrap(), sealed);
    }

    #[test]
    fn a_key_is_64_hex_digits() {
        assert!(StateKey::from_hex(&"ab".repeat(32)).is_ok());
        assert!(StateKey::from_hex(&format!("  {}\n", "AB".repeat(32))).is_ok());
        for bad in [
            "",
            "ab",
            &"ab".repeat(31),
            &"zz".repeat(32),
            &"ab".repeat(33),
        ] {
            assert!(
                matches!(StateKey::from_hex(bad), Err(SealError::BadKey)),
                "{bad}"
            );
        }
    }
}
