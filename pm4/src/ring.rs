//! [`DwordRing`]: the writer side of a ring of dword packets, and [`Pm4Ring`], the PM4 one.
//!
//! The write pointer is 64-bit and monotonic (gfx9+, SDMA 4+); the engine writes its read
//! pointer back to memory, the runtime stores its write pointer to memory and then to the
//! doorbell. No packet crosses the end of the ring (the tail is padded with one-dword NOPs and
//! the packet starts again at the ring's start), one dword is always left free so that a full
//! ring and an empty one differ, and nothing is written over dwords the engine has not read yet.
//!
//! What differs between rings is a [`RingKind`]: the unit the pointers and the size count
//! (dwords for PM4, bytes for SDMA), how the engine's read pointer is read and judged, the
//! filler dword and the smallest size. [`Pm4Ring`] is the ring of [`Pm4Kind`]: pointers in
//! dwords, a 32-bit read pointer the CP writes back wrapped at the ring size, tail padded with
//! [`NOP_FILLER`]. The `sdma` crate's `SdmaRing` is another kind of the same writer.

use crate::NOP_FILLER;
use core::convert::Infallible;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

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
    /// A size that is not a power of two or under the kind's [minimum](RingKind::MIN_SIZE) (8
    /// dwords for PM4, `MIN_RING_BYTES` for SDMA), or a null or misaligned pointer.
    #[error("invalid ring geometry")]
    BadGeometry,
    /// The read pointer the engine wrote back is ahead of the write pointer, or more than a
    /// ring behind it: it cannot be trusted to say which bytes are free, so nothing is written.
    /// Only a ring whose read pointer is 64-bit and monotonic (SDMA) can tell; a PM4 ring's
    /// wrapped one never gives this error.
    #[error("engine read pointer {rptr:#x} is inconsistent with write pointer {wptr:#x}")]
    BadReadPointer {
        /// The read pointer read back.
        rptr: u64,
        /// The local write pointer.
        wptr: u64,
    },
}

/// A ring whose read pointer is never rejected has no read-pointer error.
impl From<Infallible> for RingError {
    fn from(never: Infallible) -> RingError {
        match never {}
    }
}

/// What differs between the rings a [`DwordRing`] writes.
///
/// A wrong [`in_flight`](RingKind::in_flight) can mislead the writer about which part of the
/// ring is free (and so let it write over what the engine has not read), never make it write
/// outside the ring: positions are reduced modulo the size.
pub trait RingKind {
    /// The writer's name in `Debug` output.
    const NAME: &'static str;
    /// What the ring's size and pointers count, and what its base pointer points to: `u32`
    /// (dwords) or `u8` (bytes). Its size must divide 4.
    type Unit;
    /// The read-pointer word the engine writes back (its alignment is the one `new` checks).
    type ReadPtr;
    /// What a read pointer the writer cannot trust is; [`Infallible`] where none is rejected.
    type ReadError: Into<RingError>;
    /// What [`DwordRing::space`] returns.
    type Space;
    /// The smallest ring size accepted, in units.
    const MIN_SIZE: u32;
    /// The one-dword NOP the tail is padded with.
    const FILLER: u32;

    /// Loads the engine's read pointer (an acquire load).
    fn load(rptr: &Self::ReadPtr) -> u64;

    /// Units written and not yet read, from the read pointer `rptr` as loaded, the local write
    /// pointer and the ring size (a power of two). At most `size`.
    fn in_flight(rptr: u64, wptr: u64, size: u32) -> Result<u64, Self::ReadError>;

    /// [`DwordRing::space`]'s answer from the free units or the read-pointer error.
    fn space(free: Result<u64, Self::ReadError>) -> Self::Space;
}

/// PM4 rings: dwords, and a 32-bit read pointer the CP writes back wrapped at the ring size.
#[derive(Debug)]
pub enum Pm4Kind {}

impl RingKind for Pm4Kind {
    const NAME: &'static str = "Pm4Ring";
    type Unit = u32;
    type ReadPtr = AtomicU32;
    type ReadError = Infallible;
    type Space = u32;
    const MIN_SIZE: u32 = 8;
    const FILLER: u32 = NOP_FILLER;

    #[inline]
    fn load(rptr: &AtomicU32) -> u64 {
        u64::from(rptr.load(Ordering::Acquire))
    }

