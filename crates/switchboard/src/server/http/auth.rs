//! Hosts as users: the endpoint as an OAuth 2.1 protected resource. A
//! [`HostAuth`] checks each request's bearer token and names its user
//! (handed to the handler on its `RequestContext`); a refusal is 401 with
//! a `WWW-Authenticate` challenge naming the resource's metadata (RFC 6750
//! §3, RFC 9728 §5.1), which is served at
//! `/.well-known/oauth-protected-resource` and at its path-suffixed form.

use std::sync::Arc;

use hyper::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use hyper::{HeaderMap, Response, StatusCode};

use super::HttpServeOptions;
use super::body::{ResponseBody, json, reply};
use crate::server::HostUser;
use crate::transport::BoxFuture;

/// Why a host's token was refused, in words fit for its
/// `error_description` (no token, no secret: the host sees it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TokenRefused(pub String);

/// Checks a host's bearer token and names the user it stands for.
pub trait HostAuth: Send + Sync + 'static {
    /// The user `token` names, or why it is refused.
    ///
    /// # Cancel safety
    /// Dropping the future (the host went away) abandons the check.
    fn check<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<HostUser, TokenRefused>>;
}

/// A [`HostAuth`] shared by every connection.
#[derive(Clone)]
pub struct Authenticator(Arc<dyn HostAuth>);

impl Authenticator {
    /// Requests are checked by `auth`.
    pub fn new(auth: impl HostAuth) -> Self {
        Self(Arc::new(auth))
    }
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authenticator")
    }
}

/// What the endpoint says of itself as a protected resource (RFC 9728).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceMetadata {
    /// The resource's URL: the endpoint as hosts reach it
    /// (`https://gateway.example/mcp`), the audience its tokens name.
    pub resource: String,
    /// The issuers whose tokens it takes.
    pub authorization_servers: Vec<String>,
    /// The scopes it knows of; none listed when empty.
    pub scopes_supported: Vec<String>,
}

impl ResourceMetadata {
    /// `resource`, taking tokens of `authorization_servers`.
    pub fn new(resource: impl Into<String>, authorization_servers: Vec<String>) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers,
            scopes_supported: Vec::new(),
        }
    }

    /// Sets [`ResourceMetadata::scopes_supported`].
    #[must_use]
    pub fn scopes_supported(mut self, scopes: Vec<String>) -> Self {
        self.scopes_supported = scopes;
        self
    }

    /// Where the metadata document is, as hosts reach it: the well-known
    /// path inserted before the resource's own path (RFC 9728 §3.1).
    pub fn url(&self) -> String {
        match split_resource(&self.resource) {
            Some((origin, path)) => format!("{origin}{WELL_KNOWN}{path}"),
            None => format!("{}{WELL_KNOWN}", self.resource.trim_end_matches('/')),
        }
    }

    fn document(&self) -> Vec<u8> {
        let mut document = serde_json::json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            document["scopes_supported"] = self.scopes_supported.clone().into();
        }
        serde_json::to_vec(&document).unwrap_or_default()
    }
}

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// A URL's origin (`https://host:port`) and path (`/mcp`, or empty for
/// `/`).
fn split_resource(url: &str) -> Option<(&str, &str)> {
    let scheme_end = url.find("://")? + 3;
    let path_at = url[scheme_end..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| scheme_end + i);
    let path = url[path_at..].split(['?', '#']).next().unwrap_or_default();
    Some((&url[..path_at], path.trim_end_matches('/')))
}

/// The metadata document, when `path` is one of its addresses: the root
/// form, or suffixed with the endpoint's path or the resource's own path.
pub(super) fn metadata_page(
    options: &HttpServeOptions,
    path: &str,
) -> Option<Response<ResponseBody>> {
    let metadata = options.resource_metadata.as_ref()?;
    let suffix = path.strip_prefix(WELL_KNOWN)?;
    let resource_path = split_resource(&metadata.resource).map_or("", |(_, p)| p);
    let ours = suffix.is_empty()
        || suffix == options.path.trim_end_matches('/')
        || (!resource_path.is_empty() && suffix == resource_path);
    ours.then(|| json(StatusCode::OK, metadata.document()))
}

/// The user the request's token names, when the endpoint checks tokens
/// with a [`HostAuth`] (`Ok(None)` when it does not); else the 401 to
/// send.
pub(super) async fn user(
    options: &HttpServeOptions,
    headers: &HeaderMap,
) -> Result<Option<Arc<HostUser>>, Box<Response<ResponseBody>>> {
    let Some(Authenticator(auth)) = &options.host_auth else {
        return Ok(None);
    };
    let sent = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(super::guard::bearer);
    let Some(token) = sent.filter(|t| !t.is_empty()) else {
        return Err(Box::new(challenge(options, None)));
    };
    match auth.check(token).await {
        Ok(user) => Ok(Some(Arc::new(user))),
        Err(TokenRefused(why)) => Err(Box::new(challenge(options, Some(&why)))),
    }
}

/// 401 with its challenge: the metadata's address and scopes, and — when a token was
/// sent — `invalid_token` and why (RFC 6750 §3: no error code for a
/// request that sent none).
fn challenge(options: &HttpServeOptions, refused: Option<&str>) -> Response<ResponseBody> {
    let mut params = Vec::new();
    if let Some(metadata) = &options.resource_metadata {
        params.push(format!(
            "resource_metadata=\"{}\"",
            quotable(&metadata.url())
        ));
        // The scopes to ask for (the MCP spec's SHOULD): all it knows of.
        if !metadata.scopes_supported.is_empty() {
            let scopes = metadata.scopes_supported.join(" ");
            params.push(format!("scope=\"{}\"", quotable(&scopes)));
        }
    }
    if let Some(why) = refused {
        params.push("error=\"invalid_token\"".to_owned());
        params.push(format!("error_description=\"{}\"", quotable(why)));
    }
    let value = if params.is_empty() {
        "Bearer".to_owned()
    } else {
        format!("Bearer {}", params.join(", "))
    };
    let mut response = reply(
        StatusCode::UNAUTHORIZED,
        if refused.is_some() {
            "the access token was refused\n"
        } else {
            "an access token is required\n"
        },
    );
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    response
}

/// `text` as it may stand inside a quoted-string (RFC 6750 §3: printable
/// ASCII without `"` and `\`), bounded.
fn quotable(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .filter(|c| !matches!(c, '"' | '\\'))
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_inserts_the_well_known_path_before_the_resources_own() {
        let at = |resource: &str| ResourceMetadata::new(resource, vec![]).url();
        assert_eq!(
            at("https://gw.example/mcp"),
            "https://gw.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            at("http://127.0.0.1:8080/"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            at("https://gw.example:8443/team/mcp?x=1"),
            "https://gw.example:8443/.well-known/oauth-protected-resource/team/mcp"
        );
    }

    #[test]
    fn a_description_cannot_break_out_of_its_quotes() {
        assert_eq!(quotable("a\"b\\c\r\nd\u{7f}é"), "abcd");
    }
}
