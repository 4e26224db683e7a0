//! The vector ALU operations: 32-bit integer and f32 arithmetic, compares, carries and
//! cross-lane reads. 64-bit, 16-bit, packed and conversion operations are in `valu_wide`.

use super::fpmath::{class16, class32, class_f64, div_fixup, fmax32, fmin32, fract32, med3};
use super::valu_operands::{Lanes64, V};
use super::wave::{lane_masks, pack_masks, per_lane, Lanes, LANES};
use crate::decode::compare::{CmpType, Compare, Predicate};
use crate::decode::{Class, Format, Op, Operand};
use crate::error::WaveError;

fn bfe(v: u32, off: u32, width: u32, signed: bool) -> u32 {
    let (off, width) = (off & 31, width & 31);
    if width == 0 {
        return 0;
    }
    if off + width < 32 {
        let x = (v >> off) & ((1 << width) - 1);
        if signed && (x >> (width - 1)) & 1 != 0 {
            x | (u32::MAX << width)
        } else {
            x
        }
    } else if signed {
        ((v as i32) >> off) as u32
    } else {
        v >> off
    }
}

fn i24(x: u32) -> i64 {
    i64::from(((x << 8) as i32) >> 8)
}

fn u24(x: u32) -> u64 {
    u64::from(x & 0xFF_FFFF)
}

/// Where carry ops read their carry-in: VCC for VOP2, src2 for VOP3.
fn carry_in(v: &V<'_>) -> u64 {
    if v.i.format == Format::Vop2 {
        v.w.vcc()
    } else {
        v.mask_src(2)
    }
}

/// `a + b (+ cin)` / `a - b (- cin)` with a carry-out lane mask.
fn add_carry(v: &mut V<'_>, sub: bool, reverse: bool, with_carry: bool) -> Result<(), WaveError> {
    let cin = if with_carry { carry_in(v) } else { 0 };
    let (s0, s1) = (v.src(0)?, v.src(1)?);
    let (a, b): (&Lanes, &Lanes) = if reverse { (&s1, &s0) } else { (&s0, &s1) };
    // 32-bit lanes throughout (what the optimiser vectorises best). The carry out of bit 31
    // is the majority of x31, y31 and the carry into bit 31 (r31 ^ x31 ^ y31); the borrow
    // likewise with x inverted.
    let cin = lane_masks(cin);
    let mut out = [0u32; LANES];
    let mut carry = [0u32; LANES];
    for l in 0..LANES {
        let c = cin[l] & 1;
        let (x, y) = (a[l], b[l]);
        if sub {
            let r = x.wrapping_sub(y).wrapping_sub(c);
            out[l] = r;
            carry[l] = ((!x & y) | (!(x ^ y) & r)) >> 31;
        } else {
            let r = x.wrapping_add(y).wrapping_add(c);
            out[l] = r;
            carry[l] = ((x & y) | ((x ^ y) & !r)) >> 31;
        }
    }
    // The clamp bit saturates the result (the carry out still says what happened).
    if v.i.vop3.clamp {
        let limit = if sub { 0 } else { u32::MAX };
        for l in 0..LANES {
            if carry[l] != 0 {
                out[l] = limit;
            }
        }
    }
    let m = v.mask();
    v.write(&out, m)?;
    v.write_sdst(pack_masks(&carry) & m);
    Ok(())
}

/// The ordering bits (lt, eq, gt, unordered) each [`Predicate`] but `Class` is true for, by
/// its index.
const PREDICATE_BITS: [(bool, bool, bool, bool); 18] = [
    (false, false, false, false), // f
    (true, false, false, false),  // lt
    (false, true, false, false),  // eq
    (true, true, false, false),   // le
    (false, false, true, false),  // gt
    (true, false, true, false),   // lg
    (false, true, true, false),   // ge
    (true, true, true, false),    // o
    (false, false, false, true),  // u
    (true, false, false, true),   // nge
    (false, true, false, true),   // nlg
    (true, true, false, true),    // ngt
    (false, false, true, true),   // nle
    (true, false, true, true),    // neq
    (false, true, true, true),    // nlt
    (true, true, true, true),     // tru
    (true, false, true, true),    // ne
    (true, true, true, true),     // t
];

