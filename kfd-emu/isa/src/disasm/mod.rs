//! The disassembler: [`Inst`] to the text `llvm-objdump -d --mcpu=<target>` prints (mnemonic
//! and operands, without the address/encoding comment).

mod memory;
mod operand;
mod scalar;
mod vector;

use crate::decode::{decode, Format, Inst, Op, MAX_INST_DWORDS};
use crate::target::Target;

/// The text of a decoded instruction, or `<unknown>` for words no instruction of the target
/// uses.
pub fn disassemble(target: Target, inst: &Inst) -> String {
    if inst.op == Op::Invalid {
        return "<unknown>".to_string();
    }
    let mut out = String::with_capacity(48);
    match inst.format {
        Format::Sop1 | Format::Sop2 | Format::Sopc | Format::Sopk | Format::Sopp => {
            scalar::print(&mut out, target, inst)
        }
        Format::Vop1 | Format::Vop2 | Format::Vopc | Format::Vop3 | Format::Vop3p => {
            vector::print(&mut out, target, inst)
        }
        Format::Smem
        | Format::Ds
        | Format::Flat
        | Format::Global
        | Format::Scratch
        | Format::Mubuf
        | Format::Mtbuf
        | Format::Mimg => memory::print(&mut out, target, inst),
        Format::VopdX | Format::VopdY => match inst.pair {
            Some([x, y]) => {
                vector::print(&mut out, target, x);
                out.push_str(" :: ");
                vector::print(&mut out, target, y);
            }
            None => out.push_str("<unknown>"),
        },
    }
    out
}

/// Decodes and disassembles every instruction of `code` (little-endian bytes, a multiple of 4
/// long): one `(byte offset, text)` per instruction. Undecodable words are one `<unknown>`
/// dword each.
pub fn disassemble_all(target: Target, code: &[u8]) -> Vec<(usize, String)> {
    let words: Vec<u32> = code
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(rest) = words.get(at..).filter(|r| !r.is_empty()) {
        let window = rest.get(..MAX_INST_DWORDS).unwrap_or(rest);
        let inst = decode(target, window);
        out.push((at * 4, disassemble(target, &inst)));
        at += usize::from(inst.len.max(1));
    }
    out
}

/// Appends `, ` unless the text so far ends the mnemonic.
fn sep(out: &mut String, first: &mut bool) {
    if *first {
        out.push(' ');
        *first = false;
    } else {
        out.push_str(", ");
    }
}

/// The last type suffix of a mnemonic (`f32`, `u16`, `b64`, ...): its sources' type as LLVM
/// prints it (LLVM names conversions `v_cvt_DST_SRC`). The printer reads LLVM's text rules from
/// the text; the interpreter reads the table's [`crate::decode::Source`] instead.
pub(crate) fn source_type(name: &str) -> Option<&str> {
    name.split('_').rfind(|part| {
        let b = part.as_bytes();
        b.len() >= 2
            && matches!(b[0], b'f' | b'i' | b'u' | b'b')
            && b[1..].iter().all(u8::is_ascii_digit)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Swizzle offsets and scalar 16-bit-suffixed sources as llvm-mc-16 prints them for
    /// gfx90a (the gfx1100 corpus found them; the GFX9 corpora hold none of these forms).
    #[test]
    fn swizzles_and_scalar_literals() {
        let t = Target::Gfx90a;
        for (words, want) in [
            (&[0xD87A_0000, 0x0000_0001][..], "ds_swizzle_b32 v0, v1"),
            (
                &[0xD87A_9A64, 0x0000_0001],
                "ds_swizzle_b32 v0, v1 offset:39524",
            ),
            (
                &[0xD87A_1E7F, 0x0000_0001],
                "ds_swizzle_b32 v0, v1 offset:swizzle(BITMASK_PERM,\"1pi00\")",
            ),
            (&[0xBE81_17FF, 0x1234_5678], "s_sext_i32_i16 s1, 0x12345678"),
            (&[0xBE81_17F2, 0], "s_sext_i32_i16 s1, 1.0"),
            (
                &[0x9901_02FF, 0x1234_5678],
                "s_pack_ll_b32_b16 s1, 0x12345678, s2",
            ),
        ] {
            assert_eq!(disassemble(t, &decode(t, words)), want, "{words:08x?}");
        }
    }

    /// Forms the goldens do not reach, with llvm-mc-16's text.
    #[test]
    fn negative_smem_offsets() {
        let t = Target::Gfx90a;
        let load = decode(t, &[0xC002_0082, 0x001F_FFF0]);
        assert_eq!(disassemble(t, &load), "s_load_dword s2, s[4:5], -0x10");
        assert_eq!(load.offset, -16);
        let buf = decode(t, &[0xC022_0082, 0x001F_FFF0]);
        assert_eq!(
            disassemble(t, &buf),
            "s_buffer_load_dword s2, s[4:7], -0x10"
        );
    }
}
