//! The packets.

use crate::{DecodeError, GfxFamily};

/// Type-3 opcodes.
pub mod opcode {
    /// NOP.
    pub const NOP: u8 = 0x10;
    /// DISPATCH_DIRECT.
    pub const DISPATCH_DIRECT: u8 = 0x15;
    /// WRITE_DATA.
    pub const WRITE_DATA: u8 = 0x37;
    /// WAIT_REG_MEM.
    pub const WAIT_REG_MEM: u8 = 0x3C;
    /// INDIRECT_BUFFER.
    pub const INDIRECT_BUFFER: u8 = 0x3F;
    /// COPY_DATA.
    pub const COPY_DATA: u8 = 0x40;
    /// EVENT_WRITE.
    pub const EVENT_WRITE: u8 = 0x46;
    /// RELEASE_MEM.
    pub const RELEASE_MEM: u8 = 0x49;
    /// ACQUIRE_MEM.
    pub const ACQUIRE_MEM: u8 = 0x58;
    /// SET_SH_REG.
    pub const SET_SH_REG: u8 = 0x76;
}

/// The one-dword NOP used to pad rings (a type-3 NOP whose count field is all ones).
pub const NOP_FILLER: u32 = 0xFFFF_1002;

/// A type-3 header: `3 << 30 | count << 16 | opcode << 8 | shader_type(compute) << 1`, where the
/// count is the number of dwords after the header minus one.
pub const fn header(op: u8, body_dwords: u32) -> u32 {
    3 << 30 | ((body_dwords - 1) & 0x3FFF) << 16 | (op as u32) << 8 | 1 << 1
}

/// A comparison of WAIT_REG_MEM (and SDMA's POLL_REGMEM): `(value & mask) <op> reference`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareFunction {
    /// Always true.
    Always = 0,
    /// `<`.
    Less = 1,
    /// `<=`.
    LessEqual = 2,
    /// `==`.
    Equal = 3,
    /// `!=`.
    NotEqual = 4,
    /// `>=`.
    GreaterEqual = 5,
    /// `>`.
    Greater = 6,
}

impl CompareFunction {
    /// From the 3-bit field (7 is reserved and reads as `None`).
    pub fn from_bits(v: u32) -> Option<CompareFunction> {
        use CompareFunction::*;
        Some(match v & 7 {
            0 => Always,
            1 => Less,
            2 => LessEqual,
            3 => Equal,
            4 => NotEqual,
            5 => GreaterEqual,
            6 => Greater,
            _ => return None,
        })
    }

    /// Evaluates `(value & mask) <op> reference`.
    pub fn eval(self, value: u32, reference: u32, mask: u32) -> bool {
        let v = value & mask;
        match self {
            CompareFunction::Always => true,
            CompareFunction::Less => v < reference,
            CompareFunction::LessEqual => v <= reference,
            CompareFunction::Equal => v == reference,
            CompareFunction::NotEqual => v != reference,
            CompareFunction::GreaterEqual => v >= reference,
            CompareFunction::Greater => v > reference,
        }
    }
}

/// RELEASE_MEM `DATA_SEL` values.
pub mod data_sel {
    /// No data.
    pub const NONE: u32 = 0;
    /// 32-bit data.
    pub const DATA32: u32 = 1;
    /// 64-bit data.
    pub const DATA64: u32 = 2;
    /// The GPU clock counter (64-bit).
    pub const GPU_CLOCK: u32 = 3;
    /// The system clock counter (64-bit).
    pub const SYSTEM_CLOCK: u32 = 4;
}

/// RELEASE_MEM `INT_SEL` values.
pub mod int_sel {
    /// No interrupt.
    pub const NONE: u32 = 0;
    /// Interrupt only.
    pub const SEND_INT: u32 = 1;
    /// Interrupt after the write is confirmed.
    pub const SEND_INT_ON_CONFIRM: u32 = 2;
    /// Write only after confirmation, no interrupt.
    pub const SEND_DATA_ON_CONFIRM: u32 = 3;
}

