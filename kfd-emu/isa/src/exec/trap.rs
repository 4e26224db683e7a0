//! Traps: where a wave goes at an `s_trap` or an exception, as [`TrapRouting`] says, and the
//! instructions a second-level trap handler uses to report and park (`s_sendmsg`,
//! `s_sethalt`, `s_rfe_b64`).
//!
//! On entry the first-level handler (Linux's `cwsr_trap_handler_gfx9.asm`) has left, for the
//! second-level one: the PC of the trapping instruction in `ttmp[0:1]` with the `s_trap` id in
//! `ttmp1[23:16]` (0 for an exception), the wave's STATUS in `ttmp12`, the exception in
//! `TRAPSTS`, and the second-level TMA in `ttmp[14:15]`. The handler returns with `s_rfe_b64`
//! (to the PC it passes; halted if it set STATUS.HALT, restoring STATUS from `ttmp12`), or
//! halts the wave with `s_sethalt 1`.

use super::wave::Wave;
use crate::dispatch::{DispatchSetup, SqMessage, TrapHandler, TrapRouting};
use crate::error::WaveError;

/// `TRAPSTS.ILLEGAL_INST`.
pub(crate) const TRAPSTS_ILLEGAL_INST: u32 = 1 << 11;
/// `s_sendmsg` message ids (the immediate's bits 3:0 on GFX9).
const MSG_INTERRUPT: u16 = 1;
const MSG_GET_DOORBELL: u16 = 10;
/// `ttmp0`, in the scalar register file.
const TTMP0: usize = 108;

/// What the GPU does with the error `e` a wave just hit: `Ok(pc)` to go on at `pc` (in the
/// trap handler, or past an `s_trap`), or the error that ends the run.
pub(super) fn take(w: &mut Wave, e: WaveError, setup: &DispatchSetup) -> Result<u64, WaveError> {
    let (pc, trap_id) = match e {
        WaveError::Trap { pc, id } => (pc, id),
        WaveError::Undecodable { pc, .. } => (pc, 0),
        e => return Err(e),
    };
    // A trap inside the handler (or a routing that reports) is not taken again.
    if w.trap_mode || setup.trap == TrapRouting::Report {
        return Err(e);
    }
    if trap_id == 0 {
        w.trapsts |= TRAPSTS_ILLEGAL_INST;
    }
    match setup.trap {
        TrapRouting::Handler(h) => Ok(enter(w, pc, trap_id, &h)),
        // No second-level handler: the first-level one steps over an s_trap and halts the wave
        // at an exception, reporting nothing.
        _ if trap_id != 0 => Ok(pc.wrapping_add(4)),
        _ => Err(WaveError::Halted {
            pc,
            trapsts: w.trapsts,
        }),
    }
}

/// Takes the exception the instruction before `pc` raised ([`Wave::exception_pending`]: an
/// address watch): the handler is entered with `pc` to return to, as for any exception the
/// hardware raises after an instruction; without a second-level handler the first-level one
/// halts the wave.
pub(super) fn exception(w: &mut Wave, pc: u64, setup: &DispatchSetup) -> Result<u64, WaveError> {
    w.exception_pending = false;
    if w.trap_mode {
        return Ok(pc);
    }
    match setup.trap {
        TrapRouting::Handler(h) => Ok(enter(w, pc, 0, &h)),
        _ => Err(WaveError::Halted {
            pc,
            trapsts: w.trapsts,
        }),
    }
}

/// `TRAPSTS.WAVE_BEGIN` and `WAVE_END` (9.4.3): the debugger's wave start and end traps.
const TRAPSTS_WAVE_BEGIN: u32 = 1 << 23;
const TRAPSTS_WAVE_END: u32 = 1 << 24;

/// A debugger's trap on wave start (`KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START`, which only 9.4.3
/// offers): a new wave enters the second-level handler before its first instruction, which
/// the saved PC names. Without a second-level handler the wave starts as usual.
pub(super) fn wave_start(w: &mut Wave, setup: &DispatchSetup) {
    use crate::wave_debug::WaveDebug;
    if setup.debug.trap_mask & WaveDebug::WAVE_START == 0 {
        return;
    }
    if let TrapRouting::Handler(h) = setup.trap {
        w.trapsts |= TRAPSTS_WAVE_BEGIN;
        w.pc = enter(w, w.pc, 0, &h);
    }
}

/// A debugger's trap on wave end: at its `s_endpgm` (`pc`) the wave enters the handler once,
/// with that PC saved; when the handler returns to it, the wave ends. `None`: it ends now.
pub(super) fn wave_end(w: &mut Wave, pc: u64, setup: &DispatchSetup) -> Option<u64> {
    use crate::wave_debug::WaveDebug;
    if setup.debug.trap_mask & WaveDebug::WAVE_END == 0 || w.trapsts & TRAPSTS_WAVE_END != 0 {
        return None;
    }
    match setup.trap {
        TrapRouting::Handler(h) if !w.trap_mode => {
            w.trapsts |= TRAPSTS_WAVE_END;
            Some(enter(w, pc, 0, &h))
        }
        _ => None,
    }
}

/// Enters the second-level handler for a trap at `pc`; returns the handler's address.
fn enter(w: &mut Wave, pc: u64, trap_id: u16, h: &TrapHandler) -> u64 {
    w.s[TTMP0] = pc as u32;
    w.s[TTMP0 + 1] = ((pc >> 32) as u32 & 0xFFFF) | u32::from(trap_id & 0xFF) << 16;
    w.s[TTMP0 + 12] = super::hwreg::status(w);
    w.s[TTMP0 + 14] = h.tma as u32;
    w.s[TTMP0 + 15] = (h.tma >> 32) as u32;
    w.trap_mode = true;
    w.region = None;
    h.tba
}

/// `s_sendmsg`: an interrupt goes to the dispatch's sink with M0 as its payload; the doorbell
/// request answers in `EXEC_LO` (bit 31 cleared when the answer is there).
pub(super) fn sendmsg(w: &mut Wave, simm: u16, setup: &DispatchSetup) {
    match simm & 0xF {
        MSG_INTERRUPT => {
            if let Some(sink) = &setup.messages {
                (sink.0)(SqMessage {
                    m0: w.s[124],
                    privileged: w.trap_mode,
                });
            }
        }
        MSG_GET_DOORBELL => {
            let id = match setup.trap {
                TrapRouting::Handler(h) => h.doorbell_id,
                _ => 0,
            };
            w.set_exec((w.exec() & !0xFFFF_FFFF) | u64::from(id & 0x3FF));
        }
        _ => {}
    }
}

/// `s_sethalt`: bit 0 set halts the wave for good (only a debugger resumes it).
pub(super) fn sethalt(w: &Wave, simm: u16) -> Result<(), WaveError> {
    if simm & 1 == 0 {
        return Ok(());
    }
    Err(WaveError::Halted {
        pc: w.pc,
        trapsts: w.trapsts,
    })
}

/// `s_rfe_b64`: leaves trap mode for the 48-bit address in the source, halted there if the
/// handler set STATUS.HALT.
pub(super) fn rfe(w: &mut Wave, target: u64) -> Result<u64, WaveError> {
    w.trap_mode = false;
    let pc = target & 0xFFFF_FFFF_FFFF;
    if std::mem::take(&mut w.halt_on_return) {
        return Err(WaveError::Halted {
            pc,
            trapsts: w.trapsts,
        });
    }
    Ok(pc)
}