/// A 32-bit integer compare's lane mask, one instantiation per predicate (a single vector
/// compare each, rather than three and a select).
macro_rules! cmp32 {
    ($v:expr, $a:expr, $b:expr, $t:ty, $ord:expr) => {{
        let (v, a, b) = (&$v, &$a, &$b);
        match $ord {
            (false, false, false) => v.bits(|_| false),
            (true, false, false) => v.bits(|l| (a[l] as $t) < (b[l] as $t)),
            (false, true, false) => v.bits(|l| a[l] == b[l]),
            (true, true, false) => v.bits(|l| (a[l] as $t) <= (b[l] as $t)),
            (false, false, true) => v.bits(|l| (a[l] as $t) > (b[l] as $t)),
            (true, false, true) => v.bits(|l| a[l] != b[l]),
            (false, true, true) => v.bits(|l| (a[l] as $t) >= (b[l] as $t)),
            (true, true, true) => v.bits(|_| true),
        }
    }};
}

/// The ordering bits (lt, eq, gt, unordered) `pred` is true for (none for `Class`).
pub(super) fn predicate_bits(pred: Predicate) -> (bool, bool, bool, bool) {
    PREDICATE_BITS
        .get(pred as usize)
        .copied()
        .unwrap_or(PREDICATE_BITS[0])
}

/// Vector compares (VOPC and their VOP3 forms), as the table's [`Compare`] says.
fn compare(v: &mut V<'_>, c: Compare) -> Result<(), WaveError> {
    let class = c.pred == Predicate::Class;
    let ty = c.ty;
    let (lt, eq, gt, un) = predicate_bits(c.pred);
    let fcmp = move |a: f64, b: f64| -> bool {
        if a < b {
            lt
        } else if a > b {
            gt
        } else if a == b {
            eq
        } else {
            un
        }
    };
    let icmp = move |ord: std::cmp::Ordering| -> bool {
        match ord {
            std::cmp::Ordering::Less => lt,
            std::cmp::Ordering::Equal => eq,
            std::cmp::Ordering::Greater => gt,
        }
    };
    let bits = match ty {
        CmpType::F64 | CmpType::I64 | CmpType::U64 => {
            let a = v.src64(0)?;
            if class {
                let m = v.src(1)?;
                v.bits(|l| class_f64(v.fmod64(a[l], 0)) & m[l] != 0)
            } else {
                let b = v.src64(1)?;
                match ty {
                    CmpType::F64 => v.bits(|l| fcmp(v.fmod64(a[l], 0), v.fmod64(b[l], 1))),
                    CmpType::I64 => v.bits(|l| icmp((a[l] as i64).cmp(&(b[l] as i64)))),
                    _ => v.bits(|l| icmp(a[l].cmp(&b[l]))),
                }
            }
        }
        CmpType::F16 | CmpType::I16 | CmpType::U16 => {
            let a = v.src16(0)?;
            if class {
                let m = v.src(1)?;
                v.bits(|l| class16(a[l] as u16) & m[l] != 0)
            } else {
                let b = v.src16(1)?;
                match ty {
                    CmpType::F16 => v.bits(|l| fcmp(v.fmod16(a[l], 0), v.fmod16(b[l], 1))),
                    CmpType::I16 => v.bits(|l| icmp((a[l] as i16).cmp(&(b[l] as i16)))),
                    _ => v.bits(|l| icmp(a[l].cmp(&b[l]))),
                }
            }
        }
        _ => {
            let a = v.src(0)?;
            let b = v.src(1)?;
            if class {
                v.bits(|l| class32(v.fmod32(a[l], 0)) & b[l] != 0)
            } else {
                match ty {
                    CmpType::F32 => {
                        // In f32 (widening to f64 changes no ordering), without branches.
                        let x: [f32; LANES] = per_lane(|l| v.fmod32(a[l], 0));
                        let y: [f32; LANES] = per_lane(|l| v.fmod32(b[l], 1));
                        v.bits(|l| {
                            let (x, y) = (x[l], y[l]);
                            (lt & (x < y))
                                | (eq & (x == y))
                                | (gt & (x > y))
                                | (un & (x.is_nan() | y.is_nan()))
                        })
                    }
                    CmpType::I32 => cmp32!(v, a, b, i32, (lt, eq, gt)),
                    _ => cmp32!(v, a, b, u32, (lt, eq, gt)),
                }
            }
        }
    };
    v.write_sdst(bits);
    if c.cmpx {
        v.w.set_exec(bits);
    }
    Ok(())
}

