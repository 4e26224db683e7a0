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
    pub(crate) xcc_scratch_overlaps: AtomicU64,
    pub(crate) sdma_engine_packets: [AtomicU64; 16],
    pub(crate) unjoined_xcc_fences: AtomicU64,
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
    /// SDMA packets run per engine (summed over the GPUs): engine `e` of a GPU is `e`, its
    /// XGMI engines numbered after its PCIe ones, as amdkfd's `allocate_sdma_queue` numbers
    /// them when it places a queue.
    pub sdma_engine_packets: [u64; 16],
    /// PM4 `RELEASE_MEM`s that told the CPU of dispatches (a data write or an interrupt) with
    /// no L2 write-back action since them (strict mode): on a GPU the CPU may then read what
    /// the dispatches wrote before it leaves the L2.
    pub fences_before_writeback: u64,
    /// PM4 dispatches on a GPU of several XCCs whose XCCs' scratch ranges (each XCC's
    /// `COMPUTE_DISPATCH_SCRATCH_BASE` and `COMPUTE_TMPRING_SIZE`) overlap: every XCC runs
    /// the queue's stream, so on an MI300X their waves would overwrite each other's private
    /// memory. kfd-emu runs them correctly and counts them (the waves of its XCCs never share
    /// a slot at the same time).
    pub xcc_scratch_overlaps: u64,
    /// PM4 `RELEASE_MEM`s that tell the CPU of dispatches (a data write or an interrupt) and
    /// that every XCC of a multi-XCC GPU runs (no `PRED_EXEC` narrows them), in strict mode:
    /// on an MI300X each XCC writes or interrupts when its own share is done, so the first one
    /// reports the work complete while others still run. kfd-emu runs the stream in step
    /// across XCCs (the release comes after all of them) and counts it.
    pub unjoined_xcc_fences: u64,
}
