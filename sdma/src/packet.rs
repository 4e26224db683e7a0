//! The packets.

use crate::{DecodeError, EncodeError, SdmaVersion};

/// Opcodes (header bits 0-7).
pub mod op {
    /// NOP.
    pub const NOP: u8 = 0;
    /// COPY (sub-op 0 linear).
    pub const COPY: u8 = 1;
    /// WRITE (sub-op 0 linear).
    pub const WRITE: u8 = 2;
    /// FENCE.
    pub const FENCE: u8 = 5;
    /// TRAP.
    pub const TRAP: u8 = 6;
    /// POLL_REGMEM.
    pub const POLL_REGMEM: u8 = 8;
    /// ATOMIC.
    pub const ATOMIC: u8 = 10;
    /// CONSTANT_FILL.
    pub const CONSTANT_FILL: u8 = 11;
    /// TIMESTAMP (sub-op 2 get global).
    pub const TIMESTAMP: u8 = 13;
    /// GCR_REQ (SDMA 5+).
    pub const GCR_REQ: u8 = 17;
}

/// `ATOMIC` operation codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// 64-bit add (ROCr completes signals by adding -1).
    Add64,
    /// Another operation code (bits 25-31), carried through.
    Other(u8),
}

impl AtomicOp {
    fn bits(self) -> u32 {
        match self {
            AtomicOp::Add64 => 47,
            AtomicOp::Other(v) => u32::from(v & 0x7F),
        }
    }

    fn from_bits(v: u32) -> AtomicOp {
        match v & 0x7F {
            47 => AtomicOp::Add64,
            o => AtomicOp::Other(o as u8),
        }
    }
}

/// POLL_REGMEM's comparison: the same function codes as PM4's WAIT_REG_MEM, so one type serves.
pub use pm4::CompareFunction;

/// An SDMA packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SdmaPacket {
    /// NOP with `extra_dwords` of padding after the header.
    Nop {
        /// Dwords after the header.
        extra_dwords: u32,
    },
    /// COPY_LINEAR.
    CopyLinear {
        /// Source.
        src: u64,
        /// Destination.
        dst: u64,
        /// Bytes (1 ..= the version's maximum).
        bytes: u64,
    },
    /// CONSTANT_FILL with a dword pattern.
    ConstantFill {
        /// Destination (4-byte aligned).
        dst: u64,
        /// Pattern.
        data: u32,
        /// Bytes (a multiple of 4).
        bytes: u64,
    },
    /// WRITE_LINEAR of dwords.
    Write {
        /// Destination (4-byte aligned).
        dst: u64,
        /// Data.
        data: Vec<u32>,
    },
    /// FENCE: write a dword.
    Fence {
        /// Address (4-byte aligned).
        addr: u64,
        /// Value.
        data: u32,
        /// Uncached write (MTYPE 3, set on SDMA 5+).
        mtype_uncached: bool,
    },
    /// TRAP: raise an interrupt with this context (the KFD event id).
    Trap {
        /// Interrupt context (28 bits).
        int_context: u32,
    },
    /// POLL_REGMEM on memory.
    PollRegMem {
        /// Address (4-byte aligned).
        addr: u64,
        /// Reference.
        reference: u32,
        /// Mask.
        mask: u32,
        /// Comparison.
        func: CompareFunction,
        /// Poll interval.
        interval: u32,
        /// Retries (0xFFF = forever).
        retry_count: u32,
    },
    /// ATOMIC on a 64-bit word.
    Atomic {
        /// Address (8-byte aligned).
        addr: u64,
        /// Operation.
        op: AtomicOp,
        /// Source operand.
        src: u64,
        /// Compare operand.
        cmp: u64,
        /// Loop interval.
        loop_interval: u32,
    },
    /// TIMESTAMP GET_GLOBAL: write the 64-bit global timestamp.
    Timestamp {
        /// Address (kfdtest uses 32-byte alignment; 8 is required).
        addr: u64,
    },
    /// GCR_REQ (SDMA 5+): write back / invalidate caches for an address range.
    Gcr {
        /// Range start (128-byte granules).
        base: u64,
        /// Range end.
        limit: u64,
        /// GCR_CONTROL bits (19).
        control: u32,
    },
}

fn lo(v: u64) -> u32 {
    v as u32
}
fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}
fn join(l: u32, h: u32) -> u64 {
    u64::from(l) | u64::from(h) << 32
}
fn hdr(op: u8, sub: u8, extra: u32) -> u32 {
    u32::from(op) | u32::from(sub) << 8 | extra
}

