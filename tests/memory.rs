//! Memory tests in the spirit of kfdtest's KFDMemoryTest.

use crate::common;

use kfd_sys::bindings::*;
use kfd_sys::DriverExt;
use kfdrt::emu::Preset;
use kfdrt::{Errno, Error, MemoryKind};

const ALL_KINDS: [MemoryKind; 5] = [
    MemoryKind::DeviceLocal,
    MemoryKind::HostVisibleVram,
    MemoryKind::GttCoherent,
    MemoryKind::GttUncached,
    MemoryKind::Pageable,
];

#[test]
fn every_kind_allocates_maps_and_is_accessible_where_it_should_be() {
    let kfd = common::device();
    // The default, set explicitly so the test means the same under KFDRT_DISABLE_SUBALLOCATOR=1.
    kfd.set_suballocation_threshold(2 << 20);
    let gpu = kfd.gpu(0).unwrap();
    for kind in ALL_KINDS {
        let mut buf = gpu.alloc(10_000, kind).unwrap();
        assert_eq!(buf.size(), 10_000);
        assert!(buf.allocated_size() >= 10_000);
        assert_eq!(
            buf.is_suballocated(),
            kind != MemoryKind::Pageable,
            "{kind:?}"
        );
        assert_eq!(buf.gpu_address() % 4096, 0);
        assert_eq!(buf.mapped_gpus(), vec![gpu.id()]);
        assert_eq!(buf.as_ptr().is_some(), kind.host_accessible(), "{kind:?}");
        if let Some(bytes) = buf.as_mut_slice() {
            bytes[9_999] = 0xA5;
            let mut out = [0u8; 1];
            buf.read(9_999, &mut out).unwrap();
            assert_eq!(out[0], 0xA5);
        }
    }
}

#[test]
fn parameter_errors_are_typed() {
    let kfd = common::device();
    let gpu = kfd.gpu(0).unwrap();
    assert!(matches!(
        gpu.alloc(0, MemoryKind::GttCoherent),
        Err(Error::ZeroSize { what: "allocation" })
    ));
    assert!(matches!(
        gpu.alloc(u64::MAX - 10, MemoryKind::DeviceLocal),
        Err(Error::TooLarge { .. })
    ));
    let vram = gpu.alloc(4096, MemoryKind::DeviceLocal).unwrap();
    assert!(
        matches!(vram.write(0, &[1]), Err(Error::NoCpuAccess { .. })),
        "device-local is not host-accessible"
    );
    let gtt = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    assert!(matches!(
        gtt.write(4095, &[1, 2]),
        Err(Error::OutOfBounds {
            offset: 4095,
            len: 2,
            size: 4096,
            ..
        })
    ));
    assert!(matches!(
        gtt.read(u64::MAX, &mut [0]),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        gtt.unmap_from(&gpu),
        Err(Error::UnmapFromOwner { .. })
    ));
    // A GPU of another Kfd is refused before reaching the driver.
    let other = common::emulated(Preset::Gfx90a, 1);
    assert!(matches!(
        gtt.map_to(&other.gpu(0).unwrap()),
        Err(Error::ForeignObject { what: "GPU" })
    ));
}

#[test]
fn driver_rejects_bad_raw_requests_with_kfd_errnos() {
    let kfd = common::device();
    let gpu = kfd.gpu(0).unwrap();
    let d = kfd.driver();
    // Freeing an unknown handle.
    let mut free = kfd_ioctl_free_memory_of_gpu_args {
        handle: 0xdead_0000_0000,
    };
    assert_eq!(d.kfd_ioctl(&mut free), Err(Errno::EINVAL));
    // Unknown GPU for ACQUIRE_VM.
    let mut acq = kfd_ioctl_acquire_vm_args {
        drm_fd: 0,
        gpu_id: 0x1,
    };
    assert_eq!(d.kfd_ioctl(&mut acq), Err(Errno::EINVAL));
    // Zero-size allocation and no memory domain.
    for (size, flags) in [
        (0u64, KFD_IOC_ALLOC_MEM_FLAGS_GTT),
        (4096, KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE),
    ] {
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: 0x7f00_0000_0000,
            size,
            gpu_id: gpu.id(),
            flags,
            ..Default::default()
        };
        // SAFETY: the request is rejected before any address is used.
        let r = unsafe { d.kfd_ioctl_unchecked(&mut a) };
        assert_eq!(r, Err(Errno::EINVAL), "size {size} flags {flags:#x}");
    }
}

