//! Warm copies between buffers of one kind on one GPU (the pages already touched by an earlier
//! fill, as in a loop that reuses its buffers), beside a host `memcpy` of the same size in the
//! same run: the copy engine's cost without first-touch and allocation costs.
//!
//! `cargo run --release --example copy_warm` (KFDRT_EMU_STRICT=0 for the non-strict figures)

use kfdrt::{Kfd, MemoryKind};
use std::time::{Duration, Instant};

/// The best of `runs` timings of `f`.
fn best(runs: usize, mut f: impl FnMut() -> kfdrt::Result<()>) -> kfdrt::Result<Duration> {
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed());
    }
    Ok(best)
}

fn main() -> kfdrt::Result<()> {
    let kfd = Kfd::from_env()?;
    println!("device: {}", kfd.describe());
    let gpu = kfd
        .gpu(0)
        .ok_or_else(|| kfdrt::Error::NoDevice("no GPU".into()))?;
    let engine = gpu.copy_engine()?;
    let wait = Some(Duration::from_secs(120));
    for size in [4u64 << 10, 1 << 20, 64 << 20] {
        let src_host = vec![1u8; size as usize];
        let mut dst_host = vec![0u8; size as usize];
        // Small copies repeat, so that the timer's cost does not count.
        let reps = (64 << 20) / size as u32;
        let memcpy = best(5, || {
            for _ in 0..reps {
                dst_host.copy_from_slice(std::hint::black_box(&src_host));
                std::hint::black_box(&mut dst_host);
            }
            Ok(())
        })? / reps;
        println!(
            "{size:>9} bytes: memcpy {memcpy:>9.2?} ({:.2} GB/s)",
            size as f64 / memcpy.as_secs_f64() / 1e9
        );
        for kind in [
            MemoryKind::GttCoherent,
            MemoryKind::HostVisibleVram,
            MemoryKind::DeviceLocal,
        ] {
            let src = gpu.alloc(size, kind)?;
            let dst = gpu.alloc(size, kind)?;
            engine.fill(&src, 0, 0x0102_0304, size, &[])?.wait(wait)?;
            engine.fill(&dst, 0, 0, size, &[])?.wait(wait)?;
            let t = best(5, || engine.copy(&dst, 0, &src, 0, size, &[])?.wait(wait))?;
            println!(
                "           {kind:?}: {t:>9.2?} ({:.2} GB/s, {:.1}x memcpy)",
                size as f64 / t.as_secs_f64() / 1e9,
                t.as_secs_f64() / memcpy.as_secs_f64()
            );
        }
    }
    Ok(())
}
