//! Scalar ALU and program control: SOP1, SOP2, SOPK, SOPC, SOPP.

use super::hwreg::{getreg, setreg};
use super::wave::Wave;
use super::{Ctx, Flow};
use crate::decode::operand::sreg;
use crate::decode::{Inst, Op, Operand};
use crate::error::WaveError;
use crate::memory::Memory;

fn dst_reg(inst: &Inst) -> u8 {
    match inst.dst {
        Operand::Sgpr(r, _) => r,
        _ => 255,
    }
}

/// Bit-field extract: S1 holds offset (bits 4:0 or 5:0) and width (bits 22:16).
fn bfe64(v: u64, ctl: u32, bits: u32, signed: bool) -> u64 {
    let off = ctl & (bits - 1);
    let width = (ctl >> 16) & 0x7F;
    if width == 0 {
        return 0;
    }
    let shifted = v >> off;
    if width >= bits {
        return shifted;
    }
    let mask = (1u64 << width) - 1;
    let x = shifted & mask;
    if signed && (x >> (width - 1)) & 1 != 0 {
        (x | !mask) & if bits == 32 { 0xFFFF_FFFF } else { u64::MAX }
    } else {
        x
    }
}

/// Index of the first (lowest) bit equal to `one`, or -1.
fn find_first(v: u64, bits: u32, one: bool) -> u32 {
    let x = if one { v } else { !v };
    let x = if bits == 32 { x & 0xFFFF_FFFF } else { x };
    if x == 0 {
        u32::MAX
    } else {
        x.trailing_zeros()
    }
}

/// Index from the MSB of the first set bit, or -1.
fn find_last_one(v: u64, bits: u32) -> u32 {
    let x = if bits == 32 { v & 0xFFFF_FFFF } else { v };
    if x == 0 {
        u32::MAX
    } else {
        x.leading_zeros() - (64 - bits)
    }
}

/// Index from the MSB of the first bit that differs from the sign bit, or -1.
fn find_last_signed(v: u64, bits: u32) -> u32 {
    let x = if bits == 32 { v & 0xFFFF_FFFF } else { v };
    let negative = (x >> (bits - 1)) & 1 != 0;
    let y = if negative { !x } else { x };
    find_last_one(y, bits)
}

/// Whole-quad mode: every quad with any bit set becomes all ones.
fn wqm(v: u64) -> u64 {
    let mut out = 0;
    for q in 0..16 {
        if (v >> (4 * q)) & 0xF != 0 {
            out |= 0xF << (4 * q);
        }
    }
    out
}

fn quadmask(v: u64) -> u64 {
    (0..16).fold(0, |acc, q| acc | u64::from((v >> (4 * q)) & 0xF != 0) << q)
}

fn branch(w: &Wave, inst: &Inst) -> u64 {
    w.pc.wrapping_add(4)
        .wrapping_add((i64::from(inst.offset as i16) * 4) as u64)
}

