//! [`SdmaRing`]: the writer side of an SDMA ring, in bytes.
//!
//! Read and write pointers are 64-bit monotonic byte offsets (SDMA 4 and later): the engine
//! writes its read pointer back to memory, the runtime stores its write pointer to memory and
//! then to the doorbell. A packet never straddles the end of the ring: the tail is filled with
//! zero dwords (one-dword NOPs) and the packet starts again at offset 0. Nothing is written over
//! bytes the engine has not read, and one dword is always left free so that a full ring and an
//! empty one differ (at most `size - 4` bytes are in flight).

use core::sync::atomic::{AtomicU64, Ordering};

/// Smallest ring accepted: 256 bytes (64 dwords), enough for the longest fixed-size packet
/// several times over.
pub const MIN_RING_BYTES: u32 = 256;

/// Errors of the ring writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RingError {
    /// Not enough room before the engine's read pointer now; commit and retry once the engine
    /// has read more.
    #[error("ring full")]
    Full,
    /// The packet is longer than the ring minus its one free dword, so it can never be written.
    #[error("packet of {0} dwords is larger than the ring allows")]
    TooLarge(usize),
    /// A size that is not a power of two or under [`MIN_RING_BYTES`], or a null or misaligned
    /// pointer.
    #[error("invalid ring geometry")]
    BadGeometry,
    /// The read pointer the engine wrote back is ahead of the write pointer, or more than a
    /// ring behind it: it cannot be trusted to say which bytes are free, so nothing is written.
    #[error("engine read pointer {rptr:#x} is inconsistent with write pointer {wptr:#x}")]
    BadReadPointer {
        /// The read pointer read back.
        rptr: u64,
        /// The local write pointer.
        wptr: u64,
    },
}

/// A single-producer SDMA ring writer.
pub struct SdmaRing {
    base: *mut u8,
    size: u32,
    rptr: *const AtomicU64,
    wptr_mem: *const AtomicU64,
    doorbell: *const AtomicU64,
    /// Local write pointer: bytes written since creation, committed or not.
    wptr: u64,
}

// SAFETY: the writer owns its position and the ring's free region; the words it shares with the
// engine are accessed atomically. Nothing in it is tied to the creating thread.
unsafe impl Send for SdmaRing {}

impl core::fmt::Debug for SdmaRing {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SdmaRing")
            .field("base", &self.base)
            .field("size", &self.size)
            .field("wptr", &self.wptr)
            .finish_non_exhaustive()
    }
}

fn misaligned<T>(p: *const T, align: usize) -> bool {
    p.is_null() || p as usize % align != 0
}

impl SdmaRing {
    /// Creates a writer whose write pointer starts at 0 (a fresh queue's).
    ///
    /// `size_bytes` must be a power of two of at least [`MIN_RING_BYTES`] (KFD requires
    /// power-of-two rings); pointers must be non-null and aligned (4 bytes for `base`, 8 for
    /// `rptr`, `wptr` and `doorbell`), else [`RingError::BadGeometry`]. `rptr` is the engine's
    /// read pointer (a byte offset, 64-bit and monotonic, written back by the engine).
    ///
    /// # Safety
    /// For as long as the returned writer lives:
    /// - `base` must be valid for writes of `size_bytes` bytes, and no one but this writer may
    ///   write them (the engine only reads them);
    /// - `rptr` must be valid for atomic 64-bit loads, and `wptr` and `doorbell` for atomic
    ///   64-bit stores (the doorbell may be a mapped doorbell page);
    /// - only this writer may store to `wptr` and `doorbell`.
    pub unsafe fn new(
        base: *mut u8,
        size_bytes: u32,
        rptr: *const AtomicU64,
        wptr: *const AtomicU64,
        doorbell: *const AtomicU64,
    ) -> Result<SdmaRing, RingError> {
        if size_bytes < MIN_RING_BYTES
            || !size_bytes.is_power_of_two()
            || misaligned(base, 4)
            || misaligned(rptr, 8)
            || misaligned(wptr, 8)
            || misaligned(doorbell, 8)
        {
            return Err(RingError::BadGeometry);
        }
        Ok(SdmaRing {
            base,
            size: size_bytes,
            rptr,
            wptr_mem: wptr,
            doorbell,
            wptr: 0,
        })
    }

    /// The local write pointer (bytes written since creation, committed or not).
    pub fn wptr(&self) -> u64 {
        self.wptr
    }

    /// Ring size in bytes.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The engine's read pointer as it last wrote it back.
    pub fn rptr(&self) -> u64 {
        // SAFETY: `rptr` is valid for atomic loads while the ring lives (`new`'s contract).
        unsafe { &*self.rptr }.load(Ordering::Acquire)
    }

