//! More compiled kernels on both targets: a code-object-v5 kernel whose blockDim/gridDim come
//! from hidden kernel arguments, and double-precision device-library math with arguments large
//! enough to need `v_trig_preop_f64`.

// Results are compared element by element against parallel CPU arrays by index.
#![allow(clippy::needless_range_loop)]

mod common;

use common::gpu::*;
use kfd_emu_isa::Target;

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
