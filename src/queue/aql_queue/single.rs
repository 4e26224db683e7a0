//! One packet without a [`Batch`](super::Batch): a single dispatch or barrier is encoded on the
//! stack and published straight into its slot, and a dispatch's arguments go straight into
//! kernarg memory, so a single submission takes no staging vectors and returns none.
//!
//! Only the common cases go this way: an ordered dispatch with no arguments or raw ones, and a
//! barrier on at most five signals, with no debugging switch on. Everything else
//! (metadata-checked arguments; an unordered dispatch, which needs a barrier packet after it to
//! carry its completion; longer barrier chains; validation, recording, packet tracing) takes
//! the batch path, which handles them all.

use super::batch::barrier_packet;
use super::submission::Submission;
use super::AqlQueue;
use crate::error::Result;
use crate::queue::held::Held;
use crate::signal::Signal;
use std::sync::atomic::Ordering;

impl AqlQueue {
    /// Whether no debugging switch needs the batch path's view of the packets.
    pub(crate) fn plain_submission(&self) -> bool {
        let shared = &self.0.gpu.kfd().shared;
        shared.buffers.is_none()
            && shared.recorder.is_none()
            && !log::log_enabled!(log::Level::Trace)
    }

    /// Submits a barrier-AND: completes when every signal in `deps` is 0 (any number: packets are
    /// chained five dependencies at a time).
    pub fn barrier_and(&self, deps: &[&Signal]) -> Result<Submission> {
        self.barrier(deps, false)
    }

    /// Submits a barrier-OR: completes when any signal in `deps` (at most 5) is 0.
    pub fn barrier_or(&self, deps: &[&Signal]) -> Result<Submission> {
        self.barrier(deps, true)
    }

    fn barrier(&self, deps: &[&Signal], or: bool) -> Result<Submission> {
        if deps.len() > 5 || !self.plain_submission() {
            let mut b = self.batch()?;
            if or {
                b.barrier_or(deps)?;
            } else {
                b.barrier_and(deps)?;
            }
            return b.submit();
        }
        self.before_submission()?;
        let mut held = Held::default();
        for s in deps {
            self.hold_dependency(&mut held, s)?;
        }
        let packet = barrier_packet(deps, or);
        let signal = self.0.completions.take_unset(self.0.gpu.kfd(), 1)?;
        self.publish_one(packet, signal, held, true)
    }

    /// What every submission does first: let go of what finished work held, and refuse a
    /// stopped queue.
    pub(crate) fn before_submission(&self) -> Result<()> {
        // Checked first: in a forked child, pruning would read signals that are not mapped.
        self.check()?;
        self.0.retired.prune();
        Ok(())
    }

    /// Publishes `packet` (encoded, barrier bit set) with `signal` as its completion, rings the
    /// doorbell, and returns the submission owning `held`. `set_value`: the signal's value is
    /// not set yet (set to 1 here, after the ring's reservation, so that read-modify-write does
    /// not wait for the store to the signal's line).
    pub(crate) fn publish_one(
        &self,
        mut packet: [u32; 16],
        signal: Signal,
        held: Held,
        set_value: bool,
    ) -> Result<Submission> {
        debug_assert!(aql::encoded_barrier(&packet));
        aql::set_encoded_completion_signal(&mut packet, signal.handle());
        // What the CPU wrote to VRAM reaches the GPU before the packet can run.
        crate::queue::hdp_queue::flush_before_submit(self.0.gpu.kfd(), &self.0.hdp)?;
        let mut r = match self.reserve_waiting(1) {
            Ok(r) => r,
            Err(e) => {
                // Nothing reached the ring: let a kernel-argument region tied to the signal go.
                signal.value_atomic().store(0, Ordering::Release);
                return Err(e);
            }
        };
        if set_value {
            signal.value_atomic().store(1, Ordering::Release);
        }
        signal.arm_decrement();
        r.write_encoded(0, &packet);
        let last_index = r.submit();
        self.0.gpu.kfd().driver().doorbell_hint(self.0.gpu.id());
        Submission {
            queue: self.clone(),
            signal: std::mem::ManuallyDrop::new(signal),
            last_index,
            held,
        }
        .serialized()
    }
}
