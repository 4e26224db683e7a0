//! dma-buf export and import (KFD 1.12's EXPORT_DMABUF, GET_DMABUF_INFO, IMPORT_DMABUF): a
//! buffer exported on one GPU and imported on another is the same memory, in both directions;
//! what cannot be exported is refused with a reason; descriptors that are not dma-bufs are
//! refused as the driver refuses them; an older KFD gets a typed error naming the version.

use crate::common;

use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::{AllocOptions, Errno, Error, Feature, KfdVersion, MemoryKind};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));
const LEN: u64 = 1 << 20;

#[test]
fn an_exported_buffer_is_the_same_memory_on_the_importing_gpu() {
    let Some(kfd) = common::under_test(
        "dmabuf::an_exported_buffer_is_the_same_memory_on_the_importing_gpu",
        Preset::Gfx90a,
        2,
        &[],
    ) else {
        return;
    };
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    for kind in [MemoryKind::GttCoherent, MemoryKind::DeviceLocal] {
        let original = g0
            .alloc_with(LEN, AllocOptions::new(kind).dedicated())
            .unwrap();
        let pattern: Vec<u8> = (0..LEN).map(|i| (i * 7 % 253) as u8).collect();
        let staging0 = g0.alloc(LEN, MemoryKind::GttCoherent).unwrap();
        staging0.write(0, &pattern).unwrap();
        let e0 = g0.copy_engine().unwrap();
        e0.copy(&original, 0, &staging0, 0, LEN, &[])
            .unwrap()
            .wait(T)
            .unwrap();

        let fd = original.export_dmabuf().unwrap();
        let imported = g1.import_dmabuf(fd.as_fd()).unwrap();
        assert_eq!(imported.size(), LEN);
        assert_eq!(imported.kind(), kind);
        assert!(
            imported.as_ptr().is_none(),
            "no CPU mapping of an imported buffer"
        );
        assert_ne!(imported.gpu_address(), original.gpu_address());
        // GPU 1 reads what GPU 0 wrote...
        let e1 = g1.copy_engine().unwrap();
        let staging1 = g1.alloc(LEN, MemoryKind::GttCoherent).unwrap();
        e1.copy(&staging1, 0, &imported, 0, LEN, &[])
            .unwrap()
            .wait(T)
            .unwrap();
        assert!(
            staging1.to_vec().unwrap() == pattern,
            "{kind:?}: GPU 1 read other bytes"
        );
        // ...and what it writes is in the exporter's buffer.
        e1.fill(&imported, 4096, 0x5A5A_5A5A, 8192, &[])
            .unwrap()
            .wait(T)
            .unwrap();
        e0.copy(&staging0, 0, &original, 0, LEN, &[])
            .unwrap()
            .wait(T)
            .unwrap();
        let back = staging0.to_vec().unwrap();
        assert!(back[4096..12288].iter().all(|&b| b == 0x5A));
        assert_eq!(&back[..4096], &pattern[..4096]);
        assert_eq!(&back[12288..], &pattern[12288..]);
        // The descriptor maps for the CPU too, as a dma-buf does.
        if kind == MemoryKind::GttCoherent {
            // SAFETY: a fresh shared read-only mapping of the descriptor, unmapped below.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    LEN as usize,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            // SAFETY: `p` maps LEN readable bytes.
            let seen = unsafe { std::slice::from_raw_parts(p as *const u8, LEN as usize) };
            assert_eq!(seen[4096], 0x5A);
            assert_eq!(seen[0], pattern[0]);
            // The exporter's CPU view, the descriptor and the GPUs stay one memory after the
            // export (kfd-emu moves a pooled buffer to a file of its own when it is exported).
            original.write(0, &[0xC3; 16]).unwrap();
            assert_eq!(seen[15], 0xC3, "the descriptor missed a CPU write");
            e0.copy(&staging0, 0, &original, 0, 4096, &[])
                .unwrap()
                .wait(T)
                .unwrap();
            assert_eq!(
                staging0.to_vec().unwrap()[15],
                0xC3,
                "GPU 0 missed a CPU write"
            );
            // SAFETY: unmapping what was mapped above.
            unsafe { libc::munmap(p, LEN as usize) };
        }
        // The exporter can go first: the importer keeps the memory.
        drop(original);
        e1.copy(&staging1, 0, &imported, 0, LEN, &[])
            .unwrap()
            .wait(T)
            .unwrap();
        assert_eq!(staging1.to_vec().unwrap()[4096], 0x5A);
    }
}

