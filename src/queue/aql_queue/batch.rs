//! [`Batch`]: packets built for one submission, written to the ring together with one doorbell.

use super::submission::Submission;
use super::AqlQueue;
use crate::error::{Error, Result};
use crate::queue::held::Held;
use crate::signal::Signal;
use aql::ring::RingError;
use aql::{BarrierPacket, FenceScope, Packet};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Encodes a packet for staging in a batch.
#[inline]
pub(crate) fn encode(p: Packet) -> [u32; 16] {
    p.encode()
}

/// The staging vectors of a [`Batch`].
#[derive(Default)]
pub(crate) struct BatchBuffers {
    /// Packets already encoded: the last one's barrier bit and completion signal, and the
    /// dispatches' kernarg addresses, are patched in place at submission.
    pub(crate) packets: Vec<[u32; 16]>,
    /// Kernel arguments of the batch's dispatches, staged here and copied into the queue's
    /// kernarg memory at submission: taking that memory only when the batch is complete means
    /// no half-built batch can pin it while others wait for it.
    pub(crate) kernarg_bytes: Vec<u8>,
    /// Packets whose `kernarg_address` is an offset into `kernarg_bytes` until submission.
    pub(crate) kernarg_fixups: Vec<usize>,
    /// What the packets use (kernel code, buffers, dependency signals), kept until completion.
    pub(crate) held: Held,
}

/// The staging vectors a queue keeps between batches: one set in an atomic slot, so taking and
/// returning them is one exchange each (a queue mostly builds one batch at a time; a second
/// concurrent batch starts with empty vectors).
#[derive(Default)]
pub(crate) struct SpareBuffers(AtomicPtr<BatchBuffers>);

impl SpareBuffers {
    fn take(&self) -> Box<BatchBuffers> {
        let p = self.0.swap(std::ptr::null_mut(), Ordering::Acquire);
        if p.is_null() {
            return Box::default();
        }
        // SAFETY: a non-null slot holds a pointer from `Box::into_raw` in `give`, which the
        // swap just took out: this is its only owner.
        unsafe { Box::from_raw(p) }
    }

    fn give(&self, b: Box<BatchBuffers>) {
        let old = self.0.swap(Box::into_raw(b), Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: as in `take`: the swap took the slot's pointer out, so we own it.
            drop(unsafe { Box::from_raw(old) });
        }
    }
}

