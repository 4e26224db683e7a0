//! [`KfdQueue`]: a created KFD queue and its doorbell, destroyed when dropped.
//!
//! Every queue type holds one as its *first* field, so the queue is destroyed (the CP stops
//! touching its memory) before the ring and pointer buffers declared after it are freed.

use super::doorbell::doorbell_ptr;
use crate::device::Gpu;
use crate::error::{Error, Result};
use kfd_sys::bindings::*;
use kfd_sys::DriverExt;
use std::sync::atomic::AtomicU64;

pub(crate) struct KfdQueue {
    gpu: Gpu,
    id: u32,
    doorbell_offset: u64,
    doorbell: *const AtomicU64,
}

// SAFETY: the doorbell pointer refers to the GPU's doorbell pages, mapped for as long as the Kfd
// (kept alive by `gpu`) lives; doorbells are written atomically.
unsafe impl Send for KfdQueue {}
// SAFETY: as above.
unsafe impl Sync for KfdQueue {}

impl KfdQueue {
    /// `CREATE_QUEUE` with `args` (its `gpu_id` set to `gpu`), then maps the doorbell.
    ///
    /// # Safety
    /// Every address in `args` (ring, pointers, EOP and CWSR areas) must stay valid until the
    /// returned handle is dropped: the command processor reads and writes them.
    pub(crate) unsafe fn create(
        gpu: &Gpu,
        args: &mut kfd_ioctl_create_queue_args,
    ) -> Result<KfdQueue> {
        args.gpu_id = gpu.id();
        // SAFETY: forwarded to the caller.
        unsafe { gpu.kfd().driver().kfd_ioctl_unchecked(args) }
            .map_err(Error::driver("AMDKFD_IOC_CREATE_QUEUE"))?;
        let mut q = KfdQueue {
            gpu: gpu.clone(),
            id: args.queue_id,
            doorbell_offset: args.doorbell_offset,
            doorbell: std::ptr::null(),
        };
        // On error `q` drops here and destroys the queue.
        q.doorbell = doorbell_ptr(&gpu.kfd().shared, gpu.index(), args.doorbell_offset)?;
        Ok(q)
    }

    /// KFD's queue id.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// The doorbell offset KFD returned.
    pub(crate) fn doorbell_offset(&self) -> u64 {
        self.doorbell_offset
    }

    /// The queue's doorbell.
    pub(crate) fn doorbell(&self) -> *const AtomicU64 {
        self.doorbell
    }
}

impl Drop for KfdQueue {
    fn drop(&mut self) {
        let mut d = kfd_ioctl_destroy_queue_args {
            queue_id: self.id,
            pad: 0,
        };
        if let Err(e) = self.gpu.kfd().driver().kfd_ioctl(&mut d) {
            log::warn!("kfdrt: AMDKFD_IOC_DESTROY_QUEUE {}: {e}", self.id);
        }
    }
}
