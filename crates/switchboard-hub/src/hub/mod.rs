//! The [`Hub`]: named servers, each with a state, connected in parallel.