    /// The value comes from the device: it is reduced modulo the size, so a bad one can mislead
    /// the space count but is never rejected.
    #[inline]
    fn in_flight(rptr: u64, wptr: u64, size: u32) -> Result<u64, Infallible> {
        let read = (rptr as u32) % size;
        // The size is a power of two, so the offset is the low bits of the 64-bit pointer.
        let write = (wptr % u64::from(size)) as u32;
        Ok(u64::from(write.wrapping_sub(read) % size))
    }

    #[inline]
    fn space(free: Result<u64, Infallible>) -> u32 {
        let Ok(free) = free;
        // Less than the size, which is a `u32`.
        free as u32
    }
}

/// A single-producer PM4 ring writer: size and pointers in dwords, the CP's 32-bit read pointer
/// wrapped at the ring size, the tail padded with [`NOP_FILLER`]s. `new` takes a ring of at
/// least 8 dwords and `rptr` aligned to 4 bytes; `space` is a plain count, as the read pointer is
/// never rejected.
pub type Pm4Ring = DwordRing<Pm4Kind>;

/// A single-producer writer of a ring of dword packets, of the [`RingKind`] `K`. Sizes and
/// pointers are in `K`'s units ([`Pm4Ring`]: dwords; `sdma::ring::SdmaRing`: bytes).
pub struct DwordRing<K: RingKind> {
    base: *mut u32,
    size: u32,
    rptr: *const K::ReadPtr,
    wptr_mem: *const AtomicU64,
    doorbell: *const AtomicU64,
    /// Local write pointer: units written since creation, committed or not.
    wptr: u64,
    kind: PhantomData<fn() -> K>,
}

// SAFETY: the writer owns its position and the ring's free region; the words it shares with the
// engine are accessed atomically. Nothing in it is tied to the creating thread.
unsafe impl<K: RingKind> Send for DwordRing<K> {}

impl<K: RingKind> core::fmt::Debug for DwordRing<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct(K::NAME)
            .field("base", &self.base)
            .field("size", &self.size)
            .field("wptr", &self.wptr)
            .finish_non_exhaustive()
    }
}

fn misaligned<T>(p: *const T, align: usize) -> bool {
    p.is_null() || p as usize % align != 0
}

impl<K: RingKind> DwordRing<K> {
    /// Units a dword takes (1 for dwords, 4 for bytes).
    const DWORD: u64 = 4 / core::mem::size_of::<K::Unit>() as u64;

    /// Creates a writer whose write pointer starts at 0 (a fresh queue's).
    ///
    /// `size` (in units) must be a power of two of at least [`K::MIN_SIZE`](RingKind::MIN_SIZE)
    /// (KFD requires power-of-two rings): 8 dwords for PM4, `MIN_RING_BYTES` for SDMA. Pointers
    /// must be non-null and aligned: 4 bytes for `base`, 8 for `wptr` and `doorbell`, and `rptr`
    /// as its word (4 bytes for PM4's 32-bit one, 8 for SDMA's 64-bit one); else
    /// [`RingError::BadGeometry`]. `rptr` is the engine's read pointer, which it writes back.
    ///
    /// # Safety
    /// For as long as the returned writer lives:
    /// - `base` must be valid for writes of `size` units, and no one but this writer may write
    ///   them (the engine only reads them);
    /// - `rptr` must be valid for atomic loads (32-bit for PM4, 64-bit for SDMA), and `wptr`
    ///   and `doorbell` for atomic 64-bit stores (the doorbell may be a mapped doorbell page);
    /// - only this writer may store to `wptr` and `doorbell`.
    pub unsafe fn new(
        base: *mut K::Unit,
        size: u32,
        rptr: *const K::ReadPtr,
        wptr: *const AtomicU64,
        doorbell: *const AtomicU64,
    ) -> Result<DwordRing<K>, RingError> {
        if size < K::MIN_SIZE
            || !size.is_power_of_two()
            || u64::from(size) < 2 * Self::DWORD
            || misaligned(base, 4)
            || misaligned(rptr, core::mem::align_of::<K::ReadPtr>())
            || misaligned(wptr, 8)
            || misaligned(doorbell, 8)
        {
            return Err(RingError::BadGeometry);
        }
        Ok(DwordRing {
            base: base.cast(),
            size,
            rptr,
            wptr_mem: wptr,
            doorbell,
            wptr: 0,
            kind: PhantomData,
        })
    }

    /// The local write pointer (units written since creation, committed or not).
    pub fn wptr(&self) -> u64 {
        self.wptr
    }

    /// Ring size in units.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The engine's read pointer as it last wrote it back.
    pub fn rptr(&self) -> u64 {
        // SAFETY: `rptr` is valid for atomic loads while the ring lives (`new`'s contract).
        K::load(unsafe { &*self.rptr })
    }

