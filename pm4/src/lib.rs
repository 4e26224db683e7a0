//! PM4 type-3 packets for compute queues (KFD queue type COMPUTE) on gfx9 (incl. gfx90a and
//! gfx94x), gfx10.3 and gfx11: typed encoders and a total decoder, the compute SH register map,
//! and [`ring::Pm4Ring`], the dword ring writer.
//!
//! Pure Rust, no system calls. Field layouts follow the public Linux headers (`soc15d.h`,
//! `nvd.h`) and Mesa's `sid.h`; see `shared/reference/PM4.md`.
#![warn(missing_docs)]

mod packet;
pub mod regs;
pub mod ring;

pub use packet::*;

/// A GPU family whose PM4 dialect kfdrt speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GfxFamily {
    /// gfx900/906/908.
    Gfx9,
    /// gfx90a (MI200).
    Gfx90a,
    /// gfx940/941/942 (MI300).
    Gfx94x,
    /// gfx10.3 (RDNA2).
    Gfx103,
    /// gfx11 (RDNA3).
    Gfx11,
}

impl GfxFamily {
    /// The family of a `gfx_target_version` (major*10000 + minor*100 + stepping).
    pub fn from_gfx_target_version(v: u32) -> Option<GfxFamily> {
        Some(match v {
            90000..=90009 => GfxFamily::Gfx9,
            90010 => GfxFamily::Gfx90a,
            90400..=90499 => GfxFamily::Gfx94x,
            100300..=100399 => GfxFamily::Gfx103,
            110000..=110599 => GfxFamily::Gfx11,
            _ => return None,
        })
    }

    /// Whether the family is gfx10 or newer (GCR-style cache control, wave32).
    pub fn is_gfx10_plus(self) -> bool {
        matches!(self, GfxFamily::Gfx103 | GfxFamily::Gfx11)
    }
}

/// Why dwords do not decode as a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// No dwords.
    #[error("no dwords")]
    Empty,
    /// Not a type-3 (or type-2 filler) header.
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
        /// Dwords the header announces.
        needed: usize,
        /// Dwords present.
        available: usize,
    },
}
