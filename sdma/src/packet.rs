//! [`SdmaPacket`]: the SDMA packets kfdrt writes and its emulator executes, and the helpers that
//! split a transfer too large for one packet.

use crate::fields::atomic_op;
use crate::SdmaVersion;

/// POLL_REGMEM's comparison: the same 3-bit function codes as PM4's WAIT_REG_MEM (0 always,
/// 1 `<`, 2 `<=`, 3 `==`, 4 `!=`, 5 `>=`, 6 `>`), so one type serves both engines;
/// [`CompareFunction::eval`] is how the emulator decides a poll.
pub use pm4::CompareFunction;

/// An ATOMIC operation (header bits 25-31).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// 64-bit add ([`atomic_op::ADD_RTN_64`], 47): ROCr completes a signal by adding -1.
    Add64,
    /// Another 7-bit operation code (see [`atomic_op`]), carried through unchanged. `Other(47)`
    /// encodes like [`AtomicOp::Add64`] and decodes as it.
    Other(u8),
}

impl AtomicOp {
    /// The operation code.
    pub fn code(self) -> u8 {
        match self {
            AtomicOp::Add64 => atomic_op::ADD_RTN_64,
            AtomicOp::Other(code) => code,
        }
    }

    /// The operation of a code (only the low 7 bits are a code; callers mask).
    pub(crate) fn from_code(code: u8) -> AtomicOp {
        match code {
            atomic_op::ADD_RTN_64 => AtomicOp::Add64,
            other => AtomicOp::Other(other),
        }
    }
}

/// An SDMA packet. Addresses are GPU virtual addresses.
///
/// [`encode`](SdmaPacket::encode) checks every field against its width and alignment and
/// refuses what would be truncated; [`decode`](SdmaPacket::decode) reads any dwords without
/// panicking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SdmaPacket {
    /// NOP followed by `extra_dwords` (at most 0x3FFF) of zeros. A zero dword is a one-dword
    /// NOP, so the ring writer pads with zeros. The decoder skips the extra dwords whatever
    /// they hold (a "burst" NOP, as Linux writes it).
    Nop {
        /// Dwords after the header.
        extra_dwords: u32,
    },
    /// COPY_LINEAR: copy `bytes` bytes (1 ..= [`SdmaVersion::max_copy_bytes`]); any alignment.
    CopyLinear {
        /// Source.
        src: u64,
        /// Destination.
        dst: u64,
        /// Bytes.
        bytes: u64,
    },
    /// CONSTANT_FILL with a dword pattern: `bytes` (a multiple of 4, at most
    /// [`SdmaVersion::max_fill_bytes`]) at a 4-byte aligned `dst`.
    ConstantFill {
        /// Destination (4-byte aligned).
        dst: u64,
        /// Pattern.
        data: u32,
        /// Bytes (a multiple of 4).
        bytes: u64,
    },
    /// WRITE_LINEAR: write inline dwords (1 ..= 2^20 of them).
    Write {
        /// Destination (4-byte aligned).
        dst: u64,
        /// Data.
        data: Vec<u32>,
    },
    /// FENCE: write one dword. A 64-bit value takes two fences.
    Fence {
        /// Address (4-byte aligned).
        addr: u64,
        /// Value.
        data: u32,
        /// Write uncached (MTYPE 3), as ROCr does from SDMA 5 on. SDMA 4 fences have no
        /// memory type: the flag is not encoded there and decodes as `false`.
        mtype_uncached: bool,
    },
    /// TRAP: raise an interrupt whose context is `int_context` (28 bits; KFD takes it as the
    /// event id).
    Trap {
        /// Interrupt context.
        int_context: u32,
    },
    /// POLL_REGMEM on memory: wait until `func.eval(*addr, reference, mask)` holds, checking
    /// every `interval` (16 bits) up to `retry_count` (12 bits; 0xFFF = forever) times.
    PollRegMem {
        /// Address (4-byte aligned).
        addr: u64,
        /// Reference value.
        reference: u32,
        /// Mask applied to the memory value.
        mask: u32,
        /// Comparison.
        func: CompareFunction,
        /// Poll interval (16 bits).
        interval: u32,
        /// Retries (12 bits, 0xFFF = forever).
        retry_count: u32,
    },
    /// ATOMIC on a 64-bit word, without the LOOP option.
    Atomic {
        /// Address (8-byte aligned).
        addr: u64,
        /// Operation.
        op: AtomicOp,
        /// Source operand.
        src: u64,
        /// Compare operand (compare-and-swap).
        cmp: u64,
        /// Loop interval (13 bits; used by looping compare-and-swap only).
        loop_interval: u32,
    },
    /// TIMESTAMP GET_GLOBAL: write the 64-bit global timestamp.
    Timestamp {
        /// Address (8-byte aligned; kfdtest uses 32).
        addr: u64,
    },
    /// GCR_REQ (SDMA 5 and later): write back and/or invalidate caches, as user queues write it
    /// (sub-op [`crate::sub_op::GCR_USER`]).
    Gcr {
        /// Range start (128-byte aligned, below 2^48; ignored when the range mode is "all").
        base: u64,
        /// Range limit (128-byte aligned, below 2^48).
        limit: u64,
        /// GCR_CONTROL bits (19 bits, see [`crate::gcr_control`]).
        control: u32,
    },
}

