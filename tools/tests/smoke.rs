//! `kfdrt-bench` runs from its command line on the device `KFDRT_DEVICE` selects (kfd-emu here)
//! and writes what it says: the tables, a JSON document whose figures hang together, two plots.

use serde_json::Value;
use std::process::Command;

#[test]
fn a_short_run_prints_tables_and_writes_json_and_plots() {
    let base = std::env::temp_dir().join(format!("kfdrt-bench-smoke-{}", std::process::id()));
    // The plot directory does not exist yet: the tool makes it.
    let dir = base.join("plots");
    std::fs::create_dir_all(&base).unwrap();
    let json = base.join("run.json");
    let out = Command::new(env!("CARGO_BIN_EXE_kfdrt-bench"))
        .args(["all", "--samples", "200", "--max-mib", "1", "--json"])
        .arg(&json)
        .arg("--svg")
        .arg(&dir)
        // kfd-emu's gfx11 has no wave interpreter: measure a gfx90a when emulating.
        .env("KFDRT_EMU_PRESET", "gfx90a")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for heading in [
        "Dispatch latency",
        "Queue scaling",
        "Copy bandwidth",
        "device:",
    ] {
        assert!(stdout.contains(heading), "{heading} missing:\n{stdout}");
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let emulated = v["machine"]["emulated"].as_bool().unwrap();
    assert_eq!(emulated, stdout.contains("this is kfd-emu"));
    let trip = &v["latency"]["empty_kernel_round_trip"];
    assert_eq!(trip["samples"], 200);
    let p = |k: &str| trip[k].as_f64().unwrap();
    assert!(0.0 < p("min_ns") && p("min_ns") <= p("p50_ns"));
    assert!(p("p50_ns") <= p("p99_ns") && p("p99_ns") <= p("max_ns"));
    let counted: u64 = trip["histogram_quarter_octaves_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 200);
    assert_eq!(v["queue_scaling"].as_array().unwrap().len(), 4);
    let series = v["bandwidth"].as_array().unwrap();
    assert!(!series.is_empty());
    for s in series {
        let points = s["points"].as_array().unwrap();
        // 4 KiB, 16 KiB, 64 KiB, 256 KiB, 1 MiB.
        assert_eq!(points.len(), 5, "{s}");
        assert!(points.iter().all(|p| p["gb_per_s"].as_f64().unwrap() > 0.0));
    }
    for plot in ["latency.svg", "bandwidth.svg"] {
        let svg = std::fs::read_to_string(dir.join(plot)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("kfd-emu") == emulated,
            "{plot}"
        );
    }
    let _ = std::fs::remove_dir_all(&base);
}
