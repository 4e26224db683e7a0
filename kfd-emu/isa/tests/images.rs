//! Image loads and stores (tests/kernels/images.s, gfx90a): 1D, 2D and 2D-array images,
//! formats, DMASK, DST_SEL (and its inverse on stores), D16, pitch, and texels outside the image.
//! Every expected value is worked out here from the image's definition.

use crate::common;

use common::elf::{kernels_dir, CodeObject};
use common::gpu::*;
use kfd_emu_isa::decode::operand::f32_to_f16;
use kfd_emu_isa::Target;

const CASES: usize = 9;

fn dword(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// An 8-bit UNORM channel as the float register value.
fn unorm8(b: u8) -> u32 {
    ((f64::from(b) / 255.0) as f32).to_bits()
}

#[test]
fn image_loads_and_stores_follow_the_resource() {
    let t = Target::Gfx90a;
    let co = CodeObject::load(&kernels_dir().join("images-gfx90a.co"));
    let mut gpu = Gpu::new(t);
    let base = gpu.load(&co);
    let k = base + co.symbol("images.kd");
    let mut rng = Rng(0x1A6E);
    let input: Vec<u8> = (0..1024).map(|_| rng.next_u32() as u8).collect();
    let din = gpu.upload(&input);
    assert_eq!(din % 256, 0, "image bases are 256-byte aligned");
    let out = gpu.alloc(CASES as u64 * 1024);
    let mut l = Launch::linear(64, 64, Args::new().ptr(out).ptr(din).done());
    l.scratch = None;
    gpu.run(k, &l).unwrap_or_else(|e| panic!("{e}"));
    let got = gpu.download(out, CASES * 1024);
    let case = |c: usize| &got[c * 1024..(c + 1) * 1024];
    let dead = 0xdead;
    for lane in 0..64usize {
        let (x, y) = (lane % 8, lane / 8);
        let regs =
            |c: usize| -> [u32; 4] { std::array::from_fn(|r| dword(case(c), lane * 16 + 4 * r)) };
        let texel = |pitch: usize| &input[(y * pitch + x) * 4..(y * pitch + x) * 4 + 4];
        let t8 = texel(8);
        assert_eq!(
            regs(0),
            std::array::from_fn(|c| unorm8(t8[c])),
            "case 0 lane {lane}"
        );
        let t16 = texel(16);
        assert_eq!(
            regs(1),
            [unorm8(t16[3]), unorm8(t16[1]), dead, dead],
            "case 1 lane {lane}"
        );
        let small = if x < 4 && y < 4 {
            let t = &input[(y * 4 + x) * 4..(y * 4 + x) * 4 + 4];
            std::array::from_fn(|c| u32::from(t[c]))
        } else {
            [0; 4]
        };
        assert_eq!(regs(2), small, "case 2 lane {lane}");
        assert_eq!(
            regs(3),
            [dword(&input, lane * 4), dead, dead, dead],
            "case 3 lane {lane}"
        );
        let h = |c: usize| u32::from(f32_to_f16(f32::from_bits(unorm8(t8[c]))));
        assert_eq!(
            regs(4),
            [h(0) | h(1) << 16, h(2) | h(3) << 16, dead, dead],
            "case 4 lane {lane}"
        );
        assert_eq!(
            regs(5),
            [dword(&input, lane * 4), dead, dead, dead],
            "case 5 lane {lane}"
        );

        let q = |v: f64| ((v * 255.0).round_ties_even()) as u32;
        let want6 = q(x as f64 / 8.0) | q(y as f64 / 8.0) << 8 | q(0.5) << 16 | q(1.0) << 24;
        assert_eq!(
            dword(case(6), (y * 8 + x) * 4),
            want6,
            "case 6 texel {x},{y}"
        );
        assert_eq!(
            dword(case(8), (y * 8 + x) * 4),
            4 | 3 << 8 | 2 << 16 | 1 << 24,
            "case 8"
        );
    }
    for i in 0..64usize {
        let want = if i < 16 {
            let (x, y) = (i % 4, i / 4);
            0x100 + (y * 8 + x) as u32
        } else {
            0
        };
        assert_eq!(dword(case(7), i * 4), want, "case 7 dword {i}");
    }
}
