//! Float helpers with the GPU's definitions where they differ from Rust's (division fix-up,
//! class tests, frexp, fract, min/max with NaN, half precision).

pub(super) use crate::decode::operand::{f16_to_f32, f32_to_f16};

/// IEEE-754 class bits of `v_cmp_class`: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denormal,
/// 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf.
pub(super) fn class64(x: f64, quiet_bit: bool) -> u32 {
    let neg = x.is_sign_negative();
    let bit = if x.is_nan() {
        if quiet_bit {
            1
        } else {
            0
        }
    } else if x.is_infinite() {
        if neg {
            2
        } else {
            9
        }
    } else if x == 0.0 {
        if neg {
            5
        } else {
            6
        }
    } else if x.is_subnormal() {
        if neg {
            4
        } else {
            7
        }
    } else if neg {
        3
    } else {
        8
    };
    1 << bit
}

/// Class of an f32.
pub(super) fn class32(x: f32) -> u32 {
    if x.is_subnormal() {
        return if x.is_sign_negative() { 1 << 4 } else { 1 << 7 };
    }
    class64(f64::from(x), x.to_bits() & 0x40_0000 != 0)
}

/// Class of an f64.
pub(super) fn class_f64(x: f64) -> u32 {
    class64(x, x.to_bits() & (1 << 51) != 0)
}

/// Class of an f16.
pub(super) fn class16(h: u16) -> u32 {
    let exp = (h >> 10) & 0x1F;
    let man = h & 0x3FF;
    let neg = h & 0x8000 != 0;
    let bit = match (exp, man) {
        (0x1F, 0) => {
            if neg {
                2
            } else {
                9
            }
        }
        (0x1F, m) => {
            if m & 0x200 != 0 {
                1
            } else {
                0
            }
        }
        (0, 0) => {
            if neg {
                5
            } else {
                6
            }
        }
        (0, _) => {
            if neg {
                4
            } else {
                7
            }
        }
        _ => {
            if neg {
                3
            } else {
                8
            }
        }
    };
    1 << bit
}

/// `v_div_fixup_f32/f64`: the final step of division, given the quotient estimate `q`, the
/// denominator `d` and numerator `n`: special cases (NaN, infinities, zeros) get their IEEE
/// results, everything else keeps `q` with the sign of `n / d`.
pub(super) fn div_fixup(q: f64, d: f64, n: f64) -> f64 {
    let negative = d.is_sign_negative() != n.is_sign_negative();
    let signed = |x: f64| if negative { -x } else { x };
    if n.is_nan() {
        n
    } else if d.is_nan() {
        d
    } else if (d == 0.0 && n == 0.0) || (d.is_infinite() && n.is_infinite()) {
        f64::NAN
    } else if d == 0.0 || n.is_infinite() {
        signed(f64::INFINITY)
    } else if d.is_infinite() || n == 0.0 {
        signed(0.0)
    } else if q.is_nan() {
        q
    } else {
        signed(q.abs())
    }
}

/// frexp: mantissa in [0.5, 1) and exponent; NaN/inf give themselves and 0.
pub(super) fn frexp64(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7FF) as i32;
    if exp == 0 {
        // Subnormal: scale up first.
        let (m, e) = frexp64(x * 2f64.powi(64));
        return (m, e - 64);
    }
    let m = f64::from_bits((bits & !(0x7FF << 52)) | (0x3FE << 52));
    (m, exp - 1022)
}

/// `v_fract`: x - floor(x), capped below 1 (NaN/inf propagate as NaN/NaN).
pub(super) fn fract64(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    (x - x.floor()).min(f64::from_bits(0x3FEF_FFFF_FFFF_FFFF))
}

/// f32 fract.
pub(super) fn fract32(x: f32) -> f32 {
    if !x.is_finite() {
        return f32::NAN;
    }
    (x - x.floor()).min(f32::from_bits(0x3F7F_FFFF))
}

/// IEEE minNum/maxNum: a NaN operand loses to a number.
pub(super) fn fmin32(a: f32, b: f32) -> f32 {
    a.min(b)
}

/// See [`fmin32`].
pub(super) fn fmax32(a: f32, b: f32) -> f32 {
    a.max(b)
}

/// Median of three (NaN-tolerant as min/max are).
pub(super) fn med3(a: f32, b: f32, c: f32) -> f32 {
    fmax32(fmin32(a, b), fmin32(fmax32(a, b), c))
}

/// Float to int conversion as the VALU does it: NaN to 0, saturating.
pub(super) fn f64_to_i32(x: f64) -> i32 {
    if x.is_nan() {
        0
    } else {
        x as i32
    }
}

