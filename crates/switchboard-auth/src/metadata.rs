//! The metadata documents OAuth discovery reads, the order their URLs are
//! tried in, and the checks a document must pass before it is used.
//!
//! Pure types and functions: nothing here does I/O. The flow fetches the
//! URLs these functions list, in order, through the SSRF guard, and stops at
//! the first document that parses and passes its check:
//!
//! 1. a 401 or 403 → [`parse_www_authenticate`] → the `Bearer` challenge;
//! 2. [`protected_resource_metadata_urls`] → [`ProtectedResourceMetadata`],
//!    checked by [`check_resource`] (RFC 9728);
//! 3. for an entry of `authorization_servers`,
//!    [`authorization_server_metadata_urls`] → [`AuthorizationServerMetadata`],
//!    checked by [`check_issuer`] and [`require_pkce_s256`] (RFC 8414,
//!    OpenID Connect Discovery);
//! 4. [`choose_scopes`] → the `scope` of the authorization request.
//!
//! A 2025-03-26 server publishes no protected resource metadata: its
//! authorization server lives at its origin, and [`legacy_2025_03_26_endpoints`]
//! names the metadata URL and the default endpoints used when that is missing.

use serde::{Deserialize, Serialize};
use url::Url;

/// The `offline_access` scope, which asks for a refresh token.
pub const OFFLINE_ACCESS: &str = "offline_access";

/// The PKCE method MCP requires.
pub const PKCE_S256: &str = "S256";

/// OAuth 2.0 Protected Resource Metadata (RFC 9728 §2), as an MCP server
/// publishes it. Unknown fields survive a round trip in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier: the server's canonical URI. Sent as the
    /// RFC 8707 `resource` parameter exactly as written here.
    pub resource: String,
    /// Issuer identifiers of the authorization servers that issue tokens for
    /// this resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_servers: Option<Vec<String>>,
    /// The resource's JWK Set document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Scopes the resource uses; requested when the challenge names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How a bearer token may be sent (`header`, `body`, `query`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_methods_supported: Option<Vec<String>>,
    /// A human-readable name for the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// Documentation for developers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_documentation: Option<String>,
    /// The resource's policy on data use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_policy_uri: Option<String>,
    /// The resource's terms of service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_tos_uri: Option<String>,
    /// Every other field, kept as sent.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// OAuth 2.0 Authorization Server Metadata (RFC 8414 §2) or an OpenID
/// Provider configuration, which shares these fields. Unknown fields survive
/// a round trip in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier; must equal the one the well-known URL was
    /// built from ([`check_issuer`]).
    pub issuer: String,
    /// Where the user is sent to authorize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Where codes and refresh tokens are exchanged for tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// The AS's JWK Set document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Scopes the AS knows; `offline_access` here allows asking for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// `response_type` values (`code` for MCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_types_supported: Option<Vec<String>>,
    /// `response_mode` values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_modes_supported: Option<Vec<String>>,
    /// Grant types (`authorization_code`, `refresh_token`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// PKCE methods; MCP requires `S256` here ([`require_pkce_s256`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Token revocation (RFC 7009).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// Token introspection (RFC 7662).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection_endpoint: Option<String>,
    /// Documentation for developers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_documentation: Option<String>,
    /// The AS accepts an HTTPS URL as `client_id` (Client ID Metadata
    /// Documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// The AS sends `iss` in authorization responses (RFC 9207).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Every other field, kept as sent.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl AuthorizationServerMetadata {
    /// Whether `scopes_supported` lists `scope`.
    pub fn advertises_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_deref()
            .is_some_and(|scopes| scopes.iter().any(|s| s == scope))
    }

    /// Whether `code_challenge_methods_supported` lists `S256`.
    pub fn supports_pkce_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_deref()
            .is_some_and(|methods| methods.iter().any(|m| m == PKCE_S256))
    }
}

/// A metadata document that must not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// The authorization server metadata names another issuer than the one
    /// its URL was built from: it may come from an attacker.
    #[error(
        "authorization server metadata for `{expected}` names the issuer `{found}`; it was not used (the authorization server's configuration must name itself)"
    )]
    IssuerMismatch {
        /// The issuer the well-known URL was built from.
        expected: String,
        /// The `issuer` in the document.
        found: String,
    },
    /// The protected resource metadata describes another resource than the
    /// server being connected to.
    #[error(
        "protected resource metadata for `{server}` names the resource `{resource}`; authorization was refused (check the server URL)"
    )]
    ResourceMismatch {
        /// The server's URL, without query or credentials.
        server: String,
        /// The `resource` in the document.
        resource: String,
    },
    /// The protected resource metadata's `resource` is not an absolute URI
    /// without a fragment.
    #[error(
        "protected resource metadata for `{server}` has an invalid `resource` `{resource}`; authorization was refused"
    )]
    InvalidResource {
        /// The server's URL, without query or credentials.
        server: String,
        /// The `resource` in the document.
        resource: String,
    },
    /// The authorization server does not advertise PKCE `S256`, so MCP
    /// forbids using it.
    #[error(
        "authorization server `{issuer}` does not advertise PKCE S256 in `code_challenge_methods_supported`; authorization was refused"
    )]
    PkceUnsupported {
        /// The authorization server's issuer.
        issuer: String,
    },
}

