//! Copies of several sizes through SDMA and through the shader-copy fallback, verified, with
//! bandwidth printed.
//!
//! `cargo run --release --example copy`

use kfdrt::{CopyEngine, Kfd, MemoryKind};
use std::time::{Duration, Instant};

fn main() {
    // The program's own logger: kfdrt and kfd-emu log through `log` (KFDRT_LOG or RUST_LOG
    // pick what is shown, e.g. KFDRT_LOG=debug or KFDRT_LOG=kfdrt=trace).
    let filter = std::env::var("KFDRT_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    env_logger::Builder::new().parse_filters(&filter).init();
    if let Err(e) = run() {
        eprintln!("copy: {e}");
        std::process::exit(1);
    }
}

fn run_engine(
    name: &str,
    engine: &CopyEngine,
    gpu: &kfdrt::Gpu,
) -> Result<(), Box<dyn std::error::Error>> {
    println!("{name} ({:?}):", engine.path());
    for size in [4u64 << 10, 1 << 20, 16 << 20, 64 << 20] {
        let src = gpu.alloc(size, MemoryKind::HostVisibleVram)?;
        let dst = gpu.alloc(size, MemoryKind::HostVisibleVram)?;
        let data: Vec<u8> = (0..size)
            .map(|i| (i.wrapping_mul(131) >> 3) as u8)
            .collect();
        src.write(0, &data)?;
        dst.write(0, &vec![0u8; size as usize])?;
        let t = Instant::now();
        engine
            .copy(&dst, 0, &src, 0, size, &[])?
            .wait(Some(Duration::from_secs(120)))?;
        let el = t.elapsed();
        if dst.to_vec()? != data {
            return Err(format!("{name}: {size}-byte copy differs").into());
        }
        println!(
            "  {:>9} bytes: {:>10.2?}  {:>8.2} GB/s  verified",
            size,
            el,
            size as f64 / el.as_secs_f64() / 1e9
        );
    }
    Ok(())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let kfd = Kfd::from_env()?;
    println!("device: {}", kfd.describe());
    let gpu = kfd
        .gpu(0)
        .ok_or_else(|| kfdrt::Error::NoDevice("no GPU".into()))?;
    run_engine("SDMA engine", &gpu.copy_engine()?, &gpu)?;
    match gpu.shader_copy_engine() {
        Ok(e) => run_engine("shader-copy fallback", &e, &gpu)?,
        Err(e) => println!("shader-copy fallback unavailable: {e}"),
    }
    Ok(())
}
