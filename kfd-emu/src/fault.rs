//! Fault injection: make the emulated device fail the way real ones do, on demand.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Controls for injected failures. Obtain it from [`crate::Emulator::faults`].
#[derive(Debug, Default)]
pub struct FaultInjector {
    /// Allocations to let through before failing one (0 = off).
    fail_alloc_in: AtomicU64,
    stalled: Mutex<HashSet<u32>>,
    /// Every queue is stalled.
    all_stalled: AtomicBool,
    /// Fast path for processors: whether any queue is stalled at all.
    any_stalled: AtomicBool,
    sdma_exhausted: AtomicBool,
    queues_exhausted: AtomicBool,
    /// Bumped by every change to the stalls, so the doorbell watcher wakes processors that
    /// sleep deeply to re-read them.
    generation: AtomicU64,
    /// Evictions of the process's queues not yet restored (they nest, as KFD counts them).
    evictions: AtomicU64,
    /// The system is suspended (a power-management cycle).
    suspended: AtomicBool,
    /// Queues a debugger suspended (`DBG_TRAP_SUSPEND_QUEUES`), apart from injected stalls.
    debug_suspended: Mutex<HashSet<u32>>,
    /// Who hears of evictions, resets and faults (`SMI_EVENTS` clients).
    pub(crate) smi: crate::smi::SmiHub,
}

impl FaultInjector {
    /// Makes the `n`-th allocation from now fail with ENOMEM (1 = the next one); 0 turns it off.
    pub fn fail_nth_allocation(&self, n: u64) {
        self.fail_alloc_in.store(n, Ordering::Release);
    }

    /// Clears every injected fault.
    pub fn clear(&self) {
        self.fail_alloc_in.store(0, Ordering::Release);
        self.stalled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let debug = !self
            .debug_suspended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty();
        self.any_stalled.store(debug, Ordering::Release);
        self.all_stalled.store(false, Ordering::Release);
        self.evictions.store(0, Ordering::Release);
        self.suspended.store(false, Ordering::Release);
        self.changed();
    }

    pub(crate) fn take_allocation_failure(&self) -> bool {
        let mut cur = self.fail_alloc_in.load(Ordering::Acquire);
        while cur != 0 {
            match self.fail_alloc_in.compare_exchange(
                cur,
                cur - 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return cur == 1,
                Err(c) => cur = c,
            }
        }
        false
    }

    /// Makes every further SDMA queue creation fail as if the engines' slots were used up.
    pub fn exhaust_sdma_queues(&self, exhausted: bool) {
        self.sdma_exhausted.store(exhausted, Ordering::Release);
    }

    pub(crate) fn sdma_exhausted(&self) -> bool {
        self.sdma_exhausted.load(Ordering::Acquire)
    }

    /// Makes every further queue creation fail as if the process had used all its queue slots
    /// (KFD's per-process queue limit: ENOSPC).
    pub fn exhaust_queue_slots(&self, exhausted: bool) {
        self.queues_exhausted.store(exhausted, Ordering::Release);
    }

    pub(crate) fn queues_exhausted(&self) -> bool {
        self.queues_exhausted.load(Ordering::Acquire)
    }

    /// Stops queue `queue_id`'s packet processor from consuming packets until resumed.
    pub fn stall_queue(&self, queue_id: u32) {
        self.stalled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(queue_id);
        self.any_stalled.store(true, Ordering::Release);
        self.changed();
    }

    /// Stops (`true`) or lets run again (`false`) every queue's packet processor, including
    /// queues created later (a runtime's internal ones, whose ids a test does not know).
    pub fn stall_all_queues(&self, stalled: bool) {
        self.all_stalled.store(stalled, Ordering::Release);
        self.changed();
    }

    /// Lets a stalled queue run again.
    pub fn resume_queue(&self, queue_id: u32) {
        let mut stalled = self.stalled.lock().unwrap_or_else(|p| p.into_inner());
        stalled.remove(&queue_id);
        let debug = !self
            .debug_suspended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty();
        self.any_stalled
            .store(!stalled.is_empty() || debug, Ordering::Release);
        self.changed();
    }

