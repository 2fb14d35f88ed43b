//! The checks every request passes before anything of its body is read:
//! the `Host` it names (DNS rebinding), its `Origin`, and the bearer
//! token. Each refusal closes the connection.

use std::net::IpAddr;

use hyper::header::{AUTHORIZATION, HOST, HeaderValue, ORIGIN};
use hyper::{HeaderMap, Response, StatusCode};

use super::HttpServeOptions;
use super::body::{ResponseBody, reply};

/// The shortest bearer token served: shorter ones (an empty one from an
/// unset variable, a word a person typed) are refused at start.
pub const MIN_TOKEN_LEN: usize = 32;

/// Whether `token` may guard an endpoint; what is wrong with it if not.
///
/// # Errors
/// A token shorter than [`MIN_TOKEN_LEN`] characters, or with whitespace
/// or control characters (it could not be sent in a header as it is).
pub fn check_token(token: &str) -> Result<(), String> {
    if token.chars().count() < MIN_TOKEN_LEN {
        return Err(format!(
            "a bearer token must be at least {MIN_TOKEN_LEN} characters, not {} \
             (leave the token out and one is generated)",
            token.chars().count()
        ));
    }
    if token
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || !c.is_ascii())
    {
        return Err("a bearer token is printable ASCII without spaces".to_owned());
    }
    Ok(())
}

/// A fresh bearer token: 32 bytes from the operating system's CSPRNG,
/// base64url without padding (43 characters).
///
/// # Errors
/// When the system has no randomness to give.
pub fn generate_token() -> std::io::Result<String> {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Refuses a request, closing its connection (a refused peer gets no
/// second try on it).
fn refuse(status: StatusCode, why: &'static str) -> Response<ResponseBody> {
    let mut response = reply(status, why);
    response
        .headers_mut()
        .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The `Host` check alone (what `/healthz` passes): the refusal to send,
/// if any.
pub(super) fn host(
    options: &HttpServeOptions,
    headers: &HeaderMap,
) -> Option<Response<ResponseBody>> {
    let allowed = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|h| host_allowed(h, &options.allowed_hosts));
    if allowed {
        None
    } else {
        Some(refuse(
            StatusCode::FORBIDDEN,
            "host not allowed: this server answers requests for its own address \
             (a loopback name or an IP address) only\n",
        ))
    }
}

/// Every check: `Host`, `Origin`, bearer token; the refusal to send, if
/// any.
pub(super) fn all(
    options: &HttpServeOptions,
    headers: &HeaderMap,
) -> Option<Response<ResponseBody>> {
    if let Some(refused) = host(options, headers) {
        return Some(refused);
    }
    if let Some(origin) = headers.get(ORIGIN)
        && !origin
            .to_str()
            .is_ok_and(|o| origin_allowed(o, &options.allowed_origins))
    {
        return Some(refuse(StatusCode::FORBIDDEN, "origin not allowed\n"));
    }
    if let Some(token) = &options.bearer_token {
        let sent = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer)
            .unwrap_or_default();
        if !same_secret(sent.as_bytes(), token.as_bytes()) {
            let mut response = refuse(StatusCode::UNAUTHORIZED, "a bearer token is required\n");
            response.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer"),
            );
            return Some(response);
        }
    }
    None
}

/// The token of an `Authorization: Bearer …` value; the scheme is
/// matched case-insensitively (RFC 9110 §11.1).
pub(super) fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_start_matches(' '))
}

/// Whether a request naming `host` (a `Host` header: name or address,
/// and maybe a port) is for us: `localhost`, an IP address (a rebinding
/// page reaches us under a name of its own, never an address), or one of
/// `allowed` (compared case-insensitively).
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((address, port)) if port.is_empty() || port.starts_with(':') => address,
            _ => return false,
        },
        None => match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            Some(_) => return false,
            None => host,
        },
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok()
        || allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
}

/// Whether `origin` may call: a loopback host, or one the options allow.
pub(super) fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == origin) {
        return true;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => rest.split(':').next().unwrap_or_default(),
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// Compares without stopping at the first difference.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case() {
        for value in ["Bearer t", "bearer t", "BEARER t", "bEaReR  t"] {
            assert_eq!(bearer(value), Some("t"), "{value}");
        }
        assert_eq!(bearer("Basic t"), None);
        assert_eq!(bearer("Bearert"), None);
    }

    #[test]
    fn hosts_are_loopback_names_addresses_or_allowed_ones() {
        let allowed = ["gateway.internal".to_owned()];
        for host in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:1",
            "127.0.0.1:3000",
            "[::1]:80",
            "[::1]",
            "10.0.0.5:80",
            "Gateway.Internal:443",
        ] {
            assert!(host_allowed(host, &allowed), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "[::1]x",
            "localhost:80:80",
            "",
        ] {
            assert!(!host_allowed(host, &allowed), "{host}");
        }
    }

    #[test]
    fn short_and_empty_tokens_are_refused() {
        assert!(check_token("").is_err());
        assert!(check_token("s3cret").is_err());
        assert!(check_token(&"a".repeat(31)).is_err());
        assert!(check_token(&format!("{} x", "a".repeat(32))).is_err());
        assert!(check_token(&"a".repeat(32)).is_ok());
        let (a, b) = (generate_token().unwrap(), generate_token().unwrap());
        assert_ne!(a, b);
        assert!(check_token(&a).is_ok(), "{a}");
    }
}
