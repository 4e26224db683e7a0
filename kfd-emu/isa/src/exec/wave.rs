//! One wave's architectural state: the scalar file (indexed as the SGPR field numbers them, so
//! VCC, M0 and EXEC are plain slots), SCC, the vector file (VGPRs and, on gfx90a/gfx942, the
//! AGPRs above `accum_offset` in the same file) and the PC.

use crate::decode::operand::{src, sreg};
use crate::decode::{Inst, Operand};
use crate::disasm::disassemble;
use crate::error::WaveError;
use crate::program::Region;
use crate::target::Target;
use std::sync::Arc;

/// Lanes of a wave64.
pub(crate) const LANES: usize = 64;
/// One 32-bit value per lane.
pub(crate) type Lanes = [u32; LANES];

/// Builds per-lane values with a plain loop (which the optimiser unrolls and vectorises more
/// readily than `std::array::from_fn`).
#[inline(always)]
pub(crate) fn per_lane<T: Copy + Default>(mut f: impl FnMut(usize) -> T) -> [T; LANES] {
    let mut out = [T::default(); LANES];
    for (l, o) in out.iter_mut().enumerate() {
        *o = f(l);
    }
    out
}

/// Packs one flag per lane into a lane mask (lane i to bit i), eight lanes per multiply
/// instead of a variable shift per lane.
#[inline]
pub(crate) fn pack_bits(flags: &[bool; LANES]) -> u64 {
    let mut out = 0u64;
    for (k, chunk) in flags.chunks_exact(8).enumerate() {
        let mut bytes = [0u8; 8];
        for (d, s) in bytes.iter_mut().zip(chunk) {
            *d = u8::from(*s);
        }
        // Byte i (0 or 1) times the constant lands in bit 56 + i; nothing carries.
        let gathered = (u64::from_le_bytes(bytes).wrapping_mul(0x0102_0408_1020_4080) >> 56) & 0xFF;
        out |= gathered << (8 * k);
    }
    out
}

/// Packs per-lane masks (bit 0 of each lane's value) into a lane mask: narrowed to bytes
/// first (which the optimiser vectorises), then eight lanes per multiply.
#[inline]
pub(crate) fn pack_masks(m: &Lanes) -> u64 {
    let mut flags = [false; LANES];
    for (f, x) in flags.iter_mut().zip(m.iter()) {
        *f = x & 1 != 0;
    }
    pack_bits(&flags)
}

/// Bit `l % 32` of a 32-bit mask half, per lane.
const LANE_BIT: [u32; LANES] = {
    let mut t = [0u32; LANES];
    let mut l = 0;
    while l < LANES {
        t[l] = 1 << (l % 32);
        l += 1;
    }
    t
};

/// All ones in each lane whose bit is set in `mask`, zero in the others: per-lane selects as
/// plain AND/OR, which the optimiser vectorises (a variable shift per lane it does not).
#[inline]
pub(crate) fn lane_masks(mask: u64) -> Lanes {
    let halves = [mask as u32, (mask >> 32) as u32];
    let mut out = [0u32; LANES];
    for (l, o) in out.iter_mut().enumerate() {
        let h = halves[l / 32];
        *o = if h & LANE_BIT[l] != 0 { u32::MAX } else { 0 };
    }
    out
}

/// `reg[l] = vals[l]` for the lanes in `mask`.
#[inline]
pub(crate) fn select_into(reg: &mut Lanes, vals: &Lanes, mask: u64) {
    if mask == u64::MAX {
        *reg = *vals;
        return;
    }
    let m = lane_masks(mask);
    for l in 0..LANES {
        reg[l] = (vals[l] & m[l]) | (reg[l] & !m[l]);
    }
}

/// Where a wave is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaveState {
    /// Runnable.
    Running,
    /// Waiting at `s_barrier`.
    Barrier,
    /// Ended (`s_endpgm`).
    Done,
}

