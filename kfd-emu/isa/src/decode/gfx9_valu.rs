//! GFX9 vector ALU encodings: VOP1, VOP2, VOPC (with their DPP and SDWA forms), VOP3, VOP3P.

use super::attrs::{traits, Class, Matrix};
use super::inst::{Dpp, Sdwa, Vop3Mods};
use super::op::Op;
use super::operand::{src, sreg, Operand};
use super::table::{lookup, Entry, Format};
use super::{resolve_constants, start, with_literal, Inst};
use crate::target::Target;

fn bits(w: u32, lo: u32, n: u32) -> u32 {
    (w >> lo) & ((1 << n) - 1)
}

/// Applies the SDWA or DPP extension word when src0 says one follows; returns the real src0.
fn extension(i: &mut Inst, w1: u32, w_src0: u8, vopc: bool) -> Operand {
    let code = bits(i.words[0], 0, 9) as u16;
    if code == src::DPP {
        i.len = 2;
        i.dpp = Some(Dpp {
            ctrl: bits(w1, 8, 9) as u16,
            row_mask: bits(w1, 28, 4) as u8,
            bank_mask: bits(w1, 24, 4) as u8,
            bound_ctrl: bits(w1, 19, 1) != 0,
            fetch_inactive: false,
            lanes8: None,
        });
        i.vop3.neg = (bits(w1, 20, 1) | bits(w1, 22, 1) << 1) as u8;
        i.vop3.abs = (bits(w1, 21, 1) | bits(w1, 23, 1) << 1) as u8;
        return Operand::Vgpr(bits(w1, 0, 8) as u16, w_src0.max(1));
    }
    if code == src::SDWA {
        i.len = 2;
        let s0 = bits(w1, 0, 8) as u16;
        let src0 = if bits(w1, 23, 1) != 0 {
            Operand::from_src9(s0, 1, 0)
        } else {
            Operand::Vgpr(s0, 1)
        };
        i.sdwa = Some(Sdwa {
            dst_sel: if vopc { 6 } else { bits(w1, 8, 3) as u8 },
            dst_unused: if vopc { 0 } else { bits(w1, 11, 2) as u8 },
            src0_sel: bits(w1, 16, 3) as u8,
            src1_sel: bits(w1, 24, 3) as u8,
            sext: (bits(w1, 19, 1) | bits(w1, 27, 1) << 1) as u8,
        });
        i.vop3.neg = (bits(w1, 20, 1) | bits(w1, 28, 1) << 1) as u8;
        i.vop3.abs = (bits(w1, 21, 1) | bits(w1, 29, 1) << 1) as u8;
        if vopc {
            if bits(w1, 15, 1) != 0 {
                i.sdst = Operand::Sgpr(bits(w1, 8, 7) as u8, 2);
            }
        } else {
            i.vop3.clamp = bits(w1, 13, 1) != 0;
            i.vop3.omod = bits(w1, 14, 2) as u8;
        }
        return src0;
    }
    Operand::from_src9(code, w_src0.max(1), w1)
}

/// The second source of an SDWA instruction may be an SGPR (S1 bit).
fn sdwa_src1(i: &Inst, w1: u32, vsrc1: u16, width: u8) -> Operand {
    if i.sdwa.is_some() && bits(w1, 31, 1) != 0 {
        Operand::from_src9(vsrc1, width, 0)
    } else {
        Operand::Vgpr(vsrc1, width)
    }
}

