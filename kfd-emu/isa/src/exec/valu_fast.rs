//! Fast paths for the VALU instructions compiled kernels spend most of their time in (moves,
//! integer and f32 arithmetic, carries, shifts, compares, selects), in their plain form: no
//! DPP, SDWA or VOP3 modifiers. Each source is resolved once to a register of the file or one
//! value for every lane, and a lane loop per shape (register or value in each source) runs the
//! operation into a buffer the result is merged from under EXEC. The general path (`valu` and
//! its families) broadcasts every scalar source to 64 lanes, builds each source as a
//! `Result`, and runs a chain of matches first; for a 64-lane add that overhead costs more
//! than the add.
//!
//! The general path stays the reference and handles everything else: an instruction with
//! modifiers, an operand outside the wave's registers (its error), any other operation. A unit
//! test runs every fast-pathed operation both ways over random registers, EXEC masks and
//! operand shapes and compares the whole wave.

use super::fpmath::{fmax32, fmin32};
use super::valu_ops::predicate_bits;
use super::wave::{pack_bits, select_into, Lanes, Wave, LANES};
use crate::decode::attrs::Class;
use crate::decode::compare::{CmpType, Predicate};
use crate::decode::{Format, Inst, Op, Operand, Vop3Mods};

/// A resolved 32-bit source: register `R(i)` of the file, or the value `K(x)` in every lane.
#[derive(Clone, Copy)]
enum S {
    R(usize),
    K(u32),
}

/// Source `k` of `inst`, or `None` when the general path must take the instruction (an
/// absent operand, or a register the wave does not have: its error is the general path's).
#[inline(always)]
fn src(w: &Wave, inst: &Inst, k: usize, ap: (u64, u64)) -> Option<S> {
    let op = *inst.src.get(k)?;
    match op {
        Operand::Vgpr(..) | Operand::Agpr(..) => {
            let i = w.vindex(op, 0)?;
            (i < w.v.len()).then_some(S::R(i))
        }
        Operand::None => None,
        _ => Some(S::K(w.scalar32(op, inst.imm.get(k).copied()?, ap))),
    }
}

/// The destination register's index in the file (`None`: the general path reports it).
#[inline(always)]
fn dst(w: &Wave, inst: &Inst) -> Option<usize> {
    let i = w.vindex(inst.dst, 0)?;
    (i < w.v.len()).then_some(i)
}

/// `out[l] = f(a[l])`.
#[inline(always)]
fn lanes1(w: &Wave, a: S, f: impl Fn(u32) -> u32) -> Lanes {
    let mut out = [0u32; LANES];
    match a {
        S::R(i) => {
            let x = &w.v[i];
            for l in 0..LANES {
                out[l] = f(x[l]);
            }
        }
        S::K(s) => out = [f(s); LANES],
    }
    out
}

/// `out[l] = f(a[l], b[l])`, one loop per operand shape (`T`: a result word, or a flag).
#[inline(always)]
fn lanes2<T: Copy + Default>(w: &Wave, a: S, b: S, f: impl Fn(u32, u32) -> T) -> [T; LANES] {
    let mut out = [T::default(); LANES];
    match (a, b) {
        (S::R(i), S::R(j)) => {
            let (x, y) = (&w.v[i], &w.v[j]);
            for l in 0..LANES {
                out[l] = f(x[l], y[l]);
            }
        }
        (S::K(s), S::R(j)) => {
            let y = &w.v[j];
            for l in 0..LANES {
                out[l] = f(s, y[l]);
            }
        }
        (S::R(i), S::K(t)) => {
            let x = &w.v[i];
            for l in 0..LANES {
                out[l] = f(x[l], t);
            }
        }
        (S::K(s), S::K(t)) => out = [f(s, t); LANES],
    }
    out
}

