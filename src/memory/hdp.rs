//! HDP flushes: CPU writes to host-visible VRAM go through the PCIe BAR into the GPU's host data
//! path (HDP), whose write cache holds them until a flush; a kernel or copy that reads the memory
//! before then may see old data. kfdrt remembers which GPUs' VRAM the CPU may have written
//! ([`Buffer::write`], and any pointer or mutable slice it hands out) and, before the next
//! submission to any queue, flushes those GPUs' HDP through their MMIO-remap page, a store to
//! `HDP_MEM_FLUSH_CNTL` and a read back to post it, as HIP and kfdtest do.
//!
//! Writes through a pointer kept from before a submission are not seen: call
//! [`crate::Kfd::flush_hdp`] after them.
//!
//! Where the driver gives no remap page (an SR-IOV virtual function; a host with pages over
//! 4 KiB: `kfd_ioctl_alloc_memory_of_gpu` answers ENOMEM), the flush goes through an SDMA queue
//! instead, as ROCr's SDMA copies flush (`BlitSdma::BuildHdpFlushCommand`): see
//! `queue::hdp_queue`.
//!
//! [`Buffer::write`]: crate::Buffer::write

use crate::device::context::DeviceContext;
use crate::error::{Error, Result};
use crate::memory::va::{VaRange, PAGE_SIZE};
use kfd_sys::bindings::*;
use kfd_sys::{Driver, DriverExt, MapSource, Node};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// `KFD_MMIO_REMAP_HDP_MEM_FLUSH_CNTL`: the byte offset of the flush register in the page.
const HDP_MEM_FLUSH_CNTL: usize = 0;

/// A GPU's MMIO-remap page, mapped for the CPU at the VA it was allocated at.
pub(crate) struct MmioPage {
    handle: u64,
    va: VaRange,
}

// SAFETY: the page is a device mapping any thread may store to; stores are atomic.
unsafe impl Send for MmioPage {}
// SAFETY: as above.
unsafe impl Sync for MmioPage {}

impl MmioPage {
    /// Allocates and maps GPU `gpu_id`'s MMIO-remap page (`KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP`,
    /// mapped through `/dev/kfd`), or `None` (logged) where the driver has none to give:
    /// no flush is possible there.
    pub(crate) fn map(driver: &dyn Driver, gpu_id: u32) -> Option<MmioPage> {
        match Self::try_map(driver, gpu_id) {
            Ok(p) => Some(p),
            Err(e) => {
                log::debug!("kfdrt: GPU {gpu_id:#x} has no MMIO-remap page ({e}): no HDP flushes");
                None
            }
        }
    }

    fn try_map(driver: &dyn Driver, gpu_id: u32) -> Result<MmioPage> {
        // One kernel page (the driver has none to give above 4 KiB).
        let page = driver.page_size().max(PAGE_SIZE);
        let va = VaRange::reserve(driver, page, page)?;
        let mut args = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va.addr,
            size: page,
            gpu_id,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP
                | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
                | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT,
            ..Default::default()
        };
        // SAFETY: the VA range is reserved by us for this allocation.
        if let Err(e) = unsafe { driver.kfd_ioctl_unchecked(&mut args) } {
            va.release(driver);
            return Err(Error::ioctl(&args)(e));
        }
        let page = MmioPage {
            handle: args.handle,
            va,
        };
        // SAFETY: MAP_FIXED over our own reservation, at the KFD offset the driver returned for
        // this page.
        let mapped = unsafe {
            driver.mmap(
                MapSource::File(Node::Kfd),
                page.va.addr as *mut _,
                page.va.len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                args.mmap_offset,
            )
        };
        if let Err(e) = mapped {
            page.release(driver);
            return Err(Error::driver("mmap (MMIO remap)")(e));
        }
        crate::device::fork::dont_fork(page.va.addr as *mut _, page.va.len as usize);
        Ok(page)
    }

    /// Flushes the HDP: a store to `HDP_MEM_FLUSH_CNTL`, then a read back so the store has
    /// reached the GPU before anything that follows (a doorbell) does.
    pub(crate) fn flush(&self) {
        // SAFETY: the register is the first word of the mapped page, 4-byte aligned; the page
        // stays mapped while `self` lives.
        let reg = unsafe { &*((self.va.addr as usize + HDP_MEM_FLUSH_CNTL) as *const AtomicU32) };
        reg.store(1, Ordering::SeqCst);
        let _ = reg.load(Ordering::SeqCst);
    }

    pub(crate) fn release(self, driver: &dyn Driver) {
        self.va.release(driver);
        let mut args = kfd_ioctl_free_memory_of_gpu_args {
            handle: self.handle,
        };
        if let Err(e) = driver.kfd_ioctl(&mut args) {
            log::warn!("kfdrt: freeing an MMIO-remap page: {e}");
        }
    }
}

/// Each GPU's HDP flush: its MMIO-remap page, mapped at the first flush, and whether the CPU
/// may have written its VRAM since the last one.
pub(crate) struct HdpFlusher {
    /// Per GPU: the page, `None` where the driver gives none.
    pages: Vec<OnceLock<Option<MmioPage>>>,
    /// GPUs (bit per index, modulo 32) whose VRAM the CPU may have written since their last
    /// flush.
    dirty: AtomicU32,
}

impl HdpFlusher {
    /// A flusher for `gpus` GPUs, nothing mapped and nothing to flush.
    pub(crate) fn new(gpus: usize) -> HdpFlusher {
        HdpFlusher {
            pages: (0..gpus).map(|_| OnceLock::new()).collect(),
            dirty: AtomicU32::new(0),
        }
    }

    /// Notes that the CPU may have written VRAM of the GPU with index `gpu_index`.
    pub(crate) fn cpu_wrote_vram(&self, gpu_index: usize) {
        self.dirty.fetch_or(1 << (gpu_index % 32), Ordering::AcqRel);
    }

    /// Flushes the HDP of every GPU whose VRAM the CPU may have written since the last flush.
    /// One load when there is nothing to do: it runs before every submission. Returns the GPUs
    /// (a bit per index) that were written but have no page to flush through: the caller
    /// flushes them through a queue, or marks them written again.
    #[inline]
    pub(crate) fn flush_if_written(&self, dev: &DeviceContext) -> u32 {
        if self.dirty.load(Ordering::Acquire) != 0 {
            self.flush_now(dev)
        } else {
            0
        }
    }

    #[cold]
    fn flush_now(&self, dev: &DeviceContext) -> u32 {
        let dirty = self.dirty.swap(0, Ordering::AcqRel);
        let mut pageless = 0;
        for (i, (gpu, page)) in dev.gpus.iter().zip(&self.pages).enumerate() {
            let bit = 1 << (i % 32);
            if dirty & bit != 0 {
                let page = page.get_or_init(|| MmioPage::map(dev.driver(), gpu.info.gpu_id));
                match page {
                    Some(page) => page.flush(),
                    None => pageless |= bit,
                }
            }
        }
        pageless
    }

    /// Flushes every GPU that has a page; returns those that have none.
    pub(crate) fn flush_all(&self, dev: &DeviceContext) -> u32 {
        self.dirty.fetch_or(u32::MAX, Ordering::AcqRel);
        self.flush_if_written(dev)
    }

    /// Unmaps the pages (at device close).
    pub(crate) fn release(&mut self, driver: &dyn Driver) {
        for page in &mut self.pages {
            if let Some(page) = page.take().flatten() {
                page.release(driver);
            }
        }
    }
}
