//! Vector memory operations summarised from the mnemonic once at decode time (into
//! [`super::Inst::aux`]): load, store or atomic, access size, sign extension, 16-bit halves,
//! and the atomic operation.

use crate::memory::AtomicOp;

/// `aux` bit: this is a summarised memory operation.
pub const VALID: u16 = 1 << 15;

/// What a vector memory instruction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemClass {
    /// Not a plain load/store/atomic (cache control, formatted access).
    Other,
    /// Load.
    Load,
    /// Store.
    Store,
    /// Atomic read-modify-write.
    Atomic,
}

const ATOMICS: [(&str, AtomicOp); 18] = [
    ("pk_add_f16", AtomicOp::PkAddF16),
    ("pk_add_bf16", AtomicOp::PkAddBf16),
    ("swap", AtomicOp::Swap),
    ("cmpswap", AtomicOp::CmpSwap),
    ("add", AtomicOp::Add),
    ("sub", AtomicOp::Sub),
    ("smin", AtomicOp::SMin),
    ("umin", AtomicOp::UMin),
    ("smax", AtomicOp::SMax),
    ("umax", AtomicOp::UMax),
    ("and", AtomicOp::And),
    ("or", AtomicOp::Or),
    ("xor", AtomicOp::Xor),
    ("inc", AtomicOp::Inc),
    ("dec", AtomicOp::Dec),
    ("add_f32", AtomicOp::FAdd),
    ("add_f64", AtomicOp::FAdd),
    ("min_f64", AtomicOp::FMin),
];

/// The `aux` summary of a FLAT/GLOBAL/SCRATCH/MUBUF mnemonic.
pub fn kind(name: &str) -> u16 {
    let rest = ["flat_", "global_", "scratch_", "buffer_"]
        .iter()
        .find_map(|p| name.strip_prefix(p));
    let Some(rest) = rest else {
        return 0;
    };
    if let Some(t) = rest.strip_prefix("load_lds_") {
        // Loads into LDS: gfx940's `global_load_lds_dword`, GFX11's `buffer_load_lds_b32`.
        let k = match t {
            "u8" => Some("ubyte"),
            "i8" => Some("sbyte"),
            "u16" => Some("ushort"),
            "i16" => Some("sshort"),
            "b32" => Some("dword"),
            "ubyte" | "sbyte" | "ushort" | "sshort" | "dword" => Some(t),
            _ => None,
        };
        return k.and_then(data_kind).map_or(0, |k| VALID | 1 | k);
    }
    if let Some(t) = rest.strip_prefix("load_") {
        return data_kind(t).map_or(0, |k| VALID | 1 | k);
    }
    if let Some(t) = rest.strip_prefix("store_") {
        return data_kind(t).map_or(0, |k| VALID | 2 | k);
    }
    if let Some(t) = rest.strip_prefix("atomic_") {
        let (t, x2) = match t.strip_suffix("_x2") {
            Some(b) => (b, true),
            None => (t, false),
        };
        let wide = x2 || t.ends_with("_f64");
        let op = if t == "max_f64" {
            Some(ATOMICS.len())
        } else {
            ATOMICS.iter().position(|(n, _)| *n == t)
        };
        return match op {
            Some(i) => VALID | 3 | (if wide { 8 } else { 4 }) << 2 | (i as u16) << 10,
            None => 0,
        };
    }
    0
}

/// The operation and width of an `*_atomic_<op>[_x2]` mnemonic suffix (`add`, `cmpswap_x2`).
pub fn atomic_by_name(suffix: &str) -> Option<(AtomicOp, bool)> {
    let (t, x2) = match suffix.strip_suffix("_x2") {
        Some(b) => (b, true),
        None => (suffix, false),
    };
    ATOMICS
        .iter()
        .find(|(n, _)| *n == t)
        .map(|a| (a.1, x2 || t.ends_with("_f64")))
}

