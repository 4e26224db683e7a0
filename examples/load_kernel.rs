//! The path an ML runtime takes without HIP: load a code object a compiler produced (by default
//! the checked-in `hipcc --genco` output, `tests/fixtures/code_objects/kernels-gfx90a.co`), list
//! its kernels with their metadata, then run `vector_add` through kfdrt with the argument
//! builder and check the result against the CPU.
//!
//! `cargo run --example load_kernel [CODE_OBJECT]`
//!
//! On the emulated device the kernel's machine code runs on kfd-emu's wave interpreter.

use kfdrt::code_object::{CodeObject, KernelMetadata};
use kfdrt::kernel_args::KernelArgs;
use kfdrt::{AqlQueueOptions, Dispatch, Gpu, Kfd, MemoryKind};
use std::time::Duration;

const N: u32 = 4096;

fn main() {
    // The program's own logger: kfdrt and kfd-emu log through `log` (KFDRT_LOG or RUST_LOG
    // pick what is shown, e.g. KFDRT_LOG=debug or KFDRT_LOG=kfdrt=trace).
    let filter = std::env::var("KFDRT_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    env_logger::Builder::new().parse_filters(&filter).init();
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/code_objects/kernels-gfx90a.co"
        )
        .to_owned()
    });
    if let Err(e) = run(&path) {
        eprintln!("load_kernel: {e}");
        std::process::exit(1);
    }
}

fn run(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let kfd = Kfd::from_env()?;
    let gpu = kfd.gpu(0).ok_or("no GPU")?;
    println!("device: {}", kfd.describe());
    println!("GPU: {} ({})", gpu.target_id(), gpu.info().name);
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let co = gpu.load_code_object(&bytes)?;
    print_code_object(path, &co);
    let Ok(kernel) = co.kernel("vector_add") else {
        println!("\nno vector_add kernel in {path}: nothing to run");
        return Ok(());
    };
    run_vector_add(&gpu, &kernel)
}

fn print_code_object(path: &str, co: &CodeObject) {
    println!(
        "\n{path}: code object {} for {}, {} bytes at {:#x}",
        co.version(),
        co.target(),
        co.size(),
        co.base_address()
    );
    for s in co.segments() {
        let perms: String = [(s.readable, 'r'), (s.writable, 'w'), (s.executable, 'x')]
            .iter()
            .map(|&(on, c)| if on { c } else { '-' })
            .collect();
        println!(
            "  segment {perms} vaddr {:#07x} -> {:#x}, {} bytes",
            s.vaddr, s.address, s.mem_size
        );
    }
    let mut names: Vec<&str> = co.kernel_names().collect();
    names.sort_unstable();
    for name in names {
        match co.kernel_metadata(name) {
            Some(md) => print_kernel(md),
            None => println!("\nkernel {name} (no metadata)"),
        }
    }
}

fn print_kernel(md: &KernelMetadata) {
    println!(
        "\nkernel {}: kernarg {} bytes (align {}), LDS {} bytes, scratch {} bytes/item{}",
        md.name,
        md.kernarg_segment_size,
        md.kernarg_segment_align,
        md.group_segment_fixed_size,
        md.private_segment_fixed_size,
        if md.uses_dynamic_stack {
            " + dynamic stack"
        } else {
            ""
        }
    );
    println!(
        "  wave{}, {} SGPRs, {} VGPRs, {} AGPRs, work-groups up to {}",
        md.wavefront_size, md.sgpr_count, md.vgpr_count, md.agpr_count, md.max_flat_workgroup_size
    );
    for (i, a) in md.args.iter().enumerate() {
        println!(
            "  arg {i:2}: offset {:3} size {} {:26} {}{}",
            a.offset,
            a.size,
            a.kind.name(),
            a.name.as_deref().unwrap_or(""),
            a.address_space
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        );
    }
}

fn run_vector_add(gpu: &Gpu, kernel: &kfdrt::Kernel) -> Result<(), Box<dyn std::error::Error>> {
    let bytes = u64::from(N) * 4;
    let (a, b, c) = (
        gpu.alloc(bytes, MemoryKind::HostVisibleVram)?,
        gpu.alloc(bytes, MemoryKind::HostVisibleVram)?,
        gpu.alloc(bytes, MemoryKind::HostVisibleVram)?,
    );
    let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..N).map(|i| 2.0 * i as f32 + 0.5).collect();
    a.write(0, &to_bytes(&xs))?;
    b.write(0, &to_bytes(&ys))?;
    let mut args = KernelArgs::new(kernel)?;
    args.set_buffer(0, &a)?
        .set_buffer(1, &b)?
        .set_buffer(2, &c)?
        .set_u32(3, N)?;
    let queue = gpu.create_aql_queue(AqlQueueOptions::default())?;
    println!("\nrunning vector_add on {N} elements");
    let done = queue
        .dispatch(&Dispatch::linear(kernel, N, 256).with_args(&args))
        .and_then(|s| s.wait(Some(Duration::from_secs(60))));
    done?;
    let mut out = vec![0u8; bytes as usize];
    c.read(0, &mut out)?;
    let wrong = out
        .chunks_exact(4)
        .zip(xs.iter().zip(&ys))
        .filter(|(got, (x, y))| f32::from_le_bytes([got[0], got[1], got[2], got[3]]) != *x + *y)
        .count();
    if wrong != 0 {
        return Err(format!("{wrong} of {N} results differ from the CPU's").into());
    }
    println!("ok: all {N} results match the CPU");
    Ok(())
}

fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
