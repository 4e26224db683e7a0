//! Queue control: what one queue's packet processor shares with the queue table (its ring, its
//! stop/enable/error state) and what every processor asks of it before running a packet.

use super::error::QueueErrorCode;
use crate::device::GpuState;
use crate::events::{EventTable, MemoryFault};
use crate::fault::FaultInjector;
use crate::vm::GpuFault;
use kfd_sys::bindings::KFD_IOC_EVENT_MEMORY;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The control block of one queue, shared by the queue table (which creates, updates and stops
/// it) and the queue's packet-processor thread.
pub(crate) struct QueueCtl {
    pub(crate) id: u32,
    pub(crate) queue_type: u32,
    /// An SDMA queue's engine (XGMI engines numbered after the PCIe ones).
    pub(crate) sdma_engine: Option<u32>,
    pub(crate) gpu: Arc<GpuState>,
    pub(crate) ring: u64,
    pub(crate) ring_size: u64,
    pub(crate) rptr: u64,
    pub(crate) wptr: u64,
    pub(crate) doorbell_index: u32,
    pub(crate) stop: AtomicBool,
    pub(crate) enabled: AtomicBool,
    pub(crate) error: Mutex<Option<QueueErrorCode>>,
    /// Set with `error`, read by the processor loop without locking.
    pub(crate) failed: AtomicBool,
    pub(crate) events: Arc<EventTable>,
    /// The emulator's fault injection, for the stalls a test asks for. Shared by reference
    /// count, so a processor thread never depends on the emulator outliving it.
    pub(crate) faults: Arc<FaultInjector>,
    /// The CU mask `SET_CU_MASK` last gave (bits, 32 per word; empty: all CUs). Recorded
    /// only: the emulated work-groups do not run on CUs.
    pub(crate) cu_mask: Mutex<Vec<u32>>,
    /// The GPU's exception count when the queue was created: a later exception evicts it.
    pub(crate) exception_epoch: u64,
    /// The emulator's doorbell watcher, which wakes the processor from a deep sleep.
    pub(crate) watch: Arc<super::watcher::Watch>,
    /// The queue holds its GPU's global wave sync resources (`ALLOC_QUEUE_GWS`).
    pub(crate) holds_gws: AtomicBool,
    /// The queue's context save/restore area (`ctx_save_restore_address`; 0 for SDMA), whose
    /// header tells the driver where to report the queue's wave exceptions.
    pub(crate) cwsr: u64,
    /// `ctx_save_restore_size` (per XCC) and `ctl_stack_size` it was created with.
    pub(crate) cwsr_size: u32,
    pub(crate) ctl_stack_size: u32,
    /// The process's debug state: who hears a wave exception.
    pub(crate) debug: Arc<crate::debugger::DebugState>,
    /// A wave of the queue halted: its dispatch never completes and the queue runs nothing
    /// more (only destroying it ends that).
    pub(crate) wedged: AtomicBool,
    /// The queue's priority (0-15), from create or update: its dispatches' pipe priority.
    pub(crate) priority: std::sync::atomic::AtomicU32,
    /// Where the queue's waves' interrupt messages go, made on the first dispatch.
    pub(crate) sink: std::sync::OnceLock<kfd_emu_isa::MessageSink>,
}

impl QueueCtl {
    /// The GPU's GWS resources if this queue holds them, for a dispatch's waves.
    pub(crate) fn gws(&self) -> Option<Arc<kfd_emu_isa::gws::Gws>> {
        self.holds_gws
            .load(Ordering::Acquire)
            .then(|| self.gpu.gws.clone())
    }
}

impl super::watcher::WatchedQueue for QueueCtl {
    fn gpu(&self) -> &GpuState {
        &self.gpu
    }
    fn doorbell_index(&self) -> u32 {
        self.doorbell_index
    }
    fn wptr_address(&self) -> u64 {
        self.wptr
    }
    fn stopped(&self) -> bool {
        QueueCtl::stopped(self)
    }
}

impl QueueCtl {
    /// Whether the processor must exit (the queue is being destroyed).
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Whether the processor must consume nothing for now: the queue is disabled
    /// (`UPDATE_QUEUE` with a zero percentage or no ring), a test stalled it, or it halted.
    pub(crate) fn paused(&self) -> bool {
        !self.enabled.load(Ordering::Acquire)
            || self.faults.is_stalled(self.id)
            || self.halted()
            || self.wedged.load(Ordering::Acquire)
    }

    /// Whether the queue runs nothing more: it stopped on an error of its own, or a device
    /// exception on its GPU evicted it.
    pub(crate) fn halted(&self) -> bool {
        self.failed.load(Ordering::Acquire) || self.gpu.exceptions() > self.exception_epoch
    }

    /// What every engine does when it starts a packet: apply an HDP flush the CPU asked for
    /// before publishing the packet, so the packet reads what the CPU wrote.
    pub(crate) fn before_packet(&self) {
        self.gpu.poll_hdp_flush();
    }

    /// Records that the queue stopped with `code` (what `Emulator::queue_error` reports).
    pub(crate) fn record_error(&self, code: QueueErrorCode) {
        log::warn!("kfd-emu: queue {} stopped: {code:?}", self.id);
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(code);
        self.failed.store(true, Ordering::Release);
    }

    /// A device exception raised by this queue's engine, as amdkfd handles one no debugger
    /// claims: every queue the process has on the GPU is evicted (`kfd_dqm_evict_pasid`) and the
    /// process's memory-exception events are signalled with the fault (`fault`: a page fault
    /// with its address and kind; `None`: an engine exception, reported without an address).
    /// No completion signal and no AQL error signal is written.
    pub(crate) fn raise_device_exception(&self, code: QueueErrorCode, fault: Option<GpuFault>) {
        self.record_error(code);
        let data = MemoryFault {
            va: fault.map_or(0, |f| f.va),
            gpu_id: self.gpu.gpu_id,
            kind: fault.map(|f| f.kind),
            error_type: 0,
        };
        let (gpu, events, faults) = (self.gpu.clone(), self.events.clone(), self.faults.clone());
        let deliver = move || {
            // kfd_dqm_evict_pasid: the process's queues on the GPU are evicted, and nothing
            // restores them; later queues are created evicted (create_queue_cpsch).
            gpu.raise_fault();
            events.signal_kind(KFD_IOC_EVENT_MEMORY, Some(data));
            if fault.is_some() {
                faults.smi.vm_fault(gpu.gpu_id);
            }
        };
        // kfd_set_dbg_ev_from_interrupt: a debugger subscribed to memory violations takes a
        // page fault instead, and may hand it back (SEND_RUNTIME_EVENT), which delivers it then.
        if fault.is_some() {
            let violation = 1u64 << (kfd_sys::bindings::EC_DEVICE_MEMORY_VIOLATION - 1);
            if self.debug.raise_device(self.gpu.gpu_id, violation) {
                log::warn!(
                    "kfd-emu: GPU {:#x}: memory violation from queue {} reported to the debugger",
                    self.gpu.gpu_id,
                    self.id
                );
                self.debug.withhold(self.gpu.gpu_id, Box::new(deliver));
                return;
            }
        }
        log::warn!(
            "kfd-emu: GPU {:#x}: device exception from queue {} ({}); its queues are evicted",
            self.gpu.gpu_id,
            self.id,
            fault.map_or_else(|| "no address".to_owned(), |f| f.to_string())
        );
        deliver();
    }
}
