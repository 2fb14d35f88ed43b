//! The SSRF guard (`switchboard_auth::ssrf::UrlGuard`): `check`, `check_redirect`,
//! `check_resolved`.
//!
//! Input: byte 0 holds settings (bit 0 allow loopback http, bit 1 allow
//! private, bit 2 redirect mode), bytes 1..17 an address for
//! `check_resolved`; the rest is text: `ISSUER_OR_FROM\nURL`, or just `URL`.
//!
//! Invariants, checked against a small oracle written here from the
//! documented ranges rather than the guard's own tables:
//! - no panic;
//! - an accepted URL is `https`, or `http` to a loopback host with loopback
//!   allowed; a redirect from `https` stays `https`;
//! - unless private addresses are allowed, an accepted URL's host is never
//!   a loopback, private, link-local, CGNAT, "this network", multicast,
//!   reserved or broadcast IPv4 address, nor an IPv6 loopback, unspecified,
//!   unique-local, link-local, multicast address or an IPv4-mapped address
//!   of those (loopback passes only when loopback is allowed), nor a
//!   `localhost` name; never a name ending in a dot;
//! - with an issuer, an accepted host is the issuer's (or both loopback
//!   with loopback allowed);
//! - an accepted URL checked again is accepted, unchanged;
//! - `check_resolved` refuses the same addresses;
//! - an error message never carries the URL's password or query.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::fuzz_target;
use switchboard_auth::ssrf::UrlGuard;
use url::{Host, Url};

/// Where a redirect comes from when the input names no origin.
const DEFAULT_FROM: &str = "https://auth.example.com/oauth/";

/// `Some(true)` loopback, `Some(false)` other refused, `None` public.
fn oracle_v4(a: Ipv4Addr) -> Option<bool> {
    let o = a.octets();
    if o[0] == 127 {
        return Some(true);
    }
    let refused = o[0] == 0
        || o[0] == 10
        || (o[0] == 100 && (64..128).contains(&o[1]))
        || (o[0] == 169 && o[1] == 254)
        || (o[0] == 172 && (16..32).contains(&o[1]))
        || (o[0] == 192 && o[1] == 168)
        || o[0] >= 224;
    refused.then_some(false)
}

fn oracle_v6(a: Ipv6Addr) -> Option<bool> {
    if a == Ipv6Addr::LOCALHOST {
        return Some(true);
    }
    if let Some(v4) = a.to_ipv4_mapped() {
        return oracle_v4(v4);
    }
    let s = a.segments();
    let refused = a.is_unspecified()
        || s[0] & 0xfe00 == 0xfc00
        || s[0] & 0xffc0 == 0xfe80
        || s[0] & 0xff00 == 0xff00;
    refused.then_some(false)
}

fn oracle(addr: IpAddr) -> Option<bool> {
    match addr {
        IpAddr::V4(a) => oracle_v4(a),
        IpAddr::V6(a) => oracle_v6(a),
    }
}

/// The names the guard documents as this machine's (`ssrf.rs`,
/// `is_local_name`): they never pass unless loopback is allowed, and then
/// only to addresses the connect-time check allows.
fn local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    matches!(
        name.as_str(),
        "localhost" | "localhost.localdomain" | "ip6-localhost" | "ip6-loopback"
    ) || name.ends_with(".localhost")
}

struct Settings {
    loopback: bool,
    private: bool,
}

impl Settings {
    /// Whether an address the oracle judged may pass.
    fn passes(&self, verdict: Option<bool>) -> bool {
        match verdict {
            None => true,
            Some(_) if self.private => true,
            Some(true) => self.loopback,
            Some(false) => false,
        }
    }
}

fn host_is_loopback(host: Host<&str>) -> bool {
    match host {
        Host::Ipv4(a) => oracle_v4(a) == Some(true),
        Host::Ipv6(a) => oracle_v6(a) == Some(true),
        Host::Domain(d) => local_name(d),
    }
}

fn check_accepted(settings: &Settings, url: &Url, issuer: Option<&Url>) {
    let host = url.host().expect("an accepted URL has a host");
    let loopback = host_is_loopback(host.clone());
    match url.scheme() {
        "https" => {}
        "http" => assert!(
            settings.loopback && loopback,
            "plain http accepted to {url}"
        ),
        other => panic!("scheme {other} accepted: {url}"),
    }
    match host {
        Host::Ipv4(a) => assert!(settings.passes(oracle_v4(a)), "{a} accepted: {url}"),
        Host::Ipv6(a) => assert!(settings.passes(oracle_v6(a)), "{a} accepted: {url}"),
        Host::Domain(d) => {
            assert!(!d.ends_with('.'), "a name ending in a dot accepted: {url}");
            if local_name(d) {
                assert!(
                    settings.loopback || settings.private,
                    "local name accepted: {url}"
                );
            }
        }
    }
    if let Some(issuer) = issuer {
        let same = match (issuer.host(), url.host()) {
            (Some(Host::Domain(a)), Some(Host::Domain(b))) => {
                a.trim_end_matches('.').eq_ignore_ascii_case(b)
            }
            (a, b) => a == b,
        };
        let both_loopback =
            settings.loopback && loopback && issuer.host().is_some_and(host_is_loopback);
        assert!(
            same || both_loopback,
            "host of {url} accepted though the issuer is {issuer}"
        );
    }
}

