//! The interpreter's compiled HIP kernels (`kfd-emu/isa/tests/kernels/kernels.hip`, hipcc
//! builds for gfx90a and gfx940 relabelled gfx942) loaded by kfdrt and dispatched through both of
//! its compute queues, an `AqlQueue` (`Dispatch::with_args`) and a `Pm4Queue`
//! (`dispatch_packets_with_args`), on the device under test (`common::under_test`; skipped on a
//! target without these kernels) and, when that is emulated, on the emulated gfx90a, gfx942
//! and gfx1100, every result checked against the same computation on the CPU (exactly for
//! integers, with the interpreter tests' tolerances for float math). On an emulated device
//! every launch must have run machine code: the emulator's `machine_dispatches` counter grows
//! by one per launch.
//!
//! AQL launches of the element-wise kernels use grids that are not a multiple of the
//! work-group. These code-object-v4 kernels take `blockDim` from the dispatch packet as
//! `get_local_size` does: the partial last group's own size, so its work-items compute
//! `blockIdx.x * size + threadIdx.x` (they redo elements of earlier groups; the elements past
//! them are never written). `hip_ids` models that, so the tests check that kfdrt's packet
//! carries the exact grid. PM4 dispatches run whole work-groups only: their grids are rounded
//! up and the kernels' bound checks keep them inside the data.
//!
//! PM4 launches give kernels their LDS (static and dynamic) through `COMPUTE_PGM_RSRC2.LDS_SIZE`,
//! which compilers leave 0 because an AQL CP takes the size from the packet.

// Results are compared element by element against parallel CPU arrays by index.
#![allow(clippy::needless_range_loop)]

use crate::common;

use kfdrt::emu::Preset;
use kfdrt::kernel_args::KernelArgs;
use kfdrt::{
    AqlQueue, AqlQueueOptions, Buffer, CodeObject, Gpu, LaunchGeometry, MemoryKind, Pm4Queue,
    Pm4QueueOptions,
};
use std::time::Duration;

const T: Duration = Duration::from_secs(120);

/// How a launch reaches the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    /// `AqlQueue::dispatch` of `Dispatch::with_args`.
    Aql,
    /// `Pm4Queue::dispatch_packets_with_args`, submitted as they come.
    Pm4,
}

/// Both queues, as kfdrt builds the launches.
const BOTH: [Via; 2] = [Via::Aql, Via::Pm4];

/// One GPU with the kernels loaded and a queue of each kind.
struct Device {
    /// Its target (`gfx90a`, ...).
    target: String,
    gpu: Gpu,
    co: CodeObject,
    aql: AqlQueue,
    pm4: Pm4Queue,
    /// Last: dropped after what was made from it, then checked for leaks.
    kfd: common::Checked,
}

/// A hipcc fixture of the interpreter's tests for `gpu`'s target, if one is built for it. No
/// compiler here knows gfx942: those fixtures are gfx940 builds (the same ISA) with the ELF
/// machine set to gfx942, whose metadata still names gfx940, which kfdrt's loader rightly
/// refuses; name gfx942 there too (same length, same layout), as `tests/scratch.rs` does.
fn fixture(gpu: &Gpu, v90a: &[u8], v942: &[u8], v1100: &[u8]) -> Option<CodeObject> {
    let bytes = match gpu.info().gfx_target.as_str() {
        "gfx90a" => v90a.to_vec(),
        "gfx1100" => v1100.to_vec(),
        "gfx942" => {
            let mut b = v942.to_vec();
            let from = b"amdgcn-amd-amdhsa--gfx940";
            let at = b.windows(from.len()).position(|w| w == from).unwrap();
            b[at + from.len() - 1] = b'2';
            b
        }
        _ => return None,
    };
    Some(gpu.load_code_object(&bytes).unwrap())
}

impl Device {
    /// `kfd`'s first GPU with the kernels loaded, or `None` if none are built for its target.
    fn new(kfd: common::Checked) -> Option<Device> {
        let gpu = kfd.gpu(0).unwrap();
        let co = fixture(
            &gpu,
            include_bytes!("../kfd-emu/isa/tests/kernels/kernels-gfx90a.co"),
            include_bytes!("../kfd-emu/isa/tests/kernels/kernels-gfx942.co"),
            include_bytes!("../kfd-emu/isa/tests/kernels/kernels-gfx1100.co"),
        )?;
        let aql = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
        Some(Device {
            target: gpu.info().gfx_target.clone(),
            gpu,
            co,
            aql,
            pm4,
            kfd,
        })
    }

    /// HIP's `warpSize` in the fixture: hipcc builds gfx1100 code for wave32.
    fn lanes(&self) -> usize {
        if self.target == "gfx1100" {
            32
        } else {
            64
        }
    }

    /// The emulator's count of machine-code dispatches; `None` on a device that is not emulated.
    fn machine_dispatches(&self) -> Option<u64> {
        Some(self.kfd.emulator()?.stats().machine_dispatches)
    }

