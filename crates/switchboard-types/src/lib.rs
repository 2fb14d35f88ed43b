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
//!
//! Payloads are typed per method through [`request::Request`]:
//!
//! ```
//! use switchboard_types::request::{CallTool, Request};
//! use switchboard_types::{ContentBlock, RequestOutcome};
//!
//! let result = br#"{"resultType":"complete","content":[{"type":"text","text":"hi"},{"type":"hologram"}]}"#;
//! let outcome: RequestOutcome<<CallTool as Request>::Result> = serde_json::from_slice(result)?;
//! let RequestOutcome::Complete(result) = outcome else { unreachable!() };
//! assert_eq!(result.content[0].as_text(), Some("hi"));
//! assert!(matches!(result.content[1], ContentBlock::Other(_))); // kept, not an error
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! The types cover the union of all five revisions: a field that exists in
//! only some of them is an `Option` and its doc names the revision. Every
//! object that can grow keeps unknown fields in `extra`, so a message
//! re-serializes to what was received.
//!
//! | module | holds |
//! |---|---|
//! | [`meta`] | `_meta` keys, [`ResultType`], [`CacheScope`], [`RequestMeta`], shared params |
//! | [`lifecycle`] | [`Implementation`], capabilities, `initialize`, `server/discover` |
//! | [`content`] | [`ContentBlock`] and its parts |
//! | [`schema`] | [`Schema`], a tool's JSON Schema kept as raw text |
//! | [`tools`], [`resources`], [`prompts`], [`completion`] | server features |
//! | [`logging`], [`notifications`] | log levels, progress, cancellation |
//! | [`sampling`], [`elicitation`], [`roots`] | client features |
//! | [`tasks`] | 2025-11-25 tasks and the 2026-07-28 tasks extension |
//! | [`mrtr`] | multi round-trip requests (2026-07-28), [`RequestOutcome`] |
//! | [`subscriptions`] | `subscriptions/listen` (2026-07-28) |
//! | [`apps`] | the MCP Apps extension: tools' and resources' `_meta.ui`, typed on demand |
//! | [`request`], [`methods`] | typed method markers, method names |
//!
//! ## Cargo features
//!
//! | feature | default | effect |
//! |---|---|---|
//! | *(none)* | | |
#![warn(missing_docs)]

#[macro_use]
mod macros;
mod util;

pub mod apps;
pub mod codes;
pub mod completion;
pub mod content;
pub mod elicitation;
pub mod extra;
pub mod jsonrpc;
pub mod lifecycle;
pub mod logging;
pub mod meta;
pub mod methods;
pub mod mrtr;
pub mod notifications;
pub mod prompts;
pub mod request;
pub mod resources;
pub mod roots;
pub mod sampling;
pub mod schema;
pub mod skills;
pub mod subscriptions;
pub mod tasks;
pub mod tools;
pub mod version;

pub use apps::{
    APP_MIME_TYPE, ResourceUi, ToolUi, UI_EXTENSION, UiCapability, UiCsp, UiPermission, Visibility,
};
pub use completion::*;
pub use content::*;
pub use elicitation::*;
pub use extra::Extra;
pub use jsonrpc::{ErrorObject, JsonRpcMessage, RequestId};
pub use lifecycle::*;
pub use logging::*;
pub use meta::*;
pub use mrtr::*;
pub use notifications::*;
pub use prompts::*;
pub use request::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use schema::Schema;
pub use skills::{
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, ReadDirectoryRequestParams,
    ReadDirectoryResult, SkillEntry, SkillFile, SkillFiles,
};
pub use subscriptions::*;
pub use tasks::*;
pub use tools::*;
pub use version::{Era, ProtocolVersion};
