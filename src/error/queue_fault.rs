//! How a queue stopped, as errors carry it: the packet processor's error word, or the exceptions
//! its waves raised (which KFD reports through the queue's context-save area).

use std::fmt;

bitflags::bitflags! {
    /// The exceptions a wave raised, as KFD reports them (`KFD_EC_MASK(EC_QUEUE_WAVE_*)`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct WaveExceptions: u64 {
        /// `s_trap 2`: `llvm.trap`, which HIP's `abort()` and `__builtin_trap()` compile to.
        const ABORT = 1 << 0;
        /// Another `s_trap`.
        const TRAP = 1 << 1;
        /// A floating-point exception the kernel enabled.
        const MATH_ERROR = 1 << 2;
        /// An instruction the GPU cannot execute.
        const ILLEGAL_INSTRUCTION = 1 << 3;
        /// A memory access the GPU refused (an XNACK error).
        const MEMORY_VIOLATION = 1 << 4;
        /// An access outside the apertures.
        const APERTURE_VIOLATION = 1 << 5;
        // Other queue exceptions KFD may OR in (CP packet errors, preemption).
        const _ = !0;
    }
}

impl WaveExceptions {
    /// The exceptions by name, `|`-separated.
    pub fn names(self) -> String {
        const NAMES: [(WaveExceptions, &str); 6] = [
            (WaveExceptions::ABORT, "abort (s_trap 2)"),
            (WaveExceptions::TRAP, "trap"),
            (WaveExceptions::MATH_ERROR, "math error"),
            (WaveExceptions::ILLEGAL_INSTRUCTION, "illegal instruction"),
            (WaveExceptions::MEMORY_VIOLATION, "memory violation"),
            (WaveExceptions::APERTURE_VIOLATION, "aperture violation"),
        ];
        let mut parts: Vec<String> = NAMES
            .iter()
            .filter(|(f, _)| self.contains(*f))
            .map(|(_, n)| (*n).to_owned())
            .collect();
        let rest = self.bits() & !WaveExceptions::all_named().bits();
        if rest != 0 {
            parts.push(format!("queue exceptions {rest:#x}"));
        }
        parts.join(" | ")
    }

    fn all_named() -> WaveExceptions {
        WaveExceptions::from_bits_retain(0x3F)
    }
}

/// The error a queue stopped with: what the packet processor reported through the queue's
/// inactive signal (ROCr's error bits), or the exceptions its waves raised, which KFD reports
/// through the queue's context-save area (see [`WaveExceptions`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueFault {
    /// The packet processor's error word (0 when only waves raised exceptions).
    pub code: u64,
    /// The exceptions the queue's waves raised (empty when the packet processor reported).
    pub exceptions: WaveExceptions,
}

impl QueueFault {
    /// The packet processor's error word `code`.
    pub fn from_code(code: u64) -> QueueFault {
        QueueFault {
            code,
            exceptions: WaveExceptions::empty(),
        }
    }

    /// A description of the error bits.
    pub fn describe(&self) -> &'static str {
        aql::queue_error::describe(self.code)
    }
}

impl fmt::Display for QueueFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.exceptions.is_empty() {
            write!(f, "wave exception: {}", self.exceptions.names())?;
            if self.code == 0 {
                return Ok(());
            }
            f.write_str("; ")?;
        }
        write!(f, "{} (code {:#x})", self.describe(), self.code)
    }
}
