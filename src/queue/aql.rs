//! [`AqlQueue`]: a user-mode AQL queue — ring, `amd_queue_t`, doorbell, kernel-argument memory
//! and error state — with dispatch, barrier and batch submission.
//!
//! Submission follows the HSA multi-producer protocol through [`aql::ring::AqlRing`]: reserve
//! slots, write each packet's body, publish its header with one release store, ring the doorbell
//! once per batch. The ring is never overrun: reservation waits for the packet processor's read
//! index (or reports [`Error::QueueFull`] with the non-blocking calls).

use super::cwsr::{queue_buffer, ComputeAreas};
use super::handle::KfdQueue;
use super::kernarg::KernargRing;
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::memory::{Buffer, MemoryKind};
use crate::signal::{Condition, Signal, DEFAULT_SPIN};
use aql::ring::{AqlRing, RingError};
use aql::{AmdQueue, BarrierPacket, FenceScope, KernelDispatchPacket, Packet};
use kfd_sys::bindings::*;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

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

/// Options of [`Gpu::create_aql_queue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AqlQueueOptions {
    /// Ring size in packets: a power of two from 64 to 131072 (ROCr's range). Default 1024.
    pub size_packets: u32,
    /// Priority; normal by default.
    pub priority: QueuePriority,
    /// Whether the packet processor writes start/end timestamps into completion signals.
    pub profiling: bool,
    /// Bytes of kernel-argument memory owned by the queue. Default 256 KiB.
    pub kernarg_bytes: u64,
}

impl Default for AqlQueueOptions {
    fn default() -> Self {
        AqlQueueOptions {
            size_packets: 1024,
            priority: QueuePriority::Normal,
            profiling: false,
            kernarg_bytes: 256 * 1024,
        }
    }
}

/// The error a queue stopped with, as the packet processor reported it through the queue's
/// inactive signal (ROCr's error bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueFault {
    /// The raw error word.
    pub code: u64,
}

impl QueueFault {
    /// A description of the error bits.
    pub fn describe(&self) -> &'static str {
        crate::queue::error_bits::describe(self.code)
    }
}

impl fmt::Display for QueueFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {:#x})", self.describe(), self.code)
    }
}

pub(crate) struct AqlQueueShared {
    handle: KfdQueue,
    gpu: Gpu,
    ring: AqlRing,
    amd_queue: *const AmdQueue,
    size_packets: u32,
    inactive: Signal,
    /// PM4 buffer holding the instruction-cache invalidation, built on first use.
    icache_ib: std::sync::OnceLock<Buffer>,
    kernargs: std::sync::Mutex<KernargRing>,
    /// Staging vectors of a finished batch, kept for the next one so that building a batch
    /// allocates nothing once the queue is warm.
    spare: std::sync::Mutex<Option<BatchBuffers>>,
    // Memory the packet processor uses; freed after DESTROY_QUEUE, in Drop.
    ring_mem: Buffer,
    _amd_queue_mem: Buffer,
    _areas: ComputeAreas,
}

// SAFETY: `amd_queue` points into `_amd_queue_mem`, owned by this struct; the fields the packet
// processor writes are accessed atomically. `AqlRing` is Send + Sync.
unsafe impl Send for AqlQueueShared {}
// SAFETY: as above; all shared mutation goes through atomics or the kernarg mutex.
unsafe impl Sync for AqlQueueShared {}

/// An AQL queue on one GPU. Cheap to clone; the queue is destroyed when the last clone and the
/// last [`Submission`] from it are gone.
#[derive(Clone)]
pub struct AqlQueue(Arc<AqlQueueShared>);

/// A handle that does not keep its queue alive: for a queue the GPU itself caches (the code
/// loader's), which must not own the GPU that owns it.
#[derive(Clone, Default)]
pub(crate) struct WeakAqlQueue(std::sync::Weak<AqlQueueShared>);

impl WeakAqlQueue {
    pub(crate) fn upgrade(&self) -> Option<AqlQueue> {
        self.0.upgrade().map(AqlQueue)
    }
}

impl AqlQueue {
    pub(crate) fn downgrade(&self) -> WeakAqlQueue {
        WeakAqlQueue(Arc::downgrade(&self.0))
    }
}