/// A wave.
pub(crate) struct Wave {
    /// Scalar registers by SGPR-field number (s0..s101, FLAT_SCRATCH 102-103, XNACK_MASK
    /// 104-105, VCC 106-107, TTMP 108-123, M0 124, EXEC 126-127).
    pub s: [u32; sreg::SLOTS],
    /// Scalar condition code.
    pub scc: bool,
    /// The vector register file: VGPR r is `v[r]`, AGPR r is `v[accum_offset + r]`.
    pub v: Vec<Lanes>,
    /// First AGPR's index in `v`.
    pub accum_offset: usize,
    /// Program counter of the next instruction.
    pub pc: u64,
    /// The decoded region holding `pc` and its index there.
    pub region: Option<(Arc<Region>, usize)>,
    /// Scheduling state.
    pub state: WaveState,
    /// Hardware MODE register (float modes; read by `s_getreg`).
    pub mode: u32,
    /// Hardware TRAPSTS register.
    pub trapsts: u32,
    /// In the trap handler (STATUS.TRAP): its traps are not taken, `s_rfe_b64` leaves.
    pub trap_mode: bool,
    /// The trap handler set STATUS.HALT: the wave halts when it leaves the handler.
    pub halt_on_return: bool,
    /// An exception the last instruction raised (an address watch): the trap is taken before
    /// the next one.
    pub exception_pending: bool,
    /// This wave's index within its work-group.
    pub index: u32,
    /// Base address of the wave's scratch (0 without scratch).
    pub scratch_base: u64,
    /// Instructions executed.
    pub executed: u64,
    /// The target (decides disassembly in errors).
    pub target: Target,
    /// The current VALU instruction's scalar sources broadcast to every lane (by source).
    pub broadcast: [Lanes; 3],
    /// A wave32 wave (GFX11): lanes 32-63 never exist, and lane masks in SGPRs (VCC, compare
    /// results, carries) are one register, not a pair.
    pub wave32: bool,
    /// GFX11's FLAT_SCRATCH hardware register (the SPI sets it to the wave's scratch; it is
    /// not in the SGPR file there, where 102-105 are ordinary SGPRs).
    pub flat_scratch: u64,
}

impl Wave {
    /// A wave with `vgprs` vector registers, everything zero.
    pub fn new(target: Target, vgprs: usize, accum_offset: usize, index: u32) -> Wave {
        Wave {
            s: [0; sreg::SLOTS],
            scc: false,
            v: vec![[0; LANES]; vgprs],
            accum_offset,
            pc: 0,
            region: None,
            state: WaveState::Running,
            mode: 0,
            trapsts: 0,
            trap_mode: false,
            halt_on_return: false,
            exception_pending: false,
            index,
            scratch_base: 0,
            executed: 0,
            target,
            broadcast: [[0; LANES]; 3],
            wave32: false,
            flat_scratch: 0,
        }
    }

    /// Puts the wave back in [`Wave::new`]'s state for reuse by another work-group, keeping
    /// its vector file's allocation. Every field is named, so a new one cannot be forgotten.
    pub fn reset(&mut self, target: Target, vgprs: usize, accum_offset: usize, index: u32) {
        let Wave {
            s,
            scc,
            v,
            accum_offset: accum,
            pc,
            region,
            state,
            mode,
            trapsts,
            trap_mode,
            halt_on_return,
            exception_pending,
            index: idx,
            scratch_base,
            executed,
            target: t,
            // Only ever holds one value in every lane, and `V::src` checks that value before
            // using it: stale contents are never read.
            broadcast: _,
            wave32,
            flat_scratch,
        } = self;
        *s = [0; sreg::SLOTS];
        *scc = false;
        v.clear();
        v.resize(vgprs, [0; LANES]);
        *accum = accum_offset;
        *pc = 0;
        *region = None;
        *state = WaveState::Running;
        *mode = 0;
        *trapsts = 0;
        *trap_mode = false;
        *halt_on_return = false;
        *exception_pending = false;
        *idx = index;
        *scratch_base = 0;
        *executed = 0;
        *t = target;
        *wave32 = false;
        *flat_scratch = 0;
    }

    /// EXEC.
    #[inline]
    pub fn exec(&self) -> u64 {
        u64::from(self.s[sreg::EXEC_LO as usize]) | u64::from(self.s[sreg::EXEC_HI as usize]) << 32
    }

    /// Sets EXEC.
    #[inline]
    pub fn set_exec(&mut self, v: u64) {
        self.s[sreg::EXEC_LO as usize] = v as u32;
        self.s[sreg::EXEC_HI as usize] = (v >> 32) as u32;
    }

