//! GFX11 instruction-level cases (tests/kernels/ops11.s, one wave32 on gfx1100) that the
//! compiled kernels do not reach: VOPD halves that read each other's registers (a swap too),
//! DPP8 and the GFX10+ DPP16 row controls and fetch-inactive, `v_permlane16`/`v_permlanex16`, `v_cmpx`
//! writing EXEC alone, wave32 lane masks in VCC_LO, `null` destinations and sources, the b32
//! save-exec forms, three-way XOR and min-max pairs, the mixed-signedness and bf16 dot
//! products, saturating f32-to-i16 packing, `s_pack_hl_b32_b16`, and buffer range checks by
//! GFX11's OOB_SELECT. Each case's 32 lane results are checked
//! against a CPU model of the instruction as the RDNA3 ISA guide defines it.

// Lane models index per-lane arrays by lane; the min-max models spell out the ISA's max-then-min
// (a clamp only when the bounds are ordered, which the instruction does not require).
#![allow(clippy::needless_range_loop, clippy::manual_clamp)]

use crate::common;

use common::elf::{kernels_dir, CodeObject};
use common::gpu::*;
use kfd_emu_isa::Target;

const CASES: usize = 21;
const LANES: usize = 32;

fn run() -> Vec<Vec<u32>> {
    let t = Target::Gfx1100;
    let co = CodeObject::load(&kernels_dir().join("ops11-gfx1100.co"));
    let mut gpu = Gpu::new(t);
    let base = gpu.load(&co);
    let k = base + co.symbol("ops11.kd");
    let out = gpu.alloc((CASES * 128) as u64);
    let mut l = Launch::linear(32, 32, Args::new().ptr(out).done());
    l.scratch = None;
    let st = gpu.run(k, &l).unwrap();
    assert_eq!(st.waves, 1, "one wave32");
    let all = to_u32(&gpu.download(out, CASES * 128));
    (0..CASES)
        .map(|c| all[c * LANES..(c + 1) * LANES].to_vec())
        .collect()
}

#[test]
fn gfx11_instruction_cases() {
    let got = run();
    let v2 = |l: usize| 3 * l as u32 + 1;
    let check = |case: usize, want: &dyn Fn(usize) -> u32| {
        for l in 0..LANES {
            assert_eq!(
                got[case][l],
                want(l),
                "case {case} lane {l}: {:#x} vs {:#x}",
                got[case][l],
                want(l)
            );
        }
    };
    // 0: the Y half read v10 before the X half wrote it.
    check(0, &|l| v2(l) + 7 + 0x1000);
    // 1: dpp8 reversing groups of eight.
    check(1, &|l| ((l & !7) | (7 - (l & 7))) as u32);
    // 2: row_xmask:5.
    check(2, &|l| v2((l & !15) | ((l & 15) ^ 5)));
    // 3: row_share:3.
    check(3, &|l| v2((l & !15) | 3));
    // 4: permlane16 with reversing selects.
    check(4, &|l| v2((l & !15) | (15 - (l & 15))));
    // 5: permlanex16 with identity selects: the other row's lane.
    check(5, &|l| v2(l ^ 16));
    // 6: v_cmpx left VCC (0xabcd) alone; only lanes below 10 wrote 2.
    check(6, &|l| {
        let v = if l < 10 { 2 } else { 1 };
        v + if (0xabcd >> l) & 1 != 0 { 0x100 } else { 0 }
    });
    // 7: the carry went to VCC_LO only; VCC_HI still holds 0x5151.
    check(7, &|l| {
        let sum = 0xFFFF_FFF0u32.wrapping_add(l as u32);
        let carry = u32::from(l >= 16) << 16;
        sum.wrapping_add(carry).wrapping_add(0x5151)
    });
    // 8: writes to null are dropped, reads of null are 0.
    check(8, &|l| {
        0xFFFF_FFF0u32.wrapping_add(l as u32).wrapping_add(3)
    });
    // 9: s_and_saveexec_b32 saved the full EXEC (in s8) and ran the odd lanes.
    check(9, &|l| if l & 1 == 1 { 0xFFFF_FFFF } else { 0 });
    // 10: xor3, maxmin, minmax.
    let case10 = |l: usize| {
        let x = v2(l) ^ ((l as u32) << 8) ^ 0x55;
        let maxmin = (l as u32).max(7).min(20);
        let minmax = (l as i32).min(12).max(5) as u32;
        x.wrapping_add(maxmin << 16).wrapping_add(minmax << 24)
    };
    check(10, &case10);
    // 11: with FI, the even lanes read their odd (disabled) neighbours; odd lanes did not run.
    check(11, &|l| if l & 1 == 0 { v2(l ^ 1) } else { case10(l) });
    // 12: signed bytes of 3l + 1 times unsigned bytes of l << 8, plus 5.
    let byte = |x: u32, k: u32| (x >> (8 * k)) & 0xFF;
    check(12, &|l| {
        let dot: i32 = (0..4)
            .map(|k| i32::from(byte(v2(l), k) as u8 as i8) * byte((l as u32) << 8, k) as i32)
            .sum();
        (dot + 5) as u32
    });
    // 13: unsigned nibbles of 3l + 1 times signed nibbles of 0x1000 (only nibble 3 is 1).
    check(13, &|l| ((v2(l) >> 12) & 0xF) + l as u32);
    // 14: 1.0 * l + 2.0 * l + 0.5.
    check(14, &|l| (3.0 * l as f32 + 0.5).to_bits());
    // 15: saturated to i16: low half 2000 l - 40000, high half 40000 - 3000 l.
    let sat = |x: f32| (x as i32).clamp(-32768, 32767) as u32 & 0xFFFF;
    check(15, &|l| {
        let f = l as f32;
        sat(2000.0 * f - 40000.0) | sat(40000.0 - 3000.0 * f) << 16
    });
    // 16: {s11[15:0], s10[31:16]}.
    check(16, &|_| 0xDEF0_1234);
    // 17: raw, 64 bytes: 16 dwords.
    check(17, &|l| if l < 16 { v2(l) } else { 0 });
    // 18: raw checks the offset (0 < 8 bytes), not the index: every lane (GFX9's rules, by
    // index for a strided buffer, would stop at lane 8).
    check(18, &v2);
    // 19: no checks: every lane, with no records.
    check(19, &v2);
    // 20: the pair swapped v10 and v11 (each half read the other's old destination).
    check(20, &|l| (v2(l) << 16).wrapping_add((l as u32) << 8));
}