#[test]
fn what_cannot_be_shared_is_refused() {
    let Some(kfd) = common::under_test(
        "dmabuf::what_cannot_be_shared_is_refused",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let small = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    assert!(small.is_suballocated());
    assert!(matches!(
        small.export_dmabuf(),
        Err(Error::NotExportable { .. })
    ));
    let pageable = gpu.alloc(LEN, MemoryKind::Pageable).unwrap();
    assert!(matches!(
        pageable.export_dmabuf(),
        Err(Error::NotExportable { .. })
    ));
    // A descriptor that is not a dma-buf (a pipe), and one that is not open.
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid out-array of two descriptors.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: the read end is open until closed below.
    let pipe = unsafe { std::os::fd::BorrowedFd::borrow_raw(fds[0]) };
    let e = gpu.import_dmabuf(pipe).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Driver {
                errno: Errno::EINVAL,
                ..
            }
        ),
        "{e}"
    );
    // SAFETY: closing the pipe made above.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    // A number nothing has open: above any descriptor limit (the number just closed could be
    // reused at once by another test's thread).
    // SAFETY: borrowing a number that names no open file; only its number is used.
    let closed = unsafe { std::os::fd::BorrowedFd::borrow_raw(0x3FFF_FFF0) };
    let e = gpu.import_dmabuf(closed).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Driver {
                errno: Errno::EBADF,
                ..
            }
        ),
        "{e}"
    );
}

/// Emulated: an emulated KFD of version 1.11.
#[test]
fn export_needs_kfd_1_12() {
    let mut config = EmuConfig::new(Preset::Gfx90a, 1);
    config.kfd_version = KfdVersion::new(1, 11);
    let kfd = common::emulated_with(config);
    let gpu = kfd.gpu(0).unwrap();
    let b = gpu
        .alloc_with(LEN, AllocOptions::new(MemoryKind::GttCoherent).dedicated())
        .unwrap();
    match b.export_dmabuf() {
        Err(Error::NeedsKfd { feature, have }) => {
            assert_eq!(feature, Feature::DmabufExport);
            assert_eq!(have, KfdVersion::new(1, 11));
        }
        other => panic!("export on KFD 1.11: {other:?}"),
    }
}

/// A GPU's render node, as a graphics client reaches it: DRM requests with their own argument
/// structs.
struct RenderNode<'a> {
    kfd: &'a kfdrt::Kfd,
    minor: u32,
}

impl RenderNode<'_> {
    fn of<'a>(kfd: &'a kfdrt::Kfd, gpu: &kfdrt::Gpu) -> RenderNode<'a> {
        RenderNode {
            kfd,
            minor: gpu.info().drm_render_minor,
        }
    }

    /// `req` with `arg`, which must be the request's own argument struct.
    fn ioctl<T>(&self, req: kfd_sys::IoctlRequest, arg: &mut T) -> Result<i32, Errno> {
        // SAFETY: every caller passes the request's own argument struct.
        unsafe {
            self.kfd.driver().ioctl(
                kfd_sys::Node::Render(self.minor),
                req,
                (arg as *mut T).cast(),
            )
        }
    }

    /// A new GEM object of `bytes` in `domains`: its handle.
    fn gem_create(&self, bytes: u64, domains: u64) -> u32 {
        use kfdrt::emu::drm_gem::*;
        let mut create = DrmAmdgpuGemCreate {
            bo_size: bytes,
            alignment: 4096,
            domains,
            domain_flags: 0,
        };
        self.ioctl(DRM_IOCTL_AMDGPU_GEM_CREATE, &mut create)
            .unwrap();
        create.bo_size as u32
    }

    /// The GEM object `handle` exported by PRIME, as a dma-buf.
    fn prime(&self, handle: u32) -> std::os::fd::OwnedFd {
        use kfdrt::emu::drm_gem::*;
        let mut prime = DrmPrimeHandle {
            handle,
            flags: libc::O_CLOEXEC as u32 | libc::O_RDWR as u32,
            fd: -1,
        };
        self.ioctl(DRM_IOCTL_PRIME_HANDLE_TO_FD, &mut prime)
            .unwrap();
        // SAFETY: the driver created the descriptor for us.
        unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(prime.fd) }
    }
}