pub(super) fn vop1(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Vop1, bits(w0, 9, 8) as u16)?;
    let mut i = start(e, [w0, w1], 1);
    if e.widths[0] == 0 {
        return Some(i);
    }
    let [wd, ws, ..] = e.widths;
    // v_swap_b32 and v_accvgpr_mov_b32 take only a register as their source: its field is
    // the register number, never a constant, SDWA or DPP.
    let register_only = matches!(e.op, Op::VSwapB32 | Op::VAccvgprMovB32);
    let s0 = if register_only {
        Operand::Vgpr(bits(w0, 0, 8) as u16, ws.max(1))
    } else {
        extension(&mut i, w1, ws, false)
    };
    let vdst = bits(w0, 17, 8) as u16;
    i.dst = match e.op {
        Op::VReadfirstlaneB32 => Operand::Sgpr(vdst as u8, 1),
        Op::VAccvgprMovB32 | Op::VAccvgprReadB32 | Op::VAccvgprWriteB32 => {
            Operand::Agpr(vdst, wd.max(1))
        }
        _ => Operand::Vgpr(vdst, wd.max(1)),
    };
    i.src[0] = match (e.op == Op::VAccvgprMovB32, s0) {
        (true, Operand::Vgpr(r, w)) => Operand::Agpr(r, w),
        _ => s0,
    };
    if i.len == 1 {
        i.len = with_literal(1, &[s0]);
    }
    resolve_constants(&mut i, [ws, 0, 0]);
    Some(i)
}

pub(super) fn vop2(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Vop2, bits(w0, 25, 6) as u16)?;
    let mut i = start(e, [w0, w1], 1);
    // VOP2 operations that write a carry to VCC (printed `v8, vcc, ...`).
    let carry = e.traits.has(traits::CARRY_OUT);
    let w = e.widths;
    let (wd, ws0, ws1) = if carry {
        (w[0], w[2], w[3])
    } else {
        (w[0], w[1], w[2])
    };
    let s0 = extension(&mut i, w1, ws0, false);
    let s1 = sdwa_src1(&i, w1, bits(w0, 9, 8) as u16, ws1.max(1));
    i.dst = Operand::Vgpr(bits(w0, 17, 8) as u16, wd.max(1));
    if carry {
        i.sdst = Operand::Sgpr(sreg::VCC_LO, 2);
    }
    if let Some(srcs) = super::constant_k_sources(e.op, s0, s1, w1) {
        i.src = srcs;
        i.len = 2;
    } else {
        i.src = [s0, s1, Operand::None];
        if i.len == 1 {
            i.len = with_literal(1, &[s0]);
        }
    }
    resolve_constants(&mut i, [ws0, ws1, ws1]);
    Some(i)
}

pub(super) fn vopc(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Vopc, bits(w0, 17, 8) as u16)?;
    let mut i = start(e, [w0, w1], 1);
    let [_, ws0, ws1, ..] = e.widths;
    i.sdst = Operand::Sgpr(sreg::VCC_LO, 2);
    let s0 = extension(&mut i, w1, ws0, true);
    let s1 = sdwa_src1(&i, w1, bits(w0, 9, 8) as u16, ws1.max(1));
    i.src = [s0, s1, Operand::None];
    if i.len == 1 {
        i.len = with_literal(1, &[s0]);
    }
    resolve_constants(&mut i, [ws0, ws1, 0]);
    Some(i)
}

/// Number of sources of a VOP3 entry: its printed register operands minus destinations.
fn vop3_source_count(e: &Entry, dsts: usize) -> usize {
    let regs = e.widths.iter().take_while(|&&w| w != 0).count();
    regs.saturating_sub(dsts).min(3)
}