/// `out[l] = f(a[l], b[l], c[l])`: the third source is usually a register (an accumulator,
/// an addend), so only the first two choose a loop; a value there is broadcast.
#[inline(always)]
fn lanes3(w: &Wave, a: S, b: S, c: S, f: impl Fn(u32, u32, u32) -> u32) -> Lanes {
    let z: Lanes;
    let zc: &Lanes = match c {
        S::R(k) => &w.v[k],
        S::K(u) => {
            z = [u; LANES];
            &z
        }
    };
    let mut out = [0u32; LANES];
    match (a, b) {
        (S::R(i), S::R(j)) => {
            let (x, y) = (&w.v[i], &w.v[j]);
            for l in 0..LANES {
                out[l] = f(x[l], y[l], zc[l]);
            }
        }
        (S::K(s), S::R(j)) => {
            let y = &w.v[j];
            for l in 0..LANES {
                out[l] = f(s, y[l], zc[l]);
            }
        }
        (S::R(i), S::K(t)) => {
            let x = &w.v[i];
            for l in 0..LANES {
                out[l] = f(x[l], t, zc[l]);
            }
        }
        (S::K(s), S::K(t)) => {
            for l in 0..LANES {
                out[l] = f(s, t, zc[l]);
            }
        }
    }
    out
}

/// One flag per lane from `f(a[l], b[l])`, packed into a lane mask.
#[inline(always)]
fn bits2(w: &Wave, a: S, b: S, f: impl Fn(u32, u32) -> bool) -> u64 {
    pack_bits(&lanes2(w, a, b, f))
}

fn f32_of(x: u32) -> f32 {
    f32::from_bits(x)
}

/// Runs `inst` if it is one of the fast-pathed operations in plain form; `false` leaves it
/// (untouched) to the general path.
#[inline]
pub(super) fn try_exec(w: &mut Wave, inst: &Inst, ap: (u64, u64)) -> bool {
    if inst.dpp.is_some() || inst.sdwa.is_some() || inst.vop3 != Vop3Mods::default() {
        return false;
    }
    if !matches!(
        inst.format,
        Format::Vop1 | Format::Vop2 | Format::Vopc | Format::Vop3
    ) {
        return false;
    }
    if let Class::Compare(c) = inst.class {
        let Some(bits) = compare(w, inst, ap, c.ty, c.pred) else {
            return false;
        };
        let bits = bits & w.exec();
        if let Operand::Sgpr(r, _) = inst.sdst {
            w.set_lane_mask(r, bits);
        }
        if c.cmpx {
            w.set_exec(bits);
        }
        return true;
    }
    run(w, inst, ap).is_some()
}

/// An I32, U32 or F32 compare's lane mask (before EXEC), or `None` for the general path.
#[inline(always)]
fn compare(w: &Wave, inst: &Inst, ap: (u64, u64), ty: CmpType, pred: Predicate) -> Option<u64> {
    if pred == Predicate::Class {
        return None;
    }
    let (lt, eq, gt, un) = predicate_bits(pred);
    let (a, b) = (src(w, inst, 0, ap)?, src(w, inst, 1, ap)?);
    Some(match ty {
        CmpType::I32 => match (lt, eq, gt) {
            (true, false, false) => bits2(w, a, b, |x, y| (x as i32) < (y as i32)),
            (false, true, false) => bits2(w, a, b, |x, y| x == y),
            (true, true, false) => bits2(w, a, b, |x, y| (x as i32) <= (y as i32)),
            (false, false, true) => bits2(w, a, b, |x, y| (x as i32) > (y as i32)),
            (true, false, true) => bits2(w, a, b, |x, y| x != y),
            (false, true, true) => bits2(w, a, b, |x, y| (x as i32) >= (y as i32)),
            (t, _, _) => [0, u64::MAX][usize::from(t)],
        },
        CmpType::U32 => match (lt, eq, gt) {
            (true, false, false) => bits2(w, a, b, |x, y| x < y),
            (false, true, false) => bits2(w, a, b, |x, y| x == y),
            (true, true, false) => bits2(w, a, b, |x, y| x <= y),
            (false, false, true) => bits2(w, a, b, |x, y| x > y),
            (true, false, true) => bits2(w, a, b, |x, y| x != y),
            (false, true, true) => bits2(w, a, b, |x, y| x >= y),
            (t, _, _) => [0, u64::MAX][usize::from(t)],
        },
        CmpType::F32 => bits2(w, a, b, |x, y| {
            let (x, y) = (f32_of(x), f32_of(y));
            (lt & (x < y)) | (eq & (x == y)) | (gt & (x > y)) | (un & (x.is_nan() | y.is_nan()))
        }),
        _ => return None,
    })
}

