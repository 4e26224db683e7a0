//! Vector memory: FLAT, GLOBAL, SCRATCH and MUBUF loads, stores and atomics.
//!
//! Each lane's address is worked out first (flat addresses are sorted into global, LDS and
//! private by the apertures; buffer addresses follow the resource's stride, swizzle and
//! range), then the data moves lane by lane, or in one access when the active lanes touch one
//! contiguous run of global memory.

use super::access::{self, next_run, Addr};
use super::wave::{select_into, Lanes, Wave, LANES};
use super::{vmem_run, Ctx};
use crate::decode::memop::Access;
use crate::decode::Class;
use crate::decode::{flags, Format, Inst, Operand};
use crate::error::WaveError;
use crate::memory::{AtomicOp, Memory};

/// Bytes per dword row of swizzled scratch (4-byte elements, one per lane of the wave).
fn scratch_row(w: &Wave) -> u64 {
    if w.wave32 {
        4 * 32
    } else {
        4 * LANES as u64
    }
}

/// The wave's FLAT_SCRATCH base: SGPRs 102-103 on GFX9, a hardware register on GFX11.
fn flat_scratch(w: &Wave) -> u64 {
    if w.target.hardware_flat_scratch() {
        w.flat_scratch
    } else {
        w.sgpr64(102)
    }
}

fn vgpr32<'w>(
    w: &'w Wave,
    inst: &Inst,
    op: Operand,
    k: usize,
) -> Result<&'w [u32; LANES], WaveError> {
    w.vreg(inst, op, k)
}

