//! Dispatch benchmarks on the emulated device:
//! - host cost per packet (build + publish, excluding the wait): a single dispatch (direct, and
//!   as a one-packet batch), batches of 64, batches of 64 prepared dispatches;
//! - empty round trip (submit a barrier packet, wait for its completion signal) with the packet
//!   processor spin-polling, with p50/p99 printed from 20 000 samples, beside the round trip of
//!   a cache line between two threads and the AQL handshake alone between two threads, both
//!   measured in the same run (the floors under any handshake and under this protocol);
//! - throughput of two producer threads submitting batches to one queue.
//!
//! `cargo bench --bench dispatch`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kfdrt::emu::{EmuConfig, Preset, WorkGroup};
use kfdrt::{AqlQueue, AqlQueueOptions, Dispatch, Kernel, Kfd};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "common/floors.rs"]
mod floors;

fn device(spin: bool) -> Kfd {
    let mut c = EmuConfig::new(Preset::Gfx90a, 1);
    c.spin_poll = spin;
    Kfd::builder().emulated(c).open().expect("emulated device")
}

fn setup(kfd: &Kfd) -> (AqlQueue, Kernel) {
    let gpu = kfd.gpu(0).expect("gpu");
    let kernel = gpu
        .emulated_kernel("empty", 0, Arc::new(|_: &WorkGroup<'_>| Ok(())))
        .expect("kernel");
    let queue = gpu
        .create_aql_queue(AqlQueueOptions::default().with_size_packets(1024))
        .expect("queue");
    (queue, kernel)
}

const WAIT: Option<Duration> = Some(Duration::from_secs(30));

fn host_cost(c: &mut Criterion) {
    let kfd = device(false);
    let (queue, kernel) = setup(&kfd);
    let mut g = c.benchmark_group("enqueue");
    for batch in [1u64, 64] {
        g.throughput(Throughput::Elements(batch));
        g.bench_function(format!("dispatch_batch_{batch}"), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    let t = Instant::now();
                    let mut bt = queue.batch().expect("batch");
                    for _ in 0..batch {
                        // Sizes known only at run time: the compiler must not fold the
                        // launch's validation and encoding away.
                        bt.dispatch(&Dispatch::linear(&kernel, black_box(1), black_box(1)))
                            .expect("dispatch");
                    }
                    let s = bt.submit().expect("submit");
                    spent += t.elapsed();
                    s.wait(WAIT).expect("wait");
                }
                spent
            })
        });
    }
    // A single dispatch the direct way (`AqlQueue::dispatch`: no batch, packet straight into
    // its slot), beside the one-packet batch above.
    g.throughput(Throughput::Elements(1));
    g.bench_function("dispatch_single", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let s = queue
                    .dispatch(&Dispatch::linear(&kernel, black_box(1), black_box(1)))
                    .expect("dispatch");
                spent += t.elapsed();
                s.wait(WAIT).expect("wait");
            }
            spent
        })
    });
    // The same, with the queue's processor stalled while the dispatch is timed, as in
    // `enqueue_cost`: the difference from `dispatch_single` is what a processor polling the
    // same queue (its write index, its slots) adds to the producer's stores.
    let emu = kfd.emulator().expect("emulator").clone();
    g.bench_function("dispatch_single_processor_stalled", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                emu.faults().stall_queue(queue.id());
                let t = Instant::now();
                let s = queue
                    .dispatch(&Dispatch::linear(&kernel, black_box(1), black_box(1)))
                    .expect("dispatch");
                spent += t.elapsed();
                emu.faults().resume_queue(queue.id());
                s.wait(WAIT).expect("wait");
            }
            spent
        })
    });
    // The same batches with the dispatch prepared once (validated and encoded).
    let prepared = Dispatch::linear(&kernel, 1, 1).prepare().expect("prepare");
    g.throughput(Throughput::Elements(64));
    g.bench_function("prepared_dispatch_batch_64", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let mut bt = queue.batch().expect("batch");
                for _ in 0..64 {
                    // SAFETY: no arguments, so no address the kernel could use.
                    unsafe { bt.dispatch_prepared(&prepared, &[]) };
                }
                let s = bt.submit().expect("submit");
                spent += t.elapsed();
                s.wait(WAIT).expect("wait");
            }
            spent
        })
    });
    g.finish();
}

