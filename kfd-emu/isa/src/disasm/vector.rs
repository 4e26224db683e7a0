//! Vector ALU instruction text: VOP1, VOP2, VOPC, VOP3, VOP3P, with DPP and SDWA forms.

use super::operand::{modified, operand, source, LitSize};
use super::sep;
use crate::decode::{Dpp, Format, Inst, Operand, Sdwa};
use crate::target::Target;
use std::fmt::Write;

fn bit(v: u8, i: usize) -> bool {
    v >> i & 1 != 0
}

/// The mnemonic of a DPP/SDWA form: the `_e32` suffix becomes `_dpp`/`_sdwa`.
fn extended_name(name: &str, suffix: &str) -> String {
    let base = name.strip_suffix("_e32").unwrap_or(name);
    format!("{base}{suffix}")
}

fn sel_name(sel: u8) -> &'static str {
    match sel {
        0 => "BYTE_0",
        1 => "BYTE_1",
        2 => "BYTE_2",
        3 => "BYTE_3",
        4 => "WORD_0",
        5 => "WORD_1",
        _ => "DWORD",
    }
}

fn dpp_ctrl(out: &mut String, d: &Dpp) {
    let c = d.ctrl;
    let _ = match c {
        0x000..=0x0FF => write!(
            out,
            " quad_perm:[{},{},{},{}]",
            c & 3,
            (c >> 2) & 3,
            (c >> 4) & 3,
            (c >> 6) & 3
        ),
        0x101..=0x10F => write!(out, " row_shl:{}", c & 0xF),
        0x111..=0x11F => write!(out, " row_shr:{}", c & 0xF),
        0x121..=0x12F => write!(out, " row_ror:{}", c & 0xF),
        0x130 => write!(out, " wave_shl:1"),
        0x134 => write!(out, " wave_rol:1"),
        0x138 => write!(out, " wave_shr:1"),
        0x13C => write!(out, " wave_ror:1"),
        0x140 => write!(out, " row_mirror"),
        0x141 => write!(out, " row_half_mirror"),
        0x142 => write!(out, " row_bcast:15"),
        0x143 => write!(out, " row_bcast:31"),
        0x150..=0x15F => write!(out, " row_newbcast:{}", c & 0xF),
        _ => write!(out, " /* invalid dpp_ctrl {c:#x} */"),
    };
    let _ = write!(
        out,
        " row_mask:{:#x} bank_mask:{:#x}",
        d.row_mask, d.bank_mask
    );
    if d.bound_ctrl {
        out.push_str(" bound_ctrl:1");
    }
}

fn sdwa_src(out: &mut String, op: Operand, neg: bool, abs: bool, sext: bool) {
    if sext {
        out.push_str("sext(");
    }
    modified(out, op, neg, abs, LitSize::B32);
    if sext {
        out.push(')');
    }
}

fn sdwa_suffix(out: &mut String, i: &Inst, s: &Sdwa, sources: usize) {
    if i.vop3.clamp {
        out.push_str(" clamp");
    }
    omod(out, i.vop3.omod);
    if i.format != Format::Vopc {
        let unused = match s.dst_unused {
            0 => "UNUSED_PAD",
            1 => "UNUSED_SEXT",
            _ => "UNUSED_PRESERVE",
        };
        let _ = write!(out, " dst_sel:{} dst_unused:{unused}", sel_name(s.dst_sel));
    }
    let _ = write!(out, " src0_sel:{}", sel_name(s.src0_sel));
    if sources > 1 {
        let _ = write!(out, " src1_sel:{}", sel_name(s.src1_sel));
    }
}

fn omod(out: &mut String, omod: u8) {
    out.push_str(match omod {
        1 => " mul:2",
        2 => " mul:4",
        3 => " div:2",
        _ => "",
    });
}

fn list(out: &mut String, label: &str, v: u8, n: usize) {
    let items: Vec<&str> = (0..n).map(|k| if bit(v, k) { "1" } else { "0" }).collect();
    let _ = write!(out, " {label}:[{}]", items.join(","));
}

/// `v_fma_mix*`/`v_mad_mix*`, whose neg_lo/neg_hi bits are per-source neg and abs.
fn is_mix(name: &str) -> bool {
    name.starts_with("v_fma_mix") || name.starts_with("v_mad_mix")
}

/// Whether the sources are integers (the last type suffix of the mnemonic is `_iN`/`_uN`):
/// such operations have no float input modifiers.
fn integer_sources(name: &str) -> bool {
    crate::decode::source_type(name).is_some_and(|t| t.starts_with('i') || t.starts_with('u'))
}

/// Whether a VOP2 reads VCC as a third operand (printed last).
fn reads_vcc(name: &str) -> bool {
    name.starts_with("v_cndmask_b32")
        || name.starts_with("v_addc_co")
        || name.starts_with("v_subb_co")
        || name.starts_with("v_subbrev_co")
}

