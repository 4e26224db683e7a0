//! Global wave sync (ALLOC_QUEUE_GWS) as KFD hands it out: one queue per GPU of the process
//! holds it, a second gets EBUSY, giving back what is not held is EINVAL, destroying the
//! holder frees it, and each GPU has its own.

mod common;

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
