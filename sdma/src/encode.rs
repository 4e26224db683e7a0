//! The encoder: [`SdmaPacket::validate`] checks every field, then the packet is written out
//! with nothing masked away (a value that would not fit is an error, not a silent truncation).

use crate::check::{aligned, fits, length, no_wrap};
use crate::fields::*;
use crate::{EncodeError, SdmaPacket, SdmaVersion};

fn lo(v: u64) -> u32 {
    v as u32
}

fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}

impl SdmaPacket {
    /// The packet's name as the hardware documentation spells it.
    pub fn name(&self) -> &'static str {
        match self {
            SdmaPacket::Nop { .. } => "NOP",
            SdmaPacket::CopyLinear { .. } => "COPY_LINEAR",
            SdmaPacket::CopyLinearBroadcast { .. } => "COPY_LINEAR (broadcast)",
            SdmaPacket::CopyLinearSubWindow(_) => crate::sub_window::NAME,
            SdmaPacket::ConstantFill { .. } => "CONSTANT_FILL",
            SdmaPacket::Write { .. } => "WRITE_LINEAR",
            SdmaPacket::Fence { .. } => "FENCE",
            SdmaPacket::Trap { .. } => "TRAP",
            SdmaPacket::PollRegMem { .. } => "POLL_REGMEM",
            SdmaPacket::HdpFlush => "POLL_REGMEM (HDP flush)",
            SdmaPacket::Atomic { .. } => "ATOMIC",
            SdmaPacket::Timestamp { .. } => "TIMESTAMP",
            SdmaPacket::Gcr { .. } => "GCR_REQ",
        }
    }

    /// Checks that the packet encodes as one packet on `ver` for the part `gfx_target_version`
    /// (the part decides the copy limit, see [`SdmaVersion::max_copy_bytes`]).
    pub fn validate(&self, ver: SdmaVersion, gfx_target_version: u32) -> Result<(), EncodeError> {
        let name = self.name();
        match self {
            SdmaPacket::Nop { extra_dwords } => fits(
                name,
                "count",
                u64::from(*extra_dwords),
                u64::from(NOP_COUNT_MASK),
            ),
            SdmaPacket::CopyLinear { src, dst, bytes } => {
                length(name, *bytes, ver.max_copy_bytes(gfx_target_version))?;
                no_wrap(name, *src, *bytes)?;
                no_wrap(name, *dst, *bytes)
            }
            SdmaPacket::CopyLinearBroadcast {
                src,
                dst1,
                dst2,
                bytes,
            } => {
                length(name, *bytes, ver.max_copy_bytes(gfx_target_version))?;
                no_wrap(name, *src, *bytes)?;
                no_wrap(name, *dst1, *bytes)?;
                no_wrap(name, *dst2, *bytes)
            }
            SdmaPacket::CopyLinearSubWindow(c) => crate::sub_window::validate(c, ver),
            SdmaPacket::ConstantFill { dst, bytes, .. } => {
                aligned(name, *dst, 4)?;
                if bytes % 4 != 0 {
                    return Err(EncodeError::NotDwords {
                        packet: name,
                        bytes: *bytes,
                    });
                }
                length(name, *bytes, ver.max_fill_bytes(gfx_target_version))?;
                no_wrap(name, *dst, *bytes)
            }
            SdmaPacket::Write { dst, data } => {
                aligned(name, *dst, 4)?;
                let max_dwords = u64::from(WRITE_COUNT_MASK) + 1;
                // usize -> u64 never truncates on the 32- and 64-bit targets Rust supports.
                let bytes = data.len() as u64 * 4;
                length(name, bytes, max_dwords * 4)?;
                no_wrap(name, *dst, bytes)
            }
            SdmaPacket::Fence { addr, .. } => aligned(name, *addr, 4),
            SdmaPacket::Trap { int_context } => fits(
                name,
                "int_context",
                u64::from(*int_context),
                u64::from(TRAP_INT_CONTEXT_MASK),
            ),
            SdmaPacket::PollRegMem {
                addr,
                interval,
                retry_count,
                ..
            } => {
                aligned(name, *addr, 4)?;
                fits(
                    name,
                    "interval",
                    u64::from(*interval),
                    u64::from(POLL_INTERVAL_MASK),
                )?;
                fits(
                    name,
                    "retry_count",
                    u64::from(*retry_count),
                    u64::from(POLL_RETRY_MASK),
                )
            }
            SdmaPacket::Atomic {
                addr,
                op,
                loop_interval,
                ..
            } => {
                aligned(name, *addr, 8)?;
                fits(
                    name,
                    "operation",
                    u64::from(op.code()),
                    u64::from(ATOMIC_OP_MASK),
                )?;
                fits(
                    name,
                    "loop_interval",
                    u64::from(*loop_interval),
                    u64::from(ATOMIC_LOOP_INTERVAL_MASK),
                )
            }
            SdmaPacket::Timestamp { addr } => aligned(name, *addr, 8),
            SdmaPacket::HdpFlush => Ok(()),
            SdmaPacket::Gcr {
                base,
                limit,
                control,
            } => {
                if !ver.has_gcr() {
                    return Err(EncodeError::Unsupported {
                        packet: name,
                        version: ver,
                    });
                }
                for (field, addr) in [("base", *base), ("limit", *limit)] {
                    aligned(name, addr, GCR_ADDR_ALIGN)?;
                    fits(name, field, addr, GCR_ADDR_MAX)?;
                }
                fits(
                    name,
                    "control",
                    u64::from(*control),
                    (1 << gcr_control::BITS) - 1,
                )
            }
        }
    }

    /// Appends the packet's dwords to `out` after [`validate`](SdmaPacket::validate); on an
    /// error nothing is appended.
    pub fn encode(
        &self,
        ver: SdmaVersion,
        gfx_target_version: u32,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        self.validate(ver, gfx_target_version)?;
        out.reserve(self.encoded_dwords());
        // Past `validate`, every field fits: the casts below drop only bits known to be zero.
        match self {
            SdmaPacket::Nop { extra_dwords } => {
                out.push(header(op::NOP, 0, extra_dwords << NOP_COUNT_SHIFT));
                out.extend(std::iter::repeat_n(0, *extra_dwords as usize));
            }
            SdmaPacket::CopyLinear { src, dst, bytes } => out.extend_from_slice(&[
                header(op::COPY, sub_op::COPY_LINEAR, 0),
                (bytes - 1) as u32,
                0, // DW2: no endian swap.
                lo(*src),
                hi(*src),
                lo(*dst),
                hi(*dst),
            ]),
            SdmaPacket::CopyLinearBroadcast {
                src,
                dst1,
                dst2,
                bytes,
            } => out.extend_from_slice(&[
                header(op::COPY, sub_op::COPY_LINEAR, COPY_BROADCAST),
                (bytes - 1) as u32,
                0, // DW2: no endian swap.
                lo(*src),
                hi(*src),
                lo(*dst1),
                hi(*dst1),
                lo(*dst2),
                hi(*dst2),
            ]),
            SdmaPacket::CopyLinearSubWindow(c) => crate::sub_window::encode(c, out),
            SdmaPacket::ConstantFill { dst, data, bytes } => out.extend_from_slice(&[
                header(op::CONSTANT_FILL, 0, FILL_SIZE_DWORD << FILL_SIZE_SHIFT),
                lo(*dst),
                hi(*dst),
                *data,
                // In bytes even though the engine fills dwords (Linux and Mesa write bytes - 1).
                (bytes - 1) as u32,
            ]),
            SdmaPacket::Write { dst, data } => {
                out.extend_from_slice(&[
                    header(op::WRITE, sub_op::WRITE_LINEAR, 0),
                    lo(*dst),
                    hi(*dst),
                    (data.len() - 1) as u32,
                ]);
                out.extend_from_slice(data);
            }
            SdmaPacket::Fence {
                addr,
                data,
                mtype_uncached,
            } => {
                let mtype = if *mtype_uncached && ver.has_fence_mtype() {
                    FENCE_MTYPE_UC << FENCE_MTYPE_SHIFT
                } else {
                    0
                };
                out.extend_from_slice(&[header(op::FENCE, 0, mtype), lo(*addr), hi(*addr), *data]);
            }
            SdmaPacket::Trap { int_context } => {
                out.extend_from_slice(&[header(op::TRAP, 0, 0), *int_context]);
            }
            SdmaPacket::PollRegMem {
                addr,
                reference,
                mask,
                func,
                interval,
                retry_count,
            } => out.extend_from_slice(&[
                header(
                    op::POLL_REGMEM,
                    0,
                    func.bits() << POLL_FUNC_SHIFT | POLL_MEM,
                ),
                lo(*addr),
                hi(*addr),
                *reference,
                *mask,
                interval | retry_count << POLL_RETRY_SHIFT,
            ]),
            SdmaPacket::Atomic {
                addr,
                op: operation,
                src,
                cmp,
                loop_interval,
            } => out.extend_from_slice(&[
                header(
                    op::ATOMIC,
                    0,
                    u32::from(operation.code()) << ATOMIC_OP_SHIFT,
                ),
                lo(*addr),
                hi(*addr),
                lo(*src),
                hi(*src),
                lo(*cmp),
                hi(*cmp),
                *loop_interval,
            ]),
            SdmaPacket::HdpFlush => out.extend_from_slice(&HDP_FLUSH_DWORDS),
            SdmaPacket::Timestamp { addr } => out.extend_from_slice(&[
                header(op::TIMESTAMP, sub_op::TIMESTAMP_GET_GLOBAL, 0),
                lo(*addr),
                hi(*addr),
            ]),
            SdmaPacket::Gcr {
                base,
                limit,
                control,
            } => out.extend_from_slice(&[
                header(op::GCR_REQ, sub_op::GCR_USER, 0),
                lo(*base),
                hi(*base) | (control & 0xFFFF) << GCR_CONTROL_LO_SHIFT,
                lo(*limit) | control >> 16,
                hi(*limit), // VMID (bits 24-27) 0: the queue's own.
            ]),
        }
        Ok(())
    }
}