impl fmt::Debug for AqlQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AqlQueue")
            .field("queue_id", &self.0.handle.id())
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
            return Err(Error::InvalidArgument(format!(
                "AQL queue size {n} is not a power of two in 64..=131072"
            )));
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
            .ok_or_else(|| Error::InvalidArgument("ring not host-visible".into()))?;
        let q_ptr = amd_queue_mem
            .as_ptr()
            .ok_or_else(|| Error::InvalidArgument("queue not host-visible".into()))?
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
                options.profiling,
            )
        };
        // SAFETY: initialised just above; lives as long as `amd_queue_mem`, which the queue owns.
        let q = unsafe { &*q_ptr };
        // gfx94x AQL queues take no EOP buffer (KFD only uses it for PM4 queues there).
        let gfx94x = (90400..90500).contains(&info.gfx_target_version);
        let areas = ComputeAreas::new(self, !gfx94x)?;
        let mut args = kfd_ioctl_create_queue_args {
            ring_base_address: ring_mem.gpu_address(),
            write_pointer_address: q.write_dispatch_id_address(),
            read_pointer_address: q.read_dispatch_id_address(),
            ring_size: u32::try_from(ring_bytes)
                .map_err(|_| Error::InvalidArgument("ring too large".into()))?,
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
        // SAFETY: every address in `args` is memory owned by the queue being built; the
        // handle is its first field, so the queue is destroyed before that memory is freed.
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
            Ok(r) => r,
            Err(e) => {
                return Err(Error::InvalidArgument(format!("AQL ring: {e}")));
            }
        };
        log::debug!(
            "kfdrt: AQL queue {queue_id} on GPU {:#x}, {n} packets",
            info.gpu_id
        );
        Ok(AqlQueue(Arc::new(AqlQueueShared {
            handle,
            gpu: self.clone(),
            ring,
            amd_queue: q_ptr,
            size_packets: n,
            inactive,
            icache_ib: std::sync::OnceLock::new(),
            kernargs: std::sync::Mutex::new(KernargRing::new(kernarg_mem)),
            spare: std::sync::Mutex::new(None),
            ring_mem,
            _amd_queue_mem: amd_queue_mem,
            _areas: areas,
        })))
    }
}

/// One kernel launch: what to run, on how many work-items, with which arguments.
#[derive(Clone, Copy, Debug)]
pub struct Dispatch<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// Grid size in work-items per dimension (not work-groups).
    pub grid: [u32; 3],
    /// Work-group size per dimension.
    pub workgroup: [u16; 3],
    /// Kernel arguments, copied into the queue's kernarg memory.
    pub kernargs: &'a [u8],
    /// Dynamic LDS bytes per work-group, added to the kernel's static amount.
    pub dynamic_lds: u32,
    /// Whether the dispatch starts only after every earlier packet of its queue has completed
    /// (the AQL barrier bit). On by default, so a queue runs its work in order as a HIP stream
    /// does. Off ([`Dispatch::unordered`]), the GPU may run the dispatch alongside the packets
    /// before it: right only when it neither reads what they write nor writes what they use.
    pub barrier: bool,
    /// The memory scope made visible to the kernel before it starts (system by default).
    pub acquire: FenceScope,
    /// The memory scope the kernel's writes are released to when it ends (system by default:
    /// the host and every GPU see them once the completion signal does).
    pub release: FenceScope,
}

/// A [`Dispatch`] validated and encoded once ([`Dispatch::prepare`]): the hot loop of a runtime
/// that launches the same kernel shape again and again with new arguments adds it to batches
/// with [`Batch::dispatch_prepared`]. It borrows the kernel, which therefore outlives it.
#[derive(Clone, Copy, Debug)]
pub struct PreparedDispatch<'a> {
    kernel: &'a Kernel,
    /// LDS bytes per work-group: the kernel's static amount plus the dynamic part.
    group_segment: u32,
    /// The encoded packet: kernarg address 0, no completion signal.
    packet: [u32; 16],
}

impl PreparedDispatch<'_> {
    /// The kernel it launches.
    pub fn kernel(&self) -> &Kernel {
        self.kernel
    }
}

