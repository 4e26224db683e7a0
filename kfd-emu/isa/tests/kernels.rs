//! The compiled HIP kernels (tests/kernels/kernels.hip) run on the interpreter for gfx90a,
//! gfx942 and gfx1100 (hipcc's default wave32 build and a `-mwavefrontsize64` build), every
//! result checked against the same computation on the CPU.

// Results are compared element by element against parallel CPU arrays by index.
#![allow(clippy::needless_range_loop)]

use crate::common;

use common::elf::CodeObject;
use common::gpu::{Gpu, *};
use kfd_emu_isa::Target;

/// A build of kernels.hip: its target and wave size.
#[derive(Clone, Copy, Debug)]
struct Build {
    target: Target,
    /// Lanes per wave (HIP's `warpSize`): hipcc builds gfx1100 code for wave32 unless told
    /// `-mwavefrontsize64`; GFX9 runs wave64 only.
    lanes: usize,
}

impl std::fmt::Display for Build {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} wave{}", self.target, self.lanes)
    }
}

/// Every build: each target's, and gfx1100's in both wave sizes.
fn both(f: impl Fn(Build)) {
    for target in Target::ALL {
        let lanes = if target == Target::Gfx1100 { 32 } else { 64 };
        f(Build { target, lanes });
    }
    f(Build {
        target: Target::Gfx1100,
        lanes: 64,
    });
}

fn lanes(b: Build) -> usize {
    b.lanes
}

/// A loaded copy of build `b`'s kernels.
fn kernels(b: Build) -> (Gpu, u64, CodeObject) {
    if b.target == Target::Gfx1100 && b.lanes == 64 {
        let co = CodeObject::load(&common::elf::kernels_dir().join("kernels_w64-gfx1100.co"));
        let mut gpu = Gpu::new(b.target);
        let base = gpu.load(&co);
        return (gpu, base, co);
    }
    common::gpu::kernels(b.target)
}

#[test]
fn vector_add() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("vector_add.kd");
        let n = 1000u32;
        let mut rng = Rng(7);
        let a: Vec<f32> = (0..n).map(|_| rng.f32(-100.0, 100.0)).collect();
        let b: Vec<f32> = (0..n).map(|_| rng.f32(-100.0, 100.0)).collect();
        let (da, db) = (gpu.upload(&f32_bytes(&a)), gpu.upload(&f32_bytes(&b)));
        let dc = gpu.alloc(4 * u64::from(n));
        let args = Args::new().ptr(da).ptr(db).ptr(dc).i32(n as i32).done();
        let st = gpu.run(k, &Launch::linear(1024, 256, args)).unwrap();
        let c = to_f32(&gpu.download(dc, 4 * n as usize));
        for i in 0..n as usize {
            assert_eq!(c[i], a[i] + b[i], "{t} element {i}");
        }
        assert_eq!(st.waves as usize, 1024 / lanes(t));
    });
}

#[test]
fn saxpy_with_a_partial_last_group() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("saxpy.kd");
        let n = 777u32;
        let mut rng = Rng(3);
        let x: Vec<f32> = (0..n).map(|_| rng.f32(-10.0, 10.0)).collect();
        let y: Vec<f32> = (0..n).map(|_| rng.f32(-10.0, 10.0)).collect();
        let (dx, dy) = (gpu.upload(&f32_bytes(&x)), gpu.upload(&f32_bytes(&y)));
        let args = Args::new().f32(2.5).ptr(dx).ptr(dy).i32(n as i32).done();
        // The grid is exactly n: the last work-group is partial (777 = 3 * 256 + 9). HIP's
        // blockDim is the work-group's actual size (the kernel computes it from the dispatch
        // packet as min(workgroup_size, grid_size - group * workgroup_size)), so in the last
        // group `blockIdx.x * blockDim.x + threadIdx.x` is 3 * 9 + t: a real GPU updates
        // elements 27..35 a second time. The CPU model does the same.
        gpu.run(k, &Launch::linear(n, 256, args)).unwrap();
        let out = to_f32(&gpu.download(dy, 4 * n as usize));
        let mut want = y.clone();
        for g in 0..n.div_ceil(256) {
            let size = 256.min(n - g * 256);
            for t in 0..size {
                let i = (g * size + t) as usize;
                want[i] = 2.5f32.mul_add(x[i], want[i]);
            }
        }
        for i in 0..n as usize {
            assert_eq!(out[i], want[i], "{t} element {i}");
        }
        assert_ne!(
            want[27],
            2.5f32.mul_add(x[27], y[27]),
            "the model differs from uniform"
        );
    });
}

