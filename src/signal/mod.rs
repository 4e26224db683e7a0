//! Signals: `amd_signal_t`-compatible 64-byte completion words, interrupt-backed and pooled.
//!
//! A signal lives in uncached GTT (the CPU and every GPU poll it) and has its own auto-reset KFD
//! event: the command processor decrements `value` and, because `event_mailbox_ptr` is set, writes
//! the event id to the mailbox and raises an interrupt, which wakes `WAIT_EVENTS`. A waiter spins
//! on the value briefly (cheap when the GPU is quick) and then sleeps on the event.
//!
//! Reuse rule: a signal handed to a packet is *armed* with the value its completion will reach.
//! When the last handle drops, the pool only hands the slot out again once that value has been
//! observed, so a slot can never be reused while a packet that will write it is in flight.

mod wait;

use crate::device::{DeviceContext, Kfd};
use crate::error::{Error, Result};
use crate::event::EventKind;
use crate::event::{EventReset, EventTable};
use crate::memory::raw::RawAllocation;
use aql::AmdSignal;
use kfd_sys::bindings::*;
use kfd_sys::{Driver, DriverExt};
use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Signals per pool page (one 4 KiB page of 64-byte signals).
const SIGNALS_PER_PAGE: usize = 64;
/// How long a waiter spins on the value before sleeping in `WAIT_EVENTS`.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(50);

/// Signal events the pool creates at most: KFD gives a process 4096 (`KFD_SIGNAL_EVENT_LIMIT`),
/// and the rest are left to queues' error signals and user events.
const SIGNAL_EVENT_BUDGET: usize = 3840;

/// The `kind` of a user-mode signal (`AMD_SIGNAL_KIND_USER`).
const SIGNAL_KIND_USER: i64 = 1;

/// A condition on a signal's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// `value == v`.
    Eq(i64),
    /// `value != v`.
    Ne(i64),
    /// `value < v`.
    Lt(i64),
    /// `value >= v`.
    Gte(i64),
}

impl Condition {
    /// Whether `value` satisfies the condition.
    pub fn holds(self, value: i64) -> bool {
        match self {
            Condition::Eq(v) => value == v,
            Condition::Ne(v) => value != v,
            Condition::Lt(v) => value < v,
            Condition::Gte(v) => value >= v,
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::Eq(v) => write!(f, "== {v}"),
            Condition::Ne(v) => write!(f, "!= {v}"),
            Condition::Lt(v) => write!(f, "< {v}"),
            Condition::Gte(v) => write!(f, ">= {v}"),
        }
    }
}

#[derive(Clone, Copy)]
struct Slot {
    signal: *const AmdSignal,
    /// The signal's interrupt event; `None` once the process has used up the driver's signal
    /// events (the engines then write the value only, and waiters poll it).
    event_id: Option<u32>,
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
    slots: aql::reuse::ReusePool<Slot>,
    /// The same for slots made without an event (past the driver's limit): used only when no
    /// slot with an event is free, so a freed signal's event serves the next signal.
    polled: aql::reuse::ReusePool<Slot>,
    events: Vec<u32>,
    /// The driver refused a signal event (ENOSPC): later signals are made without one.
    events_exhausted: bool,
    /// The event ages of each page's slots. Boxed: slots point into them, and a vector of
    /// arrays would move them when it grows.
    #[allow(clippy::vec_box)]
    ages: Vec<Box<[AtomicU64; SIGNALS_PER_PAGE]>>,
}

impl Slot {
    fn event_age(&self) -> &AtomicU64 {
        // SAFETY: the age lives in a table the pool owns and never frees before the pool (as
        // the slot's page).
        unsafe { &*self.event_age }
    }
}

/// A slot's signal value now.
fn slot_value(slot: &Slot) -> i64 {
    // SAFETY: the slot's page is alive (owned by the pool the slot is in).
    unsafe { &*slot.signal }.value.load(Ordering::Acquire)
}

