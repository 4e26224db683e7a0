//! The aql crate's integration tests as one binary, a module per area (one link instead of one
//! per file). Built with `--cfg loom`, the ring runs over loom's atomics and the binary holds
//! only the loom model check (`loom.rs`):
//! `RUSTFLAGS="--cfg loom" cargo test -p kfdrt-aql --test main --release`.

#[cfg(loom)]
#[path = "loom.rs"]
mod loom_model;
#[cfg(not(loom))]
mod packets;
#[cfg(not(loom))]
mod ring;
