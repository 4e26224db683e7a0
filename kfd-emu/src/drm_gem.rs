//! Graphics buffers on the render node, for sharing with KFD: `DRM_IOCTL_AMDGPU_GEM_CREATE`,
//! `DRM_IOCTL_GEM_CLOSE`, `DRM_IOCTL_AMDGPU_GEM_MMAP` (the offset at which the render node
//! maps the buffer for the CPU), `DRM_IOCTL_AMDGPU_GEM_METADATA` (the user-mode driver's
//! metadata, which KFD's `GET_DMABUF_INFO` hands on), `DRM_IOCTL_PRIME_HANDLE_TO_FD` (a dma-buf
//! of the buffer, which KFD's `IMPORT_DMABUF` then maps for compute: what
//! `hsaKmtRegisterGraphicsHandleToNodes` does) and `DRM_IOCTL_AMDGPU_CTX` (contexts, which
//! graphics clients create first). Layouts are those of uapi `drm.h` and `amdgpu_drm.h`. A
//! context reports no reset; what runs on it is `drm_cs`'s (SDMA IBs only).

use crate::memfd::SharedMem;
use crate::Emulator;
use kfd_sys::bindings::{KFD_IOC_ALLOC_MEM_FLAGS_GTT, KFD_IOC_ALLOC_MEM_FLAGS_VRAM};
use kfd_sys::{Errno, IoctlRequest};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

const DRM_COMMAND_BASE: u8 = 0x40;

/// `union drm_amdgpu_gem_create` (in: size, alignment, domains, domain flags; out: handle).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmAmdgpuGemCreate {
    /// In: bytes; out: the handle in the low 32 bits.
    pub bo_size: u64,
    /// In: alignment.
    pub alignment: u64,
    /// In: `AMDGPU_GEM_DOMAIN_*`.
    pub domains: u64,
    /// In: `AMDGPU_GEM_CREATE_*`.
    pub domain_flags: u64,
}