impl SdmaPacket {
    /// How many dwords the packet encodes to.
    pub fn encoded_dwords(&self) -> usize {
        match self {
            SdmaPacket::Nop { extra_dwords } => 1 + *extra_dwords as usize,
            SdmaPacket::CopyLinear { .. } => 7,
            SdmaPacket::ConstantFill { .. } => 5,
            SdmaPacket::Write { data, .. } => 4 + data.len(),
            SdmaPacket::Fence { .. } => 4,
            SdmaPacket::Trap { .. } => 2,
            SdmaPacket::PollRegMem { .. } => 6,
            SdmaPacket::Atomic { .. } => 8,
            SdmaPacket::Timestamp { .. } => 3,
            SdmaPacket::Gcr { .. } => 5,
        }
    }
}

/// Offsets `0, max, 2 * max, ...` below `bytes` with the length of each piece.
fn pieces(bytes: u64, max: u64) -> impl Iterator<Item = (u64, u64)> {
    // `max` is never 0 (both limits are constants); `.max(1)` keeps the division total anyway.
    let max = max.max(1);
    (0..bytes.div_ceil(max)).map(move |i| {
        let offset = i * max;
        (offset, (bytes - offset).min(max))
    })
}

/// Splits a copy of `bytes` bytes into COPY_LINEAR packets of at most
/// [`SdmaVersion::max_copy_bytes`] each, covering `[src, src + bytes)` exactly and in order
/// (`ceil(bytes / max)` packets; none for 0 bytes). Addresses wrap rather than overflow, so a
/// range past the end of the address space yields packets that [`SdmaPacket::encode`] refuses.
pub fn copy_linear_split(
    ver: SdmaVersion,
    gfx_target_version: u32,
    src: u64,
    dst: u64,
    bytes: u64,
) -> impl Iterator<Item = SdmaPacket> {
    pieces(bytes, ver.max_copy_bytes(gfx_target_version)).map(move |(offset, len)| {
        SdmaPacket::CopyLinear {
            src: src.wrapping_add(offset),
            dst: dst.wrapping_add(offset),
            bytes: len,
        }
    })
}

/// Splits a fill of `bytes` bytes with the dword `data` into CONSTANT_FILL packets of at most
/// [`SdmaVersion::max_fill_bytes`] each (a multiple of 4, so every piece but the last is whole
/// dwords; `bytes` itself must be a multiple of 4 for the last to encode).
pub fn constant_fill_split(
    ver: SdmaVersion,
    gfx_target_version: u32,
    dst: u64,
    data: u32,
    bytes: u64,
) -> impl Iterator<Item = SdmaPacket> {
    pieces(bytes, ver.max_fill_bytes(gfx_target_version)).map(move |(offset, len)| {
        SdmaPacket::ConstantFill {
            dst: dst.wrapping_add(offset),
            data,
            bytes: len,
        }
    })
}