impl Drop for SpareBuffers {
    fn drop(&mut self) {
        let p = *self.0.get_mut();
        if !p.is_null() {
            // SAFETY: as in `take`; nothing else can reach the slot any more.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// Packets built for one submission, written to the ring together with one doorbell.
pub struct Batch<'q> {
    pub(crate) queue: &'q AqlQueue,
    /// The completion signal: moved into the submission, so dropped here only when the batch
    /// is dropped unsubmitted. Its value is set (to 1) only when the batch is submitted.
    pub(crate) signal: ManuallyDrop<Signal>,
    /// The signal's value has been set to 1: at submission, or earlier when the batch's kernel
    /// arguments were placed (their memory is released when the signal reaches 0).
    pub(crate) signal_set: bool,
    pub(crate) submitted: bool,
    /// The most LDS any dispatch of the batch asks for (checked against the GPU's at submission).
    pub(crate) max_group_segment: u32,
    /// The staged packets: `staged.packets`, moved out while the batch is built, so the hot
    /// loop's pushes go through the batch itself rather than a pointer to the heap.
    pub(crate) packets: Vec<[u32; 16]>,
    /// The other staging vectors (boxed: a batch moves by value, and stays small to move).
    /// Given back to the queue by `Drop`, the only place it is taken out.
    pub(crate) staged: ManuallyDrop<Box<BatchBuffers>>,
    /// The descriptor address of the kernel whose code `held` got last, so a batch of one
    /// kernel's dispatches holds it once for the price of a comparison.
    pub(crate) last_object: u64,
    /// A dispatch of the batch uses scratch: the queue's scratch service must run.
    pub(crate) uses_scratch: bool,
    /// When building began (host ns), for the timeline; 0 when not recording.
    pub(crate) started_ns: u64,
    /// The buffer-validation debug switch is on: dispatches' arguments are checked.
    pub(crate) validating: bool,
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if !self.submitted {
            // Nothing of this batch reached the ring: release its kernel-argument regions.
            self.signal.value_atomic().store(0, Ordering::Release);
            // SAFETY: unsubmitted, so the signal was not moved out; dropped once, here.
            unsafe { ManuallyDrop::drop(&mut self.signal) };
        }
        // SAFETY: taken once, here, and not used after.
        let mut staged = unsafe { ManuallyDrop::take(&mut self.staged) };
        staged.packets = std::mem::take(&mut self.packets);
        staged.packets.clear();
        staged.kernarg_bytes.clear();
        staged.kernarg_fixups.clear();
        drop(staged.held.take());
        self.queue.0.spare.give(staged);
    }
}

impl<'q> Batch<'q> {
    /// A batch for `queue` completing on `signal`, whose value [`Batch::set_signal`] sets.
    pub(crate) fn new(queue: &'q AqlQueue, signal: Signal) -> Batch<'q> {
        let shared = &queue.0.gpu.kfd().shared;
        let mut staged = queue.0.spare.take();
        Batch {
            queue,
            signal: ManuallyDrop::new(signal),
            signal_set: false,
            submitted: false,
            max_group_segment: 0,
            packets: std::mem::take(&mut staged.packets),
            staged: ManuallyDrop::new(staged),
            last_object: 0,
            uses_scratch: false,
            started_ns: match shared.recorder {
                Some(_) => crate::device::host_ns(),
                None => 0,
            },
            validating: shared.buffers.is_some() && shared.debug.validate,
        }
    }

    /// The queue the batch submits to.
    pub fn queue(&self) -> &'q AqlQueue {
        self.queue
    }
}

impl Batch<'_> {
    fn barrier(&mut self, deps: &[&Signal], or: bool) -> Result<&mut Self> {
        if or && deps.len() > 5 {
            return Err(Error::TooLarge {
                what: "signals of a barrier-OR",
                requested: deps.len() as u64,
                limit: 5,
            });
        }
        for s in deps {
            self.queue.hold_dependency(&mut self.staged.held, s)?;
        }
        // One packet per five dependencies, and one (with none) for an empty list.
        let empty: [&[&Signal]; 1] = [&[]];
        let chunks = deps
            .chunks(5)
            .chain(empty.into_iter().filter(|_| deps.is_empty()));
        for chunk in chunks {
            self.packets.push(barrier_packet(chunk, or));
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
    /// predecessors. The signal is armed later, by [`Batch::set_signal`].
    fn finish(&mut self) -> Result<()> {
        if self.uses_scratch {
            self.queue.ensure_scratch_service()?;
        }
        self.queue.check_group_segment(self.max_group_segment)?;
        let unordered_tail = self
            .packets
            .last()
            .is_some_and(|p| !aql::encoded_barrier(p));
        if unordered_tail {
            self.barrier(&[], false)?;
        }
        if self.packets.len() > self.queue.0.size_packets as usize {
            return Err(Error::TooLarge {
                what: "packets in a batch (the queue's slots)",
                requested: self.packets.len() as u64,
                limit: u64::from(self.queue.0.size_packets),
            });
        }
        let handle = self.signal.handle();
        if let Some(last) = self.packets.last_mut() {
            aql::set_encoded_completion_signal(last, handle);
        }
        Ok(())
    }

    /// Sets the completion signal's value to 1, once. Done as late as it can be, after the
    /// batch's read-modify-writes: the device wrote the signal's line last, and a
    /// read-modify-write would wait for a store to it to complete.
    fn set_signal(&mut self) {
        if !self.signal_set {
            self.signal.value_atomic().store(1, Ordering::Release);
            self.signal_set = true;
        }
    }

    /// Moves the completion signal out into a submission; the batch counts as submitted.
    fn take_signal(&mut self) -> Signal {
        debug_assert!(!self.submitted);
        self.submitted = true;
        // SAFETY: taken once (`submitted` is now set), and `Drop` drops it only when unset.
        unsafe { ManuallyDrop::take(&mut self.signal) }
    }

    /// A submission of nothing: no packet, no doorbell, complete at once.
    fn empty_submission(mut self) -> Submission {
        self.signal.value_atomic().store(0, Ordering::Release);
        let signal = self.take_signal();
        Submission {
            queue: self.queue.clone(),
            signal: ManuallyDrop::new(signal),
            last_index: self.queue.write_index().saturating_sub(1),
            held: Held::default(),
        }
    }

    fn write(mut self, mut r: aql::ring::Reservation<'_>) -> Submission {
        if log::log_enabled!(log::Level::Trace) {
            let first = self.queue.write_index();
            for (i, p) in self.packets.iter().enumerate() {
                log::trace!(
                    "kfdrt: AQL queue {} packet {}: {:?}",
                    self.queue.id(),
                    first + i as u64,
                    aql::Packet::decode(p)
                );
            }
        }
        if let Some(rec) = &self.queue.0.gpu.kfd().shared.recorder {
            let shared = &self.queue.0.gpu.kfd().shared;
            rec.publishing(
                (self.queue.id(), self.queue.0.gpu.index()),
                r.index(),
                &self.packets,
                &shared.reports,
                shared.buffers.as_ref(),
            );
        }
        self.set_signal();
        self.signal.arm_decrement();
        r.write_all_encoded(&self.packets);
        let signal = self.take_signal();
        let last_index = r.submit();
        let q = self.queue;
        q.0.gpu.kfd().driver().doorbell_hint(q.0.gpu.id());
        if let Some(rec) = &q.0.gpu.kfd().shared.recorder {
            rec.submitted(aql_submission(
                q,
                &self.packets,
                last_index,
                self.started_ns,
            ));
        }
        // The submission takes what the packets use; the staging list goes back empty.
        let held = self.staged.held.take();
        Submission {
            queue: q.clone(),
            signal: ManuallyDrop::new(signal),
            last_index,
            held,
        }
    }

    /// Copies the staged kernel arguments into the queue's kernarg memory and points the
    /// dispatches at them. `wait` says whether to wait for memory held by running submissions.
    fn place_kernargs(&mut self, wait: bool) -> Result<()> {
        if self.staged.kernarg_bytes.is_empty() {
            return Ok(());
        }
        // The region is free again when the signal reaches 0: it must be 1 from now on.
        self.set_signal();
        let len = self.staged.kernarg_bytes.len() as u64;
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
                        queue_id: self.queue.0.handle().id(),
                    })
                }
            }
        };
        // SAFETY: the region is `len` bytes of host-visible kernarg memory reserved for this
        // batch; the staging vector is a separate allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.staged.kernarg_bytes.as_ptr(),
                cpu,
                self.staged.kernarg_bytes.len(),
            )
        };
        for &i in &self.staged.kernarg_fixups {
            if let Some(p) = self.packets.get_mut(i) {
                aql::add_encoded_kernarg_base(p, gpu);
            }
        }
        Ok(())
    }

    /// Submits the batch, waiting for ring space if needed. An empty batch writes nothing and
    /// rings no doorbell; its submission is complete at once.
    pub fn submit(mut self) -> Result<Submission> {
        self.queue.0.retired.prune();
        self.finish()?;
        if self.packets.is_empty() {
            return Ok(self.empty_submission());
        }
        // What the CPU wrote to VRAM reaches the GPU before the packets can run.
        crate::queue::hdp_queue::flush_before_submit(self.queue.0.gpu.kfd(), &self.queue.0.hdp)?;
        self.place_kernargs(true)?;
        let r = self.queue.reserve_waiting(self.packets.len() as u32)?;
        self.write(r).serialized()
    }

    /// Submits the batch only if the ring has room now: [`Error::QueueFull`] otherwise, with
    /// nothing written.
    pub fn try_submit(mut self) -> Result<Submission> {
        self.finish()?;
        if self.packets.is_empty() {
            return Ok(self.empty_submission());
        }
        crate::queue::hdp_queue::flush_before_submit(self.queue.0.gpu.kfd(), &self.queue.0.hdp)?;
        let q = self.queue;
        q.check()?;
        let in_flight = q.0.ring.write_index().saturating_sub(q.0.ring.read_index());
        let free = u64::from(q.0.size_packets).saturating_sub(in_flight);
        if self.packets.len() as u64 > free {
            // Don't take kernarg memory for a batch the ring cannot take now.
            return Err(Error::QueueFull {
                queue_id: q.0.handle().id(),
            });
        }
        self.place_kernargs(false)?;
        let r =
            q.0.ring
                .try_reserve(self.packets.len() as u32)
                .map_err(|e| ring_error(q, e))?;
        self.write(r).serialized()
    }
}

