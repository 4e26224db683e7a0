//! Buffer objects: `ALLOC/FREE/MAP/UNMAP_MEMORY_OF_GPU` with amdkfd's checks, and mmap.
//!
//! The checks mirror `kfd_ioctl_alloc_memory_of_gpu` and friends in `kfd_chardev.c` and
//! `amdgpu_amdkfd_gpuvm.c`: a zero size, an unknown GPU, a GPU whose VM was not acquired, no
//! memory domain, a wrongly sized doorbell or MMIO buffer, and a VA that is not page aligned or
//! overlaps another buffer (amdgpu_vm_bo_map's conflict) are EINVAL; exceeding VRAM (or
//! host-visible VRAM for PUBLIC buffers) is ENOMEM; freeing a buffer still mapped is EBUSY.

use crate::device::{doorbell_slice, GpuState};
use crate::live::CpuMapKind;
use crate::memfd::SharedMem;
use crate::Emulator;
use kfd_sys::bindings::*;
use kfd_sys::{Errno, MapSource, Node};
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

const PAGE: u64 = 4096;

#[derive(Debug)]
pub(crate) enum Backing {
    /// VRAM or GTT: emulator-owned shared memory (shared with the event table when it is the
    /// events page, which KFD keeps mapped while the process lives).
    Shared(Arc<SharedMem>),
    /// The user's own pages, at this host address (the `mmap_offset` of the allocation; the
    /// GPU VA may differ, as libhsakmt's registrations of malloc'd memory do).
    User { host: u64 },
    /// A GPU's doorbell pages.
    Doorbell,
    /// A GPU's MMIO remap page.
    Mmio,
}

pub(crate) struct Bo {
    pub(crate) gpu: Arc<GpuState>,
    pub(crate) va: u64,
    pub(crate) size: u64,
    pub(crate) flags: u32,
    pub(crate) backing: Backing,
    pub(crate) mmap_offset: u64,
    /// Indices of the GPUs it is mapped to.
    pub(crate) mapped: Vec<usize>,
    /// Live queues using the buffer, per GPU index (`bo_va->queue_refcount`): while one does,
    /// the buffer cannot be unmapped from that GPU.
    pub(crate) queue_refs: Vec<(usize, u32)>,
    /// CPU mappings of host-visible VRAM whose writes the HDP model tracks (strict mode).
    pub(crate) hdp_slots: Vec<usize>,
    /// Imported from a dma-buf: the memory is the exporter's, and counts against no limit
    /// again.
    pub(crate) imported: bool,
    /// A VRAM buffer the driver moved to system memory (GTT) to map it to a GPU with no
    /// peer-to-peer path to its owner: it counts as GTT from then on.
    pub(crate) in_system: bool,
}

impl Bo {
    fn host(&self) -> *mut u8 {
        match &self.backing {
            Backing::Shared(m) => m.host(),
            Backing::User { host } => *host as *mut u8,
            Backing::Doorbell => self.gpu.doorbells.host(),
            Backing::Mmio => self.gpu.mmio.host(),
        }
    }

    fn perms(&self) -> crate::vm::Perms {
        crate::vm::Perms {
            write: self.flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE != 0,
            exec: self.flags & KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE != 0,
        }
    }

    /// What its GPU mappings are (see [`crate::vm::MappingKind`]): system memory (GTT or
    /// userptr) drops every atomic on a host without PCIe atomics, and when fine-grained
    /// (coherent or uncached) float atomics on a strict gfx90a.
    fn mapping_kind(&self, strict: bool) -> crate::vm::MappingKind {
        let f = self.flags;
        let host = f & (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) != 0;
        let fine = f & (KFD_IOC_ALLOC_MEM_FLAGS_COHERENT | KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED) != 0;
        crate::vm::MappingKind {
            visible_vram: self.visible_vram(),
            atomics: if host {
                self.gpu.host_atomics(fine, strict)
            } else {
                crate::vm::HostAtomics::Performed
            },
        }
    }