    /// Runs `name` from `co` over `g` through `via` with the arguments `set` gives, waits for it,
    /// and, on an emulated device, checks that it ran as machine code.
    fn launch_from(
        &self,
        co: &CodeObject,
        via: Via,
        name: &str,
        g: LaunchGeometry,
        set: impl FnOnce(&mut KernelArgs),
    ) {
        let kernel = co.kernel(name).unwrap();
        let mut args = KernelArgs::new(&kernel).unwrap();
        set(&mut args);
        let before = self.machine_dispatches();
        match via {
            Via::Aql => {
                self.aql
                    .dispatch(&g.dispatch(&kernel).with_args(&args))
                    .unwrap()
                    .wait(Some(T))
                    .unwrap_or_else(|e| panic!("{} {name} via AQL: {e}", self.target));
            }
            Via::Pm4 => {
                let kernarg = self.gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
                let packets = self
                    .pm4
                    .dispatch_packets_with_args(&kernel, &g, &args, &kernarg)
                    .unwrap();
                common::pm4_submit(&self.pm4, &packets, T).unwrap();
                self.pm4
                    .finish(T)
                    .unwrap_or_else(|e| panic!("{} {name} via PM4: {e}", self.target));
                drop(kernarg);
            }
        }
        if let (Some(before), Some(after)) = (before, self.machine_dispatches()) {
            assert_eq!(
                after,
                before + 1,
                "{} {name} via {via:?}: one dispatch of machine code",
                self.target
            );
        }
        assert!(self.aql.fault().is_none(), "{}", self.target);
    }

    fn launch(&self, via: Via, name: &str, g: LaunchGeometry, set: impl FnOnce(&mut KernelArgs)) {
        self.launch_from(&self.co, via, name, g, set)
    }

    /// A buffer holding `values` (inputs in host-visible VRAM, so kfdrt's HDP flush before
    /// each submission matters; outputs in coherent GTT).
    fn upload<V: Le>(&self, kind: MemoryKind, values: &[V]) -> Buffer {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.bytes()).collect();
        let b = self.gpu.alloc(bytes.len().max(4) as u64, kind).unwrap();
        b.write(0, &bytes).unwrap();
        b
    }

    fn input<V: Le>(&self, values: &[V]) -> Buffer {
        self.upload(MemoryKind::HostVisibleVram, values)
    }

    /// An output of `n` values, each `sentinel` (new buffers' contents are undefined).
    fn output<V: Le>(&self, n: usize, sentinel: V) -> Buffer {
        self.upload(MemoryKind::GttCoherent, &vec![sentinel; n])
    }
}

/// Little-endian values of the kernels' element types.
trait Le: Copy {
    const SIZE: usize;
    fn bytes(self) -> Vec<u8>;
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! le {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn bytes(self) -> Vec<u8> {
                self.to_le_bytes().to_vec()
            }
            fn from_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
        }
    )*};
}
le!(i32, u32, u64, f32, f64);

fn download<V: Le>(b: &Buffer, n: usize) -> Vec<V> {
    let mut raw = vec![0u8; n * V::SIZE];
    b.read(0, &mut raw).unwrap();
    raw.chunks_exact(V::SIZE).map(V::from_le).collect()
}

/// Runs `f` through each of `vias` on the device under test (see [`common::under_test`]);
/// when that device is emulated, on one of every preset (gfx90a, gfx942, gfx1100), each then
/// checked to have run machine code with its VRAM inputs flushed.
fn each(test: &str, vias: &[Via], f: impl Fn(&Device, Via)) {
    let Some(dut) = common::under_test(test, Preset::Gfx90a, 1, &[]) else {
        return;
    };
    let emulated = dut.emulator().is_some();
    let others: Vec<common::Checked> = if emulated {
        [Preset::Gfx942, Preset::Gfx1100]
            .into_iter()
            .map(|p| common::emulated(p, 1))
            .collect()
    } else {
        Vec::new()
    };
    for kfd in std::iter::once(dut).chain(others) {
        let target = kfd.gpu(0).unwrap().info().gfx_target.clone();
        let Some(dev) = Device::new(kfd) else {
            assert!(!emulated, "no kernels for the emulated {target}");
            eprintln!("{test}: skipped: no interpreter kernels are built for {target}");
            return;
        };
        for &via in vias {
            f(&dev, via);
        }
        if let Some(emu) = dev.kfd.emulator() {
            let stats = emu.stats();
            assert!(stats.machine_dispatches >= vias.len() as u64, "{target}");
            assert_eq!(
                stats.unflushed_vram_reads, 0,
                "{target}: inputs in VRAM flushed"
            );
        }
    }
}

/// The 1-D grid a launch over `n` elements uses: exactly `n` through AQL (not a multiple of the
/// work-group), whole work-groups through PM4.
fn grid_for(via: Via, n: u32, wg: u16) -> u32 {
    match via {
        Via::Aql => n,
        Via::Pm4 => n.next_multiple_of(u32::from(wg)),
    }
}

/// The global ids `blockIdx.x * blockDim.x + threadIdx.x` of a 1-D launch, with `blockDim.x`
/// the size of each work-group (smaller in a partial last one), as code objects v4 compute it.
fn hip_ids(grid: u32, wg: u16) -> Vec<u32> {
    let wg = u32::from(wg);
    (0..grid.div_ceil(wg))
        .flat_map(|g| {
            let size = wg.min(grid - g * wg);
            (0..size).map(move |t| g * size + t)
        })
        .collect()
}

/// Which of `n` elements a 1-D launch of an element-wise kernel writes.
fn written(via: Via, n: u32, wg: u16) -> Vec<bool> {
    let mut w = vec![false; n as usize];
    for i in hip_ids(grid_for(via, n, wg), wg) {
        if i < n {
            w[i as usize] = true;
        }
    }
    w
}

/// xorshift, as the interpreter's tests use.
struct Rng(u64);

