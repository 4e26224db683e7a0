//! The type-3 packet header, opcodes and packet framing.
//!
//! A type-3 header is `3 << 30 | count << 16 | opcode << 8 | shader_type << 1 | predicate`, where
//! `count` (14 bits) is the number of dwords after the header minus one. kfdrt always sets the
//! shader-type bit (compute).

/// Type-3 opcodes of the packets this crate encodes.
pub mod opcode {
    /// NOP.
    pub const NOP: u8 = 0x10;
    /// DISPATCH_DIRECT.
    pub const DISPATCH_DIRECT: u8 = 0x15;
    /// PRED_EXEC.
    pub const PRED_EXEC: u8 = 0x23;
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

/// The one-dword NOP that pads rings: a compute type-3 NOP whose count field is all ones, which
/// the CP treats as a packet of exactly one dword (Linux pads compute rings with the same NOP
/// without the shader-type bit, 0xFFFF1000).
pub const NOP_FILLER: u32 = 0xFFFF_1002;

/// The type-2 packet, an older one-dword filler the CP still skips.
pub const TYPE2_FILLER: u32 = 0x8000_0000;

/// The largest count field: `count` is 14 bits.
pub(crate) const MAX_COUNT: u32 = 0x3FFF;

/// The most dwords a type-3 packet can carry after its header (`count` 0x3FFF).
pub const MAX_BODY_DWORDS: u32 = MAX_COUNT + 1;

/// A compute type-3 header for `op` followed by `body_dwords` dwords:
/// `3 << 30 | (body_dwords - 1) << 16 | op << 8 | 1 << 1`.
///
/// `body_dwords` must be `1..=`[`MAX_BODY_DWORDS`]; outside that range the count wraps modulo
/// 0x4000 (as the 14-bit field would) rather than panicking.
pub const fn header(op: u8, body_dwords: u32) -> u32 {
    3 << 30 | (body_dwords.wrapping_sub(1) & MAX_COUNT) << 16 | (op as u32) << 8 | 1 << 1
}

/// The opcode of a type-3 header.
pub const fn header_opcode(header: u32) -> u8 {
    (header >> 8) as u8
}

/// The length in dwords (header included) of the packet that starts with `header`, as the CP
/// frames it: 1 for a one-dword NOP (any type-3 NOP with count 0x3FFF) or a type-2 packet,
/// `count + 2` for any other type-3 packet, `None` for type-0 and type-1 headers, which compute
/// queues do not take.
pub const fn packet_dwords(header: u32) -> Option<usize> {
    match header >> 30 {
        2 => Some(1),
        3 => {
            let count = (header >> 16) & MAX_COUNT;
            if header_opcode(header) == opcode::NOP && count == MAX_COUNT {
                Some(1)
            } else {
                Some(count as usize + 2)
            }
        }
        _ => None,
    }
}
