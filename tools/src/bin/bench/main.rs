//! `kfdrt-bench`: what a GPU offers through kfdrt, measured the way a performance engineer
//! compares two machines: dispatch latency (round trips with percentiles and a histogram, batch
//! throughput, submit-to-start from the CP's timestamps), dispatch rate as queues are added, copy
//! bandwidth per engine and direction by size, and the GPU-to-GPU matrix. Results print as
//! tables, and optionally as JSON (`--json FILE`) and SVG plots (`--svg DIR`). Every run first
//! prints what it ran on (device, driver, firmware, clocks, kernel), and on kfd-emu says that the
//! numbers are the emulator's.
//!
//! ```text
//! cargo run --release -p kfdrt-tools --bin kfdrt-bench -- all --json run.json --svg plots/
//! ```

mod bandwidth;
mod latency;
mod plot;
mod stats;

use clap::{value_parser, Arg, Command};
use kfdrt::{DriverKind, Gpu, Kernel, Kfd};
use kfdrt_tools::machine;
use serde_json::{json, Value};
use std::path::PathBuf;

/// The empty kernel, per target (`kernels/build.sh`).
fn empty_kernel_object(target: &str) -> Option<&'static [u8]> {
    Some(match target {
        "gfx90a" => include_bytes!("../../../kernels/empty-gfx90a.co"),
        "gfx942" => include_bytes!("../../../kernels/empty-gfx942.co"),
        "gfx1100" => include_bytes!("../../../kernels/empty-gfx1100.co"),
        _ => return None,
    })
}

fn cli() -> Command {
    Command::new("kfdrt-bench")
        .about("Dispatch latency, queue scaling and copy bandwidth of a GPU through kfdrt")
        .arg(
            Arg::new("what")
                .value_parser(["all", "latency", "queues", "copy"])
                .default_value("all")
                .help("what to measure"),
        )
        .arg(
            Arg::new("gpu")
                .long("gpu")
                .value_parser(value_parser!(usize))
                .default_value("0")
                .help("the GPU (index in kfdrt's list) to measure"),
        )
        .arg(
            Arg::new("samples")
                .long("samples")
                .value_parser(value_parser!(usize))
                .default_value("2000")
                .help("round trips per latency figure"),
        )
        .arg(
            Arg::new("max-mib")
                .long("max-mib")
                .value_parser(value_parser!(u64).range(1..=4096))
                .default_value("16")
                .help("largest copy, in MiB"),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .value_parser(value_parser!(PathBuf))
                .help("write the results as JSON to this file"),
        )
        .arg(
            Arg::new("svg")
                .long("svg")
                .value_parser(value_parser!(PathBuf))
                .help("write latency.svg and bandwidth.svg into this directory"),
        )
}

fn main() {
    if let Err(e) = run() {
        eprintln!("kfdrt-bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args = cli().get_matches();
    let what = args
        .get_one::<String>("what")
        .map_or("all", String::as_str)
        .to_owned();
    let want = |w: &str| what == "all" || what == w;
    let samples = args.get_one::<usize>("samples").copied().unwrap_or(2000);
    let max = args.get_one::<u64>("max-mib").copied().unwrap_or(16) << 20;
    let index = args.get_one::<usize>("gpu").copied().unwrap_or(0);
    let kfd = Kfd::from_env().map_err(|e| format!("opening the device: {e}"))?;
    let gpus = kfd.gpus();
    let gpu = kfd
        .gpu(index)
        .ok_or_else(|| format!("no GPU {index} (there are {})", gpus.len()))?;
    let machine = machine::describe(&kfd, &gpu);
    machine::print(
        "kfdrt-bench",
        &machine,
        "the figures measure kfdrt's host side and the emulator on this CPU.",
    );
    let mut results = json!({ "machine": machine });
    let svg = args.get_one::<PathBuf>("svg").cloned();
    if let Some(dir) = &svg {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let title = |what: &str| {
        let emu = if kfd.kind() == DriverKind::Emulated {
            " (kfd-emu)"
        } else {
            ""
        };
        format!("{what}: {} {}{emu}", gpu.info().name, gpu.info().gfx_target)
    };

    // Each part stands alone: one that cannot run (no empty kernel for the target, no copy
    // engine) is reported and the others still run.
    let mut failed: Vec<Value> = Vec::new();
    let mut note = |part: &str, r: Result<(), String>| {
        if let Err(e) = r {
            eprintln!("kfdrt-bench: {part} not measured: {e}");
            failed.push(json!({ "part": part, "error": e }));
        }
    };
    if want("latency") || want("queues") {
        match empty_kernel(&gpu) {
            Err(e) => note("latency", Err(e)),
            Ok(kernel) => {
                if want("latency") {
                    note(
                        "latency",
                        (|| {
                            let l = latency::measure(&gpu, &kernel, samples)
                                .map_err(|e| e.to_string())?;
                            l.print();
                            results["latency"] = l.json();
                            if let Some(dir) = &svg {
                                let path = dir.join("latency.svg");
                                let t = title("empty-kernel round trips");
                                plot::latency(&path, &l.dispatch, &t)?;
                                println!("  plot: {}", path.display());
                            }
                            Ok(())
                        })(),
                    );
                }
                if want("queues") {
                    note(
                        "queues",
                        (|| {
                            let rows = latency::scaling(&gpu, &kernel, (samples / 4).max(100))
                                .map_err(|e| e.to_string())?;
                            latency::print_scaling(&rows);
                            results["queue_scaling"] = latency::scaling_json(&rows);
                            Ok(())
                        })(),
                    );
                }
            }
        }
    }
    if want("copy") {
        note(
            "copy",
            (|| {
                let series = bandwidth::measure(&gpu, max).map_err(|e| e.to_string())?;
                bandwidth::print(&series);
                results["bandwidth"] = bandwidth::json(&series);
                if let Some(dir) = &svg {
                    let path = dir.join("bandwidth.svg");
                    plot::bandwidth(&path, &series, &title("copy bandwidth"))?;
                    println!("  plot: {}", path.display());
                }
                if gpus.len() > 1 {
                    let m = bandwidth::matrix(&gpus, max).map_err(|e| e.to_string())?;
                    bandwidth::print_matrix(&m, max);
                    results["gpu_to_gpu_gb_per_s"] = json!(m);
                }
                Ok(())
            })(),
        );
    }
    let failures = failed.len();
    results["not_measured"] = Value::Array(failed);
    if let Some(path) = args.get_one::<PathBuf>("json") {
        let text = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("\nresults: {}", path.display());
    }
    if failures > 0 {
        return Err(format!("{failures} part(s) not measured"));
    }
    Ok(())
}

/// The empty kernel loaded on `gpu`.
fn empty_kernel(gpu: &Gpu) -> Result<Kernel, String> {
    let target = &gpu.info().gfx_target;
    let object = empty_kernel_object(target).ok_or_else(|| {
        format!("no empty kernel for {target} (there is for gfx90a, gfx942, gfx1100)")
    })?;
    let co = gpu
        .load_code_object(object)
        .map_err(|e| format!("loading the empty kernel: {e}"))?;
    co.kernel("kfdrt_bench_empty").map_err(|e| e.to_string())
}