pub(super) fn exec<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
) -> Result<Flow, WaveError> {
    let ap = ctx.apertures;
    let a = w.scalar32(inst.src[0], inst.imm[0], ap);
    let b = w.scalar32(inst.src[1], inst.imm[1], ap);
    let a64 = w.scalar64(inst.src[0], inst.imm[0], ap);
    let b64 = w.scalar64(inst.src[1], inst.imm[1], ap);
    let d = dst_reg(inst);
    let simm = inst.offset as i16;
    // Most ops: a 32-bit result and maybe SCC.
    let mut r32: Option<u32> = None;
    let mut r64: Option<u64> = None;
    let mut scc: Option<bool> = None;
    match inst.op {
        // SOP2
        Op::SAddU32 => {
            let (v, c) = a.overflowing_add(b);
            (r32, scc) = (Some(v), Some(c));
        }
        Op::SSubU32 => {
            let (v, c) = a.overflowing_sub(b);
            (r32, scc) = (Some(v), Some(c));
        }
        Op::SAddI32 => {
            let (v, o) = (a as i32).overflowing_add(b as i32);
            (r32, scc) = (Some(v as u32), Some(o));
        }
        Op::SSubI32 => {
            let (v, o) = (a as i32).overflowing_sub(b as i32);
            (r32, scc) = (Some(v as u32), Some(o));
        }
        Op::SAddcU32 => {
            let v = u64::from(a) + u64::from(b) + u64::from(w.scc);
            (r32, scc) = (Some(v as u32), Some(v >> 32 != 0));
        }
        Op::SSubbU32 => {
            let v = u64::from(a)
                .wrapping_sub(u64::from(b))
                .wrapping_sub(u64::from(w.scc));
            (r32, scc) = (Some(v as u32), Some(v >> 32 != 0));
        }
        Op::SMinI32 => {
            (r32, scc) = (
                Some((a as i32).min(b as i32) as u32),
                Some((a as i32) < (b as i32)),
            )
        }
        Op::SMinU32 => (r32, scc) = (Some(a.min(b)), Some(a < b)),
        Op::SMaxI32 => {
            (r32, scc) = (
                Some((a as i32).max(b as i32) as u32),
                Some((a as i32) > (b as i32)),
            )
        }
        Op::SMaxU32 => (r32, scc) = (Some(a.max(b)), Some(a > b)),
        Op::SCselectB32 => r32 = Some(if w.scc { a } else { b }),
        Op::SCselectB64 => r64 = Some(if w.scc { a64 } else { b64 }),
        Op::SAndB32 => r32 = Some(a & b),
        Op::SOrB32 => r32 = Some(a | b),
        Op::SXorB32 => r32 = Some(a ^ b),
        Op::SAndn2B32 => r32 = Some(a & !b),
        Op::SOrn2B32 => r32 = Some(a | !b),
        Op::SNandB32 => r32 = Some(!(a & b)),
        Op::SNorB32 => r32 = Some(!(a | b)),
        Op::SXnorB32 => r32 = Some(!(a ^ b)),
        Op::SAndB64 => r64 = Some(a64 & b64),
        Op::SOrB64 => r64 = Some(a64 | b64),
        Op::SXorB64 => r64 = Some(a64 ^ b64),
        Op::SAndn2B64 => r64 = Some(a64 & !b64),
        Op::SOrn2B64 => r64 = Some(a64 | !b64),
        Op::SNandB64 => r64 = Some(!(a64 & b64)),
        Op::SNorB64 => r64 = Some(!(a64 | b64)),
        Op::SXnorB64 => r64 = Some(!(a64 ^ b64)),
        Op::SLshlB32 => r32 = Some(a << (b & 31)),
        Op::SLshrB32 => r32 = Some(a >> (b & 31)),
        Op::SAshrI32 => r32 = Some(((a as i32) >> (b & 31)) as u32),
        Op::SLshlB64 => r64 = Some(a64 << (b & 63)),
        Op::SLshrB64 => r64 = Some(a64 >> (b & 63)),
        Op::SAshrI64 => r64 = Some(((a64 as i64) >> (b & 63)) as u64),
        Op::SBfmB32 => w.set_sgpr(d, (((1u64 << (a & 31)) - 1) as u32) << (b & 31)),
        Op::SBfmB64 => {
            let width = a & 63;
            let mask = if width == 0 {
                0
            } else {
                u64::MAX >> (64 - width)
            };
            w.set_sgpr64(d, mask << (b & 63));
        }
        Op::SMulI32 => w.set_sgpr(d, a.wrapping_mul(b)),
        Op::SMulHiU32 => w.set_sgpr(d, ((u64::from(a) * u64::from(b)) >> 32) as u32),
        Op::SMulHiI32 => w.set_sgpr(
            d,
            ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32,
        ),
        Op::SBfeU32 => r32 = Some(bfe64(u64::from(a), b, 32, false) as u32),
        Op::SBfeI32 => r32 = Some(bfe64(u64::from(a), b, 32, true) as u32),
        Op::SBfeU64 => r64 = Some(bfe64(a64, b, 64, false)),
        Op::SBfeI64 => r64 = Some(bfe64(a64, b, 64, true)),
        Op::SAbsdiffI32 => {
            r32 = Some((i64::from(a as i32) - i64::from(b as i32)).unsigned_abs() as u32)
        }
        Op::SLshl1AddU32 | Op::SLshl2AddU32 | Op::SLshl3AddU32 | Op::SLshl4AddU32 => {
            let n = match inst.op {
                Op::SLshl1AddU32 => 1,
                Op::SLshl2AddU32 => 2,
                Op::SLshl3AddU32 => 3,
                _ => 4,
            };
            let v = (u64::from(a) << n) + u64::from(b);
            (r32, scc) = (Some(v as u32), Some(v >> 32 != 0));
        }
        Op::SPackLlB32B16 => w.set_sgpr(d, (a & 0xFFFF) | b << 16),
        Op::SPackLhB32B16 => w.set_sgpr(d, (a & 0xFFFF) | (b & 0xFFFF_0000)),
        Op::SPackHhB32B16 => w.set_sgpr(d, a >> 16 | (b & 0xFFFF_0000)),
        Op::SPackHlB32B16 => w.set_sgpr(d, a >> 16 | b << 16),
        // SOPK
        Op::SMovkI32 => w.set_sgpr(d, simm as i32 as u32),
        Op::SCmovkI32 => {
            if w.scc {
                w.set_sgpr(d, simm as i32 as u32)
            }
        }
        Op::SCmpkEqI32
        | Op::SCmpkLgI32
        | Op::SCmpkGtI32
        | Op::SCmpkGeI32
        | Op::SCmpkLtI32
        | Op::SCmpkLeI32 => {
            let x = w.s.get(usize::from(d)).copied().unwrap_or(0) as i32;
            let k = i32::from(simm);
            w.scc = match inst.op {
                Op::SCmpkEqI32 => x == k,
                Op::SCmpkLgI32 => x != k,
                Op::SCmpkGtI32 => x > k,
                Op::SCmpkGeI32 => x >= k,
                Op::SCmpkLtI32 => x < k,
                _ => x <= k,
            };
        }
        Op::SCmpkEqU32
        | Op::SCmpkLgU32
        | Op::SCmpkGtU32
        | Op::SCmpkGeU32
        | Op::SCmpkLtU32
        | Op::SCmpkLeU32 => {
            let x = w.s.get(usize::from(d)).copied().unwrap_or(0);
            let k = u32::from(simm as u16);
            w.scc = match inst.op {
                Op::SCmpkEqU32 => x == k,
                Op::SCmpkLgU32 => x != k,
                Op::SCmpkGtU32 => x > k,
                Op::SCmpkGeU32 => x >= k,
                Op::SCmpkLtU32 => x < k,
                _ => x <= k,
            };
        }
        // Read-modify-writes of their destination: GFX11's `null` there reads 0 and keeps it.
        Op::SAddkI32 => {
            let x = w.s.get(usize::from(d)).copied().unwrap_or(0) as i32;
            let (v, o) = x.overflowing_add(i32::from(simm));
            if d != sreg::NULL {
                w.set_sgpr(d, v as u32);
            }
            w.scc = o;
        }
        Op::SMulkI32 => {
            let x = w.s.get(usize::from(d)).copied().unwrap_or(0) as i32;
            if d != sreg::NULL {
                w.set_sgpr(d, x.wrapping_mul(i32::from(simm)) as u32);
            }
        }
        Op::SGetregB32 => {
            let v = getreg(w, inst.offset as u16, ctx);
            w.set_sgpr(d, v);
        }
        Op::SSetregB32 | Op::SSetregImm32B32 => {
            let v = if inst.op == Op::SSetregB32 {
                w.s.get(usize::from(d)).copied().unwrap_or(0)
            } else {
                inst.imm[0] as u32
            };
            setreg(w, inst.offset as u16, v);
        }
        Op::SCallB64 => {
            w.set_sgpr64(d, w.pc + 4);
            return Ok(Flow::Jump(branch(w, inst)));
        }
        // SOP1
        Op::SMovB32 => w.set_sgpr(d, a),
        Op::SMovB64 => w.set_sgpr64(d, a64),
        Op::SCmovB32 => {
            if w.scc {
                w.set_sgpr(d, a)
            }
        }
        Op::SCmovB64 => {
            if w.scc {
                w.set_sgpr64(d, a64)
            }
        }
        Op::SNotB32 => r32 = Some(!a),
        Op::SNotB64 => r64 = Some(!a64),
        Op::SWqmB32 => r32 = Some(wqm(u64::from(a)) as u32),
        Op::SWqmB64 => r64 = Some(wqm(a64)),
        Op::SBrevB32 => w.set_sgpr(d, a.reverse_bits()),
        Op::SBrevB64 => w.set_sgpr64(d, a64.reverse_bits()),
        Op::SBcnt0I32B32 => r32 = Some(a.count_zeros()),
        Op::SBcnt0I32B64 => r32 = Some(a64.count_zeros()),
        Op::SBcnt1I32B32 => r32 = Some(a.count_ones()),
        Op::SBcnt1I32B64 => r32 = Some(a64.count_ones()),
        Op::SFf0I32B32 => w.set_sgpr(d, find_first(u64::from(a), 32, false)),
        Op::SFf0I32B64 => w.set_sgpr(d, find_first(a64, 64, false)),
        Op::SFf1I32B32 => w.set_sgpr(d, find_first(u64::from(a), 32, true)),
        Op::SFf1I32B64 => w.set_sgpr(d, find_first(a64, 64, true)),
        Op::SFlbitI32B32 => w.set_sgpr(d, find_last_one(u64::from(a), 32)),
        Op::SFlbitI32B64 => w.set_sgpr(d, find_last_one(a64, 64)),
        Op::SFlbitI32 => w.set_sgpr(d, find_last_signed(u64::from(a), 32)),
        Op::SFlbitI32I64 => w.set_sgpr(d, find_last_signed(a64, 64)),
        Op::SSextI32I8 => w.set_sgpr(d, a as u8 as i8 as i32 as u32),
        Op::SSextI32I16 => w.set_sgpr(d, a as u16 as i16 as i32 as u32),
        Op::SBitset0B32 => {
            let v = w.s.get(usize::from(d)).copied().unwrap_or(0) & !(1 << (a & 31));
            w.set_sgpr(d, v);
        }
        Op::SBitset1B32 => {
            let v = w.s.get(usize::from(d)).copied().unwrap_or(0) | 1 << (a & 31);
            w.set_sgpr(d, v);
        }
        Op::SBitset0B64 => {
            let v = w.sgpr64(d) & !(1 << (a & 63));
            w.set_sgpr64(d, v);
        }
        Op::SBitset1B64 => {
            let v = w.sgpr64(d) | 1 << (a & 63);
            w.set_sgpr64(d, v);
        }
        Op::SGetpcB64 => w.set_sgpr64(d, w.pc + 4),
        Op::SSetpcB64 => return Ok(Flow::Jump(a64)),
        Op::SRfeB64 => return Ok(Flow::Jump(super::trap::rfe(w, a64)?)),
        Op::SSwappcB64 => {
            w.set_sgpr64(d, w.pc + 4);
            return Ok(Flow::Jump(a64));
        }
        Op::SAndSaveexecB64
        | Op::SOrSaveexecB64
        | Op::SXorSaveexecB64
        | Op::SAndn2SaveexecB64
        | Op::SOrn2SaveexecB64
        | Op::SNandSaveexecB64
        | Op::SNorSaveexecB64
        | Op::SXnorSaveexecB64
        | Op::SAndn1SaveexecB64
        | Op::SOrn1SaveexecB64
        | Op::SAndn1WrexecB64
        | Op::SAndn2WrexecB64 => {
            let e = w.exec();
            let (new, wrexec) = saveexec(inst.op, a64, e);
            w.set_sgpr64(d, if wrexec { new } else { e });
            w.set_exec(new);
            w.scc = new != 0;
        }
        // GFX10+'s wave32 forms: EXEC_LO only.
        Op::SAndSaveexecB32
        | Op::SOrSaveexecB32
        | Op::SXorSaveexecB32
        | Op::SAndNot1SaveexecB32
        | Op::SOrNot1SaveexecB32
        | Op::SNandSaveexecB32
        | Op::SNorSaveexecB32
        | Op::SXnorSaveexecB32
        | Op::SAndNot0SaveexecB32
        | Op::SOrNot0SaveexecB32
        | Op::SAndNot0WrexecB32
        | Op::SAndNot1WrexecB32 => {
            let e = w.s[sreg::EXEC_LO as usize];
            let (new, wrexec) = saveexec(inst.op, u64::from(a), u64::from(e));
            let new = new as u32;
            w.set_sgpr(d, if wrexec { new } else { e });
            w.s[sreg::EXEC_LO as usize] = new;
            w.scc = new != 0;
        }
        Op::SQuadmaskB32 => r32 = Some(quadmask(u64::from(a)) as u32),
        Op::SQuadmaskB64 => r64 = Some(quadmask(a64)),
        Op::SMovrelsB32 | Op::SMovrelsB64 | Op::SMovreldB32 | Op::SMovreldB64 => {
            movrel(w, inst)?;
        }
        Op::SAbsI32 => r32 = Some((a as i32).unsigned_abs()),
        Op::SBitreplicateB64B32 => {
            let v = (0..32).fold(0u64, |acc, i| {
                acc | (u64::from((a >> i) & 1) * (3 << (2 * i)))
            });
            w.set_sgpr64(d, v);
        }
        // SOPC
        Op::SCmpEqI32 | Op::SCmpEqU32 => w.scc = a == b,
        Op::SCmpLgI32 | Op::SCmpLgU32 => w.scc = a != b,
        Op::SCmpGtI32 => w.scc = (a as i32) > (b as i32),
        Op::SCmpGeI32 => w.scc = (a as i32) >= (b as i32),
        Op::SCmpLtI32 => w.scc = (a as i32) < (b as i32),
        Op::SCmpLeI32 => w.scc = (a as i32) <= (b as i32),
        Op::SCmpGtU32 => w.scc = a > b,
        Op::SCmpGeU32 => w.scc = a >= b,
        Op::SCmpLtU32 => w.scc = a < b,
        Op::SCmpLeU32 => w.scc = a <= b,
        Op::SCmpEqU64 => w.scc = a64 == b64,
        Op::SCmpLgU64 => w.scc = a64 != b64,
        Op::SBitcmp0B32 => w.scc = (a >> (b & 31)) & 1 == 0,
        Op::SBitcmp1B32 => w.scc = (a >> (b & 31)) & 1 == 1,
        Op::SBitcmp0B64 => w.scc = (a64 >> (b & 63)) & 1 == 0,
        Op::SBitcmp1B64 => w.scc = (a64 >> (b & 63)) & 1 == 1,
        Op::SSetvskip => {}
        // SOPP
        Op::SNop
        | Op::SWaitcnt
        | Op::SSetprio
        | Op::SSleep
        | Op::SIcacheInv
        | Op::SSetkill
        | Op::SWakeup
        | Op::SIncperflevel
        | Op::SDecperflevel
        | Op::STtracedata
        // GFX11's scheduling hints, split waits and mode shortcuts: the interpreter runs in
        // order, waits for nothing and keeps IEEE modes (see the crate docs).
        | Op::SClause
        | Op::SDelayAlu
        | Op::SWaitcntDepctr
        | Op::SWaitcntVscnt
        | Op::SWaitcntVmcnt
        | Op::SWaitcntExpcnt
        | Op::SWaitcntLgkmcnt
        | Op::SSetInstPrefetchDistance
        | Op::SWaitIdle
        | Op::SWaitEvent
        | Op::SRoundMode
        | Op::SDenormMode
        | Op::STtracedataImm => {}
        Op::SSethalt => super::trap::sethalt(w, inst.offset as u16)?,
        Op::SSendmsg => super::trap::sendmsg(w, inst.offset as u16, ctx.setup),
        Op::SSendmsghalt => {
            super::trap::sendmsg(w, inst.offset as u16, ctx.setup);
            super::trap::sethalt(w, 1)?;
        }
        Op::SEndpgm | Op::SEndpgmSaved | Op::SEndpgmOrderedPsDone => return Ok(Flow::End),
        Op::SBarrier => return Ok(Flow::Barrier),
        Op::SBranch => return Ok(Flow::Jump(branch(w, inst))),
        Op::SCbranchScc0
        | Op::SCbranchScc1
        | Op::SCbranchVccz
        | Op::SCbranchVccnz
        | Op::SCbranchExecz
        | Op::SCbranchExecnz
        | Op::SCbranchCdbgsys
        | Op::SCbranchCdbguser
        | Op::SCbranchCdbgsysOrUser
        | Op::SCbranchCdbgsysAndUser => {
            let taken = match inst.op {
                Op::SCbranchScc0 => !w.scc,
                Op::SCbranchScc1 => w.scc,
                Op::SCbranchVccz => w.vcc() == 0,
                Op::SCbranchVccnz => w.vcc() != 0,
                Op::SCbranchExecz => w.exec() == 0,
                Op::SCbranchExecnz => w.exec() != 0,
                // No debugger is attached.
                _ => false,
            };
            if taken {
                return Ok(Flow::Jump(branch(w, inst)));
            }
        }
        Op::STrap => {
            return Err(WaveError::Trap {
                pc: w.pc,
                id: inst.offset as u16 & 0xFF,
            })
        }
        _ => return Err(w.unimplemented(inst)),
    }
    if let Some(v) = r32 {
        w.set_sgpr(d, v);
        w.scc = scc.unwrap_or(v != 0);
    } else if let Some(v) = r64 {
        w.set_sgpr64(d, v);
        w.scc = scc.unwrap_or(v != 0);
    }
    Ok(Flow::Next)
}