    /// VCC (VCC_LO alone in a wave32).
    #[inline]
    pub fn vcc(&self) -> u64 {
        self.lane_mask(sreg::VCC_LO)
    }

    /// A lane mask held in scalar registers from `r`: a pair, or one register in a wave32.
    #[inline]
    pub fn lane_mask(&self, r: u8) -> u64 {
        if self.wave32 {
            u64::from(self.s.get(usize::from(r)).copied().unwrap_or(0))
        } else {
            self.sgpr64(r)
        }
    }

    /// Writes a lane mask to scalar registers from `r` (one register in a wave32).
    #[inline]
    pub fn set_lane_mask(&mut self, r: u8, v: u64) {
        if self.wave32 {
            self.set_sgpr(r, v as u32);
        } else {
            self.set_sgpr64(r, v);
        }
    }

    /// The lanes a wave has: all 64, or the low 32 of a wave32.
    #[inline]
    pub fn lane_limit(&self) -> u64 {
        if self.wave32 {
            0xFFFF_FFFF
        } else {
            u64::MAX
        }
    }

    /// A 64-bit scalar register pair.
    #[inline]
    pub fn sgpr64(&self, r: u8) -> u64 {
        let lo = self.s.get(usize::from(r)).copied().unwrap_or(0);
        let hi = self.s.get(usize::from(r) + 1).copied().unwrap_or(0);
        u64::from(lo) | u64::from(hi) << 32
    }

    /// Writes a scalar register (writes beyond the file are dropped, as the hardware ignores
    /// them; `null` destinations decode to slots nothing reads).
    #[inline]
    pub fn set_sgpr(&mut self, r: u8, v: u32) {
        if let Some(d) = self.s.get_mut(usize::from(r)) {
            *d = v;
        }
    }

    /// Writes a scalar register pair.
    #[inline]
    pub fn set_sgpr64(&mut self, r: u8, v: u64) {
        self.set_sgpr(r, v as u32);
        self.set_sgpr(r.wrapping_add(1), (v >> 32) as u32);
    }

    /// An error naming this instruction.
    pub fn illegal(&self, inst: &Inst, reason: impl Into<String>) -> WaveError {
        WaveError::IllegalOperand {
            pc: self.pc,
            text: disassemble(self.target, inst),
            reason: reason.into(),
        }
    }

    /// The unimplemented-instruction error for `inst`.
    pub fn unimplemented(&self, inst: &Inst) -> WaveError {
        WaveError::Unimplemented {
            pc: self.pc,
            words: inst.word_slice().to_vec(),
            text: disassemble(self.target, inst),
        }
    }

    /// Index in `v` of a VGPR or AGPR operand's `k`-th register.
    #[inline]
    pub fn vindex(&self, op: Operand, k: usize) -> Option<usize> {
        match op {
            Operand::Vgpr(r, _) => Some(usize::from(r) + k),
            Operand::Agpr(r, _) => Some(self.accum_offset + usize::from(r) + k),
            _ => None,
        }
    }

    /// The `k`-th register of a vector operand.
    #[inline]
    pub fn vreg(&self, inst: &Inst, op: Operand, k: usize) -> Result<&Lanes, WaveError> {
        match self.vindex(op, k).and_then(|i| self.v.get(i)) {
            Some(r) => Ok(r),
            None => Err(self.illegal(inst, format!("{op:?} is outside the wave's registers"))),
        }
    }

    /// The `k`-th register of a vector operand, for writing.
    #[inline]
    pub fn vreg_mut(
        &mut self,
        inst: &Inst,
        op: Operand,
        k: usize,
    ) -> Result<&mut Lanes, WaveError> {
        let i = self.vindex(op, k);
        let n = self.v.len();
        match i.filter(|&i| i < n) {
            Some(i) => Ok(&mut self.v[i]),
            None => Err(self.illegal(inst, format!("{op:?} is outside the wave's registers"))),
        }
    }

    /// The 32-bit value of a scalar source (register, constant or special).
    #[inline]
    pub fn scalar32(&self, op: Operand, imm: u64, apertures: (u64, u64)) -> u32 {
        match op {
            Operand::Sgpr(r, _) => self.s.get(usize::from(r)).copied().unwrap_or(0),
            Operand::Int(_) | Operand::Float(_) | Operand::Literal(_) => imm as u32,
            Operand::Special(code) => self.special(code, apertures) as u32,
            _ => 0,
        }
    }

