//! KFD events: `CREATE/DESTROY/SET/RESET_EVENT` and `WAIT_EVENTS`, plus the hooks the packet
//! processors use to raise them (mailbox writes and interrupts, memory faults, queue errors).
//!
//! Semantics follow `kfd_events.c`: signal events take ids equal to their slot in the events
//! page and need the page registered by the first signal event. Id 0 is never an event:
//! `kfd_event_init_process` reserves it (the interrupt path ignores a CP interrupt without a
//! context id), so signal events get 1..4096, 4095 at most. Other events get ids from
//! `KFD_FIRST_NONSIGNAL_EVENT_ID`, `(INT_MAX >> 1) + 1` = 0x40000000, up. Waking follows `set_event` and `init_event_waiter`: a wait that starts on
//! a signaled auto-reset event consumes it at once; setting an event that threads are waiting on
//! wakes every one of them and, if it is auto-reset, leaves it unsignaled (so a wait that starts
//! afterwards does not see it). Not modelled: the kernel-allocated events page amdkfd falls back
//! to when a signal event is created before user space registers one (the APU path); here that
//! is EINVAL, since every dGPU runtime (libhsakmt, kfdrt) registers its page first.

use crate::memfd::SharedMem;
use kfd_sys::bindings::*;
use kfd_sys::Errno;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Signal event slots in the events page (`KFD_SIGNAL_EVENT_LIMIT`); slot 0 is reserved.
pub(crate) const SIGNAL_EVENT_LIMIT: u32 = 4096;
/// `KFD_FIRST_NONSIGNAL_EVENT_ID`: `(INT_MAX >> 1) + 1`.
const FIRST_NONSIGNAL_ID: u32 = 0x4000_0000;
/// `KFD_MMAP_TYPE_EVENTS`: the mmap offset type of the events page (bits 62-63 = 2).
const KFD_MMAP_TYPE_EVENTS: u64 = 2 << 62;
/// What an unwritten mailbox slot holds (`UNSIGNALED_EVENT_SLOT`).
const UNSIGNALED_EVENT_SLOT: u64 = u64::MAX;

/// Mailbox slot `id` of the events page.
fn slot(page: &SharedMem, id: u32) -> Option<&AtomicU64> {
    if u64::from(id) * 8 + 8 > page.len() as u64 {
        return None;
    }
    // SAFETY: in bounds (checked above) of the page, which lives as long as `page`; slots are
    // 8-byte aligned (the page is), and both the GPU and the CPU access them atomically.
    Some(unsafe { &*(page.host().add(id as usize * 8) as *const AtomicU64) })
}

/// What a memory-exception event reports (`kfd_hsa_memory_exception_data`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MemoryFault {
    pub(crate) va: u64,
    pub(crate) gpu_id: u32,
    /// The page fault's kind; `None` for an engine exception with no address (`imprecise`).
    pub(crate) kind: Option<crate::vm::FaultKind>,
    /// `ErrorType` (`KFD_MEM_ERR_*`): 0 for a page fault, SRAM_ECC with an ECC reset.
    pub(crate) error_type: u32,
}

/// What a hardware-exception event reports of a GPU reset (`kfd_hsa_hw_exception_data`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ResetReport {
    pub(crate) gpu_id: u32,
    /// `KFD_HW_EXCEPTION_GPU_HANG` or `KFD_HW_EXCEPTION_ECC`.
    pub(crate) cause: u32,
    pub(crate) memory_lost: bool,
}

#[derive(Debug)]
struct Event {
    kind: u32,
    auto_reset: bool,
    signaled: bool,
    fault: Option<MemoryFault>,
    /// The last reset a hardware-exception event reported.
    reset: Option<ResetReport>,
    /// Waits (by waiter id) currently sleeping on this event.
    waiters: Vec<u64>,
    /// `event_age`: 1 when created, one more each time it is set (KFD 1.14+ reports it to
    /// waiters that pass the age they last saw, so a set between two waits is never lost).
    age: u64,
}

impl Event {
    /// `set_event`: wakes every current waiter; stays signaled unless an auto-reset event was
    /// consumed by them.
    fn set(&mut self, activated: &mut HashSet<(u64, u32), IdBuild>, id: u32) {
        self.signaled = !self.auto_reset || self.waiters.is_empty();
        // "event_age wrap back!": 0 means "no age" to a waiter, 1 is a new event's.
        self.age = match self.age.wrapping_add(1) {
            0 => 2,
            a => a,
        };
        for &w in &self.waiters {
            activated.insert((w, id));
        }
    }
}

