//! Doorbell pages: each GPU's 8 KiB of doorbells for this process, mapped once from the KFD fd.
//!
//! KFD returns each queue's `doorbell_offset` as the GPU's doorbell mmap offset plus the byte
//! offset of the queue's 8-byte doorbell inside the slice. Both 4 KiB pages are mapped, because
//! a queue's doorbell can be on the second one; on a kernel of larger pages the slice is one
//! page (`kfd_doorbell_process_slice`: `roundup(8 KiB, PAGE_SIZE)`), and mapped whole.

use crate::device::context::DeviceContext;
use crate::error::{Error, Result};
use kfd_sys::{Driver, MapSource, Node};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

/// Bytes of doorbells per GPU per process (1024 doorbells of 8 bytes, two 4 KiB pages).
pub const DOORBELL_PAGES_SIZE: u64 = 8192;

/// The doorbell slice KFD maps on a kernel of `page_size` pages.
pub(crate) fn doorbell_slice(page_size: u64) -> u64 {
    DOORBELL_PAGES_SIZE.next_multiple_of(page_size.max(1))
}

/// A GPU's mapped doorbell pages.
#[derive(Debug)]
struct DoorbellPages {
    mmap_offset: u64,
    addr: u64,
}

/// Every GPU's doorbell pages, each mapped at its first queue and unmapped when the device
/// closes (no queue is left then: queues keep the device alive).
pub(crate) struct DoorbellTable {
    gpus: Vec<Mutex<Option<DoorbellPages>>>,
}

impl DoorbellTable {
    /// A table for `gpus` GPUs, nothing mapped.
    pub(crate) fn new(gpus: usize) -> DoorbellTable {
        DoorbellTable {
            gpus: (0..gpus).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Returns a pointer to the doorbell at `doorbell_offset` (as `CREATE_QUEUE` returned it) of
    /// GPU `gpu_index`, mapping the GPU's doorbell pages on first use.
    pub(crate) fn doorbell(
        &self,
        dev: &DeviceContext,
        gpu_index: usize,
        doorbell_offset: u64,
    ) -> Result<*const AtomicU64> {
        let slice = doorbell_slice(dev.driver().page_size());
        let base_offset = doorbell_offset & !(slice - 1);
        let within = doorbell_offset & (slice - 1);
        if within % 8 != 0 {
            return Err(Error::UnexpectedDriverAnswer {
                request: "AMDKFD_IOC_CREATE_QUEUE",
                what: format!("doorbell offset {doorbell_offset:#x} is not 8-byte aligned"),
            });
        }
        let slot = self
            .gpus
            .get(gpu_index)
            .expect("queues are created on GPUs of the device, by their own index");
        let mut pages = slot.lock().unwrap_or_else(|p| p.into_inner());
        let pages = match &mut *pages {
            Some(p) if p.mmap_offset == base_offset => p,
            Some(p) => {
                return Err(Error::UnexpectedDriverAnswer {
                    request: "AMDKFD_IOC_CREATE_QUEUE",
                    what: format!(
                        "doorbell offset {doorbell_offset:#x} is outside the GPU's doorbell \
                         pages at {:#x}",
                        p.mmap_offset
                    ),
                });
            }
            slot @ None => {
                // SAFETY: a new shared mapping chosen by the kernel (no MAP_FIXED) of the KFD fd.
                let addr = unsafe {
                    dev.driver().mmap(
                        MapSource::File(Node::Kfd),
                        std::ptr::null_mut(),
                        slice as usize,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_SHARED,
                        base_offset,
                    )
                }
                .map_err(Error::driver("mmap (doorbell pages)"))?;
                crate::device::fork::dont_fork(addr, slice as usize);
                slot.insert(DoorbellPages {
                    mmap_offset: base_offset,
                    addr: addr as u64,
                })
            }
        };
        Ok((pages.addr + within) as *const AtomicU64)
    }

    /// Unmaps every GPU's pages (at device close, when no queue is left).
    pub(crate) fn release(&mut self, driver: &dyn Driver) {
        let slice = doorbell_slice(driver.page_size());
        for slot in &mut self.gpus {
            let pages = slot.get_mut().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(pages) = pages {
                // SAFETY: kfdrt mapped these pages, and no queue (nothing) uses them any more.
                let unmapped = unsafe { driver.munmap(pages.addr as *mut _, slice as usize) };
                if let Err(e) = unmapped {
                    log::warn!("kfdrt: unmapping doorbells: {e}");
                }
            }
        }
    }
}
