//! An AQL queue's scratch (private segment memory), set up as ROCr does it.
//!
//! A queue starts with none. When the CP reaches a dispatch whose `private_segment_size` is
//! more than the queue's scratch serves, it stops before it and asks through the queue's
//! inactive signal ([`aql::queue_error::INSUFFICIENT_SCRATCH_WAVE64`]). kfdrt then allocates a
//! backing sized for every wave slot of the GPU (`compute units` rounded to the shader engines,
//! times `max_slots_scratch_cu`), describes it in `amd_queue_t` and stores 0 to the signal, and
//! the CP carries on. A backing over [`SINGLE_LIMIT`] is sized for the one dispatch only and
//! lent to it (`QUEUE_PROPERTY_USE_SCRATCH_ONCE`); the CP gives it back after that dispatch
//! ([`aql::queue_error::SCRATCH_RECLAIM`]).
//!
//! Requests are served by a thread of the queue's own, started with its first dispatch that
//! uses scratch and sleeping on the inactive signal's interrupt, so a program waiting on a
//! signal of another queue (or on none) never leaves one stalled; every wait on the queue serves
//! them too. [`crate::AqlQueueOptions::with_scratch`] sizes the scratch when the queue is made,
//! for programs that know their kernels' needs.

use super::{AqlQueue, AqlQueueShared};
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::memory::Buffer;
use crate::queue::scratch_memory::{allocate, SINGLE_LIMIT};
use crate::signal::{Condition, Signal};
use aql::queue_error::{
    is_scratch_request, INSUFFICIENT_SCRATCH_WAVE32, INSUFFICIENT_SCRATCH_WAVE64,
    INVALID_ALLOCATION, SCRATCH_RECLAIM,
};
use aql::scratch::ScratchLayout;
use aql::{queue_offsets, AmdQueue};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The scratch state of one queue.
#[derive(Default)]
pub(super) struct QueueScratch {
    backing: Mutex<Option<Buffer>>,
    service: Mutex<Option<Service>>,
}

