//! The SSRF guard (`switchboard_auth::ssrf::UrlGuard`) through its public
//! API, on every spelling of an address: each IPv4 literal form `inet_aton`
//! accepts — 1 to 4 parts, each part decimal, octal or hex, in every
//! combination — and the IPv6 forms of refused ranges (unique local,
//! link-local, multicast, IPv4-mapped). The guard's own unit tests pick
//! examples; this goes through the combinations, and checks that a public
//! address passes in each of them (a guard that refused every number would
//! fail here).

use std::net::Ipv4Addr;

use reqwest::Url;
use switchboard_auth::ssrf::{SsrfError, UrlGuard};

/// One address in (and at the edges of) each refused IPv4 range, with the
/// range the guard must name.
const REFUSED_V4: &[(&str, &str)] = &[
    ("0.0.0.0", "0.0.0.0/8"),
    ("0.255.255.255", "0.0.0.0/8"),
    ("10.0.0.0", "10.0.0.0/8"),
    ("10.255.255.255", "10.0.0.0/8"),
    ("100.64.0.0", "100.64.0.0/10"),
    ("100.127.255.255", "100.64.0.0/10"),
    ("127.0.0.1", "127.0.0.0/8"),
    ("127.255.255.254", "127.0.0.0/8"),
    ("169.254.0.1", "169.254.0.0/16"),
    ("169.254.169.254", "169.254.0.0/16"),
    ("172.16.0.0", "172.16.0.0/12"),
    ("172.31.255.255", "172.16.0.0/12"),
    ("192.168.0.0", "192.168.0.0/16"),
    ("192.168.255.255", "192.168.0.0/16"),
    ("224.0.0.1", "224.0.0.0/4"),
    ("240.0.0.1", "240.0.0.0/4"),
    ("255.255.255.254", "240.0.0.0/4"),
    ("255.255.255.255", "255.255.255.255/32"),
];

/// Public addresses just outside those ranges: allowed in every form.
const ALLOWED_V4: &[&str] = &[
    "1.0.0.1",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "169.255.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.167.255.255",
    "192.169.0.0",
    "223.255.255.255",
];

#[derive(Clone, Copy)]
enum Base {
    Decimal,
    Octal,
    Hex,
}

const BASES: [Base; 3] = [Base::Decimal, Base::Octal, Base::Hex];

fn write(value: u32, base: Base) -> String {
    match base {
        Base::Decimal => value.to_string(),
        // inet_aton reads a leading 0 as octal; 0 itself is "0" or "00".
        Base::Octal => format!("0{value:o}"),
        Base::Hex => format!("0x{value:x}"),
    }
}

/// Every `inet_aton` spelling of `addr`: 1 to 4 parts (the last part holds
/// the remaining bytes), each part in each base: 3 + 9 + 27 + 81 forms.
fn spellings(addr: Ipv4Addr) -> Vec<String> {
    let n = u32::from(addr);
    let [a, b, c, _] = addr.octets().map(u32::from);
    let parts_of = |count: usize| -> Vec<u32> {
        match count {
            1 => vec![n],
            2 => vec![a, n & 0x00ff_ffff],
            3 => vec![a, b, n & 0xffff],
            _ => vec![a, b, c, n & 0xff],
        }
    };
    let mut out = Vec::new();
    for count in 1..=4 {
        let parts = parts_of(count);
        for combo in 0..3usize.pow(count as u32) {
            let mut digits = combo;
            let text: Vec<String> = parts
                .iter()
                .map(|&p| {
                    let base = BASES[digits % 3];
                    digits /= 3;
                    write(p, base)
                })
                .collect();
            out.push(text.join("."));
        }
    }
    out
}

#[test]
fn spellings_cover_every_part_count_and_base() {
    let forms = spellings(Ipv4Addr::new(127, 0, 0, 1));
    assert_eq!(forms.len(), 3 + 9 + 27 + 81);
    for form in [
        "2130706433",
        "017700000001",
        "0x7f000001",
        "0177.1",
        "0x7f.01",
        "127.0x1",
        "127.0.01",
        "0x7f.0x0.0x1",
        "0177.00.0x0.1",
        "127.0.0.1",
    ] {
        assert!(forms.iter().any(|f| f == form), "{form} missing");
    }
}

#[test]
fn every_ipv4_spelling_of_a_refused_address_is_refused() {
    let guard = UrlGuard::default();
    for &(addr, range) in REFUSED_V4 {
        let v4: Ipv4Addr = addr.parse().unwrap();
        for form in spellings(v4) {
            for text in [
                format!("https://{form}/"),
                format!("https://{form}./token"),
                format!("https://{}:8443/", form.to_uppercase()),
            ] {
                match guard.check(&text, None) {
                    Err(SsrfError::Address {
                        addr: judged,
                        range: named,
                        ..
                    }) => {
                        assert_eq!(judged, std::net::IpAddr::V4(v4), "{text}");
                        assert_eq!(named, range, "{text}");
                    }
                    other => panic!("{text} ({addr}): {other:?}"),
                }
            }
        }
    }
}

