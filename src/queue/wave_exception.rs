//! How a wave's trap or exception reaches kfdrt: a trap handler of kfdrt's own, and the
//! context-save area header KFD reads to report it.
//!
//! Without a second-level trap handler, the driver's first-level one halts a wave at an
//! exception and steps over an `s_trap`, reporting nothing: an illegal instruction hangs its
//! dispatch, and HIP's `abort()` is ignored. kfdrt therefore installs its own handler on every
//! GFX9 GPU (`SET_TRAP_HANDLER`, as ROCr does) once the runtime is enabled (KFD 1.13+). The
//! handler (`trap/gfx9.s`) sends KFD a queue exception (`s_sendmsg(MSG_INTERRUPT)`: the
//! queue's doorbell id and the exception mask) and halts the wave where it trapped. KFD then
//! reads the header at the start of the queue's context-save area with `get_user`
//! (`send_exception_work_handler`), ORs the mask into the 64-bit word the header names and sets
//! the header's event. So the area is in memory the CPU maps, and its header, one per XCC as
//! libhsakmt's `fill_cwsr_header` writes them, names the value of a signal of the queue's own,
//! whose event every wait on the queue watches: the wait returns [`Error::QueueError`] naming
//! the exceptions instead of hanging.
//!
//! Not covered: GPUs other than GFX9 (no handler is installed there: an exception hangs the
//! dispatch until the wait's timeout), a driver without the runtime ABI (KFD < 1.13, whose
//! interrupt handler does not route queue exceptions), and debuggers (the handler ignores
//! `llvm.debugtrap` and returns from host traps at once; it keeps no state for a debugger).

use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::memory::{AllocOptions, Buffer, MemoryKind};
use crate::signal::Signal;
use kfd_sys::bindings::{kfd_context_save_area_header, kfd_ioctl_set_trap_handler_args};
use kfd_sys::DriverExt;
use std::sync::Arc;

/// kfdrt's trap handler, assembled for gfx90a (and older GFX9) by `trap/build.sh`.
static GFX90A: &[u8] = include_bytes!("../../trap/gfx90a.bin");
/// The same for gfx940..gfx942 (the replay state is in `ttmp13` there).
static GFX940: &[u8] = include_bytes!("../../trap/gfx940.bin");

pub use crate::error::WaveExceptions;

/// Where KFD reports a queue's wave exceptions: the signal whose value it ORs them into and
/// whose event it sets.
pub(crate) struct ExceptionReport {
    pub(crate) signal: Signal,
}

impl ExceptionReport {
    pub(crate) fn new(gpu: &Gpu) -> Result<ExceptionReport> {
        Ok(ExceptionReport {
            signal: gpu.kfd().create_signal(0)?,
        })
    }

    /// The exceptions reported so far (one load).
    #[inline]
    pub(crate) fn raised(&self) -> WaveExceptions {
        WaveExceptions::from_bits_retain(self.signal.value() as u64)
    }

    /// Writes the header of each XCC's part of the context-save area `cwsr` (as libhsakmt's
    /// `fill_cwsr_header`): the error word and event, and where the debugger's area is.
    pub(crate) fn fill_headers(
        &self,
        cwsr: &Buffer,
        sizes: &crate::topology::CwsrSizes,
    ) -> Result<()> {
        let xccs = sizes.num_xcc.max(1);
        let per_xcc = u64::from(sizes.ctx_save_restore_size);
        for i in 0..xccs {
            let header = kfd_context_save_area_header {
                debug_offset: (xccs - i) * sizes.ctx_save_restore_size,
                debug_size: sizes.debug_memory_size * xccs,
                err_payload_addr: self.signal.value_atomic() as *const _ as u64,
                err_event_id: self.signal.event_id().unwrap_or(0),
                ..Default::default()
            };
            cwsr.write(u64::from(i) * per_xcc, header_bytes(&header))?;
        }
        Ok(())
    }
}

