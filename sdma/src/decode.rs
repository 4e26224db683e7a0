//! The decoder: total over any dwords (the emulator interprets rings the runtime, or a bug,
//! filled). It gives a packet and its length, or says why not; it never panics, and its
//! allocation is bounded by the input (a WRITE is checked for length before its data is copied).
//!
//! Bits the packet type does not model are ignored where they do not change what the packet
//! does to memory (endian swap, TMZ, cache policy, VMID); where they would (a
//! register poll, a looping atomic, a byte-sized fill), the packet is refused with
//! [`DecodeError::BadField`] rather than executed wrongly.

use crate::fields::*;
use crate::{AtomicOp, CompareFunction, DecodeError, SdmaPacket, SdmaVersion};

fn join(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | u64::from(hi) << 32
}

/// The first `n` dwords of `d`, or `Truncated`.
fn take(d: &[u32], n: usize) -> Result<&[u32], DecodeError> {
    d.get(..n).ok_or(DecodeError::Truncated {
        needed: n,
        available: d.len(),
    })
}

fn bad(op: u8, field: &'static str, value: u32) -> DecodeError {
    DecodeError::BadField { op, field, value }
}

impl SdmaPacket {
    /// [`SdmaPacket::decode`] as the engine of one part reads it: a COPY_LINEAR or
    /// CONSTANT_FILL whose count needs more bits than the part's count field has (22 on most
    /// parts before SDMA 6, see [`SdmaVersion::max_copy_bytes`]) is refused with
    /// [`DecodeError::BadField`], since that engine would read a different count.
    pub fn decode_for_part(
        ver: SdmaVersion,
        gfx_target_version: u32,
        dwords: &[u32],
    ) -> Result<(SdmaPacket, usize), DecodeError> {
        let (p, n) = Self::decode(ver, dwords)?;
        // The raw "bytes - 1" field and the widest value the part's field holds.
        let (op, field, width) = match (&p, dwords) {
            (
                SdmaPacket::CopyLinear { .. } | SdmaPacket::CopyLinearBroadcast { .. },
                [_, count, ..],
            ) => (op::COPY, *count, ver.max_copy_bytes(gfx_target_version)),
            (SdmaPacket::ConstantFill { .. }, [_, _, _, _, count, ..]) => {
                let bits = if ver == SdmaVersion::V6 { 30 } else { 22 };
                (op::CONSTANT_FILL, *count, (1u64 << bits) - 1)
            }
            _ => return Ok((p, n)),
        };
        if u64::from(field & BYTE_COUNT_MASK) > width {
            return Err(bad(op, "count", field));
        }
        Ok((p, n))
    }

