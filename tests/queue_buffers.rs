//! Queue memory as Linux 6.12+ checks it (`kfd_queue_acquire_buffers`): the ring, the pages of
//! the read and write pointers, the EOP buffer and the CWSR area are each a whole GPU mapping of
//! exactly the expected size; the queue holds them, so they cannot be unmapped under it; and a
//! new queue starts from fresh memory, whatever queue came before it.

use crate::common;

use kfd_sys::bindings::*;
use kfd_sys::DriverExt;
use kfdrt::emu::Preset;
use kfdrt::memory::AllocOptions;
use kfdrt::{AqlQueueOptions, Buffer, Errno, Gpu, Kfd, MemoryKind, Pm4QueueOptions};
use std::time::Duration;

fn whole(gpu: &Gpu, size: u64, kind: MemoryKind) -> Buffer {
    gpu.alloc_with(size, AllocOptions::new(kind).dedicated())
        .unwrap()
}

/// The buffers of one AQL queue, allocated the way the driver wants them.
struct Parts {
    ring: Buffer,
    ptrs: Buffer,
    eop: Buffer,
    cwsr: Buffer,
}

impl Parts {
    fn new(gpu: &Gpu) -> Parts {
        let sizes = gpu
            .info()
            .cwsr_sizes(gpu.kfd().driver().page_size())
            .unwrap();
        Parts {
            ring: whole(gpu, 64 * 1024, MemoryKind::GttCoherent),
            ptrs: whole(gpu, 4096, MemoryKind::GttCoherent),
            eop: whole(
                gpu,
                u64::from(sizes.eop_buffer_size),
                MemoryKind::DeviceLocal,
            ),
            cwsr: whole(gpu, sizes.total_bytes, MemoryKind::DeviceLocal),
        }
    }

    fn args(&self, gpu: &Gpu) -> kfd_ioctl_create_queue_args {
        let sizes = gpu
            .info()
            .cwsr_sizes(gpu.kfd().driver().page_size())
            .unwrap();
        kfd_ioctl_create_queue_args {
            ring_base_address: self.ring.gpu_address(),
            ring_size: 64 * 1024,
            // Where an amd_queue_t keeps its dispatch ids: both inside the one pointer page.
            write_pointer_address: self.ptrs.gpu_address() + 56,
            read_pointer_address: self.ptrs.gpu_address() + 128,
            gpu_id: gpu.id(),
            queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            queue_percentage: 100,
            queue_priority: 7,
            eop_buffer_address: self.eop.gpu_address(),
            eop_buffer_size: u64::from(sizes.eop_buffer_size),
            ctx_save_restore_address: self.cwsr.gpu_address(),
            ctx_save_restore_size: sizes.ctx_save_restore_size,
            ctl_stack_size: sizes.ctl_stack_size,
            ..Default::default()
        }
    }
}

fn create(kfd: &Kfd, a: &mut kfd_ioctl_create_queue_args) -> Result<i32, Errno> {
    // SAFETY: every address is a live buffer of the calling test, kept until the queue
    // is destroyed.
    unsafe { kfd.driver().kfd_ioctl_unchecked(a) }
}

fn destroy(kfd: &Kfd, queue_id: u32) -> Result<i32, Errno> {
    let mut d = kfd_ioctl_destroy_queue_args { queue_id, pad: 0 };
    kfd.driver().kfd_ioctl(&mut d)
}