fn header_bytes(h: &kfd_context_save_area_header) -> &[u8] {
    // SAFETY: a `repr(C)` struct of integers with no padding (bindgen's layout test checks its
    // size is the sum of its fields), viewed as its bytes for as long as it is borrowed.
    unsafe {
        std::slice::from_raw_parts(
            (h as *const kfd_context_save_area_header).cast::<u8>(),
            std::mem::size_of::<kfd_context_save_area_header>(),
        )
    }
}

/// kfdrt's trap handler installed on one GPU: its code, kept while any queue may run it.
pub(crate) struct InstalledTrapHandler {
    _code: Buffer,
}

/// kfdrt's trap handler for a GPU of `gfx_target_version`, if it has one (GFX9).
pub(crate) fn handler_code(gfx_target_version: u32) -> Option<&'static [u8]> {
    match gfx_target_version {
        90000..=90399 => Some(GFX90A),
        90400..=90499 => Some(GFX940),
        _ => None,
    }
}

/// kfdrt's trap handler on `gpu`, installed if no live queue has it yet; `None` where kfdrt
/// has none (not GFX9, or the runtime is not enabled: see the module docs).
pub(crate) fn trap_handler(gpu: &Gpu) -> Result<Option<Arc<InstalledTrapHandler>>> {
    let shared = &gpu.kfd().shared;
    let Some(code) = handler_code(gpu.info().gfx_target_version) else {
        return Ok(None);
    };
    if !shared.dev.runtime_enabled {
        return Ok(None);
    }
    // One per GPU, which the queues share (the device refers to it weakly: the queues keep it
    // alive).
    shared
        .slots
        .get_or_make(gpu.index, || install_trap_handler(gpu, code))
        .map(Some)
}

fn install_trap_handler(gpu: &Gpu, code: &[u8]) -> Result<Arc<InstalledTrapHandler>> {
    let shared = &gpu.kfd().shared;
    // TBA is in 256-byte units; a page of its own also keeps the code off any other code's
    // instruction-cache lines.
    let buffer = gpu.alloc_with(
        4096,
        AllocOptions {
            executable: true,
            dedicated: true,
            alignment: 4096,
            ..AllocOptions::new(MemoryKind::GttCoherent)
        },
    )?;
    buffer.write(0, code)?;
    let mut args = kfd_ioctl_set_trap_handler_args {
        tba_addr: buffer.gpu_address(),
        tma_addr: 0,
        gpu_id: gpu.id(),
        ..Default::default()
    };
    // SAFETY: the driver keeps `tba_addr` for the GPU's waves to jump to: the code buffer,
    // which every queue that can run it keeps alive (and a new one is installed before a
    // queue runs once it is gone).
    unsafe { shared.dev.driver().kfd_ioctl_unchecked(&mut args) }.map_err(Error::ioctl(&args))?;
    log::debug!(
        "kfdrt: trap handler at {:#x} on GPU {:#x}",
        buffer.gpu_address(),
        gpu.id()
    );
    Ok(Arc::new(InstalledTrapHandler { _code: buffer }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_kfd_reports_them() {
        assert_eq!(
            (WaveExceptions::ABORT | WaveExceptions::ILLEGAL_INSTRUCTION).names(),
            "abort (s_trap 2) | illegal instruction"
        );
        assert_eq!(
            WaveExceptions::from_bits_retain(1 << 15).names(),
            "queue exceptions 0x8000"
        );
        // EC_QUEUE_WAVE_ABORT = 1, EC_QUEUE_WAVE_APERTURE_VIOLATION = 6: KFD_EC_MASK(ec).
        assert_eq!(WaveExceptions::ABORT.bits(), 1 << (1 - 1));
        assert_eq!(WaveExceptions::APERTURE_VIOLATION.bits(), 1 << (6 - 1));
    }

    #[test]
    fn the_handlers_are_whole_instructions_ending_in_a_return() {
        for code in [GFX90A, GFX940] {
            assert_eq!(code.len() % 4, 0);
            // The last instruction is s_rfe_b64 ttmp[0:1].
            assert_eq!(&code[code.len() - 4..], &0xBE80_1F6Cu32.to_le_bytes());
        }
    }
}