impl Rng {
    fn next_u32(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }

    fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next_u32() as f32 / u32::MAX as f32)
    }
}

fn ulps(a: f32, b: f32) -> u32 {
    (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
}

fn ulps64(a: f64, b: f64) -> u64 {
    (a.to_bits() as i64).abs_diff(b.to_bits() as i64)
}

fn check_vector_add(dev: &Device, via: Via) {
    let (n, wg) = (1000u32, 256u16);
    let mut rng = Rng(7);
    let a: Vec<f32> = (0..n).map(|_| rng.f32(-100.0, 100.0)).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.f32(-100.0, 100.0)).collect();
    let (da, db) = (dev.input(&a), dev.input(&b));
    let dc = dev.output(n as usize, f32::NAN);
    let g = LaunchGeometry::linear(grid_for(via, n, wg), wg);
    dev.launch(via, "vector_add", g, |args| {
        args.set_buffer(0, &da).unwrap().set_buffer(1, &db).unwrap();
        args.set_buffer(2, &dc)
            .unwrap()
            .set_i32(3, n as i32)
            .unwrap();
    });
    let c: Vec<f32> = download(&dc, n as usize);
    let w = written(via, n, wg);
    for i in 0..n as usize {
        let want = if w[i] { a[i] + b[i] } else { f32::NAN };
        assert_eq!(
            c[i].to_bits(),
            want.to_bits(),
            "{} {via:?} c[{i}]",
            dev.target
        );
    }
    if via == Via::Aql {
        assert!(!w.iter().all(|&x| x), "the partial group leaves some");
    }
}

#[test]
fn vector_add() {
    each("compiled_kernels::vector_add", &BOTH, check_vector_add);
}

fn check_saxpy(dev: &Device, via: Via) {
    // The elements a partial group would redo are read and written by two groups at once,
    // so both queues run whole groups here; the bound check keeps them inside n.
    let (n, wg) = (777u32, 128u16);
    let mut rng = Rng(3);
    let x: Vec<f32> = (0..n).map(|_| rng.f32(-10.0, 10.0)).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.f32(-10.0, 10.0)).collect();
    let dx = dev.input(&x);
    let dy = dev.upload(MemoryKind::GttCoherent, &y);
    let g = LaunchGeometry::linear(n.next_multiple_of(u32::from(wg)), wg);
    dev.launch(via, "saxpy", g, |args| {
        args.set_f32(0, 2.5).unwrap().set_buffer(1, &dx).unwrap();
        args.set_buffer(2, &dy)
            .unwrap()
            .set_i32(3, n as i32)
            .unwrap();
    });
    let got: Vec<f32> = download(&dy, n as usize);
    for i in 0..n as usize {
        assert_eq!(
            got[i],
            2.5f32.mul_add(x[i], y[i]),
            "{} {via:?} y[{i}]",
            dev.target
        );
    }
}

#[test]
fn saxpy() {
    each("compiled_kernels::saxpy", &BOTH, check_saxpy);
}

fn check_reduce_sum_with_lds_and_barriers(dev: &Device, via: Via) {
    let n = 5000u32;
    let mut rng = Rng(11);
    let v: Vec<i32> = (0..n)
        .map(|_| (rng.next_u32() % 2001) as i32 - 1000)
        .collect();
    let dv = dev.input(&v);
    let out = dev.output(1, 0i32);
    let g = LaunchGeometry::linear(n.next_multiple_of(256), 256);
    dev.launch(via, "reduce_sum", g, |args| {
        args.set_buffer(0, &dv)
            .unwrap()
            .set_buffer(1, &out)
            .unwrap();
        args.set_i32(2, n as i32).unwrap();
    });
    assert_eq!(
        download::<i32>(&out, 1)[0],
        v.iter().sum::<i32>(),
        "{} {via:?}",
        dev.target
    );
}

#[test]
fn reduce_sum_with_lds_and_barriers() {
    each(
        "compiled_kernels::reduce_sum_with_lds_and_barriers",
        &BOTH,
        check_reduce_sum_with_lds_and_barriers,
    );
}

fn check_reduce_with_cross_lane_shuffles(dev: &Device, via: Via) {
    let n = 1000u32;
    let v: Vec<f32> = (0..n).map(|i| (i % 17) as f32 * 0.5).collect();
    let dv = dev.input(&v);
    let groups = n.div_ceil(256);
    let out = dev.output(groups as usize, f32::NAN);
    let g = LaunchGeometry::linear(groups * 256, 256);
    dev.launch(via, "reduce_shfl", g, |args| {
        args.set_buffer(0, &dv)
            .unwrap()
            .set_buffer(1, &out)
            .unwrap();
        args.set_i32(2, n as i32).unwrap();
    });
    let got: Vec<f32> = download(&out, groups as usize);
    let w = dev.lanes();
    for g in 0..groups as usize {
        // The kernel as HIP defines it for a wave of `w` lanes: `__shfl_down(v, off)` reads
        // lane + off within the wave, or keeps v past its end; lanes whose id is a multiple
        // of 64 publish. In wave64 that is the group's sum (multiples of 0.5 this small add
        // exactly in any order).
        let mut x: Vec<f32> = (0..256)
            .map(|t| v.get(g * 256 + t).copied().unwrap_or(0.0))
            .collect();
        let mut off = 32;
        while off > 0 {
            x = (0..256)
                .map(|t| x[t] + if t % w + off < w { x[t + off] } else { x[t] })
                .collect();
            off >>= 1;
        }
        let want: f32 = (0..256).step_by(64).map(|t| x[t]).sum();
        assert_eq!(got[g], want, "{} {via:?} group {g}", dev.target);
    }
}

