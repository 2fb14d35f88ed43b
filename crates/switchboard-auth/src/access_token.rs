//! Checking the JWT access tokens a protected resource is sent (RFC 9068
//! profile, RFC 7519 claims, RFC 7515 signatures): what a gateway serving
//! hosts as users does with each request's bearer token.
//!
//! ```no_run
//! use switchboard_auth::access_token::JwtValidator;
//! # async fn run(token: &str) -> Result<(), Box<dyn std::error::Error>> {
//! let validator = JwtValidator::builder(
//!     "https://auth.example.com",
//!     "https://gateway.example.com/mcp",
//! )
//! .build()?;
//! let user = validator.validate(token).await?;
//! println!("a request of {}", user.sub);
//! # Ok(()) }
//! ```
//!
//! The issuer's keys come from its JWK Set, found through its metadata
//! (RFC 8414 `jwks_uri`, looked up as [`crate::metadata`] orders it) and
//! fetched with the SSRF-guarded client the rest of the crate uses; they
//! are kept, and fetched again when a token names a key not among them —
//! at most once per [`JwtValidatorBuilder::refetch_after`], so tokens
//! naming made-up keys cannot make the gateway hammer its issuer.
//!
//! What is refused: a token longer than [`MAX_TOKEN_LEN`]; an `alg` not
//! among those pinned (RS256, ES256, EdDSA — never `none` nor an HMAC
//! algorithm, whose "secret" an attacker would take to be the issuer's
//! public key); a key of another type than the `alg` needs, or whose own
//! `alg` or `use` says otherwise; an unknown `kid`; a `crit` header; a bad
//! signature; then (only once the signature holds) an `iss` other than
//! the issuer's, an `aud` (string or array) not naming the audience, a
//! missing or past `exp`, an `nbf` in the future, a missing `sub`. Clocks
//! may differ by [`LEEWAY`].
//!
//! A token whose signature held is remembered by its SHA-256 (at most
//! 10,000, the expired ones let go first): the same token again, as a host
//! sends with every request, has its claims checked again (`exp` above
//! all) but not its signature.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use base64::Engine as _;
use serde_json::{Map, Value};
use tokio::time::Instant;
use url::Url;

use crate::grant::{http_client, read_body};
use crate::metadata::{
    AuthorizationServerMetadata, authorization_server_metadata_urls, check_issuer,
};
use crate::ssrf::UrlGuard;

/// The longest token looked at, in bytes.
pub const MAX_TOKEN_LEN: usize = 8 * 1024;

/// How far `exp` and `nbf` may be off, for clocks that differ.
pub const LEEWAY: Duration = Duration::from_secs(60);

/// The most keys kept from a JWK Set.
const MAX_KEYS: usize = 32;

/// The most tokens whose signature is remembered as checked.
const MAX_CHECKED: usize = 10_000;

/// A token's SHA-256, as the tokens checked are kept by.
pub(crate) fn sha256(token: &str) -> [u8; 32] {
    let hash = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(hash.as_ref());
    out
}

/// A signature algorithm a token may be signed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (keys of 2048 bits at least).
    Rs256,
    /// ECDSA P-256 with SHA-256.
    Es256,
    /// Ed25519.
    EdDsa,
}

impl TokenAlgorithm {
    /// The `alg` header value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Es256 => "ES256",
            Self::EdDsa => "EdDSA",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        [Self::Rs256, Self::Es256, Self::EdDsa]
            .into_iter()
            .find(|a| a.name() == name)
    }
}

/// Why a token was refused, or could not be checked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a compact JWS with a JSON header and claims.
    #[error("the token is not a well-formed JWT")]
    Malformed,
    /// Longer than [`MAX_TOKEN_LEN`].
    #[error("the token is longer than {MAX_TOKEN_LEN} bytes")]
    TooLarge,
    /// Its `alg` is not one of those accepted.
    #[error("the token's algorithm {0:?} is not accepted")]
    Algorithm(String),
    /// It names a critical header extension (`crit`) we do not know.
    #[error("the token has a critical header extension")]
    Critical,
    /// No key of the issuer's fits its `kid` and `alg`.
    #[error("the token's key is not one of the issuer's")]
    UnknownKey,
    /// The signature does not hold.
    #[error("the token's signature is invalid")]
    Signature,
    /// Issued by someone else.
    #[error("the token was issued by another issuer")]
    Issuer,
    /// Not meant for this resource.
    #[error("the token is meant for another audience")]
    Audience,
    /// Past its `exp`, or without one.
    #[error("the token has expired")]
    Expired,
    /// Before its `nbf`.
    #[error("the token is not valid yet")]
    NotYetValid,
    /// No `sub`.
    #[error("the token names no subject")]
    NoSubject,
    /// The issuer's metadata or keys could not be had.
    #[error("the issuer's keys cannot be fetched: {0}")]
    Keys(String),
    /// The issuer's introspection says the token is not active (an
    /// opaque token, [`crate::introspection`]).
    #[error("the issuer says the token is not active")]
    Inactive,
    /// The issuer's introspection endpoint could not be used.
    #[error("the issuer's token introspection cannot be used: {0}")]
    Introspection(String),
}

