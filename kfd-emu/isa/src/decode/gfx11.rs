//! GFX11 (RDNA3) encodings.
//!
//! The scalar ALU and the short vector forms keep GFX9's layouts; SMEM, VOP3, VOP3P, DS, FLAT,
//! the buffer formats and MIMG move their fields, VOPD (dual issue) is new, and DPP gains the
//! eight-lane DPP8 form. Each decoder produces the same [`Inst`] the GFX9 ones do, in the
//! interpreter's GFX9 numbering of the scalar registers: GFX11 puts `null` at 124 and M0 at
//! 125, GFX9 M0 at 124, so the two swap here ([`sgpr`]) and the executor's M0 is M0 on both.
//! Operations GFX11 only renamed decode to GFX9's [`Op`] (the table's `gfx9_name`), so their
//! semantics are the GFX9 ones; where a GFX11 operation differs under the same name (`v_cmpx`
//! writes EXEC only; `ds_cmpstore` swaps its data operands) the decoder says so here.

use super::attrs::{traits, Class, ImageData};
use super::inst::{flags, Dpp};
use super::memop::{DsClass, DsOp};
use super::op::Op;
use super::operand::{src, sreg, DataSize, Operand};
use super::table::{lookup, Entry, Format};
use super::{resolve_constants, start, with_literal, Inst};
use crate::memory::AtomicOp;
use crate::target::Target;

fn bits(w: u32, lo: u32, n: u32) -> u32 {
    (w >> lo) & ((1 << n) - 1)
}

fn flag(on: bool, f: u16) -> u16 {
    if on {
        f
    } else {
        0
    }
}

/// `src9` code of GFX11's DPP8 marker (lanes select within groups of eight).
pub const DPP8: u16 = 233;
/// DPP8 with fetch-inactive (inactive lanes' values are read too).
pub const DPP8_FI: u16 = 234;

/// The interpreter's number of a GFX11 scalar register field read as a source (M0 moves to
/// GFX9's 124, `null` to slots that read 0).
pub(crate) fn sgpr(code: u32) -> u8 {
    match code {
        124 => sreg::NULL,
        125 => sreg::M0,
        c => c as u8,
    }
}

/// The interpreter's number of a GFX11 scalar register field written as a destination
/// (`null` goes to slots nothing reads).
pub(crate) fn sgpr_dst(code: u32) -> u8 {
    match code {
        124 => sreg::NULL_SINK,
        c => sgpr(c),
    }
}

/// The operand a GFX11 9-bit source field names.
fn src9(code: u32, width: u8, literal: u32) -> Operand {
    match code {
        0..=127 => Operand::Sgpr(
            super::operand::align_sgpr(sgpr(code), width.max(1)),
            width.max(1),
        ),
        _ => Operand::from_src9(code as u16, width.max(1), literal),
    }
}

/// A GFX11 scalar destination field.
fn sdst(code: u32, width: u8) -> Operand {
    Operand::Sgpr(sgpr_dst(code), width.max(1))
}

/// The GFX11 format split.
pub(super) fn decode(t: Target, w0: u32, words: &[u32]) -> Option<Inst> {
    let w1 = words.get(1).copied().unwrap_or(0);
    let w2 = words.get(2).copied().unwrap_or(0);
    match w0 >> 23 {
        0x17F => return sopp(t, w0),
        0x17E => return super::gfx9_salu::sopc(t, w0, w1).map(scalar_regs),
        0x17D => return super::gfx9_salu::sop1(t, w0, w1).map(scalar_regs),
        _ => {}
    }
    if w0 >> 28 == 0xB {
        return super::gfx9_salu::sopk(t, w0, w1).map(scalar_regs);
    }
    if w0 >> 30 == 0b10 {
        return super::gfx9_salu::sop2(t, w0, w1).map(scalar_regs);
    }
    match w0 >> 25 {
        0x3F => return vop1(t, w0, w1),
        0x3E => return vopc(t, w0, w1),
        _ => {}
    }
    if w0 >> 31 == 0 {
        return vop2(t, w0, w1);
    }
    match w0 >> 26 {
        0x3D => smem(t, w0, w1),
        0x35 => vop3(t, w0, w1, w2),
        0x33 if w0 >> 24 == 0xCC => vop3p(t, w0, w1, w2),
        0x32 => vopd(t, w0, w1, w2),
        0x36 => ds(t, w0, w1),
        0x37 => flat(t, w0, w1),
        0x38 => buffer(t, Format::Mubuf, w0, w1),
        0x3A => buffer(t, Format::Mtbuf, w0, w1),
        0x3C => mimg(t, w0, w1),
        _ => None,
    }
}

