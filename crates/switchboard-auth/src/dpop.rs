//! DPoP, sender-constrained tokens (RFC 9449): a key pair the client
//! holds, a fresh proof JWT for every request (to the token endpoint and to
//! the server), and the nonces servers hand out.
//!
//! ```
//! use switchboard_auth::dpop::DpopKey;
//! # fn main() -> Result<(), switchboard_auth::jwt::JwtError> {
//! let key = DpopKey::generate()?;
//! // At the token endpoint (no token yet) …
//! let proof = key.proof("POST", "https://auth.example.com/token", None)?;
//! // … and with the DPoP-bound token, sent as `Authorization: DPoP <token>`.
//! let proof = key.proof("POST", "https://mcp.example.com/mcp", Some("the-access-token"))?;
//! # let _ = proof; Ok(()) }
//! ```
//!
//! A server that wants a nonce answers `use_dpop_nonce` with a `DPoP-Nonce`
//! header; [`DpopKey::remember_nonce`] keeps it per origin and every later
//! proof to that origin carries it. [`super::grant::GrantProvider`] does
//! this for the token endpoint and the MCP server; the HTTP transports call
//! the provider with every `DPoP-Nonce` they see.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use switchboard::transport::http::RequestCredentials;

use crate::jwt::{self, JwtAlgorithm, JwtError, JwtSigner};

/// The `typ` of a DPoP proof.
pub const PROOF_TYP: &str = "dpop+jwt";
/// The authorization scheme of a DPoP-bound token.
pub const SCHEME: &str = "DPoP";
/// The `token_type` a token endpoint answers for a DPoP-bound token.
pub const TOKEN_TYPE: &str = "DPoP";
/// The error code of a nonce challenge (token endpoint and resource server).
pub const USE_DPOP_NONCE: &str = "use_dpop_nonce";
/// The header carrying a proof.
pub const HEADER: &str = "DPoP";
/// The header carrying a server's nonce.
pub const NONCE_HEADER: &str = "DPoP-Nonce";

/// Most origins whose nonce is remembered; a server-controlled set.
const MAX_NONCES: usize = 64;
/// Longest nonce kept.
const MAX_NONCE_LEN: usize = 1024;

/// A DPoP key pair and the nonces servers gave it. Cheap to clone; clones
/// share the nonces.
#[derive(Clone)]
pub struct DpopKey {
    inner: Arc<Inner>,
}

struct Inner {
    signer: JwtSigner,
    jwk: Value,
    thumbprint: String,
    nonces: Mutex<HashMap<String, String>>,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("algorithm", &self.inner.signer.algorithm())
            .field("thumbprint", &self.inner.thumbprint)
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A fresh ES256 key pair (the algorithm every DPoP server supports).
    ///
    /// # Errors
    /// [`JwtError::Signing`] if the crypto library fails.
    pub fn generate() -> Result<Self, JwtError> {
        Ok(Self::from_signer(JwtSigner::generate(JwtAlgorithm::Es256)?))
    }

