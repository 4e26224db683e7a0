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
//! [`Buffer::write`]: crate::Buffer::write

use crate::device::KfdShared;
use crate::error::{Error, Result};
use crate::memory::va::{VaRange, PAGE_SIZE};
use kfd_sys::bindings::*;
use kfd_sys::{Driver, DriverExt, MapSource, Node};
use std::sync::atomic::{AtomicU32, Ordering};

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
        let va = VaRange::reserve(driver, PAGE_SIZE, PAGE_SIZE)?;
        let mut args = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va.addr,
            size: PAGE_SIZE,
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
                PAGE_SIZE as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                args.mmap_offset,
            )
        };
        if let Err(e) = mapped {
            page.release(driver);
            return Err(Error::driver("mmap (MMIO remap)")(e));
        }
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

impl KfdShared {
    /// Notes that the CPU may have written VRAM of the GPU with KFD id `gpu_id`.
    pub(crate) fn cpu_wrote_vram(&self, gpu_id: u32) {
        if let Some(i) = self.gpu_index(gpu_id) {
            self.hdp_dirty.fetch_or(1 << (i % 32), Ordering::AcqRel);
        }
    }

    /// Flushes the HDP of every GPU whose VRAM the CPU may have written since the last flush.
    /// One load when there is nothing to do: it runs before every submission.
    #[inline]
    pub(crate) fn flush_hdp_if_written(&self) {
        if self.hdp_dirty.load(Ordering::Acquire) != 0 {
            self.flush_hdp_now();
        }
    }

    #[cold]
    fn flush_hdp_now(&self) {
        let dirty = self.hdp_dirty.swap(0, Ordering::AcqRel);
        for (i, gpu) in self.gpus.iter().enumerate() {
            if dirty & (1 << (i % 32)) != 0 {
                let page = gpu
                    .mmio
                    .get_or_init(|| MmioPage::map(&*self.driver, gpu.info.gpu_id));
                if let Some(page) = page {
                    page.flush();
                }
            }
        }
    }
}

impl crate::Kfd {
    /// Flushes every GPU's HDP write cache, so CPU writes to host-visible VRAM made through a
    /// pointer kept from before the last submission are seen by the next one. kfdrt flushes by
    /// itself after the writes it can see (see the module docs of `memory::hdp`).
    pub fn flush_hdp(&self) -> Result<()> {
        let s = &self.shared;
        s.hdp_dirty.fetch_or(u32::MAX, Ordering::AcqRel);
        s.flush_hdp_if_written();
        if !s.gpus.is_empty()
            && s.gpus
                .iter()
                .all(|g| g.mmio.get().is_none_or(Option::is_none))
        {
            return Err(Error::NoDevice(
                "no GPU has an MMIO-remap page: HDP flushes are not available".into(),
            ));
        }
        Ok(())
    }
}
