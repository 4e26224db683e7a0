//! The process's pool of signal memory and signal events: pages of `amd_signal_t` in uncached
//! GTT, a KFD event per signal while the driver has them, and the reuse rule (a slot returns to
//! use only once the packets that signal it have completed). Below the device, which holds the
//! pool; [`super::Signal`] is the handle on top.

use crate::device::context::DeviceContext;
use crate::error::{Error, Result};
use crate::event::table::{EventKind, EventReset, EventTable};
use crate::memory::raw::RawAllocation;
use aql::AmdSignal;
use kfd_sys::Driver;
use std::sync::atomic::{AtomicU64, Ordering};

/// Signals per pool page (one 4 KiB page of 64-byte signals).
const SIGNALS_PER_PAGE: usize = 64;
/// Signal events the pool creates at most: KFD gives a process 4095 (`KFD_SIGNAL_EVENT_LIMIT`
/// slots, of which `kfd_event_init_process` reserves id 0), and the rest are left to queues'
/// error signals and user events.
const SIGNAL_EVENT_BUDGET: usize = 3840;

/// The `kind` of a user-mode signal (`AMD_SIGNAL_KIND_USER`).
const SIGNAL_KIND_USER: i64 = 1;

#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub(super) signal: *const AmdSignal,
    /// The signal's interrupt event; `None` once the process has used up the driver's signal
    /// events (the engines then write the value only, and waiters poll it).
    pub(super) event_id: Option<u32>,
    /// The event's age as a waiter last saw it (KFD 1.14+: `WAIT_EVENTS` returns at once when
    /// the event was set since, so a set another waiter consumed is not lost), in the pool's
    /// table of ages. A new event's age is 1.
    event_age: *const AtomicU64,
}

// SAFETY: a slot points into a pool page that lives as long as the pool (owned by KfdShared), and
// every access to the signal's mutable words is atomic.
unsafe impl Send for Slot {}
// SAFETY: as above: shared access only reads the pointer and goes through atomics.
unsafe impl Sync for Slot {}

/// The per-process pool of signal memory and events, owned by the device's shared state.
#[derive(Default)]
pub(crate) struct SignalPool {
    pages: Vec<RawAllocation>,
    mapped: Vec<Vec<u32>>,
    /// Free slots with an event, and released ones waiting for their armed completion (the
    /// reuse rule, model-checked in the aql crate's `tests/loom.rs`).
    pub(super) slots: aql::reuse::ReusePool<Slot>,
    /// The same for slots made without an event (past the driver's limit): used only when no
    /// slot with an event is free, so a freed signal's event serves the next signal.
    pub(super) polled: aql::reuse::ReusePool<Slot>,
    events: Vec<u32>,
    /// The driver refused a signal event (ENOSPC): later signals are made without one.
    events_exhausted: bool,
    /// The event ages of each page's slots. Boxed: slots point into them, and a vector of
    /// arrays would move them when it grows.
    #[allow(clippy::vec_box)]
    ages: Vec<Box<[AtomicU64; SIGNALS_PER_PAGE]>>,
}

impl Slot {
    pub(super) fn event_age(&self) -> &AtomicU64 {
        // SAFETY: the age lives in a table the pool owns and never frees before the pool (as
        // the slot's page).
        unsafe { &*self.event_age }
    }
}

/// A slot's signal value now.
pub(super) fn slot_value(slot: &Slot) -> i64 {
    // SAFETY: the slot's page is alive (owned by the pool the slot is in).
    unsafe { &*slot.signal }.value.load(Ordering::Acquire)
}

impl SignalPool {
    pub(super) fn take(&mut self, dev: &DeviceContext, events: &EventTable) -> Result<Slot> {
        // Released slots whose packets have completed are reclaimed first, those with an
        // event before those without.
        if let Some(slot) = self
            .slots
            .take(slot_value)
            .or_else(|| self.polled.take(slot_value))
        {
            return Ok(slot);
        }
        self.grow(dev, events)?;
        // `grow` added a page of free slots, or returned its error.
        Ok(self
            .slots
            .take(slot_value)
            .or_else(|| self.polled.take(slot_value))
            .expect("the signal pool grew by a page of free slots"))
    }

