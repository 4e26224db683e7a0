//! DS instructions: LDS loads, stores and atomics, and the cross-lane ops that use the DS
//! unit without touching LDS (`ds_swizzle_b32`, `ds_permute_b32`, `ds_bpermute_b32`).
//!
//! A work-group's waves run one at a time, so LDS read-modify-writes are atomic by
//! construction. Accesses outside the work-group's LDS allocation read 0 and write nothing,
//! as on the hardware.

use super::lanes::swizzle_source;
use super::wave::{Lanes, Wave, LANES};
use super::{Ctx, Flow};
use crate::decode::memop::{DsClass, DsOp, GwsOp};
use crate::decode::{Inst, Op, Operand};
use crate::error::WaveError;
use crate::memory::{AtomicOp, Memory};

/// A lane's LDS address: the VGPR plus the instruction's offset, in 32 bits. The sum wraps as
/// the hardware's does, and compilers count on it: LLVM folds a constant into the offset of a
/// base that is negative as an integer (`ds_read_b32 v0, v0 offset:508` with `v0 = -4 * t`).
#[inline]
fn lds_address(vgpr: u32, offset: u64) -> u64 {
    u64::from(vgpr.wrapping_add(offset as u32))
}

fn lds_read(lds: &[u8], addr: u64, out: &mut [u8]) {
    let a = addr as usize;
    match lds.get(a..a + out.len()) {
        Some(s) => out.copy_from_slice(s),
        None => out.fill(0),
    }
}

