//! The SSRF guard: every URL a server hands us during authorization
//! (resource and authorization-server metadata, the token, registration and
//! JWKS endpoints, every redirect) passes [`UrlGuard::check`] before it is
//! fetched.
//!
//! A server must not be able to point the client at the machine it runs on or
//! at the network behind it, so the guard refuses:
//! - any scheme but `https` (plain `http` only to a loopback host, and only
//!   with [`UrlGuardBuilder::allow_http_loopback`]), and any redirect from
//!   `https` to `http`;
//! - private, loopback, link-local, CGNAT and reserved IPv4 addresses, in
//!   every literal form `inet_aton` accepts (`2130706433`, `0177.0.0.1`,
//!   `0x7f.1`, `127.0.1` …), since some resolvers still read them that way;
//! - IPv6 unspecified, loopback, unique-local, link-local, site-local,
//!   multicast, documentation (`2001:db8::/32`, `3fff::/20`), Teredo
//!   (`2001::/32`), other IETF protocol (`2001::/23`) and SRv6 (`5f00::/16`)
//!   addresses, IPv6 with a zone id, and IPv4 addresses carried inside IPv6
//!   (mapped, NAT64, 6to4, compatible) when the IPv4 address would be
//!   refused;
//! - names of the local machine (`localhost`, `*.localhost` …) and host names
//!   ending in a dot, which slip past exact host matching;
//! - any host that is neither the issuer's nor on the allow-list.
//!
//! A host name can still resolve to a private address: the auth code's
//! HTTP client resolves through [`GuardedResolver`](super::resolve::GuardedResolver),
//! which asks [`UrlGuard::check_resolved`] about every address before it
//! is used.
//!
//! ```
//! use switchboard_auth::ssrf::UrlGuard;
//!
//! let guard = UrlGuard::default();
//! let issuer = url::Url::parse("https://auth.example.com/").unwrap();
//! assert!(guard.check("https://auth.example.com/token", Some(&issuer)).is_ok());
//! assert!(guard.check("https://10.0.0.1/token", None).is_err());
//! assert!(guard.check("https://other.example.net/token", Some(&issuer)).is_err());
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use url::{Host, Url};

/// The longest URL text an error message carries.
const MAX_SHOWN_URL: usize = 200;

/// Why a URL, a redirect or a resolved address was refused. Messages carry
/// the URL without user info, query or fragment, which may hold secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SsrfError {
    /// The text is not an absolute URL with a host (or holds a malformed
    /// IPv4 literal, such as `256.0.0.1`).
    #[error("refused {url}: not a valid URL ({reason})")]
    InvalidUrl {
        /// The URL, redacted.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The scheme is not `https` (or is `http` to a host that is not
    /// loopback, or loopback `http` was not allowed).
    #[error(
        "refused {url}: scheme `{scheme}` is not allowed (https only; plain http only to a loopback host, when allowed)"
    )]
    Scheme {
        /// The URL, redacted.
        url: String,
        /// The scheme it used.
        scheme: String,
    },
    /// The host is an address in a refused range.
    #[error("refused {url}: {addr} is {kind} address ({range})")]
    Address {
        /// The URL, redacted.
        url: String,
        /// The address judged (for an IPv4 address inside IPv6, the IPv4 one).
        addr: IpAddr,
        /// What kind of address it is, with its article ("a private").
        kind: &'static str,
        /// The refused range it falls in.
        range: &'static str,
    },
    /// The host is refused for its form: a name of the local machine, a
    /// name ending in a dot, an IPv6 zone id.
    #[error("refused {url}: host `{host}` {reason}")]
    Host {
        /// The URL, redacted.
        url: String,
        /// The host as written.
        host: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The host is neither the issuer's host nor on the allow-list.
    #[error(
        "refused {url}: host `{host}` is neither the issuer's (`{issuer}`) nor on the allow-list (add it there if it is trusted)"
    )]
    HostNotAllowed {
        /// The URL, redacted.
        url: String,
        /// The URL's host.
        host: String,
        /// The issuer's host.
        issuer: String,
    },
    /// A redirect from `https` to plain `http`.
    #[error("refused redirect from {from} to {to}: https must not be downgraded to http")]
    Downgrade {
        /// Where the redirect came from, redacted.
        from: String,
        /// Where it pointed, redacted.
        to: String,
    },
    /// A host name resolved to an address in a refused range.
    #[error("refused to connect to {addr}: it is {kind} address ({range})")]
    ResolvedAddress {
        /// The address the name resolved to.
        addr: IpAddr,
        /// What kind of address it is, with its article.
        kind: &'static str,
        /// The refused range it falls in.
        range: &'static str,
    },
    /// An allow-list entry given to [`UrlGuardBuilder::allow_hosts`] is not
    /// a bare host name or IP address.
    #[error(
        "bad allow-list entry `{entry}`: expected a bare host name or IP address (no scheme, port or path)"
    )]
    BadAllowHost {
        /// The entry as given.
        entry: String,
    },
}

/// Checks server-controlled URLs before they are fetched. Cheap to clone.
///
/// The default guard is the strict one: https only, no private addresses,
/// no allow-list beyond the issuer's host.
#[derive(Clone, Debug, Default)]
pub struct UrlGuard {
    inner: Arc<Settings>,
}

#[derive(Debug, Default)]
struct Settings {
    allow_http_loopback: bool,
    allow_private: bool,
    allow_hosts: Vec<Host<String>>,
}

/// Builds a [`UrlGuard`]; every setter is optional.
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct UrlGuardBuilder {
    allow_http_loopback: bool,
    allow_private: bool,
    allow_hosts: Vec<String>,
}

impl UrlGuardBuilder {
    /// Allow loopback hosts (`127.0.0.0/8`, `::1`, `localhost`), over plain
    /// `http` as well as `https`, and loopback addresses a name resolves to.
    /// For local servers and the conformance suite; off by default.
    pub fn allow_http_loopback(mut self, allow: bool) -> Self {
        self.allow_http_loopback = allow;
        self
    }

