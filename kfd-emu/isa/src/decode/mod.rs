//! The decoder: instruction words to [`Inst`].
//!
//! Decoding is generation-aware: [`decode`] picks the format from the target's generation and
//! the opcode's meaning from the target's table (`table.rs`), so a new generation adds its own
//! format split and tables without touching GFX9's.

pub mod attrs;
pub mod compare;
mod gfx11;
mod gfx9_mem;
mod gfx9_salu;
mod gfx9_valu;
pub mod inst;
pub mod memop;
/// The operations (generated from the opcode tables).
pub mod op;
pub mod operand;
mod pair;
pub mod table;
mod tables;

pub use attrs::{traits, Class, Matrix, Source, Traits};
pub use gfx11::{DPP8, DPP8_FI};
pub use inst::{flags, Dpp, Inst, Sdwa, Vop3Mods};
pub use op::Op;
pub use operand::{DataSize, Operand};
pub use table::{Entry, Format};

use crate::target::{Generation, Target};
use operand::align_sgpr;

/// Most dwords one instruction takes (GFX9: 2; GFX11: 3, a VOP3 with a literal or DPP).
pub const MAX_INST_DWORDS: usize = 3;

/// Decodes the instruction at the start of `words` (which should hold up to
/// [`MAX_INST_DWORDS`] words; fewer when the code ends). Words that are no instruction of the
/// target, or that need more words than given, decode to an [`Op::Invalid`] instruction of one
/// dword, which the interpreter refuses to execute.
pub fn decode(target: Target, words: &[u32]) -> Inst {
    let Some(&w0) = words.first() else {
        return Inst::invalid(&[]);
    };
    let decoded = match target.generation() {
        Generation::Gfx9 => gfx9(target, w0, words),
        Generation::Gfx11 => gfx11::decode(target, w0, words),
    };
    match decoded {
        Some(mut i) if usize::from(i.len) <= words.len() => {
            align_sgpr_tuples(&mut i);
            i
        }
        _ => Inst::invalid(&[w0]),
    }
}

/// The hardware ignores the low bits of a register field that names an SGPR pair or quad
/// (pairs start at even registers, quads at multiples of 4), and LLVM decodes them so: s[27:28]
/// in the field is s[26:27].
fn align_sgpr_tuples(i: &mut Inst) {
    let fix = |op: &mut Operand| {
        if let Operand::Sgpr(r, n) = *op {
            if r != operand::sreg::NULL && r != operand::sreg::NULL_SINK {
                *op = Operand::Sgpr(align_sgpr(r, n), n);
            }
        }
    };
    fix(&mut i.dst);
    fix(&mut i.sdst);
    i.src.iter_mut().for_each(fix);
    fix(&mut i.saddr);
    fix(&mut i.soffset);
}

/// The GFX9 format split: the high bits of the first word say which encoding it is.
fn gfx9(target: Target, w0: u32, words: &[u32]) -> Option<Inst> {
    let w1 = words.get(1).copied().unwrap_or(0);
    match w0 >> 23 {
        0x17F => return gfx9_salu::sopp(target, w0),
        0x17E => return gfx9_salu::sopc(target, w0, w1),
        0x17D => return gfx9_salu::sop1(target, w0, w1),
        _ => {}
    }
    if w0 >> 28 == 0xB {
        return gfx9_salu::sopk(target, w0, w1);
    }
    if w0 >> 30 == 0b10 {
        return gfx9_salu::sop2(target, w0, w1);
    }
    match w0 >> 25 {
        0x3F => return gfx9_valu::vop1(target, w0, w1),
        0x3E => return gfx9_valu::vopc(target, w0, w1),
        _ => {}
    }
    if w0 >> 31 == 0 {
        return gfx9_valu::vop2(target, w0, w1);
    }
    match w0 >> 26 {
        0x30 => gfx9_mem::smem(target, w0, w1),
        0x34 if w0 >> 23 == 0x1A7 => gfx9_valu::vop3p(target, w0, w1),
        0x34 => gfx9_valu::vop3(target, w0, w1),
        0x36 => gfx9_mem::ds(target, w0, w1),
        0x37 => gfx9_mem::flat(target, w0, w1),
        0x38 => gfx9_mem::mubuf(target, w0, w1),
        0x3A => gfx9_mem::mtbuf(target, w0, w1),
        0x3C => gfx9_mem::mimg(target, w0, w1),
        _ => None,
    }
}

