//! The kernel-dispatch packet: the checks the CP makes of it (geometry, kernel object), then
//! its kernel: the host function bound to the kernel object, if a test bound one, or else the
//! machine code the descriptor points at, on the wave interpreter.

use super::{Outcome, PacketAt, Processor};
use crate::engine::error::QueueErrorCode;
use crate::engine::launch::{KernelLaunch, LaunchStop};
use crate::engine::machine::{MachineLaunch, MachineStop};
use aql::KernelDispatchPacket;
use kfd_emu_isa::DispatchSetup;
use std::sync::atomic::Ordering;

/// The kernarg segment's alignment (the HSA ABI's minimum).
const KERNARG_ALIGN: u64 = 16;

impl Processor {
    /// The checks the CP makes of a dispatch packet's own fields before it acts on the packet
    /// (asks for scratch, fetches the kernel), each failure with the code ROCr decodes
    /// (`amd_aql_queue.cpp`'s queue-error bits, KFD's `EC_QUEUE_PACKET_*`): dimensions outside
    /// 1..=3 or an empty grid are an invalid dimension (2, `DISPATCH_DIM_INVALID`); an empty or
    /// oversized work-group is a work-group size error (64, `WORK_GROUP_SIZE_INVALID`); more
    /// group memory than the CU has is an invalid group segment (4,
    /// `GROUP_SEGMENT_SIZE_INVALID`); a null or misaligned kernel object, or (when the packet
    /// asks for scratch, which would otherwise be requested first) an unmapped one, is an
    /// invalid code object (8, `CODE_INVALID`).
    pub(super) fn check_dispatch(&self, d: &KernelDispatchPacket) -> Result<(), QueueErrorCode> {
        use QueueErrorCode::*;
        if !(1..=3).contains(&d.dimensions) || d.grid_size.contains(&0) {
            return Err(IncompatibleArguments);
        }
        let wg: [u32; 3] = d.workgroup_size.map(u32::from);
        if wg.contains(&0) || aql::work_group_items(wg) > aql::MAX_WORK_GROUP_ITEMS {
            return Err(InvalidArgument);
        }
        if u64::from(d.group_segment_size) > u64::from(self.gpu().params.lds_size_kb) * 1024 {
            return Err(InvalidAllocation);
        }
        if d.kernel_object == 0 || d.kernel_object % 64 != 0 {
            return Err(InvalidCodeObject);
        }
        if d.private_segment_size > 0 && !self.vm().is_mapped(d.kernel_object, 64) {
            return Err(InvalidCodeObject);
        }
        Ok(())
    }

    /// Runs a kernel-dispatch packet the processor checked ([`Processor::check_dispatch`]): a
    /// kernel object it cannot read stops the queue with the error the CP reports for it, a
    /// fault in the kernel is a device exception.
    pub(super) fn dispatch(&self, d: &KernelDispatchPacket, at: &PacketAt) -> Outcome {
        use QueueErrorCode::*;
        let wg: [u32; 3] = d.workgroup_size.map(u32::from);
        let mut kd_raw = [0u8; 64];
        if self.vm().read(d.kernel_object, &mut kd_raw).is_err() {
            return Outcome::Error(InvalidCodeObject, None);
        }
        // Only the fields the CP reads (entry offset, rsrc registers, code properties), which
        // sit at the same offsets in a code object v2 `amd_kernel_code_t`.
        let kd = aql::KernelDescriptor::from_bytes(&kd_raw);
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
        let Some(f) = self.kernels.get(d.kernel_object) else {
            return self.run_machine_code(d, at, &kd_raw);
        };
        // A host function reads its arguments through the page table too, but an unmapped
        // segment is refused up front, as a stand-in cannot fault on its first load.
        if kd.kernarg_size > 0
            && !self
                .vm()
                .is_mapped(d.kernarg_address, u64::from(kd.kernarg_size))
        {
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
            arbiter: &self.ctl.gpu.arbiter,
            pipe_priority: crate::arbiter::pipe_priority(self.ctl.priority.load(Ordering::Acquire)),
        };
        match launch.run(&|| self.stopped()) {
            Ok(()) => Outcome::Done,
            Err(LaunchStop::Stopped) => Outcome::Stopped,
            Err(LaunchStop::Fault(fault)) => Outcome::Error(MemoryViolation, Some(fault)),
        }
    }

    /// Runs the dispatch's machine code: the waves start as the CP starts them (the packet's
    /// geometry and segment sizes, the queue's scratch, KFD's apertures).
    fn run_machine_code(&self, d: &KernelDispatchPacket, at: &PacketAt, kd: &[u8; 64]) -> Outcome {
        let Some(code) = self.gpu().code.clone() else {
            log::error!(
                "kfd-emu: queue {}: kernel {:#x} is machine code for gfx target version {}, \
                 which the wave interpreter does not run (bind a host function to it instead)",
                self.ctl.id,
                d.kernel_object,
                self.gpu().params.gfx_target_version
            );
            return Outcome::Error(QueueErrorCode::IllegalInstruction, None);
        };
        let descriptor = kfd_emu_isa::KernelDescriptor::from_bytes(kd);
        let mut setup =
            DispatchSetup::from_aql_packet(code.target(), &at.bytes(), at.slot, descriptor, code);
        setup.queue_address = self.amd_queue();
        setup.dispatch_id = at.index;
        setup.gws = self.ctl.gws();
        setup.trap = self.ctl.trap_routing();
        setup.debug = self.ctl.debug.wave_debug(self.ctl.gpu.gpu_id);
        setup.xccs = self.ctl.gpu.params.num_xcc.max(1);
        setup.messages = Some(self.ctl.message_sink());
        setup.watch = self.ctl.gpu.watch.current();
        setup.probe = Some(self.ctl.gpu.probe.clone());
        setup.sanitize = self.ctl.gpu.sanitizer.for_dispatch(&self.ctl.gpu);
        let mut xcc_stride = 0;
        if d.private_segment_size > 0 {
            // `ensure_scratch` made sure the queue serves it before the packet got here.
            match self.read_scratch() {
                Ok(s) => {
                    setup.scratch = s.backing;
                    xcc_stride = s.xcc_stride;
                }
                Err(f) => return Outcome::Error(QueueErrorCode::MemoryViolation, Some(f)),
            }
        }
        let scratch = setup.scratch;
        let launch = MachineLaunch {
            setup,
            vm: self.vm(),
            cancel: &self.ctl.stop,
            threads: self.wave_threads,
            queue_id: self.ctl.id,
            fault_log: &self.ctl.gpu.fault_log,
            other_xccs: (1..self.ctl.gpu.params.num_xcc.max(1))
                .map(|x| {
                    scratch.map(|b| crate::engine::scratch::QueueScratch::for_xcc(b, xcc_stride, x))
                })
                .collect(),
            arbiter: &self.ctl.gpu.arbiter,
            pipe_priority: crate::arbiter::pipe_priority(self.ctl.priority.load(Ordering::Acquire)),
        };
        self.stats
            .machine_dispatches
            .fetch_add(1, Ordering::Relaxed);
        match launch.run() {
            Ok(instructions) => {
                self.stats
                    .wave_instructions
                    .fetch_add(instructions, Ordering::Relaxed);
                Outcome::Done
            }
            Err(MachineStop::Stopped) => Outcome::Stopped,
            Err(MachineStop::Fault(f)) => Outcome::Error(QueueErrorCode::MemoryViolation, Some(f)),
            Err(MachineStop::Error(code)) => Outcome::Error(code, None),
            Err(MachineStop::Halted) => Outcome::Halted,
        }
    }
}