#[test]
fn create_queue_checks_mirror_kfd() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let p = Parts::new(&gpu);
    let good = p.args(&gpu);
    let sizes = gpu
        .info()
        .cwsr_sizes(gpu.kfd().driver().page_size())
        .unwrap();
    // Buffers that are mapped but not whole: a sub-allocation, and pages of larger buffers.
    let sub = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    assert!(sub.is_suballocated());
    let two_pages = whole(&gpu, 8192, MemoryKind::GttCoherent);
    let big_ring = whole(&gpu, 128 * 1024, MemoryKind::GttCoherent);
    let big_eop = whole(&gpu, 8192, MemoryKind::DeviceLocal);
    let cases: Vec<(&str, kfd_ioctl_create_queue_args)> = vec![
        (
            "unknown gpu",
            kfd_ioctl_create_queue_args {
                gpu_id: 0x1234,
                ..good
            },
        ),
        (
            "ring size not a power of two",
            kfd_ioctl_create_queue_args {
                ring_size: 3000,
                ..good
            },
        ),
        (
            "percentage over 100",
            kfd_ioctl_create_queue_args {
                queue_percentage: 101,
                ..good
            },
        ),
        (
            "priority over 15",
            kfd_ioctl_create_queue_args {
                queue_priority: 16,
                ..good
            },
        ),
        (
            "unknown type",
            kfd_ioctl_create_queue_args {
                queue_type: 9,
                ..good
            },
        ),
        (
            "ring unmapped",
            kfd_ioctl_create_queue_args {
                ring_base_address: 0x7000_0000_0000,
                ..good
            },
        ),
        (
            "ring misaligned",
            kfd_ioctl_create_queue_args {
                ring_base_address: p.ring.gpu_address() + 64,
                ..good
            },
        ),
        (
            "ring shorter than its buffer",
            kfd_ioctl_create_queue_args {
                ring_size: 32 * 1024,
                ..good
            },
        ),
        (
            "ring in a larger buffer",
            kfd_ioctl_create_queue_args {
                ring_base_address: big_ring.gpu_address(),
                ..good
            },
        ),
        (
            "ring not at its buffer's start",
            kfd_ioctl_create_queue_args {
                ring_base_address: big_ring.gpu_address() + 64 * 1024,
                ..good
            },
        ),
        (
            "ring suballocated",
            kfd_ioctl_create_queue_args {
                ring_base_address: sub.gpu_address(),
                ring_size: 4096,
                ..good
            },
        ),
        (
            "rptr unmapped",
            kfd_ioctl_create_queue_args {
                read_pointer_address: 0x10,
                ..good
            },
        ),
        (
            "rptr in a suballocation",
            kfd_ioctl_create_queue_args {
                read_pointer_address: sub.gpu_address(),
                ..good
            },
        ),
        (
            "wptr in a two-page buffer",
            kfd_ioctl_create_queue_args {
                write_pointer_address: two_pages.gpu_address(),
                ..good
            },
        ),
        (
            "rptr on the second page of a buffer",
            kfd_ioctl_create_queue_args {
                read_pointer_address: two_pages.gpu_address() + 4096,
                ..good
            },
        ),
        (
            // Since the fix for 64 KiB pages KFD takes a larger EOP buffer, not a smaller one.
            "eop size below the node's",
            kfd_ioctl_create_queue_args {
                eop_buffer_size: u64::from(sizes.eop_buffer_size) / 2,
                ..good
            },
        ),
        (
            "eop in a larger buffer",
            kfd_ioctl_create_queue_args {
                eop_buffer_address: big_eop.gpu_address(),
                ..good
            },
        ),
        (
            "no eop on gfx90a",
            kfd_ioctl_create_queue_args {
                eop_buffer_address: 0,
                eop_buffer_size: 0,
                ..good
            },
        ),
        (
            "no cwsr area",
            kfd_ioctl_create_queue_args {
                ctx_save_restore_address: 0,
                ..good
            },
        ),
        (
            "control stack not the node's",
            kfd_ioctl_create_queue_args {
                ctl_stack_size: sizes.ctl_stack_size + 4096,
                ..good
            },
        ),
        (
            "save area below the node's",
            kfd_ioctl_create_queue_args {
                ctx_save_restore_size: sizes.ctx_save_restore_size - 4096,
                ..good
            },
        ),
        (
            "save area larger than its buffer",
            kfd_ioctl_create_queue_args {
                ctx_save_restore_size: sizes.ctx_save_restore_size + 4096,
                ..good
            },
        ),
        (
            "cwsr area too small",
            kfd_ioctl_create_queue_args {
                ctx_save_restore_address: p.eop.gpu_address(),
                ..good
            },
        ),
    ];
    for (what, mut a) in cases {
        assert_eq!(create(&kfd, &mut a), Err(Errno::EINVAL), "{what}");
    }
    assert_eq!(kfd.emulator().unwrap().stats().live_queues, 0);
    // An EOP buffer larger than the node's, in a buffer of its size: taken.
    let mut larger = kfd_ioctl_create_queue_args {
        eop_buffer_address: big_eop.gpu_address(),
        eop_buffer_size: big_eop.size(),
        ..good
    };
    create(&kfd, &mut larger).unwrap();
    destroy(&kfd, larger.queue_id).unwrap();
    let mut a = good;
    create(&kfd, &mut a).unwrap();
    assert_eq!(kfd.emulator().unwrap().stats().live_queues, 1);
    destroy(&kfd, a.queue_id).unwrap();
    assert_eq!(destroy(&kfd, a.queue_id), Err(Errno::EINVAL), "twice");
    assert_eq!(kfd.emulator().unwrap().stats().live_queues, 0);

    // A save area larger than the node's is fine when the buffer holds it (KFD checks `<`).
    let bigger = sizes.ctx_save_restore_size + 4096;
    let cwsr = whole(&gpu, sizes.total_bytes + 4096, MemoryKind::DeviceLocal);
    let mut a = kfd_ioctl_create_queue_args {
        ctx_save_restore_address: cwsr.gpu_address(),
        ctx_save_restore_size: bigger,
        ..good
    };
    create(&kfd, &mut a).unwrap();
    destroy(&kfd, a.queue_id).unwrap();
}