/// Per-lane global addresses of a GLOBAL or FLAT instruction whose active lanes all address
/// global memory (the common case), or `None` when a FLAT lane falls in the LDS or private
/// aperture (then [`flat_addrs`] sorts them out). Registers are read as [`flat_addrs`] reads
/// them, so a bad register is the same error.
fn global_addrs<M: Memory + ?Sized>(
    w: &Wave,
    inst: &Inst,
    ctx: &Ctx<'_, M>,
    exec: u64,
    out: &mut [u64; LANES],
) -> Result<bool, WaveError> {
    let off = inst.offset as i64 as u64;
    if let (Format::Global, Operand::Sgpr(r, _)) = (inst.format, inst.saddr) {
        let base = w.sgpr64(r).wrapping_add(off);
        let v = vgpr32(w, inst, inst.src[0], 0)?;
        for (a, &x) in out.iter_mut().zip(v.iter()) {
            *a = base.wrapping_add(u64::from(x));
        }
        return Ok(true);
    }
    let lo = vgpr32(w, inst, inst.src[0], 0)?;
    let hi = vgpr32(w, inst, inst.src[0], 1)?;
    for l in 0..LANES {
        out[l] = (u64::from(lo[l]) | u64::from(hi[l]) << 32).wrapping_add(off);
    }
    if inst.format == Format::Flat {
        let (shared, private) = ctx.apertures;
        let (shared, private) = (shared >> 32, private >> 32);
        let mut other = false;
        for l in 0..LANES {
            let h = out[l] >> 32;
            other |= exec >> l & 1 != 0 && (h == shared || h == private);
        }
        if other {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The active lanes as one run `(first lane, lane count)` when they are consecutive lanes
/// whose addresses follow each other (`first + k * size`): one access serves them all.
fn single_run(addrs: &[u64; LANES], exec: u64, size: u64) -> Option<(usize, usize)> {
    if exec == 0 {
        return None;
    }
    let lo = exec.trailing_zeros() as usize;
    let count = (exec >> lo).trailing_ones() as usize;
    if (exec >> lo).count_ones() as usize != count {
        return None;
    }
    let first = addrs[lo];
    let mut expect = first;
    let mut diff = 0u64;
    for &a in addrs.get(lo..lo + count).unwrap_or(&[]) {
        diff |= a ^ expect;
        expect = expect.wrapping_add(size);
    }
    (diff == 0).then_some((lo, count))
}

/// Per-lane addresses of a FLAT/GLOBAL/SCRATCH instruction.
fn flat_addrs<M: Memory + ?Sized>(
    w: &Wave,
    inst: &Inst,
    ctx: &Ctx<'_, M>,
    out: &mut [Addr; LANES],
) -> Result<(), WaveError> {
    let off = inst.offset as i64 as u64;
    match inst.format {
        Format::Scratch => {
            let s = match inst.saddr {
                Operand::Sgpr(r, _) => u64::from(w.s.get(usize::from(r)).copied().unwrap_or(0)),
                _ => 0,
            };
            let v = match inst.src[0] {
                Operand::Vgpr(..) => Some(vgpr32(w, inst, inst.src[0], 0)?),
                _ => None,
            };
            let base = flat_scratch(w);
            for (l, a) in out.iter_mut().enumerate() {
                let lane_off = s
                    .wrapping_add(v.map_or(0, |v| u64::from(v[l])))
                    .wrapping_add(off)
                    & 0xFFFF_FFFF;
                *a = Addr::Swizzled {
                    base: base.wrapping_add(4 * l as u64),
                    off: lane_off,
                    row: scratch_row(w),
                    elem: 4,
                };
            }
        }
        Format::Global if matches!(inst.saddr, Operand::Sgpr(..)) => {
            let Operand::Sgpr(r, _) = inst.saddr else {
                return Ok(());
            };
            let base = w.sgpr64(r);
            let v = vgpr32(w, inst, inst.src[0], 0)?;
            for (l, a) in out.iter_mut().enumerate() {
                *a = Addr::Linear(base.wrapping_add(u64::from(v[l])).wrapping_add(off));
            }
        }
        _ => {
            let lo = vgpr32(w, inst, inst.src[0], 0)?;
            let hi = vgpr32(w, inst, inst.src[0], 1)?;
            let (shared, private) = ctx.apertures;
            let flat = inst.format == Format::Flat;
            for (l, a) in out.iter_mut().enumerate() {
                let va = (u64::from(lo[l]) | u64::from(hi[l]) << 32).wrapping_add(off);
                *a = if flat && va >> 32 == shared >> 32 {
                    Addr::Lds(va & 0xFFFF_FFFF)
                } else if flat && va >> 32 == private >> 32 {
                    Addr::Swizzled {
                        base: flat_scratch(w).wrapping_add(4 * l as u64),
                        off: va & 0xFFFF_FFFF,
                        row: scratch_row(w),
                        elem: 4,
                    }
                } else {
                    Addr::Linear(va)
                };
            }
        }
    }
    Ok(())
}

/// Per-lane addresses of a MUBUF or MTBUF instruction (GFX9 buffer addressing).
pub(super) fn buffer_addrs(
    w: &Wave,
    inst: &Inst,
    ap: (u64, u64),
    size: u64,
    out: &mut [Addr; LANES],
) -> Result<(), WaveError> {
    let Operand::Sgpr(r, _) = inst.saddr else {
        return Err(w.illegal(inst, "buffer resource is not in SGPRs"));
    };
    let d: [u32; 4] = std::array::from_fn(|k| w.s.get(usize::from(r) + k).copied().unwrap_or(0));
    let base = u64::from(d[0]) | u64::from(d[1] & 0xFFFF) << 32;
    let stride = u64::from((d[1] >> 16) & 0x3FFF);
    let records = u64::from(d[2]);
    let index_stride = 8u64 << ((d[3] >> 21) & 3);
    let gfx11 = w.target.generation() == crate::target::Generation::Gfx11;
    // GFX9: SWIZZLE_EN (dword 1 bit 31) with ELEMENT_SIZE (dword 3, 2 to 16 bytes). GFX11:
    // SWIZZLE_ENABLE is two bits (dword 1, 31:30) that are the element size themselves (4, 8
    // or 16 bytes; ROCr's GFX11 scratch resource sets 1), dword 3's old ELEMENT_SIZE bits
    // being part of its FORMAT.
    let (swizzle, elem) = if gfx11 {
        let swz = d[1] >> 30;
        (swz != 0, 2u64 << swz)
    } else {
        (d[1] >> 31 != 0, 2u64 << ((d[3] >> 19) & 3))
    };
    // GFX11's OOB_SELECT (dword 3, 29:28; mesa's sid.h names the modes
    // STRUCTURED_WITH_OFFSET, STRUCTURED, DISABLED and RAW).
    let oob = (d[3] >> 28) & 3;
    let add_tid = (d[3] >> 23) & 1 != 0;
    let soffset = u64::from(w.scalar32(inst.soffset, inst.imm[2], ap));
    let idxen = inst.has(flags::IDXEN);
    let offen = inst.has(flags::OFFEN);
    let v0 = match inst.src[0] {
        Operand::Vgpr(..) => Some(vgpr32(w, inst, inst.src[0], 0)?),
        _ => None,
    };
    let v1 = if idxen && offen {
        Some(vgpr32(w, inst, inst.src[0], 1)?)
    } else {
        None
    };
    for (l, a) in out.iter_mut().enumerate() {
        *a = Addr::Discard;
        let vi = if idxen {
            v0.map_or(0, |v| u64::from(v[l]))
        } else {
            0
        };
        let vo = match (idxen, offen) {
            (true, true) => v1.map_or(0, |v| u64::from(v[l])),
            (false, true) => v0.map_or(0, |v| u64::from(v[l])),
            _ => 0,
        };
        let index = vi + if add_tid { l as u64 } else { 0 };
        let offset = (vo + inst.offset as u64) & 0xFFFF_FFFF;
        // Range check. GFX9: by offset for raw buffers (stride 0), by index for structured
        // ones. GFX11: as OOB_SELECT says.
        let in_range = match (gfx11, oob) {
            (false, _) if stride == 0 => offset + size <= records,
            (false, _) => index < records,
            (true, 0) => index < records && offset + size <= stride,
            (true, 1) => index < records,
            (true, 2) => true,
            _ => offset + size <= records,
        };
        if !in_range {
            continue;
        }
        *a = if swizzle {
            let (msb, lsb) = (index / index_stride, index % index_stride);
            Addr::Swizzled {
                base: base
                    .wrapping_add(soffset)
                    .wrapping_add(msb * stride * index_stride)
                    .wrapping_add(lsb * elem),
                off: offset,
                row: elem * index_stride,
                elem,
            }
        } else {
            Addr::Linear(
                base.wrapping_add(soffset)
                    .wrapping_add(offset)
                    .wrapping_add(index * stride),
            )
        };
    }
    Ok(())
}

/// Which way a vector memory access moves data (for watches and bounds reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MemClass {
    Load,
    Store,
    Atomic,
}

/// The data of a load or store (an atomic's: plain dwords).
fn access(inst: &Inst) -> Access {
    match inst.class {
        Class::Load(a) | Class::Store(a) => a,
        Class::Atomic(a) => Access {
            size: a.size() as u8,
            signed: false,
            d16: None,
        },
        _ => Access {
            size: 0,
            signed: false,
            d16: None,
        },
    }
}

pub(super) fn exec<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
) -> Result<(), WaveError> {
    let (class, size) = match inst.class {
        Class::Load(a) => (MemClass::Load, usize::from(a.size)),
        Class::Store(a) => (MemClass::Store, usize::from(a.size)),
        Class::Atomic(a) => (MemClass::Atomic, a.size()),
        // Cache maintenance is a no-op: memory is coherent here.
        Class::CacheControl => return Ok(()),
        _ => return Err(w.unimplemented(inst)),
    };
    let exec = w.exec();
    if inst.has(flags::LDS) {
        return load_to_lds(w, inst, ctx, class, exec, size);
    }
    if matches!(inst.format, Format::Global | Format::Flat) {
        // The common case first: one run, nothing watching or checking addresses.
        let observed = ctx.setup.debug.watches.iter().any(Option::is_some)
            || ctx.setup.watch.is_some()
            || ctx.setup.sanitize.is_some();
        if !observed && matches!(class, MemClass::Load | MemClass::Store) {
            if let Some(run) = vmem_run::register_run(w, inst, ctx.apertures, exec, size) {
                return match class {
                    MemClass::Load => vmem_run::load_run(w, inst, ctx, run, exec),
                    _ => vmem_run::store_run(w, inst, ctx, run),
                };
            }
        }
        let mut va = [0u64; LANES];
        if global_addrs(w, inst, ctx, exec, &mut va)? {
            if ctx.setup.debug.watches.iter().any(Option::is_some) {
                hardware_watch(w, ctx.setup, class, exec, size, |l| Some(va[l]));
            }
            if let Some(watch) = &ctx.setup.watch {
                report_watched(w, inst, ctx, watch, class, exec, size, |l| Some(va[l]));
            }
            if let Some(s) = &ctx.setup.sanitize {
                check_bounds(w, inst, ctx, s, class, exec, size, &va);
            }
            if let Some((lo, count)) = single_run(&va, exec, size as u64) {
                let run = vmem_run::Run {
                    lo,
                    count,
                    va: va[lo],
                    size,
                };
                match class {
                    MemClass::Load => return vmem_run::load_run(w, inst, ctx, run, exec),
                    MemClass::Store => return vmem_run::store_run(w, inst, ctx, run),
                    MemClass::Atomic => {}
                }
            }
            let addrs: [Addr; LANES] = std::array::from_fn(|l| Addr::Linear(va[l]));
            return match class {
                MemClass::Load => load(w, inst, ctx, &addrs, exec, size),
                MemClass::Store => store(w, inst, ctx, &addrs, exec, size),
                _ => atomic(w, inst, ctx, &addrs, exec, size),
            };
        }
    }
    let mut addrs = [Addr::Discard; LANES];
    if inst.format == Format::Mubuf {
        buffer_addrs(w, inst, ctx.apertures, size as u64, &mut addrs)?;
    } else {
        flat_addrs(w, inst, ctx, &mut addrs)?;
    }
    let addrs = &addrs;
    if ctx.setup.debug.watches.iter().any(Option::is_some) {
        hardware_watch(w, ctx.setup, class, exec, size, |l| match addrs[l] {
            Addr::Linear(va) => Some(va),
            _ => None,
        });
    }
    if let Some(watch) = &ctx.setup.watch {
        report_watched(w, inst, ctx, watch, class, exec, size, |l| match addrs[l] {
            Addr::Linear(va) => Some(va),
            _ => None,
        });
    }
    match class {
        MemClass::Load => load(w, inst, ctx, addrs, exec, size),
        MemClass::Store => store(w, inst, ctx, addrs, exec, size),
        _ => atomic(w, inst, ctx, addrs, exec, size),
    }
}

/// The sanitizer's bounds check of a global access: each active lane must stay inside the
/// buffer its pointer came from (the scalar base's, or the first active lane's; see
/// [`crate::sanitize`]). Reports the first lane that does not.
#[allow(clippy::too_many_arguments)]
#[cold]
#[inline(never)]
fn check_bounds<M: Memory + ?Sized>(
    w: &Wave,
    inst: &Inst,
    ctx: &Ctx<'_, M>,
    s: &crate::sanitize::Sanitizer,
    class: MemClass,
    exec: u64,
    size: usize,
    va: &[u64; LANES],
) {
    if exec == 0 {
        return;
    }
    let base = match (inst.format, inst.saddr) {
        (Format::Global, Operand::Sgpr(r, _)) => w.sgpr64(r),
        _ => va[exec.trailing_zeros() as usize],
    };
    use crate::sanitize::Owner;
    let (buffer, outside) = match s.buffers.buffer_at(base) {
        Owner::Unknown => return,
        Owner::Nobody => (None, Some(exec.trailing_zeros() as usize)),
        Owner::Buffer(start, end) => (
            Some((start, end)),
            (0..LANES).find(|&l| {
                exec >> l & 1 == 1 && (va[l] < start || va[l].saturating_add(size as u64) > end)
            }),
        ),
    };
    if let Some(l) = outside {
        (s.sink)(&crate::sanitize::Finding {
            kind: crate::sanitize::FindingKind::OutOfBounds,
            pc: w.pc,
            instruction: crate::disasm::disassemble(ctx.setup.target, inst),
            work_group: ctx.group_id,
            wave: w.index,
            lane: l as u32,
            address: va[l],
            bytes: size as u32,
            write: class != MemClass::Load,
            buffer,
            other: None,
        });
    }
}

/// The debugger's address watches (`TCP_WATCH`): an active lane's access that one catches sets
/// the watch's `TRAPSTS` bit, and the trap is taken after the instruction if the trap mask
/// enables it (see [`crate::dispatch::WaveDebug`]).
#[cold]
#[inline(never)]
fn hardware_watch(
    w: &mut Wave,
    setup: &crate::dispatch::DispatchSetup,
    class: MemClass,
    exec: u64,
    size: usize,
    va: impl Fn(usize) -> Option<u64>,
) {
    use crate::wave_debug::{WatchAccess, WaveDebug};
    let access = match class {
        MemClass::Load => WatchAccess::Load,
        MemClass::Store => WatchAccess::Store,
        _ => WatchAccess::Atomic,
    };
    let mut bits = 0;
    for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
        if let Some(address) = va(l) {
            bits |= setup.debug.hits(address, size as u64, access);
        }
    }
    if bits != 0 {
        w.trapsts |= bits;
        if setup.debug.trap_mask & WaveDebug::ADDRESS_WATCH != 0 {
            w.exception_pending = true;
        }
    }
}

