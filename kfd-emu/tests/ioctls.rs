//! kfd-emu's answers to KFD requests, checked through the `Driver` seam alone (no kfdrt): what
//! amdkfd answers each one with, its errors included, quoted from the kernel functions the
//! emulator follows. kfdrt's own suite exercises the same requests only as kfdrt makes them.

use kfd_emu::{EmuConfig, Emulator, Preset};
use kfd_sys::bindings::*;
use kfd_sys::{Driver, DriverExt, Errno, KfdVersion};
use std::sync::Arc;

fn emulator(config: EmuConfig) -> Arc<Emulator> {
    Emulator::new(config).expect("an emulator")
}

/// Opens GPU `index`'s render node and binds the process's VM for it (`ACQUIRE_VM`).
fn acquire(emu: &Emulator, index: usize) -> u32 {
    let gpu_id = emu.gpu_ids()[index];
    let fd = emu
        .open_render_node(kfd_emu::FIRST_RENDER_MINOR + index as u32)
        .expect("render node");
    let mut a = kfd_ioctl_acquire_vm_args {
        drm_fd: fd as u32,
        gpu_id,
    };
    emu.kfd_ioctl(&mut a).expect("ACQUIRE_VM");
    gpu_id
}

fn alloc(emu: &Emulator, gpu_id: u32, va: u64, size: u64, flags: u32) -> Result<u64, Errno> {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: va,
        size,
        gpu_id,
        flags,
        ..Default::default()
    };
    // SAFETY: the emulator's memory is its own; no user pointer is passed.
    unsafe { emu.kfd_ioctl_unchecked(&mut a) }.map(|_| a.handle)
}

/// MAP (or, with `unmap`, UNMAP) `handle` for `ids`: the result and `n_success`.
fn map(emu: &Emulator, handle: u64, ids: &mut [u32], unmap: bool) -> (Result<i32, Errno>, u32) {
    // The two requests take the same fields in structs of their own.
    macro_rules! call {
        ($args:ident) => {{
            let mut a = $args {
                handle,
                device_ids_array_ptr: ids.as_mut_ptr() as u64,
                n_devices: ids.len() as u32,
                n_success: 0,
            };
            // SAFETY: `ids` lives across the call.
            let r = unsafe { emu.kfd_ioctl_unchecked(&mut a) };
            (r, a.n_success)
        }};
    }
    if unmap {
        call!(kfd_ioctl_unmap_memory_from_gpu_args)
    } else {
        call!(kfd_ioctl_map_memory_to_gpu_args)
    }
}

fn free(emu: &Emulator, handle: u64) -> Result<i32, Errno> {
    emu.kfd_ioctl(&mut kfd_ioctl_free_memory_of_gpu_args { handle })
}

const VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
const VA: u64 = 0x7000_0000_0000;

#[test]
fn the_version_is_the_configured_one_and_newer_requests_are_unknown() {
    for minor in [11, 18] {
        let mut config = EmuConfig::new(Preset::Gfx90a, 1);
        config.kfd_version = KfdVersion::new(1, minor);
        let emu = emulator(config);
        let mut v = kfd_ioctl_get_version_args::default();
        emu.kfd_ioctl(&mut v).unwrap();
        assert_eq!((v.major_version, v.minor_version), (1, minor));
        // EXPORT_DMABUF came with 1.12: an older kernel's ioctl table has no such number
        // (kfd_ioctl answers a number past AMDKFD_CORE_IOCTL_COUNT with ENOTTY); a newer one
        // looks the handle up and finds none (EINVAL).
        let mut e = kfd_ioctl_export_dmabuf_args {
            handle: 0xDEAD,
            ..Default::default()
        };
        // SAFETY: no user pointer in the arguments.
        let r = unsafe { emu.kfd_ioctl_unchecked(&mut e) };
        let want = if minor < 12 {
            Errno::ENOTTY
        } else {
            Errno::EINVAL
        };
        assert_eq!(r, Err(want), "KFD 1.{minor}");
    }
}

