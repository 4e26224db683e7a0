//! Operand text as LLVM prints it.

use crate::decode::operand::sreg;
use crate::decode::Operand;
use std::fmt::Write;

fn reg_range(out: &mut String, prefix: &str, first: u32, count: u8) {
    if count <= 1 {
        let _ = write!(out, "{prefix}{first}");
    } else {
        let _ = write!(out, "{prefix}[{first}:{}]", first + u32::from(count) - 1);
    }
}

/// A scalar register (or range) by its SGPR-field number.
pub(super) fn sgpr(out: &mut String, r: u8, count: u8) {
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
    let special = match r {
        102 | 103 => named("flat_scratch_lo", "flat_scratch_hi", "flat_scratch"),
        104 | 105 => named("xnack_mask_lo", "xnack_mask_hi", "xnack_mask"),
        sreg::VCC_LO | sreg::VCC_HI => named("vcc_lo", "vcc_hi", "vcc"),
        sreg::EXEC_LO | sreg::EXEC_HI => named("exec_lo", "exec_hi", "exec"),
        sreg::M0 => Some("m0".to_string()),
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

/// Appends an operand's text.
pub(super) fn operand(out: &mut String, op: Operand) {
    match op {
        Operand::None => {}
        Operand::Sgpr(r, n) => sgpr(out, r, n),
        Operand::Vgpr(r, n) => reg_range(out, "v", u32::from(r), n),
        Operand::Agpr(r, n) => reg_range(out, "a", u32::from(r), n),
        Operand::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Operand::Float(code) => out.push_str(inline_float(code)),
        Operand::Literal(l) => {
            let _ = write!(out, "{l:#x}");
        }
        Operand::Special(code) => out.push_str(special(code)),
        Operand::Off => out.push_str("off"),
    }
}

/// An operand with VOP3-style `neg`/`abs` modifiers.
pub(super) fn modified(out: &mut String, op: Operand, neg: bool, abs: bool) {
    if neg {
        out.push('-');
    }
    if abs {
        out.push('|');
    }
    operand(out, op);
    if abs {
        out.push('|');
    }
}
