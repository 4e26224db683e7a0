//! Shared virtual memory (AMDKFD_IOC_SVM) through kfdrt: the process's own memory becomes
//! reachable by the GPUs given access, at its own address, in both directions; a GPU without
//! access faults; attributes read back merged over ranges as the driver reports them; prefetch
//! records a migration; bad ranges are refused with the driver's errnos.

use crate::common;

use common::HostPages;
use kfdrt::code_object::FeatureSetting;
use kfdrt::emu::Preset;
use kfdrt::memory::svm::{SvmAccess, SvmAttribute, SvmLocation};
use kfdrt::{Errno, Error, MemoryKind};
use sdma::SdmaPacket;
use std::time::Duration;

const LEN: usize = 2 << 20;
const LONG: Duration = Duration::from_secs(30);

/// Held by every test of this file: they map and unmap the process's own memory, and a hole
/// one test unmaps on purpose must not be taken by another test's mapping meanwhile (which the
/// first would then unmap from under it).
static HOST_MEMORY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn host_memory() -> std::sync::MutexGuard<'static, ()> {
    HOST_MEMORY.lock().unwrap_or_else(|p| p.into_inner())
}

fn errno(e: Error) -> Errno {
    match e {
        Error::Driver { errno, .. } => errno,
        other => panic!("expected a driver error, got {other}"),
    }
}

#[test]
fn gpus_with_access_read_and_write_process_memory_in_place() {
    let _memory = host_memory();
    let Some(kfd) = common::under_test(
        "svm::gpus_with_access_read_and_write_process_memory_in_place",
        Preset::Gfx90a,
        2,
        &[],
    ) else {
        return;
    };
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    assert!(g0.info().supports_svm());
    let host = HostPages::new(LEN);
    let pattern: Vec<u8> = (0..LEN).map(|i| (i % 241) as u8).collect();
    // SAFETY: writing the fresh mapping before any GPU has access.
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), host.0, LEN) };
    // SAFETY: the mapping outlives the GPU's access (taken away before it is dropped).
    unsafe {
        kfd.svm_set_attributes(
            host.addr(),
            LEN as u64,
            &[
                SvmAttribute::Access(g0.id()),
                SvmAttribute::PreferredLocation(SvmLocation::System),
            ],
        )
    }
    .unwrap();
    // GPU 0's copy engine reads the process memory at its own address...
    let q = g0.create_sdma_queue().unwrap();
    let out = g0.alloc(LEN as u64, MemoryKind::GttCoherent).unwrap();
    common::sdma_submit(
        &q,
        &[
            SdmaPacket::CopyLinear {
                src: host.addr(),
                dst: out.gpu_address(),
                bytes: LEN as u64,
            },
            // ...and writes it.
            SdmaPacket::ConstantFill {
                dst: host.addr() + 4096,
                data: 0xC3C3_C3C3,
                bytes: 4096,
            },
        ],
        LONG,
    )
    .unwrap();
    let mark = g0.alloc(4096, MemoryKind::GttCoherent).unwrap();
    q.fill(&mark, 0, 1, 4, &[])
        .unwrap()
        .wait(Some(LONG))
        .unwrap();
    assert!(
        out.to_vec().unwrap() == pattern,
        "GPU 0 read the process memory"
    );
    let now = host.bytes();
    assert!(
        now[4096..8192].iter().all(|&b| b == 0xC3),
        "the CPU sees GPU 0's write"
    );
    assert_eq!(now[..4096], pattern[..4096]);

    // Attributes read back; GPU 1 has none.
    let a = kfd
        .svm_attributes(host.addr(), LEN as u64, &[&g0, &g1])
        .unwrap();
    assert_eq!(a.preferred, SvmLocation::System);
    assert_eq!(a.prefetch, SvmLocation::Undefined);
    assert_eq!(
        a.access,
        vec![(g0.id(), SvmAccess::Access), (g1.id(), SvmAccess::None)]
    );
    // Prefetching half the range to GPU 0 records a migration (the emulator counts it); the
    // span then disagrees.
    let migrated = || kfd.emulator().map(|emu| emu.svm_migrated_bytes());
    let before = migrated();
    // SAFETY: as above.
    unsafe {
        kfd.svm_set_attributes(
            host.addr(),
            (LEN / 2) as u64,
            &[SvmAttribute::PrefetchLocation(SvmLocation::Gpu(g0.id()))],
        )
    }
    .unwrap();
    if let (Some(after), Some(before)) = (migrated(), before) {
        assert_eq!(after - before, (LEN / 2) as u64);
    }
    let half = kfd
        .svm_attributes(host.addr(), (LEN / 2) as u64, &[])
        .unwrap();
    assert_eq!(half.prefetch, SvmLocation::Gpu(g0.id()));
    let all = kfd.svm_attributes(host.addr(), LEN as u64, &[]).unwrap();
    assert_eq!(all.prefetch, SvmLocation::Undefined, "ranges that disagree");
    assert_eq!(
        all.preferred,
        SvmLocation::System,
        "split ranges keep what they had"
    );

    // Taking access away unmaps it from GPU 0 too.
    // SAFETY: removing access only.
    unsafe { kfd.svm_set_attributes(host.addr(), LEN as u64, &[SvmAttribute::NoAccess(g0.id())]) }
        .unwrap();
    let a = kfd.svm_attributes(host.addr(), LEN as u64, &[&g0]).unwrap();
    assert_eq!(a.access, vec![(g0.id(), SvmAccess::None)]);
}