#[test]
fn memory_needs_a_bound_vm_and_follows_the_drivers_rules() {
    let emu = emulator(EmuConfig::new(Preset::Gfx90a, 2));
    let ids = emu.gpu_ids();
    // No VM yet: kfd_bind_process_to_device finds no drm_priv (ENODEV).
    assert_eq!(alloc(&emu, ids[0], VA, 4096, VRAM), Err(Errno::ENODEV));
    let gpu = acquire(&emu, 0);
    // A second render-node file of the same GPU cannot bind the VM again
    // (kfd_process_device_init_vm: "if (pdd->drm_file) return pdd->drm_file == drm_file ? 0 :
    // -EBUSY").
    let other = emu
        .open_render_node(kfd_emu::FIRST_RENDER_MINOR)
        .expect("render node");
    let mut again = kfd_ioctl_acquire_vm_args {
        drm_fd: other as u32,
        gpu_id: gpu,
    };
    assert_eq!(emu.kfd_ioctl(&mut again), Err(Errno::EBUSY));
    // Sizes and addresses.
    assert_eq!(alloc(&emu, gpu, VA, 0, VRAM), Err(Errno::EINVAL));
    assert_eq!(alloc(&emu, gpu, VA + 12, 4096, VRAM), Err(Errno::EINVAL));
    assert_eq!(alloc(&emu, 0xBAD, VA, 4096, VRAM), Err(Errno::EINVAL));
    // No domain flag at all.
    assert_eq!(
        alloc(&emu, gpu, VA, 4096, KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE),
        Err(Errno::EINVAL)
    );
    // The doorbell slice and the MMIO page have exact sizes.
    let doorbell = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    assert_eq!(alloc(&emu, gpu, VA, 4096, doorbell), Err(Errno::EINVAL));
    let mmio = KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    assert_eq!(alloc(&emu, gpu, VA, 8192, mmio), Err(Errno::EINVAL));
    // More VRAM than the GPU has.
    assert_eq!(alloc(&emu, gpu, VA, 1 << 50, VRAM), Err(Errno::ENOMEM));

    let h = alloc(&emu, gpu, VA, 8192, VRAM).unwrap();
    // The range is taken (amdgpu_vm_bo_map: "conflict with" -> EINVAL).
    assert_eq!(alloc(&emu, gpu, VA + 4096, 4096, VRAM), Err(Errno::EINVAL));
    // Mapping goes device by device and stops at the first that fails, keeping the ones before
    // and saying how far it got (kfd_ioctl_map_memory_to_gpu sets n_success = i + 1 after each;
    // the arguments are copied back whatever the result).
    let mut bad = [gpu, 0xBAD];
    assert_eq!(map(&emu, h, &mut bad, false), (Err(Errno::EINVAL), 1));
    assert!(emu.is_mapped(gpu, VA, 8192));
    // A GPU whose VM is not bound cannot map (kfd_bind_process_to_device: ENODEV), and a
    // handle its GPU does not know is not memory (translate_handle: ENOMEM).
    let mut unbound = [ids[1]];
    assert_eq!(map(&emu, h, &mut unbound, false), (Err(Errno::ENODEV), 0));
    let mut one = [gpu];
    assert_eq!(
        map(&emu, h + 1000, &mut one, false),
        (Err(Errno::ENOMEM), 0)
    );
    // Mapping again is no error; unmapping from a GPU it is not mapped to is
    // (kfd_mem_is_attached).
    assert_eq!(map(&emu, h, &mut one, false), (Ok(0), 1));
    let mut not_there = [ids[1]];
    assert_eq!(map(&emu, h, &mut not_there, true), (Err(Errno::EINVAL), 0));
    // A mapped buffer cannot be freed (kfd_ioctl_free_memory_of_gpu: "mapped ... -EBUSY").
    assert_eq!(free(&emu, h), Err(Errno::EBUSY));
    assert_eq!(map(&emu, h, &mut one, true), (Ok(0), 1));
    assert!(!emu.is_mapped(gpu, VA, 8192));
    free(&emu, h).unwrap();
    // A freed handle is gone.
    assert_eq!(free(&emu, h), Err(Errno::EINVAL));
    assert_eq!(emu.stats().live_allocations, 0);
}