/// A barrier-AND (or -OR) packet with the barrier bit on up to five dependencies, encoded.
pub(super) fn barrier_packet(deps: &[&Signal], or: bool) -> [u32; 16] {
    // An empty barrier (the ordering point and completion of a batch, a round trip) is the
    // same packet every time: encoded once.
    static EMPTY: std::sync::LazyLock<[[u32; 16]; 2]> =
        std::sync::LazyLock::new(|| [encode_barrier(&[], false), encode_barrier(&[], true)]);
    if deps.is_empty() {
        return EMPTY[usize::from(or)];
    }
    encode_barrier(deps, or)
}

fn encode_barrier(deps: &[&Signal], or: bool) -> [u32; 16] {
    let mut dep_signal = [0u64; 5];
    for (slot, s) in dep_signal.iter_mut().zip(deps) {
        *slot = s.handle();
    }
    let p = BarrierPacket {
        barrier: true,
        acquire: FenceScope::System,
        release: FenceScope::System,
        dep_signal,
        completion_signal: 0,
    };
    encode(if or {
        Packet::BarrierOr(p)
    } else {
        Packet::BarrierAnd(p)
    })
}

impl AqlQueue {
    /// Checks that a barrier's dependency `s` is this device's and keeps its slot in `held`.
    pub(crate) fn hold_dependency(&self, held: &mut Held, s: &Signal) -> Result<()> {
        // A signal of another device would be another process's memory here.
        self.0
            .gpu
            .kfd()
            .same_device(s.kfd(), "a barrier's dependency signal")?;
        // The slot must not be reused (and so satisfy the barrier) while it waits.
        held.push(s.retain());
        Ok(())
    }