/// The scalar formats decode as on GFX9; their register fields then take GFX11's numbering.
///
/// The destination field of a few SOPK operations is read (`s_cmpk_*`, `s_setreg_b32`, the
/// split `s_waitcnt_*`) or read and written (`s_addk_i32`, `s_mulk_i32`): there `null` is the
/// slots that read 0 (the executor drops the read-modify-writes' write to them).
fn scalar_regs(mut i: Inst) -> Inst {
    let map = |op: &mut Operand, f: fn(u32) -> u8| {
        if let Operand::Sgpr(r, n) = *op {
            *op = Operand::Sgpr(f(u32::from(r)), n);
        }
    };
    let dst_read = i.format == Format::Sopk
        && !matches!(
            i.op,
            Op::SMovkI32 | Op::SCmovkI32 | Op::SGetregB32 | Op::SCallB64
        );
    map(&mut i.dst, if dst_read { sgpr } else { sgpr_dst });
    i.src.iter_mut().for_each(|s| map(s, sgpr));
    i
}

fn sopp(t: Target, w0: u32) -> Option<Inst> {
    super::gfx9_salu::sopp(t, w0)
}

fn smem(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Smem, bits(w0, 18, 8) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    i.flags = flags::IMM
        | flag(bits(w0, 14, 1) != 0, flags::GLC)
        | flag(bits(w0, 13, 1) != 0, flags::DLC);
    let [w_data, w_base, ..] = e.widths;
    let sdata = bits(w0, 6, 7);
    let sbase = sgpr(bits(w0, 0, 6) * 2);
    match e.op {
        Op::SGl1Inv | Op::SDcacheInv => {}
        Op::SAtcProbe | Op::SAtcProbeBuffer => {
            i.offset1 = sdata as u8;
            let w = if e.op == Op::SAtcProbeBuffer { 4 } else { 2 };
            i.saddr = Operand::Sgpr(sbase, w);
        }
        _ => {
            i.dst = sdst(sdata, w_data);
            i.saddr = Operand::Sgpr(sbase, w_base.max(2));
        }
    }
    i.offset = ((bits(w1, 0, 21) << 11) as i32) >> 11;
    let soffset = bits(w1, 25, 7);
    if sgpr(soffset) != sreg::NULL {
        i.flags |= flags::SOE;
        i.soffset = Operand::Sgpr(sgpr(soffset), 1);
    }
    Some(i)
}

/// Applies a DPP16 or DPP8 extension word when src0 says one follows; returns the real src0
/// and how many words the extension adds. The DPP16 word's neg/abs bits are the source
/// modifiers of a VOP1/VOP2/VOPC (`short`); a VOP3 keeps its own and ignores them.
fn extension(
    i: &mut Inst,
    code: u32,
    ext: u32,
    width: u8,
    literal: u32,
    short: bool,
) -> (Operand, u8) {
    match code as u16 {
        src::DPP => {
            i.dpp = Some(Dpp {
                ctrl: bits(ext, 8, 9) as u16,
                row_mask: bits(ext, 28, 4) as u8,
                bank_mask: bits(ext, 24, 4) as u8,
                bound_ctrl: bits(ext, 19, 1) != 0,
                fetch_inactive: bits(ext, 18, 1) != 0,
                lanes8: None,
            });
            if short {
                i.vop3.neg |= (bits(ext, 20, 1) | bits(ext, 22, 1) << 1) as u8;
                i.vop3.abs |= (bits(ext, 21, 1) | bits(ext, 23, 1) << 1) as u8;
            }
            (Operand::Vgpr(bits(ext, 0, 8) as u16, width.max(1)), 1)
        }
        DPP8 | DPP8_FI => {
            i.dpp = Some(Dpp {
                ctrl: 0,
                row_mask: 0xF,
                bank_mask: 0xF,
                bound_ctrl: false,
                fetch_inactive: code as u16 == DPP8_FI,
                lanes8: Some(bits(ext, 8, 24)),
            });
            (Operand::Vgpr(bits(ext, 0, 8) as u16, width.max(1)), 1)
        }
        _ => (src9(code, width, literal), 0),
    }
}

