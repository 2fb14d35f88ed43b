//! Signed JWTs an OAuth client makes itself (RFC 7515 compact JWS, RFC 7519
//! claims): client assertions for `private_key_jwt` (RFC 7523 §2.2) and
//! DPoP proofs ([`super::dpop`]).
//!
//! ```
//! use switchboard_auth::jwt::{JwtAlgorithm, JwtSigner, client_assertion};
//! # fn main() -> Result<(), switchboard_auth::jwt::JwtError> {
//! let key = JwtSigner::generate(JwtAlgorithm::Es256)?;
//! let assertion = client_assertion(&key, "my-client", "https://auth.example.com")?;
//! assert_eq!(assertion.split('.').count(), 3);
//! # Ok(()) }
//! ```
//!
//! Keys come from PEM (`PRIVATE KEY`, `EC PRIVATE KEY`, `RSA PRIVATE KEY`)
//! or are generated; signing uses aws-lc-rs, the crypto provider rustls
//! already brings in. `Debug` never shows key material.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, EcdsaKeyPair, KeyPair as _, RsaKeyPair};
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// `client_assertion_type` for a JWT client assertion (RFC 7523 §2.2).
pub const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long a client assertion is valid.
pub const ASSERTION_LIFETIME: Duration = Duration::from_secs(60);

/// A JWS algorithm this crate signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// ECDSA P-256 with SHA-256 (the DPoP default).
    Es256,
    /// ECDSA P-384 with SHA-384.
    Es384,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl JwtAlgorithm {
    /// The `alg` header value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Es256 => "ES256",
            Self::Es384 => "ES384",
            Self::Rs256 => "RS256",
        }
    }

    /// The algorithm called `name` (`ES256`, `ES384`, `RS256`), if supported.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "ES256" => Some(Self::Es256),
            "ES384" => Some(Self::Es384),
            "RS256" => Some(Self::Rs256),
            _ => None,
        }
    }

    fn ecdsa(self) -> Option<&'static signature::EcdsaSigningAlgorithm> {
        match self {
            Self::Es256 => Some(&signature::ECDSA_P256_SHA256_FIXED_SIGNING),
            Self::Es384 => Some(&signature::ECDSA_P384_SHA384_FIXED_SIGNING),
            Self::Rs256 => None,
        }
    }
}

impl fmt::Display for JwtAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A key could not be used, or signing failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwtError {
    /// The private key is unreadable or does not fit the algorithm.
    #[error("the {algorithm} private key cannot be used: {detail}")]
    Key {
        /// The algorithm the key was meant for.
        algorithm: JwtAlgorithm,
        /// What was wrong (never the key itself).
        detail: String,
    },
    /// The algorithm is not one this crate signs with.
    #[error("JWT signing algorithm {0:?} is not supported (use ES256, ES384 or RS256)")]
    UnsupportedAlgorithm(String),
    /// The crypto library refused to sign.
    #[error("signing the {0} JWT failed")]
    Signing(JwtAlgorithm),
}

