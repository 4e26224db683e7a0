//! The memory an AQL processor touches on every packet: the ring and the read and write
//! pointers.
//!
//! The queue holds these buffers for as long as it lives (`CREATE_QUEUE` takes a reference on
//! each, and unmapping one is refused meanwhile, as `kfd_queue_acquire_buffers` does), so their
//! host addresses are resolved once, when the processor starts, instead of through the page
//! table on every access. The page table's fast path costs about 150 instructions and a full
//! barrier per access (it pins the thread against a concurrent unmap), and a round trip made
//! six such accesses on its critical path: the write pointer, the header, the packet, then
//! the INVALID header and the read pointer before the next poll.
//!
//! What cannot be resolved (a range outside one mapping, a read-only ring, host-visible VRAM
//! whose reads strict mode checks for unflushed CPU writes) goes through the page table as
//! before, with its faults.

use crate::vm::{GpuFault, GpuVm};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Host addresses of a queue's ring and of the pages holding its pointers (the read pointer's
/// page also holds the rest of the runtime's `amd_queue_t`, whose properties the processor
/// reads per packet), where they could be resolved.
pub(super) struct QueueMemory {
    ranges: [Option<Range>; 3],
}

/// The GPU page size: the queue holds each pointer's whole page.
const PAGE: u64 = 4096;

/// `len` bytes at GPU address `va`, at host address `host`.
#[derive(Clone, Copy)]
struct Range {
    va: u64,
    len: u64,
    host: usize,
    /// The page table would allow the GPU to write it.
    writable: bool,
}

impl Range {
    fn resolve(vm: &GpuVm, va: u64, len: u64, writable: bool) -> Option<Range> {
        let host = vm.held_host(va, len, writable)?;
        Some(Range {
            va,
            len,
            host,
            writable,
        })
    }

    /// The host address of `va..va+len` when it lies inside this range and is aligned for
    /// an access of `len` bytes (4, 8 or a whole 64-byte slot).
    fn host(&self, va: u64, len: u64) -> Option<usize> {
        let inside = va >= self.va && va - self.va + len <= self.len;
        let aligned = va % len.min(8) == 0;
        (inside && aligned).then(|| self.host + (va - self.va) as usize)
    }
}

impl QueueMemory {
    /// Resolves the ring (`ring_size` bytes at `ring`) and the pages of the pointers at `rptr`
    /// (which the processor writes) and `wptr` (which it only reads). Only call it for a queue
    /// whose buffers are held for the caller's whole life.
    pub(super) fn resolve(vm: &GpuVm, ring: u64, ring_size: u64, rptr: u64, wptr: u64) -> Self {
        let page = |va: u64| va & !(PAGE - 1);
        QueueMemory {
            ranges: [
                Range::resolve(vm, ring, ring_size, true),
                Range::resolve(vm, page(rptr), PAGE, true),
                Range::resolve(vm, page(wptr), PAGE, false),
            ],
        }
    }

    /// The host address of `va..va+len` for a read (or a `write`), if a resolved range holds it.
    fn host(&self, va: u64, len: u64, write: bool) -> Option<usize> {
        self.ranges
            .iter()
            .flatten()
            .filter(|r| r.writable || !write)
            .find_map(|r| r.host(va, len))
    }

    /// Reads a u32 (acquire: a header is read before its body).
    pub(super) fn read_u32(&self, vm: &GpuVm, va: u64) -> Result<u32, GpuFault> {
        match self.host(va, 4, false) {
            // SAFETY: 4 aligned bytes of held queue memory.
            Some(h) => Ok(unsafe { &*(h as *const AtomicU32) }.load(Ordering::Acquire)),
            None => vm.read_u32(va),
        }
    }

    /// Reads a u64.
    pub(super) fn read_u64(&self, vm: &GpuVm, va: u64) -> Result<u64, GpuFault> {
        match self.host(va, 8, false) {
            // SAFETY: 8 aligned bytes of held queue memory.
            Some(h) => Ok(unsafe { &*(h as *const AtomicU64) }.load(Ordering::Acquire)),
            None => vm.read_u64(va),
        }
    }

    /// Writes a u32.
    pub(super) fn write_u32(&self, vm: &GpuVm, va: u64, v: u32) -> Result<(), GpuFault> {
        let Some(h) = self.host(va, 4, true) else {
            return vm.write_u32(va, v);
        };
        // SAFETY: 4 aligned bytes of held queue memory the GPU may write.
        unsafe { &*(h as *const AtomicU32) }.store(v, Ordering::Release);
        Ok(())
    }

    /// Writes a u64.
    pub(super) fn write_u64(&self, vm: &GpuVm, va: u64, v: u64) -> Result<(), GpuFault> {
        let Some(h) = self.host(va, 8, true) else {
            return vm.write_u64(va, v);
        };
        // SAFETY: 8 aligned bytes of held queue memory the GPU may write.
        unsafe { &*(h as *const AtomicU64) }.store(v, Ordering::Release);
        Ok(())
    }

    /// Reads a whole 64-byte slot. Like the page table's read, a producer still writing the
    /// slot (which the AQL protocol forbids once the header is valid) may be seen torn.
    pub(super) fn read_slot(&self, vm: &GpuVm, slot: u64) -> Result<[u8; 64], GpuFault> {
        let mut bytes = [0u8; 64];
        match self.host(slot, 64, false) {
            // SAFETY: 64 bytes of held queue memory; `bytes` is a separate buffer.
            Some(h) => unsafe {
                std::ptr::copy_nonoverlapping(h as *const u8, bytes.as_mut_ptr(), 64)
            },
            None => vm.read(slot, &mut bytes)?,
        }
        Ok(bytes)
    }
}
