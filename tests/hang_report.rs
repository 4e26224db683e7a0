//! Hang and fault reports (issue 15 item 4): a wait that times out, bounded by
//! `KFDRT_WAIT_TIMEOUT_MS` or given a timeout, and a wait that ends on a GPU fault return an
//! error carrying a report of the device's queues: read and write indices, the packet at the
//! read index decoded (the barrier and the values of the signals it waits on; the dispatch and
//! its kernel), how long the read index has not moved; for a fault, the address, the kernel
//! and the instructions around the faulting PC.

use crate::common;

use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::{AqlQueueOptions, DebugOptions, Dispatch, Error, Kfd, MemoryKind, Pm4QueueOptions};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));

fn device(options: DebugOptions) -> common::Checked {
    common::Checked::new(
        Kfd::builder()
            .emulated(EmuConfig::new(Preset::Gfx90a, 1))
            .debug(options)
            .open()
            .unwrap(),
    )
}

#[test]
fn a_stuck_barrier_is_named_with_the_signal_it_waits_on() {
    let kfd = device(DebugOptions::default().with_wait_timeout(Duration::from_millis(300)));
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    // Two completed packets, then a barrier on a signal nobody sets, then a dispatch behind it.
    q.barrier_and(&[]).unwrap().wait(T).unwrap();
    q.barrier_and(&[]).unwrap().wait(T).unwrap();
    let never = kfd.create_signal(1).unwrap();
    let stuck = q.barrier_and(&[&never]).unwrap();
    let k = gpu
        .emulated_kernel(
            "behind",
            0,
            std::sync::Arc::new(|_: &kfdrt::emu::WorkGroup<'_>| Ok(())),
        )
        .unwrap();
    let behind = q.dispatch(&Dispatch::linear(&k, 64, 64)).unwrap();

    // No timeout given: KFDRT_WAIT_TIMEOUT_MS (here set in code) bounds the wait.
    let e = behind.wait(None).unwrap_err();
    let Error::Timeout { report, .. } = &e else {
        panic!("{e:?}")
    };
    let report = report.as_ref().expect("a timeout carries a report");
    let r = report.queue(q.id()).expect("the queue is in the report");
    assert_eq!((r.read, r.write), (2, 4), "{r}");
    // The wait lasted 300 ms, the read index never moved: the report says so (a bound that
    // holds by construction, not a speed).
    assert!(r.stuck_for >= Some(Duration::from_millis(250)), "{r}");
    let head = r.head.join("\n");
    assert!(head.contains("#2: barrier-and"), "{head}");
    assert!(
        head.contains(&format!("waits on signal {:#x} = 1", never.handle())),
        "{head}"
    );
    // The PM4 queue is listed too, idle.
    let p = report
        .queue(pm4.id())
        .expect("every queue is in the report");
    assert!(p.head.is_empty() && p.read == p.write, "{p}");
    // Display reads at a glance.
    let text = e.to_string();
    assert!(text.starts_with("timed out after 300 ms"), "{text}");
    assert!(text.contains(&format!("queue {} (AQL", q.id())), "{text}");
    assert!(text.contains("stuck for"), "{text}");
    assert!(text.contains("barrier-and (all must reach 0)"), "{text}");
    eprintln!("{text}");

    // An explicit timeout reports too; the dispatch behind shows once the barrier passes.
    never.store(0).unwrap();
    stuck.wait(T).unwrap();
    behind.wait(T).unwrap();
    let never2 = kfd.create_signal(1).unwrap();
    let s = q.barrier_or(&[&never2]).unwrap();
    match s.wait(Some(Duration::from_millis(50))) {
        Err(e @ Error::Timeout { .. }) => {
            let r = e.report().unwrap().queue(q.id()).unwrap();
            assert!(r.head.join("\n").contains("barrier-or"), "{r}");
        }
        other => panic!("{other:?}"),
    }
    never2.store(0).unwrap();
    s.wait(T).unwrap();
}

#[test]
fn a_stalled_queue_shows_the_dispatch_at_its_read_index() {
    let kfd = device(DebugOptions::default());
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu
        .load_code_object(include_bytes!("fixtures/code_objects/kernels-gfx90a.co"))
        .unwrap();
    let k = co.kernel("vector_add").unwrap();
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let mut args = kfdrt::KernelArgs::new(&k).unwrap();
    args.set_buffer(0, &buf).unwrap();
    args.set_buffer(1, &buf).unwrap();
    args.set_buffer(2, &buf).unwrap();
    args.set_u32(3, 16).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    emu.faults().stall_queue(q.id());
    let s = q
        .dispatch(&Dispatch::linear(&k, 16, 16).with_args(&args))
        .unwrap();
    let e = s.wait(Some(Duration::from_millis(100))).unwrap_err();
    let r = e.report().unwrap().queue(q.id()).unwrap().clone();
    let head = r.head.join("\n");
    assert!(head.contains("#0: dispatch vector_add ("), "{head}");
    assert!(
        head.contains("grid [16, 1, 1] work-group [16, 1, 1]"),
        "{head}"
    );
    emu.faults().resume_queue(q.id());
    s.wait(T).unwrap();
}

#[test]
fn a_faulting_kernel_reports_its_code_around_the_pc() {
    let kfd = device(DebugOptions::default());
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu
        .load_code_object(include_bytes!("fixtures/code_objects/kernels-gfx90a.co"))
        .unwrap();
    let k = co.kernel("vector_add").unwrap();
    let out = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let bad = 0x7e57_0000_1000u64;
    let mut args = kfdrt::KernelArgs::new(&k).unwrap();
    // SAFETY: the address is chosen to fault; it names no memory that could be freed.
    unsafe { args.set_address(0, bad) }.unwrap();
    args.set_buffer(1, &out).unwrap();
    args.set_buffer(2, &out).unwrap();
    args.set_u32(3, 64).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let e = q
        .dispatch(&Dispatch::linear(&k, 64, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap_err();
    assert!(matches!(e, Error::DeviceFault { .. }), "{e:?}");
    let report = e.report().expect("a fault carries a report");
    let f = &report.faults[0];
    assert_eq!(f.address, Some(bad & !0xFFF));
    assert!(
        f.kernel
            .as_deref()
            .is_some_and(|k| k.starts_with("vector_add")),
        "{f}"
    );
    let pc = f.pc.expect("kfd-emu knows the PC");
    let at_pc = f
        .around_pc
        .iter()
        .find(|(a, _)| *a == pc)
        .map(|(_, t)| t.as_str());
    // llvm-objdump: the first load of `a` is `global_load_dword v6, v[4:5], off`.
    assert_eq!(at_pc, Some("global_load_dword v6, v[4:5], off"), "{f}");
    assert!(f.around_pc.len() > 4, "instructions before and after: {f}");
    let text = e.to_string();
    assert!(text.contains("=> "), "{text}");
    assert!(text.contains("kernel vector_add"), "{text}");
    eprintln!("{text}");
}

/// A hang report on kfd-emu shows the stuck waves: what each does, its instruction and source
/// line, and its registers (issue 31 item 3).
#[test]
fn a_hang_report_shows_the_stuck_waves_with_their_source_lines() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu
        .load_code_object(
            &common::code_object_for("lines", &kfd.gpu(0).unwrap().info().gfx_target).unwrap(),
        )
        .unwrap();
    let k = co.kernel("wait_for").unwrap();
    let flag = gpu.alloc(4096, kfdrt::MemoryKind::GttCoherent).unwrap();
    flag.write(0, &[0; 4]).unwrap();
    let mut args = kfdrt::kernel_args::KernelArgs::new(&k).unwrap();
    args.set_buffer(0, &flag).unwrap();
    let q = gpu
        .create_aql_queue(kfdrt::AqlQueueOptions::default())
        .unwrap();
    let s = q
        .dispatch(&kfdrt::Dispatch::linear(&k, 64, 64).with_args(&args))
        .unwrap();
    let e = s.wait(Some(Duration::from_millis(300))).unwrap_err();
    let report = e.report().expect("a timeout carries a report");
    assert_eq!(report.waves.len(), 1, "{e}");
    let w = &report.waves[0];
    assert!(w.starts_with("kernel wait_for ("), "{w}");
    // Somewhere in the loop of lines 16-17.
    assert!(
        w.contains("\n  in ./lines.hip:16") || w.contains("\n  in ./lines.hip:17"),
        "{w}"
    );
    assert!(
        w.contains("wave 0 of work-group [0, 0, 0]") && w.contains("exec 0x"),
        "{w}"
    );
    assert!(e.to_string().contains("kernel wait_for ("), "{e}");
    // Let it go: the same submission completes.
    flag.write(0, &[1, 0, 0, 0]).unwrap();
    s.wait(Some(Duration::from_secs(20))).unwrap();
}
