//! Instruction-level cases (tests/kernels/ops.s) that the compiled kernels do not reach: DPP,
//! SDWA, VOP3 modifiers, packed math, AGPR moves, lane access, DS read2/write2 and swizzles,
//! buffer addressing and range checks, returning atomics, 64-bit shifts, scalar bit ops.
//! Each case's 64 lane results are checked against a CPU model of the instruction's
//! definition (AMD's Vega/CDNA ISA documents).

// Lane models index several per-lane arrays by lane.
#![allow(clippy::needless_range_loop)]

use crate::common;

use common::elf::{kernels_dir, CodeObject};
use common::gpu::*;
use kfd_emu_isa::decode::operand::f32_to_f16;
use kfd_emu_isa::Target;

const CASES: usize = 28;

fn run(t: Target) -> (Vec<Vec<u32>>, Vec<u32>, u32) {
    let co = CodeObject::load(&kernels_dir().join(format!("ops-{}.co", t.name())));
    let mut gpu = Gpu::new(t);
    let base = gpu.load(&co);
    let k = base + co.symbol("ops.kd");
    let input: Vec<u32> = (0..128u32)
        .map(|i| i.wrapping_mul(0x9E37_79B1) ^ 0x5A5A)
        .collect();
    let din = gpu.upload(&u32_bytes(&input));
    let out = gpu.alloc(CASES as u64 * 256 + 8192);
    let mut l = Launch::linear(64, 64, Args::new().ptr(out).ptr(din).done());
    l.scratch = None;
    gpu.run(k, &l).unwrap();
    let all = to_u32(&gpu.download(out, CASES * 256 + 8192));
    let cases = (0..CASES)
        .map(|c| all[c * 64..c * 64 + 64].to_vec())
        .collect();
    // The atomic counter lives 4 KiB past case 20's slot.
    let counter = all[(20 * 256 + 4096) / 4];
    (cases, input, counter)
}

fn f16(x: f32) -> u32 {
    u32::from(f32_to_f16(x))
}

#[test]
fn instruction_cases() {
    for t in Target::GFX9 {
        let (got, input, counter) = run(t);
        let v2 = |l: usize| 3 * l as u32 + 1;
        let v3 = 0x1234_5678u32;
        let check = |case: usize, want: &dyn Fn(usize) -> u32| {
            for l in 0..64 {
                assert_eq!(
                    got[case][l],
                    want(l),
                    "{t} case {case} lane {l}: {:#x} vs {:#x}",
                    got[case][l],
                    want(l)
                );
            }
        };
        check(0, &|l| ((l & !3) | (3 - (l & 3))) as u32);
        check(1, &|l| if l % 16 == 0 { 0 } else { l as u32 - 1 });
        check(2, &|l| match l / 16 {
            1 | 3 => (16 * (l / 16) - 1 + l) as u32,
            _ => 0x77,
        });
        check(3, &|l| {
            let bank = (l % 16) / 4;
            if bank == 0 || bank == 2 {
                v2((l & !15) | ((l % 16 + 12) % 16))
            } else {
                0x55
            }
        });
        check(4, &|l| {
            (v3 & 0xFFFF) | (((v2(l) & 0xFF) + 0x5678) & 0xFFFF) << 16
        });
        check(5, &|l| ((input[l] >> 8) as u8 as i8) as i32 as u32);
        check(6, &|l| {
            let x = l as f32;
            ((-x).mul_add(x + 0.5, 0.5) * 2.0).to_bits()
        });
        check(7, &|l| (l as f32 * 0.5).min(1.0).to_bits());
        check(8, &|l| {
            let a = l as f32 + 0.5;
            a.mul_add(2.0, a).to_bits()
        });
        check(9, &|l| 4.0f32.mul_add(l as f32, 4.0).to_bits());
        check(10, &|l| f16(3.0 * l as f32) | f16(3.0 * l as f32) << 16);
        check(11, &|l| v2(l));
        check(12, &|l| if l == 5 { v2(17) } else { l as u32 });
        check(13, &|_| v2(41));
        check(14, &|l| 2 * l as u32 + 1);
        check(15, &|_| v2(0) + v2(32));
        check(16, &|l| v2(l ^ 1));
        check(17, &|l| v2((l & !3) | 1));
        check(18, &|l| if l < 40 { input[2 * l + 1] } else { 0 });
        check(19, &|l| if 4 * l + 4 <= 100 { input[l] } else { 0 });
        // Returning atomic: every lane adds lane + 1 to one counter and gets the value before
        // its add. Lanes update in some order; the interpreter's is lane order, so the old
        // values are the partial sums 0, 1, 3, 6, ...; the counter ends at the full sum.
        let mut olds = got[20].clone();
        olds.sort_unstable();
        let want: Vec<u32> = (0..64u32).map(|l| l * (l + 1) / 2).collect();
        assert_eq!(olds, want, "{t} atomic old values");
        assert_eq!(counter, 64 * 65 / 2, "{t} atomic total");
        let x64 = |l: usize| (u64::from(v2(l)) << 32) | u64::from(v3);
        check(21, &|l| {
            let r = x64(l) >> l;
            (r as u32) ^ (r >> 32) as u32
        });
        check(22, &|l| {
            let r = u64::from(v3)
                .wrapping_mul(u64::from(v2(l)))
                .wrapping_add(x64(l));
            (r as u32) ^ (r >> 32) as u32
        });
        check(23, &|l| if l <= 20 { l as u32 } else { v2(l) });
        check(24, &|l| {
            let b = ((u64::from(v3) << 32) | u64::from(v2(l))).to_le_bytes();
            let perm = u32::from(b[3]) | u32::from(b[4]) << 8 | u32::from(b[5]) << 16;
            let ab = (((u64::from(v3) << 32) | u64::from(v2(l))) >> (l & 31)) as u32;
            let mut t = perm ^ ab;
            let bfe = (((input[l] >> 3) & 0x1FF) << 23) as i32 >> 23;
            t = t.wrapping_add(bfe as u32);
            let (a, bb, c) = (input[l] as i32, v2(l) as i32, l as i32);
            let m = a.min(bb).max(a.max(bb).min(c)) as u32;
            t ^ ((v3 & m) | (!v3 & t))
        });
        check(25, &|_| (4 + 8) * 0x56);
        check(26, &|l| (l as f32 + 0.5).to_bits());
        check(27, &|l| {
            let sub = (l as u32).saturating_sub(32);
            let add = 0x7FFF_FFF0i32.saturating_add(l as i32) as u32;
            u32::MAX ^ sub ^ add
        });
    }
}
