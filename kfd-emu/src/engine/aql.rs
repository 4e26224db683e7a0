//! The AQL packet processor: one thread per AQL queue, behaving like the command processor.
//!
//! It follows the hardware's rules, including the unforgiving ones: a packet is consumed as soon
//! as its header word is valid (the doorbell is only a wake-up hint unless the configuration
//! asks for it), its header is set back to INVALID before the read index moves on, and a packet
//! whose bytes change after it was read is counted as a torn publication.
//!
//! Ordering is the AQL rule, no stronger: a packet with the barrier bit starts only after every
//! packet before it has completed, while a kernel dispatch followed by an already published
//! packet without the barrier bit runs on a thread of its own, so the two overlap, as they may
//! on a GPU. A runtime that leaves the bit off between dependent kernels sees the race here.

mod dispatch;
mod queue_memory;
mod scratch_request;

use super::backoff::{idle, poll_until, Polled};
use super::clock::Clock;
use super::control::QueueCtl;
use super::env::EngineEnv;
use super::error::QueueErrorCode;
use super::pm4_interpreter::{Interpreter, Pm4Error};
use crate::device::{GpuState, WakeSnapshot};
use crate::kernel::KernelRegistry;
use crate::stats::Counters;
use crate::vm::{GpuFault, GpuVm};
use aql::{queue_offsets, signal_offsets, BarrierPacket, BarrierValuePacket, Packet};
use queue_memory::QueueMemory;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// What a free slot's completion-signal dwords hold in strict mode: a non-canonical address no
/// packet can carry, so a packet whose header is valid while they still hold it was published
/// before its body.
const UNPUBLISHED: u32 = 0xBAD0_AC1D;
const UNPUBLISHED_PAIR: u64 = (UNPUBLISHED as u64) << 32 | UNPUBLISHED as u64;

/// Marks every free slot of a new ring (header INVALID) as unpublished (strict mode), so even the
/// first pass over the ring catches a header-first writer. Called from `CREATE_QUEUE`, before the
/// runtime can write a packet.
pub(crate) fn mark_free_slots(vm: &GpuVm, ring: u64, size_bytes: u64) {
    for slot in (ring..ring + size_bytes).step_by(64) {
        if vm
            .read_u32(slot)
            .is_ok_and(|h| !aql::is_valid_header_word(h))
        {
            let _ = vm.write_u64(slot + 56, UNPUBLISHED_PAIR);
        }
    }
}

/// Dispatches that may run alongside later packets at once, like the few a CP has in flight.
const MAX_OVERLAP: usize = 8;

struct Processor {
    ctl: Arc<QueueCtl>,
    kernels: Arc<KernelRegistry>,
    stats: Arc<Counters>,
    requires_doorbell: bool,
    spin_poll: bool,
    torn_window: Duration,
    strict: bool,
    clock: Clock,
    /// Host threads a dispatch of machine code may use.
    wave_threads: usize,
    /// The ring and pointers, accessed without the page table where the queue holds them.
    mem: QueueMemory,
}

/// Where a packet was found: its slot, its index in the queue and its 16 dwords as read.
struct PacketAt {
    slot: u64,
    index: u64,
    raw: [u32; 16],
}

impl PacketAt {
    fn bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        for (i, d) in self.raw.iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&d.to_le_bytes());
        }
        b
    }
}

/// How a packet ended.
enum Outcome {
    /// It ran (or runs on, overlapping what follows); the read index may move past it.
    Done,
    /// The queue stops: with a fault, as a device exception; without, through its error signal.
    Error(QueueErrorCode, Option<GpuFault>),
    /// The queue is being destroyed.
    Stopped,
    /// A wave halted: the packet never completes and the queue stays where it is.
    Halted,
}

/// Starts the processor thread of the AQL queue `ctl`.
pub(crate) fn spawn(
    ctl: Arc<QueueCtl>,
    env: &EngineEnv,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let p = Processor {
        ctl: ctl.clone(),
        kernels: env.kernels.clone(),
        stats: env.stats.clone(),
        requires_doorbell: env.options.requires_doorbell,
        spin_poll: env.options.spin_poll,
        torn_window: env.options.torn_check_window,
        strict: env.options.strict,
        clock: Clock::new(env.epoch, ctl.gpu.params.gpu_clock_hz),
        wave_threads: env.options.wave_threads,
        // The queue holds these buffers until its processor has been joined (`queue::stop`).
        mem: QueueMemory::resolve(&ctl.gpu.vm, ctl.ring, ctl.ring_size, ctl.rptr, ctl.wptr),
    };
    std::thread::Builder::new()
        .name(format!("kfd-emu-aql-{}", ctl.id))
        .spawn(move || p.run())
}

