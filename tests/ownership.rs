//! GPU work owns what it uses. With the work held back (behind a dependency on a signal nobody
//! has set yet, or with the emulator's packet processors stalled: it cannot have run), dropping
//! the buffers, kernels and completions it uses frees nothing early; the results are right once
//! it runs; and everything is freed once it has completed, or once its queue is gone. Signals
//! follow the same rule, and objects of another device are refused. The allocation and event
//! counts are the emulator's: on another device the tests check the results.

use crate::common;

use kfdrt::emu::{Preset, WorkGroup};
use kfdrt::kernel_args::KernelArgs;
use kfdrt::memory::AllocOptions;
use kfdrt::{AqlQueueOptions, Buffer, CopyPath, Dispatch, Error, Gpu, Kfd, MemoryKind};
use std::sync::Arc;
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(30));

fn whole(gpu: &Gpu, size: u64) -> Buffer {
    gpu.alloc_with(size, AllocOptions::new(MemoryKind::GttCoherent).dedicated())
        .unwrap()
}

fn live_buffers(kfd: &Kfd) -> usize {
    kfd.emulator().unwrap().stats().live_allocations
}

/// The emulator's count of live allocations, `None` on another device.
fn counted_buffers(kfd: &Kfd) -> Option<usize> {
    kfd.emulator().map(|e| e.stats().live_allocations)
}

/// Makes the device's own allocations (signal pool page, events page, MMIO page) now, so they
/// do not show up in the counts later.
fn warm(kfd: &Kfd) {
    drop(kfd.create_signal(0).unwrap());
    kfd.flush_hdp().unwrap();
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 13 % 251) as u8).collect()
}