/// Reports the lanes of an access whose linear address (`va` of the lane, `None` for LDS and
/// scratch) touches a watched range: stores and atomics always, loads when asked.
#[allow(clippy::too_many_arguments)]
#[cold]
#[inline(never)]
fn report_watched<M: Memory + ?Sized>(
    w: &Wave,
    inst: &Inst,
    ctx: &Ctx<'_, M>,
    watch: &crate::dispatch::WatchSet,
    class: MemClass,
    exec: u64,
    size: usize,
    va: impl Fn(usize) -> Option<u64>,
) {
    let write = class != MemClass::Load;
    if !write && !watch.reads {
        return;
    }
    let mut instruction = None;
    for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
        let Some(address) = va(l) else { continue };
        if !watch.touches(address, size as u64) {
            continue;
        }
        let text = instruction
            .get_or_insert_with(|| crate::disasm::disassemble(ctx.setup.target, inst))
            .clone();
        (watch.sink)(&crate::dispatch::WatchHit {
            address,
            bytes: size as u32,
            write,
            pc: w.pc,
            instruction: text,
            work_group: ctx.group_id,
            wave: w.index,
            lane: l as u32,
        });
    }
}

fn load<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    addrs: &[Addr; LANES],
    exec: u64,
    size: usize,
) -> Result<(), WaveError> {
    let mut data = [0u8; LANES * 16];
    gather(w, ctx, addrs, exec, size, &mut data)?;
    write_back(w, inst, &data, exec, size)
}

