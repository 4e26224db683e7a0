//! Per-lane memory addresses and the byte accesses behind every vector memory instruction:
//! global (linear) addresses, LDS offsets, and swizzled private (scratch) space, where dword
//! `d` of lane `l` lives at `base + d * row + l * 4` as the hardware interleaves scratch.

use super::wave::{Wave, LANES};
use super::Ctx;
use crate::error::WaveError;
use crate::memory::{AtomicOp, Memory};

/// Where one lane's access goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Addr {
    /// A GPU virtual address.
    Linear(u64),
    /// A byte offset in the work-group's LDS.
    Lds(u64),
    /// Swizzled private memory: byte `off + o` of the lane is at
    /// `base + ((off + o) / elem) * row + (off + o) % elem` (`elem`: the buffer resource's
    /// element size, 4 bytes for scratch instructions).
    Swizzled {
        base: u64,
        off: u64,
        row: u64,
        elem: u64,
    },
    /// Out of the buffer's range: loads read 0, stores and atomics do nothing.
    Discard,
}

impl Addr {
    /// The address of byte `o` of a swizzled access.
    fn swizzled(base: u64, off: u64, row: u64, elem: u64, o: u64) -> u64 {
        let x = off.wrapping_add(o);
        base.wrapping_add((x / elem).wrapping_mul(row))
            .wrapping_add(x % elem)
    }
}

/// Reads `buf.len()` bytes at `a + o`.
pub(super) fn read<M: Memory + ?Sized>(
    w: &Wave,
    ctx: &Ctx<'_, M>,
    a: Addr,
    o: u64,
    buf: &mut [u8],
) -> Result<(), WaveError> {
    match a {
        Addr::Linear(va) => ctx
            .mem
            .read(va.wrapping_add(o), buf)
            .map_err(|f| ctx.fault(w, f)),
        Addr::Lds(off) => {
            let start = off.wrapping_add(o) as usize;
            match ctx.lds.get(start..start + buf.len()) {
                Some(s) => buf.copy_from_slice(s),
                None => buf.fill(0),
            }
            Ok(())
        }
        Addr::Swizzled {
            base,
            off,
            row,
            elem,
        } => {
            let mut done = 0usize;
            while done < buf.len() {
                let at = o + done as u64;
                let in_elem = off.wrapping_add(at) % elem;
                let n = ((elem - in_elem) as usize).min(buf.len() - done);
                let va = Addr::swizzled(base, off, row, elem, at);
                if let Some(part) = buf.get_mut(done..done + n) {
                    ctx.mem.read(va, part).map_err(|f| ctx.fault(w, f))?;
                }
                done += n;
            }
            Ok(())
        }
        Addr::Discard => {
            buf.fill(0);
            Ok(())
        }
    }
}

/// Writes `data` at `a + o`.
pub(super) fn write<M: Memory + ?Sized>(
    w: &Wave,
    ctx: &mut Ctx<'_, M>,
    a: Addr,
    o: u64,
    data: &[u8],
) -> Result<(), WaveError> {
    match a {
        Addr::Linear(va) => ctx
            .mem
            .write(va.wrapping_add(o), data)
            .map_err(|f| ctx.fault(w, f)),
        Addr::Lds(off) => {
            let start = off.wrapping_add(o) as usize;
            if let Some(s) = ctx.lds.get_mut(start..start + data.len()) {
                s.copy_from_slice(data);
            }
            Ok(())
        }
        Addr::Swizzled {
            base,
            off,
            row,
            elem,
        } => {
            let mut done = 0usize;
            while done < data.len() {
                let at = o + done as u64;
                let in_elem = off.wrapping_add(at) % elem;
                let n = ((elem - in_elem) as usize).min(data.len() - done);
                let va = Addr::swizzled(base, off, row, elem, at);
                if let Some(part) = data.get(done..done + n) {
                    ctx.mem.write(va, part).map_err(|f| ctx.fault(w, f))?;
                }
                done += n;
            }
            Ok(())
        }
        Addr::Discard => Ok(()),
    }
}

/// An atomic read-modify-write of 4 or 8 bytes at `a`; returns the old value. LDS and private
/// memory belong to this work-group / lane, which runs alone, so a plain read and write is
/// atomic there.
pub(super) fn atomic<M: Memory + ?Sized>(
    w: &Wave,
    ctx: &mut Ctx<'_, M>,
    a: Addr,
    wide: bool,
    op: AtomicOp,
    src: u64,
    cmp: u64,
) -> Result<u64, WaveError> {
    match a {
        Addr::Linear(va) => {
            let r = if wide {
                ctx.mem.atomic64(va, op, src, cmp)
            } else {
                ctx.mem
                    .atomic32(va, op, src as u32, cmp as u32)
                    .map(u64::from)
            };
            r.map_err(|f| ctx.fault(w, f))
        }
        Addr::Discard => Ok(0),
        _ => {
            let n = if wide { 8 } else { 4 };
            let mut b = [0u8; 8];
            read(w, ctx, a, 0, b.get_mut(..n).unwrap_or(&mut []))?;
            let old = u64::from_le_bytes(b);
            let new = if wide {
                op.apply64(old, src, cmp)
            } else {
                u64::from(op.apply32(old as u32, src as u32, cmp as u32))
            };
            write(w, ctx, a, 0, new.to_le_bytes().get(..n).unwrap_or(&[]))?;
            Ok(old)
        }
    }
}

/// The next run of active lanes from `from` on whose linear addresses follow each other
/// (`first + k * size`): (first lane, lane count, address). A lane whose address is not linear
/// is a run of one with `None`.
pub(super) fn next_run(
    addrs: &[Addr; LANES],
    exec: u64,
    from: usize,
    size: u64,
) -> Option<(usize, usize, Option<u64>)> {
    let rest = exec.checked_shr(from as u32).unwrap_or(0);
    if rest == 0 {
        return None;
    }
    let lo = from + rest.trailing_zeros() as usize;
    let Addr::Linear(first) = addrs[lo] else {
        return Some((lo, 1, None));
    };
    let mut n = 1;
    while lo + n < LANES
        && exec >> (lo + n) & 1 != 0
        && addrs[lo + n] == Addr::Linear(first.wrapping_add(n as u64 * size))
    {
        n += 1;
    }
    Some((lo, n, Some(first)))
}
