//! Graphics command submission on the render node (issue #25 item 7), as libdrm's
//! `amdgpu_bo_va_op`, `amdgpu_bo_list_create`, `amdgpu_cs_submit` and
//! `amdgpu_cs_query_fence_status` use it while KFD work runs (kfdtest's `KFDEvictTest`): a GEM
//! object mapped into the GPU's VM, which is KFD's; an IB for the SDMA engine that writes into a
//! KFD buffer of the same VM; its fence; and the driver's refusals.

use crate::common;
use kfd_sys::{Errno, Node};
use kfdrt::emu::drm_cs::*;
use kfdrt::emu::drm_gem::*;
use kfdrt::emu::Preset;
use kfdrt::MemoryKind;
use sdma::{SdmaPacket, SdmaVersion};

struct Drm<'a> {
    kfd: &'a kfdrt::Kfd,
    minor: u32,
}

impl Drm<'_> {
    fn ioctl<T>(&self, req: kfd_sys::IoctlRequest, arg: &mut T) -> Result<i32, Errno> {
        // SAFETY: every caller passes the request's own argument struct, whose pointers point
        // into live locals.
        unsafe {
            self.kfd
                .driver()
                .ioctl(Node::Render(self.minor), req, (arg as *mut T).cast())
        }
    }

    /// A new 4 KiB GTT object: its handle.
    fn gem_create(&self) -> u32 {
        let mut create = DrmAmdgpuGemCreate {
            bo_size: 4096,
            alignment: 4096,
            domains: AMDGPU_GEM_DOMAIN_GTT,
            domain_flags: 0,
        };
        self.ioctl(DRM_IOCTL_AMDGPU_GEM_CREATE, &mut create)
            .unwrap();
        create.bo_size as u32
    }

    fn gem_va(&self, handle: u32, operation: u32, va: u64, size: u64) -> Result<i32, Errno> {
        let mut v = DrmAmdgpuGemVa {
            handle,
            operation,
            flags: 0x2 | 0x4 | 0x8,
            va_address: va,
            offset_in_bo: 0,
            map_size: size,
            ..Default::default()
        };
        self.ioctl(DRM_IOCTL_AMDGPU_GEM_VA, &mut v)
    }
}