/// Hashes an event id (or a waiter's) with one multiplication. Every completion with an event
/// looks its event up, on the packet processor's thread: the standard SipHash cost about a
/// third of that processor's work per packet. The ids are small integers the driver hands
/// out, so nothing needs the standard hasher's resistance to chosen keys.
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: the high bits, which the table's control bytes use, mix every
        // input bit.
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IdBuild = std::hash::BuildHasherDefault<IdHasher>;

#[derive(Default)]
struct Inner {
    events: HashMap<u32, Event, IdBuild>,
    page_handle: Option<u64>,
    /// The registered events page: one u64 mailbox slot per signal event.
    page: Option<Arc<SharedMem>>,
    next_nonsignal: u32,
    /// (waiter, event) pairs woken by `Event::set` and not yet seen by the waiter.
    activated: HashSet<(u64, u32), IdBuild>,
    /// Waiters one of whose events was destroyed under them (their wait fails).
    orphaned: HashSet<u64, IdBuild>,
    next_waiter: u64,
}

/// The process's events.
#[derive(Default)]
pub(crate) struct EventTable {
    inner: Mutex<Inner>,
    cv: Condvar,
}

impl EventTable {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn live(&self) -> usize {
        self.lock().events.len()
    }

    /// `CREATE_EVENT`. `page_of` gives the memory of a GTT buffer big enough for the events
    /// page, or `None`.
    pub(crate) fn create(
        &self,
        a: &mut kfd_ioctl_create_event_args,
        page_of: impl Fn(u64) -> Option<Arc<SharedMem>>,
    ) -> Result<(), Errno> {
        let mut g = self.lock();
        if a.event_page_offset != 0 {
            if g.page_handle.is_some() {
                return Err(Errno::EINVAL);
            }
            g.page = Some(page_of(a.event_page_offset).ok_or(Errno::EINVAL)?);
            g.page_handle = Some(a.event_page_offset);
        }
        let id = match a.event_type {
            // kfd_event_create gives debug events signal slots too.
            KFD_IOC_EVENT_SIGNAL | KFD_IOC_EVENT_DEBUG_EVENT => {
                if g.page_handle.is_none() {
                    // dGPUs need the events page before the first signal event.
                    return Err(Errno::EINVAL);
                }
                // kfd_event_init_process took id 0.
                (1..SIGNAL_EVENT_LIMIT)
                    .find(|i| !g.events.contains_key(i))
                    .ok_or(Errno::ENOSPC)?
            }
            KFD_IOC_EVENT_NODECHANGE..=KFD_IOC_EVENT_MEMORY => {
                let id = FIRST_NONSIGNAL_ID + g.next_nonsignal;
                g.next_nonsignal += 1;
                id
            }
            _ => return Err(Errno::EINVAL),
        };
        g.events.insert(
            id,
            Event {
                kind: a.event_type,
                auto_reset: a.auto_reset != 0,
                signaled: false,
                fault: None,
                reset: None,
                waiters: Vec::new(),
                age: 1,
            },
        );
        a.event_id = id;
        if id < SIGNAL_EVENT_LIMIT {
            // create_signal_event: a new slot starts unsignaled, whatever the page held.
            if let Some(slot) = g.page.as_ref().and_then(|p| slot(p, id)) {
                slot.store(UNSIGNALED_EVENT_SLOT, Ordering::Release);
            }
            // kfd_event_create: a signal event answers the events page's mmap offset and its
            // slot; libhsakmt only fills in the slot's mailbox address when the offset is set.
            a.event_page_offset = KFD_MMAP_TYPE_EVENTS;
            a.event_slot_index = id;
        } else {
            a.event_slot_index = 0;
        }
        a.event_trigger_data = id;
        Ok(())
    }

    /// `DESTROY_EVENT`: threads waiting on the event wake, and their wait fails
    /// (`KFD_IOC_WAIT_RESULT_FAIL`), as `destroy_event` clears their waiters' event.
    pub(crate) fn destroy(&self, id: u32) -> Result<(), Errno> {
        let mut g = self.lock();
        let ev = g.events.remove(&id).ok_or(Errno::EINVAL)?;
        if !ev.waiters.is_empty() {
            g.orphaned.extend(ev.waiters.iter().copied());
            self.cv.notify_all();
        }
        Ok(())
    }

    pub(crate) fn set(&self, id: u32) -> Result<(), Errno> {
        let mut g = self.lock();
        let ev = g.events.get_mut(&id).ok_or(Errno::EINVAL)?;
        if ev.kind != KFD_IOC_EVENT_SIGNAL {
            return Err(Errno::EINVAL);
        }
        let g = &mut *g;
        if let Some(ev) = g.events.get_mut(&id) {
            ev.set(&mut g.activated, id);
        }
        self.cv.notify_all();
        Ok(())
    }

