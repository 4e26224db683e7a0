//! The atomics the ring writer uses: the standard ones, or loom's when built with
//! `--cfg loom` so that `tests/loom.rs` can model-check the multi-producer protocol.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Publishes a packet's header word: a release store, with the device-visibility barrier the
/// architecture needs (see the `order` crate). Under loom the model checks the release store.
#[inline]
pub(crate) fn publish_u32(word: &AtomicU32, value: u32) {
    #[cfg(not(loom))]
    order::publish_u32(word, value);
    #[cfg(loom)]
    word.store(value, Ordering::Release);
}

/// Rings a doorbell: a 64-bit release store ordered before it as the device needs.
#[inline]
pub(crate) fn ring_doorbell(doorbell: &AtomicU64, value: u64) {
    #[cfg(not(loom))]
    order::ring_doorbell(doorbell, value);
    #[cfg(loom)]
    doorbell.store(value, Ordering::Release);
}

/// Writes dwords 1..16 of a packet slot (the body; the caller publishes dword 0 after). The
/// slot is 64-byte aligned (checked by `AqlRing::new`), so dwords 2..16 go out as seven 64-bit
/// stores. Relaxed: the header's release store orders them for the consumer, which reads the
/// body only after acquiring a valid header, and a producer reaches a slot only after the read
/// index shows the previous lap consumed (so no access to these bytes races with the stores).
///
/// # Safety
/// `slot` must point to a live, 64-byte aligned packet slot of 16 dwords.
#[inline]
pub(crate) unsafe fn store_body(slot: *const AtomicU32, dwords: &[u32; 16]) {
    #[cfg(not(loom))]
    {
        // SAFETY: dword 1 of the slot (the caller's contract).
        unsafe { &*slot.add(1) }.store(dwords[1], Ordering::Relaxed);
        let wide = slot.cast::<AtomicU64>();
        for i in 1..8 {
            let v = u64::from(dwords[2 * i]) | u64::from(dwords[2 * i + 1]) << 32;
            // SAFETY: bytes 8i..8i+8 of the 64-byte aligned slot, 8-byte aligned.
            unsafe { &*wide.add(i) }.store(v, Ordering::Relaxed);
        }
    }
    #[cfg(loom)]
    for (i, d) in dwords.iter().enumerate().skip(1) {
        // SAFETY: dword `i` < 16 of the slot.
        unsafe { &*slot.add(i) }.store(*d, Ordering::Relaxed);
    }
}
