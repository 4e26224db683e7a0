//! Operands: what a source or destination field names (a register, an inline constant, a
//! literal), how wide it is, and the constant's value for the operand's data size.

/// Scalar register numbers with a special meaning (GFX9 numbering of the 8-bit SGPR field).
pub mod sreg {
    /// FLAT_SCRATCH low half.
    pub const FLAT_SCRATCH_LO: u8 = 102;
    /// XNACK_MASK low half.
    pub const XNACK_MASK_LO: u8 = 104;
    /// VCC low half.
    pub const VCC_LO: u8 = 106;
    /// VCC high half.
    pub const VCC_HI: u8 = 107;
    /// First trap-handler temporary.
    pub const TTMP0: u8 = 108;
    /// M0.
    pub const M0: u8 = 124;
    /// GFX10+ `null` as a source: slots past the SGPR field's range that nothing writes, so
    /// it reads 0 at any width. GFX11 encodes `null` as 124 and M0 as 125; its
    /// decoder moves them, so M0 is 124 on every target.
    pub const NULL: u8 = 128;
    /// GFX10+ `null` as a destination: slots nothing reads, so writes vanish without a check
    /// on every register write.
    pub const NULL_SINK: u8 = 132;
    /// Slots of the interpreter's scalar file: the SGPR field's 128, then four for `null` read
    /// (zero at up to four registers wide: a buffer resource) and four for `null` written
    /// (wider writes fall past the file and are dropped).
    pub const SLOTS: usize = 136;
    /// EXEC low half.
    pub const EXEC_LO: u8 = 126;
    /// EXEC high half.
    pub const EXEC_HI: u8 = 127;
}

/// Special source values of the 9-bit source field (beyond registers and integers).
pub mod src {
    /// `src_shared_base`: high half of the LDS aperture base.
    pub const SHARED_BASE: u16 = 235;
    /// `src_shared_limit`.
    pub const SHARED_LIMIT: u16 = 236;
    /// `src_private_base`: high half of the scratch aperture base.
    pub const PRIVATE_BASE: u16 = 237;
    /// `src_private_limit`.
    pub const PRIVATE_LIMIT: u16 = 238;
    /// `src_pops_exiting_wave_id`.
    pub const POPS_EXITING_WAVE_ID: u16 = 239;
    /// SDWA marker in src0 of VOP1/VOP2/VOPC.
    pub const SDWA: u16 = 249;
    /// DPP marker in src0 of VOP1/VOP2/VOPC.
    pub const DPP: u16 = 250;
    /// `src_vccz`.
    pub const VCCZ: u16 = 251;
    /// `src_execz`.
    pub const EXECZ: u16 = 252;
    /// `src_scc`.
    pub const SCC: u16 = 253;
    /// `src_lds_direct`.
    pub const LDS_DIRECT: u16 = 254;
    /// A 32-bit literal follows the instruction.
    pub const LITERAL: u16 = 255;
}

/// The data size of an operand, which decides the value of inline float constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataSize {
    /// 16-bit (inline floats are f16).
    B16,
    /// 32-bit.
    B32,
    /// 64-bit (inline floats are f64, integers sign-extend).
    B64,
}

/// What an operand field names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Operand {
    /// No operand.
    #[default]
    None,
    /// A scalar register (number in the SGPR field's space: VCC, M0, EXEC included), and how
    /// many consecutive registers.
    Sgpr(u8, u8),
    /// A vector register and count.
    Vgpr(u16, u8),
    /// An accumulation register and count.
    Agpr(u16, u8),
    /// An inline integer constant (source codes 128..=208).
    Int(i8),
    /// An inline float constant, by source code (240..=248).
    Float(u16),
    /// A 32-bit literal.
    Literal(u32),
    /// A special source (`src_shared_base`, `src_scc`, ...), by source code.
    Special(u16),
    /// The `off` of an unused address operand.
    Off,
}

impl Operand {
    /// The operand a 9-bit source field names (`width` registers when a register).
    pub fn from_src9(code: u16, width: u8, literal: u32) -> Operand {
        match code {
            0..=127 => Operand::Sgpr(align_sgpr(code as u8, width), width),
            128..=192 => Operand::Int((code - 128) as i8),
            193..=208 => Operand::Int(-((code - 192) as i8)),
            240..=248 => Operand::Float(code),
            src::LITERAL => Operand::Literal(literal),
            256..=511 => Operand::Vgpr(code - 256, width),
            _ => Operand::Special(code),
        }
    }

    /// The operand an 8-bit scalar source field names.
    pub fn from_ssrc8(code: u8, width: u8, literal: u32) -> Operand {
        Operand::from_src9(u16::from(code), width, literal)
    }

    /// Whether this is a literal (it costs the instruction a dword).
    pub fn is_literal(self) -> bool {
        matches!(self, Operand::Literal(_))
    }