impl<'a> Dispatch<'a> {
    /// A 1-D launch of `grid` work-items in groups of `workgroup`.
    pub fn linear(kernel: &'a Kernel, grid: u32, workgroup: u16, kernargs: &'a [u8]) -> Self {
        Dispatch {
            kernel,
            grid: [grid, 1, 1],
            workgroup: [workgroup, 1, 1],
            kernargs,
            dynamic_lds: 0,
            barrier: true,
            acquire: FenceScope::System,
            release: FenceScope::System,
        }
    }

    /// The same dispatch without the barrier bit: it may overlap the packets before it.
    pub fn unordered(self) -> Self {
        Dispatch {
            barrier: false,
            ..self
        }
    }

    /// Validates and encodes this dispatch once, for submitting it many times with different
    /// kernel arguments ([`Batch::dispatch_prepared`]); its own `kernargs` are not part of it.
    #[inline]
    pub fn prepare(&self) -> Result<PreparedDispatch<'a>> {
        self.validate()?;
        let group_segment = self
            .kernel
            .group_segment_size()
            .checked_add(self.dynamic_lds)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "LDS of {} static + {} dynamic bytes overflows",
                    self.kernel.group_segment_size(),
                    self.dynamic_lds
                ))
            })?;
        Ok(PreparedDispatch {
            kernel: self.kernel,
            group_segment,
            packet: encode(Packet::KernelDispatch(KernelDispatchPacket {
                barrier: self.barrier,
                acquire: self.acquire,
                release: self.release,
                dimensions: self.dimensions(),
                workgroup_size: self.workgroup,
                grid_size: self.grid,
                private_segment_size: self.kernel.private_segment_size(),
                group_segment_size: group_segment,
                kernel_object: self.kernel.object(),
                kernarg_address: 0,
                completion_signal: 0,
            })),
        })
    }

    fn dimensions(&self) -> u16 {
        if self.grid[2] > 1 || self.workgroup[2] > 1 {
            3
        } else if self.grid[1] > 1 || self.workgroup[1] > 1 {
            2
        } else {
            1
        }
    }

    fn validate(&self) -> Result<()> {
        if self.grid.contains(&0) || self.workgroup.contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "grid {:?} / work-group {:?} has a zero dimension",
                self.grid, self.workgroup
            )));
        }
        let wi: u32 = self.workgroup.iter().map(|&w| u32::from(w)).product();
        if wi > 1024 {
            return Err(Error::InvalidArgument(format!(
                "work-group of {wi} work-items exceeds 1024"
            )));
        }
        Ok(())
    }
}

/// A completion to wait for: owns the signal its last packet decrements until that is observed.
#[must_use = "a submission's completion should be waited for"]
pub struct Submission {
    queue: AqlQueue,
    signal: Signal,
    last_index: u64,
}

impl fmt::Debug for Submission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Submission")
            .field("index", &self.last_index)
            .field("signal", &self.signal)
            .finish()
    }
}

impl Submission {
    /// Index of the last packet of the submission in its queue.
    pub fn packet_index(&self) -> u64 {
        self.last_index
    }

    /// The completion signal (reaches 0 on completion).
    pub fn signal(&self) -> &Signal {
        &self.signal
    }

    /// Whether it has completed.
    pub fn is_complete(&self) -> bool {
        self.signal.value() <= 0
    }

    /// Waits for completion. A queue error is returned as [`Error::QueueError`] even when it
    /// happened before the wait; `timeout` of `None` waits forever.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        let q = &self.queue;
        q.check()?;
        self.signal
            .wait_with(
                Condition::Lt(1),
                timeout,
                DEFAULT_SPIN,
                &[q.0.inactive.event_id()],
                &|| q.check(),
            )
            .map(drop)
            .or_else(|e| match e {
                // The queue may have died while we slept; report that rather than a timeout.
                Error::Timeout { .. } => q.check().and(Err(e)),
                e => Err(e),
            })
    }

    /// Start and end timestamps of the last packet (queues created with profiling).
    pub fn timestamps(&self) -> (u64, u64) {
        self.signal.timestamps()
    }
}

/// Encodes a packet for staging in a batch.
#[inline]
fn encode(p: Packet) -> [u32; 16] {
    p.encode()
}

