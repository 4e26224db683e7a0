//! HIP's device `printf` through kfdrt (issue 31 item 2): kernels built by hipcc's clang-15 with
//! the ROCm device library print through the hostcall buffer kfdrt passes as their hidden
//! argument; the hostcall thread reassembles each work-item's message and formats it as C does.

use crate::common;

use kfdrt::emu::Preset;
use kfdrt::hostcall::KernelPrint;
use kfdrt::kernel_args::KernelArgs;
use kfdrt::{AqlQueueOptions, Dispatch, Kfd, MemoryKind};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(60));

/// The device under test (see [`common::under_test`]), whose kernels' printf lines are
/// collected; `None` after printing why the test is skipped.
fn device(test: &str) -> Option<(common::Checked, Arc<Mutex<Vec<KernelPrint>>>)> {
    let kfd = common::under_test(test, Preset::Gfx90a, 1, &["printf"])?;
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    kfd.set_printf_handler(move |p| sink.lock().unwrap().push(p.clone()));
    Some((kfd, lines))
}

/// The GPU and its `printf.hip` kernels.
fn printing_kernels(kfd: &Kfd) -> (kfdrt::Gpu, kfdrt::CodeObject) {
    let gpu = kfd.gpu(0).unwrap();
    let target = &gpu.info().gfx_target;
    let elf = common::code_object_for("printf", target)
        .unwrap_or_else(|| panic!("no printf code object is built for {target}"));
    let co = gpu.load_code_object(&elf).unwrap();
    (gpu, co)
}

fn texts(lines: &Mutex<Vec<KernelPrint>>) -> Vec<String> {
    lines
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.text.clone())
        .collect()
}

#[test]
fn every_work_item_prints_its_line_each_wave_in_lane_order() {
    let Some((kfd, lines)) =
        device("printf::every_work_item_prints_its_line_each_wave_in_lane_order")
    else {
        return;
    };
    let (gpu, co) = printing_kernels(&kfd);
    let greet = co.kernel("greet").unwrap();
    assert!(greet.hostcall_buffer().unwrap().is_some());
    let out = gpu.alloc(4 * 128, MemoryKind::GttCoherent).unwrap();
    let mut args = KernelArgs::new(&greet).unwrap();
    args.set_buffer(0, &out).unwrap().set_f32(1, 0.5).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.dispatch(&Dispatch::linear(&greet, 128, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    let printed = texts(&lines);
    assert_eq!(printed.len(), 128, "{printed:?}");
    assert!(lines
        .lock()
        .unwrap()
        .iter()
        .all(|p| p.gpu_id == gpu.id() && !p.to_stderr));
    let line = |i: usize| {
        let parity = if i % 2 == 1 { "odd" } else { "even" };
        format!(
            "item {i} of group {}: {:.2} {parity}\n",
            i / 64,
            0.5 * i as f32
        )
    };
    // Each wave's lines come out together, lane by lane; the two waves in either order.
    let first_wave = if printed[0] == line(0) { 0 } else { 64 };
    let expected: Vec<String> = (first_wave..first_wave + 64)
        .chain((64 - first_wave)..(128 - first_wave))
        .map(line)
        .collect();
    assert_eq!(printed, expected);
    let values: Vec<i32> = out
        .to_vec()
        .unwrap()
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values, (0..128).collect::<Vec<i32>>());
}

#[test]
fn a_work_items_lines_come_in_program_order_and_conversions_follow_c() {
    let Some((kfd, lines)) =
        device("printf::a_work_items_lines_come_in_program_order_and_conversions_follow_c")
    else {
        return;
    };
    let (gpu, co) = printing_kernels(&kfd);
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let countdown = co.kernel("countdown").unwrap();
    let mut args = KernelArgs::new(&countdown).unwrap();
    args.set_i32(0, 6).unwrap();
    q.dispatch(&Dispatch::linear(&countdown, 64, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    let steps: Vec<String> = (1..=6).rev().map(|k| format!("step {k}\n")).collect();
    assert_eq!(texts(&lines), steps);

    // Strings from device memory, 64-bit and floating arguments, widths, a format string of
    // several packets' worth of words.
    lines.lock().unwrap().clear();
    let formats = co.kernel("formats").unwrap();
    let name = gpu.alloc(64, MemoryKind::GttCoherent).unwrap();
    name.write(0, b"kfdrt\0").unwrap();
    let mut args = KernelArgs::new(&formats).unwrap();
    args.set_buffer(0, &name).unwrap();
    args.set_i64(1, -1234567890123).unwrap();
    args.set_f64(2, 1.23456).unwrap();
    q.dispatch(&Dispatch::linear(&formats, 64, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(
        texts(&lines),
        [
            "kfdrt|-1234567890123|beef|k|   1.235|1.234560e+00|4000000000|%|   ab|7   |end of a \
          format string long enough to take more than one packet of the hostcall buffer, whose \
          slots hold 64 bytes per lane\n"
        ]
    );
}

/// Without a handler the lines go to the process's stdout, whole and in order: this test re-runs
/// itself in a child process (marked by an environment variable) and reads the child's stdout.
#[test]
fn without_a_handler_lines_go_to_stdout() {
    const CHILD: &str = "KFDRT_TEST_PRINTF_CHILD";
    const NAME: &str = "printf::without_a_handler_lines_go_to_stdout";
    // The child opens the device under test as the parent does (same environment).
    let Some(kfd) = common::under_test(NAME, Preset::Gfx90a, 1, &["printf"]) else {
        return;
    };
    if std::env::var_os(CHILD).is_some() {
        let (gpu, co) = printing_kernels(&kfd);
        let countdown = co.kernel("countdown").unwrap();
        let mut args = KernelArgs::new(&countdown).unwrap();
        args.set_i32(0, 3).unwrap();
        let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        q.dispatch(&Dispatch::linear(&countdown, 64, 64).with_args(&args))
            .unwrap()
            .wait(T)
            .unwrap();
        return;
    }
    drop(kfd);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("step 3\nstep 2\nstep 1\n"), "{stdout}");
}

/// Launches through a stream and a replayed graph pass the buffer too: the graph's arguments
/// keep the hostcall pointer their `KernelArgs` had.
#[test]
fn kernels_launched_on_streams_and_in_graphs_print() {
    let Some((kfd, lines)) = device("printf::kernels_launched_on_streams_and_in_graphs_print")
    else {
        return;
    };
    let (gpu, co) = printing_kernels(&kfd);
    let countdown = co.kernel("countdown").unwrap();
    let mut args = KernelArgs::new(&countdown).unwrap();
    args.set_i32(0, 2).unwrap();
    let mut stream = gpu.create_stream().unwrap();
    stream
        .launch(&Dispatch::linear(&countdown, 64, 64).with_args(&args))
        .unwrap();
    stream.synchronize().unwrap();
    assert_eq!(texts(&lines), ["step 2\n", "step 1\n"]);
    let mut capture = stream.capture();
    let node = capture
        .launch(&Dispatch::linear(&countdown, 64, 64).with_args(&args))
        .unwrap();
    let mut graph = capture.finish();
    lines.lock().unwrap().clear();
    stream.replay(&graph).unwrap();
    stream.synchronize().unwrap();
    args.set_i32(0, 3).unwrap();
    graph.set_args(node, &args).unwrap();
    stream.replay(&graph).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(
        texts(&lines),
        ["step 2\n", "step 1\n", "step 3\n", "step 2\n", "step 1\n"]
    );
}
