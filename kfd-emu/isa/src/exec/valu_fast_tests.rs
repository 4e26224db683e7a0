//! The VALU fast paths against the general path, instruction by instruction.

use super::*;
use crate::decode::decode;
use crate::target::Target;

const AP: (u64, u64) = (0x1_0000_0000_0000, 0x2_0000_0000_0000);

/// gfx90a encodings (llvm-mc 15) of every fast-pathed operation, in several operand
/// shapes: register, SGPR, inline constant and literal sources; VOP2 and VOP3 forms.
const GFX9: &[(&str, &[u32])] = &[
    ("v_mov_b32_e32 v1, v2", &[0x7E020302]),
    ("v_mov_b32_e32 v1, s5", &[0x7E020205]),
    ("v_mov_b32_e32 v1, 0x12345678", &[0x7E0202FF, 0x12345678]),
    ("v_not_b32_e32 v1, v2", &[0x7E025702]),
    ("v_cndmask_b32_e32 v1, v2, v3, vcc", &[0x00020702]),
    (
        "v_cndmask_b32_e64 v1, v2, 5, s[10:11]",
        &[0xD1000001, 0x00290B02],
    ),
    ("v_add_co_u32_e32 v1, vcc, s5, v2", &[0x32020405]),
    (
        "v_add_co_u32_e64 v1, s[10:11], v2, v3",
        &[0xD1190A01, 0x00020702],
    ),
    ("v_sub_co_u32_e32 v1, vcc, v2, v3", &[0x34020702]),
    ("v_subrev_co_u32_e32 v1, vcc, v2, v3", &[0x36020702]),
    ("v_addc_co_u32_e32 v1, vcc, v2, v3, vcc", &[0x38020702]),
    (
        "v_addc_co_u32_e64 v1, s[12:13], v2, 0, s[10:11]",
        &[0xD11C0C01, 0x00290102],
    ),
    ("v_subb_co_u32_e32 v1, vcc, v2, v3, vcc", &[0x3A020702]),
    ("v_subbrev_co_u32_e32 v1, vcc, v2, v1, vcc", &[0x3C020302]),
    ("v_lshlrev_b64 v[4:5], 2, v[2:3]", &[0xD28F0004, 0x00020482]),
    (
        "v_lshlrev_b64 v[2:3], v1, v[2:3]",
        &[0xD28F0002, 0x00020501],
    ),
    (
        "v_lshlrev_b64 v[4:5], v1, s[10:11]",
        &[0xD28F0004, 0x00001501],
    ),
    ("v_add_u32_e32 v1, s5, v1", &[0x68020205]),
    ("v_add_u32_e32 v1, 1.0, v3", &[0x680206F2]),
    ("v_sub_u32_e32 v1, v2, v3", &[0x6A020702]),
    ("v_subrev_u32_e32 v1, v2, v3", &[0x6C020702]),
    ("v_mul_lo_u32 v1, v2, v3", &[0xD2850001, 0x00020702]),
    ("v_mul_u32_u24_e32 v1, v2, v3", &[0x10020702]),
    ("v_mul_hi_u32 v1, v2, s5", &[0xD2860001, 0x00000B02]),
    ("v_lshrrev_b32_e32 v1, v2, v3", &[0x20020702]),
    ("v_ashrrev_i32_e32 v1, 31, v3", &[0x2202069F]),
    ("v_lshlrev_b32_e32 v1, 4, v1", &[0x24020284]),
    ("v_and_b32_e32 v1, v2, v3", &[0x26020702]),
    ("v_or_b32_e32 v1, s5, v3", &[0x28020605]),
    ("v_xor_b32_e32 v1, v2, v3", &[0x2A020702]),
    ("v_min_u32_e32 v1, v2, v3", &[0x1C020702]),
    ("v_max_u32_e32 v1, v2, v3", &[0x1E020702]),
    ("v_min_i32_e32 v1, v2, v3", &[0x18020702]),
    ("v_max_i32_e32 v1, v2, v3", &[0x1A020702]),
    ("v_add_f32_e32 v1, v2, v3", &[0x02020702]),
    ("v_add_f32_e32 v1, 0.5, v3", &[0x020206F0]),
    ("v_sub_f32_e32 v1, v2, v3", &[0x04020702]),
    ("v_subrev_f32_e32 v1, v2, v3", &[0x06020702]),
    ("v_mul_f32_e32 v1, s5, v3", &[0x0A020605]),
    ("v_min_f32_e32 v1, v2, v3", &[0x14020702]),
    ("v_max_f32_e32 v1, v2, v3", &[0x16020702]),
    ("v_fmac_f32_e32 v1, v2, v3", &[0x76020702]),
    ("v_mac_f32_e32 v1, v2, v3", &[0x2C020702]),
    ("v_fma_f32 v1, v2, v3, v4", &[0xD1CB0001, 0x04120702]),
    ("v_fma_f32 v1, s5, v3, 1.0", &[0xD1CB0001, 0x03CA0605]),
    ("v_mad_f32 v1, v2, v3, v4", &[0xD1C10001, 0x04120702]),
    (
        "v_madmk_f32 v1, v2, 0x40400000, v3",
        &[0x2E020702, 0x40400000],
    ),
    (
        "v_madak_f32 v1, v2, v3, 0x40400000",
        &[0x30020702, 0x40400000],
    ),
    ("v_lshl_add_u32 v1, v2, 3, v4", &[0xD1FD0001, 0x04110702]),
    ("v_add_lshl_u32 v1, v2, v3, v4", &[0xD1FE0001, 0x04120702]),
    ("v_add3_u32 v1, v2, s5, v4", &[0xD1FF0001, 0x04100B02]),
    ("v_lshl_or_b32 v1, v2, 16, v4", &[0xD2000001, 0x04112102]),
    ("v_and_or_b32 v1, v2, v3, v4", &[0xD2010001, 0x04120702]),
    ("v_or3_b32 v1, v2, v3, v4", &[0xD2020001, 0x04120702]),
    ("v_bfi_b32 v1, v2, v3, v4", &[0xD1CA0001, 0x04120702]),
    ("v_mad_u32_u24 v1, v2, v3, v4", &[0xD1C30001, 0x04120702]),
    ("v_cmp_gt_i32_e32 vcc, s5, v2", &[0x7D880405]),
    ("v_cmp_lt_i32_e32 vcc, v2, v3", &[0x7D820702]),
    ("v_cmp_eq_u32_e32 vcc, v2, v3", &[0x7D940702]),
    (
        "v_cmp_ne_u32_e64 s[10:11], v2, 7",
        &[0xD0CD000A, 0x00010F02],
    ),
    ("v_cmp_ge_u32_e32 vcc, v2, v3", &[0x7D9C0702]),
    ("v_cmp_le_i32_e32 vcc, v2, v3", &[0x7D860702]),
    ("v_cmp_gt_u32_e32 vcc, s5, v2", &[0x7D980405]),
    ("v_cmpx_gt_u32_e32 vcc, v2, v3", &[0x7DB80702]),
    ("v_cmp_lt_f32_e32 vcc, v2, v3", &[0x7C820702]),
    ("v_cmp_neq_f32_e32 vcc, v2, v3", &[0x7C9A0702]),
    ("v_cmp_u_f32_e32 vcc, v2, v3", &[0x7C900702]),
    (
        "v_cmp_nlt_f32_e64 s[10:11], v2, v3",
        &[0xD04E000A, 0x00020702],
    ),
    ("v_cmp_f_i32_e32 vcc, v2, v3", &[0x7D800702]),
    ("v_cmp_t_u32_e32 vcc, v2, v3", &[0x7D9E0702]),
];