    /// Hosts allowed besides the issuer's, matched exactly and
    /// case-insensitively (`auth.example.com`, `192.0.2.7`, `[2001:db8::1]`).
    /// They lift only the host match: an allowed host at a private address
    /// is still refused.
    pub fn allow_hosts(mut self, hosts: impl IntoIterator<Item = String>) -> Self {
        self.allow_hosts.extend(hosts);
        self
    }

    /// Allow every address range, loopback included (for tests and local
    /// development); the scheme and host-match rules still apply. Off by
    /// default.
    pub fn allow_private(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// The guard.
    ///
    /// # Errors
    /// [`SsrfError::BadAllowHost`] for the first allow-list entry that is not
    /// a bare host name or IP address.
    pub fn build(self) -> Result<UrlGuard, SsrfError> {
        let mut allow_hosts = Vec::with_capacity(self.allow_hosts.len());
        for entry in self.allow_hosts {
            let bad = || SsrfError::BadAllowHost {
                entry: entry.clone(),
            };
            let trimmed = entry.trim().to_ascii_lowercase();
            let trimmed = trimmed.strip_suffix('.').unwrap_or(&trimmed);
            // A bare IPv6 address is accepted without its brackets too.
            let bracketed;
            let text = if trimmed.parse::<Ipv6Addr>().is_ok() {
                bracketed = format!("[{trimmed}]");
                bracketed.as_str()
            } else {
                trimmed
            };
            if text.is_empty() || text.contains(['/', '@', '?', '#']) {
                return Err(bad());
            }
            let host = Host::parse(text).map_err(|_| bad())?;
            allow_hosts.push(host);
        }
        Ok(UrlGuard {
            inner: Arc::new(Settings {
                allow_http_loopback: self.allow_http_loopback,
                allow_private: self.allow_private,
                allow_hosts,
            }),
        })
    }
}

impl UrlGuard {
    /// A builder with the strict defaults.
    pub fn builder() -> UrlGuardBuilder {
        UrlGuardBuilder::default()
    }

    /// Checks a URL before it is fetched and returns it parsed. With an
    /// `issuer`, the URL's host must be the issuer's host or on the
    /// allow-list (loopback hosts count as one host when loopback is
    /// allowed); without one, the host is not matched.
    ///
    /// # Errors
    /// An [`SsrfError`] naming what was refused and why.
    pub fn check(&self, url: &str, issuer: Option<&Url>) -> Result<Url, SsrfError> {
        let raw_v4 = precheck_raw(url)?;
        let parsed = Url::parse(url).map_err(|e| SsrfError::InvalidUrl {
            url: redact_raw(url),
            reason: e.to_string(),
        })?;
        self.check_parsed(parsed, raw_v4, issuer)
    }

    /// Checks where a redirect from `from` points (`to`, the `Location`
    /// header, which may be relative) with the same rules as
    /// [`check`](Self::check), and never lets `https` become `http`.
    ///
    /// # Errors
    /// [`SsrfError::Downgrade`] for `https` → `http`; otherwise as
    /// [`check`](Self::check).
    pub fn check_redirect(
        &self,
        from: &Url,
        to: &str,
        issuer: Option<&Url>,
    ) -> Result<Url, SsrfError> {
        let raw_v4 = precheck_raw(to)?;
        let joined = from.join(to).map_err(|e| SsrfError::InvalidUrl {
            url: redact_raw(to),
            reason: e.to_string(),
        })?;
        if from.scheme() == "https" && joined.scheme() != "https" {
            return Err(SsrfError::Downgrade {
                from: redact(from),
                to: redact(&joined),
            });
        }
        self.check_parsed(joined, raw_v4, issuer)
    }

    /// Checks an address a host name resolved to, before connecting to it:
    /// a public name may resolve to a private address. Loopback addresses
    /// pass when loopback is allowed, every address when private ones are.
    ///
    /// # Errors
    /// [`SsrfError::ResolvedAddress`] for an address in a refused range.
    pub fn check_resolved(&self, addr: IpAddr) -> Result<(), SsrfError> {
        match self.refused(addr) {
            None => Ok(()),
            Some(b) => Err(SsrfError::ResolvedAddress {
                addr: b.addr,
                kind: b.kind,
                range: b.range,
            }),
        }
    }

    /// `raw_v4` is the host as an `inet_aton` literal read from the text
    /// before `url` normalised it, in case a resolver would read it
    /// differently.
    fn check_parsed(
        &self,
        url: Url,
        raw_v4: Option<Ipv4Addr>,
        issuer: Option<&Url>,
    ) -> Result<Url, SsrfError> {
        let shown = redact(&url);
        if !matches!(url.scheme(), "https" | "http") {
            return Err(SsrfError::Scheme {
                url: shown,
                scheme: url.scheme().to_owned(),
            });
        }
        let Some(host) = url.host() else {
            return Err(SsrfError::InvalidUrl {
                url: shown,
                reason: "it has no host".to_owned(),
            });
        };
        let loopback = match host {
            Host::Ipv4(v4) => is_loopback(IpAddr::V4(v4)),
            Host::Ipv6(v6) => is_loopback(IpAddr::V6(v6)),
            Host::Domain(name) => is_local_name(name),
        };
        match url.scheme() {
            "https" => {}
            "http" if loopback && self.inner.allow_http_loopback => {}
            other => {
                return Err(SsrfError::Scheme {
                    url: shown,
                    scheme: other.to_owned(),
                });
            }
        }
        if let Some(v4) = raw_v4 {
            self.check_addr(IpAddr::V4(v4), &shown)?;
        }
        match host {
            Host::Ipv4(v4) => self.check_addr(IpAddr::V4(v4), &shown)?,
            Host::Ipv6(v6) => self.check_addr(IpAddr::V6(v6), &shown)?,
            Host::Domain(name) => {
                if name.ends_with('.') {
                    return Err(SsrfError::Host {
                        url: shown,
                        host: name.to_owned(),
                        reason: "ends with a dot (write the name without it)",
                    });
                }
                if loopback && !self.inner.allow_http_loopback && !self.inner.allow_private {
                    return Err(SsrfError::Host {
                        url: shown,
                        host: name.to_owned(),
                        reason: "names the local machine",
                    });
                }
                // `url` turns every numeric host into an address; this is
                // here in case a future version does not.
                match parse_inet_aton(name) {
                    None => {}
                    Some(Err(reason)) => {
                        return Err(SsrfError::InvalidUrl {
                            url: shown,
                            reason: format!("`{name}` is not a valid IPv4 address: {reason}"),
                        });
                    }
                    Some(Ok(v4)) => self.check_addr(IpAddr::V4(v4), &shown)?,
                }
            }
        }
        if let Some(issuer) = issuer {
            self.check_host_allowed(&url, host, loopback, issuer, shown)?;
        }
        Ok(url)
    }

