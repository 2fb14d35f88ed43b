//! stdio transport (in progress).