pub(super) fn vop3(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let opcode = bits(w0, 16, 10) as u16;
    let e = lookup(t, Format::Vop3, opcode)?;
    let mut i = start(e, [w0, w1], 2);
    let vdst = bits(w0, 0, 8) as u16;
    let w = e.widths;
    // The VOP3b layout: a scalar destination in bits 14:8.
    let vop3b = e.traits.has(traits::CARRY_OUT);
    let compare = opcode < 0x100;
    let (dsts, src_w): (usize, [u8; 3]) = if compare {
        i.sdst = Operand::Sgpr(vdst as u8, 2);
        (1, [w[1], w[2], w[3]])
    } else if vop3b {
        i.dst = Operand::Vgpr(vdst, w[0].max(1));
        i.sdst = Operand::Sgpr(bits(w0, 8, 7) as u8, 2);
        (2, [w[2], w[3], w[4]])
    } else {
        i.dst = match e.op {
            Op::VReadlaneB32 => Operand::Sgpr(vdst as u8, 1),
            _ => Operand::Vgpr(vdst, w[0].max(1)),
        };
        (usize::from(w[0] != 0), [w[1], w[2], w[3]])
    };
    let count = vop3_source_count(e, dsts);
    for (k, (s, width)) in i.src.iter_mut().zip(src_w).enumerate().take(count) {
        *s = Operand::from_src9(bits(w1, 9 * k as u32, 9) as u16, width.max(1), 0);
    }
    i.vop3 = Vop3Mods {
        clamp: bits(w0, 15, 1) != 0,
        omod: bits(w1, 27, 2) as u8,
        neg: bits(w1, 29, 3) as u8,
        abs: if vop3b { 0 } else { bits(w0, 8, 3) as u8 },
        opsel: if vop3b { 0 } else { bits(w0, 11, 4) as u8 },
        opsel_hi: 0,
    };
    resolve_constants(&mut i, src_w);
    Some(i)
}

pub(super) fn vop3p(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Vop3p, bits(w0, 16, 7) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    let w = e.widths;
    let vdst = bits(w0, 0, 8) as u16;
    let mfma = matches!(e.class, Class::Matrix(Matrix::Dense(_) | Matrix::Sparse(_)));
    let count = vop3_source_count(e, 1);
    for (k, s) in i.src.iter_mut().enumerate().take(count) {
        let width = w.get(k + 1).copied().unwrap_or(1).max(1);
        *s = Operand::from_src9(bits(w1, 9 * k as u32, 9) as u16, width, 0);
    }
    if mfma {
        // MFMA: bit 15 (acc_cd) puts the destination and src2 in AGPRs; op_sel_hi bits are
        // the acc bits of src0/src1; cbsz/abid/blgp are kept in the modifier fields.
        let acc_cd = bits(w0, 15, 1) != 0;
        i.dst = if acc_cd {
            Operand::Agpr(vdst, w[0].max(1))
        } else {
            Operand::Vgpr(vdst, w[0].max(1))
        };
        let acc = bits(w1, 27, 2);
        // An SMFMAC's src2 is its compression index, a VGPR whatever acc_cd says.
        let sparse = matches!(e.class, Class::Matrix(Matrix::Sparse(_)));
        for (k, s) in i.src.iter_mut().enumerate() {
            let to_acc = if k == 2 {
                acc_cd && !sparse
            } else {
                acc >> k & 1 != 0
            };
            if let (true, Operand::Vgpr(r, n)) = (to_acc, *s) {
                *s = Operand::Agpr(r, n);
            }
        }
        i.vop3 = Vop3Mods {
            clamp: false,
            omod: 0,
            neg: bits(w1, 29, 3) as u8,
            abs: bits(w0, 8, 3) as u8,
            opsel: bits(w0, 11, 4) as u8,
            opsel_hi: acc as u8,
        };
        return Some(i);
    }
    i.dst = match e.op {
        Op::VAccvgprWriteB32 => Operand::Agpr(vdst, 1),
        _ => Operand::Vgpr(vdst, w[0].max(1)),
    };
    if e.op == Op::VAccvgprReadB32 {
        if let Operand::Vgpr(r, n) = i.src[0] {
            i.src[0] = Operand::Agpr(r, n);
        }
    }
    i.vop3 = Vop3Mods {
        clamp: bits(w0, 15, 1) != 0,
        omod: 0,
        neg: bits(w1, 29, 3) as u8,
        abs: bits(w0, 8, 3) as u8,
        opsel: bits(w0, 11, 3) as u8,
        opsel_hi: (bits(w1, 27, 2) | bits(w0, 14, 1) << 2) as u8,
    };
    resolve_constants(&mut i, [w[1], w[2], w[3]]);
    Some(i)
}
