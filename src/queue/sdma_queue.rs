//! [`SdmaQueue`]: a queue on one of the GPU's SDMA engines, for copies and fills that leave the
//! compute units free.
//!
//! The engine writes scratch data just past the read pointer it writes back, so the queue's
//! pointers live in a dedicated allocation of their own, the write pointer 64 bytes away from the
//! read pointer. A copy's completion signal is decremented once, after its last packet (large
//! copies are split at the engine's per-packet maximum), then the signal's event is raised with
//! a FENCE to its mailbox and a TRAP.

use super::handle::KfdQueue;
use super::hdp_queue::HdpQueues;
use super::held::{Held, RetireList};
use super::ring_queue::{self, PointerLayout};
use super::QueuePriority;
use crate::device::Gpu;
use crate::error::report::QueueKind;
use crate::error::{Error, Result};
use crate::memory::Buffer;
use crate::signal::{Condition, Signal, DEFAULT_SPIN};
use kfd_sys::bindings::*;
use sdma::ring::{RingError, SdmaRing};
use sdma::{AtomicOp, CompareFunction, SdmaPacket, SdmaVersion};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const RPTR: u64 = 0;
/// Away from the engine's scratch words just after the read pointer.
const WPTR: u64 = 64;
/// Offsets of `start_ts` and `end_ts` in `amd_signal_t`.
const START_TS: u64 = 32;
const END_TS: u64 = 40;

/// The FENCE writes that take a signal whose value is `before` to `after` on a host without
/// PCIe atomics, where an SDMA atomic on system memory never lands (ROCr's
/// `BlitSdma::SubmitCommand` without `platform_atomic_support_`). Nothing else writes the value
/// meanwhile (the queue owns the signal), and the low half goes first, so a waiter never sees a
/// value below `after` before the end.
fn completion_writes(addr: u64, before: i64, after: i64) -> Vec<SdmaPacket> {
    let halves = |v: i64| (v as u64 as u32, (v as u64 >> 32) as u32);
    let ((_, high_before), (low, high)) = (halves(before), halves(after));
    let mut writes = vec![SdmaPacket::Fence {
        addr,
        data: low,
        mtype_uncached: true,
    }];
    if high != high_before {
        writes.push(SdmaPacket::Fence {
            addr: addr + 4,
            data: high,
            mtype_uncached: true,
        });
    }
    writes
}

/// An SDMA queue. Cheap to clone; the queue is destroyed when the last clone and the last
/// [`CopyCompletion`] from it are gone.
#[derive(Clone)]
pub struct SdmaQueue(Arc<SdmaQueueShared>);

struct SdmaQueueShared {
    /// The KFD queue; `None` once destroyed (in Drop, before the memory it uses goes).
    handle: Option<KfdQueue>,
    gpu: Gpu,
    version: SdmaVersion,
    ring: Mutex<SdmaRing>,
    pointers: Arc<Buffer>,
    /// What copies dropped before completing still hold.
    retired: RetireList,
    /// The queues other GPUs' HDP is flushed through before this queue's work.
    hdp: HdpQueues,
    _ring_mem: Arc<Buffer>,
}

// SAFETY: the ring writer is behind a mutex; its pointers are into buffers the queue owns.
unsafe impl Sync for SdmaQueueShared {}
// SAFETY: as above; nothing in it is tied to a thread.
unsafe impl Send for SdmaQueueShared {}

impl SdmaQueueShared {
    fn handle(&self) -> &KfdQueue {
        // Only Drop takes it.
        self.handle
            .as_ref()
            .unwrap_or_else(|| unreachable!("queue used after destruction"))
    }
}

impl Drop for SdmaQueueShared {
    fn drop(&mut self) {
        if let Some(h) = &self.handle {
            self.gpu.kfd().shared.reports.unregister(h.id());
        }
        // The engine stops with the queue: then what dropped copies hold can go.
        drop(self.handle.take());
        self.retired.abandon();
    }
}

