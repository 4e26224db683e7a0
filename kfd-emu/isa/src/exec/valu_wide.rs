//! Vector ALU operations on 64-bit, 16-bit and packed data, conversions, and the
//! accumulation-register moves.

use super::fpmath::{d2h, div_fixup, f64_to_i32, f64_to_u32, fract64, frexp64, h2d, rndne};
use super::valu_half::{h3, i16op, pk16};
use super::valu_operands::{Lanes64, V};
use super::wave::{per_lane, Lanes, LANES};
use crate::decode::Op;
use crate::error::WaveError;

/// A 64-bit-result op over 64-bit sources (integer, no modifiers).
fn map64(v: &mut V<'_>, n: usize, f: impl Fn(u64, u64, u64) -> u64) -> Result<(), WaveError> {
    let a = v.src64(0)?;
    let b = if n > 1 { v.src64(1)? } else { [0; LANES] };
    let c = if n > 2 { v.src64(2)? } else { [0; LANES] };
    let out: Lanes64 = per_lane(|l| f(a[l], b[l], c[l]));
    let m = v.mask();
    v.write64(&out, m)
}

/// A 32-bit result from a 64-bit source.
fn from64(v: &mut V<'_>, f: impl Fn(f64) -> u32) -> Result<(), WaveError> {
    let a = v.src64(0)?;
    let out: Lanes = per_lane(|l| f(v.fmod64(a[l], 0)));
    let m = v.mask();
    v.write(&out, m)
}

/// A 64-bit float result from a 32-bit source.
fn to64(v: &mut V<'_>, f: impl Fn(u32) -> f64) -> Result<(), WaveError> {
    let a = v.src(0)?;
    let out: Lanes64 = per_lane(|l| v.fout64(f(a[l])));
    let m = v.mask();
    v.write64(&out, m)
}

/// Packed (VOP3P) f32 pairs: each half of the 64-bit sources, chosen by op_sel/op_sel_hi,
/// with neg_lo/neg_hi.
fn pk_f32(v: &mut V<'_>, n: usize, f: impl Fn(f32, f32, f32) -> f32) -> Result<(), WaveError> {
    let m3 = v.i.vop3;
    let mut srcs = [[0u64; LANES]; 3];
    for (k, s) in srcs.iter_mut().enumerate().take(n) {
        *s = v.src64(k)?;
    }
    let pick = |k: usize, l: usize, hi_result: bool| -> f32 {
        let sel = if hi_result {
            (m3.opsel_hi >> k) & 1
        } else {
            (m3.opsel >> k) & 1
        };
        let raw = srcs.get(k).map_or(0, |s| s[l]);
        let bits = if sel != 0 {
            (raw >> 32) as u32
        } else {
            raw as u32
        };
        let neg = if hi_result {
            m3.abs >> k & 1
        } else {
            m3.neg >> k & 1
        };
        f32::from_bits(if neg != 0 { bits ^ 0x8000_0000 } else { bits })
    };
    let out: Lanes64 = per_lane(|l| {
        let lo = f(pick(0, l, false), pick(1, l, false), pick(2, l, false));
        let hi = f(pick(0, l, true), pick(1, l, true), pick(2, l, true));
        u64::from(lo.to_bits()) | u64::from(hi.to_bits()) << 32
    });
    let m = v.mask();
    v.write64(&out, m)
}

fn hf(f: impl Fn(f64, f64, f64) -> f64) -> impl Fn(u32, u32, u32, bool) -> u32 {
    move |a, b, c, _| d2h(f(h2d(a), h2d(b), h2d(c)))
}

