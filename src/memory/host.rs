//! Registering caller-owned host memory for GPU access (KFD USERPTR).
//!
//! KFD registers whole pages, so the registration covers the pages the slice touches: bytes of
//! those pages outside the slice become GPU-visible too, and two registrations may not share a
//! page (KFD rejects the overlapping VA). Allocate page-aligned buffers to avoid both.

use super::va::PAGE_SIZE;
use crate::device::Gpu;
use crate::error::{Error, Result};
use kfd_sys::bindings::*;
use kfd_sys::DriverExt;
use std::marker::PhantomData;

/// Host memory registered with a GPU; the borrow keeps the memory alive and unmoved until the
/// registration is dropped (unmapped from the GPU and released).
pub struct HostRegistration<'a> {
    gpu: Gpu,
    handle: u64,
    addr: u64,
    len: u64,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl std::fmt::Debug for HostRegistration<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostRegistration({:#x}+{})", self.addr, self.len)
    }
}

impl Gpu {
    /// Registers `memory` for access by this GPU. Its GPU address is its host address.
    pub fn register_host_memory<'a>(&self, memory: &'a mut [u8]) -> Result<HostRegistration<'a>> {
        if memory.is_empty() {
            return Err(Error::ZeroSize {
                what: "host registration",
            });
        }
        let driver = self.kfd().driver();
        // The driver pins whole pages of its kernel's size.
        let page = driver.page_size().max(PAGE_SIZE);
        let addr = memory.as_ptr() as u64;
        let start = addr & !(page - 1);
        let end = (addr + memory.len() as u64).div_ceil(page) * page;
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: start,
            size: end - start,
            gpu_id: self.id(),
            flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
                | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
                | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT,
            mmap_offset: start,
            handle: 0,
        };
        // SAFETY: the pages belong to `memory`'s allocation, which the returned registration
        // borrows mutably for as long as the GPU may access them.
        unsafe { driver.kfd_ioctl_unchecked(&mut a) }.map_err(Error::ioctl(&a))?;
        let ids = [self.id()];
        let mut m = kfd_ioctl_map_memory_to_gpu_args {
            handle: a.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        // SAFETY: the device array is `ids`, alive across the call.
        if let Err(errno) = unsafe { driver.kfd_ioctl_unchecked(&mut m) } {
            let mut f = kfd_ioctl_free_memory_of_gpu_args { handle: a.handle };
            let _ = driver.kfd_ioctl(&mut f);
            return Err(Error::Driver {
                op: "AMDKFD_IOC_MAP_MEMORY_TO_GPU",
                errno,
            });
        }
        Ok(HostRegistration {
            gpu: self.clone(),
            handle: a.handle,
            addr,
            len: memory.len() as u64,
            _borrow: PhantomData,
        })
    }
}

impl HostRegistration<'_> {
    /// GPU address of the registered slice (equal to its host address).
    pub fn gpu_address(&self) -> u64 {
        self.addr
    }

    /// Length of the registered slice.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the slice is empty (never: empty slices are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for HostRegistration<'_> {
    fn drop(&mut self) {
        let driver = self.gpu.kfd().driver();
        let ids = [self.gpu.id()];
        let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
            handle: self.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        // SAFETY: the device array is `ids`, alive across the call.
        if let Err(e) = unsafe { driver.kfd_ioctl_unchecked(&mut u) } {
            log::warn!("kfdrt: unmapping host registration: {e}");
        }
        let mut f = kfd_ioctl_free_memory_of_gpu_args {
            handle: self.handle,
        };
        if let Err(e) = driver.kfd_ioctl(&mut f) {
            log::warn!("kfdrt: releasing host registration: {e}");
        }
    }
}
