//! OAuth 2.1 for remote servers (issue 6, in progress): the SSRF guard
//! every server-controlled URL passes, the credential store, the metadata
//! documents and the order they are looked up in, the authorization code
//! flow with the user's part behind an `Authorizer` ([`flow`]), and stored
//! tokens as an `AuthProvider` for the HTTP transports that can also log in
//! itself when a server asks ([`provider`]).

pub mod client_credentials;
pub mod dpop;
pub mod enterprise;
pub mod flow;
pub mod grant;
pub mod jwt;
pub mod jwt_bearer;
pub mod loopback;
pub mod metadata;
pub mod provider;
pub mod resolve;
pub mod ssrf;
pub mod store;
