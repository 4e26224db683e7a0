//! [`AqlQueue`]: a user-mode AQL queue — ring, `amd_queue_t`, doorbell, kernel-argument memory
//! and error state — with dispatch, barrier and batch submission.
//!
//! Submission follows the HSA multi-producer protocol through [`aql::ring::AqlRing`]: reserve
//! slots, write each packet's body, publish its header with one release store, ring the doorbell
//! once per batch. The ring is never overrun: reservation waits for the packet processor's read
//! index (or reports [`Error::QueueFull`] with the non-blocking calls).

mod batch;
mod completion;
mod gws;
mod icache;
mod probe;
mod scratch;
mod single;
mod submission;

pub use self::batch::Batch;
pub use self::submission::Submission;

use super::cwsr::{queue_buffer, ComputeAreas};
use super::handle::KfdQueue;
use super::held::RetireList;
use super::kernarg::KernargRing;
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::memory::{Buffer, MemoryKind};
use crate::signal::{Condition, Signal, DEFAULT_SPIN};
use aql::ring::AqlRing;
use aql::AmdQueue;
use kfd_sys::bindings::*;
use std::fmt;
use std::sync::Arc;

/// Queue priority (`queue_priority` of `CREATE_QUEUE`, as ROCr maps HSA priorities).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QueuePriority {
    /// ROCr's low priority (KFD 3).
    Low,
    /// The default (KFD 7).
    #[default]
    Normal,
    /// ROCr's high priority (KFD 11).
    High,
}

impl QueuePriority {
    pub(crate) fn kfd(self) -> u32 {
        match self {
            QueuePriority::Low => 3,
            QueuePriority::Normal => 7,
            QueuePriority::High => 11,
        }
    }
}

/// Options of [`Gpu::create_aql_queue`]: start from `default()` and change what you need.
///
/// ```
/// use kfdrt::{AqlQueueOptions, QueuePriority};
/// let options = AqlQueueOptions::default()
///     .with_size_packets(256)
///     .with_priority(QueuePriority::High)
///     .profiled();
/// assert_eq!(options.size_packets, 256);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AqlQueueOptions {
    /// Ring size in packets: a power of two from 64 to 131072 (ROCr's range). Default 1024.
    pub size_packets: u32,
    /// Priority; normal by default.
    pub priority: QueuePriority,
    /// Whether the packet processor writes start/end timestamps into completion signals.
    pub profiling: bool,
    /// Bytes of kernel-argument memory owned by the queue. Default 256 KiB.
    pub kernarg_bytes: u64,
    /// Scratch bytes per work-item set up for every wave slot when the queue is made (0, the
    /// default: none until a dispatch asks for it; see `queue::aql_queue::scratch`).
    pub scratch_per_work_item: u32,
}

impl Default for AqlQueueOptions {
    fn default() -> Self {
        AqlQueueOptions {
            size_packets: 1024,
            priority: QueuePriority::Normal,
            profiling: false,
            kernarg_bytes: 256 * 1024,
            scratch_per_work_item: 0,
        }
    }
}

impl AqlQueueOptions {
    /// Ring size in packets (a power of two from 64 to 131072).
    pub fn with_size_packets(mut self, packets: u32) -> Self {
        self.size_packets = packets;
        self
    }

    /// Queue priority.
    pub fn with_priority(mut self, priority: QueuePriority) -> Self {
        self.priority = priority;
        self
    }

    /// Completion signals carry start and end timestamps.
    pub fn profiled(mut self) -> Self {
        self.profiling = true;
        self
    }

    /// Bytes of kernel-argument memory owned by the queue.
    pub fn with_kernarg_bytes(mut self, bytes: u64) -> Self {
        self.kernarg_bytes = bytes;
        self
    }

    /// Scratch for `bytes` per work-item in every wave slot, set up with the queue, so
    /// dispatches needing no more never stop for it (the CP asks for more when one does).
    pub fn with_scratch(mut self, bytes: u32) -> Self {
        self.scratch_per_work_item = bytes;
        self
    }
}

pub use crate::error::QueueFault;

