//! switchboard: a Model Context Protocol client.
#![warn(missing_docs)]

pub mod transport;

pub use switchboard_types as types;
