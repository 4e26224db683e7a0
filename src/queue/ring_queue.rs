//! What a ring-buffer queue (PM4, SDMA) is made of, set up once for both: the ring and a page
//! of read/write pointers, each a whole KFD allocation of its own (KFD checks it: a fresh
//! queue never inherits another queue's pointers or ring), the pointers zeroed before the
//! engine starts from them, the KFD queue over them, and the probe that describes the queue in
//! hang reports.

use super::cwsr::queue_buffer;
use super::handle::KfdQueue;
use super::ring_probe;
use crate::device::Gpu;
use crate::error::report::QueueKind;
use crate::error::Result;
use crate::memory::{Buffer, MemoryKind};
use kfd_sys::bindings::*;
use std::sync::Arc;

/// Where in the pointer page the engine reads and writes its pointers.
#[derive(Clone, Copy)]
pub(crate) struct PointerLayout {
    /// Byte offset of the read pointer (the engine writes it).
    pub(crate) rptr: u64,
    /// Byte offset of the write pointer (the runtime writes it).
    pub(crate) wptr: u64,
}

/// A created ring-buffer queue's memory and its KFD queue.
pub(crate) struct RingQueue {
    pub(crate) handle: KfdQueue,
    pub(crate) ring: Arc<Buffer>,
    pub(crate) pointers: Arc<Buffer>,
    /// The CPU addresses of the ring and of the pointer page.
    pub(crate) ring_ptr: *mut u8,
    pub(crate) pointers_ptr: *mut u8,
}

/// Creates a `kind` queue with a ring of `ring_bytes` and its pointers at `layout` on `gpu`;
/// `fill` sets the request's fields of the queue kind (type, priority, engine, EOP and CWSR
/// areas, which the caller owns and keeps as long as the queue). `decode` reads the ring's
/// packets for hang reports.
///
/// # Safety
///
/// Every address `fill` puts into the request must be memory that outlives the returned
/// queue's KFD queue (the caller destroys the queue first).
pub(crate) unsafe fn create<P: std::fmt::Debug, E: std::fmt::Debug>(
    gpu: &Gpu,
    kind: QueueKind,
    ring_bytes: u32,
    layout: PointerLayout,
    fill: impl FnOnce(&mut kfd_ioctl_create_queue_args),
    decode: impl Fn(&[u32]) -> std::result::Result<(P, usize), E> + Send + Sync + 'static,
) -> Result<RingQueue> {
    let ring = queue_buffer(gpu, u64::from(ring_bytes), MemoryKind::GttCoherent)?;
    let pointers = queue_buffer(gpu, 4096, MemoryKind::GttUncached)?;
    // The engine starts from the pointers in memory: both at zero, whatever the driver gave.
    pointers.write(0, &[0u8; 128])?;
    let mut args = kfd_ioctl_create_queue_args {
        ring_base_address: ring.gpu_address(),
        ring_size: ring_bytes,
        read_pointer_address: pointers.gpu_address() + layout.rptr,
        write_pointer_address: pointers.gpu_address() + layout.wptr,
        gpu_id: gpu.id(),
        queue_percentage: KFD_MAX_QUEUE_PERCENTAGE,
        ..Default::default()
    };
    fill(&mut args);
    // SAFETY: the ring and the pointer page are returned to the caller, who keeps them as long
    // as the KFD queue; the caller vouches for what `fill` added.
    let handle = unsafe { KfdQueue::create(gpu, &mut args) }?;
    // Both are GTT, which the CPU always maps.
    let ring_ptr = ring
        .as_ptr()
        .expect("a queue's ring is GTT, which the CPU maps");
    let pointers_ptr = pointers
        .as_ptr()
        .expect("a queue's pointer page is GTT, which the CPU maps");
    let (ring, pointers) = (Arc::new(ring), Arc::new(pointers));
    ring_probe::register(
        gpu,
        kind,
        handle.id(),
        &ring,
        &pointers,
        layout.rptr,
        layout.wptr,
        decode,
    );
    Ok(RingQueue {
        handle,
        ring,
        pointers,
        ring_ptr,
        pointers_ptr,
    })
}