/// A new instruction for a table entry, with the fields every format sets.
fn start(e: &'static Entry, words: [u32; 2], len: u8) -> Inst {
    let mut i = Inst::invalid(&words);
    i.op = e.op;
    i.format = e.format;
    i.name = e.name;
    i.widths = e.widths;
    i.len = len;
    i.class = e.class;
    i.traits = e.traits;
    i.source = e.source;
    i
}

/// The data size and float-ness of a source `width` dwords wide of an operation whose sources
/// are of type `source`.
fn source_size(source: Source, width: u8) -> (DataSize, bool) {
    let float = matches!(source, Source::Float | Source::Float16);
    let size = match (width, source) {
        (2.., _) => DataSize::B64,
        (_, Source::Int16 | Source::Float16) => DataSize::B16,
        _ => DataSize::B32,
    };
    (size, float)
}

/// Fills `imm` for the constant sources of `inst`, given each source's width.
fn resolve_constants(inst: &mut Inst, src_widths: [u8; 3]) {
    for ((imm, src), w) in inst.imm.iter_mut().zip(inst.src).zip(src_widths) {
        let (size, float) = source_size(inst.source, w.max(1));
        *imm = src.constant(size, float).unwrap_or(0);
    }
}

/// The sources of a `*mk_*`/`*ak_*` operation, which carries a constant K in the word after it:
/// D = S0 * K + S1 (`mk`) or S0 * S1 + K (`ak`), both as src0 * src1 + src2; `None` for other
/// operations.
fn constant_k_sources(op: Op, s0: Operand, s1: Operand, k: u32) -> Option<[Operand; 3]> {
    match op {
        Op::VMadmkF32 | Op::VMadmkF16 | Op::VFmamkF32 | Op::VFmamkF16 => {
            Some([s0, Operand::Literal(k), s1])
        }
        Op::VMadakF32 | Op::VMadakF16 | Op::VFmaakF32 | Op::VFmaakF16 => {
            Some([s0, s1, Operand::Literal(k)])
        }
        _ => None,
    }
}

/// A literal-carrying instruction's length: one more dword if any source is a literal.
fn with_literal(len: u8, srcs: &[Operand]) -> u8 {
    if srcs.iter().any(|s| s.is_literal()) {
        len + 1
    } else {
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_sizes_from_the_tables() {
        let size = |target, format, opcode, width| {
            let e = table::lookup(target, format, opcode).expect("an opcode of the target");
            (e.name, source_size(e.source, width))
        };
        let t = Target::Gfx90a;
        assert_eq!(
            size(t, Format::Vop1, 0xb, 1),
            ("v_cvt_f32_f16_e32", (DataSize::B16, true))
        );
        assert_eq!(
            size(t, Format::Vop1, 0xa, 1),
            ("v_cvt_f16_f32_e32", (DataSize::B32, true))
        );
        assert_eq!(
            size(t, Format::Vop3, 0x280, 2),
            ("v_add_f64", (DataSize::B64, true))
        );
        assert_eq!(
            size(t, Format::Vop3, 0x28f, 1),
            ("v_lshlrev_b64", (DataSize::B32, false))
        );
        assert_eq!(
            size(t, Format::Sop1, 0x0, 1),
            ("s_mov_b32", (DataSize::B32, false))
        );
    }

    #[test]
    fn short_or_unknown_words_are_invalid() {
        let t = Target::Gfx90a;
        assert_eq!(decode(t, &[]).op, Op::Invalid);
        // s_and_b32 with a literal but no literal word.
        assert_eq!(decode(t, &[0x8600FF00]).op, Op::Invalid);
        assert_eq!(decode(t, &[0x8600FF00, 0xFFFF]).op, Op::SAndB32);
        assert_eq!(decode(t, &[0xFFFF_FFFF, 0]).op, Op::Invalid);
    }

    #[test]
    fn cache_maintenance_buffer_ops_take_two_words() {
        // llvm-mc-16 --show-encoding, gfx90a and gfx940: every one is 8 bytes.
        for (t, w0, op) in [
            (Target::Gfx90a, 0xE0FC_0000, Op::BufferWbinvl1Vol),
            (Target::Gfx90a, 0xE0F8_0000, Op::BufferWbinvl1),
            (Target::Gfx90a, 0xE0A0_0000, Op::BufferWbl2),
            (Target::Gfx942, 0xE0A4_C000, Op::BufferInv),
        ] {
            let i = decode(t, &[w0, 0]);
            assert_eq!((i.op, i.size()), (op, 8), "{w0:#x}");
        }
    }
}
