//! One KFD allocation: the reserve → allocate → CPU-map → GPU-map sequence and its reverse.
//!
//! [`RawAllocation`] is what [`crate::Buffer`], the events page and queue memory are built on.

use super::kind::MemoryKind;
use super::va::{va_alignment, VaRange, PAGE_SIZE};
use crate::error::{Error, Result};
use kfd_sys::bindings::*;
use kfd_sys::{Driver, DriverExt, Errno, MapSource, Node};

/// A live KFD allocation of one GPU.
#[derive(Debug)]
pub(crate) struct RawAllocation {
    /// KFD's handle.
    pub(crate) handle: u64,
    /// The address range (GPU VA = CPU VA); for pageable memory, the host memory itself.
    pub(crate) va: VaRange,
    /// The GPU that owns the allocation.
    pub(crate) gpu_id: u32,
    pub(crate) kind: MemoryKind,
    /// Whether the CPU can access `va`.
    pub(crate) cpu_mapped: bool,
}

bitflags::bitflags! {
    /// What the GPU may do with an allocation besides reading it (its page-table permissions).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub(crate) struct GpuAccess: u8 {
        /// The GPU may write it (`KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE`).
        const WRITE = 1;
        /// The GPU may fetch instructions from it (`KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE`).
        const EXECUTE = 2;
    }
}

/// What to ask KFD for: the memory kind's flags plus the GPU's permissions.
pub(crate) fn alloc_flags(kind: MemoryKind, access: GpuAccess) -> u32 {
    let base = match kind {
        MemoryKind::DeviceLocal => {
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
        }
        MemoryKind::HostVisibleVram => {
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM
                | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC
                | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
        }
        MemoryKind::GttCoherent => KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT,
        MemoryKind::GttUncached => {
            KFD_IOC_ALLOC_MEM_FLAGS_GTT
                | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
                | KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED
        }
        MemoryKind::Pageable => KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT,
    };
    let mut flags = base;
    if access.contains(GpuAccess::WRITE) {
        flags |= KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    }
    if access.contains(GpuAccess::EXECUTE) {
        flags |= KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
    }
    flags
}

