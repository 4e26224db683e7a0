//! HDP flushes through SDMA queues, for GPUs the driver gives no MMIO-remap page: an SR-IOV
//! virtual function (amdgpu sets `rmmio_remap.bus_addr` only on a physical function) or a host
//! with pages over 4 KiB (`kfd_ioctl_alloc_memory_of_gpu` answers ENOMEM for `MMIO_REMAP`).
//! There the CPU cannot flush a GPU's HDP itself, so a queue of that GPU does it: ROCr puts its
//! HDP flush packet ahead of each SDMA copy (`BlitSdma::SubmitCommand`); kfdrt does the same in
//! an SDMA queue of the written GPU, and, before work on any other queue, flushes through an
//! SDMA queue of each written GPU and waits for it.
//!
//! The device caches one such queue per GPU, weakly (a queue owns the device, so the device
//! cannot own a queue); each queue that flushed through one keeps it alive ([`HdpQueues`]), so
//! it is made once, not per submission.

use super::sdma_queue::SdmaQueue;
use crate::device::Kfd;
use crate::error::{Error, Result};
use std::sync::{Arc, Mutex};

/// The flush queues a queue keeps alive, one per GPU it flushed.
#[derive(Default)]
pub(crate) struct HdpQueues(Mutex<Vec<(usize, Arc<HdpFlushQueue>)>>);

/// A GPU's SDMA queue for HDP flushes, while queues that flushed through it exist.
pub(crate) struct HdpFlushQueue(SdmaQueue);

impl HdpQueues {
    /// Flushes the HDP of the GPUs in `gpus` (a bit per index, from
    /// `KfdShared::flush_hdp_if_written`) and waits until each is done. On failure the GPUs
    /// not flushed are marked written again, so the next submission tries again.
    pub(crate) fn flush(&self, kfd: &Kfd, gpus: u32) -> Result<()> {
        let mut left = gpus;
        while left != 0 {
            let index = left.trailing_zeros() as usize;
            let r = self
                .queue(kfd, index)
                .and_then(|q| q.0.flush_hdp_and_wait());
            if let Err(e) = r {
                kfd.shared.hdp_still_written(left);
                return Err(e);
            }
            left &= left - 1;
        }
        Ok(())
    }

    /// GPU `index`'s flush queue: the one kept, the device's, or a new one.
    fn queue(&self, kfd: &Kfd, index: usize) -> Result<Arc<HdpFlushQueue>> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, q)) = kept.iter().find(|(i, _)| *i == index) {
            return Ok(q.clone());
        }
        let q = shared_queue(kfd, index)?;
        kept.push((index, q.clone()));
        Ok(q)
    }
}

/// The device's flush queue for GPU `index`, made if no queue keeps one.
fn shared_queue(kfd: &Kfd, index: usize) -> Result<Arc<HdpFlushQueue>> {
    let gpu = kfd
        .gpu(index)
        .expect("HDP flushes are for GPUs of the device, by their own index");
    kfd.shared.slots.get_or_make(index, || {
        let q = gpu.create_sdma_queue().map_err(|e| {
            Error::Unsupported(format!(
                "GPU {:#x} has no MMIO-remap page (a virtual function?) and no SDMA queue to \
                 flush its HDP through: {e}",
                gpu.id()
            ))
        })?;
        Ok(Arc::new(HdpFlushQueue(q)))
    })
}

/// Flushes, before work is published on a queue that keeps `kept`, the HDP of every GPU whose
/// VRAM the CPU wrote since the last flush: through the MMIO-remap page where there is one,
/// through an SDMA queue elsewhere.
#[inline]
pub(crate) fn flush_before_submit(kfd: &Kfd, kept: &HdpQueues) -> Result<()> {
    let pageless = kfd.shared.flush_hdp_if_written();
    if pageless == 0 {
        return Ok(());
    }
    kept.flush(kfd, pageless)
}

impl Kfd {
    /// Flushes every GPU's HDP write cache, so CPU writes to host-visible VRAM made through a
    /// pointer kept from before the last submission are seen by the next one. kfdrt flushes by
    /// itself after the writes it can see (see the module docs of `memory::hdp`). A GPU
    /// without an MMIO-remap page is flushed through an SDMA queue, waiting for it.
    pub fn flush_hdp(&self) -> Result<()> {
        let pageless = self.shared.hdp.flush_all(&self.shared.dev);
        if pageless == 0 {
            return Ok(());
        }
        HdpQueues::default().flush(self, pageless)
    }
}