impl TokenError {
    /// Whether the token itself is at fault (a 401 for its host), not the
    /// way to the issuer's keys.
    pub fn is_invalid_token(&self) -> bool {
        !matches!(self, Self::Keys(_) | Self::Introspection(_))
    }
}

/// A token that passed every check.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidToken {
    /// Its subject.
    pub sub: String,
    /// All of its claims.
    pub claims: Map<String, Value>,
}

/// Builds a [`JwtValidator`].
#[derive(Clone, Debug)]
#[must_use]
pub struct JwtValidatorBuilder {
    issuer: String,
    audience: String,
    algorithms: Vec<TokenAlgorithm>,
    guard: UrlGuard,
    refetch_after: Duration,
}

impl JwtValidatorBuilder {
    /// The algorithms accepted. Default RS256 and ES256.
    pub fn algorithms(mut self, algorithms: Vec<TokenAlgorithm>) -> Self {
        self.algorithms = algorithms;
        self
    }

    /// The SSRF guard the issuer's metadata and keys are fetched through.
    /// Default the strict one (https only, public addresses).
    pub fn guard(mut self, guard: UrlGuard) -> Self {
        self.guard = guard;
        self
    }

    /// How long after fetching the keys a token naming an unknown key may
    /// make them be fetched again. Default 60 seconds.
    pub fn refetch_after(mut self, after: Duration) -> Self {
        self.refetch_after = after;
        self
    }

    /// The validator.
    ///
    /// # Errors
    /// [`TokenError::Keys`] when the issuer is not a URL the guard
    /// allows, or no algorithm is accepted.
    pub fn build(self) -> Result<JwtValidator, TokenError> {
        let issuer = self
            .guard
            .check(&self.issuer, None)
            .map_err(|e| TokenError::Keys(e.to_string()))?;
        if self.algorithms.is_empty() {
            return Err(TokenError::Keys("no algorithm is accepted".to_owned()));
        }
        let client = http_client(&self.guard).map_err(|e| TokenError::Keys(e.to_string()))?;
        Ok(JwtValidator {
            inner: Arc::new(Inner {
                issuer,
                audience: self.audience,
                algorithms: self.algorithms,
                guard: self.guard,
                refetch_after: self.refetch_after,
                client,
                keys: Mutex::new(Keys::default()),
                fetching: tokio::sync::Mutex::new(()),
                checked: Mutex::default(),
            }),
        })
    }
}

/// Checks access tokens of one issuer meant for one audience. Cheap to
/// clone; the keys are shared.
#[derive(Clone, Debug)]
pub struct JwtValidator {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    issuer: Url,
    audience: String,
    algorithms: Vec<TokenAlgorithm>,
    guard: UrlGuard,
    refetch_after: Duration,
    client: reqwest::Client,
    keys: Mutex<Keys>,
    /// Tokens whose signature held, by their SHA-256, with what they
    /// said: a host sends the same token with every request, and its
    /// signature is checked once (its claims, `exp` first, every time).
    checked: Mutex<std::collections::HashMap<[u8; 32], ValidToken>>,
    /// Held while the keys are fetched: one fetch at a time.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct Keys {
    /// The issuer identifier as its metadata writes it (what `iss` must be).
    issuer: Option<String>,
    set: Vec<Jwk>,
    /// When the keys were last fetched, or that was tried: a failed
    /// fetch is not tried again sooner than a successful one, so an
    /// issuer that is down is not asked once per request.
    fetched: Option<Instant>,
    /// Why the last fetch failed, if it did.
    failed: Option<String>,
}

/// One public key of a JWK Set, as far as it is used.
#[derive(Clone, Debug)]
struct Jwk {
    kid: Option<String>,
    algorithm: TokenAlgorithm,
    /// The key in the form aws-lc-rs takes it.
    key: PublicKey,
}

