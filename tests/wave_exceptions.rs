//! Wave exceptions as a GPU delivers them: kfdrt's trap handler reports them to KFD, KFD writes
//! them into the word the queue's context-save area header names and sets its event, and every
//! wait on the queue returns them as an error (issue #26 item 1). kfd-emu runs the handler's
//! machine code and reads the header through the process's memory, as the driver does.

use crate::common;
use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::{
    AqlQueue, AqlQueueOptions, Dispatch, Error, Gpu, Kernel, KernelArgs, KfdVersion, MemoryKind,
    WaveExceptions,
};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));
/// Long enough for a dispatch of a few waves to finish many times over on the emulator.
const NEVER: Option<Duration> = Some(Duration::from_millis(700));

fn trap_kernels(gpu: &Gpu) -> kfdrt::CodeObject {
    let target = &gpu.info().gfx_target;
    let elf = common::code_object_for("trap", target)
        .unwrap_or_else(|| panic!("no trap code object is built for {target}"));
    gpu.load_code_object(&elf).unwrap()
}

/// Runs `kernel` over 256 work-items (`victim` as `store_then_abort`'s second argument) and
/// returns the wait's result and the ids the work-items stored.
fn run(
    gpu: &Gpu,
    kernel: &str,
    victim: u32,
    timeout: Option<Duration>,
) -> (kfdrt::Result<()>, Vec<i32>) {
    let co = trap_kernels(gpu);
    let k = co.kernel(kernel).unwrap();
    let out = gpu.alloc(256 * 4, MemoryKind::GttCoherent).unwrap();
    out.write(0, &[0xFF; 256 * 4]).unwrap();
    let mut args = KernelArgs::new(&k).unwrap();
    args.set_buffer(0, &out).unwrap();
    if kernel == "store_then_abort" {
        args.set_u32(1, victim).unwrap();
    }
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let r = q
        .dispatch(&Dispatch::linear(&k, 256, 64).with_args(&args))
        .unwrap()
        .wait(timeout);
    let ids = out
        .to_vec()
        .unwrap()
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (r, ids)
}

/// Runs `f` on the device under test (see [`common::under_test`]), with its target's name; when
/// that device is emulated, on one of each preset with kfdrt's trap handler (gfx90a and gfx942).
fn each_preset(test: &str, f: impl Fn(&Gpu, &str)) {
    let Some(kfd) = common::under_test(test, Preset::Gfx90a, 1, &["trap"]) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    f(&gpu, &gpu.info().gfx_target);
    if kfd.emulator().is_some() {
        let mi300 = common::emulated(Preset::Gfx942, 1);
        let gpu = mi300.gpu(0).unwrap();
        f(&gpu, &gpu.info().gfx_target);
    }
}

