//! [`SdmaRing`]: the SDMA ring writer, in bytes.
//!
//! Read and write pointers are 64-bit monotonic byte offsets (SDMA 4+). A packet never straddles
//! the end of the ring: the tail is filled with NOP dwords (zero) and the packet starts again at
//! the beginning. Nothing is written past the engine's read pointer, and one dword is kept free.

use core::sync::atomic::{AtomicU64, Ordering};

/// Errors of the ring writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// Not enough room before the read pointer now.
    #[error("ring full")]
    Full,
    /// The packet cannot fit even an empty ring.
    #[error("packet of {0} dwords is larger than the ring allows")]
    TooLarge(usize),
    /// Size not a power of two, or base misaligned.
    #[error("invalid ring geometry")]
    BadGeometry,
}

/// A single-producer SDMA ring writer.
pub struct SdmaRing {
    base: *mut u8,
    size: u64,
    rptr: *const AtomicU64,
    wptr_mem: *const AtomicU64,
    doorbell: *const AtomicU64,
    wptr: u64,
}

// SAFETY: the writer owns its position; shared words are accessed atomically and the ring is
// only written in the region the engine is not reading.
unsafe impl Send for SdmaRing {}

impl SdmaRing {
    /// Creates a writer at write pointer 0.
    ///
    /// # Safety
    /// `base` must point to `size_bytes` writable bytes (4-byte aligned); `rptr`, `wptr` and
    /// `doorbell` to 8-byte aligned words; all must outlive the ring and be shared only with the
    /// engine.
    pub unsafe fn new(
        base: *mut u8,
        size_bytes: u32,
        rptr: *const AtomicU64,
        wptr: *const AtomicU64,
        doorbell: *const AtomicU64,
    ) -> Result<SdmaRing, RingError> {
        if size_bytes < 256 || !size_bytes.is_power_of_two() || base as usize % 4 != 0 {
            return Err(RingError::BadGeometry);
        }
        Ok(SdmaRing {
            base,
            size: u64::from(size_bytes),
            rptr,
            wptr_mem: wptr,
            doorbell,
            wptr: 0,
        })
    }

    /// The local write pointer (bytes, monotonic).
    pub fn wptr(&self) -> u64 {
        self.wptr
    }

    /// Ring size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Free bytes (one dword always kept).
    pub fn space(&self) -> u64 {
        // SAFETY: valid for the ring's life per `new`.
        let rd = unsafe { &*self.rptr }.load(Ordering::Acquire);
        let used = self.wptr.saturating_sub(rd).min(self.size);
        self.size - 4 - used.min(self.size - 4)
    }

    /// Writes one packet (padding the tail with NOPs if it would straddle the end) and returns
    /// the new local write pointer; nothing is written when there is no room.
    pub fn try_write(&mut self, dwords: &[u32]) -> Result<u64, RingError> {
        let len = dwords.len() as u64 * 4;
        if len == 0 || len > self.size - 4 {
            return Err(RingError::TooLarge(dwords.len()));
        }
        let pos = self.wptr % self.size;
        let pad = if pos + len > self.size {
            self.size - pos
        } else {
            0
        };
        if pad + len > self.space() {
            return Err(RingError::Full);
        }
        for i in (0..pad).step_by(4) {
            // SAFETY: inside the ring's free region.
            unsafe { (self.base.add((pos + i) as usize) as *mut u32).write_volatile(0) };
        }
        let start = (pos + pad) % self.size;
        for (i, d) in dwords.iter().enumerate() {
            // SAFETY: `start + len <= size`; the free region.
            unsafe { (self.base.add(start as usize + 4 * i) as *mut u32).write_volatile(*d) };
        }
        self.wptr += pad + len;
        Ok(self.wptr)
    }

    /// Publishes: stores the write pointer, then the doorbell (64-bit release stores).
    pub fn commit(&mut self) {
        // SAFETY: valid for the ring's life per `new`.
        unsafe { &*self.wptr_mem }.store(self.wptr, Ordering::Release);
        // SAFETY: as above.
        unsafe { &*self.doorbell }.store(self.wptr, Ordering::Release);
    }
}