/// A load into LDS: the memory side addressed as the instruction's format addresses it
/// (buffer range checks, scratch swizzling, FLAT apertures), each lane's value extended to a
/// dword and written to LDS by [`lds::dma_write`]; no VGPR changes. Only the plain loads of
/// up to a dword have this form; `buffer_load_format_x ... lds` is refused.
fn load_to_lds<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    class: MemClass,
    exec: u64,
    size: usize,
) -> Result<(), WaveError> {
    if class != MemClass::Load || !matches!(size, 1 | 2 | 4) || access(inst).d16.is_some() {
        return Err(w.unimplemented(inst));
    }
    let mut addrs = [Addr::Discard; LANES];
    if inst.format == Format::Mubuf {
        buffer_addrs(w, inst, ctx.apertures, size as u64, &mut addrs)?;
    } else {
        flat_addrs(w, inst, ctx, &mut addrs)?;
    }
    let linear = |l: usize| match addrs[l] {
        Addr::Linear(va) => Some(va),
        _ => None,
    };
    if ctx.setup.debug.watches.iter().any(Option::is_some) {
        hardware_watch(w, ctx.setup, class, exec, size, linear);
    }
    if let Some(watch) = &ctx.setup.watch {
        report_watched(w, inst, ctx, watch, class, exec, size, linear);
    }
    let mut data = [0u8; LANES * 16];
    gather(w, ctx, &addrs, exec, size, &mut data)?;
    let signed = access(inst).signed;
    let vals: [u32; LANES] = std::array::from_fn(|l| extended(&data, l, size, signed));
    super::lds::dma_write(w, inst, ctx, exec, &vals);
    Ok(())
}