#[test]
fn reduce_with_cross_lane_shuffles() {
    each(
        "compiled_kernels::reduce_with_cross_lane_shuffles",
        &BOTH,
        check_reduce_with_cross_lane_shuffles,
    );
}

fn check_tiled_matrix_multiply_in_shared_memory(dev: &Device, via: Via) {
    // A 2-D grid of 16x16 tiles; n is not a multiple of the tile. The kernel loads whole
    // tiles, so the grid covers whole tiles on both queues.
    let n = 40usize;
    let mut rng = Rng(5);
    let a: Vec<f32> = (0..n * n).map(|_| rng.f32(-1.0, 1.0)).collect();
    let b: Vec<f32> = (0..n * n).map(|_| rng.f32(-1.0, 1.0)).collect();
    let (da, db) = (dev.input(&a), dev.input(&b));
    let dc = dev.output(n * n, f32::NAN);
    let tiles = n.div_ceil(16) as u32 * 16;
    let g = LaunchGeometry {
        grid: [tiles, tiles, 1],
        workgroup: [16, 16, 1],
        dynamic_lds: 0,
    };
    dev.launch(via, "matmul_tiled", g, |args| {
        args.set_buffer(0, &da).unwrap().set_buffer(1, &db).unwrap();
        args.set_buffer(2, &dc)
            .unwrap()
            .set_i32(3, n as i32)
            .unwrap();
    });
    let c: Vec<f32> = download(&dc, n * n);
    for r in 0..n {
        for col in 0..n {
            // The kernel accumulates in k order with fused multiply-adds.
            let acc = (0..n).fold(0.0f32, |acc, k| a[r * n + k].mul_add(b[k * n + col], acc));
            let got = c[r * n + col];
            assert!(
                (got - acc).abs() <= 1e-5 * acc.abs().max(1.0),
                "{} {via:?} C[{r}][{col}] = {got}, want {acc}",
                dev.target
            );
        }
    }
}

#[test]
fn tiled_matrix_multiply_in_shared_memory() {
    each(
        "compiled_kernels::tiled_matrix_multiply_in_shared_memory",
        &BOTH,
        check_tiled_matrix_multiply_in_shared_memory,
    );
}

fn check_global_64_bit_and_lds_atomics(dev: &Device, via: Via) {
    let n = 3000u32;
    let mut rng = Rng(21);
    let v: Vec<i32> = (0..n)
        .map(|_| (rng.next_u32() % 100_000) as i32 - 20_000)
        .collect();
    let dv = dev.input(&v);
    let init32: [i32; 11] = [0, 0, i32::MIN, i32::MAX, -1, 0, 0, 0, 0, 0, i32::MIN];
    // The atomics' targets are in VRAM, where a GPU carries out every kind of atomic (over
    // PCIe, host memory takes only add, swap and compare-and-swap).
    let vram = MemoryKind::HostVisibleVram;
    let g32 = dev.upload(vram, &init32);
    let g64 = dev.upload(vram, &[0u64; 2]);
    let gf = dev.upload(vram, &[0f32]);
    let hist = dev.upload(vram, &[0i32; 16]);
    let g = LaunchGeometry::linear(n.next_multiple_of(128), 128);
    dev.launch(via, "atomics", g, |args| {
        args.set_buffer(0, &dv)
            .unwrap()
            .set_buffer(1, &g32)
            .unwrap();
        args.set_buffer(2, &g64)
            .unwrap()
            .set_buffer(3, &gf)
            .unwrap();
        args.set_buffer(4, &hist)
            .unwrap()
            .set_i32(5, n as i32)
            .unwrap();
    });
    let p = &dev.target;
    let r: Vec<i32> = download(&g32, 11);
    let sum = v.iter().fold(0i32, |a, &x| a.wrapping_add(x));
    assert_eq!(r[0], sum, "{p} {via:?} add");
    assert_eq!(r[1], sum.wrapping_neg(), "{p} {via:?} sub");
    assert_eq!(r[2], *v.iter().max().unwrap(), "{p} {via:?} max");
    assert_eq!(r[3], *v.iter().min().unwrap(), "{p} {via:?} min");
    let and = v.iter().fold(-1, |a, &x| a & !(1 << (x & 31)));
    assert_eq!(r[4], and, "{p} {via:?} and");
    let or = v.iter().fold(0, |a, &x| a | 1 << (x & 31));
    assert_eq!(r[5], or, "{p} {via:?} or");
    assert_eq!(r[6], v.iter().fold(0, |a, &x| a ^ x), "{p} {via:?} xor");
    // inc wraps at 1000: n increments from 0.
    assert_eq!(r[7] as u32, n % 1001, "{p} {via:?} inc");
    assert!(v.contains(&r[8]), "{p} {via:?} exch");
    let cas = v.iter().fold(0i32, |a, &x| a.wrapping_add(2 * x));
    assert_eq!(r[9], cas, "{p} {via:?} cmpswap loop");
    let lds_max = v.iter().map(|&x| x as u32).max().unwrap() as i32;
    assert_eq!(r[10], lds_max, "{p} {via:?} LDS max (unsigned)");
    let r64: Vec<u64> = download(&g64, 2);
    let add64 = v
        .iter()
        .fold(0u64, |a, &x| a.wrapping_add(((x & 0xFF) as u64) << 32 | 1));
    assert_eq!(r64[0], add64, "{p} {via:?} 64-bit add");
    let max64 = v
        .iter()
        .map(|&x| (x as u64).wrapping_mul(0x1_0000_0001))
        .max()
        .unwrap();
    assert_eq!(r64[1], max64, "{p} {via:?} 64-bit umax");
    let f = download::<f32>(&gf, 1)[0];
    let want_f: f32 = v.iter().map(|&x| (x & 7) as f32 * 0.5).sum();
    assert_eq!(f, want_f, "{p} {via:?} float add (exact: multiples of 0.5)");
    let h: Vec<i32> = download(&hist, 16);
    for bin in 0..16 {
        let want = v.iter().filter(|&&x| x & 15 == bin).count() as i32;
        assert_eq!(h[bin as usize], want, "{p} {via:?} LDS histogram bin {bin}");
    }
}

