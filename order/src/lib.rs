//! Stores a GPU observes, ordered the way the device needs them.
//!
//! A runtime writes a packet into ring memory, then publishes it (an AQL header, a write
//! pointer) with one store, then rings a doorbell, an uncached MMIO write. The GPU reads the ring
//! through PCIe or a coherent fabric, not as another CPU core, so the ordering a Rust `Release`
//! store gives among threads is not always enough:
//!
//! - **x86-64** keeps stores in program order for every observer (TSO), including stores to
//!   uncached memory, which is how KFD maps doorbells: a release store is enough.
//! - **AArch64** orders a release store only within the inner-shareable domain. Like Linux's
//!   `dma_wmb()`, publishing takes a `dmb oshst` first, so every earlier store to normal memory
//!   reaches the outer-shareable domain (where the device snoops) before the published word;
//!   like Linux's `wmb()` before `writeq()`, a doorbell takes a `dsb st`, so those stores have
//!   completed before the MMIO write leaves the core.
//! - Other architectures are refused at build time rather than given ordering that was never
//!   checked against their device memory model.

#![no_std]
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!(
    "kfdrt orders its stores to GPU queues and doorbells for x86-64 and AArch64 only: on this \
     architecture the barrier between ring writes and an MMIO doorbell write has not been \
     worked out (see order/src/lib.rs)"
);

/// Makes every earlier store visible to a device before the next store to normal memory.
#[inline(always)]
fn device_store_barrier() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a data memory barrier: no memory operands, no effect but ordering.
    unsafe {
        core::arch::asm!("dmb oshst", options(nostack, preserves_flags))
    };
}

/// Makes every earlier store complete before an MMIO store.
#[inline(always)]
fn mmio_store_barrier() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a data synchronisation barrier: no memory operands, no effect but ordering.
    unsafe {
        core::arch::asm!("dsb st", options(nostack, preserves_flags))
    };
}

/// Publishes a 32-bit word the device polls (an AQL packet header): every store before it is
/// visible to the device first.
#[inline(always)]
pub fn publish_u32(word: &AtomicU32, value: u32) {
    device_store_barrier();
    word.store(value, Ordering::Release);
}

/// Publishes a 64-bit word the device polls (a write pointer), as [`publish_u32`].
#[inline(always)]
pub fn publish_u64(word: &AtomicU64, value: u64) {
    device_store_barrier();
    word.store(value, Ordering::Release);
}

/// Rings a doorbell: one 64-bit store to the mapped doorbell page, after every earlier store
/// (ring contents, published words) has completed.
#[inline(always)]
pub fn ring_doorbell(doorbell: &AtomicU64, value: u64) {
    mmio_store_barrier();
    doorbell.store(value, Ordering::Release);
}
