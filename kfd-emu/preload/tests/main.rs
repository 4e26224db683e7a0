//! The preload's integration tests, as one binary: unmodified ROCm user space (`rocm`) and HIP
//! programs (`hip`) on kfd-emu through the interposer. The two families never run at the same
//! time (`common::family`); tests within one run beside each other.

mod common;

mod hip;
mod rocm;
