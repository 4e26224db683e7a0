//! The kinds of memory a buffer can be made of; below the allocation calls that take one.

/// What memory a [`Buffer`](super::Buffer) is made of.
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
