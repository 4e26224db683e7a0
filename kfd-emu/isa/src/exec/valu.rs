//! The vector ALU: runs an instruction through the family that has it (`valu_ops`: 32-bit
//! integer and float arithmetic and compares; `valu_wide`: f64, 64-bit and conversions;
//! `valu_misc`: 16-bit, packed and mixed-precision operations; `valu_gfx11`: what GFX11 adds).
//! The families use the operand and result machinery of `valu_operands` and the 16-bit helpers
//! of `valu_half`, never each other.

use super::valu_operands::V;
use super::wave::{Wave, LANES};
use super::{valu_fast, valu_gfx11, valu_misc, valu_ops, valu_wide};
use crate::decode::{Inst, Operand};
use crate::error::WaveError;

/// Runs one VALU instruction of `w` (`ap`: the shared and private aperture bases).
pub(super) fn exec(w: &mut Wave, inst: &Inst, ap: (u64, u64)) -> Result<(), WaveError> {
    if valu_fast::try_exec(w, inst, ap) {
        return Ok(());
    }
    general(w, inst, ap)
}

/// Runs one VALU instruction the general way (the reference the fast paths are tested
/// against).
pub(super) fn general(w: &mut Wave, inst: &Inst, ap: (u64, u64)) -> Result<(), WaveError> {
    // Scalar sources broadcast to every lane up front, into the wave's buffers (handing out
    // references to them copies no lanes; `V::src` checks the value is still current).
    for (k, &op) in inst.src.iter().enumerate() {
        if !matches!(op, Operand::Vgpr(..) | Operand::Agpr(..) | Operand::None) {
            let x = w.scalar32(op, inst.imm[k], ap);
            w.broadcast[k] = [x; LANES];
        }
    }
    // Each family hands what is not its own to the next (the closures inline into one chain of
    // matches, so a family costs its match and nothing more).
    valu_ops::exec(&mut V { w, i: inst, ap }, |v| {
        valu_wide::exec(v, |v| {
            valu_misc::exec(v, |v| valu_gfx11::exec(v, |v| Err(v.w.unimplemented(v.i))))
        })
    })
}
