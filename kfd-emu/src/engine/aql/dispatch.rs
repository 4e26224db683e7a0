//! The kernel-dispatch packet: the checks the CP makes of it (geometry, kernel object, kernel
//! arguments) and the launch of the kernel bound to its object.

use super::{Outcome, Processor};
use crate::engine::error::QueueErrorCode;
use crate::engine::launch::{KernelLaunch, LaunchStop};
use crate::rocr_blit::{self, BlitError};
use aql::KernelDispatchPacket;

/// The kernarg segment's alignment (the HSA ABI's minimum).
const KERNARG_ALIGN: u64 = 16;

impl Processor {
    /// Runs a kernel-dispatch packet: an invalid one stops the queue with the error the CP
    /// reports for it, a fault in the kernel is a device exception.
    pub(super) fn dispatch(&self, d: &KernelDispatchPacket) -> Outcome {
        use QueueErrorCode::*;
        if !(1..=3).contains(&d.dimensions) || d.grid_size.contains(&0) {
            return Outcome::Error(InvalidArgument, None);
        }
        let wg: [u32; 3] = d.workgroup_size.map(u32::from);
        if wg.contains(&0) || wg.iter().product::<u32>() > 1024 {
            return Outcome::Error(IncompatibleArguments, None);
        }
        if u64::from(d.group_segment_size) > u64::from(self.gpu().params.lds_size_kb) * 1024 {
            return Outcome::Error(IncompatibleArguments, None);
        }
        let mut kd = [0u8; 64];
        if d.kernel_object % 64 != 0 || self.vm().read(d.kernel_object, &mut kd).is_err() {
            return Outcome::Error(InvalidCodeObject, None);
        }
        let kd = aql::KernelDescriptor::from_bytes(&kd);
        // The first instruction fetch: the code must be mapped executable (a NoExecute fault
        // otherwise, as the GPU's page table raises it).
        let Some(entry) = d
            .kernel_object
            .checked_add_signed(kd.kernel_code_entry_byte_offset)
        else {
            return Outcome::Error(InvalidCodeObject, None);
        };
        if let Err(f) = self.vm().check_exec(entry, 4) {
            return Outcome::Error(MemoryViolation, Some(f));
        }
        self.gpu().fetch_code(entry);
        let Some(f) = self.kernels.get(d.kernel_object) else {
            // Not bound: it may be one of ROCr's own blit kernels (under the preload).
            let Some(blit) =
                rocr_blit::recognize(self.vm(), d.kernel_object, kd.kernel_code_entry_byte_offset)
            else {
                return Outcome::Error(InvalidCodeObject, None);
            };
            log::trace!("kfd-emu: queue {}: ROCr {blit:?} blit", self.ctl.id);
            return match rocr_blit::run(self.vm(), blit, d.kernarg_address, d.grid_size[0]) {
                Ok(()) => Outcome::Done,
                Err(BlitError::BadArguments) => Outcome::Error(InvalidArgument, None),
                Err(BlitError::Fault(f)) => Outcome::Error(MemoryViolation, Some(f)),
            };
        };
        if kd.kernarg_size > 0
            && !self
                .vm()
                .is_mapped(d.kernarg_address, u64::from(kd.kernarg_size))
        {
            return Outcome::Error(InvalidArgument, None);
        }
        // The ABI gives the kernarg segment 16-byte alignment and kernels load it with wide
        // scalar loads, which drop the low address bits: a misaligned segment is read from the
        // wrong place on hardware. Strict mode refuses it.
        if self.strict && kd.kernarg_size > 0 && d.kernarg_address % KERNARG_ALIGN != 0 {
            log::error!(
                "kfd-emu: queue {}: kernarg segment at {:#x} is not {KERNARG_ALIGN}-byte aligned",
                self.ctl.id,
                d.kernarg_address
            );
            return Outcome::Error(InvalidArgument, None);
        }
        let launch = KernelLaunch {
            kernel: &*f,
            vm: self.vm(),
            gpu_id: self.gpu().gpu_id,
            groups: std::array::from_fn(|i| d.grid_size[i].div_ceil(wg[i])),
            workgroup_size: wg,
            grid_size: d.grid_size,
            kernarg_address: d.kernarg_address,
        };
        match launch.run(&|| self.stopped()) {
            Ok(()) => Outcome::Done,
            Err(LaunchStop::Stopped) => Outcome::Stopped,
            Err(LaunchStop::Fault(fault)) => Outcome::Error(MemoryViolation, Some(fault)),
        }
    }
}
