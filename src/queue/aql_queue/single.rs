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
use super::dispatch::{Dispatch, DispatchArgs};
use super::submission::Submission;
use super::AqlQueue;
use crate::error::Result;
use crate::queue::held::Held;
use crate::queue::kernarg::KERNARG_ALIGN;
use crate::signal::Signal;
use std::sync::atomic::Ordering;

impl AqlQueue {
    /// Whether no debugging switch needs the batch path's view of the packets.
    fn plain_submission(&self) -> bool {
        let shared = &self.0.gpu.kfd().shared;
        shared.buffers.is_none()
            && shared.recorder.is_none()
            && !log::log_enabled!(log::Level::Trace)
    }

    /// Dispatches one kernel and returns its completion.
    pub fn dispatch(&self, d: &Dispatch<'_>) -> Result<Submission> {
        d.check_gpu(self.0.gpu.id())?;
        let kernargs = match d.args {
            DispatchArgs::None => d.no_args()?,
            DispatchArgs::Raw(bytes) => bytes,
            DispatchArgs::Built(_) => return self.dispatch_batched(d),
        };
        if !d.barrier || !self.plain_submission() {
            return self.dispatch_batched(d);
        }
        d.check_raw_len(kernargs, &self.0.gpu)?;
        let p = d.encode()?;
        self.before_submission()?;
        self.check_group_segment(p.group_segment)?;
        if p.kernel.private_segment_size() > 0 {
            self.ensure_scratch_service()?;
        }
        // The kernel's code is held first: cloning its handle is a read-modify-write, which
        // after the stores below would wait for them to reach lines the device wrote last.
        let mut held = Held::default();
        if let Some(code) = p.kernel.code() {
            held.push(code.clone());
        }
        let mut packet = p.packet;
        let size = kernargs.len().max(p.kernel.kernarg_size() as usize);
        if size == 0 {
            let signal = self.0.completions.take_unset(self.0.gpu.kfd(), 1)?;
            return self.publish_one(packet, signal, held, true);
        }
        let signal = self.completion_signal()?;
        let len = (size as u64).div_ceil(KERNARG_ALIGN) * KERNARG_ALIGN;
        // Released when the signal reaches 0: at completion, or below if nothing is written.
        let (gpu, cpu) = self.kernarg_region(len, &signal)?;
        // SAFETY: the region is `len` >= `kernargs.len()` bytes of host-visible kernarg memory
        // reserved for this dispatch alone; `kernargs` is the caller's memory.
        unsafe {
            std::ptr::copy_nonoverlapping(kernargs.as_ptr(), cpu, kernargs.len());
            std::ptr::write_bytes(cpu.add(kernargs.len()), 0, len as usize - kernargs.len());
        }
        aql::add_encoded_kernarg_base(&mut packet, gpu);
        self.publish_one(packet, signal, held, false)
    }

    fn dispatch_batched(&self, d: &Dispatch<'_>) -> Result<Submission> {
        let mut b = self.batch()?;
        b.dispatch(d)?;
        b.submit()
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
    fn before_submission(&self) -> Result<()> {
        // Checked first: in a forked child, pruning would read signals that are not mapped.
        self.check()?;
        self.0.retired.prune();
        Ok(())
    }

    /// Publishes `packet` (encoded, barrier bit set) with `signal` as its completion, rings the
    /// doorbell, and returns the submission owning `held`. `set_value`: the signal's value is
    /// not set yet (set to 1 here, after the ring's reservation, so that read-modify-write does
    /// not wait for the store to the signal's line).
    fn publish_one(
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