#[test]
fn reduce_sum_with_lds_and_barriers() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("reduce_sum.kd");
        let n = 5000u32;
        let mut rng = Rng(11);
        let v: Vec<i32> = (0..n)
            .map(|_| (rng.next_u32() % 2001) as i32 - 1000)
            .collect();
        let dv = gpu.upload(&i32_bytes(&v));
        let out = gpu.alloc(4);
        let args = Args::new().ptr(dv).ptr(out).i32(n as i32).done();
        let st = gpu
            .run(k, &Launch::linear(n.div_ceil(256) * 256, 256, args))
            .unwrap();
        let got = to_i32(&gpu.download(out, 4))[0];
        assert_eq!(got, v.iter().sum::<i32>(), "{t}");
        assert!(st.barriers > 0);
    });
}

#[test]
fn reduce_with_cross_lane_shuffles() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("reduce_shfl.kd");
        let n = 1000u32;
        let v: Vec<f32> = (0..n).map(|i| (i % 17) as f32 * 0.5).collect();
        let dv = gpu.upload(&f32_bytes(&v));
        let groups = n.div_ceil(256);
        let out = gpu.alloc(4 * u64::from(groups));
        let args = Args::new().ptr(dv).ptr(out).i32(n as i32).done();
        gpu.run(k, &Launch::linear(groups * 256, 256, args))
            .unwrap();
        let got = to_f32(&gpu.download(out, 4 * groups as usize));
        let w = lanes(t);
        for g in 0..groups as usize {
            // The kernel as HIP defines it for a wave of `w` lanes: `__shfl_down(v, off)`
            // reads lane + off within the wave, or keeps v past its end; the lanes whose id is
            // a multiple of 64 publish their wave's value. In wave64 that is the group's sum.
            let mut x: Vec<f32> = (0..256)
                .map(|t| v.get(g * 256 + t).copied().unwrap_or(0.0))
                .collect();
            let mut off = 32;
            while off > 0 {
                x = (0..256)
                    .map(|t| {
                        let l = t % w;
                        x[t] + if l + off < w { x[t + off] } else { x[t] }
                    })
                    .collect();
                off >>= 1;
            }
            let want: f32 = (0..256).step_by(64).map(|t| x[t]).sum();
            assert_eq!(got[g], want, "{t} group {g}");
        }
    });
}

#[test]
fn tiled_matrix_multiply() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("matmul_tiled.kd");
        let n = 40usize; // not a multiple of the tile
        let mut rng = Rng(5);
        let a: Vec<f32> = (0..n * n).map(|_| rng.f32(-1.0, 1.0)).collect();
        let b: Vec<f32> = (0..n * n).map(|_| rng.f32(-1.0, 1.0)).collect();
        let (da, db) = (gpu.upload(&f32_bytes(&a)), gpu.upload(&f32_bytes(&b)));
        let dc = gpu.alloc(4 * (n * n) as u64);
        let args = Args::new().ptr(da).ptr(db).ptr(dc).i32(n as i32).done();
        let tiles = n.div_ceil(16) as u32 * 16;
        gpu.run(k, &Launch::new([tiles, tiles, 1], [16, 16, 1], args))
            .unwrap();
        let c = to_f32(&gpu.download(dc, 4 * n * n));
        for r in 0..n {
            for col in 0..n {
                // The kernel accumulates in k order with fused multiply-adds.
                let mut acc = 0.0f32;
                for kk in 0..n {
                    acc = a[r * n + kk].mul_add(b[kk * n + col], acc);
                }
                let got = c[r * n + col];
                assert!(
                    (got - acc).abs() <= 1e-5 * acc.abs().max(1.0),
                    "{t} C[{r}][{col}] = {got}, want {acc}"
                );
            }
        }
    });
}

