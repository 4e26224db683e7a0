//! Formatted buffer access: `buffer_{load,store}_format_*` (the format from the buffer resource)
//! and `tbuffer_*` (MTBUF: the format from the instruction), GFX9 rules.
//!
//! An element of the format (`DATA_FORMAT`: 1 to 4 channels of 8, 16 or 32 bits, or the packed
//! 10/11-bit and 2/10-bit layouts) is converted per channel by `NUM_FORMAT` to a 32-bit
//! register value: UNORM and SNORM to floats in [0, 1] and [-1, 1], USCALED and SSCALED to the
//! integer as a float, UINT and SINT to the integer zero- or sign-extended, FLOAT from f16,
//! f32 or the 11- and 10-bit unsigned floats. A load's channels pass through the resource's
//! `DST_SEL_X..W` (0, 1, or a channel); a channel the format lacks reads 0, but W, which
//! reads 1 (1.0 for the float-valued formats). The `d16` forms give 16-bit results, two to a
//! register (f16 for the float-valued formats). A store converts the other way (UNORM and SNORM
//! clamped and rounded to nearest even, the scaled formats converted to integers with
//! saturation, integers truncated to the channel's bits) and writes the channels it has: for
//! formats whose channels are whole bytes, the bytes of the channels written; for the packed
//! layouts, the whole element, with the channels it lacks as 0.
//!
//! Not modelled: the data format INVALID (and the reserved codes) reads 0 and writes nothing;
//! the number format combinations the ISA leaves undefined (FLOAT with 8-bit channels, the
//! reserved code 6) read 0 and write 0. Stores ignore DST_SEL.

use super::access::{self, Addr};
use super::vmem::buffer_addrs;
use super::wave::{Wave, LANES};
use super::Ctx;
use crate::decode::operand::{f16_to_f32, f32_to_f16};
use crate::decode::{traits, Class, Format, Inst};
use crate::error::WaveError;
use crate::memory::Memory;

/// A data format's channels: (lowest bit, width) of X, Y, Z, W, as many as it has.
pub(super) fn channels(dfmt: u8) -> &'static [(u32, u32)] {
    match dfmt {
        1 => &[(0, 8)],
        2 => &[(0, 16)],
        3 => &[(0, 8), (8, 8)],
        4 => &[(0, 32)],
        5 => &[(0, 16), (16, 16)],
        // The names list channels from the top: 10_11_11 is X 11 bits at the bottom.
        6 => &[(0, 11), (11, 11), (22, 10)],
        7 => &[(0, 10), (10, 11), (21, 11)],
        8 => &[(0, 2), (2, 10), (12, 10), (22, 10)],
        9 => &[(0, 10), (10, 10), (20, 10), (30, 2)],
        10 => &[(0, 8), (8, 8), (16, 8), (24, 8)],
        11 => &[(0, 32), (32, 32)],
        12 => &[(0, 16), (16, 16), (32, 16), (48, 16)],
        13 => &[(0, 32), (32, 32), (64, 32)],
        14 => &[(0, 32), (32, 32), (64, 32), (96, 32)],
        _ => &[],
    }
}

/// Bytes of one element.
pub(super) fn element_bytes(dfmt: u8) -> usize {
    channels(dfmt)
        .iter()
        .map(|&(lo, n)| (lo + n).div_ceil(8) as usize)
        .max()
        .unwrap_or(0)
}

const UNORM: u8 = 0;
const SNORM: u8 = 1;
const USCALED: u8 = 2;
const SSCALED: u8 = 3;
pub(super) const UINT: u8 = 4;
pub(super) const SINT: u8 = 5;
const FLOAT: u8 = 7;

/// Whether a number format's values are floats in registers.
pub(super) fn float_valued(nfmt: u8) -> bool {
    !matches!(nfmt, UINT | SINT)
}

fn sign_extend(raw: u32, bits: u32) -> i32 {
    let shift = 32 - bits;
    ((raw << shift) as i32) >> shift
}