    /// Host-visible VRAM: the CPU writes it through the BAR, past the GPU's HDP.
    fn visible_vram(&self) -> bool {
        let f = self.flags;
        f & KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0 && f & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC != 0
    }

    fn queue_refs(&self, gpu_index: usize) -> u32 {
        self.queue_refs
            .iter()
            .find(|(g, _)| *g == gpu_index)
            .map_or(0, |&(_, n)| n)
    }

    /// (system bytes, TTM bytes) the buffer holds against amdgpu's limits.
    fn system_accounting(&self) -> (u64, u64) {
        if self.imported {
            (0, 0)
        } else if self.flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT != 0 || self.in_system {
            (self.size, self.size)
        } else if self.flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 {
            (self.size, 0)
        } else {
            (0, 0)
        }
    }

    fn vram_accounting(&self) -> Option<(u64, bool)> {
        (self.flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0 && !self.imported && !self.in_system)
            .then_some((self.size, self.flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC != 0))
    }
}

#[derive(Default)]
struct Inner {
    bos: HashMap<u64, Bo>,
    /// System memory the process's GTT and USERPTR buffers hold, and the part of it in TTM
    /// (GTT), as `amdgpu_amdkfd_reserve_mem_limit` counts them.
    system_used: u64,
    ttm_used: u64,
    /// VA start -> end, for the overlap check.
    ranges: BTreeMap<u64, u64>,
    /// Render-node mmap offset -> handle.
    offsets: HashMap<u64, u64>,
    next: u64,
}

/// Every buffer of the (single) emulated process.
#[derive(Default)]
pub(crate) struct MemoryTable {
    inner: Mutex<Inner>,
}

impl MemoryTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn live(&self) -> usize {
        self.lock().bos.len()
    }

    /// The GPU (index) a buffer was allocated on and its allocation flags.
    pub(crate) fn placement(&self, handle: u64) -> Option<(usize, u32)> {
        self.lock().bos.get(&handle).map(|b| (b.gpu.index, b.flags))
    }

    /// (buffer, GPU) pairs currently mapped.
    pub(crate) fn live_gpu_mappings(&self) -> usize {
        self.lock().bos.values().map(|b| b.mapped.len()).sum()
    }
}

fn overlaps(ranges: &BTreeMap<u64, u64>, start: u64, end: u64) -> bool {
    ranges
        .range(..end)
        .next_back()
        .is_some_and(|(_, &e)| e > start)
}

