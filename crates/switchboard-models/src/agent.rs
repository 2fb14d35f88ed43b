//! SKELETON — owned by the agent helper.