/// A copy whose source and completion are dropped before the engine runs it (it waits for a
/// signal nobody has set yet) still copies the right bytes, and the source is freed only after.
fn copy_with_everything_dropped(kfd: &Kfd, path: CopyPath) {
    let gpu = kfd.gpu(0).unwrap();
    let base = counted_buffers(kfd);
    let engine = gpu.copy_engine_preferring(path).unwrap();
    let dst = whole(&gpu, 1 << 16);
    dst.write(0, &[0; 1 << 16]).unwrap();
    let before = counted_buffers(kfd);
    let src = whole(&gpu, 1 << 16);
    src.write(0, &pattern(1 << 16)).unwrap();
    let gate = kfd.create_signal(1).unwrap();
    let copy = engine.copy(&dst, 0, &src, 0, 1 << 16, &[&gate]).unwrap();
    drop(src);
    drop(copy);
    if let Some(before) = before {
        assert_eq!(
            live_buffers(kfd),
            before + 1,
            "{path:?}: the source was freed while its copy had not run"
        );
    }
    assert!(
        dst.to_vec().unwrap().iter().all(|&b| b == 0),
        "{path:?}: the copy ran before its dependency was met"
    );
    gate.store(0).unwrap();
    // The engine's queue is in order: a later fill completes after the copy.
    let marker = whole(&gpu, 4096);
    engine
        .fill(&marker, 0, 1, 64, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(dst.to_vec().unwrap(), pattern(1 << 16), "{path:?}");
    // The retired copy lets go at the next submission on its queue, or with the engine.
    drop(engine);
    if let Some(base) = base {
        assert_eq!(
            live_buffers(kfd),
            base + 2,
            "{path:?}: dst and the marker only"
        );
    }
}

#[test]
fn copies_keep_their_buffers_until_they_complete() {
    let Some(kfd) = common::under_test(
        "ownership::copies_keep_their_buffers_until_they_complete",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    // Whole allocations, so the emulator's count shows each buffer.
    kfd.set_suballocation_threshold(0);
    warm(&kfd);
    copy_with_everything_dropped(&kfd, CopyPath::Sdma);
    copy_with_everything_dropped(&kfd, CopyPath::Shader);
}

#[test]
fn a_dispatch_keeps_its_kernel_and_argument_buffers_until_it_completes() {
    let Some(kfd) = common::under_test(
        "ownership::a_dispatch_keeps_its_kernel_and_argument_buffers_until_it_completes",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    kfd.set_suballocation_threshold(0);
    warm(&kfd);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let out = whole(&gpu, 4096);
    out.write(0, &[0; 4096]).unwrap();
    let before = counted_buffers(&kfd);
    // The compiled vector_add: `out[i] = a[i] + b[i]` over 64 floats.
    let target = gpu.info().gfx_target.clone();
    let elf = common::code_object_for("kernels", &target).unwrap();
    let co = gpu.load_code_object(&elf).unwrap();
    let kernel = co.kernel("vector_add").unwrap();
    let (a, b) = (whole(&gpu, 4096), whole(&gpu, 4096));
    let floats =
        |f: fn(u32) -> f32| -> Vec<u8> { (0..64).flat_map(|i| f(i).to_le_bytes()).collect() };
    a.write(0, &floats(|i| i as f32)).unwrap();
    b.write(0, &floats(|i| (3 * i) as f32)).unwrap();
    let mut args = KernelArgs::new(&kernel).unwrap();
    args.set_buffer(0, &a).unwrap().set_buffer(1, &b).unwrap();
    args.set_buffer(2, &out).unwrap().set_u32(3, 64).unwrap();
    // The dispatch waits behind a barrier on a signal nobody has set yet.
    let gate = kfd.create_signal(1).unwrap();
    let barrier = q.barrier_and(&[&gate]).unwrap();
    let s = q
        .dispatch(&Dispatch::linear(&kernel, 64, 64).with_args(&args))
        .unwrap();
    let held = counted_buffers(&kfd);
    // The kernel, the inputs and the arguments: all gone from the caller's side before the GPU
    // has run anything. (The code object stays: its other segments are its own.)
    drop((kernel, a, b, args));
    if let Some(held) = held {
        assert_eq!(
            live_buffers(&kfd),
            held,
            "the kernel's code or an input was freed while its dispatch had not run"
        );
    }
    assert!(
        !s.is_complete(),
        "the dispatch ran before the barrier let it"
    );
    gate.store(0).unwrap();
    barrier.wait(T).unwrap();
    s.wait(T).unwrap();
    let got = out.to_vec().unwrap();
    for i in 0..64u32 {
        let v = f32::from_le_bytes(got[4 * i as usize..][..4].try_into().unwrap());
        assert_eq!(v, (4 * i) as f32);
    }
    drop((barrier, s, co));
    if let Some(before) = before {
        assert_eq!(
            live_buffers(&kfd),
            before,
            "freed once the completion was seen"
        );
    }
}

#[test]
fn an_unwaited_submission_is_drained_by_its_queue() {
    let Some(kfd) = common::under_test(
        "ownership::an_unwaited_submission_is_drained_by_its_queue",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    kfd.set_suballocation_threshold(0);
    warm(&kfd);
    let gpu = kfd.gpu(0).unwrap();
    let out = whole(&gpu, 4096);
    out.write(0, &[0; 4096]).unwrap();
    let before = counted_buffers(&kfd);
    let co = common::load_for(&gpu, "kernels");
    let kernel = co.kernel("vector_add").unwrap();
    let input = whole(&gpu, 4096);
    input
        .write(0, &[2.5f32.to_le_bytes(); 64].concat())
        .unwrap();
    let mut args = KernelArgs::new(&kernel).unwrap();
    args.set_buffer(0, &input)
        .unwrap()
        .set_buffer(1, &input)
        .unwrap();
    args.set_buffer(2, &out).unwrap().set_u32(3, 64).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    // Held back behind a barrier on a signal nobody has set yet.
    let gate = kfd.create_signal(1).unwrap();
    drop(q.barrier_and(&[&gate]).unwrap());
    drop(
        q.dispatch(&Dispatch::linear(&kernel, 64, 64).with_args(&args))
            .unwrap(),
    );
    drop((kernel, input, args));
    gate.store(0).unwrap();
    q.barrier_and(&[]).unwrap().wait(T).unwrap();
    // It ran, on the code and input it kept.
    gpu.health().expect("no GPU fault");
    let got = out.to_vec().unwrap();
    assert_eq!(got[..256], [5f32.to_le_bytes(); 64].concat());
    // The queue, whose retired work kept the kernel's code, goes: so does everything else.
    drop((q, co));
    if let (Some(emu), Some(before)) = (kfd.emulator(), before) {
        assert_eq!(live_buffers(&kfd), before);
        assert_eq!(emu.stats().live_queues, 0);
    }
}

#[test]
fn signals_of_submissions_dropped_on_a_destroyed_queue_are_reused() {
    // Each submission takes a signal; dropped unwaited on a queue that never runs them, their
    // slots used to stay pending forever, and a few thousand exhausted KFD's events (4096 per
    // process): 16 rounds of 300 would exhaust them again. The emulator also counts them.
    let Some(kfd) = common::under_test(
        "ownership::signals_of_submissions_dropped_on_a_destroyed_queue_are_reused",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let events_after = |n: usize| {
        let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        // Held back behind a barrier on a signal nobody sets: destroyed before anything ran.
        let gate = kfd.create_signal(1).unwrap();
        drop(q.barrier_and(&[&gate]).unwrap());
        for _ in 0..n {
            drop(q.barrier_and(&[]).unwrap());
        }
        drop(q);
        kfd.emulator().map(|e| e.stats().live_events)
    };
    let first = events_after(300);
    for _ in 0..15 {
        assert_eq!(
            events_after(300),
            first,
            "signal slots leaked with the destroyed queue"
        );
    }
}

#[test]
fn a_signal_a_barrier_waits_on_is_not_recycled_under_it() {
    let Some(kfd) = common::under_test(
        "ownership::a_signal_a_barrier_waits_on_is_not_recycled_under_it",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let dep = kfd.create_signal(1).unwrap();
    let barrier = q.barrier_and(&[&dep]).unwrap();
    drop(dep);
    // New signals start at 0: one taking the dropped signal's slot would satisfy the barrier.
    let others: Vec<_> = (0..200).map(|_| kfd.create_signal(0).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !barrier.is_complete(),
        "the barrier's dependency was recycled and satisfied it"
    );
    drop(others);
}

#[test]
fn objects_of_another_device_are_refused() {
    let Some(a) = common::under_test(
        "ownership::objects_of_another_device_are_refused",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let b = common::emulated(Preset::Gfx90a, 1);
    let (ga, gb) = (a.gpu(0).unwrap(), b.gpu(0).unwrap());
    let foreign_signal = b.create_signal(1).unwrap();
    let q = ga.create_aql_queue(AqlQueueOptions::default()).unwrap();
    assert!(matches!(
        q.barrier_and(&[&foreign_signal]),
        Err(Error::ForeignObject { .. })
    ));
    let mine = ga.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let theirs = gb.alloc(4096, MemoryKind::GttCoherent).unwrap();
    for path in [CopyPath::Sdma, CopyPath::Shader] {
        let engine = ga.copy_engine_preferring(path).unwrap();
        assert!(
            matches!(
                engine.copy(&mine, 0, &theirs, 0, 64, &[]),
                Err(Error::ForeignObject { .. })
            ),
            "{path:?}"
        );
        assert!(matches!(
            engine.copy(&mine, 0, &mine, 64, 64, &[&foreign_signal]),
            Err(Error::ForeignObject { .. })
        ));
    }
}

#[test]
fn a_completion_signal_is_reused_only_once_its_work_is_done_and_nobody_else_holds_it() {
    let Some(kfd) = common::under_test(
        "ownership::a_completion_signal_is_reused_only_once_its_work_is_done_and_nobody_else_holds_it",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let gate = kfd.create_signal(1).unwrap();

    // Waited for and dropped: the queue keeps the signal and gives it to the next submission,
    // which starts it at 1 again (a signal left at 0 would look complete at once). That one
    // waits for `gate`, holding back everything after it.
    let first = q.barrier_and(&[]).unwrap();
    first.wait(T).unwrap();
    let handle = first.signal().handle();
    drop(first);
    let gated = q.barrier_and(&[&gate]).unwrap();
    assert_eq!(
        gated.signal().handle(),
        handle,
        "a done signal was not reused"
    );
    assert_eq!(gated.signal().value(), 1);
    assert!(!gated.is_complete());
    let second = q.barrier_and(&[]).unwrap();
    assert!(!second.is_complete());

    // Dropped before it ran: its signal is still to be written and must not be handed out.
    let pending = second.signal().handle();
    drop(second);
    let third = q.barrier_and(&[]).unwrap();
    assert_ne!(
        third.signal().handle(),
        pending,
        "an armed signal was reused"
    );
    drop(gated);
    gate.store(0).unwrap();
    third.wait(T).unwrap();

    // A clone kept by the caller keeps it out of reuse too: the caller may still wait on it.
    let kept = third.signal().clone();
    drop(third);
    let fourth = q.barrier_and(&[]).unwrap();
    assert_ne!(fourth.signal().handle(), kept.handle());
    fourth.wait(T).unwrap();
    assert_eq!(
        kept.value(),
        0,
        "the caller's signal was restarted under it"
    );
}

#[test]
fn a_direct_dispatch_gets_its_raw_arguments_with_the_rest_zeroed() {
    // Short raw arguments are refused by default (`bad_input`); unchecked, they are padded.
    let kfd = common::Checked::new(
        kfdrt::Kfd::builder()
            .emulated(kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 1))
            .debug(kfdrt::DebugOptions::default().unchecked())
            .open()
            .unwrap(),
    );
    let gpu = kfd.gpu(0).unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let kernel = gpu
        .emulated_kernel(
            "args",
            64,
            Arc::new(move |wg: &WorkGroup<'_>| {
                let mut bytes = Vec::with_capacity(64);
                for i in 0..16 {
                    bytes.extend_from_slice(&wg.kernarg_u32(4 * i)?.to_le_bytes());
                }
                *s.lock().unwrap() = bytes;
                Ok(())
            }),
        )
        .unwrap();
    // One page of kernel-argument memory (the least, for the smallest ring): 64 regions of 64
    // bytes, reused in turn.
    let q = gpu
        .create_aql_queue(
            AqlQueueOptions::default()
                .with_size_packets(64)
                .with_kernarg_bytes(4096),
        )
        .unwrap();
    for fill in [0xaa_u8, 0x55] {
        // Dirty every region, then pass fewer bytes than the kernel declares.
        let full = [fill; 64];
        for _ in 0..64 {
            // SAFETY: the bytes hold no address.
            let d = unsafe { Dispatch::linear(&kernel, 1, 1).with_raw_args(&full) };
            q.dispatch(&d).unwrap().wait(T).unwrap();
        }
        let short = [7_u8; 12];
        // SAFETY: as above.
        let d = unsafe { Dispatch::linear(&kernel, 1, 1).with_raw_args(&short) };
        q.dispatch(&d).unwrap().wait(T).unwrap();
        let got = seen.lock().unwrap().clone();
        assert_eq!(&got[..12], &short[..]);
        assert!(got[12..].iter().all(|&b| b == 0), "stale bytes: {got:?}");
    }
}

#[test]
fn completion_signals_kept_for_reuse_neither_leak_nor_double_up() {
    // Pipelines of submissions return more signals at once than a queue keeps: the first
    // goes to the queue's slot, the next ones to its list, the rest to the device's pool.
    let Some(kfd) = common::under_test(
        "ownership::completion_signals_kept_for_reuse_neither_leak_nor_double_up",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let round = |n: usize| {
        // Held back behind a barrier on a signal nobody has set yet.
        let gate = kfd.create_signal(1).unwrap();
        let mut subs = vec![q.barrier_and(&[&gate]).unwrap()];
        subs.extend((0..n).map(|_| q.barrier_and(&[]).unwrap()));
        // Every submission in flight has a signal of its own.
        let mut handles: Vec<u64> = subs.iter().map(|s| s.signal().handle()).collect();
        handles.sort_unstable();
        handles.dedup();
        assert_eq!(
            handles.len(),
            n + 1,
            "two submissions in flight share a signal"
        );
        assert!(subs.iter().all(|s| !s.is_complete()), "ran before the gate");
        gate.store(0).unwrap();
        for s in &subs {
            s.wait(T).unwrap();
        }
    };
    round(40);
    // The events are the emulator's count; elsewhere 200 rounds without running out is the check.
    let events = kfd.emulator().map(|e| e.stats().live_events);
    for n in [1, 2, 17, 40, 3].into_iter().cycle().take(200) {
        round(n);
    }
    if let (Some(emu), Some(events)) = (kfd.emulator(), events) {
        assert_eq!(emu.stats().live_events, events, "signals leaked");
    }
}

#[test]
fn a_batch_holds_the_code_of_every_kernel_it_runs() {
    let Some(kfd) = common::under_test(
        "ownership::a_batch_holds_the_code_of_every_kernel_it_runs",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    kfd.set_suballocation_threshold(0);
    warm(&kfd);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    // saxpy `y = alpha * x + y` over 64 floats, x all 1: each run adds alpha to every y.
    let (x, y) = (whole(&gpu, 4096), whole(&gpu, 4096));
    x.write(0, &[1.0f32.to_le_bytes(); 64].concat()).unwrap();
    y.write(0, &[0; 4096]).unwrap();
    let before = counted_buffers(&kfd);
    // The same kernel from two loads of the code object: two copies of its code.
    let elf = common::code_object_for("kernels", &gpu.info().gfx_target).unwrap();
    let (co1, co2) = (
        gpu.load_code_object(&elf).unwrap(),
        gpu.load_code_object(&elf).unwrap(),
    );
    let (a, b) = (co1.kernel("saxpy").unwrap(), co2.kernel("saxpy").unwrap());
    let args_of = |k: &kfdrt::Kernel, alpha: f32| {
        let mut args = KernelArgs::new(k).unwrap();
        args.set_f32(0, alpha).unwrap().set_buffer(1, &x).unwrap();
        args.set_buffer(2, &y).unwrap().set_u32(3, 64).unwrap();
        args
    };
    let (add_1, add_100) = (args_of(&a, 1.0), args_of(&b, 100.0));
    // The same descriptor as `b`, with nothing to hold: it must not excuse `b`'s own dispatch
    // from holding `b`'s code.
    // SAFETY: `b`'s descriptor, which the batch keeps (through `b`'s dispatch) until it ran.
    let b_raw = unsafe {
        kfdrt::Kernel::from_raw(
            "saxpy (raw)",
            b.object(),
            b.kernarg_size(),
            b.group_segment_size(),
            b.private_segment_size(),
        )
    };
    let raw_args = add_100
        .encode(
            &kfdrt::LaunchGeometry::linear(64, 64),
            &kfdrt::kernel_args::LaunchContext::for_queue(&q),
        )
        .unwrap();
    // Held back behind a barrier on a signal nobody has set yet.
    let gate = kfd.create_signal(1).unwrap();
    let barrier = q.barrier_and(&[&gate]).unwrap();
    let mut batch = q.batch().unwrap();
    batch
        .dispatch(&Dispatch::linear(&a, 64, 64).with_args(&add_1))
        .unwrap();
    batch
        .dispatch(&common::raw_dispatch(&b_raw, 64, 64, &raw_args))
        .unwrap();
    batch
        .dispatch(&Dispatch::linear(&b, 64, 64).with_args(&add_100))
        .unwrap();
    batch
        .dispatch(&Dispatch::linear(&a, 64, 64).with_args(&add_1))
        .unwrap();
    let s = batch.submit().unwrap();
    let held = counted_buffers(&kfd);
    // Both kernels gone from the caller's side (their code objects stay: their other segments
    // are their own).
    drop((a, b, b_raw, add_1, add_100));
    if let Some(held) = held {
        assert_eq!(
            live_buffers(&kfd),
            held,
            "a kernel's code was freed while the batch had not run"
        );
    }
    assert!(!s.is_complete(), "the batch ran before the barrier let it");
    gate.store(0).unwrap();
    barrier.wait(T).unwrap();
    s.wait(T).unwrap();
    let got = y.to_vec().unwrap();
    for i in 0..64 {
        assert_eq!(got[4 * i..][..4], 202f32.to_le_bytes(), "y[{i}]");
    }
    drop((barrier, s, co1, co2));
    if let Some(before) = before {
        assert_eq!(live_buffers(&kfd), before, "freed once the batch completed");
    }
}