/// The staging vectors of a [`Batch`].
#[derive(Default)]
struct BatchBuffers {
    /// Packets already encoded: the last one's barrier bit and completion signal, and the
    /// dispatches' kernarg addresses, are patched in place at submission.
    packets: Vec<[u32; 16]>,
    /// Kernel arguments of the batch's dispatches, staged here and copied into the queue's
    /// kernarg memory at submission: taking that memory only when the batch is complete means
    /// no half-built batch can pin it while others wait for it.
    kernarg_bytes: Vec<u8>,
    /// Packets whose `kernarg_address` is an offset into `kernarg_bytes` until submission.
    kernarg_fixups: Vec<usize>,
}

/// Packets built for one submission, written to the ring together with one doorbell.
pub struct Batch<'q> {
    queue: &'q AqlQueue,
    signal: Signal,
    submitted: bool,
    /// The most LDS any dispatch of the batch asks for (checked against the GPU's at submission).
    max_group_segment: u32,
    packets: Vec<[u32; 16]>,
    kernarg_bytes: Vec<u8>,
    kernarg_fixups: Vec<usize>,
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if !self.submitted {
            // Nothing of this batch reached the ring: release its kernel-argument regions.
            self.signal.value_atomic().store(0, Ordering::Release);
        }
        let mut buffers = BatchBuffers {
            packets: std::mem::take(&mut self.packets),
            kernarg_bytes: std::mem::take(&mut self.kernarg_bytes),
            kernarg_fixups: std::mem::take(&mut self.kernarg_fixups),
        };
        buffers.packets.clear();
        buffers.kernarg_bytes.clear();
        buffers.kernarg_fixups.clear();
        *self.queue.0.spare.lock().unwrap_or_else(|p| p.into_inner()) = Some(buffers);
    }
}

impl AqlQueue {
    /// KFD's id of the queue.
    pub fn id(&self) -> u32 {
        self.0.handle.id()
    }

    /// The doorbell offset KFD returned (its low 13 bits are the byte offset of the queue's
    /// doorbell within the GPU's two doorbell pages).
    pub fn doorbell_offset(&self) -> u64 {
        self.0.handle.doorbell_offset()
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

    /// The error the queue stopped with, if it did.
    pub fn fault(&self) -> Option<QueueFault> {
        let v = self.0.inactive.value();
        (v != 0).then_some(QueueFault { code: v as u64 })
    }

    /// The queue's error, if it stopped: its own (the inactive signal), or its GPU's (a fault
    /// or reset stops every queue of the GPU).
    fn check(&self) -> Result<()> {
        let queue_id = self.0.handle.id();
        if let Some(fault) = self.fault() {
            return Err(Error::QueueError { queue_id, fault });
        }
        self.0.handle.check_exceptions()
    }

    /// Restricts the queue's dispatches to the compute units whose bits are set in `mask` (bit
    /// `i` of word `w` is CU `32 * w + i`, up to 1024 CUs), as `hsa_amd_queue_cu_set_mask` does.
    pub fn set_cu_mask(&self, mask: &[u32]) -> Result<()> {
        if mask.is_empty() || mask.len() > 32 {
            return Err(Error::InvalidArgument(format!(
                "a CU mask has 1 to 32 words (1024 CUs), not {}",
                mask.len()
            )));
        }
        let mut a = kfd_ioctl_set_cu_mask_args {
            queue_id: self.id(),
            num_cu_mask: mask.len() as u32 * 32,
            cu_mask_ptr: mask.as_ptr() as u64,
        };
        let driver = self.0.gpu.kfd().driver();
        // SAFETY: the mask array lives across the call and holds `num_cu_mask / 32` words.
        unsafe { kfd_sys::DriverExt::kfd_ioctl_unchecked(&**driver, &mut a) }
            .map_err(Error::driver("AMDKFD_IOC_SET_CU_MASK"))?;
        Ok(())
    }

    /// Invalidates the GPU's instruction cache (after code was written to memory) with a PM4
    /// ACQUIRE_MEM carried by an AMD vendor PM4-IB packet, as ROCr does; completes in order.
    pub fn invalidate_icache(&self) -> Result<Submission> {
        let ib = match self.0.icache_ib.get() {
            Some(b) => b,
            None => {
                let family = pm4::GfxFamily::from_gfx_target_version(
                    self.0.gpu.info().gfx_target_version,
                )
                .ok_or_else(|| Error::InvalidArgument("no PM4 support for this GPU".into()))?;
                let acquire = if family.is_gfx10_plus() {
                    // GLI_INV = 1: invalidate the whole instruction cache.
                    pm4::Pm4Packet::AcquireMem {
                        coher_cntl: 0,
                        gcr_cntl: 1,
                    }
                } else {
                    // SH_ICACHE (29) | SH_KCACHE (27) | TC (23) | TCL1 (22), as kfdtest does.
                    pm4::Pm4Packet::AcquireMem {
                        coher_cntl: 0x28C0_0000,
                        gcr_cntl: 0,
                    }
                };
                let mut words = Vec::new();
                acquire.encode(family, &mut words);
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                let buf = self
                    .0
                    .gpu
                    .alloc(bytes.len() as u64, MemoryKind::GttCoherent)?;
                buf.write(0, &bytes)?;
                // Another thread may have won the race; either buffer holds the same packet.
                let _ = self.0.icache_ib.set(buf);
                self.0
                    .icache_ib
                    .get()
                    .ok_or_else(|| Error::InvalidArgument("icache buffer".into()))?
            }
        };
        let dwords = (ib.size() / 4) as u32;
        let mut b = self.batch()?;
        b.packets.push(encode(Packet::VendorPm4Ib(aql::Pm4IbPacket {
            barrier: true,
            acquire: FenceScope::System,
            release: FenceScope::System,
            ib_address: ib.gpu_address(),
            ib_size_dwords: dwords,
            completion_signal: 0,
        })));
        b.submit()
    }

    /// Starts a batch: packets added to it are submitted together, with one doorbell. Each
    /// dispatch keeps its own barrier bit (set unless it was made [`Dispatch::unordered`]); the
    /// batch's last packet always carries the barrier bit and the completion signal, so the
    /// batch completes only when everything in it has.
    pub fn batch(&self) -> Result<Batch<'_>> {
        self.check()?;
        let signal = self.0.gpu.kfd().create_signal(1)?;
        let b = self
            .0
            .spare
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default();
        Ok(Batch {
            queue: self,
            signal,
            submitted: false,
            max_group_segment: 0,
            packets: b.packets,
            kernarg_bytes: b.kernarg_bytes,
            kernarg_fixups: b.kernarg_fixups,
        })
    }

