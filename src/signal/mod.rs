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

pub(crate) mod pool;
mod wait;

use pool::{slot_value, Slot};

use crate::device::Kfd;
use crate::error::{Error, Result};
use aql::AmdSignal;
use kfd_sys::bindings::*;
use kfd_sys::DriverExt;
use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a waiter spins on the value before sleeping in `WAIT_EVENTS`.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(50);

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