#[test]
fn global_64_bit_and_lds_atomics() {
    each(
        "compiled_kernels::global_64_bit_and_lds_atomics",
        &BOTH,
        check_global_64_bit_and_lds_atomics,
    );
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

fn check_divergent_loops(dev: &Device, via: Via) {
    let (n, wg) = (700u32, 64u16);
    let v: Vec<u32> = (0..n).map(|i| i * 7 + 1).collect();
    let dv = dev.input(&v);
    let steps = dev.output(n as usize, u32::MAX);
    let peak = dev.output(n as usize, u32::MAX);
    let g = LaunchGeometry::linear(grid_for(via, n, wg), wg);
    dev.launch(via, "divergent", g, |args| {
        args.set_buffer(0, &dv)
            .unwrap()
            .set_buffer(1, &steps)
            .unwrap();
        args.set_buffer(2, &peak)
            .unwrap()
            .set_i32(3, n as i32)
            .unwrap();
    });
    let s: Vec<u32> = download(&steps, n as usize);
    let p: Vec<u32> = download(&peak, n as usize);
    let w = written(via, n, wg);
    for i in 0..n as usize {
        let (ws, wp) = if w[i] {
            let (ws, wp) = collatz(v[i]);
            (ws, if i & 1 == 1 { wp } else { wp ^ 0x5a5a })
        } else {
            (u32::MAX, u32::MAX)
        };
        assert_eq!(s[i], ws, "{} {via:?} steps[{i}]", dev.target);
        assert_eq!(p[i], wp, "{} {via:?} peak[{i}]", dev.target);
    }
}

#[test]
fn divergent_loops() {
    each(
        "compiled_kernels::divergent_loops",
        &BOTH,
        check_divergent_loops,
    );
}

fn check_sqrtf_expf_sinf_and_double_math(dev: &Device, via: Via) {
    let (n, wg) = (500u32, 128u16);
    let mut rng = Rng(9);
    let x: Vec<f32> = (0..n).map(|_| rng.f32(-20.0, 20.0)).collect();
    let dx = dev.input(&x);
    let out = dev.output(4 * n as usize, f32::NAN);
    let outd = dev.output(n as usize, f64::NAN);
    let g = LaunchGeometry::linear(grid_for(via, n, wg), wg);
    dev.launch(via, "math", g, |args| {
        args.set_buffer(0, &dx)
            .unwrap()
            .set_buffer(1, &out)
            .unwrap();
        args.set_buffer(2, &outd)
            .unwrap()
            .set_i32(3, n as i32)
            .unwrap();
    });
    let o: Vec<f32> = download(&out, 4 * n as usize);
    let od: Vec<f64> = download(&outd, n as usize);
    let w = written(via, n, wg);
    for i in 0..n as usize {
        if !w[i] {
            assert!(o[4 * i..4 * i + 4].iter().all(|v| v.is_nan()), "{i}");
            assert!(od[i].is_nan(), "{} {via:?} outd[{i}] written", dev.target);
            continue;
        }
        let v = x[i];
        let checks = [
            ("sqrtf", o[4 * i], v.abs().sqrt()),
            ("expf", o[4 * i + 1], (v * 0.25).exp()),
            ("sinf", o[4 * i + 2], v.sin()),
            ("div", o[4 * i + 3], v / (1.0 + v * v)),
        ];
        for (what, got, want) in checks {
            assert!(
                ulps(got, want) <= 2,
                "{} {via:?} {what}({v}) = {got}, want {want}",
                dev.target
            );
        }
        let wantd = f64::from(v.abs()).sqrt() / (f64::from(v) + 3.0);
        assert!(
            (od[i] - wantd).abs() <= 1e-15 * wantd.abs(),
            "{} {via:?} double {v}: {} vs {wantd}",
            dev.target,
            od[i]
        );
    }
}

#[test]
fn sqrtf_expf_sinf_and_double_math() {
    each(
        "compiled_kernels::sqrtf_expf_sinf_and_double_math",
        &BOTH,
        check_sqrtf_expf_sinf_and_double_math,
    );
}

fn check_double_precision_sin_cos_exp(dev: &Device, via: Via) {
    let wg = 64u16;
    let mut rng = Rng(17);
    // Small, medium and huge arguments (the last need 2/pi's far bits).
    let x: Vec<f64> = (0..250)
        .map(|i| {
            let r = f64::from(rng.f32(-1.0, 1.0));
            [3.0, 1e4, 1e12, 1e300][i % 4] * r
        })
        .collect();
    let n = x.len() as u32;
    let dx = dev.input(&x);
    let out = dev.output(3 * n as usize, f64::NAN);
    let g = LaunchGeometry::linear(grid_for(via, n, wg), wg);
    dev.launch(via, "math_f64", g, |args| {
        args.set_buffer(0, &dx)
            .unwrap()
            .set_buffer(1, &out)
            .unwrap();
        args.set_i32(2, n as i32).unwrap();
    });
    let o: Vec<f64> = download(&out, 3 * n as usize);
    let w = written(via, n, wg);
    for i in 0..n as usize {
        let v = x[i];
        for (k, (what, want)) in [
            ("sin", v.sin()),
            ("cos", v.cos()),
            ("exp", (v * 1e-3).exp()),
        ]
        .into_iter()
        .enumerate()
        {
            let got = o[3 * i + k];
            if !w[i] {
                assert!(got.is_nan(), "{} {via:?} {what}[{i}] written", dev.target);
            } else if !want.is_finite() {
                assert_eq!(got, want, "{} {via:?} {what}({v})", dev.target);
            } else {
                assert!(
                    ulps64(got, want) <= 2,
                    "{} {via:?} {what}({v}) = {got}, want {want}",
                    dev.target
                );
            }
        }
    }
}

#[test]
fn double_precision_sin_cos_exp() {
    each(
        "compiled_kernels::double_precision_sin_cos_exp",
        &BOTH,
        check_double_precision_sin_cos_exp,
    );
}

fn check_dynamic_shared_memory(dev: &Device, via: Via) {
    let (n, wg) = (1000u32, 192u16);
    let v: Vec<i32> = (0..n as i32).map(|i| i * 3 - 5).collect();
    let dv = dev.input(&v);
    let out = dev.output(n as usize, i32::MIN);
    let g = LaunchGeometry {
        dynamic_lds: 4 * u32::from(wg),
        ..LaunchGeometry::linear(n.next_multiple_of(u32::from(wg)), wg)
    };
    dev.launch(via, "dyn_shared_reverse", g, |args| {
        args.set_buffer(0, &dv)
            .unwrap()
            .set_buffer(1, &out)
            .unwrap();
        args.set_i32(2, n as i32).unwrap();
    });
    let got: Vec<i32> = download(&out, n as usize);
    let wg = usize::from(wg);
    for i in 0..n as usize {
        let base = i / wg * wg;
        let src = base + wg - 1 - (i - base);
        let want = if src < n as usize { v[src] } else { -1 };
        assert_eq!(got[i], want, "{} {via:?} out[{i}]", dev.target);
    }
}

#[test]
fn dynamic_shared_memory() {
    each(
        "compiled_kernels::dynamic_shared_memory",
        &BOTH,
        check_dynamic_shared_memory,
    );
}

fn check_three_dimensional_ids(dev: &Device, via: Via) {
    let (wg, groups) = ([4u16, 2, 4], [3u32, 4, 2]);
    let grid: [u32; 3] = std::array::from_fn(|d| u32::from(wg[d]) * groups[d]);
    let items = grid.iter().product::<u32>() as usize;
    let out = dev.output(2 * items, u32::MAX);
    let g = LaunchGeometry {
        grid,
        workgroup: wg,
        dynamic_lds: 0,
    };
    dev.launch(via, "ids3d", g, |args| {
        args.set_buffer(0, &out).unwrap();
    });
    let got: Vec<u32> = download(&out, 2 * items);
    let w = wg.map(u32::from);
    for z in 0..grid[2] {
        for y in 0..grid[1] {
            for x in 0..grid[0] {
                let lin = ((z * grid[1] + y) * grid[0] + x) as usize;
                let (tx, ty, tz) = (x % w[0], y % w[1], z % w[2]);
                let (bx, by, bz) = (x / w[0], y / w[1], z / w[2]);
                assert_eq!(
                    got[2 * lin],
                    tx | ty << 10 | tz << 20,
                    "{} {via:?} threadIdx at {x},{y},{z}",
                    dev.target
                );
                assert_eq!(
                    got[2 * lin + 1],
                    bx | by << 10 | bz << 20,
                    "{} {via:?} blockIdx at {x},{y},{z}",
                    dev.target
                );
            }
        }
    }
}

#[test]
fn three_dimensional_ids() {
    each(
        "compiled_kernels::three_dimensional_ids",
        &BOTH,
        check_three_dimensional_ids,
    );
}

fn check_lane_intrinsics(dev: &Device, via: Via) {
    let n = 200u32;
    let v: Vec<i32> = (0..n as i32).map(|i| (i * 13) % 7 - 3).collect();
    let dv = dev.input(&v);
    let waves = n.div_ceil(64) as usize;
    let ballots = dev.output(waves, 0u64);
    let out = dev.output(n as usize, i32::MIN);
    let g = LaunchGeometry::linear(waves as u32 * 64, 64);
    dev.launch(via, "lanes", g, |args| {
        args.set_buffer(0, &dv)
            .unwrap()
            .set_buffer(1, &ballots)
            .unwrap();
        args.set_buffer(2, &out)
            .unwrap()
            .set_i32(3, n as i32)
            .unwrap();
    });
    let got: Vec<i32> = download(&out, n as usize);
    let b: Vec<u64> = download(&ballots, waves);
    let val = |i: usize| if i < n as usize { v[i] } else { 0 };
    let lanes = dev.lanes();
    let ballot = |wave: usize| -> u64 {
        (0..lanes)
            .filter(|&l| val(wave * lanes + l) > 0)
            .fold(0, |a, l| a | 1 << l)
    };
    for slot in 0..waves {
        // Lane 0 of each wave starting in this 64-item slot writes it: in wave32 two waves
        // race for each slot, and either may be last.
        let candidates: Vec<u64> = (slot * 64 / lanes..(slot + 1) * 64 / lanes)
            .map(ballot)
            .collect();
        assert!(
            candidates.contains(&b[slot]),
            "{} {via:?} ballot of slot {slot}: {:#x}",
            dev.target,
            b[slot]
        );
    }
    for i in 0..n as usize {
        let (wave, l) = (i / lanes, i % lanes);
        let x = val(wave * lanes + (l ^ 5));
        let e = ballot(wave).count_ones() as i32 + l as i32 * 1000 + val(wave * lanes) * 7 + x * 3;
        assert_eq!(got[i], e, "{} {via:?} lane {i}", dev.target);
    }
}

#[test]
fn lane_intrinsics() {
    each(
        "compiled_kernels::lane_intrinsics",
        &BOTH,
        check_lane_intrinsics,
    );
}

/// `x` rounded to the nearest half-precision value (ties to even), as a float.
fn round_to_f16(x: f32) -> f32 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let a = x.abs();
    // The spacing of halfs around `a`: 2^(e-10) for normals (e >= -14), 2^-24 below.
    let e = ((a.to_bits() >> 23) as i32 - 127).max(-14);
    let ulp = 2f32.powi(e - 10);
    let r = (a / ulp).round_ties_even() * ulp;
    let r = if r > 65504.0 { f32::INFINITY } else { r };
    r.copysign(x)
}