/// gfx1100 (wave32) encodings: lane masks in one SGPR.
const GFX11: &[(&str, &[u32])] = &[
    ("v_add_nc_u32_e32 v1, s5, v1", &[0x4A020205]),
    ("v_cmp_gt_i32_e32 vcc_lo, s5, v2", &[0x7C880405]),
    ("v_cmp_ne_u32_e64 s10, v2, 7", &[0xD44D000A, 0x00010F02]),
    ("v_cndmask_b32_e32 v1, v2, v3, vcc_lo", &[0x02020702]),
    ("v_add_co_u32 v1, s10, v2, v3", &[0xD7000A01, 0x00020702]),
    (
        "v_add_co_ci_u32_e32 v1, vcc_lo, v2, v3, vcc_lo",
        &[0x40020702],
    ),
    ("v_lshlrev_b64 v[4:5], 2, v[2:3]", &[0xD73C0004, 0x00020482]),
    ("v_fmac_f32_e32 v1, v2, v3", &[0x56020702]),
    ("v_mul_f32_e32 v1, s5, v3", &[0x10020605]),
    ("v_cmpx_gt_u32_e32 v2, v3", &[0x7D980702]),
];

fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A wave with random registers: integers around the carry and sign boundaries, and
/// floats including NaNs, infinities, zeros of both signs and denormals.
fn wave(target: Target, seed: u64) -> Wave {
    let mut st = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut w = Wave::new(target, 8, 8, 0);
    w.wave32 = target == Target::Gfx1100;
    let special = [
        0,
        1,
        u32::MAX,
        0x7FFF_FFFF,
        0x8000_0000,
        0x7FC0_0000,
        0xFF80_0000,
        0x7F80_0000,
        0x0000_0001,
        0x3F80_0000,
        0xBF80_0000,
    ];
    for r in w.v.iter_mut() {
        for x in r.iter_mut() {
            let n = next(&mut st);
            *x = match n % 4 {
                0 => special[(n >> 8) as usize % special.len()],
                1 => (n >> 16) as u32 % 64,
                _ => (n >> 32) as u32,
            };
        }
    }
    for x in w.s.iter_mut() {
        *x = next(&mut st) as u32;
    }
    let exec = match seed % 4 {
        0 => u64::MAX,
        1 => 0,
        _ => next(&mut st),
    };
    w.set_exec(exec & w.lane_limit());
    w
}

