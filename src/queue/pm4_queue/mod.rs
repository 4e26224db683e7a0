//! [`Pm4Queue`]: a PM4 compute queue (KFD queue type COMPUTE), the interface kfdtest drives and
//! the lowest level a runtime can dispatch through.
//!
//! The ring's read and write pointers live in their own allocation. Packets are encoded for the
//! GPU's family and written with [`pm4::ring::Pm4Ring`]; one submission commits the write pointer
//! and rings the doorbell once.

mod dispatch;

use super::cwsr::ComputeAreas;
use super::handle::KfdQueue;
use super::ring_queue::{self, PointerLayout};
use super::QueuePriority;
use crate::device::Gpu;
use crate::error::report::QueueKind;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::memory::Buffer;
use kfd_sys::bindings::*;
use kfd_sys::DriverExt;

use pm4::ring::{Pm4Ring, RingError};
use pm4::{data_sel, event as ev, int_sel, CompareFunction, GfxFamily, Pm4Packet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Options of [`Gpu::create_pm4_queue`]: start from `default()` and change what you need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pm4QueueOptions {
    /// Ring size in bytes: a power of two, at least 1 KiB. Default 64 KiB.
    pub ring_bytes: u32,
    /// Priority; normal by default.
    pub priority: QueuePriority,
}

impl Default for Pm4QueueOptions {
    fn default() -> Self {
        Pm4QueueOptions {
            ring_bytes: 64 * 1024,
            priority: QueuePriority::Normal,
        }
    }
}

impl Pm4QueueOptions {
    /// Ring size in bytes (a power of two, at least 1 KiB).
    pub fn with_ring_bytes(mut self, bytes: u32) -> Self {
        self.ring_bytes = bytes;
        self
    }

    /// Queue priority.
    pub fn with_priority(mut self, priority: QueuePriority) -> Self {
        self.priority = priority;
        self
    }
}

/// The cache actions of a fence that tells the CPU work is done, as Linux's compute rings write
/// them (`gfx_v9_0_ring_emit_fence`: write back and invalidate the L2, invalidate the vector
/// L1 and the L2 metadata; `gfx_v10_0_ring_emit_fence`: write back GL2 and the GLM, with the
/// bypass cache policy): without the write-back, what the work wrote can sit in the L2 where
/// the CPU does not see it.
fn fence_cache_actions(family: GfxFamily) -> u32 {
    use pm4::release_mem::{cache_policy, gcr, gfx9};
    if family.is_gfx10_plus() {
        gcr::GL2_WB | gcr::GLM_WB | gcr::GLM_INV | cache_policy(3)
    } else {
        gfx9::TC_WB_ACTION_EN | gfx9::TCL1_ACTION_EN | gfx9::TC_ACTION_EN | gfx9::TC_MD_ACTION_EN
    }
}

/// A PM4 compute queue.
pub struct Pm4Queue {
    /// The KFD queue; `None` once destroyed (in Drop, before the memory it uses goes).
    pub(crate) handle: Option<KfdQueue>,
    pub(crate) gpu: Gpu,
    pub(crate) family: GfxFamily,
    pub(crate) ring: Mutex<Pm4Ring>,
    /// rptr (u32 at 0), wptr (u64 at 8), a fence word per XCC (u32s from 64): apart from any
    /// other queue's.
    pub(crate) pointers: Arc<Buffer>,
    pub(crate) fence_seq: AtomicU32,
    /// Scratch and dispatch-packet images that submitted dispatches may still use: kept until
    /// [`Pm4Queue::finish`] has seen everything before it complete, or the queue goes.
    pub(crate) dispatch_memory: Mutex<dispatch::DispatchMemory>,
    /// The queues GPUs without an MMIO-remap page have their HDP flushed through.
    pub(crate) hdp: crate::queue::hdp_queue::HdpQueues,
    pub(crate) _ring_mem: Arc<Buffer>,
    pub(crate) areas: ComputeAreas,
}

// SAFETY: the ring writer is behind a mutex; the pointers are into buffers the queue owns.
unsafe impl Sync for Pm4Queue {}

impl Drop for Pm4Queue {
    fn drop(&mut self) {
        if let Some(h) = &self.handle {
            self.gpu.kfd().shared.reports.unregister(h.id());
        }
        // DESTROY_QUEUE before the ring, pointers, EOP and CWSR memory are freed.
        drop(self.handle.take());
    }
}

impl std::fmt::Debug for Pm4Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pm4Queue")
            .field("queue_id", &self.handle().id())
            .field("gpu", &self.gpu)
            .finish()
    }
}