enum Key {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// A private key that signs JWTs with one algorithm.
pub struct JwtSigner {
    algorithm: JwtAlgorithm,
    key: Key,
    key_id: Option<String>,
}

impl fmt::Debug for JwtSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtSigner")
            .field("algorithm", &self.algorithm)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl JwtSigner {
    /// A fresh key pair (ES256 or ES384; RSA keys are not generated here).
    ///
    /// # Errors
    /// [`JwtError::Key`] for RS256, [`JwtError::Signing`] if the crypto
    /// library fails.
    pub fn generate(algorithm: JwtAlgorithm) -> Result<Self, JwtError> {
        let Some(alg) = algorithm.ecdsa() else {
            return Err(JwtError::Key {
                algorithm,
                detail: "only ECDSA keys are generated; load an RSA key from PEM".into(),
            });
        };
        let key = EcdsaKeyPair::generate(alg).map_err(|_| JwtError::Signing(algorithm))?;
        Ok(Self {
            algorithm,
            key: Key::Ec(key),
            key_id: None,
        })
    }

    /// A key from PEM text: `PRIVATE KEY` (PKCS#8), `EC PRIVATE KEY`
    /// (SEC1) or `RSA PRIVATE KEY` (PKCS#1), unencrypted.
    ///
    /// # Errors
    /// [`JwtError::Key`] when the PEM is malformed, encrypted, or holds a
    /// key of another type or curve than `algorithm` needs.
    pub fn from_pem(pem: &str, algorithm: JwtAlgorithm) -> Result<Self, JwtError> {
        let der = pem_der(pem).map_err(|detail| JwtError::Key { algorithm, detail })?;
        Self::from_der(&der, algorithm)
    }

    /// A key from DER: PKCS#8, SEC1 (EC) or PKCS#1 (RSA).
    ///
    /// # Errors
    /// [`JwtError::Key`] when the key does not parse or fit `algorithm`.
    pub fn from_der(der: &[u8], algorithm: JwtAlgorithm) -> Result<Self, JwtError> {
        let rejected = |e: aws_lc_rs::error::KeyRejected| JwtError::Key {
            algorithm,
            detail: format!("{e} (is it a {} key?)", key_kind(algorithm)),
        };
        let key = match algorithm.ecdsa() {
            Some(alg) => Key::Ec(EcdsaKeyPair::from_private_key_der(alg, der).map_err(rejected)?),
            None => Key::Rsa(
                RsaKeyPair::from_pkcs8(der)
                    .or_else(|_| RsaKeyPair::from_der(der))
                    .map_err(rejected)?,
            ),
        };
        Ok(Self {
            algorithm,
            key,
            key_id: None,
        })
    }

    /// An EC private key from a JWK (RFC 7518 §6.2: `kty` `EC`, `crv`
    /// `P-256` or `P-384`, `x`, `y`, `d`); its `kid`, if any, is sent in
    /// every header. RSA keys are read from PEM instead.
    ///
    /// # Errors
    /// [`JwtError::Key`] for a JWK that is not such a key, or whose parts
    /// do not belong together.
    pub fn from_jwk(jwk: &Value) -> Result<Self, JwtError> {
        let algorithm = match jwk.get("crv").and_then(Value::as_str) {
            Some("P-384") => JwtAlgorithm::Es384,
            _ => JwtAlgorithm::Es256,
        };
        let fail = |detail: &str| JwtError::Key {
            algorithm,
            detail: detail.to_owned(),
        };
        if jwk.get("kty").and_then(Value::as_str) != Some("EC") {
            return Err(fail(
                "the JWK is not an EC key (kty \"EC\"); load RSA keys from PEM",
            ));
        }
        if !matches!(
            jwk.get("crv").and_then(Value::as_str),
            Some("P-256" | "P-384")
        ) {
            return Err(fail("the JWK's curve must be P-256 or P-384"));
        }
        let part = |name: &str| {
            jwk.get(name)
                .and_then(Value::as_str)
                .and_then(|v| {
                    base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .decode(v)
                        .ok()
                })
                .ok_or_else(|| fail(&format!("the JWK has no valid `{name}`")))
        };
        let (x, y, d) = (part("x")?, part("y")?, part("d")?);
        let mut point = Vec::with_capacity(1 + x.len() + y.len());
        point.push(4);
        point.extend_from_slice(&x);
        point.extend_from_slice(&y);
        let alg = algorithm
            .ecdsa()
            .unwrap_or(&signature::ECDSA_P256_SHA256_FIXED_SIGNING);
        let key = EcdsaKeyPair::from_private_key_and_public_key(alg, &d, &point)
            .map_err(|e| fail(&format!("the JWK's parts do not form a key: {e}")))?;
        Ok(Self {
            algorithm,
            key: Key::Ec(key),
            key_id: jwk.get("kid").and_then(Value::as_str).map(str::to_owned),
        })
    }

    /// Sends `kid` in every header (the id the server knows the key by).
    #[must_use]
    pub fn with_key_id(mut self, kid: impl Into<String>) -> Self {
        self.key_id = Some(kid.into());
        self
    }

    /// The signing algorithm.
    pub fn algorithm(&self) -> JwtAlgorithm {
        self.algorithm
    }

    /// The public key as a JWK (RFC 7517), members in the order RFC 7638
    /// hashes them.
    pub fn public_jwk(&self) -> Value {
        match &self.key {
            Key::Ec(key) => {
                // An uncompressed point: 0x04 || x || y.
                let point = key.public_key().as_ref();
                let half = (point.len() - 1) / 2;
                let crv = match self.algorithm {
                    JwtAlgorithm::Es384 => "P-384",
                    _ => "P-256",
                };
                json!({
                    "crv": crv,
                    "kty": "EC",
                    "x": b64url(&point[1..1 + half]),
                    "y": b64url(&point[1 + half..]),
                })
            }
            Key::Rsa(key) => {
                let (n, e) = rsa_public_components(key.public_key().as_ref()).unwrap_or_default();
                json!({
                    "e": b64url(e),
                    "kty": "RSA",
                    "n": b64url(n),
                })
            }
        }
    }

    /// The JWK SHA-256 thumbprint (RFC 7638), base64url: what a DPoP-bound
    /// token's `cnf.jkt` names.
    pub fn thumbprint(&self) -> String {
        // `public_jwk` holds exactly the required members in lexicographic
        // order, and serde_json writes them without whitespace.
        let canonical = self.public_jwk().to_string();
        b64url(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes()).as_ref())
    }

