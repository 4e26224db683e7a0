//! The aql crate's integration tests as one binary, a module per area (one link instead of one
//! per file). The loom model check (`tests/loom.rs`) stays a binary of its own: it builds only
//! under `--cfg loom`.

mod packets;
mod ring;
