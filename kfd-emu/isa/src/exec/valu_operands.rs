//! Vector ALU operands and results: operand fetch (with DPP/SDWA/op_sel and float input
//! modifiers), result write (with EXEC, DPP masks, SDWA destination selects, clamp and output
//! modifiers), and the per-lane loops every operation is built from ([`V`]). The operations
//! are in the families `valu` dispatches to.

use super::lanes;
use super::wave::{per_lane, select_into, Lanes, Wave, LANES};
use crate::decode::{Format, Inst, Operand};
use crate::error::WaveError;

/// 64-bit values per lane.
pub(super) type Lanes64 = [u64; LANES];

/// A source's lanes: the register itself when it can be read in place (no copy), a scalar
/// broadcast in the wave's buffers, or values made for it (a DPP/SDWA transform). Two words:
/// sources move often, so the rare owned lanes are boxed.
pub(super) enum Src<'a> {
    /// The register's lanes (or a broadcast's).
    Ref(&'a Lanes),
    /// Values computed for this instruction.
    Own(Box<Lanes>),
}

impl std::ops::Deref for Src<'_> {
    type Target = Lanes;
    #[inline]
    fn deref(&self) -> &Lanes {
        match self {
            Src::Ref(r) => r,
            Src::Own(o) => o,
        }
    }
}

/// Zero in every lane (an absent source).
static ZERO: Lanes = [0; LANES];

/// What every VALU helper needs: the wave, the instruction and the apertures (for
/// `src_shared_base` and friends).
pub(super) struct V<'a> {
    pub w: &'a mut Wave,
    pub i: &'a Inst,
    pub ap: (u64, u64),
}

