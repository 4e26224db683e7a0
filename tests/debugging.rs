//! The debugging switches that act on submissions (issue 15 items 1, 2, 3, 8): validation
//! catches what the hardware would refuse, naming the field; serialization makes every
//! submission complete before it returns; substitution dispatches a kernel from another code
//! object. (The log filter is tested in a process of its own, `log_filter.rs`: a logger is global.)

use crate::common;

use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::kernel_args::KernelArgs;
use kfdrt::{
    AqlQueueOptions, DebugOptions, Dispatch, Error, Kernel, Kfd, MemoryKind, Pm4QueueOptions,
};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));
const VECTOR_ADD: &[u8] = include_bytes!("fixtures/code_objects/kernels-gfx90a.co");
const SUBSTITUTE: &str = "tests/fixtures/code_objects/substitute-gfx90a.elf";

fn device(gpus: usize, options: DebugOptions) -> common::Checked {
    common::Checked::new(
        Kfd::builder()
            .emulated(EmuConfig::new(Preset::Gfx90a, gpus))
            .debug(options)
            .open()
            .unwrap(),
    )
}

fn refused(r: kfdrt::Result<kfdrt::Submission>, field: &str) -> String {
    match r {
        Err(e @ Error::Validation { .. }) => {
            let Error::Validation { field: f, .. } = &e else {
                unreachable!()
            };
            assert_eq!(*f, field, "{e}");
            e.to_string()
        }
        other => panic!("expected a validation error on {field}, got {other:?}"),
    }
}

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

