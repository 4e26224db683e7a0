//! The SDMA engine: one thread per SDMA queue, executing the ring in bytes.
//!
//! Like the hardware it writes back a 64-bit read pointer after each packet and, just past it,
//! scratch data of its own (a progress counter), so a runtime that keeps other words next to an
//! SDMA read pointer sees them clobbered. Every address is checked against the GPU's page table:
//! an unmapped one is a memory exception and the queue stops. The sub-window (rectangle) copy
//! runs in `sub_window`.

mod sub_window;

use super::backoff::idle;
use super::clock::Clock;
use super::control::QueueCtl;
use super::env::EngineEnv;
use super::error::QueueErrorCode;
use crate::stats::Counters;
use crate::vm::GpuFault;
use sdma::{AtomicOp, SdmaPacket, SdmaVersion};
use std::sync::atomic::Ordering;
use std::sync::Arc;

enum Stop {
    Stopped,
    Fault(GpuFault),
    Malformed,
}

impl From<GpuFault> for Stop {
    fn from(f: GpuFault) -> Self {
        Stop::Fault(f)
    }
}

struct Engine {
    ctl: Arc<QueueCtl>,
    spin_poll: bool,
    clock: Clock,
    stats: Arc<Counters>,
    version: SdmaVersion,
}

/// Starts the engine thread of the SDMA queue `ctl`.
pub(crate) fn spawn(
    ctl: Arc<QueueCtl>,
    env: &EngineEnv,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let version = SdmaVersion::from_gfx_target_version(ctl.gpu.params.gfx_target_version)
        .unwrap_or(SdmaVersion::V4);
    let e = Engine {
        ctl: ctl.clone(),
        spin_poll: env.options.spin_poll,
        clock: Clock::new(env.epoch, ctl.gpu.params.gpu_clock_hz),
        stats: env.stats.clone(),
        version,
    };
    std::thread::Builder::new()
        .name(format!("kfd-emu-sdma-{}", ctl.id))
        .spawn(move || e.run())
}