/// Size (bits 2-6), sign (7), d16 (8), d16_hi (9) of a load/store data suffix.
fn data_kind(t: &str) -> Option<u16> {
    let (size, signed, d16, hi) = match t {
        "ubyte" | "byte" => (1, false, false, false),
        "sbyte" => (1, true, false, false),
        "ushort" | "short" => (2, false, false, false),
        "sshort" => (2, true, false, false),
        "dword" => (4, false, false, false),
        "dwordx2" => (8, false, false, false),
        "dwordx3" => (12, false, false, false),
        "dwordx4" => (16, false, false, false),
        "ubyte_d16" => (1, false, true, false),
        "ubyte_d16_hi" | "byte_d16_hi" => (1, false, true, true),
        "sbyte_d16" => (1, true, true, false),
        "sbyte_d16_hi" => (1, true, true, true),
        "short_d16" => (2, false, true, false),
        "short_d16_hi" => (2, false, true, true),
        _ => return None,
    };
    Some(size << 2 | u16::from(signed) << 7 | u16::from(d16) << 8 | u16::from(hi) << 9)
}

/// The class of an `aux`.
pub fn class(aux: u16) -> MemClass {
    if aux & VALID == 0 {
        return MemClass::Other;
    }
    match aux & 3 {
        1 => MemClass::Load,
        2 => MemClass::Store,
        3 => MemClass::Atomic,
        _ => MemClass::Other,
    }
}

/// Access size in bytes.
pub fn size(aux: u16) -> usize {
    usize::from((aux >> 2) & 0x1F)
}

/// Sign-extending load.
pub fn signed(aux: u16) -> bool {
    aux & (1 << 7) != 0
}

/// 16-bit load/store into one half of the register (`Some(true)` for the high half).
pub fn d16(aux: u16) -> Option<bool> {
    (aux & (1 << 8) != 0).then_some(aux & (1 << 9) != 0)
}

/// The atomic operation.
pub fn atomic_op(aux: u16) -> AtomicOp {
    let i = usize::from((aux >> 10) & 0x1F);
    if i == ATOMICS.len() {
        AtomicOp::FMax
    } else {
        ATOMICS.get(i).map_or(AtomicOp::Add, |a| a.1)
    }
}

/// What a DS instruction does (summarised from its mnemonic at decode time).
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

/// The summary of a DS mnemonic.
pub fn ds_kind(name: &str) -> DsOp {
    let size = ds_size(name).unwrap_or(4);
    let two = name.contains("read2") || name.contains("write2");
    let class = if name.starts_with("ds_read") && !name.starts_with("ds_read_addtid") {
        if two {
            DsClass::Read2
        } else {
            DsClass::Read
        }
    } else if name.starts_with("ds_write") && !name.starts_with("ds_write_addtid") {
        if two {
            DsClass::Write2
        } else {
            DsClass::Write
        }
    } else if name.starts_with("ds_rsub") {
        DsClass::RSub
    } else if name.starts_with("ds_mskor") {
        DsClass::MskOr
    } else if name.starts_with("ds_wrxchg2") {
        DsClass::Xchg2
    } else if name == "ds_append" || name == "ds_consume" {
        DsClass::Append(name == "ds_consume")
    } else if let Some(op) = name.strip_prefix("ds_gws_") {
        DsClass::Gws(match op {
            "init" => GwsOp::Init,
            "sema_v" => GwsOp::SemaV,
            "sema_br" => GwsOp::SemaBr,
            "sema_p" => GwsOp::SemaP,
            "barrier" => GwsOp::Barrier,
            _ => GwsOp::SemaReleaseAll,
        })
    } else {
        match ds_atomic(name) {
            Some((op, _)) => DsClass::Atomic(op),
            None => DsClass::Other,
        }
    };
    DsOp {
        class,
        size: size as u8,
        signed: name.contains("_i8") || name.contains("_i16"),
        d16: name.contains("d16").then_some(name.ends_with("_hi")),
        st64: name.contains("st64"),
    }
}

