//! Matrix cores: the MFMA instructions of gfx90a and gfx94x (`v_mfma_*`) and gfx94x's sparse
//! SMFMAC instructions (`v_smfmac_*`).
//!
//! `D = A × B + C` for each of B independent blocks, A being M×K, B K×N and C, D M×N, with the
//! operands spread over the wave's lanes and registers as AMD's matrix instruction calculator
//! describes them ([`layout`], checked against the calculator's tables in `tests/mfma.rs`).
//!
//! Numerics: f32/f16/bf16 products and their sum are computed in f64 and rounded once to f32
//! (the hardware rounds its partial sums in f32 with its own order and denormal handling: the
//! last bits of a long sum may differ); i8 products sum into a wrapping i32; f64 is a chain of
//! fused multiply-adds in k order. The broadcast controls are run: `cbsz`/`abid` give groups of
//! 2^cbsz blocks the A of their block `abid`, `blgp` reads B from other lanes (on gfx94x's f64
//! MFMAs the same bits negate A, B and C). gfx94x's FP8 and BF8 inputs are its "FNUZ" formats
//! (E4M3 and E5M2, biases 8 and 16, NaN at 0x80, no infinities).
//!
//! gfx94x's xf32 MFMAs take f32 registers and multiply at reduced precision; AMD does not
//! publish the exact format, and kfd-emu rounds each input to TF32's 10 mantissa bits (to
//! nearest, ties to even) before the exact products, which may differ from the hardware in the
//! last bits of the inputs it keeps.
//!
//! SMFMAC multiplies a 4:2 structured-sparse A: of every group of four consecutive k values of
//! a row, A's registers hold two, and the compression index (src2, one VGPR) says where each
//! sits in its group (two bits per value, four per group). C is the destination itself
//! (D = A × B + D). With `cbsz` 0, `abid` chooses which set of index bits the instruction reads
//! (four sets of eight bits for 16-bit inputs, two of sixteen for 8-bit ones; higher `abid`
//! bits are ignored); with `cbsz` set, the first set is read. `blgp` has no effect.

use super::wave::Wave;
use crate::decode::attrs::MfmaKind;
use crate::decode::{Class, Inst, Matrix, Operand};
use crate::error::WaveError;
use crate::target::Target;

/// The element type of A and B.
pub(crate) use crate::decode::attrs::MatrixInput as Input;

impl Input {
    fn bits(self) -> u32 {
        match self {
            Input::F32 | Input::Xf32 => 32,
            Input::F16 | Input::Bf16 => 16,
            Input::I8 | Input::Fp8 | Input::Bf8 => 8,
            Input::F64 => 64,
        }
    }

    /// The value of an element's raw bits (exact in an f64).
    fn value(self, raw: u64) -> f64 {
        match self {
            Input::F32 => f64::from(f32::from_bits(raw as u32)),
            Input::F16 => f64::from(crate::decode::operand::f16_to_f32(raw as u16)),
            Input::Bf16 => f64::from(bf16_to_f32(raw as u32)),
            Input::I8 => f64::from(raw as u8 as i8),
            Input::F64 => f64::from_bits(raw),
            Input::Fp8 => fnuz8(raw as u8, 3, 8),
            Input::Bf8 => fnuz8(raw as u8, 2, 16),
            Input::Xf32 => f64::from(tf32(raw as u32)),
        }
    }
}

/// `bits` as an f32 rounded to TF32's 10 mantissa bits, to nearest with ties to even (NaN and
/// infinity kept).
fn tf32(bits: u32) -> f32 {
    if bits & 0x7F80_0000 == 0x7F80_0000 {
        return f32::from_bits(bits);
    }
    const DROP: u32 = 13;
    let half = 1 << (DROP - 1);
    let odd = bits >> DROP & 1;
    // Rounding may carry into the exponent, up to infinity, as a wider rounding would.
    f32::from_bits(bits.wrapping_add(half - 1 + odd) & !((1 << DROP) - 1))
}

/// An 8-bit "FNUZ" float: sign, exponent, `mantissa` bits, exponent `bias`; 0x80 is NaN, there
/// is no infinity and no negative zero.
fn fnuz8(b: u8, mantissa: u32, bias: i32) -> f64 {
    if b == 0x80 {
        return f64::NAN;
    }
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((b & 0x7F) >> mantissa);
    let m = f64::from(u32::from(b) & ((1 << mantissa) - 1));
    let scale = f64::from(1u32 << mantissa);
    let v = if e == 0 {
        m / scale * 2f64.powi(1 - bias)
    } else {
        (1.0 + m / scale) * 2f64.powi(e - bias)
    };
    sign * v
}

