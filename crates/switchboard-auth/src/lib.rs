//! switchboard-auth: OAuth 2.1 for switchboard's remote servers (MCP
//! authorization). It implements the hook the core's HTTP transports call,
//! [`AuthProvider`](switchboard::transport::http::AuthProvider): credentials
//! for each request, and a second chance after a 401 or 403.
//!
//! ```no_run
//! use std::sync::Arc;
//! use switchboard::Client;
//! use switchboard::transport::http::HttpConfig;
//! use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
//! use switchboard_auth::loopback::{DEFAULT_TIMEOUT, LoopbackReceiver};
//! use switchboard_auth::provider::OAuthProvider;
//! use switchboard_auth::store::default_store;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let url = "https://mcp.example.com/mcp";
//! let receiver = LoopbackReceiver::bind(0).await?;
//! let flow = OAuthFlow::new(OAuthConfig::new("my-app", receiver.redirect_uri(), default_store()?))?;
//! let request = flow.begin(url, None).await?;
//! println!("open {}", request.authorization_url);
//! let answer = receiver.receive(&request.state, DEFAULT_TIMEOUT).await?;
//! let credentials = flow.finish(&answer.code, &answer.state, answer.iss.as_deref()).await?;
//! let provider = Arc::new(OAuthProvider::for_credentials(flow, &credentials));
//! let client = Client::connect(HttpConfig::new(url).auth(provider)).await?;
//! # let _ = client; Ok(()) }
//! ```
//!
//! ## Modules
//! The SSRF guard every server-controlled URL passes ([`ssrf`], and at
//! connect time [`resolve`]), the credential store ([`store`]), the
//! metadata documents and the order they are looked up in ([`metadata`]),
//! the authorization code flow with the user's part behind an `Authorizer`
//! ([`flow`], [`loopback`]), stored tokens as an `AuthProvider` that can
//! also log in itself when a server asks ([`provider`]), grants without a
//! user ([`grant`], [`client_credentials`], [`jwt_bearer`], [`enterprise`]),
//! and signed JWTs and DPoP proofs ([`jwt`], [`dpop`]); on the resource's
//! side, checking the JWT access tokens hosts send ([`access_token`]).
//!
//! ## Cargo features
//! None: the crate is the OAuth part of switchboard's `http` feature, and
//! depends on `switchboard` with that feature.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod access_token;
pub mod client_credentials;
pub mod dpop;
pub mod enterprise;
pub mod flow;
pub mod grant;
pub mod introspection;
pub mod jwt;
pub mod jwt_bearer;
pub mod loopback;
pub mod metadata;
pub mod pending;
mod pkce;
pub mod provider;
pub mod resolve;
pub mod ssrf;
pub mod store;