    /// The value of a constant operand (inline or literal) for an operand of `size`, or `None`
    /// for registers and specials.
    pub fn constant(self, size: DataSize, float: bool) -> Option<u64> {
        match self {
            Operand::Int(i) => Some(match size {
                DataSize::B16 => u64::from(i as i16 as u16),
                DataSize::B32 => u64::from(i32::from(i) as u32),
                DataSize::B64 => i64::from(i) as u64,
            }),
            Operand::Float(code) => {
                let v: f64 = match code {
                    240 => 0.5,
                    241 => -0.5,
                    242 => 1.0,
                    243 => -1.0,
                    244 => 2.0,
                    245 => -2.0,
                    246 => 4.0,
                    247 => -4.0,
                    _ => 0.0,
                };
                Some(match (size, code) {
                    // 1/(2*pi) has its own rounded bit patterns per size.
                    (DataSize::B16, 248) => 0x3118,
                    (DataSize::B32, 248) => 0x3E22_F983,
                    (DataSize::B64, 248) => 0x3FC4_5F30_6DC9_C882,
                    (DataSize::B16, _) => u64::from(f32_to_f16(v as f32)),
                    (DataSize::B32, _) => u64::from((v as f32).to_bits()),
                    (DataSize::B64, _) => v.to_bits(),
                })
            }
            // A 64-bit float operand takes a 32-bit literal as its high half.
            Operand::Literal(l) => Some(match (size, float) {
                (DataSize::B64, true) => u64::from(l) << 32,
                _ => u64::from(l),
            }),
            _ => None,
        }
    }
}

/// SGPR tuples are aligned (pairs to even registers, wider tuples to multiples of 4); the
/// hardware ignores the low bits of a misaligned number, and LLVM prints the aligned tuple.
pub fn align_sgpr(r: u8, width: u8) -> u8 {
    if r == 125 {
        // `null`, whatever the width.
        return r;
    }
    match width {
        0 | 1 => r,
        2 => r & !1,
        _ => r & !3,
    }
}

/// Rounds an f32 to the nearest f16 (ties to even), returning its bits.
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xFF) as i32;
    let man = b & 0x7F_FFFF;
    if exp == 0xFF {
        // Inf or NaN (keep NaNs quiet).
        return sign
            | 0x7C00
            | if man != 0 {
                0x200 | (man >> 13) as u16
            } else {
                0
            };
    }
    let e = exp - 127 + 15;
    if e >= 0x1F {
        return sign | 0x7C00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // Subnormal: shift the mantissa (with its hidden bit) into place, rounding to even.
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1FFF;
    if rest > 0x1000 || (rest == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

/// Converts f16 bits to an f32 (exactly).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1F);
    let man = u32::from(h & 0x3FF);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: normalise.
            let mut e = 127 - 15 + 1;
            let mut m = man;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | ((e as u32) << 23) | ((m & 0x3FF) << 13)
        }
        (0x1F, 0) => sign | 0x7F80_0000,
        (0x1F, _) => sign | 0x7FC0_0000 | (man << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_fields_and_constants() {
        assert_eq!(Operand::from_src9(5, 1, 0), Operand::Sgpr(5, 1));
        assert_eq!(Operand::from_src9(300, 2, 0), Operand::Vgpr(44, 2));
        assert_eq!(Operand::from_src9(128, 1, 0), Operand::Int(0));
        assert_eq!(Operand::from_src9(192, 1, 0), Operand::Int(64));
        assert_eq!(Operand::from_src9(193, 1, 0), Operand::Int(-1));
        assert_eq!(Operand::from_src9(208, 1, 0), Operand::Int(-16));
        assert_eq!(
            Operand::Int(-1).constant(DataSize::B64, false),
            Some(u64::MAX)
        );
        assert_eq!(
            Operand::Int(-1).constant(DataSize::B32, false),
            Some(0xFFFF_FFFF)
        );
        assert_eq!(
            Operand::Float(242).constant(DataSize::B32, true),
            Some(0x3F80_0000)
        );
        assert_eq!(
            Operand::Float(245).constant(DataSize::B64, true),
            Some((-2.0f64).to_bits())
        );
        assert_eq!(
            Operand::Float(242).constant(DataSize::B16, true),
            Some(0x3C00)
        );
        assert_eq!(
            Operand::Literal(0x3FF0_0000).constant(DataSize::B64, true),
            Some(1.0f64.to_bits())
        );
    }

    #[test]
    fn half_conversions_round_trip() {
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            if f.is_nan() {
                continue;
            }
            assert_eq!(f32_to_f16(f), h, "{h:#x} -> {f}");
        }
        assert_eq!(f32_to_f16(65520.0), 0x7C00);
        assert_eq!(f32_to_f16(1.0 + 1.0 / 4096.0), 0x3C00);
        assert_eq!(f32_to_f16(1e-8), 0);
    }
}
