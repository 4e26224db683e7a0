//! Doorbell pages: each GPU's 8 KiB of doorbells for this process, mapped once from the KFD fd.
//!
//! KFD returns each queue's `doorbell_offset` as the GPU's doorbell mmap offset plus the byte
//! offset of the queue's 8-byte doorbell inside the 8 KiB. Both 4 KiB pages are mapped, because
//! a queue's doorbell can be on the second one.

use crate::device::KfdShared;
use crate::error::{Error, Result};
use kfd_sys::{MapSource, Node};
use std::sync::atomic::AtomicU64;

/// Bytes of doorbells per GPU per process (1024 doorbells of 8 bytes, two pages).
pub const DOORBELL_PAGES_SIZE: u64 = 8192;

/// A GPU's mapped doorbell pages (unmapped when the process's KFD closes).
#[derive(Debug)]
pub(crate) struct DoorbellPages {
    pub(crate) mmap_offset: u64,
    pub(crate) addr: u64,
}

/// Returns a pointer to the doorbell at `doorbell_offset` of GPU `gpu_index`, mapping the GPU's
/// doorbell pages on first use.
pub(crate) fn doorbell_ptr(
    shared: &KfdShared,
    gpu_index: usize,
    doorbell_offset: u64,
) -> Result<*const AtomicU64> {
    let base_offset = doorbell_offset & !(DOORBELL_PAGES_SIZE - 1);
    let within = doorbell_offset & (DOORBELL_PAGES_SIZE - 1);
    if within % 8 != 0 {
        return Err(Error::UnexpectedDriverAnswer {
            request: "AMDKFD_IOC_CREATE_QUEUE",
            what: format!("doorbell offset {doorbell_offset:#x} is not 8-byte aligned"),
        });
    }
    let gpu = shared
        .gpus
        .get(gpu_index)
        .ok_or_else(|| Error::Internal(format!("no GPU with index {gpu_index}")))?;
    let mut pages = gpu.doorbells.lock().unwrap_or_else(|p| p.into_inner());
    let pages = match &mut *pages {
        Some(p) if p.mmap_offset == base_offset => p,
        Some(p) => {
            return Err(Error::UnexpectedDriverAnswer {
                request: "AMDKFD_IOC_CREATE_QUEUE",
                what: format!(
                    "doorbell offset {doorbell_offset:#x} is outside the GPU's doorbell pages at {:#x}",
                    p.mmap_offset
                ),
            });
        }
        slot @ None => {
            // SAFETY: a new shared mapping chosen by the kernel (no MAP_FIXED) of the KFD fd.
            let addr = unsafe {
                shared.driver.mmap(
                    MapSource::File(Node::Kfd),
                    std::ptr::null_mut(),
                    DOORBELL_PAGES_SIZE as usize,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    base_offset,
                )
            }
            .map_err(Error::driver("mmap (doorbell pages)"))?;
            slot.insert(DoorbellPages {
                mmap_offset: base_offset,
                addr: addr as u64,
            })
        }
    };
    Ok((pages.addr + within) as *const AtomicU64)
}
