//! kfdrt's hardware address watch (issue #31 item 4): armed through KFD's debugger interface,
//! it stops the kernel at the first store to the watched granule, and the wait on its queue
//! ends with the trap instead of hanging; kfd-emu plays the driver's and the hardware's part
//! (`SET_NODE_ADDRESS_WATCH`, the trap, `SEND_RUNTIME_EVENT`).

use crate::common;
use crate::debugger::attach;
use crate::debugger_waves::vector_add;

use kfdrt::debug::address_watch::WatchAccess;
use kfdrt::emu::Preset;
use kfdrt::{Errno, Error, MemoryKind, WaveExceptions};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));

#[test]
fn a_hardware_watch_stops_the_kernel_at_its_first_store_there() {
    const TEST: &str = "address_watch::a_hardware_watch_stops_the_kernel_at_its_first_store_there";
    let Some(kfd) = common::under_test(TEST, Preset::Gfx90a, 1, &["kernels"]) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let c = gpu.alloc(256 * 4, MemoryKind::GttCoherent).unwrap();
    let at = c.gpu_address() + 400;
    // A read watch lets the stores through.
    let reads = match gpu.watch_address(at, WatchAccess::Reads) {
        Err(Error::Unsupported(why)) => {
            eprintln!("{TEST}: skipped: {why}");
            return;
        }
        r => r.unwrap(),
    };
    vector_add(&gpu, &c, T).unwrap();
    assert!(reads.hits().is_empty());
    drop(reads);

    let w = gpu.watch_address(at, WatchAccess::Writes).unwrap();
    // The granule is the watch mask's lowest compared bit (64 bytes on MI200, 128 on MI300).
    let granule = 1u64 << (gpu.info().properties.get_or_zero("debug_prop") & 0xF);
    assert_eq!((w.address(), w.granule()), (at & !(granule - 1), granule));
    // kfdrt is the process's debugger meanwhile.
    assert_eq!(attach(&kfd).err(), Some(Errno::EALREADY));
    match vector_add(&gpu, &c, T) {
        Err(Error::QueueError {
            fault, queue_id, ..
        }) => {
            assert_eq!(fault.exceptions, WaveExceptions::TRAP, "{fault}");
            let hits = w.hits();
            assert_eq!(hits.len(), 1, "{hits:?}");
            assert_eq!((hits[0].gpu_id, hits[0].queue_id), (gpu.id(), queue_id));
        }
        other => panic!("expected the watch's trap, got {other:?}"),
    }
    drop(w);

    // Disarmed: the kernel runs to its end, and a debugger may attach, which then keeps
    // kfdrt from arming a watch.
    vector_add(&gpu, &c, T).unwrap();
    let _debugger = attach(&kfd).unwrap();
    match gpu.watch_address(at, WatchAccess::Writes) {
        Err(Error::Driver { errno, .. }) => assert_eq!(errno, Errno::EALREADY),
        other => panic!("armed under another debugger: {other:?}"),
    }
}

#[test]
fn a_gpu_without_kfdrts_trap_handler_refuses_a_watch() {
    let kfd = common::emulated(Preset::Gfx1100, 1);
    let gpu = kfd.gpu(0).unwrap();
    let r = gpu.watch_address(0x10_0000, WatchAccess::All);
    assert!(matches!(r, Err(Error::Unsupported(_))), "{r:?}");
}