/// `store_then_abort` with its first work-item the victim, on a fresh queue of `gpu`.
fn abort_dispatch(
    gpu: &Gpu,
) -> (
    kfdrt::CodeObject,
    Kernel,
    kfdrt::Buffer,
    KernelArgs,
    AqlQueue,
) {
    let co = trap_kernels(gpu);
    let k = co.kernel("store_then_abort").unwrap();
    let out = gpu.alloc(256 * 4, MemoryKind::GttCoherent).unwrap();
    let mut args = KernelArgs::new(&k).unwrap();
    args.set_buffer(0, &out).unwrap().set_u32(1, 0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    (co, k, out, args, q)
}

fn expect_wave_exception(r: kfdrt::Result<()>, want: WaveExceptions, what: &str) {
    match r {
        Err(Error::QueueError { fault, .. }) => {
            assert_eq!(fault.exceptions, want, "{what}: {fault}");
            assert_eq!(fault.code, 0, "{what}: the CP reported nothing: {fault}");
        }
        other => panic!("{what}: expected a wave exception, got {other:?}"),
    }
}

#[test]
fn abort_in_a_kernel_ends_the_wait_with_a_wave_exception() {
    each_preset(
        "wave_exceptions::abort_in_a_kernel_ends_the_wait_with_a_wave_exception",
        |gpu, preset| {
            let (r, ids) = run(gpu, "store_then_abort", 70, T);
            expect_wave_exception(r, WaveExceptions::ABORT, &format!("{preset:?}"));
            // The waves before the trap stored; the one that trapped did too, before it trapped.
            assert_eq!(ids[70], 70, "{preset:?}");
            assert_eq!(ids[3], 3, "{preset:?}");
        },
    );
}

#[test]
fn an_illegal_instruction_ends_the_wait_with_a_wave_exception() {
    each_preset(
        "wave_exceptions::an_illegal_instruction_ends_the_wait_with_a_wave_exception",
        |gpu, preset| {
            let (r, _) = run(gpu, "store_then_illegal", 0, T);
            let what = format!("{preset:?}");
            expect_wave_exception(r, WaveExceptions::ILLEGAL_INSTRUCTION, &what);
        },
    );
}

#[test]
fn a_queue_whose_wave_raised_an_exception_refuses_more_work_at_once() {
    let Some(kfd) = common::under_test(
        "wave_exceptions::a_queue_whose_wave_raised_an_exception_refuses_more_work_at_once",
        Preset::Gfx90a,
        1,
        &["trap"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let (_co, k, _out, args, q) = abort_dispatch(&gpu);
    let first = q
        .dispatch(&Dispatch::linear(&k, 64, 64).with_args(&args))
        .unwrap();
    expect_wave_exception(first.wait(T), WaveExceptions::ABORT, "first");
    let again = q.dispatch(&Dispatch::linear(&k, 64, 64).with_args(&args));
    expect_wave_exception(again.map(drop), WaveExceptions::ABORT, "second");
}

#[test]
fn llvm_debugtrap_without_a_debugger_is_stepped_over() {
    each_preset(
        "wave_exceptions::llvm_debugtrap_without_a_debugger_is_stepped_over",
        |gpu, preset| {
            let (r, ids) = run(gpu, "debugtrap_then_store", 0, T);
            r.unwrap();
            let all = ids.iter().enumerate().all(|(i, &v)| v == i as i32);
            assert!(all, "{preset:?}");
        },
    );
}

/// The driver reads the header with `get_user`: a header naming a word the process cannot
/// reach loses the exception, and the halted wave's dispatch never completes.
#[test]
fn an_unreachable_error_word_loses_the_exception_and_the_dispatch_never_completes() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap();
    let (_co, k, _out, args, q) = abort_dispatch(&gpu);
    let header = emu.queue_cwsr_address(q.id()).unwrap();
    // err_payload_addr (offset 24): the first page, which nothing maps.
    // SAFETY: the header is kfdrt's CPU mapping of the queue's CWSR area, which the queue owns
    // and nothing else writes while no wave is being saved.
    unsafe { std::ptr::write_volatile((header + 24) as *mut u64, 0x10) };
    let r = q
        .dispatch(&Dispatch::linear(&k, 64, 64).with_args(&args))
        .unwrap()
        .wait(NEVER);
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    assert!(q.fault().is_none());
}

/// Before the runtime ABI (KFD 1.13) kfdrt installs no trap handler, and the driver's
/// first-level handler alone steps over an `s_trap` and halts the wave at an exception,
/// reporting neither.
#[test]
fn without_a_trap_handler_an_abort_is_stepped_over_and_an_illegal_instruction_hangs() {
    let mut config = EmuConfig::new(Preset::Gfx90a, 1);
    config.kfd_version = KfdVersion::new(1, 12);
    let kfd = common::emulated_with(config);
    let gpu = kfd.gpu(0).unwrap();
    let (r, ids) = run(&gpu, "store_then_abort", 0, T);
    r.unwrap();
    assert!(ids.iter().enumerate().all(|(i, &v)| v == i as i32));
    let (r, _) = run(&gpu, "store_then_illegal", 0, NEVER);
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
}

/// A PM4 queue's waves report their exceptions the same way: its fence wait returns them.
#[test]
fn an_abort_in_a_pm4_dispatch_ends_the_queues_wait_with_a_wave_exception() {
    each_preset(
        "wave_exceptions::an_abort_in_a_pm4_dispatch_ends_the_queues_wait_with_a_wave_exception",
        |gpu, preset| {
            let (_co, k, _out, args, _aql) = abort_dispatch(gpu);
            let q = gpu
                .create_pm4_queue(kfdrt::Pm4QueueOptions::default())
                .unwrap();
            let kernarg = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
            let packets = q
                .dispatch_packets_with_args(
                    &k,
                    &kfdrt::LaunchGeometry::linear(64, 64),
                    &args,
                    &kernarg,
                )
                .unwrap();
            // SAFETY: the kernel, its arguments and its output outlive the wait below.
            unsafe { q.submit(&packets, T.unwrap()) }.unwrap();
            let r = q.finish(T.unwrap());
            expect_wave_exception(r, WaveExceptions::ABORT, &format!("{preset:?} PM4"));
        },
    );
}
