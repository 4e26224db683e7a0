//! Vector operations GFX10/GFX11 added (GFX9 has none of them): three-way XOR, min-max
//! pairs, 16-bit logic, the DX9 multiply-adds, cross-row lane permutes.

use super::fpmath::{d2h, fmax32, fmin32, h2d};
use super::valu_half::{fields, h3, i16op, sext};
use super::valu_operands::V;
use super::wave::{per_lane, select_into, Lanes, LANES};
use crate::decode::Op;
use crate::error::WaveError;

/// The DX9 ("legacy") product: zero times anything, infinities and NaN included, is zero.
fn dx9_mul(a: f32, b: f32) -> f32 {
    if a == 0.0 || b == 0.0 {
        0.0
    } else {
        a * b
    }
}

/// Runs `v`'s instruction if it is one of this family's, else hands it to `other`.
pub(super) fn exec(
    v: &mut V<'_>,
    other: impl FnOnce(&mut V<'_>) -> Result<(), WaveError>,
) -> Result<(), WaveError> {
    match v.i.op {
        Op::VXor3B32 => v.map3(|a, b, c| a ^ b ^ c),
        Op::VMaxminU32 => v.map3(|a, b, c| a.max(b).min(c)),
        Op::VMinmaxU32 => v.map3(|a, b, c| a.min(b).max(c)),
        Op::VMaxminI32 => v.map3(|a, b, c| (a as i32).max(b as i32).min(c as i32) as u32),
        Op::VMinmaxI32 => v.map3(|a, b, c| (a as i32).min(b as i32).max(c as i32) as u32),
        Op::VMaxminF32 => v.f3(|a, b, c| fmin32(fmax32(a, b), c)),
        Op::VMinmaxF32 => v.f3(|a, b, c| fmax32(fmin32(a, b), c)),
        Op::VMaxminF16 => h3(v, 3, |a, b, c| a.max(b).min(c)),
        Op::VMinmaxF16 => h3(v, 3, |a, b, c| a.min(b).max(c)),
        Op::VAndB16 => i16op(v, 2, |a, b, _| a & b),
        Op::VOrB16 => i16op(v, 2, |a, b, _| a | b),
        Op::VXorB16 => i16op(v, 2, |a, b, _| a ^ b),
        Op::VNotB16 => i16op(v, 1, |a, _, _| !a & 0xFFFF),
        Op::VCvtI32I16 => {
            let a = v.src16(0)?;
            let out: Lanes = per_lane(|l| a[l] as u16 as i16 as i32 as u32);
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VCvtU32U16 => {
            let a = v.src16(0)?;
            let m = v.mask();
            v.write(&a, m)
        }
        Op::VCndmaskB16 => {
            let sel = v.mask_src(2);
            let (a, b) = (v.src16(0)?, v.src16(1)?);
            let out: Lanes = per_lane(|l| if (sel >> l) & 1 != 0 { b[l] } else { a[l] });
            let m = v.mask();
            v.write16(&out, m)
        }
        Op::VFmaDx9ZeroF32 => v.f3(|a, b, c| dx9_mul(a, b) + c),
        Op::VFmacDx9ZeroF32 => {
            let acc = *v.w.vreg(v.i, v.i.dst, 0)?;
            let (a, b) = (v.src(0)?, v.src(1)?);
            let out: Lanes = per_lane(|l| {
                let (x, y) = (v.fmod32(a[l], 0), v.fmod32(b[l], 1));
                v.fout32(dx9_mul(x, y) + f32::from_bits(acc[l]))
            });
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VFmacF16 => {
            let acc = *v.w.vreg(v.i, v.i.dst, 0)?;
            let (a, b) = (v.src16(0)?, v.src16(1)?);
            let out: Lanes = per_lane(|l| {
                d2h(v
                    .fmod16(a[l], 0)
                    .mul_add(v.fmod16(b[l], 1), h2d(acc[l] & 0xFFFF)))
            });
            let m = v.mask();
            v.write16(&out, m)
        }
        Op::VPermlane16B32 | Op::VPermlanex16B32 => permlane16(v),
        // Mixed-signedness dot products: NEG_LO[0] and [1] make A and B signed.
        Op::VDot4I32Iu8 | Op::VDot8I32Iu4 => {
            let bits = if v.i.op == Op::VDot4I32Iu8 { 8 } else { 4 };
            let (sa, sb) = (v.i.vop3.neg & 1 != 0, v.i.vop3.neg & 2 != 0);
            let clamp = v.i.vop3.clamp;
            v.map3(|a, b, c| {
                let dot = fields(a, b, bits, |x, y| {
                    let x = if sa { sext(x, bits) } else { i64::from(x) };
                    let y = if sb { sext(y, bits) } else { i64::from(y) };
                    x * y
                });
                let sum = dot + i64::from(c as i32);
                if clamp {
                    sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
                } else {
                    sum as i32 as u32
                }
            })
        }
        Op::VDot2F32Bf16 => {
            let clamp = v.i.vop3.clamp;
            v.map3(|a, b, c| {
                let bf = |x: u32| f64::from(f32::from_bits(x << 16));
                let r = bf(a & 0xFFFF) * bf(b & 0xFFFF)
                    + bf(a >> 16) * bf(b >> 16)
                    + f64::from(f32::from_bits(c));
                let r = r as f32;
                (if clamp { r.clamp(0.0, 1.0) } else { r }).to_bits()
            })
        }
        Op::VCvtPkI16F32 | Op::VCvtPkU16F32 => {
            let signed = v.i.op == Op::VCvtPkI16F32;
            let (a, b) = (v.src(0)?, v.src(1)?);
            let sat = |x: f32| -> u32 {
                if signed {
                    // NaN converts to 0, as the f32-to-integer conversions do.
                    (x as i32).clamp(-32768, 32767) as u32 & 0xFFFF
                } else {
                    (x as u32).min(0xFFFF)
                }
            };
            let out: Lanes = per_lane(|l| sat(v.fmod32(a[l], 0)) | sat(v.fmod32(b[l], 1)) << 16);
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VPermlane64B32 => {
            // Each lane reads the lane 32 away (the other half of a wave64); a wave32 has
            // no other half and keeps its value.
            let a = *v.src(0)?;
            let wave32 = v.w.wave32;
            let out: Lanes = per_lane(|l| if wave32 { a[l] } else { a[l ^ 32] });
            let m = v.mask();
            v.write(&out, m)
        }
        _ => other(v),
    }
}

/// `v_permlane16_b32` / `v_permlanex16_b32`: lane `i` of each row of 16 reads the lane of its
/// own row (or, for the `x` form, of the paired row) that the 4-bit select `i` of
/// {src1, src2} names. OP_SEL[0] is FI (disabled source lanes are read too), OP_SEL[1]
/// BOUND_CTRL (a disabled source gives 0 rather than leaving the lane unwritten).
fn permlane16(v: &mut V<'_>) -> Result<(), WaveError> {
    let a = *v.src(0)?;
    let sel_lo = v.src(1)?[0];
    let sel_hi = v.src(2)?[0];
    let cross = v.i.op == Op::VPermlanex16B32;
    let fi = v.i.vop3.opsel & 1 != 0;
    let bound = v.i.vop3.opsel & 2 != 0;
    let exec = v.w.exec();
    let mut write = v.mask();
    let mut out = [0u32; LANES];
    for (l, o) in out.iter_mut().enumerate() {
        let i = l % 16;
        let sel = if i < 8 {
            sel_lo >> (4 * i)
        } else {
            sel_hi >> (4 * (i - 8))
        } & 0xF;
        let row = if cross { (l / 16) ^ 1 } else { l / 16 };
        let src = row * 16 + sel as usize;
        if fi || exec >> src & 1 != 0 {
            *o = a[src];
        } else if !bound {
            write &= !(1 << l);
        }
    }
    let dst = v.i.dst;
    let reg = v.w.vreg_mut(v.i, dst, 0)?;
    select_into(reg, &out, write);
    Ok(())
}
