//! [`Pm4Packet`]: the typed packets, and the check that a packet encodes as exactly one packet.

use crate::error::EncodeError;
use crate::fields::{data_sel, mem_space, release_mem, sel};
use crate::header::MAX_BODY_DWORDS;
use crate::regs::{SH_REG_BASE, SH_REG_END};
use crate::{CompareFunction, GfxFamily};

/// A PM4 compute packet. Field values are raw hardware field values (see the constants in
/// [`event`](crate::event), [`data_sel`](crate::data_sel), [`sel`](crate::sel), ...);
/// [`Pm4Packet::validate`] says whether they fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pm4Packet {
    /// NOP with `padding` ignored dwords after the header. `Nop { padding: 0 }` is the one-dword
    /// filler [`NOP_FILLER`](crate::NOP_FILLER).
    Nop {
        /// Dwords after the header (at most 0x3FFF: a count of 0x3FFF means the filler).
        padding: u32,
    },
    /// SET_SH_REG: `values` into consecutive SH registers from `reg`.
    SetShReg {
        /// First register (dword address, 0x2C00..0x3000; see [`regs`](crate::regs)).
        reg: u32,
        /// Values, one per register.
        values: Vec<u32>,
    },
    /// DISPATCH_DIRECT: launch the grid the SH registers describe.
    DispatchDirect {
        /// Work-groups per dimension (threads with `USE_THREAD_DIMENSIONS`).
        dims: [u32; 3],
        /// `COMPUTE_DISPATCH_INITIATOR` (see [`regs::initiator`](crate::regs::initiator)).
        initiator: u32,
    },
    /// RELEASE_MEM: once earlier work reaches the event, act on caches, write data and/or raise
    /// an interrupt.
    ReleaseMem {
        /// `EVENT_TYPE` (6 bits), e.g. [`event::CACHE_FLUSH_AND_INV_TS`](crate::event).
        event_type: u32,
        /// `EVENT_INDEX` (4 bits), e.g. [`event_index::END_OF_PIPE`](crate::event_index).
        event_index: u32,
        /// DW1 bits 12-31: cache actions, cache policy, EXEC (family-specific; see
        /// [`release_mem`](crate::release_mem)).
        cache_action: u32,
        /// `DST_SEL` (2 bits): 0 memory controller, 1 L2.
        dst_sel: u32,
        /// `INT_SEL` (3 bits, [`int_sel`](crate::int_sel)).
        int_sel: u32,
        /// `DATA_SEL` (3 bits, [`data_sel`](crate::data_sel)).
        data_sel: u32,
        /// Destination (4-byte aligned; 8 for 64-bit data).
        addr: u64,
        /// Data (only the low 32 bits are written with `DATA32`).
        data: u64,
        /// Interrupt context id (the KFD event id when signalling an event).
        int_ctxid: u32,
    },
    /// ACQUIRE_MEM over the whole address space (size 0xFF_FFFF_FFFF_FFFF, base 0, poll 0xA).
    /// The decoder accepts any range and poll interval and drops them.
    AcquireMem {
        /// DW1 `COHER_CNTL`, bits 0-30 ([`acquire_mem::coher_cntl`](crate::acquire_mem) on gfx9;
        /// Linux and kfdtest leave it 0 on gfx10+).
        coher_cntl: u32,
        /// gfx10+ DW7 `GCR_CNTL` ([`acquire_mem::gcr_cntl`](crate::acquire_mem)); gfx9's form has
        /// no such dword, so it must be 0 there.
        gcr_cntl: u32,
    },
    /// WAIT_REG_MEM: wait until `(*addr & mask) <function> reference`.
    WaitRegMem {
        /// The comparison.
        function: CompareFunction,
        /// `MEM_SPACE` (2 bits, [`mem_space`](crate::mem_space)): 0 register, 1 memory.
        mem_space: u32,
        /// Address (4-byte aligned memory address, or a register offset).
        addr: u64,
        /// Reference value.
        reference: u32,
        /// Mask applied to the polled value.
        mask: u32,
        /// Poll interval (16 bits).
        poll_interval: u32,
    },
    /// WRITE_DATA: write `data` to consecutive dwords from `addr`.
    WriteData {
        /// `DST_SEL` (4 bits, [`sel`](crate::sel); 5 = memory).
        dst_sel: u32,
        /// `WR_CONFIRM`: wait for the write to complete before the next packet.
        confirm: bool,
        /// Destination (4-byte aligned for memory destinations).
        addr: u64,
        /// Dwords to write (at least one).
        data: Vec<u32>,
    },
    /// INDIRECT_BUFFER: run `size_dwords` dwords of packets at `addr`.
    IndirectBuffer {
        /// Buffer address (4-byte aligned).
        addr: u64,
        /// Size in dwords (20 bits).
        size_dwords: u32,
        /// `CHAIN`: the buffer replaces, rather than returns to, the current one.
        chain: bool,
    },
    /// EVENT_WRITE of an event without data (e.g. `CS_PARTIAL_FLUSH`).
    EventWrite {
        /// `EVENT_TYPE` (6 bits).
        event_type: u32,
        /// `EVENT_INDEX` (4 bits).
        event_index: u32,
    },
    /// PRED_EXEC: the next `exec_dwords` dwords run only on the XCCs whose bit is set in
    /// `xcc_mask` (`VIRTUAL_XCC_ID_SELECT`, bits 24-31 of DW1 in Linux's `soc15d.h`). Every XCC
    /// of a multi-XCC GPU (MI300) runs a compute queue's stream; this is how one XCC gets
    /// values of its own, such as its share of the scratch. [`Pm4Packet::predicated`] builds it.
    PredExec {
        /// Virtual XCC ids that run the predicated dwords (8 bits).
        xcc_mask: u32,
        /// Dwords after this packet that the predicate covers (14 bits).
        exec_dwords: u32,
    },
    /// COPY_DATA: copy 32 or 64 bits from a source to a destination.
    CopyData {
        /// `SRC_SEL` (4 bits, [`sel`](crate::sel)): 1 memory, 5 immediate, 9 GPU clock, ...
        src_sel: u32,
        /// `DST_SEL` (4 bits): 5 memory, ...
        dst_sel: u32,
        /// `COUNT_SEL`: copy 64 bits instead of 32.
        count64: bool,
        /// `WR_CONFIRM`.
        confirm: bool,
        /// Source address (4-byte aligned in memory, 8 with `count64`), or the immediate value.
        src: u64,
        /// Destination address (aligned as `src`).
        dst: u64,
    },
}