fn round_trip(c: &mut Criterion) {
    // The limits, measured before the emulated device (whose spinning processor would share the
    // two cores) exists.
    let lines = floors::cache_line_round_trips(200_000);
    let line_p50 = floors::quantile(&lines, 0.5);
    println!(
        "round_trip/cache_line (two threads, two cache lines) over {} samples: p50 {:?}  p99 {:?}",
        lines.len(),
        line_p50,
        floors::quantile(&lines, 0.99)
    );
    let protocol = floors::aql_protocol_round_trips(200_000);
    let protocol_p50 = floors::quantile(&protocol, 0.5);
    println!(
        "round_trip/aql_protocol (the AQL handshake alone, two threads) over {} samples: p50 {:?}  p99 {:?}",
        protocol.len(),
        protocol_p50,
        floors::quantile(&protocol, 0.99)
    );
    let kfd = device(true);
    let (queue, _kernel) = setup(&kfd);
    let mut g = c.benchmark_group("round_trip");
    g.bench_function("empty_barrier_spin_poll", |b| {
        b.iter(|| {
            queue
                .barrier_and(&[])
                .expect("submit")
                .wait(WAIT)
                .expect("wait")
        })
    });
    g.finish();
    // Percentiles criterion does not report.
    let mut samples: Vec<Duration> = (0..20_000)
        .map(|_| {
            let t = Instant::now();
            queue
                .barrier_and(&[])
                .expect("submit")
                .wait(WAIT)
                .expect("wait");
            t.elapsed()
        })
        .collect();
    samples.sort_unstable();
    let p = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "round_trip/empty_barrier_spin_poll percentiles over {} samples: p50 {:?}  p99 {:?}  max {:?}",
        samples.len(),
        p(0.50),
        p(0.99),
        p(1.0)
    );
    println!(
        "round_trip: empty barrier p50 / cache-line round trip p50 = {:.2} (target <= 2); \
         / AQL protocol alone p50 = {:.2}",
        p(0.50).as_secs_f64() / line_p50.as_secs_f64(),
        p(0.50).as_secs_f64() / protocol_p50.as_secs_f64()
    );
}

fn two_producers(c: &mut Criterion) {
    let kfd = device(false);
    let (queue, kernel) = setup(&kfd);
    let kernel = Arc::new(kernel);
    const BATCHES: u64 = 50;
    const BATCH: u64 = 64;
    let mut g = c.benchmark_group("throughput");
    g.throughput(Throughput::Elements(2 * BATCHES * BATCH));
    g.sample_size(10);
    g.bench_function("two_producers_batches_of_64", |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                let threads: Vec<_> = (0..2)
                    .map(|_| {
                        let (queue, kernel) = (queue.clone(), kernel.clone());
                        std::thread::spawn(move || {
                            let mut last = None;
                            for _ in 0..BATCHES {
                                let mut bt = queue.batch().expect("batch");
                                for _ in 0..BATCH {
                                    bt.dispatch(&Dispatch::linear(&kernel, 1, 1))
                                        .expect("dispatch");
                                }
                                if let Some(s) = last.replace(bt.submit().expect("submit")) {
                                    let s: kfdrt::Submission = s;
                                    s.wait(WAIT).expect("wait");
                                }
                            }
                            if let Some(s) = last {
                                s.wait(WAIT).expect("wait");
                            }
                        })
                    })
                    .collect();
                for th in threads {
                    th.join().expect("producer");
                }
            }
            t.elapsed()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = host_cost, round_trip, two_producers
}
criterion_main!(benches);
