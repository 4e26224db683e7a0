//! Interpreter speed: wave-instructions per second on one core for a compute-heavy kernel
//! (tiled matrix multiply) and a memory-bound one (vector add, 1M elements), on all cores for
//! the vector add (work-groups spread over threads as kfd-emu does), and a 1 MiB copy by
//! kfdrt's blit kernel (also with work-groups interleaved in batches, as kfd-emu runs them);
//! each beside a native host loop doing the same work.
//!
//! Run: `cargo bench -p kfd-emu-isa --bench interp`. Besides criterion's timings it prints the
//! wave-instruction rate of each kernel.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use kfd_emu_isa::{
    run_workgroup, run_workgroups, CodeCache, DispatchSetup, KernelDescriptor, Memory, PagedMemory,
    RunControl, Target,
};
use object::{Object, ObjectSegment, ObjectSymbol};
use std::sync::Arc;
use std::time::Instant;

const CODE: u64 = 0x7F00_0000_0000;

struct Bench {
    mem: PagedMemory,
    code: Arc<CodeCache>,
    next: u64,
    symbols: Vec<(String, u64)>,
}

impl Bench {
    fn new() -> Bench {
        Bench::load(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/kernels/kernels-gfx90a.co"
        ))
    }

    fn load(path: &str) -> Bench {
        let data = std::fs::read(path).expect("code object");
        let file = object::File::parse(&*data).expect("elf");
        let mut mem = PagedMemory::new();
        for s in file.segments() {
            if s.size() > 0 {
                mem.map(CODE + s.address(), s.size());
                mem.write(CODE + s.address(), s.data().expect("data"))
                    .expect("load");
            }
        }
        let symbols = file
            .symbols()
            .filter_map(|s| Some((s.name().ok()?.to_string(), CODE + s.address())))
            .collect();
        Bench {
            mem,
            code: Arc::new(CodeCache::new(Target::Gfx90a)),
            next: 0x10_0000_0000,
            symbols,
        }
    }

    fn alloc(&mut self, data: &[u8]) -> u64 {
        let va = self.next;
        self.mem.map(va, data.len().max(1) as u64);
        self.mem.write(va, data).expect("write");
        self.next = (va + data.len() as u64 + 0x1FFF) & !0xFFF;
        va
    }

    fn setup(&mut self, kernel: &str, grid: [u32; 3], wg: [u16; 3], args: &[u8]) -> DispatchSetup {
        let ko = self
            .symbols
            .iter()
            .find(|(n, _)| n == &format!("{kernel}.kd"))
            .map(|s| s.1)
            .expect("kernel");
        let mut d = [0u8; 64];
        self.mem.read(ko, &mut d).expect("descriptor");
        let desc = KernelDescriptor::from_bytes(&d);
        let kernarg = self.alloc(args);
        let mut p = [0u8; 64];
        p[2] = if grid[1] > 1 { 2 } else { 1 };
        for k in 0..3 {
            p[4 + 2 * k..6 + 2 * k].copy_from_slice(&wg[k].to_le_bytes());
            p[12 + 4 * k..16 + 4 * k].copy_from_slice(&grid[k].to_le_bytes());
        }
        p[32..40].copy_from_slice(&ko.to_le_bytes());
        p[40..48].copy_from_slice(&kernarg.to_le_bytes());
        let pa = self.alloc(&p);
        DispatchSetup::from_aql_packet(Target::Gfx90a, &p, pa, desc, self.code.clone())
    }

    /// Runs the work-groups on `threads` threads (scratch slot = thread); returns
    /// wave-instructions.
    fn run_parallel(&self, s: &DispatchSetup, threads: usize) -> u64 {
        let groups: Vec<[u32; 3]> = s.workgroup_ids().collect();
        std::thread::scope(|scope| {
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    let groups = &groups;
                    scope.spawn(move || {
                        let c = RunControl {
                            scratch_slot: t as u32,
                            ..RunControl::default()
                        };
                        groups
                            .iter()
                            .skip(t)
                            .step_by(threads)
                            .map(|g| {
                                run_workgroup(s, *g, &self.mem, &c)
                                    .expect("run")
                                    .wave_instructions
                            })
                            .sum::<u64>()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).sum()
        })
    }

    /// Runs every work-group on this thread, `batch` consecutive ones interleaved at a time
    /// (as kfd-emu does); returns wave-instructions.
    fn run_batched(&self, s: &DispatchSetup, batch: usize) -> u64 {
        let groups: Vec<[u32; 3]> = s.workgroup_ids().collect();
        let c = RunControl::default();
        groups
            .chunks(batch)
            .map(|b| {
                run_workgroups(s, b, &self.mem, &c)
                    .expect("run")
                    .wave_instructions
            })
            .sum()
    }

    /// Runs every work-group on this thread; returns wave-instructions.
    fn run(&self, s: &DispatchSetup) -> u64 {
        let c = RunControl::default();
        s.workgroup_ids()
            .map(|g| {
                run_workgroup(s, g, &self.mem, &c)
                    .expect("run")
                    .wave_instructions
            })
            .sum()
    }
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn ptrs(p: &[u64], n: i32) -> Vec<u8> {
    let mut a: Vec<u8> = p.iter().flat_map(|x| x.to_le_bytes()).collect();
    a.extend_from_slice(&n.to_le_bytes());
    a
}

fn rate(name: &str, b: &Bench, s: &DispatchSetup) {
    rate_with(name, || b.run(s));
}

fn rate_with(name: &str, mut run: impl FnMut() -> u64) {
    let start = Instant::now();
    let mut insts = 0;
    let mut runs = 0;
    while start.elapsed().as_millis() < 1000 {
        insts += run();
        runs += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{name}: {:.1} M wave-instructions/s on one core ({} per run, {:.3} ms per run)",
        insts as f64 / secs / 1e6,
        insts / runs,
        secs * 1e3 / runs as f64
    );
}

fn matmul(c: &mut Criterion) {
    let n = 64usize;
    let mut b = Bench::new();
    let a: Vec<f32> = (0..n * n).map(|i| (i % 13) as f32 * 0.25).collect();
    let bm: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.5).collect();
    let (da, db, dc) = (
        b.alloc(&bytes(&a)),
        b.alloc(&bytes(&bm)),
        b.alloc(&vec![0; 4 * n * n]),
    );
    let s = b.setup(
        "matmul_tiled",
        [n as u32, n as u32, 1],
        [16, 16, 1],
        &ptrs(&[da, db, dc], n as i32),
    );
    let per_run = b.run(&s);
    rate("matmul_tiled 64x64 (gfx90a)", &b, &s);
    let mut g = c.benchmark_group("matmul_64");
    g.throughput(Throughput::Elements(per_run));
    g.bench_function("interpreter (wave-instructions)", |x| x.iter(|| b.run(&s)));
    g.bench_function("native host loop", |x| {
        x.iter(|| {
            let mut out = vec![0f32; n * n];
            for r in 0..n {
                for col in 0..n {
                    let mut acc = 0f32;
                    for k in 0..n {
                        acc = a[r * n + k].mul_add(bm[k * n + col], acc);
                    }
                    out[r * n + col] = acc;
                }
            }
            black_box(out)
        })
    });
    g.finish();
}

