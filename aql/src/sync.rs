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

/// Writes dwords 1..16 of a packet slot (the body; the caller publishes dword 0 after), with
/// plain stores: the header's release store orders them for the consumer, which reads the body
/// only after acquiring a valid header, and a producer reaches a slot only after the read index
/// shows the previous lap consumed, so nothing reads these bytes while they are written. Plain
/// stores let the compiler move the 60 bytes in four vector stores instead of eight scalar
/// ones. Under loom they are relaxed atomic stores, which the model can check.
///
/// # Safety
/// `slot` must point to a live, 64-byte aligned packet slot of 16 dwords that no other thread
/// accesses until dword 0 is published.
#[inline]
pub(crate) unsafe fn store_body(slot: *const AtomicU32, dwords: &[u32; 16]) {
    #[cfg(not(loom))]
    // SAFETY: dwords 1..16 of the slot, writable and not accessed concurrently (the caller's
    // contract); the source is a separate array of the same length.
    unsafe {
        core::ptr::copy_nonoverlapping(
            dwords.as_ptr().add(1),
            slot.add(1).cast::<u32>().cast_mut(),
            15,
        );
    }
    #[cfg(loom)]
    for (i, d) in dwords.iter().enumerate().skip(1) {
        // SAFETY: dword `i` < 16 of the slot.
        unsafe { &*slot.add(i) }.store(*d, Ordering::Relaxed);
    }
}
