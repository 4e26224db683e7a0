//! The preload's integration tests, as one binary: unmodified ROCm user space (`rocm`) and HIP
//! programs (`hip`) on kfd-emu through `libkfd_emu_preload.so`.

mod common;

mod hip;
mod rocm;
