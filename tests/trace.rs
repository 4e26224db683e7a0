//! `KFDRT_TRACE` and `KFDRT_DEPGRAPH` (issue 15 items 5 and 6): the timeline is valid Chrome
//! trace-event JSON with host spans, device spans on per-queue tracks and flows between them;
//! the DOT graph has the edges the submissions made.

use crate::common;

use kfdrt::emu::{EmuConfig, GpuFault, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, CopyPath, DebugOptions, Dispatch, Kfd, MemoryKind};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));

fn out(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("kfdrt-{}-{name}", std::process::id()))
}

/// Runs a small workload with both recorders on and drops the device; returns the files.
fn record() -> (Value, String, u64) {
    let (trace, dot) = (out("trace.json"), out("graph.dot"));
    let options = DebugOptions::default()
        .with_trace(&trace)
        .with_depgraph(&dot);
    let kfd = Kfd::builder()
        .emulated(EmuConfig::new(Preset::Gfx90a, 1))
        .debug(options)
        .open()
        .unwrap();
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    let work = |_: &WorkGroup<'_>| -> Result<(), GpuFault> {
        std::thread::sleep(Duration::from_millis(2));
        Ok(())
    };
    let first = gpu.emulated_kernel("first", 0, Arc::new(work)).unwrap();
    let second = gpu.emulated_kernel("second", 0, Arc::new(work)).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let other = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let a = q.dispatch(&Dispatch::linear(&first, 64, 64)).unwrap();
    // A barrier on another queue waiting for the first dispatch, then the second kernel.
    let b = other.barrier_and(&[a.signal()]).unwrap();
    let c = other.dispatch(&Dispatch::linear(&second, 64, 64)).unwrap();
    let dep = a.signal().handle();
    a.wait(T).unwrap();
    b.wait(T).unwrap();
    c.wait(T).unwrap();
    let src = gpu.alloc(1 << 16, MemoryKind::GttCoherent).unwrap();
    let dst = gpu.alloc(1 << 16, MemoryKind::GttCoherent).unwrap();
    gpu.copy_engine()
        .unwrap()
        .copy(&dst, 0, &src, 0, 1 << 16, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    let shader = gpu.copy_engine_preferring(CopyPath::Shader).unwrap();
    shader
        .copy(&dst, 0, &src, 0, 1 << 16, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    drop((a, b, c, q, other, first, second, src, dst, shader, gpu));
    drop(kfd);
    common::assert_all_released(&emu);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap())
        .expect("the timeline is valid JSON");
    let dot = std::fs::read_to_string(&dot).unwrap();
    let _ = std::fs::remove_file(trace);
    (json, dot, dep)
}

/// Emulated: the kernels are host functions that sleep 2 ms per work-group, which the device
/// spans are checked against.
#[test]
fn timeline_and_graph_of_a_small_workload() {
    let (json, dot, dep) = record();
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let named = |ph: &str, cat: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["ph"] == ph && e["cat"] == cat)
            .collect()
    };
    let host = named("X", "host");
    let device = named("X", "device");
    for prefix in ["submit AQL", "wait AQL", "alloc", "submit SDMA"] {
        assert!(
            host.iter()
                .any(|e| e["name"].as_str().unwrap().starts_with(prefix)),
            "no host span {prefix}: {host:?}"
        );
    }
    // Device spans for both kernels and the shader copy, on GPU tracks (pid >= 1000).
    for name in ["first", "second"] {
        let d = device
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no device span {name}: {device:?}"));
        assert!(d["pid"].as_u64().unwrap() >= 1000);
        // The kernels sleep 2 ms per work-group: the span is at least that (from the
        // completion signal's timestamps, converted to host time).
        assert!(d["dur"].as_f64().unwrap() >= 1000.0, "{d}");
    }
    assert!(device.len() >= 4, "{device:?}");
    // The SDMA copy has a device span from the engine's timestamps, on an SDMA queue's track.
    let sdma_tracks: Vec<_> = events
        .iter()
        .filter(|e| {
            e["ph"] == "M"
                && e["args"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("SDMA"))
        })
        .collect();
    assert_eq!(sdma_tracks.len(), 1, "{sdma_tracks:?}");
    assert!(
        device
            .iter()
            .any(|d| d["tid"] == sdma_tracks[0]["tid"]
                && d["name"].as_str().unwrap().contains("Copy")),
        "{device:?}"
    );
    // Each device span starts after its submission began on the host (1 ms of slack for the
    // clock conversion).
    let start_of = |name: &str| {
        host.iter()
            .filter(|e| e["name"].as_str().unwrap().starts_with("submit AQL"))
            .find(|e| e["name"].as_str().unwrap().contains(name))
            .map(|e| e["ts"].as_f64().unwrap())
            .unwrap()
    };
    for name in ["first", "second"] {
        let d = device.iter().find(|e| e["name"] == name).unwrap();
        assert!(d["ts"].as_f64().unwrap() + 1000.0 >= start_of(name), "{d}");
    }
    // Flows: every start has its finish.
    let starts = named("s", "flow");
    let ends = named("f", "flow");
    assert!(!starts.is_empty());
    for s in &starts {
        assert!(
            ends.iter().any(|f| f["id"] == s["id"]),
            "unmatched flow {s}"
        );
    }
    // Tracks are named.
    assert!(events.iter().any(|e| e["ph"] == "M"
        && e["name"] == "thread_name"
        && e["args"]["name"].as_str().unwrap().starts_with("AQL queue")));

    // The graph: the barrier on the other queue depends on the first dispatch's signal.
    assert!(dot.starts_with("digraph kfdrt {"), "{dot}");
    let edge = dot
        .lines()
        .find(|l| l.contains("->") && l.contains(&format!("signal {dep:#x}")))
        .unwrap_or_else(|| panic!("no edge for signal {dep:#x}:\n{dot}"));
    let (from, rest) = edge.trim().split_once(" -> ").unwrap();
    let to = rest.split_whitespace().next().unwrap();
    let label_of = |node: &str| {
        dot.lines()
            .find(|l| l.trim().starts_with(&format!("{node} [label=")))
            .unwrap_or_else(|| panic!("no node {node}"))
            .to_string()
    };
    assert!(label_of(from).contains("first"), "{edge}\n{dot}");
    assert!(label_of(to).contains("barrier-and"), "{edge}\n{dot}");
    // Queue order: the second kernel follows the barrier on its queue (dashed).
    assert!(dot.contains("style=dashed"), "{dot}");
}

#[test]
fn device_spans_name_the_kernels_source_location_from_line_tables() {
    let trace = out("lines-trace.json");
    let Some(kfd) = common::under_test_with(
        "trace::device_spans_name_the_kernels_source_location_from_line_tables",
        1,
        &["lines"],
        DebugOptions::default().with_trace(&trace),
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = common::load_for(&gpu, "lines");
    let poke = co.kernel("poke_through").unwrap();
    let p = gpu.alloc(64 << 12, MemoryKind::GttCoherent).unwrap();
    let mut args = kfdrt::kernel_args::KernelArgs::new(&poke).unwrap();
    args.set_buffer(0, &p).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.dispatch(&Dispatch::linear(&poke, 64, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    drop((q, args, p, poke, co, gpu));
    // Written now (on hardware the process keeps its device open; an emulated one also writes
    // it again when it drops).
    kfd.flush_debug_output();
    drop(kfd);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let _ = std::fs::remove_file(trace);
    let names: Vec<&str> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "device")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(
        names.contains(&"poke_through (./lines.hip:11)"),
        "{names:?}"
    );
}
