//! The pm4 crate's integration tests as one binary, a module per area (one link instead of
//! one per file).

mod decode_errors;
mod golden;
mod props;
mod ring;
