//! Formatted buffer access (tests/kernels/formats.s): `buffer_*_format_*` with the format in
//! the buffer resource and `tbuffer_*` with it in the instruction, loads and stores, d16 forms,
//! DST_SEL and range checks. Every expected value is worked out here from the format's
//! definition (AMD's Vega/CDNA3 ISA documents: data and number formats of buffer resources).

use crate::common;

use common::elf::{kernels_dir, CodeObject};
use common::gpu::*;
use kfd_emu_isa::decode::operand::{f16_to_f32, f32_to_f16};
use kfd_emu_isa::Target;

const CASES: usize = 16;

/// Runs the kernel over `input` (16 bytes per lane): each case's 1024 bytes.
fn run(t: Target, input: &[u8]) -> Vec<Vec<u8>> {
    let co = CodeObject::load(&kernels_dir().join(format!("formats-{}.co", t.name())));
    let mut gpu = Gpu::new(t);
    let base = gpu.load(&co);
    let k = base + co.symbol("formats.kd");
    let din = gpu.upload(input);
    let out = gpu.alloc(CASES as u64 * 1024);
    let mut l = Launch::linear(64, 64, Args::new().ptr(out).ptr(din).done());
    l.scratch = None;
    gpu.run(k, &l).unwrap_or_else(|e| panic!("{t}: {e}"));
    gpu.download(out, CASES * 1024)
        .chunks(1024)
        .map(<[u8]>::to_vec)
        .collect()
}

fn dword(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A register holding a float, NaNs made one NaN so that results compare.
fn canon(bits: u32) -> u32 {
    if f32::from_bits(bits).is_nan() {
        f32::NAN.to_bits()
    } else {
        bits
    }
}

/// A `bits`-bit UNORM channel: 0 to 1 in steps of 1 / (2^bits - 1).
fn unorm(v: u32, bits: u32) -> u32 {
    ((f64::from(v) / f64::from((1u32 << bits) - 1)) as f32).to_bits()
}

/// An 8-bit SNORM channel: -128 and -127 are both -1.0.
fn snorm8(v: u8) -> u32 {
    ((v as i8).max(-127) as f32 / 127.0).to_bits()
}

/// An unsigned float with a 5-bit exponent (bias 15) and `m` mantissa bits.
fn small_float(v: u32, m: u32) -> u32 {
    let (e, f) = (v >> m, v & ((1 << m) - 1));
    let x = match e {
        0 => f64::from(f) * 2f64.powi(-14 - m as i32),
        31 if f == 0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + f64::from(f) / f64::from(1 << m)) * 2f64.powi(e as i32 - 15),
    };
    canon((x as f32).to_bits())
}

#[test]
fn formatted_buffer_loads_and_stores_follow_their_formats() {
    for t in [Target::Gfx90a, Target::Gfx942] {
        let mut rng = Rng(0xF0 + t as u64);
        let input: Vec<u8> = (0..1024).map(|_| rng.next_u32() as u8).collect();
        let got = run(t, &input);
        let one = 1f32.to_bits();
        let load = |case: usize, lane: usize| -> [u32; 4] {
            // The float-valued cases' NaNs compare as one NaN.
            let float = matches!(case, 0 | 1 | 3 | 5 | 6 | 7);
            std::array::from_fn(|c| {
                let v = dword(&got[case], lane * 16 + 4 * c);
                if float {
                    canon(v)
                } else {
                    v
                }
            })
        };
        for lane in 0..64 {
            let e4 = &input[lane * 4..lane * 4 + 4];
            let w = dword(&input, lane * 4);
            let h = |k: usize| u16::from_le_bytes([e4[2 * k], e4[2 * k + 1]]);
            let expect = |case: usize, want: [u32; 4]| {
                assert_eq!(
                    load(case, lane),
                    want,
                    "{t} case {case} lane {lane}: element {e4:02x?}"
                );
            };
            expect(0, std::array::from_fn(|c| unorm(u32::from(e4[c]), 8)));
            expect(1, std::array::from_fn(|c| snorm8(e4[3 - c])));
            expect(
                2,
                [h(0) as i16 as i32 as u32, h(1) as i16 as i32 as u32, 0, 1],
            );
            let e8 = &input[lane * 8..lane * 8 + 8];
            expect(
                3,
                std::array::from_fn(|c| {
                    canon(f16_to_f32(u16::from_le_bytes([e8[2 * c], e8[2 * c + 1]])).to_bits())
                }),
            );
            expect(4, [w & 0x3FF, w >> 10 & 0x3FF, w >> 20 & 0x3FF, w >> 30]);
            expect(
                5,
                [
                    small_float(w & 0x7FF, 6),
                    small_float(w >> 11 & 0x7FF, 6),
                    small_float(w >> 22, 5),
                    one,
                ],
            );
            expect(
                6,
                [(e4[1] as f32).to_bits(), (e4[0] as f32).to_bits(), 0, one],
            );
            expect(
                7,
                [
                    (h(0) as i16 as f32).to_bits(),
                    (h(1) as i16 as f32).to_bits(),
                    0xdead,
                    0xdead,
                ],
            );
            let f16 = |c: usize| u32::from(f32_to_f16(f32::from_bits(unorm(u32::from(e4[c]), 8))));
            expect(
                8,
                [f16(0) | f16(1) << 16, f16(2) | f16(3) << 16, 0xdead, 0xdead],
            );
            let hi = u32::from(f32_to_f16(f32::from_bits(unorm(u32::from(h(0)), 16))));
            expect(9, [0xdead | hi << 16, 0xdead, 0xdead, 0xdead]);
            expect(10, [if lane < 32 { w } else { 0 }, 0xdead, 0xdead, 0xdead]);

            let stored = |case: usize| dword(&got[case], lane * 4);
            let byte = |x: f32| (x.clamp(0.0, 1.0) * 255.0).round_ties_even() as u32;
            let x = lane as f32 / 64.0;
            assert_eq!(
                stored(11),
                byte(x) | byte(-0.5) << 8 | byte(2.0) << 16 | byte(0.25) << 24,
                "{t} case 11 lane {lane}"
            );
            assert_eq!(
                stored(12),
                (lane as u32).wrapping_sub(32) & 0xFFFF | 0x2345 << 16,
                "{t} case 12 lane {lane}"
            );
            let f16_of = |x: f32| u32::from(f32_to_f16(x));
            assert_eq!(
                stored(13),
                f16_of(lane as f32) | f16_of(0.5) << 16,
                "{t} case 13 lane {lane}"
            );
            assert_eq!(
                stored(14),
                0xFFFF_FF00 | lane as u32,
                "{t} case 14 lane {lane}"
            );
            let l = lane as u32;
            assert_eq!(
                stored(15),
                l | (2 * l) << 10 | (3 * l) << 20 | (l % 4) << 30,
                "{t} case 15 lane {lane}"
            );
        }
    }
}