impl std::fmt::Debug for SdmaQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A copy or fill in flight. It owns its completion signal and keeps the buffers it copies
/// allocated until the completion is observed; dropped before that, it hands them to its queue,
/// which lets them go once the engine is done.
#[must_use = "a copy's completion should be waited for"]
#[derive(Debug)]
pub struct CopyCompletion {
    signal: Signal,
    /// The SDMA queue running the copy, and what the copy uses.
    engine: Option<(SdmaQueue, Held)>,
    /// Set when the copy ran as a kernel: its submission holds what it uses and also reports
    /// queue errors.
    kernel: Option<super::Submission>,
    /// The SDMA submission's place in its queue (the timeline's key for it).
    sequence: u64,
}

impl CopyCompletion {
    pub(crate) fn from_submission(s: super::Submission) -> Self {
        CopyCompletion {
            signal: s.signal().clone(),
            engine: None,
            kernel: Some(s),
            sequence: 0,
        }
    }

    /// Waits until the copy has completed. A fault on the engine's GPU ends the wait with
    /// [`Error::DeviceFault`].
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        if let Some(k) = &self.kernel {
            return k.wait(timeout);
        }
        let check = || {
            self.engine
                .as_ref()
                .map_or(Ok(()), |(q, _)| q.0.handle().check_exceptions())
        };
        let shared = &self.signal.kfd().shared;
        let timeout = timeout.or(shared.debug.wait_timeout);
        let r = self
            .signal
            .wait_with(Condition::Lt(1), timeout, DEFAULT_SPIN, &[], &check)
            .map(drop)
            .map_err(|e| e.with_report(shared));
        if let (Some(rec), Some((q, _)), true) = (&shared.recorder, &self.engine, r.is_ok()) {
            let (start, end) = self.signal.timestamps();
            rec.completed(q.id(), self.sequence, start, end);
        }
        r
    }

    /// Whether it has completed.
    pub fn is_complete(&self) -> bool {
        self.signal.value() <= 0
    }

    /// The completion signal.
    pub fn signal(&self) -> &Signal {
        &self.signal
    }
}

impl Drop for CopyCompletion {
    fn drop(&mut self) {
        if let Some((queue, held)) = self.engine.take() {
            if !self.is_complete() {
                queue.0.retired.retire(self.signal.clone(), held);
            }
        }
    }
}

impl std::fmt::Debug for SdmaQueueShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SdmaQueue")
            .field("queue_id", &self.handle().id())
            .field("gpu", &self.gpu)
            .finish()
    }
}

impl Gpu {
    /// Creates an SDMA queue on one of the GPU's PCIe SDMA engines. Fails with the driver's
    /// `ENOMEM` when every engine queue slot is taken (see [`crate::copy::CopyEngine`], which then
    /// falls back to copy kernels).
    pub fn create_sdma_queue(&self) -> Result<SdmaQueue> {
        self.sdma_queue_of_type(KFD_IOC_QUEUE_TYPE_SDMA, 0)
    }

    /// Creates an SDMA queue on one of the GPU's XGMI SDMA engines
    /// (`KFD_IOC_QUEUE_TYPE_SDMA_XGMI`), for copies to and from GPUs of its XGMI hive, as ROCr
    /// uses them. [`Error::Unsupported`] on a GPU without XGMI engines; the driver's `ENOMEM`
    /// when their slots are taken.
    pub fn create_sdma_xgmi_queue(&self) -> Result<SdmaQueue> {
        if self.info().sdma_xgmi_engines == 0 {
            return Err(Error::Unsupported(format!(
                "GPU {:#x} has no XGMI SDMA engines",
                self.id()
            )));
        }
        self.sdma_queue_of_type(KFD_IOC_QUEUE_TYPE_SDMA_XGMI, 0)
    }

    /// Creates an SDMA queue on engine `engine` (0 to the GPU's PCIe plus XGMI engines, less
    /// one), as peer-to-peer copies want a particular link's engine. Needs KFD 1.17
    /// ([`Error::NeedsKfd`] before); fails with the driver's `ENOMEM` when that engine's queue
    /// slots are taken.
    pub fn create_sdma_queue_on_engine(&self, engine: u32) -> Result<SdmaQueue> {
        self.kfd()
            .shared
            .dev
            .require(kfd_sys::Feature::SdmaEngineId)?;
        let info = self.info();
        let engines = info.sdma_engines + info.sdma_xgmi_engines;
        if engine >= engines {
            return Err(Error::NotOnThisGpu {
                gfx_target: info.gfx_target.clone(),
                what: format!(
                    "SDMA engine {engine} (GPU {:#x} has {engines})",
                    info.gpu_id
                ),
            });
        }
        self.sdma_queue_of_type(KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID, engine)
    }

