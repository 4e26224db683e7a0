//! Allocator benchmarks on the emulated device:
//! - alloc+free pairs per second for 64 B .. 1 MiB, suballocated and dedicated (one KFD
//!   allocation each);
//! - the same suballocated pairs from 1, 2 and 4 threads at once (aggregate pairs per second,
//!   printed);
//! - KFD allocations behind 100 000 small live allocations (printed);
//! - peak/used ratio after a random workload (printed).
//!
//! `cargo bench --bench alloc`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::{AllocOptions, Kfd, MemoryKind};
use std::time::Duration;

/// An emulated MI210 with the default 2 MiB threshold, whatever the environment says.
fn device() -> Kfd {
    let kfd = Kfd::builder()
        .emulated(EmuConfig::new(Preset::Gfx90a, 1))
        .open()
        .expect("emulated device");
    kfd.set_suballocation_threshold(2 << 20);
    kfd
}

fn pairs(c: &mut Criterion) {
    let kfd = device();
    let gpu = kfd.gpu(0).expect("gpu");
    let mut g = c.benchmark_group("alloc_free_pair");
    g.throughput(Throughput::Elements(1));
    for size in [64u64, 4096, 65536, 1 << 20] {
        g.bench_with_input(BenchmarkId::new("suballocated", size), &size, |b, &size| {
            // Keep one live buffer so the pool's block stays (the steady state of a runtime).
            let _keep = gpu.alloc(64, MemoryKind::DeviceLocal).expect("alloc");
            b.iter(|| gpu.alloc(size, MemoryKind::DeviceLocal).expect("alloc"))
        });
        g.bench_with_input(BenchmarkId::new("dedicated", size), &size, |b, &size| {
            let opts = AllocOptions::new(MemoryKind::DeviceLocal).dedicated();
            b.iter(|| gpu.alloc_with(size, opts).expect("alloc"))
        });
    }
    g.finish();
}

/// Aggregate suballocated alloc+free pairs per second with `threads` threads at once.
fn threaded(_c: &mut Criterion) {
    let kfd = device();
    let gpu = kfd.gpu(0).expect("gpu");
    let _keep = gpu.alloc(64, MemoryKind::DeviceLocal).expect("alloc");
    const PAIRS: usize = 2_000_000;
    for threads in [1usize, 2, 4] {
        let start = std::time::Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                let gpu = gpu.clone();
                s.spawn(move || {
                    // Each thread's allocator shard keeps a block, as a runtime's would.
                    let _keep = gpu.alloc(64, MemoryKind::DeviceLocal).expect("alloc");
                    for i in 0..PAIRS / threads {
                        let size = 64u64 << (i % 7);
                        drop(gpu.alloc(size, MemoryKind::DeviceLocal).expect("alloc"));
                    }
                });
            }
        });
        let secs = start.elapsed().as_secs_f64();
        println!(
            "threads: {threads} thread(s), suballocated 64 B .. 4 KiB pairs: {:.2} M pairs/s in all",
            PAIRS as f64 / secs / 1e6
        );
    }
    // The same with a device per thread: what sharing one device costs (its reference count
    // and shard locks are then touched by one thread each).
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(move || {
                let kfd = device();
                let gpu = kfd.gpu(0).expect("gpu");
                let _keep = gpu.alloc(64, MemoryKind::DeviceLocal).expect("alloc");
                for i in 0..PAIRS / 4 {
                    let size = 64u64 << (i % 7);
                    drop(gpu.alloc(size, MemoryKind::DeviceLocal).expect("alloc"));
                }
            });
        }
    });
    println!(
        "threads: 4 threads, a device each: {:.2} M pairs/s in all",
        PAIRS as f64 / start.elapsed().as_secs_f64() / 1e6
    );
}

fn footprint(_c: &mut Criterion) {
    let kfd = device();
    let gpu = kfd.gpu(0).expect("gpu");
    let emu = kfd.emulator().expect("emulator").clone();
    // 100 000 small live allocations of mixed sizes.
    let sizes = [64u64, 128, 256, 1024, 4096];
    let live: Vec<_> = (0..100_000)
        .map(|i| {
            gpu.alloc(sizes[i % sizes.len()], MemoryKind::DeviceLocal)
                .expect("alloc")
        })
        .collect();
    let used: u64 = live.iter().map(|b| b.size()).sum();
    let chunks: u64 = live.iter().map(|b| b.allocated_size()).sum();
    let kfd_allocs = emu.stats().live_allocations;
    println!(
        "footprint: 100000 small live allocations ({:.1} MiB requested, {:.1} MiB in chunks) use \
         {kfd_allocs} KFD allocations ({:.3} per 2 MiB requested; fewest possible: {})",
        used as f64 / (1 << 20) as f64,
        chunks as f64 / (1 << 20) as f64,
        kfd_allocs as f64 / (used as f64 / (2 << 20) as f64),
        chunks.div_ceil(2 << 20)
    );
    drop(live);
    kfd.trim_memory();

    // Random workload: allocate and free randomly sized buffers; compare the KFD memory held at
    // its peak with the bytes requested at that moment.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut live = Vec::new();
    let mut requested = 0u64;
    let mut worst = 1.0f64;
    for _ in 0..200_000 {
        if live.len() > 2000 || (rand() % 3 == 0 && !live.is_empty()) {
            let i = (rand() as usize) % live.len();
            let b: kfdrt::Buffer = live.swap_remove(i);
            requested -= b.size();
        } else {
            let size = 64 + rand() % (256 << 10);
            let b = gpu.alloc(size, MemoryKind::DeviceLocal).expect("alloc");
            requested += b.size();
            live.push(b);
        }
        if live.len() == 2000 {
            let held = kfd.suballocator_blocks() as u64 * (2 << 20);
            worst = worst.max(held as f64 / requested as f64);
        }
    }
    let held = kfd.suballocator_blocks() as u64 * (2 << 20);
    println!(
        "fragmentation: random workload (64 B .. 256 KiB, ~2000 live): KFD memory held / requested = \
         {:.2} at the end, {:.2} at the worst full point",
        held as f64 / requested.max(1) as f64,
        worst
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    targets = pairs, threaded, footprint
}
criterion_main!(benches);