impl V<'_> {
    /// The lanes an instruction writes: EXEC, narrowed by DPP row/bank masks.
    #[inline]
    pub fn mask(&self) -> u64 {
        let e = self.w.exec();
        match &self.i.dpp {
            Some(d) => e & lanes::dpp_write_mask(d, e),
            None => e,
        }
    }

    /// Raw 32-bit values of source `k` per lane (DPP and SDWA selects applied; no float
    /// modifiers).
    ///
    /// Inlined, with scalar sources read from the wave's broadcast buffers, so the common
    /// sources move no lanes; DPP and SDWA sources are made out of line.
    #[inline(always)]
    pub fn src(&self, k: usize) -> Result<Src<'_>, WaveError> {
        let op = self.i.src.get(k).copied().unwrap_or_default();
        let plain = self.i.sdwa.is_none() && (k != 0 || self.i.dpp.is_none());
        if !plain {
            return self.src_modified(k, op);
        }
        Ok(match op {
            Operand::Vgpr(..) | Operand::Agpr(..) => Src::Ref(self.w.vreg(self.i, op, 0)?),
            _ => {
                let x = self
                    .w
                    .scalar32(op, self.i.imm.get(k).copied().unwrap_or(0), self.ap);
                match self.w.broadcast.get(k) {
                    Some(b) if b[0] == x && op != Operand::None => Src::Ref(b),
                    _ if x == 0 => Src::Ref(&ZERO),
                    _ => Src::Own(Box::new([x; LANES])),
                }
            }
        })
    }

    /// [`V::src`] with DPP or SDWA.
    #[inline(never)]
    fn src_modified(&self, k: usize, op: Operand) -> Result<Src<'_>, WaveError> {
        let reg = match op {
            Operand::Vgpr(..) | Operand::Agpr(..) => Some(self.w.vreg(self.i, op, 0)?),
            _ => None,
        };
        let mut out = match reg {
            Some(r) => *r,
            None => {
                [self.w
                    .scalar32(op, self.i.imm.get(k).copied().unwrap_or(0), self.ap);
                    LANES]
            }
        };
        if k == 0 {
            if let Some(d) = &self.i.dpp {
                out = lanes::dpp_permute(&out, d, self.w.exec());
            }
        }
        if let Some(s) = &self.i.sdwa {
            let (sel, sext) = if k == 0 {
                (s.src0_sel, s.sext & 1 != 0)
            } else {
                (s.src1_sel, s.sext & 2 != 0)
            };
            if sel != 6 {
                for v in out.iter_mut() {
                    *v = lanes::sdwa_select(*v, sel, sext);
                }
            }
        }
        Ok(Src::Own(Box::new(out)))
    }

    /// 16-bit source `k` (low half, or the high half when VOP3 op_sel asks), zero-extended.
    pub fn src16(&self, k: usize) -> Result<Lanes, WaveError> {
        let mut v: Lanes = *self.src(k)?;
        let hi = self.i.format == Format::Vop3 && (self.i.vop3.opsel >> k) & 1 != 0;
        for x in v.iter_mut() {
            *x = if hi { *x >> 16 } else { *x & 0xFFFF };
        }
        Ok(v)
    }

    /// 64-bit values of source `k` per lane (a register pair, a 64-bit scalar or a constant).
    pub fn src64(&self, k: usize) -> Result<Lanes64, WaveError> {
        let op = self.i.src.get(k).copied().unwrap_or_default();
        match op {
            Operand::Vgpr(..) | Operand::Agpr(..) => {
                let lo = self.w.vreg(self.i, op, 0)?;
                let hi = self.w.vreg(self.i, op, 1)?;
                Ok(per_lane(|l| u64::from(lo[l]) | u64::from(hi[l]) << 32))
            }
            _ => Ok([self
                .w
                .scalar64(op, self.i.imm.get(k).copied().unwrap_or(0), self.ap);
                LANES]),
        }
    }

    /// Writes 32-bit results to the destination for the lanes in `mask`.
    pub fn write(&mut self, vals: &Lanes, mask: u64) -> Result<(), WaveError> {
        self.write_to(self.i.dst, 0, vals, mask)
    }

    /// Writes 32-bit results to register `k` of `dst`.
    pub fn write_to(
        &mut self,
        dst: Operand,
        k: usize,
        vals: &Lanes,
        mask: u64,
    ) -> Result<(), WaveError> {
        let sdwa = self.i.sdwa;
        let inst = self.i;
        let reg = self.w.vreg_mut(inst, dst, k)?;
        match sdwa {
            Some(s) if s.dst_sel != 6 => {
                for l in 0..LANES {
                    if mask >> l & 1 != 0 {
                        reg[l] = lanes::sdwa_place(reg[l], vals[l], s.dst_sel, s.dst_unused);
                    }
                }
            }
            _ => select_into(reg, vals, mask),
        }
        Ok(())
    }

    /// Writes 16-bit results: the low half (upper half zeroed), or with VOP3 op_sel[3] the
    /// high half (lower half kept).
    pub fn write16(&mut self, vals: &Lanes, mask: u64) -> Result<(), WaveError> {
        let hi = self.i.format == Format::Vop3 && self.i.vop3.opsel & 8 != 0;
        if !hi {
            let v: Lanes = per_lane(|l| vals[l] & 0xFFFF);
            return self.write(&v, mask);
        }
        let old = *self.w.vreg(self.i, self.i.dst, 0)?;
        let v: Lanes = per_lane(|l| (old[l] & 0xFFFF) | vals[l] << 16);
        self.write(&v, mask)
    }

    /// Writes 64-bit results to a register pair.
    pub fn write64(&mut self, vals: &Lanes64, mask: u64) -> Result<(), WaveError> {
        let lo: Lanes = per_lane(|l| vals[l] as u32);
        let hi: Lanes = per_lane(|l| (vals[l] >> 32) as u32);
        self.write_to(self.i.dst, 0, &lo, mask)?;
        self.write_to(self.i.dst, 1, &hi, mask)
    }

    /// Writes a lane mask (compare result, carry) to a scalar pair; lanes outside `mask` read
    /// as 0.
    pub fn write_sdst(&mut self, bits: u64) {
        if let Operand::Sgpr(r, _) = self.i.sdst {
            self.w.set_lane_mask(r, bits);
        }
    }

    /// A lane mask from a 64-bit scalar source (carry-in, cndmask select).
    pub fn mask_src(&self, k: usize) -> u64 {
        let op = self.i.src.get(k).copied().unwrap_or_default();
        let imm = self.i.imm.get(k).copied().unwrap_or(0);
        match op {
            Operand::Sgpr(r, _) => self.w.lane_mask(r),
            _ => self.w.scalar64(op, imm, self.ap) & self.w.lane_limit(),
        }
    }

    /// f32 source `k` with the instruction's abs/neg modifiers.
    #[inline]
    pub fn fmod32(&self, x: u32, k: usize) -> f32 {
        let m = self.i.vop3;
        let mut b = x;
        if (m.abs >> k) & 1 != 0 {
            b &= 0x7FFF_FFFF;
        }
        if (m.neg >> k) & 1 != 0 {
            b ^= 0x8000_0000;
        }
        f32::from_bits(b)
    }

    /// f16 source `k` (bits in the low half) with abs/neg, widened to f64.
    #[inline]
    pub fn fmod16(&self, x: u32, k: usize) -> f64 {
        let m = self.i.vop3;
        let mut b = x & 0xFFFF;
        if (m.abs >> k) & 1 != 0 {
            b &= 0x7FFF;
        }
        if (m.neg >> k) & 1 != 0 {
            b ^= 0x8000;
        }
        super::fpmath::h2d(b)
    }

    /// f64 source `k` with abs/neg.
    #[inline]
    pub fn fmod64(&self, x: u64, k: usize) -> f64 {
        let m = self.i.vop3;
        let mut b = x;
        if (m.abs >> k) & 1 != 0 {
            b &= !(1 << 63);
        }
        if (m.neg >> k) & 1 != 0 {
            b ^= 1 << 63;
        }
        f64::from_bits(b)
    }

    /// An f32 result after the output modifier and clamp.
    #[inline]
    pub fn fout32(&self, v: f32) -> u32 {
        let m = self.i.vop3;
        let v = match m.omod {
            1 => v * 2.0,
            2 => v * 4.0,
            3 => v * 0.5,
            _ => v,
        };
        let v = if m.clamp { clamp01(v) } else { v };
        v.to_bits()
    }

    /// An f64 result after the output modifier and clamp.
    #[inline]
    pub fn fout64(&self, v: f64) -> u64 {
        let m = self.i.vop3;
        let v = match m.omod {
            1 => v * 2.0,
            2 => v * 4.0,
            3 => v * 0.5,
            _ => v,
        };
        let v = if m.clamp {
            if v.is_nan() {
                0.0
            } else {
                v.clamp(0.0, 1.0)
            }
        } else {
            v
        };
        v.to_bits()
    }

    /// Applies `f` to every lane of sources 0..N and writes the result.
    #[inline]
    pub fn map1(&mut self, f: impl Fn(u32) -> u32) -> Result<(), WaveError> {
        let a = self.src(0)?;
        let out: Lanes = per_lane(|l| f(a[l]));
        let m = self.mask();
        self.write(&out, m)
    }

    /// Two-source lane map.
    #[inline]
    pub fn map2(&mut self, f: impl Fn(u32, u32) -> u32) -> Result<(), WaveError> {
        let a = self.src(0)?;
        let b = self.src(1)?;
        let out: Lanes = per_lane(|l| f(a[l], b[l]));
        let m = self.mask();
        self.write(&out, m)
    }

    /// Three-source lane map.
    #[inline]
    pub fn map3(&mut self, f: impl Fn(u32, u32, u32) -> u32) -> Result<(), WaveError> {
        let a = self.src(0)?;
        let b = self.src(1)?;
        let c = self.src(2)?;
        let out: Lanes = per_lane(|l| f(a[l], b[l], c[l]));
        let m = self.mask();
        self.write(&out, m)
    }

    /// f32 unary op with modifiers.
    #[inline]
    pub fn f1(&mut self, f: impl Fn(f32) -> f32) -> Result<(), WaveError> {
        let a = self.src(0)?;
        let out: Lanes = per_lane(|l| self.fout32(f(self.fmod32(a[l], 0))));
        let m = self.mask();
        self.write(&out, m)
    }

    /// f32 binary op with modifiers.
    #[inline]
    pub fn f2(&mut self, f: impl Fn(f32, f32) -> f32) -> Result<(), WaveError> {
        let a = self.src(0)?;
        let b = self.src(1)?;
        let out: Lanes = per_lane(|l| self.fout32(f(self.fmod32(a[l], 0), self.fmod32(b[l], 1))));
        let m = self.mask();
        self.write(&out, m)
    }

    /// f32 ternary op with modifiers.
    #[inline]
    pub fn f3(&mut self, f: impl Fn(f32, f32, f32) -> f32) -> Result<(), WaveError> {
        let a = self.src(0)?;
        let b = self.src(1)?;
        let c = self.src(2)?;
        let out: Lanes = per_lane(|l| {
            self.fout32(f(
                self.fmod32(a[l], 0),
                self.fmod32(b[l], 1),
                self.fmod32(c[l], 2),
            ))
        });
        let m = self.mask();
        self.write(&out, m)
    }

    /// f64 ops with modifiers, 1 to 3 sources (missing ones read 0).
    #[inline]
    pub fn d3(&mut self, n: usize, f: impl Fn(f64, f64, f64) -> f64) -> Result<(), WaveError> {
        let a = self.src64(0)?;
        let b = if n > 1 { self.src64(1)? } else { [0; LANES] };
        let c = if n > 2 { self.src64(2)? } else { [0; LANES] };
        let out: Lanes64 = per_lane(|l| {
            self.fout64(f(
                self.fmod64(a[l], 0),
                self.fmod64(b[l], 1),
                self.fmod64(c[l], 2),
            ))
        });
        let m = self.mask();
        self.write64(&out, m)
    }

    /// f32 result from a raw 32-bit source (conversions to float).
    #[inline]
    pub fn f1_from(&mut self, f: impl Fn(u32) -> f32) -> Result<(), WaveError> {
        let a = self.src(0)?;
        let out: Lanes = per_lane(|l| self.fout32(f(a[l])));
        let m = self.mask();
        self.write(&out, m)
    }

    /// Raw 32-bit result from an f32 source with modifiers (conversions from float).
    #[inline]
    pub fn map_f32(&mut self, f: impl Fn(f32) -> u32) -> Result<(), WaveError> {
        let a = self.src(0)?;
        let out: Lanes = per_lane(|l| f(self.fmod32(a[l], 0)));
        let m = self.mask();
        self.write(&out, m)
    }

    /// The destination register pair's current 64-bit values (accumulating ops).
    pub fn src64_reg_dst(&self) -> Result<Lanes64, WaveError> {
        let lo = self.w.vreg(self.i, self.i.dst, 0)?;
        let hi = self.w.vreg(self.i, self.i.dst, 1)?;
        Ok(per_lane(|l| u64::from(lo[l]) | u64::from(hi[l]) << 32))
    }

    /// A compare-like op: a bit per active lane, written to the scalar destination.
    #[inline]
    pub fn bits(&self, f: impl Fn(usize) -> bool) -> u64 {
        let m = self.mask();
        let mut flags = [false; LANES];
        for (l, x) in flags.iter_mut().enumerate() {
            *x = f(l);
        }
        super::wave::pack_bits(&flags) & m
    }
}

/// Clamp to [0, 1] (NaN to 0), as the VALU's clamp bit does for floats.
pub(super) fn clamp01(v: f32) -> f32 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(0.0, 1.0)
    }
}