/// Emulated: a planted GPU fault (GPU 1 reaching process memory it has no access to).
#[test]
fn a_gpu_without_access_faults_on_process_memory() {
    let _memory = host_memory();
    let kfd = common::emulated(Preset::Gfx90a, 2);
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let host = HostPages::new(LEN);
    // SAFETY: the mapping outlives the GPU's access (taken away before it is dropped).
    unsafe {
        kfd.svm_set_attributes(
            host.addr(),
            LEN as u64,
            &[
                SvmAttribute::Access(g0.id()),
                SvmAttribute::PreferredLocation(SvmLocation::System),
            ],
        )
    }
    .unwrap();
    // GPU 1 has no access: its copy engine faults on the address.
    let q1 = g1.create_sdma_queue().unwrap();
    let out1 = g1.alloc(4096, MemoryKind::GttCoherent).unwrap();
    common::sdma_submit(
        &q1,
        &[SdmaPacket::CopyLinear {
            src: host.addr(),
            dst: out1.gpu_address(),
            bytes: 4096,
        }],
        LONG,
    )
    .unwrap();
    let mark1 = g1.alloc(4096, MemoryKind::GttCoherent).unwrap();
    match q1.fill(&mark1, 0, 1, 4, &[]).unwrap().wait(Some(LONG)) {
        Err(Error::DeviceFault { fault, .. }) => assert_eq!(fault.va, host.addr()),
        other => panic!("GPU 1 reached memory it has no access to: {other:?}"),
    }
    // Taking access away unmaps it from GPU 0 too.
    // SAFETY: removing access only.
    unsafe { kfd.svm_set_attributes(host.addr(), LEN as u64, &[SvmAttribute::NoAccess(g0.id())]) }
        .unwrap();
    let a = kfd.svm_attributes(host.addr(), LEN as u64, &[&g0]).unwrap();
    assert_eq!(a.access, vec![(g0.id(), SvmAccess::None)]);
}

