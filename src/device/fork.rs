//! Forked children. A KFD belongs to the process that opened it: in a child of `fork()` the
//! driver refuses the inherited file (`kfd_ioctl`: "Using KFD FD in wrong process", `EBADF`),
//! and the mappings the GPU uses are not inherited at all, because kfdrt marks them
//! `MADV_DONTFORK` as libhsakmt does (a copy-on-write copy of memory the GPU writes would make
//! the parent's GPU writes land in pages the parent no longer sees, and KFD evicts the parent's
//! queues while it breaks the sharing).
//!
//! kfdrt tells the child with [`crate::Error::ForkedChild`] rather than reopening behind the
//! caller's back: every object the child inherited (queues, buffers, signals) names state of
//! the parent's process that the child cannot reach, so nothing could be carried over, and a
//! silent fresh device would hand out addresses the old objects do not know. The child opens
//! its own [`crate::Kfd`] instead, as a child of a ROCr process calls `hsa_init` again
//! (libhsakmt's `hsakmt_is_forked_child` then starts afresh).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// How many `fork()`s lie between the first process that used kfdrt and this one.
static GENERATION: AtomicU64 = AtomicU64::new(0);
static HOOK: Once = Once::new();

extern "C" fn in_child() {
    // Async-signal-safe: one atomic add.
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The fork generation of this process, installing the `pthread_atfork` hook on first use
/// (before any device exists, so every later fork is counted).
pub(crate) fn generation() -> u64 {
    HOOK.call_once(|| {
        // SAFETY: registers a plain function with no captured state; it only touches an atomic.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
        if rc != 0 {
            log::warn!("kfdrt: pthread_atfork failed ({rc}): forked children are told by pid only");
        }
    });
    GENERATION.load(Ordering::Relaxed)
}

/// The generation without the installation check: for the per-submission check, once a
/// device exists (and so [`generation`] has run).
#[inline(always)]
pub(crate) fn current_generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Keeps a mapping the GPU uses out of forked children (libhsakmt marks its own likewise).
/// Called after every mapping of such memory, since a `MAP_FIXED` mapping starts without the
/// mark of the reservation it replaces.
pub(crate) fn dont_fork(addr: *mut libc::c_void, len: usize) {
    // SAFETY: advisory, on a mapping the caller has just made and owns.
    if unsafe { libc::madvise(addr, len, libc::MADV_DONTFORK) } != 0 {
        log::debug!(
            "kfdrt: madvise(MADV_DONTFORK) on {addr:p} ({len} bytes): {}",
            std::io::Error::last_os_error()
        );
    }
}