#[test]
fn vram_over_capacity_is_out_of_memory() {
    let Some(kfd) = common::under_test(
        "memory::vram_over_capacity_is_out_of_memory",
        Preset::Gfx1100,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let too_much = gpu.info().vram_bytes + (1 << 30);
    match gpu.alloc(too_much, MemoryKind::DeviceLocal) {
        Err(Error::OutOfMemory {
            gpu_id, requested, ..
        }) => {
            assert_eq!(gpu_id, gpu.id());
            assert!(requested >= too_much);
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    // Fill most of VRAM, then one more large allocation fails; freeing makes room again.
    let half = gpu.info().vram_bytes / 2 + 4096;
    let first = gpu.alloc(half, MemoryKind::DeviceLocal).unwrap();
    assert!(matches!(
        gpu.alloc(half, MemoryKind::DeviceLocal),
        Err(Error::OutOfMemory { .. })
    ));
    drop(first);
    gpu.alloc(half, MemoryKind::DeviceLocal).unwrap();
    kfd.trim_memory();
    if let Some(emu) = kfd.emulator() {
        assert_eq!(emu.stats().live_allocations, 0);
    }
}

/// One allocation as large as the VRAM the topology reports (kfdtest's big-buffer tests):
/// it succeeds, and then not one more page fits. Emulated: only an idle emulated GPU has all
/// of its reported VRAM available (on hardware the driver reserves some, and other processes
/// use some).
#[test]
fn an_allocation_of_all_reported_vram_succeeds() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let all = gpu.available_memory().unwrap();
    assert_eq!(all, gpu.info().vram_bytes, "nothing allocated yet");
    let whole = gpu.alloc(all, MemoryKind::DeviceLocal).unwrap();
    assert_eq!(gpu.available_memory().unwrap(), 0);
    assert!(matches!(
        gpu.alloc_with(
            4096,
            kfdrt::AllocOptions::new(MemoryKind::DeviceLocal).dedicated()
        ),
        Err(Error::OutOfMemory { .. })
    ));
    drop(whole);
    assert_eq!(gpu.available_memory().unwrap(), all);
}

/// Emulated: reads the emulator's page tables and counters.
#[test]
fn ten_thousand_alloc_free_cycles_leave_nothing_behind() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    for i in 0..10_000u64 {
        let kind = ALL_KINDS[(i % 5) as usize];
        let b = gpu.alloc(4096 * (1 + i % 7), kind).unwrap();
        assert!(emu.is_mapped(gpu.id(), b.gpu_address(), b.size()));
    }
    // Small buffers come from 2 MiB blocks; at most one spare block per pool survives the frees.
    assert!(
        kfd.suballocator_blocks() <= 4,
        "{} blocks kept",
        kfd.suballocator_blocks()
    );
    kfd.trim_memory();
    let s = emu.stats();
    assert_eq!(s.live_allocations, 0);
    assert_eq!(emu.mapped_bytes(gpu.id()), Some(0));
}

#[test]
fn contents_survive_unmap_and_remap() {
    let kfd = common::device();
    let gpu = kfd.gpu(0).unwrap();
    for kind in [
        MemoryKind::HostVisibleVram,
        MemoryKind::GttCoherent,
        MemoryKind::Pageable,
    ] {
        let buf = gpu.alloc(64 * 1024, kind).unwrap();
        let pattern: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 % 251) as u8).collect();
        buf.write(0, &pattern).unwrap();
        buf.remap().unwrap();
        let mut back = vec![0u8; pattern.len()];
        buf.read(0, &mut back).unwrap();
        assert_eq!(back, pattern, "{kind:?}");
        if let Some(emu) = kfd.emulator() {
            assert!(emu.is_mapped(gpu.id(), buf.gpu_address(), buf.size()));
        }
    }
}

