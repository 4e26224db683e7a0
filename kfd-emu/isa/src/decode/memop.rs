//! What memory operations do: the typed summaries the generated tables give the loads,
//! stores and atomics of FLAT/GLOBAL/SCRATCH/MUBUF/SMEM, formatted buffer accesses, and DS
//! operations.

use crate::memory::AtomicOp;

/// A load's or store's data: its size and how it fills the register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Bytes accessed per lane (1, 2, 4, 8, 12, 16).
    pub size: u8,
    /// A sign-extending load.
    pub signed: bool,
    /// A 16-bit load or store into one half of the register (`Some(true)`: the high half).
    pub d16: Option<bool>,
}

impl Access {
    pub(crate) const fn new(size: u8, signed: bool, d16: Option<bool>) -> Access {
        Access { size, signed, d16 }
    }
}

/// A read-modify-write's operation and data width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Atomic {
    /// The operation.
    pub op: AtomicOp,
    /// 64-bit data (`_x2`, `_f64`).
    pub wide: bool,
}

impl Atomic {
    pub(crate) const fn new(op: AtomicOp, wide: bool) -> Atomic {
        Atomic { op, wide }
    }

    /// Bytes per lane.
    pub fn size(self) -> usize {
        if self.wide {
            8
        } else {
            4
        }
    }
}

/// A formatted buffer access's shape (`_x` .. `_xyzw`, `_d16`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Formatted {
    /// Channels (1-4).
    pub channels: u8,
    /// Channels packed two to a register (`_d16`).
    pub d16: bool,
    /// A `_d16_hi` access: the high halves.
    pub hi: bool,
}

impl Formatted {
    pub(crate) const fn new(channels: u8, d16: bool, hi: bool) -> Formatted {
        Formatted { channels, d16, hi }
    }
}

/// What a DS instruction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DsClass {
    /// `ds_read*` (one address).
    Read,
    /// `ds_write*`.
    Write,
    /// `ds_read2*` (two addresses, offsets in elements).
    Read2,
    /// `ds_write2*`.
    Write2,
    /// A read-modify-write (with or without `_rtn`).
    Atomic(AtomicOp),
    /// `ds_rsub*`: data - old.
    RSub,
    /// `ds_mskor*`: (old & !data0) | data1.
    MskOr,
    /// `ds_wrxchg2*_rtn`: exchange at two addresses.
    Xchg2,
    /// `ds_append` / `ds_consume` (true): a wave-wide counter in LDS at M0 + offset.
    Append(bool),
    /// A global wave sync operation (`ds_gws_*`, with the `gds` bit).
    Gws(GwsOp),
    /// Anything else (swizzles, permutes, GDS/GWS, append/consume).
    Other,
}

/// A global wave sync operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GwsOp {
    /// `ds_gws_init`: set a resource's count.
    Init,
    /// `ds_gws_sema_v`: add one.
    SemaV,
    /// `ds_gws_sema_br`: add the data.
    SemaBr,
    /// `ds_gws_sema_p`: wait for a positive count, take one.
    SemaP,
    /// `ds_gws_barrier`.
    Barrier,
    /// `ds_gws_sema_release_all`.
    SemaReleaseAll,
}

/// The summary of a DS instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DsOp {
    /// The class.
    pub class: DsClass,
    /// Element bytes (1, 2, 4, 8, 12, 16).
    pub size: u8,
    /// Sign-extending read.
    pub signed: bool,
    /// 16-bit read/write into one half (`Some(true)`: the high half).
    pub d16: Option<bool>,
    /// read2/write2 offsets count in units of 64 elements.
    pub st64: bool,
}

impl DsOp {
    pub(crate) const fn new(
        class: DsClass,
        size: u8,
        signed: bool,
        d16: Option<bool>,
        st64: bool,
    ) -> DsOp {
        DsOp {
            class,
            size,
            signed,
            d16,
            st64,
        }
    }
}