/// Most data dwords of one WRITE_DATA (the body also holds control and address).
pub(crate) const WRITE_DATA_MAX: usize = MAX_BODY_DWORDS as usize - 3;
/// Most values of one SET_SH_REG (the body also holds the register offset).
pub(crate) const SET_SH_REG_MAX: usize = MAX_BODY_DWORDS as usize - 1;
/// Most padding dwords of one NOP: a count of 0x3FFF would make it the one-dword filler.
pub(crate) const NOP_MAX_PADDING: u32 = MAX_BODY_DWORDS - 1;

/// Whether a WRITE_DATA destination select is memory (a byte address whose bits 0-1 the packet
/// does not keep) rather than a register or GDS offset.
pub(crate) fn write_data_to_memory(dst_sel: u32) -> bool {
    matches!(dst_sel, sel::MEMORY_SYNC | sel::TC_L2 | sel::MEMORY)
}

/// Whether a COPY_DATA source select reads memory.
pub(crate) fn copy_from_memory(src_sel: u32) -> bool {
    matches!(src_sel, sel::MEMORY_SYNC | sel::TC_L2)
}

/// Whether a COPY_DATA destination select writes memory.
pub(crate) fn copy_to_memory(dst_sel: u32) -> bool {
    matches!(dst_sel, sel::TC_L2 | sel::MEMORY)
}

/// Alignment RELEASE_MEM keeps for `data_sel`: 64-bit values go to 8-byte aligned addresses.
pub(crate) fn release_mem_align(dsel: u32) -> u64 {
    if matches!(dsel, data_sel::NONE | data_sel::DATA32) {
        4
    } else {
        8
    }
}

/// Alignment COPY_DATA keeps for memory addresses.
pub(crate) fn copy_data_align(count64: bool) -> u64 {
    if count64 {
        8
    } else {
        4
    }
}

fn fits(field: &'static str, value: u32, bits: u32) -> Result<(), EncodeError> {
    if u64::from(value) >> bits == 0 {
        Ok(())
    } else {
        Err(EncodeError::FieldOverflow {
            field,
            value: u64::from(value),
            bits,
        })
    }
}

fn aligned(field: &'static str, addr: u64, align: u64) -> Result<(), EncodeError> {
    if addr % align == 0 {
        Ok(())
    } else {
        Err(EncodeError::Misaligned { field, addr, align })
    }
}