/// An unsigned float of `mantissa` mantissa bits and a 5-bit exponent (bias 15), as in the
/// 11- and 10-bit channels of the packed float formats.
fn small_float(raw: u32, mantissa: u32) -> f32 {
    let e = (raw >> mantissa) & 31;
    let m = raw & ((1 << mantissa) - 1);
    let scale = (1u32 << mantissa) as f32;
    match e {
        0 => m as f32 / scale * 2f32.powi(-14),
        31 if m == 0 => f32::INFINITY,
        31 => f32::NAN,
        _ => (1.0 + m as f32 / scale) * 2f32.powi(e as i32 - 15),
    }
}

/// [`small_float`]'s inverse, rounding to nearest even; negative values give 0.
fn to_small_float(x: f32, mantissa: u32) -> u32 {
    if x.is_nan() {
        return 31 << mantissa | 1;
    }
    if x <= 0.0 {
        return 0;
    }
    let max = (2.0 - 2f32.powi(-(mantissa as i32))) * 2f32.powi(15);
    if x > max {
        return 31 << mantissa; // infinity
    }
    // Scale to units of the smallest step at x's exponent, and round there.
    let e = (x.log2().floor() as i32).clamp(-14, 15);
    let step = 2f32.powi(e - mantissa as i32);
    let units = (x / step).round_ties_even() as u32;
    let (e, units) = if units >= 2 << mantissa {
        (e + 1, units >> 1)
    } else {
        (e, units)
    };
    if units < 1 << mantissa {
        units // denormal: exponent 0
    } else {
        ((e + 15) as u32) << mantissa | (units - (1 << mantissa))
    }
}

/// A channel's raw bits as a register value.
pub(super) fn unpack(raw: u32, bits: u32, nfmt: u8) -> u32 {
    let umax = if bits == 32 {
        u32::MAX as f64
    } else {
        ((1u64 << bits) - 1) as f64
    };
    match nfmt {
        UNORM => (raw as f64 / umax) as f32,
        SNORM => {
            let max = ((1u64 << (bits - 1)) - 1) as f64;
            ((f64::from(sign_extend(raw, bits)) / max).max(-1.0)) as f32
        }
        USCALED => raw as f32,
        SSCALED => sign_extend(raw, bits) as f32,
        UINT => return raw,
        SINT => return sign_extend(raw, bits) as u32,
        FLOAT => match bits {
            32 => return raw,
            16 => f16_to_f32(raw as u16),
            11 => small_float(raw, 6),
            10 => small_float(raw, 5),
            _ => return 0,
        },
        _ => return 0,
    }
    .to_bits()
}

/// A register value as a channel's raw bits.
pub(super) fn pack(v: u32, bits: u32, nfmt: u8) -> u32 {
    let mask = if bits == 32 {
        u32::MAX
    } else {
        (1 << bits) - 1
    };
    let f = f32::from_bits(v);
    let f = if f.is_nan() { 0.0 } else { f64::from(f) };
    let raw = match nfmt {
        UNORM => (f.clamp(0.0, 1.0) * f64::from(mask)).round_ties_even() as u32,
        SNORM => {
            let max = ((1u64 << (bits - 1)) - 1) as f64;
            (f.clamp(-1.0, 1.0) * max).round_ties_even() as i32 as u32
        }
        USCALED => f.clamp(0.0, f64::from(mask)) as u32,
        SSCALED => {
            let max = ((1u64 << (bits - 1)) - 1) as f64;
            f.clamp(-max - 1.0, max) as i32 as u32
        }
        UINT | SINT => v,
        FLOAT => match bits {
            32 => v,
            16 => u32::from(f32_to_f16(f32::from_bits(v))),
            11 => to_small_float(f32::from_bits(v), 6),
            10 => to_small_float(f32::from_bits(v), 5),
            _ => 0,
        },
        _ => 0,
    };
    raw & mask
}