    /// Bytes written and not yet read, checking the engine's read pointer: it must lie between
    /// `wptr - size` and `wptr`.
    fn in_flight(&self) -> Result<u64, RingError> {
        let rptr = self.rptr();
        match self.wptr.checked_sub(rptr) {
            Some(used) if used <= u64::from(self.size) => Ok(used),
            _ => Err(RingError::BadReadPointer {
                rptr,
                wptr: self.wptr,
            }),
        }
    }

    /// Free bytes: the size minus the bytes not yet read, minus the one dword kept empty.
    pub fn space(&self) -> Result<u64, RingError> {
        let used = self.in_flight()?;
        Ok((u64::from(self.size) - 4).saturating_sub(used))
    }

    /// Whether the engine has read everything written (committed or not).
    pub fn is_idle(&self) -> bool {
        self.rptr() == self.wptr
    }

    fn write_pos(&self) -> u64 {
        // The size is a power of two, so this is the low bits of the 64-bit pointer.
        self.wptr % u64::from(self.size)
    }

    /// Writes `dwords` (one packet, or several back to back) contiguously and returns the new
    /// local write pointer; [`commit`](SdmaRing::commit) publishes it. If the packet would
    /// straddle the end of the ring, the tail is first filled with zero dwords (NOPs) and the
    /// packet starts at offset 0. An empty slice writes nothing.
    ///
    /// Errors: [`RingError::TooLarge`] for more than `size - 4` bytes;
    /// [`RingError::BadReadPointer`] when the engine's read pointer makes no sense;
    /// [`RingError::Full`] when the padding and packet do not fit before the read pointer now.
    /// On `Full` no packet dword is written. One case also writes the padding: when the packet
    /// needs padding and is too long to follow it even on an empty ring (it must start at
    /// offset 0, so it fits only once the engine has read the padding). The padding is then
    /// written if it fits and the write pointer moves past it, so the caller's usual response
    /// to `Full` (commit, wait for the engine, retry) makes progress. NOPs are harmless.
    pub fn try_write(&mut self, dwords: &[u32]) -> Result<u64, RingError> {
        let size = u64::from(self.size);
        let len = match dwords.len() as u64 {
            0 => return Ok(self.wptr),
            n if n * 4 <= size - 4 => n * 4,
            _ => return Err(RingError::TooLarge(dwords.len())),
        };
        let space = self.space()?;
        let pos = self.write_pos();
        let pad = if len > size - pos { size - pos } else { 0 };
        if pad + len > space {
            // Behind the padding the packet occupies bytes 0..len, so even with everything
            // read it fits only if pad + len <= size - 4.
            if pad > 0 && pad + len > size - 4 && pad <= space {
                self.fill_nops(pos, pad);
            }
            return Err(RingError::Full);
        }
        if pad > 0 {
            self.fill_nops(pos, pad);
        }
        let start = self.write_pos() as usize;
        for (i, d) in dwords.iter().enumerate() {
            // SAFETY: `start + len <= size` (a packet that would straddle the end starts at 0
            // after padding), the bytes lie in the free region checked above, which the engine
            // does not read, and `base` is valid for `size` bytes and 4-byte aligned (`new`).
            unsafe {
                self.base
                    .add(start + 4 * i)
                    .cast::<u32>()
                    .write_volatile(*d)
            };
        }
        self.wptr += len;
        Ok(self.wptr)
    }

    /// Writes zero dwords from byte `pos` to the end of the ring (`count` bytes) and advances
    /// the write pointer past them. Callers check that they fit in the free region.
    fn fill_nops(&mut self, pos: u64, count: u64) {
        for offset in (pos..pos + count).step_by(4) {
            // SAFETY: `pos + count == size`, so `offset + 4 <= size`: inside the ring, 4-byte
            // aligned, in the free region the caller checked.
            unsafe {
                self.base
                    .add(offset as usize)
                    .cast::<u32>()
                    .write_volatile(0)
            };
        }
        self.wptr += count;
    }

    /// Publishes everything written: stores the write pointer, then rings the doorbell with the
    /// same value (both 64-bit release stores, so the engine sees the packets before the
    /// pointer).
    pub fn commit(&mut self) {
        // SAFETY: `wptr_mem` is valid for atomic stores while the ring lives (`new`'s contract).
        order::publish_u64(unsafe { &*self.wptr_mem }, self.wptr);
        // SAFETY: as above, for `doorbell`.
        order::ring_doorbell(unsafe { &*self.doorbell }, self.wptr);
    }
}