    fn sdma_queue_of_type(&self, queue_type: u32, sdma_engine_id: u32) -> Result<SdmaQueue> {
        let info = self.info().clone();
        let version =
            SdmaVersion::from_gfx_target_version(info.gfx_target_version).ok_or_else(|| {
                Error::NotOnThisGpu {
                    gfx_target: info.gfx_target.clone(),
                    what: "SDMA packet encoding in kfdrt".into(),
                }
            })?;
        let ring_bytes: u32 = 64 * 1024;
        let layout = PointerLayout {
            rptr: RPTR,
            wptr: WPTR,
        };
        // SAFETY: `fill` adds no address.
        let q = unsafe {
            ring_queue::create(
                self,
                QueueKind::Sdma,
                ring_bytes,
                layout,
                |args| {
                    args.queue_type = queue_type;
                    args.queue_priority = QueuePriority::Normal.kfd();
                    args.sdma_engine_id = sdma_engine_id;
                },
                move |d: &[u32]| SdmaPacket::decode(version, d),
            )
        }?;
        let (handle, pointers, ring_mem, ptr) = (q.handle, q.pointers, q.ring, q.pointers_ptr);
        let doorbell = handle.doorbell();
        // SAFETY: ring, pointers and doorbell outlive the writer (owned by the queue / Kfd).
        let ring = unsafe {
            SdmaRing::new(
                q.ring_ptr,
                ring_bytes,
                ptr.add(RPTR as usize) as *const AtomicU64,
                ptr.add(WPTR as usize) as *const AtomicU64,
                doorbell,
            )
        };
        // The size was checked and the pointers are at aligned offsets of a page: the only
        // error, `BadGeometry`, cannot happen.
        let ring = ring.expect("a SDMA ring of a checked size over aligned pointers");
        Ok(SdmaQueue(Arc::new(SdmaQueueShared {
            handle: Some(handle),
            gpu: self.clone(),
            version,
            ring: Mutex::new(ring),
            pointers,
            retired: RetireList::default(),
            hdp: HdpQueues::default(),
            _ring_mem: ring_mem,
        })))
    }
}

/// Checks a fill's offset and length: both dword multiples, not empty.
pub(crate) fn check_fill(dst_off: u64, bytes: u64) -> Result<()> {
    if bytes == 0 {
        return Err(Error::ZeroSize { what: "fill" });
    }
    for (what, value) in [("fill size", bytes), ("fill offset", dst_off)] {
        if value % 4 != 0 {
            return Err(Error::Misaligned {
                what,
                value,
                align: 4,
            });
        }
    }
    Ok(())
}

/// Checks that `len` bytes at `off` lie inside `buf` and that `gpu` can reach the buffer.
pub(crate) fn check_range(
    gpu: &Gpu,
    buf: &Buffer,
    off: u64,
    len: u64,
    what: &'static str,
) -> Result<u64> {
    gpu.kfd().same_device(buf.kfd(), "a copy's buffer")?;
    if off.checked_add(len).is_none_or(|e| e > buf.size()) {
        return Err(Error::OutOfBounds {
            what,
            offset: off,
            len,
            size: buf.size(),
        });
    }
    if !buf.mapped_gpus().contains(&gpu.id()) {
        return Err(Error::NotOnGpu {
            what: format!("the {what} buffer (map it with Buffer::map_to)"),
            gpu_id: gpu.id(),
        });
    }
    Ok(buf.gpu_address() + off)
}

impl SdmaQueue {
    /// KFD's queue id.
    pub fn id(&self) -> u32 {
        self.0.handle().id()
    }

    /// The engine generation.
    pub fn version(&self) -> SdmaVersion {
        self.0.version
    }

