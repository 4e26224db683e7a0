//! Host cost of enqueueing, for callgrind and for the clock: batches of 64 ordinary dispatches,
//! batches of 64 prepared dispatches, and single dispatches (with their doorbell), on an
//! emulated queue whose processor is stalled while the batch is built (so only the producer's
//! work is measured), then resumed and waited for.
//!
//! ```sh
//! cargo run --release --example enqueue_cost -- 2000          # ns per packet
//! valgrind --tool=callgrind --toggle-collect='*measured_*' \
//!     target/release/examples/enqueue_cost 200               # instructions per packet
//! ```
//! BENCHMARKS.md divides callgrind's total by the packets the measured functions enqueued
//! (printed at the end).

use kfdrt::emu::{EmuConfig, Preset, WorkGroup};
use kfdrt::{AqlQueue, AqlQueueOptions, Dispatch, Kernel, Kfd, PreparedDispatch, Submission};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Option<Duration> = Some(Duration::from_secs(60));

#[inline(never)]
fn measured_batch(q: &AqlQueue, k: &Kernel) -> Submission {
    let mut b = q.batch().expect("batch");
    for _ in 0..64 {
        b.dispatch(&Dispatch::linear(k, 1, 1)).expect("dispatch");
    }
    b.submit().expect("submit")
}

#[inline(never)]
fn measured_prepared(q: &AqlQueue, p: &PreparedDispatch) -> Submission {
    let mut b = q.batch().expect("batch");
    for _ in 0..64 {
        // SAFETY: the kernel takes no arguments, so no address it could use.
        unsafe { b.dispatch_prepared(p, &[]) };
    }
    b.submit().expect("submit")
}

#[inline(never)]
fn measured_single(q: &AqlQueue, k: &Kernel) -> Submission {
    q.dispatch(&Dispatch::linear(k, 1, 1)).expect("dispatch")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let kfd = Kfd::emulated(EmuConfig::new(Preset::Gfx90a, 1)).expect("emulated device");
    let emu = kfd.emulator().expect("emulator").clone();
    let gpu = kfd.gpu(0).expect("gpu");
    let kernel = gpu
        .emulated_kernel("empty", 0, Arc::new(|_: &WorkGroup<'_>| Ok(())))
        .expect("kernel");
    let queue = gpu
        .create_aql_queue(AqlQueueOptions::default().with_size_packets(1024))
        .expect("queue");
    let prepared = Dispatch::linear(&kernel, 1, 1).prepare().expect("prepare");
    let run = |what: &str, per: usize, f: &mut dyn FnMut() -> Submission| {
        let mut times = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            emu.faults().stall_queue(queue.id());
            let t = Instant::now();
            let s = f();
            times.push(t.elapsed());
            emu.faults().resume_queue(queue.id());
            s.wait(WAIT).expect("wait");
        }
        let m = median(times);
        println!(
            "{what}: {:.1} ns per packet (median of {rounds} rounds of {per}, processor stalled)",
            m.as_nanos() as f64 / per as f64
        );
    };
    run("batch of 64 dispatches", 64, &mut || {
        measured_batch(&queue, &kernel)
    });
    run("batch of 64 prepared dispatches", 64, &mut || {
        measured_prepared(&queue, &prepared)
    });
    run("single dispatch with doorbell", 1, &mut || {
        measured_single(&queue, &kernel)
    });
    println!(
        "packets per measured function: measured_batch {}, measured_prepared {}, measured_single {}",
        64 * rounds,
        64 * rounds,
        rounds
    );
}