#[test]
fn an_sdma_ib_submitted_on_the_render_node_writes_into_kfd_memory() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let drm = Drm {
        kfd: &kfd,
        minor: gpu.info().drm_render_minor,
    };
    let mut ctx = DrmAmdgpuCtx {
        op: AMDGPU_CTX_OP_ALLOC_CTX,
        ..Default::default()
    };
    drm.ioctl(DRM_IOCTL_AMDGPU_CTX, &mut ctx).unwrap();
    let ctx_id = ctx.op;
    let ib = drm.gem_create();

    // The IB's place in the VM, clear of KFD's buffers: GPU addresses are host addresses here,
    // so a range reserved on the host holds none of them.
    let target = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    // SAFETY: a new private reservation at an address the kernel picks; unmapped at the end.
    let reserved = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            8192,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    assert_ne!(reserved, libc::MAP_FAILED);
    let va = reserved as u64;
    assert_eq!(
        drm.gem_va(ib, 1, va + 12, 4096),
        Err(Errno::EINVAL),
        "unaligned"
    );
    assert_eq!(
        drm.gem_va(ib, 1, va, 8192),
        Err(Errno::EINVAL),
        "past the object"
    );
    assert_eq!(
        drm.gem_va(ib, 1, target.gpu_address(), 4096),
        Err(Errno::EINVAL),
        "over a KFD buffer"
    );
    drm.gem_va(ib, 1, va, 4096).unwrap();
    assert_eq!(
        drm.gem_va(ib, 1, va, 4096),
        Err(Errno::EINVAL),
        "mapped twice"
    );

    // The IB: a WRITE of two dwords into the KFD buffer, then NOPs.
    let mut words = Vec::new();
    SdmaPacket::Write {
        dst: target.gpu_address() + 64,
        data: vec![0x5eed_0001, 0x5eed_0002],
    }
    .encode(SdmaVersion::V4, 90010, &mut words)
    .unwrap();
    SdmaPacket::Nop { extra_dwords: 3 }
        .encode(SdmaVersion::V4, 90010, &mut words)
        .unwrap();
    let mut mm = DrmAmdgpuGemMmap {
        handle_or_offset: u64::from(ib),
    };
    drm.ioctl(DRM_IOCTL_AMDGPU_GEM_MMAP, &mut mm).unwrap();
    let cpu = common::map_render_node(&kfd, drm.minor, mm.handle_or_offset, 4096);
    // SAFETY: `cpu` maps 4096 writable bytes; the IB is far shorter.
    unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), cpu as *mut u32, words.len()) };
    // SAFETY: the mapping made just above, used no more.
    unsafe { kfd.driver().munmap(cpu, 4096) }.unwrap();

    let entries = [ib, 0u32];
    let mut list = DrmAmdgpuBoList {
        operation: 0,
        list_handle: 0,
        bo_number: 1,
        bo_info_size: 8,
        bo_info_ptr: entries.as_ptr() as u64,
    };
    drm.ioctl(DRM_IOCTL_AMDGPU_BO_LIST, &mut list).unwrap();
    let list_handle = list.operation;

    let ib_chunk = DrmAmdgpuCsChunkIb {
        va_start: va,
        ib_bytes: (words.len() * 4) as u32,
        ip_type: 2,
        ..Default::default()
    };
    let chunk = DrmAmdgpuCsChunk {
        chunk_id: 1,
        length_dw: 8,
        chunk_data: &ib_chunk as *const _ as u64,
    };
    let submit = |ctx_id: u32, ip_type: u32| {
        let mut ibc = ib_chunk;
        ibc.ip_type = ip_type;
        let c = DrmAmdgpuCsChunk {
            chunk_data: &ibc as *const _ as u64,
            ..chunk
        };
        let cs = [&c as *const DrmAmdgpuCsChunk as u64];
        let mut a = DrmAmdgpuCs {
            ctx_id,
            bo_list_handle: list_handle,
            num_chunks: 1,
            flags: 0,
            chunks: cs.as_ptr() as u64,
        };
        drm.ioctl(DRM_IOCTL_AMDGPU_CS, &mut a)
            .map(|_| u64::from(a.ctx_id) | u64::from(a.bo_list_handle) << 32)
    };
    assert_eq!(submit(ctx_id, 2), Ok(1));
    assert_eq!(submit(ctx_id, 2), Ok(2));
    let out = target.to_vec().unwrap();
    assert_eq!(&out[64..72], &[1, 0, 0xed, 0x5e, 2, 0, 0xed, 0x5e]);
    // Rings kfd-emu does not run, and an unknown context, are refused.
    assert_eq!(submit(ctx_id, 0), Err(Errno::EINVAL));
    assert_eq!(submit(ctx_id + 100, 2), Err(Errno::EINVAL));

    let wait = |handle: u64| {
        let mut w = DrmAmdgpuWaitCs {
            handle,
            timeout: u64::MAX,
            ip_type: 2,
            ctx_id,
            ..Default::default()
        };
        drm.ioctl(DRM_IOCTL_AMDGPU_WAIT_CS, &mut w)
            .map(|_| w.handle)
    };
    assert_eq!(wait(2), Ok(0), "signalled");
    assert_eq!(wait(3), Err(Errno::EINVAL), "never submitted");

    // Unmapping what is not mapped is ENOENT; closing the object unmaps it, so the address
    // takes another object.
    assert_eq!(drm.gem_va(ib, 2, va + 4096, 4096), Err(Errno::ENOENT));
    let mut close = DrmGemClose { handle: ib, pad: 0 };
    drm.ioctl(DRM_IOCTL_GEM_CLOSE, &mut close).unwrap();
    assert_eq!(drm.gem_va(ib, 2, va, 4096), Err(Errno::ENOENT));
    let again = drm.gem_create();
    drm.gem_va(again, 1, va, 4096).unwrap();
    drm.gem_va(again, 2, va, 4096).unwrap();
    // A range that would run past the low half of the VM is refused, not wrapped.
    assert_eq!(drm.gem_va(again, 1, !0xFFF, 4096), Err(Errno::EINVAL));
    // SAFETY: the reservation made above, no longer mapped for the GPU.
    unsafe { libc::munmap(reserved, 8192) };
}
