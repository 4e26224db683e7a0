//! Copies through kfdrt's blit kernel (the shader copy path: real machine code on kfd-emu's wave
//! interpreter) next to a host `memcpy` of the same buffers: wall and CPU time per copy, the
//! interpreter's rate and the ratio. The figures in `kfd-emu/isa/README.md` come from this.
//!
//! `cargo run --release --example blit_speed [MiB ...]` (default: 1 and 64)

use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::{CopyPath, Kfd, MemoryKind};
use std::time::{Duration, Instant};

const WAIT: Option<Duration> = Some(Duration::from_secs(600));

/// User + system CPU time of the process so far, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: `rusage` is plain data, valid when zeroed.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage for getrusage to fill.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn main() -> kfdrt::Result<()> {
    // The program's own logger: kfdrt and kfd-emu log through `log` (KFDRT_LOG or RUST_LOG
    // pick what is shown, e.g. KFDRT_LOG=debug or KFDRT_LOG=kfdrt=trace).
    let filter = std::env::var("KFDRT_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    env_logger::Builder::new().parse_filters(&filter).init();
    let kfd = Kfd::builder()
        .emulated(EmuConfig::new(Preset::Gfx90a, 1))
        .open()?;
    let gpu = kfd
        .gpu(0)
        .ok_or_else(|| kfdrt::Error::NoDevice("no GPU".into()))?;
    let engine = gpu.copy_engine_preferring(CopyPath::Shader)?;
    let emu = kfd.emulator().expect("an emulated device").clone();
    let mut sizes: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("a size in MiB") << 20)
        .collect();
    if sizes.is_empty() {
        sizes = vec![1 << 20, 64 << 20];
    }
    println!(
        "blit kernel copy ({:?}) vs memcpy, per copy:",
        engine.path()
    );
    for kind in [MemoryKind::HostVisibleVram, MemoryKind::GttCoherent] {
        for &size in &sizes {
            let src = gpu.alloc(size, kind)?;
            let dst = gpu.alloc(size, kind)?;
            let data: Vec<u8> = (0..size).map(|i| ((i * 131) >> 3) as u8).collect();
            src.write(0, &data)?;
            dst.write(0, &vec![0u8; size as usize])?;
            let reps = (256u64 << 20).div_ceil(size).clamp(3, 50) as u32;
            // Warm: the code cache, the pages, the threads' cached mappings.
            engine.copy(&dst, 0, &src, 0, size, &[])?.wait(WAIT)?;
            let before = emu.stats().wave_instructions;
            let (cpu, wall) = (cpu_seconds(), Instant::now());
            for _ in 0..reps {
                engine.copy(&dst, 0, &src, 0, size, &[])?.wait(WAIT)?;
            }
            let wall = wall.elapsed().as_secs_f64() / f64::from(reps);
            let cpu = (cpu_seconds() - cpu) / f64::from(reps);
            let insts = (emu.stats().wave_instructions - before) / u64::from(reps);
            assert!(dst.to_vec()? == data, "the copy differs");
            let host = |b: &kfdrt::Buffer| b.as_ptr().expect("a host-visible buffer");
            let (s, d) = (host(&src), host(&dst));
            let native = Instant::now();
            for _ in 0..reps * 4 {
                // SAFETY: two distinct host-visible buffers of `size` bytes, alive here.
                unsafe { std::ptr::copy_nonoverlapping(s, d, size as usize) };
            }
            let native = native.elapsed().as_secs_f64() / f64::from(reps * 4);
            println!(
                "  {kind:?} {:>4} MiB: {:>9.3} ms ({:>8.3} ms CPU, {:>5.1} M wave-instructions/s, \
                 {:.2} s/GiB); memcpy {:>7.3} ms; {:.0}x",
                size >> 20,
                wall * 1e3,
                cpu * 1e3,
                insts as f64 / wall / 1e6,
                wall * (1u64 << 30) as f64 / size as f64,
                native * 1e3,
                wall / native
            );
        }
    }
    Ok(())
}
