//! The disassembler against llvm-objdump-16 (golden files written by tests/kernels/regen.sh)
//! and against llvm-mc-16's text for every opcode of each target (tools/opcodes-*.txt).

use crate::common;

use common::elf::{blit_dir, kernels_dir, CodeObject};
use kfd_emu_isa::decode::decode;
use kfd_emu_isa::disasm::disassemble;
use kfd_emu_isa::Target;
use std::path::Path;

fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Compares every instruction listed in `golden` with our text; returns the mismatches.
fn check_object(co_path: &Path, golden: &Path, target: Target) -> (usize, Vec<String>) {
    let co = CodeObject::load(co_path);
    assert_eq!(Target::from_elf_flags(co.e_flags), Some(target));
    let (base, text) = &co.text;
    let golden = std::fs::read_to_string(golden).expect("golden");
    let mut bad = Vec::new();
    let mut count = 0;
    for line in golden.lines() {
        let (addr, want) = line.split_once(' ').expect("address and text");
        let addr = u64::from_str_radix(addr, 16).expect("hex address");
        let off = (addr - base) as usize;
        let words: Vec<u32> = text[off..]
            .chunks_exact(4)
            .take(3)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let inst = decode(target, &words);
        let got = disassemble(target, &inst);
        count += 1;
        if squeeze(&got) != squeeze(want) {
            bad.push(format!(
                "{addr:#x} {:08x?}: want `{want}`, got `{got}`",
                inst.word_slice()
            ));
        }
    }
    (count, bad)
}