pub(crate) fn alloc(
    emu: &Emulator,
    a: &mut kfd_ioctl_alloc_memory_of_gpu_args,
) -> Result<(), Errno> {
    if a.size == 0 {
        return Err(Errno::EINVAL);
    }
    let gpu = emu.gpu(a.gpu_id).ok_or(Errno::EINVAL)?.clone();
    // kfd_bind_process_to_device: "if (!pdd->drm_priv) return ERR_PTR(-ENODEV)" (no
    // ACQUIRE_VM yet).
    if !gpu.vm_acquired.load(Ordering::Acquire) {
        return Err(Errno::ENODEV);
    }
    let f = a.flags;
    // amdgpu_bo_create rounds a buffer up to the kernel's page; its mapping covers it all.
    let page = gpu.platform.page_size;
    let size = a.size.checked_next_multiple_of(page).ok_or(Errno::EINVAL)?;
    // A VA of 0 is a buffer without an address (libhsakmt's NoAddress allocations): the
    // driver takes it, and it can never be mapped to a GPU here.
    if a.va_addr % PAGE != 0 {
        return Err(Errno::EINVAL);
    }
    let no_va = a.va_addr == 0;
    let end = a.va_addr.checked_add(size).ok_or(Errno::EINVAL)?;
    // amdgpu picks the first domain flag in this order; none is an error.
    let backing = if f & KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0 || f & KFD_IOC_ALLOC_MEM_FLAGS_GTT != 0 {
        None
    } else if f & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 {
        // The user address travels in mmap_offset; amdgpu pins whole pages of it.
        if a.mmap_offset == 0 || a.mmap_offset % page != 0 {
            return Err(Errno::EINVAL);
        }
        if !user_range_mapped(a.mmap_offset, size) {
            // get_user_pages finds no mapping there.
            return Err(Errno::EFAULT);
        }
        Some(Backing::User {
            host: a.mmap_offset,
        })
    } else if f & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL != 0 {
        // KFD ignores the offset user space passes and answers the process's doorbell slice.
        if size != doorbell_slice(page) {
            return Err(Errno::EINVAL);
        }
        Some(Backing::Doorbell)
    } else if f & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP != 0 {
        if size != page {
            return Err(Errno::EINVAL);
        }
        // kfd_ioctl_alloc_memory_of_gpu: `offset = dev->adev->rmmio_remap.bus_addr; if
        // (!offset || (PAGE_SIZE > 4096)) return -ENOMEM`. A virtual function has no remap page.
        if gpu.platform.sriov_vf || page > PAGE {
            return Err(Errno::ENOMEM);
        }
        Some(Backing::Mmio)
    } else {
        return Err(Errno::EINVAL);
    };
    if emu.faults.take_allocation_failure() {
        return Err(Errno::ENOMEM);
    }
    // kfd_ioctl_alloc_memory_of_gpu: "already allocated by SVM", for the VA (except VRAM
    // without one, since Linux 6.12's "fix vram allocation failure for a special case") and
    // for a userptr's CPU pages.
    let skip_svm = no_va && f & KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0;
    if !skip_svm && emu.svm.overlaps(emu, a.va_addr, end) {
        return Err(Errno::EADDRINUSE);
    }
    if let Some(Backing::User { host }) = backing {
        if emu.svm.overlaps(emu, host, host + size) {
            return Err(Errno::EADDRINUSE);
        }
    }
    let mut m = emu.memory.lock();
    if !no_va && overlaps(&m.ranges, a.va_addr, end) {
        return Err(Errno::EINVAL);
    }
    let is_vram = f & KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0;
    if is_vram {
        let public = f & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC != 0;
        let used = gpu.vram_used.load(Ordering::Acquire);
        if used + size > gpu.params.vram_bytes {
            return Err(Errno::ENOMEM);
        }
        if public
            && gpu.visible_vram_used.load(Ordering::Acquire) + size
                > gpu.params.host_visible_vram_bytes
        {
            return Err(Errno::ENOMEM);
        }
    }
    // amdgpu_amdkfd_reserve_mem_limit: GTT counts against the system and TTM limits, USERPTR
    // against the system limit (the pages are pinned).
    let (sys, ttm) = if f & KFD_IOC_ALLOC_MEM_FLAGS_GTT != 0 {
        (size, size)
    } else if f & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 {
        (size, 0)
    } else {
        (0, 0)
    };
    let (max_sys, max_ttm) = system_limits(emu.config.system_memory_bytes);
    if m.system_used + sys > max_sys || m.ttm_used + ttm > max_ttm {
        return Err(Errno::ENOMEM);
    }
    let backing = match backing {
        Some(b) => b,
        None => Backing::Shared(Arc::new(SharedMem::new(size)?)),
    };
    m.system_used += sys;
    m.ttm_used += ttm;
    m.next += 1;
    let handle = u64::from(gpu.gpu_id) << 32 | m.next;
    let mmap_offset = match backing {
        // DRM-style fake offsets: unique, page aligned, never reused while the process lives.
        Backing::Shared(_) => 0x100_0000_0000 + m.next * page,
        Backing::User { host } => host,
        Backing::Doorbell => gpu.doorbell_mmap_offset(),
        Backing::Mmio => gpu.mmio_mmap_offset(),
    };
    if is_vram {
        gpu.vram_used.fetch_add(size, Ordering::AcqRel);
        if f & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC != 0 {
            gpu.visible_vram_used.fetch_add(size, Ordering::AcqRel);
        }
    }
    if matches!(backing, Backing::Shared(_)) {
        m.offsets.insert(mmap_offset, handle);
    }
    if !no_va {
        m.ranges.insert(a.va_addr, end);
    }
    m.bos.insert(
        handle,
        Bo {
            gpu,
            va: a.va_addr,
            size,
            flags: f,
            backing,
            mmap_offset,
            mapped: Vec::new(),
            queue_refs: Vec::new(),
            hdp_slots: Vec::new(),
            imported: false,
            in_system: false,
        },
    );
    log::trace!(
        "kfd-emu: buffer {handle:#x}: {size:#x} bytes at {:#x}, flags {f:#x}, mmap offset {mmap_offset:#x}",
        a.va_addr
    );
    a.handle = handle;
    a.mmap_offset = mmap_offset;
    Ok(())
}

