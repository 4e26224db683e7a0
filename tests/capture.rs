//! Capture and replay (issue 15 item 7): a capture of a vector add, a saxpy and two copies (one
//! on SDMA, one as a kernel) replays byte-identically on a fresh device, through the library
//! and through `kfdrt-replay`; a tampered capture (a result or an input changed) is caught,
//! naming the first submission that differs.

use crate::common;

use kfdrt::debug::replay::replay;
use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::kernel_args::KernelArgs;
use kfdrt::{AqlQueueOptions, DebugOptions, Dispatch, Kfd, MemoryKind};
use std::path::{Path, PathBuf};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(60));
const KERNELS: &[u8] = include_bytes!("fixtures/code_objects/kernels-gfx90a.co");

fn fresh_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kfdrt-capture-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn floats(v: impl Iterator<Item = f32>) -> Vec<u8> {
    v.flat_map(|f| f.to_le_bytes()).collect()
}

/// A vector add then a saxpy on its result, captured into `dir` on an emulated MI210.
fn capture(dir: &Path) {
    let options = DebugOptions::default().with_capture(dir);
    let kfd = common::Checked::new(
        Kfd::builder()
            .emulated(EmuConfig::new(Preset::Gfx90a, 1))
            .debug(options)
            .open()
            .unwrap(),
    );
    workload(&kfd, KERNELS);
}

