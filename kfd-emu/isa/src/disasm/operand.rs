//! Operand text as LLVM prints it.

use crate::decode::operand::sreg;
use crate::decode::Operand;
use crate::target::{Generation, Target};
use std::fmt::Write;

fn reg_range(out: &mut String, prefix: &str, first: u32, count: u8) {
    if count <= 1 {
        let _ = write!(out, "{prefix}{first}");
    } else {
        let _ = write!(out, "{prefix}[{first}:{}]", first + u32::from(count) - 1);
    }
}

/// A scalar register (or range) by its SGPR-field number.
pub(super) fn sgpr(out: &mut String, t: Target, r: u8, count: u8) {
    let pair = count == 2;
    let named = |lo: &str, hi: &str, both: &str| -> Option<String> {
        Some(
            match (pair, r % 2) {
                (true, 0) => both,
                (false, 0) => lo,
                (false, _) => hi,
                (true, _) => return None,
            }
            .to_string(),
        )
    };
    // GFX10+ has no FLAT_SCRATCH or XNACK_MASK in the SGPR space: s102-s105 are SGPRs.
    let gfx9 = t.generation() == Generation::Gfx9;
    let special = match r {
        102 | 103 if gfx9 => named("flat_scratch_lo", "flat_scratch_hi", "flat_scratch"),
        104 | 105 if gfx9 => named("xnack_mask_lo", "xnack_mask_hi", "xnack_mask"),
        sreg::VCC_LO | sreg::VCC_HI => named("vcc_lo", "vcc_hi", "vcc"),
        sreg::EXEC_LO | sreg::EXEC_HI => named("exec_lo", "exec_hi", "exec"),
        sreg::M0 => Some("m0".to_string()),
        // LLVM names the register after M0 `null` on every target; GFX11's decodes to the
        // interpreter's null slots.
        125 | sreg::NULL | sreg::NULL_SINK => Some("null".to_string()),
        _ => None,
    };
    match special {
        Some(s) => out.push_str(&s),
        None if (sreg::TTMP0..sreg::M0).contains(&r) => {
            reg_range(out, "ttmp", u32::from(r - sreg::TTMP0), count)
        }
        None => reg_range(out, "s", u32::from(r), count),
    }
}

/// An inline float constant's text.
pub(super) fn inline_float(code: u16) -> &'static str {
    match code {
        240 => "0.5",
        241 => "-0.5",
        242 => "1.0",
        243 => "-1.0",
        244 => "2.0",
        245 => "-2.0",
        246 => "4.0",
        247 => "-4.0",
        _ => "0.15915494",
    }
}

fn special(code: u16) -> &'static str {
    match code {
        235 => "src_shared_base",
        236 => "src_shared_limit",
        237 => "src_private_base",
        238 => "src_private_limit",
        239 => "src_pops_exiting_wave_id",
        251 => "src_vccz",
        252 => "src_execz",
        253 => "src_scc",
        254 => "src_lds_direct",
        _ => "<invalid>",
    }
}

/// The size of the operand a literal stands for, which decides how LLVM prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LitSize {
    B16,
    /// A 16-bit integer operand: a float inline constant reads as its f16 bits.
    B16Int,
    B32,
    B64,
    /// The constant of `v_madmk`/`v_madak` (and the `fma` forms): always its 32 bits in hex.
    Kimm,
}

impl LitSize {
    /// The source size of instruction `name`, from the last type suffix of its mnemonic
    /// (`_f64`, `_b16`, ...: LLVM names conversions `v_cvt_DST_SRC`, so the last is the
    /// source's).
    pub(super) fn of(name: &str) -> LitSize {
        if name.contains("mk_f") || name.contains("ak_f") {
            return LitSize::Kimm;
        }
        if name.starts_with("v_sat_pk") {
            // Its source is a pair of 16-bit values: a 32-bit operand.
            return LitSize::B32;
        }
        let last = crate::disasm::source_type(name);
        match last.map(|t| (t.as_bytes()[0], &t[1..])) {
            Some((_, "64")) => LitSize::B64,
            Some((b'i' | b'u', "16")) => LitSize::B16Int,
            Some((_, "16")) => LitSize::B16,
            _ => LitSize::B32,
        }
    }
}

