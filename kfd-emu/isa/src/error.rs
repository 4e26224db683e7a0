//! Why a wave (and so its work-group and dispatch) stopped: every failure is a value, never a
//! panic, and names the PC and what was there.

use crate::memory::AccessKind;

/// A failure running a work-group. kfd-emu turns it into the queue error the hardware would
/// raise (see the crate docs for the suggested mapping).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaveError {
    /// A memory access (including an instruction fetch) outside the memory's mappings.
    MemoryFault {
        /// The faulting address.
        va: u64,
        /// What the access was.
        kind: AccessKind,
        /// PC of the instruction that faulted.
        pc: u64,
    },
    /// Words that are no instruction of the target.
    Undecodable {
        /// Where they are.
        pc: u64,
        /// The words (the first one is the offending one).
        words: Vec<u32>,
    },
    /// A valid instruction the interpreter does not implement.
    Unimplemented {
        /// Where it is.
        pc: u64,
        /// Its words.
        words: Vec<u32>,
        /// Its disassembly.
        text: String,
    },
    /// An operand outside the wave's allocation (a VGPR or AGPR beyond the kernel's register
    /// count, an M0-relative SGPR beyond s101) or of a kind the instruction cannot use.
    IllegalOperand {
        /// Where the instruction is.
        pc: u64,
        /// Its disassembly.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// The kernel asks for scratch (private segment) and the dispatch provides none: the
    /// hardware cannot start its waves.
    ScratchUnavailable {
        /// Bytes of scratch each work-item needs.
        bytes_per_work_item: u32,
    },
    /// The scratch backing provided is too small for the waves run in the slot asked for.
    ScratchTooSmall {
        /// Bytes needed.
        needed: u64,
        /// Bytes provided.
        provided: u64,
    },
    /// The dispatch itself is invalid (as the CP would refuse it).
    InvalidDispatch(String),
    /// An `s_trap` (or an exception the interpreter raises as a trap).
    Trap {
        /// PC of the trap.
        pc: u64,
        /// The trap id (`s_trap` immediate).
        id: u16,
    },
    /// A wave halted (`s_sethalt 1`, or an exception with no trap handler to take it): it
    /// stays resident and its dispatch never completes, as on the hardware.
    Halted {
        /// PC of the halting instruction.
        pc: u64,
        /// TRAPSTS at the halt (the exception, if one).
        trapsts: u32,
    },
    /// The run hit its instruction budget ([`crate::RunControl::max_wave_instructions`]).
    BudgetExhausted {
        /// Wave-instructions executed in this work-group.
        executed: u64,
        /// PC of a wave at the stop.
        pc: u64,
    },
    /// The caller cancelled the run ([`crate::RunControl::cancel`]).
    Cancelled {
        /// PC of a wave at the stop.
        pc: u64,
    },
}

impl WaveError {
    /// The PC the error is about, when it is about an instruction.
    pub fn pc(&self) -> Option<u64> {
        match self {
            WaveError::MemoryFault { pc, .. }
            | WaveError::Undecodable { pc, .. }
            | WaveError::Unimplemented { pc, .. }
            | WaveError::IllegalOperand { pc, .. }
            | WaveError::Trap { pc, .. }
            | WaveError::Halted { pc, .. }
            | WaveError::BudgetExhausted { pc, .. }
            | WaveError::Cancelled { pc } => Some(*pc),
            _ => None,
        }
    }
}

fn words_hex(words: &[u32]) -> String {
    words
        .iter()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl std::fmt::Display for WaveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaveError::MemoryFault { va, kind, pc } => {
                write!(f, "GPU page fault at {va:#x} ({kind}) by the instruction at {pc:#x}")
            }
            WaveError::Undecodable { pc, words } => {
                write!(f, "undecodable instruction at {pc:#x}: {}", words_hex(words))
            }
            WaveError::Unimplemented { pc, words, text } => write!(
                f,
                "unimplemented instruction at {pc:#x}: {} ({text})",
                words_hex(words)
            ),
            WaveError::IllegalOperand { pc, text, reason } => {
                write!(f, "illegal operand at {pc:#x} ({text}): {reason}")
            }
            WaveError::ScratchUnavailable {
                bytes_per_work_item,
            } => write!(
                f,
                "kernel needs {bytes_per_work_item} bytes of scratch per work-item and the queue has no scratch backing"
            ),
            WaveError::ScratchTooSmall { needed, provided } => write!(
                f,
                "scratch backing of {provided} bytes is smaller than the {needed} bytes needed"
            ),
            WaveError::InvalidDispatch(why) => write!(f, "invalid dispatch: {why}"),
            WaveError::Trap { pc, id } => write!(f, "s_trap {id} at {pc:#x}"),
            WaveError::Halted { pc, trapsts } => {
                write!(f, "wave halted at {pc:#x} (TRAPSTS {trapsts:#x})")
            }
            WaveError::BudgetExhausted { executed, pc } => write!(
                f,
                "instruction budget exhausted after {executed} wave-instructions (a wave at {pc:#x})"
            ),
            WaveError::Cancelled { pc } => write!(f, "cancelled (a wave at {pc:#x})"),
        }
    }
}

impl std::error::Error for WaveError {}
