//! The 16-bit AQL packet header and its fields.

use crate::DecodeError;

/// Packet type (header bits 0-7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketType {
    /// Vendor-specific packet (AMD: PM4 indirect buffer, barrier-value).
    VendorSpecific = 0,
    /// Not a packet: the slot is free. Rings are initialised with it.
    Invalid = 1,
    /// Kernel dispatch.
    KernelDispatch = 2,
    /// Barrier-AND: wait for every dependency signal.
    BarrierAnd = 3,
    /// Agent dispatch (not used by GPUs).
    AgentDispatch = 4,
    /// Barrier-OR: wait for any dependency signal.
    BarrierOr = 5,
}

impl PacketType {
    /// Decodes a packet type byte.
    pub fn from_raw(v: u8) -> Result<PacketType, DecodeError> {
        Ok(match v {
            0 => PacketType::VendorSpecific,
            1 => PacketType::Invalid,
            2 => PacketType::KernelDispatch,
            3 => PacketType::BarrierAnd,
            4 => PacketType::AgentDispatch,
            5 => PacketType::BarrierOr,
            v => return Err(DecodeError::UnknownType(v)),
        })
    }
}

/// Memory fence scope of an acquire or release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum FenceScope {
    /// No fence.
    None = 0,
    /// Visible to the agent (GPU).
    Agent = 1,
    /// Visible system-wide (CPU and other agents).
    #[default]
    System = 2,
}

impl FenceScope {
    fn from_raw(v: u16) -> Result<FenceScope, DecodeError> {
        Ok(match v {
            0 => FenceScope::None,
            1 => FenceScope::Agent,
            2 => FenceScope::System,
            v => return Err(DecodeError::BadFenceScope(v as u8)),
        })
    }
}

const BARRIER_BIT: u16 = 1 << 8;
const ACQUIRE_SHIFT: u16 = 9;
const RELEASE_SHIFT: u16 = 11;

/// A decoded packet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// The packet type.
    pub packet_type: PacketType,
    /// Whether the packet waits for every earlier packet of the queue to complete.
    pub barrier: bool,
    /// Acquire fence before the packet.
    pub acquire: FenceScope,
    /// Release fence after the packet.
    pub release: FenceScope,
}

impl Header {
    /// Encodes the 16 header bits.
    pub fn to_bits(self) -> u16 {
        self.packet_type as u16
            | if self.barrier { BARRIER_BIT } else { 0 }
            | (self.acquire as u16) << ACQUIRE_SHIFT
            | (self.release as u16) << RELEASE_SHIFT
    }

    /// Decodes 16 header bits; unknown types and scope 3 are errors.
    pub fn from_bits(bits: u16) -> Result<Header, DecodeError> {
        Ok(Header {
            packet_type: PacketType::from_raw(bits as u8)?,
            barrier: bits & BARRIER_BIT != 0,
            acquire: FenceScope::from_raw((bits >> ACQUIRE_SHIFT) & 3)?,
            release: FenceScope::from_raw((bits >> RELEASE_SHIFT) & 3)?,
        })
    }
}

/// The 32-bit header|setup word of an INVALID packet (what an empty slot holds).
pub const INVALID_HEADER_WORD: u32 = PacketType::Invalid as u32;

/// Whether a header word (first 32 bits of a slot) publishes a packet.
pub fn is_valid_header_word(word: u32) -> bool {
    (word & 0xFF) as u8 != PacketType::Invalid as u8
}