pub(crate) struct AqlQueueShared {
    /// The KFD queue; `None` once destroyed (in Drop, before the memory it uses goes).
    pub(crate) handle: Option<KfdQueue>,
    pub(crate) gpu: Gpu,
    pub(crate) ring: AqlRing,
    pub(crate) amd_queue: *const AmdQueue,
    pub(crate) size_packets: u32,
    pub(crate) inactive: Signal,
    /// PM4 buffer holding the instruction-cache invalidation, built on first use.
    pub(crate) icache_ib: std::sync::OnceLock<Buffer>,
    pub(crate) kernargs: std::sync::Mutex<KernargRing>,
    /// Staging vectors of a finished batch, kept for the next one so that building a batch
    /// allocates nothing once the queue is warm.
    pub(crate) spare: batch::SpareBuffers,
    /// What submissions dropped before completing still hold.
    pub(crate) retired: RetireList,
    /// The queues GPUs without an MMIO-remap page have their HDP flushed through.
    pub(crate) hdp: crate::queue::hdp_queue::HdpQueues,
    /// Completion signals of finished submissions, for the next ones.
    pub(crate) completions: completion::CompletionSignals,
    scratch: scratch::QueueScratch,
    /// When the read index last moved (for hang reports).
    pub(crate) progress: Arc<crate::debug::registry::Progress>,
    // Memory the packet processor uses; freed after DESTROY_QUEUE (see Drop).
    pub(crate) ring_mem: Buffer,
    pub(crate) _amd_queue_mem: Buffer,
    pub(crate) areas: ComputeAreas,
}

impl AqlQueueShared {
    fn handle(&self) -> &KfdQueue {
        // Only Drop takes it.
        self.handle
            .as_ref()
            .unwrap_or_else(|| unreachable!("queue used after destruction"))
    }
}

impl Drop for AqlQueueShared {
    fn drop(&mut self) {
        if let Some(h) = &self.handle {
            self.gpu.kfd().shared.reports.unregister(h.id());
        }
        self.stop_scratch_service();
        // DESTROY_QUEUE first: after it the command processor reads and writes none of the
        // queue's memory, runs none of its packets and writes none of their signals, so what
        // dropped submissions still hold (and the scratch) can go, and the signals can be
        // reused.
        drop(self.handle.take());
        self.retired.abandon();
    }
}

// SAFETY: `amd_queue` points into `_amd_queue_mem`, owned by this struct; the fields the packet
// processor writes are accessed atomically. `AqlRing` is Send + Sync.
unsafe impl Send for AqlQueueShared {}
// SAFETY: as above; all shared mutation goes through atomics or the kernarg mutex.
unsafe impl Sync for AqlQueueShared {}

/// An AQL queue on one GPU. Cheap to clone; the queue is destroyed when the last clone and the
/// last [`Submission`] from it are gone.
#[derive(Clone)]
pub struct AqlQueue(pub(crate) Arc<AqlQueueShared>);

impl fmt::Debug for AqlQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AqlQueue")
            .field("queue_id", &self.0.handle().id())
            .field("gpu", &self.0.gpu)
            .field("size_packets", &self.0.size_packets)
            .field("write_index", &self.0.ring.write_index())
            .field("read_index", &self.0.ring.read_index())
            .finish()
    }
}

