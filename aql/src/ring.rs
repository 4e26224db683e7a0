//! [`AqlRing`]: the multi-producer AQL ring writer.
//!
//! The protocol (HSA runtime specification 2.5):
//! 1. reserve packet ids by advancing `write_dispatch_id` (fetch-add, or a CAS for `try_reserve`);
//! 2. wait until the slots are free: `id + n - read_dispatch_id <= size` — a slot is only reused
//!    once the packet processor has consumed its previous packet and moved the read index on;
//! 3. write each packet's body (dwords 1..15);
//! 4. publish it by storing dword 0 (header | setup) with **one release store**: the processor may
//!    start the packet the instant that word is valid, even before the doorbell, so the body must
//!    already be complete and visible;
//! 5. ring the doorbell once per batch with a 64-bit release store of the last packet's id.
//!
//! Stores to ring memory are relaxed atomic stores: the processor reads the same memory
//! concurrently, and atomics keep that well defined without costing more than plain stores.
//! No API writes a header before its body: [`Reservation::write`] does both, in that order.
//!
//! Model checking: `RUSTFLAGS="--cfg loom" cargo test -p kfdrt-aql --test main --release` runs
//! the protocol under loom (`tests/loom.rs`: producers racing for slots of a ring smaller than
//! their packets, a consumer that checks every packet it sees published is whole and in order);
//! `.ci/run` runs it.

use crate::header::INVALID_HEADER_WORD;
use crate::packet::{BarrierPacket, Packet};
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// Errors of the ring writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// The ring has no room for the request now.
    #[error("ring full")]
    Full,
    /// More packets than the ring has slots.
    #[error("{requested} packets do not fit a ring of {size}")]
    TooMany {
        /// Packets asked for.
        requested: u32,
        /// Ring size.
        size: u32,
    },
    /// The caller gave up waiting for room after claiming slots; the queue is unusable.
    #[error("reservation abandoned while waiting for room")]
    Abandoned,
    /// Size not a power of two >= 2, or base not 64-byte aligned.
    #[error("invalid ring geometry")]
    BadGeometry,
}

/// Whether `n` slots from write index `w` are free when the processor has read up to `read`.
/// A write index read before other producers advanced it may be behind `read`: that is room,
/// not an underflow.
fn has_room(w: u64, read: u64, n: u32, size: u32) -> bool {
    w + u64::from(n) <= read + u64::from(size)
}

/// A multi-producer writer over an AQL ring.
pub struct AqlRing {
    base: *const AtomicU32,
    mask: u64,
    size: u32,
    write_index: *const AtomicU64,
    read_index: *const AtomicU64,
    doorbell: *const AtomicU64,
    /// The highest read index a producer has seen. The processor writes the real one as it
    /// consumes packets, so reading it costs a cache-line transfer from the processor's core;
    /// it only grows, so an older value understates the room and is safe to check against
    /// first. The real index is read only when this one says the ring may be full.
    seen_read: AtomicU64,
}

// SAFETY: every access through the pointers is atomic; `new`'s contract keeps them valid.
unsafe impl Send for AqlRing {}
// SAFETY: as above; the protocol is designed for concurrent producers.
unsafe impl Sync for AqlRing {}

/// Writes INVALID into every slot's header word.
///
/// # Safety
/// `base` must be valid for writes of `size_packets * 64` bytes and 4-byte aligned, and no packet
/// processor may be reading the ring yet.
pub unsafe fn init_ring(base: *mut u8, size_packets: u32) {
    for i in 0..size_packets as usize {
        // SAFETY: inside the ring per the caller's guarantee.
        unsafe { (base.add(i * 64) as *mut u32).write_volatile(INVALID_HEADER_WORD) };
    }
}

