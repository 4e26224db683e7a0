//! dma-buf export and import (`EXPORT_DMABUF`, KFD 1.12; `GET_DMABUF_INFO`, `IMPORT_DMABUF`),
//! the way processes and devices share buffers (IPC, graphics interop).
//!
//! An exported buffer's descriptor is a descriptor of its memory (a `memfd` here, a dma-buf
//! file in the kernel): it can be passed to another process, mapped, and imported on any GPU of
//! the device, and keeps the memory alive while it is open. Import finds the buffer by the
//! file the descriptor refers to, whatever number it has. As in amdgpu, the imported buffer
//! counts against no memory limit again, and gets the exporter's domain with write and execute
//! permission.
//!
//! A render node's GEM object carries the metadata its user-mode driver set, which
//! `GET_DMABUF_INFO` hands on (`amdgpu_amdkfd_get_dmabuf_info`). Not modelled: the memory stays
//! with the emulator (not only with the open descriptors) until the emulator drops.

use crate::memfd::SharedMem;
use crate::Emulator;
use kfd_sys::bindings::*;
use kfd_sys::Errno;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, IntoRawFd};
use std::sync::{Arc, Mutex};

struct Export {
    mem: Arc<SharedMem>,
    gpu_id: u32,
    flags: u32,
    /// Graphics metadata (GEM objects'; none for KFD buffers).
    metadata: Vec<u8>,
}

/// Exported buffers, by the identity (device, inode) of their file.
#[derive(Default)]
pub(crate) struct DmabufTable {
    exports: Mutex<HashMap<(u64, u64), Export>>,
}

fn identity(fd: i32) -> Result<(u64, u64), Errno> {
    // SAFETY: fstat fills a zeroed local; a bad descriptor is an error, not UB.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(Errno::EBADF);
    }
    Ok((st.st_dev, st.st_ino))
}

/// The flags `GET_DMABUF_INFO` reports: the domain, and PUBLIC for CPU-visible VRAM.
fn info_flags(alloc_flags: u32) -> u32 {
    let domain = if alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0 {
        KFD_IOC_ALLOC_MEM_FLAGS_VRAM
    } else {
        KFD_IOC_ALLOC_MEM_FLAGS_GTT
    };
    domain | (alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC)
}

impl DmabufTable {
    fn find<R>(&self, fd: u32, f: impl FnOnce(&Export) -> R) -> Result<R, Errno> {
        let key = identity(fd as i32)?;
        let g = self.exports.lock().unwrap_or_else(|p| p.into_inner());
        // A descriptor of something else is not a dma-buf.
        g.get(&key).map(f).ok_or(Errno::EINVAL)
    }
}

/// `AMDKFD_IOC_EXPORT_DMABUF`.
pub(crate) fn export(emu: &Emulator, a: &mut kfd_ioctl_export_dmabuf_args) -> Result<(), Errno> {
    let (mem, _size, gpu_id, flags) = crate::memory::exportable(emu, a.handle)?;
    let fd = export_memory(
        emu,
        mem,
        gpu_id,
        flags,
        a.flags & libc::O_CLOEXEC as u32 != 0,
    )?;
    a.dmabuf_fd = fd as u32;
    Ok(())
}

/// A new dma-buf descriptor of `mem` (a KFD buffer's or a render node's GEM object's),
/// registered so that `IMPORT_DMABUF` and `GET_DMABUF_INFO` find it.
pub(crate) fn export_memory(
    emu: &Emulator,
    mem: Arc<SharedMem>,
    gpu_id: u32,
    flags: u32,
    cloexec: bool,
) -> Result<i32, Errno> {
    export_memory_with_metadata(emu, mem, gpu_id, flags, Vec::new(), cloexec)
}

/// [`export_memory`] of a GEM object, with the metadata its user-mode driver set.
pub(crate) fn export_memory_with_metadata(
    emu: &Emulator,
    mem: Arc<SharedMem>,
    gpu_id: u32,
    flags: u32,
    metadata: Vec<u8>,
    cloexec: bool,
) -> Result<i32, Errno> {
    let fd = mem.dup(cloexec)?;
    let key = identity(fd.as_raw_fd())?;
    emu.dmabufs
        .exports
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(
            key,
            Export {
                mem,
                gpu_id,
                flags,
                metadata,
            },
        );
    Ok(fd.into_raw_fd())
}

/// `AMDKFD_IOC_GET_DMABUF_INFO`: size, GPU and domain, and the graphics metadata copied to
/// `metadata_ptr` when one is given (EINVAL if `metadata_size` cannot hold it, as
/// `amdgpu_bo_get_metadata` refuses); `metadata_size` answers the metadata's size.
///
/// # Safety
/// A non-null `metadata_ptr` must be writable for `metadata_size` bytes (copy_to_user's
/// contract, which the `Driver::ioctl` caller gives).
pub(crate) unsafe fn info(
    emu: &Emulator,
    a: &mut kfd_ioctl_get_dmabuf_info_args,
) -> Result<(), Errno> {
    let (size, gpu_id, flags, metadata) = emu.dmabufs.find(a.dmabuf_fd, |e| {
        (
            e.mem.len() as u64,
            e.gpu_id,
            info_flags(e.flags),
            e.metadata.clone(),
        )
    })?;
    if a.metadata_ptr != 0 {
        if (a.metadata_size as usize) < metadata.len() {
            return Err(Errno::EINVAL);
        }
        // SAFETY: the caller's contract: `metadata_size` (>= the length) bytes are writable.
        unsafe {
            std::ptr::copy_nonoverlapping(
                metadata.as_ptr(),
                a.metadata_ptr as *mut u8,
                metadata.len(),
            )
        };
    }
    a.size = size;
    a.gpu_id = gpu_id;
    a.flags = flags;
    a.metadata_size = metadata.len() as u32;
    Ok(())
}

/// `AMDKFD_IOC_IMPORT_DMABUF`.
pub(crate) fn import(emu: &Emulator, a: &mut kfd_ioctl_import_dmabuf_args) -> Result<(), Errno> {
    let gpu = emu.gpu(a.gpu_id).ok_or(Errno::EINVAL)?.clone();
    if !gpu.vm_acquired.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Errno::EINVAL);
    }
    let (mem, flags) = emu
        .dmabufs
        .find(a.dmabuf_fd, |e| (e.mem.clone(), e.flags))?;
    let flags =
        info_flags(flags) | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
    a.handle = crate::memory::insert_import(emu, gpu, a.va_addr, mem, flags)?;
    Ok(())
}