impl SignalPool {
    fn take(&mut self, dev: &DeviceContext, events: &EventTable) -> Result<Slot> {
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
        self.slots
            .take(slot_value)
            .or_else(|| self.polled.take(slot_value))
            .ok_or_else(|| Error::Internal("the signal pool grew but has no free slot".into()))
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
                                crate::event::destroy_raw_event(driver, id);
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
            crate::event::destroy_raw_event(driver, e);
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

/// What a raw signal pointer ([`Signal::into_raw`]) points to; opaque outside this module.
pub(crate) enum RawSignal {}

/// `armed_target` when no completion is armed.
const NOT_ARMED: i64 = i64::MIN;

struct SignalInner {
    kfd: Kfd,
    slot: Slot,
    /// The value the last armed completion will leave, or [`NOT_ARMED`]. Written only by the
    /// submission that owns the signal, before the packet carrying it is published
    /// ([`Signal::arm_decrement`]), and by `disarm` once no engine can write it.
    armed_target: AtomicI64,
    /// Threads asleep in `WAIT_EVENTS` on the signal's event, for drivers without event ages
    /// (see [`Signal::wait_with`]).
    sleepers: AtomicU32,
}

/// An `amd_signal_t` handle. Clones share the signal.
#[derive(Clone)]
pub struct Signal(Arc<SignalInner>);

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signal({:#x} = {})", self.handle(), self.value())
    }
}

impl Kfd {
    /// Takes a signal from the pool and sets its value to `initial`.
    pub fn create_signal(&self, initial: i64) -> Result<Signal> {
        self.shared.dev.check_process()?;
        let slot = {
            let s = &self.shared;
            let mut pool = s.signals.lock().unwrap_or_else(|p| p.into_inner());
            pool.take(&s.dev, &s.events)?
        };
        let s = Signal(Arc::new(SignalInner {
            kfd: self.clone(),
            slot,
            armed_target: AtomicI64::new(NOT_ARMED),
            sleepers: AtomicU32::new(0),
        }));
        s.raw().value.store(initial, Ordering::Release);
        Ok(s)
    }
}

impl Signal {
    fn raw(&self) -> &AmdSignal {
        // SAFETY: the slot's page lives as long as the pool, which the Kfd inside keeps alive.
        unsafe { &*self.0.slot.signal }
    }

    /// The device the signal belongs to.
    pub(crate) fn kfd(&self) -> &Kfd {
        &self.0.kfd
    }

    /// A handle that keeps the signal's slot from being reused (for work that waits on it).
    pub(crate) fn retain(&self) -> Arc<dyn Send + Sync> {
        self.0.clone()
    }

    /// If this is the signal's only handle and the completion armed on it (if any) has
    /// happened, forgets that completion and returns `true`: no packet will write the signal
    /// again, so it may be handed out anew. Otherwise returns `false` and changes nothing.
    pub(crate) fn clear_if_done(&mut self) -> bool {
        // Read first: the value only falls, so a completion seen here has happened.
        let value = self.value();
        let Some(inner) = Arc::get_mut(&mut self.0) else {
            return false;
        };
        let target = inner.armed_target.get_mut();
        if *target != NOT_ARMED && value > *target {
            return false;
        }
        *target = NOT_ARMED;
        true
    }

    /// Gives up this handle as a raw pointer, to be turned back with [`Signal::from_raw`]
    /// exactly once (a lock-free slot holds it meanwhile).
    pub(crate) fn into_raw(self) -> *mut RawSignal {
        Arc::into_raw(self.0).cast_mut().cast()
    }

    /// The handle [`Signal::into_raw`] gave up.
    ///
    /// # Safety
    /// `p` must come from [`Signal::into_raw`] and not have been turned back already.
    pub(crate) unsafe fn from_raw(p: *mut RawSignal) -> Signal {
        // SAFETY: per the caller, `p` is an `Arc<SignalInner>` given up by `into_raw`, owned by
        // nobody else.
        Signal(unsafe { Arc::from_raw(p.cast_const().cast::<SignalInner>()) })
    }

    /// How many handles share the signal (kernel-argument memory in flight holds one).
    pub(crate) fn handles(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    /// Forgets the completion armed on the signal: the engine that would have written it is
    /// gone (its queue destroyed), so the slot may be reused once every handle is dropped.
    pub(crate) fn disarm(&self) {
        self.0.armed_target.store(NOT_ARMED, Ordering::Release);
    }

    /// The signal handle as packets carry it (the address of the `amd_signal_t`).
    pub fn handle(&self) -> u64 {
        self.0.slot.signal as u64
    }

    /// Address of the signal's event mailbox (where a device writes the event id before
    /// raising the interrupt).
    pub fn mailbox_address(&self) -> u64 {
        self.raw().event_mailbox_ptr.load(Ordering::Acquire)
    }

    /// The KFD event behind the signal, if it has one: signals made after the process used up
    /// the driver's signal events have none, and their waiters poll (see [`Signal::wait`]).
    pub fn event_id(&self) -> Option<u32> {
        self.0.slot.event_id
    }

    /// The current value (acquire load).
    pub fn value(&self) -> i64 {
        self.raw().value.load(Ordering::Acquire)
    }

    /// The value word, for code that needs its own atomics.
    pub fn value_atomic(&self) -> &AtomicI64 {
        &self.raw().value
    }

    /// Stores `value` (release) and wakes sleeping waiters.
    pub fn store(&self, value: i64) -> Result<()> {
        self.raw().value.store(value, Ordering::Release);
        self.notify()
    }

    /// Atomically subtracts `n` (release) and wakes sleeping waiters; returns the new value.
    pub fn subtract(&self, n: i64) -> Result<i64> {
        let v = self.raw().value.fetch_sub(n, Ordering::AcqRel) - n;
        self.notify()?;
        Ok(v)
    }

    fn notify(&self) -> Result<()> {
        // Without an event, waiters poll the value: there is nobody to wake.
        let Some(event_id) = self.event_id() else {
            return Ok(());
        };
        let mut args = kfd_ioctl_set_event_args { event_id, pad: 0 };
        self.0
            .kfd
            .driver()
            .kfd_ioctl(&mut args)
            .map(drop)
            .map_err(Error::ioctl(&args))
    }

    /// Profiling timestamps `(start, end)` the command processor wrote, in GPU clock ticks.
    pub fn timestamps(&self) -> (u64, u64) {
        let r = self.raw();
        (
            r.start_ts.load(Ordering::Acquire),
            r.end_ts.load(Ordering::Acquire),
        )
    }

    /// Records that a packet will decrement this signal once: the slot cannot be reused before
    /// the value reaches the result. Called by the queue whose submission owns the signal
    /// (nobody else arms it), before it publishes the packet carrying it; so a plain load and
    /// store suffice, with no read-modify-write. Returns the value before and after that
    /// decrement (and the ones armed before it), for an engine that must write the result
    /// instead of decrementing.
    pub(crate) fn arm_decrement(&self) -> (i64, i64) {
        let t = &self.0.armed_target;
        let base = match t.load(Ordering::Acquire) {
            NOT_ARMED => self.value(),
            armed => armed,
        };
        t.store(base - 1, Ordering::Release);
        (base, base - 1)
    }
}

impl Drop for SignalInner {
    fn drop(&mut self) {
        let target = match *self.armed_target.get_mut() {
            NOT_ARMED => None,
            t => Some(t),
        };
        let mut pool = self
            .kfd
            .shared
            .signals
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let to = if self.slot.event_id.is_some() {
            &mut pool.slots
        } else {
            &mut pool.polled
        };
        to.release(self.slot, target, slot_value);
    }
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