    fn grow(&mut self, dev: &DeviceContext, events: &EventTable) -> Result<()> {
        let driver = dev.driver();
        let (page, mapped) = dev
            .alloc_shared_uncached((SIGNALS_PER_PAGE * std::mem::size_of::<AmdSignal>()) as u64)?;
        let base = page.va.addr as *mut AmdSignal;
        let ages: Box<[AtomicU64; SIGNALS_PER_PAGE]> =
            Box::new(std::array::from_fn(|_| AtomicU64::new(1)));
        let mut new_slots: Vec<Slot> = Vec::with_capacity(SIGNALS_PER_PAGE);
        for i in 0..SIGNALS_PER_PAGE {
            // Signals take events while the pool's share of the driver's lasts; the rest of
            // the process (queues' error signals aside, user events) keeps what is left.
            let event = if self.events.len() + new_slots.len() < SIGNAL_EVENT_BUDGET
                && !self.events_exhausted
            {
                match create_signal_event(dev, events) {
                    Ok(e) => Some(e),
                    Err(e) if e.errno() == Some(kfd_sys::Errno::ENOSPC) => {
                        log::info!(
                            "kfdrt: the driver has no more signal events: new signals are polled"
                        );
                        self.events_exhausted = true;
                        None
                    }
                    Err(e) => {
                        for s in &new_slots {
                            if let Some(id) = s.event_id {
                                crate::event::table::destroy_raw_event(driver, id);
                            }
                        }
                        page.release(driver, &mapped);
                        return Err(e);
                    }
                }
            } else {
                None
            };
            let (event_id, mailbox) = event.map_or((None, 0), |(id, mb)| (Some(id), mb));
            // SAFETY: `i` < SIGNALS_PER_PAGE, inside the page; nobody else knows the slot yet.
            let sig = unsafe { base.add(i) };
            // SAFETY: as above; the page is zeroed GTT, written once before publication.
            unsafe {
                let s = &*sig;
                s.kind.store(SIGNAL_KIND_USER, Ordering::Relaxed);
                s.value.store(0, Ordering::Relaxed);
                s.event_mailbox_ptr.store(mailbox, Ordering::Relaxed);
                s.event_id.store(event_id.unwrap_or(0), Ordering::Release);
            }
            new_slots.push(Slot {
                signal: sig,
                event_id,
                event_age: &ages[i],
            });
        }
        self.events
            .extend(new_slots.iter().filter_map(|s| s.event_id));
        let (evented, polled): (Vec<Slot>, Vec<Slot>) =
            new_slots.into_iter().partition(|s| s.event_id.is_some());
        self.slots.add_free(evented);
        self.polled.add_free(polled);
        self.ages.push(ages);
        self.pages.push(page);
        self.mapped.push(mapped);
        Ok(())
    }

    /// The value of the signal at `handle`, if it is one of this pool's (a report reads the
    /// signals a barrier waits on; any other address is not read).
    pub(crate) fn value_of(&self, handle: u64) -> Option<i64> {
        let size = std::mem::size_of::<AmdSignal>() as u64;
        self.pages.iter().find_map(|p| {
            let base = p.va.addr;
            let inside = handle >= base
                && handle < base + SIGNALS_PER_PAGE as u64 * size
                && (handle - base) % size == 0;
            inside.then(|| {
                // SAFETY: `handle` is the start of a signal slot of a page this pool owns and
                // keeps mapped; the value is read atomically.
                let signal = unsafe { &*(handle as *const AmdSignal) };
                signal.value.load(Ordering::Acquire)
            })
        })
    }

    /// Destroys every event and frees every page (at process teardown).
    pub(crate) fn release(self, driver: &dyn Driver) {
        for e in self.events {
            crate::event::table::destroy_raw_event(driver, e);
        }
        for (page, mapped) in self.pages.into_iter().zip(self.mapped) {
            page.release(driver, &mapped);
        }
    }
}

fn create_signal_event(dev: &DeviceContext, events: &EventTable) -> Result<(u32, u64)> {
    // A raw event, not an `Event` handle: the pool is part of the device and must not keep it
    // alive.
    let (id, mailbox) = events.create(dev, EventKind::Signal, EventReset::Auto)?;
    // KFD gives signal events a mailbox in the events page; without one the CP could not wake us.
    let mailbox = mailbox.ok_or_else(|| Error::UnexpectedDriverAnswer {
        request: "AMDKFD_IOC_CREATE_EVENT",
        what: format!("signal event {id} has no slot in the events page"),
    })?;
    Ok((id, mailbox))
}

#[cfg(all(test, feature = "emu"))]
mod tests {
    use super::*;

    #[test]
    fn the_pool_grows_by_a_page_of_evented_signals_without_a_kfd() {
        let (dev, emu) = crate::device::emulated_context();
        let events = EventTable::default();
        let mut pool = SignalPool::default();
        let first = pool.take(&dev, &events).expect("a signal");
        assert_eq!(pool.pages.len(), 1);
        assert_eq!(pool.slots.free_len(), SIGNALS_PER_PAGE - 1);
        assert_eq!(emu.stats().live_events, SIGNALS_PER_PAGE);
        // SAFETY: the slot's page is alive, owned by `pool`.
        let sig = unsafe { &*first.signal };
        assert_eq!(Some(sig.event_id.load(Ordering::Acquire)), first.event_id);
        assert_ne!(sig.event_mailbox_ptr.load(Ordering::Acquire), 0);
        let mut taken = vec![first];
        for _ in 1..SIGNALS_PER_PAGE {
            taken.push(pool.take(&dev, &events).expect("a signal"));
        }
        assert_eq!(
            pool.pages.len(),
            1,
            "one page serves {SIGNALS_PER_PAGE} signals"
        );
        taken.push(
            pool.take(&dev, &events)
                .expect("a signal from a second page"),
        );
        assert_eq!(pool.pages.len(), 2);
        let mut ids: Vec<u32> = taken.iter().filter_map(|s| s.event_id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), taken.len(), "every signal has its own event");
        pool.release(dev.driver());
        let mut events = events;
        events.release(dev.driver());
        assert_eq!(emu.stats().live_events, 0);
        assert_eq!(emu.stats().live_allocations, 0);
    }
}
