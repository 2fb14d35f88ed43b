//! Settings of an OAuth authorization server in front of the test server
//! (`--auth`, [`ServerConfig::with_auth`](crate::ServerConfig::with_auth)).
//!
//! Only the settings live here, so that one [`ServerConfig`](crate::ServerConfig)
//! describes a server whatever serves it. This crate serves stdio and has
//! no authorization server; `switchboard-testkit`'s HTTP front end
//! (unpublished) is the one that reads them.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

/// Default access-token lifetime (`--auth-token-ttl-secs`).
pub const DEFAULT_TOKEN_TTL_SECS: u64 = 3600;

/// Deliberate misbehaviours of the authorization server (`--auth-quirk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthQuirk {
    /// A refresh request is answered HTTP 200 with
    /// `{"error":"invalid_refresh_token"}` (as some providers do).
    Refresh200Error,
    /// A refresh request is answered HTTP 200 with the error as an object,
    /// `{"error":{"code":"invalid_refresh_token","message":…}}` (as some
    /// APIs shape their errors).
    Refresh200ErrorObject,
    /// Dynamic registration makes every client confidential
    /// (`client_secret_basic` with a secret), even one that asked for
    /// `none`: RFC 7591 §3.2.1 lets the server replace requested metadata.
    ConfidentialClients,
    /// `admin_echo` answers 403 `insufficient_scope` whatever the token's
    /// scopes: step-up never succeeds.
    StepUpLoop,
}

impl FromStr for AuthQuirk {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "refresh-200-error" => Ok(AuthQuirk::Refresh200Error),
            "refresh-200-error-object" => Ok(AuthQuirk::Refresh200ErrorObject),
            "confidential-clients" => Ok(AuthQuirk::ConfidentialClients),
            "step-up-loop" => Ok(AuthQuirk::StepUpLoop),
            other => Err(format!(
                "unknown --auth-quirk {other:?} (expected refresh-200-error, \
                 refresh-200-error-object, confidential-clients or step-up-loop)"
            )),
        }
    }
}

impl fmt::Display for AuthQuirk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AuthQuirk::Refresh200Error => "refresh-200-error",
            AuthQuirk::Refresh200ErrorObject => "refresh-200-error-object",
            AuthQuirk::ConfidentialClients => "confidential-clients",
            AuthQuirk::StepUpLoop => "step-up-loop",
        })
    }
}

/// Settings of the built-in authorization server (`--auth` and friends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// Access-token lifetime in seconds (`--auth-token-ttl-secs`).
    pub token_ttl_secs: u64,
    /// Enabled quirks (`--auth-quirk`, repeatable).
    pub quirks: Vec<AuthQuirk>,
    /// A path appended to the issuer (`--auth-issuer-suffix`), to simulate
    /// an issuer change between runs.
    pub issuer_suffix: Option<String>,
    /// Protected resources beside the server's own `/mcp` that access
    /// tokens may be asked for (`--auth-resource`, repeatable): a gateway
    /// in front that takes this server's issuer as its own.
    pub resources: Vec<String>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            token_ttl_secs: DEFAULT_TOKEN_TTL_SECS,
            quirks: Vec::new(),
            issuer_suffix: None,
            resources: Vec::new(),
        }
    }
}

impl AuthConfig {
    /// Set the access-token lifetime.
    pub fn with_token_ttl_secs(mut self, secs: u64) -> Self {
        self.token_ttl_secs = secs;
        self
    }

    /// Enable a quirk.
    pub fn with_quirk(mut self, quirk: AuthQuirk) -> Self {
        if !self.quirks.contains(&quirk) {
            self.quirks.push(quirk);
        }
        self
    }

    /// Append `suffix` (a path segment) to the issuer.
    pub fn with_issuer_suffix(mut self, suffix: impl Into<String>) -> Self {
        self.issuer_suffix = Some(suffix.into());
        self
    }

    /// Whether `quirk` is enabled.
    pub fn has_quirk(&self, quirk: AuthQuirk) -> bool {
        self.quirks.contains(&quirk)
    }

    /// The issuer identifier of a server listening on `addr` (what
    /// `--http` prints as `auth issuer …`): `http://IP:PORT`, plus
    /// `/SUFFIX` with an issuer suffix.
    pub fn issuer_for(&self, addr: SocketAddr) -> String {
        issuer(&base_url(addr), self.issuer_suffix.as_deref())
    }
}

/// Validate an `--auth-issuer-suffix` value: path segments of unreserved
/// characters, so the issuer needs no encoding.
#[doc(hidden)]
pub fn check_issuer_suffix(s: &str) -> Result<String, String> {
    let s = s.trim_matches('/');
    let ok = !s.is_empty()
        && s.split('/').all(|seg| {
            !seg.is_empty()
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        });
    if ok {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "--auth-issuer-suffix expects path segments of letters, digits, '-', '.', '_' or \
             '~', got {s:?}"
        ))
    }
}

/// `http://IP:PORT` for a listening address (an unspecified address is
/// reached over loopback).
#[doc(hidden)]
pub fn base_url(addr: SocketAddr) -> String {
    let mut addr = addr;
    if addr.ip().is_unspecified() {
        addr.set_ip(if addr.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    format!("http://{addr}")
}

/// The issuer of an authorization server at `base` (`http://IP:PORT`),
/// with an optional path suffix.
#[doc(hidden)]
pub fn issuer(base: &str, suffix: Option<&str>) -> String {
    match suffix {
        Some(s) => format!("{base}/{s}"),
        None => base.to_owned(),
    }
}
