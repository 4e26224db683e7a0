//! The common global access, found cheaply and moved in one piece: the active lanes are consecutive lanes whose
//! addresses are consecutive elements. It is recognised from the address registers themselves
//! (32-bit differences, which vectorise four lanes to an SSE2 step) instead of working out 64
//! 64-bit addresses and comparing those: the addresses would be read back right after being
//! stored, which stalls on store forwarding, and the access needs only the first of them.
//! Its data then moves in one memory access through a buffer sized to it.

use super::access::{self, Addr};
use super::vmem::{store_data, write_back};
use super::wave::{Lanes, Wave, LANES};
use super::Ctx;
use crate::decode::{Format, Inst, Operand};
use crate::error::WaveError;
use crate::memory::Memory;

/// Active lanes `lo..lo + count` (consecutive) addressing consecutive `size`-byte elements
/// from `va`: one memory access serves them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Run {
    pub lo: usize,
    pub count: usize,
    pub va: u64,
    pub size: usize,
}

impl Run {
    /// Lane `l`'s address.
    fn lane(&self, l: usize) -> u64 {
        self.va.wrapping_add(((l - self.lo) * self.size) as u64)
    }

    /// The run's bytes within a buffer holding `size` bytes per lane.
    fn bytes(&self) -> std::ops::Range<usize> {
        self.lo * self.size..(self.lo + self.count) * self.size
    }
}

/// Whether `r[lo..lo + count]` goes up by `size` from lane to lane (32-bit differences; the
/// caller rules out a carry out of the low dword).
fn consecutive(r: &Lanes, lo: usize, count: usize, size: u32) -> bool {
    let mut diff = 0;
    if count == LANES {
        // A fixed count, which the optimiser unrolls and vectorises.
        for l in 1..LANES {
            diff |= r[l].wrapping_sub(r[l - 1]) ^ size;
        }
    } else {
        let run = r.get(lo..lo + count).unwrap_or(&[]);
        for k in 1..run.len() {
            diff |= run[k].wrapping_sub(run[k - 1]) ^ size;
        }
    }
    diff == 0
}

/// The [`Run`] the active lanes of a GLOBAL or FLAT access make when they are consecutive
/// lanes addressing consecutive `size`-byte elements of global memory
/// (for FLAT: neither end in the LDS or private aperture). `None` otherwise, and when an
/// address register is missing: the general path then works the lanes out one by one (and
/// reports a missing register), so this only ever takes the cases it can prove.
pub(super) fn register_run(
    w: &Wave,
    inst: &Inst,
    apertures: (u64, u64),
    exec: u64,
    size: usize,
) -> Option<Run> {
    if exec == 0 || size == 0 || size > 16 {
        return None;
    }
    let lo = exec.trailing_zeros() as usize;
    let count = (exec >> lo).trailing_ones() as usize;
    if (exec >> lo).count_ones() as usize != count || lo + count > LANES {
        return None;
    }
    let off = inst.offset as i64 as u64;
    let span = (count as u64 - 1) * size as u64;
    let i = w.vindex(inst.src[0], 0)?;
    let low = w.v.get(i)?;
    // No carry out of the low dword along the run, so consecutive low dwords are consecutive
    // addresses.
    if !consecutive(low, lo, count, size as u32) || u64::from(low[lo]) + span > u64::from(u32::MAX)
    {
        return None;
    }
    if let (Format::Global, Operand::Sgpr(r, _)) = (inst.format, inst.saddr) {
        let va = w
            .sgpr64(r)
            .wrapping_add(off)
            .wrapping_add(u64::from(low[lo]));
        return Some(Run {
            lo,
            count,
            va,
            size,
        });
    }
    let high = w.v.get(i + 1)?;
    let h = high[lo];
    let mut differ = 0;
    for x in high.get(lo..lo + count).unwrap_or(&[]) {
        differ |= x ^ h;
    }
    if differ != 0 {
        return None;
    }
    let first = (u64::from(low[lo]) | u64::from(h) << 32).wrapping_add(off);
    if inst.format == Format::Flat {
        // Apertures are 4 GiB aligned and a run spans at most 1 KiB: checking both ends
        // checks every lane.
        let (shared, private) = (apertures.0 >> 32, apertures.1 >> 32);
        let ends = [first >> 32, first.wrapping_add(span) >> 32];
        if ends.iter().any(|&e| e == shared || e == private) {
            return None;
        }
    }
    Some(Run {
        lo,
        count,
        va: first,
        size,
    })
}

/// A load by the lanes of `run` (see [`register_run`]): one memory access, or lane by lane if
/// it faults, so the fault names the first faulting lane's address as `vmem::load` would.
pub(super) fn load_run<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    run: Run,
    exec: u64,
) -> Result<(), WaveError> {
    // A buffer as large as the access needs (the zeroing of a larger one costs more than the
    // data a dword load moves).
    if run.size <= 4 {
        load_via(w, inst, ctx, run, exec, &mut [0; LANES * 4])
    } else {
        load_via(w, inst, ctx, run, exec, &mut [0; LANES * 16])
    }
}