/// The thread serving a queue's requests.
struct Service {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

/// A pointer to a `u32` field of the `amd_queue_t`.
fn field(q: *const AmdQueue, offset: u64) -> *mut u32 {
    (q as usize + offset as usize) as *mut u32
}

/// Writes `s` into the `amd_queue_t` at `q` (the CP is stopped waiting for the runtime, or the
/// queue does not exist yet).
fn describe(q: *const AmdQueue, s: &ScratchLayout, lent: bool) {
    let resource = s.resource();
    // SAFETY: `q` is the live `amd_queue_t` page of a queue being set up or served; the CP
    // reads these fields only when it starts a dispatch, and it is stopped until the signal
    // store that follows (a release store, which orders these writes before it).
    unsafe {
        field(q, queue_offsets::COMPUTE_TMPRING_SIZE).write_volatile(s.tmpring());
        for (i, w) in resource.iter().enumerate() {
            field(q, queue_offsets::SCRATCH_RESOURCE_DESCRIPTOR + 4 * i as u64).write_volatile(*w);
        }
        (field(q, queue_offsets::SCRATCH_BACKING_MEMORY_LOCATION) as *mut u64)
            .write_volatile(s.base);
        (field(q, queue_offsets::SCRATCH_BACKING_MEMORY_BYTE_SIZE) as *mut u64)
            .write_volatile(s.backing_byte_size());
        field(q, queue_offsets::SCRATCH_WAVE64_LANE_BYTE_SIZE)
            .write_volatile(s.wave64_lane_bytes());
    }
    // SAFETY: as above; `queue_properties` is a 4-byte aligned field of the page.
    let props = unsafe { &*(field(q, queue_offsets::QUEUE_PROPERTIES) as *const AtomicU32) };
    if lent {
        props.fetch_or(aql::QUEUE_PROPERTY_USE_SCRATCH_ONCE, Ordering::Release);
    } else {
        props.fetch_and(!aql::QUEUE_PROPERTY_USE_SCRATCH_ONCE, Ordering::Release);
    }
}

/// Sets up scratch serving `private` bytes per work-item on a queue being created (its
/// `amd_queue_t` at `q`, before `CREATE_QUEUE`): the backing, kept by the queue.
pub(super) fn presize(gpu: &Gpu, q: *const AmdQueue, private: u32) -> Result<QueueScratch> {
    let scratch = QueueScratch::default();
    if private > 0 {
        // Slots for the GPU's own wave size (wave64 dispatches on a wave32 GPU ask for more).
        let (buffer, layout, _) = allocate(
            gpu,
            private,
            u64::MAX,
            gpu.info().num_xcc,
            gpu.info().wave_size,
        )?;
        if layout.size() > SINGLE_LIMIT {
            // More than a queue keeps for every wave slot: let dispatches ask for it instead.
            return Err(Error::TooLarge {
                what: "scratch bytes a queue keeps for every wave slot",
                requested: layout.size(),
                limit: SINGLE_LIMIT,
            });
        }
        describe(q, &layout, false);
        *scratch.backing.lock().unwrap_or_else(|p| p.into_inner()) = Some(buffer);
    }
    Ok(scratch)
}

impl AqlQueueShared {
    /// The first kernel dispatch needing scratch from the read index on (the one the CP
    /// stopped at): its private segment size and the waves of `lanes` lanes it launches.
    fn blocked_dispatch(&self, lanes: u32) -> Option<(u32, u64)> {
        let (read, write) = (self.ring.read_index(), self.ring.write_index());
        let base = self.ring_mem.as_ptr()? as usize;
        for index in read..write.min(read + u64::from(self.size_packets)) {
            let slot = base + (index % u64::from(self.size_packets)) as usize * 64;
            let mut raw = [0u32; 16];
            for (i, w) in raw.iter_mut().enumerate() {
                // SAFETY: `slot` is one of the ring's 64-byte slots, live while the queue is;
                // a slot between the read and write indices is published or being written,
                // and only its dwords are read here (atomically).
                *w = unsafe { &*((slot + 4 * i) as *const AtomicU32) }.load(Ordering::Acquire);
            }
            if let Ok(aql::Packet::KernelDispatch(d)) = aql::Packet::decode(&raw) {
                if d.private_segment_size > 0 {
                    let items = |dim: usize| {
                        u64::from(d.grid_size[dim])
                            .div_ceil(u64::from(d.workgroup_size[dim].max(1)))
                    };
                    let groups = items(0) * items(1) * items(2);
                    let per_group = (d
                        .workgroup_size
                        .iter()
                        .map(|&w| u64::from(w))
                        .product::<u64>())
                    .div_ceil(u64::from(lanes.max(1)));
                    return Some((d.private_segment_size, groups * per_group));
                }
            }
            // A header not yet valid ends what the CP can have reached.
            if !aql::is_valid_header_word(raw[0]) {
                break;
            }
        }
        None
    }