fn vop1(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Vop1, bits(w0, 9, 8) as u16)?;
    let mut i = start(e, [w0, w1], 1);
    if e.widths[0] == 0 {
        return Some(i);
    }
    let [wd, ws, ..] = e.widths;
    // The swaps take only a VGPR: the field's low byte, never a constant or an extension.
    let (s0, ext) = if matches!(e.op, Op::VSwapB32 | Op::VSwaprelB32) {
        (Operand::Vgpr(bits(w0, 0, 8) as u16, ws.max(1)), 0)
    } else {
        extension(&mut i, bits(w0, 0, 9), w1, ws, w1, true)
    };
    let vdst = bits(w0, 17, 8);
    i.dst = match e.op {
        Op::VReadfirstlaneB32 => sdst(vdst, 1),
        _ => Operand::Vgpr(vdst as u16, wd.max(1)),
    };
    i.src[0] = s0;
    i.len = with_literal(1 + ext, &[s0]);
    resolve_constants(&mut i, [ws, 0, 0]);
    Some(i)
}

fn vop2(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Vop2, bits(w0, 25, 6) as u16)?;
    let mut i = start(e, [w0, w1], 1);
    // VOP2 operations that write a carry (printed `v8, vcc_lo, ...`).
    let carry = e.traits.has(traits::CARRY_OUT);
    let w = e.widths;
    let (wd, ws0, ws1) = if carry {
        (w[0], w[2], w[3])
    } else {
        (w[0], w[1], w[2])
    };
    let (s0, ext) = extension(&mut i, bits(w0, 0, 9), w1, ws0, w1, true);
    let s1 = Operand::Vgpr(bits(w0, 9, 8) as u16, ws1.max(1));
    i.dst = Operand::Vgpr(bits(w0, 17, 8) as u16, wd.max(1));
    let mask = Operand::Sgpr(sreg::VCC_LO, 1);
    if carry {
        i.sdst = mask;
    }
    if let Some(srcs) = super::constant_k_sources(e.op, s0, s1, w1) {
        i.src = srcs;
        i.len = 2;
    } else {
        // The carry-in and cndmask's select are VCC, implicitly.
        let third = if matches!(
            e.op,
            Op::VCndmaskB32 | Op::VAddcCoU32 | Op::VSubbCoU32 | Op::VSubbrevCoU32
        ) {
            mask
        } else {
            Operand::None
        };
        i.src = [s0, s1, third];
        i.len = with_literal(1 + ext, &[s0]);
    }
    resolve_constants(&mut i, [ws0, ws1, ws1]);
    Some(i)
}

fn vopc(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Vopc, bits(w0, 17, 8) as u16)?;
    let mut i = start(e, [w0, w1], 1);
    // GFX10+ v_cmpx writes EXEC only (GFX9's wrote VCC too), and prints no destination.
    let cmpx = matches!(e.class, Class::Compare(c) if c.cmpx);
    let (ws0, ws1) = if cmpx {
        (e.widths[0], e.widths[1])
    } else {
        (e.widths[1], e.widths[2])
    };
    if !cmpx {
        i.sdst = Operand::Sgpr(sreg::VCC_LO, 1);
    }
    let (s0, ext) = extension(&mut i, bits(w0, 0, 9), w1, ws0, w1, true);
    let s1 = Operand::Vgpr(bits(w0, 9, 8) as u16, ws1.max(1));
    i.src = [s0, s1, Operand::None];
    i.len = with_literal(1 + ext, &[s0]);
    resolve_constants(&mut i, [ws0, ws1, 0]);
    Some(i)
}

/// Number of sources of a VOP3 entry: its printed register operands minus destinations.
fn source_count(e: &Entry, dsts: usize) -> usize {
    let regs = e.widths.iter().take_while(|&&w| w != 0).count();
    regs.saturating_sub(dsts).min(3)
}

/// The sources of a VOP3/VOP3P word, with a literal or a DPP word in the next dword.
fn vop3_sources(i: &mut Inst, w1: u32, next: u32, count: usize, widths: [u8; 3]) -> u8 {
    let mut extra = 0;
    for k in 0..count {
        let code = bits(w1, 9 * k as u32, 9);
        let (op, ext) = if k == 0 {
            extension(i, code, next, widths[0], next, false)
        } else {
            (src9(code, widths[k], next), 0)
        };
        extra = extra.max(ext);
        i.src[k] = op;
    }
    if i.src.iter().any(|s| s.is_literal()) {
        extra = 1;
    }
    2 + extra
}