fn check_halfs_and_integer_conversions(dev: &Device, via: Via) {
    let (n, wg) = (250u32, 64u16);
    let mut rng = Rng(99);
    let x: Vec<f32> = (0..n).map(|_| rng.f32(-50.0, 50.0)).collect();
    let dx = dev.input(&x);
    let out = dev.output(n as usize, f32::NAN);
    let g = LaunchGeometry::linear(grid_for(via, n, wg), wg);
    dev.launch(via, "halfs", g, |args| {
        args.set_buffer(0, &dx)
            .unwrap()
            .set_buffer(1, &out)
            .unwrap();
        args.set_i32(2, n as i32).unwrap();
    });
    let got: Vec<f32> = download(&out, n as usize);
    let w = written(via, n, wg);
    for i in 0..n as usize {
        if !w[i] {
            assert!(got[i].is_nan(), "{} {via:?} out[{i}] written", dev.target);
            continue;
        }
        let h = round_to_f16(x[i]);
        // g = h * 1.5 + 0.25 in half precision (the product and sum are exact in f32).
        let g = round_to_f16(h.mul_add(1.5, 0.25));
        let k = (x[i] * 3.0) as i32;
        let want = g + (k % 7) as f32 + ((k as u32) >> 3) as f32;
        assert!(
            ulps(got[i], want) <= 1,
            "{} {via:?} halfs({}) = {}, want {want}",
            dev.target,
            x[i],
            got[i]
        );
    }
}