impl Processor {
    fn gpu(&self) -> &GpuState {
        &self.ctl.gpu
    }

    fn vm(&self) -> &GpuVm {
        &self.ctl.gpu.vm
    }

    fn stopped(&self) -> bool {
        self.ctl.stopped()
    }

    fn paused(&self) -> bool {
        self.ctl.paused()
    }

    /// Backs off while there is nothing to run (see [`idle`]).
    fn idle(&self, idle_rounds: &mut u32, snap: &WakeSnapshot) {
        idle(
            self.gpu(),
            self.spin_poll,
            idle_rounds,
            snap,
            Some(&self.ctl.watch),
        );
    }

    fn run(self) {
        std::thread::scope(|scope| self.run_in(scope));
    }

    fn run_in<'s>(&'s self, scope: &'s std::thread::Scope<'s, '_>) {
        let n = self.ctl.ring_size / 64;
        let mut rd = self.vm().read_u64(self.ctl.rptr).unwrap_or(0);
        let mut idle_rounds = 0u32;
        // Dispatches running on threads of their own (overlapping what follows them).
        let mut in_flight: Vec<std::thread::ScopedJoinHandle<'s, ()>> = Vec::new();
        'ring: while !self.stopped() {
            in_flight.retain(|h| !h.is_finished());
            let snap = self
                .gpu()
                .idle_snapshot(self.spin_poll, Some(self.ctl.doorbell_index));
            if self.paused() {
                self.idle(&mut idle_rounds, &snap);
                continue;
            }
            // The CP looks at a slot only once a producer has reserved it (the write index is
            // past it): a ring nobody wrote stays untouched, whatever its memory holds.
            if !self.reserved(rd) {
                self.idle(&mut idle_rounds, &snap);
                continue;
            }
            let slot = self.ctl.ring + (rd % n) * 64;
            let header = match self.mem.read_u32(self.vm(), slot) {
                Ok(h) => h,
                Err(f) => {
                    self.fail(QueueErrorCode::MemoryViolation, Some(f));
                    continue;
                }
            };
            let doorbell_ok =
                !self.requires_doorbell || self.gpu().doorbell(self.ctl.doorbell_index) >= rd;
            // Re-check the pause state after seeing a valid header: a stall or disable that was
            // requested before the packet was published must keep it from running.
            if !aql::is_valid_header_word(header) || !doorbell_ok || self.paused() {
                self.idle(&mut idle_rounds, &snap);
                continue;
            }
            idle_rounds = 0;
            // A flush the CPU asked for before publishing the packet applies before it runs.
            self.ctl.before_packet();
            let mut raw = [0u32; 16];
            let bytes = match self.mem.read_slot(self.vm(), slot) {
                Ok(b) => b,
                Err(f) => {
                    self.fail(QueueErrorCode::MemoryViolation, Some(f));
                    continue;
                }
            };
            for (i, d) in raw.iter_mut().enumerate() {
                *d = u32::from_le_bytes([
                    bytes[4 * i],
                    bytes[4 * i + 1],
                    bytes[4 * i + 2],
                    bytes[4 * i + 3],
                ]);
            }
            // The header word was read with acquire first; the copy above may have raced a writer
            // that stored the header before the body. Keep the acquire-loaded header.
            raw[0] = header;
            if !self.torn_window.is_zero() {
                std::thread::sleep(self.torn_window);
                self.check_torn(slot, &raw);
            }
            if self.strict && raw[14] == UNPUBLISHED && raw[15] == UNPUBLISHED {
                // The completion-signal dwords still hold what the emulator left in a free
                // slot: the header was made valid before the body was written.
                self.stats.torn_packets.fetch_add(1, Ordering::Relaxed);
                log::error!(
                    "kfd-emu: queue {}: packet {rd} has a valid header but no body: it was \
                     published header first (the CP may run it before the body lands)",
                    self.ctl.id
                );
                self.fail(QueueErrorCode::InvalidPacketFormat, None);
                continue;
            }
            let at = PacketAt {
                slot,
                index: rd,
                raw,
            };
            let mut reclaim_scratch = false;
            let outcome = match Packet::decode(&raw) {
                Ok(p) => 'packet: {
                    if p.barrier() || in_flight.len() >= MAX_OVERLAP {
                        // Everything before a barrier packet completes first.
                        for h in in_flight.drain(..) {
                            let _ = h.join();
                        }
                        if self.paused() {
                            continue 'ring;
                        }
                    }
                    if p.header().acquire == aql::FenceScope::System {
                        // A system-scope acquire makes what the host wrote visible to the
                        // packet, VRAM written through the BAR included: the CP flushes the
                        // HDP (HIP 5.2 relies on this after its direct small writes to VRAM,
                        // `KernelBlitManager::writeBuffer`).
                        crate::hdp::flush(self.gpu().hdp_owner);
                    }
                    let mut uses_scratch = false;
                    if let Packet::KernelDispatch(d) = &p {
                        // The packet's own fields come first: a bad packet is reported as
                        // such, never as a scratch request sized from its garbage.
                        if let Err(code) = self.check_dispatch(d) {
                            break 'packet Outcome::Error(code, None);
                        }
                        if d.private_segment_size > 0 && self.runs_machine_code(d) {
                            // The CP changes scratch only with nothing running on it (the
                            // runtime frees the old backing when it grows it).
                            for h in in_flight.drain(..) {
                                let _ = h.join();
                            }
                        }
                        match self.ensure_scratch(d) {
                            Ok(lent) => {
                                uses_scratch =
                                    self.runs_machine_code(d) && d.private_segment_size > 0;
                                reclaim_scratch = uses_scratch && lent;
                            }
                            Err(stop) => break 'packet stop,
                        }
                    }
                    // A dispatch using scratch runs alone: the scratch it was given is the
                    // queue's, which may change (or be taken back) once it is done.
                    if matches!(p, Packet::KernelDispatch(_))
                        && !uses_scratch
                        && self.next_may_overlap(rd)
                    {
                        in_flight.push(scope.spawn(move || match self.execute(&p, &at) {
                            Outcome::Error(code, fault) => self.fail(code, fault),
                            Outcome::Halted => self.wedge(),
                            Outcome::Done | Outcome::Stopped => {}
                        }));
                        Outcome::Done
                    } else {
                        self.execute(&p, &at)
                    }
                }
                Err(e) => {
                    log::warn!(
                        "kfd-emu: queue {}: packet {rd} undecodable ({e:?}): {raw:08x?}",
                        self.ctl.id
                    );
                    Outcome::Error(QueueErrorCode::InvalidPacketFormat, None)
                }
            };
            if self.torn_window.is_zero() {
                self.check_torn(slot, &raw);
            }
            match outcome {
                Outcome::Stopped => return,
                Outcome::Error(code, fault) => {
                    self.fail(code, fault);
                    continue;
                }
                Outcome::Halted => {
                    self.wedge();
                    continue;
                }
                Outcome::Done => {}
            }
            // Header back to INVALID before the read index moves, so a producer that sees the
            // slot free never sees a stale valid header; in strict mode the body is marked
            // unpublished first, so a header stored before its body is caught.
            // A refused write (a read-only ring or pointer page) is the CP's write fault.
            let freed = (|| {
                if self.strict {
                    self.mem.write_u64(self.vm(), slot + 56, UNPUBLISHED_PAIR)?;
                }
                self.mem
                    .write_u32(self.vm(), slot, aql::INVALID_HEADER_WORD)?;
                self.mem.write_u64(self.vm(), self.ctl.rptr, rd + 1)
            })();
            if let Err(f) = freed {
                self.fail(QueueErrorCode::MemoryViolation, Some(f));
                continue;
            }
            rd += 1;
            if reclaim_scratch {
                // Scratch lent for that dispatch goes back before the next packet.
                match self.ask_runtime(aql::queue_error::SCRATCH_RECLAIM) {
                    Outcome::Done => {}
                    Outcome::Stopped => return,
                    Outcome::Error(code, fault) => self.fail(code, fault),
                    Outcome::Halted => self.wedge(),
                }
            }
        }
    }

    /// Whether a producer has reserved packet `index` (the queue's write index is past it).
    fn reserved(&self, index: u64) -> bool {
        self.mem
            .read_u64(self.vm(), self.ctl.wptr)
            .is_ok_and(|w| w > index)
    }

    /// Whether the packet after `rd` is already published without the barrier bit: then the
    /// dispatch at `rd` may run alongside it.
    fn next_may_overlap(&self, rd: u64) -> bool {
        let n = self.ctl.ring_size / 64;
        let next = self.ctl.ring + ((rd + 1) % n) * 64;
        self.reserved(rd + 1)
            && self
                .mem
                .read_u32(self.vm(), next)
                .is_ok_and(|h| aql::is_valid_header_word(h) && h & (1 << 8) == 0)
    }

    fn check_torn(&self, slot: u64, seen: &[u32; 16]) {
        let mut now = [0u8; 64];
        if self.vm().read(slot, &mut now).is_err() {
            return;
        }
        let changed = seen
            .iter()
            .enumerate()
            .any(|(i, d)| d.to_le_bytes() != now[4 * i..4 * i + 4]);
        if changed {
            self.stats.torn_packets.fetch_add(1, Ordering::Relaxed);
            log::error!("kfd-emu: queue {}: packet bytes changed after its header was valid (torn publication)", self.ctl.id);
        }
    }

    fn execute(&self, p: &Packet, at: &PacketAt) -> Outcome {
        log::trace!("kfd-emu: queue {}: {p:?}", self.ctl.id);
        // Reading the clock costs about as much as an empty packet: only for a profiled queue
        // (the runtime sets the property; read once per packet, as the CP looks at it).
        let profiled = match p.completion_signal() {
            0 => false,
            _ => match self.profiling() {
                Ok(on) => on,
                Err(f) => return Outcome::Error(QueueErrorCode::MemoryViolation, Some(f)),
            },
        };
        let start = profiled.then(|| self.clock.gpu_ticks());
        let r = match p {
            Packet::KernelDispatch(d) => self.dispatch(d, at),
            Packet::BarrierAnd(b) => self.barrier(b, true),
            Packet::BarrierOr(b) => self.barrier(b, false),
            Packet::BarrierValue(b) => self.barrier_value(b),
            // PM4 indirect buffers (icache invalidation, ROCr's and kfdrt's) run through the
            // interpreter PM4 queues use.
            Packet::VendorPm4Ib(ib) => {
                let mut interp = Interpreter::new(
                    &self.ctl,
                    &self.kernels,
                    &self.stats,
                    self.wave_threads,
                    self.clock,
                );
                match interp.run_buffer(ib.ib_address, ib.ib_size_dwords, 0, &|| self.stopped()) {
                    Ok(()) => Outcome::Done,
                    Err(Pm4Error::Stopped) => Outcome::Stopped,
                    Err(Pm4Error::Halted) => Outcome::Halted,
                    Err(Pm4Error::Fault(f)) => {
                        Outcome::Error(QueueErrorCode::MemoryViolation, Some(f))
                    }
                    Err(e) => {
                        log::warn!(
                            "kfd-emu: queue {}: PM4 indirect buffer at {:#x} failed: {e:?}",
                            self.ctl.id,
                            ib.ib_address
                        );
                        Outcome::Error(QueueErrorCode::InvalidPacketFormat, None)
                    }
                }
            }
        };
        if !matches!(r, Outcome::Done) {
            return r;
        }
        // Counted before the completion signal, so a waiter that saw the signal sees the count.
        self.stats.packets_run.fetch_add(1, Ordering::Relaxed);
        self.complete(p.completion_signal(), start)
    }

    /// Whether the queue's properties ask for timestamps in completion signals.
    fn profiling(&self) -> Result<bool, GpuFault> {
        let properties = self.mem.read_u32(
            self.vm(),
            self.ctl.rptr - queue_offsets::READ_DISPATCH_ID + queue_offsets::QUEUE_PROPERTIES,
        )?;
        Ok(properties & aql::QUEUE_PROPERTY_ENABLE_PROFILING != 0)
    }

    /// Completes a packet: timestamps (when `start` is given: a profiled queue), the signal's
    /// decrement and its event.
    fn complete(&self, signal: u64, start: Option<u64>) -> Outcome {
        if signal == 0 {
            return Outcome::Done;
        }
        let vm = self.vm();
        let r = (|| -> Result<(), GpuFault> {
            if let Some(start) = start {
                vm.write_u64(signal + signal_offsets::START_TS, start)?;
                vm.write_u64(
                    signal + signal_offsets::END_TS,
                    self.clock.gpu_ticks().max(start),
                )?;
            }
            vm.atomic_add_i64(signal + signal_offsets::VALUE, -1)?;
            self.raise_signal_event(signal)
        })();
        match r {
            Ok(()) => Outcome::Done,
            Err(f) => Outcome::Error(QueueErrorCode::MemoryViolation, Some(f)),
        }
    }

    /// Writes the signal's event id to its mailbox and raises the interrupt, if it has one.
    fn raise_signal_event(&self, signal: u64) -> Result<(), GpuFault> {
        let vm = self.vm();
        // The mailbox pointer and the event id are adjacent: one access reads both.
        const _: () = assert!(signal_offsets::EVENT_ID == signal_offsets::EVENT_MAILBOX_PTR + 8);
        let mut words = [0u8; 12];
        vm.read(signal + signal_offsets::EVENT_MAILBOX_PTR, &mut words)?;
        let mailbox = u64::from_le_bytes(words[..8].try_into().unwrap_or_default());
        log::trace!(
            "kfd-emu: queue {}: signal {signal:#x} mailbox {mailbox:#x}",
            self.ctl.id
        );
        if mailbox != 0 {
            let id = u32::from_le_bytes(words[8..].try_into().unwrap_or_default());
            vm.write_u64(mailbox, u64::from(id))?;
            self.ctl.events.signal_from_device(id);
        }
        Ok(())
    }

    /// Polls until `ready` says so, backing off; an error from `ready` is a fault.
    fn wait_until(&self, ready: impl FnMut() -> Result<bool, GpuFault>) -> Outcome {
        match poll_until(self.gpu(), self.spin_poll, &|| self.stopped(), ready) {
            Ok(Polled::Ready) => Outcome::Done,
            Ok(Polled::Stopped) => Outcome::Stopped,
            Err(f) => Outcome::Error(QueueErrorCode::MemoryViolation, Some(f)),
        }
    }

    fn barrier(&self, b: &BarrierPacket, all: bool) -> Outcome {
        let deps: Vec<u64> = b.dep_signal.iter().copied().filter(|&s| s != 0).collect();
        if deps.is_empty() {
            return Outcome::Done;
        }
        let vm = self.vm();
        self.wait_until(|| {
            let mut done = 0;
            for &s in &deps {
                if vm.read_u64(s + signal_offsets::VALUE)? as i64 == 0 {
                    done += 1;
                }
            }
            Ok(if all { done == deps.len() } else { done > 0 })
        })
    }

    fn barrier_value(&self, b: &BarrierValuePacket) -> Outcome {
        if b.signal == 0 {
            return Outcome::Done;
        }
        let vm = self.vm();
        self.wait_until(|| {
            let v = vm.read_u64(b.signal + signal_offsets::VALUE)? as i64 & b.mask;
            Ok(match b.condition {
                0 => v == b.value,
                1 => v != b.value,
                2 => v < b.value,
                _ => v >= b.value,
            })
        })
    }

    /// A wave halted: the queue stays at the packet, which never completes.
    fn wedge(&self) {
        self.ctl.wedged.store(true, Ordering::Release);
    }

    /// Stops the queue. A page fault is a device exception (every queue of the GPU is evicted,
    /// the memory-exception events report it; no signal is written). Any other error is the
    /// CP's: it writes the error code into the queue's inactive signal and raises its event.
    fn fail(&self, code: QueueErrorCode, fault: Option<GpuFault>) {
        if fault.is_some() {
            self.ctl.raise_device_exception(code, fault);
            return;
        }
        self.ctl.record_error(code);
        let vm = self.vm();
        let q = self.ctl.rptr - queue_offsets::READ_DISPATCH_ID;
        if let Ok(sig) = vm.read_u64(q + queue_offsets::QUEUE_INACTIVE_SIGNAL) {
            if sig != 0
                && vm
                    .write_u64(sig + signal_offsets::VALUE, code.bits())
                    .is_ok()
            {
                let _ = self.raise_signal_event(sig);
            }
        }
    }
}
