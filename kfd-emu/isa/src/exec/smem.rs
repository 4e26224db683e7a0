//! Scalar memory: SMEM loads and stores into SGPRs, scalar-cache control, time counters.

use super::wave::Wave;
use super::{Ctx, Flow};
use crate::decode::memop::Atomic;
use crate::decode::{flags, traits, Class, Inst, Op, Operand};
use crate::error::WaveError;
use crate::memory::{AtomicOp, Memory};

fn sreg(op: Operand) -> (u8, u8) {
    match op {
        Operand::Sgpr(r, n) => (r, n),
        _ => (0, 0),
    }
}

/// The byte address of an SMEM access (the low two bits are ignored, as by the hardware), and
/// for buffer forms the resource's size in bytes.
fn address(w: &Wave, inst: &Inst, buffer: bool) -> (u64, Option<u64>) {
    let (sbase, _) = sreg(inst.saddr);
    let mut offset = 0u64;
    if inst.has(flags::IMM) {
        offset = offset.wrapping_add(inst.offset as i64 as u64);
        if inst.has(flags::SOE) {
            offset = offset.wrapping_add(u64::from(w.scalar32(inst.soffset, 0, (0, 0))));
        }
    } else {
        offset = u64::from(w.scalar32(inst.soffset, 0, (0, 0)));
    }
    if buffer {
        let base = w.sgpr64(sbase) & 0xFFFF_FFFF_FFFF;
        let records = u64::from(w.s.get(usize::from(sbase) + 2).copied().unwrap_or(0));
        (
            (base.wrapping_add(offset)) & !3,
            Some(records.saturating_sub(offset)),
        )
    } else {
        (w.sgpr64(sbase).wrapping_add(offset) & !3, None)
    }
}

pub(super) fn exec<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
) -> Result<Flow, WaveError> {
    let (d, n) = sreg(inst.dst);
    match inst.op {
        Op::SLoadDword
        | Op::SLoadDwordx2
        | Op::SLoadDwordx4
        | Op::SLoadDwordx8
        | Op::SLoadDwordx16
        | Op::SBufferLoadDword
        | Op::SBufferLoadDwordx2
        | Op::SBufferLoadDwordx4
        | Op::SBufferLoadDwordx8
        | Op::SBufferLoadDwordx16 => {
            let buffer = inst.is(traits::SCALAR_BUFFER);
            let (va, limit) = address(w, inst, buffer);
            let mut buf = [0u8; 64];
            let len = usize::from(n) * 4;
            let bytes = buf.get_mut(..len).unwrap_or(&mut []);
            // Buffer loads beyond the resource's records read zeros.
            let readable = limit.map_or(len as u64, |l| l.min(len as u64)) as usize;
            if let Some(part) = bytes.get_mut(..readable) {
                ctx.mem.read(va, part).map_err(|f| ctx.fault(w, f))?;
            }
            for (k, c) in buf.chunks_exact(4).take(usize::from(n)).enumerate() {
                w.set_sgpr(d + k as u8, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
            }
        }
        Op::SStoreDword
        | Op::SStoreDwordx2
        | Op::SStoreDwordx4
        | Op::SBufferStoreDword
        | Op::SBufferStoreDwordx2
        | Op::SBufferStoreDwordx4 => {
            let (va, limit) = address(w, inst, inst.is(traits::SCALAR_BUFFER));
            let mut buf = Vec::with_capacity(usize::from(n) * 4);
            for k in 0..n {
                let v = w.s.get(usize::from(d + k)).copied().unwrap_or(0);
                buf.extend_from_slice(&v.to_le_bytes());
            }
            // Buffer stores beyond the resource's records are dropped.
            let len = limit.map_or(buf.len() as u64, |l| l.min(buf.len() as u64)) as usize;
            ctx.mem
                .write(va, buf.get(..len).unwrap_or(&[]))
                .map_err(|f| ctx.fault(w, f))?;
        }
        _ if matches!(inst.class, Class::Atomic(_)) => {
            let Class::Atomic(Atomic { op, wide }) = inst.class else {
                return Err(w.unimplemented(inst));
            };
            let (va, _) = address(w, inst, inst.is(traits::SCALAR_BUFFER));
            let words = if wide { 2 } else { 1 };
            let get = |k: u8| u64::from(w.s.get(usize::from(d + k)).copied().unwrap_or(0));
            let src = if wide { get(0) | get(1) << 32 } else { get(0) };
            let cmp = if wide { get(2) | get(3) << 32 } else { get(1) };
            let cmp = if op == AtomicOp::CmpSwap { cmp } else { 0 };
            let old = if wide {
                ctx.mem.atomic64(va, op, src, cmp)
            } else {
                ctx.mem
                    .atomic32(va, op, src as u32, cmp as u32)
                    .map(u64::from)
            }
            .map_err(|f| ctx.fault(w, f))?;
            if inst.has(flags::GLC) {
                for k in 0..words {
                    w.set_sgpr(d + k, (old >> (32 * k)) as u32);
                }
            }
        }
        // The scalar cache is not modelled: every load reads memory.
        Op::SDcacheInv
        | Op::SGl1Inv
        | Op::SDcacheWb
        | Op::SDcacheInvVol
        | Op::SDcacheWbVol
        | Op::SDcacheDiscard
        | Op::SDcacheDiscardX2 => {}
        Op::SMemtime | Op::SMemrealtime => {
            // A clock that moves with the wave's work (deterministic).
            w.set_sgpr64(d, w.executed.wrapping_mul(4));
        }
        _ => return Err(w.unimplemented(inst)),
    }
    Ok(Flow::Next)
}
