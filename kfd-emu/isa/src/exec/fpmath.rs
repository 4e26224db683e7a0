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
    }
}