/// One challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The auth scheme as sent (compare with [`Challenge::is_bearer`] or
    /// case-insensitively).
    pub scheme: String,
    /// The token68 form, when the challenge carries one instead of params.
    pub token68: Option<String>,
    /// The auth params in order, names lowercased, quoted values unescaped.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// Whether the scheme is `Bearer` (case-insensitive).
    pub fn is_bearer(&self) -> bool {
        self.scheme.eq_ignore_ascii_case("bearer")
    }

    /// The first param called `name` (case-insensitive).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The protected resource metadata URL (RFC 9728 §5.1), as sent.
    pub fn resource_metadata(&self) -> Option<&str> {
        self.param("resource_metadata")
    }

    /// The space-separated scopes the request needs (RFC 6750 §3), as sent.
    pub fn scope(&self) -> Option<&str> {
        self.param("scope")
    }

    /// The error code, e.g. `invalid_token` or `insufficient_scope`.
    pub fn error(&self) -> Option<&str> {
        self.param("error")
    }

    /// The human-readable error description.
    pub fn error_description(&self) -> Option<&str> {
        self.param("error_description")
    }

    /// Whether this is a step-up challenge (`error="insufficient_scope"`).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error() == Some("insufficient_scope")
    }
}

/// Parses one `WWW-Authenticate` field value into its challenges.
///
/// Follows RFC 9110 §11.6.1: several challenges may share a header, each a
/// scheme followed by a token68 or by comma-separated `name=value` params
/// whose values are tokens or quoted strings with `\` escapes. Scheme and
/// param names are case-insensitive. Lenient where servers are sloppy: an
/// unquoted value runs to the next comma or space (so an unquoted URL
/// survives), and anything unparseable is skipped rather than failing the
/// whole header. A response with several `WWW-Authenticate` fields is parsed
/// one field at a time.
pub fn parse_www_authenticate(header: &str) -> Vec<Challenge> {
    let mut parser = Parser {
        s: header.as_bytes(),
        pos: 0,
    };
    let mut challenges = Vec::new();
    loop {
        parser.skip_while(|b| b == b',' || is_ows(b));
        if parser.at_end() {
            break;
        }
        let scheme = parser.token();
        if scheme.is_empty() {
            // Not a challenge: skip to the next list element.
            parser.pos += 1;
            parser.skip_while(|b| b != b',');
            continue;
        }
        let mut challenge = Challenge {
            scheme: scheme.to_owned(),
            token68: None,
            params: Vec::new(),
        };
        parser.skip_while(is_ows);
        if let Some(token68) = parser.token68() {
            challenge.token68 = Some(token68);
        } else {
            parser.params(&mut challenge.params);
        }
        challenges.push(challenge);
    }
    challenges
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_while(&mut self, f: impl Fn(u8) -> bool) {
        while self.peek().is_some_and(&f) {
            self.pos += 1;
        }
    }

    fn text(&self, start: usize) -> &'a str {
        // Every boundary sits next to an ASCII byte, so it is a char boundary.
        std::str::from_utf8(&self.s[start..self.pos]).unwrap_or_default()
    }

    fn token(&mut self) -> &'a str {
        let start = self.pos;
        self.skip_while(is_tchar);
        self.text(start)
    }

    /// A token68 that fills the rest of the challenge, or nothing (and the
    /// position unchanged).
    fn token68(&mut self) -> Option<String> {
        let start = self.pos;
        self.skip_while(is_token68_char);
        if self.pos == start {
            return None;
        }
        self.skip_while(|b| b == b'=');
        let end = self.pos;
        self.skip_while(is_ows);
        if self.at_end() || self.peek() == Some(b',') {
            return Some(
                std::str::from_utf8(&self.s[start..end])
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
        self.pos = start;
        None
    }

    /// Params up to the next challenge (a token not followed by `=`) or the
    /// end.
    fn params(&mut self, out: &mut Vec<(String, String)>) {
        loop {
            self.skip_while(|b| b == b',' || is_ows(b));
            let start = self.pos;
            let name = self.token();
            if name.is_empty() {
                if !self.at_end() {
                    // Garbage inside the challenge: drop it up to the next comma.
                    self.pos += 1;
                    self.skip_while(|b| b != b',');
                    continue;
                }
                return;
            }
            self.skip_while(is_ows);
            if self.peek() != Some(b'=') {
                // The next challenge's scheme.
                self.pos = start;
                return;
            }
            self.pos += 1;
            self.skip_while(is_ows);
            let value = if self.peek() == Some(b'"') {
                self.quoted_string()
            } else {
                let start = self.pos;
                self.skip_while(|b| b != b',' && !is_ows(b));
                self.text(start).to_owned()
            };
            out.push((name.to_ascii_lowercase(), value));
        }
    }

    /// A quoted string starting at `"`; an unterminated one runs to the end.
    fn quoted_string(&mut self) -> String {
        self.pos += 1;
        let mut value = Vec::new();
        while let Some(b) = self.peek() {
            self.pos += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(escaped) = self.peek() {
                        value.push(escaped);
                        self.pos += 1;
                    }
                }
                _ => value.push(b),
            }
        }
        String::from_utf8_lossy(&value).into_owned()
    }
}

fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token68_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

/// The URLs to try for a server's protected resource metadata, in order.
///
/// The `resource_metadata` URL of the challenge comes first (resolved
/// against the server URL, so a relative one works), then the path-aware
/// well-known URL (`/.well-known/oauth-protected-resource` inserted before
/// the server's path, RFC 9728 §3.1), then the one at the root. The
/// well-known URLs follow the challenge's too, as in the reference SDKs, so
/// a stale `resource_metadata` does not end discovery. No URL appears twice.
pub fn protected_resource_metadata_urls(server: &Url, challenge: Option<&Challenge>) -> Vec<Url> {
    let mut urls = Vec::with_capacity(3);
    if let Some(url) = challenge
        .and_then(Challenge::resource_metadata)
        .and_then(|s| server.join(s).ok())
    {
        urls.push(url);
    }
    let suffix = "/.well-known/oauth-protected-resource";
    let path = server.path().trim_start_matches('/');
    if !path.is_empty() || server.query().is_some() {
        let mut url = origin(server);
        if path.is_empty() {
            url.set_path(suffix);
        } else {
            url.set_path(&format!("{suffix}/{path}"));
        }
        url.set_query(server.query());
        push_unique(&mut urls, url);
    }
    let mut root = origin(server);
    root.set_path(suffix);
    push_unique(&mut urls, root);
    urls
}

/// The URLs to try for an authorization server's metadata, in the order the
/// MCP specification gives (2025-11-25 and 2026-07-28):
///
/// - issuer with a path (`https://auth.example.com/tenant1`):
///   `/.well-known/oauth-authorization-server/tenant1`,
///   `/.well-known/openid-configuration/tenant1`,
///   `/tenant1/.well-known/openid-configuration`;
/// - issuer without one: `/.well-known/oauth-authorization-server`,
///   `/.well-known/openid-configuration`.
///
/// A trailing `/` of the issuer's path is dropped before insertion.
pub fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_matches('/');
    let at = |p: String| {
        let mut url = origin(issuer);
        url.set_path(&p);
        url
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".into()),
            at("/.well-known/openid-configuration".into()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server/{path}")),
            at(format!("/.well-known/openid-configuration/{path}")),
            at(format!("/{path}/.well-known/openid-configuration")),
        ]
    }
}

/// Where a 2025-03-26 server's authorization lives: everything at the
/// server's origin, the path discarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyEndpoints {
    /// The authorization base URL (the origin); also the issuer the metadata
    /// must name.
    pub base: Url,
    /// `/.well-known/oauth-authorization-server`, tried first.
    pub metadata: Url,
    /// `/authorize`, used when there is no metadata.
    pub authorization_endpoint: Url,
    /// `/token`, used when there is no metadata.
    pub token_endpoint: Url,
    /// `/register`, used when there is no metadata.
    pub registration_endpoint: Url,
}

/// The 2025-03-26 metadata URL and default endpoints for a server: its
/// origin plus `/.well-known/oauth-authorization-server`, `/authorize`,
/// `/token` and `/register`.
pub fn legacy_2025_03_26_endpoints(server: &Url) -> LegacyEndpoints {
    let base = origin(server);
    let at = |path: &str| {
        let mut url = base.clone();
        url.set_path(path);
        url
    };
    LegacyEndpoints {
        metadata: at("/.well-known/oauth-authorization-server"),
        authorization_endpoint: at("/authorize"),
        token_endpoint: at("/token"),
        registration_endpoint: at("/register"),
        base,
    }
}

/// Checks that authorization server metadata names the issuer its URL was
/// built from (RFC 8414 §3.3, OpenID Connect Discovery §4.3).
///
/// The comparison is exact against `expected` as serialized; the one
/// spelling tolerated is a root issuer without its `/`
/// (`https://auth.example.com` for `https://auth.example.com/`), since
/// [`Url`] always writes that slash and both spellings build the same
/// well-known URL.
///
/// # Errors
/// [`MetadataError::IssuerMismatch`] when the issuer differs; the document
/// must then not be used.
pub fn check_issuer(
    expected: &Url,
    metadata: &AuthorizationServerMetadata,
) -> Result<(), MetadataError> {
    let expected = expected.as_str();
    let found = metadata.issuer.as_str();
    let root_without_slash = expected
        .strip_suffix('/')
        .filter(|e| e.matches('/').count() == 2);
    if found == expected || root_without_slash == Some(found) {
        Ok(())
    } else {
        Err(MetadataError::IssuerMismatch {
            expected: expected.to_owned(),
            found: found.to_owned(),
        })
    }
}

