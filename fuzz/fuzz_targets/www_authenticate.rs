//! `WWW-Authenticate` parsing (`switchboard_auth::metadata::parse_www_authenticate`).
//!
//! Input: the header value (any bytes; non-UTF-8 is read lossily, as a
//! header's text would be).
//!
//! Invariants:
//! - no panic, and parsing is linear enough to finish (libFuzzer's timeout);
//! - every scheme is a non-empty RFC 9110 token; every param name is a
//!   non-empty, lowercase token; a challenge has a token68 or params, never
//!   both, and a token68 holds only token68 characters;
//! - round trip: the challenges written back as a header (values quoted and
//!   escaped) parse to the same challenges.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_auth::metadata::{Challenge, parse_www_authenticate};

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token68(s: &str) -> bool {
    let body = s.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

fn write(challenges: &[Challenge]) -> String {
    let mut out = Vec::new();
    for c in challenges {
        let mut text = c.scheme.clone();
        if let Some(token68) = &c.token68 {
            text.push(' ');
            text.push_str(token68);
        }
        let params: Vec<String> = c
            .params
            .iter()
            .map(|(name, value)| {
                let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                format!("{name}=\"{escaped}\"")
            })
            .collect();
        if !params.is_empty() {
            text.push(' ');
            text.push_str(&params.join(", "));
        }
        out.push(text);
    }
    out.join(", ")
}

fuzz_target!(|data: &[u8]| {
    let header = String::from_utf8_lossy(data);
    let challenges = parse_www_authenticate(&header);
    for c in &challenges {
        assert!(
            !c.scheme.is_empty() && c.scheme.bytes().all(is_tchar),
            "scheme {:?} is not a token",
            c.scheme
        );
        assert!(
            c.token68.is_none() || c.params.is_empty(),
            "both a token68 and params"
        );
        if let Some(token68) = &c.token68 {
            assert!(is_token68(token68), "token68 {token68:?}");
        }
        for (name, _) in &c.params {
            assert!(
                !name.is_empty()
                    && name.bytes().all(is_tchar)
                    && !name.bytes().any(|b| b.is_ascii_uppercase()),
                "param name {name:?}"
            );
        }
    }
    let written = write(&challenges);
    let again = parse_www_authenticate(&written);
    assert_eq!(
        challenges, again,
        "written back as {written:?}, parsed differently"
    );
});
