//! The machine a run was on: device, GPU, driver, firmware, kernel.

use kfdrt::{DriverKind, Gpu, Kfd};
use serde_json::{json, Value};

/// What `gpu` of `kfd` is, as JSON.
pub fn describe(kfd: &Kfd, gpu: &Gpu) -> Value {
    let i = gpu.info();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into());
    let kfdrt::KfdVersion { major, minor } = kfd.kfd_version();
    json!({
        "device": kfd.describe(),
        "emulated": kfd.kind() == DriverKind::Emulated,
        "gpus": kfd.gpus().len(),
        "gpu": i.name,
        "gfx_target": i.gfx_target,
        "gpu_id": gpu.id(),
        "compute_units": i.compute_units,
        "max_engine_clock_mhz": i.max_engine_clk_mhz,
        "cp_firmware": i.fw_version,
        "sdma_firmware": i.sdma_fw_version,
        "kfd_version": format!("{major}.{minor}"),
        "kernel": kernel,
        "kfdrt": env!("CARGO_PKG_VERSION"),
    })
}

/// Prints [`describe`]'s description under `tool`'s name; on kfd-emu, `emulated_note` follows
/// (what the emulator means for the tool's results).
pub fn print(tool: &str, m: &Value, emulated_note: &str) {
    let text = |k: &str| m[k].as_str().unwrap_or("").to_owned();
    println!("{tool} {}", text("kfdrt"));
    println!("  device:   {}", text("device"));
    println!(
        "  GPU:      {} ({}, id {:#x}), {} CUs, {} MHz max engine clock",
        text("gpu"),
        text("gfx_target"),
        m["gpu_id"].as_u64().unwrap_or(0),
        m["compute_units"],
        m["max_engine_clock_mhz"]
    );
    println!(
        "  driver:   KFD {}, CP firmware {}, SDMA firmware {}, Linux {}",
        text("kfd_version"),
        m["cp_firmware"],
        m["sdma_firmware"],
        text("kernel")
    );
    if m["emulated"].as_bool() == Some(true) {
        println!("  NOTE: this is kfd-emu, the emulated device, not GPU hardware: {emulated_note}");
    }
}