    /// Dispatches one kernel and returns its completion.
    pub fn dispatch(&self, d: &Dispatch<'_>) -> Result<Submission> {
        let mut b = self.batch()?;
        b.dispatch(d)?;
        b.submit()
    }

    /// Submits a barrier-AND: completes when every signal in `deps` is 0 (any number: packets are
    /// chained five dependencies at a time).
    pub fn barrier_and(&self, deps: &[&Signal]) -> Result<Submission> {
        let mut b = self.batch()?;
        b.barrier_and(deps)?;
        b.submit()
    }

    /// Submits a barrier-OR: completes when any signal in `deps` (at most 5) is 0.
    pub fn barrier_or(&self, deps: &[&Signal]) -> Result<Submission> {
        let mut b = self.batch()?;
        b.barrier_or(deps)?;
        b.submit()
    }

    fn kernarg_region(&self, len: u64, signal: &Signal) -> Result<(u64, *mut u8)> {
        loop {
            let oldest = {
                let mut k = self.0.kernargs.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(off) = k.try_alloc(len, signal, 0)? {
                    return Ok(k.address(off));
                }
                k.oldest()
            };
            // Full of running submissions: wait for the oldest, then retry.
            match oldest {
                Some((sig, target)) => {
                    sig.wait_with(
                        Condition::Lt(target + 1),
                        None,
                        DEFAULT_SPIN,
                        &[self.0.inactive.event_id()],
                        &|| self.check(),
                    )?;
                }
                None => return Err(Error::InvalidArgument("kernarg memory exhausted".into())),
            }
        }
    }
}

impl<'q> Batch<'q> {
    /// The queue the batch submits to.
    pub fn queue(&self) -> &'q AqlQueue {
        self.queue
    }
}

