//! GFX9 memory encodings: SMEM, DS, FLAT/SCRATCH/GLOBAL, MUBUF, MTBUF.

use super::attrs::{traits, Class};
use super::inst::flags;
use super::memop::{DsClass, DsOp};
use super::op::Op;
use super::operand::{align_sgpr, Operand};
use super::table::{lookup, Format};
use super::{start, Inst};
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

pub(super) fn smem(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Smem, bits(w0, 18, 8) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    let imm = bits(w0, 17, 1) != 0;
    let soe = bits(w0, 14, 1) != 0;
    i.flags = flag(imm, flags::IMM)
        | flag(soe, flags::SOE)
        | flag(bits(w0, 16, 1) != 0, flags::GLC)
        | flag(bits(w0, 15, 1) != 0, flags::NV);
    let [w_data, w_base, ..] = e.widths;
    let sdata = bits(w0, 6, 7) as u8;
    let sbase = (bits(w0, 0, 6) * 2) as u8;
    match e.op {
        // Cache maintenance: no operands.
        Op::SDcacheInv | Op::SDcacheInvVol | Op::SDcacheWb | Op::SDcacheWbVol => {}
        Op::SMemtime | Op::SMemrealtime => i.dst = Operand::Sgpr(sdata, 2),
        Op::SDcacheDiscard | Op::SDcacheDiscardX2 => i.saddr = Operand::Sgpr(sbase, w_data.max(2)),
        Op::SAtcProbe | Op::SAtcProbeBuffer => {
            i.offset1 = sdata;
            let w = if e.op == Op::SAtcProbeBuffer { 4 } else { 2 };
            i.saddr = Operand::Sgpr(sbase, w);
        }
        _ => {
            i.dst = Operand::Sgpr(align_sgpr(sdata, w_data), w_data.max(1));
            i.saddr = Operand::Sgpr(sbase, w_base.max(2));
        }
    }
    if imm {
        // A signed 21-bit byte offset.
        i.offset = ((bits(w1, 0, 21) << 11) as i32) >> 11;
        if soe {
            i.soffset = Operand::Sgpr(bits(w1, 25, 7) as u8, 1);
        }
    } else if soe {
        // No immediate: the offset is the SGPR in SOFFSET (OFFSET is not read).
        i.soffset = Operand::Sgpr(bits(w1, 25, 7) as u8, 1);
    } else {
        i.soffset = Operand::Sgpr(bits(w1, 0, 7) as u8, 1);
    }
    Some(i)
}

pub(super) fn ds(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Ds, bits(w0, 17, 8) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    let acc = bits(w0, 25, 1) != 0;
    i.flags = flag(bits(w0, 16, 1) != 0, flags::GDS) | flag(acc, flags::ACC);
    i.offset = bits(w0, 0, 8) as i32;
    i.offset1 = bits(w0, 8, 8) as u8;
    ds_operands(&mut i, e.widths, w1, acc);
    Some(i)
}

/// A DS instruction's registers from its second word, by its table attributes and operand
/// widths: the destination of the operations that return data, the address, and the data
/// operands (AGPRs where `acc` says so).
pub(super) fn ds_operands(i: &mut Inst, w: [u8; 6], w1: u32, acc: bool) {
    let reg = |r: u32, w: u8| {
        if acc {
            Operand::Agpr(r as u16, w.max(1))
        } else {
            Operand::Vgpr(r as u16, w.max(1))
        }
    };
    let regs = w.iter().take_while(|&&x| x != 0).count();
    if regs == 0 {
        return;
    }
    let returns = i.is(traits::RETURNS);
    let rest = if returns {
        i.dst = reg(bits(w1, 24, 8), w[0]);
        w.get(1..).unwrap_or(&[])
    } else {
        &w[..]
    };
    if matches!(
        i.class,
        Class::Ds(DsOp {
            class: DsClass::Gws(_),
            ..
        })
    ) {
        // The one data register of a GWS operation sits in the address field (llvm-mc:
        // `ds_gws_init v5 offset:3 gds` is 0xd9330003 0x00000005).
        i.src[0] = reg(bits(w1, 0, 8), w[0]);
        return;
    }
    if i.is(traits::GS_REGISTER) {
        // GFX11's GS register operations: their one source is the data field.
        i.src[0] = reg(bits(w1, 8, 8), rest.first().copied().unwrap_or(1));
        return;
    }
    let no_addr = i.is(traits::NO_ADDRESS) || (returns && regs == 1);
    let mut it = rest.iter().copied();
    if !no_addr {
        i.src[0] = Operand::Vgpr(bits(w1, 0, 8) as u16, it.next().unwrap_or(1).max(1));
    }
    if let Some(d0) = it.next().filter(|&x| x != 0) {
        i.src[1] = reg(bits(w1, 8, 8), d0);
    }
    if let Some(d1) = it.next().filter(|&x| x != 0) {
        i.src[2] = reg(bits(w1, 16, 8), d1);
    }
}

