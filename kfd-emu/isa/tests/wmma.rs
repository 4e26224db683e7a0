//! GFX11 matrix cores: hipcc's WMMA GEMMs (`kernels/wmma.hip`, `__builtin_amdgcn_wmma_*_w32`
//! on gfx1100, one wave32 per 16×16 tile of a 32×32 product) checked against the CPU: f16 and
//! bf16 into f32, f16 into f16 and bf16 into bf16 (low and high halves), signed i8 with
//! saturation, unsigned-by-signed i4: all six WMMA opcodes. The inputs are small integers, exact in every format, so the sums are exact.

use crate::common;

use common::gpu::*;
use kfd_emu_isa::Target;

const N: usize = 32;

/// Runs `kernel` over a 32×32 output (4 waves, one per tile) with A (`N`×`k`), B (`k`×`N`)
/// and C given as raw bytes, and the extra `i32` arguments; returns C's bytes.
fn gemm(kernel: &str, a: &[u8], b: &[u8], c: &[u8], k: i32, extra: &[i32]) -> Vec<u8> {
    let t = Target::Gfx1100;
    let co = common::elf::CodeObject::load(&common::elf::kernels_dir().join("wmma-gfx1100.co"));
    let mut gpu = Gpu::new(t);
    let base = gpu.load(&co);
    let ko = base + co.symbol(&format!("{kernel}.kd"));
    let (pa, pb, pc) = (gpu.upload(a), gpu.upload(b), gpu.upload(c));
    let mut args = Args::new().ptr(pa).ptr(pb).ptr(pc).i32(k);
    for &x in extra {
        args = args.i32(x);
    }
    let mut l = Launch::new([64, 2, 1], [32, 1, 1], args.done());
    l.scratch = None;
    let st = gpu.run(ko, &l).unwrap_or_else(|e| panic!("{kernel}: {e}"));
    assert_eq!(st.waves, 4, "{kernel}: one wave32 per tile");
    gpu.download(pc, c.len())
}

fn ints(rng: &mut Rng, len: usize, lo: i32, hi: i32) -> Vec<i32> {
    (0..len)
        .map(|_| lo + (rng.next_u32() % (hi - lo + 1) as u32) as i32)
        .collect()
}

/// C + A·B over row-major `N`×`k` and `k`×`N` matrices, exactly.
fn cpu(a: &[i32], b: &[i32], c: &[i64], k: usize) -> Vec<i64> {
    (0..N * N)
        .map(|ij| {
            let (i, j) = (ij / N, ij % N);
            c[ij]
                + (0..k)
                    .map(|x| i64::from(a[i * k + x]) * i64::from(b[x * N + j]))
                    .sum::<i64>()
        })
        .collect()
}

fn f16_bits(x: i32) -> u16 {
    kfd_emu_isa::decode::operand::f32_to_f16(x as f32)
}

fn bf16_bits(x: i32) -> u16 {
    ((x as f32).to_bits() >> 16) as u16
}

fn bytes16(v: &[i32], f: fn(i32) -> u16) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x).to_le_bytes()).collect()
}

#[test]
fn float_wmma_gemms_match_the_cpu() {
    let mut rng = Rng(0x11);
    let k = 32;
    let (a, b) = (ints(&mut rng, N * k, -4, 4), ints(&mut rng, k * N, -4, 4));
    let c = ints(&mut rng, N * N, -50, 50);
    let want = cpu(
        &a,
        &b,
        &c.iter().map(|&x| i64::from(x)).collect::<Vec<_>>(),
        k,
    );
    let c32: Vec<u8> = c.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect();
    for (kernel, enc) in [
        ("wmma_f32_f16", f16_bits as fn(i32) -> u16),
        ("wmma_f32_bf16", bf16_bits),
    ] {
        let got = gemm(
            kernel,
            &bytes16(&a, enc),
            &bytes16(&b, enc),
            &c32,
            k as i32,
            &[],
        );
        for (i, w) in want.iter().enumerate() {
            let g = f32::from_le_bytes(got[4 * i..4 * i + 4].try_into().unwrap());
            assert_eq!(g, *w as f32, "{kernel} element {i}");
        }
    }
    // 16-bit accumulators, in the registers' low halves and then their high halves.
    for (kernel, enc) in [
        ("wmma_f16_f16", f16_bits as fn(i32) -> u16),
        ("wmma_bf16_bf16", bf16_bits),
    ] {
        let c16 = bytes16(&c, enc);
        for hi in [0, 1] {
            let (a16, b16) = (bytes16(&a, enc), bytes16(&b, enc));
            let got = gemm(kernel, &a16, &b16, &c16, k as i32, &[hi]);
            for (i, w) in want.iter().enumerate() {
                let g = u16::from_le_bytes([got[2 * i], got[2 * i + 1]]);
                assert_eq!(g, enc(*w as i32), "{kernel} (hi {hi}) element {i}");
            }
        }
    }
}

#[test]
fn integer_wmma_gemms_match_the_cpu() {
    let mut rng = Rng(0x22);
    let k = 32;
    // i8 × i8 with a clamp: C near the top of the i32 range saturates.
    let (a, b) = (
        ints(&mut rng, N * k, -128, 127),
        ints(&mut rng, k * N, -128, 127),
    );
    let mut c = ints(&mut rng, N * N, -1000, 1000);
    c[5] = i32::MAX - 10;
    c[6] = i32::MIN + 10;
    // Each instruction (16 of K) saturates its own result.
    let sat = |x: i64| x.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
    let mut want: Vec<i64> = c.iter().map(|&x| i64::from(x)).collect();
    for k0 in (0..k).step_by(16) {
        let a16: Vec<i32> = (0..N * 16).map(|x| a[(x / 16) * k + k0 + x % 16]).collect();
        let b16: Vec<i32> = (0..16 * N).map(|x| b[(k0 + x / N) * N + x % N]).collect();
        want = cpu(&a16, &b16, &want, 16).into_iter().map(sat).collect();
    }
    assert!(
        want[5] == i64::from(i32::MAX) || want[6] == i64::from(i32::MIN),
        "a saturating case"
    );
    let to8 = |v: &[i32]| -> Vec<u8> { v.iter().map(|&x| x as i8 as u8).collect() };
    let c32: Vec<u8> = c.iter().flat_map(|&x| x.to_le_bytes()).collect();
    let got = gemm("wmma_i32_iu8", &to8(&a), &to8(&b), &c32, k as i32, &[]);
    for (i, w) in want.iter().enumerate() {
        let g = i32::from_le_bytes(got[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(i64::from(g), *w, "wmma_i32_iu8 element {i}");
    }
    // Unsigned 4-bit A times signed 4-bit B, wrapping.
    let (a, b) = (ints(&mut rng, N * k, 0, 15), ints(&mut rng, k * N, -8, 7));
    let c = ints(&mut rng, N * N, -1000, 1000);
    let want = cpu(
        &a,
        &b,
        &c.iter().map(|&x| i64::from(x)).collect::<Vec<_>>(),
        k,
    );
    let c32: Vec<u8> = c.iter().flat_map(|&x| x.to_le_bytes()).collect();
    let got = gemm("wmma_i32_iu4", &to8(&a), &to8(&b), &c32, k as i32, &[]);
    for (i, w) in want.iter().enumerate() {
        let g = i32::from_le_bytes(got[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(g, *w as i32, "wmma_i32_iu4 element {i}");
    }
}
