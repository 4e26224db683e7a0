//! AMDGPU machine code for kfd-emu: decoder, disassembler and wave64 interpreter (GFX9).
#![warn(missing_docs)]

pub mod decode;
pub mod disasm;
pub mod memory;
pub mod paged;
pub mod target;

pub use memory::{AccessKind, AtomicOp, MemFault, Memory};
pub use paged::PagedMemory;
pub use target::Target;