/// A dword of LDS (0 outside the allocation).
#[inline]
fn lds_u32(lds: &[u8], addr: u64) -> u32 {
    let a = addr as usize;
    match lds.get(a..a.wrapping_add(4)) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

fn lds_write(lds: &mut [u8], addr: u64, data: &[u8]) {
    let a = addr as usize;
    if let Some(s) = lds.get_mut(a..a + data.len()) {
        s.copy_from_slice(data);
    }
}

fn reg_u64(w: &Wave, inst: &Inst, op: Operand, wide: bool) -> Result<[u64; LANES], WaveError> {
    let lo = *w.vreg(inst, op, 0)?;
    let hi = if wide {
        *w.vreg(inst, op, 1)?
    } else {
        [0; LANES]
    };
    Ok(std::array::from_fn(|l| {
        u64::from(lo[l]) | u64::from(hi[l]) << 32
    }))
}

fn write_result(
    w: &mut Wave,
    inst: &Inst,
    vals: &[u64; LANES],
    dwords: usize,
    exec: u64,
) -> Result<(), WaveError> {
    for k in 0..dwords {
        let reg = w.vreg_mut(inst, inst.dst, k)?;
        for (l, r) in reg.iter_mut().enumerate() {
            if exec >> l & 1 != 0 {
                *r = (vals[l] >> (32 * k)) as u32;
            }
        }
    }
    Ok(())
}

pub(super) fn exec<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
) -> Result<(), WaveError> {
    let exec = w.exec();
    let offset16 = (inst.offset as u64 & 0xFF) | u64::from(inst.offset1) << 8;
    match inst.op {
        Op::DsSwizzleB32 | Op::DsBpermuteB32 | Op::DsPermuteB32 => {
            return cross_lane(w, inst, exec, offset16)
        }
        Op::DsNop => return Ok(()),
        _ => {}
    }
    if inst.has(crate::decode::flags::GDS) {
        return Err(w.unimplemented(inst));
    }
    let crate::decode::Class::Ds(ds) = inst.class else {
        return Err(w.unimplemented(inst));
    };
    let elem = usize::from(ds.size);
    if ctx.lds_shadow.is_some() {
        note_lds(w, inst, ctx, exec, ds, offset16)?;
    }
    match ds.class {
        DsClass::Read2 | DsClass::Write2 => two_addresses(w, inst, ctx, exec, ds),
        DsClass::Read if elem % 4 == 0 && ds.d16.is_none() => {
            // Whole dwords (b32, b64, b96, b128).
            let addr = w.vreg(inst, inst.src[0], 0)?;
            let words = elem / 4;
            let mut vals = [[0u32; LANES]; 4];
            for l in 0..LANES {
                if exec >> l & 1 != 0 {
                    let a = lds_address(addr[l], offset16);
                    for (k, v) in vals.iter_mut().enumerate().take(words) {
                        v[l] = lds_u32(&ctx.lds, a + 4 * k as u64);
                    }
                }
            }
            for (k, v) in vals.iter().enumerate().take(words) {
                let dst = w.vreg_mut(inst, inst.dst, k)?;
                for l in 0..LANES {
                    if exec >> l & 1 != 0 {
                        dst[l] = v[l];
                    }
                }
            }
            Ok(())
        }
        DsClass::Read => {
            let addr = w.vreg(inst, inst.src[0], 0)?;
            let mut regs = [[0u32; LANES]; 4];
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let mut b = [0u8; 16];
                lds_read(
                    &ctx.lds,
                    lds_address(addr[l], offset16),
                    b.get_mut(..elem).unwrap_or(&mut []),
                );
                for (k, reg) in regs.iter_mut().enumerate() {
                    reg[l] =
                        u32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]);
                }
                let x = regs[0][l];
                regs[0][l] = match (elem, ds.signed) {
                    (1, true) => x as u8 as i8 as i32 as u32,
                    (2, true) => x as u16 as i16 as i32 as u32,
                    _ => x,
                };
            }
            for (k, reg) in regs.iter().enumerate().take(elem.div_ceil(4)) {
                let dst = w.vreg_mut(inst, inst.dst, k)?;
                for l in 0..LANES {
                    if exec >> l & 1 != 0 {
                        dst[l] = match ds.d16 {
                            None => reg[l],
                            Some(false) => (dst[l] & 0xFFFF_0000) | (reg[l] & 0xFFFF),
                            Some(true) => (dst[l] & 0xFFFF) | reg[l] << 16,
                        };
                    }
                }
            }
            Ok(())
        }
        DsClass::Write => {
            let hi = ds.d16 == Some(true);
            let addr = *w.vreg(inst, inst.src[0], 0)?;
            let mut regs = [[0u32; LANES]; 4];
            for (k, r) in regs.iter_mut().enumerate().take(elem.div_ceil(4)) {
                *r = *w.vreg(inst, inst.src[1], k)?;
            }
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let mut b = [0u8; 16];
                for (k, reg) in regs.iter().enumerate() {
                    let v = if hi { reg[l] >> 16 } else { reg[l] };
                    if let Some(d) = b.get_mut(4 * k..4 * k + 4) {
                        d.copy_from_slice(&v.to_le_bytes());
                    }
                }
                lds_write(
                    &mut ctx.lds,
                    lds_address(addr[l], offset16),
                    b.get(..elem).unwrap_or(&[]),
                );
            }
            Ok(())
        }
        DsClass::Atomic(op) => rmw(w, inst, ctx, exec, offset16, elem == 8, &|o, d0, d1| {
            let (src, cmp) = if op == AtomicOp::CmpSwap {
                // ds_cmpst: data0 is the compare value, data1 the new one.
                (d1, d0)
            } else {
                (d0, 0)
            };
            if elem == 8 {
                op.apply64(o, src, cmp)
            } else {
                u64::from(op.apply32(o as u32, src as u32, cmp as u32))
            }
        }),
        DsClass::RSub => rmw(w, inst, ctx, exec, offset16, elem == 8, &|o, d0, _| {
            d0.wrapping_sub(o)
        }),
        DsClass::MskOr => rmw(w, inst, ctx, exec, offset16, elem == 8, &|o, d0, d1| {
            (o & !d0) | d1
        }),
        DsClass::Xchg2 => xchg2(w, inst, ctx, exec, ds),
        DsClass::Append(consume) => {
            let a = u64::from(w.s[124] & 0xFFFF) + offset16;
            let old = lds_u32(&ctx.lds, a);
            let n = exec.count_ones();
            let new = if consume {
                old.wrapping_sub(n)
            } else {
                old.wrapping_add(n)
            };
            lds_write(&mut ctx.lds, a, &new.to_le_bytes());
            let dst = w.vreg_mut(inst, inst.dst, 0)?;
            for l in 0..LANES {
                if exec >> l & 1 != 0 {
                    dst[l] = old;
                }
            }
            Ok(())
        }
        DsClass::Other | DsClass::Gws(_) => Err(w.unimplemented(inst)),
    }
}