impl Gpu {
    /// Creates an AQL queue.
    pub fn create_aql_queue(&self, options: AqlQueueOptions) -> Result<AqlQueue> {
        let n = options.size_packets;
        if !n.is_power_of_two() || !(64..=131072).contains(&n) {
            return Err(Error::QueueSize {
                kind: "AQL queue",
                requested: u64::from(n),
                unit: "packets",
                rule: "a power of two in 64..=131072",
            });
        }
        let kfd = self.kfd().clone();
        let info = self.info().clone();
        let ring_bytes = u64::from(n) * 64;
        // The ring and the amd_queue_t page (which holds the read and write indices) are each a
        // whole buffer: KFD checks that they are, and a sub-allocation would share its pages.
        let ring_mem = queue_buffer(self, ring_bytes, MemoryKind::GttCoherent)?;
        let amd_queue_mem = queue_buffer(self, 4096, MemoryKind::GttCoherent)?;
        let kernarg_mem = self.alloc(
            // At least one minimal region per ring slot, so a full ring of single dispatches
            // never waits for kernel-argument memory.
            options
                .kernarg_bytes
                .max(4096)
                .max(u64::from(n) * super::kernarg::KERNARG_ALIGN),
            MemoryKind::GttCoherent,
        )?;
        let inactive = kfd.create_signal(0)?;
        let ring_ptr = ring_mem
            .as_ptr()
            .expect("the AQL ring is GTT, which the CPU maps");
        let q_ptr = amd_queue_mem
            .as_ptr()
            .expect("the amd_queue_t page is GTT, which the CPU maps")
            as *mut AmdQueue;
        // SAFETY: the ring is ours, `n` 64-byte slots, not yet known to any packet processor.
        unsafe { aql::ring::init_ring(ring_ptr, n) };
        // SAFETY: `q_ptr` is a fresh 4 KiB GTT page (larger than `AmdQueue`), page aligned and
        // not yet shared; it is initialised before CREATE_QUEUE hands it to the CP.
        unsafe {
            AmdQueue::init(
                q_ptr,
                ring_mem.gpu_address(),
                n,
                inactive.handle(),
                // A timeline needs the GPU's start and end of every packet.
                options.profiling || self.kfd.shared.debug.trace.is_some(),
            )
        };
        {
            // What a debugger reads of the queue (ROCr's `AqlQueue` sets the same): the
            // highest CU and wave slot ids, and the LDS and scratch apertures.
            // SAFETY: `q_ptr` was initialised just above and is not yet shared.
            let q = unsafe { &mut *q_ptr };
            let simd_per_cu = info.simd_per_cu.max(1);
            q.max_cu_id = info.compute_units.saturating_sub(1);
            let waves = info.properties.get_or_zero("max_waves_per_simd") as u32;
            q.max_wave_id = (waves * simd_per_cu).saturating_sub(1);
            let apertures = &self.state().apertures;
            q.group_segment_aperture_base_hi = (apertures.lds_base >> 32) as u32;
            q.private_segment_aperture_base_hi = (apertures.scratch_base >> 32) as u32;
        }
        let scratch = scratch::presize(self, q_ptr, options.scratch_per_work_item)?;
        // SAFETY: initialised just above; lives as long as `amd_queue_mem`, which the queue owns.
        let q = unsafe { &*q_ptr };
        // gfx94x AQL queues take no EOP buffer (KFD only uses it for PM4 queues there).
        let gfx94x = (90400..90500).contains(&info.gfx_target_version);
        let areas = ComputeAreas::new(self, !gfx94x)?;
        let mut args = kfd_ioctl_create_queue_args {
            ring_base_address: ring_mem.gpu_address(),
            write_pointer_address: q.write_dispatch_id_address(),
            read_pointer_address: q.read_dispatch_id_address(),
            // At most 131072 packets of 64 bytes (checked above): 8 MiB.
            ring_size: u32::try_from(ring_bytes).expect("an AQL ring of at most 8 MiB"),
            gpu_id: info.gpu_id,
            queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            queue_percentage: KFD_MAX_QUEUE_PERCENTAGE,
            queue_priority: options.priority.kfd(),
            eop_buffer_address: areas.eop.as_ref().map_or(0, Buffer::gpu_address),
            eop_buffer_size: areas.eop.as_ref().map_or(0, Buffer::size),
            ctx_save_restore_address: areas.cwsr.gpu_address(),
            ctx_save_restore_size: areas.sizes.ctx_save_restore_size,
            ctl_stack_size: areas.sizes.ctl_stack_size,
            ..Default::default()
        };
        // SAFETY: every address in `args` is memory owned by the queue being built, which
        // destroys the queue before that memory is freed.
        let handle = unsafe { KfdQueue::create(self, &mut args) }?;
        let queue_id = handle.id();
        let doorbell = handle.doorbell();
        // SAFETY: ring, indices and doorbell live in memory owned by the queue (the doorbell
        // pages by the Kfd, which the queue keeps alive); the processor shares them by design.
        let ring = match unsafe {
            AqlRing::new(
                ring_ptr,
                n,
                &q.write_dispatch_id,
                &q.read_dispatch_id,
                doorbell,
            )
        } {
            // The size was checked and the pointers are the queue's own aligned fields: the
            // only error, `BadGeometry`, cannot happen.
            Ok(r) => r,
            Err(e) => unreachable!("an AQL ring of a checked size over aligned pointers: {e}"),
        };
        log::debug!(
            "kfdrt: AQL queue {queue_id} on GPU {:#x}, {n} packets",
            info.gpu_id
        );
        let progress = Arc::new(crate::debug::registry::Progress::default());
        let queue = AqlQueue(Arc::new(AqlQueueShared {
            handle: Some(handle),
            gpu: self.clone(),
            ring,
            amd_queue: q_ptr,
            size_packets: n,
            inactive,
            icache_ib: std::sync::OnceLock::new(),
            kernargs: std::sync::Mutex::new(KernargRing::new(kernarg_mem)?),
            spare: batch::SpareBuffers::default(),
            retired: RetireList::default(),
            hdp: Default::default(),
            completions: completion::CompletionSignals::default(),
            scratch,
            progress: progress.clone(),
            ring_mem,
            _amd_queue_mem: amd_queue_mem,
            areas,
        }));
        self.kfd.shared.reports.register(Arc::new(probe::AqlProbe {
            queue_id,
            gpu_id: self.id(),
            queue: Arc::downgrade(&queue.0),
            progress,
        }));
        Ok(queue)
    }
}