#[test]
fn global_and_lds_atomics() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("atomics.kd");
        let n = 3000u32;
        let mut rng = Rng(21);
        let v: Vec<i32> = (0..n)
            .map(|_| (rng.next_u32() % 100_000) as i32 - 20_000)
            .collect();
        let dv = gpu.upload(&i32_bytes(&v));
        let init32: [i32; 11] = [0, 0, i32::MIN, i32::MAX, -1, 0, 0, 0, 0, 0, i32::MIN];
        let g32 = gpu.upload(&i32_bytes(&init32));
        let g64 = gpu.alloc(16);
        let gf = gpu.alloc(4);
        let hist = gpu.alloc(64);
        let args = Args::new()
            .ptr(dv)
            .ptr(g32)
            .ptr(g64)
            .ptr(gf)
            .ptr(hist)
            .i32(n as i32)
            .done();
        gpu.run(k, &Launch::linear(n.div_ceil(128) * 128, 128, args))
            .unwrap();
        let r = to_i32(&gpu.download(g32, 44));
        let sum: i32 = v.iter().fold(0i32, |a, &x| a.wrapping_add(x));
        assert_eq!(r[0], sum, "{t} add");
        assert_eq!(r[1], sum.wrapping_neg(), "{t} sub");
        assert_eq!(r[2], *v.iter().max().unwrap(), "{t} max");
        assert_eq!(r[3], *v.iter().min().unwrap(), "{t} min");
        assert_eq!(
            r[4],
            v.iter().fold(-1, |a, &x| a & !(1 << (x & 31))),
            "{t} and"
        );
        assert_eq!(r[5], v.iter().fold(0, |a, &x| a | 1 << (x & 31)), "{t} or");
        assert_eq!(r[6], v.iter().fold(0, |a, &x| a ^ x), "{t} xor");
        // inc wraps at 1000: n increments from 0.
        assert_eq!(r[7] as u32, n % 1001, "{t} inc");
        assert!(v.contains(&r[8]), "{t} exch");
        assert_eq!(
            r[9],
            v.iter().fold(0i32, |a, &x| a.wrapping_add(2 * x)),
            "{t} cmpswap"
        );
        let lds_max = v.iter().map(|&x| x as u32).max().unwrap() as i32;
        assert_eq!(r[10], lds_max, "{t} lds max (unsigned)");
        let r64 = to_u64(&gpu.download(g64, 16));
        let want64 = v
            .iter()
            .fold(0u64, |a, &x| a.wrapping_add(((x & 0xFF) as u64) << 32 | 1));
        assert_eq!(r64[0], want64, "{t} add x2");
        let max64 = v
            .iter()
            .map(|&x| (x as u64).wrapping_mul(0x1_0000_0001))
            .max()
            .unwrap();
        assert_eq!(r64[1], max64, "{t} umax x2");
        let f = to_f32(&gpu.download(gf, 4))[0];
        let want_f: f32 = v.iter().map(|&x| (x & 7) as f32 * 0.5).sum();
        assert_eq!(f, want_f, "{t} fadd (exact: multiples of 0.5)");
        let h = to_i32(&gpu.download(hist, 64));
        for b in 0..16 {
            let want = v.iter().filter(|&&x| x & 15 == b).count() as i32;
            assert_eq!(h[b as usize], want, "{t} lds histogram bin {b}");
        }
    });
}

fn collatz(mut x: u32) -> (u32, u32) {
    let (mut s, mut p) = (0u32, x);
    while x != 1 && x != 0 {
        x = if x & 1 != 0 {
            x.wrapping_mul(3).wrapping_add(1)
        } else {
            x >> 1
        };
        p = p.max(x);
        s += 1;
        if s > 1000 {
            break;
        }
    }
    (s, p)
}

#[test]
fn divergent_loops() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("divergent.kd");
        let n = 700u32;
        let v: Vec<u32> = (0..n).map(|i| i * 7 + 1).collect();
        let dv = gpu.upload(&u32_bytes(&v));
        let steps = gpu.alloc(4 * u64::from(n));
        let peak = gpu.alloc(4 * u64::from(n));
        let args = Args::new()
            .ptr(dv)
            .ptr(steps)
            .ptr(peak)
            .i32(n as i32)
            .done();
        gpu.run(k, &Launch::linear(n.div_ceil(64) * 64, 64, args))
            .unwrap();
        let s = to_u32(&gpu.download(steps, 4 * n as usize));
        let p = to_u32(&gpu.download(peak, 4 * n as usize));
        for i in 0..n as usize {
            let (ws, wp) = collatz(v[i]);
            assert_eq!(s[i], ws, "{t} steps[{i}]");
            assert_eq!(
                p[i],
                if i & 1 == 1 { wp } else { wp ^ 0x5a5a },
                "{t} peak[{i}]"
            );
        }
    });
}