#[test]
fn bad_ranges_get_the_drivers_errnos() {
    let _memory = host_memory();
    let Some(kfd) = common::under_test(
        "svm::bad_ranges_get_the_drivers_errnos",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let g = kfd.gpu(0).unwrap();
    let host = HostPages::new(1 << 20);
    let access = [SvmAttribute::Access(g.id())];
    // SAFETY: the driver refuses this and each call below; nothing is given access.
    let r = unsafe { kfd.svm_set_attributes(host.addr() + 1, 4096, &access) };
    assert_eq!(errno(r.unwrap_err()), Errno::EINVAL, "unaligned start");
    // SAFETY: as above.
    let r = unsafe { kfd.svm_set_attributes(host.addr(), 100, &access) };
    assert_eq!(errno(r.unwrap_err()), Errno::EINVAL, "unaligned size");
    // Memory that is not mapped (a hole made for the purpose).
    // SAFETY: unmapping the second half of our own mapping.
    unsafe { libc::munmap(host.0.add(1 << 19).cast(), 1 << 19) };
    // SAFETY: as above.
    let r = unsafe { kfd.svm_set_attributes(host.addr(), 1 << 20, &access) };
    assert_eq!(errno(r.unwrap_err()), Errno::EFAULT, "a hole in the range");
    // Fill the hole again at once, so that nothing else is mapped there when `host` unmaps
    // its whole span.
    map_again(host.addr() + (1 << 19), 1 << 19);
    // A KFD buffer's addresses.
    let b = g.alloc(1 << 20, MemoryKind::GttCoherent).unwrap();
    // SAFETY: as above.
    let r = unsafe { kfd.svm_set_attributes(b.gpu_address() & !4095, 4096, &access) };
    assert_eq!(errno(r.unwrap_err()), Errno::EADDRINUSE, "a buffer's range");
    // An unknown GPU id is refused before the driver sees it.
    // SAFETY: as above.
    let r = unsafe { kfd.svm_set_attributes(host.addr(), 4096, &[SvmAttribute::Access(0xDEAD)]) };
    assert!(matches!(r, Err(Error::NoSuchGpuId { gpu_id: 0xDEAD })));
    // A prefetch needs a place to go: system memory or a GPU, not "undefined".
    // SAFETY: as above.
    let r = unsafe {
        kfd.svm_set_attributes(
            host.addr(),
            4096,
            &[SvmAttribute::PrefetchLocation(SvmLocation::Undefined)],
        )
    };
    assert_eq!(errno(r.unwrap_err()), Errno::EINVAL, "prefetch to nowhere");
    // Unregistered memory reads as the defaults: no access, host-access and coherent flags.
    let d = kfd.svm_attributes(host.addr(), 4096, &[&g]).unwrap();
    assert_eq!(d.access, vec![(g.id(), SvmAccess::None)]);
    assert_eq!(d.preferred, SvmLocation::Undefined);
    assert_eq!(d.flags & 3, 3);
    assert_eq!(d.granularity, 9);
    drop(host);
}

/// `kfd_ioctl_set_xnack_mode`: a query works at any time, but a change (even to the mode the
/// process already has) is EBUSY while the process has a user queue; with none, gfx90a lets the
/// process choose (`KFD_SUPPORT_XNACK_PER_PROCESS`) and gfx1100 refuses XNACK on with EPERM.
#[test]
fn xnack_mode_cannot_change_while_queues_exist() {
    let _memory = host_memory();
    use kfd_sys::bindings::kfd_ioctl_set_xnack_mode_args as Args;
    use kfd_sys::DriverExt;
    let set = |kfd: &kfdrt::Kfd, mode: i32| {
        let mut a = Args {
            xnack_enabled: mode,
        };
        kfd.driver().kfd_ioctl(&mut a).map(|_| a.xnack_enabled)
    };
    let Some(kfd) = common::under_test(
        "svm::xnack_mode_cannot_change_while_queues_exist",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    assert_eq!(set(&kfd, -1), Ok(0));
    assert_eq!(set(&kfd, 0), Ok(0));
    let q = gpu.create_sdma_queue().unwrap();
    assert_eq!(set(&kfd, -1), Ok(0), "a query is always answered");
    assert_eq!(set(&kfd, 0), Err(Errno::EBUSY));
    assert_eq!(set(&kfd, 1), Err(Errno::EBUSY));
    drop(q);
    if gpu.target_id().xnack == FeatureSetting::Unsupported {
        // A GPU without XNACK (RDNA) refuses it on, as below.
        assert_eq!(set(&kfd, 1), Err(Errno::EPERM));
        assert_eq!(set(&kfd, -1), Ok(0));
    } else {
        assert_eq!(set(&kfd, 1), Ok(1));
        assert_eq!(set(&kfd, -1), Ok(1));
        assert_eq!(set(&kfd, 0), Ok(0));
    }
    let navi = common::emulated(Preset::Gfx1100, 1);
    assert_eq!(set(&navi, 1), Err(Errno::EPERM));
    assert_eq!(set(&navi, -1), Ok(0));
}

/// XNACK on (`svm_range_restore_pages`): a GPU reaches the process's memory it was never given,
/// at its own address, through retry faults: the page is mapped where it is, in a new range
/// every GPU may access, with the VMA's permissions; a write to a read-only page and an access
/// to no memory at all are still faults. With XNACK off, the same read is a fault.
#[test]
fn with_xnack_on_a_gpu_reaches_unregistered_process_memory() {
    let _memory = host_memory();
    use kfd_sys::bindings::kfd_ioctl_set_xnack_mode_args as Args;
    use kfd_sys::DriverExt;
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let host = HostPages::new(4 * 4096);
    let pattern: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
    // SAFETY: writing the test's own fresh mapping.
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), host.0, 4096) };
    let out = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let copy = |src: u64| {
        let q = gpu.create_sdma_queue().unwrap();
        common::sdma_submit(
            &q,
            &[SdmaPacket::CopyLinear {
                src,
                dst: out.gpu_address(),
                bytes: 4096,
            }],
            LONG,
        )
        .unwrap();
        let mark = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        q.fill(&mark, 0, 1, 4, &[])
            .unwrap()
            .wait(Some(LONG))
            .map(|_| ())
    };
    // XNACK off: unregistered memory is a fault (a fresh device: the fault evicts its queues).
    {
        let off = common::emulated(Preset::Gfx90a, 1);
        let g = off.gpu(0).unwrap();
        let q = g.create_sdma_queue().unwrap();
        let o = g.alloc(4096, MemoryKind::GttCoherent).unwrap();
        common::sdma_submit(
            &q,
            &[SdmaPacket::CopyLinear {
                src: host.addr(),
                dst: o.gpu_address(),
                bytes: 4096,
            }],
            LONG,
        )
        .unwrap();
        let mark = g.alloc(4096, MemoryKind::GttCoherent).unwrap();
        assert!(matches!(
            q.fill(&mark, 0, 1, 4, &[]).unwrap().wait(Some(LONG)),
            Err(Error::DeviceFault { .. })
        ));
    }
    let mut a = Args { xnack_enabled: 1 };
    kfd.driver().kfd_ioctl(&mut a).unwrap();
    copy(host.addr()).expect("XNACK maps the page on the fault");
    assert!(
        out.to_vec().unwrap() == pattern,
        "the copy read the process memory"
    );
    let attrs = kfd.svm_attributes(host.addr(), 4096, &[&gpu]).unwrap();
    assert_eq!(attrs.access, vec![(gpu.id(), SvmAccess::Access)]);
    // A read-only page takes no GPU write, even with XNACK on.
    // (The range made on the fault covers the whole mapping, so the mprotect goes through the
    // MMU notifier as the preload's hook sends it.)
    let ro = host.addr() + 3 * 4096;
    let emu = kfd.emulator().unwrap();
    emu.host_protection_changing(ro, 4096, libc::PROT_READ);
    // SAFETY: a page of the test's own mapping.
    let r = unsafe { libc::mprotect(ro as *mut libc::c_void, 4096, libc::PROT_READ) };
    assert_eq!(r, 0);
    emu.host_protection_changed(ro, 4096);
    let fault = sdma_write(&gpu, ro).expect_err("a GPU write to a read-only page");
    assert!(
        fault.va == ro && (fault.read_only || fault.not_present),
        "{fault:?}"
    );
}

