//! [`Pm4Ring`]: the writer side of a PM4 ring, in dwords.
//!
//! The write pointer is 64-bit and monotonic (gfx9+); the read pointer the CP writes back is a
//! 32-bit dword offset wrapped at the ring size. No packet crosses the end of the ring (the tail
//! is padded with one-dword NOPs), one dword is always left free so that a full ring and an
//! empty one differ, and nothing is written over dwords the CP has not read yet.

use crate::NOP_FILLER;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Errors of the ring writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RingError {
    /// Not enough room before the read pointer now; retry once the CP has read more.
    #[error("ring full")]
    Full,
    /// The packet is longer than the ring minus its one free dword, so it can never be written.
    #[error("packet of {0} dwords is larger than the ring allows")]
    TooLarge(usize),
    /// A size that is not a power of two or under 8 dwords, or a null or misaligned pointer.
    #[error("invalid ring geometry")]
    BadGeometry,
}

/// A single-producer PM4 ring writer.
pub struct Pm4Ring {
    base: *mut u32,
    size: u32,
    rptr: *const AtomicU32,
    wptr_mem: *const AtomicU64,
    doorbell: *const AtomicU64,
    /// Local write pointer: dwords written, committed or not.
    wptr: u64,
}

// SAFETY: the writer owns its position and the ring's free region; the words it shares with the
// CP are accessed atomically. Nothing in it is tied to the creating thread.
unsafe impl Send for Pm4Ring {}

fn misaligned<T>(p: *const T, align: usize) -> bool {
    p.is_null() || p as usize % align != 0
}

impl Pm4Ring {
    /// Creates a writer whose write pointer starts at 0 (a fresh queue's).
    ///
    /// `size_dwords` must be a power of two of at least 8 (KFD requires power-of-two rings);
    /// pointers must be non-null and aligned (4 bytes for `base` and `rptr`, 8 for `wptr` and
    /// `doorbell`), else [`RingError::BadGeometry`].
    ///
    /// # Safety
    /// For as long as the returned writer lives:
    /// - `base` must be valid for writes of `size_dwords` dwords, and no one but this writer
    ///   may write them (the CP only reads them);
    /// - `rptr` must be valid for atomic 32-bit loads, and `wptr` and `doorbell` for atomic
    ///   64-bit stores (the doorbell may be a mapped doorbell page);
    /// - only this writer may store to `wptr` and `doorbell`.
    pub unsafe fn new(
        base: *mut u32,
        size_dwords: u32,
        rptr: *const AtomicU32,
        wptr: *const AtomicU64,
        doorbell: *const AtomicU64,
    ) -> Result<Pm4Ring, RingError> {
        if size_dwords < 8
            || !size_dwords.is_power_of_two()
            || misaligned(base, 4)
            || misaligned(rptr, 4)
            || misaligned(wptr, 8)
            || misaligned(doorbell, 8)
        {
            return Err(RingError::BadGeometry);
        }
        Ok(Pm4Ring {
            base,
            size: size_dwords,
            rptr,
            wptr_mem: wptr,
            doorbell,
            wptr: 0,
        })
    }

    /// The local write pointer (dwords written since creation, committed or not).
    pub fn wptr(&self) -> u64 {
        self.wptr
    }

    /// Ring size in dwords.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The CP's read position in the ring. The value comes from the device: it is reduced
    /// modulo the size, so a bad one can mislead the space count but never index out of bounds.
    fn read_pos(&self) -> u32 {
        // SAFETY: `rptr` is valid for atomic loads while the ring lives (`new`'s contract).
        let rptr = unsafe { &*self.rptr }.load(Ordering::Acquire);
        rptr % self.size
    }

    fn write_pos(&self) -> u32 {
        // The size is a power of two, so the offset is the low bits of the 64-bit pointer.
        (self.wptr % u64::from(self.size)) as u32
    }

    /// Free dwords: the ring size minus the dwords not yet read, minus the one kept empty.
    pub fn space(&self) -> u32 {
        let used = self.write_pos().wrapping_sub(self.read_pos()) % self.size;
        self.size - 1 - used
    }

    /// Whether the CP has read everything written.
    pub fn is_idle(&self) -> bool {
        self.read_pos() == self.write_pos()
    }

    /// Writes `dwords` (one packet, or several back to back) contiguously and returns the new
    /// local write pointer; [`commit`](Pm4Ring::commit) publishes it. If the packet would cross
    /// the end of the ring, the tail is first padded with [`NOP_FILLER`]s and the packet starts at
    /// dword 0. An empty slice writes nothing.
    ///
    /// Errors: [`RingError::TooLarge`] for more than `size - 1` dwords; [`RingError::Full`] when
    /// the padding and packet do not fit before the read pointer now. On `Full` no packet dword
    /// is written. One case also writes the padding: when the packet needs padding and is too
    /// long to follow it even on an empty ring (it must start at dword 0, so it can only be
    /// written once the CP has read the padding). The padding is then written if it fits and the
    /// write pointer moves past it, so the caller's usual response to `Full` (commit, wait for
    /// the CP, retry) makes progress. NOPs are harmless to the CP.
    pub fn try_write(&mut self, dwords: &[u32]) -> Result<u64, RingError> {
        let size = self.size;
        let len = match u32::try_from(dwords.len()) {
            Ok(0) => return Ok(self.wptr),
            Ok(n) if n < size => n,
            _ => return Err(RingError::TooLarge(dwords.len())),
        };
        let pos = self.write_pos();
        let pad = if len > size - pos { size - pos } else { 0 };
        let space = self.space();
        if pad + len > space {
            // Behind the padding the packet occupies dwords 0..len, so even with everything
            // read (reader at `pos`) it fits only if len < pos.
            if pad > 0 && len >= pos && pad <= space {
                self.fill_nops(pos, pad);
            }
            return Err(RingError::Full);
        }
        if pad > 0 {
            self.fill_nops(pos, pad);
        }
        let start = self.write_pos() as usize;
        for (i, d) in dwords.iter().enumerate() {
            // SAFETY: `start + len <= size` (a packet that would cross the end starts at 0
            // after padding), and the dwords lie in the free region checked above, which the
            // CP does not read; `base` is valid for `size` dwords (`new`'s contract).
            unsafe { self.base.add(start + i).write_volatile(*d) };
        }
        self.wptr += u64::from(len);
        Ok(self.wptr)
    }

    /// Writes `count` one-dword NOPs from `pos` (to the end of the ring) and advances the
    /// write pointer past them. Callers check that they fit in the free region.
    fn fill_nops(&mut self, pos: u32, count: u32) {
        for i in pos..pos + count {
            // SAFETY: `pos + count == size`, so `i < size`: inside the ring, in the free region
            // the caller checked.
            unsafe { self.base.add(i as usize).write_volatile(NOP_FILLER) };
        }
        self.wptr += u64::from(count);
    }

    /// Publishes everything written: stores the write pointer, then rings the doorbell with the
    /// same value (both 64-bit release stores, so the CP sees the dwords before the pointer).
    pub fn commit(&mut self) {
        // SAFETY: `wptr_mem` is valid for atomic stores while the ring lives (`new`'s contract).
        order::publish_u64(unsafe { &*self.wptr_mem }, self.wptr);
        // SAFETY: as above, for `doorbell`.
        order::ring_doorbell(unsafe { &*self.doorbell }, self.wptr);
    }
}