fn ulps(a: f32, b: f32) -> u32 {
    (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
}

#[test]
fn device_library_math() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("math.kd");
        let n = 512u32;
        let mut rng = Rng(9);
        let x: Vec<f32> = (0..n).map(|_| rng.f32(-20.0, 20.0)).collect();
        let dx = gpu.upload(&f32_bytes(&x));
        let out = gpu.alloc(16 * u64::from(n));
        let outd = gpu.alloc(8 * u64::from(n));
        let args = Args::new().ptr(dx).ptr(out).ptr(outd).i32(n as i32).done();
        gpu.run(k, &Launch::linear(n, 128, args)).unwrap();
        let o = to_f32(&gpu.download(out, 16 * n as usize));
        let od = to_f64(&gpu.download(outd, 8 * n as usize));
        for i in 0..n as usize {
            let v = x[i];
            let checks = [
                ("sqrtf", o[4 * i], v.abs().sqrt()),
                ("expf", o[4 * i + 1], (v * 0.25).exp()),
                ("sinf", o[4 * i + 2], v.sin()),
                ("div", o[4 * i + 3], v / (1.0 + v * v)),
            ];
            for (what, got, want) in checks {
                assert!(ulps(got, want) <= 2, "{t} {what}({v}) = {got}, want {want}");
            }
            let wantd = f64::from(v.abs()).sqrt() / (f64::from(v) + 3.0);
            assert!(
                (od[i] - wantd).abs() <= 1e-15 * wantd.abs(),
                "{t} double {v}: {} vs {wantd}",
                od[i]
            );
        }
    });
}

#[test]
fn private_arrays_in_scratch() {
    both(|t| {
        for name in ["scratch_array", "scratch_spill"] {
            let (mut gpu, base, co) = kernels(t);
            let k = base + co.symbol(&format!("{name}.kd"));
            assert!(
                gpu.descriptor(k).scratch_enabled(),
                "{t} {name} uses scratch"
            );
            let n = 300u32;
            let idx: Vec<i32> = (0..n).map(|i| ((i * 37) % 211) as i32).collect();
            let di = gpu.upload(&i32_bytes(&idx));
            let out = gpu.alloc(4 * u64::from(n));
            let args = Args::new().ptr(di).ptr(out).i32(n as i32).done();
            gpu.run(k, &Launch::linear(n.div_ceil(128) * 128, 128, args))
                .unwrap();
            let got = to_i32(&gpu.download(out, 4 * n as usize));
            for i in 0..n as usize {
                let want = if name == "scratch_array" {
                    let priv_: Vec<i32> = (0..64).map(|k| k * i as i32 + 7).collect();
                    (0..8)
                        .map(|k| priv_[((idx[i] + k * 5) & 63) as usize])
                        .sum::<i32>()
                } else {
                    let mut p: Vec<i32> = (0..200).map(|k| k * (i as i32 + 1)).collect();
                    let j = idx[i];
                    p[(j % 200) as usize] += 1000;
                    p[((j * 7) % 200) as usize] ^= 0x55;
                    (0..200)
                        .step_by(13)
                        .map(|k| p[((j + k) % 200) as usize])
                        .sum()
                };
                assert_eq!(got[i], want, "{t} {name}[{i}]");
            }
        }
    });
}

#[test]
fn dynamic_shared_memory() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("dyn_shared_reverse.kd");
        let n = 1000u32;
        let wg = 192u32;
        let v: Vec<i32> = (0..n as i32).map(|i| i * 3 - 5).collect();
        let dv = gpu.upload(&i32_bytes(&v));
        let out = gpu.alloc(4 * u64::from(n));
        let args = Args::new().ptr(dv).ptr(out).i32(n as i32).done();
        let mut l = Launch::linear(n.div_ceil(wg) * wg, wg as u16, args);
        l.dynamic_lds = 4 * wg;
        gpu.run(k, &l).unwrap();
        let got = to_i32(&gpu.download(out, 4 * n as usize));
        for i in 0..n as usize {
            let g = i / wg as usize * wg as usize;
            let src = g + wg as usize - 1 - (i - g);
            let want = if src < n as usize { v[src] } else { -1 };
            assert_eq!(got[i], want, "{t} out[{i}]");
        }
    });
}

