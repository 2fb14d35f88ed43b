//! Server configuration: the normalized model every dialect loads into.
//!
//! A [`ServerConfig`] as loaded keeps `${VAR}` references as written (so
//! listings never show an expanded secret); expansion produces the
//! runnable copy the [`Hub`](crate::hub::Hub) connects with.
//!
//! ```no_run
//! use switchboard_hub::config::{LoadOptions, Locations, load};
//!
//! let locations = Locations::from_process().expect("a home directory");
//! let loaded = load(&locations, &LoadOptions::new());
//! for d in &loaded.diagnostics {
//!     eprintln!("{d}");
//! }
//! let mut expander = loaded.expander(&locations);
//! for server in loaded.servers.iter().filter(|s| s.enabled) {
//!     match expander.expand(server) {
//!         Ok(runnable) => { /* hand runnable.config to the hub */ }
//!         Err(e) => eprintln!("{e}"),
//!     }
//! }
//! ```
//!
//! - [`locations`]: where each dialect's files are, per OS;
//! - [`dialect`]: the formats read (each submodule documents its keys;
//!   [`dialect::switchboard`]'s docs describe switchboard's own file);
//! - [`load()`]: which files are read and which server wins (precedence,
//!   duplicates, policy);
//! - [`expand`]: `${VAR}` and friends;
//! - [`policy`]: allow and deny lists;
//! - [`trust`]: servers from project files run only once approved;
//! - [`edit`]: add, remove, enable, disable a server in a file.

mod diag;
// A parse error is made once per bad entry, on a cold path: a large Err
// costs nothing worth boxing for.
#[allow(clippy::result_large_err)]
pub mod dialect;
pub mod edit;
pub mod expand;
pub(crate) mod itself;
pub mod link;
pub mod load;
pub mod locations;
mod model;
pub mod policy;
pub mod secrets;
pub mod trust;

pub use diag::{Diagnostic, Severity};
pub use dialect::InputSpec;
pub use edit::{EditError, Edited, Target, add_server, remove_server, set_enabled};
pub use expand::{ExpandError, Expanded, Expander};
pub use link::{InstallLink, LinkKind, LinkNeed, parse_link};
pub use load::{LoadOptions, LoadedConfig, SkipReason, Skipped, load, load_file, load_text};
pub use locations::{Locations, Os};
pub use model::{
    Dialect, HeadersHelper, HttpKind, OAuthSettings, Origin, Prefix, SamplingSettings, Scope,
    ServerConfig, ServerSampling, ToolFilter, TransportConfig, Trust,
};
pub use policy::{Policy, Rule};
pub use secrets::{Secrets, SecretsError};
pub use trust::{Approval, ApprovalChange, Approvals, ApprovalsError, Reference};