    /// Reserves `n` slots, waiting while the ring is full (and giving up with the queue's
    /// error if it stops meanwhile).
    pub(crate) fn reserve_waiting(&self, n: u32) -> Result<aql::ring::Reservation<'_>> {
        self.0
            .ring
            .reserve(n, |spins| {
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
                // A full ring whose queue died never drains: give up on its error.
                if spins % crate::exception::POLL_ROUNDS == 0 {
                    let _ = self.0.handle().poll_exceptions();
                }
                self.check().is_ok()
            })
            .map_err(|e| ring_error(self, e))
    }

    /// Refuses a dispatch asking for more LDS per work-group than the GPU has.
    pub(crate) fn check_group_segment(&self, bytes: u32) -> Result<()> {
        let lds = self.0.gpu.info().lds_bytes;
        if bytes > lds {
            return Err(Error::TooLarge {
                what: "LDS bytes per work-group",
                requested: u64::from(bytes),
                limit: u64::from(lds),
            });
        }
        Ok(())
    }
}

fn ring_error(q: &AqlQueue, e: RingError) -> Error {
    match e {
        RingError::Full => Error::QueueFull {
            queue_id: q.0.handle().id(),
        },
        RingError::Abandoned => q.check().err().unwrap_or(Error::QueueFull {
            queue_id: q.0.handle().id(),
        }),
        RingError::TooMany { requested, size } => Error::TooLarge {
            what: "packets in a batch (the queue's slots)",
            requested: u64::from(requested),
            limit: u64::from(size),
        },
        // `BadGeometry` comes only from making a ring, which the queue did with a checked size.
        e => unreachable!("an AQL ring reservation failed with {e}"),
    }
}

/// The record of an AQL batch: `packets` (encoded) ending at index `last`.
fn aql_submission(
    q: &crate::queue::AqlQueue,
    packets: &[[u32; 16]],
    last: u64,
    started: u64,
) -> crate::debug::recorder::Submitted {
    let shared = &q.gpu().kfd().shared;
    let mut labels = Vec::with_capacity(packets.len());
    let mut waits_on = Vec::new();
    let mut completion = 0;
    for p in packets {
        match aql::Packet::decode(p) {
            Ok(aql::Packet::KernelDispatch(k)) => {
                labels.push(shared.reports.kernel_label_with_source(k.kernel_object));
                completion = k.completion_signal;
            }
            Ok(aql::Packet::BarrierAnd(b)) => {
                labels.push("barrier-and".into());
                waits_on.extend(b.dep_signal.iter().copied().filter(|&s| s != 0));
                completion = b.completion_signal;
            }
            Ok(aql::Packet::BarrierOr(b)) => {
                labels.push("barrier-or".into());
                waits_on.extend(b.dep_signal.iter().copied().filter(|&s| s != 0));
                completion = b.completion_signal;
            }
            Ok(other) => labels.push(format!("{other:?}").chars().take(40).collect()),
            Err(_) => labels.push("undecodable".into()),
        }
    }
    crate::debug::recorder::Submitted {
        kind: crate::error::report::QueueKind::Aql,
        queue_id: q.id(),
        gpu_id: q.gpu().id(),
        first: (last + 1).saturating_sub(packets.len() as u64),
        last,
        labels,
        waits_on,
        completion,
        host_start: started,
        host_end: crate::device::host_ns(),
    }
}
