//! Vector compares: which predicate, on which type, and whether the result also goes to EXEC
//! (`v_cmpx`). The generated tables give each compare its [`Compare`].

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

/// A compare's predicate, as its mnemonic names it. Float predicates follow the IEEE
/// ordered/unordered definitions (the `N*` ones are true when unordered); `Class` tests the
/// class mask in src1. The declaration order is the VOPC opcode order of GFX9's float compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Predicate {
    /// Always false.
    F,
    /// Less than.
    Lt,
    /// Equal.
    Eq,
    /// Less or equal.
    Le,
    /// Greater than.
    Gt,
    /// Less or greater (ordered, not equal).
    Lg,
    /// Greater or equal.
    Ge,
    /// Ordered (neither is NaN).
    O,
    /// Unordered (either is NaN).
    U,
    /// Not greater or equal.
    Nge,
    /// Not less or greater.
    Nlg,
    /// Not greater than.
    Ngt,
    /// Not less or equal.
    Nle,
    /// Not equal (true when unordered).
    Neq,
    /// Not less than.
    Nlt,
    /// Always true (floats).
    Tru,
    /// Not equal (integers).
    Ne,
    /// Always true (integers).
    T,
    /// `v_cmp_class`: src0's float class is in src1's mask.
    Class,
}

impl Predicate {
    /// Every predicate, in declaration order.
    pub const ALL: [Predicate; 19] = [
        Predicate::F,
        Predicate::Lt,
        Predicate::Eq,
        Predicate::Le,
        Predicate::Gt,
        Predicate::Lg,
        Predicate::Ge,
        Predicate::O,
        Predicate::U,
        Predicate::Nge,
        Predicate::Nlg,
        Predicate::Ngt,
        Predicate::Nle,
        Predicate::Neq,
        Predicate::Nlt,
        Predicate::Tru,
        Predicate::Ne,
        Predicate::T,
        Predicate::Class,
    ];

    /// The predicate as GFX9 mnemonics spell it (`lt`, `tru`, `class`).
    pub fn name(self) -> &'static str {
        const NAMES: [&str; 19] = [
            "f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq",
            "nlt", "tru", "ne", "t", "class",
        ];
        NAMES[self as usize]
    }
}

/// What a vector compare computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compare {
    /// The predicate.
    pub pred: Predicate,
    /// The operand type.
    pub ty: CmpType,
    /// `v_cmpx`: the result also goes to EXEC.
    pub cmpx: bool,
}

impl Compare {
    pub(crate) const fn new(pred: Predicate, ty: CmpType, cmpx: bool) -> Compare {
        Compare { pred, ty, cmpx }
    }
}