/// The lane mask a carry-in (`v_addc`/`v_subb`) or a select (`v_cndmask`) reads: VCC in
/// VOP2, src2 in VOP3.
#[inline(always)]
fn mask_src2(w: &Wave, inst: &Inst, ap: (u64, u64)) -> u64 {
    if inst.format == Format::Vop2 {
        return w.vcc();
    }
    match inst.src[2] {
        Operand::Sgpr(r, _) => w.lane_mask(r),
        op => w.scalar64(op, inst.imm[2], ap) & w.lane_limit(),
    }
}

/// The operations themselves; `None` leaves the instruction to the general path (nothing has
/// been written then).
#[inline(always)]
fn run(w: &mut Wave, inst: &Inst, ap: (u64, u64)) -> Option<()> {
    let d = dst(w, inst)?;
    let s0 = || src(w, inst, 0, ap);
    let out = match inst.op {
        Op::VMovB32 => lanes1(w, s0()?, |a| a),
        Op::VNotB32 => lanes1(w, s0()?, |a| !a),
        Op::VCndmaskB32 => {
            let sel = mask_src2(w, inst, ap);
            let (a, b) = (s0()?, src(w, inst, 1, ap)?);
            let mut out = lanes1(w, a, |x| x);
            select_into(&mut out, &lanes1(w, b, |x| x), sel);
            out
        }
        Op::VAddCoU32
        | Op::VSubCoU32
        | Op::VSubrevCoU32
        | Op::VAddcCoU32
        | Op::VSubbCoU32
        | Op::VSubbrevCoU32 => return add_carry(w, inst, ap, d),
        Op::VLshlrevB64 => return shift64(w, inst, ap, d),
        op => {
            let (a, b) = (s0()?, src(w, inst, 1, ap)?);
            match op {
                Op::VAddU32 | Op::VAddI32 => lanes2(w, a, b, u32::wrapping_add),
                Op::VSubU32 | Op::VSubI32 => lanes2(w, a, b, u32::wrapping_sub),
                Op::VSubrevU32 => lanes2(w, a, b, |x, y| y.wrapping_sub(x)),
                Op::VMulLoU32 => lanes2(w, a, b, u32::wrapping_mul),
                Op::VMulU32U24 => {
                    lanes2(w, a, b, |x, y| (x & 0xFF_FFFF).wrapping_mul(y & 0xFF_FFFF))
                }
                Op::VMulHiU32 => {
                    lanes2(w, a, b, |x, y| ((u64::from(x) * u64::from(y)) >> 32) as u32)
                }
                Op::VLshrrevB32 => lanes2(w, a, b, |x, y| y >> (x & 31)),
                Op::VAshrrevI32 => lanes2(w, a, b, |x, y| ((y as i32) >> (x & 31)) as u32),
                Op::VLshlrevB32 => lanes2(w, a, b, |x, y| y << (x & 31)),
                Op::VAndB32 => lanes2(w, a, b, |x, y| x & y),
                Op::VOrB32 => lanes2(w, a, b, |x, y| x | y),
                Op::VXorB32 => lanes2(w, a, b, |x, y| x ^ y),
                Op::VMinU32 => lanes2(w, a, b, u32::min),
                Op::VMaxU32 => lanes2(w, a, b, u32::max),
                Op::VMinI32 => lanes2(w, a, b, |x, y| (x as i32).min(y as i32) as u32),
                Op::VMaxI32 => lanes2(w, a, b, |x, y| (x as i32).max(y as i32) as u32),
                Op::VAddF32 => lanes2(w, a, b, |x, y| (f32_of(x) + f32_of(y)).to_bits()),
                Op::VSubF32 => lanes2(w, a, b, |x, y| (f32_of(x) - f32_of(y)).to_bits()),
                Op::VSubrevF32 => lanes2(w, a, b, |x, y| (f32_of(y) - f32_of(x)).to_bits()),
                Op::VMulF32 => lanes2(w, a, b, |x, y| (f32_of(x) * f32_of(y)).to_bits()),
                Op::VMinF32 => lanes2(w, a, b, |x, y| fmin32(f32_of(x), f32_of(y)).to_bits()),
                Op::VMaxF32 => lanes2(w, a, b, |x, y| fmax32(f32_of(x), f32_of(y)).to_bits()),
                Op::VFmacF32 | Op::VMacF32 => {
                    let fused = op == Op::VFmacF32;
                    lanes3(w, a, b, S::R(d), |x, y, z| {
                        let (x, y, z) = (f32_of(x), f32_of(y), f32_of(z));
                        if fused { x.mul_add(y, z) } else { x * y + z }.to_bits()
                    })
                }
                _ => {
                    let c = src(w, inst, 2, ap)?;
                    match op {
                        Op::VFmaF32 | Op::VFmamkF32 | Op::VFmaakF32 => {
                            lanes3(w, a, b, c, |x, y, z| {
                                f32_of(x).mul_add(f32_of(y), f32_of(z)).to_bits()
                            })
                        }
                        Op::VMadF32 | Op::VMadmkF32 | Op::VMadakF32 => {
                            lanes3(w, a, b, c, |x, y, z| {
                                (f32_of(x) * f32_of(y) + f32_of(z)).to_bits()
                            })
                        }
                        Op::VLshlAddU32 => {
                            lanes3(w, a, b, c, |x, y, z| (x << (y & 31)).wrapping_add(z))
                        }
                        Op::VAddLshlU32 => {
                            lanes3(w, a, b, c, |x, y, z| x.wrapping_add(y) << (z & 31))
                        }
                        Op::VAdd3U32 => {
                            lanes3(w, a, b, c, |x, y, z| x.wrapping_add(y).wrapping_add(z))
                        }
                        Op::VLshlOrB32 => lanes3(w, a, b, c, |x, y, z| (x << (y & 31)) | z),
                        Op::VAndOrB32 => lanes3(w, a, b, c, |x, y, z| (x & y) | z),
                        Op::VOr3B32 => lanes3(w, a, b, c, |x, y, z| x | y | z),
                        Op::VBfiB32 => lanes3(w, a, b, c, |x, y, z| (x & y) | (!x & z)),
                        Op::VMadU32U24 => lanes3(w, a, b, c, |x, y, z| {
                            (x & 0xFF_FFFF).wrapping_mul(y & 0xFF_FFFF).wrapping_add(z)
                        }),
                        _ => return None,
                    }
                }
            }
        }
    };
    let m = w.exec();
    select_into(&mut w.v[d], &out, m);
    Some(())
}

