//! Bad input of every kind the public API accepts gets a typed error and loses nothing: each
//! test here is one row of the table in `docs/bad_input.md`. After each refusal the device
//! still works (`still_works`).

use crate::common;

use common::Checked;
use kfdrt::debug::replay::replay;
use kfdrt::emu::{EmuConfig, Emulator, Preset, WorkGroup};
use kfdrt::kernel_args::KernelArgError;
use kfdrt::smi;
use kfdrt::{
    AllocOptions, AqlQueueOptions, DeviceSlice, Dispatch, Error, EventKind, EventReset, Gpu,
    Kernel, Kfd, MemoryKind, Pm4QueueOptions, WaitMode,
};
use std::sync::Arc;
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));

fn device() -> (Checked, Gpu) {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    (kfd, gpu)
}

/// The device under test (see [`common::under_test`]), for a test that needs no emulator-only
/// control.
fn under_test(test: &str) -> Option<(Checked, Gpu)> {
    let kfd = common::under_test(test, Preset::Gfx90a, 1, &[])?;
    let gpu = kfd.gpu(0).unwrap();
    Some((kfd, gpu))
}

/// `vector_add` of the checked-in `kernels` code object for `gpu`'s target, loaded on `gpu`
/// (tests that use it pass the stem to [`common::under_test`], so the object exists).
fn vector_add(gpu: &Gpu) -> (kfdrt::CodeObject, Kernel) {
    let co = common::load_for(gpu, "kernels");
    let k = co.kernel("vector_add").unwrap();
    (co, k)
}

