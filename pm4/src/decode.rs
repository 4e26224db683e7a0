//! Decoding dwords to [`Pm4Packet`]s. The emulator interprets rings with this, so it is total:
//! every input gives a packet or an error, with no panics, overflow or out-of-bounds indexing.

use crate::encode::{addr_lo, COHER_CNTL_MASK};
use crate::error::DecodeError;
use crate::fields::mem_space;
use crate::header::{header_opcode, opcode, packet_dwords};
use crate::packet::{
    copy_data_align, copy_from_memory, copy_to_memory, release_mem_align, write_data_to_memory,
};
use crate::regs::{SH_REG_BASE, SH_REG_END};
use crate::{release_mem, CompareFunction, GfxFamily, Pm4Packet};

fn join(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | u64::from(hi) << 32
}

/// A memory address from its two dwords, without the low bits the packet does not keep.
fn mem_addr(lo: u32, hi: u32, align: u64) -> u64 {
    join(addr_lo(u64::from(lo), align), hi)
}

impl Pm4Packet {
    /// Decodes the packet at the start of `dwords`, returning it and the dwords it spans (header
    /// included). A one-dword NOP (any NOP with count 0x3FFF) and a type-2 packet decode as
    /// `Nop { padding: 0 }`.
    ///
    /// Fields are read as the encoder lays them out; bits the packet type does not model are
    /// ignored, except where they would change what the packet does (a reserved compare function,
    /// WAIT_REG_MEM's write-then-wait operation, WRITE_DATA to one address, SET_SH_REG outside
    /// the SH space), which give [`DecodeError::BadField`].
    pub fn decode(family: GfxFamily, dwords: &[u32]) -> Result<(Pm4Packet, usize), DecodeError> {
        use opcode::*;
        let &h = dwords.first().ok_or(DecodeError::Empty)?;
        let total = packet_dwords(h).ok_or(DecodeError::NotType3(h))?;
        if total == 1 {
            return Ok((Pm4Packet::Nop { padding: 0 }, 1));
        }
        let b = dwords.get(1..total).ok_or(DecodeError::Truncated {
            needed: total,
            available: dwords.len(),
        })?;
        let op = header_opcode(h);
        let bad_length = DecodeError::BadLength {
            opcode: op,
            dwords: b.len(),
        };
        let bad_field = |field, value| DecodeError::BadField {
            opcode: op,
            field,
            value,
        };
        let packet = match (op, b) {
            (NOP, _) => Pm4Packet::Nop {
                padding: b.len() as u32,
            },
            (SET_SH_REG, [offset, values @ ..]) if !values.is_empty() => {
                // REG_OFFSET is bits 0-15; bits above (index, VMID shift) change the meaning.
                if offset >> 16 != 0 {
                    return Err(bad_field("SET_SH_REG DW1 bits 16-31", *offset));
                }
                let end = u64::from(*offset) + values.len() as u64;
                if end > u64::from(SH_REG_END - SH_REG_BASE) {
                    return Err(bad_field("SET_SH_REG register offset", *offset));
                }
                Pm4Packet::SetShReg {
                    reg: SH_REG_BASE + offset,
                    values: values.to_vec(),
                }
            }
            (DISPATCH_DIRECT, &[x, y, z, initiator]) => Pm4Packet::DispatchDirect {
                dims: [x, y, z],
                initiator,
            },
            (RELEASE_MEM, &[dw1, dw2, addr_lo, addr_hi, data_lo, data_hi, int_ctxid]) => {
                let data_sel = (dw2 >> 29) & 7;
                Pm4Packet::ReleaseMem {
                    event_type: dw1 & 0x3F,
                    event_index: (dw1 >> 8) & 0xF,
                    cache_action: dw1 & release_mem::CACHE_ACTION_MASK,
                    dst_sel: (dw2 >> 16) & 3,
                    int_sel: (dw2 >> 24) & 7,
                    data_sel,
                    addr: mem_addr(addr_lo, addr_hi, release_mem_align(data_sel)),
                    data: join(data_lo, data_hi),
                    int_ctxid,
                }
            }
            // gfx10+ adds GCR_CNTL as DW7; the range and poll interval (DW2-6) are not kept.
            (ACQUIRE_MEM, &[coher, _, _, _, _, _, gcr]) if family.is_gfx10_plus() => {
                Pm4Packet::AcquireMem {
                    coher_cntl: coher & COHER_CNTL_MASK,
                    gcr_cntl: gcr,
                }
            }
            (ACQUIRE_MEM, &[coher, _, _, _, _, _]) if !family.is_gfx10_plus() => {
                Pm4Packet::AcquireMem {
                    coher_cntl: coher & COHER_CNTL_MASK,
                    gcr_cntl: 0,
                }
            }
            (WAIT_REG_MEM, &[control, addr_lo, addr_hi, reference, mask, poll]) => {
                let function =
                    CompareFunction::from_bits(control).ok_or_else(|| bad_field("function", 7))?;
                let operation = (control >> 6) & 3;
                if operation != 0 {
                    return Err(bad_field("WAIT_REG_MEM operation", operation));
                }
                let space = (control >> 4) & 3;
                Pm4Packet::WaitRegMem {
                    function,
                    mem_space: space,
                    addr: if space == mem_space::MEMORY {
                        mem_addr(addr_lo, addr_hi, 4)
                    } else {
                        join(addr_lo, addr_hi)
                    },
                    reference,
                    mask,
                    poll_interval: poll & 0xFFFF,
                }
            }
            (WRITE_DATA, [control, addr_lo, addr_hi, data @ ..]) if !data.is_empty() => {
                if control & (1 << 16) != 0 {
                    return Err(bad_field("WRITE_DATA WR_ONE_ADDR", 1));
                }
                let dst_sel = (control >> 8) & 0xF;
                Pm4Packet::WriteData {
                    dst_sel,
                    confirm: control & (1 << 20) != 0,
                    addr: if write_data_to_memory(dst_sel) {
                        mem_addr(*addr_lo, *addr_hi, 4)
                    } else {
                        join(*addr_lo, *addr_hi)
                    },
                    data: data.to_vec(),
                }
            }
            (INDIRECT_BUFFER, &[base_lo, base_hi, control]) => Pm4Packet::IndirectBuffer {
                addr: mem_addr(base_lo, base_hi, 4),
                size_dwords: control & 0xF_FFFF,
                chain: control & (1 << 20) != 0,
            },
            (PRED_EXEC, &[w]) => Pm4Packet::PredExec {
                xcc_mask: w >> 24,
                exec_dwords: w & 0x3FFF,
            },
            // The forms of EVENT_WRITE with an address are for graphics events.
            (EVENT_WRITE, &[event]) => Pm4Packet::EventWrite {
                event_type: event & 0x3F,
                event_index: (event >> 8) & 0xF,
            },
            (COPY_DATA, &[control, src_lo, src_hi, dst_lo, dst_hi]) => {
                let (src_sel, dst_sel) = (control & 0xF, (control >> 8) & 0xF);
                let count64 = control & (1 << 16) != 0;
                let align = copy_data_align(count64);
                Pm4Packet::CopyData {
                    src_sel,
                    dst_sel,
                    count64,
                    confirm: control & (1 << 20) != 0,
                    src: if copy_from_memory(src_sel) {
                        mem_addr(src_lo, src_hi, align)
                    } else {
                        join(src_lo, src_hi)
                    },
                    dst: if copy_to_memory(dst_sel) {
                        mem_addr(dst_lo, dst_hi, align)
                    } else {
                        join(dst_lo, dst_hi)
                    },
                }
            }
            (
                SET_SH_REG | DISPATCH_DIRECT | RELEASE_MEM | ACQUIRE_MEM | WAIT_REG_MEM
                | WRITE_DATA | INDIRECT_BUFFER | EVENT_WRITE | COPY_DATA,
                _,
            ) => return Err(bad_length),
            (other, _) => return Err(DecodeError::UnknownOpcode(other)),
        };
        Ok((packet, total))
    }
}
