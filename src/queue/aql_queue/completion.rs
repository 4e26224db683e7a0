//! Completion signals a queue keeps for reuse: a signal whose submission was observed complete
//! and dropped goes back to its queue instead of the device's pool, so the next submission takes
//! it without the pool's lock, an allocation or a new reference to the device (and returning it
//! skips the same on the way back).
//!
//! The most recent one sits in a single atomic slot, so the common pattern, submit, wait, drop,
//! submit again, costs one atomic exchange each way; more go to a short locked list.

use crate::device::Kfd;
use crate::error::Result;
use crate::signal::{RawSignal, Signal};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// How many spare signals a queue keeps beside the slot: enough for a pipeline of submissions
/// in flight; more go back to the device's pool.
const KEPT: usize = 16;

#[derive(Default)]
pub(crate) struct CompletionSignals {
    /// A spare signal's handle turned into a raw pointer ([`Signal::into_raw`]), or null.
    one: AtomicPtr<RawSignal>,
    spare: Mutex<Vec<Signal>>,
}

impl CompletionSignals {
    /// A signal with value `initial`, not armed: a kept one if there is one, else from the pool.
    pub(crate) fn take(&self, kfd: &Kfd, initial: i64) -> Result<Signal> {
        let s = self.take_unset(kfd, initial)?;
        s.value_atomic().store(initial, Ordering::Release);
        Ok(s)
    }

    /// A signal not armed, whose value the caller sets before anything can see it: a kept one
    /// (its value left as its last completion made it), else a new one at `initial`. Setting
    /// the value later lets a submission store to the signal's line, which the device wrote
    /// last, after its own read-modify-writes rather than before them: a read-modify-write
    /// waits for every store before it to reach the cache.
    pub(crate) fn take_unset(&self, kfd: &Kfd, initial: i64) -> Result<Signal> {
        let p = self.one.swap(std::ptr::null_mut(), Ordering::Acquire);
        let kept = if p.is_null() {
            self.spare.lock().unwrap_or_else(|p| p.into_inner()).pop()
        } else {
            // SAFETY: a non-null `one` holds a pointer from `Signal::into_raw`, which the swap
            // just took out: this is its only owner.
            Some(unsafe { Signal::from_raw(p) })
        };
        match kept {
            Some(s) => Ok(s),
            None => kfd.create_signal(initial),
        }
    }

    /// Keeps `signal` for reuse if nothing else can see it or write it any more: this is its
    /// only handle and the completion armed on it has happened. Otherwise drops it.
    pub(crate) fn give_back(&self, mut signal: Signal) {
        if !signal.clear_if_done() {
            return;
        }
        let p = signal.into_raw();
        let stored = self
            .one
            .compare_exchange(
                std::ptr::null_mut(),
                p,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok();
        if !stored {
            // The slot is taken. (`compare_exchange` reports the pointer in it, not ours.)
            // SAFETY: `p` came from `into_raw` above and was not stored: we still own it.
            let signal = unsafe { Signal::from_raw(p) };
            let mut spare = self.spare.lock().unwrap_or_else(|p| p.into_inner());
            if spare.len() < KEPT {
                spare.push(signal);
            }
        }
    }
}

impl Drop for CompletionSignals {
    fn drop(&mut self) {
        let p = *self.one.get_mut();
        if !p.is_null() {
            // SAFETY: as in `take`: the slot owns the pointer, and nothing else can reach it now.
            drop(unsafe { Signal::from_raw(p) });
        }
    }
}