/// Splits a copy into packets of at most the version's maximum, covering `[0, bytes)` exactly.
pub fn copy_linear_split(
    ver: SdmaVersion,
    gfx_target_version: u32,
    src: u64,
    dst: u64,
    bytes: u64,
) -> impl Iterator<Item = SdmaPacket> {
    let max = ver.max_copy_bytes(gfx_target_version);
    (0..bytes.div_ceil(max)).map(move |i| {
        let off = i * max;
        SdmaPacket::CopyLinear {
            src: src + off,
            dst: dst + off,
            bytes: (bytes - off).min(max),
        }
    })
}

impl SdmaPacket {
    /// Appends the packet's dwords.
    pub fn encode(
        &self,
        ver: SdmaVersion,
        gfx_target_version: u32,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        let aligned = |a: u64, n: u64| {
            if a % n == 0 {
                Ok(())
            } else {
                Err(EncodeError::Misaligned(a))
            }
        };
        match self {
            SdmaPacket::Nop { extra_dwords } => {
                out.push(hdr(op::NOP, 0, (extra_dwords & 0x3FFF) << 16));
                out.extend(std::iter::repeat_n(0, *extra_dwords as usize));
            }
            SdmaPacket::CopyLinear { src, dst, bytes } => {
                if *bytes == 0 || *bytes > ver.max_copy_bytes(gfx_target_version) {
                    return Err(EncodeError::BadLength(*bytes));
                }
                out.extend_from_slice(&[
                    hdr(op::COPY, 0, 0),
                    (*bytes - 1) as u32,
                    0,
                    lo(*src),
                    hi(*src),
                    lo(*dst),
                    hi(*dst),
                ]);
            }
            SdmaPacket::ConstantFill { dst, data, bytes } => {
                aligned(*dst, 4)?;
                if *bytes == 0 || bytes % 4 != 0 || *bytes > ver.max_copy_bytes(gfx_target_version)
                {
                    return Err(EncodeError::BadLength(*bytes));
                }
                out.extend_from_slice(&[
                    hdr(op::CONSTANT_FILL, 0, 2 << 30),
                    lo(*dst),
                    hi(*dst),
                    *data,
                    (*bytes - 1) as u32,
                ]);
            }
            SdmaPacket::Write { dst, data } => {
                aligned(*dst, 4)?;
                if data.is_empty() || data.len() > 0x10_0000 {
                    return Err(EncodeError::BadLength(data.len() as u64 * 4));
                }
                out.extend_from_slice(&[
                    hdr(op::WRITE, 0, 0),
                    lo(*dst),
                    hi(*dst),
                    data.len() as u32 - 1,
                ]);
                out.extend_from_slice(data);
            }
            SdmaPacket::Fence {
                addr,
                data,
                mtype_uncached,
            } => {
                aligned(*addr, 4)?;
                let mtype = if *mtype_uncached && ver.is_v5_plus() {
                    3 << 16
                } else {
                    0
                };
                out.extend_from_slice(&[hdr(op::FENCE, 0, mtype), lo(*addr), hi(*addr), *data]);
            }
            SdmaPacket::Trap { int_context } => {
                out.extend_from_slice(&[hdr(op::TRAP, 0, 0), int_context & 0x0FFF_FFFF])
            }
            SdmaPacket::PollRegMem {
                addr,
                reference,
                mask,
                func,
                interval,
                retry_count,
            } => {
                aligned(*addr, 4)?;
                out.extend_from_slice(&[
                    hdr(op::POLL_REGMEM, 0, (*func as u32) << 28 | 1 << 31),
                    lo(*addr),
                    hi(*addr),
                    *reference,
                    *mask,
                    (interval & 0xFFFF) | (retry_count & 0xFFF) << 16,
                ]);
            }
            SdmaPacket::Atomic {
                addr,
                op: aop,
                src,
                cmp,
                loop_interval,
            } => {
                aligned(*addr, 8)?;
                out.extend_from_slice(&[
                    hdr(op::ATOMIC, 0, aop.bits() << 25),
                    lo(*addr),
                    hi(*addr),
                    lo(*src),
                    hi(*src),
                    lo(*cmp),
                    hi(*cmp),
                    loop_interval & 0x1FFF,
                ]);
            }
            SdmaPacket::Timestamp { addr } => {
                aligned(*addr, 8)?;
                out.extend_from_slice(&[hdr(op::TIMESTAMP, 2, 0), lo(*addr), hi(*addr)]);
            }
            SdmaPacket::Gcr {
                base,
                limit,
                control,
            } => {
                if !ver.is_v5_plus() {
                    return Err(EncodeError::Unsupported(ver));
                }
                // UNVERIFIED field packing (navi10_sdma_pkt_open.h GCR_REQ): base/limit in 128-byte
                // granules split across dwords, GCR_CONTROL bits 15:0 in DW2 and 18:16 in DW3.
                out.extend_from_slice(&[
                    hdr(op::GCR_REQ, 0, 0),
                    lo(*base) & !0x7F,
                    (hi(*base) & 0xFFFF) | (control & 0xFFFF) << 16,
                    (lo(*limit) & !0x7F) | (control >> 16) & 7,
                    hi(*limit) & 0xFFFF,
                ]);
            }
        }
        Ok(())
    }