/// amdgpu's limits on system memory for KFD buffers of a machine with `total` bytes
/// (`amdgpu_amdkfd_gpuvm_init_mem_limits`): all but 1/64 and 512 MiB for pinned system memory,
/// and TTM's default page limit, half of memory, for GTT.
fn system_limits(total: u64) -> (u64, u64) {
    const RESERVE: u64 = 512 << 20;
    let mut sys = total - (total >> 6);
    if sys < 2 * RESERVE {
        sys >>= 1;
    } else {
        sys -= RESERVE;
    }
    (sys, total / 2)
}

/// Whether `addr..addr+len` (page aligned) is mapped in this process: `msync` fails with
/// ENOMEM on any hole.
pub(crate) fn user_range_mapped(addr: u64, len: u64) -> bool {
    // SAFETY: MS_ASYNC on a page-aligned range only queries and schedules writeback; it never
    // touches the contents.
    unsafe { libc::msync(addr as *mut libc::c_void, len as usize, libc::MS_ASYNC) == 0 }
}

/// Whether `start..end` overlaps a buffer's VA range.
pub(crate) fn overlaps_buffer(emu: &Emulator, start: u64, end: u64) -> bool {
    overlaps(&emu.memory.lock().ranges, start, end)
}

/// What an export needs of buffer `handle`: its memory, size, GPU and flags. Only VRAM and GTT
/// buffers are exportable (amdgpu refuses userptr, doorbell and MMIO buffers).
pub(crate) fn exportable(
    emu: &Emulator,
    handle: u64,
) -> Result<(Arc<SharedMem>, u64, u32, u32), Errno> {
    let m = emu.memory.lock();
    let bo = m.bos.get(&handle).ok_or(Errno::EINVAL)?;
    match &bo.backing {
        Backing::Shared(mem) => Ok((mem.clone(), bo.size, bo.gpu.gpu_id, bo.flags)),
        _ => Err(Errno::EINVAL),
    }
}

/// Adds a buffer for imported memory `mem` at `va` on `gpu` (not yet mapped to any GPU).
pub(crate) fn insert_import(
    emu: &Emulator,
    gpu: Arc<GpuState>,
    va: u64,
    mem: Arc<SharedMem>,
    flags: u32,
) -> Result<u64, Errno> {
    let size = mem.len() as u64;
    if va % PAGE != 0 || va == 0 {
        return Err(Errno::EINVAL);
    }
    let end = va.checked_add(size).ok_or(Errno::EINVAL)?;
    let mut m = emu.memory.lock();
    if overlaps(&m.ranges, va, end) {
        return Err(Errno::EINVAL);
    }
    m.next += 1;
    let handle = u64::from(gpu.gpu_id) << 32 | m.next;
    let mmap_offset = 0x100_0000_0000 + m.next * PAGE;
    m.offsets.insert(mmap_offset, handle);
    m.ranges.insert(va, end);
    m.bos.insert(
        handle,
        Bo {
            gpu,
            va,
            size,
            flags,
            backing: Backing::Shared(mem),
            mmap_offset,
            mapped: Vec::new(),
            queue_refs: Vec::new(),
            hdp_slots: Vec::new(),
            imported: true,
            in_system: false,
        },
    );
    Ok(handle)
}

