//! What the wave interpreter knew when machine code failed: the faulting instruction with the
//! code around it, kept per GPU for a runtime's hang and fault reports
//! ([`crate::Emulator::machine_faults`]). A real GPU tells the driver little more than the
//! address; the emulator can say which instruction, which is what a person debugging wants.

use std::collections::VecDeque;
use std::sync::Mutex;

/// Faults kept per GPU (the oldest are dropped).
const KEPT: usize = 16;

/// One wave error of a machine-code dispatch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineFault {
    /// The queue whose dispatch failed.
    pub queue_id: u32,
    /// The dispatch's kernel object (its kernel descriptor's address).
    pub kernel_object: u64,
    /// The program counter of the failing instruction.
    pub pc: u64,
    /// The faulting address, for a memory fault.
    pub address: Option<u64>,
    /// What went wrong, in words.
    pub what: String,
    /// Instructions around `pc` (a few before, the one at `pc`, a few after), disassembled as
    /// `llvm-objdump` prints them, with their addresses.
    pub around_pc: Vec<(u64, String)>,
    /// The failed wave's state (its registers), when the failure was one wave's.
    pub wave: Option<kfd_emu_isa::WaveSnapshot>,
}

/// The recent machine faults of one GPU.
#[derive(Default)]
pub(crate) struct FaultLog {
    faults: Mutex<VecDeque<MachineFault>>,
}

impl FaultLog {
    pub(crate) fn record(&self, f: MachineFault) {
        let mut q = self.faults.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() == KEPT {
            q.pop_front();
        }
        q.push_back(f);
    }

    /// The kept faults, oldest first.
    pub(crate) fn all(&self) -> Vec<MachineFault> {
        self.faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}