/// The atomic operation and data width of a DS read-modify-write, from its mnemonic.
pub(crate) fn ds_atomic(name: &str) -> Option<(AtomicOp, bool)> {
    let body = name.strip_prefix("ds_")?;
    if body.starts_with("pk_add") {
        let op = if body.ends_with("bf16") {
            AtomicOp::PkAddBf16
        } else {
            AtomicOp::PkAddF16
        };
        return Some((op, false));
    }
    let body = body.replace("_rtn", "");
    let (op, ty) = body.split_once('_')?;
    let wide = ty.ends_with("64");
    let float = ty.starts_with('f');
    let op = match (op, float) {
        ("add", false) => AtomicOp::Add,
        ("add", true) => AtomicOp::FAdd,
        ("sub", _) => AtomicOp::Sub,
        ("inc", _) => AtomicOp::Inc,
        ("dec", _) => AtomicOp::Dec,
        ("min", true) => AtomicOp::FMin,
        ("max", true) => AtomicOp::FMax,
        ("min", false) if ty.starts_with('i') => AtomicOp::SMin,
        ("max", false) if ty.starts_with('i') => AtomicOp::SMax,
        ("min", false) => AtomicOp::UMin,
        ("max", false) => AtomicOp::UMax,
        ("and", _) => AtomicOp::And,
        ("or", _) => AtomicOp::Or,
        ("xor", _) => AtomicOp::Xor,
        ("wrxchg", _) => AtomicOp::Swap,
        ("cmpst", _) => AtomicOp::CmpSwap,
        _ => return None,
    };
    Some((op, wide))
}

/// Bytes of one element of a DS read/write.
pub(crate) fn ds_size(name: &str) -> Option<usize> {
    let tail = name
        .rsplit('_')
        .find(|p| p.starts_with('b') || p.starts_with('u') || p.starts_with('i'))?;
    match tail.get(1..)? {
        "8" => Some(1),
        "16" => Some(2),
        "32" => Some(4),
        "64" => Some(8),
        "96" => Some(12),
        "128" => Some(16),
        _ => None,
    }
}

#[cfg(test)]
mod ds_tests {
    use super::*;

    #[test]
    fn ds_names() {
        assert_eq!(ds_size("ds_read_b128"), Some(16));
        assert_eq!(ds_size("ds_write_b8_d16_hi"), Some(1));
        assert_eq!(ds_size("ds_read_u16_d16"), Some(2));
        assert_eq!(ds_size("ds_read2_b64"), Some(8));
        assert_eq!(ds_atomic("ds_add_rtn_u32"), Some((AtomicOp::Add, false)));
        assert_eq!(ds_atomic("ds_max_i64"), Some((AtomicOp::SMax, true)));
        assert_eq!(ds_atomic("ds_min_rtn_f32"), Some((AtomicOp::FMin, false)));
        assert_eq!(
            ds_atomic("ds_cmpst_rtn_b32"),
            Some((AtomicOp::CmpSwap, false))
        );
        assert_eq!(ds_atomic("ds_add_f32"), Some((AtomicOp::FAdd, false)));
        let k = ds_kind("ds_read_i8_d16_hi");
        assert_eq!(
            (k.class, k.size, k.signed, k.d16),
            (DsClass::Read, 1, true, Some(true))
        );
        let k = ds_kind("ds_write2st64_b64");
        assert_eq!((k.class, k.size, k.st64), (DsClass::Write2, 8, true));
        assert_eq!(
            ds_kind("ds_add_rtn_u64").class,
            DsClass::Atomic(AtomicOp::Add)
        );
        assert_eq!(ds_kind("ds_swizzle_b32").class, DsClass::Other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_to_kinds() {
        let k = kind("global_load_sshort");
        assert_eq!(
            (class(k), size(k), signed(k), d16(k)),
            (MemClass::Load, 2, true, None)
        );
        let k = kind("buffer_store_dwordx4");
        assert_eq!((class(k), size(k)), (MemClass::Store, 16));
        let k = kind("flat_load_short_d16_hi");
        assert_eq!(d16(k), Some(true));
        let k = kind("global_atomic_cmpswap_x2");
        assert_eq!(
            (class(k), size(k), atomic_op(k)),
            (MemClass::Atomic, 8, AtomicOp::CmpSwap)
        );
        let k = kind("global_atomic_add_f32");
        assert_eq!((size(k), atomic_op(k)), (4, AtomicOp::FAdd));
        let k = kind("global_atomic_max_f64");
        assert_eq!((size(k), atomic_op(k)), (8, AtomicOp::FMax));
        assert_eq!(class(kind("buffer_wbinvl1")), MemClass::Other);
        assert_eq!(class(kind("buffer_load_format_x")), MemClass::Other);
    }
}
