//! Global wave sync (ALLOC_QUEUE_GWS) as KFD hands it out: one queue per GPU of the process
//! holds it, a second gets EBUSY, giving back what is not held is EINVAL, destroying the
//! holder frees it, and each GPU has its own.

use crate::common;

use kfdrt::emu::Preset;
use kfdrt::{AqlQueueOptions, Dispatch, Errno, Error, KernelArgs, MemoryKind};

fn errno(e: Error) -> Errno {
    match e {
        Error::Driver { errno, .. } => errno,
        other => panic!("expected a driver error, got {other}"),
    }
}

#[test]
fn one_queue_per_gpu_holds_the_gws() {
    const TEST: &str = "gws::one_queue_per_gpu_holds_the_gws";
    let Some(kfd) = common::under_test(TEST, Preset::Gfx90a, 2, &[]) else {
        return;
    };
    // The emulator's record of the holder, when the device is emulated.
    let emu = kfd.emulator().cloned();
    let holds = |q: &kfdrt::AqlQueue| emu.as_ref().map(|e| e.queue_holds_gws(q.id()));
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let have = g0.info().gws;
    if emu.is_some() {
        assert_eq!(have, 64, "the preset's GWS");
    }
    if have == 0 || g1.info().gws == 0 {
        eprintln!("{TEST}: skipped: a GPU of the device under test has no GWS");
        return;
    }
    let a = g0.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let b = g0.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let c = g1.create_aql_queue(AqlQueueOptions::default()).unwrap();
    assert_eq!(
        errno(a.release_gws().unwrap_err()),
        Errno::EINVAL,
        "nothing held"
    );
    assert_eq!(a.acquire_gws().unwrap(), have);
    assert_ne!(holds(&a), Some(false));
    assert_eq!(errno(b.acquire_gws().unwrap_err()), Errno::EBUSY);
    // Another GPU has its own.
    c.acquire_gws().unwrap();
    // Given back, another queue may take it.
    a.release_gws().unwrap();
    assert_ne!(holds(&a), Some(true));
    b.acquire_gws().unwrap();
    // Destroying the holder frees it.
    drop(b);
    a.acquire_gws().unwrap();
    assert_ne!(holds(&a), Some(false));
}

/// clang's GWS builtins (`tests/fixtures/code_objects/gws.hip`): work-groups running at once
/// increment a counter with a plain load and store inside GWS semaphore 0, so the count comes
/// out exact only if the semaphore excludes them (`ds_gws_sema_p` waits, `ds_gws_sema_v`
/// releases).
#[test]
fn a_gws_semaphore_keeps_a_counter_exact() {
    const TEST: &str = "gws::a_gws_semaphore_keeps_a_counter_exact";
    let Some(kfd) = common::under_test(TEST, Preset::Gfx90a, 1, &["gws"]) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    if gpu.info().gws == 0 {
        eprintln!("{TEST}: skipped: the GPU under test has no GWS");
        return;
    }
    let (_co, init, count) = gws_kernels(&gpu);
    let counter = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.acquire_gws().unwrap();
    count_under_the_semaphore(&q, &init, &count, &counter).unwrap();
    let n = u32::from_le_bytes(counter.to_vec().unwrap()[..4].try_into().unwrap());
    assert_eq!(n, GROUPS, "every increment inside the semaphore");
}

/// A queue that does not hold the GWS cannot run the instructions: on kfd-emu the first GWS
/// instruction stops the queue (what a GPU does then is not what this checks).
#[test]
fn a_queue_without_the_gws_stops_at_a_gws_instruction() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let (_co, _init, count) = gws_kernels(&gpu);
    let counter = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let holder = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    holder.acquire_gws().unwrap();
    let other = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let mut a = KernelArgs::new(&count).unwrap();
    a.set_buffer(0, &counter).unwrap();
    let r = other
        .dispatch(&Dispatch::linear(&count, 1, 1).with_args(&a))
        .unwrap()
        .wait(T);
    assert!(r.is_err(), "a queue without GWS ran ds_gws_sema_p: {r:?}");
}

const GROUPS: u32 = 512;
const T: Option<std::time::Duration> = Some(std::time::Duration::from_secs(60));

/// The GPU's `gws.hip` kernels: `gws_init` and `gws_count`.
fn gws_kernels(gpu: &kfdrt::Gpu) -> (kfdrt::CodeObject, kfdrt::Kernel, kfdrt::Kernel) {
    let target = &gpu.info().gfx_target;
    let elf = common::code_object_for("gws", target)
        .unwrap_or_else(|| panic!("no gws code object is built for {target}"));
    let co = gpu.load_code_object(&elf).unwrap();
    let init = co.kernel("gws_init").unwrap();
    let count = co.kernel("gws_count").unwrap();
    (co, init, count)
}

/// Sets semaphore 0 to 1 and runs `GROUPS` work-groups of `gws_count` on `counter`.
fn count_under_the_semaphore(
    q: &kfdrt::AqlQueue,
    init: &kfdrt::Kernel,
    count: &kfdrt::Kernel,
    counter: &kfdrt::Buffer,
) -> kfdrt::Result<()> {
    let mut a = KernelArgs::new(init)?;
    a.set_u32(0, 1)?;
    q.dispatch(&Dispatch::linear(init, 1, 1).with_args(&a))?
        .wait(T)?;
    let mut a = KernelArgs::new(count)?;
    a.set_buffer(0, counter)?;
    q.dispatch(&Dispatch::linear(count, GROUPS, 1).with_args(&a))?
        .wait(T)
}