/// Lane `l`'s value of `size` (1, 2 or 4) bytes in `data`, zero- or sign-extended to a dword.
#[inline]
fn extended(data: &[u8], l: usize, size: usize, signed: bool) -> u32 {
    let at = l * size;
    match (size, data.get(at..at + size)) {
        (1, Some(b)) if signed => b[0] as i8 as i32 as u32,
        (1, Some(b)) => u32::from(b[0]),
        (2, Some(b)) if signed => i16::from_le_bytes([b[0], b[1]]) as i32 as u32,
        (2, Some(b)) => u32::from(u16::from_le_bytes([b[0], b[1]])),
        (4, Some(b)) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        _ => 0,
    }
}

/// Reads each active lane's `size` bytes into `data` (lane `l` at `l * size`).
fn gather<M: Memory + ?Sized>(
    w: &Wave,
    ctx: &mut Ctx<'_, M>,
    addrs: &[Addr; LANES],
    exec: u64,
    size: usize,
    data: &mut [u8; LANES * 16],
) -> Result<(), WaveError> {
    // Consecutive lanes reading consecutive global addresses are one memory access.
    let mut from = 0;
    while let Some((lo, count, linear)) = next_run(addrs, exec, from, size as u64) {
        from = lo + count;
        let part = data
            .get_mut(lo * size..(lo + count) * size)
            .unwrap_or(&mut []);
        if let Some(va) = linear {
            if ctx.mem.read(va, part).is_ok() {
                continue;
            }
        }
        // Not linear, or it faulted: lane by lane, so a fault names the lane's address.
        for l in lo..lo + count {
            if let Some(chunk) = data.get_mut(l * size..(l + 1) * size) {
                access::read(w, ctx, addrs[l], 0, chunk)?;
            }
        }
    }
    Ok(())
}

