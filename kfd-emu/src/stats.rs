//! Counters tests read.

use std::sync::atomic::AtomicU64;

/// The counters the engines bump (the others are read from where they live: see
/// `Emulator::stats`).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) packets_run: AtomicU64,
    pub(crate) torn_packets: AtomicU64,
    pub(crate) sdma_cache_requests: AtomicU64,
    pub(crate) machine_dispatches: AtomicU64,
    pub(crate) wave_instructions: AtomicU64,
    pub(crate) scratch_requests: AtomicU64,
    pub(crate) vram_moved_to_system: AtomicU64,
    pub(crate) sdma_xgmi_packets: AtomicU64,
    pub(crate) fences_before_writeback: AtomicU64,
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
    /// GPU reads of host-visible VRAM the CPU wrote with no HDP flush since (strict mode).
    pub unflushed_vram_reads: u64,
    /// Dispatches whose machine code ran on the wave interpreter (not a host-bound kernel).
    pub machine_dispatches: u64,
    /// Wave-instructions the interpreter executed.
    pub wave_instructions: u64,
    /// Times an AQL processor stopped to ask the runtime for scratch (more, or to take back
    /// scratch lent for one dispatch).
    pub scratch_requests: u64,
    /// Bytes of VRAM the driver moved to system memory to map them to a GPU with no
    /// peer-to-peer path to their owner ([`crate::Platform::peer_to_peer`]).
    pub vram_moved_to_system: u64,
    /// SDMA packets run on queues of the XGMI engines (`KFD_IOC_QUEUE_TYPE_SDMA_XGMI`), which
    /// runtimes use for copies between GPUs of one hive.
    pub sdma_xgmi_packets: u64,
    /// PM4 `RELEASE_MEM`s that told the CPU of dispatches (a data write or an interrupt) with
    /// no L2 write-back action since them (strict mode): on a GPU the CPU may then read what
    /// the dispatches wrote before it leaves the L2.
    pub fences_before_writeback: u64,
}