pub(crate) fn free(emu: &Emulator, handle: u64) -> Result<(), Errno> {
    let bo = {
        let mut m = emu.memory.lock();
        let bo = m.bos.get(&handle).ok_or(Errno::EINVAL)?;
        if !bo.mapped.is_empty() {
            return Err(Errno::EBUSY);
        }
        let Some(bo) = m.bos.remove(&handle) else {
            return Err(Errno::EINVAL);
        };
        m.ranges.remove(&bo.va);
        m.offsets.remove(&bo.mmap_offset);
        let (sys, ttm) = bo.system_accounting();
        m.system_used -= sys;
        m.ttm_used -= ttm;
        bo
    };
    for slot in &bo.hdp_slots {
        crate::hdp::untrack(*slot);
    }
    if let Some((size, public)) = bo.vram_accounting() {
        bo.gpu.vram_used.fetch_sub(size, Ordering::AcqRel);
        if public {
            bo.gpu.visible_vram_used.fetch_sub(size, Ordering::AcqRel);
        }
    }
    Ok(())
}

fn device_ids(ptr: u64, n: u32) -> Result<Vec<u32>, Errno> {
    if ptr == 0 {
        return Err(Errno::EFAULT);
    }
    // SAFETY: the caller of the ioctl guarantees the array (the Driver::ioctl contract); this is
    // what copy_from_user reads.
    Ok(unsafe { std::slice::from_raw_parts(ptr as *const u32, n as usize) }.to_vec())
}

/// MAP (`map = true`) or UNMAP for the devices `[n_success, n_devices)`, one after another as
/// `kfd_ioctl_map_memory_to_gpu` and `kfd_ioctl_unmap_memory_from_gpu` go: the first device
/// that fails ends the call with its error, the ones before it stay done, and `n_success` says
/// how far it got (the driver copies the arguments back whatever the result).
pub(crate) fn map(
    emu: &Emulator,
    handle: u64,
    ptr: u64,
    n_devices: u32,
    n_success: &mut u32,
    map: bool,
) -> Result<(), Errno> {
    if n_devices == 0 || *n_success > n_devices {
        return Err(Errno::EINVAL);
    }
    let ids = device_ids(ptr, n_devices)?;
    // The handle names its GPU (MAKE_HANDLE): no such GPU is EINVAL; for MAP the process is
    // bound to it (kfd_bind_process_to_device: ENODEV before ACQUIRE_VM); a handle the GPU
    // does not know is ENOMEM (kfd_process_device_translate_handle finds no memory).
    let owner_gpu = emu.gpu((handle >> 32) as u32).ok_or(Errno::EINVAL)?;
    if map && !owner_gpu.vm_acquired.load(Ordering::Acquire) {
        return Err(Errno::ENODEV);
    }
    let mut m = emu.memory.lock();
    let bo = m.bos.get(&handle).ok_or(Errno::ENOMEM)?;
    if map && bo.va == 0 {
        // A buffer allocated without a VA has nowhere to be mapped.
        log::warn!("kfd-emu: MAP_MEMORY_TO_GPU refused: buffer {handle:#x} has no VA");
        return Err(Errno::EINVAL);
    }
    let (in_vram, owner) = (bo.vram_accounting().is_some(), bo.gpu.index);
    for (i, &id) in ids.iter().enumerate().skip(*n_success as usize) {
        let g = emu.gpu(id).ok_or(Errno::EINVAL)?;
        if map {
            if !g.vm_acquired.load(Ordering::Acquire) {
                return Err(Errno::ENODEV);
            }
            if in_vram && g.index != owner && emu.config.peer_path(g.index, owner).is_none() {
                move_to_system(emu, &mut m, handle)?;
            }
            let bo = m.bos.get_mut(&handle).ok_or(Errno::ENOMEM)?;
            if !bo.mapped.contains(&g.index) {
                g.vm.map_memory(
                    bo.va,
                    bo.size,
                    bo.host(),
                    handle,
                    bo.perms(),
                    bo.mapping_kind(emu.config.strict),
                );
                bo.mapped.push(g.index);
            }
        } else {
            let bo = m.bos.get_mut(&handle).ok_or(Errno::ENOMEM)?;
            if !bo.mapped.contains(&g.index) {
                // kfd_mem_is_attached: not mapped to that GPU's VM.
                return Err(Errno::EINVAL);
            }
            if bo.queue_refs(g.index) > 0 {
                // unmap_bo_from_gpuvm: a live queue's ring, pointers, EOP or CWSR area.
                return Err(Errno::EBUSY);
            }
            g.vm.unmap(bo.va);
            bo.mapped.retain(|&i| i != g.index);
        }
        *n_success = i as u32 + 1;
    }
    Ok(())
}

