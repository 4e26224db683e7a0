//! Running a dispatch's real machine code on the wave interpreter (`kfd-emu-isa`): its
//! work-groups spread over a pool of host threads, each with a scratch slot of its own, every
//! access checked by the GPU's page table; a wave's error becomes the error the GPU would
//! report.

use super::error::QueueErrorCode;
use crate::isa_memory::gpu_fault;
use crate::vm::{GpuFault, GpuVm};
use kfd_emu_isa::{
    run_workgroups_noting, DispatchSetup, MemFault, RunControl, WaveError, WaveSnapshot,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// A dispatch of machine code, ready to run.
pub(crate) struct MachineLaunch<'a> {
    pub(crate) setup: DispatchSetup,
    pub(crate) vm: &'a GpuVm,
    /// Set when the queue is being destroyed: running waves stop.
    pub(crate) cancel: &'a AtomicBool,
    /// Host threads the work-groups may use (at least one).
    pub(crate) threads: usize,
    /// The queue, for the log.
    pub(crate) queue_id: u32,
    /// Where a wave's error is recorded with the code around it.
    pub(crate) fault_log: &'a crate::fault_log::FaultLog,
    /// The scratch of XCCs 1, 2, ... (XCC 0's is the setup's): the work-groups are spread
    /// over the XCCs in turn by work-group index (an MI300X in SPX mode has 8), each XCC's
    /// waves using its own. Empty for a GPU of one XCC.
    pub(crate) other_xccs: Vec<Option<kfd_emu_isa::ScratchBacking>>,
    /// The GPU's arbitration between queues, and this dispatch's pipe priority.
    pub(crate) arbiter: &'a crate::arbiter::PipeArbiter,
    pub(crate) pipe_priority: usize,
}

/// Why a launch did not run to the end.
#[derive(Debug)]
pub(crate) enum MachineStop {
    /// The queue is being destroyed.
    Stopped,
    /// A wave accessed memory its GPU's page table refuses: a GPU page fault.
    Fault(GpuFault),
    /// A wave stopped on an error the GPU reports through the queue (illegal instruction,
    /// trap), or the dispatch cannot start.
    Error(QueueErrorCode),
    /// A wave halted: the dispatch never completes, and the queue runs nothing more.
    Halted,
}

