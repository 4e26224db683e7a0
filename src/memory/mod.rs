//! GPU-accessible memory: [`Buffer`]s of device-local VRAM, host-visible VRAM, GTT and pageable
//! host memory, mapped to one or more GPUs.
//!
//! Placement follows ROCr: kfdrt's own queues, signals and events live in GTT (kernel-pinned,
//! uncached where both sides poll), while bulk host memory should be [`MemoryKind::Pageable`]
//! (USERPTR: ordinary pageable memory with the full system capacity) or caller-owned memory
//! registered with [`crate::Gpu::register_host_memory`]. Small VRAM and GTT buffers come from the
//! `suballoc` pools; large ones get their own 2 MiB-aligned allocation (`va`).

mod buddy;
pub(crate) mod buffer;
mod dmabuf;
pub(crate) mod hdp;
mod host;
pub(crate) mod raw;
pub(crate) mod shards;
mod slice;
pub(crate) mod suballoc;
pub mod svm;
pub(crate) mod va;

pub use buffer::{AllocOptions, Buffer};
pub use host::HostRegistration;
pub(crate) use slice::{as_bytes, as_bytes_mut};
pub use slice::{DeviceSlice, Element};

/// What memory a [`Buffer`] is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// VRAM the CPU does not map: the fastest memory for kernels.
    DeviceLocal,
    /// VRAM the CPU maps too (needs a large BAR, or fits the visible window).
    HostVisibleVram,
    /// GTT: system memory pinned by the kernel, cached and coherent with the CPU.
    GttCoherent,
    /// GTT, uncached: for words both the CPU and the GPU poll (signals, queue pointers, events).
    GttUncached,
    /// Ordinary pageable host memory registered for GPU access (USERPTR).
    Pageable,
}

impl MemoryKind {
    /// Whether the CPU can read and write buffers of this kind.
    pub fn host_accessible(self) -> bool {
        !matches!(self, MemoryKind::DeviceLocal)
    }

    /// Whether this is device memory.
    pub fn is_vram(self) -> bool {
        matches!(self, MemoryKind::DeviceLocal | MemoryKind::HostVisibleVram)
    }

    /// A short human name.
    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::DeviceLocal => "device-local VRAM",
            MemoryKind::HostVisibleVram => "host-visible VRAM",
            MemoryKind::GttCoherent => "coherent GTT",
            MemoryKind::GttUncached => "uncached GTT",
            MemoryKind::Pageable => "pageable host",
        }
    }
}