/// A vector add then a saxpy on its result (`kernels` is the code object for `kfd`'s GPU), and
/// two copies of the result.
fn workload(kfd: &Kfd, kernels: &[u8]) {
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu.load_code_object(kernels).unwrap();
    let n = 1000u32;
    let bufs: Vec<_> = (0..3)
        .map(|_| gpu.alloc(4096, MemoryKind::GttCoherent).unwrap())
        .collect();
    bufs[0].write(0, &floats((0..n).map(|i| i as f32))).unwrap();
    bufs[1]
        .write(0, &floats((0..n).map(|i| 0.5 * i as f32)))
        .unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let vadd = co.kernel("vector_add").unwrap();
    let mut args = KernelArgs::new(&vadd).unwrap();
    args.set_buffer(0, &bufs[0]).unwrap();
    args.set_buffer(1, &bufs[1]).unwrap();
    args.set_buffer(2, &bufs[2]).unwrap();
    args.set_u32(3, n).unwrap();
    q.dispatch(&Dispatch::linear(&vadd, 1024, 256).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    let saxpy = co.kernel("saxpy").unwrap();
    let mut args = KernelArgs::new(&saxpy).unwrap();
    args.set_f32(0, 3.0).unwrap();
    args.set_buffer(1, &bufs[2]).unwrap();
    args.set_buffer(2, &bufs[0]).unwrap();
    args.set_u32(3, n).unwrap();
    q.dispatch(&Dispatch::linear(&saxpy, 1024, 128).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    // Copies of the result, on the SDMA engine and as kfdrt's copy kernel.
    let copy = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    gpu.copy_engine()
        .unwrap()
        .copy(&copy, 100, &bufs[0], 0, 2000, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    gpu.copy_engine_preferring(kfdrt::CopyPath::Shader)
        .unwrap()
        .copy(&copy, 2200, &bufs[2], 4, 1000, &[])
        .unwrap()
        .wait(T)
        .unwrap();
}

fn replay_on_fresh_device(dir: &Path) -> kfdrt::debug::replay::ReplayReport {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    replay(&kfd, dir).unwrap()
}

/// Emulated: the capture replays four times in this process, each time on a fresh device (a
/// process has one `/dev/kfd` device, the one that captured).
#[test]
fn a_capture_replays_byte_identically_and_a_tampered_one_is_caught() {
    let dir = fresh_dir("ok");
    capture(&dir);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let d = manifest["submissions"].as_array().unwrap();
    assert_eq!(d.len(), 4, "{manifest}");
    assert_eq!(d[0]["kernel"], "vector_add");
    assert_eq!(d[1]["kernel"], "saxpy");
    assert_eq!(
        (&d[2]["kind"], &d[3]["kind"]),
        (&"copy".into(), &"copy".into())
    );
    assert!(d.iter().all(|x| x["replayable"] == true), "{manifest}");

    let report = replay_on_fresh_device(&dir);
    assert_eq!(report.replayed, 4, "{report}");
    assert!(report.identical(), "{report}");

    // A changed copy result is caught at the copy.
    let out = dir.join(d[3]["dst"]["output"].as_str().unwrap());
    let mut bytes = std::fs::read(&out).unwrap();
    bytes[2300] ^= 0x10;
    std::fs::write(&out, &bytes).unwrap();
    let report = replay_on_fresh_device(&dir);
    let m = report
        .mismatch
        .as_ref()
        .expect("the tampered copy is caught");
    assert_eq!(
        (m.submission, m.what.as_str(), m.offset),
        (3, "copy", 2300),
        "{report}"
    );
    bytes[2300] ^= 0x10;
    std::fs::write(&out, &bytes).unwrap();

    // A changed result: the saxpy's output (its argument at offset 16, `y`) no longer matches.
    let out = dir.join(d[1]["pointer_args"][1]["output"].as_str().unwrap());
    let mut bytes = std::fs::read(&out).unwrap();
    bytes[40] ^= 0x01;
    std::fs::write(&out, &bytes).unwrap();
    let report = replay_on_fresh_device(&dir);
    let m = report
        .mismatch
        .as_ref()
        .expect("the tampered result is caught");
    assert_eq!(
        (m.submission, m.what.as_str(), m.offset),
        (1, "saxpy", 40),
        "{report}"
    );
    assert!(
        report
            .to_string()
            .contains("FIRST DIFFERENCE: submission 1 (saxpy)"),
        "{report}"
    );
    bytes[40] ^= 0x01;
    std::fs::write(&out, &bytes).unwrap();

    // A changed input of the first dispatch: its result differs, and the report names it.
    let input = dir.join(d[0]["pointer_args"][0]["input"].as_str().unwrap());
    let mut bytes = std::fs::read(&input).unwrap();
    bytes[8..12].copy_from_slice(&100.0f32.to_le_bytes());
    std::fs::write(&input, &bytes).unwrap();
    let report = replay_on_fresh_device(&dir);
    let m = report
        .mismatch
        .as_ref()
        .expect("the tampered input is caught");
    assert_eq!(m.submission, 0, "{report}");
    assert!((8..12).contains(&m.offset), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A capture on the device under test replays there through `kfdrt-replay` (a process of its
/// own, on the device the environment selects; an emulated one when none is).
#[test]
fn the_replay_program_exits_by_the_result() {
    let dir = fresh_dir("bin");
    let options = DebugOptions::default().with_capture(&dir);
    let Some(kfd) = common::under_test_with(
        "capture::the_replay_program_exits_by_the_result",
        1,
        &["kernels"],
        options,
    ) else {
        return;
    };
    let elf = common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap();
    workload(&kfd, &elf);
    // Written now: on hardware the process keeps its device open.
    kfd.flush_debug_output();
    let emulated = kfd.emulator().is_some();
    drop(kfd);
    let run = || {
        let mut replay = std::process::Command::new(env!("CARGO_BIN_EXE_kfdrt-replay"));
        replay.arg(&dir).env_remove("KFDRT_CAPTURE");
        if emulated {
            // The capture ran on under_test's fallback, an emulated MI210, whatever preset the
            // environment names: replay it on one.
            replay
                .env("KFDRT_DEVICE", "emu")
                .env("KFDRT_EMU_PRESET", "gfx90a");
        }
        replay.output().unwrap()
    };
    let ok = run();
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        text.contains("4 submissions replayed; every result byte-identical"),
        "{text}"
    );
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let out = dir.join(
        m["submissions"][0]["pointer_args"][2]["output"]
            .as_str()
            .unwrap(),
    );
    let mut bytes = std::fs::read(&out).unwrap();
    bytes[0] ^= 0x80;
    std::fs::write(&out, &bytes).unwrap();
    let bad = run();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stdout).contains("FIRST DIFFERENCE: submission 0"));
    let _ = std::fs::remove_dir_all(&dir);
}