impl AqlRing {
    /// Creates a writer.
    ///
    /// # Safety
    /// `base` must point to `size_packets` 64-byte slots, initialised with [`init_ring`];
    /// `write_index`, `read_index` and `doorbell` must point to 8-byte aligned words. All of it
    /// must outlive the ring and may be shared only with a packet processor (and other writers
    /// through this ring).
    pub unsafe fn new(
        base: *mut u8,
        size_packets: u32,
        write_index: *const AtomicU64,
        read_index: *const AtomicU64,
        doorbell: *const AtomicU64,
    ) -> Result<AqlRing, RingError> {
        // (Under loom the slots are loom's atomics, which are not the device's 4-byte words.)
        let aligned = cfg!(loom) || base as usize % 64 == 0;
        if size_packets < 2 || !size_packets.is_power_of_two() || !aligned {
            return Err(RingError::BadGeometry);
        }
        Ok(AqlRing {
            base: base as *const AtomicU32,
            mask: u64::from(size_packets - 1),
            size: size_packets,
            write_index,
            read_index,
            doorbell,
            // SAFETY: valid per the caller's contract.
            seen_read: AtomicU64::new(unsafe { &*read_index }.load(Ordering::Acquire)),
        })
    }

    /// The read index, as fresh as needed to tell whether ids up to `end` fit: the last one
    /// seen when that suffices, else the processor's (which is then remembered).
    #[inline]
    fn read_index_for(&self, end: u64) -> u64 {
        let seen = self.seen_read.load(Ordering::Acquire);
        if end <= seen + u64::from(self.size) {
            return seen;
        }
        let read = self.r().load(Ordering::Acquire);
        self.seen_read.fetch_max(read, Ordering::AcqRel);
        read
    }

    #[inline]
    fn w(&self) -> &AtomicU64 {
        // SAFETY: valid for the ring's life per `new`.
        unsafe { &*self.write_index }
    }

    #[inline]
    fn r(&self) -> &AtomicU64 {
        // SAFETY: valid for the ring's life per `new`.
        unsafe { &*self.read_index }
    }

    /// Ring size in packets.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The next id to be reserved.
    pub fn write_index(&self) -> u64 {
        self.w().load(Ordering::Acquire)
    }

    /// The processor's read index.
    pub fn read_index(&self) -> u64 {
        self.r().load(Ordering::Acquire)
    }

    /// Reserves `n` slots if they are free now.
    pub fn try_reserve(&self, n: u32) -> Result<Reservation<'_>, RingError> {
        if n > self.size {
            return Err(RingError::TooMany {
                requested: n,
                size: self.size,
            });
        }
        let mut w = self.w().load(Ordering::Acquire);
        loop {
            let read = self.read_index_for(w + u64::from(n));
            if !has_room(w, read, n, self.size) {
                // Full by this (possibly stale) write index; the exchange below would fail on a
                // stale one anyway, so only a current index may report Full.
                let now = self.w().load(Ordering::Acquire);
                if now == w {
                    return Err(RingError::Full);
                }
                w = now;
                continue;
            }
            match self.w().compare_exchange_weak(
                w,
                w + u64::from(n),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Ok(Reservation {
                        ring: self,
                        start: w,
                        len: n,
                        written: 0,
                    })
                }
                Err(cur) => w = cur,
            }
        }
    }

    /// Reserves `n` slots, waiting for room: `wait(spins)` is called between checks and returns
    /// `false` to give up ([`RingError::Abandoned`]; the claimed ids then stay unwritten and the
    /// queue cannot make progress past them — only give up on a queue that is already dead).
    pub fn reserve(
        &self,
        n: u32,
        mut wait: impl FnMut(u32) -> bool,
    ) -> Result<Reservation<'_>, RingError> {
        if n > self.size {
            return Err(RingError::TooMany {
                requested: n,
                size: self.size,
            });
        }
        let start = self.w().fetch_add(u64::from(n), Ordering::AcqRel);
        let mut spins = 0u32;
        while start + u64::from(n) - self.read_index_for(start + u64::from(n))
            > u64::from(self.size)
        {
            if !wait(spins) {
                return Err(RingError::Abandoned);
            }
            spins = spins.saturating_add(1);
        }
        Ok(Reservation {
            ring: self,
            start,
            len: n,
            written: 0,
        })
    }

    #[inline]
    fn slot(&self, id: u64) -> *const AtomicU32 {
        // SAFETY: `id & mask` < size, so the slot is inside the ring.
        unsafe { self.base.add(((id & self.mask) * 16) as usize) }
    }

    /// Writes one packet into slot `id`: body first, then the header word with a release store.
    #[inline]
    fn publish(&self, id: u64, dwords: &[u32; 16]) {
        let slot = self.slot(id);
        // SAFETY: a slot inside the ring, 64-byte aligned (`new` checks the base), reserved by
        // this producer, whose previous lap the processor has consumed (the reservation
        // checked the read index): nobody reads it before its header is published below.
        unsafe { crate::sync::store_body(slot, dwords) };
        // SAFETY: dword 0 of the slot.
        crate::sync::publish_u32(unsafe { &*slot }, dwords[0]);
    }

    #[inline]
    fn ring_doorbell(&self, id: u64) {
        // SAFETY: valid for the ring's life per `new`.
        crate::sync::ring_doorbell(unsafe { &*self.doorbell }, id);
    }
}