/// Writes `pattern` over one page at `va` with `gpu`'s copy engine and waits: `Ok` if the write
/// landed, else the fault the GPU reported.
fn sdma_write(gpu: &kfdrt::Gpu, va: u64) -> Result<(), kfdrt::MemoryException> {
    let q = gpu.create_sdma_queue().unwrap();
    common::sdma_submit(
        &q,
        &[SdmaPacket::ConstantFill {
            dst: va,
            data: 0x5A5A_5A5A,
            bytes: 4096,
        }],
        LONG,
    )
    .unwrap();
    let mark = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    match q.fill(&mark, 0, 1, 4, &[]).unwrap().wait(Some(LONG)) {
        Ok(_) => Ok(()),
        Err(Error::DeviceFault { fault, .. }) => Err(fault),
        Err(other) => panic!("neither a write nor a GPU fault: {other}"),
    }
}

/// `svm_range_validate_and_map` maps a page read-only for the GPU when the process may not
/// write it: a GPU write there is a GPU page fault reported as KFD reports it (a memory
/// exception with the address, read-only), never a crash of the emulator's process. Both when
/// the page was read-only before it was registered and when the process made it read-only
/// later (the MMU notifier's path, which the preload drives from `mprotect`), and a page the
/// process makes writable again takes GPU writes again.
#[test]
fn a_gpu_write_to_a_read_only_host_page_is_a_gpu_fault() {
    let _memory = host_memory();
    for later in [false, true] {
        let kfd = common::emulated(Preset::Gfx90a, 1);
        let emu = kfd.emulator().unwrap().clone();
        let gpu = kfd.gpu(0).unwrap();
        let host = HostPages::new(2 * 4096);
        let ro = host.addr() + 4096;
        let protect = |prot: i32| {
            emu.host_protection_changing(ro, 4096, prot);
            // SAFETY: a page of the test's own mapping.
            let r = unsafe { libc::mprotect(ro as *mut libc::c_void, 4096, prot) };
            assert_eq!(r, 0);
            emu.host_protection_changed(ro, 4096);
        };
        if !later {
            protect(libc::PROT_READ);
        }
        // SAFETY: the mapping outlives the GPU's access (no queue survives this iteration).
        unsafe { kfd.svm_set_attributes(host.addr(), 2 * 4096, &[SvmAttribute::Access(gpu.id())]) }
            .unwrap();
        if later {
            assert_eq!(sdma_write(&gpu, ro), Ok(()), "writable before the mprotect");
            protect(libc::PROT_READ);
        }
        assert_eq!(
            sdma_write(&gpu, host.addr()),
            Ok(()),
            "the writable page takes writes"
        );
        let fault = sdma_write(&gpu, ro).expect_err("a GPU write to a read-only page");
        assert_eq!(
            (fault.va, fault.read_only, fault.gpu_id),
            (ro, true, gpu.id())
        );
        assert_eq!(
            host.bytes()[4096],
            if later { 0x5A } else { 0 },
            "later: the first write landed"
        );
    }
}