/// `v_div_scale_f32/f64`: the interpreter does not pre-scale operands (see the crate docs):
/// it returns src0 and clears the scale flag, except that a zero numerator or denominator
/// gives NaN as the hardware does.
fn div_scale(v: &mut V<'_>, wide: bool) -> Result<(), WaveError> {
    if wide {
        let (a, d, n) = (v.src64(0)?, v.src64(1)?, v.src64(2)?);
        let out: Lanes64 = per_lane(|l| {
            let (den, num) = (v.fmod64(d[l], 1), v.fmod64(n[l], 2));
            if den == 0.0 || num == 0.0 {
                f64::NAN.to_bits()
            } else {
                v.fmod64(a[l], 0).to_bits()
            }
        });
        let m = v.mask();
        v.write64(&out, m)?;
    } else {
        let (a, d, n) = (v.src(0)?, v.src(1)?, v.src(2)?);
        let out: Lanes = per_lane(|l| {
            let (den, num) = (v.fmod32(d[l], 1), v.fmod32(n[l], 2));
            if den == 0.0 || num == 0.0 {
                f32::NAN.to_bits()
            } else {
                v.fmod32(a[l], 0).to_bits()
            }
        });
        let m = v.mask();
        v.write(&out, m)?;
    }
    v.write_sdst(0);
    Ok(())
}

/// `v_readlane_b32`, `v_writelane_b32`, `v_readfirstlane_b32`.
fn lane_access(v: &mut V<'_>) -> Result<(), WaveError> {
    match v.i.op {
        Op::VReadfirstlaneB32 | Op::VReadlaneB32 => {
            let a = v.src(0)?;
            let lane = if v.i.op == Op::VReadlaneB32 {
                (v.src(1)?[0] & 63) as usize
            } else {
                let e = v.w.exec();
                if e == 0 {
                    0
                } else {
                    e.trailing_zeros() as usize
                }
            };
            if let Operand::Sgpr(r, _) = v.i.dst {
                v.w.set_sgpr(r, a[lane]);
            }
            Ok(())
        }
        _ => {
            // v_writelane_b32: one lane of the destination, whatever EXEC says.
            let val = v.src(0)?[0];
            let lane = (v.src(1)?[0] & 63) as usize;
            let inst = v.i;
            let reg = v.w.vreg_mut(inst, inst.dst, 0)?;
            reg[lane] = val;
            Ok(())
        }
    }
}