#[test]
fn queue_buffers_cannot_be_unmapped_under_a_live_queue() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let p = Parts::new(&gpu);
    let mut a = p.args(&gpu);
    create(&kfd, &mut a).unwrap();
    let ids = [gpu.id()];
    let unmap = |buf: &Buffer| {
        let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
            handle: buf.handle(),
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        // SAFETY: the device list outlives the call.
        unsafe { kfd.driver().kfd_ioctl_unchecked(&mut u) }
    };
    for (what, buf) in [
        ("ring", &p.ring),
        ("pointers", &p.ptrs),
        ("eop", &p.eop),
        ("cwsr", &p.cwsr),
    ] {
        assert_eq!(unmap(buf), Err(Errno::EBUSY), "unmapping the {what}");
        assert!(
            kfd.emulator()
                .unwrap()
                .is_mapped(gpu.id(), buf.gpu_address(), buf.size()),
            "{what} still mapped"
        );
    }
    destroy(&kfd, a.queue_id).unwrap();
    // Once the queue is gone the references are dropped: unmapping works, and so does mapping
    // them again for the buffers' own teardown.
    for buf in [&p.ring, &p.ptrs, &p.eop, &p.cwsr] {
        unmap(buf).unwrap();
        let mut m = kfd_ioctl_map_memory_to_gpu_args {
            handle: buf.handle(),
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        // SAFETY: the device list outlives the call.
        unsafe { kfd.driver().kfd_ioctl_unchecked(&mut m) }.unwrap();
    }
}

/// Makes an AQL, a PM4 and an SDMA queue on `kfd`'s first GPU, after small buffers a queue
/// could have been carved from, runs something on the first two and destroys them.
fn kfdrt_queues_pass_the_checks(kfd: &Kfd, what: &str) {
    let gpu = kfd.gpu(0).unwrap();
    // Small buffers first, so the suballocator has blocks a queue could have been carved from.
    let _small: Vec<_> = (0..8)
        .map(|_| gpu.alloc(4096, MemoryKind::GttCoherent).unwrap())
        .collect();
    let aql = gpu
        .create_aql_queue(AqlQueueOptions::default().with_size_packets(64))
        .unwrap_or_else(|e| panic!("{what}: AQL queue: {e}"));
    aql.barrier_and(&[])
        .unwrap()
        .wait(Some(Duration::from_secs(10)))
        .unwrap();
    let pm4 = gpu
        .create_pm4_queue(Pm4QueueOptions::default())
        .unwrap_or_else(|e| panic!("{what}: PM4 queue: {e}"));
    pm4.finish(Duration::from_secs(10)).unwrap();
    let sdma = gpu
        .create_sdma_queue()
        .unwrap_or_else(|e| panic!("{what}: SDMA queue: {e}"));
    drop((aql, pm4, sdma));
}

#[test]
fn kfdrt_queues_pass_the_checks_on_every_preset() {
    for preset in [Preset::Gfx90a, Preset::Gfx942, Preset::Gfx1100] {
        let kfd = common::emulated(preset, 1);
        kfdrt_queues_pass_the_checks(&kfd, &preset.to_string());
        assert_eq!(kfd.emulator().unwrap().stats().live_queues, 0);
    }
}

