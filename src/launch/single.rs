//! One kernel dispatched on an AQL queue by itself: the fast path that writes the packet and its
//! arguments straight into the ring when no debugging switch needs the batch path's view.

use super::dispatch::{Dispatch, DispatchArgs};
use crate::error::Result;
use crate::queue::held::Held;
use crate::queue::kernarg::KERNARG_ALIGN;
use crate::queue::{AqlQueue, Submission};

impl AqlQueue {
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
}
