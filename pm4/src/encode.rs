//! Encoding [`Pm4Packet`]s to dwords.

use crate::error::EncodeError;
use crate::fields::{mem_space, sel};
use crate::header::{header, opcode, NOP_FILLER};
use crate::packet::{
    copy_data_align, copy_from_memory, copy_to_memory, release_mem_align, write_data_to_memory,
    NOP_MAX_PADDING, SET_SH_REG_MAX, WRITE_DATA_MAX,
};
use crate::regs::SH_REG_BASE;
use crate::{release_mem, GfxFamily, Pm4Packet};

/// `COHER_SIZE`, `COHER_SIZE_HI`, `COHER_BASE_LO/HI`, `POLL_INTERVAL` (DW2-DW6) of an
/// ACQUIRE_MEM over the whole address space, as tinygrad issues it.
pub(crate) const ACQUIRE_WHOLE_RANGE: [u32; 5] = [0xFFFF_FFFF, 0x00FF_FFFF, 0, 0, 0xA];

/// `COHER_CNTL` is bits 0-30 of DW1 (bit 31 selects the engine, always the ME here).
pub(crate) const COHER_CNTL_MASK: u32 = 0x7FFF_FFFF;

pub(crate) fn lo(v: u64) -> u32 {
    v as u32
}

pub(crate) fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}

/// The low dword of a memory address the packet keeps from bit `log2(align)` up (the bits below
/// are other fields, such as the endian swap, or must be zero).
pub(crate) fn addr_lo(addr: u64, align: u64) -> u32 {
    lo(addr & !(align - 1))
}

fn nop(padding: u32, out: &mut Vec<u32>) {
    // More padding than one NOP can count becomes several NOPs spanning the same dwords.
    let mut remaining = u64::from(padding) + 1;
    while remaining > 0 {
        if remaining == 1 {
            out.push(NOP_FILLER);
            return;
        }
        let body = (remaining - 1).min(u64::from(NOP_MAX_PADDING)) as u32;
        out.push(header(opcode::NOP, body));
        out.extend(std::iter::repeat_n(0, body as usize));
        remaining -= u64::from(body) + 1;
    }
}

impl Pm4Packet {
    /// Appends the packet's dwords for `family`.
    ///
    /// Total: a packet [`validate`](Pm4Packet::validate) rejects still encodes as well-formed
    /// packets. Fields are masked to their widths and address bits the packet does not keep are
    /// dropped; a NOP, SET_SH_REG or WRITE_DATA longer than one packet can count becomes several
    /// packets of the same kind with the same effect (WRITE_DATA addresses advance by 4 bytes per
    /// dword, or by one register for register destinations); a SET_SH_REG or WRITE_DATA without
    /// data emits nothing; gfx9's ACQUIRE_MEM has no `gcr_cntl` dword.
    pub fn encode(&self, family: GfxFamily, out: &mut Vec<u32>) {
        use opcode::*;
        match self {
            Pm4Packet::Nop { padding } => nop(*padding, out),
            Pm4Packet::SetShReg { reg, values } => {
                for (i, chunk) in values.chunks(SET_SH_REG_MAX).enumerate() {
                    let first = reg.wrapping_add((i * SET_SH_REG_MAX) as u32);
                    out.push(header(SET_SH_REG, 1 + chunk.len() as u32));
                    // REG_OFFSET is bits 0-15; the bits above select other behaviour.
                    out.push(first.wrapping_sub(SH_REG_BASE) & 0xFFFF);
                    out.extend_from_slice(chunk);
                }
            }
            Pm4Packet::DispatchDirect { dims, initiator } => out.extend_from_slice(&[
                header(DISPATCH_DIRECT, 4),
                dims[0],
                dims[1],
                dims[2],
                *initiator,
            ]),
            Pm4Packet::ReleaseMem {
                event_type,
                event_index,
                cache_action,
                dst_sel,
                int_sel,
                data_sel,
                addr,
                data,
                int_ctxid,
            } => out.extend_from_slice(&[
                header(RELEASE_MEM, 7),
                (event_type & 0x3F)
                    | (event_index & 0xF) << 8
                    | (cache_action & release_mem::CACHE_ACTION_MASK),
                (dst_sel & 3) << 16 | (int_sel & 7) << 24 | (data_sel & 7) << 29,
                addr_lo(*addr, release_mem_align(data_sel & 7)),
                hi(*addr),
                lo(*data),
                hi(*data),
                *int_ctxid,
            ]),
            Pm4Packet::AcquireMem {
                coher_cntl,
                gcr_cntl,
            } => {
                let gfx10 = family.is_gfx10_plus();
                out.push(header(ACQUIRE_MEM, if gfx10 { 7 } else { 6 }));
                out.push(coher_cntl & COHER_CNTL_MASK);
                out.extend_from_slice(&ACQUIRE_WHOLE_RANGE);
                if gfx10 {
                    out.push(*gcr_cntl);
                }
            }
            Pm4Packet::WaitRegMem {
                function,
                mem_space: space,
                addr,
                reference,
                mask,
                poll_interval,
            } => {
                let space = space & 3;
                let addr_lo = if space == mem_space::MEMORY {
                    addr_lo(*addr, 4)
                } else {
                    lo(*addr)
                };
                out.extend_from_slice(&[
                    header(WAIT_REG_MEM, 6),
                    // OPERATION (bits 6-7) 0: wait only; ENGINE (bit 8) 0: the ME.
                    function.bits() | space << 4,
                    addr_lo,
                    hi(*addr),
                    *reference,
                    *mask,
                    poll_interval & 0xFFFF,
                ]);
            }
            Pm4Packet::WriteData {
                dst_sel,
                confirm,
                addr,
                data,
            } => {
                let dst_sel = dst_sel & 0xF;
                let memory = write_data_to_memory(dst_sel);
                // WR_ONE_ADDR (bit 16) stays 0: consecutive dwords go to consecutive addresses.
                let control = dst_sel << 8 | u32::from(*confirm) << 20;
                let step: u64 = if dst_sel == sel::REGISTER { 1 } else { 4 };
                for (i, chunk) in data.chunks(WRITE_DATA_MAX).enumerate() {
                    let at = addr.wrapping_add((i * WRITE_DATA_MAX) as u64 * step);
                    out.push(header(WRITE_DATA, 3 + chunk.len() as u32));
                    out.push(control);
                    out.push(if memory { addr_lo(at, 4) } else { lo(at) });
                    out.push(hi(at));
                    out.extend_from_slice(chunk);
                }
            }
            Pm4Packet::IndirectBuffer {
                addr,
                size_dwords,
                chain,
            } => out.extend_from_slice(&[
                header(INDIRECT_BUFFER, 3),
                // Bits 0-1 of DW1 are the endian swap, not address bits.
                addr_lo(*addr, 4),
                hi(*addr),
                // VALID (bit 23) is always set: the CP skips an IB without it.
                (size_dwords & 0xF_FFFF) | u32::from(*chain) << 20 | 1 << 23,
            ]),
            Pm4Packet::EventWrite {
                event_type,
                event_index,
            } => out.extend_from_slice(&[
                header(EVENT_WRITE, 1),
                (event_type & 0x3F) | (event_index & 0xF) << 8,
            ]),
            Pm4Packet::PredExec {
                xcc_mask,
                exec_dwords,
            } => out.extend_from_slice(&[
                header(PRED_EXEC, 1),
                (xcc_mask & 0xFF) << 24 | (exec_dwords & 0x3FFF),
            ]),
            Pm4Packet::CopyData {
                src_sel,
                dst_sel,
                count64,
                confirm,
                src,
                dst,
            } => {
                let (src_sel, dst_sel) = (src_sel & 0xF, dst_sel & 0xF);
                let align = copy_data_align(*count64);
                let src_lo = if copy_from_memory(src_sel) {
                    addr_lo(*src, align)
                } else {
                    lo(*src)
                };
                let dst_lo = if copy_to_memory(dst_sel) {
                    addr_lo(*dst, align)
                } else {
                    lo(*dst)
                };
                out.extend_from_slice(&[
                    header(COPY_DATA, 5),
                    src_sel | dst_sel << 8 | u32::from(*count64) << 16 | u32::from(*confirm) << 20,
                    src_lo,
                    hi(*src),
                    dst_lo,
                    hi(*dst),
                ]);
            }
        }
    }

