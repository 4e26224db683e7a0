//! The errors a packet processor stops its queue with.

use aql::queue_error;

/// Error bits a processor writes into an AQL queue's inactive signal (ROCr's decoding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueErrorCode {
    /// Invalid dispatch dimensions or an empty grid (ROCr's "invalid dim").
    IncompatibleArguments,
    /// Invalid kernel object.
    InvalidCodeObject,
    /// Unknown packet type or malformed packet.
    InvalidPacketFormat,
    /// An empty or oversized work-group (ROCr's "group is too large"), or a kernarg segment
    /// the emulator refuses (unmapped, misaligned in strict mode).
    InvalidArgument,
    /// GPU page fault.
    MemoryViolation,
    /// A wave ran an instruction the GPU cannot execute.
    IllegalInstruction,
    /// A wave trapped (`s_trap`), which the trap handler reports as a queue exception.
    Exception,
    /// The dispatch's group or private memory cannot be allocated.
    InvalidAllocation,
}

impl QueueErrorCode {
    /// The bits written into the inactive signal (the ABI values of [`aql::queue_error`], which
    /// the runtime decodes).
    pub fn bits(self) -> u64 {
        match self {
            QueueErrorCode::IncompatibleArguments => queue_error::INCOMPATIBLE_ARGUMENTS,
            QueueErrorCode::InvalidCodeObject => queue_error::INVALID_CODE_OBJECT,
            QueueErrorCode::InvalidPacketFormat => queue_error::INVALID_PACKET_FORMAT,
            QueueErrorCode::InvalidArgument => queue_error::INVALID_ARGUMENT,
            QueueErrorCode::MemoryViolation => queue_error::MEMORY_APERTURE_VIOLATION,
            QueueErrorCode::IllegalInstruction => queue_error::ILLEGAL_INSTRUCTION,
            QueueErrorCode::Exception => queue_error::EXCEPTION,
            QueueErrorCode::InvalidAllocation => queue_error::INVALID_ALLOCATION,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::QueueErrorCode;

    #[test]
    fn bits_are_rocr_values() {
        // The values ROCr decodes; a change here breaks every runtime reading the signal.
        assert_eq!(QueueErrorCode::IncompatibleArguments.bits(), 2);
        assert_eq!(QueueErrorCode::InvalidCodeObject.bits(), 8);
        assert_eq!(QueueErrorCode::InvalidPacketFormat.bits(), 32);
        assert_eq!(QueueErrorCode::InvalidArgument.bits(), 64);
        assert_eq!(QueueErrorCode::MemoryViolation.bits(), 0x2000_0000);
        assert_eq!(QueueErrorCode::IllegalInstruction.bits(), 0x4000_0000);
        assert_eq!(QueueErrorCode::Exception.bits(), 0x8000_0000);
        assert_eq!(QueueErrorCode::InvalidAllocation.bits(), 4);
    }
}