/// Slots reserved for one batch; write them in order, then [`Reservation::submit`].
pub struct Reservation<'r> {
    ring: &'r AqlRing,
    start: u64,
    len: u32,
    written: u32,
}

impl Reservation<'_> {
    /// The id of the first reserved packet.
    #[inline]
    pub fn index(&self) -> u64 {
        self.start
    }

    /// Number of reserved slots.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether no slot was reserved.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes packet `i` (which must be the next unwritten one) and publishes it.
    ///
    /// # Panics
    /// When `i` is not the next slot: out-of-order writes would let the processor run a later
    /// packet while an earlier slot is still INVALID — a programming error, not a device error.
    pub fn write(&mut self, i: u32, packet: &Packet) {
        assert!(
            i == self.written && i < self.len,
            "AQL reservation slots must be written in order"
        );
        self.ring
            .publish(self.start + u64::from(i), &packet.encode());
        self.written += 1;
    }

    /// Writes an already encoded packet ([`Packet::encode`]) into reserved slot `i`, with the
    /// same rules as [`Reservation::write`].
    #[inline]
    pub fn write_encoded(&mut self, i: u32, dwords: &[u32; 16]) {
        assert!(
            i == self.written && i < self.len,
            "AQL reservation slots must be written in order"
        );
        self.ring.publish(self.start + u64::from(i), dwords);
        self.written += 1;
    }

    /// Writes already encoded packets into the next reserved slots, in order (one bounds check
    /// for all of them; each packet still body first, header last with release).
    #[inline]
    pub fn write_all_encoded(&mut self, packets: &[[u32; 16]]) {
        let n = u32::try_from(packets.len()).unwrap_or(u32::MAX);
        assert!(
            n <= self.len - self.written,
            "more packets than reserved AQL slots"
        );
        let first = self.start + u64::from(self.written);
        for (i, p) in packets.iter().enumerate() {
            self.ring.publish(first + i as u64, p);
        }
        self.written += n;
    }

    #[inline]
    fn fill_rest(&mut self) {
        if self.written < self.len {
            self.fill_rest_slow();
        }
    }

    #[cold]
    fn fill_rest_slow(&mut self) {
        let noop = Packet::BarrierAnd(BarrierPacket::default());
        while self.written < self.len {
            let i = self.written;
            self.write(i, &noop);
        }
    }

    /// Rings the doorbell once for the batch and returns the last packet's id. Unwritten slots
    /// are filled with no-op barrier packets first.
    #[inline]
    pub fn submit(mut self) -> u64 {
        self.fill_rest();
        let last = self.start + u64::from(self.len.max(1)) - 1;
        self.ring.ring_doorbell(last);
        self.len = 0; // nothing left for Drop
        last
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.written < self.len {
            // The processor consumes slots in order: a hole would stall it forever.
            self.fill_rest();
            self.ring
                .ring_doorbell(self.start + u64::from(self.len) - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::has_room;

    #[test]
    fn room_from_a_stale_write_index() {
        // Another producer moved the write index from 10 to 20 and the processor read up to 15
        // before this one looked at the read index: its stale 10 is behind the read index.
        assert!(has_room(10, 15, 1, 16));
        assert!(has_room(20, 15, 11, 16));
        assert!(!has_room(20, 15, 12, 16));
        assert!(has_room(0, 0, 16, 16) && !has_room(0, 0, 17, 16));
    }
}
