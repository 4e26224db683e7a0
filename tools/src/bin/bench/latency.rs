//! Dispatch latency: round trips of an empty kernel and of a barrier packet, batch throughput,
//! launch-to-start from the CP's timestamps, and how dispatch rate scales with queues.

use crate::stats::Samples;
use kfdrt::{AqlQueue, AqlQueueOptions, Dispatch, Gpu, Kernel, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How long one round trip may take before the run is declared hung.
const TIMEOUT: Option<Duration> = Some(Duration::from_secs(30));
/// Round trips run and discarded before measuring (queue, caches and threads warm).
const WARM_UP: usize = 50;
/// Dispatches per batch in the throughput run.
const BATCH: usize = 64;

/// What the latency run measured.
pub struct Latency {
    /// Submit an empty kernel and wait for its completion signal.
    pub dispatch: Samples,
    /// Submit a barrier-AND packet with no dependencies and wait.
    pub barrier: Samples,
    /// Per packet, of batches of [`BATCH`] empty dispatches rung with one doorbell.
    pub batch_per_packet: Samples,
    /// From the host's submit to the CP's start timestamp (profiled queue).
    pub launch_to_start: Option<Samples>,
    /// The CP's end minus start timestamp of the empty kernel.
    pub execution: Option<Samples>,
}

/// The monotonic raw clock KFD's clock counters report, in ns.
fn raw_now_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write; CLOCK_MONOTONIC_RAW exists on every Linux KFD
    // runs on.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn round_trips(n: usize, mut one: impl FnMut() -> Result<()>) -> Result<Samples> {
    for _ in 0..WARM_UP.min(n) {
        one()?;
    }
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        one()?;
        times.push(t.elapsed());
    }
    Ok(Samples::of(&times))
}

pub fn measure(gpu: &Gpu, kernel: &Kernel, samples: usize) -> Result<Latency> {
    let queue = gpu.create_aql_queue(AqlQueueOptions::default())?;
    let empty = Dispatch::linear(kernel, 1, 1);
    let dispatch = round_trips(samples, || queue.dispatch(&empty)?.wait(TIMEOUT))?;
    let barrier = round_trips(samples, || queue.barrier_and(&[])?.wait(TIMEOUT))?;
    let batches = (samples / BATCH).max(10);
    let mut per_packet = Vec::with_capacity(batches);
    for i in 0..batches + 2 {
        let t = Instant::now();
        let mut b = queue.batch()?;
        for _ in 0..BATCH {
            b.dispatch(&empty)?;
        }
        b.submit()?.wait(TIMEOUT)?;
        if i >= 2 {
            per_packet.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        }
    }
    let (launch_to_start, execution) = match timestamps(gpu, &empty, samples.min(500)) {
        Ok(Some((l, e))) => (Some(l), Some(e)),
        Ok(None) => (None, None),
        Err(e) => {
            eprintln!("kfdrt-bench: launch-to-start not measured: {e}");
            (None, None)
        }
    };
    Ok(Latency {
        dispatch,
        barrier,
        batch_per_packet: Samples::new(per_packet),
        launch_to_start,
        execution,
    })
}

/// Launch-to-start and execution time from the CP's start and end timestamps, put on the host
/// clock with a clock-counter sample taken before each submit. `None` when the GPU's timestamp
/// rate is unknown.
fn timestamps(gpu: &Gpu, empty: &Dispatch<'_>, n: usize) -> Result<Option<(Samples, Samples)>> {
    let kfd = gpu.kfd();
    let hz = gpu.timestamp_frequency()? as f64;
    if hz <= 0.0 {
        return Ok(None);
    }
    let queue = gpu.create_aql_queue(AqlQueueOptions::default().profiled())?;
    let (mut launch, mut exec) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n + WARM_UP.min(n) {
        let at = kfd.clock_counters(gpu)?;
        let submitted = raw_now_ns();
        let s = queue.dispatch(empty)?;
        s.wait(TIMEOUT)?;
        let (start, end) = s.timestamps();
        if i < WARM_UP.min(n) || start == 0 || end < start {
            continue;
        }
        let ticks_since = start.wrapping_sub(at.gpu) as i64 as f64;
        let start_host = at.cpu as f64 + ticks_since * 1e9 / hz;
        launch.push(start_host - submitted as f64);
        exec.push((end - start) as f64 * 1e9 / hz);
    }
    Ok(Some((Samples::new(launch), Samples::new(exec))))
}

