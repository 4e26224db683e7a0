//! Less common vector ALU operations: 16-bit three-operand min/max/median, saturating packs,
//! sums of absolute differences, packed 16-bit integer math, dot products and mixed-precision
//! FMA.

use super::fpmath::{d2h, frexp64, h2d};
use super::valu_half::{fields, h3, i16op, pk16, sext};
use super::valu_operands::V;
use super::wave::{per_lane, Lanes};
use crate::decode::Op;
use crate::error::WaveError;

fn s16(x: u32) -> i32 {
    i32::from(x as u16 as i16)
}

fn sat_i16(x: i64) -> u32 {
    x.clamp(-32768, 32767) as i32 as u32 & 0xFFFF
}

/// Dot product of packed fields plus an accumulator (signed or not).
fn dot(a: u32, b: u32, bits: u32, signed: bool) -> i64 {
    fields(a, b, bits, |x, y| {
        if signed {
            sext(x, bits) * sext(y, bits)
        } else {
            i64::from(x) * i64::from(y)
        }
    })
}

/// `v_fma_mix*`: each source is an f32, or (op_sel_hi bit set) the f16 half op_sel picks.
fn mix(v: &mut V<'_>) -> Result<(), WaveError> {
    let m = v.i.vop3;
    let srcs = [*v.src(0)?, *v.src(1)?, *v.src(2)?];
    let old = *v.w.vreg(v.i, v.i.dst, 0)?;
    let op = v.i.op;
    let out: Lanes = per_lane(|l| {
        let arg = |k: usize| -> f64 {
            let raw = srcs[k][l];
            let x = if (m.opsel_hi >> k) & 1 != 0 {
                h2d(if (m.opsel >> k) & 1 != 0 {
                    raw >> 16
                } else {
                    raw & 0xFFFF
                })
            } else {
                f64::from(f32::from_bits(raw))
            };
            let x = if (m.abs >> k) & 1 != 0 { x.abs() } else { x };
            if (m.neg >> k) & 1 != 0 {
                -x
            } else {
                x
            }
        };
        let r = arg(0).mul_add(arg(1), arg(2));
        let r = if m.clamp { r.clamp(0.0, 1.0) } else { r };
        match op {
            Op::VFmaMixloF16 => (old[l] & 0xFFFF_0000) | d2h(r),
            Op::VFmaMixhiF16 => (old[l] & 0xFFFF) | d2h(r) << 16,
            _ => (r as f32).to_bits(),
        }
    });
    let mask = v.mask();
    v.write(&out, mask)
}

