//! Compares kfd-emu-isa's disassembly of code objects with llvm-objdump's, instruction for
//! instruction (used by `tools/library_disasm.py` on Debian's ROCm libraries).
//!
//!     compare_disasm <target> <object> <listing> [<object> <listing> ...]
//!
//! A listing has one line per instruction: its address (hex) and llvm-objdump's text. Prints
//! every difference, grouped by LLVM mnemonic with a count and the first example of each, then
//! `TOTAL <instructions> <differences>`.

use kfd_emu_isa::decode::decode;
use kfd_emu_isa::disasm::disassemble;
use kfd_emu_isa::Target;
use object::{Object, ObjectSection};
use std::collections::BTreeMap;

fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (target, files) = args
        .split_first()
        .ok_or("usage: compare_disasm <target> ...")?;
    let target = Target::from_name(target).ok_or("unknown target")?;
    let mut total = 0u64;
    let mut bad = 0u64;
    // LLVM mnemonic -> (count, first example).
    let mut by_mnemonic: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for pair in files.chunks(2) {
        let [co, listing] = pair else {
            return Err("objects and listings come in pairs".into());
        };
        let data = std::fs::read(co)?;
        let file = object::File::parse(&*data)?;
        let text = file.section_by_name(".text").ok_or("no .text")?;
        let (base, bytes) = (text.address(), text.data()?);
        for line in std::fs::read_to_string(listing)?.lines() {
            let Some((addr, want)) = line.split_once(' ') else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let Some(off) = addr.checked_sub(base).map(|o| o as usize) else {
                continue;
            };
            let words: Vec<u32> = bytes
                .get(off..)
                .unwrap_or_default()
                .chunks_exact(4)
                .take(3)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            if words.is_empty() {
                continue;
            }
            total += 1;
            let inst = decode(target, &words);
            let got = disassemble(target, &inst);
            if squeeze(&got) != squeeze(want) {
                bad += 1;
                let mnemonic = want.split_whitespace().next().unwrap_or("").to_owned();
                let e = by_mnemonic.entry(mnemonic).or_insert_with(|| {
                    (
                        0,
                        format!(
                            "{co}@{addr:#x} {:08x?}: want `{want}`, got `{got}`",
                            inst.word_slice()
                        ),
                    )
                });
                e.0 += 1;
            }
        }
    }
    for (m, (n, example)) in &by_mnemonic {
        println!("{m}: {n} ({example})");
    }
    println!("TOTAL {total} {bad}");
    Ok(())
}