#[test]
fn the_platform_shapes_what_the_driver_gives() {
    // A virtual function, and a kernel of 64 KiB pages: no MMIO-remap page
    // (kfd_ioctl_alloc_memory_of_gpu: "if (!offset || (PAGE_SIZE > 4096)) -ENOMEM").
    let mmio = KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    for (vf, page) in [(false, 4096u64), (true, 4096), (false, 64 << 10)] {
        let mut config = EmuConfig::new(Preset::Gfx90a, 1);
        config.platform.sriov_vf = vf;
        config.platform.page_size = page;
        let emu = emulator(config);
        assert_eq!(emu.page_size(), page);
        let gpu = acquire(&emu, 0);
        let r = alloc(&emu, gpu, VA, page, mmio);
        if vf || page > 4096 {
            assert_eq!(r, Err(Errno::ENOMEM), "vf {vf}, page {page:#x}");
        } else {
            free(&emu, r.unwrap()).unwrap();
        }
        // The doorbell slice is roundup(8 KiB, PAGE_SIZE) (kfd_doorbell_process_slice).
        let doorbell = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
        let slice = 8192u64.next_multiple_of(page);
        let h = alloc(&emu, gpu, VA, slice, doorbell).unwrap();
        free(&emu, h).unwrap();
        // Buffers round up to the page: a 4 KiB buffer takes a whole one.
        let h = alloc(&emu, gpu, VA, 4096, VRAM).unwrap();
        let taken = alloc(&emu, gpu, VA + 4096, 4096, VRAM);
        if page > 4096 {
            assert_eq!(taken, Err(Errno::EINVAL), "page {page:#x}");
        } else {
            free(&emu, taken.unwrap()).unwrap();
        }
        free(&emu, h).unwrap();
        // SVM requests come in the kernel's pages (kfd_ioctl_svm: "start_addr & ~PAGE_MASK ...
        // -EINVAL"): a 4 KiB-aligned range is refused by a kernel of 64 KiB pages.
        let host = HostRange::new(4 << 20);
        let aligned = host.0.next_multiple_of(64 << 10);
        assert_eq!(svm_get_attr(&emu, aligned, 64 << 10), Ok(0));
        let small = svm_get_attr(&emu, aligned + 4096, 4096);
        if page > 4096 {
            assert_eq!(small, Err(Errno::EINVAL), "page {page:#x}");
        } else {
            assert_eq!(small, Ok(0));
        }
    }
}

/// Anonymous host memory, unmapped on drop.
struct HostRange(u64, usize);

impl HostRange {
    fn new(len: usize) -> HostRange {
        // SAFETY: a fresh private mapping wherever the kernel chooses.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        HostRange(p as u64, len)
    }
}

impl Drop for HostRange {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping `new` made.
        unsafe { libc::munmap(self.0 as *mut libc::c_void, self.1) };
    }
}

/// `AMDKFD_IOC_SVM` GET_ATTR of `addr..addr + len` with no attributes.
fn svm_get_attr(emu: &Emulator, addr: u64, len: u64) -> Result<i32, Errno> {
    let mut a = kfd_ioctl_svm_args {
        start_addr: addr,
        size: len,
        op: KFD_IOCTL_SVM_OP_GET_ATTR,
        nattr: 0,
        ..Default::default()
    };
    let request = kfd_sys::IoctlRequest::iowr(b'K', 0x20, std::mem::size_of_val(&a));
    // SAFETY: the argument is the header alone, as the request's size says; no attributes.
    unsafe {
        emu.ioctl(
            kfd_sys::Node::Kfd,
            request,
            (&mut a as *mut kfd_ioctl_svm_args).cast(),
        )
    }
}