/// `s_movrels`/`s_movreld`: M0-relative SGPR moves.
fn movrel(w: &mut Wave, inst: &Inst) -> Result<(), WaveError> {
    let m0 = w.s[124] as usize;
    let wide = matches!(inst.op, Op::SMovrelsB64 | Op::SMovreldB64);
    let n = if wide { 2 } else { 1 };
    let (src, dst) = match (inst.op, inst.src[0], inst.dst) {
        (Op::SMovrelsB32 | Op::SMovrelsB64, Operand::Sgpr(s, _), Operand::Sgpr(d, _)) => {
            (usize::from(s) + m0, usize::from(d))
        }
        (_, Operand::Sgpr(s, _), Operand::Sgpr(d, _)) => (usize::from(s), usize::from(d) + m0),
        _ => return Err(w.illegal(inst, "M0-relative move needs SGPR operands")),
    };
    for k in 0..n {
        let v = match w.s.get(src + k).filter(|_| src + k < 102) {
            Some(v) => *v,
            None => return Err(w.illegal(inst, "M0-relative SGPR out of range")),
        };
        if dst + k >= 102 {
            return Err(w.illegal(inst, "M0-relative SGPR out of range"));
        }
        w.s[dst + k] = v;
    }
    Ok(())
}

/// The new EXEC of a save-exec operation (either width) from its source `a` and the old EXEC
/// `e`, and whether it writes the new value (`wrexec`) rather than the old one to its
/// destination.
fn saveexec(op: Op, a: u64, e: u64) -> (u64, bool) {
    let new = match op {
        Op::SAndSaveexecB64 | Op::SAndSaveexecB32 => a & e,
        Op::SOrSaveexecB64 | Op::SOrSaveexecB32 => a | e,
        Op::SXorSaveexecB64 | Op::SXorSaveexecB32 => a ^ e,
        Op::SAndn2SaveexecB64
        | Op::SAndn2WrexecB64
        | Op::SAndNot1SaveexecB32
        | Op::SAndNot1WrexecB32 => a & !e,
        Op::SOrn2SaveexecB64 | Op::SOrNot1SaveexecB32 => a | !e,
        Op::SNandSaveexecB64 | Op::SNandSaveexecB32 => !(a & e),
        Op::SNorSaveexecB64 | Op::SNorSaveexecB32 => !(a | e),
        Op::SXnorSaveexecB64 | Op::SXnorSaveexecB32 => !(a ^ e),
        Op::SAndn1SaveexecB64
        | Op::SAndn1WrexecB64
        | Op::SAndNot0SaveexecB32
        | Op::SAndNot0WrexecB32 => !a & e,
        _ => !a | e,
    };
    let wrexec = matches!(
        op,
        Op::SAndn1WrexecB64 | Op::SAndn2WrexecB64 | Op::SAndNot0WrexecB32 | Op::SAndNot1WrexecB32
    );
    (new, wrexec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_helpers() {
        assert_eq!(bfe64(0xABCD, 4 | 8 << 16, 32, false), 0xBC);
        assert_eq!(bfe64(0x80, 4 | 4 << 16, 32, true), 0xFFFF_FFF8);
        assert_eq!(find_first(0b1000, 32, true), 3);
        assert_eq!(find_first(0, 64, true), u32::MAX);
        assert_eq!(find_first(u64::from(u32::MAX), 32, false), u32::MAX);
        assert_eq!(find_last_one(1, 32), 31);
        assert_eq!(find_last_one(1 << 63, 64), 0);
        assert_eq!(find_last_signed(0xFFFF_FFFE, 32), 31);
        assert_eq!(wqm(0x0100_0010), 0x0F00_00F0);
        assert_eq!(quadmask(0xF0F1), 0b1011);
    }
}