/// Maps fresh anonymous memory at `addr`, where the test unmapped its own (the caller's
/// `HostPages` unmaps it again when dropped).
fn map_again(addr: u64, len: usize) {
    assert!(
        common::map_anonymous_at(addr, len).is_some(),
        "mapping again at {addr:#x}"
    );
}

/// The MMU notifier's unmap path (`svm_range_unmap_from_cpu`): unmapping part of a range removes
/// that part from the GPUs and the range table and keeps the rest; the attributes of the freed
/// span can no longer be read (EFAULT, no VMA); memory mapped again at the same address can be
/// registered again and allocated as a userptr buffer (no EADDRINUSE from the old range); an
/// unmapping nobody reported is noticed the next time the span is looked at.
#[test]
fn svm_ranges_follow_the_process_unmapping_its_memory() {
    let _memory = host_memory();
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    let len = 16 * 4096u64;
    let host = HostPages::new(len as usize);
    let base = host.addr();
    // SAFETY: the mapping outlives the GPU's access.
    unsafe { kfd.svm_set_attributes(base, len, &[SvmAttribute::Access(gpu.id())]) }.unwrap();
    assert!(emu.is_mapped(gpu.id(), base, len));
    // Unmap pages 4..8, as the preload's munmap hook does it.
    let hole = base + 4 * 4096;
    emu.host_unmapping(hole, 4 * 4096);
    // SAFETY: four pages of the test's own mapping (the drop unmaps the rest, and the hole again).
    let r = unsafe { libc::munmap(hole as *mut libc::c_void, 4 * 4096) };
    assert_eq!(r, 0);
    assert!(
        !emu.is_mapped(gpu.id(), hole, 4096),
        "the hole left the GPU"
    );
    assert!(emu.is_mapped(gpu.id(), base, 4 * 4096), "the head stays");
    assert!(
        emu.is_mapped(gpu.id(), hole + 4 * 4096, 8 * 4096),
        "the tail stays"
    );
    assert!(matches!(
        kfd.svm_attributes(hole, 4096, &[&gpu]).map_err(errno),
        Err(Errno::EFAULT)
    ));
    let tail = kfd
        .svm_attributes(base + 8 * 4096, 8 * 4096, &[&gpu])
        .unwrap();
    assert_eq!(tail.access, vec![(gpu.id(), SvmAccess::Access)]);
    // New memory at the same address: a userptr buffer there is not refused as SVM's.
    map_again(hole, 4 * 4096);
    // SAFETY: the pages live until the end of the test (the drop of `host` unmaps them), and
    // nothing else reaches them meanwhile.
    let pages = unsafe { std::slice::from_raw_parts_mut(hole as *mut u8, 4 * 4096) };
    let user = gpu
        .register_host_memory(pages)
        .expect("memory mapped again is free of the old range");
    drop(user);
    // An unmapping nobody reported: the head goes, and the next look at it notices.
    // SAFETY: the first four pages of the test's own mapping.
    let r = unsafe { libc::munmap(base as *mut libc::c_void, 4 * 4096) };
    assert_eq!(r, 0);
    assert!(matches!(
        kfd.svm_attributes(base, 4096, &[&gpu]).map_err(errno),
        Err(Errno::EFAULT)
    ));
    map_again(base, 4 * 4096);
    let head = kfd.svm_attributes(base, 4 * 4096, &[&gpu]).unwrap();
    assert_eq!(
        head.access,
        vec![(gpu.id(), SvmAccess::None)],
        "the old range is gone"
    );
}