fn length(what: &'static str, dwords: usize, min: usize, max: usize) -> Result<(), EncodeError> {
    if (min..=max).contains(&dwords) {
        Ok(())
    } else {
        Err(EncodeError::BadLength {
            what,
            dwords,
            min,
            max,
        })
    }
}

impl Pm4Packet {
    /// Checks that every field fits its bits, addresses have the alignment the packet keeps and
    /// lengths fit one packet. Then [`encode`](Pm4Packet::encode) emits exactly one packet and
    /// [`decode`](Pm4Packet::decode) of it gives `self` back.
    pub fn validate(&self, family: GfxFamily) -> Result<(), EncodeError> {
        match self {
            Pm4Packet::Nop { padding } => length(
                "NOP padding",
                *padding as usize,
                0,
                NOP_MAX_PADDING as usize,
            ),
            Pm4Packet::SetShReg { reg, values } => {
                length("SET_SH_REG values", values.len(), 1, SET_SH_REG_MAX)?;
                let end = u64::from(*reg) + values.len() as u64;
                if *reg < SH_REG_BASE || end > u64::from(SH_REG_END) {
                    return Err(EncodeError::RegisterOutOfRange { first: *reg, end });
                }
                Ok(())
            }
            Pm4Packet::DispatchDirect { .. } => Ok(()),
            Pm4Packet::ReleaseMem {
                event_type,
                event_index,
                cache_action,
                dst_sel,
                int_sel,
                data_sel,
                addr,
                ..
            } => {
                fits("event_type", *event_type, 6)?;
                fits("event_index", *event_index, 4)?;
                if cache_action & !release_mem::CACHE_ACTION_MASK != 0 {
                    return Err(EncodeError::FieldOverflow {
                        field: "cache_action (bits 12-31)",
                        value: u64::from(*cache_action),
                        bits: 32,
                    });
                }
                fits("dst_sel", *dst_sel, 2)?;
                fits("int_sel", *int_sel, 3)?;
                fits("data_sel", *data_sel, 3)?;
                aligned("addr", *addr, release_mem_align(*data_sel))
            }
            Pm4Packet::AcquireMem {
                coher_cntl,
                gcr_cntl,
            } => {
                // DW1 bit 31 is ENGINE_SEL, not a cache action.
                fits("coher_cntl", *coher_cntl, 31)?;
                if !family.is_gfx10_plus() && *gcr_cntl != 0 {
                    return Err(EncodeError::NotOnFamily {
                        field: "gcr_cntl",
                        family,
                    });
                }
                Ok(())
            }
            Pm4Packet::WaitRegMem {
                mem_space: space,
                addr,
                poll_interval,
                ..
            } => {
                fits("mem_space", *space, 2)?;
                fits("poll_interval", *poll_interval, 16)?;
                if *space == mem_space::MEMORY {
                    aligned("addr", *addr, 4)?;
                }
                Ok(())
            }
            Pm4Packet::WriteData {
                dst_sel,
                addr,
                data,
                ..
            } => {
                fits("dst_sel", *dst_sel, 4)?;
                length("WRITE_DATA data", data.len(), 1, WRITE_DATA_MAX)?;
                if write_data_to_memory(*dst_sel) {
                    aligned("addr", *addr, 4)?;
                }
                Ok(())
            }
            Pm4Packet::IndirectBuffer {
                addr, size_dwords, ..
            } => {
                aligned("addr", *addr, 4)?;
                fits("size_dwords", *size_dwords, 20)
            }
            Pm4Packet::EventWrite {
                event_type,
                event_index,
            } => {
                fits("event_type", *event_type, 6)?;
                fits("event_index", *event_index, 4)
            }
            Pm4Packet::PredExec {
                xcc_mask,
                exec_dwords,
            } => {
                fits("xcc_mask", *xcc_mask, 8)?;
                fits("exec_dwords", *exec_dwords, 14)
            }
            Pm4Packet::CopyData {
                src_sel,
                dst_sel,
                count64,
                src,
                dst,
                ..
            } => {
                fits("src_sel", *src_sel, 4)?;
                fits("dst_sel", *dst_sel, 4)?;
                let align = copy_data_align(*count64);
                if copy_from_memory(*src_sel) {
                    aligned("src", *src, align)?;
                }
                if copy_to_memory(*dst_sel) {
                    aligned("dst", *dst, align)?;
                }
                Ok(())
            }
        }
    }
}
