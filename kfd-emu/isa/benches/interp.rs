//! Interpreter speed: wave-instructions per second on one core for compute-heavy kernels
//! (a tiled 64x64 matrix multiply, and the `mlp` example's GEMM at 64x1024x1024) and a
//! memory-bound one (vector add, 1M elements), on all cores for
//! the vector add (work-groups spread over threads as kfd-emu does), and a 1 MiB copy by
//! kfdrt's blit kernel (also with work-groups interleaved in batches, as kfd-emu runs them);
//! each beside a native host loop doing the same work.
//!
//! Run: `cargo bench -p kfd-emu-isa --bench interp`. Besides criterion's timings it prints the
//! wave-instruction rate of each kernel.

mod workloads;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use kfd_emu_isa::DispatchSetup;
use std::time::Instant;
use workloads::Bench;

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
    let m = workloads::matmul();
    let (b, s) = (&m.bench, &m.setup);
    let per_run = b.run(s);
    m.check();
    rate("matmul_tiled 64x64 (gfx90a)", b, s);
    let mut g = c.benchmark_group("matmul_64");
    g.throughput(Throughput::Elements(per_run));
    g.bench_function("interpreter (wave-instructions)", |x| x.iter(|| b.run(s)));
    g.bench_function("native host loop", |x| x.iter(|| black_box(m.host())));
    g.finish();
}

fn gemm(c: &mut Criterion) {
    let g = workloads::gemm(64, 1024, 1024);
    let per_run = g.bench.run(&g.setup);
    g.check();
    rate("GEMM 64x1024x1024 (gfx90a)", &g.bench, &g.setup);
    let mut grp = c.benchmark_group("gemm_64x1024x1024");
    grp.sample_size(10);
    grp.throughput(Throughput::Elements(per_run));
    grp.bench_function("interpreter (wave-instructions)", |x| {
        x.iter(|| g.bench.run(&g.setup))
    });
    grp.bench_function("native host loop", |x| x.iter(|| black_box(g.host())));
    grp.finish();
}

fn vector_add(c: &mut Criterion) {
    let va = workloads::vector_add(1 << 20);
    let per_run = va.bench.run(&va.setup);
    va.check();
    let workloads::VectorAdd {
        bench: b,
        setup: s,
        x,
        y,
        ..
    } = va;
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
    let blit = workloads::blit(bytes);
    let per_run = blit.bench.run(&blit.setup);
    blit.check();
    let workloads::Blit {
        bench: b,
        setup: s,
        src,
        ..
    } = blit;
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

criterion_group!(benches, matmul, gemm, vector_add, blit_copy);
criterion_main!(benches);
