//! AQL queue tests: multi-producer submission, ring-full behaviour, barriers, queue errors.

use crate::common;

use common::raw_dispatch;

use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::queue::error_bits;
use kfdrt::{AqlQueueOptions, Dispatch, Error, EventKind, EventReset, Kernel, MemoryKind};
use std::sync::Arc;
use std::time::Duration;

const LONG: Option<Duration> = Some(Duration::from_secs(120));

fn emu() -> common::Checked {
    common::emulated(Preset::Gfx90a, 1)
}

/// Kernel: atomically increments `counters[kernarg id]`, once per dispatch (grid of one group).
fn count_kernel(wg: &WorkGroup<'_>) -> Result<(), GpuFault> {
    let counters = wg.kernarg_u64(0)?;
    let id = wg.kernarg_u64(8)?;
    wg.mem.atomic_add_u64(counters + id * 8, 1)?;
    Ok(())
}

fn args(counters: u64, id: u64) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..8].copy_from_slice(&counters.to_le_bytes());
    a[8..].copy_from_slice(&id.to_le_bytes());
    a
}

#[test]
fn a_million_dispatches_from_four_producers_each_run_exactly_once() {
    const PRODUCERS: u64 = 4;
    const TOTAL: u64 = 1_000_000;
    const BATCH: u64 = 50;
    let kfd = emu();
    let gpu = kfd.gpu(0).unwrap();
    let counters = gpu.alloc(TOTAL * 8, MemoryKind::GttCoherent).unwrap();
    let kernel = Arc::new(
        gpu.emulated_kernel("count", 16, Arc::new(count_kernel))
            .unwrap(),
    );
    let queue = gpu
        .create_aql_queue(AqlQueueOptions::default().with_size_packets(256))
        .unwrap();
    let base = counters.gpu_address();
    let threads: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (queue, kernel) = (queue.clone(), kernel.clone());
            std::thread::spawn(move || {
                let per = TOTAL / PRODUCERS;
                let mut pending = std::collections::VecDeque::new();
                for start in (p * per..(p + 1) * per).step_by(BATCH as usize) {
                    let mut batch = queue.batch().unwrap();
                    for id in start..start + BATCH {
                        let a = args(base, id);
                        batch.dispatch(&raw_dispatch(&kernel, 1, 1, &a)).unwrap();
                    }
                    pending.push_back(batch.submit().unwrap());
                    // Keep a bounded number of completions outstanding.
                    while pending.len() > 8 {
                        pending.pop_front().unwrap().wait(LONG).unwrap();
                    }
                }
                for s in pending {
                    s.wait(LONG).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let bytes = counters.to_vec().unwrap();
    let mut wrong = Vec::new();
    for (id, c) in bytes.chunks_exact(8).enumerate() {
        let v = u64::from_le_bytes(c.try_into().unwrap());
        if v != 1 && wrong.len() < 10 {
            wrong.push((id, v));
        }
    }
    assert!(
        wrong.is_empty(),
        "dispatches not run exactly once (id, count): {wrong:?}"
    );
    assert!(
        queue.write_index() >= TOTAL,
        "ring wrapped {} times",
        queue.write_index() / 256
    );
    // The processor advances the read index just after the last completion signal.
    let start = std::time::Instant::now();
    while queue.read_index() != queue.write_index() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the read index never caught up"
        );
        std::thread::yield_now();
    }
    let stats = kfd.emulator().unwrap().stats();
    assert_eq!(
        stats.torn_packets, 0,
        "kfdrt's writer must never tear a packet"
    );
    assert!(stats.packets_run >= TOTAL);
}

#[test]
fn try_submit_reports_full_while_stalled_and_everything_runs_after() {
    let kfd = emu();
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    let counters = gpu.alloc(1024 * 8, MemoryKind::GttCoherent).unwrap();
    let kernel = gpu
        .emulated_kernel("count", 16, Arc::new(count_kernel))
        .unwrap();
    let queue = gpu
        .create_aql_queue(AqlQueueOptions::default().with_size_packets(64))
        .unwrap();
    emu.faults().stall_queue(queue.id());
    let mut subs = Vec::new();
    let mut id = 0u64;
    loop {
        let a = args(counters.gpu_address(), id);
        let mut b = queue.batch().unwrap();
        b.dispatch(&raw_dispatch(&kernel, 1, 1, &a)).unwrap();
        match b.try_submit() {
            Ok(s) => subs.push(s),
            Err(Error::QueueFull { queue_id }) => {
                assert_eq!(queue_id, queue.id());
                break;
            }
            Err(e) => panic!("unexpected {e}"),
        }
        id += 1;
        assert!(
            id <= 64,
            "a 64-slot ring accepted more than 64 packets while stalled (read index {})",
            queue.read_index()
        );
    }
    assert_eq!(id, 64, "the ring holds exactly 64 packets");
    assert!(subs.iter().all(|s| !s.is_complete()));
    emu.faults().resume_queue(queue.id());
    for s in &subs {
        s.wait(LONG).unwrap();
    }
    let c = counters.to_vec().unwrap();
    for i in 0..1024usize {
        let v = u64::from_le_bytes(c[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(v, u64::from(i < 64), "counter {i}");
    }
}

/// Kernel-argument memory is a ring: a region that does not fit between the last one's end and
/// the end of the memory starts again at the beginning once the work before it has completed,
/// however long it is; while that work runs, its arguments are never overwritten.
#[test]
fn long_kernel_arguments_fit_once_earlier_dispatches_completed() {
    let kfd = emu();
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    let counters = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let base = counters.gpu_address();
    let kernel = gpu
        .emulated_kernel("count", 16, Arc::new(count_kernel))
        .unwrap();
    // 4096 bytes of kernel-argument memory, the least a queue gets.
    let queue = gpu
        .create_aql_queue(
            AqlQueueOptions::default()
                .with_size_packets(64)
                .with_kernarg_bytes(4096),
        )
        .unwrap();
    // The count kernel's 16 bytes of arguments, padded to `len`.
    let block = |id: u64, len: usize| {
        let mut a = vec![0u8; len];
        a[..16].copy_from_slice(&args(base, id));
        a
    };
    let full = |r: kfdrt::Result<kfdrt::Submission>| match r {
        Err(Error::QueueFull { queue_id }) => assert_eq!(queue_id, queue.id()),
        Err(e) => panic!("expected QueueFull, got {e}"),
        Ok(_) => panic!("expected QueueFull, the dispatch was taken"),
    };
    let try_submit = |a: &[u8]| {
        let mut b = queue.batch().unwrap();
        b.dispatch(&raw_dispatch(&kernel, 1, 1, a)).unwrap();
        b.try_submit()
    };
    // A single dispatch (the direct path): 2048 bytes, then 3072 once the first completed.
    queue
        .dispatch(&raw_dispatch(&kernel, 1, 1, &block(0, 2048)))
        .unwrap()
        .wait(LONG)
        .unwrap();
    queue
        .dispatch(&raw_dispatch(&kernel, 1, 1, &block(1, 3072)))
        .unwrap()
        .wait(LONG)
        .unwrap();
    // The whole memory after a short block.
    queue
        .dispatch(&raw_dispatch(&kernel, 1, 1, &block(2, 64)))
        .unwrap()
        .wait(LONG)
        .unwrap();
    queue
        .dispatch(&raw_dispatch(&kernel, 1, 1, &block(3, 4096)))
        .unwrap()
        .wait(LONG)
        .unwrap();
    // A batch that must not wait (try_submit): the same after 2048 bytes that completed.
    try_submit(&block(4, 2048)).unwrap().wait(LONG).unwrap();
    try_submit(&block(5, 3072)).unwrap().wait(LONG).unwrap();
    // While 2048 bytes are in flight, 3072 do not fit anywhere: no room, and nothing is
    // written over the running dispatch's arguments.
    emu.faults().stall_queue(queue.id());
    let running = try_submit(&block(6, 2048)).unwrap();
    full(try_submit(&block(7, 3072)));
    assert!(!running.is_complete());
    emu.faults().resume_queue(queue.id());
    running.wait(LONG).unwrap();
    try_submit(&block(8, 3072)).unwrap().wait(LONG).unwrap();
    let c = counters.to_vec().unwrap();
    for i in 0..16usize {
        let v = u64::from_le_bytes(c[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(v, u64::from(i <= 8 && i != 7), "counter {i}");
    }
}

#[test]
fn barrier_and_waits_for_all_five_and_chains_beyond_five() {
    let Some(kfd) = common::under_test(
        "aql::barrier_and_waits_for_all_five_and_chains_beyond_five",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    for n in [5usize, 12] {
        let deps: Vec<_> = (0..n).map(|_| kfd.create_signal(1).unwrap()).collect();
        let refs: Vec<&kfdrt::Signal> = deps.iter().collect();
        let done = queue.barrier_and(&refs).unwrap();
        for d in &deps[..n - 1] {
            d.store(0).unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !done.is_complete(),
            "barrier-AND completed with one dependency outstanding"
        );
        deps[n - 1].store(0).unwrap();
        done.wait(LONG).unwrap();
    }
}

#[test]
fn barrier_or_completes_on_any() {
    let Some(kfd) = common::under_test("aql::barrier_or_completes_on_any", Preset::Gfx90a, 1, &[])
    else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let deps: Vec<_> = (0..5).map(|_| kfd.create_signal(1).unwrap()).collect();
    let refs: Vec<&kfdrt::Signal> = deps.iter().collect();
    let done = queue.barrier_or(&refs).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(!done.is_complete());
    deps[3].store(0).unwrap();
    done.wait(LONG).unwrap();
    let six: Vec<_> = (0..6).map(|_| kfd.create_signal(1).unwrap()).collect();
    let refs: Vec<&kfdrt::Signal> = six.iter().collect();
    assert!(matches!(
        queue.barrier_or(&refs),
        Err(Error::TooLarge {
            requested: 6,
            limit: 5,
            ..
        })
    ));
}

#[test]
fn invalid_kernel_object_stops_the_queue_with_a_typed_error() {
    let kfd = emu();
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    // SAFETY: the address is deliberately not a kernel; the emulator must reject it.
    let bogus = unsafe { Kernel::from_raw("bogus", 0x10_0000_0000, 0, 0, 0) };
    let s = queue.dispatch(&Dispatch::linear(&bogus, 64, 64)).unwrap();
    match s.wait(LONG) {
        Err(Error::QueueError {
            queue_id, fault, ..
        }) => {
            assert_eq!(queue_id, queue.id());
            assert_ne!(fault.code & error_bits::INVALID_CODE_OBJECT, 0, "{fault}");
        }
        other => panic!("expected a queue error, got {other:?}"),
    }
    assert!(queue.fault().is_some());
    assert!(matches!(
        queue.barrier_and(&[]),
        Err(Error::QueueError { .. })
    ));
}

/// A kernel that is never run: every dispatch of it a test makes is refused before the ring
/// (or only prepared), so its descriptor address names nothing.
fn never_run(kernarg_size: u32, group_segment_size: u32) -> Kernel {
    // SAFETY: see above; nothing reads the descriptor.
    unsafe {
        Kernel::from_raw(
            "never_run",
            0x10_0000_0000,
            kernarg_size,
            group_segment_size,
            0,
        )
    }
}

#[test]
fn bad_dispatch_arguments_are_refused_before_the_ring() {
    let Some(kfd) = common::under_test(
        "aql::bad_dispatch_arguments_are_refused_before_the_ring",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let kernel = never_run(16, 0);
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let before = queue.write_index();
    let zero = raw_dispatch(&kernel, 1, 1, &[0; 16]).with_grid([0, 1, 1]);
    assert!(matches!(
        queue.dispatch(&zero),
        Err(Error::BadGeometry {
            grid: [0, 1, 1],
            ..
        })
    ));
    let huge = raw_dispatch(&kernel, 2048, 1, &[0; 16]).with_workgroup([1024, 2, 1]);
    assert!(matches!(
        queue.dispatch(&huge),
        Err(Error::TooLarge {
            requested: 2048,
            limit: 1024,
            ..
        })
    ));
    assert_eq!(queue.write_index(), before, "nothing reached the ring");
    for size in [0u32, 63, 100, 1 << 20] {
        let r = gpu.create_aql_queue(AqlQueueOptions::default().with_size_packets(size));
        assert!(
            matches!(r, Err(Error::QueueSize { requested, .. }) if requested == u64::from(size)),
            "size {size}"
        );
    }
}

#[test]
fn kernel_touching_unmapped_memory_reports_the_address() {
    let kfd = emu();
    let gpu = kfd.gpu(0).unwrap();
    let mem_event = kfd
        .create_event(EventKind::Memory, EventReset::Manual)
        .unwrap();
    const BAD: u64 = 0x7e57_0000_1000;
    let kernel = gpu
        .emulated_kernel(
            "wild",
            0,
            Arc::new(|wg: &WorkGroup<'_>| wg.mem.write_u32(BAD + 8, 1)),
        )
        .unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let s = queue.dispatch(&Dispatch::linear(&kernel, 1, 1)).unwrap();
    // A page fault is a device exception: the wait ends with it (see tests/faults.rs).
    match s.wait(LONG) {
        Err(Error::DeviceFault {
            fault, queue_id, ..
        }) => {
            assert_eq!(fault.va, BAD & !0xFFF);
            assert_eq!(queue_id, Some(queue.id()));
        }
        other => panic!("expected a device fault, got {other:?}"),
    }
    assert!(queue.fault().is_none(), "the CP writes no error signal");
    let fault = mem_event
        .wait_memory_exception(LONG)
        .unwrap()
        .expect("a memory exception");
    assert_eq!(fault.va & !0xFFF, BAD & !0xFFF, "fault at {:#x}", fault.va);
    assert_eq!(fault.gpu_id, gpu.id());
}

#[test]
fn normal_priority_by_default_and_queues_are_destroyed_on_drop() {
    assert_eq!(
        AqlQueueOptions::default().priority,
        kfdrt::QueuePriority::Normal
    );
    let kfd = emu();
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    {
        let q: Vec<_> = (0..4)
            .map(|_| gpu.create_aql_queue(AqlQueueOptions::default()).unwrap())
            .collect();
        assert_eq!(emu.stats().live_queues, 4);
        q[0].barrier_and(&[]).unwrap().wait(LONG).unwrap();
    }
    assert_eq!(emu.stats().live_queues, 0);
}

#[test]
fn prepared_dispatches_run_with_their_own_arguments() {
    let Some(kfd) = common::under_test(
        "aql::prepared_dispatches_run_with_their_own_arguments",
        Preset::Gfx90a,
        1,
        &["fence"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let counters = gpu.alloc(256 * 4, MemoryKind::GttCoherent).unwrap();
    // `fence_then_count(out, counter, flag)`, one work-item per dispatch: it stores 0 to
    // `out[0]` and adds one to `*counter` (here the dispatch's own counter).
    let co = common::load_for(&gpu, "fence");
    let kernel = co.kernel("fence_then_count").unwrap();
    let (out, flag) = (
        gpu.alloc(4096, MemoryKind::GttCoherent).unwrap(),
        gpu.alloc(4096, MemoryKind::GttCoherent).unwrap(),
    );
    let fence_args = |id: u64| {
        let mut a = [0u8; 24];
        a[..8].copy_from_slice(&out.gpu_address().to_le_bytes());
        a[8..16].copy_from_slice(&(counters.gpu_address() + 4 * id).to_le_bytes());
        a[16..].copy_from_slice(&flag.gpu_address().to_le_bytes());
        a
    };
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    // A bad shape is refused when preparing, not later.
    let bad = Dispatch::linear(&kernel, 1, 1).with_workgroup([64, 32, 1]);
    assert!(matches!(
        bad.prepare(),
        Err(Error::TooLarge {
            requested: 2048,
            ..
        })
    ));
    let prepared = Dispatch::linear(&kernel, 1, 1).prepare().unwrap();
    for round in 0..4u64 {
        let mut batch = queue.batch().unwrap();
        for id in 0..64 {
            // SAFETY: the buffers outlive the wait below.
            unsafe { batch.dispatch_prepared(&prepared, &fence_args(round * 64 + id)) };
        }
        batch.submit().unwrap().wait(LONG).unwrap();
    }
    let bytes = counters.to_vec().unwrap();
    for (id, c) in bytes.chunks_exact(4).enumerate() {
        assert_eq!(u32::from_le_bytes(c.try_into().unwrap()), 1, "counter {id}");
    }
}

/// What the driver holds is the emulator's to tell (`queue_cu_mask`); what kfdrt refuses, and
/// that a masked queue runs, is `bad_cu_masks_are_refused_and_a_masked_queue_still_runs`.
#[test]
fn cu_masks_reach_the_driver() {
    let kfd = emu();
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let emu = kfd.emulator().unwrap();
    assert_eq!(emu.queue_cu_mask(queue.id()), Some(vec![]));
    let mask = [0x5555_5555u32, 0x0000_00FF, 0, 0];
    queue.set_cu_mask(&mask).unwrap();
    assert_eq!(emu.queue_cu_mask(queue.id()), Some(mask.to_vec()));
}

#[test]
fn bad_cu_masks_are_refused_and_a_masked_queue_still_runs() {
    let Some(kfd) = common::under_test(
        "aql::bad_cu_masks_are_refused_and_a_masked_queue_still_runs",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    queue
        .set_cu_mask(&[0x5555_5555u32, 0x0000_00FF, 0, 0])
        .unwrap();
    assert!(matches!(
        queue.set_cu_mask(&[]),
        Err(Error::ZeroSize { what: "CU mask" })
    ));
    assert!(matches!(
        queue.set_cu_mask(&[1; 33]),
        Err(Error::TooLarge {
            requested: 33,
            limit: 32,
            ..
        })
    ));
    // The queue still runs.
    queue.barrier_and(&[]).unwrap().wait(LONG).unwrap();
}

#[test]
fn an_empty_batch_writes_nothing_and_rings_no_doorbell() {
    let kfd = emu();
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let emu = kfd.emulator().unwrap();
    let (index, doorbell) = (queue.write_index(), emu.doorbell_hints(gpu.id()));
    let s = queue.batch().unwrap().submit().unwrap();
    assert!(s.is_complete());
    s.wait(Some(Duration::from_secs(1))).unwrap();
    let s = queue.batch().unwrap().try_submit().unwrap();
    assert!(s.is_complete());
    assert_eq!(queue.write_index(), index, "no packet was reserved");
    assert_eq!(
        emu.doorbell_hints(gpu.id()),
        doorbell,
        "no doorbell was rung"
    );
    assert_eq!(emu.stats().packets_run, 0);
}

#[test]
fn lds_beyond_the_gpu_or_overflowing_is_refused_before_the_ring() {
    let Some(kfd) = common::under_test(
        "aql::lds_beyond_the_gpu_or_overflowing_is_refused_before_the_ring",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    // The GPU's LDS per work-group (64 KiB on the emulated gfx90a).
    let lds = u64::from(gpu.info().lds_bytes);
    assert!(lds > 16 << 10, "{lds}");
    // A kernel said to use 16 KiB of static LDS.
    let kernel = never_run(16, 16 << 10);
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let before = queue.write_index();
    let overflow = raw_dispatch(&kernel, 1, 1, &[0; 16]).with_dynamic_lds(u32::MAX);
    let overflowing = u64::from(u32::MAX) + (16 << 10);
    for r in [
        overflow.prepare().map(drop),
        queue.dispatch(&overflow).map(drop),
    ] {
        assert!(
            matches!(r, Err(Error::TooLarge { requested, .. }) if requested == overflowing),
            "{r:?}"
        );
    }
    // 16 KiB static + (the GPU's LDS - 15 KiB) dynamic > the GPU's LDS (on a gfx90a: 49 KiB
    // dynamic, 65 KiB in all, over 64 KiB).
    let dynamic = (lds - (15 << 10)) as u32;
    let too_much = raw_dispatch(&kernel, 1, 1, &[0; 16]).with_dynamic_lds(dynamic);
    match queue.dispatch(&too_much) {
        Err(Error::TooLarge {
            requested, limit, ..
        }) => assert_eq!((requested, limit), (lds + 1024, lds)),
        other => panic!("{other:?}"),
    }
    let prepared = too_much.prepare().unwrap();
    let mut b = queue.batch().unwrap();
    // SAFETY: no address among the arguments.
    unsafe { b.dispatch_prepared(&prepared, &[0; 16]) };
    let r = b.submit();
    assert!(
        matches!(r, Err(Error::TooLarge { requested, .. }) if requested == lds + 1024),
        "{r:?}"
    );
    assert_eq!(queue.write_index(), before, "nothing reached the ring");
    let fits = raw_dispatch(&kernel, 1, 1, &[0; 16]).with_dynamic_lds(dynamic - 1024);
    fits.prepare().unwrap();
}

#[test]
fn profiling_turns_on_and_off_while_the_queue_runs() {
    let Some(kfd) = common::under_test(
        "aql::profiling_turns_on_and_off_while_the_queue_runs",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let stamps = |q: &kfdrt::AqlQueue| {
        let s = q.barrier_and(&[]).unwrap();
        s.wait(Some(Duration::from_secs(20))).unwrap();
        s.timestamps()
    };
    assert_eq!(stamps(&q), (0, 0), "not profiled");
    q.set_profiling(true);
    let (start, end) = stamps(&q);
    assert!(start > 0 && end >= start, "{start} {end}");
    q.set_profiling(false);
    // A signal reused from the profiled packet keeps its old stamps; a fresh one has none.
    let s = q.barrier_and(&[]).unwrap();
    let held = q.barrier_and(&[]).unwrap();
    held.wait(Some(Duration::from_secs(20))).unwrap();
    s.wait(Some(Duration::from_secs(20))).unwrap();
    assert!(
        [s.timestamps(), held.timestamps()].contains(&(0, 0)),
        "profiling stayed on"
    );
}

/// A dispatch's submission and a copy's completion are waited on together through
/// `Completion`, and an unfinished one makes the joint wait time out.
#[test]
fn completions_of_different_queue_kinds_are_waited_on_together() {
    use kfdrt::queue::{wait_all, Completion};
    let Some(kfd) = common::under_test(
        "aql::completions_of_different_queue_kinds_are_waited_on_together",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let a = gpu.alloc(4096, kfdrt::MemoryKind::GttCoherent).unwrap();
    let b = gpu.alloc(4096, kfdrt::MemoryKind::GttCoherent).unwrap();
    a.write(0, &[7; 4096]).unwrap();
    let gate = kfd.create_signal(1).unwrap();
    let held = queue.barrier_and(&[&gate]).unwrap();
    let copy = gpu
        .copy_engine()
        .unwrap()
        .copy(&b, 0, &a, 0, 4096, &[])
        .unwrap();
    let r = wait_all(&[&copy, &held], Some(Duration::from_millis(50)));
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    assert!(copy.is_complete() && !held.is_complete());
    gate.store(0).unwrap();
    wait_all(&[&held, &copy], LONG).unwrap();
    assert!(Completion::is_complete(&held));
    assert_eq!(b.to_vec().unwrap(), vec![7; 4096]);
}
