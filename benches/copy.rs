//! Copy bandwidth on the emulated device next to a plain `memcpy` of the same sizes in the same
//! run (the ratio is the figure), and small-copy overhead.
//!
//! `cargo bench --bench copy`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::{Kfd, MemoryKind};
use std::time::Duration;

const WAIT: Option<Duration> = Some(Duration::from_secs(120));

fn bandwidth(c: &mut Criterion) {
    let kfd = Kfd::builder()
        .emulated(EmuConfig::new(Preset::Gfx90a, 1))
        .open()
        .expect("device");
    let gpu = kfd.gpu(0).expect("gpu");
    let sdma = gpu.copy_engine().expect("sdma");
    let shader = gpu.shader_copy_engine().expect("shader");
    let mut g = c.benchmark_group("copy");
    for size in [4u64 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20] {
        let src = gpu.alloc(size, MemoryKind::GttCoherent).expect("alloc");
        let dst = gpu.alloc(size, MemoryKind::GttCoherent).expect("alloc");
        src.write(0, &vec![1u8; size as usize]).expect("fill");
        dst.write(0, &vec![0u8; size as usize]).expect("touch");
        g.throughput(Throughput::Bytes(size));
        if size >= 16 << 20 {
            g.sample_size(10);
        }
        g.bench_with_input(BenchmarkId::new("sdma", size), &size, |b, &n| {
            b.iter(|| {
                sdma.copy(&dst, 0, &src, 0, n, &[])
                    .expect("copy")
                    .wait(WAIT)
                    .expect("wait")
            })
        });
        g.bench_with_input(BenchmarkId::new("shader", size), &size, |b, &n| {
            b.iter(|| {
                shader
                    .copy(&dst, 0, &src, 0, n, &[])
                    .expect("copy")
                    .wait(WAIT)
                    .expect("wait")
            })
        });
        let (s, d) = (src.as_ptr().expect("host"), dst.as_ptr().expect("host"));
        g.bench_with_input(BenchmarkId::new("memcpy", size), &size, |b, &n| {
            // SAFETY: both buffers are `n` bytes of host-visible memory, distinct allocations.
            b.iter(|| unsafe { std::ptr::copy_nonoverlapping(s, d, n as usize) })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    targets = bandwidth
}
criterion_main!(benches);