#[test]
fn three_dimensional_ids() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("ids3d.kd");
        let (wg, groups) = ([4u16, 4, 4], [3u32, 2, 2]);
        let grid: [u32; 3] = std::array::from_fn(|d| u32::from(wg[d]) * groups[d]);
        let items = grid.iter().product::<u32>() as usize;
        let out = gpu.alloc(8 * items as u64);
        let args = Args::new().ptr(out).done();
        gpu.run(k, &Launch::new(grid, wg, args)).unwrap();
        let got = to_u32(&gpu.download(out, 8 * items));
        for z in 0..grid[2] {
            for y in 0..grid[1] {
                for x in 0..grid[0] {
                    let lin = ((z * grid[1] + y) * grid[0] + x) as usize;
                    let (tx, ty, tz) = (x % 4, y % 4, z % 4);
                    let (bx, by, bz) = (x / 4, y / 4, z / 4);
                    assert_eq!(
                        got[2 * lin],
                        tx | ty << 10 | tz << 20,
                        "{t} thread id at {x},{y},{z}"
                    );
                    assert_eq!(
                        got[2 * lin + 1],
                        bx | by << 10 | bz << 20,
                        "{t} block id at {x},{y},{z}"
                    );
                }
            }
        }
    });
}

#[test]
fn lane_intrinsics() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("lanes.kd");
        let n = 200u32;
        let v: Vec<i32> = (0..n as i32).map(|i| (i * 13) % 7 - 3).collect();
        let dv = gpu.upload(&i32_bytes(&v));
        let waves = n.div_ceil(64) as usize;
        let ballots = gpu.alloc(8 * waves as u64);
        let out = gpu.alloc(4 * u64::from(n));
        let args = Args::new()
            .ptr(dv)
            .ptr(ballots)
            .ptr(out)
            .i32(n as i32)
            .done();
        gpu.run(k, &Launch::linear(waves as u32 * 64, 64, args))
            .unwrap();
        let got = to_i32(&gpu.download(out, 4 * n as usize));
        let b = to_u64(&gpu.download(ballots, 8 * waves));
        let val = |i: usize| if i < n as usize { v[i] } else { 0 };
        let lanes = lanes(t);
        let ballot = |wave: usize| -> u64 {
            (0..lanes)
                .filter(|&l| val(wave * lanes + l) > 0)
                .fold(0, |a, l| a | 1 << l)
        };
        for slot in 0..waves {
            // Lane 0 of every wave whose first item is in this 64-item slot writes it: in
            // wave32 two waves race for each slot, and either may be last.
            let candidates: Vec<u64> = (slot * 64 / lanes..(slot + 1) * 64 / lanes)
                .map(ballot)
                .collect();
            assert!(
                candidates.contains(&b[slot]),
                "{t} ballot of slot {slot}: {:#x}",
                b[slot]
            );
        }
        for i in 0..n as usize {
            let (wave, l) = (i / lanes, i % lanes);
            let x = val(wave * lanes + (l ^ 5));
            let e =
                ballot(wave).count_ones() as i32 + l as i32 * 1000 + val(wave * lanes) * 7 + x * 3;
            assert_eq!(got[i], e, "{t} lane {i}");
        }
    });
}

#[test]
fn half_precision_and_integer_conversions() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("halfs.kd");
        let n = 256u32;
        let mut rng = Rng(99);
        let x: Vec<f32> = (0..n).map(|_| rng.f32(-50.0, 50.0)).collect();
        let dx = gpu.upload(&f32_bytes(&x));
        let out = gpu.alloc(4 * u64::from(n));
        let args = Args::new().ptr(dx).ptr(out).i32(n as i32).done();
        gpu.run(k, &Launch::linear(n, 64, args)).unwrap();
        let got = to_f32(&gpu.download(out, 4 * n as usize));
        for i in 0..n as usize {
            let h = kfd_emu_isa::decode::operand::f32_to_f16(x[i]);
            let hv = kfd_emu_isa::decode::operand::f16_to_f32(h);
            // g = h * 1.5 + 0.25 in half precision (fused or not: the product is exact in f32).
            let g1 = kfd_emu_isa::decode::operand::f16_to_f32(
                kfd_emu_isa::decode::operand::f32_to_f16(hv.mul_add(1.5, 0.25)),
            );
            let kk = (x[i] * 3.0) as i32;
            let want = g1 + (kk % 7) as f32 + ((kk as u32) >> 3) as f32;
            assert!(
                ulps(got[i], want) <= 1,
                "{t} halfs({}) = {}, want {want}",
                x[i],
                got[i]
            );
        }
    });
}
