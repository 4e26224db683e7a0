//! [`Submission`]: the completion of a batch, and the owner of what its packets use.

use super::AqlQueue;
use crate::error::{Error, Result};
use crate::queue::held::Held;
use crate::signal::{Condition, Signal, DEFAULT_SPIN};
use std::fmt;
use std::mem::ManuallyDrop;
use std::time::Duration;

/// A completion to wait for. It owns the signal its last packet decrements, and the kernel code,
/// buffers and signals its packets use, until the completion is observed; dropped before that,
/// it hands them to its queue, which lets them go once the GPU is done (or the queue destroyed).
#[must_use = "a submission's completion should be waited for"]
pub struct Submission {
    pub(crate) queue: AqlQueue,
    /// Dropped only in `Drop`, which hands it back to the queue for reuse when it can.
    pub(crate) signal: ManuallyDrop<Signal>,
    pub(crate) last_index: u64,
    pub(crate) held: Held,
}

impl fmt::Debug for Submission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Submission")
            .field("index", &self.last_index)
            .field("signal", &self.signal)
            .field("held", &self.held)
            .finish()
    }
}

impl Submission {
    /// Index of the last packet of the submission in its queue.
    pub fn packet_index(&self) -> u64 {
        self.last_index
    }

    /// The completion signal (reaches 0 on completion).
    pub fn signal(&self) -> &Signal {
        &self.signal
    }

    /// Whether it has completed.
    pub fn is_complete(&self) -> bool {
        self.signal.value() <= 0
    }

    /// The queue it was submitted to.
    pub fn queue(&self) -> &AqlQueue {
        &self.queue
    }

    /// Waits for completion. A queue error is returned as [`Error::QueueError`] even when it
    /// happened before the wait, a fault of the GPU as [`Error::DeviceFault`]; `timeout` of
    /// `None` waits forever (or `KFDRT_WAIT_TIMEOUT_MS`). Those errors and a timeout carry a
    /// report of the device's queues ([`Error::report`]).
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        let shared = &self.queue.gpu().kfd().shared;
        let timeout = timeout.or(shared.debug.wait_timeout);
        let started = shared.recorder.as_ref().map(|_| crate::device::host_ns());
        let r = self
            .wait_unreported(timeout)
            .map_err(|e| e.with_report(shared));
        if let (Some(rec), Some(started)) = (&shared.recorder, started) {
            rec.host_span(
                &format!("wait AQL q{} #{}", self.queue.id(), self.last_index),
                started,
            );
            if r.is_ok() {
                let (start, end) = self.signal.timestamps();
                rec.completed(self.queue.id(), self.last_index, start, end);
            }
        }
        r
    }

    fn wait_unreported(&self, timeout: Option<Duration>) -> Result<()> {
        let q = &self.queue;
        q.check()?;
        let (wake, n) = q.wake_events();
        self.signal
            .wait_with(Condition::Lt(1), timeout, DEFAULT_SPIN, &wake[..n], &|| {
                // Where the queue stands each time the wait goes to sleep: a hang report
                // dates the stall from the first look that saw this read index. (Not
                // before the spin: most waits end within it, and the read index is a
                // cache line the packet processor is about to write.)
                q.0.progress.observe(q.read_index());
                q.check()
            })
            .map(drop)
            .or_else(|e| match e {
                // The queue may have died while we slept; report that rather than a timeout.
                Error::Timeout { .. } => q.check().and(Err(e)),
                e => Err(e),
            })
    }

    /// With `KFDRT_SERIALIZE`, waits for the submission before handing it out.
    #[inline]
    pub(crate) fn serialized(self) -> Result<Submission> {
        if let Some(timeout) = self.queue.gpu().kfd().shared.debug.serialize_wait() {
            self.wait(timeout)?;
        }
        Ok(self)
    }

    /// Start and end timestamps of the last packet (queues created with profiling).
    pub fn timestamps(&self) -> (u64, u64) {
        self.signal.timestamps()
    }
}

impl Drop for Submission {
    fn drop(&mut self) {
        // SAFETY: the signal is taken once, here, and the field is not used after.
        let signal = unsafe { ManuallyDrop::take(&mut self.signal) };
        let q = &self.queue.0;
        if signal.value() <= 0 {
            if signal.handles() == 2 {
                // The other handle may be the kernel-argument region's, which is released now
                // that the work is done.
                q.kernargs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retire();
            }
            q.completions.give_back(signal);
            return;
        }
        // Retired even with nothing held: the signal slot is reclaimed with the queue if the
        // queue is destroyed before the work completes.
        let held = std::mem::take(&mut self.held);
        q.retired.retire(signal, held);
    }
}
