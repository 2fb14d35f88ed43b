//! Sealed session ids: a session-era session carried in its own
//! `Mcp-Session-Id` (ChaCha20-Poly1305), so replicas share no store.

use std::sync::Arc;
use std::time::Duration;

use crate::server::SessionState;

/// The key that seals a session-era session into its `Mcp-Session-Id`
/// (ChaCha20-Poly1305 over the version, client capabilities and client
/// info `initialize` settled, and when it was issued), so that any replica
/// given the same key serves any session: no shared store. 32 bytes.
#[derive(Clone)]
pub struct SessionKey(Arc<aws_lc_rs::aead::LessSafeKey>, Arc<aws_lc_rs::hkdf::Prk>);

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(…)")
    }
}

/// What a sealed session id carries besides the state.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Sealed {
    #[serde(flatten)]
    state: SessionState,
    /// Issued at, in seconds since the Unix epoch.
    t: u64,
    /// The user whose session it is, when hosts are users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    u: Option<String>,
}

/// The most of a client info field a sealed id keeps, in characters.
pub(super) const MAX_SEALED_FIELD: usize = 128;

/// The most a sealed id carries, in bytes of JSON (its id is about 4/3
/// of that).
pub(super) const MAX_SEALED_STATE: usize = 4096;

fn cut(text: &str) -> String {
    text.chars().take(MAX_SEALED_FIELD).collect()
}

pub(super) const SEALED_PREFIX: &str = "s1.";
pub(super) const SEALED_AAD: &[u8] = b"switchboard mcp session v1";

pub(super) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl SessionKey {
    /// A key of these 32 bytes.
    pub fn new(bytes: &[u8; 32]) -> Self {
        let key = aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::CHACHA20_POLY1305, bytes)
            .expect("a 32-byte ChaCha20-Poly1305 key");
        let derived =
            aws_lc_rs::hkdf::Salt::new(aws_lc_rs::hkdf::HKDF_SHA256, b"switchboard").extract(bytes);
        Self(
            Arc::new(aws_lc_rs::aead::LessSafeKey::new(key)),
            Arc::new(derived),
        )
    }

    /// A key of its own for `purpose`, derived from this one (HKDF-SHA256):
    /// what replicas given the same session key share for another use
    /// (the gateway's sealed rounds), without using the same key twice.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        let info = [purpose.as_bytes()];
        self.1
            .expand(&info, aws_lc_rs::hkdf::HKDF_SHA256)
            .and_then(|okm| okm.fill(&mut out))
            .expect("32 bytes are within HKDF-SHA256's output");
        out
    }

    /// A key written as 64 hexadecimal digits (surrounding whitespace
    /// ignored), as `openssl rand -hex 32` prints one.
    ///
    /// # Errors
    /// What is wrong with the text.
    pub fn from_hex(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "a session key is 64 hexadecimal digits (32 bytes; `openssl rand -hex 32`), not {} characters",
                text.len()
            ));
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(Self::new(&bytes))
    }

    /// The session id that carries `state` and its user `owner` — of its client info only
    /// the name, version and title, each cut to [`MAX_SEALED_FIELD`]
    /// characters — unless that is still more than [`MAX_SEALED_STATE`]
    /// bytes (a header that large would not be sent back).
    pub(super) fn seal(&self, state: &SessionState, owner: Option<&str>) -> Option<String> {
        let info = &state.client_info;
        let mut kept = switchboard_types::Implementation::new(cut(&info.name), cut(&info.version));
        kept.title = info.title.as_deref().map(cut);
        let state = SessionState::new(
            state.protocol_version.clone(),
            state.client_capabilities.clone(),
            kept,
        );
        let data = serde_json::to_vec(&Sealed {
            state,
            t: now_secs(),
            u: owner.map(str::to_owned),
        })
        .ok()?;
        if data.len() > MAX_SEALED_STATE {
            return None;
        }
        Some(format!(
            "{SEALED_PREFIX}{}",
            self.seal_bytes(SEALED_AAD, data)?
        ))
    }

    /// The state a session id sealed with this key carries, and its user,
    /// unless it was issued longer than `lifetime` ago.
    pub(super) fn open(
        &self,
        id: &str,
        lifetime: Duration,
    ) -> Option<(SessionState, Option<String>)> {
        let plain = self.open_bytes(SEALED_AAD, id.strip_prefix(SEALED_PREFIX)?)?;
        let sealed: Sealed = serde_json::from_slice(&plain).ok()?;
        (now_secs().saturating_sub(sealed.t) <= lifetime.as_secs())
            .then_some((sealed.state, sealed.u))
    }
}