/// The same on the device under test: on Linux 6.12 and later it is the driver's own
/// `kfd_queue_acquire_buffers` that checks kfdrt's queue memory.
#[test]
fn kfdrt_queues_pass_the_checks_of_the_device_under_test() {
    let Some(kfd) = common::under_test(
        "queue_buffers::kfdrt_queues_pass_the_checks_of_the_device_under_test",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    kfdrt_queues_pass_the_checks(&kfd, &kfd.describe());
}

/// A PM4 queue created after another was destroyed must not start from the old queue's write
/// pointer and run its packets again.
#[test]
fn a_new_pm4_queue_starts_fresh() {
    let Some(kfd) = common::under_test(
        "queue_buffers::a_new_pm4_queue_starts_fresh",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let target = gpu.alloc(4096, MemoryKind::GttUncached).unwrap();
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    for i in 0..16u32 {
        let p = q.write_data(target.gpu_address() + 4 * u64::from(i), &[0xA0 + i]);
        common::pm4_submit(&q, &[p], Duration::from_secs(5)).unwrap();
    }
    q.finish(Duration::from_secs(5)).unwrap();
    drop(q);
    target.write(0, &[0u8; 64]).unwrap();
    let fresh = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    assert_eq!(fresh.wptr(), 0);
    assert_eq!(fresh.rptr(), 0);
    fresh.finish(Duration::from_secs(5)).unwrap();
    let mut now = [0u8; 64];
    target.read(0, &mut now).unwrap();
    assert_eq!(now, [0u8; 64], "the destroyed queue's packets ran again");
}

#[test]
fn a_doorbell_mmap_must_cover_the_whole_slice() {
    // kfd_doorbell_mmap: the process's doorbells of a GPU (two pages) are mapped whole.
    let Some(kfd) = common::under_test(
        "queue_buffers::a_doorbell_mmap_must_cover_the_whole_slice",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let offset = q.doorbell_offset() & !8191;
    let map = |len: usize| {
        // SAFETY: a fresh mapping of the driver's doorbell offset, unmapped below.
        unsafe {
            kfd.driver().mmap(
                kfd_sys::MapSource::File(kfd_sys::Node::Kfd),
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                offset,
            )
        }
    };
    assert_eq!(map(4096), Err(Errno::EINVAL), "one page of two");
    assert_eq!(map(3 * 4096), Err(Errno::EINVAL), "more than the slice");
    let p = map(8192).unwrap();
    // SAFETY: the mapping made just above.
    unsafe { kfd.driver().munmap(p, 8192) }.unwrap();
}

/// An AQL ring that is zero-filled and never written stays untouched: zeros are valid headers
/// (vendor-specific packets), so a packet processor that looked past the write index would run
/// one and stop the queue. The processor may read a slot only once a producer published a
/// write index past it. Three rounds, since a processor that looks early does so by chance.
#[test]
fn a_zero_filled_ring_nobody_writes_stays_untouched() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    for round in 0..3 {
        let p = Parts::new(&gpu);
        assert!(p.ring.to_vec().unwrap().iter().all(|&b| b == 0));
        let mut a = p.args(&gpu);
        create(&kfd, &mut a).unwrap();
        // The processor polls for a while; a doorbell without a write index must not help.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(emu.queue_error(a.queue_id), None, "round {round}");
        let read_index = u64::from_le_bytes(p.ptrs.to_vec().unwrap()[128..136].try_into().unwrap());
        assert_eq!(read_index, 0, "round {round}: nothing was consumed");
        assert!(p.ring.to_vec().unwrap().iter().all(|&b| b == 0));
        if round == 2 {
            // Publishing slot 0 (a zero header: a vendor packet the CP does not support) is
            // what makes it run: the queue stops with an error.
            p.ptrs.write(56, &1u64.to_le_bytes()).unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while emu.queue_error(a.queue_id).is_none() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(
                emu.queue_error(a.queue_id).is_some(),
                "a published vendor packet stops the queue"
            );
        }
        destroy(&kfd, a.queue_id).unwrap();
    }
}

/// `KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID` is a queue type from KFD 1.17 on: a 1.16 driver refuses
/// it as an unknown type.
#[test]
fn sdma_by_engine_id_is_unknown_before_kfd_1_17() {
    let mut config = kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 1);
    config.kfd_version = kfdrt::KfdVersion::new(1, 16);
    let kfd = common::emulated_with(config);
    let gpu = kfd.gpu(0).unwrap();
    let p = Parts::new(&gpu);
    let mut a = kfd_ioctl_create_queue_args {
        queue_type: KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
        ..p.args(&gpu)
    };
    assert_eq!(create(&kfd, &mut a), Err(Errno::EINVAL));
    // The same arguments on a 1.18 driver make a queue: the refusal above is the version's.
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let p = Parts::new(&gpu);
    let mut a = kfd_ioctl_create_queue_args {
        queue_type: KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
        ..p.args(&gpu)
    };
    create(&kfd, &mut a).unwrap();
    // An engine the GPU lacks is refused (allocate_sdma_queue); the last one is fine.
    let engines = gpu.info().sdma_engines + gpu.info().sdma_xgmi_engines;
    let p2 = Parts::new(&gpu);
    let mut b = kfd_ioctl_create_queue_args {
        queue_type: KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
        sdma_engine_id: engines,
        ..p2.args(&gpu)
    };
    assert_eq!(create(&kfd, &mut b), Err(Errno::EINVAL));
    b.sdma_engine_id = engines - 1;
    create(&kfd, &mut b).unwrap();
    destroy(&kfd, b.queue_id).unwrap();
    destroy(&kfd, a.queue_id).unwrap();
}

/// A ring the GPU may only read: the processor cannot set the headers of the packets it
/// consumes back to INVALID, which on hardware is a write fault. The queue stops at its first
/// packet with a memory violation (the emulator reaches held queue memory directly only where
/// the page table would allow the access, and a refused write is not ignored).
#[test]
fn a_read_only_ring_stops_the_queue_at_its_first_packet() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let mut p = Parts::new(&gpu);
    p.ring = gpu
        .alloc_with(
            64 * 1024,
            AllocOptions::new(MemoryKind::GttCoherent)
                .dedicated()
                .read_only(),
        )
        .unwrap();
    // Every slot INVALID (packet type 1), as a runtime leaves a new ring.
    let mut slots = vec![0u8; 64 * 1024];
    for slot in slots.chunks_mut(64) {
        slot[0] = 1;
    }
    p.ring.write(0, &slots).unwrap();
    let mut a = p.args(&gpu);
    create(&kfd, &mut a).unwrap();
    // One barrier-AND with the barrier bit and no signals: body, then header, then the write
    // pointer (x86 keeps the CPU's stores in order).
    let mut packet = [0u8; 64];
    packet[..2].copy_from_slice(&(3u16 | 1 << 8).to_le_bytes());
    p.ring.write(0, &packet).unwrap();
    p.ptrs.write(56, &1u64.to_le_bytes()).unwrap();
    let emu = kfd.emulator().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while emu.queue_error(a.queue_id).is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        emu.queue_error(a.queue_id),
        Some(kfdrt::emu::QueueErrorCode::MemoryViolation)
    );
    destroy(&kfd, a.queue_id).unwrap();
}

