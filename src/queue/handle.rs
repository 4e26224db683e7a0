//! [`KfdQueue`]: a created KFD queue and its doorbell, destroyed when dropped.
//!
//! Every queue type holds one as its *first* field, so the queue is destroyed (the CP stops
//! touching its memory) before the ring and pointer buffers declared after it are freed.

use crate::device::Gpu;
use crate::error::{Error, Result};
use kfd_sys::bindings::*;
use kfd_sys::DriverExt;
use std::sync::atomic::AtomicU64;

pub(crate) struct KfdQueue {
    gpu: Gpu,
    id: u32,
    /// Exceptions recorded before the queue existed (only later ones stop it).
    exception_epoch: usize,
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
        let exception_epoch = gpu.exception_epoch()?;
        // SAFETY: forwarded to the caller.
        unsafe { gpu.kfd().driver().kfd_ioctl_unchecked(args) }.map_err(Error::ioctl(&*args))?;
        let mut q = KfdQueue {
            gpu: gpu.clone(),
            id: args.queue_id,
            exception_epoch,
            doorbell_offset: args.doorbell_offset,
            doorbell: std::ptr::null(),
        };
        log::debug!(
            "kfdrt: queue {} created on GPU {:#x}: type {}, ring {:#x} ({} bytes), priority {}",
            args.queue_id,
            gpu.id(),
            args.queue_type,
            args.ring_base_address,
            args.ring_size,
            args.queue_priority
        );
        // On error `q` drops here and destroys the queue.
        let shared = &gpu.kfd().shared;
        q.doorbell = shared
            .doorbells
            .doorbell(&shared.dev, gpu.index(), args.doorbell_offset)?;
        Ok(q)
    }

    /// KFD's queue id.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// The error a wait on this queue ends with if its GPU faulted or was reset since the queue
    /// was created (no system call; see [`KfdQueue::poll_exceptions`]).
    pub(crate) fn check_exceptions(&self) -> Result<()> {
        // Runs on every submission: no clone of the GPU handle (two atomic read-modify-writes
        // on a count every thread shares).
        self.gpu.kfd().shared.exceptions.check(
            Some(self.gpu.id()),
            self.exception_epoch,
            Some(self.id),
        )
    }

    /// [`KfdQueue::check_exceptions`] after looking at the exception events (a system call),
    /// for loops that poll rather than sleep on events.
    pub(crate) fn poll_exceptions(&self) -> Result<()> {
        self.gpu.poll_exceptions(self.exception_epoch, self.id)
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
        match self.gpu.kfd().driver().kfd_ioctl(&mut d) {
            Ok(_) => log::debug!(
                "kfdrt: queue {} on GPU {:#x} destroyed",
                self.id,
                self.gpu.id()
            ),
            Err(e) => log::warn!("kfdrt: AMDKFD_IOC_DESTROY_QUEUE {}: {e}", self.id),
        }
    }
}