const RPTR: u64 = 0;
const WPTR: u64 = 8;
const FENCE: u64 = 64;

impl Gpu {
    /// Creates a PM4 compute queue.
    pub fn create_pm4_queue(&self, options: Pm4QueueOptions) -> Result<Pm4Queue> {
        let bytes = options.ring_bytes;
        if !bytes.is_power_of_two() || bytes < 1024 {
            return Err(Error::QueueSize {
                kind: "PM4 ring",
                requested: bytes as u64,
                unit: "bytes",
                rule: "a power of two >= 1024",
            });
        }
        let info = self.info().clone();
        let family =
            GfxFamily::from_gfx_target_version(info.gfx_target_version).ok_or_else(|| {
                Error::NotOnThisGpu {
                    gfx_target: info.gfx_target.clone(),
                    what: "PM4 packet encoding in kfdrt".into(),
                }
            })?;
        let areas = ComputeAreas::new(self, true)?;
        let layout = PointerLayout {
            rptr: RPTR,
            wptr: WPTR,
        };
        // SAFETY: the EOP and CWSR areas are the queue's (`areas`), which it keeps until it has
        // destroyed the KFD queue.
        let q = unsafe {
            ring_queue::create(
                self,
                QueueKind::Pm4,
                bytes,
                layout,
                |args| {
                    args.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE;
                    args.queue_priority = options.priority.kfd();
                    args.eop_buffer_address = areas.eop.as_ref().map_or(0, Buffer::gpu_address);
                    args.eop_buffer_size = areas.eop.as_ref().map_or(0, Buffer::size);
                    args.ctx_save_restore_address = areas.cwsr.gpu_address();
                    args.ctx_save_restore_size = areas.sizes.ctx_save_restore_size;
                    args.ctl_stack_size = areas.sizes.ctl_stack_size;
                },
                move |d: &[u32]| Pm4Packet::decode(family, d),
            )
        }?;
        let (handle, pointers, ring_mem, ptr) = (q.handle, q.pointers, q.ring, q.pointers_ptr);
        let doorbell = handle.doorbell();
        // SAFETY: the ring, pointers and doorbell outlive the writer (owned by the queue / Kfd);
        // offsets are inside the 4 KiB pointer page and suitably aligned.
        let ring = unsafe {
            Pm4Ring::new(
                q.ring_ptr.cast(),
                bytes / 4,
                ptr.add(RPTR as usize) as *const AtomicU32,
                ptr.add(WPTR as usize) as *const AtomicU64,
                doorbell,
            )
        };
        // The size was checked and the pointers are at aligned offsets of a page: the only
        // error, `BadGeometry`, cannot happen.
        let ring = ring.expect("a PM4 ring of a checked size over aligned pointers");
        Ok(Pm4Queue {
            handle: Some(handle),
            gpu: self.clone(),
            family,
            ring: Mutex::new(ring),
            pointers,
            fence_seq: AtomicU32::new(0),
            dispatch_memory: Mutex::default(),
            hdp: Default::default(),
            _ring_mem: ring_mem,
            areas,
        })
    }
}