impl Batch<'_> {
    /// Adds a kernel dispatch.
    pub fn dispatch(&mut self, d: &Dispatch<'_>) -> Result<&mut Self> {
        let p = d.prepare()?;
        Ok(self.dispatch_prepared(&p, d.kernargs))
    }

    /// Adds a dispatch prepared with [`Dispatch::prepare`], with `kernargs` as its arguments.
    /// Validation and encoding were done once, when it was prepared: what is left per dispatch
    /// is copying the packet and staging the arguments.
    #[inline]
    pub fn dispatch_prepared(&mut self, p: &PreparedDispatch<'_>, kernargs: &[u8]) -> &mut Self {
        let mut packet = p.packet;
        self.max_group_segment = self.max_group_segment.max(p.group_segment);
        let size = kernargs.len().max(p.kernel.kernarg_size() as usize);
        // A kernel that takes no arguments gets no kernarg segment (address 0), as its
        // descriptor declares none to load.
        if size != 0 {
            let align = super::kernarg::KERNARG_ALIGN as usize;
            let len = size.div_ceil(align) * align;
            let offset = self.kernarg_bytes.len().div_ceil(align) * align;
            self.kernarg_bytes.resize(offset + len, 0);
            self.kernarg_bytes[offset..offset + kernargs.len()].copy_from_slice(kernargs);
            self.kernarg_fixups.push(self.packets.len());
            // An offset into the staged bytes until `place_kernargs` adds the region's address.
            aql::add_encoded_kernarg_base(&mut packet, offset as u64);
        }
        self.packets.push(packet);
        self
    }

    fn barrier(&mut self, deps: &[&Signal], or: bool) -> Result<&mut Self> {
        if or && deps.len() > 5 {
            return Err(Error::InvalidArgument(
                "a barrier-OR takes at most 5 signals".into(),
            ));
        }
        // One packet per five dependencies, and one (with none) for an empty list.
        let empty: [&[&Signal]; 1] = [&[]];
        let chunks = deps
            .chunks(5)
            .chain(empty.into_iter().filter(|_| deps.is_empty()));
        for chunk in chunks {
            let mut dep_signal = [0u64; 5];
            for (slot, s) in dep_signal.iter_mut().zip(chunk) {
                *slot = s.handle();
            }
            let p = BarrierPacket {
                barrier: true,
                acquire: FenceScope::System,
                release: FenceScope::System,
                dep_signal,
                completion_signal: 0,
            };
            self.packets.push(encode(if or {
                Packet::BarrierOr(p)
            } else {
                Packet::BarrierAnd(p)
            }));
        }
        Ok(self)
    }

    /// Adds a barrier-AND on `deps` (chained by fives).
    pub fn barrier_and(&mut self, deps: &[&Signal]) -> Result<&mut Self> {
        self.barrier(deps, false)
    }

    /// Adds a barrier-OR on `deps` (at most 5).
    pub fn barrier_or(&mut self, deps: &[&Signal]) -> Result<&mut Self> {
        self.barrier(deps, true)
    }

    /// Packets in the batch.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// Attaches the completion signal. The packet carrying it must start after everything
    /// before it has completed: the last packet when it has the barrier bit, else an empty
    /// barrier-AND appended for it, so an unordered last dispatch still overlaps its
    /// predecessors.
    fn finish(&mut self) -> Result<()> {
        let lds = self.queue.0.gpu.info().lds_bytes;
        if self.max_group_segment > lds {
            return Err(Error::InvalidArgument(format!(
                "a dispatch asks for {} bytes of LDS per work-group; {} has {lds}",
                self.max_group_segment,
                self.queue.0.gpu.info().gfx_target
            )));
        }
        let unordered_tail = self
            .packets
            .last()
            .is_some_and(|p| !aql::encoded_barrier(p));
        if unordered_tail {
            self.barrier(&[], false)?;
        }
        if self.packets.len() > self.queue.0.size_packets as usize {
            return Err(Error::InvalidArgument(format!(
                "batch of {} packets exceeds the queue's {} slots",
                self.packets.len(),
                self.queue.0.size_packets
            )));
        }
        let handle = self.signal.handle();
        if let Some(last) = self.packets.last_mut() {
            aql::set_encoded_completion_signal(last, handle);
            self.signal.arm_decrement();
        }
        Ok(())
    }

    /// A submission of nothing: no packet, no doorbell, complete at once.
    fn empty_submission(self) -> Submission {
        self.signal.value_atomic().store(0, Ordering::Release);
        Submission {
            queue: self.queue.clone(),
            signal: self.signal.clone(),
            last_index: self.queue.write_index().saturating_sub(1),
        }
    }

    fn write(mut self, mut r: aql::ring::Reservation<'_>) -> Submission {
        r.write_all_encoded(&self.packets);
        self.submitted = true;
        let last_index = r.submit();
        let q = self.queue;
        q.0.gpu.kfd().driver().doorbell_hint(q.0.gpu.id());
        Submission {
            queue: q.clone(),
            signal: self.signal.clone(),
            last_index,
        }
    }

    /// Copies the staged kernel arguments into the queue's kernarg memory and points the
    /// dispatches at them. `wait` says whether to wait for memory held by running submissions.
    fn place_kernargs(&mut self, wait: bool) -> Result<()> {
        if self.kernarg_bytes.is_empty() {
            return Ok(());
        }
        let len = self.kernarg_bytes.len() as u64;
        let (gpu, cpu) = if wait {
            self.queue.kernarg_region(len, &self.signal)?
        } else {
            let mut k = self
                .queue
                .0
                .kernargs
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            match k.try_alloc(len, &self.signal, 0)? {
                Some(off) => k.address(off),
                None => {
                    return Err(Error::QueueFull {
                        queue_id: self.queue.0.handle.id(),
                    })
                }
            }
        };
        // SAFETY: the region is `len` bytes of host-visible kernarg memory reserved for this
        // batch; the staging vector is a separate allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.kernarg_bytes.as_ptr(),
                cpu,
                self.kernarg_bytes.len(),
            )
        };
        for &i in &self.kernarg_fixups {
            if let Some(p) = self.packets.get_mut(i) {
                aql::add_encoded_kernarg_base(p, gpu);
            }
        }
        Ok(())
    }

    /// Submits the batch, waiting for ring space if needed. An empty batch writes nothing and
    /// rings no doorbell; its submission is complete at once.
    pub fn submit(mut self) -> Result<Submission> {
        self.finish()?;
        if self.packets.is_empty() {
            return Ok(self.empty_submission());
        }
        // What the CPU wrote to VRAM reaches the GPU before the packets can run.
        self.queue.0.gpu.kfd().shared.flush_hdp_if_written();
        self.place_kernargs(true)?;
        let q = self.queue;
        let n = self.packets.len() as u32;
        let r =
            q.0.ring
                .reserve(n, |spins| {
                    if spins < 64 {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                    // A full ring whose queue died never drains: give up on its error.
                    if spins % crate::exception::POLL_ROUNDS == 0 {
                        let _ = q.0.handle.poll_exceptions();
                    }
                    q.check().is_ok()
                })
                .map_err(|e| ring_error(q, e))?;
        Ok(self.write(r))
    }

    /// Submits the batch only if the ring has room now: [`Error::QueueFull`] otherwise, with
    /// nothing written.
    pub fn try_submit(mut self) -> Result<Submission> {
        self.finish()?;
        if self.packets.is_empty() {
            return Ok(self.empty_submission());
        }
        self.queue.0.gpu.kfd().shared.flush_hdp_if_written();
        let q = self.queue;
        q.check()?;
        let in_flight = q.0.ring.write_index().saturating_sub(q.0.ring.read_index());
        let free = u64::from(q.0.size_packets).saturating_sub(in_flight);
        if self.packets.len() as u64 > free {
            // Don't take kernarg memory for a batch the ring cannot take now.
            return Err(Error::QueueFull {
                queue_id: q.0.handle.id(),
            });
        }
        self.place_kernargs(false)?;
        let r =
            q.0.ring
                .try_reserve(self.packets.len() as u32)
                .map_err(|e| ring_error(q, e))?;
        Ok(self.write(r))
    }
}

fn ring_error(q: &AqlQueue, e: RingError) -> Error {
    match e {
        RingError::Full => Error::QueueFull {
            queue_id: q.0.handle.id(),
        },
        RingError::Abandoned => q.check().err().unwrap_or(Error::QueueFull {
            queue_id: q.0.handle.id(),
        }),
        e => Error::InvalidArgument(format!("AQL ring: {e}")),
    }
}

const _: () = {
    const fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<AqlQueue>();
};