fn vector_add(c: &mut Criterion) {
    let n = 1usize << 20;
    let mut b = Bench::new();
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (n - i) as f32).collect();
    let (dx, dy, dz) = (
        b.alloc(&bytes(&x)),
        b.alloc(&bytes(&y)),
        b.alloc(&vec![0; 4 * n]),
    );
    let s = b.setup(
        "vector_add",
        [n as u32, 1, 1],
        [256, 1, 1],
        &ptrs(&[dx, dy, dz], n as i32),
    );
    let per_run = b.run(&s);
    rate("vector_add 1M (gfx90a)", &b, &s);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let start = Instant::now();
    let mut insts = 0;
    let mut runs = 0;
    while start.elapsed().as_millis() < 1000 {
        insts += b.run_parallel(&s, threads);
        runs += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "vector_add 1M (gfx90a) on {threads} threads: {:.1} M wave-instructions/s ({:.3} ms per run)",
        insts as f64 / secs / 1e6,
        secs * 1e3 / runs as f64
    );
    let mut g = c.benchmark_group("vector_add_1M");
    g.sample_size(10);
    g.throughput(Throughput::Elements(per_run));
    g.bench_function("interpreter (wave-instructions)", |x| x.iter(|| b.run(&s)));
    g.bench_function("native host loop", |bch| {
        bch.iter(|| {
            let z: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
            black_box(z)
        })
    });
    g.finish();
}

fn blit_copy(c: &mut Criterion) {
    let bytes = 1usize << 20;
    let mut b = Bench::load(concat!(env!("CARGO_MANIFEST_DIR"), "/../../blit/gfx90a.co"));
    let src: Vec<u8> = (0..bytes).map(|i| i as u8).collect();
    let (ds, dd) = (b.alloc(&src), b.alloc(&vec![0; bytes]));
    // kfdrt's launch: dwords / 64 groups capped at 1024, work-items striding through the rest.
    let items = (bytes / 4) as u64;
    let groups = items.div_ceil(64).clamp(1, 1024);
    let stride = (groups * 64) as u32;
    let mut args: Vec<u8> = [dd, ds, bytes as u64]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    args.extend_from_slice(&stride.to_le_bytes());
    args.extend_from_slice(&[0; 4]);
    let s = b.setup("kfdrt_blit_copy_aligned", [stride, 1, 1], [64, 1, 1], &args);
    let per_run = b.run(&s);
    rate("blit copy 1 MiB (gfx90a)", &b, &s);
    rate_with(
        "blit copy 1 MiB (gfx90a), work-groups in batches of 16",
        || b.run_batched(&s, 16),
    );
    let mut g = c.benchmark_group("blit_copy_1MiB");
    g.sample_size(10);
    g.throughput(Throughput::Elements(per_run));
    g.bench_function("interpreter (wave-instructions)", |x| x.iter(|| b.run(&s)));
    let mut dst = vec![0u8; bytes];
    g.bench_function("native host loop", |x| {
        x.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
    g.finish();
}

criterion_group!(benches, matmul, vector_add, blit_copy);
criterion_main!(benches);