impl SessionKey {
    /// A random key, for a server alone (replicas must share one);
    /// `None` when the system has no randomness to give.
    pub fn generate() -> Option<Self> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).ok()?;
        Some(Self::new(&bytes))
    }

    /// `value` sealed for `purpose` (ChaCha20-Poly1305, a random nonce),
    /// as URL-safe base64: for what a server hands out and must get back
    /// unchanged — a link, a cookie — to any replica given the same key.
    /// Opened only by [`open_value`](Self::open_value) with the same
    /// purpose; it carries no expiry of its own.
    pub fn seal_value(&self, purpose: &str, value: &[u8]) -> Option<String> {
        self.seal_bytes(&value_aad(purpose), value.to_vec())
    }

    /// What [`seal_value`](Self::seal_value) sealed for `purpose`; `None`
    /// for anything else (another purpose, another key, changed text).
    pub fn open_value(&self, purpose: &str, sealed: &str) -> Option<Vec<u8>> {
        self.open_bytes(&value_aad(purpose), sealed)
    }

    fn seal_bytes(&self, aad: &[u8], mut data: Vec<u8>) -> Option<String> {
        use base64::Engine as _;
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).ok()?;
        self.0
            .seal_in_place_append_tag(
                aws_lc_rs::aead::Nonce::assume_unique_for_key(nonce),
                aws_lc_rs::aead::Aad::from(aad),
                &mut data,
            )
            .ok()?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&data);
        Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sealed))
    }

    fn open_bytes(&self, aad: &[u8], text: &str) -> Option<Vec<u8>> {
        use base64::Engine as _;
        let sealed = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .ok()?;
        if sealed.len() < 12 {
            return None;
        }
        let (nonce, data) = sealed.split_at(12);
        let mut data = data.to_vec();
        let nonce = aws_lc_rs::aead::Nonce::try_assume_unique_for_key(nonce).ok()?;
        let plain = self
            .0
            .open_in_place(nonce, aws_lc_rs::aead::Aad::from(aad), &mut data)
            .ok()?;
        Some(plain.to_vec())
    }
}

/// What a sealed value is bound to besides the key: its purpose, so a
/// value sealed for one use is refused for another (and never taken for
/// a session id).
fn value_aad(purpose: &str) -> Vec<u8> {
    [
        b"switchboard sealed value v1 ".as_slice(),
        purpose.as_bytes(),
    ]
    .concat()
}

/// What a sealed session keeps of an `initialize` request.
#[derive(serde::Deserialize)]
pub(super) struct InitializeBody {
    pub(super) params: InitializeParams,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InitializeParams {
    #[serde(default)]
    pub(super) capabilities: switchboard_types::ClientCapabilities,
    pub(super) client_info: switchboard_types::Implementation,
}

/// The version an `initialize` answer chose.
#[derive(serde::Deserialize)]
pub(super) struct InitializeAnswer {
    pub(super) result: InitializeResult,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InitializeResult {
    pub(super) protocol_version: switchboard_types::ProtocolVersion,
}

#[cfg(test)]
mod tests {
    use super::SessionKey;

    #[test]
    fn a_sealed_value_opens_only_for_its_purpose_with_its_key_unchanged() {
        let key = SessionKey::new(&[7; 32]);
        let sealed = key.seal_value("cookie", b"alice").expect("sealed");
        assert_eq!(
            key.open_value("cookie", &sealed).as_deref(),
            Some(&b"alice"[..])
        );
        assert!(!sealed.contains("alice"));
        assert_eq!(key.open_value("link", &sealed), None, "another purpose");
        assert_eq!(
            SessionKey::new(&[8; 32]).open_value("cookie", &sealed),
            None,
            "another key"
        );
        let mut changed = sealed.clone().into_bytes();
        let last = changed.len() - 2;
        changed[last] = if changed[last] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).expect("ascii");
        assert_eq!(key.open_value("cookie", &changed), None, "changed text");
        assert_eq!(key.open_value("cookie", "not base64!"), None);
        assert_eq!(key.open_value("cookie", ""), None);
        // Never a session id, nor a session id a value.
        assert_eq!(
            key.open(&format!("s1.{sealed}"), std::time::Duration::MAX),
            None
        );
        assert_ne!(
            key.seal_value("cookie", b"alice"),
            Some(sealed),
            "a nonce of its own each time"
        );
        // A derived key: the same for the same key and purpose only.
        assert_eq!(
            key.derive("rounds"),
            SessionKey::new(&[7; 32]).derive("rounds")
        );
        assert_ne!(key.derive("rounds"), key.derive("other"));
        assert_ne!(
            key.derive("rounds"),
            SessionKey::new(&[8; 32]).derive("rounds")
        );
        assert_ne!(key.derive("rounds"), [7; 32]);
    }
}
