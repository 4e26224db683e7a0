//! Helpers of the VALU families for 16-bit and packed-field lanes: f16 and 16-bit integer
//! operations, packed 16-bit pairs (VOP3P), and the fields of packed dot products.

use super::fpmath::d2h;
use super::valu_operands::V;
use super::wave::{per_lane, Lanes, LANES};
use crate::error::WaveError;

/// An f16 op computed in f64 and rounded to f16 (`n` sources, 16-bit results).
pub(super) fn h3(
    v: &mut V<'_>,
    n: usize,
    f: impl Fn(f64, f64, f64) -> f64,
) -> Result<(), WaveError> {
    let a = v.src16(0)?;
    let b = if n > 1 { v.src16(1)? } else { [0; LANES] };
    let c = if n > 2 { v.src16(2)? } else { [0; LANES] };
    let clamp = v.i.vop3.clamp;
    let out: Lanes = per_lane(|l| {
        let r = f(v.fmod16(a[l], 0), v.fmod16(b[l], 1), v.fmod16(c[l], 2));
        d2h(if clamp { r.clamp(0.0, 1.0) } else { r })
    });
    let m = v.mask();
    v.write16(&out, m)
}

/// A 16-bit integer op.
pub(super) fn i16op(
    v: &mut V<'_>,
    n: usize,
    f: impl Fn(u32, u32, u32) -> u32,
) -> Result<(), WaveError> {
    let a = v.src16(0)?;
    let b = if n > 1 { v.src16(1)? } else { [0; LANES] };
    let c = if n > 2 { v.src16(2)? } else { [0; LANES] };
    let out: Lanes = per_lane(|l| f(a[l], b[l], c[l]) & 0xFFFF);
    let m = v.mask();
    v.write16(&out, m)
}

/// Packed 16-bit pairs in one dword (VOP3P), op_sel/op_sel_hi choosing halves.
pub(super) fn pk16(
    v: &mut V<'_>,
    n: usize,
    f: impl Fn(u32, u32, u32, bool) -> u32,
) -> Result<(), WaveError> {
    let m3 = v.i.vop3;
    let srcs: Vec<Lanes> = (0..n)
        .map(|k| v.src(k).map(|s| *s))
        .collect::<Result<_, _>>()?;
    let half = |k: usize, l: usize, hi: bool| -> u32 {
        let sel = if hi {
            m3.opsel_hi >> k & 1
        } else {
            m3.opsel >> k & 1
        };
        let raw = srcs.get(k).map_or(0, |s| s[l]);
        let h = if sel != 0 { raw >> 16 } else { raw & 0xFFFF };
        let neg = if hi { m3.abs >> k & 1 } else { m3.neg >> k & 1 };
        if neg != 0 {
            h ^ 0x8000
        } else {
            h
        }
    };
    let out: Lanes = per_lane(|l| {
        let lo = f(
            half(0, l, false),
            half(1, l, false),
            half(2, l, false),
            false,
        ) & 0xFFFF;
        let hi = f(half(0, l, true), half(1, l, true), half(2, l, true), true) & 0xFFFF;
        lo | hi << 16
    });
    let m = v.mask();
    v.write(&out, m)
}

/// Sum over `n` lanes of `bits`-wide fields of `f(a_field, b_field)`.
pub(super) fn fields(a: u32, b: u32, bits: u32, f: impl Fn(u32, u32) -> i64) -> i64 {
    let mask = (1u64 << bits) - 1;
    (0..32 / bits)
        .map(|k| {
            let x = ((u64::from(a) >> (k * bits)) & mask) as u32;
            let y = ((u64::from(b) >> (k * bits)) & mask) as u32;
            f(x, y)
        })
        .sum()
}

/// `x`'s low `bits` bits, sign-extended.
pub(super) fn sext(x: u32, bits: u32) -> i64 {
    let shift = 64 - bits;
    (i64::from(x) << shift) >> shift
}
