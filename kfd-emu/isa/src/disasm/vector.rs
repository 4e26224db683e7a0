//! Vector ALU instruction text: VOP1, VOP2, VOPC, VOP3, VOP3P, with DPP and SDWA forms.

use super::operand::{modified, operand, source, LitSize};
use super::sep;
use crate::decode::{Dpp, Format, Inst, Operand, Sdwa};
use crate::target::{Generation, Target};
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

fn dpp_ctrl(out: &mut String, t: Target, d: &Dpp) {
    if let Some(sel) = d.lanes8 {
        let lanes: Vec<String> = (0..8).map(|l| (sel >> (3 * l) & 7).to_string()).collect();
        let _ = write!(out, " dpp8:[{}]", lanes.join(","));
        if d.fetch_inactive {
            out.push_str(" fi:1");
        }
        return;
    }
    let gfx11 = t.generation() == Generation::Gfx11;
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
        // GFX10+ reuses gfx90a's row_newbcast codes for row_share.
        0x150..=0x15F if gfx11 => write!(out, " row_share:{}", c & 0xF),
        0x150..=0x15F => write!(out, " row_newbcast:{}", c & 0xF),
        0x160..=0x16F if gfx11 => write!(out, " row_xmask:{}", c & 0xF),
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
    if d.fetch_inactive {
        out.push_str(" fi:1");
    }
}

fn sdwa_src(out: &mut String, t: Target, op: Operand, neg: bool, abs: bool, sext: bool) {
    if sext {
        out.push_str("sext(");
    }
    modified(out, t, op, neg, abs, LitSize::B32);
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
    crate::disasm::source_type(name).is_some_and(|t| t.starts_with('i') || t.starts_with('u'))
}

/// Whether a VOP2 reads VCC as a third operand (printed last).
fn reads_vcc(name: &str) -> bool {
    name.starts_with("v_cndmask_b32")
        || name.starts_with("v_addc_co")
        || name.starts_with("v_subb_co")
        || name.starts_with("v_subbrev_co")
}

/// The mnemonic of a GFX11 DPP form: VOP3's and VOP3P's take `_e64_dpp`, VOPC's no suffix.
fn gfx11_dpp_name(i: &Inst) -> String {
    match i.format {
        Format::Vop3 | Format::Vop3p => {
            let base = i.name.strip_suffix("_e64").unwrap_or(i.name);
            format!("{base}_e64_dpp")
        }
        Format::Vopc => i.name.strip_suffix("_e32").unwrap_or(i.name).to_string(),
        _ => extended_name(i.name, "_dpp"),
    }
}

/// The type LLVM gives source `k` of a GFX11 VALU operation (`f32`, `u16`, ...; `pf16`/`pi16`
/// for a packed pair): the last type suffix of the mnemonic, but for the operations whose
/// sources differ in type.
fn gfx11_source_type(name: &str, k: usize) -> &str {
    let last = crate::disasm::source_type(name).unwrap_or("b32");
    let packed = |ty: &str| if ty.starts_with('f') { "pf16" } else { "pi16" };
    match name {
        n if n.starts_with("v_ldexp") && k == 1 => {
            if last == "f16" {
                "i16"
            } else {
                "i32"
            }
        }
        "v_cvt_pk_u8_f32" if k >= 1 => "u32",
        // Its source is a pair of 16-bit values: a 32-bit operand.
        n if n.starts_with("v_sat_pk_u8_i16") => "b32",
        "v_mad_u32_u16" | "v_mad_i32_i16" if k == 2 => "u32",
        "v_mad_u64_u32" | "v_mad_i64_i32" if k == 2 => "u64",
        "v_lshlrev_b64" | "v_lshrrev_b64" | "v_ashrrev_i64" if k == 0 => "u32",
        "v_trig_preop_f64" if k == 1 => "u32",
        n if n.starts_with("v_cmp") && n.contains("_class_") && k == 1 => "u32",
        // Selects with float input modifiers (GFX10+).
        n if n.starts_with("v_cndmask_b32") => "f32",
        n if n.starts_with("v_fma_mix") => "f16",
        n if n.starts_with("v_dot2_f32_f16") || n.starts_with("v_dot2_f16_") => {
            if k == 2 {
                if n.starts_with("v_dot2_f32_") {
                    "f32"
                } else {
                    "f16"
                }
            } else {
                "pf16"
            }
        }
        // bf16 values are 16-bit integers to LLVM 16 (a float constant reads as its f16 bits),
        // with float input modifiers.
        n if n.starts_with("v_dot2_bf16_") => {
            if k == 2 {
                "bf16"
            } else {
                "pbf16"
            }
        }
        n if n.starts_with("v_dot2_f32_bf16") => {
            if k == 2 {
                "f32"
            } else {
                "pbf16"
            }
        }
        n if n.starts_with("v_dot2acc_f32_f16") || n.starts_with("v_dual_dot2acc_f32_f16") => {
            "pf16"
        }
        n if n.starts_with("v_pk_") => packed(last),
        _ => last,
    }
}