/// The sanitizer's view of a DS instruction: each active lane's LDS accesses checked against
/// and recorded in the work-group's shadow (see [`crate::sanitize`]); the first finding of the
/// instruction is reported.
#[cold]
#[inline(never)]
fn note_lds<M: Memory + ?Sized>(
    w: &Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    exec: u64,
    ds: DsOp,
    offset16: u64,
) -> Result<(), WaveError> {
    use crate::sanitize::LdsAccess;
    let elem = u64::from(ds.size);
    let scale = if ds.st64 { 64 } else { 1 } * elem;
    let pair = [
        (inst.offset as u64 & 0xFF) * scale,
        u64::from(inst.offset1) * scale,
    ];
    let (how, offsets): (LdsAccess, &[u64]) = match ds.class {
        DsClass::Read => (LdsAccess::Read, &[offset16]),
        DsClass::Write => (LdsAccess::Write, &[offset16]),
        DsClass::Read2 => (LdsAccess::Read, &pair),
        DsClass::Write2 => (LdsAccess::Write, &pair),
        DsClass::Xchg2 => (LdsAccess::Atomic, &pair),
        DsClass::Atomic(_) | DsClass::RSub | DsClass::MskOr => (LdsAccess::Atomic, &[offset16]),
        DsClass::Append(_) => (LdsAccess::Atomic, &[offset16]),
        DsClass::Other | DsClass::Gws(_) => return Ok(()),
    };
    // Each lane's address, or for an append the wave's one access at M0's address.
    let (addr, lanes) = if matches!(ds.class, DsClass::Append(_)) {
        let mut a = [0u32; LANES];
        a[0] = w.s[124] & 0xFFFF;
        (a, exec.min(1))
    } else {
        (*w.vreg(inst, inst.src[0], 0)?, exec)
    };
    let accesses = (0..LANES)
        .filter(|l| lanes >> l & 1 == 1)
        .flat_map(|l| offsets.iter().map(move |&o| (l, lds_address(addr[l], o))));
    record(w, inst, ctx, accesses, elem as u32, how);
    Ok(())
}

/// Checks `accesses` (lane, LDS offset) of `bytes` each against the work-group's sanitizer
/// shadow and records them; the first finding is reported.
fn record<M: Memory + ?Sized>(
    w: &Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    accesses: impl Iterator<Item = (usize, u64)>,
    bytes: u32,
    how: crate::sanitize::LdsAccess,
) {
    use crate::sanitize::{DsAccess, Finding, LdsAccess};
    let Ctx {
        lds_shadow: Some(shadow),
        setup,
        group_id,
        ..
    } = ctx
    else {
        return;
    };
    let mut reported = false;
    for (l, offset) in accesses {
        let found = shadow.access(&DsAccess {
            pc: w.pc,
            wave: w.index,
            offset,
            bytes,
            how,
        });
        let (Some((kind, other)), false, Some(s)) = (found, reported, &setup.sanitize) else {
            continue;
        };
        reported = true;
        (s.sink)(&Finding {
            kind,
            pc: w.pc,
            instruction: crate::disasm::disassemble(setup.target, inst),
            work_group: *group_id,
            wave: w.index,
            lane: l as u32,
            address: offset,
            bytes,
            write: how != LdsAccess::Read,
            buffer: None,
            other,
        });
    }
}

/// The LDS half of a load into LDS (MUBUF's `lds` bit, `global_load_lds_*`,
/// `buffer_load_lds_*`): active lane `l`'s dword `vals[l]` goes to `M0[15:0] + offset + 4 * l`,
/// the address the Vega and CDNA ISA guides give (`LDS_ADDR = LDSbase + LDS_offset +
/// inst_offset + TID * 4`, the LDS offset from M0) and LLVM's AMDGPU DMA documentation
/// repeats (the immediate offset applies to both addresses; lanes 4 bytes apart for sizes up
/// to 4). Writes outside the allocation are dropped, as DS writes are.
pub(super) fn dma_write<M: Memory + ?Sized>(
    w: &Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    exec: u64,
    vals: &[u32; LANES],
) {
    let base = (w.s[124] & 0xFFFF).wrapping_add(inst.offset as u32);
    let at = |l: usize| u64::from(base.wrapping_add(4 * l as u32));
    for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
        lds_write(&mut ctx.lds, at(l), &vals[l].to_le_bytes());
    }
    if ctx.lds_shadow.is_some() {
        let lanes = (0..LANES)
            .filter(|l| exec >> l & 1 == 1)
            .map(|l| (l, at(l)));
        record(w, inst, ctx, lanes, 4, crate::sanitize::LdsAccess::Write);
    }
}