    fn check_host_allowed(
        &self,
        url: &Url,
        host: Host<&str>,
        loopback: bool,
        issuer: &Url,
        shown: String,
    ) -> Result<(), SsrfError> {
        let host = host.to_owned();
        let issuer_host = issuer.host().map(|h| match h.to_owned() {
            Host::Domain(d) => Host::Domain(d.trim_end_matches('.').to_ascii_lowercase()),
            other => other,
        });
        let same_as_issuer = issuer_host.as_ref() == Some(&host);
        let both_loopback = loopback
            && self.inner.allow_http_loopback
            && issuer_host.as_ref().is_some_and(host_is_loopback);
        if same_as_issuer || both_loopback || self.inner.allow_hosts.contains(&host) {
            return Ok(());
        }
        Err(SsrfError::HostNotAllowed {
            url: shown,
            host: url.host_str().unwrap_or_default().to_owned(),
            issuer: issuer.host_str().unwrap_or("none").to_owned(),
        })
    }

    fn check_addr(&self, addr: IpAddr, shown: &str) -> Result<(), SsrfError> {
        match self.refused(addr) {
            None => Ok(()),
            Some(b) => Err(b.into_error(shown.to_owned())),
        }
    }

    /// The refused range `addr` falls in, given the settings.
    fn refused(&self, addr: IpAddr) -> Option<Blocked> {
        if self.inner.allow_private {
            return None;
        }
        let blocked = classify(addr)?;
        if blocked.loopback && self.inner.allow_http_loopback {
            return None;
        }
        Some(blocked)
    }
}

/// Checks done on the text itself, before `url` normalises it: a zone id
/// (which `url` rejects with a vaguer message) and a malformed `inet_aton`
/// literal. Returns the host read as an `inet_aton` literal, if it is one.
fn precheck_raw(text: &str) -> Result<Option<Ipv4Addr>, SsrfError> {
    let Some(host) = raw_host(text) else {
        return Ok(None);
    };
    if host.starts_with('[') {
        if host.contains('%') {
            return Err(SsrfError::Host {
                url: redact_raw(text),
                host: host.to_owned(),
                reason: "has an IPv6 zone id (it names a local interface)",
            });
        }
        return Ok(None);
    }
    match parse_inet_aton(host) {
        None => Ok(None),
        Some(Err(reason)) => Err(SsrfError::InvalidUrl {
            url: redact_raw(text),
            reason: format!("`{host}` is not a valid IPv4 address: {reason}"),
        }),
        Some(Ok(v4)) => Ok(Some(v4)),
    }
}

/// A refused range an address falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Blocked {
    /// The address judged (the IPv4 one, for IPv4 inside IPv6).
    addr: IpAddr,
    kind: &'static str,
    range: &'static str,
    loopback: bool,
}

impl Blocked {
    fn into_error(self, url: String) -> SsrfError {
        SsrfError::Address {
            url,
            addr: self.addr,
            kind: self.kind,
            range: self.range,
        }
    }
}

/// Refused IPv4 ranges: network, prefix length, kind, range as written.
/// The broadcast address comes before `240.0.0.0/4` so it is named as such.
const V4_REFUSED: &[([u8; 4], u8, &str, &str)] = &[
    ([0, 0, 0, 0], 8, "a \"this network\"", "0.0.0.0/8"),
    ([10, 0, 0, 0], 8, "a private", "10.0.0.0/8"),
    ([100, 64, 0, 0], 10, "a shared (CGNAT)", "100.64.0.0/10"),
    ([127, 0, 0, 0], 8, "a loopback", "127.0.0.0/8"),
    ([169, 254, 0, 0], 16, "a link-local", "169.254.0.0/16"),
    ([172, 16, 0, 0], 12, "a private", "172.16.0.0/12"),
    ([192, 0, 0, 0], 24, "an IETF protocol", "192.0.0.0/24"),
    ([192, 0, 2, 0], 24, "a documentation", "192.0.2.0/24"),
    ([192, 88, 99, 0], 24, "a 6to4 relay", "192.88.99.0/24"),
    ([192, 168, 0, 0], 16, "a private", "192.168.0.0/16"),
    ([198, 18, 0, 0], 15, "a benchmarking", "198.18.0.0/15"),
    ([198, 51, 100, 0], 24, "a documentation", "198.51.100.0/24"),
    ([203, 0, 113, 0], 24, "a documentation", "203.0.113.0/24"),
    ([224, 0, 0, 0], 4, "a multicast", "224.0.0.0/4"),
    (
        [255, 255, 255, 255],
        32,
        "the broadcast",
        "255.255.255.255/32",
    ),
    ([240, 0, 0, 0], 4, "a reserved", "240.0.0.0/4"),
];

