//! Counters tests read.

use crate::Emulator;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) packets_run: AtomicU64,
    pub(crate) torn_packets: AtomicU64,
    pub(crate) sdma_cache_requests: AtomicU64,
}

/// A snapshot of the emulator's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmuStats {
    /// Buffers allocated and not freed.
    pub live_allocations: usize,
    /// Events created and not destroyed.
    pub live_events: usize,
    /// Queues created and not destroyed.
    pub live_queues: usize,
    /// Packets the processors have completed.
    pub packets_run: u64,
    /// Packets whose bytes changed after their header became valid (a protocol violation by the
    /// writer).
    pub torn_packets: u64,
    /// Dispatches whose code changed since the instruction cache fetched it, with no invalidate
    /// in between (strict mode).
    pub stale_code_fetches: u64,
    /// GCR_REQ packets (cache writeback/invalidate) the SDMA engines executed.
    pub sdma_cache_requests: u64,
}

impl Counters {
    pub(crate) fn snapshot(&self, emu: &Emulator) -> EmuStats {
        EmuStats {
            live_allocations: emu.memory.live(),
            live_events: emu.events.live(),
            live_queues: emu.queues.live(),
            packets_run: self.packets_run.load(Ordering::Acquire),
            torn_packets: self.torn_packets.load(Ordering::Acquire),
            stale_code_fetches: emu
                .gpus
                .iter()
                .map(|g| g.stale_code_fetches.load(Ordering::Acquire))
                .sum(),
            sdma_cache_requests: self.sdma_cache_requests.load(Ordering::Acquire),
        }
    }
}