/// libhsakmt places a queue's context-save area in an SVM range when the node supports SVM,
/// and the driver takes it there (`kfd_queue_buffer_svm_get`) when no KFD buffer fits: every
/// page must lie in ranges mapped to the queue's GPU and flagged GPU_ALWAYS_MAPPED. The queue
/// then holds the ranges (their queue reference count), and gives them back when destroyed.
#[test]
fn a_cwsr_area_in_svm_ranges_is_taken_as_the_driver_takes_it() {
    use kfdrt::memory::svm::SvmAttribute as A;
    let Some(kfd) = common::under_test(
        "queue_buffers::a_cwsr_area_in_svm_ranges_is_taken_as_the_driver_takes_it",
        Preset::Gfx90a,
        2,
        &[],
    ) else {
        return;
    };
    let (gpu, other) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let p = Parts::new(&gpu);
    let sizes = gpu
        .info()
        .cwsr_sizes(gpu.kfd().driver().page_size())
        .unwrap();
    let len = sizes.total_bytes;
    let always = KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED;
    let set = |host: &common::HostPages, off: u64, n: u64, attrs: &[A]| {
        // SAFETY: the pages outlive every GPU access (queues are destroyed before the drop).
        unsafe { kfd.svm_set_attributes(host.addr() + off, n, attrs) }.unwrap();
    };
    let try_create = |host: &common::HostPages| {
        let mut a = p.args(&gpu);
        a.ctx_save_restore_address = host.addr();
        create(&kfd, &mut a).map(|_| a.queue_id)
    };

    // Not registered at all: refused.
    let bare = common::HostPages::new(len as usize);
    assert_eq!(try_create(&bare), Err(Errno::EINVAL));
    // Mapped to the GPU, but not flagged always-mapped: refused.
    let unflagged = common::HostPages::new(len as usize);
    set(&unflagged, 0, len, &[A::Access(gpu.id())]);
    assert_eq!(try_create(&unflagged), Err(Errno::EINVAL));
    // Flagged, but mapped to the other GPU only: refused.
    let elsewhere = common::HostPages::new(len as usize);
    set(
        &elsewhere,
        0,
        len,
        &[A::Access(other.id()), A::SetFlags(always)],
    );
    assert_eq!(try_create(&elsewhere), Err(Errno::EINVAL));
    // Flagged and mapped, but only the first half: refused.
    let half = common::HostPages::new(len as usize);
    set(
        &half,
        0,
        (len / 2) & !4095,
        &[A::Access(gpu.id()), A::SetFlags(always)],
    );
    assert_eq!(try_create(&half), Err(Errno::EINVAL));

    // Two ranges (access in place for the second), both flagged: taken, and the queue runs.
    let good = common::HostPages::new(len as usize);
    let cut = (len / 2) & !4095;
    set(&good, 0, cut, &[A::Access(gpu.id()), A::SetFlags(always)]);
    set(
        &good,
        cut,
        len - cut,
        &[A::AccessInPlace(gpu.id()), A::SetFlags(always)],
    );
    let id = try_create(&good).expect("a CWSR area in flagged SVM ranges is accepted");
    // A second queue may share nothing else, but it may name the same ranges.
    let p2 = Parts::new(&gpu);
    let mut a2 = p2.args(&gpu);
    a2.ctx_save_restore_address = good.addr();
    create(&kfd, &mut a2).expect("the ranges may back two queues' areas");
    destroy(&kfd, a2.queue_id).unwrap();
    destroy(&kfd, id).unwrap();
    // A buffer's pointer pages are never taken from SVM: only the CWSR area may lie there.
    let mut a = p.args(&gpu);
    a.ctx_save_restore_address = good.addr();
    a.write_pointer_address = good.addr();
    assert_eq!(create(&kfd, &mut a), Err(Errno::EINVAL));
    // Still usable after everything was given back.
    let id = try_create(&good).unwrap();
    destroy(&kfd, id).unwrap();
}