/// Emulated: reads the emulator's page tables.
#[test]
fn peer_mapping_shows_in_both_page_tables() {
    let kfd = common::emulated(Preset::Gfx90a, 2);
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let emu = kfd.emulator().unwrap().clone();
    let buf = g0.alloc(3 << 20, MemoryKind::DeviceLocal).unwrap();
    assert_eq!(
        buf.gpu_address() % (2 << 20),
        0,
        ">= 2 MiB allocations are 2 MiB-aligned"
    );
    assert!(emu.is_mapped(g0.id(), buf.gpu_address(), buf.size()));
    assert!(!emu.is_mapped(g1.id(), buf.gpu_address(), buf.size()));
    buf.map_to(&g1).unwrap();
    buf.map_to(&g1).unwrap(); // idempotent
    assert_eq!(buf.mapped_gpus(), vec![g0.id(), g1.id()]);
    assert!(emu.is_mapped(g0.id(), buf.gpu_address(), buf.size()));
    assert!(emu.is_mapped(g1.id(), buf.gpu_address(), buf.size()));
    assert_eq!(emu.mapped_bytes(g1.id()), Some(buf.allocated_size()));
    buf.unmap_from(&g1).unwrap();
    assert!(!emu.is_mapped(g1.id(), buf.gpu_address(), 1));
    assert!(matches!(
        buf.unmap_from(&g1),
        Err(Error::NotOnGpu { gpu_id, .. }) if gpu_id == g1.id()
    ));
    buf.map_to(&g1).unwrap();
    drop(buf);
    assert_eq!(emu.mapped_bytes(g0.id()), Some(0));
    assert_eq!(emu.mapped_bytes(g1.id()), Some(0));
    assert_eq!(emu.stats().live_allocations, 0);
}

#[test]
fn injected_allocation_failure_is_typed_and_leaks_nothing() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    let keep = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    emu.faults().fail_nth_allocation(1);
    assert!(matches!(
        gpu.alloc(4096, MemoryKind::DeviceLocal),
        Err(Error::OutOfMemory { .. })
    ));
    assert_eq!(emu.stats().live_allocations, 1);
    gpu.alloc(4096, MemoryKind::DeviceLocal).unwrap();
    drop(keep);
    kfd.trim_memory();
    assert_eq!(emu.stats().live_allocations, 0);
}

#[test]
fn gtt_is_bounded_by_system_memory_as_amdgpu_bounds_it() {
    // amdgpu lets KFD pin at most half of system memory as GTT (TTM's page limit).
    // Emulated: the emulated machine's system memory size (on hardware it would pin half the
    // host's memory).
    let kfd = common::emulated(kfdrt::emu::Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let system = kfd.emulator().unwrap().config().system_memory_bytes;
    match gpu.alloc(256 << 30, MemoryKind::GttCoherent) {
        Err(kfdrt::Error::OutOfMemory { .. }) => {}
        other => panic!("a 256 GiB GTT buffer on a {system}-byte machine: {other:?}"),
    }
    let half = gpu
        .alloc(system / 2 - (64 << 20), MemoryKind::GttCoherent)
        .unwrap();
    assert!(matches!(
        gpu.alloc(128 << 20, MemoryKind::GttCoherent),
        Err(kfdrt::Error::OutOfMemory { .. })
    ));
    drop(half);
    gpu.alloc(128 << 20, MemoryKind::GttCoherent).unwrap();
}

/// A buffer allocated without a VA (libhsakmt's `NoAddress` allocations pass `va_addr` 0): the
/// driver takes it (`kfd_ioctl_alloc_memory_of_gpu` has no VA check, and since Linux 6.12 skips
/// the SVM overlap check for VRAM without one), two of them do not collide, and it has nowhere
/// to be mapped for a GPU.
#[test]
fn a_vram_buffer_without_a_va_is_allocated_but_never_mapped() {
    let Some(kfd) = common::under_test(
        "memory::a_vram_buffer_without_a_va_is_allocated_but_never_mapped",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let d = kfd.driver().clone();
    let alloc = || {
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: 0,
            size: 1 << 20,
            gpu_id: gpu.id(),
            flags: KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            ..Default::default()
        };
        // SAFETY: VRAM at no address: nothing dereferences it.
        unsafe { d.kfd_ioctl_unchecked(&mut a) }.map(|_| a.handle)
    };
    let (h1, h2) = (alloc().unwrap(), alloc().unwrap());
    let mut ids = [gpu.id()];
    let mut map = kfd_ioctl_map_memory_to_gpu_args {
        handle: h1,
        device_ids_array_ptr: ids.as_mut_ptr() as u64,
        n_devices: 1,
        n_success: 0,
    };
    // SAFETY: the device-id array lives across the call.
    let r = unsafe { d.kfd_ioctl_unchecked(&mut map) };
    assert_eq!(r, Err(Errno::EINVAL), "a buffer without a VA was mapped");
    for h in [h1, h2] {
        let mut f = kfd_ioctl_free_memory_of_gpu_args { handle: h };
        d.kfd_ioctl(&mut f).unwrap();
    }
}

/// Two MI210s on PCIe (no XGMI bridge), on a host with or without peer-to-peer DMA.
fn pcie_mi210s(peer_to_peer: bool) -> common::Checked {
    let mut config = kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 2);
    for g in &mut config.gpus {
        g.sdma_xgmi_engines = 0;
    }
    config.platform.peer_to_peer = peer_to_peer;
    common::emulated_with(config)
}