/// A refusal lost nothing: allocation, a dispatch and a copy still work.
fn still_works(gpu: &Gpu) {
    let b = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    b.write(0, &[1, 2, 3]).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.barrier_and(&[]).unwrap().wait(T).unwrap();
    let c = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    gpu.copy_engine()
        .unwrap()
        .copy(&c, 0, &b, 0, 3, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(c.to_vec().unwrap()[..3], [1, 2, 3]);
}

/// Expects [`Error::OutOfBounds`] for range `what` of a buffer of `size` bytes.
fn out_of_bounds<T: std::fmt::Debug>(r: kfdrt::Result<T>, what: &str, size: u64) {
    match r {
        Err(Error::OutOfBounds {
            what: w, size: s, ..
        }) if w == what && s == size => {}
        other => panic!("{what}: expected OutOfBounds of a {size}-byte buffer, got {other:?}"),
    }
}

/// Expects the error `matches` accepts, naming the call `what` otherwise.
fn refused<T: std::fmt::Debug>(
    r: kfdrt::Result<T>,
    what: &str,
    matches: impl FnOnce(&Error) -> bool,
) -> Error {
    match r {
        Err(e) if matches(&e) => e,
        other => panic!("{what}: refused with another error, or not at all: {other:?}"),
    }
}

#[test]
fn zero_sized_allocation() {
    let Some((_kfd, gpu)) = under_test("bad_input::zero_sized_allocation") else {
        return;
    };
    assert!(matches!(
        gpu.alloc(0, MemoryKind::DeviceLocal),
        Err(Error::ZeroSize { what: "allocation" })
    ));
    still_works(&gpu);
}

#[test]
fn allocation_larger_than_vram() {
    let Some((_kfd, gpu)) = under_test("bad_input::allocation_larger_than_vram") else {
        return;
    };
    let too_big = gpu.info().vram_bytes + (1 << 30);
    match gpu.alloc(too_big, MemoryKind::DeviceLocal) {
        Err(Error::OutOfMemory {
            gpu_id, requested, ..
        }) => {
            assert_eq!(gpu_id, gpu.id());
            assert!(requested >= too_big);
        }
        other => panic!("{other:?}"),
    }
    // A size that overflows when rounded to a page.
    refused(
        gpu.alloc(u64::MAX, MemoryKind::GttCoherent),
        "alloc(u64::MAX)",
        |e| matches!(e, Error::TooLarge { .. }),
    );
    still_works(&gpu);
}

#[test]
fn allocation_with_a_bad_alignment() {
    let Some((_kfd, gpu)) = under_test("bad_input::allocation_with_a_bad_alignment") else {
        return;
    };
    let options = AllocOptions::new(MemoryKind::DeviceLocal).with_alignment(3000);
    refused(gpu.alloc_with(4096, options), "alignment 3000", |e| {
        matches!(e, Error::BadAlignment { align: 3000, .. })
    });
    still_works(&gpu);
}

#[test]
fn unknown_gpu() {
    let Some((kfd, gpu)) = under_test("bad_input::unknown_gpu") else {
        return;
    };
    // Index 7, or past the last GPU of a larger device (an MI300X node has 8 GPUs or more).
    assert!(kfd.gpu(kfd.gpus().len().max(7)).is_none());
    // 0xdead, or the next id no GPU of the device has.
    let unknown = (0xdead..)
        .find(|&id| kfd.gpus().iter().all(|g| g.id() != id))
        .unwrap();
    assert!(kfd.gpu_by_id(unknown).is_none());
    still_works(&gpu);
}

#[test]
fn grid_or_work_group_zero_and_work_group_over_1024() {
    let Some(kfd) = common::under_test(
        "bad_input::grid_or_work_group_zero_and_work_group_over_1024",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let (_co, k) = vector_add(&gpu);
    // A whole argument segment (n = 0), so that the geometry is what is refused.
    const ZEROS: [u8; 28] = [0; 28];
    fn with_args(d: Dispatch<'_>) -> Dispatch<'_> {
        // SAFETY: every dispatch made of it below is refused before anything is published.
        unsafe { d.with_raw_args(&ZEROS) }
    }
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let zero = |r: kfdrt::Result<kfdrt::Submission>, what: &str| match r {
        Err(Error::BadGeometry {
            reason: "a zero dimension",
            ..
        }) => {}
        other => panic!("{what}: expected BadGeometry, got {other:?}"),
    };
    let over = |r: kfdrt::Result<_>, items: u64, what: &str| match r {
        Err(Error::TooLarge {
            requested, limit, ..
        }) if requested == items && limit == 1024 => {}
        other => panic!("{what}: expected TooLarge of {items} work-items, got {other:?}"),
    };
    zero(
        q.dispatch(&with_args(Dispatch::linear(&k, 0, 64))),
        "grid 0",
    );
    zero(
        q.dispatch(&with_args(Dispatch::linear(&k, 64, 0))),
        "work-group 0",
    );
    over(
        q.dispatch(&with_args(Dispatch::new(&k, [1024, 2, 1], [1024, 2, 1])))
            .map(drop),
        2048,
        "work-group 2048",
    );
    // 32768 x 32768 x 4 work-items is 2^32: a 32-bit product wraps to 0 (and panics in a
    // debug build); it must be refused like any other.
    for wg in [[32768u16, 32768, 4], [65535, 65535, 65535]] {
        let items = wg.iter().map(|&d| u64::from(d)).product();
        over(
            q.dispatch(&with_args(Dispatch::new(&k, [1 << 20, 1 << 20, 8], wg)))
                .map(drop),
            items,
            "a work-group whose size overflows 32 bits",
        );
        // SAFETY: no argument bytes at all.
        let d = unsafe { Dispatch::new(&k, [1, 1, 1], wg).with_raw_args(&[]) };
        over(d.prepare().map(drop), items, "the same, prepared");
    }
    // PM4 dispatches take 32-bit sizes: 65536 x 65536 wraps a 32-bit product to 0.
    let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    over(
        pm4.dispatch_packets(&k, [1, 1, 1], [65536, 65536, 1], 0, 0)
            .map(drop),
        1 << 32,
        "a PM4 work-group of 2^32 work-items",
    );
    over(
        pm4.dispatch_packets(&k, [1, 1, 1], [1024, 2, 1], 0, 0)
            .map(drop),
        2048,
        "a PM4 work-group of 2048 work-items",
    );
    assert!(matches!(
        pm4.dispatch_packets(&k, [1, 1, 1], [0, 1, 1], 0, 0),
        Err(Error::BadGeometry { .. })
    ));
    // The refused dispatches wrote nothing into the ring.
    assert_eq!(q.write_index(), 0);
    still_works(&gpu);
}

#[test]
fn queue_sizes_that_are_not_powers_of_two_or_out_of_range() {
    let Some((_kfd, gpu)) =
        under_test("bad_input::queue_sizes_that_are_not_powers_of_two_or_out_of_range")
    else {
        return;
    };
    for packets in [0, 100, 32, 1 << 20] {
        match gpu.create_aql_queue(AqlQueueOptions::default().with_size_packets(packets)) {
            Err(Error::QueueSize {
                kind: "AQL queue",
                requested,
                ..
            }) if requested == u64::from(packets) => {}
            other => panic!("AQL ring of {packets} packets: {other:?}"),
        }
    }
    assert!(matches!(
        gpu.create_pm4_queue(Pm4QueueOptions::default().with_ring_bytes(1000)),
        Err(Error::QueueSize {
            kind: "PM4 ring",
            requested: 1000,
            ..
        })
    ));
    still_works(&gpu);
}

#[test]
fn copies_out_of_range_or_empty() {
    let Some((_kfd, gpu)) = under_test("bad_input::copies_out_of_range_or_empty") else {
        return;
    };
    let a = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let b = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let e = gpu.copy_engine().unwrap();
    assert!(matches!(
        e.copy(&b, 0, &a, 0, 0, &[]),
        Err(Error::ZeroSize { what: "copy" })
    ));
    out_of_bounds(e.copy(&b, 0, &a, 4000, 200, &[]), "source", 4096);
    out_of_bounds(e.copy(&b, 4000, &a, 0, 200, &[]), "destination", 4096);
    out_of_bounds(e.copy(&b, u64::MAX, &a, 0, 2, &[]), "destination", 4096);
    out_of_bounds(e.fill(&b, 0, 0xab, 8192, &[]), "destination", 4096);
    assert!(matches!(
        e.fill(&b, 0, 0xab, 6, &[]),
        Err(Error::Misaligned {
            what: "fill size",
            value: 6,
            align: 4
        })
    ));
    still_works(&gpu);
}

#[test]
fn host_access_out_of_range_or_to_device_memory() {
    let Some((_kfd, gpu)) = under_test("bad_input::host_access_out_of_range_or_to_device_memory")
    else {
        return;
    };
    let b = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    out_of_bounds(b.write(4090, &[0; 16]), "access", 4096);
    let mut out = [0u8; 16];
    out_of_bounds(b.read(4090, &mut out), "access", 4096);
    let vram = gpu.alloc(4096, MemoryKind::DeviceLocal).unwrap();
    refused(vram.write(0, &[1]), "CPU write to device-local VRAM", |e| {
        matches!(e, Error::NoCpuAccess { .. })
    });
    still_works(&gpu);
}

#[test]
fn objects_of_another_device() {
    let (_kfd, gpu) = device();
    let Some(other) = common::under_test(
        "bad_input::objects_of_another_device",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let foreign = other.gpu(0).unwrap();
    let theirs = foreign.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let mine = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    match gpu
        .copy_engine()
        .unwrap()
        .copy(&mine, 0, &theirs, 0, 16, &[])
    {
        Err(Error::ForeignObject { .. }) => {}
        other => panic!("{other:?}"),
    }
    let signal = other.create_signal(1).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    match q.barrier_and(&[&signal]) {
        Err(Error::ForeignObject { .. }) => {}
        other => panic!("{other:?}"),
    }
    drop((theirs, signal, foreign));
    still_works(&gpu);
}

#[test]
fn waits_on_an_event_destroyed_under_them() {
    // Safe code cannot destroy an event while a wait borrows it; destroyed behind kfdrt's back
    // (a raw DESTROY_EVENT), the wait ends with a typed error instead of hanging.
    use kfd_sys::bindings::*;
    use kfd_sys::DriverExt;
    let Some((kfd, gpu)) = under_test("bad_input::waits_on_an_event_destroyed_under_them") else {
        return;
    };
    let ev = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| kfd.wait_events(&[&ev], kfdrt::WaitMode::Any, T));
        std::thread::sleep(Duration::from_millis(100));
        let mut d = kfd_ioctl_destroy_event_args {
            event_id: ev.id(),
            pad: 0,
        };
        kfd.driver().kfd_ioctl(&mut d).unwrap();
        match waiter.join().unwrap() {
            Err(Error::EventDestroyed) => {}
            other => panic!("{other:?}"),
        }
    });
    still_works(&gpu);
}

#[test]
fn a_full_queue_that_may_not_wait() {
    let (kfd, gpu) = device();
    let emu = kfd.emulator().unwrap().clone();
    let q = gpu
        .create_aql_queue(AqlQueueOptions::default().with_size_packets(64))
        .unwrap();
    emu.faults().stall_queue(q.id());
    let mut pending = Vec::new();
    let full = loop {
        let mut b = q.batch().unwrap();
        b.barrier_and(&[]).unwrap();
        match b.try_submit() {
            Ok(s) => pending.push(s),
            Err(e) => break e,
        }
        assert!(
            pending.len() <= 64,
            "a 64-slot ring took more than 64 packets"
        );
    };
    assert!(
        matches!(full, Error::QueueFull { queue_id } if queue_id == q.id()),
        "{full:?}"
    );
    assert_eq!(pending.len(), 64);
    emu.faults().resume_queue(q.id());
    for s in pending {
        s.wait(T).unwrap();
    }
    still_works(&gpu);
}

#[test]
fn sdma_engines_exhausted_fall_back_to_shader_copies() {
    let kfd = common::emulated_with(EmuConfig::new(Preset::Gfx90a, 1));
    let gpu = kfd.gpu(0).unwrap();
    kfd.emulator().unwrap().faults().exhaust_sdma_queues(true);
    match gpu.create_sdma_queue() {
        Err(e) => assert!(e.errno().is_some(), "a driver refusal: {e:?}"),
        Ok(_) => panic!("SDMA queue created with the engines exhausted"),
    }
    let e = gpu.copy_engine().unwrap();
    assert_eq!(e.path(), kfdrt::CopyPath::Shader);
    kfd.emulator().unwrap().faults().exhaust_sdma_queues(false);
    still_works(&gpu);
}

#[test]
fn an_allocation_the_driver_refuses() {
    let (kfd, gpu) = device();
    kfd.emulator().unwrap().faults().fail_nth_allocation(1);
    let options = AllocOptions::new(MemoryKind::GttCoherent).dedicated();
    match gpu.alloc_with(1 << 20, options) {
        Err(Error::OutOfMemory { .. }) => {}
        other => panic!("{other:?}"),
    }
    still_works(&gpu);
}

#[test]
fn queue_slots_exhausted() {
    let (kfd, gpu) = device();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    kfd.emulator().unwrap().faults().exhaust_queue_slots(true);
    for r in [
        gpu.create_aql_queue(AqlQueueOptions::default()).map(drop),
        gpu.create_pm4_queue(Pm4QueueOptions::default()).map(drop),
    ] {
        match r {
            Err(e) => assert_eq!(e.errno(), Some(kfdrt::Errno::ENOSPC), "{e}"),
            Ok(()) => panic!("a queue was created with the slots exhausted"),
        }
    }
    // The queue that exists keeps working; new ones can be made once slots free up.
    q.barrier_and(&[]).unwrap().wait(T).unwrap();
    kfd.emulator().unwrap().faults().exhaust_queue_slots(false);
    still_works(&gpu);
}

/// A dispatch that passes no arguments to a kernel that reads some would run on zeroes (a
/// matmul computing nothing, blockDim read as 0): it is refused before anything is written,
/// as a batch entry and as a single dispatch, and the queue goes on.
#[test]
fn a_dispatch_without_the_arguments_its_kernel_reads_is_refused() {
    let Some(kfd) = common::under_test(
        "bad_input::a_dispatch_without_the_arguments_its_kernel_reads_is_refused",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let (_co, reads_args) = vector_add(&gpu);
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let before = q.write_index();
    for r in [
        q.dispatch(&Dispatch::linear(&reads_args, 64, 64)).map(drop),
        q.batch()
            .unwrap()
            .dispatch(&Dispatch::linear(&reads_args, 64, 64))
            .map(drop),
    ] {
        match r {
            Err(Error::KernelArgs(KernelArgError::NoArguments { kernel, bytes })) => {
                assert_eq!((kernel.as_str(), bytes), ("vector_add", 28));
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(q.write_index(), before, "nothing was written to the ring");
    // The queue still works: the same kernel with its arguments (n = 0: nothing is touched).
    let zeros = [0u8; 28];
    q.dispatch(&common::raw_dispatch(&reads_args, 64, 64, &zeros))
        .unwrap()
        .wait(Some(std::time::Duration::from_secs(20)))
        .unwrap();
}

/// A kernel that reads no arguments needs none. (An emulated kernel: no checked-in code object
/// has a kernel without arguments.)
#[test]
fn a_dispatch_without_arguments_of_a_kernel_that_reads_none_runs() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let none = gpu
        .emulated_kernel("none", 0, Arc::new(|_: &WorkGroup<'_>| Ok(())))
        .unwrap();
    q.dispatch(&Dispatch::linear(&none, 64, 64))
        .unwrap()
        .wait(Some(std::time::Duration::from_secs(20)))
        .unwrap();
}

/// `Dispatch::blocks` counts work-groups (HIP's gridDim), `Dispatch::new` work-items: the same
/// launch either way, and a block count whose work-items overflow a dimension is refused.
#[test]
fn launches_by_blocks_and_by_work_items_are_the_same_launch() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let groups = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = groups.clone();
    let k = gpu
        .emulated_kernel(
            "count",
            0,
            Arc::new(move |_: &WorkGroup<'_>| {
                seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }),
        )
        .unwrap();
    let by_blocks = Dispatch::blocks(&k, [3, 2, 1], [64, 2, 1]).unwrap();
    let by_items = Dispatch::new(&k, [192, 4, 1], [64, 2, 1]);
    assert_eq!(by_blocks.grid(), by_items.grid());
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.dispatch(&by_blocks)
        .unwrap()
        .wait(Some(Duration::from_secs(20)))
        .unwrap();
    assert_eq!(groups.load(std::sync::atomic::Ordering::Relaxed), 6);
    assert!(matches!(
        Dispatch::blocks(&k, [1 << 24, 1, 1], [1024, 1, 1]),
        Err(Error::BadGeometry {
            grid: [0x4_0000_0000, 1, 1],
            ..
        })
    ));
}

/// A kernel loaded on one GPU dispatched on another GPU's queue: its code is not mapped there,
/// and on hardware the fetch would fault that whole GPU. Refused before anything is written.
#[test]
fn a_kernel_loaded_on_another_gpu_is_refused() {
    let Some(kfd) = common::under_test(
        "bad_input::a_kernel_loaded_on_another_gpu_is_refused",
        Preset::Gfx90a,
        2,
        &["kernels"],
    ) else {
        return;
    };
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    // Loaded on GPU 0 only.
    let (_co, k) = vector_add(&g0);
    let q1 = g1.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let before = q1.write_index();
    for r in [
        q1.dispatch(&Dispatch::linear(&k, 64, 64)).map(drop),
        q1.batch()
            .unwrap()
            .dispatch(&Dispatch::linear(&k, 64, 64))
            .map(drop),
    ] {
        match r {
            Err(Error::NotOnGpu { what, gpu_id }) => {
                assert_eq!(gpu_id, g1.id());
                assert!(what.contains("vector_add"), "{what}");
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(q1.write_index(), before);
    // On its own GPU it runs (n = 0: nothing is touched).
    let q0 = g0.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let zeros = [0u8; 28];
    q0.dispatch(&common::raw_dispatch(&k, 64, 64, &zeros))
        .unwrap()
        .wait(Some(Duration::from_secs(20)))
        .unwrap();
}

#[test]
fn a_buffer_argument_not_mapped_on_the_gpu_is_refused() {
    let Some(kfd) = common::under_test(
        "bad_input::a_buffer_argument_not_mapped_on_the_gpu_is_refused",
        Preset::Gfx90a,
        2,
        &["kernels"],
    ) else {
        return;
    };
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let (_co, k) = vector_add(&g0);
    let a = g0.alloc(256, MemoryKind::DeviceLocal).unwrap();
    let peer = g1.alloc(256, MemoryKind::DeviceLocal).unwrap();
    let mut args = kfdrt::kernel_args::KernelArgs::new(&k).unwrap();
    args.set_buffer(0, &a).unwrap().set_buffer(1, &a).unwrap();
    args.set_buffer(2, &peer).unwrap().set_u32(3, 64).unwrap();
    let q0 = g0.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let before = q0.write_index();
    let d = Dispatch::linear(&k, 64, 64).with_args(&args);
    match q0.dispatch(&d) {
        Err(Error::NotOnGpu { what, gpu_id }) => {
            assert_eq!(gpu_id, g0.id());
            assert!(
                what.contains("argument 2") && what.contains("vector_add"),
                "{what}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        q0.batch().unwrap().dispatch(&d),
        Err(Error::NotOnGpu { .. })
    ));
    assert_eq!(q0.write_index(), before, "nothing was written");
    // Mapped there, it runs; so does an argument set again to a local buffer.
    peer.map_to(&g0).unwrap();
    q0.dispatch(&d)
        .unwrap()
        .wait(Some(Duration::from_secs(20)))
        .unwrap();
    peer.unmap_from(&g0).unwrap();
    assert!(q0.dispatch(&d).is_err());
    args.set_buffer(2, &a).unwrap();
    q0.dispatch(&Dispatch::linear(&k, 64, 64).with_args(&args))
        .unwrap()
        .wait(Some(Duration::from_secs(20)))
        .unwrap();
}

/// Without the check (`DebugOptions::unchecked`) the GPU meets the unmapped page: a fault for
/// the whole GPU. Emulated: the fault is planted on purpose.
#[test]
fn a_buffer_argument_not_mapped_on_the_gpu_faults_it_when_checks_are_off() {
    let co_bytes = crate::co_util::fixture("kernels-gfx90a.elf");
    let kfd = kfdrt::Kfd::builder()
        .emulated(kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 2))
        .debug(kfdrt::DebugOptions::default().unchecked())
        .open()
        .unwrap();
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let co = g0.load_code_object(&co_bytes).unwrap();
    let k = co.kernel("vector_add").unwrap();
    let a = g0.alloc(256, MemoryKind::DeviceLocal).unwrap();
    let peer = g1.alloc(256, MemoryKind::DeviceLocal).unwrap();
    let mut args = kfdrt::kernel_args::KernelArgs::new(&k).unwrap();
    args.set_buffer(0, &a).unwrap().set_buffer(1, &a).unwrap();
    args.set_buffer(2, &peer).unwrap().set_u32(3, 64).unwrap();
    let q0 = g0.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let r = q0
        .dispatch(&Dispatch::linear(&k, 64, 64).with_args(&args))
        .unwrap()
        .wait(Some(Duration::from_secs(20)));
    assert!(matches!(r, Err(Error::DeviceFault { .. })), "{r:?}");
}

#[test]
fn raw_arguments_shorter_than_the_kernarg_segment_are_refused() {
    let Some(kfd) = common::under_test(
        "bad_input::raw_arguments_shorter_than_the_kernarg_segment_are_refused",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu
        .load_code_object(
            &common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap(),
        )
        .unwrap();
    let k = co.kernel("vector_add").unwrap();
    assert_eq!(k.kernarg_size(), 28);
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let short = [0u8; 8];
    // SAFETY: refused before anything is published.
    let d = unsafe { Dispatch::linear(&k, 64, 64).with_raw_args(&short) };
    let before = q.write_index();
    for r in [
        q.dispatch(&d).map(drop),
        q.batch().unwrap().dispatch(&d).map(drop),
    ] {
        match r {
            Err(Error::KernelArgs(KernelArgError::ShortArguments {
                expected, given, ..
            })) => assert_eq!((expected, given), (28, 8)),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(q.write_index(), before, "nothing was published");
    // The full segment, pointing at a real buffer, runs.
    let buf = gpu.alloc(256, MemoryKind::GttCoherent).unwrap();
    let mut bytes = Vec::new();
    for _ in 0..3 {
        bytes.extend_from_slice(&buf.gpu_address().to_le_bytes());
    }
    bytes.extend_from_slice(&16u32.to_le_bytes());
    // SAFETY: the three pointers name `buf`, which outlives the wait.
    let d = unsafe { Dispatch::linear(&k, 64, 64).with_raw_args(&bytes) };
    q.dispatch(&d)
        .unwrap()
        .wait(Some(Duration::from_secs(20)))
        .unwrap();
}

/// Raw packets that cannot be written are refused with a typed error naming the packet's
/// problem, and nothing of them reaches the ring: an SDMA fence at a misaligned address
/// (`Error::SdmaPacket`), and a PM4 packet longer than its ring can ever hold
/// (`Error::Pm4Packet`). The queues work on afterwards.
#[test]
fn raw_packets_that_cannot_be_written_are_typed_errors() {
    let Some((_kfd, gpu)) =
        under_test("bad_input::raw_packets_that_cannot_be_written_are_typed_errors")
    else {
        return;
    };
    let word = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let sdma = gpu.create_sdma_queue().unwrap();
    let misaligned = sdma::SdmaPacket::Fence {
        addr: word.gpu_address() + 2,
        data: 1,
        mtype_uncached: false,
    };
    // SAFETY: the packet is refused before anything is written (and names a live buffer).
    let r = unsafe { sdma.submit(&[misaligned], T.unwrap()) };
    assert!(
        matches!(
            r,
            Err(Error::SdmaPacket(sdma::EncodeError::Misaligned { .. }))
        ),
        "{r:?}"
    );
    let pm4q = gpu
        .create_pm4_queue(kfdrt::Pm4QueueOptions::default().with_ring_bytes(1024))
        .unwrap();
    let huge = pm4::Pm4Packet::Nop { padding: 1000 };
    // SAFETY: a NOP names no memory.
    let r = unsafe { pm4q.submit(&[huge], T.unwrap()) };
    assert!(
        matches!(r, Err(Error::Pm4Packet(pm4::ring::RingError::TooLarge(_)))),
        "{r:?}"
    );
    pm4q.finish(T.unwrap()).unwrap();
    still_works(&gpu);
}

#[test]
fn a_device_slice_past_its_end() {
    let Some((_kfd, gpu)) = under_test("bad_input::a_device_slice_past_its_end") else {
        return;
    };
    let buffer = Arc::new(gpu.alloc(4096, MemoryKind::GttCoherent).unwrap());
    let whole = DeviceSlice::<f32>::new(buffer);
    assert_eq!(whole.len(), 1024);
    // The fields are in bytes: elements 1000..1100 of 1024 four-byte elements.
    assert!(
        matches!(
            whole.slice(1000, 100),
            Err(Error::OutOfBounds {
                what: "slice",
                offset: 4000,
                len: 400,
                size: 4096
            })
        ),
        "{:?}",
        whole.slice(1000, 100)
    );
    // A slice of a slice is bounded by the slice, not the buffer: 256 elements at byte 1024.
    let part = whole.slice(256, 256).unwrap();
    assert!(matches!(
        part.slice(200, 100),
        Err(Error::OutOfBounds {
            what: "slice",
            offset: 800,
            len: 400,
            size: 1024
        })
    ));
    // A start and length whose sum overflows.
    assert!(matches!(
        whole.slice(usize::MAX, 2),
        Err(Error::OutOfBounds {
            what: "slice",
            offset: u64::MAX,
            len: 8,
            size: 4096
        })
    ));
    // Up to the end is in bounds.
    let tail = whole.slice(1000, 24).unwrap();
    assert_eq!((tail.offset(), tail.byte_len()), (4000, 96));
    still_works(&gpu);
}

#[test]
fn events_of_the_wrong_kind_and_a_wait_on_none() {
    let Some((kfd, gpu)) = under_test("bad_input::events_of_the_wrong_kind_and_a_wait_on_none")
    else {
        return;
    };
    let signal = kfd
        .create_event(EventKind::Signal, EventReset::Manual)
        .unwrap();
    let memory = kfd
        .create_event(EventKind::Memory, EventReset::Manual)
        .unwrap();
    let hw = kfd
        .create_event(EventKind::HwException, EventReset::Manual)
        .unwrap();
    // Only a signal event has a mailbox for a PM4 RELEASE_MEM to raise.
    let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    for e in [&memory, &hw] {
        let r = pm4.signal_event(e);
        assert!(
            matches!(r, Err(Error::WrongEventKind { needed: "signal" })),
            "signal_event on a {:?} event: {r:?}",
            e.kind()
        );
    }
    // Only a memory event reports a memory exception.
    for e in [&signal, &hw] {
        let r = e.wait_memory_exception(T);
        assert!(
            matches!(r, Err(Error::WrongEventKind { needed: "memory" })),
            "wait_memory_exception on a {:?} event: {r:?}",
            e.kind()
        );
    }
    for mode in [WaitMode::Any, WaitMode::All] {
        let r = kfd.wait_events(&[], mode, T);
        assert!(matches!(r, Err(Error::NothingToWaitOn)), "{mode:?}: {r:?}");
    }
    // The events still work: the signal event raised by the PM4 queue wakes its waiter.
    let packets = pm4.signal_event(&signal).unwrap();
    // SAFETY: the packets raise `signal`, which lives until the wait below.
    unsafe { pm4.submit(&packets, T.unwrap()) }.unwrap();
    assert!(kfd.wait_events(&[&signal], WaitMode::Any, T).unwrap());
    pm4.finish(T.unwrap()).unwrap();
    still_works(&gpu);
}

#[test]
fn smi_event_numbers_out_of_range() {
    let Some((_kfd, gpu)) = under_test("bad_input::smi_event_numbers_out_of_range") else {
        return;
    };
    for (events, bad) in [
        (&[0][..], 0),
        (&[64], 64),
        (&[smi::VM_FAULT, u32::MAX], u64::from(u32::MAX)),
    ] {
        let r = gpu.smi_events(events);
        match r {
            Err(Error::OutOfRange {
                what: "SMI event",
                value,
                min: 1,
                max: 63,
            }) => assert_eq!(value, bad, "{events:?}"),
            other => panic!("SMI events {events:?}: {other:?}"),
        }
    }
    // Refused before the driver is asked: no stream is opened. (Opening one is the `smi` test
    // binary's, which counts the process's descriptors.)
    still_works(&gpu);
}

/// A PM4 dispatch needs the kernel descriptor's registers, which a kernel made from a bare
/// descriptor address (`Kernel::from_raw`) does not give. (Kernels of code objects and emulated
/// kernels have one, and their entry cannot overflow: the loader refuses such a descriptor.)
#[test]
fn a_kernel_pm4_cannot_dispatch() {
    let Some(kfd) = common::under_test(
        "bad_input::a_kernel_pm4_cannot_dispatch",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let (_co, k) = vector_add(&gpu);
    // SAFETY: `k`'s descriptor, which outlives every use of `raw` (it is never dispatched).
    let raw = unsafe { Kernel::from_raw("raw", k.object(), 0, 0, 0) };
    assert!(raw.descriptor().is_none());
    let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    match pm4.dispatch_packets(&raw, [1, 1, 1], [64, 1, 1], 0, 0) {
        Err(Error::NotDispatchable { kernel, reason }) => {
            assert_eq!(kernel, "raw");
            assert!(reason.contains("descriptor is not known"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // The same descriptor, known, dispatches (n = 0: nothing is touched but the arguments).
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let kernarg = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let mut args = kfdrt::KernelArgs::new(&k).unwrap();
    args.set_buffer(0, &buf)
        .unwrap()
        .set_buffer(1, &buf)
        .unwrap();
    args.set_buffer(2, &buf).unwrap().set_u32(3, 0).unwrap();
    let packets = pm4
        .dispatch_packets_with_args(&k, &kfdrt::LaunchGeometry::linear(64, 64), &args, &kernarg)
        .unwrap();
    common::pm4_submit(&pm4, &packets, T.unwrap()).unwrap();
    pm4.finish(T.unwrap()).unwrap();
    still_works(&gpu);
}

/// An emulated kernel needs the emulator to run its host function. A device kfdrt brought up
/// over a bare [`kfd_sys::Driver`] has no emulator handle, as a real GPU has none: the emulated
/// kernel is refused there, as it would be on `/dev/kfd`.
#[test]
fn an_emulated_kernel_on_a_device_that_is_not_the_emulator() {
    let emu = Emulator::new(EmuConfig::new(Preset::Gfx90a, 1)).unwrap();
    let driver: Arc<dyn kfd_sys::Driver> = emu.clone();
    let kfd = Kfd::builder()
        .driver(driver)
        .debug(kfdrt::DebugOptions::default())
        .open()
        .unwrap();
    assert!(kfd.emulator().is_none());
    let gpu = kfd.gpu(0).unwrap();
    match gpu.emulated_kernel("host_fn", 0, Arc::new(|_: &WorkGroup<'_>| Ok(()))) {
        Err(Error::NotOnThisGpu { gfx_target, what }) => {
            assert_eq!(gfx_target, gpu.info().gfx_target);
            assert!(what.contains("host_fn"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    still_works(&gpu);
    drop((gpu, kfd));
    common::assert_all_released(&emu);
}

#[test]
fn captures_that_cannot_be_replayed() {
    let Some((kfd, gpu)) = under_test("bad_input::captures_that_cannot_be_replayed") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("kfdrt-bad-capture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let bad_capture = |manifest: Option<&str>, expect: &str| {
        let path = dir.join("manifest.json");
        match manifest {
            Some(m) => std::fs::write(&path, m).unwrap(),
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
        match replay(&kfd, &dir) {
            Err(Error::BadCapture { reason }) => {
                assert!(reason.contains(expect), "{expect:?} not in {reason:?}")
            }
            other => panic!("manifest {manifest:?}: {other:?}"),
        }
    };
    bad_capture(None, &dir.display().to_string());
    bad_capture(Some("not json"), &dir.display().to_string());
    bad_capture(Some(r#"{"version": 99}"#), "manifest version 99");
    bad_capture(Some(r#"{"version": 1}"#), "no submission list");
    // A file name outside the capture directory is not read.
    bad_capture(
        Some(
            r#"{"version": 1, "submissions": [{"index": 0, "replayable": true, "kind": "copy",
               "bytes": 4, "src": {"input": "../outside"}, "dst": {"input": "dst"}}]}"#,
        ),
        "\"../outside\" is not a file of the capture",
    );
    // A file the manifest names but the directory lacks.
    bad_capture(
        Some(
            r#"{"version": 1, "submissions": [{"index": 0, "replayable": true, "kind": "copy",
               "bytes": 4, "src": {"input": "src"}, "dst": {"input": "dst"}}]}"#,
        ),
        "src: ",
    );
    // An empty capture replays: nothing to run.
    std::fs::write(
        dir.join("manifest.json"),
        r#"{"version": 1, "submissions": []}"#,
    )
    .unwrap();
    let report = replay(&kfd, &dir).unwrap();
    assert_eq!(report.replayed, 0);
    assert!(report.identical());
    std::fs::remove_dir_all(&dir).unwrap();
    still_works(&gpu);
}