/// A global wave sync instruction (see [`crate::gws`]): the resource is `offset0 + M0[21:16]`;
/// data comes from the first active lane. A queue without the GPU's GWS cannot run one.
pub(super) fn gws<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    op: GwsOp,
) -> Result<Flow, WaveError> {
    let Some(gws) = ctx.setup.gws.as_deref() else {
        return Err(w.unimplemented(inst));
    };
    let exec = w.exec();
    if exec == 0 {
        return Ok(Flow::Next);
    }
    let id = (inst.offset as usize & 0x3F) + ((w.s[124] >> 16) & 0x3F) as usize;
    let data = |w: &Wave| -> Result<u32, WaveError> {
        Ok(w.vreg(inst, inst.src[0], 0)?[exec.trailing_zeros() as usize])
    };
    match op {
        GwsOp::Init => gws.init(id, data(w)?),
        GwsOp::SemaV => gws.release(id, 1),
        GwsOp::SemaBr => gws.release(id, data(w)?),
        GwsOp::SemaP => {
            if !gws.try_acquire(id) {
                return Ok(Flow::Retry);
            }
        }
        GwsOp::Barrier | GwsOp::SemaReleaseAll => return Err(w.unimplemented(inst)),
    }
    Ok(Flow::Next)
}

/// `ds_read2*` / `ds_write2*`: two elements at offset0 and offset1 (in elements, or 64
/// elements for st64).
fn two_addresses<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    exec: u64,
    ds: DsOp,
) -> Result<(), WaveError> {
    let elem = usize::from(ds.size);
    let addr = *w.vreg(inst, inst.src[0], 0)?;
    let scale = if ds.st64 { 64 } else { 1 } * elem as u64;
    let (o0, o1) = (
        (inst.offset as u64 & 0xFF) * scale,
        u64::from(inst.offset1) * scale,
    );
    let read = ds.class == DsClass::Read2;
    let words = elem / 4;
    if read && elem == 4 {
        // ds_read2_b32, the common case: one dword from each offset.
        let mut v0 = [0u32; LANES];
        let mut v1 = [0u32; LANES];
        for l in 0..LANES {
            if exec >> l & 1 != 0 {
                v0[l] = lds_u32(&ctx.lds, lds_address(addr[l], o0));
                v1[l] = lds_u32(&ctx.lds, lds_address(addr[l], o1));
            }
        }
        for (k, vals) in [v0, v1].iter().enumerate() {
            let reg = w.vreg_mut(inst, inst.dst, k)?;
            for (l, r) in reg.iter_mut().enumerate() {
                if exec >> l & 1 != 0 {
                    *r = vals[l];
                }
            }
        }
        return Ok(());
    }
    for (slot, o) in [(0usize, o0), (1, o1)] {
        if read {
            let mut vals = [0u64; LANES];
            for l in 0..LANES {
                if exec >> l & 1 != 0 {
                    let mut b = [0u8; 8];
                    lds_read(
                        &ctx.lds,
                        lds_address(addr[l], o),
                        b.get_mut(..elem).unwrap_or(&mut []),
                    );
                    vals[l] = u64::from_le_bytes(b);
                }
            }
            for k in 0..words {
                let reg = w.vreg_mut(inst, inst.dst, slot * words + k)?;
                for (l, r) in reg.iter_mut().enumerate() {
                    if exec >> l & 1 != 0 {
                        *r = (vals[l] >> (32 * k)) as u32;
                    }
                }
            }
        } else {
            let src = if slot == 0 { inst.src[1] } else { inst.src[2] };
            let vals = reg_u64(w, inst, src, elem == 8)?;
            for l in 0..LANES {
                if exec >> l & 1 != 0 {
                    let b = vals[l].to_le_bytes();
                    lds_write(
                        &mut ctx.lds,
                        lds_address(addr[l], o),
                        b.get(..elem).unwrap_or(&[]),
                    );
                }
            }
        }
    }
    Ok(())
}

