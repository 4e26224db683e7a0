//! More compiled kernels on both targets: a code-object-v5 kernel whose blockDim/gridDim come
//! from hidden kernel arguments, and double-precision device-library math with arguments large
//! enough to need `v_trig_preop_f64`.

// Results are compared element by element against parallel CPU arrays by index.
#![allow(clippy::needless_range_loop)]

use crate::common;

use common::gpu::*;
use kfd_emu_isa::Target;

/// Matrix cores: GFX9's MFMA (GFX11 has WMMA instead).
fn for_gfx9(f: impl Fn(Target)) {
    for t in Target::GFX9 {
        f(t);
    }
}

fn both(f: impl Fn(Target)) {
    for t in Target::ALL {
        f(t);
    }
}

#[test]
fn code_object_v5_hidden_arguments() {
    both(|t| {
        let co = common::elf::CodeObject::load(
            &common::elf::kernels_dir().join(format!("kernels_v5-{}.co", t.name())),
        );
        let mut gpu = Gpu::new(t);
        let base = gpu.load(&co);
        let k = base + co.symbol("dims_v5.kd");
        let (wg, grid) = ([8u16, 4, 1], [24u32, 12, 1]);
        let items = (grid[0] * grid[1]) as usize;
        let out = gpu.alloc(16 * items as u64);
        let args = kernarg_v5(
            &format!("kernels_v5-{}.args", t.name()),
            "dims_v5",
            &Args::new().ptr(out).done(),
            grid,
            wg,
        );
        assert!(args.len() > 64, "hidden arguments present");
        gpu.run(k, &Launch::new(grid, wg, args)).unwrap();
        let got = to_u32(&gpu.download(out, 16 * items));
        for y in 0..grid[1] {
            for x in 0..grid[0] {
                let i = (y * grid[0] + x) as usize;
                assert_eq!(got[4 * i], 8 | 4 << 16, "{t} blockDim at {x},{y}");
                assert_eq!(got[4 * i + 1], 3 | 3 << 16, "{t} gridDim at {x},{y}");
                assert_eq!(
                    got[4 * i + 2],
                    (x % 8) | ((y % 4) << 16),
                    "{t} threadIdx at {x},{y}"
                );
                assert_eq!(
                    got[4 * i + 3],
                    (x / 8) | ((y / 4) << 16),
                    "{t} blockIdx at {x},{y}"
                );
            }
        }
    });
}

fn ulps64(a: f64, b: f64) -> u64 {
    (a.to_bits() as i64).abs_diff(b.to_bits() as i64)
}

#[test]
fn double_precision_math_with_large_arguments() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("math_f64.kd");
        let mut rng = Rng(17);
        // Small, medium and huge arguments (the last need 2/pi's far bits).
        let x: Vec<f64> = (0..256)
            .map(|i| {
                let r = f64::from(rng.f32(-1.0, 1.0));
                match i % 4 {
                    0 => r * 3.0,
                    1 => r * 1e4,
                    2 => r * 1e12,
                    _ => r * 1e300,
                }
            })
            .collect();
        let n = x.len();
        let dx = gpu.upload(&x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        let out = gpu.alloc(24 * n as u64);
        let args = Args::new().ptr(dx).ptr(out).i32(n as i32).done();
        gpu.run(k, &Launch::linear(n as u32, 64, args)).unwrap();
        let o = to_f64(&gpu.download(out, 24 * n));
        for i in 0..n {
            let v = x[i];
            for (what, got, want) in [
                ("sin", o[3 * i], v.sin()),
                ("cos", o[3 * i + 1], v.cos()),
                ("exp", o[3 * i + 2], (v * 1e-3).exp()),
            ] {
                if what == "exp" && !want.is_finite() {
                    assert_eq!(got, want, "{t} exp({v})");
                    continue;
                }
                assert!(
                    ulps64(got, want) <= 2,
                    "{t} {what}({v}) = {got}, want {want}"
                );
            }
        }
    });
}