/// Moves VRAM buffer `handle` to system memory so that a GPU without a peer-to-peer path to
/// its owner can map it: `kfd_mem_attach` attaches it through a DMA-buf
/// (`KFD_MEM_ATT_DMABUF` when `!amdgpu_device_is_peer_accessible`), and pinning an attachment
/// that cannot do peer-to-peer moves the buffer to GTT (`amdgpu_dma_buf_pin`). It then counts
/// against the GTT limits (ENOMEM past them) and no longer against VRAM; the owner's own
/// accesses go over PCIe. The contents stay where they are (the emulator's VRAM is host memory).
fn move_to_system(emu: &Emulator, m: &mut Inner, handle: u64) -> Result<(), Errno> {
    let (max_sys, max_ttm) = system_limits(emu.config.system_memory_bytes);
    let bo = m.bos.get(&handle).ok_or(Errno::EINVAL)?;
    let Some((size, public)) = bo.vram_accounting() else {
        return Ok(());
    };
    if m.system_used + size > max_sys || m.ttm_used + size > max_ttm {
        return Err(Errno::ENOMEM);
    }
    m.system_used += size;
    m.ttm_used += size;
    let bo = m.bos.get_mut(&handle).ok_or(Errno::EINVAL)?;
    bo.in_system = true;
    bo.gpu.vram_used.fetch_sub(size, Ordering::AcqRel);
    if public {
        bo.gpu.visible_vram_used.fetch_sub(size, Ordering::AcqRel);
    }
    emu.stats
        .vram_moved_to_system
        .fetch_add(size, Ordering::AcqRel);
    log::warn!(
        "kfd-emu: VRAM buffer {handle:#x} moved to system memory: mapped to a GPU with no \
         peer-to-peer path to its owner"
    );
    Ok(())
}

