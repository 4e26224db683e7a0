//! Errors of the packet encoder and decoder.

use crate::GfxFamily;

/// Why dwords do not decode as a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// No dwords.
    #[error("no dwords")]
    Empty,
    /// A type-0 or type-1 header, which compute queues do not take.
    #[error("not a type-3 packet header: {0:#010x}")]
    NotType3(u32),
    /// A type-3 opcode the decoder does not know.
    #[error("unknown PM4 opcode {0:#04x}")]
    UnknownOpcode(u8),
    /// The header's count does not fit the opcode's layout.
    #[error("PM4 opcode {opcode:#04x} with a body of {dwords} dwords")]
    BadLength {
        /// The opcode.
        opcode: u8,
        /// Body dwords the header announced.
        dwords: usize,
    },
    /// The packet runs past the end of the input.
    #[error("truncated packet: needs {needed} dwords, {available} available")]
    Truncated {
        /// Dwords the header announces (header included).
        needed: usize,
        /// Dwords present.
        available: usize,
    },
    /// A field holds a reserved value, or one [`Pm4Packet`](crate::Pm4Packet) cannot represent
    /// (so executing the decoded packet would not do what the dwords say).
    #[error("PM4 opcode {opcode:#04x}: unsupported {field} {value:#x}")]
    BadField {
        /// The opcode.
        opcode: u8,
        /// The field's name.
        field: &'static str,
        /// Its value.
        value: u32,
    },
}

/// Why a packet cannot be encoded as exactly one packet of its kind
/// ([`Pm4Packet::validate`](crate::Pm4Packet::validate)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A value does not fit its field (it would be truncated).
    #[error("{field} = {value:#x} does not fit its {bits}-bit field")]
    FieldOverflow {
        /// The field's name.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The field's width.
        bits: u32,
    },
    /// An address whose low bits the packet cannot carry.
    #[error("{field} = {addr:#x} is not {align}-byte aligned")]
    Misaligned {
        /// The field's name.
        field: &'static str,
        /// The address given.
        addr: u64,
        /// The alignment the packet needs.
        align: u64,
    },
    /// More dwords than one packet can carry, or none where at least one is needed.
    #[error("{what}: {dwords} dwords, allowed {min}..={max}")]
    BadLength {
        /// What was counted.
        what: &'static str,
        /// Dwords given.
        dwords: usize,
        /// The fewest allowed.
        min: usize,
        /// The most allowed.
        max: usize,
    },
    /// SET_SH_REG registers outside the SH register space.
    #[error("SH registers {first:#x}..{end:#x} are outside 0x2c00..0x3000")]
    RegisterOutOfRange {
        /// First register (dword address).
        first: u32,
        /// One past the last register.
        end: u64,
    },
    /// A field the family's form of the packet does not have.
    #[error("{field} is not part of this packet on {family:?}")]
    NotOnFamily {
        /// The field's name.
        field: &'static str,
        /// The family.
        family: GfxFamily,
    },
}