/// Dword `k` of each lane's `size` loaded bytes (lane `l`'s at `l * size`) into `out`; the
/// common sizes get loops of their own, in forms the optimiser vectorises.
#[inline(always)]
fn dword_k(out: &mut Lanes, data: &[u8], size: usize, k: usize) {
    match size {
        4 => dword_k_of::<4>(out, data, 0),
        16 => dword_k_of::<16>(out, data, k),
        _ => {
            for (r, b) in out.iter_mut().zip(data.chunks_exact(size)) {
                *r = u32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]);
            }
        }
    }
}

/// [`dword_k`] for a constant size.
#[inline(always)]
fn dword_k_of<const SIZE: usize>(out: &mut Lanes, data: &[u8], k: usize) {
    for (r, b) in out.iter_mut().zip(data.chunks_exact(SIZE)) {
        *r = u32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]);
    }
}

/// Moves loaded bytes (`size` per lane) into the destination registers.
pub(super) fn write_back(
    w: &mut Wave,
    inst: &Inst,
    data: &[u8],
    exec: u64,
    size: usize,
) -> Result<(), WaveError> {
    let Access { signed, d16, .. } = access(inst);
    if size % 4 == 0 && d16.is_none() {
        // Whole dwords: dword k of lane l is at l * size + 4 * k.
        for k in 0..size / 4 {
            let reg = w.vreg_mut(inst, inst.dst, k)?;
            if exec == u64::MAX {
                // Every lane: straight into the register (no merge, no copy of the lanes).
                dword_k(reg, data, size, k);
            } else {
                let mut vals = [0u32; LANES];
                dword_k(&mut vals, data, size, k);
                select_into(reg, &vals, exec);
            }
        }
        return Ok(());
    }
    // Bytes and shorts: zero- or sign-extended, or into one half (d16).
    let reg = w.vreg_mut(inst, inst.dst, 0)?;
    for (l, r) in reg.iter_mut().enumerate() {
        if exec >> l & 1 == 0 {
            continue;
        }
        let x = extended(data, l, size, signed);
        *r = match d16 {
            None => x,
            Some(false) => (*r & 0xFFFF_0000) | (x & 0xFFFF),
            Some(true) => (*r & 0xFFFF) | x << 16,
        };
    }
    Ok(())
}

