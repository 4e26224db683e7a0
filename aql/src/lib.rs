//! AQL (HSA Architected Queuing Language) for kfdrt: typed packets with their 64-byte encodings,
//! the `amd_queue_t` / `amd_signal_t` / kernel-descriptor ABI structs, the error bits a command
//! processor reports through a queue's inactive signal ([`queue_error`]), and
//! [`ring::AqlRing`], the multi-producer ring writer that publishes each packet's header last.
//!
//! Pure Rust: no system calls. Layouts follow ROCr's `amd_hsa_queue.h`, `amd_hsa_signal.h`,
//! `hsa.h` and LLVM's `AMDHSAKernelDescriptor.h`.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod abi;
mod header;
mod packet;
pub mod queue_error;
pub mod reuse;
pub mod ring;
pub mod scratch;
mod sync;

pub use abi::{
    code_properties, queue_offsets, signal_offsets, AmdQueue, AmdSignal, KernelDescriptor,
    AMD_SIGNAL_KIND_USER, QUEUE_FEATURE_AGENT_DISPATCH, QUEUE_FEATURE_KERNEL_DISPATCH,
    QUEUE_PROPERTY_ENABLE_PROFILING, QUEUE_PROPERTY_ENABLE_TRAP_HANDLER, QUEUE_PROPERTY_IS_PTR64,
    QUEUE_PROPERTY_USE_SCRATCH_ONCE,
};
pub use header::{is_valid_header_word, FenceScope, Header, PacketType, INVALID_HEADER_WORD};
pub use packet::{
    add_encoded_kernarg_base, encoded_barrier, set_encoded_barrier, set_encoded_completion_signal,
    BarrierPacket, BarrierValuePacket, KernelDispatchPacket, Packet, Pm4IbPacket,
    AMD_FORMAT_BARRIER_VALUE, AMD_FORMAT_PM4_IB,
};

/// Size of every AQL packet in bytes.
pub const PACKET_SIZE: usize = 64;

/// The most work-items a work-group may have (every AMD GPU's limit, which ROCr and the CP
/// enforce).
pub const MAX_WORK_GROUP_ITEMS: u64 = 1024;

/// Work-items in a work-group of `size` (per dimension), computed in 64 bits: a 32-bit
/// product of three sizes can wrap to a small number and slip past [`MAX_WORK_GROUP_ITEMS`].
#[inline]
pub fn work_group_items(size: [u32; 3]) -> u64 {
    size.iter().map(|&s| u64::from(s)).product()
}

/// Why 16 dwords are not a packet kfdrt understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Header type byte beyond the known types.
    #[error("unknown packet type {0}")]
    UnknownType(u8),
    /// Fence scope 3 (reserved).
    #[error("reserved fence scope {0}")]
    BadFenceScope(u8),
    /// A vendor packet with an AMD format kfdrt does not know.
    #[error("unknown AMD vendor packet format {0}")]
    UnknownVendorFormat(u8),
    /// A PM4-IB vendor packet whose embedded command is malformed.
    #[error("malformed PM4 indirect-buffer vendor packet")]
    BadVendorPacket,
    /// The slot holds an INVALID header (no packet published).
    #[error("slot holds no packet (INVALID header)")]
    NotPublished,
    /// A packet type the GPU does not execute.
    #[error("unsupported packet type {0:?}")]
    Unsupported(PacketType),
}
