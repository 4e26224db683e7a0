//! Sharing buffers as dma-buf descriptors: [`Buffer::export_dmabuf`] (KFD 1.12) and
//! [`Gpu::import_dmabuf`], the way ROCm shares memory between processes (IPC handles) and with
//! graphics APIs.

use super::buffer::{Allocation, Backing};
use super::raw::RawAllocation;
use super::MemoryKind;
use crate::error::{Error, Result};
use crate::{Buffer, Gpu};
use kfd_sys::bindings::*;
use kfd_sys::{DriverExt, Feature};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Mutex;

impl Buffer {
    /// Exports the buffer as a dma-buf descriptor (close-on-exec), which another process or
    /// another device can import with [`Gpu::import_dmabuf`]; the memory lives while any
    /// descriptor or importer does. Only a dedicated VRAM or GTT allocation can be exported
    /// (allocate with [`crate::AllocOptions::dedicated`]): a sub-allocation shares its KFD
    /// buffer with others, and pageable memory is the process's own.
    pub fn export_dmabuf(&self) -> Result<OwnedFd> {
        self.kfd().shared.dev.require(Feature::DmabufExport)?;
        let raw = match self.backing() {
            Backing::Whole(r) if r.kind != MemoryKind::Pageable => r,
            Backing::Whole(_) => {
                return Err(Error::NotExportable {
                    reason: "pageable memory is the process's own",
                })
            }
            Backing::Sub(..) => {
                return Err(Error::NotExportable {
                    reason: "a sub-allocated buffer shares its KFD buffer: allocate it dedicated",
                })
            }
        };
        let mut args = kfd_ioctl_export_dmabuf_args {
            handle: raw.handle,
            flags: libc::O_CLOEXEC as u32,
            dmabuf_fd: 0,
        };
        self.kfd()
            .driver()
            .kfd_ioctl(&mut args)
            .map_err(Error::ioctl(&args))?;
        let fd = i32::try_from(args.dmabuf_fd).map_err(|_| Error::UnexpectedDriverAnswer {
            request: "AMDKFD_IOC_EXPORT_DMABUF",
            what: format!("descriptor {}", args.dmabuf_fd),
        })?;
        // SAFETY: the driver just created this descriptor for us, and nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

impl Gpu {
    /// Imports a dma-buf (from [`Buffer::export_dmabuf`], of this process or another) as a
    /// buffer mapped on this GPU. The GPU sees the exporter's memory; the CPU does not through
    /// this buffer (KFD gives imported buffers no CPU mapping: [`Buffer::as_ptr`] is `None`).
    pub fn import_dmabuf(&self, fd: BorrowedFd<'_>) -> Result<Buffer> {
        let driver = self.kfd().driver();
        let mut info = kfd_ioctl_get_dmabuf_info_args {
            dmabuf_fd: u32::try_from(fd.as_raw_fd()).map_err(|_| Error::BadDescriptor {
                what: "dma-buf",
                fd: fd.as_raw_fd(),
            })?,
            ..Default::default()
        };
        // SAFETY: no metadata buffer is passed (pointer 0, size 0).
        unsafe { driver.kfd_ioctl_unchecked(&mut info) }.map_err(Error::ioctl(&info))?;
        let kind = if info.flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM == 0 {
            MemoryKind::GttCoherent
        } else if info.flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC != 0 {
            MemoryKind::HostVisibleVram
        } else {
            MemoryKind::DeviceLocal
        };
        if info.size == 0 {
            return Err(Error::UnexpectedDriverAnswer {
                request: "AMDKFD_IOC_GET_DMABUF_INFO",
                what: "a dma-buf of 0 bytes".into(),
            });
        }
        let raw =
            RawAllocation::import_dmabuf(&**driver, self.id(), fd.as_raw_fd(), info.size, kind)?;
        let shared = &self.kfd().shared;
        Ok(Buffer::new(Allocation {
            lease: shared.suballoc.lease_for_this_thread(self.kfd()),
            backing: Some(Backing::Whole(raw)),
            size: info.size,
            executable: false,
            peers: Mutex::new(Vec::new()),
        }))
    }
}
