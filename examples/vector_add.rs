//! Allocates three vectors, dispatches a vector-add kernel through an AQL queue, verifies the
//! result and prints timings.
//!
//! The kernel is hipcc's `vector_add` (`tests/fixtures/code_objects/kernels-gfx90a.co`) on a
//! gfx90a, real or emulated (kfd-emu runs its machine code); on another emulated GPU, a host
//! function bound to a kernel descriptor. `cargo run --release --example vector_add`; with
//! `KFDRT_CAPTURE=dir` the dispatch is captured, and `cargo run --bin kfdrt-replay dir`
//! replays it.

use kfdrt::emu::{GpuFault, WorkGroup};
use kfdrt::kernel_args::KernelArgs;
use kfdrt::{AqlQueueOptions, Dispatch, Kfd, MemoryKind};
use std::sync::Arc;
use std::time::Instant;

const N: u32 = 1 << 20;
const WORKGROUP: u16 = 256;

/// c[i] = a[i] + b[i] for the work-items of one work-group.
fn vector_add(wg: &WorkGroup<'_>) -> Result<(), GpuFault> {
    let a = wg.kernarg_u64(0)?;
    let b = wg.kernarg_u64(8)?;
    let c = wg.kernarg_u64(16)?;
    let n = wg.kernarg_u32(24)?;
    let first = wg.group_id[0] * wg.workgroup_size[0];
    let count = wg.workgroup_size[0].min(n.saturating_sub(first));
    for i in first..first + count {
        let off = u64::from(i) * 4;
        let x = f32::from_bits(wg.mem.read_u32(a + off)?);
        let y = f32::from_bits(wg.mem.read_u32(b + off)?);
        wg.mem.write_u32(c + off, (x + y).to_bits())?;
    }
    Ok(())
}

fn main() {
    // The program's own logger: kfdrt and kfd-emu log through `log` (KFDRT_LOG or RUST_LOG
    // pick what is shown, e.g. KFDRT_LOG=debug or KFDRT_LOG=kfdrt=trace).
    let filter = std::env::var("KFDRT_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    env_logger::Builder::new().parse_filters(&filter).init();
    if let Err(e) = run() {
        eprintln!("vector_add: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let kfd = Kfd::from_env()?;
    println!("device: {}", kfd.describe());
    let gpu = kfd
        .gpu(0)
        .ok_or_else(|| kfdrt::Error::NoDevice("no GPU".into()))?;
    println!(
        "GPU: {} ({} CUs)",
        gpu.info().gfx_target,
        gpu.info().compute_units
    );

    let t = Instant::now();
    let bytes = u64::from(N) * 4;
    let a = gpu.alloc(bytes, MemoryKind::HostVisibleVram)?;
    let b = gpu.alloc(bytes, MemoryKind::HostVisibleVram)?;
    let c = gpu.alloc(bytes, MemoryKind::HostVisibleVram)?;
    let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..N).map(|i| (2 * i) as f32 + 0.5).collect();
    a.write(0, as_bytes(&xs))?;
    b.write(0, as_bytes(&ys))?;
    println!(
        "allocate + upload {} MiB: {:?}",
        (3 * bytes) >> 20,
        t.elapsed()
    );

    let queue = gpu.create_aql_queue(AqlQueueOptions::default())?;
    let grid = N.div_ceil(u32::from(WORKGROUP)) * u32::from(WORKGROUP);
    let t = Instant::now();
    let _code; // keeps the code object loaded while its kernel runs
    let done = if gpu.info().gfx_target == "gfx90a" {
        let co = gpu.load_code_object(include_bytes!(
            "../tests/fixtures/code_objects/kernels-gfx90a.co"
        ))?;
        let kernel = co.kernel("vector_add")?;
        _code = co;
        println!("kernel: hipcc's vector_add, machine code");
        let mut args = KernelArgs::new(&kernel)?;
        args.set_buffer(0, &a)?
            .set_buffer(1, &b)?
            .set_buffer(2, &c)?;
        args.set_u32(3, N)?;
        queue.dispatch(&Dispatch::linear(&kernel, grid, WORKGROUP).with_args(&args))?
    } else if kfd.emulator().is_some() {
        let kernel = gpu.emulated_kernel("vector_add", 28, Arc::new(vector_add))?;
        println!("kernel: a host function (no vector_add code object for this target here)");
        let mut args = Vec::with_capacity(28);
        for p in [a.gpu_address(), b.gpu_address(), c.gpu_address()] {
            args.extend_from_slice(&p.to_le_bytes());
        }
        args.extend_from_slice(&N.to_le_bytes());
        // SAFETY: the arguments hold the addresses of `a`, `b` and `c`, which live until after
        // the wait below.
        let d = unsafe { Dispatch::linear(&kernel, grid, WORKGROUP).with_raw_args(&args) };
        queue.dispatch(&d)?
    } else {
        println!(
            "vector_add: no vector_add code object for {} (the checked-in one is for gfx90a)",
            gpu.info().gfx_target
        );
        return Ok(());
    };
    done.wait(Some(std::time::Duration::from_secs(60)))?;
    println!(
        "dispatch + wait ({} work-groups): {:?}",
        grid / u32::from(WORKGROUP),
        t.elapsed()
    );

    let mut out = vec![0u8; bytes as usize];
    c.read(0, &mut out)?;
    let mut bad = 0usize;
    for (i, chunk) in out.chunks_exact(4).enumerate() {
        let got = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        if got != xs[i] + ys[i] {
            bad += 1;
        }
    }
    if bad != 0 {
        return Err(format!("{bad} of {N} results are wrong").into());
    }
    // Round trip of an empty dispatch, to show queue overhead.
    let t = Instant::now();
    const EMPTY: u32 = 1000;
    for _ in 0..EMPTY {
        queue.barrier_and(&[])?.wait(None)?;
    }
    println!(
        "verified {N} sums; empty barrier round trip: {:?} each",
        t.elapsed() / EMPTY
    );
    Ok(())
}

fn as_bytes(v: &[f32]) -> &[u8] {
    // SAFETY: f32 has no padding and any byte view of it is valid; the length is exact.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}