/// Broadcast controls: which block's A a block uses, and which lane B is read from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Controls {
    pub cbsz: u32,
    pub abid: u32,
    pub blgp: u32,
}

impl Controls {
    /// The block whose A block `b` multiplies.
    pub(crate) fn a_block(&self, b: u32) -> u32 {
        let mask = (1u32 << self.cbsz.min(31)) - 1;
        (b & !mask) | (self.abid & mask)
    }

    /// The lane a B value of `lane` is read from.
    pub(crate) fn b_lane(&self, lane: u32) -> u32 {
        match self.blgp {
            1 => lane & 31,
            2 => (lane & 31) + 32,
            3 => (lane + 16) % 64,
            4 => lane & 15,
            5 => (lane & 15) + 16,
            6 => (lane & 15) + 32,
            7 => (lane & 15) + 48,
            _ => lane,
        }
    }
}

/// An MFMA instruction's shape: `blocks` blocks of M×N from K products each, with `per_lane`
/// consecutive k values of A and B in each lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub blocks: u32,
    pub per_lane: u32,
    /// A's element type (and B's, but for the mixed FP8/BF8 forms).
    pub input: Input,
    pub input_b: Input,
    /// An SMFMAC: A holds two of every four k values (`per_lane` counts the dense k).
    pub sparse: bool,
    /// Consecutive k values of B in each lane (`per_lane` but for the sparse forms).
    pub b_per_lane: u32,
}

impl Shape {
    /// The shape of an MFMA or SMFMAC (`sparse`) that multiplies as `kind` says, whose A and
    /// B operands are `a_regs` and `b_regs` registers wide; `None` for a form kfd-emu does not
    /// run.
    pub(crate) fn of(kind: MfmaKind, sparse: bool, a_regs: u32, b_regs: u32) -> Option<Shape> {
        let (m, n, k) = (u32::from(kind.m), u32::from(kind.n), u32::from(kind.k));
        let input = kind.a;
        let stored = (a_regs * 32 / input.bits()).max(1);
        // A sparse A keeps two values of each group of four k.
        let per_lane = if sparse { 2 * stored } else { stored };
        let b_per_lane = if sparse {
            (b_regs * 32 / input.bits()).max(1)
        } else {
            per_lane
        };
        let blocks = 64 * per_lane / (k * m);
        let fits = m * k * blocks == 64 * per_lane && m == n && n * k * blocks == 64 * b_per_lane;
        (fits && (!sparse || blocks == 1)).then_some(Shape {
            m,
            n,
            k,
            blocks,
            per_lane,
            input,
            input_b: kind.b,
            sparse,
            b_per_lane,
        })
    }

    /// Where the pair of stored values of A's group holding `k` (of row `i`) is, for a sparse
    /// shape: (register, lane, lowest bit of the first value; the second follows it).
    pub(crate) fn a_pair(&self, i: u32, k: u32) -> (u32, u32, u32) {
        let groups = self.per_lane / 4;
        let lane = i + self.m * (k / self.per_lane);
        let bit = (k / 4 % groups) * 2 * self.input.bits();
        (bit / 32, lane, bit % 32)
    }

    /// Where the compression index of A's group holding `k` (of row `i`) is, in index set
    /// `set`: (lane, lowest of its four bits).
    pub(crate) fn index(&self, i: u32, k: u32, set: u32) -> (u32, u32) {
        let groups = self.per_lane / 4;
        let lane = i + self.m * (k / self.per_lane);
        (lane, 4 * (k / 4 % groups) + 4 * groups * set)
    }

    /// How many index sets one index register holds.
    pub(crate) fn index_sets(&self) -> u32 {
        32 / self.per_lane
    }

    /// Where A[i][k] of block `b` is: (register, lane, lowest bit).
    pub(crate) fn a(&self, b: u32, i: u32, k: u32) -> (u32, u32, u32) {
        self.ab(b, i, k, self.m, self.per_lane)
    }

    /// Where B[k][j] of block `b` is.
    pub(crate) fn b(&self, b: u32, k: u32, j: u32) -> (u32, u32, u32) {
        self.ab(b, j, k, self.n, self.b_per_lane)
    }

    fn ab(&self, b: u32, row: u32, k: u32, rows: u32, per_lane: u32) -> (u32, u32, u32) {
        if self.input == Input::F64 {
            // Blocks side by side in each 16-lane group, k across the groups.
            return (0, row + rows * b + 16 * k, 0);
        }
        let groups = self.k / per_lane;
        let lane = row + rows * (k / per_lane + groups * b);
        let bit = (k % per_lane) * self.input.bits();
        (bit / 32, lane, bit % 32)
    }