    /// Decodes the packet at the start of `dwords`, returning it and its length in dwords
    /// (at least 1). Total: any input gives a packet or an error, never a panic.
    ///
    /// GCR_REQ decodes on SDMA 5 and later only, with either sub-op (user queues write 1, the
    /// kernel's rings 0); it re-encodes with the user sub-op. A CONSTANT_FILL count is read as
    /// whole dwords (`(count >> 2) + 1`), so both Linux's `bytes - 1` and ROCr's `bytes - 4`
    /// read back as the bytes meant.
    /// LINEAR_SUB_WINDOW reads its z fields with the generation's width
    /// ([`SdmaVersion::sub_window_z_bits`]) and its cache policies on SDMA 6 only; an element
    /// size code above 4 or a base address that is not dword aligned is refused.
    pub fn decode(ver: SdmaVersion, dwords: &[u32]) -> Result<(SdmaPacket, usize), DecodeError> {
        let &h = dwords.first().ok_or(DecodeError::Empty)?;
        let (op, sub) = (h as u8, (h >> SUB_OP_SHIFT) as u8);
        let unknown = DecodeError::UnknownOpcode { op, sub_op: sub };
        match (op, sub) {
            (op::NOP, 0) => {
                let extra = (h >> NOP_COUNT_SHIFT) & NOP_COUNT_MASK;
                let n = 1 + extra as usize;
                take(dwords, n)?;
                Ok((
                    SdmaPacket::Nop {
                        extra_dwords: extra,
                    },
                    n,
                ))
            }
            (op::COPY, sub_op::COPY_LINEAR) if h & COPY_BROADCAST != 0 => {
                let d = take(dwords, 9)?;
                let p = SdmaPacket::CopyLinearBroadcast {
                    bytes: u64::from(d[1] & BYTE_COUNT_MASK) + 1,
                    src: join(d[3], d[4]),
                    dst1: join(d[5], d[6]),
                    dst2: join(d[7], d[8]),
                };
                Ok((p, 9))
            }
            (op::COPY, sub_op::COPY_LINEAR) => {
                let d = take(dwords, 7)?;
                let p = SdmaPacket::CopyLinear {
                    bytes: u64::from(d[1] & BYTE_COUNT_MASK) + 1,
                    src: join(d[3], d[4]),
                    dst: join(d[5], d[6]),
                };
                Ok((p, 7))
            }
            (op::COPY, sub_op::COPY_LINEAR_SUB_WINDOW) => {
                let c = crate::sub_window::decode(ver, dwords)?;
                Ok((SdmaPacket::CopyLinearSubWindow(c), SUB_WINDOW_DWORDS))
            }
            (op::CONSTANT_FILL, 0) => {
                let fill_size = h >> FILL_SIZE_SHIFT;
                if fill_size != FILL_SIZE_DWORD {
                    return Err(bad(op, "fill size", fill_size));
                }
                let d = take(dwords, 5)?;
                let dwords_filled = u64::from((d[4] & BYTE_COUNT_MASK) >> 2) + 1;
                let p = SdmaPacket::ConstantFill {
                    dst: join(d[1], d[2]),
                    data: d[3],
                    bytes: dwords_filled * 4,
                };
                Ok((p, 5))
            }
            (op::WRITE, sub_op::WRITE_LINEAR) => {
                let d = take(dwords, 4)?;
                let n = 4 + (d[3] & WRITE_COUNT_MASK) as usize + 1;
                let d = take(dwords, n)?;
                let p = SdmaPacket::Write {
                    dst: join(d[1], d[2]),
                    data: d[4..].to_vec(),
                };
                Ok((p, n))
            }
            (op::FENCE, 0) => {
                let d = take(dwords, 4)?;
                let mtype = (h >> FENCE_MTYPE_SHIFT) & FENCE_MTYPE_MASK;
                let p = SdmaPacket::Fence {
                    addr: join(d[1], d[2]),
                    data: d[3],
                    mtype_uncached: ver.has_fence_mtype() && mtype == FENCE_MTYPE_UC,
                };
                Ok((p, 4))
            }
            (op::TRAP, 0) => {
                let d = take(dwords, 2)?;
                let p = SdmaPacket::Trap {
                    int_context: d[1] & TRAP_INT_CONTEXT_MASK,
                };
                Ok((p, 2))
            }
            (op::POLL_REGMEM, 0) => {
                if h & POLL_MEM == 0 {
                    // Registers are not modelled: only the polls that flush the HDP decode.
                    let d = take(dwords, 6)?;
                    if d == HDP_FLUSH_DWORDS || h & POLL_HDP_FLUSH != 0 {
                        return Ok((SdmaPacket::HdpFlush, 6));
                    }
                    return Err(bad(op, "register poll", 1));
                }
                if h & POLL_HDP_FLUSH != 0 {
                    return Err(bad(op, "HDP flush of a memory poll", 1));
                }
                let func_bits = (h >> POLL_FUNC_SHIFT) & 7;
                let func =
                    CompareFunction::from_bits(func_bits).ok_or(bad(op, "function", func_bits))?;
                let d = take(dwords, 6)?;
                let p = SdmaPacket::PollRegMem {
                    addr: join(d[1], d[2]),
                    reference: d[3],
                    mask: d[4],
                    func,
                    interval: d[5] & POLL_INTERVAL_MASK,
                    retry_count: (d[5] >> POLL_RETRY_SHIFT) & POLL_RETRY_MASK,
                };
                Ok((p, 6))
            }
            (op::ATOMIC, 0) => {
                if h & ATOMIC_LOOP != 0 {
                    return Err(bad(op, "loop", 1));
                }
                let d = take(dwords, 8)?;
                let code = ((h >> ATOMIC_OP_SHIFT) & ATOMIC_OP_MASK) as u8;
                let p = SdmaPacket::Atomic {
                    addr: join(d[1], d[2]),
                    op: AtomicOp::from_code(code),
                    src: join(d[3], d[4]),
                    cmp: join(d[5], d[6]),
                    loop_interval: d[7] & ATOMIC_LOOP_INTERVAL_MASK,
                };
                Ok((p, 8))
            }
            (op::TIMESTAMP, sub_op::TIMESTAMP_GET_GLOBAL) => {
                let d = take(dwords, 3)?;
                let p = SdmaPacket::Timestamp {
                    addr: join(d[1], d[2]),
                };
                Ok((p, 3))
            }
            (op::GCR_REQ, sub_op::GCR_KERNEL | sub_op::GCR_USER) if ver.has_gcr() => {
                let d = take(dwords, 5)?;
                let p = SdmaPacket::Gcr {
                    base: join(d[1] & GCR_ADDR_LO_MASK, d[2] & GCR_ADDR_HI_MASK),
                    limit: join(d[3] & GCR_ADDR_LO_MASK, d[4] & GCR_ADDR_HI_MASK),
                    control: d[2] >> GCR_CONTROL_LO_SHIFT | (d[3] & GCR_CONTROL_HI_MASK) << 16,
                };
                Ok((p, 5))
            }
            _ => Err(unknown),
        }
    }
}
