//! The host data path (HDP): CPU writes to host-visible VRAM through the PCIe BAR sit in the
//! GPU's HDP write cache until an HDP flush, so a kernel or copy may read old data. A real GPU
//! gives no error; strict mode reports a GPU read of VRAM the CPU wrote since the last flush.
//!
//! How the emulator sees CPU writes: the CPU's mapping of each host-visible VRAM buffer (the
//! render-node mmap) is write-protected while clean. The first CPU store to a page faults; a
//! `SIGSEGV` handler records the page as dirty, lifts the protection and lets the store run. An
//! HDP flush (a store to the MMIO-remap page's `HDP_MEM_FLUSH_CNTL`, or an SDMA register poll,
//! ROCr's and Linux's HDP flush packet) clears the GPU's dirty pages and protects them again.
//! GPU accesses to host-visible VRAM look the page up.
//!
//! The handler is [`crate::segv`]'s, which [`crate::doorbell_trap`] registers with too. This
//! module's part is async-signal-safe: it scans a fixed table of tracked ranges, appends the
//! page to a fixed ring and calls `mprotect`.
//! Leniency: a system call that writes into a tracked page (`read(2)` into VRAM) fails with
//! EFAULT instead of faulting, and more than [`RING`] pages dirtied between two GPU packets stop
//! the reports until the next flush.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};

const PAGE: usize = 4096;
/// Tracked CPU mappings at most (their ids fit in a page offset).
const SLOTS: usize = 4096;
/// Pages dirtied between two drains at most.
const RING: usize = 1 << 16;

/// A tracked CPU mapping: `[start, end)`, owned by GPU `owner` (emulator id << 8 | GPU index).
struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    owner: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    owner: AtomicU64::new(0),
};
static SLOT_TABLE: [Slot; SLOTS] = [EMPTY_SLOT; SLOTS];

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_ENTRY: AtomicU64 = AtomicU64::new(0);
/// Pages the handler saw written, as `page | slot`: 0 is an entry not yet written.
static DIRTY_RING: [AtomicU64; RING] = [EMPTY_ENTRY; RING];
static RING_TAIL: AtomicU64 = AtomicU64::new(0);
static OVERFLOW: AtomicBool = AtomicBool::new(false);

/// Dirty pages, drained from the ring: page -> owner. `DIRTY_COUNT` mirrors the map's length for
/// the GPU accessors' fast path.
#[derive(Default)]
struct Dirty {
    head: u64,
    pages: HashMap<u64, u64>,
}
static DIRTY: LazyLock<Mutex<Dirty>> = LazyLock::new(Mutex::default);
static DIRTY_COUNT: AtomicUsize = AtomicUsize::new(0);

fn lock() -> std::sync::MutexGuard<'static, Dirty> {
    DIRTY.lock().unwrap_or_else(|p| p.into_inner())
}

/// The HDP part of the `SIGSEGV` handler ([`crate::segv`]): a store to a write-protected page
/// of a tracked mapping records the page as dirty and lifts the protection so the store runs.
/// Async-signal-safe: atomics, a fixed ring and `mprotect`.
fn on_fault(addr: usize) -> bool {
    for (i, slot) in SLOT_TABLE.iter().enumerate() {
        let start = slot.start.load(Ordering::Acquire);
        if start <= addr && addr < slot.end.load(Ordering::Acquire) && start > 1 {
            let page = addr & !(PAGE - 1);
            let n = RING_TAIL.fetch_add(1, Ordering::AcqRel);
            let head = lock_free_head();
            if n.wrapping_sub(head) >= RING as u64 {
                OVERFLOW.store(true, Ordering::Release);
            } else {
                DIRTY_RING[(n % RING as u64) as usize]
                    .store(page as u64 | i as u64, Ordering::Release);
            }
            // SAFETY: the page belongs to a tracked mapping the emulator made; lifting its
            // write protection is what lets the faulting store complete.
            return unsafe {
                libc::mprotect(
                    page as *mut libc::c_void,
                    PAGE,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            } == 0;
        }
    }
    false
}

/// The consumer's position, read without the lock (the handler only needs an estimate).
static HEAD: AtomicU64 = AtomicU64::new(0);

fn lock_free_head() -> u64 {
    HEAD.load(Ordering::Acquire)
}

/// Starts tracking CPU writes to `[start, start + len)`, a mapping of host-visible VRAM owned by
/// `owner`: write-protects it. Returns the slot to pass to [`untrack`], or `None` when the table
/// is full (the mapping then goes untracked).
pub(crate) fn track(start: usize, len: usize, owner: u64) -> Option<usize> {
    crate::segv::install(on_fault);
    for (i, slot) in SLOT_TABLE.iter().enumerate() {
        // 1 marks a slot being filled: the handler ignores it (it needs start > 1).
        if slot
            .start
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            slot.end.store(start + len, Ordering::Release);
            slot.owner.store(owner, Ordering::Release);
            slot.start.store(start, Ordering::Release);
            // SAFETY: the emulator made this mapping for the caller; protecting it only makes
            // the next store fault into the handler, which lifts it again.
            unsafe { libc::mprotect(start as *mut libc::c_void, len, libc::PROT_READ) };
            return Some(i);
        }
    }
    None
}

