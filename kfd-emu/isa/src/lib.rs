//! AMDGPU machine code for kfd-emu: decoder, disassembler and wave64 interpreter (GFX9).
#![warn(missing_docs)]

pub mod decode;
pub mod descriptor;
pub mod disasm;
pub mod dispatch;
pub mod error;
mod exec;
pub mod memory;
pub mod paged;
pub mod program;
pub mod target;

pub use descriptor::KernelDescriptor;
pub use dispatch::{Apertures, DispatchSetup, RunControl, ScratchBacking};
pub use error::WaveError;
pub use exec::{run_workgroup, Stats};
pub use memory::{AccessKind, AtomicOp, MemFault, Memory};
pub use paged::PagedMemory;
pub use program::CodeCache;
pub use target::Target;