    /// Serves the scratch request in the inactive signal, if any: grows the scratch (or takes
    /// lent scratch back) and lets the CP go on. A request that cannot be served stops the
    /// queue with an allocation error, as ROCr does.
    pub(crate) fn serve_scratch_request(&self) -> Result<()> {
        let mut backing = self
            .scratch
            .backing
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let code = self.inactive.value() as u64;
        if code == 0 || !is_scratch_request(code) {
            return Ok(());
        }
        if code == SCRATCH_RECLAIM {
            describe(self.amd_queue, &ScratchLayout::default(), false);
            *backing = None;
            return self.inactive.store(0);
        }
        debug_assert!(code & (INSUFFICIENT_SCRATCH_WAVE64 | INSUFFICIENT_SCRATCH_WAVE32) != 0);
        // The CP says which wave size the dispatch runs with (ROCr: error code bit 0x400).
        let lanes = if code & INSUFFICIENT_SCRATCH_WAVE32 != 0 {
            32
        } else {
            64
        };
        let grown = self
            .blocked_dispatch(lanes)
            .ok_or_else(|| Error::UnexpectedDriverAnswer {
                request: "queue_inactive_signal",
                what: "a scratch request with no dispatch needing scratch in the ring".into(),
            })
            .and_then(|(private, waves)| {
                allocate(&self.gpu, private, waves, self.gpu.info().num_xcc, lanes)
            });
        match grown {
            Ok((buffer, layout, lent)) => {
                log::debug!(
                    "kfdrt: queue {}: scratch of {} bytes ({} waves of {} bytes per work-item){}",
                    self.handle().id(),
                    layout.size(),
                    layout.waves,
                    layout.lane_bytes,
                    if lent { ", lent for one dispatch" } else { "" }
                );
                describe(self.amd_queue, &layout, lent);
                // The CP is stopped before the dispatch: nothing runs on the old backing.
                *backing = Some(buffer);
                self.inactive.store(0)
            }
            Err(e) => {
                log::error!(
                    "kfdrt: queue {}: no scratch for a dispatch: {e}",
                    self.handle().id()
                );
                self.inactive.store(INVALID_ALLOCATION as i64)
            }
        }
    }

    /// Stops the service thread (at queue destruction).
    pub(crate) fn stop_scratch_service(&self) {
        let service = self
            .scratch
            .service
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some(service) = service else { return };
        service.stop.store(true, Ordering::Release);
        // Wake it: its wait sleeps on the inactive signal's event (one without an event polls,
        // and sees the stop within a poll slice).
        if let Some(id) = self.inactive.event_id() {
            if let Err(e) = self.gpu.kfd().set_raw_event(id) {
                log::warn!("kfdrt: waking a queue's scratch thread: {e}");
            }
        }
        // The thread may hold the last handle and be the one dropping the queue.
        if service.thread.thread().id() != std::thread::current().id() {
            let _ = service.thread.join();
        }
    }
}

impl AqlQueue {
    /// Starts the thread serving scratch requests, if it is not running.
    pub(crate) fn ensure_scratch_service(&self) -> Result<()> {
        let mut service = self
            .0
            .scratch
            .service
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if service.is_some() {
            return Ok(());
        }
        let stop = Arc::new(AtomicBool::new(false));
        let queue = Arc::downgrade(&self.0);
        let signal = self.0.inactive.clone();
        let thread = std::thread::Builder::new()
            .name(format!("kfdrt-scratch-{}", self.id()))
            .spawn({
                let stop = stop.clone();
                move || serve(&queue, &signal, &stop)
            })
            .map_err(|source| Error::Os {
                what: "scratch thread",
                source,
            })?;
        *service = Some(Service { stop, thread });
        Ok(())
    }
}

/// The service thread: sleeps until the CP writes the inactive signal, serves a scratch
/// request, and ends when the queue goes or stops on an error.
fn serve(queue: &Weak<AqlQueueShared>, signal: &Signal, stop: &AtomicBool) {
    let stopping = || {
        if stop.load(Ordering::Acquire) {
            Err(Error::ServiceStopped {
                what: "scratch service (queue destroyed)",
            })
        } else {
            Ok(())
        }
    };
    loop {
        if signal
            .wait_with(
                Condition::Ne(0),
                None,
                std::time::Duration::ZERO,
                &[],
                &stopping,
            )
            .is_err()
        {
            return;
        }
        let code = signal.value() as u64;
        if !is_scratch_request(code) {
            return; // a real error: the queue's waits report it
        }
        let Some(q) = queue.upgrade() else { return };
        if let Err(e) = q.serve_scratch_request() {
            log::error!("kfdrt: serving a scratch request: {e}");
            return;
        }
    }
}