impl Pm4Queue {
    fn handle(&self) -> &KfdQueue {
        // Only Drop takes it.
        self.handle
            .as_ref()
            .unwrap_or_else(|| unreachable!("queue used after destruction"))
    }

    /// KFD's queue id.
    pub fn id(&self) -> u32 {
        self.handle().id()
    }

    /// The GPU the queue runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The GPU family the packets are encoded for.
    pub fn family(&self) -> GfxFamily {
        self.family
    }

    fn word(&self, off: u64) -> u64 {
        self.pointers.as_ptr().map_or(0, |p| p as u64 + off)
    }

    /// The CP's read pointer (dword offset in the ring).
    pub fn rptr(&self) -> u32 {
        // SAFETY: the pointer page is owned by the queue; the word is 4-byte aligned.
        unsafe { &*(self.word(RPTR) as *const AtomicU32) }.load(Ordering::Acquire)
    }

    /// The committed write pointer (dwords, monotonic).
    pub fn wptr(&self) -> u64 {
        // SAFETY: as in `rptr`; 8-byte aligned.
        unsafe { &*(self.word(WPTR) as *const AtomicU64) }.load(Ordering::Acquire)
    }

    /// Ring size in dwords.
    pub fn size_dwords(&self) -> u32 {
        self.ring.lock().unwrap_or_else(|p| p.into_inner()).size()
    }

    /// Writes `packets` (waiting for room as the CP consumes), then commits and rings the doorbell
    /// once. Returns the new write pointer. Fails with [`Error::Timeout`] if the CP makes no room
    /// within `timeout`.
    ///
    /// # Safety
    /// The command processor will read and write every address the packets name (and run the
    /// kernels they dispatch, with their arguments): that memory must stay allocated and mapped
    /// to the GPU until the packets have run. kfdrt cannot see addresses inside packets. That
    /// holds also when this fails with [`Error::Timeout`]: the packets written before the ring
    /// filled up were committed, and they run.
    pub unsafe fn submit(&self, packets: &[Pm4Packet], timeout: Duration) -> Result<u64> {
        self.gpu.kfd().shared.dev.check_process()?;
        let wptr = self.submit_packets(packets, timeout)?;
        if let Some(wait) = self.gpu.kfd().shared.debug.serialize_wait() {
            // `finish` submits a fence through `submit_packets`, not through here.
            self.finish(wait.unwrap_or(Duration::from_secs(u64::from(u32::MAX))))?;
        }
        Ok(wptr)
    }

    /// The exceptions the queue's waves raised, which KFD reports through its context-save
    /// area: the queue's dispatches never complete after one.
    fn check_waves(&self) -> Result<()> {
        let exceptions = self.areas.exceptions.raised();
        if exceptions.is_empty() {
            return Ok(());
        }
        Err(Error::QueueError {
            queue_id: self.handle().id(),
            fault: crate::queue::QueueFault {
                code: 0,
                exceptions,
            },
            report: None,
        })
    }

    fn submit_packets(&self, packets: &[Pm4Packet], timeout: Duration) -> Result<u64> {
        // A queue its GPU's fault (or its waves' exceptions) stopped runs nothing more.
        self.handle().check_exceptions()?;
        self.check_waves()?;
        // What the CPU wrote to VRAM reaches the GPU before the packets can run.
        crate::queue::hdp_queue::flush_before_submit(self.gpu.kfd(), &self.hdp)?;
        let mut dwords = Vec::new();
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        let start = Instant::now();
        let mut full_rounds = 0u32;
        for p in packets {
            log::trace!("kfdrt: PM4 queue {}: {p:?}", self.handle().id());
            dwords.clear();
            p.encode(self.family, &mut dwords);
            loop {
                match ring.try_write(&dwords) {
                    Ok(_) => break,
                    Err(RingError::Full) => {
                        // Let the CP see what is written so far, then wait for it to make room.
                        ring.commit();
                        self.gpu.kfd().driver().doorbell_hint(self.gpu.id());
                        full_rounds = full_rounds.wrapping_add(1);
                        if full_rounds % 64 == 0 {
                            self.handle().poll_exceptions()?;
                        }
                        if start.elapsed() > timeout {
                            return Err(Error::Timeout {
                                what: format!(
                                    "room in PM4 queue {} (rptr {})",
                                    self.handle().id(),
                                    self.rptr()
                                ),
                                after_ms: timeout.as_millis() as u64,
                                report: None,
                            });
                        }
                        std::thread::yield_now();
                    }
                    Err(e) => return Err(Error::Pm4Packet(e)),
                }
            }
        }
        ring.commit();
        self.gpu.kfd().driver().doorbell_hint(self.gpu.id());
        Ok(ring.wptr())
    }

