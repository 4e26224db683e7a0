//! Kernel-argument memory of a queue: a ring of host-visible memory handed out in submission
//! order and reclaimed when the submission that uses it has completed.
//!
//! Kernel arguments must stay intact until the kernel has finished, not just until the packet
//! processor has read the packet, so a region is tied to its submission's completion signal and
//! reused only after that signal is observed complete.

use crate::error::{Error, Result};
use crate::memory::Buffer;
use crate::signal::Signal;
use std::collections::VecDeque;

/// Kernel arguments are 16-byte aligned by the ABI; ROCr aligns them to 64 (a cache line).
pub const KERNARG_ALIGN: u64 = 64;

pub(crate) struct KernargRing {
    mem: Buffer,
    /// The memory's CPU address (kernarg memory is host-visible GTT).
    cpu: std::ptr::NonNull<u8>,
    size: u64,
    /// Monotonic offsets: `head` is where the next region starts, regions in flight end at the
    /// recorded offsets, oldest first.
    head: u64,
    in_flight: VecDeque<(u64, Signal, i64)>,
    tail: u64,
}

impl KernargRing {
    /// A ring over `mem`, which must be host-visible.
    pub(crate) fn new(mem: Buffer) -> Result<KernargRing> {
        let size = mem.allocated_size();
        let cpu = mem
            .as_ptr()
            .and_then(std::ptr::NonNull::new)
            .expect("kernel-argument memory is GTT, which the CPU maps");
        Ok(KernargRing {
            mem,
            cpu,
            size,
            head: 0,
            in_flight: VecDeque::new(),
            tail: 0,
        })
    }

    /// Releases the regions of completed submissions.
    pub(crate) fn retire(&mut self) {
        while let Some((end, sig, target)) = self.in_flight.front() {
            if sig.value() > *target {
                break;
            }
            self.tail = *end;
            self.in_flight.pop_front();
        }
    }

    /// Reserves `len` bytes for a submission that completes when `signal` reaches `target`,
    /// returning the monotonic start offset; `Ok(None)` when the ring is full of regions whose
    /// submissions are still running (the caller waits on [`KernargRing::oldest`] and retries).
    pub(crate) fn try_alloc(
        &mut self,
        len: u64,
        signal: &Signal,
        target: i64,
    ) -> Result<Option<u64>> {
        let len = len.max(1).div_ceil(KERNARG_ALIGN) * KERNARG_ALIGN;
        if len > self.size {
            return Err(Error::TooLarge {
                what: "kernel argument bytes (the queue's kernarg memory)",
                requested: len,
                limit: self.size,
            });
        }
        self.retire();
        let mut start = self.head;
        // A region never wraps around the end of the ring.
        if start % self.size + len > self.size {
            start += self.size - start % self.size;
        }
        if start + len - self.tail > self.size {
            return Ok(None);
        }
        self.head = start + len;
        self.in_flight
            .push_back((self.head, signal.clone(), target));
        Ok(Some(start))
    }

    /// The GPU address and CPU pointer of monotonic offset `off`.
    pub(crate) fn address(&self, off: u64) -> (u64, *mut u8) {
        let o = off % self.size;
        // SAFETY: `o < size`, inside the mapping `cpu` points to.
        (self.mem.gpu_address() + o, unsafe {
            self.cpu.as_ptr().add(o as usize)
        })
    }

    /// The oldest in-flight signal, to wait on when full.
    pub(crate) fn oldest(&self) -> Option<(Signal, i64)> {
        self.in_flight.front().map(|(_, s, t)| (s.clone(), *t))
    }
}
