//! Host cost of enqueueing, for callgrind and for the clock: batches of 64 ordinary dispatches,
//! batches of 64 prepared dispatches, and single dispatches (with their doorbell, directly and
//! through a one-packet batch), on an
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
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Option<Duration> = Some(Duration::from_secs(60));
const SINGLES: usize = 8;

#[inline(never)]
fn measured_batch(q: &AqlQueue, k: &Kernel) -> Submission {
    let mut b = q.batch().expect("batch");
    for _ in 0..64 {
        // Sizes known only at run time: the compiler must not fold the launch's validation
        // and encoding away.
        b.dispatch(&Dispatch::linear(k, black_box(1), black_box(1)))
            .expect("dispatch");
    }
    b.submit().expect("submit")
}

/// The same with a 3-D launch whose every size is known only at run time (nothing about its
/// shape folds away).
#[inline(never)]
fn measured_batch_3d(q: &AqlQueue, k: &Kernel) -> Submission {
    let mut b = q.batch().expect("batch");
    for _ in 0..64 {
        b.dispatch(&Dispatch::new(
            k,
            black_box([1, 1, 1]),
            black_box([1, 1, 1]),
        ))
        .expect("dispatch");
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
    q.dispatch(&Dispatch::linear(k, black_box(1), black_box(1)))
        .expect("dispatch")
}

/// The same launch through a one-packet [`kfdrt::Batch`], for comparison with the direct path.
#[inline(never)]
fn measured_single_batch(q: &AqlQueue, k: &Kernel) -> Submission {
    let mut b = q.batch().expect("batch");
    b.dispatch(&Dispatch::linear(k, black_box(1), black_box(1)))
        .expect("dispatch");
    b.submit().expect("submit")
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
    // Rounds of the measured functions alternate, so a change of machine speed during the run
    // hits them alike. Single dispatches go eight to a round (each with its own doorbell): one
    // alone is shorter than this VM's clock resolves well.
    type Job<'a> = (&'a str, usize, &'a mut dyn FnMut(&mut Vec<Submission>));
    let run = |jobs: &mut [Job<'_>]| {
        let mut times = vec![Vec::with_capacity(rounds); jobs.len()];
        let mut subs = Vec::with_capacity(SINGLES);
        for _ in 0..rounds {
            for ((_, _, f), times) in jobs.iter_mut().zip(&mut times) {
                emu.faults().stall_queue(queue.id());
                let t = Instant::now();
                f(&mut subs);
                times.push(t.elapsed());
                emu.faults().resume_queue(queue.id());
                for s in subs.drain(..) {
                    s.wait(WAIT).expect("wait");
                }
            }
        }
        for ((what, per, _), times) in jobs.iter().zip(times) {
            let m = median(times);
            println!(
                "{what}: {:.1} ns per packet (median of {rounds} rounds of {per}, processor stalled)",
                m.as_nanos() as f64 / *per as f64
            );
        }
    };
    run(&mut [
        ("batch of 64 dispatches (1-D)", 64, &mut |s| {
            s.push(measured_batch(&queue, &kernel))
        }),
        (
            "batch of 64 dispatches (3-D, every size opaque)",
            64,
            &mut |s| s.push(measured_batch_3d(&queue, &kernel)),
        ),
        ("batch of 64 prepared dispatches", 64, &mut |s| {
            s.push(measured_prepared(&queue, &prepared))
        }),
        (
            "single dispatch with doorbell (AqlQueue::dispatch)",
            SINGLES,
            &mut |s| {
                for _ in 0..SINGLES {
                    s.push(measured_single(&queue, &kernel));
                }
            },
        ),
        (
            "single dispatch with doorbell, through a one-packet Batch",
            SINGLES,
            &mut |s| {
                for _ in 0..SINGLES {
                    s.push(measured_single_batch(&queue, &kernel));
                }
            },
        ),
    ]);
    println!(
        "packets per measured function: measured_batch {}, measured_batch_3d {}, measured_prepared {}, measured_single {}, measured_single_batch {}",
        64 * rounds,
        64 * rounds,
        64 * rounds,
        SINGLES * rounds,
        SINGLES * rounds
    );
}