pub(super) fn print(out: &mut String, t: Target, i: &Inst) {
    let sources = i.src.iter().take_while(|s| **s != Operand::None).count();
    if i.dpp.is_some() {
        out.push_str(&extended_name(i.name, "_dpp"));
    } else if i.sdwa.is_some() {
        out.push_str(&extended_name(i.name, "_sdwa"));
    } else {
        out.push_str(i.name);
    }
    let mut first = true;
    let m = i.vop3;
    // Destinations.
    match i.format {
        // GFX10+ v_cmpx has no destination at all.
        Format::Vopc | Format::Vop3 if i.dst == Operand::None && i.sdst == Operand::None => {}
        Format::Vopc => {
            sep(out, &mut first);
            operand(out, i.sdst);
        }
        Format::Vop3 if i.dst == Operand::None => {
            sep(out, &mut first);
            operand(out, i.sdst);
        }
        _ => {
            if i.dst != Operand::None {
                sep(out, &mut first);
                operand(out, i.dst);
            }
            if i.sdst != Operand::None {
                sep(out, &mut first);
                operand(out, i.sdst);
            }
        }
    }
    let sext = i.sdwa.map_or(0, |s| s.sext);
    let mix = is_mix(i.name);
    // Integer operations take no float input modifiers: LLVM prints none.
    let mods = if integer_sources(i.name) { 0 } else { 0xFF };
    for (k, s) in i.src.iter().enumerate().take(sources) {
        sep(out, &mut first);
        if mix {
            // The mix instructions' neg_lo and neg_hi are each source's neg and abs.
            modified(out, *s, bit(m.neg, k), bit(m.abs, k), LitSize::B32);
        } else if i.format == Format::Vop3p {
            source(out, *s, LitSize::of(i.name));
        } else if i.sdwa.is_some() {
            sdwa_src(out, *s, bit(m.neg, k), bit(m.abs, k), bit(sext, k));
        } else {
            // v_ldexp's exponent (the second source) is an integer.
            let mods = if k == 1 && i.name.starts_with("v_ldexp") {
                0
            } else {
                mods
            };
            let (neg, abs) = (bit(m.neg & mods, k), bit(m.abs & mods, k));
            modified(out, *s, neg, abs, LitSize::of(i.name));
        }
    }
    // GFX9's decoder leaves the implicit VCC out of the sources; GFX11's keeps it (VCC_LO).
    if i.format == Format::Vop2 && reads_vcc(i.name) && sources < 3 {
        out.push_str(", vcc");
    }
    if let Some(d) = &i.dpp {
        dpp_ctrl(out, d);
        return;
    }
    if let Some(s) = &i.sdwa {
        sdwa_suffix(out, i, s, sources);
        return;
    }
    match i.format {
        Format::Vop3 => {
            // Only the operations on 16-bit sources have op_sel on GFX9 (not the legacy ones).
            let sixteen = matches!(LitSize::of(i.name), LitSize::B16 | LitSize::B16Int);
            if m.opsel != 0 && sixteen && !i.name.contains("legacy") {
                list(out, "op_sel", m.opsel, sources + 1);
            }
            if m.clamp {
                out.push_str(" clamp");
            }
            omod(out, m.omod);
        }
        Format::Vop3p => vop3p_suffix(out, t, i, sources),
        _ => {}
    }
}

fn vop3p_suffix(out: &mut String, t: Target, i: &Inst, sources: usize) {
    let m = i.vop3;
    if i.name.starts_with("v_mfma") || i.name.starts_with("v_smfmac") {
        // cbsz (bits 10:8), abid (14:11) and blgp (neg field) of the MFMA encoding.
        let cbsz = m.abs;
        let abid = m.opsel | (u8::from(i.words[0] >> 14 & 1 != 0) << 3);
        let blgp = m.neg;
        // gfx940's f64 MFMAs negate their sources with the blgp field instead.
        let f64_neg = t.gfx940_cache_bits() && i.name.starts_with("v_mfma_f64");
        for (label, v) in [("cbsz", cbsz), ("abid", abid), ("blgp", blgp)] {
            if v != 0 && !(f64_neg && label == "blgp") {
                let _ = write!(out, " {label}:{v}");
            }
        }
        if f64_neg && blgp != 0 {
            list(out, "neg", blgp, 3);
        }
        return;
    }
    if i.name.starts_with("v_accvgpr") {
        return;
    }
    let all_hi = (1u8 << sources) - 1;
    // The mix instructions default op_sel_hi to zeros; the packed ones to ones.
    let default_hi = if i.name.starts_with("v_fma_mix") {
        0
    } else {
        all_hi
    };
    if m.opsel != 0 {
        list(out, "op_sel", m.opsel, sources);
    }
    if m.opsel_hi & all_hi != default_hi {
        list(out, "op_sel_hi", m.opsel_hi, sources);
    }
    if m.neg != 0 && !is_mix(i.name) {
        list(out, "neg_lo", m.neg, sources);
    }
    if m.abs != 0 && !is_mix(i.name) {
        list(out, "neg_hi", m.abs, sources);
    }
    if m.clamp {
        out.push_str(" clamp");
    }
}