    /// The engine's read pointer (bytes, monotonic).
    pub fn rptr(&self) -> u64 {
        let mut v = [0u8; 8];
        // The pointer page is host-visible GTT (checked at creation), so the read succeeds; a
        // failure would read as 0.
        let _ = self.0.pointers.read(RPTR, &mut v);
        u64::from_le_bytes(v)
    }

    /// The committed write pointer (bytes, monotonic).
    pub fn wptr(&self) -> u64 {
        self.0.ring.lock().unwrap_or_else(|p| p.into_inner()).wptr()
    }

    /// The queue's read/write pointer page (tests inspect the engine's scratch writes).
    pub fn pointer_page(&self) -> &Buffer {
        &self.0.pointers
    }

    /// Writes `packets` (waiting up to `timeout` for the engine to make room), then commits once.
    ///
    /// # Safety
    /// The engine will read and write every address the packets name: that memory must stay
    /// allocated and mapped to the GPU until the packets have run (kfdrt cannot see addresses
    /// inside packets; [`SdmaQueue::copy`] and [`SdmaQueue::fill`] keep their buffers alive).
    /// That holds also when this fails: a submission larger than the free ring space is
    /// committed in parts as the engine makes room, so a timeout may leave its first packets
    /// committed, and they run.
    pub unsafe fn submit(&self, packets: &[SdmaPacket], timeout: Duration) -> Result<u64> {
        self.0.gpu.kfd().shared.dev.check_process()?;
        self.submit_packets(packets, timeout, &mut false)
    }

    /// [`SdmaQueue::submit`]; `committed` is set once any of the packets was published.
    fn submit_packets(
        &self,
        packets: &[SdmaPacket],
        timeout: Duration,
        committed: &mut bool,
    ) -> Result<u64> {
        // A queue its GPU's fault stopped runs nothing more.
        self.0.handle().check_exceptions()?;
        // What the CPU wrote to VRAM reaches the GPU before the packets can run: this GPU's
        // HDP, where it has no remap page, by an HDP flush ahead of them in this ring.
        let kfd = self.0.gpu.kfd();
        let own = 1 << (self.0.gpu.index() % 32);
        let pageless = kfd.shared.flush_hdp_if_written();
        if pageless & !own != 0 {
            self.0.hdp.flush(kfd, pageless & !own)?;
        }
        if pageless & own == 0 {
            return self.write_packets(packets, timeout, committed);
        }
        let flushed: Vec<SdmaPacket> = std::iter::once(SdmaPacket::HdpFlush)
            .chain(packets.iter().cloned())
            .collect();
        let r = self.write_packets(&flushed, timeout, committed);
        if r.is_err() && !*committed {
            kfd.shared.hdp_still_written(own);
        }
        r
    }