/// Runs `v`'s instruction if it is one of this family's, else hands it to `other`.
pub(super) fn exec(
    v: &mut V<'_>,
    other: impl FnOnce(&mut V<'_>) -> Result<(), WaveError>,
) -> Result<(), WaveError> {
    if let Class::Compare(c) = v.i.class {
        return compare(v, c);
    }
    let pi = std::f32::consts::PI;
    match v.i.op {
        Op::VNop | Op::VClrexcp => Ok(()),
        Op::VMovB32 => v.map1(|a| a),
        Op::VReadfirstlaneB32 | Op::VReadlaneB32 | Op::VWritelaneB32 => lane_access(v),
        Op::VCndmaskB32 => {
            let sel = if v.i.format == Format::Vop2 {
                v.w.vcc()
            } else {
                v.mask_src(2)
            };
            let (a, b) = (v.src(0)?, v.src(1)?);
            let out: Lanes = per_lane(|l| {
                if (sel >> l) & 1 != 0 {
                    v.fmod32(b[l], 1).to_bits()
                } else {
                    v.fmod32(a[l], 0).to_bits()
                }
            });
            let m = v.mask();
            v.write(&out, m)
        }
        // Integer.
        // The clamp bit makes integer adds and subtracts saturate (LLVM selects them for
        // uaddsat/usubsat: HIP's `__clzll` relies on it), unsigned or signed by the opcode.
        Op::VAddU32 if v.i.vop3.clamp => v.map2(|a, b| a.saturating_add(b)),
        Op::VSubU32 if v.i.vop3.clamp => v.map2(|a, b| a.saturating_sub(b)),
        Op::VSubrevU32 if v.i.vop3.clamp => v.map2(|a, b| b.saturating_sub(a)),
        Op::VAddI32 if v.i.vop3.clamp => v.map2(|a, b| (a as i32).saturating_add(b as i32) as u32),
        Op::VSubI32 if v.i.vop3.clamp => v.map2(|a, b| (a as i32).saturating_sub(b as i32) as u32),
        Op::VAddU32 => v.map2(|a, b| a.wrapping_add(b)),
        Op::VSubU32 => v.map2(|a, b| a.wrapping_sub(b)),
        Op::VSubrevU32 => v.map2(|a, b| b.wrapping_sub(a)),
        Op::VAddI32 => v.map2(|a, b| a.wrapping_add(b)),
        Op::VSubI32 => v.map2(|a, b| a.wrapping_sub(b)),
        Op::VAddCoU32 => add_carry(v, false, false, false),
        Op::VSubCoU32 => add_carry(v, true, false, false),
        Op::VSubrevCoU32 => add_carry(v, true, true, false),
        Op::VAddcCoU32 => add_carry(v, false, false, true),
        Op::VSubbCoU32 => add_carry(v, true, false, true),
        Op::VSubbrevCoU32 => add_carry(v, true, true, true),
        Op::VMulLoU32 => v.map2(|a, b| a.wrapping_mul(b)),
        Op::VMulHiU32 => v.map2(|a, b| ((u64::from(a) * u64::from(b)) >> 32) as u32),
        Op::VMulHiI32 => v.map2(|a, b| ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32),
        Op::VMulI32I24 => v.map2(|a, b| (i24(a) * i24(b)) as u32),
        Op::VMulHiI32I24 => v.map2(|a, b| ((i24(a) * i24(b)) >> 32) as u32),
        Op::VMulU32U24 => v.map2(|a, b| (u24(a) * u24(b)) as u32),
        Op::VMulHiU32U24 => v.map2(|a, b| ((u24(a) * u24(b)) >> 32) as u32),
        Op::VMadI32I24 => v.map3(|a, b, c| (i24(a) * i24(b) + i64::from(c as i32)) as u32),
        Op::VMadU32U24 => v.map3(|a, b, c| (u24(a) * u24(b) + u64::from(c)) as u32),
        Op::VMinI32 => v.map2(|a, b| (a as i32).min(b as i32) as u32),
        Op::VMaxI32 => v.map2(|a, b| (a as i32).max(b as i32) as u32),
        Op::VMinU32 => v.map2(|a, b| a.min(b)),
        Op::VMaxU32 => v.map2(|a, b| a.max(b)),
        Op::VMin3I32 => v.map3(|a, b, c| (a as i32).min(b as i32).min(c as i32) as u32),
        Op::VMax3I32 => v.map3(|a, b, c| (a as i32).max(b as i32).max(c as i32) as u32),
        Op::VMin3U32 => v.map3(|a, b, c| a.min(b).min(c)),
        Op::VMax3U32 => v.map3(|a, b, c| a.max(b).max(c)),
        Op::VMed3I32 => v.map3(|a, b, c| {
            let (a, b, c) = (a as i32, b as i32, c as i32);
            a.min(b).max(a.max(b).min(c)) as u32
        }),
        Op::VMed3U32 => v.map3(|a, b, c| a.min(b).max(a.max(b).min(c))),
        Op::VLshrrevB32 => v.map2(|a, b| b >> (a & 31)),
        Op::VAshrrevI32 => v.map2(|a, b| ((b as i32) >> (a & 31)) as u32),
        Op::VLshlrevB32 => v.map2(|a, b| b << (a & 31)),
        Op::VAndB32 => v.map2(|a, b| a & b),
        Op::VOrB32 => v.map2(|a, b| a | b),
        Op::VXorB32 => v.map2(|a, b| a ^ b),
        Op::VXnorB32 => v.map2(|a, b| !(a ^ b)),
        Op::VNotB32 => v.map1(|a| !a),
        Op::VBfrevB32 => v.map1(u32::reverse_bits),
        Op::VFfbhU32 => v.map1(|a| if a == 0 { u32::MAX } else { a.leading_zeros() }),
        Op::VFfblB32 => v.map1(|a| if a == 0 { u32::MAX } else { a.trailing_zeros() }),
        Op::VFfbhI32 => v.map1(|a| {
            let x = if (a as i32) < 0 { !a } else { a };
            if x == 0 {
                u32::MAX
            } else {
                x.leading_zeros() - 1
            }
        }),
        Op::VBfeU32 => v.map3(|a, b, c| bfe(a, b, c, false)),
        Op::VBfeI32 => v.map3(|a, b, c| bfe(a, b, c, true)),
        Op::VBfiB32 => v.map3(|a, b, c| (a & b) | (!a & c)),
        Op::VBfmB32 => v.map2(|a, b| (((1u64 << (a & 31)) - 1) as u32) << (b & 31)),
        Op::VAlignbitB32 => {
            v.map3(|a, b, c| ((u64::from(a) << 32 | u64::from(b)) >> (c & 31)) as u32)
        }
        Op::VAlignbyteB32 => {
            v.map3(|a, b, c| ((u64::from(a) << 32 | u64::from(b)) >> (8 * (c & 3))) as u32)
        }
        Op::VLshlAddU32 => v.map3(|a, b, c| (a << (b & 31)).wrapping_add(c)),
        Op::VAddLshlU32 => v.map3(|a, b, c| a.wrapping_add(b) << (c & 31)),
        Op::VAdd3U32 => v.map3(|a, b, c| a.wrapping_add(b).wrapping_add(c)),
        Op::VLshlOrB32 => v.map3(|a, b, c| (a << (b & 31)) | c),
        Op::VAndOrB32 => v.map3(|a, b, c| (a & b) | c),
        Op::VOr3B32 => v.map3(|a, b, c| a | b | c),
        Op::VXadU32 => v.map3(|a, b, c| (a ^ b).wrapping_add(c)),
        Op::VPermB32 => v.map3(|a, b, c| {
            let bytes = (u64::from(a) << 32 | u64::from(b)).to_le_bytes();
            let pick = |sel: u32| -> u32 {
                match sel {
                    0..=7 => u32::from(bytes[sel as usize]),
                    8..=11 => {
                        let byte = bytes[(2 * (sel - 8) + 1) as usize];
                        if byte & 0x80 != 0 {
                            0xFF
                        } else {
                            0
                        }
                    }
                    12 => 0,
                    _ => 0xFF,
                }
            };
            (0..4).fold(0, |acc, k| acc | pick((c >> (8 * k)) & 0xFF) << (8 * k))
        }),
        Op::VBcntU32B32 => v.map2(|a, b| a.count_ones().wrapping_add(b)),
        Op::VMbcntLoU32B32 => {
            let (a, b) = (v.src(0)?, v.src(1)?);
            let out: Lanes = per_lane(|l| {
                (a[l] & ((1u64 << l) - 1) as u32)
                    .count_ones()
                    .wrapping_add(b[l])
            });
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VMbcntHiU32B32 => {
            let (a, b) = (v.src(0)?, v.src(1)?);
            let out: Lanes = per_lane(|l| {
                let below = if l <= 32 {
                    0
                } else {
                    ((1u64 << (l - 32)) - 1) as u32
                };
                (a[l] & below).count_ones().wrapping_add(b[l])
            });
            let m = v.mask();
            v.write(&out, m)
        }
        // f32.
        Op::VAddF32 => v.f2(|a, b| a + b),
        Op::VSubF32 => v.f2(|a, b| a - b),
        Op::VSubrevF32 => v.f2(|a, b| b - a),
        Op::VMulF32 => v.f2(|a, b| a * b),
        Op::VMulLegacyF32 => v.f2(|a, b| if a == 0.0 || b == 0.0 { 0.0 } else { a * b }),
        Op::VMinF32 => v.f2(fmin32),
        Op::VMaxF32 => v.f2(fmax32),
        Op::VMin3F32 => v.f3(|a, b, c| fmin32(fmin32(a, b), c)),
        Op::VMax3F32 => v.f3(|a, b, c| fmax32(fmax32(a, b), c)),
        Op::VMed3F32 => v.f3(med3),
        Op::VFmaF32 | Op::VFmamkF32 | Op::VFmaakF32 => v.f3(f32::mul_add),
        Op::VMadF32 | Op::VMadmkF32 | Op::VMadakF32 | Op::VMadLegacyF32 => {
            v.f3(|a, b, c| a * b + c)
        }
        Op::VFmacF32 | Op::VMacF32 => {
            let acc = v.w.vreg(v.i, v.i.dst, 0)?;
            let acc = *acc;
            let (a, b) = (v.src(0)?, v.src(1)?);
            let fused = v.i.op == Op::VFmacF32;
            let out: Lanes = per_lane(|l| {
                let (x, y, z) = (v.fmod32(a[l], 0), v.fmod32(b[l], 1), f32::from_bits(acc[l]));
                v.fout32(if fused { x.mul_add(y, z) } else { x * y + z })
            });
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VLdexpF32 => {
            let (a, b) = (v.src(0)?, v.src(1)?);
            let out: Lanes = per_lane(|l| {
                let x = f64::from(v.fmod32(a[l], 0));
                v.fout32((x * 2f64.powi((b[l] as i32).clamp(-300, 300))) as f32)
            });
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VFractF32 => v.f1(fract32),
        Op::VTruncF32 => v.f1(f32::trunc),
        Op::VCeilF32 => v.f1(f32::ceil),
        Op::VFloorF32 => v.f1(f32::floor),
        Op::VRndneF32 => v.f1(|x| super::fpmath::rndne(f64::from(x)) as f32),
        Op::VExpF32 | Op::VExpLegacyF32 => v.f1(f32::exp2),
        Op::VLogF32 | Op::VLogLegacyF32 => v.f1(f32::log2),
        Op::VRcpF32 | Op::VRcpIflagF32 => v.f1(|x| 1.0 / x),
        Op::VRsqF32 => v.f1(|x| 1.0 / x.sqrt()),
        Op::VSqrtF32 => v.f1(f32::sqrt),
        Op::VSinF32 => v.f1(|x| (f64::from(x) * 2.0 * f64::from(pi)).sin() as f32),
        Op::VCosF32 => v.f1(|x| (f64::from(x) * 2.0 * f64::from(pi)).cos() as f32),
        Op::VFrexpMantF32 => v.f1(|x| super::fpmath::frexp64(f64::from(x)).0 as f32),
        Op::VFrexpExpI32F32 => {
            let a = v.src(0)?;
            let out: Lanes =
                per_lane(|l| super::fpmath::frexp64(f64::from(v.fmod32(a[l], 0))).1 as u32);
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VDivScaleF32 => div_scale(v, false),
        Op::VDivScaleF64 => div_scale(v, true),
        Op::VDivFmasF32 => {
            let vcc = v.w.vcc();
            let (a, b, c) = (v.src(0)?, v.src(1)?, v.src(2)?);
            let out: Lanes = per_lane(|l| {
                let r = v
                    .fmod32(a[l], 0)
                    .mul_add(v.fmod32(b[l], 1), v.fmod32(c[l], 2));
                let scale = if (vcc >> l) & 1 != 0 {
                    2f32.powi(32)
                } else {
                    1.0
                };
                v.fout32(r * scale)
            });
            let m = v.mask();
            v.write(&out, m)
        }
        Op::VDivFixupF32 => {
            v.f3(|q, d, n| div_fixup(f64::from(q), f64::from(d), f64::from(n)) as f32)
        }
        _ => other(v),
    }
}

#[cfg(test)]
mod tests {
    use super::PREDICATE_BITS;

    #[test]
    fn carry_and_borrow_formulas_match_wide_arithmetic() {
        let vals = [
            0u32,
            1,
            2,
            0x7FFF_FFFF,
            0x8000_0000,
            0x8000_0001,
            0xFFFF_FFFE,
            0xFFFF_FFFF,
        ];
        for &x in &vals {
            for &y in &vals {
                for c in 0..2u32 {
                    let r = x.wrapping_add(y).wrapping_add(c);
                    let carry = ((x & y) | ((x ^ y) & !r)) >> 31;
                    let wide = u64::from(x) + u64::from(y) + u64::from(c);
                    assert_eq!(u64::from(carry), wide >> 32, "{x:#x} + {y:#x} + {c}");
                    let r = x.wrapping_sub(y).wrapping_sub(c);
                    let borrow = ((!x & y) | (!(x ^ y) & r)) >> 31;
                    let wide = i64::from(x) - i64::from(y) - i64::from(c);
                    assert_eq!(borrow == 1, wide < 0, "{x:#x} - {y:#x} - {c}");
                }
            }
        }
    }
    #[test]
    fn predicate_bits_follow_the_names() {
        use crate::decode::compare::Predicate;
        assert_eq!(Predicate::ALL.len(), PREDICATE_BITS.len() + 1);
        for (p, bits) in Predicate::ALL.iter().zip(PREDICATE_BITS) {
            let name = p.name();
            let expect = match name {
                "f" => (false, false, false, false),
                "lt" => (true, false, false, false),
                "eq" => (false, true, false, false),
                "le" => (true, true, false, false),
                "gt" => (false, false, true, false),
                "lg" => (true, false, true, false),
                "ge" => (false, true, true, false),
                "o" => (true, true, true, false),
                "u" => (false, false, false, true),
                "nge" => (true, false, false, true),
                "nlg" => (false, true, false, true),
                "ngt" => (true, true, false, true),
                "nle" => (false, false, true, true),
                "neq" => (true, false, true, true),
                "nlt" => (false, true, true, true),
                "ne" => (true, false, true, true),
                _ => (true, true, true, true),
            };
            assert_eq!(bits, expect, "{name}");
        }
    }
}