impl Engine {
    fn run(self) {
        let gpu = self.ctl.gpu.clone();
        let vm = &gpu.vm;
        let size = self.ctl.ring_size;
        let mut rd = 0u64;
        let mut rounds = 0u32;
        let mut scratch = 0u64;
        while !self.ctl.stopped() {
            let snap = gpu.idle_snapshot(self.spin_poll, Some(self.ctl.doorbell_index));
            let wptr = vm.read_u64(self.ctl.wptr).unwrap_or(rd);
            if self.ctl.paused() || wptr <= rd {
                let watch = Some(&*self.ctl.watch);
                idle(&gpu, self.spin_poll, &mut rounds, &snap, watch);
                continue;
            }
            rounds = 0;
            self.ctl.before_packet();
            let pos = rd % size;
            // A packet never straddles the end of the ring.
            let avail = ((wptr - rd).min(size - pos) / 4) as usize;
            let mut bytes = vec![0u8; avail.min(1 << 16) * 4];
            let r = vm
                .read(self.ctl.ring + pos, &mut bytes)
                .map_err(Stop::from)
                .and_then(|()| {
                    let d: Vec<u32> = bytes
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    SdmaPacket::decode_for_part(self.version, self.ctl.gpu.params.gfx_target_version, &d)
                        .map_err(|e| {
                        log::warn!(
                            "kfd-emu: SDMA queue {}: undecodable packet at {pos:#x} ({e:?}): {:08x?}",
                            self.ctl.id,
                            &d[..d.len().min(8)]
                        );
                        Stop::Malformed
                    })
                })
                .and_then(|(p, n)| self.execute(&p).map(|()| n));
            match r {
                Ok(n) => {
                    rd += n as u64 * 4;
                    scratch += 1;
                    let _ = vm.write_u64(self.ctl.rptr, rd);
                    // The engine's own bookkeeping lands right after the read pointer.
                    let _ = vm.write_u64(self.ctl.rptr + 8, scratch | 0x5D3A_0000_0000_0000);
                    self.stats.packets_run.fetch_add(1, Ordering::Relaxed);
                    if let Some(engine) = self.ctl.sdma_engine {
                        if engine >= self.ctl.gpu.params.sdma_engines {
                            self.stats.sdma_xgmi_packets.fetch_add(1, Ordering::Relaxed);
                        }
                        if let Some(c) = self.stats.sdma_engine_packets.get(engine as usize) {
                            c.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                Err(Stop::Stopped) => return,
                Err(e) => self.fail(e),
            }
        }
    }

    /// Runs packet `p` of the queue.
    fn execute(&self, p: &SdmaPacket) -> Result<(), Stop> {
        let vm = &self.ctl.gpu.vm;
        match p {
            SdmaPacket::Nop { .. } => {}
            // ROCr's and Linux's HDP flush (registers are not modelled: other register polls
            // do not decode and stop the queue as malformed).
            SdmaPacket::HdpFlush => {
                log::trace!("kfd-emu: SDMA queue {}: HDP flush", self.ctl.id);
                if self.ctl.gpu.strict {
                    crate::hdp::flush(self.ctl.gpu.hdp_owner);
                }
            }
            // The engine's caches are not modelled: the request is counted, so tests can see
            // that a runtime issues it where the hardware needs it.
            SdmaPacket::Gcr { .. } => {
                self.stats
                    .sdma_cache_requests
                    .fetch_add(1, Ordering::Relaxed);
            }
            SdmaPacket::CopyLinear { .. }
            | SdmaPacket::CopyLinearBroadcast { .. }
            | SdmaPacket::CopyLinearSubWindow(_)
            | SdmaPacket::ConstantFill { .. }
            | SdmaPacket::Write { .. }
            | SdmaPacket::Fence { .. } => memory_packet(vm, p).unwrap_or(Ok(()))?,
            SdmaPacket::Trap { int_context } => self.ctl.events.signal_from_device(*int_context),
            SdmaPacket::PollRegMem {
                addr,
                reference,
                mask,
                func,
                retry_count,
                ..
            } => {
                let mut tries = 0u32;
                let mut rounds = 0u32;
                loop {
                    let snap = self.ctl.gpu.idle_snapshot(self.spin_poll, None);
                    if func.eval(vm.read_u32(*addr)?, *reference, *mask) {
                        break;
                    }
                    if self.ctl.stopped() {
                        return Err(Stop::Stopped);
                    }
                    tries += 1;
                    if *retry_count != 0xFFF && tries > *retry_count * 64 {
                        // Out of retries: the engine moves on, as the packet defines.
                        break;
                    }
                    idle(&self.ctl.gpu, false, &mut rounds, &snap, None);
                }
            }
            SdmaPacket::Atomic { addr, op, src, .. } => match op {
                AtomicOp::Add64 => {
                    // An atomic to system memory on a host without PCIe AtomicOps does not
                    // land (the checks an access makes still apply: a read faults as it would).
                    if vm.drops_atomic(*addr, false) {
                        log::debug!(
                            "kfd-emu: SDMA queue {}: atomic at {addr:#x} dropped (no PCIe atomics)",
                            self.ctl.id
                        );
                        vm.read_u64(*addr)?;
                    } else {
                        vm.atomic_add_u64(*addr, *src)?;
                    }
                }
                AtomicOp::Other(_) => return Err(Stop::Malformed),
            },
            SdmaPacket::Timestamp { addr } => vm.write_u64(*addr, self.clock.gpu_ticks())?,
        }
        Ok(())
    }

    fn fail(&self, e: Stop) {
        let (code, fault) = match e {
            Stop::Fault(f) => (QueueErrorCode::MemoryViolation, Some(f)),
            _ => (QueueErrorCode::InvalidPacketFormat, None),
        };
        // An illegal packet is a CP or SDMA exception, reported (like a page fault) through
        // the memory-exception event, with every queue of the GPU evicted.
        self.ctl.raise_device_exception(code, fault);
    }
}

/// [`memory_packet`] for an indirect buffer: the failure as text.
pub(crate) fn ib_memory_packet(
    vm: &crate::vm::GpuVm,
    p: &SdmaPacket,
) -> Option<Result<(), String>> {
    memory_packet(vm, p).map(|r| {
        r.map_err(|e| match e {
            Stop::Fault(f) => f.to_string(),
            Stop::Malformed => "a malformed packet".to_owned(),
            Stop::Stopped => "stopped".to_owned(),
        })
    })
}

/// Runs `p` if it only moves memory (a NOP, a copy, a fill, a write, a fence): what any SDMA
/// engine does with it, queue or indirect buffer alike. `None`: not such a packet.
fn memory_packet(vm: &crate::vm::GpuVm, p: &SdmaPacket) -> Option<Result<(), Stop>> {
    let r: Result<(), GpuFault> = match p {
        SdmaPacket::Nop { .. } => Ok(()),
        SdmaPacket::CopyLinear { src, dst, bytes } => vm.copy(*dst, *src, *bytes),
        SdmaPacket::CopyLinearBroadcast {
            src,
            dst1,
            dst2,
            bytes,
        } => vm
            .copy(*dst1, *src, *bytes)
            .and_then(|()| vm.copy(*dst2, *src, *bytes)),
        SdmaPacket::CopyLinearSubWindow(c) => return Some(sub_window::run(vm, c)),
        SdmaPacket::ConstantFill { dst, data, bytes } => vm.fill_u32(*dst, *data, *bytes),
        SdmaPacket::Write { dst, data } => data
            .iter()
            .enumerate()
            .try_for_each(|(i, d)| vm.write_u32(dst + 4 * i as u64, *d)),
        SdmaPacket::Fence { addr, data, .. } => vm.write_u32(*addr, *data),
        _ => return None,
    };
    Some(r.map_err(Stop::from))
}
