//! PM4 type-3 packets for compute queues (KFD queue type COMPUTE) on gfx9 (with gfx90a and
//! gfx94x), gfx10.3 and gfx11: typed encoders and a total decoder ([`Pm4Packet`]), the compute SH
//! register map ([`regs`]) and [`ring::Pm4Ring`], the dword ring writer.
//!
//! Pure Rust, no system calls. Field layouts follow the public Linux headers (`soc15d.h`,
//! `nvd.h`), Mesa's `sid.h` and kfdtest; see `shared/reference/PM4.md`.
//!
//! ```
//! use pm4::{GfxFamily, Pm4Packet};
//! let mut dwords = Vec::new();
//! let packet = Pm4Packet::EventWrite { event_type: pm4::event::CS_PARTIAL_FLUSH, event_index: 4 };
//! packet.encode(GfxFamily::Gfx90a, &mut dwords);
//! assert_eq!(dwords, [0xC000_4602, 0x407]);
//! assert_eq!(Pm4Packet::decode(GfxFamily::Gfx90a, &dwords), Ok((packet, 2)));
//! ```
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod decode;
mod encode;
mod error;
mod family;
mod fields;
mod header;
mod packet;
pub mod regs;
pub mod ring;

pub use error::{DecodeError, EncodeError};
pub use family::GfxFamily;
pub use fields::{
    acquire_mem, data_sel, event, event_index, int_sel, mem_space, release_mem, sel,
    CompareFunction,
};
pub use header::{
    header, header_opcode, opcode, packet_dwords, MAX_BODY_DWORDS, NOP_FILLER, TYPE2_FILLER,
};
pub use packet::Pm4Packet;