#[test]
fn halfs_and_integer_conversions() {
    each(
        "compiled_kernels::halfs_and_integer_conversions",
        &BOTH,
        check_halfs_and_integer_conversions,
    );
}

fn check_private_arrays_in_scratch(dev: &Device, via: Via) {
    for name in ["scratch_array", "scratch_spill"] {
        let (n, wg) = (300u32, 128u16);
        let idx: Vec<i32> = (0..n).map(|i| ((i * 37) % 211) as i32).collect();
        let di = dev.input(&idx);
        let out = dev.output(n as usize, i32::MIN);
        let g = LaunchGeometry::linear(n.next_multiple_of(u32::from(wg)), wg);
        dev.launch(via, name, g, |args| {
            args.set_buffer(0, &di)
                .unwrap()
                .set_buffer(1, &out)
                .unwrap();
            args.set_i32(2, n as i32).unwrap();
        });
        let got: Vec<i32> = download(&out, n as usize);
        for i in 0..n as usize {
            let j = idx[i];
            let want = if name == "scratch_array" {
                (0..8)
                    .map(|k| ((j + k * 5) & 63) * i as i32 + 7)
                    .sum::<i32>()
            } else {
                let mut p: Vec<i32> = (0..200).map(|k| k * (i as i32 + 1)).collect();
                p[(j % 200) as usize] += 1000;
                p[((j * 7) % 200) as usize] ^= 0x55;
                (0..200)
                    .step_by(13)
                    .map(|k| p[((j + k) % 200) as usize])
                    .sum()
            };
            assert_eq!(got[i], want, "{} {via:?} {name}[{i}]", dev.target);
        }
    }
}

#[test]
fn private_arrays_in_scratch() {
    each(
        "compiled_kernels::private_arrays_in_scratch",
        &BOTH,
        check_private_arrays_in_scratch,
    );
}