    /// The 64-bit value of a scalar source.
    #[inline]
    pub fn scalar64(&self, op: Operand, imm: u64, apertures: (u64, u64)) -> u64 {
        match op {
            Operand::Sgpr(r, _) => self.sgpr64(r),
            Operand::Int(_) | Operand::Float(_) | Operand::Literal(_) => imm,
            Operand::Special(code) => self.special(code, apertures),
            _ => 0,
        }
    }

    /// A special source's value (`apertures` = (shared base, private base)).
    pub fn special(&self, code: u16, apertures: (u64, u64)) -> u64 {
        match code {
            src::SHARED_BASE => apertures.0 >> 32,
            // The apertures are 4 GiB, so a limit's high half is its base's.
            src::SHARED_LIMIT => apertures.0 >> 32,
            src::PRIVATE_BASE | src::PRIVATE_LIMIT => apertures.1 >> 32,
            src::VCCZ => u64::from(self.vcc() == 0),
            src::EXECZ => u64::from(self.exec() == 0),
            src::SCC => u64::from(self.scc),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_masks_and_select_follow_the_mask() {
        for pattern in [0u64, u64::MAX, 0x8000_0000_0000_0001, 0x0123_4567_89AB_CDEF] {
            let m = lane_masks(pattern);
            let mut reg: Lanes = std::array::from_fn(|l| l as u32);
            let vals: Lanes = std::array::from_fn(|l| 1000 + l as u32);
            select_into(&mut reg, &vals, pattern);
            for l in 0..LANES {
                let on = pattern >> l & 1 != 0;
                assert_eq!(m[l], if on { u32::MAX } else { 0 });
                assert_eq!(reg[l], if on { 1000 + l as u32 } else { l as u32 });
            }
        }
    }

    #[test]
    fn a_reset_wave_is_a_new_wave() {
        let mut w = Wave::new(Target::Gfx90a, 16, 8, 3);
        w.s = [7; sreg::SLOTS];
        w.scc = true;
        for r in w.v.iter_mut() {
            *r = [9; LANES];
        }
        w.pc = 0x1000;
        w.state = WaveState::Done;
        w.mode = 1;
        w.trapsts = 2;
        w.trap_mode = true;
        w.halt_on_return = true;
        w.exception_pending = true;
        w.scratch_base = 5;
        w.executed = 6;
        w.broadcast = [[4; LANES]; 3];
        w.wave32 = true;
        w.flat_scratch = 8;
        w.reset(Target::Gfx1100, 4, 4, 1);
        let n = Wave::new(Target::Gfx1100, 4, 4, 1);
        assert_eq!(w.s, n.s);
        assert_eq!(w.v, n.v);
        assert_eq!(
            (w.scc, w.accum_offset, w.pc, w.state, w.mode, w.trapsts),
            (n.scc, n.accum_offset, n.pc, n.state, n.mode, n.trapsts)
        );
        assert_eq!(
            (w.trap_mode, w.halt_on_return, w.exception_pending, w.index),
            (n.trap_mode, n.halt_on_return, n.exception_pending, n.index)
        );
        assert_eq!(
            (
                w.scratch_base,
                w.executed,
                w.target,
                w.wave32,
                w.flat_scratch
            ),
            (
                n.scratch_base,
                n.executed,
                n.target,
                n.wave32,
                n.flat_scratch
            )
        );
        assert!(w.region.is_none());
        // A larger file after a smaller one: the new registers are zero too.
        w.v[0] = [1; LANES];
        w.reset(Target::Gfx90a, 32, 32, 0);
        assert!(w.v.iter().all(|r| r.iter().all(|&x| x == 0)));
        assert_eq!(w.v.len(), 32);
    }

    #[test]
    fn pack_bits_maps_lane_to_bit() {
        for pattern in [0u64, u64::MAX, 0x8000_0000_0000_0001, 0x0123_4567_89AB_CDEF] {
            let flags: [bool; LANES] = std::array::from_fn(|l| pattern >> l & 1 != 0);
            assert_eq!(pack_bits(&flags), pattern);
        }
    }
}
