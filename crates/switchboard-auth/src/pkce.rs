//! PKCE (RFC 7636) with the S256 method, and the `state` value of an
//! authorization request: random bytes from the system's CSPRNG and SHA-256,
//! both aws-lc-rs's (already here for signing), base64url without padding.

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::error::Unspecified;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::store::Secret;

/// Random bytes in a code verifier: 32, base64url to 43 characters, the
/// shortest verifier RFC 7636 §4.1 allows and the length it recommends.
const VERIFIER_BYTES: usize = 32;
/// Random bytes in a `state` value: 128 bits, 22 characters.
const STATE_BYTES: usize = 16;

/// A new code verifier: 43 characters of `[A-Za-z0-9_-]`, a subset of the
/// unreserved characters RFC 7636 §4.1 allows, from the system's CSPRNG.
///
/// # Errors
/// [`Unspecified`] if the system's random number generator fails.
pub(crate) fn new_verifier() -> Result<Secret, Unspecified> {
    Ok(Secret::new(random_b64url::<VERIFIER_BYTES>()?))
}

/// The S256 code challenge for `verifier`:
/// `BASE64URL-NOPAD(SHA256(ASCII(verifier)))` (RFC 7636 §4.2).
pub(crate) fn challenge_s256(verifier: &Secret) -> String {
    URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.expose().as_bytes()))
}

/// A new `state` value: 128 random bits, base64url.
///
/// # Errors
/// [`Unspecified`] if the system's random number generator fails.
pub(crate) fn new_state() -> Result<String, Unspecified> {
    random_b64url::<STATE_BYTES>()
}

fn random_b64url<const N: usize>() -> Result<String, Unspecified> {
    let mut bytes = [0u8; N];
    aws_lc_rs::rand::fill(&mut bytes)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// RFC 7636 Appendix B: the verifier made of these 32 octets, and its
    /// S256 challenge.
    #[test]
    fn the_challenge_is_rfc_7636s_example() {
        let octets = [
            116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212,
            37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121,
        ];
        let verifier = URL_SAFE_NO_PAD.encode(octets);
        assert_eq!(verifier, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
        assert_eq!(
            challenge_s256(&Secret::new(verifier)),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_are_43_unreserved_characters_and_never_repeat() {
        let unreserved = |c: char| c.is_ascii_alphanumeric() || "-._~".contains(c);
        let mut seen = HashSet::new();
        for _ in 0..100 {
            let verifier = new_verifier().unwrap().expose().to_owned();
            assert_eq!(verifier.len(), 43, "{verifier}");
            assert!(verifier.chars().all(unreserved), "{verifier}");
            assert!(seen.insert(verifier), "a verifier came twice");
        }
    }

    #[test]
    fn states_are_128_random_bits() {
        let first = new_state().unwrap();
        assert_eq!(first.len(), 22);
        assert_ne!(first, new_state().unwrap());
    }
}