/// `svm_range_get_attr` answers flag queries both ways: SET_FLAGS with the flags every range of
/// the span has, CLR_FLAGS with those no range has (`~flags_or`), as ROCr asks them together
/// (HIP's `hipMemRangeGetAttribute` for read-mostly memory); IN_PLACE and NO_ACCESS are not
/// queries.
#[test]
fn flag_queries_answer_what_every_range_has_and_what_none_has() {
    let _memory = host_memory();
    use kfd_sys::bindings::*;
    #[repr(C)]
    struct Query {
        args: kfd_ioctl_svm_args,
        attrs: [kfd_ioctl_svm_attribute; 2],
    }
    let Some(kfd) = common::under_test(
        "svm::flag_queries_answer_what_every_range_has_and_what_none_has",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let host = HostPages::new(2 * 4096);
    let (ro, rm) = (
        KFD_IOCTL_SVM_FLAG_GPU_RO,
        KFD_IOCTL_SVM_FLAG_GPU_READ_MOSTLY,
    );
    // SAFETY: no GPU accesses the pages (no queue runs here).
    unsafe {
        kfd.svm_set_attributes(host.addr(), 8192, &[SvmAttribute::Access(gpu.id())])
            .unwrap();
        kfd.svm_set_attributes(host.addr(), 4096, &[SvmAttribute::SetFlags(ro | rm)])
            .unwrap();
        kfd.svm_set_attributes(host.addr() + 4096, 4096, &[SvmAttribute::SetFlags(rm)])
            .unwrap();
    }
    let ask = |t0: u32, t1: u32| {
        let mut q = Query {
            args: kfd_ioctl_svm_args {
                start_addr: host.addr(),
                size: 8192,
                op: KFD_IOCTL_SVM_OP_GET_ATTR,
                nattr: 2,
                ..Default::default()
            },
            attrs: [
                kfd_ioctl_svm_attribute {
                    type_: t0,
                    value: 0,
                },
                kfd_ioctl_svm_attribute {
                    type_: t1,
                    value: 0,
                },
            ],
        };
        let req = kfd_sys::IoctlRequest::iowr(b'K', 0x20, std::mem::size_of::<Query>());
        // SAFETY: the request's size covers the struct and both attributes.
        unsafe {
            kfd.driver()
                .ioctl(kfd_sys::Node::Kfd, req, (&mut q as *mut Query).cast())
        }
        .map(|_| (q.attrs[0].value, q.attrs[1].value))
    };
    let (set, clr) = ask(KFD_IOCTL_SVM_ATTR_SET_FLAGS, KFD_IOCTL_SVM_ATTR_CLR_FLAGS).unwrap();
    assert_eq!(
        set & (ro | rm),
        rm,
        "read-mostly in both ranges, read-only in one"
    );
    assert_eq!(clr & (ro | rm), 0, "each flag is in some range");
    assert_ne!(
        clr & KFD_IOCTL_SVM_FLAG_GPU_EXEC,
        0,
        "no range is executable"
    );
    for not_a_query in [
        KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE,
        KFD_IOCTL_SVM_ATTR_NO_ACCESS,
    ] {
        assert_eq!(
            ask(KFD_IOCTL_SVM_ATTR_SET_FLAGS, not_a_query),
            Err(Errno::EINVAL)
        );
    }
}
