//! Server configuration: the normalized model every dialect loads into.
//!
//! A [`ServerConfig`] as loaded keeps `${VAR}` references as written (so
//! listings never show an expanded secret); expansion produces the
//! runnable copy the [`Hub`](crate::hub::Hub) connects with.

mod model;

pub use model::{
    Dialect, HttpKind, OAuthSettings, Origin, Scope, ServerConfig, ToolFilter, TransportConfig,
};