fn vop3(t: Target, w0: u32, w1: u32, w2: u32) -> Option<Inst> {
    let opcode = bits(w0, 16, 10) as u16;
    let e = lookup(t, Format::Vop3, opcode)?;
    let mut i = start(e, [w0, w1], 2);
    i.words[2] = w2;
    let vdst = bits(w0, 0, 8);
    let w = e.widths;
    let vop3b = e.traits.has(traits::CARRY_OUT);
    let compare = opcode < 0x100;
    let cmpx = matches!(e.class, Class::Compare(c) if c.cmpx);
    let (dsts, src_w): (usize, [u8; 3]) = if compare && cmpx {
        (0, [w[0], w[1], w[2]])
    } else if compare {
        // An 8-bit scalar field: codes past the SGPRs name the special sources (LLVM prints
        // `src_shared_limit` there).
        i.sdst = if vdst < 128 {
            sdst(vdst, 1)
        } else {
            src9(vdst, 1, 0)
        };
        (1, [w[1], w[2], w[3]])
    } else if vop3b {
        i.dst = Operand::Vgpr(vdst as u16, w[0].max(1));
        i.sdst = sdst(bits(w0, 8, 7), 1);
        (2, [w[2], w[3], w[4]])
    } else {
        i.dst = match e.op {
            Op::VReadlaneB32 => sdst(vdst, 1),
            _ => Operand::Vgpr(vdst as u16, w[0].max(1)),
        };
        (usize::from(w[0] != 0), [w[1], w[2], w[3]])
    };
    let count = source_count(e, dsts);
    i.vop3.neg = bits(w1, 29, 3) as u8;
    i.vop3.abs = if vop3b { 0 } else { bits(w0, 8, 3) as u8 };
    i.len = vop3_sources(&mut i, w1, w2, count, src_w);
    i.vop3.clamp = bits(w0, 15, 1) != 0;
    i.vop3.omod = bits(w1, 27, 2) as u8;
    i.vop3.opsel = if vop3b { 0 } else { bits(w0, 11, 4) as u8 };
    resolve_constants(&mut i, src_w);
    Some(i)
}

