//! Leak accounting: the emulated device counts what its client holds (buffers, GPU and CPU
//! mappings, doorbells, queues, events), a device that kfdrt dropped holds nothing, and the
//! count sees what a client forgot. Every integration test checks its device the same way when
//! it drops (`common::Checked`).

use crate::common;

use kfd_sys::bindings::*;
use kfd_sys::DriverExt;
use kfdrt::emu::Preset;
use kfdrt::{AqlQueueOptions, MemoryKind, Pm4QueueOptions};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(60));

#[test]
fn everything_kfdrt_takes_is_counted_and_given_back() {
    let kfd = common::emulated(Preset::Gfx90a, 2);
    let emu = kfd.emulator().unwrap().clone();
    let before = emu.live_objects();
    assert!(before.events > 0, "the exception events exist from open");
    {
        let gpu = kfd.gpu(0).unwrap();
        let peer = kfd.gpu(1).unwrap();
        let small = gpu.alloc(4096, MemoryKind::DeviceLocal).unwrap();
        let big = gpu.alloc(8 << 20, MemoryKind::GttCoherent).unwrap();
        let dst = gpu.alloc(8 << 20, MemoryKind::GttCoherent).unwrap();
        let on_peer = peer.alloc(1 << 20, MemoryKind::DeviceLocal).unwrap();
        let aql = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
        let signal = kfd.create_signal(1).unwrap();
        let live = emu.live_objects();
        assert!(live.allocations > before.allocations);
        assert!(live.gpu_mappings > before.gpu_mappings);
        assert!(live.buffer_cpu_mappings > before.buffer_cpu_mappings);
        assert!(live.doorbell_mappings >= 1, "{live}");
        assert_eq!(live.queues, 2, "{live}");
        // Work in flight when everything is dropped: a copy and a barrier nobody waits for.
        big.write(0, &[7; 64]).unwrap();
        let copy = gpu
            .copy_engine()
            .unwrap()
            .copy(&dst, 0, &big, 0, 8 << 20, &[])
            .unwrap();
        let barrier = aql.barrier_and(&[]).unwrap();
        copy.wait(T).unwrap();
        drop(barrier);
        drop((small, big, dst, on_peer, aql, pm4, signal));
    }
    // `kfd` drops here and checks that all of it was given back.
}

#[test]
fn a_forgotten_allocation_is_reported() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    let d = kfd.driver().clone();
    // High in the GPU's aperture, far from where kfdrt places its buffers.
    let (_, limit) = gpu.gpuvm_aperture();
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: (limit + 1 - (1 << 32)) & !((1 << 21) - 1),
        size: 1 << 21,
        gpu_id: gpu.id(),
        flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    // SAFETY: a GTT buffer at an address no other allocation of this device uses; nothing
    // dereferences it.
    unsafe { d.kfd_ioctl_unchecked(&mut a) }.unwrap();
    let mut e = kfd_ioctl_create_event_args {
        event_type: KFD_IOC_EVENT_NODECHANGE,
        ..Default::default()
    };
    d.kfd_ioctl(&mut e).unwrap();
    let forgot = emu.live_objects();
    drop(gpu);
    drop(d);
    // What kfdrt made is gone with the device; what the test made behind its back is not.
    drop(kfd.unchecked());
    let kept = emu.live_objects();
    assert_eq!(kept.allocations, 1, "{kept} (before the drop: {forgot})");
    assert_eq!(kept.events, 1, "{kept}");
    assert!(!kept.is_empty());
    assert!(kept.to_string().contains("1 allocations"), "{kept}");
    // Clean up through the raw interface; then nothing is left.
    let driver: std::sync::Arc<dyn kfd_sys::Driver> = emu.clone();
    let mut f = kfd_ioctl_free_memory_of_gpu_args { handle: a.handle };
    driver.kfd_ioctl(&mut f).unwrap();
    let mut de = kfd_ioctl_destroy_event_args {
        event_id: e.event_id,
        pad: 0,
    };
    driver.kfd_ioctl(&mut de).unwrap();
    common::assert_all_released(&emu);
}
