//! kfd-emu-isa's integration tests as one binary, a module per area (linking one binary
//! instead of one per file is most of what building them costs): `disasm_golden` and `coverage`
//! hold the decoder and disassembler to LLVM, the others run machine code against the CPU.

mod common;

mod abi;
mod batches;
mod blit;
mod buffer_formats;
mod coverage;
mod disasm_golden;
mod failures;
mod images;
mod kernels;
mod kernels_more;
mod lds_dma;
mod math;
mod ops;
mod ops11;
mod robustness;
mod wmma;