/// Runs `v`'s instruction if it is one of this family's, else hands it to `other`.
pub(super) fn exec(
    v: &mut V<'_>,
    other: impl FnOnce(&mut V<'_>) -> Result<(), WaveError>,
) -> Result<(), WaveError> {
    match v.i.op {
        // f64.
        Op::VAddF64 => v.d3(2, |a, b, _| a + b),
        Op::VMulF64 => v.d3(2, |a, b, _| a * b),
        Op::VMinF64 => v.d3(2, |a, b, _| a.min(b)),
        Op::VMaxF64 => v.d3(2, |a, b, _| a.max(b)),
        Op::VFmaF64 => v.d3(3, f64::mul_add),
        Op::VFmacF64 => {
            let acc = v.src64_reg_dst()?;
            let (a, b) = (v.src64(0)?, v.src64(1)?);
            let out: Lanes64 = per_lane(|l| {
                v.fout64(
                    v.fmod64(a[l], 0)
                        .mul_add(v.fmod64(b[l], 1), f64::from_bits(acc[l])),
                )
            });
            let m = v.mask();
            v.write64(&out, m)
        }
        Op::VLdexpF64 => {
            let (a, b) = (v.src64(0)?, v.src(1)?);
            let out: Lanes64 = per_lane(|l| {
                let e = (b[l] as i32).clamp(-2200, 2200);
                let x = v.fmod64(a[l], 0);
                // Two steps keep intermediate scales finite.
                v.fout64(x * 2f64.powi(e / 2) * 2f64.powi(e - e / 2))
            });
            let m = v.mask();
            v.write64(&out, m)
        }
        Op::VRcpF64 => v.d3(1, |x, _, _| 1.0 / x),
        Op::VRsqF64 => v.d3(1, |x, _, _| 1.0 / x.sqrt()),
        Op::VSqrtF64 => v.d3(1, |x, _, _| x.sqrt()),
        Op::VTruncF64 => v.d3(1, |x, _, _| x.trunc()),
        Op::VCeilF64 => v.d3(1, |x, _, _| x.ceil()),
        Op::VFloorF64 => v.d3(1, |x, _, _| x.floor()),
        Op::VRndneF64 => v.d3(1, |x, _, _| rndne(x)),
        Op::VFractF64 => v.d3(1, |x, _, _| fract64(x)),
        Op::VFrexpMantF64 => v.d3(1, |x, _, _| frexp64(x).0),
        Op::VFrexpExpI32F64 => from64(v, |x| frexp64(x).1 as u32),
        Op::VDivFixupF64 => v.d3(3, div_fixup),
        Op::VTrigPreopF64 => {
            let (a, b) = (v.src64(0)?, *v.src(1)?);
            let out: Lanes64 =
                per_lane(|l| v.fout64(super::fpmath::trig_preop(v.fmod64(a[l], 0), b[l])));
            let m = v.mask();
            v.write64(&out, m)
        }
        Op::VDivFmasF64 => {
            let vcc = v.w.vcc();
            let (a, b, c) = (v.src64(0)?, v.src64(1)?, v.src64(2)?);
            let out: Lanes64 = per_lane(|l| {
                let r = v
                    .fmod64(a[l], 0)
                    .mul_add(v.fmod64(b[l], 1), v.fmod64(c[l], 2));
                let scale = if (vcc >> l) & 1 != 0 {
                    2f64.powi(64)
                } else {
                    1.0
                };
                v.fout64(r * scale)
            });
            let m = v.mask();
            v.write64(&out, m)
        }
        // 64-bit integer.
        Op::VMovB64 => map64(v, 1, |a, _, _| a),
        Op::VLshlrevB64 => {
            let (a, b) = (v.src(0)?, v.src64(1)?);
            let out: Lanes64 = per_lane(|l| b[l] << (a[l] & 63));
            let m = v.mask();
            v.write64(&out, m)
        }
        Op::VLshrrevB64 => {
            let (a, b) = (v.src(0)?, v.src64(1)?);
            let out: Lanes64 = per_lane(|l| b[l] >> (a[l] & 63));
            let m = v.mask();
            v.write64(&out, m)
        }
        Op::VAshrrevI64 => {
            let (a, b) = (v.src(0)?, v.src64(1)?);
            let out: Lanes64 = per_lane(|l| ((b[l] as i64) >> (a[l] & 63)) as u64);
            let m = v.mask();
            v.write64(&out, m)
        }
        Op::VLshlAddU64 => {
            let (a, b, c) = (v.src64(0)?, v.src(1)?, v.src64(2)?);
            let out: Lanes64 = per_lane(|l| (a[l] << (b[l] & 7)).wrapping_add(c[l]));
            let m = v.mask();
            v.write64(&out, m)
        }
        Op::VMadU64U32 | Op::VMadI64I32 => {
            let signed = v.i.op == Op::VMadI64I32;
            let (a, b, c) = (v.src(0)?, v.src(1)?, v.src64(2)?);
            let mut carry = 0u64;
            let out: Lanes64 = per_lane(|l| {
                if signed {
                    let p =
                        i128::from(a[l] as i32) * i128::from(b[l] as i32) + i128::from(c[l] as i64);
                    if p > i128::from(i64::MAX) || p < i128::from(i64::MIN) {
                        carry |= 1 << l;
                    }
                    p as u64
                } else {
                    let p = u128::from(a[l]) * u128::from(b[l]) + u128::from(c[l]);
                    if p >> 64 != 0 {
                        carry |= 1 << l;
                    }
                    p as u64
                }
            });
            let m = v.mask();
            v.write64(&out, m)?;
            v.write_sdst(carry & m);
            Ok(())
        }
        // Conversions.
        Op::VCvtF32I32 => v.f1_from(|x| x as i32 as f32),
        Op::VCvtF32U32 => v.f1_from(|x| x as f32),
        Op::VCvtI32F32 => v.map_f32(|x| f64_to_i32(f64::from(x)) as u32),
        Op::VCvtU32F32 => v.map_f32(|x| f64_to_u32(f64::from(x))),
        Op::VCvtRpiI32F32 => v.map_f32(|x| f64_to_i32((f64::from(x) + 0.5).floor()) as u32),
        Op::VCvtFlrI32F32 => v.map_f32(|x| f64_to_i32(f64::from(x).floor()) as u32),
        Op::VCvtF32Ubyte0 => v.f1_from(|x| (x & 0xFF) as f32),
        Op::VCvtF32Ubyte1 => v.f1_from(|x| ((x >> 8) & 0xFF) as f32),
        Op::VCvtF32Ubyte2 => v.f1_from(|x| ((x >> 16) & 0xFF) as f32),
        Op::VCvtF32Ubyte3 => v.f1_from(|x| (x >> 24) as f32),
        Op::VCvtOffF32I4 => v.f1_from(|x| ((x & 0xF) as i32 - 8) as f32 / 16.0),
        Op::VCvtF64F32 => {
            let a = v.src(0)?;
            let out: Lanes64 = per_lane(|l| v.fout64(f64::from(v.fmod32(a[l], 0))));
            let m = v.mask();
            v.write64(&out, m)
        }
        Op::VCvtF32F64 => {
            let a = v.src64(0)?;
            let out: Lanes = per_lane(|l| v.fout32(v.fmod64(a[l], 0) as f32));
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VCvtI32F64 => from64(v, |x| f64_to_i32(x) as u32),
        Op::VCvtU32F64 => from64(v, f64_to_u32),
        Op::VCvtF64I32 => to64(v, |x| f64::from(x as i32)),
        Op::VCvtF64U32 => to64(v, f64::from),
        Op::VCvtF16F32 => {
            let a = v.src(0)?;
            let out: Lanes = per_lane(|l| d2h(f64::from(v.fmod32(a[l], 0))));
            let m = v.mask();
            v.write16(&out, m)
        }
        Op::VCvtF32F16 => {
            let a = v.src16(0)?;
            let out: Lanes = per_lane(|l| v.fout32(v.fmod16(a[l], 0) as f32));
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VCvtPkrtzF16F32 => {
            let (a, b) = (v.src(0)?, v.src(1)?);
            let out: Lanes = per_lane(|l| {
                d2h(f64::from(v.fmod32(a[l], 0))) | d2h(f64::from(v.fmod32(b[l], 1))) << 16
            });
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VCvtF16U16 => i16op(v, 1, |a, _, _| d2h(f64::from(a))),
        Op::VCvtF16I16 => i16op(v, 1, |a, _, _| d2h(f64::from(a as u16 as i16))),
        Op::VCvtU16F16 => i16op(v, 1, |a, _, _| f64_to_u32(h2d(a)).min(0xFFFF)),
        Op::VCvtI16F16 => i16op(v, 1, |a, _, _| {
            (f64_to_i32(h2d(a)).clamp(-32768, 32767)) as u32
        }),
        Op::VPackB32F16 => {
            let (a, b) = (v.src16(0)?, v.src16(1)?);
            let out: Lanes = per_lane(|l| a[l] | b[l] << 16);
            let m = v.mask();
            v.write(&out, m)
        }
        // f16.
        Op::VAddF16 => h3(v, 2, |a, b, _| a + b),
        Op::VSubF16 => h3(v, 2, |a, b, _| a - b),
        Op::VSubrevF16 => h3(v, 2, |a, b, _| b - a),
        Op::VMulF16 => h3(v, 2, |a, b, _| a * b),
        Op::VMaxF16 => h3(v, 2, |a, b, _| a.max(b)),
        Op::VMinF16 => h3(v, 2, |a, b, _| a.min(b)),
        Op::VFmaF16 | Op::VMadF16 | Op::VMadmkF16 | Op::VMadakF16 => {
            h3(v, 3, |a, b, c| a.mul_add(b, c))
        }
        Op::VMacF16 => {
            let acc = *v.w.vreg(v.i, v.i.dst, 0)?;
            let (a, b) = (v.src16(0)?, v.src16(1)?);
            let out: Lanes = per_lane(|l| d2h(v.fmod16(a[l], 0) * v.fmod16(b[l], 1) + h2d(acc[l])));
            let m = v.mask();
            v.write16(&out, m)
        }
        Op::VLdexpF16 => {
            let (a, b) = (v.src16(0)?, v.src(1)?);
            let out: Lanes =
                per_lane(|l| d2h(v.fmod16(a[l], 0) * 2f64.powi((b[l] as i32).clamp(-64, 64))));
            let m = v.mask();
            v.write16(&out, m)
        }
        Op::VRcpF16 => h3(v, 1, |x, _, _| 1.0 / x),
        Op::VSqrtF16 => h3(v, 1, |x, _, _| x.sqrt()),
        Op::VRsqF16 => h3(v, 1, |x, _, _| 1.0 / x.sqrt()),
        Op::VExpF16 => h3(v, 1, |x, _, _| x.exp2()),
        Op::VLogF16 => h3(v, 1, |x, _, _| x.log2()),
        Op::VFloorF16 => h3(v, 1, |x, _, _| x.floor()),
        Op::VCeilF16 => h3(v, 1, |x, _, _| x.ceil()),
        Op::VTruncF16 => h3(v, 1, |x, _, _| x.trunc()),
        Op::VRndneF16 => h3(v, 1, |x, _, _| rndne(x)),
        Op::VFractF16 => h3(v, 1, |x, _, _| fract64(x).min(0.999_511_7)),
        Op::VSinF16 => h3(v, 1, |x, _, _| (x * std::f64::consts::TAU).sin()),
        Op::VCosF16 => h3(v, 1, |x, _, _| (x * std::f64::consts::TAU).cos()),
        Op::VDivFixupF16 => h3(v, 3, div_fixup),
        // 16-bit integer.
        // Saturating with the clamp bit, as the 32-bit forms.
        Op::VAddU16 if v.i.vop3.clamp => i16op(v, 2, |a, b, _| (a + b).min(0xFFFF)),
        Op::VSubU16 if v.i.vop3.clamp => i16op(v, 2, |a, b, _| a.saturating_sub(b)),
        Op::VSubrevU16 if v.i.vop3.clamp => i16op(v, 2, |a, b, _| b.saturating_sub(a)),
        Op::VAddU16 => i16op(v, 2, |a, b, _| a.wrapping_add(b)),
        Op::VSubU16 => i16op(v, 2, |a, b, _| a.wrapping_sub(b)),
        Op::VSubrevU16 => i16op(v, 2, |a, b, _| b.wrapping_sub(a)),
        Op::VMulLoU16 => i16op(v, 2, |a, b, _| a.wrapping_mul(b)),
        Op::VLshlrevB16 => i16op(v, 2, |a, b, _| b << (a & 15)),
        Op::VLshrrevB16 => i16op(v, 2, |a, b, _| b >> (a & 15)),
        Op::VAshrrevI16 => i16op(v, 2, |a, b, _| ((b as u16 as i16) >> (a & 15)) as u32),
        Op::VMaxU16 => i16op(v, 2, |a, b, _| a.max(b)),
        Op::VMinU16 => i16op(v, 2, |a, b, _| a.min(b)),
        Op::VMaxI16 => i16op(v, 2, |a, b, _| {
            (a as u16 as i16).max(b as u16 as i16) as u32
        }),
        Op::VMinI16 => i16op(v, 2, |a, b, _| {
            (a as u16 as i16).min(b as u16 as i16) as u32
        }),
        Op::VMadU16 => i16op(v, 3, |a, b, c| a.wrapping_mul(b).wrapping_add(c)),
        Op::VMadI16 => i16op(v, 3, |a, b, c| a.wrapping_mul(b).wrapping_add(c)),
        Op::VMadU32U16 => v.map3(|a, b, c| ((a & 0xFFFF) * (b & 0xFFFF)).wrapping_add(c)),
        Op::VMadI32I16 => v.map3(|a, b, c| {
            (i32::from(a as u16 as i16) * i32::from(b as u16 as i16)).wrapping_add(c as i32) as u32
        }),
        // Packed.
        Op::VPkFmaF32 => pk_f32(v, 3, f32::mul_add),
        Op::VPkMulF32 => pk_f32(v, 2, |a, b, _| a * b),
        Op::VPkAddF32 => pk_f32(v, 2, |a, b, _| a + b),
        Op::VPkMovB32 => {
            // D.lo = src0 half op_sel[0], D.hi = src1 half op_sel[1].
            let (a, b) = (v.src64(0)?, v.src64(1)?);
            let sel = v.i.vop3.opsel;
            let half = |x: u64, s: u8| if s != 0 { x >> 32 } else { x & 0xFFFF_FFFF };
            let out: Lanes64 = per_lane(|l| half(a[l], sel & 1) | half(b[l], sel >> 1 & 1) << 32);
            let m = v.mask();
            v.write64(&out, m)
        }
        Op::VPkAddF16 => pk16(v, 2, hf(|a, b, _| a + b)),
        Op::VPkMulF16 => pk16(v, 2, hf(|a, b, _| a * b)),
        Op::VPkFmaF16 => pk16(v, 3, hf(f64::mul_add)),
        Op::VPkMinF16 => pk16(v, 2, hf(|a, b, _| a.min(b))),
        Op::VPkMaxF16 => pk16(v, 2, hf(|a, b, _| a.max(b))),
        Op::VPkAddU16 => pk16(v, 2, |a, b, _, _| a.wrapping_add(b)),
        Op::VPkSubU16 => pk16(v, 2, |a, b, _, _| a.wrapping_sub(b)),
        Op::VPkMulLoU16 => pk16(v, 2, |a, b, _, _| a.wrapping_mul(b)),
        Op::VPkLshlrevB16 => pk16(v, 2, |a, b, _, _| b << (a & 15)),
        Op::VPkLshrrevB16 => pk16(v, 2, |a, b, _, _| b >> (a & 15)),
        // Accumulation registers and moves.
        Op::VAccvgprReadB32 | Op::VAccvgprWriteB32 | Op::VAccvgprMovB32 => v.map1(|a| a),
        Op::VSwapB32 => {
            let inst = v.i;
            let a = *v.w.vreg(inst, inst.src[0], 0)?;
            let b = *v.w.vreg(inst, inst.dst, 0)?;
            let m = v.mask();
            v.write(&a, m)?;
            v.write_to(inst.src[0], 0, &b, m)
        }
        _ => other(v),
    }
}