    /// [`validate`](Pm4Packet::validate)s the packet, then appends exactly one packet's dwords
    /// and returns how many. Nothing is appended on error.
    pub fn try_encode(&self, family: GfxFamily, out: &mut Vec<u32>) -> Result<usize, EncodeError> {
        self.validate(family)?;
        let before = out.len();
        self.encode(family, out);
        Ok(out.len() - before)
    }

    /// The number of dwords [`encode`](Pm4Packet::encode) appends on `family`.
    pub fn len_dwords(&self, family: GfxFamily) -> usize {
        // `n` data dwords split into packets of at most `max`, each with a header and `fixed`
        // leading body dwords.
        fn split(n: usize, max: usize, fixed: usize) -> usize {
            n + n.div_ceil(max) * (1 + fixed)
        }
        match self {
            Pm4Packet::Nop { padding } => *padding as usize + 1,
            Pm4Packet::SetShReg { values, .. } => split(values.len(), SET_SH_REG_MAX, 1),
            Pm4Packet::WriteData { data, .. } => split(data.len(), WRITE_DATA_MAX, 3),
            Pm4Packet::DispatchDirect { .. } => 5,
            Pm4Packet::ReleaseMem { .. } => 8,
            Pm4Packet::AcquireMem { .. } if family.is_gfx10_plus() => 8,
            Pm4Packet::AcquireMem { .. } => 7,
            Pm4Packet::WaitRegMem { .. } => 7,
            Pm4Packet::IndirectBuffer { .. } => 4,
            Pm4Packet::EventWrite { .. } | Pm4Packet::PredExec { .. } => 2,
            Pm4Packet::CopyData { .. } => 6,
        }
    }

    /// `packets` preceded by the PRED_EXEC that runs them only on the XCCs of `xcc_mask`, or
    /// `None` if they encode to more dwords than the predicate can count (0x3FFF).
    pub fn predicated(
        family: GfxFamily,
        xcc_mask: u32,
        packets: &[Pm4Packet],
    ) -> Option<Vec<Pm4Packet>> {
        let dwords: usize = packets.iter().map(|p| p.len_dwords(family)).sum();
        let exec_dwords = u32::try_from(dwords).ok().filter(|&n| n <= 0x3FFF)?;
        let mut out = Vec::with_capacity(packets.len() + 1);
        out.push(Pm4Packet::PredExec {
            xcc_mask,
            exec_dwords,
        });
        out.extend_from_slice(packets);
        Some(out)
    }
}