#[derive(Clone, Debug)]
enum PublicKey {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point, or an Ed25519 key's bytes.
    Raw(Vec<u8>),
}

impl JwtValidator {
    /// A validator of tokens issued by `issuer` for `audience` (the
    /// resource's URL).
    pub fn builder(issuer: impl Into<String>, audience: impl Into<String>) -> JwtValidatorBuilder {
        JwtValidatorBuilder {
            issuer: issuer.into(),
            audience: audience.into(),
            algorithms: vec![TokenAlgorithm::Rs256, TokenAlgorithm::Es256],
            guard: UrlGuard::default(),
            refetch_after: Duration::from_secs(60),
        }
    }

    /// The user `token` stands for, once every check holds.
    ///
    /// # Errors
    /// What is wrong with the token ([`TokenError::is_invalid_token`]),
    /// or that the issuer's keys cannot be had.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the check; a key fetch it started is
    /// abandoned too, and the next check starts another.
    pub async fn validate(&self, token: &str) -> Result<ValidToken, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLarge);
        }
        let digest = sha256(token);
        let seen = self
            .inner
            .checked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&digest)
            .cloned();
        if let Some(seen) = seen {
            let issuer = seen
                .claims
                .get("iss")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            return check_claims(seen.claims, &issuer, &self.inner.audience, now());
        }
        let valid = self.validate_signed(token).await?;
        let mut checked = self.inner.checked.lock().unwrap_or_else(|e| e.into_inner());
        if checked.len() >= MAX_CHECKED {
            let at = now();
            checked.retain(|_, seen| {
                seen.claims
                    .get("exp")
                    .and_then(Value::as_u64)
                    .is_some_and(|exp| at <= exp.saturating_add(LEEWAY.as_secs()))
            });
            if checked.len() >= MAX_CHECKED {
                checked.clear();
            }
        }
        checked.insert(digest, valid.clone());
        Ok(valid)
    }

    /// [`JwtValidator::validate`] of a token not seen before: its
    /// signature, then its claims.
    async fn validate_signed(&self, token: &str) -> Result<ValidToken, TokenError> {
        let token = Parsed::new(token, &self.inner.algorithms)?;
        let known = self.known(&token);
        let found = match known {
            Some(found) => found,
            None => self.refetch(&token).await?,
        };
        let (issuer, keys) = found;
        if keys.is_empty() {
            return Err(TokenError::UnknownKey);
        }
        if !keys.iter().any(|key| token.verified_by(key)) {
            return Err(TokenError::Signature);
        }
        check_claims(token.claims, &issuer, &self.inner.audience, now())
    }

    /// The keys already known that fit the token, and the issuer's id;
    /// `None` when there are none yet or none fit.
    fn known(&self, token: &Parsed) -> Option<(String, Vec<Jwk>)> {
        let keys = self.inner.keys.lock().unwrap_or_else(|e| e.into_inner());
        let issuer = keys.issuer.clone()?;
        let fitting = token.fitting(&keys.set);
        (!fitting.is_empty()).then_some((issuer, fitting))
    }

    /// Fetches the keys again, unless that was done less than
    /// `refetch_after` ago; the keys that fit the token then.
    async fn refetch(&self, token: &Parsed) -> Result<(String, Vec<Jwk>), TokenError> {
        let _one_at_a_time = self.inner.fetching.lock().await;
        // Another check may have fetched them while this one waited.
        let recent = {
            let keys = self.inner.keys.lock().unwrap_or_else(|e| e.into_inner());
            keys.fetched
                .is_some_and(|at| at.elapsed() < self.inner.refetch_after)
        };
        if !recent {
            let fetched = self.fetch().await;
            let mut keys = self.inner.keys.lock().unwrap_or_else(|e| e.into_inner());
            keys.fetched = Some(Instant::now());
            match fetched {
                Ok((issuer, set)) => {
                    keys.issuer = Some(issuer);
                    keys.set = set;
                    keys.failed = None;
                }
                // The keys known before (if any) are kept.
                Err(TokenError::Keys(why)) => keys.failed = Some(why),
                Err(other) => return Err(other),
            }
        }
        let keys = self.inner.keys.lock().unwrap_or_else(|e| e.into_inner());
        let fitting = token.fitting(&keys.set);
        match (&keys.issuer, &keys.failed) {
            (Some(issuer), _) if !fitting.is_empty() => Ok((issuer.clone(), fitting)),
            (_, Some(why)) => Err(TokenError::Keys(why.clone())),
            (Some(issuer), None) => Ok((issuer.clone(), fitting)),
            (None, None) => Err(TokenError::UnknownKey),
        }
    }

    /// The issuer's metadata, then its JWK Set.
    async fn fetch(&self) -> Result<(String, Vec<Jwk>), TokenError> {
        let inner = &*self.inner;
        let metadata = issuer_metadata(&inner.client, &inner.issuer)
            .await
            .map_err(TokenError::Keys)?;
        let jwks_uri = metadata
            .jwks_uri
            .as_deref()
            .ok_or_else(|| TokenError::Keys("the issuer's metadata has no jwks_uri".to_owned()))?;
        let jwks_uri = inner
            .guard
            .check(jwks_uri, Some(&inner.issuer))
            .map_err(|e| TokenError::Keys(e.to_string()))?;
        let set: Value = get_json(&inner.client, &jwks_uri)
            .await
            .map_err(TokenError::Keys)?;
        Ok((metadata.issuer, parse_jwks(&set)))
    }
}