    /// Signs `claims` with `header` (its `alg`, and `kid` when set, are
    /// filled in) into a compact JWS.
    ///
    /// # Errors
    /// [`JwtError::Signing`] if the crypto library fails.
    pub fn sign(&self, header: Map<String, Value>, claims: &Value) -> Result<String, JwtError> {
        let mut header = header;
        header.insert("alg".into(), self.algorithm.name().into());
        if let Some(kid) = &self.key_id {
            header.entry("kid").or_insert_with(|| kid.clone().into());
        }
        let mut input = b64url(Value::Object(header).to_string().as_bytes());
        input.push('.');
        input.push_str(&b64url(claims.to_string().as_bytes()));
        let rng = SystemRandom::new();
        let signature = match &self.key {
            Key::Ec(key) => key
                .sign(&rng, input.as_bytes())
                .map_err(|_| JwtError::Signing(self.algorithm))?
                .as_ref()
                .to_vec(),
            Key::Rsa(key) => {
                let mut out = vec![0; key.public_modulus_len()];
                key.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    input.as_bytes(),
                    &mut out,
                )
                .map_err(|_| JwtError::Signing(self.algorithm))?;
                out
            }
        };
        input.push('.');
        input.push_str(&b64url(&signature));
        Ok(input)
    }
}

/// A `private_key_jwt` client assertion (RFC 7523 §2.2, §3): `iss` and
/// `sub` are the client id, `aud` the authorization server's issuer
/// identifier, with a fresh `jti` and a short expiry.
///
/// # Errors
/// [`JwtError::Signing`] if the crypto library fails.
pub fn client_assertion(
    key: &JwtSigner,
    client_id: &str,
    audience: &str,
) -> Result<String, JwtError> {
    let now = now_secs();
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME.as_secs(),
        "jti": random_id(),
    });
    key.sign(typ_header("JWT"), &claims)
}

/// The claims of a JWT, read without checking its signature: for a client
/// that only needs its own token's expiry or type, never to trust it.
pub fn unverified_claims(jwt: &str) -> Option<Map<String, Value>> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub(crate) fn typ_header(typ: &str) -> Map<String, Value> {
    let mut header = Map::new();
    header.insert("typ".into(), typ.into());
    header
}

pub(crate) fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// 128 random bits, base64url: a `jti`.
pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 16];
    // Falls back to time-derived bytes only if the system RNG fails, which
    // aws-lc treats as fatal anyway.
    if aws_lc_rs::rand::fill(&mut bytes).is_err() {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = nanos.to_le_bytes();
    }
    b64url(&bytes)
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// `(n, e)` of a DER `RSAPublicKey` (RFC 8017 §A.1.1), without leading
/// zero bytes.
fn rsa_public_components(der: &[u8]) -> Option<(&[u8], &[u8])> {
    /// One DER element with tag `tag` at the start of `input`: its
    /// content and what follows.
    fn element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
        let (&found, rest) = input.split_first()?;
        if found != tag {
            return None;
        }
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 || rest.len() < count {
                return None;
            }
            let len = rest[..count]
                .iter()
                .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
            (len, &rest[count..])
        };
        (rest.len() >= len).then(|| rest.split_at(len))
    }
    let strip = |int: &'_ [u8]| -> usize { int.iter().take_while(|&&b| b == 0).count() };
    let (sequence, _) = element(der, 0x30)?;
    let (n, rest) = element(sequence, 0x02)?;
    let (e, _) = element(rest, 0x02)?;
    Some((&n[strip(n)..], &e[strip(e)..]))
}

