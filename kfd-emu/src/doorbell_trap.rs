//! Noticing a doorbell rung by a runtime that gives no hint (ROCr under the preload) within
//! microseconds of an idle spell, without polling.
//!
//! While a processor of a GPU sleeps deeply, the client's mappings of that GPU's doorbell pages
//! are write-protected ([`arm`]). The client's next doorbell store faults; the `SIGSEGV` handler
//! ([`crate::segv`]'s, shared with [`crate::hdp`]) lifts the protection and wakes, through one futex ([`wait`]), the
//! processors sleeping on it and the doorbell watcher, then yields its CPU to them; the store
//! then completes as if nothing happened. A GPU whose processors are awake has unprotected
//! pages, so a busy queue pays nothing; a client pays one fault per idle spell of the GPU.
//!
//! Only mappings made while [`crate::EmuConfig::trap_doorbell_writes`] is on are trapped (the
//! preload turns it on); an in-process runtime such as kfdrt passes hints instead.
//!
//! The handler's part is async-signal-safe: it scans a fixed table, calls `mprotect` and
//! `futex`, and touches only atomics.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Trapped mappings at most (a process maps each GPU's doorbells once per open).
const TRAPS: usize = 256;

/// A client mapping of doorbell pages: `[start, end)`, owned by `owner` (see
/// [`crate::segv::owner`]); `start` 0 is a free slot, 1 a slot being filled.
struct Trap {
    start: AtomicUsize,
    end: AtomicUsize,
    owner: AtomicU64,
    /// Stores that faulted since the mapping was registered.
    sprung: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Trap = Trap {
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    owner: AtomicU64::new(0),
    sprung: AtomicU64::new(0),
};
static TABLE: [Trap; TRAPS] = [FREE; TRAPS];

/// Bumped by every trapped store; watchers sleep on it.
static FIRED: AtomicU32 = AtomicU32::new(0);

/// Held by [`arm`] and [`release`] (never by the handler), so a mapping is not write-protected
/// after it was released: the client may unmap it then, and the address serve another mapping.
static PROTECTING: Mutex<()> = Mutex::new(());

fn protecting() -> std::sync::MutexGuard<'static, ()> {
    PROTECTING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts trapping the client mapping `[start, start + len)` of doorbells owned by `owner`
/// (mapped read-write). Returns its slot, or `None` when the table is full (the mapping is then
/// noticed by the watcher's polling only).
pub(crate) fn register(start: usize, len: usize, owner: u64) -> Option<usize> {
    crate::segv::install(on_fault);
    for (i, t) in TABLE.iter().enumerate() {
        if t.start
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            t.end.store(start + len, Ordering::Release);
            t.owner.store(owner, Ordering::Release);
            t.sprung.store(0, Ordering::Release);
            t.start.store(start, Ordering::Release);
            return Some(i);
        }
    }
    None
}

/// Stops trapping every mapping that starts inside `[start, start + len)` (it is being
/// unmapped), leaving it writable.
pub(crate) fn unregister_range(start: usize, len: usize) {
    for t in &TABLE {
        let a = t.start.load(Ordering::Acquire);
        if a > 1 && start <= a && a < start + len {
            release(t, a);
        }
    }
}

/// Stops trapping every mapping of emulator `emulator` (it is going away), leaving them
/// writable.
pub(crate) fn unregister_emulator(emulator: u64) {
    for t in &TABLE {
        let a = t.start.load(Ordering::Acquire);
        if a > 1 && t.owner.load(Ordering::Acquire) >> 8 == emulator {
            release(t, a);
        }
    }
}

fn release(t: &Trap, start: usize) {
    let _g = protecting();
    if t.start
        .compare_exchange(start, 1, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok()
    {
        allow_writes(start, t.end.load(Ordering::Acquire));
        t.start.store(0, Ordering::Release);
    }
}

/// Makes a trapped mapping (`start..end`) writable again. Async-signal-safe (one `mprotect`).
fn allow_writes(start: usize, end: usize) {
    // SAFETY: `start..end` is a registered client mapping of doorbells, which the emulator
    // mapped read-write; this restores that, whether or not `arm` had protected it.
    unsafe {
        libc::mprotect(
            start as *mut libc::c_void,
            end - start,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
}

/// Write-protects the trapped mappings in `slots` (a processor of their GPU is going to sleep
/// deeply): the client's next doorbell store will fault and wake it.
pub(crate) fn arm(slots: &[usize]) {
    if slots.is_empty() {
        return;
    }
    let _g = protecting();
    for &i in slots {
        let Some(t) = TABLE.get(i) else { continue };
        let start = t.start.load(Ordering::Acquire);
        if start > 1 {
            let end = t.end.load(Ordering::Acquire);
            log::trace!("kfd-emu: doorbell trap {i} armed: {start:#x}..{end:#x}");
            // SAFETY: a client mapping of doorbells the emulator made (still registered, so not
            // unmapped): reads stay allowed, a store faults into `on_fault`.
            unsafe { libc::mprotect(start as *mut libc::c_void, end - start, libc::PROT_READ) };
        }
    }
}

/// Doorbell stores that faulted into the mappings in `slots`.
pub(crate) fn sprung(slots: &[usize]) -> u64 {
    slots
        .iter()
        .filter_map(|&i| TABLE.get(i))
        .map(|t| t.sprung.load(Ordering::Relaxed))
        .sum()
}

/// The `SIGSEGV` handler's part: a protection fault at `addr` inside a trapped mapping lifts
/// its protection, counts it and wakes the threads in [`wait`]; returns whether it was one.
/// Async-signal-safe.
fn on_fault(addr: usize) -> bool {
    for t in &TABLE {
        let start = t.start.load(Ordering::Acquire);
        let end = t.end.load(Ordering::Acquire);
        if start > 1 && start <= addr && addr < end {
            // Lifting the protection is what lets the faulting store complete.
            allow_writes(start, end);
            t.sprung.fetch_add(1, Ordering::Relaxed);
            // Wakes the GPU's sleeping processors (and the watcher) directly.
            kick();
            // They may well have been queued on this CPU, behind a client that now spins on
            // its completion signal: let them run. This costs the client one yield per idle
            // spell of the GPU, not per doorbell.
            // SAFETY: sched_yield takes no arguments and touches no memory.
            unsafe { libc::sched_yield() };
            return true;
        }
    }
    false
}

/// Wakes every thread in [`wait`]: the processors sleeping on the trap futex and the doorbell
/// watchers (a store trapped, or something else changed that they must look at).
pub(crate) fn kick() {
    FIRED.fetch_add(1, Ordering::AcqRel);
    // SAFETY: FUTEX_WAKE on a static word; no memory is written.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            FIRED.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
}

/// The count of trapped stores and other kicks, to pass to [`wait`].
pub(crate) fn fired_count() -> u32 {
    FIRED.load(Ordering::Acquire)
}

/// Sleeps up to `timeout`, or until a trapped store or a kick after `seen` ([`fired_count`]).
pub(crate) fn wait(seen: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a static word with a valid relative timeout; it returns at once if
    // the word no longer holds `seen`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            FIRED.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            seen,
            &ts as *const libc::timespec,
        )
    };
}