/// `issuer`'s metadata (RFC 8414, tried where [`crate::metadata`] says),
/// checked to be its own; or why not.
pub(crate) async fn issuer_metadata(
    client: &reqwest::Client,
    issuer: &Url,
) -> Result<AuthorizationServerMetadata, String> {
    let mut last = String::from("no metadata URL");
    for url in authorization_server_metadata_urls(issuer) {
        match get_json::<AuthorizationServerMetadata>(client, &url).await {
            Ok(found) => {
                check_issuer(issuer, &found).map_err(|e| e.to_string())?;
                return Ok(found);
            }
            Err(why) => last = why,
        }
    }
    Err(last)
}

/// The JSON document at `url` (bounded as every answer is).
async fn get_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: &Url,
) -> Result<T, String> {
    let response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("{}: {}", crate::grant::shown(url), e.without_url()))?;
    if !response.status().is_success() {
        return Err(format!(
            "{} answered {}",
            crate::grant::shown(url),
            response.status()
        ));
    }
    let body = read_body(response, url).await.map_err(|e| e.to_string())?;
    serde_json::from_slice(&body)
        .map_err(|e| format!("{} is not the JSON expected: {e}", crate::grant::shown(url)))
}

/// A token taken apart, its signature not checked yet.
struct Parsed {
    algorithm: TokenAlgorithm,
    kid: Option<String>,
    /// `header.claims`, what the signature covers.
    input: Vec<u8>,
    signature: Vec<u8>,
    claims: Map<String, Value>,
}

fn b64(part: &str) -> Result<Vec<u8>, TokenError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| TokenError::Malformed)
}

impl Parsed {
    fn new(token: &str, accepted: &[TokenAlgorithm]) -> Result<Self, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLarge);
        }
        let mut parts = token.split('.');
        let (Some(header), Some(claims), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        let header: Map<String, Value> =
            serde_json::from_slice(&b64(header)?).map_err(|_| TokenError::Malformed)?;
        let alg = header
            .get("alg")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let algorithm = TokenAlgorithm::parse(alg)
            .filter(|a| accepted.contains(a))
            .ok_or_else(|| TokenError::Algorithm(alg.chars().take(16).collect()))?;
        if header.contains_key("crit") {
            return Err(TokenError::Critical);
        }
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid.clone()),
            Some(_) => return Err(TokenError::Malformed),
        };
        let input = token.as_bytes()[..header_len(token)].to_vec();
        let claims = serde_json::from_slice(&b64(claims)?).map_err(|_| TokenError::Malformed)?;
        Ok(Self {
            algorithm,
            kid,
            input,
            signature: b64(signature)?,
            claims,
        })
    }

    /// The keys of `set` this token may be signed with: of its algorithm,
    /// and its `kid` when it names one.
    fn fitting(&self, set: &[Jwk]) -> Vec<Jwk> {
        set.iter()
            .filter(|key| key.algorithm == self.algorithm)
            .filter(|key| self.kid.is_none() || key.kid == self.kid)
            .cloned()
            .collect()
    }

    fn verified_by(&self, key: &Jwk) -> bool {
        let (input, signature) = (&self.input[..], &self.signature[..]);
        match (&key.key, key.algorithm) {
            (PublicKey::Rsa { n, e }, TokenAlgorithm::Rs256) => RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, input, signature)
                .is_ok(),
            (PublicKey::Raw(point), TokenAlgorithm::Es256) => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(input, signature)
                    .is_ok()
            }
            (PublicKey::Raw(bytes), TokenAlgorithm::EdDsa) => {
                UnparsedPublicKey::new(&signature::ED25519, bytes)
                    .verify(input, signature)
                    .is_ok()
            }
            _ => false,
        }
    }
}