impl MachineLaunch<'_> {
    /// Runs every work-group. Work-groups are handed out in order (x fastest) to the threads,
    /// a batch of consecutive ones at a time that the thread runs interleaved (as a GPU runs
    /// the work-groups resident on a compute unit side by side: grid-stride loops then walk
    /// memory together rather than each work-group sweeping all of it alone). Each thread uses
    /// its own range of scratch slots, so the scratch backing limits how many run at once, as
    /// the queue's wave slots limit a GPU. Returns the wave-instructions run.
    pub(crate) fn run(&self) -> Result<u64, MachineStop> {
        let setup = &self.setup;
        if let Err(e) = setup.validate() {
            return Err(self.stop(e));
        }
        let groups = setup.grid_groups();
        let total = groups.iter().map(|&g| u64::from(g)).product::<u64>();
        let mut threads = (self.threads.max(1) as u64).min(total.max(1));
        let mut batch = batch_size(setup, total, threads);
        if let Some(s) = setup.scratch.filter(|_| setup.needs_scratch()) {
            // One work-group per scratch slot at a time, and a slot per thread.
            batch = 1;
            let per_slot = setup.scratch_per_slot().max(1);
            threads = threads.min(s.size / per_slot);
            if threads == 0 {
                return Err(self.stop(WaveError::ScratchTooSmall {
                    needed: per_slot,
                    provided: s.size,
                }));
            }
        }
        // Each XCC's waves see their share of the scratch (work-group g runs on XCC g % xccs,
        // which HW_REG_XCC_ID also reads).
        let xccs = if setup.scratch.is_some() && setup.needs_scratch() {
            1 + self.other_xccs.len() as u32
        } else {
            1
        };
        let per_xcc: Vec<DispatchSetup> = self
            .other_xccs
            .iter()
            .take(xccs as usize - 1)
            .map(|scratch| {
                let mut s = setup.clone();
                s.scratch = *scratch;
                s
            })
            .collect();
        let setup_of = |group: u64| match (group % u64::from(xccs)) as usize {
            0 => setup,
            x => &per_xcc[x - 1],
        };
        let next = AtomicU64::new(0);
        let failed = AtomicBool::new(false);
        // The error of the earliest work-groups that failed (by the index of their batch's first
        // work-group), so a fault every work-group hits is reported where the first one hits it.
        let first_error: Mutex<Option<(u64, WaveError, Option<WaveSnapshot>)>> = Mutex::new(None);
        let instructions = AtomicU64::new(0);
        let launching = self.arbiter.begin(self.pipe_priority);
        let worker = |thread: u32| {
            let control = RunControl {
                cancel: Some(self.cancel),
                max_wave_instructions: u64::MAX,
                scratch_slot: thread * batch as u32,
            };
            let gx = u64::from(groups[0]);
            let gxy = gx * u64::from(groups[1]);
            let mut ids = Vec::with_capacity(batch as usize);
            loop {
                // No new batches once one failed; batches already taken (all earlier than any
                // taken later) run to their end or their error.
                if failed.load(Ordering::Acquire) {
                    return;
                }
                launching.wait_turn(|| self.cancel.load(Ordering::Relaxed));
                let first = next.fetch_add(batch, Ordering::Relaxed);
                if first >= total {
                    launching.done();
                    return;
                }
                ids.clear();
                ids.extend(
                    (first..(first + batch).min(total))
                        .map(|i| [(i % gx) as u32, ((i % gxy) / gx) as u32, (i / gxy) as u32]),
                );
                // With scratch a batch is one work-group, on its XCC.
                let mut wave = None;
                match run_workgroups_noting(setup_of(first), &ids, self.vm, &control, &mut wave) {
                    Ok(stats) => {
                        instructions.fetch_add(stats.wave_instructions, Ordering::Relaxed);
                    }
                    Err(e) => {
                        let mut earliest = first_error.lock().unwrap_or_else(|p| p.into_inner());
                        if earliest.as_ref().is_none_or(|(at, _, _)| first < *at) {
                            *earliest = Some((first, e, wave));
                        }
                        failed.store(true, Ordering::Release);
                        return;
                    }
                }
            }
        };
        if threads <= 1 {
            worker(0);
        } else {
            std::thread::scope(|scope| {
                for thread in 1..threads as u32 {
                    let worker = &worker;
                    scope.spawn(move || worker(thread));
                }
                worker(0);
            });
        }
        match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some((_, e, wave)) => Err(self.stop_wave(e, wave)),
            None => Ok(instructions.into_inner()),
        }
    }

    /// The instruction at `pc`, disassembled (for the log at a fault).
    fn disassemble_at(&self, pc: u64) -> String {
        let mut bytes = [0u8; 16];
        let fetched = (0..4).take_while(|&i| {
            self.vm
                .read(pc + 4 * i as u64, &mut bytes[4 * i..4 * i + 4])
                .is_ok()
        });
        let n = fetched.count();
        if n == 0 {
            return "<unreadable>".into();
        }
        let words: Vec<u32> = bytes[..4 * n]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let target = self.setup.target;
        kfd_emu_isa::disasm::disassemble(target, &kfd_emu_isa::decode::decode(target, &words))
    }

    /// The instructions around `pc` with their addresses: decoded from the kernel's entry
    /// (instructions have different lengths, so only a walk from a known start finds their
    /// boundaries), up to `AFTER` past `pc`; `BEFORE` of them before it.
    fn disassemble_around(&self, pc: u64) -> Vec<(u64, String)> {
        const BEFORE: usize = 4;
        const AFTER: usize = 4;
        const MAX_BYTES: u64 = 256 << 10;
        let target = self.setup.target;
        let entry = self.setup.entry();
        let walk_from = if pc >= entry && pc - entry < MAX_BYTES {
            entry
        } else {
            pc
        };
        let len = (pc - walk_from + 12 * (AFTER as u64 + 1)) as usize;
        let mut bytes = vec![0u8; len];
        // Past the end of the code's mapping the read fails: then only the code up to the
        // instruction after `pc`, or at least the instruction itself.
        let mut n = len;
        if self.vm.read(walk_from, &mut bytes).is_err() {
            n = (pc - walk_from) as usize + 8;
            if self.vm.read(walk_from, &mut bytes[..n]).is_err() {
                return vec![(pc, self.disassemble_at(pc))];
            }
        }
        let words: Vec<u32> = bytes[..n - n % 4]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut out = Vec::new();
        let mut at = 0usize;
        let mut after = 0;
        while at < words.len() {
            let inst = kfd_emu_isa::decode::decode(target, &words[at..]);
            let addr = walk_from + 4 * at as u64;
            out.push((addr, kfd_emu_isa::disasm::disassemble(target, &inst)));
            if addr > pc {
                after += 1;
                if after == AFTER {
                    break;
                }
            }
            at += usize::from(inst.len.max(1));
        }
        let at_pc = out.iter().position(|(a, _)| *a >= pc).unwrap_or(out.len());
        out.drain(..at_pc.saturating_sub(BEFORE));
        out
    }

    /// Records a wave's error with the code around it and the wave's state (see
    /// [`crate::fault_log`]).
    fn record(&self, pc: u64, address: Option<u64>, what: String, wave: Option<WaveSnapshot>) {
        self.fault_log.record(crate::fault_log::MachineFault {
            queue_id: self.queue_id,
            kernel_object: self.setup.kernel_object,
            pc,
            address,
            what,
            around_pc: self.disassemble_around(pc),
            wave,
        });
    }

    /// The GPU's answer to a wave's error, logged with what a person debugging it needs.
    fn stop(&self, e: WaveError) -> MachineStop {
        self.stop_wave(e, None)
    }

    /// [`MachineLaunch::stop`] with the failed wave's state, when known.
    fn stop_wave(&self, e: WaveError, wave: Option<WaveSnapshot>) -> MachineStop {
        let q = self.queue_id;
        let kernel = self.setup.kernel_object;
        if let Some(pc) = e.pc() {
            let address = match &e {
                WaveError::MemoryFault { va, .. } => Some(*va),
                _ => None,
            };
            self.record(pc, address, e.to_string(), wave);
        }
        match e {
            WaveError::Cancelled { .. } => MachineStop::Stopped,
            WaveError::MemoryFault { va, kind, pc } => {
                log::warn!(
                    "kfd-emu: queue {q}: kernel {kernel:#x}: {kind} fault at {va:#x} by `{}` at \
                     {pc:#x}",
                    self.disassemble_at(pc)
                );
                MachineStop::Fault(gpu_fault(self.vm, MemFault { va, kind }))
            }
            WaveError::Undecodable { .. }
            | WaveError::Unimplemented { .. }
            | WaveError::IllegalOperand { .. } => {
                log::error!("kfd-emu: queue {q}: kernel {kernel:#x}: {e}");
                MachineStop::Error(QueueErrorCode::IllegalInstruction)
            }
            WaveError::Trap { .. } => {
                // The process's handler runs in a model (`TrapRouting::Report`): a trap ends the
                // dispatch as ROCr's pre-debugger handler reports one, a queue exception.
                log::error!("kfd-emu: queue {q}: kernel {kernel:#x}: {e}");
                MachineStop::Error(QueueErrorCode::Exception)
            }
            WaveError::Halted { .. } => {
                log::warn!(
                    "kfd-emu: queue {q}: kernel {kernel:#x}: {e}: the dispatch never completes \
                     and the queue runs nothing more, as on the hardware"
                );
                MachineStop::Halted
            }
            WaveError::ScratchUnavailable { .. } | WaveError::ScratchTooSmall { .. } => {
                log::error!("kfd-emu: queue {q}: kernel {kernel:#x}: {e}");
                MachineStop::Error(QueueErrorCode::InvalidAllocation)
            }
            WaveError::InvalidDispatch(_) | WaveError::BudgetExhausted { .. } => {
                log::error!("kfd-emu: queue {q}: kernel {kernel:#x}: {e}");
                MachineStop::Error(QueueErrorCode::IncompatibleArguments)
            }
        }
    }
}

/// Register files and LDS a thread's batch of interleaved work-groups may hold (about a core's
/// L2 cache: more would make the batch slower, not faster).
const BATCH_BYTES: u64 = 256 << 10;
/// Work-groups a thread interleaves at most.
const MAX_BATCH: u64 = 16;

/// How many consecutive work-groups a thread runs interleaved: as many as fit in
/// [`BATCH_BYTES`] (each wave's VGPRs, each work-group's LDS), up to [`MAX_BATCH`], and no more
/// than leaves every thread some.
fn batch_size(setup: &DispatchSetup, total: u64, threads: u64) -> u64 {
    let waves = u64::from(setup.waves_per_group());
    let vgprs = setup.descriptor.vgpr_count().min(512) as u64;
    let footprint = waves * vgprs * 256 + u64::from(setup.group_segment_size());
    (BATCH_BYTES / footprint.max(1))
        .min(MAX_BATCH)
        .min(total.div_ceil(threads.max(1)))
        .max(1)
}
