//! Loads into LDS (tests/kernels/lds_dma.s, lds_dma11.s): MUBUF's `lds` bit on gfx90a and
//! gfx942, gfx942's `global_load_lds_*` and `scratch_load_lds_*`, and GFX11's
//! `buffer_load_lds_*`. The kernels fill LDS with a marker, run each case into its own 512-byte
//! window (M0 = case * 512) and copy the whole LDS out; every dword is worked out here from
//! the address rule of the Vega/CDNA ISA guides (`LDS_ADDR = LDS_offset (M0) + inst_offset +
//! TID * 4`) with sub-dword values extended to a dword as their signedness says.

use crate::common;

use common::elf::{kernels_dir, CodeObject};
use common::gpu::*;
use kfd_emu_isa::Target;

const FILL: u32 = 0xdead_beef;
const WINDOW: usize = 512 / 4;

/// 512 input bytes with both signs in every byte and short (the kernels' buffer resources
/// cover the first 256; SOFFSET and the global loads reach past them).
fn input() -> Vec<u8> {
    (0..512u32).map(|i| (i * 73 + 41) as u8).collect()
}

/// Runs the target's kernel; the LDS image as dwords.
fn run(t: Target, input: &[u8]) -> Vec<u32> {
    let (symbol, dwords, lanes) = match t {
        Target::Gfx1100 => ("lds_dma11.kd", 640, 32),
        _ => ("lds_dma.kd", 1152, 64),
    };
    let co = CodeObject::load(&kernels_dir().join(format!("lds_dma-{}.co", t.name())));
    let mut gpu = Gpu::new(t);
    let base = gpu.load(&co);
    let k = base + co.symbol(symbol);
    let din = gpu.upload(input);
    let out = gpu.alloc(dwords as u64 * 4);
    let l = Launch::linear(lanes, lanes as u16, Args::new().ptr(out).ptr(din).done());
    gpu.run(k, &l).unwrap_or_else(|e| panic!("{t}: {e}"));
    to_u32(&gpu.download(out, dwords * 4))
}

/// What one case leaves in its window: `lane` writes `value(lane)` (or nothing for `None`) at
/// byte `offset + 4 * lane` of the window; the rest keeps the fill.
fn window(lanes: usize, offset: usize, value: impl Fn(usize) -> Option<u32>) -> Vec<u32> {
    let mut w = vec![FILL; WINDOW];
    for l in 0..lanes {
        if let Some(v) = value(l) {
            assert_eq!(offset % 4, 0);
            w[offset / 4 + l] = v;
        }
    }
    w
}

fn u8_at(b: &[u8], at: usize) -> u32 {
    u32::from(b[at])
}
fn i8_at(b: &[u8], at: usize) -> u32 {
    b[at] as i8 as i32 as u32
}
fn u16_at(b: &[u8], at: usize) -> u32 {
    u32::from(u16::from_le_bytes([b[at], b[at + 1]]))
}
fn i16_at(b: &[u8], at: usize) -> u32 {
    i16::from_le_bytes([b[at], b[at + 1]]) as i32 as u32
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn check(t: Target, got: &[u32], cases: &[Vec<u32>]) {
    for (c, want) in cases.iter().enumerate() {
        let have = &got[c * WINDOW..(c + 1) * WINDOW];
        for (i, (h, w)) in have.iter().zip(want).enumerate() {
            assert_eq!(
                h,
                w,
                "{t} case {c} LDS byte {}: {h:#x} vs {w:#x}",
                c * 512 + 4 * i
            );
        }
    }
    assert_eq!(got.len(), cases.len() * WINDOW, "{t}: LDS size");
}

#[test]
fn gfx9_loads_into_lds_land_at_m0_plus_offset_plus_four_bytes_a_lane() {
    let b = input();
    for t in [Target::Gfx90a, Target::Gfx942] {
        let got = run(t, &b);
        let gfx942 = t == Target::Gfx942;
        let mut cases = vec![
            window(64, 0, |l| Some(u32_at(&b, 4 * l))),
            window(64, 0, |l| Some(u8_at(&b, l))),
            window(64, 12, |l| Some(i8_at(&b, l + 12))),
            // A 64-byte buffer: lanes 32 and up are out of range and load 0.
            window(64, 0, |l| Some(if l < 32 { i16_at(&b, 2 * l) } else { 0 })),
            window(64, 0, |l| (l % 2 == 0).then(|| u16_at(&b, 2 * l))),
            // SOFFSET is outside the range check: lanes 62 and 63 read past the 256 bytes.
            window(64, 0, |l| Some(u32_at(&b, 4 * l + 8))),
        ];
        if gfx942 {
            cases.push(window(64, 16, |l| Some(u32_at(&b, 4 * l + 16))));
            cases.push(window(64, 4, |l| Some(i16_at(&b, 2 * l + 4))));
            cases.push(window(64, 4, |l| Some(3 * l as u32 + 1)));
        } else {
            cases.extend(std::iter::repeat_n(vec![FILL; WINDOW], 3));
        }
        check(t, &got, &cases);
    }
}

#[test]
fn gfx11_buffer_loads_into_lds_land_at_m0_plus_offset_plus_four_bytes_a_lane() {
    let b = input();
    let t = Target::Gfx1100;
    let got = run(t, &b);
    let cases = vec![
        window(32, 0, |l| Some(u32_at(&b, 4 * l))),
        window(32, 0, |l| Some(u8_at(&b, l))),
        window(32, 12, |l| Some(i8_at(&b, l + 12))),
        // A 32-byte buffer: lanes 16 and up are out of range and load 0.
        window(32, 0, |l| Some(if l < 16 { i16_at(&b, 2 * l) } else { 0 })),
        window(32, 0, |l| (l % 2 == 0).then(|| u16_at(&b, 2 * l + 8))),
    ];
    check(t, &got, &cases);
}