/// Runs one wave of the MFMA GEMM `kernel` from mfma.hip over A (`n`×`k`) and B (`k`×`n`)
/// given as raw element bytes; returns C's bytes (`n`×`n` elements of `out_bytes` each).
fn mfma_gemm(
    t: Target,
    kernel: &str,
    a: &[u8],
    b: &[u8],
    n: usize,
    k: i32,
    out_bytes: usize,
) -> Vec<u8> {
    let co = common::elf::CodeObject::load(
        &common::elf::kernels_dir().join(format!("mfma-{}.co", t.name())),
    );
    let mut gpu = Gpu::new(t);
    let base = gpu.load(&co);
    let ko = base + co.symbol(&format!("{kernel}.kd"));
    let (pa, pb) = (gpu.upload(a), gpu.upload(b));
    let pc = gpu.alloc((n * n * out_bytes) as u64);
    let args = Args::new().ptr(pa).ptr(pb).ptr(pc).i32(k).done();
    gpu.run(ko, &Launch::linear(64, 64, args))
        .unwrap_or_else(|e| panic!("{t} {kernel}: {e}"));
    gpu.download(pc, n * n * out_bytes)
}

/// C = A·B on the CPU, in f64, over `n`×`k` and `k`×`n` row-major matrices.
/// `v` as little-endian f16 bytes.
fn f16_bytes(v: &[f64]) -> Vec<u8> {
    v.iter()
        .flat_map(|&x| kfd_emu_isa::decode::operand::f32_to_f16(x as f32).to_le_bytes())
        .collect()
}

/// `v` as little-endian bf16 bytes (truncated: the tests' values are exact in bf16).
fn bf16_bytes(v: &[f64]) -> Vec<u8> {
    v.iter()
        .flat_map(|&x| (((x as f32).to_bits() >> 16) as u16).to_le_bytes())
        .collect()
}

fn cpu_gemm(a: &[f64], b: &[f64], n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|x| a[i * k + x] * b[x * n + j]).sum();
        }
    }
    c
}

/// Matrix-core GEMMs the compiler emits (`__builtin_amdgcn_mfma_*`), on both targets, checked
/// against the CPU: f32, f16 (32×32 and 16×16 tiles), bf16, f64 and (gfx90a) i8.
#[test]
fn mfma_gemms_match_the_cpu() {
    for_gfx9(|t| {
        let mut rng = Rng(0x3F7 + t as u64);
        // Small integers are exact in every format, so the sums must match exactly.
        let ints = |rng: &mut Rng, len: usize| -> Vec<f64> {
            (0..len)
                .map(|_| f64::from(rng.next_u32() % 9) - 4.0)
                .collect()
        };
        let k = 32usize;
        let (f16, bf16) = (f16_bytes, bf16_bytes);
        let f32s =
            |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect() };
        for (kernel, n, encode) in [
            (
                "mfma_f32_32x32x2f32",
                32,
                &f32s as &dyn Fn(&[f64]) -> Vec<u8>,
            ),
            ("mfma_f32_32x32x8f16", 32, &f16),
            ("mfma_f32_16x16x16f16", 16, &f16),
            ("mfma_f32_32x32x8bf16_1k", 32, &bf16),
        ] {
            let (a, b) = (ints(&mut rng, n * k), ints(&mut rng, k * n));
            let got = to_f32(&mfma_gemm(
                t,
                kernel,
                &encode(&a),
                &encode(&b),
                n,
                k as i32,
                4,
            ));
            let want = cpu_gemm(&a, &b, n, k);
            for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(f64::from(g), w, "{t} {kernel} C[{}][{}]", e / n, e % n);
            }
        }
        // f64, with fractions.
        let a: Vec<f64> = (0..16 * k).map(|_| f64::from(rng.f32(-2.0, 2.0))).collect();
        let b: Vec<f64> = (0..k * 16).map(|_| f64::from(rng.f32(-2.0, 2.0))).collect();
        let bytes = |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let got = to_f64(&mfma_gemm(
            t,
            "mfma_f64_16x16x4f64",
            &bytes(&a),
            &bytes(&b),
            16,
            k as i32,
            8,
        ));
        for (e, (g, w)) in got.iter().zip(cpu_gemm(&a, &b, 16, k)).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                "{t} f64 C[{e}]: {g} vs {w}"
            );
        }
        if t == Target::Gfx90a {
            let (a, b) = (ints(&mut rng, 32 * k), ints(&mut rng, k * 32));
            let i8s = |v: &[f64]| -> Vec<u8> { v.iter().map(|&x| x as i8 as u8).collect() };
            let got = to_i32(&mfma_gemm(
                t,
                "mfma_i32_32x32x8i8",
                &i8s(&a),
                &i8s(&b),
                32,
                k as i32,
                4,
            ));
            for (e, (&g, w)) in got.iter().zip(cpu_gemm(&a, &b, 32, k)).enumerate() {
                assert_eq!(f64::from(g), w, "{t} i8 C[{e}]");
            }
        }
    });
}

