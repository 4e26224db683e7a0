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

/// One side of a [`SubWindowCopy`]: a linear surface (a 3D array of elements laid out row by
/// row, slice by slice) and where the window starts in it. Everything but the address counts
/// elements of the copy's size.
///
/// Element `(x, y, z)` of the surface lives at
/// `addr + (x + y * pitch + z * slice_pitch) * element_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SubWindowSurface {
    /// Base address (4-byte aligned; ROCr moves an unaligned start into `x`).
    pub addr: u64,
    /// First element of each row of the window (14 bits).
    pub x: u32,
    /// First row (14 bits).
    pub y: u32,
    /// First slice ([`SdmaVersion::sub_window_z_bits`] bits: 11 on SDMA 4, 13 after).
    pub z: u32,
    /// Elements from the start of one row to the next, 1 ..= 2^19 (stored minus one).
    pub pitch: u32,
    /// Elements from the start of one slice to the next, 1 ..= 2^28 (stored minus one; ROCr
    /// writes 0, a slice pitch of 1, when the copy is one slice deep).
    pub slice_pitch: u32,
    /// Endian swap (2 bits: 0 none, 1 bytes in 16-bit words, 2 in dwords, 3 in qwords).
    pub swap: u8,
    /// Cache policy (3 bits; SDMA 6 only, 0 before).
    pub cache_policy: u8,
}

impl SubWindowSurface {
    /// A surface at `addr` with the given pitches, the window at its origin, no swap and the
    /// default cache policy.
    pub fn new(addr: u64, pitch: u32, slice_pitch: u32) -> SubWindowSurface {
        SubWindowSurface {
            addr,
            x: 0,
            y: 0,
            z: 0,
            pitch,
            slice_pitch,
            swap: 0,
            cache_policy: 0,
        }
    }

    /// The same surface with the window starting at element `(x, y, z)`.
    pub fn at(self, x: u32, y: u32, z: u32) -> SubWindowSurface {
        SubWindowSurface { x, y, z, ..self }
    }
}

/// COPY LINEAR_SUB_WINDOW (`SDMA_PKT_COPY_LINEAR_SUB_WIND`, ROCr's `COPY_LINEAR_RECT`): copy a
/// `width` x `height` x `depth` box of elements from one linear surface to another, row by
/// row. Every extent is 1 or more and stored minus one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SubWindowCopy {
    /// log2 of the element size in bytes: 0 ..= 4 (1 to 16 bytes).
    pub element_size_log2: u8,
    /// TMZ: the surfaces are in trusted (encrypted) memory.
    pub tmz: bool,
    /// CPV: the surfaces' cache policies are valid (SDMA 6 only, `false` before).
    pub cache_policy_valid: bool,
    /// Where the elements come from.
    pub src: SubWindowSurface,
    /// Where they go.
    pub dst: SubWindowSurface,
    /// Elements per row, 1 ..= 2^14.
    pub width: u32,
    /// Rows per slice, 1 ..= 2^14.
    pub height: u32,
    /// Slices, 1 ..= 2^11 on SDMA 4, 2^13 after (see [`SdmaVersion::sub_window_z_bits`]).
    pub depth: u32,
}

impl SubWindowCopy {
    /// An element-size-`1 << element_size_log2` copy of a `width` x `height` x `depth` box,
    /// with no TMZ and no cache policies.
    pub fn new(
        element_size_log2: u8,
        src: SubWindowSurface,
        dst: SubWindowSurface,
        [width, height, depth]: [u32; 3],
    ) -> SubWindowCopy {
        SubWindowCopy {
            element_size_log2,
            tmz: false,
            cache_policy_valid: false,
            src,
            dst,
            width,
            height,
            depth,
        }
    }

    /// Bytes per element, `1 << element_size_log2` (codes above 63 count as 63, so this never
    /// overflows; [`SdmaPacket::validate`] allows 0 ..= 4).
    pub fn element_bytes(&self) -> u64 {
        1u64 << self.element_size_log2.min(63)
    }

    /// Bytes of one row of the window.
    pub fn row_bytes(&self) -> u64 {
        u64::from(self.width).saturating_mul(self.element_bytes())
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
    /// COPY_LINEAR with the broadcast bit: the same `bytes` from `src` to two destinations
    /// (9 dwords; peer-to-peer tests write a local and a remote copy at once).
    CopyLinearBroadcast {
        /// Source.
        src: u64,
        /// First destination.
        dst1: u64,
        /// Second destination.
        dst2: u64,
        /// Bytes.
        bytes: u64,
    },
    /// COPY LINEAR_SUB_WINDOW: a box of elements between two linear surfaces (ROCr's
    /// `hsa_amd_memory_async_copy_rect`, HIP's `hipMemcpy2D`/`3D`).
    CopyLinearSubWindow(SubWindowCopy),
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
    /// An HDP flush: ROCr's `hdp_flush_cmd`, a POLL_REGMEM of a register (no `MEM_POLL`) whose
    /// six dwords the SDMA firmware takes as a request to flush the host data path, so CPU
    /// writes to VRAM through the BAR are visible to what follows. Linux's rings write it as a
    /// register poll with the header's `HDP_FLUSH` bit, which decodes as this too.
    HdpFlush,
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
            SdmaPacket::CopyLinearBroadcast { .. } => 9,
            SdmaPacket::CopyLinearSubWindow(_) => crate::fields::SUB_WINDOW_DWORDS,
            SdmaPacket::ConstantFill { .. } => 5,
            SdmaPacket::Write { data, .. } => 4 + data.len(),
            SdmaPacket::Fence { .. } => 4,
            SdmaPacket::Trap { .. } => 2,
            SdmaPacket::PollRegMem { .. } | SdmaPacket::HdpFlush => 6,
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
