//! Global wave sync (ALLOC_QUEUE_GWS) as KFD hands it out: one queue per GPU of the process
//! holds it, a second gets EBUSY, giving back what is not held is EINVAL, destroying the
//! holder frees it, and each GPU has its own.

use crate::common;

use kfdrt::emu::Preset;
use kfdrt::{AqlQueueOptions, Errno, Error};

fn errno(e: Error) -> Errno {
    match e {
        Error::Driver { errno, .. } => errno,
        other => panic!("expected a driver error, got {other}"),
    }
}

#[test]
fn one_queue_per_gpu_holds_the_gws() {
    let kfd = common::emulated(Preset::Gfx90a, 2);
    let emu = kfd.emulator().unwrap().clone();
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    assert_eq!(g0.info().gws, 64);
    let a = g0.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let b = g0.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let c = g1.create_aql_queue(AqlQueueOptions::default()).unwrap();
    assert_eq!(
        errno(a.release_gws().unwrap_err()),
        Errno::EINVAL,
        "nothing held"
    );
    assert_eq!(a.acquire_gws().unwrap(), 64);
    assert!(emu.queue_holds_gws(a.id()));
    assert_eq!(errno(b.acquire_gws().unwrap_err()), Errno::EBUSY);
    // Another GPU has its own.
    c.acquire_gws().unwrap();
    // Given back, another queue may take it.
    a.release_gws().unwrap();
    assert!(!emu.queue_holds_gws(a.id()));
    b.acquire_gws().unwrap();
    // Destroying the holder frees it.
    drop(b);
    a.acquire_gws().unwrap();
    assert!(emu.queue_holds_gws(a.id()));
}

/// clang's GWS builtins (`tests/fixtures/code_objects/gws.hip`): work-groups running at once
/// on every wave thread increment a counter with a plain load and store inside GWS semaphore 0,
/// so the count comes out exact only if the semaphore excludes them (`ds_gws_sema_p` waits,
/// `ds_gws_sema_v` releases). A queue that does not hold the GWS cannot run the instructions.
#[test]
fn a_gws_semaphore_keeps_a_counter_exact() {
    use kfdrt::{Dispatch, KernelArgs, MemoryKind};
    const GWS_KERNELS: &[u8] = include_bytes!("fixtures/code_objects/gws-gfx90a.elf");
    const GROUPS: u32 = 512;
    let t = Some(std::time::Duration::from_secs(60));
    let mut c = kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 1);
    c.wave_threads = 4;
    let kfd = common::emulated_with(c);
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu.load_code_object(GWS_KERNELS).unwrap();
    let (init, count) = (
        co.kernel("gws_init").unwrap(),
        co.kernel("gws_count").unwrap(),
    );
    let counter = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.acquire_gws().unwrap();
    let mut a = KernelArgs::new(&init).unwrap();
    a.set_u32(0, 1).unwrap();
    q.dispatch(&Dispatch::linear(&init, 1, 1).with_args(&a))
        .unwrap()
        .wait(t)
        .unwrap();
    let mut a = KernelArgs::new(&count).unwrap();
    a.set_buffer(0, &counter).unwrap();
    q.dispatch(&Dispatch::linear(&count, GROUPS, 1).with_args(&a))
        .unwrap()
        .wait(t)
        .unwrap();
    let n = u32::from_le_bytes(counter.to_vec().unwrap()[..4].try_into().unwrap());
    assert_eq!(n, GROUPS, "every increment inside the semaphore");

    // Without the GWS, the first GWS instruction stops the queue.
    let other = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let r = other
        .dispatch(&Dispatch::linear(&count, 1, 1).with_args(&a))
        .unwrap()
        .wait(t);
    assert!(r.is_err(), "a queue without GWS ran ds_gws_sema_p: {r:?}");
}
