//! Errors of the packet encoder and decoder.

use crate::SdmaVersion;

/// Why a packet cannot be encoded as exactly one packet of its kind. Nothing is appended to the
/// output when encoding fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A transfer length of 0 or above what one packet of this kind may move on this part
    /// (split larger ones with [`crate::copy_linear_split`] / [`crate::constant_fill_split`]).
    #[error("{packet} of {bytes} bytes: one packet moves 1 to {max} bytes")]
    Length {
        /// The packet's name.
        packet: &'static str,
        /// Bytes asked for.
        bytes: u64,
        /// The most one packet may move.
        max: u64,
    },
    /// A fill whose length is not whole dwords.
    #[error("{packet} of {bytes} bytes: the length must be a multiple of 4")]
    NotDwords {
        /// The packet's name.
        packet: &'static str,
        /// Bytes asked for.
        bytes: u64,
    },
    /// An address that must be aligned is not.
    #[error("{packet}: address {addr:#x} is not {align}-byte aligned")]
    Misaligned {
        /// The packet's name.
        packet: &'static str,
        /// The address.
        addr: u64,
        /// The alignment the packet needs.
        align: u64,
    },
    /// An extent or pitch of 0, stored minus one in a field that cannot hold -1.
    #[error("{packet}: {field} is 0; it must be at least 1")]
    Zero {
        /// The packet's name.
        packet: &'static str,
        /// The field's name.
        field: &'static str,
    },
    /// A value does not fit its field (it would be truncated).
    #[error("{packet}: {field} = {value:#x} exceeds the field's maximum {max:#x}")]
    FieldRange {
        /// The packet's name.
        packet: &'static str,
        /// The field's name.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The largest value the field holds.
        max: u64,
    },
    /// A range that runs past the end of the 64-bit address space.
    #[error("{packet}: {bytes} bytes at {addr:#x} run past the end of the address space")]
    AddressWrap {
        /// The packet's name.
        packet: &'static str,
        /// Start of the range.
        addr: u64,
        /// Its length.
        bytes: u64,
    },
    /// The packet does not exist on this engine generation (GCR_REQ before SDMA 5).
    #[error("{packet} does not exist on SDMA {version:?}")]
    Unsupported {
        /// The packet's name.
        packet: &'static str,
        /// The engine generation.
        version: SdmaVersion,
    },
}

/// Why dwords do not decode as a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// No dwords.
    #[error("no dwords")]
    Empty,
    /// An opcode, or an opcode/sub-opcode pair, this generation has no packet for here.
    #[error("unknown SDMA opcode {op} sub-op {sub_op}")]
    UnknownOpcode {
        /// Opcode (header bits 0-7).
        op: u8,
        /// Sub-opcode (header bits 8-15).
        sub_op: u8,
    },
    /// The packet runs past the end of the input.
    #[error("truncated packet: needs {needed} dwords, {available} available")]
    Truncated {
        /// Dwords the packet occupies (header included).
        needed: usize,
        /// Dwords present.
        available: usize,
    },
    /// A field holds a reserved value, or one [`SdmaPacket`](crate::SdmaPacket) cannot
    /// represent (so executing the decoded packet would not do what the dwords say).
    #[error("SDMA opcode {op}: unsupported {field} {value:#x}")]
    BadField {
        /// Opcode.
        op: u8,
        /// The field's name.
        field: &'static str,
        /// Its value.
        value: u32,
    },
}
