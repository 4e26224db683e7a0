//! Hardware registers as `s_getreg_b32`/`s_setreg_b32` see them (MODE, STATUS, TRAPSTS,
//! HW_ID, GPR_ALLOC, LDS_ALLOC, SH_MEM_BASES).

use super::wave::Wave;
use super::Ctx;
use crate::memory::Memory;

/// `s_getreg_b32`: a field of a hardware register.
pub(super) fn getreg<M: Memory + ?Sized>(w: &Wave, simm: u16, ctx: &Ctx<'_, M>) -> u32 {
    let id = simm & 0x3F;
    let offset = u32::from((simm >> 6) & 0x1F);
    let size = u32::from((simm >> 11) & 0x1F) + 1;
    let value = match id {
        1 => w.mode,
        // STATUS: EXECZ (bit 9), VCCZ (10), SCC (0).
        2 => status(w),
        3 => w.trapsts,
        // HW_ID: wave id in bits 3:0.
        4 => w.index & 0xF,
        5 => (((w.v.len() / 8).saturating_sub(1) as u32) & 0x3F) << 8,
        6 => ((ctx.lds.len() / 512) as u32 & 0x1FF) << 12,
        // HW_REG_XCC_ID (gfx94x): XCC_ID in bits 3:0.
        20 if w.target.gfx940_cache_bits() => ctx.xcc & 0xF,
        // GFX10+ FLAT_SCR_LO/HI: the hardware FLAT_SCRATCH.
        20 if w.target.hardware_flat_scratch() => w.flat_scratch as u32,
        21 if w.target.hardware_flat_scratch() => (w.flat_scratch >> 32) as u32,
        // GFX10+ HW_ID1: wave id in bits 4:0.
        23 if w.target.hardware_flat_scratch() => w.index & 0x1F,
        15 => {
            let (shared, private) = ctx.apertures;
            ((private >> 48) as u32 & 0xFFFF) | ((shared >> 48) as u32 & 0xFFFF) << 16
        }
        _ => 0,
    };
    let v = value >> offset;
    if size >= 32 {
        v
    } else {
        v & ((1 << size) - 1)
    }
}

/// STATUS.HALT.
pub(super) const STATUS_HALT: u32 = 1 << 13;

/// STATUS as `s_getreg_b32` reads it: SCC (bit 0), EXECZ (9), VCCZ (10).
pub(super) fn status(w: &Wave) -> u32 {
    u32::from(w.scc) | u32::from(w.exec() == 0) << 9 | u32::from(w.vcc() == 0) << 10
}

/// `s_setreg`: a kernel writes MODE (and TRAPSTS); the trap handler also writes STATUS (its
/// SCC, and HALT, which halts the wave once it leaves the handler). Other writes are dropped.
pub(super) fn setreg(w: &mut Wave, simm: u16, v: u32) {
    let id = simm & 0x3F;
    let offset = u32::from((simm >> 6) & 0x1F);
    let size = u32::from((simm >> 11) & 0x1F) + 1;
    let mask = if size >= 32 {
        u32::MAX
    } else {
        (1 << size) - 1
    } << offset;
    if id == 1 {
        w.mode = (w.mode & !mask) | ((v << offset) & mask);
    } else if id == 3 {
        w.trapsts = (w.trapsts & !mask) | ((v << offset) & mask);
    } else if (id == 20 || id == 21) && w.target.hardware_flat_scratch() {
        let shift = if id == 20 { 0 } else { 32 };
        let old = (w.flat_scratch >> shift) as u32;
        let new = (old & !mask) | ((v << offset) & mask);
        w.flat_scratch = (w.flat_scratch & !(0xFFFF_FFFF << shift)) | u64::from(new) << shift;
    } else if id == 2 && w.trap_mode {
        let s = (status(w) & !mask) | ((v << offset) & mask);
        w.scc = s & 1 != 0;
        w.halt_on_return = s & STATUS_HALT != 0;
    }
}
