//! A compact rocminfo-like listing of the KFD's CPU and GPU nodes.
//!
//! `cargo run --example info` uses `/dev/kfd` when present and the emulated device otherwise
//! (`KFDRT_DEVICE=auto|hw|emu`; the emulator's part and GPU count come from `KFDRT_EMU_PRESET`
//! and `KFDRT_EMU_GPUS`).

use kfdrt::topology::HeapType;
use kfdrt::Kfd;

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

fn heap_name(h: HeapType) -> String {
    match h {
        HeapType::System => "system".into(),
        HeapType::FrameBufferPublic => "VRAM (host-visible)".into(),
        HeapType::FrameBufferPrivate => "VRAM".into(),
        HeapType::Other(v) => format!("heap {v}"),
    }
}

fn main() {
    // The program's own logger: kfdrt and kfd-emu log through `log` (KFDRT_LOG or RUST_LOG
    // pick what is shown, e.g. KFDRT_LOG=debug or KFDRT_LOG=kfdrt=trace).
    let filter = std::env::var("KFDRT_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    env_logger::Builder::new().parse_filters(&filter).init();
    let kfd = match Kfd::from_env() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("info: {e}");
            std::process::exit(1);
        }
    };
    let v = kfd.kfd_version();
    println!(
        "device: {} — KFD ABI {v} (kfdrt knows up to {})",
        kfd.describe(),
        kfdrt::KfdVersion::BINDINGS
    );
    println!("  what the driver's ABI has (a GPU may still lack it, e.g. SVM):");
    for f in kfdrt::Feature::ALL {
        let state = if kfd.supports(*f) { "yes" } else { "no, needs" };
        println!("    {:<44} {state} KFD {}", f.name(), f.since());
    }
    for gpu in kfd.gpus() {
        println!(
            "    GPU {:#06x}: shared virtual memory {}",
            gpu.id(),
            if gpu.info().supports_svm() {
                "supported"
            } else {
                "not supported (no HSA_CAP_SVMAPI_SUPPORTED)"
            }
        );
    }
    let topo = kfd.topology();
    for cpu in &topo.cpus {
        let mem: u64 = cpu.mem_banks.iter().map(|b| b.size_bytes).sum();
        println!(
            "node {}: CPU, {} cores, {} system memory",
            cpu.node,
            cpu.cores,
            human(mem)
        );
    }
    for gpu in kfd.gpus() {
        let i = gpu.info();
        println!(
            "node {}: GPU {} ({}), gpu_id {:#06x}, renderD{}",
            i.node, i.gfx_target, i.name, i.gpu_id, i.drm_render_minor
        );
        println!(
            "    {} CUs x {} SIMDs, wave{}, {} XCC(s), LDS {}, max clock {} MHz",
            i.compute_units,
            i.simd_per_cu,
            i.wave_size,
            i.num_xcc,
            human(u64::from(i.lds_bytes)),
            i.max_engine_clk_mhz
        );
        for bank in &i.mem_banks {
            println!(
                "    memory pool: {} {}",
                human(bank.size_bytes),
                heap_name(bank.heap)
            );
        }
        match gpu.available_memory() {
            Ok(free) => println!("    available VRAM: {}", human(free)),
            Err(e) => println!("    available VRAM: unknown ({e})"),
        }
        println!(
            "    SDMA: {} engine(s) + {} XGMI, {} queue slot(s) each",
            i.sdma_engines, i.sdma_xgmi_engines, i.sdma_queues_per_engine
        );
        println!(
            "    firmware: ME {} SDMA {}",
            i.fw_version, i.sdma_fw_version
        );
        for l in &i.links {
            println!(
                "    link -> node {}: {} (weight {}, up to {} MB/s{})",
                l.node_to,
                l.type_name(),
                l.weight,
                l.bandwidth_mbps.1,
                if l.atomics_64bit() {
                    ""
                } else {
                    ", no atomics"
                }
            );
        }
    }
    if kfd.gpus().is_empty() {
        println!("no GPU nodes");
    }
    for node in &topo.hidden_nodes {
        println!("node {node}: not allowed to this process (device cgroup; skipped)");
    }
}
