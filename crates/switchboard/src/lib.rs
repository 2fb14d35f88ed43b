//! switchboard: a Model Context Protocol client for both protocol eras.
//!
//! ```no_run
//! use switchboard::Client;
//! use switchboard::transport::stdio::StdioConfig;
//!
//! # async fn demo() -> switchboard::Result<()> {
//! let client = Client::connect(StdioConfig::new("npx").args(["-y", "@modelcontextprotocol/server-everything"])).await?;
//! println!("{} speaks {}", client.server_name(), client.protocol_version());
//! for tool in client.list_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let result = client.call_tool("echo", Some(serde_json::json!({"message": "hi"}).as_object().unwrap().clone())).await?;
//! println!("{:?}", result.content);
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! ## Layers
//! Wire types ([`types`]) → JSON-RPC engine ([`engine`]) → transports
//! ([`transport`]) → the typed [`Client`]. See `docs/ARCHITECTURE.md`.
//!
//! ## Cargo features
//! | feature | default | what it adds |
//! |---|---|---|
//! | `stdio` | yes | [`transport::stdio`]: spawn local servers |
//! | `http` | yes | [`transport::http`]: Streamable HTTP (both eras) and legacy HTTP+SSE |
//! | `websocket` | no | `transport::ws`: `ws://` and `wss://` servers, subprotocol `mcp` |
#![warn(missing_docs)]

pub mod client;
pub mod engine;
pub mod error;
#[cfg(any(feature = "http", feature = "http-server"))]
mod param_headers;
pub mod server;
pub mod transport;
pub mod url_display;

// These live in the client layer; the paths they had at the top stay.
pub use client::output_schema as schema;
pub use client::{events, handlers};

pub use client::app::{App, AppProblem};
pub use client::events::{Event, EventStream, ListKind};
pub use client::handlers::{
    BoxFuture, ElicitationHandler, FormRequest, HandlerContext, HandlerError, Roots, RootsHandler,
    SamplingHandler, UrlRequest,
};
pub use client::skills::{Skill, SkillFileContents, SkillProblem};
pub use client::tasks::TaskOptions;
pub use client::{
    Client, ClientBuilder, EraMode, ProbeWait, RawList, ServerSession, Subscription,
    SubscriptionEvent,
};
pub use engine::{Progress, RawResult, RequestOptions};
pub use error::{Error, Result};
pub use switchboard_types as types;
