//! [`Pm4Ring`]: a PM4 ring writer in dwords.
//!
//! The write pointer is 64-bit and monotonic (gfx9+); the read pointer the CP writes back is a
//! 32-bit dword offset wrapped at the ring size. No packet crosses the end of the ring (the tail
//! is padded with one-dword NOPs), one dword is always left free so a full ring and an empty one
//! differ, and nothing is written past the read pointer.

use crate::NOP_FILLER;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Errors of the ring writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// Not enough room before the read pointer now.
    #[error("ring full")]
    Full,
    /// The packet cannot fit even an empty ring.
    #[error("packet of {0} dwords is larger than the ring allows")]
    TooLarge(usize),
    /// Size not a power of two, or pointers misaligned.
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
    wptr: u64,
}

// SAFETY: the writer owns its position; the shared words are accessed atomically or written
// only in the region the reader is not reading.
unsafe impl Send for Pm4Ring {}

impl Pm4Ring {
    /// Creates a writer starting at write pointer 0.
    ///
    /// # Safety
    /// `base` must point to `size_dwords` writable dwords, `rptr` to the CP's 32-bit read
    /// pointer, `wptr` and `doorbell` to 8-byte aligned words; all must outlive the ring and be
    /// shared only with the command processor.
    pub unsafe fn new(
        base: *mut u32,
        size_dwords: u32,
        rptr: *const AtomicU32,
        wptr: *const AtomicU64,
        doorbell: *const AtomicU64,
    ) -> Result<Pm4Ring, RingError> {
        if size_dwords < 8 || !size_dwords.is_power_of_two() || base as usize % 4 != 0 {
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

    /// The local (not yet committed, if writes are pending) write pointer.
    pub fn wptr(&self) -> u64 {
        self.wptr
    }

    /// Ring size in dwords.
    pub fn size(&self) -> u32 {
        self.size
    }

    fn read_pos(&self) -> u64 {
        // SAFETY: valid for the ring's life per `new`.
        u64::from(unsafe { &*self.rptr }.load(Ordering::Acquire)) % u64::from(self.size)
    }

    /// Free dwords (one is always kept empty).
    pub fn space(&self) -> u32 {
        let size = u64::from(self.size);
        let used = (self.wptr % size + size - self.read_pos()) % size;
        (size - 1 - used) as u32
    }

    /// Whether the CP has consumed everything committed.
    pub fn is_idle(&self) -> bool {
        self.read_pos() == self.wptr % u64::from(self.size)
    }

    /// Writes one packet (padding the ring's tail with NOPs if it would cross the end) and
    /// returns the new local write pointer; nothing is written when there is no room.
    pub fn try_write(&mut self, dwords: &[u32]) -> Result<u64, RingError> {
        let size = u64::from(self.size);
        let len = dwords.len() as u64;
        if len == 0 || len > size - 1 {
            return Err(RingError::TooLarge(dwords.len()));
        }
        let pos = self.wptr % size;
        let pad = if pos + len > size { size - pos } else { 0 };
        if pad + len > u64::from(self.space()) {
            return Err(RingError::Full);
        }
        for i in 0..pad {
            // SAFETY: `pos + i` < size: inside the ring, in the free region.
            unsafe { self.base.add((pos + i) as usize).write_volatile(NOP_FILLER) };
        }
        let start = (pos + pad) % size;
        for (i, d) in dwords.iter().enumerate() {
            // SAFETY: `start + len <= size` (no packet crosses the end), in the free region.
            unsafe { self.base.add(start as usize + i).write_volatile(*d) };
        }
        self.wptr += pad + len;
        Ok(self.wptr)
    }

    /// Publishes everything written: stores the write pointer, then rings the doorbell with the
    /// same value (both 64-bit release stores).
    pub fn commit(&mut self) {
        // SAFETY: valid for the ring's life per `new`.
        unsafe { &*self.wptr_mem }.store(self.wptr, Ordering::Release);
        // SAFETY: as above.
        unsafe { &*self.doorbell }.store(self.wptr, Ordering::Release);
    }
}