/// A secret the error must not show: present, with at least 4 letters or
/// digits, and not also written elsewhere in the text.
fn secrets(text: &str) -> Vec<String> {
    let Ok(url) = Url::parse(text) else {
        return Vec::new();
    };
    [
        url.password().map(str::to_owned),
        url.query().map(str::to_owned),
    ]
    .into_iter()
    .flatten()
    // Distinctive, so the URL's normalised host or path cannot also hold
    // it (as written, or as the parser serialises it: `%EF%BF%BD` for an
    // invalid byte may appear in the host too).
    .filter(|s| {
        s.bytes().filter(u8::is_ascii_alphanumeric).count() >= 4
            && text.matches(s.as_str()).count() == 1
            && url.as_str().matches(s.as_str()).count() == 1
    })
    .collect()
}

fuzz_target!(|input: &[u8]| {
    let [flags, addr @ ..] = input else {
        return;
    };
    let settings = Settings {
        loopback: flags & 1 != 0,
        private: flags & 2 != 0,
    };
    let redirect = flags & 4 != 0;
    let guard = UrlGuard::builder()
        .allow_http_loopback(settings.loopback)
        .allow_private(settings.private)
        .build()
        .expect("no allow-list, nothing to refuse");

    // check_resolved over the next 16 bytes, as IPv6 and as IPv4.
    let mut octets = [0u8; 16];
    let n = addr.len().min(16);
    octets[..n].copy_from_slice(&addr[..n]);
    for ip in [
        IpAddr::V6(Ipv6Addr::from(octets)),
        IpAddr::V4(Ipv4Addr::new(octets[0], octets[1], octets[2], octets[3])),
    ] {
        if guard.check_resolved(ip).is_ok() {
            assert!(settings.passes(oracle(ip)), "resolved {ip} accepted");
        }
    }

    let text = String::from_utf8_lossy(addr.get(16..).unwrap_or_default());
    let (context, target) = match text.split_once('\n') {
        Some((context, target)) => (Url::parse(context).ok(), target),
        None => (None, &*text),
    };
    let from_url = context
        .clone()
        .unwrap_or_else(|| Url::parse(DEFAULT_FROM).expect("a URL"));
    // The check this input asks for, on any target (the secret check below
    // runs it again on a control).
    let run = |target: &str| match redirect {
        true => guard.check_redirect(&from_url, target, None),
        false => guard.check(target, context.as_ref()),
    };
    let result = if redirect {
        let from = &from_url;
        let result = run(target);
        if let Ok(url) = &result {
            if from.scheme() == "https" {
                assert_eq!(url.scheme(), "https", "redirect {from} → {url} downgraded");
            }
            check_accepted(&settings, url, None);
        }
        result
    } else {
        let issuer = context.as_ref();
        let result = run(target);
        if let Ok(url) = &result {
            check_accepted(&settings, url, issuer);
        }
        result
    };
    match result {
        Ok(url) => {
            let again = guard
                .check(url.as_str(), None)
                .unwrap_or_else(|e| panic!("{url} accepted, then refused: {e}"));
            assert_eq!(again, url, "checking again changed the URL");
        }
        Err(error) => {
            let shown = error.to_string();
            // The redirect's origin is shown as it is; a secret must not
            // also be written there.
            let from = redirect.then(|| context.as_ref().map_or(DEFAULT_FROM, Url::as_str));
            // A redirect's target means what it means joined to its
            // origin (`https:x@y` from an https page is a path).
            let meant = match redirect {
                true => from
                    .and_then(|from| Url::parse(from).ok()?.join(target).ok())
                    .map(String::from),
                false => Some(target.to_owned()),
            };
            for secret in meant.as_deref().map(secrets).unwrap_or_default() {
                if from.is_some_and(|from| from.contains(&secret)) {
                    continue;
                }
                // Letters the target also holds elsewhere (its scheme, as
                // written, which the parser lowercases; tabs and newlines,
                // which it drops, between them) are not the secret's
                // alone: the error may show them from there.
                let folded: String = target
                    .chars()
                    .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
                    .collect::<String>()
                    .to_ascii_lowercase();
                if folded.matches(&secret.to_ascii_lowercase()).count() > 1 {
                    continue;
                }
                // The guard's own words may hold the same letters
                // (`?back` and "loopback"): what counts is whether the
                // error shows it more often than the error for the same
                // target with the secret written as other letters.
                let prose = match target.contains(&secret) {
                    true => run(&target.replace(&secret, &"Z".repeat(secret.len())))
                        .err()
                        .map_or(0, |e| e.to_string().matches(&secret).count()),
                    false => 0,
                };
                // The URL the error may show — without its user, password
                // and query — can hold the same text by itself (`//` and
                // a host starting `%EF%BF%BD`, for a query `/%EF%BF%BD`).
                let bare = meant
                    .as_deref()
                    .and_then(|meant| Url::parse(meant).ok())
                    .map_or(0, |mut url| {
                        let _ = url.set_username("");
                        let _ = url.set_password(None);
                        url.set_query(None);
                        url.as_str().matches(&secret).count()
                    });
                assert!(
                    shown.matches(&secret).count() <= prose + bare,
                    "the error shows {secret:?}: {shown}"
                );
            }
        }
    }
});
