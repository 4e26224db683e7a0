//! The device math library as hipcc links it (ROCm's ocml, `kernels/math.hip`: 45 float and
//! 45 double functions applied element-wise), built for gfx90a and gfx1100 (wave32) and run on
//! the interpreter, checked against the host's libm: every result within a few ulps of the
//! correctly rounded value (ocml's documented error bounds are 1-4 ulps for these; the
//! interpreter computes the hardware's approximation instructions exactly, so it is as close
//! as the library allows). Functions the host has no reference for (erf, erfc, tgamma,
//! lgamma) run and must be finite on their domains. The disassembly of both objects is
//! compared with llvm-objdump's in `disasm_golden.rs`.

use crate::common;

use common::elf::{kernels_dir, CodeObject};
use common::gpu::*;
use kfd_emu_isa::Target;

const F32: [&str; 45] = [
    "sinf",
    "cosf",
    "tanf",
    "asinf",
    "acosf",
    "atanf",
    "sinhf",
    "coshf",
    "tanhf",
    "asinhf",
    "acoshf",
    "atanhf",
    "expf",
    "exp2f",
    "exp10f",
    "expm1f",
    "logf",
    "log2f",
    "log10f",
    "log1pf",
    "sqrtf",
    "cbrtf",
    "rsqrtf",
    "erff",
    "erfcf",
    "tgammaf",
    "lgammaf",
    "floorf",
    "ceilf",
    "truncf",
    "roundf",
    "rintf",
    "fabsf",
    "logbf",
    "sinpif",
    "cospif",
    "powf",
    "atan2f",
    "hypotf",
    "fmodf",
    "remainderf",
    "fminf",
    "fmaxf",
    "fdimf",
    "copysignf",
];
const F64: [&str; 45] = [
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "exp",
    "exp2",
    "exp10",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "cbrt",
    "erf",
    "erfc",
    "tgamma",
    "lgamma",
    "floor",
    "ceil",
    "trunc",
    "round",
    "rint",
    "fabs",
    "logb",
    "sinpi",
    "cospi",
    "rsqrt",
    "pow",
    "atan2",
    "hypot",
    "fmod",
    "remainder",
    "fmin",
    "fmax",
    "fdim",
    "copysign",
];

/// Host reference of `name` (float names without their `f`), or `None` where the host has
/// none.
fn reference(name: &str, a: f64, b: f64) -> Option<f64> {
    use std::f64::consts::PI;
    Some(match name.trim_end_matches('f') {
        "sin" => a.sin(),
        "cos" => a.cos(),
        "tan" => a.tan(),
        "asin" => a.asin(),
        "aco" | "acos" => a.acos(),
        "atan" => a.atan(),
        "sinh" => a.sinh(),
        "cosh" => a.cosh(),
        "tanh" => a.tanh(),
        "asinh" => a.asinh(),
        "acosh" => a.acosh(),
        "atanh" => a.atanh(),
        "exp" => a.exp(),
        "exp2" => a.exp2(),
        "exp10" => 10f64.powf(a),
        "expm1" => a.exp_m1(),
        "log" => a.ln(),
        "log2" => a.log2(),
        "log10" => a.log10(),
        "log1p" => a.ln_1p(),
        "sqrt" => a.sqrt(),
        "cbrt" => a.cbrt(),
        "rsqrt" => 1.0 / a.sqrt(),
        "floor" => a.floor(),
        "ceil" => a.ceil(),
        "trunc" => a.trunc(),
        "round" => a.round(),
        "rint" => a.round_ties_even(),
        "fabs" => a.abs(),
        "logb" => a.abs().log2().floor(),
        "sinpi" => (PI * a).sin(),
        "cospi" => (PI * a).cos(),
        "pow" => a.powf(b),
        "atan2" => a.atan2(b),
        "hypot" => a.hypot(b),
        "fmod" => a % b,
        "remainder" => a - (a / b).round_ties_even() * b,
        "fmin" => a.min(b),
        "fmax" => a.max(b),
        "fdim" => (a - b).max(0.0),
        "copysign" => a.copysign(b),
        _ => return None,
    })
}