/// Checks that protected resource metadata describes `server`, and returns
/// the `resource` to send (RFC 8707), exactly as the metadata writes it.
///
/// The `resource` must be an absolute URI without a fragment, with the
/// server's scheme, host (both case-insensitive) and port (the default one
/// implied), and a path that is the server's path or a whole-segment prefix
/// of it: metadata at the root describes the origin (RFC 9728 §3.3), so
/// `https://mcp.example.com` covers `https://mcp.example.com/mcp`, while
/// `https://mcp.example.com/mcp/` does not cover `https://mcp.example.com/mcp`
/// (no slash is added or removed). A query, if the resource has one, must
/// equal the server's.
///
/// # Errors
/// [`MetadataError::InvalidResource`] for a malformed `resource`,
/// [`MetadataError::ResourceMismatch`] for one that does not cover `server`.
pub fn check_resource<'a>(
    server: &Url,
    metadata: &'a ProtectedResourceMetadata,
) -> Result<&'a str, MetadataError> {
    let resource = metadata.resource.as_str();
    let invalid = || MetadataError::InvalidResource {
        server: display_url(server),
        resource: resource.to_owned(),
    };
    let parsed = Url::parse(resource).map_err(|_| invalid())?;
    if parsed.fragment().is_some() || parsed.cannot_be_a_base() {
        return Err(invalid());
    }
    // `Url` lowercases scheme and host and drops the default port, which is
    // exactly the normalisation allowed here; the path it leaves as written.
    let same_origin = parsed.scheme() == server.scheme()
        && parsed.host_str() == server.host_str()
        && parsed.port_or_known_default() == server.port_or_known_default();
    let query_ok = parsed.query().is_none() || parsed.query() == server.query();
    if same_origin && query_ok && path_covers(parsed.path(), server.path()) {
        Ok(resource)
    } else {
        Err(MetadataError::ResourceMismatch {
            server: display_url(server),
            resource: resource.to_owned(),
        })
    }
}

/// Whether a resource at `resource_path` includes `server_path`.
fn path_covers(resource_path: &str, server_path: &str) -> bool {
    if resource_path == "/" || resource_path == server_path {
        return true;
    }
    match server_path.strip_prefix(resource_path) {
        Some(rest) => resource_path.ends_with('/') || rest.starts_with('/'),
        None => false,
    }
}

/// Checks that the authorization server advertises PKCE `S256`; MCP clients
/// must refuse to proceed otherwise, whether the document came from RFC 8414
/// or OpenID Connect discovery.
///
/// # Errors
/// [`MetadataError::PkceUnsupported`] when `code_challenge_methods_supported`
/// is absent or lacks `S256`.
pub fn require_pkce_s256(metadata: &AuthorizationServerMetadata) -> Result<(), MetadataError> {
    if metadata.supports_pkce_s256() {
        Ok(())
    } else {
        Err(MetadataError::PkceUnsupported {
            issuer: metadata.issuer.clone(),
        })
    }
}