    pub(crate) fn reset(&self, id: u32) -> Result<(), Errno> {
        let mut g = self.lock();
        let ev = g.events.get_mut(&id).ok_or(Errno::EINVAL)?;
        // Only events the CPU may signal can be reset (event_can_be_cpu_signaled).
        if ev.kind != KFD_IOC_EVENT_SIGNAL {
            return Err(Errno::EINVAL);
        }
        ev.signaled = false;
        Ok(())
    }

    /// An end-of-pipe or SDMA trap interrupt carrying event id `id`, handled as
    /// `kfd_signal_event_interrupt` does: the event is set only if its mailbox slot was written
    /// (not `UNSIGNALED_EVENT_SLOT`); otherwise every signal event whose slot was written is
    /// (the driver's fallback when the id is wrong). Each event set has its slot acknowledged
    /// (reset to unsignaled). Only signal and debug events can be set this way: never a
    /// memory-exception event, and never an event whose mailbox nobody wrote.
    pub(crate) fn signal_from_device(&self, id: u32) {
        let mut g = self.lock();
        let Inner {
            events,
            page,
            activated,
            ..
        } = &mut *g;
        let Some(page) = page.as_deref() else {
            return;
        };
        let written = |id: u32| {
            slot(page, id).is_some_and(|s| s.load(Ordering::Acquire) != UNSIGNALED_EVENT_SLOT)
        };
        // This runs on every completion with an event: the common case (the named event, its
        // slot written) allocates nothing.
        let named = [id];
        let scanned: Vec<u32>;
        let ids = if events.contains_key(&id) && written(id) {
            &named[..]
        } else {
            scanned = (1..SIGNAL_EVENT_LIMIT)
                .filter(|&i| events.contains_key(&i) && written(i))
                .collect();
            &scanned[..]
        };
        let mut woke = false;
        for &id in ids {
            let Some(ev) = events.get_mut(&id) else {
                continue;
            };
            if ev.kind != KFD_IOC_EVENT_SIGNAL && ev.kind != KFD_IOC_EVENT_DEBUG_EVENT {
                continue;
            }
            if let Some(s) = slot(page, id) {
                s.store(UNSIGNALED_EVENT_SLOT, Ordering::Release);
            }
            ev.set(activated, id);
            woke |= !ev.waiters.is_empty();
        }
        // Only a sleeping waiter needs the wake-up (a futex system call): an event nobody
        // waits on is left signaled for the next wait to find.
        if woke {
            self.cv.notify_all();
        }
    }

    /// Signals every event of `kind` (memory faults, hardware exceptions) with `fault`.
    pub(crate) fn signal_kind(&self, kind: u32, fault: Option<MemoryFault>) {
        let mut g = self.lock();
        let g = &mut *g;
        for (&id, ev) in g.events.iter_mut().filter(|(_, e)| e.kind == kind) {
            ev.fault = fault.or(ev.fault);
            ev.set(&mut g.activated, id);
        }
        self.cv.notify_all();
    }

    /// A GPU reset as `kfd_signal_reset_event` reports it: every hardware-exception event is
    /// set with the reset's data, and with an ECC cause every memory-exception event too, with
    /// an imprecise SRAM-ECC error and no address.
    pub(crate) fn signal_reset(&self, reset: ResetReport) {
        use kfd_sys::bindings::{
            KFD_HW_EXCEPTION_ECC, KFD_IOC_EVENT_HW_EXCEPTION, KFD_IOC_EVENT_MEMORY,
            KFD_MEM_ERR_SRAM_ECC,
        };
        let mut g = self.lock();
        let g = &mut *g;
        for (&id, ev) in g.events.iter_mut() {
            if ev.kind == KFD_IOC_EVENT_HW_EXCEPTION {
                ev.reset = Some(reset);
                ev.set(&mut g.activated, id);
            } else if ev.kind == KFD_IOC_EVENT_MEMORY && reset.cause == KFD_HW_EXCEPTION_ECC {
                ev.fault = Some(MemoryFault {
                    va: 0,
                    gpu_id: reset.gpu_id,
                    kind: None,
                    error_type: KFD_MEM_ERR_SRAM_ECC,
                });
                ev.set(&mut g.activated, id);
            }
        }
        self.cv.notify_all();
    }

