//! The sdma crate's integration tests as one binary, a module per area (one link instead of
//! one per file).

mod errors;
mod golden;
mod props;
mod ring;
mod split;
