//! The test authorization server's JWT access tokens: an ES256 key made at
//! start, its JWK Set (`/jwks`, named `jwks_uri` in the metadata), the
//! tokens `/token` issues, and `POST /auth/mint`, which signs whatever a
//! test asks for — another `sub`, a past `exp`, another `aud` or `iss`,
//! and the forgeries a resource must refuse (`alg: none`, HS256 keyed with
//! the public key, a `kid` the set does not have).
//!
//! Test equipment: its own signing code (aws-lc-rs directly), so that the
//! validator under test is not checked against itself.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// The `kid` of the issuer's key.
pub const KEY_ID: &str = "testkit-es256";

/// How a minted token is made (`POST /auth/mint`'s `"forge"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forgery {
    /// Signed properly with the issuer's key.
    None,
    /// `alg: none`, no signature.
    AlgNone,
    /// HS256, keyed with the issuer's public JWK (as text): what a
    /// verifier confusing algorithms would accept.
    Hs256PublicKey,
    /// Signed with a key of its own, under a `kid` the set lacks.
    UnknownKid,
}

impl Forgery {
    /// The forgery called `name` (`none`, `alg-none`, `hs256-public-key`,
    /// `unknown-kid`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "none" => Some(Self::None),
            "alg-none" => Some(Self::AlgNone),
            "hs256-public-key" => Some(Self::Hs256PublicKey),
            "unknown-kid" => Some(Self::UnknownKid),
            _ => None,
        }
    }
}

/// The issuer's signing key.
pub(crate) struct Signer {
    key: EcdsaKeyPair,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer")
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Signer {
    pub(crate) fn generate() -> Self {
        Self {
            key: EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING)
                .expect("an ES256 key for the test issuer"),
        }
    }

    /// The public key as a JWK.
    pub(crate) fn jwk(&self) -> Value {
        let point = self.key.public_key().as_ref();
        json!({
            "kty": "EC",
            "crv": "P-256",
            "x": b64(&point[1..33]),
            "y": b64(&point[33..65]),
            "kid": KEY_ID,
            "use": "sig",
            "alg": "ES256",
        })
    }

    /// The JWK Set `/jwks` answers.
    pub(crate) fn jwks(&self) -> Value {
        json!({ "keys": [self.jwk()] })
    }

    /// `claims` signed as `forgery` says.
    pub(crate) fn sign(&self, claims: &Value, forgery: Forgery) -> String {
        let header = match forgery {
            Forgery::None => json!({"alg": "ES256", "typ": "at+jwt", "kid": KEY_ID}),
            Forgery::AlgNone => json!({"alg": "none", "typ": "at+jwt"}),
            Forgery::Hs256PublicKey => json!({"alg": "HS256", "typ": "at+jwt", "kid": KEY_ID}),
            Forgery::UnknownKid => json!({"alg": "ES256", "typ": "at+jwt", "kid": "not-ours"}),
        };
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let signature = match forgery {
            Forgery::None => self.es256(&self.key, &input),
            Forgery::AlgNone => Vec::new(),
            Forgery::Hs256PublicKey => {
                let secret = self.jwk().to_string();
                let key =
                    aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, secret.as_bytes());
                aws_lc_rs::hmac::sign(&key, input.as_bytes())
                    .as_ref()
                    .to_vec()
            }
            Forgery::UnknownKid => {
                let other = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING)
                    .expect("a second ES256 key");
                self.es256(&other, &input)
            }
        };
        format!("{input}.{}", b64(&signature))
    }

    fn es256(&self, key: &EcdsaKeyPair, input: &str) -> Vec<u8> {
        key.sign(&SystemRandom::new(), input.as_bytes())
            .expect("an ES256 signature")
            .as_ref()
            .to_vec()
    }
}

/// `defaults` with `changes` applied: a `null` removes the claim.
pub(crate) fn merged(defaults: Value, changes: Option<&Map<String, Value>>) -> Value {
    let mut claims = match defaults {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    for (name, value) in changes.into_iter().flatten() {
        if value.is_null() {
            claims.remove(name);
        } else {
            claims.insert(name.clone(), value.clone());
        }
    }
    Value::Object(claims)
}