impl AqlQueue {
    /// KFD's id of the queue.
    pub fn id(&self) -> u32 {
        self.0.handle().id()
    }

    /// The doorbell offset KFD returned (its low 13 bits are the byte offset of the queue's
    /// doorbell within the GPU's two doorbell pages).
    pub fn doorbell_offset(&self) -> u64 {
        self.0.handle().doorbell_offset()
    }

    /// GPU address of the ring.
    pub fn ring_address(&self) -> u64 {
        self.0.ring_mem.gpu_address()
    }

    /// Ring size in packets.
    pub fn size(&self) -> u32 {
        self.0.size_packets
    }

    /// The GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.0.gpu
    }

    /// The next packet index to be reserved.
    pub fn write_index(&self) -> u64 {
        self.0.ring.write_index()
    }

    /// The packet processor's read index.
    pub fn read_index(&self) -> u64 {
        self.0.ring.read_index()
    }

    /// Address of the queue's `amd_queue_t` (what an `hsa_queue_t*` points at).
    pub fn amd_queue_address(&self) -> u64 {
        self.0.amd_queue as u64
    }

    /// Turns the command processor's timestamps in completion signals on or off while the
    /// queue runs ([`Submission::timestamps`]), as ROCr's
    /// `hsa_amd_profiling_set_profiler_enabled` does: the CP reads the property for each
    /// packet, so packets published after this call are profiled (or not).
    pub fn set_profiling(&self, on: bool) {
        let q = self.0.amd_queue;
        // SAFETY: `amd_queue` points at the queue's live `amd_queue_t` page (owned by the
        // queue), in which `queue_properties` is a 4-byte aligned field; kfdrt changes it only
        // through atomics once the queue exists (see also `scratch::publish`).
        let props = unsafe {
            &*(std::ptr::addr_of!((*q).queue_properties) as *const std::sync::atomic::AtomicU32)
        };
        let bit = aql::QUEUE_PROPERTY_ENABLE_PROFILING;
        if on {
            props.fetch_or(bit, std::sync::atomic::Ordering::Release);
        } else {
            props.fetch_and(!bit, std::sync::atomic::Ordering::Release);
        }
    }

    /// The error the queue stopped with, if it did. (The CP's requests for scratch, which the
    /// queue serves, are not errors.)
    pub fn fault(&self) -> Option<QueueFault> {
        let v = self.0.inactive.value() as u64;
        let code = if aql::queue_error::is_scratch_request(v) {
            0
        } else {
            v
        };
        let exceptions = self.0.areas.exceptions.raised();
        (code != 0 || !exceptions.is_empty()).then_some(QueueFault { code, exceptions })
    }

    /// The events a wait on the queue also sleeps on: its inactive signal's (the CP's errors
    /// and requests) and its exception signal's (KFD's reports of wave exceptions).
    fn wake_events(&self) -> ([u32; 2], usize) {
        let mut ids = [0; 2];
        let mut n = 0;
        for id in [
            self.0.inactive.event_id(),
            self.0.areas.exceptions.signal.event_id(),
        ]
        .into_iter()
        .flatten()
        {
            ids[n] = id;
            n += 1;
        }
        (ids, n)
    }

    /// The queue's error, if it stopped: its own (the inactive signal), or its GPU's (a fault
    /// or reset stops every queue of the GPU). A scratch request waiting in the inactive signal
    /// is served first.
    #[inline]
    fn check(&self) -> Result<()> {
        // Every submission and wait asks: the healthy case is three loads. The fork check
        // comes first: in a forked child the queue's memory is not mapped.
        let shared = &self.0.gpu.kfd().shared;
        shared.dev.check_process()?;
        if self.0.inactive.value() == 0
            && self.0.areas.exceptions.raised().is_empty()
            && !shared.exceptions.any()
        {
            return Ok(());
        }
        self.check_slow()
    }

    #[cold]
    fn check_slow(&self) -> Result<()> {
        let queue_id = self.0.handle().id();
        if aql::queue_error::is_scratch_request(self.0.inactive.value() as u64) {
            self.0.serve_scratch_request()?;
        }
        if let Some(fault) = self.fault() {
            return Err(Error::QueueError {
                queue_id,
                fault,
                report: None,
            });
        }
        self.0.handle().check_exceptions()
    }

    /// Restricts the queue's dispatches to the compute units whose bits are set in `mask` (bit
    /// `i` of word `w` is CU `32 * w + i`, up to 1024 CUs), as `hsa_amd_queue_cu_set_mask` does.
    pub fn set_cu_mask(&self, mask: &[u32]) -> Result<()> {
        if mask.is_empty() || mask.len() > 32 {
            return Err(if mask.is_empty() {
                Error::ZeroSize { what: "CU mask" }
            } else {
                Error::TooLarge {
                    what: "CU mask words (1024 CUs)",
                    requested: mask.len() as u64,
                    limit: 32,
                }
            });
        }
        let mut a = kfd_ioctl_set_cu_mask_args {
            queue_id: self.id(),
            num_cu_mask: mask.len() as u32 * 32,
            cu_mask_ptr: mask.as_ptr() as u64,
        };
        let driver = self.0.gpu.kfd().driver();
        // SAFETY: the mask array lives across the call and holds `num_cu_mask / 32` words.
        unsafe { kfd_sys::DriverExt::kfd_ioctl_unchecked(&**driver, &mut a) }
            .map_err(Error::ioctl(&a))?;
        Ok(())
    }

    /// Starts a batch: packets added to it are submitted together, with one doorbell. Each
    /// dispatch keeps its own barrier bit (set unless it was made [`Dispatch::unordered`](crate::Dispatch::unordered)); the
    /// batch's last packet always carries the barrier bit and the completion signal, so the
    /// batch completes only when everything in it has.
    pub fn batch(&self) -> Result<Batch<'_>> {
        self.check()?;
        let signal = self.0.completions.take_unset(self.0.gpu.kfd(), 1)?;
        Ok(Batch::new(self, signal))
    }

    /// A completion signal at 1 for a new submission.
    pub(crate) fn completion_signal(&self) -> Result<Signal> {
        self.0.completions.take(self.0.gpu.kfd(), 1)
    }

    pub(crate) fn kernarg_region(&self, len: u64, signal: &Signal) -> Result<(u64, *mut u8)> {
        loop {
            let oldest = {
                let mut k = self.0.kernargs.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(off) = k.try_alloc(len, signal, 0)? {
                    return Ok(k.address(off));
                }
                k.oldest()
            };
            // Full of running submissions: wait for the oldest, then retry.
            let (sig, target) = oldest.expect(
                "an empty kernarg ring takes any region no larger than itself (try_alloc \
                 refuses larger ones), so no room means a region is in flight",
            );
            let (wake, n) = self.wake_events();
            sig.wait_with(
                Condition::Lt(target + 1),
                None,
                DEFAULT_SPIN,
                &wake[..n],
                &|| self.check(),
            )?;
        }
    }
}

const _: () = {
    const fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<AqlQueue>();
};