    /// `WAIT_EVENTS`: `Ok(result)` with KFD's wait_result; on completion fills the payloads of
    /// the events that woke the waiter (`copy_signaled_event_data`). With `ages` (KFD 1.14+),
    /// a signal event given a non-zero `last_event_age` counts as signaled at once if its age
    /// moved on since, and its age is copied back (`init_event_waiter`); 0 keeps the old rule.
    pub(crate) fn wait(
        &self,
        data: &mut [kfd_event_data],
        all: bool,
        timeout_ms: u32,
        ages: bool,
    ) -> Result<u32, Errno> {
        let deadline = (timeout_ms != u32::MAX)
            .then(|| Instant::now() + Duration::from_millis(u64::from(timeout_ms)));
        let mut guard = self.lock();
        log::trace!(
            "kfd-emu: wait for {} of {:?}, timeout {timeout_ms} ms",
            if all { "all" } else { "any" },
            data.iter().map(|d| d.event_id).collect::<Vec<_>>()
        );
        if data.iter().any(|d| !guard.events.contains_key(&d.event_id)) {
            return Err(Errno::EINVAL);
        }
        let g = &mut *guard;
        g.next_waiter += 1;
        let me = g.next_waiter;
        // init_event_waiter: an event already signaled activates the waiter at once and, if
        // auto-reset, is consumed by it.
        let mut activated = Vec::with_capacity(data.len());
        let mut age_enabled = Vec::with_capacity(data.len());
        for d in data.iter() {
            let Some(ev) = g.events.get_mut(&d.event_id) else {
                return Err(Errno::EINVAL);
            };
            let mut a = ev.signaled;
            ev.signaled = ev.signaled && !ev.auto_reset;
            // SAFETY: every variant of the union is plain integers; the age is the first 8
            // bytes, whatever the caller meant.
            let last_age = unsafe { d.__bindgen_anon_1.signal_event_data.last_event_age };
            let aged = ages && ev.kind == KFD_IOC_EVENT_SIGNAL && last_age != 0;
            if aged && ev.age != last_age {
                a = true;
            }
            if !a {
                // Only a waiter that is not already activated joins the event's wait queue.
                ev.waiters.push(me);
            }
            activated.push(a);
            age_enabled.push(aged);
        }
        let result = loop {
            for (d, a) in data.iter().zip(activated.iter_mut()) {
                if !*a && guard.activated.remove(&(me, d.event_id)) {
                    *a = true;
                }
            }
            if guard.orphaned.remove(&me) {
                break KFD_IOC_WAIT_RESULT_FAIL;
            }
            let ready = activated.iter().filter(|&&a| a).count();
            if (all && ready == data.len()) || (!all && ready > 0) {
                break KFD_IOC_WAIT_RESULT_COMPLETE;
            }
            let timed_out = match deadline {
                None => {
                    guard = self.cv.wait(guard).unwrap_or_else(|p| p.into_inner());
                    false
                }
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        true
                    } else {
                        guard = self
                            .cv
                            .wait_timeout(guard, d - now)
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                        false
                    }
                }
            };
            if timed_out {
                break KFD_IOC_WAIT_RESULT_TIMEOUT;
            }
        };
        let g = &mut *guard;
        g.orphaned.remove(&me);
        for ((d, &a), &aged) in data
            .iter_mut()
            .zip(activated.iter())
            .zip(age_enabled.iter())
        {
            g.activated.remove(&(me, d.event_id));
            // The event may have been destroyed while we slept.
            let Some(ev) = g.events.get_mut(&d.event_id) else {
                continue;
            };
            ev.waiters.retain(|&w| w != me);
            let a = a && result == KFD_IOC_WAIT_RESULT_COMPLETE;
            if a && aged {
                d.__bindgen_anon_1.signal_event_data.last_event_age = ev.age;
            }
            if let (true, Some(f)) = (a, ev.fault) {
                use crate::vm::FaultKind;
                let flag = |k: FaultKind| u32::from(f.kind == Some(k));
                d.__bindgen_anon_1.memory_exception_data = kfd_hsa_memory_exception_data {
                    failure: kfd_memory_exception_failure {
                        NotPresent: flag(FaultKind::NotPresent),
                        ReadOnly: flag(FaultKind::ReadOnly),
                        NoExecute: flag(FaultKind::NoExecute),
                        imprecise: u32::from(f.kind.is_none()),
                    },
                    // The interrupt carries a page number.
                    va: f.va & !0xFFF,
                    gpu_id: f.gpu_id,
                    ErrorType: f.error_type,
                };
            }
            if let (true, Some(r)) = (a, ev.reset) {
                d.__bindgen_anon_1.hw_exception_data = kfd_hsa_hw_exception_data {
                    reset_type: KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
                    reset_cause: r.cause,
                    memory_lost: u32::from(r.memory_lost),
                    gpu_id: r.gpu_id,
                };
            }
        }
        Ok(result)
    }
}