/// Inputs for `name`: (x, y) pairs inside its domain.
fn inputs(name: &str, n: usize) -> Vec<(f64, f64)> {
    let mut rng = Rng(0x5EED);
    let mut pick =
        |lo: f64, hi: f64| lo + (hi - lo) * f64::from(rng.next_u32()) / f64::from(u32::MAX);
    let base = name.trim_end_matches('f');
    (0..n)
        .map(|_| match base {
            "asin" | "aco" | "acos" | "atanh" => (pick(-0.99, 0.99), 0.0),
            "acosh" => (pick(1.0, 50.0), 0.0),
            "log" | "log2" | "log10" | "sqrt" | "rsqrt" | "logb" => (pick(1e-3, 1e3), 0.0),
            "log1p" => (pick(-0.9, 100.0), 0.0),
            "tgamma" | "lgamma" => (pick(0.1, 20.0), 0.0),
            "sinh" | "cosh" | "exp" | "exp2" | "exp10" | "expm1" => (pick(-20.0, 20.0), 0.0),
            "pow" => (pick(0.1, 10.0), pick(-3.0, 3.0)),
            "fmod" | "remainder" => (pick(-100.0, 100.0), pick(0.5, 7.0)),
            _ => (pick(-10.0, 10.0), pick(-10.0, 10.0)),
        })
        .collect()
}

/// Distance in units in the last place between two floats of the same sign (or both zero).
fn ulps32(a: f32, b: f32) -> u32 {
    if a == b {
        return 0;
    }
    (a.to_bits() as i32)
        .wrapping_sub(b.to_bits() as i32)
        .unsigned_abs()
}

fn ulps64(a: f64, b: f64) -> u64 {
    if a == b {
        return 0;
    }
    (a.to_bits() as i64)
        .wrapping_sub(b.to_bits() as i64)
        .unsigned_abs()
}

/// Elements per run: whole work-groups of 64 (code-object-v4 HIP kernels index a partial last
/// group by its own size, so the tail would not be covered).
const N: usize = 128;

/// Runs function `f` of `kernel` over x and y (raw element bytes); returns the output bytes.
fn run(t: Target, kernel: &str, f: usize, x: &[u8], y: &[u8], elem: usize) -> Vec<u8> {
    let co = CodeObject::load(&kernels_dir().join(format!("math-{}.co", t.name())));
    let mut gpu = Gpu::new(t);
    let base = gpu.load(&co);
    let k = base + co.symbol(&format!("{kernel}.kd"));
    let (px, py) = (gpu.upload(x), gpu.upload(y));
    let out = gpu.alloc((N * elem) as u64);
    let args = Args::new()
        .ptr(px)
        .ptr(py)
        .ptr(out)
        .i32(N as i32)
        .i32(f as i32)
        .done();
    gpu.run(k, &Launch::linear(N as u32, 64, args))
        .unwrap_or_else(|e| panic!("{t} {kernel} #{f}: {e}"));
    gpu.download(out, N * elem)
}

const TARGETS: [Target; 2] = [Target::Gfx90a, Target::Gfx1100];

#[test]
fn float_math_matches_the_host() {
    for t in TARGETS {
        for (f, name) in F32.iter().enumerate() {
            let xy = inputs(name, N);
            let x: Vec<u8> = xy.iter().flat_map(|p| (p.0 as f32).to_le_bytes()).collect();
            let y: Vec<u8> = xy.iter().flat_map(|p| (p.1 as f32).to_le_bytes()).collect();
            let got = run(t, "math_f32", f, &x, &y, 4);
            for (i, p) in xy.iter().enumerate() {
                let g = f32::from_le_bytes(got[4 * i..4 * i + 4].try_into().unwrap());
                let (a, b) = (f64::from(p.0 as f32), f64::from(p.1 as f32));
                match reference(name, a, b) {
                    Some(want) => {
                        let want = want as f32;
                        assert!(
                            ulps32(g, want) <= 4 || (g - want).abs() <= 1e-6,
                            "{t} {name}({a}, {b}) = {g}, want {want}"
                        );
                    }
                    None => assert!(g.is_finite(), "{t} {name}({a}) = {g}"),
                }
            }
        }
    }
}

#[test]
fn double_math_matches_the_host() {
    for t in TARGETS {
        for (f, name) in F64.iter().enumerate() {
            let xy = inputs(name, N);
            let x: Vec<u8> = xy.iter().flat_map(|p| p.0.to_le_bytes()).collect();
            let y: Vec<u8> = xy.iter().flat_map(|p| p.1.to_le_bytes()).collect();
            let got = run(t, "math_f64", f, &x, &y, 8);
            for (i, &(a, b)) in xy.iter().enumerate() {
                let g = f64::from_le_bytes(got[8 * i..8 * i + 8].try_into().unwrap());
                match reference(name, a, b) {
                    Some(want) => assert!(
                        ulps64(g, want) <= 4 || (g - want).abs() <= 1e-14,
                        "{t} {name}({a}, {b}) = {g}, want {want}"
                    ),
                    None => assert!(g.is_finite(), "{t} {name}({a}) = {g}"),
                }
            }
        }
    }
}