pub(super) fn flat(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let format = match bits(w0, 14, 2) {
        0 => Format::Flat,
        1 => Format::Scratch,
        2 => Format::Global,
        _ => return None,
    };
    let e = lookup(t, format, bits(w0, 18, 7) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    let acc = bits(w1, 23, 1) != 0;
    let glc = bits(w0, 16, 1) != 0;
    let sve = t.gfx940_cache_bits() && format == Format::Scratch && bits(w0, 13, 1) != 0;
    i.flags = flag(glc, flags::GLC)
        | flag(bits(w0, 17, 1) != 0, flags::SLC)
        | flag(bits(w0, 25, 1) != 0, flags::SCC)
        | flag(!sve && bits(w0, 13, 1) != 0, flags::LDS)
        // gfx940's loads into LDS are operations of their own (`global_load_lds_dword`).
        | flag(e.traits.has(traits::LDS_DMA), flags::LDS)
        | flag(sve, flags::SVE)
        | flag(acc, flags::ACC);
    i.offset = if format == Format::Flat {
        bits(w0, 0, 12) as i32
    } else {
        // 13-bit signed.
        ((bits(w0, 0, 13) << 19) as i32) >> 19
    };
    let saddr = bits(w1, 16, 7);
    let has_saddr = format != Format::Flat && saddr != 0x7F;
    if has_saddr {
        i.saddr = Operand::Sgpr(saddr as u8, if format == Format::Global { 2 } else { 1 });
    } else if format != Format::Flat {
        i.saddr = Operand::Off;
    }
    let vaddr_used = match format {
        Format::Flat | Format::Global => true,
        _ if t.gfx940_cache_bits() => sve,
        _ => !has_saddr,
    };
    let addr_w = if format == Format::Scratch || has_saddr {
        1
    } else {
        2
    };
    i.src[0] = if vaddr_used {
        Operand::Vgpr(bits(w1, 0, 8) as u16, addr_w)
    } else {
        Operand::Off
    };
    flat_data(&mut i, e.widths, bits(w1, 24, 8), bits(w1, 8, 8), acc, glc);
    Some(i)
}

/// A FLAT/GLOBAL/SCRATCH instruction's data and destination registers, by its traits: `vdst`
/// and `data` are the register fields, `acc` puts them in AGPRs, `glc` makes an atomic return
/// the old value.
pub(super) fn flat_data(i: &mut Inst, w: [u8; 6], vdst: u32, data: u32, acc: bool, glc: bool) {
    let reg = |r: u32, w: u8| {
        if acc {
            Operand::Agpr(r as u16, w.max(1))
        } else {
            Operand::Vgpr(r as u16, w.max(1))
        }
    };
    // The data operand is printed last (the address may be `off` and then has no width).
    let data_w = w.iter().copied().rfind(|&x| x != 0).unwrap_or(1);
    if i.is(traits::LDS_DMA) {
        // Loads straight into LDS (gfx940): no destination register.
    } else if i.is(traits::LOAD) {
        i.dst = reg(vdst, w[0]);
    } else if i.is(traits::ATOMIC) {
        i.src[1] = reg(data, data_w);
        if glc {
            let dw = if i.is(traits::CMPSWAP) {
                (data_w / 2).max(1)
            } else {
                data_w
            };
            i.dst = reg(vdst, dw);
        }
    } else {
        i.src[1] = reg(data, data_w);
    }
}

/// The MUBUF/MTBUF fields both share.
fn buffer_common(i: &mut Inst, t: Target, w0: u32, w1: u32, data_w: u8) {
    let acc = bits(w1, 23, 1) != 0 && t.unified_vgpr_file();
    let glc = bits(w0, 14, 1) != 0;
    let offen = bits(w0, 12, 1) != 0;
    let idxen = bits(w0, 13, 1) != 0;
    i.flags |= flag(glc, flags::GLC)
        | flag(offen, flags::OFFEN)
        | flag(idxen, flags::IDXEN)
        | flag(acc, flags::ACC);
    i.offset = bits(w0, 0, 12) as i32;
    let vaddr = bits(w1, 0, 8) as u16;
    i.src[0] = match (offen, idxen) {
        (false, false) => Operand::Off,
        (true, true) => Operand::Vgpr(vaddr, 2),
        _ => Operand::Vgpr(vaddr, 1),
    };
    i.saddr = Operand::Sgpr((bits(w1, 16, 5) * 4) as u8, 4);
    i.soffset = Operand::from_src9(bits(w1, 24, 8) as u16, 1, 0);
    if let Operand::Int(v) = i.soffset {
        i.imm[2] = v as i64 as u64;
    }
    buffer_data(i, data_w, bits(w1, 8, 8) as u16, acc, glc);
}

/// A MUBUF/MTBUF instruction's data register (`vdata`, `data_w` wide), by its traits: the
/// destination of a load, the source of a store or atomic, and an atomic's destination when
/// `glc` returns the old value.
pub(super) fn buffer_data(i: &mut Inst, data_w: u8, vdata: u16, acc: bool, glc: bool) {
    let data = if acc {
        Operand::Agpr(vdata, data_w.max(1))
    } else {
        Operand::Vgpr(vdata, data_w.max(1))
    };
    if i.is(traits::LOAD) {
        i.dst = data;
    } else {
        i.src[1] = data;
        if glc && i.is(traits::ATOMIC) {
            let dw = if i.is(traits::CMPSWAP) {
                (data_w / 2).max(1)
            } else {
                data_w.max(1)
            };
            i.dst = if acc {
                Operand::Agpr(vdata, dw)
            } else {
                Operand::Vgpr(vdata, dw)
            };
        }
    }
}

pub(super) fn mubuf(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Mubuf, bits(w0, 18, 7) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    if e.widths[0] == 0 {
        // Cache maintenance (buffer_wbinvl1_vol, buffer_wbl2, ...): no operands, but the
        // encoding's two words all the same (llvm-mc: `buffer_wbinvl1_vol` is
        // 0xe0fc0000 0x00000000). Taking one word ran the second as an instruction.
        i.flags = flag(bits(w0, 14, 1) != 0, flags::GLC)
            | flag(bits(w0, 15, 1) != 0, flags::SCC)
            | flag(bits(w0, 17, 1) != 0, flags::SLC);
        return Some(i);
    }
    i.flags = flag(bits(w0, 17, 1) != 0, flags::SLC)
        | flag(bits(w0, 16, 1) != 0, flags::LDS)
        | flag(bits(w0, 15, 1) != 0, flags::SCC);
    buffer_common(&mut i, t, w0, w1, e.widths[0]);
    Some(i)
}

pub(super) fn mtbuf(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Mtbuf, bits(w0, 15, 4) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    i.flags = flag(bits(w1, 22, 1) != 0, flags::SLC)
        | flag(t.unified_vgpr_file() && bits(w1, 21, 1) != 0, flags::SCC);
    // The data and number formats are kept in offset1 (dfmt low nibble, nfmt high bits).
    i.offset1 = (bits(w0, 19, 4) | bits(w0, 23, 3) << 4) as u8;
    buffer_common(&mut i, t, w0, w1, e.widths[0]);
    Some(i)
}

/// MIMG (gfx90a): image loads, stores, atomics and samples. The address is one VGPR as LLVM
/// prints it (the coordinates follow in the next ones, as many as the image's type needs); the
/// data registers are as many as DMASK has bits (half that with D16), or the atomic's width.
pub(super) fn mimg(t: Target, w0: u32, w1: u32) -> Option<Inst> {
    let e = lookup(t, Format::Mimg, bits(w0, 18, 7) as u16)?;
    let mut i = start(e, [w0, w1], 2);
    let dmask = bits(w0, 8, 4) as u8;
    let d16 = bits(w1, 31, 1) != 0;
    let acc = bits(w0, 16, 1) != 0;
    i.offset1 = dmask;
    i.flags = flag(bits(w0, 12, 1) != 0, flags::UNORM)
        | flag(bits(w0, 13, 1) != 0, flags::GLC)
        | flag(bits(w0, 14, 1) != 0, flags::DA)
        | flag(bits(w0, 15, 1) != 0, flags::A16)
        | flag(acc, flags::ACC)
        | flag(bits(w0, 17, 1) != 0, flags::NV)
        | flag(bits(w0, 25, 1) != 0, flags::SLC)
        | flag(d16, flags::D16);
    let atomic = e.traits.has(traits::ATOMIC);
    let width = if atomic {
        // A 32-bit atomic's data (two for a compare-swap); DMASK with twice as many bits says
        // 64-bit (LLVM decodes it so).
        let base = if e.traits.has(traits::CMPSWAP) { 2 } else { 1 };
        if dmask.count_ones() == 2 * base {
            2 * base as u8
        } else {
            base as u8
        }
    } else {
        let n = (dmask.count_ones() as u8).max(1);
        if d16 {
            n.div_ceil(2)
        } else {
            n
        }
    };
    let vdata = bits(w1, 8, 8) as u16;
    let data = if acc {
        Operand::Agpr(vdata, width)
    } else {
        Operand::Vgpr(vdata, width)
    };
    i.src[0] = Operand::Vgpr(bits(w1, 0, 8) as u16, 1);
    i.saddr = Operand::Sgpr((bits(w1, 16, 5) * 4) as u8, 8);
    if e.traits.has(traits::SAMPLER) {
        i.soffset = Operand::Sgpr((bits(w1, 21, 5) * 4) as u8, 4);
    }
    if e.traits.has(traits::STORE) || atomic {
        i.src[1] = data;
        if atomic {
            i.dst = data;
        }
    } else {
        i.dst = data;
    }
    Some(i)
}
