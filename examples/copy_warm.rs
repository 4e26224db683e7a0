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

/// A host `memcpy` of `size` bytes, warm; small sizes repeat so that the timer's cost does not
/// count.
fn memcpy(size: u64) -> kfdrt::Result<Duration> {
    let src = vec![1u8; size as usize];
    let mut dst = vec![0u8; size as usize];
    let reps = ((64u64 << 20) / size).max(1) as u32;
    Ok(best(5, || {
        for _ in 0..reps {
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&mut dst);
        }
        Ok(())
    })? / reps)
}

fn main() -> kfdrt::Result<()> {
    const SIZES: [u64; 3] = [4 << 10, 1 << 20, 64 << 20];
    // Before the device opens: an emulator's threads would share the CPUs with it.
    let host: Vec<Duration> = SIZES
        .iter()
        .map(|&s| memcpy(s))
        .collect::<kfdrt::Result<_>>()?;
    let kfd = Kfd::from_env()?;
    println!("device: {}", kfd.describe());
    let gpu = kfd
        .gpu(0)
        .ok_or_else(|| kfdrt::Error::NoDevice("no GPU".into()))?;
    let engine = gpu.copy_engine()?;
    let wait = Some(Duration::from_secs(120));
    for (size, memcpy) in SIZES.into_iter().zip(host) {
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