/// An integer in -4..=4 as an 8-bit FNUZ float with `mantissa` bits and exponent `bias`.
fn fnuz8(x: i32, mantissa: u32, bias: i32) -> u8 {
    if x == 0 {
        return 0;
    }
    let a = x.unsigned_abs();
    let e = 31 - a.leading_zeros() as i32;
    let m = ((a - (1 << e)) << mantissa) >> e;
    let b = ((e + bias) as u32) << mantissa | m;
    (b as u8) | if x < 0 { 0x80 } else { 0 }
}

/// gfx94x's FP8 and BF8 matrix-core GEMMs (clang-16 builtins), checked against the CPU.
#[test]
fn fp8_mfma_gemms_match_the_cpu() {
    let t = Target::Gfx942;
    let mut rng = Rng(0xF8);
    let k = 64usize;
    let fp8 = |x: i32| fnuz8(x, 3, 8);
    let bf8 = |x: i32| fnuz8(x, 2, 16);
    for (kernel, ea, eb) in [
        (
            "mfma_f32_16x16x32_fp8_fp8",
            &fp8 as &dyn Fn(i32) -> u8,
            &fp8 as &dyn Fn(i32) -> u8,
        ),
        ("mfma_f32_16x16x32_bf8_bf8", &bf8, &bf8),
        ("mfma_f32_16x16x32_fp8_bf8", &fp8, &bf8),
    ] {
        let a: Vec<i32> = (0..16 * k)
            .map(|_| (rng.next_u32() % 9) as i32 - 4)
            .collect();
        let b: Vec<i32> = (0..k * 16)
            .map(|_| (rng.next_u32() % 9) as i32 - 4)
            .collect();
        let co =
            common::elf::CodeObject::load(&common::elf::kernels_dir().join("mfma_fp8-gfx942.co"));
        let mut gpu = Gpu::new(t);
        let base = gpu.load(&co);
        let ko = base + co.symbol(&format!("{kernel}.kd"));
        let pa = gpu.upload(&a.iter().map(|&x| ea(x)).collect::<Vec<u8>>());
        let pb = gpu.upload(&b.iter().map(|&x| eb(x)).collect::<Vec<u8>>());
        let pc = gpu.alloc(16 * 16 * 4);
        let args = Args::new().ptr(pa).ptr(pb).ptr(pc).i32(k as i32).done();
        gpu.run(ko, &Launch::linear(64, 64, args))
            .unwrap_or_else(|e| panic!("{kernel}: {e}"));
        let got = to_f32(&gpu.download(pc, 16 * 16 * 4));
        let af: Vec<f64> = a.iter().map(|&x| f64::from(x)).collect();
        let bf: Vec<f64> = b.iter().map(|&x| f64::from(x)).collect();
        for (e, (&g, w)) in got.iter().zip(cpu_gemm(&af, &bf, 16, k)).enumerate() {
            assert_eq!(f64::from(g), w, "{kernel} C[{}][{}]", e / 16, e % 16);
        }
    }
}

/// A 4:2-sparse `rows`×`k` matrix of small integers (two of every four consecutive k nonzero, the
/// pair's places drawn at random), compressed as mfma_sparse.hip takes it: the kept values in
/// k order, and a byte per group of four with their places in bits [1:0] and [3:2].
fn sparse_a(rng: &mut Rng, rows: usize, k: usize) -> (Vec<f64>, Vec<f64>, Vec<u8>) {
    let mut dense = vec![0.0; rows * k];
    let (mut kept, mut places) = (Vec::new(), Vec::new());
    for i in 0..rows {
        for g in 0..k / 4 {
            let first = rng.next_u32() % 3;
            let second = first + 1 + rng.next_u32() % (3 - first);
            places.push((first | second << 2) as u8);
            for p in [first, second] {
                let v = f64::from(rng.next_u32() % 9) - 4.0;
                dense[i * k + 4 * g + p as usize] = v;
                kept.push(v);
            }
        }
    }
    (dense, kept, places)
}