fn classify(addr: IpAddr) -> Option<Blocked> {
    match addr {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(addr: Ipv4Addr) -> Option<Blocked> {
    let bits = u32::from(addr);
    V4_REFUSED
        .iter()
        .find(|(net, prefix, _, _)| {
            let mask = u32::MAX.checked_shl(32 - u32::from(*prefix)).unwrap_or(0);
            bits & mask == u32::from_be_bytes(*net)
        })
        .map(|&(net, _, kind, range)| Blocked {
            addr: IpAddr::V4(addr),
            kind,
            range,
            loopback: net[0] == 127,
        })
}

fn classify_v6(addr: Ipv6Addr) -> Option<Blocked> {
    let s = addr.segments();
    let v4_at = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let blocked = |kind, range, loopback| {
        Some(Blocked {
            addr: IpAddr::V6(addr),
            kind,
            range,
            loopback,
        })
    };
    if addr.is_unspecified() {
        return blocked("the unspecified", "::/128", false);
    }
    if addr.is_loopback() {
        return blocked("the loopback", "::1/128", true);
    }
    // IPv4 inside IPv6: judged by the IPv4 address it reaches.
    if let Some(v4) = addr.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        // IPv4-translated, ::ffff:0:0:0/96.
        return classify_v4(v4_at(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64, 64:ff9b::/96.
        return classify_v4(v4_at(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        // 6to4, 2002::/16: the IPv4 address is the next 32 bits.
        return classify_v4(v4_at(s[1], s[2]));
    }
    if s[..6] == [0; 6] {
        return blocked("a deprecated IPv4-compatible", "::/96", false);
    }
    if s[..3] == [0x64, 0xff9b, 1] {
        return blocked("a local-use NAT64", "64:ff9b:1::/48", false);
    }
    if s[..4] == [0x100, 0, 0, 0] {
        return blocked("a discard-only", "100::/64", false);
    }
    if s[0] & 0xfe00 == 0xfc00 {
        return blocked("a unique local", "fc00::/7", false);
    }
    if s[0] & 0xffc0 == 0xfe80 {
        return blocked("a link-local", "fe80::/10", false);
    }
    if s[0] & 0xffc0 == 0xfec0 {
        return blocked("a site-local", "fec0::/10", false);
    }
    if s[0] & 0xff00 == 0xff00 {
        return blocked("a multicast", "ff00::/8", false);
    }
    if s[..2] == [0x2001, 0xdb8] {
        return blocked("a documentation", "2001:db8::/32", false);
    }
    if s[..2] == [0x2001, 0] {
        // The client's IPv4 address is inside, obfuscated, and the relay
        // that reaches it may be anywhere: none of it can be judged.
        return blocked("a Teredo", "2001::/32", false);
    }
    if s[0] == 0x2001 && s[1] < 0x200 {
        // Benchmarking (2001:2::/48), ORCHID (2001:10::/28, 2001:20::/28)
        // and the other IETF protocol assignments: none is an
        // authorization server.
        return blocked("an IETF protocol assignment", "2001::/23", false);
    }
    if s[0] == 0x3fff && s[1] & 0xf000 == 0 {
        return blocked("a documentation", "3fff::/20", false);
    }
    if s[0] == 0x5f00 {
        return blocked("a segment routing (SRv6 SID)", "5f00::/16", false);
    }
    None
}

fn is_loopback(addr: IpAddr) -> bool {
    classify(addr).is_some_and(|b| b.loopback)
}

fn host_is_loopback(host: &Host<String>) -> bool {
    match host {
        Host::Ipv4(v4) => is_loopback(IpAddr::V4(*v4)),
        Host::Ipv6(v6) => is_loopback(IpAddr::V6(*v6)),
        Host::Domain(name) => is_local_name(name),
    }
}

/// Names that mean this machine whatever DNS says.
fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    matches!(
        name.as_str(),
        "localhost" | "localhost.localdomain" | "ip6-localhost" | "ip6-loopback"
    ) || name.ends_with(".localhost")
}

/// Reads a host as `inet_aton` does: 1 to 4 parts separated by dots, each
/// decimal, octal (`0` prefix) or hex (`0x` prefix); every part but the last
/// is one byte, the last fills the remaining bytes. One trailing dot is
/// ignored, as the URL standard does.
///
/// `None` when the host is a name (its last part is not a number);
/// `Some(Err)` when it looks like an address but is not a valid one (a part
/// overflows, too many parts, a bad digit), which is refused rather than
/// handed to a resolver that might read it differently.
fn parse_inet_aton(host: &str) -> Option<Result<Ipv4Addr, &'static str>> {
    let host = host.strip_suffix('.').unwrap_or(host);
    let parts: Vec<&str> = host.split('.').collect();
    let last = parts.last()?;
    if !looks_numeric(last) {
        return None;
    }
    if parts.len() > 4 {
        return Some(Err("more than 4 parts"));
    }
    let mut values = Vec::with_capacity(parts.len());
    for part in &parts {
        match parse_part(part) {
            Some(v) => values.push(v),
            None => return Some(Err("a part is not a number, or is too large")),
        }
    }
    let (last, init) = values.split_last()?;
    if init.iter().any(|&v| v > 255) {
        return Some(Err("a part before the last is larger than 255"));
    }
    let last_bits = 8 * (5 - values.len() as u32);
    if *last >= 1u64 << last_bits {
        return Some(Err("the last part is too large"));
    }
    let mut addr = 0u64;
    for (i, v) in init.iter().enumerate() {
        addr |= v << (24 - 8 * i as u32);
    }
    addr |= last;
    Some(Ok(Ipv4Addr::from(u32::try_from(addr).ok()?)))
}

/// Whether a part is written as a number (of any base, valid or not).
fn looks_numeric(part: &str) -> bool {
    let hex = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X"));
    match hex {
        Some(digits) => digits.bytes().all(|b| b.is_ascii_hexdigit()),
        None => !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// One part's value; `None` for a bad digit, an empty part, or a value too
/// large for any part.
fn parse_part(part: &str) -> Option<u64> {
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            if hex.is_empty() {
                // `0x` alone is zero, as the URL standard reads it.
                return Some(0);
            }
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() || !digits.bytes().all(|b| (b as char).is_digit(radix)) {
        return None;
    }
    // Leading zeros cannot overflow; the rest must fit in 32 bits.
    let significant = digits.trim_start_matches('0');
    if significant.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(significant, radix)
        .ok()
        .filter(|&v| v <= u64::from(u32::MAX))
}

/// The host of an absolute or scheme-relative URL as written (brackets kept
/// for IPv6), or `None` for a relative reference. Best effort: the host
/// `url` parses is always checked as well.
fn raw_host(text: &str) -> Option<&str> {
    let text = text.trim_matches(|c: char| c <= ' ');
    let after = if let Some(rest) = text.strip_prefix("//") {
        rest
    } else {
        let (scheme, rest) = text.split_once(':')?;
        let valid_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if !valid_scheme {
            return None;
        }
        rest.trim_start_matches(['/', '\\'])
    };
    let end = after.find(['/', '\\', '?', '#']).unwrap_or(after.len());
    let authority = &after[..end];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host_port.starts_with('[') {
        let close = host_port.find(']').map_or(host_port.len(), |i| i + 1);
        return Some(&host_port[..close]);
    }
    let host = host_port.split_once(':').map_or(host_port, |(h, _)| h);
    (!host.is_empty()).then_some(host)
}

/// A parsed URL fit for a message: no user info, query or fragment.
fn redact(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    let mut text = shown.to_string();
    if url.query().is_some() || url.fragment().is_some() {
        text.push_str("?…");
    }
    cap(text)
}

/// Unparsed text fit for a message: only what comes before its path — the
/// scheme and the host, user info dropped — and `…` for whatever followed.
/// Text that is no URL may hold anything after that (another line, another
/// URL with a password in it), so none of it is shown.
fn redact_raw(text: &str) -> String {
    let text = text.trim();
    // A URL has no whitespace or control characters: the first one ends it.
    let line_end = text
        .find(|c: char| c.is_whitespace() || c.is_control())
        .unwrap_or(text.len());
    let line = &text[..line_end];
    // The authority is what follows `scheme://` (or a leading `//`), never
    // a `//` further on: one in the path or query (`?next=https://…`) would
    // put everything before it on show.
    let scheme_end = line.find(':').filter(|&end| {
        end > 0
            && line[..end]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    let after_scheme = scheme_end.map_or(0, |end| end + 1);
    let (prefix, rest) = match line[after_scheme..].strip_prefix("//") {
        Some(rest) => (&line[..after_scheme + 2], rest),
        None => ("", line),
    };
    let authority_end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let host = authority
        .rfind('@')
        .map_or(authority, |at| &authority[at + 1..]);
    let mut shown = format!("{prefix}{host}");
    if prefix.len() + authority_end < text.len() {
        shown.push('…');
    }
    cap(shown)
}

fn cap(text: String) -> String {
    if text.chars().count() <= MAX_SHOWN_URL {
        return text;
    }
    let mut capped: String = text.chars().take(MAX_SHOWN_URL).collect();
    capped.push('…');
    capped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict() -> UrlGuard {
        UrlGuard::default()
    }

    /// Text that is no URL shows its scheme and host only: a second line or
    /// URL after it (with a password) is not echoed (found by the `ssrf`
    /// fuzz target, `fuzz/regressions/ssrf/`).
    #[test]
    fn an_unparsed_url_shows_no_user_info_anywhere() {
        let text = "hvEtps://localHos1.0/..01\0]\nhvEtps://LOCAL%r:hunue$@localHost/..?to";
        let shown = redact_raw(text);
        assert_eq!(shown, "hvEtps://localHos1.0…");
        assert_eq!(redact_raw("https://user:pw@exa mple.com/x"), "https://exa…");
        assert_eq!(redact_raw("https://user:pw@host:1/x?y"), "https://host:1…");
        assert_eq!(redact_raw("https://host"), "https://host");
        assert_eq!(redact_raw("mailto:me:pw@host"), "host");
        // A `//` in the query is not where the authority starts (found by
        // the `ssrf` fuzz target): nothing of the query is shown.
        let text = "p:/K254.0..01:80ipo6l-opback80?.1:qps://us=a432+";
        assert_eq!(redact_raw(text), "p:…");
        let error = strict().check(text, None).unwrap_err().to_string();
        assert!(!error.contains("a432"), "{error}");
        let error = strict().check(text, None).unwrap_err().to_string();
        assert!(!error.contains("hunue"), "{error}");
    }

    fn loopback_ok() -> UrlGuard {
        UrlGuard::builder()
            .allow_http_loopback(true)
            .build()
            .unwrap()
    }

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    /// Every literal form of a refused address, with the range it must be
    /// refused for (`None`: refused as not a valid URL / address form).
    const REFUSED: &[(&str, Option<&str>)] = &[
        // IPv4 literals in every inet_aton form, all meaning 127.0.0.1.
        ("https://127.0.0.1/", Some("127.0.0.0/8")),
        ("https://2130706433/", Some("127.0.0.0/8")),
        ("https://0177.0.0.1/", Some("127.0.0.0/8")),
        ("https://0x7f.1/", Some("127.0.0.0/8")),
        ("https://0X7F.0X1/", Some("127.0.0.0/8")),
        ("https://127.1/", Some("127.0.0.0/8")),
        ("https://127.0.1/", Some("127.0.0.0/8")),
        ("https://0x7f.0.0.01/", Some("127.0.0.0/8")),
        ("https://0x7f000001/", Some("127.0.0.0/8")),
        ("https://017700000001/", Some("127.0.0.0/8")),
        ("https://127.0.0.1./", Some("127.0.0.0/8")),
        ("https://user:pw@127.0.0.1:8443/x", Some("127.0.0.0/8")),
        // Other IPv4 ranges, some in odd forms.
        ("https://0.0.0.0/", Some("0.0.0.0/8")),
        ("https://0/", Some("0.0.0.0/8")),
        ("https://10.0.0.1/x", Some("10.0.0.0/8")),
        ("https://167772161/", Some("10.0.0.0/8")),
        ("https://012.1/", Some("10.0.0.0/8")),
        ("https://0xa.0.0.1/", Some("10.0.0.0/8")),
        ("https://100.64.0.1/", Some("100.64.0.0/10")),
        ("https://100.127.255.254/", Some("100.64.0.0/10")),
        (
            "https://169.254.169.254/latest/meta-data/",
            Some("169.254.0.0/16"),
        ),
        ("https://0xa9fea9fe/", Some("169.254.0.0/16")),
        ("https://172.16.0.1/", Some("172.16.0.0/12")),
        ("https://172.31.255.255/", Some("172.16.0.0/12")),
        ("https://192.0.0.8/", Some("192.0.0.0/24")),
        ("https://192.0.2.1/", Some("192.0.2.0/24")),
        ("https://192.88.99.1/", Some("192.88.99.0/24")),
        ("https://192.168.1.1/", Some("192.168.0.0/16")),
        ("https://192.168.257/", Some("192.168.0.0/16")),
        ("https://198.18.0.1/", Some("198.18.0.0/15")),
        ("https://198.19.255.1/", Some("198.18.0.0/15")),
        ("https://198.51.100.7/", Some("198.51.100.0/24")),
        ("https://203.0.113.9/", Some("203.0.113.0/24")),
        ("https://224.0.0.1/", Some("224.0.0.0/4")),
        ("https://239.255.255.250/", Some("224.0.0.0/4")),
        ("https://240.0.0.1/", Some("240.0.0.0/4")),
        ("https://255.255.255.255/", Some("255.255.255.255/32")),
        ("https://4294967295/", Some("255.255.255.255/32")),
        // IPv6.
        ("https://[::]/", Some("::/128")),
        ("https://[::1]/", Some("::1/128")),
        ("https://[0:0:0:0:0:0:0:1]/", Some("::1/128")),
        ("https://[fd00::1]/", Some("fc00::/7")),
        ("https://[fc00::1]/", Some("fc00::/7")),
        ("https://[fe80::1]/", Some("fe80::/10")),
        ("https://[febf::1]/", Some("fe80::/10")),
        ("https://[fec0::1]/", Some("fec0::/10")),
        ("https://[ff02::1]/", Some("ff00::/8")),
        ("https://[ff05::2]/", Some("ff00::/8")),
        ("https://[2001:db8::1]/", Some("2001:db8::/32")),
        ("https://[::ffff:10.0.0.1]/", Some("10.0.0.0/8")),
        ("https://[::ffff:a00:1]/", Some("10.0.0.0/8")),
        ("https://[::ffff:127.0.0.1]/", Some("127.0.0.0/8")),
        ("https://[::ffff:169.254.169.254]/", Some("169.254.0.0/16")),
        ("https://[::ffff:0:a00:1]/", Some("10.0.0.0/8")),
        ("https://[64:ff9b::10.0.0.1]/", Some("10.0.0.0/8")),
        ("https://[64:ff9b::7f00:1]/", Some("127.0.0.0/8")),
        ("https://[64:ff9b:1::1]/", Some("64:ff9b:1::/48")),
        ("https://[2002:a00:1::1]/", Some("10.0.0.0/8")),
        ("https://[::127.0.0.1]/", Some("::/96")),
        ("https://[100::1]/", Some("100::/64")),
        // Not valid addresses at all.
        ("https://256.0.0.1/", None),
        ("https://1.2.3.4.5/", None),
        ("https://0x100.0.0.1/", None),
        ("https://1.2.65536/", None),
        ("https://4294967296/", None),
        ("https://08.0.0.1/", None),
        ("https://99999999999999999999999/", None),
        ("not a url", None),
        ("/relative/path", None),
    ];

    #[test]
    fn refuses_every_form_of_a_refused_address() {
        let guard = strict();
        for &(text, range) in REFUSED {
            let err = guard
                .check(text, None)
                .expect_err(&format!("{text} must be refused"));
            match (range, &err) {
                (Some(want), SsrfError::Address { range, .. }) => {
                    assert_eq!(range, &want, "{text}: {err}");
                }
                (None, SsrfError::InvalidUrl { .. }) => {}
                _ => panic!("{text}: wrong refusal: {err}"),
            }
        }
    }

    #[test]
    fn own_inet_aton_parser_reads_every_form() {
        // What the parser reads: an address, `invalid`, or `name`.
        let cases: &[(&str, &str)] = &[
            ("2130706433", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("0x7f.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("127.0.1", "127.0.0.1"),
            ("0x7f.0.0.01", "127.0.0.1"),
            ("0x7F.0X0.0.0001", "127.0.0.1"),
            ("1.2.3.4.", "1.2.3.4"),
            ("10.0x10203", "10.1.2.3"),
            ("0x", "0.0.0.0"),
            ("00000000000000000000000012", "0.0.0.10"),
            ("4294967295", "255.255.255.255"),
            ("256.0.0.1", "invalid"),
            ("1.256.0.1", "invalid"),
            ("1.2.3.256", "invalid"),
            ("1.2.65536", "invalid"),
            ("1.16777216", "invalid"),
            ("4294967296", "invalid"),
            ("1.2.3.4.5", "invalid"),
            ("09.1", "invalid"),
            ("0xg.1", "invalid"),
            ("1..2", "invalid"),
            ("example.123", "invalid"),
            ("example.com", "name"),
            ("1.2.3.com", "name"),
            ("0xdead.beef", "name"),
        ];
        for &(host, want) in cases {
            let got = match parse_inet_aton(host) {
                Some(Ok(addr)) => addr.to_string(),
                Some(Err(_)) => "invalid".to_owned(),
                None => "name".to_owned(),
            };
            assert_eq!(got, want, "{host}");
        }
    }

    #[test]
    fn every_literal_form_agrees_with_url_and_is_judged_alike() {
        let guard = strict();
        for addr in [
            "127.0.0.1",
            "10.0.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "0.0.0.0",
            "255.255.255.255",
            "93.184.216.34",
            "8.8.4.4",
        ] {
            let v4: Ipv4Addr = addr.parse().unwrap();
            let n = u32::from(v4);
            let [a, b, c, d] = v4.octets();
            let forms = [
                format!("{n}"),
                format!("0x{n:x}"),
                format!("0{n:o}"),
                format!("{a}.{}", n & 0xff_ffff),
                format!("{a}.{b}.{}", n & 0xffff),
                format!("0x{a:x}.0x{:X}", n & 0xff_ffff),
                format!("0{a:o}.0{b:o}.0{c:o}.0{d:o}"),
                format!("0x{a:02x}.0x{b:02x}.0x{c:02x}.0x{d:02x}"),
                format!("{a}.0x{b:x}.0{c:o}.{d}"),
            ];
            let refused = classify(IpAddr::V4(v4)).is_some();
            for form in forms {
                assert_eq!(parse_inet_aton(&form), Some(Ok(v4)), "{form}");
                let text = format!("https://{form}/");
                let parsed = Url::parse(&text).unwrap();
                assert_eq!(parsed.host(), Some(Host::Ipv4(v4)), "{form}");
                assert_eq!(guard.check(&text, None).is_err(), refused, "{form}");
            }
        }
    }

    #[test]
    fn allows_public_addresses_and_names() {
        let guard = strict();
        for text in [
            "https://93.184.216.34/",
            "https://1558767650/",
            "https://8.8.8.8/dns",
            "https://100.128.0.1/",
            "https://172.32.0.1/",
            "https://198.20.0.1/",
            "https://[2606:4700:4700::1111]/",
            "https://[::ffff:93.184.216.34]/",
            "https://[64:ff9b::5db8:d822]/",
            "https://example.com/.well-known/oauth-authorization-server",
            "https://auth.example.com:8443/token?x=1",
        ] {
            let parsed = guard.check(text, None);
            assert!(parsed.is_ok(), "{text}: {}", parsed.unwrap_err());
        }
    }

    #[test]
    fn local_names_trailing_dots_and_zone_ids_are_refused() {
        let guard = strict();
        for text in [
            "https://localhost/",
            "https://LOCALHOST:8080/",
            "https://api.localhost/",
            "https://localhost./",
            "https://ip6-localhost/",
            "https://example.com./",
            "https://[fe80::1%25eth0]/",
            "https://[fe80::1%eth0]/",
            "https://[2606:4700::1%251]/",
        ] {
            let err = guard.check(text, None).unwrap_err();
            assert!(matches!(err, SsrfError::Host { .. }), "{text}: {err}");
        }
    }

    #[test]
    fn http_only_to_loopback_and_only_when_allowed() {
        let strict = strict();
        let loopback = loopback_ok();
        for text in [
            "http://127.0.0.1:3000/",
            "http://localhost:3000/",
            "http://[::1]/",
        ] {
            let err = strict.check(text, None).unwrap_err();
            assert!(matches!(err, SsrfError::Scheme { .. }), "{text}: {err}");
            assert!(loopback.check(text, None).is_ok(), "{text}");
        }
        // Odd forms of loopback are loopback too.
        assert!(loopback.check("http://0x7f.1:3000/", None).is_ok());
        assert!(loopback.check("https://127.1/", None).is_ok());
        for text in [
            "http://example.com/",
            "http://93.184.216.34/",
            "http://10.0.0.1/",
            "ftp://127.0.0.1/",
            "file:///etc/passwd",
        ] {
            let err = loopback.check(text, None).unwrap_err();
            assert!(matches!(err, SsrfError::Scheme { .. }), "{text}: {err}");
        }
        // Allowing loopback allows nothing else private.
        let err = loopback.check("https://10.0.0.1/", None).unwrap_err();
        assert!(matches!(err, SsrfError::Address { .. }), "{err}");
    }

    #[test]
    fn allow_private_lifts_address_checks_only() {
        let guard = UrlGuard::builder().allow_private(true).build().unwrap();
        assert!(guard.check("https://10.0.0.1/", None).is_ok());
        assert!(guard.check("https://[fd00::1]/", None).is_ok());
        assert!(guard.check("https://localhost/", None).is_ok());
        assert!(guard.check_resolved("192.168.0.1".parse().unwrap()).is_ok());
        let err = guard.check("http://10.0.0.1/", None).unwrap_err();
        assert!(matches!(err, SsrfError::Scheme { .. }), "{err}");
        let issuer = url("https://auth.example.com/");
        let err = guard.check("https://10.0.0.1/", Some(&issuer)).unwrap_err();
        assert!(matches!(err, SsrfError::HostNotAllowed { .. }), "{err}");
    }

    #[test]
    fn host_must_match_issuer_or_allow_list() {
        let issuer = url("https://Auth.Example.com/tenant");
        let strict = strict();
        assert!(
            strict
                .check("https://auth.example.com:444/token", Some(&issuer))
                .is_ok()
        );
        assert!(
            strict
                .check("https://AUTH.example.com/jwks", Some(&issuer))
                .is_ok()
        );
        for text in [
            "https://evil.example.net/token",
            "https://example.com/token",
            "https://sub.auth.example.com/token",
            "https://auth.example.com.evil.net/token",
        ] {
            let err = strict.check(text, Some(&issuer)).unwrap_err();
            assert!(
                matches!(err, SsrfError::HostNotAllowed { .. }),
                "{text}: {err}"
            );
        }

        let listed = UrlGuard::builder()
            .allow_hosts([
                "Login.Example.NET".to_owned(),
                "93.184.216.34".to_owned(),
                "2606:4700::1".to_owned(),
            ])
            .build()
            .unwrap();
        for text in [
            "https://login.example.net/authorize",
            "https://auth.example.com/token",
            "https://93.184.216.34/",
            "https://[2606:4700::1]/",
        ] {
            let got = listed.check(text, Some(&issuer));
            assert!(got.is_ok(), "{text}: {}", got.unwrap_err());
        }
        let err = listed
            .check("https://other.example.net/", Some(&issuer))
            .unwrap_err();
        assert!(matches!(err, SsrfError::HostNotAllowed { .. }), "{err}");

        // The allow-list lifts the host match, not the address check.
        let private = UrlGuard::builder()
            .allow_hosts(["10.0.0.1".to_owned()])
            .build()
            .unwrap();
        let err = private
            .check("https://10.0.0.1/", Some(&issuer))
            .unwrap_err();
        assert!(matches!(err, SsrfError::Address { .. }), "{err}");
    }

    #[test]
    fn loopback_hosts_count_as_one_when_allowed() {
        let issuer = url("http://localhost:3000/");
        let guard = loopback_ok();
        assert!(
            guard
                .check("http://127.0.0.1:4000/token", Some(&issuer))
                .is_ok()
        );
        let err = guard
            .check("https://example.com/token", Some(&issuer))
            .unwrap_err();
        assert!(matches!(err, SsrfError::HostNotAllowed { .. }), "{err}");
    }

    #[test]
    fn bad_allow_list_entries_are_reported() {
        for entry in [
            "https://x.example",
            "x.example:443",
            "x.example/path",
            "",
            "a b",
        ] {
            let err = UrlGuard::builder()
                .allow_hosts([entry.to_owned()])
                .build()
                .unwrap_err();
            assert_eq!(
                err,
                SsrfError::BadAllowHost {
                    entry: entry.to_owned()
                }
            );
        }
    }

    #[test]
    fn redirects_are_checked_and_never_downgraded() {
        let guard = strict();
        let issuer = url("https://auth.example.com/");
        let from = url("https://auth.example.com/authorize");

        let to = guard
            .check_redirect(&from, "/login?step=2", Some(&issuer))
            .unwrap();
        assert_eq!(to.as_str(), "https://auth.example.com/login?step=2");
        assert!(
            guard
                .check_redirect(&from, "https://auth.example.com/next", Some(&issuer))
                .is_ok()
        );

        let err = guard
            .check_redirect(&from, "http://auth.example.com/next", Some(&issuer))
            .unwrap_err();
        assert!(matches!(err, SsrfError::Downgrade { .. }), "{err}");
        // Not even to loopback, even when loopback http is allowed.
        let err = loopback_ok()
            .check_redirect(&from, "http://127.0.0.1/", None)
            .unwrap_err();
        assert!(matches!(err, SsrfError::Downgrade { .. }), "{err}");

        for to in [
            "https://169.254.169.254/latest/meta-data/",
            "//0x7f.1/",
            "https://[::ffff:a00:1]/",
        ] {
            let err = guard.check_redirect(&from, to, Some(&issuer)).unwrap_err();
            assert!(matches!(err, SsrfError::Address { .. }), "{to}: {err}");
        }
        let err = guard
            .check_redirect(&from, "https://evil.example.net/", Some(&issuer))
            .unwrap_err();
        assert!(matches!(err, SsrfError::HostNotAllowed { .. }), "{err}");
        // A URL inside a relative redirect's query is not its host.
        assert!(
            guard
                .check_redirect(&from, "/cb?next=https://10.0.0.1/", Some(&issuer))
                .is_ok()
        );

        // http → http between loopback hosts is fine when allowed.
        let local = url("http://localhost:3000/authorize");
        assert!(
            loopback_ok()
                .check_redirect(&local, "http://127.0.0.1:3001/cb", None)
                .is_ok()
        );
    }

    #[test]
    fn resolved_addresses_are_checked() {
        let strict = strict();
        for addr in [
            "10.1.2.3",
            "127.0.0.1",
            "::1",
            "fd12::1",
            "::ffff:192.168.0.1",
            "169.254.169.254",
        ] {
            let err = strict.check_resolved(addr.parse().unwrap()).unwrap_err();
            assert!(
                matches!(err, SsrfError::ResolvedAddress { .. }),
                "{addr}: {err}"
            );
        }
        for addr in ["93.184.216.34", "2606:4700:4700::1111"] {
            assert!(
                strict.check_resolved(addr.parse().unwrap()).is_ok(),
                "{addr}"
            );
        }
        let loopback = loopback_ok();
        assert!(
            loopback
                .check_resolved("127.0.0.1".parse().unwrap())
                .is_ok()
        );
        assert!(loopback.check_resolved("::1".parse().unwrap()).is_ok());
        assert!(
            loopback
                .check_resolved("10.0.0.1".parse().unwrap())
                .is_err()
        );
    }

    #[test]
    fn special_purpose_v6_ranges_are_refused() {
        let strict = strict();
        for (addr, range) in [
            ("2001::5efe:c000:221", "2001::/32"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::/32"),
            ("2001:2::1", "2001::/23"),
            ("2001:10::1", "2001::/23"),
            ("2001:20::1", "2001::/23"),
            ("3fff::1", "3fff::/20"),
            ("3fff:fff::1", "3fff::/20"),
            ("5f00::1", "5f00::/16"),
        ] {
            let err = strict.check_resolved(addr.parse().unwrap()).unwrap_err();
            assert!(
                matches!(err, SsrfError::ResolvedAddress { range: r, .. } if r == range),
                "{addr}: {err}"
            );
            let err = strict
                .check(&format!("https://[{addr}]/"), None)
                .unwrap_err();
            assert!(matches!(err, SsrfError::Address { .. }), "{addr}: {err}");
        }
        // The neighbours of those ranges are ordinary global addresses.
        for addr in [
            "2001:200::1",
            "3fff:1000::1",
            "5f01::1",
            "2001:4860:4860::8888",
        ] {
            assert!(
                strict.check_resolved(addr.parse().unwrap()).is_ok(),
                "{addr}"
            );
        }
    }

    #[test]
    fn messages_say_what_and_why_without_secrets() {
        let guard = strict();
        let err = guard
            .check("https://10.0.0.1/x?token=s3cret#frag", None)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "refused https://10.0.0.1/x?…: 10.0.0.1 is a private address (10.0.0.0/8)"
        );
        let err = guard
            .check("https://user:hunter2@0x7f.1/?code=s3cret", None)
            .unwrap_err();
        let text = err.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("s3cret"),
            "{text}"
        );
        assert!(text.contains("127.0.0.1 is a loopback address"), "{text}");
        let err = guard
            .check("https://user:hunter2@256.0.0.1/?code=s3cret", None)
            .unwrap_err();
        let text = err.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("s3cret"),
            "{text}"
        );
        let err = guard
            .check("https://user:hunter2@[fe80::1%25eth0]/?code=s3cret", None)
            .unwrap_err();
        let text = err.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("s3cret"),
            "{text}"
        );
        assert!(text.contains("zone id"), "{text}");
        let err = guard
            .check("http://example.com/?k=s3cret", None)
            .unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }
}
