//! The GPU faults and resets KFD reports through its exception events, as errors carry them.

use kfd_sys::bindings::kfd_hsa_memory_exception_data;
use std::fmt;

/// A GPU memory fault, as reported with a memory event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryException {
    /// The faulting virtual address (page-aligned by the hardware; 0 when imprecise).
    pub va: u64,
    /// The GPU that faulted.
    pub gpu_id: u32,
    /// The page was not present (not mapped).
    pub not_present: bool,
    /// A write to a read-only page.
    pub read_only: bool,
    /// An instruction fetch from a non-executable page.
    pub no_execute: bool,
    /// No address: an engine exception (an illegal packet, say) rather than a page fault.
    pub imprecise: bool,
}

impl MemoryException {
    pub(crate) fn from_raw(m: &kfd_hsa_memory_exception_data) -> MemoryException {
        MemoryException {
            va: m.va,
            gpu_id: m.gpu_id,
            not_present: m.failure.NotPresent != 0,
            read_only: m.failure.ReadOnly != 0,
            no_execute: m.failure.NoExecute != 0,
            imprecise: m.failure.imprecise != 0,
        }
    }
}

impl fmt::Display for MemoryException {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.imprecise && self.va == 0 {
            return write!(f, "GPU {:#x} raised an exception (no address)", self.gpu_id);
        }
        let why = if self.read_only {
            "write to a read-only page"
        } else if self.no_execute {
            "instruction fetch from a non-executable page"
        } else {
            "page not present"
        };
        write!(
            f,
            "GPU {:#x} page fault at {:#x}: {why}",
            self.gpu_id, self.va
        )
    }
}

/// A GPU reset, as a hardware-exception event reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceReset {
    /// The GPU that was reset.
    pub gpu_id: u32,
    /// Whether VRAM contents were lost.
    pub memory_lost: bool,
    /// KFD's reset cause (`KFD_HW_EXCEPTION_*`).
    pub cause: u32,
}