    /// Where C[i][j] and D[i][j] of block `b` are (a 32-bit value, or the low register of an
    /// f64 pair).
    pub(crate) fn d(&self, b: u32, i: u32, j: u32) -> (u32, u32, u32) {
        if self.input == Input::F64 {
            // Rows spread over the four 16-lane groups, blocks over the columns' lanes.
            let lane = j + self.n * b + 16 * (i % 4);
            return (2 * (i / 4), lane, 0);
        }
        let groups = 64 / self.n;
        let t = b * (self.m / 4) + i / 4;
        let lane = j + self.n * (t % groups);
        (i % 4 + 4 * (t / groups), lane, 0)
    }
}

fn bf16_to_f32(h: u32) -> f32 {
    f32::from_bits((h & 0xFFFF) << 16)
}

/// Runs `inst`, an MFMA of `target`.
pub(super) fn exec(w: &mut Wave, inst: &Inst, target: Target) -> Result<(), WaveError> {
    let regs = |op: Operand| match op {
        Operand::Vgpr(_, n) | Operand::Agpr(_, n) => Some(u32::from(n)),
        _ => None,
    };
    let (Some(a_regs), Some(b_regs)) = (regs(inst.src[0]), regs(inst.src[1])) else {
        return Err(w.unimplemented(inst));
    };
    let m = inst.vop3;
    let (kind, sparse) = match inst.class {
        Class::Matrix(Matrix::Dense(Some(kind))) => (kind, false),
        Class::Matrix(Matrix::Sparse(Some(kind))) => (kind, true),
        _ => return Err(w.unimplemented(inst)),
    };
    let Some(s) = Shape::of(kind, sparse, a_regs, b_regs) else {
        return Err(w.unimplemented(inst));
    };
    if s.sparse {
        return exec_sparse(w, inst, &s);
    }
    // The encoding's cbsz (the abs field), abid (op_sel and bit 14) and blgp (the neg field);
    // gfx940's f64 MFMAs negate A, B and C with the blgp bits instead.
    let f64_neg = s.input == Input::F64 && target.gfx940_cache_bits();
    let neg = if f64_neg { m.neg } else { 0 };
    let ctl = Controls {
        cbsz: u32::from(m.abs),
        abid: u32::from(m.opsel) | (inst.words[0] >> 14 & 1) << 3,
        blgp: if f64_neg { 0 } else { u32::from(m.neg) },
    };
    let read =
        |w: &Wave, op: Operand, at: (u32, u32, u32), bits: u32| read_element(w, inst, op, at, bits);
    let (a_op, b_op, c_op) = (inst.src[0], inst.src[1], inst.src[2]);
    let c_const = match c_op {
        Operand::Vgpr(..) | Operand::Agpr(..) => None,
        _ => Some(inst.imm[2]),
    };
    let mut out: Vec<((u32, u32, u32), u64)> = Vec::with_capacity((s.blocks * s.m * s.n) as usize);
    // cbsz and abid may name a block the shape does not have (cbsz over log2 of the block
    // count): undefined on the hardware, refused here.
    if (0..s.blocks).any(|b| ctl.a_block(b) >= s.blocks) {
        return Err(w.illegal(
            inst,
            format!(
                "cbsz {} / abid {} name a block past the {}",
                ctl.cbsz, ctl.abid, s.blocks
            ),
        ));
    }
    for b in 0..s.blocks {
        // This block's A and B, read once.
        let mut a = vec![0u64; (s.m * s.k) as usize];
        let mut bm = vec![0u64; (s.k * s.n) as usize];
        for i in 0..s.m {
            for k in 0..s.k {
                let at = s.a(ctl.a_block(b), i, k);
                a[(i * s.k + k) as usize] = read(w, a_op, at, s.input.bits())?;
                let (reg, lane, bit) = s.b(b, k, i);
                let at = (reg, ctl.b_lane(lane), bit);
                bm[(k * s.n + i) as usize] = read(w, b_op, at, s.input.bits())?;
            }
        }
        for i in 0..s.m {
            for j in 0..s.n {
                let at = s.d(b, i, j);
                let c = match c_const {
                    Some(v) => v,
                    None => read(w, c_op, at, if s.input == Input::F64 { 64 } else { 32 })?,
                };
                let r = match s.input {
                    Input::I8 => {
                        let mut acc = c as u32 as i32;
                        for k in 0..s.k {
                            let x = a[(i * s.k + k) as usize] as u8 as i8 as i32;
                            let y = bm[(k * s.n + j) as usize] as u8 as i8 as i32;
                            acc = acc.wrapping_add(x * y);
                        }
                        u64::from(acc as u32)
                    }
                    Input::F64 => {
                        let sign = |bit: u8, v: f64| if neg >> bit & 1 != 0 { -v } else { v };
                        let mut acc = sign(2, f64::from_bits(c));
                        for k in 0..s.k {
                            let x = sign(0, s.input.value(a[(i * s.k + k) as usize]));
                            let y = sign(1, s.input_b.value(bm[(k * s.n + j) as usize]));
                            acc = x.mul_add(y, acc);
                        }
                        acc.to_bits()
                    }
                    _ => {
                        let mut acc = f64::from(f32::from_bits(c as u32));
                        for k in 0..s.k {
                            acc += s.input.value(a[(i * s.k + k) as usize])
                                * s.input_b.value(bm[(k * s.n + j) as usize]);
                        }
                        u64::from((acc as f32).to_bits())
                    }
                };
                out.push((at, r));
            }
        }
    }
    // Every read happened before the first write: D may overlap A, B or C.
    let dst = inst.dst;
    for ((reg, lane, _), v) in out {
        w.vreg_mut(inst, dst, reg as usize)?[lane as usize] = v as u32;
        if s.input == Input::F64 {
            w.vreg_mut(inst, dst, reg as usize + 1)?[lane as usize] = (v >> 32) as u32;
        }
    }
    Ok(())
}