    /// A control changed: processors re-read them. The doorbell watcher, which wakes the
    /// sleeping ones, is woken at once rather than at its next look.
    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        crate::doorbell_trap::kick();
    }

    /// Changes to the stall controls so far.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Evicts the process's queues, as KFD does under memory pressure or for a
    /// userptr invalidation (`kfd_process_evict_queues`): no queue starts another packet until
    /// [`FaultInjector::restore_queues`] (a packet already running finishes: the emulated CP
    /// preempts at packet boundaries). Buffers keep their contents. Evictions nest.
    pub fn evict_queues(&self) {
        self.evict_queues_for(crate::smi::EVICTION_TTM);
    }

    /// [`FaultInjector::evict_queues`] for `trigger` (`KFD_QUEUE_EVICTION_TRIGGER_*`, which the
    /// SMI eviction line reports).
    pub(crate) fn evict_queues_for(&self, trigger: u32) {
        if self.evictions.fetch_add(1, Ordering::AcqRel) == 0 && !self.suspended() {
            self.smi.queue_eviction(trigger);
        }
        self.changed();
    }

    /// Ends one eviction; the queues run again once every eviction is restored
    /// (`kfd_process_restore_queues`). Returns `false` if none was in force.
    pub fn restore_queues(&self) -> bool {
        let ok = self
            .evictions
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if ok && !self.queues_evicted() {
            self.smi.queue_restore();
        }
        self.changed();
        ok
    }

    /// Suspends the system (`kgd2kfd_suspend` on every GPU before a power-management cycle):
    /// every queue stops as in an eviction until [`FaultInjector::resume`].
    pub fn suspend(&self) {
        if !self.suspended.swap(true, Ordering::AcqRel)
            && self.evictions.load(Ordering::Acquire) == 0
        {
            self.smi.queue_eviction(crate::smi::EVICTION_SUSPEND);
        }
        self.changed();
    }

    /// Resumes the system after [`FaultInjector::suspend`]: queues run again (unless evicted).
    pub fn resume(&self) {
        if self.suspended.swap(false, Ordering::AcqRel) && !self.queues_evicted() {
            self.smi.queue_restore();
        }
        self.changed();
    }

    fn suspended(&self) -> bool {
        self.suspended.load(Ordering::Acquire)
    }

    /// Whether the queues are evicted or the system suspended.
    #[inline]
    pub fn queues_evicted(&self) -> bool {
        self.evictions.load(Ordering::Acquire) > 0 || self.suspended.load(Ordering::Acquire)
    }

    /// Whether queue `queue_id` must not run now. Every processor asks on every poll: the
    /// common answer takes three loads, and only a set stall looks the queue up.
    #[inline]
    pub(crate) fn is_stalled(&self, queue_id: u32) -> bool {
        if self.all_stalled.load(Ordering::Acquire) || self.queues_evicted() {
            return true;
        }
        self.any_stalled.load(Ordering::Acquire) && self.is_stalled_by_id(queue_id)
    }

    #[cold]
    #[inline(never)]
    fn is_stalled_by_id(&self, queue_id: u32) -> bool {
        let stalled = self
            .stalled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&queue_id);
        stalled
            || self
                .debug_suspended
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&queue_id)
    }

    /// Whether a debugger suspended queue `queue_id`.
    pub(crate) fn is_debug_suspended(&self, queue_id: u32) -> bool {
        self.debug_suspended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&queue_id)
    }

    /// A debugger suspends (`true`) or resumes queue `queue_id`; `false` when it already was.
    pub(crate) fn debug_suspend(&self, queue_id: u32, suspend: bool) -> bool {
        let changed = {
            let mut set = self
                .debug_suspended
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if suspend {
                set.insert(queue_id)
            } else {
                set.remove(&queue_id)
            }
        };
        if suspend {
            // Only ever set here: a stale `true` costs the slow path, never a missed stall.
            self.any_stalled.store(true, Ordering::Release);
        }
        self.changed();
        changed
    }

    /// The debugger detached: queues it left suspended run again.
    pub(crate) fn resume_debug_suspended(&self) {
        let ids: Vec<u32> = self
            .debug_suspended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect();
        for id in ids {
            self.debug_suspend(id, false);
        }
    }
}