    /// WRITE_DATA of `data` to `addr`.
    pub fn write_data(&self, addr: u64, data: &[u32]) -> Pm4Packet {
        Pm4Packet::WriteData {
            dst_sel: 5,
            confirm: true,
            addr,
            data: data.to_vec(),
        }
    }

    /// WAIT_REG_MEM until `(*addr & mask) <func> reference`.
    pub fn wait_mem(
        &self,
        addr: u64,
        func: CompareFunction,
        reference: u32,
        mask: u32,
    ) -> Pm4Packet {
        Pm4Packet::WaitRegMem {
            function: func,
            mem_space: 1,
            addr,
            reference,
            mask,
            poll_interval: 4,
        }
    }

    /// The packets that raise `event`'s interrupt at end of pipe once everything submitted
    /// before them is done (a RELEASE_MEM writing its id to the event's mailbox, as KFD
    /// expects for signal events).
    ///
    /// On a GPU of several XCCs (MI300X) each XCC runs the stream and would raise the event
    /// when its own share of the work is done, so the first to finish would report it all
    /// done: there every XCC but the first writes its fence word, and the first waits for them
    /// before it raises the event.
    pub fn signal_event(&self, event: &Event) -> Result<Vec<Pm4Packet>> {
        let mailbox = event
            .mailbox_address()
            .ok_or(Error::WrongEventKind { needed: "signal" })?;
        let raise = self.release(
            mailbox,
            event.id(),
            int_sel::SEND_INT_ON_CONFIRM,
            event.id(),
        );
        let xccs = self.xccs();
        if xccs == 1 {
            return Ok(vec![raise]);
        }
        let value = self.next_fence_value();
        let mut p = Vec::new();
        for x in 1..xccs {
            self.for_xcc(
                &mut p,
                x,
                self.release(self.fence_address(x), value, int_sel::NONE, 0),
            )?;
        }
        let mut first: Vec<Pm4Packet> = (1..xccs)
            .map(|x| {
                self.wait_mem(
                    self.fence_address(x),
                    CompareFunction::GreaterEqual,
                    value,
                    !0,
                )
            })
            .collect();
        first.push(raise);
        p.extend(
            // One WAIT_REG_MEM per other XCC and a RELEASE_MEM: far below the predicate's
            // 0x3FFF dwords.
            Pm4Packet::predicated(self.family, 1, &first).expect("the XCC join fits a PRED_EXEC"),
        );
        Ok(p)
    }

    /// An end-of-pipe RELEASE_MEM writing `value` to `addr` with the fence cache actions,
    /// raising interrupt `int_ctxid` if `int` says so.
    fn release(&self, addr: u64, value: u32, int: u32, int_ctxid: u32) -> Pm4Packet {
        Pm4Packet::ReleaseMem {
            event_type: ev::CACHE_FLUSH_AND_INV_TS,
            event_index: 5,
            cache_action: fence_cache_actions(self.family),
            dst_sel: 0,
            int_sel: int,
            data_sel: data_sel::DATA32,
            addr,
            data: u64::from(value),
            int_ctxid,
        }
    }