/// Reads `bits` bits at (register, lane, bit) of operand `op` (a pair of registers for 64).
fn read_element(
    w: &Wave,
    inst: &Inst,
    op: Operand,
    (reg, lane, bit): (u32, u32, u32),
    bits: u32,
) -> Result<u64, WaveError> {
    let lane = lane as usize;
    let outside = || w.illegal(inst, format!("lane {lane} of {op:?} is outside the wave"));
    let lo = *w
        .vreg(inst, op, reg as usize)?
        .get(lane)
        .ok_or_else(outside)?;
    Ok(if bits == 64 {
        let hi = *w
            .vreg(inst, op, reg as usize + 1)?
            .get(lane)
            .ok_or_else(outside)?;
        u64::from(lo) | u64::from(hi) << 32
    } else {
        u64::from((lo >> bit) & (((1u64 << bits) - 1) as u32))
    })
}

/// Runs an SMFMAC: `D = A × B + D` with A 4:2 sparse (see the module's docs).
fn exec_sparse(w: &mut Wave, inst: &Inst, s: &Shape) -> Result<(), WaveError> {
    let m = inst.vop3;
    let abid = u32::from(m.opsel) | (inst.words[0] >> 14 & 1) << 3;
    let set = if m.abs == 0 { abid % s.index_sets() } else { 0 };
    let (a_op, b_op, index_op, dst) = (inst.src[0], inst.src[1], inst.src[2], inst.dst);
    let bits = s.input.bits();
    // Every A value with the dense k it multiplies, per row.
    let mut rows: Vec<Vec<(u32, u64)>> = Vec::with_capacity(s.m as usize);
    for i in 0..s.m {
        let mut row = Vec::with_capacity((s.k / 2) as usize);
        for group in (0..s.k).step_by(4) {
            let (reg, lane, bit) = s.a_pair(i, group);
            let (ilane, ibit) = s.index(i, group, set);
            let index = w.vreg(inst, index_op, 0)?[ilane as usize] >> ibit & 0xF;
            for v in 0..2 {
                let at = bit + v * bits;
                let value = read_element(w, inst, a_op, (reg + at / 32, lane, at % 32), bits)?;
                row.push((group + (index >> (2 * v) & 3), value));
            }
        }
        rows.push(row);
    }
    let mut bm = vec![0u64; (s.k * s.n) as usize];
    for k in 0..s.k {
        for j in 0..s.n {
            bm[(k * s.n + j) as usize] = read_element(w, inst, b_op, s.b(0, k, j), bits)?;
        }
    }
    let mut out = Vec::with_capacity((s.m * s.n) as usize);
    for (i, row) in (0..s.m).zip(&rows) {
        for j in 0..s.n {
            let at = s.d(0, i, j);
            let c = read_element(w, inst, dst, at, 32)? as u32;
            let r = if s.input == Input::I8 {
                let mut acc = c as i32;
                for &(k, a) in row {
                    let y = bm[(k * s.n + j) as usize] as u8 as i8 as i32;
                    acc = acc.wrapping_add(a as u8 as i8 as i32 * y);
                }
                acc as u32
            } else {
                let mut acc = f64::from(f32::from_bits(c));
                for &(k, a) in row {
                    acc += s.input.value(a) * s.input_b.value(bm[(k * s.n + j) as usize]);
                }
                (acc as f32).to_bits()
            };
            out.push((at, r));
        }
    }
    for ((reg, lane, _), v) in out {
        w.vreg_mut(inst, dst, reg as usize)?[lane as usize] = v;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    type Cells = Vec<(u32, u32, u32)>;
    /// (arch, instruction) -> matrix -> block (with its controls) -> cells.
    type Table<'a> = BTreeMap<(&'a str, &'a str), BTreeMap<&'a str, BTreeMap<&'a str, Cells>>>;

    /// A table line's block field: `3`, or `3,cbsz=2,abid=1` with its broadcast controls.
    fn block_and_controls(field: &str) -> (u32, Controls) {
        let mut parts = field.split(',');
        let b = parts.next().and_then(|b| b.parse().ok()).expect("block");
        let mut c = Controls::default();
        for p in parts {
            let (k, v) = p.split_once('=').expect("control");
            let v: u32 = v.parse().expect("control value");
            match k {
                "cbsz" => c.cbsz = v,
                "abid" => c.abid = v,
                _ => c.blgp = v,
            }
        }
        (b, c)
    }

    /// Every dense MFMA of gfx90a and gfx94x, every element of A, B and D of every block, where
    /// AMD's matrix instruction calculator puts it (tools/mfma_layouts.py wrote the table).
    #[test]
    fn layouts_match_the_matrix_instruction_calculator() {
        let table = include_str!("../../tools/mfma-layouts.txt");
        // (arch, instruction) -> matrix -> block -> cells
        let mut all: Table<'_> = BTreeMap::new();
        for line in table.lines() {
            let (head, cells) = line.split_once(" : ").expect("a table line");
            let f: Vec<&str> = head.split(' ').collect();
            let cells: Cells = cells
                .split(' ')
                .map(|c| {
                    let v: Vec<u32> = c.split('.').map(|x| x.parse().expect("number")).collect();
                    (v[0], v[1], v[2])
                })
                .collect();
            all.entry((f[0], f[1]))
                .or_default()
                .entry(f[2])
                .or_default()
                .insert(f[3], cells);
        }
        // 27 gfx90a and 46 gfx940 instructions, the 14 SMFMACs among them.
        assert_eq!(all.len(), 27 + 46, "{} instructions", all.len());
        assert_eq!(
            all.keys().filter(|k| k.1.starts_with("v_smfmac")).count(),
            14
        );
        for ((arch, name), matrices) in &all {
            let regs = |m: &str| {
                let top = matrices[m]
                    .values()
                    .flatten()
                    .map(|c| c.0)
                    .max()
                    .unwrap_or(0);
                top + if name.ends_with("f64") { 2 } else { 1 }
            };
            // The table's attributes for the instruction: what the generator read from the
            // mnemonic must give the calculator's layout.
            let target = Target::from_name(arch).expect("a target");
            let (kind, sparse) = crate::decode::table::entries(target)
                .find(|e| e.name == *name)
                .and_then(|e| match e.class {
                    Class::Matrix(Matrix::Dense(kind)) => Some((kind?, false)),
                    Class::Matrix(Matrix::Sparse(kind)) => Some((kind?, true)),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("{arch} {name}: no MFMA in the table"));
            let s = Shape::of(kind, sparse, regs("A"), regs("B"))
                .unwrap_or_else(|| panic!("{arch} {name}"));
            assert_eq!(s.sparse, matrices.contains_key("K"), "{arch} {name}");
            for (matrix, blocks) in matrices {
                let plain = blocks.keys().filter(|k| !k.contains(',')).count();
                assert_eq!(plain as u32, s.blocks, "{arch} {name} {matrix} blocks");
                for (field, cells) in blocks {
                    let (b, c) = block_and_controls(field);
                    for (e, &want) in cells.iter().enumerate() {
                        let e = e as u32;
                        let got = match *matrix {
                            "A" if s.sparse => s.a_pair(e / s.k, e % s.k),
                            "K" => {
                                let set = if c.cbsz == 0 {
                                    c.abid % s.index_sets()
                                } else {
                                    0
                                };
                                let (lane, bit) = s.index(e / s.k, e % s.k, set);
                                (0, lane, bit)
                            }
                            "A" => s.a(c.a_block(b), e / s.k, e % s.k),
                            "B" => {
                                let (reg, lane, bit) = s.b(b, e / s.n, e % s.n);
                                (reg, c.b_lane(lane), bit)
                            }
                            _ => s.d(b, e / s.n, e % s.n),
                        };
                        assert_eq!(got, want, "{arch} {name} {matrix} {field} element {e}");
                    }
                }
            }
        }
    }
}