fn check_code_object_v5_dims_from_hidden_arguments(dev: &Device, via: Via) {
    // blockDim and gridDim come from the hidden arguments kfdrt fills at dispatch.
    let co = fixture(
        &dev.gpu,
        include_bytes!("../kfd-emu/isa/tests/kernels/kernels_v5-gfx90a.co"),
        include_bytes!("../kfd-emu/isa/tests/kernels/kernels_v5-gfx942.co"),
        include_bytes!("../kfd-emu/isa/tests/kernels/kernels_v5-gfx1100.co"),
    )
    .expect("the v5 kernels are built for every target the v4 ones are");
    let (wg, grid) = ([8u16, 4, 1], [24u32, 12, 1]);
    let items = (grid[0] * grid[1]) as usize;
    let out = dev.output(4 * items, u32::MAX);
    let g = LaunchGeometry {
        grid,
        workgroup: wg,
        dynamic_lds: 0,
    };
    dev.launch_from(&co, via, "dims_v5", g, |args| {
        args.set_buffer(0, &out).unwrap();
    });
    let got: Vec<u32> = download(&out, 4 * items);
    for y in 0..grid[1] {
        for x in 0..grid[0] {
            let i = (y * grid[0] + x) as usize;
            let p = &dev.target;
            assert_eq!(got[4 * i], 8 | 4 << 16, "{p} {via:?} blockDim at {x},{y}");
            assert_eq!(
                got[4 * i + 1],
                3 | 3 << 16,
                "{p} {via:?} gridDim at {x},{y}"
            );
            let tid = (x % 8) | ((y % 4) << 16);
            assert_eq!(got[4 * i + 2], tid, "{p} {via:?} threadIdx at {x},{y}");
            let bid = (x / 8) | ((y / 4) << 16);
            assert_eq!(got[4 * i + 3], bid, "{p} {via:?} blockIdx at {x},{y}");
        }
    }
}

#[test]
fn code_object_v5_dims_from_hidden_arguments() {
    each(
        "compiled_kernels::code_object_v5_dims_from_hidden_arguments",
        &BOTH,
        check_code_object_v5_dims_from_hidden_arguments,
    );
}

/// A device-scope fence before an atomic (HIP's `__threadfence(); atomicAdd(...)`): on gfx90a
/// the fence is `buffer_wbinvl1_vol`, two words long. Decoded as one word, its second word ran
/// as an instruction of its own (a `v_cndmask_b32` clobbering the atomic's operand), so the
/// count came out as garbage, or the atomic faulted at a wrong address.
#[test]
fn a_fence_before_an_atomic_counts_every_work_item() {
    use kfdrt::{Dispatch, KernelArgs, MemoryKind};
    let Some(kfd) = common::under_test(
        "compiled_kernels::a_fence_before_an_atomic_counts_every_work_item",
        Preset::Gfx90a,
        1,
        &["fence"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = common::load_for(&gpu, "fence");
    let k = co.kernel("fence_then_count").unwrap();
    let n = 256u32;
    let out = gpu
        .alloc(4 * u64::from(n), MemoryKind::GttCoherent)
        .unwrap();
    let counter = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let flag = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let mut a = KernelArgs::new(&k).unwrap();
    a.set_buffer(0, &out).unwrap();
    a.set_buffer(1, &counter).unwrap();
    a.set_buffer(2, &flag).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.dispatch(&Dispatch::linear(&k, n, 64).with_args(&a))
        .unwrap()
        .wait(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let word = |b: &kfdrt::Buffer| u32::from_le_bytes(b.to_vec().unwrap()[..4].try_into().unwrap());
    assert_eq!(word(&counter), n, "every work-item counted once");
    assert_eq!(word(&flag), 1);
    let ids: Vec<u32> = out
        .to_vec()
        .unwrap()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert!(ids.iter().enumerate().all(|(i, &v)| v == i as u32));
}

/// An MI200 does not carry out float atomics on fine-grained host memory over PCIe (HIP's
/// documentation of unsafe FP atomics: they silently do nothing there). The strict gfx90a drops
/// them on coherent GTT as the hardware does, while they add up in VRAM; the lenient emulator
/// carries them out everywhere.
#[test]
fn float_atomics_to_fine_grained_host_memory_are_dropped_on_a_strict_gfx90a() {
    use kfdrt::{Dispatch, KernelArgs, MemoryKind};
    const FP_ATOMIC: &[u8] = include_bytes!("fixtures/code_objects/fp_atomic-gfx90a.elf");
    let sum_after = |strict: bool, kind: MemoryKind| {
        let mut c = kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 1);
        c.strict = strict;
        let kfd = common::emulated_with(c);
        let gpu = kfd.gpu(0).unwrap();
        let co = gpu.load_code_object(FP_ATOMIC).unwrap();
        let k = co.kernel("fp_atomic_add").unwrap();
        let sum = gpu.alloc(4096, kind).unwrap();
        sum.write(0, &0f32.to_le_bytes()).unwrap();
        let mut a = KernelArgs::new(&k).unwrap();
        a.set_buffer(0, &sum).unwrap();
        let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        q.dispatch(&Dispatch::linear(&k, 64, 64).with_args(&a))
            .unwrap()
            .wait(Some(Duration::from_secs(30)))
            .unwrap();
        f32::from_le_bytes(sum.to_vec().unwrap()[..4].try_into().unwrap())
    };
    assert_eq!(sum_after(true, MemoryKind::GttCoherent), 0.0, "dropped");
    assert_eq!(sum_after(true, MemoryKind::HostVisibleVram), 64.0);
    assert_eq!(sum_after(false, MemoryKind::GttCoherent), 64.0, "lenient");
}