/// End-of-pipe event types.
pub mod event {
    /// `CACHE_FLUSH_AND_INV_TS_EVENT`.
    pub const CACHE_FLUSH_AND_INV_TS: u32 = 0x14;
    /// `CS_DONE`.
    pub const CS_DONE: u32 = 0x2F;
    /// `CS_PARTIAL_FLUSH`.
    pub const CS_PARTIAL_FLUSH: u32 = 0x07;
}

/// A decoded or to-be-encoded packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pm4Packet {
    /// NOP with `padding` dwords after the header (the one-dword filler is `Nop { padding: 0 }`
    /// encoded as [`NOP_FILLER`]).
    Nop {
        /// Dwords after the header.
        padding: u32,
    },
    /// SET_SH_REG of consecutive registers from `reg`.
    SetShReg {
        /// First register (dword address, 0x2C00..0x3000).
        reg: u32,
        /// Values.
        values: Vec<u32>,
    },
    /// DISPATCH_DIRECT.
    DispatchDirect {
        /// Work-groups (or threads with USE_THREAD_DIMENSIONS) per dimension.
        dims: [u32; 3],
        /// DISPATCH_INITIATOR.
        initiator: u32,
    },
    /// RELEASE_MEM: at end of pipe, write data and/or raise an interrupt.
    ReleaseMem {
        /// EVENT_TYPE (bits 0-5).
        event_type: u32,
        /// EVENT_INDEX (bits 8-11).
        event_index: u32,
        /// Cache-action bits of DW1 (family-specific).
        cache_action: u32,
        /// DST_SEL (0 memory).
        dst_sel: u32,
        /// INT_SEL.
        int_sel: u32,
        /// DATA_SEL.
        data_sel: u32,
        /// Destination address.
        addr: u64,
        /// Data (low 32 bits for DATA32).
        data: u64,
        /// Interrupt context id (the KFD event id).
        int_ctxid: u32,
    },
    /// ACQUIRE_MEM over the whole address space.
    AcquireMem {
        /// gfx9: COHER_CNTL; gfx10+: 0.
        coher_cntl: u32,
        /// gfx10+: GCR_CNTL; gfx9: 0.
        gcr_cntl: u32,
    },
    /// WAIT_REG_MEM on memory.
    WaitRegMem {
        /// Comparison.
        function: CompareFunction,
        /// MEM_SPACE (1 = memory).
        mem_space: u32,
        /// Address (4-byte aligned).
        addr: u64,
        /// Reference value.
        reference: u32,
        /// Mask.
        mask: u32,
        /// Poll interval.
        poll_interval: u32,
    },
    /// WRITE_DATA to memory.
    WriteData {
        /// DST_SEL (5 = memory).
        dst_sel: u32,
        /// WR_CONFIRM.
        confirm: bool,
        /// Destination.
        addr: u64,
        /// Dwords to write.
        data: Vec<u32>,
    },
    /// INDIRECT_BUFFER: run `size_dwords` dwords at `addr`.
    IndirectBuffer {
        /// Buffer address (4-byte aligned).
        addr: u64,
        /// Size in dwords (20 bits).
        size_dwords: u32,
        /// CHAIN bit.
        chain: bool,
    },
    /// EVENT_WRITE.
    EventWrite {
        /// EVENT_TYPE.
        event_type: u32,
        /// EVENT_INDEX.
        event_index: u32,
    },
    /// COPY_DATA.
    CopyData {
        /// SRC_SEL (5 immediate, 9 GPU clock, 1 memory).
        src_sel: u32,
        /// DST_SEL (5 memory).
        dst_sel: u32,
        /// COUNT_SEL: 64-bit.
        count64: bool,
        /// WR_CONFIRM.
        confirm: bool,
        /// Source address or immediate value.
        src: u64,
        /// Destination address.
        dst: u64,
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

/// WRITE_DATA's DW1 for `dst_sel` and confirmation.
fn write_data_control(dst_sel: u32, confirm: bool) -> u32 {
    (dst_sel & 0xF) << 8 | u32::from(confirm) << 20
}

impl Pm4Packet {
    /// Appends the packet's dwords for `family`.
    pub fn encode(&self, family: GfxFamily, out: &mut Vec<u32>) {
        use opcode::*;
        match self {
            Pm4Packet::Nop { padding: 0 } => out.push(NOP_FILLER),
            Pm4Packet::Nop { padding } => {
                out.push(header(NOP, *padding));
                out.extend(std::iter::repeat_n(0, *padding as usize));
            }
            Pm4Packet::SetShReg { reg, values } => {
                out.push(header(SET_SH_REG, 1 + values.len() as u32));
                out.push(reg.wrapping_sub(crate::regs::SH_REG_BASE));
                out.extend_from_slice(values);
            }
            Pm4Packet::DispatchDirect { dims, initiator } => {
                out.extend_from_slice(&[
                    header(DISPATCH_DIRECT, 4),
                    dims[0],
                    dims[1],
                    dims[2],
                    *initiator,
                ]);
            }
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
            } => {
                out.extend_from_slice(&[
                    header(RELEASE_MEM, 7),
                    (event_type & 0x3F) | (event_index & 0xF) << 8 | cache_action,
                    (dst_sel & 3) << 16 | (int_sel & 7) << 24 | (data_sel & 7) << 29,
                    lo(*addr),
                    hi(*addr),
                    lo(*data),
                    hi(*data),
                    *int_ctxid,
                ]);
            }
            Pm4Packet::AcquireMem {
                coher_cntl,
                gcr_cntl,
            } => {
                if family.is_gfx10_plus() {
                    out.extend_from_slice(&[
                        header(ACQUIRE_MEM, 7),
                        0,
                        0xFFFF_FFFF,
                        0x00FF_FFFF,
                        0,
                        0,
                        0xA,
                        *gcr_cntl,
                    ]);
                } else {
                    out.extend_from_slice(&[
                        header(ACQUIRE_MEM, 6),
                        *coher_cntl,
                        0xFFFF_FFFF,
                        0x00FF_FFFF,
                        0,
                        0,
                        0xA,
                    ]);
                }
            }
            Pm4Packet::WaitRegMem {
                function,
                mem_space,
                addr,
                reference,
                mask,
                poll_interval,
            } => {
                out.extend_from_slice(&[
                    header(WAIT_REG_MEM, 6),
                    *function as u32 | (mem_space & 3) << 4,
                    lo(*addr),
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
                out.push(header(WRITE_DATA, 3 + data.len() as u32));
                out.push(write_data_control(*dst_sel, *confirm));
                out.push(lo(*addr));
                out.push(hi(*addr));
                out.extend_from_slice(data);
            }
            Pm4Packet::IndirectBuffer {
                addr,
                size_dwords,
                chain,
            } => {
                out.extend_from_slice(&[
                    header(INDIRECT_BUFFER, 3),
                    lo(*addr) & !3,
                    hi(*addr),
                    (size_dwords & 0xF_FFFF) | u32::from(*chain) << 20 | 1 << 23,
                ]);
            }
            Pm4Packet::EventWrite {
                event_type,
                event_index,
            } => {
                out.extend_from_slice(&[
                    header(EVENT_WRITE, 1),
                    (event_type & 0x3F) | (event_index & 0xF) << 8,
                ]);
            }
            Pm4Packet::CopyData {
                src_sel,
                dst_sel,
                count64,
                confirm,
                src,
                dst,
            } => {
                out.extend_from_slice(&[
                    header(COPY_DATA, 5),
                    (src_sel & 0xF)
                        | (dst_sel & 0xF) << 8
                        | u32::from(*count64) << 16
                        | u32::from(*confirm) << 20,
                    lo(*src),
                    hi(*src),
                    lo(*dst),
                    hi(*dst),
                ]);
            }
        }
    }

    /// Number of dwords the packet encodes to on `family`.
    pub fn len_dwords(&self, family: GfxFamily) -> usize {
        let mut v = Vec::new();
        self.encode(family, &mut v);
        v.len()
    }

    /// Decodes the packet at the start of `dwords`, returning it and the dwords it spans. Total:
    /// any input gives a packet or an error, never a panic.
    pub fn decode(family: GfxFamily, dwords: &[u32]) -> Result<(Pm4Packet, usize), DecodeError> {
        use opcode::*;
        let &h = dwords.first().ok_or(DecodeError::Empty)?;
        if h == NOP_FILLER || h == 0x8000_0000 {
            // One-dword NOP filler (type-3 with count 0x3FFF, or a type-2 packet).
            return Ok((Pm4Packet::Nop { padding: 0 }, 1));
        }
        if h >> 30 != 3 {
            return Err(DecodeError::NotType3(h));
        }
        let op = (h >> 8) as u8;
        let body_len = ((h >> 16) & 0x3FFF) as usize + 1;
        let total = body_len + 1;
        if dwords.len() < total {
            return Err(DecodeError::Truncated {
                needed: total,
                available: dwords.len(),
            });
        }
        let b = &dwords[1..total];
        let bad = || DecodeError::BadLength {
            opcode: op,
            dwords: body_len,
        };
        let exact = |n: usize| if body_len == n { Ok(()) } else { Err(bad()) };
        let p = match op {
            NOP => Pm4Packet::Nop {
                padding: body_len as u32,
            },
            SET_SH_REG => {
                if body_len < 2 {
                    return Err(bad());
                }
                Pm4Packet::SetShReg {
                    reg: crate::regs::SH_REG_BASE + b[0],
                    values: b[1..].to_vec(),
                }
            }
            DISPATCH_DIRECT => {
                exact(4)?;
                Pm4Packet::DispatchDirect {
                    dims: [b[0], b[1], b[2]],
                    initiator: b[3],
                }
            }
            RELEASE_MEM => {
                exact(7)?;
                Pm4Packet::ReleaseMem {
                    event_type: b[0] & 0x3F,
                    event_index: (b[0] >> 8) & 0xF,
                    cache_action: b[0] & !0xF3F,
                    dst_sel: (b[1] >> 16) & 3,
                    int_sel: (b[1] >> 24) & 7,
                    data_sel: (b[1] >> 29) & 7,
                    addr: join(b[2], b[3]),
                    data: join(b[4], b[5]),
                    int_ctxid: b[6],
                }
            }
            ACQUIRE_MEM => {
                if family.is_gfx10_plus() {
                    exact(7)?;
                    Pm4Packet::AcquireMem {
                        coher_cntl: b[0],
                        gcr_cntl: b[6],
                    }
                } else {
                    exact(6)?;
                    Pm4Packet::AcquireMem {
                        coher_cntl: b[0],
                        gcr_cntl: 0,
                    }
                }
            }
            WAIT_REG_MEM => {
                exact(6)?;
                let function = CompareFunction::from_bits(b[0]).ok_or(bad())?;
                Pm4Packet::WaitRegMem {
                    function,
                    mem_space: (b[0] >> 4) & 3,
                    addr: join(b[1], b[2]),
                    reference: b[3],
                    mask: b[4],
                    poll_interval: b[5] & 0xFFFF,
                }
            }
            WRITE_DATA => {
                if body_len < 4 {
                    return Err(bad());
                }
                Pm4Packet::WriteData {
                    dst_sel: (b[0] >> 8) & 0xF,
                    confirm: b[0] & (1 << 20) != 0,
                    addr: join(b[1], b[2]),
                    data: b[3..].to_vec(),
                }
            }
            INDIRECT_BUFFER => {
                exact(3)?;
                Pm4Packet::IndirectBuffer {
                    addr: join(b[0] & !3, b[1]),
                    size_dwords: b[2] & 0xF_FFFF,
                    chain: b[2] & (1 << 20) != 0,
                }
            }
            EVENT_WRITE => {
                // Some events carry an address; kfdrt only issues the one-dword form.
                if body_len < 1 {
                    return Err(bad());
                }
                Pm4Packet::EventWrite {
                    event_type: b[0] & 0x3F,
                    event_index: (b[0] >> 8) & 0xF,
                }
            }
            COPY_DATA => {
                exact(5)?;
                Pm4Packet::CopyData {
                    src_sel: b[0] & 0xF,
                    dst_sel: (b[0] >> 8) & 0xF,
                    count64: b[0] & (1 << 16) != 0,
                    confirm: b[0] & (1 << 20) != 0,
                    src: join(b[1], b[2]),
                    dst: join(b[3], b[4]),
                }
            }
            other => return Err(DecodeError::UnknownOpcode(other)),
        };
        Ok((p, total))
    }
}