impl RawAllocation {
    /// Allocates `size` bytes (rounded up to a page) of `kind` on GPU `gpu_id` with render node
    /// `render_minor`, maps it for the CPU where the kind allows and for `gpu_id`.
    pub(crate) fn new(
        driver: &dyn Driver,
        gpu_id: u32,
        render_minor: u32,
        size: u64,
        kind: MemoryKind,
        access: GpuAccess,
    ) -> Result<RawAllocation> {
        if size == 0 {
            return Err(Error::ZeroSize { what: "allocation" });
        }
        // The driver rounds a buffer up to its page, and maps all of it.
        let page = driver.page_size().max(PAGE_SIZE);
        let len = super::va::align_up(size, page).ok_or(Error::TooLarge {
            what: "allocation bytes (rounded up to a page)",
            requested: size,
            limit: u64::MAX - (page - 1),
        })?;
        let va = VaRange::reserve(driver, len, va_alignment(len))?;
        if kind == MemoryKind::Pageable {
            if let Err(e) = back_with_host_memory(driver, &va) {
                va.release(driver);
                return Err(e);
            }
        }
        let mut args = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va.addr,
            size: len,
            gpu_id,
            flags: alloc_flags(kind, access),
            // USERPTR passes the user address in mmap_offset.
            mmap_offset: if kind == MemoryKind::Pageable {
                va.addr
            } else {
                0
            },
            handle: 0,
        };
        // SAFETY: the VA range is reserved by us for this allocation; for USERPTR it is host
        // memory we own for the allocation's whole life.
        if let Err(errno) = unsafe { driver.kfd_ioctl_unchecked(&mut args) } {
            va.release(driver);
            return Err(if errno == Errno::ENOMEM {
                Error::OutOfMemory {
                    kind: kind.name(),
                    gpu_id,
                    requested: len,
                }
            } else {
                Error::Driver {
                    op: "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
                    errno,
                }
            });
        }
        let mut alloc = RawAllocation {
            handle: args.handle,
            va,
            gpu_id,
            kind,
            cpu_mapped: false,
        };
        if kind.host_accessible() && kind != MemoryKind::Pageable {
            // SAFETY: MAP_FIXED over our own reservation, at the offset KFD returned for this BO.
            let mapped = unsafe {
                driver.mmap(
                    MapSource::File(Node::Render(render_minor)),
                    alloc.va.addr as *mut _,
                    len as usize,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_FIXED,
                    args.mmap_offset,
                )
            };
            if let Err(errno) = mapped {
                alloc.release(driver, &[]);
                return Err(Error::Driver {
                    op: "mmap (render node)",
                    errno,
                });
            }
        }
        crate::device::fork::dont_fork(alloc.va.addr as *mut _, alloc.va.len as usize);
        alloc.cpu_mapped = kind.host_accessible();
        if let Err(e) = alloc.map_to_gpus(driver, &[gpu_id]) {
            alloc.release(driver, &[]);
            return Err(e);
        }
        log::debug!(
            "kfdrt: allocated {len:#x} bytes of {} on GPU {gpu_id:#x} at {:#x} (handle {:#x})",
            kind.name(),
            alloc.va.addr,
            alloc.handle
        );
        Ok(alloc)
    }

    /// Imports dma-buf `fd` (`size` bytes, already queried) on GPU `gpu_id` at a new address
    /// range and maps it for that GPU. The CPU gets no mapping: KFD gives an imported buffer no
    /// render-node offset (map the descriptor itself to reach it from the CPU).
    pub(crate) fn import_dmabuf(
        driver: &dyn Driver,
        gpu_id: u32,
        fd: i32,
        size: u64,
        kind: MemoryKind,
    ) -> Result<RawAllocation> {
        let va = VaRange::reserve(driver, size, va_alignment(size))?;
        let mut args = kfd_ioctl_import_dmabuf_args {
            va_addr: va.addr,
            handle: 0,
            gpu_id,
            dmabuf_fd: u32::try_from(fd).map_err(|_| Error::BadDescriptor {
                what: "dma-buf",
                fd,
            })?,
        };
        // SAFETY: the VA range is reserved by us for this buffer.
        if let Err(e) = unsafe { driver.kfd_ioctl_unchecked(&mut args) } {
            va.release(driver);
            return Err(Error::ioctl(&args)(e));
        }
        let alloc = RawAllocation {
            handle: args.handle,
            va,
            gpu_id,
            kind,
            cpu_mapped: false,
        };
        if let Err(e) = alloc.map_to_gpus(driver, &[gpu_id]) {
            alloc.release(driver, &[]);
            return Err(e);
        }
        Ok(alloc)
    }

    /// The CPU pointer, when the CPU can access the memory.
    pub(crate) fn cpu_ptr(&self) -> Option<*mut u8> {
        self.cpu_mapped.then_some(self.va.addr as *mut u8)
    }

    /// `MAP_MEMORY_TO_GPU` for `gpu_ids`.
    pub(crate) fn map_to_gpus(&self, driver: &dyn Driver, gpu_ids: &[u32]) -> Result<()> {
        let mut args = kfd_ioctl_map_memory_to_gpu_args {
            handle: self.handle,
            device_ids_array_ptr: gpu_ids.as_ptr() as u64,
            n_devices: u32::try_from(gpu_ids.len()).map_err(|_| Error::TooLarge {
                what: "GPUs in one mapping request",
                requested: gpu_ids.len() as u64,
                limit: u64::from(u32::MAX),
            })?,
            n_success: 0,
        };
        // SAFETY: the device array is `gpu_ids`, alive across the call, `n_devices` long.
        let r = unsafe { driver.kfd_ioctl_unchecked(&mut args) };
        if let Err(e) = r {
            // The driver maps device by device and keeps what it did before the failure
            // (`n_success` of them): undo those, so the call maps all or nothing.
            let done = (args.n_success as usize).min(gpu_ids.len());
            if done > 0 {
                if let Err(u) = self.unmap_from_gpus(driver, &gpu_ids[..done]) {
                    log::warn!("kfdrt: undoing a partial GPU mapping: {u}");
                }
            }
            return Err(Error::ioctl(&args)(e));
        }
        Ok(())
    }

    /// `UNMAP_MEMORY_FROM_GPU` for `gpu_ids`.
    pub(crate) fn unmap_from_gpus(&self, driver: &dyn Driver, gpu_ids: &[u32]) -> Result<()> {
        let mut args = kfd_ioctl_unmap_memory_from_gpu_args {
            handle: self.handle,
            device_ids_array_ptr: gpu_ids.as_ptr() as u64,
            n_devices: u32::try_from(gpu_ids.len()).map_err(|_| Error::TooLarge {
                what: "GPUs in one mapping request",
                requested: gpu_ids.len() as u64,
                limit: u64::from(u32::MAX),
            })?,
            n_success: 0,
        };
        // SAFETY: the device array is `gpu_ids`, alive across the call, `n_devices` long.
        unsafe { driver.kfd_ioctl_unchecked(&mut args) }
            .map(drop)
            .map_err(Error::ioctl(&args))
    }

    /// Unmaps from `mapped_gpus`, replaces the CPU mapping with an inaccessible reservation,
    /// frees, and only then gives the address range back. The range stays reserved until the
    /// buffer is gone from the GPU's address space: released earlier, another thread could
    /// reserve the same addresses and have its allocation refused (EINVAL, the VA is still in
    /// use) or, worse, mapped where the old buffer was. (Pageable memory keeps its host pages
    /// until the free, since KFD holds them until then.)
    pub(crate) fn release(self, driver: &dyn Driver, mapped_gpus: &[u32]) {
        log::debug!(
            "kfdrt: freeing {:#x} bytes at {:#x} (handle {:#x}, mapped on {mapped_gpus:x?})",
            self.va.len,
            self.va.addr,
            self.handle
        );
        if !mapped_gpus.is_empty() {
            if let Err(e) = self.unmap_from_gpus(driver, mapped_gpus) {
                log::warn!("kfdrt: unmapping {:#x} at free: {e}", self.va.addr);
            }
        }
        if self.cpu_mapped && self.kind != MemoryKind::Pageable {
            // SAFETY: MAP_FIXED over this allocation's own range, which nothing uses any more.
            let r = unsafe {
                driver.mmap(
                    MapSource::Anonymous,
                    self.va.addr as *mut _,
                    self.va.len as usize,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_NORESERVE | libc::MAP_FIXED,
                    0,
                )
            };
            if let Err(e) = r {
                log::warn!(
                    "kfdrt: dropping the CPU mapping of {:#x}: {e}",
                    self.va.addr
                );
            }
        }
        let mut args = kfd_ioctl_free_memory_of_gpu_args {
            handle: self.handle,
        };
        if let Err(e) = driver.kfd_ioctl(&mut args) {
            log::warn!(
                "kfdrt: AMDKFD_IOC_FREE_MEMORY_OF_GPU {:#x}: {e}",
                self.handle
            );
        }
        self.va.release(driver);
    }
}

fn back_with_host_memory(driver: &dyn Driver, va: &VaRange) -> Result<()> {
    // SAFETY: MAP_FIXED over our own fresh reservation.
    unsafe {
        driver.mmap(
            MapSource::Anonymous,
            va.addr as *mut _,
            va.len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_FIXED,
            0,
        )
    }
    .map_err(Error::driver("mmap (host memory)"))?;
    crate::device::fork::dont_fork(va.addr as *mut _, va.len as usize);
    if va.len >= super::va::HUGE_PAGE_SIZE {
        // SAFETY: advisory only, on memory we own; failure (no THP) changes nothing observable.
        unsafe { libc::madvise(va.addr as *mut _, va.len as usize, libc::MADV_HUGEPAGE) };
    }
    Ok(())
}
