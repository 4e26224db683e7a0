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

const ATOMICS: [(&str, AtomicOp); 16] = [
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_to_kinds() {
        let k = kind("global_load_sshort");
        assert_eq!((class(k), size(k), signed(k), d16(k)), (MemClass::Load, 2, true, None));
        let k = kind("buffer_store_dwordx4");
        assert_eq!((class(k), size(k)), (MemClass::Store, 16));
        let k = kind("flat_load_short_d16_hi");
        assert_eq!(d16(k), Some(true));
        let k = kind("global_atomic_cmpswap_x2");
        assert_eq!((class(k), size(k), atomic_op(k)), (MemClass::Atomic, 8, AtomicOp::CmpSwap));
        let k = kind("global_atomic_add_f32");
        assert_eq!((size(k), atomic_op(k)), (4, AtomicOp::FAdd));
        let k = kind("global_atomic_max_f64");
        assert_eq!((size(k), atomic_op(k)), (8, AtomicOp::FMax));
        assert_eq!(class(kind("buffer_wbinvl1")), MemClass::Other);
        assert_eq!(class(kind("buffer_load_format_x")), MemClass::Other);
    }
}
