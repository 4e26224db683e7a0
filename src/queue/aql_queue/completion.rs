//! Completion signals a queue keeps for reuse: a signal whose submission was observed complete
//! and dropped goes back to its queue instead of the device's pool, so the next submission takes
//! it with one uncontended lock rather than a pool lock, an allocation and a new reference to
//! the device (and returning it skips the same on the way back).

use crate::device::Kfd;
use crate::error::Result;
use crate::signal::Signal;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

/// How many spare signals a queue keeps: enough for a pipeline of submissions in flight; more
/// go back to the device's pool.
const KEPT: usize = 16;

#[derive(Default)]
pub(crate) struct CompletionSignals {
    spare: Mutex<Vec<Signal>>,
}

impl CompletionSignals {
    /// A signal with value `initial`, not armed: a kept one if there is one, else from the pool.
    pub(crate) fn take(&self, kfd: &Kfd, initial: i64) -> Result<Signal> {
        let kept = self.spare.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match kept {
            Some(s) => {
                s.value_atomic().store(initial, Ordering::Release);
                Ok(s)
            }
            None => kfd.create_signal(initial),
        }
    }

    /// Keeps `signal` for reuse if nothing else can see it or write it any more: this is its
    /// only handle and the completion armed on it has happened. Otherwise drops it.
    pub(crate) fn give_back(&self, mut signal: Signal) {
        if !signal.clear_if_done() {
            return;
        }
        let mut spare = self.spare.lock().unwrap_or_else(|p| p.into_inner());
        if spare.len() < KEPT {
            spare.push(signal);
        }
    }
}