/// Runs the calling test again in a child process with `var` set, and asserts it passes there
/// (for tests that change process-wide state such as resource limits).
fn in_child_process(test: &str, var: &str) {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(var, "1")
        .output()
        .expect("the child test runs");
    assert!(
        out.status.success(),
        "the child failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_process_holds_more_buffers_than_it_has_file_descriptors() {
    // Buffers are GEM objects in the kernel, not descriptors of the process: kfdtest's
    // Fragmentation holds some 65 000 at once. Here with a descriptor limit of 256.
    const CHILD: &str = "KFD_EMU_TEST_LOW_FD_LIMIT";
    if std::env::var_os(CHILD).is_none() {
        return in_child_process(
            "a_process_holds_more_buffers_than_it_has_file_descriptors",
            CHILD,
        );
    }
    let limit = libc::rlimit {
        rlim_cur: 256,
        rlim_max: libc::RLIM_INFINITY,
    };
    let mut old = limit;
    // SAFETY: reads and lowers this (child) process's own limit; the structs are locals.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut old), 0);
        let lower = libc::rlimit {
            rlim_max: old.rlim_max,
            ..limit
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lower), 0);
    }
    let emu = emulator(EmuConfig::new(Preset::Gfx90a, 1));
    let gpu = acquire(&emu, 0);
    let visible = VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
    const N: u64 = 3000;
    let mut held = Vec::new();
    for round in 0..2u64 {
        for i in 0..N {
            let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
                va_addr: VA + i * 8192,
                size: 4096,
                gpu_id: gpu,
                flags: visible,
                ..Default::default()
            };
            // SAFETY: no user pointer is passed.
            unsafe { emu.kfd_ioctl_unchecked(&mut a) }
                .unwrap_or_else(|e| panic!("buffer {i} of round {round}: {e}"));
            // Every other buffer mapped for the CPU, as a runtime maps host-visible VRAM.
            let cpu = if i % 2 == 0 {
                // SAFETY: a new shared mapping wherever the kernel chooses.
                let p = unsafe {
                    emu.mmap(
                        kfd_sys::MapSource::File(kfd_sys::Node::Render(
                            kfd_emu::FIRST_RENDER_MINOR,
                        )),
                        std::ptr::null_mut(),
                        4096,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_SHARED,
                        a.mmap_offset,
                    )
                }
                .unwrap_or_else(|e| panic!("CPU mapping of buffer {i}: {e}"));
                let p = p as *mut u64;
                // SAFETY: 4096 bytes are mapped read-write at `p`; a new buffer reads zero.
                unsafe {
                    assert_eq!(p.read(), 0, "buffer {i} of round {round} is not zeroed");
                    p.write(round << 32 | i);
                }
                Some(p)
            } else {
                None
            };
            held.push((a.handle, cpu));
        }
        // No two buffers share memory.
        for (i, (_, cpu)) in held.iter().enumerate() {
            if let Some(p) = cpu {
                // SAFETY: mapped above and not yet unmapped.
                assert_eq!(unsafe { p.read() }, round << 32 | i as u64);
            }
        }
        let mut one = [gpu];
        assert_eq!(map(&emu, held[0].0, &mut one, false), (Ok(0), 1));
        assert_eq!(map(&emu, held[0].0, &mut one, true), (Ok(0), 1));
        // Freed with their CPU mappings gone (the next round reuses the memory), or, for the
        // last ones, still mapped: their bytes stay until the mapping goes.
        let keep = held.len() - 8;
        for (i, (h, cpu)) in held.drain(..).enumerate() {
            if let Some(p) = cpu.filter(|_| i < keep) {
                // SAFETY: unmapping what was mapped above.
                unsafe { emu.munmap(p.cast(), 4096) }.unwrap();
            }
            free(&emu, h).unwrap();
            if let Some(p) = cpu.filter(|_| i >= keep) {
                // SAFETY: still mapped: a freed buffer's memory lives while a mapping does.
                assert_eq!(unsafe { p.read() }, round << 32 | i as u64);
                // SAFETY: as above.
                unsafe { emu.munmap(p.cast(), 4096) }.unwrap();
            }
        }
    }
    assert_eq!(emu.stats().live_allocations, 0);
}

#[test]
fn cpu_mappings_of_neighbouring_buffers_stay_separate_mappings() {
    // The kernel never merges two GEM objects' mappings (VM_PFNMAP | VM_IO), so a process's
    // mapping count (vm.max_map_count) grows by one per mapped buffer, here as there.
    let emu = emulator(EmuConfig::new(Preset::Gfx90a, 1));
    let gpu = acquire(&emu, 0);
    let va = VA + (1 << 30);
    let mut offsets = Vec::new();
    for i in 0..2 {
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va + i * 4096,
            size: 4096,
            gpu_id: gpu,
            flags: VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC,
            ..Default::default()
        };
        // SAFETY: no user pointer is passed.
        unsafe { emu.kfd_ioctl_unchecked(&mut a) }.unwrap();
        offsets.push((a.handle, a.mmap_offset));
    }
    // SAFETY: a fresh reservation of two pages for the mappings below.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            8192,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(at, libc::MAP_FAILED);
    for (i, &(_, offset)) in offsets.iter().enumerate() {
        // SAFETY: replaces a page of the reservation above.
        unsafe {
            emu.mmap(
                kfd_sys::MapSource::File(kfd_sys::Node::Render(kfd_emu::FIRST_RENDER_MINOR)),
                at.cast::<u8>().add(i * 4096).cast(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                offset,
            )
        }
        .unwrap();
    }
    let start = format!("{:x}-", at as usize);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let first = maps
        .lines()
        .find(|l| l.starts_with(&start))
        .expect("the first mapping");
    let end = first.split(['-', ' ']).nth(1).unwrap();
    assert_eq!(
        usize::from_str_radix(end, 16).unwrap(),
        at as usize + 4096,
        "two buffers' mappings merged: {first}"
    );
    // SAFETY: unmapping what was mapped above.
    unsafe { emu.munmap(at, 8192) }.unwrap();
    for (h, _) in offsets {
        free(&emu, h).unwrap();
    }
}