fn report(what: &str, count: usize, bad: &[String]) {
    assert!(count > 0, "{what}: empty golden");
    assert!(
        bad.is_empty(),
        "{what}: {} of {count} instructions differ:\n{}",
        bad.len(),
        bad.iter()
            .take(std::env::var("KFD_ISA_SHOW_ALL").map_or(40, |_| usize::MAX))
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn compiled_kernels_match_llvm_objdump() {
    for (t, name) in [(Target::Gfx90a, "gfx90a"), (Target::Gfx942, "gfx942")] {
        let dir = kernels_dir();
        for obj in [
            "kernels",
            "kernels_v5",
            "abi",
            "ops",
            "mfma",
            "formats",
            "lds_dma",
        ] {
            let (n, bad) = check_object(
                &dir.join(format!("{obj}-{name}.co")),
                &dir.join(format!("{obj}-{name}.dis")),
                t,
            );
            report(&format!("{obj}-{name}"), n, &bad);
        }
    }
    // hipcc's gfx1100 (wave32) build of the same kernels.
    let dir = kernels_dir();
    let (n, bad) = check_object(
        &dir.join("kernels-gfx1100.co"),
        &dir.join("kernels-gfx1100.dis"),
        Target::Gfx1100,
    );
    report("kernels-gfx1100", n, &bad);
    let (n, bad) = check_object(
        &dir.join("wmma-gfx1100.co"),
        &dir.join("wmma-gfx1100.dis"),
        Target::Gfx1100,
    );
    report("wmma-gfx1100", n, &bad);
    // ROCm's device math library (ocml) as hipcc links it, and the GFX11 instruction cases.
    for (obj, t) in [
        ("math-gfx1100", Target::Gfx1100),
        ("math-gfx90a", Target::Gfx90a),
        ("ops11-gfx1100", Target::Gfx1100),
        ("lds_dma-gfx1100", Target::Gfx1100),
    ] {
        let (n, bad) = check_object(
            &dir.join(format!("{obj}.co")),
            &dir.join(format!("{obj}.dis")),
            t,
        );
        report(obj, n, &bad);
    }
    let (n, bad) = check_object(
        &dir.join("kernels_v5-gfx1100.co"),
        &dir.join("kernels_v5-gfx1100.dis"),
        Target::Gfx1100,
    );
    report("kernels_v5-gfx1100", n, &bad);
}

#[test]
fn fp8_mfma_kernels_match_llvm_objdump() {
    let dir = kernels_dir();
    let (n, bad) = check_object(
        &dir.join("mfma_fp8-gfx942.co"),
        &dir.join("mfma_fp8-gfx942.dis"),
        Target::Gfx942,
    );
    report("mfma_fp8-gfx942", n, &bad);
    let (n, bad) = check_object(
        &dir.join("mfma_sparse-gfx942.co"),
        &dir.join("mfma_sparse-gfx942.dis"),
        Target::Gfx942,
    );
    report("mfma_sparse-gfx942", n, &bad);
    let (n, bad) = check_object(
        &dir.join("images-gfx90a.co"),
        &dir.join("images-gfx90a.dis"),
        Target::Gfx90a,
    );
    report("images-gfx90a", n, &bad);
}

#[test]
fn blit_kernels_match_llvm_objdump() {
    for (t, name) in [
        (Target::Gfx90a, "gfx90a"),
        (Target::Gfx942, "gfx942"),
        (Target::Gfx1100, "gfx1100"),
    ] {
        let (n, bad) = check_object(
            &blit_dir().join(format!("{name}.co")),
            &kernels_dir().join(format!("blit-{name}.dis")),
            t,
        );
        report(&format!("blit {name}"), n, &bad);
    }
}

#[test]
fn every_opcode_matches_llvm_mc() {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools");
    for (t, file) in [
        (Target::Gfx90a, "opcodes-gfx90a.txt"),
        (Target::Gfx942, "opcodes-gfx940.txt"),
        (Target::Gfx1100, "opcodes-gfx1100.txt"),
    ] {
        let listing = std::fs::read_to_string(tools.join(file)).expect("opcode listing");
        let mut bad = Vec::new();
        let mut count = 0;
        for line in listing.lines() {
            let (head, want) = line.split_once(" | ").expect("listing line");
            let words: Vec<u32> = head
                .split_whitespace()
                .skip(2)
                .map(|w| u32::from_str_radix(w, 16).expect("hex word"))
                .collect();
            let inst = decode(t, &words);
            let got = disassemble(t, &inst);
            count += 1;
            if squeeze(&got) != squeeze(want) {
                bad.push(format!("{head}: want `{want}`, got `{got}`"));
            }
        }
        report(file, count, &bad);
    }
}

/// Corpus entries where LLVM is not the reference, by their words, with why: the test checks
/// they still differ, so the list cannot outlive the difference.
const LLVM_QUIRKS: &[(&str, &str)] = &[
    // A 16-bit integer operation with a float inline constant: llvm-mc --show-encoding
    // re-encodes the constant as a literal (2 dwords); the instruction decoded is 1 dword, and
    // the hardware reads the inline constant. The text (the constant's f16 bits) matches.
    (
        "64fe00f0 09e50086 68b1520a",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d5340f4 22142da3 92d832c6",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d5bd0f3 49b70295 7b9162d1",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d7374f8 2907cda9 2de3ec0a",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d7c40f1 f0fe02bb e09c58da",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d7e00f8 09ae008c 878c5182",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d4b40f4 22142da3 92d832c6",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d53d0f3 49b70295 7b9162d1",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d6b74f8 2907cda9 2de3ec0a",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d7440f1 f0fe02bb e09c58da",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d7600f8 09ae008c 878c5182",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    // The same on gfx1100 (VOPC on i16/u16).
    (
        "7c66fcf0 db2742b1 25abcc25",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7c74eef4 ef205a3b 12e27292",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    (
        "7d649af0 6081fdf3 fe3b579c",
        "f16 inline constant on an i16 operand: re-encoded length",
    ),
    // GFX11 buffer SOFFSET code 255: LLVM's disassembler reads a literal dword after the
    // instruction, which no memory instruction has (llvm-mc refuses to assemble one); the
    // decoder refuses the encoding.
    (
        "e0c384ed ff8f5bac 9fffae50",
        "buffer SOFFSET 255: LLVM reads a literal memory instructions do not have",
    ),
    (
        "e9033a8f ff4571ec 04ef6a54",
        "buffer SOFFSET 255: LLVM reads a literal memory instructions do not have",
    ),
    // v_cvt_pk_u8_f32's second and third sources are u32 with integer input modifiers: LLVM
    // prints the neg bit as `sext(..)` there and ignores abs; the decoder types the
    // instruction by its last suffix (f32) and prints float modifiers.
    (
        "d1dd3af8 a2a0593e 07fa52b9",
        "v_cvt_pk_u8_f32: per-operand modifier types",
    ),
    (
        "d1ddef14 4192df1c fc9c738f",
        "v_cvt_pk_u8_f32: per-operand modifier types",
    ),
    (
        "d1dd57e7 e4e3afe6 a0b2e0a9",
        "v_cvt_pk_u8_f32: per-operand modifier types",
    ),
    // dst_unused 3 is reserved: LLVM prints it as UNUSED_PAD, the decoder as PRESERVE.
    ("001008f9 e1251b5c 59c683db", "SDWA dst_unused 3 (reserved)"),
    ("5a1008f9 b2847c3e b3a5f708", "SDWA dst_unused 3 (reserved)"),
];

/// Operand forms of every opcode (tools/operand_corpus.py: the operand fields set at random;
/// GFX9's DPP and SDWA forms, GFX11's DPP16/DPP8 forms of VOP1/VOP2/VOPC/VOP3/VOP3P and its
/// VOP3/VOPD literals; llvm-mc-16's length and text for each, gfx1100's in wave32): the decoder
/// takes as many dwords as LLVM and prints what it prints, apart from the listed LLVM quirks.
#[test]
fn operand_forms_match_llvm_mc() {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools");
    for (t, file) in [
        (Target::Gfx90a, "corpus-gfx90a.txt"),
        (Target::Gfx942, "corpus-gfx940.txt"),
        (Target::Gfx1100, "corpus-gfx1100.txt"),
        // Image instructions (gfx90a only: gfx94x has none), from tools/mimg_corpus.py.
        (Target::Gfx90a, "corpus-mimg-gfx90a.txt"),
    ] {
        let corpus = std::fs::read_to_string(tools.join(file)).expect("corpus");
        let mut bad = Vec::new();
        let mut count = 0;
        for line in corpus.lines() {
            let mut parts = line.splitn(3, " | ");
            let (Some(head), Some(len), Some(want)) = (parts.next(), parts.next(), parts.next())
            else {
                panic!("corpus line: {line}");
            };
            let words: Vec<u32> = head
                .split_whitespace()
                .map(|w| u32::from_str_radix(w, 16).expect("hex word"))
                .collect();
            let len: u8 = len.parse().expect("length");
            let inst = decode(t, &words);
            let got = disassemble(t, &inst);
            count += 1;
            let differs = inst.len != len || squeeze(&got) != squeeze(want);
            let quirk = LLVM_QUIRKS.iter().find(|(w, _)| *w == head);
            match (differs, quirk) {
                (true, None) => bad.push(format!(
                    "{head}: want {len} dwords `{want}`, got {} `{got}`",
                    inst.len
                )),
                (false, Some((_, why))) => bad.push(format!(
                    "{head}: listed as an LLVM quirk ({why}) but matches"
                )),
                _ => {}
            }
        }
        report(file, count, &bad);
    }
}

/// Forms the random operand corpus did not draw: an SMFMAC writing AGPRs keeps its compression
/// index in a VGPR (acc_cd moves only C/D), and abid. Encodings and text from
/// `llvm-mc-16 -arch=amdgcn -mcpu=gfx940 --show-encoding`.
#[test]
fn sparse_and_xf32_forms_match_llvm_mc() {
    let cases: [(&[u32], &str); 4] = [
        (
            &[0xd3e2_8000, 0x041a_0500],
            "v_smfmac_f32_16x16x32_f16 a[0:3], v[0:1], v[2:5], v6",
        ),
        (
            &[0xd3e2_0800, 0x042a_0d04],
            "v_smfmac_f32_16x16x32_f16 v[0:3], v[4:5], v[6:9], v10 abid:1",
        ),
        (
            &[0xd3be_0000, 0x0402_0d04],
            "v_mfma_f32_16x16x8_xf32 v[0:3], v[4:5], v[6:7], v[0:3]",
        ),
        (
            &[0xd3be_8000, 0x0402_0d04],
            "v_mfma_f32_16x16x8_xf32 a[0:3], v[4:5], v[6:7], a[0:3]",
        ),
    ];
    for (words, want) in cases {
        let inst = decode(Target::Gfx942, words);
        assert_eq!(inst.len, 2, "{want}");
        assert_eq!(squeeze(&disassemble(Target::Gfx942, &inst)), squeeze(want));
    }
}