#[test]
fn validation_names_the_field_and_value() {
    let test = "debugging::validation_names_the_field_and_value";
    let Some(kfd) =
        common::under_test_with(test, 2, &["kernels"], DebugOptions::default().validated())
    else {
        return;
    };
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    if g0.peer_access(&g1) == kfdrt::PeerAccess::None {
        eprintln!(
            "{test}: skipped: GPU {:#x} has no path to GPU {:#x}'s VRAM",
            g0.id(),
            g1.id()
        );
        return;
    }
    let co = common::load_for(&g0, "kernels");
    let vadd = co.kernel("vector_add").unwrap();
    let q = g0.create_aql_queue(AqlQueueOptions::default()).unwrap();

    // A kernel object in no buffer of the device.
    // SAFETY: the address names no memory; the dispatch is refused.
    let wild = unsafe { Kernel::from_raw("wild", 0x7e00_0000_0000, 0, 0, 0) };
    let m = refused(
        q.dispatch(&Dispatch::linear(&wild, 64, 64)),
        "kernel_object",
    );
    assert!(m.contains("0x7e0000000000"), "{m}");

    // A descriptor in memory without execute permission.
    let data = g0.alloc(4096, MemoryKind::HostVisibleVram).unwrap();
    let mut kd = [0u8; 64];
    co.memory()
        .read(vadd.object() - co.memory().gpu_address(), &mut kd)
        .unwrap();
    data.write(0, &kd).unwrap();
    // SAFETY: the descriptor is a copy in `data`, which outlives the refused dispatch.
    let copied = unsafe { Kernel::from_raw("copied", data.gpu_address(), 0, 0, 0) };
    let m = refused(
        q.dispatch(&Dispatch::linear(&copied, 64, 64)),
        "kernel_object",
    );
    assert!(m.contains("execute permission"), "{m}");

    // Arguments shorter than the kernel's kernarg segment.
    let short = [0u8; 8];
    // SAFETY: refused before anything is published.
    let d = unsafe { Dispatch::linear(&vadd, 64, 64).with_raw_args(&short) };
    let m = refused(q.dispatch(&d), "kernarg_address");
    assert!(m.contains("8 bytes"), "{m}");

    // A buffer argument not mapped on the GPU that runs the dispatch.
    let mine = g0.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let theirs = g1.alloc(4096, MemoryKind::DeviceLocal).unwrap();
    let mut args = KernelArgs::new(&vadd).unwrap();
    args.set_buffer(0, &mine).unwrap();
    args.set_buffer(1, &theirs).unwrap();
    args.set_buffer(2, &mine).unwrap();
    args.set_u32(3, 16).unwrap();
    let m = refused(
        q.dispatch(&Dispatch::linear(&vadd, 16, 16).with_args(&args)),
        "argument",
    );
    assert!(
        m.contains(&format!("#1 = {:#x}", theirs.gpu_address())),
        "{m}"
    );
    // Mapped there, the same dispatch passes and runs.
    theirs.map_to(&g0).unwrap();
    q.dispatch(&Dispatch::linear(&vadd, 16, 16).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    // Nothing refused reached the ring.
    assert_eq!(q.write_index(), 1);
}

/// Without validation the packet with a wild kernel object reaches the device. Emulated: on a
/// GPU that is a page fault, which would end the test process's other work.
#[test]
fn without_validation_a_wild_kernel_object_reaches_the_device() {
    let kfd = device(1, DebugOptions::default());
    let q = kfd
        .gpu(0)
        .unwrap()
        .create_aql_queue(AqlQueueOptions::default())
        .unwrap();
    // SAFETY: the address names no memory; the emulated dispatch faults.
    let wild = unsafe { Kernel::from_raw("wild", 0x7e00_0000_0000, 0, 0, 0) };
    assert!(
        q.dispatch(&Dispatch::linear(&wild, 64, 64)).is_ok(),
        "without validation the packet reaches the device"
    );
}

#[test]
fn serialized_submissions_are_complete_when_they_return() {
    let Some(kfd) = common::under_test_with(
        "debugging::serialized_submissions_are_complete_when_they_return",
        1,
        &[],
        DebugOptions::default().serialized(),
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    for _ in 0..20 {
        assert!(q.barrier_and(&[]).unwrap().is_complete());
    }
    let src = gpu.alloc(1 << 16, MemoryKind::GttCoherent).unwrap();
    let dst = gpu.alloc(1 << 16, MemoryKind::GttCoherent).unwrap();
    src.write(0, &[5; 1 << 16]).unwrap();
    let c = gpu
        .copy_engine()
        .unwrap()
        .copy(&dst, 0, &src, 0, 1 << 16, &[])
        .unwrap();
    assert!(c.is_complete());
    assert_eq!(dst.to_vec().unwrap(), vec![5; 1 << 16]);
    let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let flag = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let p = pm4.write_data(flag.gpu_address(), &[7]);
    common::pm4_submit(&pm4, &[p], Duration::from_secs(20)).unwrap();
    assert_eq!(
        flag.to_vec().unwrap()[0],
        7,
        "the PM4 packet ran before submit returned"
    );
}

/// With the queue stalled, a serialized submission cannot complete: it returns the wait's
/// error (bounded by the wait timeout) instead of a submission. Emulated: the queue stall.
#[test]
fn a_serialized_submission_on_a_stalled_queue_returns_the_wait_error() {
    let kfd2 = device(
        1,
        DebugOptions::default()
            .serialized()
            .with_wait_timeout(Duration::from_millis(200)),
    );
    let gpu2 = kfd2.gpu(0).unwrap();
    let q2 = gpu2.create_aql_queue(AqlQueueOptions::default()).unwrap();
    kfd2.emulator().unwrap().faults().stall_queue(q2.id());
    assert!(matches!(q2.barrier_and(&[]), Err(Error::Timeout { .. })));
    kfd2.emulator().unwrap().faults().resume_queue(q2.id());
}

#[test]
fn substitution_dispatches_the_other_code_objects_kernel() {
    let test = "debugging::substitution_dispatches_the_other_code_objects_kernel";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SUBSTITUTE);
    let options = DebugOptions::default().with_substitution("vector_add", &path);
    let Some(kfd) = common::under_test_with(test, 1, &["kernels", "substitute"], options) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let target = gpu.info().gfx_target.clone();
    if target != "gfx90a" {
        eprintln!("{test}: skipped: the substitute named is built for gfx90a, not {target}");
        return;
    }
    let n = 64usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 2.0 + i as f32).collect();
    let co = gpu
        .load_code_object(&common::code_object_for("kernels", &target).unwrap())
        .unwrap();
    let k = co.kernel("vector_add").unwrap();
    let bufs: Vec<_> = (0..3)
        .map(|_| gpu.alloc(4096, MemoryKind::GttCoherent).unwrap())
        .collect();
    bufs[0].write(0, &floats(&a)).unwrap();
    bufs[1].write(0, &floats(&b)).unwrap();
    let mut args = KernelArgs::new(&k).unwrap();
    for (i, buf) in bufs.iter().enumerate() {
        args.set_buffer(i, buf).unwrap();
    }
    args.set_u32(3, n as u32).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.dispatch(&Dispatch::linear(&k, n as u32, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    let got: Vec<f32> = bufs[2]
        .to_vec()
        .unwrap()
        .chunks_exact(4)
        .take(n)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // The substitute multiplies where vector_add adds.
    assert_eq!(
        got,
        a.iter().zip(&b).map(|(x, y)| x * y).collect::<Vec<_>>()
    );
}

/// A substitute that cannot be read is an error naming the entry; other kernels are not
/// affected.
#[test]
fn an_unreadable_substitute_is_an_error_naming_it() {
    let options = DebugOptions::default().with_substitution("vector_add", "/nonexistent/x.co");
    let Some(kfd) = common::under_test_with(
        "debugging::an_unreadable_substitute_is_an_error_naming_it",
        1,
        &["kernels"],
        options,
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = common::load_for(&gpu, "kernels");
    match co.kernel("vector_add") {
        Err(e @ Error::Substitution { .. }) => {
            assert!(e.to_string().contains("/nonexistent/x.co"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    co.kernel("saxpy").unwrap();
}

/// kfd-emu's address watch (issue 31 item 4): every lane's store into a watched range is
/// reported with the instruction, the wave, the lane and (through kfdrt) the source line;
/// loads only when asked; nothing outside the range.
#[test]
fn a_watch_reports_each_access_to_its_range_with_the_source_line() {
    let kfd = device(1, DebugOptions::default());
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    // poke_through writes p[lane * 1024] (lines.hip:7), one 4 KiB page apart per lane.
    let co = gpu
        .load_code_object(&crate::co_util::fixture("lines-gfx90a.elf"))
        .unwrap();
    let poke = co.kernel("poke_through").unwrap();
    let p = gpu.alloc(64 << 12, MemoryKind::GttCoherent).unwrap();
    let planted = p.gpu_address() + (3 << 12);
    emu.watch(&[(planted, planted + 4)], false);
    let mut args = KernelArgs::new(&poke).unwrap();
    args.set_buffer(0, &p).unwrap();
    q.dispatch(&Dispatch::linear(&poke, 64, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    let hits = emu.watch_hits();
    assert_eq!(hits.len(), 1, "{hits:?}");
    let h = &hits[0];
    assert_eq!(
        (h.address, h.bytes, h.write, h.lane, h.wave, h.work_group),
        (planted, 4, true, 3, 0, [0, 0, 0])
    );
    assert_eq!(h.instruction, "global_store_dword v1, v0, s[0:1]");
    assert_eq!(
        kfd.source_location(h.pc),
        ["./lines.hip:7 in poke", "./lines.hip:11 in poke_through"]
    );
    // Loads are reported when asked: vector_add reads a[i] and b[i], writes c[i].
    let co = gpu.load_code_object(VECTOR_ADD).unwrap();
    let vadd = co.kernel("vector_add").unwrap();
    let (a, c) = (
        gpu.alloc(4096, MemoryKind::GttCoherent).unwrap(),
        gpu.alloc(4096, MemoryKind::GttCoherent).unwrap(),
    );
    let watched = a.gpu_address() + 4 * 10;
    emu.watch(&[(watched, watched + 8)], true);
    let mut args = KernelArgs::new(&vadd).unwrap();
    args.set_buffer(0, &a).unwrap().set_buffer(1, &a).unwrap();
    args.set_buffer(2, &c).unwrap().set_u32(3, 64).unwrap();
    q.dispatch(&Dispatch::linear(&vadd, 64, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    let mut lanes: Vec<(u32, bool)> = emu.watch_hits().iter().map(|h| (h.lane, h.write)).collect();
    lanes.sort_unstable();
    // a is both inputs: lanes 10 and 11 read it twice; nothing writes it.
    assert_eq!(lanes, [(10, false), (10, false), (11, false), (11, false)]);
    // Off: nothing more.
    emu.watch(&[], false);
    q.dispatch(&Dispatch::linear(&vadd, 64, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    assert!(emu.watch_hits().is_empty());
}