#[test]
fn buffers_work_in_an_address_space_too_small_for_a_memory_pool() {
    // `ulimit -v` leaves no room for a pool's 16 GiB mapping: buffers get files of their own.
    const CHILD: &str = "KFD_EMU_TEST_SMALL_ADDRESS_SPACE";
    if std::env::var_os(CHILD).is_none() {
        return in_child_process(
            "buffers_work_in_an_address_space_too_small_for_a_memory_pool",
            CHILD,
        );
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmSize");
    let limit = libc::rlimit {
        rlim_cur: (kib << 10) + (4 << 30),
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: lowers this (child) process's own limit; the struct is a local.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    let emu = emulator(EmuConfig::new(Preset::Gfx90a, 1));
    let gpu = acquire(&emu, 0);
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: VA,
        size: 1 << 20,
        gpu_id: gpu,
        flags: VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC,
        ..Default::default()
    };
    // SAFETY: no user pointer is passed.
    unsafe { emu.kfd_ioctl_unchecked(&mut a) }.expect("a buffer without a pool");
    // SAFETY: a new shared mapping wherever the kernel chooses.
    let p = unsafe {
        emu.mmap(
            kfd_sys::MapSource::File(kfd_sys::Node::Render(kfd_emu::FIRST_RENDER_MINOR)),
            std::ptr::null_mut(),
            1 << 20,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            a.mmap_offset,
        )
    }
    .expect("a CPU mapping");
    // SAFETY: 1 MiB is mapped read-write at `p`.
    unsafe {
        let p = p.cast::<u64>();
        assert_eq!(p.read(), 0);
        p.write(42);
        assert_eq!(p.read(), 42);
        emu.munmap(p.cast(), 1 << 20).unwrap();
    }
    free(&emu, a.handle).unwrap();
}

fn create_event(emu: &Emulator, event_type: u32, page: u64) -> Result<(u32, u32), Errno> {
    let mut a = kfd_ioctl_create_event_args {
        event_page_offset: page,
        event_type,
        auto_reset: 1,
        ..Default::default()
    };
    emu.kfd_ioctl(&mut a)
        .map(|_| (a.event_id, a.event_slot_index))
}

/// `kfd_event_init_process` reserves event id 0 (a CP interrupt without a context id is
/// ignored by that id), so signal events get ids 1.. equal to their events-page slot, 4095 of
/// them (`KFD_SIGNAL_EVENT_LIMIT` slots); other events count up from
/// `KFD_FIRST_NONSIGNAL_EVENT_ID`, `(INT_MAX >> 1) + 1`.
#[test]
fn event_ids_start_past_the_reserved_zero_and_signal_events_run_out_at_4095() {
    let emu = emulator(EmuConfig::new(Preset::Gfx90a, 1));
    let gpu_id = acquire(&emu, 0);
    let page = alloc(
        &emu,
        gpu_id,
        VA,
        4096 * 8,
        KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
    )
    .expect("the events page");
    assert_eq!(
        create_event(&emu, KFD_IOC_EVENT_SIGNAL, page),
        Ok((1, 1)),
        "the first signal event is id 1, in slot 1"
    );
    let memory = create_event(&emu, KFD_IOC_EVENT_MEMORY, 0).expect("a memory event");
    assert_eq!(memory.0, (i32::MAX as u32 >> 1) + 1);
    let mut ids = vec![1];
    loop {
        match create_event(&emu, KFD_IOC_EVENT_SIGNAL, 0) {
            Ok((id, slot)) => {
                assert_eq!(id, slot);
                ids.push(id);
            }
            Err(e) => {
                assert_eq!(e, Errno::ENOSPC);
                break;
            }
        }
    }
    assert_eq!(ids.len(), 4095);
    assert!(!ids.contains(&0), "id 0 is never handed out");
    // A freed id is handed out again.
    emu.kfd_ioctl(&mut kfd_ioctl_destroy_event_args {
        event_id: 7,
        pad: 0,
    })
    .expect("DESTROY_EVENT");
    assert_eq!(create_event(&emu, KFD_IOC_EVENT_SIGNAL, 0), Ok((7, 7)));
}