/// A graphics buffer (a GEM object of the render node, exported by PRIME) registered with KFD,
/// as `hsaKmtRegisterGraphicsHandleToNodes` does it: compute writes land in the graphics
/// buffer, which the dma-buf's CPU mapping shows.
#[test]
fn a_graphics_buffer_registers_for_compute() {
    use kfd_sys::Node;
    use kfdrt::emu::drm_gem::*;
    let Some(kfd) = common::under_test(
        "dmabuf::a_graphics_buffer_registers_for_compute",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let minor = gpu.info().drm_render_minor;
    let drm = |req, arg: *mut std::ffi::c_void| {
        // SAFETY: each call below passes the request's own argument struct.
        unsafe { kfd.driver().ioctl(Node::Render(minor), req, arg) }
    };
    let mut ctx = DrmAmdgpuCtx {
        op: AMDGPU_CTX_OP_ALLOC_CTX,
        ..Default::default()
    };
    drm(DRM_IOCTL_AMDGPU_CTX, (&mut ctx as *mut DrmAmdgpuCtx).cast()).unwrap();
    let ctx_id = ctx.op;
    let node = RenderNode::of(&kfd, &gpu);
    let handle = node.gem_create(LEN, AMDGPU_GEM_DOMAIN_GTT);
    let fd = node.prime(handle);
    let buf = gpu.import_dmabuf(fd.as_fd()).unwrap();
    assert_eq!(buf.kind(), MemoryKind::GttCoherent);
    let engine = gpu.copy_engine().unwrap();
    engine
        .fill(&buf, 0, 0x1234_5678, LEN, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    // SAFETY: a fresh shared read-only mapping of the descriptor, unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            LEN as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    // SAFETY: `p` maps LEN readable bytes.
    let seen = unsafe { std::slice::from_raw_parts(p as *const u32, LEN as usize / 4) };
    assert!(seen.iter().all(|&w| w == 0x1234_5678));
    // SAFETY: unmapping what was mapped above.
    unsafe { libc::munmap(p, LEN as usize) };
    // Unknown handles and contexts are refused.
    let mut bad = DrmPrimeHandle {
        handle: 9999,
        flags: 0,
        fd: -1,
    };
    assert_eq!(
        drm(
            DRM_IOCTL_PRIME_HANDLE_TO_FD,
            (&mut bad as *mut DrmPrimeHandle).cast()
        ),
        Err(Errno::ENOENT)
    );
    let mut close = DrmGemClose { handle, pad: 0 };
    drm(DRM_IOCTL_GEM_CLOSE, (&mut close as *mut DrmGemClose).cast()).unwrap();
    let mut free = DrmAmdgpuCtx {
        op: AMDGPU_CTX_OP_FREE_CTX,
        ctx_id,
        ..Default::default()
    };
    drm(
        DRM_IOCTL_AMDGPU_CTX,
        (&mut free as *mut DrmAmdgpuCtx).cast(),
    )
    .unwrap();
    assert_eq!(
        drm(
            DRM_IOCTL_AMDGPU_CTX,
            (&mut free as *mut DrmAmdgpuCtx).cast()
        ),
        Err(Errno::EINVAL)
    );
}

/// What `hsaKmtRegisterGraphicsHandleToNodes` needs of a graphics buffer: the render node maps
/// it for the CPU at the offset `GEM_MMAP` gives, the user-mode driver's metadata set with
/// `GEM_METADATA` reads back and travels with the dma-buf (`GET_DMABUF_INFO` copies it out,
/// and refuses a buffer too small for it), and what the CPU wrote there is what compute sees.
#[test]
fn a_graphics_buffer_maps_for_the_cpu_and_carries_its_metadata() {
    use kfd_sys::bindings::kfd_ioctl_get_dmabuf_info_args;
    use kfd_sys::{DriverExt, Node};
    use kfdrt::emu::drm_gem::*;
    let Some(kfd) = common::under_test(
        "dmabuf::a_graphics_buffer_maps_for_the_cpu_and_carries_its_metadata",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let minor = gpu.info().drm_render_minor;
    let drm = |req, arg: *mut std::ffi::c_void| {
        // SAFETY: each call below passes the request's own argument struct.
        unsafe { kfd.driver().ioctl(Node::Render(minor), req, arg) }
    };
    let node = RenderNode::of(&kfd, &gpu);
    let handle = node.gem_create(4096, AMDGPU_GEM_DOMAIN_VRAM);
    let mut mm = DrmAmdgpuGemMmap {
        handle_or_offset: u64::from(handle),
    };
    drm(
        DRM_IOCTL_AMDGPU_GEM_MMAP,
        (&mut mm as *mut DrmAmdgpuGemMmap).cast(),
    )
    .unwrap();
    // Unmapped below.
    let p = common::map_render_node(&kfd, minor, mm.handle_or_offset, 4096);
    // SAFETY: `p` maps 4096 writable bytes.
    unsafe { std::ptr::write_bytes(p as *mut u8, 0xAA, 4096) };
    let text = b"graphics metadata\0";
    let mut meta = DrmAmdgpuGemMetadata {
        handle,
        op: 1,
        data_size_bytes: text.len() as u32,
        ..Default::default()
    };
    for (i, c) in text.chunks(4).enumerate() {
        let mut w = [0u8; 4];
        w[..c.len()].copy_from_slice(c);
        meta.data[i] = u32::from_le_bytes(w);
    }
    drm(
        DRM_IOCTL_AMDGPU_GEM_METADATA,
        (&mut meta as *mut DrmAmdgpuGemMetadata).cast(),
    )
    .unwrap();
    let mut back = DrmAmdgpuGemMetadata {
        handle,
        op: 2,
        ..Default::default()
    };
    drm(
        DRM_IOCTL_AMDGPU_GEM_METADATA,
        (&mut back as *mut DrmAmdgpuGemMetadata).cast(),
    )
    .unwrap();
    assert_eq!(
        (back.data_size_bytes, back.data[..5].to_vec()),
        (meta.data_size_bytes, meta.data[..5].to_vec())
    );
    let fd = node.prime(handle);
    let mut out = [0u8; 64];
    let mut info = kfd_ioctl_get_dmabuf_info_args {
        metadata_ptr: out.as_mut_ptr() as u64,
        metadata_size: 4,
        dmabuf_fd: fd.as_raw_fd() as u32,
        ..Default::default()
    };
    // SAFETY: `out` is writable for `metadata_size` bytes.
    let small = unsafe { kfd.driver().kfd_ioctl_unchecked(&mut info) };
    assert_eq!(
        small,
        Err(Errno::EINVAL),
        "4 bytes cannot hold the metadata"
    );
    info.metadata_size = out.len() as u32;
    // SAFETY: as above, 64 bytes.
    unsafe { kfd.driver().kfd_ioctl_unchecked(&mut info) }.unwrap();
    assert_eq!(info.metadata_size as usize, text.len());
    assert_eq!(&out[..text.len()], text);
    assert_eq!(info.size, 4096);
    // Compute reads what the CPU wrote through the render node's mapping.
    let buf = gpu.import_dmabuf(fd.as_fd()).unwrap();
    let copy = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    gpu.copy_engine()
        .unwrap()
        .copy(&copy, 0, &buf, 0, 4096, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert!(copy.to_vec().unwrap().iter().all(|&b| b == 0xAA));
    // SAFETY: unmapping what was mapped above.
    unsafe { kfd.driver().munmap(p, 4096) }.unwrap();
}
