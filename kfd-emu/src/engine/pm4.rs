//! The PM4 packet processor of compute queues (KFD queue type COMPUTE): one thread per queue,
//! walking the ring in dwords and running each packet through the shared PM4 interpreter.
//!
//! The read pointer it writes back is a dword offset into the ring, as the CP's is; an illegal
//! packet is a CP exception (the GPU's queues are evicted and the memory-exception events say
//! so), not an error the queue reports itself.

use super::backoff::idle;
use super::clock::Clock;
use super::control::QueueCtl;
use super::env::{EngineEnv, EngineOptions};
use super::error::QueueErrorCode;
use super::pm4_interpreter::{Interpreter, Pm4Error};
use crate::kernel::KernelRegistry;
use crate::stats::Counters;
use std::sync::atomic::Ordering;
use std::sync::Arc;

struct Processor {
    ctl: Arc<QueueCtl>,
    kernels: Arc<KernelRegistry>,
    stats: Arc<Counters>,
    options: EngineOptions,
    clock: Clock,
}

/// Starts the processor thread of the PM4 queue `ctl`.
pub(crate) fn spawn(
    ctl: Arc<QueueCtl>,
    env: &EngineEnv,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let p = Processor {
        ctl: ctl.clone(),
        kernels: env.kernels.clone(),
        stats: env.stats.clone(),
        options: env.options,
        clock: Clock::new(env.epoch, ctl.gpu.params.gpu_clock_hz),
    };
    std::thread::Builder::new()
        .name(format!("kfd-emu-pm4-{}", ctl.id))
        .spawn(move || p.run())
}

impl Processor {
    fn run(self) {
        let gpu = self.ctl.gpu.clone();
        let vm = &gpu.vm;
        let size = self.ctl.ring_size / 4;
        let mut interp = Interpreter::new(
            &self.ctl,
            &self.kernels,
            &self.stats,
            self.options.wave_threads,
            self.clock,
        );
        let mut rd = 0u64;
        let mut rounds = 0u32;
        let stopped = || self.ctl.stopped();
        while !self.ctl.stopped() {
            let snap = gpu.idle_snapshot(self.options.spin_poll, Some(self.ctl.doorbell_index));
            let mut wptr = vm.read_u64(self.ctl.wptr).unwrap_or(rd);
            if self.options.requires_doorbell {
                wptr = wptr.min(gpu.doorbell(self.ctl.doorbell_index));
            }
            if self.ctl.paused() || wptr <= rd {
                let watch = Some(&*self.ctl.watch);
                idle(&gpu, self.options.spin_poll, &mut rounds, &snap, watch);
                continue;
            }
            rounds = 0;
            self.ctl.before_packet();
            let pos = rd % size;
            // A packet never crosses the end of the ring.
            let available = (wptr - rd).min(size - pos);
            // The CP reports the packet consumed once it has fetched it, before running it:
            // a packet's end-of-pipe interrupt always comes after the read pointer passed
            // the packet (a runtime woken by it computes free ring space from that pointer).
            let r = interp
                .fetch(self.ctl.ring + pos * 4, available)
                .and_then(|(p, n)| {
                    let _ = vm.write_u32(self.ctl.rptr, ((rd + n) % size) as u32);
                    interp.execute(&p, n, 0, &stopped).map(|()| n)
                });
            match r {
                Ok(n) => {
                    rd += n;
                    self.stats.packets_run.fetch_add(1, Ordering::Relaxed);
                }
                Err(Pm4Error::Stopped) => return,
                Err(Pm4Error::Halted) => self.ctl.wedged.store(true, Ordering::Release),
                Err(e) => self.fail(e),
            }
        }
    }

    fn fail(&self, e: Pm4Error) {
        let (code, fault) = match e {
            Pm4Error::Fault(f) => (QueueErrorCode::MemoryViolation, Some(f)),
            Pm4Error::BadDispatch => (QueueErrorCode::InvalidCodeObject, None),
            Pm4Error::Wave(code) => (code, None),
            _ => (QueueErrorCode::InvalidPacketFormat, None),
        };
        // An illegal packet is a CP or SDMA exception, reported (like a page fault) through
        // the memory-exception event, with every queue of the GPU evicted.
        self.ctl.raise_device_exception(code, fault);
    }
}
