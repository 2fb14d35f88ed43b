//! Who a request is made for: the user a host's access token names, as
//! the endpoint's authenticator found it (Streamable HTTP with
//! `HttpServeOptions::host_auth`).

use serde_json::Value;

/// The user a host request carries, as its bearer token names them: the
/// token's subject and all of its claims, checked by the endpoint's
/// authenticator before the handler sees the request.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HostUser {
    /// The token's subject (`sub`): who the user is to the issuer.
    pub sub: String,
    /// The token's claims (a JWT's payload, an introspection's answer),
    /// as the authenticator got them.
    pub claims: Value,
}

impl HostUser {
    /// The user `sub`, with `claims`.
    pub fn new(sub: impl Into<String>, claims: Value) -> Self {
        Self {
            sub: sub.into(),
            claims,
        }
    }
}
