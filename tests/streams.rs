//! Streams, stream events and graphs (`kfdrt::stream`): in-order work across the AQL queue and
//! the copy engine, host memory in and out, cross-stream waits, host callbacks, GPU timing, and
//! graphs replayed with new arguments. Every scenario runs on both copy paths where copies are
//! involved: an SDMA engine and the blit-kernel fallback.

use crate::common;

use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::kernel_args::KernelArgs;
use kfdrt::stream::StreamError;
use kfdrt::{CopyPath, Dispatch, Error, Gpu, MemoryKind, StreamOptions};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(60);
const PATHS: [CopyPath; 2] = [CopyPath::Sdma, CopyPath::Shader];

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

fn from_bytes(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `saxpy(alpha, x, y, n)`'s arguments: y = alpha * x + y over `n` floats.
fn saxpy_args(
    saxpy: &kfdrt::Kernel,
    alpha: f32,
    x: &kfdrt::Buffer,
    y: &kfdrt::Buffer,
    n: usize,
) -> KernelArgs {
    let mut args = KernelArgs::new(saxpy).unwrap();
    args.set_f32(0, alpha).unwrap();
    args.set_buffer(1, x).unwrap().set_buffer(2, y).unwrap();
    args.set_u32(3, n as u32).unwrap();
    args
}

/// The `kernels` fixture for `gpu`'s target ([`common::under_test`] checked there is one).
fn kernels(gpu: &Gpu) -> Vec<u8> {
    common::code_object_for("kernels", &gpu.info().gfx_target).unwrap()
}

fn stream(gpu: &Gpu, path: CopyPath) -> kfdrt::Stream {
    gpu.create_stream_with(StreamOptions {
        copy_path: path,
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn upload_compute_download_on_one_stream_needs_no_signals() {
    let Some(kfd) = common::under_test(
        "streams::upload_compute_download_on_one_stream_needs_no_signals",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu.load_code_object(&kernels(&gpu)).unwrap();
    let saxpy = co.kernel("saxpy").unwrap();
    let n = 4096usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| 1.0 - i as f32 * 0.5).collect();
    for path in PATHS {
        let mut s = stream(&gpu, path);
        let (dx, dy) = (
            gpu.alloc(4 * n as u64, MemoryKind::DeviceLocal).unwrap(),
            gpu.alloc(4 * n as u64, MemoryKind::DeviceLocal).unwrap(),
        );
        // Whatever is in VRAM, the uploads below must land before the kernel reads it.
        s.fill(&dy, 0, 0xdead_beef, 4 * n as u64).unwrap();
        s.copy_from_host(&dx, 0, &floats(&x)).unwrap();
        s.copy_from_host(&dy, 0, &floats(&y)).unwrap();
        let args = saxpy_args(&saxpy, 2.0, &dx, &dy, n);
        s.launch(&Dispatch::linear(&saxpy, n as u32, 256).with_args(&args))
            .unwrap();
        let mut out = vec![0u8; 4 * n];
        s.copy_to_host(&mut out, &dy, 0).unwrap();
        let got = from_bytes(&out);
        for i in 0..n {
            assert_eq!(got[i], 2.0 * x[i] + y[i], "{path:?}: element {i}");
        }
        assert!(s.is_idle());
    }
}

#[test]
fn a_stream_waits_for_another_streams_event_and_no_longer() {
    let Some(kfd) = common::under_test(
        "streams::a_stream_waits_for_another_streams_event_and_no_longer",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    for path in PATHS {
        let (mut a, mut b) = (stream(&gpu, path), stream(&gpu, path));
        let buf = gpu.alloc(4096, MemoryKind::DeviceLocal).unwrap();
        let (release, released) = channel::<()>();
        // Stream a is held at a host callback until the test lets it go.
        a.host_fn(move |status| {
            status.unwrap();
            released.recv().unwrap();
        })
        .unwrap();
        a.fill(&buf, 0, 0x1111_1111, 4096).unwrap();
        let filled = a.record().unwrap();
        b.wait_event(&filled).unwrap();
        b.fill(&buf, 0, 0x2222_2222, 2048).unwrap();
        let b_done = b.record().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!filled.is_reached(), "{path:?}: a passed its host callback");
        assert!(!b_done.is_reached(), "{path:?}: b ran before a's event");
        release.send(()).unwrap();
        b_done.wait(Some(T)).unwrap();
        assert!(filled.is_reached(), "{path:?}");
        let mut out = vec![0u8; 4096];
        b.copy_to_host(&mut out, &buf, 0).unwrap();
        // b's fill came after a's: its half holds b's pattern, the rest a's.
        assert!(out[..2048].iter().all(|&v| v == 0x22), "{path:?}");
        assert!(out[2048..].iter().all(|&v| v == 0x11), "{path:?}");
    }
}

#[test]
fn host_callbacks_run_in_stream_order_after_the_work_before_them() {
    let Some(kfd) = common::under_test(
        "streams::host_callbacks_run_in_stream_order_after_the_work_before_them",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let mut s = stream(&gpu, CopyPath::Sdma);
    let host = Arc::new(gpu.alloc(4096, MemoryKind::GttCoherent).unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    for i in 0..4u8 {
        s.fill(&host, 0, u32::from_le_bytes([i; 4]), 4096).unwrap();
        let (h, seen) = (host.clone(), seen.clone());
        s.host_fn(move |status| {
            status.unwrap();
            let mut b = [0u8; 1];
            h.read(4095, &mut b).unwrap();
            seen.lock().unwrap().push(b[0]);
        })
        .unwrap();
    }
    s.synchronize().unwrap();
    // Each callback saw the fill just before it: in order, and after it completed.
    assert_eq!(*seen.lock().unwrap(), vec![0, 1, 2, 3]);
}

#[test]
fn events_time_gpu_work_in_nanoseconds_of_the_measured_clock() {
    let Some(kfd) = common::under_test(
        "streams::events_time_gpu_work_in_nanoseconds_of_the_measured_clock",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let mut s = gpu.create_stream().unwrap();
    let hz = gpu.timestamp_frequency().unwrap();
    assert!(hz >= 1_000_000, "a timestamp counter of {hz} Hz");
    let start = s.record().unwrap();
    // The stream stands still for 30 ms between the events.
    s.host_fn(|_| std::thread::sleep(Duration::from_millis(30)))
        .unwrap();
    let end = s.record().unwrap();
    let wall = Instant::now();
    s.synchronize().unwrap();
    let took = end.elapsed_since(&start).unwrap();
    assert!(
        took >= Duration::from_millis(29),
        "events 30 ms apart measured {took:?}"
    );
    assert!(
        took <= wall.elapsed() + Duration::from_millis(30) + Duration::from_millis(5),
        "{took:?}"
    );
    assert!(end.gpu_timestamp().unwrap() > start.gpu_timestamp().unwrap());
    // Between GPUs' clocks there is no elapsed time.
    let two = common::emulated(Preset::Gfx90a, 2);
    let (g0, g1) = (two.gpu(0).unwrap(), two.gpu(1).unwrap());
    let (mut s0, mut s1) = (g0.create_stream().unwrap(), g1.create_stream().unwrap());
    let (e0, e1) = (s0.record().unwrap(), s1.record().unwrap());
    assert!(matches!(
        e1.elapsed_since(&e0),
        Err(Error::Stream(StreamError::DifferentGpus { .. }))
    ));
    // Nor with an event of another open device.
    assert!(matches!(
        e1.elapsed_since(&start),
        Err(Error::ForeignObject { .. })
    ));
    assert!(matches!(
        s0.wait_event(&start),
        Err(Error::ForeignObject { .. })
    ));
}

#[test]
fn a_queue_error_ends_the_streams_waits_and_reaches_its_callbacks() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let mut s = gpu.create_stream().unwrap();
    let bad = gpu
        .emulated_kernel(
            "wild",
            0,
            Arc::new(|wg: &WorkGroup<'_>| -> Result<(), GpuFault> {
                wg.mem.write_u32(0x7e57_0000_1000, 1)
            }),
        )
        .unwrap();
    s.launch(&Dispatch::linear(&bad, 64, 64)).unwrap();
    let (tx, rx) = channel();
    s.host_fn(move |status| tx.send(status.is_err()).unwrap())
        .unwrap();
    let after = s.record().unwrap();
    assert!(s.synchronize().is_err(), "a fault ends the stream's wait");
    assert!(after.wait(Some(T)).is_err());
    assert!(rx.recv_timeout(T).unwrap(), "the callback saw the failure");
}

#[test]
fn a_graph_replays_with_new_arguments_and_keeps_what_it_uses() {
    let Some(kfd) = common::under_test(
        "streams::a_graph_replays_with_new_arguments_and_keeps_what_it_uses",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu.load_code_object(&kernels(&gpu)).unwrap();
    let saxpy = co.kernel("saxpy").unwrap();
    let n = 1024usize;
    for path in PATHS {
        let mut s = stream(&gpu, path);
        let x = gpu.alloc(4 * n as u64, MemoryKind::DeviceLocal).unwrap();
        let y = gpu.alloc(4 * n as u64, MemoryKind::DeviceLocal).unwrap();
        let out = gpu.alloc(4 * n as u64, MemoryKind::DeviceLocal).unwrap();
        s.copy_from_host(&x, 0, &floats(&vec![1.0; n])).unwrap();
        // The graph: y = 0; y = alpha * x + y; out = y.
        let args = saxpy_args(&saxpy, 1.0, &x, &y, n);
        let mut c = s.capture();
        c.fill(&y, 0, 0, 4 * n as u64).unwrap();
        let node = c
            .launch(&Dispatch::linear(&saxpy, n as u32, 256).with_args(&args))
            .unwrap();
        c.copy(&out, 0, &y, 0, 4 * n as u64).unwrap();
        let mut graph = c.finish();
        assert_eq!(graph.len(), 3);
        // The graph holds x and y: nothing else names them from here on.
        drop((x, y));
        let mut got = vec![0u8; 4 * n];
        for alpha in [1.0f32, 3.0, -2.5] {
            let mut a = args.clone();
            a.set_f32(0, alpha).unwrap();
            graph.set_args(node, &a).unwrap();
            s.replay(&graph).unwrap();
            s.copy_to_host(&mut got, &out, 0).unwrap();
            assert!(
                from_bytes(&got).iter().all(|&v| v == alpha),
                "{path:?}: alpha {alpha}"
            );
        }
        drop(args);
        // Arguments for another kernel, raw bytes, and another stream are refused.
        let other = co.kernel("vector_add").unwrap();
        let wrong = KernelArgs::new(&other).unwrap();
        assert!(graph.set_args(node, &wrong).is_err());
        let bytes = [0u8; 24];
        // SAFETY: the dispatch is refused before anything could read the bytes.
        let raw = unsafe { Dispatch::linear(&saxpy, 64, 64).with_raw_args(&bytes) };
        assert!(matches!(
            s.capture().launch(&raw),
            Err(Error::Stream(StreamError::RawGraphArguments { .. }))
        ));
        let mut elsewhere = stream(&gpu, path);
        assert!(matches!(
            elsewhere.replay(&graph),
            Err(Error::Stream(StreamError::OtherStream { .. }))
        ));
    }
}

#[test]
fn a_graph_waits_for_events_captured_in_it_on_every_replay() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let count = gpu
        .emulated_kernel(
            "count",
            0,
            Arc::new(move |_: &WorkGroup<'_>| -> Result<(), GpuFault> {
                r.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }),
        )
        .unwrap();
    let (mut a, mut b) = (gpu.create_stream().unwrap(), gpu.create_stream().unwrap());
    let (release, released) = channel::<()>();
    a.host_fn(move |_| released.recv().unwrap()).unwrap();
    let gate = a.record().unwrap();
    let mut c = b.capture();
    c.wait_event(&gate).unwrap();
    c.launch(&Dispatch::linear(&count, 64, 64)).unwrap();
    let graph = c.finish();
    b.replay(&graph).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the launch passed the captured wait"
    );
    release.send(()).unwrap();
    b.replay(&graph).unwrap();
    b.synchronize().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// The MLP example's kernels for `gpu`'s target, if they are built for it.
fn mlp_kernels(gpu: &Gpu) -> Option<kfdrt::CodeObject> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kernels");
    let file = dir.join(format!("mlp-{}.co", gpu.info().gfx_target));
    let bytes = std::fs::read(&file).ok()?;
    Some(gpu.load_code_object(&bytes).unwrap())
}

#[test]
fn hip_kernels_are_found_by_their_cpp_names() {
    let Some(kfd) = common::under_test(
        "streams::hip_kernels_are_found_by_their_cpp_names",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let Some(co) = mlp_kernels(&gpu) else {
        eprintln!("streams::hip_kernels_are_found_by_their_cpp_names: skipped: no MLP kernels for this target");
        return;
    };
    let by_symbol = co.kernel("_Z7softmaxPKfPfi").unwrap();
    for name in [
        "softmax",
        "softmax(float const*, float*, int)",
        "softmax(float const*,float*,int)",
    ] {
        assert_eq!(
            co.kernel(name).unwrap().object(),
            by_symbol.object(),
            "{name}"
        );
    }
    let double = co
        .kernel("bias_add(double*, double const*, int, int)")
        .unwrap();
    let single = co
        .kernel("bias_add(float*, float const*, int, int)")
        .unwrap();
    assert_ne!(double.object(), single.object());
    match co.kernel("bias_add") {
        Err(Error::CodeObject(kfdrt::CodeObjectError::AmbiguousKernel { matches, .. })) => {
            assert_eq!(matches.len(), 2, "{matches:?}")
        }
        other => panic!("an overloaded name: {other:?}"),
    }
    for wrong in ["softmax(float*)", "softmax_", "Softmax"] {
        assert!(
            matches!(
                co.kernel(wrong),
                Err(Error::CodeObject(
                    kfdrt::CodeObjectError::NoSuchKernel { .. }
                ))
            ),
            "{wrong}"
        );
    }
}

/// The MLP example's hipcc kernels on both instruction sets, against the CPU, through a stream:
/// shapes that are not multiples of the matmul's tile, rows wider than a work-group.
#[test]
fn the_mlp_examples_kernels_compute_what_the_cpu_does() {
    const TEST: &str = "streams::the_mlp_examples_kernels_compute_what_the_cpu_does";
    let (m, n, k, cols) = (20usize, 18usize, 24usize, 300usize);
    let Some(dut) = common::under_test(TEST, Preset::Gfx90a, 1, &[]) else {
        return;
    };
    // The device under test; when that is emulated, an emulated MI300X too (both instruction
    // sets).
    let emulated = dut.emulator().is_some();
    let mi300 = emulated.then(|| common::emulated(Preset::Gfx942, 1));
    for kfd in std::iter::once(&dut).chain(mi300.as_ref()) {
        let gpu = kfd.gpu(0).unwrap();
        let preset = gpu.info().gfx_target.clone();
        let co = match mlp_kernels(&gpu) {
            Some(co) => co,
            None if !emulated => {
                eprintln!("{TEST}: skipped: no MLP kernels for {preset}");
                return;
            }
            None => panic!("no MLP kernels for the emulated {preset}"),
        };
        let mut s = gpu.create_stream().unwrap();
        let upload = |s: &mut kfdrt::Stream, v: &[f32]| {
            let b = gpu
                .alloc(4 * v.len() as u64, MemoryKind::DeviceLocal)
                .unwrap();
            s.copy_from_host(&b, 0, &floats(v)).unwrap();
            b
        };
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
        let w: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 11) as f32 * 0.25).collect();
        let x: Vec<f32> = (0..2 * cols).map(|i| ((i * 3) % 17) as f32 * 0.1).collect();
        let (da, dw, dx) = (upload(&mut s, &a), upload(&mut s, &w), upload(&mut s, &x));
        let dout = gpu
            .alloc(4 * (m * n) as u64, MemoryKind::DeviceLocal)
            .unwrap();
        let dy = gpu
            .alloc(4 * (2 * cols) as u64, MemoryKind::DeviceLocal)
            .unwrap();
        let ones = upload(&mut s, &vec![1.0; cols]);
        let zeros = upload(&mut s, &vec![0.0; cols]);

        let matmul = co.kernel("matmul").unwrap();
        let mut args = KernelArgs::new(&matmul).unwrap();
        args.set_buffer(0, &da).unwrap().set_buffer(1, &dw).unwrap();
        args.set_buffer(2, &dout).unwrap();
        for (i, v) in [m, n, k].into_iter().enumerate() {
            args.set_i32(3 + i, v as i32).unwrap();
        }
        let blocks = [(n as u32).div_ceil(16), (m as u32).div_ceil(16), 1];
        s.launch(
            &Dispatch::blocks(&matmul, blocks, [16, 16, 1])
                .unwrap()
                .with_args(&args),
        )
        .unwrap();
        let mut got = vec![0u8; 4 * m * n];
        s.copy_to_host(&mut got, &dout, 0).unwrap();
        let got = from_bytes(&got);
        for r in 0..m {
            for c in 0..n {
                let want: f32 = (0..k).map(|i| a[r * k + i] * w[i * n + c]).sum();
                assert_eq!(got[r * n + c], want, "{preset:?} matmul [{r}][{c}]");
            }
        }

        let layernorm = co.kernel("layernorm").unwrap();
        let mut args = KernelArgs::new(&layernorm).unwrap();
        args.set_buffer(0, &dx).unwrap().set_buffer(1, &dy).unwrap();
        args.set_buffer(2, &ones)
            .unwrap()
            .set_buffer(3, &zeros)
            .unwrap();
        args.set_i32(4, cols as i32)
            .unwrap()
            .set_f32(5, 1e-5)
            .unwrap();
        s.launch(
            &Dispatch::blocks(&layernorm, [2, 1, 1], [256, 1, 1])
                .unwrap()
                .with_args(&args),
        )
        .unwrap();
        let softmax = co.kernel("softmax").unwrap();
        let mut args = KernelArgs::new(&softmax).unwrap();
        args.set_buffer(0, &dy).unwrap().set_buffer(1, &dy).unwrap();
        args.set_i32(2, cols as i32).unwrap();
        // In place: each row's work-group reads its row fully before it writes.
        s.launch(
            &Dispatch::blocks(&softmax, [2, 1, 1], [256, 1, 1])
                .unwrap()
                .with_args(&args),
        )
        .unwrap();
        let mut got = vec![0u8; 4 * 2 * cols];
        s.copy_to_host(&mut got, &dy, 0).unwrap();
        let got = from_bytes(&got);
        for (row, out) in x.chunks(cols).zip(got.chunks(cols)) {
            let mean = row.iter().sum::<f32>() / cols as f32;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / cols as f32;
            let norm: Vec<f32> = row
                .iter()
                .map(|v| (v - mean) / (var + 1e-5).sqrt())
                .collect();
            let top = norm.iter().fold(f32::MIN, |a, &b| a.max(b));
            let sum: f32 = norm.iter().map(|v| (v - top).exp()).sum();
            for (c, (&g, v)) in out.iter().zip(&norm).enumerate() {
                let want = (v - top).exp() / sum;
                assert!(
                    (g - want).abs() <= 1e-5 * want.max(1e-3) * 100.0,
                    "{preset:?} [{c}]: {g} vs {want}"
                );
            }
            assert!((out.iter().sum::<f32>() - 1.0).abs() < 1e-4);
        }
    }
}

#[test]
fn a_pool_reuses_memory_in_stream_order_and_across_streams_once_the_gpu_has_passed() {
    let Some(kfd) = common::under_test(
        "streams::a_pool_reuses_memory_in_stream_order_and_across_streams_once_the_gpu_has_passed",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let pool = gpu.create_memory_pool(MemoryKind::DeviceLocal);
    let (mut a, b) = (gpu.create_stream().unwrap(), gpu.create_stream().unwrap());
    let (release, released) = channel::<()>();
    // Stream a is held at a callback: the work enqueued after it cannot have run.
    a.host_fn(move |_| released.recv().unwrap()).unwrap();
    let size = 3 << 20;
    let first = pool.alloc_async(size, &a).unwrap();
    assert_eq!(first.size(), 4 << 20, "a 4 MiB class");
    let out1 = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    a.fill(&first, 0, 0x0101_0101, size).unwrap();
    a.copy(&out1, 0, &first, 0, 4096).unwrap();
    let address = first.gpu_address();
    pool.free_async(first, &a);
    // Another stream may not take it while a has not passed the free.
    let other = pool.alloc_async(size, &b).unwrap();
    assert_ne!(other.gpu_address(), address);
    // Stream a itself may: its next work runs after the fill and the copy.
    let again = pool.alloc_async(size, &a).unwrap();
    assert_eq!(again.gpu_address(), address);
    let out2 = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    a.fill(&again, 0, 0x0202_0202, size).unwrap();
    a.copy(&out2, 0, &again, 0, 4096).unwrap();
    pool.free_async(again, &a);
    drop(other);
    release.send(()).unwrap();
    a.synchronize().unwrap();
    assert!(
        out1.to_vec().unwrap().iter().all(|&v| v == 1),
        "the first use saw its own data"
    );
    assert!(out2.to_vec().unwrap().iter().all(|&v| v == 2));
    // Now that a has passed the free, b may take the memory (so may it `other`'s).
    let later = [
        pool.alloc_async(size, &b).unwrap(),
        pool.alloc_async(size, &b).unwrap(),
    ];
    assert!(later.iter().any(|l| l.gpu_address() == address));
    let st = pool.stats();
    assert_eq!(
        (st.allocations, st.hits, st.misses, st.frees),
        (5, 3, 2, 3),
        "{st:?}"
    );
    assert_eq!(st.in_use_bytes, 8 << 20);
    assert_eq!(st.cached_bytes, 0);
    assert_eq!(st.peak_bytes, 8 << 20);
    drop(later);
    assert_eq!(pool.trim(4 << 20), 4 << 20);
    assert_eq!(pool.trim(0), 4 << 20);
    assert_eq!(pool.stats().cached_bytes, 0);
    assert!(matches!(
        pool.alloc_async(0, &a),
        Err(Error::ZeroSize { what: "allocation" })
    ));
}

#[test]
fn a_pooled_buffer_dropped_outside_a_stream_waits_for_the_gpu_work_that_holds_it() {
    let Some(kfd) = common::under_test(
        "streams::a_pooled_buffer_dropped_outside_a_stream_waits_for_the_gpu_work_that_holds_it",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let pool = gpu.create_memory_pool(MemoryKind::GttCoherent);
    let mut s = gpu.create_stream().unwrap();
    let (release, released) = channel::<()>();
    s.host_fn(move |_| released.recv().unwrap()).unwrap();
    let buf = pool.alloc_async(4096, &s).unwrap();
    s.fill(&buf, 0, 7, 4096).unwrap();
    let address = buf.gpu_address();
    drop(buf); // the fill, still waiting, holds it
    let other = pool.alloc_async(4096, &s).unwrap();
    assert_ne!(
        other.gpu_address(),
        address,
        "reused under pending GPU work"
    );
    release.send(()).unwrap();
    s.synchronize().unwrap();
    drop(other);
    // Both are free now; the most recently freed comes first.
    let a = pool.alloc_async(4096, &s).unwrap();
    let b = pool.alloc_async(4096, &s).unwrap();
    let mut got = [a.gpu_address(), b.gpu_address()];
    got.sort();
    let mut want = [address, other_address(&got, address)];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(pool.stats().misses, 2);
}

fn other_address(pair: &[u64; 2], known: u64) -> u64 {
    if pair[0] == known {
        pair[1]
    } else {
        pair[0]
    }
}

#[test]
fn device_wide_synchronize_waits_for_every_queue_of_the_gpus_it_covers() {
    let Some(kfd) = common::under_test(
        "streams::device_wide_synchronize_waits_for_every_queue_of_the_gpus_it_covers",
        Preset::Gfx90a,
        2,
        &["kernels"],
    ) else {
        return;
    };
    let cos = kfd
        .load_code_object_on_all(&kernels(&kfd.gpu(0).unwrap()))
        .unwrap();
    assert_eq!(cos.len(), 2);
    let gpus = kfd.gpus();
    let mut gates = Vec::new();
    let mut streams = Vec::new();
    let mut outs = Vec::new();
    for (gpu, co) in gpus.iter().zip(&cos) {
        assert!(co.kernel("saxpy").unwrap().runs_on(gpu.id()));
        let mut s = gpu.create_stream().unwrap();
        let (release, released) = channel::<()>();
        s.host_fn(move |_| released.recv().unwrap()).unwrap();
        let out = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        s.fill(&out, 0, 0x0505_0505, 4096).unwrap();
        gates.push(release);
        streams.push(s);
        outs.push(out);
    }
    // GPU 0's queues drain once its gate opens; GPU 1 stays held meanwhile.
    let g1 = gpus[1].clone();
    assert!(matches!(
        g1.synchronize(Some(Duration::from_millis(50))),
        Err(Error::Timeout { .. })
    ));
    gates[0].send(()).unwrap();
    gpus[0].synchronize(Some(T)).unwrap();
    assert!(outs[0].to_vec().unwrap().iter().all(|&v| v == 5));
    assert!(
        outs[1].to_vec().unwrap().iter().all(|&v| v != 5),
        "GPU 1 ran past its gate"
    );
    let opener = {
        let gate = gates.pop().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            gate.send(()).unwrap();
        })
    };
    kfd.synchronize(Some(T)).unwrap();
    assert!(outs[1].to_vec().unwrap().iter().all(|&v| v == 5));
    opener.join().unwrap();
    for s in &streams {
        assert!(s.is_idle());
    }
}

#[test]
fn typed_slices_carry_tensors_through_streams_and_kernel_arguments() {
    let Some(kfd) = common::under_test(
        "streams::typed_slices_carry_tensors_through_streams_and_kernel_arguments",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu.load_code_object(&kernels(&gpu)).unwrap();
    let saxpy = co.kernel("saxpy").unwrap();
    // One allocation holding two tensors, as a tensor library's arena would.
    let arena = Arc::new(gpu.alloc(8 * 1024, MemoryKind::DeviceLocal).unwrap());
    let whole = kfdrt::DeviceSlice::<f32>::new(arena.clone());
    assert_eq!(whole.len(), 2048);
    let (x, y) = (
        whole.slice(0, 1000).unwrap(),
        whole.slice(1024, 1000).unwrap(),
    );
    assert_eq!(y.offset(), 4096);
    assert!(whole.slice(1500, 600).is_err());
    let mut s = gpu.create_stream().unwrap();
    let xs: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    s.upload(&x, &xs).unwrap();
    s.upload(&y, &vec![1.0; 1000]).unwrap();
    assert!(s.upload(&x, &xs[..10]).is_err(), "a length mismatch");
    let mut args = KernelArgs::new(&saxpy).unwrap();
    args.set_f32(0, 3.0).unwrap();
    args.set_slice(1, &x).unwrap().set_slice(2, &y).unwrap();
    args.set_u32(3, 1000).unwrap();
    let kernel = saxpy.clone(); // kernels are shareable handles
    drop(saxpy);
    // Whole work-groups: this code-object-v4 kernel takes a partial group's own size as its
    // blockDim (see compiled_kernels.rs); its bound check keeps it inside the data.
    s.launch(
        &Dispatch::blocks(&kernel, [4, 1, 1], [256, 1, 1])
            .unwrap()
            .with_args(&args),
    )
    .unwrap();
    let mut out = vec![0f32; 1000];
    s.download(&mut out, &y).unwrap();
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, 3.0 * i as f32 + 1.0, "{i}");
    }
    // x was not touched by the kernel, nor the gap between the tensors by anything.
    let mut back = vec![0f32; 1000];
    s.download(&mut back, &x).unwrap();
    assert_eq!(back, xs);
}