/// Float to unsigned conversion: NaN and negatives to 0, saturating.
pub(super) fn f64_to_u32(x: f64) -> u32 {
    if x.is_nan() {
        0
    } else {
        x as u32
    }
}

/// Round half to even.
pub(super) fn rndne(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

/// f16 bits to f64.
pub(super) fn h2d(h: u32) -> f64 {
    f64::from(f16_to_f32(h as u16))
}

/// f64 to f16 bits (via f32; double rounding is not modelled).
pub(super) fn d2h(x: f64) -> u32 {
    u32::from(f32_to_f16(x as f32))
}

/// The fraction bits of 2/pi, most significant first (1216 bits; `v_trig_preop_f64` reads
/// the first 1201). Computed with Machin's formula in 450-digit decimal arithmetic.
const TWO_OVER_PI: [u64; 19] = [
    0xA2F9_836E_4E44_1529,
    0xFC27_57D1_F534_DDC0,
    0xDB62_9599_3C43_9041,
    0xFE51_63AB_DEBB_C561,
    0xB724_6E3A_424D_D2E0,
    0x0649_2EEA_09D1_921C,
    0xFE1D_EB1C_B129_A73E,
    0xE882_35F5_2EBB_4484,
    0xE99C_7026_B45F_7E41,
    0x3991_D639_8353_39F4,
    0x9C84_5F8B_BDF9_283B,
    0x1FF8_97FF_DE05_980F,
    0xEF2F_118B_5A0A_6D1F,
    0x6D36_7ECF_27CB_09B7,
    0x4F46_3F66_9E5F_EA2D,
    0x7527_BAC7_EBE5_F17B,
    0x3D07_39F7_8A52_92EA,
    0x6BFB_5FB1_1F8D_5D08,
    0x5603_3046_FC7B_6BAB,
];

/// Bit `i` of 2/pi's fraction (bit 0 is the 1/2 place); 0 past the 1201 bits the hardware has.
fn two_over_pi_bit(i: u64) -> u64 {
    if i > 1200 {
        return 0;
    }
    TWO_OVER_PI
        .get((i / 64) as usize)
        .map_or(0, |w| (w >> (63 - i % 64)) & 1)
}

/// `v_trig_preop_f64`: 53 bits of 2/pi starting `segment * 53` bits in (further for large
/// `x`), scaled to their place, for Payne-Hanek argument reduction.
pub(super) fn trig_preop(x: f64, segment: u32) -> f64 {
    let exp = (x.to_bits() >> 52) & 0x7FF;
    let mut shift = u64::from(segment & 31) * 53;
    if exp > 1077 {
        shift += exp - 1077;
    }
    let m = (0..53).fold(0u64, |acc, k| acc << 1 | two_over_pi_bit(shift + k));
    let mut scale = -53 - shift as i32;
    if exp >= 1968 {
        scale += 128;
    }
    // Two steps keep 2^scale representable.
    (m as f64) * 2f64.powi(scale / 2) * 2f64.powi(scale - scale / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(class32(-0.0), 1 << 5);
        assert_eq!(class32(f32::NAN), 1 << 1);
        assert_eq!(class32(1e-40), 1 << 7);
        assert_eq!(class_f64(f64::NEG_INFINITY), 1 << 2);
        assert_eq!(class16(0x3C00), 1 << 8);
        assert_eq!(div_fixup(2.0, -1.0, 2.0), -2.0);
        assert!(div_fixup(0.0, 0.0, 0.0).is_nan());
        assert_eq!(div_fixup(f64::NAN, 0.0, 1.0), f64::INFINITY);
        assert_eq!(frexp64(8.0), (0.5, 4));
        assert_eq!(frexp64(1e-310).1, -1029);
        assert_eq!(fract32(-0.25), 0.75);
        assert_eq!(med3(3.0, 1.0, 2.0), 2.0);
        assert_eq!(rndne(2.5), 2.0);
        assert_eq!(rndne(3.5), 4.0);
        assert_eq!(rndne(-2.5), -2.0);
        assert_eq!(f64_to_i32(1e20), i32::MAX);
        assert_eq!(f64_to_u32(-3.0), 0);
        // The first segment is 2/pi truncated to 53 bits; the segments sum to 2/pi.
        let two_over_pi = 2.0 / std::f64::consts::PI;
        assert_eq!(trig_preop(1.0, 0).to_bits(), two_over_pi.to_bits() - 1);
        let sum = trig_preop(1.0, 0) + trig_preop(1.0, 1) + trig_preop(1.0, 2);
        assert_eq!(sum, two_over_pi);
        assert!(trig_preop(1.0, 1) < 1e-15 && trig_preop(1.0, 1) > 0.0);
    }
}