    /// Decodes the packet at the start of `d`, returning it and its length in dwords. Total:
    /// any input gives a packet or an error, never a panic.
    pub fn decode(ver: SdmaVersion, d: &[u32]) -> Result<(SdmaPacket, usize), DecodeError> {
        let &h = d.first().ok_or(DecodeError::Empty)?;
        let (o, sub) = (h as u8, (h >> 8) as u8);
        let need = |n: usize| {
            if d.len() < n {
                Err(DecodeError::Truncated {
                    needed: n,
                    available: d.len(),
                })
            } else {
                Ok(())
            }
        };
        let p = match (o, sub) {
            (op::NOP, _) => {
                let n = ((h >> 16) & 0x3FFF) as usize;
                need(1 + n)?;
                return Ok((
                    SdmaPacket::Nop {
                        extra_dwords: n as u32,
                    },
                    1 + n,
                ));
            }
            (op::COPY, 0) => {
                need(7)?;
                (
                    SdmaPacket::CopyLinear {
                        bytes: u64::from(d[1] & 0x3FFF_FFFF) + 1,
                        src: join(d[3], d[4]),
                        dst: join(d[5], d[6]),
                    },
                    7,
                )
            }
            (op::CONSTANT_FILL, 0) => {
                need(5)?;
                (
                    SdmaPacket::ConstantFill {
                        dst: join(d[1], d[2]),
                        data: d[3],
                        bytes: u64::from(d[4] & 0x3FFF_FFFF) + 1,
                    },
                    5,
                )
            }
            (op::WRITE, 0) => {
                need(4)?;
                let n = (d[3] & 0xF_FFFF) as usize + 1;
                need(4 + n)?;
                (
                    SdmaPacket::Write {
                        dst: join(d[1], d[2]),
                        data: d[4..4 + n].to_vec(),
                    },
                    4 + n,
                )
            }
            (op::FENCE, _) => {
                need(4)?;
                (
                    SdmaPacket::Fence {
                        addr: join(d[1], d[2]),
                        data: d[3],
                        mtype_uncached: (h >> 16) & 7 == 3,
                    },
                    4,
                )
            }
            (op::TRAP, _) => {
                need(2)?;
                (
                    SdmaPacket::Trap {
                        int_context: d[1] & 0x0FFF_FFFF,
                    },
                    2,
                )
            }
            (op::POLL_REGMEM, _) => {
                need(6)?;
                let func = CompareFunction::from_bits(h >> 28).ok_or(DecodeError::Malformed)?;
                (
                    SdmaPacket::PollRegMem {
                        addr: join(d[1], d[2]),
                        reference: d[3],
                        mask: d[4],
                        func,
                        interval: d[5] & 0xFFFF,
                        retry_count: (d[5] >> 16) & 0xFFF,
                    },
                    6,
                )
            }
            (op::ATOMIC, _) => {
                need(8)?;
                (
                    SdmaPacket::Atomic {
                        addr: join(d[1], d[2]),
                        op: AtomicOp::from_bits(h >> 25),
                        src: join(d[3], d[4]),
                        cmp: join(d[5], d[6]),
                        loop_interval: d[7] & 0x1FFF,
                    },
                    8,
                )
            }
            (op::TIMESTAMP, 2) => {
                need(3)?;
                (
                    SdmaPacket::Timestamp {
                        addr: join(d[1], d[2]),
                    },
                    3,
                )
            }
            (op::GCR_REQ, _) if ver.is_v5_plus() => {
                need(5)?;
                (
                    SdmaPacket::Gcr {
                        base: u64::from(d[1] & !0x7F) | u64::from(d[2] & 0xFFFF) << 32,
                        limit: u64::from(d[3] & !0x7F) | u64::from(d[4] & 0xFFFF) << 32,
                        control: (d[2] >> 16) | (d[3] & 7) << 16,
                    },
                    5,
                )
            }
            (o, s) => return Err(DecodeError::UnknownOpcode { op: o, sub_op: s }),
        };
        Ok(p)
    }
}