fn vop3p(t: Target, w0: u32, w1: u32, w2: u32) -> Option<Inst> {
    let e = lookup(t, Format::Vop3p, bits(w0, 16, 7) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    i.words[2] = w2;
    let w = e.widths;
    i.dst = Operand::Vgpr(bits(w0, 0, 8) as u16, w[0].max(1));
    let count = source_count(e, 1);
    i.len = vop3_sources(&mut i, w1, w2, count, [w[1], w[2], w[3]]);
    i.vop3.clamp = bits(w0, 15, 1) != 0;
    i.vop3.neg = bits(w1, 29, 3) as u8;
    i.vop3.abs = bits(w0, 8, 3) as u8;
    i.vop3.opsel = bits(w0, 11, 3) as u8;
    i.vop3.opsel_hi = (bits(w1, 27, 2) | bits(w0, 14, 1) << 2) as u8;
    resolve_constants(&mut i, [w[1], w[2], w[3]]);
    Some(i)
}

/// One VOPD half as the VOP2 instruction it performs (`v_dual_cndmask_b32` reads VCC
/// implicitly, as the VOP2 form does, and LLVM prints it without).
fn vopd_half(
    e: &'static Entry,
    words: [u32; 3],
    dst: u32,
    src0: u32,
    vsrc1: u32,
    literal: u32,
) -> Inst {
    let mut i = start(e, [words[0], words[1]], 2);
    i.words[2] = words[2];
    i.format = Format::Vop2;
    let [wd, ws0, ws1, ..] = e.widths;
    i.dst = Operand::Vgpr(dst as u16, wd.max(1));
    let s0 = src9(src0, ws0, literal);
    let s1 = Operand::Vgpr(vsrc1 as u16, ws1.max(1));
    i.src = if let Some(srcs) = super::constant_k_sources(e.op, s0, s1, literal) {
        srcs
    } else if e.op == Op::VMovB32 {
        [s0, Operand::None, Operand::None]
    } else {
        [s0, s1, Operand::None]
    };
    resolve_constants(&mut i, [ws0, ws1, ws1]);
    i
}

fn vopd(t: Target, w0: u32, w1: u32, w2: u32) -> Option<Inst> {
    let x = lookup(t, Format::VopdX, bits(w0, 22, 4) as u16)?;
    let y = lookup(t, Format::VopdY, bits(w0, 17, 5) as u16)?;
    let words = [w0, w1, w2];
    let vdstx = bits(w1, 24, 8);
    // VDSTY's low bit is the opposite of VDSTX's (the two write different banks).
    let vdsty = bits(w1, 17, 7) << 1 | (!vdstx & 1);
    let hx = vopd_half(x, words, vdstx, bits(w0, 0, 9), bits(w0, 9, 8), w2);
    let hy = vopd_half(y, words, vdsty, bits(w1, 0, 9), bits(w1, 9, 8), w2);
    let literal = hx.src.iter().chain(&hy.src).any(|s| s.is_literal());
    let (mut hx, mut hy) = (hx, hy);
    if !literal {
        // The third word belongs to the next instruction.
        hx.words[2] = 0;
        hy.words[2] = 0;
    }
    let mut i = start(x, [w0, w1], if literal { 3 } else { 2 });
    i.words[2] = w2;
    i.pair = Some(super::pair::intern([hx, hy]));
    Some(i)
}

fn ds(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Ds, bits(w0, 18, 8) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    i.flags = flag(bits(w0, 17, 1) != 0, flags::GDS);
    i.offset = bits(w0, 0, 8) as i32;
    i.offset1 = bits(w0, 8, 8) as u8;
    super::gfx9_mem::ds_operands(&mut i, e.widths, w1, false);
    // GFX11's compare-stores take the new value first and the compare value second, GFX9's
    // `ds_cmpst` the other way round: the executor reads GFX9's order.
    if matches!(
        i.class,
        Class::Ds(DsOp {
            class: DsClass::Atomic(AtomicOp::CmpSwap),
            ..
        })
    ) {
        i.src.swap(1, 2);
    }
    Some(i)
}

fn flat(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let format = match bits(w0, 16, 2) {
        0 => Format::Flat,
        1 => Format::Scratch,
        2 => Format::Global,
        _ => return None,
    };
    let e = lookup(t, format, bits(w0, 18, 7) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    let glc = bits(w0, 14, 1) != 0;
    let sve = format == Format::Scratch && bits(w1, 23, 1) != 0;
    i.flags = flag(glc, flags::GLC)
        | flag(bits(w0, 15, 1) != 0, flags::SLC)
        | flag(bits(w0, 13, 1) != 0, flags::DLC)
        | flag(sve, flags::SVE);
    i.offset = if format == Format::Flat {
        bits(w0, 0, 12) as i32
    } else {
        ((bits(w0, 0, 13) << 19) as i32) >> 19
    };
    let saddr = sgpr(bits(w1, 16, 7));
    let has_saddr = format != Format::Flat && saddr != sreg::NULL;
    if has_saddr {
        let width = if format == Format::Global { 2 } else { 1 };
        i.saddr = Operand::Sgpr(saddr, width);
    } else if format != Format::Flat {
        i.saddr = Operand::Off;
    }
    let vaddr_used = match format {
        Format::Scratch => sve,
        _ => true,
    };
    let addr_w = if format == Format::Scratch || has_saddr {
        1
    } else {
        2
    };
    i.src[0] = if e.traits.has(traits::NO_ADDRESS) {
        Operand::None
    } else if vaddr_used {
        Operand::Vgpr(bits(w1, 0, 8) as u16, addr_w)
    } else {
        Operand::Off
    };
    super::gfx9_mem::flat_data(
        &mut i,
        e.widths,
        bits(w1, 24, 8),
        bits(w1, 8, 8),
        false,
        glc,
    );
    Some(i)
}

fn buffer(t: Target, format: Format, w0: u32, w1: u32) -> Option<Inst> {
    let opcode = if format == Format::Mtbuf {
        bits(w0, 15, 4)
    } else {
        bits(w0, 18, 8)
    };
    let e = lookup(t, format, opcode as u16)?;
    let mut i = start(e, [w0, w1], 2);
    let glc = bits(w0, 14, 1) != 0;
    i.flags = flag(bits(w0, 12, 1) != 0, flags::SLC) | flag(bits(w0, 13, 1) != 0, flags::DLC);
    if e.widths[0] == 0 {
        // Cache invalidates (buffer_gl0_inv, buffer_gl1_inv): no operands.
        return Some(i);
    }
    if format == Format::Mtbuf {
        // GFX11's unified format number (BUF_FMT_*), kept in offset1.
        i.offset1 = bits(w0, 19, 7) as u8;
    } else {
        // GFX11's loads into LDS are operations of their own (`buffer_load_lds_*`).
        i.flags |= flag(e.traits.has(traits::LDS_DMA), flags::LDS);
    }
    let offen = bits(w1, 22, 1) != 0;
    let idxen = bits(w1, 23, 1) != 0;
    i.flags |= flag(glc, flags::GLC)
        | flag(offen, flags::OFFEN)
        | flag(idxen, flags::IDXEN)
        // LLVM gives TFE to MUBUF loads and stores only (not atomics, not MTBUF).
        | flag(
            bits(w1, 21, 1) != 0 && format == Format::Mubuf && !e.traits.has(traits::ATOMIC),
            flags::NV,
        );
    i.offset = bits(w0, 0, 12) as i32;
    let vaddr = bits(w1, 0, 8) as u16;
    i.src[0] = match (offen, idxen) {
        (false, false) => Operand::Off,
        (true, true) => Operand::Vgpr(vaddr, 2),
        _ => Operand::Vgpr(vaddr, 1),
    };
    i.saddr = Operand::Sgpr(sgpr(bits(w1, 16, 5) * 4), 4);
    // Memory instructions take no literal (llvm-mc refuses one in SOFFSET; its disassembler
    // reads a third dword for code 255 all the same): the encoding is refused.
    let soffset = bits(w1, 24, 8);
    if soffset == u32::from(src::LITERAL) {
        return None;
    }
    i.soffset = src9(soffset, 1, 0);
    i.imm[2] = i.soffset.constant(DataSize::B32, false).unwrap_or(0);
    if !i.has(flags::LDS) {
        let data_w = e.widths[0];
        super::gfx9_mem::buffer_data(&mut i, data_w, bits(w1, 8, 8) as u16, false, glc);
    }
    Some(i)
}

/// MIMG: decoded for the disassembler (the data, address and resource registers); GFX11's
/// image descriptors are not interpreted, so these do not run.
fn mimg(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Mimg, bits(w0, 18, 8) as u16)?;
    // Non-sequential addresses (NSA) add words; not decoded.
    if bits(w0, 0, 1) != 0 {
        return None;
    }
    let mut i = start(e, [w0, w1], 2);
    let dmask = bits(w0, 8, 4) as u8;
    i.offset1 = dmask;
    i.offset = bits(w0, 2, 3) as i32;
    // Flags GFX11 images do not use hold its R128 (DA's bit) and LWE (ACC's bit).
    i.flags = flag(bits(w0, 7, 1) != 0, flags::UNORM)
        | flag(bits(w0, 14, 1) != 0, flags::GLC)
        | flag(bits(w0, 12, 1) != 0, flags::SLC)
        | flag(bits(w0, 13, 1) != 0, flags::DLC)
        | flag(bits(w0, 15, 1) != 0, flags::DA)
        | flag(bits(w0, 16, 1) != 0, flags::A16)
        | flag(bits(w0, 17, 1) != 0, flags::D16)
        | flag(bits(w1, 21, 1) != 0, flags::NV)
        | flag(bits(w1, 22, 1) != 0, flags::ACC);
    let (wd, wa) = mimg_sizes(&i, dmask, bits(w1, 8, 8), bits(w1, 0, 8));
    let data = Operand::Vgpr(bits(w1, 8, 8) as u16, wd);
    i.src[0] = Operand::Vgpr(bits(w1, 0, 8) as u16, wa);
    i.saddr = Operand::Sgpr(sgpr(bits(w1, 16, 5) * 4), 8);
    if e.traits.has(traits::SAMPLER) {
        i.soffset = Operand::Sgpr(sgpr(bits(w1, 26, 5) * 4), 4);
    }
    if e.traits.has(traits::STORE) || e.traits.has(traits::ATOMIC) {
        i.src[1] = data;
        if e.traits.has(traits::ATOMIC) {
            i.dst = data;
        }
    } else {
        i.dst = data;
    }
    Some(i)
}

/// The data and address register counts of a GFX11 image instruction, as LLVM's
/// disassembler settles them (`convertMIMGInst`): the data from DMASK (four for gathers and
/// MSAA loads), halved by packed D16, one more with TFE; the address from the dimension's
/// coordinates, the operation's extra arguments (offset, bias, compare, LOD/clamp/mip,
/// gradients) and A16 packing. LLVM has a register-size variant of each operation only for
/// the sizes some dimension needs; when the two counts name no variant, it keeps the one it
/// decoded first: one data register (two for a compare-swap) and the smallest address.
fn mimg_sizes(i: &Inst, dmask: u8, vdata: u32, vaddr: u32) -> (u8, u8) {
    // Coordinates and gradients per dimension (1D, 2D, 3D, cube, 1D and 2D arrays, MSAA, MSAA
    // array).
    const COORDS: [u8; 8] = [1, 2, 3, 3, 2, 3, 3, 4];
    const GRADIENTS: [u8; 8] = [2, 4, 6, 4, 2, 4, 4, 4];
    let dim = (i.offset & 7) as usize;
    let a16 = i.has(flags::A16);
    let Class::Image(args) = i.class else {
        return (1, 1);
    };
    let sampler = i.is(traits::SAMPLER);
    let (gradients, g16, lod_clamp, extra) = (args.gradients, args.g16, args.lod_clamp, args.extra);
    let coords = if args.no_coords { 0 } else { COORDS[dim] };
    let components = coords + u8::from(lod_clamp || args.mip);
    let mut addr = extra
        + if a16 {
            components.div_ceil(2)
        } else {
            components
        };
    if gradients {
        // GFX11 has G16 forms, so A16 leaves the gradients 32-bit.
        addr += if g16 {
            (GRADIENTS[dim] / 2).next_multiple_of(2)
        } else {
            GRADIENTS[dim]
        };
    }
    if addr > 12 {
        addr = 16;
    }
    let mut data = if args.four_channels {
        4
    } else {
        (dmask.count_ones() as u8).max(1)
    };
    if i.has(flags::D16) {
        data = data.div_ceil(2);
    }
    if i.has(flags::NV) {
        data += 1;
    }
    // The address sizes LLVM has a variant for (`MIMG_Sampler_AddrSizes`: the sizes any
    // dimension needs, in its register classes; four for the others).
    let addr_sizes: Vec<u8> = if sampler {
        let mut needed: Vec<u8> = match (gradients, g16, lod_clamp) {
            (false, _, false) => vec![1, 2, 3],
            (false, _, true) => vec![1, 2, 3, 4],
            (true, true, false) => vec![2, 3, 4, 5, 6, 7],
            (true, true, true) => vec![2, 3, 4, 5, 6, 7, 8],
            (true, false, false) => vec![2, 3, 4, 5, 6, 7, 8, 9],
            (true, false, true) => vec![2, 3, 4, 5, 6, 7, 8, 9, 10],
        };
        needed.iter_mut().for_each(|n| *n += extra);
        const RANGES: [(u8, u8); 13] = [
            (1, 1),
            (2, 2),
            (3, 3),
            (3, 4),
            (5, 5),
            (6, 6),
            (7, 7),
            (5, 8),
            (9, 9),
            (10, 10),
            (11, 11),
            (12, 12),
            (13, 16),
        ];
        RANGES
            .iter()
            .filter(|(lo, hi)| needed.iter().any(|n| (lo..=hi).contains(&n)))
            .map(|&(_, hi)| hi)
            .collect()
    } else {
        vec![1, 2, 3, 4]
    };
    // The data sizes LLVM has a variant for, the first the one it decodes.
    let data_sizes: &[u8] = match args.data {
        ImageData::CmpSwap => &[2, 4],
        ImageData::Atomic => &[1, 2],
        ImageData::Gather => &[4, 2, 5],
        ImageData::Plain => &[1, 2, 3, 4, 5],
    };
    let first_addr = addr_sizes.first().copied().unwrap_or(1);
    let first_data = data_sizes.first().copied().unwrap_or(1);
    // A register range past v255 is no operand either: LLVM keeps the first variant then.
    let fits = |first: u32, n: u8| first + u32::from(n) <= 256;
    if data_sizes.contains(&data)
        && addr_sizes.contains(&addr)
        && fits(vdata, data)
        && fits(vaddr, addr)
    {
        (data, addr)
    } else {
        (first_data, first_addr)
    }
}