    /// XCC `xcc`'s fence word.
    fn fence_address(&self, xcc: u32) -> u64 {
        self.pointers.gpu_address() + FENCE + 4 * u64::from(xcc)
    }

    fn next_fence_value(&self) -> u32 {
        self.fence_seq
            .fetch_add(1, Ordering::AcqRel)
            .wrapping_add(1)
    }

    /// Submits a RELEASE_MEM that writes an increasing value to the queue's fence word and waits
    /// until it lands: everything submitted before has completed.
    pub fn finish(&self, timeout: Duration) -> Result<()> {
        let value = self.next_fence_value();
        // What dispatches submitted before the fence used, freed once it passes.
        let retired = std::mem::take(
            &mut self
                .dispatch_memory
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retired,
        );
        let waited = self.wait_fence(value, timeout);
        let mut mem = self
            .dispatch_memory
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match waited {
            Ok(()) => Ok(()),
            Err(e) => {
                // Not seen idle: keep it all.
                mem.retired.extend(retired);
                Err(e.with_report(&self.gpu.kfd().shared))
            }
        }
    }

    /// Has every XCC write `value` to its fence word at end of pipe, and waits until they all
    /// have (on a GPU of several XCCs each XCC's word tells of its own share of the work).
    fn wait_fence(&self, value: u32, timeout: Duration) -> Result<()> {
        let mut packets = Vec::new();
        for x in 0..self.xccs() {
            self.for_xcc(
                &mut packets,
                x,
                self.release(self.fence_address(x), value, int_sel::NONE, 0),
            )?;
        }
        self.submit_packets(&packets, timeout)?;
        let start = Instant::now();
        // Sequence numbers wrap: a word at or past `value` (within half the range) has passed.
        let passed = |w: u32| (w.wrapping_sub(value) as i32) >= 0;
        let mut rounds = 0u32;
        for x in 0..self.xccs() {
            // SAFETY: the fence words are in the queue's pointer page (64 + 4 * 8 bytes at most
            // of a page), 4-byte aligned.
            let word = unsafe { &*(self.word(FENCE + 4 * u64::from(x)) as *const AtomicU32) };
            while !passed(word.load(Ordering::Acquire)) {
                self.check_waves()?;
                rounds = rounds.wrapping_add(1);
                if rounds % crate::exception::POLL_ROUNDS == 0 {
                    self.handle().poll_exceptions()?;
                }
                if start.elapsed() > timeout {
                    return Err(Error::Timeout {
                        what: format!(
                            "PM4 queue {} fence {value} (XCC {x} at {})",
                            self.handle().id(),
                            word.load(Ordering::Acquire)
                        ),
                        after_ms: timeout.as_millis() as u64,
                        report: None,
                    });
                }
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    /// Stops the queue from running packets (`UPDATE_QUEUE` with percentage 0); packets
    /// submitted meanwhile wait in the ring until [`Pm4Queue::enable`].
    pub fn disable(&self) -> Result<()> {
        self.update(false)
    }

    /// Lets a disabled queue run again (`UPDATE_QUEUE` with full percentage).
    pub fn enable(&self) -> Result<()> {
        self.update(true)
    }

    fn update(&self, enabled: bool) -> Result<()> {
        let mut a = kfd_ioctl_update_queue_args {
            ring_base_address: self._ring_mem.gpu_address(),
            queue_id: self.handle().id(),
            ring_size: self._ring_mem.allocated_size().min(u64::from(u32::MAX)) as u32,
            queue_percentage: if enabled { KFD_MAX_QUEUE_PERCENTAGE } else { 0 },
            queue_priority: QueuePriority::Normal.kfd(),
        };
        // SAFETY: the ring address is the queue's own ring, alive as long as the queue.
        unsafe { self.gpu.kfd().driver().kfd_ioctl_unchecked(&mut a) }
            .map(drop)
            .map_err(Error::ioctl(&a))
    }
}
