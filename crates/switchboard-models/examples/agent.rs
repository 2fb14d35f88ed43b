//! SKELETON — owned by the agent helper.
fn main() {}
