//! GFX9 scalar ALU encodings: SOP2, SOPK, SOP1, SOPC, SOPP.

use super::op::Op;
use super::operand::{align_sgpr, Operand};
use super::table::{lookup, Format};
use super::{resolve_constants, start, with_literal, Inst};
use crate::target::Target;

fn bits(w: u32, lo: u32, n: u32) -> u32 {
    (w >> lo) & ((1 << n) - 1)
}

pub(super) fn sop2(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Sop2, bits(w0, 23, 7) as u16)?;
    let no_dst = matches!(e.op, Op::SCbranchGFork | Op::SRfeRestoreB64);
    let [wd, w_s0, w_s1] = if no_dst {
        [0, e.widths[0], e.widths[1]]
    } else {
        [e.widths[0], e.widths[1], e.widths[2]]
    };
    let s0 = Operand::from_ssrc8(bits(w0, 0, 8) as u8, w_s0.max(1), w1);
    let s1 = Operand::from_ssrc8(bits(w0, 8, 8) as u8, w_s1.max(1), w1);
    let mut i = start(e, [w0, w1], with_literal(1, &[s0, s1]));
    if !no_dst {
        i.dst = Operand::Sgpr(align_sgpr(bits(w0, 16, 7) as u8, wd), wd.max(1));
    }
    i.src = [s0, s1, Operand::None];
    resolve_constants(&mut i, [w_s0, w_s1, 0]);
    Some(i)
}

pub(super) fn sopk(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Sopk, bits(w0, 23, 5) as u16)?;
    let sdst = Operand::Sgpr(
        align_sgpr(bits(w0, 16, 7) as u8, e.widths[0]),
        e.widths[0].max(1),
    );
    // s_setreg_imm32_b32 carries its value in a second word.
    let imm32 = e.op == Op::SSetregImm32B32;
    let mut i = start(e, [w0, w1], if imm32 { 2 } else { 1 });
    i.offset = i32::from(bits(w0, 0, 16) as u16 as i16);
    i.dst = sdst;
    if imm32 {
        i.src[0] = Operand::Literal(w1);
        i.imm[0] = u64::from(w1);
    }
    Some(i)
}

pub(super) fn sop1(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Sop1, bits(w0, 8, 8) as u16)?;
    let no_dst = matches!(
        e.op,
        Op::SSetpcB64 | Op::SCbranchJoin | Op::SSetGprIdxIdx | Op::SRfeB64
    );
    // s_sendmsg_rtn's source field is the message id itself, never a register or literal.
    let no_src = matches!(
        e.op,
        Op::SGetpcB64 | Op::SSendmsgRtnB32 | Op::SSendmsgRtnB64
    );
    let (wd, ws) = if no_dst {
        (0, e.widths[0])
    } else {
        (e.widths[0], e.widths[1])
    };
    let s0 = if no_src {
        Operand::None
    } else {
        Operand::from_ssrc8(bits(w0, 0, 8) as u8, ws.max(1), w1)
    };
    let mut i = start(e, [w0, w1], with_literal(1, &[s0]));
    if !no_dst {
        i.dst = Operand::Sgpr(align_sgpr(bits(w0, 16, 7) as u8, wd), wd.max(1));
    }
    i.src[0] = s0;
    resolve_constants(&mut i, [ws, 0, 0]);
    Some(i)
}

pub(super) fn sopc(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Sopc, bits(w0, 16, 7) as u16)?;
    let [w_s0, w_s1, ..] = e.widths;
    let s0 = Operand::from_ssrc8(bits(w0, 0, 8) as u8, w_s0.max(1), w1);
    let s1 = if e.op == Op::SSetGprIdxOn {
        Operand::None
    } else {
        Operand::from_ssrc8(bits(w0, 8, 8) as u8, w_s1.max(1), w1)
    };
    let mut i = start(e, [w0, w1], with_literal(1, &[s0, s1]));
    i.src = [s0, s1, Operand::None];
    i.offset = bits(w0, 8, 8) as i32;
    resolve_constants(&mut i, [w_s0, w_s1, 0]);
    Some(i)
}

pub(super) fn sopp(t: Target, w0: u32) -> Option<Inst> {
    let e = lookup(t, Format::Sopp, bits(w0, 16, 7) as u16)?;
    let mut i = start(e, [w0, 0], 1);
    i.offset = i32::from(bits(w0, 0, 16) as u16 as i16);
    Some(i)
}