/// Runs `v`'s instruction if it is one of this family's, else hands it to `other`.
pub(super) fn exec(
    v: &mut V<'_>,
    other: impl FnOnce(&mut V<'_>) -> Result<(), WaveError>,
) -> Result<(), WaveError> {
    match v.i.op {
        Op::VAddI16 => i16op(v, 2, |a, b, _| sat_i16(i64::from(s16(a) + s16(b)))),
        Op::VSubI16 => i16op(v, 2, |a, b, _| sat_i16(i64::from(s16(a) - s16(b)))),
        Op::VMin3F16 => h3(v, 3, |a, b, c| a.min(b).min(c)),
        Op::VMax3F16 => h3(v, 3, |a, b, c| a.max(b).max(c)),
        Op::VMed3F16 => h3(v, 3, |a, b, c| a.min(b).max(a.max(b).min(c))),
        Op::VMin3I16 => i16op(v, 3, |a, b, c| s16(a).min(s16(b)).min(s16(c)) as u32),
        Op::VMax3I16 => i16op(v, 3, |a, b, c| s16(a).max(s16(b)).max(s16(c)) as u32),
        Op::VMed3I16 => i16op(v, 3, |a, b, c| {
            let (a, b, c) = (s16(a), s16(b), s16(c));
            a.min(b).max(a.max(b).min(c)) as u32
        }),
        Op::VMin3U16 => i16op(v, 3, |a, b, c| a.min(b).min(c)),
        Op::VMax3U16 => i16op(v, 3, |a, b, c| a.max(b).max(c)),
        Op::VMed3U16 => i16op(v, 3, |a, b, c| a.min(b).max(a.max(b).min(c))),
        Op::VFrexpMantF16 => h3(v, 1, |x, _, _| frexp64(x).0),
        Op::VFrexpExpI16F16 => i16op(v, 1, |a, _, _| frexp64(h2d(a)).1 as u32),
        Op::VCvtPkU16U32 => v.map2(|a, b| a.min(0xFFFF) | b.min(0xFFFF) << 16),
        Op::VCvtPkI16I32 => {
            v.map2(|a, b| sat_i16(i64::from(a as i32)) | sat_i16(i64::from(b as i32)) << 16)
        }
        Op::VCvtPknormI16F32 | Op::VCvtPknormU16F32 => {
            let signed = v.i.op == Op::VCvtPknormI16F32;
            let (a, b) = (*v.src(0)?, *v.src(1)?);
            let norm = |x: f32| -> u32 {
                if signed {
                    ((x.clamp(-1.0, 1.0) * 32767.0).round() as i32 as u32) & 0xFFFF
                } else {
                    (x.clamp(0.0, 1.0) * 65535.0).round() as u32
                }
            };
            let out: Lanes = per_lane(|l| norm(v.fmod32(a[l], 0)) | norm(v.fmod32(b[l], 1)) << 16);
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VSadU8 => v.map3(|a, b, c| {
            (fields(a, b, 8, |x, y| i64::from(x.abs_diff(y))) as u32).wrapping_add(c)
        }),
        Op::VSadHiU8 => v.map3(|a, b, c| {
            ((fields(a, b, 8, |x, y| i64::from(x.abs_diff(y))) as u32) << 16).wrapping_add(c)
        }),
        Op::VSadU16 => v.map3(|a, b, c| {
            (fields(a, b, 16, |x, y| i64::from(x.abs_diff(y))) as u32).wrapping_add(c)
        }),
        Op::VSadU32 => v.map3(|a, b, c| a.abs_diff(b).wrapping_add(c)),
        Op::VLerpU8 => v.map3(|a, b, c| {
            (0..4).fold(0, |acc, k| {
                let (x, y, z) = (
                    (a >> (8 * k)) & 0xFF,
                    (b >> (8 * k)) & 0xFF,
                    (c >> (8 * k)) & 1,
                );
                acc | ((x + y + z) >> 1) << (8 * k)
            })
        }),
        Op::VCvtPkU8F32 => {
            let (a, b, c) = (*v.src(0)?, *v.src(1)?, *v.src(2)?);
            let out: Lanes = per_lane(|l| {
                let byte = (v.fmod32(a[l], 0).round().clamp(0.0, 255.0)) as u32;
                let shift = 8 * (b[l] & 3);
                (c[l] & !(0xFF << shift)) | byte << shift
            });
            let m = v.mask();
            v.write(&out, m)
        }
        // Packed 16-bit integers.
        Op::VPkAddI16 => pk16(v, 2, |a, b, _, _| a.wrapping_add(b)),
        Op::VPkSubI16 => pk16(v, 2, |a, b, _, _| a.wrapping_sub(b)),
        Op::VPkMaxI16 => pk16(v, 2, |a, b, _, _| s16(a).max(s16(b)) as u32),
        Op::VPkMinI16 => pk16(v, 2, |a, b, _, _| s16(a).min(s16(b)) as u32),
        Op::VPkMaxU16 => pk16(v, 2, |a, b, _, _| a.max(b)),
        Op::VPkMinU16 => pk16(v, 2, |a, b, _, _| a.min(b)),
        Op::VPkAshrrevI16 => pk16(v, 2, |a, b, _, _| (s16(b) >> (a & 15)) as u32),
        Op::VPkMadI16 | Op::VPkMadU16 => pk16(v, 3, |a, b, c, _| a.wrapping_mul(b).wrapping_add(c)),
        // Dot products (op_sel and modifiers are not applied).
        Op::VDot2F32F16 => v.map3(|a, b, c| {
            let lo = h2d(a & 0xFFFF) * h2d(b & 0xFFFF);
            let hi = h2d(a >> 16) * h2d(b >> 16);
            ((lo + hi + f64::from(f32::from_bits(c))) as f32).to_bits()
        }),
        Op::VDot2I32I16 => v.map3(|a, b, c| (dot(a, b, 16, true) + i64::from(c as i32)) as u32),
        Op::VDot2U32U16 => v.map3(|a, b, c| (dot(a, b, 16, false) as u32).wrapping_add(c)),
        Op::VDot4I32I8 => v.map3(|a, b, c| (dot(a, b, 8, true) + i64::from(c as i32)) as u32),
        Op::VDot4U32U8 => v.map3(|a, b, c| (dot(a, b, 8, false) as u32).wrapping_add(c)),
        Op::VDot8I32I4 => v.map3(|a, b, c| (dot(a, b, 4, true) + i64::from(c as i32)) as u32),
        Op::VDot8U32U4 => v.map3(|a, b, c| (dot(a, b, 4, false) as u32).wrapping_add(c)),
        Op::VDot2cI32I16 | Op::VDot4cI32I8 | Op::VDot8cI32I4 | Op::VDot2cF32F16 => {
            let acc = *v.w.vreg(v.i, v.i.dst, 0)?;
            let (a, b) = (*v.src(0)?, *v.src(1)?);
            let op = v.i.op;
            let out: Lanes = per_lane(|l| match op {
                Op::VDot2cI32I16 => (dot(a[l], b[l], 16, true) + i64::from(acc[l] as i32)) as u32,
                Op::VDot4cI32I8 => (dot(a[l], b[l], 8, true) + i64::from(acc[l] as i32)) as u32,
                Op::VDot8cI32I4 => (dot(a[l], b[l], 4, true) + i64::from(acc[l] as i32)) as u32,
                _ => {
                    let lo = h2d(a[l] & 0xFFFF) * h2d(b[l] & 0xFFFF);
                    let hi = h2d(a[l] >> 16) * h2d(b[l] >> 16);
                    ((lo + hi + f64::from(f32::from_bits(acc[l]))) as f32).to_bits()
                }
            });
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VFmaMixF32 | Op::VFmaMixloF16 | Op::VFmaMixhiF16 => mix(v),
        _ => other(v),
    }
}