    /// Units written and not yet read, by the kind's reading of the engine's read pointer.
    fn in_flight(&self) -> Result<u64, K::ReadError> {
        K::in_flight(self.rptr(), self.wptr, self.size)
    }

    /// Free units: the size minus the units not yet read, minus the one dword kept empty.
    fn free(&self) -> Result<u64, K::ReadError> {
        let used = self.in_flight()?;
        Ok((u64::from(self.size) - Self::DWORD).saturating_sub(used))
    }

    /// Free units: the size minus the units not yet read, minus the one dword kept empty. For
    /// PM4 a count of dwords; for SDMA a count of bytes, or [`RingError::BadReadPointer`] when
    /// the engine's read pointer makes no sense.
    pub fn space(&self) -> K::Space {
        K::space(self.free())
    }

    /// Whether the engine has read everything written (committed or not).
    pub fn is_idle(&self) -> bool {
        matches!(self.in_flight(), Ok(0))
    }

    fn write_pos(&self) -> u64 {
        // The size is a power of two, so this is the low bits of the 64-bit pointer.
        self.wptr % u64::from(self.size)
    }

    /// Writes `dwords` (one packet, or several back to back) contiguously and returns the new
    /// local write pointer; [`commit`](DwordRing::commit) publishes it. If the packet would
    /// cross the end of the ring, the tail is first padded with the kind's
    /// [filler](RingKind::FILLER) ([`NOP_FILLER`] for PM4, zero dwords for SDMA) and the packet
    /// starts at the ring's start. An empty slice writes nothing.
    ///
    /// Errors: [`RingError::TooLarge`] for more than the size minus one dword;
    /// [`RingError::BadReadPointer`] (SDMA only) when the engine's read pointer makes no sense;
    /// [`RingError::Full`] when the padding and packet do not fit before the read pointer now.
    /// On `Full` no packet dword is written. One case also writes the padding: when the packet
    /// needs padding and is too long to follow it even on an empty ring (it must start at the
    /// ring's start, so it can only be written once the engine has read the padding). The
    /// padding is then written if it fits and the write pointer moves past it, so the caller's
    /// usual response to `Full` (commit, wait for the engine, retry) makes progress. NOPs are
    /// harmless to the engine.
    pub fn try_write(&mut self, dwords: &[u32]) -> Result<u64, RingError> {
        let size = u64::from(self.size);
        // The most units a write may leave unread: all but the one free dword.
        let most = size - Self::DWORD;
        let len = match (dwords.len() as u64).checked_mul(Self::DWORD) {
            Some(0) => return Ok(self.wptr),
            Some(n) if n <= most => n,
            _ => return Err(RingError::TooLarge(dwords.len())),
        };
        let space = self.free().map_err(Into::into)?;
        let pos = self.write_pos();
        let pad = if len > size - pos { size - pos } else { 0 };
        if pad + len > space {
            // Behind the padding the packet occupies units 0..len, so even with everything
            // read it fits only if pad + len <= most.
            if pad > 0 && pad + len > most && pad <= space {
                self.fill_nops(pos, pad);
            }
            return Err(RingError::Full);
        }
        if pad > 0 {
            self.fill_nops(pos, pad);
        }
        let start = self.dword_index(self.write_pos());
        for (i, d) in dwords.iter().enumerate() {
            // SAFETY: `start + dwords.len()` dwords end within the ring (a packet that would
            // cross the end starts at 0 after padding), the dwords lie in the free region
            // checked above, which the engine does not read, and `base` is valid for `size`
            // units and 4-byte aligned (`new`'s contract and check).
            unsafe { self.base.add(start + i).write_volatile(*d) };
        }
        self.wptr += len;
        Ok(self.wptr)
    }

    /// The dword index of the unit position `pos` (a whole number of dwords: the pointer only
    /// ever moves by whole dwords).
    fn dword_index(&self, pos: u64) -> usize {
        (pos / Self::DWORD) as usize
    }

    /// Writes the kind's filler from unit position `pos` to the end of the ring (`count` units)
    /// and advances the write pointer past them. Callers check that they fit in the free region.
    fn fill_nops(&mut self, pos: u64, count: u64) {
        for i in self.dword_index(pos)..self.dword_index(pos + count) {
            // SAFETY: `pos + count == size`, so `i` is a dword inside the ring, 4-byte aligned
            // (`new` checked `base`), in the free region the caller checked.
            unsafe { self.base.add(i).write_volatile(K::FILLER) };
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
