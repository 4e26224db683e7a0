//! The disassembler against llvm-objdump-16 (golden files written by tests/kernels/regen.sh)
//! and against llvm-mc-16's text for every opcode of each target (tools/opcodes-*.txt).

mod common;

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
        bad.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn compiled_kernels_match_llvm_objdump() {
    for (t, name) in [(Target::Gfx90a, "gfx90a"), (Target::Gfx942, "gfx942")] {
        let dir = kernels_dir();
        for obj in ["kernels", "kernels_v5", "abi", "ops"] {
            let (n, bad) = check_object(
                &dir.join(format!("{obj}-{name}.co")),
                &dir.join(format!("{obj}-{name}.dis")),
                t,
            );
            report(&format!("{obj}-{name}"), n, &bad);
        }
    }
}

#[test]
fn blit_kernels_match_llvm_objdump() {
    for (t, name) in [(Target::Gfx90a, "gfx90a"), (Target::Gfx942, "gfx942")] {
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
