//! Host instructions the interpreter spends on the benchmark workloads, for A/B comparisons
//! under callgrind (whose counts, unlike timings, do not vary between runs):
//!
//! ```text
//! cargo build --release -p kfd-emu-isa --example interp_cost
//! valgrind --tool=callgrind --toggle-collect='*measured_*' \
//!     target/release/examples/interp_cost 4
//! callgrind_annotate --inclusive=yes callgrind.out.* | grep measured_
//! ```
//!
//! Each workload runs once before it is measured (decoding its code into the code cache, and
//! checked against the host's result), then
//! `RUNS` times (default 4) inside its own `measured_*` function; divide that function's
//! inclusive count by the runs, and by the wave-instructions per run printed here.

#[allow(dead_code)]
#[path = "../benches/workloads/mod.rs"]
mod workloads;

use kfd_emu_isa::DispatchSetup;
use workloads::Bench;

/// `tag` keeps the three `measured_*` functions distinct: identical bodies would be folded
/// into one symbol, and callgrind would add their counts together.
fn runs_of(b: &Bench, s: &DispatchSetup, runs: u32, tag: u32) -> u64 {
    std::hint::black_box(tag);
    (0..runs).map(|_| b.run(s)).sum()
}

#[inline(never)]
fn measured_matmul(b: &Bench, s: &DispatchSetup, runs: u32) -> u64 {
    runs_of(b, s, runs, 1)
}

#[inline(never)]
fn measured_vector_add(b: &Bench, s: &DispatchSetup, runs: u32) -> u64 {
    runs_of(b, s, runs, 2)
}

#[inline(never)]
fn measured_blit(b: &Bench, s: &DispatchSetup, runs: u32) -> u64 {
    runs_of(b, s, runs, 3)
}

fn main() {
    let runs: u32 = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 4,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: interp_cost [RUNS > 0]");
            std::process::exit(2);
        }
    };
    let mm = workloads::matmul();
    let per_run = mm.bench.run(&mm.setup);
    mm.check();
    let total = measured_matmul(&mm.bench, &mm.setup, runs);
    println!("matmul_tiled 64x64: {per_run} wave-instructions per run, {runs} runs ({total})");
    let va = workloads::vector_add(1 << 18);
    let per_run = va.bench.run(&va.setup);
    va.check();
    let total = measured_vector_add(&va.bench, &va.setup, runs);
    println!("vector_add 256 Ki: {per_run} wave-instructions per run, {runs} runs ({total})");
    let bl = workloads::blit(1 << 20);
    let per_run = bl.bench.run(&bl.setup);
    bl.check();
    let total = measured_blit(&bl.bench, &bl.setup, runs);
    println!("blit copy 1 MiB: {per_run} wave-instructions per run, {runs} runs ({total})");
}