/// Dispatch rate with `queues` queues, one thread each doing `per_queue` round trips.
pub struct Scaling {
    pub queues: usize,
    pub dispatches_per_s: f64,
    pub round_trip: Samples,
}

pub fn scaling(gpu: &Gpu, kernel: &Kernel, per_queue: usize) -> Result<Vec<Scaling>> {
    let mut out = Vec::new();
    for n in [1usize, 2, 4, 8] {
        let queues: Vec<AqlQueue> = (0..n)
            .map(|_| gpu.create_aql_queue(AqlQueueOptions::default()))
            .collect::<Result<_>>()?;
        let empty = Dispatch::linear(kernel, 1, 1);
        let started = Instant::now();
        let results: Vec<Result<Samples>> = std::thread::scope(|s| {
            let handles: Vec<_> = queues
                .iter()
                .map(|q| {
                    let empty = &empty;
                    s.spawn(move || round_trips(per_queue, || q.dispatch(empty)?.wait(TIMEOUT)))
                })
                .collect();
            handles
                .into_iter()
                // A measuring thread that panicked takes the run down with its message.
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let elapsed = started.elapsed().as_secs_f64();
        let mut all = Vec::new();
        for r in results {
            all.extend_from_slice(r?.values());
        }
        // Warm-up round trips ran too, in the same wall time.
        let total = (n * (per_queue + WARM_UP.min(per_queue))) as f64;
        out.push(Scaling {
            queues: n,
            dispatches_per_s: total / elapsed,
            round_trip: Samples::new(all),
        });
    }
    Ok(out)
}

impl Latency {
    pub fn print(&self) {
        println!("\nDispatch latency (round trip: submit, then wait for the completion signal)");
        println!(
            "  {:<34}{:>10}{:>10}{:>10}{:>10}{:>10}",
            "", "p50", "p90", "p99", "p99.9", "max"
        );
        let mut rows = vec![
            ("empty kernel", &self.dispatch),
            ("barrier-AND packet", &self.barrier),
            ("batched, per packet (64/doorbell)", &self.batch_per_packet),
        ];
        if let Some(l) = &self.launch_to_start {
            rows.push(("submit to CP start (timestamps)", l));
        }
        if let Some(e) = &self.execution {
            rows.push(("CP start to end (timestamps)", e));
        }
        for (name, s) in rows {
            println!("  {name:<34}{}", s.row());
        }
        println!(
            "  batched throughput: {:.2} M dispatches/s (median batch)",
            1e3 / self.batch_per_packet.percentile(50.0)
        );
        println!("\n  empty-kernel round trips, histogram (quarter octaves):");
        print!("{}", self.dispatch.text_histogram());
    }

    pub fn json(&self) -> Value {
        json!({
            "empty_kernel_round_trip": self.dispatch.json(),
            "barrier_round_trip": self.barrier.json(),
            "batched_per_packet": self.batch_per_packet.json(),
            "launch_to_start": self.launch_to_start.as_ref().map(Samples::json),
            "execution": self.execution.as_ref().map(Samples::json),
        })
    }
}

pub fn print_scaling(rows: &[Scaling]) {
    println!("\nQueue scaling (one thread per queue, empty-kernel round trips)");
    println!(
        "  {:>6}  {:>14}  {:>10}{:>10}",
        "queues", "dispatches/s", "p50", "p99"
    );
    for r in rows {
        println!(
            "  {:>6}  {:>14.0}  {:>10}{:>10}",
            r.queues,
            r.dispatches_per_s,
            crate::stats::format_ns(r.round_trip.percentile(50.0)),
            crate::stats::format_ns(r.round_trip.percentile(99.0))
        );
    }
}

pub fn scaling_json(rows: &[Scaling]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "queues": r.queues,
                    "dispatches_per_s": r.dispatches_per_s,
                    "round_trip": r.round_trip.json(),
                })
            })
            .collect(),
    )
}