/// The `scope` parameter of an authorization request, or `None` to omit it.
///
/// The scopes are the previously requested ones (`earlier`, non-empty on
/// step-up after a 403 `insufficient_scope`, so nothing granted is lost)
/// united with, in priority order, the challenge's `scope`, else the
/// protected resource metadata's `scopes_supported`, else nothing.
/// `offline_access` is kept or added (when `want_offline`) only if the
/// authorization server's `scopes_supported` lists it. The order is
/// first-seen; duplicates are dropped.
pub fn choose_scopes(
    challenge: Option<&Challenge>,
    prm: Option<&ProtectedResourceMetadata>,
    asm: Option<&AuthorizationServerMetadata>,
    earlier: &[String],
    want_offline: bool,
) -> Option<String> {
    let challenged = challenge
        .and_then(Challenge::scope)
        .filter(|s| !s.trim().is_empty());
    let new: Vec<&str> = match challenged {
        Some(scope) => scope.split_ascii_whitespace().collect(),
        None => prm
            .and_then(|p| p.scopes_supported.as_deref())
            .unwrap_or_default()
            .iter()
            .map(String::as_str)
            .collect(),
    };
    let offline_ok = asm.is_some_and(|a| a.advertises_scope(OFFLINE_ACCESS));
    let mut scopes: Vec<&str> = Vec::new();
    let candidates = earlier
        .iter()
        .flat_map(|s| s.split_ascii_whitespace())
        .chain(new)
        .chain(want_offline.then_some(OFFLINE_ACCESS));
    for scope in candidates {
        if (scope != OFFLINE_ACCESS || offline_ok) && !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// The URL's origin, with no credentials, path, query or fragment.
fn origin(url: &Url) -> Url {
    let mut origin = url.clone();
    // Cannot fail for the http(s) URLs discovery deals in.
    let _ = origin.set_username("");
    let _ = origin.set_password(None);
    origin.set_path("");
    origin.set_query(None);
    origin.set_fragment(None);
    origin
}

fn push_unique(urls: &mut Vec<Url>, url: Url) {
    if !urls.contains(&url) {
        urls.push(url);
    }
}

/// A URL for messages: no credentials, no query (either may hold secrets).
fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn urls(list: &[Url]) -> Vec<&str> {
        list.iter().map(Url::as_str).collect()
    }

    fn prm(json: serde_json::Value) -> ProtectedResourceMetadata {
        serde_json::from_value(json).unwrap()
    }

    fn asm(json: serde_json::Value) -> AuthorizationServerMetadata {
        serde_json::from_value(json).unwrap()
    }

    fn bearer(header: &str) -> Challenge {
        parse_www_authenticate(header).remove(0)
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    // --- WWW-Authenticate ---

    #[test]
    fn spec_401_example_with_scope() {
        let header = "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource\",\n                         scope=\"files:read\"";
        let challenges = parse_www_authenticate(&header.replace('\n', ""));
        assert_eq!(challenges.len(), 1);
        let c = &challenges[0];
        assert!(c.is_bearer());
        assert_eq!(
            c.resource_metadata(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.scope(), Some("files:read"));
        assert_eq!(c.error(), None);
    }

    #[test]
    fn spec_403_insufficient_scope_example() {
        let header = "Bearer error=\"insufficient_scope\", scope=\"files:write\", resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource\", error_description=\"File write permission required for this operation\"";
        let c = bearer(header);
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope(), Some("files:write"));
        assert_eq!(
            c.error_description(),
            Some("File write permission required for this operation")
        );
        assert_eq!(c.params.len(), 4);
    }

    #[test]
    fn several_challenges_in_one_header() {
        let challenges = parse_www_authenticate(
            "Basic realm=\"simple\", Newauth realm=\"apps\", type=1, title=\"Login to \\\"apps\\\"\", Bearer scope=\"a b\"",
        );
        let schemes: Vec<&str> = challenges.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "Newauth", "Bearer"]);
        assert_eq!(challenges[1].param("type"), Some("1"));
        assert_eq!(challenges[1].param("title"), Some("Login to \"apps\""));
        assert_eq!(challenges[2].scope(), Some("a b"));
    }

    #[test]
    fn names_are_case_insensitive_and_values_are_kept() {
        let c = bearer("BEARER Resource_Metadata=\"HTTPS://X.example/Meta\" , SCOPE=Read");
        assert!(c.is_bearer());
        assert_eq!(c.resource_metadata(), Some("HTTPS://X.example/Meta"));
        assert_eq!(c.scope(), Some("Read"));
        assert_eq!(c.params[0].0, "resource_metadata");
    }

    #[test]
    fn token68_and_bare_scheme() {
        let challenges = parse_www_authenticate("Negotiate abc+/def==, Bearer, Basic");
        assert_eq!(challenges.len(), 3);
        assert_eq!(challenges[0].token68.as_deref(), Some("abc+/def=="));
        assert!(challenges[0].params.is_empty());
        assert!(challenges[1].is_bearer() && challenges[1].params.is_empty());
        assert_eq!(challenges[2].scheme, "Basic");
    }

    #[test]
    fn lenient_with_unquoted_urls_and_garbage() {
        let c = bearer(
            "Bearer resource_metadata=https://mcp.example.com/.well-known/oauth-protected-resource, error=invalid_token",
        );
        assert_eq!(
            c.resource_metadata(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.error(), Some("invalid_token"));
        // Unterminated quotes and stray separators neither panic nor loop.
        for header in [
            "",
            ",,,",
            "=\"",
            "Bearer scope=\"a",
            "Bearer =x, \"y\", ;",
            "Bearer a=\\",
        ] {
            let _ = parse_www_authenticate(header);
        }
        assert_eq!(bearer("Bearer scope=\"a").scope(), Some("a"));
        assert_eq!(parse_www_authenticate(" , Bearer ;; realm=x").len(), 1);
    }

    #[test]
    fn quoted_values_round_trip() {
        let values = [
            "",
            "plain",
            "a \"quoted\" word",
            "back\\slash",
            "comma, and = sign",
            "caf\u{e9} \u{1f512}",
        ];
        let header = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let escaped = v.replace('\\', "\\\\").replace('"', "\\\"");
                format!("Scheme{i} p=\"{escaped}\", q=\"{escaped}\"")
            })
            .collect::<Vec<_>>()
            .join(", ");
        let challenges = parse_www_authenticate(&header);
        assert_eq!(challenges.len(), values.len(), "{header}");
        for (challenge, value) in challenges.iter().zip(values) {
            assert_eq!(challenge.param("p"), Some(value));
            assert_eq!(challenge.param("q"), Some(value));
        }
    }

    #[test]
    fn every_short_header_parses_without_panic() {
        let alphabet = ["B", "=", "\"", "\\", ",", " ", "a", "\u{e9}"];
        let mut indices = [0usize; 6];
        let mut header = String::new();
        loop {
            for len in 0..=indices.len() {
                header.clear();
                for &i in &indices[..len] {
                    header.push_str(alphabet[i]);
                }
                for challenge in parse_www_authenticate(&header) {
                    assert!(!challenge.scheme.is_empty(), "{header:?}");
                }
            }
            // The next combination, as an odometer.
            let mut digit = 0;
            loop {
                if digit == indices.len() {
                    return;
                }
                indices[digit] += 1;
                if indices[digit] < alphabet.len() {
                    break;
                }
                indices[digit] = 0;
                digit += 1;
            }
        }
    }

    // --- protected resource metadata URLs ---

    #[test]
    fn prm_urls_challenge_then_path_aware_then_root() {
        let server = url("https://example.com/public/mcp");
        let c = bearer("Bearer resource_metadata=\"https://example.com/custom/metadata.json\"");
        assert_eq!(
            urls(&protected_resource_metadata_urls(&server, Some(&c))),
            [
                "https://example.com/custom/metadata.json",
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
    }

    #[test]
    fn prm_urls_without_challenge_url() {
        let server = url("https://example.com/public/mcp");
        let c = bearer("Bearer scope=\"x\"");
        assert_eq!(
            urls(&protected_resource_metadata_urls(&server, Some(&c))),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
    }

    #[test]
    fn prm_urls_for_a_server_at_the_root_are_not_repeated() {
        let server = url("https://user:pw@example.com:8443/");
        assert_eq!(
            urls(&protected_resource_metadata_urls(&server, None)),
            ["https://example.com:8443/.well-known/oauth-protected-resource"]
        );
        let c = bearer(
            "Bearer resource_metadata=\"https://example.com:8443/.well-known/oauth-protected-resource\"",
        );
        assert_eq!(protected_resource_metadata_urls(&server, Some(&c)).len(), 1);
    }

    #[test]
    fn prm_urls_keep_query_and_resolve_relative_challenge_urls() {
        let server = url("https://example.com/mcp?tenant=a#frag");
        let c = bearer("Bearer resource_metadata=\"/meta.json\"");
        assert_eq!(
            urls(&protected_resource_metadata_urls(&server, Some(&c))),
            [
                "https://example.com/meta.json",
                "https://example.com/.well-known/oauth-protected-resource/mcp?tenant=a",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
    }

    // --- authorization server metadata URLs ---

    #[test]
    fn as_urls_for_issuer_with_path() {
        assert_eq!(
            urls(&authorization_server_metadata_urls(&url(
                "https://auth.example.com/tenant1"
            ))),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        // A trailing slash does not produce `//`.
        assert_eq!(
            authorization_server_metadata_urls(&url("https://auth.example.com/a/b/")),
            authorization_server_metadata_urls(&url("https://auth.example.com/a/b"))
        );
    }

    #[test]
    fn as_urls_for_issuer_without_path() {
        let expected = [
            "https://auth.example.com/.well-known/oauth-authorization-server",
            "https://auth.example.com/.well-known/openid-configuration",
        ];
        assert_eq!(
            urls(&authorization_server_metadata_urls(&url(
                "https://auth.example.com"
            ))),
            expected
        );
        assert_eq!(
            urls(&authorization_server_metadata_urls(&url(
                "https://auth.example.com/"
            ))),
            expected
        );
    }

    #[test]
    fn legacy_endpoints_discard_the_path() {
        let legacy = legacy_2025_03_26_endpoints(&url("https://api.example.com/v1/mcp?x=1"));
        assert_eq!(legacy.base.as_str(), "https://api.example.com/");
        assert_eq!(
            legacy.metadata.as_str(),
            "https://api.example.com/.well-known/oauth-authorization-server"
        );
        assert_eq!(
            legacy.authorization_endpoint.as_str(),
            "https://api.example.com/authorize"
        );
        assert_eq!(
            legacy.token_endpoint.as_str(),
            "https://api.example.com/token"
        );
        assert_eq!(
            legacy.registration_endpoint.as_str(),
            "https://api.example.com/register"
        );
        let local = legacy_2025_03_26_endpoints(&url("http://localhost:3000/mcp"));
        assert_eq!(local.token_endpoint.as_str(), "http://localhost:3000/token");
    }

    // --- documents ---

    #[test]
    fn documents_round_trip_unknown_fields() {
        let prm_json = serde_json::json!({
            "resource": "https://mcp.example.com/mcp",
            "authorization_servers": ["https://auth.example.com"],
            "scopes_supported": ["files:read"],
            "bearer_methods_supported": ["header"],
            "resource_documentation": "https://mcp.example.com/docs",
            "dpop_bound_access_tokens_required": false,
            "x-custom": {"a": [1, 2]}
        });
        let parsed = prm(prm_json.clone());
        assert_eq!(
            parsed.authorization_servers.as_deref(),
            Some(&strings(&["https://auth.example.com"])[..])
        );
        assert!(parsed.extra.contains_key("x-custom"));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), prm_json);

        let asm_json = serde_json::json!({
            "issuer": "https://auth.example.com",
            "authorization_endpoint": "https://auth.example.com/authorize",
            "token_endpoint": "https://auth.example.com/token",
            "registration_endpoint": "https://auth.example.com/register",
            "scopes_supported": ["openid", "offline_access"],
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "client_id_metadata_document_supported": true,
            "authorization_response_iss_parameter_supported": true,
            "userinfo_endpoint": "https://auth.example.com/userinfo"
        });
        let parsed = asm(asm_json.clone());
        assert_eq!(parsed.client_id_metadata_document_supported, Some(true));
        assert!(parsed.extra.contains_key("userinfo_endpoint"));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), asm_json);
    }

    #[test]
    fn documents_without_their_required_field_are_refused() {
        assert!(
            serde_json::from_value::<ProtectedResourceMetadata>(serde_json::json!({
                "authorization_servers": ["https://auth.example.com"]
            }))
            .is_err()
        );
        assert!(
            serde_json::from_value::<AuthorizationServerMetadata>(serde_json::json!({
                "token_endpoint": "https://auth.example.com/token"
            }))
            .is_err()
        );
    }

    // --- checks ---

    #[test]
    fn issuer_must_match() {
        let doc = asm(serde_json::json!({"issuer": "https://honest.example"}));
        assert_eq!(check_issuer(&url("https://honest.example"), &doc), Ok(()));
        assert_eq!(
            check_issuer(&url("https://attacker.example"), &doc),
            Err(MetadataError::IssuerMismatch {
                expected: "https://attacker.example/".into(),
                found: "https://honest.example".into(),
            })
        );
        let tenant = asm(serde_json::json!({"issuer": "https://auth.example.com/tenant1"}));
        assert_eq!(
            check_issuer(&url("https://auth.example.com/tenant1"), &tenant),
            Ok(())
        );
        assert!(check_issuer(&url("https://auth.example.com/tenant1/"), &tenant).is_err());
        assert!(check_issuer(&url("https://auth.example.com/tenant2"), &tenant).is_err());
        let slash = asm(serde_json::json!({"issuer": "https://honest.example/"}));
        assert_eq!(check_issuer(&url("https://honest.example"), &slash), Ok(()));
        let other_port = asm(serde_json::json!({"issuer": "https://honest.example:8443"}));
        assert!(check_issuer(&url("https://honest.example"), &other_port).is_err());
    }

    #[test]
    fn resource_matches_the_server() {
        let server = url("https://mcp.example.com/mcp");
        let exact = prm(serde_json::json!({"resource": "https://mcp.example.com/mcp"}));
        assert_eq!(
            check_resource(&server, &exact),
            Ok("https://mcp.example.com/mcp")
        );
        // Scheme and host case and the default port do not matter; the
        // resource is returned as published.
        let upper = prm(serde_json::json!({"resource": "HTTPS://MCP.Example.com:443/mcp"}));
        assert_eq!(
            check_resource(&server, &upper),
            Ok("HTTPS://MCP.Example.com:443/mcp")
        );
        // Root metadata describes the origin; no slash is added.
        let origin = prm(serde_json::json!({"resource": "https://mcp.example.com"}));
        assert_eq!(
            check_resource(&server, &origin),
            Ok("https://mcp.example.com")
        );
        let root = url("https://mcp.example.com");
        assert_eq!(
            check_resource(&root, &origin),
            Ok("https://mcp.example.com")
        );
        let with_slash = prm(serde_json::json!({"resource": "https://mcp.example.com/"}));
        assert_eq!(
            check_resource(&root, &with_slash),
            Ok("https://mcp.example.com/")
        );
    }

    #[test]
    fn resource_mismatch_is_refused() {
        let server = url("https://mcp.example.com/mcp");
        let refused = |resource: &str| {
            check_resource(&server, &prm(serde_json::json!({ "resource": resource }))).map(|_| ())
        };
        for resource in [
            "https://evil.example.com/mcp",
            "http://mcp.example.com/mcp",
            "https://mcp.example.com:8443/mcp",
            "https://mcp.example.com/mcp/",
            "https://mcp.example.com/MCP",
            "https://mcp.example.com/mc",
            "https://mcp.example.com/mcp/v2",
            "https://mcp.example.com/mcp?tenant=a",
        ] {
            assert!(
                matches!(
                    refused(resource),
                    Err(MetadataError::ResourceMismatch { .. })
                ),
                "{resource}"
            );
        }
        for resource in [
            "mcp.example.com",
            "https://mcp.example.com/mcp#fragment",
            "mailto:a@b",
        ] {
            assert!(
                matches!(
                    refused(resource),
                    Err(MetadataError::InvalidResource { .. })
                ),
                "{resource}"
            );
        }
        // A trailing slash on the server's path is covered by the resource
        // without one, and whole segments only.
        let nested = url("https://mcp.example.com/api/mcp/");
        let api = prm(serde_json::json!({"resource": "https://mcp.example.com/api"}));
        assert!(check_resource(&nested, &api).is_ok());
        let apix = url("https://mcp.example.com/apix/mcp");
        assert!(check_resource(&apix, &api).is_err());
    }

    #[test]
    fn resource_errors_hide_the_servers_query() {
        let server = url("https://user:secret@mcp.example.com/mcp?api_key=secret");
        let err = check_resource(
            &server,
            &prm(serde_json::json!({"resource": "https://evil.example.com/mcp"})),
        )
        .unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(
            err.to_string().contains("https://mcp.example.com/mcp"),
            "{err}"
        );
    }

    #[test]
    fn pkce_s256_is_required() {
        let ok = asm(serde_json::json!({
            "issuer": "https://auth.example.com",
            "code_challenge_methods_supported": ["plain", "S256"]
        }));
        assert_eq!(require_pkce_s256(&ok), Ok(()));
        for methods in [
            serde_json::json!(null),
            serde_json::json!([]),
            serde_json::json!(["plain"]),
            serde_json::json!(["s256"]),
        ] {
            let mut doc = serde_json::json!({"issuer": "https://auth.example.com"});
            if !methods.is_null() {
                doc["code_challenge_methods_supported"] = methods;
            }
            assert_eq!(
                require_pkce_s256(&asm(doc)),
                Err(MetadataError::PkceUnsupported {
                    issuer: "https://auth.example.com".into()
                })
            );
        }
    }

    // --- scopes ---

    #[test]
    fn scope_from_the_challenge_first() {
        let c = bearer("Bearer scope=\"mcp:basic\"");
        let p = prm(
            serde_json::json!({"resource": "https://x", "scopes_supported": ["mcp:a", "mcp:b"]}),
        );
        assert_eq!(
            choose_scopes(Some(&c), Some(&p), None, &[], false).as_deref(),
            Some("mcp:basic")
        );
    }

    #[test]
    fn scope_from_scopes_supported_else_omitted() {
        let c = bearer("Bearer resource_metadata=\"https://x/m\", scope=\"\"");
        let p = prm(
            serde_json::json!({"resource": "https://x", "scopes_supported": ["mcp:basic", "mcp:read", "mcp:write"]}),
        );
        assert_eq!(
            choose_scopes(Some(&c), Some(&p), None, &[], false).as_deref(),
            Some("mcp:basic mcp:read mcp:write")
        );
        let bare = prm(serde_json::json!({"resource": "https://x"}));
        assert_eq!(choose_scopes(Some(&c), Some(&bare), None, &[], false), None);
        assert_eq!(choose_scopes(None, None, None, &[], false), None);
    }

    #[test]
    fn step_up_unites_with_earlier_scopes() {
        let c = bearer("Bearer error=\"insufficient_scope\", scope=\"mcp:write mcp:basic\"");
        let p =
            prm(serde_json::json!({"resource": "https://x", "scopes_supported": ["mcp:profile"]}));
        assert_eq!(
            choose_scopes(Some(&c), Some(&p), None, &strings(&["mcp:basic"]), false).as_deref(),
            Some("mcp:basic mcp:write")
        );
        // Earlier scopes may arrive as one space-separated string.
        assert_eq!(
            choose_scopes(Some(&c), None, None, &strings(&["a b"]), false).as_deref(),
            Some("a b mcp:write mcp:basic")
        );
    }

    #[test]
    fn offline_access_only_when_the_as_advertises_it() {
        let c = bearer("Bearer scope=\"mcp:basic\"");
        let with = asm(
            serde_json::json!({"issuer": "https://a", "scopes_supported": ["mcp:basic", "offline_access"]}),
        );
        let without =
            asm(serde_json::json!({"issuer": "https://a", "scopes_supported": ["mcp:basic"]}));
        assert_eq!(
            choose_scopes(Some(&c), None, Some(&with), &[], true).as_deref(),
            Some("mcp:basic offline_access")
        );
        assert_eq!(
            choose_scopes(Some(&c), None, Some(&with), &[], false).as_deref(),
            Some("mcp:basic")
        );
        assert_eq!(
            choose_scopes(Some(&c), None, Some(&without), &[], true).as_deref(),
            Some("mcp:basic")
        );
        assert_eq!(
            choose_scopes(Some(&c), None, None, &[], true).as_deref(),
            Some("mcp:basic")
        );
        // A resource that lists it anyway does not get it past an AS that
        // does not advertise it.
        let p = prm(
            serde_json::json!({"resource": "https://x", "scopes_supported": ["offline_access"]}),
        );
        assert_eq!(
            choose_scopes(None, Some(&p), Some(&without), &[], false),
            None
        );
        // With nothing else to ask for, offline_access alone is still asked.
        assert_eq!(
            choose_scopes(None, None, Some(&with), &[], true).as_deref(),
            Some("offline_access")
        );
    }
}
