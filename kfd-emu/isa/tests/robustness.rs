//! Hostile input never panics or hangs: random words decode and disassemble, and random
//! programs (with random register contents) run to an error or the end within the budget.
//! The dev profile keeps overflow checks on, so arithmetic overflow counts as a failure here.

use crate::common;

use common::gpu::*;
use kfd_emu_isa::decode::decode;
use kfd_emu_isa::disasm::{disassemble, disassemble_all};
use kfd_emu_isa::{KernelDescriptor, Memory, Target};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn any_words_decode(w0 in any::<u32>(), w1 in any::<u32>(), w2 in any::<u32>()) {
        for t in Target::ALL {
            let i = decode(t, &[w0, w1, w2]);
            prop_assert!((1..=3).contains(&i.len));
            let _ = disassemble(t, &i);
        }
    }
}

/// First words of gfx90a's listed encodings whose format passes `keep`.
fn listing(keep: impl Fn(&str) -> bool) -> Vec<u32> {
    listing_of("opcodes-gfx90a.txt", keep)
}

/// First words of the encodings in `file` (a `tools/opcodes-*.txt` listing) whose format passes
/// `keep`.
fn listing_of(file: &str, keep: impl Fn(&str) -> bool) -> Vec<u32> {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tools")
            .join(file),
    )
    .unwrap()
    .lines()
    .filter(|l| keep(l.split_whitespace().next().unwrap_or("")))
    .filter_map(|l| u32::from_str_radix(l.split_whitespace().nth(2)?, 16).ok())
    .collect()
}

/// ALU-only programs (no memory, no branches out): they run deep rather than faulting early.
fn alu_program() -> impl Strategy<Value = Vec<u32>> {
    // Single-dword scalar and vector ALU encodings, minus program control.
    let words = listing(|f| matches!(f, "SOP1" | "SOP2" | "SOPC" | "VOP1" | "VOP2" | "VOPC"));
    let words: Vec<u32> = words
        .into_iter()
        // Keep setpc/swappc/getpc-style control out; random operands are enough chaos.
        .filter(|w| w >> 23 != 0x17D || !matches!((w >> 8) & 0xFF, 0x1D..=0x1F))
        .collect();
    let word = (0..words.len(), any::<u8>()).prop_map(move |(i, noise)| {
        // Vary the source operand among registers and inline constants.
        (words[i] & !0xFF) | u32::from(noise.min(0xC0))
    });
    prop::collection::vec(word, 1..64)
}

/// Words biased towards real encodings: a valid opcode word from the listing with random
/// operand bits, or a random word.
fn program() -> impl Strategy<Value = Vec<u32>> {
    program_from(listing(|_| true))
}

fn program_from(listing: Vec<u32>) -> impl Strategy<Value = Vec<u32>> {
    let word = prop_oneof![
        3 => (0..listing.len(), any::<u32>()).prop_map(move |(i, noise)| {
            // Keep the encoding and opcode bits, randomise operand fields a little.
            listing[i] ^ (noise & 0x0000_01FF)
        }),
        1 => any::<u32>(),
    ];
    prop::collection::vec(word, 1..48)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn alu_programs_run_without_panicking(
        code in alu_program(),
        target in prop_oneof![Just(Target::Gfx90a), Just(Target::Gfx942)],
    ) {
        let mut gpu = Gpu::new(target);
        let desc = KernelDescriptor {
            compute_pgm_rsrc1: 31,
            compute_pgm_rsrc2: 2 << 1 | 1 << 7,
            compute_pgm_rsrc3: 31,
            kernel_code_properties: 1 << 3,
            ..KernelDescriptor::default()
        };
        let mut words = code.clone();
        words.push(0xBF81_0000);
        let ko = gpu.load_program(&desc, &words);
        let mut l = Launch::linear(64, 64, Args::new().ptr(0).done());
        l.scratch = None;
        l.budget = 5000;
        l.threads = 1;
        let _ = gpu.run(ko, &l);
    }

    #[test]
    fn any_program_runs_without_panicking(
        code in program(),
        seed in any::<u64>(),
        target in prop_oneof![Just(Target::Gfx90a), Just(Target::Gfx942)],
    ) {
        run_random(target, &code, seed, 1 << 3);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// The same for GFX11 code, in wave32 and wave64.
    #[test]
    fn any_gfx11_program_runs_without_panicking(
        code in program_from(listing_of("opcodes-gfx1100.txt", |_| true)),
        seed in any::<u64>(),
        wave32 in any::<bool>(),
    ) {
        run_random(Target::Gfx1100, &code, seed, 1 << 3 | u16::from(wave32) << 10);
    }
}

/// Runs `code` as a one-dispatch kernel (two work-groups of 64, scratch, a buffer of random
/// bytes as its argument) with the descriptor's `properties`; whatever happens is fine but a
/// panic or a hang.
fn run_random(target: Target, code: &[u32], seed: u64, properties: u16) {
    let mut gpu = Gpu::new(target);
    let desc = KernelDescriptor {
        group_segment_fixed_size: 256,
        kernarg_size: 8,
        compute_pgm_rsrc1: 31,
        compute_pgm_rsrc2: 2 << 1 | 1 << 7,
        compute_pgm_rsrc3: if target.unified_vgpr_file() { 31 } else { 0 },
        kernel_code_properties: properties,
        ..KernelDescriptor::default()
    };
    let ko = gpu.load_program(&desc, code);
    let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    let _ = disassemble_all(target, &bytes);
    // A data buffer the program may or may not find.
    let data = gpu.alloc(4096);
    let mut rng = Rng(seed | 1);
    let junk: Vec<u8> = (0..4096).map(|_| rng.next_u32() as u8).collect();
    gpu.mem.write(data, &junk).unwrap();
    let mut l = Launch::linear(128, 64, Args::new().ptr(data).done());
    l.scratch = Some(1 << 16);
    l.budget = 5000;
    l.threads = 1;
    let _ = gpu.run(ko, &l);
}

/// An MFMA whose cbsz/abid name a block past the shape's (`v_mfma_f32_32x32x4f16` has two;
/// cbsz 2 abid 2 asks for the third) read lane 64 and panicked; it is an illegal operand.
#[test]
fn an_mfma_broadcast_past_its_blocks_is_refused() {
    let t = Target::Gfx90a;
    let mut gpu = Gpu::new(t);
    let desc = KernelDescriptor {
        compute_pgm_rsrc1: 31,
        compute_pgm_rsrc2: 2 << 1 | 1 << 7,
        compute_pgm_rsrc3: 31,
        kernel_code_properties: 1 << 3,
        ..KernelDescriptor::default()
    };
    let ko = gpu.load_program(&desc, &[0xD3C8_1200, 0xD0FE_0108, 0xBF81_0000]);
    let mut l = Launch::linear(64, 64, Args::new().ptr(0).done());
    l.scratch = None;
    let err = gpu.run(ko, &l).unwrap_err();
    assert!(
        matches!(err, kfd_emu_isa::WaveError::IllegalOperand { .. }),
        "{err}"
    );
}