/// The length of `header.claims` in a compact JWS.
fn header_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(token.len())
}

/// The signing keys of a JWK Set, each with the one algorithm it serves:
/// one of its own `alg` (when it says) that fits its type; keys for
/// encryption (`use` other than `sig`), of other types, or malformed are
/// left out.
fn parse_jwks(set: &Value) -> Vec<Jwk> {
    let Some(keys) = set.get("keys").and_then(Value::as_array) else {
        return Vec::new();
    };
    keys.iter().filter_map(parse_jwk).take(MAX_KEYS).collect()
}

fn parse_jwk(jwk: &Value) -> Option<Jwk> {
    let text = |name: &str| jwk.get(name).and_then(Value::as_str);
    let bytes = |name: &str| text(name).and_then(|v| b64(v).ok());
    if text("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let (algorithm, key) = match (text("kty")?, text("crv")) {
        ("RSA", _) => (
            TokenAlgorithm::Rs256,
            PublicKey::Rsa {
                n: bytes("n")?,
                e: bytes("e")?,
            },
        ),
        ("EC", Some("P-256")) => {
            let (x, y) = (bytes("x")?, bytes("y")?);
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            let mut point = vec![4];
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            (TokenAlgorithm::Es256, PublicKey::Raw(point))
        }
        ("OKP", Some("Ed25519")) => (TokenAlgorithm::EdDsa, PublicKey::Raw(bytes("x")?)),
        _ => return None,
    };
    if text("alg").is_some_and(|alg| alg != algorithm.name()) {
        return None;
    }
    Some(Jwk {
        kid: text("kid").map(str::to_owned),
        algorithm,
        key,
    })
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The checks of a signed token's claims, at `now` (seconds).
pub(crate) fn check_claims(
    claims: Map<String, Value>,
    issuer: &str,
    audience: &str,
    now: u64,
) -> Result<ValidToken, TokenError> {
    if claims.get("iss").and_then(Value::as_str) != Some(issuer) {
        return Err(TokenError::Issuer);
    }
    let for_us = match claims.get("aud") {
        Some(Value::String(aud)) => aud == audience,
        Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(audience)),
        _ => false,
    };
    if !for_us {
        return Err(TokenError::Audience);
    }
    let leeway = LEEWAY.as_secs();
    match claims.get("exp").and_then(Value::as_u64) {
        Some(exp) if now <= exp.saturating_add(leeway) => {}
        _ => return Err(TokenError::Expired),
    }
    match claims.get("nbf") {
        None => {}
        Some(nbf) => match nbf.as_u64() {
            Some(nbf) if nbf <= now.saturating_add(leeway) => {}
            _ => return Err(TokenError::NotYetValid),
        },
    }
    let sub = match claims.get("sub").and_then(Value::as_str) {
        Some(sub) if !sub.is_empty() => sub.to_owned(),
        _ => return Err(TokenError::NoSubject),
    };
    Ok(ValidToken { sub, claims })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use aws_lc_rs::signature::KeyPair as _;
    use serde_json::json;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;
    use crate::jwt::{JwtAlgorithm, JwtSigner};

    const AUDIENCE: &str = "https://gw.example/mcp";

    fn b64url(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    /// A compact JWS of `header` and `claims` with `signature` as is.
    fn compact(header: &Value, claims: &Value, sign: impl FnOnce(&[u8]) -> Vec<u8>) -> String {
        let input = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let signature = sign(input.as_bytes());
        format!("{input}.{}", b64url(&signature))
    }

    fn claims(issuer: &str, sub: &str) -> Value {
        json!({"iss": issuer, "sub": sub, "aud": AUDIENCE, "exp": now() + 300, "iat": now()})
    }

    /// The ES256 signer `kid` `k1` and its JWK as a set publishes it.
    fn es256() -> (JwtSigner, Value) {
        let signer = JwtSigner::generate(JwtAlgorithm::Es256)
            .unwrap()
            .with_key_id("k1");
        let mut jwk = signer.public_jwk();
        jwk["kid"] = "k1".into();
        jwk["use"] = "sig".into();
        (signer, jwk)
    }

    #[test]
    fn signatures_hold_only_under_the_key_and_algorithm_they_were_made_with() {
        let (signer, jwk) = es256();
        let keys = parse_jwks(&json!({"keys": [jwk]}));
        let token = signer
            .sign(Map::new(), &claims("https://as.example", "alice"))
            .unwrap();
        let parsed = Parsed::new(&token, &[TokenAlgorithm::Es256]).unwrap();
        assert_eq!(parsed.fitting(&keys).len(), 1);
        assert!(parsed.verified_by(&keys[0]));
        // One bit of the claims changed: the signature no longer holds.
        let (head, rest) = token.split_once('.').unwrap();
        let (body, signature) = rest.split_once('.').unwrap();
        let mut changed = b64(body).unwrap();
        changed[2] ^= 1;
        let forged = format!("{head}.{}.{signature}", b64url(&changed));
        let parsed = Parsed::new(&forged, &[TokenAlgorithm::Es256]).unwrap();
        assert!(!parsed.verified_by(&keys[0]));
        // Another key of the same id does not verify it.
        let (other, mut other_jwk) = es256();
        other_jwk["kid"] = "k1".into();
        let token = other
            .sign(Map::new(), &claims("https://as.example", "alice"))
            .unwrap();
        let parsed = Parsed::new(&token, &[TokenAlgorithm::Es256]).unwrap();
        assert!(!parsed.verified_by(&keys[0]));
    }

    #[test]
    fn none_and_hmac_are_refused_before_any_key_is_looked_at() {
        let (_, jwk) = es256();
        let body = claims("https://as.example", "mallory");
        let none = compact(&json!({"alg": "none"}), &body, |_| Vec::new());
        assert!(matches!(
            Parsed::new(&none, &[TokenAlgorithm::Es256, TokenAlgorithm::Rs256]),
            Err(TokenError::Algorithm(alg)) if alg == "none"
        ));
        // HS256 keyed with the issuer's public key, as a confused verifier
        // would check it.
        let secret = jwk.to_string();
        let hs256 = compact(&json!({"alg": "HS256", "kid": "k1"}), &body, |input| {
            let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, secret.as_bytes());
            aws_lc_rs::hmac::sign(&key, input).as_ref().to_vec()
        });
        assert!(matches!(
            Parsed::new(&hs256, &[TokenAlgorithm::Es256]),
            Err(TokenError::Algorithm(alg)) if alg == "HS256"
        ));
        // An algorithm known but not pinned.
        let (signer, _) = es256();
        let es = signer.sign(Map::new(), &body).unwrap();
        assert!(matches!(
            Parsed::new(&es, &[TokenAlgorithm::Rs256]),
            Err(TokenError::Algorithm(_))
        ));
        // `crit`, too large, garbage.
        let crit = compact(&json!({"alg": "ES256", "crit": ["b64"]}), &body, |_| {
            vec![1]
        });
        assert!(matches!(
            Parsed::new(&crit, &[TokenAlgorithm::Es256]),
            Err(TokenError::Critical)
        ));
        let huge = "a".repeat(MAX_TOKEN_LEN + 1);
        assert!(matches!(
            Parsed::new(&huge, &[TokenAlgorithm::Es256]),
            Err(TokenError::TooLarge)
        ));
        for garbage in ["", "abc", "a.b.c", "a.b.c.d", "e30.e30"] {
            assert!(
                matches!(
                    Parsed::new(garbage, &[TokenAlgorithm::Es256]),
                    Err(TokenError::Malformed)
                ),
                "{garbage}"
            );
        }
    }

    #[test]
    fn a_key_serves_only_the_algorithm_its_type_and_own_alg_allow() {
        let (_, mut jwk) = es256();
        jwk["alg"] = "RS256".into();
        assert!(parse_jwks(&json!({"keys": [jwk]})).is_empty());
        let (_, mut jwk) = es256();
        jwk["use"] = "enc".into();
        assert!(parse_jwks(&json!({"keys": [jwk]})).is_empty());
        let (_, jwk) = es256();
        let keys = parse_jwks(&json!({"keys": [jwk, {"kty": "oct", "k": "c2VjcmV0"}]}));
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].algorithm, TokenAlgorithm::Es256);
    }

    #[test]
    fn rs256_and_eddsa_verify() {
        let rsa = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let der = aws_lc_rs::encoding::AsDer::<aws_lc_rs::encoding::Pkcs8V1Der<'_>>::as_der(&rsa)
            .unwrap();
        let signer = JwtSigner::from_der(der.as_ref(), JwtAlgorithm::Rs256).unwrap();
        let mut jwk = signer.public_jwk();
        jwk["kid"] = "r".into();
        let token = signer
            .sign(
                json!({"kid": "r"}).as_object().unwrap().clone(),
                &claims("https://as.example", "a"),
            )
            .unwrap();
        let keys = parse_jwks(&json!({"keys": [jwk]}));
        let parsed = Parsed::new(&token, &[TokenAlgorithm::Rs256]).unwrap();
        assert!(parsed.verified_by(&parsed.fitting(&keys)[0]));

        let ed = aws_lc_rs::signature::Ed25519KeyPair::generate().unwrap();
        let jwk = json!({"kty": "OKP", "crv": "Ed25519", "kid": "e",
            "x": b64url(ed.public_key().as_ref())});
        let token = compact(
            &json!({"alg": "EdDSA", "kid": "e"}),
            &claims("https://as.example", "a"),
            |input| ed.sign(input).as_ref().to_vec(),
        );
        let keys = parse_jwks(&json!({"keys": [jwk]}));
        let parsed = Parsed::new(&token, &[TokenAlgorithm::EdDsa]).unwrap();
        assert!(parsed.verified_by(&parsed.fitting(&keys)[0]));
    }

    #[test]
    fn claims_name_the_issuer_the_audience_a_time_and_a_subject() {
        let iss = "https://as.example";
        let at = 1_000_000;
        let base = json!({"iss": iss, "sub": "alice", "aud": AUDIENCE, "exp": at + 10});
        let check = |change: Value| {
            let mut claims = base.as_object().unwrap().clone();
            for (k, v) in change.as_object().unwrap() {
                if v.is_null() {
                    claims.remove(k);
                } else {
                    claims.insert(k.clone(), v.clone());
                }
            }
            check_claims(claims, iss, AUDIENCE, at)
        };
        assert_eq!(check(json!({})).unwrap().sub, "alice");
        assert!(check(json!({"aud": ["other", AUDIENCE]})).is_ok());
        assert!(matches!(
            check(json!({"iss": "https://evil.example"})),
            Err(TokenError::Issuer)
        ));
        assert!(matches!(
            check(json!({"iss": null})),
            Err(TokenError::Issuer)
        ));
        assert!(matches!(
            check(json!({"aud": "https://gw.example/mcp/"})),
            Err(TokenError::Audience)
        ));
        assert!(matches!(
            check(json!({"aud": ["other"]})),
            Err(TokenError::Audience)
        ));
        assert!(matches!(
            check(json!({"aud": null})),
            Err(TokenError::Audience)
        ));
        // Expired, within and past the leeway; no `exp` at all.
        assert!(check(json!({"exp": at - 30})).is_ok());
        assert!(matches!(
            check(json!({"exp": at - 61})),
            Err(TokenError::Expired)
        ));
        assert!(matches!(
            check(json!({"exp": null})),
            Err(TokenError::Expired)
        ));
        assert!(matches!(
            check(json!({"exp": "never"})),
            Err(TokenError::Expired)
        ));
        assert!(check(json!({"nbf": at + 30})).is_ok());
        assert!(matches!(
            check(json!({"nbf": at + 61})),
            Err(TokenError::NotYetValid)
        ));
        assert!(matches!(
            check(json!({"sub": ""})),
            Err(TokenError::NoSubject)
        ));
        assert!(matches!(
            check(json!({"sub": 7})),
            Err(TokenError::NoSubject)
        ));
    }

    /// An issuer on loopback answering its metadata and JWK Set (`jwks()`,
    /// read at each fetch), counting the set's fetches.
    async fn issuer(jwks: Arc<Mutex<Value>>) -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let fetched = Arc::new(AtomicUsize::new(0));
        let (issuer, count) = (base.clone(), fetched.clone());
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut head = vec![0; 4096];
                let n = socket.read(&mut head).await.unwrap();
                let head = String::from_utf8_lossy(&head[..n]).into_owned();
                let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                let body = match path.as_str() {
                    "/.well-known/oauth-authorization-server" => {
                        json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")}).to_string()
                    }
                    "/jwks" => {
                        count.fetch_add(1, Ordering::SeqCst);
                        jwks.lock().unwrap().to_string()
                    }
                    _ => String::new(),
                };
                let status = if body.is_empty() {
                    "404 Not Found"
                } else {
                    "200 OK"
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            }
        });
        (base, fetched)
    }

    #[tokio::test]
    async fn an_issuer_out_of_reach_is_not_asked_once_per_token() {
        // A port nothing listens on: every fetch fails at once.
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let guard = UrlGuard::builder()
            .allow_http_loopback(true)
            .build()
            .unwrap();
        let validator = JwtValidator::builder(&base, AUDIENCE)
            .guard(guard)
            .build()
            .unwrap();
        let (signer, _) = es256();
        let token = signer.sign(Map::new(), &claims(&base, "alice")).unwrap();
        let first = validator.validate(&token).await.unwrap_err();
        assert!(!first.is_invalid_token(), "{first}");
        let attempted = validator.inner.keys.lock().unwrap().fetched;
        assert!(attempted.is_some());
        // The second check is refused for the same reason, without a new
        // attempt (its time is the first one's).
        let second = validator.validate(&token).await.unwrap_err();
        assert_eq!(second.to_string(), first.to_string());
        assert_eq!(validator.inner.keys.lock().unwrap().fetched, attempted);
    }

    #[tokio::test]
    async fn keys_are_fetched_once_and_again_for_a_new_kid_but_not_more_often_than_allowed() {
        let (signer, jwk) = es256();
        let set = Arc::new(Mutex::new(json!({"keys": [jwk]})));
        let (base, fetched) = issuer(set.clone()).await;
        let guard = UrlGuard::builder()
            .allow_http_loopback(true)
            .build()
            .unwrap();
        let validator = JwtValidator::builder(&base, AUDIENCE)
            .guard(guard.clone())
            .build()
            .unwrap();
        let eager = JwtValidator::builder(&base, AUDIENCE)
            .guard(guard)
            .refetch_after(Duration::ZERO)
            .build()
            .unwrap();
        let token = signer.sign(Map::new(), &claims(&base, "alice")).unwrap();
        assert_eq!(validator.validate(&token).await.unwrap().sub, "alice");
        assert_eq!(validator.validate(&token).await.unwrap().sub, "alice");
        assert_eq!(fetched.load(Ordering::SeqCst), 1, "the keys are kept");
        assert_eq!(eager.validate(&token).await.unwrap().sub, "alice");
        assert_eq!(fetched.load(Ordering::SeqCst), 2);

        // The issuer rotates to a new key: with no wait between fetches, a
        // token of the new key makes the set be fetched again.
        let (rotated, mut new_jwk) = es256();
        new_jwk["kid"] = "k2".into();
        set.lock().unwrap()["keys"]
            .as_array_mut()
            .unwrap()
            .push(new_jwk);
        let rotated = rotated.with_key_id("k2");
        let token = rotated.sign(Map::new(), &claims(&base, "bob")).unwrap();
        assert_eq!(eager.validate(&token).await.unwrap().sub, "bob");
        assert_eq!(fetched.load(Ordering::SeqCst), 3, "fetched again for k2");

        // The first validator fetched less than a minute ago: an unknown kid
        // is refused without a fetch.
        let before = fetched.load(Ordering::SeqCst);
        assert!(matches!(
            validator.validate(&token).await,
            Err(TokenError::UnknownKey)
        ));
        assert_eq!(fetched.load(Ordering::SeqCst), before);
        // And a token of the right key from another issuer is refused.
        let token = signer
            .sign(Map::new(), &claims("https://evil.example", "alice"))
            .unwrap();
        assert!(matches!(
            validator.validate(&token).await,
            Err(TokenError::Issuer)
        ));
    }
}

#[cfg(test)]
mod checked_tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn a_token_seen_before_still_has_its_claims_checked() {
        let validator = JwtValidator::builder("https://as.example", "https://gw.example/mcp")
            .build()
            .unwrap();
        let seen = |exp: u64| ValidToken {
            sub: "alice".into(),
            claims: json!({"iss": "https://as.example", "sub": "alice",
                           "aud": "https://gw.example/mcp", "exp": exp})
            .as_object()
            .cloned()
            .unwrap(),
        };
        let remember = |token: &str, valid: ValidToken| {
            validator
                .inner
                .checked
                .lock()
                .unwrap()
                .insert(sha256(token), valid);
        };
        // Remembered and still good: answered without the issuer (which
        // does not exist).
        remember("good", seen(now() + 600));
        assert_eq!(validator.validate("good").await.unwrap().sub, "alice");
        // Remembered, but past its `exp` (and the leeway) since: refused.
        remember("stale", seen(now() - 120));
        assert!(matches!(
            validator.validate("stale").await,
            Err(TokenError::Expired)
        ));
        // Not remembered: checked whole (here, not even a JWT).
        assert!(matches!(
            validator.validate("other").await,
            Err(TokenError::Malformed)
        ));
    }
}