/// Bits `lo..lo + n` of a little-endian element.
pub(super) fn field(bytes: &[u8], lo: u32, n: u32) -> u32 {
    let mut v = 0u128;
    for (i, b) in bytes.iter().enumerate().take(16) {
        v |= u128::from(*b) << (8 * i);
    }
    ((v >> lo) as u32) & if n == 32 { u32::MAX } else { (1 << n) - 1 }
}

pub(super) fn set_field(bytes: &mut [u8], lo: u32, n: u32, value: u32) {
    for bit in 0..n {
        let at = (lo + bit) as usize;
        if let Some(b) = bytes.get_mut(at / 8) {
            let m = 1u8 << (at % 8);
            *b = if value >> bit & 1 != 0 {
                *b | m
            } else {
                *b & !m
            };
        }
    }
}

/// The format of `inst`: (data format, number format, DST_SEL of X..W).
fn format_of(w: &Wave, inst: &Inst) -> Result<(u8, u8, [u32; 4]), WaveError> {
    let crate::decode::Operand::Sgpr(r, _) = inst.saddr else {
        return Err(w.illegal(inst, "buffer resource is not in SGPRs"));
    };
    let word3 = w.s.get(usize::from(r) + 3).copied().unwrap_or(0);
    let dst_sel = std::array::from_fn(|c| word3 >> (3 * c) & 7);
    if inst.format == Format::Mtbuf {
        return Ok((inst.offset1 & 15, inst.offset1 >> 4, dst_sel));
    }
    Ok(((word3 >> 15 & 15) as u8, (word3 >> 12 & 7) as u8, dst_sel))
}

/// What a formatted access's table entry says: (channels, d16, d16 into the high half).
fn shape(inst: &Inst) -> (usize, bool, bool) {
    match inst.class {
        Class::Formatted(f) => (usize::from(f.channels), f.d16, f.hi),
        _ => (4, false, false),
    }
}

/// What a destination select (SQ_SEL: 0, 1, or 4-7 for X-W) gives: 0, `one` (1 or 1.0 for the
/// format), or the channel `channel` reads.
pub(super) fn selected(sel: u32, one: u32, channel: impl Fn(usize) -> u32) -> u32 {
    match sel {
        1 => one,
        s @ 4..=7 => channel(s as usize - 4),
        _ => 0,
    }
}

/// Writes loaded channel values (`values[lane][i]`, `count` of them) into the destination
/// registers of the lanes of `exec`: one to a register, or with D16 (`d16.0`) two 16-bit halves
/// to a register (f16 for the float-valued number formats), into the high half alone with
/// D16_HI (`d16.1`). A last half with no partner keeps the register's other half.
pub(super) fn write_channels(
    w: &mut Wave,
    inst: &Inst,
    values: &[[u32; 4]],
    count: usize,
    nfmt: u8,
    (d16, hi): (bool, bool),
    exec: u64,
) -> Result<(), WaveError> {
    let regs = if d16 { count.div_ceil(2) } else { count }.max(1);
    for k in 0..regs {
        let reg = w.vreg_mut(inst, inst.dst, k)?;
        for (l, r) in reg.iter_mut().enumerate() {
            if exec >> l & 1 == 0 {
                continue;
            }
            let v = &values[l];
            *r = if !d16 {
                v[k]
            } else {
                let half = |c: usize| -> u32 {
                    if float_valued(nfmt) {
                        u32::from(f32_to_f16(f32::from_bits(v[c])))
                    } else {
                        v[c] & 0xFFFF
                    }
                };
                let lo = half(2 * k);
                if hi {
                    (*r & 0xFFFF) | lo << 16
                } else if 2 * k + 1 < count {
                    lo | half(2 * k + 1) << 16
                } else {
                    (*r & 0xFFFF_0000) | lo
                }
            };
        }
    }
    Ok(())
}

