//! OAuth 2.1 for remote servers (issue 6, in progress): the pieces that do
//! not depend on the flow — the SSRF guard every server-controlled URL
//! passes, the credential store, and the metadata documents and the order
//! they are looked up in.

pub mod flow;
pub mod metadata;
pub mod ssrf;
pub mod store;
