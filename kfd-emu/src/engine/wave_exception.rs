//! A wave's trap or exception, from the trap handler to the runtime, as amdkfd delivers it.
//!
//! The GPU runs the driver's first-level trap handler, which jumps to the second-level one the
//! process installed with `SET_TRAP_HANDLER`, or, with none, halts the wave at an exception and
//! steps over an `s_trap` (`cwsr_trap_handler_gfx9.asm`, `L_NO_NEXT_TRAP`): nothing is reported
//! and the dispatch never completes. A handler reports by `s_sendmsg(MSG_INTERRUPT)`, M0 holding
//! the queue's doorbell id (bits 9:0) and the exception mask (bits 23:10), then parks the wave.
//!
//! The interrupt (`event_interrupt_wq_v9`, `SQ_INTERRUPT_WORD_ENCODING_INST`): from a wave in
//! trap mode (the PRIV bit) it is a queue exception for `kfd_set_dbg_ev_from_interrupt`, which
//! gives it to an attached debugger that subscribed to it, else, if the runtime enabled itself
//! (`RUNTIME_ENABLE`), to the runtime through the queue's context-save area
//! (`kfd_send_exception_to_runtime` → `send_exception_work_handler`): the driver reads the
//! header at `ctx_save_restore_address` with `get_user`, ORs the mask into the 64-bit word at
//! `err_payload_addr`, and sets event `err_event_id`. A header the process cannot read loses
//! the exception (every `get_user` there fails and event 0 is set, which is no event). Any
//! other message, and a privileged one nobody took, signals the event whose id is in M0's
//! low 24 bits (`kfd_signal_event_interrupt(pasid, context_id0 & 0xffffff, 24)`).
//!
//! kfd-emu runs the second-level handler's code (the interpreter's trap mode) when the runtime
//! enabled itself: the handler then follows the debugger-era ABI above. A process that installed
//! a handler without enabling the runtime (ROCr before the debugger ABI, which ROCr 5.2.3 under
//! the preload is) gets that handler's effect modelled instead: the error code in the queue's
//! inactive signal, its event raised (see `engine::aql`).

use super::control::QueueCtl;
use crate::debugger::Heard;
use kfd_emu_isa::{MessageSink, SqMessage, TrapHandler, TrapRouting};
use kfd_sys::bindings::kfd_context_save_area_header;
use std::mem::offset_of;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `KFD_CTXID0_DOORBELL_ID_MASK`.
const DOORBELL_ID_MASK: u32 = 0x3FF;
/// `KFD_CTXID0_TRAP_CODE_SHIFT` and `_MASK`: the exception mask the handler sends.
const TRAP_CODE_SHIFT: u32 = 10;
const TRAP_CODE_MASK: u32 = 0xFF_FC00;

impl QueueCtl {
    /// Where this queue's waves go at a trap or an exception (see the module docs).
    pub(crate) fn trap_routing(&self) -> TrapRouting {
        let tba = self.gpu.trap_handler_tba.load(Ordering::Acquire);
        if tba == 0 {
            return TrapRouting::FirstLevelOnly;
        }
        if !self.debug.runtime_enabled() {
            return TrapRouting::Report;
        }
        TrapRouting::Handler(TrapHandler {
            tba,
            tma: self.gpu.trap_handler_tma.load(Ordering::Acquire),
            doorbell_id: self.doorbell_index,
        })
    }

    /// The receiver of this queue's waves' interrupt messages (made once per queue).
    pub(crate) fn message_sink(&self) -> MessageSink {
        self.sink
            .get_or_init(|| {
                let r = self.reporter();
                MessageSink(Arc::new(move |m| r.sq_interrupt(m)))
            })
            .clone()
    }

    /// Queue exceptions a debugger hands on to the runtime (`SEND_RUNTIME_EVENT`:
    /// `kfd_send_exception_to_runtime`), delivered as the driver delivers the runtime's own.
    pub(crate) fn send_exception_to_runtime(&self, mask: u64) {
        self.reporter().send_exception_to_runtime(mask);
    }

    fn reporter(&self) -> Reporter {
        Reporter {
            id: self.id,
            doorbell_index: self.doorbell_index,
            cwsr: self.cwsr,
            gpu_id: self.gpu.gpu_id,
            events: self.events.clone(),
            debug: self.debug.clone(),
        }
    }
}

/// What the interrupt handler needs of a queue (a sink must not keep the queue alive).
struct Reporter {
    id: u32,
    doorbell_index: u32,
    cwsr: u64,
    gpu_id: u32,
    events: Arc<crate::events::EventTable>,
    debug: Arc<crate::debugger::DebugState>,
}

impl Reporter {
    /// `event_interrupt_wq_v9` for an SQ message from one of this queue's waves.
    fn sq_interrupt(&self, m: SqMessage) {
        if m.privileged && self.queue_exception(m.m0) {
            return;
        }
        self.events.signal_from_device(m.m0 & 0xFF_FFFF);
    }

    /// `kfd_set_dbg_ev_from_interrupt`: whether a debugger or the runtime took it.
    fn queue_exception(&self, m0: u32) -> bool {
        let mask = u64::from((m0 & TRAP_CODE_MASK) >> TRAP_CODE_SHIFT);
        let doorbell = m0 & DOORBELL_ID_MASK;
        if doorbell != self.doorbell_index {
            // The driver looks for the process's queue with that doorbell on the GPU; a
            // handler only knows its own queue's, so another id is a handler's mistake.
            log::warn!(
                "kfd-emu: queue {}: a trap handler reported exceptions {mask:#x} for doorbell \
                 {doorbell}, not the queue's {}: no queue hears them",
                self.id,
                self.doorbell_index
            );
            return false;
        }
        match self.debug.route_wave_exception(self.gpu_id, self.id, mask) {
            Heard::Debugger => true,
            Heard::Runtime => {
                self.send_exception_to_runtime(mask);
                true
            }
            Heard::Nobody => false,
        }
    }

    /// `send_exception_work_handler`: the mask ORed into the word the CWSR header names, and
    /// the header's event set; each `get_user` that fails reads 0, as the kernel's does.
    fn send_exception_to_runtime(&self, mask: u64) {
        use crate::user_access::{get_u32, get_u64, put_u64};
        let header = self.cwsr;
        let payload_at = header + offset_of!(kfd_context_save_area_header, err_payload_addr) as u64;
        let event_at = header + offset_of!(kfd_context_save_area_header, err_event_id) as u64;
        let payload = get_u64(payload_at).unwrap_or(0);
        let current = get_u64(payload).unwrap_or(0);
        let stored = put_u64(payload, current | mask);
        let event = get_u32(event_at).unwrap_or(0);
        let set = self.events.set(event);
        if !stored || set.is_err() {
            log::warn!(
                "kfd-emu: queue {}: wave exceptions {mask:#x} lost: the context-save area header \
                 at {header:#x} names no writable error word ({payload:#x}) or no signal event \
                 ({event}) the process can reach; the dispatch never completes",
                self.id
            );
        } else {
            log::info!(
                "kfd-emu: queue {}: wave exceptions {mask:#x} reported to the runtime (word \
                 {payload:#x}, event {event})",
                self.id
            );
        }
    }
}
