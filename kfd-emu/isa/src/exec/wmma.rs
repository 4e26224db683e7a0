//! GFX11 wave matrix multiply-accumulate (`v_wmma_*`): D = A × B + C on 16×16×16 tiles.
//!
//! Register layouts, as AMD's RDNA3 WMMA guide lays them out: the lanes form groups of 16
//! (two in a wave32, four in a wave64); lane `l` of every group holds row `l % 16` of A and
//! column `l % 16` of B, K along its registers (two 16-bit, four 8-bit or eight 4-bit values
//! to a register, lowest K in the lowest bits). Each group holds a copy: the hardware wants
//! the copies equal, and here each group's own copy feeds the output rows that group holds.
//! C and D: element `e` of lane `l` is row `groups * e + l / 16`, column `l % 16` (8
//! registers in a wave32, 4 in a wave64); 16-bit results sit in the low or, with OPSEL[2],
//! the high halves, the other half of each register taken from C (the compiler passes D = C;
//! what the hardware leaves there when they differ is not documented). NEG_LO's bits 0 and 1
//! are the integer forms' signedness of A and B (the float forms' negation of A, B and C),
//! CLAMP saturates the integer forms.
//!
//! Rounding: products and the K-long sums are exact here (f64; integers in i64) and rounded
//! once to the result type, round to nearest even. AMD does not publish the order or width of
//! the hardware's intermediate sums, so the last bit of a float result may differ.

use super::fpmath::{d2h, h2d};
use super::wave::{Wave, LANES};
use crate::decode::{Inst, Op, Operand};
use crate::error::WaveError;

/// What a WMMA operation multiplies and accumulates.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    F32F16,
    F32Bf16,
    F16F16,
    Bf16Bf16,
    I32Iu8,
    I32Iu4,
}

impl Kind {
    fn of(op: Op) -> Option<Kind> {
        Some(match op {
            Op::VWmmaF3216x16x16F16 => Kind::F32F16,
            Op::VWmmaF3216x16x16Bf16 => Kind::F32Bf16,
            Op::VWmmaF1616x16x16F16 => Kind::F16F16,
            Op::VWmmaBf1616x16x16Bf16 => Kind::Bf16Bf16,
            Op::VWmmaI3216x16x16Iu8 => Kind::I32Iu8,
            Op::VWmmaI3216x16x16Iu4 => Kind::I32Iu4,
            _ => return None,
        })
    }

    /// Bits of one A or B element.
    fn input_bits(self) -> u32 {
        match self {
            Kind::I32Iu8 => 8,
            Kind::I32Iu4 => 4,
            _ => 16,
        }
    }
}

fn bf16(bits: u32) -> f64 {
    f64::from(f32::from_bits((bits & 0xFFFF) << 16))
}

/// `x` as bf16 bits, rounded to nearest even (NaN kept quiet).
fn to_bf16(x: f64) -> u32 {
    let b = (x as f32).to_bits();
    if (x as f32).is_nan() {
        return (b >> 16) | 0x40;
    }
    let round = 0x7FFF + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) & 0xFFFF
}

pub(super) fn exec(w: &mut Wave, inst: &Inst) -> Result<(), WaveError> {
    let Some(kind) = Kind::of(inst.op) else {
        return Err(w.unimplemented(inst));
    };
    if w.exec() != w.lane_limit() {
        // The matrix is spread over every lane: the ISA requires EXEC to be all ones.
        return Err(w.illegal(inst, "WMMA with lanes disabled in EXEC"));
    }
    let groups = if w.wave32 { 2 } else { 4 };
    let bits = kind.input_bits();
    let per_reg = 32 / bits;
    let mods = inst.vop3;
    // Reads the 16 values of K of A's row (or B's column) `i` in lane group `g`.
    let read_k = |w: &Wave, op: Operand, g: usize, i: usize| -> Result<[u32; 16], WaveError> {
        let mut out = [0u32; 16];
        for (k, o) in out.iter_mut().enumerate() {
            let reg = w.vreg(inst, op, k / per_reg as usize)?;
            let lane = (g * 16 + i) % LANES;
            let shift = (k as u32 % per_reg) * bits;
            *o = (reg[lane] >> shift) & ((1u64 << bits) - 1) as u32;
        }
        Ok(out)
    };
    let (a_op, b_op, c_op) = (inst.src[0], inst.src[1], inst.src[2]);
    let hi = mods.opsel & 4 != 0;
    let int = matches!(kind, Kind::I32Iu8 | Kind::I32Iu4);
    let (sign_a, sign_b) = (mods.neg & 1 != 0, mods.neg & 2 != 0);
    let neg = |k: usize| {
        if !int && mods.neg >> k & 1 != 0 {
            -1.0
        } else {
            1.0
        }
    };
    let element = |v: u32, signed: bool| -> i64 {
        if signed {
            let s = 32 - bits;
            i64::from(((v << s) as i32) >> s)
        } else {
            i64::from(v)
        }
    };
    let float = |v: u32| -> f64 {
        match kind {
            Kind::F32Bf16 | Kind::Bf16Bf16 => bf16(v),
            _ => h2d(v),
        }
    };
    let c_regs = 16 / groups;
    let mut out = vec![[0u32; LANES]; c_regs];
    for g in 0..groups {
        let a: Vec<[u32; 16]> = (0..16)
            .map(|r| read_k(w, a_op, g, r))
            .collect::<Result<_, _>>()?;
        let b: Vec<[u32; 16]> = (0..16)
            .map(|c| read_k(w, b_op, g, c))
            .collect::<Result<_, _>>()?;
        for (e, out_reg) in out.iter_mut().enumerate() {
            let row = groups * e + g;
            let c_reg = *w.vreg(inst, c_op, e)?;
            for col in 0..16 {
                let lane = g * 16 + col;
                let c_bits = c_reg[lane];
                let (ar, bc) = (&a[row], &b[col]);
                out_reg[lane] = if int {
                    let sum: i64 = (0..16)
                        .map(|k| element(ar[k], sign_a) * element(bc[k], sign_b))
                        .sum::<i64>()
                        + i64::from(c_bits as i32);
                    if mods.clamp {
                        sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
                    } else {
                        sum as i32 as u32
                    }
                } else {
                    let dot: f64 = (0..16)
                        .map(|k| neg(0) * float(ar[k]) * neg(1) * float(bc[k]))
                        .sum();
                    match kind {
                        Kind::F32F16 | Kind::F32Bf16 => {
                            ((dot + neg(2) * f64::from(f32::from_bits(c_bits))) as f32).to_bits()
                        }
                        _ => {
                            let half = if hi { c_bits >> 16 } else { c_bits & 0xFFFF };
                            let r = dot + neg(2) * float(half);
                            let bits16 = if kind == Kind::F16F16 {
                                d2h(r)
                            } else {
                                to_bf16(r)
                            };
                            if hi {
                                (c_bits & 0xFFFF) | bits16 << 16
                            } else {
                                (c_bits & 0xFFFF_0000) | bits16
                            }
                        }
                    }
                };
            }
        }
    }
    for (e, vals) in out.iter().enumerate() {
        *w.vreg_mut(inst, inst.dst, e)? = *vals;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(to_bf16(1.0), 0x3F80);
        assert_eq!(bf16(0x3F80), 1.0);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even (1).
        assert_eq!(to_bf16(1.0 + 1.0 / 256.0), 0x3F80);
        assert_eq!(to_bf16(1.0 + 3.0 / 256.0), 0x3F82);
    }
}