fn key_kind(algorithm: JwtAlgorithm) -> &'static str {
    match algorithm {
        JwtAlgorithm::Es256 => "P-256 EC",
        JwtAlgorithm::Es384 => "P-384 EC",
        JwtAlgorithm::Rs256 => "RSA",
    }
}

/// The DER inside the first PEM block.
fn pem_der(pem: &str) -> Result<Vec<u8>, String> {
    let mut lines = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("-----BEGIN "));
    let begin = lines.next().ok_or_else(|| {
        "no `-----BEGIN …-----` line found (expected a PEM private key)".to_owned()
    })?;
    if begin.contains("ENCRYPTED") {
        return Err("the PEM key is encrypted; decrypt it first".into());
    }
    let mut body = String::new();
    let mut ended = false;
    for line in lines {
        if line.starts_with("-----END ") {
            ended = true;
            break;
        }
        if line.contains(':') {
            // RFC 1421 headers (`Proc-Type: 4,ENCRYPTED`, …).
            return Err("the PEM key has headers (is it encrypted?)".into());
        }
        body.push_str(line);
    }
    if !ended {
        return Err("the PEM block has no `-----END …-----` line".into());
    }
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| "the PEM body is not valid base64".into())
}

#[cfg(test)]
pub(crate) mod tests {
    use aws_lc_rs::signature::UnparsedPublicKey;

    use super::*;

    pub(crate) fn decode(part: &str) -> Value {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// Verifies a compact ES256 JWS with the JWK in hand, as a server would.
    pub(crate) fn verify_es256(jwt: &str, jwk: &Value) -> bool {
        let (input, sig) = jwt.rsplit_once('.').unwrap();
        let coord = |name: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(jwk[name].as_str().unwrap())
                .unwrap()
        };
        let mut point = vec![4u8];
        point.extend(coord("x"));
        point.extend(coord("y"));
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(sig)
            .unwrap();
        UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
            .verify(input.as_bytes(), &sig)
            .is_ok()
    }