/// A GFX11 VALU source with its modifiers as LLVM prints them: float sources take neg/abs,
/// integer ones `sext` (the neg bit) where LLVM gives them integer modifiers, none
/// elsewhere. A packed source's literal prints whole when it has more than 16 bits (GFX11
/// VOP3 literals are 32-bit).
fn gfx11_source(out: &mut String, t: Target, i: &Inst, k: usize, op: Operand) {
    let m = i.vop3;
    let ty = gfx11_source_type(i.name, k);
    let kimm = (i.name.contains("mk_f") && k == 1) || (i.name.contains("ak_f") && k == 2);
    let size = match ty {
        _ if kimm => LitSize::Kimm,
        "pf16" | "pi16" | "pbf16" if matches!(op, Operand::Literal(l) if l > 0xFFFF) => {
            LitSize::B32
        }
        "pf16" | "f16" => LitSize::B16,
        "pi16" | "pbf16" | "bf16" | "i16" | "u16" | "b16" => LitSize::B16Int,
        _ if ty.ends_with("64") => LitSize::B64,
        _ => LitSize::B32,
    };
    let float = |ty: &str| ty.starts_with('f') || ty.starts_with("pf") || ty.contains("bf16");
    let (neg, abs) = (bit(m.neg, k), bit(m.abs, k));
    // An integer source takes integer modifiers in a DPP form, and in a VOP3 one when the
    // operation has float sources too (LLVM's profile then has modifiers for every source).
    let sources = i.src.iter().take_while(|s| **s != Operand::None).count();
    let int_mods = i.dpp.is_some()
        || (i.format == Format::Vop3 && (0..sources).any(|s| float(gfx11_source_type(i.name, s))));
    if i.format == Format::Vop3p && !is_mix(i.name) {
        // VOP3P modifiers print as neg_lo/neg_hi lists.
        source(out, t, op, size);
    } else if float(ty) {
        modified(out, t, op, neg, abs, size);
    } else if neg && int_mods {
        out.push_str("sext(");
        source(out, t, op, size);
        out.push(')');
    } else {
        source(out, t, op, size);
    }
}

pub(super) fn print(out: &mut String, t: Target, i: &Inst) {
    let gfx11 = t.generation() == Generation::Gfx11;
    let sources = i.src.iter().take_while(|s| **s != Operand::None).count();
    if i.dpp.is_some() && gfx11 {
        out.push_str(&gfx11_dpp_name(i));
    } else if i.dpp.is_some() {
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
            operand(out, t, i.sdst);
        }
        Format::Vop3 if i.dst == Operand::None => {
            sep(out, &mut first);
            operand(out, t, i.sdst);
        }
        _ => {
            if i.dst != Operand::None {
                sep(out, &mut first);
                operand(out, t, i.dst);
            }
            if i.sdst != Operand::None {
                sep(out, &mut first);
                operand(out, t, i.sdst);
            }
        }
    }
    let sext = i.sdwa.map_or(0, |s| s.sext);
    let mix = is_mix(i.name);
    // Integer operations take no float input modifiers: LLVM prints none.
    let mods = if integer_sources(i.name) { 0 } else { 0xFF };
    for (k, s) in i.src.iter().enumerate().take(sources) {
        sep(out, &mut first);
        if gfx11 {
            gfx11_source(out, t, i, k, *s);
        } else if mix {
            // The mix instructions' neg_lo and neg_hi are each source's neg and abs.
            modified(out, t, *s, bit(m.neg, k), bit(m.abs, k), LitSize::B32);
        } else if i.format == Format::Vop3p {
            source(out, t, *s, LitSize::of(i.name));
        } else if i.sdwa.is_some() {
            sdwa_src(out, t, *s, bit(m.neg, k), bit(m.abs, k), bit(sext, k));
        } else {
            // v_ldexp's exponent (the second source) is an integer.
            let mods = if k == 1 && i.name.starts_with("v_ldexp") {
                0
            } else {
                mods
            };
            let (neg, abs) = (bit(m.neg & mods, k), bit(m.abs & mods, k));
            modified(out, t, *s, neg, abs, LitSize::of(i.name));
        }
    }
    // GFX9's decoder leaves the implicit VCC out of the sources; GFX11's keeps it (VCC_LO).
    if i.format == Format::Vop2 && reads_vcc(i.name) && sources < 3 {
        out.push_str(", vcc");
    }
    let vop3 = matches!(i.format, Format::Vop3 | Format::Vop3p);
    if let (Some(d), false) = (&i.dpp, vop3) {
        dpp_ctrl(out, t, d);
        return;
    }
    if let Some(s) = &i.sdwa {
        sdwa_suffix(out, i, s, sources);
        return;
    }
    match i.format {
        Format::Vop3 => {
            if gfx11 {
                gfx11_op_sel(out, i, sources);
            } else {
                // Only the operations on 16-bit sources have op_sel on GFX9 (not the legacy
                // ones).
                let sixteen = matches!(LitSize::of(i.name), LitSize::B16 | LitSize::B16Int);
                if m.opsel != 0 && sixteen && !i.name.contains("legacy") {
                    list(out, "op_sel", m.opsel, sources + 1);
                }
            }
            if m.clamp {
                out.push_str(" clamp");
            }
            omod(out, m.omod);
        }
        Format::Vop3p => vop3p_suffix(out, t, i, sources),
        _ => {}
    }
    // A VOP3 DPP form's controls follow its modifiers.
    if let Some(d) = &i.dpp {
        dpp_ctrl(out, t, d);
    }
}