    /// Proofs signed with `signer` (an asymmetric key; its public JWK goes
    /// in every proof).
    pub fn from_signer(signer: JwtSigner) -> Self {
        let jwk = signer.public_jwk();
        let thumbprint = signer.thumbprint();
        Self {
            inner: Arc::new(Inner {
                signer,
                jwk,
                thumbprint,
                nonces: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The key's JWK SHA-256 thumbprint: a bound token's `cnf.jkt`, and the
    /// `dpop_jkt` of an authorization request.
    pub fn thumbprint(&self) -> &str {
        &self.inner.thumbprint
    }

    /// The signing algorithm (for `dpop_signing_alg_values_supported`).
    pub fn algorithm(&self) -> JwtAlgorithm {
        self.inner.signer.algorithm()
    }

    /// A fresh proof for one request (RFC 9449 §4.2): `htm` is `method`,
    /// `htu` is `url` without query and fragment, with a new `jti` and the
    /// current `iat`; `ath` hashes `access_token` when one is sent; `nonce`
    /// is the one remembered for `url`'s origin, if any.
    ///
    /// # Errors
    /// [`JwtError::Signing`] if the crypto library fails.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, JwtError> {
        let nonce = self.nonce_for(url);
        self.proof_with_nonce(method, url, access_token, nonce.as_deref())
    }

    /// [`proof`](Self::proof) with an explicit `nonce` (or none).
    ///
    /// # Errors
    /// [`JwtError::Signing`] if the crypto library fails.
    pub fn proof_with_nonce(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, JwtError> {
        let mut claims = json!({
            "jti": jwt::random_id(),
            "htm": method,
            "htu": htu(url),
            "iat": jwt::now_secs(),
        });
        if let Some(token) = access_token {
            claims["ath"] = access_token_hash(token).into();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        let mut header = jwt::typ_header(PROOF_TYP);
        header.insert("jwk".into(), self.inner.jwk.clone());
        self.inner.signer.sign(header, &claims)
    }

    /// Keeps `nonce` for proofs to `url`'s origin (from a `DPoP-Nonce`
    /// header). Returns whether it differs from the one already held.
    pub fn remember_nonce(&self, url: &str, nonce: &str) -> bool {
        let Some(origin) = origin(url) else {
            return false;
        };
        if nonce.is_empty() || nonce.len() > MAX_NONCE_LEN {
            return false;
        }
        let mut nonces = self
            .inner
            .nonces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if nonces.get(&origin).is_some_and(|n| n == nonce) {
            return false;
        }
        if nonces.len() >= MAX_NONCES && !nonces.contains_key(&origin) {
            nonces.clear();
        }
        nonces.insert(origin, nonce.to_owned());
        true
    }

    /// The nonce remembered for `url`'s origin.
    pub fn nonce_for(&self, url: &str) -> Option<String> {
        let origin = origin(url)?;
        self.inner
            .nonces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&origin)
            .cloned()
    }
}

/// What one request to `url` with `method` carries for `access_token`:
/// `Authorization: DPoP …` and a fresh proof when `key` is given (the token
/// is bound to it), else `Authorization: Bearer …`. A proof that cannot be
/// signed is left out (and logged): the server then refuses the request.
pub(crate) fn request_credentials(
    key: Option<&DpopKey>,
    access_token: &str,
    method: &str,
    url: &str,
) -> RequestCredentials {
    match key {
        Some(key) => {
            let proof = key
                .proof(method, url, Some(access_token))
                .inspect_err(|e| tracing::warn!(error = %e, "DPoP proof failed"))
                .ok();
            RequestCredentials::new(Some(format!("{SCHEME} {access_token}")), proof)
        }
        None => RequestCredentials::new(Some(format!("Bearer {access_token}")), None),
    }
}

/// `ath`: base64url SHA-256 of the access token's ASCII (RFC 9449 §4.2).
pub fn access_token_hash(access_token: &str) -> String {
    jwt::b64url(
        aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, access_token.as_bytes()).as_ref(),
    )
}

/// `htu`: the request URL without query and fragment.
fn htu(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.into()
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or_default().to_owned(),
    }
}

fn origin(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let origin = parsed.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jwt::tests::{decode, verify_es256};

    fn parts(jwt: &str) -> (Value, Value) {
        let p: Vec<&str> = jwt.split('.').collect();
        (decode(p[0]), decode(p[1]))
    }

    #[test]
    fn proofs_carry_the_rfc_9449_claims_and_verify() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof("POST", "https://mcp.example.com/mcp?x=1#frag", Some("tok"))
            .unwrap();
        let (header, claims) = parts(&proof);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "never the private key");
        assert!(verify_es256(&proof, &header["jwk"]));
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
        assert_eq!(
            claims["ath"],
            // base64url(SHA-256("tok"))
            "GnZ0607njffhrEOak8P6jjyUV4TU3sn9jjARc4svHWI"
        );
        assert!(claims["iat"].as_u64().unwrap().abs_diff(jwt::now_secs()) < 5);
        assert!(claims.get("nonce").is_none());
        let again = key
            .proof("POST", "https://mcp.example.com/mcp", Some("tok"))
            .unwrap();
        assert_ne!(
            parts(&again).1["jti"],
            claims["jti"],
            "a fresh jti each time"
        );
        // The thumbprint (a bound token's cnf.jkt) is that of the JWK sent.
        let canonical = header["jwk"].to_string();
        assert_eq!(
            key.thumbprint(),
            jwt::b64url(
                aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes())
                    .as_ref()
            )
        );
    }

    #[test]
    fn token_requests_carry_no_ath() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof("POST", "https://as.example.com/token", None)
            .unwrap();
        let (_, claims) = parts(&proof);
        assert!(claims.get("ath").is_none());
        assert_eq!(claims["htu"], "https://as.example.com/token");
    }

    #[test]
    fn nonces_are_kept_per_origin() {
        let key = DpopKey::generate().unwrap();
        assert!(key.remember_nonce("https://as.example.com/token", "n1"));
        assert!(!key.remember_nonce("https://as.example.com/other", "n1"));
        let (_, claims) = parts(
            &key.proof("POST", "https://as.example.com/token", None)
                .unwrap(),
        );
        assert_eq!(claims["nonce"], "n1");
        let (_, claims) = parts(
            &key.proof("POST", "https://mcp.example.com/mcp", None)
                .unwrap(),
        );
        assert!(claims.get("nonce").is_none(), "another origin has its own");
        assert!(key.remember_nonce("https://as.example.com/token", "n2"));
        assert_eq!(
            key.nonce_for("https://as.example.com/x").as_deref(),
            Some("n2")
        );
        assert!(!key.remember_nonce("https://as.example.com/", ""));
    }
}