    fn pem(label: &str, der: &[u8]) -> String {
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
            lines.join("\n")
        )
    }

    #[test]
    fn es256_signatures_verify_with_the_public_jwk() {
        let key = JwtSigner::generate(JwtAlgorithm::Es256).unwrap();
        let jwk = key.public_jwk();
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert!(
            jwk.get("d").is_none(),
            "the public JWK holds no private part"
        );
        let jwt = key.sign(typ_header("JWT"), &json!({"a": 1})).unwrap();
        assert!(verify_es256(&jwt, &jwk));
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(decode(parts[0])["alg"], "ES256");
        assert_eq!(decode(parts[1])["a"], 1);
        // A tampered payload does not verify.
        let forged = format!("{}.{}.{}", parts[0], b64url(br#"{"a":2}"#), parts[2]);
        assert!(!verify_es256(&forged, &jwk));
    }

    #[test]
    fn pkcs8_pem_keys_load_and_sign() {
        let generated =
            EcdsaKeyPair::generate(&signature::ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        let der = generated.to_pkcs8v1().unwrap();
        let text = pem("PRIVATE KEY", der.as_ref());
        let key = JwtSigner::from_pem(&text, JwtAlgorithm::Es256).unwrap();
        assert_eq!(
            key.public_jwk(),
            JwtSigner::from_der(der.as_ref(), JwtAlgorithm::Es256)
                .unwrap()
                .public_jwk()
        );
        let jwt = key.sign(Map::new(), &json!({})).unwrap();
        assert!(verify_es256(&jwt, &key.public_jwk()));
        // The same key is not a P-384 or RSA key.
        assert!(JwtSigner::from_pem(&text, JwtAlgorithm::Es384).is_err());
        assert!(JwtSigner::from_pem(&text, JwtAlgorithm::Rs256).is_err());
    }

    #[test]
    fn ec_private_jwks_load() {
        use aws_lc_rs::encoding::{AsBigEndian as _, EcPrivateKeyBin};
        let key = JwtSigner::generate(JwtAlgorithm::Es256).unwrap();
        let Key::Ec(pair) = &key.key else {
            unreachable!()
        };
        let d: EcPrivateKeyBin<'_> = pair.private_key().as_be_bytes().unwrap();
        let mut jwk = key.public_jwk();
        jwk["d"] = b64url(d.as_ref()).into();
        jwk["kid"] = "k7".into();
        let loaded = JwtSigner::from_jwk(&jwk).unwrap();
        assert_eq!(loaded.public_jwk(), key.public_jwk());
        let jwt = loaded.sign(Map::new(), &json!({})).unwrap();
        assert!(verify_es256(&jwt, &key.public_jwk()));
        assert_eq!(decode(jwt.split('.').next().unwrap())["kid"], "k7");
        // Another key's private part does not match this public point.
        let other = JwtSigner::generate(JwtAlgorithm::Es256).unwrap();
        let mut mixed = other.public_jwk();
        mixed["d"] = jwk["d"].clone();
        assert!(JwtSigner::from_jwk(&mixed).is_err());
        assert!(JwtSigner::from_jwk(&json!({"kty": "RSA", "n": "AQAB", "e": "AQAB"})).is_err());
        assert!(
            JwtSigner::from_jwk(&key.public_jwk()).is_err(),
            "no private part"
        );
    }

    #[test]
    fn rs256_signatures_verify() {
        let generated = RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let der =
            aws_lc_rs::encoding::AsDer::<aws_lc_rs::encoding::Pkcs8V1Der<'_>>::as_der(&generated)
                .unwrap();
        let key =
            JwtSigner::from_pem(&pem("PRIVATE KEY", der.as_ref()), JwtAlgorithm::Rs256).unwrap();
        let jwt = key.sign(Map::new(), &json!({"x": true})).unwrap();
        let (input, sig) = jwt.rsplit_once('.').unwrap();
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(sig)
            .unwrap();
        UnparsedPublicKey::new(
            &signature::RSA_PKCS1_2048_8192_SHA256,
            generated.public_key().as_ref(),
        )
        .verify(input.as_bytes(), &sig)
        .unwrap();
        let jwk = key.public_jwk();
        assert_eq!(jwk["kty"], "RSA");
        assert_eq!(jwk["e"], "AQAB", "65537");
        assert_eq!(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(jwk["n"].as_str().unwrap())
                .unwrap()
                .len(),
            256,
            "a 2048-bit modulus"
        );
    }

    #[test]
    fn bad_pem_is_reported_without_the_key() {
        for bad in [
            "",
            "-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
        ] {
            let error = JwtSigner::from_pem(bad, JwtAlgorithm::Es256).unwrap_err();
            assert!(matches!(error, JwtError::Key { .. }), "{error}");
        }
        let key = JwtSigner::generate(JwtAlgorithm::Es256)
            .unwrap()
            .with_key_id("k1");
        let shown = format!("{key:?}");
        assert!(shown.contains("k1") && !shown.contains(key.public_jwk()["x"].as_str().unwrap()));
    }

    #[test]
    fn client_assertions_carry_the_rfc_7523_claims() {
        let key = JwtSigner::generate(JwtAlgorithm::Es256)
            .unwrap()
            .with_key_id("kid-1");
        let a = client_assertion(&key, "client-1", "https://as.example.com").unwrap();
        let b = client_assertion(&key, "client-1", "https://as.example.com").unwrap();
        assert!(verify_es256(&a, &key.public_jwk()));
        let parts: Vec<&str> = a.split('.').collect();
        let header = decode(parts[0]);
        assert_eq!(header["kid"], "kid-1");
        assert_eq!(header["typ"], "JWT");
        let claims = unverified_claims(&a).unwrap();
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example.com");
        let iat = claims["iat"].as_u64().unwrap();
        assert_eq!(claims["exp"].as_u64().unwrap(), iat + 60);
        assert!(iat.abs_diff(now_secs()) < 5);
        assert_ne!(
            claims["jti"],
            unverified_claims(&b).unwrap()["jti"],
            "every assertion has its own jti"
        );
    }

    #[test]
    fn thumbprints_follow_rfc_7638() {
        // RFC 7638 §3.1's RSA example key.
        let jwk = json!({
            "e": "AQAB",
            "kty": "RSA",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
        });
        let canonical = jwk.to_string();
        let thumb = b64url(
            aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes()).as_ref(),
        );
        assert_eq!(thumb, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
        // An EC key's thumbprint is over crv, kty, x, y only.
        let key = JwtSigner::generate(JwtAlgorithm::Es256).unwrap();
        let members: Vec<String> = key
            .public_jwk()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(members, ["crv", "kty", "x", "y"]);
        assert_eq!(key.thumbprint().len(), 43);
    }
}
