//! The `requestState` a 2026-07-28 host gets for a 2026-07-28 backend's
//! `input_required` round: the backend's own `requestState`, which
//! server and tool (or prompt, or resource) the round is of, a digest of
//! the arguments, and whether the user allowed the call under the tool
//! policy — sealed with ChaCha20-Poly1305 under a key of this gateway
//! process, so a host can neither read nor change it. Nothing is kept
//! per call: the host's retry carries the whole round back, for at most
//! [`ROUND_TTL`].

use std::sync::Arc;
use std::time::Duration;

use aws_lc_rs::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use serde::{Deserialize, Serialize};

/// What a sealed state starts with (a parked call's state is hex only).
pub(crate) const SEALED_PREFIX: &str = "g1.";

/// How long a sealed round is good for after it was issued.
pub(crate) const ROUND_TTL: Duration = Duration::from_secs(600);

/// The most of a backend's own `requestState` a sealed round carries, in
/// bytes; a backend that needs more gets its call failed with the reason.
pub(crate) const MAX_BACKEND_STATE: usize = 64 * 1024;

const AAD: &[u8] = b"switchboard gateway round v1";

/// One backend round, as the host carries it between its retries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Round {
    /// `tools/call`, `prompts/get` or `resources/read`.
    #[serde(rename = "m")]
    pub(crate) method: String,
    /// The backend.
    #[serde(rename = "s")]
    pub(crate) server: String,
    /// The tool or prompt name, or the URI, the host asked for.
    #[serde(rename = "n")]
    pub(crate) name: String,
    /// SHA-256 of the arguments' JSON text, hex.
    #[serde(rename = "d")]
    pub(crate) digest: String,
    /// The user allowed the call when the tool policy asked.
    #[serde(rename = "a", default)]
    pub(crate) approved: bool,
    /// The backend's own `requestState`.
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub(crate) state: Option<String>,
    /// Issued at, seconds since the Unix epoch.
    #[serde(rename = "t")]
    pub(crate) issued: u64,
}

/// Why a host's `requestState` is refused.
#[derive(Debug, PartialEq)]
pub(crate) enum Unsealed {
    /// Not one this gateway process sealed, or changed since.
    Tampered,
    /// Older than [`ROUND_TTL`].
    Expired,
}

/// The key rounds are sealed with: random, of this process, unless
/// replicas share one ([`Sealer::shared`]).
#[derive(Clone)]
pub(crate) struct Sealer(Option<Arc<LessSafeKey>>);

impl Sealer {
    /// Rounds sealed with `key`: any gateway given the same key opens
    /// them, so a host's retry may reach another replica.
    pub(crate) fn shared(key: &[u8; 32]) -> Self {
        let key = UnboundKey::new(&CHACHA20_POLY1305, key).expect("a 32-byte key");
        Self(Some(Arc::new(LessSafeKey::new(key))))
    }
}

impl Default for Sealer {
    fn default() -> Self {
        let mut bytes = [0u8; 32];
        if aws_lc_rs::rand::fill(&mut bytes).is_err() {
            // No randomness: no round is sealed (calls are answered
            // with the reason), rather than one under a guessable key.
            return Self(None);
        }
        let key = UnboundKey::new(&CHACHA20_POLY1305, &bytes).expect("a 32-byte key");
        Self(Some(Arc::new(LessSafeKey::new(key))))
    }
}

pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// SHA-256 of `arguments`' JSON text, hex.
pub(crate) fn digest(arguments: Option<&impl Serialize>) -> String {
    let text = arguments
        .and_then(|a| serde_json::to_vec(a).ok())
        .unwrap_or_default();
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &text);
    hex(digest.as_ref())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Sealer {
    /// `round` as the host's `requestState`; `None` when it cannot be
    /// sealed (no key, or the backend's state is over
    /// [`MAX_BACKEND_STATE`]).
    pub(crate) fn seal(&self, round: &Round) -> Option<String> {
        let key = self.0.as_ref()?;
        if round
            .state
            .as_ref()
            .is_some_and(|s| s.len() > MAX_BACKEND_STATE)
        {
            return None;
        }
        let mut data = serde_json::to_vec(round).ok()?;
        let mut nonce = [0u8; 12];
        aws_lc_rs::rand::fill(&mut nonce).ok()?;
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(AAD),
            &mut data,
        )
        .ok()?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&data);
        Some(format!("{SEALED_PREFIX}{}", hex(&sealed)))
    }

    /// The round a host's `requestState` carries.
    pub(crate) fn open(&self, text: &str) -> Result<Round, Unsealed> {
        let key = self.0.as_ref().ok_or(Unsealed::Tampered)?;
        let sealed = text
            .strip_prefix(SEALED_PREFIX)
            .and_then(unhex)
            .filter(|s| s.len() > 12)
            .ok_or(Unsealed::Tampered)?;
        let (nonce, data) = sealed.split_at(12);
        let mut data = data.to_vec();
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| Unsealed::Tampered)?;
        let plain = key
            .open_in_place(nonce, Aad::from(AAD), &mut data)
            .map_err(|_| Unsealed::Tampered)?;
        let round: Round = serde_json::from_slice(plain).map_err(|_| Unsealed::Tampered)?;
        if now_secs().saturating_sub(round.issued) > ROUND_TTL.as_secs() {
            return Err(Unsealed::Expired);
        }
        Ok(round)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round() -> Round {
        Round {
            method: "tools/call".into(),
            server: "suite".into(),
            name: "test_tool".into(),
            digest: digest(Some(&serde_json::json!({"a": 1}))),
            approved: true,
            state: Some("backend's own".into()),
            issued: now_secs(),
        }
    }

    #[test]
    fn a_sealed_round_opens_as_it_was() {
        let sealer = Sealer::default();
        let sealed = sealer.seal(&round()).unwrap();
        assert!(sealed.starts_with(SEALED_PREFIX));
        assert!(!sealed.contains("backend"), "the host cannot read it");
        assert_eq!(sealer.open(&sealed), Ok(round()));
        // Sealed twice, never the same text.
        assert_ne!(sealer.seal(&round()).unwrap(), sealed);
    }

    #[test]
    fn a_changed_or_foreign_state_is_refused() {
        let sealer = Sealer::default();
        let sealed = sealer.seal(&round()).unwrap();
        assert_eq!(
            sealer.open(&format!("{sealed}-TAMPERED")),
            Err(Unsealed::Tampered)
        );
        let mut flipped = sealed.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        assert_eq!(
            sealer.open(&String::from_utf8(flipped).unwrap()),
            Err(Unsealed::Tampered)
        );
        // Another gateway process's key.
        assert_eq!(Sealer::default().open(&sealed), Err(Unsealed::Tampered));
        assert_eq!(sealer.open("g1."), Err(Unsealed::Tampered));
        assert_eq!(sealer.open("0123abcd"), Err(Unsealed::Tampered));
    }

    #[test]
    fn an_old_round_has_expired() {
        let sealer = Sealer::default();
        let mut old = round();
        old.issued = now_secs() - ROUND_TTL.as_secs() - 5;
        let sealed = sealer.seal(&old).unwrap();
        assert_eq!(sealer.open(&sealed), Err(Unsealed::Expired));
    }

    #[test]
    fn a_backend_state_over_the_limit_is_not_sealed() {
        let mut big = round();
        big.state = Some("x".repeat(MAX_BACKEND_STATE + 1));
        assert!(Sealer::default().seal(&big).is_none());
    }
}