/// `v_add_co`/`v_sub_co`/`v_subrev_co` and their carry-in forms: the sum and a carry-out
/// lane mask (for the lanes in EXEC) written to the scalar destination.
#[inline(always)]
fn add_carry(w: &mut Wave, inst: &Inst, ap: (u64, u64), d: usize) -> Option<()> {
    let (sub, reverse, with_carry) = match inst.op {
        Op::VAddCoU32 => (false, false, false),
        Op::VSubCoU32 => (true, false, false),
        Op::VSubrevCoU32 => (true, true, false),
        Op::VAddcCoU32 => (false, false, true),
        Op::VSubbCoU32 => (true, false, true),
        _ => (true, true, true),
    };
    let (mut a, mut b) = (src(w, inst, 0, ap)?, src(w, inst, 1, ap)?);
    if reverse {
        std::mem::swap(&mut a, &mut b);
    }
    // A carry-in of 0 (`v_add_co_u32`, the common case) and a scalar operand each get a loop of
    // their own, so the loops carry no lane-mask expansion or broadcast they do not need.
    let cin = if with_carry {
        Some(mask_src2(w, inst, ap))
    } else {
        None
    };
    let mut carry = [false; LANES];
    let mut out = [0u32; LANES];
    match (sub, cin) {
        (false, None) => carry_lanes::<false>(w, a, b, None, &mut out, &mut carry),
        (true, None) => carry_lanes::<true>(w, a, b, None, &mut out, &mut carry),
        (false, Some(c)) => carry_lanes::<false>(w, a, b, Some(c), &mut out, &mut carry),
        (true, Some(c)) => carry_lanes::<true>(w, a, b, Some(c), &mut out, &mut carry),
    }
    let m = w.exec();
    select_into(&mut w.v[d], &out, m);
    if let Operand::Sgpr(r, _) = inst.sdst {
        w.set_lane_mask(r, pack_bits(&carry) & m);
    }
    Some(())
}

