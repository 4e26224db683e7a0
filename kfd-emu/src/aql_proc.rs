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

use crate::device::GpuState;
use crate::kernel::{KernelRegistry, WorkGroup};
use crate::queue::{QueueCtl, QueueErrorCode};
use crate::stats::Counters;
use crate::vm::{GpuFault, GpuVm};
use crate::Emulator;
use aql::{
    queue_offsets, signal_offsets, BarrierPacket, BarrierValuePacket, KernelDispatchPacket, Packet,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a free slot's completion-signal dwords hold in strict mode: a non-canonical address no
/// packet can carry, so a packet whose header is valid while they still hold it was published
/// before its body.
pub(crate) const UNPUBLISHED: u32 = 0xBAD0_AC1D;
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

/// The kernarg segment's alignment (the HSA ABI's minimum).
const KERNARG_ALIGN: u64 = 16;

/// Dispatches that may run alongside later packets at once, like the few a CP has in flight.
const MAX_OVERLAP: usize = 8;

struct Processor {
    ctl: Arc<QueueCtl>,
    kernels: Arc<KernelRegistry>,
    stats: Arc<Counters>,
    faults: Arc<FaultView>,
    requires_doorbell: bool,
    spin_poll: bool,
    torn_window: Duration,
    strict: bool,
    epoch: Instant,
}

/// What the processor needs of the fault injector (shared by reference count, not by lifetime).
pub(crate) struct FaultView(*const crate::FaultInjector);

impl FaultView {
    pub(crate) fn new(f: &crate::FaultInjector) -> FaultView {
        FaultView(f)
    }

    pub(crate) fn is_stalled(&self, queue_id: u32) -> bool {
        // SAFETY: see the type's Send/Sync impls: the injector outlives every processor thread.
        unsafe { &*self.0 }.is_stalled(queue_id)
    }
}
// SAFETY: the injector lives inside the Emulator, which joins every processor thread before it
// is dropped (`QueueTable::stop_all` in `Emulator::drop`), and its state is behind a mutex.
unsafe impl Send for FaultView {}
// SAFETY: as above.
unsafe impl Sync for FaultView {}

enum Outcome {
    Done,
    Error(QueueErrorCode, Option<GpuFault>),
    Stopped,
}

pub(crate) fn spawn(
    emu: &Emulator,
    ctl: Arc<QueueCtl>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let p = Processor {
        ctl: ctl.clone(),
        kernels: emu.kernels.clone(),
        stats: emu.stats.clone(),
        faults: Arc::new(FaultView(&emu.faults)),
        requires_doorbell: emu.config.aql_requires_doorbell,
        spin_poll: emu.config.spin_poll,
        torn_window: emu.config.torn_check_window,
        strict: emu.config.strict,
        epoch: emu.epoch,
    };
    std::thread::Builder::new()
        .name(format!("kfd-emu-aql-{}", ctl.id))
        .spawn(move || p.run())
}

/// Waits a little: spins first, then sleeps with growing intervals (woken early by doorbell
/// hints), so an idle queue costs next to no CPU. Shared by every packet processor.
pub(crate) fn idle(gpu: &GpuState, spin_poll: bool, idle_rounds: &mut u32, generation: u64) {
    *idle_rounds = idle_rounds.saturating_add(1);
    if spin_poll || *idle_rounds < 64 {
        std::hint::spin_loop();
    } else if *idle_rounds < 128 {
        std::thread::yield_now();
    } else {
        let us = 10u64 << (*idle_rounds - 128).min(7);
        gpu.wait_for_hint(generation, Duration::from_micros(us.min(1000)));
    }
}

impl Processor {
    fn gpu(&self) -> &GpuState {
        &self.ctl.gpu
    }

    fn vm(&self) -> &GpuVm {
        &self.ctl.gpu.vm
    }

    fn stopped(&self) -> bool {
        self.ctl.stop.load(Ordering::Acquire)
    }

    fn paused(&self) -> bool {
        !self.ctl.enabled.load(Ordering::Acquire)
            // SAFETY: see `FaultView`.
            || unsafe { &*self.faults.0 }.is_stalled(self.ctl.id)
            || self.ctl.halted()
    }

    fn gpu_clock(&self) -> u64 {
        (self.epoch.elapsed().as_nanos() * u128::from(self.gpu().params.gpu_clock_hz)
            / 1_000_000_000) as u64
    }

    /// Waits a little: spins first, then sleeps with growing intervals (woken early by doorbell
    /// hints), so an idle queue costs next to no CPU.
    fn idle(&self, idle_rounds: &mut u32, generation: u64) {
        idle(self.gpu(), self.spin_poll, idle_rounds, generation);
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
        while !self.stopped() {
            in_flight.retain(|h| !h.is_finished());
            let generation = self.gpu().wake_generation();
            if self.paused() {
                self.idle(&mut idle_rounds, generation);
                continue;
            }
            // The CP looks at a slot only once a producer has reserved it (the write index is
            // past it): a ring nobody wrote stays untouched, whatever its memory holds.
            if !self.reserved(rd) {
                self.idle(&mut idle_rounds, generation);
                continue;
            }
            let slot = self.ctl.ring + (rd % n) * 64;
            let header = match self.vm().read_u32(slot) {
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
                self.idle(&mut idle_rounds, generation);
                continue;
            }
            idle_rounds = 0;
            let mut raw = [0u32; 16];
            let mut bytes = [0u8; 64];
            if let Err(f) = self.vm().read(slot, &mut bytes) {
                self.fail(QueueErrorCode::MemoryViolation, Some(f));
                continue;
            }
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
            let outcome = match Packet::decode(&raw) {
                Ok(p) => {
                    if p.barrier() || in_flight.len() >= MAX_OVERLAP {
                        // Everything before a barrier packet completes first.
                        for h in in_flight.drain(..) {
                            let _ = h.join();
                        }
                        if self.paused() {
                            continue;
                        }
                    }
                    if matches!(p, Packet::KernelDispatch(_)) && self.next_may_overlap(rd) {
                        in_flight.push(scope.spawn(move || {
                            if let Outcome::Error(code, fault) = self.execute(&p) {
                                self.fail(code, fault);
                            }
                        }));
                        Outcome::Done
                    } else {
                        self.execute(&p)
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
                Outcome::Done => {}
            }
            // Header back to INVALID before the read index moves, so a producer that sees the
            // slot free never sees a stale valid header; in strict mode the body is marked
            // unpublished first, so a header stored before its body is caught.
            if self.strict {
                let _ = self.vm().write_u64(slot + 56, UNPUBLISHED_PAIR);
            }
            let _ = self.vm().write_u32(slot, aql::INVALID_HEADER_WORD);
            rd += 1;
            let _ = self.vm().write_u64(self.ctl.rptr, rd);
        }
    }

    /// Whether a producer has reserved packet `index` (the queue's write index is past it).
    fn reserved(&self, index: u64) -> bool {
        self.vm().read_u64(self.ctl.wptr).is_ok_and(|w| w > index)
    }

    /// Whether the packet after `rd` is already published without the barrier bit: then the
    /// dispatch at `rd` may run alongside it.
    fn next_may_overlap(&self, rd: u64) -> bool {
        let n = self.ctl.ring_size / 64;
        let next = self.ctl.ring + ((rd + 1) % n) * 64;
        self.reserved(rd + 1)
            && self
                .vm()
                .read_u32(next)
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

    fn execute(&self, p: &Packet) -> Outcome {
        log::trace!("kfd-emu: queue {}: {p:?}", self.ctl.id);
        let start = self.gpu_clock();
        let r = match p {
            Packet::KernelDispatch(d) => self.dispatch(d),
            Packet::BarrierAnd(b) => self.barrier(b, true),
            Packet::BarrierOr(b) => self.barrier(b, false),
            Packet::BarrierValue(b) => self.barrier_value(b),
            // PM4 indirect buffers (icache invalidation, ROCr's and kfdrt's) run through the PM4
            // queues' interpreter.
            Packet::VendorPm4Ib(ib) => {
                let mut interp = crate::pm4_proc::Interpreter::new(
                    self.gpu(),
                    &self.ctl,
                    &self.kernels,
                    self.epoch,
                );
                match interp.run_buffer(ib.ib_address, ib.ib_size_dwords, 0, &|| self.stopped()) {
                    Ok(()) => Outcome::Done,
                    Err(crate::pm4_proc::Pm4Error::Stopped) => Outcome::Stopped,
                    Err(crate::pm4_proc::Pm4Error::Fault(f)) => {
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

    fn complete(&self, signal: u64, start: u64) -> Outcome {
        if signal == 0 {
            return Outcome::Done;
        }
        let vm = self.vm();
        let r = (|| -> Result<(), GpuFault> {
            let profiling = vm.read_u32(
                self.ctl.rptr - queue_offsets::READ_DISPATCH_ID + queue_offsets::QUEUE_PROPERTIES,
            )? & aql::QUEUE_PROPERTY_ENABLE_PROFILING
                != 0;
            if profiling {
                vm.write_u64(signal + signal_offsets::START_TS, start)?;
                vm.write_u64(signal + signal_offsets::END_TS, self.gpu_clock().max(start))?;
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
        let mailbox = vm.read_u64(signal + signal_offsets::EVENT_MAILBOX_PTR)?;
        log::trace!(
            "kfd-emu: queue {}: signal {signal:#x} mailbox {mailbox:#x}",
            self.ctl.id
        );
        if mailbox != 0 {
            let id = vm.read_u32(signal + signal_offsets::EVENT_ID)?;
            vm.write_u64(mailbox, u64::from(id))?;
            self.ctl.events.signal_from_device(id);
        }
        Ok(())
    }

    fn dispatch(&self, d: &KernelDispatchPacket) -> Outcome {
        use QueueErrorCode::*;
        if !(1..=3).contains(&d.dimensions) || d.grid_size.contains(&0) {
            return Outcome::Error(InvalidArgument, None);
        }
        let wg: [u32; 3] = d.workgroup_size.map(u32::from);
        if wg.contains(&0) || wg.iter().product::<u32>() > 1024 {
            return Outcome::Error(IncompatibleArguments, None);
        }
        if u64::from(d.group_segment_size) > u64::from(self.gpu().params.lds_size_kb) * 1024 {
            return Outcome::Error(IncompatibleArguments, None);
        }
        let mut kd = [0u8; 64];
        if d.kernel_object % 64 != 0 || self.vm().read(d.kernel_object, &mut kd).is_err() {
            return Outcome::Error(InvalidCodeObject, None);
        }
        let kd = aql::KernelDescriptor::from_bytes(&kd);
        // The first instruction fetch: the code must be mapped executable (a NoExecute fault
        // otherwise, as the GPU's page table raises it).
        let Some(entry) = d
            .kernel_object
            .checked_add_signed(kd.kernel_code_entry_byte_offset)
        else {
            return Outcome::Error(InvalidCodeObject, None);
        };
        if let Err(f) = self.vm().check_exec(entry, 4) {
            return Outcome::Error(MemoryViolation, Some(f));
        }
        self.gpu().fetch_code(entry);
        let Some(f) = self.kernels.get(d.kernel_object) else {
            // Not bound: it may be one of ROCr's own blit kernels (under the preload).
            let Some(blit) = crate::rocr_blit::recognize(
                self.vm(),
                d.kernel_object,
                kd.kernel_code_entry_byte_offset,
            ) else {
                return Outcome::Error(InvalidCodeObject, None);
            };
            log::trace!("kfd-emu: queue {}: ROCr {blit:?} blit", self.ctl.id);
            return match crate::rocr_blit::run(self.vm(), blit, d.kernarg_address, d.grid_size[0]) {
                Ok(()) => Outcome::Done,
                Err(crate::rocr_blit::BlitError::BadArguments) => {
                    Outcome::Error(InvalidArgument, None)
                }
                Err(crate::rocr_blit::BlitError::Fault(f)) => {
                    Outcome::Error(MemoryViolation, Some(f))
                }
            };
        };
        if kd.kernarg_size > 0
            && !self
                .vm()
                .is_mapped(d.kernarg_address, u64::from(kd.kernarg_size))
        {
            return Outcome::Error(InvalidArgument, None);
        }
        // The ABI gives the kernarg segment 16-byte alignment and kernels load it with wide
        // scalar loads, which drop the low address bits: a misaligned segment is read from the
        // wrong place on hardware. Strict mode refuses it.
        if self.strict && kd.kernarg_size > 0 && d.kernarg_address % KERNARG_ALIGN != 0 {
            log::error!(
                "kfd-emu: queue {}: kernarg segment at {:#x} is not {KERNARG_ALIGN}-byte aligned",
                self.ctl.id,
                d.kernarg_address
            );
            return Outcome::Error(InvalidArgument, None);
        }
        let groups: [u32; 3] = std::array::from_fn(|i| d.grid_size[i].div_ceil(wg[i]));
        for z in 0..groups[2] {
            for y in 0..groups[1] {
                for x in 0..groups[0] {
                    if self.stopped() {
                        return Outcome::Stopped;
                    }
                    let w = WorkGroup {
                        group_id: [x, y, z],
                        workgroup_size: wg,
                        grid_size: d.grid_size,
                        kernarg_address: d.kernarg_address,
                        mem: self.vm(),
                        gpu_id: self.gpu().gpu_id,
                    };
                    if let Err(fault) = f(&w) {
                        return Outcome::Error(MemoryViolation, Some(fault));
                    }
                }
            }
        }
        Outcome::Done
    }

    /// Polls until `ready` says so, backing off; `None` from `ready` is a fault.
    fn wait_until(&self, mut ready: impl FnMut() -> Result<bool, GpuFault>) -> Outcome {
        let mut rounds = 0u32;
        loop {
            let generation = self.gpu().wake_generation();
            match ready() {
                Ok(true) => return Outcome::Done,
                Ok(false) => {}
                Err(f) => return Outcome::Error(QueueErrorCode::MemoryViolation, Some(f)),
            }
            if self.stopped() {
                return Outcome::Stopped;
            }
            self.idle(&mut rounds, generation);
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