fn check(target: Target, cases: &[(&str, &[u32])]) {
    for (text, words) in cases {
        let inst = decode(target, words);
        for seed in 0..64 {
            let (mut fast, mut general) = (wave(target, seed), wave(target, seed));
            assert!(try_exec(&mut fast, &inst, AP), "{text}: not fast-pathed");
            super::super::valu::general(&mut general, &inst, AP)
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            // Which input NaN a float operation passes on is the host's choice (and
            // the optimiser's, which may swap commutative operands): any NaN matches.
            let float = text.contains("_f32") && !text.contains("cmp");
            let nan = |x: u32| f32::from_bits(x).is_nan();
            for (r, (f, g)) in fast.v.iter().zip(&general.v).enumerate() {
                for l in 0..LANES {
                    let same = f[l] == g[l] || (float && nan(f[l]) && nan(g[l]));
                    assert!(
                        same,
                        "{text}, seed {seed}: v{r} lane {l}: {:#x} vs {:#x}",
                        f[l], g[l]
                    );
                }
            }
            assert_eq!(fast.s, general.s, "{text}, seed {seed}: SGPRs differ");
        }
    }
}

#[test]
fn fast_paths_do_what_the_general_path_does() {
    check(Target::Gfx90a, GFX9);
    // gfx942 dropped v_mac_f32, v_mad_f32 and their constant forms; the rest encode alike.
    let gfx942: Vec<_> = GFX9
        .iter()
        .copied()
        .filter(|(_, w)| decode(Target::Gfx942, w).op == decode(Target::Gfx90a, w).op)
        .collect();
    assert!(
        gfx942.len() + 4 >= GFX9.len(),
        "{} of {}",
        gfx942.len(),
        GFX9.len()
    );
    check(Target::Gfx942, &gfx942);
    check(Target::Gfx1100, GFX11);
}

#[test]
fn modifiers_and_registers_the_wave_lacks_go_the_general_way() {
    let cases: &[(&str, &[u32])] = &[
        // v_add_f32_e64 v1, -v2, v3 (a source modifier).
        ("neg", &[0xD1010001, 0x20020702]),
        // v_add_u32_e64 v1, v2, v3 clamp.
        ("clamp", &[0xD1348001, 0x00020702]),
        // v_mov_b32_dpp v1, v2 quad_perm:[1,0,3,2].
        ("dpp", &[0x7E0202FA, 0xFF00B102]),
        // v_mov_b32_sdwa v1, v2 src0_sel:WORD_1.
        ("sdwa", &[0x7E0202F9, 0x00050602]),
        // v_add_u32 v1, v200, v3: the wave has 8 VGPRs.
        ("v200", &[0x680207C8]),
        // v_add_u32 v100, v2, v3.
        ("v100", &[0x68C80702]),
    ];
    for (what, words) in cases {
        let inst = decode(Target::Gfx90a, words);
        let mut w = wave(Target::Gfx90a, 0);
        let before = w.v.clone();
        assert!(!try_exec(&mut w, &inst, AP), "{what} was fast-pathed");
        assert_eq!(w.v, before, "{what}: a refused instruction wrote");
    }
}