/// One lane of `x + y + c` (`SUB`: `x - y - c`) and its carry (borrow) out of bit 31: the
/// majority of x31, y31 and the carry into bit 31 (x inverted for the borrow), as
/// `valu_ops::add_carry` computes it.
#[inline(always)]
fn carry_lane<const SUB: bool>(x: u32, y: u32, c: u32) -> (u32, bool) {
    if SUB {
        let r = x.wrapping_sub(y).wrapping_sub(c);
        (r, ((!x & y) | (!(x ^ y) & r)) >> 31 != 0)
    } else {
        let r = x.wrapping_add(y).wrapping_add(c);
        (r, ((x & y) | ((x ^ y) & !r)) >> 31 != 0)
    }
}

/// The lanes of an add or subtract with carry: one loop per operand shape, and with a
/// carry-in mask only when there is one.
#[inline(always)]
fn carry_lanes<const SUB: bool>(
    w: &Wave,
    a: S,
    b: S,
    cin: Option<u64>,
    out: &mut Lanes,
    carry: &mut [bool; LANES],
) {
    let cin = cin.map(super::wave::lane_masks);
    macro_rules! lanes {
        (|$l:ident| $x:expr, $y:expr) => {
            match &cin {
                None => {
                    for $l in 0..LANES {
                        (out[$l], carry[$l]) = carry_lane::<SUB>($x, $y, 0);
                    }
                }
                Some(c) => {
                    for $l in 0..LANES {
                        (out[$l], carry[$l]) = carry_lane::<SUB>($x, $y, c[$l] & 1);
                    }
                }
            }
        };
    }
    match (a, b) {
        (S::R(i), S::R(j)) => {
            let (x, y) = (&w.v[i], &w.v[j]);
            lanes!(|l| x[l], y[l]);
        }
        (S::K(s), S::R(j)) => {
            let y = &w.v[j];
            lanes!(|l| s, y[l]);
        }
        (S::R(i), S::K(t)) => {
            let x = &w.v[i];
            lanes!(|l| x[l], t);
        }
        (S::K(s), S::K(t)) => lanes!(|l| s, t),
    }
}

/// `v_lshlrev_b64`: a 32-bit shift count and a 64-bit register pair (or value).
#[inline(always)]
fn shift64(w: &mut Wave, inst: &Inst, ap: (u64, u64), d: usize) -> Option<()> {
    if d + 1 >= w.v.len() {
        return None;
    }
    let a = src(w, inst, 0, ap)?;
    let (lo, hi): (Lanes, Lanes) = match inst.src[1] {
        op @ (Operand::Vgpr(..) | Operand::Agpr(..)) => {
            let i = w.vindex(op, 0)?;
            if i + 1 >= w.v.len() {
                return None;
            }
            (w.v[i], w.v[i + 1])
        }
        Operand::None => return None,
        op => {
            let x = w.scalar64(op, inst.imm[1], ap);
            ([x as u32; LANES], [(x >> 32) as u32; LANES])
        }
    };
    let mut out_lo = [0u32; LANES];
    let mut out_hi = [0u32; LANES];
    match a {
        // One count for every lane (an address scaled by an element size, the common case):
        // a shift the optimiser vectorises.
        S::K(n) => {
            let n = n & 63;
            for l in 0..LANES {
                let v = (u64::from(lo[l]) | u64::from(hi[l]) << 32) << n;
                out_lo[l] = v as u32;
                out_hi[l] = (v >> 32) as u32;
            }
        }
        S::R(i) => {
            let count = &w.v[i];
            for l in 0..LANES {
                let v = (u64::from(lo[l]) | u64::from(hi[l]) << 32) << (count[l] & 63);
                out_lo[l] = v as u32;
                out_hi[l] = (v >> 32) as u32;
            }
        }
    }
    let m = w.exec();
    select_into(&mut w.v[d], &out_lo, m);
    select_into(&mut w.v[d + 1], &out_hi, m);
    Some(())
}

#[cfg(test)]
#[path = "valu_fast_tests.rs"]
mod tests;
