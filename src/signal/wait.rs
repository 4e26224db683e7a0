//! Waiting on a signal: spin, then sleep on its event (or poll, for a signal without one),
//! ending the wait on a GPU fault, a reset or the waiter's own check, and never losing a
//! wake-up to another thread waiting on the same signal.

use super::{Condition, Signal, DEFAULT_SPIN};
use crate::error::{Error, Result};
use crate::event::WaitMode;
use kfd_sys::Feature;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long a sleep lasts at most once an exception event has fired (it can no longer wake
/// anyone: it stays signalled).
const POST_EXCEPTION_POLL: Duration = Duration::from_millis(10);

/// How long a waiter that is not the signal's one sleeper sleeps at a time, on a driver without
/// event ages (see [`Signal::wait_with`]): its wake-up may be consumed by the sleeper, so it
/// looks at the value again at least this often.
const SHARED_SLEEP_SLICE: Duration = Duration::from_millis(1);

/// The sleeps of a wait on a signal without an event, between looks at its value: from 20 µs,
/// doubling to 1 ms. Such a wait notices a completion up to a slice late, and, once the slices
/// are long, costs a thousand wake-ups a second.
struct PollSlice(Duration);

impl Default for PollSlice {
    fn default() -> PollSlice {
        PollSlice(Duration::from_micros(20))
    }
}

impl PollSlice {
    fn next(&mut self) -> Duration {
        let s = self.0;
        self.0 = (self.0 * 2).min(Duration::from_millis(1));
        s
    }
}

/// How long a wait spins before it starts yielding its CPU between polls.
const YIELD_AFTER: Duration = Duration::from_micros(4);

impl Signal {
    /// Waits until `cond` holds, spinning for `spin` and then sleeping on the event. Returns the
    /// value that satisfied it, or a [`Error::Timeout`] naming the signal and its value.
    ///
    /// A GPU fault or reset anywhere in the process ends the wait with [`Error::DeviceFault`] or
    /// [`Error::DeviceReset`]: the signal may belong to work that will never complete.
    pub fn wait(&self, cond: Condition, timeout: Option<Duration>) -> Result<i64> {
        let shared = &self.0.kfd.shared;
        let ex = &shared.exceptions;
        let since = ex.epoch();
        let timeout = timeout.or(shared.debug.wait_timeout);
        self.wait_with(cond, timeout, DEFAULT_SPIN, &[], &|| {
            ex.check(None, since, None)
        })
        .map_err(|e| e.with_report(shared))
    }

    /// [`Signal::wait`] with an explicit spin time, extra events that also wake the waiter (a
    /// queue's error event) and a check run after every wake-up that may end the wait with an
    /// error (the queue's error state, its GPU's exceptions). The process's exception events
    /// always wake it.
    ///
    /// Several threads may wait on one signal, and the event is auto-reset: the driver leaves
    /// it signalled only if nobody was waiting when it was set (`set_event`), so a set that
    /// comes between a waiter's look at the value and its sleep, while another thread sleeps,
    /// is consumed by that other thread. With event ages (KFD 1.14+) each sleep passes the age
    /// read before the value was looked at, and the driver ends it at once if the event was
    /// set since. Without them, as ROCr does, one thread at a time sleeps on the event and the
    /// others sleep in short slices ([`SHARED_SLEEP_SLICE`]), looking at the value between.
    pub(crate) fn wait_with(
        &self,
        cond: Condition,
        timeout: Option<Duration>,
        spin: Duration,
        wake_events: &[u32],
        check: &dyn Fn() -> Result<()>,
    ) -> Result<i64> {
        // In a forked child the signal's memory is not mapped.
        self.0.kfd.shared.dev.check_process()?;
        // Reading the clock costs about as much as polling the signal a few times, so the spin
        // looks at it only every 32 polls, and first after 32: a completion that comes within
        // them (a short round trip) is seen without reading the clock at all.
        //
        // Past the first few microseconds the spin also yields at each clock check: the thread
        // that completes the work (an emulated packet processor, which a doorbell just woke)
        // may have been put on this CPU's run queue, behind this spin; yielding lets it run.
        // It costs a system call when no other thread is runnable here, and when one is, this
        // wait may see the completion up to that thread's time slice later.
        let mut start = None;
        let mut polls = 0u32;
        loop {
            let v = self.value();
            if cond.holds(v) {
                return Ok(v);
            }
            polls = polls.wrapping_add(1);
            if polls % 32 == 0 {
                let spun = start.get_or_insert_with(Instant::now).elapsed();
                if spun >= spin {
                    break;
                }
                if spun >= YIELD_AFTER {
                    std::thread::yield_now();
                }
            }
            std::hint::spin_loop();
        }
        let start = start.unwrap_or_else(Instant::now);
        let shared = &self.0.kfd.shared;
        let ages = shared.dev.version.supports(Feature::SignalEventAge);
        let mut poll_slice = PollSlice::default();
        loop {
            // The age first: a set after this load ends the sleep below at once.
            let age = self.0.slot.event_age().load(Ordering::Acquire);
            let v = self.value();
            if cond.holds(v) {
                return Ok(v);
            }
            let remaining = match timeout {
                Some(t) => match t.checked_sub(start.elapsed()) {
                    Some(r) if !r.is_zero() => Some(r),
                    _ => {
                        return Err(Error::Timeout {
                            what: format!("signal {:#x} {cond} (value {v})", self.handle()),
                            after_ms: t.as_millis() as u64,
                            report: None,
                        })
                    }
                },
                None => None,
            };
            check()?;
            let ex = &shared.exceptions;
            let mut ids = Vec::with_capacity(3 + wake_events.len());
            ids.extend(self.event_id());
            ids.extend_from_slice(wake_events);
            let sleep = if ex.any() {
                // A fired exception event stays signalled and would end every sleep at once:
                // look at both events now, then sleep a little without them.
                ex.poll(shared.dev.driver())?;
                check()?;
                Some(remaining.map_or(POST_EXCEPTION_POLL, |r| r.min(POST_EXCEPTION_POLL)))
            } else {
                ids.push(ex.memory_event);
                ids.push(ex.hw_event);
                remaining
            };
            let data = if self.event_id().is_none() {
                // No interrupt will come: sleep in growing slices, on whatever else may wake
                // the waiter (its queue's error event, the exception events).
                let slice = poll_slice.next();
                let sleep = Some(sleep.map_or(slice, |s| s.min(slice)));
                if ids.is_empty() {
                    std::thread::sleep(slice);
                    Vec::new()
                } else {
                    crate::event::wait_ids(shared.dev.driver(), &ids, WaitMode::Any, sleep)?.1
                }
            } else if ages {
                let mut want = vec![0; ids.len()];
                want[0] = age;
                let (_, data) = crate::event::wait_ids_aged(
                    shared.dev.driver(),
                    &ids,
                    &mut want,
                    WaitMode::Any,
                    sleep,
                )?;
                // The driver hands back the age it woke us at (or what we gave).
                if want[0] != age {
                    self.0.slot.event_age().store(want[0], Ordering::Release);
                }
                data
            } else {
                let first = self.0.sleepers.fetch_add(1, Ordering::AcqRel) == 0;
                let sleep = if first {
                    sleep
                } else {
                    Some(sleep.map_or(SHARED_SLEEP_SLICE, |s| s.min(SHARED_SLEEP_SLICE)))
                };
                let r = crate::event::wait_ids(shared.dev.driver(), &ids, WaitMode::Any, sleep);
                let others = self.0.sleepers.fetch_sub(1, Ordering::AcqRel) - 1;
                let (woken, data) = r?;
                // A set reaches only the threads already asleep, and leaves the event
                // unsignalled when it reached any: one of these slices may have taken the set
                // the long sleeper was entering its sleep for. Pass it on (a spare wake-up
                // costs a look at the value).
                if woken && !first && others > 0 {
                    if let Some(id) = self.event_id() {
                        let _ = self.0.kfd.set_raw_event(id);
                    }
                }
                data
            };
            ex.record(&data);
        }
    }
}