fn store<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    addrs: &[Addr; LANES],
    exec: u64,
    size: usize,
) -> Result<(), WaveError> {
    let mut data = [0u8; LANES * 16];
    store_data(w, inst, &mut data, size)?;
    let mut from = 0;
    while let Some((lo, count, linear)) = next_run(addrs, exec, from, size as u64) {
        from = lo + count;
        if let Some(va) = linear {
            let part = data.get(lo * size..(lo + count) * size).unwrap_or(&[]);
            if ctx.mem.write(va, part).is_ok() {
                continue;
            }
        }
        for l in lo..lo + count {
            let chunk = data.get(l * size..(l + 1) * size).unwrap_or(&[]);
            access::write(w, ctx, addrs[l], 0, chunk)?;
        }
    }
    Ok(())
}

/// The bytes a store writes, `size` per lane, from the data registers (every lane's).
pub(super) fn store_data(
    w: &Wave,
    inst: &Inst,
    data: &mut [u8],
    size: usize,
) -> Result<(), WaveError> {
    let dwords = size.div_ceil(4);
    let hi16 = access(inst).d16 == Some(true);
    if size == 4 && !hi16 {
        let reg = w.vreg(inst, inst.src[1], 0)?;
        for (d, r) in data.chunks_exact_mut(4).zip(reg.iter()) {
            d.copy_from_slice(&r.to_le_bytes());
        }
        return Ok(());
    }
    if size % 4 == 0 && !hi16 {
        for k in 0..dwords {
            let reg = w.vreg(inst, inst.src[1], k)?;
            for (d, r) in data.chunks_exact_mut(size).zip(reg.iter()) {
                d[4 * k..4 * k + 4].copy_from_slice(&r.to_le_bytes());
            }
        }
        return Ok(());
    }
    for k in 0..dwords {
        let reg = w.vreg(inst, inst.src[1], k)?;
        for l in 0..LANES {
            let v = if hi16 { reg[l] >> 16 } else { reg[l] };
            let bytes = v.to_le_bytes();
            let n = size.saturating_sub(k * 4).min(4);
            let start = l * size + k * 4;
            if let (Some(d), Some(s)) = (data.get_mut(start..start + n), bytes.get(..n)) {
                d.copy_from_slice(s);
            }
        }
    }
    Ok(())
}

fn atomic<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    addrs: &[Addr; LANES],
    exec: u64,
    size: usize,
) -> Result<(), WaveError> {
    let Class::Atomic(atomic) = inst.class else {
        return Err(w.unimplemented(inst));
    };
    let op = atomic.op;
    let wide = size == 8;
    let n = if wide { 2 } else { 1 };
    let src_lo = *w.vreg(inst, inst.src[1], 0)?;
    let src_hi = if wide {
        *w.vreg(inst, inst.src[1], 1)?
    } else {
        [0; LANES]
    };
    // Compare-and-swap takes {new, compare} in consecutive registers.
    let (cmp_lo, cmp_hi) = if op == AtomicOp::CmpSwap {
        (
            *w.vreg(inst, inst.src[1], n)?,
            if wide {
                *w.vreg(inst, inst.src[1], n + 1)?
            } else {
                [0; LANES]
            },
        )
    } else {
        ([0; LANES], [0; LANES])
    };
    let mut old = [0u64; LANES];
    for l in 0..LANES {
        if exec >> l & 1 == 0 {
            continue;
        }
        let src = u64::from(src_lo[l]) | u64::from(src_hi[l]) << 32;
        let cmp = u64::from(cmp_lo[l]) | u64::from(cmp_hi[l]) << 32;
        old[l] = access::atomic(w, ctx, addrs[l], wide, op, src, cmp)?;
    }
    if inst.has(flags::GLC) && inst.dst != Operand::None {
        for k in 0..n {
            let reg = w.vreg_mut(inst, inst.dst, k)?;
            for (l, r) in reg.iter_mut().enumerate() {
                if exec >> l & 1 != 0 {
                    *r = (old[l] >> (32 * k)) as u32;
                }
            }
        }
    }
    Ok(())
}