/// The driver's mmap: render-node offsets map buffers, KFD offsets map doorbells and MMIO.
///
/// # Safety
/// As [`kfd_sys::Driver::mmap`].
pub(crate) unsafe fn mmap(
    emu: &Emulator,
    source: MapSource,
    addr: *mut c_void,
    len: usize,
    prot: i32,
    flags: i32,
    offset: u64,
) -> Result<(*mut c_void, CpuMapKind), Errno> {
    // The kernel's page is the unit of a mapping: its address (when fixed) and file offset.
    let page = emu.config.platform.page_size;
    let fixed = flags & (libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE) != 0;
    if (fixed && addr as u64 % page != 0) || offset % page != 0 {
        return Err(Errno::EINVAL);
    }
    match source {
        MapSource::Anonymous => {
            // SAFETY: forwarded from the caller.
            let p = unsafe { libc::mmap(addr, len, prot, flags | libc::MAP_ANONYMOUS, -1, 0) };
            if p == libc::MAP_FAILED {
                Err(Errno::last())
            } else {
                Ok((p, CpuMapKind::Anonymous))
            }
        }
        MapSource::File(Node::Render(minor)) => {
            let mut m = emu.memory.lock();
            let Some(&handle) = m.offsets.get(&offset) else {
                // A graphics buffer the render node's GEM_MMAP gave this offset.
                drop(m);
                let mem = crate::drm_gem::mmap_target(emu, minor, offset).ok_or(Errno::EINVAL)?;
                // SAFETY: forwarded from the caller.
                let p = unsafe { mem.map_for_caller(addr, len, prot, flags, 0) }?;
                return Ok((p, CpuMapKind::Buffer));
            };
            let bo = m.bos.get_mut(&handle).ok_or(Errno::EINVAL)?;
            if bo.gpu.render_minor != minor {
                return Err(Errno::EINVAL);
            }
            let p = match &bo.backing {
                // SAFETY: forwarded from the caller.
                Backing::Shared(mem) => unsafe { mem.map_for_caller(addr, len, prot, flags, 0) }?,
                _ => return Err(Errno::EINVAL),
            };
            // Strict mode watches the CPU's writes to host-visible VRAM (see `hdp`).
            if emu.config.strict && bo.visible_vram() && prot & libc::PROT_WRITE != 0 {
                if let Some(slot) = crate::hdp::track(p as usize, len, bo.gpu.hdp_owner) {
                    bo.hdp_slots.push(slot);
                }
            }
            Ok((p, CpuMapKind::Buffer))
        }
        MapSource::File(Node::Kfd) => {
            let gpu = emu
                .gpus
                .iter()
                .find(|g| g.doorbell_mmap_offset() == offset || g.mmio_mmap_offset() == offset)
                .ok_or(Errno::EINVAL)?;
            let (mem, kind) = if gpu.doorbell_mmap_offset() == offset {
                (&gpu.doorbells, CpuMapKind::Doorbell)
            } else {
                (&gpu.mmio, CpuMapKind::Mmio)
            };
            // kfd_doorbell_mmap and kfd_mmio_mmap take exactly the process's doorbell slice
            // (both pages) and exactly one page.
            if len != mem.len() {
                return Err(Errno::EINVAL);
            }
            // SAFETY: forwarded from the caller.
            let p = unsafe { mem.map_for_caller(addr, len, prot, flags, 0) }?;
            if kind == CpuMapKind::Doorbell
                && emu.config.trap_doorbell_writes
                && prot & libc::PROT_WRITE != 0
            {
                let slot = crate::doorbell_trap::register(p as usize, len, gpu.hdp_owner);
                log::debug!("kfd-emu: doorbell mapping {p:p}+{len:#x} trapped in slot {slot:?}");
                if let Some(slot) = slot {
                    gpu.doorbell_traps
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(slot);
                }
            }
            Ok((p, kind))
        }
    }
}

/// Takes (`take = true`) or drops a queue's reference on buffer `handle` as mapped to GPU
/// `gpu_index` (`kfd_queue_buffer_get` / `kfd_queue_unref_bo_va`). Returns whether the buffer
/// exists: one freed since the page table named it takes no reference.
pub(crate) fn queue_ref(emu: &Emulator, handle: u64, gpu_index: usize, take: bool) -> bool {
    let mut m = emu.memory.lock();
    let Some(bo) = m.bos.get_mut(&handle) else {
        return false;
    };
    match bo.queue_refs.iter_mut().find(|(g, _)| *g == gpu_index) {
        Some((_, n)) if take => *n += 1,
        Some((_, n)) => *n = n.saturating_sub(1),
        None if take => bo.queue_refs.push((gpu_index, 1)),
        None => {}
    }
    bo.queue_refs.retain(|&(_, n)| n > 0);
    true
}

/// The memory of `handle` if it names a GTT buffer large enough to be the events page.
pub(crate) fn events_page(emu: &Emulator, handle: u64) -> Option<Arc<SharedMem>> {
    let m = emu.memory.lock();
    let bo = m.bos.get(&handle)?;
    if bo.flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT == 0
        || bo.size < u64::from(crate::events::SIGNAL_EVENT_LIMIT) * 8
    {
        return None;
    }
    match &bo.backing {
        Backing::Shared(mem) => Some(mem.clone()),
        _ => None,
    }
}