/// GFX11 VOP3 op_sel, for the operations LLVM gives one (its `VOP3_OPSEL` ones: 16-bit
/// operands): a bit per source and one for the destination, printed when any is set.
fn gfx11_op_sel(out: &mut String, i: &Inst, sources: usize) {
    let name = i.name;
    // v_permlane16/x16's op_sel bits are fetch-inactive and bound-control: two of them.
    if name.starts_with("v_permlane") {
        let (fi, bc) = (bit(i.vop3.opsel, 0), bit(i.vop3.opsel, 1));
        if fi || bc {
            let _ = write!(out, " op_sel:[{},{}]", u8::from(fi), u8::from(bc));
        }
        return;
    }
    // LLVM 16's VOP3_OPSEL operations: the native VOP3 ones on 16-bit halves (not the
    // 16-bit forms of GFX9's VOP2 operations, nor v_sad_u16, v_cndmask_b16, the b16 logic
    // and shifts, v_maxmin_f16/v_minmax_f16), and v_fmac_f16's VOP3 form.
    let three = ["v_min3_", "v_max3_", "v_med3_"];
    let with = matches!(
        name,
        "v_mad_u16"
            | "v_mad_i16"
            | "v_fma_f16"
            | "v_mad_u32_u16"
            | "v_mad_i32_i16"
            | "v_div_fixup_f16"
            | "v_dot2_f16_f16"
            | "v_dot2_bf16_bf16"
            | "v_add_nc_u16"
            | "v_add_nc_i16"
            | "v_sub_nc_u16"
            | "v_sub_nc_i16"
            | "v_pack_b32_f16"
            | "v_cvt_pk_norm_i16_f16"
            | "v_cvt_pk_norm_u16_f16"
            | "v_fmac_f16_e64"
    ) || (three.iter().any(|p| name.starts_with(p)) && name.ends_with("16"));
    if !with {
        return;
    }
    // v_fmac_f16 reads its destination as a third source, which has a bit too.
    let sources = if name == "v_fmac_f16_e64" { 3 } else { sources };
    // A packed source has no op_sel bit of its own (v_dot2_f16_f16's are its halves).
    let packed = (0..sources)
        .filter(|&k| gfx11_source_type(name, k).starts_with('p'))
        .fold(0u8, |m, k| m | 1 << k);
    let opsel = i.vop3.opsel & !packed;
    if opsel != 0 {
        // The sources' bits, then the destination's (bit 3).
        let bits = (opsel & ((1 << sources) - 1)) | (opsel >> 3 & 1) << sources;
        list(out, "op_sel", bits, sources + 1);
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
    // The mix instructions default op_sel_hi to zeros; the packed ones to ones, but for their
    // GFX11 DPP forms (LLVM does not mark those packed).
    let default_hi = if i.name.starts_with("v_fma_mix") || i.dpp.is_some() {
        0
    } else {
        all_hi
    };
    // GFX11's WMMAs with a 32-bit result have no op_sel or op_sel_hi (the f16/bf16 ones
    // choose the result's half).
    let sel = !(i.name.starts_with("v_wmma_i32") || i.name.starts_with("v_wmma_f32"));
    if m.opsel != 0 && sel {
        list(out, "op_sel", m.opsel, sources);
    }
    if m.opsel_hi & all_hi != default_hi && sel {
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