/// LDS read-modify-writes, lane by lane (the work-group runs alone, so this is atomic):
/// `new(old, data0, data1)`; the old value goes to the destination if there is one.
#[allow(clippy::too_many_arguments)]
fn rmw<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    exec: u64,
    offset16: u64,
    wide: bool,
    new: &dyn Fn(u64, u64, u64) -> u64,
) -> Result<(), WaveError> {
    let addr = *w.vreg(inst, inst.src[0], 0)?;
    let n = if wide { 8 } else { 4 };
    let data0 = reg_u64(w, inst, inst.src[1], wide)?;
    let data1 = if matches!(inst.src[2], Operand::None) {
        [0; LANES]
    } else {
        reg_u64(w, inst, inst.src[2], wide)?
    };
    let mask = if wide { u64::MAX } else { 0xFFFF_FFFF };
    let mut old = [0u64; LANES];
    for l in 0..LANES {
        if exec >> l & 1 == 0 {
            continue;
        }
        let a = lds_address(addr[l], offset16);
        let mut b = [0u8; 8];
        lds_read(&ctx.lds, a, b.get_mut(..n).unwrap_or(&mut []));
        let o = u64::from_le_bytes(b);
        let v = new(o, data0[l], data1[l]) & mask;
        lds_write(&mut ctx.lds, a, v.to_le_bytes().get(..n).unwrap_or(&[]));
        old[l] = o;
    }
    if inst.dst != Operand::None {
        write_result(w, inst, &old, n / 4, exec)?;
    }
    Ok(())
}

/// `ds_wrxchg2*_rtn`: data0 and data1 stored at the two offsets, the old values returned.
fn xchg2<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    exec: u64,
    ds: DsOp,
) -> Result<(), WaveError> {
    let elem = usize::from(ds.size);
    let wide = elem == 8;
    let addr = *w.vreg(inst, inst.src[0], 0)?;
    let scale = if ds.st64 { 64 } else { 1 } * elem as u64;
    let offs = [
        (inst.offset as u64 & 0xFF) * scale,
        u64::from(inst.offset1) * scale,
    ];
    let data = [
        reg_u64(w, inst, inst.src[1], wide)?,
        reg_u64(w, inst, inst.src[2], wide)?,
    ];
    let mut old = [[0u64; LANES]; 2];
    for l in 0..LANES {
        if exec >> l & 1 == 0 {
            continue;
        }
        for k in 0..2 {
            let a = lds_address(addr[l], offs[k]);
            let mut b = [0u8; 8];
            lds_read(&ctx.lds, a, b.get_mut(..elem).unwrap_or(&mut []));
            old[k][l] = u64::from_le_bytes(b);
            lds_write(
                &mut ctx.lds,
                a,
                data[k][l].to_le_bytes().get(..elem).unwrap_or(&[]),
            );
        }
    }
    let words = elem / 4;
    for k in 0..2 {
        for d in 0..words {
            let reg = w.vreg_mut(inst, inst.dst, k * words + d)?;
            for l in 0..LANES {
                if exec >> l & 1 != 0 {
                    reg[l] = (old[k][l] >> (32 * d)) as u32;
                }
            }
        }
    }
    Ok(())
}

/// `ds_swizzle_b32`, `ds_permute_b32` and `ds_bpermute_b32`: lanes exchange data0 values
/// (inactive lanes provide 0).
fn cross_lane(w: &mut Wave, inst: &Inst, exec: u64, offset16: u64) -> Result<(), WaveError> {
    let data = match inst.op {
        Op::DsSwizzleB32 => *w.vreg(inst, inst.src[0], 0)?,
        _ => *w.vreg(inst, inst.src[1], 0)?,
    };
    let active = |l: usize| exec >> l & 1 != 0;
    let out: Lanes = match inst.op {
        Op::DsSwizzleB32 => std::array::from_fn(|l| {
            let s = swizzle_source(offset16 as u16, l);
            if active(s) {
                data[s]
            } else {
                0
            }
        }),
        Op::DsBpermuteB32 => {
            let addr = *w.vreg(inst, inst.src[0], 0)?;
            std::array::from_fn(|l| {
                let s = ((u64::from(addr[l]) + offset16) / 4 % LANES as u64) as usize;
                if active(s) {
                    data[s]
                } else {
                    0
                }
            })
        }
        _ => {
            let addr = *w.vreg(inst, inst.src[0], 0)?;
            let mut out = [0u32; LANES];
            for l in (0..LANES).filter(|&l| active(l)) {
                let d = ((u64::from(addr[l]) + offset16) / 4 % LANES as u64) as usize;
                out[d] = data[l];
            }
            out
        }
    };
    let reg = w.vreg_mut(inst, inst.dst, 0)?;
    for l in (0..LANES).filter(|&l| active(l)) {
        reg[l] = out[l];
    }
    Ok(())
}