/// A source operand of an instruction whose literal is `size` wide.
pub(super) fn source(out: &mut String, t: Target, op: Operand, size: LitSize) {
    match op {
        Operand::Literal(l) => literal(out, l, size),
        // 1/(2*pi) has more digits as a double.
        Operand::Float(248) if size == LitSize::B64 => out.push_str("0.15915494309189532"),
        Operand::Float(_) if size == LitSize::B16Int => {
            let bits = op
                .constant(crate::decode::DataSize::B16, true)
                .unwrap_or_default();
            let _ = write!(out, "{bits:#x}");
        }
        op => operand(out, t, op),
    }
}

/// A literal's text as LLVM prints it (`printImmediate16/32/64`): by its value, whatever its
/// encoding, so a literal equal to an inline constant reads as that constant (compilers
/// sometimes encode -1 as a literal). A 64-bit operand's literal is its low half, printed as a
/// number; a 16-bit operand's is its low 16 bits.
fn literal(out: &mut String, v: u32, size: LitSize) {
    match size {
        LitSize::Kimm => {
            let _ = write!(out, "{v:#x}");
            return;
        }
        LitSize::B64 => {
            if v <= 64 {
                let _ = write!(out, "{v}");
            } else {
                let _ = write!(out, "{v:#x}");
            }
            return;
        }
        LitSize::B16 | LitSize::B16Int => {
            let h = v as u16;
            let signed = h as i16;
            let float = match h {
                0x3C00 => "1.0",
                0xBC00 => "-1.0",
                0x3800 => "0.5",
                0xB800 => "-0.5",
                0x4000 => "2.0",
                0xC000 => "-2.0",
                0x4400 => "4.0",
                0xC400 => "-4.0",
                0x3118 => "0.15915494",
                _ if (-16..=64).contains(&signed) => {
                    let _ = write!(out, "{signed}");
                    return;
                }
                _ => {
                    let _ = write!(out, "{h:#x}");
                    return;
                }
            };
            out.push_str(float);
            return;
        }
        LitSize::B32 => {}
    }
    let signed = v as i32;
    if (-16..=64).contains(&signed) {
        let _ = write!(out, "{signed}");
        return;
    }
    let float = match v {
        0x0000_0000 => "0.0",
        0x3F80_0000 => "1.0",
        0xBF80_0000 => "-1.0",
        0x3F00_0000 => "0.5",
        0xBF00_0000 => "-0.5",
        0x4000_0000 => "2.0",
        0xC000_0000 => "-2.0",
        0x4080_0000 => "4.0",
        0xC080_0000 => "-4.0",
        0x3E22_F983 => "0.15915494",
        _ => {
            let _ = write!(out, "{v:#x}");
            return;
        }
    };
    out.push_str(float);
}

/// Appends an operand's text.
pub(super) fn operand(out: &mut String, t: Target, op: Operand) {
    match op {
        Operand::None => {}
        Operand::Sgpr(r, n) => sgpr(out, t, r, n),
        Operand::Vgpr(r, n) => reg_range(out, "v", u32::from(r), n),
        Operand::Agpr(r, n) => reg_range(out, "a", u32::from(r), n),
        Operand::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Operand::Float(code) => out.push_str(inline_float(code)),
        Operand::Literal(l) => literal(out, l, LitSize::B32),
        Operand::Special(code) => out.push_str(special(code)),
        Operand::Off => out.push_str("off"),
    }
}

/// An operand with VOP3-style `neg`/`abs` modifiers.
pub(super) fn modified(
    out: &mut String,
    t: Target,
    op: Operand,
    neg: bool,
    abs: bool,
    size: LitSize,
) {
    // A negated constant reads `neg(c)`, so that `-c` stays the constant -c.
    let neg_call = neg
        && !abs
        && matches!(
            op,
            Operand::Int(_) | Operand::Float(_) | Operand::Literal(_)
        );
    if neg_call {
        out.push_str("neg(");
    } else if neg {
        out.push('-');
    }
    if abs {
        out.push('|');
    }
    source(out, t, op, size);
    if abs {
        out.push('|');
    }
    if neg_call {
        out.push(')');
    }
}
