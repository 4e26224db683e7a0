//! How costs grow with queues and GPUs (issue 18 item 5): for 1, 2 and 8 emulated GPUs and 1, 8,
//! 64 and 128 AQL queues per GPU,
//! - the host cost per packet of batches of 64 empty dispatches, submitted round-robin over
//!   every queue of every GPU (time spent in building and submitting, waits excluded);
//! - the empty-barrier round trip (submit, wait for the completion) on one queue while all the
//!   others exist and idle, p50, p99 and mean of 20 000 (after a 50 ms idle spell, whose
//!   wake-up lands in the first ones).
//!
//! `cargo bench --bench scaling` prints a Markdown table.

use kfdrt::emu::{EmuConfig, Preset, WorkGroup};
use kfdrt::{AqlQueue, AqlQueueOptions, Dispatch, Kfd};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Option<Duration> = Some(Duration::from_secs(60));
const BATCH: usize = 64;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn measure(gpus: usize, queues: usize) -> (f64, Duration, Duration, Duration) {
    let kfd = Kfd::builder()
        .emulated(EmuConfig::new(Preset::Gfx90a, gpus))
        .open()
        .expect("device");
    let mut all: Vec<(AqlQueue, Arc<kfdrt::Kernel>)> = Vec::new();
    for gpu in kfd.gpus() {
        let kernel = Arc::new(
            gpu.emulated_kernel("empty", 0, Arc::new(|_: &WorkGroup<'_>| Ok(())))
                .expect("kernel"),
        );
        for _ in 0..queues {
            let q = gpu
                .create_aql_queue(AqlQueueOptions::default().with_size_packets(256))
                .expect("queue");
            all.push((q, kernel.clone()));
        }
    }
    // Enqueue: 4 batches per queue, round-robin, waits excluded.
    let rounds = 4.max(512 / all.len());
    let mut spent = Duration::ZERO;
    let mut packets = 0usize;
    for _ in 0..rounds {
        let mut pending = Vec::with_capacity(all.len());
        for (q, k) in &all {
            let t = Instant::now();
            let mut b = q.batch().expect("batch");
            for _ in 0..BATCH {
                b.dispatch(&Dispatch::linear(k, 1, 1)).expect("dispatch");
            }
            let s = b.submit().expect("submit");
            spent += t.elapsed();
            packets += BATCH;
            pending.push(s);
        }
        for s in pending {
            s.wait(WAIT).expect("wait");
        }
    }
    let per_packet = spent.as_secs_f64() * 1e9 / packets as f64;
    // Round trip on the first queue, the others idle.
    std::thread::sleep(Duration::from_millis(50));
    let q = &all[0].0;
    let mut t: Vec<Duration> = (0..20_000)
        .map(|_| {
            let start = Instant::now();
            q.barrier_and(&[])
                .expect("barrier")
                .wait(WAIT)
                .expect("wait");
            start.elapsed()
        })
        .collect();
    let mean = t.iter().sum::<Duration>() / t.len() as u32;
    t.sort();
    (per_packet, percentile(&t, 0.5), percentile(&t, 0.99), mean)
}

fn main() {
    println!("| GPUs | queues per GPU | queues | host ns per packet (batches of 64) | round trip p50 | round trip p99 | round trip mean |");
    println!("|---|---|---|---|---|---|---|");
    for gpus in [1, 2, 8] {
        for queues in [1, 8, 64, 128] {
            let (ns, p50, p99, mean) = measure(gpus, queues);
            println!(
                "| {gpus} | {queues} | {} | {ns:.1} | {p50:.2?} | {p99:.2?} | {mean:.2?} |",
                gpus * queues
            );
        }
    }
}
