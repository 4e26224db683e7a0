//! SDMA (system DMA engine) packets for kfdrt: typed encoders and a total decoder per engine
//! generation ([`SdmaPacket`], [`SdmaVersion`]; the rectangle copy's fields in
//! [`SubWindowCopy`]), splitting of copies and fills larger than one packet may be, and
//! [`ring::SdmaRing`], the byte-addressed ring writer.
//!
//! Pure Rust, no system calls. Field layouts follow the public Linux headers
//! (`vega10_sdma_pkt_open.h`, `navi10_sdma_pkt_open.h`, `sdma_v6_0_0_pkt_open.h`) and ROCr's
//! `sdma_registers.h`; see `shared/reference/SDMA.md`.
//!
//! ```
//! use sdma::{SdmaPacket, SdmaVersion};
//! let gfx90a = 90010;
//! let ver = SdmaVersion::from_gfx_target_version(gfx90a).unwrap();
//! let copy = SdmaPacket::CopyLinear { src: 0x1000, dst: 0x2_0000, bytes: 256 };
//! let mut dwords = Vec::new();
//! copy.encode(ver, gfx90a, &mut dwords).unwrap();
//! assert_eq!(dwords, [0x1, 255, 0, 0x1000, 0, 0x2_0000, 0]);
//! assert_eq!(SdmaPacket::decode(ver, &dwords), Ok((copy, 7)));
//! ```
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod check;
mod decode;
mod encode;
mod error;
mod fields;
mod packet;
pub mod ring;
mod sub_window;
mod version;

pub use error::{DecodeError, EncodeError};
pub use fields::{atomic_op, gcr_control, op, sub_op};
pub use packet::{
    constant_fill_split, copy_linear_split, AtomicOp, CompareFunction, SdmaPacket, SubWindowCopy,
    SubWindowSurface,
};
pub use version::SdmaVersion;
