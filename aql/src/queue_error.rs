//! The error bits a packet processor writes into an AQL queue's inactive signal when the queue
//! stops: the values ROCr decodes into `hsa_status_t` (`AqlQueue::ExceptionHandler` and
//! `DynamicQueueEventsHandler` in ROCr's `amd_aql_queue.cpp`).
//!
//! Defined here, next to the `amd_queue_t` and `amd_signal_t` layouts, because both sides of the
//! ABI use them: the emulated command processor writes them and the runtime decodes them.

/// Invalid dispatch dimensions: outside 1..=3, or an empty grid (ROCr: "invalid dim",
/// `HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS`; KFD's `EC_QUEUE_PACKET_DISPATCH_DIM_INVALID`).
pub const INCOMPATIBLE_ARGUMENTS: u64 = 2;
/// Invalid group memory: more than a CU's LDS (ROCr: "invalid group memory",
/// `HSA_STATUS_ERROR_INVALID_ALLOCATION`; `EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID`).
pub const INVALID_ALLOCATION: u64 = 4;
/// The kernel object is not a valid kernel: null, misaligned, not mapped (ROCr: "invalid
/// code", `HSA_STATUS_ERROR_INVALID_CODE_OBJECT`; `EC_QUEUE_PACKET_DISPATCH_CODE_INVALID`).
pub const INVALID_CODE_OBJECT: u64 = 8;
/// The packet's format is invalid (unknown type, bad header).
pub const INVALID_PACKET_FORMAT: u64 = 32;
/// The work-group is empty or too large (ROCr: "group is too large",
/// `HSA_STATUS_ERROR_INVALID_ARGUMENT`; `EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID`).
/// The emulator also reports a kernarg segment it refuses with it.
pub const INVALID_ARGUMENT: u64 = 64;
/// The kernel needs more registers than the hardware has.
pub const OUT_OF_REGISTERS: u64 = 128;
/// A memory access outside the GPU's page table (GPU page fault).
pub const MEMORY_APERTURE_VIOLATION: u64 = 0x2000_0000;
/// The kernel executed an illegal instruction.
pub const ILLEGAL_INSTRUCTION: u64 = 0x4000_0000;
/// Any other exception.
pub const EXCEPTION: u64 = 0x8000_0000;

/// Not an error: the CP stopped before a dispatch whose `private_segment_size` exceeds the
/// queue's scratch (`scratch_wave64_lane_byte_size`), for wave64 code. The packet is not
/// consumed; the runtime sets up more scratch in `amd_queue_t` and stores 0 to the inactive
/// signal, and the CP retries the packet.
pub const INSUFFICIENT_SCRATCH_WAVE64: u64 = 1;
/// As [`INSUFFICIENT_SCRATCH_WAVE64`], for wave32 code.
pub const INSUFFICIENT_SCRATCH_WAVE32: u64 = 0x400;
/// Not an error: a dispatch that ran with scratch lent for one dispatch
/// (`QUEUE_PROPERTY_USE_SCRATCH_ONCE`) is done, and the CP waits for the runtime to take the
/// scratch back (zero it in `amd_queue_t`, clear the property, store 0 to the inactive
/// signal). The exact value, not a bit.
pub const SCRATCH_RECLAIM: u64 = 512;

/// Whether `code` asks the runtime for scratch rather than reporting an error.
pub fn is_scratch_request(code: u64) -> bool {
    code == SCRATCH_RECLAIM
        || code & (INSUFFICIENT_SCRATCH_WAVE64 | INSUFFICIENT_SCRATCH_WAVE32) != 0
}

/// Describes the most specific error bit set in `code`.
pub fn describe(code: u64) -> &'static str {
    // Most specific first: a word may carry several bits, and the first match names it.
    const TABLE: [(u64, &str); 9] = [
        (
            MEMORY_APERTURE_VIOLATION,
            "memory aperture violation (GPU page fault)",
        ),
        (ILLEGAL_INSTRUCTION, "illegal instruction"),
        (INVALID_CODE_OBJECT, "invalid code object"),
        (INVALID_PACKET_FORMAT, "invalid packet format"),
        (INCOMPATIBLE_ARGUMENTS, "incompatible arguments"),
        (INVALID_ARGUMENT, "invalid argument"),
        (INVALID_ALLOCATION, "invalid allocation"),
        (OUT_OF_REGISTERS, "out of registers"),
        (EXCEPTION, "exception"),
    ];
    TABLE
        .iter()
        .find(|(bit, _)| code & bit != 0)
        .map_or("unknown queue error", |(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_names_the_most_specific_bit() {
        assert_eq!(describe(INVALID_ARGUMENT), "invalid argument");
        assert_eq!(
            describe(EXCEPTION | MEMORY_APERTURE_VIOLATION),
            "memory aperture violation (GPU page fault)"
        );
        assert_eq!(describe(0), "unknown queue error");
        assert_eq!(describe(1), "unknown queue error");
    }
}
