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
    let der =
        aws_lc_rs::encoding::AsDer::<aws_lc_rs::encoding::Pkcs8V1Der<'_>>::as_der(&rsa).unwrap();
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
