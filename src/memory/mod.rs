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
pub(crate) mod kind;
pub(crate) mod raw;
pub(crate) mod shards;
mod slice;
pub(crate) mod suballoc;
pub mod svm;
pub(crate) mod va;

pub use buffer::{AllocOptions, Buffer};
pub use host::HostRegistration;
pub use kind::MemoryKind;
pub(crate) use slice::{as_bytes, as_bytes_mut};
pub use slice::{DeviceSlice, Element};