    /// Flushes this queue's GPU's HDP and waits until the engine has done it (for work on
    /// other queues, when the GPU has no MMIO-remap page).
    pub(crate) fn flush_hdp_and_wait(&self) -> Result<()> {
        self.0.handle().check_exceptions()?;
        let timeout = self.wait_limit();
        let wptr = self.write_packets(&[SdmaPacket::HdpFlush], timeout, &mut false)?;
        let start = Instant::now();
        let mut rounds = 0u32;
        while self.rptr() < wptr {
            self.waited_round(&mut rounds, start, timeout, "an HDP flush on SDMA queue")?;
            if rounds < 256 {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
        Ok(())
    }

    /// How long a wait on the engine (for room in the ring, for an HDP flush) lasts at most: as
    /// long as any wait (the debug wait timeout, or a minute).
    fn wait_limit(&self) -> Duration {
        self.0
            .gpu
            .kfd()
            .shared
            .debug
            .wait_timeout
            .unwrap_or(Duration::from_secs(60))
    }

    /// One round of waiting on the engine: every 64th looks for an exception of the queue, and
    /// past `timeout` since `start` the wait ends with a timeout for `what` (this queue's).
    fn waited_round(
        &self,
        rounds: &mut u32,
        start: Instant,
        timeout: Duration,
        what: &str,
    ) -> Result<()> {
        *rounds = rounds.wrapping_add(1);
        if *rounds % 64 == 0 {
            self.0.handle().poll_exceptions()?;
        }
        if start.elapsed() > timeout {
            return Err(Error::Timeout {
                what: format!("{what} {}", self.0.handle().id()),
                after_ms: timeout.as_millis() as u64,
                report: None,
            });
        }
        Ok(())
    }

    /// Writes `packets` and commits them, as [`SdmaQueue::submit_packets`] without the HDP.
    fn write_packets(
        &self,
        packets: &[SdmaPacket],
        timeout: Duration,
        committed: &mut bool,
    ) -> Result<u64> {
        let gfx = self.0.gpu.info().gfx_target_version;
        let mut ring = self.0.ring.lock().unwrap_or_else(|p| p.into_inner());
        let before = ring.wptr();
        let mut dwords = Vec::new();
        let start = Instant::now();
        let mut full_rounds = 0u32;
        for p in packets {
            log::trace!("kfdrt: SDMA queue {}: {p:?}", self.0.handle().id());
            dwords.clear();
            p.encode(self.0.version, gfx, &mut dwords)?;
            loop {
                match ring.try_write(&dwords) {
                    Ok(_) => break,
                    Err(RingError::Full) => {
                        // Let the engine see what is written so far, then wait for room.
                        *committed |= ring.wptr() != before;
                        ring.commit();
                        self.0.gpu.kfd().driver().doorbell_hint(self.0.gpu.id());
                        self.waited_round(&mut full_rounds, start, timeout, "room in SDMA queue")?;
                        std::thread::yield_now();
                    }
                    Err(e) => return Err(Error::SdmaRing(e)),
                }
            }
        }
        ring.commit();
        self.0.gpu.kfd().driver().doorbell_hint(self.0.gpu.id());
        Ok(ring.wptr())
    }

    /// Submits `packets`, which touch `buffers` only, after `deps`, with a completion.
    fn with_completion(
        &self,
        mut packets: Vec<SdmaPacket>,
        deps: &[&Signal],
        buffers: &[&Buffer],
    ) -> Result<CopyCompletion> {
        // Before anything touches the ring or a signal, unmapped in a forked child.
        self.0.gpu.kfd().shared.dev.check_process()?;
        // What the timeline and the graph record, only when they are on.
        let recording = self.0.gpu.kfd().shared.recorder.as_ref().map(|_| {
            let labels: Vec<String> = packets
                .iter()
                .map(|p| {
                    format!("{p:?}")
                        .split([' ', '{', '('])
                        .next()
                        .unwrap_or("")
                        .to_string()
                })
                .collect();
            (crate::device::host_ns(), labels)
        });
        let mut held = Held::default();
        for d in deps {
            self.0
                .gpu
                .kfd()
                .same_device(d.kfd(), "a copy's dependency signal")?;
            held.push(d.retain());
        }
        for b in buffers {
            held.push(b.retain());
        }
        self.0.retired.prune();
        let signal = self.0.gpu.kfd().create_signal(1)?;
        let mut all = Vec::with_capacity(deps.len() * 2 + packets.len() + 3);
        for d in deps {
            // A 64-bit signal is complete at 0: both halves must read 0.
            for half in [0u64, 4] {
                all.push(SdmaPacket::PollRegMem {
                    addr: d.handle() + 8 + half,
                    reference: 0,
                    mask: u32::MAX,
                    func: CompareFunction::Equal,
                    interval: 10,
                    retry_count: 0xFFF,
                });
            }
        }
        // SDMA 5 and later reach memory through the GL2 cache the shaders share: as ROCr does,
        // write back and invalidate it (and the caches above it) before the copy reads, and
        // write it back after, so the CPU and the other engines see what the copy wrote.
        let gcr = self.0.version.has_gcr();
        if gcr {
            all.push(SdmaPacket::Gcr {
                base: 0,
                limit: 0,
                control: sdma::gcr_control::WRITEBACK_INVALIDATE,
            });
        }
        // A timeline's device span of the copy: the engine's timestamps around it, in the
        // completion signal's profiling fields (as a CP writes them for AQL packets).
        let timed = self.0.gpu.kfd().shared.debug.trace.is_some();
        if timed {
            all.push(SdmaPacket::Timestamp {
                addr: signal.handle() + START_TS,
            });
        }
        all.append(&mut packets);
        if timed {
            all.push(SdmaPacket::Timestamp {
                addr: signal.handle() + END_TS,
            });
        }
        if gcr {
            all.push(SdmaPacket::Gcr {
                base: 0,
                limit: 0,
                control: sdma::gcr_control::WRITEBACK,
            });
        }
        let (before, after) = signal.arm_decrement();
        if self.0.gpu.info().system_atomics {
            all.push(SdmaPacket::Atomic {
                addr: signal.handle() + 8,
                op: AtomicOp::Add64,
                src: u64::MAX,
                cmp: 0,
                loop_interval: 0,
            });
        } else {
            all.extend(completion_writes(signal.handle() + 8, before, after));
        }
        // The interrupt that wakes sleeping waiters, when the signal has an event (waiters of
        // one without poll its value).
        if let Some(event_id) = signal.event_id() {
            all.push(SdmaPacket::Fence {
                addr: signal.mailbox_address(),
                data: event_id,
                mtype_uncached: true,
            });
            all.push(SdmaPacket::Trap {
                int_context: event_id,
            });
        }
        let room = self.wait_limit();
        let mut committed = false;
        let seq = match self.submit_packets(&all, room, &mut committed) {
            Ok(seq) => seq,
            Err(e) => {
                // Packets already published run whatever this call returns: they keep what
                // they use until their completion is seen (or, if it was not published, until
                // the queue is destroyed and the engine can touch nothing more).
                if committed {
                    self.0.retired.retire(signal, held);
                } else {
                    // Nothing will decrement it: it may be reused at once.
                    signal.disarm();
                }
                return Err(e);
            }
        };
        if let (Some(rec), Some((started, labels))) = (&self.0.gpu.kfd().shared.recorder, recording)
        {
            rec.submitted(crate::debug::recorder::Submitted {
                kind: QueueKind::Sdma,
                queue_id: self.id(),
                gpu_id: self.0.gpu.id(),
                first: seq,
                last: seq,
                labels,
                waits_on: deps.iter().map(|d| d.handle()).collect(),
                completion: signal.handle(),
                host_start: started,
                host_end: crate::device::host_ns(),
            });
        }
        let done = CopyCompletion {
            signal,
            engine: Some((self.clone(), held)),
            kernel: None,
            sequence: seq,
        };
        if let Some(timeout) = self.0.gpu.kfd().shared.debug.serialize_wait() {
            done.wait(timeout)?;
        }
        Ok(done)
    }

    /// Copies `bytes` from `src[src_off..]` to `dst[dst_off..]` after every signal in `deps`
    /// reaches 0. Both buffers must be mapped to this queue's GPU (for peer-to-peer copies, run
    /// them on the source GPU's queue with the destination mapped to it).
    pub fn copy(
        &self,
        dst: &Buffer,
        dst_off: u64,
        src: &Buffer,
        src_off: u64,
        bytes: u64,
        deps: &[&Signal],
    ) -> Result<CopyCompletion> {
        if bytes == 0 {
            return Err(Error::ZeroSize { what: "copy" });
        }
        let d = check_range(&self.0.gpu, dst, dst_off, bytes, "destination")?;
        let s = check_range(&self.0.gpu, src, src_off, bytes, "source")?;
        let gfx = self.0.gpu.info().gfx_target_version;
        self.with_completion(
            sdma::copy_linear_split(self.0.version, gfx, s, d, bytes).collect(),
            deps,
            &[dst, src],
        )
    }

    /// Fills `bytes` (a multiple of 4) of `dst[dst_off..]` with the 32-bit `pattern`.
    pub fn fill(
        &self,
        dst: &Buffer,
        dst_off: u64,
        pattern: u32,
        bytes: u64,
        deps: &[&Signal],
    ) -> Result<CopyCompletion> {
        check_fill(dst_off, bytes)?;
        let d = check_range(&self.0.gpu, dst, dst_off, bytes, "destination")?;
        // Fills have their own (often smaller) per-packet limit than copies.
        let gfx = self.0.gpu.info().gfx_target_version;
        self.with_completion(
            sdma::constant_fill_split(self.0.version, gfx, d, pattern, bytes).collect(),
            deps,
            &[dst],
        )
    }
}
