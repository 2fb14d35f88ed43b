//! JSON-RPC error codes used by MCP.

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;
/// A requested resource does not exist (`resources/read`).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// The request needs a URL-mode elicitation first (2025-11-25).
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// An HTTP header does not match the body (2026-07-28, `HeaderMismatchError`).
pub const HEADER_MISMATCH: i64 = -32020;
/// The request needs a client capability that was not declared (2026-07-28).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// The requested protocol version is not supported (2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Whether `code` is one of the errors that identify a modern (2026-07-28)
/// server when it answers a `server/discover` probe.
pub fn is_modern_error(code: i64) -> bool {
    matches!(
        code,
        HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION
    )
}
