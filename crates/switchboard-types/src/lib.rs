//! Model Context Protocol wire types for every revision, 2024-11-05 through
//! 2026-07-28. Serde only: no runtime, no I/O.
//!
//! ```
//! use switchboard_types::jsonrpc::{Incoming, JsonRpcMessage};
//!
//! let line = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
//! let Incoming::Single(JsonRpcMessage::Response(response)) = Incoming::from_slice(line)? else {
//!     unreachable!()
//! };
//! assert!(response.outcome.is_ok());
//! # Ok::<(), switchboard_types::jsonrpc::ParseError>(())
//! ```
#![warn(missing_docs)]

pub mod codes;
pub mod jsonrpc;
pub mod version;

pub use jsonrpc::{ErrorObject, JsonRpcMessage, RequestId};
pub use version::{Era, ProtocolVersion};