/// `struct drm_gem_close`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmGemClose {
    /// The handle.
    pub handle: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct drm_prime_handle`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmPrimeHandle {
    /// The handle.
    pub handle: u32,
    /// `DRM_CLOEXEC` / `DRM_RDWR`.
    pub flags: u32,
    /// Out: the dma-buf descriptor.
    pub fd: i32,
}

/// `union drm_amdgpu_ctx` (in: op, flags, ctx_id, priority; out: ctx_id, or flags, hangs,
/// reset status).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmAmdgpuCtx {
    /// In: `AMDGPU_CTX_OP_*`; out (query): flags.
    pub op: u32,
    /// In: flags; out (alloc): the context id; out (query): hangs.
    pub flags: u32,
    /// In: the context; out (query): reset status.
    pub ctx_id: u32,
    /// In: priority.
    pub priority: i32,
}

/// `union drm_amdgpu_gem_mmap` (in: handle; out: the fake mmap offset).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmAmdgpuGemMmap {
    /// In: the handle (low 32 bits); out: the offset to mmap the render node at.
    pub handle_or_offset: u64,
}

/// `struct drm_amdgpu_gem_metadata`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DrmAmdgpuGemMetadata {
    /// The handle.
    pub handle: u32,
    /// `AMDGPU_GEM_METADATA_OP_SET_METADATA` (1) or `_GET_METADATA` (2).
    pub op: u32,
    /// `AMDGPU_TILING_*` flags.
    pub flags: u64,
    /// Tiling.
    pub tiling_info: u64,
    /// Bytes of `data` in use.
    pub data_size_bytes: u32,
    /// The user-mode driver's metadata.
    pub data: [u32; 64],
}

impl Default for DrmAmdgpuGemMetadata {
    fn default() -> Self {
        DrmAmdgpuGemMetadata {
            handle: 0,
            op: 0,
            flags: 0,
            tiling_info: 0,
            data_size_bytes: 0,
            data: [0; 64],
        }
    }
}

/// `DRM_IOCTL_AMDGPU_GEM_MMAP`.
pub const DRM_IOCTL_AMDGPU_GEM_MMAP: IoctlRequest = IoctlRequest::iowr(
    b'd',
    DRM_COMMAND_BASE + 1,
    std::mem::size_of::<DrmAmdgpuGemMmap>(),
);
/// `DRM_IOCTL_AMDGPU_GEM_METADATA`.
pub const DRM_IOCTL_AMDGPU_GEM_METADATA: IoctlRequest = IoctlRequest::iowr(
    b'd',
    DRM_COMMAND_BASE + 6,
    std::mem::size_of::<DrmAmdgpuGemMetadata>(),
);
/// First fake mmap offset of GEM objects (page `handle` above it), apart from KFD's buffers'.
const GEM_MMAP_BASE: u64 = 0x200_0000_0000;

/// `DRM_IOCTL_AMDGPU_GEM_CREATE`.
pub const DRM_IOCTL_AMDGPU_GEM_CREATE: IoctlRequest = IoctlRequest::iowr(
    b'd',
    DRM_COMMAND_BASE,
    std::mem::size_of::<DrmAmdgpuGemCreate>(),
);
/// `DRM_IOCTL_AMDGPU_CTX`.
pub const DRM_IOCTL_AMDGPU_CTX: IoctlRequest = IoctlRequest::iowr(
    b'd',
    DRM_COMMAND_BASE + 2,
    std::mem::size_of::<DrmAmdgpuCtx>(),
);
/// `DRM_IOCTL_GEM_CLOSE`.
pub const DRM_IOCTL_GEM_CLOSE: IoctlRequest =
    IoctlRequest::iow(b'd', 0x09, std::mem::size_of::<DrmGemClose>());
/// `DRM_IOCTL_PRIME_HANDLE_TO_FD`.
pub const DRM_IOCTL_PRIME_HANDLE_TO_FD: IoctlRequest =
    IoctlRequest::iowr(b'd', 0x2d, std::mem::size_of::<DrmPrimeHandle>());

/// `AMDGPU_GEM_DOMAIN_CPU`, `_GTT`, `_VRAM`.
pub const AMDGPU_GEM_DOMAIN_CPU: u64 = 0x1;
/// GTT.
pub const AMDGPU_GEM_DOMAIN_GTT: u64 = 0x2;
/// VRAM.
pub const AMDGPU_GEM_DOMAIN_VRAM: u64 = 0x4;
/// `AMDGPU_CTX_OP_ALLOC_CTX`.
pub const AMDGPU_CTX_OP_ALLOC_CTX: u32 = 1;
/// `AMDGPU_CTX_OP_FREE_CTX`.
pub const AMDGPU_CTX_OP_FREE_CTX: u32 = 2;
/// `AMDGPU_CTX_OP_QUERY_STATE`.
pub const AMDGPU_CTX_OP_QUERY_STATE: u32 = 3;
/// `AMDGPU_CTX_OP_QUERY_STATE2`.
pub const AMDGPU_CTX_OP_QUERY_STATE2: u32 = 4;

/// One GEM object.
#[derive(Clone)]
struct Gem {
    mem: Arc<SharedMem>,
    vram: bool,
    /// The metadata `GEM_METADATA` set (`amdgpu_bo_set_metadata`'s buffer).
    metadata: Vec<u8>,
}

#[derive(Default)]
struct Tables {
    /// (render minor, handle) -> the object.
    bos: HashMap<(u32, u32), Gem>,
    ctxs: HashMap<(u32, u32), ()>,
    next: u32,
}

/// The render nodes' GEM objects and contexts.
#[derive(Default)]
pub(crate) struct GemTable {
    t: Mutex<Tables>,
}

/// Handles `request` on render node `minor` if it is one of this module's; `None` otherwise.
///
/// # Safety
/// `a` must be valid for the request's argument (the `Driver::ioctl` contract).
pub(crate) unsafe fn dispatch(
    emu: &Emulator,
    minor: u32,
    gpu_id: u32,
    request: IoctlRequest,
    a: *mut c_void,
) -> Option<Result<(), Errno>> {
    if a.is_null() {
        return Some(Err(Errno::EFAULT));
    }
    let mut t = emu.gem.t.lock().unwrap_or_else(|p| p.into_inner());
    Some(if request == DRM_IOCTL_AMDGPU_GEM_CREATE {
        // SAFETY: the request was matched to this argument type just above.
        let g = unsafe { &mut *(a as *mut DrmAmdgpuGemCreate) };
        let domains = g.domains;
        let known = AMDGPU_GEM_DOMAIN_CPU | AMDGPU_GEM_DOMAIN_GTT | AMDGPU_GEM_DOMAIN_VRAM;
        if g.bo_size == 0 || domains & !known != 0 || domains == 0 {
            return Some(Err(Errno::EINVAL));
        }
        let size = g.bo_size.div_ceil(4096) * 4096;
        let mem = match SharedMem::new(size) {
            Ok(m) => Arc::new(m),
            Err(e) => return Some(Err(e)),
        };
        t.next += 1;
        let handle = t.next;
        t.bos.insert(
            (minor, handle),
            Gem {
                mem,
                vram: domains & AMDGPU_GEM_DOMAIN_VRAM != 0,
                metadata: Vec::new(),
            },
        );
        *g = DrmAmdgpuGemCreate {
            bo_size: u64::from(handle),
            ..Default::default()
        };
        Ok(())
    } else if request == DRM_IOCTL_GEM_CLOSE {
        // SAFETY: matched just above.
        let c = unsafe { &*(a as *const DrmGemClose) };
        let closed = t
            .bos
            .remove(&(minor, c.handle))
            .map(drop)
            .ok_or(Errno::EINVAL);
        drop(t);
        if closed.is_ok() {
            if let Some(i) = emu.gpus.iter().position(|g| g.gpu_id == gpu_id) {
                crate::drm_cs::gem_closed(emu, minor, i, c.handle);
            }
        }
        closed
    } else if request == DRM_IOCTL_PRIME_HANDLE_TO_FD {
        // SAFETY: matched just above.
        let p = unsafe { &mut *(a as *mut DrmPrimeHandle) };
        if p.flags & !(libc::O_CLOEXEC as u32 | libc::O_RDWR as u32) != 0 {
            return Some(Err(Errno::EINVAL));
        }
        let Some(gem) = t.bos.get(&(minor, p.handle)).cloned() else {
            return Some(Err(Errno::ENOENT));
        };
        drop(t);
        let flags = if gem.vram {
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM
        } else {
            KFD_IOC_ALLOC_MEM_FLAGS_GTT
        };
        crate::dmabuf::export_memory_with_metadata(
            emu,
            gem.mem,
            gpu_id,
            flags,
            gem.metadata,
            p.flags & libc::O_CLOEXEC as u32 != 0,
        )
        .map(|fd| p.fd = fd)
    } else if request == DRM_IOCTL_AMDGPU_GEM_MMAP {
        // SAFETY: matched just above.
        let m = unsafe { &mut *(a as *mut DrmAmdgpuGemMmap) };
        let handle = m.handle_or_offset as u32;
        if !t.bos.contains_key(&(minor, handle)) {
            return Some(Err(Errno::ENOENT));
        }
        m.handle_or_offset = GEM_MMAP_BASE + u64::from(handle) * 4096;
        Ok(())
    } else if request == DRM_IOCTL_AMDGPU_GEM_METADATA {
        // SAFETY: matched just above.
        let m = unsafe { &mut *(a as *mut DrmAmdgpuGemMetadata) };
        let Some(gem) = t.bos.get_mut(&(minor, m.handle)) else {
            return Some(Err(Errno::ENOENT));
        };
        match m.op {
            // amdgpu_bo_set_metadata: at most the 256 bytes the struct carries.
            1 => {
                let n = m.data_size_bytes as usize;
                if n > std::mem::size_of_val(&m.data) {
                    return Some(Err(Errno::EINVAL));
                }
                gem.metadata = m
                    .data
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .take(n)
                    .collect();
                Ok(())
            }
            2 => {
                let n = gem.metadata.len();
                let mut data = [0u32; 64];
                for (i, c) in gem.metadata.chunks(4).enumerate() {
                    let mut w = [0u8; 4];
                    w[..c.len()].copy_from_slice(c);
                    data[i] = u32::from_le_bytes(w);
                }
                m.data = data;
                m.data_size_bytes = n as u32;
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    } else if request == DRM_IOCTL_AMDGPU_CTX {
        // SAFETY: matched just above.
        let c = unsafe { &mut *(a as *mut DrmAmdgpuCtx) };
        match c.op {
            AMDGPU_CTX_OP_ALLOC_CTX => {
                t.next += 1;
                let id = t.next;
                t.ctxs.insert((minor, id), ());
                *c = DrmAmdgpuCtx {
                    op: id,
                    ..Default::default()
                };
                Ok(())
            }
            AMDGPU_CTX_OP_FREE_CTX => t.ctxs.remove(&(minor, c.ctx_id)).ok_or(Errno::EINVAL),
            AMDGPU_CTX_OP_QUERY_STATE | AMDGPU_CTX_OP_QUERY_STATE2 => {
                if !t.ctxs.contains_key(&(minor, c.ctx_id)) {
                    return Some(Err(Errno::EINVAL));
                }
                // No reset, no hang: AMDGPU_CTX_NO_RESET (0) throughout.
                *c = DrmAmdgpuCtx::default();
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    } else {
        return None;
    })
}

/// The memory of the GEM object render node `minor` maps at `offset` (what `GEM_MMAP` gave).
pub(crate) fn mmap_target(emu: &Emulator, minor: u32, offset: u64) -> Option<Arc<SharedMem>> {
    let handle = u32::try_from(offset.checked_sub(GEM_MMAP_BASE)? / 4096).ok()?;
    let t = emu.gem.t.lock().unwrap_or_else(|p| p.into_inner());
    t.bos.get(&(minor, handle)).map(|g| g.mem.clone())
}

/// GEM object `handle` of render node `minor`: its memory, and whether it is in VRAM.
pub(crate) fn object(emu: &Emulator, minor: u32, handle: u32) -> Option<(Arc<SharedMem>, bool)> {
    let t = emu.gem.t.lock().unwrap_or_else(|p| p.into_inner());
    t.bos.get(&(minor, handle)).map(|g| (g.mem.clone(), g.vram))
}

/// Whether render node `minor` has context `ctx`.
pub(crate) fn context_exists(emu: &Emulator, minor: u32, ctx: u32) -> bool {
    let t = emu.gem.t.lock().unwrap_or_else(|p| p.into_inner());
    t.ctxs.contains_key(&(minor, ctx))
}