/// After a GPU page fault KFD evicts the process's queues on that GPU and never restores them;
/// a queue created later is created evicted (`create_queue_cpsch`: `is_evicted =
/// !!qpd->evicted`). `CREATE_QUEUE` succeeds, and the queue never runs a packet.
#[test]
fn a_queue_created_on_a_faulted_gpu_is_created_evicted() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    // An SDMA write to nowhere: a GPU page fault.
    let sdma = gpu.create_sdma_queue().unwrap();
    common::sdma_submit(
        &sdma,
        &[sdma::SdmaPacket::ConstantFill {
            dst: 0x7ff0_0000_0000,
            data: 1,
            bytes: 4,
        }],
        Duration::from_secs(10),
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while gpu.health().is_ok() {
        assert!(std::time::Instant::now() < deadline, "no fault came");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Raw, past kfdrt (which refuses queues on a faulted GPU): the driver creates it.
    let p = Parts::new(&gpu);
    let mut slots = vec![0u8; 64 * 1024];
    for slot in slots.chunks_mut(64) {
        slot[0] = 1;
    }
    p.ring.write(0, &slots).unwrap();
    let mut a = p.args(&gpu);
    create(&kfd, &mut a).expect("CREATE_QUEUE on a faulted GPU succeeds");
    // One barrier-AND with the barrier bit, published: body, header, write pointer.
    let mut packet = [0u8; 64];
    packet[..2].copy_from_slice(&(3u16 | 1 << 8).to_le_bytes());
    p.ring.write(0, &packet).unwrap();
    p.ptrs.write(56, &1u64.to_le_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut read = [0u8; 8];
    p.ptrs.read(128, &mut read).unwrap();
    assert_eq!(
        u64::from_le_bytes(read),
        0,
        "the evicted queue consumed its packet"
    );
    let mut header = [0u8; 2];
    p.ring.read(0, &mut header).unwrap();
    assert_eq!(header, packet[..2], "the packet was consumed");
    destroy(&kfd, a.queue_id).unwrap();
}

/// Under MES (gfx11 and later) a queue's write pointer lives in a one-page GTT buffer of the
/// queue's own device, which the driver maps into the GART for the scheduler
/// (`init_user_queue`): one in VRAM or on another GPU is refused. Before MES it is not.
#[test]
fn under_mes_the_write_pointer_is_in_gtt_on_the_queues_own_device() {
    for (preset, mes) in [(Preset::Gfx1100, true), (Preset::Gfx90a, false)] {
        let kfd = common::emulated(preset, 2);
        let (gpu, other) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
        let parts = Parts::new(&gpu);
        let try_with = |ptrs: &Buffer| {
            let mut a = parts.args(&gpu);
            a.write_pointer_address = ptrs.gpu_address() + 56;
            a.read_pointer_address = ptrs.gpu_address() + 128;
            let r = create(&kfd, &mut a);
            if r.is_ok() {
                destroy(&kfd, a.queue_id).unwrap();
            }
            r.map(drop)
        };
        let refused = |r: Result<(), Errno>| {
            if mes {
                assert_eq!(r, Err(Errno::EINVAL), "{preset}");
            } else {
                assert_eq!(r, Ok(()), "{preset}");
            }
        };
        try_with(&parts.ptrs).unwrap();
        refused(try_with(&whole(&gpu, 4096, MemoryKind::DeviceLocal)));
        let foreign = whole(&other, 4096, MemoryKind::GttCoherent);
        foreign.map_to(&gpu).unwrap();
        refused(try_with(&foreign));
    }
}

/// A kernel of 64 KiB pages (as AArch64 hosts often run): the driver rounds buffers to the
/// page, wants a one-page doorbell slice (`roundup(8 KiB, PAGE_SIZE)`) and one-page pointer
/// buffers, aligns CWSR sizes and EOP mappings to the page, and has no MMIO-remap page. kfdrt
/// takes the page size from the driver: queues of every kind, copies, kernels, host memory and
/// HDP flushes (through SDMA) all work there.
#[test]
fn everything_works_on_a_kernel_of_64_kib_pages() {
    use kfdrt::emu::{GpuFault, WorkGroup};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    const T: Option<Duration> = Some(Duration::from_secs(30));
    let mut config = kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 1);
    config.platform.page_size = 64 << 10;
    let kfd = common::emulated_with(config);
    assert_eq!(kfd.driver().page_size(), 64 << 10);
    let gpu = kfd.gpu(0).unwrap();

    // Kernels on an AQL queue, reading what the CPU wrote to VRAM (flushed through SDMA).
    let runs = Arc::new(AtomicU64::new(0));
    let vram = gpu.alloc(4096, MemoryKind::HostVisibleVram).unwrap();
    let src = vram.gpu_address();
    let seen = runs.clone();
    let k = gpu
        .emulated_kernel(
            "read",
            0,
            Arc::new(move |wg: &WorkGroup<'_>| -> Result<(), GpuFault> {
                seen.store(u64::from(wg.mem.read_u32(src)?), Ordering::SeqCst);
                Ok(())
            }),
        )
        .unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    vram.write(0, &77u32.to_le_bytes()).unwrap();
    q.dispatch(
        &kfdrt::Dispatch::linear(&k, 1, 1)
            .with_fences(aql::FenceScope::Agent, aql::FenceScope::System),
    )
    .unwrap()
    .wait(T)
    .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 77);
    let emu = kfd.emulator().unwrap();
    assert_eq!(emu.stats().unflushed_vram_reads, 0);

    // SDMA copies from registered host memory, and a PM4 queue's fence.
    let sdma = gpu.create_sdma_queue().unwrap();
    let mut host = vec![0u8; 3 * 4096 + 100];
    host[5000] = 9;
    let reg = gpu.register_host_memory(&mut host).unwrap();
    let dst = gpu.alloc(16 << 10, MemoryKind::GttCoherent).unwrap();
    assert!(reg.gpu_address() != 0);
    let staged = gpu.alloc(16 << 10, MemoryKind::GttCoherent).unwrap();
    staged.write(0, &[9u8; 4096]).unwrap();
    sdma.copy(&dst, 0, &staged, 0, 4096, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(dst.to_vec().unwrap()[..4096], [9u8; 4096]);
    drop(reg);
    let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    pm4.finish(Duration::from_secs(30)).unwrap();
    assert!(kfd.flush_hdp().is_ok());
}
