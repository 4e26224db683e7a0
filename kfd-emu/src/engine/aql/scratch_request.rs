//! The CP's scratch requests on an AQL queue: before a dispatch whose scratch the queue cannot
//! serve it stops and asks the runtime for more, and after a dispatch that ran on scratch lent
//! for one dispatch it asks the runtime to take it back (see `engine::scratch`).

use super::{Outcome, Processor};
use crate::engine::error::QueueErrorCode;
use crate::engine::scratch::QueueScratch;
use aql::{queue_offsets, signal_offsets, KernelDispatchPacket};
use std::sync::atomic::Ordering;

impl Processor {
    /// The queue's `amd_queue_t` (the read index is one of its fields).
    pub(super) fn amd_queue(&self) -> u64 {
        self.ctl.rptr - queue_offsets::READ_DISPATCH_ID
    }

    /// Whether `d` runs as machine code (not a kernel bound to a host function).
    pub(super) fn runs_machine_code(&self, d: &KernelDispatchPacket) -> bool {
        self.kernels.get(d.kernel_object).is_none()
    }

    /// The queue's scratch as its `amd_queue_t` describes it, in the GPU's format.
    pub(super) fn read_scratch(&self) -> Result<QueueScratch, crate::vm::GpuFault> {
        let p = &self.gpu().params;
        let format = aql::scratch::ScratchFormat::for_gfx_target_version(p.gfx_target_version)
            .unwrap_or_default();
        QueueScratch::read(
            self.vm(),
            self.amd_queue(),
            format,
            p.shader_engines_per_xcc(),
        )
    }

    /// Lanes per wave of `d`'s kernel: 32 where its descriptor asks for wave32.
    fn lanes_of(&self, d: &KernelDispatchPacket) -> Result<u32, Outcome> {
        let mut kd = [0u8; 64];
        self.vm()
            .read(d.kernel_object, &mut kd)
            .map_err(|f| Outcome::Error(QueueErrorCode::MemoryViolation, Some(f)))?;
        let wave32 = kfd_emu_isa::KernelDescriptor::from_bytes(&kd).wavefront_size32();
        Ok(if wave32 { 32 } else { 64 })
    }

    /// Waits, asking the runtime, until the queue's scratch serves `d`. `Ok(lent)`: it does,
    /// and `lent` says the scratch is lent for this dispatch only.
    pub(super) fn ensure_scratch(&self, d: &KernelDispatchPacket) -> Result<bool, Outcome> {
        if d.private_segment_size == 0 || !self.runs_machine_code(d) {
            return Ok(false);
        }
        let lanes = self.lanes_of(d)?;
        loop {
            let scratch = self
                .read_scratch()
                .map_err(|f| Outcome::Error(QueueErrorCode::MemoryViolation, Some(f)))?;
            if scratch.serves(d.private_segment_size, lanes) {
                return Ok(scratch.use_once);
            }
            log::debug!(
                "kfd-emu: queue {}: dispatch needs {} bytes of scratch per work-item, the queue \
                 serves {}: asking the runtime",
                self.ctl.id,
                d.private_segment_size,
                scratch.lane_bytes
            );
            // Which wave size needs it (ROCr sizes the slots by it).
            let code = if lanes == 32 {
                aql::queue_error::INSUFFICIENT_SCRATCH_WAVE32
            } else {
                aql::queue_error::INSUFFICIENT_SCRATCH_WAVE64
            };
            match self.ask_runtime(code) {
                Outcome::Done => {}
                other => return Err(other),
            }
        }
    }

    /// Stores `code` into the queue's inactive signal (raising its event) and waits until the
    /// runtime stores 0 there, as the CP does for its scratch requests. A queue with no inactive
    /// signal cannot be asked: the dispatch fails with an allocation error.
    pub(super) fn ask_runtime(&self, code: u64) -> Outcome {
        let vm = self.vm();
        let signal = match vm.read_u64(self.amd_queue() + queue_offsets::QUEUE_INACTIVE_SIGNAL) {
            Ok(s) => s,
            Err(f) => return Outcome::Error(QueueErrorCode::MemoryViolation, Some(f)),
        };
        if signal == 0 {
            return Outcome::Error(QueueErrorCode::InvalidAllocation, None);
        }
        self.stats.scratch_requests.fetch_add(1, Ordering::Relaxed);
        let value = signal + signal_offsets::VALUE;
        if let Err(f) = vm
            .write_u64(value, code)
            .and_then(|()| self.raise_signal_event(signal))
        {
            return Outcome::Error(QueueErrorCode::MemoryViolation, Some(f));
        }
        self.wait_until(|| Ok(vm.read_u64(value)? == 0))
    }
}