/// Peer VRAM maps where KFD lists a peer link (an XGMI hive's `io_links`, a PCIe peer's
/// `p2p_links`) and is refused elsewhere: without a path the driver would move the owner's
/// buffer to system memory to map it (a DMA-buf attachment pinned in GTT), which the emulator
/// does and counts. Emulated: exact emulated topologies (XGMI, PCIe with and without P2P,
/// small BAR) and the emulator's count of moved buffers.
#[test]
fn peer_vram_maps_only_where_the_topology_lists_a_peer_path() {
    use kfdrt::PeerAccess;
    let check = |kfd: &kfdrt::Kfd, expect: PeerAccess| {
        let (a, b) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
        assert_eq!(a.peer_access(&a), PeerAccess::Local);
        assert_eq!(b.peer_access(&a), expect, "GPU 1 to GPU 0's VRAM");
        assert_eq!(a.peer_access(&b), expect, "GPU 0 to GPU 1's VRAM");
        let vram = a.alloc(64 << 10, MemoryKind::DeviceLocal).unwrap();
        let host = a.alloc(64 << 10, MemoryKind::GttCoherent).unwrap();
        host.map_to(&b).unwrap();
        match vram.map_to(&b) {
            Ok(()) => assert_ne!(expect, PeerAccess::None),
            Err(Error::NoPeerAccess {
                gpu_id,
                owner_gpu_id,
            }) => {
                assert_eq!(expect, PeerAccess::None);
                assert_eq!((gpu_id, owner_gpu_id), (b.id(), a.id()));
            }
            Err(e) => panic!("{e}"),
        }
        assert_eq!(kfd.emulator().unwrap().stats().vram_moved_to_system, 0);
    };
    check(&common::emulated(Preset::Gfx90a, 2), PeerAccess::Xgmi);
    check(&pcie_mi210s(true), PeerAccess::Pcie);
    check(&pcie_mi210s(false), PeerAccess::None);
    // RX 7900 XTXs: their VRAM is not all in the BAR, so not peer-accessible even on a P2P host.
    check(&common::emulated(Preset::Gfx1100, 2), PeerAccess::None);

    // What the driver does when asked anyway: the buffer moves to system memory.
    let kfd = pcie_mi210s(false);
    let (a, b) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let vram = a.alloc(4 << 20, MemoryKind::DeviceLocal).unwrap();
    let d = kfd.driver().clone();
    let mut ids = [b.id()];
    let mut map = kfd_ioctl_map_memory_to_gpu_args {
        handle: vram.handle(),
        device_ids_array_ptr: ids.as_mut_ptr() as u64,
        n_devices: 1,
        n_success: 0,
    };
    // SAFETY: the device-id array lives across the call; the buffer outlives the mapping.
    unsafe { d.kfd_ioctl_unchecked(&mut map) }.unwrap();
    assert_eq!(
        kfd.emulator().unwrap().stats().vram_moved_to_system,
        4 << 20
    );
    let mut unmap = kfd_ioctl_unmap_memory_from_gpu_args {
        handle: vram.handle(),
        device_ids_array_ptr: ids.as_mut_ptr() as u64,
        n_devices: 1,
        n_success: 0,
    };
    // SAFETY: as above.
    unsafe { d.kfd_ioctl_unchecked(&mut unmap) }.unwrap();
}
