//! Vector compares, summarised from the mnemonic once at decode time: which predicate, on
//! which type, and whether the result also goes to EXEC (`v_cmpx`).

/// The operand type of a compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpType {
    /// f16.
    F16,
    /// f32.
    F32,
    /// f64.
    F64,
    /// i16.
    I16,
    /// u16.
    U16,
    /// i32.
    I32,
    /// u32.
    U32,
    /// i64.
    I64,
    /// u64.
    U64,
}

const TYPES: [(&str, CmpType); 9] = [
    ("f16", CmpType::F16),
    ("f32", CmpType::F32),
    ("f64", CmpType::F64),
    ("i16", CmpType::I16),
    ("u16", CmpType::U16),
    ("i32", CmpType::I32),
    ("u32", CmpType::U32),
    ("i64", CmpType::I64),
    ("u64", CmpType::U64),
];

/// Predicates, by index in `aux` bits 0-4. Float ones follow the IEEE ordered/unordered
/// definitions (`n*` are true when unordered); `class` tests the class mask in src1.
pub const PREDICATES: [&str; 18] = [
    "f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq", "nlt",
    "tru", "ne", "t",
];
/// Index of `class` (bit 5 of `aux` set with predicate bits unused).
pub const CLASS: u16 = 1 << 5;
/// `aux` bit: also write EXEC.
pub const CMPX: u16 = 1 << 6;
/// `aux` bit: this is a compare.
pub const VALID: u16 = 1 << 15;

/// The `aux` summary of a mnemonic (0 if not a compare).
pub fn kind(name: &str) -> u16 {
    let Some(rest) = name
        .strip_prefix("v_cmpx_")
        .map(|r| (r, CMPX))
        .or_else(|| name.strip_prefix("v_cmp_").map(|r| (r, 0)))
    else {
        return 0;
    };
    let (body, x) = rest;
    let body = body
        .strip_suffix("_e32")
        .or_else(|| body.strip_suffix("_e64"))
        .unwrap_or(body);
    let Some((pred, ty)) = body.split_once('_') else {
        return 0;
    };
    let Some(t) = TYPES.iter().position(|(n, _)| *n == ty) else {
        return 0;
    };
    let p = if pred == "class" {
        CLASS
    } else {
        match PREDICATES.iter().position(|p| *p == pred) {
            Some(i) => i as u16,
            None => return 0,
        }
    };
    VALID | x | p | (t as u16) << 8
}

/// The type of a compare `aux`.
pub fn cmp_type(aux: u16) -> CmpType {
    TYPES
        .get(usize::from((aux >> 8) & 0xF))
        .map_or(CmpType::U32, |t| t.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_to_kinds() {
        let k = kind("v_cmp_gt_i32_e32");
        assert!(k & VALID != 0 && k & CMPX == 0);
        assert_eq!(PREDICATES[usize::from(k & 0x1F)], "gt");
        assert_eq!(cmp_type(k), CmpType::I32);
        let k = kind("v_cmpx_nlt_f64_e64");
        assert!(k & CMPX != 0);
        assert_eq!(PREDICATES[usize::from(k & 0x1F)], "nlt");
        assert_eq!(cmp_type(k), CmpType::F64);
        assert!(kind("v_cmp_class_f32_e64") & CLASS != 0);
        assert_eq!(kind("v_add_f32_e32"), 0);
    }
}
