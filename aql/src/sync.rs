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