/// Stops tracking a slot (its mapping is going away) and forgets its dirty pages.
pub(crate) fn untrack(slot: usize) {
    let Some(s) = SLOT_TABLE.get(slot) else {
        return;
    };
    let (start, end) = (
        s.start.load(Ordering::Acquire),
        s.end.load(Ordering::Acquire),
    );
    let mut d = lock();
    drain(&mut d);
    d.pages
        .retain(|&p, _| !(start as u64 <= p && p < end as u64));
    DIRTY_COUNT.store(d.pages.len(), Ordering::Release);
    s.start.store(0, Ordering::Release);
}

fn drain(d: &mut Dirty) {
    let tail = RING_TAIL.load(Ordering::Acquire);
    while d.head < tail {
        let cell = &DIRTY_RING[(d.head % RING as u64) as usize];
        let v = cell.load(Ordering::Acquire);
        if v == 0 {
            // A handler claimed the entry and has not written it yet.
            break;
        }
        cell.store(0, Ordering::Release);
        let slot = (v as usize) & (PAGE - 1);
        if let Some(s) = SLOT_TABLE.get(slot) {
            d.pages
                .insert(v & !(PAGE as u64 - 1), s.owner.load(Ordering::Acquire));
        }
        d.head += 1;
    }
    HEAD.store(d.head, Ordering::Release);
    DIRTY_COUNT.store(d.pages.len(), Ordering::Release);
}

/// Whether no page is dirty and no write is waiting in the ring to be recorded. A CPU write
/// that raced this check is concurrent with the caller's flush or read, as on hardware; one
/// that happened before (by a release the caller acquired) has its ring entry visible.
fn nothing_written() -> bool {
    DIRTY_COUNT.load(Ordering::Acquire) == 0
        && RING_TAIL.load(Ordering::Acquire) == HEAD.load(Ordering::Acquire)
}

/// An HDP flush of `owner`'s GPU: its dirty pages become visible and are protected again.
pub(crate) fn flush(owner: u64) {
    // Every packet with a system-scope acquire flushes: with no write recorded, that is three
    // loads, not the process-wide lock.
    if nothing_written() && !OVERFLOW.load(Ordering::Acquire) {
        return;
    }
    let mut d = lock();
    drain(&mut d);
    let mut mine: Vec<u64> = d
        .pages
        .iter()
        .filter(|(_, &o)| o == owner)
        .map(|(&p, _)| p)
        .collect();
    mine.sort_unstable();
    for p in &mine {
        d.pages.remove(p);
    }
    // Runs of neighbouring pages are protected with one call each: a large buffer written by
    // the CPU is one system call, not one per page (and one mapping, not one per page).
    let mut i = 0;
    while i < mine.len() {
        let start = mine[i];
        let mut end = start + PAGE as u64;
        i += 1;
        while i < mine.len() && mine[i] == end {
            end += PAGE as u64;
            i += 1;
        }
        // SAFETY: every page of the run is in a tracked mapping (untracking drops its pages
        // under this lock), and contiguous pages of tracked mappings are mapped.
        unsafe {
            libc::mprotect(
                start as *mut libc::c_void,
                (end - start) as usize,
                libc::PROT_READ,
            )
        };
    }
    if OVERFLOW.swap(false, Ordering::AcqRel) {
        log::warn!("kfd-emu: more VRAM pages written between flushes than the HDP model tracks");
    }
    DIRTY_COUNT.store(d.pages.len(), Ordering::Release);
}

/// Whether a GPU read of `[va, va + len)` would see CPU writes not yet flushed: the first such
/// page, if any.
pub(crate) fn unflushed(va: u64, len: u64) -> Option<u64> {
    if nothing_written() {
        return None;
    }
    let mut d = lock();
    drain(&mut d);
    let first = va & !(PAGE as u64 - 1);
    let end = va.saturating_add(len.max(1));
    if (end - first) / PAGE as u64 > d.pages.len() as u64 {
        // Fewer dirty pages than pages read: look at those.
        d.pages
            .keys()
            .copied()
            .filter(|&p| first <= p && p < end)
            .min()
    } else {
        (first..end).step_by(PAGE).find(|p| d.pages.contains_key(p))
    }
}

/// Stops tracking every slot within `[start, start + len)` (the mapping is being unmapped).
pub(crate) fn untrack_range(start: usize, len: usize) {
    for (i, s) in SLOT_TABLE.iter().enumerate() {
        let a = s.start.load(Ordering::Acquire);
        if a > 1 && start <= a && a < start + len {
            untrack(i);
        }
    }
}
