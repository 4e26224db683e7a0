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
    /// recorded offsets, oldest first, and `tail` is where the oldest starts (the end of the
    /// last one released). With nothing in flight the ring is empty and both restart at 0.
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
        if self.in_flight.is_empty() {
            // Every region has been released: the next starts at the beginning, so any region
            // no larger than the ring fits (from where the last ended, one longer than the rest
            // of the ring would be pushed past the end and seem not to fit).
            self.head = 0;
            self.tail = 0;
        }
        let mut start = self.head;
        // A region never wraps around the end of the ring: one that does not fit before the end
        // starts at the beginning, if the regions in flight leave room there.
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

#[cfg(all(test, feature = "emu"))]
mod tests {
    use super::*;
    use crate::memory::MemoryKind;

    /// A ring over 4096 bytes of GTT, and the device its signals come from.
    fn ring() -> (crate::Kfd, KernargRing) {
        let kfd = crate::Kfd::builder()
            .emulated(kfd_emu::EmuConfig::new(kfd_emu::Preset::Gfx90a, 1))
            .open()
            .expect("emulated device");
        let gpu = kfd.gpu(0).expect("a GPU");
        let mem = gpu.alloc(4096, MemoryKind::GttCoherent).expect("GTT");
        assert_eq!(mem.allocated_size(), 4096);
        (kfd, KernargRing::new(mem).expect("ring"))
    }

    /// A completion signal of a submission still running (its regions are free at 0).
    fn running(kfd: &crate::Kfd) -> Signal {
        kfd.create_signal(1).expect("signal")
    }

    #[test]
    fn a_long_region_fits_once_everything_before_it_completed() {
        let (kfd, mut ring) = ring();
        // 2048 bytes, then 3072: the second fits neither after the first (up to the end of the
        // ring) nor before it, and the first is still running, so there is no room yet.
        let first = running(&kfd);
        assert_eq!(ring.try_alloc(2048, &first, 0).unwrap(), Some(0));
        let second = running(&kfd);
        assert_eq!(ring.try_alloc(3072, &second, 0).unwrap(), None);
        assert!(ring.oldest().is_some(), "the first region is in flight");
        // The first completes: nothing is in flight, so the whole ring is free.
        first.store(0).unwrap();
        let off = ring
            .try_alloc(3072, &second, 0)
            .unwrap()
            .expect("an empty ring takes any region no larger than itself");
        assert_eq!(off % 4096, 0, "the region starts at the beginning");
        second.store(0).unwrap();
        // Likewise the whole ring after a short region.
        let third = running(&kfd);
        assert_eq!(
            ring.try_alloc(64, &third, 0).unwrap().map(|o| o % 4096),
            Some(0)
        );
        third.store(0).unwrap();
        let fourth = running(&kfd);
        assert_eq!(
            ring.try_alloc(4096, &fourth, 0).unwrap().map(|o| o % 4096),
            Some(0)
        );
    }

    #[test]
    fn a_region_never_overlaps_one_still_in_flight() {
        let (kfd, mut ring) = ring();
        // [0, 1024) completes, [1024, 2048) keeps running.
        let (done, running_1k) = (running(&kfd), running(&kfd));
        assert_eq!(ring.try_alloc(1024, &done, 0).unwrap(), Some(0));
        assert_eq!(ring.try_alloc(1024, &running_1k, 0).unwrap(), Some(1024));
        done.store(0).unwrap();
        // 2048 bytes fit after the running region, up to the end of the ring.
        let running_2k = running(&kfd);
        assert_eq!(ring.try_alloc(2048, &running_2k, 0).unwrap(), Some(2048));
        // Only [0, 1024) is free: more than that waits, 1024 bytes take it.
        let next = running(&kfd);
        assert_eq!(ring.try_alloc(1024 + 64, &next, 0).unwrap(), None);
        let off = ring
            .try_alloc(1024, &next, 0)
            .unwrap()
            .expect("room at the start");
        assert_eq!(off % 4096, 0);
        // Full: even the smallest region waits, for the oldest running submission.
        let last = running(&kfd);
        assert_eq!(ring.try_alloc(64, &last, 0).unwrap(), None);
        assert_eq!(
            ring.oldest().map(|(s, t)| (s.handle(), t)),
            Some((running_1k.handle(), 0))
        );
    }
}