/// [`load_run`] through `data` (at least `LANES * size` bytes).
fn load_via<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    run: Run,
    exec: u64,
    data: &mut [u8],
) -> Result<(), WaveError> {
    let part = data.get_mut(run.bytes()).unwrap_or(&mut []);
    if ctx.mem.read(run.va, part).is_err() {
        for l in run.lo..run.lo + run.count {
            if let Some(chunk) = data.get_mut(l * run.size..(l + 1) * run.size) {
                access::read(w, ctx, Addr::Linear(run.lane(l)), 0, chunk)?;
            }
        }
    }
    write_back(w, inst, data, exec, run.size)
}

/// A store by the lanes of `run` (see [`load_run`]).
pub(super) fn store_run<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    run: Run,
) -> Result<(), WaveError> {
    if run.size <= 4 {
        store_via(w, inst, ctx, run, &mut [0; LANES * 4])
    } else {
        store_via(w, inst, ctx, run, &mut [0; LANES * 16])
    }
}

/// [`store_run`] through `data` (at least `LANES * size` bytes).
fn store_via<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
    run: Run,
    data: &mut [u8],
) -> Result<(), WaveError> {
    store_data(w, inst, data, run.size)?;
    let part = data.get(run.bytes()).unwrap_or(&[]);
    if ctx.mem.write(run.va, part).is_ok() {
        return Ok(());
    }
    for l in run.lo..run.lo + run.count {
        let chunk = data.get(l * run.size..(l + 1) * run.size).unwrap_or(&[]);
        access::write(w, ctx, Addr::Linear(run.lane(l)), 0, chunk)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode;
    use crate::target::Target;

    const AP: (u64, u64) = (0x1000_0000_0000, 0x2000_0000_0000);

    fn run(lo: usize, count: usize, va: u64) -> Option<Run> {
        Some(Run {
            lo,
            count,
            va,
            size: 4,
        })
    }

    fn wave() -> Wave {
        let mut w = Wave::new(Target::Gfx90a, 8, 8, 0);
        for l in 0..LANES {
            w.v[0][l] = 0x1000 + 4 * l as u32;
            w.v[1][l] = 0x7F;
        }
        w.set_sgpr64(6, 0x5_0000_0000);
        w
    }

    #[test]
    fn runs_are_taken_only_where_every_lane_follows() {
        // global_load_dword v2, v[0:1], off offset:16; global_load_dword v2, v0, s[6:7];
        // flat_load_dword v2, v[0:1]; global_load_dwordx4 v[2:5], v[0:1], off.
        let vaddr = decode(Target::Gfx90a, &[0xDC508010, 0x027F0000]);
        let saddr = decode(Target::Gfx90a, &[0xDC508000, 0x02060000]);
        let flat = decode(Target::Gfx90a, &[0xDC500000, 0x02000000]);
        let x4 = decode(Target::Gfx90a, &[0xDC5C8000, 0x027F0000]);
        let w = wave();
        let all = u64::MAX;
        assert_eq!(
            register_run(&w, &vaddr, AP, all, 4),
            run(0, 64, 0x7F_0000_1010)
        );
        assert_eq!(
            register_run(&w, &saddr, AP, all, 4),
            run(0, 64, 0x5_0000_1000)
        );
        assert_eq!(
            register_run(&w, &flat, AP, all, 4),
            run(0, 64, 0x7F_0000_1000)
        );
        // Four dwords per lane: the addresses step by 4, not 16.
        assert_eq!(register_run(&w, &x4, AP, all, 16), None);
        // Part of the wave, in one run; two runs are not one.
        assert_eq!(
            register_run(&w, &vaddr, AP, 0xFF0, 4),
            run(4, 8, 0x7F_0000_1020)
        );
        assert_eq!(register_run(&w, &vaddr, AP, 0xF0F, 4), None);
        assert_eq!(register_run(&w, &vaddr, AP, 0, 4), None);
        // One lane out of step.
        let mut odd = wave();
        odd.v[0][9] += 4;
        assert_eq!(register_run(&odd, &vaddr, AP, all, 4), None);
        assert_eq!(
            register_run(&odd, &vaddr, AP, 0xFF, 4),
            run(0, 8, 0x7F_0000_1010)
        );
        // A high dword that differs, and a low dword that carries into it.
        let mut high = wave();
        high.v[1][63] = 0x80;
        assert_eq!(register_run(&high, &vaddr, AP, all, 4), None);
        let mut carry = wave();
        for l in 0..LANES {
            carry.v[0][l] = 0xFFFF_FF80u32.wrapping_add(4 * l as u32);
        }
        assert_eq!(register_run(&carry, &vaddr, AP, all, 4), None);
        // FLAT into the LDS aperture goes the general way.
        let mut lds = wave();
        lds.v[1] = [0x1000; LANES];
        assert_eq!(register_run(&lds, &flat, AP, all, 4), None);
        assert!(register_run(&lds, &vaddr, AP, all, 4).is_some());
        // A missing address register.
        let small = Wave::new(Target::Gfx90a, 1, 1, 0);
        assert_eq!(register_run(&small, &vaddr, AP, all, 4), None);
    }
}