/// gfx94x's sparse matrix cores (SMFMAC, clang-16 builtins) in f16, bf16 and i8, with the
/// index set chosen by ABID, and the xf32 MFMA, checked against the CPU.
#[test]
fn sparse_and_xf32_mfma_gemms_match_the_cpu() {
    let t = Target::Gfx942;
    let mut rng = Rng(0x5A);
    let co =
        common::elf::CodeObject::load(&common::elf::kernels_dir().join("mfma_sparse-gfx942.co"));
    let run = |kernel: &str, n: usize, a: &[u8], ai: Option<&[u8]>, b: &[u8], k: usize| {
        let mut gpu = Gpu::new(t);
        let base = gpu.load(&co);
        let ko = base + co.symbol(&format!("{kernel}.kd"));
        let pa = gpu.upload(a);
        let pb = gpu.upload(b);
        let pc = gpu.alloc(n as u64 * n as u64 * 4);
        let args = match ai {
            Some(ai) => Args::new().ptr(pa).ptr(gpu.upload(ai)).ptr(pb),
            None => Args::new().ptr(pa).ptr(pb),
        };
        let args = args.ptr(pc).i32(k as i32).done();
        gpu.run(ko, &Launch::linear(64, 64, args))
            .unwrap_or_else(|e| panic!("{kernel}: {e}"));
        gpu.download(pc, n * n * 4)
    };
    let (f16, bf16) = (f16_bytes, bf16_bytes);
    let i8s = |v: &[f64]| -> Vec<u8> { v.iter().map(|&x| x as i8 as u8).collect() };
    let fp8 = |v: &[f64]| -> Vec<u8> { v.iter().map(|&x| fnuz8(x as i32, 3, 8)).collect() };
    let bf8 = |v: &[f64]| -> Vec<u8> { v.iter().map(|&x| fnuz8(x as i32, 2, 16)).collect() };
    type Encode<'a> = &'a dyn Fn(&[f64]) -> Vec<u8>;
    let cases: [(&str, usize, usize, Encode<'_>, Encode<'_>); 6] = [
        ("smfmac_f32_16x16x32_f16", 16, 64, &f16, &f16),
        ("smfmac_f32_16x16x32_f16_set3", 16, 64, &f16, &f16),
        ("smfmac_f32_16x16x32_bf16", 16, 64, &bf16, &bf16),
        ("smfmac_i32_16x16x64_i8", 16, 128, &i8s, &i8s),
        ("smfmac_f32_32x32x16_f16", 32, 32, &f16, &f16),
        ("smfmac_f32_16x16x64_fp8_bf8", 16, 128, &fp8, &bf8),
    ];
    for (kernel, n, k, encode_a, encode_b) in cases {
        let (dense, kept, places) = sparse_a(&mut rng, n, k);
        let b: Vec<f64> = (0..k * n)
            .map(|_| f64::from(rng.next_u32() % 9) - 4.0)
            .collect();
        let out = run(kernel, n, &encode_a(&kept), Some(&places), &encode_b(&b), k);
        let got: Vec<f64> = if kernel.contains("i8") {
            to_i32(&out).into_iter().map(f64::from).collect()
        } else {
            to_f32(&out).into_iter().map(f64::from).collect()
        };
        for (e, (g, w)) in got.iter().zip(cpu_gemm(&dense, &b, n, k)).enumerate() {
            assert_eq!(*g, w, "{kernel} C[{}][{}]", e / n, e % n);
        }
    }
    // xf32 keeps 10 mantissa bits of each input: 1 + 2^-10 survives, 1 + 2^-12 does not. One
    // instruction's k, so that the sum is rounded once, as the CPU's is.
    let k = 8;
    let mut a = vec![0f32; 16 * k];
    let mut b = vec![0f32; k * 16];
    for i in 0..16 {
        for kk in 0..k {
            a[i * k + kk] = if (i + kk) % 2 == 0 {
                1.0 + 2f32.powi(-10)
            } else {
                1.0 + 2f32.powi(-12)
            };
            b[kk * 16 + i] = rng.f32(-2.0, 2.0);
        }
    }
    let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let got = to_f32(&run(
        "mfma_f32_16x16x8_xf32",
        16,
        &bytes(&a),
        None,
        &bytes(&b),
        k,
    ));
    let tf32 = |x: f32| -> f64 {
        // To nearest with ties to even at 10 mantissa bits (no input here is near a tie).
        let bits = x.to_bits();
        f64::from(f32::from_bits((bits + 0x1000) & !0x1FFF))
    };
    let a64: Vec<f64> = a.iter().map(|&x| tf32(x)).collect();
    let b64: Vec<f64> = b.iter().map(|&x| tf32(x)).collect();
    for (e, (&g, w)) in got.iter().zip(cpu_gemm(&a64, &b64, 16, k)).enumerate() {
        assert_eq!(g, w as f32, "xf32 C[{}][{}]", e / 16, e % 16);
    }
}