/// Runs a formatted buffer load or store.
pub(super) fn exec<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
) -> Result<(), WaveError> {
    let (dfmt, nfmt, dst_sel) = format_of(w, inst)?;
    let (count, d16, hi) = shape(inst);
    let chans = channels(dfmt);
    let size = element_bytes(dfmt);
    let exec = w.exec();
    let mut addrs = [Addr::Discard; LANES];
    if size > 0 {
        buffer_addrs(w, inst, ctx.apertures, size as u64, &mut addrs)?;
    }
    let store = inst.is(traits::STORE);
    let regs = if d16 { count.div_ceil(2) } else { count };
    if store {
        if size == 0 {
            return Ok(());
        }
        let byte_channels = chans.iter().all(|&(lo, n)| lo % 8 == 0 && n % 8 == 0);
        let data: Vec<crate::exec::wave::Lanes> = (0..regs)
            .map(|k| w.vreg(inst, inst.src[1], k).copied())
            .collect::<Result<_, _>>()?;
        for l in (0..LANES).filter(|l| exec >> l & 1 != 0) {
            let mut element = [0u8; 16];
            for (c, &(lo, n)) in chans.iter().enumerate().take(count) {
                let v = if d16 {
                    let half = data[c / 2][l] >> (16 * (c % 2)) & 0xFFFF;
                    match nfmt {
                        SINT => half as u16 as i16 as i32 as u32,
                        UINT => half,
                        _ => f16_to_f32(half as u16).to_bits(),
                    }
                } else {
                    data[c][l]
                };
                set_field(&mut element, lo, n, pack(v, n, nfmt));
            }
            if byte_channels {
                for &(lo, n) in chans.iter().take(count) {
                    let (from, to) = ((lo / 8) as usize, ((lo + n) / 8) as usize);
                    access::write(w, ctx, addrs[l], from as u64, &element[from..to])?;
                }
            } else {
                access::write(w, ctx, addrs[l], 0, &element[..size])?;
            }
        }
        return Ok(());
    }
    let mut values = vec![[0u32; 4]; LANES];
    for l in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let mut element = [0u8; 16];
        if size > 0 {
            access::read(w, ctx, addrs[l], 0, &mut element[..size])?;
        }
        let one = if float_valued(nfmt) {
            1f32.to_bits()
        } else {
            1
        };
        let channel = |c: usize| match chans.get(c) {
            Some(&(lo, n)) => unpack(field(&element, lo, n), n, nfmt),
            None if c == 3 => one,
            None => 0,
        };
        for (c, v) in values[l].iter_mut().enumerate() {
            *v = selected(dst_sel[c], one, channel);
        }
    }
    write_channels(w, inst, &values, count, nfmt, (d16, hi), exec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_small_floats_round_trip() {
        for x in [0.0f32, 1.0, 0.5, 3.25, 64512.0, 6.1035156e-5, 1.0 / 1024.0] {
            for m in [5, 6] {
                let raw = to_small_float(x, m);
                let back = small_float(raw, m);
                assert!(
                    (back - x).abs() <= x * 2f32.powi(-(m as i32)),
                    "{x} m{m}: {back}"
                );
            }
        }
        // The largest finite values: 11-bit floats reach 65024, 10-bit ones 64512.
        assert_eq!(small_float(to_small_float(65024.0, 6), 6), 65024.0);
        assert!(small_float(to_small_float(65024.0, 5), 5).is_infinite());
        assert_eq!(small_float(to_small_float(-2.0, 6), 6), 0.0);
        assert!(small_float(to_small_float(1e9, 6), 6).is_infinite());
    }

    #[test]
    fn norm_channels_convert_both_ways() {
        assert_eq!(f32::from_bits(unpack(255, 8, UNORM)), 1.0);
        assert_eq!(f32::from_bits(unpack(0x80, 8, SNORM)), -1.0);
        assert_eq!(f32::from_bits(unpack(0x81, 8, SNORM)), -1.0);
        assert_eq!(pack(0.5f32.to_bits(), 8, UNORM), 128);
        assert_eq!(pack((-2.0f32).to_bits(), 8, SNORM), 0x81);
        assert_eq!(pack(300.0f32.to_bits(), 8, USCALED), 255);
        assert_eq!(unpack(0xFFF, 12, SINT), u32::MAX);
    }
}