#[test]
fn every_ipv4_spelling_of_a_public_address_is_allowed() {
    let guard = UrlGuard::default();
    for addr in ALLOWED_V4 {
        let v4: Ipv4Addr = addr.parse().unwrap();
        for form in spellings(v4) {
            let text = format!("https://{form}/");
            let checked = guard.check(&text, None);
            let url = checked.unwrap_or_else(|e| panic!("{text} ({addr}): {e}"));
            // The guard hands back the URL as it will be fetched: the
            // address it judged, not another reading of the digits.
            assert_eq!(url.host_str(), Some(*addr), "{text}");
        }
    }
}

#[test]
fn loopback_http_is_allowed_in_every_spelling_only_when_asked() {
    let strict = UrlGuard::default();
    let loopback = UrlGuard::builder()
        .allow_http_loopback(true)
        .build()
        .unwrap();
    for form in spellings(Ipv4Addr::new(127, 0, 0, 1)) {
        let text = format!("http://{form}:3000/");
        assert!(
            matches!(strict.check(&text, None), Err(SsrfError::Scheme { .. })),
            "{text}"
        );
        assert!(loopback.check(&text, None).is_ok(), "{text}");
    }
    // Plain http to anything else stays refused, however it is written.
    for form in spellings(Ipv4Addr::new(10, 0, 0, 1))
        .into_iter()
        .chain(spellings(Ipv4Addr::new(93, 184, 216, 34)))
    {
        let text = format!("http://{form}/");
        assert!(
            matches!(loopback.check(&text, None), Err(SsrfError::Scheme { .. })),
            "{text}"
        );
    }
}

#[test]
fn refused_ipv6_ranges_in_their_spellings() {
    let guard = UrlGuard::default();
    let cases: &[(&str, &str)] = &[
        // Unique local, fc00::/7: both halves, both ends.
        ("[fc00::]", "fc00::/7"),
        ("[fcff:ffff::1]", "fc00::/7"),
        ("[fd00::1]", "fc00::/7"),
        ("[FDFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF]", "fc00::/7"),
        // Link-local, fe80::/10.
        ("[fe80::]", "fe80::/10"),
        ("[fe80:0:0:0:0:0:0:1]", "fe80::/10"),
        ("[febf:ffff::1]", "fe80::/10"),
        // Multicast, ff00::/8, every scope.
        ("[ff00::]", "ff00::/8"),
        ("[ff01::1]", "ff00::/8"),
        ("[ff02::1:ff00:1]", "ff00::/8"),
        ("[ff0e::101]", "ff00::/8"),
        ("[ffff:ffff::]", "ff00::/8"),
        // Site-local (deprecated), fec0::/10.
        ("[fec0::1]", "fec0::/10"),
        // IPv4-mapped, ::ffff:0:0/96: judged by the IPv4 address, dotted
        // or in hex, whatever the case.
        ("[::ffff:127.0.0.1]", "127.0.0.0/8"),
        ("[::ffff:7f00:1]", "127.0.0.0/8"),
        ("[0:0:0:0:0:ffff:7f00:1]", "127.0.0.0/8"),
        ("[::FFFF:A00:1]", "10.0.0.0/8"),
        ("[::ffff:100.64.0.1]", "100.64.0.0/10"),
        ("[::ffff:6440:1]", "100.64.0.0/10"),
        ("[::ffff:169.254.169.254]", "169.254.0.0/16"),
        ("[::ffff:a9fe:a9fe]", "169.254.0.0/16"),
        ("[::ffff:172.16.0.1]", "172.16.0.0/12"),
        ("[::ffff:192.168.0.1]", "192.168.0.0/16"),
        ("[::ffff:0.0.0.0]", "0.0.0.0/8"),
        ("[::ffff:224.0.0.1]", "224.0.0.0/4"),
        ("[::ffff:240.0.0.1]", "240.0.0.0/4"),
        ("[::ffff:255.255.255.255]", "255.255.255.255/32"),
    ];
    for &(host, range) in cases {
        let text = format!("https://{host}/");
        match guard.check(&text, None) {
            Err(SsrfError::Address { range: named, .. }) => assert_eq!(named, range, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    // Public IPv4 inside ::ffff:0:0/96 and global IPv6 next to the refused
    // ranges pass.
    for host in [
        "[::ffff:93.184.216.34]",
        "[::ffff:100.128.0.1]",
        "[fbff:ffff::1]",
        "[2606:4700:4700::1111]",
    ] {
        let text = format!("https://{host}/");
        let checked = guard.check(&text, None);
        assert!(checked.is_ok(), "{text}: {checked:?}");
    }
}

#[test]
fn redirects_are_rechecked_in_every_spelling() {
    let guard = UrlGuard::default();
    let issuer = Url::parse("https://auth.example.com/").unwrap();
    let from = Url::parse("https://auth.example.com/authorize").unwrap();
    for form in spellings(Ipv4Addr::new(169, 254, 169, 254)) {
        for to in [format!("https://{form}/latest/"), format!("//{form}/")] {
            let refused = guard.check_redirect(&from, &to, Some(&issuer));
            assert!(
                matches!(refused, Err(SsrfError::Address { .. })),
                "{to}: {refused:?}"
            );
        }
    }
    // A public address in any spelling is still not the issuer's host.
    for form in spellings(Ipv4Addr::new(93, 184, 216, 34)) {
        let to = format!("https://{form}/");
        let refused = guard.check_redirect(&from, &to, Some(&issuer));
        assert!(
            matches!(refused, Err(SsrfError::HostNotAllowed { .. })),
            "{to}: {refused:?}"
        );
    }
}
